//! Snapshot comparison of text reports, and the one-screen check of a
//! default text against its `--verbose` form (issue 24). Shared by the CLI's
//! tests (through common/mod.rs, or by path where another `common` is in use).
#![allow(dead_code)]

/// The most lines a default (one-screen) text report may have (issue 24).
pub const ONE_SCREEN_LINES: usize = 40;

/// Compares `actual` with tests/snapshots/`name`; on a difference (or no
/// snapshot) writes `name`.new beside it for review and fails.
pub fn snapshot_eq(name: &str, actual: &str) {
    let path = format!("{}/tests/snapshots/{name}", env!("CARGO_MANIFEST_DIR"));
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        std::fs::write(format!("{path}.new"), actual).unwrap();
        panic!("{name} differs from the snapshot (or has none); wrote {path}.new for review");
    }
}

/// Snapshots of one command's default and `--verbose` text (after the
/// header line, which names the host and time), and checks that the
/// default fits one screen: at most [`ONE_SCREEN_LINES`] lines of at most
/// 100 columns, and fewer lines than the verbose text.
pub fn one_screen_and_verbose(name: &str, default: &str, verbose: &str) {
    let body = |t: &str| t.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    let (default, verbose) = (body(default), body(verbose));
    let lines = default.lines().count() + 1;
    assert!(lines <= ONE_SCREEN_LINES, "{name}: {lines} lines\n{default}");
    assert!(default.lines().all(|l| l.chars().count() <= 100), "{default}");
    assert!(
        lines <= verbose.lines().count() + 1,
        "{name}: default not shorter\n{default}"
    );
    snapshot_eq(&format!("{name}.txt"), &default);
    snapshot_eq(&format!("{name}_verbose.txt"), &verbose);
}
