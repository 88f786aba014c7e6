//! One module per `clockscope` subcommand. Each has an `Args` struct (clap)
//! and a `run` that gathers: measures into a model ([`crate::model`]), then
//! renders it with [`crate::export`]. What several commands gather alike
//! lives in [`crate::gather`].

pub mod check;
pub mod clocks;
pub mod cross_cpu;
pub mod dmesg;
pub mod explain;
pub mod sweep;
pub mod tsc;
