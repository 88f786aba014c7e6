//! `clockscope tsc`: the TSC (or ARM generic timer) from every source of evidence.
//!
//! `run.rs` gathers, [`model`] holds the result; [`text`] prints it on x86 (the one screen and `-v`: one
//! writer, two levels of detail) with [`evidence`] and [`pg19`]; [`generic_timer`] prints the ARM generic
//! timer's report in its place on aarch64. JSON goes through [`crate::report::json`].

pub mod evidence;
pub mod generic_timer;
pub mod model;
pub mod pg19;
mod run;
pub mod text;

pub use run::*;
