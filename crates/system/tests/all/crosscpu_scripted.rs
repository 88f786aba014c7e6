//! The cross-CPU tests on scripted per-CPU clocks, without pinning: one
//! shared counter that every reading advances by 1, plus a per-CPU offset or
//! a per-CPU fault. Because each reading advances the counter by exactly one,
//! the expected warps and offset bounds are exact, whatever the scheduler does.

use clockscope::ClockId;
use clockscope::Scale;
use clockscope_system::crosscpu::{
    ping_pong, plan, run_plan, warp_test, ClockUnderTest, CpuClock, NoPinning, OffsetFinding, PairMode, RunOptions,
    Settings, Verdict,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Where the shared counter starts: far from 0 so offsets never underflow.
const START: u64 = 1 << 40;

/// A shared counter read by every CPU, each CPU with its own offset; CPU
/// `faulty` goes back by `back_by` on every `back_every`-th of its reads.
struct ScriptedCpus {
    counter: AtomicU64,
    offsets: Vec<i64>,
    faulty: usize,
    back_every: u64,
    back_by: u64,
    faulty_reads: AtomicU64,
    backward_reads: AtomicU64,
}

impl ScriptedCpus {
    fn offsets(offsets: Vec<i64>) -> Self {
        ScriptedCpus {
            counter: AtomicU64::new(START),
            offsets,
            faulty: usize::MAX,
            back_every: 0,
            back_by: 0,
            faulty_reads: AtomicU64::new(0),
            backward_reads: AtomicU64::new(0),
        }
    }

    fn going_back(faulty: usize, back_every: u64, back_by: u64) -> Self {
        ScriptedCpus {
            faulty,
            back_every,
            back_by,
            ..ScriptedCpus::offsets(vec![0; 4])
        }
    }
}

impl CpuClock for ScriptedCpus {
    fn read(&self, cpu: usize) -> u64 {
        let now = self.counter.fetch_add(1, Ordering::SeqCst);
        let mut t = now.wrapping_add_signed(self.offsets.get(cpu).copied().unwrap_or(0));
        if cpu == self.faulty {
            let n = self.faulty_reads.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(self.back_every) {
                self.backward_reads.fetch_add(1, Ordering::Relaxed);
                t -= self.back_by;
            }
        }
        t
    }
}

fn never() -> bool {
    false
}

/// A test may run this much longer to see its handovers on a loaded machine
/// (it ends as soon as it has them).
const GRACE_NS: u64 = 5_000_000_000;

fn opts(duration_ns: u64) -> RunOptions<'static> {
    RunOptions {
        grace_ns: GRACE_NS,
        ..RunOptions::new(duration_ns, &NoPinning, &never)
    }
}

#[test]
fn clean_clocks_never_warp() {
    let clock = ScriptedCpus::offsets(vec![0, 0]);
    let r = warp_test(&clock, 0, 1, &opts(20_000_000)).unwrap();
    assert_eq!(r.warps, 0);
    assert_eq!(r.max_warp_ticks, 0);
    assert!(r.iterations > 0);
    assert!(r.has_handovers(1), "{r:?}");
    assert_eq!(r.iterations, clock.counter.load(Ordering::SeqCst) - START);
    assert!(!r.stopped);
}

#[test]
fn a_cpu_behind_warps_on_every_handover_to_it_by_its_offset() {
    // CPU 1 reads 500 ticks behind CPU 0: each time CPU 1 reads right after
    // CPU 0 it reads 500 - 1 less; after its own reading or going back to
    // CPU 0 time moves forward.
    let clock = ScriptedCpus::offsets(vec![0, -500]);
    let r = warp_test(&clock, 0, 1, &opts(20_000_000)).unwrap();
    assert!(r.has_handovers(1), "{r:?}");
    assert_eq!(r.warps, r.handovers_a_to_b);
    assert_eq!(r.warps_b_behind_a, r.warps);
    assert_eq!(r.warps_a_behind_b, 0);
    assert_eq!(r.warps, r.warps_b_behind_a + r.warps_a_behind_b);
    assert_eq!(r.max_warp_ticks, 499);
}

#[test]
fn a_cpu_going_back_every_nth_read_is_counted_exactly() {
    let clock = ScriptedCpus::going_back(1, 7, 1000);
    let r = warp_test(&clock, 0, 1, &opts(20_000_000)).unwrap();
    let backward = clock.backward_reads.load(Ordering::Relaxed);
    assert!(backward > 0, "{r:?}");
    // Every backward read is a warp of exactly 1000 - 1 ticks against the
    // reading before it, and the test kept going after each.
    assert_eq!(r.warps, backward);
    assert_eq!(r.max_warp_ticks, 999);
    assert_eq!(r.iterations, clock.counter.load(Ordering::SeqCst) - START);
}

#[test]
fn ping_pong_bounds_contain_the_scripted_offset_and_name_the_cpu_ahead() {
    // CPU 1 is 1234 ticks ahead of CPU 0. Each round reads t0 (CPU 0), tb
    // (CPU 1), t1 (CPU 0) at consecutive counter values, so the bounds are
    // exactly [1234 - 1, 1234 + 1].
    let clock = ScriptedCpus::offsets(vec![0, 1234]);
    let r = ping_pong(&clock, 0, 1, &opts(10_000_000)).unwrap();
    assert!(r.rounds > 0);
    assert_eq!(r.lower_ticks, Some(1233));
    assert_eq!(r.upper_ticks, Some(1235));
    assert_eq!(r.min_round_trip_ticks, Some(2));
    assert_eq!(r.finding(), OffsetFinding::BAhead);
    assert_eq!(clock.counter.load(Ordering::SeqCst) - START, 3 * r.rounds);

    // CPU 0 ahead: negative bounds.
    let clock = ScriptedCpus::offsets(vec![800, 0]);
    let r = ping_pong(&clock, 0, 1, &opts(10_000_000)).unwrap();
    assert_eq!((r.lower_ticks, r.upper_ticks), (Some(-801), Some(-799)));
    assert_eq!(r.finding(), OffsetFinding::AAhead);

    // No offset: the bounds [-1, +1] contain 0.
    let clock = ScriptedCpus::offsets(vec![0, 0]);
    let r = ping_pong(&clock, 0, 1, &opts(10_000_000)).unwrap();
    assert_eq!((r.lower_ticks, r.upper_ticks), (Some(-1), Some(1)));
    assert_eq!(r.finding(), OffsetFinding::InSync);
}

fn under_test(clock: ScriptedCpus, scale: Scale) -> ClockUnderTest {
    ClockUnderTest {
        id: ClockId::Rdtscp,
        scale: Some(scale),
        scale_source: Some("scripted".to_string()),
        clock: Box::new(clock),
    }
}

#[test]
fn run_plan_reports_every_pair_and_names_the_cpu_that_is_off() {
    // Three CPUs; CPU 2 runs 4000 ticks (2000 ns at 2 GHz) ahead of the others.
    let ghz2 = Scale::from_hz(2_000_000_000).unwrap();
    let clocks = vec![under_test(ScriptedCpus::offsets(vec![0, 0, 4000]), ghz2)];
    let settings = Settings {
        min_handovers: 10,
        min_grace_ns: GRACE_NS,
        ..Settings::new(60_000_000, &NoPinning, &never)
    };
    let mut calls = Vec::new();
    let planned = plan(&[0, 1, 2], settings.topology, &settings.plan_options(clocks.len())).unwrap();
    let report = run_plan(&planned, &clocks, &settings, &mut |done, total| {
        calls.push((done, total))
    })
    .unwrap();
    assert_eq!(report.pairs_planned, 3);
    assert_eq!(report.test_ns, 10_000_000);
    assert_eq!(calls.len(), 6);
    assert_eq!(calls.last(), Some(&(60_000_000, 60_000_000)));
    let got: Vec<(usize, usize)> = report.pairs.iter().map(|p| (p.pair.cpu_a, p.pair.cpu_b)).collect();
    assert_eq!(got, vec![(0, 1), (0, 2), (1, 2)]);

    let p01 = &report.pairs[0].clocks[0];
    assert_eq!(p01.verdict, Verdict::InSync, "{}", p01.verdict_text);
    assert_eq!((p01.offset_lower_ticks, p01.offset_upper_ticks), (Some(-1), Some(1)));

    for pair in &report.pairs[1..] {
        let c = &pair.clocks[0];
        // CPU 2 ahead by 4000: CPU a (0 or 1) reads behind it on each handover.
        assert_eq!(c.verdict, Verdict::Warp, "{}", c.verdict_text);
        assert_eq!(c.warp.max_warp_ticks, 3999);
        assert_eq!(c.max_warp_ns, Some(1999));
        assert_eq!(c.warp.warps_a_behind_b, c.warp.warps);
        assert_eq!((c.offset_lower_ticks, c.offset_upper_ticks), (Some(3999), Some(4001)));
        assert_eq!((c.offset_lower_ns, c.offset_upper_ns), (Some(1999), Some(2000)));
        assert!(
            c.verdict_text
                .contains(&format!("CPU 2 is 1999 ns ahead of CPU {}", pair.pair.cpu_a)),
            "{}",
            c.verdict_text
        );
        assert_eq!(c.frequency_hz, Some(2_000_000_000));
    }
    assert!(report.has_problem());
    assert!(!report.interrupted);
    assert!(report.summary().contains("3 of 3 CPU pairs"), "{}", report.summary());
    assert!(report.summary().contains("2 with warps"), "{}", report.summary());

    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["pairs"].as_array().unwrap().len(), 3);
    assert_eq!(json["pairs"][1]["clocks"][0]["clock"], "rdtscp");
    assert_eq!(json["pairs"][1]["clocks"][0]["verdict"], "warp");
    assert_eq!(json["pairs"][0]["clocks"][0]["offset_upper_ns"], 0);
}

#[test]
fn first_pair_mode_and_a_stop_request_keep_what_was_measured() {
    let stop_now = AtomicBool::new(false);
    let stop = || stop_now.load(Ordering::Relaxed);
    let clocks = vec![under_test(ScriptedCpus::offsets(vec![0; 4]), Scale::NANOSECONDS)];
    let settings = Settings {
        pair_mode: PairMode::First,
        min_handovers: 1,
        ..Settings::new(40_000_000, &NoPinning, &stop)
    };
    // Ask to stop after the first test.
    let planned = plan(&[0, 1, 2, 3], settings.topology, &settings.plan_options(clocks.len())).unwrap();
    let report = run_plan(&planned, &clocks, &settings, &mut |_, _| {
        stop_now.store(true, Ordering::Relaxed)
    })
    .unwrap();
    assert_eq!(report.pairs_planned, 3);
    assert!(report.interrupted);
    assert_eq!(report.pairs.len(), 1);
    assert_eq!((report.pairs[0].pair.cpu_a, report.pairs[0].pair.cpu_b), (0, 1));
    let c = &report.pairs[0].clocks[0];
    assert!(c.warp.iterations > 0);
    // The ping-pong test was asked to stop before its first round.
    assert_eq!(c.offset_rounds, 0);
    assert_eq!(c.verdict, Verdict::Inconclusive, "{}", c.verdict_text);
    assert!(report.summary().ends_with("(interrupted)"), "{}", report.summary());
}
