//! Our `pg_test_timing` next to PostgreSQL 19's own binary on this machine
//! (opt-in: `CLOCKSCOPE_PG19=/path/to/install`, see `common/pg19.rs`):
//! the same output once the numbers are masked (every line, the header and
//! row widths, the TSC lines and the "will be used by default" sentence), and
//! the same stdout, stderr and exit code for argument errors. Loop times are
//! compared by `bench/pg19_side_by_side.sh`, never asserted here.

use crate::common::pg19;

use std::path::Path;
use std::process::{Command, Output};

const OURS: &str = env!("CARGO_BIN_EXE_pg_test_timing");

/// Runs `bin` in the C locale.
fn run(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()))
}

/// Whether `line` is a table row: label, percent, running percent, count.
fn is_row(line: &str) -> bool {
    let t: Vec<&str> = line.split_whitespace().collect();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let decimal = |s: &str| s.split_once('.').is_some_and(|(a, b)| digits(a) && digits(b));
    t.len() == 4 && digits(t[0]) && decimal(t[1]) && decimal(t[2]) && digits(t[3]) && line.contains("   ")
}

/// Every digit run (with its decimals) replaced by `N`.
fn mask_numbers(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in line.chars() {
        let numeric = c.is_ascii_digit() || (in_number && c == '.');
        if numeric && !in_number {
            out.push('N');
        } else if !numeric {
            out.push(c);
        }
        in_number = numeric;
    }
    out
}

/// The output's shape: a run of table rows is one `ROW(width w)` entry
/// (the rows' count depends on the machine, their width must not); every
/// other line is kept with its numbers masked.
fn shape(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    let mut out: Vec<String> = Vec::new();
    for line in text.split('\n') {
        let entry = if is_row(line) {
            format!("ROW(width {})", line.len())
        } else {
            mask_numbers(line)
        };
        if entry.starts_with("ROW(") && out.last() == Some(&entry) {
            continue;
        }
        out.push(entry);
    }
    out
}

#[test]
fn shape_masks_numbers_and_folds_rows() {
    let sample = b"Average loop time including overhead: 16.49 ns\n\
                   \x20             <= ns   % of total  running %      count\n\
                   \x20                 0       0.0000     0.0000          0\n\
                   \x20                31      80.8042    80.8042   28436701\n\
                   ...\n\
                   \x20          16059850       0.0000   100.0000          1\n";
    assert_eq!(
        shape(sample),
        [
            "Average loop time including overhead: N ns",
            "              <= ns   % of total  running %      count",
            "ROW(width 54)",
            "...",
            "ROW(width 54)",
            "",
        ]
    );
    // A row wider than its columns is a different shape.
    assert_ne!(
        shape(b"                  0       0.0000     0.0000          0\n"),
        shape(b"                 0       0.0000     0.0000          0\n")
    );
}

#[test]
fn full_run_has_postgresql_19s_shape() {
    let Some(install) = pg19::install("full_run_has_postgresql_19s_shape") else {
        return;
    };
    let theirs = run(&install.join("bin/pg_test_timing"), &["-d", "1"]);
    let ours = run(Path::new(OURS), &["-d", "1"]);
    assert_eq!(ours.status.code(), theirs.status.code());
    let (a, b) = (shape(&ours.stdout), shape(&theirs.stdout));
    assert_eq!(
        a,
        b,
        "ours:\n{}\nPostgreSQL 19:\n{}",
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
    // The blocks are there (not two equally empty outputs).
    for line in ["System clock source: clock_gettime", "Histogram of timing durations:"] {
        assert!(a.iter().any(|l| l.starts_with(line)), "{line}: {a:?}");
    }
}

#[test]
fn argument_errors_match_postgresql_19() {
    let Some(install) = pg19::install("argument_errors_match_postgresql_19") else {
        return;
    };
    let theirs_bin = install.join("bin/pg_test_timing");
    let cases: &[&[&str]] = &[
        &["--help"],
        &["-?"],
        &["-d"],
        &["-d", "0"],
        &["-d", "x"],
        &["-d", "1x"],
        &["-d", "-1"],
        &["-d", "4294967296"],
        &["-c"],
        &["-c", "abc"],
        &["-c", "101"],
        &["-c", "-0.5"],
        &["-x"],
        &["--frob"],
        &["--duration"],
        &["extra"],
        &["-d", "1", "extra"],
    ];
    // glibc's getopt messages name the program by argv[0], the full path
    // here (upstream needs it to find itself): compared with it replaced.
    let text = |bytes: &[u8], bin: &str| String::from_utf8_lossy(bytes).replace(bin, "PROGRAM");
    let theirs_s = theirs_bin.to_str().unwrap();
    for args in cases {
        let (ours, theirs) = (run(Path::new(OURS), args), run(&theirs_bin, args));
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert_eq!(text(&ours.stdout, OURS), text(&theirs.stdout, theirs_s), "{args:?}");
        assert_eq!(text(&ours.stderr, OURS), text(&theirs.stderr, theirs_s), "{args:?}");
    }
}
