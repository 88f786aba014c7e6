//! The cross-cpu report as JSON (the library's report plus the CPU context,
//! the calibration and the groups and answers, field names with units), and
//! the plan alone (`--plan --format json`).

use crate::commands::cross_cpu::model::{Outcome, PlanView};
use crate::report::stamp::Stamped;
use clockscope_system::counter::calibrate::Calibration;
use clockscope_system::crosscpu::{ClockAnswer, CrossCpuReport, PackageGroup, Plan};
use clockscope_system::linux::{CpuSet, Evidence};
use serde::Serialize;
use std::io::{self, Write};

/// A CPU list file in the JSON report: `{"file", "content", "cpus"}`, or
/// `null` when it was missing or unreadable.
#[derive(Serialize, schemars::JsonSchema)]
struct CpuListFileJson<'a> {
    /// The file read.
    file: &'a str,
    /// The list, in the kernel's canonical form (as the kernel writes it).
    content: String,
    /// The CPUs it lists.
    cpus: Vec<usize>,
}

impl<'a> CpuListFileJson<'a> {
    fn new(f: &'a Evidence<CpuSet>) -> Option<Self> {
        f.found().map(|set| CpuListFileJson {
            file: &set.path,
            content: set.cpus.to_string(),
            cpus: set.cpus.cpus().collect(),
        })
    }
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Json<'a> {
    #[serde(flatten)]
    report: &'a CrossCpuReport,
    /// The CPUs this process may run on, from sched_getaffinity (reflects cgroup cpusets and
    /// taskset), ascending.
    #[schemars(length(min = 1))]
    allowed_cpus: &'a [usize],
    /// /sys/devices/system/cpu/online; null when missing or unreadable.
    online_cpus: Option<CpuListFileJson<'a>>,
    /// The cgroup cpuset (v2 cpuset.cpus.effective, else v1 cpuset.effective_cpus or cpuset.cpus),
    /// context only: allowed_cpus already reflects it; null when there is none.
    cgroup_cpuset: Option<CpuListFileJson<'a>>,
    /// The calibration of the CPU counter against CLOCK_MONOTONIC_RAW (20 ms) that converts its
    /// ticks to ns; null when nothing was measured. When it did not converge the counter's results
    /// are in ticks only (its _ns fields are null).
    calibration: &'a Option<Calibration>,
    /// The results by package pair, one entry per clock and package pair (across packages first,
    /// then within each package).
    package_groups: Vec<PackageGroup>,
    /// One answer per clock (in the order of clocks): whether the packages agree and within how
    /// much, or which package is off and by how much. Empty when nothing was measured.
    answers: Vec<ClockAnswer>,
    /// Why nothing was measured (fewer than two CPUs selected or allowed); null when measured.
    note: &'a Option<String>,
    /// True when any result is a problem: a warp, a proven offset, or crossed offset bounds (exit
    /// status 1).
    problem: bool,
    /// One line: pairs and clock results, and what was found (or the note).
    summary: String,
    /// The process's exit status: 0 all in sync or nothing to measure, 1 a problem, 130
    /// interrupted.
    exit_code: u8,
}

/// The JSON report, stamped.
pub fn write_json(out: &mut dyn Write, m: &Stamped<'_, Outcome>) -> io::Result<()> {
    let (stamp, o) = (m.stamp, m.report);
    let j = Json {
        report: &o.report,
        allowed_cpus: &o.context.allowed,
        online_cpus: CpuListFileJson::new(&o.context.online),
        cgroup_cpuset: CpuListFileJson::new(&o.context.cgroup_cpuset),
        calibration: &o.calibration,
        package_groups: o.report.package_groups(),
        answers: o.report.answers(),
        note: &o.note,
        problem: o.report.has_problem(),
        summary: o.note.clone().unwrap_or_else(|| o.report.summary()),
        exit_code: o.exit_code(),
    };
    crate::report::json::write(out, &stamp.on(&j))
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct PlanJson<'a> {
    #[serde(flatten)]
    plan: &'a Plan,
    /// Where `cpus` came from.
    cpus_from: &'a str,
    /// The CPUs this process may run on (sched_getaffinity), or the online CPUs under --root.
    allowed_cpus: &'a [usize],
    /// The online CPU list file; null when missing or unreadable.
    online_cpus: Option<CpuListFileJson<'a>>,
    /// The cgroup cpuset; null when there is none.
    cgroup_cpuset: Option<CpuListFileJson<'a>>,
    /// The CPUs that appear in at least one pair, ascending.
    covered_cpus: Vec<usize>,
}

/// The plan as JSON (`--plan --format json`).
pub fn write_plan_json(out: &mut dyn Write, m: &Stamped<'_, PlanView<'_>>) -> io::Result<()> {
    let (p, context, cpus_from) = (m.report.plan, m.report.context, m.report.cpus_from.as_str());
    let j = PlanJson {
        plan: p,
        cpus_from,
        allowed_cpus: &context.allowed,
        online_cpus: CpuListFileJson::new(&context.online),
        cgroup_cpuset: CpuListFileJson::new(&context.cgroup_cpuset),
        covered_cpus: p.covered().cpus().collect(),
    };
    crate::report::json::write(out, &m.stamp.on(&j))
}
