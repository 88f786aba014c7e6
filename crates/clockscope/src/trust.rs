//! "Can I use the CPU counter here?": one answer ([`Trust`]) from four
//! facts, gathered in bounded time, decided with AND (any failed rule means
//! the system clock):
//!
//! 1. `CLOCKSCOPE_CLOCK` is unset, empty or `auto` (`system`, or any other
//!    value, forces CLOCK_MONOTONIC: the safe choice; nothing forces the
//!    counter);
//! 2. CPUID: the CPU has the counter and its ordered read (TSC + RDTSCP on
//!    x86-64; the generic timer on aarch64), and the TSC is invariant
//!    (CPUID 0x8000_0007 EDX bit 8: one rate in every P-, C- and T-state);
//! 3. the kernel times with that counter: `current_clocksource` is `tsc`
//!    (x86-64) or `arch_sys_counter` (aarch64). Linux drops the TSC as its
//!    clocksource when its boot-time synchronisation check, its warp test
//!    or its watchdog finds it unstable, so this one file carries the
//!    kernel's cross-CPU verdict;
//! 4. a calibration against CLOCK_MONOTONIC_RAW (at most
//!    [`Trust::CALIBRATION_BUDGET_NS`], 10 ms) converged within
//!    [`Calibration::MAX_UNCERTAINTY_PPM`]; on aarch64 it must also agree with
//!    CNTFRQ_EL0 within [`Trust::MAX_DISAGREEMENT_PPM`], and CNTFRQ_EL0 is
//!    then the frequency.
//!
//! Nothing else is read: no kernel log, no perf page. The tools' fuller
//! judges (every frequency source, PostgreSQL 19's `auto`, the kernel log)
//! are in the unpublished `clockscope-system` crate.

use crate::calibrate::{calibrate, Calibration};
use crate::convert::Scale;
use crate::counter::CounterKind;
use crate::{arch, clock::PosixClock, ClockSource};
use serde::Serialize;
use std::io::Read;
use std::path::Path;

/// Whether this process can time with the CPU counter, and why (not): what
/// [`crate::Instant`] uses, decided once per process by [`trust`].
///
/// ```
/// let t = clockscope::trust();
/// println!("{}: {}", t.clock_name, t.reasons.join("; "));
/// assert_eq!(t.use_counter, t.clock_name != "clock_gettime (CLOCK_MONOTONIC)");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trust {
    /// Whether the counter is trusted: `Instant` reads it.
    pub use_counter: bool,
    /// The fast read in use: `RDTSC`, `CNTVCT_EL0` or the system clock.
    pub clock_name: &'static str,
    /// The ordered read in use: `RDTSCP`, `ISB;CNTVCT_EL0` or the system clock.
    pub precise_clock_name: &'static str,
    /// Ticks to nanoseconds for the clock in use (1:1 for the system clock).
    pub scale: Scale,
    /// The counter's frequency in Hz, when one was found.
    pub frequency_hz: Option<u64>,
    /// Where that frequency came from.
    pub frequency_source: String,
    /// The kernel's clocksource as read from sysfs, if readable.
    pub kernel_clocksource: Option<String>,
    /// The calibration against CLOCK_MONOTONIC_RAW, when one ran.
    pub calibration: Option<Calibration>,
    /// Each rule's outcome, in order: `ok ...` or why not.
    pub reasons: Vec<String>,
    /// How long the decision took (CLOCK_MONOTONIC ns).
    pub elapsed_ns: u64,
}

/// The facts [`decide`] judges: gathered from this machine by [`trust`], or
/// given by a test.
pub(crate) struct Facts<'a> {
    pub env: Option<&'a str>,
    pub kind: Option<CounterKind>,
    pub missing_ordered_read: Option<String>,
    pub invariant: bool,
    pub clocksource: Result<String, String>,
    pub calibration: Option<Calibration>,
    pub frequency_register_hz: Option<u64>,
}

const SYSTEM_CLOCK: &str = "clock_gettime (CLOCK_MONOTONIC)";
/// The kernel file that names the clocksource in use.
const CURRENT_CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0/current_clocksource";
/// `CLOCKSCOPE_CLOCK`: `system` forces the system clock.
const ENV_VAR: &str = "CLOCKSCOPE_CLOCK";

impl Trust {
    /// The calibration's budget: 10 ms of CLOCK_MONOTONIC_RAW (plus one
    /// bracket of three clock reads), the bound on [`trust`]'s time.
    pub const CALIBRATION_BUDGET_NS: u64 = 10_000_000;
    /// On aarch64, the most the calibration may differ from CNTFRQ_EL0
    /// (1000 ppm: a firmware that programmed the wrong rate is off by far
    /// more; a preempted 10 ms calibration by far less).
    pub const MAX_DISAGREEMENT_PPM: f64 = 1000.0;
}

/// Decides, now, whether this process can time with the CPU counter (see the
/// module documentation for the four rules). Takes at most
/// [`Trust::CALIBRATION_BUDGET_NS`] plus a few small reads; [`crate::Instant`]
/// calls it once, at its first use.
///
/// ```
/// let t = clockscope::trust();
/// if t.use_counter {
///     assert!(t.frequency_hz.is_some());
/// }
/// ```
pub fn trust() -> Trust {
    let start = PosixClock::monotonic().now();
    let env = std::env::var(ENV_VAR).ok();
    let kind = CounterKind::native();
    let missing = arch::missing_ordered_read();
    let invariant = arch::invariant();
    let clocksource = read_clocksource(Path::new("/"));
    let forced = matches!(env.as_deref(), Some(v) if !v.is_empty() && v != "auto");
    let calibrate_it = !forced && kind.is_some() && missing.is_none() && invariant && clocksource.is_ok();
    let facts = Facts {
        env: env.as_deref(),
        kind,
        missing_ordered_read: missing,
        invariant,
        clocksource,
        calibration: calibrate_it.then(|| calibrate(Trust::CALIBRATION_BUDGET_NS)),
        frequency_register_hz: arch::frequency_register_hz(),
    };
    let mut t = decide(&facts);
    t.elapsed_ns = PosixClock::monotonic().now().delta_since(start).max(0) as u64;
    t
}

/// `current_clocksource` under `root`, read bounded (64 bytes).
pub(crate) fn read_clocksource(root: &Path) -> Result<String, String> {
    let path = root.join(CURRENT_CLOCKSOURCE);
    let mut text = String::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(64).read_to_string(&mut text))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text.trim().to_string())
}

/// The kernel's name for the counter as a clocksource.
fn kernel_name(kind: CounterKind) -> &'static str {
    match kind {
        CounterKind::Tsc => "tsc",
        CounterKind::GenericTimer => "arch_sys_counter",
    }
}

/// The four rules over `facts`, in order; the first failure decides.
pub(crate) fn decide(facts: &Facts<'_>) -> Trust {
    let mut t = Trust {
        use_counter: false,
        clock_name: SYSTEM_CLOCK,
        precise_clock_name: SYSTEM_CLOCK,
        scale: Scale::NANOSECONDS,
        frequency_hz: None,
        frequency_source: "clock_gettime counts nanoseconds".to_string(),
        kernel_clocksource: facts.clocksource.as_ref().ok().cloned(),
        calibration: facts.calibration.clone(),
        reasons: Vec::new(),
        elapsed_ns: 0,
    };
    match facts.env {
        Some(v) if !v.is_empty() && v != "auto" => {
            t.reasons.push(format!("system clock forced by {ENV_VAR}={v:?}"));
            return t;
        }
        _ => {}
    }
    let Some(kind) = facts.kind else {
        t.reasons.push(format!(
            "no CPU counter on this architecture ({})",
            std::env::consts::ARCH
        ));
        return t;
    };
    if let Some(why) = &facts.missing_ordered_read {
        t.reasons.push(why.clone());
        return t;
    }
    if !facts.invariant {
        t.reasons
            .push("the TSC is not invariant (CPUID 0x80000007 EDX bit 8 clear): its rate may change".into());
        return t;
    }
    t.reasons
        .push("ok CPUID: the counter, its ordered read and a constant rate".into());
    match &facts.clocksource {
        Ok(cs) if cs == kernel_name(kind) => {
            t.reasons
                .push(format!("ok the kernel times with it (clocksource {cs})"));
        }
        Ok(cs) => {
            t.reasons.push(format!(
                "the kernel's clocksource is {cs:?}, not {}: it does not trust the counter here",
                kernel_name(kind)
            ));
            return t;
        }
        Err(why) => {
            t.reasons.push(why.clone());
            return t;
        }
    }
    let Some(hz) = calibrated_frequency(facts, &mut t) else {
        return t;
    };
    let Some(scale) = Scale::from_hz(hz) else {
        t.reasons.push(format!("a frequency of {hz} Hz cannot be converted"));
        return t;
    };
    t.use_counter = true;
    t.scale = scale;
    t.frequency_hz = Some(hz);
    t.clock_name = kind.fast_read().display_name();
    t.precise_clock_name = kind.ordered_read().display_name();
    t
}

/// Rule 4: the frequency, or `None` with the reason pushed.
fn calibrated_frequency(facts: &Facts<'_>, t: &mut Trust) -> Option<u64> {
    let cal = match &facts.calibration {
        Some(c) => c,
        None => {
            t.reasons.push("no calibration ran".into());
            return None;
        }
    };
    let Some(cal_hz) = cal.hz else {
        t.reasons
            .push(format!("the calibration found no frequency: {}", cal.note));
        return None;
    };
    let ppm = cal.uncertainty_ppm.unwrap_or(f64::INFINITY);
    match facts.frequency_register_hz {
        Some(reg) if reg > 0 => {
            let d = (cal_hz as f64 - reg as f64) / reg as f64 * 1e6;
            if d.abs() > Trust::MAX_DISAGREEMENT_PPM {
                t.reasons.push(format!(
                    "CNTFRQ_EL0 says {reg} Hz but the counter runs at {cal_hz} Hz ({d:+.0} ppm): the register is wrong"
                ));
                return None;
            }
            t.reasons
                .push(format!("ok CNTFRQ_EL0 {reg} Hz, calibration agrees ({d:+.1} ppm)"));
            t.frequency_source = "CNTFRQ_EL0, cross-checked by a calibration".into();
            Some(reg)
        }
        _ => {
            t.reasons
                .push(format!("ok calibrated at {cal_hz} Hz within {ppm:.1} ppm"));
            t.frequency_source = format!(
                "calibration against CLOCK_MONOTONIC_RAW over {:.1} ms (within {ppm:.1} ppm)",
                cal.elapsed_ns as f64 / 1e6
            );
            Some(cal_hz)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration(hz: Option<u64>) -> Calibration {
        let mut c = Calibration::unavailable("scripted", Calibration::BRACKETED);
        c.hz = hz;
        c.khz = hz.map(|h| h / 1000);
        c.uncertainty_ppm = hz.map(|_| 2.0);
        c.elapsed_ns = 10_000_000;
        c
    }

    fn tsc_facts() -> Facts<'static> {
        Facts {
            env: None,
            kind: Some(CounterKind::Tsc),
            missing_ordered_read: None,
            invariant: true,
            clocksource: Ok("tsc".into()),
            calibration: Some(calibration(Some(2_596_134_000))),
            frequency_register_hz: None,
        }
    }

    #[test]
    fn every_rule_met_uses_the_counter_at_the_calibrated_rate() {
        let t = decide(&tsc_facts());
        assert!(t.use_counter, "{:?}", t.reasons);
        assert_eq!(t.frequency_hz, Some(2_596_134_000));
        assert_eq!((t.clock_name, t.precise_clock_name), ("RDTSC", "RDTSCP"));
        assert_eq!(t.scale, Scale::from_hz(2_596_134_000).unwrap());
        assert!(t.reasons.iter().all(|r| r.starts_with("ok ")), "{:?}", t.reasons);
    }

    #[test]
    fn each_failed_rule_alone_gives_the_system_clock_and_says_why() {
        type Change = Box<dyn Fn(&mut Facts<'static>)>;
        let cases: Vec<(Change, &str)> = vec![
            (Box::new(|f| f.env = Some("system")), "forced by CLOCKSCOPE_CLOCK"),
            (Box::new(|f| f.env = Some("tsc")), "forced by CLOCKSCOPE_CLOCK=\"tsc\""),
            (Box::new(|f| f.kind = None), "no CPU counter"),
            (
                Box::new(|f| f.missing_ordered_read = Some("no RDTSCP".into())),
                "no RDTSCP",
            ),
            (Box::new(|f| f.invariant = false), "not invariant"),
            (
                Box::new(|f| f.clocksource = Ok("kvm-clock".into())),
                "\"kvm-clock\", not tsc",
            ),
            (
                Box::new(|f| f.clocksource = Err("cannot read x".into())),
                "cannot read x",
            ),
            (Box::new(|f| f.calibration = None), "no calibration ran"),
            (
                Box::new(|f| f.calibration = Some(calibration(None))),
                "found no frequency",
            ),
        ];
        for (change, why) in cases {
            let mut f = tsc_facts();
            change(&mut f);
            let t = decide(&f);
            assert!(!t.use_counter, "{why}");
            assert_eq!(t.scale, Scale::NANOSECONDS);
            assert_eq!(t.clock_name, SYSTEM_CLOCK);
            assert!(t.reasons.last().unwrap().contains(why), "{why}: {:?}", t.reasons);
        }
    }

    #[test]
    fn auto_or_empty_environment_leaves_the_choice_to_the_evidence() {
        for v in ["auto", ""] {
            let mut f = tsc_facts();
            f.env = Some(v);
            assert!(decide(&f).use_counter, "{v:?}");
        }
    }

    #[test]
    fn the_generic_timer_uses_cntfrq_when_the_calibration_agrees() {
        let mut f = tsc_facts();
        f.kind = Some(CounterKind::GenericTimer);
        f.clocksource = Ok("arch_sys_counter".into());
        f.frequency_register_hz = Some(25_000_000);
        f.calibration = Some(calibration(Some(25_000_400)));
        let t = decide(&f);
        assert!(t.use_counter, "{:?}", t.reasons);
        assert_eq!(t.frequency_hz, Some(25_000_000));
        assert_eq!(t.clock_name, "CNTVCT_EL0");
        f.calibration = Some(calibration(Some(24_000_000)));
        let t = decide(&f);
        assert!(!t.use_counter);
        assert!(
            t.reasons.last().unwrap().contains("the register is wrong"),
            "{:?}",
            t.reasons
        );
    }

    #[test]
    fn the_clocksource_is_read_under_a_root_and_bounded() {
        let dir = std::env::temp_dir().join(format!("clockscope-trust-{}", std::process::id()));
        let file = dir.join(CURRENT_CLOCKSOURCE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "tsc\n").unwrap();
        assert_eq!(read_clocksource(&dir).unwrap(), "tsc");
        std::fs::write(&file, "x".repeat(1000)).unwrap();
        assert_eq!(read_clocksource(&dir).unwrap().len(), 64);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(read_clocksource(&dir).unwrap_err().contains("cannot read"));
    }
}
