//! The clock sources at both levels. The one screen gives each source a row
//! of one table (TIMING OFF, then one estimate: the slowdown and the
//! overhead per row with their interval, or why it is not stated; the
//! prediction), then every source's A/A control and the order of the runs.
//! The full report gives each source a block: its runs, the block slowdown
//! and its interval, the A/A control, the overheads per row and per clock
//! read, and the prediction against them; for `--query`, the nodes that pay
//! most.

use super::{opt, thousands, value, Detail};
use crate::commands::explain::words;
use crate::i18n::{num, pad_left, pad_right};
use crate::report::text::{head_widths, table_row, write_line};
use crate::{t, tn};
use clockscope_explain::report::{QueryBreakdown, Resolution, SourceResult};
use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes the clock sources at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &Report, detail: Detail) -> io::Result<()> {
    match detail {
        Detail::Screen => write_table(out, r),
        Detail::Full => write_blocks(out, r),
    }
}

/// The one screen's table, one row per source (a skipped source's says
/// why), the A/A control of each source and the order of the runs.
fn write_table(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let heads = [
        t!("clock source"),
        "TIMING OFF",
        t!("slowdown"),
        t!("95% interval"),
        t!("per row"),
        t!("95% interval"),
        t!("predicted"),
    ];
    // Each as wide as its heading in this language, at least as in English.
    let w = head_widths(&heads, &[12, 12, 9, 17, 9, 18, 10]);
    writeln!(out, "{}", table_row(heads[0], &heads[1..], &w))?;
    for s in &r.clock_sources {
        write_row(out, s, &w)?;
    }
    for k in &r.skipped_clock_sources {
        let why = t!("not measured: {reason}", reason = k.reason);
        writeln!(out, "{} {why}", pad_right(&k.clock_source, w[0]))?;
    }
    write_controls(out, r)
}

/// The full report's block of each source, the `--query` breakdown and the
/// sources not measured.
fn write_blocks(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    for s in &r.clock_sources {
        write_source(out, s)?;
    }
    if let Some(q) = &r.query_breakdown {
        write_query_breakdown(out, q)?;
    }
    for k in &r.skipped_clock_sources {
        writeln!(out)?;
        let line = t!(
            "Clock source: {clock} not measured: {reason}",
            clock = k.clock_source,
            reason = k.reason
        );
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// One clock source's row: TIMING OFF, then the estimate with its
/// interval when it is stated, else why not (the estimate is in
/// `--verbose` and the JSON, labelled).
fn write_row(out: &mut dyn Write, s: &SourceResult, w: &[usize]) -> io::Result<()> {
    let predicted = s
        .predicted_slowdown
        .map_or("-".to_string(), |p| format!("{}x", num(p, 2)));
    let off = format!("{} {}", pad_left(&num(s.timing_off_ms, 3), w[1] - 3), t!("ms"));
    if s.result != Resolution::Resolved {
        let why = t!(
            "{reason}; predicted {predicted}",
            reason = words::result_reason(s),
            predicted = predicted
        );
        return writeln!(out, "{} {off} {why}", pad_right(&s.clock_source, w[0]));
    }
    let pair = |lo: Option<f64>, hi: Option<f64>, unit: &str| match (lo, hi) {
        (Some(lo), Some(hi)) => t!(
            "{low}{unit} to {high}{unit}",
            low = num(lo, 2),
            unit = unit,
            high = num(hi, 2)
        ),
        _ => "-".to_string(),
    };
    let ns = t!("ns");
    writeln!(
        out,
        "{} {off} {}x {} {} {ns} {} {}",
        pad_right(&s.clock_source, w[0]),
        pad_left(&num(s.slowdown, 2), w[2] - 1),
        pad_left(&pair(s.slowdown_low, s.slowdown_high, "x"), w[3]),
        pad_left(&num(s.overhead_per_row_ns, 2), w[4] - 3),
        pad_left(
            &format!(
                "{} {ns}",
                pair(s.overhead_per_row_low_ns, s.overhead_per_row_high_ns, "")
            ),
            w[5]
        ),
        pad_left(&predicted, w[6])
    )
}

/// The one screen's A/A control of each source and the order of the runs.
fn write_controls(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let controls: Vec<String> = r
        .clock_sources
        .iter()
        .map(|s| {
            let c = &s.control;
            match (c.low, c.high) {
                (Some(lo), Some(hi)) => crate::tn!(
                    "{clock} {low}x to {high}x ({extent} of {blocks} blocks)",
                    "{clock} {low}x to {high}x ({extent} of {blocks} blocks)",
                    c.blocks,
                    clock = s.clock_source,
                    low = num(lo, 2),
                    high = num(hi, 2),
                    extent = if c.extent == "range" {
                        t!("range")
                    } else {
                        t!("95% interval")
                    },
                    blocks = c.blocks
                ),
                _ => t!("{clock} none completed", clock = s.clock_source),
            }
        })
        .collect();
    if !controls.is_empty() {
        let line = t!(
            "A/A control (TIMING OFF against TIMING OFF): {controls}",
            controls = controls.join("; ")
        );
        writeln!(out, "{line}")?;
    }
    writeln!(out, "{}", t!("Order: {order}", order = words::order(&r.order)))
}

/// `4.80x`, right-aligned in `w` columns.
fn times(v: f64, w: usize) -> String {
    pad_left(&format!("{}x", num(v, 2)), w)
}

/// ` ns` in the report's language (a unit after a number).
fn ns_unit() -> String {
    format!(" {}", t!("ns"))
}

/// The labels of a clock source's block, one column (28 in English).
fn source_labels() -> [&'static str; 15] {
    [
        "TIMING OFF",
        "TIMING ON",
        t!("block slowdown"),
        t!("95% interval of the median"),
        t!("A/A control"),
        t!("result"),
        t!("overhead per row"),
        t!("overhead per clock read"),
        t!("predicted per clock read"),
        t!("predicted overhead per row"),
        t!("predicted TIMING ON"),
        t!("predicted slowdown"),
        t!("observed / predicted"),
        t!("paired in time"),
        t!("observed / back-to-back"),
    ]
}

/// `  label  rest`: a row of a clock source's block.
fn row(out: &mut dyn Write, label: &str, rest: &str) -> io::Result<()> {
    let w = crate::report::text::column_width(source_labels(), 2, 28);
    writeln!(out, "  {} {rest}", pad_right(label, w))
}

/// One clock source's runs, overheads and prediction.
fn write_source(out: &mut dyn Write, s: &clockscope_explain::report::SourceResult) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{}",
        t!("Clock source: {clock} ({how})", clock = s.clock_source, how = s.how)
    )?;
    let head = [t!("median"), t!("min"), t!("max")].map(|h| pad_left(h, 12)).join(" ");
    row(out, "", &head)?;
    let ms = t!("ms");
    let three = |a: f64, b: f64, c: f64| [a, b, c].map(|v| value(v, 3, 9, ms)).join(" ");
    row(
        out,
        "TIMING OFF",
        &three(s.timing_off_ms, s.timing_off_ms_min, s.timing_off_ms_max),
    )?;
    row(
        out,
        "TIMING ON",
        &three(s.timing_on_ms, s.timing_on_ms_min, s.timing_on_ms_max),
    )?;
    let n = &s.noise;
    let blocks = tn!(
        "ON/OFF of each block of two pairs, {blocks} blocks of {pairs} pairs",
        "ON/OFF of each block of two pairs, {blocks} blocks of {pairs} pairs",
        n.blocks,
        blocks = n.blocks,
        pairs = n.pairs
    );
    let slowdowns = [n.slowdown_median, n.slowdown_min, n.slowdown_max].map(|v| times(v, 12));
    row(
        out,
        t!("block slowdown"),
        &format!("{}   {blocks}", slowdowns.join(" ")),
    )?;
    let interval = match (n.slowdown_ci_low, n.slowdown_ci_high, n.slowdown_ci_half_width) {
        (Some(lo), Some(hi), Some(h)) => t!(
            "{low}x to {high}x (+-{pct}%)",
            low = num(lo, 2),
            high = num(hi, 2),
            pct = num(h * 100.0, 1)
        ),
        _ => t!("none (fewer than 6 blocks)").into(),
    };
    let stopped = match n.stopped_by {
        clockscope_explain::measure::StopReason::Precision => t!("target +-5% reached"),
        clockscope_explain::measure::StopReason::MaxTime => t!("target +-5% missed: --max-time"),
        clockscope_explain::measure::StopReason::MaxRuns => t!("target +-5% missed in 1000 pairs"),
        clockscope_explain::measure::StopReason::Interrupted => t!("interrupted"),
    };
    row(out, t!("95% interval of the median"), &format!("{interval}; {stopped}"))?;
    write_control(out, &s.control)?;
    row(out, t!("result"), &words::result_reason(s))?;
    let ns = t!("ns");
    let per_row = t!(
        "(slowdown - 1) x TIMING OFF / rows{interval}",
        interval = interval_text(s.overhead_per_row_low_ns, s.overhead_per_row_high_ns, &ns_unit())
    );
    row(
        out,
        t!("overhead per row"),
        &format!("{}   {per_row}", value(s.overhead_per_row_ns, 2, 9, ns)),
    )?;
    let per_read = t!(
        "(slowdown - 1) x TIMING OFF / clock reads{interval}",
        interval = interval_text(s.overhead_per_read_low_ns, s.overhead_per_read_high_ns, &ns_unit())
    );
    row(
        out,
        t!("overhead per clock read"),
        &format!("{}   {per_read}", value(s.overhead_per_read_ns, 2, 9, ns)),
    )?;
    write_prediction(out, s)
}

/// One clock source's prediction, observed / predicted and the old model.
fn write_prediction(out: &mut dyn Write, s: &clockscope_explain::report::SourceResult) -> io::Result<()> {
    let clock = s.predicted_clock.as_deref().unwrap_or(t!("none"));
    let label = t!("predicted per clock read");
    match s.predicted_per_read_ns {
        Some(p) => {
            let what = t!("this machine's {clock} in the instrumentation model", clock = clock);
            row(out, label, &format!("{}   {what}", value(p, 2, 9, t!("ns"))))?;
        }
        None => row(
            out,
            label,
            &format!("{}   {}", pad_left(t!("none"), 12), s.prediction_status),
        )?,
    }
    let interval = interval_text(
        s.predicted_overhead_per_row_low_ns,
        s.predicted_overhead_per_row_high_ns,
        &ns_unit(),
    );
    let what = t!(
        "{reads} reads per row x predicted per read{interval}",
        reads = num(s.clock_reads_per_row, 3),
        interval = interval
    );
    let cell = pad_left(&opt(s.predicted_overhead_per_row_ns, 2, &ns_unit()), 12);
    row(out, t!("predicted overhead per row"), &format!("{cell}   {what}"))?;
    let cell = pad_left(&opt(s.predicted_timing_on_ms, 3, &format!(" {}", t!("ms"))), 12);
    let what = t!("OFF + predicted overhead");
    row(out, t!("predicted TIMING ON"), &format!("{cell}   {what}"))?;
    row(
        out,
        t!("predicted slowdown"),
        &pad_left(&opt(s.predicted_slowdown, 2, "x"), 12),
    )?;
    let what = t!(
        "overhead per clock read / predicted per read{interval}",
        interval = interval_text(s.observed_over_predicted_low, s.observed_over_predicted_high, "")
    );
    let cell = pad_left(&opt(s.observed_over_predicted, 2, ""), 12);
    row(out, t!("observed / predicted"), &format!("{cell}   {what}"))?;
    if let Some(p) = &s.paired_in_time {
        write_paired_in_time(out, p)?;
    }
    let what = t!(
        "old model, for comparison: loop time {ns} per read",
        ns = opt(s.back_to_back_per_read_ns, 2, &ns_unit())
    );
    let cell = pad_left(&opt(s.back_to_back_observed_over_predicted, 2, ""), 12);
    row(out, t!("observed / back-to-back"), &format!("{cell}   {what}"))
}

/// " (95% interval 1.00 to 2.00 ns)", or nothing without one.
fn interval_text(low: Option<f64>, high: Option<f64>, unit: &str) -> String {
    match (low, high) {
        (Some(lo), Some(hi)) => t!(
            " (95% interval {low} to {high}{unit})",
            low = num(lo, 2),
            high = num(hi, 2),
            unit = unit
        ),
        _ => String::new(),
    }
}

/// The A/A control: TIMING OFF against TIMING OFF in the same schedule.
fn write_control(out: &mut dyn Write, c: &clockscope_explain::report::AaControl) -> io::Result<()> {
    let extent = match (c.median, c.low, c.high) {
        (Some(m), Some(lo), Some(hi)) if c.extent == "range" => t!(
            "{median}x, range {low}x to {high}x (fewer than 6 blocks: no interval)",
            median = num(m, 2),
            low = num(lo, 2),
            high = num(hi, 2)
        ),
        (Some(m), Some(lo), Some(hi)) => t!(
            "{median}x, 95% interval {low}x to {high}x",
            median = num(m, 2),
            low = num(lo, 2),
            high = num(hi, 2)
        ),
        _ => t!("none completed").to_string(),
    };
    let line = tn!(
        "{extent}; TIMING OFF against TIMING OFF, {blocks} blocks of {pairs} pairs",
        "{extent}; TIMING OFF against TIMING OFF, {blocks} blocks of {pairs} pairs",
        c.blocks,
        extent = extent,
        blocks = c.blocks,
        pairs = c.pairs
    );
    row(out, t!("A/A control"), &line)
}

/// observed / predicted pair by pair, with its interval when there is one.
fn write_paired_in_time(out: &mut dyn Write, p: &clockscope_explain::report::PairedInTime) -> io::Result<()> {
    let interval = match (p.low, p.high) {
        (Some(low), Some(high)) => t!("95% interval {low}-{high}, ", low = num(low, 2), high = num(high, 2)),
        _ => String::new(),
    };
    let what = tn!(
        "each block against the model slices just before its pairs ({interval}{n} blocks)",
        "each block against the model slices just before its pairs ({interval}{n} blocks)",
        p.pairs,
        interval = interval,
        n = p.pairs
    );
    let cell = pad_left(&num(p.observed_over_predicted, 2), 12);
    row(out, &format!("  {}", t!("paired in time")), &format!("{cell}   {what}"))
}

/// Nodes shown in the text (all are in the JSON).
const SHOWN_NODES: usize = 5;

/// `--query`: the nodes that pay most, and what auto_explain.log_timing costs.
fn write_query_breakdown(out: &mut dyn Write, q: &QueryBreakdown) -> io::Result<()> {
    writeln!(out)?;
    let head = t!(
        "Where the {ms} ms go ({clock}; shared by clock reads = 2 x (rows x loops + loops)):",
        ms = num(q.added_ms, 3),
        clock = q.clock_source
    );
    writeln!(out, "{head}")?;
    let name_w = 36.max(textwrap::core::display_width(t!("node")));
    writeln!(
        out,
        "  {} {} {} {}",
        pad_right(t!("node"), name_w),
        pad_left(t!("clock reads"), 13),
        pad_left(t!("added"), 10),
        pad_left(t!("of own time"), 13)
    )?;
    let mut by_cost: Vec<&clockscope_explain::nodes::NodeCost> = q.nodes.iter().collect();
    by_cost.sort_by_key(|n| std::cmp::Reverse(n.clock_reads));
    for n in by_cost.iter().take(SHOWN_NODES) {
        let name: String = n.node.chars().take(36).collect();
        writeln!(
            out,
            "  {} {:>13} {} {:>13}",
            pad_right(&name, name_w),
            thousands(n.clock_reads),
            value(n.added_ms, 3, 7, t!("ms")),
            opt(n.added_fraction_of_own.map(|f| f * 100.0), 0, "%")
        )?;
    }
    if q.nodes.len() > SHOWN_NODES {
        let more = q.nodes.len() - SHOWN_NODES;
        let line = tn!(
            "  ... {n} more nodes in --format json",
            "  ... {n} more nodes in --format json",
            more,
            n = more
        );
        writeln!(out, "{line}")?;
    }
    let line = t!(
        "auto_explain.log_timing = on (with log_analyze = on) adds the same {ms} ms ({x}x) to each run",
        ms = num(q.auto_explain_log_timing_added_ms, 3),
        x = num(q.auto_explain_log_timing_slowdown, 2)
    );
    writeln!(out, "{line}")?;
    write_line(
        out,
        t!("  of this query it samples, logged or not; log_timing = off keeps the row counts without it."),
    )
}
