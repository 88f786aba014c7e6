//! How `clockscope::instant` chooses its clock, once per process: the
//! configuration (and `CLOCKSCOPE_CLOCK`), the evidence it gathers within a
//! time bound, and the choice, made by clockscope's own decision
//! ([`crate::tsc::policy::clockscope_decision`] through [`crate::counter::discover()`]:
//! [`TscReport::build`](crate::tsc::TscReport::build) on x86-64,
//! [`crate::arm::gather`] with a calibration cross-check on aarch64), never
//! re-derived here.
//!
//! # Time bound
//! - x86-64: CPUID, the kernel's files and log
//!   ([`KernelEvidence::read`](crate::tsc::policy::KernelEvidence::read)), the
//!   perf mmap page, then one calibration against CLOCK_MONOTONIC_RAW:
//!   [`Config::cross_check_budget_ns`] (default 5 ms) when an authoritative
//!   source (CPUID, hypervisor leaf, perf page, kernel log) gives the
//!   frequency, else [`Config::calibration_budget_ns`] (default and cap
//!   [`CALIBRATION_BUDGET_NS`], 50 ms). PostgreSQL's own calibration, which
//!   `clockscope tsc` also runs, is skipped: it never decides.
//! - aarch64: CNTFRQ_EL0 is authoritative; the calibration is the cross-check.
//! - Whatever the configuration, the calibration budget is cut so that it ends
//!   by [`INIT_BUDGET_NS`] (100 ms) minus [`INIT_RESERVE_NS`] after
//!   the start of initialisation, and skipped when less than
//!   [`MIN_CALIBRATION_NS`] is left (then the decision has no calibration).
//!   The file reads before it are not interruptible; they are a few small
//!   files and the kernel log (read non-blocking, bounded in records).
//!
//! # Forcing the system clock
//! [`Config::force_system_clock`], or the environment variable
//! `CLOCKSCOPE_CLOCK=system`, selects CLOCK_MONOTONIC without examining the
//! counter. `CLOCKSCOPE_CLOCK` unset, empty or `auto` leaves the choice to the
//! evidence; any other value also selects the system clock (the safe choice),
//! and [`ClockInfo::reasons`] names the value. Nothing can force the counter.

use crate::convert::Scale;
use crate::counter::{self, arch, Check, CounterReport, Discovery, Mode};
use serde::Serialize;
use std::ffi::OsStr;
use std::path::Path;

/// The environment variable that can force the system clock.
pub const ENV_VAR: &str = "CLOCKSCOPE_CLOCK";
/// The whole initialisation is planned to end within this (100 ms).
pub const INIT_BUDGET_NS: u64 = 100_000_000;
/// Kept free after the calibration for building the decision (10 ms).
pub const INIT_RESERVE_NS: u64 = 10_000_000;
/// The largest calibration budget (50 ms, PostgreSQL's own limit), used
/// when no authoritative source gives the frequency.
pub const CALIBRATION_BUDGET_NS: u64 = crate::counter::calibrate::DEFAULT_BUDGET_NS;
/// The calibration that only cross-checks an authoritative frequency (5 ms;
/// a result whose bound exceeds
/// [`MAX_UNCERTAINTY_PPM`](crate::counter::calibrate::MAX_UNCERTAINTY_PPM)
/// counts as not converged and cross-checks nothing).
pub const CROSS_CHECK_BUDGET_NS: u64 = 5_000_000;
/// Below this budget a calibration is not started (1 ms cannot bound the
/// frequency within the agreement limit on a preempted VM).
pub const MIN_CALIBRATION_NS: u64 = 1_000_000;
/// The system clock's ticks are nanoseconds: 10^6 kHz.
pub const SYSTEM_CLOCK_KHZ: u64 = 1_000_000;

/// Name of the fallback clock.
pub const SYSTEM_CLOCK_NAME: &str = "clock_gettime (CLOCK_MONOTONIC)";
/// Where the fallback clock's frequency comes from.
pub const SYSTEM_FREQUENCY_SOURCE: &str = "clock_gettime counts nanoseconds";

/// How [`init_with`](super::init_with) chooses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Use CLOCK_MONOTONIC without examining the CPU counter.
    pub force_system_clock: bool,
    /// Calibration budget when no authoritative source gives the counter's
    /// frequency; capped at [`CALIBRATION_BUDGET_NS`].
    pub calibration_budget_ns: u64,
    /// Calibration budget when an authoritative source gives it (the
    /// cross-check); capped at [`CALIBRATION_BUDGET_NS`].
    pub cross_check_budget_ns: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            force_system_clock: false,
            calibration_budget_ns: CALIBRATION_BUDGET_NS,
            cross_check_budget_ns: CROSS_CHECK_BUDGET_NS,
        }
    }
}

/// Which clock the process uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ClockMode {
    /// The CPU counter: RDTSC/RDTSCP, CNTVCT_EL0.
    Counter,
    /// clock_gettime(CLOCK_MONOTONIC).
    System,
}

/// The clock this process uses, and why. See [`clock_info`](super::clock_info).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ClockInfo {
    /// Counter or system clock.
    pub mode: ClockMode,
    /// What `Instant::now()` reads: `RDTSC`, `CNTVCT_EL0` or
    /// `clock_gettime (CLOCK_MONOTONIC)`.
    pub clock_name: &'static str,
    /// What `Instant::now_precise()` reads: `RDTSCP`, `ISB;CNTVCT_EL0` or
    /// `clock_gettime (CLOCK_MONOTONIC)`.
    pub precise_clock_name: &'static str,
    /// Ticks per second of the clock in use.
    pub frequency_hz: u64,
    /// Ticks per millisecond, rounded down (10^6 for the system clock).
    pub frequency_khz: u64,
    /// Where the frequency came from (e.g. `kernel log (tsc: Detected/Refined)`,
    /// `arm64, CNTFRQ_EL0`, `clock_gettime counts nanoseconds`).
    pub frequency_source: String,
    /// The exact ticks-to-ns conversion of the clock in use.
    pub scale: Scale,
    /// clockscope's decision trusted the CPU counter (false when it was not
    /// examined: forced, or no counter on this CPU).
    pub trusted: bool,
    /// The system clock was forced (configuration or `CLOCKSCOPE_CLOCK`).
    pub forced: bool,
    /// Every check of the decision (`ok ...` / `FAILED ...`) and the
    /// conclusion, one sentence each.
    pub reasons: Vec<String>,
    /// Calibration budget given (0 when none ran).
    pub calibration_budget_ns: u64,
    /// How long initialisation took (CLOCK_MONOTONIC).
    pub init_ns: u64,
}

/// Why the system clock is forced, or `None`: the configuration first, then
/// the environment variable's value (`env`, as read from [`ENV_VAR`]).
pub fn forced_reason(config: &Config, env: Option<&OsStr>) -> Option<String> {
    if config.force_system_clock {
        return Some("system clock forced by Config::force_system_clock".to_string());
    }
    match env.map(|v| v.to_string_lossy()) {
        None => None,
        Some(v) if v.is_empty() || v == "auto" => None,
        Some(v) if v == "system" => Some(format!("system clock forced by {ENV_VAR}=system")),
        Some(v) => Some(format!(
            "{ENV_VAR}={v:?} is neither 'auto' nor 'system': using the system clock, the safe choice"
        )),
    }
}

/// The calibration budget left for a calibration that wants `wanted_ns`
/// when `elapsed_ns` of the initialisation have passed: capped at
/// [`CALIBRATION_BUDGET_NS`], ending by `INIT_BUDGET_NS - INIT_RESERVE_NS`,
/// 0 (do not calibrate) below [`MIN_CALIBRATION_NS`].
pub fn bounded_budget_ns(wanted_ns: u64, elapsed_ns: u64) -> u64 {
    let left = (INIT_BUDGET_NS - INIT_RESERVE_NS).saturating_sub(elapsed_ns);
    let budget = wanted_ns.min(CALIBRATION_BUDGET_NS).min(left);
    if budget < MIN_CALIBRATION_NS {
        0
    } else {
        budget
    }
}

/// The decision's lines as [`ClockInfo::reasons`] gives them: every check
/// of the TSC (`ok <check>: <evidence>` / `FAILED ...`); the generic timer's
/// decision line when trusted, else each failed reason, and a note when its
/// calibration cross-check gave no bounded rate.
pub fn reasons(report: &CounterReport) -> Vec<String> {
    const NAME: &str = "generic timer";
    match report.generic_timer() {
        Some(t) => {
            let mut lines: Vec<String> = if t.trusted {
                vec![Check::new(true, NAME, t.decision_line()).to_string()]
            } else {
                t.reasons
                    .iter()
                    .map(|r| Check::new(false, NAME, r.clone()).to_string())
                    .collect()
            };
            if let Some(why) = &t.calibration_failed {
                lines.push(format!("note calibration cross-check: {why}"));
            }
            lines
        }
        None => report
            .decision
            .iter()
            .flat_map(|d| &d.checks)
            .map(|c| c.to_string())
            .collect(),
    }
}

/// The choice from the evidence: forced, no usable counter (`Err` with why),
/// or the counter's full report.
pub fn choose(
    forced: Option<String>,
    counter: Result<CounterReport, String>,
    counter_names: (&'static str, &'static str),
    init_ns: u64,
) -> ClockInfo {
    let system = |reasons: Vec<String>, trusted: bool, forced: bool, budget: u64| ClockInfo {
        mode: ClockMode::System,
        clock_name: SYSTEM_CLOCK_NAME,
        precise_clock_name: SYSTEM_CLOCK_NAME,
        frequency_hz: Scale::NANOSECONDS.hz(),
        frequency_khz: SYSTEM_CLOCK_KHZ,
        frequency_source: SYSTEM_FREQUENCY_SOURCE.to_string(),
        scale: Scale::NANOSECONDS,
        trusted,
        forced,
        reasons,
        calibration_budget_ns: budget,
        init_ns,
    };
    if let Some(why) = forced {
        return system(vec![format!("{why}; the CPU counter was not examined")], false, true, 0);
    }
    let v = match counter {
        Err(why) => return system(vec![format!("{why}: using {SYSTEM_CLOCK_NAME}")], false, false, 0),
        Ok(v) => v,
    };
    let mut reasons = reasons(&v);
    let scale = v.scale();
    match (v.trusted().unwrap_or(false), scale) {
        (true, Some(scale)) => {
            let source = v
                .frequency
                .source
                .clone()
                .unwrap_or_else(|| "unnamed source".to_string());
            reasons.push(format!(
                "the counter is trusted: using {} ({} for precise reads) at {} kHz from {source}",
                counter_names.0,
                counter_names.1,
                scale.khz()
            ));
            ClockInfo {
                mode: ClockMode::Counter,
                clock_name: counter_names.0,
                precise_clock_name: counter_names.1,
                frequency_hz: scale.hz(),
                frequency_khz: scale.khz(),
                frequency_source: source,
                scale,
                trusted: true,
                forced: false,
                reasons,
                calibration_budget_ns: v.calibration_budget_ns,
                init_ns,
            }
        }
        (true, None) => {
            reasons.push(format!(
                "the counter is trusted but has no frequency: using {SYSTEM_CLOCK_NAME}"
            ));
            system(reasons, true, false, v.calibration_budget_ns)
        }
        (false, _) => {
            reasons.push(format!(
                "the counter is not trusted (FAILED checks above): using {SYSTEM_CLOCK_NAME}"
            ));
            system(reasons, false, false, v.calibration_budget_ns)
        }
    }
}

/// Chooses the clock for this process: forced, or this machine's evidence.
pub fn detect(config: &Config) -> ClockInfo {
    let started = std::time::Instant::now();
    let forced = forced_reason(config, std::env::var_os(ENV_VAR).as_deref());
    let counter = if forced.is_some() {
        Err(String::new())
    } else {
        counter_report(config, &started)
    };
    choose(forced, counter, COUNTER_NAMES, elapsed_ns(&started))
}

fn elapsed_ns(started: &std::time::Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// What `now()` and `now_precise()` read in counter mode.
const COUNTER_NAMES: (&str, &str) = match (arch::FAST, arch::PRECISE) {
    (Some(fast), Some(precise)) => (fast.display_name(), precise.display_name()),
    _ => (SYSTEM_CLOCK_NAME, SYSTEM_CLOCK_NAME),
};

/// This machine's counter, decided with the configured budgets cut to the
/// initialisation budget; `Err` when it has no ordered read (checked before
/// anything executes RDTSCP, which raises SIGILL where it is hidden).
fn counter_report(config: &Config, started: &std::time::Instant) -> Result<CounterReport, String> {
    if let Some(why) = arch::missing_ordered_read() {
        return Err(why);
    }
    let discovery = Discovery {
        mode: Mode::Full,
        cross_check_ns: config.cross_check_budget_ns,
        calibration_ns: config.calibration_budget_ns,
        // PostgreSQL's calibration never decides.
        postgresql_calibration: false,
    };
    let budget = |wanted: u64| match bounded_budget_ns(wanted, elapsed_ns(started)) {
        0 => Err(format!(
            "skipped: less than {} ms of the {} ms initialisation budget was left",
            MIN_CALIBRATION_NS / 1_000_000,
            INIT_BUDGET_NS / 1_000_000
        )),
        b => Ok(b),
    };
    Ok(counter::discover_with(Path::new("/"), None, &discovery, &budget))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(trusted: bool, hz: Option<u64>) -> CounterReport {
        CounterReport {
            details: None,
            frequency: crate::counter::CounterFrequency {
                khz: hz.map(|h| h / 1000),
                hz,
                source: Some("kernel log (tsc: Detected/Refined)".to_string()),
                unknown: None,
            },
            decision: Some(crate::counter::Decision {
                trusted,
                checks: vec![
                    Check::new(true, "RDTSCP", "CPUID 0x80000001 EDX bit 27 set"),
                    Check::new(trusted, "kernel clocksource", "current clocksource is kvm-clock"),
                ],
                notes: Vec::new(),
            }),
            postgres: crate::counter::PostgresCounter::default(),
            calibration_budget_ns: CROSS_CHECK_BUDGET_NS,
        }
    }

    const NAMES: (&str, &str) = ("RDTSC", "RDTSCP");

    #[test]
    fn trusted_counter_is_used_at_its_frequency() {
        let info = choose(None, Ok(verdict(true, Some(2_599_998_000))), NAMES, 7);
        assert_eq!(info.mode, ClockMode::Counter);
        assert_eq!((info.clock_name, info.precise_clock_name), NAMES);
        assert_eq!((info.frequency_hz, info.frequency_khz), (2_599_998_000, 2_599_998));
        assert_eq!(info.scale, Scale::from_khz(2_599_998).unwrap());
        assert_eq!(info.frequency_source, "kernel log (tsc: Detected/Refined)");
        assert!(info.trusted && !info.forced);
        assert_eq!(info.init_ns, 7);
        assert!(info
            .reasons
            .last()
            .unwrap()
            .contains("using RDTSC (RDTSCP for precise reads) at 2599998 kHz"));
    }

    #[test]
    fn untrusted_counter_falls_back_with_the_failed_checks() {
        let info = choose(None, Ok(verdict(false, Some(2_599_998_000))), NAMES, 7);
        assert_eq!(info.mode, ClockMode::System);
        assert_eq!(info.clock_name, SYSTEM_CLOCK_NAME);
        assert_eq!(info.scale, Scale::NANOSECONDS);
        assert_eq!(info.frequency_khz, SYSTEM_CLOCK_KHZ);
        assert!(!info.trusted && !info.forced);
        assert!(info.reasons.iter().any(|r| r.starts_with("FAILED kernel clocksource")));
        assert!(info.reasons.last().unwrap().contains("not trusted"));
    }

    #[test]
    fn trusted_without_frequency_falls_back() {
        let info = choose(None, Ok(verdict(true, None)), NAMES, 0);
        assert_eq!(info.mode, ClockMode::System);
        assert!(info.trusted, "the decision is reported as it was");
        assert!(info.reasons.last().unwrap().contains("no frequency"));
        let info = choose(None, Ok(verdict(true, Some(0))), NAMES, 0);
        assert_eq!(info.mode, ClockMode::System);
    }

    #[test]
    fn no_counter_and_forced_fall_back() {
        let info = choose(None, Err("the CPU reports no RDTSCP".into()), NAMES, 0);
        assert_eq!(info.mode, ClockMode::System);
        assert_eq!(
            info.reasons,
            vec![format!("the CPU reports no RDTSCP: using {SYSTEM_CLOCK_NAME}")]
        );
        let info = choose(
            Some("system clock forced by X".into()),
            Ok(verdict(true, Some(1))),
            NAMES,
            0,
        );
        assert_eq!(info.mode, ClockMode::System);
        assert!(info.forced && !info.trusted);
        assert!(info.reasons[0].contains("not examined"));
        assert_eq!(info.calibration_budget_ns, 0);
    }

    #[test]
    fn environment_and_config_force_the_system_clock() {
        let auto = Config::default();
        let forced = Config {
            force_system_clock: true,
            ..Config::default()
        };
        assert_eq!(forced_reason(&auto, None), None);
        assert_eq!(forced_reason(&auto, Some(OsStr::new(""))), None);
        assert_eq!(forced_reason(&auto, Some(OsStr::new("auto"))), None);
        assert!(forced_reason(&auto, Some(OsStr::new("system")))
            .unwrap()
            .contains("CLOCKSCOPE_CLOCK=system"));
        let odd = forced_reason(&auto, Some(OsStr::new("tsc"))).unwrap();
        assert!(odd.contains("\"tsc\"") && odd.contains("neither"), "{odd}");
        assert!(forced_reason(&forced, None)
            .unwrap()
            .contains("Config::force_system_clock"));
        assert!(forced_reason(&forced, Some(OsStr::new("auto"))).is_some());
    }

    #[test]
    fn calibration_budget_is_bounded() {
        assert_eq!(
            bounded_budget_ns(CROSS_CHECK_BUDGET_NS, 1_000_000),
            CROSS_CHECK_BUDGET_NS
        );
        assert_eq!(bounded_budget_ns(u64::MAX, 0), CALIBRATION_BUDGET_NS);
        // 60 ms already spent: 30 ms left before the reserve.
        assert_eq!(bounded_budget_ns(CALIBRATION_BUDGET_NS, 60_000_000), 30_000_000);
        assert_eq!(bounded_budget_ns(CALIBRATION_BUDGET_NS, 89_500_000), 0);
        assert_eq!(bounded_budget_ns(CALIBRATION_BUDGET_NS, u64::MAX), 0);
        assert_eq!(bounded_budget_ns(500_000, 0), 0);
        assert_eq!(bounded_budget_ns(0, 0), 0);
    }
}
