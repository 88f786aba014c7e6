//! Exit codes, one-line error reporting and Ctrl-C handling.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | measured, nothing wrong found |
//! | 1    | a problem was found (time went backwards, a bad verdict, a warp) |
//! | 2    | usage or runtime error (bad argument, unreadable file, no server) |
//! | 130  | interrupted by Ctrl-C (what was measured is still printed) |

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

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

/// Installs the Ctrl-C handler once: the first Ctrl-C asks measuring loops to
/// stop between chunks; a second one exits at once.
pub fn install_interrupt_handler() {
    HANDLER.get_or_init(|| {
        ctrlc::set_handler(|| {
            if INTERRUPT.swap(true, Ordering::SeqCst) {
                std::process::exit(INTERRUPTED as i32);
            }
        })
        .is_ok()
    });
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPT.load(Ordering::Relaxed)
}

/// Prints `error: <message chain on one line>` to stderr and returns exit 2.
pub fn report_error(program: &str, err: &anyhow::Error) -> ExitCode {
    let mut msg = err.to_string();
    for cause in err.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    let msg = msg.replace('\n', " ");
    let _ = writeln!(io::stderr(), "{program}: error: {msg}");
    ExitCode::from(ERROR)
}

/// Whether an I/O error is a closed pipe (`clockscope | head`), which is not
/// an error for a command-line tool.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    // JSON goes through `export::json::write`, which keeps the io error kind.
    err.chain()
        .any(|c| c.downcast_ref::<io::Error>().map(io::Error::kind) == Some(io::ErrorKind::BrokenPipe))
}
