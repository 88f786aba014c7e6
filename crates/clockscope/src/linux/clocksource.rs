//! Switching the kernel's clocksource safely, for `clockscope sweep`: the
//! names the kernel offers (`available_clocksource`, any number, each once),
//! the one in use (`current_clocksource`), a switch to a name still
//! available that is read back to check it took effect, a guard that puts
//! the original back when it is dropped (success, error, or a panic
//! unwinding through it) but only over a clocksource it put in place itself
//! (someone else's later change is left alone, and an original no longer
//! available is never written), and [`SwitchLock`], one sweep at a time.
//!
//! Everything goes through [`ClocksourceControl`]: [`SysfsClocksource`] is
//! the real files under a sysfs root (`/sys` in production, a temporary
//! directory in tests); tests wrap it to make a write fail or read back a
//! different name. A name is checked ([`validate_name`]) before it is ever
//! written, so no odd byte reaches the kernel.

use crate::escape::escape_untrusted;
use crate::input::{self, KERNEL_VALUE};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The clocksource directory under a sysfs root (`/sys`).
pub const CLOCKSOURCE0: &str = "devices/system/clocksource/clocksource0";

/// The kernel's longest clocksource name (`CS_NAME_LEN` is 32 with the NUL).
pub const MAX_NAME_LEN: usize = 31;

/// Why a clocksource could not be listed, switched or restored. Each
/// message is one line; untrusted text in it (names, paths) is escaped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SwitchError {
    /// A name with characters no kernel clocksource has (or empty, or too long).
    BadName(String),
    /// A valid name the kernel does not offer.
    NotAvailable { name: String, available: Vec<String> },
    /// `current_clocksource` or `available_clocksource` could not be read.
    Read(String),
    /// The write was refused (the file is missing, read-only, not a regular file...).
    Write { name: String, reason: String },
    /// The write was accepted but the kernel reads back another clocksource.
    ReadBack { wanted: String, got: String },
    /// The one-sweep-at-a-time lock is held or cannot be taken (the whole message).
    Lock(String),
}

impl fmt::Display for SwitchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwitchError::BadName(n) => write!(
                f,
                "'{}' is not a clocksource name (letters, digits, '_', '-' and '.', at most {MAX_NAME_LEN})",
                escape_untrusted(n)
            ),
            SwitchError::NotAvailable { name, available } => {
                // A list of any length: the first few, then how many more.
                const SHOWN: usize = 16;
                let mut list = available.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
                if available.len() > SHOWN {
                    list.push_str(&format!(" and {} more", available.len() - SHOWN));
                }
                write!(
                    f,
                    "clocksource '{}' is not available here (available: {})",
                    escape_untrusted(name),
                    escape_untrusted(&list)
                )
            }
            SwitchError::Read(r) | SwitchError::Lock(r) => write!(f, "{r}"),
            SwitchError::Write { name, reason } => write!(
                f,
                "switching to clocksource '{}' failed: {}",
                escape_untrusted(name),
                escape_untrusted(reason)
            ),
            SwitchError::ReadBack { wanted, got } => write!(
                f,
                "wrote clocksource '{}' but the kernel reads back '{}': the switch did not take effect",
                escape_untrusted(wanted),
                escape_untrusted(got)
            ),
        }
    }
}

impl std::error::Error for SwitchError {}

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
    let mut names: Vec<String> = Vec::new();
    if only.is_empty() {
        for n in available {
            if seen.insert(n.as_str()) {
                names.push(n.clone());
            }
        }
        return Ok(names);
    }
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

/// What a restore found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Restored {
    /// The original was in use already: nothing written.
    InPlace,
    /// The clocksource the sweep had switched to was replaced by the original (read back).
    Restored,
    /// Someone else (a person, a script, the kernel's clocksource watchdog)
    /// changed the clocksource after the sweep's last switch: their choice,
    /// `current`, is left in place and nothing is written.
    LeftAlone { current: String },
}

/// What a guard and its [`Restorer`]s share.
struct GuardState {
    control: Arc<dyn ClocksourceControl>,
    original: String,
    /// The clocksource the sweep itself last put in place (confirmed by a read-back).
    ours: Mutex<Option<String>>,
}

/// Holds the clocksource that was in use before a sweep and puts it back
/// when dropped (also while a panic unwinds), but only over a clocksource
/// the sweep itself put in place: a change made by someone else since the
/// last switch is left alone. [`ClocksourceGuard::finish`] restores
/// explicitly and returns the outcome; a drop that cannot restore prints the
/// exact command to do it by hand on stderr.
pub struct ClocksourceGuard {
    state: Arc<GuardState>,
    done: bool,
}

/// A handle that restores like the guard (from a forced-exit hook on
/// another thread); the guard stays the owner.
#[derive(Clone)]
pub struct Restorer {
    state: Arc<GuardState>,
}

impl ClocksourceGuard {
    /// Remembers the clocksource in use now.
    pub fn new(control: Arc<dyn ClocksourceControl>) -> Result<Self, SwitchError> {
        let original = control.current()?;
        Ok(ClocksourceGuard {
            state: Arc::new(GuardState {
                control,
                original,
                ours: Mutex::new(None),
            }),
            done: false,
        })
    }

    /// The clocksource in use when the guard was made.
    pub fn original(&self) -> &str {
        &self.state.original
    }

    /// The control the guard restores through.
    pub fn control(&self) -> &Arc<dyn ClocksourceControl> {
        &self.state.control
    }

    /// A handle that restores as the guard does.
    pub fn restorer(&self) -> Restorer {
        Restorer {
            state: self.state.clone(),
        }
    }

    /// Switches to `name` (if still available) and checks the kernel took it.
    pub fn switch_to(&self, name: &str) -> Result<(), SwitchError> {
        let result = switch_to(&*self.state.control, name);
        if result.is_ok() {
            *self.state.lock_ours() = Some(name.to_string());
        }
        result
    }

    /// The command that restores the original by hand.
    pub fn restore_command(&self) -> String {
        self.state.control.manual_command(&self.state.original)
    }

    /// Restores the original now (see [`Restored`]); the guard then does nothing on drop.
    pub fn finish(mut self) -> Result<Restored, RestoreError> {
        self.done = true;
        self.state.restore()
    }
}

impl Restorer {
    /// Restores the original if the clocksource in use is the one the sweep put there.
    pub fn restore(&self) -> Result<Restored, RestoreError> {
        self.state.restore()
    }
}

impl GuardState {
    fn lock_ours(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.ours.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn restore(&self) -> Result<Restored, RestoreError> {
        let fail = |error| RestoreError {
            original: self.original.clone(),
            error,
            command: self.control.manual_command(&self.original),
        };
        let current = self.control.current().map_err(fail)?;
        if current == self.original {
            return Ok(Restored::InPlace);
        }
        if self.lock_ours().as_deref() != Some(current.as_str()) {
            return Ok(Restored::LeftAlone { current });
        }
        switch_to(&*self.control, &self.original).map_err(fail)?;
        *self.lock_ours() = None;
        Ok(Restored::Restored)
    }
}

impl Drop for ClocksourceGuard {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            match self.state.restore() {
                Err(e) => eprintln!("clockscope: error: {e}"),
                Ok(Restored::LeftAlone { current }) => eprintln!(
                    "clockscope: clocksource '{}' was put in place by someone else: left alone; the original was '{}'",
                    escape_untrusted(&current),
                    escape_untrusted(&self.state.original)
                ),
                Ok(_) => {}
            }
        }
    }
}

/// Where the one-sweep-at-a-time lock of the live `/sys` lives (else `/run`).
pub const LIVE_LOCK_DIR: &str = "/run/lock";
/// The lock file's name there; beside a fake root it is `.<root name>.` + this.
pub const LOCK_NAME: &str = "clockscope-sweep.lock";

/// An exclusive `flock` held while a sweep switches clocksources, so that
/// one sweep at a time runs per machine (a second one, started while the
/// first had switched, would take the switched clocksource for the original
/// and "restore" it). For the live `/sys` it is
/// `/run/lock/clockscope-sweep.lock`; for a `--sysfs-root DIR`,
/// `.DIR.clockscope-sweep.lock` beside DIR (its canonical path, so two names
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
        let live = || {
            let dir = Path::new(LIVE_LOCK_DIR);
            let dir = if dir.is_dir() { dir } else { Path::new("/run") };
            dir.join(LOCK_NAME)
        };
        if root == Path::new("/sys") {
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

/// The original clocksource could not be put back: the message ends with
/// the command that does it by hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError {
    pub original: String,
    pub error: SwitchError,
    pub command: String,
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "could not restore the clocksource '{}' ({}); restore it with: {}",
            escape_untrusted(&self.original),
            self.error,
            escape_untrusted(&self.command)
        )
    }
}

impl std::error::Error for RestoreError {}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use super::*;
    use crate::linux::testing::{FakeRoot, LoggedClocksource};

    fn fake(current: &str, available: &str) -> (FakeRoot, Arc<SysfsClocksource>) {
        let root = FakeRoot::new();
        root.write(&format!("{CLOCKSOURCE0}/current_clocksource"), &format!("{current}\n"))
            .write(
                &format!("{CLOCKSOURCE0}/available_clocksource"),
                &format!("{available} \n"),
            );
        let c = Arc::new(SysfsClocksource::new(root.path()));
        (root, c)
    }

    #[test]
    fn names() {
        for ok in [
            "tsc",
            "kvm-clock",
            "acpi_pm",
            "hyperv_clocksource_tsc_page",
            "arch_sys_counter",
            "a.b",
        ] {
            assert_eq!(validate_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "-tsc",
            "tsc\n",
            "ts c",
            "tsc;reboot",
            "../x",
            "t\u{e9}",
            &"x".repeat(32),
        ] {
            let e = validate_name(bad).unwrap_err();
            assert!(matches!(e, SwitchError::BadName(_)), "{bad:?}");
            assert!(!e.to_string().chars().any(char::is_control), "{e}");
        }
    }

    #[test]
    fn plan_validates_only_names() {
        let avail: Vec<String> = ["tsc", "kvm-clock", "acpi_pm"].map(String::from).to_vec();
        assert_eq!(plan(&avail, &[]).unwrap(), avail);
        let only = ["acpi_pm", "tsc", "acpi_pm"].map(String::from).to_vec();
        assert_eq!(plan(&avail, &only).unwrap(), ["acpi_pm", "tsc"]);
        assert!(matches!(
            plan(&avail, &["hpet".into()]),
            Err(SwitchError::NotAvailable { .. })
        ));
        assert!(matches!(plan(&avail, &["tsc x".into()]), Err(SwitchError::BadName(_))));
    }

    #[test]
    fn switch_reads_back_and_guard_restores_on_drop() {
        let (root, c) = fake("tsc", "tsc kvm-clock acpi_pm");
        assert_eq!(c.available().unwrap(), ["tsc", "kvm-clock", "acpi_pm"]);
        {
            let g = ClocksourceGuard::new(c.clone()).unwrap();
            assert_eq!(g.original(), "tsc");
            g.switch_to("acpi_pm").unwrap();
            assert_eq!(c.current().unwrap(), "acpi_pm");
            assert_eq!(
                g.restore_command(),
                format!(
                    "echo tsc > {}",
                    root.path().join(CLOCKSOURCE0).join("current_clocksource").display()
                )
            );
        }
        assert_eq!(c.current().unwrap(), "tsc");
    }

    #[test]
    fn guard_restores_while_a_panic_unwinds() {
        let (_root, c) = fake("kvm-clock", "tsc kvm-clock");
        let c2 = c.clone();
        let r = std::panic::catch_unwind(move || {
            let g = ClocksourceGuard::new(c2.clone()).unwrap();
            g.switch_to("tsc").unwrap();
            assert_eq!(c2.current().unwrap(), "tsc");
            panic!("measurement failed");
        });
        assert!(r.is_err());
        assert_eq!(c.current().unwrap(), "kvm-clock");
    }

    #[test]
    fn refused_and_failed_writes_are_errors_and_the_original_comes_back() {
        let (root, _) = fake("tsc", "tsc hpet acpi_pm");
        let picky = Arc::new(
            LoggedClocksource::new(root.path())
                .ignoring("hpet")
                .failing("acpi_pm", "Invalid argument (os error 22)"),
        );
        let g = ClocksourceGuard::new(picky.clone()).unwrap();
        assert_eq!(
            g.switch_to("hpet").unwrap_err(),
            SwitchError::ReadBack {
                wanted: "hpet".into(),
                got: "tsc".into()
            }
        );
        assert!(matches!(g.switch_to("acpi_pm"), Err(SwitchError::Write { .. })));
        g.finish().unwrap();
        assert_eq!(picky.current().unwrap(), "tsc");
        // Nothing was in need of restoring: no write of the original.
        assert_eq!(picky.writes(), ["hpet", "acpi_pm"]);
    }

    #[test]
    fn a_file_that_disappears_gives_the_manual_command() {
        let (root, c) = fake("tsc", "tsc hpet");
        let g = ClocksourceGuard::new(c.clone()).unwrap();
        g.switch_to("hpet").unwrap();
        std::fs::remove_file(c.current_path()).unwrap();
        let e = g.finish().unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("could not restore the clocksource 'tsc'")
                && msg.ends_with(&format!(
                    "restore it with: echo tsc > {}",
                    root.path().join(CLOCKSOURCE0).join("current_clocksource").display()
                )),
            "{msg}"
        );
        assert!(!c.current_path().exists(), "a write never creates the file");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn odd_files_are_refused() {
        let (_root, c) = fake("tsc two", "tsc");
        assert!(matches!(c.current(), Err(SwitchError::Read(_))));
        let (_root, c) = fake("tsc", "tsc bad\x1bname");
        assert!(matches!(c.available(), Err(SwitchError::Read(_))));
        let (_root, c) = fake("tsc", "tsc");
        std::fs::remove_file(c.current_path()).unwrap();
        std::os::unix::fs::symlink(c.available_path(), c.current_path()).unwrap();
        assert!(matches!(c.write("tsc"), Err(SwitchError::Write { .. })));
        assert_eq!(std::fs::read_to_string(c.available_path()).unwrap(), "tsc \n");
        assert!(matches!(c.write("a b"), Err(SwitchError::BadName(_))));
    }

    #[test]
    fn any_number_of_names_each_once_and_plans_visit_each_once() {
        let many: Vec<String> = (0..500).map(|i| format!("cs{i}")).collect();
        let (_root, c) = fake("cs0", &format!("{} cs0 cs1 cs0", many.join(" ")));
        assert_eq!(c.available().unwrap(), many);
        let (_root, c) = fake("tsc", &["tsc"; 64].join(" "));
        assert_eq!(c.available().unwrap(), ["tsc"]);
        // A file at the read bound (64 KiB) of distinct names: accepted, in linear time.
        let full: Vec<String> = (0..10_000).map(|i| format!("c{i:04}")).collect();
        let (_root, c) = fake("c0000", &full.join(" "));
        assert_eq!(c.available().unwrap().len(), 10_000);
        let e = plan(&full, &["tsc".into()]).unwrap_err().to_string();
        assert!(e.ends_with("c0015 and 9984 more)"), "{e}");
        let dup: Vec<String> = ["tsc", "hpet", "tsc"].map(String::from).to_vec();
        assert_eq!(plan(&dup, &[]).unwrap(), ["tsc", "hpet"]);
        let (_root, c) = fake("tsc", " \n");
        assert!(c.available().unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn a_name_no_longer_available_is_never_written() {
        let (root, _) = fake("tsc", "tsc hpet");
        let picky = Arc::new(LoggedClocksource::new(root.path()));
        let g = ClocksourceGuard::new(picky.clone()).unwrap();
        g.switch_to("hpet").unwrap();
        std::fs::write(picky.sysfs().available_path(), "hpet acpi_pm\n").unwrap();
        assert!(matches!(g.switch_to("tsc"), Err(SwitchError::NotAvailable { .. })));
        let e = g.finish().unwrap_err();
        assert!(matches!(e.error, SwitchError::NotAvailable { .. }), "{e}");
        assert_eq!(picky.writes(), ["hpet"]);
    }

    #[test]
    fn the_guard_restores_only_its_own_switch() {
        let (_root, c) = fake("tsc", "tsc hpet acpi_pm");
        let g = ClocksourceGuard::new(c.clone()).unwrap();
        g.switch_to("hpet").unwrap();
        std::fs::write(c.current_path(), "acpi_pm\n").unwrap();
        assert_eq!(
            g.restorer().restore().unwrap(),
            Restored::LeftAlone {
                current: "acpi_pm".into()
            }
        );
        assert_eq!(c.current().unwrap(), "acpi_pm");
        // Its own switch again: restored; then nothing left to do.
        g.switch_to("hpet").unwrap();
        assert_eq!(g.restorer().restore().unwrap(), Restored::Restored);
        assert_eq!(g.finish().unwrap(), Restored::InPlace);
        assert_eq!(c.current().unwrap(), "tsc");
    }

    #[test]
    fn one_lock_per_tree_and_the_second_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("sys");
        std::fs::create_dir(&root).unwrap();
        let alias = dir.path().join("alias");
        std::os::unix::fs::symlink(&root, &alias).unwrap();
        let path = dir.path().canonicalize().unwrap().join(".sys.clockscope-sweep.lock");
        assert_eq!(SwitchLock::path_for(&alias).unwrap(), path);
        assert_eq!(
            SwitchLock::path_for(Path::new("/sys")).unwrap().file_name().unwrap(),
            LOCK_NAME
        );
        let held = SwitchLock::acquire(&root).unwrap();
        assert_eq!(held.path(), path);
        let e = SwitchLock::acquire(&alias).err().unwrap().to_string();
        assert!(
            e.starts_with(&format!("another clockscope sweep (pid {}, ", std::process::id())),
            "{e}"
        );
        drop(held);
        SwitchLock::acquire(&alias).unwrap();
        assert!(SwitchLock::acquire(&dir.path().join("missing")).is_err());
    }
}
