//! clockscope: what it costs to read the time, and whether to trust the clock.
//!
//! # The timing abstraction
//!
//! ```text
//! ClockSource::now()          one reading, as cheap as possible (RDTSC)
//! ClockSource::now_ordered()  one reading not hoisted above earlier work (RDTSCP)
//! Ticks::delta_since(a)       signed tick difference; < 0 means time went backwards
//! Scale::ticks_to_ns(d)       exact (< 1 ns) integer conversion, done at the end
//! ```
//!
//! # The contract (in the spirit of PostgreSQL's `instr_time.h`)
//!
//! ```text
//! A reading (Ticks, Instant) has no epoch and is not wall time: only the
//!     difference of two readings of the same source in one process is a duration.
//! A difference is signed: a negative one is time going backwards (a warp, a
//!     step), reported, never hidden by wrapping arithmetic.
//! Ticks become nanoseconds as late as possible, once, by Scale::ticks_to_ns:
//!     integer fixed point, exact to 1 ns over all u64; the hot path never
//!     divides and never touches floats.
//! now() may run before earlier instructions finish; now_ordered() /
//!     Instant::now_precise() may not. Neither is a memory fence.
//! Ticks of different sources (or of another process's Instant) never mix.
//! Every number a report shows says where it came from (a measurement, a
//!     CPUID leaf, a kernel file), and every input read is bounded.
//! ```
//!
//! # `Instant`: what its first use does
//!
//! [`Instant`] chooses its clock once per process, at the first reading or
//! at [`Instant::init`], with [`trust()`]: CPUID, one read of the kernel's
//! `current_clocksource`, and a calibration of the counter against
//! CLOCK_MONOTONIC_RAW for at most 10 ms; nothing more. Then each reading is
//! one byte load, a predicted branch and the counter read.
//! `CLOCKSCOPE_CLOCK=system` forces CLOCK_MONOTONIC.
//!
//! # What is here
//!
//! ```text
//! Instant, trust(), Trust          a fast clock for other programs and its one decision
//! Ticks, Scale                     opaque readings; exact ticks -> ns
//! ClockSource, ClockId, visit()    every clock source, by id, monomorphised for a ClockVisitor
//! PosixClock                       clock_gettime(2)
//! Rdtsc, Rdtscp, LfenceRdtsc       the x86-64 counter reads (Cntvct, IsbCntvct on aarch64)
//! CounterKind, visit_ordered(),    this build's counter and its reads as concrete sources
//!   visit_pair()
//! measure(), Histogram             PostgreSQL 19's pg_test_timing loop over any source
//! calibrate(), calibrate_with()    the counter's frequency with a bound on its error
//! ```
//!
//! The only `unsafe` is in `arch/` (the counter instructions, one file per
//! architecture) and `clock/posix.rs` (clock_gettime). The tools' evidence
//! readers, kernel-log reader, TSC policy, cross-CPU tests and EXPLAIN
//! model live in unpublished crates of the same workspace
//! (`clockscope-system`, `clockscope-pg`).
//!
//! # Trade-offs
//! The TSC (or ARM generic timer) is 1.5-3x cheaper to read than a vDSO
//! clock_gettime, but it is only correct when its frequency is known and it is
//! invariant and synchronised across CPUs. [`trust()`] requires all of it
//! (AND, not OR).
#![deny(missing_docs)]

#[cfg_attr(target_arch = "x86_64", path = "arch/x86_64.rs")]
#[cfg_attr(target_arch = "aarch64", path = "arch/aarch64.rs")]
#[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), path = "arch/fallback.rs")]
mod arch;
mod calibrate;
mod clock;
mod convert;
mod counter;
mod instant;
mod measure;
mod ticks;
mod trust;

#[cfg(target_arch = "aarch64")]
pub use arch::{Cntvct, IsbCntvct};
#[cfg(target_arch = "x86_64")]
pub use arch::{LfenceRdtsc, Rdtsc, Rdtscp};
pub use calibrate::{calibrate, calibrate_with, Calibration};
#[cfg(any(test, feature = "testing"))]
pub use clock::ScriptedClock;
pub use clock::{visit, ClockError, ClockId, ClockSource, ClockVisitor, PosixClock};
pub use convert::Scale;
pub use counter::{visit_ordered, visit_pair, CounterKind, CounterPairVisitor, CounterVisitor};
pub use instant::Instant;
pub use measure::{measure, BackwardSteps, Control, ElapsedSource, Histogram, Measurement, Percentile, Progress};
pub use ticks::Ticks;
pub use trust::{trust, Trust};
