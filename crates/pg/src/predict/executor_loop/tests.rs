//! Tests of the instrumentation model through scripted clocks: every read's
//! cost injected, so every number is exact.

use super::cost::{cost_from_pairs, sampling_text};
use super::executor::Executor;
use super::measuring::rows_for_round;
use super::*;
use clockscope::PosixClock;
use clockscope::Scale;
use clockscope::ScriptedClock;
use std::cell::Cell;
use std::rc::Rc;

fn ns_clock(name: &'static str, script: impl FnMut(u64) -> u64 + 'static) -> ScriptedClock {
    ScriptedClock::new(name, Scale::from_hz(1_000_000_000).unwrap(), script)
}

fn config(instrumentation: PgInstrumentation, rows: u64, budget_ns: u64) -> ModelConfig {
    ModelConfig {
        instrumentation,
        work_steps: 4,
        budget_ns,
        rows_per_round: Some(rows),
    }
}

fn pair(on: f64, off: f64) -> RoundPair {
    RoundPair {
        timing_on_ns: on,
        timing_off_ns: off,
    }
}

#[test]
fn each_read_costing_c_adds_2c_per_row_in_every_version() {
    // Every read (the rounds' own and the instrumentation's) advances the
    // one scripted clock by 7 ns and nothing else does: a TIMING ON round of
    // R rows spans 2R + 1 reads' worth, a TIMING OFF round 1.
    for inst in [
        PgInstrumentation::Pg19 { tsc: true },
        PgInstrumentation::Pg16To18,
        PgInstrumentation::Pg15OrOlder,
    ] {
        let clock = ns_clock("scripted", |n| 1_000 + 7 * n);
        let table = Table::with_tuples(64);
        let cost = match inst {
            PgInstrumentation::Pg19 { .. } => measure_model(
                &FastRead::new(&clock, &clock, true),
                &clock,
                &table,
                config(inst, 100, 200_000),
                &mut || true,
            ),
            PgInstrumentation::Pg16To18 => measure_model(
                &SystemRead(&clock),
                &clock,
                &table,
                config(inst, 100, 200_000),
                &mut || true,
            ),
            PgInstrumentation::Pg15OrOlder => measure_model(
                &TimespecRead(&clock),
                &clock,
                &table,
                config(inst, 100, 200_000),
                &mut || true,
            ),
        }
        .unwrap();
        assert_eq!(cost.added_ns_per_row, Some(14.0), "{inst:?}");
        assert_eq!(cost.added_ns_per_read, Some(7.0));
        assert_eq!(cost.median_ns_per_row, 14.0);
        assert!(cost.resolved);
        assert_eq!(cost.status, "resolved");
        // Every pair equal: no interval to show, and it says so.
        assert_eq!(cost.interval, None);
        assert_eq!(
            cost.interval_text,
            format!("interval not available (n={}, every pair equal)", cost.pairs)
        );
        assert_eq!(cost.work_ns_per_row, 7.0 / 100.0);
        assert_eq!((cost.work_steps, cost.rows_per_round), (4, 100));
        assert_eq!(cost.instrumentation, inst.describe());
        assert_eq!(cost.stopped_by, StopReason::Budget);
    }
}

#[test]
fn the_budget_bounds_the_run() {
    // Each pair takes 2 * 100 + 4 reads of 7 ns, about 1.4 us of scripted
    // time, plus the budget's own reads: a 50 us budget holds about 30 pairs.
    let clock = ns_clock("scripted", |n| 7 * n);
    let table = Table::with_tuples(64);
    let read = SystemRead(&clock);
    let c = config(PgInstrumentation::Pg16To18, 100, 50_000);
    let cost = measure_model(&read, &clock, &table, c, &mut || true).unwrap();
    assert_eq!(cost.stopped_by, StopReason::Budget);
    assert!(cost.elapsed_ns <= 50_000 + 2_000, "{cost:?}");
    assert!((25..=40).contains(&cost.pairs), "{}", cost.pairs);
    assert_eq!(cost.budget_ns, 50_000);
    // A budget too small for 6 pairs: measured, but not resolved.
    let c = config(PgInstrumentation::Pg16To18, 100, 5_000);
    let cost = measure_model(&read, &clock, &table, c, &mut || true).unwrap();
    assert!(cost.pairs < 6, "{}", cost.pairs);
    assert!(!cost.resolved);
    assert_eq!(cost.added_ns_per_row, None);
    assert_eq!(cost.interval_text, format!("interval not available (n={})", cost.pairs));
    assert!(cost.status.contains("interval not available (n="), "{}", cost.status);
}

#[test]
fn reads_are_counted_as_postgresql_makes_them() {
    // TIMING ON: two reads per row; TIMING OFF: none. The rounds' timer is a
    // separate clock, so the read clock counts only the instrumentation's.
    let reads = ns_clock("reads", |n| 5 + n);
    let timer = ns_clock("timer", |n| 1_000 * n);
    let table = Table::with_tuples(16);
    let read = SystemRead(&reads);
    let mut exec = Executor::new(&read, &table, false);
    exec.set_steps(3);
    exec.round(&timer, 50, false);
    assert_eq!(reads.reads(), 0);
    exec.round(&timer, 50, true);
    assert_eq!(reads.reads(), 100);
    // Each row's stop read is one after its start: 1 tick per row accumulated.
    assert_eq!(exec.node.instr.counter, TicksTime(50));
    assert_eq!(exec.node.instr.tuplecount, 100.0);
    assert_eq!(exec.node.instr.starttime, TicksTime(0));
    assert_eq!(exec.node.instr.errors, 0);
    assert_eq!(exec.agg.count, 100);
    assert_eq!(timer.reads(), 4);
}

#[test]
fn the_fast_read_takes_the_branch_timing_tsc_enabled_says() {
    let tsc = ns_clock("RDTSC", |n| 1 + n);
    let system = ns_clock("clock_gettime (CLOCK_MONOTONIC)", |n| 1 + n);
    let on = FastRead::new(&tsc, &system, true);
    on.read();
    on.read();
    assert_eq!((tsc.reads(), system.reads()), (2, 0));
    assert_eq!(on.name(), "RDTSC");
    let off = FastRead::new(&tsc, &system, false);
    off.read();
    assert_eq!((tsc.reads(), system.reads()), (2, 1));
    assert_eq!(off.name(), "clock_gettime (CLOCK_MONOTONIC)");
}

#[test]
fn timespec_accumulates_with_normalisation() {
    let mut acc = TimespecTime {
        sec: 0,
        nsec: 999_999_990,
    };
    acc.accum_diff(
        TimespecTime { sec: 5, nsec: 20 },
        TimespecTime {
            sec: 4,
            nsec: 999_999_995,
        },
    );
    // + 25 ns across a second boundary: 1 s 15 ns.
    assert_eq!(acc, TimespecTime { sec: 1, nsec: 15 });
    acc.accum_diff(TimespecTime { sec: 7, nsec: 0 }, TimespecTime { sec: 7, nsec: 20 });
    // - 20 ns back across it.
    assert_eq!(
        acc,
        TimespecTime {
            sec: 0,
            nsec: 999_999_995
        }
    );
    assert!(TimespecTime::ZERO.is_zero() && !acc.is_zero());
    assert!(!TimespecTime { sec: 1, nsec: 0 }.is_zero());
    // The PostgreSQL 15 model over a scripted clock crossing a second.
    let clock = ns_clock("scripted", |n| 999_999_900 + 10 * n);
    let table = Table::with_tuples(16);
    let read = TimespecRead(&clock);
    let timer = ns_clock("timer", |n| n);
    let mut exec = Executor::new(&read, &table, false);
    exec.round(&timer, 30, true);
    assert_eq!(exec.node.instr.counter, TimespecTime { sec: 0, nsec: 300 });
    assert_eq!(exec.node.instr.errors, 0);
}

#[test]
fn the_median_of_paired_differences_and_its_interval() {
    // Differences per row (rows 10): 30, 24, -10, 40, 25, 26, 27, 28.
    let pairs = [
        pair(1300.0, 1000.0),
        pair(1250.0, 1010.0),
        pair(900.0, 1000.0),
        pair(1500.0, 1100.0),
        pair(1240.0, 990.0),
        pair(1260.0, 1000.0),
        pair(1270.0, 1000.0),
        pair(1280.0, 1000.0),
    ];
    let inst = PgInstrumentation::Pg19 { tsc: true };
    let c = cost_from_pairs("x", &pairs, 10, inst).unwrap();
    // Sorted: -10, 24, 25, 26, 27, 28, 30, 40: median 26.5; n = 8 gives
    // k = 1 (P(B <= 0) = 1/256; P(B <= 1) = 9/256 > 0.025): [-10, 40].
    assert_eq!(c.median_ns_per_row, 26.5);
    assert_eq!(c.interval.map(|i| (i.low, i.high)), Some((-10.0, 40.0)));
    assert!(!c.resolved);
    assert_eq!(c.added_ns_per_row, None);
    assert!(c.status.contains("includes 0"), "{}", c.status);
    assert_eq!((c.added_ns_per_row_min, c.added_ns_per_row_max), (-10.0, 40.0));
    // Without the negative one: resolved, interval [24, 40].
    let c = cost_from_pairs("x", &[&pairs[..2], &pairs[3..]].concat(), 10, inst).unwrap();
    assert!(c.resolved);
    assert_eq!(c.added_ns_per_row, Some(27.0));
    assert_eq!(c.added_ns_per_read, Some(13.5));
    assert_eq!(c.interval.map(|i| (i.low, i.high)), Some((24.0, 40.0)));
    assert_eq!(c.interval_text, "95% interval 24.0 to 40.0 ns, +-48.1%");
    // Five pairs: no interval, not resolved, said with n.
    let c = cost_from_pairs("x", &pairs[3..], 10, inst).unwrap();
    assert!(!c.resolved);
    assert_eq!(c.interval_text, "interval not available (n=5)");
    assert!(cost_from_pairs("x", &[], 10, inst).is_none());
    assert!(cost_from_pairs("x", &pairs, 0, inst).is_none());
}

#[test]
fn a_preempted_round_does_not_decide() {
    // 1 ns per read, and a 50 ms stall inside one TIMING ON round.
    let stalled = Rc::new(Cell::new(false));
    let s = Rc::clone(&stalled);
    let clock = ns_clock("scripted", move |n| {
        if n == 20_000 {
            s.set(true);
        }
        n + if s.get() { 50_000_000 } else { 0 }
    });
    let table = Table::with_tuples(8);
    let read = SystemRead(&clock);
    let c = config(PgInstrumentation::Pg16To18, 100, 60_000_000);
    let cost = measure_model(&read, &clock, &table, c, &mut || true).unwrap();
    assert!(stalled.get());
    assert_eq!(cost.added_ns_per_row, Some(2.0));
    assert!(
        cost.added_ns_per_row_max > 50_000.0 || cost.added_ns_per_row_min < -50_000.0,
        "{cost:?}"
    );
}

#[test]
fn stopping_ends_between_pairs() {
    let clock = ns_clock("scripted", |n| n);
    let table = Table::with_tuples(8);
    let read = SystemRead(&clock);
    let asked = Rc::new(Cell::new(0));
    let a = Rc::clone(&asked);
    let mut keep_going = move || {
        a.set(a.get() + 1);
        a.get() <= 7
    };
    let c = config(PgInstrumentation::Pg16To18, 50, u64::MAX);
    let cost = measure_model(&read, &clock, &table, c, &mut keep_going).unwrap();
    assert_eq!((cost.pairs, cost.stopped_by), (7, StopReason::Interrupted));
    assert_eq!(asked.get(), 8);
    assert!(measure_model(&read, &clock, &table, c, &mut || false).is_none());
}

#[test]
fn rounds_are_sized_by_the_work_per_row() {
    assert_eq!(rows_for_round(20.0), 12_500);
    assert_eq!(rows_for_round(1e9), MIN_ROWS_PER_ROUND);
    assert_eq!(rows_for_round(0.001), MAX_ROWS_PER_ROUND);
    assert_eq!(rows_for_round(f64::NAN), MAX_ROWS_PER_ROUND);
    assert_eq!(rows_for_round(0.0), MAX_ROWS_PER_ROUND);
    let c = ModelConfig::new(PgInstrumentation::Pg16To18, 7);
    assert_eq!(
        (c.work_steps, c.budget_ns, c.rows_per_round),
        (DEFAULT_WORK_STEPS, 7, None)
    );
}

#[test]
fn the_shape_follows_the_server_version() {
    assert_eq!(
        PgInstrumentation::for_server(190_000, true),
        PgInstrumentation::Pg19 { tsc: true }
    );
    assert_eq!(
        PgInstrumentation::for_server(190_000, false),
        PgInstrumentation::Pg19 { tsc: false }
    );
    assert_eq!(
        PgInstrumentation::for_server(180_003, false),
        PgInstrumentation::Pg16To18
    );
    assert_eq!(
        PgInstrumentation::for_server(160_000, false),
        PgInstrumentation::Pg16To18
    );
    assert_eq!(
        PgInstrumentation::for_server(150_018, false),
        PgInstrumentation::Pg15OrOlder
    );
    assert!(PgInstrumentation::Pg19 { tsc: true }.inline());
    assert!(!PgInstrumentation::Pg15OrOlder.inline());
}

#[test]
fn the_work_depends_on_the_data() {
    let clock = ns_clock("scripted", |n| n);
    let table = Table::with_tuples(300);
    let read = SystemRead(&clock);
    let mut exec = Executor::new(&read, &table, true);
    exec.set_steps(8);
    exec.round(&clock, 300, false);
    let (scan, agg) = (exec.node.expr.resvalue, exec.agg.expr.resvalue);
    assert_ne!((scan, agg), (0, 0));
    let mut more = Executor::new(&read, &table, true);
    more.set_steps(16);
    more.round(&clock, 300, false);
    assert_ne!(scan, more.node.expr.resvalue);
    exec.round(&clock, 300, false);
    // The scan crossed a page boundary and every row was visible.
    assert_eq!(exec.node.pages, 3);
    assert_eq!(exec.node.invisible, 0);
    assert_eq!(exec.agg.count, 600);
}

#[test]
fn the_real_clocks_run_within_their_budget() {
    // Real clocks: only that it stops by its budget and reports a pair count
    // (no time is asserted: shared machines are noisy).
    let table = Table::with_tuples(1024);
    let c = ModelConfig::new(PgInstrumentation::Pg19 { tsc: false }, 20_000_000);
    let cost = measure_on_this_machine::<PosixClock>(None, &table, c, &mut || true).unwrap();
    assert!(cost.pairs >= 1);
    assert!(
        matches!(cost.stopped_by, StopReason::Budget | StopReason::MaxPairs),
        "{cost:?}"
    );
    assert_eq!(cost.work_steps, DEFAULT_WORK_STEPS);
    let tsc = ModelConfig::new(PgInstrumentation::Pg19 { tsc: true }, 20_000_000);
    assert!(measure_on_this_machine::<PosixClock>(None, &table, tsc, &mut || true).is_none());
}

/// One slice on a machine whose reads cost `read_ns` each (its speed at
/// the slice's moment).
fn slice_at(slices: &Slices, read_ns: u64) -> PairsRun {
    let clock = ns_clock("scripted", move |n| read_ns * n);
    let table = Table::with_tuples(64);
    run_pairs(
        &SystemRead(&clock),
        &clock,
        &table,
        slices.config_for_next(),
        &mut || true,
    )
    .unwrap()
}

#[test]
fn slices_pool_the_speeds_they_were_taken_in() {
    // Three slices while the machine is fast (reads 4 ns: +8 ns per row),
    // one while it is slow (9 ns: +18 ns per row): the pooled median is the
    // fast one, as most of the time was fast; one run in the slow moment
    // would have said 18.
    // Rows sized by the first slice: with no work between reads, the most
    // rows per round (a pair of 4 ns reads takes 0.8 ms, of 9 ns 1.8 ms).
    let mut c = config(PgInstrumentation::Pg16To18, 100, 8_000_000);
    c.rows_per_round = None;
    let mut slices = Slices::new(c);
    assert_eq!(slices.cost(), None);
    for read_ns in [9, 4, 4, 4] {
        let run = slice_at(&slices, read_ns);
        slices.add(run);
    }
    let rows = slices.rows_per_round.unwrap();
    assert_eq!(slices.config_for_next().rows_per_round, Some(rows));
    assert_eq!(slices.slices, 4);
    let cost = slices.cost().unwrap();
    assert_eq!(cost.added_ns_per_row, Some(8.0));
    assert_eq!(cost.added_ns_per_row_max, 18.0);
    assert_eq!(cost.rows_per_round, rows);
    assert_eq!(cost.pairs as usize, slices.pairs.len());
    assert_eq!(rows, MAX_ROWS_PER_ROUND);
    assert_eq!(cost.budget_ns, 4 * 8_000_000);
    assert_eq!(cost.elapsed_ns, slices.elapsed_ns);
    assert!(cost.sampling.starts_with("4 slices ("), "{}", cost.sampling);
    assert!(cost.sampling.contains("same time"), "{}", cost.sampling);
    // Each slice's own median, in order, for pairing with what ran after it.
    assert_eq!(cost.slice_medians_ns_per_row, vec![18.0, 8.0, 8.0, 8.0]);
    // All in the slow speed: the slow cost, as the server's runs then were.
    let mut slow = Slices::new(c);
    for _ in 0..3 {
        let run = slice_at(&slow, 9);
        slow.add(run);
    }
    assert_eq!(slow.cost().unwrap().added_ns_per_row, Some(18.0));
}

#[test]
fn a_slice_of_other_rows_is_not_pooled_and_the_pairs_are_bounded() {
    let mut slices = Slices::new(config(PgInstrumentation::Pg16To18, 100, 20_000));
    let run = slice_at(&slices, 4);
    let n = run.pairs.len();
    slices.add(run.clone());
    slices.add(PairsRun {
        rows_per_round: 7,
        ..run.clone()
    });
    assert_eq!((slices.slices, slices.pairs.len()), (1, n));
    while slices.wants_more() {
        slices.add(run.clone());
    }
    assert_eq!(slices.pairs.len(), MAX_PAIRS as usize);
    assert_eq!(slices.cost().unwrap().stopped_by, StopReason::MaxPairs);
    // An interrupted slice marks the pool.
    let mut s = Slices::new(config(PgInstrumentation::Pg16To18, 100, 20_000));
    s.add(PairsRun {
        stopped_by: StopReason::Interrupted,
        ..run
    });
    assert_eq!(s.cost().unwrap().stopped_by, StopReason::Interrupted);
}

#[test]
fn one_run_says_so() {
    assert_eq!(sampling_text(1, 150_000_000), "one run of 150 ms");
    let clock = ns_clock("scripted", |n| 7 * n);
    let table = Table::with_tuples(64);
    let c = config(PgInstrumentation::Pg16To18, 100, 50_000);
    let cost = measure_model(&SystemRead(&clock), &clock, &table, c, &mut || true).unwrap();
    assert_eq!(cost.sampling, sampling_text(1, cost.elapsed_ns));
}
