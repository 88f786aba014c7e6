//! What `clockscope dmesg` reports: a kernel log's TSC and clocksource
//! events and their summary ([`clockscope_system::kernel_log::Summary`]), with where
//! the log came from.

use clockscope_system::kernel_log::Summary;
use serde::Serialize;

/// Version of `docs/schema/dmesg.schema.json`.
pub const SCHEMA_VERSION: u32 = 1;

/// Where the log came from and what it says.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct DmesgReport {
    /// `/dev/kmsg` (this machine's log), the file named, or `stdin`;
    /// untrusted text (a file name), escaped where printed.
    pub source: String,
    /// Who decided bare metal or guest: `this machine` (its cpuinfo, for its
    /// own log) or `the log` (its hypervisor lines) for a saved one.
    pub machine_from: String,
    /// Why reading this machine's log stopped before its end (a record,
    /// byte or time bound); `null` when all of it was read.
    pub stopped_early: Option<String>,
    /// The interpretation shared with `check` and `tsc`.
    #[serde(flatten)]
    pub summary: Summary,
    /// `-v`: list every event with its detail lines and meaning (text only).
    #[serde(skip)]
    pub verbose: bool,
}
