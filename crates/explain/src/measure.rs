//! The measuring procedure, over any [`ExplainServer`]: per clock source the
//! server offers, a warm-up, then EXPLAIN with TIMING OFF and TIMING ON
//! alternately, reading "Execution Time" from each plan.
//!
//! Alternating (off, on, off, on, ...) rather than all-off-then-all-on keeps
//! slow drifts (frequency scaling, a neighbour on a shared host) from landing
//! on one mode only.
//!
//! Clock sources: PostgreSQL before 19 always uses the system clock
//! (`clock_gettime(CLOCK_MONOTONIC)` on Linux). PostgreSQL 19 has the
//! superuser-only setting `timing_clock_source` (auto | system | tsc): we SET
//! it to 'system' and to 'tsc' in turn when the role may, else measure the
//! current setting and say why.

use crate::error::Error;
use crate::options::{Options, WARMUP_RUNS};
use crate::plan::{parse_explain_json, PlanSummary};
use clockscope::Control;
use serde::Serialize;

/// First server version (`server_version_num`) with `timing_clock_source`.
pub const PG19_VERSION_NUM: u32 = 190_000;
/// The SQLSTATE of "permission denied" (insufficient_privilege).
pub const INSUFFICIENT_PRIVILEGE: &str = "42501";

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
}

/// Which measurement is about to start (for progress and Ctrl-C).
#[derive(Clone, Debug, PartialEq)]
pub enum Step<'a> {
    /// One EXPLAIN: `run` counts from 1; warm-ups are run 0.
    Explain {
        clock_source: &'a str,
        run: u32,
        runs: u32,
        timing: bool,
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
    /// Execution Time with TIMING OFF, ms, in run order.
    pub timing_off_ms: Vec<f64>,
    /// Execution Time with TIMING ON, ms, in run order.
    pub timing_on_ms: Vec<f64>,
    /// Clock reads per TIMING ON run, from its plan's counts.
    pub clock_reads_per_run: u64,
}

/// A clock source that was wanted but could not be measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub clock_source: String,
    pub reason: String,
}

/// Everything measured on the server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerRuns {
    pub sources: Vec<SourceRuns>,
    pub skipped: Vec<Skipped>,
    /// Ctrl-C (or the observer) stopped the runs early.
    pub interrupted: bool,
}

/// Whether the server has `timing_clock_source` (PostgreSQL 19+ and the
/// setting exists).
pub fn has_clock_source_setting(version_num: u32, setting_exists: bool) -> bool {
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
    let mut out = ServerRuns {
        sources: Vec::new(),
        skipped: Vec::new(),
        interrupted: false,
    };
    if !clock_setting {
        let how = "the server's only clock for EXPLAIN (before PostgreSQL 19)".to_string();
        run_one(server, "system", how, opts, observer, &mut out)?;
        return check_any(out);
    }

    let current = server.show_clock_source()?;
    let mut was_set = false;
    let mut denied: Option<Error> = None;
    for want in ["system", "tsc"] {
        if out.interrupted {
            break;
        }
        match server.set_clock_source(want) {
            Err(Error::Interrupted) => {
                out.interrupted = true;
                break;
            }
            Ok(()) => {
                was_set = true;
                let how = format!("SET timing_clock_source = '{want}' for this session");
                run_one(server, want, how, opts, observer, &mut out)?;
            }
            Err(e) if e.sqlstate() == Some(INSUFFICIENT_PRIVILEGE) => {
                denied = Some(e);
                break;
            }
            // Any other refusal from the server (e.g. no usable TSC): skip this one.
            Err(e) if e.sqlstate().is_some() => {
                out.skipped.push(Skipped {
                    clock_source: want.to_string(),
                    reason: e.to_string(),
                });
            }
            Err(e) => return Err(e),
        }
    }
    // After a stop the session ends without further statements.
    if was_set && !out.interrupted {
        server.reset_clock_source()?;
    }
    if let Some(e) = denied {
        let reason = format!("this role may not SET timing_clock_source (superuser only): {e}");
        for want in ["system", "tsc"] {
            if !out.sources.iter().any(|s| s.clock_source == want) && !current_is(&current, want) {
                out.skipped.push(Skipped {
                    clock_source: want.to_string(),
                    reason: reason.clone(),
                });
            }
        }
        if !out.interrupted {
            let how = format!("the current setting; {reason}");
            run_one(server, &current, how, opts, observer, &mut out)?;
        }
    }
    check_any(out)
}

/// Whether a SHOW value ("auto (tsc)", "system") means the clock `want`.
/// Whether `SHOW timing_clock_source` (`tsc`, `auto (tsc)`, ...) means `want`.
pub(crate) fn current_is(current: &str, want: &str) -> bool {
    current == want || current.contains(&format!("({want})"))
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

fn explain_once(server: &mut dyn ExplainServer, timing: bool, rows: u64) -> Result<PlanSummary, Error> {
    let plan = parse_explain_json(&server.explain(timing)?)?;
    if plan.has_node_timing != timing {
        return Err(Error::Plan(format!(
            "asked for TIMING {}, the plan {} per-node times",
            if timing { "ON" } else { "OFF" },
            if plan.has_node_timing { "has" } else { "has no" }
        )));
    }
    if plan.max_node_rows() != rows {
        return Err(Error::Plan(format!(
            "the scan returned {} rows, the TEMP table has {rows}",
            plan.max_node_rows()
        )));
    }
    Ok(plan)
}

fn run_one(
    server: &mut dyn ExplainServer,
    clock_source: &str,
    how: String,
    opts: &Options,
    observer: &mut dyn FnMut(&Step) -> Control,
    out: &mut ServerRuns,
) -> Result<(), Error> {
    let mut src = SourceRuns {
        clock_source: clock_source.to_string(),
        how,
        timing_off_ms: Vec::new(),
        timing_on_ms: Vec::new(),
        clock_reads_per_run: 0,
    };
    let mut ask = |run: u32, timing: bool| {
        observer(&Step::Explain {
            clock_source,
            run,
            runs: opts.runs,
            timing,
        }) == Control::Continue
    };
    for _ in 0..WARMUP_RUNS {
        for timing in [false, true] {
            if !ask(0, timing) {
                out.interrupted = true;
                return Ok(());
            }
            match explain_once(server, timing, opts.rows) {
                Err(Error::Interrupted) => {
                    out.interrupted = true;
                    return Ok(());
                }
                other => other?,
            };
        }
    }
    'runs: for run in 1..=opts.runs {
        let mut pair = [0.0; 2];
        for timing in [false, true] {
            if !ask(run, timing) {
                out.interrupted = true;
                break 'runs;
            }
            // Stopped mid-statement (the server's EXPLAIN was cancelled):
            // the pairs so far count, as for a stop between statements.
            let plan = match explain_once(server, timing, opts.rows) {
                Err(Error::Interrupted) => {
                    out.interrupted = true;
                    break 'runs;
                }
                other => other?,
            };
            pair[timing as usize] = plan.execution_time_ms;
            if timing {
                src.clock_reads_per_run = plan.clock_reads();
            }
        }
        // Only whole pairs count, so both modes have the same runs.
        src.timing_off_ms.push(pair[0]);
        src.timing_on_ms.push(pair[1]);
    }
    if !src.timing_on_ms.is_empty() {
        out.sources.push(src);
    }
    Ok(())
}
