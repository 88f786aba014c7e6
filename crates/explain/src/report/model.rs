//! The report's model: what one run measured, per clock source, and the
//! inputs [`super::build`] turns into it. Serialised as-is for `--format json`.

use crate::clockcost::MachineClocks;
use crate::connect::Locality;
use crate::measure::{Skipped, SourceRuns};
use crate::session::Setting;
use crate::timing_settings::{PageReadReference, ServerSetting, TimingSettings};
use serde::Serialize;

/// The formula behind `clock_reads_per_run`, for the reader of the JSON.
pub const CLOCK_READS_FORMULA: &str = "2 * sum over plan nodes of (Actual Rows * Actual Loops + Actual Loops)";

/// One clock source's results. Times are EXPLAIN's "Execution Time".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceResult {
    /// As the server names it: "system", "tsc", "auto (tsc)", ...
    pub clock_source: String,
    /// How the source came to be used.
    pub how: String,
    pub timing_off_ms: f64,
    pub timing_off_ms_min: f64,
    pub timing_off_ms_max: f64,
    pub timing_on_ms: f64,
    pub timing_on_ms_min: f64,
    pub timing_on_ms_max: f64,
    pub slowdown: f64,
    pub overhead_per_row_ns: f64,
    pub overhead_per_read_ns: f64,
    pub clock_reads_per_run: u64,
    pub clock_reads_per_row: f64,
    /// This machine's clock used for the prediction.
    pub predicted_clock: Option<String>,
    pub predicted_per_read_ns: Option<f64>,
    pub predicted_overhead_per_row_ns: Option<f64>,
    pub predicted_slowdown: Option<f64>,
    pub observed_over_predicted: Option<f64>,
    /// Every run, in order.
    pub runs_timing_off_ms: Vec<f64>,
    pub runs_timing_on_ms: Vec<f64>,
}

/// What the TSC would give for a server that did not run on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TscPrediction {
    /// This machine's RDTSC loop time, the predicted cost per read.
    pub rdtsc_per_read_ns: f64,
    pub predicted_overhead_per_row_ns: f64,
    pub predicted_slowdown: f64,
    /// The system clock's observed/predicted ratio applied to the RDTSC cost.
    pub scaled_per_read_ns: f64,
    pub scaled_overhead_per_row_ns: f64,
    pub scaled_slowdown: f64,
    /// The measured source the prediction starts from (its TIMING OFF time
    /// and clock reads).
    pub from_clock_source: String,
}

/// Everything `clockscope explain` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub server_version: String,
    pub server_version_num: u32,
    /// `SELECT version()`, escaped.
    pub server_version_full: String,
    /// `host=... port=... user=... dbname=...`.
    pub server: String,
    pub server_locality: Locality,
    pub settings: Vec<Setting>,
    /// The server's own timing settings, judged (`timing_settings.rs`).
    pub timing_settings: TimingSettings,
    pub query: String,
    pub rows: u64,
    /// The TEMP table's size as estimated before it was created
    /// (`session::estimated_table_bytes`), bytes.
    pub temp_table_estimated_bytes: u64,
    /// What EXPLAIN ran on: `table` or `series` (generate_series).
    pub workload: crate::options::Workload,
    /// Why generate_series ran under `--workload auto`.
    pub workload_reason: Option<String>,
    pub runs: u32,
    pub warmup_runs: u32,
    pub clock_reads_formula: String,
    pub this_machine: MachineClocks,
    /// How long each of this machine's clocks was measured, ns.
    pub clock_measure_ns: u64,
    pub clock_sources: Vec<SourceResult>,
    pub skipped_clock_sources: Vec<Skipped>,
    pub tsc_prediction: Option<TscPrediction>,
    pub warnings: Vec<String>,
    pub interrupted: bool,
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
}
