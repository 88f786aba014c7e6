//! The TSC frequency from every source, which one PostgreSQL 19 uses and
//! which one clockscope uses, and how far each source is from the one in use.
//!
//! # CPUID rules
//! **PostgreSQL 19** ([`postgres_cpuid_khz`]): no TSC at all unless RDTSCP
//! and invariant TSC are both present. With the hypervisor bit set only
//! hypervisor leaves count: leaf 0x40000000 must report a highest leaf
//! >= 0x40000010 and the signature "VMwareVMware" or "KVMKVMKVM\0\0\0"; then
//! 0x40000010 EAX is the kHz (0 = none). Otherwise leaf 0x15 when its ECX
//! (crystal Hz) is non-zero: EAX or EBX zero gives 0 with no fallback, else
//! kHz = (ECX / 1000) * EBX / EAX in integers. Otherwise leaf 0x16 EAX (base
//! MHz) * 1000. Otherwise PostgreSQL calibrates.
//!
//! **Linux** ([`linux_cpuid_khz`], `native_calibrate_tsc`): Intel only, leaf
//! 0x15 needs EAX and EBX; crystal = ECX / 1000 kHz; when ECX is 0, Goldmont-D
//! (model 0x5F) gets 25 MHz, otherwise crystal = 0x16 base MHz * 1000 * EAX /
//! EBX (integer kHz, as the kernel computes it); TSC kHz = crystal * EBX / EAX.
//! Kernels 4.10-5.0 instead used a model table when ECX was 0 (24 MHz for
//! Skylake/Kaby Lake client 0x4E/0x5E/0x8E/0x9E, 25 MHz Skylake-X 0x55, 19.2
//! MHz Goldmont 0x5C, 25 MHz Goldmont-D 0x5F); the table was dropped because
//! 0x55's 25 MHz was wrong (commit b51120309348, "Fix erroneous TSC rate on
//! Skylake Xeon"), and is reported here as its own source for comparison.
//!
//! # Which frequency is in use
//! clockscope's choice ([`choose`]): authoritative sources first, in order
//! (bare metal) CPUID by Linux's rules, the hypervisor leaf 0x40000010, the
//! kernel's perf mmap page (the scale the kernel itself uses for the TSC),
//! the kernel log's "tsc: Detected/Refined"; under a hypervisor the
//! hypervisor leaf comes first. Our calibration against CLOCK_MONOTONIC_RAW
//! cross-checks the choice and is used only as a last resort, and only when it
//! converged. Every source's disagreement with the frequency in use is given
//! in ppm; more than [`DISAGREEMENT_LIMIT_PPM`] is flagged.

use super::cpuid::CpuidFacts;
use serde::Serialize;

/// Disagreement beyond which a source is flagged: 500 ppm, the largest
/// frequency error the kernel's timekeeping corrects (`MAXFREQ`, 500000 ns/s,
/// in include/linux/timex.h).
pub const DISAGREEMENT_LIMIT_PPM: f64 = 500.0;

/// PostgreSQL's `frequency_source` strings.
pub const PG_SOURCE_CPUID_15: &str = "x86, cpuid 0x15";
pub const PG_SOURCE_CPUID_16: &str = "x86, cpuid 0x16";
pub const PG_SOURCE_HYPERVISOR: &str = "x86, hypervisor, cpuid 0x40000010";
pub const PG_SOURCE_CALIBRATION: &str = "x86, calibration";

/// Every frequency source clockscope knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
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
    pub const fn is_cross_check(self) -> bool {
        !matches!(
            self,
            SourceId::Cpuid15ImpliedCrystal | SourceId::Cpuid16 | SourceId::CalibrationPostgres
        )
    }
}

/// One source's value, or why it has none.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrequencySource {
    /// The label (see [`SourceId::label`]).
    pub source: &'static str,
    /// Machine-readable id.
    pub id: SourceId,
    /// The frequency in kHz, `None` when this source gives none.
    pub khz: Option<u64>,
    /// How the value was derived, or why there is none.
    pub note: String,
    /// Error bound of a calibration, in ppm.
    pub uncertainty_ppm: Option<f64>,
    /// Signed disagreement with the frequency in use, in ppm.
    pub ppm_vs_in_use: Option<f64>,
    /// `|ppm_vs_in_use|` > [`DISAGREEMENT_LIMIT_PPM`] (plus the uncertainty for calibrations).
    pub flagged: bool,
}

/// A calibration's outcome as the frequency table needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationInput {
    /// kHz when it converged.
    pub khz: Option<u64>,
    /// Hz when it converged (for ppm comparisons finer than 1 kHz).
    pub hz: Option<u64>,
    /// Error bound, when the method has one.
    pub uncertainty_ppm: Option<f64>,
    /// How it ended.
    pub note: String,
}

impl From<&super::calibrate::Calibration> for CalibrationInput {
    fn from(c: &super::calibrate::Calibration) -> Self {
        CalibrationInput {
            khz: c.khz,
            hz: c.hz,
            uncertainty_ppm: c.uncertainty_ppm,
            note: c.note.clone(),
        }
    }
}

/// Everything the frequency table is built from. Each live source is the
/// value or the reason there is none (e.g. "not read: analysing a CPUID dump").
#[derive(Clone, Debug)]
pub struct FrequencyInputs<'a> {
    /// Decoded CPUID, `None` on CPUs without CPUID.
    pub cpuid: Option<&'a CpuidFacts>,
    /// The kernel's perf mmap page TSC scale in kHz.
    pub perf_page_khz: Result<u64, String>,
    /// The kernel log's TSC frequency in kHz and the message it came from.
    pub kernel_log_khz: Result<(u64, String), String>,
    /// clockscope's calibration.
    pub calibration: Result<CalibrationInput, String>,
    /// PostgreSQL 19's calibration.
    pub postgres_calibration: Result<CalibrationInput, String>,
}

/// PostgreSQL 19's CPUID outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PostgresCpuid {
    /// RDTSCP and invariant TSC are both present (otherwise PostgreSQL has no TSC).
    pub tsc_usable: bool,
    /// The CPUID-derived kHz, `None` when PostgreSQL falls back to calibration.
    pub khz: Option<u64>,
    /// PostgreSQL's `frequency_source` string when CPUID gave the frequency.
    pub source: Option<&'static str>,
    /// Which rule applied.
    pub why: String,
}

/// PostgreSQL 19's CPUID frequency (see the module documentation).
pub fn postgres_cpuid_khz(f: &CpuidFacts) -> PostgresCpuid {
    let none = |why: String| PostgresCpuid {
        tsc_usable: true,
        khz: None,
        source: None,
        why,
    };
    if !(f.rdtscp && f.invariant_tsc) {
        let missing: Vec<&str> = [
            (!f.rdtscp).then_some("RDTSCP"),
            (!f.invariant_tsc).then_some("invariant TSC"),
        ]
        .into_iter()
        .flatten()
        .collect();
        return PostgresCpuid {
            tsc_usable: false,
            khz: None,
            source: None,
            why: format!("no {}: PostgreSQL does not use the TSC", missing.join(" and no ")),
        };
    }
    if f.hypervisor_bit {
        let Some(h) = &f.hypervisor else {
            return none("hypervisor bit set but leaf 0x40000000 is empty: calibration".to_string());
        };
        if !h.is_vmware_or_kvm() {
            return none(format!(
                "hypervisor \"{}\" is neither VMwareVMware nor KVMKVMKVM: only hypervisor leaves count, so calibration",
                h.signature
            ));
        }
        return match h.timing_leaf_tsc_khz {
            None => none(format!(
                "hypervisor {} reports highest leaf {:#010x} < 0x40000010: calibration",
                h.signature, h.max_leaf
            )),
            Some(0) => none(format!(
                "hypervisor {} leaf 0x40000010 EAX is 0: calibration",
                h.signature
            )),
            Some(k) => PostgresCpuid {
                tsc_usable: true,
                khz: Some(k as u64),
                source: Some(PG_SOURCE_HYPERVISOR),
                why: format!("{} leaf 0x40000010 EAX = {k} kHz", h.signature),
            },
        };
    }
    if let Some(l) = f.leaf_15.filter(|l| l.ecx_crystal_hz > 0) {
        if l.eax_denominator == 0 || l.ebx_numerator == 0 {
            return none(format!(
                "leaf 0x15 ECX = {} Hz but EAX = {}, EBX = {}: 0 with no fallback to 0x16, so calibration",
                l.ecx_crystal_hz, l.eax_denominator, l.ebx_numerator
            ));
        }
        let khz = (l.ecx_crystal_hz as u64 / 1000) * l.ebx_numerator as u64 / l.eax_denominator as u64;
        return PostgresCpuid {
            tsc_usable: true,
            khz: Some(khz),
            source: Some(PG_SOURCE_CPUID_15),
            why: format!(
                "leaf 0x15: ({} Hz / 1000) * {} / {} = {khz} kHz",
                l.ecx_crystal_hz, l.ebx_numerator, l.eax_denominator
            ),
        };
    }
    if let Some(l) = f.leaf_16.filter(|l| l.base_mhz > 0) {
        let khz = l.base_mhz as u64 * 1000;
        return PostgresCpuid {
            tsc_usable: true,
            khz: Some(khz),
            source: Some(PG_SOURCE_CPUID_16),
            why: format!(
                "leaf 0x15 has no crystal; leaf 0x16 base {} MHz * 1000 = {khz} kHz",
                l.base_mhz
            ),
        };
    }
    none(format!(
        "no crystal in leaf 0x15 and no base frequency in leaf 0x16 (highest basic leaf {:#x}): calibration",
        f.max_basic_leaf
    ))
}
