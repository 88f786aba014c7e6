//! The result: medians and spread per clock source, the overhead per row and
//! per clock read, the prediction from this machine's clock cost, and the
//! text and JSON forms of all that.
//!
//! # Arithmetic (medians of the runs)
//!
//! ```text
//! slowdown                = ON / OFF
//! overhead_per_row_ns     = (ON - OFF) * 1e6 / rows
//! overhead_per_read_ns    = (ON - OFF) * 1e6 / clock reads per run     (see plan.rs)
//! predicted_per_read_ns   = this machine's pg_test_timing loop time for the clock in use
//! predicted_overhead_per_row_ns = clock reads per row * predicted_per_read_ns
//! predicted_slowdown      = (OFF + clock reads * predicted_per_read_ns / 1e6) / OFF
//!                           (clockscope::predict::explain_overhead, per row)
//! observed_over_predicted = overhead_per_read_ns / predicted_per_read_ns
//! ```
//!
//! The TSC prediction for a server that did not run on the TSC uses the
//! RDTSC loop time in place of the system clock's: `predicted_*` as above
//! with `rdtsc_per_read_ns`, and a `scaled_*` variant that also applies the
//! observed/predicted ratio measured on the system clock
//! (`rdtsc_per_read_ns * observed_over_predicted`), for the part of a read
//! that the executor overlaps with its own work or adds to it.

use crate::clockcost::MachineClocks;
use crate::connect::Locality;
use crate::measure::{Skipped, SourceRuns};
use crate::session::Setting;
use crate::stats::Spread;
use clockscope::predict::ExplainOverhead;
use serde::Serialize;
use std::io::{self, Write};

/// The formula behind `clock_reads_per_run`, for the reader of the JSON.
pub const CLOCK_READS_FORMULA: &str = "2 * sum over plan nodes of (Actual Rows * Actual Loops + Actual Loops)";

/// One clock source's results. Times are EXPLAIN's "Execution Time".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SourceResult {
    /// As the server names it: "system", "tsc", "auto (tsc)", ...
    pub clock_source: String,
    /// How the source came to be used.
    pub how: String,
    pub timing_off_ms: f64,
    pub timing_off_ms_min: f64,
    pub timing_off_ms_max: f64,
    pub timing_on_ms: f64,
    pub timing_on_ms_min: f64,
    pub timing_on_ms_max: f64,
    pub slowdown: f64,
    pub overhead_per_row_ns: f64,
    pub overhead_per_read_ns: f64,
    pub clock_reads_per_run: u64,
    pub clock_reads_per_row: f64,
    /// This machine's clock used for the prediction.
    pub predicted_clock: Option<String>,
    pub predicted_per_read_ns: Option<f64>,
    pub predicted_overhead_per_row_ns: Option<f64>,
    pub predicted_slowdown: Option<f64>,
    pub observed_over_predicted: Option<f64>,
    /// Every run, in order.
    pub runs_timing_off_ms: Vec<f64>,
    pub runs_timing_on_ms: Vec<f64>,
}

/// What the TSC would give for a server that did not run on it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TscPrediction {
    /// This machine's RDTSC loop time, the predicted cost per read.
    pub rdtsc_per_read_ns: f64,
    pub predicted_overhead_per_row_ns: f64,
    pub predicted_slowdown: f64,
    /// The system clock's observed/predicted ratio applied to the RDTSC cost.
    pub scaled_per_read_ns: f64,
    pub scaled_overhead_per_row_ns: f64,
    pub scaled_slowdown: f64,
    /// The measured source the prediction starts from (its TIMING OFF time
    /// and clock reads).
    pub from_clock_source: String,
}

/// Everything `clockscope explain` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub server_version: String,
    pub server_version_num: u32,
    /// `host=... port=... user=... dbname=...`.
    pub server: String,
    pub server_locality: Locality,
    pub settings: Vec<Setting>,
    pub query: String,
    pub rows: u64,
    /// The TEMP table's size as estimated before it was created
    /// (`session::estimated_table_bytes`), bytes.
    pub temp_table_estimated_bytes: u64,
    /// What EXPLAIN ran on: `table` or `series` (generate_series).
    pub workload: crate::options::Workload,
    /// Why generate_series ran under `--workload auto`.
    pub workload_reason: Option<String>,
    pub runs: u32,
    pub warmup_runs: u32,
    pub clock_reads_formula: String,
    pub this_machine: MachineClocks,
    /// How long each of this machine's clocks was measured, ns.
    pub clock_measure_ns: u64,
    pub clock_sources: Vec<SourceResult>,
    pub skipped_clock_sources: Vec<Skipped>,
    pub tsc_prediction: Option<TscPrediction>,
    pub warnings: Vec<String>,
    pub interrupted: bool,
}

/// The inputs [`build`] turns into a report.
pub struct Inputs<'a> {
    pub server_version: &'a str,
    pub server_version_num: u32,
    pub server: &'a str,
    pub locality: Locality,
    pub settings: &'a [Setting],
    pub query: &'a str,
    pub rows: u64,
    pub temp_table_estimated_bytes: u64,
    pub workload: crate::options::Workload,
    pub workload_reason: Option<&'a str>,
    pub runs: u32,
    pub warmup_runs: u32,
    pub sources: &'a [SourceRuns],
    pub skipped: &'a [Skipped],
    pub machine: &'a MachineClocks,
    pub clock_measure_ns: u64,
    pub interrupted: bool,
}

fn uses_tsc(clock_source: &str) -> bool {
    crate::measure::current_is(clock_source, "tsc")
}

/// The library's prediction for a run of `rows` rows taking `timing_off_ms`
/// with TIMING OFF, `reads_per_row` clock reads of `per_read_ns` each.
fn predict(timing_off_ms: f64, rows: f64, reads_per_row: f64, per_read_ns: f64) -> ExplainOverhead {
    clockscope::predict::explain_overhead(timing_off_ms * 1e6 / rows, reads_per_row, per_read_ns, rows)
}

fn source_result(runs: &SourceRuns, rows: u64, machine: &MachineClocks) -> Option<SourceResult> {
    let off = Spread::of(&runs.timing_off_ms)?;
    let on = Spread::of(&runs.timing_on_ms)?;
    let diff_ns = (on.median - off.median) * 1e6;
    let reads = runs.clock_reads_per_run;
    let reads_per_row = reads as f64 / rows as f64;
    let cost = if uses_tsc(&runs.clock_source) {
        machine.rdtsc.as_ref()
    } else {
        Some(&machine.system)
    };
    let predicted = cost.map(|c| c.per_read_ns).filter(|v| v.is_finite() && *v > 0.0);
    let overhead_per_read_ns = diff_ns / reads as f64;
    let prediction = predicted.map(|p| predict(off.median, rows as f64, reads_per_row, p));
    Some(SourceResult {
        clock_source: runs.clock_source.clone(),
        how: runs.how.clone(),
        timing_off_ms: off.median,
        timing_off_ms_min: off.min,
        timing_off_ms_max: off.max,
        timing_on_ms: on.median,
        timing_on_ms_min: on.min,
        timing_on_ms_max: on.max,
        slowdown: on.median / off.median,
        overhead_per_row_ns: diff_ns / rows as f64,
        overhead_per_read_ns,
        clock_reads_per_run: reads,
        clock_reads_per_row: reads_per_row,
        predicted_clock: cost.map(|c| c.clock.clone()),
        predicted_per_read_ns: predicted,
        predicted_overhead_per_row_ns: prediction.map(|p| p.overhead_per_row_ns),
        predicted_slowdown: prediction.map(|p| p.slowdown),
        observed_over_predicted: predicted.map(|p| overhead_per_read_ns / p),
        runs_timing_off_ms: runs.timing_off_ms.clone(),
        runs_timing_on_ms: runs.timing_on_ms.clone(),
    })
}

fn tsc_prediction(results: &[SourceResult], machine: &MachineClocks) -> Option<TscPrediction> {
    if results.iter().any(|r| uses_tsc(&r.clock_source)) {
        return None;
    }
    let rdtsc = machine.rdtsc.as_ref()?.per_read_ns;
    let base = results.iter().find(|r| !uses_tsc(&r.clock_source))?;
    let ratio = base.observed_over_predicted.filter(|r| r.is_finite())?;
    let rows = base.clock_reads_per_run as f64 / base.clock_reads_per_row;
    let at = |per_read: f64| predict(base.timing_off_ms, rows, base.clock_reads_per_row, per_read);
    let scaled = rdtsc * ratio;
    Some(TscPrediction {
        rdtsc_per_read_ns: rdtsc,
        predicted_overhead_per_row_ns: at(rdtsc).overhead_per_row_ns,
        predicted_slowdown: at(rdtsc).slowdown,
        scaled_per_read_ns: scaled,
        scaled_overhead_per_row_ns: at(scaled).overhead_per_row_ns,
        scaled_slowdown: at(scaled).slowdown,
        from_clock_source: base.clock_source.clone(),
    })
}

/// Computes the report from what was measured.
pub fn build(inp: &Inputs) -> Report {
    let clock_sources: Vec<SourceResult> = inp
        .sources
        .iter()
        .filter_map(|s| source_result(s, inp.rows, inp.machine))
        .collect();
    let mut warnings = Vec::new();
    if !inp.locality.is_local() {
        warnings.push(format!(
            "the server ({}) is not on this machine: the prediction uses this machine's clocks, not the server's; \
             the server's own cost per clock read is inferred from EXPLAIN: (TIMING ON - TIMING OFF) / clock reads",
            inp.server
        ));
    }
    for r in &clock_sources {
        if r.timing_on_ms <= r.timing_off_ms {
            warnings.push(format!(
                "{}: TIMING ON was not slower than TIMING OFF; the runs are noise-bound (use more --rows or --runs)",
                r.clock_source
            ));
        }
        if r.predicted_per_read_ns.is_none() {
            warnings.push(format!(
                "{}: no prediction, this machine cannot read that clock",
                r.clock_source
            ));
        }
    }
    if inp.interrupted {
        let done: Vec<String> = clock_sources
            .iter()
            .map(|r| {
                format!(
                    "{} of {} runs on {}",
                    r.runs_timing_on_ms.len(),
                    inp.runs,
                    r.clock_source
                )
            })
            .collect();
        warnings.push(format!("interrupted: {}", done.join(", ")));
    }
    let tsc = tsc_prediction(&clock_sources, inp.machine);
    Report {
        server_version: inp.server_version.to_string(),
        server_version_num: inp.server_version_num,
        server: inp.server.to_string(),
        server_locality: inp.locality.clone(),
        settings: inp.settings.to_vec(),
        query: inp.query.to_string(),
        rows: inp.rows,
        temp_table_estimated_bytes: inp.temp_table_estimated_bytes,
        workload: inp.workload,
        workload_reason: inp.workload_reason.map(str::to_string),
        runs: inp.runs,
        warmup_runs: inp.warmup_runs,
        clock_reads_formula: CLOCK_READS_FORMULA.to_string(),
        this_machine: inp.machine.clone(),
        clock_measure_ns: inp.clock_measure_ns,
        clock_sources,
        skipped_clock_sources: inp.skipped.to_vec(),
        tsc_prediction: tsc,
        warnings,
        interrupted: inp.interrupted,
    }
}

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

    #[test]
    fn tsc_is_recognised_in_show_values() {
        assert!(uses_tsc("tsc"));
        assert!(uses_tsc("auto (tsc)"));
        assert!(!uses_tsc("auto (system)"));
        assert!(!uses_tsc("system"));
    }
}
