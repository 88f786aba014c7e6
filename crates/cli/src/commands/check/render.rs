//! The formats of `clockscope check`: each renders a finished
//! [`CheckReport`](crate::commands::check::model::CheckReport) (JSON goes through the
//! shared [`crate::report::json`]).
//!
//! - [`text`](super::text): the human reports: the one screen (the default), `-v/--verbose` and `--brief`.
//! - [`prometheus`](super::prometheus): text exposition format for node_exporter's textfile collector.
//! - [`svg`](super::svg): the duration distributions of every measured clock on one log-log chart.

use std::io::{self, Write};

/// A verdict's problems through a format's own `item` line: "problems none",
/// or one "problem" line each (the one-screen and the full report share it).
pub(crate) fn write_problems(
    out: &mut dyn Write,
    problems: &[String],
    item: fn(&mut dyn Write, &str, &str) -> io::Result<()>,
) -> io::Result<()> {
    if problems.is_empty() {
        return item(out, crate::t!("problems"), crate::t!("none"));
    }
    for p in problems {
        item(out, crate::t!("problem"), p)?;
    }
    Ok(())
}
