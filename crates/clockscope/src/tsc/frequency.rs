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

fn ratio_khz(crystal_khz: u64, l: &super::cpuid::Leaf15) -> u64 {
    crystal_khz * l.ebx_numerator as u64 / l.eax_denominator as u64
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
    let crystal_khz = base_mhz * 1000 * l.eax_denominator as u64 / l.ebx_numerator as u64;
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
        note,
        uncertainty_ppm: None,
        ppm_vs_in_use: None,
        flagged: false,
    }
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

/// Builds the frequency table and both choices from the inputs.
pub fn frequency_report(inputs: &FrequencyInputs) -> FrequencyReport {
    let no_cpuid = || "no CPUID on this architecture".to_string();
    let from_cpuid =
        |g: fn(&CpuidFacts) -> Result<(u64, String), String>| inputs.cpuid.map_or_else(|| Err(no_cpuid()), g);
    let mut sources: Vec<FrequencySource> = SourceId::ALL
        .iter()
        .map(|&id| match id {
            SourceId::Cpuid15 => make(id, from_cpuid(cpuid15_khz)),
            SourceId::Cpuid15ImpliedCrystal => make(id, from_cpuid(cpuid15_implied_khz)),
            SourceId::Cpuid15CrystalFrom16 => make(id, from_cpuid(cpuid15_from16_khz)),
            SourceId::Cpuid16 => make(id, from_cpuid(cpuid16_khz)),
            SourceId::Hypervisor40000010 => make(id, from_cpuid(hypervisor_khz)),
            SourceId::KernelPerfPage => make(id, inputs.perf_page_khz.clone()),
            SourceId::KernelLog => make(id, inputs.kernel_log_khz.clone()),
            SourceId::CalibrationClockscope => calibration_source(id, &inputs.calibration),
            SourceId::CalibrationPostgres => calibration_source(id, &inputs.postgres_calibration),
        })
        .collect();

    let linux = inputs.cpuid.map(linux_cpuid_khz);
    let cpuid_tsc_khz = linux.as_ref().and_then(|r| r.as_ref().ok()).map(|&(k, _, _)| k);
    let pg_cpuid = inputs.cpuid.map(postgres_cpuid_khz);
    let postgresql_tsc_khz = pg_cpuid.as_ref().and_then(|p| p.khz);

    // PostgreSQL 19's choice.
    let postgresql = match &pg_cpuid {
        None => PostgresChoice {
            tsc_usable: false,
            khz: None,
            source: None,
            why: "PostgreSQL 19 has TSC support on x86-64 only".to_string(),
        },
        Some(p) if !p.tsc_usable => PostgresChoice {
            tsc_usable: false,
            khz: None,
            source: None,
            why: p.why.clone(),
        },
        Some(p) if p.khz.is_some() => PostgresChoice {
            tsc_usable: true,
            khz: p.khz,
            source: p.source,
            why: p.why.clone(),
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
            }
        }
    };

    // clockscope's choice.
    let hypervisor = inputs.cpuid.is_some_and(|f| f.hypervisor_bit);
    let linux_id = linux.as_ref().and_then(|r| r.as_ref().ok()).map(|&(_, id, _)| id);
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
                        "no authoritative source (CPUID, hypervisor leaf, kernel) and no converged calibration ({})",
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
