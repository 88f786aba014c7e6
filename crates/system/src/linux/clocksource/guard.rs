//! The guard that puts the original clocksource back: only over a
//! clocksource the sweep itself put in place, on drop (also while a panic
//! unwinds) or explicitly.

use super::{switch_to, ClocksourceControl, SwitchError};
use crate::escape::escape_untrusted;
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

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
    LeftAlone {
        /// The clocksource in use, left in place.
        current: String,
    },
}

/// Holds the clocksource that was in use before a sweep and puts it back
/// when dropped (also while a panic unwinds), but only over a clocksource
/// the sweep itself put in place: a change made by someone else since the
/// last switch is left alone. [`ClocksourceGuard::finish`] restores
/// explicitly and returns the outcome; a drop that cannot restore prints the
/// exact command to do it by hand on stderr. (A process that dies without
/// unwinding is covered by the CLI's guardian process, not by this guard.)
pub struct ClocksourceGuard {
    control: Arc<dyn ClocksourceControl>,
    original: String,
    /// The clocksource the sweep itself last put in place (confirmed by a read-back).
    ours: RefCell<Option<String>>,
    done: bool,
}

impl ClocksourceGuard {
    /// Remembers the clocksource in use now.
    pub fn new(control: Arc<dyn ClocksourceControl>) -> Result<Self, SwitchError> {
        let original = control.current()?;
        Ok(ClocksourceGuard {
            control,
            original,
            ours: RefCell::new(None),
            done: false,
        })
    }

    /// The clocksource in use when the guard was made.
    pub fn original(&self) -> &str {
        &self.original
    }

    /// The control the guard restores through.
    pub fn control(&self) -> &Arc<dyn ClocksourceControl> {
        &self.control
    }

    /// Switches to `name` (if still available) and checks the kernel took it.
    pub fn switch_to(&self, name: &str) -> Result<(), SwitchError> {
        let result = switch_to(&*self.control, name);
        if result.is_ok() {
            *self.ours.borrow_mut() = Some(name.to_string());
        }
        result
    }

    /// Restores the original now (see [`Restored`]); the guard then does nothing on drop.
    pub fn finish(mut self) -> Result<Restored, RestoreError> {
        self.done = true;
        self.restore()
    }

    /// Restores the original if the clocksource in use is the one the sweep put there.
    pub fn restore(&self) -> Result<Restored, RestoreError> {
        let fail = |error| RestoreError {
            original: self.original.clone(),
            error,
            command: self.control.manual_command(&self.original),
        };
        let current = self.control.current().map_err(fail)?;
        if current == self.original {
            return Ok(Restored::InPlace);
        }
        if self.ours.borrow().as_deref() != Some(current.as_str()) {
            return Ok(Restored::LeftAlone { current });
        }
        switch_to(&*self.control, &self.original).map_err(fail)?;
        *self.ours.borrow_mut() = None;
        Ok(Restored::Restored)
    }
}

impl Drop for ClocksourceGuard {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            match self.restore() {
                Err(e) => eprintln!("clockscope: error: {e}"),
                Ok(Restored::LeftAlone { current }) => eprintln!(
                    "clockscope: clocksource '{}' was put in place by someone else: left alone; the original was '{}'",
                    escape_untrusted(&current),
                    escape_untrusted(&self.original)
                ),
                Ok(_) => {}
            }
        }
    }
}

/// The original clocksource could not be put back: the message ends with
/// the command that does it by hand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestoreError {
    /// The clocksource to put back.
    pub original: String,
    /// Why it could not be.
    pub error: SwitchError,
    /// The command that puts it back by hand.
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
