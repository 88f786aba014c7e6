//! The generic timer's frequency: CNTFRQ_EL0, its resolution, and the cross-checks against the kernel's rate.
//!
//! CNTFRQ_EL0 is written by firmware; the hardware does not use it. Linux
//! reads it too, except when the device tree's timer node has a
//! `clock-frequency` property, which then wins. Three independent views of
//! "the rate the kernel converts with" are compared with it here:
//! - the device tree's `clock-frequency` (exact);
//! - `/proc/cpuinfo` BogoMIPS: arm64 Linux sets `lpj_fine = rate / HZ` and
//!   prints `lpj / (500000 / HZ)` with two decimals, so rate ~= BogoMIPS x 500,000
//!   (read low by up to 5 kHz plus HZ; 0.04% with HZ=300) — a coarse check;
//! - a calibration against CLOCK_MONOTONIC_RAW, which the kernel derives from
//!   this same counter with its own rate: any disagreement beyond the
//!   calibration's uncertainty means CNTFRQ_EL0 is not the kernel's rate.

use serde::Serialize;

/// Below this the counter is coarse: one tick is over 100 ns, so a single
/// pair of reads around a fast plan node mostly measures quantisation.
pub const COARSE_BELOW_HZ: u64 = 10_000_000;

/// BogoMIPS-derived rates within this share of CNTFRQ_EL0 agree (covers the
/// two-decimal print, the `lpj` truncation and HZ=300's rounding, 0.04%).
pub(crate) const BOGOMIPS_TOLERANCE_PPM: f64 = 1000.0;

/// A calibrated rate disagrees with CNTFRQ_EL0 when it is off by more than
/// this plus its own uncertainty. Both clocks count the same crystal, so an
/// honest rate agrees to well under a ppm; 100 ppm leaves room for read
/// jitter in short calibrations and still catches a mis-programmed CNTFRQ
/// (those are off by percent, e.g. 19.2 vs 24 MHz).
pub(crate) const CALIBRATION_TOLERANCE_PPM: f64 = 100.0;

/// Resolution of a counter at `hz`: one tick in nanoseconds (None for 0 Hz).
pub fn resolution_ns(hz: u64) -> Option<f64> {
    (hz > 0).then(|| 1e9 / hz as f64)
}

/// `41.67`, `1`, `1000`: two decimals, trailing zeros dropped.
pub(crate) fn format_ns(ns: f64) -> String {
    let s = format!("{ns:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The warning for a coarse counter, or None at 10 MHz and above (and at 0 Hz,
/// which is reported as unusable instead).
pub fn coarse_warning(hz: u64) -> Option<String> {
    if hz == 0 || hz >= COARSE_BELOW_HZ {
        return None;
    }
    let res = resolution_ns(hz)?;
    Some(format!(
        "coarse: single reads useless for EXPLAIN: each read is only accurate to {} ns (CNTFRQ_EL0 = {hz} Hz, below \
{} MHz)",
        format_ns(res),
        COARSE_BELOW_HZ / 1_000_000
    ))
}

/// The counter rate the kernel's BogoMIPS implies, in Hz (BogoMIPS x 500,000),
/// from the first arm64 processor block ("CPU implementer" present) of
/// `/proc/cpuinfo`. Parsed exactly from its two decimals.
pub fn bogomips_hz(cpuinfo: &str) -> Option<(String, u64)> {
    cpuinfo
        .split("\n\n")
        .filter(|block| {
            block
                .lines()
                .any(|l| l.split(':').next().is_some_and(|k| k.trim() == "CPU implementer"))
        })
        .find_map(|block| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "BogoMIPS").then(|| v.trim().to_string())
            })
        })
        .and_then(|text| {
            let (whole, frac) = text.split_once('.').unwrap_or((&text, "0"));
            let whole: u64 = whole.parse().ok()?;
            let frac2: u64 = format!("{frac:0<2}").get(..2)?.parse().ok()?;
            Some((text.clone(), whole * 500_000 + frac2 * 5_000))
        })
}

/// Relative difference of `other_hz` from `cntfrq_hz`, in ppm (positive: other is faster).
pub fn disagreement_ppm(cntfrq_hz: u64, other_hz: f64) -> Option<f64> {
    (cntfrq_hz > 0).then(|| (other_hz - cntfrq_hz as f64) / cntfrq_hz as f64 * 1e6)
}

/// A measured counter rate to compare with CNTFRQ_EL0 (from
/// `crate::counter::calibrate` run on CNTVCT_EL0 against CLOCK_MONOTONIC_RAW).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CalibrationEvidence {
    /// The reference clock's display name, e.g. `clock_gettime (CLOCK_MONOTONIC_RAW)`.
    pub reference: String,
    /// The counter's rate the calibration measured, in Hz.
    pub calibrated_hz: f64,
    /// The calibration's own uncertainty.
    pub uncertainty_ppm: f64,
}

impl CalibrationEvidence {
    /// From [`crate::counter::calibrate`]'s result: only a converged calibration
    /// with an error bound counts (PostgreSQL's method has none), else None.
    pub(crate) fn from_calibration(c: &crate::evidence::Calibration) -> Option<CalibrationEvidence> {
        Some(CalibrationEvidence {
            reference: c.reference.to_string(),
            calibrated_hz: c.hz? as f64,
            uncertainty_ppm: c.uncertainty_ppm?,
        })
    }

    /// Whether the calibrated rate agrees with `cntfrq_hz` within
    /// [`CALIBRATION_TOLERANCE_PPM`] plus the calibration's uncertainty.
    pub(crate) fn agrees_with(&self, cntfrq_hz: u64) -> bool {
        disagreement_ppm(cntfrq_hz, self.calibrated_hz)
            .is_some_and(|d| d.abs() <= CALIBRATION_TOLERANCE_PPM + self.uncertainty_ppm.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolutions() {
        assert!((resolution_ns(24_000_000).unwrap() - 41.6667).abs() < 1e-3);
        assert_eq!(format_ns(resolution_ns(24_000_000).unwrap()), "41.67");
        assert_eq!(resolution_ns(1_000_000_000), Some(1.0));
        assert_eq!(format_ns(1.0), "1");
        assert_eq!(format_ns(1000.0), "1000");
        assert_eq!(format_ns(resolution_ns(19_200_000).unwrap()), "52.08");
        assert_eq!(resolution_ns(0), None);
    }

    #[test]
    fn coarse_only_below_10_mhz() {
        let w = coarse_warning(1_000_000).unwrap();
        assert!(w.starts_with("coarse: single reads useless for EXPLAIN"), "{w}");
        assert!(w.contains("accurate to 1000 ns"), "{w}");
        assert!(coarse_warning(9_999_999).is_some());
        assert!(coarse_warning(10_000_000).is_none());
        assert!(coarse_warning(0).is_none());
    }

    #[test]
    fn bogomips_is_parsed_exactly_from_arm_blocks_only() {
        let arm = "processor\t: 0\nBogoMIPS\t: 243.75\nCPU implementer\t: 0x41\n\n";
        assert_eq!(bogomips_hz(arm), Some(("243.75".to_string(), 121_875_000)));
        let apple = "processor : 0\nBogoMIPS : 48.00\nCPU implementer : 0x61\n";
        assert_eq!(bogomips_hz(apple).map(|b| b.1), Some(24_000_000));
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nbogomips\t: 5199.99\n";
        assert_eq!(bogomips_hz(x86), None);
        assert_eq!(
            bogomips_hz("BogoMIPS : 2.5\nCPU implementer : 0x41").map(|b| b.1),
            Some(1_250_000)
        );
    }

    #[test]
    fn only_bounded_calibrations_are_evidence() {
        use crate::evidence::calibration::{Calibration, METHOD_BRACKETED};
        assert_eq!(
            CalibrationEvidence::from_calibration(&Calibration::unavailable("no counter", METHOD_BRACKETED)),
            None
        );
        let mut c = Calibration::unavailable("", METHOD_BRACKETED);
        c.reference = "clock_gettime (CLOCK_MONOTONIC_RAW)";
        c.hz = Some(24_000_001);
        c.khz = Some(24_000);
        assert_eq!(CalibrationEvidence::from_calibration(&c), None, "no error bound");
        c.uncertainty_ppm = Some(2.5);
        let e = CalibrationEvidence::from_calibration(&c).unwrap();
        assert_eq!((e.calibrated_hz, e.uncertainty_ppm), (24_000_001.0, 2.5));
        assert_eq!(e.reference, "clock_gettime (CLOCK_MONOTONIC_RAW)");
    }

    #[test]
    fn calibration_agreement() {
        let c = CalibrationEvidence {
            reference: "clock_gettime (CLOCK_MONOTONIC_RAW)".into(),
            calibrated_hz: 24_000_600.0,
            uncertainty_ppm: 5.0,
        };
        assert!((disagreement_ppm(24_000_000, c.calibrated_hz).unwrap() - 25.0).abs() < 1e-9);
        assert!(c.agrees_with(24_000_000));
        assert!(!c.agrees_with(19_200_000));
        assert!(!c.agrees_with(0));
    }
}
