//! Against a real PostgreSQL (the newest /usr/lib/postgresql/*/bin, started
//! by `clockscope_explain::testing`): a small run, and the faults a user
//! meets. Timing values are only checked for sanity (positive, finite).

use crate::common;
use clockscope::Control;
use clockscope_explain::testing::{self, PASSWORD, PASSWORD_ROLE, SUPERUSER};
use clockscope_explain::{Error, Options};
use common::time_limit::limit;

/// 100,000 rows, at least 2 pairs within 3 s, clocks measured for 20 ms: a
/// fast run.
fn small(dsn: String) -> Options {
    Options {
        rows: 100_000,
        runs: 2,
        clock_measure_ns: 20_000_000,
        max_time: std::time::Duration::from_secs(3),
        ..Options::new(Some(dsn))
    }
}

use common::shared_server_lock as table_lock;

fn run(opts: &Options) -> Result<clockscope_explain::Report, Error> {
    let _table = table_lock();
    run_locked(opts)
}

/// [`run`] for a test that already holds [`table_lock`].
fn run_locked(opts: &Options) -> Result<clockscope_explain::Report, Error> {
    clockscope_explain::run(opts, &mut |_| Control::Continue)
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn count(server: &testing::ServerHandle, sql: &str) -> i64 {
    let mut c = server.superuser_client().unwrap();
    c.query_one(sql, &[]).unwrap().get(0)
}

/// Relations outside temporary schemas: what a run must not add to.
const PERMANENT_RELATIONS: &str = "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
     WHERE n.nspname NOT LIKE 'pg_temp%' AND n.nspname NOT LIKE 'pg_toast_temp%'";

#[test]
fn a_small_run_over_the_unix_socket() {
    let server = testing::shared();
    // Held from the first count to the last: no other test adds relations
    // or runs explain on the shared server meanwhile.
    let _table = table_lock();
    let before = count(&server, PERMANENT_RELATIONS);
    let cpus_before = clockscope_system::crosscpu::affinity::allowed_cpus().unwrap();
    let r = run_locked(&small(server.socket_dsn(SUPERUSER, "postgres"))).unwrap();
    // The model's slices ran on this thread pinned to the backend's CPU,
    // each time putting the thread's mask back.
    assert_eq!(
        clockscope_system::crosscpu::affinity::allowed_cpus().unwrap(),
        cpus_before
    );

    assert!(r.server_version_num >= 150_000, "{}", r.server_version_num);
    assert!(r
        .server_version
        .starts_with(&(r.server_version_num / 10_000).to_string()));
    assert!(r.server_locality.is_local());
    assert_eq!(r.clock_sources.len(), 1, "PostgreSQL before 19 has one clock");
    let s = &r.clock_sources[0];
    assert_eq!(s.clock_source, "system");
    // --runs 2 is the minimum; then the noise control or --max-time decides.
    assert!(s.runs_timing_off_ms.len() >= 2, "{:?}", s.runs_timing_off_ms);
    assert_eq!(s.runs_timing_on_ms.len(), s.runs_timing_off_ms.len());
    assert_eq!(s.noise.pairs, s.runs_timing_on_ms.len());
    assert!(s
        .runs_timing_off_ms
        .iter()
        .chain(&s.runs_timing_on_ms)
        .all(|&v| positive(v)));
    assert!(positive(s.timing_off_ms) && positive(s.timing_on_ms) && positive(s.slowdown));
    assert!(s.overhead_per_row_ns.is_finite());
    assert!(s.overhead_per_read_ns.is_finite());
    assert_eq!(s.clock_reads_per_run, 2 * 100_000 + 6);
    assert!(positive(s.predicted_per_read_ns.unwrap()));
    assert!(positive(s.predicted_overhead_per_row_ns.unwrap()));
    assert!(s.observed_over_predicted.unwrap().is_finite());
    assert!(positive(r.this_machine.system.per_read_ns));
    // The model's slices ran on the CPU of this session's backend (a real
    // process here).
    let model = r.this_machine.system.executor_loop.as_ref().expect("the model ran");
    assert!(!model.cpus.is_empty(), "{}", model.sampling);
    assert!(model.cpus.iter().all(|c| c.used && c.pairs > 0));
    assert!(
        model
            .sampling
            .contains("pinned to the CPU the server's backend last ran on"),
        "{}",
        model.sampling
    );
    assert!(r.warnings.iter().all(|w| !w.contains("not pinned")), "{:?}", r.warnings);
    // Issue 32: the TSC's model ran beside the system clock's (PostgreSQL 15
    // reads the system clock; the prediction is for 19), and no warning
    // says a model "did not run" or speaks of PostgreSQL 19 as if this were it.
    if let Some(rdtsc) = &r.this_machine.rdtsc {
        let tsc = rdtsc.executor_loop.as_ref().expect("the TSC's model ran in slices");
        assert!(tsc.sampling.contains("slices"), "{}", tsc.sampling);
        if tsc.resolved {
            let t = r.tsc_prediction.as_ref().expect("a TSC prediction on PostgreSQL 15");
            assert!(
                t.used_by.contains("reads the system clock for EXPLAIN"),
                "{}",
                t.used_by
            );
        }
    }
    assert!(
        r.warnings
            .iter()
            .all(|w| !w.contains("did not run") && !w.contains("PostgreSQL 19's TSC")),
        "{:?}",
        r.warnings
    );
    // The order and the control are reported.
    assert!(r.order.contains("alternate OFF-ON and ON-OFF"), "{}", r.order);
    assert_eq!(s.control.runs_a_ms.len(), s.control.pairs);

    // The session turned parallel query and JIT off and said so.
    let jit = r.settings.iter().find(|s| s.name == "jit").expect("jit is shown");
    assert_eq!(jit.session_value.as_deref(), Some("off"));
    let par = r
        .settings
        .iter()
        .find(|s| s.name == "max_parallel_workers_per_gather")
        .unwrap();
    assert_eq!(par.session_value.as_deref(), Some("0"));
    for name in ["track_io_timing", "shared_buffers", "work_mem"] {
        assert!(r.settings.iter().any(|s| s.name == name), "{name} not shown");
    }

    // Nothing left behind.
    assert_eq!(count(&server, PERMANENT_RELATIONS), before);
    assert_eq!(
        count(
            &server,
            "SELECT count(*) FROM pg_class WHERE relname LIKE 'clockscope_explain%'"
        ),
        0
    );
}

#[test]
fn loopback_tcp_is_local() {
    let server = testing::shared();
    let r = run(&small(server.tcp_dsn(SUPERUSER, "postgres"))).unwrap();
    assert_eq!(r.server_locality, clockscope_explain::connect::Locality::Loopback);
    assert!(
        r.warnings.iter().all(|w| !w.contains("not on this machine")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn the_temp_table_is_dropped_by_the_session() {
    use clockscope_explain::connect::resolve;
    use clockscope_explain::session::PgSession;
    let server = testing::shared();
    let _table = table_lock();
    let target = resolve(Some(&server.socket_dsn(SUPERUSER, "postgres")), &|_| None).unwrap();
    let mut session = PgSession::connect(&target, std::sync::Arc::new(|| false)).unwrap();
    session.create_table(1_000).unwrap();
    let name = format!("clockscope_explain_{}", std::process::id());
    let exists = format!("SELECT count(*) FROM pg_class WHERE relname = '{name}'");
    assert_eq!(count(&server, &exists), 1);
    session.drop_table().unwrap();
    assert_eq!(count(&server, &exists), 0);
}

#[test]
fn wrong_password_is_a_one_line_error_with_sqlstate() {
    let server = testing::shared();
    let mut o = small(format!(
        "{} password=wrong-password",
        server.socket_dsn(PASSWORD_ROLE, "postgres")
    ));
    let err = run(&o).unwrap_err();
    assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    assert_eq!(err.sqlstate(), Some("28P01"), "{err}");
    let text = err.to_string();
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains('\n') && !text.contains("wrong-password"), "{text}");

    // The right one works (over TCP, where the same scram rule applies).
    o.dsn = Some(format!(
        "{} password={PASSWORD}",
        server.tcp_dsn(PASSWORD_ROLE, "postgres")
    ));
    o.rows = 1_000;
    run(&o).unwrap();
}

#[test]
fn a_role_without_temp_rights_is_refused_at_the_temp_table() {
    let server = testing::shared();
    // One statement per call: CREATE DATABASE may not run in a transaction block.
    for sql in [
        "CREATE DATABASE notemp",
        "REVOKE TEMP ON DATABASE notemp FROM PUBLIC",
        "CREATE ROLE notemp_user LOGIN",
    ] {
        server.sql(sql).unwrap();
    }
    // Asked for the table (the default, auto, falls back to generate_series:
    // tests/all/read_only.rs).
    let opts = Options {
        workload: clockscope_explain::options::Workload::Table,
        ..small(server.socket_dsn("notemp_user", "notemp"))
    };
    let err = run(&opts).unwrap_err();
    assert_eq!(err.sqlstate(), Some("42501"), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("creating the TEMP table: permission denied"), "{text}");
    assert!(!text.contains('\n'));
}

#[test]
fn an_unreachable_port_is_a_connect_error() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = run(&small(format!("host=127.0.0.1 port={port} user=x dbname=x"))).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("cannot connect to PostgreSQL at host=127.0.0.1 port={port}")),
        "{text}"
    );
    assert!(!text.contains('\n'));
    assert_eq!(err.sqlstate(), None);
}

#[test]
fn a_stopped_server_is_a_connect_error() {
    let mut server = testing::TestServer::start().unwrap();
    let dsn = server.handle().socket_dsn(SUPERUSER, "postgres");
    server.stop().unwrap();
    let err = run(&small(dsn)).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("cannot connect to PostgreSQL at host="), "{text}");
    assert!(!text.contains('\n'));
}

#[test]
fn statement_timeout_is_set_for_the_session() {
    use clockscope_explain::connect::resolve;
    use clockscope_explain::session::{statement_timeout_for, PgSession};
    let server = testing::shared();
    let target = resolve(Some(&server.socket_dsn(SUPERUSER, "postgres")), &|_| None).unwrap();
    let mut session = PgSession::connect(&target, std::sync::Arc::new(|| false)).unwrap();
    assert_eq!(session.raw_setting("statement_timeout").unwrap(), "0");
    let mut info = session.server_info().unwrap();
    session.prepare(&mut info, 100_000).unwrap();
    // 30 s + 20 us x 100,000 rows, in ms as pg_settings counts it.
    assert_eq!(statement_timeout_for(100_000).as_millis(), 32_000);
    assert_eq!(session.raw_setting("statement_timeout").unwrap(), "32000");
    let shown = info.setting("statement_timeout").unwrap();
    assert_eq!(shown.server_value, "0");
    assert_eq!(shown.session_value.as_deref(), Some("32s"));
    assert!(
        shown.why.as_deref().unwrap().contains("30 s + 20 us per row"),
        "{shown:?}"
    );
    // PostgreSQL 14+ on Linux also checks for a vanished client.
    assert_eq!(session.raw_setting("client_connection_check_interval").unwrap(), "1000");
}

#[test]
fn a_stop_during_the_fill_cancels_it_and_leaves_nothing() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    let server = testing::shared();
    let _table = table_lock();
    // Its own application_name: other tests share this server.
    let app = "clockscope_lib_stop";
    let sessions = |filter: &str| {
        count(
            &server,
            &format!("SELECT count(*) FROM pg_stat_activity WHERE application_name = '{app}' {filter}"),
        )
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stopped_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let opts = Options {
        rows: 20_000_000,
        runs: 1,
        clock_measure_ns: 20_000_000,
        ..Options::new(Some(format!(
            "{} application_name={app}",
            server.socket_dsn(SUPERUSER, "postgres")
        )))
    };
    let (flag, when) = (Arc::clone(&stop), Arc::clone(&stopped_at));
    let run = std::thread::spawn(move || {
        let mut connected = false;
        let mut on_connected = |_| connected = true;
        let result = clockscope_explain::run_with(
            &opts,
            &mut |_| Control::Continue,
            clockscope_explain::Interruption {
                requested: Arc::new(move || flag.load(Ordering::SeqCst)),
                on_connected: &mut on_connected,
            },
        );
        (result.map(|_| ()), connected, Instant::now())
    });
    let filling = "AND state = 'active' AND query LIKE 'INSERT INTO%'";
    // The handshake: the server shows the fill active; the stop comes now.
    let started = testing::wait_for(limit(Duration::from_secs(60)), || sessions(filling) > 0);
    let still_filling = sessions(filling) > 0;
    *when.lock().unwrap() = Some(Instant::now());
    stop.store(true, Ordering::SeqCst);
    let (result, connected, returned) = run.join().unwrap();
    assert!(started && still_filling, "the fill was not running when stopped");
    assert!(connected, "on_connected was not called");
    assert!(matches!(result, Err(Error::Interrupted)), "{result:?}");
    let took = returned - stopped_at.lock().unwrap().unwrap();
    assert!(took < limit(Duration::from_secs(2)), "returned {took:?} after the stop");
    assert!(
        testing::wait_for(limit(Duration::from_secs(3)), || sessions("") == 0),
        "the session is still in pg_stat_activity"
    );
    // (Its TEMP table went with the session; other tests of this binary may
    // hold tables of the same name, so pg_class is checked in the CLI test.)
}
