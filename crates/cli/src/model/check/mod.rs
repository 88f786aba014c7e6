//! The `clockscope check` report: a serialisable value that every output
//! format renders (text, JSON, Prometheus, SVG). Its JSON form is documented
//! field by field in `docs/schema/check.schema.json`.

pub mod stats;
pub mod verdict;

use clockscope::counter::CounterDetails;
use serde::Serialize;
use stats::ClockStats;
use verdict::Verdict;

/// Version of the JSON layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// Where the program runs, and what the TSC evidence says.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Environment {
    /// `uname -r` (from /proc/sys/kernel/osrelease).
    pub kernel_release: Option<String>,
    /// CPU architecture of this build.
    pub arch: String,
    pub current_clocksource: Option<String>,
    pub available_clocksources: Vec<String>,
    /// `/proc/cpuinfo` model name.
    pub cpu_model: Option<String>,
    /// CPUs this process may run on: its affinity mask (`sched_getaffinity`,
    /// narrowed by taskset and cgroup cpusets).
    pub cpus: Option<usize>,
    /// CPUs in this process's cgroup cpuset, when the kernel says (null otherwise).
    pub cgroup_cpuset_cpus: Option<usize>,
    /// Hypervisor named by CPUID (e.g. "KVM"), or null on bare metal / unknown.
    pub hypervisor: Option<String>,
    /// clockscope's decision whether the CPU counter (TSC / generic timer) can be trusted.
    pub counter_trusted: Option<bool>,
    /// The evidence behind that decision, one line each ("ok: ..." / "not ok: ...").
    pub counter_evidence: Vec<String>,
    /// The counter frequency clockscope converts with, kHz, and where it came from.
    pub counter_frequency_khz: Option<u64>,
    pub counter_frequency_source: Option<String>,
    /// PostgreSQL major versions installed here (`/usr/lib/postgresql/<major>`), ascending.
    pub postgresql_installed_majors: Vec<u32>,
}

/// A clock that was asked for but could not be measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub name: String,
    pub reason: String,
}

/// Everything `clockscope check` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    /// `host`, `timestamp`, `tool`, `schema_version` (first in the JSON).
    #[serde(flatten)]
    pub stamp: crate::model::stamp::ReportStamp,
    /// Seconds each clock was measured for.
    pub duration_per_clock_s: f64,
    pub environment: Environment,
    pub clocks: Vec<ClockStats>,
    pub skipped: Vec<Skipped>,
    pub verdict: Verdict,
    /// The full `clockscope tsc` report (the TSC's, or the generic timer's
    /// on aarch64), when gathered.
    pub tsc: Option<CounterDetails>,
    /// Whether Ctrl-C stopped the measurements early.
    pub interrupted: bool,
}

impl CheckReport {
    /// The exit code: 130 when interrupted, else the verdict's.
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            crate::exit::INTERRUPTED
        } else {
            self.verdict.exit_code()
        }
    }
}
