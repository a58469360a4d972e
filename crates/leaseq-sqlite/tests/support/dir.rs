//! A test's own directory, listed before and after a refused open: the refused-open tests
//! check that it holds the same files with the same bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use leaseq_sqlite::{OpenError, Options};

use super::open_with;

/// A directory of one test's own (removed at the end).
pub(crate) struct Dir(pub(crate) PathBuf);

impl Dir {
    pub(crate) fn new(name: &str) -> Dir {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("leaseq-refused-{name}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Dir(dir)
    }

    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Every file of the directory, by name, with its bytes.
    pub(crate) fn listing(&self) -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                (e.file_name().to_string_lossy().into_owned(), bytes)
            })
            .collect()
    }

    /// The names in the directory.
    pub(crate) fn names(&self) -> Vec<String> {
        self.listing().into_keys().collect()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens `path` with `options`, expecting a refusal; checks the directory holds the same
/// files with the same bytes afterwards; returns the error.
pub(crate) fn refused_in(dir: &Dir, path: &Path, options: Options) -> OpenError {
    let before = dir.listing();
    let e = match open_with(path, options) {
        Ok(_) => panic!("{} was opened", path.display()),
        Err(e) => e,
    };
    assert_same(&before, &dir.listing(), &e);
    e
}

pub(crate) fn assert_same(
    before: &BTreeMap<String, Vec<u8>>,
    after: &BTreeMap<String, Vec<u8>>,
    e: &dyn std::fmt::Display,
) {
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(before), names(after), "the files changed ({e})");
    assert!(before == after, "a file's bytes changed ({e})");
}
