//! `clockscope explain`: EXPLAIN ANALYZE's timing overhead on a real PostgreSQL, next to the prediction.
//!
//! Thin over `clockscope_explain`: `--rows` and `--max-table-size` are
//! checked before anything connects. The first Ctrl-C (or SIGTERM) cancels
//! the server's running statement, drops the TEMP table and prints what was
//! measured (exit 130); a second one sends the cancel request and exits at
//! once. Every failure is one line (exit 2); a measurement problem (TIMING
//! ON measured wholly faster than OFF, beyond the A/A control) exits 1. `--query` runs the user's
//! statement instead (read-only, rolled back; calls ROLLBACK cannot undo are
//! refused without `--allow-side-effects`); `--max-time` is a deadline for
//! the whole run.

#![cfg(feature = "explain")]

use crate::args::{parse_seconds, ReportFormat};
use crate::report::stamp::{ReportStamp, Stamped};
use crate::report::Renderer;
use crate::{exit, progress};
use clap::Args;
use clockscope::Control;
use clockscope_explain::session::CancelRequest;
use clockscope_explain::{options, Error, Interruption, Options, Report, Step};
use std::sync::Arc;

#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// libpq conninfo string or URI (default: PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD).
    #[arg(long, value_name = "CONNINFO")]
    pub dsn: Option<String>,

    /// Rows in the TEMP table (1..=1000000000).
    #[arg(long, default_value = "1000000", allow_negative_numbers = true)]
    pub rows: String,

    /// Largest TEMP table allowed, estimated from --rows before it is created (e.g. 4GB; 1 kB = 1024 B).
    /// Without it, a table above 2 GB (about 59 million rows) is refused.
    #[arg(long, value_name = "SIZE")]
    pub max_table_size: Option<String>,

    /// The fewest pairs of EXPLAIN runs (TIMING OFF and ON, in alternating order) after a warm-up; more follow,
    /// with an A/A control of TIMING OFF against OFF, until the median slowdown's 95% interval is within +-5% and
    /// the control has its own (at least 36 pairs in all) or --max-time.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000), allow_hyphen_values = true)]
    pub runs: u32,

    /// A deadline for the whole run, in seconds: connecting, set-up, the TEMP table, every EXPLAIN run (PostgreSQL
    /// 19's two clock sources share them), teardown and this machine's clock measurements. At the deadline the
    /// running statement gets a cancel request and the connection is closed within 1.5 s, answered or not; the
    /// report holds the pairs measured (none: one line saying what was running and what the server answered). With
    /// --query, each run's statement_timeout is the time left.
    /// A plain number is seconds, or give a unit (`90s`, `2m`); at most a day.
    #[arg(long, value_name = "DURATION", default_value = "60", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub max_time: f64,

    /// Measure this statement instead of count(*) over a TEMP table: one statement, each run inside
    /// BEGIN READ ONLY ... ROLLBACK. The server refuses writes to tables, and ROLLBACK undoes what the transaction
    /// did in this database (a large-object write or CREATE TABLE AS is refused after the run; SET and set_config,
    /// NOTIFY/pg_notify, transaction advisory locks end with it). ROLLBACK cannot undo what happens outside the
    /// transaction, so calls of these are refused unless --allow-side-effects: dblink* (SQL in another session,
    /// which commits), nextval/setval (sequences), pg_stat_reset*, pg_stat_statements_reset (statistics),
    /// pg_advisory_lock and pg_try_advisory_lock (session locks, held until the session ends),
    /// pg_terminate_backend, pg_cancel_backend (other sessions), pg_reload_conf, pg_rotate_logfile, pg_switch_wal,
    /// backups, replication slots and origins, pg_logical_emit_message, lo_export and adminpack's pg_file_* (server
    /// files), and query_to_xml, ts_stat, table_to_xml and the like (SQL given as text). They are looked for in the
    /// text (any case, quoting, schema, comments), then through the catalogs before anything is planned (operators,
    /// domains' CHECKs, casts, defaults, triggers, rules, views, policies, function bodies, followed in turn: a
    /// function that is neither built in nor SQL or PL/pgSQL read here, e.g. any extension's C function, is refused
    /// with the route that reaches it), then in the plan's expressions (EXPLAIN VERBOSE, not run). Not seen: what C
    /// code does on its own, and a foreign table's remote server (postgres_fdw).
    #[arg(long, value_name = "SQL", allow_hyphen_values = true, conflicts_with_all = ["rows", "max_table_size", "workload"])]
    pub query: Option<String>,

    /// Run a --query that calls a function whose effect ROLLBACK cannot undo (see --query); each run, warm-up
    /// included, does it again, and the report's warnings name the functions.
    #[arg(long, requires = "query")]
    pub allow_side_effects: bool,

    /// What EXPLAIN runs on: a TEMP table, generate_series (no table: hot standbys, read-only roles), or auto
    /// (the table when the server allows one).
    #[arg(long, value_enum, default_value_t = WorkloadArg::Auto)]
    pub workload: WorkloadArg,

    #[command(flatten)]
    pub output: crate::args::OutputArg,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,

    #[command(flatten)]
    pub verbose: crate::args::VerboseArg,
}

/// `--workload`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadArg {
    Auto,
    Table,
    Series,
}

impl From<WorkloadArg> for options::Workload {
    fn from(w: WorkloadArg) -> options::Workload {
        match w {
            WorkloadArg::Auto => options::Workload::Auto,
            WorkloadArg::Table => options::Workload::Table,
            WorkloadArg::Series => options::Workload::Series,
        }
    }
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &ExplainArgs, out: &mut dyn std::io::Write) -> anyhow::Result<u8> {
    let opts = Options {
        rows: options::parse_rows(&args.rows)?,
        runs: args.runs,
        max_table_bytes: args.max_table_size.as_deref().map(options::parse_size).transpose()?,
        workload: args.workload.into(),
        query: args.query.clone(),
        max_time: std::time::Duration::from_secs_f64(args.max_time),
        allow_side_effects: args.allow_side_effects,
        ..Options::new(args.dsn.clone())
    };
    opts.validate()?;
    exit::install_interrupt_handler();

    let per_source = 2 * u64::from(opts.runs + options::WARMUP_RUNS);
    let bar = progress::bar("EXPLAIN ANALYZE runs", per_source);
    let mut current_source = String::new();
    let mut observer = |step: &Step| {
        match step {
            Step::Explain { clock_source, .. } => {
                if *clock_source != current_source {
                    current_source = clock_source.to_string();
                    bar.set_prefix(format!("EXPLAIN ANALYZE, {clock_source}"));
                    bar.set_position(0);
                }
                // Past --runs the noise control decides: grow by a pair.
                if bar.position() >= bar.length().unwrap_or(0) {
                    bar.inc_length(2);
                }
                bar.inc(1);
            }
            Step::MeasuringClock { clock } => bar.set_prefix(format!("measuring {clock}")),
        }
        exit::control()
    };
    let result = run_interruptible(&opts, &mut observer);
    bar.finish_and_clear();
    let report = match result {
        Ok(r) => r,
        Err(Error::Interrupted) => {
            eprintln!("clockscope: interrupted before a pair of EXPLAIN runs completed");
            return Ok(exit::INTERRUPTED);
        }
        Err(e) => return Err(e.into()),
    };
    let stamp = ReportStamp::now(clockscope_explain::report::SCHEMA_VERSION);
    renderer(args.format, args.verbose.verbose)(out, &stamp.on(&report))?;
    Ok(exit_code(&report))
}

/// [`clockscope_explain::run_with`] stopped by Ctrl-C or SIGTERM (the
/// first stops the runs, cancelling the running statement, and keeps what
/// was measured); a forced exit (a second one) sends the cancel request
/// first, so the server does not go on with a statement nobody waits for.
pub fn run_interruptible(opts: &Options, observer: &mut dyn FnMut(&Step) -> Control) -> Result<Report, Error> {
    let mut forced_exit_cancel = None;
    let mut on_connected = |cancel: CancelRequest| {
        forced_exit_cancel = Some(exit::on_forced_exit(move || {
            cancel.send_blocking();
        }));
    };
    let interruption = Interruption {
        requested: Arc::new(exit::interrupted),
        on_connected: &mut on_connected,
    };
    let result = clockscope_explain::run_with(opts, observer, interruption);
    drop(forced_exit_cancel);
    result
}

/// The exit status of a finished report: 130 after Ctrl-C; 1 when a
/// measurement contradicts itself (TIMING ON wholly faster than OFF, beyond
/// the A/A control: something to act on, not a result); else 0.
pub fn exit_code(report: &Report) -> u8 {
    let problem = report
        .clock_sources
        .iter()
        .any(|s| s.result == clockscope_explain::report::Resolution::MeasurementProblem);
    if report.interrupted {
        exit::INTERRUPTED
    } else if problem {
        exit::PROBLEM
    } else {
        exit::OK
    }
}

/// The renderer of `format`: the one-screen text unless `verbose`.
pub fn renderer<'a>(format: ReportFormat, verbose: bool) -> Renderer<Stamped<'a, Report>> {
    match format {
        ReportFormat::Text if verbose => crate::commands::explain::text::write_full as Renderer<_>,
        ReportFormat::Text => crate::commands::explain::text::write_screen as Renderer<_>,
        ReportFormat::Json => crate::report::json::write as Renderer<_>,
    }
}
