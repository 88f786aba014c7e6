//! The environment block of `clockscope check` and the CPU counter's setup
//! (frequency, trust, PostgreSQL 19's auto choice), from the library's
//! evidence readers.

use crate::commands::check::model::Environment;
use crate::report::text::{check_line, CheckStyle};
use clockscope::Scale;
use clockscope_system::counter::{self, CounterDetails, Discovery};
use clockscope_system::linux::ntp::NtpState;
use clockscope_system::linux::tsc_messages::{self, Machine};
use clockscope_system::linux::LinuxEvidence;
use std::path::Path;

/// How the CPU counter (TSC / generic timer) will be converted and whether it is trusted.
#[derive(Clone, Debug, Default)]
pub struct CounterSetup {
    pub scale: Option<Scale>,
    pub frequency_khz: Option<u64>,
    pub frequency_source: Option<String>,
    pub trusted: Option<bool>,
    /// One line: the first reason the counter is not trusted, or why it is.
    pub reason: Option<String>,
    pub evidence: Vec<String>,
    pub postgresql_auto_uses_tsc: Option<bool>,
    /// Whether PostgreSQL 19 can read this counter (the x86-64 TSC; not the ARM generic timer).
    pub postgresql_reads_counter: bool,
    /// Why counters cannot be measured at all (no frequency).
    pub unusable_reason: Option<String>,
    pub hypervisor: Option<String>,
    /// CPUID as read before measuring (x86-64).
    pub cpuid: Option<clockscope_system::tsc::cpuid::CpuidFacts>,
    /// Set when the counter's calibration is grossly off its frequency:
    /// time is changed on its way to clockscope (the full report only).
    pub time_interposition: Option<String>,
}

impl CounterSetup {
    /// Why clock `e` could not be read, with the counter's missing frequency
    /// explained when that is the cause.
    pub fn skip_reason(&self, e: &clockscope::ClockError) -> String {
        match (e, &self.unusable_reason) {
            (clockscope::ClockError::NoFrequency(_), Some(why)) => format!("{e}: {why}"),
            _ => e.to_string(),
        }
    }
}

/// Budget of the calibration run before measuring when no authoritative
/// frequency exists (CPUID, hypervisor leaf, perf page, kernel log): the
/// library's default, PostgreSQL's own 50 ms bound.
pub const QUICK_CALIBRATION_NS: u64 = clockscope::Calibration::DEFAULT_BUDGET_NS;
/// Budget of the cross-check calibration in the full report, run after the
/// measurements (the `clockscope tsc` default).
pub const REPORT_CALIBRATION_NS: u64 = 200_000_000;

/// The counter frequency to convert with, decided before measuring and
/// without a calibration when an authoritative source gives it.
pub fn quick_counter(root: &Path, linux: &LinuxEvidence) -> CounterSetup {
    let report = counter::discover(root, linux, &Discovery::quick(QUICK_CALIBRATION_NS));
    let tsc = report.tsc();
    CounterSetup {
        scale: report.scale(),
        frequency_khz: report.frequency.khz,
        frequency_source: report.frequency.source.clone(),
        unusable_reason: report.frequency.unknown.clone(),
        hypervisor: match tsc {
            Some(t) => t.hypervisor.as_deref().filter(|h| !h.is_empty()).map(hypervisor_name),
            None => linux.hypervisor_type.found().cloned(),
        },
        postgresql_reads_counter: report.postgres.reads_counter,
        cpuid: tsc.and_then(|t| t.cpuid.clone()),
        ..Default::default()
    }
}

/// The full counter report (with its calibrations), gathered after the
/// measurements: it decides trust and is embedded in the JSON.
pub fn full_counter(
    root: &Path,
    linux: &LinuxEvidence,
    mut setup: CounterSetup,
) -> (CounterSetup, Option<CounterDetails>) {
    if counter::native_kind().is_none() {
        return (setup, None);
    }
    let report = counter::discover(root, linux, &Discovery::full(REPORT_CALIBRATION_NS));
    if let Some(d) = &report.decision {
        setup.evidence = d
            .checks
            .iter()
            .map(|c| check_line(c, CheckStyle::Colon))
            .chain(d.notes.iter().map(|n| format!("note: {n}")))
            .collect();
    }
    setup.trusted = report.trusted();
    setup.reason = report.reason();
    setup.time_interposition = report.time_interposition();
    setup.postgresql_auto_uses_tsc = report.postgres.auto_uses_counter;
    (setup, report.details)
}

/// A readable name for a CPUID hypervisor signature.
pub fn hypervisor_name(signature: &str) -> String {
    match signature.trim_end_matches('\0') {
        "KVMKVMKVM" => "KVM".into(),
        "VMwareVMware" => "VMware".into(),
        "Microsoft Hv" => "Hyper-V".into(),
        "XenVMMXenVMM" => "Xen".into(),
        "TCGTCGTCGTCG" => "QEMU (TCG)".into(),
        "bhyve bhyve " => "bhyve".into(),
        " lrpepyh  vr" => "Parallels".into(),
        "ACRNACRNACRN" => "ACRN".into(),
        "VBoxVBoxVBox" => "VirtualBox".into(),
        other => other.to_string(),
    }
}

/// Major versions of PostgreSQL installed the Debian/Ubuntu way
/// (`usr/lib/postgresql/<major>/bin/postgres` under `root`), ascending.
pub fn installed_postgresql_majors(root: &Path) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir(root.join("usr/lib/postgresql")) else {
        return Vec::new();
    };
    let mut majors: Vec<u32> = dir
        .filter_map(Result::ok)
        .filter(|e| e.path().join("bin/postgres").is_file())
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    majors.sort_unstable();
    majors
}

/// The environment block. `allowed_cpus` is the affinity mask
/// (`sched_getaffinity`, which taskset and the cgroup cpuset narrow); without
/// it the cgroup cpuset, then the online CPUs, stand in.
pub fn build(linux: &LinuxEvidence, counter: &CounterSetup, allowed_cpus: Option<&[usize]>) -> Environment {
    let cpuinfo = linux.cpuinfo.found();
    let cpuset = linux.cpuset.found().map(|c| c.cpus.len()).filter(|&n| n > 0);
    let ntp = read_ntp_under(Path::new(&linux.root));
    let machine = Machine::of(linux);
    Environment {
        kernel_release: linux.kernel_release.found().cloned(),
        arch: std::env::consts::ARCH.to_string(),
        current_clocksource: linux.current_clocksource.found().cloned(),
        available_clocksources: linux.available_clocksources.found().cloned().unwrap_or_default(),
        cpu_model: cpuinfo.and_then(|c| c.model_name.clone()),
        cpus: allowed_cpus
            .map(<[usize]>::len)
            .filter(|&n| n > 0)
            .or(cpuset)
            .or_else(|| linux.cpus_online.found().map(|c| c.len()).filter(|&n| n > 0)),
        cgroup_cpuset_cpus: cpuset,
        hypervisor: counter.hypervisor.clone(),
        counter_trusted: counter.trusted,
        counter_evidence: counter.evidence.clone(),
        counter_frequency_khz: counter.frequency_khz,
        counter_frequency_source: counter.frequency_source.clone(),
        postgresql_installed_majors: installed_postgresql_majors(Path::new(&linux.root)),
        ntp_unavailable: ntp.as_ref().err().cloned(),
        ntp: ntp.ok(),
        machine: Some(machine),
        kernel_messages: linux
            .kernel_log
            .found()
            .map(|log| tsc_messages::interpret(&log.lines, machine))
            .unwrap_or_default(),
    }
}

/// The NTP state for a report under `root`: read from this kernel only when
/// the kernel files are this machine's (`/` under any name: known by its
/// device and inode, not its spelling).
pub fn read_ntp_under(root: &Path) -> Result<NtpState, String> {
    if clockscope_system::linux::identity::is_this_root(root) {
        clockscope_system::linux::ntp::read_ntp(&clockscope_system::linux::ntp::SystemNtp)
    } else {
        Err("not read: kernel files under another root".to_string())
    }
}
