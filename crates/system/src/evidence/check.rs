//! One line of a trust decision ([`Check`]): whether it passed, what was
//! checked, and the evidence. The TSC's and the generic timer's decisions
//! are lists of them; the counter layer's report carries them.

use serde::Serialize;

/// One check of a trust decision: whether it passed, what was checked, and
/// the evidence. Serialised as `{"ok", "check", "evidence"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Check {
    /// Whether the check passed.
    pub ok: bool,
    /// What was checked (`RDTSCP`, `kernel clocksource`, ...); empty for a
    /// generic-timer reason, which says everything in its evidence.
    #[serde(rename = "check")]
    pub name: &'static str,
    /// What was found, in words (escaped where it quotes outside text).
    pub evidence: String,
}

impl Check {
    /// A check named `name` that passed when `ok`, with its evidence.
    pub fn new(ok: bool, name: &'static str, evidence: impl Into<String>) -> Check {
        Check {
            ok,
            name,
            evidence: evidence.into(),
        }
    }
}
