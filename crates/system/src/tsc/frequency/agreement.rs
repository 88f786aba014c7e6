//! How far every source is from the frequency in use, and whether the
//! cross-checking sources agree with it: within [`DISAGREEMENT_LIMIT_PPM`],
//! never with an implausible source, never with a calibration grossly off
//! ([`GROSS_DISAGREEMENT_PPM`]: time changed on its way to clockscope).

use super::{
    hz_of, implausible_text, Agreement, ClockscopeChoice, FrequencyInputs, FrequencySource, SourceId,
    DISAGREEMENT_LIMIT_PPM,
};
use crate::evidence::interposition::{self, GROSS_DISAGREEMENT_PPM};

/// Sets every source's signed disagreement with the frequency in use, and
/// flags those beyond [`DISAGREEMENT_LIMIT_PPM`] (plus their uncertainty).
pub(super) fn mark_disagreement(
    sources: &mut [FrequencySource],
    clockscope: &ClockscopeChoice,
    inputs: &FrequencyInputs,
) {
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
}

/// Whether the cross-checking sources agree with the frequency in use; never
/// when any source is implausible, nor when clockscope's calibration is
/// grossly off it ([`gross_disagreement`]), independent evidence or not.
pub(super) fn agreement(sources: &[FrequencySource], clockscope: &ClockscopeChoice) -> Agreement {
    let base = cross_check_agreement(sources, clockscope);
    match gross_disagreement(sources, clockscope) {
        Some(gross) => Agreement {
            agree: false,
            evidence: format!("{gross}; {}", base.evidence),
            time_interposition: Some(gross),
        },
        None => base,
    }
}

/// `clockscope's calibration against CLOCK_MONOTONIC_RAW is -900000.0 ppm
/// from ...: ...` when that calibration (not the frequency in use itself) is
/// more than [`GROSS_DISAGREEMENT_PPM`] plus its uncertainty from the
/// frequency in use; `None` otherwise.
fn gross_disagreement(sources: &[FrequencySource], clockscope: &ClockscopeChoice) -> Option<String> {
    let chosen = clockscope.source?;
    let cal = sources
        .iter()
        .find(|s| s.id == SourceId::CalibrationClockscope && s.id != chosen && s.khz.is_some())?;
    let ppm = cal.ppm_vs_in_use?;
    let limit = GROSS_DISAGREEMENT_PPM + cal.uncertainty_ppm.unwrap_or(0.0);
    (ppm.abs() > limit).then(|| {
        format!(
            "clockscope's calibration against CLOCK_MONOTONIC_RAW is {ppm:+.1} ppm from {} (more than \
             {GROSS_DISAGREEMENT_PPM} ppm): {}",
            chosen.label(),
            interposition::explanation(!cal.independent)
        )
    })
}

/// [`agreement`] of the independent cross-checking sources alone.
fn cross_check_agreement(sources: &[FrequencySource], clockscope: &ClockscopeChoice) -> Agreement {
    let (agree, evidence) = match clockscope.source {
        // An implausible value is evidence of a problem whatever is in use.
        _ if implausible_text(sources).is_some() => (
            false,
            format!(
                "implausible, not used: {}",
                implausible_text(sources).unwrap_or_default()
            ),
        ),
        None => (false, "no frequency in use".to_string()),
        Some(chosen) => {
            let others: Vec<&FrequencySource> = sources
                .iter()
                .filter(|s| s.id != chosen && s.id.is_cross_check() && s.independent && s.khz.is_some())
                .collect();
            let arithmetic = kernel_arithmetic_text(sources, chosen);
            let bad: Vec<String> = others
                .iter()
                .filter(|s| s.flagged)
                .map(|s| format!("{} {:+.0} ppm", s.source, s.ppm_vs_in_use.unwrap_or(0.0)))
                .collect();
            if others.is_empty() {
                (
                    true,
                    format!(
                        "{} is the only independent source; nothing to cross-check it with{arithmetic}",
                        chosen.label()
                    ),
                )
            } else if bad.is_empty() {
                let worst = others
                    .iter()
                    .filter_map(|s| s.ppm_vs_in_use.map(|p| (p.abs(), s.source)))
                    .fold((0.0, ""), |a, b| if b.0 > a.0 { b } else { a });
                (
                    true,
                    format!(
                        "{} independent source(s) within {DISAGREEMENT_LIMIT_PPM} ppm of {}; largest {:.1} ppm ({}){arithmetic}",
                        others.len(),
                        chosen.label(),
                        worst.0,
                        worst.1
                    ),
                )
            } else {
                (
                    false,
                    format!(
                        "disagree with {} by more than {DISAGREEMENT_LIMIT_PPM} ppm: {}{arithmetic}",
                        chosen.label(),
                        bad.join(", ")
                    ),
                )
            }
        }
    };
    Agreement {
        agree,
        time_interposition: None,
        evidence,
    }
}

/// `"; not counted: ..."` naming the calibrations that only check the
/// kernel's arithmetic (with their ppm), or `""` when there is none.
fn kernel_arithmetic_text(sources: &[FrequencySource], chosen: SourceId) -> String {
    let parts: Vec<String> = sources
        .iter()
        .filter(|s| s.id != chosen && !s.independent && s.id.is_cross_check() && s.khz.is_some())
        .map(|s| match s.ppm_vs_in_use {
            Some(p) => format!("{} {p:+.1} ppm", s.source),
            None => s.source.to_string(),
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(
            "; not counted, a check of the kernel's arithmetic (clocksource tsc): {}",
            parts.join(", ")
        )
    }
}
