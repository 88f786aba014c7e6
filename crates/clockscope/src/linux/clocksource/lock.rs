//! [`SwitchLock`]: one sweep at a time per machine (per sysfs tree), an
//! exclusive `flock` on a file that names its holder.

use super::SwitchError;
use crate::escape::escape_untrusted;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the one-sweep-at-a-time lock of the live `/sys` lives: `/run`,
/// which only root can write (not `/run/lock`, mode 1777, where any user
/// could create the file first and hold it).
pub const LIVE_LOCK_DIR: &str = "/run";
/// The lock file's name there; beside a fake root it is `.<root name>.` + this.
pub const LOCK_NAME: &str = "clockscope-sweep.lock";

/// An exclusive `flock` held while a sweep switches clocksources, so that
/// one sweep at a time runs per machine (a second one, started while the
/// first had switched, would take the switched clocksource for the original
/// and "restore" it). For the live `/sys` it is
/// `/run/clockscope-sweep.lock` (also for any other path to a sysfs mount,
/// known by its file system's magic); for another tree `ROOT/sys`,
/// `ROOT/.sys.clockscope-sweep.lock` beside it (its canonical path, so two names
/// of one tree share it). Never waits: a lock held elsewhere is an error
/// naming the holder. The file holds the holder's pid and stays in place
/// (removing it would let two processes lock two different files).
pub struct SwitchLock {
    file: std::fs::File,
    path: PathBuf,
}

impl SwitchLock {
    /// The lock file that guards the clocksource files under `sysfs_root`.
    pub fn path_for(sysfs_root: &Path) -> Result<PathBuf, SwitchError> {
        let root = std::fs::canonicalize(sysfs_root)
            .map_err(|e| SwitchError::Read(format!("{}: {e}", escape_untrusted(&sysfs_root.to_string_lossy()))))?;
        let live = || Path::new(LIVE_LOCK_DIR).join(LOCK_NAME);
        // The kernel's own files, by what they are (a sysfs mount: `/sys/..`'s
        // sys, `/proc/self/root/sys`, a second sysfs mount), share the live lock.
        if root == Path::new("/sys")
            || crate::linux::identity::is_kernel_clocksource_dir(&root.join(super::CLOCKSOURCE0))
        {
            return Ok(live());
        }
        Ok(match (root.parent(), root.file_name()) {
            (Some(parent), Some(name)) => {
                let mut file = std::ffi::OsString::from(".");
                file.push(name);
                file.push(".");
                file.push(LOCK_NAME);
                parent.join(file)
            }
            _ => live(),
        })
    }

    /// Takes the lock for `sysfs_root`, or says who holds it.
    pub fn acquire(sysfs_root: &Path) -> Result<SwitchLock, SwitchError> {
        let path = Self::path_for(sysfs_root)?;
        let shown = escape_untrusted(&path.to_string_lossy()).into_owned();
        let fail = |what: &str| SwitchError::Lock(format!("cannot take the sweep lock {shown}: {what}"));
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let mut file = options.open(&path).map_err(|e| fail(&e.to_string()))?;
        if !file.metadata().map_err(|e| fail(&e.to_string()))?.is_file() {
            return Err(fail("not a regular file"));
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = std::io::Read::read_to_string(&mut std::io::Read::take(&file, 32), &mut holder);
                let holder = holder.trim();
                let holder = if !holder.is_empty() && holder.bytes().all(|b| b.is_ascii_digit()) {
                    format!("pid {holder}")
                } else {
                    "another process".to_string()
                };
                return Err(SwitchError::Lock(format!(
                    "another clockscope sweep ({holder}, or its guardian) is switching clocksources here and \
                     holds {shown}: one sweep at a time, so that none takes another's switch for the original; \
                     run again when it has finished"
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(fail(&e.to_string())),
        }
        // Who holds it, for the message above; a failure here changes nothing.
        let _ = file.set_len(0);
        let _ = writeln!(file, "{}", std::process::id());
        Ok(SwitchLock { file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The locked descriptor (a child that inherits it holds the lock too).
    #[cfg(unix)]
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.file.as_raw_fd()
    }
}
