//! The generic timer read for real: aarch64 only (natively or under
//! qemu-aarch64). Checks behaviour, never absolute times.
#![cfg(target_arch = "aarch64")]

use clockscope::{Cntvct, CounterKind, IsbCntvct};

fn cntfrq_hz() -> u64 {
    CounterKind::frequency_register_hz().expect("aarch64 has CNTFRQ_EL0")
}
use clockscope::{ClockId, ClockSource, Scale};
use clockscope_system::arm::{GenericTimerReport, FREQUENCY_SOURCE};
use clockscope_system::counter::discover::{discover_with, full_budget};
use clockscope_system::counter::Discovery;
use std::path::Path;
use std::time::Duration;

/// This machine's generic timer report, by the counter layer's discovery.
fn local(d: &Discovery) -> GenericTimerReport {
    let r = discover_with(Path::new("/"), None, d, &full_budget);
    r.generic_timer()
        .expect("the generic timer's report on aarch64")
        .clone()
}

#[test]
fn cntfrq_is_nonzero() {
    assert!(cntfrq_hz() > 0, "CNTFRQ_EL0 reads 0");
}

#[test]
fn cntvct_advances() {
    let scale = Scale::from_hz(cntfrq_hz()).unwrap();
    let fast = Cntvct::new(scale);
    let ordered = IsbCntvct::new(scale);
    let a = ordered.now();
    std::thread::sleep(Duration::from_millis(2));
    let b = fast.now_ordered();
    let c = fast.now();
    assert!(b.delta_since(a) > 0, "CNTVCT_EL0 did not advance over a 2 ms sleep");
    assert!(c.delta_since(b) >= 0, "CNTVCT_EL0 went backwards");
    // Many ordered reads in a row never go backwards.
    let mut prev = ordered.now();
    for _ in 0..10_000 {
        let t = ordered.now();
        assert!(t.delta_since(prev) >= 0);
        prev = t;
    }
    assert_eq!(fast.name(), ClockId::Cntvct.display_name());
    assert_eq!(ordered.name(), ClockId::IsbCntvct.display_name());
}

#[test]
fn the_counter_sources_are_supported() {
    assert_eq!(ClockId::Cntvct.is_supported(), Ok(()));
    assert_eq!(ClockId::IsbCntvct.is_supported(), Ok(()));
    assert!(ClockId::Rdtsc.is_supported().is_err());
}

#[test]
fn local_report_uses_the_register() {
    let r = local(&Discovery::quick(0));
    assert_eq!(r.frequency_hz, cntfrq_hz());
    assert_eq!(r.frequency_source, FREQUENCY_SOURCE);
    assert!(r.resolution_ns.unwrap() > 0.0);
    assert_eq!(r.trusted, r.reasons.is_empty());
    serde_json::to_string(&r).unwrap();
}

#[test]
fn local_calibration_is_compared_or_explained() {
    let r = local(&Discovery::full(20_000_000));
    match r.calibrated_hz {
        Some(hz) => {
            assert!(hz.is_finite() && hz > 0.0);
            assert!(r.disagreement_ppm.unwrap().is_finite());
            assert!(r.frequency_lines()[2].starts_with("Generic timer frequency from calibration: "));
        }
        None => {
            let why = r.calibration_failed.as_deref().expect("no calibration and no reason");
            assert!(!why.is_empty());
            assert_eq!(r.frequency_lines()[2], "Generic timer calibration did not converge");
        }
    }
}
