//! Both calibrations driven by scripted clock pairs that share a simulated
//! time: every read advances the time by a scripted cost, the reference
//! returns nanoseconds and the counter `time * hz / 10^9`. No wall time is
//! involved and nothing asserts a duration of this machine.

use clockscope::Scale;
use clockscope::ScriptedClock;
use clockscope_system::counter::calibrate::{calibrate, calibrate_postgresql, calibrate_to, Calibration, PG_MAX_NS};
use std::cell::Cell;
use std::rc::Rc;

/// A deterministic generator (SplitMix64) for jitter.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// A reference (ns) and a counter at `hz` over one simulated time. `ref_cost`
/// and `ctr_cost` give the ns a read takes from its call index; the time is
/// sampled in the middle of the read.
fn pair(
    hz: u64,
    mut ref_cost: impl FnMut(u64) -> u64 + 'static,
    mut ctr_cost: impl FnMut(u64) -> u64 + 'static,
) -> (ScriptedClock, ScriptedClock) {
    let t = Rc::new(Cell::new(1_000_000_000u64));
    let tr = t.clone();
    let reference = ScriptedClock::new("reference", Scale::NANOSECONDS, move |n| {
        let cost = ref_cost(n);
        tr.set(tr.get() + cost / 2);
        let sample = tr.get();
        tr.set(tr.get() + cost - cost / 2);
        sample
    });
    let counter = ScriptedClock::new("counter", Scale::NANOSECONDS, move |n| {
        let cost = ctr_cost(n);
        t.set(t.get() + cost / 2);
        let sample = (t.get() as u128 * hz as u128 / 1_000_000_000) as u64;
        t.set(t.get() + cost - cost / 2);
        sample
    });
    (reference, counter)
}

fn error_ppm(c: &Calibration, hz: u64) -> f64 {
    (c.hz.expect("converged") as f64 - hz as f64) / hz as f64 * 1e6
}

const HZ: u64 = 2_599_998_123;

#[test]
fn clean_pair_converges_to_the_exact_frequency() {
    let (r, c) = pair(HZ, |_| 20, |_| 15);
    let budget = 50_000_000;
    let cal = calibrate(&r, &c, budget);
    assert_eq!(cal.khz, Some(2_599_998), "{cal:?}");
    let u = cal.uncertainty_ppm.unwrap();
    assert!(u <= Calibration::DEFAULT_TARGET_PPM, "{cal:?}");
    assert!(error_ppm(&cal, HZ).abs() <= u, "{cal:?}");
    assert!(cal.note.starts_with("converged: within"), "{}", cal.note);
    assert!(cal.elapsed_ns <= budget);
    // It stopped at the target, well before the budget: one bracket is 55 ns
    // wide here, so 1 ppm needs a window of about 55 ns / 1e-6 / 2 = 28 ms.
    assert!(cal.elapsed_ns < budget, "{cal:?}");
    assert_eq!(c.reads(), cal.samples);
    assert_eq!(r.reads(), 2 * cal.samples + 1);
    assert_eq!((cal.counter, cal.reference), ("counter", "reference"));
}

#[test]
fn jittered_reference_widens_the_bound_but_still_converges() {
    let budget = 20_000_000;
    let (r, c) = pair(HZ, |_| 20, |_| 15);
    let clean = calibrate_to(&r, &c, budget, 0.0);
    let mut rng = Rng(7);
    // Every reference read takes 120..420 ns instead of 20.
    let (r, c) = pair(HZ, move |_| 120 + rng.below(300), |_| 15);
    let noisy = calibrate_to(&r, &c, budget, 0.0);
    for cal in [&clean, &noisy] {
        assert!(cal.khz.is_some(), "{cal:?}");
        assert!(error_ppm(cal, HZ).abs() <= cal.uncertainty_ppm.unwrap(), "{cal:?}");
        assert!(cal.elapsed_ns <= budget, "{cal:?}");
        assert!(
            cal.note.contains("above the 0 ppm target: budget spent"),
            "{}",
            cal.note
        );
    }
    assert!(
        noisy.uncertainty_ppm.unwrap() > 2.0 * clean.uncertainty_ppm.unwrap(),
        "noisy {noisy:?} clean {clean:?}"
    );
}

#[test]
fn preempted_reads_do_not_bias_the_result() {
    let mut rng = Rng(42);
    // One read in 500 is "preempted" for 50..250 us, on both clocks.
    let mut rng2 = Rng(43);
    let (r, c) = pair(
        HZ,
        move |_| {
            if rng.below(500) == 0 {
                50_000 + rng.below(200_000)
            } else {
                20
            }
        },
        move |_| {
            if rng2.below(500) == 0 {
                50_000 + rng2.below(200_000)
            } else {
                15
            }
        },
    );
    let cal = calibrate(&r, &c, 50_000_000);
    assert!(cal.khz.is_some(), "{cal:?}");
    let u = cal.uncertainty_ppm.unwrap();
    assert!(error_ppm(&cal, HZ).abs() <= u, "{cal:?}");
    assert!(u < 5.0, "tight brackets were found between the preemptions: {cal:?}");
}

#[test]
fn stuck_counter_does_not_converge() {
    let r = {
        let t = Rc::new(Cell::new(0u64));
        ScriptedClock::new("reference", Scale::NANOSECONDS, move |_| {
            t.set(t.get() + 25);
            t.get()
        })
    };
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, |_| 42);
    let cal = calibrate(&r, &c, 5_000_000);
    assert_eq!((cal.khz, cal.hz), (None, None), "{cal:?}");
    assert!(cal.note.contains("the counter did not advance"), "{}", cal.note);
    assert!(cal.elapsed_ns <= 5_000_000);
}

#[test]
fn stuck_reference_stops_at_the_iteration_cap() {
    let r = ScriptedClock::new("reference", Scale::NANOSECONDS, |_| 1_000);
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, |n| n * 3);
    let budget = 1_000_000;
    let cal = calibrate(&r, &c, budget);
    assert_eq!(cal.khz, None, "{cal:?}");
    assert!(cal.note.contains("the reference clock did not advance"), "{}", cal.note);
    assert!(cal.note.contains("iteration cap reached"), "{}", cal.note);
    let cap = budget / Calibration::MIN_ITERATION_NS + Calibration::START_SAMPLES + Calibration::BATCH_SAMPLES;
    assert_eq!(cal.samples, cap);
    assert_eq!(c.reads(), cap);
    assert_eq!(cal.elapsed_ns, 0);
}

#[test]
fn counter_going_backwards_is_reported() {
    let (r, _) = pair(HZ, |_| 20, |_| 15);
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, |n| u64::MAX / 2 - n * 100);
    let cal = calibrate(&r, &c, 2_000_000);
    assert_eq!(cal.khz, None);
    assert!(cal.note.contains("the counter went backwards"), "{}", cal.note);
}

/// Issue 21: a reference stepped back 100 s mid-calibration (a faketime
/// file changed) once kept the calibration reading until its iteration cap
/// (10 minutes under libfaketime): the budget is spent in the reference's
/// forward time, and brackets across the step are not used.
#[test]
fn a_reference_stepped_back_does_not_stretch_the_budget() {
    let (_, c) = pair(HZ, |_| 20, |_| 15);
    // 20 ns per reference read; from read 1000 on, 100 s earlier.
    let r = ScriptedClock::new("reference", Scale::NANOSECONDS, |n| {
        let t = 200_000_000_000 + n * 20;
        if n >= 1_000 {
            t - 100_000_000_000
        } else {
            t
        }
    });
    let budget = 5_000_000;
    let cal = calibrate(&r, &c, budget);
    // About budget / 40 ns brackets (two reference reads each), far from the
    // iteration cap of budget / 10 ns.
    assert!(cal.samples <= budget / 40 + 2, "{cal:?}");
    assert!(cal.samples < budget / Calibration::MIN_ITERATION_NS / 2, "{cal:?}");
    assert!(cal.elapsed_ns <= budget, "{cal:?}");
    // Every bracket after the step is before the start: nothing to estimate with.
    assert_eq!(cal.khz, None, "{cal:?}");
    assert!(
        cal.note
            .contains("brackets skipped because the reference went backwards"),
        "{}",
        cal.note
    );
}

#[test]
fn budget_is_never_exceeded_on_the_reference_clock() {
    // Each reference read takes 1 ms; budget 10 ms.
    let (r, c) = pair(HZ, |_| 1_000_000, |_| 0);
    let budget = 10_000_000;
    let cal = calibrate(&r, &c, budget);
    // The start read plus two per bracket; the last bracket ends exactly at
    // the budget and the next one would not fit.
    assert_eq!(r.reads(), 11, "{cal:?}");
    assert_eq!(cal.samples, 5);
    assert_eq!(cal.elapsed_ns, 10_000_000);
    assert!(cal.elapsed_ns <= budget);
    // 1 ms wide brackets over an 8 ms window: far above the 500 ppm limit.
    assert_eq!(cal.khz, None, "{cal:?}");
    assert!(cal.uncertainty_ppm.unwrap() > Calibration::MAX_UNCERTAINTY_PPM);
    assert!(cal.note.starts_with("did not converge: error bound"), "{}", cal.note);
}

#[test]
fn tiny_budgets_are_bounded_too() {
    let (r, c) = pair(HZ, |_| 20, |_| 15);
    let cal = calibrate(&r, &c, 0);
    assert_eq!((r.reads(), c.reads(), cal.samples, cal.khz), (0, 0, 0, None));
    assert!(cal.note.contains("budget of 0 ns"), "{}", cal.note);
    // Shorter than one bracket (20 + 15 + 20 ns): exactly one bracket is read.
    for budget in [1u64, 10, 54] {
        let (r, c) = pair(HZ, |_| 20, |_| 15);
        let cal = calibrate(&r, &c, budget);
        assert_eq!((c.reads(), r.reads()), (1, 3), "budget {budget}: {cal:?}");
        assert_eq!(cal.khz, None);
    }
    for budget in [55u64, 1_000, 100_000, 1_000_000] {
        let (r, c) = pair(HZ, |_| 20, |_| 15);
        let cal = calibrate(&r, &c, budget);
        assert!(cal.elapsed_ns <= budget, "budget {budget}: {cal:?}");
        assert!(
            c.reads()
                <= budget / Calibration::MIN_ITERATION_NS + Calibration::START_SAMPLES + Calibration::BATCH_SAMPLES
        );
    }
}

// ---------------------------------------------------------------------------
// PostgreSQL 19's algorithm
// ---------------------------------------------------------------------------

/// Reference at 1 ns per tick advancing `step` ns per read (with an optional
/// one-read spike), and a counter at exactly `mult` ticks per ns of the same
/// time, which does not advance the time itself.
fn pg_pair(step: u64, mult: u64, spike_at_read: Option<u64>) -> (ScriptedClock, ScriptedClock) {
    let t = Rc::new(Cell::new(0u64));
    let tr = t.clone();
    let r = ScriptedClock::new("reference", Scale::NANOSECONDS, move |n| {
        tr.set(tr.get() + step);
        if Some(n) == spike_at_read {
            tr.get() + 1_000_000
        } else {
            tr.get()
        }
    });
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, move |_| t.get() * mult);
    (r, c)
}

#[test]
fn postgresql_converges_after_ten_stable_estimates() {
    let (r, c) = pg_pair(100, 3, None);
    let cal = calibrate_postgresql(&r, &c);
    assert_eq!(cal.khz, Some(3_000_000), "{cal:?}");
    assert_eq!(cal.hz, Some(3_000_000_000));
    // Estimates at passes 0, 100, ..., 1000: the first has no predecessor,
    // the next ten are stable, so it stops at pass 1000 (1001 passes).
    assert_eq!(r.reads(), 1 + 1001);
    assert_eq!(c.reads(), 1 + 1001);
    assert_eq!(cal.samples, 1002);
    assert_eq!(cal.elapsed_ns, 1001 * 100);
    assert_eq!(cal.uncertainty_ppm, None);
    assert!(cal.note.contains("after 1001 passes"), "{}", cal.note);
}

#[test]
fn postgresql_resets_its_stable_count_on_an_outlier() {
    // Read 501 is pass 500, an estimate pass: its estimate is off, which
    // resets the count; the estimate at pass 600 differs from the outlier and
    // resets again; passes 700..1600 give ten stable steps.
    let (r, c) = pg_pair(100, 3, Some(501));
    let cal = calibrate_postgresql(&r, &c);
    assert_eq!(cal.khz, Some(3_000_000), "{cal:?}");
    assert_eq!(r.reads(), 1 + 1601);
    // A spike between estimate passes changes nothing.
    let (r, c) = pg_pair(100, 3, Some(550));
    calibrate_postgresql(&r, &c);
    assert_eq!(r.reads(), 1 + 1001);
}

#[test]
fn postgresql_skips_passes_where_the_counter_did_not_move() {
    // The counter only moves every 150 ns of time while the reference
    // advances 100 ns per read: passes where it has not moved since the last
    // estimate are skipped even at multiples of 100; the estimate is still exact.
    let t = Rc::new(Cell::new(0u64));
    let tr = t.clone();
    let r = ScriptedClock::new("reference", Scale::NANOSECONDS, move |_| {
        tr.set(tr.get() + 100);
        tr.get()
    });
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, move |_| t.get() / 150 * 300);
    let cal = calibrate_postgresql(&r, &c);
    assert!(cal.khz.is_some(), "{cal:?}");
    assert!(cal.khz.unwrap().abs_diff(2_000_000) <= 2_000_000 / 1000, "{cal:?}");
}

#[test]
fn postgresql_gives_up_after_50_ms() {
    // A counter that keeps accelerating: every estimate moves by more than 1e-4.
    let t = Rc::new(Cell::new(0u64));
    let tr = t.clone();
    let r = ScriptedClock::new("reference", Scale::NANOSECONDS, move |_| {
        tr.set(tr.get() + 1_000);
        tr.get()
    });
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, move |_| t.get() * t.get() / 1_000);
    let cal = calibrate_postgresql(&r, &c);
    assert_eq!((cal.khz, cal.hz), (None, None), "{cal:?}");
    assert!(cal.note.starts_with("did not converge within 50 ms"), "{}", cal.note);
    // Initial read at 1 us, pass i reads at (i + 2) us; it stops at the first
    // pass 50 ms after the start: pass 49999.
    assert_eq!(r.reads(), 1 + 50_000);
    assert_eq!(cal.elapsed_ns, PG_MAX_NS);
}

#[test]
fn postgresql_with_nothing_advancing_runs_out_of_passes() {
    let r = ScriptedClock::new("reference", Scale::NANOSECONDS, |_| 5);
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, |_| 5);
    let cal = calibrate_postgresql(&r, &c);
    assert_eq!(cal.khz, None);
    assert!(cal.note.contains("no estimate in 1000000 passes"), "{}", cal.note);
    assert_eq!(c.reads(), 1 + 1_000_000);
}

#[test]
fn postgresql_truncates_khz_where_we_round() {
    // 2,599,998.7 kHz: PostgreSQL's `(uint32) freq_khz` gives ...998, ours ...999.
    let hz = 2_599_998_700u64;
    let t = Rc::new(Cell::new(0u64));
    let tr = t.clone();
    let r = ScriptedClock::new("reference", Scale::NANOSECONDS, move |_| {
        tr.set(tr.get() + 10_000);
        tr.get()
    });
    let c = ScriptedClock::new("counter", Scale::NANOSECONDS, move |_| {
        (t.get() as u128 * hz as u128 / 1_000_000_000) as u64
    });
    let pg = calibrate_postgresql(&r, &c);
    assert_eq!(pg.khz, Some(2_599_998), "{pg:?}");
    let (r, c) = pair(hz, |_| 20, |_| 15);
    assert_eq!(calibrate(&r, &c, 50_000_000).khz, Some(2_599_999));
}
