//! `clockscope explain` end to end: the real binary against a real
//! PostgreSQL started by `clockscope_explain::testing` (one shared server per
//! test binary; tests that stop a server start their own). Times are only
//! checked for sanity.

use crate::common;
use clockscope_explain::testing::{self, TestServer, PASSWORD_ROLE, SUPERUSER};
use common::time_limit::limit;
use common::PG_VARS;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// An empty HOME for every run (no ~/.pgpass, ~/.pg_service.conf or
/// ~/.postgresql of the machine's user), unless a test sets its own.
fn empty_home() -> &'static std::path::Path {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// `clockscope explain <args>` with the PG* variables cleared, then `env` set.
fn explain_cmd(args: &[&str], env: &[(&str, String)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clockscope"));
    // The full text (--verbose) carries every line the tests look for; JSON ignores it.
    cmd.args(["explain", "-v"]).args(args);
    for v in PG_VARS {
        cmd.env_remove(v);
    }
    cmd.env("HOME", empty_home());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null());
    cmd
}

fn explain(args: &[&str], env: &[(&str, String)]) -> Output {
    explain_cmd(args, env).output().expect("run clockscope")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit 2 and exactly one line on stderr starting `clockscope: error: <prefix>`.
fn assert_one_line_error(out: &Output, prefix: &str) -> String {
    let err = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stderr: {err}\nstdout: {}",
        text(&out.stdout)
    );
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with(&format!("clockscope: error: {prefix}")), "{err}");
    assert!(out.stdout.is_empty(), "stdout: {}", text(&out.stdout));
    err
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_small_run_prints_the_table() {
    let server = testing::shared();
    let dsn = server.socket_dsn(SUPERUSER, "postgres");
    let out = explain(&["--dsn", &dsn, "--rows", "100000", "--runs", "2"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}\n{stdout}", text(&out.stderr));
    for needle in [
        "Server:   PostgreSQL ",
        "unix socket, this machine",
        "max_parallel_workers_per_gather",
        "jit ",
        "-> off for this session",
        "100,000 rows",
        "200,006 clock reads per TIMING ON run",
        "Clock source: system",
        "TIMING OFF",
        "TIMING ON",
        "overhead per row",
        "overhead per clock read",
        "predicted per clock read",
        "observed / predicted",
        "clock_gettime (CLOCK_MONOTONIC)",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in\n{stdout}");
    }
    assert!(!stdout.contains("warning: the server"), "{stdout}");
}

#[test]
fn json_has_the_documented_keys() {
    let server = testing::shared();
    let dsn = server.tcp_dsn(SUPERUSER, "postgres");
    let out = explain(
        &["--dsn", &dsn, "--rows", "100000", "--runs", "2", "--format", "json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(v["server_version"].as_str().unwrap().len() > 2);
    assert!(v["server_version_num"].as_u64().unwrap() >= 150_000);
    // version(): the release server_version names, the build and platform.
    let full = v["server_version_full"].as_str().unwrap();
    let release = v["server_version"].as_str().unwrap().split(' ').next().unwrap();
    assert!(full.starts_with(&format!("PostgreSQL {release}")), "{full}");
    // A default server: its timing settings read and judged; the only change
    // ever recommended is turning on what the judge found cheap.
    let judged = v["timing_settings"]["settings"].as_array().unwrap();
    assert!(
        judged
            .iter()
            .any(|s| s["name"] == "track_io_timing" && s["value"] == "off"),
        "{judged:?}"
    );
    for s in judged {
        let cheap = s["decision"]["verdict"] == "cheap";
        let want = cheap.then(|| format!("ALTER SYSTEM SET {} = on;", s["name"].as_str().unwrap()));
        assert_eq!(
            s["recommendation"]["alter_system"].as_str().map(str::to_string),
            want,
            "{s:?}"
        );
    }
    assert_eq!(v["server_locality"], "loopback");
    assert_eq!(v["rows"], 100_000);
    let src = &v["clock_sources"][0];
    for key in ["timing_off_ms", "timing_on_ms", "slowdown", "predicted_per_read_ns"] {
        let x = src[key]
            .as_f64()
            .unwrap_or_else(|| panic!("clock_sources[0].{key} in {src}"));
        assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    }
    for key in ["overhead_per_row_ns", "overhead_per_read_ns", "observed_over_predicted"] {
        assert!(
            src[key].as_f64().is_some_and(f64::is_finite),
            "clock_sources[0].{key} in {src}"
        );
    }
    // --runs 2 is the minimum; the noise control's interval needs 6 pairs.
    let pairs = src["noise"]["pairs"].as_u64().unwrap();
    assert!(pairs >= 2, "{src}");
    for key in ["runs_timing_off_ms", "runs_timing_on_ms"] {
        assert_eq!(
            src[key].as_array().map(Vec::len),
            Some(pairs as usize),
            "{key} in {src}"
        );
    }
    let noise = &src["noise"];
    let stopped = noise["stopped_by"].as_str().unwrap();
    assert!(["precision", "max_time"].contains(&stopped), "{noise}");
    assert_eq!(noise["target_reached"], stopped == "precision", "{noise}");
    assert_eq!(v["max_time_s"], 60.0);
    assert!(
        v["cpu_contention"]["other_busy_fraction"].as_f64().is_some(),
        "{}",
        v["cpu_contention"]
    );
    // statement_timeout was set for the session: 30 s + 20 us x 100,000 rows.
    let timeout = v["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "statement_timeout")
        .unwrap_or_else(|| panic!("no statement_timeout in {}", v["settings"]));
    assert_eq!(timeout["server_value"], "0", "{timeout}");
    assert_eq!(timeout["session_value"], "32s", "{timeout}");
    assert!(v["this_machine"]["system"]["per_read_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn pg_environment_variables_are_used_without_dsn() {
    let server = testing::shared();
    let env = [
        ("PGHOST", server.socket_dir.display().to_string()),
        ("PGPORT", server.port.to_string()),
        ("PGUSER", SUPERUSER.to_string()),
        ("PGDATABASE", "postgres".to_string()),
    ];
    let out = explain(&["--rows", "1000", "--runs", "1", "--format", "json"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["server_locality"], "unix_socket");
    assert!(v["server"].as_str().unwrap().contains(&format!("port={}", server.port)));
}

#[test]
fn bad_rows_fail_before_connecting() {
    // The DSN points nowhere: a --rows error proves nothing connected first.
    let dsn = format!("host=127.0.0.1 port={} user=x dbname=x", dead_port());
    for (rows, message) in [
        ("0", "--rows: must be at least 1, got 0"),
        ("-5", "--rows: must be at least 1, got -5"),
        ("2e9", "--rows: must be at most 1000000000 (1e9), got 2e9"),
    ] {
        let out = explain(&["--dsn", &dsn, "--rows", rows], &[]);
        let err = assert_one_line_error(&out, "--rows: ");
        assert_eq!(err.trim_end(), format!("clockscope: error: {message}"), "--rows {rows}");
    }
    for rows in ["abc", "__1", "+1", " 1", "1e+6", "1_", "1.5"] {
        let out = explain(&["--dsn", &dsn, "--rows", rows], &[]);
        let err = assert_one_line_error(&out, "--rows: ");
        assert!(
            err.contains(&format!("'{rows}' is not a whole number of rows; write digits")),
            "--rows {rows:?}: {err}"
        );
    }
    // The accepted forms get past --rows (to the connection).
    for rows in ["1_000", "1e3", "1000"] {
        let out = explain(&["--dsn", &dsn, "--rows", rows], &[]);
        assert_one_line_error(&out, "cannot connect to PostgreSQL");
    }
}

#[test]
fn a_table_above_2_gb_needs_max_table_size() {
    // Refused before connecting: the DSN points nowhere.
    let dsn = format!("host=127.0.0.1 port={} user=x dbname=x", dead_port());
    let out = explain(&["--dsn", &dsn, "--rows", "100000000"], &[]);
    let err = assert_one_line_error(&out, "--rows 100000000: the TEMP table would take about 3.4 GB");
    assert!(
        err.contains("above 2.0 GB needs --max-table-size (e.g. --max-table-size 4GB)"),
        "{err}"
    );
    // Allowed explicitly, it gets as far as the connection.
    let out = explain(&["--dsn", &dsn, "--rows", "100000000", "--max-table-size", "4GB"], &[]);
    assert_one_line_error(&out, "cannot connect to PostgreSQL");
    // A smaller limit refuses smaller tables.
    let out = explain(&["--dsn", &dsn, "--rows", "100000", "--max-table-size", "1MB"], &[]);
    let err = assert_one_line_error(&out, "--rows 100000: the TEMP table would take about 3.5 MB");
    assert!(err.trim_end().ends_with("above --max-table-size 1.0 MB"), "{err}");
    let out = explain(&["--dsn", &dsn, "--max-table-size", "lots"], &[]);
    assert_one_line_error(&out, "--max-table-size: 'lots' is not a size");
}

/// A server that accepts TCP connections on 127.0.0.1 and never says a word;
/// each accepted connection is reported on the channel and kept open.
fn silent_tcp_server() -> (u16, mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
            let _ = tx.send(());
        }
    });
    (port, rx)
}

/// The same on a unix socket `<dir>/.s.PGSQL.<port>`, as PostgreSQL names it.
fn silent_unix_server(dir: &std::path::Path, port: u16) -> mpsc::Receiver<()> {
    let listener = std::os::unix::net::UnixListener::bind(dir.join(format!(".s.PGSQL.{port}"))).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
            let _ = tx.send(());
        }
    });
    rx
}

/// Runs `explain --dsn dsn --rows 1000` against a silent server with
/// `connect_timeout=2`: one line, exit 2, within connect_timeout + 1 s.
fn assert_silent_server_times_out(dsn: &str, accepted: &mpsc::Receiver<()>, prefix: &str) {
    let start = Instant::now();
    let out = explain(&["--dsn", dsn, "--rows", "1000"], &[]);
    let took = start.elapsed();
    let err = assert_one_line_error(&out, prefix);
    assert!(
        err.contains("no session within 2 s (connect_timeout: socket connect, startup and authentication)"),
        "{err}"
    );
    assert!(accepted.try_recv().is_ok(), "the silent server never saw a connection");
    // The timeout cannot fire early; the brief allows 1 s for the rest.
    assert!(took >= Duration::from_secs(2), "gave up after {took:?}");
    assert!(took < limit(Duration::from_secs(3)), "took {took:?}");
}

#[test]
fn tls_files_that_are_missing_are_one_line_errors_naming_the_setting() {
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().display().to_string();
    let dsn = format!(
        "host=127.0.0.1 port={} user=x dbname=x sslmode=verify-full sslrootcert=/nonexistent/ca.pem",
        dead_port()
    );
    let out = explain(&["--dsn", &dsn], &[("HOME", home_s.clone())]);
    assert_one_line_error(&out, "--dsn sslrootcert: /nonexistent/ca.pem: ");
    // verify-full with no root file at all (an empty HOME), from PGSSLMODE.
    let dsn = format!("host=127.0.0.1 port={} user=x dbname=x", dead_port());
    let out = explain(
        &["--dsn", &dsn],
        &[("HOME", home_s.clone()), ("PGSSLMODE", "verify-full".to_string())],
    );
    let err = assert_one_line_error(&out, "sslmode=verify-full: root certificate file \"");
    assert!(err.contains(".postgresql/root.crt"), "{err}");
    let out = explain(
        &["--dsn", &dsn],
        &[("HOME", home_s), ("PGSSLMODE", "sometimes".to_string())],
    );
    assert_one_line_error(&out, "PGSSLMODE: 'sometimes' is not one of");
}

#[test]
fn a_silent_tcp_server_fails_within_connect_timeout() {
    let (port, accepted) = silent_tcp_server();
    let dsn = format!("host=127.0.0.1 port={port} user=x dbname=x connect_timeout=2");
    assert_silent_server_times_out(
        &dsn,
        &accepted,
        &format!("cannot connect to PostgreSQL at host=127.0.0.1 port={port}"),
    );
}

#[test]
fn a_silent_unix_socket_server_fails_within_connect_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let accepted = silent_unix_server(dir.path(), 5999);
    let dsn = format!(
        "host={} port=5999 user=x dbname=x connect_timeout=2",
        dir.path().display()
    );
    assert_silent_server_times_out(
        &dsn,
        &accepted,
        &format!(
            "cannot connect to PostgreSQL at host={} port=5999",
            dir.path().display()
        ),
    );
}

fn signal(child: &Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid; no memory is involved.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
}

/// Waits up to `limit` for the child to exit; kills it if it did not.
/// Returns its output and how long it took.
fn wait_exit(mut child: Child, limit: Duration) -> (Output, Duration, bool) {
    let start = Instant::now();
    let exited = testing::wait_for(limit, || child.try_wait().map(|s| s.is_some()).unwrap_or(true));
    let took = start.elapsed();
    if !exited {
        let _ = child.kill();
    }
    (child.wait_with_output().unwrap(), took, exited)
}

#[test]
fn one_sigint_stops_a_connection_that_hangs() {
    let (port, accepted) = silent_tcp_server();
    let dsn = format!("host=127.0.0.1 port={port} user=x dbname=x connect_timeout=60");
    let child = explain_cmd(&["--dsn", &dsn, "--rows", "1000"], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let connected = accepted.recv_timeout(limit(Duration::from_secs(30))).is_ok();
    if connected {
        signal(&child, libc::SIGINT);
    }
    let (out, took, exited) = wait_exit(child, limit(Duration::from_secs(10)));
    assert!(connected, "clockscope never connected: {}", text(&out.stderr));
    assert!(exited, "one SIGINT did not stop the hanging connection");
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(took < limit(Duration::from_secs(2)), "took {took:?} after SIGINT");
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(err.starts_with("clockscope: interrupted"), "{err}");
}

/// Rows of clockscope's sessions in pg_stat_activity: those named
/// `application_name` (`clockscope` by default; a test on the shared server
/// gives its runs their own name through PGAPPNAME and counts only those,
/// since the tests beside it run clockscope too).
fn clockscope_sessions(server: &testing::ServerHandle, application_name: &str, filter: &str) -> i64 {
    let mut c = server.superuser_client().unwrap();
    c.query_one(
        &format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 {filter}"),
        &[&application_name],
    )
    .unwrap()
    .get(0)
}

/// Starts a 20,000,000-row run on its own server with its sessions named
/// `app` (PGAPPNAME), waits until the server shows the fill (INSERT)
/// active, sends `sig` `signals` times, and checks: exit 130 within 2 s,
/// nothing of clockscope's left in pg_stat_activity or pg_class within a
/// few seconds, and the server saw the cancel.
fn interrupt_the_fill(sig: libc::c_int, signals: usize, app: &str) {
    let server = TestServer::start().unwrap();
    let handle = server.handle();
    let dsn = handle.socket_dsn(SUPERUSER, "postgres");
    let child = explain_cmd(
        &["--dsn", &dsn, "--rows", "20000000", "--runs", "1"],
        &[("PGAPPNAME", app.to_string())],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // The handshake: the server shows the INSERT active (the handler was
    // installed before connecting).
    let filling = "AND state = 'active' AND query LIKE 'INSERT INTO%'";
    let started = testing::wait_for(limit(Duration::from_secs(60)), || {
        clockscope_sessions(&handle, app, filling) > 0
    });
    // The fill must still be running when the signal lands.
    let still_filling = started && clockscope_sessions(&handle, app, filling) > 0;
    if still_filling {
        for i in 0..signals {
            if i > 0 {
                // Back to back, the kernel merges two pending signals into one;
                // 50 ms apart the second lands during the first's cleanup.
                std::thread::sleep(Duration::from_millis(50));
            }
            signal(&child, sig);
        }
    }
    let (out, took, exited) = wait_exit(child, limit(Duration::from_secs(30)));
    let err = text(&out.stderr);
    assert!(started, "the fill never started: {err}");
    assert!(
        still_filling,
        "the fill ended as it was seen; the test needs more rows: {err}"
    );
    assert!(exited, "clockscope did not exit after {signals} signal(s) {sig}");
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        took < limit(Duration::from_secs(2)),
        "exit took {took:?} after {signals} signal(s) {sig}"
    );
    if signals == 1 {
        assert_eq!(
            err.trim_end(),
            "clockscope: interrupted before a pair of EXPLAIN runs completed"
        );
    }
    let gone = testing::wait_for(limit(Duration::from_secs(3)), || {
        clockscope_sessions(&handle, app, "") == 0
    });
    assert!(gone, "clockscope's session is still in pg_stat_activity");
    let mut c = handle.superuser_client().unwrap();
    let tables: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'clockscope_explain%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0, "the TEMP table is left");
    assert!(
        server.log().contains("canceling statement due to user request"),
        "the server never got the cancel request:\n{}",
        server.log()
    );
}

#[test]
fn one_sigint_cancels_the_fill_and_leaves_nothing() {
    interrupt_the_fill(libc::SIGINT, 1, "clockscope_fill_sigint");
}

#[test]
fn two_sigints_cancel_the_fill_and_leave_nothing() {
    interrupt_the_fill(libc::SIGINT, 2, "clockscope_fill_sigint2");
}

#[test]
fn sigterm_cancels_the_fill_like_ctrl_c() {
    interrupt_the_fill(libc::SIGTERM, 1, "clockscope_fill_sigterm");
}

#[test]
fn an_unreachable_port_is_one_line() {
    let port = dead_port();
    let dsn = format!("host=127.0.0.1 port={port} user=x dbname=x");
    let out = explain(&["--dsn", &dsn, "--rows", "1000"], &[]);
    assert_one_line_error(
        &out,
        &format!("cannot connect to PostgreSQL at host=127.0.0.1 port={port}"),
    );
}

#[test]
fn a_malformed_dsn_is_one_line() {
    let out = explain(&["--dsn", "host=/tmp port=notaport", "--rows", "1000"], &[]);
    assert_one_line_error(&out, "--dsn: ");
}

#[test]
fn a_stopped_server_is_one_line() {
    let mut server = TestServer::start().unwrap();
    let dsn = server.handle().socket_dsn(SUPERUSER, "postgres");
    server.stop().unwrap();
    let out = explain(&["--dsn", &dsn, "--rows", "1000"], &[]);
    assert_one_line_error(&out, "cannot connect to PostgreSQL at host=");
}

#[test]
fn a_server_that_stops_mid_run_is_one_line() {
    let mut server = TestServer::start().unwrap();
    let handle = server.handle();
    // Long enough (1000 pairs) that the stop lands inside the runs.
    let dsn = handle.socket_dsn(SUPERUSER, "postgres");
    let app = "clockscope_server_stops";
    let mut child = explain_cmd(
        &["--dsn", &dsn, "--rows", "100000", "--runs", "1000"],
        &[("PGAPPNAME", app.to_string())],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut monitor = handle.superuser_client().unwrap();
    let explaining = testing::wait_for(limit(Duration::from_secs(60)), || {
        monitor
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 \
                 AND query LIKE 'EXPLAIN%'",
                &[&app],
            )
            .map(|r| r.get::<_, i64>(0) > 0)
            .unwrap_or(false)
    });
    drop(monitor);
    server.stop().unwrap();
    // Never leave the child behind, even if it hangs.
    let exited = testing::wait_for(limit(Duration::from_secs(30)), || {
        child.try_wait().map(|s| s.is_some()).unwrap_or(true)
    });
    if !exited {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(explaining, "the runs never started: {}", text(&out.stderr));
    assert!(
        exited,
        "clockscope did not exit after the server stopped: {}",
        text(&out.stderr)
    );
    let err = assert_one_line_error(&out, "EXPLAIN ANALYZE with TIMING O");
    assert!(
        err.contains("SQLSTATE 57P01") || err.contains("closed the connection"),
        "{err}"
    );
}

#[test]
fn wrong_password_is_one_line_with_sqlstate() {
    let server = testing::shared();
    let dsn = format!(
        "{} password=not-the-password",
        server.tcp_dsn(PASSWORD_ROLE, "postgres")
    );
    let out = explain(&["--dsn", &dsn, "--rows", "1000"], &[]);
    let err = assert_one_line_error(&out, "cannot connect to PostgreSQL at host=127.0.0.1");
    assert!(
        err.contains("password authentication failed") && err.contains("(SQLSTATE 28P01)"),
        "{err}"
    );
    assert!(!err.contains("not-the-password"), "{err}");
}

#[test]
fn a_role_without_temp_rights_is_one_line_with_sqlstate() {
    let server = testing::shared();
    for sql in [
        "CREATE DATABASE cli_notemp",
        "REVOKE TEMP ON DATABASE cli_notemp FROM PUBLIC",
        "CREATE ROLE cli_notemp_user LOGIN",
    ] {
        server.sql(sql).unwrap();
    }
    let dsn = server.socket_dsn("cli_notemp_user", "cli_notemp");
    // Asked for a table: one line with the server's SQLSTATE.
    let out = explain(&["--dsn", &dsn, "--rows", "1000", "--workload", "table"], &[]);
    let err = assert_one_line_error(&out, "creating the TEMP table: permission denied");
    assert!(err.contains("(SQLSTATE 42501)"), "{err}");
    // By default: generate_series, and the report says why.
    let out = explain(&["--dsn", &dsn, "--rows", "1000", "--runs", "1"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    // Lines longer than 100 columns wrap: compare the words.
    let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "Query: SELECT count(*) FROM pg_catalog.generate_series(1, 1000) (1,000 rows from generate_series, \
             no table; no TEMP table: the role has no TEMP privilege on this database)"
        ),
        "{report}"
    );
}

/// A server that completes the startup (trust: AuthenticationOk, a
/// BackendKeyData of pid 4242 / key 7, ReadyForQuery) and then never answers
/// a query. Reports (0, 0) when a client has logged in, (-1, -1) when its
/// first message after that (its first query) arrived, and each cancel
/// request that reaches it as (pid, key).
fn server_silent_after_startup() -> (u16, mpsc::Receiver<(i32, i32)>) {
    use std::io::{Read, Write};
    fn read_i32(s: &mut std::net::TcpStream) -> Option<i32> {
        let mut b = [0u8; 4];
        s.read_exact(&mut b).ok()?;
        Some(i32::from_be_bytes(b))
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let (Some(len), Some(code)) = (read_i32(&mut s), read_i32(&mut s)) else {
                continue;
            };
            match code {
                // CancelRequest: pid and key follow.
                80_877_102 => {
                    if let (Some(pid), Some(key)) = (read_i32(&mut s), read_i32(&mut s)) {
                        let _ = tx.send((pid, key));
                    }
                }
                // Protocol 3.0 startup: skip its parameters, let the client in.
                196_608 => {
                    let mut rest = vec![0u8; usize::try_from(len - 8).unwrap_or(0)];
                    if s.read_exact(&mut rest).is_err() {
                        continue;
                    }
                    let mut reply = Vec::new();
                    reply.extend_from_slice(b"R\0\0\0\x08\0\0\0\0");
                    reply.extend_from_slice(b"K\0\0\0\x0c");
                    reply.extend_from_slice(&4242i32.to_be_bytes());
                    reply.extend_from_slice(&7i32.to_be_bytes());
                    reply.extend_from_slice(b"Z\0\0\0\x05I");
                    if s.write_all(&reply).is_ok() {
                        let _ = tx.send((0, 0));
                    }
                    // The handshake: (-1, -1) once the client's first
                    // message (its first query) arrived; never answered.
                    let query_tx = tx.clone();
                    held.push(std::thread::spawn(move || {
                        let mut kind = [0u8; 1];
                        if s.read_exact(&mut kind).is_ok() && read_i32(&mut s).is_some() {
                            let _ = query_tx.send((-1, -1));
                        }
                        let _ = s.read_to_end(&mut Vec::new());
                    }));
                }
                _ => {}
            }
        }
    });
    (port, rx)
}

#[test]
fn one_sigint_cancels_a_statement_that_hangs() {
    let (port, cancels) = server_silent_after_startup();
    let dsn = format!("host=127.0.0.1 port={port} user=x dbname=x sslmode=disable");
    let mut child = explain_cmd(&["--dsn", &dsn, "--rows", "1000"], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let logged_in = cancels.recv_timeout(limit(Duration::from_secs(30))) == Ok((0, 0));
    // The first query follows the login at once, and hangs: signal once the
    // server has it (a handshake, not a sleep).
    let querying = logged_in && cancels.recv_timeout(limit(Duration::from_secs(30))) == Ok((-1, -1));
    let running = querying && child.try_wait().unwrap().is_none();
    if running {
        signal(&child, libc::SIGINT);
    }
    let (out, took, exited) = wait_exit(child, limit(Duration::from_secs(10)));
    let err = text(&out.stderr);
    assert!(logged_in, "clockscope never logged in: {err}");
    assert!(querying, "clockscope never sent its first query: {err}");
    assert!(running, "clockscope ended before the signal: {err}");
    assert!(exited, "one SIGINT did not stop the hanging statement");
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(took < limit(Duration::from_secs(2)), "took {took:?} after SIGINT");
    assert_eq!(
        err.trim_end(),
        "clockscope: interrupted before a pair of EXPLAIN runs completed"
    );
    assert_eq!(
        cancels.recv_timeout(limit(Duration::from_secs(1))),
        Ok((4242, 7)),
        "no cancel request for the session's backend"
    );
}

#[test]
fn a_pgpass_others_can_read_is_ignored_with_libpqs_warning() {
    use std::os::unix::fs::PermissionsExt;
    let server = testing::shared();
    let home = tempfile::tempdir().unwrap();
    let pgpass = home.path().join(".pgpass");
    std::fs::write(&pgpass, format!("*:*:*:{PASSWORD_ROLE}:right-password\n")).unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let dsn = server.tcp_dsn(PASSWORD_ROLE, "postgres");
    let out = explain(
        &["--dsn", &dsn, "--rows", "1000"],
        &[("HOME", home.path().display().to_string())],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let mut lines = err.lines();
    assert_eq!(
        lines.next().unwrap(),
        format!(
            "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
            pgpass.display()
        )
    );
    let last = lines.next().unwrap();
    assert!(
        last.starts_with("clockscope: error: cannot connect to PostgreSQL at ") && last.contains("password missing"),
        "{last}"
    );
    assert!(lines.next().is_none(), "{err}");
    // 0600: the same file gives the password and the run succeeds.
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = explain(
        &["--dsn", &dsn, "--rows", "1000", "--runs", "1"],
        &[("HOME", home.path().display().to_string())],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `--query` against the shared server: exit code, stdout, stderr.
fn query(sql: &str, extra: &[&str]) -> Output {
    query_as("clockscope", sql, extra)
}

/// [`query`] with its sessions named `application_name` (PGAPPNAME).
fn query_as(application_name: &str, sql: &str, extra: &[&str]) -> Output {
    let server = testing::shared();
    let dsn = server.socket_dsn(SUPERUSER, "postgres");
    let mut args = vec!["--dsn", dsn.as_str(), "--query", sql];
    args.extend_from_slice(extra);
    explain(&args, &[("PGAPPNAME", application_name.to_string())])
}

/// The application_name of a_query_that_reads_a_table_is_measured_node_by_node's runs.
const READ_APP: &str = "clockscope_q_read";

fn count_rows(table: &str) -> i64 {
    let mut c = testing::shared().superuser_client().unwrap();
    c.query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .unwrap()
        .get(0)
}

#[test]
fn a_query_that_reads_a_table_is_measured_node_by_node() {
    let server = testing::shared();
    server
        .sql("CREATE TABLE cli_q_read AS SELECT g AS n FROM generate_series(1, 50000) g; ANALYZE cli_q_read")
        .unwrap();
    let sql = "SELECT count(*) FROM cli_q_read WHERE n % 2 = 0";
    let out = query_as(READ_APP, sql, &["--format", "json", "--max-time", "8"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["workload"], "query");
    assert_eq!(v["query"], sql);
    let src = &v["clock_sources"][0];
    // Aggregate: 1 row, 1 loop; Seq Scan: 25,000 rows kept, 1 loop.
    assert_eq!(src["clock_reads_per_run"], 2 * (1 + 1) + 2 * (25_000 + 1), "{src}");
    assert!(src["noise"]["pairs"].as_u64().unwrap() >= 5, "{src}");
    let b = &v["query_breakdown"];
    let nodes = b["nodes"].as_array().unwrap();
    let scan = nodes
        .iter()
        .find(|n| n["node"] == "Seq Scan on cli_q_read")
        .unwrap_or_else(|| panic!("no scan in {b}"));
    assert_eq!(scan["rows_total"], 25_000);
    assert_eq!(scan["clock_reads"], 50_002);
    let added = b["added_ms"].as_f64().unwrap();
    let shared: f64 = nodes.iter().map(|n| n["added_ms"].as_f64().unwrap()).sum();
    assert!(
        (shared - added).abs() <= 1e-9 * added.abs().max(1.0),
        "{shared} vs {added}"
    );
    assert_eq!(b["auto_explain_log_timing_added_ms"], b["added_ms"]);
    assert_eq!(b["auto_explain_log_timing_slowdown"], src["slowdown"]);

    // The text form names the query, the costliest node and auto_explain.
    let out = query_as(READ_APP, sql, &["--max-time", "4", "--runs", "1"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for needle in [
        "Query:    SELECT count(*) FROM cli_q_read WHERE n % 2 = 0 (--query; each run in BEGIN READ ONLY",
        "  Seq Scan on cli_q_read",
        "auto_explain.log_timing = on",
        "95% interval of the median",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in\n{report}");
    }
    // Nothing left behind: no session, no open transaction.
    assert!(
        testing::wait_for(limit(Duration::from_secs(5)), || clockscope_sessions(
            &server, READ_APP, ""
        ) == 0),
        "a clockscope session is still there"
    );
}

#[test]
fn a_query_that_writes_is_refused_and_the_table_is_unchanged() {
    let server = testing::shared();
    server
        .sql(
            "CREATE TABLE cli_q_write (n int); INSERT INTO cli_q_write VALUES (1), (2), (3); CREATE SEQUENCE cli_q_seq",
        )
        .unwrap();
    for sql in [
        "DELETE FROM cli_q_write",
        "UPDATE cli_q_write SET n = n + 1",
        "INSERT INTO cli_q_write SELECT * FROM cli_q_write",
        "WITH d AS (DELETE FROM cli_q_write RETURNING n) SELECT count(*) FROM d",
        "SELECT nextval('cli_q_seq')",
        "SELECT n FROM cli_q_write FOR UPDATE",
    ] {
        // nextval is refused by name first (explain_promises.rs); allowed,
        // the server's READ ONLY still refuses it on an ordinary sequence.
        let allow: &[&str] = if sql.contains("nextval") {
            &["--allow-side-effects"]
        } else {
            &[]
        };
        let out = query(sql, allow);
        let err = assert_one_line_error(
            &out,
            "--query: the query writes, which this READ ONLY transaction refused",
        );
        assert!(
            err.contains("read-only transaction") && err.contains("(SQLSTATE 25006)"),
            "{sql}: {err}"
        );
    }
    // READ ONLY lets these create their table under EXPLAIN ANALYZE; the
    // transaction id they take gives them away, and ROLLBACK removes it.
    for sql in [
        "CREATE TABLE cli_q_copy AS SELECT * FROM cli_q_write",
        "SELECT * INTO cli_q_copy FROM cli_q_write",
    ] {
        let out = query(sql, &[]);
        assert_one_line_error(&out, "--query: the query writes (it took a transaction id");
    }
    assert_eq!(count_rows("cli_q_write"), 3);
    assert_eq!(count_rows("cli_q_write WHERE n IN (1, 2, 3)"), 3);
    let mut c = server.superuser_client().unwrap();
    let seq: bool = c.query_one("SELECT is_called FROM cli_q_seq", &[]).unwrap().get(0);
    assert!(!seq, "the sequence moved");
    let copy: bool = c
        .query_one("SELECT to_regclass('cli_q_copy') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!copy, "CREATE TABLE AS left a table");
}

#[test]
fn a_failing_query_is_one_line_with_the_servers_text_escaped() {
    let out = query("SELECT 1/0", &[]);
    let err = assert_one_line_error(&out, "--query: the server refused it: division by zero");
    assert!(err.ends_with("(SQLSTATE 22012)\n"), "{err}");
    // The server echoes the name; its control character comes out escaped.
    let out = query("SELECT * FROM \"no\u{1b}[2Jtable\"", &[]);
    let err = assert_one_line_error(&out, "--query: the server refused it: relation ");
    assert!(err.contains("no\\x1b[2Jtable") && !err.contains('\u{1b}'), "{err:?}");
    let out = query("SELECT 1 FRM x", &[]);
    assert_one_line_error(&out, "--query: the server refused it: syntax error");
    let out = query("  ;  ", &[]);
    assert_one_line_error(&out, "--query: is empty");
}

#[test]
fn several_statements_and_utility_statements_are_refused() {
    let server = testing::shared();
    server
        .sql("CREATE TABLE cli_q_multi (n int); INSERT INTO cli_q_multi VALUES (1), (2)")
        .unwrap();
    for sql in [
        "SELECT 1; SELECT 2",
        "SELECT 1; DELETE FROM cli_q_multi",
        "SELECT 1; COMMIT; DELETE FROM cli_q_multi",
    ] {
        let out = query(sql, &[]);
        assert_one_line_error(&out, "--query: several statements; give one statement");
    }
    assert_eq!(count_rows("cli_q_multi"), 2);
    for (sql, kind) in [
        ("CREATE TABLE cli_q_ddl (a int)", "CREATE"),
        ("DROP TABLE cli_q_multi", "DROP"),
        ("VACUUM cli_q_multi", "VACUUM"),
        ("-- a comment\nTRUNCATE cli_q_multi", "TRUNCATE"),
    ] {
        let out = query(sql, &[]);
        assert_one_line_error(
            &out,
            &format!("--query: EXPLAIN cannot run a {kind} statement (a utility statement or DDL)"),
        );
    }
    assert_eq!(count_rows("cli_q_multi"), 2);
    let mut c = server.superuser_client().unwrap();
    let made: bool = c
        .query_one("SELECT to_regclass('cli_q_ddl') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!made);
}

#[test]
fn max_time_bounds_the_runs_of_a_query() {
    // Pairs of 2 x 150 ms against a 1.5 s cap: the runs stop before it.
    let out = query(
        "SELECT pg_sleep(0.15)",
        &["--max-time", "1.5", "--runs", "20", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let src = &v["clock_sources"][0];
    assert_eq!(src["noise"]["stopped_by"], "max_time", "{src}");
    let pairs = src["noise"]["pairs"].as_u64().unwrap();
    assert!((1..20).contains(&pairs), "{pairs} pairs");
    let spent: f64 = ["runs_timing_off_ms", "runs_timing_on_ms"]
        .iter()
        .flat_map(|k| src[*k].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()))
        .sum();
    assert!(spent < 1500.0, "the pairs took {spent} ms of a 1.5 s cap");
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("--max-time ended the runs")),
        "{}",
        v["warnings"]
    );

    // One run longer than the cap: statement_timeout cancels it, one line.
    let start = Instant::now();
    let out = query("SELECT pg_sleep(20)", &["--max-time", "1"]);
    let err = assert_one_line_error(&out, "--max-time: a run of --query was cancelled by statement_timeout");
    assert!(err.contains("warm-up"), "{err}");
    assert!(
        start.elapsed() < limit(Duration::from_secs(15)),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn one_sigint_cancels_a_running_query_on_the_server() {
    let server = testing::shared();
    let dsn = server.socket_dsn(SUPERUSER, "postgres");
    let app = "clockscope_q_sleep";
    let child = explain_cmd(
        &["--dsn", &dsn, "--query", "SELECT pg_sleep(30) AS cli_q_sleep"],
        &[("PGAPPNAME", app.to_string())],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let sleeping = "AND query LIKE '%cli_q_sleep%' AND state = 'active'";
    let running = testing::wait_for(limit(Duration::from_secs(20)), || {
        clockscope_sessions(&server, app, sleeping) == 1
    });
    if running {
        signal(&child, libc::SIGINT);
    }
    let (out, took, exited) = wait_exit(child, limit(Duration::from_secs(10)));
    let err = text(&out.stderr);
    assert!(running, "the query never ran: {err}");
    assert!(exited, "one SIGINT did not stop the query");
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(took < limit(Duration::from_secs(2)), "took {took:?} after SIGINT");
    assert!(
        testing::wait_for(limit(Duration::from_secs(2)), || clockscope_sessions(
            &server, app, sleeping
        ) == 0),
        "the server still runs the query"
    );
}

#[test]
fn bad_max_time_and_query_options_fail_before_connecting() {
    // A DSN nobody answers: the errors come before any connection.
    let dsn = format!("host=127.0.0.1 port={} connect_timeout=1", dead_port());
    for (args, prefix) in [
        (
            vec!["--max-time", "0"],
            "invalid value '0' for '--max-time <DURATION>': '0' must be a positive duration",
        ),
        (
            vec!["--max-time", "-5"],
            "invalid value '-5' for '--max-time <DURATION>': '-5' must be a positive duration",
        ),
        (
            vec!["--max-time", "abc"],
            "invalid value 'abc' for '--max-time <DURATION>': 'abc' is not a duration",
        ),
        (
            vec!["--max-time", "2d"],
            "invalid value '2d' for '--max-time <DURATION>': '2d' has an unknown unit 'd'",
        ),
        (vec!["--query", ""], "--query: is empty"),
        (
            vec!["--query", "SELECT 1", "--rows", "5"],
            "the argument '--query <SQL>' cannot be used with '--rows <ROWS>'",
        ),
    ] {
        let mut all = vec!["--dsn", dsn.as_str()];
        all.extend(args);
        assert_one_line_error(&explain(&all, &[]), prefix);
    }
}
