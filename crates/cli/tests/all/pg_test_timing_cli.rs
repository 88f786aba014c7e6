//! The real `pg_test_timing` binary: PostgreSQL 19's messages and exit codes
//! for every error case, and a 1-second run with the sections in order.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_pg_test_timing");
const TRY: &str = "Try \"pg_test_timing --help\" for more information.\n";

/// The binary in the C locale, whatever the caller's.
fn run(args: &[&str]) -> Output {
    run_in(args, &[("LC_ALL", "C")])
}

fn run_in(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    for v in [
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_MESSAGES",
        "LC_NUMERIC",
        "LC_CTYPE",
        "LOCPATH",
        "PGLOCALEDIR",
    ] {
        c.env_remove(v);
    }
    c.args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run pg_test_timing")
}

fn assert_fails(args: &[&str], stderr: &str) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(1), "{args:?}");
    assert_eq!(String::from_utf8_lossy(&o.stderr), stderr, "{args:?}");
    assert!(o.stdout.is_empty(), "{args:?}: nothing on stdout");
}

#[test]
fn help_and_version() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "Usage: pg_test_timing [-c CUTOFF] [-d DURATION]\n"
    );
    let o = run(&["-V"]);
    assert_eq!(o.status.code(), Some(0));
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(
        v.starts_with("pg_test_timing (clockscope) ") && !v.contains("PostgreSQL"),
        "{v}"
    );
}

#[test]
fn every_error_of_the_reference() {
    let invalid_d = format!("pg_test_timing: invalid argument for option --duration\n{TRY}");
    let invalid_c = format!("pg_test_timing: invalid argument for option --cutoff\n{TRY}");
    for bad in ["abc", "5s", "-5", "4294967296", "1.5", ""] {
        assert_fails(&["-d", bad], &invalid_d);
    }
    assert_fails(
        &["--duration=0"],
        "pg_test_timing: --duration must be in range 1..4294967295\n",
    );
    for bad in ["x", "1e400", "50%"] {
        assert_fails(&["-c", bad], &invalid_c);
    }
    for bad in ["-0.5", "100.5", "nan", "inf"] {
        assert_fails(&["--cutoff", bad], "pg_test_timing: --cutoff must be in range 0..100\n");
    }
    assert_fails(
        &["extra"],
        &format!("pg_test_timing: too many command-line arguments (first is \"extra\")\n{TRY}"),
    );
    // getopt's own messages name argv[0] as invoked.
    assert_fails(&["-q"], &format!("{BIN}: invalid option -- 'q'\n{TRY}"));
    assert_fails(&["--bogus"], &format!("{BIN}: unrecognized option '--bogus'\n{TRY}"));
    assert_fails(&["-d"], &format!("{BIN}: option requires an argument -- 'd'\n{TRY}"));
}

#[test]
fn non_utf8_arguments_do_not_panic() {
    let bad = OsString::from_vec(vec![b'-', b'd', 0xff]);
    let o = Command::new(BIN).arg(bad).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("pg_test_timing: invalid argument for option --duration\n{TRY}")
    );
}

#[test]
fn one_second_run_has_the_sections_in_order() {
    let o = run(&["-d", "1"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let mut expected = vec![
        "Testing timing overhead for 1 second.\n\nSystem clock source: clock_gettime (CLOCK_MONOTONIC)\nAverage loop time including overhead: ",
        "Histogram of timing durations:\n              <= ns   % of total  running %      count\n",
        "\nObserved timing durations up to 99.9900%:\n                 ns   % of total  running %      count\n",
    ];
    if cfg!(target_arch = "x86_64") {
        if out.contains("Clock source: RDTSCP") {
            expected.extend([
                "\n\nClock source: RDTSCP\nAverage loop time including overhead: ",
                "\n\nFast clock source: RDTSC\nAverage loop time including overhead: ",
                "\n\nTSC frequency source: x86",
                "\nTSC frequency in use: ",
                " kHz\nTSC ",
                "\n\nTSC clock source will",
            ]);
            // The line after "in use": PostgreSQL's calibration, converged or not.
            let calibration = out
                .lines()
                .skip_while(|l| !l.starts_with("TSC frequency in use: "))
                .nth(1)
                .unwrap_or_default();
            assert!(
                calibration == "TSC calibration did not converge"
                    || (calibration.starts_with("TSC frequency from calibration: ") && calibration.ends_with(" kHz")),
                "calibration line: {calibration:?}"
            );
        } else {
            expected.extend([
                "\n\nTSC frequency source: x86",
                "\nTSC frequency in use: 0 kHz\n",
                "\n\nTSC clock source is not usable. Likely unable to determine TSC frequency.",
            ]);
        }
    }
    let mut pos = 0;
    for piece in expected {
        let found = out[pos..]
            .find(piece)
            .unwrap_or_else(|| panic!("missing or out of order: {piece:?}\n{out}"));
        pos += found + piece.len();
    }
    assert!(out.ends_with(".\n"));
    // Every histogram row has upstream's widths: %19s   %10.4f %10.4f %10d.
    let mut rows = 0;
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 && f[0].bytes().all(|b| b.is_ascii_digit()) && f[1].contains('.') {
            assert_eq!(
                line,
                format!("{:>19}   {:>10} {:>10} {:>10}", f[0], f[1], f[2], f[3]),
                "row layout"
            );
            assert_eq!(f[1].split('.').nth(1).map(str::len), Some(4), "4 decimals: {line}");
            rows += 1;
        }
    }
    assert!(rows >= 10, "histogram rows found: {rows}");
}

/// A locale `xx_XX.utf8` in glibc's format under `dir/locales` (decimal
/// comma) and a `pg_test_timing-19` catalog under `dir/share/locale`, built
/// with msgfmt, with a Cyrillic header word.
fn make_locale(dir: &std::path::Path) {
    let loc = dir.join("locales/xx_XX.utf8");
    std::fs::create_dir_all(loc.join("LC_MESSAGES")).unwrap();
    std::fs::write(loc.join("LC_MESSAGES/SYS_LC_MESSAGES"), b"x").unwrap();
    for cat in [
        "LC_CTYPE",
        "LC_TIME",
        "LC_COLLATE",
        "LC_MONETARY",
        "LC_PAPER",
        "LC_NAME",
        "LC_ADDRESS",
        "LC_TELEPHONE",
        "LC_MEASUREMENT",
        "LC_IDENTIFICATION",
    ] {
        std::fs::write(loc.join(cat), b"data").unwrap();
    }
    // LC_NUMERIC: magic 0x20031115 ^ 1, 2 strings, offsets, "," and ".".
    let mut numeric = Vec::new();
    for v in [0x2003_1114u32, 2, 16, 18] {
        numeric.extend_from_slice(&v.to_ne_bytes());
    }
    numeric.extend_from_slice(b",\0.\0");
    std::fs::write(loc.join("LC_NUMERIC"), numeric).unwrap();
    let po = dir.join("x.po");
    std::fs::write(
        &po,
        "msgid \"\"\nmsgstr \"Project-Id-Version: pg_test_timing (PostgreSQL) 19\\n\"\n\
         \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n\
         msgid \"count\"\nmsgstr \"число\"\n\n\
         msgid \"%s: invalid argument for option %s\\n\"\nmsgstr \"%s: плохой аргумент %s\\n\"\n",
    )
    .unwrap();
    let lc = dir.join("share/locale/xx/LC_MESSAGES");
    std::fs::create_dir_all(&lc).unwrap();
    let ok = Command::new("msgfmt")
        .arg("-o")
        .arg(lc.join("pg_test_timing-19.mo"))
        .arg(&po)
        .status()
        .expect("msgfmt (gettext) builds the test catalog");
    assert!(ok.success());
}

#[test]
fn a_locale_with_a_decimal_comma_and_a_catalog() {
    let dir = tempfile::tempdir().unwrap();
    make_locale(dir.path());
    let locpath = dir.path().join("locales");
    let catalogs = dir.path().join("share/locale");
    let env = [
        ("LANG", "xx_XX.UTF-8"),
        ("LOCPATH", locpath.to_str().unwrap()),
        ("PGLOCALEDIR", catalogs.to_str().unwrap()),
    ];
    // strtod in that locale: the comma is the radix, a dot stops it.
    let o = run_in(&["-c", "99.5"], &env);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("pg_test_timing: плохой аргумент --cutoff\n{TRY}")
    );
    let o = run_in(&["-c", "99,5", "-d", "0"], &env);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "pg_test_timing: --duration must be in range 1..4294967295\n"
    );
    let o = run_in(&["-d", "1", "-c", "99,5"], &env);
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("\nObserved timing durations up to 99,5000%:\n"), "{out}");
    let avg = out.lines().find(|l| l.starts_with("Average loop time")).unwrap();
    assert!(avg.ends_with(" ns") && avg.contains(','), "{avg}");
    // "число" is 10 bytes: printf's %10s pads it with nothing.
    assert!(
        out.contains("              <= ns   % of total  running % число\n"),
        "{out}"
    );
    // An unknown locale anywhere in the categories: glibc's setlocale
    // fails and everything stays C.
    let mut c_env = env.to_vec();
    c_env.push(("LC_TIME", "qq_QQ.UTF-8"));
    let o = run_in(&["-c", "99,5"], &c_env);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("pg_test_timing: invalid argument for option --cutoff\n{TRY}")
    );
}
