//! Switching the kernel's clocksource safely, for `clockscope sweep`: the
//! names the kernel offers (`available_clocksource`, any number, each once),
//! the one in use (`current_clocksource`), a switch to a name still
//! available that is read back to check it took effect, what a restore of
//! the original did ([`Restored`]; the CLI's guardian process restores it,
//! only over a clocksource the sweep put in place itself), and
//! [`SwitchLock`], one sweep at a time.
//!
//! Everything goes through [`ClocksourceControl`]: [`SysfsClocksource`] is
//! the real files under a sysfs root (`/sys` in production, a temporary
//! directory in tests); tests wrap it to make a write fail or read back a
//! different name. A name is checked ([`validate_name`]) before it is ever
//! written, so no odd byte reaches the kernel.
//!
//! Files: here the names, the control and a switch; `guard.rs` what a
//! restore did ([`Restored`], [`RestoreError`]); `lock.rs` [`SwitchLock`].

mod guard;
pub mod lock;

pub use guard::{RestoreError, Restored};
pub use lock::{holder_of, LockHolder, SwitchLock, LIVE_LOCK_DIR, LOCK_NAME};

use crate::escape::escape_untrusted;
use crate::input::{self, KERNEL_VALUE};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The clocksource directory under a sysfs root (`/sys`).
pub const CLOCKSOURCE0: &str = "devices/system/clocksource/clocksource0";

/// The kernel's longest clocksource name (`CS_NAME_LEN` is 32 with the NUL).
pub const MAX_NAME_LEN: usize = 31;

/// Why a clocksource could not be listed, switched or restored. Each
/// message is one line; untrusted text in it (names, paths) is escaped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    /// A name with characters no kernel clocksource has (or empty, or too long).
    #[error(
        "'{}' is not a clocksource name (letters, digits, '_', '-' and '.', at most {MAX_NAME_LEN})",
        escape_untrusted(.0)
    )]
    BadName(String),
    /// A valid name the kernel does not offer.
    #[error(
        "clocksource '{}' is not available here (available: {})",
        escape_untrusted(.name),
        escape_untrusted(&shown_list(.available))
    )]
    NotAvailable {
        /// The name asked for.
        name: String,
        /// The names the kernel offers.
        available: Vec<String>,
    },
    /// `current_clocksource` or `available_clocksource` could not be read.
    #[error("{0}")]
    Read(String),
    /// The write was refused (the file is missing, read-only, not a regular file...).
    #[error("switching to clocksource '{}' failed: {}", escape_untrusted(.name), escape_untrusted(.reason))]
    Write {
        /// The name written.
        name: String,
        /// Why the write failed.
        reason: String,
    },
    /// The write was accepted but the kernel reads back another clocksource.
    #[error(
        "wrote clocksource '{}' but the kernel reads back '{}': the switch did not take effect",
        escape_untrusted(.wanted),
        escape_untrusted(.got)
    )]
    ReadBack {
        /// The name written.
        wanted: String,
        /// The name read back.
        got: String,
    },
    /// The one-sweep-at-a-time lock is held or cannot be taken (the whole message).
    #[error("{0}")]
    Lock(String),
    /// The clocksource in use is not in `available_clocksource`: after a
    /// switch it could not be written back, so no switch is made.
    #[error(
        "the clocksource in use, '{}', is not in available_clocksource ({}): once switched away it could \
         not be written back, so nothing is switched",
        escape_untrusted(.original),
        escape_untrusted(&shown_list(.available))
    )]
    NotRestorable {
        /// The clocksource in use.
        original: String,
        /// The names the kernel offers.
        available: Vec<String>,
    },
}

/// A list of any length: the first few names, then how many more.
fn shown_list(available: &[String]) -> String {
    const SHOWN: usize = 16;
    let mut list = available.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if available.len() > SHOWN {
        list.push_str(&format!(" and {} more", available.len() - SHOWN));
    }
    list
}

/// Refuses a sweep whose original (`current`) could not be put back: a
/// name not in `available` is never written ([`switch_to`]), so after the
/// first switch the guardian could not restore it.
pub fn check_restorable(current: &str, available: &[String]) -> Result<(), SwitchError> {
    if available.iter().any(|a| a == current) {
        Ok(())
    } else {
        Err(SwitchError::NotRestorable {
            original: current.to_string(),
            available: available.to_vec(),
        })
    }
}

/// Checks that `name` looks like a kernel clocksource name (`tsc`,
/// `kvm-clock`, `acpi_pm`, `hyperv_clocksource_tsc_page`, `arch_sys_counter`):
/// ASCII letters, digits, `_`, `-`, `.`, not starting with `-`, 1 to 31 bytes.
pub fn validate_name(name: &str) -> Result<(), SwitchError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(SwitchError::BadName(name.to_string()))
    }
}

/// The effective uid of this process: switching the clocksource needs 0.
#[cfg(unix)]
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// No uid outside Unix: never root.
#[cfg(not(unix))]
pub fn effective_uid() -> u32 {
    u32::MAX
}

/// Reads and writes the kernel's clocksource selection.
pub trait ClocksourceControl: Send + Sync {
    /// The clocksource in use.
    fn current(&self) -> Result<String, SwitchError>;
    /// The clocksources the kernel could switch to.
    fn available(&self) -> Result<Vec<String>, SwitchError>;
    /// Asks the kernel to use `name` (already validated); does not read back.
    fn write(&self, name: &str) -> Result<(), SwitchError>;
    /// The shell command a person runs to select `name` by hand.
    fn manual_command(&self, name: &str) -> String;
}

/// The sysfs files `<sysfs root>/devices/system/clocksource/clocksource0/
/// {current,available}_clocksource`.
#[derive(Clone, Debug)]
pub struct SysfsClocksource {
    dir: PathBuf,
}

impl SysfsClocksource {
    /// The files under `sysfs_root` (`/sys` on a live system).
    pub fn new(sysfs_root: &Path) -> Self {
        SysfsClocksource {
            dir: sysfs_root.join(CLOCKSOURCE0),
        }
    }

    /// `.../clocksource0`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `.../clocksource0/current_clocksource`.
    pub fn current_path(&self) -> PathBuf {
        self.dir.join("current_clocksource")
    }

    /// `.../clocksource0/available_clocksource`.
    pub fn available_path(&self) -> PathBuf {
        self.dir.join("available_clocksource")
    }
}

fn read_value(path: &Path) -> Result<String, SwitchError> {
    input::read_text(path, &KERNEL_VALUE).map_err(|e| SwitchError::Read(e.to_string()))
}

impl ClocksourceControl for SysfsClocksource {
    fn current(&self) -> Result<String, SwitchError> {
        let path = self.current_path();
        let text = read_value(&path)?;
        let mut words = text.split_whitespace();
        match (words.next(), words.next()) {
            (Some(name), None) if validate_name(name).is_ok() => Ok(name.to_string()),
            _ => Err(SwitchError::Read(format!(
                "{}: expected one clocksource name, got {:?}",
                escape_untrusted(&path.to_string_lossy()),
                escape_untrusted(text.trim())
            ))),
        }
    }

    fn available(&self) -> Result<Vec<String>, SwitchError> {
        let path = self.available_path();
        let text = read_value(&path)?;
        // Any number of names (the read is bounded: KERNEL_VALUE), each once,
        // in the kernel's order.
        let mut seen = std::collections::HashSet::new();
        let mut names: Vec<String> = Vec::new();
        for word in text.split_whitespace() {
            if validate_name(word).is_err() {
                return Err(SwitchError::Read(format!(
                    "{}: not a list of clocksource names ('{}' is not a name)",
                    escape_untrusted(&path.to_string_lossy()),
                    escape_untrusted(&word.chars().take(40).collect::<String>())
                )));
            }
            if seen.insert(word) {
                names.push(word.to_string());
            }
        }
        if names.is_empty() {
            return Err(SwitchError::Read(format!(
                "{}: empty: no clocksource listed",
                escape_untrusted(&path.to_string_lossy())
            )));
        }
        Ok(names)
    }

    fn write(&self, name: &str) -> Result<(), SwitchError> {
        validate_name(name)?;
        let path = self.current_path();
        let fail = |reason: String| SwitchError::Write {
            name: name.to_string(),
            reason: format!("{}: {reason}", path.to_string_lossy()),
        };
        // Never create the file (a missing one means this is not a clocksource
        // directory) and never follow a link or block on a FIFO.
        let mut options = std::fs::OpenOptions::new();
        options.write(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let mut file = options.open(&path).map_err(|e| fail(e.to_string()))?;
        let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
        if !meta.is_file() {
            return Err(fail("not a regular file: refused".to_string()));
        }
        // One write, as `echo` does: sysfs takes the value from a single write.
        file.write_all(format!("{name}\n").as_bytes())
            .map_err(|e| fail(e.to_string()))
    }

    fn manual_command(&self, name: &str) -> String {
        format!("echo {name} > {}", self.current_path().to_string_lossy())
    }
}

/// Writes `name` and reads it back: Ok only when the kernel now uses it.
/// A name no longer in `available_clocksource` (read again just before) is
/// never written.
pub fn switch_to(control: &dyn ClocksourceControl, name: &str) -> Result<(), SwitchError> {
    validate_name(name)?;
    let available = control.available()?;
    if !available.iter().any(|a| a == name) {
        return Err(SwitchError::NotAvailable {
            name: name.to_string(),
            available,
        });
    }
    control.write(name)?;
    let got = control.current()?;
    if got == name {
        Ok(())
    } else {
        Err(SwitchError::ReadBack {
            wanted: name.to_string(),
            got,
        })
    }
}

/// The clocksources a sweep visits: `only` (validated, in the order given)
/// or every available one; each once.
pub fn plan(available: &[String], only: &[String]) -> Result<Vec<String>, SwitchError> {
    let mut seen = std::collections::HashSet::new();
    if only.is_empty() {
        return Ok(available.iter().filter(|n| seen.insert(n.as_str())).cloned().collect());
    }
    let mut names = Vec::new();
    let offered: std::collections::HashSet<&str> = available.iter().map(String::as_str).collect();
    for n in only {
        validate_name(n)?;
        if !offered.contains(n.as_str()) {
            return Err(SwitchError::NotAvailable {
                name: n.clone(),
                available: available.to_vec(),
            });
        }
        if seen.insert(n.as_str()) {
            names.push(n.clone());
        }
    }
    Ok(names)
}

#[cfg(all(test, feature = "testing"))]
mod tests;
