//! `clockscope cross-cpu`: the kernel's warp test and a ping-pong offset
//! estimate for every pair of the CPUs this process may run on, for the CPU
//! counter (RDTSCP / ISB;CNTVCT_EL0) and clock_gettime(CLOCK_MONOTONIC).
//!
//! Pipeline: CPUs (affinity mask, online, cgroup cpuset) -> topology
//! (`clockscope_system::linux::read_topology`) -> plan (`clockscope_system::crosscpu::plan`:
//! pairs and time; `--plan` prints it and stops) -> counter frequency
//! (calibration) -> `clockscope_system::crosscpu::run_plan` -> text or JSON, with the
//! results by package pair.
//! Exit status: 0 nothing wrong, 1 a warp or a proven offset, 2 an error, 130
//! interrupted (what was measured is printed).

use crate::commands::cross_cpu as render;
use crate::commands::cross_cpu::model::{Outcome, PlanView};
use crate::report::stamp::{ReportStamp, Stamped};
use crate::report::Renderer;

use crate::args::{parse_seconds, seconds_to_ns};
use crate::{exit, progress};
use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use clockscope::Scale;
use clockscope_system::counter::calibrate::calibrate_counter;
use clockscope_system::crosscpu::{
    self, clocks, CpuContext, CrossCpuReport, OsPinner, PairMode, Plan, PlanError, Settings,
};
use clockscope_system::linux::{self, CpuList, Evidence};
use std::io::Write;
use std::path::{Path, PathBuf};

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
    /// From the CPU topology: each package's first CPU with every other package's (both ways), each die's with the
    /// other dies' of its package, every other CPU with its die's first (O(N) pairs).
    #[default]
    Topology,
    /// Every pair: N*(N-1)/2.
    All,
    /// Each CPU with the first one: N-1 (as the kernel checks each CPU against the boot CPU).
    First,
}

#[derive(Args, Debug, Clone)]
pub struct CrossCpuArgs {
    /// Total measuring time (a plain number is seconds, fractions allowed, or give a unit: `500ms`, `2s`), shared by all CPU pairs (more across packages); extended,
    /// up to --max-time, when it cannot give each test its minimum of 1 ms.
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

    /// With --pairs topology, also compare the threads of each core with each other (they share one counter, so
    /// by default they are not paired).
    #[arg(long)]
    pub smt_pairs: bool,

    /// The longest the whole run may take, as in `explain` (a plain number is seconds, or give a unit: `90s`,
    /// `2m`): -d is extended up to it when it cannot give every test its minimum (1 ms per test, more across
    /// packages), and a plan needing more is refused before measuring.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60",
        value_parser = parse_seconds,
        allow_hyphen_values = true
    )]
    pub max_time: f64,

    #[command(flatten)]
    pub output: crate::args::OutputArg,

    /// Print the CPU pairs, their grouping by package and the expected run time, and exit without measuring.
    #[arg(long)]
    pub plan: bool,

    /// Plan for the online CPUs and topology under DIR/sys instead of this machine's /sys (tests, support
    /// bundles; the same option as `tsc --root`); needs --plan.
    #[arg(long, value_name = "DIR", requires = "plan")]
    pub root: Option<PathBuf>,

    #[command(flatten)]
    pub verbose: crate::args::VerboseArg,
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
    // Counted before the list is expanded.
    if cpus.len() > crosscpu::MAX_CPUS {
        return Err(format!(
            "'{s}' names {} CPUs, more than a run takes ({}, the x86-64 kernel's largest NR_CPUS)",
            cpus.len(),
            crosscpu::MAX_CPUS
        ));
    }
    Ok(CpuSelection(cpus.cpus().collect()))
}

/// The CPUs to test: `--cpus` (each must be allowed) or every allowed CPU.
pub fn select_cpus(requested: Option<&[usize]>, allowed: &[usize]) -> anyhow::Result<Vec<usize>> {
    let Some(requested) = requested else {
        return Ok(allowed.to_vec());
    };
    let allowed_set: std::collections::HashSet<usize> = allowed.iter().copied().collect();
    if let Some(cpu) = requested.iter().find(|c| !allowed_set.contains(c)) {
        bail!(
            "--cpus: CPU {cpu} is not among the CPUs this process may run on ({}, from sched_getaffinity)",
            render::text::cpu_list(allowed)
        );
    }
    Ok(requested.to_vec())
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &CrossCpuArgs, out: &mut dyn std::io::Write) -> anyhow::Result<u8> {
    exit::install_interrupt_handler();
    let (root, context) = match &args.root {
        None => {
            let root = PathBuf::from("/");
            let context = crosscpu::cpu_context(&root).context("cannot tell which CPUs this process may use")?;
            (root, context)
        }
        Some(root) => (root.clone(), context_under_root(root)?),
    };
    let cpus = select_cpus(args.cpus.as_ref().map(|c| c.0.as_slice()), &context.allowed)?;
    let budget_ns = seconds_to_ns(args.duration);
    let pair_mode = match args.pairs {
        PairsArg::Topology => PairMode::Topology,
        PairsArg::All => PairMode::All,
        PairsArg::First => PairMode::First,
    };
    let topology = linux::read_topology(&root, &cpus);
    let settings = Settings {
        pair_mode,
        topology: match &topology {
            Evidence::Found(t) => Ok(t),
            other => Err(other.reason().unwrap_or("not read")),
        },
        smt_pairs: args.smt_pairs,
        max_time_ns: seconds_to_ns(args.max_time),
        ..Settings::new(budget_ns, &OsPinner, &exit::interrupted)
    };
    if cpus.len() < 2 && !args.plan {
        // `--cpus` needs two CPUs (its parser says so), so one CPU here is the affinity mask's doing.
        let note = format!(
            "only CPU {} is available to this process (sched_getaffinity): there is no CPU pair to compare",
            render::text::cpu_list(&cpus)
        );
        let outcome = Outcome {
            report: CrossCpuReport {
                cpus,
                pair_mode,
                topology: None,
                clocks: Vec::new(),
                pairs_planned: 0,
                budget_ns,
                test_ns: 0,
                expected_ns: 0,
                extended: None,
                min_handovers: crosscpu::DEFAULT_MIN_HANDOVERS,
                pairs: Vec::new(),
                interrupted: false,
                elapsed_ns: 0,
            },
            context,
            plan: None,
            calibration: None,
            note: Some(note),
        };
        write_outcome(args, &outcome, out)?;
        return Ok(outcome.exit_code());
    }
    // The clocks a run tests (their scale comes from the calibration, after planning).
    let clock_count = clocks::default_clocks(None, None).len();
    let plan = crosscpu::plan(&cpus, settings.topology, &settings.plan_options(clock_count)).map_err(|e| match e {
        PlanError::OverTimeLimit { .. } => {
            anyhow::anyhow!("--max-time: {e}; allow more time with --max-time, or test fewer pairs (--cpus, --pairs)")
        }
        PlanError::TooManyPairs { .. } => {
            anyhow::anyhow!("--pairs: {e}; test fewer CPUs (--cpus) or fewer pairs (--pairs topology)")
        }
        PlanError::TooManyCpus { .. } => anyhow::anyhow!("{e}; choose the CPUs with --cpus"),
    })?;
    if args.plan {
        let cpus_from = match &args.root {
            Some(r) => format!("the online CPUs under {} (--root)", r.display()),
            None => "the CPUs allowed by sched_getaffinity".to_string(),
        };
        let stamp = ReportStamp::now(crate::commands::cross_cpu::model::PLAN_SCHEMA_VERSION);
        let Some(render) = plan_renderer(args.format) else {
            bail!("--plan: no Prometheus output (a plan measures nothing); use --format text or json")
        };
        let view = PlanView {
            plan: &plan,
            context: &context,
            cpus_from,
        };
        render(out, &stamp.on(&view))?;
        return Ok(exit::OK);
    }
    if let Some(why) = &plan.extended {
        eprintln!("clockscope: note: -d {why} (at most --max-time)");
    }
    let outcome = measure(plan, &settings, context)?;
    write_outcome(args, &outcome, out)?;
    Ok(outcome.exit_code())
}

fn write_outcome(args: &CrossCpuArgs, outcome: &Outcome, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    let stamp = ReportStamp::now(crate::commands::cross_cpu::model::SCHEMA_VERSION);
    renderer(args.format, args.verbose.verbose)(out, &stamp.on(outcome))?;
    Ok(())
}

/// The renderer of `format`: the one-screen text unless `verbose`.
pub fn renderer<'a>(format: CrossCpuFormat, verbose: bool) -> Renderer<Stamped<'a, Outcome>> {
    match format {
        CrossCpuFormat::Text if verbose => render::text::write_full as Renderer<_>,
        CrossCpuFormat::Text => render::text::write_screen as Renderer<_>,
        CrossCpuFormat::Json => render::write_json as Renderer<_>,
        CrossCpuFormat::Prometheus => render::prometheus::write as Renderer<_>,
    }
}

/// The renderer of `format` for `--plan` (none for Prometheus: a plan measures nothing).
pub fn plan_renderer<'a>(format: CrossCpuFormat) -> Option<Renderer<Stamped<'a, PlanView<'a>>>> {
    match format {
        CrossCpuFormat::Text => Some(render::write_plan_text as Renderer<_>),
        CrossCpuFormat::Json => Some(render::write_plan_json as Renderer<_>),
        CrossCpuFormat::Prometheus => None,
    }
}

/// With `--root`: the online CPUs under it stand for the allowed ones (the
/// affinity mask describes this machine, not the tree).
fn context_under_root(root: &Path) -> anyhow::Result<CpuContext> {
    if !root.is_dir() {
        bail!("--root {}: not a directory", root.display());
    }
    let online = linux::read_cpus_online_file(root);
    let Some(set) = online.found() else {
        bail!(
            "--root {}: no readable online CPU list ({})",
            root.display(),
            online.reason().unwrap_or_default()
        );
    };
    // Counted before the list is expanded (its highest CPU is already within kernel_max).
    if set.cpus.len() > crosscpu::MAX_CPUS {
        bail!(
            "--root {}: {} lists {} online CPUs, more than a run takes ({}, the x86-64 kernel's largest NR_CPUS)",
            root.display(),
            set.path,
            set.cpus.len(),
            crosscpu::MAX_CPUS
        );
    }
    Ok(CpuContext {
        allowed: set.cpus.cpus().collect(),
        online: online.clone(),
        cgroup_cpuset: linux::read_cpuset(root),
    })
}

/// From this planned time on, a run says on stderr when its first test has
/// finished (so an interrupt from then on keeps a measured result) and how
/// to stop it, as `tsc --drift` does; a shorter run stays quiet on stderr.
const ANNOUNCE_FROM_NS: u64 = 10_000_000_000;

/// The line a long run prints on stderr after its first test: what is left
/// of the planned time (the plan's, not a measurement).
fn announce_first_test(done_ns: u64, total_ns: u64) {
    let left_s = total_ns.saturating_sub(done_ns) as f64 / 1e9;
    let _ = writeln!(
        std::io::stderr(),
        "cross-cpu: the first test is done, about {left_s:.0} s of tests planned after it \
         (Ctrl-C stops it and prints what was measured)"
    );
}

fn measure(planned: Plan, settings: &Settings<'_>, context: CpuContext) -> anyhow::Result<Outcome> {
    let calibration = calibrate_counter(CALIBRATION_BUDGET_NS);
    let scale = calibration.hz.and_then(Scale::from_hz);
    let source = scale.map(|_| crate::i18n::in_english(|| render::text::calibration_source(&calibration)));
    let clocks = clocks::default_clocks(scale, source);
    // run_plan reports the planned total with every step.
    let bar = progress::bar("cross-cpu", planned.expected_ns);
    let mut announced = planned.expected_ns < ANNOUNCE_FROM_NS;
    crate::startup::first_measurement("cross-cpu");
    let report = crosscpu::run_plan(&planned, &clocks, settings, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
        if !announced {
            announced = true;
            // Above the bar, when one is drawn.
            bar.suspend(|| announce_first_test(done, total));
        }
    });
    bar.finish_and_clear();
    Ok(Outcome {
        context,
        plan: Some(planned),
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
