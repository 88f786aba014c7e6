//! `clockscope explain` end to end: the real binary against a real
//! PostgreSQL started by `clockscope_explain::testing` (one shared server per
//! test binary; tests that stop a server start their own). Times are only
//! checked for sanity.

use clockscope_explain::testing::{self, TestServer, PASSWORD_ROLE, SUPERUSER};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const PG_VARS: [&str; 9] = [
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGDATABASE",
    "PGPASSWORD",
    "PGSSLMODE",
    "PGCONNECT_TIMEOUT",
    "PGSERVICE",
];

/// `clockscope explain <args>` with the PG* variables cleared, then `env` set.
fn explain_cmd(args: &[&str], env: &[(&str, String)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clockscope"));
    cmd.arg("explain").args(args);
    for v in PG_VARS {
        cmd.env_remove(v);
    }
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
    for key in ["runs_timing_off_ms", "runs_timing_on_ms"] {
        assert_eq!(src[key].as_array().map(Vec::len), Some(2), "{key} in {src}");
    }
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
        ("abc", "--rows: 'abc' is not a whole number of rows"),
    ] {
        let out = explain(&["--dsn", &dsn, "--rows", rows], &[]);
        let err = assert_one_line_error(&out, "--rows: ");
        assert_eq!(err.trim_end(), format!("clockscope: error: {message}"), "--rows {rows}");
    }
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
    let mut child = explain_cmd(&["--dsn", &dsn, "--rows", "100000", "--runs", "1000"], &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut monitor = handle.superuser_client().unwrap();
    let explaining = testing::wait_for(Duration::from_secs(60), || {
        monitor
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'clockscope explain' \
                 AND query LIKE 'EXPLAIN%'",
                &[],
            )
            .map(|r| r.get::<_, i64>(0) > 0)
            .unwrap_or(false)
    });
    drop(monitor);
    server.stop().unwrap();
    // Never leave the child behind, even if it hangs.
    let exited = testing::wait_for(Duration::from_secs(30), || {
        child.try_wait().map(|s| s.is_some()).unwrap_or(true)
    });
    if !exited {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    assert!(explaining, "the runs never started: {}", text(&out.stderr));
    assert!(exited, "clockscope did not exit after the server stopped");
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
    let out = explain(&["--dsn", &dsn, "--rows", "1000"], &[]);
    let err = assert_one_line_error(&out, "creating the TEMP table: permission denied");
    assert!(err.contains("(SQLSTATE 42501)"), "{err}");
}
