//! clockscope-system: what this machine says about its clocks, read for the
//! clockscope tools. Unpublished: its API is the tools' own. The published
//! `clockscope` crate below it holds the clock reads, the measuring loop,
//! calibration and the one trust answer; this crate holds the evidence and
//! the judges, and `clockscope-pg` above it models PostgreSQL's loops.
//!
//! # Layers
//!
//! Each layer imports only the layers above it in this list (the test
//! `crates/cli/tests/all/layers.rs`, `LIBRARY_LAYERS`, enforces it; the crate
//! boundaries below and above are compile errors):
//!
//! 1. [`escape`] (untrusted text made safe to print), [`input`] (every input
//!    file read bounded: regular files only, a size cap per kind), [`stats`]
//!    (medians and their distribution-free confidence intervals),
//!    [`forward`] (waits in forward time).
//! 2. [`kernel_log`]: a kernel log (this machine's or a pasted one) read in
//!    every paste style, every TSC/clocksource message format since 3.x
//!    recognised, summarised and explained: plain text in.
//! 3. [`linux`]: evidence the kernel publishes (sysfs, /proc, `/dev/kmsg`,
//!    the perf page, cgroups), read under a root path so tests use a fake
//!    tree; switching the clocksource for `sweep` (fake roots only in tests).
//!    [`interference`]: what disturbed a measuring run (preemption, steal);
//!    [`engine`]: the one read-cost measurement over it.
//! 4. [`evidence`]: what the counter's judges (`tsc`, `arm`) and its
//!    gatherer (`counter`) share: a calibration's result, one decision
//!    line, the signs of time interposition.
//! 5. [`arm`] (the ARM generic timer: MIDR decoding, core homogeneity, known
//!    errata, frequency cross-checks, the trust decision) and [`tsc`] (CPUID
//!    decoding, the TSC frequency from every source, PostgreSQL's `auto`
//!    policy and clockscope's own trust decision).
//! 6. [`counter`]: one frequency discovery with a calibration budget, one
//!    [`CounterReport`](counter::CounterReport) with its checks, the drift
//!    test, PostgreSQL's calibration.
//! 7. [`crosscpu`]: whether a clock agrees across CPUs: the kernel's warp
//!    test and a ping-pong offset estimate per CPU pair, planned by
//!    topology, judged and summarised by package.
#![deny(missing_docs)]

pub mod arm;
pub mod counter;
pub mod crosscpu;
pub mod engine;
pub mod escape;
pub mod evidence;
pub mod forward;
pub mod input;
pub mod interference;
pub mod kernel_log;
pub mod linux;
pub mod stats;
pub mod tsc;
