//! clockscope-explain: what EXPLAIN ANALYZE's per-node timing costs on a real
//! PostgreSQL server, next to what this machine's clock cost predicts.
//!
//! # What is measured
//! In a TEMP table of `rows` int4 rows (from generate_series), with parallel
//! query and JIT off for the session, `EXPLAIN (ANALYZE, TIMING OFF, FORMAT
//! JSON)` and `EXPLAIN (ANALYZE, TIMING ON, FORMAT JSON)` of `SELECT count(*)`
//! run alternately, `runs` times each after a warm-up; "Execution Time" is
//! read from each plan. The difference is the cost of the clock reads node
//! timing makes, counted from the plan ([`plan`] documents the formula from
//! PostgreSQL's instrument.c).
//!
//! With `--query SQL` the user's statement runs instead, each run inside
//! `BEGIN READ ONLY ... ROLLBACK` (a write is refused by the server), and
//! the report adds the per-node breakdown ([`nodes`]). Either way the pairs
//! go on until the median slowdown is known within +-5% (95%) or
//! `--max-time` ([`measure`]).
//!
//! # What is predicted
//! pg_test_timing's loop on this machine's clocks ([`clockcost`]) gives a
//! cost per read; times the reads per row, that predicts the overhead per
//! row, and observed/predicted says how much the executor adds around each
//! read. On PostgreSQL 19 both `timing_clock_source` values are measured when
//! the role may set them; for older servers the TSC's effect is predicted.
//!
//! # Layout
//! - [`options`]: rows/runs and their limits, checked before connecting.
//! - [`connect`]: libpq-style DSN and PG* variables; is the server local?
//! - [`session`]: the PostgreSQL session (settings, TEMP table, EXPLAIN),
//!   every wait bounded by a deadline and stoppable (cancel request, cleanup).
//! - [`measure`]: the alternating runs per clock source, over a trait so
//!   tests replay recorded plans.
//! - [`plan`]: EXPLAIN JSON parsing and the clock-read count.
//! - [`stats`]: medians, the paired slowdowns' 95% interval, the stopping rule.
//! - [`contention`]: other work on this machine during the runs (/proc/stat).
//! - [`nodes`]: `--query`'s per-node breakdown.
//! - [`clockcost`]: this machine's per-read costs.
//! - [`timing_settings`]: the server's own timing settings, priced and judged.
//! - [`report`]: the arithmetic, text and JSON.
//! - `testing` (feature `testing`): a throw-away PostgreSQL server for tests.

// No unsafe code in the library; the test-support module (feature `testing`)
// alone calls libc (geteuid, atexit), each call with its SAFETY comment.
#![cfg_attr(not(feature = "testing"), forbid(unsafe_code))]
#![cfg_attr(feature = "testing", deny(unsafe_code))]

pub mod clockcost;
pub mod connect;
pub mod contention;
pub mod error;
pub mod measure;
pub mod nodes;
pub mod options;
pub mod pgfiles;
pub mod plan;
pub mod report;
pub mod session;
pub mod stats;
#[cfg(feature = "testing")]
#[allow(unsafe_code)]
pub mod testing;
pub mod timing_settings;
pub mod tls;

pub use error::Error;
pub use measure::Step;
pub use options::{parse_rows, Options};
pub use report::Report;

use clockscope::Control;

/// Passes over the file of the page-cache reference read
/// ([`timing_settings::measure_page_cache_read`]): 2,560 reads, a few ms.
pub const PAGE_READ_ROUNDS: usize = 10;

/// How the caller stops a run from outside (Ctrl-C, SIGTERM).
pub struct Interruption<'a> {
    /// Polled between steps and every few ms while waiting on the server:
    /// true stops the run (the running statement is cancelled, the TEMP
    /// table dropped, what was measured kept).
    pub requested: session::StopCheck,
    /// Given the session's cancel request once connected, for a caller that
    /// may have to exit at once (a second Ctrl-C) and should send it first.
    pub on_connected: &'a mut dyn FnMut(session::CancelRequest),
}

/// Connects as `opts.dsn` (or the PG* variables) says, measures, and builds
/// the report. `observer` sees every step and may stop the runs: the report
/// then holds what was measured and `interrupted` is set.
pub fn run(opts: &Options, observer: &mut dyn FnMut(&Step) -> Control) -> Result<Report, Error> {
    run_with(
        opts,
        observer,
        Interruption {
            requested: std::sync::Arc::new(|| false),
            on_connected: &mut |_| {},
        },
    )
}

/// [`run`], stoppable while it waits on the server too.
pub fn run_with(
    opts: &Options,
    observer: &mut dyn FnMut(&Step) -> Control,
    interruption: Interruption,
) -> Result<Report, Error> {
    opts.validate()?;
    let target = connect::resolve_from_env(opts.dsn.as_deref())?;
    let stop = interruption.requested;
    let mut session = session::PgSession::connect(&target, std::sync::Arc::clone(&stop))?;
    (interruption.on_connected)(session.cancel_request());
    let mut info = session.server_info()?;
    // Read before the session changes anything (it never changes these).
    let server_timing = session.timing_settings()?;
    // The server's page size, before anything is created.
    if opts.workload != options::Workload::Series {
        opts.check_table_size(info.block_size)?;
    }
    if let Some(sql) = &opts.query {
        session.use_query(sql, opts.max_time);
    }
    session.prepare(&mut info, opts.rows)?;
    let mut auto_explain_warning = None;
    if let Some(min_duration) = timing_settings::auto_explain_on(&server_timing) {
        if !session.turn_off_auto_explain(&mut info, min_duration)? {
            auto_explain_warning = Some(format!(
                "auto_explain is on (log_min_duration = {min_duration}) and this role may not turn it off for its \
                 session (superuser only): it instrumented and logged the measured statements too, so with \
                 log_analyze and log_timing on the TIMING OFF runs were timed as well and the overhead is understated"
            ));
        }
    }
    let clock_setting =
        measure::has_clock_source_setting(info.version_num, info.setting("timing_clock_source").is_some());

    let mut stopped_observer = |step: &Step| {
        if stop() {
            Control::Stop
        } else {
            observer(step)
        }
    };
    // The workload: a TEMP table, or generate_series where none can be made.
    let mut workload = opts.workload;
    let mut workload_reason = None;
    if opts.query.is_some() {
        workload = options::Workload::Query;
    } else if workload == options::Workload::Auto {
        if let Some(why) = session.temp_table_blocker()? {
            workload = options::Workload::Series;
            workload_reason = Some(format!("no TEMP table: {why}"));
        }
    }
    let prepared = match workload {
        options::Workload::Query => Ok(()),
        options::Workload::Series => session.use_series(opts.rows),
        _ => match session.create_table(opts.rows) {
            Err(e)
                if opts.workload == options::Workload::Auto
                    && matches!(
                        e.sqlstate(),
                        Some(session::READ_ONLY_TRANSACTION | session::INSUFFICIENT_PRIVILEGE)
                    ) =>
            {
                workload = options::Workload::Series;
                workload_reason = Some(format!("no TEMP table: {e}"));
                session.use_series(opts.rows)
            }
            other => {
                workload = options::Workload::Table;
                other
            }
        },
    };
    let local = target.locality.is_local();
    let cpu_before = local
        .then(|| contention::CpuSample::read(std::path::Path::new("/")))
        .flatten();
    let measured =
        prepared.and_then(|()| measure::run_sources(&mut session, clock_setting, opts, &mut stopped_observer));
    let cpu_after = cpu_before.and_then(|_| contention::CpuSample::read(std::path::Path::new("/")));
    // Drop the table whatever happened (a broken connection already lost it).
    let dropped = session.drop_table();
    let server_runs = measured?;
    if !server_runs.interrupted {
        dropped?;
    }
    let query = session.query();
    drop(session);
    let cpu_contention = cpu_before.zip(cpu_after).and_then(|(before, after)| {
        Some(report::CpuContention {
            other_busy_fraction: contention::other_busy_fraction(&before, &after, server_runs.server_busy_ms)?,
            cpus: after.cpus,
            warn_fraction: contention::BUSY_WARN_FRACTION,
        })
    });
    // --query has no table: its "rows" are the most any plan node returned.
    let rows = if workload == options::Workload::Query {
        server_runs
            .sources
            .first()
            .and_then(|s| s.timing_on_plan.as_deref())
            .and_then(|p| plan::parse_explain_json(p).ok())
            .map_or(1, |p| p.max_node_rows().max(1))
    } else {
        opts.rows
    };

    let mut stopped = server_runs.interrupted;
    let mut keep_going = |clock: &str| {
        if !stopped && (stop() || observer(&Step::MeasuringClock { clock }) == Control::Stop) {
            stopped = true;
        }
        !stopped
    };
    let machine = clockcost::measure_machine(
        clockcost::MachineRequest {
            duration_ns: opts.clock_measure_ns,
            server_version_num: info.version_num,
        },
        &mut || keep_going("this machine's clocks"),
    );
    let page_read = if keep_going("an 8 kB read from the page cache") {
        timing_settings::measure_page_cache_read(PAGE_READ_ROUNDS).map(|p| timing_settings::PageReadReference {
            ns: p.ns,
            low_ns: p.low_ns,
            high_ns: p.high_ns,
            source: format!(
                "an 8 kB pread from the OS page cache (median of {PAGE_READ_ROUNDS} passes over {} pages) measured \
                 on this machine, {}",
                timing_settings::PAGE_READ_PAGES,
                if target.locality.is_local() {
                    "the server's"
                } else {
                    "not the server's: an example"
                }
            ),
        })
    } else {
        None
    };
    let mut report = report::build(&report::Inputs {
        server_version: &info.version,
        server_version_num: info.version_num,
        server_version_full: &info.version_full,
        server: &target.description,
        locality: target.locality.clone(),
        settings: &info.settings,
        timing_settings: &server_timing,
        page_read,
        query: &query,
        rows,
        temp_table_estimated_bytes: session::estimated_table_bytes(opts.rows, info.block_size),
        workload,
        workload_reason: workload_reason.as_deref(),
        runs: opts.runs,
        warmup_runs: options::WARMUP_RUNS,
        sources: &server_runs.sources,
        skipped: &server_runs.skipped,
        machine: &machine,
        clock_measure_ns: opts.clock_measure_ns,
        interrupted: stopped,
        max_time: opts.max_time,
        cpu_contention,
    });
    report.warnings.extend(auto_explain_warning);
    Ok(report)
}
