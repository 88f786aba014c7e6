//! `check --brief`: at most [`BRIEF_MAX_LINES`] whole lines to paste in a
//! ticket.

use super::environment::{clocksource_words, cpu_words};
use super::status_word;
use crate::commands::check::model::CheckReport;
use crate::i18n::{num, pad_right};
use crate::report::fit::{fit_line, REPORT_COLUMNS};
use crate::t;
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};
use textwrap::core::display_width;

/// Most lines `--brief` prints.
pub const BRIEF_MAX_LINES: usize = 8;

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
