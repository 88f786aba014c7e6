//! Servers where no TEMP table can be made, against a real PostgreSQL: a
//! read-only role (default_transaction_read_only), a role without TEMP on
//! its database, and a streaming hot standby built from a test primary. `--workload auto` falls back to generate_series and says
//! why; `--workload table` fails in one line; nothing is left on the server.

use clockscope::Control;
use clockscope_explain::options::Workload;
use clockscope_explain::testing::{self, SUPERUSER};
use clockscope_explain::{Error, Options};

fn opts(dsn: String, workload: Workload) -> Options {
    Options {
        rows: 20_000,
        runs: 1,
        clock_measure_ns: 10_000_000,
        workload,
        ..Options::new(Some(dsn))
    }
}

fn run(opts: &Options) -> Result<clockscope_explain::Report, Error> {
    let _server = crate::common::shared_server_lock();
    clockscope_explain::run(opts, &mut |_| Control::Continue)
}

/// Roles made once per test binary (the server is shared).
fn roles(server: &testing::ServerHandle) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sql in [
            "CREATE ROLE clockscope_ro LOGIN",
            "ALTER ROLE clockscope_ro SET default_transaction_read_only = on",
            "CREATE ROLE clockscope_notemp LOGIN",
            "CREATE DATABASE clockscope_notemp_db",
            "REVOKE TEMP ON DATABASE clockscope_notemp_db FROM PUBLIC",
        ] {
            server.sql(sql).unwrap();
        }
    });
}

/// clockscope's TEMP tables owned by `role`: only this test's own objects,
/// since tests running beside it on the shared server create theirs (named
/// by the same process id) as other roles.
fn temp_tables(server: &testing::ServerHandle, role: &str) -> i64 {
    let mut c = server.superuser_client().unwrap();
    c.query_one(
        "SELECT count(*) FROM pg_class WHERE relname LIKE 'clockscope_explain_%' \
         AND relowner = (SELECT oid FROM pg_roles WHERE rolname = $1)",
        &[&role],
    )
    .unwrap()
    .get(0)
}

#[test]
fn a_read_only_role_gets_generate_series_and_is_told_why() {
    let server = testing::shared();
    roles(&server);
    let r = run(&opts(server.socket_dsn("clockscope_ro", "postgres"), Workload::Auto)).unwrap();
    assert_eq!(r.workload, Workload::Series);
    assert_eq!(r.query, "SELECT count(*) FROM pg_catalog.generate_series(1, 20000)");
    let why = r.workload_reason.as_deref().unwrap();
    assert!(why.contains("read-only"), "{why}");
    let s = &r.clock_sources[0];
    assert!(s.timing_on_ms.is_finite() && s.timing_on_ms > 0.0);
    assert_eq!(
        s.clock_reads_per_run,
        2 * 20_000 + 6,
        "the same reads per row as the table"
    );
    assert_eq!(temp_tables(&server, "clockscope_ro"), 0);
}

#[test]
fn a_role_without_temp_privilege_gets_generate_series() {
    let server = testing::shared();
    roles(&server);
    let r = run(&opts(
        server.socket_dsn("clockscope_notemp", "clockscope_notemp_db"),
        Workload::Auto,
    ))
    .unwrap();
    assert_eq!(r.workload, Workload::Series);
    assert!(r.workload_reason.as_deref().unwrap().contains("no TEMP privilege"));
}

#[test]
fn workload_table_on_a_read_only_session_fails_in_one_line() {
    let server = testing::shared();
    roles(&server);
    let e = run(&opts(server.socket_dsn("clockscope_ro", "postgres"), Workload::Table)).unwrap_err();
    assert_eq!(e.sqlstate(), Some("25006"), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with("creating the TEMP table: cannot execute CREATE TABLE in a read-only transaction"),
        "{text}"
    );
    assert!(!text.contains('\n'));
    assert_eq!(temp_tables(&server, "clockscope_ro"), 0);
}

#[test]
fn workload_series_and_table_when_asked() {
    let server = testing::shared();
    let r = run(&opts(server.socket_dsn(SUPERUSER, "postgres"), Workload::Series)).unwrap();
    assert_eq!(r.workload, Workload::Series);
    assert!(r.workload_reason.is_none());
    let r = run(&opts(server.socket_dsn(SUPERUSER, "postgres"), Workload::Auto)).unwrap();
    assert_eq!(r.workload, Workload::Table);
    assert!(r.query.starts_with("SELECT count(*) FROM pg_temp."), "{}", r.query);
}

#[test]
fn a_streaming_hot_standby_gets_generate_series() {
    // Its own primary, so the standby is stopped before it (both on drop).
    let primary = testing::TestServer::start().unwrap();
    let standby = primary.start_standby().unwrap_or_else(|e| panic!("standby: {e}"));
    let dsn = standby.handle().socket_dsn(SUPERUSER, "postgres");
    let r = run(&opts(dsn.clone(), Workload::Auto)).unwrap();
    assert_eq!(r.workload, Workload::Series);
    assert!(
        r.workload_reason.as_deref().unwrap().contains("hot standby"),
        "{:?}",
        r.workload_reason
    );
    let e = run(&opts(dsn, Workload::Table)).unwrap_err();
    assert_eq!(e.sqlstate(), Some("25006"), "{e}");
    drop(standby);
    drop(primary);
}
