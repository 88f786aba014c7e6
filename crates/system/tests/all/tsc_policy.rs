//! PostgreSQL 19's `auto` policy and clockscope's trust decision for each
//! combination of evidence, and which frequency each one uses, all through
//! injected evidence (recorded CPUID leaves, kernel evidence values,
//! calibration results).

use clockscope_system::linux::{Evidence, KernelCmdline};
use clockscope_system::tsc::cpuid::{CpuidFacts, RecordedCpuid, SIGNATURE_KVM, SIGNATURE_VMWARE};
use clockscope_system::tsc::frequency::{
    frequency_report, CalibrationInput, FrequencyInputs, FrequencyReport, SourceId,
};
use clockscope_system::tsc::policy::{clockscope_decision, postgres_auto, KernelEvidence, KernelLogTsc, TscDecision};

use crate::common;

const KERNEL_KHZ: u64 = 2_599_998;

/// CPU description for [`cpu`].
#[derive(Clone, Copy)]
struct Cpu {
    rdtscp: bool,
    invariant: bool,
    tsc_adjust: bool,
    /// Hypervisor signature and highest leaf, with 0x40000010 EAX when >= 0x40000010.
    hypervisor: Option<([u32; 3], u32, u32)>,
    /// Leaf 0x15 EAX, EBX, ECX.
    leaf15: [u32; 3],
}

const KVM_GUEST: Cpu = Cpu {
    rdtscp: true,
    invariant: true,
    tsc_adjust: true,
    hypervisor: Some((SIGNATURE_KVM, 0x4000_0001, 0)),
    leaf15: [0, 0, 0],
};

fn cpu(c: Cpu) -> CpuidFacts {
    let mut rec = RecordedCpuid::new()
        .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
        .with(
            1,
            0,
            [0x000a_0671, 0, if c.hypervisor.is_some() { 1 << 31 } else { 0 }, 1 << 4],
        )
        .with(7, 0, [0, if c.tsc_adjust { 1 << 1 } else { 0 }, 0, 0])
        .with(0x15, 0, [c.leaf15[0], c.leaf15[1], c.leaf15[2], 0])
        .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
        .with(0x8000_0001, 0, [0, 0, 0, if c.rdtscp { 1 << 27 } else { 0 }])
        .with(0x8000_0007, 0, [0, 0, 0, if c.invariant { 1 << 8 } else { 0 }]);
    if let Some((sig, max, khz)) = c.hypervisor {
        rec.insert(0x4000_0000, 0, [max, sig[0], sig[1], sig[2]]);
        rec.insert(0x4000_0010, 0, [khz, 0, 0, 0]);
    }
    CpuidFacts::from_recorded(&rec)
}

fn good_kernel() -> KernelEvidence {
    KernelEvidence {
        kernel_release: Evidence::Found("6.18.0".to_string()),
        current_clocksource: Evidence::Found("tsc".to_string()),
        available_clocksources: Evidence::Found(vec!["tsc".to_string(), "kvm-clock".to_string()]),
        tsc_flags: Evidence::Found(common::kvm_guest_tsc_flags()),
        cpu_model_name: Some("Intel(R) Xeon(R) Processor".to_string()),
        cmdline: Evidence::Found(KernelCmdline::parse("BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro quiet")),
        kernel_log: Evidence::Found(KernelLogTsc {
            records: 300,
            tsc_khz: Some(KERNEL_KHZ),
            tsc_khz_message: Some("kernel log, \"tsc: Detected ... MHz processor\""),
            marked_unstable: false,
            unstable_evidence: vec![],
            messages: vec![],
        }),
    }
}

fn calibration(khz: Option<u64>, uncertainty_ppm: Option<f64>) -> Result<CalibrationInput, String> {
    Ok(CalibrationInput {
        khz,
        hz: khz.map(|k| k * 1000),
        uncertainty_ppm,
        note: if khz.is_some() {
            "converged"
        } else {
            "did not converge: scripted"
        }
        .to_string(),
    })
}

/// Inputs for [`frequency_report`]: the kernel log as in `kernel`, our
/// calibration at `ours_khz` (±1 ppm), PostgreSQL's 500 ppm low.
fn freq(facts: &CpuidFacts, kernel: &KernelEvidence, perf_khz: Option<u64>, ours_khz: Option<u64>) -> FrequencyReport {
    let log = match &kernel.kernel_log {
        Evidence::Found(l) => match l.tsc_khz {
            Some(k) => Ok((k, "kernel log".to_string())),
            None => Err("no tsc line".to_string()),
        },
        other => Err(other.reason().unwrap().to_string()),
    };
    frequency_report(&FrequencyInputs {
        cpuid: Some(facts),
        perf_page_khz: perf_khz
            .map(|k| (k, "perf page".to_string()))
            .ok_or_else(|| "no PMU".to_string()),
        kernel_log_khz: log,
        calibration: calibration(ours_khz, Some(1.0)),
        postgres_calibration: calibration(Some(KERNEL_KHZ - 1300), None),
        clocksource_is_counter: false,
    })
}

fn decide(facts: &CpuidFacts, kernel: &KernelEvidence, f: &FrequencyReport) -> TscDecision {
    clockscope_decision(Some(facts), Some(kernel), f)
}

/// The checks that failed, by name.
fn failed(d: &TscDecision) -> Vec<&'static str> {
    d.reasons.iter().filter(|r| !r.ok).map(|r| r.name).collect()
}

#[test]
fn everything_good_is_trusted() {
    let f = cpu(KVM_GUEST);
    let k = good_kernel();
    let fr = freq(&f, &k, None, Some(KERNEL_KHZ));
    let d = decide(&f, &k, &fr);
    assert!(d.trusted, "{:#?}", d.reasons);
    assert_eq!(d.reasons.len(), 6);
    assert_eq!(d.frequency_khz, Some(KERNEL_KHZ));
    assert_eq!(fr.clockscope.source, Some(SourceId::KernelLog));
    // PostgreSQL's calibration is 500 ppm low: flagged, but not held against the choice.
    assert!(fr.source(SourceId::CalibrationPostgres).flagged);
    assert!(fr.agreement.agree);
}

#[test]
fn each_cpu_flag_is_required() {
    let k = good_kernel();
    for (c, check) in [
        (
            Cpu {
                rdtscp: false,
                ..KVM_GUEST
            },
            "RDTSCP",
        ),
        (
            Cpu {
                invariant: false,
                ..KVM_GUEST
            },
            "invariant TSC",
        ),
    ] {
        let f = cpu(c);
        let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
        assert_eq!(failed(&d), [check]);
        assert!(!d.trusted);
    }
}

#[test]
fn kernel_tsc_flags_are_required_and_must_be_readable() {
    let f = cpu(KVM_GUEST);
    let mut k = good_kernel();
    if let Evidence::Found(flags) = &mut k.tsc_flags {
        flags.nonstop_tsc = false;
    }
    let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
    assert_eq!(failed(&d), ["invariant TSC"]);
    assert!(
        d.reasons[1].evidence.contains("nonstop_tsc no"),
        "{}",
        d.reasons[1].evidence
    );

    k.tsc_flags = Evidence::Unreadable("/proc/cpuinfo: permission denied".to_string());
    let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
    assert_eq!(failed(&d), ["invariant TSC"]);
    assert!(d.reasons[1].evidence.contains("permission denied"));
}

#[test]
fn kernel_must_time_with_the_tsc_or_call_it_reliable() {
    let f = cpu(KVM_GUEST);
    let mut k = good_kernel();
    k.current_clocksource = Evidence::Found("kvm-clock".to_string());
    let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
    assert_eq!(failed(&d), ["kernel clocksource"]);
    assert!(d.reasons[2].evidence.contains("kvm-clock"));

    // tsc_reliable is enough.
    if let Evidence::Found(flags) = &mut k.tsc_flags {
        flags.tsc_reliable = true;
    }
    let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
    assert!(d.trusted, "{:#?}", d.reasons);

    // Unreadable clocksource, no tsc_reliable: not ok.
    let mut k = good_kernel();
    k.current_clocksource = Evidence::Missing("current_clocksource: not present".to_string());
    let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
    assert_eq!(failed(&d), ["kernel clocksource"]);
}

#[test]
fn marked_unstable_in_the_log_is_fatal() {
    let f = cpu(KVM_GUEST);
    let mut k = good_kernel();
    k.kernel_log = Evidence::Found(KernelLogTsc {
        records: 400,
        tsc_khz: Some(KERNEL_KHZ),
        tsc_khz_message: Some("kernel log"),
        marked_unstable: true,
        unstable_evidence: vec!["Marking clocksource 'tsc' as unstable".to_string()],
        messages: vec![],
    });
    let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
    assert_eq!(failed(&d), ["not marked unstable"]);
    assert!(d.reasons[3].evidence.contains("Marking clocksource 'tsc' as unstable"));
}

#[test]
fn unreadable_log_counts_only_while_the_kernel_times_with_the_tsc() {
    let f = cpu(KVM_GUEST);
    let mut k = good_kernel();
    k.kernel_log = Evidence::Unreadable("/dev/kmsg: EPERM (dmesg_restrict)".to_string());
    // Frequency then comes from our calibration, the last resort.
    let fr = freq(&f, &k, None, Some(KERNEL_KHZ));
    assert_eq!(fr.clockscope.source, Some(SourceId::CalibrationClockscope));
    let d = decide(&f, &k, &fr);
    assert!(d.trusted, "{:#?}", d.reasons);
    assert!(d.reasons[3].evidence.contains("still times with the TSC"));

    // Switched away and tsc gone from the available list: the kernel dropped it.
    k.current_clocksource = Evidence::Found("kvm-clock".to_string());
    k.available_clocksources = Evidence::Found(vec!["kvm-clock".to_string()]);
    let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
    assert_eq!(failed(&d), ["kernel clocksource", "not marked unstable"]);
    assert!(d.reasons[3]
        .evidence
        .contains("missing from the available clocksources"));
}

#[test]
fn sources_must_agree_within_500_ppm() {
    let f = cpu(KVM_GUEST);
    let k = good_kernel();
    // Our calibration 800 ppm above the kernel's value (uncertainty 1 ppm).
    let off = KERNEL_KHZ + KERNEL_KHZ * 800 / 1_000_000;
    let fr = freq(&f, &k, None, Some(off));
    assert!(fr.source(SourceId::CalibrationClockscope).flagged);
    assert!(!fr.agreement.agree);
    let d = decide(&f, &k, &fr);
    assert_eq!(failed(&d), ["frequency known and sources agree"]);
    assert!(d.reasons[4].evidence.contains("+800 ppm"), "{}", d.reasons[4].evidence);

    // 400 ppm is within the limit.
    let near = KERNEL_KHZ + KERNEL_KHZ * 400 / 1_000_000;
    assert!(decide(&f, &k, &freq(&f, &k, None, Some(near))).trusted);

    // The perf page disagreeing is just as fatal.
    let fr = freq(&f, &k, Some(KERNEL_KHZ + 2000), Some(KERNEL_KHZ));
    assert_eq!(
        fr.clockscope.source,
        Some(SourceId::KernelPerfPage),
        "perf comes before the log"
    );
    assert!(!fr.agreement.agree);
}

#[test]
fn no_frequency_is_not_trusted() {
    let f = cpu(KVM_GUEST);
    let mut k = good_kernel();
    k.kernel_log = Evidence::Found(KernelLogTsc {
        records: 10,
        tsc_khz: None,
        tsc_khz_message: None,
        marked_unstable: false,
        unstable_evidence: vec![],
        messages: vec![],
    });
    // Calibration did not converge: no last resort either.
    let fr = freq(&f, &k, None, None);
    assert_eq!(fr.clockscope.khz, None);
    let d = decide(&f, &k, &fr);
    assert_eq!(failed(&d), ["frequency known and sources agree"]);
    assert_eq!(d.frequency_khz, None);
}

#[test]
fn boot_options_against_the_tsc() {
    let f = cpu(KVM_GUEST);
    for (cmdline, ok) in [
        ("ro tsc=unstable", false),
        ("ro notsc", false),
        ("ro clocksource=hpet", false),
        ("ro clocksource=tsc", true),
        ("ro tsc=reliable", true),
        ("ro tsc=nowatchdog", true),
    ] {
        let mut k = good_kernel();
        k.cmdline = Evidence::Found(KernelCmdline::parse(cmdline));
        let d = decide(&f, &k, &freq(&f, &k, None, Some(KERNEL_KHZ)));
        assert_eq!(d.trusted, ok, "{cmdline}: {:#?}", d.reasons);
        assert_eq!(d.reasons[5].ok, ok, "{cmdline}");
    }
}

#[test]
fn without_kernel_evidence_nothing_is_trusted() {
    let f = cpu(KVM_GUEST);
    let fr = frequency_report(&FrequencyInputs {
        cpuid: Some(&f),
        perf_page_khz: Err("dump".to_string()),
        kernel_log_khz: Err("dump".to_string()),
        calibration: Err("dump".to_string()),
        postgres_calibration: Err("dump".to_string()),
        clocksource_is_counter: false,
    });
    let d = clockscope_decision(Some(&f), None, &fr);
    assert!(!d.trusted);
    assert_eq!(
        failed(&d),
        [
            "kernel clocksource",
            "not marked unstable",
            "frequency known and sources agree",
            "no boot option against the TSC"
        ]
    );
    // No CPUID at all (not x86): the CPU checks fail too.
    let d = clockscope_decision(None, None, &fr);
    assert_eq!(&failed(&d)[..2], ["RDTSCP", "invariant TSC"]);
}

#[test]
fn postgres_auto_is_an_or_of_two_hints() {
    // frequency, TSC_ADJUST, current clocksource -> use by default
    type Case<'a> = (Option<u64>, bool, Result<&'a str, &'a str>, bool);
    let cases: [Case; 7] = [
        (Some(2_600_000), true, Ok("tsc"), true),
        (Some(2_600_000), true, Ok("kvm-clock"), true),
        (Some(2_600_000), false, Ok("tsc"), true),
        (Some(2_600_000), false, Ok("kvm-clock"), false),
        (Some(2_600_000), true, Err("not read"), true),
        (Some(2_600_000), false, Err("not read"), false),
        (None, true, Ok("tsc"), false),
    ];
    for (khz, adjust, cs, expected) in cases {
        let a = postgres_auto(khz, Some("x86, calibration"), adjust, cs);
        assert_eq!(a.use_by_default, expected, "{khz:?} {adjust} {cs:?}");
        assert_eq!(a.reasons.len(), 2);
        assert_eq!(a.reasons[0].ok, khz.is_some());
        assert_eq!(a.reasons[1].ok, adjust || cs == Ok("tsc"));
    }
}

#[test]
fn frequency_order_bare_metal_cpuid_first() {
    // Bare metal Intel with 0x15 (25 MHz * 84 / 1 = 2 100 000 kHz) and a kernel log.
    let f = cpu(Cpu {
        hypervisor: None,
        leaf15: [1, 84, 25_000_000],
        ..KVM_GUEST
    });
    let mut k = good_kernel();
    if let Evidence::Found(l) = &mut k.kernel_log {
        l.tsc_khz = Some(2_100_000);
    }
    let fr = freq(&f, &k, Some(2_100_001), Some(2_100_000));
    assert_eq!(fr.clockscope.source, Some(SourceId::Cpuid15));
    assert_eq!(fr.clockscope.khz, Some(2_100_000));
    assert_eq!(fr.postgresql.source, Some("x86, cpuid 0x15"));
    assert!(fr.agreement.agree, "{}", fr.agreement.evidence);
    assert!(decide(&f, &k, &fr).trusted);
}

#[test]
fn frequency_order_hypervisor_leaf_first_in_a_guest() {
    // A KVM guest that publishes 0x40000010 (QEMU +invtsc,vmware-cpuid-freq) and
    // passes through a 0x15 that disagrees: the hypervisor leaf wins, 0x15 is flagged.
    let f = cpu(Cpu {
        hypervisor: Some((SIGNATURE_KVM, 0x4000_0010, 2_599_998)),
        leaf15: [1, 84, 25_000_000],
        ..KVM_GUEST
    });
    let k = good_kernel();
    let fr = freq(&f, &k, None, Some(KERNEL_KHZ));
    assert_eq!(fr.clockscope.source, Some(SourceId::Hypervisor40000010));
    assert_eq!(fr.postgresql.khz, Some(2_599_998));
    assert_eq!(fr.postgresql.source, Some("x86, hypervisor, cpuid 0x40000010"));
    assert!(fr.source(SourceId::Cpuid15).flagged);
    assert!(!fr.agreement.agree, "the 0x15 value is 192 000 ppm off");

    // VMware's signature works the same; an unknown signature does not count for PostgreSQL.
    let vm = cpu(Cpu {
        hypervisor: Some((SIGNATURE_VMWARE, 0x4000_0010, 2_599_998)),
        ..KVM_GUEST
    });
    assert_eq!(freq(&vm, &k, None, None).postgresql_tsc_khz, Some(2_599_998));
    let other = cpu(Cpu {
        hypervisor: Some(([0x7263_694d, 0x666f_736f, 0x7648_2074], 0x4000_0010, 2_599_998)),
        ..KVM_GUEST
    });
    let fr = freq(&other, &k, None, Some(KERNEL_KHZ));
    assert_eq!(fr.postgresql_tsc_khz, None);
    assert!(fr.postgresql.why.contains("neither VMwareVMware nor KVMKVMKVM"));
    assert_eq!(fr.clockscope.source, Some(SourceId::Hypervisor40000010));
}

#[test]
fn postgres_zero_ratio_with_crystal_has_no_fallback() {
    // 0x15 ECX set but EBX 0: PostgreSQL returns 0 and calibrates, even with 0x16 present.
    let mut rec = RecordedCpuid::new()
        .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
        .with(1, 0, [0x0005_0654, 0, 0, 1 << 4])
        .with(0x15, 0, [2, 0, 25_000_000, 0])
        .with(0x16, 0, [3300, 4000, 100, 0])
        .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
        .with(0x8000_0001, 0, [0, 0, 0, 1 << 27]);
    rec.insert(0x8000_0007, 0, [0, 0, 0, 1 << 8]);
    let f = CpuidFacts::from_recorded(&rec);
    let p = clockscope_system::tsc::frequency::postgres_cpuid_khz(&f);
    assert!(p.tsc_usable);
    assert_eq!(p.khz, None);
    assert!(p.why.contains("no fallback"), "{}", p.why);
}

/// A bare-metal Intel CPU with leaf 0x15 = `leaf15` (EAX, EBX, ECX).
fn bare_metal(leaf15: [u32; 3]) -> CpuidFacts {
    cpu(Cpu {
        hypervisor: None,
        leaf15,
        ..KVM_GUEST
    })
}

/// Asserts that `id` is reported implausible with `value` kHz, that clockscope
/// neither uses it nor passes "frequency known and sources agree", and that
/// the message names `range`.
fn assert_implausible(f: &CpuidFacts, id: SourceId, value: u64, range: &str) -> FrequencyReport {
    let k = good_kernel();
    let fr = freq(&f.clone(), &k, None, Some(KERNEL_KHZ));
    let s = fr.source(id);
    assert_eq!(s.khz, None, "{s:?}");
    assert_eq!(s.implausible_khz, Some(value), "{s:?}");
    assert!(
        s.note.starts_with("implausible, not used: ") && s.note.contains(range),
        "{}",
        s.note
    );
    assert_ne!(fr.clockscope.source, Some(id));
    assert!(!fr.agreement.agree);
    assert!(fr.agreement.evidence.contains(range), "{}", fr.agreement.evidence);
    let d = decide(f, &k, &fr);
    assert!(!d.trusted);
    assert_eq!(failed(&d), vec!["frequency known and sources agree"]);
    fr
}

#[test]
fn leaf15_with_absurd_registers_is_implausible_and_does_not_overflow() {
    // eax=1, ebx=ecx=0xffffffff once gave 18446742798104265 kHz, marked "ok".
    let f = bare_metal([1, u32::MAX, u32::MAX]);
    let fr = assert_implausible(&f, SourceId::Cpuid15, 4_294_967 * 4_294_967_295, "outside 1-100 MHz");
    assert_eq!(fr.cpuid_tsc_khz, None);
    assert_eq!(fr.clockscope.source, Some(SourceId::KernelLog));
    // PostgreSQL: 4294967 * 0xffffffff wraps in uint32 to 4290672329, an
    // int32 of -4294967: not > 0, so it calibrates.
    let p = clockscope_system::tsc::frequency::postgres_cpuid_khz(&f);
    assert_eq!(p.khz, None);
    assert!(p.why.contains("int32 as -4294967"), "{}", p.why);
    assert_eq!(fr.postgresql.source, Some("x86, calibration"));
    assert!(!fr.postgresql.implausible);
}

#[test]
fn one_hz_crystal_is_implausible_not_zero_khz_ok() {
    let f = bare_metal([1, 84, 1]);
    let fr = assert_implausible(&f, SourceId::Cpuid15, 0, "crystal 1 Hz is outside 1-100 MHz");
    // PostgreSQL: 1 / 1000 * 84 / 1 = 0, not > 0: calibration.
    assert_eq!(fr.postgresql_tsc_khz, None);
    assert_eq!(fr.postgresql.source, Some("x86, calibration"));
}

#[test]
fn fifty_mhz_and_twenty_ghz_tsc_are_implausible() {
    // 25 MHz crystal * 2 = 50 MHz.
    let f = bare_metal([1, 2, 25_000_000]);
    let fr = assert_implausible(&f, SourceId::Cpuid15, 50_000, "50000 kHz is outside 100 MHz-10 GHz");
    // PostgreSQL uses it (no plausibility check); clockscope says so.
    assert_eq!(fr.postgresql.khz, Some(50_000));
    assert!(fr.postgresql.implausible);
    assert!(
        fr.postgresql.why.contains("PostgreSQL 19 has no plausibility check"),
        "{}",
        fr.postgresql.why
    );
    // 25 MHz crystal * 800 = 20 GHz.
    let f = bare_metal([1, 800, 25_000_000]);
    let fr = assert_implausible(
        &f,
        SourceId::Cpuid15,
        20_000_000,
        "20000000 kHz is outside 100 MHz-10 GHz",
    );
    assert_eq!(fr.postgresql.khz, Some(20_000_000));
    assert!(fr.postgresql.implausible);
    // The bounds themselves are plausible.
    for (ratio, khz) in [(4, 100_000), (400, 10_000_000)] {
        let fr = freq(&bare_metal([1, ratio, 25_000_000]), &good_kernel(), None, None);
        assert_eq!(fr.source(SourceId::Cpuid15).khz, Some(khz));
        assert!(!fr.postgresql.implausible);
    }
}

#[test]
fn hypervisor_leaf_with_absurd_khz_is_implausible() {
    let guest = |khz: u32| {
        cpu(Cpu {
            hypervisor: Some((SIGNATURE_KVM, 0x4000_0010, khz)),
            ..KVM_GUEST
        })
    };
    let f = guest(u32::MAX);
    let fr = assert_implausible(
        &f,
        SourceId::Hypervisor40000010,
        u32::MAX as u64,
        "4294967295 kHz is outside 100 MHz-10 GHz",
    );
    // The kernel's value is used instead, and flagged as not agreeing.
    assert_eq!(fr.clockscope.source, Some(SourceId::KernelLog));
    // PostgreSQL stores 0xffffffff in an int32 (-1): calibration.
    assert_eq!(fr.postgresql.source, Some("x86, calibration"));
    // 50 kHz: PostgreSQL uses it.
    let fr = assert_implausible(&guest(50), SourceId::Hypervisor40000010, 50, "50 kHz is outside");
    assert_eq!(fr.postgresql.khz, Some(50));
    assert_eq!(fr.postgresql.source, Some("x86, hypervisor, cpuid 0x40000010"));
    assert!(fr.postgresql.implausible);
}

#[test]
fn crystal_derived_from_leaf16_cannot_overflow() {
    // ECX 0, so Linux derives the crystal from 0x16: base * 1000 * EAX / EBX
    // with every register at its maximum once overflowed 64 bits.
    let mut rec = RecordedCpuid::new()
        .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
        .with(1, 0, [0x000a_0671, 0, 0, 1 << 4])
        .with(0x15, 0, [u32::MAX, 1, 0, 0])
        .with(0x16, 0, [u32::MAX, u32::MAX, u32::MAX, 0])
        .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
        .with(0x8000_0001, 0, [0, 0, 0, 1 << 27]);
    rec.insert(0x8000_0007, 0, [0, 0, 0, 1 << 8]);
    let f = CpuidFacts::from_recorded(&rec);
    let fr = freq(&f, &good_kernel(), None, None);
    let s = fr.source(SourceId::Cpuid15CrystalFrom16);
    assert_eq!(s.khz, None);
    assert!(
        s.implausible_khz.is_some() && s.note.contains("outside 1-100 MHz"),
        "{}",
        s.note
    );
    // 0x16 alone: 4294967295 MHz; PostgreSQL's uint32 * 1000 wraps.
    assert_eq!(fr.source(SourceId::Cpuid16).khz, None);
    let p = clockscope_system::tsc::frequency::postgres_cpuid_khz(&f);
    // 0xffffffff * 1000 wraps to 4294966296, an int32 of -1000: calibration.
    assert_eq!(p.khz, None);
    assert!(p.why.contains("int32 as -1000"), "{}", p.why);
}
