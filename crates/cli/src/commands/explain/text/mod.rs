//! The human reports of `clockscope explain`, from a finished [`Report`] of
//! the `clockscope_explain` library, written once with two levels of
//! [`Detail`]: the one screen (the default) and the full report
//! (`-v/--verbose`), section by section, each section's two levels side by
//! side in its file:
//!
//! - `query.rs`: the server and the query (the full level adds the version,
//!   the session's settings, how the runs are made and, for `--query`, the
//!   nodes that pay most);
//! - `sources.rs`: one row per clock source (TIMING OFF, the slowdown and the
//!   overhead per row with their intervals, the prediction), the A/A control
//!   and the order of the runs; in full, each source's runs, overheads and
//!   prediction in a block of its own;
//! - `tsc.rs`: what the TSC would cost on this machine;
//! - `machine.rs`: this machine's clocks and the instrumentation model (full only);
//! - `settings.rs`: the server's timing settings, judged (full only), and the
//!   settings to change;
//! - the warnings, both levels alike.

mod machine;
mod query;
mod settings;
mod sources;
mod tsc;

use crate::i18n::{num, pad_left};
use crate::report::stamp::Stamped;
use crate::report::text::write_line;
pub use crate::report::text::Detail;
use crate::t;
use clockscope_explain::Report;
use std::io::{self, Write};

/// The header line and the one-screen report (the default text).
pub fn write_screen(out: &mut dyn Write, m: &Stamped<'_, Report>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    write(out, m.report, Detail::Screen)
}

/// The header line and the full report (`-v/--verbose`).
pub fn write_full(out: &mut dyn Write, m: &Stamped<'_, Report>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    write(out, m.report, Detail::Full)
}

/// Writes the report at `detail`, every line fitted to 100 columns
/// ([`crate::report::text`]).
pub fn write(out: &mut dyn Write, r: &Report, detail: Detail) -> io::Result<()> {
    let mut fit = crate::report::text::fitted(out);
    let out: &mut dyn Write = &mut fit;
    query::write(out, r, detail)?;
    sources::write(out, r, detail)?;
    tsc::write(out, r, detail)?;
    if detail == Detail::Full {
        machine::write(out, r)?;
    }
    settings::write(out, r, detail)?;
    for w in &r.warnings {
        writeln!(out, "{}", t!("warning: {warning}", warning = warning_text(r, w)))?;
    }
    if detail == Detail::Screen {
        write_line(
            out,
            t!("Settings, runs, model, machine and every timing setting: clockscope explain --verbose"),
        )?;
    }
    Ok(())
}

/// A warning of the report in the reader's language where it is a source's
/// unstated estimate (as the crate words that warning); any other as the
/// crate words it.
fn warning_text(r: &Report, w: &str) -> String {
    r.clock_sources
        .iter()
        .find(|s| *w == format!("{}: {}", s.clock_source, s.result_reason))
        .map_or_else(
            || crate::i18n::library::reason(w),
            |s| format!("{}: {}", s.clock_source, super::words::result_reason(s)),
        )
}

/// `1234567` -> `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    // `100,000` in English; where the comma is the decimal separator, a
    // no-break space (`100 000`), never a comma read as a fraction.
    let sep = if crate::i18n::localize_number(".".into()) == "." {
        ','
    } else {
        '\u{a0}'
    };
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(sep);
        }
        out.push(c);
    }
    out
}

/// `v` with `decimals` digits and `unit`, or `n/a`.
fn opt(v: Option<f64>, decimals: usize, unit: &str) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{}{unit}", num(v, decimals)),
        _ => t!("n/a").into(),
    }
}

/// `  2.993 ms`: a number right-aligned in `w` columns, then its unit.
fn value(v: f64, decimals: usize, w: usize, unit: &str) -> String {
    format!("{} {unit}", pad_left(&num(v, decimals), w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(2_000_006), "2,000,006");
    }
}
