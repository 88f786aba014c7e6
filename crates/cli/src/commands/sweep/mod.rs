//! `clockscope sweep`: the system clock under each kernel clocksource, switched safely.
//!
//! `run.rs` switches and measures, [`judge`] combines the rounds and recommends, [`model`] holds the result,
//! [`text`] prints it. With `--dsn`, [`dsn`] (the options, local server only) and [`server`] (the second
//! pass: `explain`'s measurement on the server under each clocksource) add the server's real EXPLAIN ANALYZE
//! overhead, [`server_text`] its table.

pub mod dsn;
pub mod judge;
pub mod model;
pub mod restore;
mod run;
pub mod server;
pub mod server_text;
pub mod text;
mod words;

pub use run::*;
pub use text::*;
