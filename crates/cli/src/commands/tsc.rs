//! `clockscope tsc`: the TSC's CPUID and kernel evidence, its frequency from
//! every source, which frequency PostgreSQL 19 and clockscope use, and both
//! trust decisions, as text or JSON ([`clockscope::tsc::TscReport`]).

use crate::args::ReportFormat;
use crate::exit;
use crate::model::stamp::ReportStamp;
use clap::Args;
use clockscope::counter::{self, CounterKind, Discovery};
use clockscope::tsc::cpuid::{parse_dump, record_native};
use clockscope::tsc::TscReport;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Version of `tsc`'s JSON layout (`schema_version`, docs/schema/tsc.schema.json).
pub const SCHEMA_VERSION: u32 = 1;
/// Version of the aarch64 generic timer's (docs/schema/generic-timer.schema.json).
pub const GENERIC_TIMER_SCHEMA_VERSION: u32 = 1;

#[derive(Args, Debug, Clone)]
pub struct TscArgs {
    /// Analyse a recorded CPUID dump (`cpuid -r` or InstLatX64/AIDA64 format) instead of this CPU.
    #[arg(long, value_name = "FILE")]
    pub cpuid_dump: Option<PathBuf>,

    /// Print this CPU's CPUID leaves in `cpuid -r` format (readable by --cpuid-dump) and exit.
    #[arg(long, conflicts_with_all = ["cpuid_dump", "format"])]
    pub print_cpuid: bool,

    /// Upper bound of the calibration against CLOCK_MONOTONIC_RAW, in milliseconds.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = crate::commands::environment::REPORT_CALIBRATION_NS / 1_000_000,
        value_parser = clap::value_parser!(u64).range(1..=10_000),
        allow_hyphen_values = true
    )]
    pub calibration_ms: u64,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,

    /// Read /sys and /proc under this directory instead of / (for tests and support bundles).
    #[arg(long, value_name = "DIR", hide = true)]
    pub root: Option<PathBuf>,
}

/// Reads a dump file as text through [`clockscope::input`]: a regular file
/// only (a FIFO or device is refused at once), at most
/// [`clockscope::input::CPUID_DUMP`] bytes (4 MiB).
fn read_dump(path: &Path) -> anyhow::Result<String> {
    clockscope::input::read_text(path, &clockscope::input::CPUID_DUMP).map_err(|e| anyhow::anyhow!("--cpuid-dump {e}"))
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &TscArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    if args.print_cpuid {
        let rec = record_native()
            .ok_or_else(|| anyhow::anyhow!("--print-cpuid: this CPU has no CPUID ({})", std::env::consts::ARCH))?;
        write!(out, "{rec}")?;
        return Ok(exit::OK);
    }
    // On aarch64 the counter is the generic timer, not a TSC: report that
    // (a recorded x86 CPUID dump can still be analysed).
    if args.cpuid_dump.is_none() && counter::native_kind() == Some(CounterKind::GenericTimer) {
        let root = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
        let discovery = Discovery::full(args.calibration_ms * 1_000_000);
        let report = counter::discover_with(&root, None, &discovery, &counter::discover::full_budget);
        if let Some(timer) = report.generic_timer() {
            let stamp = ReportStamp::now(GENERIC_TIMER_SCHEMA_VERSION);
            match args.format {
                ReportFormat::Json => crate::export::json::write_stamped(out, &stamp, timer)?,
                ReportFormat::Text => {
                    crate::export::text::write_header(out, &stamp)?;
                    crate::export::tsc::generic_timer::write(out, timer)?
                }
            }
            return Ok(exit::OK);
        }
    }
    let report = match &args.cpuid_dump {
        Some(path) => {
            let text = read_dump(path)?;
            let dump = parse_dump(&text).map_err(|e| {
                anyhow::anyhow!(
                    "--cpuid-dump {}: {e}",
                    clockscope::escape::escape_untrusted(&path.to_string_lossy())
                )
            })?;
            TscReport::from_dump(&dump)
        }
        None => {
            let root = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
            if !root.is_dir() {
                anyhow::bail!("--root {}: not a directory", root.display());
            }
            clockscope::tsc::detect(&root, args.calibration_ms * 1_000_000)
        }
    };
    let stamp = ReportStamp::now(SCHEMA_VERSION);
    match args.format {
        ReportFormat::Json => crate::export::json::write_stamped(out, &stamp, &report)?,
        ReportFormat::Text => {
            crate::export::text::write_header(out, &stamp)?;
            crate::export::tsc::text::write(out, &report, args.cpuid_dump.as_deref())?
        }
    }
    Ok(exit::OK)
}
