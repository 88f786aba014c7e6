//! `clockscope explain`'s text form, for people (its default output): the
//! runs, the overhead per row and per clock read, the prediction, this
//! machine's clocks and the server's timing settings, from a finished
//! [`Report`] of the `clockscope_explain` library.

use clockscope_explain::connect::Locality;
use clockscope_explain::report::{QueryBreakdown, Report};
use clockscope_explain::timing_settings::TimingSettings;
use std::io::{self, Write};

/// `1234567` -> `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    // `100,000` in English; where the comma is the decimal separator, a
    // no-break space (`100 000`), never a comma read as a fraction.
    let sep = if crate::i18n::localize_number(".".into()) == "." {
        ','
    } else {
        '\u{a0}'
    };
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
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
pub fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    // Every line fitted to 100 columns, as every clockscope text report.
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    write_setup(out, r)?;
    for s in &r.clock_sources {
        write_source(out, s)?;
    }
    if let Some(q) = &r.query_breakdown {
        write_query_breakdown(out, q)?;
    }
    for k in &r.skipped_clock_sources {
        writeln!(out)?;
        writeln!(out, "Clock source: {} not measured: {}", k.clock_source, k.reason)?;
    }
    write_tsc_prediction(out, r)?;
    write_machine(out, r)?;
    write_timing_settings(out, &r.timing_settings)?;
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// The server, its settings, the query and how the runs are made.
fn write_setup(out: &mut dyn Write, r: &Report) -> io::Result<()> {
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
    if r.workload == clockscope_explain::options::Workload::Query {
        writeln!(
            out,
            "Query:    {} (--query; each run in BEGIN READ ONLY ... ROLLBACK)",
            clockscope_system::escape::escape_untrusted(&clockscope_explain::error::one_line(&r.query))
        )?;
    } else if r.workload == clockscope_explain::options::Workload::Series {
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
            clockscope_explain::options::size_text(r.temp_table_estimated_bytes)
        )?;
    }
    writeln!(
        out,
        "Runs:     pairs of TIMING OFF and ON after {} warm-up pair; times are EXPLAIN's \"Execution Time\"",
        r.warmup_runs
    )?;
    writeln!(out, "Order:    {}", r.order)?;
    writeln!(
        out,
        "          at least {} pairs (--runs), then until the median block slowdown's 95% interval is",
        r.runs
    )?;
    writeln!(
        out,
        "          within +-5% of it (order statistics of the blocks' ON/OFF ratios) and the A/A control has 6 \
         blocks, or --max-time {} s",
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
    Ok(())
}

/// One clock source's runs, overheads and prediction.
fn write_source(out: &mut dyn Write, s: &clockscope_explain::report::SourceResult) -> io::Result<()> {
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
    let n = &s.noise;
    writeln!(
        out,
        "  {:<28} {:>11.2}x {:>11.2}x {:>11.2}x   ON/OFF of each block of two pairs, {} blocks of {} pairs",
        "block slowdown", n.slowdown_median, n.slowdown_min, n.slowdown_max, n.blocks, n.pairs
    )?;
    let interval = match (n.slowdown_ci_low, n.slowdown_ci_high, n.slowdown_ci_half_width) {
        (Some(lo), Some(hi), Some(h)) => format!("{lo:.2}x to {hi:.2}x (+-{:.1}%)", h * 100.0),
        _ => "none (fewer than 6 blocks)".into(),
    };
    let stopped = match n.stopped_by {
        clockscope_explain::measure::StopReason::Precision => "target +-5% reached",
        clockscope_explain::measure::StopReason::MaxTime => "target +-5% missed: --max-time",
        clockscope_explain::measure::StopReason::MaxRuns => "target +-5% missed in 1000 pairs",
        clockscope_explain::measure::StopReason::Interrupted => "interrupted",
    };
    writeln!(out, "  {:<28} {interval}; {stopped}", "95% interval of the median")?;
    write_control(out, &s.control)?;
    writeln!(out, "  {:<28} {}", "result", s.result_reason)?;
    writeln!(
        out,
        "  {:<28} {:>9.2} ns   (slowdown - 1) x TIMING OFF / rows{}",
        "overhead per row",
        s.overhead_per_row_ns,
        interval_text(s.overhead_per_row_low_ns, s.overhead_per_row_high_ns, " ns")
    )?;
    writeln!(
        out,
        "  {:<28} {:>9.2} ns   (slowdown - 1) x TIMING OFF / clock reads{}",
        "overhead per clock read",
        s.overhead_per_read_ns,
        interval_text(s.overhead_per_read_low_ns, s.overhead_per_read_high_ns, " ns")
    )?;
    write_prediction(out, s)
}

/// One clock source's prediction, observed / predicted and the old model.
fn write_prediction(out: &mut dyn Write, s: &clockscope_explain::report::SourceResult) -> io::Result<()> {
    let clock = s.predicted_clock.as_deref().unwrap_or("none");
    match s.predicted_per_read_ns {
        Some(p) => writeln!(
            out,
            "  {:<28} {:>9.2} ns   this machine's {clock} in the instrumentation model",
            "predicted per clock read", p
        )?,
        None => writeln!(
            out,
            "  {:<28} {:>12}   {}",
            "predicted per clock read", "none", s.prediction_status
        )?,
    }
    let interval = match (
        s.predicted_overhead_per_row_low_ns,
        s.predicted_overhead_per_row_high_ns,
    ) {
        (Some(lo), Some(hi)) => format!(" (95% interval {lo:.2} to {hi:.2} ns)"),
        _ => String::new(),
    };
    writeln!(
        out,
        "  {:<28} {:>12}   {:.3} reads per row x predicted per read{interval}",
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
        "  {:<28} {:>12}   overhead per clock read / predicted per read{}",
        "observed / predicted",
        opt(s.observed_over_predicted, 2, ""),
        interval_text(s.observed_over_predicted_low, s.observed_over_predicted_high, "")
    )?;
    if let Some(p) = &s.paired_in_time {
        write_paired_in_time(out, p)?;
    }
    writeln!(
        out,
        "  {:<28} {:>12}   old model, for comparison: loop time {} per read",
        "observed / back-to-back",
        opt(s.back_to_back_observed_over_predicted, 2, ""),
        opt(s.back_to_back_per_read_ns, 2, " ns")
    )?;
    Ok(())
}

/// " (95% interval 1.00 to 2.00 ns)", or nothing without one.
fn interval_text(low: Option<f64>, high: Option<f64>, unit: &str) -> String {
    match (low, high) {
        (Some(lo), Some(hi)) => format!(" (95% interval {lo:.2} to {hi:.2}{unit})"),
        _ => String::new(),
    }
}

/// The A/A control: TIMING OFF against TIMING OFF in the same schedule.
fn write_control(out: &mut dyn Write, c: &clockscope_explain::report::AaControl) -> io::Result<()> {
    let extent = match (c.median, c.low, c.high) {
        (Some(m), Some(lo), Some(hi)) if c.extent == "range" => {
            format!("{m:.2}x, range {lo:.2}x to {hi:.2}x (fewer than 6 blocks: no interval)")
        }
        (Some(m), Some(lo), Some(hi)) => format!("{m:.2}x, 95% interval {lo:.2}x to {hi:.2}x"),
        _ => "none completed".to_string(),
    };
    writeln!(
        out,
        "  {:<28} {extent}; TIMING OFF against TIMING OFF, {} blocks of {} pairs",
        "A/A control", c.blocks, c.pairs
    )
}

/// observed / predicted pair by pair, with its interval when there is one.
fn write_paired_in_time(out: &mut dyn Write, p: &clockscope_explain::report::PairedInTime) -> io::Result<()> {
    let interval = match (p.low, p.high) {
        (Some(low), Some(high)) => format!("95% interval {low:.2}-{high:.2}, "),
        _ => String::new(),
    };
    writeln!(
        out,
        "  {:<28} {:>12}   each block against the model slices just before its pairs ({interval}{} blocks)",
        "  paired in time",
        format!("{:.2}", p.observed_over_predicted),
        p.pairs
    )
}

/// What the TSC would cost on this machine, when predicted.
fn write_tsc_prediction(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    if let Some(t) = &r.tsc_prediction {
        writeln!(out)?;
        let lead = if r.server_version_num < clockscope_explain::measure::PG19_VERSION_NUM {
            "With PostgreSQL 19 on this machine (timing_clock_source = tsc)"
        } else {
            "With timing_clock_source = tsc on this machine"
        };
        writeln!(
            out,
            "{lead}: about {:.2}x predicted ({:.2} ns per row at RDTSC's {:.2} ns per read in the model);",
            t.predicted_slowdown, t.predicted_overhead_per_row_ns, t.rdtsc_per_read_ns
        )?;
        match (t.scaled_slowdown, t.scaled_overhead_per_row_ns) {
            (Some(x), Some(ns)) => writeln!(
                out,
                "  {x:.2}x ({ns:.2} ns per row) scaled by the {} source's observed / predicted",
                t.from_clock_source
            )?,
            _ => writeln!(
                out,
                "  not scaled: the {} source's observed / predicted is not resolved",
                t.from_clock_source
            )?,
        }
        writeln!(out, "  {}", t.used_by)?;
    }
    Ok(())
}

/// "21.40 ns (95% interval 21.1 to 21.9 ns)" or "21.40 ns (interval not available)".
fn read_cost_text(c: &clockscope_explain::clockcost::ClockCost) -> String {
    match c.read_cost_interval {
        Some(i) => format!("{:.2} ns (95% interval {:.2} to {:.2})", c.read_cost_ns, i.low, i.high),
        None => format!("{:.2} ns (interval not available)", c.read_cost_ns),
    }
}

/// This machine's clocks: the loops' read costs and the model's results.
fn write_machine(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    writeln!(out)?;
    let m = &r.this_machine;
    writeln!(
        out,
        "This machine's clocks (pg_test_timing's loop, {:.1} s each: average loop, and the read cost without \
         interference over 9 chunks):",
        r.clock_measure_ns as f64 / 1e9
    )?;
    for c in std::iter::once(&m.system).chain(&m.rdtsc).chain(&m.rdtscp) {
        let freq = match (c.frequency_khz, c.frequency_source.as_deref()) {
            (Some(khz), Some(src)) => format!(", at {khz} kHz ({src})"),
            _ => String::new(),
        };
        writeln!(
            out,
            "  {:<34} {:>8.2} ns per loop, read cost {}{freq}",
            c.clock,
            c.per_read_ns,
            read_cost_text(c)
        )?;
    }
    match (&m.rdtsc, &m.rdtsc_unavailable) {
        (Some(_), _) => writeln!(
            out,
            "  PostgreSQL 19's auto {} the TSC here",
            if m.tsc_auto { "picks" } else { "does not pick" }
        )?,
        (None, Some(why)) => writeln!(out, "  {:<34} not measured: {why}", "RDTSC")?,
        (None, None) => {}
    }
    // What TIMING ON adds per row in the model of the server's
    // instrumentation (the prediction's per-read cost).
    for c in std::iter::once(&m.system).chain(m.rdtsc.as_ref()) {
        if let Some(e) = &c.executor_loop {
            writeln!(
                out,
                "  {:<34} {} per row per node with TIMING ON, {}; {}",
                c.clock,
                e.headline(),
                e.interval_text,
                e.instrumentation
            )?;
            writeln!(
                out,
                "  {:<34} model: median {:.2} ns, {} pairs of {} rows, work {:.1} ns/row ({} steps), {}{}",
                "",
                e.median_ns_per_row,
                e.pairs,
                e.rows_per_round,
                e.work_ns_per_row,
                e.work_steps,
                e.sampling,
                if e.resolved {
                    String::new()
                } else {
                    format!("; {}", e.status)
                }
            )?;
        }
    }
    Ok(())
}

/// The server's timing settings, judged, and the ALTER SYSTEM lines.
fn write_timing_settings(out: &mut dyn Write, t: &TimingSettings) -> io::Result<()> {
    if t.settings.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "The server's timing settings (pg_settings), each priced with the read PostgreSQL makes for it:"
    )?;
    match &t.io_read {
        Some(p) => writeln!(out, "  I/O timing: {} per read; {}", p.text(), p.source)?,
        None => writeln!(out, "  I/O timing: not priced: {}", t.io_read_status)?,
    }
    match &t.explain_read {
        Some(p) => writeln!(out, "  EXPLAIN timing: {} per read; {}", p.text(), p.source)?,
        None => writeln!(out, "  EXPLAIN timing: {}", t.explain_read_status)?,
    }
    if let Some(p) = &t.page_read {
        let interval = match (p.low_ns, p.high_ns) {
            (Some(lo), Some(hi)) => format!(" (95% interval {:.2} to {:.2} us)", lo / 1000.0, hi / 1000.0),
            _ => String::new(),
        };
        writeln!(out, "  reference: {:.2} us{interval}, {}", p.ns / 1000.0, p.source)?;
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
fn write_query_breakdown(out: &mut dyn Write, q: &QueryBreakdown) -> io::Result<()> {
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
    let mut by_cost: Vec<&clockscope_explain::nodes::NodeCost> = q.nodes.iter().collect();
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
