//! `clockscope check` (the default): measure the clocks that matter, describe
//! the environment and give a verdict a person can act on.
//!
//! Pipeline: arguments -> environment (cheap: sysfs, /proc, CPUID) -> measure
//! each clock (the library's loop; a progress bar between chunks) -> stats
//! from the histograms -> verdict -> one export format. The TSC report with
//! its calibration is gathered after the measurements, so the first
//! measurement starts without waiting for a calibration when the frequency is
//! known from CPUID or the kernel.

pub mod report;
pub mod stats;
pub mod verdict;

pub mod environment;

use crate::cli::{parse_clock, parse_seconds, seconds_to_ns, CheckFormat};
use crate::{export, progress};
use anyhow::{bail, Context};
use clap::Args;
use clockscope::clock::{self, ClockId, ClockSource, ClockVisitor};
use clockscope::counter::{self, CounterDetails};
use clockscope::linux::LinuxEvidence;
use clockscope::measure::{measure, observed_step_ns, Control, Measurement};
use report::{CheckReport, Skipped};
use stats::ClockStats;
use std::io::Write;
use std::path::{Path, PathBuf};
use verdict::VerdictInputs;

#[derive(Args, Debug, Clone, Default)]
pub struct CheckArgs {
    /// Seconds to measure each clock (fractions allowed).
    #[arg(short, long, value_name = "SECONDS", default_value = "1", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub duration: f64,

    /// Measure this clock (repeatable); see `clockscope clocks` for the names.
    #[arg(long = "clock", value_name = "NAME", value_parser = parse_clock)]
    pub clocks: Vec<clockscope::ClockId>,

    /// Measure every clock that works here.
    #[arg(long, conflicts_with = "clocks")]
    pub all: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: CheckFormat,

    /// Also draw the measured clocks' duration distributions to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// ns per row of a count(*) with TIMING OFF, to predict EXPLAIN ANALYZE's slowdown
    /// (default: 42.66 ns, PostgreSQL 19's 10M-row benchmark on pgsql-hackers; `clockscope explain` measures yours).
    #[arg(long, value_name = "NS", allow_hyphen_values = true, value_parser = parse_baseline_row_ns)]
    pub baseline_row_ns: Option<f64>,
}

/// The clocks measured by default: the system clock and the CPU counter's
/// precise and fast reads (PostgreSQL 19's three).
pub fn default_clocks() -> Vec<ClockId> {
    let counters = [counter::arch::PRECISE, counter::arch::FAST];
    let mut v = vec![ClockId::Monotonic];
    v.extend(counters.into_iter().flatten().filter(|c| c.is_supported().is_ok()));
    v
}

/// The clocks to measure for `args`.
pub fn selected_clocks(args: &CheckArgs) -> Vec<ClockId> {
    if args.all {
        ClockId::ALL.into_iter().filter(|c| c.is_supported().is_ok()).collect()
    } else if args.clocks.is_empty() {
        default_clocks()
    } else {
        let mut v = Vec::new();
        for c in &args.clocks {
            if !v.contains(c) {
                v.push(*c);
            }
        }
        v
    }
}

/// Plausible ns per row of a count(*) with TIMING OFF: 0.1 ns (faster than any
/// executor) to 1 ms (a row per millisecond is no longer a scan).
pub const MIN_BASELINE_ROW_NS: f64 = 0.1;
pub const MAX_BASELINE_ROW_NS: f64 = 1_000_000.0;

/// Parses `--baseline-row-ns`: a number of ns in the plausible range.
pub fn parse_baseline_row_ns(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of nanoseconds"))?;
    if !(MIN_BASELINE_ROW_NS..=MAX_BASELINE_ROW_NS).contains(&v) {
        return Err(format!(
            "'{s}' must be between {MIN_BASELINE_ROW_NS} and {MAX_BASELINE_ROW_NS} ns per row"
        ));
    }
    Ok(v)
}

/// The `--plot` file, created before measuring so an unwritable path fails
/// at once; removed again unless the plot is written.
pub struct PlotFile {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl PlotFile {
    /// Creates (truncates) the file at `path`.
    pub fn create(path: &Path) -> anyhow::Result<PlotFile> {
        if path.is_dir() {
            bail!("--plot {}: is a directory", path.display());
        }
        let file = std::fs::File::create(path).map_err(|e| anyhow::anyhow!("--plot {}: {e}", path.display()))?;
        Ok(PlotFile {
            path: path.to_path_buf(),
            file: Some(file),
        })
    }

    /// Draws the report into the file.
    pub fn write(mut self, report: &CheckReport) -> anyhow::Result<()> {
        let svg = export::svg::render(report).with_context(|| format!("--plot {}: drawing", self.path.display()))?;
        let mut file = self.file.take().expect("the file is written once");
        file.write_all(svg.as_bytes())
            .and_then(|_| file.sync_all())
            .map_err(|e| anyhow::anyhow!("--plot {}: {e}", self.path.display()))?;
        self.path = PathBuf::new(); // written: keep it
        Ok(())
    }
}

impl Drop for PlotFile {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

struct MeasureClock<'a> {
    duration_ns: u64,
    bar: &'a indicatif::ProgressBar,
}

impl ClockVisitor for MeasureClock<'_> {
    type Output = (Measurement, Option<u64>);
    fn visit<C: ClockSource>(self, clock: &C) -> Self::Output {
        self.bar.set_position(0);
        self.bar.set_prefix(clock.name().to_string());
        crate::startup::first_measurement(clock.name());
        let m = measure(clock, self.duration_ns, |p| {
            self.bar.set_position(p.elapsed_ns.min(p.target_ns));
            if crate::exit::interrupted() {
                Control::Stop
            } else {
                Control::Continue
            }
        });
        let step = observed_step_ns(clock, &m);
        (m, step)
    }
}

/// Measures `clocks` for `duration_ns` each; counters use `counter`'s scale.
pub fn measure_clocks(
    clocks: &[ClockId],
    duration_ns: u64,
    counter: &environment::CounterSetup,
) -> (Vec<ClockStats>, Vec<Skipped>, bool) {
    let counter_scale = counter.scale;
    let bar = progress::bar("measuring", duration_ns);
    let mut stats = Vec::new();
    let mut skipped = Vec::new();
    let mut interrupted = false;
    for &id in clocks {
        if interrupted {
            skipped.push(Skipped {
                name: id.cli_name().into(),
                reason: "interrupted before it was measured".into(),
            });
            continue;
        }
        match clock::visit(id, counter_scale, MeasureClock { duration_ns, bar: &bar }) {
            Ok((m, step)) => {
                interrupted |= m.interrupted;
                let khz = id.is_counter().then(|| counter_scale.map(|s| s.khz())).flatten();
                let mut s = ClockStats::from_measurement(id, &m, khz);
                s.resolution_ns = step;
                stats.push(s);
            }
            Err(e) => skipped.push(Skipped {
                name: id.cli_name().into(),
                reason: counter.skip_reason(&e),
            }),
        }
    }
    bar.finish_and_clear();
    (stats, skipped, interrupted)
}

/// Writes `report` in the requested format.
pub fn write_report(out: &mut dyn Write, report: &CheckReport, format: CheckFormat) -> anyhow::Result<()> {
    match format {
        CheckFormat::Text => export::text::write(out, report)?,
        CheckFormat::Json => export::json::write(out, report)?,
        CheckFormat::Prometheus => export::prometheus::write(out, report)?,
    }
    Ok(())
}

/// Assembles the report from what was measured and the environment (pure:
/// tests feed scripted measurements and a fake sysfs root).
pub fn build_report(
    args: &CheckArgs,
    linux: &LinuxEvidence,
    counter: &environment::CounterSetup,
    stats: Vec<ClockStats>,
    skipped: Vec<Skipped>,
    interrupted: bool,
    tsc: Option<CounterDetails>,
) -> CheckReport {
    let env = environment::build(linux, counter);
    let inputs = VerdictInputs {
        current_clocksource: env.current_clocksource.clone(),
        postgresql_auto_uses_tsc: counter.postgresql_auto_uses_tsc,
        postgresql_reads_counter: counter.postgresql_reads_counter,
        installed_postgresql_majors: env.postgresql_installed_majors.clone(),
        tsc_trusted: counter.trusted,
        tsc_reason: counter.reason.clone(),
        baseline_row_ns: args.baseline_row_ns.unwrap_or(verdict::DEFAULT_BASELINE_ROW_NS),
        baseline_source: if args.baseline_row_ns.is_some() {
            "--baseline-row-ns".to_string()
        } else {
            verdict::DEFAULT_BASELINE_SOURCE.to_string()
        },
    };
    let verdict = verdict::decide(&stats, &inputs);
    CheckReport {
        schema_version: report::SCHEMA_VERSION,
        tool: format!("clockscope {}", env!("CARGO_PKG_VERSION")),
        duration_per_clock_s: args.duration,
        environment: env,
        clocks: stats,
        skipped,
        verdict,
        tsc,
        interrupted,
    }
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let plot = args.plot.as_deref().map(PlotFile::create).transpose()?;
    crate::exit::install_interrupt_handler();
    let root = Path::new("/");
    let linux = LinuxEvidence::read(root);
    // A clock asked for by name that cannot work here is a usage error, not a skipped row.
    for id in &args.clocks {
        if let Err(e) = id.is_supported() {
            bail!("--clock {id}: {e}");
        }
    }
    let counter = environment::quick_counter(root, &linux);
    let clocks = selected_clocks(args);
    let duration_ns = seconds_to_ns(args.duration);
    let (stats, skipped, interrupted) = measure_clocks(&clocks, duration_ns, &counter);
    if stats.is_empty() && !interrupted {
        let why: Vec<String> = skipped.iter().map(|s| format!("{}: {}", s.name, s.reason)).collect();
        bail!("no clock could be measured ({})", why.join("; "));
    }
    let (counter, tsc) = if interrupted {
        (counter, None)
    } else {
        environment::full_counter(root, &linux, counter)
    };
    let report = build_report(args, &linux, &counter, stats, skipped, interrupted, tsc);
    // The plot first: if it cannot be written, nothing is printed.
    if let Some(plot) = plot {
        plot.write(&report)?;
    }
    write_report(out, &report, args.format)?;
    Ok(report.exit_code())
}
