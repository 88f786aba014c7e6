//! One module per `clockscope` subcommand. Each has an `Args` struct (clap)
//! and a `run` that measures, builds a serialisable report and writes it.

pub mod check;
pub mod clocks;
pub mod cross_cpu;
pub mod explain;
pub mod generic_timer;
pub mod sweep;
pub mod tsc;
