//! The cross-cpu report as text (a table per CPU pair, the verdicts in
//! words, the results by package pair, one answer per clock, a summary line)
//! or JSON (the library's report plus the CPU context, the calibration and
//! the groups and answers, field names with units); and the plan alone
//! (`--plan`), as text or JSON.

use super::table::table;
use crate::commands::cross_cpu::model::{Outcome, PlanView};
use crate::report::stamp::Stamped;
use clockscope_system::counter::calibrate::Calibration;
use clockscope_system::crosscpu::plan::{PlanGroup, Representative};
use clockscope_system::crosscpu::{ClockAnswer, ClockPairReport, CrossCpuReport, PackageGroup, PairKind, Plan};
use clockscope_system::linux::{CpuList, CpuSet, Evidence};
use serde::Serialize;
use std::io::{self, Write};

/// Where the counter frequency came from, in words.
/// In the current language (the model keeps it in English, for JSON).
pub fn calibration_source(c: &Calibration) -> String {
    let ppm = c
        .uncertainty_ppm
        .map(|p| crate::t!(", ±{ppm} ppm", ppm = crate::i18n::num(p, 2)))
        .unwrap_or_default();
    crate::t!(
        "{counter} calibrated against {reference} in {ms} ms{ppm}",
        counter = c.counter,
        reference = c.reference,
        ms = crate::i18n::num(c.elapsed_ns as f64 / 1e6, 1),
        ppm = ppm
    )
}

/// `name:` padded to the width of the header lines, with at least one space.
pub(super) fn label(name: &str) -> String {
    format!("{} ", crate::i18n::pad_right(&format!("{name}:"), 18))
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn signed<T: Into<i64>>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{:+}", v.into()))
}

/// CPU numbers as a kernel CPU list (`0-3,8`).
pub fn cpu_list(cpus: &[usize]) -> String {
    CpuList::from_cpus(cpus.iter().copied()).to_string()
}

/// `0-3 (/sys/devices/system/cpu/online)`, or why there is no list.
fn file_line(f: &Evidence<CpuSet>) -> String {
    match f {
        Evidence::Found(set) => set.to_string(),
        Evidence::Missing(_) => "not readable".to_string(),
        Evidence::Unreadable(reason) => format!("not readable ({reason})"),
    }
}

fn row(c: &ClockPairReport) -> Vec<String> {
    vec![
        c.clock.to_string(),
        c.warp.iterations.to_string(),
        format!("{}/{}", c.warp.handovers_a_to_b, c.warp.handovers_b_to_a),
        c.warp.warps.to_string(),
        c.warp.max_warp_ticks.to_string(),
        opt(c.max_warp_ns),
        c.offset_rounds.to_string(),
        signed(c.offset_lower_ns),
        signed(c.offset_upper_ns),
        opt(c.min_round_trip_ns),
        c.verdict.label().to_string(),
    ]
}

const HEADER: [&str; 11] = [
    "clock",
    "iterations",
    "handovers a>b/b>a",
    "warps",
    "max warp ticks",
    "max warp ns",
    "rounds",
    "offset low ns",
    "offset high ns",
    "min rtt ns",
    "verdict",
];

pub use super::summary::write_summary_text;

/// The header line and the full text report (`--verbose`): every pair's tables.
pub fn write_text(out: &mut dyn Write, m: &Stamped<'_, Outcome>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    text(out, m.report)
}

/// The text report.
fn text(out: &mut dyn Write, o: &Outcome) -> io::Result<()> {
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    let r = &o.report;
    write_cpus(out, o)?;
    if let Some(note) = &o.note {
        writeln!(out)?;
        writeln_escaped!(out, "Nothing to measure: {note}.")?;
        return Ok(());
    }
    write_calibration(out, o)?;
    write_budget(out, r)?;
    write_pairs(out, r)?;
    let groups = r.package_groups();
    if r.topology.is_some() && !groups.is_empty() {
        writeln!(out)?;
        group_table(out, &groups)?;
    }
    let answers = r.answers();
    if !answers.is_empty() {
        writeln!(out)?;
        answer_lines(out, &answers)?;
    }
    writeln!(out)?;
    if r.interrupted {
        writeln_escaped!(
            out,
            "Interrupted: the results above are what was measured before Ctrl-C (or SIGTERM)."
        )?;
    }
    writeln_escaped!(out, "Summary: {}", crate::i18n::library::cross_cpu_summary(r))?;
    Ok(())
}

/// The CPUs tested, of those allowed, online and in the cgroup's cpuset.
fn write_cpus(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    writeln_escaped!(
        out,
        "CPUs tested:       {} (of {} allowed by sched_getaffinity, which reflects cgroup cpusets and taskset)",
        cpu_list(&o.report.cpus),
        cpu_list(&o.context.allowed)
    )?;
    writeln_escaped!(out, "Online CPUs:       {}", file_line(&o.context.online))?;
    writeln_escaped!(out, "Cgroup cpuset:     {}", file_line(&o.context.cgroup_cpuset))
}

/// The counter's calibrated frequency, or why there is none.
pub(super) fn write_calibration(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    let Some(c) = &o.calibration else { return Ok(()) };
    match c.hz {
        Some(hz) => writeln_escaped!(
            out,
            "{}{}",
            label(&crate::t!("{counter} frequency", counter = c.counter)),
            crate::t!(
                "{mhz} MHz ({source})",
                mhz = crate::i18n::num(hz as f64 / 1e6, 3),
                source = calibration_source(c)
            )
        ),
        None => writeln_escaped!(
            out,
            "{}{}",
            crate::i18n::pad_right(
                &crate::t!(
                    "{counter} frequency:",
                    counter = if c.counter.is_empty() {
                        crate::t!("Counter")
                    } else {
                        c.counter
                    }
                ),
                19
            ),
            crate::t!("unknown ({note}); its results are in ticks only", note = c.note)
        ),
    }
}

/// The topology, the time budget and how it was spent, and what the
/// pair tables' columns mean.
fn write_budget(out: &mut dyn Write, r: &CrossCpuReport) -> std::io::Result<()> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if let Some(t) = &r.topology {
        writeln_escaped!(out, "{}{t} (sys/devices/system/cpu/cpu*/topology)", label("Topology"))?;
    }
    writeln_escaped!(
        out,
        "Budget:            {:.3} s over {} pair{} ({}) x {} clock{} ({}) x 2 tests (warp, ping-pong) of {} each{}",
        r.budget_ns as f64 / 1e9,
        r.pairs_planned,
        plural(r.pairs_planned),
        pair_mode_name(r.pair_mode),
        r.clocks.len(),
        plural(r.clocks.len()),
        r.clocks.join(", "),
        ms(r.test_ns),
        if r.pairs.iter().any(|p| p.pair.kind.weight() > 1) {
            " for a pair within a die (x4 across packages, x2 across dies)"
        } else {
            ""
        }
    )?;
    if let Some(why) = &r.extended {
        writeln_escaped!(out, "{}-d {why}", label("Note"))?;
    }
    if !r.pairs.is_empty() {
        writeln!(out)?;
        writeln_escaped!(out, "Columns:")?;
        for line in LEGEND {
            writeln_escaped!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// A table per CPU pair, and each clock's verdict on it in words.
fn write_pairs(out: &mut dyn Write, r: &CrossCpuReport) -> std::io::Result<()> {
    for p in &r.pairs {
        writeln!(out)?;
        writeln_escaped!(
            out,
            "CPU {a} / CPU {b}   (a = CPU {a}, b = CPU {b}; offsets are CPU {b}'s clock minus CPU {a}'s)",
            a = p.pair.cpu_a,
            b = p.pair.cpu_b
        )?;
        let rows: Vec<Vec<String>> = p.clocks.iter().map(row).collect();
        table(out, 1, &HEADER, &rows)?;
        let w = p.clocks.iter().map(|c| c.clock.len()).max().unwrap_or(0) + 1;
        for c in &p.clocks {
            writeln_escaped!(
                out,
                "  {:<w$} {}",
                format!("{}:", c.clock),
                crate::i18n::library::reason(&c.verdict_text)
            )?;
        }
    }
    Ok(())
}

/// What the table's columns mean.
const LEGEND: [&str; 5] = [
    "iterations: readings taken in the warp test (both CPUs, one at a time under a shared lock);",
    "handovers a>b/b>a: readings that directly followed one taken on the other CPU (the comparisons that matter);",
    "warps: readings earlier than the reading before them (the kernel's check_tsc_warp), and the largest such step;",
    "rounds: ping-pong exchanges; offset low/high: bounds on CPU b's clock minus CPU a's from the tightest round;",
    "min rtt: the shortest round trip a -> b -> a, which limits how precisely an offset can be bounded.",
];

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
    crate::report::json::write(out, &Stamped { stamp, report: &j })
}

fn pair_mode_name(m: clockscope_system::crosscpu::PairMode) -> &'static str {
    match m {
        clockscope_system::crosscpu::PairMode::Topology => "topology",
        clockscope_system::crosscpu::PairMode::All => "all",
        clockscope_system::crosscpu::PairMode::First => "first",
    }
}

fn package_label(a: Option<i32>, b: Option<i32>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a == b => format!("within {a}"),
        (Some(a), Some(b)) => format!("{a} / {b}"),
        _ => "unknown".to_string(),
    }
}

/// The results by package pair: one row per clock and package pair.
fn group_table(out: &mut dyn Write, groups: &[PackageGroup]) -> std::io::Result<()> {
    writeln_escaped!(
        out,
        "By package (offsets across packages: the higher package's CPU minus the lower's):"
    )?;
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            vec![
                package_label(g.package_a, g.package_b),
                g.clock.to_string(),
                g.pairs.to_string(),
                g.problems.to_string(),
                g.warps.to_string(),
                opt(g.max_warp_ns),
                signed(g.offset_lower_ns),
                signed(g.offset_upper_ns),
                format!(
                    "CPU {} / CPU {}: {}",
                    g.worst_cpu_a,
                    g.worst_cpu_b,
                    g.worst_verdict.label()
                ),
            ]
        })
        .collect();
    table(
        out,
        2,
        &[
            "packages",
            "clock",
            "pairs",
            "problems",
            "warps",
            "max warp ns",
            "offset low ns",
            "offset high ns",
            "worst pair",
        ],
        &rows,
    )
}

pub(super) fn answer_lines(out: &mut dyn Write, answers: &[ClockAnswer]) -> std::io::Result<()> {
    let w = answers.iter().map(|a| a.clock.len()).max().unwrap_or(0) + 1;
    for (i, a) in answers.iter().enumerate() {
        let head = if i == 0 { crate::t!("Answer:") } else { "" };
        writeln_escaped!(
            out,
            "{}{:<w$} {}",
            crate::i18n::pad_right(head, 19),
            format!("{}:", a.clock),
            crate::i18n::library::reason(&a.text)
        )?;
    }
    Ok(())
}

fn representatives(reps: &[Representative]) -> String {
    reps.iter()
        .map(|r| match r.die {
            None => format!("package {}: CPU {}", r.package, r.cpu),
            Some(d) => format!("package {} die {d}: CPU {}", r.package, r.cpu),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn group_rows(groups: &[PlanGroup]) -> Vec<Vec<String>> {
    groups
        .iter()
        .map(|g| {
            vec![
                package_label(g.package_a, g.package_b),
                g.pairs.to_string(),
                ms(g.time_ns),
            ]
        })
        .collect()
}

/// The plan as text (`--plan`): what a run would do, without measuring.
pub fn write_plan_text(out: &mut dyn Write, m: &Stamped<'_, PlanView<'_>>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    // Every line fitted to 100 columns (crate::report::text).
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    let (p, cpus_from) = (m.report.plan, m.report.cpus_from.as_str());
    write_plan_pairs(out, p, cpus_from)?;
    write_plan_tests(out, p)?;
    writeln!(out)?;
    writeln_escaped!(out, "By package:")?;
    table(out, 1, &["packages", "pairs", "time"], &group_rows(&p.groups))?;
    writeln!(out)?;
    writeln_escaped!(
        out,
        "Pairs, in test order (offsets will be CPU b's clock minus CPU a's):"
    )?;
    let rows: Vec<Vec<String>> = p
        .pairs
        .iter()
        .map(|x| {
            vec![
                format!("CPU {} / CPU {}", x.cpu_a, x.cpu_b),
                package_label(x.package_a, x.package_b),
                ms(x.test_ns),
                x.kind.label().to_string(),
            ]
        })
        .collect();
    table(out, 1, &["a / b", "packages", "each test", "kind"], &rows)?;
    Ok(())
}

/// The plan's CPUs, topology, pairs and representatives.
fn write_plan_pairs(out: &mut dyn Write, p: &Plan, cpus_from: &str) -> std::io::Result<()> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    writeln_escaped!(out, "{}{} ({cpus_from})", label("CPUs planned"), cpu_list(&p.cpus))?;
    writeln_escaped!(
        out,
        "{}{}",
        label("Topology"),
        p.topology.as_deref().map_or("not read".to_string(), |t| format!(
            "{t} (sys/devices/system/cpu/cpu*/topology)"
        ))
    )?;
    for n in &p.topology_notes {
        writeln_escaped!(out, "{}{n}", label("Topology note"))?;
    }
    let kinds: Vec<String> = p
        .kind_counts()
        .iter()
        .map(|(k, n)| format!("{n} {}", k.label()))
        .collect();
    let smt = match (p.mode, p.smt_pairs) {
        (clockscope_system::crosscpu::PairMode::Topology, false) => {
            "; SMT siblings not paired (--smt-pairs pairs them)"
        }
        (clockscope_system::crosscpu::PairMode::Topology, true) => "; SMT siblings paired (--smt-pairs)",
        _ => "",
    };
    writeln_escaped!(
        out,
        "{}{}: {} pair{}{}{smt}",
        label("Pairs"),
        pair_mode_name(p.mode),
        p.pairs.len(),
        plural(p.pairs.len()),
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        }
    )?;
    if !p.representatives.is_empty() {
        writeln_escaped!(
            out,
            "{}{}",
            label("Representatives"),
            representatives(&p.representatives)
        )?;
    }
    Ok(())
}

/// The plan's tests, their expected time, and the CPUs left unpaired.
fn write_plan_tests(out: &mut dyn Write, p: &Plan) -> std::io::Result<()> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    writeln_escaped!(
        out,
        "{}{} clock{} x 2 tests (warp, ping-pong) per pair; each test {} x weight ({} across packages, {} across \
         dies, 1 otherwise), and each warp test runs on until it has seen {} handovers each way",
        label("Tests"),
        p.clocks,
        plural(p.clocks),
        ms(p.unit_test_ns),
        PairKind::CrossPackage.weight(),
        PairKind::CrossDie.weight(),
        p.min_handovers
    )?;
    writeln_escaped!(
        out,
        "{}{:.3} s (-d {:.3} s, --max-time {:.3} s; each test at least {})",
        label("Expected time"),
        p.expected_ns as f64 / 1e9,
        p.budget_ns as f64 / 1e9,
        p.max_time_ns as f64 / 1e9,
        ms(clockscope_system::crosscpu::MIN_TEST_NS)
    )?;
    if let Some(why) = &p.extended {
        writeln_escaped!(out, "{}-d {why}", label("Note"))?;
    }
    for u in &p.uncovered {
        writeln_escaped!(out, "{}CPU {}: {}", label("Not paired"), u.cpu, u.reason)?;
    }
    Ok(())
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
    crate::report::json::write(
        out,
        &Stamped {
            stamp: m.stamp,
            report: &j,
        },
    )
}
