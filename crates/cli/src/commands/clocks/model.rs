//! What `clockscope clocks` found: every clock source, whether it works here,
//! and its resolution.

use clockscope_system::interference::Interference;
use serde::Serialize;

/// Version of the JSON layout (`schema_version`); bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// How long each working clock is read to find its observed resolution (20 ms).
pub const PROBE_NS: u64 = 20_000_000;

/// One clock's line.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ClockEntry {
    /// Name for `--clock`.
    pub name: String,
    /// Display name (PostgreSQL's where it has one).
    pub display_name: String,
    /// Whether it can be read here.
    pub works: bool,
    /// Why not, when it cannot.
    pub reason: Option<String>,
    /// clock_getres(2), ns (POSIX clocks).
    pub clock_getres_ns: Option<u64>,
    /// One counter tick, ns (counters: 1e9 / frequency).
    pub tick_ns: Option<f64>,
    /// Smallest non-zero step seen in a 20 ms run, ns.
    pub observed_resolution_ns: Option<u64>,
    /// Average loop time in that run, ns.
    pub avg_loop_ns: Option<f64>,
    /// Mean read cost in that run with the interference gaps taken out, ns
    /// (as `check`'s `read_cost_ns`).
    pub read_cost_ns: Option<f64>,
    /// What the machine took away from that run (as `check`'s).
    pub interference: Option<Interference>,
}

/// The list.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ClocksReport {
    /// The CPU counter frequency used to convert counter ticks to ns (TSC or CNTFRQ_EL0), kHz; null
    /// when unknown or there is no counter.
    pub counter_frequency_khz: Option<u64>,
    /// Where counter_frequency_khz came from (a TSC frequency source label, a calibration, or
    /// arm64, CNTFRQ_EL0); null with it.
    pub counter_frequency_source: Option<String>,
    /// All fourteen clocks, in this order: monotonic, monotonic_raw, monotonic_coarse, realtime,
    /// realtime_coarse, boottime, tai, gettimeofday, std_instant, rdtsc, rdtscp, lfence_rdtsc,
    /// cntvct, isb_cntvct.
    pub clocks: Vec<ClockEntry>,
}
