//! Calibrating a counter (the TSC, the ARM generic timer) against a reference
//! clock that counts nanoseconds: PostgreSQL 19's algorithm, reproduced, and
//! clockscope's own, which bounds its error.
//!
//! Both are generic over two [`ClockSource`]s: the reference's ticks are
//! nanoseconds, the counter's raw ticks are counted (its scale is ignored),
//! so tests drive them with scripted clocks.
//!
//! # PostgreSQL 19 (`pg_tsc_calibrate_frequency`)
//! Read the system clock then RDTSCP, once at the start and once per pass;
//! every 100th pass compute kHz = ticks / ns * 10^6 from the start; a relative
//! change below 10^-4 from the previous estimate is a stable step, otherwise
//! the count resets; 10 stable steps in a row converge. At most 10^6 passes and
//! 50 ms. It converges in tens of microseconds, so the few tens of ns between
//! the first clock read and the first TSC read are a large share of the window.
//!
//! # clockscope
//! Each counter read is bracketed by two reference reads, `r0 <= t <= r1`, so
//! the reference time of the counter read is known to within the bracket's
//! width. Take the tightest bracket among the first reads (the start anchor)
//! and the tightest of each later batch (the end anchor); the frequency is the
//! counter delta over the delta of the bracket midpoints, and
//!
//! ```text
//! |error| <= (width_start + width_end) / 2 / window      (reported as uncertainty_ppm)
//! ```
//!
//! The window grows until the bound is below the target or the budget is
//! spent. Preempted or slow reads only widen their own bracket, and the
//! tightest ones are kept, so they do not bias the result. The bound is
//! relative to the reference clock: `CLOCK_MONOTONIC_RAW` is not slewed by NTP.
//!
//! # Accuracy
//! The result is within `uncertainty_ppm` of the counter's rate as the
//! reference clock counts time, when it converged; PostgreSQL's algorithm has
//! no such bound. Both measured side by side on one machine, with its CPU
//! named: `bench/README.md`.

use super::{arch, CounterVisitor};
use crate::clock::posix::PosixClock;
use crate::clock::ClockSource;
use crate::convert::Scale;
pub use crate::evidence::calibration::{Calibration, METHOD_BRACKETED, METHOD_POSTGRESQL, PG_MAX_NS};
use crate::ticks::Ticks;

// ---------------------------------------------------------------------------
// PostgreSQL 19
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// clockscope
// ---------------------------------------------------------------------------

/// Default budget for [`calibrate_counter`] callers: PostgreSQL's 50 ms limit,
/// so the two are compared at the same cost.
pub const DEFAULT_BUDGET_NS: u64 = PG_MAX_NS;
/// Stop once the error bound is this small: 1 ppm is 1 µs per second, below
/// what a kHz-rounded frequency (0.4 ppm at 2.6 GHz) can express anyway.
pub const DEFAULT_TARGET_PPM: f64 = 1.0;
/// Above this bound the result is reported as "did not converge": 500 ppm is
/// 0.5 ms per second, about the median error of PostgreSQL's calibration on
/// KVM guests (`bench/README.md`); a wider bound says nothing useful about
/// the frequency.
pub const MAX_UNCERTAINTY_PPM: f64 = 500.0;
/// Brackets taken for the start anchor (a few µs of reads); the tightest is kept.
pub const START_SAMPLES: u64 = 256;
/// The start phase never takes more than this share of the budget
/// (1/START_BUDGET_DIVISOR), so a slow reference still leaves a window.
pub(crate) const START_BUDGET_DIVISOR: u64 = 8;
/// Brackets per end-anchor batch; the tightest of each batch is the end
/// candidate and the bound is checked once per batch.
pub const BATCH_SAMPLES: u64 = 256;
/// No iteration (three clock reads) is faster than this, so more than
/// `budget / MIN_ITERATION_NS` iterations means a clock is stuck.
pub const MIN_ITERATION_NS: u64 = 10;

/// One counter read between two reference reads.
#[derive(Clone, Copy, Debug)]
struct Bracket {
    r0: Ticks,
    counter: Ticks,
    r1: Ticks,
}

impl Bracket {
    fn width_ns(&self) -> u64 {
        self.r1.delta_since(self.r0).max(0) as u64
    }
}

/// An estimate from a start and an end bracket.
#[derive(Clone, Copy, Debug)]
struct Estimate {
    hz: u64,
    uncertainty_ppm: f64,
    window_ns: u64,
}

/// Frequency from two brackets, or why there is none.
fn estimate(start: &Bracket, end: &Bracket) -> Result<Estimate, String> {
    // Midpoints in half-nanoseconds: (r0 + r1) with no rounding.
    let mid2 = |b: &Bracket| b.r0.raw() as i128 + b.r1.raw() as i128;
    let window2 = mid2(end) - mid2(start);
    if window2 <= 0 {
        return Err("the reference clock did not advance".to_string());
    }
    let ticks = end.counter.delta_since(start.counter);
    if ticks == 0 {
        return Err("the counter did not advance".to_string());
    }
    if ticks < 0 {
        return Err(format!("the counter went backwards by {} ticks", -(ticks as i128)));
    }
    let hz = div_round(ticks as u128 * 2_000_000_000, window2 as u128);
    // Each bracket [r0, r1] holds the true reference time of its counter read
    // (+1 ns: readings are truncated to whole ns), so each midpoint is off by
    // at most half a width.
    let widths = (start.width_ns() + 1 + end.width_ns() + 1) as f64;
    Ok(Estimate {
        hz: u64::try_from(hz).unwrap_or(u64::MAX),
        uncertainty_ppm: widths / window2 as f64 * 1e6,
        window_ns: (window2 / 2) as u64,
    })
}

/// Reference time from `t0` to `now` counting only forward steps: `now -
/// t0` plus the backward steps' sizes `back_ns`, never below 0.
fn forward_ns(t0: Ticks, now: Ticks, back_ns: u64) -> u64 {
    (now.delta_since(t0) as i128 + back_ns as i128).clamp(0, u64::MAX as i128) as u64
}

fn div_round(num: u128, den: u128) -> u128 {
    (num + den / 2) / den
}

/// [`calibrate_to`] with [`DEFAULT_TARGET_PPM`].
pub fn calibrate<R: ClockSource, C: ClockSource>(reference: &R, counter: &C, budget_ns: u64) -> Calibration {
    calibrate_to(reference, counter, budget_ns, DEFAULT_TARGET_PPM)
}

/// clockscope's calibration (see the module documentation): stops when the
/// error bound is at most `target_ppm`, or before a bracket that would end
/// past `budget_ns` on the reference clock (predicted from the previous
/// bracket's duration). The first bracket is always read, so only a budget
/// shorter than one bracket (three clock reads) can be exceeded, by that
/// bracket; a budget of 0 reads nothing.
pub fn calibrate_to<R: ClockSource, C: ClockSource>(
    reference: &R,
    counter: &C,
    budget_ns: u64,
    target_ppm: f64,
) -> Calibration {
    if budget_ns == 0 {
        let mut cal = Calibration::unavailable("did not converge: a budget of 0 ns allows no reads", METHOD_BRACKETED);
        cal.counter = counter.name();
        cal.reference = reference.name();
        return cal;
    }
    let mut run = Run::new(reference.now(), budget_ns);
    loop {
        if run.samples >= run.max_iterations {
            run.stop_reason = "iteration cap reached (a clock may be stuck)";
            break;
        }
        let (elapsed, period) = run.read(reference, counter);
        // Stop before a read that would end past the budget.
        let over_budget = elapsed.saturating_add(period) > budget_ns;
        if run.batch_len >= BATCH_SAMPLES || (over_budget && run.batch_best.is_some()) {
            run.close_batch();
            if run.best.is_some_and(|b| b.uncertainty_ppm <= target_ppm) {
                run.stop_reason = "target reached";
                break;
            }
        }
        if over_budget {
            break;
        }
    }
    run.calibration(target_ppm, counter.name(), reference.name())
}

/// One run of [`calibrate_to`]: the anchors found so far and the counts its
/// result reports.
struct Run {
    t0: Ticks,
    max_iterations: u64,
    start_phase_ns: u64,
    samples: u64,
    backwards: u64,
    prev_r1: Ticks,
    last_ref: Ticks,
    /// The reference's backward steps added up: the budget is spent in
    /// forward time (the sum of its non-negative steps), so a reference
    /// stepped back (a faketime file changed mid-run) cannot stretch it.
    back_ns: u64,
    start: Option<Bracket>,
    start_done: bool,
    batch_best: Option<Bracket>,
    batch_len: u64,
    best: Option<Estimate>,
    last_error: Option<String>,
    stop_reason: &'static str,
}

impl Run {
    fn new(t0: Ticks, budget_ns: u64) -> Run {
        Run {
            t0,
            max_iterations: budget_ns / MIN_ITERATION_NS + START_SAMPLES + BATCH_SAMPLES,
            start_phase_ns: budget_ns / START_BUDGET_DIVISOR,
            samples: 0,
            backwards: 0,
            prev_r1: t0,
            last_ref: t0,
            back_ns: 0,
            start: None,
            start_done: false,
            batch_best: None,
            batch_len: 0,
            best: None,
            last_error: None,
            stop_reason: "budget spent",
        }
    }

    /// Reads one bracket and files it (a start anchor candidate, an end
    /// anchor candidate of the current batch, or skipped when the reference
    /// stepped back). Returns the forward reference time spent so far and
    /// the last read's period, both in ns.
    fn read<R: ClockSource, C: ClockSource>(&mut self, reference: &R, counter: &C) -> (u64, u64) {
        let r0 = reference.now();
        let c = counter.now();
        let r1 = reference.now();
        self.samples += 1;
        self.last_ref = r1;
        let b = Bracket { r0, counter: c, r1 };
        for step in [r0.delta_since(self.prev_r1), r1.delta_since(r0)] {
            self.back_ns = self.back_ns.saturating_add(step.min(0).unsigned_abs());
        }
        let elapsed = forward_ns(self.t0, r1, self.back_ns);
        let period = r1.delta_since(self.prev_r1).max(0);
        let stepped_back = r1.delta_since(self.prev_r1) < 0 || r1.delta_since(r0) < 0;
        self.prev_r1 = r1;
        if stepped_back || r1.delta_since(self.t0) < 0 {
            self.backwards += 1;
        } else if !self.start_done {
            if self.start.is_none_or(|s| b.width_ns() < s.width_ns()) {
                self.start = Some(b);
            }
            if self.samples >= START_SAMPLES || elapsed >= self.start_phase_ns {
                self.start_done = true;
            }
        } else {
            if self.batch_best.is_none_or(|s| b.width_ns() <= s.width_ns()) {
                self.batch_best = Some(b);
            }
            self.batch_len += 1;
        }
        (elapsed, period as u64)
    }

    /// Ends a batch: the estimate from the start anchor to the batch's
    /// tightest bracket, kept when it is the best so far.
    fn close_batch(&mut self) {
        if let (Some(s), Some(e)) = (self.start, self.batch_best) {
            match estimate(&s, &e) {
                Ok(est) => {
                    self.last_error = None;
                    if self.best.is_none_or(|b| est.uncertainty_ppm <= b.uncertainty_ppm) {
                        self.best = Some(est);
                    }
                }
                Err(e) => self.last_error = Some(e),
            }
        }
        self.batch_best = None;
        self.batch_len = 0;
    }

    /// The run's result, with a note saying how it ended.
    fn calibration(self, target_ppm: f64, counter: &'static str, reference: &'static str) -> Calibration {
        let backwards_note = if self.backwards > 0 {
            format!(
                "; {} brackets skipped because the reference went backwards",
                self.backwards
            )
        } else {
            String::new()
        };
        let (khz, hz, note) = match self.best {
            Some(b) if b.uncertainty_ppm <= MAX_UNCERTAINTY_PPM => {
                let note = if b.uncertainty_ppm <= target_ppm {
                    format!(
                        "converged: within {:.3} ppm over a {:.3} ms window (target {target_ppm} ppm){backwards_note}",
                        b.uncertainty_ppm,
                        b.window_ns as f64 / 1e6
                    )
                } else {
                    format!(
                        "converged to {:.3} ppm over a {:.3} ms window, above the {target_ppm} ppm target: {}{backwards_note}",
                        b.uncertainty_ppm,
                        b.window_ns as f64 / 1e6,
                        self.stop_reason
                    )
                };
                (Some(div_round(b.hz as u128, 1000) as u64), Some(b.hz), note)
            }
            Some(b) => (
                None,
                None,
                format!(
                    "did not converge: error bound {:.1} ppm is above {MAX_UNCERTAINTY_PPM} ppm after {:.3} ms \
                     ({} Hz estimated; reads too slow or often preempted){backwards_note}",
                    b.uncertainty_ppm,
                    b.window_ns as f64 / 1e6,
                    b.hz
                ),
            ),
            None => {
                let why = self.last_error.clone().unwrap_or_else(|| {
                    if self.start.is_none() {
                        "no bracket with a forward reference step".to_string()
                    } else {
                        "the budget ended before a second anchor was read".to_string()
                    }
                });
                let note = format!(
                    "did not converge: {why} ({} reads; {}){backwards_note}",
                    self.samples, self.stop_reason
                );
                (None, None, note)
            }
        };
        Calibration {
            khz,
            hz,
            uncertainty_ppm: self.best.map(|b| b.uncertainty_ppm),
            elapsed_ns: forward_ns(self.t0, self.last_ref, self.back_ns),
            samples: self.samples,
            note,
            method: METHOD_BRACKETED,
            counter,
            reference,
        }
    }
}

// ---------------------------------------------------------------------------
// This machine's counter
// ---------------------------------------------------------------------------

/// Calibrates this CPU's counter with [`calibrate`] against
/// `CLOCK_MONOTONIC_RAW`: RDTSCP (LFENCE;RDTSC without RDTSCP) on x86-64,
/// ISB;CNTVCT_EL0 on aarch64.
pub fn calibrate_counter(budget_ns: u64) -> Calibration {
    struct Run(u64);
    impl CounterVisitor for Run {
        type Output = Calibration;
        fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, counter: C) -> Calibration {
            calibrate(&PosixClock::monotonic_raw(), &counter, self.0)
        }
    }
    arch::visit_ordered(Scale::NANOSECONDS, Run(budget_ns))
        .unwrap_or_else(|why| Calibration::unavailable(why, METHOD_BRACKETED))
}

/// PostgreSQL 19's calibration as PostgreSQL runs it: RDTSCP against
/// `CLOCK_MONOTONIC` (x86-64 only, as in PostgreSQL).
pub fn calibrate_postgresql_native() -> Calibration {
    struct Run;
    impl CounterVisitor for Run {
        type Output = Calibration;
        fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, counter: C) -> Calibration {
            calibrate_postgresql(&PosixClock::monotonic(), &counter)
        }
    }
    arch::visit_postgresql_precise(Scale::NANOSECONDS, Run)
        .unwrap_or_else(|why| Calibration::unavailable(why, METHOD_POSTGRESQL))
}
