//! A calibration's result ([`Calibration`], the published crate's): the
//! counter's frequency against a reference clock, its error bound and how it
//! ended. The calibrations themselves run in [`crate::counter::calibrate`];
//! the TSC and generic-timer judges read their results from here.

pub use clockscope::Calibration;

/// `Calibration::method` of [`calibrate_postgresql`](crate::counter::calibrate::calibrate_postgresql).
pub const METHOD_POSTGRESQL: &str = "PostgreSQL 19 (cumulative estimate every 100 passes, 10 stable steps)";
/// `Calibration::method` of clockscope's bracketed calibration.
pub const METHOD_BRACKETED: &str = Calibration::BRACKETED;

/// PostgreSQL's time limit: `TSC_CALIBRATION_MAX_NS`, 50 ms.
pub const PG_MAX_NS: u64 = 50_000_000;
