//! `check`'s advice, one function per setting: track_io_timing and
//! track_wal_io_timing, auto_explain.log_timing, PostgreSQL 19's
//! timing_clock_source, and the verdict's one-line summary. Each setting is
//! decided by the one judge `clockscope explain` uses too
//! ([`clockscope_pg::predict::settings`]): the same prices give the same
//! decision in both commands; this file puts it in check's words.

use super::{VerdictInputs, LOG_TIMING_MAX_SLOWDOWN};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::verdict::{Advice, ExplainPrediction, Status};
use clockscope_pg::predict::settings::{self as judge_of, ClockSourceFacts, Estimate, SettingDecision, Verdict};

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

pub(super) use clockscope_pg::predict::settings::{IoSetting, TRACK_IO_TIMING, TRACK_WAL_IO_TIMING};

/// track_io_timing / track_wal_io_timing, decided by the one judge
/// ([`judge_of::io_timing`]) on the system clock's back-to-back read cost
/// (every PostgreSQL version reads it around an I/O; PostgreSQL 19 with
/// `timing_clock_source = tsc` reads RDTSCP, `precise_tsc`, shown beside it)
/// against the page-cache read: cheap (safe to turn on), costly (keep it
/// off), or not resolved.
pub(super) fn io_timing(
    setting: &IoSetting,
    system: &ClockStats,
    precise_tsc: Option<&ClockStats>,
    inputs: &VerdictInputs,
) -> Advice {
    let prices = &inputs.io_prices;
    let d = judge_of::io_timing(setting, prices.system, prices.page_read);
    let tsc_part = precise_tsc.map_or(String::new(), |p| {
        let ns = prices.precise_tsc.map_or(p.read_cost_ns, |e| e.value);
        format!(
            "; {:.0} ns with PostgreSQL 19's {} (timing_clock_source = tsc)",
            setting.reads * ns,
            p.display_name
        )
    });
    let what = match d.verdict {
        Verdict::Cheap => "turn it on if you want I/O times",
        Verdict::Costly => "keep it off",
        _ => "no change either way",
    };
    Advice {
        safe: d.verdict == Verdict::Cheap,
        why: format!(
            "{what}: each {} adds {} INSTR_TIME_SET_CURRENT reads of {}: {}{tsc_part}",
            setting.per, setting.reads, system.display_name, d.text
        ),
        decision: Some(d),
    }
}

/// auto_explain.log_timing, decided by the one judge
/// ([`judge_of::log_timing`]) on the system clock's prediction `p` (every
/// PostgreSQL version reads it; PostgreSQL 19 with the TSC, `tsc`, is shown
/// beside it): costly only when the slowdown's whole interval is at or
/// above [`LOG_TIMING_MAX_SLOWDOWN`], cheap when wholly below it; `safe`
/// (to leave on, auto_explain's default) unless costly.
pub(super) fn log_timing(p: &ExplainPrediction, tsc: Option<&ExplainPrediction>, inputs: &VerdictInputs) -> Advice {
    let tsc_part = tsc
        .filter(|t| t.used_by_postgresql)
        .and_then(|t| t.slowdown.map(|x| (x, &t.clock)))
        .map_or(String::new(), |(x, clock)| {
            format!(", {x:.2}x with PostgreSQL 19's {clock}")
        });
    let (Some(per_row), Some(slowdown)) = (p.per_row_per_node_ns, p.slowdown) else {
        let d = judge_of::log_timing(None);
        return Advice {
            safe: true,
            why: format!(
                "with log_analyze on, each logged query pays EXPLAIN ANALYZE's timing; with {} it is {}: \
                 nothing measured to set against the {LOG_TIMING_MAX_SLOWDOWN}x limit{tsc_part}",
                p.clock, p.status
            ),
            decision: Some(d),
        };
    };
    let d = judge_of::log_timing(Some(Estimate::new(slowdown, p.slowdown_low, p.slowdown_high)));
    let interval = match d.estimate.and_then(|e| e.low.zip(e.high)) {
        Some((lo, hi)) => format!(", 95% interval {lo:.3}x to {hi:.3}x"),
        None => String::new(),
    };
    Advice {
        // auto_explain's default is on: safe unless the judge finds it costly.
        safe: d.verdict != Verdict::Costly,
        why: format!(
            "with log_analyze on, each logged query pays EXPLAIN ANALYZE's timing, {per_row:.0} ns per row \
             per plan node with {} ({}{interval}{tsc_part}; {}; queries doing more work per row pay \
             relatively less)",
            p.clock,
            at_baseline(inputs, slowdown, 2),
            match d.verdict {
                Verdict::Cheap => format!("below the {LOG_TIMING_MAX_SLOWDOWN}x limit"),
                Verdict::Costly => format!("at or above the {LOG_TIMING_MAX_SLOWDOWN}x limit"),
                _ => format!("the interval reaches the {LOG_TIMING_MAX_SLOWDOWN}x limit: not a clear case"),
            }
        ),
        decision: Some(d),
    }
}

/// What `timing_clock_source=auto` picks in PostgreSQL 19, in its own words.
pub(super) fn postgresql19_auto_picks(inputs: &VerdictInputs) -> Option<String> {
    inputs
        .postgresql_auto_uses_tsc
        .map(|t| if t { "tsc" } else { "system" }.to_string())
}

/// PostgreSQL 19's `timing_clock_source`, decided by the one judge
/// ([`judge_of::timing_clock_source`]) from what `auto` picks here and
/// clockscope's trust in the TSC.
pub(super) fn clock_source_decision(inputs: &VerdictInputs) -> SettingDecision {
    judge_of::timing_clock_source(&ClockSourceFacts {
        postgresql_reads_counter: inputs.postgresql_reads_counter,
        auto_picks_tsc: inputs.postgresql_auto_uses_tsc,
        tsc_trusted: inputs.tsc_trusted,
        tsc_reason: inputs.tsc_reason.clone(),
        system_read_ns: None,
        tsc_read_ns: None,
    })
}

/// The decision `d` in check's words: nothing to set when PostgreSQL 19
/// cannot read the counter here (`native_tsc`: this machine's counter is a
/// TSC, which PostgreSQL could read given RDTSCP and an invariant TSC); else
/// keep or set the value the judge gives. `None` when it gives none.
pub(super) fn timing_clock_source(inputs: &VerdictInputs, d: &SettingDecision, native_tsc: bool) -> Option<String> {
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
    let value = d.recommended_value.as_deref()?;
    Some(if value == "auto" {
        format!("PostgreSQL 19: keep timing_clock_source = auto: {}", d.text)
    } else {
        format!("PostgreSQL 19: set timing_clock_source = {value}: {}", d.text)
    })
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
            let io = match io.decision.as_ref().map(|d| (d.verdict, d.estimate)) {
                Some((Verdict::Cheap, Some(share))) => format!(
                    "track_io_timing is safe to turn on ({:.0} ns per block I/O, {:.1}% of a cached 8 kB read)",
                    TRACK_IO_TIMING.reads * inputs.io_prices.system.map_or(clock.read_cost_ns, |e| e.value),
                    share.value * 100.0
                ),
                Some((Verdict::Costly, Some(share))) => format!(
                    "track_io_timing costs {:.0} ns per block I/O, {:.1}% of a cached 8 kB read: keep it off",
                    TRACK_IO_TIMING.reads * inputs.io_prices.system.map_or(clock.read_cost_ns, |e| e.value),
                    share.value * 100.0
                ),
                _ => format!(
                    "track_io_timing: no change either way ({})",
                    io.decision.as_ref().map_or("not priced", |d| d.text.as_str())
                ),
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
