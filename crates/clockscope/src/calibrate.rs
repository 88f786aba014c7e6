//! Calibrating the CPU counter (the TSC, the ARM generic timer) against a
//! reference clock that counts nanoseconds, with a bound on the error.
//! (PostgreSQL 19's own algorithm, which has no bound, is reproduced in the
//! tools' `clockscope-system` crate.)
//!
//! [`calibrate_with`] is generic over two [`ClockSource`]s: the reference's
//! ticks are nanoseconds, the counter's raw ticks are counted (its scale is
//! ignored), so tests drive it with scripted clocks.
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
//! no such bound. The two measured side by side on one machine, with its CPU
//! named: `bench/README.md`.

use crate::clock::{ClockSource, PosixClock};
use crate::convert::Scale;
use crate::counter::{visit_ordered, CounterVisitor};
use crate::ticks::Ticks;
use serde::Serialize;

/// The result of a calibration: the counter's frequency against a reference
/// clock, the bound on its error, and how it ended.
///
/// ```
/// let cal = clockscope::calibrate(5_000_000);
/// match (cal.hz, cal.uncertainty_ppm) {
///     (Some(hz), Some(ppm)) => println!("{hz} Hz within {ppm:.1} ppm ({})", cal.note),
///     _ => println!("no frequency: {}", cal.note),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(description = "The result of a calibration."))]
pub struct Calibration {
    /// Counter frequency in kHz (rounded to nearest; PostgreSQL's truncated);
    /// `None` when the calibration did not converge (see `note`).
    pub khz: Option<u64>,
    /// Counter frequency in Hz (rounded to nearest); `None` when not converged.
    pub hz: Option<u64>,
    /// Bound on the relative error against the reference, in ppm (`None`
    /// for PostgreSQL's algorithm, which has none).
    pub uncertainty_ppm: Option<f64>,
    /// Reference time the calibration took.
    pub elapsed_ns: u64,
    /// Counter reads taken.
    pub samples: u64,
    /// How it ended: converged and why, or why not.
    pub note: String,
    /// Which algorithm ran.
    pub method: &'static str,
    /// The counter's display name (e.g. `RDTSCP`).
    pub counter: &'static str,
    /// The reference's display name (e.g. `clock_gettime (CLOCK_MONOTONIC_RAW)`).
    pub reference: &'static str,
}

impl Calibration {
    /// `method` of [`calibrate`] and [`calibrate_with`].
    pub const BRACKETED: &'static str = "clockscope (tightest bracketed reads at both ends of a window)";
    /// Default budget of [`calibrate`]: 50 ms, PostgreSQL's limit, so the two
    /// are compared at the same cost.
    pub const DEFAULT_BUDGET_NS: u64 = 50_000_000;
    /// Stop once the error bound is this small: 1 ppm is 1 µs per second,
    /// below what a kHz-rounded frequency (0.4 ppm at 2.6 GHz) can express.
    pub const DEFAULT_TARGET_PPM: f64 = 1.0;
    /// Above this bound the result is reported as "did not converge": 500 ppm
    /// is 0.5 ms per second, about the median error of PostgreSQL's
    /// calibration on KVM guests (`bench/README.md`).
    pub const MAX_UNCERTAINTY_PPM: f64 = 500.0;
    /// Brackets taken for the start anchor; the tightest is kept.
    pub const START_SAMPLES: u64 = 256;
    /// Brackets per end-anchor batch; the tightest of each batch is the end
    /// candidate and the bound is checked once per batch.
    pub const BATCH_SAMPLES: u64 = 256;
    /// No iteration (three clock reads) is faster than this, so more than
    /// `budget / MIN_ITERATION_NS` iterations means a clock is stuck.
    pub const MIN_ITERATION_NS: u64 = 10;

    /// A calibration that could not run (no counter, wrong architecture).
    pub fn unavailable(note: impl Into<String>, method: &'static str) -> Calibration {
        Calibration {
            khz: None,
            hz: None,
            uncertainty_ppm: None,
            elapsed_ns: 0,
            samples: 0,
            note: note.into(),
            method,
            counter: "",
            reference: "",
        }
    }

    /// Whether a frequency was found.
    pub fn converged(&self) -> bool {
        self.khz.is_some()
    }

    /// Signed error of this calibration against `khz_truth`, in ppm.
    pub fn error_ppm_vs_khz(&self, khz_truth: u64) -> Option<f64> {
        let hz = self.hz.map(|h| h as f64).or(self.khz.map(|k| k as f64 * 1000.0))?;
        let truth = khz_truth as f64 * 1000.0;
        (truth > 0.0).then(|| (hz - truth) / truth * 1e6)
    }
}

/// The start phase never takes more than this share of the budget
/// (1/START_BUDGET_DIVISOR), so a slow reference still leaves a window.
const START_BUDGET_DIVISOR: u64 = 8;
const START_SAMPLES: u64 = Calibration::START_SAMPLES;
const BATCH_SAMPLES: u64 = Calibration::BATCH_SAMPLES;
const MIN_ITERATION_NS: u64 = Calibration::MIN_ITERATION_NS;
const MAX_UNCERTAINTY_PPM: f64 = Calibration::MAX_UNCERTAINTY_PPM;
const METHOD_BRACKETED: &str = Calibration::BRACKETED;

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

/// clockscope's calibration of any `counter` against any `reference` that
/// counts nanoseconds (see the module documentation): stops when the
/// error bound is at most `target_ppm`, or before a bracket that would end
/// past `budget_ns` on the reference clock (predicted from the previous
/// bracket's duration). The first bracket is always read, so only a budget
/// shorter than one bracket (three clock reads) can be exceeded, by that
/// bracket; a budget of 0 reads nothing.
///
/// ```
/// use clockscope::{calibrate_with, Calibration, PosixClock};
/// // Any two clocks: here CLOCK_MONOTONIC against CLOCK_MONOTONIC_RAW (1 GHz "counter").
/// let cal = calibrate_with(&PosixClock::monotonic_raw(), &PosixClock::monotonic(), 2_000_000, 1.0);
/// assert_eq!(cal.method, Calibration::BRACKETED);
/// if let Some(hz) = cal.hz {
///     assert!((hz as f64 - 1e9).abs() < 1e9 * 0.01, "{hz}");
/// }
/// ```
pub fn calibrate_with<R: ClockSource, C: ClockSource>(
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

/// One run of [`calibrate_with`]: the anchors found so far and the counts its
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

/// Calibrates this CPU's counter against `CLOCK_MONOTONIC_RAW` with
/// [`calibrate_with`] for at most `budget_ns` (plus one bracket): RDTSCP
/// (LFENCE;RDTSC without RDTSCP) on x86-64, ISB;CNTVCT_EL0 on aarch64.
/// Without a counter the result says why and has no frequency.
///
/// ```
/// let cal = clockscope::calibrate(5_000_000);
/// assert_eq!(cal.method, clockscope::Calibration::BRACKETED);
/// println!("{:?} Hz: {}", cal.hz, cal.note);
/// ```
pub fn calibrate(budget_ns: u64) -> Calibration {
    struct Run(u64);
    impl CounterVisitor for Run {
        type Output = Calibration;
        fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, counter: C) -> Calibration {
            calibrate_with(
                &PosixClock::monotonic_raw(),
                &counter,
                self.0,
                Calibration::DEFAULT_TARGET_PPM,
            )
        }
    }
    visit_ordered(Scale::NANOSECONDS, Run(budget_ns))
        .unwrap_or_else(|why| Calibration::unavailable(why, METHOD_BRACKETED))
}
