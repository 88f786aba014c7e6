//! The formats of `clockscope explain`: [`text`] renders the
//! `clockscope_explain` library's finished
//! [`Report`] (the library keeps the model and
//! its arithmetic, the CLI every way of printing it); JSON goes through the
//! shared [`crate::report::json`].

use crate::report::stamp::Stamped;
use clockscope_explain::Report;
use std::io::{self, Write};

/// The header line and the one-screen summary (the default text).
pub fn write_summary_text(out: &mut dyn Write, m: &Stamped<'_, Report>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    super::summary::write(out, m.report)
}

/// The header line and the full text report (`--verbose`).
pub fn write_text(out: &mut dyn Write, m: &Stamped<'_, Report>) -> io::Result<()> {
    crate::report::text::write_header(out, m.stamp)?;
    super::text::write(out, m.report)
}
