//! The `clockscope check` report: a serialisable value that every output
//! format renders (text, JSON, Prometheus, SVG). Its JSON form is documented
//! field by field in `docs/schema/check.schema.json`.

pub mod stats;
pub mod verdict;

use clockscope_system::counter::CounterDetails;
use serde::Serialize;
use stats::ClockStats;
use verdict::Verdict;

/// Version of the JSON layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 2;

/// Where the program runs, and what the TSC evidence says.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Environment {
    /// `uname -r` (from /proc/sys/kernel/osrelease).
    pub kernel_release: Option<String>,
    /// CPU architecture of this build.
    pub arch: String,
    /// The kernel's clocksource (/sys/devices/system/clocksource/clocksource0/current_clocksource).
    pub current_clocksource: Option<String>,
    /// Clocksources the kernel offers (available_clocksource).
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
    /// Where counter_frequency_khz came from (CPUID leaf, kernel, calibration).
    pub counter_frequency_source: Option<String>,
    /// PostgreSQL major versions installed here (`/usr/lib/postgresql/<major>`), ascending.
    pub postgresql_installed_majors: Vec<u32>,
    /// The kernel's NTP state (adjtimex, read-only): independent evidence of
    /// the clock's rate when synchronised; `null` when not read (`ntp_unavailable` says why).
    pub ntp: Option<clockscope_system::linux::ntp::NtpState>,
    /// Why ntp is null (kernel files under another --root, not Linux), else null.
    pub ntp_unavailable: Option<String>,
    /// How the kernel messages were read: `bare_metal`, `guest` or `unknown`.
    pub machine: Option<clockscope_system::linux::tsc_messages::Machine>,
    /// The kernel log's TSC and clocksource messages, each with what it
    /// means here (empty when the log was not readable).
    pub kernel_messages: Vec<clockscope_system::linux::tsc_messages::KernelMessage>,
}

/// A clock that was asked for but could not be measured.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    /// Command-line name of the clock.
    pub name: String,
    /// The server's refusal or the missing privilege, in words.
    pub reason: String,
}

/// Everything `clockscope check` found.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CheckReport {
    /// `host`, `timestamp`, `tool`, `schema_version` (first in the JSON).
    #[serde(flatten)]
    pub stamp: crate::report::stamp::ReportStamp,
    /// Seconds each clock was measured for.
    pub duration_per_clock_s: f64,
    pub environment: Environment,
    /// One entry per measured clock, in measuring order.
    pub clocks: Vec<ClockStats>,
    /// Clocks that were asked for but could not be measured here.
    pub skipped: Vec<Skipped>,
    pub verdict: Verdict,
    /// "clean" or "noisy": noisy when `interference_lost_fraction` is at
    /// least 0.10 (`clockscope_system::interference::NOISY_LOST_FRACTION`).
    pub measurement_quality: MeasurementQuality,
    /// Share of the measured time lost to interference (preemption, steal,
    /// cgroup throttling: the gaps), over every measured clock's kept run
    /// together, 0 to 1. The one figure "noisy" is decided from.
    pub interference_lost_fraction: f64,
    /// Why it is noisy, or what the repeats saw; null when nothing was seen.
    pub measurement_quality_reason: Option<String>,
    /// The full `clockscope tsc` report (the TSC's, or the generic timer's
    /// on aarch64), when gathered.
    pub tsc: Option<CounterDetails>,
    /// Whether Ctrl-C stopped the measurements early.
    pub interrupted: bool,
}

/// Whether the measurements were disturbed by the machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MeasurementQuality {
    #[default]
    Clean,
    Noisy,
}

/// How each clock's measurement was repeated, in words that agree with the
/// clocks header (which gives the kept run's time): "3 runs within the 1 s
/// budget, kept run 2 (0.25 s)"; empty for a single run.
pub fn repeats_words(c: &ClockStats, duration_s: f64) -> String {
    let i = &c.interference;
    if i.runs > 1 {
        format!(
            "{} runs within the {duration_s} s budget, kept run {} ({:.2} s)",
            i.runs,
            i.kept_run,
            c.elapsed_ns as f64 / 1e9
        )
    } else {
        String::new()
    }
}

/// The run's quality: the share of every clock's kept run lost to
/// interference, together, and noisy by the one definition
/// ([`clockscope_system::interference::is_noisy`]). The reason names each
/// clock that was noisy or repeated, what it saw and what was kept
/// ("monotonic: 45.0% of the run lost in 120 gaps > 1000 ns; 3 runs within
/// the 1 s budget, kept run 2 (0.25 s)"); `duration_s` is the budget per clock.
pub fn assess_quality(clocks: &[ClockStats], duration_s: f64) -> (MeasurementQuality, f64, Option<String>) {
    use clockscope_system::interference;
    let lost = interference::lost_fraction_of(clocks.iter().map(|c| (c.interference.lost_ns, c.elapsed_ns)));
    let quality = if interference::is_noisy(lost) {
        MeasurementQuality::Noisy
    } else {
        MeasurementQuality::Clean
    };
    let mut parts = Vec::new();
    for c in clocks {
        let i = &c.interference;
        let repeats = repeats_words(c, duration_s);
        match (c.noise(), i.runs > 1) {
            (Some(why), _) => {
                let sep = if repeats.is_empty() { "" } else { "; " };
                parts.push(format!("{}: {why}{sep}{repeats}", c.name));
            }
            (None, true) => {
                let first = i.noise_by_run.iter().flatten().next().map_or("", String::as_str);
                parts.push(format!("{}: clean after repeats (run 1: {first}); {repeats}", c.name));
            }
            (None, false) => {}
        }
    }
    (quality, lost, (!parts.is_empty()).then(|| parts.join(" | ")))
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
