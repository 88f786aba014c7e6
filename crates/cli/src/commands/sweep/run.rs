//! `clockscope sweep`: every kernel clocksource measured in turn, the way
//! PostgreSQL's documentation compares tsc, hpet and acpi_pm by hand, and
//! the original put back whatever happens.
//!
//! Without `--apply` it lists the clocksources and says what it would do.
//! With `--apply` (root only) it takes the machine's sweep lock
//! ([`SwitchLock`]: one sweep at a time), switches to each one through
//! [`clockscope_system::linux::clocksource`] (a name still available, written, then
//! read back), measures the system clock with `check`'s engine (the
//! library's loop, `check`'s statistics and verdict: PostgreSQL's rule,
//! syscall fallback, the EXPLAIN prediction) in [`ROUNDS`] interleaved
//! rounds, judged by [`crate::commands::sweep::judge`] (a change advised only when the
//! read costs' intervals are apart), reads `current_clocksource`
//! back after each measurement (a change it did not make invalidates the row
//! and ends the sweep), and restores the original, only over a clocksource
//! it put in place itself, by one hand: the guardian child process of
//! [`super::restore`], started before each switch. At the end (also after the
//! first SIGINT/SIGTERM/SIGHUP: the loop stops, then the normal path ends)
//! the sweep asks it to restore now and reports its answer; an error or a
//! panic unwinding through the sweep has it restore as it does when the
//! process dies (a second Ctrl-C's forced exit, any other terminating
//! signal, SIGKILL, a crash). When even that fails, the error line ends with
//! the command that restores it by hand.
//!
//! With `--dsn` (feature `explain`), a second pass measures the server's
//! EXPLAIN ANALYZE overhead under each clocksource with `explain`'s
//! library call ([`super::server`], `sweep_dsn`), covered by
//! the same lock and guardian; `--max-time` covers both passes.

use super::restore::Restorer;
use super::server::{check_max_time, explain_each, ServerPlan};
use crate::args::{parse_baseline_row_ns, parse_seconds, seconds_to_ns, CheckFormat};
use crate::commands::check::judge::{self as verdict, VerdictInputs};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::sweep::model::RestoreOutcome;
use crate::commands::sweep::model::{SweepReport, SweepResult, SCHEMA_VERSION};
use crate::report::Renderer;
use crate::{exit, progress};
use anyhow::bail;
use clap::Args;
use clockscope::{self, ClockId};
use clockscope_system::engine::Estimate;
use clockscope_system::escape::escape_untrusted;
use clockscope_system::linux::clocksource::{
    check_restorable, plan, ClocksourceControl, Restored, SwitchLock, SysfsClocksource, CLOCKSOURCE0,
};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// The live sysfs mount.
pub const LIVE_SYSFS: &str = "/sys";

#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Switch the kernel's clocksource for real (root only); without it, only list what would be done.
    /// One sweep at a time per machine: a second --apply while one runs refuses at once, in one line
    /// (the lock is /run/clockscope-sweep.lock, or DIR/.sys.clockscope-sweep.lock beside DIR/sys with --root DIR).
    /// The original is put back on any end: success, error, any catchable signal, and SIGKILL or a crash
    /// (a guardian child process restores it within a second), but never over a change someone else made meanwhile.
    #[arg(long)]
    pub apply: bool,

    /// Sweep only this clocksource (repeatable; must be in available_clocksource).
    #[arg(long = "only", value_name = "NAME")]
    pub only: Vec<String>,

    /// How long to measure the system clock under each clocksource, in all: split into 10 interleaved rounds
    /// (A B C A B C ...) whose median read cost and its 95% interval are compared. A plain number is seconds
    /// (fractions allowed), or give a unit (`500ms`, `2s`, `1m`).
    #[arg(short, long, value_name = "SECONDS", default_value = "1", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub duration: f64,

    /// Read and switch the clocksource files under DIR/sys instead of /sys (tests, support bundles):
    /// DIR/sys/devices/system/clocksource/clocksource0/ holds them. The same option as `tsc --root`.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// The sysfs directory swept without `--root` (in-process tests set it; not an option: the former
    /// `--sysfs-root DIR` is `--root DIR/..`, and clap's hidden options would still be completed).
    #[arg(skip = PathBuf::from(LIVE_SYSFS))]
    pub sysfs_root: PathBuf,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: CheckFormat,

    #[command(flatten)]
    pub output: crate::args::OutputArg,

    /// ns per row of a count(*) with TIMING OFF, for the EXPLAIN ANALYZE prediction (as in `check`).
    #[arg(long, value_name = "NS", allow_hyphen_values = true, value_parser = parse_baseline_row_ns)]
    pub baseline_row_ns: Option<f64>,

    #[command(flatten)]
    pub verbose: crate::args::VerboseArg,

    /// `--dsn` and its options: EXPLAIN ANALYZE on a local server under each clocksource.
    #[cfg(feature = "explain")]
    #[command(flatten)]
    pub server: super::dsn::SweepServerArgs,
}

impl Default for SweepArgs {
    fn default() -> Self {
        SweepArgs {
            apply: false,
            only: Vec::new(),
            duration: 1.0,
            root: None,
            sysfs_root: PathBuf::from(LIVE_SYSFS),
            format: CheckFormat::Text,
            baseline_row_ns: None,
            output: crate::args::OutputArg::default(),
            verbose: crate::args::VerboseArg::default(),
            #[cfg(feature = "explain")]
            server: super::dsn::SweepServerArgs::default(),
        }
    }
}

impl SweepArgs {
    /// The sysfs directory swept: `--root DIR`'s DIR/sys, else `--sysfs-root` (default /sys).
    pub fn sysfs(&self) -> PathBuf {
        match &self.root {
            Some(root) => root.join("sys"),
            None => self.sysfs_root.clone(),
        }
    }
}

pub use crate::commands::sweep::judge::{persistence_advice, recommend, KEEP_CURRENT_WITHIN, ROUNDS};

/// `check`'s statistics and verdict for the system clock measured under `clocksource`.
pub fn result_for(clocksource: &str, stats: ClockStats, baseline_row_ns: f64, baseline_source: &str) -> SweepResult {
    let inputs = VerdictInputs {
        current_clocksource: Some(clocksource.to_string()),
        baseline_row_ns,
        baseline_source: baseline_source.to_string(),
        baseline_is_example: baseline_source == verdict::DEFAULT_BASELINE_SOURCE,
        ..Default::default()
    };
    let v = verdict::decide(std::slice::from_ref(&stats), &inputs);
    SweepResult {
        clocksource: clocksource.to_string(),
        read_back: clocksource.to_string(),
        read_cost: Estimate::of(vec![stats.read_cost_ns]).expect("one sample"),
        avg_loop_ns: stats.avg_loop_ns,
        loops: stats.loops,
        percentiles_ns: stats.percentiles_ns,
        under_1us_pct: stats.under_1us_pct,
        backward_steps: stats.backward_steps,
        clock_gettime: if v.syscall_fallback.is_some() {
            "syscall"
        } else {
            "vdso"
        }
        .to_string(),
        syscall_fallback: v.syscall_fallback,
        postgresql_rule: v.postgresql_rule,
        explain: v.explain_system,
        status: v.status,
        interrupted: stats.interrupted,
        read_back_after: clocksource.to_string(),
        valid: true,
        invalid_reason: None,
        server_explain: None,
    }
}

/// Measures clock_gettime(CLOCK_MONOTONIC) for `duration_ns` with `check`'s loop (one round's slice).
pub fn measure_system_clock(clocksource: &str, duration_ns: u64) -> anyhow::Result<ClockStats> {
    let bar = progress::bar("measuring", duration_ns);
    bar.set_prefix(format!("clocksource {}", escape_untrusted(clocksource)));
    // The read-cost engine, as `check` measures a clock: interference
    // taken out (steal summed over the CPUs this process may use), a
    // noisy run repeated inside the slice.
    let cpus = clockscope_system::crosscpu::affinity::allowed_cpus().ok();
    let clean = clockscope_system::engine::measure_clock(
        ClockId::Monotonic,
        None,
        duration_ns,
        cpus.as_deref(),
        &mut |_, _, p| {
            bar.set_position(p.elapsed_ns.min(p.target_ns));
            exit::control()
        },
    )?;
    bar.finish_and_clear();
    let mut s = ClockStats::from_measurement(ClockId::Monotonic, &clean.measurement, None);
    s.resolution_ns = clean.observed_step_ns;
    s.interference = clean.interference;
    Ok(s)
}

/// The measurement run under each clocksource: `check`'s engine in
/// production; tests pass scripted clocks, or one that panics or removes a file.
pub type Measure<'a> = &'a mut dyn FnMut(&str) -> anyhow::Result<ClockStats>;

/// Whether a process with effective uid `euid` may switch clocksources.
pub fn require_root(euid: u32) -> anyhow::Result<()> {
    if euid != 0 {
        bail!(
            "--apply switches the kernel's clocksource and needs root (effective uid {euid}); without --apply, \
             sweep only lists what it would do"
        );
    }
    Ok(())
}

/// The sweep itself, with its inputs injected: the clocksource files
/// (`control`, over those under `args.sysfs()`, which the guardian
/// writes), the effective uid and the measurement. Restores the original
/// before returning, on every path, unless someone else changed the
/// clocksource since the sweep's last switch. Its guardians hold `lock`
/// too; with `server` (`--dsn`) a second pass measures the server's EXPLAIN
/// ANALYZE overhead under each clocksource ([`super::server`]) and
/// recommends on it.
pub fn sweep_with(
    args: &SweepArgs,
    control: Arc<dyn ClocksourceControl>,
    clocksource_dir: &str,
    euid: u32,
    measure_one: Measure<'_>,
    lock: Option<&SwitchLock>,
    mut server: Option<ServerPlan<'_>>,
) -> anyhow::Result<SweepReport> {
    let available = control.available()?;
    let original = control.current()?;
    let planned = plan(&available, &args.only)?;
    let baseline_row_ns = args.baseline_row_ns.unwrap_or(verdict::DEFAULT_BASELINE_ROW_NS);
    let baseline_source = if args.baseline_row_ns.is_some() {
        "--baseline-row-ns".to_string()
    } else {
        verdict::DEFAULT_BASELINE_SOURCE.to_string()
    };
    let mut report = SweepReport {
        stamp: crate::report::stamp::ReportStamp::now(SCHEMA_VERSION),
        clocksource_dir: clocksource_dir.to_string(),
        // By what the files are (on a sysfs mount), not how the path is spelled.
        live_sysfs: clockscope_system::linux::identity::is_kernel_clocksource_dir(&args.sysfs().join(CLOCKSOURCE0)),
        original: original.clone(),
        available,
        planned: planned.clone(),
        applied: args.apply,
        duration_per_clocksource_s: args.duration,
        rounds: ROUNDS,
        baseline_row_ns,
        baseline_source,
        results: Vec::new(),
        recommendation: None,
        persistence: Vec::new(),
        interrupted: false,
        restore: None,
        final_clocksource: None,
        changed_by_others: None,
        server: server.as_ref().map(|s| s.header.clone()),
    };
    if !args.apply {
        return Ok(report);
    }
    require_root(euid)?;
    check_restorable(&original, &report.available)?;
    if let Some(s) = &server {
        check_max_time(s.max_time, args.duration, planned.len())?;
    }

    // Dropped while a panic unwinds, it has its guardian restore.
    let mut restorer = Restorer::new(
        control.clone(),
        SysfsClocksource::new(&args.sysfs()),
        lock.map(SwitchLock::raw_fd),
    )?;
    // The one restored (read again just before the first switch).
    report.original = restorer.original().to_string();
    let mut outcome = visit_each(&planned, &mut restorer, measure_one, &mut report);
    // The second pass only after a first that ran to its end.
    let first_done = outcome.is_ok() && !report.interrupted && report.changed_by_others.is_none();
    if let Some(plan) = server.as_mut().filter(|_| first_done) {
        outcome = explain_each(&planned, &mut restorer, plan, &mut report);
    }
    let restored = restorer.finish();
    let restored = match (outcome, restored) {
        (Ok(()), Ok(r)) => r,
        (Ok(()), Err(restore_err)) => return Err(restore_err.into()),
        (Err(e), Ok(r)) => {
            return Err(match r {
                Restored::LeftAlone { current } => e.context(format!(
                    "clocksource {} left in place: someone else put it there after the sweep's last switch",
                    escape_untrusted(&current)
                )),
                _ => e.context(format!("clocksource {} restored", escape_untrusted(&report.original))),
            })
        }
        (Err(e), Err(restore_err)) => return Err(anyhow::anyhow!("{e}; {restore_err}")),
    };
    report.restore = Some(match restored {
        Restored::Restored => RestoreOutcome::Restored,
        Restored::InPlace => RestoreOutcome::InPlace,
        Restored::LeftAlone { .. } => RestoreOutcome::LeftAlone,
    });
    report.final_clocksource = control.current().ok();
    let repeat = report.server.as_ref().and_then(|s| s.original_again.as_ref());
    report.recommendation = recommend(&report.results, &report.original, repeat);
    // How to persist a change, only when one is advised.
    if let Some(r) = report.recommendation.as_ref().filter(|r| !r.in_use) {
        report.persistence = crate::i18n::in_english(|| persistence_advice(&r.clocksource));
    }
    Ok(report)
}

/// Switches to (guarded), measures and reads back each planned clocksource
/// in turn, [`ROUNDS`] rounds interleaved (`A B C A B C ...`, each slice a
/// `-d / ROUNDS` measurement), until the rounds end, Ctrl-C, an error, or a
/// change the sweep did not make; then one row per clocksource measured.
fn visit_each(
    planned: &[String],
    restorer: &mut Restorer,
    measure_one: Measure<'_>,
    report: &mut SweepReport,
) -> anyhow::Result<()> {
    let mut slices: Vec<Vec<ClockStats>> = vec![Vec::new(); planned.len()];
    // The clocksource during whose slice someone else changed it, and what it read then.
    let mut changed: Option<(usize, String)> = None;
    'rounds: for _ in 0..ROUNDS {
        for (i, name) in planned.iter().enumerate() {
            if exit::interrupted() {
                report.interrupted = true;
                break 'rounds;
            }
            restorer.switch_to(name)?;
            let stats = measure_one(name)?;
            let after = restorer.control().current()?;
            let cut = stats.interrupted;
            slices[i].push(stats);
            if after != *name {
                changed = Some((i, after));
                break 'rounds;
            }
            if cut {
                report.interrupted = true;
                break 'rounds;
            }
        }
    }
    for (i, (name, measured)) in planned.iter().zip(&slices).enumerate() {
        let Some(all) = crate::commands::sweep::judge::combine(measured) else {
            continue;
        };
        let mut r = result_for(name, all, report.baseline_row_ns, &report.baseline_source);
        if let Some(e) = Estimate::of(crate::commands::sweep::judge::read_costs(measured)) {
            r.read_cost = e;
        }
        if let Some((_, after)) = changed.as_ref().filter(|(j, _)| *j == i) {
            r.valid = false;
            r.invalid_reason = Some(format!(
                "current_clocksource read {after} after the measurement, not {name}: changed during it by \
                 someone else or the kernel's clocksource watchdog, so these numbers are not {name}'s alone"
            ));
            report.changed_by_others = Some(format!(
                "the clocksource changed from {name} to {after} during the measurement of {name}, not by this \
                 sweep: the sweep stopped there"
            ));
            r.read_back_after = after.clone();
        }
        report.results.push(r);
    }
    Ok(())
}

/// The renderer of `format`: the one-screen text unless `verbose`.
pub fn renderer(format: CheckFormat, verbose: bool) -> Renderer<SweepReport> {
    match format {
        CheckFormat::Text if verbose => |out, r| crate::commands::sweep::write_text(out, r, true),
        CheckFormat::Text => |out, r| crate::commands::sweep::write_text(out, r, false),
        CheckFormat::Json => crate::report::json::write as Renderer<_>,
        CheckFormat::Prometheus => crate::commands::sweep::write_prometheus as Renderer<_>,
    }
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &SweepArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let sysfs = args.sysfs();
    let control = Arc::new(SysfsClocksource::new(&sysfs));
    let dir = sysfs.join(CLOCKSOURCE0).to_string_lossy().into_owned();
    let euid = clockscope_system::linux::clocksource::effective_uid();
    // --dsn is checked (a remote server refused) before the lock is taken.
    #[cfg(feature = "explain")]
    let server = {
        let planned = control.available().ok().and_then(|a| plan(&a, &args.only).ok());
        let n = planned.as_ref().map_or(1, Vec::len);
        super::dsn::Prepared::new(&args.server, args.duration, n, args.apply && planned.is_some())?
    };
    let lock = if args.apply {
        require_root(euid)?;
        // Bad names and missing files are refused before the lock file is made.
        let available = control.available()?;
        plan(&available, &args.only)?;
        check_restorable(&control.current()?, &available)?;
        exit::install_interrupt_handler();
        Some(SwitchLock::acquire(&sysfs)?)
    } else {
        None
    };
    // Each clocksource's -d is split into its interleaved rounds.
    let slice_ns = (seconds_to_ns(args.duration) / u64::from(ROUNDS)).max(1);
    let mut measure_one = |name: &str| measure_system_clock(name, slice_ns);
    // --max-time counts from here: the read-cost rounds, then the server's runs.
    #[cfg(feature = "explain")]
    let start = clockscope_system::forward::now();
    #[cfg(feature = "explain")]
    let mut elapsed = || clockscope_system::forward::since(start);
    #[cfg(feature = "explain")]
    let mut measure_server = |name: &str, share, first| match &server {
        Some(p) => p.measure(name, share, first),
        None => unreachable!("no server pass without --dsn"),
    };
    #[cfg(feature = "explain")]
    let server_plan = server.as_ref().map(|p| ServerPlan {
        max_time: p.max_time(),
        elapsed: &mut elapsed,
        measure: &mut measure_server,
        header: p.header(),
    });
    #[cfg(not(feature = "explain"))]
    let server_plan: Option<ServerPlan<'_>> = None;
    let report = sweep_with(args, control, &dir, euid, &mut measure_one, lock.as_ref(), server_plan)?;
    drop(lock);
    renderer(args.format, args.verbose.verbose)(out, &report)?;
    Ok(report.exit_code())
}
