//! The report as text, for people: `clockscope explain`'s default output.

use super::model::Report;
use crate::connect::Locality;
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
    if r.workload == crate::options::Workload::Series {
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
        "Runs:     {} per mode after {} warm-up, TIMING OFF and ON alternating; times are EXPLAIN's \"Execution Time\"",
        r.runs, r.warmup_runs
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
        writeln!(
            out,
            "  {:<28} {:>12}   this machine's {clock} loop time",
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
        writeln!(
            out,
            "{lead}: about {:.2}x predicted ({:.2} ns per row at the RDTSC loop's {:.2} ns per read);",
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
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
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
