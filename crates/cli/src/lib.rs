//! The `clockscope` and `pg_test_timing` tools, thin over the `clockscope`
//! library crates. Grouped the way a reader looks for them:
//!
//! - [`cli`]: the clap definition of `clockscope` (also drives completions and the man page).
//! - [`commands`]: one folder per subcommand (check, clocks, tsc, cross_cpu, dmesg, explain,
//!   sweep), each with its `run.rs` (gather and measure), its `model` (plain serialisable values
//!   beside their JSON's `SCHEMA_VERSION`), its `judge` where it has one, and its text formats;
//!   `environment.rs` is what several gather alike (counter setup, NTP), `schema.rs` the JSON
//!   Schemas of every model. A command imports no other command, except `check -v` printing
//!   `tsc`'s evidence, `sweep` giving `check`'s verdict per clocksource and `sweep --dsn` running
//!   `explain`'s measurement
//!   (`crates/cli/tests/all/layers.rs`).
//! - [`report`]: what every command's output shares: the renderer shape
//!   ([`report::Renderer`]: writer first, model second), the header, the one JSON writer
//!   ([`report::json`]), Prometheus text, and fitting text to 100 columns ([`report::fit`]).
//!   It names no command.
//! - [`manpage`]: the man pages: clap_mangen's sections from [`cli`], plus EXIT STATUS, ENVIRONMENT,
//!   EXAMPLES and SEE ALSO.
//! - [`args`]: argument helpers shared by the subcommands (formats, seconds, clock names).
//!
//! Beside them:
//! - [`pg_test_timing`]: the drop-in for PostgreSQL 19's pg_test_timing.
//! - [`exit`]: exit codes, one-line errors, Ctrl-C.
//! - [`cleanup`]: cleanups prepared in advance, run by a [`guardian`].
//! - [`guardian`]: a child that runs such a cleanup when asked or when the process dies (any signal, SIGKILL, a crash).
//! - [`output_file`]: every file written (`--plot`), replaced atomically or written through.
//! - [`stdout`]: the writer reports go through: terminal-safe, quiet on a closed pipe.
//! - [`progress`]: a progress bar on stderr, only when stderr is a terminal.
//! - [`startup`]: time from `main` to the first measurement (`CLOCKSCOPE_TRACE_STARTUP=1`).
//! - [`fd_at_start`]: whether stdout was closed when the process started (`>&-`).

#![deny(unsafe_code)]

/// `writeln!` whose whole line goes through
/// [`clockscope_system::escape::escape_untrusted`]: for report lines that quote
/// untrusted text (CPUID brand strings, kernel log lines, sysfs values, file
/// names) among our own words, which hold no control character to escape.
macro_rules! writeln_escaped {
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, "{}", clockscope_system::escape::escape_untrusted(&format!($($arg)*)))
    };
}

pub mod args;
pub mod cli;
pub mod commands;
pub mod exit;
// A constructor run before `main` (`#[link_section]`): whether stdout was closed at start.
#[allow(unsafe_code)]
pub mod fd_at_start;
pub mod i18n;
pub mod manpage;
pub mod output_file;
pub mod pg_test_timing;
pub mod progress;
pub mod report;
// fork and a pipe: unsafe by nature, async-signal-safe calls in the child.
#[allow(unsafe_code)]
pub mod guardian;
// Signal handlers: unsafe by nature (sigaction, async-signal-safe system calls).
#[allow(unsafe_code)]
pub mod cleanup;
pub mod startup;
pub mod stdout;
