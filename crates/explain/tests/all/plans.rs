//! Plan parsing and the report's arithmetic on recorded PostgreSQL 15 plans
//! and hand-written PostgreSQL 19 plans (see tests/data/README.md).

use clockscope_explain::clockcost::{ClockCost, MachineClocks};
use clockscope_explain::connect::Locality;
use clockscope_explain::measure::{ControlRuns, SourceRuns};
use clockscope_explain::plan::parse_explain_json;
use clockscope_explain::report::{self, Inputs, Resolution};
// The text form of these reports is the CLI's: crates/cli/tests/all/explain_text.rs.

use crate::common;
use common::data;

#[test]
fn pg15_count_plans() {
    let off = parse_explain_json(&data("pg15_count_100k_timing_off.json")).unwrap();
    let on = parse_explain_json(&data("pg15_count_100k_timing_on.json")).unwrap();
    assert!(!off.has_node_timing);
    assert!(on.has_node_timing);
    for p in [&off, &on] {
        let types: Vec<&str> = p.nodes.iter().map(|n| n.node_type.as_str()).collect();
        assert_eq!(types, ["Aggregate", "Seq Scan"]);
        // Aggregate: 1 row + end-of-data; Seq Scan: 100,000 rows + end-of-data.
        assert_eq!(p.node_calls(), 2 + 100_001);
        assert_eq!(p.clock_reads(), 200_006);
        assert_eq!(p.max_node_rows(), 100_000);
        assert!(p.execution_time_ms > 0.0);
        assert!(p.planning_time_ms.is_some());
    }
    assert_eq!(off.execution_time_ms, 2.993);
}

#[test]
fn pg15_nested_loop_counts_every_loop() {
    let p = parse_explain_json(&data("pg15_nested_loop_limit_timing_on.json")).unwrap();
    let calls: Vec<(&str, u64)> = p.nodes.iter().map(|n| (n.node_type.as_str(), n.calls())).collect();
    assert_eq!(
        calls,
        [
            ("Aggregate", 1 + 1),
            ("Nested Loop", 150 + 1),
            ("Function Scan", 50 + 1),
            // 3 rows per loop, 50 loops: Limit is asked once more per loop and answers NULL itself...
            ("Limit", 150 + 50),
            // ...so the Seq Scan under it never gets its end-of-data call: the formula's upper bound.
            ("Seq Scan", 150 + 50),
        ]
    );
    assert_eq!(p.clock_reads(), 2 * (2 + 151 + 51 + 200 + 200));
}

#[test]
fn pg19_plans_with_buffers_and_fractional_rows() {
    let off = parse_explain_json(&data("pg19_count_100k_timing_off.json")).unwrap();
    let on = parse_explain_json(&data("pg19_count_100k_timing_on.json")).unwrap();
    assert!(!off.has_node_timing);
    assert!(on.has_node_timing);
    // Same counts as PostgreSQL 15: "Actual Rows": 100000.00 is 100,000 rows.
    assert_eq!(off.clock_reads(), 200_006);
    assert_eq!(on.clock_reads(), 200_006);
    assert_eq!(off.execution_time_ms, 3.104);
    assert_eq!(on.execution_time_ms, 19.902);
}

fn machine(system_ns: f64, rdtsc_ns: Option<f64>) -> MachineClocks {
    let cost = |clock: &str, ns: f64| ClockCost {
        clock: clock.into(),
        per_read_ns: ns,
        read_cost_ns: ns,
        read_cost_interval: None,
        loops: 1_000_000,
        method: "test".into(),
        frequency_khz: None,
        frequency_source: None,
        // Two reads per row add what two back-to-back reads cost.
        executor_loop: Some(clockscope_pg::predict::ExecutorLoopCost::recorded(clock, 2.0 * ns)),
    };
    MachineClocks {
        system: cost("clock_gettime (CLOCK_MONOTONIC)", system_ns),
        rdtsc: rdtsc_ns.map(|ns| cost("RDTSC", ns)),
        rdtscp: rdtsc_ns.map(|ns| cost("RDTSCP", 2.0 * ns)),
        rdtsc_unavailable: rdtsc_ns.is_none().then(|| "test".into()),
        tsc_auto: true,
    }
}

/// An A/A control of six blocks that all measure 1.0.
fn steady_control() -> ControlRuns {
    ControlRuns {
        a_ms: vec![10.0; 12],
        b_ms: vec![10.0; 12],
    }
}

fn median(v: &[f64]) -> f64 {
    clockscope_system::stats::median(v).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// The report of four pairs (two blocks): PostgreSQL 15's recorded
/// count(*) over 100k rows and three made-up pairs around it; the recorded
/// TIMING OFF and ON execution times beside it.
fn recorded_runs_report() -> (report::Report, f64, f64) {
    let off = parse_explain_json(&data("pg15_count_100k_timing_off.json")).unwrap();
    let on = parse_explain_json(&data("pg15_count_100k_timing_on.json")).unwrap();
    // Four pairs: the recorded times and three made-up ones around them.
    let runs = SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        timing_off_ms: vec![off.execution_time_ms, 2.0, 4.0, 3.0],
        timing_on_ms: vec![on.execution_time_ms, 5.0, 30.0, 6.0],
        clock_reads_per_run: on.clock_reads(),
        stopped_by: clockscope_explain::measure::StopReason::Precision,
        timing_on_plan: None,
        control: steady_control(),
    };
    let m = machine(20.0, Some(10.0));
    let r = report::build(&Inputs {
        query: "SELECT count(*) FROM t",
        rows: 100_000,
        runs: 3,
        temp_table_estimated_bytes: 36_249_600,
        ..common::report_inputs(&[runs], &m)
    });
    (r, off.execution_time_ms, on.execution_time_ms)
}

#[test]
fn arithmetic_from_recorded_runs() {
    let (r, off_med, on_med) = recorded_runs_report();
    let s = &r.clock_sources[0];
    let off_median = median(&[off_med, 2.0, 4.0, 3.0]);
    assert_eq!(
        (s.timing_off_ms, s.timing_off_ms_min, s.timing_off_ms_max),
        (off_median, 2.0, 4.0)
    );
    assert_eq!((s.timing_on_ms_min, s.timing_on_ms_max), (5.0, 30.0));
    assert_eq!(s.timing_on_ms, median(&[on_med, 5.0, 30.0, 6.0]));
    // One estimate: the median of the two blocks' ON / OFF.
    let blocks = [(on_med + 5.0) / (off_med + 2.0), 36.0 / 7.0];
    assert!(close(s.slowdown, median(&blocks)));
    let diff_ns = (s.slowdown - 1.0) * off_median * 1e6;
    assert!(close(s.overhead_per_row_ns, diff_ns / 100_000.0));
    assert!(close(s.overhead_per_read_ns, diff_ns / 200_006.0));
    // Two blocks: no interval, so not stated.
    assert_eq!(s.result, Resolution::NotResolved);
    assert!(
        s.result_reason.contains("2 blocks of pairs, an interval needs 6"),
        "{}",
        s.result_reason
    );
    assert!(close(s.clock_reads_per_row, 2.00006));
    assert_eq!(s.predicted_per_read_ns, Some(20.0));
    assert!(close(s.predicted_overhead_per_row_ns.unwrap(), 2.00006 * 20.0));
    assert!(close(
        s.predicted_slowdown.unwrap(),
        (off_median + 200_006.0 * 20.0 / 1e6) / off_median
    ));
    assert!(close(s.observed_over_predicted.unwrap(), s.overhead_per_read_ns / 20.0));
    assert_eq!(s.runs_timing_on_ms.len(), 4);
}

#[test]
fn a_pre_19_server_gets_a_tsc_prediction_from_recorded_runs() {
    let (r, _, _) = recorded_runs_report();
    let off_med = r.clock_sources[0].timing_off_ms;
    // PostgreSQL 15: what the TSC would give, from the RDTSC loop cost.
    let t = r.tsc_prediction.as_ref().expect("a TSC prediction for a pre-19 server");
    assert_eq!(t.rdtsc_per_read_ns, 10.0);
    assert!(close(t.predicted_overhead_per_row_ns, 2.00006 * 10.0));
    assert!(close(
        t.predicted_slowdown,
        (off_med + 200_006.0 * 10.0 / 1e6) / off_med
    ));
    // The system clock's result is not stated: nothing scaled by it.
    assert_eq!((t.scaled_per_read_ns, t.scaled_slowdown), (None, None));
    // Said for the version connected: 15 reads the system clock.
    assert!(
        t.used_by.starts_with("PostgreSQL 15 reads the system clock"),
        "{}",
        t.used_by
    );
    // Only the noise control's: made-up runs 2 to 4 ms, and 2 blocks.
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    assert!(
        r.warnings[0].starts_with("system: TIMING OFF varied by"),
        "{:?}",
        r.warnings
    );
    assert!(r.warnings[1].contains("needs at least 6 blocks"), "{:?}", r.warnings);
}

#[test]
fn the_json_of_recorded_runs_has_the_documented_keys() {
    let (r, _, _) = recorded_runs_report();
    // JSON: the documented keys, with their units in the names.
    let json = serde_json::to_value(&r).unwrap();
    let src = &json["clock_sources"][0];
    for key in [
        "timing_off_ms",
        "timing_on_ms",
        "slowdown",
        "overhead_per_row_ns",
        "overhead_per_read_ns",
        "predicted_per_read_ns",
        "observed_over_predicted",
        "runs_timing_off_ms",
        "runs_timing_on_ms",
    ] {
        assert!(!src[key].is_null(), "clock_sources[0].{key} missing in {src}");
    }
    assert_eq!(json["server_version"], "15.18");
}

#[test]
fn remote_servers_and_noise_are_warned_about() {
    let runs = SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        timing_off_ms: vec![5.0],
        timing_on_ms: vec![4.0],
        clock_reads_per_run: 2_006,
        stopped_by: clockscope_explain::measure::StopReason::MaxTime,
        timing_on_plan: None,
        control: steady_control(),
    };
    let m = machine(20.0, None);
    let inputs = Inputs {
        server: "host=db.example.com port=5432",
        locality: Locality::Remote,
        query: "q",
        rows: 1_000,
        runs: 3,
        temp_table_estimated_bytes: 36_249_600,
        ..common::report_inputs(std::slice::from_ref(&runs), &m)
    };
    let r = report::build(&inputs);
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    assert!(
        r.warnings[1].starts_with(
            "system: the 95% interval of the median block slowdown needs at least 6 blocks (12 pairs), not within \
             +-5%, after 1 pairs: --max-time ended the runs"
        ),
        "{}",
        r.warnings[1]
    );
    assert!(r.warnings[0].contains("not on this machine"));
    assert!(r.warnings[0].ends_with("inferred from EXPLAIN: (TIMING ON - TIMING OFF) / clock reads"));
    // One pair, faster with TIMING ON: no block, not stated, no number claimed.
    assert_eq!(r.clock_sources[0].result, Resolution::NotResolved);
    let r2 = report::build(&Inputs {
        interrupted: true,
        ..inputs
    });
    assert!(r2.interrupted);
    assert_eq!(r2.warnings.last().unwrap(), "interrupted: 1 of 3 runs on system");
    // No RDTSC here: no TSC prediction.
    assert!(r.tsc_prediction.is_none());
}

/// The machine of the model tests: loops of 30 ns (system clock) and 20 ns
/// (RDTSC); in the instrumentation model two reads per row add 48 ns (24
/// per read) with the system clock, 16 with RDTSC.
fn model_machine() -> MachineClocks {
    let mut m = machine(30.0, Some(20.0));
    m.system.executor_loop = Some(clockscope_pg::predict::ExecutorLoopCost::recorded(
        "clock_gettime (CLOCK_MONOTONIC)",
        48.0,
    ));
    m.rdtsc.as_mut().unwrap().executor_loop = Some(clockscope_pg::predict::ExecutorLoopCost::recorded("RDTSC", 16.0));
    m
}

/// 1M rows: TIMING OFF 55 ms (55 ns per row), ON 105 ms; 2,000,006 reads;
/// on [`model_machine`].
fn model_report() -> report::Report {
    let runs = SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        // Twelve steady pairs, six blocks: the noise control's interval is
        // within +-5%, the blocks 209/111, 211/109 and 210/110 in turn.
        timing_off_ms: [55.0, 56.0, 54.0, 55.0, 56.0, 54.0].repeat(2),
        timing_on_ms: [105.0, 104.0, 106.0, 105.0, 104.0, 106.0].repeat(2),
        clock_reads_per_run: 2_000_006,
        stopped_by: clockscope_explain::measure::StopReason::Precision,
        timing_on_plan: None,
        control: steady_control(),
    };
    report::build(&Inputs {
        query: "SELECT count(*) FROM t",
        rows: 1_000_000,
        runs: 3,
        temp_table_estimated_bytes: 36_249_600,
        ..common::report_inputs(&[runs], &model_machine())
    })
}

#[test]
fn the_prediction_uses_what_reads_add_to_the_executor_like_loop() {
    let r = model_report();
    let s = &r.clock_sources[0];
    let reads_per_row = 2.000006;
    assert_eq!(s.prediction_status, "resolved");
    assert_eq!(s.predicted_per_read_ns, Some(24.0));
    // The model's +-10% interval, per row at 2.000006 reads per row.
    assert!(close(
        s.predicted_overhead_per_row_low_ns.unwrap(),
        reads_per_row / 2.0 * 43.2
    ));
    assert!(close(
        s.predicted_overhead_per_row_high_ns.unwrap(),
        reads_per_row / 2.0 * 52.8
    ));
    // ON = OFF + reads_per_row / 2 x added per row.
    assert!(close(
        s.predicted_overhead_per_row_ns.unwrap(),
        reads_per_row / 2.0 * 48.0
    ));
    assert!(close(
        s.predicted_timing_on_ms.unwrap(),
        55.0 + 2_000_006.0 * 24.0 / 1e6
    ));
    assert!(close(
        s.predicted_slowdown.unwrap(),
        s.predicted_timing_on_ms.unwrap() / 55.0
    ));
    // Observed: the median block 210/110 over the 55 ms median: 50 ms over
    // 2,000,006 reads; against 24 ns and against the 30 ns back-to-back loop.
    assert!(close(s.slowdown, 210.0 / 110.0));
    assert_eq!(s.result, Resolution::Resolved, "{}", s.result_reason);
    let observed_per_read = 50.0e6 / 2_000_006.0;
    assert!(close(s.overhead_per_read_ns, observed_per_read));
    assert!(close(s.observed_over_predicted.unwrap(), observed_per_read / 24.0));
    assert_eq!(s.back_to_back_per_read_ns, Some(30.0));
    assert!(close(
        s.back_to_back_observed_over_predicted.unwrap(),
        observed_per_read / 30.0
    ));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);

    // PostgreSQL 19's TSC from RDTSC's added cost, the loop time kept beside it.
    let t = r.tsc_prediction.as_ref().unwrap();
    assert_eq!((t.rdtsc_per_read_ns, t.rdtsc_back_to_back_per_read_ns), (8.0, 20.0));
    assert!(close(t.predicted_overhead_per_row_ns, reads_per_row * 8.0));
}

#[test]
fn without_the_model_there_is_no_prediction_and_it_says_why() {
    // Stopped before the model ran: no other method stands in.
    let mut m2 = model_machine();
    m2.system.executor_loop = None;
    let r2 = report::build(&Inputs {
        query: "q",
        rows: 1_000_000,
        runs: 1,
        temp_table_estimated_bytes: 1,
        ..common::report_inputs(&r2_runs(), &m2)
    });
    let s2 = &r2.clock_sources[0];
    assert_eq!(s2.predicted_per_read_ns, None);
    assert_eq!(s2.observed_over_predicted, None);
    assert!(
        s2.prediction_status.starts_with("not measured"),
        "{}",
        s2.prediction_status
    );
    assert_eq!(s2.back_to_back_per_read_ns, Some(30.0));
    assert!(
        r2.warnings.iter().any(|w| w.contains("no prediction: not measured")),
        "{:?}",
        r2.warnings
    );
}

#[test]
fn a_model_that_could_not_resolve_the_cost_gives_no_number() {
    let mut m3 = model_machine();
    let mut unresolved = clockscope_pg::predict::ExecutorLoopCost::recorded("clock_gettime (CLOCK_MONOTONIC)", 1.0);
    unresolved.added_ns_per_row = None;
    unresolved.added_ns_per_read = None;
    unresolved.resolved = false;
    unresolved.status = "not resolved: the 95% interval of the difference includes 0".into();
    m3.system.executor_loop = Some(unresolved);
    let r3 = report::build(&Inputs {
        query: "q",
        rows: 1_000_000,
        runs: 1,
        temp_table_estimated_bytes: 1,
        ..common::report_inputs(&r2_runs(), &m3)
    });
    assert_eq!(r3.clock_sources[0].predicted_per_read_ns, None);
    assert!(r3.clock_sources[0].prediction_status.starts_with("not resolved"));
}

/// One pair of 1M rows on the system clock: 55 ms OFF, 105 ms ON.
fn r2_runs() -> Vec<SourceRuns> {
    vec![SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        timing_off_ms: vec![55.0],
        timing_on_ms: vec![105.0],
        clock_reads_per_run: 2_000_006,
        stopped_by: clockscope_explain::measure::StopReason::Precision,
        timing_on_plan: None,
        control: steady_control(),
    }]
}

/// A recorded PostgreSQL 15 parallel aggregate (EXPLAIN ANALYZE VERBOSE,
/// 2 workers): each process's rows from the per-worker lines, the leader's
/// the total less the workers'; the reads that add wall time are the serial
/// nodes' plus the busiest process's, not the plan's total.
#[test]
fn pg15_parallel_aggregate_counts_each_process() {
    let p = parse_explain_json(&data("pg15_parallel_agg_timing_on.json")).unwrap();
    let types: Vec<&str> = p.nodes.iter().map(|n| n.node_type.as_str()).collect();
    assert_eq!(types, ["Aggregate", "Gather", "Aggregate", "Seq Scan"]);
    assert!(p.is_parallel());
    assert_eq!(p.gathers.len(), 1);
    let g = &p.gathers[0];
    assert_eq!((g.workers_launched, g.node, g.below.as_slice()), (2, 1, &[2, 3][..]));
    // Seq Scan: 333333 x 3 rows in all; worker 0 326570, worker 1 331718.
    let scan = &p.nodes[3];
    let rows: Vec<(u64, u64, u64)> = scan.workers.iter().map(|w| (w.worker, w.rows_total, w.loops)).collect();
    assert_eq!(rows, [(0, 326_570, 1), (1, 331_718, 1)]);
    // The whole plan: 2 x (2 + 4 + 6 + 1,000,002) reads.
    assert_eq!(p.clock_reads(), 2_000_028);
    // Serial: Aggregate 1 + 1, Gather 3 + 1. The leader is the busiest:
    // partial Aggregate 6 - 2 - 2 = 2 calls, Seq Scan 1,000,002 - 326,571 -
    // 331,719 = 341,712.
    assert_eq!(p.critical_path_reads(), 2 * (6 + 2 + 341_712));
    // The workers' CPU time: each worker's total time on the node below the
    // Gather (113.859 and 100.745 ms) beside the leader's 147.479.
    assert!((p.server_busy_ms() - (147.479 + 113.859 + 100.745)).abs() < 1e-9);
    // TIMING OFF has no times: the bound, workers x execution time.
    let off = parse_explain_json(&data("pg15_parallel_agg_timing_off.json")).unwrap();
    assert!((off.server_busy_ms() - 3.0 * 83.737).abs() < 1e-9);
    assert_eq!(off.critical_path_reads(), 2 * (6 + 385_559));
}

/// Without VERBOSE (no per-worker lines) the reads below the Gather are
/// shared evenly by the 3 processes.
#[test]
fn pg15_parallel_without_verbose_shares_evenly() {
    let p = parse_explain_json(&data("pg15_parallel_agg_timing_on_not_verbose.json")).unwrap();
    assert!(p.nodes.iter().all(|n| n.workers.is_empty()));
    assert_eq!(p.clock_reads(), 2_000_028);
    // ceil(6 / 3) + ceil(1,000,002 / 3).
    assert_eq!(p.critical_path_reads(), 2 * (6 + 2 + 333_334));
}

/// A recorded parallel hash join: the inner side's scan (1,000 rows, one
/// loop, no per-worker lines) ran in one process, counted to the leader.
#[test]
fn pg15_parallel_join_counts_each_process() {
    let p = parse_explain_json(&data("pg15_parallel_join_timing_on.json")).unwrap();
    let types: Vec<&str> = p.nodes.iter().map(|n| n.node_type.as_str()).collect();
    assert_eq!(
        types,
        [
            "Aggregate",
            "Gather",
            "Aggregate",
            "Hash Join",
            "Seq Scan",
            "Hash",
            "Seq Scan"
        ]
    );
    assert_eq!(p.gathers[0].below, [2, 3, 4, 5, 6]);
    assert_eq!(p.clock_reads(), 4_004_038);
    // Per process: worker 0 677,101 calls, worker 1 652,141, the leader
    // 671,770 + the inner scan's 1,001: worker 0 is the busiest.
    assert_eq!(p.critical_path_reads(), 2 * (6 + 677_101));
    assert!((p.server_busy_ms() - (338.092 + 313.586 + 299.902)).abs() < 1e-9);
    // A serial plan's critical path is the whole plan.
    let serial = parse_explain_json(&data("pg15_count_100k_timing_on.json")).unwrap();
    assert!(!serial.is_parallel());
    assert_eq!(serial.critical_path_reads(), serial.clock_reads());
    assert_eq!(serial.server_busy_ms(), serial.execution_time_ms);
}
