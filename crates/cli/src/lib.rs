//! The `clockscope` and `pg_test_timing` tools, thin over the `clockscope`
//! library. Layers, each importing only those below it (no cycles):
//!
//! - [`cli`]: the clap definition of `clockscope` (also drives completions and the man page).
//! - [`commands`]: one module per subcommand (check, clocks, tsc, cross-cpu, explain, sweep);
//!   each gathers its measurements into a model, then hands it to a renderer.
//! - [`judge`]: what the measurements mean (check's rules, prediction and advice).
//! - [`gather`]: what several commands gather alike (the counter setup, the
//!   environment block, NTP).
//! - [`export`]: every renderer (text, JSON, Prometheus, SVG) of every command, one
//!   folder or file per command, one shape ([`export::Renderer`]): writer first, model
//!   second, `write(out, &model) -> io::Result<()>`; JSON only through [`export::json`];
//!   the text reports' fitting to 100 columns ([`export::fit`]) and check styles. Never
//!   imports [`commands`].
//! - [`model`]: what a command measured (check's report, stats and verdict; clocks;
//!   cross-cpu's outcome; sweep's report), plain serialisable values, each beside its
//!   JSON's `SCHEMA_VERSION`.
//! - [`manpage`]: the man pages: clap_mangen's sections from [`cli`], plus EXIT STATUS, ENVIRONMENT,
//!   EXAMPLES and SEE ALSO.
//! - [`args`]: argument helpers shared by the subcommands (formats, seconds, clock names).
//!
//! Beside them:
//! - [`pg_test_timing`]: the drop-in for PostgreSQL 19's pg_test_timing.
//! - [`exit`]: exit codes, one-line errors, Ctrl-C.
//! - [`cleanup`]: cleanups prepared in advance, run by a [`guardian`] when the process dies.
//! - [`guardian`]: a child that runs such a cleanup when the process dies (any signal, SIGKILL, a crash).
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
pub mod export;
// A constructor run before `main` (`#[link_section]`): whether stdout was closed at start.
#[allow(unsafe_code)]
pub mod fd_at_start;
pub mod gather;
pub mod i18n;
pub mod judge;
pub mod manpage;
pub mod model;
pub mod output_file;
pub mod pg_test_timing;
pub mod progress;
// fork and a pipe: unsafe by nature, async-signal-safe calls in the child.
#[allow(unsafe_code)]
pub mod guardian;
// Signal handlers: unsafe by nature (sigaction, async-signal-safe system calls).
#[allow(unsafe_code)]
pub mod cleanup;
pub mod startup;
pub mod stdout;
