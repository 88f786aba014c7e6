//! The human reports of `clockscope tsc`, written once with two levels of
//! [`Detail`]: the one screen (the default on x86) and the full report
//! (`-v/--verbose`), section by section, each section's two levels side by
//! side in its file:
//!
//! - what was analysed (`write_source`, both levels alike);
//! - `machine.rs`: the CPU and the kernel (one line each on the screen; the
//!   CPU's identity, its CPUID flags and the kernel's evidence and messages
//!   in full);
//! - `frequency.rs`: the frequency in use (and PostgreSQL 19's); the full
//!   level adds every source, in ppm, and why each frequency was chosen;
//! - `decisions.rs`: both trust decisions (the full level with every check),
//!   then the screen's problems and its one recommendation.
//!
//! The full report ends with the evidence beside it: NTP and `--drift`.
//! On aarch64 `tsc` prints [`super::generic_timer::write_output`] in their place.

mod decisions;
mod frequency;
mod machine;

use crate::commands::tsc::model::TscOutput;
use crate::report::stamp::Stamped;
use crate::report::text::write_line;
pub use crate::report::text::Detail;
use crate::t;
use clockscope_system::tsc::report::ReportSource;
use clockscope_system::tsc::TscReport;
use std::io::{self, Write};
use std::path::Path;

/// The one screen's labels (`CPU`, `Kernel`, `Frequency`): 13 columns, as
/// the English ones are.
const SCREEN_LABEL_W: usize = 13;

/// The header line and the report at `detail`: the one screen (the default
/// text on x86), or the full TSC report and the evidence beside it (NTP, `--drift`).
pub fn write_stamped(out: &mut dyn Write, m: &Stamped<'_, TscOutput<'_>>, detail: Detail) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    write(out, m.report, detail)
}

/// Writes the report at `detail`, every line of the report fitted to 100
/// columns ([`crate::report::text`]); the full level's NTP and `--drift`
/// follow, wrapped by their own writers.
pub fn write(out: &mut dyn Write, o: &TscOutput<'_>, detail: Detail) -> io::Result<()> {
    write_report(&mut crate::report::text::fitted(out), o, detail)?;
    if detail == Detail::Full {
        write_evidence(out, o)?;
    }
    Ok(())
}

/// The report's skeleton: its sections in order, at `detail`.
fn write_report(out: &mut dyn Write, o: &TscOutput<'_>, detail: Detail) -> io::Result<()> {
    let r = o.report;
    let full = detail == Detail::Full;
    write_source(out, r, o.dump)?;
    if full {
        writeln!(out)?;
    }
    machine::write(out, r, detail)?;
    if full {
        writeln!(out)?;
    }
    frequency::write(out, r, detail)?;
    writeln!(out)?;
    decisions::write(out, r, detail)?;
    if full {
        return Ok(());
    }
    writeln!(out)?;
    decisions::write_problems(out, o)?;
    writeln!(out)?;
    decisions::write_recommendation(out, r)?;
    write_line(
        out,
        t!("Every check, source and kernel message: clockscope tsc --verbose"),
    )
}

/// What was analysed: this machine (under which root) or a CPUID dump.
fn write_source(out: &mut dyn Write, r: &TscReport, dump: Option<&Path>) -> std::io::Result<()> {
    match (&r.evidence_source, dump) {
        (ReportSource::CpuidDump { format, leaves }, Some(p)) => {
            // The same English for every count (its text before catalogs);
            // the plural forms are the catalogs'.
            let line = crate::tn!(
                "CPUID dump {path} ({format} format, {n} leaves, first CPU)",
                "CPUID dump {path} ({format} format, {n} leaves, first CPU)",
                *leaves,
                path = p.display(),
                format = format,
                n = leaves
            );
            writeln_escaped!(out, "{line}")?;
            writeln_escaped!(
                out,
                "{}",
                crate::t!(
                    "  analysing a dump: no kernel evidence, no perf page, no calibration; both decisions lack the kernel's part"
                )
            )?;
        }
        (ReportSource::CpuidDump { format, leaves }, None) => {
            let line = crate::tn!(
                "CPUID dump ({format} format, {n} leaves)",
                "CPUID dump ({format} format, {n} leaves)",
                *leaves,
                format = format,
                n = leaves
            );
            writeln_escaped!(out, "{line}")?;
        }
        (ReportSource::ThisMachine { root }, _) if root != "/" => {
            writeln_escaped!(
                out,
                "{}",
                crate::t!("This machine (kernel files under {root})", root = root)
            )?;
        }
        (ReportSource::ThisMachine { .. }, _) => writeln_escaped!(out, "{}", crate::t!("This machine"))?,
    }
    Ok(())
}

/// The full report's tail: NTP, and the `--drift` result when measured.
fn write_evidence(out: &mut dyn Write, o: &TscOutput<'_>) -> io::Result<()> {
    writeln!(out)?;
    write_line(out, t!("NTP (adjtimex, read-only)"))?;
    super::evidence::write_ntp(
        out,
        "  ",
        o.ntp.as_ref().ok_or(o.ntp_unavailable.as_deref().unwrap_or("not read")),
    )?;
    if let Some(d) = &o.drift {
        writeln!(out)?;
        super::evidence::write_drift(out, d)?;
    }
    Ok(())
}

/// A label used as a heading: its first letter upper-case (`процессор`,
/// the label, is the heading `Процессор`; English is unchanged).
pub(super) fn heading(label: &str) -> String {
    let mut c = label.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}
