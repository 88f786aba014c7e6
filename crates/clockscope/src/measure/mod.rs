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

pub mod histogram;
pub mod interference;
pub mod pg_loop;

pub use histogram::{Histogram, Percentile, EXACT_LIMIT_NS};

use crate::clock::ClockSource;
use crate::convert::Scale;
use crate::ticks::Ticks;

/// Length of one uninterrupted stretch of the hot loop (10 ms).
pub const CHUNK_NS: u64 = 10_000_000;

/// Backward steps seen in one run.
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
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

    /// Average time per loop iteration in ns, computed as PostgreSQL does
    /// (`elapsed_seconds * 1e9 / loop_count`); `None` without loops.
    pub fn avg_loop_ns(&self) -> Option<f64> {
        let loops = self.loops();
        (loops > 0).then(|| (self.elapsed_ns as f64 / 1e9) * 1e9 / loops as f64)
    }
}

/// What the caller learns between chunks.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Measure the next chunk.
    Continue,
    /// End the run with what was measured.
    Stop,
}

/// Runs the loop on `clock` for `duration_ns` (at least one iteration),
/// calling `control` between chunks.
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
pub const COARSE_PROBE_NS: u64 = 50_000_000;

/// The observed resolution of `clock` after run `m`: the histogram's smallest
/// non-zero step when it is exact; for a coarse clock (steps beyond 10 us,
/// known only by log2 bucket) the step found by [`smallest_step_ns`] in
/// [`COARSE_PROBE_NS`]; `None` when the clock never advanced or the run was
/// interrupted before that could be told.
pub fn observed_step_ns<C: ClockSource>(clock: &C, m: &Measurement) -> Option<u64> {
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
pub fn smallest_step_ns<C: ClockSource>(clock: &C, max_ns: u64) -> Option<u64> {
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
mod tests {
    use super::*;
    use crate::clock::scripted::ScriptedClock;

    fn ns_clock(readings: Vec<u64>) -> ScriptedClock {
        ScriptedClock::from_readings("scripted", Scale::NANOSECONDS, readings)
    }

    #[test]
    fn follows_postgresql_loop_semantics() {
        // start=1000, end=1000+100; the reading that passes end is counted.
        let c = ns_clock(vec![1000, 1000, 1020, 1040, 1040, 1100, 1300]);
        let m = measure(&c, 100, |_| Control::Continue);
        assert_eq!(m.loops(), 5); // diffs 0, 20, 20, 0, 60
        assert_eq!(m.histogram.exact()[0], 2);
        assert_eq!(m.histogram.exact()[20], 2);
        assert_eq!(m.histogram.largest_ns(), 60);
        assert_eq!(m.elapsed_ns, 300);
        assert_eq!(m.avg_loop_ns(), Some(60.0));
        assert_eq!(c.reads(), 7);
        assert!(!m.interrupted);
    }

    #[test]
    fn backward_steps_are_counted_and_the_loop_goes_on() {
        let c = ns_clock(vec![1000, 1010, 990, 995, 950, 1200, 1201]);
        let m = measure(&c, 100, |_| Control::Continue);
        assert_eq!(
            m.backward,
            BackwardSteps {
                count: 2,
                largest_ns: 45,
                first_ns: Some(20),
                total_ns: 65,
            }
        );
        assert_eq!(m.loops(), 3); // 10, 5, 250
        assert_eq!(m.reads(), 5);
        // Forward steps 10, 5, 250 and the end read's 1: end minus start (201) plus 20 + 45.
        assert_eq!(m.end_minus_start_ns, 201);
        assert_eq!(m.elapsed_ns, 266);
        assert_eq!(m.elapsed_source, ElapsedSource::ForwardSteps);
    }

    #[test]
    fn a_clock_stepped_back_100_s_reports_the_real_elapsed_time_and_loop_cost() {
        // Issue 21: a faketime file changed from +0 to -100 mid-run. Reads
        // 1 us apart; read 500 is 100 s earlier, and so is every later one.
        let c = ScriptedClock::new("stepped", Scale::NANOSECONDS, |n| {
            let t = 1_000_000_000_000 + n * 1_000;
            if n >= 500 {
                t - 100_000_000_000
            } else {
                t
            }
        });
        let m = measure(&c, 1_000_000, |_| Control::Continue);
        assert_eq!(m.backward.count, 1);
        assert_eq!(m.backward.total_ns, 100_000_000_000 - 1_000);
        // 1 ms of forward time (the backward read's microsecond is made up
        // at the end): 1000 forward steps of 1 us, then the end read's 1 us.
        assert_eq!(m.loops(), 1000);
        assert_eq!(m.elapsed_ns, 1_001_000);
        assert_eq!(m.elapsed_source, ElapsedSource::ForwardSteps);
        // What end minus start says: about 1 ms - 100 s.
        assert_eq!(m.end_minus_start_ns, 1_002_000 - 100_000_000_000);
        assert!((m.avg_loop_ns().unwrap() - 1001.0).abs() < 1e-9);
        // A clock that never steps back: end minus start, as PostgreSQL.
        let steady = ScriptedClock::new("steady", Scale::NANOSECONDS, |n| n * 1_000);
        let m = measure(&steady, 1_000_000, |_| Control::Continue);
        assert_eq!((m.elapsed_ns, m.end_minus_start_ns), (1_001_000, 1_001_000));
        assert_eq!(m.elapsed_source, ElapsedSource::EndMinusStart);
    }

    #[test]
    fn a_big_backward_jump_neither_prolongs_the_run_nor_waits_for_a_chunk() {
        // 1 ms per read for a 1 s run, but read 100 jumps back by 10 s.
        let c = ScriptedClock::new("jumpy", Scale::NANOSECONDS, |n| {
            let t = 20_000_000_000 + n * 1_000_000;
            if n >= 100 {
                t - 10_000_000_000
            } else {
                t
            }
        });
        let mut calls_after_backward = Vec::new();
        let m = measure(&c, 1_000_000_000, |p| {
            calls_after_backward.push(p.backward_steps);
            Control::Continue
        });
        assert_eq!(m.backward.count, 1);
        assert_eq!(m.backward.first_ns, Some(10_000_000_000 - 1_000_000));
        // 999 forward steps of 1 ms plus the backward one: 1 s of forward time.
        assert_eq!(m.loops(), 999 + 1);
        assert_eq!(c.reads(), 1 + 1001 + 1);
        // The caller heard of the backward step right after read 100, not a
        // chunk later: the 10th call (chunks end at reads 10, 20, ...) sees it.
        assert_eq!(calls_after_backward.iter().position(|&b| b > 0), Some(9));
        // Stopping at the first backward step (pg_test_timing) ends the run there.
        let c2 = ScriptedClock::new("jumpy", Scale::NANOSECONDS, |n| {
            if n >= 100 {
                n
            } else {
                1_000_000_000 + n
            }
        });
        let m2 = measure(&c2, 1_000_000_000, |p| {
            if p.backward_steps > 0 {
                Control::Stop
            } else {
                Control::Continue
            }
        });
        assert!(m2.interrupted);
        assert_eq!(c2.reads(), 101 + 1);
    }

    #[test]
    fn tick_table_equals_converting_every_difference() {
        // Pseudo-random differences at 2.7 GHz from 0 to ~40 us (so some miss
        // the short table), compared with recording each converted difference.
        let scale = Scale::from_khz(2_700_000).unwrap();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut t = 1_000u64;
        let mut readings = vec![t];
        for i in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += match i % 100 {
                0 => x % 100_000, // long: up to 37 us
                1..=4 => 0,       // zero differences
                _ => 20 + x % 60, // short, some repeating
            };
            readings.push(t);
        }
        let expected = {
            let mut h = Histogram::new();
            for w in readings.windows(2) {
                h.record(scale.ticks_to_ns(w[1] - w[0]));
            }
            h
        };
        let end_ticks = t - 1_000;
        readings.push(t + 1); // the ordered end read
        let c = ScriptedClock::from_readings("tsc", scale, readings);
        // A duration ending between the last two scripted loop reads (the
        // last difference is at least 20 ticks; the round trip loses < 3).
        let ns = scale.ticks_to_ns(end_ticks);
        assert!(scale.ns_to_ticks(ns) > end_ticks - 20);
        let m = measure(&c, ns, |_| Control::Continue);
        assert_eq!(m.histogram, expected);
        assert!(m.histogram.largest_ns() >= EXACT_LIMIT_NS);
    }

    #[test]
    fn counter_ticks_are_converted() {
        // 2 GHz: 2 ticks per ns.
        let s = Scale::from_khz(2_000_000).unwrap();
        let c = ScriptedClock::from_readings("tsc", s, vec![0, 50, 100, 20_100, 20_200]);
        let m = measure(&c, 10_000, |_| Control::Continue);
        assert_eq!(m.histogram.exact()[25], 2);
        assert_eq!(m.histogram.largest_ns(), 10_000);
        assert_eq!(m.elapsed_ns, 10_100);
    }

    #[test]
    fn control_is_called_between_chunks_and_can_stop() {
        // Readings advance 1 ms each; duration 1 s = 100 chunks of 10 ms.
        let c = ScriptedClock::new("ms", Scale::NANOSECONDS, |n| n * 1_000_000);
        let mut calls = 0;
        let m = measure(&c, 1_000_000_000, |p| {
            calls += 1;
            assert_eq!(p.target_ns, 1_000_000_000);
            if p.elapsed_ns >= 50_000_000 {
                Control::Stop
            } else {
                Control::Continue
            }
        });
        assert!(m.interrupted);
        assert_eq!(calls, 5);
        assert_eq!(m.loops(), 50);
    }

    #[test]
    fn smallest_step_finds_coarse_ticks() {
        // A 4 ms coarse clock read every 1 us.
        let c = ScriptedClock::new("coarse", Scale::NANOSECONDS, |n| (n * 1_000) / 4_000_000 * 4_000_000);
        assert_eq!(smallest_step_ns(&c, 20_000_000), Some(4_000_000));
        let frozen = ScriptedClock::new("frozen", Scale::NANOSECONDS, |n| if n < 100 { 5 } else { 5 + n });
        assert_eq!(smallest_step_ns(&frozen, 10), Some(100));
        // 1 ms steps, stepped back 100 s at read 5: still 20 ms of reads, not 100 s more.
        let stepped = ScriptedClock::new("stepped", Scale::NANOSECONDS, |n| {
            let t = 200_000_000_000 + n * 1_000_000;
            if n >= 5 {
                t - 100_000_000_000
            } else {
                t
            }
        });
        assert_eq!(smallest_step_ns(&stepped, 20_000_000), Some(1_000_000));
        assert_eq!(stepped.reads(), 1 + 21);
    }

    #[test]
    fn chunks_do_not_change_the_readings() {
        // Same script, one run long enough for many chunks: every reading up
        // to and including the first one past the end is taken exactly once.
        let c = ScriptedClock::new("us", Scale::NANOSECONDS, |n| n * 7_000);
        let m = measure(&c, 100_000_000, |_| Control::Continue);
        // start=0 (read 0); reads 1..=k until k*7000 >= 1e8 -> k = 14286.
        assert_eq!(m.loops(), 14_286);
        assert_eq!(m.histogram.exact()[7000], 14_286);
    }
}
