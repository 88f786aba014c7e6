//! The human report of `clockscope check`: environment, one row per clock,
//! and the verdict in plain words with the numbers behind it.

use crate::commands::check::report::CheckReport;
use crate::commands::check::verdict::{ExplainPrediction, Status};
use std::io::{self, Write};

fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn prediction_line(p: &ExplainPrediction) -> String {
    format!(
        "{}: 2 reads x {:.1} ns = {:.1} ns per row per node; count(*) of 1M rows {:.1} ms -> {:.1} ms ({:.2}x)",
        p.clock, p.per_read_ns, p.per_row_per_node_ns, p.count_timing_off_ms, p.count_timing_on_ms, p.slowdown
    )
}

/// Writes the text report.
pub fn write(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    let e = &r.environment;
    writeln!(out, "Environment")?;
    writeln!(
        out,
        "  kernel        {}",
        e.kernel_release.as_deref().unwrap_or("unknown")
    )?;
    let avail = if e.available_clocksources.is_empty() {
        String::new()
    } else {
        format!(" (available: {})", e.available_clocksources.join(" "))
    };
    writeln!(
        out,
        "  clocksource   {}{avail}",
        e.current_clocksource.as_deref().unwrap_or("unknown")
    )?;
    let cpus = e.cpus.map_or(String::new(), |n| {
        format!(", {n} CPU{} usable", if n == 1 { "" } else { "s" })
    });
    writeln!(
        out,
        "  CPU           {} ({}){cpus}",
        e.cpu_model.as_deref().unwrap_or("unknown"),
        e.arch
    )?;
    writeln!(
        out,
        "  hypervisor    {}",
        e.hypervisor.as_deref().unwrap_or("none detected")
    )?;
    let installed = if e.postgresql_installed_majors.is_empty() {
        "none found in /usr/lib/postgresql".to_string()
    } else {
        let list: Vec<String> = e.postgresql_installed_majors.iter().map(u32::to_string).collect();
        format!("{} installed (/usr/lib/postgresql)", list.join(", "))
    };
    writeln!(out, "  PostgreSQL    {installed}")?;
    match e.counter_trusted {
        Some(t) => writeln!(out, "  CPU counter   {}", if t { "trusted" } else { "NOT trusted" })?,
        None => writeln!(out, "  CPU counter   not assessed")?,
    }
    if let Some(k) = e.counter_frequency_khz {
        writeln!(
            out,
            "  frequency     {k} kHz, from {}",
            e.counter_frequency_source.as_deref().unwrap_or("source unknown")
        )?;
    }
    for ev in &e.counter_evidence {
        writeln!(out, "                {ev}")?;
    }

    writeln!(out)?;
    writeln!(
        out,
        "Clocks ({:.2} s each; differences between successive reads, ns)",
        r.duration_per_clock_s
    )?;
    let name_w = r.clocks.iter().map(|c| c.display_name.len()).max().unwrap_or(5).max(5);
    writeln!(
        out,
        "  {:<name_w$} {:>8} {:>6} {:>6} {:>6} {:>7} {:>8} {:>10} {:>8} {:>6} {:>9} {:>8}",
        "clock", "avg", "p50", "p90", "p99", "p99.9", "p99.99", "max", "res", "zero%", "backward", "getres"
    )?;
    for c in &r.clocks {
        let p = &c.percentiles_ns;
        let back = if c.backward_steps == 0 {
            "0".to_string()
        } else {
            format!("{}/{}", c.backward_steps, c.largest_backward_ns)
        };
        writeln!(
            out,
            "  {:<name_w$} {:>8.2} {:>6} {:>6} {:>6} {:>7} {:>8} {:>10} {:>8} {:>6.2} {:>9} {:>8}{}",
            c.display_name,
            c.avg_loop_ns,
            p.p50,
            p.p90,
            p.p99,
            p.p99_9,
            p.p99_99,
            p.max,
            opt(&c.resolution_ns),
            c.zero_steps_pct,
            back,
            opt(&c.clock_getres_ns),
            if c.interrupted { "  (interrupted)" } else { "" }
        )?;
    }
    for s in &r.skipped {
        writeln!(out, "  {:<name_w$} skipped: {}", s.name, s.reason)?;
    }
    writeln!(
        out,
        "  avg = average loop time per read (pg_test_timing's number); res = smallest non-zero step;"
    )?;
    writeln!(
        out,
        "  backward = count/largest ns; percentiles above 10000 ns are log2-bucket upper bounds, max is exact."
    )?;

    let v = &r.verdict;
    writeln!(out)?;
    let word = match v.status {
        Status::Good => "GOOD",
        Status::Fair => "FAIR",
        Status::Bad => "BAD",
        Status::Broken => "BROKEN",
        Status::NoVerdict => "NO VERDICT",
    };
    writeln!(out, "Verdict: {word}. {}", v.summary)?;
    // Every verdict line: a label in one column, then the finding.
    let mut item = |label: &str, text: String| writeln!(out, "  {label:<24} {text}");
    let pass = |b: bool| if b { "pass" } else { "FAIL" };
    if let Some(p) = &v.postgresql_rule {
        item("PostgreSQL's rule", format!("{}: {}", pass(p.passed), p.detail))?;
    }
    if let Some(m) = &v.modern_rule {
        item("clockscope's rule", format!("{}: {}", pass(m.passed), m.detail))?;
    }
    if v.explain_system.is_some() || v.explain_tsc.is_some() {
        item(
            "EXPLAIN ANALYZE",
            format!(
                "reference baseline {:.2} ns per row with TIMING OFF ({})",
                v.baseline_row_ns, v.baseline_source
            ),
        )?;
    }
    if let Some(p) = &v.explain_system {
        item("", prediction_line(p))?;
    }
    if let Some(p) = &v.explain_tsc {
        let who = if p.used_by_postgresql {
            "PostgreSQL 19 fast read"
        } else {
            "not read by PostgreSQL 19 here"
        };
        item("", format!("{who}, {}", prediction_line(p)))?;
    }
    if let Some(a) = &v.track_io_timing {
        item(
            "track_io_timing",
            format!("{}: {}", if a.safe { "safe" } else { "NOT safe" }, a.why),
        )?;
    }
    if let Some(a) = &v.auto_explain_log_timing {
        item(
            "auto_explain.log_timing",
            format!("{}: {}", if a.safe { "safe" } else { "costly" }, a.why),
        )?;
    }
    if let Some(p) = &v.postgresql19_auto_picks {
        item("PostgreSQL 19", format!("timing_clock_source=auto picks '{p}' here"))?;
    }
    if let Some(rec) = &v.timing_clock_source_recommendation {
        item("recommendation", rec.clone())?;
    }
    if v.problems.is_empty() {
        item("problems", "none".into())?;
    } else {
        for p in &v.problems {
            item("problem", p.clone())?;
        }
    }
    if r.interrupted {
        writeln!(
            out,
            "Interrupted: the numbers above cover only what was measured before Ctrl-C."
        )?;
    }
    Ok(())
}
