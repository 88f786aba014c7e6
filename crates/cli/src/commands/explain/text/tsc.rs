//! What the TSC would cost on this machine, at both levels: the predicted
//! slowdown scaled by a measured source's observed / predicted (the full
//! report adds the overhead per row and RDTSC's read cost in the model),
//! and which PostgreSQL reads it.

use super::Detail;
use crate::i18n::num;
use crate::t;
use clockscope_explain::measure::PG19_VERSION_NUM;
use clockscope_explain::report::TscPrediction;
use clockscope_explain::Report;
use std::io::{self, Write};

/// Writes the TSC's prediction at `detail`, after a blank line; nothing
/// when it was not predicted.
pub(super) fn write(out: &mut dyn Write, r: &Report, detail: Detail) -> io::Result<()> {
    let Some(t) = &r.tsc_prediction else { return Ok(()) };
    writeln!(out)?;
    let before_19 = r.server_version_num < PG19_VERSION_NUM;
    match detail {
        Detail::Screen => write_screen(out, t, before_19)?,
        Detail::Full => write_full(out, t, before_19)?,
    }
    writeln!(
        out,
        "  {}",
        crate::commands::explain::words::used_by(t, r.server_version_num)
    )
}

/// The one screen's line: the slowdown, and how it was scaled.
fn write_screen(out: &mut dyn Write, t: &TscPrediction, before_19: bool) -> io::Result<()> {
    let scaled = t.scaled_slowdown.map_or_else(
        || t!("{clock} not resolved, so not scaled", clock = t.from_clock_source),
        |x| {
            t!(
                "{x}x scaled by {clock}'s observed / predicted",
                x = num(x, 2),
                clock = t.from_clock_source
            )
        },
    );
    let line = if before_19 {
        t!(
            "With PostgreSQL 19's timing_clock_source = tsc: about {x}x predicted ({scaled})",
            x = num(t.predicted_slowdown, 2),
            scaled = scaled
        )
    } else {
        t!(
            "With timing_clock_source = tsc: about {x}x predicted ({scaled})",
            x = num(t.predicted_slowdown, 2),
            scaled = scaled
        )
    };
    writeln!(out, "{line}")
}

/// The full report's lines: the slowdown and the overhead per row from
/// RDTSC's read cost in the model, then scaled.
fn write_full(out: &mut dyn Write, t: &TscPrediction, before_19: bool) -> io::Result<()> {
    let lead = if before_19 {
        t!("With PostgreSQL 19 on this machine (timing_clock_source = tsc)")
    } else {
        t!("With timing_clock_source = tsc on this machine")
    };
    let line = t!(
        "{lead}: about {x}x predicted ({row} ns per row at RDTSC's {read} ns per read in the model);",
        lead = lead,
        x = num(t.predicted_slowdown, 2),
        row = num(t.predicted_overhead_per_row_ns, 2),
        read = num(t.rdtsc_per_read_ns, 2)
    );
    writeln!(out, "{line}")?;
    let scaled = match (t.scaled_slowdown, t.scaled_overhead_per_row_ns) {
        (Some(x), Some(ns)) => t!(
            "  {x}x ({ns} ns per row) scaled by the {clock} source's observed / predicted",
            x = num(x, 2),
            ns = num(ns, 2),
            clock = t.from_clock_source
        ),
        _ => t!(
            "  not scaled: the {clock} source's observed / predicted is not resolved",
            clock = t.from_clock_source
        ),
    };
    writeln!(out, "{scaled}")
}
