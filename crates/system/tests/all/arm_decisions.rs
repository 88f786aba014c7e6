//! Generic-timer trust decisions from recorded and constructed machines: MIDR
//! and /proc/cpuinfo text, device-tree and ACPI trees in a fake root, with
//! CNTFRQ_EL0 injected. Runs on every architecture.

use clockscope_system::arm::{gather, CalibrationEvidence, GenericTimerReport, IdSource};
use clockscope_system::linux::testing::FakeRoot;
use std::path::Path;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/arm").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Writes `midr_el1` for CPUs 0.. with the given raw values, as Linux prints them.
fn write_midrs(root: &FakeRoot, midrs: &[u32]) {
    for (cpu, midr) in midrs.iter().enumerate() {
        root.write(
            &format!("sys/devices/system/cpu/cpu{cpu}/regs/identification/midr_el1"),
            &format!("0x{:016x}\n", midr),
        );
    }
}

/// A device tree whose `timer` node is the arch timer, with extra properties
/// (name, raw bytes).
fn write_dt_timer(root: &FakeRoot, props: &[(&str, &[u8])]) {
    let node = root.path().join("sys/firmware/devicetree/base/timer");
    std::fs::create_dir_all(&node).unwrap();
    std::fs::write(node.join("compatible"), b"arm,armv8-timer\0arm,armv7-timer\0").unwrap();
    std::fs::write(node.join("interrupts"), [0u8; 48]).unwrap();
    for (name, value) in props {
        std::fs::write(node.join(name), value).unwrap();
    }
    // Another node that is not the timer, to be skipped.
    let other = root.path().join("sys/firmware/devicetree/base/psci");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("compatible"), b"arm,psci-1.0\0").unwrap();
}

fn reasons_text(r: &GenericTimerReport) -> String {
    r.reasons.join("\n")
}

#[test]
fn graviton2_neoverse_n1_server_is_trusted() {
    let root = FakeRoot::new();
    write_midrs(&root, &[0x413f_d0c1; 4]);
    root.write("proc/cpuinfo", &fixture("graviton2-neoverse-n1.cpuinfo"));
    std::fs::create_dir_all(root.path().join("sys/firmware/acpi/tables")).unwrap();
    let r = gather(root.path(), 121_875_000, None);

    assert!(r.trusted, "{}", reasons_text(&r));
    assert!(r.reasons.is_empty());
    assert!(r.homogeneous);
    assert_eq!(r.cores.len(), 4);
    assert!(r
        .cores
        .iter()
        .all(|c| c.source == IdSource::SysfsMidr && c.name == "Arm Neoverse N1"));
    assert_eq!(r.cores[0].rnpn, "r3p1");
    assert_eq!(r.core_types.len(), 1);
    assert_eq!(r.core_types[0].cpus, vec![0, 1, 2, 3]);
    // N1 r3p1 is in Linux's 1418040 range, which only affects 32-bit tasks.
    assert_eq!(r.errata.len(), 1);
    assert_eq!(r.errata[0].id, "ARM erratum 1418040");
    assert!(!r.errata[0].affects_aarch64);
    assert!(
        r.notes.iter().any(|n| n.starts_with("ARM erratum 1418040 on CPUs 0-3")),
        "{:?}",
        r.notes
    );
    // BogoMIPS 243.75 x 500,000 is exactly the counter rate.
    assert_eq!(r.bogomips.as_deref(), Some("243.75"));
    assert_eq!(r.bogomips_hz, Some(121_875_000));
    assert!(r.coarse_warning.is_none());
    assert!(r.firmware.acpi && r.firmware.device_tree.is_none());

    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["trusted"], true);
    assert_eq!(json["frequency_hz"], 121_875_000u64);
    assert_eq!(json["frequency_source"], "arm64, CNTFRQ_EL0");
    assert_eq!(json["cores"][0]["midr"], "0x413fd0c1");
    assert_eq!(json["cores"][0]["source"], "sysfs_midr");
    assert_eq!(json["errata"][0]["affects_aarch64"], false);
    assert_eq!(r.frequency_khz_text(), "121875");
}

#[test]
fn cpuinfo_alone_identifies_the_cores() {
    let root = FakeRoot::new();
    root.write("proc/cpuinfo", &fixture("graviton2-neoverse-n1.cpuinfo"));
    let r = gather(root.path(), 121_875_000, None);
    assert!(r.trusted, "{}", reasons_text(&r));
    assert!(r.cores.iter().all(|c| c.source == IdSource::ProcCpuinfo));
    assert_eq!(r.cores[3].midr.raw(), 0x413f_d0c1, "rebuilt with architecture 0xf");
}

#[test]
fn big_little_phone_is_not_homogeneous() {
    let root = FakeRoot::new();
    root.write("proc/cpuinfo", &fixture("phone-a55-a78-x1.cpuinfo"));
    let r = gather(root.path(), 19_200_000, None);

    assert!(!r.homogeneous);
    assert!(!r.trusted);
    assert_eq!(r.reasons.len(), 1, "{}", reasons_text(&r));
    assert!(
        r.reasons[0].contains("4 x Arm Cortex-A55, 3 x Arm Cortex-A78, 1 x Arm Cortex-X1"),
        "{}",
        r.reasons[0]
    );
    assert_eq!(r.cores[0].midr.raw(), 0x412f_d050);
    assert_eq!(
        r.core_types.iter().map(|t| t.cpus.len()).collect::<Vec<_>>(),
        vec![4, 3, 1]
    );
    assert!(r.errata.is_empty());
    // 19.2 MHz: 52.08 ns per tick, not coarse; BogoMIPS 38.40 agrees.
    assert!((r.resolution_ns.unwrap() - 52.083).abs() < 1e-3);
    assert!(r.coarse_warning.is_none());
    assert_eq!(r.bogomips_hz, Some(19_200_000));
}

#[test]
fn apple_m1_on_asahi_mixes_icestorm_and_firestorm() {
    // Constructed: 4 efficiency (0x022) then 4 performance (0x023) cores.
    let root = FakeRoot::new();
    write_midrs(
        &root,
        &[
            0x610f_0220,
            0x610f_0220,
            0x610f_0220,
            0x610f_0220,
            0x611f_0231,
            0x611f_0231,
            0x611f_0231,
            0x611f_0231,
        ],
    );
    let r = gather(root.path(), 24_000_000, None);
    assert!(!r.trusted);
    assert!(
        reasons_text(&r).contains("4 x Apple M1 Icestorm, 4 x Apple M1 Firestorm"),
        "{}",
        reasons_text(&r)
    );
    assert!(r.errata.is_empty());
}

#[test]
fn apple_silicon_linux_guest_is_trusted_with_a_note() {
    let root = FakeRoot::new();
    root.write("proc/cpuinfo", &fixture("apple-vm-m3.cpuinfo"));
    let r = gather(root.path(), 24_000_000, None);
    assert!(r.trusted, "{}", reasons_text(&r));
    assert!(r.homogeneous);
    assert_eq!(r.cores.len(), 4);
    assert_eq!(r.cores[0].implementer, 0x61);
    assert_eq!(r.cores[0].part, 0);
    assert!(
        r.notes.iter().any(|n| n.contains("hypervisor hides the real core")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.bogomips_hz, Some(24_000_000));
    assert!((r.resolution_ns.unwrap() - 41.667).abs() < 1e-3);
}

#[test]
fn cortex_a73_board_names_erratum_858921() {
    let root = FakeRoot::new();
    root.write("proc/cpuinfo", &fixture("amlogic-s922x-a53-a73.cpuinfo"));
    write_dt_timer(&root, &[]);
    let r = gather(root.path(), 24_000_000, None);

    assert!(!r.trusted);
    assert_eq!(r.errata.len(), 1);
    let e = &r.errata[0];
    assert_eq!(e.id, "ARM erratum 858921");
    assert_eq!(e.cpus, vec![2, 3, 4, 5]);
    assert!(e.affects_aarch64);
    assert_eq!(e.detected_by, "MIDR 0x410fd092 (Arm Cortex-A73 r0p2)");
    let text = reasons_text(&r);
    assert!(text.contains("ARM erratum 858921 on CPUs 2-5"), "{text}");
    assert!(text.contains("crosses a 32-bit boundary"), "{text}");
    assert!(text.contains("2 x Arm Cortex-A53, 4 x Arm Cortex-A73"), "{text}");
    assert_eq!(r.firmware.dt_timer.as_ref().unwrap().node, "timer");
    assert!(r.firmware.dt_timer.as_ref().unwrap().erratum_properties.is_empty());
}

#[test]
fn homogeneous_cortex_a73_is_untrusted_only_for_the_erratum() {
    let root = FakeRoot::new();
    write_midrs(&root, &[0x410f_d092; 4]);
    let r = gather(root.path(), 24_000_000, None);
    assert!(r.homogeneous);
    assert!(!r.trusted);
    assert_eq!(r.reasons.len(), 1, "{}", reasons_text(&r));
    assert!(
        r.reasons[0].starts_with("ARM erratum 858921 on CPUs 0-3"),
        "{}",
        r.reasons[0]
    );
    assert!(
        r.reasons[0].contains("traps user-space CNTVCT_EL0 reads"),
        "{}",
        r.reasons[0]
    );
}

#[test]
fn device_tree_errata_make_the_whole_soc_untrusted() {
    for (prop, id) in [
        ("allwinner,erratum-unknown1", "Allwinner erratum UNKNOWN1"),
        ("fsl,erratum-a008585", "Freescale/NXP erratum A-008585"),
        ("hisilicon,erratum-161010101", "HiSilicon erratum 161010101"),
    ] {
        let root = FakeRoot::new();
        write_midrs(&root, &[0x410f_d034; 4]);
        write_dt_timer(&root, &[(prop, b"")]);
        let r = gather(root.path(), 24_000_000, None);
        assert!(!r.trusted, "{prop}");
        assert_eq!(r.errata.len(), 1, "{prop}");
        assert_eq!(r.errata[0].id, id);
        assert!(r.errata[0].cpus.is_empty());
        assert!(r.errata[0].detected_by.contains(prop));
        assert!(
            r.reasons[0].starts_with(&format!("{id} on the whole SoC")),
            "{}",
            r.reasons[0]
        );
    }
}

#[test]
fn plain_device_tree_board_is_trusted() {
    // Raspberry Pi 4 shape: 4 x Cortex-A72 r0p3, 54 MHz, device tree, no errata.
    let root = FakeRoot::new();
    write_midrs(&root, &[0x410f_d083; 4]);
    write_dt_timer(&root, &[]);
    let r = gather(root.path(), 54_000_000, None);
    assert!(r.trusted, "{}", reasons_text(&r));
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(r.firmware.device_tree.as_deref(), Some("sys/firmware/devicetree/base"));
}

#[test]
fn device_tree_clock_frequency_overrides_cntfrq() {
    let root = FakeRoot::new();
    write_midrs(&root, &[0x410f_d034; 4]);
    write_dt_timer(&root, &[("clock-frequency", &24_000_000u32.to_be_bytes())]);
    let r = gather(root.path(), 19_200_000, None);
    assert_eq!(r.dt_clock_frequency_hz, Some(24_000_000));
    assert!(!r.trusted);
    assert!(
        reasons_text(&r).contains("clock-frequency is 24000000 Hz but CNTFRQ_EL0 says 19200000 Hz"),
        "{}",
        reasons_text(&r)
    );
    // The same property agreeing with CNTFRQ is only a note.
    let r = gather(root.path(), 24_000_000, None);
    assert!(r.trusted, "{}", reasons_text(&r));
}

#[test]
fn cntfrq_zero_is_unusable() {
    let root = FakeRoot::new();
    write_midrs(&root, &[0x410f_d083; 4]);
    let r = gather(root.path(), 0, None);
    assert!(!r.trusted);
    assert_eq!(r.resolution_ns, None);
    assert!(r.reasons[0].starts_with("CNTFRQ_EL0 reads 0"), "{}", r.reasons[0]);
}

#[test]
fn bogomips_disagreeing_with_cntfrq_is_a_reason() {
    let root = FakeRoot::new();
    root.write("proc/cpuinfo", &fixture("graviton2-neoverse-n1.cpuinfo"));
    let r = gather(root.path(), 24_000_000, None);
    assert!(!r.trusted);
    assert!(
        reasons_text(&r).contains("BogoMIPS 243.75 (121875000 Hz)"),
        "{}",
        reasons_text(&r)
    );
}

#[test]
fn calibration_cross_check_in_ppm() {
    let root = FakeRoot::new();
    write_midrs(&root, &[0x413f_d0c1; 2]);
    let agree = CalibrationEvidence {
        reference: "clock_gettime (CLOCK_MONOTONIC_RAW)".into(),
        calibrated_hz: 25_000_050.0,
        uncertainty_ppm: 3.0,
    };
    let r = gather(root.path(), 25_000_000, Some(&agree));
    assert!(r.trusted, "{}", reasons_text(&r));
    assert!((r.disagreement_ppm.unwrap() - 2.0).abs() < 1e-6);
    assert_eq!(r.calibrated_hz, Some(25_000_050.0));
    assert_eq!(r.calibration_uncertainty_ppm, Some(3.0));

    // Firmware programmed 25 MHz but the counter really runs at 24 MHz.
    let off = CalibrationEvidence {
        calibrated_hz: 24_000_000.0,
        ..agree.clone()
    };
    let r = gather(root.path(), 25_000_000, Some(&off));
    assert!(!r.trusted);
    assert!((r.disagreement_ppm.unwrap() + 40_000.0).abs() < 1e-6);
    assert!(
        reasons_text(&r).contains("-40000.0 ppm from CNTFRQ_EL0"),
        "{}",
        reasons_text(&r)
    );
    // Independent evidence (no clocksource file here): CNTFRQ_EL0 may be wrong, or time is changed.
    assert!(
        reasons_text(&r).contains("either that frequency is wrong or something between clockscope and the kernel"),
        "{}",
        reasons_text(&r)
    );
    assert!(r.time_interposition().is_some());
    // Issue 21: with clocksource arch_sys_counter the calibration checks only the kernel's arithmetic, yet
    // a reference running 10 times fast (faketime x10) is -900000 ppm off: time is changed on its way.
    root.write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "arch_sys_counter\n",
    );
    let fast = CalibrationEvidence {
        calibrated_hz: 2_500_000.0,
        ..agree.clone()
    };
    let r = gather(root.path(), 25_000_000, Some(&fast));
    assert!(!r.trusted);
    let why = r.time_interposition().expect("gross disagreement");
    assert!(why.contains("-900000.0 ppm from CNTFRQ_EL0"), "{why}");
    assert!(
        why.contains("the kernel's clock is this counter scaled, so something between clockscope and the kernel"),
        "{why}"
    );
    // 200 ppm off is a disagreement, not interposition.
    let near = CalibrationEvidence {
        calibrated_hz: 25_005_000.0,
        ..agree
    };
    let r = gather(root.path(), 25_000_000, Some(&near));
    assert!(!r.trusted);
    assert_eq!(r.time_interposition(), None);
}

#[test]
fn hisilicon_acpi_gtdt_is_matched_and_unreadable_gtdt_noted() {
    let root = FakeRoot::new();
    write_midrs(&root, &[0x410f_d082; 4]);
    let tables = root.path().join("sys/firmware/acpi/tables");
    std::fs::create_dir_all(&tables).unwrap();
    let mut gtdt = b"GTDT".to_vec();
    gtdt.extend_from_slice(&96u32.to_le_bytes());
    gtdt.extend_from_slice(&[2, 0]);
    gtdt.extend_from_slice(b"HISI  HIP06   ");
    gtdt.extend_from_slice(&0u32.to_le_bytes());
    gtdt.resize(96, 0);
    std::fs::write(tables.join("GTDT"), &gtdt).unwrap();
    let r = gather(root.path(), 50_000_000, None);
    assert!(!r.trusted);
    assert_eq!(r.errata[0].id, "HiSilicon erratum 161010101");
    assert!(r.errata[0].detected_by.contains("HIP06"), "{}", r.errata[0].detected_by);

    // A GTDT that cannot be read (a directory here; mode 0400 on a live
    // system) leaves the ACPI check undone and says so.
    std::fs::remove_file(tables.join("GTDT")).unwrap();
    std::fs::create_dir(tables.join("GTDT")).unwrap();
    let r = gather(root.path(), 50_000_000, None);
    assert!(r.trusted, "{}", reasons_text(&r));
    assert!(
        r.notes.iter().any(|n| n.contains("HiSilicon 161010101) not checked")),
        "{:?}",
        r.notes
    );
}
