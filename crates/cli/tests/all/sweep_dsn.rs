//! `clockscope sweep --apply --dsn`: the real binary against a fake sysfs
//! root (never the real /sys: switching there changes no clock, so every
//! row measures the clocksource really in use) and a real PostgreSQL 15
//! started by `clockscope_explain::testing` (PostgreSQL 19 opt-in,
//! `CLOCKSCOPE_PG19`). The plumbing (explain's measurement under each
//! clocksource, after the switch is read back), the restore (after the
//! sweep, after Ctrl-C, after SIGKILL), `--max-time` over the whole sweep,
//! the refusal of a remote server, the JSON against its schema and the
//! text. Times are only checked for sanity, never asserted as results.

use crate::common;
use crate::common::fake_clocksource::Sysfs;
use crate::common::pg19;
use clockscope_explain::testing::{self, ServerHandle, TestServer, SUPERUSER};
use common::time_limit::limit;
use common::PG_VARS;
use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_clockscope");

/// The commands this file runs on the fake tree.
trait SweepDsn {
    fn cmd(&self, args: &[&str]) -> Command;
    fn run(&self, args: &[&str]) -> Output;
    fn spawn(&self, args: &[&str]) -> Child;
}

impl SweepDsn for Sysfs {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(["sweep", "--root", self.root()]).args(args);
        for v in PG_VARS {
            cmd.env_remove(v);
        }
        cmd.env("HOME", self.root.parent().unwrap());
        cmd.stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn spawn(&self, args: &[&str]) -> Child {
        self.cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The sweep's JSON checked against docs/schema/sweep.schema.json.
fn valid_json(o: &Output) -> Value {
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/sweep.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    doc
}

/// Exit 2 and one line on stderr holding `needle`, nothing on stdout.
fn assert_one_line_error(o: &Output, needle: &str) {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("clockscope: error: ") && err.contains(needle), "{err}");
    assert!(o.stdout.is_empty());
}

/// The shared PostgreSQL 15's socket DSN with `application_name` = `app`
/// (the sessions of one test told apart from the others').
fn dsn(server: &ServerHandle, app: &str) -> String {
    format!("{} application_name={app}", server.socket_dsn(SUPERUSER, "postgres"))
}

/// Sessions of `app` on `server` other than the asking one, and whether
/// one is in its EXPLAIN runs (running one, or idle after one).
fn sessions(server: &ServerHandle, app: &str) -> (i64, bool) {
    let mut c = server.superuser_client().unwrap();
    let row = c
        .query_one(
            "SELECT count(*), coalesce(bool_or(query ILIKE 'EXPLAIN%'), false) \
             FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
            &[&app],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

/// Waits (at most a generous deadline) until `app` runs EXPLAIN on `server`.
fn wait_for_explain(server: &ServerHandle, app: &str) {
    let start = Instant::now();
    while !sessions(server, app).1 {
        assert!(start.elapsed() < limit(Duration::from_secs(60)), "no EXPLAIN started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child process by its pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
}

#[test]
fn each_clocksource_gets_the_servers_real_overhead_and_the_original_is_restored() {
    let server = testing::shared();
    let s = Sysfs::new("kvm-clock", "kvm-clock tsc");
    let max_time = 12.0;
    let start = Instant::now();
    let o = s.run(&[
        "--apply",
        "-d",
        "0.02",
        "--format",
        "json",
        "--dsn",
        &dsn(&server, "sweep_plain"),
        "--rows",
        "20000",
        "--runs",
        "1",
        "--max-time",
        "12",
    ]);
    let took = start.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(s.current(), "kvm-clock\n");
    let doc = valid_json(&o);
    let srv = &doc["server"];
    assert!(srv["server_version"].as_str().unwrap().starts_with("15"), "{srv}");
    assert_eq!(srv["locality"], "unix_socket");
    assert_eq!(srv["workload"], "table");
    assert_eq!(srv["rows"], 20000);
    assert!(
        srv["clock_source_note"]
            .as_str()
            .unwrap()
            .contains("before PostgreSQL 19"),
        "{srv}"
    );
    assert!(srv["tsc_reference"].is_null());
    for (row, name) in doc["results"].as_array().unwrap().iter().zip(["kvm-clock", "tsc"]) {
        assert_eq!(row["clocksource"], name);
        let e = &row["server_explain"];
        assert_eq!(e["clock_source"], "system", "{e}");
        assert_eq!(e["follows_kernel_clocksource"], true);
        assert!(e["pairs"].as_u64().unwrap() >= 1, "{e}");
        assert!(e["timing_on_ms"].as_f64().unwrap() > 0.0);
        // A share of the time left: what one that ended early left over goes to the next.
        let share = e["max_time_s"].as_f64().unwrap();
        assert!(share > 0.0 && share <= max_time, "{share}");
    }
    // --max-time covers the whole sweep: it ends by it, plus each run's
    // cancel grace (1.5 s) and a loaded machine's slack.
    assert!(took < limit(Duration::from_secs_f64(max_time + 8.0)), "{took:?}");
    assert_eq!(doc["recommendation"]["based_on"], "explain_overhead_per_row");
    // The sessions ended with their runs (TEMP tables and settings with them).
    assert_eq!(sessions(&server, "sweep_plain").0, 0);
}

#[test]
fn the_verbose_text_shows_both_tables_the_clock_it_read_and_the_recommendation() {
    let server = testing::shared();
    let s = Sysfs::new("tsc", "tsc acpi_pm");
    let o = s.run(&[
        "--verbose",
        "--apply",
        "-d",
        "0.02",
        "--dsn",
        &dsn(&server, "sweep_text"),
        "--rows",
        "20000",
        "--runs",
        "1",
        "--max-time",
        "8",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(s.current(), "tsc\n");
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "EXPLAIN ANALYZE on the server: PostgreSQL 15",
        "(unix socket, this machine); count(*) over a TEMP table of 20000 rows.",
        "clocksource read cost EXPLAIN overhead/row (95% interval) slowdown (95% interval) pairs",
        "Server clock: the server reads clock_gettime(CLOCK_MONOTONIC) for EXPLAIN ANALYZE",
        // --verbose: the system clock's own table too, and the control.
        "clocksource read cost avg loop p99 max clock_gettime PG rule EXPLAIN",
        "Control, tsc again at the end (drift between runs):",
        "Restored: tsc (read back).",
        "Recommendation: ",
        "EXPLAIN ANALYZE overhead per row",
    ] {
        assert!(words.contains(needle), "{needle:?} not in:\n{out}");
    }
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| (l.starts_with("tsc ") || l.starts_with("acpi_pm ")) && l.contains(" ns ("))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
}

#[test]
fn without_apply_it_names_the_server_and_connects_to_nothing() {
    let s = Sysfs::new("tsc", "tsc hpet");
    // Nothing listens there: a connection would fail.
    let o = s.run(&["--dsn", "host=/nonexistent-clockscope-dir port=1", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let doc = valid_json(&o);
    assert!(doc["server"]["server_version"].is_null());
    assert_eq!(doc["server"]["locality"], "unix_socket");
    // The default --max-time: 60 s per clocksource plus -d (1 s) under each.
    assert_eq!(doc["server"]["max_time_s"], 122.0);
    let o = s.run(&["--dsn", "host=/nonexistent-clockscope-dir port=1"]);
    assert!(
        text(&o.stdout).contains("With --apply it would also run EXPLAIN ANALYZE on host=/nonexistent-clockscope-dir"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(s.current(), "tsc\n");
}

#[test]
fn a_remote_server_is_refused_in_one_line_before_anything_is_switched() {
    for dsn in [
        "host=192.0.2.1 dbname=postgres",
        "postgresql://db.example.invalid/postgres",
        "host=localhost hostaddr=192.0.2.7",
    ] {
        let s = Sysfs::new("tsc", "tsc hpet");
        let o = s.run(&["--apply", "-d", "0.01", "--dsn", dsn]);
        assert_one_line_error(
            &o,
            "may be on another machine: switching this machine's clocksource changes nothing",
        );
        assert_eq!(s.current(), "tsc\n", "{dsn}");
        assert!(!s.lock_file().exists(), "{dsn}: the lock was taken");
    }
}

#[test]
fn a_max_time_the_read_cost_rounds_would_eat_is_refused_before_switching() {
    let s = Sysfs::new("tsc", "tsc hpet acpi_pm");
    let o = s.run(&["--apply", "-d", "1", "--dsn", "host=/tmp", "--max-time", "5"]);
    assert_one_line_error(&o, "--max-time 5 s: after -d 1 s under each of 3 clocksource(s)");
    assert_eq!(s.current(), "tsc\n");
    assert!(!s.lock_file().exists());
    // Options that need --dsn say so (clap: exit 2).
    let o = s.run(&["--apply", "--rows", "10"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--dsn"), "{}", text(&o.stderr));
}

#[test]
fn ctrl_c_during_the_explain_runs_restores_and_prints_what_was_measured() {
    let server = testing::shared();
    let s = Sysfs::new("kvm-clock", "kvm-clock tsc");
    let app = "sweep_ctrl_c";
    // At least 300 pairs: seconds of EXPLAIN runs under the first clocksource.
    let child = s.spawn(&[
        "--apply",
        "-d",
        "0.02",
        "--format",
        "json",
        "--dsn",
        &dsn(&server, app),
        "--rows",
        "50000",
        "--runs",
        "300",
        "--max-time",
        "120",
    ]);
    wait_for_explain(&server, app);
    // The first pass ended on tsc; the second starts on kvm-clock.
    assert_eq!(s.current(), "kvm-clock\n");
    // A few pairs of 50000 rows complete in well under a second.
    std::thread::sleep(Duration::from_millis(1000));
    signal(&child, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    assert_eq!(s.current(), "kvm-clock\n");
    let doc = valid_json(&o);
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["restore"], "in_place");
    let first = &doc["results"][0]["server_explain"];
    assert_eq!(first["stopped_by"], "interrupted", "{first}");
    assert!(first["pairs"].as_u64().unwrap() >= 1, "{first}");
    // The second clocksource's EXPLAIN never ran.
    assert!(doc["results"][1]["server_explain"].is_null());
    assert!(doc["recommendation"].is_object());
    let start = Instant::now();
    while sessions(&server, app).0 > 0 {
        assert!(
            start.elapsed() < limit(Duration::from_secs(10)),
            "the session outlived the sweep"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigkill_during_the_explain_runs_is_undone_by_the_guardian() {
    let server = testing::shared();
    // The original is not the first swept, so the EXPLAIN runs start on a switched one.
    let s = Sysfs::new("kvm-clock", "tsc kvm-clock");
    let app = "sweep_sigkill";
    let child = s.spawn(&[
        "--apply",
        "-d",
        "0.02",
        "--dsn",
        &dsn(&server, app),
        "--rows",
        "50000",
        "--runs",
        "300",
        "--max-time",
        "120",
        "--only",
        "tsc",
    ]);
    wait_for_explain(&server, app);
    assert_eq!(s.current(), "tsc\n");
    signal(&child, libc::SIGKILL);
    let o = child.wait_with_output().unwrap();
    // The guardian restores once the process is gone (stderr ends when it exits).
    assert_eq!(s.current(), "kvm-clock\n", "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("its guardian wrote kvm-clock back"),
        "{}",
        text(&o.stderr)
    );
    // The server ends the orphaned session once its EXPLAIN finishes and it sees the socket closed.
    let start = Instant::now();
    while sessions(&server, app).0 > 0 {
        assert!(
            start.elapsed() < limit(Duration::from_secs(30)),
            "the session outlived the sweep"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The lock was released with the guardian: the next sweep runs.
    let o = s.run(&["--apply", "-d", "0.01", "--only", "tsc"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

/// PostgreSQL 19 (opt-in): `timing_clock_source = system` under each
/// clocksource, `tsc` once as the reference, and the note saying so.
#[test]
fn on_postgresql_19_the_system_clock_is_swept_and_tsc_shown_once() {
    let Some(install) = pg19::install("on_postgresql_19_the_system_clock_is_swept_and_tsc_shown_once") else {
        return;
    };
    let server = TestServer::start_from(&install.join("bin"), "").unwrap();
    let s = Sysfs::new("kvm-clock", "kvm-clock tsc");
    let o = s.run(&[
        "--apply",
        "-d",
        "0.02",
        "--format",
        "json",
        "--dsn",
        &dsn(&server.handle(), "sweep_pg19"),
        "--rows",
        "20000",
        "--runs",
        "1",
        "--max-time",
        "16",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(s.current(), "kvm-clock\n");
    let doc = valid_json(&o);
    let srv = &doc["server"];
    assert!(srv["server_version_num"].as_u64().unwrap() >= 190_000, "{srv}");
    assert!(srv["clock_source_note"]
        .as_str()
        .unwrap()
        .starts_with("PostgreSQL 19: timing_clock_source = system"));
    for row in doc["results"].as_array().unwrap() {
        assert_eq!(row["server_explain"]["clock_source"], "system", "{row}");
    }
    // tsc once, unless this server has no usable TSC (then a warning says why).
    let warned = srv["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("timing_clock_source tsc not measured"));
    assert!(srv["tsc_reference"]["clock_source"] == "tsc" || warned, "{srv}");
}
