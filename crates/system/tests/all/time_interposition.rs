//! Issue 21: when something between clockscope and the kernel changes time
//! (`faketime -f '+0 x10'`: every clock_gettime runs 10 times fast), the
//! counter's calibration against CLOCK_MONOTONIC_RAW is -900000 ppm off the
//! kernel's frequency. Even with clocksource tsc, where that calibration is
//! not independent evidence, a disagreement beyond 1000 ppm fails the
//! frequency check and the TSC is not trusted. Driven by scripted clocks
//! sharing one simulated time: no wall time is involved.

use crate::common;

use clockscope::Scale;
use clockscope::ScriptedClock;
use clockscope_system::counter::calibrate::{calibrate, Calibration};
use clockscope_system::counter::interposition::{CHANGES_TIME, GROSS_DISAGREEMENT_PPM};
use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::tsc::frequency::SourceId;
use clockscope_system::tsc::policy::KernelEvidence;
use clockscope_system::tsc::report::{LiveEvidence, TscReport};
use std::cell::Cell;
use std::rc::Rc;

/// The kernel's TSC frequency on this guest ("tsc: Detected 2445.404 MHz").
const TSC_HZ: u64 = 2_445_404_000;

/// Calibrates a scripted 2.445 GHz counter against a reference that runs
/// `rate` times as fast as the simulated time (1: the kernel's clock; 10:
/// libfaketime's `x10`). Each read takes 20 ns of simulated time.
fn calibrate_against(rate: u64) -> Calibration {
    let t = Rc::new(Cell::new(1_000_000_000u64));
    let (tr, tc) = (t.clone(), t);
    let reference = ScriptedClock::new("clock_gettime (CLOCK_MONOTONIC_RAW)", Scale::NANOSECONDS, move |_| {
        tr.set(tr.get() + 20);
        tr.get() * rate
    });
    let counter = ScriptedClock::new("RDTSCP", Scale::NANOSECONDS, move |_| {
        tc.set(tc.get() + 20);
        (tc.get() as u128 * TSC_HZ as u128 / 1_000_000_000) as u64
    });
    calibrate(&reference, &counter, 50_000_000)
}

/// This guest's kernel evidence: clocksource `tsc`, the kernel log's frequency.
fn kvm_guest(clocksource: &str) -> (FakeRoot, KernelEvidence) {
    let root = FakeRoot::new();
    root.write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        &format!("{clocksource}\n"),
    );
    root.write("dev/kmsg", "6,1,0,-;tsc: Detected 2445.404 MHz processor\n");
    let kernel = KernelEvidence::read(root.path());
    (root, kernel)
}

fn report(clocksource: &str, calibration: Calibration, time_libraries: Vec<String>) -> TscReport {
    let (root, kernel) = kvm_guest(clocksource);
    let live = LiveEvidence {
        root: root.path().display().to_string(),
        kernel,
        perf_page_khz: Err("no PMU".to_string()),
        calibration: Ok(calibration),
        postgresql_calibration: Err("not run".to_string()),
        time_libraries,
    };
    TscReport::build(Some(common::kvm_cpuid()), Some(live), None)
}

fn frequency_check(r: &TscReport) -> &clockscope_system::counter::Check {
    r.clockscope_decision
        .reasons
        .iter()
        .find(|c| c.name == "frequency known and sources agree")
        .unwrap()
}

#[test]
fn a_clock_running_ten_times_fast_is_a_problem_even_with_clocksource_tsc() {
    let cal = calibrate_against(10);
    // A tenth of the rate, to the calibration's own bound.
    let hz = cal.hz.expect("converged");
    assert!(
        (hz as f64 - TSC_HZ as f64 / 10.0).abs() / (TSC_HZ as f64 / 10.0) < 1e-5,
        "{cal:?}"
    );
    let hints = vec!["LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1".to_string()];
    let r = report("tsc", cal, hints);
    assert_eq!(r.clockscope_frequency.source, Some(SourceId::KernelLog));
    let cal = r.source(SourceId::CalibrationClockscope);
    assert!(!cal.independent, "clocksource tsc: a check of the kernel's arithmetic");
    assert!((cal.ppm_vs_in_use.unwrap() + 900_000.0).abs() < 10.0, "{cal:?}");
    assert!(!r.frequency_agreement.agree);
    let t = r.frequency_agreement.time_interposition.as_deref().unwrap();
    assert!(
        t.starts_with("clockscope's calibration against CLOCK_MONOTONIC_RAW is -900000."),
        "{t}"
    );
    assert!(
        t.contains("(more than 1000 ppm): the kernel's clock is this counter scaled, so"),
        "{t}"
    );
    assert!(t.contains(CHANGES_TIME), "{t}");
    assert!(
        t.ends_with("; supporting evidence: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
        "{t}"
    );
    assert!(
        r.frequency_agreement.evidence.starts_with(t),
        "{}",
        r.frequency_agreement.evidence
    );
    let check = frequency_check(&r);
    assert!(!check.ok);
    assert!(check.evidence.contains(t), "{}", check.evidence);
    assert!(!r.clockscope_decision.trusted);
}

#[test]
fn with_another_clocksource_the_frequency_itself_may_be_wrong() {
    let r = report("hpet", calibrate_against(10), Vec::new());
    assert!(r.source(SourceId::CalibrationClockscope).independent);
    let t = r.frequency_agreement.time_interposition.as_deref().unwrap();
    assert!(
        t.contains("either that frequency is wrong or something between clockscope"),
        "{t}"
    );
    assert!(!t.contains("supporting evidence"), "{t}");
    assert!(!r.clockscope_decision.trusted);
}

#[test]
fn the_kernels_own_clock_agrees_and_small_disagreements_are_not_gross() {
    // The honest case: the calibration agrees to its bound, nothing is said.
    let r = report(
        "tsc",
        calibrate_against(1),
        vec!["LD_PRELOAD=/x/libfaketime.so.1".to_string()],
    );
    assert!(r.frequency_agreement.agree, "{}", r.frequency_agreement.evidence);
    assert_eq!(r.frequency_agreement.time_interposition, None);
    assert!(frequency_check(&r).ok);
    assert!(!r.frequency_agreement.evidence.contains("LD_PRELOAD"));
    // 900 ppm off with clocksource tsc: flagged, not counted, not gross.
    let mut cal = Calibration::unavailable("scripted", "bracketed");
    let hz = (TSC_HZ as f64 * (1.0 + 900e-6)) as u64;
    (cal.hz, cal.khz, cal.uncertainty_ppm) = (Some(hz), Some(hz / 1000), Some(2.0));
    const { assert!(900.0 + 2.0 < GROSS_DISAGREEMENT_PPM) };
    let r = report("tsc", cal.clone(), Vec::new());
    assert!(r.source(SourceId::CalibrationClockscope).flagged);
    assert!(r.frequency_agreement.agree);
    // 1100 ppm off: gross, even though not independent.
    let hz = (TSC_HZ as f64 * (1.0 - 1100e-6)) as u64;
    (cal.hz, cal.khz) = (Some(hz), Some(hz / 1000));
    let r = report("tsc", cal, Vec::new());
    assert!(!r.frequency_agreement.agree);
    assert!(r.frequency_agreement.time_interposition.is_some());
}
