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
//! at [`instant::init`], in at most 100 ms (then each reading is one byte
//! load, a predicted branch and the counter read). Unless
//! `CLOCKSCOPE_CLOCK=system` forces CLOCK_MONOTONIC, that first use, on
//! x86-64 Linux, executes CPUID, reads a few small files under `/sys` and
//! `/proc`, reads the kernel log (`/dev/kmsg`, non-blocking, bounded in
//! records; an unreadable log is evidence missing, not an error), calls
//! `perf_event_open(2)` for the perf user page's TSC conversion (mapped,
//! read, unmapped and closed; refused under `perf_event_paranoid` it is
//! evidence missing), and calibrates the counter against
//! CLOCK_MONOTONIC_RAW for 5 to 50 ms. On aarch64 it reads CNTFRQ_EL0 and
//! cross-checks it the same way. A program that must not pay this at its
//! first measurement calls [`instant::init`] at start-up; details in
//! [`instant`] and `instant::detect`.
//!
//! # Layers
//!
//! Each layer imports only the layers above it in this list (the test
//! `crates/cli/tests/layers.rs`, `LIBRARY_LAYERS`, enforces it):
//!
//! 1. [`cpu`]: the raw instructions (RDTSC, RDTSCP, CPUID, CNTVCT_EL0); it
//!    imports nothing.
//! 2. [`escape`] (untrusted text made safe to print), [`input`] (every input
//!    file read bounded: regular files only, a size cap per kind),
//!    [`ticks`], [`convert`] (ticks-to-ns fixed point, exact to 1 ns over all
//!    `u64`), [`stats`] (medians and their distribution-free confidence
//!    intervals).
//! 3. [`kernel_log`]: a kernel log (this machine's or a pasted one) read in
//!    every paste style, every TSC/clocksource message format since 3.x
//!    recognised, summarised and explained: plain text in.
//! 4. [`linux`]: evidence the kernel publishes (sysfs, /proc, `/dev/kmsg`,
//!    the perf page, cgroups), read under a root path so tests use a fake
//!    tree; switching the clocksource for `sweep` (fake roots only in tests).
//! 5. [`evidence`]: what the counter's judges (`tsc`, `arm`) and its
//!    gatherer (`counter`) share: a calibration's result, one decision
//!    line, the signs of time interposition.
//! 6. [`arm`] (the ARM generic timer: MIDR decoding, core homogeneity, known
//!    errata, frequency cross-checks, the trust decision) and [`tsc`] (CPUID
//!    decoding, the TSC frequency from every source, PostgreSQL's `auto`
//!    policy and clockscope's own trust decision).
//! 7. [`clock`] (every clock source: POSIX clocks, the counter's reads as
//!    sources, a scripted clock for tests) and [`counter`] (the one place
//!    for CPU-counter platform code: the fenced reads, the calibration, one
//!    frequency discovery with a calibration budget, one
//!    [`CounterReport`](counter::CounterReport) with its checks).
//! 8. [`mod@measure`]: PostgreSQL 19's pg_test_timing loop, its histogram and
//!    what disturbed it.
//! 9. [`crosscpu`] (whether a clock agrees across CPUs: the kernel's warp
//!    test and a ping-pong offset estimate per CPU pair, planned by
//!    topology, judged and summarised by package), [`predict`] (EXPLAIN
//!    ANALYZE's timing overhead: PostgreSQL's per-row instrumentation
//!    modelled and measured on this machine) and [`instant`] (the library
//!    as a fast clock for other programs).
//!
//! # Trade-offs
//! The TSC (or ARM generic timer) is 1.5-3x cheaper to read than a vDSO
//! clock_gettime, but it is only correct when its frequency is known and it is
//! invariant and synchronised across CPUs. clockscope reports every piece of
//! evidence for that and decides with all of it (AND, not OR).
#![deny(missing_docs)]

pub mod arm;
pub mod clock;
pub mod convert;
pub mod counter;
pub mod cpu;
pub mod crosscpu;
pub mod escape;
pub mod evidence;
pub mod forward;
pub mod input;
pub mod instant;
pub mod kernel_log;
pub mod linux;
pub mod measure;
pub mod predict;
pub mod stats;
pub mod ticks;
pub mod tsc;

pub use clock::{ClockError, ClockId, ClockSource, ClockVisitor};
pub use convert::Scale;
pub use instant::Instant;
pub use measure::{measure, Control, Histogram, Measurement};
pub use ticks::Ticks;
