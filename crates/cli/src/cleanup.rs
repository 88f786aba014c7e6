//! A cleanup prepared in advance ([`Cleanup::write`], [`Cleanup::unlink`],
//! with optional conditions and a note for stderr) for [`crate::guardian`]'s
//! child to run after this process died, whatever the death (any signal, a
//! forced exit, SIGKILL, a crash), or when asked to now (then it says what it
//! did in its exit code: [`Ran`], and writes no note). [`Cleanup::run`] only makes
//! async-signal-safe system calls (open, read, write, unlink, close) on
//! memory allocated before the `fork`: no allocation, no lock, no formatting.

use std::ffi::CString;
use std::io;
use std::path::Path;

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

/// What [`Cleanup::run`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ran {
    /// The conditions held and the action was done.
    Done,
    /// A condition did not hold (or a file it reads could not be read): nothing done.
    Skipped,
    /// The action failed with this errno (0: not a regular file).
    Failed(i32),
}

impl Ran {
    /// The guardian's exit code for it: 0 done, 1 skipped, 2 + errno failed.
    pub fn exit_code(self) -> i32 {
        match self {
            Ran::Done => 0,
            Ran::Skipped => 1,
            Ran::Failed(errno) => 2 + errno.clamp(0, 253),
        }
    }

    /// What [`Ran::exit_code`] said.
    pub fn from_exit_code(code: i32) -> Ran {
        match code {
            0 => Ran::Done,
            1 => Ran::Skipped,
            c => Ran::Failed(c - 2),
        }
    }
}

/// One action prepared in advance, run by [`Cleanup::run`] in
/// [`crate::guardian`]'s child after `fork`.
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

    /// Checks the conditions and does the action; with `note`, writes the
    /// note once it was done. Async-signal-safe: system calls only, on
    /// memory allocated beforehand.
    pub fn run(&self, note: bool) -> Ran {
        if !self.conditions.iter().all(sys::condition_holds) {
            return Ran::Skipped;
        }
        let result = match &self.action {
            Action::Write { path, bytes } => sys::write_existing(path, bytes),
            Action::Unlink { path } => sys::unlink(path),
        };
        match result {
            Ok(()) if note && !self.note.is_empty() => sys::write_stderr(&self.note),
            Ok(()) => {}
            Err(errno) => return Ran::Failed(errno),
        }
        Ran::Done
    }
}

mod sys {
    //! The system calls a cleanup makes.

    use super::{Condition, LISTS_MAX_BYTES, READS_MAX_BYTES};
    use libc::c_int;
    use std::ffi::CStr;

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

    pub(super) fn condition_holds(c: &Condition) -> bool {
        match c {
            Condition::Reads { path, text } => {
                let mut buf = [0u8; READS_MAX_BYTES];
                read_small(path, &mut buf).is_some_and(|n| buf.get(..n).unwrap_or_default().trim_ascii() == &text[..])
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

    /// errno (last_os_error only reads it: no allocation).
    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
    }

    /// `Err(errno)` (0: not a regular file).
    pub(super) fn write_existing(path: &CStr, bytes: &[u8]) -> Result<(), i32> {
        // SAFETY: `path` is NUL-terminated, `st` a valid out-struct, `bytes`
        // a live slice; open/fstat/write/close are async-signal-safe.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_TRUNC | O_FLAGS);
            if fd < 0 {
                return Err(errno());
            }
            let mut st: libc::stat = std::mem::zeroed();
            let regular = libc::fstat(fd, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFREG;
            // One write, as `echo` does: sysfs takes the value from a single write.
            let result = if !regular {
                Err(0)
            } else if libc::write(fd, bytes.as_ptr().cast(), bytes.len()) == bytes.len() as isize {
                Ok(())
            } else {
                Err(errno())
            };
            match (result, libc::close(fd)) {
                (Ok(()), 0) => Ok(()),
                (Ok(()), _) => Err(errno()),
                (err, _) => err,
            }
        }
    }

    pub(super) fn unlink(path: &CStr) -> Result<(), i32> {
        // SAFETY: `path` is NUL-terminated; unlink is async-signal-safe.
        if unsafe { libc::unlink(path.as_ptr()) } == 0 {
            Ok(())
        } else {
            Err(errno())
        }
    }

    pub(super) fn write_stderr(bytes: &[u8]) {
        // SAFETY: a live slice; write is async-signal-safe. A failure is ignored.
        unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
    }
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
        assert_eq!(
            c("acpi_pm", "tsc").run(false),
            Ran::Skipped,
            "current is not what it expects"
        );
        assert_eq!(c("hpet", "ts").run(false), Ran::Skipped, "a word, not a prefix");
        assert_eq!(std::fs::read_to_string(&cur).unwrap(), "hpet\n");
        assert_eq!(c("hpet", "acpi_pm").run(false), Ran::Done);
        assert_eq!(std::fs::read_to_string(&cur).unwrap(), "tsc\n");
        let missing = dir.path().join("missing");
        let ran = Cleanup::write(&missing, b"x").unwrap().run(false);
        assert_eq!(ran, Ran::Failed(libc::ENOENT));
        assert!(!missing.exists(), "never created");
        std::os::unix::fs::symlink(&cur, &missing).unwrap();
        let ran = Cleanup::write(&missing, b"x").unwrap().run(false);
        assert_eq!(ran, Ran::Failed(libc::ELOOP), "no symlink followed");
        assert_eq!(Cleanup::unlink(&cur).unwrap().run(false), Ran::Done);
        assert!(!cur.exists());
        assert!(Cleanup::write(Path::new("a\0b"), b"").is_err());
        for ran in [Ran::Done, Ran::Skipped, Ran::Failed(0), Ran::Failed(libc::EBUSY)] {
            assert_eq!(Ran::from_exit_code(ran.exit_code()), ran);
        }
    }
}
