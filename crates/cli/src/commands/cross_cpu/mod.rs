//! `clockscope cross-cpu`: whether a clock agrees across CPUs.
//!
//! `run.rs` plans and measures, [`model`] holds the result; `render.rs` (text, JSON, the plan's JSON), `plan_text.rs` (the plan's text), [`summary`],
//! `table.rs` and [`prometheus`] print it.

pub mod model;
mod plan_text;
pub mod prometheus;
mod render;
mod run;
pub mod summary;
mod table;

pub use render::*;
pub use run::*;
