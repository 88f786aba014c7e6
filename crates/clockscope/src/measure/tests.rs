//! The measuring loop with scripted clocks: backward steps, forward time, chunks.
use super::*;
use crate::clock::ScriptedClock;

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
