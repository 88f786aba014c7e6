//! The result: medians and spread per clock source, the overhead per row and
//! per clock read, the prediction from this machine's clock cost: the model
//! the JSON form serialises (its text form is the CLI's,
//! `clockscope_cli::commands::explain`).
//!
//! - [`model`]: what a run measured ([`Report`], serialised as the JSON form)
//!   and the [`Inputs`] it is built from.
//! - `arith`: the arithmetic below, [`build`].
//!
//! # Arithmetic (medians of the runs)
//!
//! ```text
//! slowdown                = ON / OFF
//! overhead_per_row_ns     = (ON - OFF) * 1e6 / rows
//! overhead_per_read_ns    = (ON - OFF) * 1e6 / clock reads per run     (see plan.rs)
//! predicted_per_read_ns   = what TIMING ON adds per row per node in this machine's model of
//!                           the server version's instrumentation, its work per row set to
//!                           the TIMING OFF time per row (clockscope_pg::predict::executor_loop:
//!                           added_ns_per_row / 2); none when the model did not resolve it
//!                           (prediction_status says why: one method, no fallback)
//! predicted_overhead_per_row_ns = clock reads per row * predicted_per_read_ns
//!                         = reads per row / 2 * added_ns_per_row
//! predicted_timing_on_ms  = OFF + clock reads * predicted_per_read_ns / 1e6
//! predicted_slowdown      = predicted_timing_on_ms / OFF
//!                           (clockscope_pg::predict::explain_overhead, per row)
//! observed_over_predicted = overhead_per_read_ns / predicted_per_read_ns
//! paired_in_time          = median over pairs k of
//!                           ((ON_k - OFF_k) * 1e6 / clock reads per run) / (slice_k's median / 2),
//!                           slice_k the model slice run just before pair k, with its 95% interval
//! back_to_back_observed_over_predicted = overhead_per_read_ns / pg_test_timing loop time
//! ```
//!
//! The noise control's figures (`noise`) come from the paired slowdowns,
//! ON / OFF of each pair, and their 95% interval (`stats`);
//! `--query`'s per-node breakdown from `nodes`.
//!
//! The server's clock is the one this machine measures: the system clock
//! (`clock_gettime(CLOCK_MONOTONIC)`) for PostgreSQL < 19 and for
//! `timing_clock_source = system`, RDTSC for a TSC source.
//!
//! The TSC prediction for a server that did not run on the TSC uses the
//! RDTSC read's cost in place of the system clock's: `predicted_*` as above
//! with `rdtsc_per_read_ns` (what the model with PostgreSQL 19's RDTSC read
//! adds per read), and a `scaled_*` variant that also applies the
//! observed/predicted ratio measured on the system clock
//! (`rdtsc_per_read_ns * observed_over_predicted`), for the part of a read
//! that the executor overlaps with its own work or adds to it.

pub(crate) mod arith;
pub mod model;

pub use arith::build;
pub use model::{
    AaControl, CpuContention, Inputs, Noise, PairedInTime, QueryBreakdown, Report, Resolution, SourceResult,
    TscPrediction, SCHEMA_VERSION,
};
