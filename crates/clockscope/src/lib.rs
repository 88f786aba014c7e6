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
//! Rules of use, as in PostgreSQL's `instr_time.h`: readings are only useful
//! as differences of the same source; convert a difference to nanoseconds as
//! late as possible; the hot path never divides or touches floats.
//!
//! # Layout
//! - [`counter`]: the one place for CPU-counter platform code: the reads
//!   (RDTSC, RDTSCP, LFENCE;RDTSC, CNTVCT_EL0, ISB;CNTVCT_EL0) fenced per
//!   platform, the calibration, one frequency discovery with a calibration
//!   budget (quick, full, PostgreSQL 19's view) and one
//!   [`CounterReport`](counter::CounterReport) with its [`Check`](counter::Check)s.
//! - [`clock`]: every clock source (POSIX clocks, and the counter's reads as
//!   sources); a scripted clock for tests.
//! - [`convert`]: ticks-to-ns fixed point, exact to 1 ns over all `u64`.
//! - [`mod@measure`]: PostgreSQL 19's pg_test_timing loop and its histogram.
//! - [`predict`]: EXPLAIN ANALYZE's timing overhead: PostgreSQL's per-row
//!   instrumentation modelled and measured on this machine.
//! - [`stats`]: medians and their distribution-free confidence intervals.
//! - [`tsc`]: CPUID decoding, TSC frequency from every source, PostgreSQL's
//!   `auto` policy and clockscope's own trust decision.
//! - [`instant`]: the library as a fast clock for other programs:
//!   [`Instant`] reads the TSC / generic timer when clockscope trusts it,
//!   CLOCK_MONOTONIC otherwise, chosen once per process in bounded time
//!   (the counter layer's reads and discovery).
//! - [`arm`]: the ARM generic timer: MIDR decoding, core homogeneity, known
//!   counter errata, frequency cross-checks and the trust decision.
//! - [`crosscpu`]: whether a clock agrees across CPUs: the kernel's warp test
//!   and a ping-pong offset estimate per CPU pair.
//! - [`escape`]: untrusted text (dumps, kernel log, server messages) made
//!   safe to print in every output format.
//! - [`input`]: every input file read bounded: regular files only (no FIFO,
//!   socket or device), through a size cap per kind of input.
//! - [`kernel_log`]: a kernel log (this machine's or a pasted one) read in
//!   every paste style, every TSC/clocksource message format since 3.x
//!   recognised, summarised and explained: one interpretation for `check`,
//!   `tsc` and `dmesg`.
//! - [`linux`]: evidence the kernel publishes (sysfs, /proc, dmesg, the perf
//!   page), read under a root path so tests use a fake tree.
//!
//! # Trade-offs
//! The TSC (or ARM generic timer) is 1.5-3x cheaper to read than a vDSO
//! clock_gettime, but it is only correct when its frequency is known and it is
//! invariant and synchronised across CPUs. clockscope reports every piece of
//! evidence for that and decides with all of it (AND, not OR).

pub mod arm;
pub mod clock;
pub mod convert;
pub mod counter;
pub mod cpu;
pub mod crosscpu;
pub mod escape;
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
