//! `clockscope tsc`: the TSC (or ARM generic timer) from every source of evidence.
//!
//! `run.rs` gathers, [`model`] holds the result; [`summary`] (the default), [`text`] (`-v`), [`evidence`],
//! [`pg19`] and [`generic_timer`] print it; `render.rs` joins them to the report header.

pub mod evidence;
pub mod generic_timer;
pub mod model;
pub mod pg19;
mod render;
mod run;
pub mod summary;
pub mod text;

pub use render::*;
pub use run::*;
