//! `clockscope sweep`: every kernel clocksource measured in turn, the way
//! PostgreSQL's documentation compares tsc, hpet and acpi_pm by hand, and
//! the original put back whatever happens.
//!
//! Without `--apply` it lists the clocksources and says what it would do.
//! With `--apply` (root only) it switches to each one through
//! [`clockscope::linux::clocksource`] (written, then read back), measures
//! the system clock with `check`'s engine (the library's loop, `check`'s
//! statistics and verdict: PostgreSQL's rule, syscall fallback, the EXPLAIN
//! prediction), and restores the original: explicitly at the end or on an
//! error, by the guard's drop while a panic unwinds, after the first
//! SIGINT/SIGTERM (the loop stops, then the normal path restores), and from
//! the forced-exit hook on a second signal. When even that fails, the error
//! line ends with the command that restores it by hand.

use crate::args::{parse_baseline_row_ns, parse_seconds, seconds_to_ns, CheckFormat};
use crate::model::check::stats::ClockStats;
use crate::model::check::verdict::{self, VerdictInputs};
use crate::model::sweep::{Recommendation, SweepReport, SweepResult, SCHEMA_VERSION};
use crate::{exit, progress};
use anyhow::bail;
use clap::Args;
use clockscope::clock::{self, ClockId, ClockSource, ClockVisitor};
use clockscope::escape::escape_untrusted;
use clockscope::linux::clocksource::{
    plan, restore, ClocksourceControl, ClocksourceGuard, RestoreError, SysfsClocksource, CLOCKSOURCE0,
};
use clockscope::measure::{measure, Control};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The live sysfs mount.
pub const LIVE_SYSFS: &str = "/sys";

#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Switch the kernel's clocksource for real (root only); without it, only list what would be done.
    #[arg(long)]
    pub apply: bool,

    /// Sweep only this clocksource (repeatable; must be in available_clocksource).
    #[arg(long = "only", value_name = "NAME")]
    pub only: Vec<String>,

    /// Seconds to measure the system clock under each clocksource (fractions allowed).
    #[arg(short, long, value_name = "SECONDS", default_value = "1", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub duration: f64,

    /// The sysfs root: DIR/devices/system/clocksource/clocksource0/ holds the clocksource files.
    #[arg(long, value_name = "DIR", default_value = LIVE_SYSFS)]
    pub sysfs_root: PathBuf,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: CheckFormat,

    /// ns per row of a count(*) with TIMING OFF, for the EXPLAIN ANALYZE prediction (as in `check`).
    #[arg(long, value_name = "NS", allow_hyphen_values = true, value_parser = parse_baseline_row_ns)]
    pub baseline_row_ns: Option<f64>,
}

impl Default for SweepArgs {
    fn default() -> Self {
        SweepArgs {
            apply: false,
            only: Vec::new(),
            duration: 1.0,
            sysfs_root: PathBuf::from(LIVE_SYSFS),
            format: CheckFormat::Text,
            baseline_row_ns: None,
        }
    }
}

/// Within this fraction of the cheapest read, the clocksource in use is kept
/// rather than switched for a gain smaller than run-to-run noise on a VM.
pub const KEEP_CURRENT_WITHIN: f64 = 0.10;

/// How to make the choice persistent, and when a choice can be undone by the system.
pub fn persistence_advice(name: &str) -> Vec<String> {
    vec![
        format!(
            "persistent: add clocksource={name} to the kernel command line (Debian/Ubuntu: GRUB_CMDLINE_LINUX in \
             /etc/default/grub, then update-grub; RHEL/Fedora: grubby --update-kernel=ALL --args=clocksource={name}), \
             reboot, and check /proc/cmdline and current_clocksource; a switch through sysfs lasts until reboot"
        ),
        "caveat, VM live migration: the TSC of the new host may run at another rate or offset; kvm-clock, \
         hyperv_clocksource_tsc_page and xen correct for that, a raw tsc does not unless the hypervisor scales it \
         (TSC scaling, an invariant TSC exposed to the guest); check with `clockscope tsc` after a migration"
            .to_string(),
        "caveat, suspend and resume (hibernation, VM pause): the TSC may stop or be reset; the kernel re-checks it on \
         resume and may mark it unstable"
            .to_string(),
        "caveat, the kernel's clocksource watchdog compares the clocksource with another (hpet, acpi_pm) and, on a \
         disagreement, marks it unstable and switches away for good (dmesg: \"Marking clocksource 'tsc' as \
         unstable\"); clocksource= cannot override that, and tsc=reliable disables the check: use it only where \
         `clockscope tsc` trusts the TSC"
            .to_string(),
    ]
}

/// Picks the cheapest clocksource whose clock_gettime stays in the vDSO, passes
/// PostgreSQL's rule and never went backwards; keeps the one in use when it is
/// within [`KEEP_CURRENT_WITHIN`] of that.
pub fn recommend(results: &[SweepResult], original: &str) -> Option<Recommendation> {
    let sound: Vec<&SweepResult> = results
        .iter()
        .filter(|r| r.loops > 0 && r.backward_steps == 0 && !r.interrupted)
        .collect();
    let good: Vec<&SweepResult> = sound
        .iter()
        .copied()
        .filter(|r| r.syscall_fallback.is_none() && r.postgresql_rule.as_ref().is_some_and(|p| p.passed))
        .collect();
    let pool = if good.is_empty() { &sound } else { &good };
    let best = pool.iter().min_by(|a, b| a.avg_loop_ns.total_cmp(&b.avg_loop_ns))?;
    let current = pool.iter().find(|r| r.clocksource == original);
    let (pick, why) = match current {
        Some(c) if c.clocksource != best.clocksource && c.avg_loop_ns <= best.avg_loop_ns * (1.0 + KEEP_CURRENT_WITHIN) => (
            *c,
            format!(
                "{} (in use) reads in {:.2} ns per loop, within {:.0}% of the cheapest ({}, {:.2} ns): not worth a change",
                c.clocksource,
                c.avg_loop_ns,
                KEEP_CURRENT_WITHIN * 100.0,
                best.clocksource,
                best.avg_loop_ns
            ),
        ),
        _ => (
            *best,
            format!(
                "{} has the cheapest clock_gettime measured ({:.2} ns per loop, p99 {} ns){}",
                best.clocksource,
                best.avg_loop_ns,
                best.percentiles_ns.p99,
                if good.is_empty() {
                    "; no clocksource stayed in the vDSO and passed PostgreSQL's rule"
                } else {
                    ", stays in the vDSO and passes PostgreSQL's rule"
                }
            ),
        ),
    };
    Some(Recommendation {
        clocksource: pick.clocksource.clone(),
        in_use: pick.clocksource == original,
        why,
        kernel_parameter: format!("clocksource={}", pick.clocksource),
    })
}

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
        read_cost_ns: stats.percentiles_ns.p50,
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
    }
}

struct MeasureSystemClock<'a> {
    duration_ns: u64,
    bar: &'a indicatif::ProgressBar,
}

impl ClockVisitor for MeasureSystemClock<'_> {
    type Output = ClockStats;
    fn visit<C: ClockSource>(self, clock: &C) -> ClockStats {
        let m = measure(clock, self.duration_ns, |p| {
            self.bar.set_position(p.elapsed_ns.min(p.target_ns));
            if exit::interrupted() {
                Control::Stop
            } else {
                Control::Continue
            }
        });
        let mut s = ClockStats::from_measurement(ClockId::Monotonic, &m, None);
        s.resolution_ns = clockscope::measure::observed_step_ns(clock, &m);
        s
    }
}

/// Measures clock_gettime(CLOCK_MONOTONIC) for `duration_ns` with `check`'s loop.
pub fn measure_system_clock(clocksource: &str, duration_ns: u64) -> anyhow::Result<ClockStats> {
    let bar = progress::bar("measuring", duration_ns);
    bar.set_prefix(format!("clocksource {}", escape_untrusted(clocksource)));
    let stats = clock::visit(ClockId::Monotonic, None, MeasureSystemClock { duration_ns, bar: &bar })?;
    bar.finish_and_clear();
    Ok(stats)
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
/// (`control`), the effective uid and the measurement. Restores the original
/// before returning, on every path.
pub fn sweep(
    args: &SweepArgs,
    control: Arc<dyn ClocksourceControl>,
    clocksource_dir: &str,
    euid: u32,
    measure_one: Measure<'_>,
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
        stamp: crate::model::stamp::ReportStamp::now(SCHEMA_VERSION),
        clocksource_dir: clocksource_dir.to_string(),
        live_sysfs: args.sysfs_root == std::path::Path::new(LIVE_SYSFS),
        original: original.clone(),
        available,
        planned: planned.clone(),
        applied: args.apply,
        duration_per_clocksource_s: args.duration,
        baseline_row_ns,
        baseline_source,
        results: Vec::new(),
        recommendation: None,
        persistence: Vec::new(),
        interrupted: false,
    };
    if !args.apply {
        return Ok(report);
    }
    require_root(euid)?;

    let guard = ClocksourceGuard::new(control.clone())?;
    // The one the guard restores (read again just before the first switch).
    report.original = guard.original().to_string();
    let original = report.original.clone();
    // Switches happen under this lock; the forced-exit hook takes it and
    // keeps it, so no switch can follow its restore before the process exits.
    let switching = Arc::new(Mutex::new(()));
    let _hook = {
        let (control, original, switching) = (control.clone(), guard.original().to_string(), switching.clone());
        exit::on_forced_exit(move || {
            let held = switching.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Err(error) = restore(&*control, &original) {
                let e = RestoreError {
                    command: control.manual_command(&original),
                    original: original.clone(),
                    error,
                };
                eprintln!("clockscope: error: {e}");
            }
            std::mem::forget(held);
        })
    };

    for name in &planned {
        if exit::interrupted() {
            report.interrupted = true;
            break;
        }
        let switched = {
            let _held = switching.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            guard.switch_to(name)
        };
        let stats = switched.map_err(anyhow::Error::from).and_then(|()| measure_one(name));
        match stats {
            Ok(stats) => {
                let r = result_for(name, stats, report.baseline_row_ns, &report.baseline_source);
                let cut = r.interrupted;
                report.results.push(r);
                if cut {
                    report.interrupted = true;
                    break;
                }
            }
            Err(e) => {
                return Err(match guard.finish() {
                    Ok(()) => e.context(format!("clocksource {} restored", escape_untrusted(&original))),
                    Err(restore_err) => anyhow::anyhow!("{e}; {restore_err}"),
                });
            }
        }
    }
    guard.finish()?;
    report.recommendation = recommend(&report.results, &report.original);
    if let Some(r) = &report.recommendation {
        report.persistence = persistence_advice(&r.clocksource);
    }
    Ok(report)
}

/// Writes `report` in `format`.
pub fn write_report(out: &mut dyn Write, report: &SweepReport, format: CheckFormat) -> anyhow::Result<()> {
    match format {
        CheckFormat::Text => crate::export::sweep::text(out, report)?,
        CheckFormat::Json => {
            serde_json::to_writer_pretty(&mut *out, report)?;
            writeln!(out)?;
        }
        CheckFormat::Prometheus => out.write_all(crate::export::sweep::prometheus(report).as_bytes())?,
    }
    Ok(())
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &SweepArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let control = Arc::new(SysfsClocksource::new(&args.sysfs_root));
    let dir = args.sysfs_root.join(CLOCKSOURCE0).to_string_lossy().into_owned();
    if args.apply {
        exit::install_interrupt_handler();
    }
    let duration_ns = seconds_to_ns(args.duration);
    let mut measure_one = |name: &str| measure_system_clock(name, duration_ns);
    let report = sweep(
        args,
        control,
        &dir,
        clockscope::linux::clocksource::effective_uid(),
        &mut measure_one,
    )?;
    write_report(out, &report, args.format)?;
    Ok(report.exit_code())
}
