//! The noise control on scripted run times: pairs go on until the 95%
//! interval of the median slowdown is within +-5%, or `--max-time` (on a
//! scripted clock: the sum of the runs' "Execution Time"); and the report's
//! noise warnings from scripted inputs.

use crate::common;

use clockscope::Control;
use clockscope_explain::clockcost::{ClockCost, MachineClocks};
use clockscope_explain::contention::{other_busy_fraction, CpuSample};
use clockscope_explain::measure::{
    run_sources_timed, ControlRuns, ExplainServer, ServerRuns, Slot, SourceRuns, StopReason, SCHEDULE,
};
use clockscope_explain::report::{self, CpuContention, Inputs, Resolution};
use clockscope_explain::stats::precision;
use clockscope_explain::{Error, Options, Step};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// A server whose runs take the scripted times: measured pair e (the A/A
/// control's pairs not counted; after one warm-up pair of 1 ms each) takes
/// `off[e % off.len()]` ms with TIMING OFF and that times
/// `ratio[e % ratio.len()]` with TIMING ON; a control pair's runs take
/// `off[0]`. `extra` adds to a run from its place: (pair slot from 0, first
/// run of its pair, TIMING ON). Every run advances the shared clock by its
/// time; `fail_at` makes the n-th EXPLAIN (from 1) fail with `--max-time`'s
/// error, as `--query`'s statement_timeout does.
struct Timed {
    off: Vec<f64>,
    ratio: Vec<f64>,
    extra: Box<dyn Fn(usize, bool, bool) -> f64>,
    calls: usize,
    clock_ms: Rc<Cell<f64>>,
    fail_at: Option<usize>,
    limits: Vec<Duration>,
}

impl Timed {
    fn new(off: &[f64], ratio: &[f64]) -> Timed {
        Timed {
            off: off.to_vec(),
            ratio: ratio.to_vec(),
            extra: Box::new(|_, _, _| 0.0),
            calls: 0,
            clock_ms: Rc::new(Cell::new(0.0)),
            fail_at: None,
            limits: Vec::new(),
        }
    }
}

/// A two-node count(*) plan over 100,000 rows taking `ms`.
fn plan(ms: f64, timing: bool) -> String {
    let t = if timing { r#", "Actual Total Time": 1.0"# } else { "" };
    format!(
        r#"[{{"Plan": {{"Node Type": "Aggregate", "Actual Rows": 1, "Actual Loops": 1{t}, "Plans": [
           {{"Node Type": "Seq Scan", "Actual Rows": 100000, "Actual Loops": 1{t}}}]}},
           "Execution Time": {ms}}}]"#
    )
}

impl ExplainServer for Timed {
    fn explain(&mut self, timing: bool) -> Result<String, Error> {
        self.calls += 1;
        if self.fail_at == Some(self.calls) {
            return Err(Error::MaxTime("cancelled by statement_timeout".into()));
        }
        // Calls 1 and 2 are the warm-up; pair slot i is calls 2i+3, 2i+4.
        let ms = if self.calls <= 2 {
            1.0
        } else {
            let slot = (self.calls - 3) / 2;
            let first = (self.calls - 3).is_multiple_of(2);
            let is_effect = |k: usize| matches!(SCHEDULE[k % SCHEDULE.len()], Slot::Effect { .. });
            let base = if is_effect(slot) {
                let e = (0..slot).filter(|k| is_effect(*k)).count();
                let off = self.off[e % self.off.len()];
                if timing {
                    off * self.ratio[e % self.ratio.len()]
                } else {
                    off
                }
            } else {
                self.off[0]
            };
            base + (self.extra)(slot, first, timing)
        };
        self.clock_ms.set(self.clock_ms.get() + ms);
        Ok(plan(ms, timing))
    }
    fn set_clock_source(&mut self, _: &str) -> Result<(), Error> {
        Ok(())
    }
    fn show_clock_source(&mut self) -> Result<String, Error> {
        Ok("system".into())
    }
    fn reset_clock_source(&mut self) -> Result<(), Error> {
        Ok(())
    }
    fn limit_next(&mut self, left: Duration) {
        self.limits.push(left);
    }
}

fn opts(runs: u32, max_time: Duration) -> Options {
    Options {
        rows: 100_000,
        runs,
        max_time,
        ..Options::new(None)
    }
}

fn go(server: &mut Timed, pg19: bool, o: &Options) -> Result<ServerRuns, Error> {
    let clock = Rc::clone(&server.clock_ms);
    let mut elapsed = move || Duration::from_secs_f64(clock.get() / 1000.0);
    run_sources_timed(server, pg19, o, &mut |_| Control::Continue, &mut elapsed)
}

/// The block ratios of a source's measured pairs.
fn blocks(src: &SourceRuns) -> Vec<f64> {
    let ratios = report::build(&Inputs {
        rows: 100_000,
        ..common::report_inputs(std::slice::from_ref(src), &machine())
    });
    let n = &ratios.clock_sources[0].noise;
    assert_eq!(n.blocks, src.timing_on_ms.len() / 2);
    // The blocks themselves: consecutive pairs of opposite order.
    src.timing_off_ms
        .chunks_exact(2)
        .zip(src.timing_on_ms.chunks_exact(2))
        .map(|(off, on)| (on[0] + on[1]) / (off[0] + off[1]))
        .collect()
}

#[test]
fn steady_runs_stop_when_the_blocks_and_the_control_have_an_interval_or_at_runs() {
    let mut s = Timed::new(&[10.0], &[1.8]);
    let out = go(&mut s, false, &opts(2, Duration::from_secs(60))).unwrap();
    let src = &out.sources[0];
    // Six control blocks (12 pairs) come with 24 measured pairs (12 blocks).
    assert_eq!(src.timing_on_ms.len(), 24, "the control's interval needs 6 blocks");
    assert_eq!(src.control.a_ms.len(), 12);
    assert_eq!(src.stopped_by, StopReason::Precision);
    // Every other pair ran TIMING ON first.
    assert!(src.timing_off_ms.iter().all(|v| *v == 10.0));

    let mut s = Timed::new(&[10.0], &[1.8]);
    let out = go(&mut s, false, &opts(30, Duration::from_secs(60))).unwrap();
    assert_eq!(out.sources[0].timing_on_ms.len(), 30, "--runs is the minimum");
    assert_eq!(out.sources[0].stopped_by, StopReason::Precision);
}

#[test]
fn pairs_alternate_their_order_and_every_third_block_is_the_control() {
    let mut s = Timed::new(&[10.0], &[2.0]);
    let mut seen = Vec::new();
    let clock = Rc::clone(&s.clock_ms);
    let mut elapsed = move || Duration::from_secs_f64(clock.get() / 1000.0);
    let mut observer = |step: &Step| {
        if let Step::Explain {
            run,
            timing,
            first,
            control,
            ..
        } = step
        {
            if *run >= 1 && *run <= 6 {
                seen.push((*run, *timing, *first, *control));
            }
        }
        Control::Continue
    };
    run_sources_timed(
        &mut s,
        false,
        &opts(2, Duration::from_secs(60)),
        &mut observer,
        &mut elapsed,
    )
    .unwrap();
    assert_eq!(
        seen,
        [
            (1, false, true, false),
            (1, true, false, false),
            (2, true, true, false),
            (2, false, false, false),
            (3, false, true, false),
            (3, true, false, false),
            (4, true, true, false),
            (4, false, false, false),
            (5, false, true, true),
            (5, false, false, true),
            (6, false, true, true),
            (6, false, false, true),
        ]
    );
}

#[test]
fn noisy_runs_go_on_until_the_interval_is_within_5_percent() {
    // The first 8 blocks (16 pairs) swing between 1.4x and 2.6x, then
    // settle at 2.0x.
    let mut wild = [1.4, 1.4, 2.6, 2.6, 1.5, 1.5, 2.5, 2.5].repeat(2);
    wild.extend(std::iter::repeat_n(2.0, 200));
    let mut s = Timed::new(&[10.0], &wild);
    let out = go(&mut s, false, &opts(5, Duration::from_secs(600))).unwrap();
    let src = &out.sources[0];
    assert_eq!(src.stopped_by, StopReason::Precision);
    let r = blocks(src);
    let n = r.len();
    assert!(n > 12, "stopped at {n} blocks, inside the swings");
    // It stopped at the first block count that reached the precision (the
    // control had its 6 blocks long before).
    assert!(precision(&r).unwrap().reached);
    assert!(!precision(&r[..n - 1]).unwrap().reached, "{n} blocks: one too many");
    let p = precision(&r).unwrap();
    let i = p.interval.unwrap();
    assert!(i.low >= 0.95 * p.median && i.high <= 1.05 * p.median, "{p:?}");
}

#[test]
fn max_time_ends_runs_that_never_settle() {
    // 100 ms off, blocks of 1x then of 3x on: never within +-5%. Warm-up
    // 2 ms, pairs of 200 or 400 ms; 2 s allow pairs while another like the
    // last fits.
    let mut s = Timed::new(&[100.0], &[1.0, 1.0, 3.0, 3.0]);
    let out = go(&mut s, false, &opts(5, Duration::from_secs(2))).unwrap();
    let src = &out.sources[0];
    assert_eq!(src.stopped_by, StopReason::MaxTime);
    let total_ms = s.clock_ms.get();
    assert!(total_ms <= 2000.0, "ran {total_ms} ms past --max-time 2 s");
    // Pairs: 200, 200, 400, 400, then the control's 200, 200 => 1602 ms;
    // another 200 ms pair fits (1802), then one more would pass 2000.
    assert_eq!(src.timing_on_ms.len(), 5);
    assert_eq!(src.control.a_ms.len(), 2);
    assert_eq!(total_ms, 1802.0);
    // Each statement was told the time left.
    assert_eq!(s.limits[0], Duration::from_secs(2));
    assert!(s.limits.windows(2).all(|w| w[1] <= w[0]), "{:?}", s.limits);
}

#[test]
fn max_time_beats_the_runs_minimum_but_one_pair_always_runs() {
    let mut s = Timed::new(&[500.0], &[2.0]);
    let out = go(&mut s, false, &opts(20, Duration::from_millis(100))).unwrap();
    let src = &out.sources[0];
    assert_eq!(src.timing_on_ms.len(), 1);
    assert_eq!(src.stopped_by, StopReason::MaxTime);
}

#[test]
fn a_statement_cut_by_the_time_cap_keeps_the_pairs_before_it() {
    // The 9th EXPLAIN (pair 4's TIMING OFF) is cancelled by statement_timeout.
    let mut s = Timed::new(&[10.0], &[1.0, 3.0]);
    s.fail_at = Some(9);
    let out = go(&mut s, false, &opts(5, Duration::from_secs(60))).unwrap();
    assert_eq!(out.sources[0].timing_on_ms.len(), 3);
    assert_eq!(out.sources[0].stopped_by, StopReason::MaxTime);
    assert!(!out.interrupted);
    // In the warm-up there is nothing to keep: one line naming --max-time.
    let mut s = Timed::new(&[10.0], &[2.0]);
    s.fail_at = Some(1);
    let e = go(&mut s, false, &opts(5, Duration::from_secs(60)))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("--max-time: ") && e.contains("warm-up"), "{e}");
}

#[test]
fn two_clock_sources_share_the_time() {
    let mut s = Timed::new(&[100.0], &[1.0, 3.0]);
    let out = go(&mut s, true, &opts(5, Duration::from_secs(4))).unwrap();
    assert_eq!(out.sources.len(), 2);
    for src in &out.sources {
        assert_eq!(src.stopped_by, StopReason::MaxTime);
    }
    assert!(s.clock_ms.get() <= 4000.0, "{}", s.clock_ms.get());
    // The first source left the second about half: neither took it all.
    let first: f64 = out.sources[0]
        .timing_off_ms
        .iter()
        .chain(&out.sources[0].timing_on_ms)
        .sum();
    assert!(first <= 2000.0, "the first source took {first} ms of 4000");
    assert!(out.sources[1].timing_on_ms.len() >= 3, "{:?}", out.sources[1]);
}

fn machine() -> MachineClocks {
    MachineClocks {
        system: ClockCost {
            clock: "clock_gettime (CLOCK_MONOTONIC)".into(),
            per_read_ns: 20.0,
            read_cost_ns: 20.0,
            read_cost_interval: None,
            loops: 1_000_000,
            method: "test".into(),
            frequency_khz: None,
            frequency_source: None,
            // The instrumentation model ran (its absence is a warning of its own).
            executor_loop: Some(clockscope_pg::predict::ExecutorLoopCost::recorded(
                "clock_gettime (CLOCK_MONOTONIC)",
                40.0,
            )),
        },
        rdtsc: None,
        rdtscp: None,
        rdtsc_unavailable: Some("test".into()),
        tsc_auto: false,
    }
}

fn build(off: Vec<f64>, on: Vec<f64>, stopped_by: StopReason, contention: Option<CpuContention>) -> report::Report {
    let runs = SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        timing_off_ms: off,
        timing_on_ms: on,
        clock_reads_per_run: 200_006,
        stopped_by,
        timing_on_plan: None,
        control: ControlRuns {
            a_ms: vec![10.0; 12],
            b_ms: vec![10.0; 12],
        },
    };
    let m = machine();
    report::build(&Inputs {
        query: "q",
        rows: 100_000,
        runs: 5,
        temp_table_estimated_bytes: 1,
        max_time: Duration::from_secs(60),
        cpu_contention: contention,
        ..common::report_inputs(std::slice::from_ref(&runs), &m)
    })
}

#[test]
fn timing_off_that_varies_over_10_percent_is_warned_about_with_how_much() {
    let quiet = build(
        [10.0, 10.2, 9.9, 10.1, 10.0, 10.05].repeat(2),
        [18.0, 18.3, 17.9, 18.1, 18.0, 18.1].repeat(2),
        StopReason::Precision,
        None,
    );
    assert!(quiet.warnings.is_empty(), "{:?}", quiet.warnings);
    let n = &quiet.clock_sources[0].noise;
    assert!(n.target_reached && n.pairs == 12 && n.blocks == 6);
    assert_eq!(
        (n.slowdown_ci_low.is_some(), n.slowdown_ci_high.is_some()),
        (true, true)
    );

    // 10 ms, then one run at 13.4 ms: (13.4 - 10) / 10.05 = 34%.
    let noisy = build(
        vec![10.0, 13.4, 10.0, 10.1, 10.0, 10.2],
        vec![18.0, 24.1, 18.0, 18.2, 18.0, 18.4],
        StopReason::Precision,
        None,
    );
    let w: Vec<&String> = noisy
        .warnings
        .iter()
        .filter(|w| w.contains("TIMING OFF varied"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", noisy.warnings);
    assert!(
        w[0].starts_with(
            "system: TIMING OFF varied by 34% between runs ((max - min) / median of 6 runs: 10.000 to 13.400 ms)"
        ),
        "{}",
        w[0]
    );
}

#[test]
fn a_busy_machine_is_warned_about_from_proc_stat() {
    // Two samples of a fake /proc: 10 s of a 2-CPU machine (2000 ticks),
    // 1500 busy; clockscope 20 ticks, the server's statements 5 s.
    let dir = tempfile::tempdir().unwrap();
    let write = |busy_user: u64, idle: u64, ours: u64| {
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(
            dir.path().join("proc/stat"),
            format!("cpu  {busy_user} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("proc/self/stat"),
            // Fields 1-52 as Linux writes them: utime (14) = ours, stime 0.
            format!(
                "77 (clockscope) S 1 1 1 0 -1 0 0 0 0 0 {ours} 0 0 0 20 0 1 0 5 1 1 1 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 \
                 0 0 0 0 0 0 0 0 0 0 0"
            ),
        )
        .unwrap();
        CpuSample::read(dir.path()).unwrap()
    };
    let before = write(1000, 9000, 10);
    let after = write(2500, 9500, 30);
    assert_eq!(after.cpus, 2);
    let busy = other_busy_fraction(&before, &after, 5000.0).unwrap();
    assert!((busy - 0.49).abs() < 1e-9, "{busy}");
    let contention = |f: f64| CpuContention {
        other_busy_fraction: f,
        cpus: 2,
        warn_fraction: clockscope_explain::contention::BUSY_WARN_FRACTION,
    };
    let steady = (vec![10.0; 12], vec![18.0; 12]);
    let r = build(
        steady.0.clone(),
        steady.1.clone(),
        StopReason::Precision,
        Some(contention(busy)),
    );
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].starts_with("other processes kept 49% of this machine's 2 CPUs busy during the runs"),
        "{}",
        r.warnings[0]
    );
    let r = build(steady.0, steady.1, StopReason::Precision, Some(contention(0.1)));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.cpu_contention.unwrap().other_busy_fraction, 0.1);
}

#[test]
fn precision_missed_at_max_time_is_warned_about() {
    // Blocks of 1x and of 3x in turn.
    let r = build(
        vec![10.0; 12],
        [10.0, 10.0, 30.0, 30.0].repeat(3),
        StopReason::MaxTime,
        None,
    );
    let n = &r.clock_sources[0].noise;
    assert!(!n.target_reached);
    assert_eq!((n.slowdown_min, n.slowdown_max), (1.0, 3.0));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("the 95% interval of the median block slowdown is +-")
                && w.ends_with("after 12 pairs: --max-time ended the runs (raise it for more pairs)")),
        "{:?}",
        r.warnings
    );
}

/// The runs of a scripted server measured and reported (100,000 rows,
/// 200,006 reads per run, --runs 2, a minute).
fn measured_report(mut s: Timed) -> report::Report {
    let out = go(&mut s, false, &opts(2, Duration::from_secs(600))).unwrap();
    let m = machine();
    report::build(&Inputs {
        rows: 100_000,
        ..common::report_inputs(&out.sources, &m)
    })
}

#[test]
fn an_order_bias_cancels_in_the_blocks_and_the_control_shows_it() {
    // No cost at all from TIMING ON, but the first run of every pair is 2 ms
    // slower (what a model slice run just before it can leave behind). With
    // OFF always first, every pair said 10 / 12 = 0.83x: "faster with
    // timing". In balanced blocks it is 22 / 22.
    let mut s = Timed::new(&[10.0], &[1.0]);
    s.extra = Box::new(|_, first, _| if first { 2.0 } else { 0.0 });
    let r = measured_report(s);
    let src = &r.clock_sources[0];
    assert!((src.slowdown - 1.0).abs() < 1e-12, "{}", src.slowdown);
    assert_eq!(src.result, Resolution::NotResolved, "{}", src.result_reason);
    assert!(
        src.result_reason.starts_with(
            "not resolved here: the machine's own variation (A/A 1.00x to 1.00x) is as large as the effect (1.00x to \
             1.00x)"
        ),
        "{}",
        src.result_reason
    );
    assert!(
        r.warnings.iter().all(|w| !w.contains("measurement problem")),
        "{:?}",
        r.warnings
    );

    // A real 5 ms under the same bias: the overhead per row is the 5 ms.
    let mut s = Timed::new(&[10.0], &[1.5]);
    s.extra = Box::new(|_, first, _| if first { 2.0 } else { 0.0 });
    let r = measured_report(s);
    let src = &r.clock_sources[0];
    assert_eq!(src.result, Resolution::Resolved, "{}", src.result_reason);
    // Blocks (15 + 17) / (12 + 10); TIMING OFF's median 11 ms.
    assert!((src.slowdown - 32.0 / 22.0).abs() < 1e-12, "{}", src.slowdown);
    assert!(
        (src.overhead_per_row_ns - 5.0e6 / 100_000.0).abs() < 1e-6,
        "{}",
        src.overhead_per_row_ns
    );
}

#[test]
fn a_speed_change_between_blocks_leaves_the_estimate_alone() {
    // The machine runs everything twice as slowly from the 13th pair on
    // (a neighbour, a slower vCPU): 10 ms then 20 ms with TIMING OFF,
    // TIMING ON 1.5x of either. The medians of all runs would mix speeds.
    let mut s = Timed::new(&[10.0], &[1.5]);
    s.extra = Box::new(|slot, _, timing| match (slot >= 12, timing) {
        (false, _) => 0.0,
        (true, false) => 10.0,
        (true, true) => 15.0,
    });
    let r = measured_report(s);
    let src = &r.clock_sources[0];
    assert_eq!(src.result, Resolution::Resolved, "{}", src.result_reason);
    assert!((src.slowdown - 1.5).abs() < 1e-12, "{}", src.slowdown);
    // The control ran at both speeds, 1.0 at each.
    assert_eq!((src.control.low, src.control.high), (Some(1.0), Some(1.0)));
    let (lo, hi) = (
        src.overhead_per_row_low_ns.unwrap(),
        src.overhead_per_row_high_ns.unwrap(),
    );
    assert!(lo <= src.overhead_per_row_ns && src.overhead_per_row_ns <= hi);
}

#[test]
fn timing_on_wholly_faster_is_a_measurement_problem_not_a_result() {
    // TIMING ON 0.8x of OFF in every pair, the control steady: no overhead
    // is claimed, the report says what is wrong.
    let r = measured_report(Timed::new(&[10.0], &[0.8]));
    let src = &r.clock_sources[0];
    assert_eq!(src.result, Resolution::MeasurementProblem);
    assert!(src
        .result_reason
        .starts_with("measurement problem: TIMING ON measured faster"));
    assert!(
        r.warnings.iter().any(|w| w.starts_with("system: measurement problem")),
        "{:?}",
        r.warnings
    );
    // Nothing priced from it.
    assert_eq!(r.timing_settings.explain_read, None);
}

#[test]
fn an_effect_inside_the_machines_own_variation_is_not_resolved() {
    // TIMING ON 1.03x; every run varies by +-5% in a pattern of 7 slots (so
    // the control varies as much as the measured pairs do).
    let mut s = Timed::new(&[10.0], &[1.03]);
    s.extra = Box::new(|slot, first, _| [0.0, 0.5, -0.5, 0.3, -0.3, 0.4, -0.4][(slot * 2 + usize::from(first)) % 7]);
    let r = measured_report(s);
    let src = &r.clock_sources[0];
    assert_eq!(src.result, Resolution::NotResolved, "{}", src.result_reason);
    assert!(
        src.result_reason
            .starts_with("not resolved here: the machine's own variation (A/A "),
        "{}",
        src.result_reason
    );
    assert!(
        src.result_reason.contains(") is as large as the effect ("),
        "{}",
        src.result_reason
    );
}
