//! What one clock read costs on this machine: PostgreSQL's pg_test_timing
//! loop ([`clockscope::measure`]) on the clocks EXPLAIN ANALYZE can use.
//!
//! The number is pg_test_timing's "Average loop time including overhead":
//! one read plus the loop's bookkeeping (a subtraction, a histogram
//! increment; about 1-2 ns), so it slightly overstates a bare read.
//!
//! - System clock: `clock_gettime(CLOCK_MONOTONIC)`, what PostgreSQL's
//!   `INSTR_TIME_SET_CURRENT` reads on Linux (and with
//!   `timing_clock_source = system` in PostgreSQL 19).
//! - RDTSC (x86-64 only): PostgreSQL 19's fast TSC read for EXPLAIN. The
//!   loop's own ns conversion needs the TSC frequency, which clockscope's
//!   TSC module does not publish yet; so the same loop runs on RDTSC with a
//!   nominal scale and its cost is CLOCK_MONOTONIC time around the loop
//!   divided by its iterations (an extra two reads over millions of loops).

use clockscope::clock::posix::PosixClock;
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
}

/// Measures the system clock and (where there is one) RDTSC for
/// `duration_ns` each; `keep_going` is asked between 10 ms chunks.
pub fn measure_machine(duration_ns: u64, keep_going: &mut dyn FnMut() -> bool) -> MachineClocks {
    let system = measure_system(duration_ns, keep_going);
    let (rdtsc, rdtsc_unavailable) = match measure_rdtsc(duration_ns, keep_going) {
        Ok(c) => (Some(c), None),
        Err(why) => (None, Some(why)),
    };
    MachineClocks {
        system,
        rdtsc,
        rdtsc_unavailable,
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
    }
}

/// pg_test_timing's loop on RDTSC, timed with CLOCK_MONOTONIC.
#[cfg(target_arch = "x86_64")]
pub fn measure_rdtsc(duration_ns: u64, keep_going: &mut dyn FnMut() -> bool) -> Result<ClockCost, String> {
    use clockscope::clock::arch::Rdtsc;
    use clockscope::Scale;
    /// Ticks are counted as if the TSC ran at 1 GHz; only the iteration
    /// count of the loop is used, so the scale only sets how long it runs.
    const NOMINAL_KHZ: u64 = 1_000_000;
    let scale = Scale::from_khz(NOMINAL_KHZ).ok_or("no nominal scale")?;
    let clock = Rdtsc::new(scale).ok_or("this CPU does not report RDTSCP, which PostgreSQL 19 needs for its TSC")?;
    let mono = PosixClock::monotonic();
    let start = mono.now_ordered();
    let m = measure(&clock, duration_ns, |_| control(keep_going));
    let elapsed_ns = mono.now_ordered().delta_since(start);
    let loops = m.loops();
    if loops == 0 || elapsed_ns <= 0 {
        return Err("the RDTSC loop did not run".into());
    }
    Ok(ClockCost {
        clock: clock.name().to_string(),
        per_read_ns: elapsed_ns as f64 / loops as f64,
        loops,
        method: "pg_test_timing's loop on RDTSC, CLOCK_MONOTONIC time / iterations (TSC frequency not used)".into(),
    })
}

/// No TSC off x86-64: PostgreSQL 19's TSC clock source is x86-64 only.
#[cfg(not(target_arch = "x86_64"))]
pub fn measure_rdtsc(_duration_ns: u64, _keep_going: &mut dyn FnMut() -> bool) -> Result<ClockCost, String> {
    Err("PostgreSQL 19's TSC clock source exists on x86-64 only".into())
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
    fn stopping_early_still_gives_a_number() {
        let c = measure_system(10_000_000_000, &mut || false);
        assert!(c.per_read_ns.is_finite() && c.per_read_ns > 0.0, "{c:?}");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn rdtsc_cost_is_measured_exactly_when_the_cpu_has_rdtscp() {
        use clockscope::clock::arch::{cpu_has_rdtscp, cpu_has_tsc};
        match measure_rdtsc(5_000_000, &mut || true) {
            Ok(c) => assert!(c.per_read_ns.is_finite() && c.per_read_ns > 0.0, "{c:?}"),
            Err(why) => assert!(!(cpu_has_tsc() && cpu_has_rdtscp()), "{why}"),
        }
    }
}
