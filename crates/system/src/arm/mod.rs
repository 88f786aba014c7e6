//! The ARM generic timer: frequency, homogeneity of cores, counter errata, trust.
//!
//! Pure logic, compiled on every architecture so it is tested everywhere; the
//! register reads (CNTVCT_EL0, CNTFRQ_EL0) live in `counter/aarch64.rs`, and
//! [`crate::counter::discover()`] gathers this machine's report.
//!
//! ```text
//! gather(root, cntfrq_hz, calibration) -> GenericTimerReport
//!   frequency   CNTFRQ_EL0 in Hz, resolution 1/f, coarse below 10 MHz
//!   cores       MIDR_EL1 per CPU (sysfs, else /proc/cpuinfo), named
//!   homogeneous every CPU the same implementer + part (big.LITTLE is not)
//!   errata      Linux's counter errata matched by MIDR, device tree, ACPI
//!   cross-check device-tree clock-frequency, BogoMIPS, calibration (ppm)
//!   trusted     all of the above hold (AND); `reasons` says which did not
//! ```
//!
//! Trust means: a CNTVCT_EL0 difference times 1/CNTFRQ_EL0 is a correct
//! duration on every CPU at full read speed. A coarse counter is still
//! trusted (CLOCK_MONOTONIC on the same machine counts the same ticks) but
//! carries [`GenericTimerReport::coarse_warning`].

pub mod cores;
pub mod errata;
pub mod frequency;
pub mod midr;

pub use cores::{core_types, Core, CoreType, CpuScan, IdSource};
pub use errata::{ErratumFinding, FirmwareEvidence, KNOWN_ERRATA};
pub use frequency::{CalibrationEvidence, COARSE_BELOW_HZ};
pub use midr::{CoreModel, Midr};

use crate::evidence::interposition;
use serde::Serialize;
use std::path::Path;

/// Where `frequency_hz` comes from.
pub const FREQUENCY_SOURCE: &str = "arm64, CNTFRQ_EL0";

/// Everything clockscope knows about the generic timer, and its decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct GenericTimerReport {
    /// CNTFRQ_EL0 (read on aarch64, injected in tests).
    pub frequency_hz: u64,
    /// Always [`FREQUENCY_SOURCE`].
    pub frequency_source: &'static str,
    /// One tick in ns (1e9 / frequency_hz); None when the frequency is 0.
    pub resolution_ns: Option<f64>,
    /// Set below [`COARSE_BELOW_HZ`].
    pub coarse_warning: Option<String>,
    /// The device tree timer's `clock-frequency`, which Linux prefers to CNTFRQ_EL0.
    pub dt_clock_frequency_hz: Option<u64>,
    /// `/proc/cpuinfo` BogoMIPS as printed, and the rate it implies (x 500,000).
    pub bogomips: Option<String>,
    /// The rate BogoMIPS implies, in Hz.
    pub bogomips_hz: Option<u64>,
    /// Every CPU's identification, ascending.
    pub cores: Vec<Core>,
    /// CPUs grouped by implementer + part, in order of first CPU.
    pub core_types: Vec<CoreType>,
    /// Every CPU is the same core type.
    pub homogeneous: bool,
    /// Known counter errata that apply (AArch32-only ones have `affects_aarch64: false`).
    pub errata: Vec<ErratumFinding>,
    /// The firmware tables consulted for SoC-level errata.
    pub firmware: FirmwareEvidence,
    /// The calibration cross-check, when one was run.
    pub calibration_reference: Option<String>,
    /// The calibrated rate, in Hz, when a calibration ran.
    pub calibrated_hz: Option<f64>,
    /// The calibration's own uncertainty, in ppm.
    pub calibration_uncertainty_ppm: Option<f64>,
    /// (calibrated - CNTFRQ_EL0) / CNTFRQ_EL0, in ppm.
    pub disagreement_ppm: Option<f64>,
    /// Set when a calibration ran but gave no bounded rate: why.
    pub calibration_failed: Option<String>,
    /// Whether CNTVCT_EL0 / CNTFRQ_EL0 can be used in place of clock_gettime.
    pub trusted: bool,
    /// Why it is not trusted, one sentence each; empty exactly when trusted.
    pub reasons: Vec<String>,
    /// Evidence worth knowing that did not decide anything.
    pub notes: Vec<String>,
}

impl GenericTimerReport {
    /// The frequency section pg_test_timing prints after the counter blocks,
    /// in the shape of PostgreSQL 19's TSC lines ("TSC frequency source",
    /// "in use", "from calibration"), plus the resolution and, below 10 MHz,
    /// the coarse warning.
    pub fn frequency_lines(&self) -> Vec<String> {
        let mut lines = vec![
            format!("Generic timer frequency source: {}", self.frequency_source),
            format!("Generic timer frequency in use: {} kHz", self.frequency_khz_text()),
        ];
        match (self.calibrated_hz, &self.calibration_failed) {
            (Some(hz), _) => lines.push(format!(
                "Generic timer frequency from calibration: {:.0} kHz ({:+.1} ppm, against {})",
                hz / 1000.0,
                self.disagreement_ppm.unwrap_or(0.0),
                self.calibration_reference.as_deref().unwrap_or("a reference clock")
            )),
            (None, Some(_)) => lines.push("Generic timer calibration did not converge".to_string()),
            (None, None) => {}
        }
        if let Some(res) = self.resolution_ns {
            lines.push(format!("Generic timer resolution: {} ns", frequency::format_ns(res)));
        }
        if let Some(w) = &self.coarse_warning {
            lines.push(format!("Warning: {w}"));
        }
        lines
    }

    /// The closing sentence, as PostgreSQL's "TSC clock source will (not) be
    /// used by default" line; PostgreSQL 19 itself has no ARM counter
    /// support, so this is clockscope's decision, with the first reason.
    pub fn decision_line(&self) -> String {
        match self.reasons.first() {
            None => "Generic timer clock source is trustworthy here (clockscope's decision; PostgreSQL 19 uses the \
system clock on ARM)."
                .to_string(),
            Some(why) => format!(
                "Generic timer clock source is not trustworthy here (clockscope's decision; PostgreSQL 19 uses the \
system clock on ARM): {why}."
            ),
        }
    }

    /// The reason saying time is changed on its way to clockscope (a
    /// calibration more than [`interposition::GROSS_DISAGREEMENT_PPM`] off
    /// CNTFRQ_EL0), when there is one.
    pub fn time_interposition(&self) -> Option<&str> {
        self.reasons
            .iter()
            .find(|r| r.contains(interposition::CHANGES_TIME))
            .map(String::as_str)
    }

    /// The frequency in kHz as PostgreSQL prints TSC frequencies (`24000`,
    /// `121875`); fractional kHz keep three decimals (`19200`, `62.5` MHz -> `62500`).
    pub fn frequency_khz_text(&self) -> String {
        if self.frequency_hz.is_multiple_of(1000) {
            (self.frequency_hz / 1000).to_string()
        } else {
            format!("{:.3}", self.frequency_hz as f64 / 1000.0)
        }
    }
}

/// Gathers the evidence under `root` (`/` on a live system; a fake tree in
/// tests), with CNTFRQ_EL0 given as `cntfrq_hz` and an optional calibration
/// of CNTVCT_EL0, and decides. Missing files are missing evidence, never errors.
pub fn gather(root: &Path, cntfrq_hz: u64, calibration: Option<&CalibrationEvidence>) -> GenericTimerReport {
    let scan = CpuScan::read(root);
    let firmware = FirmwareEvidence::read(root);
    // Bounded, regular files only; when /proc/cpuinfo exists but cannot be
    // read, the scan above says so in its problems (reported as notes).
    let cpuinfo = crate::linux::read_cpuinfo_text(root).into_found().unwrap_or_default();
    let bogomips = frequency::bogomips_hz(&cpuinfo);
    let types = core_types(&scan.cores);
    let homogeneous = types.len() == 1;
    let errata = errata::find_errata(&scan.cores, &firmware);
    let dt_clock_frequency_hz = firmware.dt_timer.as_ref().and_then(|t| t.clock_frequency_hz);

    let mut f = Findings::default();
    f.frequency(cntfrq_hz, dt_clock_frequency_hz, bogomips.as_ref());
    let disagreement_ppm = f.calibration(root, cntfrq_hz, calibration);
    f.cores(&scan.cores, &types);
    f.errata(&errata);
    f.core_types(&types);
    let Findings { reasons, mut notes } = f;
    notes.extend(firmware.unchecked.iter().cloned());
    notes.extend(scan.problems.iter().cloned());

    GenericTimerReport {
        frequency_hz: cntfrq_hz,
        frequency_source: FREQUENCY_SOURCE,
        resolution_ns: frequency::resolution_ns(cntfrq_hz),
        coarse_warning: frequency::coarse_warning(cntfrq_hz),
        dt_clock_frequency_hz,
        bogomips: bogomips.as_ref().map(|b| b.0.clone()),
        bogomips_hz: bogomips.map(|b| b.1),
        core_types: types,
        homogeneous,
        errata,
        firmware,
        calibration_reference: calibration.map(|c| c.reference.clone()),
        calibrated_hz: calibration.map(|c| c.calibrated_hz),
        calibration_uncertainty_ppm: calibration.map(|c| c.uncertainty_ppm),
        disagreement_ppm,
        calibration_failed: None,
        trusted: reasons.is_empty(),
        reasons,
        notes,
        cores: scan.cores,
    }
}

/// What the generic timer's checks found: `reasons` against trusting it,
/// `notes` that inform without deciding. Each step below adds one kind.
#[derive(Default)]
struct Findings {
    reasons: Vec<String>,
    notes: Vec<String>,
}

impl Findings {
    /// CNTFRQ_EL0 itself, against the device tree's `clock-frequency` and
    /// the rate BogoMIPS implies.
    fn frequency(&mut self, cntfrq_hz: u64, dt_clock_frequency_hz: Option<u64>, bogomips: Option<&(String, u64)>) {
        let (reasons, notes) = (&mut self.reasons, &mut self.notes);
        if cntfrq_hz == 0 {
            reasons.push(
                "CNTFRQ_EL0 reads 0: the firmware did not program the counter frequency, so ticks cannot be converted \
to time"
                    .to_string(),
            );
        }
        match dt_clock_frequency_hz {
            Some(dt) if dt != cntfrq_hz => reasons.push(format!(
                "the device tree's timer clock-frequency is {dt} Hz but CNTFRQ_EL0 says {cntfrq_hz} Hz: Linux uses the \
device-tree value, so CNTFRQ_EL0 misstates the counter's rate"
            )),
            Some(dt) => notes.push(format!(
                "the device tree's timer clock-frequency ({dt} Hz) equals CNTFRQ_EL0"
            )),
            None => {}
        }
        if let Some((text, hz)) = bogomips {
            match frequency::disagreement_ppm(cntfrq_hz, *hz as f64) {
                Some(d) if d.abs() > frequency::BOGOMIPS_TOLERANCE_PPM => reasons.push(format!(
                    "the kernel's timer rate implied by BogoMIPS {text} ({hz} Hz) differs from CNTFRQ_EL0 \
({cntfrq_hz} Hz) by {d:+.0} ppm: the kernel converts the counter with another rate"
                )),
                Some(_) => notes.push(format!(
                    "/proc/cpuinfo BogoMIPS {text} implies {hz} Hz, consistent with CNTFRQ_EL0 (arm64 Linux derives \
BogoMIPS from the timer rate)"
                )),
                None => {}
            }
        }
    }

    /// The calibration against CNTFRQ_EL0 (the kernel's clocksource read
    /// under `root` says whether it is independent); returns its
    /// disagreement in ppm.
    fn calibration(&mut self, root: &Path, cntfrq_hz: u64, calibration: Option<&CalibrationEvidence>) -> Option<f64> {
        let disagreement_ppm = calibration.and_then(|c| frequency::disagreement_ppm(cntfrq_hz, c.calibrated_hz));
        // With clocksource arch_sys_counter, CLOCK_MONOTONIC_RAW is this counter
        // scaled at the rate the kernel took from CNTFRQ_EL0 (or the device
        // tree): a calibration against it checks that arithmetic, no more.
        let clocksource = crate::linux::read_current_clocksource(root).into_found();
        if let (Some(c), Some("arch_sys_counter")) = (calibration, clocksource.as_deref()) {
            self.notes.push(format!(
                "the calibration against {} is a check of the kernel's arithmetic, not independent evidence: the \
kernel's clocksource is arch_sys_counter, this counter itself",
                c.reference
            ));
        }
        if let (Some(c), Some(d)) = (calibration, disagreement_ppm) {
            if !c.agrees_with(cntfrq_hz) {
                // Grossly off: time is changed on its way to clockscope (certainly so when the kernel's clock is this counter).
                let gross = if d.abs() > interposition::GROSS_DISAGREEMENT_PPM + c.uncertainty_ppm.abs() {
                    format!(
                        ", more than {} ppm: {}",
                        interposition::GROSS_DISAGREEMENT_PPM,
                        interposition::explanation(clocksource.as_deref() == Some("arch_sys_counter"))
                    )
                } else {
                    String::new()
                };
                self.reasons.push(format!(
                    "calibrated against {} the counter runs at {:.0} Hz, {d:+.1} ppm from CNTFRQ_EL0 ({cntfrq_hz} Hz; \
tolerance {} ppm + {:.1} ppm uncertainty){gross}",
                    c.reference,
                    c.calibrated_hz,
                    frequency::CALIBRATION_TOLERANCE_PPM,
                    c.uncertainty_ppm
                ));
            }
        }
        disagreement_ppm
    }

    /// Whether the CPUs were identified and are all the same core.
    fn cores(&mut self, cores: &[Core], types: &[CoreType]) {
        if cores.is_empty() {
            self.reasons.push(
                "no CPU identification found (no sys/devices/system/cpu/cpu*/regs/identification/midr_el1 and no arm64 \
CPU lines in /proc/cpuinfo): homogeneity and CPU errata cannot be checked"
                    .to_string(),
            );
        } else if types.len() != 1 {
            let mix: Vec<String> = types.iter().map(|t| format!("{} x {}", t.cpus.len(), t.name)).collect();
            self.reasons.push(format!(
                "the CPUs are not all the same core ({}): errata and counter behaviour must hold on every core type, and \
clockscope trusts only homogeneous systems by default",
                mix.join(", ")
            ));
        }
    }

    /// Each known counter erratum that applies: a reason on AArch64, a note
    /// when it affects AArch32 only.
    fn errata(&mut self, errata: &[ErratumFinding]) {
        for e in errata {
            let cpus = if e.cpus.is_empty() {
                "the whole SoC".to_string()
            } else {
                format!("CPUs {}", cpu_list(&e.cpus))
            };
            if e.affects_aarch64 {
                self.reasons.push(format!(
                    "{} on {cpus} ({}): {}; {}",
                    e.id, e.detected_by, e.problem, e.linux_workaround
                ));
            } else {
                self.notes
                    .push(format!("{} on {cpus} ({}): {}", e.id, e.detected_by, e.problem));
            }
        }
    }

    /// Core types whose errata cannot be matched: a hypervisor's placeholder
    /// MIDR, or a part clockscope's table does not name.
    fn core_types(&mut self, types: &[CoreType]) {
        for t in types {
            let model = CoreModel {
                implementer: t.implementer,
                part: t.part,
            };
            if hides_core_type(model) {
                self.notes.push(format!(
                    "CPUs {} report {}: a hypervisor hides the real core, so errata matched by MIDR are checked against \
what it reports, not the host's core",
                    cpu_list(&t.cpus),
                    t.name
                ));
            } else if model.part_name().is_none() {
                self.notes.push(format!(
                    "CPUs {} are {}, not in clockscope's table of parts: no known counter erratum matches it",
                    cpu_list(&t.cpus),
                    t.name
                ));
            }
        }
    }
}

/// Models whose MIDR is a hypervisor's placeholder, not a real core: Apple's
/// Virtualization framework (implementer 0x61 part 0 on M3 hosts, all zero on
/// M1/M2 per cpufetch issue #229) and Parallels (0x41 part 0, FEX-Emu #990).
fn hides_core_type(m: CoreModel) -> bool {
    m.part == 0 && matches!(m.implementer, 0x00 | 0x41 | 0x61)
}

/// `0-3,6` from ascending CPU numbers.
pub fn cpu_list(cpus: &[u32]) -> String {
    crate::linux::CpuList::from_cpus(cpus.iter().map(|&c| c as usize)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pg_test_timing_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = gather(dir.path(), 1_000_000, None);
        assert_eq!(
            r.frequency_lines(),
            vec![
                "Generic timer frequency source: arm64, CNTFRQ_EL0",
                "Generic timer frequency in use: 1000 kHz",
                "Generic timer resolution: 1000 ns",
                "Warning: coarse: single reads useless for EXPLAIN: each read is only accurate to 1000 ns \
(CNTFRQ_EL0 = 1000000 Hz, below 10 MHz)",
            ]
        );
        assert!(r.decision_line().contains("not trustworthy here"));
        assert!(r.decision_line().contains(": no CPU identification found"));
        r.calibration_failed = Some("did not converge: budget spent".into());
        assert_eq!(r.frequency_lines()[2], "Generic timer calibration did not converge");
        let cal = CalibrationEvidence {
            reference: "clock_gettime (CLOCK_MONOTONIC_RAW)".into(),
            calibrated_hz: 1_000_012.0,
            uncertainty_ppm: 1.0,
        };
        let r = gather(dir.path(), 1_000_000, Some(&cal));
        assert_eq!(
            r.frequency_lines()[2],
            "Generic timer frequency from calibration: 1000 kHz (+12.0 ppm, against clock_gettime (CLOCK_MONOTONIC_RAW))"
        );
        assert!(!r.notes.iter().any(|n| n.contains("kernel's arithmetic")));
        // The counter is the kernel's clocksource: the calibration is circular.
        let cs = dir.path().join("sys/devices/system/clocksource/clocksource0");
        std::fs::create_dir_all(&cs).unwrap();
        std::fs::write(cs.join("current_clocksource"), "arch_sys_counter\n").unwrap();
        let r = gather(dir.path(), 1_000_000, Some(&cal));
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("check of the kernel's arithmetic, not independent")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn cpu_lists_are_compact() {
        assert_eq!(cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(cpu_list(&[5]), "5");
        assert_eq!(cpu_list(&[]), "");
    }

    #[test]
    fn empty_root_is_not_trusted_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let r = gather(dir.path(), 24_000_000, None);
        assert!(!r.trusted);
        assert_eq!(r.reasons.len(), 1, "{:?}", r.reasons);
        assert!(r.reasons[0].starts_with("no CPU identification found"));
        assert!(r.notes.iter().any(|n| n.contains("neither a device tree nor ACPI")));
        assert_eq!(r.frequency_khz_text(), "24000");
    }
}
