//! The one-screen text of `clockscope tsc` on x86 (the default; `--verbose`
//! prints [`super::text`]): what was analysed, the CPU, the frequency in
//! use, both trust decisions, the problems (failed checks, disagreeing
//! sources, NTP) and the one recommendation for `timing_clock_source`.

use crate::commands::tsc::model::TscOutput;
use crate::report::text::{check_line, CheckStyle};
use clockscope_system::tsc::TscReport;
use std::io::{self, Write};

/// Writes the summary (every line fitted to 100 columns).
pub fn write(out: &mut dyn Write, o: &TscOutput<'_>) -> io::Result<()> {
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    let r = o.report;
    super::text::write_source(out, r, o.dump)?;
    write_machine(out, r)?;
    writeln!(out)?;
    let auto = if r.postgresql_auto.use_by_default {
        "uses the TSC (SHOW gives 'auto (tsc)')"
    } else {
        "uses the system clock (SHOW gives 'auto (system)')"
    };
    writeln_escaped!(out, "PostgreSQL 19 timing_clock_source=auto: {auto}")?;
    if let Some(v) = &r.postgresql19 {
        let freq = match (v.frequency_khz, v.from_calibration, v.ppm_vs_clockscope) {
            (0, _, _) => "cannot read the TSC".to_string(),
            (k, cal, ppm) => format!(
                "{k} kHz from {}{}",
                if cal { "its own calibration" } else { "CPUID" },
                ppm.map(|p| format!(", {p:+.0} ppm from clockscope's"))
                    .unwrap_or_default()
            ),
        };
        let check = if v.cross_check_fails {
            "; its 10% cross-check FAILS"
        } else {
            ""
        };
        writeln_escaped!(out, "  its frequency ({}): {freq}{check}", v.frequency_source)?;
    }
    let trusted = if r.clockscope_decision.trusted {
        "trusted (every check passed)"
    } else {
        "NOT trusted (a check failed or its evidence is missing)"
    };
    writeln_escaped!(out, "clockscope: the TSC is {trusted}")?;
    writeln!(out)?;
    write_problems(out, o)?;
    writeln!(out)?;
    writeln_escaped!(out, "Recommendation: {}", recommendation(r))?;
    writeln_escaped!(out, "Every check, source and kernel message: clockscope tsc --verbose")
}

/// The CPU, the kernel's clocksource and the frequency in use, in a few lines.
fn write_machine(out: &mut dyn Write, r: &TscReport) -> io::Result<()> {
    if let Some(f) = &r.cpuid {
        let hv = f
            .hypervisor
            .as_ref()
            .map_or(String::new(), |h| format!(", guest of \"{}\"", h.signature));
        writeln_escaped!(
            out,
            "CPU          {} ({}, family {:#x} model {:#x}){hv}",
            f.brand.as_deref().unwrap_or("(no brand)"),
            f.vendor,
            f.family,
            f.model
        )?;
    }
    if let Some(k) = &r.linux {
        writeln_escaped!(
            out,
            "Kernel       {}, clocksource {} (available: {})",
            k.kernel_release.describe(|s| s.clone()),
            k.current_clocksource.describe(|s| s.clone()),
            k.available_clocksources.describe(|v| v.join(" "))
        )?;
    }
    let cs = &r.clockscope_frequency;
    let in_use = match (cs.khz, cs.source_label) {
        (Some(k), Some(s)) => format!("{k} kHz ({s})"),
        _ => "none known".to_string(),
    };
    writeln_escaped!(out, "Frequency    {in_use}")?;
    let pg = &r.postgresql_frequency;
    if let (true, Some(k), Some(s)) = (pg.tsc_usable, pg.khz, pg.source) {
        writeln_escaped!(out, "             PostgreSQL 19 would use {k} kHz ({s})")?;
    }
    Ok(())
}

/// The failed checks of both decisions, the flagged frequency sources and
/// an unsynchronised NTP; "Problems: none" when there are none.
fn write_problems(out: &mut dyn Write, o: &TscOutput<'_>) -> io::Result<()> {
    let r = o.report;
    let mut lines: Vec<String> = Vec::new();
    for c in r.postgresql_auto.reasons.iter().filter(|c| !c.ok) {
        lines.push(format!("PostgreSQL 19: {}", check_line(c, CheckStyle::Colon)));
    }
    for c in r.clockscope_decision.reasons.iter().filter(|c| !c.ok) {
        lines.push(format!("clockscope: {}", check_line(c, CheckStyle::Colon)));
    }
    for s in r.frequency_sources.iter().filter(|s| s.flagged) {
        let ppm = s.ppm_vs_in_use.map_or("-".to_string(), |p| format!("{p:+.1}"));
        lines.push(format!("{} differs from the frequency in use by {ppm} ppm", s.source));
    }
    if let Some(n) = o.ntp.as_ref().filter(|n| !n.synchronised) {
        lines.push(format!("NTP (adjtimex) is NOT synchronised (state {})", n.time_state));
    }
    if o.drift.as_ref().is_some_and(|d| !d.complete) {
        lines.push("--drift was cut short: its result is partial (see --verbose)".to_string());
    }
    if lines.is_empty() {
        return writeln_escaped!(out, "Problems: none");
    }
    writeln_escaped!(out, "Problems")?;
    for l in &lines {
        writeln_escaped!(out, "  {l}")?;
    }
    Ok(())
}

/// The one recommendation for PostgreSQL 19's `timing_clock_source`, from
/// both decisions.
fn recommendation(r: &TscReport) -> &'static str {
    match (r.postgresql_auto.use_by_default, r.clockscope_decision.trusted) {
        (true, true) => "keep timing_clock_source=auto (PostgreSQL 19 reads the TSC, which clockscope trusts)",
        (true, false) => {
            "set timing_clock_source=system: PostgreSQL 19's auto would read a TSC clockscope does not trust"
        }
        (false, true) => {
            "auto reads the system clock; the TSC passes every check, so timing_clock_source=tsc is an option \
             (clockscope check compares their cost)"
        }
        (false, false) => "keep timing_clock_source=auto (the system clock): the TSC is not trusted here",
    }
}
