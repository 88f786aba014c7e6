//! `--query`'s side effects reached by routes its text does not spell,
//! against a real PostgreSQL 15 with contrib's dblink: a user-defined
//! operator, a domain's CHECK constraint, a cast, a column default and a
//! trigger, each of whose functions calls `dblink_exec` (another session,
//! which commits on its own). Each is refused in one line naming the route,
//! before anything is planned: the operator's and the default's functions
//! are IMMUTABLE, so planning alone (EXPLAIN folds constants) would run
//! them. A function reached by attribute notation (`row.f`) too. Nothing
//! reaches the other session's table. A function that only computes, a
//! column named like a function, and a plain query, still run.

use clockscope::Control;
use clockscope_explain::testing::{self, SUPERUSER};
use clockscope_explain::{Error, Options};
use std::time::Duration;

const DBLINK_CONTROL: &str = "/usr/share/postgresql/15/extension/dblink.control";

fn run(sql: &str) -> Result<clockscope_explain::Report, Error> {
    let server = testing::shared();
    let opts = Options {
        rows: 1000,
        runs: 1,
        clock_measure_ns: 10_000_000,
        query: Some(sql.to_string()),
        max_time: Duration::from_secs(5),
        ..Options::new(Some(server.socket_dsn(SUPERUSER, "postgres")))
    };
    let _server = crate::common::shared_server_lock();
    clockscope_explain::run(&opts, &mut |_| Control::Continue)
}

fn count() -> i64 {
    let mut c = testing::shared().superuser_client().unwrap();
    c.query_one("SELECT count(*) FROM ser_log", &[]).unwrap().get(0)
}

/// A PL/pgSQL body that writes `route` into ser_log through dblink, then
/// returns `ret`.
fn body(conn: &str, route: &str, ret: &str) -> String {
    format!(
        "LANGUAGE plpgsql AS $f$ BEGIN PERFORM dblink_exec('{conn}', 'INSERT INTO ser_log VALUES (''{route}'')'); \
         RETURN {ret}; END $f$"
    )
}

/// The objects of every route, each function writing through dblink.
fn create_routes(server: &testing::ServerHandle, conn: &str) {
    let _server = crate::common::shared_server_lock();
    let setup = [
        "CREATE EXTENSION IF NOT EXISTS dblink".to_string(),
        "CREATE TABLE ser_log (route text)".to_string(),
        format!(
            "CREATE FUNCTION ser_op(int, int) RETURNS int IMMUTABLE {}",
            body(conn, "operator", "$1 + $2")
        ),
        "CREATE OPERATOR ### (LEFTARG = int, RIGHTARG = int, FUNCTION = ser_op)".to_string(),
        format!(
            "CREATE FUNCTION ser_chk(int) RETURNS bool {}",
            body(conn, "domain", "true")
        ),
        "CREATE DOMAIN ser_dom AS int CHECK (ser_chk(VALUE))".to_string(),
        "CREATE TYPE ser_pair AS (a int)".to_string(),
        format!(
            "CREATE FUNCTION ser_cast(int) RETURNS ser_pair {}",
            body(conn, "cast", "ROW($1)::ser_pair")
        ),
        "CREATE CAST (int AS ser_pair) WITH FUNCTION ser_cast(int)".to_string(),
        format!(
            "CREATE FUNCTION ser_def() RETURNS int IMMUTABLE {}",
            body(conn, "default", "1")
        ),
        "CREATE TABLE ser_def_t (n int DEFAULT ser_def())".to_string(),
        format!(
            "CREATE FUNCTION ser_trig() RETURNS trigger {}",
            body(conn, "trigger", "NEW")
        ),
        "CREATE TABLE ser_trig_t (n int)".to_string(),
        "CREATE TRIGGER ser_trig BEFORE INSERT ON ser_trig_t FOR EACH ROW EXECUTE FUNCTION ser_trig()".to_string(),
        "CREATE FUNCTION ser_safe(int) RETURNS int LANGUAGE plpgsql AS $f$ BEGIN RETURN $1 * 2; END $f$".to_string(),
        // The issue's domain variant left a replication slot behind.
        "CREATE FUNCTION ser_slot(int) RETURNS bool LANGUAGE plpgsql AS $f$ BEGIN \
         PERFORM pg_create_physical_replication_slot('ser_slot'); RETURN true; END $f$"
            .to_string(),
        "CREATE DOMAIN ser_slot_dom AS int CHECK (ser_slot(VALUE))".to_string(),
        "CREATE TABLE ser_rows (dblink_exec int)".to_string(),
        "INSERT INTO ser_rows VALUES (1)".to_string(),
        format!(
            "CREATE FUNCTION ser_attr(ser_rows) RETURNS int {}",
            body(conn, "attribute", "1")
        ),
    ];
    for sql in &setup {
        server.sql(sql).unwrap();
    }
}

#[test]
fn every_route_to_dblink_is_refused_before_planning() {
    if !std::path::Path::new(DBLINK_CONTROL).exists() {
        return skip!("{DBLINK_CONTROL} is missing (Debian's postgresql-15 ships contrib's dblink)");
    }
    let server = testing::shared();
    let conn = server.socket_dsn(SUPERUSER, "postgres");
    create_routes(&server, &conn);
    for (sql, route) in [
        (
            "SELECT 1 ### 2",
            "through operator ###(integer,integer) -> function ser_op(integer,integer)",
        ),
        ("SELECT 1::ser_dom", "through type ser_dom -> function ser_chk(integer)"),
        (
            "SELECT (1::ser_pair).a",
            "through type ser_pair -> function ser_cast(integer)",
        ),
        (
            "INSERT INTO ser_def_t DEFAULT VALUES",
            "through relation ser_def_t -> function ser_def()",
        ),
        (
            "INSERT INTO ser_trig_t VALUES (1)",
            "through relation ser_trig_t -> function ser_trig()",
        ),
        // Attribute notation: r.ser_attr is ser_attr(r).
        (
            "SELECT r.ser_attr FROM ser_rows r",
            "through function ser_attr(ser_rows)",
        ),
    ] {
        let e = match run(sql) {
            Ok(_) => panic!("{sql}: ran; the other session's table has {} rows", count()),
            Err(e) => e.to_string(),
        };
        assert!(
            e.starts_with("--query: reaches dblink_exec() (runs SQL in another session"),
            "{sql}: {e}"
        );
        assert!(e.contains(route), "{sql}: {e}");
        assert!(e.contains("pass --allow-side-effects"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        assert_eq!(count(), 0, "{sql}: a refused query wrote through dblink");
    }
    let e = run("SELECT 1::ser_slot_dom").unwrap_err().to_string();
    assert!(
        e.starts_with("--query: reaches pg_create_physical_replication_slot() (replication slots")
            && e.contains("through type ser_slot_dom -> function ser_slot(integer)"),
        "{e}"
    );
    let mut c = server.superuser_client().unwrap();
    let slots: i64 = c
        .query_one("SELECT count(*) FROM pg_replication_slots", &[])
        .unwrap()
        .get(0);
    assert_eq!(slots, 0, "a refused query left a replication slot");
    // A built-in escape in attribute notation: (1::bigint).pg_advisory_lock
    // is pg_advisory_lock(1), a session-level lock ROLLBACK does not free.
    let e = run("SELECT (1::bigint).pg_advisory_lock").unwrap_err().to_string();
    assert!(
        e.starts_with("--query: reaches pg_advisory_lock() (a session-level"),
        "{e}"
    );
    // What only computes still runs, and a word that is no call (a column
    // named like a function) is not followed as one.
    for sql in [
        "SELECT dblink_exec FROM ser_rows",
        "SELECT ser_safe(n) FROM generate_series(1, 100) n",
        "SELECT count(*) FROM generate_series(1, 100) n WHERE n IN (1, 2) AND n::text LIKE '1%'",
    ] {
        run(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    assert_eq!(count(), 0);
}
