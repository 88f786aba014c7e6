//! The environment block of `clockscope check` and the CPU counter's setup
//! (frequency, trust, PostgreSQL 19's auto choice), from the library's
//! evidence readers.

use super::report::Environment;
use clockscope::linux::LinuxEvidence;
use clockscope::Scale;
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
    /// CPUID as read before measuring, reused by the full report (x86-64).
    pub cpuid: Option<clockscope::tsc::cpuid::CpuidFacts>,
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
pub const QUICK_CALIBRATION_NS: u64 = clockscope::counter::calibrate::DEFAULT_BUDGET_NS;
/// Budget of the cross-check calibration in the full report, run after the
/// measurements (the `clockscope tsc` default).
pub const REPORT_CALIBRATION_NS: u64 = 200_000_000;

/// The counter frequency to convert with, decided before measuring and
/// without a calibration when an authoritative source gives it.
#[cfg(target_arch = "x86_64")]
pub fn quick_counter(root: &Path, linux: &LinuxEvidence) -> CounterSetup {
    use clockscope::counter::calibrate::calibrate_counter;
    use clockscope::tsc::cpuid::CpuidFacts;
    use clockscope::tsc::policy::KernelEvidence;
    use clockscope::tsc::report::TscReport;
    let cpuid = CpuidFacts::native();
    let report = TscReport::without_calibration(root, cpuid.clone(), KernelEvidence::from_linux(linux));
    let mut setup = CounterSetup {
        hypervisor: report
            .hypervisor
            .as_deref()
            .filter(|h| !h.is_empty())
            .map(hypervisor_name),
        // PostgreSQL 19 has a TSC clock only with RDTSCP and an invariant TSC.
        postgresql_reads_counter: report.rdtscp == Some(true) && report.invariant_tsc == Some(true),
        cpuid,
        ..Default::default()
    };
    match (
        report.clockscope_frequency.khz,
        report.clockscope_frequency.source_label,
    ) {
        (Some(khz), label) => {
            setup.frequency_khz = Some(khz);
            setup.frequency_source = label.map(str::to_string);
        }
        (None, _) if report.rdtscp == Some(true) => {
            let cal = calibrate_counter(QUICK_CALIBRATION_NS);
            match cal.khz {
                Some(khz) => {
                    setup.frequency_khz = Some(khz);
                    setup.frequency_source = Some(format!("calibration against CLOCK_MONOTONIC_RAW ({})", cal.note));
                }
                None => setup.unusable_reason = Some(format!("no TSC frequency: {}", cal.note)),
            }
        }
        (None, _) => setup.unusable_reason = Some(report.clockscope_frequency.why.clone()),
    }
    setup.scale = setup.frequency_khz.and_then(Scale::from_khz);
    setup
}

/// The counter frequency to convert with: CNTFRQ_EL0, read at once.
#[cfg(target_arch = "aarch64")]
pub fn quick_counter(_root: &Path, linux: &LinuxEvidence) -> CounterSetup {
    let timer = clockscope::arm::gather_local(None);
    let mut setup = CounterSetup {
        hypervisor: linux.hypervisor_type.found().cloned(),
        ..Default::default()
    };
    setup.scale = Scale::from_hz(timer.frequency_hz);
    setup.frequency_khz = (timer.frequency_hz >= 1000).then_some(timer.frequency_hz / 1000);
    setup.frequency_source = Some(timer.frequency_source.to_string());
    if setup.scale.is_none() {
        setup.unusable_reason = Some("CNTFRQ_EL0 reads 0".into());
    }
    setup
}

/// Architectures without a CPU counter clockscope reads.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn quick_counter(_root: &Path, linux: &LinuxEvidence) -> CounterSetup {
    CounterSetup {
        hypervisor: linux.hypervisor_type.found().cloned(),
        unusable_reason: Some(format!("no CPU counter on {}", std::env::consts::ARCH)),
        ..Default::default()
    }
}

/// The full counter report (with its calibrations), gathered after the
/// measurements: it decides trust and is embedded in the JSON.
#[cfg(target_arch = "x86_64")]
pub fn full_counter(
    root: &Path,
    linux: &LinuxEvidence,
    mut setup: CounterSetup,
) -> (CounterSetup, Option<serde_json::Value>) {
    use clockscope::tsc::policy::KernelEvidence;
    let kernel = KernelEvidence::from_linux(linux);
    let report = clockscope::tsc::TscReport::detect_with(root, setup.cpuid.clone(), kernel, REPORT_CALIBRATION_NS);
    let d = &report.clockscope_decision;
    setup.trusted = Some(d.trusted);
    setup.evidence = d
        .reasons
        .iter()
        .map(|r| format!("{}: {}: {}", if r.ok { "ok" } else { "not ok" }, r.check, r.evidence))
        .collect();
    setup.reason = d
        .reasons
        .iter()
        .find(|r| !r.ok)
        .map(|r| format!("{}: {}", r.check, r.evidence))
        .or_else(|| Some("every check passed".into()));
    setup.postgresql_auto_uses_tsc = Some(report.postgresql_auto.use_by_default);
    (setup, serde_json::to_value(&report).ok())
}

/// The full generic-timer report (with its calibration cross-check).
#[cfg(target_arch = "aarch64")]
pub fn full_counter(
    _root: &Path,
    _linux: &LinuxEvidence,
    mut setup: CounterSetup,
) -> (CounterSetup, Option<serde_json::Value>) {
    let timer = clockscope::arm::gather_local_calibrated(REPORT_CALIBRATION_NS);
    setup.trusted = Some(timer.trusted);
    setup.evidence = timer
        .reasons
        .iter()
        .map(|r| format!("not ok: {r}"))
        .chain(timer.notes.iter().map(|n| format!("note: {n}")))
        .collect();
    setup.reason = Some(
        timer
            .reasons
            .first()
            .cloned()
            .unwrap_or_else(|| "every check passed".into()),
    );
    // PostgreSQL 19 has no ARM counter support: auto always picks the system clock.
    setup.postgresql_auto_uses_tsc = Some(false);
    (setup, serde_json::to_value(&timer).ok())
}

/// No counter: nothing more to gather.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn full_counter(
    _root: &Path,
    _linux: &LinuxEvidence,
    setup: CounterSetup,
) -> (CounterSetup, Option<serde_json::Value>) {
    (setup, None)
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

/// The environment block.
pub fn build(linux: &LinuxEvidence, counter: &CounterSetup) -> Environment {
    let cpuinfo = linux.cpuinfo.found();
    Environment {
        kernel_release: linux.kernel_release.found().cloned(),
        arch: std::env::consts::ARCH.to_string(),
        current_clocksource: linux.current_clocksource.found().cloned(),
        available_clocksources: linux.available_clocksources.found().cloned().unwrap_or_default(),
        cpu_model: cpuinfo.and_then(|c| c.model_name.clone()),
        cpus: linux
            .cpuset
            .found()
            .map(|c| c.cpus.len())
            .or_else(|| linux.cpus_online.found().map(|c| c.len()))
            .filter(|&n| n > 0),
        hypervisor: counter.hypervisor.clone(),
        counter_trusted: counter.trusted,
        counter_evidence: counter.evidence.clone(),
        counter_frequency_khz: counter.frequency_khz,
        counter_frequency_source: counter.frequency_source.clone(),
        postgresql_installed_majors: installed_postgresql_majors(Path::new(&linux.root)),
    }
}
