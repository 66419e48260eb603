//! Shared helpers of the golden-corpus tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// Number of golden files in the conformance corpus.
pub const GOLDEN_COUNT: usize = 56;

/// The directory holding the golden files: `$TSFILE_FIXTURES`, else
/// `format/tests/fixtures/`, else the shared conformance folder next to the checkout
/// (`CARGO_MANIFEST_DIR/../../shared/conformance`, or one level further up for a
/// worktree under `wt/`).
pub fn fixture_dir() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("TSFILE_FIXTURES") {
        candidates.push(PathBuf::from(p));
    }
    candidates.push(manifest.join("tests/fixtures"));
    candidates.push(manifest.join("../../shared/conformance"));
    candidates.push(manifest.join("../../../shared/conformance"));
    for c in &candidates {
        if c.join("sensor_typical.tsfile").is_file() {
            return c.clone();
        }
    }
    panic!("golden corpus not found; looked in {candidates:?} (set TSFILE_FIXTURES)");
}

/// Base names of every golden `.tsfile`, sorted.
pub fn golden_names() -> Vec<String> {
    let dir = fixture_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".tsfile").map(str::to_string)
        })
        .collect();
    names.sort();
    names
}

/// The bytes of `NAME.ext` in the fixture directory.
pub fn fixture(name: &str, ext: &str) -> Vec<u8> {
    let p = fixture_dir().join(format!("{name}.{ext}"));
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// Runs `check` on every golden file, catching panics, and fails listing every file
/// that failed (so one run reports the full pass count).
pub fn for_all_golden(what: &str, check: impl Fn(&str) + std::panic::RefUnwindSafe) {
    let names = golden_names();
    assert_eq!(names.len(), GOLDEN_COUNT, "golden file count");
    let mut failures = Vec::new();
    for name in &names {
        if let Err(e) = std::panic::catch_unwind(|| check(name)) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!(
                "{name}: {}",
                msg.chars().take(400).collect::<String>()
            ));
        }
    }
    eprintln!(
        "{what}: {}/{} golden files pass",
        names.len() - failures.len(),
        names.len()
    );
    assert!(
        failures.is_empty(),
        "{what}: {} of {} golden files fail:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}
