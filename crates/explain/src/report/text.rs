//! The report as text, for people: `clockscope explain`'s default output.

use super::model::Report;
use crate::connect::Locality;
use crate::timing_settings::TimingSettings;
use std::io::{self, Write};

/// `1234567` -> `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn opt(v: Option<f64>, decimals: usize, unit: &str) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.decimals$}{unit}"),
        _ => "n/a".into(),
    }
}

fn locality_text(l: &Locality) -> &'static str {
    match l {
        Locality::UnixSocket => "unix socket, this machine",
        Locality::Loopback => "loopback, this machine",
        Locality::Remote => "NOT this machine",
    }
}

/// Writes the report as text.
pub fn write_text(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    // Every line fitted to 100 columns, as every clockscope text report.
    let mut fit = clockscope::fit::FitWriter::new(out);
    let out: &mut dyn Write = &mut fit;
    writeln!(out, "EXPLAIN ANALYZE timing overhead")?;
    writeln!(
        out,
        "Server:   PostgreSQL {} at {} ({})",
        r.server_version,
        r.server,
        locality_text(&r.server_locality)
    )?;
    writeln!(out, "Version:  {}", r.server_version_full)?;
    writeln!(out, "Settings:")?;
    for s in &r.settings {
        match &s.session_value {
            Some(v) => writeln!(
                out,
                "  {:<32} {} -> {} for this session: {}",
                s.name,
                s.server_value,
                v,
                s.why.as_deref().unwrap_or("")
            )?,
            None => writeln!(out, "  {:<32} {}", s.name, s.server_value)?,
        }
    }
    if r.workload == crate::options::Workload::Query {
        writeln!(
            out,
            "Query:    {} (--query; each run in BEGIN READ ONLY ... ROLLBACK)",
            clockscope::escape::escape_untrusted(&crate::error::one_line(&r.query))
        )?;
    } else if r.workload == crate::options::Workload::Series {
        writeln!(
            out,
            "Query:    {} ({} rows from generate_series, no table{})",
            r.query,
            thousands(r.rows),
            r.workload_reason
                .as_deref()
                .map(|w| format!("; {w}"))
                .unwrap_or_default()
        )?;
    } else {
        writeln!(
            out,
            "Query:    {} over {} rows (a TEMP table from generate_series, about {} estimated)",
            r.query,
            thousands(r.rows),
            crate::options::size_text(r.temp_table_estimated_bytes)
        )?;
    }
    writeln!(
        out,
        "Runs:     pairs of TIMING OFF then ON after {} warm-up pair; times are EXPLAIN's \"Execution Time\"",
        r.warmup_runs
    )?;
    writeln!(
        out,
        "          at least {} pairs (--runs), then until the median slowdown's 95% interval is within",
        r.runs
    )?;
    writeln!(
        out,
        "          +-5% of it (order statistics of the paired ON/OFF ratios) or --max-time {} s",
        r.max_time_s
    )?;
    if let Some(first) = r.clock_sources.first() {
        writeln!(
            out,
            "Reads:    {} clock reads per TIMING ON run ({:.3} per row) = {}",
            thousands(first.clock_reads_per_run),
            first.clock_reads_per_row,
            r.clock_reads_formula
        )?;
    }
    for s in &r.clock_sources {
        writeln!(out)?;
        writeln!(out, "Clock source: {} ({})", s.clock_source, s.how)?;
        writeln!(out, "  {:<28} {:>12} {:>12} {:>12}", "", "median", "min", "max")?;
        writeln!(
            out,
            "  {:<28} {:>9.3} ms {:>9.3} ms {:>9.3} ms",
            "TIMING OFF", s.timing_off_ms, s.timing_off_ms_min, s.timing_off_ms_max
        )?;
        writeln!(
            out,
            "  {:<28} {:>9.3} ms {:>9.3} ms {:>9.3} ms",
            "TIMING ON", s.timing_on_ms, s.timing_on_ms_min, s.timing_on_ms_max
        )?;
        writeln!(out, "  {:<28} {:>11.2}x", "slowdown", s.slowdown)?;
        let n = &s.noise;
        writeln!(
            out,
            "  {:<28} {:>11.2}x {:>11.2}x {:>11.2}x   ON/OFF of each pair, {} pairs",
            "paired slowdown", n.slowdown_median, n.slowdown_min, n.slowdown_max, n.pairs
        )?;
        let interval = match (n.slowdown_ci_low, n.slowdown_ci_high, n.slowdown_ci_half_width) {
            (Some(lo), Some(hi), Some(h)) => format!("{lo:.2}x to {hi:.2}x (+-{:.1}%)", h * 100.0),
            _ => "none (fewer than 6 pairs)".into(),
        };
        let stopped = match n.stopped_by {
            crate::measure::StopReason::Precision => "target +-5% reached",
            crate::measure::StopReason::MaxTime => "target +-5% missed: --max-time",
            crate::measure::StopReason::MaxRuns => "target +-5% missed in 1000 pairs",
            crate::measure::StopReason::Interrupted => "interrupted",
        };
        writeln!(out, "  {:<28} {interval}; {stopped}", "95% interval of the median")?;
        writeln!(
            out,
            "  {:<28} {:>9.2} ns   (ON - OFF) / rows",
            "overhead per row", s.overhead_per_row_ns
        )?;
        writeln!(
            out,
            "  {:<28} {:>9.2} ns   (ON - OFF) / clock reads",
            "overhead per clock read", s.overhead_per_read_ns
        )?;
        let clock = s.predicted_clock.as_deref().unwrap_or("none");
        let how = match s.prediction_method.as_deref() {
            Some(super::model::METHOD_EXECUTOR_LOOP) => "added per read in an executor-like loop",
            _ => "loop time (back to back)",
        };
        writeln!(
            out,
            "  {:<28} {:>12}   this machine's {clock}, {how}",
            "predicted per clock read",
            opt(s.predicted_per_read_ns, 2, " ns")
        )?;
        writeln!(
            out,
            "  {:<28} {:>12}   {:.3} reads per row x predicted per read",
            "predicted overhead per row",
            opt(s.predicted_overhead_per_row_ns, 2, " ns"),
            s.clock_reads_per_row
        )?;
        writeln!(
            out,
            "  {:<28} {:>12}   OFF + predicted overhead",
            "predicted TIMING ON",
            opt(s.predicted_timing_on_ms, 3, " ms")
        )?;
        writeln!(
            out,
            "  {:<28} {:>12}",
            "predicted slowdown",
            opt(s.predicted_slowdown, 2, "x")
        )?;
        writeln!(
            out,
            "  {:<28} {:>12}",
            "observed / predicted",
            opt(s.observed_over_predicted, 2, "")
        )?;
        if s.prediction_method.as_deref() == Some(super::model::METHOD_EXECUTOR_LOOP) {
            writeln!(
                out,
                "  {:<28} {:>12}   old model: loop time {} per read",
                "observed / back-to-back",
                opt(s.back_to_back_observed_over_predicted, 2, ""),
                opt(s.back_to_back_per_read_ns, 2, " ns")
            )?;
        }
    }
    if let Some(q) = &r.query_breakdown {
        write_query_breakdown(q, out)?;
    }
    for k in &r.skipped_clock_sources {
        writeln!(out)?;
        writeln!(out, "Clock source: {} not measured: {}", k.clock_source, k.reason)?;
    }
    if let Some(t) = &r.tsc_prediction {
        writeln!(out)?;
        let lead = if r.server_version_num < crate::measure::PG19_VERSION_NUM {
            "With PostgreSQL 19 on this machine (timing_clock_source = tsc)"
        } else {
            "With timing_clock_source = tsc on this machine"
        };
        let what = if t.prediction_method == super::model::METHOD_EXECUTOR_LOOP {
            "RDTSC's added"
        } else {
            "the RDTSC loop's"
        };
        writeln!(
            out,
            "{lead}: about {:.2}x predicted ({:.2} ns per row at {what} {:.2} ns per read);",
            t.predicted_slowdown, t.predicted_overhead_per_row_ns, t.rdtsc_per_read_ns
        )?;
        writeln!(
            out,
            "  {:.2}x ({:.2} ns per row) scaled by the {} source's observed / predicted",
            t.scaled_slowdown, t.scaled_overhead_per_row_ns, t.from_clock_source
        )?;
    }
    writeln!(out)?;
    let m = &r.this_machine;
    writeln!(
        out,
        "This machine's clocks (pg_test_timing loop, {:.1} s each; a loop is one read plus ~1-2 ns of bookkeeping):",
        r.clock_measure_ns as f64 / 1e9
    )?;
    writeln!(
        out,
        "  {:<34} {:>8.2} ns per loop",
        m.system.clock, m.system.per_read_ns
    )?;
    match (&m.rdtsc, &m.rdtsc_unavailable) {
        (Some(c), _) => writeln!(
            out,
            "  {:<34} {:>8.2} ns per loop, at {} kHz ({}); PostgreSQL 19's auto {} the TSC here",
            c.clock,
            c.per_read_ns,
            c.frequency_khz.unwrap_or(0),
            c.frequency_source.as_deref().unwrap_or("unknown source"),
            if m.tsc_auto { "picks" } else { "does not pick" }
        )?,
        (None, Some(why)) => writeln!(out, "  {:<34} not measured: {why}", "RDTSC")?,
        (None, None) => {}
    }
    // What two reads per row add between executor-like work per row (the
    // prediction's per-read cost).
    for c in std::iter::once(&m.system).chain(m.rdtsc.as_ref()) {
        if let Some(e) = &c.executor_loop {
            writeln!(
                out,
                "  {:<34} {:>8.2} ns per row added by 2 reads, executor-like loop",
                c.clock, e.added_ns_per_row
            )?;
            writeln!(
                out,
                "  {:<34} {:>8.2} ns per read; pairs {:.1}-{:.1}; work {:.1} ns/row, {} pairs",
                "", e.added_ns_per_read, e.added_ns_per_row_min, e.added_ns_per_row_max, e.work_ns_per_row, e.rounds
            )?;
        }
    }
    write_timing_settings(&r.timing_settings, out)?;
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// The server's timing settings, judged, and the ALTER SYSTEM lines.
fn write_timing_settings(t: &TimingSettings, out: &mut dyn Write) -> io::Result<()> {
    if t.settings.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    match (t.per_read_ns, &t.priced_with_clock_source) {
        (Some(ns), Some(clock)) => writeln!(
            out,
            "The server's timing settings (pg_settings), priced at {ns:.2} ns per clock read ({clock}, inferred from \
             EXPLAIN: (ON - OFF) / clock reads):"
        )?,
        _ => writeln!(
            out,
            "The server's timing settings (pg_settings; not priced: TIMING ON was not slower than TIMING OFF):"
        )?,
    }
    if let Some(p) = &t.page_read {
        writeln!(out, "  reference: {:.2} us, {}", p.ns / 1000.0, p.source)?;
    }
    for s in &t.settings {
        writeln!(
            out,
            "  {:<30} {} (source: {}, context: {})",
            s.name, s.judgement, s.source, s.context
        )?;
    }
    let recs: Vec<_> = t.settings.iter().filter_map(|s| s.recommendation.as_ref()).collect();
    if recs.is_empty() {
        return writeln!(out, "No change recommended.");
    }
    writeln!(
        out,
        "Recommended (clockscope changed nothing; run these as a superuser):"
    )?;
    for r in &recs {
        writeln!(out, "  {}  -- {}", r.alter_system, r.reason)?;
    }
    if recs.iter().any(|r| r.then.is_some()) {
        writeln!(out, "  SELECT pg_reload_conf();  -- applies those that need no restart")?;
    }
    let restart: Vec<&str> = recs
        .iter()
        .filter(|r| r.needs_restart)
        .map(|r| r.alter_system.as_str())
        .collect();
    if !restart.is_empty() {
        writeln!(out, "  restart the server for: {}", restart.join(" "))?;
    }
    Ok(())
}

/// Nodes shown in the text (all are in the JSON).
const SHOWN_NODES: usize = 5;

/// `--query`: the nodes that pay most, and what auto_explain.log_timing costs.
fn write_query_breakdown(q: &super::model::QueryBreakdown, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "Where the {:.3} ms go ({}; shared by clock reads = 2 x (rows x loops + loops)):",
        q.added_ms, q.clock_source
    )?;
    writeln!(
        out,
        "  {:<36} {:>13} {:>10} {:>13}",
        "node", "clock reads", "added", "of own time"
    )?;
    let mut by_cost: Vec<&crate::nodes::NodeCost> = q.nodes.iter().collect();
    by_cost.sort_by_key(|n| std::cmp::Reverse(n.clock_reads));
    for n in by_cost.iter().take(SHOWN_NODES) {
        let name: String = n.node.chars().take(36).collect();
        writeln!(
            out,
            "  {name:<36} {:>13} {:>7.3} ms {:>13}",
            thousands(n.clock_reads),
            n.added_ms,
            opt(n.added_fraction_of_own.map(|f| f * 100.0), 0, "%")
        )?;
    }
    if q.nodes.len() > SHOWN_NODES {
        writeln!(out, "  ... {} more nodes in --format json", q.nodes.len() - SHOWN_NODES)?;
    }
    writeln!(
        out,
        "auto_explain.log_timing = on (with log_analyze = on) adds the same {:.3} ms ({:.2}x) to each run",
        q.auto_explain_log_timing_added_ms, q.auto_explain_log_timing_slowdown
    )?;
    writeln!(
        out,
        "  of this query it samples, logged or not; log_timing = off keeps the row counts without it."
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(2_000_006), "2,000,006");
    }
}
