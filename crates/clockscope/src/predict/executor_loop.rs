//! What two clock reads per row add to an executor-like per-row loop: the
//! per-row cost behind the EXPLAIN ANALYZE prediction.
//!
//! # Why not the pg_test_timing loop
//!
//! pg_test_timing reads the clock back to back, so each read waits only for
//! the previous one. The executor reads it around real work: a timed plan
//! node reads the clock when it is entered and when it returns a row
//! (`InstrStartNode` / `InstrStopNode`), between the scan's own work (fetch
//! the next tuple, check it, deform it) and the work of the node above it.
//! Part of a read's cost then overlaps that work, and part is added by it
//! (a fenced read such as the vDSO's `LFENCE; RDTSC` waits for the work
//! before it). On an AMD EPYC guest two back-to-back clock_gettime reads
//! cost 30.1 ns each while the executor paid 22-25 ns per read (issue 15:
//! observed/predicted 0.61-0.77 with the back-to-back number).
//!
//! # The model
//!
//! ```text
//! per row, WITH reads:                    per row, WITHOUT reads:
//!   a = clock.now()        InstrStartNode
//!   scan: next slot, visibility branch,     scan: the same
//!         deform its fields (passes)
//!   b = clock.now()        InstrStopNode
//!   total += b - a
//!   agg: count += 1, data-dependent branch  agg: the same
//!
//! round     = rows_per_round rows, timed from its start to its end (now_ordered)
//! pair i    = one WITH round and one WITHOUT round, back to back, the order
//!             alternating between pairs
//! added_ns_per_row  = median over pairs of (WITH_i - WITHOUT_i) / rows_per_round
//! added_ns_per_read = added_ns_per_row / 2
//! work_ns_per_row   = median over pairs of WITHOUT_i / rows_per_round
//! ```
//!
//! The slots are tuple-sized (32 bytes: a one-int heap tuple's MAXALIGNed
//! size) and walked in order through a 2 MiB arena, like a sequential scan
//! over cached pages. The work per row is set by `work_passes` (deform
//! passes over the slot's fields, a dependent hash chain);
//! [`calibrate_passes`] picks it so a row without reads costs about as much
//! as PostgreSQL's TIMING OFF count(*) per row (about 40-60 ns on current x86
//! servers; `clockscope explain` uses the server's measured TIMING OFF time).
//! The loop is generic over [`ClockSource`] and monomorphised, with and
//! without reads as two instances of one function (a const generic): no
//! `dyn`, allocation or float in it. The median of paired differences means
//! a round that was preempted or interrupted decides nothing unless half the
//! rounds were.
//!
//! # Limits
//!
//! - It resembles the executor; it is not the executor. How much of a read
//!   overlaps the work depends on that work: with ~5 ns of work per row the
//!   added cost comes close to the back-to-back one, with ~50 ns of branchy
//!   work it is ~0.8 of it on AMD Zen (issue 15's experiment). A query whose
//!   rows cost far more or far less than the calibration target may pay a
//!   different share. Measured on an AMD EPYC guest against PostgreSQL 15's
//!   count(*) of 1M rows: observed/predicted 0.81-0.91 (back to back:
//!   0.64-0.70); the executor's work (header loads, calls) hides a little more
//!   of a read than this loop's dependent hash chain. Work that does not
//!   depend on the previous row overlaps across rows without reads, and the
//!   fenced read then costs more than back to back: hence the carried state.
//! - Memory: the arena stays in the caches (a 32 MiB arena measured the same
//!   on that guest: the walk is sequential and prefetched); a scan reading
//!   pages from RAM or disk does more work per row, and the relative overhead
//!   is smaller.
//! - It measures this machine; a remote server's CPU may differ.
//! - It times two reads per timed node per row (count(*) has one timed node
//!   per row); more nodes per row add proportionally.

use crate::clock::ClockSource;
use std::hint::black_box;

/// Bytes of one slot: a heap tuple of one int column (23-byte header padded to
/// 24, 4-byte datum), MAXALIGNed to 8 -> 32.
pub const SLOT_BYTES: usize = 32;
/// Slots in the arena: 65,536 x 32 bytes = 2 MiB, walked in order and wrapped.
pub const ARENA_SLOTS: usize = 65_536;
/// Rows per round: long enough (~5-10 ms) that the two reads timing a round are
/// negligible, short enough that a preemption spoils few rounds.
pub const DEFAULT_ROWS_PER_ROUND: u64 = 100_000;
/// WITH/WITHOUT pairs measured: the median of 15 differences stands even when 7
/// rounds were preempted.
pub const DEFAULT_ROUNDS: u32 = 15;
/// ns of work per row without reads when nothing better is known: close to
/// PostgreSQL's TIMING OFF count(*) per row (42.66 ns in PostgreSQL 19's 10M-row
/// benchmark on pgsql-hackers; 52-57 ns on the AMD EPYC guest of issue 15).
pub const DEFAULT_WORK_NS_PER_ROW: f64 = 50.0;
/// The most deform passes [`calibrate_passes`] chooses.
pub const MAX_WORK_PASSES: u32 = 256;
/// Clock reads per row per timed node (InstrStartNode + InstrStopNode).
pub const READS_PER_ROW: f64 = 2.0;

/// Fields deformed per pass.
const NATTS: usize = 4;

/// One tuple-sized slot: flags, a null bitmap and the datums.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(32))]
struct Slot {
    infomask: u32,
    nulls: u32,
    datums: [u32; 6],
}

const _: () = assert!(std::mem::size_of::<Slot>() == SLOT_BYTES);

/// The tuples the loop walks, filled once with pseudo-random data (fixed seed).
pub struct Arena {
    slots: Vec<Slot>,
}

impl Arena {
    /// An arena of [`ARENA_SLOTS`] slots.
    pub fn new() -> Arena {
        Arena::with_slots(ARENA_SLOTS)
    }

    /// An arena of `n` slots (at least 1).
    pub fn with_slots(n: usize) -> Arena {
        // xorshift64: a fixed, cheap pseudo-random fill (no crate needed for
        // filler data).
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let slots = (0..n.max(1))
            .map(|_| {
                let r = next();
                // About one field in 16 is null: a data-dependent branch that
                // is mostly, not always, predicted.
                let nulls = (0..NATTS).fold(0u32, |m, a| m | ((((r >> (8 * a)) & 0xF == 0) as u32) << a));
                let d = next();
                Slot {
                    infomask: (r >> 40) as u32,
                    nulls,
                    datums: [
                        d as u32,
                        (d >> 32) as u32,
                        (r >> 16) as u32,
                        r as u32 ^ 0x5bd1_e995,
                        0,
                        0,
                    ],
                }
            })
            .collect();
        Arena { slots }
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

/// The loop's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopConfig {
    pub rows_per_round: u64,
    /// WITH/WITHOUT pairs.
    pub rounds: u32,
    /// Deform passes per row (0 = one pass).
    pub work_passes: u32,
}

/// One pair of rounds, ns from start to end of each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundPair {
    pub with_reads_ns: f64,
    pub without_reads_ns: f64,
}

/// What two reads per row added to the loop.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ExecutorLoopCost {
    /// The clock read.
    pub clock: String,
    /// Median of the paired differences per row: the cost of timing one plan
    /// node, per row (two reads), ns.
    pub added_ns_per_row: f64,
    /// `added_ns_per_row / 2`.
    pub added_ns_per_read: f64,
    /// Smallest and largest paired difference per row, ns (the spread).
    pub added_ns_per_row_min: f64,
    pub added_ns_per_row_max: f64,
    /// Median WITHOUT round per row: the loop's own work, ns.
    pub work_ns_per_row: f64,
    /// Deform passes per row.
    pub work_passes: u32,
    pub rows_per_round: u64,
    /// Pairs measured (fewer than asked when stopped).
    pub rounds: u32,
}

impl ExecutorLoopCost {
    /// A result of the shape the loop reports, for tests and examples that
    /// need one without measuring: `added_ns_per_row` with a spread of
    /// +-2 ns over 15 pairs of 100,000 rows of 50 ns of work (6 passes).
    pub fn recorded(clock: &str, added_ns_per_row: f64) -> ExecutorLoopCost {
        ExecutorLoopCost {
            clock: clock.into(),
            added_ns_per_row,
            added_ns_per_read: added_ns_per_row / 2.0,
            added_ns_per_row_min: added_ns_per_row - 2.0,
            added_ns_per_row_max: added_ns_per_row + 2.0,
            work_ns_per_row: 50.0,
            work_passes: 6,
            rows_per_round: 100_000,
            rounds: 15,
        }
    }
}

/// A hash step over one datum (PostgreSQL's hash_uint32 does a similar mix).
#[inline(always)]
fn mix(h: u32, v: u32) -> u32 {
    (h ^ v)
        .wrapping_mul(0x9E37_79B1)
        .rotate_left(13)
        .wrapping_add(0xE654_6B64)
}

/// The scan node's work on one slot: the visibility flag, then `passes + 1`
/// deform passes over its non-null fields, continuing the previous row's
/// state `carry` (the executor's rows form one dependent stream: each row's
/// work starts from state the previous row left, so rows do not overlap).
#[inline(always)]
fn scan_row(slot: &Slot, passes: u32, carry: u32) -> u32 {
    let mut h = carry ^ slot.infomask;
    for _ in 0..=passes {
        for a in 0..NATTS {
            if slot.nulls & (1 << a) == 0 {
                h = mix(h, slot.datums[a]);
            }
        }
    }
    h
}

/// `rows` rows of the loop, with two reads of `clock` per row when `TIMED`;
/// returns a checksum (so no work is optimised away) and the ticks the reads
/// accumulated (0 without reads).
#[inline(never)]
fn run_rows<C: ClockSource, const TIMED: bool>(clock: &C, arena: &Arena, rows: u64, passes: u32) -> (u64, i64) {
    let slots = black_box(&arena.slots[..]);
    let mut i = 0usize;
    let mut count = 0u64;
    let mut hits = 0u64;
    let mut timed = 0i64;
    let mut h = 0u32;
    for _ in 0..rows {
        let start = if TIMED { clock.now().raw() } else { 0 };
        h = scan_row(&slots[i], passes, h);
        i += 1;
        if i == slots.len() {
            i = 0;
        }
        if TIMED {
            let end = clock.now().raw();
            timed = timed.wrapping_add(end.wrapping_sub(start) as i64);
        }
        // The aggregate above: advance the count, and a data-dependent branch.
        count += 1;
        if h & 0xF == 0 {
            hits = hits.wrapping_add(u64::from(h));
        }
    }
    (count ^ hits, timed)
}

/// One round, ns from its start to its end (ordered reads of `clock`).
fn round<C: ClockSource, const TIMED: bool>(clock: &C, arena: &Arena, rows: u64, passes: u32) -> f64 {
    let t0 = clock.now_ordered();
    let r = run_rows::<C, TIMED>(clock, arena, rows, passes);
    let t1 = clock.now_ordered();
    black_box(r);
    let d = t1.delta_since(t0);
    let ns = clock.scale().ticks_to_ns(d.unsigned_abs()) as f64;
    if d < 0 {
        -ns
    } else {
        ns
    }
}

/// Runs `config.rounds` WITH/WITHOUT pairs (order alternating), asking
/// `keep_going` before each pair; after one WITHOUT warm-up round.
pub fn measure_pairs<C: ClockSource>(
    clock: &C,
    arena: &Arena,
    config: LoopConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Vec<RoundPair> {
    let (rows, passes) = (config.rows_per_round, config.work_passes);
    round::<C, false>(clock, arena, rows, passes);
    let mut pairs = Vec::with_capacity(config.rounds as usize);
    for r in 0..config.rounds {
        if !keep_going() {
            break;
        }
        let (with_reads_ns, without_reads_ns) = if r % 2 == 0 {
            let w = round::<C, true>(clock, arena, rows, passes);
            (w, round::<C, false>(clock, arena, rows, passes))
        } else {
            let wo = round::<C, false>(clock, arena, rows, passes);
            (round::<C, true>(clock, arena, rows, passes), wo)
        };
        pairs.push(RoundPair {
            with_reads_ns,
            without_reads_ns,
        });
    }
    pairs
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The cost from measured pairs: medians of the paired differences and of the
/// WITHOUT rounds, per row. `None` without pairs or rows.
pub fn cost_from_pairs(clock: &str, pairs: &[RoundPair], config: LoopConfig) -> Option<ExecutorLoopCost> {
    if pairs.is_empty() || config.rows_per_round == 0 {
        return None;
    }
    let rows = config.rows_per_round as f64;
    let mut diffs: Vec<f64> = pairs
        .iter()
        .map(|p| (p.with_reads_ns - p.without_reads_ns) / rows)
        .collect();
    let mut work: Vec<f64> = pairs.iter().map(|p| p.without_reads_ns / rows).collect();
    let added = median(&mut diffs);
    Some(ExecutorLoopCost {
        clock: clock.to_string(),
        added_ns_per_row: added,
        added_ns_per_read: added / READS_PER_ROW,
        added_ns_per_row_min: diffs[0],
        added_ns_per_row_max: diffs[diffs.len() - 1],
        work_ns_per_row: median(&mut work),
        work_passes: config.work_passes,
        rows_per_round: config.rows_per_round,
        rounds: pairs.len() as u32,
    })
}

/// Measures what two reads of `clock` per row add to the loop.
pub fn measure_executor_loop<C: ClockSource>(
    clock: &C,
    arena: &Arena,
    config: LoopConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ExecutorLoopCost> {
    let pairs = measure_pairs(clock, arena, config, keep_going);
    cost_from_pairs(clock.name(), &pairs, config)
}

/// The passes for `target_ns` per row on a line through two measured points
/// (`ns_at_lo` at `lo` passes, `ns_at_hi` at `hi`), within
/// 0..=[`MAX_WORK_PASSES`]; 0 when the points say nothing (no slope).
pub fn passes_for(target_ns: f64, lo: u32, ns_at_lo: f64, hi: u32, ns_at_hi: f64) -> u32 {
    let slope = (ns_at_hi - ns_at_lo) / (f64::from(hi) - f64::from(lo));
    if !(slope.is_finite() && slope > 0.0 && target_ns.is_finite()) {
        return 0;
    }
    let p = f64::from(lo) + (target_ns - ns_at_lo) / slope;
    p.round().clamp(0.0, f64::from(MAX_WORK_PASSES)) as u32
}

/// Deform passes that make a row without reads cost about `target_ns` here:
/// the median of 3 short rounds at 0 and at 8 passes, a line through them.
pub fn calibrate_passes<C: ClockSource>(clock: &C, arena: &Arena, target_ns: f64) -> u32 {
    const ROWS: u64 = 20_000;
    const HI: u32 = 8;
    let at = |passes: u32| {
        round::<C, false>(clock, arena, ROWS, passes);
        let mut v: Vec<f64> = (0..3)
            .map(|_| round::<C, false>(clock, arena, ROWS, passes) / ROWS as f64)
            .collect();
        median(&mut v)
    };
    let lo_ns = at(0);
    let hi_ns = at(HI);
    passes_for(target_ns, 0, lo_ns, HI, hi_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::scripted::ScriptedClock;
    use crate::Scale;
    use std::cell::Cell;
    use std::rc::Rc;

    fn ns_clock(script: impl FnMut(u64) -> u64 + 'static) -> ScriptedClock {
        ScriptedClock::new("scripted", Scale::from_hz(1_000_000_000).unwrap(), script)
    }

    const CONFIG: LoopConfig = LoopConfig {
        rows_per_round: 1000,
        rounds: 5,
        work_passes: 2,
    };

    #[test]
    fn two_reads_per_row_and_two_per_round() {
        let clock = ns_clock(|n| n);
        let arena = Arena::with_slots(64);
        let pairs = measure_pairs(&clock, &arena, CONFIG, &mut || true);
        assert_eq!(pairs.len(), 5);
        // Warm-up round (2 reads) + per pair: WITH (2 + 2 per row) and WITHOUT (2).
        let per_pair = 2 + 2 * CONFIG.rows_per_round + 2;
        assert_eq!(clock.reads(), 2 + u64::from(CONFIG.rounds) * per_pair);
    }

    #[test]
    fn each_read_costing_c_adds_2c_per_row() {
        // Every read advances the clock by 7 ns and nothing else does: a WITH
        // round spans 2 * rows + 1 reads, a WITHOUT round 1.
        let clock = ns_clock(|n| 1_000 + 7 * n);
        let arena = Arena::with_slots(64);
        let cost = measure_executor_loop(&clock, &arena, CONFIG, &mut || true).unwrap();
        let rows = CONFIG.rows_per_round as f64;
        let expected = ((2.0 * rows + 1.0) * 7.0 - 7.0) / rows;
        assert_eq!(cost.added_ns_per_row, expected);
        assert_eq!(cost.added_ns_per_row, 14.0);
        assert_eq!(cost.added_ns_per_read, 7.0);
        assert_eq!(cost.work_ns_per_row, 7.0 / rows);
        assert_eq!((cost.rounds, cost.work_passes, cost.rows_per_round), (5, 2, 1000));
        assert_eq!(cost.clock, "scripted");
    }

    #[test]
    fn the_median_of_paired_differences() {
        let pairs = [
            (1300.0, 1000.0),
            (1250.0, 1010.0),
            (900.0, 1000.0),
            (1500.0, 1100.0),
            (1240.0, 990.0),
        ]
        .map(|(w, wo)| RoundPair {
            with_reads_ns: w,
            without_reads_ns: wo,
        });
        let config = LoopConfig {
            rows_per_round: 10,
            ..CONFIG
        };
        let c = cost_from_pairs("x", &pairs, config).unwrap();
        // Differences per row: 30, 24, -10, 40, 25 -> median 25.
        assert_eq!(c.added_ns_per_row, 25.0);
        assert_eq!(c.added_ns_per_read, 12.5);
        assert_eq!((c.added_ns_per_row_min, c.added_ns_per_row_max), (-10.0, 40.0));
        // WITHOUT per row: 100, 101, 100, 110, 99 -> median 100.
        assert_eq!(c.work_ns_per_row, 100.0);
        // An even count takes the mean of the middle two.
        let c4 = cost_from_pairs("x", &pairs[..4], config).unwrap();
        assert_eq!(c4.added_ns_per_row, 27.0);
        assert!(cost_from_pairs("x", &[], config).is_none());
    }

    #[test]
    fn a_preempted_round_does_not_decide() {
        // 1 ns per read, and a 50 ms stall inside the third pair's WITH round
        // (a preemption): that pair's difference is huge, the median is not.
        let rows = CONFIG.rows_per_round;
        let per_pair = 2 + 2 * rows + 2;
        // Pair 2 (even: WITH first) starts after the warm-up and two pairs.
        let stall_at = 2 + 2 * per_pair + rows;
        let clock = ns_clock(move |n| n + if n >= stall_at { 50_000_000 } else { 0 });
        let arena = Arena::with_slots(64);
        let pairs = measure_pairs(&clock, &arena, CONFIG, &mut || true);
        assert!(pairs[2].with_reads_ns > 50_000_000.0, "{:?}", pairs[2]);
        let cost = cost_from_pairs("scripted", &pairs, CONFIG).unwrap();
        assert_eq!(cost.added_ns_per_row, 2.0);
        assert!(cost.added_ns_per_row_max > 50_000.0);
    }

    #[test]
    fn a_preempted_without_round_does_not_decide_either() {
        let rows = CONFIG.rows_per_round;
        let per_pair = 2 + 2 * rows + 2;
        // Pair 1 (odd: WITHOUT first): its WITHOUT round is reads 0-1 of the pair.
        let start = 2 + per_pair;
        let clock = ns_clock(move |n| n + if n > start { 9_000_000 } else { 0 });
        let pairs = measure_pairs(&clock, &Arena::with_slots(8), CONFIG, &mut || true);
        assert!(pairs[1].without_reads_ns > 9_000_000.0, "{:?}", pairs[1]);
        let cost = cost_from_pairs("scripted", &pairs, CONFIG).unwrap();
        assert_eq!(cost.added_ns_per_row, 2.0);
        assert!(cost.added_ns_per_row_min < -8_000.0);
    }

    #[test]
    fn stopping_ends_between_pairs() {
        let clock = ns_clock(|n| n);
        let asked = Rc::new(Cell::new(0));
        let a = Rc::clone(&asked);
        let mut keep_going = move || {
            a.set(a.get() + 1);
            a.get() <= 2
        };
        let pairs = measure_pairs(&clock, &Arena::with_slots(8), CONFIG, &mut keep_going);
        assert_eq!(pairs.len(), 2);
        assert_eq!(asked.get(), 3);
        let mut never = || false;
        assert!(measure_executor_loop(&clock, &Arena::with_slots(8), CONFIG, &mut never).is_none());
    }

    #[test]
    fn passes_on_the_line_through_two_points() {
        // 10 ns at 0 passes, 50 ns at 8: 5 ns per pass.
        assert_eq!(passes_for(50.0, 0, 10.0, 8, 50.0), 8);
        assert_eq!(passes_for(30.0, 0, 10.0, 8, 50.0), 4);
        assert_eq!(passes_for(5.0, 0, 10.0, 8, 50.0), 0);
        assert_eq!(passes_for(1e9, 0, 10.0, 8, 50.0), MAX_WORK_PASSES);
        // No slope (a scripted or stalled clock): no extra work.
        assert_eq!(passes_for(50.0, 0, 10.0, 8, 10.0), 0);
        assert_eq!(passes_for(50.0, 0, 10.0, 8, f64::NAN), 0);
    }

    #[test]
    fn the_work_depends_on_the_data() {
        // Different slots give different checksums, and more passes change it.
        let arena = Arena::with_slots(16);
        let clock = ns_clock(|n| n);
        let a = run_rows::<_, false>(&clock, &arena, 16, 0).0;
        let b = run_rows::<_, false>(&clock, &arena, 16, 3).0;
        assert_ne!(a, b);
        assert_eq!(clock.reads(), 0);
        assert!(arena.slots.iter().any(|s| s.nulls != 0));
        assert!(arena.slots.iter().any(|s| s.nulls == 0));
    }
}
