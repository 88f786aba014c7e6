//! Every recorded CPUID dump in `tests/data/cpuid` decoded: identity, flags,
//! every CPUID frequency source, PostgreSQL 19's choice and clockscope's.
//! Expected frequencies are computed by hand from the leaf values, shown in
//! the comments.

use clockscope_system::tsc::cpuid::{parse_dump, CpuidFacts, DumpFormat, ParsedDump};
use clockscope_system::tsc::frequency::{SourceId, PG_SOURCE_CPUID_15, PG_SOURCE_CPUID_16};
use clockscope_system::tsc::report::ReportSource;
use clockscope_system::tsc::TscReport;
use std::path::PathBuf;

fn load(name: &str) -> ParsedDump {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/cpuid")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_dump(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn khz(r: &TscReport, id: SourceId) -> Option<u64> {
    r.source(id).khz
}

/// The CPUID part every dump has in common: no kernel, no calibration.
fn assert_dump_has_no_live_sources(r: &TscReport) {
    for id in [
        SourceId::KernelPerfPage,
        SourceId::KernelLog,
        SourceId::CalibrationClockscope,
        SourceId::CalibrationPostgres,
    ] {
        let s = r.source(id);
        assert_eq!(s.khz, None, "{id:?}");
        assert!(s.note.contains("analysing a CPUID dump"), "{id:?}: {}", s.note);
    }
    assert!(matches!(r.evidence_source, ReportSource::CpuidDump { .. }));
    assert!(r.linux.is_none() && r.calibration.is_none());
    // Without kernel evidence clockscope never trusts the TSC.
    assert!(!r.clockscope_decision.trusted);
    let lacking: Vec<_> = r
        .clockscope_decision
        .reasons
        .iter()
        .filter(|x| !x.ok && x.evidence.contains("analysing a CPUID dump"))
        .map(|x| x.name)
        .collect();
    assert!(r.clockscope_decision.reasons[1]
        .evidence
        .contains("analysing a CPUID dump"));
    for check in [
        "kernel clocksource",
        "not marked unstable",
        "no boot option against the TSC",
    ] {
        assert!(lacking.contains(&check), "{check}: {lacking:?}");
    }
}

#[test]
fn skylake_client_i5_6400t() {
    let d = load("skylake_i5_6400t.aida64.txt");
    assert_eq!(d.format, DumpFormat::Aida64);
    let f = CpuidFacts::from_recorded(&d.leaves);
    assert_eq!(f.vendor, "GenuineIntel");
    // Signature 0x000506E3: family 6, model 0x5E (ext 5, base E), stepping 3.
    assert_eq!((f.family, f.model, f.stepping), (6, 0x5E, 3));
    assert_eq!(f.brand.as_deref(), Some("Intel(R) Core(TM) i5-6400T CPU @ 2.20GHz"));
    // 0x80000001 EDX 0x2C100000 bit 27; 0x80000007 EDX 0x100; 7.0 EBX 0x029C67AF bit 1.
    assert!(f.tsc && f.rdtscp && f.invariant_tsc && f.tsc_adjust && !f.hypervisor_bit);

    let r = TscReport::from_dump(&d);
    // 0x15: EAX 2, EBX 0xB8 = 184, ECX 0: no crystal.
    assert_eq!(khz(&r, SourceId::Cpuid15), None);
    // Linux 4.x table, model 0x5E: 24000 kHz * 184 / 2 = 2 208 000 kHz.
    assert_eq!(khz(&r, SourceId::Cpuid15ImpliedCrystal), Some(2_208_000));
    // 0x16 EAX 0x898 = 2200 MHz: crystal 2200*1000*2/184 = 23913 kHz (truncated),
    // TSC 23913 * 184 / 2 = 2 199 996 kHz.
    assert_eq!(khz(&r, SourceId::Cpuid15CrystalFrom16), Some(2_199_996));
    assert_eq!(khz(&r, SourceId::Cpuid16), Some(2_200_000));
    assert_eq!(r.cpuid_tsc_khz, Some(2_199_996));
    // PostgreSQL: 0x15 has no crystal, so 0x16: 2200 * 1000.
    assert_eq!(r.postgresql_tsc_khz, Some(2_200_000));
    assert_eq!(r.postgresql_frequency.source, Some(PG_SOURCE_CPUID_16));
    assert_eq!(r.clockscope_frequency.source, Some(SourceId::Cpuid15CrystalFrom16));
    // The 24 MHz guess is (2208000 - 2199996) / 2199996 = +3638 ppm off: flagged.
    let implied = r.source(SourceId::Cpuid15ImpliedCrystal);
    assert!(implied.flagged);
    assert!((implied.ppm_vs_in_use.unwrap() - 3638.2).abs() < 0.1);
    // 0x16's 2 200 000 is +1.8 ppm: not flagged.
    assert!(!r.source(SourceId::Cpuid16).flagged);
    // PostgreSQL's auto policy: frequency known and TSC_ADJUST present.
    assert!(r.postgresql_auto.use_by_default);
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn kaby_lake_r_i5_8350u() {
    let d = load("kabylake_r_i5_8350u.cpuid-r.txt");
    assert_eq!(d.format, DumpFormat::CpuidRaw);
    let f = CpuidFacts::from_recorded(&d.leaves);
    // Signature 0x000806EA: family 6, model 0x8E, stepping 0xA.
    assert_eq!((f.family, f.model, f.stepping), (6, 0x8E, 10));
    assert_eq!(f.brand.as_deref(), Some("Intel(R) Core(TM) i5-8350U CPU @ 1.70GHz"));
    assert!(f.rdtscp && f.invariant_tsc && f.tsc_adjust && !f.hypervisor_bit);
    // Leaf 0x20000000 is above the maximum and is never decoded.
    assert_eq!(f.max_basic_leaf, 0x16);

    let r = TscReport::from_dump(&d);
    // 0x15: 2, 0x9E = 158, 0. Table: 24000 * 158 / 2 = 1 896 000.
    assert_eq!(khz(&r, SourceId::Cpuid15ImpliedCrystal), Some(1_896_000));
    // 0x16 base 0x76C = 1900 MHz: crystal 1900*1000*2/158 = 24050 kHz, * 158 / 2 = 1 899 950.
    assert_eq!(khz(&r, SourceId::Cpuid15CrystalFrom16), Some(1_899_950));
    assert_eq!(r.cpuid_tsc_khz, Some(1_899_950));
    assert_eq!(r.postgresql_tsc_khz, Some(1_900_000));
    // The table is (1896000 - 1899950) / 1899950 = -2079 ppm off.
    let implied = r.source(SourceId::Cpuid15ImpliedCrystal);
    assert!(implied.flagged && implied.ppm_vs_in_use.unwrap() < -2000.0);
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn skylake_x_i9_7900x() {
    let d = load("skylake_x_i9_7900x.aida64.txt");
    let f = CpuidFacts::from_recorded(&d.leaves);
    // Signature 0x00050654: family 6, model 0x55, stepping 4.
    assert_eq!((f.family, f.model, f.stepping), (6, 0x55, 4));
    assert_eq!(f.brand.as_deref(), Some("Intel(R) Core(TM) i9-7900X CPU @ 3.30GHz"));
    // First CPU only: leaf 1 EBX of CPU #0 (APIC id 0), not CPU #1's 0x01200800.
    assert_eq!(d.leaves.get(1, 0).unwrap()[1], 0x0020_0800);

    let r = TscReport::from_dump(&d);
    // 0x15: 2, 0x114 = 276, 0. Linux 4.14's 25 MHz: 25000 * 276 / 2 = 3 450 000 kHz.
    assert_eq!(khz(&r, SourceId::Cpuid15ImpliedCrystal), Some(3_450_000));
    // 0x16 base 0xCE4 = 3300 MHz: crystal 3300*1000*2/276 = 23913 kHz, * 276 / 2 = 3 299 994.
    assert_eq!(khz(&r, SourceId::Cpuid15CrystalFrom16), Some(3_299_994));
    assert_eq!(r.postgresql_tsc_khz, Some(3_300_000));
    assert_eq!(r.postgresql_frequency.source, Some(PG_SOURCE_CPUID_16));
    // The removed table entry: (3450000 - 3299994) / 3299994 = +45456 ppm.
    let implied = r.source(SourceId::Cpuid15ImpliedCrystal);
    assert!(implied.flagged);
    assert!((implied.ppm_vs_in_use.unwrap() - 45456.5).abs() < 1.0);
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn apollo_lake_goldmont_crystal_in_ecx() {
    let d = load("apollolake_pentium_n4200.aida64.txt");
    let f = CpuidFacts::from_recorded(&d.leaves);
    // Signature 0x000506C9: family 6, model 0x5C, stepping 9; max basic leaf 0x15.
    assert_eq!((f.family, f.model, f.stepping, f.max_basic_leaf), (6, 0x5C, 9, 0x15));
    assert!(f.leaf_16.is_none());

    let r = TscReport::from_dump(&d);
    // 0x15: 3, 0xAB = 171, ECX 0x0124F800 = 19 200 000 Hz:
    // (19200000 / 1000) * 171 / 3 = 1 094 400 kHz (AIDA measured the TSC at 1094.41 MHz).
    assert_eq!(khz(&r, SourceId::Cpuid15), Some(1_094_400));
    assert_eq!(r.cpuid_tsc_khz, Some(1_094_400));
    assert_eq!(r.postgresql_tsc_khz, Some(1_094_400));
    assert_eq!(r.postgresql_frequency.source, Some(PG_SOURCE_CPUID_15));
    assert_eq!(r.clockscope_frequency.source, Some(SourceId::Cpuid15));
    // The crystal is enumerated, so neither the table nor 0x16 is used.
    assert_eq!(khz(&r, SourceId::Cpuid15ImpliedCrystal), None);
    assert!(r.source(SourceId::Cpuid15ImpliedCrystal).note.contains("not needed"));
    assert!(r
        .source(SourceId::Cpuid16)
        .note
        .contains("not reported (highest basic leaf is 0x15)"));
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn denverton_goldmont_d_linux_hardcodes_25_mhz() {
    let d = load("denverton_atom_c3958.aida64.txt");
    let f = CpuidFacts::from_recorded(&d.leaves);
    // Signature 0x000506F1: family 6, model 0x5F, stepping 1.
    assert_eq!((f.family, f.model, f.stepping), (6, 0x5F, 1));
    // 7.0 EBX 0x2294E283 bit 1: TSC_ADJUST.
    assert!(f.rdtscp && f.invariant_tsc && f.tsc_adjust);

    let r = TscReport::from_dump(&d);
    // 0x15: 3, 0xF0 = 240, ECX 0; no 0x16. Linux: 25000 * 240 / 3 = 2 000 000 kHz.
    assert_eq!(r.cpuid_tsc_khz, Some(2_000_000));
    assert_eq!(khz(&r, SourceId::Cpuid15ImpliedCrystal), Some(2_000_000));
    assert_eq!(khz(&r, SourceId::Cpuid15CrystalFrom16), None);
    assert_eq!(r.clockscope_frequency.source, Some(SourceId::Cpuid15ImpliedCrystal));
    // PostgreSQL: no crystal and no 0x16, so it would calibrate (not run for a dump).
    assert_eq!(r.postgresql_tsc_khz, None);
    assert!(r.postgresql_frequency.tsc_usable);
    assert_eq!(r.postgresql_frequency.khz, None);
    assert!(
        r.postgresql_frequency.why.contains("calibration"),
        "{}",
        r.postgresql_frequency.why
    );
    assert!(!r.postgresql_auto.use_by_default);
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn amd_zen2_ryzen9_pro_3900() {
    let d = load("zen2_ryzen9_pro_3900.aida64.txt");
    let f = CpuidFacts::from_recorded(&d.leaves);
    assert_eq!(f.vendor, "AuthenticAMD");
    // Signature 0x00870F10: base family 0xF + extended 0x8 = 0x17; model 7<<4 | 1 = 0x71.
    assert_eq!((f.family, f.model, f.stepping), (0x17, 0x71, 0));
    assert_eq!(f.brand.as_deref(), Some("AMD Ryzen 9 PRO 3900 12-Core Processor"));
    // 0x80000001 EDX 0x2FD3FBFF bit 27; 0x80000007 EDX 0x6799 bit 8; 7.0 EBX 0x219C91A9 bit 1 clear.
    assert!(f.rdtscp && f.invariant_tsc && !f.tsc_adjust && !f.hypervisor_bit);
    // Highest basic leaf 0x10: no 0x15, no 0x16.
    assert_eq!(f.max_basic_leaf, 0x10);
    assert!(f.leaf_15.is_none() && f.leaf_16.is_none());

    let r = TscReport::from_dump(&d);
    for id in [
        SourceId::Cpuid15,
        SourceId::Cpuid15ImpliedCrystal,
        SourceId::Cpuid15CrystalFrom16,
        SourceId::Cpuid16,
        SourceId::Hypervisor40000010,
    ] {
        assert_eq!(khz(&r, id), None, "{id:?}");
    }
    assert_eq!(r.cpuid_tsc_khz, None);
    assert_eq!(r.postgresql_tsc_khz, None);
    assert_eq!(r.clockscope_frequency.khz, None);
    // Neither a frequency nor TSC_ADJUST: PostgreSQL's auto says no.
    assert!(!r.postgresql_auto.use_by_default);
    assert!(!r.postgresql_auto.reasons[1].ok);
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn sapphire_rapids_hyperv_tdx_guest() {
    let d = load("sapphirerapids_azure_tdx_hyperv.cpuid-r.txt");
    let f = CpuidFacts::from_recorded(&d.leaves);
    // Signature 0x000806F8: family 6, model 0x8F, stepping 8.
    assert_eq!((f.family, f.model, f.stepping), (6, 0x8F, 8));
    assert_eq!(f.brand, None, "the guest's brand leaves are zero");
    let h = f.hypervisor.as_ref().expect("hypervisor leaf");
    assert_eq!(h.signature, "Microsoft Hv");
    assert_eq!(h.max_leaf, 0x4000_000C);
    assert!(!h.is_vmware_or_kvm());
    // 0x80000007 EDX = 0: invariant TSC hidden; 7.0 EBX 0xF1BF2FF9 bit 1 clear.
    assert!(f.rdtscp && !f.invariant_tsc && !f.tsc_adjust);

    let r = TscReport::from_dump(&d);
    assert_eq!(r.hypervisor.as_deref(), Some("Microsoft Hv"));
    // 0x15: EAX 1, EBX 0x54 = 84, ECX 0x017D7840 = 25 000 000 Hz: 25000 * 84 / 1 = 2 100 000 kHz.
    assert_eq!(khz(&r, SourceId::Cpuid15), Some(2_100_000));
    assert_eq!(r.cpuid_tsc_khz, Some(2_100_000));
    // Hyper-V's highest leaf 0x4000000C < 0x40000010.
    assert_eq!(khz(&r, SourceId::Hypervisor40000010), None);
    // PostgreSQL: no invariant TSC, so no TSC at all.
    assert!(!r.postgresql_frequency.tsc_usable);
    assert!(
        r.postgresql_frequency.why.contains("no invariant TSC"),
        "{}",
        r.postgresql_frequency.why
    );
    assert_eq!(r.postgresql_tsc_khz, None);
    assert_eq!(r.clockscope_frequency.khz, Some(2_100_000));
    assert!(!r.clockscope_decision.reasons[1].ok, "invariant TSC check fails");
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn vmware_guest_with_timing_leaf() {
    let d = load("vmware_workstation7_core2_t6500.cpuid-r.txt");
    let f = CpuidFacts::from_recorded(&d.leaves);
    // Signature 0x0001067A: family 6, model 0x17, stepping 0xA (Penryn).
    assert_eq!((f.family, f.model, f.stepping), (6, 0x17, 10));
    assert_eq!(
        f.brand.as_deref(),
        Some("Intel(R) Core(TM)2 Duo CPU     T6500  @ 2.10GHz")
    );
    let h = f.hypervisor.as_ref().expect("hypervisor leaf");
    assert_eq!(h.signature, "VMwareVMware");
    assert!(h.is_vmware_or_kvm());
    // 0x40000010 EAX 0x00200B20 = 2 100 000 kHz.
    assert_eq!(h.timing_leaf_tsc_khz, Some(2_100_000));
    // 0x80000001 EDX 0x00100000: no RDTSCP; 0x80000007 EDX 0: no invariant TSC.
    assert!(f.tsc && !f.rdtscp && !f.invariant_tsc);

    let r = TscReport::from_dump(&d);
    assert_eq!(khz(&r, SourceId::Hypervisor40000010), Some(2_100_000));
    assert!(r
        .source(SourceId::Hypervisor40000010)
        .note
        .contains("PostgreSQL accepts"));
    assert_eq!(r.clockscope_frequency.source, Some(SourceId::Hypervisor40000010));
    // PostgreSQL would accept the VMware leaf, but has no TSC without RDTSCP and invariant TSC.
    assert!(!r.postgresql_frequency.tsc_usable);
    assert!(r.postgresql_frequency.why.contains("no RDTSCP and no invariant TSC"));
    assert_eq!(r.postgresql_tsc_khz, None);
    assert!(!r.clockscope_decision.reasons[0].ok, "RDTSCP check fails");
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn kvm_this_machine() {
    let d = load("kvm_this_machine.cpuid-r.txt");
    let f = CpuidFacts::from_recorded(&d.leaves);
    // Signature 0x000A0671: family 6, model 0xA7, stepping 1.
    assert_eq!((f.family, f.model, f.stepping), (6, 0xA7, 1));
    assert_eq!(f.brand.as_deref(), Some("Intel(R) Xeon(R) Processor"));
    let h = f.hypervisor.as_ref().expect("hypervisor leaf");
    assert_eq!((h.signature.as_str(), h.max_leaf), ("KVMKVMKVM", 0x4000_0001));
    assert!(h.is_vmware_or_kvm());
    assert_eq!(h.timing_leaf_tsc_khz, None);
    assert!(f.rdtscp && f.invariant_tsc && f.tsc_adjust);

    let r = TscReport::from_dump(&d);
    // 0x15 and 0x16 are zero, the KVM leaf stops at 0x40000001: no CPUID frequency.
    for id in [SourceId::Cpuid15, SourceId::Cpuid16, SourceId::Hypervisor40000010] {
        assert_eq!(khz(&r, id), None, "{id:?}");
    }
    assert_eq!(r.cpuid_tsc_khz, None);
    assert_eq!(r.postgresql_tsc_khz, None);
    assert!(
        r.postgresql_frequency.why.contains("0x40000001 < 0x40000010"),
        "{}",
        r.postgresql_frequency.why
    );
    assert_eq!(r.clockscope_frequency.khz, None);
    assert_dump_has_no_live_sources(&r);
}

#[test]
fn the_native_recording_decodes_like_this_cpu() {
    // On x86-64, a fresh recording of this CPU decodes exactly like the CPU.
    if let (Some(native), Some(rec)) = (CpuidFacts::native(), clockscope_system::tsc::cpuid::record_native()) {
        assert_eq!(CpuidFacts::from_recorded(&rec), native);
        let reparsed = parse_dump(&rec.to_string()).unwrap();
        assert_eq!(CpuidFacts::from_recorded(&reparsed.leaves), native);
    }
}

/// Issue 21: lines for leaves above the maxima the dump's leaf 0 (0xd) and
/// 0x80000000 (0x80000001) report are never read, and the report says the
/// leaf is not reported, never that its bit is clear.
#[test]
fn leaves_above_the_reported_maxima_are_not_reported_not_clear() {
    let d = load("truncated_leaves_hostile.cpuid-r.txt");
    // The lines are in the dump...
    assert_eq!(d.leaves.get(0x8000_0007, 0), Some([0, 0, 0, 0x100]));
    assert!(d.leaves.get(0x15, 0).is_some() && d.leaves.get(0x16, 0).is_some());
    let f = CpuidFacts::from_recorded(&d.leaves);
    assert_eq!((f.max_basic_leaf, f.max_extended_leaf), (0xd, 0x8000_0001));
    // ...but never read.
    assert!(!f.invariant_tsc && f.rdtscp && f.tsc_adjust);
    assert_eq!((f.leaf_15, f.leaf_16), (None, None));

    let r = TscReport::from_dump(&d);
    let reason = |name: &str| {
        r.clockscope_decision
            .reasons
            .iter()
            .find(|x| x.name == name)
            .unwrap()
            .evidence
            .clone()
    };
    let invariant = reason("invariant TSC");
    assert!(
        invariant.starts_with("CPUID 0x80000007 not reported (highest extended leaf is 0x80000001)"),
        "{invariant}"
    );
    assert!(!invariant.contains("clear"), "{invariant}");
    assert_eq!(reason("RDTSCP"), "CPUID 0x80000001 EDX bit 27 set");
    for id in [SourceId::Cpuid15, SourceId::Cpuid16] {
        assert!(
            r.source(id).note.contains("not reported (highest basic leaf is 0xd)"),
            "{id:?}: {}",
            r.source(id).note
        );
        assert_eq!(khz(&r, id), None);
    }
    assert_eq!(r.cpuid_tsc_khz, None);
    assert_dump_has_no_live_sources(&r);
}
