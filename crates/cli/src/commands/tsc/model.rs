//! What `clockscope tsc` measured, as written to JSON: the library's TSC or
//! generic-timer report with the evidence read beside it (NTP, `--drift`).

use clockscope_system::counter::drift::DriftReport;
use clockscope_system::linux::ntp::NtpState;
use clockscope_system::tsc::TscReport;
use serde::Serialize;
use std::path::Path;

/// Version of `tsc`'s JSON layout (`schema_version`, docs/schema/tsc.schema.json).
pub const SCHEMA_VERSION: u32 = 1;
/// Version of the aarch64 generic timer's (docs/schema/generic-timer.schema.json).
pub const GENERIC_TIMER_SCHEMA_VERSION: u32 = 1;

/// The JSON of `clockscope tsc` on x86: the report's own keys, then the
/// independent evidence read beside it.
#[derive(Serialize, schemars::JsonSchema)]
pub struct TscOutput<'a> {
    #[serde(flatten)]
    pub report: &'a TscReport,
    /// The kernel's NTP state (adjtimex, read-only); `null` for a dump or
    /// when it could not be read (`ntp_unavailable` says why).
    pub ntp: Option<NtpState>,
    /// `clockscope tsc` only: why ntp is null, else null.
    pub ntp_unavailable: Option<String>,
    /// `--drift`: the counter against REALTIME and MONOTONIC_RAW (`null` without it).
    pub drift: Option<DriftReport>,
    /// `--cpuid-dump`: the file the report was read from (named in the
    /// text; not in the JSON).
    #[serde(skip)]
    pub dump: Option<&'a Path>,
}

/// The JSON of `clockscope tsc` on aarch64: the generic timer's report, and
/// the `--drift` result only when measured (so the report is unchanged without it).
#[derive(Serialize, schemars::JsonSchema)]
pub struct GenericTimerOutput<'a> {
    #[serde(flatten)]
    pub report: &'a clockscope_system::arm::GenericTimerReport,
    /// Only with `clockscope tsc --drift SECONDS` (absent otherwise): the counter against
    /// CLOCK_REALTIME and CLOCK_MONOTONIC_RAW, ppm of CNTFRQ_EL0, with the layout of
    /// tsc.schema.json's $defs/drift.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<&'a DriftReport>,
}
