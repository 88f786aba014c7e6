//! JSON output: the serialised report, pretty-printed, one trailing newline.

use serde::Serialize;
use std::io::{self, Write};

/// Writes any report as pretty JSON.
pub fn write<T: Serialize>(out: &mut dyn Write, report: &T) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report).map_err(io::Error::other)?;
    writeln!(out)
}
