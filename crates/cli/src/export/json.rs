//! JSON output: the serialised report, pretty-printed, one trailing newline.

use serde::Serialize;
use std::io::{self, Write};

/// Writes any report as pretty JSON.
pub fn write<T: Serialize>(out: &mut dyn Write, report: &T) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report).map_err(|e| match e.io_error_kind() {
        // Keep the kind (a closed pipe is not an error for the caller).
        Some(kind) => io::Error::new(kind, e),
        None => io::Error::other(e),
    })?;
    writeln!(out)
}
