//! One module per `clockscope` subcommand. Each has an `Args` struct (clap)
//! and a `run` that gathers: measures into a model ([`crate::model`]), then
//! renders it with [`crate::export`]; `environment` is the counter setup that
//! check, clocks and tsc share.

pub mod check;
pub mod clocks;
pub mod cross_cpu;
pub mod environment;
pub mod explain;
pub mod sweep;
pub mod tsc;
