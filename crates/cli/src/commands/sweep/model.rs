//! What `clockscope sweep` found or would do: the system clock measured under
//! each kernel clocksource, and the recommendation. Its JSON form is
//! documented in `docs/schema/sweep.schema.json`.

use crate::commands::check::model::stats::Percentiles;
use crate::commands::check::model::verdict::{ExplainPrediction, RuleResult, Status};
use crate::exit;
use clockscope_system::engine::Estimate;
use clockscope_system::stats::Interval;
use serde::Serialize;

/// Version of the JSON layout (docs/schema/sweep.schema.json).
pub const SCHEMA_VERSION: u32 = 3;

/// What one clocksource measured.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SweepResult {
    /// The clocksource switched to.
    pub clocksource: String,
    /// What `current_clocksource` read back right after the switch (equal to `clocksource`).
    pub read_back: String,
    /// The read cost over the rounds, as the read-cost engine estimates it
    /// ([`Estimate`]): in JSON `read_cost_ns` (the median over the rounds of
    /// `check`'s read cost, the mean read without the interference gaps),
    /// `rounds` (how many interleaved rounds measured this clocksource),
    /// `read_cost_rounds_ns` (each round's, in the order measured) and
    /// `read_cost_interval_ns` (the median's 95% interval; null under 6 rounds).
    #[serde(flatten, with = "RoundsJson")]
    #[schemars(with = "RoundsJson")]
    pub read_cost: Estimate,
    /// pg_test_timing's average loop time, ns.
    pub avg_loop_ns: f64,
    /// Loop iterations measured (reads with a forward or zero difference).
    pub loops: u64,
    pub percentiles_ns: Percentiles,
    /// Differences under 1 us, percent (PostgreSQL's rule needs more than 90).
    pub under_1us_pct: f64,
    /// Successive reads that went backwards (a fault on CLOCK_MONOTONIC).
    pub backward_steps: u64,
    /// "vdso" or "syscall": how clock_gettime was served (by clocksource name and by cost, as in `check`).
    pub clock_gettime: String,
    /// Why it is judged a syscall, when it is.
    pub syscall_fallback: Option<String>,
    /// PostgreSQL's pg_test_timing rule (over 90% of reads under 1 us and an average loop under 100
    /// ns) for the system clock under this clocksource; null when nothing was measured.
    pub postgresql_rule: Option<RuleResult>,
    /// Predicted EXPLAIN ANALYZE overhead of a row-heavy count(*) reading the system clock under
    /// this clocksource (check's verdict.explain_system); null when nothing was measured.
    pub explain: Option<ExplainPrediction>,
    /// `check`'s verdict status for the system clock under this clocksource.
    pub status: Status,
    /// Whether Ctrl-C or SIGTERM cut this measurement short.
    pub interrupted: bool,
    /// What `current_clocksource` read right after the measurement.
    pub read_back_after: String,
    /// False when that is not `clocksource`: someone else (or the kernel's
    /// watchdog) changed it during the measurement, so the numbers are not
    /// this clocksource's alone.
    pub valid: bool,
    /// Why the row is invalid, one line; null when valid.
    pub invalid_reason: Option<String>,
    /// `--dsn`: EXPLAIN ANALYZE's real overhead on the server under this
    /// clocksource (`explain`'s measurement); null without `--dsn` or when
    /// the sweep stopped before it.
    pub server_explain: Option<ServerExplain>,
}

/// EXPLAIN ANALYZE measured on the server (`explain`'s pairs of TIMING OFF
/// and ON runs, its A/A control and intervals) under one clocksource, or
/// PostgreSQL 19's `timing_clock_source = tsc` once as the reference.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ServerExplain {
    /// The server's clock for EXPLAIN, as it names it: `system` (before
    /// PostgreSQL 19 the only one; on 19 `SET timing_clock_source =
    /// 'system'`), `tsc`, or the current setting (`auto (tsc)`) when the role
    /// may not SET it.
    pub clock_source: String,
    /// Whether that clock reads the kernel's clocksource (`system` does; the
    /// TSC path does not go through the kernel, so a clocksource change
    /// does not change it).
    pub follows_kernel_clocksource: bool,
    /// Median of EXPLAIN's "Execution Time" with TIMING OFF, ms.
    pub timing_off_ms: f64,
    /// Median of EXPLAIN's "Execution Time" with TIMING ON, ms.
    pub timing_on_ms: f64,
    /// The median block slowdown (TIMING ON / OFF) and its 95% interval
    /// (null below 6 blocks).
    pub slowdown: f64,
    /// The slowdown's 95% interval, low end; null below 6 blocks.
    pub slowdown_low: Option<f64>,
    /// The slowdown's 95% interval, high end; null below 6 blocks.
    pub slowdown_high: Option<f64>,
    /// What TIMING ON adds per row, ns, with the interval's ends.
    pub overhead_per_row_ns: f64,
    /// The overhead per row's 95% interval, low end, ns; null below 6 blocks.
    pub overhead_per_row_low_ns: Option<f64>,
    /// The overhead per row's 95% interval, high end, ns; null below 6 blocks.
    pub overhead_per_row_high_ns: Option<f64>,
    /// What TIMING ON adds per clock read, ns.
    pub overhead_per_read_ns: f64,
    /// Clock reads per row of the plan under EXPLAIN ANALYZE (two per node per row).
    pub clock_reads_per_row: f64,
    /// Pairs of TIMING OFF/ON runs measured (A/A control pairs apart).
    pub pairs: usize,
    /// `resolved`, `not_resolved` or `measurement_problem` (as `explain`'s).
    pub result: String,
    /// Why that result, one line.
    pub result_reason: String,
    /// What ended the runs: `precision`, `max_time`, `max_runs`, `interrupted`.
    pub stopped_by: String,
    /// This clocksource's share of `--max-time`, s.
    pub max_time_s: f64,
}

/// `--dsn`: the server the sweep ran EXPLAIN ANALYZE on.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SweepServer {
    /// `host=... port=... user=... dbname=...`.
    pub server: String,
    /// `unix_socket` or `loopback`: a remote server is refused.
    pub locality: String,
    /// As the server says it; null until it was connected to (without `--apply`).
    pub server_version: Option<String>,
    /// `server_version_num` (e.g. 150018); null until it was connected to.
    pub server_version_num: Option<u32>,
    /// What EXPLAIN ran: count(*) over a TEMP table, generate_series, or `--query`.
    pub query: String,
    /// `table`, `series` or `query`.
    pub workload: String,
    /// Rows per run (the table's, or `--query`'s largest node's).
    pub rows: u64,
    /// `--max-time`: over the whole sweep, s.
    pub max_time_s: f64,
    /// Which server clock was measured under each clocksource, and why.
    pub clock_source_note: String,
    /// PostgreSQL 19: `timing_clock_source = tsc`, measured once (under the
    /// first clocksource) as the reference; null before 19 or when the role
    /// may not SET it.
    pub tsc_reference: Option<ServerExplain>,
    /// The original clocksource measured again at the end, when the sweep
    /// measured it and another: the sweep's A/A control for the machine's
    /// drift between the runs (a change is advised only when the cheapest
    /// is apart from both of the original's runs); null otherwise.
    pub original_again: Option<ServerExplain>,
    /// `explain`'s warnings, each once, prefixed by the clocksource it came under.
    pub warnings: Vec<String>,
}

/// A row's [`Estimate`] under the JSON names of schema version 3.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(remote = "Estimate")]
struct RoundsJson {
    /// The read cost: the median over the rounds of `check`'s read cost (the
    /// mean read without the interference gaps), ns.
    #[serde(rename = "read_cost_ns")]
    median_ns: f64,
    /// How many interleaved rounds measured this clocksource.
    #[serde(getter = "rounds")]
    rounds: u32,
    /// Each round's read cost, ns, in the order measured.
    #[serde(rename = "read_cost_rounds_ns")]
    samples_ns: Vec<f64>,
    /// The 95% interval of the median read cost (order statistics); null under 6 rounds.
    #[serde(rename = "read_cost_interval_ns")]
    interval: Option<Interval>,
}

/// How many rounds an estimate is over.
fn rounds(e: &Estimate) -> u32 {
    e.samples_ns.len() as u32
}

/// How the sweep ended for the kernel's clocksource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RestoreOutcome {
    /// The original was written back and read back.
    Restored,
    /// The original was in use already: nothing written.
    InPlace,
    /// Someone else's change since the sweep's last switch was left in place.
    LeftAlone,
}

/// The clocksource clockscope recommends, and why.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// The recommended clocksource.
    pub clocksource: String,
    /// Whether it is the one in use already.
    pub in_use: bool,
    /// The numbers behind the choice, in words.
    pub why: String,
    /// The kernel parameter that makes it persistent (`clocksource=NAME`).
    pub kernel_parameter: String,
    /// Whether its read cost was told apart from the one it was compared with
    /// (95% intervals apart and a difference of at least 10%); a change is
    /// advised (`in_use` false) only then.
    pub distinguishable: bool,
    /// What was compared: `read_cost` (the system clock's read cost) or,
    /// with `--dsn`, `explain_overhead_per_row` (the server's EXPLAIN
    /// ANALYZE overhead per row).
    pub based_on: String,
}

/// Everything `clockscope sweep` found or would do.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SweepReport {
    /// `host`, `timestamp`, `tool`, `schema_version` (first in the JSON).
    #[serde(flatten)]
    pub stamp: crate::report::stamp::ReportStamp,
    /// `.../clocksource0`, under `--sysfs-root`.
    pub clocksource_dir: String,
    /// Whether those are the kernel's own files (a sysfs mount, known by its
    /// file system's magic, under whatever path): switching there changes the
    /// kernel's clocksource; otherwise it changes no clock.
    pub live_sysfs: bool,
    /// The clocksource in use before the sweep (and after it, unless `restore` is `left_alone`).
    pub original: String,
    /// available_clocksource: the clocksources the kernel could switch to, in the kernel's order.
    pub available: Vec<String>,
    /// The clocksources the sweep visits (or would visit), in order.
    pub planned: Vec<String>,
    /// Whether `--apply` was given (clocksources were switched).
    pub applied: bool,
    /// Seconds the system clock was measured under each clocksource (-d).
    pub duration_per_clocksource_s: f64,
    /// Interleaved rounds planned: each clocksource measured this many times, `duration / rounds` each.
    pub rounds: u32,
    /// ns per row of a count(*) with TIMING OFF used for the EXPLAIN predictions.
    pub baseline_row_ns: f64,
    /// Where baseline_row_ns comes from (--baseline-row-ns, or the reference benchmark).
    pub baseline_source: String,
    /// One entry per clocksource measured, in sweep order (empty without --apply; shorter than
    /// planned when interrupted).
    pub results: Vec<SweepResult>,
    /// The clocksource to use: a change from the one in use (in_use false) only when the cheapest
    /// clocksource's read-cost interval and the one in use's do not overlap and the difference is
    /// at least 10% of the read cost in use; otherwise the one in use, kept (in_use true). Null
    /// without --apply or when nothing was measured soundly.
    pub recommendation: Option<Recommendation>,
    /// How to make a clocksource persistent, and the caveats, one line each.
    pub persistence: Vec<String>,
    /// Whether Ctrl-C or SIGTERM stopped the sweep early.
    pub interrupted: bool,
    /// What happened to the original at the end; null without --apply.
    pub restore: Option<RestoreOutcome>,
    /// `current_clocksource` read at the end; null without --apply.
    pub final_clocksource: Option<String>,
    /// A change of the clocksource the sweep did not make, which stopped it (one line); null if none.
    pub changed_by_others: Option<String>,
    /// `--dsn`: the server EXPLAIN ANALYZE ran on; null without it.
    pub server: Option<SweepServer>,
}

impl SweepReport {
    /// 130 when interrupted; 1 when someone else changed the clocksource
    /// under the sweep; else 0 (a sweep reports; it does not judge).
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            exit::INTERRUPTED
        } else if self.changed_by_others.is_some() {
            exit::PROBLEM
        } else {
            exit::OK
        }
    }
}
