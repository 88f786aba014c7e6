//! Every interval `clockscope explain` prints contains its estimate
//! (issue 30: "system 35.1 ns (95% interval 37.3 to 43.4)" came from two
//! statistics): reports built from arbitrary runs, A/A controls and model
//! slices, each interval of the report, its timing settings' prices and
//! costs checked against the estimate it is printed with.

use crate::common;

use clockscope_explain::clockcost::{ClockCost, MachineClocks};
use clockscope_explain::measure::{ControlRuns, SourceRuns, StopReason};
use clockscope_explain::report::{self, Inputs, Report};
use clockscope_explain::timing_settings::ServerSetting;
use clockscope_pg::predict::ExecutorLoopCost;
use proptest::prelude::*;

fn cost(clock: &str, ns: f64, slices: Vec<f64>) -> ClockCost {
    let mut model = ExecutorLoopCost::recorded(clock, 2.0 * ns);
    model.slice_medians_ns_per_row = slices;
    ClockCost {
        clock: clock.into(),
        per_read_ns: ns,
        read_cost_ns: ns,
        read_cost_interval: None,
        loops: 1_000,
        method: "test".into(),
        frequency_khz: None,
        frequency_source: None,
        executor_loop: Some(model),
    }
}

fn setting(name: &str, value: &str) -> ServerSetting {
    ServerSetting {
        name: name.into(),
        setting: value.into(),
        shown: value.into(),
        vartype: "string".into(),
        source: "configuration file".into(),
        context: "superuser".into(),
    }
}

/// `low <= estimate <= high` where both ends are there (a tiny relative
/// slack for the float arithmetic of one transform applied to all three).
fn inside(what: &str, estimate: f64, low: Option<f64>, high: Option<f64>) -> Result<(), TestCaseError> {
    if let (Some(lo), Some(hi)) = (low, high) {
        let slack = 1e-9 * estimate.abs().max(1.0);
        prop_assert!(
            lo <= estimate + slack && estimate <= hi + slack,
            "{what}: {estimate} outside {lo} to {hi}"
        );
    }
    Ok(())
}

fn check(r: &Report) -> Result<(), TestCaseError> {
    for s in &r.clock_sources {
        let n = &s.noise;
        inside("noise", n.slowdown_median, n.slowdown_ci_low, n.slowdown_ci_high)?;
        inside("slowdown", s.slowdown, s.slowdown_low, s.slowdown_high)?;
        inside(
            "per row",
            s.overhead_per_row_ns,
            s.overhead_per_row_low_ns,
            s.overhead_per_row_high_ns,
        )?;
        inside(
            "per read",
            s.overhead_per_read_ns,
            s.overhead_per_read_low_ns,
            s.overhead_per_read_high_ns,
        )?;
        if let Some(o) = s.observed_over_predicted {
            inside(
                "observed / predicted",
                o,
                s.observed_over_predicted_low,
                s.observed_over_predicted_high,
            )?;
        }
        if let Some(p) = s.predicted_overhead_per_row_ns {
            inside(
                "predicted per row",
                p,
                s.predicted_overhead_per_row_low_ns,
                s.predicted_overhead_per_row_high_ns,
            )?;
        }
        if let Some(p) = &s.paired_in_time {
            inside("paired in time", p.observed_over_predicted, p.low, p.high)?;
        }
        if let Some(m) = s.control.median {
            inside("A/A control", m, s.control.low, s.control.high)?;
        }
    }
    let t = &r.timing_settings;
    for p in t.io_read.iter().chain(&t.explain_read) {
        inside(&format!("price {}", p.clock), p.ns, p.low_ns, p.high_ns)?;
    }
    for j in &t.settings {
        if let Some(c) = &j.cost {
            inside(&format!("cost of {}", j.name), c.ns, c.low_ns, c.high_ns)?;
        }
    }
    Ok(())
}

/// (TIMING OFF, TIMING ON) of each pair, or an A/A pair's two runs, ms.
type Pairs = Vec<(f64, f64)>;

/// Runs in ms around 10, TIMING ON 0.7x to 3x, and A/A pairs.
fn runs() -> impl Strategy<Value = (Pairs, Pairs)> {
    (
        prop::collection::vec((1.0..20.0f64, 0.7..3.0f64), 0..40),
        prop::collection::vec((1.0..20.0f64, 0.8..1.25f64), 0..16),
    )
        .prop_map(|(pairs, control)| {
            (
                pairs.into_iter().map(|(off, x)| (off, off * x)).collect(),
                control.into_iter().map(|(a, x)| (a, a * x)).collect(),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_interval_contains_its_estimate(
        (pairs, control) in runs(),
        tsc in any::<bool>(),
        system_ns in 5.0..60.0f64,
        slices in prop::collection::vec(10.0..120.0f64, 0..60),
    ) {
        let (off, on): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let (a, b): (Vec<f64>, Vec<f64>) = control.into_iter().unzip();
        let name = if tsc { "tsc" } else { "system" };
        let sources = [SourceRuns {
            clock_source: name.into(),
            how: "test".into(),
            timing_off_ms: off,
            timing_on_ms: on,
            control: ControlRuns { a_ms: a, b_ms: b },
            clock_reads_per_run: 200_006,
            stopped_by: StopReason::MaxTime,
            timing_on_plan: None,
        }];
        let machine = MachineClocks {
            system: cost("clock_gettime (CLOCK_MONOTONIC)", system_ns, slices.clone()),
            rdtsc: Some(cost("RDTSC", system_ns / 2.0, slices.clone())),
            rdtscp: Some(cost("RDTSCP", system_ns / 1.5, slices)),
            rdtsc_unavailable: None,
            tsc_auto: true,
        };
        let settings = [
            setting("track_io_timing", "on"),
            setting("timing_clock_source", name),
            setting("auto_explain.log_analyze", "on"),
            setting("auto_explain.log_timing", "on"),
            setting("auto_explain.log_min_duration", "0"),
        ];
        let r = report::build(&Inputs {
            rows: 100_000,
            server_version_num: 190_000,
            timing_settings: &settings,
            ..common::report_inputs(&sources, &machine)
        });
        check(&r)?;
    }
}
