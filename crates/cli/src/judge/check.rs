//! How `clockscope check` judges what it measured: the rules, the EXPLAIN ANALYZE
//! prediction and the advice, as a pure function of what was measured and the
//! environment's facts (so it is tested with scripted inputs).
//!
//! The EXPLAIN prediction's headline is the ns a timed plan node adds per row:
//! what TIMING ON adds per row in a model of PostgreSQL 19's per-row
//! instrumentation ([`clockscope::predict::executor_loop`]), measured per
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

use crate::model::check::stats::ClockStats;
use crate::model::check::verdict::{Advice, ExplainPrediction, RuleResult, Status, Verdict};
use clockscope::predict::ExecutorLoopCost;
use serde::Serialize;

/// PostgreSQL's pg_test_timing rule (docs 9.2-18): more than 90% of reads under 1 us...
pub const PG_RULE_UNDER_1US_PCT: f64 = 90.0;
/// ...and an average loop under 100 ns.
pub const PG_RULE_AVG_LOOP_NS: f64 = 100.0;
/// clockscope's rule (on the read cost without interference gaps): a vDSO clock_gettime on a TSC costs 15-30 ns on current x86 servers (clockperf: 23.4 ns;
/// these VMs: 20.8 ns bare); above 50 ns per read the clock, not the executor, dominates EXPLAIN ANALYZE of cheap rows.
pub const MODERN_AVG_LOOP_NS: f64 = 50.0;
/// clockscope's rule: 99% of reads within 200 ns, so rare slow reads (syscall fallback, VM exits) stay rare.
pub const MODERN_P99_NS: u64 = 200;
/// A read this slow on average is a syscall, not a vDSO call (a syscall round trip costs >= 100-200 ns; xen and
/// hpet clocksources measured 561-723 ns per loop in clockperf and PostgreSQL's docs).
pub const SYSCALL_AVG_LOOP_NS: f64 = 150.0;
/// Clock reads per block I/O with track_io_timing (`pgstat_prepare_io_time`, `pgstat_count_io_op_time`).
pub const READS_PER_IO: f64 = 2.0;
/// Clock reads per row of a count(*) under EXPLAIN ANALYZE: the scan node is entered and left once per row
/// (InstrStartNode/InstrStopNode), two reads; the aggregate above it runs once.
pub const READS_PER_ROW_COUNT: f64 = 2.0;
/// Default ns per row of `SELECT count(*)` with TIMING OFF: PostgreSQL 19's 10M-row benchmark on pgsql-hackers
/// (2026-04, TIMING OFF 426.6 ms / 10,000,000 rows).
pub const DEFAULT_BASELINE_ROW_NS: f64 = 42.66;
/// Where [`DEFAULT_BASELINE_ROW_NS`] comes from.
pub const DEFAULT_BASELINE_SOURCE: &str = "pgsql-hackers 2026-04: 10M-row scan, TIMING OFF 426.6 ms";
/// Rows in the count(*) the prediction is stated for.
pub const PREDICTION_ROWS: f64 = 1_000_000.0;
/// auto_explain.log_timing times every node of every logged query: we call it safe while the predicted count(*)
/// slowdown stays under 1.3x (PostgreSQL 19 with the TSC measured 1.27x on its 10M-row benchmark).
pub const LOG_TIMING_MAX_SLOWDOWN: f64 = 1.3;
/// Kernel clocksources whose reads have no vDSO path and cost a syscall.
pub const SYSCALL_CLOCKSOURCES: [&str; 3] = ["xen", "hpet", "acpi_pm"];

/// Facts the verdict needs beyond the measurements.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
    /// (`clockscope::counter::interposition`), so no measurement here
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
        clockscope::predict::explain_overhead(
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

fn pg_rule(c: &ClockStats) -> RuleResult {
    let passed = c.under_1us_pct > PG_RULE_UNDER_1US_PCT && c.avg_loop_ns < PG_RULE_AVG_LOOP_NS;
    RuleResult {
        passed,
        clock: c.display_name.clone(),
        detail: format!(
            "{:.4}% of reads under 1 us (needs > {PG_RULE_UNDER_1US_PCT}%), average loop {:.2} ns (needs < {PG_RULE_AVG_LOOP_NS} ns)",
            c.under_1us_pct, c.avg_loop_ns
        ),
    }
}

/// PostgreSQL's rule on the differences outside the interference gaps: the
/// read cost instead of the average loop, "under 1 us" among the rest.
fn pg_rule_without_interference(c: &ClockStats) -> bool {
    c.under_1us_pct_without_gaps() > PG_RULE_UNDER_1US_PCT && c.read_cost_ns < PG_RULE_AVG_LOOP_NS
}

fn modern_rule(c: &ClockStats) -> RuleResult {
    let passed = c.read_cost_ns <= MODERN_AVG_LOOP_NS && c.percentiles_ns.p99 <= MODERN_P99_NS && c.backward_steps == 0;
    RuleResult {
        passed,
        clock: c.display_name.clone(),
        detail: format!(
            "read cost {:.2} ns (needs <= {MODERN_AVG_LOOP_NS} ns), p99 {} ns (needs <= {MODERN_P99_NS} ns), {} backward steps (needs 0)",
            c.read_cost_ns, c.percentiles_ns.p99, c.backward_steps
        ),
    }
}

/// Decides the verdict from the measured clocks and the environment.
pub fn decide(clocks: &[ClockStats], inputs: &VerdictInputs) -> Verdict {
    let find = |name: &str| clocks.iter().find(|c| c.name == name && c.loops > 0);
    let system = find("monotonic");
    let fast_tsc = find("rdtsc").or_else(|| find("cntvct"));
    let mut problems = Vec::new();

    for c in clocks.iter().filter(|c| c.backward_steps > 0) {
        let msg = format!(
            "{} went backwards {} times (largest step {} ns); its elapsed time ({:.6} s) and loop cost are the sum \
             of its forward steps, as its end reading minus its start says {:.6} s",
            c.display_name,
            c.backward_steps,
            c.largest_backward_ns,
            c.elapsed_ns as f64 / 1e9,
            c.end_minus_start_ns as f64 / 1e9
        );
        if c.must_be_monotonic() {
            problems.push(msg);
        } else {
            problems.push(format!(
                "{msg}; a wall clock may be stepped by NTP, so this is not a clock fault by itself"
            ));
        }
    }

    let syscall_fallback = system.and_then(|s| {
        let by_name = inputs
            .current_clocksource
            .as_deref()
            .filter(|cs| SYSCALL_CLOCKSOURCES.contains(cs))
            .map(|cs| format!("the kernel clocksource '{cs}' has no vDSO read: every clock_gettime is a syscall"));
        let by_cost = (s.read_cost_ns > SYSCALL_AVG_LOOP_NS).then(|| {
            format!(
                "clock_gettime costs {:.2} ns per read (> {SYSCALL_AVG_LOOP_NS} ns): it behaves like a syscall, not a vDSO call",
                s.read_cost_ns
            )
        });
        match (by_name, by_cost) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    });
    if let Some(f) = &syscall_fallback {
        problems.push(f.clone());
    }

    let postgresql_rule = system.map(pg_rule);
    let modern_rule = system.map(modern_rule);
    // PostgreSQL's rule failed, but passes with the interference gaps taken out.
    let fails_only_from_interference = postgresql_rule
        .as_ref()
        .zip(system)
        .is_some_and(|(r, s)| !r.passed && pg_rule_without_interference(s));
    let interference_note = system.filter(|_| fails_only_from_interference).map(|s| {
        format!(
            "PostgreSQL's rule fails only because of interference: the average loop ({:.2} ns) includes {:.1}% of \
             the run lost in {} gaps; without them a read costs {:.2} ns and {:.4}% of reads are under 1 us",
            s.avg_loop_ns,
            s.interference.lost_fraction * 100.0,
            s.interference.gaps,
            s.read_cost_ns,
            s.under_1us_pct_without_gaps()
        )
    });
    let clock_passes_pg_rule = postgresql_rule
        .as_ref()
        .is_some_and(|r| r.passed || fails_only_from_interference);
    let explain_system = system.map(|s| predict(s, inputs, true));
    let explain_tsc = fast_tsc.map(|s| predict(s, inputs, inputs.postgresql_reads_counter));
    // A slowdown needs the query's own time per row: labelled an example
    // unless the user measured it.
    let at_baseline = |slowdown: f64, decimals: usize| {
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
    };

    let precise_tsc = find("rdtscp")
        .or_else(|| find("isb_cntvct"))
        .filter(|_| inputs.postgresql_reads_counter);
    let track_io_timing = postgresql_rule.as_ref().zip(system).map(|(r, s)| {
        let tsc_part = precise_tsc.map_or(String::new(), |p| {
            format!(
                ", {:.0} ns with PostgreSQL 19's {} (timing_clock_source = tsc)",
                READS_PER_IO * p.read_cost_ns,
                p.display_name
            )
        });
        Advice {
            safe: clock_passes_pg_rule,
            why: format!(
                "each block I/O adds two INSTR_TIME_SET_CURRENT reads: {:.0} ns with {}{tsc_part}; {}",
                READS_PER_IO * s.read_cost_ns,
                s.display_name,
                if r.passed {
                    "the clock passes PostgreSQL's rule, so this is small next to the I/O itself"
                } else if clock_passes_pg_rule {
                    "the clock passes PostgreSQL's rule without the interference, so this is small next to the I/O itself"
                } else {
                    "the clock fails PostgreSQL's rule: measure the workload before enabling it"
                }
            ),
        }
    });
    // auto_explain.log_timing is judged on the system clock (every PostgreSQL
    // version reads it; PostgreSQL 19 with the TSC is shown beside it), and
    // called costly only when the slowdown's whole interval is at or above
    // the limit.
    let auto_explain_log_timing = explain_system
        .as_ref()
        .filter(|p| p.executor_loop.is_some())
        .map(|p| {
            let tsc_part = explain_tsc
                .as_ref()
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
                    at_baseline(slowdown, 2),
                    if straddles {
                        format!("the interval reaches the {LOG_TIMING_MAX_SLOWDOWN}x limit: not a clear case")
                    } else {
                        format!("safe below {LOG_TIMING_MAX_SLOWDOWN}x")
                    }
                ),
            }
        });

    let postgresql19_auto_picks = inputs
        .postgresql_auto_uses_tsc
        .map(|t| if t { "tsc" } else { "system" }.to_string());
    let timing_clock_source_recommendation = if !inputs.postgresql_reads_counter {
        Some(
            if clockscope::counter::native_kind() == Some(clockscope::counter::CounterKind::Tsc) {
                "PostgreSQL 19: nothing to set: it has no TSC clock here (it needs RDTSCP and an invariant TSC), so it reads \
             the system clock"
                .to_string()
            } else {
                format!(
                    "PostgreSQL 19: nothing to set: it reads only the system clock on {} (timing_clock_source = tsc \
                 is x86-64 only)",
                    std::env::consts::ARCH
                )
            },
        )
    } else {
        match (inputs.postgresql_auto_uses_tsc, inputs.tsc_trusted) {
            (Some(true), Some(true)) => {
                Some("PostgreSQL 19: keep timing_clock_source = auto (it picks tsc, and the TSC is trustworthy here)".into())
            }
            (Some(true), Some(false)) => Some(format!(
                "PostgreSQL 19: set timing_clock_source = system: auto would pick tsc, but clockscope does not trust the TSC here ({})",
                inputs.tsc_reason.as_deref().unwrap_or("see the tsc report")
            )),
            (Some(false), Some(true)) => Some(
                "PostgreSQL 19: set timing_clock_source = tsc: auto picks system, but every piece of evidence says the TSC is trustworthy"
                    .into(),
            ),
            (Some(false), Some(false)) => Some(format!(
                "PostgreSQL 19: keep timing_clock_source = auto (system): the TSC is not trustworthy here ({})",
                inputs.tsc_reason.as_deref().unwrap_or("see the tsc report")
            )),
            (None, _) | (_, None) => None,
        }
    };

    // timing_clock_source exists from PostgreSQL 19 on: say so when only older ones are installed.
    let timing_clock_source_recommendation =
        timing_clock_source_recommendation.map(|rec| match inputs.installed_postgresql_majors.last() {
            Some(&newest) if newest < 19 => {
                let list: Vec<String> = inputs.installed_postgresql_majors.iter().map(u32::to_string).collect();
                format!(
                    "{rec}; installed here: PostgreSQL {}, which has no timing_clock_source and always reads the \
                     system clock",
                    list.join(", ")
                )
            }
            _ => rec,
        });

    let broken = clocks.iter().any(|c| c.backward_steps > 0 && c.must_be_monotonic());
    if let Some(t) = &inputs.time_interposition {
        problems.push(format!("time is not the kernel's here: {t}"));
    }
    let status = if broken {
        Status::Broken
    } else if system.is_none() {
        Status::NoVerdict
    } else if inputs.time_interposition.is_some() {
        // What was measured is not the kernel's clock: never GOOD (exit 1).
        Status::Bad
    } else {
        match (&postgresql_rule, &modern_rule) {
            (Some(p), _) if !p.passed && !fails_only_from_interference => Status::Bad,
            (Some(_), Some(m)) if !m.passed => Status::Fair,
            _ if syscall_fallback.is_some() => Status::Fair,
            _ => Status::Good,
        }
    };
    if let Some(p) = postgresql_rule
        .as_ref()
        .filter(|p| !p.passed && !fails_only_from_interference)
    {
        problems.push(format!("{} fails PostgreSQL's rule: {}", p.clock, p.detail));
    }
    let adds = |p: &ExplainPrediction, decimals: usize| match (p.per_row_per_node_ns, p.slowdown) {
        (Some(v), Some(x)) => format!(
            "EXPLAIN ANALYZE adds about {v:.0} ns per row per plan node ({}; `clockscope explain` measures your \
             server)",
            at_baseline(x, decimals)
        ),
        _ => format!(
            "EXPLAIN ANALYZE's timing cost with {}: {} (`clockscope explain` measures your server)",
            p.clock,
            p.status.split(':').next().unwrap_or("not resolved")
        ),
    };
    let summary = match (status, &explain_system) {
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
            adds(p, 1)
        ),
        (Status::Fair, Some(p)) => format!(
            "Reading the clock is usable but not cheap here ({:.0} ns per read): {}.",
            p.per_read_ns,
            adds(p, 2)
        ),
        (Status::Good, Some(p)) => format!(
            "Reading the clock is cheap here ({:.0} ns per read): {}.",
            p.per_read_ns,
            adds(p, 2)
        ),
    };

    Verdict {
        status,
        summary,
        postgresql_rule,
        modern_rule,
        baseline_row_ns: inputs.baseline_row_ns,
        baseline_source: inputs.baseline_source.clone(),
        baseline_is_example: inputs.baseline_is_example,
        explain_system,
        explain_tsc,
        track_io_timing,
        auto_explain_log_timing,
        postgresql19_auto_picks,
        timing_clock_source_recommendation,
        syscall_fallback,
        problems,
        interference_note,
    }
}
