//! The drop-in for PostgreSQL 19's `pg_test_timing`: the same command line,
//! messages, exit codes and output, on any machine, with clockscope's clocks.
//!
//! The layout is upstream PostgreSQL's committed `pg_test_timing.c` (master
//! at catversion 202604061, after the TSC clock source was committed):
//! `Testing timing overhead ...`, the system clock block (`clock_gettime
//! (CLOCK_MONOTONIC)`), then on x86-64 an empty line and either PostgreSQL's
//! "not usable" sentence or the precise read (RDTSCP) block, an empty line,
//! the fast read (RDTSC) block, an empty line, `TSC frequency in use`, the
//! calibration line (a fresh run of PostgreSQL's calibration, after the
//! blocks, as upstream runs it) and whether PostgreSQL 19 would use the TSC
//! by default. A backward step ends the run with PostgreSQL's two-line
//! message and exit 1.
//!
//! - [`args`]: PostgreSQL's `handle_args`, over [`getopt`] (glibc's
//!   `getopt_long`) and [`c_numbers`] (the C library's `strtoul`/`strtod`).
//! - [`report`]: the average line and the two tables of each block.

pub mod args;
// The crate's only unsafe code: calls into the C library's strtod/strtoul.
#[allow(unsafe_code)]
pub mod c_numbers;
pub mod getopt;
pub mod report;

use clockscope::measure::pg_loop::{pg_test_timing_loop, PgOutcome, PgTicksToNs};
use clockscope::ClockSource;
use std::io::{self, Write};

/// The lines printed after the fast block, computed at that point (the
/// calibration runs there, as upstream's does).
pub type ClosingLines<'a> = Box<dyn FnOnce() -> Vec<String> + 'a>;

/// The CPU-counter part of the run: its precise and fast reads and the lines
/// that close it.
pub struct CounterSection<'a, P: ClockSource, F: ClockSource> {
    /// Read for the `Clock source:` block (RDTSCP).
    pub precise: &'a P,
    /// Read inside the `Fast clock source:` loop (RDTSC); its ordered read
    /// takes the start and end.
    pub fast: &'a F,
    /// Printed after the fast block and an empty line (on x86-64
    /// [`tsc_lines`]: frequency in use, from calibration, the policy).
    pub closing_lines: ClosingLines<'a>,
}

/// Whether the counter can be measured, and if not, what to print instead.
pub enum Counter<'a, P: ClockSource, F: ClockSource> {
    Usable(CounterSection<'a, P, F>),
    /// PostgreSQL's "not usable" sentence (x86-64 without a TSC frequency).
    NotUsable(&'static str),
    /// Nothing at all (PostgreSQL builds without a counter clock).
    Absent,
}

/// The lines upstream PostgreSQL prints after the fast block:
/// `TSC frequency in use: N kHz`, then `TSC frequency from calibration: N kHz`
/// or `TSC calibration did not converge`, then the `auto` policy's sentence
/// (no empty line before it).
///
/// `in_use_khz` is the frequency the TSC blocks were converted with;
/// `calibrated_khz` is PostgreSQL's calibration's result (`None` or 0: did
/// not converge).
pub fn tsc_lines(in_use_khz: u64, calibrated_khz: Option<u64>, use_by_default: bool) -> Vec<String> {
    let calibration = match calibrated_khz.filter(|&k| k > 0) {
        Some(k) => format!("TSC frequency from calibration: {k} kHz"),
        None => "TSC calibration did not converge".to_string(),
    };
    let decision = if use_by_default {
        "TSC clock source will be used by default, unless timing_clock_source is set to 'system'."
    } else {
        "TSC clock source will not be used by default, unless timing_clock_source is set to 'tsc'."
    };
    vec![
        format!("TSC frequency in use: {in_use_khz} kHz"),
        calibration,
        decision.to_string(),
    ]
}

/// One timed block, PostgreSQL 19's loop converting with PostgreSQL's
/// arithmetic for the clock's scale; `Err(backward_ns)` when time went
/// backwards.
fn timed_block<C: ClockSource>(
    out: &mut dyn Write,
    clock: &C,
    duration_s: u32,
    cutoff_pct: f64,
) -> io::Result<Result<(), u64>> {
    out.flush()?;
    let conv = PgTicksToNs::for_scale(clock.scale());
    match pg_test_timing_loop(clock, conv, duration_s as u64 * 1_000_000_000) {
        PgOutcome::Backward { ns } => Ok(Err(ns)),
        PgOutcome::Done(run) => {
            report::write_average(out, &run)?;
            report::write_histograms(out, &run, cutoff_pct)?;
            Ok(Ok(()))
        }
    }
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
            out.flush()?;
            for line in (section.closing_lines)() {
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(0)
}
