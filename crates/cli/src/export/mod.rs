//! Every format a report is written in, apart from measuring: one folder or
//! file per command, each taking a finished model from [`crate::model`] (or the
//! library's report types). Renderers never call back into
//! [`crate::commands`]. Writers come first, the model second:
//! `write(out, &report)`.
//!
//! - [`json`]: pretty JSON, shared by every command (schemas in `docs/schema/`).
//! - [`text`]: what every text report shares: the header line, fitting to 100 columns.
//! - [`prometheus`]: what every Prometheus exposition shares: families, labels, units.
//! - [`check`]: `check`'s text, Prometheus and SVG formats.
//! - [`clocks`]: `clocks`'s text table.
//! - [`tsc`]: `tsc`'s text (x86 TSC, and the ARM generic timer on aarch64).
//! - [`cross_cpu`]: `cross-cpu`'s text, JSON and `--plan` forms.
//! - [`sweep`]: `sweep`'s text and Prometheus formats.
//!
//! `explain`'s text form lives with its model in the `clockscope_explain` library.

pub mod check;
pub mod clocks;
pub mod cross_cpu;
pub mod json;
pub mod prometheus;
pub mod sweep;
pub mod text;
pub mod tsc;
