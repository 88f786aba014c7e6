//! What one clock read costs on this machine: PostgreSQL's pg_test_timing
//! loop ([`clockscope::measure()`]) on the clocks EXPLAIN ANALYZE can use.
//!
//! The number is pg_test_timing's "Average loop time including overhead":
//! one read plus the loop's bookkeeping (a subtraction, a histogram
//! increment; about 1-2 ns), so it slightly overstates a bare read.
//!
//! - System clock: `clock_gettime(CLOCK_MONOTONIC)`, what PostgreSQL's
//!   `INSTR_TIME_SET_CURRENT` reads on Linux (and with
//!   `timing_clock_source = system` in PostgreSQL 19).
//! - RDTSC (x86-64 only): PostgreSQL 19's fast TSC read for EXPLAIN, at the
//!   frequency PostgreSQL 19 would use here ([`postgres_tsc`], from the
//!   counter layer: CPUID by its rules, else calibration), as its pg_test_timing measures
//!   "Fast clock source: RDTSC".
//!
//! Each clock also runs the library's executor-like per-row loop
//! ([`clockscope::predict::executor_loop`]) with and without two reads per
//! row, its work per row set to the server's measured TIMING OFF time per row:
//! what a read adds between per-row work, the number the prediction uses
//! (the loop time above is kept for comparison).

use clockscope::clock::posix::PosixClock;
use clockscope::counter::discover::full_budget;
use clockscope::counter::{self, CounterKind, CounterPairVisitor, Discovery};
use clockscope::predict::executor_loop::{self, Arena, ExecutorLoopCost, LoopConfig};
use clockscope::{measure, ClockSource, Control};
use serde::Serialize;

/// One clock's measured read cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockCost {
    /// The clock's display name, as pg_test_timing prints it.
    pub clock: String,
    /// Average ns per loop iteration (one read plus ~1-2 ns of bookkeeping).
    pub per_read_ns: f64,
    /// Loop iterations measured.
    pub loops: u64,
    /// How the number was obtained.
    pub method: String,
    /// The counter frequency used to convert ticks to ns (TSC only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_khz: Option<u64>,
    /// Where that frequency came from, as pg_test_timing prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_source: Option<String>,
    /// What two reads per row added to the executor-like loop (the
    /// prediction's per-row cost); null when the loop did not run.
    pub executor_loop: Option<ExecutorLoopCost>,
}

impl ClockCost {
    /// ns one read adds to executor-like per-row work: the executor loop's
    /// `added_ns_per_read` when it ran and is positive.
    pub fn added_per_read_ns(&self) -> Option<f64> {
        self.executor_loop
            .as_ref()
            .map(|e| e.added_ns_per_read)
            .filter(|v| v.is_finite() && *v > 0.0)
    }
}

/// This machine's read costs for the prediction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MachineClocks {
    /// `clock_gettime(CLOCK_MONOTONIC)`.
    pub system: ClockCost,
    /// RDTSC, on x86-64 CPUs with RDTSCP (as PostgreSQL 19 requires).
    pub rdtsc: Option<ClockCost>,
    /// Why there is no RDTSC cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdtsc_unavailable: Option<String>,
    /// Whether PostgreSQL 19's `timing_clock_source = auto` would pick the
    /// TSC here (its policy, [`clockscope::tsc::PostgresTsc::use_by_default`]).
    pub tsc_auto: bool,
}

/// The executor-like loop's work per row: `work_ns_per_row` when it is a
/// plausible TIMING OFF time per row (1 ns - 10 us), else
/// [`executor_loop::DEFAULT_WORK_NS_PER_ROW`].
pub fn loop_work_target_ns(work_ns_per_row: Option<f64>) -> f64 {
    work_ns_per_row
        .filter(|w| w.is_finite() && (1.0..=10_000.0).contains(w))
        .unwrap_or(executor_loop::DEFAULT_WORK_NS_PER_ROW)
}

/// The executor-like loop on `clock`, its work calibrated to `work_ns_per_row`.
fn executor_cost<C: ClockSource>(
    clock: &C,
    work_ns_per_row: f64,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ExecutorLoopCost> {
    if !keep_going() {
        return None;
    }
    let arena = Arena::new();
    let config = LoopConfig {
        rows_per_round: executor_loop::DEFAULT_ROWS_PER_ROUND,
        rounds: executor_loop::DEFAULT_ROUNDS,
        work_passes: executor_loop::calibrate_passes(clock, &arena, work_ns_per_row),
    };
    executor_loop::measure_executor_loop(clock, &arena, config, keep_going)
}

/// Measures the system clock and (where there is one) RDTSC for
/// `duration_ns` each, and each in the executor-like loop with about
/// `work_ns_per_row` of work per row; `keep_going` is asked between 10 ms
/// chunks and between the loop's rounds.
pub fn measure_machine(duration_ns: u64, work_ns_per_row: f64, keep_going: &mut dyn FnMut() -> bool) -> MachineClocks {
    let mut system = measure_system(duration_ns, keep_going);
    system.executor_loop = executor_cost(&PosixClock::monotonic(), work_ns_per_row, keep_going);
    let tsc = postgres_tsc();
    let (rdtsc, rdtsc_unavailable) = match measure_rdtsc(&tsc, duration_ns, work_ns_per_row, keep_going) {
        Ok(c) => (Some(c), None),
        Err(why) => (None, Some(why)),
    };
    MachineClocks {
        system,
        rdtsc,
        rdtsc_unavailable,
        tsc_auto: tsc.use_by_default,
    }
}

fn control(keep_going: &mut dyn FnMut() -> bool) -> Control {
    if keep_going() {
        Control::Continue
    } else {
        Control::Stop
    }
}

/// pg_test_timing's loop on `clock_gettime(CLOCK_MONOTONIC)`.
pub fn measure_system(duration_ns: u64, keep_going: &mut dyn FnMut() -> bool) -> ClockCost {
    let clock = PosixClock::monotonic();
    let m = measure(&clock, duration_ns, |_| control(keep_going));
    ClockCost {
        clock: clock.name().to_string(),
        per_read_ns: m.avg_loop_ns().unwrap_or(f64::NAN),
        loops: m.loops(),
        method: "pg_test_timing's loop, average loop time including overhead".into(),
        frequency_khz: None,
        frequency_source: None,
        executor_loop: None,
    }
}

/// PostgreSQL 19's TSC on this machine: [`postgres_tsc`] decides its frequency (CPUID by PostgreSQL's rules, else calibration),
/// then pg_test_timing's loop runs on RDTSC at that frequency, as
/// PostgreSQL 19's pg_test_timing does for its "Fast clock source: RDTSC".
pub fn measure_rdtsc(
    tsc: &clockscope::tsc::PostgresTsc,
    duration_ns: u64,
    work_ns_per_row: f64,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<ClockCost, String> {
    let (Some(khz), Some(source)) = (tsc.frequency_khz, tsc.frequency_source.as_deref()) else {
        return Err("PostgreSQL 19 could not use the TSC here (no RDTSCP or invariant TSC, or no frequency)".into());
    };
    rdtsc_loop(khz, duration_ns, work_ns_per_row, keep_going).map(|(per_read_ns, loops, clock, executor_loop)| {
        ClockCost {
            clock,
            per_read_ns,
            loops,
            method: "pg_test_timing's loop (Fast clock source), average loop time including overhead".into(),
            frequency_khz: Some(khz),
            frequency_source: Some(source.to_string()),
            executor_loop,
        }
    })
}

/// What PostgreSQL 19 concludes about this machine's TSC, from the counter
/// layer ([`clockscope::counter::Mode::Postgresql`]): no TSC off x86-64.
pub fn postgres_tsc() -> clockscope::tsc::PostgresTsc {
    let discovery = Discovery::postgresql(clockscope::tsc::POSTGRES_CALIBRATION_BUDGET_NS);
    let report = counter::discover_with(std::path::Path::new("/"), None, &discovery, &full_budget);
    report.postgres.tsc.unwrap_or(clockscope::tsc::PostgresTsc {
        frequency_khz: None,
        frequency_source: None,
        calibrated_khz: None,
        use_by_default: false,
    })
}

/// What the RDTSC loops measured: loop time, loops, clock name, executor loop.
type RdtscLoops = (f64, u64, String, Option<ExecutorLoopCost>);

/// pg_test_timing's loop and the executor-like loop on PostgreSQL 19's fast
/// TSC read (RDTSC) at `khz`; `Err` off x86-64 or without RDTSCP.
fn rdtsc_loop(
    khz: u64,
    duration_ns: u64,
    work_ns_per_row: f64,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<RdtscLoops, String> {
    struct FastLoop<'a> {
        duration_ns: u64,
        work_ns_per_row: f64,
        keep_going: &'a mut dyn FnMut() -> bool,
    }
    impl CounterPairVisitor for FastLoop<'_> {
        type Output = Result<RdtscLoops, String>;
        fn visit<P: ClockSource, F: ClockSource>(self, _precise: P, fast: F) -> Self::Output {
            let keep_going = self.keep_going;
            let m = measure(&fast, self.duration_ns, |_| control(keep_going));
            let per_read_ns = m.avg_loop_ns().ok_or(format!("the {} loop did not run", fast.name()))?;
            let executor = executor_cost(&fast, self.work_ns_per_row, keep_going);
            Ok((per_read_ns, m.loops(), fast.name().to_string(), executor))
        }
    }
    if counter::native_kind() != Some(CounterKind::Tsc) {
        return Err("PostgreSQL 19's TSC clock source exists on x86-64 only".into());
    }
    let scale = clockscope::Scale::from_khz(khz).ok_or_else(|| format!("TSC frequency {khz} kHz is out of range"))?;
    counter::arch::visit_pair(
        scale,
        FastLoop {
            duration_ns,
            work_ns_per_row,
            keep_going,
        },
    )
    .map_err(str::to_string)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_cost_is_positive_and_finite() {
        let c = measure_system(5_000_000, &mut || true);
        assert!(c.loops > 0);
        assert!(c.per_read_ns.is_finite() && c.per_read_ns > 0.0, "{c:?}");
    }

    #[test]
    fn no_tsc_frequency_means_no_rdtsc_cost() {
        let tsc = clockscope::tsc::PostgresTsc {
            frequency_khz: None,
            frequency_source: None,
            calibrated_khz: None,
            use_by_default: false,
        };
        let why = measure_rdtsc(&tsc, 1_000_000, 50.0, &mut || true).unwrap_err();
        assert!(why.contains("could not use the TSC"), "{why}");
    }

    #[test]
    fn the_loop_works_as_much_as_the_server_did_per_row() {
        assert_eq!(loop_work_target_ns(Some(55.0)), 55.0);
        assert_eq!(loop_work_target_ns(None), executor_loop::DEFAULT_WORK_NS_PER_ROW);
        assert_eq!(
            loop_work_target_ns(Some(f64::NAN)),
            executor_loop::DEFAULT_WORK_NS_PER_ROW
        );
        assert_eq!(loop_work_target_ns(Some(0.0)), executor_loop::DEFAULT_WORK_NS_PER_ROW);
        assert_eq!(loop_work_target_ns(Some(1e6)), executor_loop::DEFAULT_WORK_NS_PER_ROW);
    }

    #[test]
    fn the_executor_loop_is_skipped_when_stopped() {
        assert!(executor_cost(&PosixClock::monotonic(), 50.0, &mut || false).is_none());
    }

    #[test]
    fn stopping_early_still_gives_a_number() {
        let c = measure_system(10_000_000_000, &mut || false);
        assert!(c.per_read_ns.is_finite() && c.per_read_ns > 0.0, "{c:?}");
    }

    #[test]
    fn rdtsc_cost_is_measured_exactly_when_postgresql_19_would_use_the_tsc() {
        let tsc = postgres_tsc();
        match measure_rdtsc(&tsc, 5_000_000, 50.0, &mut || true) {
            Ok(c) => {
                assert!(c.per_read_ns.is_finite() && c.per_read_ns > 0.0, "{c:?}");
                assert_eq!(c.frequency_khz, tsc.frequency_khz);
                assert_eq!(c.frequency_source, tsc.frequency_source);
            }
            Err(why) => assert!(
                tsc.frequency_khz.is_none() || counter::native_kind() != Some(CounterKind::Tsc),
                "{why}"
            ),
        }
    }
}
