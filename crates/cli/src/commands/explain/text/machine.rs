//! This machine's clocks (the full report only): each clock's loop and read
//! cost, whether PostgreSQL 19's `auto` picks the TSC, and what TIMING ON
//! adds per row in the model of the server's instrumentation.

use crate::i18n::{library::reason, num, pad_left};
use crate::t;
use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes this machine's clocks, after a blank line.
pub(super) fn write(out: &mut dyn Write, r: &Report) -> io::Result<()> {
    writeln!(out)?;
    let m = &r.this_machine;
    let head = t!(
        "This machine's clocks (pg_test_timing's loop, {seconds} s each: average loop, and the read cost without \
         interference over 9 chunks):",
        seconds = num(r.clock_measure_ns as f64 / 1e9, 1)
    );
    writeln!(out, "{head}")?;
    for c in std::iter::once(&m.system).chain(&m.rdtsc).chain(&m.rdtscp) {
        let freq = match (c.frequency_khz, c.frequency_source.as_deref()) {
            (Some(khz), Some(src)) => t!(", at {khz} kHz ({source})", khz = khz, source = src),
            _ => String::new(),
        };
        let rest = t!(
            "ns per loop, read cost {cost}{freq}",
            cost = read_cost_text(c),
            freq = freq
        );
        writeln!(out, "  {:<34} {} {rest}", c.clock, pad_left(&num(c.per_read_ns, 2), 8))?;
    }
    match (&m.rdtsc, &m.rdtsc_unavailable) {
        (Some(_), _) if m.tsc_auto => writeln!(out, "{}", t!("  PostgreSQL 19's auto picks the TSC here"))?,
        (Some(_), _) => writeln!(out, "{}", t!("  PostgreSQL 19's auto does not pick the TSC here"))?,
        (None, Some(why)) => {
            let why = t!("not measured: {reason}", reason = why);
            writeln!(out, "  {:<34} {why}", "RDTSC")?;
        }
        (None, None) => {}
    }
    // What TIMING ON adds per row in the model of the server's
    // instrumentation (the prediction's per-read cost).
    for c in std::iter::once(&m.system).chain(m.rdtsc.as_ref()) {
        if let Some(e) = &c.executor_loop {
            let line = t!(
                "{headline} per row per node with TIMING ON, {interval}; {instrumentation}",
                headline = reason(&e.headline()),
                interval = reason(&e.interval_text),
                instrumentation = reason(&e.instrumentation)
            );
            writeln!(out, "  {:<34} {line}", c.clock)?;
            let status = if e.resolved {
                String::new()
            } else {
                format!("; {}", reason(&e.status))
            };
            let line = t!(
                "model: median {median} ns, {pairs} pairs of {rows} rows, work {work} ns/row ({steps} steps), \
                 {sampling}{status}",
                median = num(e.median_ns_per_row, 2),
                pairs = e.pairs,
                rows = e.rows_per_round,
                work = num(e.work_ns_per_row, 1),
                steps = e.work_steps,
                sampling = reason(&e.sampling),
                status = status
            );
            writeln!(out, "  {:<34} {line}", "")?;
        }
    }
    Ok(())
}

/// "21.40 ns (95% interval 21.1 to 21.9 ns)" or "21.40 ns (interval not available)".
fn read_cost_text(c: &clockscope_explain::clockcost::ClockCost) -> String {
    match c.read_cost_interval {
        Some(i) => t!(
            "{cost} ns (95% interval {low} to {high})",
            cost = num(c.read_cost_ns, 2),
            low = num(i.low, 2),
            high = num(i.high, 2)
        ),
        None => t!("{cost} ns (interval not available)", cost = num(c.read_cost_ns, 2)),
    }
}
