//! The one-screen text of `clockscope explain` (the default; `--verbose`
//! prints [`super::text`]): the server and query, one row per clock source
//! (TIMING OFF and ON, the slowdown and its interval, the overhead per row,
//! the prediction), the TSC prediction, the recommended setting changes and
//! the warnings.

use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes the summary (every line fitted to 100 columns).
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    let mut fit = crate::export::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    writeln!(out, "EXPLAIN ANALYZE timing overhead")?;
    writeln!(out, "Server:   PostgreSQL {} at {}", r.server_version, r.server)?;
    writeln!(
        out,
        "Query:    {} ({} rows)",
        clockscope::escape::escape_untrusted(&clockscope_explain::error::one_line(&r.query)),
        super::text::thousands(r.rows)
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<12} {:>12} {:>12} {:>9} {:>17} {:>10} {:>10}",
        "clock source", "TIMING OFF", "TIMING ON", "slowdown", "95% interval", "per row", "predicted"
    )?;
    for s in &r.clock_sources {
        let n = &s.noise;
        let interval = match (n.slowdown_ci_low, n.slowdown_ci_high) {
            (Some(lo), Some(hi)) => format!("{lo:.2}x to {hi:.2}x"),
            _ => "-".to_string(),
        };
        writeln!(
            out,
            "{:<12} {:>9.3} ms {:>9.3} ms {:>8.2}x {:>17} {:>7.2} ns {:>10}",
            s.clock_source,
            s.timing_off_ms,
            s.timing_on_ms,
            n.slowdown_median,
            interval,
            s.overhead_per_row_ns,
            s.predicted_slowdown.map_or("-".to_string(), |p| format!("{p:.2}x"))
        )?;
    }
    for k in &r.skipped_clock_sources {
        writeln!(out, "{:<12} not measured: {}", k.clock_source, k.reason)?;
    }
    if let Some(t) = &r.tsc_prediction {
        writeln!(out)?;
        writeln!(
            out,
            "With timing_clock_source = tsc: about {:.2}x predicted ({:.2}x scaled by {}'s observed / predicted)",
            t.predicted_slowdown, t.scaled_slowdown, t.from_clock_source
        )?;
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
