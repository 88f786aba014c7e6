//! A cleanup prepared in advance, for [`crate::guardian`]'s child to run:
//! [`Cleanup::unlink`] (a temporary file) or [`Cleanup::restore`] (the
//! sweep's clocksource: put the original back over the one the sweep put
//! in place, read it back, and say what was found and done). The child runs
//! it after this process died, whatever the death (any signal, a forced
//! exit, SIGKILL, a crash), or when asked to now ([`crate::guardian::Guardian::run_now`]).
//! [`Cleanup::run`] only makes async-signal-safe system calls (open, read,
//! write, unlink, close) on memory allocated before the `fork` or on its
//! stack: no allocation, no lock, no formatting.

use std::ffi::CString;
use std::io;
use std::path::Path;

/// What a cleanup does.
enum Action {
    /// Remove a file.
    Unlink { path: CString },
    /// The clocksource restore (see [`Cleanup::restore`]).
    Restore {
        current: CString,
        available: CString,
        original: Vec<u8>,
        switched: Vec<u8>,
    },
}

/// `current_clocksource` is read up to this length (a sysfs value).
pub const CURRENT_MAX_BYTES: usize = 4096;
/// `available_clocksource` is read up to this length (the bound of every
/// one-value kernel file, `clockscope_system::input::KERNEL_VALUE`).
pub const AVAILABLE_MAX_BYTES: usize = 64 << 10;

/// One action prepared in advance, run by [`Cleanup::run`] in
/// [`crate::guardian`]'s child after `fork`.
pub struct Cleanup {
    action: Action,
    note: Vec<u8>,
}

/// What a restore found and did, as the guardian answers it (see [`Answer::decode`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The original was in use: nothing written.
    InPlace,
    /// Written and read back.
    Restored,
    /// `current_clocksource` read this (trimmed), not the clocksource the
    /// sweep put in place: left alone, nothing written.
    LeftAlone(Vec<u8>),
    /// `current_clocksource` (or, `available`, `available_clocksource`)
    /// could not be read: the `errno` (`EFBIG`: longer than the bound).
    Unreadable { available: bool, errno: i32 },
    /// The original is not among these names (`available_clocksource`): never written.
    NotAvailable(Vec<u8>),
    /// The write failed with this `errno` (0: not a regular file).
    WriteFailed(i32),
    /// Written, but `current_clocksource` reads back this (trimmed).
    ReadBack(Vec<u8>),
    /// No answer: the guardian could not be asked, or died.
    Gone,
}

fn c_path(path: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

impl Cleanup {
    /// Removes `path` (a temporary file this process created).
    pub fn unlink(path: &Path) -> io::Result<Cleanup> {
        Ok(Cleanup {
            action: Action::Unlink { path: c_path(path)? },
            note: Vec::new(),
        })
    }

    /// Puts `original` back in the clocksource file `current`, but only
    /// over `switched` (the clocksource the sweep put in place: someone
    /// else's choice is left alone) and only when `original` is still one
    /// of the names in `available`; then reads `current` back. The file is
    /// never created, a symbolic link never followed, and the value goes in
    /// one write, as `echo` does.
    pub fn restore(current: &Path, available: &Path, original: &str, switched: &str) -> io::Result<Cleanup> {
        Ok(Cleanup {
            action: Action::Restore {
                current: c_path(current)?,
                available: c_path(available)?,
                original: original.as_bytes().to_vec(),
                switched: switched.as_bytes().to_vec(),
            },
            note: Vec::new(),
        })
    }

    /// Writes `note` (one line, newline added) to stderr after a cleanup
    /// run after a death did its action.
    pub fn with_note(mut self, note: &str) -> Cleanup {
        self.note = format!("{}\n", note.trim_end()).into_bytes();
        self
    }

    /// Does the action; `answer` (when given) receives what it found and did
    /// ([`Answer::decode`] reads it back); the note is written when the
    /// action was done and no answer is wanted (a death).
    /// Async-signal-safe: system calls only, on memory allocated beforehand.
    pub fn run(&self, answer: Option<std::os::fd::RawFd>) -> bool {
        let done = match &self.action {
            Action::Unlink { path } => sys::unlink(path),
            Action::Restore {
                current,
                available,
                original,
                switched,
            } => {
                let reply = |tag: u8, errno: i32, payload: &[u8]| {
                    if let Some(fd) = answer {
                        sys::reply(fd, tag, errno, payload);
                    }
                };
                sys::restore(current, available, original, switched, reply)
            }
        };
        if done && answer.is_none() && !self.note.is_empty() {
            sys::write_all(2, &self.note);
        }
        done
    }
}

impl Answer {
    /// Reads the guardian's answer: a tag, an errno (4 bytes, native
    /// order), then the bytes it names.
    pub fn decode(bytes: &[u8]) -> Answer {
        let (Some(&tag), Some(errno)) = (bytes.first(), bytes.get(1..5)) else {
            return Answer::Gone;
        };
        let errno = i32::from_ne_bytes(errno.try_into().unwrap_or_default());
        let rest = bytes.get(5..).unwrap_or_default().to_vec();
        match tag {
            b'I' => Answer::InPlace,
            b'R' => Answer::Restored,
            b'L' => Answer::LeftAlone(rest),
            b'C' => Answer::Unreadable {
                available: false,
                errno,
            },
            b'A' => Answer::Unreadable { available: true, errno },
            b'N' => Answer::NotAvailable(rest),
            b'W' => Answer::WriteFailed(errno),
            b'B' => Answer::ReadBack(rest),
            _ => Answer::Gone,
        }
    }
}

#[cfg(unix)]
mod sys {
    //! The system calls a cleanup makes.

    use super::{AVAILABLE_MAX_BYTES, CURRENT_MAX_BYTES};
    use libc::c_int;
    use std::ffi::CStr;
    use std::os::fd::RawFd;

    const O_FLAGS: c_int = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

    fn errno() -> i32 {
        // (last_os_error only reads errno: no allocation.)
        std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
    }

    /// Reads `path` into `buf`: the length, or the errno (`EFBIG`: longer than `buf`).
    fn read_small(path: &CStr, buf: &mut [u8]) -> Result<usize, i32> {
        // SAFETY: `path` is NUL-terminated; open/read/close are async-signal-safe
        // and read writes at most the slice's remaining length into it.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | O_FLAGS);
            if fd < 0 {
                return Err(errno());
            }
            let mut len = 0;
            let result = loop {
                let rest = &mut buf[len..];
                if rest.is_empty() {
                    let mut probe = [0u8; 1];
                    break if libc::read(fd, probe.as_mut_ptr().cast(), 1) == 0 {
                        Ok(len)
                    } else {
                        Err(libc::EFBIG)
                    };
                }
                let n = libc::read(fd, rest.as_mut_ptr().cast(), rest.len());
                if n < 0 && errno() == libc::EINTR {
                    continue;
                }
                if n < 0 {
                    break Err(errno());
                }
                if n == 0 {
                    break Ok(len);
                }
                len += n as usize;
            };
            libc::close(fd);
            result
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

    /// The restore of [`super::Cleanup::restore`], each outcome given to `reply`.
    pub(super) fn restore(
        current: &CStr,
        available: &CStr,
        original: &[u8],
        switched: &[u8],
        reply: impl Fn(u8, i32, &[u8]),
    ) -> bool {
        let mut cur = [0u8; CURRENT_MAX_BYTES];
        let n = match read_small(current, &mut cur) {
            Ok(n) => n,
            Err(e) => {
                reply(b'C', e, &[]);
                return false;
            }
        };
        let now = trim(cur.get(..n).unwrap_or_default());
        if now == original {
            reply(b'I', 0, &[]);
            return false;
        }
        if now != switched {
            reply(b'L', 0, now);
            return false;
        }
        let mut list = [0u8; AVAILABLE_MAX_BYTES];
        let listed = match read_small(available, &mut list) {
            Ok(n) => list.get(..n).unwrap_or_default(),
            // A list cut at the bound is still searched in what was read.
            Err(libc::EFBIG) => &list[..],
            Err(e) => {
                reply(b'A', e, &[]);
                return false;
            }
        };
        if !listed
            .split(u8::is_ascii_whitespace)
            .any(|w| !w.is_empty() && w == original)
        {
            reply(b'N', 0, listed);
            return false;
        }
        if let Err(e) = write_existing(current, original) {
            reply(b'W', e, &[]);
            return false;
        }
        let n = match read_small(current, &mut cur) {
            Ok(n) => n,
            Err(e) => {
                reply(b'C', e, &[]);
                return false;
            }
        };
        let now = trim(cur.get(..n).unwrap_or_default());
        if now == original {
            reply(b'R', 0, &[]);
            true
        } else {
            reply(b'B', 0, now);
            false
        }
    }

    /// Writes `name` and a newline to the existing regular file `path`, in one write.
    fn write_existing(path: &CStr, name: &[u8]) -> Result<(), i32> {
        let mut line = [0u8; 64];
        let Some(slot) = line.get_mut(..name.len()) else {
            return Err(libc::ENAMETOOLONG);
        };
        slot.copy_from_slice(name);
        line[name.len()] = b'\n';
        let line = &line[..=name.len()];
        // SAFETY: `path` is NUL-terminated, `st` a valid out-struct, `line`
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
            } else if libc::write(fd, line.as_ptr().cast(), line.len()) == line.len() as isize {
                Ok(())
            } else {
                Err(errno())
            };
            let closed = libc::close(fd) == 0;
            match result {
                Ok(()) if !closed => Err(errno()),
                r => r,
            }
        }
    }

    pub(super) fn unlink(path: &CStr) -> bool {
        // SAFETY: `path` is NUL-terminated; unlink is async-signal-safe.
        unsafe { libc::unlink(path.as_ptr()) == 0 }
    }

    /// The answer: its tag, the errno, the bytes it names.
    pub(super) fn reply(fd: RawFd, tag: u8, errno: i32, payload: &[u8]) {
        let mut head = [tag, 0, 0, 0, 0];
        head[1..].copy_from_slice(&errno.to_ne_bytes());
        write_all(fd, &head);
        write_all(fd, payload);
    }

    pub(super) fn write_all(fd: RawFd, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            // SAFETY: a live slice; write is async-signal-safe.
            let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            if n <= 0 {
                return;
            }
            bytes = bytes.get(n as usize..).unwrap_or_default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_writes_only_over_its_own_switch_and_never_creates() {
        let dir = tempfile::tempdir().unwrap();
        let cur = dir.path().join("current");
        let avail = dir.path().join("available");
        std::fs::write(&avail, "tsc  hpet\tacpi_pm \n").unwrap();
        let restore = |original: &str| Cleanup::restore(&cur, &avail, original, "hpet").unwrap();
        std::fs::write(&cur, "acpi_pm\n").unwrap();
        assert!(!restore("tsc").run(None), "someone else's choice");
        std::fs::write(&cur, "hpet\n").unwrap();
        assert!(!restore("ts").run(None), "a word, not a prefix");
        assert_eq!(std::fs::read_to_string(&cur).unwrap(), "hpet\n");
        assert!(restore("tsc").run(None));
        assert_eq!(std::fs::read_to_string(&cur).unwrap(), "tsc\n");
        std::fs::remove_file(&cur).unwrap();
        assert!(!restore("tsc").run(None));
        assert!(!cur.exists(), "never created");
        std::os::unix::fs::symlink(&avail, &cur).unwrap();
        assert!(!restore("tsc").run(None), "no symlink followed");
        assert!(Cleanup::unlink(&avail).unwrap().run(None));
        assert!(!avail.exists());
        assert!(Cleanup::unlink(Path::new("a\0b")).is_err());
    }

    #[test]
    fn the_answer_says_what_was_found_and_done() {
        let dir = tempfile::tempdir().unwrap();
        let cur = dir.path().join("current");
        let avail = dir.path().join("available");
        let ask = |current: &str, available: &str| {
            std::fs::write(&cur, current).unwrap();
            std::fs::write(&avail, available).unwrap();
            let (mut r, w) = std::io::pipe().unwrap();
            let c = Cleanup::restore(&cur, &avail, "tsc", "hpet").unwrap();
            c.run(Some(std::os::fd::AsRawFd::as_raw_fd(&w)));
            drop(w);
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut r, &mut bytes).unwrap();
            Answer::decode(&bytes)
        };
        assert_eq!(ask("tsc\n", "tsc hpet"), Answer::InPlace);
        assert_eq!(ask(" acpi_pm\n", "tsc hpet"), Answer::LeftAlone(b"acpi_pm".to_vec()));
        assert_eq!(
            ask("hpet\n", "hpet acpi_pm\n"),
            Answer::NotAvailable(b"hpet acpi_pm\n".to_vec())
        );
        assert_eq!(ask("hpet\n", "tsc hpet"), Answer::Restored);
        assert_eq!(std::fs::read_to_string(&cur).unwrap(), "tsc\n");
        std::fs::remove_file(&avail).unwrap();
        std::os::unix::fs::symlink("missing", &avail).unwrap();
        std::fs::write(&cur, "hpet\n").unwrap();
        let (mut r, w) = std::io::pipe().unwrap();
        Cleanup::restore(&cur, &avail, "tsc", "hpet")
            .unwrap()
            .run(Some(std::os::fd::AsRawFd::as_raw_fd(&w)));
        drop(w);
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut r, &mut bytes).unwrap();
        assert!(matches!(
            Answer::decode(&bytes),
            Answer::Unreadable { available: true, .. }
        ));
        assert_eq!(Answer::decode(b""), Answer::Gone);
    }
}
