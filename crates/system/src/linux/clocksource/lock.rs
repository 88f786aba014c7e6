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
    ///
    /// A lock no other user can take or fake: the file is made `0600` by
    /// this user (never followed through a symbolic link), in a directory
    /// no other user may replace files in; a file another user owns is
    /// refused (they may hold it, or name any pid in it), and a holder is
    /// named from the kernel's own record (`/proc/locks`: its pid, name and
    /// uid), never from the file's content.
    pub fn acquire(sysfs_root: &Path) -> Result<SwitchLock, SwitchError> {
        let path = Self::path_for(sysfs_root)?;
        let shown = escape_untrusted(&path.to_string_lossy()).into_owned();
        let fail = |what: &str| SwitchError::Lock(format!("cannot take the sweep lock {shown}: {what}"));
        let euid = super::effective_uid();
        check_directory(&path, euid).map_err(|e| fail(&e))?;
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let mut file = options.open(&path).map_err(|e| fail(&e.to_string()))?;
        let meta = file.metadata().map_err(|e| fail(&e.to_string()))?;
        if !meta.is_file() {
            return Err(fail("not a regular file"));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            if meta.uid() != euid {
                return Err(fail(&format!(
                    "it belongs to uid {}, not to this user (uid {euid}): another user made it, so it is no sweep's \
                     lock{}; remove it and run again",
                    meta.uid(),
                    holder_of(&meta).map_or(String::new(), |h| format!(" ({h} holds it)"))
                )));
            }
            // A file of an earlier release (0644): no one else may open it from now on.
            if meta.mode() & 0o077 != 0 {
                file.set_permissions(std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| fail(&e.to_string()))?;
            }
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = holder_of(&meta);
                return Err(SwitchError::Lock(match holder {
                    Some(h) if h.is_clockscope => format!(
                        "another clockscope sweep ({}, or its guardian) is switching clocksources here and \
                         holds {shown}: one sweep at a time, so that none takes another's switch for the original; \
                         run again when it has finished",
                        h.pid_and_user()
                    ),
                    Some(h) => format!(
                        "{h}, not a clockscope sweep, holds the sweep lock {shown}: no sweep runs while it does"
                    ),
                    None => format!(
                        "a process /proc/locks does not name (another pid namespace?) holds the sweep lock {shown}: \
                         no sweep runs while it does"
                    ),
                }));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(fail(&e.to_string())),
        }
        // Who holds it, for a person reading the file; messages never trust it.
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

/// Refuses a lock directory in which another user could replace the lock
/// file: one owned by another user (root excepted), or writable by others
/// without the sticky bit (`/tmp` and `/run/lock` are sticky: there a file
/// can only be pre-created, and a pre-created file is refused by its owner).
#[cfg(unix)]
fn check_directory(path: &Path, euid: u32) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let m = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", escape_untrusted(&dir.to_string_lossy())))?;
    let shown = escape_untrusted(&dir.to_string_lossy()).into_owned();
    if m.uid() != euid && m.uid() != 0 {
        return Err(format!(
            "its directory {shown} belongs to uid {}: another user could replace the lock there",
            m.uid()
        ));
    }
    if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
        return Err(format!(
            "its directory {shown} is writable by other users (mode {:o}, not sticky): they could replace the lock there",
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_directory(_path: &Path, _euid: u32) -> Result<(), String> {
    Ok(())
}

/// A process holding a lock, as the kernel names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockHolder {
    /// Its pid (in this pid namespace).
    pub pid: u32,
    /// Its name (`/proc/PID/comm`), escaped; `None` once it is gone.
    pub name: Option<String>,
    /// Its real uid (`/proc/PID/status`).
    pub uid: Option<u32>,
    /// Whether it is a clockscope sweep or its guardian (`clockscope`, `clockscope-guard`).
    pub is_clockscope: bool,
}

impl LockHolder {
    fn pid_and_user(&self) -> String {
        match self.uid {
            Some(u) if u != super::effective_uid() => format!("pid {}, uid {u}", self.pid),
            _ => format!("pid {}", self.pid),
        }
    }
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {}", self.pid)?;
        if let Some(n) = &self.name {
            write!(f, " ({n})")?;
        }
        if let Some(u) = self.uid {
            write!(f, ", uid {u}")?;
        }
        Ok(())
    }
}

/// The kernel's `/proc/locks` is read up to this size.
const PROC_LOCKS: crate::input::InputLimit = crate::input::InputLimit::new("/proc/locks", 4 << 20);

/// The process the kernel records as holding a lock on the file `meta`
/// describes (`/proc/locks`: `N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE ...`,
/// major and minor in hex); `None` when none is listed or it cannot be read.
#[cfg(unix)]
pub fn holder_of(meta: &std::fs::Metadata) -> Option<LockHolder> {
    use std::os::unix::fs::MetadataExt;
    let text = crate::input::read_text(Path::new("/proc/locks"), &PROC_LOCKS).ok()?;
    let pid = holder_in(&text, meta.dev(), meta.ino())?;
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let name = crate::input::read_text(&proc.join("comm"), &crate::input::KERNEL_VALUE)
        .ok()
        .map(|c| c.trim().to_string());
    let uid = crate::input::read_text(&proc.join("status"), &crate::input::KERNEL_VALUE)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|u| u.split_whitespace().next()?.parse().ok())
        });
    Some(LockHolder {
        pid,
        is_clockscope: matches!(name.as_deref(), Some("clockscope" | "clockscope-guard")),
        name: name.map(|n| escape_untrusted(&n).into_owned()),
        uid,
    })
}

#[cfg(not(unix))]
pub fn holder_of(_meta: &std::fs::Metadata) -> Option<LockHolder> {
    None
}

/// The pid holding a granted lock on device `dev`, inode `ino` in the text
/// of `/proc/locks` (waiters, `->` lines, are skipped).
pub fn holder_in(text: &str, dev: u64, ino: u64) -> Option<u32> {
    // glibc's gnu_dev_major/minor: the split of a 64-bit dev_t.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) == Some(&"->") || f.len() < 6 {
            return None;
        }
        let mut id = f[5].split(':');
        let (maj, min, inode) = (id.next()?, id.next()?, id.next()?);
        (u64::from_str_radix(maj, 16).ok()? == major
            && u64::from_str_radix(min, 16).ok()? == minor
            && inode.parse::<u64>().ok()? == ino)
            .then(|| f[4].parse().ok())
            .flatten()
    })
}
