//! The `clockscope` and `pg_test_timing` tools, thin over the `clockscope`
//! library: argument parsing, running a command, and writing its report.
//!
//! - [`cli`]: the clap definition of `clockscope` (also drives completions and the man page).
//! - [`commands`]: one module per subcommand (check, clocks, tsc, cross-cpu, explain).
//! - [`export`]: the check report's formats (text, JSON, Prometheus, SVG plot).
//! - [`pg_test_timing`]: the drop-in for PostgreSQL 19's pg_test_timing.
//! - [`exit`]: exit codes, one-line errors, Ctrl-C.
//! - [`progress`]: a progress bar on stderr, only when stderr is a terminal.
//! - [`startup`]: time from `main` to the first measurement (`CLOCKSCOPE_TRACE_STARTUP=1`).

#![forbid(unsafe_code)]

pub mod cli;
pub mod commands;
pub mod exit;
pub mod export;
pub mod pg_test_timing;
pub mod progress;
pub mod startup;
