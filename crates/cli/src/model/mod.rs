//! What a command measured, as plain serialisable values apart from the code
//! that gathers them ([`crate::commands`]) and the code that prints them
//! ([`crate::export`]).
//!
//! - [`check`]: the `check` report, its per-clock statistics and its verdict.

pub mod check;
pub mod clocks;
pub mod cross_cpu;
pub mod sweep;
