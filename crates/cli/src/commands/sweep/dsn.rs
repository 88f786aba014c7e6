//! `sweep --dsn CONNINFO`: PostgreSQL's documented experiment in one
//! command. Under each clocksource the sweep switched to and read back,
//! `explain`'s measurement ([`clockscope_explain::run_with`]: the same
//! connection options and files, TEMP table or `--query`, pairs of TIMING
//! OFF and ON with the A/A control, intervals and deadlines) runs on the
//! server, so each row shows its real EXPLAIN ANALYZE overhead per row and
//! slowdown next to the system clock's read cost.
//!
//! The server must be on this machine (a unix socket or a loopback
//! address, as `explain` tells them apart): a remote one is refused in one
//! line before anything is switched, since this machine's clocksource
//! changes nothing there. Each clocksource's run is one session: its TEMP
//! table is created at the start and dropped at the end (and dies with the
//! session whatever happens), and the session's settings (parallel query,
//! JIT, `timing_clock_source`) end with it.
//!
//! PostgreSQL 19 reads the kernel's clocksource only with
//! `timing_clock_source = system` (the TSC path does not go through the
//! kernel): that is SET and measured under each clocksource, and `tsc` once,
//! under the first, as the reference. Before 19 the server's only clock for
//! EXPLAIN is the system clock.

#![cfg(feature = "explain")]

use super::server::{check_max_time, ServerFacts, ServerOutcome};
use crate::commands::explain::WorkloadArg;
use crate::commands::sweep::model::{ServerExplain, SweepServer};
use crate::report::json::serde_name;
use crate::{exit, progress};
use clap::Args;
use clockscope_explain::options::TimingClockSources;
use clockscope_explain::report::SourceResult;
use clockscope_explain::{connect, options, Error, Options, Report, Step};
use std::time::Duration;

/// Default `--max-time` per clocksource swept, besides its `-d`.
pub const DEFAULT_MAX_TIME_PER_CLOCKSOURCE_S: f64 = 60.0;

/// How long each of this machine's clocks is measured for `explain`'s
/// prediction in each run (the sweep shows the server's measured overhead,
/// not the prediction, so the shortest useful loop: 10 chunks of 10 ms).
const CLOCK_MEASURE_NS: u64 = 100_000_000;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "EXPLAIN ANALYZE on a local server")]
pub struct SweepServerArgs {
    /// With --apply, also run `clockscope explain`'s measurement on this PostgreSQL server under each
    /// clocksource (after the switch is read back): its real EXPLAIN ANALYZE overhead per row and slowdown, with
    /// their 95% intervals, next to each read cost, and the recommendation made on them. The same libpq conninfo
    /// string or URI, PG* variables and files as `explain --dsn` (`--dsn ''`: the PG* variables alone). The server
    /// must be on this machine (a unix socket or a loopback address): a remote one is refused. On PostgreSQL 19
    /// `timing_clock_source = system` is measured under each clocksource (the one a kernel clocksource changes)
    /// and `tsc` once, as the reference.
    #[arg(long, value_name = "CONNINFO")]
    pub dsn: Option<String>,

    /// As `explain --rows`: rows in each run's TEMP table (1..=1000000000; default 1000000).
    #[arg(long, requires = "dsn", allow_negative_numbers = true)]
    pub rows: Option<String>,

    /// As `explain --max-table-size`: the largest TEMP table allowed (e.g. 4GB).
    #[arg(long, value_name = "SIZE", requires = "dsn")]
    pub max_table_size: Option<String>,

    /// As `explain --runs`: the fewest pairs of EXPLAIN runs under each clocksource (default 5); more follow until
    /// the slowdown's 95% interval is within +-5% or the clocksource's share of --max-time.
    #[arg(long, requires = "dsn", value_parser = clap::value_parser!(u32).range(1..=1000), allow_hyphen_values = true)]
    pub runs: Option<u32>,

    /// A deadline for the whole sweep: the read-cost rounds (-d under each clocksource), then each clocksource's
    /// EXPLAIN runs with an equal share of the time left (as `explain --max-time`: a statement still running at
    /// its share's end gets a cancel request). Default: 60 s per clocksource plus -d under each. A plain number is
    /// seconds, or give a unit (`90s`, `5m`).
    #[arg(long, value_name = "DURATION", requires = "dsn", value_parser = crate::args::parse_seconds,
          allow_hyphen_values = true)]
    pub max_time: Option<f64>,

    /// As `explain --query`: measure this statement instead of count(*) over a TEMP table (read-only, rolled back).
    #[arg(long, value_name = "SQL", requires = "dsn", allow_hyphen_values = true,
          conflicts_with_all = ["rows", "max_table_size", "workload"])]
    pub query: Option<String>,

    /// As `explain --allow-side-effects`.
    #[arg(long, requires = "query")]
    pub allow_side_effects: bool,

    /// As `explain --workload`: a TEMP table, generate_series, or auto.
    #[arg(long, value_enum, requires = "dsn")]
    pub workload: Option<WorkloadArg>,
}

/// `--dsn` checked before anything is locked or switched.
pub struct Prepared {
    opts: Options,
    max_time: Duration,
    header: SweepServer,
}

impl Prepared {
    /// The options as `explain` checks them, the server's locality (a
    /// remote one refused), and (`apply`) `--max-time` against the
    /// read-cost rounds of `clocksources` clocksources; `None` without `--dsn`.
    pub fn new(
        args: &SweepServerArgs,
        duration_s: f64,
        clocksources: usize,
        apply: bool,
    ) -> anyhow::Result<Option<Self>> {
        let Some(dsn) = &args.dsn else {
            return Ok(None);
        };
        let n = clocksources.max(1);
        let max_time_s = args
            .max_time
            .unwrap_or((DEFAULT_MAX_TIME_PER_CLOCKSOURCE_S + duration_s) * n as f64);
        let max_time = Duration::from_secs_f64(max_time_s);
        let opts = Options {
            rows: args
                .rows
                .as_deref()
                .map(options::parse_rows)
                .transpose()?
                .unwrap_or(Options::new(None).rows),
            runs: args.runs.unwrap_or(Options::new(None).runs),
            max_table_bytes: args.max_table_size.as_deref().map(options::parse_size).transpose()?,
            workload: args.workload.unwrap_or(WorkloadArg::Auto).into(),
            query: args.query.clone(),
            allow_side_effects: args.allow_side_effects,
            clock_measure_ns: CLOCK_MEASURE_NS,
            max_time,
            ..Options::new((!dsn.is_empty()).then(|| dsn.clone()))
        };
        opts.validate()?;
        let target = connect::resolve_from_env(opts.dsn.as_deref())?;
        if !target.locality.is_local() {
            anyhow::bail!(
                "--dsn: the server ({}) may be on another machine: switching this machine's clocksource changes \
                 nothing there; give a unix socket (host=/var/run/postgresql) or a loopback address, or measure it \
                 with `clockscope explain` alone",
                clockscope_system::escape::escape_untrusted(&target.description)
            );
        }
        if apply {
            check_max_time(max_time, duration_s, n)?;
        }
        let header = SweepServer {
            server: target.description.clone(),
            locality: serde_name(&target.locality),
            server_version: None,
            server_version_num: None,
            query: opts.query.clone().unwrap_or_default(),
            workload: serde_name(&opts.workload),
            rows: opts.rows,
            max_time_s,
            clock_source_note: String::new(),
            tsc_reference: None,
            original_again: None,
            warnings: Vec::new(),
        };
        Ok(Some(Prepared { opts, max_time, header }))
    }

    /// `--max-time`, over the whole sweep.
    pub fn max_time(&self) -> Duration {
        self.max_time
    }

    /// The report's `server` before the server has said anything.
    pub fn header(&self) -> SweepServer {
        self.header.clone()
    }

    /// `explain`'s measurement under `clocksource` within `share`; `first`:
    /// PostgreSQL 19's `tsc` too. Ctrl-C stops it (what was measured kept).
    pub fn measure(&self, clocksource: &str, share: Duration, first: bool) -> anyhow::Result<ServerOutcome> {
        let opts = Options {
            max_time: share,
            timing_clock_sources: if first {
                TimingClockSources::SystemAndTsc
            } else {
                TimingClockSources::SystemOnly
            },
            ..self.opts.clone()
        };
        match run_explain(&opts, clocksource) {
            Ok(report) => Ok(outcome(&report, clocksource, share)),
            Err(Error::Interrupted) => Ok(ServerOutcome {
                interrupted: true,
                ..ServerOutcome::default()
            }),
            Err(e) => Err(anyhow::Error::new(e).context(format!(
                "EXPLAIN ANALYZE under clocksource {}",
                clockscope_system::escape::escape_untrusted(clocksource)
            ))),
        }
    }
}

/// One `explain` run, with its progress bar, Ctrl-C and forced-exit cancel
/// (`explain`'s own).
fn run_explain(opts: &Options, clocksource: &str) -> Result<Report, Error> {
    let bar = progress::bar("EXPLAIN ANALYZE runs", 2 * u64::from(opts.runs + options::WARMUP_RUNS));
    let mut observer = |step: &Step| {
        if let Step::Explain { clock_source, .. } = step {
            bar.set_prefix(format!("{clocksource}: EXPLAIN, {clock_source}"));
            if bar.position() >= bar.length().unwrap_or(0) {
                bar.inc_length(2);
            }
            bar.inc(1);
        }
        exit::control()
    };
    // A forced exit (second Ctrl-C) sends the cancel request first; the
    // guardian puts the clocksource back.
    let result = crate::commands::explain::run_interruptible(opts, &mut observer);
    bar.finish_and_clear();
    result
}

/// Whether a server clock named `clock_source` reads the kernel's clocksource.
pub fn follows_kernel_clocksource(clock_source: &str) -> bool {
    clock_source == "system" || clock_source.contains("(system)")
}

fn server_explain(s: &SourceResult, share: Duration) -> ServerExplain {
    ServerExplain {
        clock_source: s.clock_source.clone(),
        follows_kernel_clocksource: follows_kernel_clocksource(&s.clock_source),
        timing_off_ms: s.timing_off_ms,
        timing_on_ms: s.timing_on_ms,
        slowdown: s.slowdown,
        slowdown_low: s.slowdown_low,
        slowdown_high: s.slowdown_high,
        overhead_per_row_ns: s.overhead_per_row_ns,
        overhead_per_row_low_ns: s.overhead_per_row_low_ns,
        overhead_per_row_high_ns: s.overhead_per_row_high_ns,
        overhead_per_read_ns: s.overhead_per_read_ns,
        clock_reads_per_row: s.clock_reads_per_row,
        pairs: s.noise.pairs,
        result: serde_name(&s.result),
        result_reason: s.result_reason.clone(),
        stopped_by: serde_name(&s.noise.stopped_by),
        max_time_s: share.as_secs_f64(),
    }
}

/// The sweep's view of one `explain` report.
fn outcome(report: &Report, clocksource: &str, share: Duration) -> ServerOutcome {
    let follows = report
        .clock_sources
        .iter()
        .find(|s| follows_kernel_clocksource(&s.clock_source));
    let row = follows.or_else(|| report.clock_sources.iter().find(|s| s.clock_source != "tsc"));
    let row = row.or(report.clock_sources.first());
    let tsc = report.clock_sources.iter().find(|s| s.clock_source == "tsc");
    let mut warnings: Vec<String> = report
        .skipped_clock_sources
        .iter()
        .map(|s| format!("timing_clock_source {} not measured: {}", s.clock_source, s.reason))
        .collect();
    warnings.extend(report.warnings.iter().cloned());
    ServerOutcome {
        explain: row.map(|s| server_explain(s, share)),
        tsc_reference: tsc.filter(|_| follows.is_some()).map(|s| server_explain(s, share)),
        facts: Some(ServerFacts {
            server_version: report.server_version.clone(),
            server_version_num: report.server_version_num,
            query: report.query.clone(),
            workload: serde_name(&report.workload),
            rows: report.rows,
            clock_source_note: clock_source_note(report, row, clocksource),
        }),
        warnings,
        interrupted: report.interrupted,
    }
}

/// Which server clock the rows measure, and why it is the one a kernel
/// clocksource changes (or that it is not).
fn clock_source_note(report: &Report, row: Option<&SourceResult>, first: &str) -> String {
    let pg19 = report.server_version_num >= clockscope_explain::measure::PG19_VERSION_NUM;
    match row {
        Some(s) if !follows_kernel_clocksource(&s.clock_source) => format!(
            "the server's clock for EXPLAIN, timing_clock_source = {}, does not read the kernel's clocksource (this \
             role may not SET it to system: superuser only), so the rows do not show what a clocksource change does \
             to EXPLAIN ANALYZE; the recommendation rests on the read cost",
            s.clock_source
        ),
        _ if pg19 => format!(
            "PostgreSQL 19: timing_clock_source = system (SET for each run's session) measured under each \
             clocksource: it reads clock_gettime, which the kernel's clocksource serves; tsc does not go through the \
             kernel, so it was measured once, under {first}, as the reference"
        ),
        _ => "the server reads clock_gettime(CLOCK_MONOTONIC) for EXPLAIN ANALYZE (before PostgreSQL 19 its only \
              clock), which the kernel's clocksource serves"
            .to_string(),
    }
}
