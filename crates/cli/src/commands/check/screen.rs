//! The one-screen report of `clockscope check` (the default text) and its
//! `--brief` form: the header, the environment in a few lines, one row per
//! clock, the verdict with the one recommendation for this host, and the
//! problems. The full report is `-v/--verbose` ([`super::text`]).

use super::text::{measured_time, status_word};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::CheckReport;
use crate::i18n::{num, pad_left, pad_right};
use crate::report::fit::{fit_line, wrap, REPORT_COLUMNS};
use crate::{t, tn};
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};
use textwrap::core::display_width;

/// Most lines the one-screen report prints for the default clocks.
pub const SCREEN_MAX_LINES: usize = 40;

/// Most lines `--brief` prints.
pub const BRIEF_MAX_LINES: usize = 8;

/// Column of the verdict's findings (after a two-space indent and the label).
const LABEL_W: usize = 15;

/// Writes the one-screen report.
pub fn write(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::report::text::write_header(out, &r.stamp)?;
    writeln!(out)?;
    write_environment(out, r)?;
    writeln!(out)?;
    write_clocks(out, r)?;
    writeln!(out)?;
    write_verdict(out, r)?;
    super::text::write_interrupted(out, r)?;
    writeln!(
        out,
        "{}",
        t!("More: clockscope check -v (frequency checks, NTP, kernel log, interference, every rule)")
    )
}

/// The CPU in a few words: model, architecture, usable CPUs, hypervisor.
fn cpu_words(r: &CheckReport) -> String {
    let e = &r.environment;
    let model = e
        .cpu_model
        .as_deref()
        .map_or_else(|| t!("unknown CPU").to_string(), |s| esc(s).into_owned());
    let mut cpu = format!("{model} ({})", e.arch);
    if let Some(n) = e.cpus {
        cpu.push_str(", ");
        cpu.push_str(&tn!("{n} CPU usable", "{n} CPUs usable", n, n = n));
    }
    if let Some(h) = &e.hypervisor {
        cpu.push_str(", ");
        cpu.push_str(&t!("{hypervisor} guest", hypervisor = esc(h)));
    }
    cpu
}

/// The clocksource and the CPU counter's trust in a few words.
fn clocksource_words(r: &CheckReport) -> String {
    let e = &r.environment;
    let counter = match e.counter_trusted {
        Some(true) => t!("; CPU counter trusted"),
        Some(false) => t!("; CPU counter NOT trusted"),
        None => "",
    };
    format!("{}{counter}", unknown_or(e.current_clocksource.as_deref()))
}

/// An untrusted value escaped, or "unknown" in the report's language.
fn unknown_or(v: Option<&str>) -> String {
    v.map_or_else(|| t!("unknown").to_string(), |s| esc(s).into_owned())
}

/// The environment: kernel and clocksource, CPU, counter and PostgreSQL,
/// and how many kernel-log messages `-v` explains.
fn write_environment(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    writeln!(out, "{}", t!("Environment"))?;
    let avail = if e.available_clocksources.is_empty() {
        String::new()
    } else {
        t!(" (available: {list})", list = esc(&e.available_clocksources.join(" ")))
    };
    let kernel = t!(
        "kernel {release}, clocksource {clocksource}{available}",
        release = unknown_or(e.kernel_release.as_deref()),
        clocksource = unknown_or(e.current_clocksource.as_deref()),
        available = avail
    );
    writeln!(out, "  {kernel}")?;
    writeln!(out, "  {}", t!("CPU {cpu}", cpu = cpu_words(r)))?;
    let trust = match e.counter_trusted {
        Some(true) => t!("CPU counter trusted"),
        Some(false) => t!("CPU counter NOT trusted"),
        None => t!("CPU counter not assessed"),
    };
    let khz = e.counter_frequency_khz.map_or(String::new(), |k| {
        let source = e.counter_frequency_source.as_deref().map_or_else(
            || t!("an unknown source").to_string(),
            |s| esc(&crate::i18n::library::reason(s)).into_owned(),
        );
        t!(", {khz} kHz from {source}", khz = k, source = source)
    });
    let installed = if e.postgresql_installed_majors.is_empty() {
        t!("PostgreSQL none found in /usr/lib/postgresql").to_string()
    } else {
        let list: Vec<String> = e.postgresql_installed_majors.iter().map(u32::to_string).collect();
        t!("PostgreSQL {versions} installed", versions = list.join(", "))
    };
    writeln!(out, "  {trust}{khz}; {installed}")?;
    if !e.kernel_messages.is_empty() {
        let n = e.kernel_messages.len();
        let line = tn!(
            "kernel log: {n} TSC or clocksource message (-v explains them)",
            "kernel log: {n} TSC or clocksource messages (-v explains them)",
            n,
            n = n
        );
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// One row per clock: read cost, average loop, p99, backward steps.
fn write_clocks(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    writeln!(out, "{}", t!("Clocks ({measured}; ns)", measured = measured_time(r)))?;
    let heads = [t!("clock"), t!("read cost"), t!("avg loop"), "p99", t!("backward")];
    // Each column as wide as its heading in this language, at least as in English.
    let widths = [5, 10, 9, 7, 9];
    let w: Vec<usize> = heads.iter().zip(widths).map(|(h, w)| display_width(h).max(w)).collect();
    let name_w = r
        .clocks
        .iter()
        .map(|c| display_width(&c.name))
        .max()
        .unwrap_or(0)
        .max(w[0]);
    let cols = [name_w, w[1], w[2], w[3], w[4]];
    writeln!(
        out,
        "  {} {} {} {} {}",
        pad_right(heads[0], cols[0]),
        pad_left(heads[1], cols[1]),
        pad_left(heads[2], cols[2]),
        pad_left(heads[3], cols[3]),
        pad_left(heads[4], cols[4])
    )?;
    for c in &r.clocks {
        writeln!(out, "{}", clock_row(c, &cols))?;
    }
    super::text::write_skipped_and_names(out, r, name_w)?;
    let legend =
        t!("read cost = per read, interference gaps taken out; avg loop = with them; backward = backward steps");
    writeln!(out, "  {legend}")?;
    writeln!(out, "  {}", super::text::interference_words(r))
}

/// One clock's row, in the columns `cols` (name, read cost, average loop, p99, backward steps).
fn clock_row(c: &ClockStats, cols: &[usize; 5]) -> String {
    format!(
        "  {} {} {} {} {}{}",
        pad_right(&esc(&c.name), cols[0]),
        pad_left(&num(c.read_cost_ns, 2), cols[1]),
        pad_left(&num(c.avg_loop_ns, 2), cols[2]),
        pad_left(&c.percentiles_ns.p99.to_string(), cols[3]),
        pad_left(&c.backward_steps.to_string(), cols[4]),
        if c.interrupted { t!("  (interrupted)") } else { "" }
    )
}

/// One labelled item of the verdict, wrapped under its findings' column.
fn item(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    let indent = " ".repeat(2 + LABEL_W + 1);
    for (i, line) in wrap(&esc(text), &indent, REPORT_COLUMNS).into_iter().enumerate() {
        if i == 0 {
            writeln!(out, "  {} {}", pad_right(label, LABEL_W), line.trim_start())?;
        } else {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The verdict: status and headline, the one recommendation, the problems.
fn write_verdict(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let v = &r.verdict;
    let local = v.text();
    let verdict = t!(
        "Verdict: {status}. {headline}",
        status = status_word(v.status),
        headline = esc(&v.headline)
    );
    writeln!(out, "{verdict}")?;
    if let Some(n) = &local.interference_note {
        item(out, t!("interference"), n)?;
    }
    if let Some(rec) = &v.recommendation {
        item(out, t!("recommendation"), rec)?;
    }
    super::write_problems(out, &local.problems, item)
}

/// `label` (padded to `label_w` columns) and `text` wrapped at word
/// boundaries to the report's width: never cut.
fn brief_item(label: &str, label_w: usize, text: &str) -> Vec<String> {
    let line = format!("{}{text}", pad_right(label, label_w));
    fit_line(&line, REPORT_COLUMNS)
        .into_iter()
        .map(|l| l.into_owned())
        .collect()
}

/// `check --brief`: at most [`BRIEF_MAX_LINES`] whole lines to paste in a
/// ticket: the header, the CPU, the clocksource, each clock's read cost, the
/// verdict and the one recommendation for this host (else the first
/// problem). Composed, never truncated: when the pieces need more lines, the
/// least needed ones (read costs, then the clocksource, then the CPU) are
/// left out whole.
pub fn write_brief(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let v = &r.verdict;
    let header = [crate::report::text::header_line(&r.stamp)];
    let costs: Vec<String> = r
        .clocks
        .iter()
        .map(|c| format!("{} {} ns", esc(&c.name), num(c.read_cost_ns, 1)))
        .collect();
    let costs = if costs.is_empty() {
        t!("none measured").to_string()
    } else {
        costs.join(", ")
    };
    let labels = [
        t!("verdict"),
        t!("recommend"),
        t!("CPU"),
        t!("clocksource"),
        t!("read cost"),
    ];
    // The text column after the widest label in this language (13 in English).
    let label_w = labels.iter().map(|l| display_width(l) + 1).max().unwrap_or(0).max(13);
    let item = |i: usize, text: &str| brief_item(labels[i], label_w, text);
    let headline = t!(
        "{status}. {headline}",
        status = status_word(v.status),
        headline = esc(&v.headline)
    );
    let verdict = item(0, &headline);
    let rec = v
        .recommendation
        .clone()
        .or_else(|| v.text().problems.first().cloned())
        .unwrap_or_else(|| t!("none").to_string());
    let rec = item(1, &esc(&rec));
    // Most needed first; the optional ones are left out from the end.
    let optional = [item(2, &cpu_words(r)), item(3, &clocksource_words(r)), item(4, &costs)];
    let mut keep = optional.len();
    let needed = |k: usize| 1 + optional[..k].iter().map(Vec::len).sum::<usize>() + verdict.len() + rec.len();
    while keep > 0 && needed(keep) > BRIEF_MAX_LINES {
        keep -= 1;
    }
    let lines = header
        .iter()
        .chain(optional[..keep].iter().flatten())
        .chain(verdict.iter())
        .chain(rec.iter());
    for l in lines.take(BRIEF_MAX_LINES) {
        writeln!(out, "{l}")?;
    }
    Ok(())
}
