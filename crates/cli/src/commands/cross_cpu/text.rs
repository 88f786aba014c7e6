//! The human reports of `clockscope cross-cpu`, written once with two levels
//! of [`Detail`]: the one screen (the default) and the full report
//! (`-v/--verbose`), section by section, each section's two levels side by
//! side:
//!
//! - the CPUs tested (the full level adds those online and in the cgroup's
//!   cpuset), the counter's frequency and the topology;
//! - what was measured: on the screen, one line; in full, the time budget,
//!   the column legend, a table per CPU pair with each clock's verdict in
//!   words, and the results by package pair;
//! - one answer per clock; the screen then lists the pairs with a problem
//!   (at most [`MAX_PROBLEM_LINES`]);
//! - the summary line.
//!
//! The plan alone (`--plan`) is `plan_text.rs`; JSON is `json.rs`.

use super::table::table;
use crate::commands::cross_cpu::model::Outcome;
use crate::i18n::{library::reason, num};
use crate::report::json::serde_name;
use crate::report::stamp::Stamped;
pub use crate::report::text::Detail;
use crate::report::text::{or_dash, write_line};
use crate::{t, tn};
use clockscope_system::counter::calibrate::Calibration;
use clockscope_system::crosscpu::{ClockAnswer, ClockPairReport, CrossCpuReport, PackageGroup};
use clockscope_system::linux::{CpuList, CpuSet, Evidence};
use std::io::{self, Write};

/// The most problem pairs the one screen lists; the rest are counted (`--verbose` lists all).
pub const MAX_PROBLEM_LINES: usize = 12;

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
        or_dash(c.max_warp_ns),
        c.offset_rounds.to_string(),
        signed(c.offset_lower_ns),
        signed(c.offset_upper_ns),
        or_dash(c.min_round_trip_ns),
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

/// The header line and the one-screen report (the default text).
pub fn write_screen(out: &mut dyn Write, m: &Stamped<'_, Outcome>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    write(out, m.report, Detail::Screen)
}

/// The header line and the full report (`--verbose`): every pair's tables.
pub fn write_full(out: &mut dyn Write, m: &Stamped<'_, Outcome>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    write(out, m.report, Detail::Full)
}

/// Writes the report at `detail`, every line fitted to 100 columns
/// ([`crate::report::text`]).
pub fn write(out: &mut dyn Write, o: &Outcome, detail: Detail) -> io::Result<()> {
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    let r = &o.report;
    write_cpus(out, o, detail)?;
    if let Some(note) = &o.note {
        writeln!(out)?;
        return write_line(out, &t!("Nothing to measure: {note}.", note = note));
    }
    write_calibration(out, o)?;
    write_topology(out, r, detail)?;
    match detail {
        Detail::Screen => write_measured(out, r)?,
        Detail::Full => {
            write_budget(out, r)?;
            write_pairs(out, r)?;
            let groups = r.package_groups();
            if r.topology.is_some() && !groups.is_empty() {
                writeln!(out)?;
                group_table(out, &groups)?;
            }
        }
    }
    let answers = r.answers();
    if !answers.is_empty() {
        writeln!(out)?;
        answer_lines(out, &answers)?;
    }
    writeln!(out)?;
    if detail == Detail::Screen {
        write_problems(out, o)?;
    }
    if r.interrupted {
        write_line(
            out,
            t!("Interrupted: the results above are what was measured before Ctrl-C (or SIGTERM)."),
        )?;
    }
    if detail == Detail::Screen {
        write_line(
            out,
            t!("Every pair's table and the column legend: clockscope cross-cpu --verbose"),
        )?;
    }
    write_line(
        out,
        &t!(
            "Summary: {summary}",
            summary = crate::i18n::library::cross_cpu_summary(r)
        ),
    )
}

/// The CPUs tested, of those allowed (the full level: as sched_getaffinity
/// gives them, then those online and in the cgroup's cpuset).
fn write_cpus(out: &mut dyn Write, o: &Outcome, detail: Detail) -> std::io::Result<()> {
    if detail == Detail::Screen {
        return writeln_escaped!(
            out,
            "{}{}",
            label(t!("CPUs tested")),
            t!(
                "{cpus} (of {allowed} allowed)",
                cpus = cpu_list(&o.report.cpus),
                allowed = cpu_list(&o.context.allowed)
            )
        );
    }
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
fn write_calibration(out: &mut dyn Write, o: &Outcome) -> std::io::Result<()> {
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

/// The CPUs' topology, when read (the full level names where from).
fn write_topology(out: &mut dyn Write, r: &CrossCpuReport, detail: Detail) -> std::io::Result<()> {
    let Some(t) = &r.topology else { return Ok(()) };
    match detail {
        Detail::Screen => {
            let t = reason(t);
            writeln_escaped!(out, "{}{t}", label(t!("Topology")))
        }
        Detail::Full => writeln_escaped!(
            out,
            "{}{t} (sys/devices/system/cpu/cpu*/topology)",
            label(t!("Topology"))
        ),
    }
}

/// The one screen's line of what was measured: the pairs, the clocks and
/// the time budget.
fn write_measured(out: &mut dyn Write, r: &CrossCpuReport) -> std::io::Result<()> {
    // The same English for every count (its text before catalogs).
    let measured = crate::tn!(
        "{done} of {planned} planned pair(s) x {clocks} in {secs} s (budget)",
        "{done} of {planned} planned pair(s) x {clocks} in {secs} s (budget)",
        r.pairs_planned,
        done = r.pairs.len(),
        planned = r.pairs_planned,
        clocks = r.clocks.join(", "),
        secs = num(r.budget_ns as f64 / 1e9, 3)
    );
    writeln_escaped!(out, "{}{measured}", label(t!("Measured")))
}

/// The full report's time budget and how it was spent, and what the pair
/// tables' columns mean.
fn write_budget(out: &mut dyn Write, r: &CrossCpuReport) -> std::io::Result<()> {
    let pairs = tn!(
        "{n} pair ({mode})",
        "{n} pairs ({mode})",
        r.pairs_planned,
        n = r.pairs_planned,
        mode = serde_name(&r.pair_mode)
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
        write_line(out, t!("Columns:"))?;
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
            writeln_escaped!(out, "  {:<w$} {}", format!("{}:", c.clock), reason(&c.verdict_text))?;
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
/// The one screen's problems: one line per clock of a pair with a problem
/// (warp, offset, crossed bounds), at most [`MAX_PROBLEM_LINES`].
fn write_problems(out: &mut dyn Write, o: &Outcome) -> io::Result<()> {
    let problems: Vec<String> = o
        .report
        .pairs
        .iter()
        .flat_map(|p| {
            p.clocks.iter().filter(|c| c.verdict.is_problem()).map(move |c| {
                format!(
                    "CPU {} / CPU {} {}: {}",
                    p.pair.cpu_a,
                    p.pair.cpu_b,
                    c.clock,
                    reason(&c.verdict_text)
                )
            })
        })
        .collect();
    if problems.is_empty() {
        return write_line(out, t!("Problems: none"));
    }
    write_line(out, &t!("Problems ({n} pair clock result(s))", n = problems.len()))?;
    for p in problems.iter().take(MAX_PROBLEM_LINES) {
        writeln_escaped!(out, "  {p}")?;
    }
    if problems.len() > MAX_PROBLEM_LINES {
        write_line(
            out,
            &t!(
                "  and {n} more (--verbose lists every pair)",
                n = problems.len() - MAX_PROBLEM_LINES
            ),
        )?;
    }
    Ok(())
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
    write_line(
        out,
        t!("By package (offsets across packages: the higher package's CPU minus the lower's):"),
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
                or_dash(g.max_warp_ns),
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

fn answer_lines(out: &mut dyn Write, answers: &[ClockAnswer]) -> std::io::Result<()> {
    let w = answers.iter().map(|a| a.clock.len()).max().unwrap_or(0) + 1;
    for (i, a) in answers.iter().enumerate() {
        let head = if i == 0 { crate::t!("Answer:") } else { "" };
        writeln_escaped!(
            out,
            "{}{:<w$} {}",
            crate::i18n::pad_right(head, 19),
            format!("{}:", a.clock),
            reason(&a.text)
        )?;
    }
    Ok(())
}
