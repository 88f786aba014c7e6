//! `clockscope cross-cpu`: the kernel's warp test and a ping-pong offset estimate for every CPU pair.

use crate::cli::{parse_seconds, ReportFormat};
use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct CrossCpuArgs {
    /// Total measuring time in seconds (fractions allowed), shared by all CPU pairs.
    #[arg(short, long, value_name = "SECONDS", default_value = "1", value_parser = parse_seconds)]
    pub duration: f64,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &CrossCpuArgs, out: &mut dyn std::io::Write) -> anyhow::Result<u8> {
    let _ = (args, out);
    anyhow::bail!("not built yet")
}
