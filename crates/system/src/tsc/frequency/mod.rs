//! The TSC frequency from every source, which one PostgreSQL 19 uses and
//! which one clockscope uses, and how far each source is from the one in use.
//!
//! The rules that derive a frequency from CPUID registers, PostgreSQL's and
//! Linux's, and the plausibility ranges are [`super::rules`]'s; this module
//! gathers every source into one table; `choice.rs` makes the two choices
//! and `agreement.rs` measures every source against the one in use.
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

mod agreement;
mod choice;

use super::cpuid::CpuidFacts;
use super::rules::linux::{crystal_hz_of, linux_rule_label};
pub(crate) use super::rules::{
    cpuid15_from16_khz, cpuid15_implied_khz, cpuid15_khz, cpuid16_khz, hypervisor_khz, implausible_crystal_hz,
    implausible_tsc_khz, linux_cpuid_khz,
};
pub use super::rules::{
    postgres_cpuid_khz, PostgresCpuid, PG_SOURCE_CALIBRATION, PG_SOURCE_CPUID_15, PG_SOURCE_CPUID_16,
};
pub use super::source::SourceId;
use crate::evidence::interposition;
use agreement::{agreement, mark_disagreement};
use choice::{clockscope_choice, postgresql_choice};
use serde::Serialize;

/// Disagreement beyond which a source is flagged: 500 ppm, the largest
/// frequency error the kernel's timekeeping corrects (`MAXFREQ`, 500000 ns/s,
/// in include/linux/timex.h).
pub const DISAGREEMENT_LIMIT_PPM: f64 = 500.0;

/// One source's value, or why it has none.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct FrequencySource {
    /// The label (see [`SourceId::label`]).
    pub source: &'static str,
    /// Machine-readable id.
    pub id: SourceId,
    /// The frequency in kHz, `None` when this source gives none or gives an
    /// implausible one.
    pub khz: Option<u64>,
    /// The value this source gives when it is implausible (outside
    /// `PLAUSIBLE_TSC_KHZ`, or derived from a crystal outside
    /// `PLAUSIBLE_CRYSTAL_HZ`): reported, never used.
    pub implausible_khz: Option<u64>,
    /// How the value was derived, or why there is none.
    pub note: String,
    /// Error bound of a calibration, in ppm.
    pub uncertainty_ppm: Option<f64>,
    /// Signed disagreement with the frequency in use, in ppm.
    pub ppm_vs_in_use: Option<f64>,
    /// `|ppm_vs_in_use|` > [`DISAGREEMENT_LIMIT_PPM`] (plus the uncertainty for calibrations).
    pub flagged: bool,
    /// `false` for a calibration against a kernel clock when the kernel's
    /// clocksource is the TSC itself: CLOCK_MONOTONIC(_RAW) is then the TSC
    /// scaled by the kernel's own mult/shift, so the calibration checks the
    /// kernel's arithmetic and cannot disagree with the kernel's kHz. Such a
    /// source is left out of the independent agreement ([`Agreement`]).
    pub independent: bool,
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

impl From<&crate::evidence::Calibration> for CalibrationInput {
    fn from(c: &crate::evidence::Calibration) -> Self {
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
    /// The kernel's current clocksource is the TSC itself (`tsc`): the
    /// calibrations against CLOCK_MONOTONIC(_RAW) are then checks of the
    /// kernel's arithmetic, not independent evidence.
    pub clocksource_is_counter: bool,
}

/// Which frequency PostgreSQL 19 would use.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
    /// `PLAUSIBLE_TSC_KHZ`): PostgreSQL does not check, clockscope does.
    pub implausible: bool,
}

/// Which frequency clockscope uses.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Agreement {
    /// The cross-checking sources agree.
    pub agree: bool,
    /// Which sources were compared, and the largest disagreement.
    pub evidence: String,
    /// Set when clockscope's calibration against CLOCK_MONOTONIC_RAW is more
    /// than [`GROSS_DISAGREEMENT_PPM`](interposition::GROSS_DISAGREEMENT_PPM) from the frequency in use, even where
    /// that calibration is not independent evidence (clocksource tsc):
    /// something between clockscope and the kernel changes time
    /// ([`crate::evidence::interposition`]). `agree` is then false.
    pub time_interposition: Option<String>,
}

impl Agreement {
    /// Adds supporting evidence of a time library (`LD_PRELOAD`, mapped
    /// libraries: [`crate::evidence::interposition::time_library_hints`]) to a
    /// gross disagreement; nothing without one (the hints alone decide nothing).
    pub(crate) fn add_time_library_hints(&mut self, hints: &[String]) {
        let Some(old) = self.time_interposition.take() else {
            return;
        };
        let new = format!("{old}{}", interposition::hints_text(hints));
        // The evidence starts with the interposition text (see `agreement`).
        if let Some(rest) = self.evidence.strip_prefix(old.as_str()) {
            self.evidence = format!("{new}{rest}");
        }
        self.time_interposition = Some(new);
    }
}

/// The frequency table and both choices.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct FrequencyReport {
    /// Every source, in [`SourceId::ALL`] order.
    pub sources: Vec<FrequencySource>,
    /// Best CPUID-derived kHz by Linux's rules.
    pub cpuid_tsc_khz: Option<u64>,
    /// The Linux rule `cpuid_tsc_khz` follows (or why none applies).
    pub cpuid_tsc_rule: String,
    /// PostgreSQL 19's CPUID-derived kHz.
    pub postgresql_tsc_khz: Option<u64>,
    /// PostgreSQL 19's choice.
    pub postgresql: PostgresChoice,
    /// clockscope's choice.
    pub clockscope: ClockscopeChoice,
    /// Whether the cross-checking sources agree with clockscope's choice.
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
    let c = match c {
        Ok(c) => c,
        Err(e) => return make(id, Err(e.clone())),
    };
    let mut s = make(id, c.khz.map(|k| (k, c.note.clone())).ok_or_else(|| c.note.clone()));
    s.uncertainty_ppm = c.uncertainty_ppm;
    s
}

fn make(id: SourceId, result: Result<(u64, String), String>) -> FrequencySource {
    let (khz, note) = result.map_or_else(|n| (None, n), |(k, n)| (Some(k), n));
    FrequencySource {
        source: id.label(),
        id,
        khz,
        implausible_khz: None,
        note,
        uncertainty_ppm: None,
        ppm_vs_in_use: None,
        flagged: false,
        independent: true,
    }
}

/// How the note of a calibration against the kernel's own TSC clock starts.
pub(crate) const KERNEL_ARITHMETIC_PREFIX: &str =
    "check of the kernel's arithmetic, not independent (clocksource tsc: MONOTONIC(_RAW) is the TSC scaled): ";

/// Marks the calibrations that gave a value as checks of the kernel's
/// arithmetic when the kernel's clocksource is the TSC (see
/// [`FrequencySource::independent`]).
fn mark_kernel_arithmetic(sources: &mut [FrequencySource], inputs: &FrequencyInputs) {
    if !inputs.clocksource_is_counter {
        return;
    }
    for s in sources
        .iter_mut()
        .filter(|s| matches!(s.id, SourceId::CalibrationClockscope | SourceId::CalibrationPostgres) && s.khz.is_some())
    {
        s.independent = false;
        s.note = format!("{KERNEL_ARITHMETIC_PREFIX}{}", s.note);
    }
}

/// How the note of an implausible source starts.
const IMPLAUSIBLE_PREFIX: &str = "implausible, not used: ";

/// [`make`] for a CPUID, hypervisor or kernel source: a value outside
/// [`PLAUSIBLE_TSC_KHZ`](super::rules::PLAUSIBLE_TSC_KHZ), or one derived from a crystal (`crystal_hz`)
/// outside [`PLAUSIBLE_CRYSTAL_HZ`](super::rules::PLAUSIBLE_CRYSTAL_HZ), is moved to `implausible_khz`.
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

/// Builds the frequency table and both choices from the inputs, in steps:
/// every source's value, PostgreSQL 19's choice, clockscope's choice, every
/// source's disagreement with the frequency in use, and whether the
/// cross-checking sources agree.
pub fn frequency_report(inputs: &FrequencyInputs) -> FrequencyReport {
    let mut sources = source_table(inputs);
    mark_kernel_arithmetic(&mut sources, inputs);
    let linux = inputs.cpuid.map(linux_cpuid_khz);
    let linux_id = linux.as_ref().and_then(|r| r.as_ref().ok()).map(|&(_, id, _)| id);
    // Linux's CPUID value as its source reports it: `None` when implausible.
    let cpuid_tsc_khz = linux_id.and_then(|id| sources.iter().find(|s| s.id == id).and_then(|s| s.khz));
    let cpuid_tsc_rule = match &linux {
        None => "no CPUID on this architecture".to_string(),
        Some(Ok((_, id, _))) if cpuid_tsc_khz.is_some() => linux_rule_label(*id).to_string(),
        Some(Ok((_, id, _))) => format!("{}: implausible, not used", linux_rule_label(*id)),
        Some(Err(why)) => format!("none: {why}"),
    };
    let pg_cpuid = inputs.cpuid.map(postgres_cpuid_khz);
    let postgresql_tsc_khz = pg_cpuid.as_ref().and_then(|p| p.khz);
    let postgresql = postgresql_choice(pg_cpuid.as_ref(), &sources);
    let clockscope = clockscope_choice(inputs, linux_id, &sources);
    mark_disagreement(&mut sources, &clockscope, inputs);
    let agreement = agreement(&sources, &clockscope);
    FrequencyReport {
        sources,
        cpuid_tsc_khz,
        cpuid_tsc_rule,
        postgresql_tsc_khz,
        postgresql,
        clockscope,
        agreement,
    }
}

/// Every source's value or why it has none, in [`SourceId::ALL`] order;
/// implausible CPUID, hypervisor and kernel values set aside.
fn source_table(inputs: &FrequencyInputs) -> Vec<FrequencySource> {
    let no_cpuid = || "no CPUID on this architecture".to_string();
    let from_cpuid =
        |g: fn(&CpuidFacts) -> Result<(u64, String), String>| inputs.cpuid.map_or_else(|| Err(no_cpuid()), g);
    let crystal = |id: SourceId| inputs.cpuid.and_then(|f| crystal_hz_of(id, f));
    SourceId::ALL
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
        .collect()
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
            clocksource_is_counter: false,
        });
        assert_eq!(r.clockscope.khz, None);
        assert!(!r.agreement.agree);
        assert!(!r.postgresql.tsc_usable);
        assert_eq!(r.source(SourceId::Cpuid15).note, "no CPUID on this architecture");
    }
}
