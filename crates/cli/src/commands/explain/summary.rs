//! The one-screen text of `clockscope explain` (the default; `--verbose`
//! prints [`super::text`]): the server and query, one row per clock source
//! (TIMING OFF, then one estimate: the slowdown and the overhead per row
//! with their interval, or why it is not stated; the prediction), the A/A
//! control and the order of the runs, the TSC prediction, the recommended
//! setting changes and the warnings.

use crate::i18n::{num, pad_left, pad_right};
use crate::t;
use clockscope_explain::report::{Resolution, SourceResult};
use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes the summary (every line fitted to 100 columns).
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    writeln!(out, "{}", t!("EXPLAIN ANALYZE timing overhead"))?;
    let server = t!(
        "Server:   PostgreSQL {version} at {server}",
        version = r.server_version,
        server = r.server
    );
    writeln!(out, "{server}")?;
    let query = t!(
        "Query:    {query} ({rows} rows)",
        query = clockscope_system::escape::escape_untrusted(&clockscope_explain::error::one_line(&r.query)),
        rows = super::text::thousands(r.rows)
    );
    writeln!(out, "{query}")?;
    writeln!(out)?;
    let heads = [
        t!("clock source"),
        "TIMING OFF",
        t!("slowdown"),
        t!("95% interval"),
        t!("per row"),
        t!("95% interval"),
        t!("predicted"),
    ];
    let w = columns(&heads);
    let mut line = pad_right(heads[0], w[0]);
    for (h, w) in heads.iter().zip(w).skip(1) {
        line.push(' ');
        line.push_str(&pad_left(h, w));
    }
    writeln!(out, "{line}")?;
    for s in &r.clock_sources {
        write_row(out, s, &w)?;
    }
    for k in &r.skipped_clock_sources {
        let why = t!("not measured: {reason}", reason = k.reason);
        writeln!(out, "{} {why}", pad_right(&k.clock_source, w[0]))?;
    }
    write_control(out, r)?;
    if let Some(t) = &r.tsc_prediction {
        writeln!(out)?;
        let scaled = t.scaled_slowdown.map_or_else(
            || t!("{clock} not resolved, so not scaled", clock = t.from_clock_source),
            |x| {
                t!(
                    "{x}x scaled by {clock}'s observed / predicted",
                    x = num(x, 2),
                    clock = t.from_clock_source
                )
            },
        );
        let line = if r.server_version_num < clockscope_explain::measure::PG19_VERSION_NUM {
            t!(
                "With PostgreSQL 19's timing_clock_source = tsc: about {x}x predicted ({scaled})",
                x = num(t.predicted_slowdown, 2),
                scaled = scaled
            )
        } else {
            t!(
                "With timing_clock_source = tsc: about {x}x predicted ({scaled})",
                x = num(t.predicted_slowdown, 2),
                scaled = scaled
            )
        };
        writeln!(out, "{line}")?;
        writeln!(out, "  {}", super::words::used_by(t, r.server_version_num))?;
    }
    writeln!(out)?;
    write_recommendation(out, r)?;
    for w in &r.warnings {
        writeln!(out, "{}", t!("warning: {warning}", warning = warning_text(r, w)))?;
    }
    writeln!(
        out,
        "{}",
        t!("Settings, runs, model, machine and every timing setting: clockscope explain --verbose")
    )
}

/// A warning of the report in the reader's language where it is a source's
/// unstated estimate (as the crate words that warning); any other as the
/// crate words it.
pub(super) fn warning_text(r: &Report, w: &str) -> String {
    r.clock_sources
        .iter()
        .find(|s| *w == format!("{}: {}", s.clock_source, s.result_reason))
        .map_or_else(
            || crate::i18n::library::reason(w),
            |s| format!("{}: {}", s.clock_source, super::words::result_reason(s)),
        )
}

/// The table's column widths: each as wide as its heading in this
/// language, at least as in English.
fn columns(heads: &[&str; 7]) -> [usize; 7] {
    let mut w = [12, 12, 9, 17, 9, 18, 10];
    for (w, h) in w.iter_mut().zip(heads) {
        *w = (*w).max(textwrap::core::display_width(h));
    }
    w
}

/// One clock source's row: TIMING OFF, then the estimate with its
/// interval when it is stated, else why not (the estimate is in
/// `--verbose` and the JSON, labelled).
fn write_row(out: &mut dyn Write, s: &SourceResult, w: &[usize; 7]) -> io::Result<()> {
    let predicted = s
        .predicted_slowdown
        .map_or("-".to_string(), |p| format!("{}x", num(p, 2)));
    let off = format!("{} {}", pad_left(&num(s.timing_off_ms, 3), w[1] - 3), t!("ms"));
    if s.result != Resolution::Resolved {
        let why = t!(
            "{reason}; predicted {predicted}",
            reason = super::words::result_reason(s),
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

/// The A/A control of each source and the order of the runs.
fn write_control(out: &mut dyn Write, r: &Report) -> io::Result<()> {
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
    writeln!(out, "{}", t!("Order: {order}", order = super::words::order(&r.order)))
}

/// The settings to change (exact `ALTER SYSTEM` lines), or that none is.
fn write_recommendation(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let recs: Vec<_> = r
        .timing_settings
        .settings
        .iter()
        .filter_map(|s| s.recommendation.as_ref())
        .collect();
    if recs.is_empty() {
        return writeln!(
            out,
            "{}",
            t!("Recommendation: no change to the server's timing settings.")
        );
    }
    writeln!(
        out,
        "{}",
        t!("Recommendation (clockscope changed nothing; run as a superuser):")
    )?;
    for rec in &recs {
        writeln!(out, "  {}  -- {}", rec.alter_system, rec.reason)?;
    }
    if recs.iter().any(|rec| rec.then.is_some()) {
        writeln!(out, "  SELECT pg_reload_conf();")?;
    }
    if recs.iter().any(|rec| rec.needs_restart) {
        writeln!(
            out,
            "{}",
            t!("  then restart the server for those that need it (--verbose names them)")
        )?;
    }
    Ok(())
}
