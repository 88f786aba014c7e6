//! `clockscope explain` against a real PostgreSQL 19 server, opt-in: set
//! `CLOCKSCOPE_PG19` to a PostgreSQL 19 install (its `bin/` holds initdb,
//! postgres, pg_ctl; `scripts/pg19-server.sh` builds one), e.g.
//! `CLOCKSCOPE_PG19=/work/pg19/install`. Without it each test prints a skip
//! line on the real stderr (libtest's capture does not hide it) and passes.
//! CI cannot fetch PostgreSQL 19's source, so these are not part of
//! `.ci/run`; their measured numbers are in bench/README.md. Times are never
//! asserted (bench/explain_vs_server.sh shows the targets).

use clockscope::Control;
use clockscope_explain::testing::{TestServer, SUPERUSER};
use clockscope_explain::{Options, Report};
use std::path::PathBuf;

/// A role without superuser rights: it may not SET timing_clock_source.
const PLAIN_ROLE: &str = "clockscope_plain19";

/// The PostgreSQL 19 `bin/` named by `CLOCKSCOPE_PG19`, or a skip line on
/// stderr and `None`.
fn pg19_bin(test: &str) -> Option<PathBuf> {
    match std::env::var_os("CLOCKSCOPE_PG19") {
        Some(dir) => Some(PathBuf::from(dir).join("bin")),
        None => {
            // Opt-in: never a failure, not even under CLOCKSCOPE_REQUIRE_DEPS.
            skip!(optional: "{test}: set CLOCKSCOPE_PG19 to a PostgreSQL 19 install (e.g. /work/pg19/install)");
            None
        }
    }
}

fn small(dsn: String) -> Options {
    Options {
        rows: 100_000,
        runs: 6,
        clock_measure_ns: 30_000_000,
        ..Options::new(Some(dsn))
    }
}

fn run(opts: &Options) -> Report {
    clockscope_explain::run(opts, &mut |_| Control::Continue).unwrap()
}

fn text(r: &Report) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::explain::text::write(&mut out, r, clockscope_cli::commands::explain::text::Detail::Full)
        .unwrap();
    // Words, not lines: the text wraps at 100 columns.
    String::from_utf8(out)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn a_superuser_measures_both_clock_sources_with_their_own_models() {
    let Some(bin) = pg19_bin("a_superuser_measures_both_clock_sources_with_their_own_models") else {
        return;
    };
    let server = TestServer::start_from(&bin, "track_io_timing = on\n").unwrap();
    let handle = server.handle();
    let r = run(&small(handle.socket_dsn(SUPERUSER, "postgres")));
    assert!(r.server_version_num >= 190_000, "{}", r.server_version_num);
    let sources: Vec<&str> = r.clock_sources.iter().map(|s| s.clock_source.as_str()).collect();
    let tsc_usable = r.this_machine.rdtsc.is_some();
    if tsc_usable {
        assert_eq!(sources, ["system", "tsc"], "{:?}", r.skipped_clock_sources);
    } else {
        assert_eq!(sources[0], "system");
    }
    // Each source predicted by the model of PostgreSQL 19's instrumentation
    // with its own read: the system clock behind the branch, or RDTSC.
    let sys = &r.this_machine.system.executor_loop.as_ref().expect("the model ran");
    assert!(
        sys.instrumentation.starts_with("PostgreSQL 19:"),
        "{}",
        sys.instrumentation
    );
    assert!(sys.instrumentation.contains("clock_gettime"), "{}", sys.instrumentation);
    if let Some(rdtsc) = &r.this_machine.rdtsc {
        let e = rdtsc.executor_loop.as_ref().expect("the model ran");
        assert_eq!(e.clock, "RDTSC");
        assert!(e.instrumentation.contains("RDTSC behind the timing_tsc_enabled branch"));
        let tsc = &r.clock_sources[1];
        assert_eq!(tsc.predicted_clock.as_deref(), Some("RDTSC"));
        assert_eq!(tsc.predicted_per_read_ns, e.added_ns_per_read);
    }
    // The settings section shows what each measurement set.
    let setting = r.settings.iter().find(|s| s.name == "timing_clock_source").unwrap();
    if tsc_usable {
        assert_eq!(setting.session_value.as_deref(), Some("'system', then 'tsc'"));
        assert!(
            text(&r).contains("-> 'system', then 'tsc' for this session"),
            "{}",
            text(&r)
        );
    }
    assert!(r
        .settings
        .iter()
        .all(|s| s.session_value.as_deref() != Some(s.server_value.as_str())));
    // track_io_timing under the server's own setting: RDTSCP around each I/O
    // when it reads the TSC (auto (tsc)), the system clock otherwise.
    let io = r.timing_settings.io_read.as_ref().expect("I/O timing priced");
    let shown = r
        .timing_settings
        .settings
        .iter()
        .find(|s| s.name == "timing_clock_source")
        .map(|s| s.value.clone())
        .unwrap();
    if shown.contains("tsc") {
        assert_eq!(io.clock, "RDTSCP", "{shown}");
        assert_eq!(Some(io.ns), r.this_machine.rdtscp.as_ref().map(|c| c.read_cost_ns));
    } else {
        assert_eq!(io.clock, "clock_gettime (CLOCK_MONOTONIC)", "{shown}");
    }
}

#[test]
fn a_role_that_may_not_set_the_clock_source_is_measured_as_it_runs() {
    let Some(bin) = pg19_bin("a_role_that_may_not_set_the_clock_source_is_measured_as_it_runs") else {
        return;
    };
    let server = TestServer::start_from(&bin, "").unwrap();
    let handle = server.handle();
    handle.sql(&format!("CREATE ROLE {PLAIN_ROLE} LOGIN")).unwrap();
    let r = run(&small(handle.socket_dsn(PLAIN_ROLE, "postgres")));
    assert_eq!(r.clock_sources.len(), 1, "{:?}", r.clock_sources);
    let s = &r.clock_sources[0];
    assert!(s.clock_source.starts_with("auto ("), "{}", s.clock_source);
    assert!(s.how.contains("measured as the server runs"), "{}", s.how);
    // One line says why, for the source not measured.
    assert_eq!(r.skipped_clock_sources.len(), 1, "{:?}", r.skipped_clock_sources);
    let t = text(&r);
    assert_eq!(t.matches("may not SET timing_clock_source").count(), 1, "{t}");
    // Nothing set, nothing shown as set.
    let setting = r.settings.iter().find(|x| x.name == "timing_clock_source").unwrap();
    assert_eq!(setting.session_value, None);
}
