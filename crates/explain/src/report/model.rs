//! The report's model: what one run measured, per clock source, and the
//! inputs [`super::build`] turns into it. Serialised as-is for `--format json`.

use crate::clockcost::MachineClocks;
use crate::connect::Locality;
use crate::measure::{Skipped, SourceRuns, StopReason};
use crate::nodes::NodeCost;
use crate::session::Setting;
use crate::timing_settings::model::{PageReadReference, ServerSetting, TimingSettings};
use serde::Serialize;

/// Version of `explain`'s JSON layout (`schema_version`, docs/schema/explain.schema.json).
pub const SCHEMA_VERSION: u32 = 2;

/// Whether a source's result is stated (see `arith::judge_result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// The slowdown's 95% interval lies above 1.0 and above the A/A
    /// control's: the numbers are stated.
    Resolved,
    /// The interval reaches the control's (or 1.0), or there is none: the
    /// effect is not told apart from the machine's own variation here.
    NotResolved,
    /// The interval lies wholly below 1.0 and the control's: TIMING ON
    /// measured faster, which timing cannot make it; the runs are wrong.
    MeasurementProblem,
}

/// The A/A control of one source: pairs of TIMING OFF against TIMING OFF in
/// the same schedule, blocks as the measured pairs' (`measure`).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AaControl {
    /// Control pairs run (a count).
    pub pairs: usize,
    /// Control blocks of two pairs (a count).
    pub blocks: usize,
    /// The median block ratio (second role / first); null without a block.
    pub median: Option<f64>,
    /// The control's extent: its 95% interval, or with fewer than 6 blocks
    /// its range (min to max); null without a block.
    pub low: Option<f64>,
    /// The control's extent, upper end; null without a block.
    pub high: Option<f64>,
    /// `interval` or `range`: which of the two `low`/`high` are.
    pub extent: &'static str,
    /// Every control run, in order (roles as in `measure::ControlRuns`).
    pub runs_a_ms: Vec<f64>,
    /// The control's runs in TIMING ON's role (also TIMING OFF), ms, in order; pair k ran this one
    /// first when k is odd.
    pub runs_b_ms: Vec<f64>,
}

/// The formula behind `clock_reads_per_run`, for the reader of the JSON.
pub const CLOCK_READS_FORMULA: &str = "2 * sum over plan nodes of (Actual Rows * Actual Loops + Actual Loops); a parallel plan's on its critical path (the nodes above each Gather, the busiest process's below it)";

/// One clock source's results. Times are EXPLAIN's "Execution Time".
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SourceResult {
    /// As the server names it: "system", "tsc", "auto (tsc)", ...
    pub clock_source: String,
    /// How the source came to be used.
    pub how: String,
    /// Median Execution Time with TIMING OFF, ms.
    pub timing_off_ms: f64,
    /// Fastest TIMING OFF run, ms.
    pub timing_off_ms_min: f64,
    /// Slowest TIMING OFF run, ms.
    pub timing_off_ms_max: f64,
    /// Median Execution Time with TIMING ON, ms.
    pub timing_on_ms: f64,
    /// Fastest TIMING ON run, ms.
    pub timing_on_ms_min: f64,
    /// Slowest TIMING ON run, ms.
    pub timing_on_ms_max: f64,
    /// The median block slowdown (`noise.slowdown_median`): the one
    /// estimate every figure below is derived from.
    pub slowdown: f64,
    /// Its 95% interval (`noise.slowdown_ci_*`); null below 6 blocks.
    pub slowdown_low: Option<f64>,
    /// The 95% interval's upper end of slowdown, a ratio; null below 6 blocks.
    pub slowdown_high: Option<f64>,
    /// Whether the estimate is stated, and why not.
    pub result: Resolution,
    /// The result in words, with the intervals it compared (e.g. "not resolved here: the machine's
    /// own variation (A/A 0.95x to 1.06x) is as large as the effect (1.01x to 1.10x)").
    pub result_reason: String,
    /// (slowdown - 1) x TIMING OFF x 1e6 / rows, ns.
    pub overhead_per_row_ns: f64,
    /// overhead_per_row_ns at slowdown_low, ns; null without an interval.
    pub overhead_per_row_low_ns: Option<f64>,
    /// overhead_per_row_ns at slowdown_high, ns; null without an interval.
    pub overhead_per_row_high_ns: Option<f64>,
    /// (slowdown - 1) x TIMING OFF x 1e6 / clock reads per run, ns.
    pub overhead_per_read_ns: f64,
    /// overhead_per_read_ns at slowdown_low, ns; null without an interval.
    pub overhead_per_read_low_ns: Option<f64>,
    /// overhead_per_read_ns at slowdown_high, ns; null without an interval.
    pub overhead_per_read_high_ns: Option<f64>,
    /// Clock reads in one TIMING ON run that add wall time, counted from the plan (see
    /// clock_reads_formula): all of them for a serial plan; for a parallel plan, the nodes above
    /// each Gather plus the busiest process's below it.
    pub clock_reads_per_run: u64,
    /// clock_reads_per_run / rows, reads per row.
    pub clock_reads_per_row: f64,
    /// This machine's clock used for the prediction.
    pub predicted_clock: Option<String>,
    /// What one read adds per row in this machine's instrumentation model
    /// (`added_ns_per_read`); null when the model did not resolve it (see
    /// `prediction_status`).
    pub predicted_per_read_ns: Option<f64>,
    /// clock_reads_per_row x predicted_per_read_ns, ns per row; null without a prediction.
    pub predicted_overhead_per_row_ns: Option<f64>,
    /// The predicted overhead per row at the ends of the model's 95%
    /// interval; null when it has none.
    pub predicted_overhead_per_row_low_ns: Option<f64>,
    /// predicted_overhead_per_row_ns at the high end of the model's 95% interval; null without one.
    pub predicted_overhead_per_row_high_ns: Option<f64>,
    /// timing_off_ms + clock reads x predicted_per_read_ns / 1e6.
    pub predicted_timing_on_ms: Option<f64>,
    /// predicted_timing_on_ms / timing_off_ms, a ratio; null without a prediction.
    pub predicted_slowdown: Option<f64>,
    /// overhead_per_read_ns / predicted_per_read_ns, a ratio; null without a prediction.
    pub observed_over_predicted: Option<f64>,
    /// overhead_per_read_low_ns / high_ns over predicted_per_read_ns.
    pub observed_over_predicted_low: Option<f64>,
    /// overhead_per_read_high_ns / predicted_per_read_ns, a ratio; null without an interval or a
    /// prediction.
    pub observed_over_predicted_high: Option<f64>,
    /// observed / predicted paired in time: each pair of runs against the
    /// model slice that ran just before it; null without slices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_in_time: Option<PairedInTime>,
    /// "resolved", or why there is no prediction ("not resolved: ...",
    /// "not measured: ...", or no clock to predict with).
    pub prediction_status: String,
    /// The old model for comparison: pg_test_timing's back-to-back loop
    /// time, and the observed overhead per read over it.
    pub back_to_back_per_read_ns: Option<f64>,
    /// overhead_per_read_ns / back_to_back_per_read_ns, a ratio; null without it.
    pub back_to_back_observed_over_predicted: Option<f64>,
    /// Every run, in order.
    pub runs_timing_off_ms: Vec<f64>,
    /// Every TIMING ON run's Execution Time in order, ms.
    pub runs_timing_on_ms: Vec<f64>,
    /// The noise control: block slowdowns, their interval, why runs ended.
    pub noise: Noise,
    /// The A/A control the result is judged against.
    pub control: AaControl,
}

/// observed / predicted with each of the server's pairs of runs set against
/// the model slice that ran just before it (`arith`): on a machine whose
/// speed changes during the runs the two medians can come from different
/// speeds, the pairs cannot.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PairedInTime {
    /// Blocks of two pairs with a slice before each pair.
    pub pairs: usize,
    /// The median over them of (the block's ON - OFF per clock read) / (its
    /// two slices' mean added per read), a ratio.
    pub observed_over_predicted: f64,
    /// Its 95% interval (order statistics); null below 6 pairs.
    pub low: Option<f64>,
    /// Its 95% interval's high end, a ratio; null below 6 pairs.
    pub high: Option<f64>,
}

/// The noise control's result for one clock source (see `stats`).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Noise {
    /// Pairs of runs (TIMING OFF and ON, in alternating order).
    pub pairs: usize,
    /// Balanced blocks of two pairs (`measure`).
    pub blocks: usize,
    /// Median, min and max of the block slowdowns (ON / OFF of each block).
    pub slowdown_median: f64,
    /// Smallest block slowdown.
    pub slowdown_min: f64,
    /// Largest block slowdown.
    pub slowdown_max: f64,
    /// The 95% interval of the median block slowdown; null below 6 blocks.
    pub slowdown_ci_low: Option<f64>,
    /// High end of that interval; null below 6 pairs.
    pub slowdown_ci_high: Option<f64>,
    /// The interval's actual coverage (at least 0.95).
    pub slowdown_ci_coverage: Option<f64>,
    /// The interval's larger distance from the median, relative (0.05 = +-5%).
    pub slowdown_ci_half_width: Option<f64>,
    /// The precision aimed for: 0.05.
    pub target_half_width: f64,
    /// Whether slowdown_ci_half_width <= target_half_width.
    pub target_reached: bool,
    /// `precision`, `max_time`, `max_runs` or `interrupted`.
    pub stopped_by: StopReason,
    /// (max - min) / median of the TIMING OFF runs.
    pub timing_off_variation: Option<f64>,
}

/// Other work on this machine during the runs, when the server is local.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CpuContention {
    /// Share of all CPUs' time used by processes other than clockscope and
    /// the server's statements (`contention` module docs).
    pub other_busy_fraction: f64,
    /// CPUs in /proc/stat.
    pub cpus: u32,
    /// The warning threshold (0.25).
    pub warn_fraction: f64,
}

/// `--query`: where node timing's cost goes, and what auto_explain pays.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct QueryBreakdown {
    /// The clock source measured.
    pub clock_source: String,
    /// Median TIMING ON - median TIMING OFF, ms.
    pub added_ms: f64,
    /// Every plan node (plan order, from the last TIMING ON run), the
    /// added time shared by clock reads.
    pub nodes: Vec<NodeCost>,
    /// `auto_explain.log_analyze = on` with `log_timing = on` instruments
    /// every node as EXPLAIN (ANALYZE, TIMING ON) does, for every sampled
    /// statement whether or not it is logged; `log_timing = off` as TIMING OFF.
    pub auto_explain_log_timing_added_ms: f64,
    /// The same as a ratio: `clock_sources[0].slowdown`.
    pub auto_explain_log_timing_slowdown: f64,
}

/// What the TSC would give for a server that did not run on it.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TscPrediction {
    /// The predicted cost per RDTSC read: what it adds per row in the
    /// instrumentation model with PostgreSQL 19's TSC read, per read.
    pub rdtsc_per_read_ns: f64,
    /// This machine's RDTSC pg_test_timing loop time, for comparison.
    pub rdtsc_back_to_back_per_read_ns: f64,
    /// clock_reads_per_row x rdtsc_per_read_ns, ns per row.
    pub predicted_overhead_per_row_ns: f64,
    /// (TIMING OFF ms + clock reads x rdtsc_per_read_ns / 1e6) / TIMING OFF ms, a ratio.
    pub predicted_slowdown: f64,
    /// The system clock's observed/predicted ratio applied to the RDTSC cost.
    /// Null when that ratio is not resolved (the source's result).
    pub scaled_per_read_ns: Option<f64>,
    /// clock_reads_per_row x scaled_per_read_ns, ns per row. Null when the measured source's result
    /// is not resolved (nothing to scale by).
    pub scaled_overhead_per_row_ns: Option<f64>,
    /// The slowdown with scaled_per_read_ns, a ratio. Null when the measured source's result is not
    /// resolved (nothing to scale by).
    pub scaled_slowdown: Option<f64>,
    /// Which PostgreSQL reads the TSC for EXPLAIN: the server's own version
    /// only from 19; said for the server connected.
    pub used_by: String,
    /// The measured source the prediction starts from (its TIMING OFF time
    /// and clock reads).
    pub from_clock_source: String,
}

/// Everything `clockscope explain` reports.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The server's server_version, e.g. "15.18 (Debian 15.18-0+deb12u1)".
    pub server_version: String,
    /// The server's server_version_num, e.g. 150018 (190000 and above have timing_clock_source).
    pub server_version_num: u32,
    /// `SELECT version()`, escaped.
    pub server_version_full: String,
    /// `host=... port=... user=... dbname=...`.
    pub server: String,
    pub server_locality: Locality,
    /// The server settings that matter for the measurement, in this order when the server has them:
    /// track_io_timing, max_parallel_workers_per_gather, jit, timing_clock_source (PostgreSQL 19+),
    /// shared_buffers, work_mem, temp_buffers, statement_timeout (always set for the session:
    /// 30 s + 20 us per row), client_connection_check_interval (PostgreSQL 14+; set to 1s where the
    /// platform supports it), and auto_explain.log_min_duration when auto_explain is loaded and on:
    /// set to -1 for clockscope's session when the role may (superuser), so auto_explain does not
    /// instrument and log the measured statements.
    pub settings: Vec<Setting>,
    /// The server's own timing settings, judged (`timing_settings.rs`).
    pub timing_settings: TimingSettings,
    /// The statement measured: SELECT count(*) over the TEMP table or generate_series, or the
    /// user's --query as given.
    pub query: String,
    /// Rows in the TEMP table (--rows); with --query, the most rows any plan node returned (at
    /// least 1), the per-row figures' divisor.
    pub rows: u64,
    /// The TEMP table's size as estimated before it was created
    /// (`session::estimated_table_bytes`), bytes.
    pub temp_table_estimated_bytes: u64,
    /// What EXPLAIN ran on: `table` or `series` (generate_series).
    pub workload: crate::options::Workload,
    /// Why generate_series ran under `--workload auto`.
    pub workload_reason: Option<String>,
    /// The fewest measured pairs of runs (TIMING OFF and ON, in alternating order) per clock source
    /// (--runs); the noise control then goes on until the median block slowdown's 95% interval is
    /// within +-5% (at least 6 blocks) and the A/A control has 6 blocks, --max-time or 1000 pairs
    /// (clock_sources[].noise).
    pub runs: u32,
    /// Unmeasured runs per mode before the measured ones.
    pub warmup_runs: u32,
    /// The order of the runs and the A/A control, in words (`measure`).
    pub order: String,
    /// How clock_reads_per_run is counted from the TIMING ON plan.
    pub clock_reads_formula: String,
    pub this_machine: MachineClocks,
    /// How long each of this machine's clocks was measured, ns.
    pub clock_measure_ns: u64,
    /// One result per clock source measured on the server: 'system' before PostgreSQL 19; 'system'
    /// and 'tsc' (SET for the session) on PostgreSQL 19+, or the current setting when the role may
    /// not SET it.
    #[schemars(length(min = 1))]
    pub clock_sources: Vec<SourceResult>,
    /// Clock sources that could not be measured, and why.
    pub skipped_clock_sources: Vec<Skipped>,
    /// What PostgreSQL 19's TSC clock source would give for a server that did not run on it (none
    /// of clock_sources reads the TSC), from this machine's RDTSC cost; null when a measured source
    /// already reads the TSC, or without an RDTSC cost or a usable system-clock ratio.
    pub tsc_prediction: Option<TscPrediction>,
    /// Conditions that weaken the result (remote server, noise-bound runs, TIMING OFF varying by
    /// more than 10%, the 95% interval not within +-5%, other processes keeping this machine's CPUs
    /// busy, no prediction, interrupted, --max-time's deadline passing during a statement (what the
    /// server answered), this machine's measurements cut short by --max-time, the functions
    /// --allow-side-effects let run), one line each.
    pub warnings: Vec<String>,
    /// True when Ctrl-C or SIGTERM stopped the runs early (the running statement was cancelled on
    /// the server and the TEMP table dropped; exit status 130); the results cover the runs
    /// completed.
    pub interrupted: bool,
    /// `--max-time`, s.
    pub max_time_s: f64,
    /// How the slowdown's interval is computed.
    pub noise_method: String,
    /// Other work on this machine during the runs (local servers only).
    pub cpu_contention: Option<CpuContention>,
    /// `--query` only.
    pub query_breakdown: Option<QueryBreakdown>,
}

/// The inputs [`build`](super::build) turns into a report.
pub struct Inputs<'a> {
    pub server_version: &'a str,
    pub server_version_num: u32,
    pub server_version_full: &'a str,
    pub server: &'a str,
    pub locality: Locality,
    pub settings: &'a [Setting],
    /// The server's timing settings as read, and the page-cache read
    /// their I/O costs are set against.
    pub timing_settings: &'a [ServerSetting],
    pub page_read: Option<PageReadReference>,
    pub query: &'a str,
    pub rows: u64,
    pub temp_table_estimated_bytes: u64,
    pub workload: crate::options::Workload,
    pub workload_reason: Option<&'a str>,
    pub runs: u32,
    pub warmup_runs: u32,
    pub sources: &'a [SourceRuns],
    pub skipped: &'a [Skipped],
    pub machine: &'a MachineClocks,
    pub clock_measure_ns: u64,
    pub interrupted: bool,
    /// `--max-time`.
    pub max_time: std::time::Duration,
    /// Measured around the runs when the server is local.
    pub cpu_contention: Option<CpuContention>,
}
