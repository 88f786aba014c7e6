//! The frequency at both levels: the one screen gives the frequency in use
//! (and PostgreSQL 19's, when it would read the TSC); the full report gives
//! the frequency from every source, in ppm against the one in use, and why
//! PostgreSQL 19 and clockscope each chose theirs.

use super::{Detail, SCREEN_LABEL_W};
use crate::i18n::{library::reason, num, pad_left, pad_right, signed};
use crate::report::text::{column_width, or_dash, write_line};
use crate::t;
use clockscope_system::tsc::frequency::{DISAGREEMENT_LIMIT_PPM, PG_SOURCE_CALIBRATION};
use clockscope_system::tsc::TscReport;
use std::io::Write;

/// Writes the frequency at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &TscReport, detail: Detail) -> std::io::Result<()> {
    match detail {
        Detail::Screen => write_in_use(out, r),
        Detail::Full => {
            write_frequency_sources(out, r)?;
            writeln!(out)?;
            write_choices(out, r)
        }
    }
}

/// The frequency clockscope uses and where it comes from, when it has one.
fn in_use_text(r: &TscReport) -> Option<String> {
    let cs = &r.clockscope_frequency;
    let source = reason(cs.source_label?);
    Some(t!("{khz} kHz ({source})", khz = cs.khz?, source = source))
}

/// The one screen's frequency in use, and PostgreSQL 19's when it would
/// read the TSC.
fn write_in_use(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let in_use = in_use_text(r).unwrap_or_else(|| t!("none known").to_string());
    writeln_escaped!(out, "{}{in_use}", pad_right(t!("Frequency"), SCREEN_LABEL_W))?;
    let pg = &r.postgresql_frequency;
    if let (true, Some(k), Some(s)) = (pg.tsc_usable, pg.khz, pg.source) {
        let line = t!("PostgreSQL 19 would use {khz} kHz ({source})", khz = k, source = s);
        writeln_escaped!(out, "{}{line}", " ".repeat(SCREEN_LABEL_W))?;
    }
    Ok(())
}

/// The frequency from every source, in ppm against the one in use, and
/// what the table's marks mean.
fn write_frequency_sources(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let in_use = r.clockscope_frequency.khz;
    let head = match (in_use, r.clockscope_frequency.source_label) {
        (Some(k), Some(s)) => t!(
            "TSC frequency sources (ppm vs the frequency in use: {khz} kHz from {source})",
            khz = k,
            source = reason(s)
        ),
        _ => t!("TSC frequency sources (no frequency in use)").to_string(),
    };
    writeln_escaped!(out, "{head}")?;
    let labels = r.frequency_sources.iter().map(|s| reason(s.source));
    let label_w = column_width(labels.chain([t!("source").into()]), 0, 6);
    writeln_escaped!(
        out,
        "    {}  {}  {}  {}",
        pad_right(t!("source"), label_w),
        pad_left(t!("kHz"), 10),
        pad_left("ppm", 9),
        t!("note")
    )?;
    for s in &r.frequency_sources {
        let flag = if s.flagged { "!" } else { " " };
        let ppm = s.ppm_vs_in_use.map_or("-".to_string(), |p| signed(p, 1));
        let mut note = reason(&s.note);
        if let Some(u) = s.uncertainty_ppm {
            note = t!("±{ppm} ppm; {note}", ppm = num(u, 2), note = note);
        }
        writeln_escaped!(
            out,
            "  {flag} {}  {:>10}  {:>9}  {note}",
            pad_right(&reason(s.source), label_w),
            or_dash(s.khz),
            ppm
        )?;
    }
    write_line(
        out,
        &t!(
            "  ! = differs from the frequency in use by more than {ppm} ppm (plus a calibration's own uncertainty)",
            ppm = DISAGREEMENT_LIMIT_PPM
        ),
    )?;
    write_line(out, t!(
            "  CPUID 0x16, Linux 4.x's crystal table and PostgreSQL's calibration are shown for comparison: they do not count \
             in the agreement check below"
        ))?;
    if r.frequency_sources.iter().any(|s| !s.independent) {
        crate::commands::tsc::evidence::write_wrapped(
            out,
            "  ",
            t!(
                "with clocksource tsc, MONOTONIC(_RAW) is the TSC scaled by the kernel: a calibration against it \
                 checks the kernel's arithmetic and is not independent evidence (not counted below)"
            ),
        )?;
    }
    crate::commands::tsc::evidence::write_wrapped(
        out,
        "  ",
        &t!("Linux's CPUID rule: {rule}", rule = reason(&r.cpuid_tsc_rule)),
    )
}

/// The frequency PostgreSQL 19 would use and the one clockscope uses, and why.
fn write_choices(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let w = column_width([t!("PostgreSQL 19 would use"), t!("clockscope uses")], 2, 26);
    let pg = &r.postgresql_frequency;
    let pg_line = match (pg.tsc_usable, pg.khz, pg.source) {
        (false, _, _) => t!("no TSC").to_string(),
        (true, Some(k), Some(s)) => t!("{khz} kHz ({source})", khz = k, source = s),
        (true, _, _) => t!("no frequency ({source} not available)", source = PG_SOURCE_CALIBRATION),
    };
    writeln_escaped!(out, "{}{pg_line}", pad_right(t!("PostgreSQL 19 would use"), w))?;
    write_line(out, &t!("  why: {why}", why = reason(&pg.why)))?;
    let cs = &r.clockscope_frequency;
    let cs_line = in_use_text(r).unwrap_or_else(|| t!("no frequency").to_string());
    writeln_escaped!(out, "{}{cs_line}", pad_right(t!("clockscope uses"), w))?;
    write_line(out, &t!("  why: {why}", why = reason(&cs.why)))?;
    write_line(
        out,
        &t!(
            "  cross-check: {evidence}",
            evidence = reason(&r.frequency_agreement.evidence)
        ),
    )
}
