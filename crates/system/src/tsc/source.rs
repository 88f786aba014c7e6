//! The names of the TSC frequency sources ([`SourceId`]): every place a
//! frequency can come from, its report label and whether it must agree with
//! the frequency in use. Below both the CPUID rules ([`super::rules`]) and the
//! frequency table ([`super::frequency`]), which name sources by it.

use serde::Serialize;

/// Every frequency source clockscope knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SourceId {
    /// Leaf 0x15 with the crystal frequency it enumerates (ECX).
    Cpuid15,
    /// Leaf 0x15 with the crystal of Linux 4.10-5.0's model table.
    Cpuid15ImpliedCrystal,
    /// Leaf 0x15 with the crystal derived from leaf 0x16 (current Linux).
    Cpuid15CrystalFrom16,
    /// Leaf 0x16 base frequency (what PostgreSQL uses when 0x15 has no crystal).
    Cpuid16,
    /// Hypervisor leaf 0x40000010 EAX.
    Hypervisor40000010,
    /// The kernel's TSC scale in the perf_event mmap page.
    KernelPerfPage,
    /// The kernel log's "tsc: Detected/Refined ... MHz".
    KernelLog,
    /// clockscope's calibration against CLOCK_MONOTONIC_RAW.
    CalibrationClockscope,
    /// PostgreSQL 19's calibration against CLOCK_MONOTONIC.
    CalibrationPostgres,
}

impl SourceId {
    /// Every source, in report order.
    pub const ALL: [SourceId; 9] = [
        SourceId::Cpuid15,
        SourceId::Cpuid15ImpliedCrystal,
        SourceId::Cpuid15CrystalFrom16,
        SourceId::Cpuid16,
        SourceId::Hypervisor40000010,
        SourceId::KernelPerfPage,
        SourceId::KernelLog,
        SourceId::CalibrationClockscope,
        SourceId::CalibrationPostgres,
    ];

    /// The label printed in reports.
    pub const fn label(self) -> &'static str {
        match self {
            SourceId::Cpuid15 => "cpuid 0x15",
            SourceId::Cpuid15ImpliedCrystal => "cpuid 0x15, Linux 4.x implied crystal",
            SourceId::Cpuid15CrystalFrom16 => "cpuid 0x15, crystal from 0x16",
            SourceId::Cpuid16 => "cpuid 0x16 base",
            SourceId::Hypervisor40000010 => "hypervisor cpuid 0x40000010",
            SourceId::KernelPerfPage => "kernel perf mmap page",
            SourceId::KernelLog => "kernel log (tsc: Detected/Refined)",
            SourceId::CalibrationClockscope => "calibration vs MONOTONIC_RAW (clockscope)",
            SourceId::CalibrationPostgres => "calibration vs MONOTONIC (PostgreSQL 19)",
        }
    }

    /// Whether this source measures the actual TSC rate and so must agree
    /// with the frequency in use for the TSC to be trusted. 0x16 is a nominal
    /// MHz figure, the 4.x table a guess per model, and PostgreSQL's
    /// calibration has a known bias of hundreds of ppm on short windows; they
    /// are reported but not held against the choice.
    pub(crate) const fn is_cross_check(self) -> bool {
        !matches!(
            self,
            SourceId::Cpuid15ImpliedCrystal | SourceId::Cpuid16 | SourceId::CalibrationPostgres
        )
    }
}
