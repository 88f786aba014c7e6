//! The real `clockscope` binary: bad arguments, a short real run validated
//! against the JSON schema, Ctrl-C, completions and the man page.

use std::process::{Command, Stdio};

use crate::common;
use common::{clockscope as run, BIN};

/// Exit 2, exactly one line on stderr containing `needle`, nothing on stdout.
fn assert_usage_error(args: &[&str], needle: &str) {
    let o = run(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: one line expected, got {err:?}");
    assert!(err.starts_with("clockscope: error: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    assert!(o.stdout.is_empty(), "{args:?}: stdout must be empty");
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    assert_usage_error(
        &["--clock", "sundial"],
        "unknown clock 'sundial' (valid: monotonic, monotonic_raw",
    );
    assert_usage_error(&["check", "--clock", "nope"], "unknown clock 'nope'");
    assert_usage_error(&["-d", "0"], "'0' must be a positive duration");
    assert_usage_error(&["-d", "-1"], "'-1' must be a positive duration");
    assert_usage_error(&["-d", "abc"], "'abc' is not a duration");
    assert_usage_error(&["--duration", "nan"], "'nan' is not a duration");
    assert_usage_error(&["-d", "-inf"], "'-inf' is not a duration");
    assert_usage_error(&["-d", "1e400"], "is more than a day");
    assert_usage_error(&["-d", "1e-12"], "is less than 0.001 s");
    assert_usage_error(&["-d", "2x"], "'2x' has an unknown unit 'x'");
    assert_usage_error(&["-d", "0ms"], "'0ms' must be a positive duration");
    assert_usage_error(
        &["--baseline-row-ns", "1e-320"],
        "must be between 0.1 and 1000000 ns per row",
    );
    assert_usage_error(&["--format", "xml"], "xml");
    assert_usage_error(&["--bogus"], "--bogus");
    assert_usage_error(&["--baseline-row-ns", "-3", "-d", "0.01"], "--baseline-row-ns");
    assert_usage_error(&["--all", "--clock", "rdtsc"], "--all");
    assert_usage_error(
        &["--plot-kind", "pie", "--plot", "x.svg"],
        "invalid value 'pie' for '--plot-kind",
    );
}

#[test]
fn unwritable_plot_path_fails_before_measuring_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/clocks.svg");
    assert_usage_error(
        &["-d", "0.01", "--plot", missing.to_str().unwrap()],
        "No such file or directory",
    );
    assert!(!missing.exists());
    assert_usage_error(
        &["-d", "0.01", "--plot", dir.path().to_str().unwrap()],
        "is a directory",
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing created");
}

fn schema() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schema/check.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn real_short_run_json_matches_the_schema_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("clocks.svg");
    let o = run(&[
        "-d",
        "0.05",
        "--clock",
        "monotonic",
        "--clock",
        "monotonic_coarse",
        "--format",
        "json",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let errors: Vec<String> = schema()
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let clocks = v["clocks"].as_array().unwrap();
    assert_eq!(clocks.len(), 2);
    assert_eq!(clocks[0]["name"], "monotonic");
    assert!(clocks[0]["avg_loop_ns"].as_f64().unwrap() > 0.0);
    assert!(clocks[0]["loops"].as_u64().unwrap() > 0);
    // The coarse clock's step is found exactly, not as a log2 bucket edge.
    let coarse_res = clocks[1]["resolution_ns"].as_u64().unwrap();
    let getres = clocks[1]["clock_getres_ns"].as_u64().unwrap();
    // The kernel advances the coarse clocks by whole ticks of its
    // timekeeping arithmetic, so a step may be a tick +-1 ns (3999999 for a
    // 4 ms tick): within 1 us of a multiple of clock_getres, where a log2
    // bucket edge (4194303) would be 194 us off.
    let getres = getres.max(1);
    let ticks = ((coarse_res + getres / 2) / getres).max(1);
    assert!(
        coarse_res.abs_diff(ticks * getres) <= 1_000,
        "coarse step {coarse_res} is not within 1 us of a multiple of clock_getres {getres}"
    );
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.contains("<svg") && svg_text.contains("CLOCK_MONOTONIC_COARSE"));
    // The default kind is the CDF; the title names the host's kernel.
    assert!(svg_text.contains("Clock read times on ") && svg_text.contains("cumulative"));
    assert!(svg_text.contains("1 µs: PostgreSQL"));
}

#[test]
fn default_run_prints_the_three_sections() {
    let o = run(&["-d", "0.05"]);
    assert!(matches!(o.status.code(), Some(0) | Some(1)));
    let out = String::from_utf8(o.stdout).unwrap();
    let env = out.find("Environment\n").unwrap();
    let clocks = out.find("\nClocks (").unwrap();
    let verdict = out.find("\nVerdict: ").unwrap();
    assert!(env < clocks && clocks < verdict, "{out}");
    assert!(out.contains("clock_gettime (CLOCK_MONOTONIC)"));
}

#[test]
fn prometheus_run_parses() {
    let o = run(&["-d", "0.02", "--clock", "monotonic", "--format", "prometheus"]);
    assert!(matches!(o.status.code(), Some(0) | Some(1)));
    let text = String::from_utf8(o.stdout).unwrap();
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "clockscope_clock_read_cost_seconds" && s.labels.get("clock") == Some("monotonic")));
}

#[test]
fn ctrl_c_stops_prints_what_was_measured_and_exits_130() {
    use std::io::{BufRead, Read};
    let mut child = Command::new(BIN)
        .args(["-d", "20", "--clock", "monotonic", "--clock", "realtime"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The handshake: the handler is installed before this line, and the
    // first clock's loop starts after it (a loop always measures one chunk
    // before it looks at the interrupt flag).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut ready = String::new();
    stderr.read_line(&mut ready).unwrap();
    assert_eq!(
        ready,
        "measuring 2 clocks for 20 s each (Ctrl-C stops it and prints what was measured)\n"
    );
    // SAFETY: sending SIGINT to our own child process by its pid.
    let rc = unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(rc, 0);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "stdout: {out}\nstderr: {rest}");
    assert!(
        out.contains("clock_gettime (CLOCK_MONOTONIC)") && out.contains("(interrupted)"),
        "{out}"
    );
    assert!(
        out.contains("realtime") && out.contains("skipped: interrupted before it was measured"),
        "{out}"
    );
    assert!(out.contains("Interrupted: the numbers above cover only what was measured before Ctrl-C (or SIGTERM)."));
}

#[test]
fn completions_and_man_page() {
    let o = run(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("clockscope") && s.contains("cross-cpu") && s.contains("--cpuid-dump"));
    let o = run(&["man"]);
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(
        s.starts_with(".ie") || s.contains(".TH clockscope"),
        "{}",
        &s[..s.len().min(200)]
    );
}

#[test]
fn clocks_lists_every_name() {
    let o = run(&["clocks", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["clocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for id in clockscope::ClockId::ALL {
        assert!(names.contains(&id.cli_name()), "{id}");
    }
    let mono = v["clocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "monotonic")
        .unwrap();
    assert_eq!(mono["works"], true);
}
