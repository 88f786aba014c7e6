//! `clockscope check` (the default): measure the clocks that matter, describe
//! the environment and give a verdict a person can act on.
//!
//! Pipeline: arguments -> environment (cheap: sysfs, /proc, CPUID) -> measure
//! each clock (the library's loop; a progress bar between chunks) -> stats
//! from the histograms -> verdict -> one export format. The TSC report with
//! its calibration is gathered after the measurements, so the first
//! measurement starts without waiting for a calibration when the frequency is
//! known from CPUID or the kernel.

use crate::args::{
    parse_baseline_row_ns, parse_seconds, seconds_to_ns, CheckFormat, ClockParser, PlotKind, VerboseArg,
};
use crate::commands::check::judge::{self as verdict, VerdictInputs};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::{self as report, CheckReport, Skipped};
use crate::commands::environment;
use crate::output_file::{self, Destination, OutputFile};
use crate::progress;
use crate::report::Renderer;
use anyhow::{bail, Context};
use clap::Args;
use clockscope::{self, ClockId};
use clockscope_pg::predict::executor_loop::{self, ExecutorLoopCost};
use clockscope_pg::predict::read_cost;
use clockscope_pg::predict::settings::{page_read, Estimate};
use clockscope_system::counter::{self, CounterDetails};
use clockscope_system::engine;
use clockscope_system::escape::escape_untrusted;
use clockscope_system::linux::LinuxEvidence;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone, Default)]
pub struct CheckArgs {
    /// The budget per clock, its repeats when noisy and its EXPLAIN model included: a plain number is
    /// seconds (fractions allowed), or give a unit (`500ms`, `2s`, `1m`).
    #[arg(short, long, value_name = "SECONDS", default_value = "1", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub duration: f64,

    /// Measure this clock (repeatable); see `clockscope clocks` for the names.
    #[arg(long = "clock", value_name = "NAME", value_parser = ClockParser, hide_possible_values = true)]
    pub clocks: Vec<clockscope::ClockId>,

    /// Measure every clock that works here.
    #[arg(long, conflicts_with = "clocks")]
    pub all: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: CheckFormat,

    /// Also draw the measured clocks' duration distributions to this SVG file (replaced atomically as --output
    /// is; not the report's file).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// What --plot draws: `cdf` (default), the share of reads at or below each time, which shows PostgreSQL's rule
    /// (> 90% of reads under 1 µs) where each curve crosses the 1 µs line; `histogram`, the share per log2 bucket on a
    /// log scale, which shows the rare long reads.
    #[arg(long, value_enum, value_name = "KIND", default_value_t, requires = "plot")]
    pub plot_kind: PlotKind,

    /// Print at most 8 lines: host, CPU, clocksource, each clock's read cost, the verdict and the one
    /// recommendation (text only).
    #[arg(long, conflicts_with_all = ["format", "verbose"])]
    pub brief: bool,

    #[command(flatten)]
    pub verbose: VerboseArg,

    /// Write the report to FILE instead of stdout (`-` is stdout), replacing it atomically (e.g. a node_exporter
    /// textfile collector's `clockscope.prom`); a missing or unwritable directory fails before measuring. The
    /// replacement is a new file with the old one's mode: other hard links to the old file keep the old content.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// ns per row of a count(*) with TIMING OFF, to predict EXPLAIN ANALYZE's slowdown
    /// (default: 42.66 ns, PostgreSQL 19's 10M-row benchmark on pgsql-hackers; `clockscope explain` measures yours).
    #[arg(long, value_name = "NS", allow_hyphen_values = true, value_parser = parse_baseline_row_ns)]
    pub baseline_row_ns: Option<f64>,
}

impl CheckArgs {
    /// The file the report is written to: `-o FILE`; `None` for stdout (no `-o`, or `-o -`).
    pub fn report_file(&self) -> Option<&Path> {
        self.output.as_deref().filter(|p| p.as_os_str() != "-")
    }
}

/// The clocks measured by default: the system clock and the CPU counter's
/// precise and fast reads (PostgreSQL 19's three).
pub fn default_clocks() -> Vec<ClockId> {
    let counters = [
        counter::native_kind().map(|k| k.ordered_read()),
        counter::native_kind().map(|k| k.fast_read()),
    ];
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

/// One clock measured by the read-cost engine ([`engine::measure_clock`]),
/// the progress bar following each run; `None` for a clock that cannot be
/// read here (its reason in the error).
fn measure_clock(
    id: ClockId,
    counter_scale: Option<clockscope::Scale>,
    budget_ns: u64,
    bar: &indicatif::ProgressBar,
    cpus: Option<&[usize]>,
) -> Result<engine::Clean, clockscope::ClockError> {
    if id.is_supported().is_ok() {
        crate::startup::first_measurement(id.display_name());
    }
    let mut run = 0;
    engine::measure_clock(id, counter_scale, budget_ns, cpus, &mut |name, n, p| {
        if n != run {
            run = n;
            bar.set_position(0);
            bar.set_length(engine::run_budget_ns(budget_ns, n).max(1));
            bar.set_prefix(if n == 1 {
                name.to_string()
            } else {
                format!("{name} (noisy: run {n})")
            });
        }
        bar.set_position(p.elapsed_ns.min(p.target_ns));
        crate::exit::control()
    })
}

/// The library's model of PostgreSQL 19's per-row instrumentation
/// (clockscope_pg::predict::executor_loop) with `id` in its fast-read slot:
/// the system clock behind the `timing_tsc_enabled` branch, or the counter's
/// fast read; its run time bounded by `budget_ns`, in slices pinned to this
/// process's CPUs in turn (the headline is the CPU that ran the plain work
/// fastest, not the moment of one vCPU: placement.rs).
fn executor_loop_cost(
    id: ClockId,
    counter_scale: Option<clockscope::Scale>,
    budget_ns: u64,
) -> Result<Option<ExecutorLoopCost>, clockscope::ClockError> {
    if crate::exit::interrupted() {
        return Ok(None);
    }
    let table = executor_loop::Table::new();
    let shape = executor_loop::PgInstrumentation::Pg19 { tsc: id.is_counter() };
    let config = executor_loop::ModelConfig::new(shape, budget_ns);
    executor_loop::measure_across_cpus_of(id, counter_scale, &table, config, &mut || !crate::exit::interrupted())
}

/// The clocks whose EXPLAIN prediction `check` gives (the system clock and the
/// counter's fast read), each in the instrumentation model for `budget_ns`.
pub fn measure_executor_loops(
    stats: &[ClockStats],
    counter: &environment::CounterSetup,
    budget_ns: u64,
) -> Vec<ExecutorLoopCost> {
    let wanted = [ClockId::Monotonic, ClockId::Rdtsc, ClockId::Cntvct];
    let bar = progress::bar("EXPLAIN model", wanted.len() as u64);
    let mut out = Vec::new();
    for id in wanted.into_iter().filter(|&id| has_executor_loop(id)) {
        if !stats.iter().any(|c| c.name == id.cli_name() && c.loops > 0) {
            continue;
        }
        bar.set_prefix(id.display_name().to_string());
        if let Ok(Some(cost)) = executor_loop_cost(id, counter.scale, budget_ns) {
            out.push(cost);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    out
}

/// The prices of the I/O timing settings: the system clock's read cost and,
/// where PostgreSQL 19 reads it, RDTSCP's (`budget_ns` each, in 9 chunks for
/// an interval), and the 8 kB page-cache read they are set against (a few ms).
pub fn measure_io_prices(
    stats: &[ClockStats],
    counter: &environment::CounterSetup,
    budget_ns: u64,
) -> verdict::IoPrices {
    let price = |id: ClockId| {
        stats
            .iter()
            .any(|c| c.name == id.cli_name() && c.loops > 0)
            .then(|| {
                read_cost::measure_read_cost_of(id, counter.scale, budget_ns, &mut || !crate::exit::interrupted())
                    .ok()
                    .flatten()
                    .map(|r| Estimate::new(r.read_cost_ns, r.interval.map(|i| i.low), r.interval.map(|i| i.high)))
            })
            .flatten()
    };
    verdict::IoPrices {
        system: price(ClockId::Monotonic),
        precise_tsc: counter
            .postgresql_reads_counter
            .then(|| price(ClockId::Rdtscp))
            .flatten(),
        page_read: page_read::measure_page_cache_read(page_read::PAGE_READ_ROUNDS).map(|p| p.estimate()),
    }
}

/// The I/O prices' read-cost budget per clock: a tenth of `-d`, at most 100 ms.
pub fn io_price_budget_ns(duration_ns: u64) -> u64 {
    (duration_ns / 10).min(100_000_000)
}

/// The instrumentation model's time budget per clock: a quarter of `-d`,
/// taken out of that clock's measuring time ([`measuring_budget_ns`]).
pub fn executor_loop_budget_ns(duration_ns: u64) -> u64 {
    duration_ns / 4
}

/// Whether `check` runs the EXPLAIN model for `id` ([`measure_executor_loops`]).
fn has_executor_loop(id: ClockId) -> bool {
    matches!(id, ClockId::Monotonic | ClockId::Rdtsc | ClockId::Cntvct)
}

/// The measuring time of `id`, repeats included: its `-d`, less its
/// EXPLAIN model's share when it has one, so that a clock's whole cost is
/// its `-d`.
pub fn measuring_budget_ns(id: ClockId, duration_ns: u64) -> u64 {
    if has_executor_loop(id) {
        duration_ns - executor_loop_budget_ns(duration_ns)
    } else {
        duration_ns
    }
}

/// From this `-d` on, a run says on stderr that it has started (the
/// interrupt handler is installed before) and how to stop it, as `tsc
/// --drift` does; a shorter run stays quiet on stderr.
const ANNOUNCE_FROM_NS: u64 = 10_000_000_000;

/// The line a long run prints on stderr just before its first measurement.
fn announce_long_run(clocks: &[ClockId], duration_s: f64, duration_ns: u64) {
    if duration_ns < ANNOUNCE_FROM_NS {
        return;
    }
    let n = clocks.len();
    let _ = writeln!(
        std::io::stderr(),
        "measuring {n} clock{} for {duration_s} s each (Ctrl-C stops it and prints what was measured)",
        if n == 1 { "" } else { "s" }
    );
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
    let cpus = clockscope_system::crosscpu::affinity::allowed_cpus().ok();
    let skip = |id: ClockId, reason: String| Skipped {
        name: id.cli_name().into(),
        reason,
    };
    for &id in clocks {
        if interrupted {
            skipped.push(skip(id, "interrupted before it was measured".into()));
            continue;
        }
        match measure_clock(
            id,
            counter_scale,
            measuring_budget_ns(id, duration_ns),
            &bar,
            cpus.as_deref(),
        ) {
            Ok(clean) => {
                let m = clean.measurement;
                interrupted |= m.interrupted;
                let khz = id.is_counter().then(|| counter_scale.map(|s| s.khz())).flatten();
                let mut s = ClockStats::from_measurement(id, &m, khz);
                s.resolution_ns = clean.observed_step_ns;
                s.interference = clean.interference;
                stats.push(s);
            }
            Err(e) => skipped.push(skip(id, counter.skip_reason(&e))),
        }
    }
    bar.finish_and_clear();
    (stats, skipped, interrupted)
}

/// The renderer of `format`.
pub fn renderer(format: CheckFormat) -> Renderer<CheckReport> {
    match format {
        CheckFormat::Text => crate::commands::check::text::write_screen,
        CheckFormat::Json => crate::report::json::write,
        CheckFormat::Prometheus => crate::commands::check::prometheus::write,
    }
}

/// What a run measured, and the CPUs it was allowed to run on.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub stats: Vec<ClockStats>,
    pub skipped: Vec<Skipped>,
    /// Whether Ctrl-C or SIGTERM stopped the measurements.
    pub interrupted: bool,
    /// The affinity mask (`sched_getaffinity`), when it could be read.
    pub allowed_cpus: Option<Vec<usize>>,
    /// What TIMING ON adds per row in the instrumentation model, per clock.
    pub executor_loops: Vec<ExecutorLoopCost>,
    /// What the I/O timing settings are priced with ([`measure_io_prices`]).
    pub io_prices: verdict::IoPrices,
}

/// Assembles the report from what was measured and the environment (pure:
/// tests feed scripted measurements and a fake sysfs root).
pub fn build_report(
    args: &CheckArgs,
    linux: &LinuxEvidence,
    counter: &environment::CounterSetup,
    measured: Measured,
    tsc: Option<CounterDetails>,
) -> CheckReport {
    let Measured {
        stats,
        skipped,
        interrupted,
        allowed_cpus,
        executor_loops,
        io_prices,
    } = measured;
    let env = environment::build(linux, counter, allowed_cpus.as_deref());
    let inputs = VerdictInputs {
        current_clocksource: env.current_clocksource.clone(),
        postgresql_auto_uses_tsc: counter.postgresql_auto_uses_tsc,
        postgresql_reads_counter: counter.postgresql_reads_counter,
        installed_postgresql_majors: env.postgresql_installed_majors.clone(),
        tsc_trusted: counter.trusted,
        tsc_reason: counter.reason.clone(),
        time_interposition: counter.time_interposition.clone(),
        baseline_row_ns: args.baseline_row_ns.unwrap_or(verdict::DEFAULT_BASELINE_ROW_NS),
        baseline_source: args
            .baseline_row_ns
            .map_or(verdict::DEFAULT_BASELINE_SOURCE, |_| "--baseline-row-ns")
            .to_string(),
        baseline_is_example: args.baseline_row_ns.is_none(),
        executor_loops,
        ntp: env.ntp.clone(),
        io_prices,
    };
    let verdict = verdict::decide(&stats, &inputs);
    let (measurement_quality, interference_lost_fraction, measurement_quality_reason) =
        report::assess_quality(&stats, args.duration);
    CheckReport {
        stamp: crate::report::stamp::ReportStamp::now(report::SCHEMA_VERSION),
        duration_per_clock_s: args.duration,
        environment: env,
        clocks: stats,
        skipped,
        verdict,
        measurement_quality,
        interference_lost_fraction,
        measurement_quality_reason,
        tsc,
        interrupted,
    }
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    // Every argument is checked before the output file is touched: a clock
    // asked for by name that cannot work here is a usage error, not a skipped row.
    for id in &args.clocks {
        if let Err(e) = id.is_supported() {
            bail!("--clock {id}: {e}");
        }
    }
    if let Some(plot) = args.plot.as_deref() {
        let report = match (args.report_file(), args.output.is_some()) {
            (Some(file), _) => ("--output", Destination::File(file)),
            (None, true) => ("--output -", Destination::Stdout),
            (None, false) => ("the report", Destination::Stdout),
        };
        output_file::refuse_same_file(report, ("--plot", Destination::File(plot)))?;
    }
    crate::exit::install_interrupt_handler();
    let plot = args
        .plot
        .as_deref()
        .map(|p| OutputFile::prepare("--plot", p))
        .transpose()?;
    let output = args
        .report_file()
        .map(|p| OutputFile::prepare("--output", p))
        .transpose()?;
    let root = Path::new("/");
    let linux = LinuxEvidence::read(root);
    let counter = environment::quick_counter(root, &linux);
    let clocks = selected_clocks(args);
    let duration_ns = seconds_to_ns(args.duration);
    announce_long_run(&clocks, args.duration, duration_ns);
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
    let executor_loops = if interrupted {
        Vec::new()
    } else {
        measure_executor_loops(&stats, &counter, executor_loop_budget_ns(duration_ns))
    };
    let io_prices = if interrupted || crate::exit::interrupted() {
        verdict::IoPrices::default()
    } else {
        measure_io_prices(&stats, &counter, io_price_budget_ns(duration_ns))
    };
    let interrupted = interrupted || crate::exit::interrupted();
    let measured = Measured {
        stats,
        skipped,
        interrupted,
        allowed_cpus: clockscope_system::crosscpu::affinity::allowed_cpus().ok(),
        executor_loops,
        io_prices,
    };
    let report = build_report(args, &linux, &counter, measured, tsc);
    match output {
        None => finish(args, &report, plot, out),
        Some(file) => {
            // The whole report, then one atomic replace; an interrupted run's
            // report is written too, saying so (`clockscope_interrupted 1`).
            let mut bytes = Vec::new();
            let code = finish(args, &report, plot, &mut bytes)?;
            file.commit(&bytes)?;
            Ok(code)
        }
    }
}

/// Writes a finished report: the plot first (if it cannot be written,
/// nothing is printed), then the report on `out`. Returns the exit code the
/// run earned. An interrupted run leaves an existing plot file as it was.
pub fn finish(
    args: &CheckArgs,
    report: &CheckReport,
    plot: Option<OutputFile>,
    out: &mut dyn Write,
) -> anyhow::Result<u8> {
    if let Some(plot) = plot {
        if report.interrupted {
            // Dropping it removes the temporary file; a stream had nothing written.
            drop(plot);
            eprintln!("clockscope: interrupted: --plot not written");
        } else {
            let what = || {
                format!(
                    "--plot {}: drawing",
                    escape_untrusted(&args.plot.as_deref().unwrap_or(Path::new("")).to_string_lossy())
                )
            };
            let drawing = crate::commands::check::svg::Plot {
                report,
                kind: args.plot_kind,
                header: crate::commands::check::svg::PlotHeader::from_stamp(&report.stamp),
            };
            let mut svg = Vec::new();
            crate::commands::check::svg::write(&mut svg, &drawing).with_context(what)?;
            plot.commit(&svg)?;
        }
    }
    let render = if args.brief {
        crate::commands::check::text::write_brief
    } else if args.verbose.verbose && args.format == CheckFormat::Text {
        crate::commands::check::text::write_full
    } else {
        renderer(args.format)
    };
    render(out, report)?;
    Ok(report.exit_code())
}
