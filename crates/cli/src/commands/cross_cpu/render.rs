//! The cross-cpu report as text (a table per CPU pair, the verdicts in
//! words, a summary line) or JSON (the library's report plus the CPU context
//! and the calibration, field names with units).

use super::Outcome;
use clockscope::counter::calibrate::Calibration;
use clockscope::crosscpu::{ClockPairReport, CrossCpuReport};
use clockscope::linux::{CpuList, CpuSet, Evidence};
use serde::Serialize;
use std::io::Write;

/// Where the counter frequency came from, in words.
pub fn calibration_source(c: &Calibration) -> String {
    let ppm = c.uncertainty_ppm.map(|p| format!(", ±{p:.2} ppm")).unwrap_or_default();
    format!(
        "{} calibrated against {} in {:.1} ms{ppm}",
        c.counter,
        c.reference,
        c.elapsed_ns as f64 / 1e6
    )
}

/// `name:` padded to the width of the header lines, with at least one space.
fn label(name: &str) -> String {
    format!("{:<18} ", format!("{name}:"))
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

/// A table: left-aligned first column, right-aligned numbers, left-aligned last column.
fn table(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let n = header.len();
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i == 0 || i == n - 1 {
                s.push_str(&format!("{cell:<w$}", w = widths[i]));
            } else {
                s.push_str(&format!("{cell:>w$}", w = widths[i]));
            }
        }
        s.trim_end().to_string()
    };
    writeln_escaped!(out, "  {}", line(header.to_vec()))?;
    for r in rows {
        writeln_escaped!(out, "  {}", line(r.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

fn row(c: &ClockPairReport) -> Vec<String> {
    vec![
        c.clock.to_string(),
        c.iterations.to_string(),
        format!("{}/{}", c.handovers_a_to_b, c.handovers_b_to_a),
        c.warps.to_string(),
        c.max_warp_ticks.to_string(),
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

/// The text report.
pub fn text(o: &Outcome, out: &mut dyn Write) -> anyhow::Result<()> {
    let r = &o.report;
    writeln_escaped!(
        out,
        "CPUs tested:       {} (of {} allowed by sched_getaffinity, which reflects cgroup cpusets and taskset)",
        cpu_list(&r.cpus),
        cpu_list(&o.context.allowed)
    )?;
    writeln_escaped!(out, "Online CPUs:       {}", file_line(&o.context.online))?;
    writeln_escaped!(out, "Cgroup cpuset:     {}", file_line(&o.context.cgroup_cpuset))?;
    if let Some(note) = &o.note {
        writeln!(out)?;
        writeln_escaped!(out, "Nothing to measure: {note}.")?;
        return Ok(());
    }
    if let Some(c) = &o.calibration {
        match c.hz {
            Some(hz) => writeln_escaped!(
                out,
                "{}{:.3} MHz ({})",
                label(&format!("{} frequency", c.counter)),
                hz as f64 / 1e6,
                calibration_source(c)
            )?,
            None => writeln_escaped!(
                out,
                "{:<19}unknown ({}); its results are in ticks only",
                format!(
                    "{} frequency:",
                    if c.counter.is_empty() { "Counter" } else { c.counter }
                ),
                c.note
            )?,
        }
    }
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    writeln_escaped!(
        out,
        "Budget:            {:.3} s over {} pair{} x {} clock{} ({}) x 2 tests (warp, ping-pong) of {} each",
        r.budget_ns as f64 / 1e9,
        r.pairs_planned,
        plural(r.pairs_planned),
        r.clocks.len(),
        plural(r.clocks.len()),
        r.clocks.join(", "),
        ms(r.test_ns)
    )?;
    let planned_ns = r.test_ns as u128 * 2 * (r.pairs_planned * r.clocks.len()) as u128;
    if planned_ns > r.budget_ns as u128 {
        writeln_escaped!(
            out,
            "{}each test takes at least {}, so this run takes about {:.3} s; --pairs first or --cpus test fewer pairs",
            label("Note"),
            ms(clockscope::crosscpu::MIN_TEST_NS),
            planned_ns as f64 / 1e9
        )?;
    }
    if !r.pairs.is_empty() {
        writeln!(out)?;
        writeln_escaped!(out, "Columns:")?;
        for line in LEGEND {
            writeln_escaped!(out, "  {line}")?;
        }
    }
    for p in &r.pairs {
        writeln!(out)?;
        writeln_escaped!(
            out,
            "CPU {a} / CPU {b}   (a = CPU {a}, b = CPU {b}; offsets are CPU {b}'s clock minus CPU {a}'s)",
            a = p.cpu_a,
            b = p.cpu_b
        )?;
        let rows: Vec<Vec<String>> = p.clocks.iter().map(row).collect();
        table(out, &HEADER, &rows)?;
        let w = p.clocks.iter().map(|c| c.clock.len()).max().unwrap_or(0) + 1;
        for c in &p.clocks {
            writeln_escaped!(out, "  {:<w$} {}", format!("{}:", c.clock), c.verdict_text)?;
        }
    }
    writeln!(out)?;
    if r.interrupted {
        writeln_escaped!(
            out,
            "Interrupted: the results above are what was measured before Ctrl-C (or SIGTERM)."
        )?;
    }
    writeln_escaped!(out, "Summary: {}", r.summary())?;
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
#[derive(Serialize)]
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

#[derive(Serialize)]
struct Json<'a> {
    #[serde(flatten)]
    report: &'a CrossCpuReport,
    allowed_cpus: &'a [usize],
    online_cpus: Option<CpuListFileJson<'a>>,
    cgroup_cpuset: Option<CpuListFileJson<'a>>,
    calibration: &'a Option<Calibration>,
    note: &'a Option<String>,
    problem: bool,
    summary: String,
    exit_code: u8,
}

/// The JSON report.
pub fn json(o: &Outcome, out: &mut dyn Write) -> anyhow::Result<()> {
    let j = Json {
        report: &o.report,
        allowed_cpus: &o.context.allowed,
        online_cpus: CpuListFileJson::new(&o.context.online),
        cgroup_cpuset: CpuListFileJson::new(&o.context.cgroup_cpuset),
        calibration: &o.calibration,
        note: &o.note,
        problem: o.report.has_problem(),
        summary: o.note.clone().unwrap_or_else(|| o.report.summary()),
        exit_code: o.exit_code(),
    };
    crate::export::json::write(out, &j)?;
    Ok(())
}
