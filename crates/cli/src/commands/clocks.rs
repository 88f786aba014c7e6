//! `clockscope clocks`: every clock source, whether it works here, its resolution.

use crate::cli::ReportFormat;
use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct ClocksArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &ClocksArgs, out: &mut dyn std::io::Write) -> anyhow::Result<u8> {
    let _ = (args, out);
    anyhow::bail!("not built yet")
}
