//! The dependency lines of the READMEs copy-paste: every `leaseq-x = "0.1"` or
//! `leaseq-x = { version = "0.1", features = [...] }` in README.md and in each crate's
//! README.md names a library crate of this workspace, a version its current version
//! matches, and features that crate has (issue 18: "the README's per-crate dependency lines
//! copy-paste"). Plain text parsing of the `[features]` tables; no network.

use std::fs;
use std::path::{Path, PathBuf};

const CRATES: [&str; 6] = [
    "leaseq-core",
    "leaseq-async",
    "leaseq-tokio",
    "leaseq-smol",
    "leaseq-sqlite",
    "leaseq-postgres",
];

/// One dependency line found in a README.
#[derive(Debug, PartialEq)]
struct DepLine {
    krate: String,
    version: String,
    features: Vec<String>,
}

/// Every `leaseq-x = ...` dependency spec in `text` (in TOML blocks and inline code alike).
fn dep_lines(text: &str) -> Vec<DepLine> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("leaseq-") {
        let rest = &text[start..];
        let Some(eq) = rest.find(" = ") else { continue };
        let krate = &rest[..eq];
        if !krate.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
            continue;
        }
        let spec = &rest[eq + 3..];
        if let Some(quoted) = spec.strip_prefix('"') {
            let Some(end) = quoted.find('"') else {
                continue;
            };
            found.push(DepLine {
                krate: krate.to_string(),
                version: quoted[..end].to_string(),
                features: Vec::new(),
            });
        } else if spec.starts_with('{') {
            let Some(end) = spec.find('}') else { continue };
            let table = &spec[1..end];
            found.push(DepLine {
                krate: krate.to_string(),
                version: string_value(table, "version").unwrap_or_default(),
                features: array_value(table, "features"),
            });
        }
    }
    found
}

/// The string value of `key = "..."` in an inline table.
fn string_value(table: &str, key: &str) -> Option<String> {
    let after = &table[table.find(&format!("{key} = \""))? + key.len() + 4..];
    Some(after[..after.find('"')?].to_string())
}

/// The strings of `key = [...]` in an inline table (empty if there is none).
fn array_value(table: &str, key: &str) -> Vec<String> {
    let Some(at) = table.find(&format!("{key} = [")) else {
        return Vec::new();
    };
    let after = &table[at + key.len() + 4..];
    let Some(end) = after.find(']') else {
        return Vec::new();
    };
    after[..end]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The names of a Cargo.toml's `[features]` table.
fn features(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[features]";
        } else if inside && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once(" = ") {
                names.push(name.trim().to_string());
            }
        }
    }
    names
}

/// Whether a caret requirement such as "0.1" or "0.1.0" accepts `version` (major.minor.patch).
fn matches(req: &str, version: &str) -> bool {
    let req: Vec<&str> = req.split('.').collect();
    let have: Vec<&str> = version.split('.').collect();
    if req.is_empty() || req.len() > 3 || req.iter().any(|p| p.parse::<u64>().is_err()) {
        return false;
    }
    // Before 1.0 the minor version is the breaking one: "0.1" means >=0.1.0, <0.2.0.
    let significant = if req[0] == "0" { 2.min(req.len()) } else { 1 };
    req[..significant] == have[..significant]
        && req[significant..]
            .iter()
            .zip(&have[significant..])
            .all(|(r, h)| r.parse::<u64>().unwrap_or(0) <= h.parse::<u64>().unwrap_or(0))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

#[test]
fn readme_dependency_lines_name_crates_versions_and_features_that_exist() {
    let version = env!("CARGO_PKG_VERSION"); // the workspace's, shared by every crate
    let mut readmes = vec![root().join("README.md")];
    readmes.extend(
        CRATES
            .iter()
            .map(|c| root().join("crates").join(c).join("README.md")),
    );
    let mut checked = 0;
    let mut wrong = Vec::new();
    for readme in &readmes {
        let text = fs::read_to_string(readme).unwrap_or_else(|e| panic!("{readme:?}: {e}"));
        for line in dep_lines(&text) {
            checked += 1;
            let at = readme.strip_prefix(root()).unwrap_or(readme).display();
            if !CRATES.contains(&line.krate.as_str()) {
                wrong.push(format!("{at}: `{}` is no library crate here", line.krate));
                continue;
            }
            if !matches(&line.version, version) {
                wrong.push(format!(
                    "{at}: {} \"{}\" does not match {version}",
                    line.krate, line.version
                ));
            }
            let manifest = root().join("crates").join(&line.krate).join("Cargo.toml");
            let have = features(&fs::read_to_string(&manifest).unwrap());
            for feature in &line.features {
                if !have.contains(feature) {
                    wrong.push(format!(
                        "{at}: {} has no feature `{feature}` (it has {have:?})",
                        line.krate
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "README dependency lines that would not build:\n{}",
        wrong.join("\n")
    );
    // The main README alone names every library crate; each crate's README at least itself.
    assert!(
        checked >= 2 * CRATES.len(),
        "only {checked} dependency lines found"
    );
}

#[test]
fn the_parser_sees_a_missing_feature_and_a_wrong_version() {
    let text = "```toml\nleaseq-tokio = { version = \"0.2\", features = [\"test-util\", \"nope\"] }\n\
                leaseq-core = \"0.1\"\n```\nand inline `leaseq-async = { version = \"0.1\", features = [\"sim\"] }`.";
    let lines = dep_lines(text);
    assert_eq!(
        lines,
        vec![
            DepLine {
                krate: "leaseq-tokio".into(),
                version: "0.2".into(),
                features: vec!["test-util".into(), "nope".into()],
            },
            DepLine {
                krate: "leaseq-core".into(),
                version: "0.1".into(),
                features: vec![]
            },
            DepLine {
                krate: "leaseq-async".into(),
                version: "0.1".into(),
                features: vec!["sim".into()]
            },
        ]
    );
    assert!(!matches("0.2", "0.1.0"));
    assert!(matches("0.1", "0.1.0"));
    assert!(matches("0.1.0", "0.1.3"));
    assert!(!matches("0.1.4", "0.1.3"));
    assert!(!matches("1", "0.1.0"));
    let tokio = fs::read_to_string(root().join("crates/leaseq-tokio/Cargo.toml")).unwrap();
    let have = features(&tokio);
    assert!(have.contains(&"test-util".to_string()), "{have:?}");
    assert!(!have.contains(&"nope".to_string()));
}
