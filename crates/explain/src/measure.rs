//! The measuring procedure, over any [`ExplainServer`]: per clock source the
//! server offers, a warm-up, then EXPLAIN with TIMING OFF and TIMING ON
//! alternately, reading "Execution Time" from each plan.
//!
//! # Order
//! Pairs alternate their order, TIMING OFF then ON, then ON then OFF (ABBA):
//! two consecutive pairs make a balanced block ([`crate::stats::block_ratios`]),
//! in which whatever falls on the first or the second run of a pair (a
//! cache, a CPU's speed left behind by the model slice that runs before each
//! pair's first run) falls on each mode equally. Alternating rather than
//! all-off-then-all-on also keeps slow drifts (frequency scaling, a
//! neighbour on a shared host) from landing on one mode only.
//!
//! # The A/A control
//! After every two blocks, one control block: two pairs of TIMING OFF
//! against TIMING OFF, in the same places, its second role standing for ON
//! ([`SCHEDULE`]). Its block ratios show what the method reports when there
//! is no effect: the machine's own variation, and any bias of the order,
//! now. The report states a slowdown only when its interval clears the
//! control's (`report`).
//!
//! Clock sources: PostgreSQL before 19 always uses the system clock
//! (`clock_gettime(CLOCK_MONOTONIC)` on Linux). PostgreSQL 19 has the
//! superuser-only setting `timing_clock_source` (auto | system | tsc): we SET
//! it to 'system' and to 'tsc' in turn when the role may, else measure the
//! current setting and say why.
//!
//! # Noise control
//! Pairs go on until the 95% interval of the median block slowdown
//! ([`crate::stats::median_interval`] of the block ratios) is within +-5%
//! of it and the control has [`CONTROL_MIN_BLOCKS`] blocks (an interval), with
//! at least `--runs` TIMING OFF/ON pairs first; or until
//! `--max-time` (counted from the first warm-up, over all clock sources,
//! which share what is left equally) would be passed by one more pair
//! (judged by the last pair's time); or at [`MAX_RUNS`] pairs. Which of
//! these ended the runs is [`StopReason`].

use crate::clock_source::current_is;
use crate::error::Error;
use crate::options::{Options, MAX_RUNS, WARMUP_RUNS};
use crate::plan::{parse_explain_json, PlanSummary};
use clockscope::Control;
use serde::Serialize;
use std::time::Duration;

/// First server version (`server_version_num`) with `timing_clock_source`.
pub const PG19_VERSION_NUM: u32 = 190_000;
/// The SQLSTATE of "permission denied" (insufficient_privilege).
pub(crate) const INSUFFICIENT_PRIVILEGE: &str = "42501";

mod schedule;
pub use schedule::{alternating, ControlRuns, Slot, CONTROL_MIN_BLOCKS, ORDER_TEXT, SCHEDULE};

/// What the procedure needs from a server session holding the TEMP table.
pub trait ExplainServer {
    /// The JSON text of `EXPLAIN (ANALYZE, TIMING on|off, FORMAT JSON)` of
    /// the count(*) over the TEMP table.
    fn explain(&mut self, timing: bool) -> Result<String, Error>;
    /// `SET timing_clock_source = value` for this session.
    fn set_clock_source(&mut self, value: &str) -> Result<(), Error>;
    /// `SHOW timing_clock_source`.
    fn show_clock_source(&mut self) -> Result<String, Error>;
    /// `RESET timing_clock_source`.
    fn reset_clock_source(&mut self) -> Result<(), Error>;
    /// The time left for the next EXPLAIN under `--max-time`: a server that
    /// can bound one statement (`--query`'s `SET LOCAL statement_timeout`)
    /// does; the statement then fails with [`Error::MaxTime`].
    fn limit_next(&mut self, _left: Duration) {}
}

/// What ended a clock source's runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The 95% interval of the median slowdown came within +-5%.
    Precision,
    /// `--max-time` would have been passed by another pair.
    MaxTime,
    /// [`MAX_RUNS`] pairs ran without reaching the precision.
    MaxRuns,
    /// Ctrl-C (or the observer) stopped the runs.
    Interrupted,
}

/// Which measurement is about to start (for progress and Ctrl-C).
#[derive(Clone, Debug, PartialEq)]
pub enum Step<'a> {
    /// One EXPLAIN: `run` counts the pairs from 1 (A/A control pairs
    /// included); warm-ups are run 0. `first` is the first run of its pair
    /// (the model's slice goes before it); `control` an A/A pair's run.
    Explain {
        clock_source: &'a str,
        run: u32,
        runs: u32,
        timing: bool,
        first: bool,
        control: bool,
    },
    /// Measuring this machine's clock for the prediction.
    MeasuringClock { clock: &'a str },
}

/// The runs on one clock source.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceRuns {
    /// As the server names it: "system", "tsc", "auto (tsc)", ...
    pub clock_source: String,
    /// How this source came to be used.
    pub how: String,
    /// Execution Time with TIMING OFF, ms, pair by pair in run order (pair
    /// k ran ON first when k is odd: [`alternating`]).
    pub timing_off_ms: Vec<f64>,
    /// Execution Time with TIMING ON, ms, pair by pair.
    pub timing_on_ms: Vec<f64>,
    /// The A/A control pairs run between them.
    pub control: ControlRuns,
    /// Clock reads per TIMING ON run, from its plan's counts.
    pub clock_reads_per_run: u64,
    /// What ended the runs.
    pub stopped_by: StopReason,
    /// The last TIMING ON plan's JSON (for `--query`'s per-node breakdown).
    pub timing_on_plan: Option<String>,
}

/// A clock source that was wanted but could not be measured.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    /// The timing_clock_source value that was not measured.
    pub clock_source: String,
    /// The server's refusal or the missing privilege, in words.
    pub reason: String,
}

/// Everything measured on the server.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerRuns {
    pub sources: Vec<SourceRuns>,
    pub skipped: Vec<Skipped>,
    /// Ctrl-C (or the observer) stopped the runs early.
    pub interrupted: bool,
    /// "Execution Time" of every EXPLAIN, warm-ups included, summed (ms):
    /// the server's busy time on our behalf.
    pub server_busy_ms: f64,
}

/// Whether the server has `timing_clock_source` (PostgreSQL 19+ and the
/// setting exists).
pub(crate) fn has_clock_source_setting(version_num: u32, setting_exists: bool) -> bool {
    version_num >= PG19_VERSION_NUM && setting_exists
}

/// Runs the procedure. `clock_setting` says whether the server has
/// `timing_clock_source`; `observer` is asked before every EXPLAIN and may
/// stop the runs (what was measured so far is kept).
pub fn run_sources(
    server: &mut dyn ExplainServer,
    clock_setting: bool,
    opts: &Options,
    observer: &mut dyn FnMut(&Step) -> Control,
) -> Result<ServerRuns, Error> {
    let start = clockscope_system::forward::now();
    run_sources_timed(server, clock_setting, opts, observer, &mut || {
        clockscope_system::forward::since(start)
    })
}

/// [`run_sources`] with the time since the start from `elapsed` (a scripted
/// clock in tests), which `--max-time` is counted on.
pub fn run_sources_timed(
    server: &mut dyn ExplainServer,
    clock_setting: bool,
    opts: &Options,
    observer: &mut dyn FnMut(&Step) -> Control,
    elapsed: &mut dyn FnMut() -> Duration,
) -> Result<ServerRuns, Error> {
    let mut p = Procedure {
        opts,
        observer,
        timer: Timer {
            elapsed,
            max_time: opts.max_time,
            until: opts.max_time,
        },
        out: ServerRuns::default(),
    };
    if !clock_setting {
        let how = "the server's only clock for EXPLAIN (before PostgreSQL 19)".to_string();
        p.run_one(server, "system", how)?;
        return check_any(p.out);
    }
    let current = server.show_clock_source()?;
    let (was_set, denied) = p.each_clock_source(server)?;
    // After a stop the session ends without further statements.
    if was_set && !p.out.interrupted {
        server.reset_clock_source()?;
    }
    if let Some(e) = denied {
        p.current_only(server, &current, &e)?;
    }
    check_any(p.out)
}

fn check_any(out: ServerRuns) -> Result<ServerRuns, Error> {
    if out.sources.is_empty() {
        if out.interrupted {
            return Err(Error::Interrupted);
        }
        let reasons: Vec<String> = out
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.clock_source, s.reason))
            .collect();
        return Err(Error::Plan(format!(
            "no clock source could be measured ({})",
            reasons.join("; ")
        )));
    }
    Ok(out)
}

/// `--max-time` on a clock (`elapsed` since the start).
struct Timer<'a> {
    elapsed: &'a mut dyn FnMut() -> Duration,
    max_time: Duration,
    /// The current source's runs end by this time since the start.
    until: Duration,
}

impl Timer<'_> {
    /// Gives the next source its share of the time left, `sources` being
    /// the sources still to run (this one included).
    fn share(&mut self, sources: u32) {
        let now = (self.elapsed)();
        self.until = now + self.max_time.saturating_sub(now) / sources.max(1);
    }

    fn left(&mut self) -> Duration {
        self.until.saturating_sub((self.elapsed)())
    }

    fn now(&mut self) -> Duration {
        (self.elapsed)()
    }
}

/// One EXPLAIN: the plan and its JSON text. `rows` is the row count the
/// count(*) workload must see (`None` for `--query`).
fn explain_once(
    server: &mut dyn ExplainServer,
    timing: bool,
    rows: Option<u64>,
    busy_ms: &mut f64,
) -> Result<(PlanSummary, String), Error> {
    let text = server.explain(timing)?;
    let plan = parse_explain_json(&text)?;
    *busy_ms += plan.server_busy_ms();
    if plan.has_node_timing != timing {
        return Err(Error::Plan(format!(
            "asked for TIMING {}, the plan {} per-node times",
            if timing { "ON" } else { "OFF" },
            if plan.has_node_timing { "has" } else { "has no" }
        )));
    }
    if let Some(rows) = rows.filter(|r| plan.max_node_rows() != *r) {
        return Err(Error::Plan(format!(
            "the scan returned {} rows, the TEMP table has {rows}",
            plan.max_node_rows()
        )));
    }
    Ok((plan, text))
}

/// Whether the blocks so far reach the target precision, with a control
/// that has its interval.
fn precise(src: &SourceRuns) -> bool {
    let n = src.timing_off_ms.len();
    let ratios = crate::stats::block_ratios(&src.timing_off_ms, &src.timing_on_ms, &alternating(n));
    src.control.block_ratios().len() >= CONTROL_MIN_BLOCKS
        && crate::stats::precision(&ratios).is_some_and(|p| p.reached)
}

/// How a statement's failure ends the runs: a stop or the time cap keep
/// the pairs so far (the time cap only once a pair exists).
fn ended(e: &Error, pairs: usize) -> Option<StopReason> {
    match e {
        Error::Interrupted => Some(StopReason::Interrupted),
        Error::MaxTime(_) if pairs > 0 => Some(StopReason::MaxTime),
        _ => None,
    }
}

/// How one pair of runs ended.
enum Pair {
    /// Both runs' execution times, ms (TIMING OFF, TIMING ON; for a control
    /// pair the runs in those roles).
    Done([f64; 2]),
    /// The source's runs end here (its `stopped_by` says why).
    Stopped,
    /// The source is skipped (recorded in `skipped`): no pair of its runs.
    Skipped,
}

/// The procedure's state: the options, the observer, `--max-time`'s clock,
/// and what was measured so far.
struct Procedure<'a> {
    opts: &'a Options,
    observer: &'a mut dyn FnMut(&Step) -> Control,
    timer: Timer<'a>,
    out: ServerRuns,
}

impl Procedure<'_> {
    /// SET timing_clock_source to 'system', then 'tsc' (those of
    /// `opts.timing_clock_sources`), each measured with an equal share of the
    /// time left; says whether one was set, and the refusal when the role
    /// may not set it.
    fn each_clock_source(&mut self, server: &mut dyn ExplainServer) -> Result<(bool, Option<Error>), Error> {
        let mut was_set = false;
        let wanted = self.opts.timing_clock_sources.values();
        for (i, &want) in wanted.iter().enumerate() {
            if self.out.interrupted {
                break;
            }
            // Each source gets an equal share of the time left.
            self.timer.share((wanted.len() - i) as u32);
            match server.set_clock_source(want) {
                Err(Error::Interrupted) => {
                    self.out.interrupted = true;
                    break;
                }
                // --max-time's deadline passed: what was measured stands.
                Err(Error::MaxTime(why)) if !self.out.sources.is_empty() => {
                    self.skip(want, format!("--max-time: {why}"));
                    break;
                }
                Ok(()) => {
                    was_set = true;
                    let how = format!("SET timing_clock_source = '{want}' for this session");
                    self.run_one(server, want, how)?;
                }
                Err(e) if e.sqlstate() == Some(INSUFFICIENT_PRIVILEGE) => return Ok((was_set, Some(e))),
                // Any other refusal from the server (e.g. no usable TSC): skip this one.
                Err(e) if e.sqlstate().is_some() => self.skip(want, e.to_string()),
                Err(e) => return Err(e),
            }
        }
        Ok((was_set, None))
    }

    /// The role may not SET timing_clock_source (`denied`): the sources not
    /// measured are skipped with that reason, and the `current` setting is
    /// measured as the server runs.
    fn current_only(&mut self, server: &mut dyn ExplainServer, current: &str, denied: &Error) -> Result<(), Error> {
        let reason = format!("this role may not SET timing_clock_source (superuser only): {denied}");
        for &want in self.opts.timing_clock_sources.values() {
            if !self.out.sources.iter().any(|s| s.clock_source == want) && !current_is(current, want) {
                self.skip(want, reason.clone());
            }
        }
        if !self.out.interrupted {
            // The reason is said once, on the skipped source's line.
            let how = "the current setting, measured as the server runs (SET refused)".to_string();
            self.timer.share(1);
            self.run_one(server, current, how)?;
        }
        Ok(())
    }

    fn skip(&mut self, clock_source: &str, reason: String) {
        self.out.skipped.push(Skipped {
            clock_source: clock_source.to_string(),
            reason,
        });
    }

    /// Asks the observer before one EXPLAIN: true to go on.
    fn ask(&mut self, clock_source: &str, run: u32, timing: bool, first: bool, control: bool) -> bool {
        let runs = self.min_pairs();
        (self.observer)(&Step::Explain {
            clock_source,
            run,
            runs,
            timing,
            first,
            control,
        }) == Control::Continue
    }

    fn min_pairs(&self) -> u32 {
        self.opts.runs.clamp(1, MAX_RUNS)
    }

    /// The row count the count(*) workload must see (`None` for `--query`).
    fn rows(&self) -> Option<u64> {
        self.opts.query.is_none().then_some(self.opts.rows)
    }

    /// One clock source: the warm-up, then pairs until a stopping rule.
    fn run_one(&mut self, server: &mut dyn ExplainServer, clock_source: &str, how: String) -> Result<(), Error> {
        let mut src = SourceRuns {
            clock_source: clock_source.to_string(),
            how,
            timing_off_ms: Vec::new(),
            timing_on_ms: Vec::new(),
            control: ControlRuns::default(),
            clock_reads_per_run: 0,
            stopped_by: StopReason::MaxRuns,
            timing_on_plan: None,
        };
        if !self.warm_up(server, clock_source)? || !self.pairs(server, &mut src)? {
            return Ok(());
        }
        // The loop ran out: was the last pair the precise one?
        if src.stopped_by == StopReason::MaxRuns && precise(&src) {
            src.stopped_by = StopReason::Precision;
        }
        if !src.timing_on_ms.is_empty() {
            self.out.sources.push(src);
        }
        Ok(())
    }

    /// The warm-up runs; false when they ended the source (a stop, or
    /// `--max-time` with another source measured).
    fn warm_up(&mut self, server: &mut dyn ExplainServer, clock_source: &str) -> Result<bool, Error> {
        let rows = self.rows();
        for _ in 0..WARMUP_RUNS {
            for timing in [false, true] {
                if !self.ask(clock_source, 0, timing, !timing, false) {
                    self.out.interrupted = true;
                    return Ok(false);
                }
                let left = self.timer.left();
                server.limit_next(left);
                match explain_once(server, timing, rows, &mut self.out.server_busy_ms) {
                    Err(Error::Interrupted) => {
                        self.out.interrupted = true;
                        return Ok(false);
                    }
                    // Another source was measured: this one is skipped.
                    Err(Error::MaxTime(why)) if !self.out.sources.is_empty() => {
                        let reason = format!(
                            "--max-time: {why}; its warm-up run did not end within {:.1} s",
                            left.as_secs_f64()
                        );
                        self.skip(clock_source, reason);
                        return Ok(false);
                    }
                    Err(Error::MaxTime(why)) => {
                        return Err(Error::MaxTime(format!(
                            "{why}; the warm-up run did not end within {:.1} s",
                            left.as_secs_f64()
                        )))
                    }
                    other => other?,
                };
            }
        }
        Ok(true)
    }

    /// Pairs of runs in [`SCHEDULE`]'s order until the precision, the time
    /// cap, a stop or [`MAX_RUNS`] TIMING OFF/ON pairs; false when the source
    /// was skipped.
    fn pairs(&mut self, server: &mut dyn ExplainServer, src: &mut SourceRuns) -> Result<bool, Error> {
        let mut last_pair = Duration::ZERO;
        for run in 1.. {
            let slot = SCHEDULE[(run as usize - 1) % SCHEDULE.len()];
            if src.timing_on_ms.len() >= MAX_RUNS as usize {
                break;
            }
            let pairs = src.timing_on_ms.len();
            if pairs >= self.min_pairs() as usize && precise(src) {
                src.stopped_by = StopReason::Precision;
                break;
            }
            // Another pair like the last would pass the cap: stop (after one pair).
            let pair_start = self.timer.now();
            if pairs > 0 && pair_start + last_pair > self.timer.until {
                src.stopped_by = StopReason::MaxTime;
                break;
            }
            match self.pair(server, run, slot, src)? {
                // Only whole pairs count, so both modes have the same runs.
                Pair::Done(pair) => {
                    let (a, b) = match slot {
                        Slot::Effect { .. } => (&mut src.timing_off_ms, &mut src.timing_on_ms),
                        Slot::Control { .. } => (&mut src.control.a_ms, &mut src.control.b_ms),
                    };
                    a.push(pair[0]);
                    b.push(pair[1]);
                    last_pair = self.timer.now().saturating_sub(pair_start);
                }
                Pair::Stopped => break,
                Pair::Skipped => return Ok(false),
            }
        }
        Ok(true)
    }

    /// Run `run`'s pair in `slot`'s order: `[OFF, ON]` (for a control pair
    /// both TIMING OFF, in those roles).
    fn pair(
        &mut self,
        server: &mut dyn ExplainServer,
        run: u32,
        slot: Slot,
        src: &mut SourceRuns,
    ) -> Result<Pair, Error> {
        let pairs = src.timing_on_ms.len();
        let rows = self.rows();
        let mut pair = [0.0; 2];
        let (control, second_first) = match slot {
            Slot::Effect { on_first } => (false, on_first),
            Slot::Control { b_first } => (true, b_first),
        };
        // The roles in run order: 0 is TIMING OFF's, 1 ON's.
        let roles = if second_first { [1, 0] } else { [0, 1] };
        for (i, role) in roles.into_iter().enumerate() {
            let timing = role == 1 && !control;
            if !self.ask(&src.clock_source, run, timing, i == 0, control) {
                self.out.interrupted = true;
                src.stopped_by = StopReason::Interrupted;
                return Ok(Pair::Stopped);
            }
            let left = self.timer.left();
            if left.is_zero() && pairs > 0 {
                src.stopped_by = StopReason::MaxTime;
                return Ok(Pair::Stopped);
            }
            server.limit_next(left);
            // Stopped mid-statement (the server's EXPLAIN was cancelled):
            // the pairs so far count, as for a stop between statements.
            let (plan, text) = match explain_once(server, timing, rows, &mut self.out.server_busy_ms) {
                Err(e) => match ended(&e, pairs) {
                    Some(why) => {
                        self.out.interrupted |= why == StopReason::Interrupted;
                        src.stopped_by = why;
                        return Ok(Pair::Stopped);
                    }
                    // --max-time with no pair here, but another source measured.
                    None if matches!(e, Error::MaxTime(_)) && !self.out.sources.is_empty() => {
                        self.skip(&src.clock_source, format!("{e}; no pair of runs completed"));
                        return Ok(Pair::Skipped);
                    }
                    None => return Err(e),
                },
                Ok(p) => p,
            };
            pair[role] = plan.execution_time_ms;
            if timing {
                src.clock_reads_per_run = plan.critical_path_reads();
                src.timing_on_plan = Some(text);
            }
        }
        Ok(Pair::Done(pair))
    }
}
