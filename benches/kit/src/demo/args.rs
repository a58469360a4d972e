//! The demos' command line: `--seed N`, `-h`/`--help`, and the options a demo names in its
//! [`Spec`] (an on/off flag, `--seeds A-B`, `--seconds N`).

/// The seed the demos use unless told otherwise.
pub const DEFAULT_SEED: u64 = 42;

/// Which options a demo takes besides `--seed N` and `-h`/`--help`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spec<'a> {
    /// An on/off flag, for example `"--real-time"`.
    pub flag: Option<&'a str>,
    /// Whether `--seeds A-B` (run every seed from A to B) is taken.
    pub seeds: bool,
    /// Whether `--seconds N` is taken.
    pub seconds: bool,
}

impl<'a> Spec<'a> {
    /// A demo with one on/off flag and nothing else.
    pub const fn flag(flag: &'a str) -> Self {
        Spec {
            flag: Some(flag),
            seeds: false,
            seconds: false,
        }
    }
}

/// A demo's command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemoArgs {
    /// `--seed N` (default [`DEFAULT_SEED`]).
    pub seed: u64,
    /// Whether the demo's flag was given.
    pub flag: bool,
    /// `--seeds A-B`: the first and last seed of a sweep.
    pub seeds: Option<(u64, u64)>,
    /// `--seconds N`.
    pub seconds: Option<u64>,
}

/// Parses `--seed N` (or `--seed=N`), `-h`/`--help` and the options `spec` names
/// (`--seeds A-B`, `--seconds N`, each also as `--name=value`) from `args`. `Ok(None)` asks
/// for the help text; `Err` says what was wrong.
pub fn parse_args(
    args: impl IntoIterator<Item = String>,
    spec: Spec<'_>,
) -> Result<Option<DemoArgs>, String> {
    let mut out = DemoArgs {
        seed: DEFAULT_SEED,
        flag: false,
        seeds: None,
        seconds: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        if Some(arg.as_str()) == spec.flag {
            out.flag = true;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let known = match name {
            "--seed" => true,
            "--seeds" => spec.seeds,
            "--seconds" => spec.seconds,
            _ => false,
        };
        if !known {
            return Err(format!("unknown argument `{arg}`"));
        }
        let value = match inline {
            Some(v) => v,
            None => args.next().ok_or(format!("{name} needs a value"))?,
        };
        match name {
            "--seed" => out.seed = parse_number(name, &value)?,
            "--seeds" => out.seeds = Some(parse_seed_range(&value)?),
            _ => {
                let n = parse_number(name, &value)?;
                if n == 0 {
                    return Err("--seconds wants at least 1".to_string());
                }
                out.seconds = Some(n);
            }
        }
    }
    Ok(Some(out))
}

/// The process's own command line parsed by [`parse_args`]; on `--help` prints `usage` and
/// on a bad argument the error and `usage`, and returns the exit code to end with.
pub fn args_or_exit(spec: Spec<'_>, usage: &str) -> Result<DemoArgs, std::process::ExitCode> {
    match parse_args(std::env::args().skip(1), spec) {
        Ok(Some(args)) => Ok(args),
        Ok(None) => {
            println!("{usage}");
            Err(std::process::ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}\n\n{usage}");
            Err(std::process::ExitCode::from(2))
        }
    }
}

fn parse_number(name: &str, value: &str) -> Result<u64, String> {
    value.parse().map_err(|_| {
        format!(
            "{name} wants a whole number from 0 to {}, not `{value}`",
            u64::MAX
        )
    })
}

/// `A-B` (or `A..=B`, or one seed `A`), first no greater than last.
fn parse_seed_range(value: &str) -> Result<(u64, u64), String> {
    let (a, b) = value
        .split_once("..=")
        .or_else(|| value.split_once('-'))
        .unwrap_or((value, value));
    let bad = || format!("--seeds wants a range such as 1-20, not `{value}`");
    let (a, b) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_seed_flag_and_help() {
        let fast = Spec::flag("--fast");
        assert_eq!(
            parse_args(args(&["--seed", "7", "--fast"]), fast),
            Ok(Some(DemoArgs {
                seed: 7,
                flag: true,
                seeds: None,
                seconds: None,
            }))
        );
        assert_eq!(
            parse_args(args(&["--seed=9"]), fast),
            Ok(Some(DemoArgs {
                seed: 9,
                flag: false,
                seeds: None,
                seconds: None,
            }))
        );
        assert_eq!(parse_args(args(&["-h"]), fast), Ok(None));
        assert!(parse_args(args(&["--seed"]), fast).is_err());
        assert!(parse_args(args(&["--seed", "x"]), fast).is_err());
        assert!(parse_args(args(&["--slow"]), fast).is_err());
        // Options the spec does not name are refused.
        assert!(parse_args(args(&["--seeds", "1-20"]), fast).is_err());
        assert!(parse_args(args(&["--seconds", "3"]), fast).is_err());
    }

    #[test]
    fn parses_seed_ranges_and_seconds() {
        let spec = Spec {
            flag: None,
            seeds: true,
            seconds: true,
        };
        let parsed = |v: &[&str]| parse_args(args(v), spec).map(|a| a.map(|a| a.seeds));
        assert_eq!(parsed(&["--seeds", "1-20"]), Ok(Some(Some((1, 20)))));
        assert_eq!(parsed(&["--seeds=3..=5"]), Ok(Some(Some((3, 5)))));
        assert_eq!(parsed(&["--seeds", "7"]), Ok(Some(Some((7, 7)))));
        assert!(parsed(&["--seeds", "20-1"]).is_err());
        assert!(parsed(&["--seeds", "a-b"]).is_err());
        assert_eq!(
            parse_args(args(&["--seconds", "6"]), spec).map(|a| a.map(|a| a.seconds)),
            Ok(Some(Some(6)))
        );
        assert!(parse_args(args(&["--seconds", "0"]), spec).is_err());
        assert!(parse_args(args(&["--fast"]), spec).is_err());
    }
}
