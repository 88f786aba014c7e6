//! Snapshot comparison of text reports (insta), and the one-screen check of a
//! default text against its `--verbose` form (issue 24). Shared by the CLI's
//! tests (common::snapshot in the one test binary, tests/all/main.rs).
#![allow(dead_code)]

/// The most lines a default (one-screen) text report may have (issue 24).
pub const ONE_SCREEN_LINES: usize = 40;

/// Where the snapshots are: tests/snapshots/`name`.snap, insta's format.
fn dir() -> String {
    format!("{}/tests/snapshots", env!("CARGO_MANIFEST_DIR"))
}

/// The snapshot's name for a report file name: `check_good.txt` is
/// `check_good` (tests/snapshots/check_good.snap), `check_good.json` keeps
/// its extension (check_good.json.snap).
fn snap_name(name: &str) -> &str {
    name.strip_suffix(".txt").unwrap_or(name)
}

/// insta's comparison in its current format only. Its default falls back to
/// the legacy format, which ignores leading newlines (a report starting with
/// an empty line would match one without it).
#[derive(Clone)]
struct CurrentFormat;

impl insta::Comparator for CurrentFormat {
    fn matches(&self, reference: &insta::Snapshot, test: &insta::Snapshot) -> bool {
        use insta::internals::SnapshotContents::Text;
        match (reference.contents(), test.contents()) {
            (Text(r), Text(t)) => r.matches_latest(t),
            _ => false,
        }
    }

    fn dyn_clone(&self) -> Box<dyn insta::Comparator> {
        Box::new(self.clone())
    }
}

/// Compares `actual` with the snapshot `name` (tests/snapshots/, see
/// [`snap_name`]) through `insta::assert_snapshot!`: a difference (or no
/// snapshot) fails, and outside CI writes `.snap.new` beside it for review
/// (`cargo insta review`, or `INSTA_UPDATE=always` to accept). insta compares
/// the text without its trailing whitespace, so that is checked here: every
/// report ends in exactly one newline and holds no carriage return.
pub fn snapshot_eq(name: &str, actual: &str) {
    assert!(
        actual.ends_with('\n') && actual.trim_end().len() + 1 == actual.len(),
        "{name}: the report does not end in exactly one newline: {actual:?}"
    );
    assert!(!actual.contains('\r'), "{name}: a carriage return in {actual:?}");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_comparator(Box::new(CurrentFormat));
    settings.bind(|| insta::assert_snapshot!(snap_name(name), actual));
}

/// The text of the snapshot `name` (tests/snapshots/, see [`snap_name`]):
/// what follows insta's header, with the one final newline every report ends
/// in. For tests that build on a whole report's expected text.
pub fn expected(name: &str) -> String {
    let path = format!("{}/{}.snap", dir(), snap_name(name));
    let file = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let body = file
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .unwrap_or_else(|| panic!("{path}: no insta header"))
        .1;
    format!("{}\n", body.trim_end_matches('\n'))
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
