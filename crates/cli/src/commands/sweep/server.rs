//! `sweep --dsn`'s second pass: under each clocksource the first pass
//! measured soundly, switched to and read back, the server's real EXPLAIN
//! ANALYZE overhead (`explain`'s measurement, injected as
//! [`MeasureServer`]: [`super::dsn`] in production, scripted in
//! tests), then `current_clocksource` read back again.
//!
//! `--max-time` covers the whole sweep, counted from its start: the first
//! pass's read-cost rounds (`-d` under each clocksource), then each
//! clocksource's EXPLAIN runs get an equal share of what is left
//! ([`share`]), so one that ends early leaves its rest to the next ones.
//! Ctrl-C ends the pass after the running measurement has stopped (its
//! statement cancelled, its pairs kept); the sweep then restores the
//! original and prints what was measured.

use crate::commands::sweep::model::{ServerExplain, SweepReport, SweepServer};
use crate::commands::sweep::restore::Restorer;
use crate::exit;
use std::time::Duration;

/// What the server measured under one clocksource.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerOutcome {
    /// The server's clock for EXPLAIN that follows the kernel clocksource
    /// (`system`), or what it ran on when it could not be set; `None` when
    /// no pair of runs completed (a stop before the first).
    pub explain: Option<ServerExplain>,
    /// PostgreSQL 19's `timing_clock_source = tsc`, when measured in this run.
    pub tsc_reference: Option<ServerExplain>,
    /// The server's version and workload, which the report's header takes
    /// from the first outcome that has them.
    pub facts: Option<ServerFacts>,
    /// What `explain` warned of, each once.
    pub warnings: Vec<String>,
    /// Ctrl-C (or SIGTERM) stopped the measurement.
    pub interrupted: bool,
}

/// What the header of [`SweepServer`] learns from the server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerFacts {
    pub server_version: String,
    pub server_version_num: u32,
    pub query: String,
    pub workload: String,
    pub rows: u64,
    pub clock_source_note: String,
}

/// Runs `explain`'s measurement under the clocksource in place: (its name,
/// its share of `--max-time`, whether it is the first measured, which on
/// PostgreSQL 19 also measures `timing_clock_source = tsc` once).
pub type MeasureServer<'a> = &'a mut dyn FnMut(&str, Duration, bool) -> anyhow::Result<ServerOutcome>;

/// `--dsn`'s part of a sweep.
pub struct ServerPlan<'a> {
    /// `--max-time`, over the whole sweep.
    pub max_time: Duration,
    /// The time since the sweep started (a scripted clock in tests).
    pub elapsed: &'a mut dyn FnMut() -> Duration,
    pub measure: MeasureServer<'a>,
    /// The header, before the server has said anything.
    pub header: SweepServer,
}

/// The share of `--max-time` for the next clocksource: the time left at
/// `elapsed`, split equally over the `remaining` clocksources (it included).
pub fn share(max_time: Duration, elapsed: Duration, remaining: usize) -> Duration {
    max_time.saturating_sub(elapsed) / u32::try_from(remaining.max(1)).unwrap_or(u32::MAX)
}

/// The shortest share of `--max-time` worth connecting for: enough for a
/// connection, the TEMP table of the default million rows, a warm-up and a
/// pair of runs on a local server.
pub const MIN_SHARE: Duration = Duration::from_secs(2);

/// Refuses a `--max-time` that leaves less than [`MIN_SHARE`] per
/// clocksource once the read-cost rounds (`duration_s` under each of
/// `clocksources`) have run: one line naming both options.
pub fn check_max_time(max_time: Duration, duration_s: f64, clocksources: usize) -> anyhow::Result<()> {
    let n = clocksources.max(1);
    let rounds = Duration::from_secs_f64(duration_s * n as f64);
    let left = share(max_time, rounds, n);
    if left < MIN_SHARE {
        anyhow::bail!(
            "--max-time {} s: after -d {} s under each of {n} clocksource(s) it leaves {:.1} s per clocksource for \
             EXPLAIN ANALYZE, under the {} s needed; give at least --max-time {}",
            max_time.as_secs_f64(),
            duration_s,
            left.as_secs_f64(),
            MIN_SHARE.as_secs(),
            (rounds + MIN_SHARE * n as u32).as_secs_f64().ceil()
        );
    }
    Ok(())
}

/// The second pass over `planned` (see the module): fills each measured
/// row's `server_explain` and the report's `server`; then, when the
/// original and another were measured, the original again (the sweep's
/// A/A control, `original_again`).
pub fn explain_each(
    planned: &[String],
    switching: &mut Restorer,
    plan: &mut ServerPlan<'_>,
    report: &mut SweepReport,
) -> anyhow::Result<()> {
    let mut header = plan.header.clone();
    let mut turns: Vec<(usize, bool)> = planned
        .iter()
        .filter_map(|name| report.results.iter().position(|r| r.clocksource == *name && r.valid))
        .map(|row| (row, false))
        .collect();
    let original = report
        .results
        .iter()
        .position(|r| r.clocksource == report.original && r.valid);
    if let Some(row) = original.filter(|_| turns.len() >= 2) {
        turns.push((row, true));
    }
    let total = turns.len();
    for (k, (row, again)) in turns.into_iter().enumerate() {
        if exit::interrupted() {
            report.interrupted = true;
            break;
        }
        let name = report.results[row].clocksource.clone();
        let share = share(plan.max_time, (plan.elapsed)(), total - k);
        if share.is_zero() {
            header.warnings.push(format!(
                "{name}{}: not measured on the server: --max-time {} s was spent before its turn",
                if again { " (again, at the end)" } else { "" },
                plan.max_time.as_secs_f64()
            ));
            continue;
        }
        let Some(outcome) = turn(&name, share, (k == 0, again), switching, plan, report, row)? else {
            break;
        };
        merge(&mut header, &name, &outcome);
        if again {
            header.original_again = outcome.explain;
        } else {
            report.results[row].server_explain = outcome.explain;
        }
        if outcome.interrupted {
            report.interrupted = true;
            break;
        }
    }
    report.server = Some(header);
    Ok(())
}

/// One clocksource's turn: switch (guarded, read back), measure, read back
/// again. `None` when someone else changed the clocksource meanwhile: the
/// sweep stops, and the row is marked invalid (the original's repeat,
/// `again`, is dropped instead: its row was measured soundly before).
fn turn(
    name: &str,
    share: Duration,
    (first, again): (bool, bool),
    switching: &mut Restorer,
    plan: &mut ServerPlan<'_>,
    report: &mut SweepReport,
    row: usize,
) -> anyhow::Result<Option<ServerOutcome>> {
    switching.switch_to(name)?;
    let outcome = (plan.measure)(name, share, first)?;
    let after = switching.control().current()?;
    if after == name {
        return Ok(Some(outcome));
    }
    let during = if again {
        "the repeat of"
    } else {
        "the EXPLAIN runs under"
    };
    report.changed_by_others = Some(format!(
        "the clocksource changed from {name} to {after} during {during} {name}, not by this sweep: the sweep \
         stopped there"
    ));
    if again {
        return Ok(None);
    }
    let r = &mut report.results[row];
    r.valid = false;
    r.read_back_after = after.clone();
    r.invalid_reason = Some(format!(
        "current_clocksource read {after} after the EXPLAIN runs, not {name}: changed during them by someone else \
         or the kernel's clocksource watchdog, so the server's numbers are not {name}'s alone"
    ));
    Ok(None)
}

/// Adds one outcome to the header: the server's facts (first seen), the
/// TSC reference (once), its warnings (each text once, under the first
/// clocksource that gave it).
fn merge(header: &mut SweepServer, clocksource: &str, outcome: &ServerOutcome) {
    if let (None, Some(f)) = (&header.server_version, &outcome.facts) {
        header.server_version = Some(f.server_version.clone());
        header.server_version_num = Some(f.server_version_num);
        header.query = f.query.clone();
        header.workload = f.workload.clone();
        header.rows = f.rows;
        header.clock_source_note = f.clock_source_note.clone();
    }
    if header.tsc_reference.is_none() {
        header.tsc_reference = outcome.tsc_reference.clone();
    }
    // The sweep shows the server's measured overhead, not explain's
    // prediction: warnings about the prediction and this machine's clock
    // loops behind it are not the sweep's.
    let about_prediction = |w: &&String| w.contains("prediction") || w.contains("for this machine's clocks");
    for w in outcome.warnings.iter().filter(|w| !about_prediction(w)) {
        let seen = header
            .warnings
            .iter()
            .any(|h| h.split_once(": ").is_some_and(|(_, t)| t == w));
        if !seen {
            header.warnings.push(format!("{clocksource}: {w}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_share_is_the_time_left_split_over_those_left() {
        let s = Duration::from_secs;
        assert_eq!(share(s(60), s(6), 3), s(18));
        // The first ended early (after 10 s, not 18): the rest share its time.
        assert_eq!(share(s(60), s(16), 2), s(22));
        assert_eq!(share(s(60), s(70), 1), Duration::ZERO);
    }

    #[test]
    fn a_max_time_the_read_cost_rounds_eat_is_refused_naming_both_options() {
        let e = check_max_time(Duration::from_secs(5), 1.0, 3).unwrap_err().to_string();
        assert!(e.starts_with("--max-time 5 s: after -d 1 s under each of 3"), "{e}");
        assert!(e.ends_with("give at least --max-time 9"), "{e}");
        check_max_time(Duration::from_secs(9), 1.0, 3).unwrap();
    }
}
