//! `clockscope::instant` with the CPU counter not used: forced by
//! `Config::force_system_clock` in this process (`CLOCKSCOPE_CLOCK`: see
//! `instant_env.rs`), and declared untrusted by clockscope's decision over
//! injected evidence (this machine's recorded CPUID, a kernel that marked
//! the TSC unstable). Every test in this file's process forces the system
//! clock first, so whichever runs first makes the choice.

use clockscope::counter::CounterReport;
use clockscope::instant::detect::{choose, SYSTEM_CLOCK_NAME, SYSTEM_FREQUENCY_SOURCE};
use clockscope::instant::{self, AlreadyInitialized, ClockInfo, ClockMode, Config, Instant};
use clockscope::linux::{Evidence, KernelCmdline};
use clockscope::tsc::policy::{KernelEvidence, KernelLogTsc};
use clockscope::tsc::report::LiveEvidence;
use clockscope::tsc::TscReport;
use clockscope::Scale;

mod common;

/// Forces the system clock (or finds it forced by an earlier test).
fn forced() -> &'static ClockInfo {
    let config = Config {
        force_system_clock: true,
        ..Config::default()
    };
    match instant::init_with(config) {
        Ok(info) => info,
        Err(AlreadyInitialized(info)) => info,
    }
}

fn assert_system_clock(info: &ClockInfo) {
    assert_eq!(info.mode, ClockMode::System);
    assert_eq!(info.clock_name, SYSTEM_CLOCK_NAME);
    assert_eq!(info.precise_clock_name, SYSTEM_CLOCK_NAME);
    assert_eq!(info.frequency_source, SYSTEM_FREQUENCY_SOURCE);
    assert_eq!((info.frequency_hz, info.frequency_khz), (1_000_000_000, 1_000_000));
    assert_eq!(info.scale, Scale::NANOSECONDS);
}

#[test]
fn forced_fallback_says_so() {
    let info = forced();
    assert_system_clock(info);
    assert!(info.forced && !info.trusted);
    assert_eq!(info.calibration_budget_ns, 0, "nothing is calibrated when forced");
    assert_eq!(info.reasons.len(), 1);
    assert!(
        info.reasons[0].contains("Config::force_system_clock") && info.reasons[0].contains("not examined"),
        "{:?}",
        info.reasons
    );
    // The choice is made once: a later init_with reports the earlier choice.
    match instant::init_with(Config::default()) {
        Err(AlreadyInitialized(again)) => assert!(std::ptr::eq(again, info)),
        Ok(_) => panic!("init_with chose a second time"),
    }
    assert!(std::ptr::eq(instant::init(), info));
    assert!(std::ptr::eq(instant::clock_info(), info));
}

#[test]
fn forced_fallback_readings_are_ordered_nanoseconds() {
    forced();
    // CLOCK_MONOTONIC never steps back, within a thread or across them.
    let mut prev = Instant::now_precise();
    for i in 0..100_000u32 {
        let next = if i % 2 == 0 {
            Instant::now()
        } else {
            Instant::now_precise()
        };
        assert!(next >= prev, "CLOCK_MONOTONIC went backward: {prev:?} -> {next:?}");
        assert!(next.checked_duration_since(prev).is_some());
        prev = next;
    }
    let raw = instant::raw_ticks();
    assert!(raw >= prev.ticks());
    // Ticks are nanoseconds: conversion is the identity.
    for t in [0u64, 1, 999, 1_000_000_007, u64::MAX] {
        assert_eq!(instant::ticks_to_ns(t), t);
    }
    let later = Instant::now();
    assert_eq!(
        later.duration_since(prev).as_nanos(),
        u128::from(later.ticks() - prev.ticks())
    );
    assert_eq!(prev.checked_duration_since(later).is_none(), later > prev);
}

/// A kernel that stopped timing with the TSC and says why.
fn kernel_that_marked_the_tsc_unstable() -> KernelEvidence {
    KernelEvidence {
        kernel_release: Evidence::Found("6.18.0".to_string()),
        current_clocksource: Evidence::Found("kvm-clock".to_string()),
        available_clocksources: Evidence::Found(vec!["kvm-clock".to_string()]),
        tsc_flags: Evidence::Found(common::kvm_guest_tsc_flags()),
        cpu_model_name: Some("Intel(R) Xeon(R) Processor".to_string()),
        cmdline: Evidence::Found(KernelCmdline::parse("BOOT_IMAGE=/vmlinuz ro quiet")),
        kernel_log: Evidence::Found(KernelLogTsc {
            records: 400,
            tsc_khz: Some(2_599_998),
            tsc_khz_message: Some("kernel log, \"tsc: Detected ... MHz processor\""),
            marked_unstable: true,
            unstable_evidence: vec!["Marking clocksource 'tsc' as unstable".to_string()],
            messages: vec![],
        }),
    }
}

#[test]
fn untrusted_tsc_falls_back_with_the_decisions_reasons() {
    let live = LiveEvidence {
        root: "/injected".to_string(),
        kernel: kernel_that_marked_the_tsc_unstable(),
        perf_page_khz: Err("injected: none".to_string()),
        calibration: Err("injected: not run".to_string()),
        postgresql_calibration: Err("injected: not run".to_string()),
        time_libraries: Vec::new(),
    };
    let report = TscReport::build(Some(common::kvm_cpuid()), Some(live), None);
    assert!(!report.clockscope_decision.trusted);
    let verdict = CounterReport::from_tsc_report(report, 5_000_000);
    let info = choose(None, Ok(verdict), ("RDTSC", "RDTSCP"), 1234);
    assert_system_clock(&info);
    assert!(!info.trusted && !info.forced);
    assert_eq!(info.init_ns, 1234);
    let failed: Vec<&String> = info.reasons.iter().filter(|r| r.starts_with("FAILED")).collect();
    assert!(
        failed
            .iter()
            .any(|r| r.contains("kernel clocksource") && r.contains("kvm-clock")),
        "{failed:?}"
    );
    assert!(
        failed
            .iter()
            .any(|r| r.contains("not marked unstable") && r.contains("as unstable")),
        "{failed:?}"
    );
    assert!(info.reasons.last().unwrap().contains(SYSTEM_CLOCK_NAME));

    // The same evidence with a kernel that times with the TSC is trusted,
    // at the kernel's frequency (the decision decides, not this module).
    let mut good = kernel_that_marked_the_tsc_unstable();
    good.current_clocksource = Evidence::Found("tsc".to_string());
    good.available_clocksources = Evidence::Found(vec!["tsc".to_string(), "kvm-clock".to_string()]);
    good.kernel_log = Evidence::Found(KernelLogTsc {
        marked_unstable: false,
        unstable_evidence: vec![],
        messages: vec![],
        ..match good.kernel_log {
            Evidence::Found(l) => l,
            _ => unreachable!(),
        }
    });
    let live = LiveEvidence {
        root: "/injected".to_string(),
        kernel: good,
        perf_page_khz: Err("injected: none".to_string()),
        calibration: Err("injected: not run".to_string()),
        postgresql_calibration: Err("injected: not run".to_string()),
        time_libraries: Vec::new(),
    };
    let report = TscReport::build(Some(common::kvm_cpuid()), Some(live), None);
    let info = choose(
        None,
        Ok(CounterReport::from_tsc_report(report, 5_000_000)),
        ("RDTSC", "RDTSCP"),
        0,
    );
    assert_eq!(info.mode, ClockMode::Counter, "{:?}", info.reasons);
    assert_eq!(info.frequency_khz, 2_599_998);
    assert_eq!(info.scale, Scale::from_khz(2_599_998).unwrap());
    assert!(info.reasons.iter().all(|r| !r.starts_with("FAILED")));
}
