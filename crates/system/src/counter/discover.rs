//! The one frequency discovery: which frequency converts the counter's ticks,
//! and (in full) whether clockscope trusts the counter, with a calibration
//! budget.
//!
//! - [`Mode::Quick`]: the frequency only, before measuring. No calibration
//!   when an authoritative source gives it (CPUID, the hypervisor leaf, the
//!   perf page, the kernel log; CNTFRQ_EL0 on ARM); otherwise a calibration
//!   of at most `calibration_ns`.
//! - [`Mode::Full`]: the trust decision, with the calibration as a cross-check
//!   (`cross_check_ns` when an authoritative source exists, `calibration_ns`
//!   when none does) and, if asked, PostgreSQL 19's own calibration algorithm.
//! - [`Mode::Postgresql`]: what PostgreSQL 19's `pg_initialize_timing` does
//!   (the TSC by its CPUID rules, else PostgreSQL's own calibration algorithm
//!   when `calibration_ns` is granted; `postgres_tsc_from`); on ARM, the generic timer with its
//!   cross-check (`cross_check_ns`), which pg_test_timing prints in its place.
//!
//! The evidence is injected ([`TscEvidence`], a root path and CNTFRQ_EL0 for
//! the generic timer) and so are the calibrations ([`Calibrator`]) and the
//! budget (a function that may cut or refuse it), so the choices are tested
//! with recorded CPUID facts, a fake sysfs tree and scripted calibrations.

use super::calibrate::{self, Calibration};
use super::report::{Check, CounterDetails, CounterFrequency, CounterReport, Decision, PostgresCounter};
use super::{native_kind, CounterKind};
use crate::arm::{self, CalibrationEvidence};
use crate::linux::LinuxEvidence;
use crate::tsc::cpuid::CpuidFacts;
use crate::tsc::policy::KernelEvidence;
use crate::tsc::report::{perf_page_khz, LiveEvidence, TscReport};
use std::path::Path;

/// How much to find out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The frequency only (see the module documentation).
    Quick,
    /// The trust decision with its cross-check.
    Full,
    /// What PostgreSQL 19 does with the counter.
    Postgresql,
}

/// A discovery: the mode and its calibration budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Discovery {
    /// How much to find out.
    pub mode: Mode,
    /// Calibration budget when an authoritative source gives the frequency
    /// (the cross-check; quick mode never calibrates then).
    pub cross_check_ns: u64,
    /// Calibration budget when none does.
    pub calibration_ns: u64,
    /// Also run PostgreSQL 19's calibration algorithm (full mode, TSC).
    pub postgresql_calibration: bool,
}

impl Discovery {
    /// The frequency only, calibrating (at most `calibration_ns`) only
    /// without an authoritative source.
    pub const fn quick(calibration_ns: u64) -> Discovery {
        Discovery {
            mode: Mode::Quick,
            cross_check_ns: 0,
            calibration_ns,
            postgresql_calibration: false,
        }
    }

    /// The trust decision with a calibration of `calibration_ns` and
    /// PostgreSQL's calibration beside it (`clockscope tsc`, `check`'s report).
    pub const fn full(calibration_ns: u64) -> Discovery {
        Discovery {
            mode: Mode::Full,
            cross_check_ns: calibration_ns,
            calibration_ns,
            postgresql_calibration: true,
        }
    }

    /// PostgreSQL 19's view (pg_test_timing, explain), calibrating at most
    /// `calibration_ns` as PostgreSQL does.
    pub const fn postgresql(calibration_ns: u64) -> Discovery {
        Discovery {
            mode: Mode::Postgresql,
            cross_check_ns: calibration_ns,
            calibration_ns,
            postgresql_calibration: false,
        }
    }
}

/// Runs calibrations: this CPU's counter, or scripted ones in tests.
pub trait Calibrator {
    /// clockscope's calibration, at most `budget_ns`.
    fn counter(&mut self, budget_ns: u64) -> Calibration;
    /// PostgreSQL 19's algorithm.
    fn postgresql(&mut self) -> Calibration;
}

/// This CPU's counter against CLOCK_MONOTONIC_RAW (and CLOCK_MONOTONIC for PostgreSQL's).
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeCalibrator;

impl Calibrator for NativeCalibrator {
    fn counter(&mut self, budget_ns: u64) -> Calibration {
        calibrate::calibrate_counter(budget_ns)
    }
    fn postgresql(&mut self) -> Calibration {
        calibrate::calibrate_postgresql_native()
    }
}

/// A budget left as asked.
pub fn full_budget(ns: u64) -> Result<u64, String> {
    Ok(ns)
}

/// The TSC's evidence besides calibrations.
#[derive(Clone, Debug)]
pub struct TscEvidence {
    /// The root the kernel's files were read under, as reported.
    pub root: String,
    /// This CPU's CPUID facts; `None` without CPUID (not x86-64).
    pub cpuid: Option<CpuidFacts>,
    /// The kernel's evidence (sysfs, /proc, the kernel log).
    pub kernel: KernelEvidence,
    /// The perf page's TSC kHz, with how it was read, or why not.
    pub perf_page_khz: Result<(u64, String), String>,
    /// Hints of a time library in this process (`time_library_hints`).
    pub time_libraries: Vec<String>,
}

impl TscEvidence {
    /// This machine: native CPUID, the kernel's evidence (already read under
    /// `root`), and the perf page when CPUID reports a TSC.
    pub fn read(root: &Path, linux: &LinuxEvidence) -> TscEvidence {
        let cpuid = CpuidFacts::native();
        let perf_page_khz = match &cpuid {
            None => Err("no TSC: not an x86-64 CPU".to_string()),
            Some(f) if f.tsc => perf_page_khz(),
            Some(_) => Err(NO_TSC.to_string()),
        };
        TscEvidence {
            root: root.display().to_string(),
            cpuid,
            kernel: KernelEvidence::from_linux(linux),
            perf_page_khz,
            time_libraries: crate::evidence::interposition::time_library_hints(),
        }
    }
}

const NO_TSC: &str = "the CPU reports no TSC (CPUID 1 EDX bit 4)";
const NOT_RUN: &str = "not run: the report without calibration";

/// This machine's counter, found as `d` asks, under `root` with the kernel
/// evidence `linux` (read under the same root).
pub fn discover(root: &Path, linux: &LinuxEvidence, d: &Discovery) -> CounterReport {
    discover_with(root, Some(linux), d, &full_budget)
}

/// [`discover`] with `budget` deciding each calibration's budget from the
/// one asked for (`Err`: skip it, with why). `linux` is read under `root`
/// when `None` and needed (the TSC's decision uses it, the generic timer's
/// does not).
pub fn discover_with(
    root: &Path,
    linux: Option<&LinuxEvidence>,
    d: &Discovery,
    budget: &dyn Fn(u64) -> Result<u64, String>,
) -> CounterReport {
    match native_kind() {
        Some(CounterKind::Tsc) => {
            let ev = match linux {
                Some(l) => TscEvidence::read(root, l),
                None => TscEvidence::read(root, &LinuxEvidence::read(root)),
            };
            discover_tsc(ev, d, budget, &mut NativeCalibrator)
        }
        Some(CounterKind::GenericTimer) => {
            let hz = CounterKind::frequency_register_hz().unwrap_or(0);
            discover_generic_timer(root, hz, d, budget, &mut NativeCalibrator)
        }
        None => CounterReport::absent(),
    }
}

impl CounterReport {
    /// No counter on this architecture.
    pub fn absent() -> CounterReport {
        CounterReport {
            details: None,
            frequency: CounterFrequency {
                unknown: Some(format!("no CPU counter on {}", std::env::consts::ARCH)),
                ..CounterFrequency::default()
            },
            decision: None,
            postgres: PostgresCounter::default(),
            calibration_budget_ns: 0,
        }
    }

    /// A full TSC report as the counter's report: clockscope's decision and
    /// its frequency, PostgreSQL 19's `auto` choice.
    pub fn from_tsc_report(report: TscReport, calibration_budget_ns: u64) -> CounterReport {
        let d = &report.clockscope_decision;
        let frequency = CounterFrequency {
            khz: d.frequency_khz,
            hz: d.frequency_khz.and_then(|k| k.checked_mul(1000)),
            source: d.frequency_source.clone(),
            unknown: d
                .frequency_khz
                .is_none()
                .then(|| report.clockscope_frequency.why.clone()),
        };
        let decision = Decision {
            trusted: d.trusted,
            checks: d.reasons.clone(),
            notes: Vec::new(),
        };
        let auto = Some(report.postgresql_auto.use_by_default);
        tsc_counter(report, frequency, Some(decision), auto, None, calibration_budget_ns)
    }
}

/// A TSC report as the counter's report, with its frequency, clockscope's
/// decision and PostgreSQL 19's `auto` choice and TSC conclusion given.
fn tsc_counter(
    report: TscReport,
    frequency: CounterFrequency,
    decision: Option<Decision>,
    auto_uses_counter: Option<bool>,
    tsc: Option<crate::tsc::PostgresTsc>,
    calibration_budget_ns: u64,
) -> CounterReport {
    CounterReport {
        frequency,
        decision,
        postgres: PostgresCounter {
            reads_counter: postgresql_reads_tsc(&report),
            auto_uses_counter,
            tsc,
        },
        calibration_budget_ns,
        details: Some(CounterDetails::Tsc(Box::new(report))),
    }
}

/// PostgreSQL 19 has a TSC clock only with RDTSCP and an invariant TSC.
fn postgresql_reads_tsc(r: &TscReport) -> bool {
    r.rdtscp == Some(true) && r.invariant_tsc == Some(true)
}

/// The TSC, found as `d` asks from injected evidence.
pub fn discover_tsc(
    ev: TscEvidence,
    d: &Discovery,
    budget: &dyn Fn(u64) -> Result<u64, String>,
    cal: &mut dyn Calibrator,
) -> CounterReport {
    let absent = match &ev.cpuid {
        None => Some("no TSC: not an x86-64 CPU".to_string()),
        Some(f) if !f.tsc => Some(NO_TSC.to_string()),
        Some(_) => None,
    };
    let mut live = LiveEvidence {
        root: ev.root.clone(),
        kernel: ev.kernel.clone(),
        perf_page_khz: ev.perf_page_khz.clone(),
        calibration: Err(absent.clone().unwrap_or_else(|| NOT_RUN.to_string())),
        postgresql_calibration: Err(absent.clone().unwrap_or_else(|| NOT_RUN.to_string())),
        time_libraries: ev.time_libraries.clone(),
    };
    let preliminary = TscReport::build(ev.cpuid.clone(), Some(live.clone()), None);
    match d.mode {
        Mode::Quick => quick_tsc(preliminary, d, budget, cal),
        Mode::Full => {
            let mut spent = 0;
            if absent.is_none() {
                let authoritative = preliminary.clockscope_frequency.khz.is_some();
                let wanted = if authoritative {
                    d.cross_check_ns
                } else {
                    d.calibration_ns
                };
                live.calibration = budget(wanted).map(|b| {
                    spent = b;
                    cal.counter(b)
                });
                live.postgresql_calibration = if d.postgresql_calibration {
                    Ok(cal.postgresql())
                } else {
                    Err("not run: only clockscope's calibration was asked for (PostgreSQL's never decides)".to_string())
                };
            }
            CounterReport::from_tsc_report(TscReport::build(ev.cpuid, Some(live), None), spent)
        }
        Mode::Postgresql => postgresql_tsc(&ev, preliminary, d, budget, cal),
    }
}

/// [`Mode::Quick`] on the TSC: the preliminary report's frequency, else a
/// calibration within the budget when RDTSCP exists.
fn quick_tsc(
    preliminary: TscReport,
    d: &Discovery,
    budget: &dyn Fn(u64) -> Result<u64, String>,
    cal: &mut dyn Calibrator,
) -> CounterReport {
    let mut frequency = CounterFrequency::default();
    let mut spent = 0;
    match (
        preliminary.clockscope_frequency.khz,
        preliminary.clockscope_frequency.source_label,
    ) {
        (Some(khz), label) => {
            frequency.khz = Some(khz);
            frequency.source = label.map(str::to_string);
        }
        (None, _) if preliminary.rdtscp == Some(true) => match budget(d.calibration_ns) {
            Ok(b) => {
                spent = b;
                let c = cal.counter(b);
                match c.khz {
                    Some(khz) => {
                        frequency.khz = Some(khz);
                        frequency.source = Some(format!("calibration against CLOCK_MONOTONIC_RAW ({})", c.note));
                    }
                    None => frequency.unknown = Some(format!("no TSC frequency: {}", c.note)),
                }
            }
            Err(why) => frequency.unknown = Some(format!("no TSC frequency: calibration {why}")),
        },
        (None, _) => frequency.unknown = Some(preliminary.clockscope_frequency.why.clone()),
    }
    frequency.hz = frequency.khz.and_then(|k| k.checked_mul(1000));
    tsc_counter(preliminary, frequency, None, None, None, spent)
}

/// [`Mode::Postgresql`] on the TSC: what PostgreSQL 19's
/// `pg_initialize_timing` concludes ([`crate::tsc::postgres_tsc_from`]),
/// calibrating within the budget only when it would.
fn postgresql_tsc(
    ev: &TscEvidence,
    preliminary: TscReport,
    d: &Discovery,
    budget: &dyn Fn(u64) -> Result<u64, String>,
    cal: &mut dyn Calibrator,
) -> CounterReport {
    // The file's first line as PostgreSQL's fgets reads it.
    let clocksource = ev
        .kernel
        .current_clocksource
        .found()
        .map(|s| format!("{s}\n").into_bytes());
    let mut spent = 0;
    let pg = ev.cpuid.as_ref().and_then(|f| {
        // PostgreSQL's own calibration (bounded at its 50 ms), as its
        // frequency in use; `(uint32)` of its kHz, 0: did not converge.
        crate::tsc::postgres_tsc_from(f, clocksource.as_deref(), || {
            budget(d.calibration_ns).map_or(0, |b| {
                spent = b;
                cal.postgresql().khz.map_or(0, |k| k.min(u32::MAX as u64) as u32)
            })
        })
    });
    let frequency = CounterFrequency {
        khz: pg.as_ref().and_then(|p| p.frequency_khz),
        hz: pg.as_ref().and_then(|p| p.frequency_khz?.checked_mul(1000)),
        source: pg.as_ref().and_then(|p| p.frequency_source.clone()),
        unknown: None,
    };
    let auto = Some(pg.as_ref().is_some_and(|p| p.use_by_default));
    tsc_counter(preliminary, frequency, None, auto, pg, spent)
}

/// The ARM generic timer under `root` with CNTFRQ_EL0 = `cntfrq_hz`, found
/// as `d` asks. CNTFRQ_EL0 is authoritative: quick mode never calibrates,
/// the others cross-check with `cross_check_ns`.
pub fn discover_generic_timer(
    root: &Path,
    cntfrq_hz: u64,
    d: &Discovery,
    budget: &dyn Fn(u64) -> Result<u64, String>,
    cal: &mut dyn Calibrator,
) -> CounterReport {
    let mut spent = 0;
    let calibration = (d.mode != Mode::Quick)
        .then(|| budget(d.cross_check_ns).ok())
        .flatten()
        .map(|b| {
            spent = b;
            cal.counter(b)
        });
    let evidence = calibration.as_ref().and_then(CalibrationEvidence::from_calibration);
    let mut timer = arm::gather(root, cntfrq_hz, evidence.as_ref());
    if let (Some(c), None) = (calibration, &evidence) {
        timer.calibration_failed = Some(c.note);
    }
    let frequency = CounterFrequency {
        khz: (timer.frequency_hz >= 1000).then_some(timer.frequency_hz / 1000),
        hz: Some(timer.frequency_hz).filter(|&hz| hz > 0),
        source: Some(timer.frequency_source.to_string()),
        unknown: (timer.frequency_hz == 0).then(|| "CNTFRQ_EL0 reads 0".to_string()),
    };
    let decision = (d.mode != Mode::Quick).then(|| Decision {
        trusted: timer.trusted,
        checks: timer.reasons.iter().map(|r| Check::new(false, "", r.clone())).collect(),
        notes: timer.notes.clone(),
    });
    CounterReport {
        frequency,
        decision,
        postgres: PostgresCounter {
            // PostgreSQL 19 has no ARM counter support: auto always picks the system clock.
            reads_counter: false,
            auto_uses_counter: (d.mode != Mode::Quick).then_some(false),
            tsc: None,
        },
        calibration_budget_ns: spent,
        details: Some(CounterDetails::GenericTimer(Box::new(timer))),
    }
}
