//! The one hand that puts the original clocksource back: a
//! [`crate::guardian`] child, forked before each switch, that restores it
//! when the sweep ends, on success or an error (asked to now, what it did
//! reported: [`Restorer::finish`]), while a panic unwinds through the sweep
//! (the [`Restorer`] dropped), and when the process dies without either (any
//! signal, a second Ctrl-C's forced exit, SIGKILL, a crash). It writes the original only over
//! the clocksource that sweep put in place (someone else's later change is
//! left alone), only while the original is still available, reads it back,
//! and holds the sweep lock until it has exited, so no second sweep starts
//! over a half-restored state.

use crate::cleanup::{Cleanup, Ran};
use crate::guardian::Guardian;
use clockscope_system::linux::clocksource::{
    switch_to, ClocksourceControl, RestoreError, Restored, SwitchError, SysfsClocksource,
};
use std::os::fd::RawFd;
use std::sync::Arc;

/// Switches clocksources, each switch guarded, and restores the original
/// through the guardian of the last one (see the module).
pub struct Restorer {
    control: Arc<dyn ClocksourceControl>,
    /// The files the guardian writes: those `control` switches.
    files: SysfsClocksource,
    original: String,
    lock_fd: Option<RawFd>,
    /// The clocksource the sweep last put in place (read back), and its guardian.
    guardian: Option<(String, Guardian)>,
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
    /// unguarded; the previous one is dismissed only once `name` reads back
    /// (or the new one, when the switch failed).
    pub fn switch_to(&mut self, name: &str) -> anyhow::Result<()> {
        // The original in place needs no guardian.
        let next = match name == self.original {
            true => None,
            false => Some((name.to_string(), self.guardian_of(name)?)),
        };
        let switched = switch_to(&*self.control, name);
        let (keep, dismissed) = match switched {
            Ok(()) => (next, std::mem::take(&mut self.guardian)),
            Err(_) => (self.guardian.take(), next),
        };
        self.guardian = keep;
        if let Some((_, guardian)) = dismissed {
            guardian.dismiss();
        }
        Ok(switched?)
    }

    fn guardian_of(&self, switched: &str) -> anyhow::Result<Guardian> {
        let (current, original) = (self.files.current_path(), &self.original);
        // Only over the sweep's own switch, only to an original still
        // available. Names are validated (letters, digits, '_', '-', '.'): safe to print.
        let cleanup = Cleanup::write(&current, format!("{original}\n").as_bytes())?
            .if_file_reads(&current, switched)?
            .if_file_lists(&self.files.available_path(), original)?
            .with_note(&format!(
                "clockscope: the sweep died (a signal, SIGKILL or a crash) with clocksource {switched} in place: its \
                 guardian wrote {original} back"
            ));
        Guardian::spawn(cleanup, self.lock_fd.as_slice())
            .map(Guardian::cleanup_on_drop)
            .map_err(|e| anyhow::anyhow!("cannot start the guardian process that restores the clocksource: {e}"))
    }

    /// Has the guardian restore the original now, reads it back, and says
    /// what was found and done (see [`Restored`]); with no switch of the
    /// sweep's in place, nothing is written.
    pub fn finish(mut self) -> Result<Restored, RestoreError> {
        let (switched, ran) = match self.guardian.take() {
            Some((name, guardian)) => (Some(name), Some(guardian.run_now())),
            None => (None, None),
        };
        let original = self.original.clone();
        let fail = |error| RestoreError {
            command: self.control.manual_command(&original),
            original: original.clone(),
            error,
        };
        let current = self.control.current().map_err(fail)?;
        let failed = |reason: String| SwitchError::Write {
            name: original.clone(),
            reason: format!("{}: {reason}", self.files.current_path().to_string_lossy()),
        };
        // ran: None, no switch of the sweep's in place; Some(None), no answer.
        let error = match ran {
            _ if current == original => match ran {
                Some(Some(Ran::Done)) => return Ok(Restored::Restored),
                _ => return Ok(Restored::InPlace),
            },
            // Someone else's choice: the guardian's conditions left it alone.
            None | Some(Some(Ran::Skipped)) if switched.as_ref() != Some(&current) => {
                return Ok(Restored::LeftAlone { current })
            }
            Some(Some(Ran::Done)) => SwitchError::ReadBack {
                wanted: original.clone(),
                got: current,
            },
            Some(Some(Ran::Failed(0))) => failed("not a regular file: refused".to_string()),
            Some(Some(Ran::Failed(errno))) => failed(std::io::Error::from_raw_os_error(errno).to_string()),
            Some(None) => failed("the guardian process that restores it gave no answer".to_string()),
            // Skipped over the sweep's own switch: the original is not available (or was not readable).
            _ => {
                let available = self.control.available().map_err(fail)?;
                if available.contains(&original) {
                    failed("available_clocksource could not be read when the guardian looked".to_string())
                } else {
                    SwitchError::NotAvailable {
                        name: original.clone(),
                        available,
                    }
                }
            }
        };
        Err(fail(error))
    }
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
