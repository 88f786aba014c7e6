//! A calibration's result ([`Calibration`]): the counter's frequency
//! against a reference clock, its error bound and how it ended. The
//! calibrations themselves run in [`crate::counter::calibrate`]; the TSC and
//! generic-timer judges read their results from here.

use serde::Serialize;

/// The result of a calibration.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Calibration {
    /// Counter frequency in kHz (rounded to nearest; PostgreSQL's truncated);
    /// `None` when the calibration did not converge (see `note`).
    pub khz: Option<u64>,
    /// Counter frequency in Hz (rounded to nearest); `None` when not converged.
    pub hz: Option<u64>,
    /// Bound on the relative error against the reference, in ppm (`None`
    /// for PostgreSQL's algorithm, which has none).
    pub uncertainty_ppm: Option<f64>,
    /// Reference time the calibration took.
    pub elapsed_ns: u64,
    /// Counter reads taken.
    pub samples: u64,
    /// How it ended: converged and why, or why not.
    pub note: String,
    /// Which algorithm ran.
    pub method: &'static str,
    /// The counter's display name (e.g. `RDTSCP`).
    pub counter: &'static str,
    /// The reference's display name (e.g. `clock_gettime (CLOCK_MONOTONIC_RAW)`).
    pub reference: &'static str,
}

/// `Calibration::method` of [`calibrate_postgresql`](crate::counter::calibrate::calibrate_postgresql).
pub const METHOD_POSTGRESQL: &str = "PostgreSQL 19 (cumulative estimate every 100 passes, 10 stable steps)";
/// `Calibration::method` of [`calibrate`](crate::counter::calibrate::calibrate()).
pub const METHOD_BRACKETED: &str = "clockscope (tightest bracketed reads at both ends of a window)";

impl Calibration {
    /// A calibration that could not run (no counter, wrong architecture).
    pub fn unavailable(note: impl Into<String>, method: &'static str) -> Calibration {
        Calibration {
            khz: None,
            hz: None,
            uncertainty_ppm: None,
            elapsed_ns: 0,
            samples: 0,
            note: note.into(),
            method,
            counter: "",
            reference: "",
        }
    }

    /// Whether a frequency was found.
    pub fn converged(&self) -> bool {
        self.khz.is_some()
    }

    /// Signed error of this calibration against `khz_truth`, in ppm.
    pub fn error_ppm_vs_khz(&self, khz_truth: u64) -> Option<f64> {
        let hz = self.hz.map(|h| h as f64).or(self.khz.map(|k| k as f64 * 1000.0))?;
        let truth = khz_truth as f64 * 1000.0;
        (truth > 0.0).then(|| (hz - truth) / truth * 1e6)
    }
}

/// PostgreSQL's time limit: `TSC_CALIBRATION_MAX_NS`, 50 ms.
pub const PG_MAX_NS: u64 = 50_000_000;
