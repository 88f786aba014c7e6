//! The TSC report: CPUID facts, kernel evidence, every frequency source and
//! both decisions, as one serialisable value (`clockscope tsc`, and embedded
//! in `clockscope check`).
//!
//! [`TscReport::build`] judges the evidence it is given (this machine's is
//! gathered, calibrations included, by [`crate::counter::detect_tsc`] and
//! [`crate::counter::discover()`]); [`TscReport::from_dump`] analyses a
//! recorded CPUID dump, where no kernel evidence or calibration exists.

use super::cpuid::{CpuidFacts, DumpFormat, ParsedDump};
use super::frequency::{
    frequency_report, Agreement, CalibrationInput, ClockscopeChoice, FrequencyInputs, FrequencySource, PostgresChoice,
};
use super::policy::{clockscope_decision, postgres_auto, KernelEvidence, PostgresAuto, TscDecision};
use crate::evidence::Calibration;
use serde::Serialize;

/// Where the evidence came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReportSource {
    /// This machine: native CPUID, the kernel under `root`, calibrations.
    ThisMachine {
        /// The root the kernel's files were read under.
        root: String,
    },
    /// A recorded dump: CPUID only.
    CpuidDump {
        /// The dump's format.
        format: &'static str,
        /// How many leaves it holds.
        leaves: usize,
    },
}

/// Everything `clockscope tsc` reports. The first fields are the stable,
/// documented JSON keys.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct TscReport {
    /// CPU vendor string (`null` without CPUID).
    pub vendor: Option<String>,
    /// Display family (extended rules applied).
    pub family: Option<u32>,
    /// Display model (extended rules applied).
    pub model: Option<u32>,
    /// Stepping.
    pub stepping: Option<u32>,
    /// Brand string (escaped).
    pub brand: Option<String>,
    /// CPUID 0x80000007 EDX bit 8.
    pub invariant_tsc: Option<bool>,
    /// CPUID 0x80000001 EDX bit 27.
    pub rdtscp: Option<bool>,
    /// CPUID 7.0 EBX bit 1.
    pub tsc_adjust: Option<bool>,
    /// The hypervisor signature when the hypervisor bit is set (`""` when the
    /// signature is empty), `null` on bare metal.
    pub hypervisor: Option<String>,
    /// Best CPUID-derived TSC kHz by Linux's rules (`null` if none).
    pub cpuid_tsc_khz: Option<u64>,
    /// The Linux rule `cpuid_tsc_khz` follows: leaf 0x15 crystal x ratio,
    /// 0x15 with Linux's known crystal, 0x15 with the crystal from 0x16, 0x16
    /// base MHz, or the hypervisor leaf 0x40000010 (VMware/ACRN); or why none applies.
    pub cpuid_tsc_rule: String,
    /// PostgreSQL 19's CPUID-derived TSC kHz (`null`: it would calibrate or has no TSC).
    pub postgresql_tsc_khz: Option<u64>,
    /// Every frequency source: `{source, id, khz, note, uncertainty_ppm, ppm_vs_in_use, flagged}`.
    pub frequency_sources: Vec<FrequencySource>,
    /// The frequency PostgreSQL 19 would use and why.
    pub postgresql_frequency: PostgresChoice,
    /// The frequency clockscope uses and why.
    pub clockscope_frequency: ClockscopeChoice,
    /// Whether the measuring sources agree with the one in use.
    pub frequency_agreement: Agreement,
    /// PostgreSQL 19's `timing_clock_source = auto` decision.
    pub postgresql_auto: PostgresAuto,
    /// clockscope's decision.
    pub clockscope_decision: TscDecision,
    /// Where the evidence came from.
    pub evidence_source: ReportSource,
    /// Decoded CPUID in full (`null` without CPUID).
    pub cpuid: Option<CpuidFacts>,
    /// Kernel evidence (`null` for a dump).
    pub linux: Option<KernelEvidence>,
    /// clockscope's calibration as run (`null` for a dump or without a TSC).
    pub calibration: Option<Calibration>,
    /// PostgreSQL 19's calibration as run (`null` for a dump or without a TSC).
    pub postgresql_calibration: Option<Calibration>,
    /// What PostgreSQL 19 will do with the TSC here (pg_test_timing's
    /// frequency lines, its 10% cross-check, `auto`, its calibration's
    /// spread and distance to clockscope's frequency); `None` without CPUID.
    pub postgresql19: Option<super::pg19::Pg19View>,
}

/// The kernel's own TSC kHz from the perf mmap page (time_mult/time_shift),
/// with how it was read, or why it is not published here.
pub fn perf_page_khz() -> Result<(u64, String), String> {
    let scale = crate::linux::perf::read_tsc_scale().map_err(|e| e.0)?;
    let khz = scale.khz().ok_or("the perf page's time_mult is 0")?;
    let how = format!(
        "time_mult {} >> time_shift {} ({} event)",
        scale.time_mult, scale.time_shift, scale.event
    );
    Ok((khz, how))
}

/// The live inputs of [`TscReport::build`] besides CPUID.
#[derive(Clone, Debug)]
pub struct LiveEvidence {
    /// The root the kernel's files were read under, as reported.
    pub root: String,
    /// The kernel's evidence.
    pub kernel: KernelEvidence,
    /// The kernel's perf mmap page TSC kHz, with how it was read, or why not.
    pub perf_page_khz: Result<(u64, String), String>,
    /// clockscope's calibration, or why it did not run.
    pub calibration: Result<Calibration, String>,
    /// PostgreSQL 19's calibration algorithm's result, or why it did not run.
    pub postgresql_calibration: Result<Calibration, String>,
    /// Hints of a time library in this process (`LD_PRELOAD`, mapped
    /// libraries: `time_library_hints`),
    /// added to a gross frequency disagreement as supporting evidence.
    pub time_libraries: Vec<String>,
}

impl TscReport {
    /// Analyses a parsed CPUID dump: no kernel evidence, no calibration.
    pub fn from_dump(dump: &ParsedDump) -> TscReport {
        TscReport::build(
            Some(CpuidFacts::from_recorded(&dump.leaves)),
            None,
            Some((dump.format, dump.leaves.len())),
        )
    }

    /// Builds the report from injected evidence (tests use this directly).
    /// `live` is `None` for a dump.
    pub fn build(
        cpuid: Option<CpuidFacts>,
        live: Option<LiveEvidence>,
        dump: Option<(DumpFormat, usize)>,
    ) -> TscReport {
        let dump_reason = "not read: analysing a CPUID dump".to_string();
        let (perf_page_khz, kernel_log_khz, calibration, postgres_calibration) = match &live {
            None => (
                Err(dump_reason.clone()),
                Err(dump_reason.clone()),
                Err(dump_reason.clone()),
                Err(dump_reason.clone()),
            ),
            Some(l) => {
                let log = match &l.kernel.kernel_log {
                    crate::linux::Evidence::Found(log) => match (log.tsc_khz, log.tsc_khz_message) {
                        (Some(k), Some(m)) => Ok((k, m.trim_start_matches("kernel log, ").to_string())),
                        _ => Err(format!("no \"tsc: Detected/Refined\" line in {} records", log.records)),
                    },
                    other => Err(other.reason().unwrap_or("").to_string()),
                };
                let cal =
                    |c: &Result<Calibration, String>| c.as_ref().map(CalibrationInput::from).map_err(Clone::clone);
                (
                    l.perf_page_khz.clone(),
                    log,
                    cal(&l.calibration),
                    cal(&l.postgresql_calibration),
                )
            }
        };
        let clocksource_is_counter = live
            .as_ref()
            .is_some_and(|l| l.kernel.current_clocksource.found().is_some_and(|c| c == "tsc"));
        let mut freq = frequency_report(&FrequencyInputs {
            cpuid: cpuid.as_ref(),
            perf_page_khz,
            kernel_log_khz,
            calibration,
            postgres_calibration,
            clocksource_is_counter,
        });
        if let Some(l) = &live {
            freq.agreement.add_time_library_hints(&l.time_libraries);
        }

        let kernel = live.as_ref().map(|l| &l.kernel);
        let current_clocksource: Result<&str, &str> = match kernel.map(|k| &k.current_clocksource) {
            None => Err("analysing a CPUID dump"),
            Some(c) => c.found().map(String::as_str).ok_or(c.reason().unwrap_or("")),
        };
        let pg_auto = postgres_auto(
            freq.postgresql.khz,
            freq.postgresql.source,
            cpuid.as_ref().is_some_and(|f| f.tsc_adjust),
            current_clocksource,
        );
        let decision = clockscope_decision(cpuid.as_ref(), kernel, &freq);

        let evidence_source = match (&live, dump) {
            (Some(l), _) => ReportSource::ThisMachine { root: l.root.clone() },
            (None, Some((format, leaves))) => ReportSource::CpuidDump {
                format: format.name(),
                leaves,
            },
            (None, None) => ReportSource::CpuidDump {
                format: "injected",
                leaves: 0,
            },
        };

        let cpuid_for_pg = cpuid.clone();
        TscReport {
            vendor: cpuid.as_ref().map(|f| f.vendor.clone()),
            family: cpuid.as_ref().map(|f| f.family),
            model: cpuid.as_ref().map(|f| f.model),
            stepping: cpuid.as_ref().map(|f| f.stepping),
            brand: cpuid.as_ref().and_then(|f| f.brand.clone()),
            invariant_tsc: cpuid.as_ref().map(|f| f.invariant_tsc),
            rdtscp: cpuid.as_ref().map(|f| f.rdtscp),
            tsc_adjust: cpuid.as_ref().map(|f| f.tsc_adjust),
            hypervisor: cpuid
                .as_ref()
                .filter(|f| f.hypervisor_bit)
                .map(|f| f.hypervisor.as_ref().map(|h| h.signature.clone()).unwrap_or_default()),
            cpuid_tsc_khz: freq.cpuid_tsc_khz,
            cpuid_tsc_rule: freq.cpuid_tsc_rule.clone(),
            postgresql_tsc_khz: freq.postgresql_tsc_khz,
            frequency_sources: freq.sources.clone(),
            postgresql_frequency: freq.postgresql.clone(),
            clockscope_frequency: freq.clockscope.clone(),
            frequency_agreement: freq.agreement.clone(),
            postgresql_auto: pg_auto,
            clockscope_decision: decision,
            evidence_source,
            cpuid,
            linux: live.as_ref().map(|l| l.kernel.clone()),
            calibration: live.as_ref().and_then(|l| l.calibration.clone().ok()),
            postgresql_calibration: live.as_ref().and_then(|l| l.postgresql_calibration.clone().ok()),
            postgresql19: pg19_view(cpuid_for_pg.as_ref(), live.as_ref(), freq.clockscope.khz),
        }
    }

    /// The entry of one frequency source.
    pub fn source(&self, id: super::frequency::SourceId) -> &FrequencySource {
        self.frequency_sources
            .iter()
            .find(|s| s.id == id)
            .expect("every source is listed")
    }
}

/// PostgreSQL 19's view for the report: its CPUID decision, with its
/// calibration when this machine's was run (a dump has none: a frequency
/// that would come from it reads 0, "did not converge").
fn pg19_view(
    cpuid: Option<&CpuidFacts>,
    live: Option<&LiveEvidence>,
    clockscope_khz: Option<u64>,
) -> Option<super::pg19::Pg19View> {
    let f = cpuid?;
    let clocksource = live.and_then(|l| {
        l.kernel
            .current_clocksource
            .found()
            .map(|s| format!("{s}\n").into_bytes())
    });
    let runs: Vec<u64> = live
        .and_then(|l| l.postgresql_calibration.as_ref().ok())
        .map(|c| vec![c.khz.unwrap_or(0)])
        .unwrap_or_default();
    Some(super::pg19::Pg19View::new(
        f,
        clocksource.as_deref(),
        &runs,
        clockscope_khz,
    ))
}
