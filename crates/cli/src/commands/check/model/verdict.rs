//! The verdict of `clockscope check` as plain values: the status, each
//! rule's result, the EXPLAIN ANALYZE prediction and the advice. How they are
//! decided is [`crate::commands::check::judge`].

use crate::i18n::library::reason;
use clockscope_pg::predict::settings::{SettingDecision, Verdict as Decided};
use clockscope_pg::predict::ExecutorLoopCost;
use serde::Serialize;

/// Overall status, worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Time went backwards on a clock that must be monotonic.
    Broken,
    /// The system clock fails PostgreSQL's rule, or time is changed on its way to clockscope.
    Bad,
    /// Passes PostgreSQL's rule but not clockscope's (`modern_rule`).
    Fair,
    Good,
    /// The system clock was not measured (e.g. `--clock rdtsc` only): no verdict.
    NoVerdict,
}

/// One rule's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RuleResult {
    /// Whether the rule holds.
    pub passed: bool,
    /// The clock the rule was applied to.
    pub clock: String,
    /// The numbers behind it, in words.
    pub detail: String,
}

/// Predicted EXPLAIN ANALYZE overhead with one clock.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ExplainPrediction {
    /// The clock PostgreSQL would read.
    pub clock: String,
    /// Measured cost of one read back to back (the read cost without
    /// interference gaps), ns: for comparison, not the prediction.
    pub per_read_ns: f64,
    /// The old model, for comparison only: 2 x `per_read_ns`.
    pub back_to_back_per_row_ns: f64,
    /// The prediction: what TIMING ON added per row per timed plan node in the
    /// instrumentation model, ns; null when not measured or not resolved.
    pub per_row_per_node_ns: Option<f64>,
    /// "resolved", "not resolved: ..." or "not measured: ...".
    pub status: String,
    /// The model's measurement (median, interval, pairs, work per row).
    pub executor_loop: Option<ExecutorLoopCost>,
    /// count(*) of 1M rows with TIMING OFF, ms (from the baseline).
    pub count_timing_off_ms: f64,
    /// The same with TIMING ON, ms; null without a prediction.
    pub count_timing_on_ms: Option<f64>,
    /// on / off; null without a prediction.
    pub slowdown: Option<f64>,
    /// The slowdown at the ends of the per-row cost's 95% interval; null
    /// without a resolved interval.
    pub slowdown_low: Option<f64>,
    /// The slowdown at the high end of the model's 95% interval, ratio; null without one.
    pub slowdown_high: Option<f64>,
    /// Whether PostgreSQL (19 with timing_clock_source = tsc, or any version for the system clock) reads this clock.
    pub used_by_postgresql: bool,
}

impl ExplainPrediction {
    /// The per-row cost in words: "+36.2 ns per row per node (95% interval
    /// ...; the model's TIMING OFF row 24.8 ns, one run of 150 ms)", or why
    /// there is none.
    pub fn per_row_text(&self) -> String {
        match (&self.executor_loop, self.per_row_per_node_ns) {
            // The speed it was measured at beside it: on a machine whose
            // speed changes over seconds the cost changes with it
            // (bench/README.md), and the model's own TIMING OFF row says which.
            (Some(e), Some(v)) => crate::t!(
                "{ns} ns per row per node ({interval}; the model's TIMING OFF row {row} ns, {sampling})",
                ns = crate::i18n::signed(v, 1),
                interval = reason(&e.interval_text),
                row = crate::i18n::num(e.work_ns_per_row, 1),
                sampling = reason(&e.sampling)
            ),
            (Some(e), None) => reason(&e.status),
            (None, _) => reason(&self.status),
        }
    }
}

/// A yes/no answer with its reason.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Advice {
    /// Whether the judge found the setting cheap (safe to turn on).
    pub safe: bool,
    /// The reason with its numbers.
    pub why: String,
    /// The judge's decision, in the shape `clockscope explain` gives it
    /// (`clockscope_pg::predict::settings`).
    pub decision: Option<SettingDecision>,
}

impl Advice {
    /// The word the text report puts before the reason.
    pub fn word(&self) -> &'static str {
        match self.decision.as_ref().map(|d| d.verdict) {
            Some(Decided::Cheap) => "safe",
            Some(Decided::Costly) => "costly",
            Some(v) => v.word(),
            None if self.safe => "safe",
            None => "NOT safe",
        }
    }
}

/// The whole verdict.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    pub status: Status,
    /// One sentence for a person.
    pub summary: String,
    /// The summary for the one-screen report: the same sentence without a
    /// slowdown measured on another machine (text only; JSON has `summary`).
    #[serde(skip)]
    pub headline: String,
    /// The one recommendation that applies to this host and the PostgreSQL
    /// installed here (text only; JSON carries each piece of advice).
    #[serde(skip)]
    pub recommendation: Option<String>,
    /// PostgreSQL's pg_test_timing rule: > 90% of reads under 1 us and average loop < 100 ns, on
    /// the system clock.
    pub postgresql_rule: Option<RuleResult>,
    /// clockscope's rule: average loop <= 50 ns, p99 <= 200 ns, no backward step.
    pub modern_rule: Option<RuleResult>,
    /// ns per row of count(*) with TIMING OFF used for the prediction.
    pub baseline_row_ns: f64,
    /// Where baseline_row_ns comes from.
    pub baseline_source: String,
    /// Whether the baseline is a reference from another machine (the
    /// default): the slowdowns are then examples, not predictions for here.
    pub baseline_is_example: bool,
    /// With the system clock (PostgreSQL <= 18, or timing_clock_source=system).
    pub explain_system: Option<ExplainPrediction>,
    /// With PostgreSQL 19's fast TSC read (RDTSC), when measured.
    pub explain_tsc: Option<ExplainPrediction>,
    /// Whether enabling track_io_timing is advised: safe when the judge finds it cheap, the two
    /// system-clock reads per block I/O (their back-to-back read cost's 95% interval) wholly below
    /// 10% of an 8 kB read from the page cache measured here; null without the system clock.
    pub track_io_timing: Option<Advice>,
    /// The same judge for WAL writes and syncs.
    pub track_wal_io_timing: Option<Advice>,
    /// Whether auto_explain.log_timing is safe to leave on: unless the judge finds it costly, the
    /// predicted count(*) slowdown's whole interval at or above 1.3x (ratio); null without a
    /// prediction.
    pub auto_explain_log_timing: Option<Advice>,
    /// The judge's decision for PostgreSQL 19's timing_clock_source
    /// (`timing_clock_source_recommendation` says it in words).
    pub timing_clock_source: Option<SettingDecision>,
    /// What PostgreSQL 19's auto setting picks here ("tsc" / "system").
    pub postgresql19_auto_picks: Option<String>,
    /// What clockscope recommends for PostgreSQL 19's timing_clock_source, and why (on machines
    /// without a TSC: that there is nothing to set).
    pub timing_clock_source_recommendation: Option<String>,
    /// Set when the system clock costs a syscall per read.
    pub syscall_fallback: Option<String>,
    /// Problems found, one line each.
    pub problems: Vec<String>,
    /// Set when PostgreSQL's rule fails only because of interference: what
    /// the average loop included and what the clock costs without it.
    pub interference_note: Option<String>,
    /// The same verdict in the report's language (`crate::i18n`), for the
    /// text reports; `None` in English. JSON and Prometheus read the
    /// English fields above.
    #[serde(skip)]
    pub local: Option<Box<Verdict>>,
}

impl Verdict {
    /// The verdict in the report's language: its sentences for the text
    /// reports (the same as `self` in English).
    pub fn text(&self) -> &Verdict {
        self.local.as_deref().unwrap_or(self)
    }

    /// Exit code: 1 when the verdict lists a problem, something to act on (time went backwards on a monotonic
    /// clock, the system clock fails PostgreSQL's rule, a syscall per read, time changed on its way to
    /// clockscope, NTP not synchronised); BROKEN and BAD always list one.
    pub fn exit_code(&self) -> u8 {
        if self.problems.is_empty() && !matches!(self.status, Status::Broken | Status::Bad) {
            crate::exit::OK
        } else {
            crate::exit::PROBLEM
        }
    }
}
