//! The `clockscope` and `pg_test_timing` tools, thin over the `clockscope`
//! library: argument parsing, running a command, and writing its report.
//!
//! - [`cli`]: the clap definition of `clockscope` (also drives completions and the man page).
//! - [`commands`]: one module per subcommand (check, clocks, tsc, cross-cpu, explain, sweep).
//! - [`export`]: the check report's formats (text, JSON, Prometheus, SVG plot).
//! - [`pg_test_timing`]: the drop-in for PostgreSQL 19's pg_test_timing.
//! - [`exit`]: exit codes, one-line errors, Ctrl-C.
//! - [`output_file`]: every file written (`--plot`), replaced atomically or written through.
//! - [`stdout`]: the writer reports go through: terminal-safe, quiet on a closed pipe.
//! - [`progress`]: a progress bar on stderr, only when stderr is a terminal.
//! - [`startup`]: time from `main` to the first measurement (`CLOCKSCOPE_TRACE_STARTUP=1`).

#![deny(unsafe_code)]

/// `writeln!` whose whole line goes through
/// [`clockscope::escape::escape_untrusted`]: for report lines that quote
/// untrusted text (CPUID brand strings, kernel log lines, sysfs values, file
/// names) among our own words, which hold no control character to escape.
macro_rules! writeln_escaped {
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, "{}", clockscope::escape::escape_untrusted(&format!($($arg)*)))
    };
}

pub mod cli;
pub mod commands;
pub mod exit;
pub mod export;
pub mod output_file;
pub mod pg_test_timing;
pub mod progress;
pub mod startup;
pub mod stdout;
