//! The text formats of `clockscope tsc` (its JSON goes through
//! [`crate::report::json`]): [`write_text`] on x86, [`write_generic_timer_text`]
//! on aarch64.
//!
//! - [`summary`]: the one-screen x86 report (the default text).
//! - [`text`]: the full x86 TSC report (`--verbose`).
//! - [`evidence`]: kernel messages, NTP and drift (also in `check`).
//! - [`generic_timer`]: the ARM generic timer report, printed in its place on aarch64.
//! - [`pg19`]: what PostgreSQL 19 will do with the TSC here (also in `check -v`).

use crate::commands::tsc::model::{GenericTimerOutput, TscOutput};
use crate::report::stamp::Stamped;
use std::io::{self, Write};

/// The header line, the TSC report and the evidence beside it (NTP, `--drift`).
pub fn write_text(out: &mut dyn Write, m: &Stamped<'_, TscOutput<'_>>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    super::text::write_output(out, m.report)
}

/// The header line and the one-screen summary (the default text on x86).
pub fn write_summary_text(out: &mut dyn Write, m: &Stamped<'_, TscOutput<'_>>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    super::summary::write(out, m.report)
}

/// The header line, the generic timer's report and the `--drift` result when measured.
pub fn write_generic_timer_text(out: &mut dyn Write, m: &Stamped<'_, GenericTimerOutput<'_>>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    super::generic_timer::write(out, m.report.report)?;
    if let Some(d) = m.report.drift {
        writeln!(out)?;
        super::evidence::write_drift(out, d)?;
    }
    Ok(())
}
