//! The CPU counter (the x86-64 TSC, the ARM generic timer): the one place
//! for its platform code, its calibration, its frequency discovery and its
//! report.
//!
//! ```text
//! arch::read_fast(), arch::read_ordered()   Instant's reads: RDTSC/RDTSCP, CNTVCT_EL0/ISB;CNTVCT_EL0
//! arch::rdtsc(), rdtscp(), lfence_rdtsc()   x86-64 (and CPUID); cntvct(), isb_cntvct(), cntfrq_hz() on aarch64
//! arch::visit_ordered(scale, v)             the ordered read as a ClockSource (calibration, cross-CPU)
//! arch::visit_pair(scale, v)                PostgreSQL 19's precise and fast reads (pg_test_timing, explain)
//! calibrate::calibrate_counter(budget)      this CPU's counter against CLOCK_MONOTONIC_RAW
//! discover(root, linux, &Discovery)         frequency (quick), trust (full), PostgreSQL's view
//!                                           -> CounterReport { details, frequency, decision, postgres }
//! Check (Display)                           one decision line: `ok name: evidence` / `FAILED ...`
//! interposition::explanation(..)            a calibration grossly off the frequency: time is changed on its way
//! ```
//!
//! Platform code is fenced per layer: `arch` is `x86_64.rs`, `aarch64.rs`
//! or `fallback.rs` (no counter; the reads are CLOCK_MONOTONIC). The
//! instructions themselves are [`crate::cpu`]'s (re-exported from `arch`),
//! which the clock sources of [`crate::clock`] also call; this layer sits
//! above `clock` and the hot path of [`crate::instant`] above it.

#[cfg_attr(target_arch = "x86_64", path = "x86_64.rs")]
#[cfg_attr(target_arch = "aarch64", path = "aarch64.rs")]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), path = "fallback.rs")]
pub mod arch;
pub mod calibrate;
pub mod discover;
pub mod drift;
pub mod report;
mod tsc_report;

pub use crate::evidence::interposition;
pub use discover::{discover, discover_with, Calibrator, Discovery, Mode, NativeCalibrator, TscEvidence};
pub use report::{Check, CounterDetails, CounterFrequency, CounterReport, Decision, PostgresCounter};
pub use tsc_report::detect_tsc;

use crate::clock::ClockSource;
use serde::Serialize;

/// Which CPU counter a machine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CounterKind {
    /// The x86-64 time-stamp counter.
    Tsc,
    /// The ARM generic timer (CNTVCT_EL0).
    GenericTimer,
}

/// This build's counter, or `None` on an architecture without one.
pub const fn native_kind() -> Option<CounterKind> {
    arch::KIND
}

/// Receives one counter read as a concrete, copyable [`ClockSource`] (from
/// [`arch::visit_ordered`]); its reads are raw ticks, its scale the one given.
pub trait CounterVisitor {
    /// What [`CounterVisitor::visit`] returns.
    type Output;
    /// Called once with the counter's read as a clock source.
    fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, counter: C) -> Self::Output;
}

/// Receives a counter's precise and fast reads (from [`arch::visit_pair`]).
pub trait CounterPairVisitor {
    /// What [`CounterPairVisitor::visit`] returns.
    type Output;
    /// Called once with the precise and the fast read.
    fn visit<P: ClockSource, F: ClockSource>(self, precise: P, fast: F) -> Self::Output;
}
