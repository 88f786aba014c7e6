//! `clockscope cross-cpu`: the kernel's warp test and a ping-pong offset
//! estimate for every pair of the CPUs this process may run on, for the CPU
//! counter (RDTSCP / ISB;CNTVCT_EL0) and clock_gettime(CLOCK_MONOTONIC).
//!
//! Pipeline: CPUs (affinity mask, online, cgroup cpuset) -> counter
//! frequency (calibration) -> `clockscope::crosscpu::run_all` -> text or JSON.
//! Exit status: 0 nothing wrong, 1 a warp or a proven offset, 2 an error, 130
//! interrupted (what was measured is printed).

pub mod prometheus;
pub mod render;

use crate::cli::{parse_seconds, seconds_to_ns};
use crate::{exit, progress};
use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use clockscope::crosscpu::{self, clocks, CpuContext, CrossCpuReport, OsPinner, PairMode, Settings};
use clockscope::linux::CpuList;
use clockscope::tsc::calibrate::{calibrate_tsc, Calibration};
use clockscope::Scale;
use std::path::Path;

/// How long the counter is calibrated before the tests (not part of `-d`):
/// enough for an uncertainty of a few ppm, which is far below what a warp or
/// offset of tens of ns needs.
pub const CALIBRATION_BUDGET_NS: u64 = 20_000_000;

/// Output format of `cross-cpu`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CrossCpuFormat {
    #[default]
    Text,
    Json,
    /// Gauges for node_exporter's textfile collector (docs/metrics.md).
    Prometheus,
}

/// Which CPU pairs to test.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PairsArg {
    /// Every pair: N*(N-1)/2.
    #[default]
    All,
    /// Each CPU with the first one: N-1 (as the kernel checks each CPU against the boot CPU).
    First,
}

#[derive(Args, Debug, Clone)]
pub struct CrossCpuArgs {
    /// Total measuring time in seconds (fractions allowed), shared by all CPU pairs.
    #[arg(
        short,
        long,
        value_name = "SECONDS",
        default_value = "1",
        value_parser = parse_seconds,
        allow_hyphen_values = true
    )]
    pub duration: f64,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: CrossCpuFormat,

    /// CPUs to test, as a CPU list (`0-3,8`); all must be allowed by the
    /// affinity mask. Default: every allowed CPU.
    #[arg(long, value_name = "LIST", value_parser = parse_cpus, allow_hyphen_values = true)]
    pub cpus: Option<CpuSelection>,

    /// Which CPU pairs to test.
    #[arg(long, value_enum, default_value_t)]
    pub pairs: PairsArg,
}

/// The CPUs given with `--cpus`, sorted and distinct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuSelection(pub Vec<usize>);

fn parse_cpus(s: &str) -> Result<CpuSelection, String> {
    let cpus = CpuList::parse(s).map_err(|e| e.to_string())?;
    if cpus.is_empty() {
        return Err("the CPU list is empty".to_string());
    }
    if cpus.len() < 2 {
        return Err(format!("'{s}' names one CPU: a pair needs at least two"));
    }
    Ok(CpuSelection(cpus.cpus().collect()))
}

/// The CPUs to test: `--cpus` (each must be allowed) or every allowed CPU.
pub fn select_cpus(requested: Option<&[usize]>, allowed: &[usize]) -> anyhow::Result<Vec<usize>> {
    let Some(requested) = requested else {
        return Ok(allowed.to_vec());
    };
    if let Some(cpu) = requested.iter().find(|c| !allowed.contains(c)) {
        bail!(
            "--cpus: CPU {cpu} is not among the CPUs this process may run on ({}, from sched_getaffinity)",
            render::cpu_list(allowed)
        );
    }
    Ok(requested.to_vec())
}

/// Everything the command reports.
pub struct Outcome {
    pub context: CpuContext,
    pub calibration: Option<Calibration>,
    pub report: CrossCpuReport,
    /// Why nothing was measured (fewer than two CPUs).
    pub note: Option<String>,
}

impl Outcome {
    /// The exit status: 130 interrupted, 1 a problem, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.report.interrupted {
            exit::INTERRUPTED
        } else if self.report.has_problem() {
            exit::PROBLEM
        } else {
            exit::OK
        }
    }
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &CrossCpuArgs, out: &mut dyn std::io::Write) -> anyhow::Result<u8> {
    exit::install_interrupt_handler();
    let context = crosscpu::cpu_context(Path::new("/")).context("cannot tell which CPUs this process may use")?;
    let cpus = select_cpus(args.cpus.as_ref().map(|c| c.0.as_slice()), &context.allowed)?;
    let budget_ns = seconds_to_ns(args.duration);
    let pair_mode = match args.pairs {
        PairsArg::All => PairMode::All,
        PairsArg::First => PairMode::First,
    };
    let outcome = if cpus.len() < 2 {
        // `--cpus` needs two CPUs (its parser says so), so one CPU here is the affinity mask's doing.
        let note = format!(
            "only CPU {} is available to this process (sched_getaffinity): there is no CPU pair to compare",
            render::cpu_list(&cpus)
        );
        Outcome {
            report: CrossCpuReport {
                cpus,
                pair_mode,
                clocks: Vec::new(),
                pairs_planned: 0,
                budget_ns,
                test_ns: 0,
                min_handovers: crosscpu::DEFAULT_MIN_HANDOVERS,
                pairs: Vec::new(),
                interrupted: false,
                elapsed_ns: 0,
            },
            context,
            calibration: None,
            note: Some(note),
        }
    } else {
        measure(cpus, pair_mode, budget_ns, context)?
    };
    match args.format {
        CrossCpuFormat::Text => render::text(&outcome, out)?,
        CrossCpuFormat::Json => render::json(&outcome, out)?,
        CrossCpuFormat::Prometheus => prometheus::write(&outcome, out)?,
    }
    Ok(outcome.exit_code())
}

fn measure(cpus: Vec<usize>, pair_mode: PairMode, budget_ns: u64, context: CpuContext) -> anyhow::Result<Outcome> {
    let calibration = calibrate_tsc(CALIBRATION_BUDGET_NS);
    let scale = calibration.hz.and_then(Scale::from_hz);
    let source = scale.map(|_| render::calibration_source(&calibration));
    let clocks = clocks::default_clocks(scale, source);
    // run_all reports the planned total with every step.
    let bar = progress::bar("cross-cpu", budget_ns);
    let settings = Settings {
        pair_mode,
        ..Settings::new(budget_ns, &OsPinner, &exit::interrupted)
    };
    let report = crosscpu::run_all(&cpus, &clocks, &settings, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    Ok(Outcome {
        context,
        calibration: Some(calibration),
        report: report?,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_selection() {
        assert_eq!(select_cpus(None, &[0, 1]).unwrap(), vec![0, 1]);
        assert_eq!(select_cpus(Some(&[1]), &[0, 1]).unwrap(), vec![1]);
        let e = select_cpus(Some(&[0, 5]), &[0, 1]).unwrap_err().to_string();
        assert_eq!(
            e,
            "--cpus: CPU 5 is not among the CPUs this process may run on (0-1, from sched_getaffinity)"
        );
        assert_eq!(parse_cpus("0-1"), Ok(CpuSelection(vec![0, 1])));
        assert!(parse_cpus(" ").unwrap_err().contains("empty"));
        assert!(parse_cpus("1-0").unwrap_err().contains("ends before it starts"));
    }
}
