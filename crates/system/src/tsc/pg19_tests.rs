//! PostgreSQL 19's TSC decision over recorded CPUID leaves and a scripted
//! calibration.

use super::*;
use crate::tsc::cpuid::{parse_dump, CpuidFacts, RecordedCpuid, SIGNATURE_KVM, SIGNATURE_VMWARE};
use std::cell::Cell;

/// A CPU with leaf 0x16 as the highest basic leaf; `hv` = (signature,
/// highest hypervisor leaf, leaf 0x40000010 EAX).
fn cpu(
    leaf15: [u32; 4],
    leaf16_eax: u32,
    rdtscp: bool,
    invariant: bool,
    hv: Option<([u32; 3], u32, u32)>,
) -> CpuidFacts {
    let mut rec = RecordedCpuid::new()
        .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
        .with(1, 0, [0x0005_0654, 0, if hv.is_some() { 1 << 31 } else { 0 }, 1 << 4])
        .with(7, 0, [0, 0, 0, 0])
        .with(0x15, 0, leaf15)
        .with(0x16, 0, [leaf16_eax, 0, 0, 0])
        .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
        .with(0x8000_0001, 0, [0, 0, 0, if rdtscp { 1 << 27 } else { 0 }])
        .with(0x8000_0007, 0, [0, 0, 0, if invariant { 1 << 8 } else { 0 }]);
    if let Some((sig, max, khz)) = hv {
        rec.insert(0x4000_0000, 0, [max, sig[0], sig[1], sig[2]]);
        rec.insert(0x4000_0010, 0, [khz, 0, 0, 0]);
    }
    CpuidFacts::from_recorded(&rec)
}

/// A calibration that returns `khz` and counts its runs.
fn calibration(khz: u32, runs: &Cell<u32>) -> impl FnOnce() -> u32 + '_ {
    move || {
        runs.set(runs.get() + 1);
        khz
    }
}

#[test]
fn kvm_without_timing_leaf_uses_its_own_cached_calibration() {
    let runs = Cell::new(0);
    let f = cpu([0; 4], 0, true, true, Some((SIGNATURE_KVM, 0x4000_0001, 0)));
    let mut info = PgTscInfo::detect(&f, Some(b"tsc\n"), calibration(2_595_786, &runs));
    assert_eq!(info.frequency_source, "x86, hypervisor, calibration");
    assert_eq!(info.frequency_khz, 2_595_786);
    info.complete(calibration(1, &runs));
    assert_eq!(info.calibrated_frequency_khz, 2_595_786, "cached: the same number");
    assert_eq!(runs.get(), 1, "one calibration per process");
    assert!(info.from_calibration() && info.auto_uses_tsc());
    assert!(!info.cross_check_fails());
}

#[test]
fn kvm_and_vmware_with_timing_leaf() {
    for sig in [SIGNATURE_KVM, SIGNATURE_VMWARE] {
        let runs = Cell::new(0);
        let f = cpu(
            [2, 100, 24_000_000, 0],
            3000,
            true,
            true,
            Some((sig, 0x4000_0010, 2_600_000)),
        );
        let mut info = PgTscInfo::detect(&f, Some(b"kvm-clock\n"), calibration(9, &runs));
        assert_eq!(info.frequency_source, "x86, hypervisor, cpuid 0x40000010");
        assert_eq!(info.frequency_khz, 2_600_000, "0x15/0x16 never used under a hypervisor");
        assert_eq!(
            (runs.get(), info.calibrated_frequency_khz),
            (0, -1),
            "not calibrated yet"
        );
        info.complete(calibration(2_599_001, &runs));
        assert_eq!(info.calibrated_frequency_khz, 2_599_001);
        assert!(!info.auto_uses_tsc(), "no TSC_ADJUST, clocksource kvm-clock");
    }
}

#[test]
fn other_hypervisor_or_uncalibrated_kvm_is_unusable() {
    let runs = Cell::new(0);
    let hyperv = [0x7263_694d, 0x666f_736f, 0x7648_2074]; // "Microsoft Hv"
    let f = cpu([0; 4], 0, true, true, Some((hyperv, 0x4000_0010, 2_600_000)));
    let mut info = PgTscInfo::detect(&f, Some(b"tsc\n"), calibration(0, &runs));
    assert_eq!(info.frequency_source, "x86, hypervisor");
    assert_eq!((info.frequency_khz, info.calibrated_frequency_khz), (0, 0));
    info.complete(calibration(5, &runs));
    assert_eq!((runs.get(), info.calibrated_frequency_khz), (1, 0), "not run again");
    assert!(!info.usable() && !info.auto_uses_tsc());
}

#[test]
fn bare_metal_leaf_15_then_16_in_32_bit_arithmetic() {
    let runs = Cell::new(0);
    let f = cpu([2, 176, 24_000_000, 0], 2100, true, true, None);
    let info = PgTscInfo::detect(&f, None, calibration(1, &runs));
    assert_eq!(
        (info.frequency_source.as_str(), info.frequency_khz),
        ("x86, cpuid 0x15", 2_112_000)
    );
    // ECX < 1000: ", cpuid 0x15" is appended before the division gives 0.
    let f = cpu([1, 1, 999, 0], 2100, true, true, None);
    let info = PgTscInfo::detect(&f, None, calibration(2_100_500, &runs));
    assert_eq!(info.frequency_source, "x86, cpuid 0x15, calibration");
    // EAX 0: 0 with no fallback to 0x16, and no source appended.
    let f = cpu([0, 176, 24_000_000, 0], 2100, true, true, None);
    let info = PgTscInfo::detect(&f, None, calibration(2_100_500, &runs));
    assert_eq!(info.frequency_source, "x86, calibration");
    // Only 0x16.
    let f = cpu([0; 4], 2100, true, true, None);
    let info = PgTscInfo::detect(&f, None, calibration(1, &runs));
    assert_eq!(
        (info.frequency_source.as_str(), info.frequency_khz),
        ("x86, cpuid 0x16", 2_100_000)
    );
    // A uint32 above INT32_MAX is negative as int32: calibration.
    let f = cpu([0; 4], 3_000_000, true, true, None);
    let info = PgTscInfo::detect(&f, None, calibration(0, &runs));
    assert_eq!(
        (info.frequency_source.as_str(), info.frequency_khz),
        ("x86, cpuid 0x16", 0)
    );
}

#[test]
fn no_rdtscp_or_not_invariant_stops_without_calibrating() {
    let never = || -> u32 { panic!("PostgreSQL does not calibrate here") };
    let f = cpu([2, 176, 24_000_000, 0], 2100, false, true, None);
    let mut info = PgTscInfo::detect(&f, Some(b"tsc\n"), never);
    assert_eq!(info.frequency_source, "x86, no rdtscp");
    info.complete(never);
    assert_eq!((info.frequency_khz, info.calibrated_frequency_khz), (0, -1));
    let f = cpu([2, 176, 24_000_000, 0], 2100, true, false, None);
    let info = PgTscInfo::detect(&f, Some(b"tsc\n"), never);
    assert_eq!(info.frequency_source, "x86, not invariant");
    assert!(!info.auto_uses_tsc());
}

#[test]
fn cross_check_is_more_than_ten_percent() {
    let runs = Cell::new(0);
    let f = cpu([0; 4], 2000, true, true, None);
    let mut info = PgTscInfo::detect(&f, None, calibration(0, &runs));
    info.complete(calibration(2_200_000, &runs));
    assert_eq!(info.calibration_diff_pct(), Some(10.0));
    assert!(!info.cross_check_fails(), "exactly 10.0% passes");
    let mut info = PgTscInfo::detect(&f, None, calibration(0, &runs));
    info.complete(calibration(2_200_001, &runs));
    assert!(info.cross_check_fails());
}

#[test]
fn clocksource_file_is_compared_as_fgets_and_strcmp_do() {
    assert!(is_exactly_tsc_line(b"tsc\n"));
    assert!(is_exactly_tsc_line(b"tsc\nmore"));
    assert!(!is_exactly_tsc_line(b"tsc"));
    assert!(!is_exactly_tsc_line(b"tsc \n"));
    assert!(!is_exactly_tsc_line(b"kvm-clock\n"));
}

#[test]
fn recorded_dumps() {
    let kvm = include_str!("../../tests/data/cpuid/kvm_this_machine.cpuid-r.txt");
    let f = CpuidFacts::from_recorded(&parse_dump(kvm).unwrap().leaves);
    let info = PgTscInfo::detect(&f, None, || 2_595_786);
    assert_eq!(info.frequency_source, "x86, hypervisor, calibration");
    let vmware = include_str!("../../tests/data/cpuid/vmware_workstation7_core2_t6500.cpuid-r.txt");
    let f = CpuidFacts::from_recorded(&parse_dump(vmware).unwrap().leaves);
    let info = PgTscInfo::detect(&f, None, || 0);
    assert_eq!(
        info.frequency_source, "x86, no rdtscp",
        "a Core 2 under VMware Workstation 7"
    );
    let skl = include_str!("../../tests/data/cpuid/kabylake_r_i5_8350u.cpuid-r.txt");
    let f = CpuidFacts::from_recorded(&parse_dump(skl).unwrap().leaves);
    let info = PgTscInfo::detect(&f, None, || 0);
    assert_eq!(
        (info.frequency_source.as_str(), info.frequency_khz),
        ("x86, cpuid 0x16", 1_900_000),
        "Kaby Lake R: 0x15 has no crystal"
    );
}

#[test]
fn view_tells_the_decision_the_spread_and_the_distance_to_clockscope() {
    let f = cpu([0; 4], 0, true, true, Some((SIGNATURE_KVM, 0x4000_0001, 0)));
    let mut v = Pg19View::new(&f, Some(b"tsc\n"), &[2_595_000], Some(2_596_298));
    assert_eq!(v.frequency_source, "x86, hypervisor, calibration");
    assert_eq!(
        (v.frequency_khz, v.from_calibration, v.auto_uses_tsc),
        (2_595_000, true, true)
    );
    assert_eq!(v.cross_check_diff_pct, Some(0.0));
    assert!(!v.cross_check_fails);
    let ppm = v.ppm_vs_clockscope.unwrap();
    assert!((ppm - (-1298.0 / 2_596_298.0 * 1e6)).abs() < 1e-9, "{ppm}");
    assert_eq!(v.calibration_spread_ppm, None, "one run has no spread");
    v.add_calibration_runs(&[2_596_000, 0, 2_595_500]);
    assert_eq!(v.calibration_runs_khz, [2_595_000, 2_596_000, 0, 2_595_500]);
    let spread = v.calibration_spread_ppm.unwrap();
    assert!((spread - 1000.0 / 2_595_500.0 * 1e6).abs() < 1e-9, "{spread}");
    // CPUID gives 2 600 000 kHz; a calibration 15% off fails the check.
    let f = cpu([0; 4], 0, true, true, Some((SIGNATURE_KVM, 0x4000_0010, 2_600_000)));
    let v = Pg19View::new(&f, None, &[2_990_000], None);
    assert_eq!((v.frequency_khz, v.from_calibration), (2_600_000, false));
    assert!(v.cross_check_fails && v.ppm_vs_clockscope.is_none());
    // No RDTSCP: nothing calibrated, nothing in use.
    let f = cpu([0; 4], 2100, false, true, None);
    let v = Pg19View::new(&f, None, &[2_100_000], Some(2_100_000));
    assert_eq!((v.frequency_source.as_str(), v.frequency_khz), ("x86, no rdtscp", 0));
    assert!(v.calibration_runs_khz.is_empty() && v.ppm_vs_clockscope.is_none());
    assert!(!v.calibration_not_run);
    // A dump of a KVM guest: PostgreSQL would calibrate, nothing was run.
    let f = cpu([0; 4], 0, true, true, Some((SIGNATURE_KVM, 0x4000_0001, 0)));
    assert!(Pg19View::new(&f, None, &[], None).calibration_not_run);
}
