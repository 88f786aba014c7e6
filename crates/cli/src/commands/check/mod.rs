//! `clockscope check`: measure every clock PostgreSQL can use, judge it, print it.
//!
//! - `run.rs`: the measurement (Args, gather, the report);
//! - [`judge`]: what the measurements mean (rules, the EXPLAIN ANALYZE prediction, the advice);
//! - [`model`]: the report as plain serialisable values (CheckReport, statistics, verdict);
//! - [`text`] (the one screen, `-v` and `--brief`: one writer, two levels of detail), [`prometheus`], [`svg`]
//!   (`--plot`); `render.rs`: what they share. JSON goes through [`crate::report::json`].

pub mod judge;
pub mod model;
pub mod prometheus;
mod render;
mod run;
pub mod svg;
pub mod text;

pub(crate) use render::*;
pub use run::*;
