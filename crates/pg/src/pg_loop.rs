//! PostgreSQL 19's pg_test_timing loop, iteration for iteration: the loop the
//! drop-in `pg_test_timing` runs, so that its "Average loop time including
//! overhead", its histogram and its exact table are the ones PostgreSQL 19's
//! own binary reports on the same machine.
//!
//! Upstream's `test_timing()` (`src/bin/pg_test_timing/pg_test_timing.c`)
//! does, per iteration:
//!
//! ```text
//! prev = cur; cur = read()                       # fast or precise, as the block says
//! diff = ticks_to_ns(cur - prev)                 # converted EVERY iteration
//! diff < 0: "Detected clock going backwards", exit 1
//! histogram[diff > 0 ? highest bit + 1 : 0]++    # the log2 bucket, at once
//! if diff < 10000: direct_histogram[diff]++      # the exact table
//! largest_diff / largest_diff_count tracking
//! loop_count++
//! while end > cur                                # compared in ticks
//! ```
//!
//! with `ticks_to_ns` being `pg_ticks_to_ns` (`src/include/portability/
//! instr_time.h`): identity when the ticks are nanoseconds (the system clock:
//! `ticks_per_ns_scaled == 0`, a run-time test), else `(ticks * scale) >> 14`
//! with `scale = (10^6 << 14) / kHz` truncated and an overflow split above
//! `max_ticks_no_overflow` ([`PgTicksToNs`]). This module does that work and
//! no more, which is why it is not [`clockscope::measure()`]: that loop is lean on
//! purpose (it defers each increment and converts after the loop) to measure a
//! clock's own read cost for `clockscope check`; this one pays what PostgreSQL
//! 19's loop pays (on AMD Zen 3 the histogram store whose address depends on
//! the fresh read is most of the difference, bench/README.md).
//!
//! One difference, on purpose: a backward step is detected on the tick
//! difference, before the conversion. Upstream multiplies the signed tick
//! difference by an unsigned scale, so under the TSC a backward step becomes a
//! huge positive duration (gcc even drops the `diff < 0` test on that path);
//! here it ends the run with upstream's message, as the system clock does.

use crate::system_clock::PgSystemClock;
use clockscope::{ClockSource, CounterPairVisitor, Scale};

/// Differences below this many ns are counted one by one (`NUM_DIRECT`).
pub const NUM_DIRECT: usize = 10_000;
/// Log2 buckets: PostgreSQL's 64, plus one so that every u64 duration has a
/// bucket without a bounds check in the loop (bucket 64 is never reached by a
/// duration that fits in PostgreSQL's int64).
pub const PG_BUCKETS: usize = 65;

const NS_PER_S: u64 = 1_000_000_000;
/// `TICKS_TO_NS_SHIFT` of instr_time.h.
const SHIFT: u32 = 14;

/// PostgreSQL 19's tick<->ns arithmetic (`pg_ticks_to_ns`, `pg_ns_to_ticks`,
/// `set_ticks_per_ns_for_tsc`): the truncated fixed-point scale, so every
/// duration is the number PostgreSQL 19 would print for the same ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgTicksToNs {
    /// `ticks_per_ns_scaled`: 0 when ticks are nanoseconds.
    ticks_per_ns_scaled: u64,
    /// `max_ticks_no_overflow`: `INT64_MAX / ticks_per_ns_scaled`.
    max_ticks_no_overflow: u64,
}

impl PgTicksToNs {
    /// Ticks that are nanoseconds (clock_gettime): PostgreSQL's scale 0.
    pub const SYSTEM: PgTicksToNs = PgTicksToNs {
        ticks_per_ns_scaled: 0,
        max_ticks_no_overflow: 0,
    };

    /// A counter at `khz` (PostgreSQL's `timing_tsc_frequency_khz`);
    /// `None` for 0 or a frequency so high that the scale truncates to 0.
    pub const fn counter_khz(khz: u64) -> Option<PgTicksToNs> {
        if khz == 0 {
            return None;
        }
        let scaled = ((NS_PER_S / 1000) << SHIFT) / khz;
        if scaled == 0 {
            return None;
        }
        Some(PgTicksToNs {
            ticks_per_ns_scaled: scaled,
            max_ticks_no_overflow: i64::MAX as u64 / scaled,
        })
    }

    /// The arithmetic for a clock with `scale`: [`SYSTEM`](Self::SYSTEM) when
    /// its ticks are nanoseconds, else a counter at `scale`'s whole kHz (a
    /// 1 GHz counter converts the same either way). A counter outside what
    /// the scale can express (below 1 kHz, above 16 THz; clockscope accepts
    /// 1 MHz to 10 GHz) is clamped to its nearest end.
    pub const fn for_scale(scale: Scale) -> PgTicksToNs {
        if scale.hz() == NS_PER_S {
            return PgTicksToNs::SYSTEM;
        }
        let khz = if scale.khz() == 0 { 1 } else { scale.khz() };
        match PgTicksToNs::counter_khz(khz) {
            Some(c) => c,
            None => PgTicksToNs {
                ticks_per_ns_scaled: 1,
                max_ticks_no_overflow: i64::MAX as u64,
            },
        }
    }

    /// `ticks_per_ns_scaled` (0: ticks are ns).
    pub const fn ticks_per_ns_scaled(&self) -> u64 {
        self.ticks_per_ns_scaled
    }

    /// `pg_ticks_to_ns` for a tick count that is not negative, wrapping as
    /// PostgreSQL's `-fwrapv` build does where a huge count overflows.
    #[inline(always)]
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        let scaled = self.ticks_per_ns_scaled;
        if scaled == 0 {
            return ticks;
        }
        if ticks > self.max_ticks_no_overflow {
            // Upstream's `unlikely()`: a branch to a cold path, not both
            // paths computed and one selected (which LLVM would otherwise do).
            return self.ticks_to_ns_split(ticks);
        }
        ticks.wrapping_mul(scaled) >> SHIFT
    }

    /// The overflow-safe two-part conversion for tick counts above
    /// `max_ticks_no_overflow` (intervals of days at GHz rates).
    #[cold]
    #[inline(never)]
    fn ticks_to_ns_split(&self, ticks: u64) -> u64 {
        let scaled = self.ticks_per_ns_scaled;
        let count = ticks >> SHIFT;
        let rest = ticks - (count << SHIFT);
        count
            .wrapping_mul(scaled)
            .wrapping_add(rest.wrapping_mul(scaled) >> SHIFT)
    }

    /// `pg_ticks_to_ns` on a signed tick count (the elapsed time of a
    /// block: `end - start` in int64), with PostgreSQL's `-fwrapv`
    /// arithmetic: a negative count converts to a negative duration.
    pub fn ticks_to_ns_signed(&self, ticks: i64) -> i64 {
        if self.ticks_per_ns_scaled == 0 {
            return ticks;
        }
        if ticks > self.max_ticks_no_overflow as i64 {
            return self.ticks_to_ns_split(ticks as u64) as i64;
        }
        ticks.wrapping_mul(self.ticks_per_ns_scaled as i64) >> SHIFT
    }

    /// `pg_ns_to_ticks` for `ns` that is not negative, in PostgreSQL's
    /// `-fwrapv` int64 arithmetic: above about 2^63 ticks (`-d` beyond a
    /// century at GHz rates) `count << 14` wraps, as upstream's does.
    pub const fn ns_to_ticks(&self, ns: u64) -> u64 {
        let scaled = self.ticks_per_ns_scaled;
        if scaled == 0 {
            return ns;
        }
        let (mut ticks, mut ns) = (0u64, ns);
        if ns > (i64::MAX as u64 >> SHIFT) {
            let count = ns / scaled;
            ticks = count << SHIFT;
            ns -= count * scaled;
        }
        ticks.wrapping_add((ns << SHIFT) / scaled)
    }
}

/// The statistics of one block, as upstream keeps them (its static arrays
/// and globals), allocated and touched before the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgTimingRun {
    /// `histogram[]`: bucket 0 = difference 0, bucket b holds [2^(b-1), 2^b-1] ns.
    pub histogram: [u64; PG_BUCKETS],
    /// `direct_histogram[]`: exact counts of differences 0..10000 ns.
    pub direct_histogram: Box<[u64; NUM_DIRECT]>,
    /// `largest_diff`, ns.
    pub largest_diff_ns: u64,
    /// `largest_diff_count`.
    pub largest_diff_count: u64,
    /// `loop_count`.
    pub loop_count: u64,
    /// ns from the precise start read to the precise end read
    /// (`INSTR_TIME_SUBTRACT(end_time, start_time)`, converted).
    pub elapsed_ns: i64,
}

impl PgTimingRun {
    fn zeroed() -> PgTimingRun {
        let mut direct: Box<[u64; NUM_DIRECT]> = vec![0u64; NUM_DIRECT]
            .into_boxed_slice()
            .try_into()
            .expect("NUM_DIRECT slots");
        // Upstream memsets its tables "to bring them into processor cache";
        // black_box keeps these stores from being dropped as "already zero".
        direct.fill(std::hint::black_box(0));
        PgTimingRun {
            histogram: [0; PG_BUCKETS],
            direct_histogram: direct,
            largest_diff_ns: 0,
            largest_diff_count: 0,
            loop_count: 0,
            elapsed_ns: 0,
        }
    }

    /// "Average loop time including overhead", as upstream computes it:
    /// `INSTR_TIME_GET_DOUBLE(elapsed) * NS_PER_S / loop_count` (infinite or
    /// NaN without loops, as upstream's division gives).
    pub fn avg_loop_ns(&self) -> f64 {
        (self.elapsed_ns as f64 / 1e9) * 1e9 / self.loop_count as f64
    }

    /// The highest non-empty log2 bucket (0 when all are empty).
    pub fn max_bucket(&self) -> usize {
        self.histogram.iter().rposition(|&c| c != 0).unwrap_or(0)
    }
}

/// How a block ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgOutcome {
    /// The duration passed.
    Done(Box<PgTimingRun>),
    /// Time went backwards by this many ns (positive; upstream prints it
    /// negated) and the run stopped there.
    Backward {
        /// How far back, ns.
        ns: u64,
    },
}

/// A clock with upstream's loop ([`pg_test_timing_loop`]) compiled for it,
/// behind a trait object: the drop-in's report is written once for every
/// clock, and the production clocks' loops are monomorphised here, in a crate
/// the dev profile optimises ([`with_counter_blocks`], [`system_block`]), while
/// the drop-in itself builds at opt-level 0. Tests pass scripted clocks.
pub trait TimedBlock {
    /// The clock's name, as the block's heading prints it.
    fn name(&self) -> &'static str;
    /// One block: [`pg_test_timing_loop`] for `duration_ns`.
    fn run(&self, conv: PgTicksToNs, duration_ns: u64) -> PgOutcome;
}

impl<C: ClockSource> TimedBlock for C {
    fn name(&self) -> &'static str {
        ClockSource::name(self)
    }
    fn run(&self, conv: PgTicksToNs, duration_ns: u64) -> PgOutcome {
        pg_test_timing_loop(self, conv, duration_ns)
    }
}

/// The system clock's block (`clock_gettime(CLOCK_MONOTONIC)` as PostgreSQL
/// reads it), its loop compiled in this crate.
pub fn system_block() -> &'static dyn TimedBlock {
    &PgSystemClock
}

/// Calls `f` with the CPU counter's precise and fast blocks at `scale`
/// (RDTSCP and RDTSC on x86-64, ISB;CNTVCT_EL0 and CNTVCT_EL0 on aarch64),
/// their loops compiled in this crate; `Err` (and no call) where this build
/// has no counter or the CPU lacks the precise read.
pub fn with_counter_blocks(
    scale: Scale,
    f: &mut dyn FnMut(&dyn TimedBlock, &dyn TimedBlock),
) -> Result<(), &'static str> {
    struct Blocks<'a>(&'a mut dyn FnMut(&dyn TimedBlock, &dyn TimedBlock));
    impl CounterPairVisitor for Blocks<'_> {
        type Output = ();
        fn visit<P: ClockSource, F: ClockSource>(self, precise: P, fast: F) {
            (self.0)(&precise, &fast);
        }
    }
    clockscope::visit_pair(scale, Blocks(f))
}

/// Runs upstream's `test_timing()` loop on `clock` for `duration_ns`
/// (upstream: `duration * NS_PER_S`), converting with `conv`: start and end with the clock's precise read
/// (`INSTR_TIME_SET_CURRENT`), the loop with its `now()` (the fast read for
/// the `Fast clock source` block, the precise one for `Clock source`).
pub fn pg_test_timing_loop<C: ClockSource>(clock: &C, conv: PgTicksToNs, duration_ns: u64) -> PgOutcome {
    let mut run = PgTimingRun::zeroed();
    let start = clock.now_ordered().raw();
    // `INSTR_TIME_ADD_NANOSEC(end_time, duration * NS_PER_S)`: int64 ticks,
    // wrapping as upstream's `-fwrapv` build does (a duration beyond a
    // century at GHz rates ends before the first loop, as upstream's).
    let end = start.wrapping_add(conv.ns_to_ticks(duration_ns));
    match hot_loop(clock, conv, start, end, &mut run) {
        Ok(()) => {}
        Err(back_ticks) => {
            return PgOutcome::Backward {
                ns: conv.ticks_to_ns(back_ticks),
            }
        }
    }
    let stop = clock.now_ordered().raw();
    run.elapsed_ns = conv.ticks_to_ns_signed(stop.wrapping_sub(start) as i64);
    PgOutcome::Done(Box::new(run))
}

/// The loop itself: `Err(ticks)` at the first backward step. Kept in its own
/// function, inlined, so the generated code can be read next to upstream's
/// (`cargo asm`-free: `objdump -d` of the release binary).
#[inline(always)]
fn hot_loop<C: ClockSource>(
    clock: &C,
    conv: PgTicksToNs,
    start: u64,
    end: u64,
    run: &mut PgTimingRun,
) -> Result<(), u64> {
    let histogram = &mut run.histogram;
    let direct = &mut *run.direct_histogram;
    let (mut largest, mut largest_count) = (0u64, 0u64);
    let mut loop_count = 0u64;
    // INSTR_TIME_GT on int64 ticks: a signed comparison.
    let end = end as i64;
    let mut cur = start;
    while end > cur as i64 {
        let prev = cur;
        cur = clock.now().raw();
        let diff_ticks = cur.wrapping_sub(prev);
        if (diff_ticks as i64) < 0 {
            run.loop_count = loop_count;
            return Err(diff_ticks.wrapping_neg());
        }
        let diff = conv.ticks_to_ns(diff_ticks);
        // pg_leftmost_one_pos64(diff) + 1, or 0 for no difference.
        let bits = if diff > 0 {
            (u64::BITS - diff.leading_zeros()) as usize
        } else {
            0
        };
        histogram[bits] += 1;
        if diff < NUM_DIRECT as u64 {
            direct[diff as usize] += 1;
        }
        if diff > largest {
            largest = diff;
            largest_count = 1;
        } else if diff == largest {
            largest_count += 1;
        }
        loop_count += 1;
    }
    run.largest_diff_ns = largest;
    run.largest_diff_count = largest_count;
    run.loop_count = loop_count;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope::ScriptedClock;

    fn done(o: PgOutcome) -> PgTimingRun {
        match o {
            PgOutcome::Done(r) => *r,
            other => panic!("expected a finished run, got {other:?}"),
        }
    }

    #[test]
    fn scale_is_postgresqls_truncated_one() {
        // 2.5 GHz: (10^6 << 14) / 2500000 = 6553.6, truncated to 6553.
        let c = PgTicksToNs::counter_khz(2_500_000).unwrap();
        assert_eq!(c.ticks_per_ns_scaled(), 6553);
        // 2.5e9 ticks (one second) read 0.009% short (999908447 = 2.5e9 * 6553 >> 14).
        assert_eq!(c.ticks_to_ns(2_500_000_000), 999_908_447);
        // This guest's kernel frequency.
        let amd = PgTicksToNs::counter_khz(2_445_404).unwrap();
        assert_eq!(amd.ticks_per_ns_scaled(), 6699);
        assert_eq!(amd.ticks_to_ns(100), 40);
        assert_eq!(PgTicksToNs::counter_khz(0), None);
        assert_eq!(PgTicksToNs::counter_khz(u64::MAX), None);
    }

    #[test]
    fn conversion_matches_postgresql_formula_and_its_overflow_split() {
        let c = PgTicksToNs::counter_khz(2_445_404).unwrap();
        let s = c.ticks_per_ns_scaled() as u128;
        for ticks in [
            0u64,
            1,
            99,
            24_454,
            1 << 40,
            c.max_ticks_no_overflow,
            c.max_ticks_no_overflow + 1,
        ] {
            let expected = if ticks > c.max_ticks_no_overflow {
                let count = (ticks >> 14) as u128;
                count * s + (((ticks - (ticks >> 14 << 14)) as u128 * s) >> 14)
            } else {
                (ticks as u128 * s) >> 14
            };
            assert_eq!(c.ticks_to_ns(ticks) as u128, expected, "ticks {ticks}");
        }
        // Past the split, the two-part sum differs from the one-part formula
        // by at most the truncation of the lower part (< 1 ns).
        let big = i64::MAX as u64 - 5;
        let one_part = (big as u128 * s) >> 14;
        assert!(one_part - c.ticks_to_ns(big) as u128 <= 1);
        assert_eq!(PgTicksToNs::SYSTEM.ticks_to_ns(12_345), 12_345);
    }

    #[test]
    fn ns_to_ticks_is_postgresqls_inverse() {
        let c = PgTicksToNs::counter_khz(2_000_000).unwrap(); // scale 8192 exactly
        assert_eq!(c.ns_to_ticks(1_000_000_000), 2_000_000_000);
        let amd = PgTicksToNs::counter_khz(2_445_404).unwrap();
        // (2e9 << 14) / 6699 = 4891476339 (a 1.0002x longer run in ticks,
        // as upstream's truncated scale gives).
        assert_eq!(amd.ns_to_ticks(2_000_000_000), (2_000_000_000u64 << 14) / 6699);
        // The split path: ns above INT64_MAX >> 14.
        let ns = 4_294_967_295u64 * NS_PER_S;
        let count = ns / 6699;
        assert_eq!(
            amd.ns_to_ticks(ns),
            (count << 14) + (((ns - count * 6699) << 14) / 6699)
        );
        assert_eq!(PgTicksToNs::SYSTEM.ns_to_ticks(77), 77);
    }

    #[test]
    fn for_scale_picks_system_for_nanosecond_ticks() {
        assert_eq!(PgTicksToNs::for_scale(Scale::NANOSECONDS), PgTicksToNs::SYSTEM);
        let tsc = PgTicksToNs::for_scale(Scale::from_khz(2_445_404).unwrap());
        assert_eq!(tsc, PgTicksToNs::counter_khz(2_445_404).unwrap());
        // Out of range: clamped, never a zero scale.
        assert_eq!(
            PgTicksToNs::for_scale(Scale::from_hz(999).unwrap()).ticks_per_ns_scaled(),
            1_000_000 << 14
        );
        assert_eq!(
            PgTicksToNs::for_scale(Scale::from_khz(u64::MAX / 1000).unwrap()).ticks_per_ns_scaled(),
            1
        );
    }

    #[test]
    fn counts_every_difference_as_upstream() {
        // 1 s at 1 ns ticks: readings 0, 0, 20, 40, 40, 100, 12100, then
        // one past the end (1e9 + 5) and the end read.
        let c = ScriptedClock::from_readings(
            "s",
            Scale::NANOSECONDS,
            vec![0, 0, 20, 40, 40, 100, 12_100, 1_000_000_005, 1_000_000_010],
        );
        let r = done(pg_test_timing_loop(&c, PgTicksToNs::SYSTEM, NS_PER_S));
        assert_eq!(r.loop_count, 7); // 0, 20, 20, 0, 60, 12000, 999987905
        assert_eq!(r.histogram[0], 2);
        assert_eq!(r.histogram[5], 2); // 20 in [16, 31]
        assert_eq!(r.histogram[6], 1); // 60
        assert_eq!(r.histogram[14], 1); // 12000 in [8192, 16383]
        assert_eq!(r.histogram[30], 1); // 999987905 in [2^29, 2^30-1]
        assert_eq!(r.histogram.iter().sum::<u64>(), 7);
        assert_eq!(r.direct_histogram[0], 2);
        assert_eq!(r.direct_histogram[20], 2);
        assert_eq!(r.direct_histogram[60], 1);
        assert_eq!(r.direct_histogram.iter().sum::<u64>(), 5);
        assert_eq!((r.largest_diff_ns, r.largest_diff_count), (999_987_905, 1));
        assert_eq!(r.elapsed_ns, 1_000_000_010);
        assert_eq!(r.max_bucket(), 30);
        assert!((r.avg_loop_ns() - 1_000_000_010.0 / 7.0).abs() < 1e-6);
        assert_eq!(c.reads(), 9);
    }

    #[test]
    fn largest_difference_is_counted_each_time_it_repeats() {
        let c = ScriptedClock::from_readings(
            "s",
            Scale::NANOSECONDS,
            vec![0, 50, 100, 120, 170, 2_000_000_000, 2_000_000_001],
        );
        let r = done(pg_test_timing_loop(&c, PgTicksToNs::SYSTEM, NS_PER_S));
        assert_eq!((r.largest_diff_ns, r.largest_diff_count), (1_999_999_830, 1));
        assert_eq!(r.direct_histogram[50], 3);
    }

    #[test]
    fn counter_ticks_are_converted_every_iteration_with_the_truncated_scale() {
        // 2.5 GHz, scale 6553: 100 ticks = 39 ns (exact 40), 25 ticks = 9 ns (exact 10).
        let scale = Scale::from_khz(2_500_000).unwrap();
        let conv = PgTicksToNs::for_scale(scale);
        let end = conv.ns_to_ticks(NS_PER_S);
        let c = ScriptedClock::from_readings("tsc", scale, vec![0, 100, 125, 225, end + 1, end + 2]);
        let r = done(pg_test_timing_loop(&c, conv, NS_PER_S));
        assert_eq!(r.direct_histogram[39], 2);
        assert_eq!(r.direct_histogram[9], 1);
        assert_eq!(r.loop_count, 4);
        assert_eq!(r.largest_diff_ns, conv.ticks_to_ns(end + 1 - 225));
        assert_eq!(r.elapsed_ns, conv.ticks_to_ns(end + 2) as i64);
    }

    #[test]
    fn a_huge_duration_wraps_as_upstreams_and_runs_no_loop() {
        // -d 4000000000 at 2.5 GHz: upstream's `count << 14` wraps the end
        // tick negative, so `end > cur` is false at once: no loop, and the
        // average is elapsed / 0 (infinite), as upstream prints it.
        let scale = Scale::from_khz(2_500_000).unwrap();
        let c = ScriptedClock::from_readings("tsc", scale, vec![1000, 1500]);
        let conv = PgTicksToNs::for_scale(scale);
        assert!((conv.ns_to_ticks(4_000_000_000 * NS_PER_S) as i64) < 0);
        let r = done(pg_test_timing_loop(&c, conv, 4_000_000_000 * NS_PER_S));
        assert_eq!((r.loop_count, c.reads()), (0, 2));
        assert_eq!(r.avg_loop_ns(), f64::INFINITY);
        // The system clock's end never wraps for a u32 of seconds.
        assert_eq!(
            PgTicksToNs::SYSTEM.ns_to_ticks(u32::MAX as u64 * NS_PER_S),
            u32::MAX as u64 * NS_PER_S
        );
    }

    #[test]
    fn a_backward_step_stops_the_run_with_its_size() {
        let c = ScriptedClock::from_readings("s", Scale::NANOSECONDS, vec![1000, 1010, 990]);
        assert_eq!(
            pg_test_timing_loop(&c, PgTicksToNs::SYSTEM, NS_PER_S),
            PgOutcome::Backward { ns: 20 }
        );
        assert_eq!(c.reads(), 3);
        // Under a counter, too (upstream's unsigned multiply would call it a
        // huge forward step): 2 GHz, back by 40 ticks = 20 ns.
        let scale = Scale::from_khz(2_000_000).unwrap();
        let c = ScriptedClock::from_readings("tsc", scale, vec![5000, 5100, 5060]);
        let conv = PgTicksToNs::for_scale(scale);
        assert_eq!(pg_test_timing_loop(&c, conv, NS_PER_S), PgOutcome::Backward { ns: 20 });
    }
}
