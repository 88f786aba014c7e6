//! Every file `clockscope` writes (`check --plot`, `--output`) goes through
//! [`OutputFile`]: opened after the arguments are validated and before
//! measuring, so a bad path fails at once, and replaced atomically or not at
//! all.
//!
//! - A regular file or a new path: replaced as [`replace`] describes (a
//!   temporary file in the same directory, made, synced and renamed over the
//!   target only when [`OutputFile::commit`] is called after a successful run). An error, an interrupted run or any
//!   death of the process leaves the previous file as it was and no
//!   temporary file. The replacement keeps the previous file's mode, special
//!   bits included (and owner, when allowed); it is a new inode, so other
//!   hard links to the old file keep the old content. A symbolic link to a
//!   regular file replaces the file it points to, not the link.
//! - An existing path that is not a regular file (a character device, a FIFO,
//!   a symbolic link to one, or an alias of an open descriptor such as
//!   `/dev/stdout`): written through as a stream, opened without truncation or
//!   creation, never synced, never removed.
//! - Two outputs of one run naming the same file (the same path, `./X` and
//!   `X`, a symbolic or hard link: the same device and inode, or the same
//!   directory and name for a file not there yet) are refused before anything
//!   is opened ([`refuse_same_file`]).
//!
//! Nothing is ever unlinked that clockscope did not create.

mod identity;
pub mod replace;

pub use identity::{refuse_input_as_output, refuse_same_file, Destination, Input};

use crate::exit;
use anyhow::anyhow;
use clockscope_system::escape::escape_untrusted;
use replace::{Keep, Replacement};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A file output, prepared before measuring; see the module documentation.
pub struct OutputFile {
    /// `--plot <path>`, escaped: the start of every error message.
    what: String,
    target: Target,
}

enum Target {
    /// Written to a temporary file, renamed over the path on commit.
    Replace(Replacement),
    /// An existing non-regular file, written through.
    Stream(File),
}

/// How an existing path is written.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// Nothing there yet: a new regular file.
    New,
    /// A regular file (itself or behind symbolic links) at this resolved path.
    Regular(PathBuf),
    /// Written through; `append` for a regular file reached through a
    /// descriptor alias (`/dev/stdout` redirected to a file).
    Stream { append: bool },
}

/// Symbolic links followed at most (the kernel's own limit is 40).
const MAX_LINK_HOPS: usize = 40;

/// Whether `path`, or a symbolic link on the way from it, is an open
/// descriptor's alias (`/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N`): such a
/// path is the descriptor, which must be written through, never replaced.
fn is_descriptor_alias(path: &Path) -> bool {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINK_HOPS {
        if p.starts_with("/proc") || p.starts_with("/dev/fd") {
            return true;
        }
        match std::fs::read_link(&p) {
            Ok(next) if next.is_absolute() => p = next,
            Ok(next) => p = p.parent().unwrap_or(Path::new("/")).join(next),
            Err(_) => return false,
        }
    }
    false
}

fn classify(path: &Path) -> io::Result<Kind> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return match std::fs::symlink_metadata(path) {
                Ok(_) => Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "a symbolic link to a missing file",
                )),
                Err(_) => Ok(Kind::New),
            };
        }
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_dir() {
        return Err(io::Error::other("is a directory"));
    }
    if ft.is_socket() {
        return Err(io::Error::other("is a socket, not a file"));
    }
    if !ft.is_file() {
        return Ok(Kind::Stream { append: false });
    }
    if is_descriptor_alias(path) {
        return Ok(Kind::Stream { append: true });
    }
    Ok(Kind::Regular(std::fs::canonicalize(path)?))
}

/// Opens an existing non-regular file (or a descriptor alias) for writing,
/// without creating or truncating it.
fn open_stream(path: &Path, append: bool) -> io::Result<File> {
    let is_fifo = std::fs::metadata(path)?.file_type().is_fifo();
    let mut opts = OpenOptions::new();
    opts.write(true).append(append).custom_flags(libc::O_NOCTTY);
    if !is_fifo {
        return opts.open(path);
    }
    // A FIFO's open blocks until a reader comes: try without blocking first
    // (ENXIO: nobody reads), then open the descriptor kept, blocking, while
    // the first one holds the FIFO open (so the reader never sees an end of
    // file in between).
    let probe = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => io::Error::other("a FIFO that nobody reads (start its reader first)"),
            _ => e,
        })?;
    let file = opts.open(path);
    drop(probe);
    file
}

/// The directory (resolved) and the name in it of a regular file or a new path.
fn dir_and_name(path: &Path) -> io::Result<(PathBuf, std::ffi::OsString)> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let name = match path.file_name() {
        // `new/` or `new/.` names a directory; `x/..` has no name.
        Some(n) if !bytes.ends_with(b"/") && !bytes.ends_with(b"/.") => n.to_os_string(),
        _ => return Err(io::Error::other("not a file name (it names a directory)")),
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Ok((std::fs::canonicalize(dir)?, name))
}

impl OutputFile {
    /// Prepares the output `path` of option `option` (`"--plot"`): call it
    /// after every argument is validated and before measuring. Fails (one
    /// line) on a directory, a missing or unwritable directory, a socket, a
    /// FIFO nobody reads.
    pub fn prepare(option: &str, path: &Path) -> anyhow::Result<OutputFile> {
        exit::install_interrupt_handler();
        let what = format!("{option} {}", escape_untrusted(&path.to_string_lossy()));
        let fail = |e: io::Error| anyhow!("{what}: {e}");
        let target = match classify(path).map_err(fail)? {
            Kind::Stream { append } => Target::Stream(open_stream(path, append).map_err(fail)?),
            Kind::New => {
                let (dir, name) = dir_and_name(path).map_err(fail)?;
                Target::Replace(Replacement::prepare(dir, name, None).map_err(fail)?)
            }
            Kind::Regular(resolved) => {
                // Refuse what we may not write, as opening it would (root may write anything).
                let file = OpenOptions::new().write(true).open(&resolved).map_err(fail)?;
                let keep = Keep::of(&file.metadata().map_err(fail)?);
                let (dir, name) = dir_and_name(&resolved).map_err(fail)?;
                Target::Replace(Replacement::prepare(dir, name, Some(keep)).map_err(fail)?)
            }
        };
        Ok(OutputFile { what, target })
    }

    /// Writes `bytes` and, for a regular file, syncs them and puts the
    /// temporary file in the target's place. On error the target is
    /// unchanged (or, for a stream, has what was written) and no temporary
    /// file is left.
    pub fn commit(self, bytes: &[u8]) -> anyhow::Result<()> {
        let what = self.what;
        let fail = |e: io::Error| anyhow!("{what}: {e}");
        match self.target {
            Target::Stream(mut f) => f.write_all(bytes).and_then(|_| f.flush()).map_err(fail),
            Target::Replace(replacement) => replacement.commit(bytes).map_err(fail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn kinds_of_paths() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.svg");
        assert_eq!(classify(&new).unwrap(), Kind::New);
        let file = dir.path().join("old.svg");
        std::fs::write(&file, "keep").unwrap();
        let real = std::fs::canonicalize(&file).unwrap();
        assert_eq!(classify(&file).unwrap(), Kind::Regular(real.clone()));
        let link = dir.path().join("link.svg");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(classify(&link).unwrap(), Kind::Regular(real));
        let dangling = dir.path().join("dangling.svg");
        std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
        assert!(classify(&dangling).unwrap_err().to_string().contains("missing file"));
        assert!(classify(dir.path()).unwrap_err().to_string().contains("is a directory"));
        assert_eq!(
            classify(Path::new("/dev/null")).unwrap(),
            Kind::Stream { append: false }
        );
        assert!(is_descriptor_alias(Path::new("/dev/stdout")));
        assert!(is_descriptor_alias(Path::new("/proc/self/fd/1")));
        assert!(!is_descriptor_alias(&file));
    }

    #[test]
    fn replaced_atomically_with_the_old_mode() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plot.svg");
        std::fs::write(&file, "keep").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let out = OutputFile::prepare("--plot", &file).unwrap();
        assert!(matches!(out.target, Target::Replace(_)));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "keep",
            "untouched until commit"
        );
        out.commit(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o7777, 0o640);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn dropped_without_commit_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plot.svg");
        std::fs::write(&file, "keep").unwrap();
        let out = OutputFile::prepare("--plot", &file).unwrap();
        // Named only while committing: nothing to see meanwhile.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(out);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_fifo_nobody_reads_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .map(|s| s.success());
        if ok.ok() != Some(true) {
            println!("SKIPPED: mkfifo not available");
            return;
        }
        let e = OutputFile::prepare("--plot", &fifo).err().unwrap().to_string();
        assert!(e.contains("a FIFO that nobody reads"), "{e}");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }
}
