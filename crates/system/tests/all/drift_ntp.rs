//! `tsc --drift` on scripted clocks (a counter running a known number of ppm
//! off its nominal frequency, NTP slewing, a settimeofday step, Ctrl-C) and
//! the NTP state through a scripted adjtimex.

use clockscope_system::counter::drift::{measure_drift, DriftClocks, DriftPlan, SLEEP_SLICE_NS};
use clockscope_system::linux::ntp::{read_ntp, RawTimex, ScriptedNtp, STA_UNSYNC, TIME_ERROR};

const NOMINAL_HZ: f64 = 2_445_402_000.0;

/// True time advances by `read_ns` per read (every 9th read is slow, as a
/// preempted read would be) and by each sleep. The counter runs
/// `counter_ppm` fast against true time; MONOTONIC_RAW is the counter scaled
/// by the nominal frequency (clocksource tsc); REALTIME and MONOTONIC are true
/// time slewed by `slew_ppm`, REALTIME stepped by `step_ns` at `step_at_ns`.
struct Scripted {
    t: f64,
    reads: u64,
    read_ns: f64,
    counter_ppm: f64,
    slew_ppm: f64,
    step_at_ns: f64,
    step_ns: f64,
    sleeps: u64,
    cancel_after_sleeps: Option<u64>,
    /// From this true time on, every reference clock reads a day behind (faketime).
    back_a_day_at_ns: f64,
}

const DAY_NS: f64 = 86_400e9;

impl Scripted {
    fn new(counter_ppm: f64) -> Scripted {
        Scripted {
            t: 1e9,
            reads: 0,
            read_ns: 25.0,
            counter_ppm,
            slew_ppm: 0.0,
            step_at_ns: f64::INFINITY,
            step_ns: 0.0,
            sleeps: 0,
            cancel_after_sleeps: None,
            back_a_day_at_ns: f64::INFINITY,
        }
    }
    fn tick(&mut self) -> f64 {
        self.reads += 1;
        self.t += if self.reads.is_multiple_of(9) {
            20_000.0
        } else {
            self.read_ns
        };
        self.t
    }
    /// How far the reference clocks are moved at true time `t`.
    fn moved(&self, t: f64) -> f64 {
        if t >= self.back_a_day_at_ns {
            -DAY_NS
        } else {
            0.0
        }
    }
    fn counter_at(&self, t: f64) -> f64 {
        t * NOMINAL_HZ / 1e9 * (1.0 + self.counter_ppm * 1e-6)
    }
}

impl DriftClocks for Scripted {
    fn counter(&mut self) -> u64 {
        let t = self.tick();
        self.counter_at(t) as u64
    }
    fn realtime_ns(&mut self) -> u64 {
        let t = self.tick();
        let step = if t >= self.step_at_ns { self.step_ns } else { 0.0 };
        1_700_000_000_000_000_000u64
            .wrapping_add((t * (1.0 + self.slew_ppm * 1e-6) + step + self.moved(t)) as i64 as u64)
    }
    fn monotonic_ns(&mut self) -> u64 {
        let t = self.tick();
        (t * (1.0 + self.slew_ppm * 1e-6) + DAY_NS + self.moved(t)) as u64
    }
    fn monotonic_raw_ns(&mut self) -> u64 {
        let t = self.tick();
        (self.counter_at(t) / NOMINAL_HZ * 1e9 + DAY_NS + self.moved(t)) as u64
    }
    fn sleep_ns(&mut self, ns: u64) {
        assert!(ns <= SLEEP_SLICE_NS, "sleeps are sliced");
        self.sleeps += 1;
        self.t += ns as f64;
    }
    fn cancelled(&mut self) -> bool {
        self.cancel_after_sleeps.is_some_and(|n| self.sleeps >= n)
    }
}

#[test]
fn a_counter_10_ppm_fast_is_measured_against_realtime_and_raw() {
    let mut c = Scripted::new(10.0);
    let plan = DriftPlan::new(10, NOMINAL_HZ);
    let r = measure_drift(&mut c, &plan);
    assert!(r.complete);
    assert!(r.samples >= 20, "{}", r.samples);
    assert!((r.measured_s - 10.0).abs() < 0.01, "{}", r.measured_s);
    let rt = r.vs_realtime.as_ref().expect("no step: a rate against REALTIME");
    assert!((rt.ppm - 10.0).abs() <= rt.uncertainty_ppm.max(0.01), "{rt:?}");
    // Best-of-16 brackets keep the slow reads out: 10 s and ~100 ns brackets.
    assert!(rt.bracket_ppm < 0.05, "{rt:?}");
    assert!(rt.regression_se_ppm.is_some());
    // MONOTONIC_RAW is the counter scaled by the nominal frequency: 0 ppm.
    let raw = r.vs_monotonic_raw.as_ref().unwrap();
    assert!(raw.ppm.abs() <= raw.uncertainty_ppm.max(0.01), "{raw:?}");
    assert!(r.realtime_steps.is_empty());
    assert!(r.notes.iter().any(|n| n.contains("checks the kernel's arithmetic")));
}

#[test]
fn ntp_slewing_shows_against_realtime_not_as_a_step() {
    // The kernel slews REALTIME and MONOTONIC 30 ppm fast: no step, and the
    // counter (true-rate +10 ppm) is 20 ppm slow against REALTIME's rate.
    let mut c = Scripted::new(10.0);
    c.slew_ppm = 30.0;
    let r = measure_drift(&mut c, &DriftPlan::new(20, NOMINAL_HZ));
    assert!(r.realtime_steps.is_empty(), "{:?}", r.realtime_steps);
    let rt = r.vs_realtime.unwrap();
    let want = (1.0 + 10e-6) / (1.0 + 30e-6) * 1e6 - 1e6;
    assert!(
        (rt.ppm - want).abs() <= rt.uncertainty_ppm.max(0.01),
        "{} vs {want}",
        rt.ppm
    );
}

#[test]
fn a_realtime_step_is_reported_instead_of_a_bogus_ppm() {
    let mut c = Scripted::new(10.0);
    c.step_at_ns = c.t + 5e9;
    c.step_ns = -2.5e9; // settimeofday 2.5 s back
    let r = measure_drift(&mut c, &DriftPlan::new(10, NOMINAL_HZ));
    assert_eq!(r.vs_realtime, None);
    assert_eq!(r.realtime_steps.len(), 1, "{:?}", r.realtime_steps);
    let s = &r.realtime_steps[0];
    assert!((s.step_ns + 2.5e9).abs() < 1e6, "{s:?}");
    assert!(s.at_s > 4.9 && s.at_s < 5.6, "{s:?}");
    assert!(r.notes.iter().any(|n| n.contains("stepped 1 time(s)")), "{:?}", r.notes);
    // The undisciplined clock does not step: its rate stands.
    assert!(r.vs_monotonic_raw.is_some());

    // A 20 µs step is below the tolerance (NTP never steps that little).
    let mut c = Scripted::new(10.0);
    c.step_at_ns = c.t + 5e9;
    c.step_ns = 20_000.0;
    let r = measure_drift(&mut c, &DriftPlan::new(10, NOMINAL_HZ));
    assert!(r.realtime_steps.is_empty());
}

#[test]
fn ctrl_c_gives_a_partial_result_labelled_as_such() {
    let mut c = Scripted::new(-5.0);
    c.cancel_after_sleeps = Some(30); // 3 s of 100 ms slices
    let r = measure_drift(&mut c, &DriftPlan::new(60, NOMINAL_HZ));
    assert!(!r.complete);
    assert!(r.measured_s < 10.0 && r.measured_s > 1.0, "{}", r.measured_s);
    assert!(
        r.notes[0].starts_with("partial result: interrupted after"),
        "{:?}",
        r.notes
    );
    let rt = r.vs_realtime.unwrap();
    assert!((rt.ppm + 5.0).abs() <= rt.uncertainty_ppm.max(0.01), "{rt:?}");

    // Cancelled before any wait: one more sample, and too short for a rate
    // only if the window had no length at all.
    let mut c = Scripted::new(0.0);
    c.cancel_after_sleeps = Some(0);
    let r = measure_drift(&mut c, &DriftPlan::new(60, NOMINAL_HZ));
    assert!(!r.complete);
    assert_eq!(r.samples, 2);
}

#[test]
fn reference_clocks_moved_back_a_day_end_the_window_on_time_with_no_rate() {
    // faketime moves every clock but the counter back a day 1 s into a 3 s window.
    let mut c = Scripted::new(0.0);
    c.back_a_day_at_ns = c.t + 1e9;
    let r = measure_drift(&mut c, &DriftPlan::new(3, NOMINAL_HZ));
    // 3 s of 100 ms slices, and a few more for the reads: not a day of them.
    assert!(c.sleeps <= 40, "{} sleeps", c.sleeps);
    assert!(r.complete);
    assert!(r.measured_s >= 3.0 && r.measured_s < 3.5, "{}", r.measured_s);
    assert!(r.vs_realtime.is_none() && r.vs_monotonic_raw.is_none(), "{r:?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("CLOCK_MONOTONIC_RAW went back during the window")),
        "{:?}",
        r.notes
    );
}

#[test]
fn ntp_state_through_a_scripted_adjtimex() {
    // This AMD guest's state: unsynchronised, TIME_ERROR.
    let s = read_ntp(&ScriptedNtp(Ok(RawTimex {
        state: TIME_ERROR,
        status: STA_UNSYNC,
        freq: -1_234_567,
        maxerror: 16_000_000,
        esterror: 16_000_000,
        offset: 0,
    })))
    .unwrap();
    assert!(!s.synchronised);
    assert_eq!(s.time_state, "error");
    assert!((s.frequency_ppm - (-1_234_567.0 / 65536.0)).abs() < 1e-9);
    assert!(s.meaning.starts_with("NTP is not synchronised"), "{}", s.meaning);

    // Synchronised (STA_PLL | STA_NANO), correcting +10 ppm: the raw clock is slow.
    let s = read_ntp(&ScriptedNtp(Ok(RawTimex {
        state: 0,
        status: 0x0001 | 0x2000,
        freq: 10 * 65536,
        maxerror: 250_000,
        esterror: 12,
        offset: 5_000,
    })))
    .unwrap();
    assert!(s.synchronised);
    assert_eq!((s.frequency_ppm, s.offset_us, s.estimated_error_us), (10.0, 5.0, 12));
    assert!(s.meaning.contains("runs 10.000 ppm slow"), "{}", s.meaning);

    // STA_UNSYNC alone is enough, whatever adjtimex returned.
    let s = read_ntp(&ScriptedNtp(Ok(RawTimex {
        status: STA_UNSYNC,
        ..RawTimex::default()
    })))
    .unwrap();
    assert!(!s.synchronised);

    assert_eq!(
        read_ntp(&ScriptedNtp(Err("adjtimex: EPERM".to_string()))),
        Err("adjtimex: EPERM".to_string())
    );
}
