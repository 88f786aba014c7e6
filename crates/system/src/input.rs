//! Bounded reading of every input file: CPUID dumps, the kernel's /proc and
//! /sys files (or a `--root` copy of them), device-tree properties and ACPI
//! tables.
//!
//! Every file is checked before it is read and read through a size cap:
//!
//! 1. `stat` the path (following symlinks): anything but a regular file (a
//!    FIFO, a socket, a character or block device, a directory) is refused
//!    without being opened, with an error naming the path and what it is. A
//!    FIFO without a writer would block for ever, `/dev/zero` never ends.
//! 2. Open it with `O_NONBLOCK | O_NOCTTY` (and std's `O_CLOEXEC`), then
//!    `fstat` the descriptor: it must still be a regular file, the same one
//!    (device and inode), so a path swapped between the two steps is refused.
//! 3. Read at most [`InputLimit::max_bytes`] + 1 bytes; more is an error, not a
//!    truncated read. Procfs and sysfs report a size of 0 or 4096 whatever
//!    they hold, so the cap is enforced on the bytes read, not on `st_size`.
//!
//! The caps, one per kind of input:
//!
//! | input | cap | why |
//! |---|---|---|
//! | [`CPUID_DUMP`] | 4 MiB | a `cpuid -r` of a 256-CPU machine is about 2 MiB; InstLatX64 files tens of kB |
//! | [`CPUINFO`] | 8 MiB | x86 `/proc/cpuinfo` is about 1.6 kB per CPU: 4096 CPUs fit |
//! | [`KERNEL_LOG_TEXT`] | 8 MiB | a kernel log saved as text (a test root's `dev/kmsg`); the default ring is 128 KiB |
//! | [`KERNEL_VALUE`] | 64 KiB | one-value sysfs/procfs files: clocksources, CPU lists, cgroup files, the command line (at most 4 KiB on Linux), `perf_event_paranoid`, MIDR registers, device-tree properties |
//! | [`PROC_STAT`] | 4 MiB | `/proc/stat`: about 100 B per CPU line plus one number per interrupt: 4096 CPUs and tens of thousands of IRQs fit |
//! | [`FIRMWARE_TABLE`] | 1 MiB | an ACPI table (the GTDT is a few hundred bytes) |
//! | [`PROC_MAPS`] | 1 MiB | `/proc/self/maps`: clockscope maps a few dozen regions of about 100 B each |
//!
//! The live kernel log `/dev/kmsg` is a character device by nature; it has
//! its own reader in [`crate::linux::kmsg`], non-blocking and bounded in
//! records, bytes and time.
//!
//! Written by hand: no crate combines the file-type check, the non-blocking
//! open and the size cap.

use crate::escape::escape_untrusted;
use std::io::{ErrorKind, Read};
use std::path::Path;

/// What is read and how much of it may be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputLimit {
    /// What the file is, for messages ("CPUID dump").
    pub kind: &'static str,
    /// The largest accepted size, bytes.
    pub max_bytes: u64,
}

impl InputLimit {
    /// A cap of `max_bytes` on a `kind` of input.
    pub(crate) const fn new(kind: &'static str, max_bytes: u64) -> Self {
        InputLimit { kind, max_bytes }
    }
}

/// A CPUID dump (`--cpuid-dump`): 4 MiB.
pub const CPUID_DUMP: InputLimit = InputLimit::new("CPUID dump", 4 << 20);

/// `/proc/cpuinfo`: 8 MiB.
pub const CPUINFO: InputLimit = InputLimit::new("/proc/cpuinfo", 8 << 20);

/// A kernel log saved as text: 8 MiB.
pub const KERNEL_LOG_TEXT: InputLimit = InputLimit::new("kernel log", 8 << 20);

/// A one-value sysfs or procfs file, or a device-tree property: 64 KiB.
pub const KERNEL_VALUE: InputLimit = InputLimit::new("kernel file", 64 << 10);

/// `/proc/stat`: 4 MiB.
pub const PROC_STAT: InputLimit = InputLimit::new("/proc/stat", 4 << 20);

/// An ACPI table: 1 MiB.
pub const FIRMWARE_TABLE: InputLimit = InputLimit::new("firmware table", 1 << 20);

/// `/proc/self/maps`: 1 MiB.
pub const PROC_MAPS: InputLimit = InputLimit::new("/proc/self/maps", 1 << 20);

/// Why an input was not read. The message starts with the path (escaped:
/// a file name is untrusted text).
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The path does not exist.
    #[error("{path}: {error}")]
    NotFound {
        /// The path, as given.
        path: String,
        /// The error of the open.
        error: std::io::Error,
    },
    /// Not a regular file: `what` is "a FIFO", "a socket", "a character
    /// device", "a block device" or "a directory".
    #[error("{path}: is {what}, not a regular file: refused")]
    NotRegular {
        /// The path, as given.
        path: String,
        /// What it is instead.
        what: &'static str,
    },
    /// Larger than the cap.
    #[error("{path}: larger than {}: not a {}", size_text(.limit.max_bytes), .limit.kind)]
    TooLarge {
        /// The path, as given.
        path: String,
        /// The cap it exceeded.
        limit: InputLimit,
    },
    /// Not UTF-8 text (for [`read_text`]).
    #[error("{path}: not a text file (not UTF-8)")]
    NotText {
        /// The path, as given.
        path: String,
    },
    /// The path changed between the check and the open.
    #[error("{path}: changed while being opened: refused")]
    Changed {
        /// The path, as given.
        path: String,
    },
    /// Any other I/O error (permissions, EIO, ...).
    #[error("{path}: {error}")]
    Io {
        /// The path, as given.
        path: String,
        /// The error.
        error: std::io::Error,
    },
}

impl InputError {
    /// Whether the file does not exist (evidence that is missing rather than
    /// unreadable).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::NotFound { .. })
    }
}

/// `4 MiB`, `64 KiB`, `100 bytes`.
fn size_text(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// The path as it may be printed.
fn shown(path: &Path) -> String {
    escape_untrusted(&path.to_string_lossy()).into_owned()
}

/// What a file that is not a regular file is, in words.
fn file_kind(ft: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Reads a whole regular file of at most `limit.max_bytes` bytes (see the
/// module documentation for the checks).
pub fn read_bytes(path: &Path, limit: &InputLimit) -> Result<Vec<u8>, InputError> {
    let io_error = |error: std::io::Error| match error.kind() {
        ErrorKind::NotFound => InputError::NotFound {
            path: shown(path),
            error,
        },
        _ => InputError::Io {
            path: shown(path),
            error,
        },
    };
    let before = std::fs::metadata(path).map_err(io_error)?;
    if !before.is_file() {
        return Err(InputError::NotRegular {
            path: shown(path),
            what: file_kind(before.file_type()),
        });
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path).map_err(io_error)?;
    let after = file.metadata().map_err(io_error)?;
    if !after.is_file() {
        return Err(InputError::NotRegular {
            path: shown(path),
            what: file_kind(after.file_type()),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if (before.dev(), before.ino()) != (after.dev(), after.ino()) {
            return Err(InputError::Changed { path: shown(path) });
        }
    }
    let too_large = || InputError::TooLarge {
        path: shown(path),
        limit: *limit,
    };
    if after.len() > limit.max_bytes {
        return Err(too_large());
    }
    // st_size is a hint only (0 on procfs): never reserve more than the cap.
    let mut bytes = Vec::with_capacity(after.len().min(limit.max_bytes) as usize + 1);
    file.take(limit.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit.max_bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_bytes`] as UTF-8 text.
pub fn read_text(path: &Path, limit: &InputLimit) -> Result<String, InputError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|_| InputError::NotText { path: shown(path) })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: InputLimit = InputLimit {
        kind: "test file",
        max_bytes: 16,
    };

    #[test]
    fn reads_a_regular_file_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "0123456789abcdef").unwrap();
        assert_eq!(read_text(&p, &SMALL).unwrap(), "0123456789abcdef");
        std::fs::write(&p, "0123456789abcdefX").unwrap();
        let e = read_text(&p, &SMALL).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { .. }));
        assert_eq!(
            e.to_string(),
            format!("{}: larger than 16 bytes: not a test file", p.display())
        );
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_bytes(dir.path(), &SMALL).unwrap_err();
        assert!(
            e.to_string().ends_with("is a directory, not a regular file: refused"),
            "{e}"
        );
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let e = read_bytes(&fifo, &SMALL).unwrap_err();
        assert!(e.to_string().ends_with("is a FIFO, not a regular file: refused"), "{e}");
        let e = read_bytes(Path::new("/dev/null"), &SMALL).unwrap_err();
        assert!(e.to_string().contains("is a character device"), "{e}");
        let e = read_bytes(&dir.path().join("absent"), &SMALL).unwrap_err();
        assert!(e.is_not_found(), "{e}");
    }

    #[test]
    fn an_oversized_sparse_file_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("huge");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(64 << 30).unwrap();
        let e = read_bytes(&p, &CPUID_DUMP).unwrap_err();
        assert!(e.to_string().ends_with("larger than 4 MiB: not a CPUID dump"), "{e}");
    }

    #[test]
    fn paths_are_escaped_in_messages() {
        let e = read_bytes(Path::new("/nonexistent/\x1b]0;x\x07"), &SMALL).unwrap_err();
        assert!(e.to_string().starts_with("/nonexistent/\\x1b]0;x\\x07: "), "{e}");
    }
}
