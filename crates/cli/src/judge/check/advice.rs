//! `check`'s advice, one function per setting: track_io_timing,
//! auto_explain.log_timing, PostgreSQL 19's timing_clock_source, and the
//! verdict's one-line summary, each from the rules' results and the
//! environment's facts.

use super::{VerdictInputs, LOG_TIMING_MAX_SLOWDOWN, READS_PER_IO};
use crate::model::check::stats::ClockStats;
use crate::model::check::verdict::{Advice, ExplainPrediction, RuleResult, Status};

/// A slowdown at the baseline: labelled an example unless the user
/// measured the query's own time per row.
pub(super) fn at_baseline(inputs: &VerdictInputs, slowdown: f64, decimals: usize) -> String {
    if inputs.baseline_is_example {
        format!(
            "example: {slowdown:.decimals$}x for a {:.1} ns/row count(*) measured elsewhere",
            inputs.baseline_row_ns
        )
    } else {
        format!(
            "{slowdown:.decimals$}x at your measured {:.1} ns/row",
            inputs.baseline_row_ns
        )
    }
}

/// track_io_timing: two reads of the system clock per block I/O (and of
/// PostgreSQL 19's `precise_tsc` when it reads one), safe when the system
/// clock passes PostgreSQL's rule (`passes`: with the interference taken
/// out if need be).
pub(super) fn track_io_timing(
    rule: &RuleResult,
    system: &ClockStats,
    precise_tsc: Option<&ClockStats>,
    passes: bool,
) -> Advice {
    let tsc_part = precise_tsc.map_or(String::new(), |p| {
        format!(
            ", {:.0} ns with PostgreSQL 19's {} (timing_clock_source = tsc)",
            READS_PER_IO * p.read_cost_ns,
            p.display_name
        )
    });
    Advice {
        safe: passes,
        why: format!(
            "each block I/O adds two INSTR_TIME_SET_CURRENT reads: {:.0} ns with {}{tsc_part}; {}",
            READS_PER_IO * system.read_cost_ns,
            system.display_name,
            if rule.passed {
                "the clock passes PostgreSQL's rule, so this is small next to the I/O itself"
            } else if passes {
                "the clock passes PostgreSQL's rule without the interference, so this is small next to the I/O itself"
            } else {
                "the clock fails PostgreSQL's rule: measure the workload before enabling it"
            }
        ),
    }
}

/// auto_explain.log_timing, judged on the system clock's prediction `p`
/// (every PostgreSQL version reads it; PostgreSQL 19 with the TSC, `tsc`,
/// is shown beside it), and called costly only when the slowdown's whole
/// interval is at or above [`LOG_TIMING_MAX_SLOWDOWN`].
pub(super) fn log_timing(p: &ExplainPrediction, tsc: Option<&ExplainPrediction>, inputs: &VerdictInputs) -> Advice {
    let tsc_part = tsc
        .filter(|t| t.used_by_postgresql)
        .and_then(|t| t.slowdown.map(|x| (x, &t.clock)))
        .map_or(String::new(), |(x, clock)| {
            format!(", {x:.2}x with PostgreSQL 19's {clock}")
        });
    let (Some(per_row), Some(slowdown)) = (p.per_row_per_node_ns, p.slowdown) else {
        return Advice {
            safe: true,
            why: format!(
                "with log_analyze on, each logged query pays EXPLAIN ANALYZE's timing; with {} it is {}:                          nothing measured to set against the {LOG_TIMING_MAX_SLOWDOWN}x limit{tsc_part}",
                p.clock, p.status
            ),
        };
    };
    let costly = p.slowdown_low.is_some_and(|low| low >= LOG_TIMING_MAX_SLOWDOWN);
    let straddles = !costly && p.slowdown_high.is_some_and(|high| high >= LOG_TIMING_MAX_SLOWDOWN);
    let interval = match (p.slowdown_low, p.slowdown_high) {
        (Some(lo), Some(hi)) => format!(", 95% interval {lo:.3}x to {hi:.3}x"),
        _ => String::new(),
    };
    Advice {
        safe: !costly,
        why: format!(
            "with log_analyze on, each logged query pays EXPLAIN ANALYZE's timing, {per_row:.0} ns per row \
             per plan node with {} ({}{interval}{tsc_part}; {}; queries doing more work per row pay \
             relatively less)",
            p.clock,
            at_baseline(inputs, slowdown, 2),
            if straddles {
                format!("the interval reaches the {LOG_TIMING_MAX_SLOWDOWN}x limit: not a clear case")
            } else {
                format!("safe below {LOG_TIMING_MAX_SLOWDOWN}x")
            }
        ),
    }
}

/// What `timing_clock_source=auto` picks in PostgreSQL 19, in its own words.
pub(super) fn postgresql19_auto_picks(inputs: &VerdictInputs) -> Option<String> {
    inputs
        .postgresql_auto_uses_tsc
        .map(|t| if t { "tsc" } else { "system" }.to_string())
}

/// PostgreSQL 19's `timing_clock_source`: nothing to set when it cannot
/// read the counter here (`native_tsc`: this machine's counter is a TSC,
/// which PostgreSQL could read given RDTSCP and an invariant TSC); else
/// keep or change `auto` by what it picks and whether clockscope trusts
/// the TSC. `None` when either is unknown.
pub(super) fn timing_clock_source(inputs: &VerdictInputs, native_tsc: bool) -> Option<String> {
    if !inputs.postgresql_reads_counter {
        return Some(if native_tsc {
            "PostgreSQL 19: nothing to set: it has no TSC clock here (it needs RDTSCP and an invariant TSC), so it reads \
             the system clock"
                .to_string()
        } else {
            format!(
                "PostgreSQL 19: nothing to set: it reads only the system clock on {} (timing_clock_source = tsc \
                 is x86-64 only)",
                std::env::consts::ARCH
            )
        });
    }
    let reason = || inputs.tsc_reason.as_deref().unwrap_or("see the tsc report");
    match (inputs.postgresql_auto_uses_tsc, inputs.tsc_trusted) {
        (Some(true), Some(true)) => {
            Some("PostgreSQL 19: keep timing_clock_source = auto (it picks tsc, and the TSC is trustworthy here)".into())
        }
        (Some(true), Some(false)) => Some(format!(
            "PostgreSQL 19: set timing_clock_source = system: auto would pick tsc, but clockscope does not trust the TSC here ({})",
            reason()
        )),
        (Some(false), Some(true)) => Some(
            "PostgreSQL 19: set timing_clock_source = tsc: auto picks system, but every piece of evidence says the TSC is trustworthy"
                .into(),
        ),
        (Some(false), Some(false)) => Some(format!(
            "PostgreSQL 19: keep timing_clock_source = auto (system): the TSC is not trustworthy here ({})",
            reason()
        )),
        (None, _) | (_, None) => None,
    }
}

/// timing_clock_source exists from PostgreSQL 19 on: `rec` says so when
/// only older ones are installed (`installed`: majors, ascending).
pub(super) fn with_older_postgresql(rec: String, installed: &[u32]) -> String {
    match installed.last() {
        Some(&newest) if newest < 19 => {
            let list: Vec<String> = installed.iter().map(u32::to_string).collect();
            format!(
                "{rec}; installed here: PostgreSQL {}, which has no timing_clock_source and always reads the \
                 system clock",
                list.join(", ")
            )
        }
        _ => rec,
    }
}

/// What EXPLAIN ANALYZE adds per row with the clock of `p`, or why that is
/// not known.
fn explain_adds(p: &ExplainPrediction, inputs: &VerdictInputs, decimals: usize, example: bool) -> String {
    match (p.per_row_per_node_ns, p.slowdown) {
        // The one-screen report leaves out a slowdown measured elsewhere.
        (Some(v), Some(_)) if inputs.baseline_is_example && !example => {
            format!("EXPLAIN ANALYZE adds about {v:.0} ns per row per plan node")
        }
        (Some(v), Some(x)) => format!(
            "EXPLAIN ANALYZE adds about {v:.0} ns per row per plan node ({}; `clockscope explain` measures your \
             server)",
            at_baseline(inputs, x, decimals)
        ),
        _ => format!(
            "EXPLAIN ANALYZE's timing cost with {}: {} (`clockscope explain` measures your server)",
            p.clock,
            p.status.split(':').next().unwrap_or("not resolved")
        ),
    }
}

/// The verdict's one-line summary: the status in words, with the system
/// clock's read cost and what EXPLAIN ANALYZE adds with it; `example`:
/// with the example slowdown of a baseline measured elsewhere (the verbose
/// report and JSON), else without it (the one-screen report).
pub(super) fn summary(
    status: Status,
    explain_system: Option<&ExplainPrediction>,
    inputs: &VerdictInputs,
    example: bool,
) -> String {
    match (status, explain_system) {
        (Status::Broken, _) => "Time went backwards: timings on this machine cannot be trusted.".to_string(),
        (Status::Bad, _) if inputs.time_interposition.is_some() => {
            "Something between clockscope and the kernel changes time (an LD_PRELOAD time library such as \
             libfaketime, a broken vDSO): these measurements do not describe the kernel's clocks, and the CPU counter \
             is not trusted."
                .to_string()
        }
        (_, None) | (Status::NoVerdict, _) => {
            "The system clock was not measured: no verdict on PostgreSQL's timing.".to_string()
        }
        (Status::Bad, Some(p)) => format!(
            "Reading the clock is slow here ({:.0} ns per read): {} and track_io_timing is costly.",
            p.per_read_ns,
            explain_adds(p, inputs, 1, example)
        ),
        (Status::Fair, Some(p)) => format!(
            "Reading the clock is usable but not cheap here ({:.0} ns per read): {}.",
            p.per_read_ns,
            explain_adds(p, inputs, 2, example)
        ),
        (Status::Good, Some(p)) => format!(
            "Reading the clock is cheap here ({:.0} ns per read): {}.",
            p.per_read_ns,
            explain_adds(p, inputs, 2, example)
        ),
    }
}

/// The one recommendation for this host: with only PostgreSQL older than 19
/// installed here, what its one clock (the system clock) means for
/// track_io_timing (`system`: the clock and that advice); else PostgreSQL
/// 19's `timing_clock_source` (`tcs`), as [`timing_clock_source`] gives it.
pub(super) fn for_this_host(
    inputs: &VerdictInputs,
    tcs: Option<&str>,
    system: Option<(&ClockStats, &Advice)>,
) -> Option<String> {
    match (inputs.installed_postgresql_majors.last(), system) {
        (Some(&newest), Some((clock, io))) if newest < 19 => {
            let list: Vec<String> = inputs.installed_postgresql_majors.iter().map(u32::to_string).collect();
            let ns = READS_PER_IO * clock.read_cost_ns;
            let io = if io.safe {
                format!("track_io_timing is safe to turn on ({ns:.0} ns per block I/O, small next to the I/O)")
            } else {
                format!("track_io_timing costs {ns:.0} ns per block I/O: measure the workload before turning it on")
            };
            Some(format!(
                "installed here: PostgreSQL {}, which always reads the system clock ({}): {io}",
                list.join(", "),
                clock.display_name
            ))
        }
        _ => tcs.map(str::to_string),
    }
}
