//! What `clockscope clocks` found: every clock source, whether it works here,
//! and its resolution.

use clockscope_system::interference::Interference;
use serde::Serialize;

/// Version of the JSON layout (`schema_version`); bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// How long each working clock is read to find its observed resolution (20 ms).
pub const PROBE_NS: u64 = 20_000_000;

/// One clock's line.
#[derive(Clone, Debug, Serialize)]
pub struct ClockEntry {
    /// Name for `--clock`.
    pub name: String,
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
#[derive(Clone, Debug, Serialize)]
pub struct ClocksReport {
    pub counter_frequency_khz: Option<u64>,
    pub counter_frequency_source: Option<String>,
    pub clocks: Vec<ClockEntry>,
}
