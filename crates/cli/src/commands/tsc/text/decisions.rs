//! Both trust decisions at both levels: PostgreSQL 19's `auto` and
//! clockscope's, one headline each. The one screen adds the frequency
//! PostgreSQL 19 found, then the problems (failed checks, disagreeing
//! sources, NTP) and the one recommendation for `timing_clock_source`; the
//! full report puts PostgreSQL 19's own view first and every check under
//! its decision.

use super::Detail;
use crate::commands::tsc::model::TscOutput;
use crate::i18n::{gettext, pad_right, signed};
use crate::report::text::write_line;
use crate::{n_, t};
use clockscope_system::evidence::Check;
use clockscope_system::tsc::policy::Reason;
use clockscope_system::tsc::TscReport;
use std::io::{self, Write};

/// Writes both decisions at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &TscReport, detail: Detail) -> io::Result<()> {
    if detail == Detail::Full {
        write_postgresql19(out, r)?;
    }
    let a = &r.postgresql_auto;
    let auto = if a.use_by_default {
        t!("uses the TSC (SHOW gives 'auto (tsc)')")
    } else {
        t!("uses the system clock (SHOW gives 'auto (system)')")
    };
    write_line(out, &t!("PostgreSQL 19 timing_clock_source=auto: {auto}", auto = auto))?;
    match detail {
        Detail::Screen => write_postgresql19_frequency(out, r)?,
        Detail::Full => {
            reason_lines(out, &a.reasons)?;
            writeln!(out)?;
        }
    }
    let d = &r.clockscope_decision;
    let trusted = if d.trusted {
        t!("trusted (every check passed)")
    } else {
        t!("NOT trusted (a check failed or its evidence is missing)")
    };
    write_line(out, &t!("clockscope: the TSC is {trusted}", trusted = trusted))?;
    if detail == Detail::Full {
        reason_lines(out, &d.reasons)?;
    }
    Ok(())
}

/// The full report's view of PostgreSQL 19 here, followed by a blank line;
/// nothing when it was not read.
fn write_postgresql19(out: &mut dyn Write, r: &TscReport) -> io::Result<()> {
    if let Some(v) = &r.postgresql19 {
        write_line(
            out,
            t!("PostgreSQL 19.0 here (its pg_test_timing and timing_clock_source decide so)"),
        )?;
        crate::commands::tsc::pg19::write(out, "  ", v)?;
        writeln!(out)?;
    }
    Ok(())
}

/// The one screen's line of the frequency PostgreSQL 19 found and its
/// cross-check; nothing when it was not read.
fn write_postgresql19_frequency(out: &mut dyn Write, r: &TscReport) -> io::Result<()> {
    let Some(v) = &r.postgresql19 else { return Ok(()) };
    let freq = match (v.frequency_khz, v.from_calibration, v.ppm_vs_clockscope) {
        (0, _, _) => t!("cannot read the TSC").to_string(),
        (k, cal, ppm) => {
            let ppm = ppm
                .map(|p| t!(", {ppm} ppm from clockscope's", ppm = format!("{p:+.0}")))
                .unwrap_or_default();
            if cal {
                t!("{khz} kHz from its own calibration{ppm}", khz = k, ppm = ppm)
            } else {
                t!("{khz} kHz from CPUID{ppm}", khz = k, ppm = ppm)
            }
        }
    };
    let check = if v.cross_check_fails {
        t!("; its 10% cross-check FAILS")
    } else {
        ""
    };
    write_line(
        out,
        &t!(
            "  its frequency ({source}): {freq}{check}",
            source = v.frequency_source,
            freq = freq,
            check = check
        ),
    )
}

/// One check of a decision as a table row: its mark, its name (in the
/// report's language where the catalog has it) and the library's evidence.
fn reason_line(c: &Check, mark_w: usize, name_w: usize) -> String {
    let mark = if c.ok { t!("ok") } else { t!("NOT OK") };
    let name = check_name(c.name);
    let evidence = check_evidence(&c.evidence);
    if name.is_empty() {
        format!("{}  {evidence}", pad_right(mark, mark_w))
    } else {
        format!("{}  {}  {evidence}", pad_right(mark, mark_w), pad_right(name, name_w))
    }
}

fn reason_lines(out: &mut dyn Write, reasons: &[Reason]) -> std::io::Result<()> {
    let name_w = crate::report::text::column_width(reasons.iter().map(|r| check_name(r.name)), 0, 0);
    let mark_w = crate::report::text::column_width([t!("ok"), t!("NOT OK")], 0, 6);
    for r in reasons {
        writeln_escaped!(out, "  {}", reason_line(r, mark_w, name_w))?;
    }
    Ok(())
}

/// The names of the TSC decisions' checks (`clockscope_system::tsc::policy`)
/// for the catalog; a name not listed here prints as the library gives it.
const CHECK_NAMES: [&str; 7] = [
    n_!("invariant TSC"),
    n_!("kernel clocksource"),
    n_!("not marked unstable"),
    n_!("no boot option against the TSC"),
    n_!("frequency known and sources agree"),
    n_!("TSC frequency > 0"),
    n_!("TSC_ADJUST or current_clocksource 'tsc'"),
];

/// The library's evidence of every kernel check of a CPUID dump.
const NO_KERNEL: &str = n_!("no kernel evidence (analysing a CPUID dump)");

/// A check's name in the report's language (the names above; any other
/// as the library gives it).
fn check_name(name: &'static str) -> &'static str {
    if CHECK_NAMES.contains(&name) {
        gettext(name)
    } else {
        name
    }
}

/// A check's evidence in the report's language: the dump's missing kernel
/// evidence, or the library's sentence through its catalog entry.
fn check_evidence(evidence: &str) -> String {
    if evidence == NO_KERNEL {
        gettext(NO_KERNEL).to_string()
    } else {
        crate::i18n::library::reason(evidence)
    }
}

/// A failed check as one line, `not ok: name: evidence` in the report's
/// language: the names above and the dump's missing kernel evidence
/// translated, any other evidence as the library words it.
fn failed_check(c: &Check) -> String {
    let name = check_name(c.name);
    let evidence = check_evidence(&c.evidence);
    if name.is_empty() {
        t!("not ok: {evidence}", evidence = evidence)
    } else {
        t!("not ok: {check}: {evidence}", check = name, evidence = evidence)
    }
}

/// The failed checks of both decisions, the flagged frequency sources and
/// an unsynchronised NTP; "Problems: none" when there are none.
pub(super) fn write_problems(out: &mut dyn Write, o: &TscOutput<'_>) -> io::Result<()> {
    let r = o.report;
    let mut lines: Vec<String> = Vec::new();
    for c in r.postgresql_auto.reasons.iter().filter(|c| !c.ok) {
        lines.push(format!("PostgreSQL 19: {}", failed_check(c)));
    }
    for c in r.clockscope_decision.reasons.iter().filter(|c| !c.ok) {
        lines.push(format!("clockscope: {}", failed_check(c)));
    }
    for s in r.frequency_sources.iter().filter(|s| s.flagged) {
        let ppm = s.ppm_vs_in_use.map_or("-".to_string(), |p| signed(p, 1));
        lines.push(t!(
            "{source} differs from the frequency in use by {ppm} ppm",
            source = crate::i18n::library::reason(s.source),
            ppm = ppm
        ));
    }
    if let Some(n) = o.ntp.as_ref().filter(|n| !n.synchronised) {
        lines.push(t!(
            "NTP (adjtimex) is NOT synchronised (state {state})",
            state = n.time_state
        ));
    }
    if o.drift.as_ref().is_some_and(|d| !d.complete) {
        lines.push(t!("--drift was cut short: its result is partial (see --verbose)").to_string());
    }
    if lines.is_empty() {
        return write_line(out, t!("Problems: none"));
    }
    write_line(out, t!("Problems"))?;
    for l in &lines {
        writeln_escaped!(out, "  {l}")?;
    }
    Ok(())
}

/// The one screen's recommendation line.
pub(super) fn write_recommendation(out: &mut dyn Write, r: &TscReport) -> io::Result<()> {
    write_line(
        out,
        &t!("Recommendation: {recommendation}", recommendation = recommendation(r)),
    )
}

/// The one recommendation for PostgreSQL 19's `timing_clock_source`, from
/// both decisions.
fn recommendation(r: &TscReport) -> &'static str {
    match (r.postgresql_auto.use_by_default, r.clockscope_decision.trusted) {
        (true, true) => t!("keep timing_clock_source=auto (PostgreSQL 19 reads the TSC, which clockscope trusts)"),
        (true, false) => {
            t!("set timing_clock_source=system: PostgreSQL 19's auto would read a TSC clockscope does not trust")
        }
        (false, true) => t!(
            "auto reads the system clock; the TSC passes every check, so timing_clock_source=tsc is an option \
             (clockscope check compares their cost)"
        ),
        (false, false) => t!("keep timing_clock_source=auto (the system clock): the TSC is not trusted here"),
    }
}
