//! Cleanups that run when a signal ends the process: every catchable signal
//! whose default action terminates it (SIGQUIT, SIGUSR1/2, SIGALRM, SIGXCPU,
//! SIGXFSZ, SIGVTALRM, SIGPROF, SIGABRT, SIGPWR, the real-time signals, and
//! SIGINT/SIGTERM/SIGHUP/SIGPIPE while nothing else claims them), then the
//! process dies of that same signal with its default action, so its parent
//! sees the status it would have seen without us (killed by signal N, core
//! dump included).
//!
//! A cleanup is prepared in advance ([`Cleanup::write`], [`Cleanup::unlink`],
//! with optional conditions and a note for stderr) and registered with
//! [`on_fatal_signal`]; the returned [`CleanupGuard`] unregisters it when
//! dropped (the normal path has cleaned up itself). The handler only makes
//! async-signal-safe system calls (open, read, write, unlink, close,
//! sigaction, raise) on memory allocated before the signal: no allocation,
//! no lock, no formatting.
//!
//! ```no_run
//! # use clockscope_cli::signals::{on_fatal_signal, Cleanup};
//! # fn f() -> std::io::Result<()> {
//! let tmp = std::path::Path::new(".report.tmp");
//! let _guard = on_fatal_signal(Cleanup::unlink(tmp)?)?;
//! // ... write tmp, rename it; the guard's drop unregisters the cleanup.
//! # Ok(()) }
//! ```
//!
//! A signal handled elsewhere is left alone: only signals whose disposition
//! is still the default when the first cleanup is registered get this
//! handler (`exit::install_interrupt_handler` owns SIGINT/SIGTERM/SIGHUP for
//! commands that stop gracefully on Ctrl-C; Rust ignores SIGPIPE and catches
//! SIGSEGV/SIGBUS for its stack-overflow message). Nothing survives SIGKILL:
//! see [`crate::guardian`] for that.
//!
//! Written over `libc` rather than signal-hook: signal-hook's safe API runs
//! actions on a thread (too late: the process must not die before the
//! cleanup) and its low-level `register` needs the same unsafe code as this.

use std::ffi::CString;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// What a cleanup does.
enum Action {
    /// Write these bytes to an existing file (never created), in one write.
    Write { path: CString, bytes: Vec<u8> },
    /// Remove a file.
    Unlink { path: CString },
}

/// A check made (async-signal-safely) before the action: all must hold.
enum Condition {
    /// The file's content, without leading and trailing ASCII whitespace, is exactly `text`.
    Reads { path: CString, text: Vec<u8> },
    /// The file (at most [`LISTS_MAX_BYTES`]) has `word` among its whitespace-separated words.
    Lists { path: CString, word: Vec<u8> },
}

/// Files a `Condition::Reads` compares are at most this long (a sysfs value).
pub const READS_MAX_BYTES: usize = 4096;
/// Files a `Condition::Lists` searches are read up to this length (the
/// bound of every one-value kernel file, `clockscope_system::input::KERNEL_VALUE`).
pub const LISTS_MAX_BYTES: usize = 64 << 10;

/// One action prepared in advance, run by [`Cleanup::run`] from a signal
/// handler or from [`crate::guardian`]'s child after `fork`.
pub struct Cleanup {
    action: Action,
    conditions: Vec<Condition>,
    note: Vec<u8>,
}

fn c_path(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

impl Cleanup {
    /// Writes `bytes` to the existing file `path` (opened without creating,
    /// truncating, not following a symlink, never blocking), in one write.
    pub fn write(path: &Path, bytes: &[u8]) -> io::Result<Cleanup> {
        Ok(Cleanup {
            action: Action::Write {
                path: c_path(path)?,
                bytes: bytes.to_vec(),
            },
            conditions: Vec::new(),
            note: Vec::new(),
        })
    }

    /// Removes `path` (a temporary file this process created).
    pub fn unlink(path: &Path) -> io::Result<Cleanup> {
        Ok(Cleanup {
            action: Action::Unlink { path: c_path(path)? },
            conditions: Vec::new(),
            note: Vec::new(),
        })
    }

    /// Acts only if `path` then reads `text` (surrounding whitespace ignored).
    pub fn if_file_reads(mut self, path: &Path, text: &str) -> io::Result<Cleanup> {
        self.conditions.push(Condition::Reads {
            path: c_path(path)?,
            text: text.trim().as_bytes().to_vec(),
        });
        Ok(self)
    }

    /// Acts only if `word` is one of the whitespace-separated words of `path`.
    pub fn if_file_lists(mut self, path: &Path, word: &str) -> io::Result<Cleanup> {
        self.conditions.push(Condition::Lists {
            path: c_path(path)?,
            word: word.as_bytes().to_vec(),
        });
        Ok(self)
    }

    /// Writes `note` (one line, newline added) to stderr after the action succeeded.
    pub fn with_note(mut self, note: &str) -> Cleanup {
        self.note = format!("{}\n", note.trim_end()).into_bytes();
        self
    }

    /// Checks the conditions and does the action; true when it was done.
    /// Async-signal-safe: system calls only, on memory allocated beforehand.
    pub fn run(&self) -> bool {
        if !self.conditions.iter().all(sys::condition_holds) {
            return false;
        }
        let done = match &self.action {
            Action::Write { path, bytes } => sys::write_existing(path, bytes),
            Action::Unlink { path } => sys::unlink(path),
        };
        if done && !self.note.is_empty() {
            sys::write_stderr(&self.note);
        }
        done
    }
}

/// How many cleanups can be registered at once.
pub const MAX_CLEANUPS: usize = 64;

/// The registered cleanups; a slot holds a `Box<Cleanup>` leaked into a raw pointer.
static REGISTERED: [AtomicPtr<Cleanup>; MAX_CLEANUPS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_CLEANUPS];
/// Set (for good) once cleanups start running because the process is
/// ending: from then on a guard dropped on another thread leaks its cleanup
/// instead of freeing memory the runner may be reading.
static FIRING: AtomicBool = AtomicBool::new(false);
/// Taken by the first signal handler: a second one (another thread) waits
/// for the first to end the process.
static HANDLING: AtomicBool = AtomicBool::new(false);

/// Registers `cleanup` to run if a fatal signal arrives while the returned
/// guard lives, installing the handlers on first use.
pub fn on_fatal_signal(cleanup: Cleanup) -> io::Result<CleanupGuard> {
    sys::install();
    let ptr = Box::into_raw(Box::new(cleanup));
    for (slot, cell) in REGISTERED.iter().enumerate() {
        if cell
            .compare_exchange(std::ptr::null_mut(), ptr, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Ok(CleanupGuard { slot });
        }
    }
    // SAFETY: `ptr` came from Box::into_raw above and was never published.
    drop(unsafe { Box::from_raw(ptr) });
    Err(io::Error::other(format!(
        "more than {MAX_CLEANUPS} signal cleanups registered at once"
    )))
}

/// Runs every registered cleanup now, outside a signal handler (the
/// forced-exit path of a second Ctrl-C, which exits with `exit`).
pub fn run_registered() {
    FIRING.store(true, Ordering::SeqCst);
    for cell in &REGISTERED {
        let p = cell.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a non-null slot holds a live Box<Cleanup>: its guard
            // frees it only after swapping the slot to null and seeing FIRING
            // clear, and FIRING was set before this load.
            unsafe { &*p }.run();
        }
    }
}

/// Unregisters its cleanup when dropped.
#[must_use = "the cleanup is unregistered when the guard is dropped"]
pub struct CleanupGuard {
    slot: usize,
}

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        let p = REGISTERED[self.slot].swap(std::ptr::null_mut(), Ordering::SeqCst);
        // With SeqCst, a handler that set FIRING after this swap cannot see
        // the pointer; one that set it before may be using it: leak it then.
        if !p.is_null() && !FIRING.load(Ordering::SeqCst) {
            // SAFETY: the pointer came from Box::into_raw in on_fatal_signal,
            // is no longer reachable from the table, and no handler runs.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

#[cfg(unix)]
mod sys {
    //! The handler and the system calls it makes.

    use super::{Condition, FIRING, HANDLING, LISTS_MAX_BYTES, READS_MAX_BYTES, REGISTERED};
    use libc::c_int;
    use std::ffi::CStr;
    use std::sync::atomic::Ordering;
    use std::sync::Once;

    static INSTALL: Once = Once::new();

    /// Signals whose default action ends the process, other than SIGKILL
    /// (which cannot be caught) and SIGSEGV/SIGBUS (Rust's own handler).
    fn terminating_signals() -> Vec<c_int> {
        let mut v = vec![
            libc::SIGHUP,
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGILL,
            libc::SIGTRAP,
            libc::SIGABRT,
            libc::SIGFPE,
            libc::SIGUSR1,
            libc::SIGUSR2,
            libc::SIGPIPE,
            libc::SIGALRM,
            libc::SIGTERM,
            libc::SIGXCPU,
            libc::SIGXFSZ,
            libc::SIGVTALRM,
            libc::SIGPROF,
            libc::SIGSYS,
        ];
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // SIGSTKFLT (16), SIGIO/SIGPOLL (29), SIGPWR (30) on the
            // architectures with the generic numbering (x86, arm, riscv);
            // numbers that mean something else elsewhere are not guessed.
            #[cfg(any(
                target_arch = "x86_64",
                target_arch = "x86",
                target_arch = "aarch64",
                target_arch = "arm",
                target_arch = "riscv64"
            ))]
            v.extend([16, 29, 30]);
            // The real-time signals (glibc keeps 32 and 33 for itself).
            v.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
        }
        v
    }

    pub(super) fn install() {
        INSTALL.call_once(|| {
            for sig in terminating_signals() {
                // SAFETY: sigaction with a null new action only reads the
                // current one into `old`, a zeroed (valid) struct.
                let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                // SAFETY: as above; `old` is a valid out-pointer.
                if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                // SAFETY: a zeroed sigaction is valid; the handler is an
                // extern "C" fn(c_int) that only calls async-signal-safe
                // functions; sa_mask is filled so no other signal interrupts it.
                unsafe {
                    let mut act: libc::sigaction = std::mem::zeroed();
                    act.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
                    libc::sigfillset(&mut act.sa_mask);
                    act.sa_flags = libc::SA_RESTART;
                    libc::sigaction(sig, &act, std::ptr::null_mut());
                }
            }
        });
    }

    extern "C" fn on_signal(sig: c_int) {
        if HANDLING.swap(true, Ordering::SeqCst) {
            // Another thread runs the cleanups and will end the process.
            loop {
                // SAFETY: pause is async-signal-safe and has no preconditions.
                unsafe { libc::pause() };
            }
        }
        FIRING.store(true, Ordering::SeqCst);
        for cell in &REGISTERED {
            let p = cell.load(Ordering::SeqCst);
            if !p.is_null() {
                // SAFETY: a non-null slot holds a live Box<Cleanup>: its guard
                // frees it only after swapping the slot to null and seeing
                // FIRING clear, and FIRING was set before this load.
                unsafe { &*p }.run();
            }
        }
        die_of(sig);
    }

    /// Ends the process by `sig` with its default action.
    fn die_of(sig: c_int) -> ! {
        // SAFETY: sigaction, sigemptyset, sigaddset, raise, pthread_sigmask
        // and _exit are async-signal-safe; every struct is a valid local.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            // Pending while the handler blocks it; delivered by the unblock.
            libc::raise(sig);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::_exit(128 + sig)
        }
    }

    const O_FLAGS: c_int = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

    /// Reads `path` into `buf`; the length, or None if unreadable or longer than `buf`.
    fn read_small(path: &CStr, buf: &mut [u8]) -> Option<usize> {
        // SAFETY: `path` is NUL-terminated; open/read/close are async-signal-safe
        // and read writes at most the slice's remaining length into it.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | O_FLAGS);
            if fd < 0 {
                return None;
            }
            let mut len = 0;
            let ok = loop {
                let rest = &mut buf[len..];
                if rest.is_empty() {
                    let mut probe = [0u8; 1];
                    break libc::read(fd, probe.as_mut_ptr().cast(), 1) == 0;
                }
                let n = libc::read(fd, rest.as_mut_ptr().cast(), rest.len());
                // (last_os_error only reads errno: no allocation.)
                if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                if n <= 0 {
                    break n == 0;
                }
                len += n as usize;
            };
            libc::close(fd);
            ok.then_some(len)
        }
    }

    fn trim(b: &[u8]) -> &[u8] {
        let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
        let end = b
            .iter()
            .rposition(|c| !c.is_ascii_whitespace())
            .map_or(start, |e| e + 1);
        b.get(start..end).unwrap_or_default()
    }

    pub(super) fn condition_holds(c: &Condition) -> bool {
        match c {
            Condition::Reads { path, text } => {
                let mut buf = [0u8; READS_MAX_BYTES];
                read_small(path, &mut buf).is_some_and(|n| trim(buf.get(..n).unwrap_or_default()) == &text[..])
            }
            Condition::Lists { path, word } => {
                let mut buf = [0u8; LISTS_MAX_BYTES];
                // A file cut at the bound is still searched in what was read.
                let n = read_small(path, &mut buf).unwrap_or(0);
                buf.get(..n)
                    .unwrap_or_default()
                    .split(u8::is_ascii_whitespace)
                    .any(|w| !w.is_empty() && w == &word[..])
            }
        }
    }

    pub(super) fn write_existing(path: &CStr, bytes: &[u8]) -> bool {
        // SAFETY: `path` is NUL-terminated, `st` a valid out-struct, `bytes`
        // a live slice; open/fstat/write/close are async-signal-safe.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_TRUNC | O_FLAGS);
            if fd < 0 {
                return false;
            }
            let mut st: libc::stat = std::mem::zeroed();
            let regular = libc::fstat(fd, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFREG;
            // One write, as `echo` does: sysfs takes the value from a single write.
            let ok = regular && libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize;
            libc::close(fd) == 0 && ok
        }
    }

    pub(super) fn unlink(path: &CStr) -> bool {
        // SAFETY: `path` is NUL-terminated; unlink is async-signal-safe.
        unsafe { libc::unlink(path.as_ptr()) == 0 }
    }

    pub(super) fn write_stderr(bytes: &[u8]) {
        // SAFETY: a live slice; write is async-signal-safe. A failure is ignored.
        unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    }
}

#[cfg(not(unix))]
mod sys {
    //! No signals to catch: registered cleanups never run.
    use super::Condition;
    use std::ffi::CStr;
    pub(super) fn install() {}
    pub(super) fn condition_holds(_: &Condition) -> bool {
        false
    }
    pub(super) fn write_existing(_: &CStr, _: &[u8]) -> bool {
        false
    }
    pub(super) fn unlink(_: &CStr) -> bool {
        false
    }
    pub(super) fn write_stderr(_: &[u8]) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_gate_the_write_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let cur = dir.path().join("current");
        let avail = dir.path().join("available");
        std::fs::write(&cur, "hpet\n").unwrap();
        std::fs::write(&avail, "tsc  hpet\tacpi_pm \n").unwrap();
        let c = |reads: &str, lists: &str| {
            Cleanup::write(&cur, b"tsc\n")
                .unwrap()
                .if_file_reads(&cur, reads)
                .unwrap()
                .if_file_lists(&avail, lists)
                .unwrap()
        };
        assert!(!c("acpi_pm", "tsc").run(), "current is not what it expects");
        assert!(!c("hpet", "ts").run(), "a word, not a prefix");
        assert_eq!(std::fs::read_to_string(&cur).unwrap(), "hpet\n");
        assert!(c("hpet", "acpi_pm").run());
        assert_eq!(std::fs::read_to_string(&cur).unwrap(), "tsc\n");
        let missing = dir.path().join("missing");
        assert!(!Cleanup::write(&missing, b"x").unwrap().run());
        assert!(!missing.exists(), "never created");
        std::os::unix::fs::symlink(&cur, &missing).unwrap();
        assert!(!Cleanup::write(&missing, b"x").unwrap().run(), "no symlink followed");
        assert!(Cleanup::unlink(&cur).unwrap().run());
        assert!(!cur.exists());
        assert!(Cleanup::write(Path::new("a\0b"), b"").is_err());
    }

    #[test]
    fn a_guard_unregisters_its_cleanup() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let g = on_fatal_signal(Cleanup::write(&f, b"restored").unwrap()).unwrap();
        run_registered();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "restored");
        drop(g);
        std::fs::write(&f, "x").unwrap();
        run_registered();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "x");
    }
}
