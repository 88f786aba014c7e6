//! `clockscope clocks`: every clock source this machine offers, its resolution and read cost.
//!
//! `run.rs` measures, [`model`] holds the result, [`text`] prints it.

pub mod model;
mod run;
pub mod text;

pub use run::*;
pub use text::*;
