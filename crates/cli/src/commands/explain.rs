//! `clockscope explain`: EXPLAIN ANALYZE's timing overhead on a real PostgreSQL, next to the prediction.

use crate::cli::ReportFormat;
use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// libpq conninfo string or URI (default: PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD).
    #[arg(long, value_name = "CONNINFO")]
    pub dsn: Option<String>,

    /// Rows in the TEMP table (1..=1000000000).
    #[arg(long, default_value = "1000000", allow_negative_numbers = true)]
    pub rows: String,

    /// EXPLAIN runs per timing mode, after a warm-up.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &ExplainArgs, out: &mut dyn std::io::Write) -> anyhow::Result<u8> {
    let _ = (args, out);
    anyhow::bail!("not built yet")
}
