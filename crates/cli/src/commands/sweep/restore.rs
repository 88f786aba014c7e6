//! The one hand that puts the original clocksource back: a
//! [`crate::guardian`] child, forked before each switch, that restores it
//! when the sweep ends (asked to now, its answer reported: [`Restorer::finish`]),
//! when an error or a panic unwinds through the sweep (the [`Restorer`]
//! dropped), and when the process dies without either (any signal, a second
//! Ctrl-C's forced exit, SIGKILL, a crash). It writes the original only over
//! the clocksource that sweep put in place (someone else's later change is
//! left alone), only while the original is still available, reads it back,
//! and holds the sweep lock until it has exited, so no second sweep starts
//! over a half-restored state.

use crate::cleanup::{Answer, Cleanup};
use crate::guardian::Guardian;
use clockscope_system::escape::escape_untrusted;
use clockscope_system::linux::clocksource::{
    switch_to, validate_name, ClocksourceControl, RestoreError, Restored, SwitchError, SysfsClocksource,
};
use std::os::fd::RawFd;
use std::path::Path;
use std::sync::Arc;

/// Switches clocksources, each switch guarded, and restores the original
/// through the guardian of the last one (see the module).
pub struct Restorer {
    control: Arc<dyn ClocksourceControl>,
    /// The files the guardian writes: those `control` switches.
    files: SysfsClocksource,
    original: String,
    lock_fd: Option<RawFd>,
    /// The guardian of the clocksource the sweep last put in place (read back).
    guardian: Option<Guardian>,
}

impl Restorer {
    /// Remembers the clocksource in use now, in `files` (switched through
    /// `control`); each guardian holds `lock_fd` too.
    pub fn new(
        control: Arc<dyn ClocksourceControl>,
        files: SysfsClocksource,
        lock_fd: Option<RawFd>,
    ) -> Result<Restorer, SwitchError> {
        let original = control.current()?;
        Ok(Restorer {
            control,
            files,
            original,
            lock_fd,
            guardian: None,
        })
    }

    /// The clocksource in use when the sweep began.
    pub fn original(&self) -> &str {
        &self.original
    }

    /// The control the sweep switches through.
    pub fn control(&self) -> &Arc<dyn ClocksourceControl> {
        &self.control
    }

    /// Switches to `name` (if still available) and checks the kernel took
    /// it. Its guardian is started before the write, so no moment is
    /// unguarded; the previous one is dismissed only once `name` reads back.
    pub fn switch_to(&mut self, name: &str) -> anyhow::Result<()> {
        let next = self.guardian_of(name)?;
        match switch_to(&*self.control, name) {
            Ok(()) => {
                if let Some(previous) = self.guardian.replace(next) {
                    previous.dismiss();
                }
                Ok(())
            }
            Err(e) => {
                next.dismiss();
                Err(e.into())
            }
        }
    }

    fn guardian_of(&self, switched: &str) -> anyhow::Result<Guardian> {
        let (current, original) = (self.files.current_path(), &self.original);
        // Names are validated (letters, digits, '_', '-', '.'): safe to print.
        let cleanup =
            Cleanup::restore(&current, &self.files.available_path(), original, switched)?.with_note(&format!(
                "clockscope: the sweep died (a signal, SIGKILL or a crash) with clocksource {switched} in place: its \
                 guardian wrote {original} back"
            ));
        Guardian::spawn(cleanup, self.lock_fd.as_slice())
            .map(Guardian::cleanup_on_drop)
            .map_err(|e| anyhow::anyhow!("cannot start the guardian process that restores the clocksource: {e}"))
    }

    /// Has the guardian restore the original now and says what it found and
    /// did (see [`Restored`]); with no switch of the sweep's in place, nothing is written.
    pub fn finish(mut self) -> Result<Restored, RestoreError> {
        let original = self.original.clone();
        let fail = |error| RestoreError {
            command: self.control.manual_command(&original),
            original: original.clone(),
            error,
        };
        let Some(guardian) = self.guardian.take() else {
            let current = self.control.current().map_err(fail)?;
            return Ok(if current == original {
                Restored::InPlace
            } else {
                Restored::LeftAlone { current }
            });
        };
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        let current = self.files.current_path();
        let error = match Answer::decode(&guardian.run_now()) {
            Answer::InPlace => return Ok(Restored::InPlace),
            Answer::Restored => return Ok(Restored::Restored),
            Answer::LeftAlone(now) if validate_name(&text(now.clone())).is_ok() => {
                return Ok(Restored::LeftAlone { current: text(now) })
            }
            // Not a name: the reader's own words for what is there.
            Answer::LeftAlone(_) => self
                .control
                .current()
                .err()
                .unwrap_or_else(|| unreadable(&current, libc::EIO)),
            Answer::Unreadable {
                available: false,
                errno,
            } => self
                .control
                .current()
                .err()
                .unwrap_or_else(|| unreadable(&current, errno)),
            Answer::Unreadable { available: true, errno } => self
                .control
                .available()
                .err()
                .unwrap_or_else(|| unreadable(&self.files.available_path(), errno)),
            Answer::NotAvailable(list) => {
                let mut available: Vec<String> = Vec::new();
                for name in text(list).split_whitespace() {
                    if !available.iter().any(|a| a == name) {
                        available.push(name.to_string());
                    }
                }
                SwitchError::NotAvailable {
                    name: original.clone(),
                    available,
                }
            }
            Answer::WriteFailed(errno) => SwitchError::Write {
                name: original.clone(),
                reason: format!(
                    "{}: {}",
                    current.to_string_lossy(),
                    match errno {
                        0 => "not a regular file: refused".to_string(),
                        e => std::io::Error::from_raw_os_error(e).to_string(),
                    }
                ),
            },
            Answer::ReadBack(got) => SwitchError::ReadBack {
                wanted: original.clone(),
                got: text(got),
            },
            Answer::Gone => SwitchError::Write {
                name: original.clone(),
                reason: "the guardian process that restores it gave no answer".to_string(),
            },
        };
        Err(fail(error))
    }
}

fn unreadable(path: &Path, errno: i32) -> SwitchError {
    SwitchError::Read(format!(
        "{}: {}",
        escape_untrusted(&path.to_string_lossy()),
        std::io::Error::from_raw_os_error(errno)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope_system::linux::clocksource::CLOCKSOURCE0;
    use clockscope_system::linux::testing::{FakeRoot, LoggedClocksource};

    fn fake(current: &str, available: &str) -> (FakeRoot, Arc<LoggedClocksource>) {
        let root = FakeRoot::new();
        root.write(&format!("{CLOCKSOURCE0}/current_clocksource"), &format!("{current}\n"))
            .write(
                &format!("{CLOCKSOURCE0}/available_clocksource"),
                &format!("{available}\n"),
            );
        let c = Arc::new(LoggedClocksource::new(root.path()));
        (root, c)
    }

    fn restorer(root: &FakeRoot, c: &Arc<LoggedClocksource>) -> Restorer {
        Restorer::new(c.clone(), SysfsClocksource::new(root.path()), None).unwrap()
    }

    #[test]
    fn the_guardian_restores_at_the_end_and_while_a_panic_unwinds() {
        let (root, c) = fake("tsc", "tsc kvm-clock acpi_pm");
        let mut r = restorer(&root, &c);
        assert_eq!(r.original(), "tsc");
        r.switch_to("acpi_pm").unwrap();
        r.switch_to("kvm-clock").unwrap();
        assert_eq!(c.current().unwrap(), "kvm-clock");
        assert_eq!(r.finish().unwrap(), Restored::Restored);
        assert_eq!(c.current().unwrap(), "tsc");
        assert_eq!(
            c.writes(),
            ["acpi_pm", "kvm-clock"],
            "the guardian wrote tsc, not the control"
        );
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut r = restorer(&root, &c);
            r.switch_to("acpi_pm").unwrap();
            panic!("measurement failed");
        }));
        assert!(caught.is_err());
        assert_eq!(c.current().unwrap(), "tsc");
    }

    #[test]
    fn refused_and_failed_writes_are_errors_and_nothing_needs_restoring() {
        let (root, _) = fake("tsc", "tsc hpet acpi_pm");
        let picky = Arc::new(
            LoggedClocksource::new(root.path())
                .ignoring("hpet")
                .failing("acpi_pm", "Invalid argument (os error 22)"),
        );
        let mut r = restorer(&root, &picky);
        let e = r.switch_to("hpet").unwrap_err().downcast::<SwitchError>().unwrap();
        assert_eq!(
            e,
            SwitchError::ReadBack {
                wanted: "hpet".into(),
                got: "tsc".into()
            }
        );
        let e = r.switch_to("acpi_pm").unwrap_err().downcast::<SwitchError>().unwrap();
        assert!(matches!(e, SwitchError::Write { .. }));
        assert_eq!(r.finish().unwrap(), Restored::InPlace);
        assert_eq!(picky.writes(), ["hpet", "acpi_pm"]);
        assert_eq!(picky.current().unwrap(), "tsc");
    }

    #[test]
    fn only_its_own_switch_is_restored_and_only_to_an_available_original() {
        let (root, c) = fake("tsc", "tsc hpet acpi_pm");
        let mut r = restorer(&root, &c);
        r.switch_to("hpet").unwrap();
        std::fs::write(c.sysfs().current_path(), "acpi_pm\n").unwrap();
        assert_eq!(
            r.finish().unwrap(),
            Restored::LeftAlone {
                current: "acpi_pm".into()
            }
        );
        assert_eq!(c.current().unwrap(), "acpi_pm");
        let (root, c) = fake("tsc", "tsc hpet");
        let mut r = restorer(&root, &c);
        r.switch_to("hpet").unwrap();
        std::fs::write(c.sysfs().available_path(), "hpet acpi_pm\n").unwrap();
        let e = r.finish().unwrap_err();
        assert_eq!(
            e.error,
            SwitchError::NotAvailable {
                name: "tsc".into(),
                available: vec!["hpet".into(), "acpi_pm".into()]
            }
        );
        assert_eq!(c.current().unwrap(), "hpet", "never written");
    }

    #[test]
    fn a_file_that_disappears_gives_the_manual_command() {
        let (root, c) = fake("tsc", "tsc hpet");
        let mut r = restorer(&root, &c);
        r.switch_to("hpet").unwrap();
        std::fs::remove_file(c.sysfs().current_path()).unwrap();
        let msg = r.finish().unwrap_err().to_string();
        assert!(
            msg.starts_with("could not restore the clocksource 'tsc'")
                && msg.ends_with(&format!(
                    "restore it with: echo tsc > {}",
                    c.sysfs().current_path().display()
                )),
            "{msg}"
        );
        assert!(!c.sysfs().current_path().exists(), "a write never creates the file");
        assert!(!msg.contains('\n'));
    }
}
