//! Exit codes, one-line error reporting and Ctrl-C handling.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | measured, nothing wrong found |
//! | 1    | a problem was found (time went backwards, a bad verdict, a warp) |
//! | 2    | usage or runtime error (bad argument, unreadable file, no server) |
//! | 130  | interrupted by Ctrl-C (what was measured is still printed) |

use clockscope_system::escape::escape_untrusted;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// Nothing wrong found.
pub const OK: u8 = 0;
/// A problem was found in what was measured.
pub const PROBLEM: u8 = 1;
/// Usage or runtime error.
pub const ERROR: u8 = 2;
/// Interrupted by SIGINT.
pub const INTERRUPTED: u8 = 130;

static INTERRUPT: AtomicBool = AtomicBool::new(false);
static HANDLER: OnceLock<bool> = OnceLock::new();

/// A cleanup run before the process exits at once (second Ctrl-C): removing a
/// temp file we created, sending a server a cancel request.
type ForcedExitHook = Box<dyn Fn() + Send + Sync>;
static FORCED_EXIT_HOOKS: Mutex<Vec<(u64, ForcedExitHook)>> = Mutex::new(Vec::new());
static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(0);

/// Installs the Ctrl-C / SIGTERM handler once: the first signal asks measuring
/// loops (and network waits) to stop; a second one runs the registered
/// [`on_forced_exit`] hooks and exits at once (a [`crate::guardian`] then
/// cleans up what the process leaves: a switched clocksource, a temp file).
pub fn install_interrupt_handler() {
    HANDLER.get_or_init(|| {
        ctrlc::set_handler(|| {
            if INTERRUPT.swap(true, Ordering::SeqCst) {
                run_forced_exit_hooks();
                std::process::exit(INTERRUPTED as i32);
            }
        })
        .is_ok()
    });
}

/// Registers `hook` to run if the process is made to exit at once (a second
/// Ctrl-C or SIGTERM) while the returned guard lives. Hooks run on the signal
/// thread, in registration order; each must be quick and must not panic.
#[must_use = "the hook is removed when the guard is dropped"]
pub fn on_forced_exit(hook: impl Fn() + Send + Sync + 'static) -> ForcedExitGuard {
    let id = NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed);
    lock_hooks().push((id, Box::new(hook)));
    ForcedExitGuard { id }
}

/// Removes its hook when dropped (the normal path has cleaned up itself).
pub struct ForcedExitGuard {
    id: u64,
}

impl Drop for ForcedExitGuard {
    fn drop(&mut self) {
        lock_hooks().retain(|(id, _)| *id != self.id);
    }
}

fn lock_hooks() -> std::sync::MutexGuard<'static, Vec<(u64, ForcedExitHook)>> {
    // A hook that panicked cannot leave the list half-edited: keep going.
    FORCED_EXIT_HOOKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs the registered hooks, as a second signal does before exiting
/// (public so tests can run them without killing the process).
pub fn run_forced_exit_hooks() {
    for (_, hook) in lock_hooks().iter() {
        hook();
    }
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPT.load(Ordering::Relaxed)
}

/// What a measuring loop's observer answers: stop once Ctrl-C was pressed.
pub fn control() -> clockscope::Control {
    if interrupted() {
        clockscope::Control::Stop
    } else {
        clockscope::Control::Continue
    }
}

/// Prints `error: <message chain on one line>` to stderr and returns exit 2.
/// The message may embed input (a file name, a line of a dump, a server's
/// words): it is escaped, so it is one line without control characters.
pub fn report_error(program: &str, err: &anyhow::Error) -> ExitCode {
    let mut msg = err.to_string();
    let mut parts = vec![msg.replace('\n', " ")];
    for cause in err.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
            parts.push(c.replace('\n', " "));
        }
    }
    // In the report's language, as PostgreSQL's `ошибка:` lines: the prefix,
    // and each part of the chain the catalog knows (English: `msg` itself).
    let msg = crate::i18n::library::error_body(&parts);
    let line = crate::t!(
        "{program}: error: {message}",
        program = program,
        message = escape_untrusted(&msg)
    );
    let _ = writeln!(io::stderr(), "{line}");
    ExitCode::from(ERROR)
}

/// The usage error line of `program` for clap's error `e`, in the language
/// the arguments ask for (`--lang`, else the environment's; the arguments
/// did not parse, so they are read here as clap would): the prefix and the
/// message as [`report_error`] says them.
pub fn usage_error_line(program: &str, e: &clap::Error, args: &[std::ffi::OsString]) -> String {
    let lang = lang_argument(args)
        .and_then(|v| crate::i18n::select::from_option(&v, crate::i18n::select::from_env))
        .unwrap_or_else(crate::i18n::select::from_env);
    crate::i18n::with_language(lang, || {
        crate::t!(
            "{program}: error: {message}",
            program = program,
            message = crate::i18n::library::reason(&clap_error_line(e))
        )
    })
}

/// The value of the last `--lang V` or `--lang=V` before a `--`.
fn lang_argument(args: &[std::ffi::OsString]) -> Option<String> {
    let mut found = None;
    let mut it = args.iter().skip(1).map(|a| a.to_str());
    while let Some(a) = it.next() {
        match a {
            Some("--") => break,
            Some("--lang") => found = it.next().flatten().map(str::to_string),
            Some(a) if a.starts_with("--lang=") => found = Some(a["--lang=".len()..].to_string()),
            _ => {}
        }
    }
    found
}

/// A clap error on one line, escaped: its first paragraph (the message and
/// what it lists on the next lines: the missing arguments, the possible
/// values), without clap's `error: ` prefix.
pub fn clap_error_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text.split("\n\n").next().unwrap_or_default();
    let line = first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let line = line.strip_prefix("error: ").unwrap_or(&line);
    let line = if line.is_empty() { "invalid arguments" } else { line };
    escape_untrusted(line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    fn clap_line(args: &[&str]) -> String {
        let e = crate::cli::Cli::try_parse_from(args).unwrap_err();
        clap_error_line(&e)
    }

    #[test]
    fn clap_errors_are_one_line_naming_what_is_wrong() {
        crate::cli::Cli::command().debug_assert();
        assert_eq!(
            clap_line(&["clockscope", "completions"]),
            "the following required arguments were not provided: <SHELL>"
        );
        let bad = clap_line(&["clockscope", "--format", "xml"]);
        assert!(bad.starts_with("invalid value 'xml' for '--format <FORMAT>'"), "{bad}");
        assert!(bad.contains("[possible values: text, json, prometheus]"), "{bad}");
        // clap's rendering drops ANSI sequences itself; what it keeps is escaped here.
        let hostile = clap_line(&["clockscope", "--format", "\x1b]0;x\x07\u{202e}lmx"]);
        assert!(
            hostile.contains("\\u{202e}lmx") && !hostile.chars().any(char::is_control),
            "{hostile}"
        );
    }
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn forced_exit_hooks_run_while_their_guard_lives() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let guard = on_forced_exit(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        run_forced_exit_hooks();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        drop(guard);
        run_forced_exit_hooks();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
