//! The one-screen text of `clockscope explain` (the default; `--verbose`
//! prints [`super::text`]): the server and query, one row per clock source
//! (TIMING OFF, then one estimate: the slowdown and the overhead per row
//! with their interval, or why it is not stated; the prediction), the A/A
//! control and the order of the runs, the TSC prediction, the recommended
//! setting changes and the warnings.

use clockscope_explain::report::{Resolution, SourceResult};
use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes the summary (every line fitted to 100 columns).
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    writeln!(out, "EXPLAIN ANALYZE timing overhead")?;
    writeln!(out, "Server:   PostgreSQL {} at {}", r.server_version, r.server)?;
    writeln!(
        out,
        "Query:    {} ({} rows)",
        clockscope_system::escape::escape_untrusted(&clockscope_explain::error::one_line(&r.query)),
        super::text::thousands(r.rows)
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<12} {:>12} {:>9} {:>17} {:>9} {:>18} {:>10}",
        "clock source", "TIMING OFF", "slowdown", "95% interval", "per row", "95% interval", "predicted"
    )?;
    for s in &r.clock_sources {
        write_row(out, s)?;
    }
    for k in &r.skipped_clock_sources {
        writeln!(out, "{:<12} not measured: {}", k.clock_source, k.reason)?;
    }
    write_control(out, r)?;
    if let Some(t) = &r.tsc_prediction {
        writeln!(out)?;
        let scaled = t.scaled_slowdown.map_or_else(
            || format!("{} not resolved, so not scaled", t.from_clock_source),
            |x| format!("{x:.2}x scaled by {}'s observed / predicted", t.from_clock_source),
        );
        let lead = if r.server_version_num < clockscope_explain::measure::PG19_VERSION_NUM {
            "With PostgreSQL 19's timing_clock_source = tsc"
        } else {
            "With timing_clock_source = tsc"
        };
        writeln!(out, "{lead}: about {:.2}x predicted ({scaled})", t.predicted_slowdown)?;
        writeln!(out, "  {}", t.used_by)?;
    }
    writeln!(out)?;
    write_recommendation(out, r)?;
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(
        out,
        "Settings, runs, model, machine and every timing setting: clockscope explain --verbose"
    )
}

/// One clock source's row: TIMING OFF, then the estimate with its
/// interval when it is stated, else why not (the estimate is in
/// `--verbose` and the JSON, labelled).
fn write_row(out: &mut dyn Write, s: &SourceResult) -> io::Result<()> {
    let predicted = s.predicted_slowdown.map_or("-".to_string(), |p| format!("{p:.2}x"));
    if s.result != Resolution::Resolved {
        return writeln!(
            out,
            "{:<12} {:>9.3} ms {}; predicted {predicted}",
            s.clock_source, s.timing_off_ms, s.result_reason
        );
    }
    let pair = |lo: Option<f64>, hi: Option<f64>, unit: &str| match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{lo:.2}{unit} to {hi:.2}{unit}"),
        _ => "-".to_string(),
    };
    writeln!(
        out,
        "{:<12} {:>9.3} ms {:>8.2}x {:>17} {:>6.2} ns {:>18} {:>10}",
        s.clock_source,
        s.timing_off_ms,
        s.slowdown,
        pair(s.slowdown_low, s.slowdown_high, "x"),
        s.overhead_per_row_ns,
        pair(s.overhead_per_row_low_ns, s.overhead_per_row_high_ns, "") + " ns",
        predicted
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
                (Some(lo), Some(hi)) => format!(
                    "{} {lo:.2}x to {hi:.2}x ({} of {} blocks)",
                    s.clock_source,
                    if c.extent == "range" { "range" } else { "95% interval" },
                    c.blocks
                ),
                _ => format!("{} none completed", s.clock_source),
            }
        })
        .collect();
    if !controls.is_empty() {
        writeln!(
            out,
            "A/A control (TIMING OFF against TIMING OFF): {}",
            controls.join("; ")
        )?;
    }
    writeln!(out, "Order: {}", r.order)
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
        return writeln!(out, "Recommendation: no change to the server's timing settings.");
    }
    writeln!(out, "Recommendation (clockscope changed nothing; run as a superuser):")?;
    for rec in &recs {
        writeln!(out, "  {}  -- {}", rec.alter_system, rec.reason)?;
    }
    if recs.iter().any(|rec| rec.then.is_some()) {
        writeln!(out, "  SELECT pg_reload_conf();")?;
    }
    if recs.iter().any(|rec| rec.needs_restart) {
        writeln!(
            out,
            "  then restart the server for those that need it (--verbose names them)"
        )?;
    }
    Ok(())
}
