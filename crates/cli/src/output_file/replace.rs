//! How a regular file is replaced: the new content goes to a temporary file
//! in the target's directory, is synced, then takes the target's name in one
//! step (`rename`), so a reader sees the old file or the new one, never part
//! of one.
//!
//! - Linux, on a file system with `O_TMPFILE` (ext4, xfs, btrfs, tmpfs, ...):
//!   the temporary file is created without a name when the output is
//!   prepared, so no death of the process, SIGKILL included, can leave it
//!   behind (the kernel frees it with the last descriptor). At commit it gets
//!   a name with `linkat` (through `/proc/self/fd/N`, or `AT_EMPTY_PATH`
//!   where `/proc` is missing): the target's own name when there is no
//!   target, else a temporary name renamed over the target at once. Only in
//!   that window of two system calls does a temporary name exist; a
//!   [`crate::guardian`] removes it if the process dies then (any death).
//! - Elsewhere (another system, a file system without `O_TMPFILE`, a
//!   descriptor that cannot be linked): a named temporary file, created only
//!   at commit, when the content is ready, and removed on an error, or by a
//!   [`crate::guardian`] if the process dies before the rename (any death,
//!   SIGKILL included). When the output is prepared
//!   one is created and removed at once, so that an unwritable directory
//!   fails before measuring.
//!
//! A temporary name is `.NAME.XXXXXX.tmp` (the `tempfile` crate draws it),
//! or the short `.XXXXXX.tmp` when the file system refuses the long one (a
//! name near 255 bytes): any name the file system accepts for the target
//! works. The replacement gets the old file's owner and group (when allowed),
//! then its whole mode, setuid, setgid and sticky bits included, after the
//! content is written (a write clears setuid and setgid). A new file gets
//! 0666 less the umask. The replacement is a new inode: other hard links to
//! the old file keep the old content.

use crate::cleanup::Cleanup;
use crate::guardian::Guardian;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tempfile::{Builder, NamedTempFile};

/// What the replacement keeps of the file it replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keep {
    uid: u32,
    gid: u32,
    /// Permissions and the setuid, setgid and sticky bits.
    mode: u32,
}

impl Keep {
    pub fn of(meta: &Metadata) -> Keep {
        Keep {
            uid: meta.uid(),
            gid: meta.gid(),
            mode: meta.mode() & 0o7777,
        }
    }
}

/// Whether to try `O_TMPFILE` (tests force the named fallback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Temp {
    /// Unnamed where the system allows, else named.
    Unnamed,
    /// Named only.
    Named,
}

/// A regular file to replace (or create), prepared before measuring.
pub struct Replacement {
    dir: PathBuf,
    name: OsString,
    keep: Option<Keep>,
    /// The unnamed temporary file; `None`: a named one at commit.
    unnamed: Option<File>,
}

/// Mode a temporary file is created with: a new file's (the kernel takes the
/// umask away), or private until the old file's mode is set after writing.
fn creation_mode(keep: Option<Keep>) -> u32 {
    if keep.is_some() {
        0o600
    } else {
        0o666
    }
}

impl Replacement {
    /// Prepares to write `name` in `dir` (both resolved), keeping `keep`.
    /// Fails if the directory cannot take a new file.
    pub fn prepare(dir: PathBuf, name: OsString, keep: Option<Keep>, temp: Temp) -> io::Result<Replacement> {
        let unnamed = match temp {
            Temp::Unnamed => unnamed::create(&dir, creation_mode(keep))?,
            Temp::Named => None,
        };
        if unnamed.is_none() {
            // Fail now, not after measuring, where the directory takes no file.
            drop(temp_in(&dir, &name, |path| create_new(path, 0o600))?);
        }
        Ok(Replacement {
            dir,
            name,
            keep,
            unnamed,
        })
    }

    /// Whether the temporary file is unnamed (`O_TMPFILE`).
    pub fn is_unnamed(&self) -> bool {
        self.unnamed.is_some()
    }

    /// Writes `bytes`, syncs them and puts them in place. On error the
    /// target is as it was and no temporary file is left.
    pub fn commit(self, bytes: &[u8]) -> io::Result<()> {
        let target = self.dir.join(&self.name);
        if let Some(mut file) = self.unnamed {
            fill(&mut file, bytes, self.keep)?;
            match unnamed::publish(&file, &self.dir, &self.name, self.keep.is_some()) {
                Ok(()) => {
                    sync_dir(&self.dir);
                    return Ok(());
                }
                // Nothing linked: the named way below.
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {}
                Err(e) => return Err(e),
            }
        }
        // On an error the temporary file is removed as it is dropped.
        let mut named = temp_in(&self.dir, &self.name, |path| create_new(path, creation_mode(self.keep)))?;
        fill(&mut named.as_file_mut().0, bytes, self.keep)?;
        named.persist(&target).map_err(|e| e.error)?;
        sync_dir(&self.dir);
        Ok(())
    }
}

/// Writes `bytes`, gives the file the old one's owner and mode, syncs it.
fn fill(file: &mut File, bytes: &[u8], keep: Option<Keep>) -> io::Result<()> {
    file.write_all(bytes)?;
    if let Some(k) = keep {
        let meta = file.metadata()?;
        if (meta.uid(), meta.gid()) != (k.uid, k.gid) {
            // Only root may give a file away; a member of the group may still
            // give it the group. Otherwise the file stays ours.
            if std::os::unix::fs::fchown(&*file, Some(k.uid), Some(k.gid)).is_err() {
                let _ = std::os::unix::fs::fchown(&*file, None, Some(k.gid));
            }
        }
        // After the write and the chown, which both clear setuid and setgid.
        file.set_permissions(Permissions::from_mode(k.mode))?;
    }
    file.sync_all()
}

/// The rename is durable once the directory is synced; best effort.
fn sync_dir(dir: &Path) {
    let _ = File::open(dir).and_then(|d| d.sync_all());
}

/// A temporary name for `name` in `dir` that `make` gives a file (creates
/// one, or links one there), guarded by a [`Guardian`] that removes it if
/// the process dies (any signal, a second Ctrl-C's forced exit, SIGKILL, a
/// crash) before the name is renamed away; on every other path the
/// [`NamedTempFile`]'s drop removes it. The name is `.NAME.XXXXXX.tmp`, or
/// `.XXXXXX.tmp` where the file system refuses that one (a NAME near 255
/// bytes): tempfile's [`Builder`] draws the random part and tries again
/// where a name is taken.
fn temp_in<R>(
    dir: &Path,
    name: &OsStr,
    mut make: impl FnMut(&Path) -> io::Result<R>,
) -> io::Result<NamedTempFile<(R, Guardian)>> {
    let mut guarded = |path: &Path| {
        let made = make(path)?;
        // Guarded once made: never a cleanup for a name someone else holds.
        match Cleanup::unlink(path).and_then(|c| Guardian::spawn(c, &[])) {
            Ok(guardian) => Ok((made, guardian)),
            Err(e) => {
                let _ = std::fs::remove_file(path);
                Err(e)
            }
        }
    };
    let mut long = OsString::from(".");
    long.push(name);
    long.push(".");
    let mut temp = |prefix: &OsStr| {
        Builder::new()
            .prefix(prefix)
            .suffix(".tmp")
            .rand_bytes(6)
            .make_in(dir, &mut guarded)
    };
    match temp(&long) {
        Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => temp(OsStr::new(".")),
        result => result,
    }
}

/// Creates the file `path` (never over an existing one) with `mode`.
fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOCTTY)
        .open(path)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod unnamed {
    //! `O_TMPFILE` and `linkat`, through nix's safe wrappers.

    use super::temp_in;
    use nix::errno::Errno;
    use nix::fcntl::{AtFlags, OFlag, AT_FDCWD};
    use nix::sys::stat::Mode;
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::path::Path;

    /// An unnamed file in `dir`, or `None` where the kernel or the file
    /// system has no `O_TMPFILE`.
    pub fn create(dir: &Path, mode: u32) -> io::Result<Option<File>> {
        let flags = OFlag::O_TMPFILE | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
        match nix::fcntl::open(dir, flags, Mode::from_bits_truncate(mode)) {
            Ok(fd) => Ok(Some(File::from(fd))),
            // EOPNOTSUPP: the file system; EISDIR: a kernel without O_TMPFILE (before 3.11).
            Err(Errno::EOPNOTSUPP | Errno::EISDIR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Gives the unnamed `file` the name `at`; `Unsupported` where no way to
    /// link it exists (no `/proc` and no CAP_DAC_READ_SEARCH).
    fn link(file: &File, at: &Path) -> io::Result<()> {
        let by_proc = format!("/proc/self/fd/{}", file.as_raw_fd());
        let err = match nix::unistd::linkat(AT_FDCWD, by_proc.as_str(), AT_FDCWD, at, AtFlags::AT_SYMLINK_FOLLOW) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if Path::new("/proc/self/fd").is_dir() {
            return Err(err.into());
        }
        match nix::unistd::linkat(file, "", AT_FDCWD, at, AtFlags::AT_EMPTY_PATH) {
            Ok(()) => Ok(()),
            Err(Errno::ENOENT | Errno::EPERM | Errno::EINVAL) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an unnamed file cannot be linked here (no /proc, no CAP_DAC_READ_SEARCH)",
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Puts the written, synced `file` at `dir/name`: linked there when there
    /// is no such file, else linked under a temporary name renamed over it.
    pub fn publish(file: &File, dir: &Path, name: &OsStr, replaces: bool) -> io::Result<()> {
        let target = dir.join(name);
        if !replaces {
            match link(file, &target) {
                // Created by someone else meanwhile: replaced as any file.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                result => return result,
            }
        }
        let temp = temp_in(dir, name, |path| link(file, path))?;
        temp.persist(&target).map(drop).map_err(|e| e.error)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod unnamed {
    //! No `O_TMPFILE` here: always the named temporary file.

    use std::ffi::OsStr;
    use std::fs::File;
    use std::io;
    use std::path::Path;

    pub fn create(_dir: &Path, _mode: u32) -> io::Result<Option<File>> {
        Ok(None)
    }

    pub fn publish(_file: &File, _dir: &Path, _name: &OsStr, _replaces: bool) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn prepare(dir: &Path, name: &str, temp: Temp) -> Replacement {
        let keep = std::fs::metadata(dir.join(name)).ok().map(|m| Keep::of(&m));
        Replacement::prepare(dir.to_path_buf(), name.into(), keep, temp).unwrap()
    }

    #[test]
    fn temp_names_fit_any_name_the_file_system_takes() {
        let dir = tempfile::tempdir().unwrap();
        let named = |name: &str| {
            let t = temp_in(dir.path(), OsStr::new(name), |path| create_new(path, 0o600)).unwrap();
            t.path().file_name().unwrap().to_str().unwrap().to_string()
        };
        let t = named("r.prom");
        assert!(t.starts_with(".r.prom.") && t.ends_with(".tmp") && t.len() == 18, "{t}");
        assert_ne!(named("r.prom"), t);
        assert!(entries(dir.path()).is_empty(), "removed as they are dropped");
        // The file system refuses the long form: the short one.
        assert_eq!(named(&"x".repeat(255)).len(), 11);
        // The longest name that keeps the readable form.
        assert_eq!(named(&"x".repeat(243)).len(), 255);
    }

    #[test]
    fn both_ways_create_and_replace_keeping_special_bits() {
        for temp in [Temp::Unnamed, Temp::Named] {
            let dir = tempfile::tempdir().unwrap();
            let r = prepare(dir.path(), "new.prom", temp);
            assert!(entries(dir.path()).is_empty(), "{temp:?}: nothing named before commit");
            r.commit(b"one").unwrap();
            assert_eq!(entries(dir.path()), ["new.prom"]);
            let file = dir.path().join("new.prom");
            assert_eq!(std::fs::read(&file).unwrap(), b"one");
            for mode in [0o2640, 0o1604, 0o4755, 0o444] {
                std::fs::set_permissions(&file, Permissions::from_mode(mode)).unwrap();
                let before = std::fs::metadata(&file).unwrap().ino();
                let r = prepare(dir.path(), "new.prom", temp);
                r.commit(b"two").unwrap();
                let m = std::fs::metadata(&file).unwrap();
                assert_eq!(m.mode() & 0o7777, mode, "{temp:?}");
                assert_ne!(m.ino(), before, "a new inode");
                assert_eq!(std::fs::read(&file).unwrap(), b"two");
                assert_eq!(entries(dir.path()), ["new.prom"], "{temp:?}");
            }
        }
    }

    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn the_unnamed_file_has_no_name_until_commit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old"), "keep").unwrap();
        let r = prepare(dir.path(), "old", Temp::Unnamed);
        if !r.is_unnamed() {
            println!("SKIPPED: no O_TMPFILE on this file system");
            return;
        }
        assert_eq!(entries(dir.path()), ["old"]);
        drop(r);
        assert_eq!(std::fs::read_to_string(dir.path().join("old")).unwrap(), "keep");
        assert_eq!(entries(dir.path()), ["old"]);
    }

    #[test]
    fn a_255_byte_name_is_written_both_ways() {
        let name = "n".repeat(250) + ".prom";
        for temp in [Temp::Unnamed, Temp::Named] {
            let dir = tempfile::tempdir().unwrap();
            prepare(dir.path(), &name, temp).commit(b"a").unwrap();
            prepare(dir.path(), &name, temp).commit(b"b").unwrap();
            assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"b");
            assert_eq!(entries(dir.path()), vec![name.clone()], "{temp:?}");
        }
    }

    /// Set in the child [`named_temp_in_a_child`] starts: the directory to work in.
    const CHILD_DIR: &str = "CLOCKSCOPE_TEST_NAMED_TEMP_DIR";
    /// The signal the child sends itself (`kill -s NAME`) until it dies.
    const CHILD_DEATH: &str = "CLOCKSCOPE_TEST_NAMED_TEMP_DEATH";

    /// Not a test by itself: the body of the child processes
    /// [`any_death_removes_a_named_temp`] starts (it does nothing without
    /// their environment): the process must die.
    #[test]
    fn named_temp_in_a_child() {
        let (Some(dir), Some(death)) = (std::env::var_os(CHILD_DIR), std::env::var(CHILD_DEATH).ok()) else {
            return;
        };
        if death == "TERM" {
            // The first SIGTERM asks the run to stop; a later one forces the exit (130).
            crate::exit::install_interrupt_handler();
        }
        let named = temp_in(Path::new(&dir), OsStr::new("p.svg"), |path| create_new(path, 0o600)).unwrap();
        assert!(named.path().exists());
        let me = std::process::id().to_string();
        loop {
            // Sent until the process ends (a signal may be delivered to any thread, and
            // two SIGTERMs sent at once may count as one).
            let sent = std::process::Command::new("kill").args(["-s", &death, &me]).status();
            assert!(sent.unwrap().success());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    #[test]
    fn any_death_removes_a_named_temp() {
        use std::os::unix::process::ExitStatusExt;
        for death in ["KILL", "QUIT", "USR1", "USR2", "ALRM", "XCPU", "VTALRM", "TERM"] {
            let dir = tempfile::tempdir().unwrap();
            // No core file from SIGQUIT or SIGXCPU.
            let child = std::process::Command::new("sh")
                .args(["-c", "ulimit -c 0; exec \"$0\" \"$@\""])
                .arg(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "output_file::replace::tests::named_temp_in_a_child",
                    "--test-threads=1",
                ])
                .env(CHILD_DIR, dir.path())
                .env(CHILD_DEATH, death)
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&child.stdout);
            if death == "TERM" {
                assert_eq!(child.status.code(), Some(130), "the forced exit: {said}");
            } else {
                let sig = child.status.signal();
                assert!(
                    sig.is_some(),
                    "{death}: not killed by the signal: {:?} {said}",
                    child.status
                );
            }
            assert!(
                entries(dir.path()).is_empty(),
                "{death}: left {:?}",
                entries(dir.path())
            );
        }
    }

    #[test]
    fn an_unwritable_directory_fails_at_prepare() {
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, Permissions::from_mode(0o555)).unwrap();
        if File::create(ro.join("probe")).is_ok() {
            println!("SKIPPED: this user (root) writes anywhere; the read-only case is untested");
            return;
        }
        for temp in [Temp::Unnamed, Temp::Named] {
            let e = Replacement::prepare(ro.clone(), "x".into(), None, temp).err().unwrap();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{temp:?}");
        }
    }
}
