//! `clockscope sweep`: the system clock under each kernel clocksource, switched safely.
//!
//! `run.rs` switches and measures, [`judge`] combines the rounds and recommends, [`model`] holds the result,
//! [`text`] prints it.

pub mod judge;
pub mod model;
mod run;
pub mod text;

pub use run::*;
pub use text::*;
