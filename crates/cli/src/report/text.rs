//! What every text report shares: the header line naming the tool, the host
//! and the time, and the fitting of every line to
//! [`REPORT_COLUMNS`] (100) columns.
//!
//! Each text renderer writes through [`fitted`]: a line longer than 100
//! columns is wrapped at word boundaries with a hanging indent
//! ([`super::fit`]), so lines added to a report fit without more code.
//! Untrusted values that could make a table row too long (a CPU model name)
//! are shortened with [`cut`] in text only; JSON carries them whole.
//!
//! A trust decision's [`Check`]s are printed in one of the report styles
//! here ([`CheckStyle`], [`check_line`]); the library knows none of them.

pub use super::fit::{cut, fit_line, FitWriter, REPORT_COLUMNS};
use crate::report::stamp::ReportStamp;
use clockscope_system::counter::Check;
use clockscope_system::escape::escape_untrusted;
use std::io::{self, Write};

/// How much a text report says: each command's text is one writer that
/// prints both levels, section by section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// The one screen: the default.
    Screen,
    /// Every check, source, rule and piece of advice: `-v/--verbose`.
    Full,
}

/// `out`, with every line fitted to [`REPORT_COLUMNS`].
pub fn fitted(out: &mut dyn Write) -> FitWriter<&mut dyn Write> {
    FitWriter::new(out)
}

/// The header line: `clockscope 0.1.0 on db1, 2026-11-23T19:19:07Z` (the
/// host name escaped, and cut to 40 columns).
pub fn header_line(stamp: &ReportStamp) -> String {
    crate::t!(
        "{tool} on {host}, {time}",
        tool = stamp.tool,
        host = cut(&escape_untrusted(&stamp.host), 40),
        time = stamp.timestamp
    )
}

/// Writes [`header_line`] and a newline.
pub fn write_header(out: &mut dyn Write, stamp: &ReportStamp) -> io::Result<()> {
    writeln!(out, "{}", header_line(stamp))
}

/// The widest of `texts` in display columns plus `gap`, and at least `min`:
/// a column's width.
pub fn column_width<S: AsRef<str>>(texts: impl IntoIterator<Item = S>, gap: usize, min: usize) -> usize {
    texts
        .into_iter()
        .map(|t| textwrap::core::display_width(t.as_ref()) + gap)
        .max()
        .unwrap_or(0)
        .max(min)
}

/// A table's column widths: each its heading's display width, at least its
/// `mins` (the English widths).
pub fn head_widths(heads: &[&str], mins: &[usize]) -> Vec<usize> {
    heads
        .iter()
        .zip(mins)
        .map(|(h, m)| textwrap::core::display_width(h).max(*m))
        .collect()
}

/// A table's row: `first` left-aligned to `widths[0]`, then each of `rest`
/// right-aligned to its width after a space.
pub fn table_row<S: AsRef<str>>(first: &str, rest: &[S], widths: &[usize]) -> String {
    let mut row = crate::i18n::pad_right(first, widths[0]);
    for (cell, w) in rest.iter().zip(&widths[1..]) {
        row.push(' ');
        row.push_str(&crate::i18n::pad_left(cell.as_ref(), *w));
    }
    row
}

/// A table cell: the value, or `-` without one.
pub fn or_dash<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// Writes `text`, escaped (untrusted text in it is shown, never obeyed), and a newline.
pub fn write_line(out: &mut dyn Write, text: &str) -> io::Result<()> {
    writeln!(out, "{}", escape_untrusted(text))
}

/// How a check is printed: the one formatter behind every report's check lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckStyle {
    /// `ok: name: evidence` / `not ok: name: evidence` (`clockscope check`'s evidence list).
    Colon,
    /// `ok      name  evidence` / `NOT OK  name  evidence`, names padded to
    /// `width` (`clockscope tsc`'s tables).
    Table { width: usize },
}

/// `c` as one line in `style` (no indentation, no newline).
pub fn check_line(c: &Check, style: CheckStyle) -> String {
    let (mark, sep, gap) = match style {
        CheckStyle::Colon => (if c.ok { "ok:" } else { "not ok:" }, ": ", " "),
        CheckStyle::Table { .. } => (if c.ok { "ok    " } else { "NOT OK" }, "  ", "  "),
    };
    match style {
        _ if c.name.is_empty() => format!("{mark}{gap}{}", c.evidence),
        CheckStyle::Table { width } => format!("{mark}{gap}{:<width$}{sep}{}", c.name, c.evidence),
        CheckStyle::Colon => format!("{mark}{gap}{}{sep}{}", c.name, c.evidence),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_formatter_two_styles() {
        let ok = Check::new(true, "RDTSCP", "CPUID 0x80000001 EDX bit 27 set");
        let bad = Check::new(false, "kernel clocksource", "current clocksource is kvm-clock");
        assert_eq!(
            check_line(&ok, CheckStyle::Colon),
            "ok: RDTSCP: CPUID 0x80000001 EDX bit 27 set"
        );
        assert_eq!(
            check_line(&bad, CheckStyle::Colon),
            "not ok: kernel clocksource: current clocksource is kvm-clock"
        );
        assert_eq!(
            check_line(&ok, CheckStyle::Table { width: 8 }),
            "ok      RDTSCP    CPUID 0x80000001 EDX bit 27 set"
        );
        assert_eq!(
            check_line(&bad, CheckStyle::Table { width: 8 }),
            "NOT OK  kernel clocksource  current clocksource is kvm-clock"
        );
        let unnamed = Check::new(false, "", "CNTFRQ_EL0 reads 0");
        assert_eq!(check_line(&unnamed, CheckStyle::Colon), "not ok: CNTFRQ_EL0 reads 0");
        assert_eq!(
            check_line(&unnamed, CheckStyle::Table { width: 0 }),
            "NOT OK  CNTFRQ_EL0 reads 0"
        );
    }
}
