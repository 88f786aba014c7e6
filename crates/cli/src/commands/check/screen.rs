//! The one-screen report of `clockscope check` (the default text) and its
//! `--brief` form: the header, the environment in a few lines, one row per
//! clock, the verdict with the one recommendation for this host, and the
//! problems. The full report is `-v/--verbose` ([`super::text`]).

use super::text::{measured_time, status_word};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::CheckReport;
use crate::report::fit::{fit_line, wrap, REPORT_COLUMNS};
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};

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
        "More: clockscope check -v (frequency checks, NTP, kernel log, interference, every rule)"
    )
}

/// The CPU in a few words: model, architecture, usable CPUs, hypervisor.
fn cpu_words(r: &CheckReport) -> String {
    let e = &r.environment;
    let mut cpu = format!("{} ({})", esc(e.cpu_model.as_deref().unwrap_or("unknown CPU")), e.arch);
    if let Some(n) = e.cpus {
        cpu.push_str(&format!(", {n} CPU{} usable", if n == 1 { "" } else { "s" }));
    }
    if let Some(h) = &e.hypervisor {
        cpu.push_str(&format!(", {} guest", esc(h)));
    }
    cpu
}

/// The clocksource and the CPU counter's trust in a few words.
fn clocksource_words(r: &CheckReport) -> String {
    let e = &r.environment;
    let counter = match e.counter_trusted {
        Some(true) => "; CPU counter trusted",
        Some(false) => "; CPU counter NOT trusted",
        None => "",
    };
    format!(
        "{}{counter}",
        esc(e.current_clocksource.as_deref().unwrap_or("unknown"))
    )
}

/// The environment: kernel and clocksource, CPU, counter and PostgreSQL,
/// and how many kernel-log messages `-v` explains.
fn write_environment(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    writeln!(out, "Environment")?;
    let avail = if e.available_clocksources.is_empty() {
        String::new()
    } else {
        format!(" (available: {})", esc(&e.available_clocksources.join(" ")))
    };
    writeln!(
        out,
        "  kernel {}, clocksource {}{avail}",
        esc(e.kernel_release.as_deref().unwrap_or("unknown")),
        esc(e.current_clocksource.as_deref().unwrap_or("unknown"))
    )?;
    writeln!(out, "  CPU {}", cpu_words(r))?;
    let trust = match e.counter_trusted {
        Some(true) => "trusted",
        Some(false) => "NOT trusted",
        None => "not assessed",
    };
    let khz = e.counter_frequency_khz.map_or(String::new(), |k| {
        format!(
            ", {k} kHz from {}",
            esc(e.counter_frequency_source.as_deref().unwrap_or("an unknown source"))
        )
    });
    let freq = format!("CPU counter {trust}{khz}; ");
    let installed = if e.postgresql_installed_majors.is_empty() {
        "none found in /usr/lib/postgresql".to_string()
    } else {
        let list: Vec<String> = e.postgresql_installed_majors.iter().map(u32::to_string).collect();
        format!("{} installed", list.join(", "))
    };
    writeln!(out, "  {freq}PostgreSQL {installed}")?;
    if !e.kernel_messages.is_empty() {
        let n = e.kernel_messages.len();
        writeln!(
            out,
            "  kernel log: {n} TSC or clocksource message{} (-v explains them)",
            if n == 1 { "" } else { "s" }
        )?;
    }
    Ok(())
}

/// One row per clock: read cost, average loop, p99, backward steps.
fn write_clocks(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    writeln!(out, "Clocks ({}; ns)", measured_time(r))?;
    let name_w = r.clocks.iter().map(|c| c.name.len()).max().unwrap_or(5).max(5);
    writeln!(
        out,
        "  {:<name_w$} {:>10} {:>9} {:>7} {:>9}",
        "clock", "read cost", "avg loop", "p99", "backward"
    )?;
    for c in &r.clocks {
        writeln!(out, "{}", clock_row(c, name_w))?;
    }
    super::text::write_skipped_and_names(out, r, name_w)?;
    writeln!(
        out,
        "  read cost = per read, interference gaps taken out; avg loop = with them; backward = backward steps"
    )?;
    writeln!(out, "  {}", super::text::interference_words(r))
}

/// One clock's row.
fn clock_row(c: &ClockStats, name_w: usize) -> String {
    let back = c.backward_steps.to_string();
    format!(
        "  {:<name_w$} {:>10.2} {:>9.2} {:>7} {:>9}{}",
        esc(&c.name),
        c.read_cost_ns,
        c.avg_loop_ns,
        c.percentiles_ns.p99,
        back,
        if c.interrupted { "  (interrupted)" } else { "" }
    )
}

/// One labelled item of the verdict, wrapped under its findings' column.
fn item(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    let indent = " ".repeat(2 + LABEL_W + 1);
    for (i, line) in wrap(&esc(text), &indent, REPORT_COLUMNS).into_iter().enumerate() {
        if i == 0 {
            writeln!(out, "  {label:<LABEL_W$} {}", line.trim_start())?;
        } else {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The verdict: status and headline, the one recommendation, the problems.
fn write_verdict(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let v = &r.verdict;
    writeln!(out, "Verdict: {}. {}", status_word(v.status), esc(&v.headline))?;
    if let Some(n) = &v.interference_note {
        item(out, "interference", n)?;
    }
    if let Some(rec) = &v.recommendation {
        item(out, "recommendation", rec)?;
    }
    super::write_problems(out, &v.problems, item)
}

/// `label` (13 columns) and `text` wrapped at word boundaries to the
/// report's width: never cut.
fn brief_item(label: &str, text: &str) -> Vec<String> {
    let line = format!("{label:<13}{text}");
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
        .map(|c| format!("{} {:.1} ns", esc(&c.name), c.read_cost_ns))
        .collect();
    let costs = if costs.is_empty() {
        "none measured".to_string()
    } else {
        costs.join(", ")
    };
    let verdict = brief_item("verdict", &format!("{}. {}", status_word(v.status), esc(&v.headline)));
    let rec = v
        .recommendation
        .clone()
        .or_else(|| v.problems.first().cloned())
        .unwrap_or_else(|| "none".to_string());
    let rec = brief_item("recommend", &esc(&rec));
    // Most needed first; the optional ones are left out from the end.
    let optional = [
        brief_item("CPU", &cpu_words(r)),
        brief_item("clocksource", &clocksource_words(r)),
        brief_item("read cost", &costs),
    ];
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
