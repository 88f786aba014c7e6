//! The drop-in for PostgreSQL 19's `pg_test_timing`: the same command line,
//! messages, exit codes and output, on any machine, with clockscope's clocks.
//!
//! Sections, in PostgreSQL's order: the system clock (`clock_gettime
//! (CLOCK_MONOTONIC)`), then on machines with a usable CPU counter the precise
//! read (RDTSCP) and the fast read (RDTSC) blocks, the counter's frequency
//! lines and whether PostgreSQL 19 would use it by default. A backward step
//! ends the run with PostgreSQL's two-line message and exit 1.

pub mod args;
pub mod report;

use clockscope::measure::{measure, Control, Measurement};
use clockscope::ClockSource;
use std::io::{self, Write};

/// The CPU-counter part of the run: its precise and fast reads and the lines
/// that describe its frequency.
pub struct CounterSection<'a, P: ClockSource, F: ClockSource> {
    /// Read for the `Clock source:` block (RDTSCP).
    pub precise: &'a P,
    /// Read inside the `Fast clock source:` loop (RDTSC); its ordered read
    /// takes the start and end.
    pub fast: &'a F,
    /// Printed after the fast block (`TSC frequency source: ...`, ...).
    pub info_lines: Vec<String>,
    /// Printed last, after an empty line (`TSC clock source will ...`).
    pub decision_line: String,
}

/// Whether the counter can be measured, and if not, what to print instead.
pub enum Counter<'a, P: ClockSource, F: ClockSource> {
    Usable(CounterSection<'a, P, F>),
    /// PostgreSQL's "not usable" sentence (x86-64 without a TSC frequency).
    NotUsable(&'static str),
    /// Nothing at all (PostgreSQL builds without a counter clock).
    Absent,
}

/// The lines PostgreSQL 19 prints about the TSC frequency and policy.
pub fn tsc_lines(
    frequency_source: &str,
    frequency_khz: u64,
    calibrated_khz: Option<u64>,
    use_by_default: bool,
) -> (Vec<String>, String) {
    let mut lines = vec![
        format!("TSC frequency source: {frequency_source}"),
        format!("TSC frequency in use: {frequency_khz} kHz"),
    ];
    lines.push(match calibrated_khz {
        Some(k) => format!("TSC frequency from calibration: {k} kHz"),
        None => "TSC calibration did not converge".to_string(),
    });
    let decision = if use_by_default {
        "TSC clock source will be used by default, unless timing_clock_source is set to 'system'."
    } else {
        "TSC clock source will not be used by default, unless timing_clock_source is set to 'tsc'."
    };
    (lines, decision.to_string())
}

/// One timed block; `Err(backward_ns)` when time went backwards.
fn timed_block<C: ClockSource>(
    out: &mut dyn Write,
    clock: &C,
    duration_s: u32,
    cutoff_pct: f64,
) -> io::Result<Result<Measurement, u64>> {
    out.flush()?;
    let m = measure(clock, duration_s as u64 * 1_000_000_000, |p| {
        if p.backward_steps > 0 {
            Control::Stop
        } else {
            Control::Continue
        }
    });
    if let Some(back) = m.backward.first_ns {
        return Ok(Err(back));
    }
    report::write_average(out, &m)?;
    report::write_histograms(out, &m, cutoff_pct)?;
    Ok(Ok(m))
}

/// Runs pg_test_timing with `opts` on the given clocks; returns the exit code.
pub fn run<S: ClockSource, P: ClockSource, F: ClockSource>(
    opts: &args::Options,
    system: &S,
    counter: Counter<'_, P, F>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<u8> {
    let warp = |err: &mut dyn Write, ns| report::write_time_warp(err, ns).map(|_| 1u8);
    report::write_intro(out, opts.duration_s)?;
    writeln!(out, "System clock source: {}", system.name())?;
    if let Err(ns) = timed_block(out, system, opts.duration_s, opts.cutoff_pct)? {
        out.flush()?;
        return warp(err, ns);
    }
    match counter {
        Counter::Absent => {}
        Counter::NotUsable(sentence) => {
            writeln!(out)?;
            writeln!(out, "{sentence}")?;
        }
        Counter::Usable(section) => {
            writeln!(out)?;
            writeln!(out, "Clock source: {}", section.precise.name())?;
            if let Err(ns) = timed_block(out, section.precise, opts.duration_s, opts.cutoff_pct)? {
                out.flush()?;
                return warp(err, ns);
            }
            writeln!(out)?;
            writeln!(out, "Fast clock source: {}", section.fast.name())?;
            if let Err(ns) = timed_block(out, section.fast, opts.duration_s, opts.cutoff_pct)? {
                out.flush()?;
                return warp(err, ns);
            }
            writeln!(out)?;
            for line in &section.info_lines {
                writeln!(out, "{line}")?;
            }
            writeln!(out)?;
            writeln!(out, "{}", section.decision_line)?;
        }
    }
    out.flush()?;
    Ok(0)
}
