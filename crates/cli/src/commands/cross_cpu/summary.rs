//! The one-screen text of `clockscope cross-cpu` (the default; `--verbose`
//! prints every pair's tables, [`super::write_text`]): the CPUs, the
//! counter's frequency, the answer per clock, the pairs with a problem (at
//! most [`MAX_PROBLEM_LINES`]) and the summary.

use crate::commands::cross_cpu::model::Outcome;
use crate::i18n::num;
use crate::report::stamp::Stamped;
use crate::t;
use std::io::{self, Write};

/// The most problem pairs listed; the rest are counted (`--verbose` lists all).
pub const MAX_PROBLEM_LINES: usize = 12;

/// The header line and the summary.
pub fn write_summary_text(out: &mut dyn Write, m: &Stamped<'_, Outcome>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    let o = m.report;
    let r = &o.report;
    writeln_escaped!(
        out,
        "{}{}",
        super::label(t!("CPUs tested")),
        t!(
            "{cpus} (of {allowed} allowed)",
            cpus = super::cpu_list(&r.cpus),
            allowed = super::cpu_list(&o.context.allowed)
        )
    )?;
    if let Some(note) = &o.note {
        writeln!(out)?;
        return writeln_escaped!(out, "{}", t!("Nothing to measure: {note}.", note = note));
    }
    super::write_calibration(out, o)?;
    if let Some(t) = &r.topology {
        let t = crate::i18n::library::reason(t);
        writeln_escaped!(out, "{}{t}", super::label(t!("Topology")))?;
    }
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
    writeln_escaped!(out, "{}{measured}", super::label(t!("Measured")))?;
    let answers = r.answers();
    if !answers.is_empty() {
        writeln!(out)?;
        super::answer_lines(out, &answers)?;
    }
    writeln!(out)?;
    write_problems(out, o)?;
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
        t!("Every pair's table and the column legend: clockscope cross-cpu --verbose")
    )?;
    writeln_escaped!(
        out,
        "{}",
        t!(
            "Summary: {summary}",
            summary = crate::i18n::library::cross_cpu_summary(r)
        )
    )
}

/// One line per clock of a pair with a problem (warp, offset, crossed bounds).
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
                    crate::i18n::library::reason(&c.verdict_text)
                )
            })
        })
        .collect();
    if problems.is_empty() {
        return writeln_escaped!(out, "{}", t!("Problems: none"));
    }
    writeln_escaped!(out, "{}", t!("Problems ({n} pair clock result(s))", n = problems.len()))?;
    for p in problems.iter().take(MAX_PROBLEM_LINES) {
        writeln_escaped!(out, "  {p}")?;
    }
    if problems.len() > MAX_PROBLEM_LINES {
        writeln_escaped!(
            out,
            "{}",
            t!(
                "  and {n} more (--verbose lists every pair)",
                n = problems.len() - MAX_PROBLEM_LINES
            )
        )?;
    }
    Ok(())
}
