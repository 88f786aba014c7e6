//! How a regular file is replaced: at commit, when the content is ready, a
//! temporary file in the target's directory takes it, is synced, then takes
//! the target's name in one step (`rename`), so a reader sees the old file
//! or the new one, never part of one. Nothing exists before commit (the
//! directory is only checked, when the output is prepared), so a death
//! while measuring leaves nothing; the temporary file is removed on an
//! error, and by a [`crate::guardian`] if the process dies before the
//! rename (any death, SIGKILL included).
//!
//! A temporary name is `.NAME.XXXXXX.tmp` (the `tempfile` crate draws it),
//! or the short `.XXXXXX.tmp` when the file system refuses the long one (a
//! name near 255 bytes). The replacement gets the old file's owner and
//! group (when allowed), then its whole mode, setuid, setgid and sticky bits
//! included, after the content is written (a write clears setuid and
//! setgid). A new file gets 0666 less the umask. The replacement is a new
//! inode: other hard links to the old file keep the old content.

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

/// A regular file to replace (or create), prepared before measuring.
pub struct Replacement {
    dir: PathBuf,
    name: OsString,
    keep: Option<Keep>,
}

impl Replacement {
    /// Prepares to write `name` in `dir` (both resolved), keeping `keep`.
    /// Fails now, not after measuring, where this user may not make a file
    /// in the directory (its permissions, a read-only file system).
    pub fn prepare(dir: PathBuf, name: OsString, keep: Option<Keep>) -> io::Result<Replacement> {
        use nix::unistd::{faccessat, AccessFlags};
        let flags = AccessFlags::W_OK | AccessFlags::X_OK;
        faccessat(nix::fcntl::AT_FDCWD, &dir, flags, nix::fcntl::AtFlags::AT_EACCESS)?;
        Ok(Replacement { dir, name, keep })
    }

    /// Writes `bytes`, syncs them and puts them in place. On error the
    /// target is as it was and no temporary file is left.
    pub fn commit(self, bytes: &[u8]) -> io::Result<()> {
        // Private until the old file's mode is set after writing.
        let mode = if self.keep.is_some() { 0o600 } else { 0o666 };
        // On an error the temporary file is removed as it is dropped.
        let mut temp = temp_in(&self.dir, &self.name, |path| create_new(path, mode))?;
        fill(&mut temp.as_file_mut().0, bytes, self.keep)?;
        temp.persist(self.dir.join(&self.name)).map_err(|e| e.error)?;
        // The rename is durable once the directory is synced; best effort.
        let _ = File::open(&self.dir).and_then(|d| d.sync_all());
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

/// A temporary name for `name` in `dir` that `make` gives a file, guarded
/// by a [`Guardian`] that removes it if the process dies (any signal, a
/// second Ctrl-C's forced exit, SIGKILL, a crash) before the name is renamed
/// away; on every other path the [`NamedTempFile`]'s drop removes it. The
/// name is `.NAME.XXXXXX.tmp`, or `.XXXXXX.tmp` where the file system
/// refuses that one (a NAME near 255 bytes): tempfile's [`Builder`] draws
/// the random part and tries again where a name is taken.
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

    fn prepare(dir: &Path, name: &str) -> Replacement {
        let keep = std::fs::metadata(dir.join(name)).ok().map(|m| Keep::of(&m));
        Replacement::prepare(dir.to_path_buf(), name.into(), keep).unwrap()
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
    fn creates_and_replaces_keeping_special_bits_and_nothing_named_before_commit() {
        let dir = tempfile::tempdir().unwrap();
        let r = prepare(dir.path(), "new.prom");
        assert!(entries(dir.path()).is_empty(), "nothing named before commit");
        r.commit(b"one").unwrap();
        assert_eq!(entries(dir.path()), ["new.prom"]);
        let file = dir.path().join("new.prom");
        assert_eq!(std::fs::read(&file).unwrap(), b"one");
        for mode in [0o2640, 0o1604, 0o4755, 0o444] {
            std::fs::set_permissions(&file, Permissions::from_mode(mode)).unwrap();
            let before = std::fs::metadata(&file).unwrap().ino();
            let r = prepare(dir.path(), "new.prom");
            assert_eq!(entries(dir.path()), ["new.prom"], "nothing named before commit");
            r.commit(b"two").unwrap();
            let m = std::fs::metadata(&file).unwrap();
            assert_eq!(m.mode() & 0o7777, mode);
            assert_ne!(m.ino(), before, "a new inode");
            assert_eq!(std::fs::read(&file).unwrap(), b"two");
            assert_eq!(entries(dir.path()), ["new.prom"]);
        }
    }

    #[test]
    fn a_255_byte_name_is_written_and_replaced() {
        let name = "n".repeat(250) + ".prom";
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path(), &name).commit(b"a").unwrap();
        prepare(dir.path(), &name).commit(b"b").unwrap();
        assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"b");
        assert_eq!(entries(dir.path()), vec![name.clone()]);
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
        let e = Replacement::prepare(ro.clone(), "x".into(), None).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
    }
}
