//! What every text report shares: the header line naming the tool, the host
//! and the time, and the fitting of every line to
//! [`REPORT_COLUMNS`] (100) columns.
//!
//! Each text renderer writes through [`fitted`]: a line longer than 100
//! columns is wrapped at word boundaries with a hanging indent
//! ([`clockscope::fit`]), so lines added to a report fit without more code.
//! Untrusted values that could make a table row too long (a CPU model name)
//! are shortened with [`cut`] in text only; JSON carries them whole.

use crate::model::stamp::ReportStamp;
use clockscope::escape::escape_untrusted;
pub use clockscope::fit::{cut, fit_line, FitWriter, REPORT_COLUMNS};
use std::io::{self, Write};

/// `out`, with every line fitted to [`REPORT_COLUMNS`].
pub fn fitted(out: &mut dyn Write) -> FitWriter<&mut dyn Write> {
    FitWriter::new(out)
}

/// The header line: `clockscope 0.1.0 on db1, 2026-11-23T19:19:07Z` (the
/// host name escaped, and cut to 40 columns).
pub fn header_line(stamp: &ReportStamp) -> String {
    format!(
        "{} on {}, {}",
        stamp.tool,
        cut(&escape_untrusted(&stamp.host), 40),
        stamp.timestamp
    )
}

/// Writes [`header_line`] and a newline.
pub fn write_header(out: &mut dyn Write, stamp: &ReportStamp) -> io::Result<()> {
    writeln!(out, "{}", header_line(stamp))
}
