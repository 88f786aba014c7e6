//! The cross-cpu report as text (a table per CPU pair, the verdicts in
//! words, the results by package pair, one answer per clock, a summary line)
//! or JSON (the library's report plus the CPU context, the calibration and
//! the groups and answers, field names with units); and the plan alone
//! (`--plan`), as text or JSON.

use super::table::table;
use crate::commands::cross_cpu::model::{Outcome, PlanView};
use crate::i18n::num;
use crate::report::stamp::Stamped;
use crate::{t, tn};
use clockscope_system::counter::calibrate::Calibration;
use clockscope_system::crosscpu::{ClockAnswer, ClockPairReport, CrossCpuReport, PackageGroup, Plan};
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

pub(super) fn ms(ns: u64) -> String {
    t!("{ms} ms", ms = num(ns as f64 / 1e6, 1))
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
        Evidence::Missing(_) => t!("not readable").to_string(),
        Evidence::Unreadable(reason) => t!("not readable ({reason})", reason = reason),
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

/// The pair table's columns, in the report's language.
fn header() -> [&'static str; 11] {
    [
        t!("clock"),
        t!("iterations"),
        t!("handovers a>b/b>a"),
        t!("warps"),
        t!("max warp ticks"),
        t!("max warp ns"),
        t!("rounds"),
        t!("offset low ns"),
        t!("offset high ns"),
        t!("min rtt ns"),
        t!("verdict"),
    ]
}

pub use super::plan_text::write_plan_text;
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
        writeln_escaped!(out, "{}", t!("Nothing to measure: {note}.", note = note))?;
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
            "{}",
            t!("Interrupted: the results above are what was measured before Ctrl-C (or SIGTERM).")
        )?;
    }
    writeln_escaped!(
        out,
        "{}",
        t!(
            "Summary: {summary}",
            summary = crate::i18n::library::cross_cpu_summary(r)
        )
    )?;
    Ok(())
}

/// The CPUs tested, of those allowed, online and in the cgroup's cpuset.
fn write_cpus(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
    let tested = t!(
        "{cpus} (of {allowed} allowed by sched_getaffinity, which reflects cgroup cpusets and taskset)",
        cpus = cpu_list(&o.report.cpus),
        allowed = cpu_list(&o.context.allowed)
    );
    writeln_escaped!(out, "{}{tested}", label(t!("CPUs tested")))?;
    writeln_escaped!(out, "{}{}", label(t!("Online CPUs")), file_line(&o.context.online))?;
    writeln_escaped!(
        out,
        "{}{}",
        label(t!("Cgroup cpuset")),
        file_line(&o.context.cgroup_cpuset)
    )
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
    if let Some(t) = &r.topology {
        writeln_escaped!(
            out,
            "{}{t} (sys/devices/system/cpu/cpu*/topology)",
            label(t!("Topology"))
        )?;
    }
    let pairs = tn!(
        "{n} pair ({mode})",
        "{n} pairs ({mode})",
        r.pairs_planned,
        n = r.pairs_planned,
        mode = pair_mode_name(r.pair_mode)
    );
    let clocks = tn!(
        "{n} clock ({clocks})",
        "{n} clocks ({clocks})",
        r.clocks.len(),
        n = r.clocks.len(),
        clocks = r.clocks.join(", ")
    );
    let budget = t!(
        "{seconds} s over {pairs} x {clocks} x 2 tests (warp, ping-pong) of {each} each{weights}",
        seconds = num(r.budget_ns as f64 / 1e9, 3),
        pairs = pairs,
        clocks = clocks,
        each = ms(r.test_ns),
        weights = if r.pairs.iter().any(|p| p.pair.kind.weight() > 1) {
            t!(" for a pair within a die (x4 across packages, x2 across dies)")
        } else {
            ""
        }
    );
    writeln_escaped!(out, "{}{budget}", label(t!("Budget")))?;
    if let Some(why) = &r.extended {
        writeln_escaped!(out, "{}-d {why}", label(t!("Note")))?;
    }
    if !r.pairs.is_empty() {
        writeln!(out)?;
        writeln_escaped!(out, "{}", t!("Columns:"))?;
        for line in legend() {
            writeln_escaped!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// A table per CPU pair, and each clock's verdict on it in words.
fn write_pairs(out: &mut dyn Write, r: &CrossCpuReport) -> std::io::Result<()> {
    for p in &r.pairs {
        writeln!(out)?;
        let head = t!(
            "CPU {a} / CPU {b}   (a = CPU {a}, b = CPU {b}; offsets are CPU {b}'s clock minus CPU {a}'s)",
            a = p.pair.cpu_a,
            b = p.pair.cpu_b
        );
        writeln_escaped!(out, "{head}")?;
        let rows: Vec<Vec<String>> = p.clocks.iter().map(row).collect();
        table(out, 1, &header(), &rows)?;
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
fn legend() -> [&'static str; 5] {
    [
        t!("iterations: readings taken in the warp test (both CPUs, one at a time under a shared lock);"),
        t!("handovers a>b/b>a: readings that directly followed one taken on the other CPU (the comparisons that matter);"),
        t!("warps: readings earlier than the reading before them (the kernel's check_tsc_warp), and the largest such step;"),
        t!("rounds: ping-pong exchanges; offset low/high: bounds on CPU b's clock minus CPU a's from the tightest round;"),
        t!("min rtt: the shortest round trip a -> b -> a, which limits how precisely an offset can be bounded."),
    ]
}

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

pub(super) fn pair_mode_name(m: clockscope_system::crosscpu::PairMode) -> &'static str {
    match m {
        clockscope_system::crosscpu::PairMode::Topology => "topology",
        clockscope_system::crosscpu::PairMode::All => "all",
        clockscope_system::crosscpu::PairMode::First => "first",
    }
}

pub(super) fn package_label(a: Option<i32>, b: Option<i32>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a == b => t!("within {package}", package = a),
        (Some(a), Some(b)) => format!("{a} / {b}"),
        _ => t!("unknown").to_string(),
    }
}

/// The results by package pair: one row per clock and package pair.
fn group_table(out: &mut dyn Write, groups: &[PackageGroup]) -> std::io::Result<()> {
    writeln_escaped!(
        out,
        "{}",
        t!("By package (offsets across packages: the higher package's CPU minus the lower's):")
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
                t!(
                    "CPU {a} / CPU {b}: {verdict}",
                    a = g.worst_cpu_a,
                    b = g.worst_cpu_b,
                    verdict = g.worst_verdict.label()
                ),
            ]
        })
        .collect();
    table(
        out,
        2,
        &[
            t!("packages"),
            t!("clock"),
            t!("pairs"),
            t!("problems"),
            t!("warps"),
            t!("max warp ns"),
            t!("offset low ns"),
            t!("offset high ns"),
            t!("worst pair"),
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
