//! `clockscope tsc`: the TSC's CPUID and kernel evidence, its frequency from
//! every source, which frequency PostgreSQL 19 and clockscope use, and both
//! trust decisions, as text or JSON ([`clockscope_system::tsc::TscReport`]); with
//! the independent evidence beside it: the NTP state (adjtimex) and, with
//! `--drift SECONDS`, the counter's rate against CLOCK_REALTIME and
//! CLOCK_MONOTONIC_RAW over a window ([`TscOutput`]).

use crate::args::ReportFormat;
use crate::commands::tsc::model::{GenericTimerOutput, TscOutput, GENERIC_TIMER_SCHEMA_VERSION, SCHEMA_VERSION};
use crate::exit;
use crate::report::stamp::{ReportStamp, Stamped};
use crate::report::text::Detail;
use crate::report::Renderer;
use clap::Args;
use clockscope_system::counter::drift::{DriftPlan, DriftReport};
use clockscope_system::counter::{self, CounterKind, Discovery};
use clockscope_system::tsc::cpuid::{parse_dump, record_native};
use clockscope_system::tsc::TscReport;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone)]
pub struct TscArgs {
    /// Analyse a recorded CPUID dump (`cpuid -r` or InstLatX64/AIDA64 format) instead of this CPU.
    #[arg(long, value_name = "FILE")]
    pub cpuid_dump: Option<PathBuf>,

    /// Print this CPU's CPUID leaves in `cpuid -r` format (readable by --cpuid-dump) and exit.
    #[arg(long, conflicts_with_all = ["cpuid_dump", "format"])]
    pub print_cpuid: bool,

    /// Upper bound of the calibration against CLOCK_MONOTONIC_RAW: a plain number is milliseconds, or give a
    /// unit (`50ms`, `2s`); 1 ms to 10 s.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = crate::commands::environment::REPORT_CALIBRATION_NS / 1_000_000,
        value_parser = crate::args::parse_calibration_ms,
        allow_hyphen_values = true
    )]
    pub calibration_ms: u64,

    /// Also measure the counter against CLOCK_REALTIME (NTP-disciplined) and CLOCK_MONOTONIC_RAW
    /// over this long (a plain number is seconds, or give a unit: `90s`, `5m`; whole seconds, 1 s to a day), in
    /// ppm with an uncertainty; Ctrl-C stops it with a partial result.
    #[arg(
        long,
        value_name = "SECONDS",
        conflicts_with_all = ["cpuid_dump", "print_cpuid"],
        value_parser = crate::args::parse_whole_seconds,
        allow_hyphen_values = true
    )]
    pub drift: Option<u64>,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,

    #[command(flatten)]
    pub output: crate::args::OutputArg,

    /// Read /sys and /proc under DIR instead of / (tests, support bundles); the same option as `sweep --root`.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    #[command(flatten)]
    pub verbose: crate::args::VerboseArg,
}

/// Reads a dump file as text through [`clockscope_system::input`]: a regular file
/// only (a FIFO or device is refused at once), at most
/// [`clockscope_system::input::CPUID_DUMP`] bytes (4 MiB).
fn read_dump(path: &Path) -> anyhow::Result<String> {
    clockscope_system::input::read_text(path, &clockscope_system::input::CPUID_DUMP)
        .map_err(|e| anyhow::anyhow!("--cpuid-dump {e}"))
}

/// Measures `--drift` against `nominal_hz`, telling stderr what it does.
fn measure_drift(seconds: u64, nominal_hz: f64) -> anyhow::Result<DriftReport> {
    exit::install_interrupt_handler();
    let _ = writeln!(
        std::io::stderr(),
        "{}",
        crate::t!(
            "measuring the counter's drift for {seconds} s (Ctrl-C stops it with a partial result)",
            seconds = seconds
        )
    );
    let plan = DriftPlan::new(seconds, nominal_hz);
    clockscope_system::counter::drift::measure_native_drift(&plan, exit::interrupted)
        .map_err(|e| anyhow::anyhow!("--drift: {e}"))
}

/// PostgreSQL's calibration runs this many times in all: it is what
/// PostgreSQL 19 uses where CPUID gives no frequency, and it differs in
/// every process, so its spread is part of what it will do here.
const POSTGRESQL_CALIBRATION_RUNS: usize = 5;

/// Runs PostgreSQL's calibration again (it converges in well under its
/// 50 ms limit) so the report can give its spread.
fn add_postgresql_calibration_runs(r: &mut TscReport) {
    let Some(view) = r.postgresql19.as_mut() else { return };
    if view.calibration_runs_khz.is_empty() {
        return;
    }
    let runs: Vec<u64> = (1..POSTGRESQL_CALIBRATION_RUNS)
        .map(|_| {
            clockscope_system::counter::calibrate::calibrate_postgresql_native()
                .khz
                .unwrap_or(0)
        })
        .collect();
    view.add_calibration_runs(&runs);
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &TscArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    if args.print_cpuid {
        let rec = record_native()
            .ok_or_else(|| anyhow::anyhow!("--print-cpuid: this CPU has no CPUID ({})", std::env::consts::ARCH))?;
        write!(out, "{rec}")?;
        return Ok(exit::OK);
    }
    let root = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    // On aarch64 the counter is the generic timer, not a TSC: report that
    // (a recorded x86 CPUID dump can still be analysed).
    if args.cpuid_dump.is_none() && counter::native_kind() == Some(CounterKind::GenericTimer) {
        let discovery = Discovery::full(args.calibration_ms * 1_000_000);
        let report = counter::discover_with(&root, None, &discovery, &counter::discover::full_budget);
        if let Some(timer) = report.generic_timer() {
            let drift = args
                .drift
                .map(|s| measure_drift(s, timer.frequency_hz as f64))
                .transpose()?;
            let partial = drift.as_ref().is_some_and(|d| !d.complete);
            let stamp = ReportStamp::now(GENERIC_TIMER_SCHEMA_VERSION);
            let output = GenericTimerOutput {
                report: timer,
                drift: drift.as_ref(),
            };
            generic_timer_renderer(args.format)(out, &stamp.on(&output))?;
            return Ok(if partial { exit::INTERRUPTED } else { exit::OK });
        }
    }
    let report = match &args.cpuid_dump {
        Some(path) => {
            let text = read_dump(path)?;
            let dump = parse_dump(&text).map_err(|e| {
                anyhow::anyhow!(
                    "--cpuid-dump {}: {e}",
                    clockscope_system::escape::escape_untrusted(&path.to_string_lossy())
                )
            })?;
            TscReport::from_dump(&dump)
        }
        None => {
            if !root.is_dir() {
                anyhow::bail!("--root {}: not a directory", root.display());
            }
            let mut r = clockscope_system::counter::detect_tsc(&root, args.calibration_ms * 1_000_000);
            add_postgresql_calibration_runs(&mut r);
            r
        }
    };
    let ntp = match &args.cpuid_dump {
        Some(_) => Err("not read: analysing a CPUID dump".to_string()),
        None => crate::commands::environment::read_ntp_under(&root),
    };
    let drift = match args.drift {
        None => None,
        Some(seconds) => {
            let nominal_khz = report.clockscope_frequency.khz.ok_or_else(|| {
                anyhow::anyhow!(
                    "--drift: no TSC frequency in use to measure against ({})",
                    report.clockscope_frequency.why
                )
            })?;
            Some(measure_drift(seconds, nominal_khz as f64 * 1000.0)?)
        }
    };
    let partial = drift.as_ref().is_some_and(|d| !d.complete);
    let output = TscOutput {
        report: &report,
        ntp_unavailable: ntp.as_ref().err().cloned(),
        ntp: ntp.ok(),
        drift,
        dump: args.cpuid_dump.as_deref(),
    };
    let stamp = ReportStamp::now(SCHEMA_VERSION);
    renderer(args.format, args.verbose.verbose)(out, &stamp.on(&output))?;
    // Ctrl-C cut the drift window short: the report is printed, labelled partial.
    Ok(if partial { exit::INTERRUPTED } else { exit::OK })
}

/// The renderer of `format` on x86: the one-screen text unless `verbose`.
pub fn renderer<'a>(format: ReportFormat, verbose: bool) -> Renderer<Stamped<'a, TscOutput<'a>>> {
    match format {
        ReportFormat::Text if verbose => |out, m| crate::commands::tsc::text::write_stamped(out, m, Detail::Full),
        ReportFormat::Text => |out, m| crate::commands::tsc::text::write_stamped(out, m, Detail::Screen),
        ReportFormat::Json => crate::report::json::write as Renderer<_>,
    }
}

/// The renderer of `format` for the ARM generic timer (aarch64).
pub fn generic_timer_renderer<'a>(format: ReportFormat) -> Renderer<Stamped<'a, GenericTimerOutput<'a>>> {
    match format {
        ReportFormat::Text => crate::commands::tsc::generic_timer::write_output,
        ReportFormat::Json => crate::report::json::write as Renderer<_>,
    }
}
