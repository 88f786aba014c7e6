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
//! `BEGIN READ ONLY ... ROLLBACK` (a write is refused by the server; a call
//! whose effect ROLLBACK cannot undo is refused by name, `side_effects`),
//! and the report adds the per-node breakdown ([`nodes`]). Either way the
//! pairs go on until the median slowdown is known within +-5% (95%) or
//! `--max-time` ([`measure`]), which is a deadline for the whole run
//! ([`budget`]).
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
//! - [`budget`]: `--max-time`, one deadline for the whole run, and its split.
//! - `side_effects`: `--query`'s calls ROLLBACK cannot undo, found in the
//!   text and in the plan.
//! - [`connect`]: libpq-style DSN (its own conninfo lexer), PG* variables,
//!   the service and password files (`pgfiles`); is the server local?
//! - [`tls`]: sslmode and the certificate files, as libpq reads them.
//! - [`session`]: the PostgreSQL session (settings, TEMP table, EXPLAIN),
//!   every wait bounded by a deadline and stoppable (cancel request, cleanup).
//! - [`measure`]: the alternating runs per clock source, over a trait so
//!   tests replay recorded plans.
//! - [`plan`]: EXPLAIN JSON parsing and the clock-read count.
//! - [`stats`]: medians, the paired slowdowns' 95% interval, the stopping rule.
//! - [`contention`]: other work on this machine during the runs (/proc/stat).
//! - [`backend_process`]: the server's backend as a process here, known
//!   beyond its pid (its age, its data directory) before slices pin to it.
//! - [`nodes`]: `--query`'s per-node breakdown.
//! - [`clockcost`]: this machine's per-read costs.
//! - `clock_source`: what a `SHOW timing_clock_source` value names.
//! - `local`: those measurements and the page-cache read, within the deadline.
//! - [`timing_settings`]: the server's own timing settings, priced and judged.
//! - [`report`]: the arithmetic, text and JSON.
//! - `testing` (feature `testing`): a throw-away PostgreSQL server for tests.

// No unsafe code in the library; the test-support module (feature `testing`)
// alone calls libc (geteuid, atexit), each call with its SAFETY comment.
#![cfg_attr(not(feature = "testing"), forbid(unsafe_code))]
#![cfg_attr(feature = "testing", deny(unsafe_code))]

pub mod backend_process;
pub mod budget;
pub(crate) mod clock_source;
pub mod clockcost;
pub mod connect;
pub mod contention;
pub mod error;
pub(crate) mod local;
pub mod measure;
pub mod nodes;
pub mod options;
pub(crate) mod pgfiles;
pub mod plan;
pub mod report;
pub mod session;
pub(crate) mod side_effects;
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
use std::sync::Arc;

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
            requested: Arc::new(|| false),
            on_connected: &mut |_| {},
        },
    )
}

/// What the server part of a run found.
struct ServerSide {
    info: session::ServerInfo,
    server_timing: Vec<timing_settings::ServerSetting>,
    workload: options::Workload,
    workload_reason: Option<String>,
    runs: measure::ServerRuns,
    query: String,
    cpu_contention: Option<report::CpuContention>,
    /// The instrumentation model, sampled between the server's pairs.
    model: clockcost::ModelSlices,
    warnings: Vec<String>,
}

/// [`run`], stoppable while it waits on the server too. `--max-time` is a
/// deadline for all of it ([`budget`]).
pub fn run_with(
    opts: &Options,
    observer: &mut dyn FnMut(&Step) -> Control,
    interruption: Interruption,
) -> Result<Report, Error> {
    let budget = budget::Budget::new(clockscope_system::forward::now(), opts.max_time);
    opts.validate()?;
    let target = connect::resolve_from_env(opts.dsn.as_deref())?;
    let stop = interruption.requested;
    let mut session = session::PgSession::connect_within(&target, Arc::clone(&stop), Some(budget))?;
    (interruption.on_connected)(session.cancel_request());
    let server = on_server(&mut session, opts, &target, &budget, &stop, observer)?;
    // Closes the connection before the measurements on this machine.
    drop(session);

    let rows = measured_rows(&server, opts);
    let clock = "this machine's clocks";
    let mut stopped = server.runs.interrupted || stop() || observer(&Step::MeasuringClock { clock }) == Control::Stop;
    let local_stop: session::StopCheck = if stopped { Arc::new(|| true) } else { Arc::clone(&stop) };
    let mut local = local::measure(
        &local::Plan {
            deadline: budget.deadline(),
            max_time: opts.max_time,
            clock_measure_ns: opts.clock_measure_ns,
            server_is_local: target.locality.is_local(),
            server_version_num: server.info.version_num,
        },
        local_stop,
    );
    stopped |= stop();
    server.model.fill(&mut local.machine);
    if local.machine.system.executor_loop.is_none() && !stopped {
        local.warnings.push(
            "the executor-like loop did not run (no pair of the server's runs completed): the prediction uses the \
             back-to-back pg_test_timing loop time"
                .to_string(),
        );
    }
    Ok(build_report(opts, &target, server, local, rows, stopped))
}

/// The rows per run: the table's, or for `--query` (no table) the most any
/// plan node returned.
fn measured_rows(server: &ServerSide, opts: &Options) -> u64 {
    if server.workload == options::Workload::Query {
        server
            .runs
            .sources
            .first()
            .and_then(|s| s.timing_on_plan.as_deref())
            .and_then(|p| plan::parse_explain_json(p).ok())
            .map_or(1, |p| p.max_node_rows().max(1))
    } else {
        opts.rows
    }
}

/// The report from what the server part and this machine's measurements
/// found.
fn build_report(
    opts: &Options,
    target: &connect::Target,
    server: ServerSide,
    local: local::Local,
    rows: u64,
    stopped: bool,
) -> Report {
    let info = &server.info;
    let mut report = report::build(&report::Inputs {
        server_version: &info.version,
        server_version_num: info.version_num,
        server_version_full: &info.version_full,
        server: &target.description,
        locality: target.locality.clone(),
        settings: &info.settings,
        timing_settings: &server.server_timing,
        page_read: local.page_read,
        query: &server.query,
        rows,
        temp_table_estimated_bytes: session::estimated_table_bytes(opts.rows, info.block_size),
        workload: server.workload,
        workload_reason: server.workload_reason.as_deref(),
        runs: opts.runs,
        warmup_runs: options::WARMUP_RUNS,
        sources: &server.runs.sources,
        skipped: &server.runs.skipped,
        machine: &local.machine,
        clock_measure_ns: local.clock_measure_ns,
        interrupted: stopped,
        max_time: opts.max_time,
        cpu_contention: server.cpu_contention,
    });
    report.warnings.extend(server.warnings);
    report.warnings.extend(local.warnings);
    report
}

/// Everything on the server: settings, the session's set-up, the
/// side-effect check of `--query`, the workload, the runs, the teardown;
/// the runs end early enough to leave this machine's measurements their
/// share of `--max-time` ([`budget::Budget::server_runs_at`]).
fn on_server(
    session: &mut session::PgSession,
    opts: &Options,
    target: &connect::Target,
    budget: &budget::Budget,
    stop: &session::StopCheck,
    observer: &mut dyn FnMut(&Step) -> Control,
) -> Result<ServerSide, Error> {
    let mut info = session.server_info()?;
    // Read before the session changes anything (it never changes these).
    let server_timing = session.timing_settings()?;
    // A server on this machine: its backend's pid, for the model's slices,
    // once the process of that pid here is known to be it (else why not).
    let (backend_pid, backend_unknown) = backend_process::of_session(session, target.locality.is_local())?;
    // The server's page size, before anything is created.
    if opts.workload != options::Workload::Series {
        opts.check_table_size(info.block_size)?;
    }
    if let Some(sql) = &opts.query {
        session.use_query(sql, opts.max_time);
    }
    session.prepare(&mut info, opts.rows)?;
    let mut warnings = Vec::new();
    if let Some(min_duration) = timing_settings::auto_explain_on(&server_timing) {
        if !session.turn_off_auto_explain(&mut info, min_duration)? {
            warnings.push(format!(
                "auto_explain is on (log_min_duration = {min_duration}) and this role may not turn it off for its \
                 session (superuser only): it instrumented and logged the measured statements too, so with \
                 log_analyze and log_timing on the TIMING OFF runs were timed as well and the overhead is understated"
            ));
        }
    }
    if let Some(sql) = &opts.query {
        warnings.extend(check_side_effects(session, sql, opts.allow_side_effects)?);
    }
    let clock_setting =
        measure::has_clock_source_setting(info.version_num, info.setting("timing_clock_source").is_some());
    let (workload, workload_reason, prepared) = choose_workload(session, opts)?;
    let local = target.locality.is_local();
    let cpu_before = local
        .then(|| contention::CpuSample::read(std::path::Path::new("/")))
        .flatten();
    // The model runs in slices, one before the first run of each of the
    // server's measured pairs (in balanced order, so a slice precedes each
    // mode equally: `measure`), for the clock source being run: the two
    // sample the same time (bench/README.md: this machine's speed can change
    // over seconds). Before PostgreSQL 19 the server reads the system clock
    // only; the TSC's model (PostgreSQL 19's read) runs beside it, for the
    // report's TSC prediction.
    let mut model = clockcost::ModelSlices::new(
        info.version_num,
        clockcost::model_slice_ns(opts.clock_measure_ns, opts.runs),
    );
    // A server here: each slice runs on the CPU its backend last ran on
    // (one vCPU can be slower than another for seconds).
    if let Some(pid) = backend_pid {
        model.follow_backend(pid, std::path::Path::new("/"));
    }
    model.pin_note = model.pin_note.take().or(backend_unknown);
    let mut stopped_observer = |step: &Step| {
        if stop() {
            return Control::Stop;
        }
        let control = observer(step);
        if control == Control::Continue {
            slice_before(&mut model, step, !clock_setting, stop);
        }
        control
    };
    // The runs' own cap: the time left, less what this machine's
    // measurements will need.
    let mut run_opts = opts.clone();
    run_opts.max_time = budget.server_runs_at(clockscope_system::forward::now(), opts.clock_measure_ns);
    let measured =
        prepared.and_then(|()| measure::run_sources(session, clock_setting, &run_opts, &mut stopped_observer));
    let cpu_after = cpu_before.and_then(|_| contention::CpuSample::read(std::path::Path::new("/")));
    // Drop the table whatever happened (a broken connection already lost it;
    // past the deadline the server drops it when the session ends).
    let dropped = session.drop_table();
    let runs = measured?;
    if !runs.interrupted && !session.past_deadline() {
        dropped?;
    }
    warnings.extend(session.deadline_note().map(|note| format!("--max-time: {note}")));
    warnings.extend(model.pin_note.as_ref().map(|why| {
        let which = if model.unpinned_slices > 0 {
            format!("{} of the model's slices were", model.unpinned_slices)
        } else {
            "the model's slices were".to_string()
        };
        format!(
            "{which} not pinned to the CPU of the server's backend ({why}): on a machine whose CPUs run at \
             different speeds the prediction may be for another CPU's"
        )
    }));
    let cpu_contention = cpu_before.zip(cpu_after).and_then(|(before, after)| {
        Some(report::CpuContention {
            other_busy_fraction: contention::other_busy_fraction(&before, &after, runs.server_busy_ms)?,
            cpus: after.cpus,
            warn_fraction: contention::BUSY_WARN_FRACTION,
        })
    });
    Ok(ServerSide {
        info,
        server_timing,
        workload,
        workload_reason,
        runs,
        query: session.query(),
        cpu_contention,
        model,
        warnings,
    })
}

/// The model's slice before `step` when it is the first run of a measured
/// pair (A/A pairs included), for its clock source; `pre_19`: the TSC's
/// model (PostgreSQL 19's read) too, for the TSC prediction.
fn slice_before(model: &mut clockcost::ModelSlices, step: &Step, pre_19: bool, stop: &session::StopCheck) {
    if let Step::Explain {
        clock_source,
        run: 1..,
        first: true,
        ..
    } = step
    {
        model.slice(clock_source, &mut || !stop());
        if pre_19 {
            model.slice("tsc", &mut || !stop());
        }
    }
}

/// Refuses `--query` `sql` when its plan calls a function whose effect
/// ROLLBACK cannot undo ([`side_effects`]; the text was checked before
/// connecting), unless `allowed`; then the warnings say what was kept.
fn check_side_effects(session: &mut session::PgSession, sql: &str, allowed: bool) -> Result<Vec<String>, Error> {
    // Before the plan: planning alone runs some functions (constants folded,
    // operators' estimators).
    let reached = side_effects::unsafe_reachable(session, sql)?;
    if !allowed && !reached.is_empty() {
        return Err(Error::Query(format!(
            "reaches {}: ROLLBACK cannot undo it, or clockscope cannot see what it does; pass \
             --allow-side-effects to run it anyway",
            side_effects::describe_reached(&reached)
        )));
    }
    let verbose = session.verbose_plan(sql)?;
    let in_plan = side_effects::escapes_in_plan(&*plan::parse_json(&verbose)?);
    if !allowed {
        options::refuse_side_effects(&in_plan, "its plan calls")?;
        return Ok(Vec::new());
    }
    let mut found = side_effects::escapes_in_sql(sql);
    for f in in_plan {
        if !found.iter().any(|g| g.function == f.function) {
            found.push(f);
        }
    }
    let mut warnings = Vec::new();
    if !found.is_empty() {
        warnings.push(format!(
            "--allow-side-effects: the query calls {}: every run (warm-up included) did it again and ROLLBACK \
             undid none of it",
            side_effects::describe(&found)
        ));
    }
    if !reached.is_empty() {
        warnings.push(format!(
            "--allow-side-effects: the query reaches {}: every run (warm-up included) may have done it again",
            side_effects::describe_reached(&reached)
        ));
    }
    Ok(warnings)
}

/// The workload chosen, why (when not the one asked for), and whether it
/// is ready (the TEMP table's creation may have failed).
type Chosen = (options::Workload, Option<String>, Result<(), Error>);

/// The workload: the user's query, a TEMP table, or generate_series where
/// no table can be made; with why, and whether it is ready.
fn choose_workload(session: &mut session::PgSession, opts: &Options) -> Result<Chosen, Error> {
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
    Ok((workload, workload_reason, prepared))
}
