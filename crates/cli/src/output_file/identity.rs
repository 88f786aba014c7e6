//! Whether two outputs of one run are one file: the second write would
//! replace (or mix into) the first, so such a run is refused before anything
//! is opened or measured.
//!
//! An existing file is known by its device and inode (after symbolic links),
//! so `X`, `./X`, a symbolic link to `X` and a hard link of `X` are one file;
//! a file not there yet by its resolved directory and name. stdout is known
//! by what its descriptor is (`/dev/stdout` redirected to a file is that
//! file). A character device (`/dev/null`, a terminal) is never "the same
//! file": two streams written to one replace nothing.

use clockscope_system::escape::escape_untrusted;
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Where an output goes.
#[derive(Clone, Copy, Debug)]
pub enum Destination<'a> {
    /// A path given to an option.
    File(&'a Path),
    /// The process's stdout (no `-o`, or `-o -`).
    Stdout,
}

#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode {
        dev: u64,
        ino: u64,
    },
    /// A file not there yet: its resolved directory joined with its name.
    New(PathBuf),
}

fn of_metadata(m: &Metadata) -> Option<Identity> {
    (!m.file_type().is_char_device()).then(|| Identity::Inode {
        dev: m.dev(),
        ino: m.ino(),
    })
}

/// What `d` is; `None` when it cannot collide (a character device) or
/// cannot be known now (preparing it will fail with the reason).
fn identity(d: Destination) -> Option<Identity> {
    match d {
        Destination::Stdout => {
            let fd = io::stdout().as_fd().try_clone_to_owned().ok()?;
            of_metadata(&File::from(fd).metadata().ok()?)
        }
        Destination::File(path) => match std::fs::metadata(path) {
            Ok(m) => of_metadata(&m),
            // Not a symbolic link to a missing file (refused when prepared): a new file.
            Err(e) if e.kind() == io::ErrorKind::NotFound && std::fs::symlink_metadata(path).is_err() => {
                let (dir, name) = super::dir_and_name(path).ok()?;
                Some(Identity::New(dir.join(name)))
            }
            Err(_) => None,
        },
    }
}

fn describe(label: &str, d: Destination) -> String {
    match d {
        Destination::File(p) => format!("{label} {}", escape_untrusted(&p.to_string_lossy())),
        Destination::Stdout => format!("{label} (stdout)"),
    }
}

/// Refuses, in one line naming both, two outputs that are one file. Each is
/// given as how the user named it (`--plot`, `--output`, `the report`) and
/// where it goes.
pub fn refuse_same_file(a: (&str, Destination), b: (&str, Destination)) -> anyhow::Result<()> {
    match (identity(a.1), identity(b.1)) {
        (Some(x), Some(y)) if x == y => anyhow::bail!(
            "{} and {} are the same file: give each output its own file",
            describe(a.0, a.1),
            describe(b.0, b.1)
        ),
        _ => Ok(()),
    }
}

/// Something a command reads.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// A file given to an option or as an argument (a log, a CPUID dump).
    File(&'a Path),
    /// The process's stdin (`dmesg -`).
    Stdin,
    /// A tree read in place of `/` (`--root DIR`): every file under it is an input.
    Tree(&'a Path),
}

fn describe_input(label: &str, i: Input) -> String {
    match i {
        Input::File(p) | Input::Tree(p) => format!("{label} {}", escape_untrusted(&p.to_string_lossy())),
        Input::Stdin => format!("{label} (stdin)"),
    }
}

/// What an input file is: an existing file by device and inode (after
/// symbolic links, so links and hard links are one file); stdin by what
/// its descriptor is. A missing file or a character device cannot be replaced.
fn input_identity(i: Input) -> Option<Identity> {
    match i {
        Input::File(path) => of_metadata(&std::fs::metadata(path).ok()?),
        Input::Stdin => {
            let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
            of_metadata(&File::from(fd).metadata().ok()?)
        }
        Input::Tree(_) => None,
    }
}

/// Whether the existing output `d` lies inside the tree `root` (both resolved).
fn inside_tree(root: &Path, d: Destination) -> bool {
    let Destination::File(path) = d else {
        return false;
    };
    // Only an existing file can be replaced; a character device never is.
    match std::fs::metadata(path) {
        Ok(m) if !m.file_type().is_char_device() && !m.is_dir() => {}
        _ => return false,
    }
    match (std::fs::canonicalize(root), std::fs::canonicalize(path)) {
        (Ok(root), Ok(file)) => file.starts_with(root),
        _ => false,
    }
}

/// Refuses, in one line naming both, an output that is one of the run's
/// inputs: the report would replace (or be mixed into) what it was read
/// from. Compared by device and inode where the file exists, so `X`,
/// `./X`, a symbolic link and a hard link are one file; an output inside a
/// `--root` tree (an existing file there) counts as an input too.
pub fn refuse_input_as_output(inputs: &[(&str, Input)], outputs: &[(&str, Destination)]) -> anyhow::Result<()> {
    for &(in_label, input) in inputs {
        let id = input_identity(input);
        for &(out_label, output) in outputs {
            let clash = match input {
                Input::Tree(root) => inside_tree(root, output),
                _ => id.is_some() && id == identity(output),
            };
            if clash {
                let how = if matches!(input, Input::Tree(_)) {
                    "lies inside"
                } else {
                    "is the same file as"
                };
                anyhow::bail!(
                    "{} {how} {}, an input of this run: the report would replace what it reads; write it elsewhere",
                    describe(out_label, output),
                    describe_input(in_label, input)
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &Path, b: &Path) -> bool {
        refuse_same_file(("--output", Destination::File(a)), ("--plot", Destination::File(b))).is_err()
    }

    #[test]
    fn one_file_by_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let x = d.join("x.svg");
        // Not there yet: the same directory and name.
        assert!(same(&x, &x));
        assert!(same(&x, &d.join(".").join("x.svg")));
        assert!(!same(&x, &d.join("y.svg")));
        std::fs::create_dir(d.join("sub")).unwrap();
        assert!(same(&x, &d.join("sub/../x.svg")));
        std::os::unix::fs::symlink(d, d.join("dirlink")).unwrap();
        assert!(same(&x, &d.join("dirlink/x.svg")), "through a linked directory");
        // There: device and inode.
        std::fs::write(&x, "old").unwrap();
        assert!(same(&x, &x));
        std::os::unix::fs::symlink(&x, d.join("sym.svg")).unwrap();
        assert!(same(&d.join("sym.svg"), &x));
        std::fs::hard_link(&x, d.join("hard.svg")).unwrap();
        assert!(same(&x, &d.join("hard.svg")));
        std::fs::write(d.join("other.svg"), "old").unwrap();
        assert!(!same(&x, &d.join("other.svg")));
        // Character devices take two streams.
        assert!(!same(Path::new("/dev/null"), Path::new("/dev/null")));
        let e = refuse_same_file(("--output", Destination::File(&x)), ("--plot", Destination::File(&x)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--output ") && e.contains("--plot ") && !e.contains('\n'),
            "{e}"
        );
    }
}
