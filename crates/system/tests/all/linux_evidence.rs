//! `LinuxEvidence::read` over fake roots: a KVM guest (this machine's recorded
//! files), a host whose TSC was marked unstable, a Xen guest, an aarch64
//! machine, an empty root and garbage files.

use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::linux::{read_cpuset, read_kernel_log, CpuList, Evidence, KernelKhzSource, LinuxEvidence};

const CS: &str = "sys/devices/system/clocksource/clocksource0";

fn data(name: &str) -> String {
    let path = format!("{}/tests/data/linux/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn kvm_guest() -> FakeRoot {
    let root = FakeRoot::new();
    root.write(&format!("{CS}/current_clocksource"), "tsc\n")
        .write(&format!("{CS}/available_clocksource"), "tsc kvm-clock \n")
        .write("proc/cpuinfo", &data("kvm-guest.cpuinfo"))
        .write(
            "proc/cmdline",
            "console=ttyS0 quiet reboot=k panic=1 -- --init-arg tsc=unstable\n",
        )
        .write("proc/sys/kernel/osrelease", "6.18.44-fc-v769\n")
        .write("dev/kmsg", &data("kvm-guest.kmsg"))
        .write("sys/devices/system/cpu/online", "0-1\n")
        .write("proc/self/cgroup", "9:name=systemd:/\n3:cpuset:/\n0::/\n")
        .write("sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-1\n")
        .write("sys/fs/cgroup/cpuset/cpuset.cpus", "0-1\n");
    root
}

#[test]
fn kvm_guest_with_tsc_clocksource() {
    let root = kvm_guest();
    let ev = LinuxEvidence::read(root.path());
    assert_eq!(ev.kernel_release, Evidence::Found("6.18.44-fc-v769".to_string()));
    assert_eq!(ev.current_clocksource.found().map(String::as_str), Some("tsc"));
    assert_eq!(ev.available_clocksources.found().unwrap(), &["tsc", "kvm-clock"]);
    assert_eq!(ev.tsc_available(), Some(true));

    let cpu = ev.cpuinfo.found().expect("cpuinfo");
    assert_eq!(cpu.vendor_id.as_deref(), Some("GenuineIntel"));
    assert_eq!(cpu.model_name.as_deref(), Some("Intel(R) Xeon(R) Processor"));
    assert_eq!((cpu.cpu_family, cpu.model, cpu.stepping), (Some(6), Some(167), Some(1)));
    assert_eq!(cpu.processors, 2);
    let f = cpu.tsc_flags;
    assert!(f.tsc && f.constant_tsc && f.nonstop_tsc && f.tsc_known_freq && f.tsc_adjust && f.rdtscp);
    assert!(f.hypervisor && !f.tsc_reliable);
    assert!(cpu.arm_cpus.is_empty());
    assert!(cpu.flags.iter().any(|f| f == "avx512f") && !cpu.flags.iter().any(|f| f == "avx512"));

    // Words after "--" go to init, not the kernel.
    let cmd = ev.cmdline.found().unwrap();
    assert!(cmd.tsc.is_empty() && !cmd.tsc_unstable && cmd.clocksource.is_none());

    let log = ev.kernel_log.found().expect("kernel log");
    assert_eq!(log.first_sequence, Some(0));
    assert_eq!(log.detected_processor_khz, Some(2_599_998));
    assert_eq!((log.detected_tsc_khz, log.refined_khz), (None, None));
    assert_eq!(
        ev.kernel_tsc_khz(),
        Some((2_599_998, KernelKhzSource::DetectedProcessor))
    );
    assert_eq!(log.clocksource_switches, ["kvm-clock", "tsc"]);
    assert!(!log.tsc_marked_unstable());
    assert!(log.kvm_sched_clock);
    assert_eq!(
        log.performance_events.as_deref(),
        Some("unsupported CPU family 6 model 167 no PMU driver, software events only.")
    );
    assert!(log.lines.iter().any(|l| l == "tsc: Detected 2599.998 MHz processor"));
    assert!(log.source.ends_with("dev/kmsg"));

    assert_eq!(ev.cpus_online.found().map(|c| c.to_string()), Some("0-1".to_string()));
    let set = ev.cpuset.found().unwrap();
    assert_eq!(set.cpus.to_string(), "0-1");
    assert!(
        set.path.ends_with("sys/fs/cgroup/cpuset/cpuset.effective_cpus"),
        "{}",
        set.path
    );
    assert!(matches!(ev.hypervisor_type, Evidence::Missing(_)));

    let json = serde_json::to_value(&ev).unwrap();
    assert_eq!(json["current_clocksource"]["found"], "tsc");
    assert_eq!(json["cpus_online"]["found"], "0-1");
    assert_eq!(json["kernel_log"]["found"]["detected_processor_khz"], 2_599_998);
    assert!(json["hypervisor_type"]["missing"]
        .as_str()
        .unwrap()
        .contains("sys/hypervisor/type"));
}

#[test]
fn host_whose_tsc_was_marked_unstable() {
    let root = FakeRoot::new();
    root.write(&format!("{CS}/current_clocksource"), "hpet\n")
        .write(&format!("{CS}/available_clocksource"), "hpet acpi_pm \n")
        .write("proc/cpuinfo", &data("unstable-host.cpuinfo"))
        .write(
            "proc/cmdline",
            "BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic root=UUID=0a1b ro quiet splash\n",
        )
        .write("dev/kmsg", &data("unstable-host.dmesg"))
        .write("sys/devices/system/cpu/online", "0-3\n")
        .write("sys/fs/cgroup/cpuset.cpus.effective", "0-3\n");
    let ev = LinuxEvidence::read(root.path());
    assert_eq!(ev.current_clocksource.found().map(|c| c == "tsc"), Some(false));
    assert_eq!(ev.tsc_available(), Some(false));
    let cpu = ev.cpuinfo.found().unwrap();
    assert_eq!(cpu.processors, 2);
    assert!(!cpu.tsc_flags.hypervisor && !cpu.tsc_flags.tsc_known_freq && cpu.tsc_flags.constant_tsc);
    let log = ev.kernel_log.found().unwrap();
    assert_eq!(log.first_sequence, None, "dmesg text has no sequence numbers");
    assert_eq!(log.detected_processor_khz, Some(2_194_917));
    assert_eq!(log.refined_khz, Some(2_194_843));
    assert_eq!(ev.kernel_tsc_khz(), Some((2_194_843, KernelKhzSource::Refined)));
    assert_eq!(log.clocksources_marked_unstable, ["tsc"]);
    assert_eq!(log.tsc_unstable_reasons, ["clocksource watchdog"]);
    assert_eq!(log.clocksource_switches, ["tsc-early", "tsc", "hpet"]);
    assert!(log.tsc_marked_unstable());
    assert!(log.lines.iter().any(|l| l.starts_with("TSC found unstable after boot")));
    let set = ev.cpuset.found().unwrap();
    assert_eq!(set.cpus.len(), 4);
    assert!(set.path.ends_with("sys/fs/cgroup/cpuset.cpus.effective"));
}

#[test]
fn xen_guest() {
    let root = FakeRoot::new();
    root.write(&format!("{CS}/current_clocksource"), "xen\n")
        .write(&format!("{CS}/available_clocksource"), "xen tsc hpet acpi_pm \n")
        .write("proc/cpuinfo", &data("xen-guest.cpuinfo"))
        .write(
            "proc/cmdline",
            "root=LABEL=/ console=tty0 console=ttyS0,115200n8 clocksource=xen tsc=reliable\n",
        )
        .write("sys/hypervisor/type", "xen\n")
        .write("dev/kmsg", &data("xen-guest.dmesg"));
    let ev = LinuxEvidence::read(root.path());
    assert_eq!(ev.current_clocksource.found().map(String::as_str), Some("xen"));
    assert_eq!(ev.tsc_available(), Some(true));
    assert_eq!(ev.hypervisor_type.found().map(String::as_str), Some("xen"));
    let cmd = ev.cmdline.found().unwrap();
    assert_eq!(cmd.clocksource.as_deref(), Some("xen"));
    assert!(cmd.tsc_reliable && cmd.tsc == ["reliable"]);
    let cpu = ev.cpuinfo.found().unwrap();
    assert!(cpu.tsc_flags.hypervisor && cpu.tsc_flags.constant_tsc && !cpu.tsc_flags.nonstop_tsc);
    assert_eq!(cpu.processors, 1);
    assert_eq!(ev.kernel_tsc_khz(), Some((2_399_999, KernelKhzSource::Refined)));
    let log = ev.kernel_log.found().unwrap();
    assert_eq!(log.clocksource_switches, ["xen"]);
    assert!(!log.kvm_sched_clock);
    assert!(matches!(ev.cpuset, Evidence::Missing(_)));
    assert!(matches!(ev.cpus_online, Evidence::Missing(_)));
}

#[test]
fn aarch64_ids_per_processor() {
    let root = FakeRoot::new();
    root.write("proc/cpuinfo", &data("aarch64.cpuinfo"))
        .write(&format!("{CS}/current_clocksource"), "arch_sys_counter\n");
    let ev = LinuxEvidence::read(root.path());
    let cpu = ev.cpuinfo.found().unwrap();
    assert_eq!(cpu.processors, 2);
    assert_eq!(cpu.vendor_id, None);
    assert_eq!(cpu.arm_cpus.len(), 2);
    let parts: Vec<_> = cpu.arm_cpus.iter().map(|c| c.part.as_deref().unwrap()).collect();
    assert_eq!(parts, ["0xd0c", "0xd40"]);
    let c1 = &cpu.arm_cpus[1];
    assert_eq!(c1.processor, Some(1));
    assert_eq!(c1.implementer.as_deref(), Some("0x41"));
    assert_eq!(c1.architecture.as_deref(), Some("8"));
    assert_eq!(c1.variant.as_deref(), Some("0x1"));
    assert_eq!(c1.revision.as_deref(), Some("1"));
    assert!(cpu.flags.iter().any(|f| f == "asimd") && !cpu.tsc_flags.tsc);
    assert_eq!(ev.current_clocksource.found().map(|c| c == "tsc"), Some(false));
}

#[test]
fn empty_root_is_all_missing_and_never_panics() {
    let root = FakeRoot::new();
    let ev = LinuxEvidence::read(root.path());
    for (name, reason) in [
        ("kernel_release", ev.kernel_release.reason()),
        ("current_clocksource", ev.current_clocksource.reason()),
        ("available_clocksources", ev.available_clocksources.reason()),
        ("cpuinfo", ev.cpuinfo.reason()),
        ("cmdline", ev.cmdline.reason()),
        ("kernel_log", ev.kernel_log.reason()),
        ("cpus_online", ev.cpus_online.reason()),
        ("cpuset", ev.cpuset.reason()),
        ("hypervisor_type", ev.hypervisor_type.reason()),
    ] {
        let reason = reason.unwrap_or_else(|| panic!("{name} found in an empty root"));
        assert!(
            reason.contains("not present") || reason.contains("no cgroup cpuset"),
            "{name}: {reason}"
        );
    }
    assert!(matches!(ev.cpuinfo, Evidence::Missing(_)));
    assert_eq!(ev.current_clocksource.found(), None);
    assert_eq!(ev.kernel_tsc_khz(), None);
    let json = serde_json::to_value(&ev).unwrap();
    assert!(json["cpuinfo"]["missing"]
        .as_str()
        .unwrap()
        .ends_with("proc/cpuinfo: not present"));
}

#[test]
fn garbage_files_are_unreadable_with_a_reason() {
    let root = FakeRoot::new();
    root.write(&format!("{CS}/current_clocksource"), "")
        .write(&format!("{CS}/available_clocksource"), "tsc\0\u{1}garbage \u{7f}\n")
        .write("proc/cpuinfo", "this is not cpuinfo\n\n")
        .write("proc/sys/kernel/osrelease", "line one\nline two\n")
        .write("sys/devices/system/cpu/online", "0-3,x\n")
        .write("sys/fs/cgroup/cpuset.cpus.effective", "7-2\n")
        .write("dev/kmsg", "random bytes without any kernel messages\n\u{1}\u{2}\n");
    // Not UTF-8 at all.
    std::fs::write(root.path().join("proc/cmdline"), [0xff, 0xfe, 0x00, 0x80]).unwrap();
    let ev = LinuxEvidence::read(root.path());
    let unreadable = |name: &str, e: Option<&str>, needle: &str| {
        let r = e.unwrap_or_else(|| panic!("{name} parsed from garbage"));
        assert!(r.contains(needle), "{name}: {r:?} lacks {needle:?}");
    };
    assert!(matches!(ev.current_clocksource, Evidence::Unreadable(_)));
    unreadable("current_clocksource", ev.current_clocksource.reason(), "empty");
    unreadable("cpuinfo", ev.cpuinfo.reason(), "no processor entries");
    unreadable("kernel_release", ev.kernel_release.reason(), "one short line");
    unreadable(
        "cpus_online",
        ev.cpus_online.reason(),
        "'x' in CPU list '0-3,x' is not a CPU number",
    );
    unreadable(
        "cpuset",
        ev.cpuset.reason(),
        "range '7-2' in CPU list '7-2' ends before it starts",
    );
    unreadable("cmdline", ev.cmdline.reason(), "not UTF-8");
    // Control characters are still names here; the list is only checked for shape.
    assert!(ev.available_clocksources.is_found());
    // A log with no kernel lines parses to an empty summary, not an error.
    let log = ev.kernel_log.found().unwrap();
    assert_eq!(log.records, 2);
    assert_eq!(log.kernel_tsc_khz(), None);
    assert!(log.lines.is_empty());
}

#[test]
fn cpuset_prefers_own_cgroup_and_skips_empty_lists() {
    let root = FakeRoot::new();
    root.write("proc/self/cgroup", "0::/system.slice/postgresql.service\n")
        .write(
            "sys/fs/cgroup/system.slice/postgresql.service/cpuset.cpus.effective",
            "2-3\n",
        )
        .write("sys/fs/cgroup/cpuset.cpus.effective", "0-7\n");
    let set = read_cpuset(root.path()).into_found().unwrap();
    assert_eq!(set.cpus, CpuList::parse("2-3").unwrap());
    assert!(set.path.ends_with("postgresql.service/cpuset.cpus.effective"));

    // An empty effective list falls through to the next candidate.
    root.write(
        "sys/fs/cgroup/system.slice/postgresql.service/cpuset.cpus.effective",
        "\n",
    );
    assert_eq!(read_cpuset(root.path()).into_found().unwrap().cpus.to_string(), "0-7");

    // "..": never leaves the root.
    let evil = FakeRoot::new();
    evil.write("proc/self/cgroup", "0::/../../etc\n3:cpuset:/../x\n")
        .write("sys/fs/cgroup/cpuset/cpuset.cpus", "0,2\n");
    let set = read_cpuset(evil.path()).into_found().unwrap();
    assert_eq!(set.cpus.to_string(), "0,2");
    assert!(set.path.ends_with("sys/fs/cgroup/cpuset/cpuset.cpus"));
}

#[test]
fn kmsg_text_under_a_test_root() {
    let root = FakeRoot::new();
    root.write(
        "dev/kmsg",
        "6,16,58,-;tsc: Detected 2599.998 MHz processor\n SUBSYSTEM=cpu\n DEVICE=+cpu:cpu0\n\
         6,17,60,-;tsc: Detected 2600.000 MHz TSC\n",
    );
    let log = read_kernel_log(root.path()).into_found().unwrap();
    assert_eq!(log.records, 2, "dictionary lines are not records");
    assert_eq!(log.first_sequence, Some(16));
    assert_eq!(log.detected_tsc_khz, Some(2_600_000));
    assert_eq!(log.kernel_tsc_khz(), Some((2_600_000, KernelKhzSource::DetectedTsc)));
}
