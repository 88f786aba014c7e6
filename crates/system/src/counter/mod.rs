//! The CPU counter (the x86-64 TSC, the ARM generic timer) as the tools
//! judge it: its calibrations, its frequency discovery and its report. The
//! reads themselves are the published `clockscope` crate's (`arch/`).
//!
//! ```text
//! calibrate::calibrate_counter(budget)      this CPU's counter against CLOCK_MONOTONIC_RAW (clockscope::calibrate)
//! calibrate::calibrate_postgresql(..)       PostgreSQL 19's algorithm, step for step
//! discover(root, linux, &Discovery)         frequency (quick), trust (full), PostgreSQL's view
//!                                           -> CounterReport { details, frequency, decision, postgres }
//! Check (Display)                           one decision line: `ok name: evidence` / `FAILED ...`
//! interposition::explanation(..)            a calibration grossly off the frequency: time is changed on its way
//! drift                                     tsc --drift: the counter against REALTIME and MONOTONIC_RAW
//! ```

pub mod calibrate;
pub mod discover;
pub mod drift;
pub mod report;
mod tsc_report;

pub use crate::evidence::interposition;
pub use discover::{discover, discover_with, Calibrator, Discovery, Mode, NativeCalibrator, TscEvidence};
pub use report::{Check, CounterDetails, CounterFrequency, CounterReport, Decision, PostgresCounter};
pub use tsc_report::detect_tsc;

pub use clockscope::{CounterKind, CounterPairVisitor, CounterVisitor};

/// This build's counter, or `None` on an architecture without one.
pub const fn native_kind() -> Option<CounterKind> {
    CounterKind::native()
}
