//! The generic timer's frequency report: resolution from CNTFRQ_EL0 and the
//! coarse-counter warning, on a homogeneous fake machine. Every architecture.

use clockscope_system::arm::{gather, GenericTimerReport};
use clockscope_system::linux::testing::FakeRoot;

fn report(cntfrq_hz: u64) -> GenericTimerReport {
    let root = FakeRoot::new();
    for cpu in 0..4 {
        root.write(
            &format!("sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"),
            "0x00000000410fd083\n",
        );
    }
    gather(root.path(), cntfrq_hz, None)
}

#[test]
fn twenty_four_mhz_is_41_67_ns() {
    let r = report(24_000_000);
    assert!((r.resolution_ns.unwrap() - 41.67).abs() < 0.005);
    assert!(r.coarse_warning.is_none());
    assert!(r.trusted, "{:?}", r.reasons);
    assert_eq!(r.frequency_khz_text(), "24000");
}

#[test]
fn one_ghz_is_1_ns() {
    let r = report(1_000_000_000);
    assert_eq!(r.resolution_ns, Some(1.0));
    assert!(r.coarse_warning.is_none());
    assert_eq!(r.frequency_khz_text(), "1000000");
}

#[test]
fn nineteen_point_two_mhz() {
    let r = report(19_200_000);
    assert!((r.resolution_ns.unwrap() - 52.083).abs() < 0.001);
    assert!(r.coarse_warning.is_none());
    assert_eq!(r.frequency_khz_text(), "19200");
}

#[test]
fn one_mhz_is_coarse_and_warned_but_still_trusted() {
    let r = report(1_000_000);
    assert_eq!(r.resolution_ns, Some(1000.0));
    let w = r.coarse_warning.as_deref().expect("1 MHz must be warned");
    assert!(w.starts_with("coarse: single reads useless for EXPLAIN"), "{w}");
    assert!(w.contains("each read is only accurate to 1000 ns"), "{w}");
    // Coarse is a warning, not distrust: CLOCK_MONOTONIC counts the same ticks.
    assert!(r.trusted, "{:?}", r.reasons);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["coarse_warning"], w);
    assert_eq!(json["resolution_ns"], 1000.0);
}

#[test]
fn odd_rates_keep_their_fraction_of_a_khz() {
    let r = report(62_500_500);
    assert_eq!(r.frequency_khz_text(), "62500.500");
}
