//! Independent frequency evidence and the kernel log, interpreted: a
//! calibration against the TSC's own clocksource is not counted as
//! independent; `cpuid_tsc_khz` follows Linux's rules (hypervisor leaf in a
//! VMware guest, leaf 0x16 when 0x15 gives nothing) and names the rule; the
//! kernel's TSC and clocksource messages from recorded logs are recognised
//! and explained for bare metal and guests.

use crate::common;

use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::linux::tsc_messages::{interpret, Machine, MessageKind, Severity};
use clockscope_system::linux::{Evidence, KernelLog, LinuxEvidence};
use clockscope_system::tsc::cpuid::{CpuidFacts, RecordedCpuid, SIGNATURE_KVM, SIGNATURE_VMWARE};
use clockscope_system::tsc::frequency::{frequency_report, CalibrationInput, FrequencyInputs, SourceId};
use clockscope_system::tsc::policy::KernelEvidence;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/data/linux/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn calibration(hz: u64) -> Result<CalibrationInput, String> {
    Ok(CalibrationInput {
        khz: Some(hz / 1000),
        hz: Some(hz),
        uncertainty_ppm: Some(2.0),
        note: "converged".to_string(),
    })
}

/// This machine's case: a KVM guest without a CPUID frequency, the kernel
/// log's 2445402 kHz in use, our calibration against MONOTONIC_RAW 0.4 ppm off.
fn kvm_inputs(facts: &CpuidFacts, clocksource_is_counter: bool) -> FrequencyInputs<'_> {
    FrequencyInputs {
        cpuid: Some(facts),
        perf_page_khz: Err("no PMU".to_string()),
        kernel_log_khz: Ok((2_445_402, "tsc: Detected".to_string())),
        calibration: calibration(2_445_403_000),
        postgres_calibration: calibration(2_445_100_000),
        clocksource_is_counter,
    }
}

#[test]
fn calibration_against_the_tsc_clocksource_is_not_independent() {
    let facts = common::kvm_cpuid();
    let r = frequency_report(&kvm_inputs(&facts, true));
    assert_eq!(r.clockscope.source, Some(SourceId::KernelLog));
    let cal = r.source(SourceId::CalibrationClockscope);
    assert!(!cal.independent);
    assert!(cal.note.starts_with("check of the kernel's arithmetic"), "{}", cal.note);
    // It is still compared (a disagreement would be a kernel bug) ...
    assert!(cal.ppm_vs_in_use.is_some());
    // ... but not counted as independent evidence.
    assert!(r.agreement.agree);
    assert!(
        r.agreement
            .evidence
            .contains("kernel log (tsc: Detected/Refined) is the only independent source"),
        "{}",
        r.agreement.evidence
    );
    assert!(
        r.agreement
            .evidence
            .contains("not counted, a check of the kernel's arithmetic")
            && r.agreement
                .evidence
                .contains("calibration vs MONOTONIC_RAW (clockscope) +0.4 ppm"),
        "{}",
        r.agreement.evidence
    );

    // With another clocksource (kvm-clock), MONOTONIC_RAW is independent of
    // the TSC's scale and the calibration counts.
    let r = frequency_report(&kvm_inputs(&facts, false));
    let cal = r.source(SourceId::CalibrationClockscope);
    assert!(cal.independent);
    assert!(!cal.note.contains("kernel's arithmetic"));
    assert!(
        r.agreement
            .evidence
            .starts_with("1 independent source(s) within 500 ppm"),
        "{}",
        r.agreement.evidence
    );
}

#[test]
fn a_kernel_arithmetic_check_cannot_make_sources_agree_or_disagree() {
    // A calibration 900 ppm off while the clocksource is the TSC: flagged
    // (it says the kernel's arithmetic is off) but it is not an independent
    // source, so the agreement rests on the independent ones only.
    let facts = common::kvm_cpuid();
    let mut inputs = kvm_inputs(&facts, true);
    inputs.calibration = calibration(2_447_603_000);
    let r = frequency_report(&inputs);
    assert!(r.source(SourceId::CalibrationClockscope).flagged);
    assert!(r.agreement.agree, "{}", r.agreement.evidence);
    // The same calibration with clocksource kvm-clock is independent and fails.
    inputs.clocksource_is_counter = false;
    assert!(!frequency_report(&inputs).agreement.agree);
}

#[test]
fn live_report_labels_the_calibration_when_the_clocksource_is_tsc() {
    let root = FakeRoot::new();
    root.write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "tsc\n",
    );
    root.write("dev/kmsg", &fixture("amd-kvm-guest.dmesg"));
    let kernel = KernelEvidence::read(root.path());
    let live = clockscope_system::tsc::report::LiveEvidence {
        root: root.path().display().to_string(),
        kernel,
        perf_page_khz: Err("no PMU".to_string()),
        calibration: Err("not run".to_string()),
        postgresql_calibration: Err("not run".to_string()),
        time_libraries: Vec::new(),
    };
    let facts = common::kvm_cpuid();
    let mut r = clockscope_system::tsc::TscReport::build(Some(facts.clone()), Some(live.clone()), None);
    // Without a converged calibration there is nothing to label.
    assert!(r.source(SourceId::CalibrationClockscope).independent);
    let mut cal = clockscope_system::counter::calibrate::Calibration::unavailable("scripted", "bracketed");
    cal.khz = Some(2_445_402);
    cal.hz = Some(2_445_402_100);
    let live = clockscope_system::tsc::report::LiveEvidence {
        calibration: Ok(cal),
        ..live
    };
    r = clockscope_system::tsc::TscReport::build(Some(facts), Some(live), None);
    assert!(!r.source(SourceId::CalibrationClockscope).independent);
}

/// A VMware guest on an Intel CPU whose leaf 0x15 enumerates a crystal:
/// Linux takes the hypervisor's frequency, not 0x15's.
fn vmware_guest(tsc_khz: u32) -> CpuidFacts {
    let rec = RecordedCpuid::new()
        .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
        .with(1, 0, [0x0005_0654, 0, 1 << 31, 1 << 4])
        .with(0x15, 0, [2, 176, 25_000_000, 0])
        .with(0x16, 0, [2200, 3000, 100, 0])
        .with(
            0x4000_0000,
            0,
            [
                0x4000_0010,
                SIGNATURE_VMWARE[0],
                SIGNATURE_VMWARE[1],
                SIGNATURE_VMWARE[2],
            ],
        )
        .with(0x4000_0010, 0, [tsc_khz, 66_000, 0, 0])
        .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
        .with(0x8000_0001, 0, [0, 0, 0, 1 << 27])
        .with(0x8000_0007, 0, [0, 0, 0, 1 << 8]);
    CpuidFacts::from_recorded(&rec)
}

fn dump_inputs(facts: &CpuidFacts) -> FrequencyInputs<'_> {
    let none = || "dump".to_string();
    FrequencyInputs {
        cpuid: Some(facts),
        perf_page_khz: Err(none()),
        kernel_log_khz: Err(none()),
        calibration: Err(none()),
        postgres_calibration: Err(none()),
        clocksource_is_counter: false,
    }
}

#[test]
fn vmware_guest_takes_the_hypervisor_leaf_as_linux_does() {
    let f = vmware_guest(2_294_609);
    let r = frequency_report(&dump_inputs(&f));
    // 0x15 alone would give 25000 * 176 / 2 = 2 200 000 kHz.
    assert_eq!(r.source(SourceId::Cpuid15).khz, Some(2_200_000));
    assert_eq!(r.cpuid_tsc_khz, Some(2_294_609));
    assert!(
        r.cpuid_tsc_rule.starts_with("hypervisor leaf 0x40000010"),
        "{}",
        r.cpuid_tsc_rule
    );

    // The recorded VMware Workstation guest (Core 2, no leaf 0x15): today
    // the field carries the leaf's 2 100 000 kHz where it was null.
    let text = fixture_cpuid("vmware_workstation7_core2_t6500.cpuid-r.txt");
    let facts = CpuidFacts::from_recorded(&clockscope_system::tsc::cpuid::parse_dump(&text).unwrap().leaves);
    let r = frequency_report(&dump_inputs(&facts));
    assert_eq!(r.cpuid_tsc_khz, Some(2_100_000));
    assert!(r.cpuid_tsc_rule.contains("VMware"), "{}", r.cpuid_tsc_rule);

    // A VMware leaf of 0 is no frequency: Linux falls back to its Intel rules.
    let f = vmware_guest(0);
    let r = frequency_report(&dump_inputs(&f));
    assert_eq!(r.cpuid_tsc_khz, Some(2_200_000));
    assert_eq!(r.cpuid_tsc_rule, "leaf 0x15: crystal (ECX) x EBX/EAX");
}

fn fixture_cpuid(name: &str) -> String {
    let path = format!("{}/tests/data/cpuid/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn kvm_leaf_is_not_linuxs_and_leaf_16_is_its_last_cpuid_rule() {
    // KVM's leaf 0x40000010 is PostgreSQL's source, not Linux's CPUID rule.
    let rec = RecordedCpuid::new()
        .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
        .with(1, 0, [0x0005_0654, 0, 1 << 31, 1 << 4])
        .with(0x16, 0, [2600, 3500, 100, 0])
        .with(
            0x4000_0000,
            0,
            [0x4000_0010, SIGNATURE_KVM[0], SIGNATURE_KVM[1], SIGNATURE_KVM[2]],
        )
        .with(0x4000_0010, 0, [2_599_998, 1_000_000, 0, 0]);
    let f = CpuidFacts::from_recorded(&rec);
    let r = frequency_report(&dump_inputs(&f));
    // No leaf 0x15 ratio: Linux's cpu_khz_from_cpuid gives 0x16's base.
    assert_eq!(r.cpuid_tsc_khz, Some(2_600_000));
    assert!(
        r.cpuid_tsc_rule.starts_with("leaf 0x16 base MHz"),
        "{}",
        r.cpuid_tsc_rule
    );
    // clockscope still uses the hypervisor leaf, never the nominal 0x16.
    assert_eq!(r.clockscope.source, Some(SourceId::Hypervisor40000010));

    // An AMD CPU: no CPUID rule in Linux, and the rule says why.
    let amd = common::kvm_cpuid();
    let r = frequency_report(&dump_inputs(&amd));
    assert_eq!(r.cpuid_tsc_khz, None);
    assert!(r.cpuid_tsc_rule.starts_with("none: "), "{}", r.cpuid_tsc_rule);
}

fn kinds(log: &str, machine: Machine) -> Vec<(MessageKind, Severity, u64)> {
    interpret(&KernelLog::parse(log).lines, machine)
        .iter()
        .map(|m| (m.kind, m.severity, m.count))
        .collect()
}

#[test]
fn this_amd_guests_log_explained() {
    let log = KernelLog::parse(&fixture("amd-kvm-guest.dmesg"));
    let msgs = interpret(&log.lines, Machine::Guest);
    let k: Vec<MessageKind> = msgs.iter().map(|m| m.kind).collect();
    use MessageKind as K;
    assert_eq!(
        k,
        [
            K::FirmwareBugP0,
            K::KvmClock,
            K::TscDetected,
            K::TscDeadlineTimer,
            K::SwitchedClocksource
        ]
    );
    let p0 = &msgs[0];
    assert_eq!(p0.message, "[Firmware Bug]: TSC doesn't count with P0 frequency!");
    assert_eq!(p0.severity, Severity::Info, "benign in a guest");
    assert!(p0.meaning.starts_with("benign in a guest"), "{}", p0.meaning);
    assert_eq!(msgs[1].count, 3, "two kvm-clock lines and its clocksource registration");
    let sw = &msgs[4];
    assert_eq!(sw.count, 2);
    assert_eq!(sw.message, "clocksource: Switched to clocksource kvm-clock");
    assert_eq!(
        sw.last_message.as_deref(),
        Some("clocksource: Switched to clocksource tsc")
    );
    assert!(
        sw.meaning.contains("'tsc'") && sw.meaning.contains("vDSO"),
        "{}",
        sw.meaning
    );
    assert!(msgs.iter().all(|m| m.severity == Severity::Info));

    // The same P0 line on bare metal asks for a BIOS check.
    let bare = interpret(&log.lines, Machine::BareMetal);
    assert_eq!(bare[0].severity, Severity::Warning);
    assert!(bare[0].meaning.contains("check the BIOS"), "{}", bare[0].meaning);
}

#[test]
fn bare_metal_sync_failure_explained() {
    use MessageKind as K;
    use Severity::{Info, Warning};
    let got = kinds(&fixture("intel-bare-metal-tsc-sync.dmesg"), Machine::BareMetal);
    assert_eq!(
        got,
        [
            (K::FastCalibrationFailed, Info, 1),
            (K::TscDetected, Info, 1),
            (K::TscDeadlineTimer, Info, 1),
            (K::TscAdjustDiffers, Warning, 3),
            (K::TscWarp, Warning, 2),
            (K::TscMarkedUnstable, Warning, 1),
            (K::TscAdjustCompensate, Warning, 2),
            (K::SwitchedClocksource, Info, 1),
        ]
    );
    let log = KernelLog::parse(&fixture("intel-bare-metal-tsc-sync.dmesg"));
    let msgs = interpret(&log.lines, Machine::BareMetal);
    let unstable = msgs.iter().find(|m| m.kind == K::TscMarkedUnstable).unwrap();
    assert!(unstable.meaning.contains("out of step"), "{}", unstable.meaning);
    let warp = msgs.iter().find(|m| m.kind == K::TscWarp).unwrap();
    assert_eq!(warp.message, "TSC synchronization [CPU#0 -> CPU#28]:");
    assert!(warp.meaning.contains("go backwards"), "{}", warp.meaning);
    let switched = msgs.iter().find(|m| m.kind == K::SwitchedClocksource).unwrap();
    assert!(switched.meaning.contains("slow clock"), "{}", switched.meaning);
    let adjust = msgs.iter().find(|m| m.kind == K::TscAdjustDiffers).unwrap();
    assert!(adjust.meaning.contains("BIOS"), "{}", adjust.meaning);
    assert_eq!(
        adjust.last_message.as_deref(),
        Some("[Firmware Bug]: TSC ADJUST differs: CPU4 0 --> -2199023255552. Restoring")
    );
}

#[test]
fn watchdog_and_vmware_logs_explained() {
    use MessageKind as K;
    let log = KernelLog::parse(&fixture("unstable-host.dmesg"));
    let guest = interpret(&log.lines, Machine::Guest);
    let bare = interpret(&log.lines, Machine::BareMetal);
    for msgs in [&guest, &bare] {
        let k: Vec<MessageKind> = msgs.iter().map(|m| m.kind).collect();
        for want in [
            K::ClocksourceMarkedUnstable,
            K::TscMarkedUnstable,
            K::TscUnstableAfterBoot,
            K::RefinedCalibration,
        ] {
            assert!(k.contains(&want), "{want:?} in {k:?}");
        }
    }
    let wd = |m: &[clockscope_system::linux::tsc_messages::KernelMessage]| {
        m.iter()
            .find(|m| m.kind == K::ClocksourceMarkedUnstable)
            .unwrap()
            .meaning
            .clone()
    };
    assert!(wd(&guest).contains("host delayed this vCPU"), "{}", wd(&guest));
    assert!(wd(&bare).contains("SMI"), "{}", wd(&bare));
    let last_switch = guest.iter().find(|m| m.kind == K::SwitchedClocksource).unwrap();
    assert!(last_switch.meaning.contains("'hpet'"), "{}", last_switch.meaning);

    let log = KernelLog::parse(&fixture("vmware-guest.dmesg"));
    let k: Vec<MessageKind> = interpret(&log.lines, Machine::Guest).iter().map(|m| m.kind).collect();
    assert_eq!(
        k,
        [
            K::HypervisorFrequency,
            K::TscDetected,
            K::TscDeadlineTimer,
            K::SwitchedClocksource
        ]
    );
}

#[test]
fn kernel_evidence_carries_messages_for_the_machine_it_is() {
    let root = FakeRoot::new();
    root.write("dev/kmsg", &fixture("amd-kvm-guest.dmesg"));
    root.write(
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n\
         flags\t\t: fpu tsc rdtscp constant_tsc nonstop_tsc tsc_known_freq hypervisor\n\n",
    );
    let k = KernelEvidence::from_linux(&LinuxEvidence::read(root.path()));
    let Evidence::Found(log) = &k.kernel_log else {
        panic!("{:?}", k.kernel_log)
    };
    assert_eq!(log.messages[0].kind, MessageKind::FirmwareBugP0);
    assert_eq!(log.messages[0].severity, Severity::Info, "hypervisor flag: a guest");

    // Hostile text stays verbatim in the model (escaped where rendered).
    let hostile = "[Firmware Bug]: TSC doesn't count with P0 frequency!\u{1b}]0;owned\u{7}";
    let m = interpret(&[hostile], Machine::Guest);
    assert_eq!(m[0].message, hostile);
    assert!(!clockscope_system::escape::escape_untrusted(&m[0].message).contains('\u{1b}'));
}
