//! The measuring loop: PostgreSQL 19's pg_test_timing loop, generic over the
//! clock source.
//!
//! ```text
//! start = now_ordered(); cur = start; end = start + duration
//! while end > cur:
//!     prev = cur; cur = now()
//!     diff = ns(cur - prev)          # < 0: a backward step
//!     histogram[log2 bucket]++; exact[diff]++ if < 10000; track largest
//! elapsed = ns(now_ordered() - start) + sizes of the backward steps
//! ```
//!
//! Unlike PostgreSQL, a backward step does not end the loop: it is counted
//! with its size (and the first one kept) and the loop goes on; the caller
//! decides what it means. The run lasts `duration` of forward time, and its
//! elapsed time is the sum of the clock's non-negative steps: end minus
//! start plus every backward step's size. A clock stepped back by 100 s
//! mid-run (a `faketime` file changed from +0 to -100) so still reports the
//! time that passed and the loop's real cost, where end minus start would
//! be negative ([`ElapsedSource`] says which it was). Only the iterations
//! whose reading stepped back are left out of the sum (one read each). A
//! second clock read at both ends would be no more independent: an
//! LD_PRELOAD time library fakes every clock id alike. The loop is monomorphised per [`ClockSource`]: no
//! division, float, allocation or shared atomic per iteration. It runs in
//! chunks of [`CHUNK_NS`] so the caller can update a progress bar or stop
//! (Ctrl-C) between chunks without touching the hot loop; the chunk ends are
//! on the way to `end`, so the readings taken are exactly PostgreSQL's.
//!
//! The hot loop counts differences in the clock's own ticks: every difference
//! shorter than the exact range (10000 ns) increments one slot of a tick-indexed
//! table, and only longer, rarer differences are converted on the spot. Each
//! distinct tick difference is converted to ns once, after the loop; each
//! increment is made after the next read (see `run_chunk`). The
//! histogram is the same as converting every difference in the loop (the
//! conversion is a function of the difference), but an iteration costs one
//! compare and one increment besides the read: our loop stays within a few ns
//! of a bare read, where PostgreSQL's converts and buckets every difference.

mod histogram;

use histogram::EXACT_LIMIT_NS;
pub use histogram::{Histogram, Percentile};

use crate::clock::ClockSource;
use crate::convert::Scale;
use crate::ticks::Ticks;

/// Length of one uninterrupted stretch of the hot loop (10 ms).
pub(crate) const CHUNK_NS: u64 = 10_000_000;

/// Backward steps seen in one run.
///
/// ```
/// use clockscope::{measure, ClockSource, Control, Scale, Ticks};
/// use std::cell::Cell;
/// // A clock that steps back 40 ns once: the step is counted, not hidden.
/// struct SteppedBack(Cell<u64>);
/// impl ClockSource for SteppedBack {
///     fn name(&self) -> &'static str { "stepped back" }
///     fn now(&self) -> Ticks {
///         let n = self.0.replace(self.0.get() + 1);
///         Ticks::from_raw(if n == 3 { 160 } else { n * 100 })
///     }
///     fn scale(&self) -> Scale { Scale::NANOSECONDS }
/// }
/// let m = measure(&SteppedBack(Cell::new(0)), 1_000, |_| Control::Continue);
/// assert_eq!((m.backward.count, m.backward.largest_ns), (1, 40));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackwardSteps {
    /// How many successive readings went backwards.
    pub count: u64,
    /// The largest backward step, in ns (positive).
    pub largest_ns: u64,
    /// The first backward step, in ns (positive), as PostgreSQL reports it.
    pub first_ns: Option<u64>,
    /// The sizes of all backward steps added up, in ns.
    pub total_ns: u64,
}

/// Where [`Measurement::elapsed_ns`] came from.
///
/// ```
/// use clockscope::{measure, Control, PosixClock};
/// let m = measure(&PosixClock::monotonic(), 5_000_000, |_progress| Control::Continue);
/// assert_eq!(m.elapsed_source, clockscope::ElapsedSource::EndMinusStart);
/// let median = m.histogram.percentile(0.5);
/// println!("{} loops, {:?} ns per loop, median step {:?} ns", m.loops(), m.avg_loop_ns(), median.map(|p| p.ns));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(
    feature = "schemars",
    schemars(description = "Where [`Measurement::elapsed_ns`] came from.")
)]
pub enum ElapsedSource {
    /// The end reading minus the start reading (PostgreSQL's): the clock
    /// never stepped back.
    #[default]
    EndMinusStart,
    /// The sum of the clock's non-negative steps (end minus start plus the
    /// backward steps' sizes): the clock stepped back, so end minus start
    /// would understate the run, or be negative.
    ForwardSteps,
}

/// The result of one run of the loop over one clock.
///
/// ```
/// use clockscope::{measure, Control, PosixClock};
/// let m = measure(&PosixClock::monotonic(), 5_000_000, |_progress| Control::Continue);
/// assert!(m.loops() > 0 && m.backward.count == 0);
/// let median = m.histogram.percentile(0.5);
/// println!("{} loops, {:?} ns per loop, median step {:?} ns", m.loops(), m.avg_loop_ns(), median.map(|p| p.ns));
/// ```
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The clock's display name.
    pub clock: &'static str,
    /// Forward (or zero) differences, counted.
    pub histogram: Histogram,
    /// Backward differences.
    pub backward: BackwardSteps,
    /// ns the run lasted: the sum of the clock's non-negative steps from the
    /// ordered start reading to the ordered end reading (end minus start
    /// when the clock never stepped back; see [`ElapsedSource`]).
    pub elapsed_ns: u64,
    /// How `elapsed_ns` was found.
    pub elapsed_source: ElapsedSource,
    /// The end reading minus the start reading, ns (negative when the clock
    /// stepped back further than it ran).
    pub end_minus_start_ns: i64,
    /// Whether the caller stopped the run before its duration.
    pub interrupted: bool,
}

impl Measurement {
    /// Loop iterations that produced a forward difference (PostgreSQL's loop_count).
    pub fn loops(&self) -> u64 {
        self.histogram.count()
    }

    /// Every iteration, backward steps included.
    pub fn reads(&self) -> u64 {
        self.histogram.count() + self.backward.count
    }

    /// The observed resolution of `clock` after this run: the histogram's
    /// smallest non-zero step when it is exact; for a coarse clock (steps
    /// beyond 10 us, known only by log2 bucket) the smallest step seen in
    /// 50 ms more of reads; `None` when the clock never advanced or the run
    /// was interrupted before that could be told.
    pub fn observed_step_ns<C: ClockSource>(&self, clock: &C) -> Option<u64> {
        observed_step_ns(clock, self)
    }

    /// Average time per loop iteration in ns, computed as PostgreSQL does
    /// (`elapsed_seconds * 1e9 / loop_count`); `None` without loops.
    pub fn avg_loop_ns(&self) -> Option<f64> {
        let loops = self.loops();
        (loops > 0).then(|| (self.elapsed_ns as f64 / 1e9) * 1e9 / loops as f64)
    }
}

/// What the caller learns between chunks.
///
/// ```
/// use clockscope::{measure, Control, PosixClock};
/// // Stop after the first chunk, as a Ctrl-C handler would.
/// let m = measure(&PosixClock::monotonic(), 10_000_000_000, |p| {
///     assert!(p.elapsed_ns <= p.target_ns);
///     Control::Stop
/// });
/// assert!(m.interrupted);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// ns since the start reading.
    pub elapsed_ns: u64,
    /// The run's target duration in ns.
    pub target_ns: u64,
    /// Backward steps so far.
    pub backward_steps: u64,
}

/// The caller's answer between chunks.
///
/// ```
/// use clockscope::{measure, Control, PosixClock};
/// let m = measure(&PosixClock::monotonic(), 1_000_000, |_| Control::Continue);
/// assert!(!m.interrupted);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Measure the next chunk.
    Continue,
    /// End the run with what was measured.
    Stop,
}

/// Runs the loop on `clock` for `duration_ns` (at least one iteration),
/// calling `control` between chunks.
///
/// ```
/// use clockscope::{measure, Control, PosixClock};
/// let m = measure(&PosixClock::monotonic(), 5_000_000, |_progress| Control::Continue);
/// assert!(m.loops() > 0 && m.backward.count == 0);
/// let median = m.histogram.percentile(0.5);
/// println!("{} loops, {:?} ns per loop, median step {:?} ns", m.loops(), m.avg_loop_ns(), median.map(|p| p.ns));
/// ```
pub fn measure<C: ClockSource>(
    clock: &C,
    duration_ns: u64,
    mut control: impl FnMut(&Progress) -> Control,
) -> Measurement {
    let scale = clock.scale();
    let duration_ticks = scale.ns_to_ticks(duration_ns);
    let chunk_ticks = scale.ns_to_ticks(CHUNK_NS).max(1);
    let mut histogram = Histogram::new();
    let mut short = short_diff_table(&scale);
    let mut backward = BackwardSteps::default();
    let mut interrupted = false;

    let start = clock.now_ordered();
    let mut end = start.saturating_add(duration_ticks);
    let mut cur = start;
    // The backward steps' sizes added up: forward time = end minus start plus this.
    let mut back_total_ticks = 0u64;
    while end > cur {
        let chunk_end = cur.saturating_add(chunk_ticks).min(end);
        let back_ticks;
        (cur, back_ticks) = run_chunk(clock, &scale, cur, chunk_end, &mut short, &mut histogram, &mut backward);
        // A clock that jumped back by X would otherwise be read for X more:
        // the run lasts `duration` of forward time instead.
        end = end.saturating_sub(back_ticks);
        back_total_ticks = back_total_ticks.saturating_add(back_ticks);
        if end > cur {
            let progress = Progress {
                elapsed_ns: scale.ticks_to_ns(forward_ticks(start, cur, back_total_ticks)),
                target_ns: duration_ns,
                backward_steps: backward.count,
            };
            if control(&progress) == Control::Stop {
                interrupted = true;
                break;
            }
        }
    }
    let stop = clock.now_ordered();
    for (ticks, &n) in short.iter().enumerate() {
        histogram.record_n(scale.ticks_to_ns(ticks as u64), n);
    }
    backward.total_ns = scale.ticks_to_ns(back_total_ticks);
    let end_minus_start = stop.delta_since(start);
    let end_minus_start_ns = match end_minus_start {
        d if d >= 0 => scale.ticks_to_ns(d as u64).min(i64::MAX as u64) as i64,
        d => -(scale.ticks_to_ns(d.unsigned_abs()).min(i64::MAX as u64) as i64),
    };
    Measurement {
        clock: clock.name(),
        histogram,
        backward,
        elapsed_ns: scale.ticks_to_ns(forward_ticks(start, stop, back_total_ticks)),
        elapsed_source: if backward.count > 0 {
            ElapsedSource::ForwardSteps
        } else {
            ElapsedSource::EndMinusStart
        },
        end_minus_start_ns,
        interrupted,
    }
}

/// Forward time from `start` to `now` in ticks: `now - start` plus the
/// backward steps' sizes `back_ticks` (the sum of the non-negative steps),
/// 0 when even that is negative.
fn forward_ticks(start: Ticks, now: Ticks, back_ticks: u64) -> u64 {
    let t = now.delta_since(start) as i128 + back_ticks as i128;
    t.clamp(0, u64::MAX as i128) as u64
}

/// Most slots of the tick-indexed table of short differences: 2^20 (8 MiB),
/// enough for a 100 GHz counter's 10 us.
const MAX_SHORT_SLOTS: u64 = 1 << 20;

/// The table of short differences for `scale`: one slot per tick count up to
/// just past 10000 ns, zeroed and touched now so the loop takes no page
/// faults (as PostgreSQL memsets its tables before its loop).
fn short_diff_table(scale: &Scale) -> Vec<u64> {
    let slots = scale.ns_to_ticks(EXACT_LIMIT_NS).saturating_add(2).min(MAX_SHORT_SLOTS);
    let mut table = vec![0u64; slots as usize];
    // black_box: the optimiser may not drop these stores as "already zero".
    table.fill(std::hint::black_box(0));
    table
}

/// The hot loop: reads until `end > cur` fails, starting from `cur`.
/// Returns the last reading, and the size in ticks of a backward step if
/// one ended the chunk early (0 otherwise), so the caller hears of it at once.
#[inline(always)]
fn run_chunk<C: ClockSource>(
    clock: &C,
    scale: &Scale,
    mut cur: Ticks,
    end: Ticks,
    short: &mut [u64],
    histogram: &mut Histogram,
    backward: &mut BackwardSteps,
) -> (Ticks, u64) {
    let slots = short.len() as u64;
    // The previous short difference's slot and count (0 when none): each
    // increment is done one iteration late, after the next read, so no
    // store's address waits on the read just taken. On AMD Zen 3 a store
    // whose address depends on RDTSC's result made the loop ~1.5x a bare
    // RDTSC, the deferred increment ~1.0x (bench/README.md, "The AMD loop").
    // The counts are the same: the last one is added after the loop.
    let (mut pending, mut pending_n) = (0usize, 0u64);
    while end > cur {
        let prev = cur;
        cur = clock.now();
        short[pending] += pending_n;
        // Wrapping: a backward step becomes a huge unsigned difference and
        // takes the same not-short branch as a long difference.
        let diff = cur.raw().wrapping_sub(prev.raw());
        if diff < slots {
            (pending, pending_n) = (diff as usize, 1);
        } else {
            pending_n = 0;
            if let Some(back) = long_or_backward(scale, diff, histogram, backward) {
                return (cur, back);
            }
        }
    }
    short[pending] += pending_n;
    (cur, 0)
}

/// A difference outside the short table: counted in ns now, or a backward
/// step (returned in ticks).
#[cold]
#[inline(never)]
fn long_or_backward(scale: &Scale, diff: u64, histogram: &mut Histogram, backward: &mut BackwardSteps) -> Option<u64> {
    if (diff as i64) < 0 {
        let back = (diff as i64).unsigned_abs();
        record_backward(backward, scale.ticks_to_ns(back));
        return Some(back);
    }
    histogram.record(scale.ticks_to_ns(diff));
    None
}

/// How long a clock whose steps exceed the exact range is read to find its
/// exact step: 50 ms, a dozen ticks of a 4 ms coarse clock.
pub(crate) const COARSE_PROBE_NS: u64 = 50_000_000;

/// The observed resolution of `clock` after run `m`: the histogram's smallest
/// non-zero step when it is exact; for a coarse clock (steps beyond 10 us,
/// known only by log2 bucket) the step found by [`smallest_step_ns`] in
/// [`COARSE_PROBE_NS`]; `None` when the clock never advanced or the run was
/// interrupted before that could be told.
pub(crate) fn observed_step_ns<C: ClockSource>(clock: &C, m: &Measurement) -> Option<u64> {
    match m.histogram.min_nonzero() {
        Some(p) if p.exact => Some(p.ns),
        Some(_) if !m.interrupted => smallest_step_ns(clock, COARSE_PROBE_NS),
        _ => None,
    }
}

/// The smallest non-zero step of `clock`, found by reading it for up to
/// `max_ns` of its forward time (the sum of its non-negative steps, so a
/// clock stepped back does not stretch the probe) and keeping the smallest
/// forward difference. For coarse clocks whose steps exceed the histogram's
/// exact range (CLOCK_*_COARSE: 1-4 ms); not part of the measuring loop.
pub(crate) fn smallest_step_ns<C: ClockSource>(clock: &C, max_ns: u64) -> Option<u64> {
    let scale = clock.scale();
    let max_ticks = scale.ns_to_ticks(max_ns);
    let mut prev = clock.now_ordered();
    let mut forward_ticks = 0u64;
    let mut smallest: Option<u64> = None;
    loop {
        let cur = clock.now();
        let d = cur.delta_since(prev);
        if d > 0 {
            let ns = scale.ticks_to_ns(d as u64);
            smallest = Some(smallest.map_or(ns, |s| s.min(ns)));
            forward_ticks = forward_ticks.saturating_add(d as u64);
        }
        prev = cur;
        if forward_ticks >= max_ticks {
            return smallest;
        }
    }
}

fn record_backward(backward: &mut BackwardSteps, ns: u64) {
    backward.count += 1;
    backward.largest_ns = backward.largest_ns.max(ns);
    backward.first_ns.get_or_insert(ns);
}

#[cfg(test)]
mod tests;
