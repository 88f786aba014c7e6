//! What a restore of the original clocksource found and did (the CLI's
//! guardian process restores it: only over a clocksource the sweep itself
//! put in place, and only while the original is still available).

use super::SwitchError;
use crate::escape::escape_untrusted;

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

/// The original clocksource could not be put back: the message ends with
/// the command that does it by hand.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "could not restore the clocksource '{}' ({}); restore it with: {}",
    escape_untrusted(.original),
    .error,
    escape_untrusted(.command)
)]
pub struct RestoreError {
    /// The clocksource to put back.
    pub original: String,
    /// Why it could not be.
    pub error: SwitchError,
    /// The command that puts it back by hand.
    pub command: String,
}
