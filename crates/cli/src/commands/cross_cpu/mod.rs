//! `clockscope cross-cpu`: whether a clock agrees across CPUs.
//!
//! `run.rs` plans and measures, [`model`] holds the result; `render.rs` (text, JSON, plan), [`summary`],
//! `table.rs` and [`prometheus`] print it.

pub mod model;
pub mod prometheus;
mod render;
mod run;
pub mod summary;
mod table;

pub use render::*;
pub use run::*;
