//! EXPLAIN ANALYZE's timing overhead predicted from what one clock read costs:
//! the one formula behind `clockscope check`'s prediction (at a reference
//! baseline) and `clockscope explain`'s (at the server's measured TIMING OFF
//! time).
//!
//! ```text
//! overhead_per_row_ns = clock reads per row * ns per read
//! timing_off_ms       = timing_off_row_ns * rows / 1e6
//! timing_on_ms        = (timing_off_row_ns + overhead_per_row_ns) * rows / 1e6
//! slowdown            = timing_on_ms / timing_off_ms          (NaN when OFF is 0)
//! ```
//!
//! Every timed plan node reads the clock twice per row it returns (entering
//! and leaving it, `InstrStartNode`/`InstrStopNode`), so a read's cost adds
//! up per row; the executor's own work per row is the TIMING OFF time.
//!
//! "ns per read" is what TIMING ON adds per row per node in a model of
//! PostgreSQL's own instrumentation, measured on this machine
//! ([`executor_loop`], `added_ns_per_row / 2`): a read between real work
//! does not cost what two back-to-back reads in pg_test_timing's loop cost
//! ([`read_cost`], kept for comparison and for the I/O timing settings).
//! With `added_ns_per_row` (one timed node) the formula reads
//! `timing_on_row_ns = timing_off_row_ns + reads_per_row / 2 * added_ns_per_row`.

pub mod executor_loop;
pub mod read_cost;
pub mod settings;

pub use executor_loop::{
    measure_model, measure_on_this_machine, pairs_on_this_machine, ExecutorLoopCost, ModelConfig, PgInstrumentation,
    Table,
};

use serde::Serialize;

/// The predicted cost of timing a query.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ExplainOverhead {
    /// Clock-read cost added per row, ns.
    pub overhead_per_row_ns: f64,
    /// The query with TIMING OFF, ms.
    pub timing_off_ms: f64,
    /// The query with TIMING ON, ms.
    pub timing_on_ms: f64,
    /// ON / OFF.
    pub slowdown: f64,
}

/// The overhead of `reads_per_row` clock reads costing `per_read_ns` each,
/// for `rows` rows that take `timing_off_row_ns` each with TIMING OFF.
pub fn explain_overhead(timing_off_row_ns: f64, reads_per_row: f64, per_read_ns: f64, rows: f64) -> ExplainOverhead {
    let overhead_per_row_ns = reads_per_row * per_read_ns;
    let timing_off_ms = timing_off_row_ns * rows / 1e6;
    let timing_on_ms = (timing_off_row_ns + overhead_per_row_ns) * rows / 1e6;
    ExplainOverhead {
        overhead_per_row_ns,
        timing_off_ms,
        timing_on_ms,
        slowdown: if timing_off_ms > 0.0 {
            timing_on_ms / timing_off_ms
        } else {
            f64::NAN
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_reads_of_20_ns_on_a_40_ns_row_double_it() {
        let p = explain_overhead(40.0, 2.0, 20.0, 1_000_000.0);
        assert_eq!(p.overhead_per_row_ns, 40.0);
        assert_eq!((p.timing_off_ms, p.timing_on_ms), (40.0, 80.0));
        assert_eq!(p.slowdown, 2.0);
    }

    #[test]
    fn the_slowdown_does_not_depend_on_the_row_count() {
        let a = explain_overhead(42.66, 2.00006, 17.5, 100_000.0);
        let b = explain_overhead(42.66, 2.00006, 17.5, 10_000_000.0);
        assert!((a.slowdown - b.slowdown).abs() < 1e-12);
        assert!((a.slowdown - (1.0 + 2.00006 * 17.5 / 42.66)).abs() < 1e-12);
        assert!((b.timing_on_ms / a.timing_on_ms - 100.0).abs() < 1e-9);
    }

    #[test]
    fn no_baseline_means_no_slowdown() {
        assert!(explain_overhead(0.0, 2.0, 20.0, 1e6).slowdown.is_nan());
    }
}
