//! How `clockscope check` judges what it measured: the rules, the EXPLAIN ANALYZE
//! prediction and the advice, as a pure function of what was measured and the
//! environment's facts (so it is tested with scripted inputs).
//!
//! The EXPLAIN prediction's headline is the ns a timed plan node adds per row:
//! what TIMING ON adds per row in a model of PostgreSQL 19's per-row
//! instrumentation ([`clockscope_pg::predict::executor_loop`]), measured per
//! clock, with its 95% interval. One method: when the model did not run, or
//! its ON-OFF difference is inside the noise, the prediction says "not
//! measured" or "not resolved" and gives no number (the pg_test_timing loop
//! time, two back-to-back reads, is kept beside it for comparison only). A
//! slowdown needs the query's own time per row: `--baseline-row-ns`
//! (measured by the user, e.g. with `clockscope explain`), or, by default, a
//! reference from another machine, reported as an example
//! (`baseline_is_example`).
//!
//! track_io_timing is priced with the read PostgreSQL makes around an I/O,
//! `INSTR_TIME_SET_CURRENT`: the system clock, or RDTSCP under PostgreSQL
//! 19's `timing_clock_source = tsc`, at their read cost here (two reads
//! around a system call: nothing to overlap them with).
//!
//! Every threshold is a named constant with the reason it has that value.
//!
//! Interference: PostgreSQL's rule is computed exactly as PostgreSQL does
//! (from the average loop time, which includes the time the machine took
//! away); clockscope's rule, the status, the advice and the prediction use
//! the read cost without the interference gaps (`read_cost_ns`) and the
//! percentiles. When PostgreSQL's rule fails only because of interference
//! (it passes with the gaps taken out), the verdict says so and the status
//! is not BAD: noise alone never gives BAD or exit 1.

//!
//! The rules are one function each in `rules` (PostgreSQL's, clockscope's,
//! backward steps, the syscall fallback, interference, the status), the
//! advice one function per setting in `advice`; [`decide`] puts them
//! together.

mod advice;
mod rules;
#[cfg(test)]
mod tests;

use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::verdict::{ExplainPrediction, Verdict};
use crate::t;
use clockscope_pg::predict::settings::Estimate;
use clockscope_pg::predict::ExecutorLoopCost;
use serde::Serialize;

/// PostgreSQL's pg_test_timing rule (docs 9.2-18): more than 90% of reads under 1 us...
pub const PG_RULE_UNDER_1US_PCT: f64 = 90.0;
/// ...and an average loop under 100 ns.
pub const PG_RULE_AVG_LOOP_NS: f64 = 100.0;
/// clockscope's rule (on the read cost without interference gaps): a vDSO clock_gettime on a TSC costs 15-30 ns on
/// current x86 servers (clockperf's README: 23.4 ns; ours: bench/README.md); above 50 ns per read the clock, not
/// the executor, dominates EXPLAIN ANALYZE of cheap rows.
pub const MODERN_AVG_LOOP_NS: f64 = 50.0;
/// clockscope's rule: 99% of reads within 200 ns, so rare slow reads (syscall fallback, VM exits) stay rare.
pub const MODERN_P99_NS: u64 = 200;
/// A read this slow on average is a syscall, not a vDSO call (a syscall round trip costs >= 100-200 ns; xen and
/// hpet clocksources measured 561-723 ns per loop in clockperf and PostgreSQL's docs).
pub const SYSCALL_AVG_LOOP_NS: f64 = 150.0;
// The timing settings are decided by the one judge `clockscope explain` uses too, with its constants:
// reads per block I/O and per WAL write, the 10% share of a page-cache read, the 1.3x slowdown.
/// Clock reads per row of a count(*) under EXPLAIN ANALYZE: its scan node is entered and left once per row
/// (the reads per row per node); the aggregate above it runs once.
use clockscope_pg::predict::settings::READS_PER_ROW_PER_NODE as READS_PER_ROW_COUNT;
pub use clockscope_pg::predict::settings::{LOG_TIMING_MAX_SLOWDOWN, READS_PER_IO, READS_PER_WAL_IO};
/// Default ns per row of `SELECT count(*)` with TIMING OFF: PostgreSQL 19's 10M-row benchmark on pgsql-hackers
/// (2026-04, TIMING OFF 426.6 ms / 10,000,000 rows).
pub const DEFAULT_BASELINE_ROW_NS: f64 = 42.66;
/// Where [`DEFAULT_BASELINE_ROW_NS`] comes from.
pub const DEFAULT_BASELINE_SOURCE: &str = "pgsql-hackers 2026-04: 10M-row scan, TIMING OFF 426.6 ms";
/// Rows in the count(*) the prediction is stated for.
pub const PREDICTION_ROWS: f64 = 1_000_000.0;
/// Kernel clocksources whose reads have no vDSO path and cost a syscall.
pub const SYSCALL_CLOCKSOURCES: [&str; 3] = ["xen", "hpet", "acpi_pm"];

/// Facts the verdict needs beyond the measurements.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct VerdictInputs {
    /// The kernel's current clocksource.
    pub current_clocksource: Option<String>,
    /// What PostgreSQL 19's `timing_clock_source=auto` would pick here: Some(true) = tsc.
    pub postgresql_auto_uses_tsc: Option<bool>,
    /// PostgreSQL major versions installed here, ascending (empty: none found).
    pub installed_postgresql_majors: Vec<u32>,
    /// Whether PostgreSQL 19 can read this machine's CPU counter at all
    /// (`timing_clock_source = tsc`: x86-64 only; not the ARM generic timer).
    pub postgresql_reads_counter: bool,
    /// clockscope's own trust decision for the CPU counter and its one-line reason.
    pub tsc_trusted: Option<bool>,
    pub tsc_reason: Option<String>,
    /// Set when the counter's calibration is grossly off its frequency:
    /// something between clockscope and the kernel changes time
    /// (`clockscope_system::counter::interposition`), so no measurement here
    /// describes the kernel's clocks.
    pub time_interposition: Option<String>,
    /// ns per row of count(*) with TIMING OFF, and where that number comes from.
    pub baseline_row_ns: f64,
    pub baseline_source: String,
    /// Whether the baseline is a reference from elsewhere (the default), so a
    /// slowdown computed from it is an example, not a prediction for here.
    pub baseline_is_example: bool,
    /// What TIMING ON adds per row in the instrumentation model, per
    /// measured clock (matched by display name); empty when it did not run.
    pub executor_loops: Vec<ExecutorLoopCost>,
    /// The kernel's NTP state (adjtimex), when read.
    pub ntp: Option<clockscope_system::linux::ntp::NtpState>,
    /// What the I/O timing settings are priced with.
    pub io_prices: IoPrices,
}

/// The prices of the I/O timing settings, as `clockscope explain` takes
/// them: `INSTR_TIME_SET_CURRENT`'s back-to-back read cost with its 95%
/// interval (`clockscope_pg::predict::read_cost`), the system clock's and, where
/// PostgreSQL 19 reads it, RDTSCP's; and the 8 kB page-cache read they are
/// set against (`clockscope_pg::predict::settings::page_read`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct IoPrices {
    pub system: Option<Estimate>,
    pub precise_tsc: Option<Estimate>,
    pub page_read: Option<Estimate>,
}

/// Why a prediction has no model behind it.
pub const NOT_MEASURED: &str = "not measured: the instrumentation model did not run (interrupted, or not asked for)";

fn predict(c: &ClockStats, inputs: &VerdictInputs, used_by_postgresql: bool) -> ExplainPrediction {
    let executor_loop = inputs
        .executor_loops
        .iter()
        .find(|e| e.clock == c.display_name)
        .cloned();
    let per_row = executor_loop.as_ref().and_then(|e| e.added_ns_per_row);
    let status = executor_loop
        .as_ref()
        .map_or_else(|| NOT_MEASURED.to_string(), |e| e.status.clone());
    let at = |per_row: f64| {
        clockscope_pg::predict::explain_overhead(
            inputs.baseline_row_ns,
            READS_PER_ROW_COUNT,
            per_row / READS_PER_ROW_COUNT,
            PREDICTION_ROWS,
        )
    };
    let p = per_row.map(at);
    let interval = executor_loop.as_ref().filter(|e| e.resolved).and_then(|e| e.interval);
    ExplainPrediction {
        clock: c.display_name.clone(),
        per_read_ns: c.read_cost_ns,
        back_to_back_per_row_ns: READS_PER_ROW_COUNT * c.read_cost_ns,
        per_row_per_node_ns: per_row,
        status,
        executor_loop,
        count_timing_off_ms: at(0.0).timing_off_ms,
        count_timing_on_ms: p.map(|p| p.timing_on_ms),
        slowdown: p.map(|p| p.slowdown),
        slowdown_low: interval.map(|i| at(i.low).slowdown),
        slowdown_high: interval.map(|i| at(i.high).slowdown),
        used_by_postgresql,
    }
}

/// Decides the verdict from the measured clocks and the environment: its
/// fields in English (JSON, Prometheus), the text-only headline and
/// recommendation in the report's language, and the whole verdict in that
/// language as [`Verdict::local`] when it is not English.
pub fn decide(clocks: &[ClockStats], inputs: &VerdictInputs) -> Verdict {
    let mut v = crate::i18n::in_english(|| decide_in_current_language(clocks, inputs));
    if !crate::i18n::current().is_english() {
        let local = decide_in_current_language(clocks, inputs);
        v.headline.clone_from(&local.headline);
        v.recommendation.clone_from(&local.recommendation);
        v.local = Some(Box::new(local));
    }
    v
}

fn decide_in_current_language(clocks: &[ClockStats], inputs: &VerdictInputs) -> Verdict {
    let find = |name: &str| clocks.iter().find(|c| c.name == name && c.loops > 0);
    let system = find("monotonic");
    let fast_tsc = find("rdtsc").or_else(|| find("cntvct"));
    let precise_tsc = find("rdtscp")
        .or_else(|| find("isb_cntvct"))
        .filter(|_| inputs.postgresql_reads_counter);

    let mut problems = rules::backward_steps(clocks);
    let syscall_fallback = system.and_then(|s| rules::syscall_fallback(s, inputs.current_clocksource.as_deref()));
    problems.extend(syscall_fallback.clone());

    let postgresql_rule = system.map(rules::pg_rule);
    let modern_rule = system.map(rules::modern_rule);
    let fails_only_from_interference = postgresql_rule
        .as_ref()
        .zip(system)
        .is_some_and(|(r, s)| rules::fails_only_from_interference(r, s));
    let interference_note = system
        .filter(|_| fails_only_from_interference)
        .map(rules::interference_note);

    let explain_system = system.map(|s| predict(s, inputs, true));
    let explain_tsc = fast_tsc.map(|s| predict(s, inputs, inputs.postgresql_reads_counter));
    let track_io_timing = system.map(|s| advice::io_timing(&advice::TRACK_IO_TIMING, s, precise_tsc, inputs));
    let track_wal_io_timing = system.map(|s| advice::io_timing(&advice::TRACK_WAL_IO_TIMING, s, precise_tsc, inputs));
    let auto_explain_log_timing = explain_system
        .as_ref()
        .filter(|p| p.executor_loop.is_some())
        .map(|p| advice::log_timing(p, explain_tsc.as_ref(), inputs));
    let native_tsc = clockscope_system::counter::native_kind() == Some(clockscope_system::counter::CounterKind::Tsc);
    let timing_clock_source = advice::clock_source_decision(inputs);
    let tcs_here = advice::timing_clock_source(inputs, &timing_clock_source, native_tsc);
    let timing_clock_source_recommendation = tcs_here
        .clone()
        .map(|rec| advice::with_older_postgresql(rec, &inputs.installed_postgresql_majors));

    problems.extend(inputs.ntp.as_ref().and_then(rules::ntp_unsynchronised));
    if let Some(t) = &inputs.time_interposition {
        problems.push(t!(
            "time is not the kernel's here: {what}",
            what = crate::i18n::library::reason(t)
        ));
    }
    let status = rules::status(rules::StatusFacts {
        broken: rules::broken(clocks),
        system_measured: system.is_some(),
        time_interposed: inputs.time_interposition.is_some(),
        postgresql_rule_passed: postgresql_rule.as_ref().map(|r| r.passed),
        modern_rule_passed: modern_rule.as_ref().map(|r| r.passed),
        fails_only_from_interference,
        syscall_fallback: syscall_fallback.is_some(),
    });
    if let Some(p) = postgresql_rule
        .as_ref()
        .filter(|p| !p.passed && !fails_only_from_interference)
    {
        problems.push(t!(
            "{clock} fails PostgreSQL's rule: {detail}",
            clock = p.clock,
            detail = p.detail
        ));
    }

    Verdict {
        status,
        summary: advice::summary(status, explain_system.as_ref(), inputs, true),
        headline: advice::summary(status, explain_system.as_ref(), inputs, false),
        recommendation: advice::for_this_host(inputs, tcs_here.as_deref(), system.zip(track_io_timing.as_ref())),
        postgresql_rule,
        modern_rule,
        baseline_row_ns: inputs.baseline_row_ns,
        baseline_source: inputs.baseline_source.clone(),
        baseline_is_example: inputs.baseline_is_example,
        explain_system,
        explain_tsc,
        track_io_timing,
        track_wal_io_timing,
        auto_explain_log_timing,
        timing_clock_source: Some(timing_clock_source),
        postgresql19_auto_picks: advice::postgresql19_auto_picks(inputs),
        timing_clock_source_recommendation,
        syscall_fallback,
        problems,
        interference_note,
        local: None,
    }
}
