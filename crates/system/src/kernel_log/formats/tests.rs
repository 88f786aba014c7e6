//! One test per format id of FORMATS.md: the kind, the role and the values.

use super::*;

fn r(msg: &str) -> Recognised {
    recognise(msg).unwrap_or_else(|| panic!("not recognised: {msg}"))
}

fn kind(msg: &str) -> Kind {
    r(msg).kind
}

#[test]
fn w1_old_one_line_watchdog_and_rhel6_failover() {
    let w1 = r("Clocksource tsc unstable (delta = -1238216 ns)");
    assert_eq!((w1.kind, w1.role), (Kind::WatchdogMarkedUnstable, Role::Event));
    assert_eq!(w1.facts.clocksource.as_deref(), Some("tsc"));
    assert_eq!(w1.facts.skew_ns, Some(-1_238_216));
    let v = r(
        "Clocksource tsc unstable (delta = 62500000 ns).  Enable clocksource failover by adding \
               clocksource_failover kernel parameter.",
    );
    assert_eq!(v.kind, Kind::WatchdogSkewReported);
}

#[test]
fn w2_w3_headers_with_and_without_cpu() {
    let w2 =
        r("clocksource: timekeeping watchdog: Marking clocksource 'tsc' as unstable because the skew is too large:");
    assert_eq!((w2.kind, w2.role), (Kind::WatchdogMarkedUnstable, Role::Opens));
    assert_eq!((w2.facts.clocksource.as_deref(), w2.facts.cpu), (Some("tsc"), None));
    let w3 =
        r("timekeeping watchdog on CPU6: Marking clocksource 'tsc-early' as unstable because the skew is too large:");
    assert_eq!(
        (w3.facts.clocksource.as_deref(), w3.facts.cpu),
        (Some("tsc-early"), Some(6))
    );
}

#[test]
fn w4_to_w11_detail_lines() {
    let w4 = r("clocksource:                       'hpet' wd_now: be2f200d wd_last: bb3522fe mask: ffffffff");
    assert_eq!((w4.role, w4.facts.watchdog.as_deref()), (Role::Detail, Some("hpet")));
    let w5 = r("                      'tsc' cs_now: 103895c060a cs_last: 1034aea96ea mask: ffffffffffffffff");
    assert_eq!(w5.facts.clocksource.as_deref(), Some("tsc"));
    let w6 = r("  'acpi_pm' wd_nsec: 499376790 wd_now: be2f200d wd_last: bb3522fe mask: ffffffff");
    assert_eq!(
        (w6.facts.watchdog.as_deref(), w6.facts.wd_nsec),
        (Some("acpi_pm"), Some(499_376_790))
    );
    let w7 = r("'tsc' cs_nsec: 498867307 cs_now: 103895c060a cs_last: 1034aea96ea mask: ffffffffffffffff");
    assert_eq!(w7.facts.cs_nsec, Some(498_867_307));
    let w8 = r("Clocksource 'tsc' skewed -863625 ns (0 ms) over watchdog 'hpet' interval of 496465510 ns (496 ms)");
    assert_eq!(w8.facts.skew_ns, Some(-863_625));
    assert_eq!(w8.facts.interval_ns, Some(496_465_510));
    assert_eq!(w8.facts.watchdog.as_deref(), Some("hpet"));
    for detail in [
        "'tsc' is current clocksource.",
        "'hpet' (not 'tsc') is current clocksource.",
        "No current clocksource.",
    ] {
        assert_eq!(r(detail).role, Role::Detail, "{detail}");
    }
}

#[test]
fn w12_to_w17_retries_readback_long_readout() {
    let w12 = r("clocksource: timekeeping watchdog on CPU6: hpet retried 3 times before success");
    assert_eq!(
        (w12.kind, w12.facts.watchdog.as_deref(), w12.facts.attempts),
        (Kind::WatchdogRetried, Some("hpet"), Some(3))
    );
    let w13 = r("timekeeping watchdog on CPU339: hpet read-back delay of 150280ns, attempt 3, marking unstable");
    assert_eq!(
        (w13.kind, w13.facts.delay_ns),
        (Kind::WatchdogReadbackUnstable, Some(150_280))
    );
    assert_eq!(w13.facts.watchdog.as_deref(), Some("hpet"));
    let w14 = r(
        "timekeeping watchdog on CPU2: wd-tsc-wd excessive read-back delay of 153560ns vs. limit of 125000ns, \
                 wd-wd read-back delay only 27174ns, attempt 3, marking tsc unstable",
    );
    assert_eq!(
        (w14.kind, w14.facts.clocksource.as_deref()),
        (Kind::WatchdogReadbackUnstable, Some("tsc"))
    );
    assert_eq!(w14.facts.watchdog, None);
    let w15 = r("timekeeping watchdog on CPU338: hpet wd-wd read-back delay of 324000ns");
    assert_eq!((w15.kind, w15.role), (Kind::WatchdogSkewTestSkipped, Role::Opens));
    let w16 = r("wd-tsc-wd read-back delay of 337240ns, clock-skew test skipped!");
    assert_eq!(
        (w16.role, w16.facts.clocksource.as_deref()),
        (Role::Detail, Some("tsc"))
    );
    let w17 = r("clocksource: Long readout interval, skipping watchdog check: cs_nsec: 1000 wd_nsec: 2000");
    assert_eq!(
        (w17.kind, w17.facts.cs_nsec, w17.facts.wd_nsec),
        (Kind::WatchdogLongReadout, Some(1000), Some(2000))
    );
}

#[test]
fn w18_to_w22_per_cpu_verify() {
    let w18 = r("clocksource: Checking clocksource tsc synchronization from CPU 267 to CPUs 0,4,25,70.");
    assert_eq!(
        (w18.kind, w18.facts.cpu, w18.facts.cpus.as_deref()),
        (Kind::ClocksourceSyncCheck, Some(267), Some("0,4,25,70"))
    );
    assert_eq!(
        kind("        CPUs 5 ahead of CPU 3 for clocksource tsc."),
        Kind::ClocksourceSyncAhead
    );
    assert_eq!(
        kind("        CPUs 0-2 behind CPU 3 for clocksource tsc."),
        Kind::ClocksourceSyncBehind
    );
    assert_eq!(
        kind("        CPU 3 check durations 2096ns - 4768ns for clocksource tsc."),
        Kind::ClocksourceSyncDurations
    );
    assert_eq!(
        kind("Not enough CPUs to check clocksource 'tsc'."),
        Kind::ClocksourceSyncNotEnoughCpus
    );
}

#[test]
fn s1_to_s6_selection() {
    for line in [
        "Switching to clocksource hpet",
        "clocksource: Switched to clocksource hpet",
        "Switched to clocksource hpet",
    ] {
        let s = r(line);
        assert_eq!(
            (s.kind, s.facts.clocksource.as_deref()),
            (Kind::ClocksourceSwitched, Some("hpet"))
        );
    }
    assert_eq!(
        kind("Override clocksource tsc is not HRT compatible. Cannot switch while in HRT/NOHZ mode"),
        Kind::OverrideNotHrt
    );
    assert_eq!(
        kind("Override clocksource tsc is unstable and not HRT compatible - cannot switch while in HRT/NOHZ mode"),
        Kind::OverrideUnstableNotHrt
    );
    assert_eq!(
        kind("Override clocksource tsc is not currently HRT compatible - deferring"),
        Kind::OverrideDeferred
    );
    let s6 = r("clocksource: tsc-early: mask: 0xffffffffffffffff max_cycles: 0x233fc0f9daa, max_idle_ns: 4 ns");
    assert_eq!((s6.kind, s6.role), (Kind::ClocksourceRegistered, Role::NotEvent));
}

#[test]
fn t1_to_t22_tsc_c() {
    assert_eq!(r("Detected 2400.084 MHz processor.").facts.khz, Some(2_400_084));
    assert_eq!(r("tsc: Detected 2445.404 MHz processor").facts.khz, Some(2_445_404));
    assert_eq!(r("tsc: Detected 2499.998 MHz TSC").kind, Kind::TscDetectedTsc);
    assert_eq!(
        r("Refined TSC clocksource calibration: 2400.001 MHz.").facts.khz,
        Some(2_400_001)
    );
    assert_eq!(
        r("tsc: Refined TSC clocksource calibration: 2194.843 MHz").facts.khz,
        Some(2_194_843)
    );
    let fixed = [
        ("Fast TSC calibration using PIT", Kind::TscFastCalibrationOk),
        ("tsc: Fast TSC calibration failed", Kind::TscFastCalibrationFailed),
        ("tsc: Unable to calibrate against PIT", Kind::TscPitUnable),
        ("tsc: No reference (HPET/PMTIMER) available", Kind::TscNoReference),
        ("tsc: HPET/PMTIMER calibration failed", Kind::TscReferenceFailed),
        ("tsc: HPET/PMTIMER calibration failed. Using PIT calibration.", Kind::TscReferenceFailed),
        ("tsc: using PMTIMER reference calibration", Kind::TscReferenceCalibration),
        ("tsc: PIT calibration matches HPET. 2 loops", Kind::TscPitMatches),
        ("tsc: Using PIT calibration value", Kind::TscPitValue),
        ("tsc: PIT calibration deviates from PMTIMER: 1 2", Kind::TscPitDeviates),
        ("tsc: Marking TSC async resets true due to TSC_ADJUST", Kind::TscAsyncResets),
        (
            "tsc: Warning: TSC freq calibrated by CPUID/MSR differs from what is calibrated by HW timer, please check with vendor!!",
            Kind::TscRecalibrateMismatch,
        ),
    ];
    for (line, k) in fixed {
        assert_eq!(kind(line), k, "{line}");
    }
    assert_eq!(
        r("tsc: TSC freq recalibrated by [HPET]:\t 2100.002 MHz").facts.khz,
        Some(2_100_002)
    );
    for reason in [
        "clocksource watchdog",
        "check_tsc_sync_source failed",
        "running on Hyper-V",
        "cpufreq changes",
    ] {
        let t = r(&format!("tsc: Marking TSC unstable due to {reason}"));
        assert_eq!(
            (t.kind, t.facts.reason.as_deref()),
            (Kind::TscMarkedUnstable, Some(reason))
        );
    }
    // A split or over-precise number is no value (never invented).
    assert_eq!(r("tsc: Detected 2599.9985 MHz processor").facts.khz, None);
}

#[test]
fn y1_to_y12_tsc_sync_and_adjust() {
    assert_eq!(
        kind("checking TSC synchronization [CPU#0 -> CPU#1]: passed."),
        Kind::TscSyncPassed
    );
    let y1 = r("checking TSC synchronization [CPU#0 -> CPU#4]:");
    assert_eq!(
        (y1.kind, y1.role, y1.facts.from_cpu, y1.facts.to_cpu),
        (Kind::TscSyncWarp, Role::Opens, Some(0), Some(4))
    );
    let y3 = r("TSC synchronization [CPU#2 -> CPU#17]:");
    assert_eq!((y3.facts.from_cpu, y3.facts.to_cpu), (Some(2), Some(17)));
    let y2 = r("Measured 2588706918 cycles TSC warp between CPUs, turning off TSC clock.");
    assert_eq!((y2.role, y2.facts.warp_cycles), (Role::Detail, Some(2_588_706_918)));
    assert_eq!(r("TSC warped randomly between CPUs").role, Role::Detail);
    assert_eq!(
        kind("Skipping synchronization checks as TSC is reliable."),
        Kind::TscSyncSkipped
    );
    let y6 = r("[Firmware Bug]: TSC ADJUST: CPU0: -2097151 force to 0");
    assert_eq!(
        (y6.kind, y6.facts.cpu, y6.facts.tsc_adjust),
        (Kind::TscAdjustForceZero, Some(0), Some(-2_097_151))
    );
    assert_eq!(
        kind("TSC ADJUST: CPU4: 12345 NOT forced to 0"),
        Kind::TscAdjustNotForced
    );
    let y8 = r("[Firmware Bug]: TSC ADJUST differs: Reference CPU0: -2097151 CPU1: 0");
    assert_eq!(
        (y8.kind, y8.facts.cpu, y8.facts.tsc_adjust),
        (Kind::TscAdjustDiffers, Some(1), Some(0))
    );
    assert_eq!(
        kind("TSC ADJUST synchronize: Reference CPU0: 0 CPU1: 0"),
        Kind::TscAdjustSynchronize
    );
    assert_eq!(
        kind("[Firmware Bug]: TSC ADJUST differs within socket(s), fixing all errors"),
        Kind::TscAdjustDiffers
    );
    let y11 = r("[Firmware Bug]: TSC ADJUST differs: CPU3 -1000 --> 0. Restoring");
    assert_eq!(
        (y11.kind, y11.facts.cpu, y11.facts.tsc_adjust, y11.facts.tsc_adjust_new),
        (Kind::TscAdjustRestored, Some(3), Some(-1000), Some(0))
    );
    let y12 = r("TSC ADJUST compensate: CPU5 observed 1234 warp. Adjust: -1234");
    assert_eq!(
        (y12.kind, y12.facts.warp_cycles, y12.facts.tsc_adjust_new),
        (Kind::TscAdjustCompensate, Some(1234), Some(-1234))
    );
}

#[test]
fn h1_to_h21_platform() {
    assert_eq!(
        r("Hypervisor detected: Microsoft HyperV").facts.hypervisor.as_deref(),
        Some("Microsoft HyperV")
    );
    assert_eq!(
        r("Booting paravirtualized kernel on bare hardware").kind,
        Kind::ParavirtKernel
    );
    assert_eq!(kind("kvm-clock: Using msrs 4b564d01 and 4b564d00"), Kind::KvmClock);
    assert_eq!(
        kind("kvm-clock: cpu 0, msr 0:2ffe7001, primary cpu clock"),
        Kind::KvmClock
    );
    assert_eq!(kind("Xen version: 4.2.amazon (preserve-AD)"), Kind::XenVersion);
    assert_eq!(kind("Xen version 4.11."), Kind::XenVersion);
    assert_eq!(kind("HyperV: features 0x2e7f, hints 0x2c2c"), Kind::HypervFeatures);
    assert_eq!(kind("Hyper-V: Host Build 10.0.20348.1633-1-0"), Kind::HypervFeatures);
    assert_eq!(recognise("Hyper-V: Using hypercall for remote TLB flush"), None);
    assert_eq!(
        r("vmware: TSC freq read from hypervisor : 2926.000 MHz").facts.khz,
        Some(2_926_000)
    );
    assert_eq!(
        r("TSC freq read from hypervisor : 2926.000 MHz").facts.khz,
        Some(2_926_000)
    );
    assert_eq!(
        kind("[Firmware Bug]: TSC doesn't count with P0 frequency!"),
        Kind::FirmwareBugP0
    );
    assert_eq!(kind("TSC deadline timer available"), Kind::TscDeadlineTimer);
    assert_eq!(
        kind("TSC found unstable after boot, most likely due to broken BIOS. Use 'tsc=unstable'."),
        Kind::TscUnstableAfterBoot
    );
    assert_eq!(
        kind("sched_clock: Marking unstable (818769414384, 1195404998)"),
        Kind::SchedClockUnstable
    );
    assert_eq!(
        recognise("sched_clock: Marking stable (304004064, 814709)->(340036955, -35218182)"),
        None
    );
    assert_eq!(Kind::TscSyncWarp.name(), "tsc_sync_warp");
}

/// Issue 31: the forms of every kernel the first round missed, each with
/// what it means (a stall is no verdict, TSC_ADJUST is firmware).
#[test]
fn round_two_message_forms() {
    use crate::kernel_log::meaning::{event_meaning, Machine};
    // 5.13's misspelt `wd_nesc` (fixed later): the watchdog and its interval.
    let f = r(
        "clocksource:                       'hpet' wd_nesc: 505192062 wd_now: 10657158 wd_last: fac6f97 mask: ffffffff",
    )
    .facts;
    assert_eq!((f.watchdog.as_deref(), f.wd_nsec), (Some("hpet"), Some(505_192_062)));
    // A read-back delay line cut short by a paste still names the watchdog.
    let rb = r("clocksource: timekeeping watchdog on CPU6: hpet read-back delay of 5252e");
    assert_eq!(
        (rb.kind, rb.facts.watchdog.as_deref(), rb.facts.cpu),
        (Kind::WatchdogReadbackUnstable, Some("hpet"), Some(6))
    );
    // The retry verdict of 5.13-5.15.
    let at =
        r("clocksource: timekeeping watchdog on CPU3: hpet read-back delay of 166406ns, attempt 4, marking unstable");
    assert_eq!((at.kind, at.facts.attempts), (Kind::WatchdogReadbackUnstable, Some(4)));
    // Long readout: a stall, not a verdict.
    let lr = r("clocksource: Long readout interval, skipping watchdog check: cs_nsec: 1019215617 wd_nsec: 6127345");
    assert_eq!(lr.kind, Kind::WatchdogLongReadout);
    assert!(event_meaning(lr.kind, "", &lr.facts, Machine::Guest).contains("a stall, not a bad clock"));
    // 2.6's one-line verdict.
    let old = r("Clocksource tsc unstable (delta = -131624372 ns)");
    assert_eq!(
        (old.kind, old.facts.skew_ns),
        (Kind::WatchdogMarkedUnstable, Some(-131_624_372))
    );
    // The reasons of tsc.c's history, each explained.
    for (reason, says) in [
        ("cpufreq changes", "CPU frequency"),
        ("TSCs unsynchronized", "not synchronised"),
        ("could not calculate TSC khz", "could not measure"),
        ("running on Hyper-V", "Hyper-V"),
        ("clocksource watchdog", "watchdog clock"),
        ("check_tsc_sync_source failed", "out of step"),
    ] {
        let msg = format!("tsc: Marking TSC unstable due to {reason}");
        let e = r(&msg);
        assert_eq!(e.facts.reason.as_deref(), Some(reason));
        let m = event_meaning(e.kind, &msg, &e.facts, Machine::BareMetal);
        assert!(m.contains(says), "{reason}: {m}");
    }
    // TSC_ADJUST restored or compensated: firmware, the TSC stays in use.
    for msg in [
        "TSC ADJUST differs: CPU0 45960 --> 0. Restoring",
        "TSC ADJUST compensate: CPU36 observed 95626 warp. Adjust: 95626",
    ] {
        let e = r(msg);
        let m = event_meaning(e.kind, msg, &e.facts, Machine::BareMetal);
        assert!(m.contains("not a") && m.contains("stays in use"), "{msg}: {m}");
    }
    // tsc=recalibrate results.
    assert_eq!(
        r("tsc: Previous calibrated TSC freq:\t 2100.000 MHz").kind,
        Kind::TscRecalibrated
    );
    // ARM's generic timer.
    assert_eq!(
        kind("arch_timer: cp15 timer(s) running at 25.00MHz (virt)."),
        Kind::ArchTimer
    );
    // The AMD P0 firmware bug is noise in a guest.
    let p0 = "[Firmware Bug]: TSC doesn't count with P0 frequency!";
    let m = event_meaning(Kind::FirmwareBugP0, p0, &r(p0).facts, Machine::Guest);
    assert!(m.starts_with("benign in a guest"), "{m}");
}
