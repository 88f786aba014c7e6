//! `check`'s advice, one function per setting: track_io_timing and
//! track_wal_io_timing, auto_explain.log_timing, PostgreSQL 19's
//! timing_clock_source, and the verdict's one-line summary. Each setting is
//! decided by the one judge `clockscope explain` uses too
//! ([`clockscope_pg::predict::settings`]): the same prices give the same
//! decision in both commands; this file puts it in check's words.

use super::{VerdictInputs, LOG_TIMING_MAX_SLOWDOWN};
use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::verdict::{Advice, ExplainPrediction, Status};
use crate::i18n::{library::reason, num};
use crate::t;
use clockscope_pg::predict::settings::{self as judge_of, ClockSourceFacts, Estimate, SettingDecision, Verdict};

/// A slowdown at the baseline: labelled an example unless the user
/// measured the query's own time per row.
pub(super) fn at_baseline(inputs: &VerdictInputs, slowdown: f64, decimals: usize) -> String {
    let x = num(slowdown, decimals);
    let row = num(inputs.baseline_row_ns, 1);
    if inputs.baseline_is_example {
        t!(
            "example: {x}x for a {row} ns/row count(*) measured elsewhere",
            x = x,
            row = row
        )
    } else {
        t!("{x}x at your measured {row} ns/row", x = x, row = row)
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
        t!(
            "; {ns} ns with PostgreSQL 19's {clock} (timing_clock_source = tsc)",
            ns = num(setting.reads * ns, 0),
            clock = p.display_name
        )
    });
    let what = match d.verdict {
        Verdict::Cheap => t!("turn it on if you want I/O times"),
        Verdict::Costly => t!("keep it off"),
        _ => t!("no change either way"),
    };
    Advice {
        safe: d.verdict == Verdict::Cheap,
        why: t!(
            "{what}: each {per} adds {reads} INSTR_TIME_SET_CURRENT reads of {clock}: {decision}{tsc}",
            what = what,
            per = reason(setting.per),
            reads = setting.reads,
            clock = system.display_name,
            decision = reason(&d.text),
            tsc = tsc_part
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
            t!(", {x}x with PostgreSQL 19's {clock}", x = num(x, 2), clock = clock)
        });
    let (Some(per_row), Some(slowdown)) = (p.per_row_per_node_ns, p.slowdown) else {
        let d = judge_of::log_timing(None);
        return Advice {
            safe: true,
            why: t!(
                "with log_analyze on, each logged query pays EXPLAIN ANALYZE's timing; with {clock} it is {status}: \
                 nothing measured to set against the {limit}x limit{tsc}",
                clock = p.clock,
                status = p.status,
                limit = crate::i18n::localize_number(LOG_TIMING_MAX_SLOWDOWN.to_string()),
                tsc = tsc_part
            ),
            decision: Some(d),
        };
    };
    let d = judge_of::log_timing(Some(Estimate::new(slowdown, p.slowdown_low, p.slowdown_high)));
    let interval = match d.estimate.and_then(|e| e.low.zip(e.high)) {
        Some((lo, hi)) => t!(", 95% interval {low}x to {high}x", low = num(lo, 3), high = num(hi, 3)),
        None => String::new(),
    };
    Advice {
        // auto_explain's default is on: safe unless the judge finds it costly.
        safe: d.verdict != Verdict::Costly,
        why: t!(
            "with log_analyze on, each logged query pays EXPLAIN ANALYZE's timing, {per_row} ns per row \
             per plan node with {clock} ({slowdown}{interval}{tsc}; {judged}; queries doing more work per row pay \
             relatively less)",
            per_row = num(per_row, 0),
            clock = p.clock,
            slowdown = at_baseline(inputs, slowdown, 2),
            interval = interval,
            tsc = tsc_part,
            judged = {
                let limit = crate::i18n::localize_number(LOG_TIMING_MAX_SLOWDOWN.to_string());
                match d.verdict {
                    Verdict::Cheap => t!("below the {limit}x limit", limit = limit),
                    Verdict::Costly => t!("at or above the {limit}x limit", limit = limit),
                    _ => t!(
                        "the interval reaches the {limit}x limit: not a clear case",
                        limit = limit
                    ),
                }
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
            t!("PostgreSQL 19: nothing to set: it has no TSC clock here (it needs RDTSCP and an invariant TSC), so it \
                reads the system clock")
            .to_string()
        } else {
            t!(
                "PostgreSQL 19: nothing to set: it reads only the system clock on {arch} (timing_clock_source = tsc \
                 is x86-64 only)",
                arch = std::env::consts::ARCH
            )
        });
    }
    let value = d.recommended_value.as_deref()?;
    let why = decision_words(&d.text);
    Some(if value == "auto" {
        t!("PostgreSQL 19: keep timing_clock_source = auto: {why}", why = why)
    } else {
        t!(
            "PostgreSQL 19: set timing_clock_source = {value}: {why}",
            value = value,
            why = why
        )
    })
}

/// The one judge's reason for `timing_clock_source`
/// ([`judge_of::timing_clock_source`], English, in the library that
/// `explain` shares) in the report's language: each of its sentences is a
/// message here, matched by its English text (with its one parameter, the
/// TSC's trust reason); any other text is kept as it is.
/// `decision_words_follow_the_judge` checks that every sentence the judge
/// writes is matched.
pub(super) fn decision_words(text: &str) -> String {
    let between = |pre: &str, post: &str| {
        text.strip_prefix(pre)
            .and_then(|r| r.strip_suffix(post))
            .map(str::to_string)
    };
    if text == "auto picks tsc, and the TSC is trustworthy here" {
        t!("auto picks tsc, and the TSC is trustworthy here").to_string()
    } else if text == "auto picks system, but every piece of evidence says the TSC is trustworthy" {
        t!("auto picks system, but every piece of evidence says the TSC is trustworthy").to_string()
    } else if let Some(reason) = between("auto would pick tsc, but clockscope does not trust the TSC here (", ")") {
        t!(
            "auto would pick tsc, but clockscope does not trust the TSC here ({reason})",
            reason = crate::i18n::library::reason(&reason)
        )
    } else if let Some(reason) = between("auto picks system: the TSC is not trustworthy here (", ")") {
        t!(
            "auto picks system: the TSC is not trustworthy here ({reason})",
            reason = crate::i18n::library::reason(&reason)
        )
    } else {
        text.to_string()
    }
}

/// timing_clock_source exists from PostgreSQL 19 on: `rec` says so when
/// only older ones are installed (`installed`: majors, ascending).
pub(super) fn with_older_postgresql(rec: String, installed: &[u32]) -> String {
    match installed.last() {
        Some(&newest) if newest < 19 => {
            let list: Vec<String> = installed.iter().map(u32::to_string).collect();
            t!(
                "{rec}; installed here: PostgreSQL {versions}, which has no timing_clock_source and always reads the \
                 system clock",
                rec = rec,
                versions = list.join(", ")
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
            t!(
                "EXPLAIN ANALYZE adds about {ns} ns per row per plan node",
                ns = num(v, 0)
            )
        }
        (Some(v), Some(x)) => t!(
            "EXPLAIN ANALYZE adds about {ns} ns per row per plan node ({slowdown}; `clockscope explain` measures \
             your server)",
            ns = num(v, 0),
            slowdown = at_baseline(inputs, x, decimals)
        ),
        _ => t!(
            "EXPLAIN ANALYZE's timing cost with {clock}: {status} (`clockscope explain` measures your server)",
            clock = p.clock,
            status = status_words(&p.status)
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
        (Status::Broken, _) => t!("Time went backwards: timings on this machine cannot be trusted.").to_string(),
        (Status::Bad, _) if inputs.time_interposition.is_some() => t!(
            "Something between clockscope and the kernel changes time (an LD_PRELOAD time library such as \
             libfaketime, a broken vDSO): these measurements do not describe the kernel's clocks, and the CPU counter \
             is not trusted."
        )
        .to_string(),
        (_, None) | (Status::NoVerdict, _) => {
            t!("The system clock was not measured: no verdict on PostgreSQL's timing.").to_string()
        }
        (Status::Bad, Some(p)) => t!(
            "Reading the clock is slow here ({ns} ns per read): {explain} and track_io_timing is costly.",
            ns = num(p.per_read_ns, 0),
            explain = explain_adds(p, inputs, 1, example)
        ),
        (Status::Fair, Some(p)) => t!(
            "Reading the clock is usable but not cheap here ({ns} ns per read): {explain}.",
            ns = num(p.per_read_ns, 0),
            explain = explain_adds(p, inputs, 2, example)
        ),
        (Status::Good, Some(p)) => t!(
            "Reading the clock is cheap here ({ns} ns per read): {explain}.",
            ns = num(p.per_read_ns, 0),
            explain = explain_adds(p, inputs, 2, example)
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
                Some((Verdict::Cheap, Some(share))) => t!(
                    "track_io_timing is safe to turn on ({ns} ns per block I/O, {pct}% of a cached 8 kB read)",
                    ns = num(
                        TRACK_IO_TIMING.reads * inputs.io_prices.system.map_or(clock.read_cost_ns, |e| e.value),
                        0
                    ),
                    pct = num(share.value * 100.0, 1)
                ),
                Some((Verdict::Costly, Some(share))) => t!(
                    "track_io_timing costs {ns} ns per block I/O, {pct}% of a cached 8 kB read: keep it off",
                    ns = num(
                        TRACK_IO_TIMING.reads * inputs.io_prices.system.map_or(clock.read_cost_ns, |e| e.value),
                        0
                    ),
                    pct = num(share.value * 100.0, 1)
                ),
                _ => t!(
                    "track_io_timing: no change either way ({why})",
                    why = io
                        .decision
                        .as_ref()
                        .map_or_else(|| t!("not priced").to_string(), |d| reason(&d.text))
                ),
            };
            Some(t!(
                "installed here: PostgreSQL {versions}, which always reads the system clock ({clock}): {io}",
                versions = list.join(", "),
                clock = clock.display_name,
                io = io
            ))
        }
        _ => tcs.map(str::to_string),
    }
}

/// The first words of a prediction's status ("resolved", "not resolved",
/// "not measured") in the report's language.
fn status_words(status: &str) -> String {
    match status.split(':').next().unwrap_or_default() {
        "resolved" => t!("resolved").to_string(),
        "not measured" => t!("not measured").to_string(),
        "not resolved" => t!("not resolved").to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod words_tests {
    use super::*;

    #[test]
    fn decision_words_follow_the_judge() {
        let ru = crate::i18n::Lang::from_code("ru").unwrap();
        for (trusted, auto) in [(true, false), (true, true), (false, true), (false, false)] {
            let d = judge_of::timing_clock_source(&ClockSourceFacts {
                postgresql_reads_counter: true,
                auto_picks_tsc: Some(auto),
                tsc_trusted: Some(trusted),
                tsc_reason: Some("no invariant TSC".into()),
                system_read_ns: None,
                tsc_read_ns: None,
            });
            assert_eq!(crate::i18n::in_english(|| decision_words(&d.text)), d.text);
            let words = crate::i18n::with_language(ru, || decision_words(&d.text));
            assert_ne!(words, d.text, "not matched: {}", d.text);
            assert_eq!(words.contains("no invariant TSC"), d.text.contains("no invariant TSC"));
        }
    }
}
