//! Prometheus text exposition format (version 0.0.4) of `clockscope check`,
//! ready for node_exporter's textfile collector, by Prometheus's naming
//! conventions (`promtool check metrics` finds nothing to lint): every metric
//! a gauge prefixed `clockscope_`, in base units (`_seconds`, `_hertz`,
//! `_ratio`), labelled by clock where it is per clock.
//!
//! Every metric name, its labels and meaning are listed in `docs/metrics.md`;
//! a test fails when the rendered set and that document disagree, so names
//! stay stable. Percentiles are one gauge with a `percentile` label (not a
//! summary: a run's distribution is a snapshot, and a summary's `_sum` and
//! `_count` promise counters that only grow, which `rate()` would misread).

use crate::commands::check::model::stats::ClockStats;
use crate::commands::check::model::verdict::{RuleResult, Status};
use crate::commands::check::model::{CheckReport, MeasurementQuality};
use crate::report::json::serde_name;
use crate::report::prometheus::{flag, secs, unix_seconds, Families};
use std::io::{self, Write};
use std::time::SystemTime;

/// Every verdict status, in the order the state set lists them.
pub const STATUSES: [Status; 5] = [
    Status::Broken,
    Status::Bad,
    Status::Fair,
    Status::Good,
    Status::NoVerdict,
];

/// The `percentile` label values of `clockscope_clock_step_seconds`.
pub const PERCENTILES: [&str; 6] = ["50", "90", "99", "99.9", "99.99", "100"];

/// The short clock name (`monotonic`, `rdtsc`) of a display name the verdict
/// uses, so every metric is labelled the same way.
fn clock_label<'a>(r: &'a CheckReport, display_name: &'a str) -> &'a str {
    r.clocks
        .iter()
        .find(|c| c.display_name == display_name)
        .map_or(display_name, |c| c.name.as_str())
}

/// Renders the report as Prometheus text; `finished` is the run's end
/// (`clockscope_last_run_timestamp_seconds`).
fn render_at(r: &CheckReport, finished: SystemTime) -> String {
    let mut f = Families::new();
    clock_families(&mut f, r);
    run_families(&mut f, r, finished);
    verdict_families(&mut f, r);
    prediction_families(&mut f, r);
    environment_families(&mut f, r);
    f.out
}

/// A per-clock gauge: its name, help, and value of a clock (if it has one).
type PerClock = (&'static str, &'static str, fn(&ClockStats) -> Option<f64>);

/// The per-clock gauges, in the order they are rendered.
fn per_clock_gauges() -> [PerClock; 12] {
    [
        (
            "clock_read_cost_seconds",
            "Cost of one clock read with the interference gaps (preemption, throttling, steal) taken out (text: read cost).",
            |c| Some(secs(c.read_cost_ns)),
        ),
        (
            "clock_loop_average_seconds",
            "Average loop time per read, interference gaps included (text: avg loop; JSON: avg_loop_ns).",
            |c| Some(secs(c.avg_loop_ns)),
        ),
        (
            "clock_read_seconds",
            "DEPRECATED, removed in the next release: the same value as clockscope_clock_loop_average_seconds.",
            |c| Some(secs(c.avg_loop_ns)),
        ),
        (
            "clock_interference_lost_ratio",
            "Fraction of the measurement lost in gaps far above the clock's normal cost.",
            |c| Some(c.interference.lost_fraction),
        ),
        (
            "clock_reads",
            "Clock reads with a forward or zero difference during the measurement.",
            |c| Some(c.loops as f64),
        ),
        (
            "clock_measured_seconds",
            "Time the clock was measured for (less than asked when interrupted).",
            |c| Some(secs(c.elapsed_ns as f64)),
        ),
        (
            "clock_resolution_seconds",
            "Observed resolution: the smallest non-zero difference between successive reads.",
            |c| c.resolution_ns.map(|v| secs(v as f64)),
        ),
        (
            "clock_getres_seconds",
            "Resolution the kernel reports for the clock (clock_getres(2)).",
            |c| c.clock_getres_ns.map(|v| secs(v as f64)),
        ),
        (
            "clock_zero_steps_ratio",
            "Fraction of successive reads that returned the same time.",
            |c| Some(c.zero_steps_pct / 100.0),
        ),
        (
            "clock_steps_below_microsecond_ratio",
            "Fraction of successive-read differences under 1 microsecond (PostgreSQL's rule needs > 0.9).",
            |c| Some(c.under_1us_pct / 100.0),
        ),
        (
            "clock_backward_steps",
            "Successive reads that went backwards in time.",
            |c| Some(c.backward_steps as f64),
        ),
        (
            "clock_largest_backward_step_seconds",
            "Largest backward step between successive reads (0 when none).",
            |c| Some(secs(c.largest_backward_ns as f64)),
        ),
    ]
}

/// The per-clock gauges, the step percentiles, and the clocks skipped.
fn clock_families(f: &mut Families, r: &CheckReport) {
    for (name, help, get) in per_clock_gauges() {
        f.head(name, help);
        for c in &r.clocks {
            if let Some(v) = get(c) {
                f.sample(name, &[("clock", &c.name)], v);
            }
        }
    }
    f.head(
        "clock_step_seconds",
        "Percentiles of the difference between successive reads (percentile 100 is the largest).",
    );
    for c in &r.clocks {
        let p = &c.percentiles_ns;
        let values = [p.p50, p.p90, p.p99, p.p99_9, p.p99_99, p.max];
        for (pct, v) in PERCENTILES.iter().zip(values) {
            f.sample(
                "clock_step_seconds",
                &[("clock", &c.name), ("percentile", pct)],
                secs(v as f64),
            );
        }
    }
    if !r.skipped.is_empty() {
        f.head(
            "clock_skipped",
            "1 for each clock asked for that could not be measured (the text and JSON reports say why).",
        );
        for s in &r.skipped {
            f.sample("clock_skipped", &[("clock", &s.name)], 1.0);
        }
    }
}

/// The run itself: the time asked for, whether it was interrupted or
/// noisy, and when it ended (`finished`).
fn run_families(f: &mut Families, r: &CheckReport, finished: SystemTime) {
    f.single(
        "requested_duration_seconds",
        "Time asked for each clock's measurement (-d).",
        r.duration_per_clock_s,
    );
    f.single(
        "interrupted",
        "1 when Ctrl-C or SIGTERM stopped the run early: the numbers cover only what was measured.",
        flag(r.interrupted),
    );
    f.single(
        "interference_lost_ratio",
        "Share of the measured time lost to interference (preemption, steal, throttling), all clocks together.",
        r.interference_lost_fraction,
    );
    f.single(
        "measurement_noisy",
        "1 when clockscope_interference_lost_ratio is 0.1 or more (the one definition of noisy), else 0.",
        flag(r.measurement_quality == MeasurementQuality::Noisy),
    );
    f.single(
        "last_run_timestamp_seconds",
        "When this report was written, seconds since the Unix epoch.",
        unix_seconds(finished),
    );
}

/// The verdict: its status as a state set, the problems, the syscall
/// fallback and each rule.
fn verdict_families(f: &mut Families, r: &CheckReport) {
    let v = &r.verdict;
    f.head(
        "verdict",
        "The verdict as a state set: 1 for the current status, 0 for every other one.",
    );
    for s in STATUSES {
        // The label value as in the JSON report.
        f.sample("verdict", &[("status", &serde_name(&s))], flag(v.status == s));
    }
    f.single(
        "problems",
        "Problems the verdict lists (time went backwards, a failed rule, a syscall clock, NTP not synchronised).",
        v.problems.len() as f64,
    );
    f.single(
        "syscall_fallback",
        "1 when the system clock costs a syscall per read (its clocksource has no vDSO read, or reads are that slow).",
        flag(v.syscall_fallback.is_some()),
    );
    let rules: [(&str, &Option<RuleResult>); 2] = [("postgresql", &v.postgresql_rule), ("modern", &v.modern_rule)];
    if rules.iter().any(|(_, r)| r.is_some()) {
        f.head(
            "rule_passed",
            "1 when the clock passes the rule: postgresql (> 90% of reads under 1 us, average under 100 ns) \
             or modern (clockscope's: average <= 50 ns, p99 <= 200 ns, no backward step).",
        );
        for (name, rule) in rules {
            if let Some(rule) = rule {
                f.sample(
                    "rule_passed",
                    &[("rule", name), ("clock", clock_label(r, &rule.clock))],
                    flag(rule.passed),
                );
            }
        }
    }
}

/// The EXPLAIN ANALYZE predictions that resolved, and the baseline they start from.
fn prediction_families(f: &mut Families, r: &CheckReport) {
    let v = &r.verdict;
    // Only resolved predictions have a number.
    let predictions: Vec<_> = [&v.explain_system, &v.explain_tsc]
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p, p.slowdown?, p.per_row_per_node_ns?)))
        .collect();
    if !predictions.is_empty() {
        f.head(
            "explain_predicted_slowdown_ratio",
            "Predicted EXPLAIN ANALYZE run time of a 1M-row count(*) with TIMING ON over TIMING OFF, reading this clock.",
        );
        for (p, slowdown, _) in &predictions {
            f.sample(
                "explain_predicted_slowdown_ratio",
                &[("clock", clock_label(r, &p.clock))],
                *slowdown,
            );
        }
        f.head(
            "explain_predicted_row_overhead_seconds",
            "Predicted EXPLAIN ANALYZE timing overhead per row per plan node (two clock reads).",
        );
        for (p, _, per_row) in &predictions {
            f.sample(
                "explain_predicted_row_overhead_seconds",
                &[("clock", clock_label(r, &p.clock))],
                secs(*per_row),
            );
        }
    }
    f.single(
        "explain_baseline_row_seconds",
        "Time per row of the count(*) with TIMING OFF the prediction starts from (--baseline-row-ns or the reference).",
        secs(v.baseline_row_ns),
    );
}

/// The environment: the CPU counter's trust and frequency, the CPUs, and
/// the info gauge's labels.
fn environment_families(f: &mut Families, r: &CheckReport) {
    let e = &r.environment;
    if let Some(t) = e.counter_trusted {
        f.single(
            "tsc_trusted",
            "1 when clockscope trusts the CPU's time stamp counter (the TSC; the generic timer on ARM) by all evidence.",
            flag(t),
        );
    }
    if let Some(k) = e.counter_frequency_khz {
        f.head(
            "tsc_frequency_hertz",
            "Frequency of the CPU's time stamp counter clockscope converts with, and where it comes from.",
        );
        let src = e.counter_frequency_source.as_deref().unwrap_or("");
        f.sample("tsc_frequency_hertz", &[("source", src)], k as f64 * 1000.0);
    }
    if let Some(n) = &e.ntp {
        f.single(
            "ntp_synchronised",
            "1 when the kernel's NTP state (adjtimex) is synchronised, 0 when not (a problem the verdict lists).",
            flag(n.synchronised),
        );
    }
    if let Some(n) = e.cpus {
        f.single("cpus", "CPUs this process may run on (its affinity mask).", n as f64);
    }
    f.head("info", "The run's environment in labels; the value is always 1.");
    f.sample(
        "info",
        &[
            ("version", r.stamp.tool.trim_start_matches("clockscope ")),
            ("clocksource", e.current_clocksource.as_deref().unwrap_or("")),
            ("cpu_model", e.cpu_model.as_deref().unwrap_or("")),
            ("hypervisor", e.hypervisor.as_deref().unwrap_or("")),
            ("kernel", e.kernel_release.as_deref().unwrap_or("")),
            ("arch", &e.arch),
        ],
        1.0,
    );
}

/// Writes the Prometheus text, stamped with the current time.
pub fn write(out: &mut dyn Write, r: &CheckReport) -> io::Result<()> {
    write_at(out, r, SystemTime::now())
}

/// Writes the Prometheus text; `finished` is the run's end
/// (`clockscope_last_run_timestamp_seconds`; tests: a fixed time).
pub fn write_at(out: &mut dyn Write, r: &CheckReport, finished: SystemTime) -> io::Result<()> {
    out.write_all(render_at(r, finished).as_bytes())
}
