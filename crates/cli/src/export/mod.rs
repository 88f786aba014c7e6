//! Report formats of `clockscope check`, apart from measuring: each format
//! renders a finished [`CheckReport`](crate::commands::check::report::CheckReport).
//!
//! - [`text`]: the human report.
//! - [`json`]: the documented schema (`docs/schema/check.schema.json`).
//! - [`prometheus`]: text exposition format for node_exporter's textfile collector.
//! - [`svg`]: the duration distributions of every measured clock on one log-log chart.

pub mod json;
pub mod prometheus;
pub mod svg;
pub mod text;
