//! PostgreSQL 19's TSC calibration (`pg_tsc_calibrate_frequency`), step for
//! step, beside clockscope's own bracketed calibration (the published
//! crate's [`clockscope::calibrate`], re-exported here as
//! [`calibrate_counter`] for the tools).
//!
//! Read the system clock then RDTSCP, once at the start and once per pass;
//! every 100th pass compute kHz = ticks / ns * 10^6 from the start; a relative
//! change below 10^-4 from the previous estimate is a stable step, otherwise
//! the count resets; 10 stable steps in a row converge. At most 10^6 passes and
//! 50 ms. It converges in tens of microseconds, so the few tens of ns between
//! the first clock read and the first TSC read are a large share of the window.

pub use crate::evidence::calibration::{METHOD_BRACKETED, METHOD_POSTGRESQL, PG_MAX_NS};
pub use clockscope::{calibrate as calibrate_counter, calibrate_with as calibrate_to, Calibration};
use clockscope::{ClockId, ClockSource, ClockVisitor, PosixClock, Scale};

/// [`calibrate_to`] at the default 1 ppm target.
pub fn calibrate<R: ClockSource, C: ClockSource>(reference: &R, counter: &C, budget_ns: u64) -> Calibration {
    calibrate_to(reference, counter, budget_ns, Calibration::DEFAULT_TARGET_PPM)
}

/// PostgreSQL's pass limit: `TSC_CALIBRATION_ITERATIONS`.
pub(crate) const PG_ITERATIONS: u64 = 1_000_000;
/// PostgreSQL estimates every `TSC_CALIBRATION_SKIPS` passes.
pub(crate) const PG_SKIPS: u64 = 100;
/// PostgreSQL's stable steps in a row to converge: `TSC_CALIBRATION_STABLE_CYCLES`.
pub(crate) const PG_STABLE_CYCLES: u32 = 10;
/// PostgreSQL's stable-step threshold on `|1 - new/previous|`.
pub(crate) const PG_STABLE_RELATIVE_CHANGE: f64 = 1e-4;

/// PostgreSQL 19's calibration, step for step (see the module documentation).
/// The reference must count nanoseconds; the counter's raw ticks are used.
pub fn calibrate_postgresql<R: ClockSource, C: ClockSource>(reference: &R, counter: &C) -> Calibration {
    let initial_ref = reference.now();
    let initial_ctr = counter.now();
    let mut prev_ctr = initial_ctr;
    let mut freq_khz = 0.0f64;
    let mut prev_freq_khz = 0.0f64;
    let mut stable = 0u32;
    let mut passes = 0u64;
    let mut last_elapsed_ns = 0i64;
    let mut estimate: Option<(i64, i64)> = None; // (ticks, ns) of the last estimate
    let mut timed_out = false;
    for i in 0..PG_ITERATIONS {
        passes += 1;
        let now_ref = reference.now();
        let now_ctr = counter.now();
        let elapsed_ns = now_ref.delta_since(initial_ref);
        last_elapsed_ns = elapsed_ns;
        if elapsed_ns >= PG_MAX_NS as i64 {
            timed_out = true;
            break;
        }
        let elapsed_ticks = now_ctr.delta_since(initial_ctr);
        if now_ctr == prev_ctr || elapsed_ns <= 0 || elapsed_ticks <= 0 {
            continue;
        }
        if i % PG_SKIPS != 0 {
            continue;
        }
        freq_khz = elapsed_ticks as f64 / elapsed_ns as f64 * 1000.0 * 1000.0;
        estimate = Some((elapsed_ticks, elapsed_ns));
        if prev_freq_khz != 0.0 && (1.0 - freq_khz / prev_freq_khz).abs() < PG_STABLE_RELATIVE_CHANGE {
            stable += 1;
            if stable >= PG_STABLE_CYCLES {
                break;
            }
        } else {
            stable = 0;
        }
        prev_ctr = now_ctr;
        prev_freq_khz = freq_khz;
    }
    let converged = stable >= PG_STABLE_CYCLES;
    let note = if converged {
        format!(
            "converged: {PG_STABLE_CYCLES} estimates in a row within {} ppm of the previous one, after {passes} passes",
            PG_STABLE_RELATIVE_CHANGE * 1e6
        )
    } else if timed_out {
        format!(
            "did not converge within {} ms ({passes} passes; {stable} stable steps at the end)",
            PG_MAX_NS / 1_000_000
        )
    } else if estimate.is_none() {
        format!("did not converge: no estimate in {passes} passes (the reference or the counter did not advance)")
    } else {
        format!("did not converge within {PG_ITERATIONS} passes ({stable} stable steps at the end)")
    };
    Calibration {
        // PostgreSQL returns `(uint32) freq_khz`: truncated.
        khz: converged.then_some(freq_khz as u64),
        hz: if converged {
            estimate.map(|(t, ns)| div_round(t as u128 * 1_000_000_000, ns as u128) as u64)
        } else {
            None
        },
        uncertainty_ppm: None,
        elapsed_ns: last_elapsed_ns.max(0) as u64,
        samples: passes + 1,
        note,
        method: METHOD_POSTGRESQL,
        counter: counter.name(),
        reference: reference.name(),
    }
}

/// PostgreSQL 19's calibration as PostgreSQL runs it: RDTSCP against
/// `CLOCK_MONOTONIC` (x86-64 only, as in PostgreSQL).
pub fn calibrate_postgresql_native() -> Calibration {
    struct Run;
    impl ClockVisitor for Run {
        type Output = Calibration;
        fn visit<C: ClockSource>(self, counter: &C) -> Calibration {
            calibrate_postgresql(&PosixClock::monotonic(), counter)
        }
    }
    if !cfg!(target_arch = "x86_64") {
        return Calibration::unavailable("PostgreSQL calibrates the TSC only on x86-64", METHOD_POSTGRESQL);
    }
    clockscope::visit(ClockId::Rdtscp, Some(Scale::NANOSECONDS), Run).unwrap_or_else(|_| {
        Calibration::unavailable(
            "the CPU lacks RDTSCP, which PostgreSQL's TSC support requires",
            METHOD_POSTGRESQL,
        )
    })
}

fn div_round(num: u128, den: u128) -> u128 {
    (num + den / 2) / den
}
