//! The verdict at both levels: the status with its headline, the
//! interference note, the recommendation and the problems; the full report
//! adds PostgreSQL's and clockscope's rules, the EXPLAIN ANALYZE prediction,
//! the advice on the timing settings and PostgreSQL 19's `auto` choice.

use super::{status_word, Detail};
use crate::commands::check::model::verdict::ExplainPrediction;
use crate::commands::check::model::CheckReport;
use crate::i18n::{num, pad_right};
use crate::report::fit::{wrap, REPORT_COLUMNS};
use crate::t;
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};

/// Column of the one screen's findings (after a two-space indent and the label).
const SCREEN_LABEL_W: usize = 15;

/// Column of the full report's findings.
const FULL_LABEL_W: usize = 24;

/// Writes the verdict at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &CheckReport, detail: Detail) -> io::Result<()> {
    let model = &r.verdict;
    // The sentences in the report's language.
    let v = model.text();
    let (headline, item): (&str, Item) = match detail {
        Detail::Screen => (&model.headline, screen_item),
        Detail::Full => (&v.summary, full_item),
    };
    let verdict = t!(
        "Verdict: {status}. {headline}",
        status = status_word(v.status),
        headline = esc(headline)
    );
    writeln!(out, "{verdict}")?;
    if detail == Detail::Full {
        if let Some(p) = &v.postgresql_rule {
            item(
                out,
                t!("PostgreSQL's rule"),
                &format!("{}: {}", pass(p.passed), p.detail),
            )?;
        }
    }
    if let Some(n) = &v.interference_note {
        match detail {
            Detail::Screen => item(out, t!("interference"), n)?,
            // Wrapped under the findings' column: it is long and says why the status is not BAD.
            Detail::Full => {
                for line in wrap(n, "", REPORT_COLUMNS - 27) {
                    item(out, "", &line)?;
                }
            }
        }
    }
    let recommendation = match detail {
        Detail::Screen => &model.recommendation,
        Detail::Full => {
            write_rules_and_advice(out, r)?;
            &v.timing_clock_source_recommendation
        }
    };
    if let Some(rec) = recommendation {
        item(out, t!("recommendation"), rec)?;
    }
    crate::commands::check::write_problems(out, &v.problems, item)
}

/// A verdict line's writer: its label and its finding.
type Item = fn(&mut dyn Write, &str, &str) -> io::Result<()>;

/// One labelled item of the one screen's verdict, wrapped under its findings' column.
fn screen_item(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    let indent = " ".repeat(2 + SCREEN_LABEL_W + 1);
    for (i, line) in wrap(&esc(text), &indent, REPORT_COLUMNS).into_iter().enumerate() {
        if i == 0 {
            writeln!(out, "  {} {}", pad_right(label, SCREEN_LABEL_W), line.trim_start())?;
        } else {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// One line of the full verdict: a label in one column, then the finding
/// (which may quote the kernel: a clocksource name).
fn full_item(out: &mut dyn Write, label: &str, text: &str) -> io::Result<()> {
    writeln!(out, "  {} {}", pad_right(label, FULL_LABEL_W), esc(text))
}

/// The full verdict's middle: clockscope's rule, the EXPLAIN ANALYZE
/// prediction, the timing settings' advice and PostgreSQL 19's `auto`.
fn write_rules_and_advice(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let v = r.verdict.text();
    if let Some(m) = &v.modern_rule {
        full_item(
            out,
            t!("clockscope's rule"),
            &format!("{}: {}", pass(m.passed), m.detail),
        )?;
    }
    write_explain(out, r)?;
    for (name, advice) in [
        ("track_io_timing", &v.track_io_timing),
        ("track_wal_io_timing", &v.track_wal_io_timing),
        ("auto_explain.log_timing", &v.auto_explain_log_timing),
    ] {
        if let Some(a) = advice {
            full_item(out, name, &format!("{}: {}", advice_word(a.word()), a.why))?;
        }
    }
    if let Some(p) = &v.postgresql19_auto_picks {
        full_item(
            out,
            "PostgreSQL 19",
            &t!("timing_clock_source=auto picks '{value}' here", value = p),
        )?;
    }
    Ok(())
}

fn pass(b: bool) -> &'static str {
    if b {
        t!("pass")
    } else {
        t!("FAIL")
    }
}

/// The EXPLAIN ANALYZE lines of the verdict: the baseline, then each
/// clock's prediction with its slowdown.
fn write_explain(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let v = &r.verdict;
    if v.explain_system.is_some() || v.explain_tsc.is_some() {
        let baseline = if v.baseline_is_example {
            t!("example baseline, measured elsewhere")
        } else {
            t!("your baseline")
        };
        let line = t!(
            "{baseline}: {ns} ns/row with TIMING OFF ({source})",
            baseline = baseline,
            ns = num(v.baseline_row_ns, 2),
            source = crate::i18n::library::reason(&v.baseline_source)
        );
        full_item(out, "EXPLAIN ANALYZE", &line)?;
    }
    if let Some(p) = &v.explain_system {
        full_item(out, "", &prediction_line(p))?;
        if let Some(line) = slowdown_line(p, v.baseline_is_example) {
            full_item(out, "", &format!("  {line}"))?;
        }
    }
    if let Some(p) = &v.explain_tsc {
        let who = if p.used_by_postgresql {
            t!("PostgreSQL 19 fast read")
        } else {
            t!("not read by PostgreSQL 19 here")
        };
        full_item(out, "", &format!("{who}, {}", prediction_line(p)))?;
        if let Some(line) = slowdown_line(p, v.baseline_is_example) {
            full_item(out, "", &format!("  {line}"))?;
        }
    }
    Ok(())
}

/// The headline: ns TIMING ON adds per row per timed plan node in the
/// instrumentation model, with its interval, or why there is none; the
/// back-to-back read cost beside it for comparison.
fn prediction_line(p: &ExplainPrediction) -> String {
    t!(
        "{clock}: {per_row}; back to back 2 x {ns} ns",
        clock = esc(&p.clock),
        per_row = p.per_row_text(),
        ns = num(p.per_read_ns, 1)
    )
}

/// The slowdown at the baseline, labelled an example unless it was
/// measured; `None` without a prediction.
fn slowdown_line(p: &ExplainPrediction, example: bool) -> Option<String> {
    let (on, x) = (p.count_timing_on_ms?, p.slowdown?);
    let interval = match (p.slowdown_low, p.slowdown_high) {
        (Some(lo), Some(hi)) => t!(", 95% interval {low}x to {high}x", low = num(lo, 3), high = num(hi, 3)),
        _ => String::new(),
    };
    let line = t!(
        "count(*) of 1M rows {off} ms -> {on} ms ({x}x{interval})",
        off = num(p.count_timing_off_ms, 1),
        on = num(on, 1),
        x = num(x, 2),
        interval = interval
    );
    Some(if example {
        t!("example: {line}", line = line)
    } else {
        line
    })
}

/// An advice's word ([`Advice::word`](crate::commands::check::model::verdict::Advice::word)) in the report's language.
fn advice_word(word: &'static str) -> &'static str {
    match word {
        "safe" => t!("safe"),
        "costly" => t!("costly"),
        "NOT safe" => t!("NOT safe"),
        "not resolved" => t!("not resolved"),
        "not priced" => t!("not priced"),
        "cheap" => t!("cheap"),
        other => other,
    }
}
