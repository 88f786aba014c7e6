//! `clockscope cross-cpu`: whether a clock agrees across CPUs.
//!
//! `run.rs` plans and measures, [`model`] holds the result; [`text`] prints it (the one screen and `-v`: one
//! writer, two levels of detail), `plan_text.rs` the plan (`--plan`), `json.rs` both as JSON, `table.rs` the
//! text's tables, and [`prometheus`] the metrics.

mod json;
pub mod model;
mod plan_text;
pub mod prometheus;
mod run;
mod table;
pub mod text;

pub use json::*;
pub use plan_text::write_plan_text;
pub use run::*;
