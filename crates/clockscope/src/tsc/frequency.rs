//! The TSC frequency from every source, which one PostgreSQL 19 uses and
//! which one clockscope uses, and how far each source is from the one in use.
//!
//! # CPUID rules
//! **PostgreSQL 19** ([`postgres_cpuid_khz`]): no TSC at all unless RDTSCP
//! and invariant TSC are both present. With the hypervisor bit set only
//! hypervisor leaves count: leaf 0x40000000 must report a highest leaf of
//! at least 0x40000010 and the signature "VMwareVMware" or "KVMKVMKVM\0\0\0"; then
//! 0x40000010 EAX is the kHz (0 = none). Otherwise leaf 0x15 when its ECX
//! (crystal Hz) is non-zero: EAX or EBX zero gives 0 with no fallback, else
//! kHz = (ECX / 1000) * EBX / EAX in integers. Otherwise leaf 0x16 EAX (base
//! MHz) * 1000. Otherwise PostgreSQL calibrates. The arithmetic is
//! PostgreSQL's: `uint32` (wrapping), and the result is stored in an `int32`
//! that must be > 0, else PostgreSQL calibrates (so a 1 Hz crystal, giving
//! 0, and a product that wraps to a negative `int32` both calibrate).
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
//! # Plausibility
//! A TSC frequency from CPUID, a hypervisor leaf or the kernel outside
//! [`PLAUSIBLE_TSC_KHZ`] (100 MHz to 10 GHz), or a crystal (leaf 0x15 ECX,
//! or the one derived from leaf 0x16) outside [`PLAUSIBLE_CRYSTAL_HZ`] (1 to
//! 100 MHz), is evidence of a problem (a broken or hostile hypervisor, a
//! corrupt dump), not a frequency: the source reports it as
//! `implausible_khz` with `khz` null, clockscope never uses it, and the
//! agreement check (so "frequency known and sources agree") fails. Every
//! derivation is computed in 128-bit integers, so no register values
//! overflow. PostgreSQL 19 has no such check; its own 32-bit arithmetic is
//! modelled separately ([`postgres_cpuid_khz`]).
//!
//! # Which frequency is in use
//! clockscope's choice ([`frequency_report`]): authoritative sources first, in order
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

/// TSC frequencies clockscope accepts from CPUID, a hypervisor leaf or the
/// kernel: 100 MHz to 10 GHz, in kHz. The slowest x86-64 TSCs run at a few
/// hundred MHz, the fastest CPUs at about 6 GHz.
pub const PLAUSIBLE_TSC_KHZ: std::ops::RangeInclusive<u64> = 100_000..=10_000_000;

/// Crystal (core crystal clock, leaf 0x15 ECX) frequencies clockscope
/// accepts: 1 to 100 MHz, in Hz. Real crystals are 19.2, 24, 25 or 38.4 MHz.
pub const PLAUSIBLE_CRYSTAL_HZ: std::ops::RangeInclusive<u64> = 1_000_000..=100_000_000;

/// `100 MHz-10 GHz` for messages.
fn tsc_range_text() -> String {
    format!(
        "{} MHz-{} GHz",
        PLAUSIBLE_TSC_KHZ.start() / 1000,
        PLAUSIBLE_TSC_KHZ.end() / 1_000_000
    )
}

/// `1-100 MHz` for messages.
fn crystal_range_text() -> String {
    format!(
        "{}-{} MHz",
        PLAUSIBLE_CRYSTAL_HZ.start() / 1_000_000,
        PLAUSIBLE_CRYSTAL_HZ.end() / 1_000_000
    )
}

/// Why a TSC frequency is implausible, or `None` when it is plausible.
pub fn implausible_tsc_khz(khz: u64) -> Option<String> {
    (!PLAUSIBLE_TSC_KHZ.contains(&khz)).then(|| format!("{khz} kHz is outside {}", tsc_range_text()))
}

/// Why a crystal frequency is implausible, or `None` when it is plausible.
pub fn implausible_crystal_hz(hz: u64) -> Option<String> {
    (!PLAUSIBLE_CRYSTAL_HZ.contains(&hz)).then(|| format!("crystal {hz} Hz is outside {}", crystal_range_text()))
}

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
    /// The frequency in kHz, `None` when this source gives none or gives an
    /// implausible one.
    pub khz: Option<u64>,
    /// The value this source gives when it is implausible (outside
    /// [`PLAUSIBLE_TSC_KHZ`], or derived from a crystal outside
    /// [`PLAUSIBLE_CRYSTAL_HZ`]): reported, never used.
    pub implausible_khz: Option<u64>,
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
    /// The kernel's perf mmap page TSC scale in kHz, with how it was read.
    pub perf_page_khz: Result<(u64, String), String>,
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
    /// The kHz PostgreSQL uses is outside [`PLAUSIBLE_TSC_KHZ`] (PostgreSQL
    /// itself does not check).
    pub implausible: bool,
}

/// PostgreSQL's use of a 32-bit CPUID result: stored in an `int32`
/// (`timing_tsc_frequency_khz`) that must be > 0.
fn postgres_int32_khz(value: u32) -> Option<u64> {
    let stored = value as i32;
    (stored > 0).then_some(stored as u64)
}

/// A CPUID kHz PostgreSQL uses, or the calibration fallback when its int32
/// is not > 0.
fn postgres_uses(value: u32, source: &'static str, rule: String) -> PostgresCpuid {
    match postgres_int32_khz(value) {
        Some(khz) => {
            let implausible = implausible_tsc_khz(khz);
            PostgresCpuid {
                tsc_usable: true,
                khz: Some(khz),
                source: Some(source),
                why: match &implausible {
                    Some(why) => format!(
                        "{rule} kHz; implausible ({why}), but PostgreSQL 19 has no plausibility check and uses it"
                    ),
                    None => format!("{rule} kHz"),
                },
                implausible: implausible.is_some(),
            }
        }
        None => PostgresCpuid {
            tsc_usable: true,
            khz: None,
            source: None,
            why: format!(
                "{rule}, which PostgreSQL stores in an int32 as {}: not > 0, so calibration",
                value as i32
            ),
            implausible: false,
        },
    }
}

/// PostgreSQL 19's CPUID frequency (see the module documentation).
pub fn postgres_cpuid_khz(f: &CpuidFacts) -> PostgresCpuid {
    let none = |why: String| PostgresCpuid {
        tsc_usable: true,
        khz: None,
        source: None,
        why,
        implausible: false,
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
            implausible: false,
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
            Some(k) => postgres_uses(
                k,
                PG_SOURCE_HYPERVISOR,
                format!("{} leaf 0x40000010 EAX = {k}", h.signature),
            ),
        };
    }
    if let Some(l) = f.leaf_15.filter(|l| l.ecx_crystal_hz > 0) {
        if l.eax_denominator == 0 || l.ebx_numerator == 0 {
            return none(format!(
                "leaf 0x15 ECX = {} Hz but EAX = {}, EBX = {}: 0 with no fallback to 0x16, so calibration",
                l.ecx_crystal_hz, l.eax_denominator, l.ebx_numerator
            ));
        }
        // PostgreSQL: `reg[ECX] / 1000 * reg[EBX] / reg[EAX]` in uint32.
        let khz = (l.ecx_crystal_hz / 1000).wrapping_mul(l.ebx_numerator) / l.eax_denominator;
        return postgres_uses(
            khz,
            PG_SOURCE_CPUID_15,
            format!(
                "leaf 0x15: ({} Hz / 1000) * {} / {} = {khz} in 32-bit arithmetic",
                l.ecx_crystal_hz, l.ebx_numerator, l.eax_denominator
            ),
        );
    }
    if let Some(l) = f.leaf_16.filter(|l| l.base_mhz > 0) {
        // PostgreSQL: `reg[EAX] * 1000` in uint32.
        let khz = l.base_mhz.wrapping_mul(1000);
        return postgres_uses(
            khz,
            PG_SOURCE_CPUID_16,
            format!(
                "leaf 0x15 has no crystal; leaf 0x16 base {} MHz * 1000 = {khz} in 32-bit arithmetic",
                l.base_mhz
            ),
        );
    }
    none(format!(
        "no crystal in leaf 0x15 and no base frequency in leaf 0x16 (highest basic leaf {:#x}): calibration",
        f.max_basic_leaf
    ))
}

/// Linux 4.10-5.0's crystal table for leaf 0x15 without ECX (Intel family 6).
pub fn linux_implied_crystal_khz(f: &CpuidFacts) -> Option<u32> {
    if !f.is_intel() || f.family != 6 {
        return None;
    }
    match f.model {
        0x4E | 0x5E | 0x8E | 0x9E => Some(24_000), // Skylake / Kaby Lake client
        0x55 => Some(25_000),                      // Skylake-X / Skylake-SP
        0x5C => Some(19_200),                      // Goldmont (Apollo Lake)
        0x5F => Some(25_000),                      // Goldmont-D (Denverton)
        _ => None,
    }
}

/// Leaf 0x15's ratio, or why it cannot be used.
fn leaf15_ratio(f: &CpuidFacts) -> Result<super::cpuid::Leaf15, String> {
    let l = f
        .leaf_15
        .ok_or_else(|| format!("leaf 0x15 not reported (highest basic leaf {:#x})", f.max_basic_leaf))?;
    if l.eax_denominator == 0 || l.ebx_numerator == 0 {
        return Err(format!(
            "leaf 0x15 ratio not enumerated (EAX = {}, EBX = {})",
            l.eax_denominator, l.ebx_numerator
        ));
    }
    Ok(l)
}

/// crystal * EBX / EAX in 128 bits (cannot overflow: at most 2^64 * 2^32),
/// saturated to `u64` (only reachable with a crystal beyond any plausible one).
fn ratio_khz(crystal_khz: u64, l: &super::cpuid::Leaf15) -> u64 {
    let khz = crystal_khz as u128 * l.ebx_numerator as u128 / l.eax_denominator as u128;
    u64::try_from(khz).unwrap_or(u64::MAX)
}

/// The crystal Linux derives from leaf 0x16 when 0x15 ECX is 0, in kHz:
/// base_MHz * 1000 * EAX / EBX, in 128 bits.
fn crystal_from16_khz(base_mhz: u64, l: &super::cpuid::Leaf15) -> u64 {
    let khz = base_mhz as u128 * 1000 * l.eax_denominator as u128 / l.ebx_numerator as u128;
    u64::try_from(khz).unwrap_or(u64::MAX)
}

/// The crystal a leaf-0x15 source multiplies, in Hz, for the plausibility
/// check: ECX, Linux 4.x's table value, or the one derived from leaf 0x16.
fn crystal_hz_of(id: SourceId, f: &CpuidFacts) -> Option<u64> {
    let l = leaf15_ratio(f).ok()?;
    match id {
        SourceId::Cpuid15 => (l.ecx_crystal_hz != 0).then_some(l.ecx_crystal_hz as u64),
        SourceId::Cpuid15ImpliedCrystal if l.ecx_crystal_hz == 0 => {
            linux_implied_crystal_khz(f).map(|k| k as u64 * 1000)
        }
        SourceId::Cpuid15CrystalFrom16 if l.ecx_crystal_hz == 0 => {
            let base = f.leaf_16.filter(|l16| l16.base_mhz > 0)?.base_mhz as u64;
            Some(crystal_from16_khz(base, &l).saturating_mul(1000))
        }
        _ => None,
    }
}

/// Leaf 0x15 with the crystal it enumerates: (ECX / 1000) * EBX / EAX kHz.
pub fn cpuid15_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz == 0 {
        return Err(format!(
            "crystal not enumerated (ECX = 0; ratio {}/{})",
            l.ebx_numerator, l.eax_denominator
        ));
    }
    let crystal_khz = l.ecx_crystal_hz as u64 / 1000;
    Ok((
        ratio_khz(crystal_khz, &l),
        format!(
            "crystal {} Hz (ECX) * {}/{}",
            l.ecx_crystal_hz, l.ebx_numerator, l.eax_denominator
        ),
    ))
}

/// Leaf 0x15 with Linux 4.10-5.0's model table when ECX is 0.
pub fn cpuid15_implied_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz != 0 {
        return Err("not needed: leaf 0x15 enumerates the crystal".to_string());
    }
    let crystal_khz = linux_implied_crystal_khz(f).ok_or_else(|| {
        format!(
            "{} family {:#x} model {:#x} is not in Linux 4.x's crystal table",
            f.vendor, f.family, f.model
        )
    })?;
    Ok((
        ratio_khz(crystal_khz as u64, &l),
        format!(
            "model {:#x}: {} kHz crystal * {}/{}",
            f.model, crystal_khz, l.ebx_numerator, l.eax_denominator
        ),
    ))
}

/// Leaf 0x15 with the crystal derived from leaf 0x16, in integer kHz as Linux
/// computes it: crystal = base_MHz * 1000 * EAX / EBX; TSC = crystal * EBX / EAX.
pub fn cpuid15_from16_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz != 0 {
        return Err("not needed: leaf 0x15 enumerates the crystal".to_string());
    }
    let base_mhz = match f.leaf_16 {
        Some(l16) if l16.base_mhz > 0 => l16.base_mhz as u64,
        Some(_) => return Err("leaf 0x16 base frequency is 0".to_string()),
        None => {
            return Err(format!(
                "leaf 0x16 not reported (highest basic leaf {:#x})",
                f.max_basic_leaf
            ))
        }
    };
    let crystal_khz = crystal_from16_khz(base_mhz, &l);
    if crystal_khz == 0 {
        return Err("derived crystal is 0 kHz".to_string());
    }
    Ok((
        ratio_khz(crystal_khz, &l),
        format!(
            "crystal {base_mhz} MHz * {}/{} = {crystal_khz} kHz, * {}/{}",
            l.eax_denominator, l.ebx_numerator, l.ebx_numerator, l.eax_denominator
        ),
    ))
}

/// Leaf 0x16 base frequency: EAX MHz * 1000.
pub fn cpuid16_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    match f.leaf_16 {
        Some(l) if l.base_mhz > 0 => Ok((
            l.base_mhz as u64 * 1000,
            format!(
                "nominal base {} MHz (max {} MHz, bus {} MHz)",
                l.base_mhz, l.max_mhz, l.bus_mhz
            ),
        )),
        Some(_) => Err("leaf 0x16 is zero".to_string()),
        None => Err(format!(
            "leaf 0x16 not reported (highest basic leaf {:#x})",
            f.max_basic_leaf
        )),
    }
}

/// Hypervisor leaf 0x40000010 EAX, whatever the hypervisor.
pub fn hypervisor_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    if !f.hypervisor_bit {
        return Err("no hypervisor bit (leaf 1 ECX bit 31)".to_string());
    }
    let h = f
        .hypervisor
        .as_ref()
        .ok_or_else(|| "hypervisor leaf 0x40000000 not read".to_string())?;
    let pg = if h.is_vmware_or_kvm() {
        "PostgreSQL accepts this signature"
    } else {
        "PostgreSQL ignores it: not VMwareVMware/KVMKVMKVM"
    };
    match h.timing_leaf_tsc_khz {
        None => Err(format!(
            "\"{}\" highest leaf {:#010x} < 0x40000010",
            h.signature, h.max_leaf
        )),
        Some(0) => Err(format!("\"{}\" leaf 0x40000010 EAX = 0", h.signature)),
        Some(k) => Ok((k as u64, format!("\"{}\" EAX; {pg}", h.signature))),
    }
}

/// Current Linux's `native_calibrate_tsc` (see the module documentation):
/// the kHz and which of the 0x15 sources it amounts to.
pub fn linux_cpuid_khz(f: &CpuidFacts) -> Result<(u64, SourceId, String), String> {
    if !f.is_intel() {
        return Err(format!(
            "Linux reads the TSC frequency from CPUID on Intel only ({})",
            f.vendor
        ));
    }
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz != 0 {
        return cpuid15_khz(f).map(|(k, n)| (k, SourceId::Cpuid15, n));
    }
    if f.family == 6 && f.model == 0x5F {
        // Denverton: no crystal and no leaf 0x16; the kernel hardcodes 25 MHz.
        return Ok((
            ratio_khz(25_000, &l),
            SourceId::Cpuid15ImpliedCrystal,
            format!(
                "Goldmont-D: 25000 kHz crystal * {}/{}",
                l.ebx_numerator, l.eax_denominator
            ),
        ));
    }
    cpuid15_from16_khz(f).map(|(k, n)| (k, SourceId::Cpuid15CrystalFrom16, n))
}

/// Which frequency PostgreSQL 19 would use.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PostgresChoice {
    /// Whether PostgreSQL has a TSC at all (RDTSCP and invariant TSC).
    pub tsc_usable: bool,
    /// The frequency, kHz.
    pub khz: Option<u64>,
    /// PostgreSQL's `frequency_source` string.
    pub source: Option<&'static str>,
    /// Why.
    pub why: String,
    /// The frequency PostgreSQL uses is implausible (outside
    /// [`PLAUSIBLE_TSC_KHZ`]): PostgreSQL does not check, clockscope does.
    pub implausible: bool,
}

/// Which frequency clockscope uses.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockscopeChoice {
    /// The frequency in use, kHz (`None`: no trustworthy frequency).
    pub khz: Option<u64>,
    /// The source it came from.
    pub source: Option<SourceId>,
    /// The source's label.
    pub source_label: Option<&'static str>,
    /// Why this source.
    pub why: String,
}

/// Whether the sources that measure the actual TSC rate agree with the
/// frequency in use within [`DISAGREEMENT_LIMIT_PPM`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Agreement {
    pub agree: bool,
    /// Which sources were compared, and the largest disagreement.
    pub evidence: String,
}

/// The frequency table and both choices.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FrequencyReport {
    /// Every source, in [`SourceId::ALL`] order.
    pub sources: Vec<FrequencySource>,
    /// Best CPUID-derived kHz by Linux's rules.
    pub cpuid_tsc_khz: Option<u64>,
    /// PostgreSQL 19's CPUID-derived kHz.
    pub postgresql_tsc_khz: Option<u64>,
    pub postgresql: PostgresChoice,
    pub clockscope: ClockscopeChoice,
    pub agreement: Agreement,
}

impl FrequencyReport {
    /// The entry of one source.
    pub fn source(&self, id: SourceId) -> &FrequencySource {
        self.sources
            .iter()
            .find(|s| s.id == id)
            .expect("every source is listed")
    }
}

fn calibration_source(id: SourceId, c: &Result<CalibrationInput, String>) -> FrequencySource {
    let mut s = match c {
        Ok(c) => match c.khz {
            Some(k) => make(id, Ok((k, c.note.clone()))),
            None => make(id, Err(c.note.clone())),
        },
        Err(e) => make(id, Err(e.clone())),
    };
    if let Ok(c) = c {
        s.uncertainty_ppm = c.uncertainty_ppm;
    }
    s
}

fn make(id: SourceId, result: Result<(u64, String), String>) -> FrequencySource {
    let (khz, note) = match result {
        Ok((k, n)) => (Some(k), n),
        Err(n) => (None, n),
    };
    FrequencySource {
        source: id.label(),
        id,
        khz,
        implausible_khz: None,
        note,
        uncertainty_ppm: None,
        ppm_vs_in_use: None,
        flagged: false,
    }
}

/// How the note of an implausible source starts.
const IMPLAUSIBLE_PREFIX: &str = "implausible, not used: ";

/// [`make`] for a CPUID, hypervisor or kernel source: a value outside
/// [`PLAUSIBLE_TSC_KHZ`], or one derived from a crystal (`crystal_hz`)
/// outside [`PLAUSIBLE_CRYSTAL_HZ`], is moved to `implausible_khz`.
fn make_checked(id: SourceId, result: Result<(u64, String), String>, crystal_hz: Option<u64>) -> FrequencySource {
    let mut s = make(id, result);
    if let Some(k) = s.khz {
        let why = match crystal_hz.and_then(implausible_crystal_hz) {
            Some(crystal) => Some(format!("{crystal} ({}; gives {k} kHz)", s.note)),
            None => implausible_tsc_khz(k).map(|why| format!("{why} ({})", s.note)),
        };
        if let Some(why) = why {
            s.note = format!("{IMPLAUSIBLE_PREFIX}{why}");
            s.khz = None;
            s.implausible_khz = Some(k);
        }
    }
    s
}

fn hz_of(source: &FrequencySource, inputs: &FrequencyInputs) -> Option<f64> {
    let cal_hz = |c: &Result<CalibrationInput, String>| c.as_ref().ok().and_then(|c| c.hz);
    let hz = match source.id {
        SourceId::CalibrationClockscope => cal_hz(&inputs.calibration),
        SourceId::CalibrationPostgres => cal_hz(&inputs.postgres_calibration),
        _ => None,
    };
    hz.map(|h| h as f64).or(source.khz.map(|k| k as f64 * 1000.0))
}

/// The implausible sources, `cpuid 0x15 gives 18446742798104265 kHz (...)`,
/// joined; `None` when there is none.
fn implausible_text(sources: &[FrequencySource]) -> Option<String> {
    let parts: Vec<String> = sources
        .iter()
        .filter(|s| s.implausible_khz.is_some())
        .map(|s| format!("{}: {}", s.source, s.note.trim_start_matches(IMPLAUSIBLE_PREFIX)))
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Builds the frequency table and both choices from the inputs.
pub fn frequency_report(inputs: &FrequencyInputs) -> FrequencyReport {
    let no_cpuid = || "no CPUID on this architecture".to_string();
    let from_cpuid =
        |g: fn(&CpuidFacts) -> Result<(u64, String), String>| inputs.cpuid.map_or_else(|| Err(no_cpuid()), g);
    let crystal = |id: SourceId| inputs.cpuid.and_then(|f| crystal_hz_of(id, f));
    let mut sources: Vec<FrequencySource> = SourceId::ALL
        .iter()
        .map(|&id| match id {
            SourceId::Cpuid15 => make_checked(id, from_cpuid(cpuid15_khz), crystal(id)),
            SourceId::Cpuid15ImpliedCrystal => make_checked(id, from_cpuid(cpuid15_implied_khz), crystal(id)),
            SourceId::Cpuid15CrystalFrom16 => make_checked(id, from_cpuid(cpuid15_from16_khz), crystal(id)),
            SourceId::Cpuid16 => make_checked(id, from_cpuid(cpuid16_khz), None),
            SourceId::Hypervisor40000010 => make_checked(id, from_cpuid(hypervisor_khz), None),
            SourceId::KernelPerfPage => make_checked(id, inputs.perf_page_khz.clone(), None),
            SourceId::KernelLog => make_checked(id, inputs.kernel_log_khz.clone(), None),
            SourceId::CalibrationClockscope => calibration_source(id, &inputs.calibration),
            SourceId::CalibrationPostgres => calibration_source(id, &inputs.postgres_calibration),
        })
        .collect();

    let linux = inputs.cpuid.map(linux_cpuid_khz);
    let linux_id = linux.as_ref().and_then(|r| r.as_ref().ok()).map(|&(_, id, _)| id);
    // Linux's CPUID value as its source reports it: `None` when implausible.
    let cpuid_tsc_khz = linux_id.and_then(|id| sources.iter().find(|s| s.id == id).and_then(|s| s.khz));
    let pg_cpuid = inputs.cpuid.map(postgres_cpuid_khz);
    let postgresql_tsc_khz = pg_cpuid.as_ref().and_then(|p| p.khz);

    // PostgreSQL 19's choice.
    let postgresql = match &pg_cpuid {
        None => PostgresChoice {
            tsc_usable: false,
            khz: None,
            source: None,
            why: "PostgreSQL 19 has TSC support on x86-64 only".to_string(),
            implausible: false,
        },
        Some(p) if !p.tsc_usable => PostgresChoice {
            tsc_usable: false,
            khz: None,
            source: None,
            why: p.why.clone(),
            implausible: false,
        },
        Some(p) if p.khz.is_some() => PostgresChoice {
            tsc_usable: true,
            khz: p.khz,
            source: p.source,
            why: p.why.clone(),
            implausible: p.implausible,
        },
        Some(p) => {
            let cal = &sources
                .iter()
                .find(|s| s.id == SourceId::CalibrationPostgres)
                .expect("listed");
            PostgresChoice {
                tsc_usable: true,
                khz: cal.khz,
                source: cal.khz.map(|_| PG_SOURCE_CALIBRATION),
                why: match cal.khz {
                    Some(k) => format!("{}; its calibration gives {k} kHz", p.why),
                    None => format!("{}; its calibration: {}", p.why, cal.note),
                },
                implausible: false,
            }
        }
    };

    // clockscope's choice.
    let hypervisor = inputs.cpuid.is_some_and(|f| f.hypervisor_bit);
    let mut order: Vec<SourceId> = Vec::new();
    if hypervisor {
        order.push(SourceId::Hypervisor40000010);
    }
    if let Some(id) = linux_id {
        order.push(id);
    }
    if !hypervisor {
        order.push(SourceId::Hypervisor40000010);
    }
    order.extend([SourceId::KernelPerfPage, SourceId::KernelLog]);
    let khz_of = |id: SourceId| sources.iter().find(|s| s.id == id).and_then(|s| s.khz);
    let authoritative = order.iter().copied().find(|&id| khz_of(id).is_some());
    let clockscope = match authoritative {
        _ if inputs.cpuid.is_none() => ClockscopeChoice {
            khz: None,
            source: None,
            source_label: None,
            why: "no CPUID on this architecture: the TSC is x86's".to_string(),
        },
        Some(id) => ClockscopeChoice {
            khz: khz_of(id),
            source: Some(id),
            source_label: Some(id.label()),
            why: format!(
                "first authoritative source with a value, in the order {}",
                order.iter().map(|i| i.label()).collect::<Vec<_>>().join(" > ")
            ),
        },
        None => {
            let cal = sources
                .iter()
                .find(|s| s.id == SourceId::CalibrationClockscope)
                .expect("listed");
            match cal.khz {
                Some(k) => ClockscopeChoice {
                    khz: Some(k),
                    source: Some(SourceId::CalibrationClockscope),
                    source_label: Some(SourceId::CalibrationClockscope.label()),
                    why: "no authoritative source (CPUID, hypervisor leaf, kernel); calibration converged, used as the last resort".to_string(),
                },
                None => ClockscopeChoice {
                    khz: None,
                    source: None,
                    source_label: None,
                    why: format!(
                        "no authoritative source (CPUID, hypervisor leaf, kernel){} and no converged calibration ({})",
                        implausible_text(&sources).map_or(String::new(), |t| format!("; implausible: {t}")),
                        cal.note
                    ),
                },
            }
        }
    };

    // Disagreement of every source with the frequency in use.
    let in_use_hz = clockscope.source.and_then(|id| {
        let s = sources.iter().find(|s| s.id == id)?;
        hz_of(s, inputs)
    });
    if let Some(base) = in_use_hz.filter(|&h| h > 0.0) {
        for s in sources.iter_mut() {
            if let Some(hz) = hz_of(s, inputs) {
                let ppm = (hz - base) / base * 1e6;
                s.ppm_vs_in_use = Some(ppm);
                s.flagged = ppm.abs() > DISAGREEMENT_LIMIT_PPM + s.uncertainty_ppm.unwrap_or(0.0);
            }
        }
    }

    let agreement = match clockscope.source {
        // An implausible value is evidence of a problem whatever is in use.
        _ if implausible_text(&sources).is_some() => Agreement {
            agree: false,
            evidence: format!(
                "implausible, not used: {}",
                implausible_text(&sources).unwrap_or_default()
            ),
        },
        None => Agreement {
            agree: false,
            evidence: "no frequency in use".to_string(),
        },
        Some(chosen) => {
            let others: Vec<&FrequencySource> = sources
                .iter()
                .filter(|s| s.id != chosen && s.id.is_cross_check() && s.khz.is_some())
                .collect();
            let bad: Vec<String> = others
                .iter()
                .filter(|s| s.flagged)
                .map(|s| format!("{} {:+.0} ppm", s.source, s.ppm_vs_in_use.unwrap_or(0.0)))
                .collect();
            if others.is_empty() {
                Agreement {
                    agree: true,
                    evidence: format!("{} is the only source; nothing to cross-check it with", chosen.label()),
                }
            } else if bad.is_empty() {
                let worst = others
                    .iter()
                    .filter_map(|s| s.ppm_vs_in_use.map(|p| (p.abs(), s.source)))
                    .fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a });
                Agreement {
                    agree: true,
                    evidence: format!(
                        "{} source(s) within {DISAGREEMENT_LIMIT_PPM} ppm of {}; largest {:.1} ppm ({})",
                        others.len(),
                        chosen.label(),
                        worst.0,
                        worst.1
                    ),
                }
            } else {
                Agreement {
                    agree: false,
                    evidence: format!(
                        "disagree with {} by more than {DISAGREEMENT_LIMIT_PPM} ppm: {}",
                        chosen.label(),
                        bad.join(", ")
                    ),
                }
            }
        }
    };

    FrequencyReport {
        sources,
        cpuid_tsc_khz,
        postgresql_tsc_khz,
        postgresql,
        clockscope,
        agreement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_cpuid_there_is_no_tsc_frequency() {
        // A kernel log line on a non-x86 machine is not a TSC frequency.
        let r = frequency_report(&FrequencyInputs {
            cpuid: None,
            perf_page_khz: Err("no TSC".to_string()),
            kernel_log_khz: Ok((2_599_998, "log".to_string())),
            calibration: Err("no TSC".to_string()),
            postgres_calibration: Err("no TSC".to_string()),
        });
        assert_eq!(r.clockscope.khz, None);
        assert!(!r.agreement.agree);
        assert!(!r.postgresql.tsc_usable);
        assert_eq!(r.source(SourceId::Cpuid15).note, "no CPUID on this architecture");
    }
}
