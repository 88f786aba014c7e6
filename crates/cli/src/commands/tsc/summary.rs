//! The one-screen text of `clockscope tsc` on x86 (the default; `--verbose`
//! prints [`super::text`]): what was analysed, the CPU, the frequency in
//! use, both trust decisions, the problems (failed checks, disagreeing
//! sources, NTP) and the one recommendation for `timing_clock_source`.

use crate::commands::tsc::model::TscOutput;
use crate::i18n::{gettext, pad_right, signed};
use crate::{n_, t};
use clockscope_system::evidence::Check;
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
        t!("uses the TSC (SHOW gives 'auto (tsc)')")
    } else {
        t!("uses the system clock (SHOW gives 'auto (system)')")
    };
    writeln_escaped!(
        out,
        "{}",
        t!("PostgreSQL 19 timing_clock_source=auto: {auto}", auto = auto)
    )?;
    if let Some(v) = &r.postgresql19 {
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
        writeln_escaped!(
            out,
            "{}",
            t!(
                "  its frequency ({source}): {freq}{check}",
                source = v.frequency_source,
                freq = freq,
                check = check
            )
        )?;
    }
    let trusted = if r.clockscope_decision.trusted {
        t!("trusted (every check passed)")
    } else {
        t!("NOT trusted (a check failed or its evidence is missing)")
    };
    writeln_escaped!(out, "{}", t!("clockscope: the TSC is {trusted}", trusted = trusted))?;
    writeln!(out)?;
    write_problems(out, o)?;
    writeln!(out)?;
    writeln_escaped!(
        out,
        "{}",
        t!("Recommendation: {recommendation}", recommendation = recommendation(r))
    )?;
    writeln_escaped!(
        out,
        "{}",
        t!("Every check, source and kernel message: clockscope tsc --verbose")
    )
}

/// The machine's labels: 13 columns, as the English ones are.
const LABEL_W: usize = 13;

/// The CPU, the kernel's clocksource and the frequency in use, in a few lines.
fn write_machine(out: &mut dyn Write, r: &TscReport) -> io::Result<()> {
    if let Some(f) = &r.cpuid {
        let hv = f.hypervisor.as_ref().map_or(String::new(), |h| {
            t!(", guest of \"{hypervisor}\"", hypervisor = h.signature)
        });
        let cpu = t!(
            "{brand} ({vendor}, family {family} model {model}){hypervisor}",
            brand = f.brand.as_deref().unwrap_or(t!("(no brand)")),
            vendor = f.vendor,
            family = format!("{:#x}", f.family),
            model = format!("{:#x}", f.model),
            hypervisor = hv
        );
        writeln_escaped!(out, "{}{cpu}", pad_right(t!("CPU"), LABEL_W))?;
    }
    if let Some(k) = &r.linux {
        let kernel = t!(
            "{release}, clocksource {current} (available: {available})",
            release = k.kernel_release.describe(|s| s.clone()),
            current = k.current_clocksource.describe(|s| s.clone()),
            available = k.available_clocksources.describe(|v| v.join(" "))
        );
        writeln_escaped!(out, "{}{kernel}", pad_right(t!("Kernel"), LABEL_W))?;
    }
    let cs = &r.clockscope_frequency;
    let in_use = match (cs.khz, cs.source_label) {
        (Some(k), Some(s)) => t!(
            "{khz} kHz ({source})",
            khz = k,
            source = crate::i18n::library::reason(s)
        ),
        _ => t!("none known").to_string(),
    };
    writeln_escaped!(out, "{}{in_use}", pad_right(t!("Frequency"), LABEL_W))?;
    let pg = &r.postgresql_frequency;
    if let (true, Some(k), Some(s)) = (pg.tsc_usable, pg.khz, pg.source) {
        let line = t!("PostgreSQL 19 would use {khz} kHz ({source})", khz = k, source = s);
        writeln_escaped!(out, "{}{line}", " ".repeat(LABEL_W))?;
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
pub(super) fn check_name(name: &'static str) -> &'static str {
    if CHECK_NAMES.contains(&name) {
        gettext(name)
    } else {
        name
    }
}

/// A check's evidence in the report's language: the dump's missing kernel
/// evidence, or the library's sentence through its catalog entry.
pub(super) fn check_evidence(evidence: &str) -> String {
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
fn write_problems(out: &mut dyn Write, o: &TscOutput<'_>) -> io::Result<()> {
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
        return writeln_escaped!(out, "{}", t!("Problems: none"));
    }
    writeln_escaped!(out, "{}", t!("Problems"))?;
    for l in &lines {
        writeln_escaped!(out, "  {l}")?;
    }
    Ok(())
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
