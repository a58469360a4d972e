//! What the demo examples (`redelivery`, `item_timeouts`) share: their command line and
//! their seeded choice of hung items.

use crate::rng::mix64;

/// The seed the demos use unless told otherwise.
pub const DEFAULT_SEED: u64 = 42;

/// A demo's command line: a seed and one on/off flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemoArgs {
    /// `--seed N` (default [`DEFAULT_SEED`]).
    pub seed: u64,
    /// Whether the demo's flag was given.
    pub flag: bool,
}

/// Parses `--seed N` (or `--seed=N`), `flag` (for example `"--real-time"`) and `-h`/`--help`
/// from `args`. `Ok(None)` asks for the help text; `Err` says what was wrong.
pub fn parse_args(
    args: impl IntoIterator<Item = String>,
    flag: &str,
) -> Result<Option<DemoArgs>, String> {
    let mut out = DemoArgs {
        seed: DEFAULT_SEED,
        flag: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--seed" => {
                let value = args.next().ok_or("--seed needs a value")?;
                out.seed = parse_seed(&value)?;
            }
            a if a == flag => out.flag = true,
            other => match other.strip_prefix("--seed=") {
                Some(value) => out.seed = parse_seed(value)?,
                None => return Err(format!("unknown argument `{other}`")),
            },
        }
    }
    Ok(Some(out))
}

/// The process's own command line parsed by [`parse_args`]; on `--help` prints `usage` and
/// on a bad argument the error and `usage`, and returns the exit code to end with.
pub fn args_or_exit(flag: &str, usage: &str) -> Result<DemoArgs, std::process::ExitCode> {
    match parse_args(std::env::args().skip(1), flag) {
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

fn parse_seed(value: &str) -> Result<u64, String> {
    value.parse().map_err(|_| {
        format!(
            "--seed wants a whole number from 0 to {}, not `{value}`",
            u64::MAX
        )
    })
}

/// Exactly `count` of `items` items marked hung, chosen by a partial Fisher-Yates shuffle
/// driven by `seed`.
pub fn pick_hung(seed: u64, items: u32, count: usize) -> Vec<bool> {
    let count = count.min(items as usize);
    let mut order: Vec<u32> = (0..items).collect();
    let mut state = seed;
    for i in 0..count {
        state = mix64(state);
        let j = i + (state % (items as u64 - i as u64)) as usize;
        order.swap(i, j);
    }
    let mut hung = vec![false; items as usize];
    for &i in &order[..count] {
        hung[i as usize] = true;
    }
    hung
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seed_flag_and_help() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_args(args(&["--seed", "7", "--fast"]), "--fast"),
            Ok(Some(DemoArgs {
                seed: 7,
                flag: true
            }))
        );
        assert_eq!(
            parse_args(args(&["--seed=9"]), "--fast"),
            Ok(Some(DemoArgs {
                seed: 9,
                flag: false
            }))
        );
        assert_eq!(parse_args(args(&["-h"]), "--fast"), Ok(None));
        assert!(parse_args(args(&["--seed"]), "--fast").is_err());
        assert!(parse_args(args(&["--seed", "x"]), "--fast").is_err());
        assert!(parse_args(args(&["--slow"]), "--fast").is_err());
    }

    #[test]
    fn picks_exactly_count_hung_items() {
        let hung = pick_hung(42, 500, 10);
        assert_eq!(hung.iter().filter(|&&h| h).count(), 10);
        assert_eq!(hung, pick_hung(42, 500, 10));
        assert_ne!(hung, pick_hung(43, 500, 10));
        assert_eq!(pick_hung(1, 3, 9).iter().filter(|&&h| h).count(), 3);
    }
}
