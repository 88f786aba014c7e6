//! The human reports of `clockscope check`, written once with two levels of
//! [`Detail`]: the one screen (the default) and the full report
//! (`-v/--verbose`), section by section, each section's two levels side by
//! side in its file:
//!
//! - [`environment`]: the kernel, clocksource, CPU, counter and PostgreSQL (the
//!   full level adds NTP, the counter's evidence and the kernel's messages);
//! - [`clocks`]: one row per clock (every percentile at the full level) and
//!   the interference block (full only);
//! - [`verdict`]: the status with its headline, the recommendation and the
//!   problems (the full level adds every rule, the EXPLAIN ANALYZE prediction
//!   and the advice);
//! - [`brief`]: `--brief`, at most [`BRIEF_MAX_LINES`] lines for a ticket.

mod brief;
mod clocks;
mod environment;
mod verdict;

pub use brief::{write_brief, BRIEF_MAX_LINES};

use crate::commands::check::model::verdict::Status;
use crate::commands::check::model::{CheckReport, MeasurementQuality};
use crate::i18n::num;
use crate::report::text::write_line;
pub use crate::report::text::Detail;
use crate::t;
use clockscope_system::escape::escape_untrusted as esc;
use std::io::{self, Write};

/// Most lines the one-screen report prints for the default clocks.
pub const SCREEN_MAX_LINES: usize = 40;

/// Writes the one-screen report (the default text).
pub fn write_screen(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    write(out, r, Detail::Screen)
}

/// Writes the full report (`-v/--verbose`).
pub fn write_full(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    write(out, r, Detail::Full)
}

/// Writes the report at `detail`, every line fitted to 100 columns
/// ([`crate::report::text`]).
pub fn write(out: &mut dyn Write, r: &CheckReport, detail: Detail) -> io::Result<()> {
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    crate::report::text::write_header(out, &r.stamp)?;
    writeln!(out)?;
    environment::write(out, r, detail)?;
    writeln!(out)?;
    clocks::write(out, r, detail)?;
    if detail == Detail::Full {
        clocks::write_interference(out, r)?;
    }
    writeln!(out)?;
    verdict::write(out, r, detail)?;
    write_interrupted(out, r)?;
    if detail == Detail::Screen {
        write_line(
            out,
            t!("More: clockscope check -v (frequency checks, NTP, kernel log, interference, every rule)"),
        )?;
    }
    Ok(())
}

/// How long each clock was measured, from the measurements: "0.38 s each,
/// within 1 s per clock" ("0.38-0.50 s each, ..."), or, for an interrupted
/// run, "measured 0.20 s each of 20 s asked for, interrupted".
fn measured_time(r: &CheckReport) -> String {
    let secs: Vec<f64> = r.clocks.iter().map(|c| c.elapsed_ns as f64 / 1e9).collect();
    let lo = secs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = secs.iter().copied().fold(0.0, f64::max);
    let asked = crate::i18n::localize_number(r.duration_per_clock_s.to_string());
    if secs.is_empty() {
        return t!("none measured of {asked} s asked for", asked = asked);
    }
    // Two decimals, more below 0.1 s (a 1 ms run is not "0.00 s").
    let fmt = |s: f64| if s >= 0.1 { num(s, 2) } else { num(s, 4) };
    let span = if fmt(lo) == fmt(hi) {
        t!("{seconds} s", seconds = fmt(hi))
    } else {
        t!("{low}-{high} s", low = fmt(lo), high = fmt(hi))
    };
    // `-d` is each clock's budget: its measurement (half of it when the
    // first run is clean; repeats of a noisy run inside it) and its EXPLAIN
    // model; a chunk may overrun it on a busy machine.
    if r.interrupted {
        t!(
            "measured {span} each of {asked} s asked for, interrupted",
            span = span,
            asked = asked
        )
    } else {
        t!("{span} each, within {asked} s per clock", span = span, asked = asked)
    }
}

/// How noisy the run was, as a figure, for both text forms: "measurement:
/// 0.3% of the run lost to interference (quiet; noisy from 10%)" or
/// "measurement: NOISY, 45.2% of the run lost to interference (noisy from
/// 10%)".
fn interference_words(r: &CheckReport) -> String {
    let pct = r.interference_lost_fraction * 100.0;
    let from = clockscope_system::interference::NOISY_LOST_FRACTION * 100.0;
    // One decimal, two below 1% (a quiet run is not "0.0%").
    let figure = if pct >= 1.0 { num(pct, 1) } else { num(pct, 2) };
    let from = num(from, 0);
    match r.measurement_quality {
        MeasurementQuality::Clean => t!(
            "measurement: {figure}% of the run lost to interference (quiet; noisy from {from}%)",
            figure = figure,
            from = from
        ),
        MeasurementQuality::Noisy => t!(
            "measurement: NOISY, {figure}% of the run lost to interference (noisy from {from}%)",
            figure = figure,
            from = from
        ),
    }
}

/// The verdict's status as the report prints it.
fn status_word(s: Status) -> &'static str {
    match s {
        Status::Good => t!("GOOD"),
        Status::Fair => t!("FAIR"),
        Status::Bad => t!("BAD"),
        Status::Broken => t!("BROKEN"),
        Status::NoVerdict => t!("NO VERDICT"),
    }
}

/// The skipped clocks' rows and the legend naming each clock in full (both
/// text forms print them under their clocks table).
fn write_skipped_and_names(out: &mut dyn Write, r: &CheckReport, name_w: usize) -> io::Result<()> {
    for s in &r.skipped {
        let skipped = t!(
            "skipped: {reason}",
            reason = esc(&crate::i18n::library::reason(&s.reason))
        );
        writeln!(out, "  {} {skipped}", crate::i18n::pad_right(&esc(&s.name), name_w))?;
    }
    let names: Vec<String> = r
        .clocks
        .iter()
        .map(|c| format!("{} = {}", esc(&c.name), esc(&c.display_name)))
        .collect();
    if !names.is_empty() {
        writeln!(out, "  {}", names.join("; "))?;
    }
    Ok(())
}

/// The line that says a Ctrl-C (or SIGTERM) cut the run short (both text forms).
fn write_interrupted(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    if r.interrupted {
        write_line(
            out,
            t!("Interrupted: the numbers above cover only what was measured before Ctrl-C (or SIGTERM)."),
        )?;
    }
    Ok(())
}
