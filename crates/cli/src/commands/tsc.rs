//! `clockscope tsc`: the TSC's CPUID and kernel evidence, its frequency from every source, and trust.

use crate::cli::ReportFormat;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct TscArgs {
    /// Analyse a recorded CPUID dump (`cpuid -r` or InstLatX64/AIDA64 format) instead of this CPU.
    #[arg(long, value_name = "FILE")]
    pub cpuid_dump: Option<PathBuf>,

    /// Upper bound of the calibration against CLOCK_MONOTONIC_RAW, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub calibration_ms: u64,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,

    /// Read /sys and /proc under this directory instead of / (for tests and support bundles).
    #[arg(long, value_name = "DIR", hide = true)]
    pub root: Option<PathBuf>,
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &TscArgs, out: &mut dyn std::io::Write) -> anyhow::Result<u8> {
    let _ = (args, out);
    anyhow::bail!("not built yet")
}
