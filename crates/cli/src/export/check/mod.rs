//! The formats of `clockscope check`: each renders a finished
//! [`CheckReport`](crate::model::check::CheckReport) (JSON goes through the
//! shared [`crate::export::json`]).
//!
//! - [`screen`]: the one-screen human report (the default) and `--brief`.
//! - [`text`]: the full human report (`-v/--verbose`).
//! - [`prometheus`]: text exposition format for node_exporter's textfile collector.
//! - [`svg`]: the duration distributions of every measured clock on one log-log chart.

pub mod prometheus;
pub mod screen;
pub mod svg;
pub mod text;
