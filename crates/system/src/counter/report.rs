//! What clockscope knows about the CPU counter, as one value: which counter
//! and its full report, the frequency to convert with and where it came
//! from, the trust decision as a list of [`Check`]s, and what PostgreSQL 19
//! does with the counter. Built by [`super::discover()`].

use crate::arm::GenericTimerReport;
use crate::tsc::TscReport;
use serde::Serialize;

pub use crate::evidence::Check;

/// `ok name: evidence` / `FAILED name: evidence` (`FAILED evidence` for an
/// unnamed check): how the tools state a decision's reasons. The CLI's
/// report styles (a colon list, a table) are its own.
impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mark = if self.ok { "ok" } else { "FAILED" };
        if self.name.is_empty() {
            write!(f, "{mark} {}", self.evidence)
        } else {
            write!(f, "{mark} {}: {}", self.name, self.evidence)
        }
    }
}

/// The counter's own report: the TSC's (x86-64) or the generic timer's
/// (aarch64). Serialises as that report itself.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum CounterDetails {
    /// The x86-64 TSC's report.
    Tsc(Box<TscReport>),
    /// The ARM generic timer's report.
    GenericTimer(Box<GenericTimerReport>),
}

/// The frequency to convert the counter's ticks with.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CounterFrequency {
    /// The frequency in kHz; `None` when unknown.
    pub khz: Option<u64>,
    /// Exact Hz where the source gives them (CNTFRQ_EL0, a calibration),
    /// else `khz * 1000`.
    pub hz: Option<u64>,
    /// Where it came from (`kernel log (tsc: Detected/Refined)`, `arm64, CNTFRQ_EL0`, ...).
    pub source: Option<String>,
    /// Why there is none, when there is none.
    pub unknown: Option<String>,
}

/// clockscope's trust decision: every check passed (AND).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Decision {
    /// Every check passed.
    pub trusted: bool,
    /// Every check (the TSC), or every failed one (the generic timer).
    pub checks: Vec<Check>,
    /// Evidence that decided nothing.
    pub notes: Vec<String>,
}

/// What PostgreSQL 19 does with the counter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostgresCounter {
    /// PostgreSQL 19 can read it (`timing_clock_source = tsc`: the x86-64
    /// TSC with RDTSCP and an invariant TSC; never the ARM generic timer).
    pub reads_counter: bool,
    /// `timing_clock_source = auto` picks it; `None` when not decided.
    pub auto_uses_counter: Option<bool>,
    /// What PostgreSQL 19's `pg_initialize_timing` concludes about the TSC
    /// (its frequency by its rules; [`super::Mode::Postgresql`] only).
    pub tsc: Option<crate::tsc::PostgresTsc>,
}

/// Everything about the CPU counter ([`super::discover()`]).
#[derive(Clone, Debug)]
pub struct CounterReport {
    /// The counter's own report; `None` on an architecture without one.
    pub details: Option<CounterDetails>,
    /// The frequency to convert ticks with.
    pub frequency: CounterFrequency,
    /// `None` for a quick discovery, which only finds the frequency.
    pub decision: Option<Decision>,
    /// What PostgreSQL 19 does with the counter.
    pub postgres: PostgresCounter,
    /// The budget clockscope's calibration was given (0: none ran).
    pub calibration_budget_ns: u64,
}

impl CounterReport {
    /// The TSC report, on x86-64.
    pub fn tsc(&self) -> Option<&TscReport> {
        match &self.details {
            Some(CounterDetails::Tsc(t)) => Some(t),
            _ => None,
        }
    }

    /// The generic timer's report, on aarch64.
    pub fn generic_timer(&self) -> Option<&GenericTimerReport> {
        match &self.details {
            Some(CounterDetails::GenericTimer(t)) => Some(t),
            _ => None,
        }
    }

    /// The frequency as a conversion, when known and in range.
    pub fn scale(&self) -> Option<clockscope::Scale> {
        self.frequency.hz.and_then(clockscope::Scale::from_hz)
    }

    /// Whether clockscope's decision trusts the counter (`None`: not decided).
    pub fn trusted(&self) -> Option<bool> {
        self.decision.as_ref().map(|d| d.trusted)
    }

    /// Why time is changed on its way to clockscope, when the counter's
    /// calibration is grossly off its frequency
    /// ([`super::interposition`]): the TSC's frequency agreement, the
    /// generic timer's calibration reason.
    pub fn time_interposition(&self) -> Option<String> {
        match &self.details {
            Some(CounterDetails::Tsc(t)) => t.frequency_agreement.time_interposition.clone(),
            Some(CounterDetails::GenericTimer(g)) => g.time_interposition().map(str::to_string),
            None => None,
        }
    }

    /// The first failed check as `name: evidence` (the evidence alone when
    /// it has no name), or `every check passed`; `None` when not decided.
    pub fn reason(&self) -> Option<String> {
        let d = self.decision.as_ref()?;
        Some(match d.checks.iter().find(|c| !c.ok) {
            Some(c) if c.name.is_empty() => c.evidence.clone(),
            Some(c) => format!("{}: {}", c.name, c.evidence),
            None => "every check passed".to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_ok_or_failed_then_the_check() {
        let ok = Check::new(true, "RDTSCP", "CPUID 0x80000001 EDX bit 27 set");
        let bad = Check::new(false, "kernel clocksource", "current clocksource is kvm-clock");
        assert_eq!(ok.to_string(), "ok RDTSCP: CPUID 0x80000001 EDX bit 27 set");
        assert_eq!(
            bad.to_string(),
            "FAILED kernel clocksource: current clocksource is kvm-clock"
        );
        assert_eq!(
            Check::new(false, "", "CNTFRQ_EL0 reads 0").to_string(),
            "FAILED CNTFRQ_EL0 reads 0"
        );
    }

    #[test]
    fn serialises_with_the_check_key() {
        let v = serde_json::to_value(Check::new(true, "RDTSCP", "set")).unwrap();
        assert_eq!(v, serde_json::json!({"ok": true, "check": "RDTSCP", "evidence": "set"}));
    }
}
