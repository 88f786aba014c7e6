//! Options that agree across commands (docs/options.md), on the real binary:
//! `-o/--output FILE` on every command that writes a report (the report in
//! the file and nothing on stdout, `-` for stdout, a bad path one line and
//! exit 2 before anything runs, a failed run leaving the old file and no
//! temporary file), `--root DIR` on tsc, cross-cpu and sweep (the former
//! `sweep --sysfs-root` refused), durations with units on every duration
//! option with one-line errors, and completions offering no hidden option.

use clockscope_system::linux::testing::{FakeHost, FakeRoot};
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_clockscope");

fn clockscope(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit 2, one line on stderr containing `needle`, nothing on stdout.
fn assert_one_line_error(o: &Output, needle: &str) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.starts_with("clockscope: error: ") && err.contains(needle), "{err}");
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A fake `/` whose `sys` holds a clocksource directory (tsc in use,
/// hpet available) and a 2-CPU topology.
fn fake_root() -> FakeRoot {
    let root = FakeRoot::new();
    FakeHost::new(1, 1, 2, 1).write(&root);
    let cs = "sys/devices/system/clocksource/clocksource0";
    root.write(&format!("{cs}/current_clocksource"), "tsc\n");
    root.write(&format!("{cs}/available_clocksource"), "tsc hpet \n");
    root
}

/// Each report-writing command with arguments that make it quick and
/// independent of this machine where possible, and a word its report contains.
fn commands(root: &str) -> Vec<(Vec<String>, &'static str)> {
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        (own(&["clocks", "--format", "json"]), "\"clocks\""),
        (
            own(&["tsc", "--root", root, "--calibration-ms", "5ms", "--format", "json"]),
            "schema_version",
        ),
        (
            own(&["cross-cpu", "--plan", "--root", root, "--format", "json"]),
            "schema_version",
        ),
        (own(&["sweep", "--root", root, "--format", "json"]), "\"original\""),
        (
            own(&["check", "-d", "10ms", "--clock", "monotonic", "--format", "json"]),
            "\"clocks\"",
        ),
    ]
}

#[test]
fn output_writes_the_report_to_the_file_on_every_command() {
    let root = fake_root();
    let r = root.path().to_str().unwrap();
    for (args, word) in commands(r) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("report");
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        let f = file.to_str().unwrap();
        all.extend(["-o", f]);
        let o = clockscope(&all);
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "{all:?}: {}",
            text(&o.stderr)
        );
        assert!(o.stdout.is_empty(), "{all:?}: {}", text(&o.stdout));
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains(word), "{all:?}: {written}");
        assert_eq!(names(dir.path()), ["report"], "{all:?}: a temporary file was left");

        // `-o -` is stdout.
        let mut dash: Vec<&str> = args.iter().map(String::as_str).collect();
        dash.extend(["--output", "-"]);
        let o = clockscope(&dash);
        assert!(text(&o.stdout).contains(word), "{dash:?}: {}", text(&o.stderr));
    }
}

#[test]
fn output_to_a_missing_directory_fails_at_once_on_every_command() {
    let root = fake_root();
    let r = root.path().to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("missing/report");
    for (args, _) in commands(r) {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["-o", bad.to_str().unwrap()]);
        assert_one_line_error(&clockscope(&all), "--output");
    }
    assert!(names(dir.path()).is_empty());
}

#[test]
fn a_failed_run_leaves_the_old_file_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.json");
    std::fs::write(&file, "old\n").unwrap();
    let f = file.to_str().unwrap();
    for args in [
        vec!["tsc", "--cpuid-dump", "/nonexistent-clockscope.cpuid", "-o", f],
        vec!["cross-cpu", "--plan", "--root", "/nonexistent-clockscope", "-o", f],
        vec!["sweep", "--root", "/nonexistent-clockscope", "-o", f],
        vec![
            "explain",
            "--dsn",
            "host=127.0.0.1 port=1 connect_timeout=1",
            "--rows",
            "0",
            "-o",
            f,
        ],
    ] {
        let o = clockscope(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert_eq!(text(&o.stderr).lines().count(), 1, "{args:?}: {}", text(&o.stderr));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n", "{args:?}");
        assert_eq!(names(dir.path()), ["report.json"], "{args:?}");
    }
}

#[test]
fn explain_output_to_a_missing_directory_fails_before_connecting() {
    // Port 1 answers nobody: the error is about the file, so it came first.
    let o = clockscope(&[
        "explain",
        "--dsn",
        "host=127.0.0.1 port=1 connect_timeout=1",
        "-o",
        "/nonexistent-clockscope/explain.json",
    ]);
    assert_one_line_error(&o, "--output /nonexistent-clockscope/explain.json");
}

#[test]
fn sweep_takes_root_and_no_longer_sysfs_root() {
    let root = fake_root();
    let r = root.path().to_str().unwrap();
    let o = clockscope(&["sweep", "--root", r]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("hpet"), "{}", text(&o.stdout));
    let sys = root.path().join("sys");
    let o = clockscope(&["sweep", "--sysfs-root", sys.to_str().unwrap()]);
    assert_one_line_error(&o, "unexpected argument '--sysfs-root'");
}

#[test]
fn durations_take_units_and_bad_ones_are_one_line_naming_option_and_value() {
    let bad = [
        (vec!["-d", "5x"], "'--duration <SECONDS>': '5x' has an unknown unit 'x'"),
        (vec!["check", "-d", "-2s"], "'-2s' must be a positive duration"),
        (vec!["check", "-d", "0ms"], "'0ms' must be a positive duration"),
        (vec!["check", "-d", "nan"], "'nan' is not a duration"),
        (vec!["check", "-d", "25h"], "'25h' is more than a day"),
        (vec!["check", "-d", "1e999s"], "is more than a day"),
        (
            vec!["cross-cpu", "-d", "1sec"],
            "'--duration <SECONDS>': '1sec' has an unknown unit 'sec'",
        ),
        (
            vec!["cross-cpu", "--max-time", "0s"],
            "'--max-time <DURATION>': '0s' must be a positive duration",
        ),
        (vec!["sweep", "-d", "500us"], "'500us' is less than 0.001 s"),
        (
            vec!["tsc", "--drift", "500ms"],
            "'--drift <SECONDS>': '500ms' is less than 1 s",
        ),
        (
            vec!["tsc", "--drift", "1.5s"],
            "'1.5s' is not a whole number of seconds",
        ),
        (
            vec!["tsc", "--calibration-ms", "11s"],
            "'--calibration-ms <MS>': '11s' is more than 10 s",
        ),
        (vec!["tsc", "--calibration-ms", "0"], "'0' must be a positive duration"),
        (
            vec!["explain", "--max-time", "-1m"],
            "'--max-time <DURATION>': '-1m' must be a positive duration",
        ),
    ];
    for (args, needle) in bad {
        assert_one_line_error(&clockscope(&args), needle);
    }
    // Units and plain numbers both plan: 2m of -d and --max-time 3m (plain 180).
    let root = fake_root();
    let r = root.path().to_str().unwrap();
    for (d, max) in [("2m", "3m"), ("120", "180"), ("120000ms", "180s")] {
        let o = clockscope(&[
            "cross-cpu",
            "--plan",
            "--root",
            r,
            "-d",
            d,
            "--max-time",
            max,
            "--format",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{d} {max}: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["max_time_ns"].as_u64(), Some(180_000_000_000), "{v}");
    }
}

#[test]
fn completions_offer_no_hidden_option() {
    use clap::CommandFactory;
    let cli = clockscope_cli::cli::Cli::command();
    let mut hidden = Vec::new();
    for sub in cli.get_subcommands().chain(std::iter::once(&cli)) {
        for a in sub.get_arguments().filter(|a| a.is_hide_set()) {
            if let Some(long) = a.get_long() {
                hidden.push(format!("--{long}"));
            }
        }
    }
    for shell in ["bash", "zsh", "fish"] {
        let script = text(&clockscope(&["completions", shell]).stdout);
        for h in &hidden {
            assert!(!script.contains(h.as_str()), "{shell} completes the hidden {h}");
        }
        assert!(script.contains("root"), "{shell}: --root is documented and completed");
    }
}
