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
//! A temporary name is `.NAME.XXXXXX.tmp` when that fits in a file name
//! (255 bytes), else the short `.XXXXXX.tmp`, also used when the file system
//! refuses the long one: any name the file system accepts for the target
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
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

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
            let named = NamedTemp::create(&dir, &name, 0o600)?;
            named.remove();
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
        let mut named = NamedTemp::create(&self.dir, &self.name, creation_mode(self.keep))?;
        let written = fill(&mut named.file, bytes, self.keep).and_then(|()| std::fs::rename(&named.path, &target));
        match written {
            Ok(()) => named.forget(),
            Err(e) => {
                named.remove();
                return Err(e);
            }
        }
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

/// Removes `path`, a temporary file this process created, if the process
/// dies (any signal, a second Ctrl-C's forced exit, SIGKILL, a crash) while
/// the returned guardian lives.
fn remove_on_exit(path: &Path) -> io::Result<Guardian> {
    Guardian::spawn(Cleanup::unlink(path)?, &[])
}

/// A named temporary file this process created, removed if the process
/// dies while this lives.
struct NamedTemp {
    file: File,
    path: PathBuf,
    guard: Guardian,
}

impl NamedTemp {
    fn create(dir: &Path, name: &OsStr, mode: u32) -> io::Result<NamedTemp> {
        let (file, path) = with_temp_name(name, |temp| {
            let path = dir.join(temp);
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(libc::O_NOCTTY)
                .open(&path)?;
            Ok((file, path))
        })?;
        // Guarded once created: never a cleanup for a name someone else holds.
        match remove_on_exit(&path) {
            Ok(guard) => Ok(NamedTemp { file, path, guard }),
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                Err(e)
            }
        }
    }

    /// Removes the file (an error, or the prepare-time probe).
    fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
        drop(self.guard);
    }

    /// The file was renamed into place: nothing to remove.
    fn forget(self) {
        drop(self.guard);
    }
}

/// Tries `attempt` with fresh temporary names for `name` until one is free.
fn with_temp_name<T>(name: &OsStr, mut attempt: impl FnMut(&OsStr) -> io::Result<T>) -> io::Result<T> {
    let mut short = false;
    for tries in 0..32u32 {
        let temp = temp_name(name, short, tries);
        match attempt(&temp) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) && !short => short = true,
            result => return result,
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary file name after 32 tries",
    ))
}

/// The longest file name Linux file systems take (NAME_MAX).
const NAME_MAX: usize = 255;

/// `.NAME.XXXXXX.tmp`, or `.XXXXXX.tmp` when `short` or when the long one would not fit.
fn temp_name(name: &OsStr, short: bool, tries: u32) -> OsString {
    use std::hash::{BuildHasher, RandomState};
    // RandomState's keys are random per process (seeded by the OS) and change with every `new`.
    let mut x = RandomState::new().hash_one((std::process::id(), tries));
    let mut suffix = [0u8; 6];
    for c in &mut suffix {
        *c = b"abcdefghijklmnopqrstuvwxyz0123456789"[(x % 36) as usize];
        x /= 36;
    }
    let long_len = name.len() + ".".len() * 2 + suffix.len() + ".tmp".len();
    let mut out = vec![b'.'];
    if !short && long_len <= NAME_MAX {
        out.extend_from_slice(name.as_bytes());
        out.push(b'.');
    }
    out.extend_from_slice(&suffix);
    out.extend_from_slice(b".tmp");
    OsString::from_vec(out)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod unnamed {
    //! `O_TMPFILE` and `linkat`, through nix's safe wrappers.

    use super::{remove_on_exit, with_temp_name};
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
        let temp = with_temp_name(name, |temp| {
            let path = dir.join(temp);
            link(file, &path).map(|()| path)
        })?;
        let renamed = remove_on_exit(&temp).and_then(|guard| {
            let renamed = std::fs::rename(&temp, &target);
            drop(guard);
            renamed
        });
        if renamed.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        renamed
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
        let t = temp_name(OsStr::new("r.prom"), false, 0);
        let t = t.to_str().unwrap();
        assert!(t.starts_with(".r.prom.") && t.ends_with(".tmp") && t.len() == 18, "{t}");
        assert_ne!(temp_name(OsStr::new("r.prom"), false, 1).to_str().unwrap(), t);
        let long = "x".repeat(255);
        let t = temp_name(OsStr::new(&long), false, 0);
        assert_eq!(t.len(), 11, "{t:?}");
        assert_eq!(temp_name(OsStr::new("r.prom"), true, 0).len(), 11);
        // The longest name that keeps the readable form.
        assert_eq!(temp_name(OsStr::new(&"x".repeat(243)), false, 0).len(), 255);
    }

    #[test]
    fn both_ways_create_and_replace_keeping_special_bits() {
        if crate::output_file::alone::in_child(
            "output_file::replace::tests::both_ways_create_and_replace_keeping_special_bits",
        ) {
            return;
        }
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
        if crate::output_file::alone::in_child("output_file::replace::tests::the_unnamed_file_has_no_name_until_commit")
        {
            return;
        }
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
        if crate::output_file::alone::in_child("output_file::replace::tests::a_255_byte_name_is_written_both_ways") {
            return;
        }
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
        let named = NamedTemp::create(Path::new(&dir), OsStr::new("p.svg"), 0o600).unwrap();
        assert!(named.path.exists());
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
