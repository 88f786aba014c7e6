//! Tests of the settings' judgement with recorded sources and read costs.

use super::*;
use crate::clockcost::ClockCost;
use clockscope_system::stats::Interval;

fn setting(name: &str, setting: &str, vartype: &str) -> ServerSetting {
    ServerSetting {
        name: name.into(),
        setting: setting.into(),
        shown: setting.into(),
        vartype: vartype.into(),
        source: "configuration file".into(),
        context: "superuser".into(),
    }
}

/// A measured source whose paired slowdown is `slowdown` with the 95%
/// interval `slowdown +- ci`, over 200,006 reads of a 10 ms TIMING OFF run.
fn source_ci(clock: &str, slowdown: f64, ci: f64) -> SourceResult {
    let reads = 200_006u64;
    let per_read = |x: f64| (x - 1.0) * 10.0 * 1e6 / reads as f64;
    let per_read_ns = per_read(slowdown);
    let (lo, hi) = (slowdown - ci, slowdown + ci);
    // A steady A/A control: six blocks of 1.0.
    let control = crate::report::model::AaControl {
        pairs: 12,
        blocks: 6,
        median: Some(1.0),
        low: Some(1.0),
        high: Some(1.0),
        extent: "interval",
        runs_a_ms: vec![10.0; 12],
        runs_b_ms: vec![10.0; 12],
    };
    let (result, result_reason) = crate::report::arith::judge_result(Some(lo), Some(hi), 6, &control);
    SourceResult {
        clock_source: clock.into(),
        how: String::new(),
        timing_off_ms: 10.0,
        timing_off_ms_min: 10.0,
        timing_off_ms_max: 10.0,
        timing_on_ms: 10.0 * slowdown,
        timing_on_ms_min: 10.0 * slowdown,
        timing_on_ms_max: 10.0 * slowdown,
        slowdown,
        slowdown_low: Some(lo),
        slowdown_high: Some(hi),
        result,
        result_reason,
        overhead_per_row_ns: 2.0 * per_read_ns,
        overhead_per_row_low_ns: Some(2.0 * per_read(lo)),
        overhead_per_row_high_ns: Some(2.0 * per_read(hi)),
        overhead_per_read_ns: per_read_ns,
        overhead_per_read_low_ns: Some(per_read(lo)),
        overhead_per_read_high_ns: Some(per_read(hi)),
        clock_reads_per_run: reads,
        clock_reads_per_row: 2.0,
        predicted_clock: None,
        predicted_per_read_ns: None,
        predicted_overhead_per_row_ns: None,
        predicted_overhead_per_row_low_ns: None,
        predicted_overhead_per_row_high_ns: None,
        predicted_timing_on_ms: None,
        predicted_slowdown: None,
        observed_over_predicted: None,
        observed_over_predicted_low: None,
        observed_over_predicted_high: None,
        paired_in_time: None,
        prediction_status: "not measured".into(),
        back_to_back_per_read_ns: None,
        back_to_back_observed_over_predicted: None,
        runs_timing_off_ms: vec![],
        runs_timing_on_ms: vec![],
        control,
        noise: crate::report::model::Noise {
            pairs: 12,
            blocks: 6,
            slowdown_median: slowdown,
            slowdown_min: slowdown - ci,
            slowdown_max: slowdown + ci,
            slowdown_ci_low: Some(slowdown - ci),
            slowdown_ci_high: Some(slowdown + ci),
            slowdown_ci_coverage: Some(0.96),
            slowdown_ci_half_width: Some(ci / slowdown),
            target_half_width: 0.05,
            target_reached: true,
            stopped_by: crate::measure::StopReason::Precision,
            timing_off_variation: Some(0.0),
        },
    }
}

fn source(clock: &str, slowdown: f64) -> SourceResult {
    source_ci(clock, slowdown, 0.01)
}

fn cost(clock: &str, read_ns: f64) -> ClockCost {
    ClockCost {
        clock: clock.into(),
        per_read_ns: read_ns + 1.0,
        read_cost_ns: read_ns,
        read_cost_interval: Some(Interval {
            low: read_ns * 0.97,
            high: read_ns * 1.03,
            coverage: 0.96,
        }),
        loops: 1000,
        method: "test".into(),
        frequency_khz: None,
        frequency_source: None,
        executor_loop: None,
    }
}

/// This machine: the system clock at `system_ns` per read, RDTSCP at `rdtscp_ns`.
fn machine(system_ns: f64, rdtscp_ns: Option<f64>) -> MachineClocks {
    MachineClocks {
        system: cost("clock_gettime (CLOCK_MONOTONIC)", system_ns),
        rdtsc: rdtscp_ns.map(|_| cost("RDTSC", 9.0)),
        rdtscp: rdtscp_ns.map(|ns| cost("RDTSCP", ns)),
        rdtsc_unavailable: rdtscp_ns.is_none().then(|| "no TSC here".to_string()),
        tsc_auto: true,
    }
}

fn page(ns: f64) -> Option<PageReadReference> {
    Some(PageReadReference {
        ns,
        low_ns: Some(ns * 0.98),
        high_ns: Some(ns * 1.02),
        source: "test".into(),
    })
}

fn lines(t: &TimingSettings) -> Vec<&str> {
    t.settings
        .iter()
        .filter_map(|s| s.recommendation.as_ref())
        .map(|r| r.alter_system.as_str())
        .collect()
}

fn auto_explain(analyze: &str, timing: &str, min_ms: &str) -> Vec<ServerSetting> {
    vec![
        setting("auto_explain.log_analyze", analyze, "bool"),
        setting("auto_explain.log_timing", timing, "bool"),
        setting("auto_explain.log_min_duration", min_ms, "integer"),
        setting("auto_explain.sample_rate", "1", "real"),
    ]
}

#[test]
fn io_timing_is_priced_with_the_read_postgresql_makes_around_an_io() {
    let on = [setting("track_io_timing", "on", "bool")];
    // A fast clock: 2 x 25 ns of a 1500 ns read is 3.3%: fine.
    let m = machine(25.0, Some(18.0));
    let t = judge(&on, &[source("system", 1.5)], Some(&m), page(1500.0));
    assert!(lines(&t).is_empty());
    let c = t.settings[0].cost.as_ref().unwrap();
    assert_eq!(c.ns, 50.0);
    assert!((c.share_of_reference.unwrap() - 50.0 / 1500.0).abs() < 1e-12);
    assert!(
        t.settings[0].judgement.starts_with("on: cheap: 50 ns per block I/O")
            && t.settings[0].judgement.contains("below the 10% limit: keep it"),
        "{:?}",
        t.settings[0]
    );
    let io = t.io_read.as_ref().unwrap();
    assert_eq!((io.clock.as_str(), io.ns), ("clock_gettime (CLOCK_MONOTONIC)", 25.0));
    // A server before PostgreSQL 19 (no timing_clock_source): the TSC is
    // said for the version that reads it, not as this server's.
    assert!(
        io.source.ends_with(
            "; this server has no timing_clock_source (before PostgreSQL 19), so it always reads the system clock; \
             only PostgreSQL 19 reads the TSC, with timing_clock_source = tsc (auto picks it here): RDTSCP, 18.0 ns \
             here"
        ),
        "{}",
        io.source
    );
    // Under the TSC the server reads RDTSCP around each I/O, not EXPLAIN's
    // fast read: priced at RDTSCP's 18 ns, whatever EXPLAIN inferred.
    let mut tsc = setting("timing_clock_source", "auto", "enum");
    tsc.shown = "auto (tsc)".into();
    let t = judge(&[on[0].clone(), tsc], &[source("tsc", 1.05)], Some(&m), page(1500.0));
    let io = t.io_read.as_ref().unwrap();
    assert_eq!((io.clock.as_str(), io.ns), ("RDTSCP", 18.0));
    assert!(!io.source.contains("before PostgreSQL 19"), "{}", io.source);
    assert_eq!(t.settings[0].cost.as_ref().unwrap().ns, 36.0);
    assert_eq!(t.io_read_status, "priced");
    // A syscall clock (hpet): 2 x 600 ns is 80% of the read: turn it off.
    let t = judge(
        &on,
        &[source("system", 20.0)],
        Some(&machine(600.0, None)),
        page(1500.0),
    );
    assert_eq!(lines(&t), ["ALTER SYSTEM SET track_io_timing = off;"]);
    let r = t.settings[0].recommendation.as_ref().unwrap();
    assert_eq!(r.then.as_deref(), Some("SELECT pg_reload_conf();"));
    assert!(!r.needs_restart);
    // Off and costly: kept off.
    let off = [setting("track_io_timing", "off", "bool")];
    let t = judge(
        &off,
        &[source("system", 20.0)],
        Some(&machine(600.0, None)),
        page(1500.0),
    );
    assert!(lines(&t).is_empty());
    assert!(
        t.settings[0].judgement.starts_with("off: costly: ") && t.settings[0].judgement.ends_with(": keep it"),
        "{:?}",
        t.settings[0]
    );
    // Off and cheap: turned on, with the reload (the other direction).
    let t = judge(&off, &[source("system", 1.5)], Some(&m), page(1500.0));
    assert_eq!(lines(&t), ["ALTER SYSTEM SET track_io_timing = on;"]);
    let r = t.settings[0].recommendation.as_ref().unwrap();
    assert_eq!(r.then.as_deref(), Some("SELECT pg_reload_conf();"));
    assert!(
        r.reason.starts_with("timing each block I/O is cheap here: 50 ns"),
        "{}",
        r.reason
    );
    let d = t.settings[0].decision.as_ref().unwrap();
    assert_eq!(
        (d.verdict, d.recommended_value.as_deref()),
        (Verdict::Cheap, Some("on"))
    );
    // The same for the WAL's timing.
    let wal = [setting("track_wal_io_timing", "off", "bool")];
    let t = judge(&wal, &[source("system", 1.5)], Some(&m), page(1500.0));
    assert_eq!(lines(&t), ["ALTER SYSTEM SET track_wal_io_timing = on;"]);
}

#[test]
fn a_cost_whose_interval_reaches_the_limit_changes_nothing() {
    let on = [setting("track_io_timing", "on", "bool")];
    // 2 x 80 ns = 160 ns of 1500 ns: 10.7%, but 2 x 77.6 / 1530 = 10.1% and
    // 2 x 82.4 / 1470 = 11.2%: wholly above: off.
    let t = judge(&on, &[source("system", 1.5)], Some(&machine(80.0, None)), page(1500.0));
    assert_eq!(lines(&t), ["ALTER SYSTEM SET track_io_timing = off;"]);
    // 2 x 77 ns = 154 ns: 10.3%, its interval from 9.8%: no change.
    let t = judge(&on, &[source("system", 1.5)], Some(&machine(77.0, None)), page(1500.0));
    assert!(lines(&t).is_empty(), "{t:?}");
    assert!(
        t.settings[0]
            .judgement
            .contains("not clear of the 10% limit: no change recommended"),
        "{:?}",
        t.settings[0]
    );
    // No interval at all: no change either.
    let mut m = machine(600.0, None);
    m.system.read_cost_interval = None;
    let t = judge(&on, &[source("system", 1.5)], Some(&m), page(1500.0));
    assert!(lines(&t).is_empty(), "{t:?}");
    assert!(
        t.settings[0].judgement.contains("interval not available"),
        "{:?}",
        t.settings[0]
    );
}

#[test]
fn without_a_price_nothing_is_recommended_for_io() {
    let on = [
        setting("track_io_timing", "on", "bool"),
        setting("track_wal_io_timing", "on", "bool"),
    ];
    // This machine's clocks not measured.
    let t = judge(&on, &[source("system", 20.0)], None, page(1500.0));
    assert_eq!(t.io_read, None);
    assert!(lines(&t).is_empty());
    assert!(t.settings.iter().all(|s| s.cost.is_none()));
    assert!(t.settings[0].judgement.contains("not priced"), "{:?}", t.settings[0]);
    // A TSC server on a machine without one: not priced, said why.
    let mut tsc = setting("timing_clock_source", "tsc", "enum");
    tsc.shown = "tsc".into();
    let t = judge(
        &[on[0].clone(), tsc],
        &[source("tsc", 1.1)],
        Some(&machine(25.0, None)),
        page(1500.0),
    );
    assert_eq!(t.io_read, None);
    assert!(t.io_read_status.contains("RDTSCP"), "{}", t.io_read_status);
    // No page-cache reference: priced, not judged.
    let t = judge(&on, &[source("system", 20.0)], Some(&machine(600.0, None)), None);
    assert!(lines(&t).is_empty());
    assert_eq!(t.settings[1].cost.as_ref().unwrap().per, "WAL write or sync");
}

#[test]
fn log_timing_is_changed_only_when_the_slowdown_interval_is_above_the_limit() {
    let s = auto_explain("on", "on", "250");
    let m = machine(25.0, None);
    let t = judge(&s, &[source("system", 1.2)], Some(&m), None);
    assert!(lines(&t).is_empty(), "{t:?}");
    let t = judge(&s, &[source("system", 2.4)], Some(&m), None);
    assert_eq!(lines(&t), ["ALTER SYSTEM SET auto_explain.log_timing = off;"]);
    let timing = &t.settings[1];
    assert!(timing
        .recommendation
        .as_ref()
        .unwrap()
        .reason
        .contains("whatever log_min_duration"));
    // 1.35x, its interval from 1.25x: not a clear case, no change.
    let t = judge(&s, &[source_ci("system", 1.35, 0.1)], Some(&m), None);
    assert!(lines(&t).is_empty(), "{t:?}");
    assert!(
        t.settings[1]
            .judgement
            .contains("not clear of the 1.3x limit: no change recommended"),
        "{:?}",
        t.settings[1]
    );
    // Off, where it would time something, and cheap: turned on.
    let t = judge(
        &auto_explain("on", "off", "250"),
        &[source("system", 1.2)],
        Some(&m),
        None,
    );
    assert_eq!(lines(&t), ["ALTER SYSTEM SET auto_explain.log_timing = on;"]);
    // Off and costly: kept off.
    let t = judge(
        &auto_explain("on", "off", "250"),
        &[source("system", 2.4)],
        Some(&m),
        None,
    );
    assert!(lines(&t).is_empty(), "{t:?}");
    // Timing without log_analyze, or auto_explain disabled, costs nothing.
    for s in [auto_explain("off", "on", "0"), auto_explain("on", "on", "-1")] {
        let t = judge(&s, &[source("system", 20.0)], Some(&m), None);
        assert!(lines(&t).is_empty(), "{t:?}");
        assert!(t.settings.iter().all(|s| s.cost.is_none()));
    }
}

#[test]
fn log_min_duration_zero_is_moved_and_log_timing_judged_on_its_cost() {
    let s = auto_explain("on", "on", "0");
    // A fast clock and a small slowdown: only the log's volume is worth a
    // change, log_timing is not.
    let t = judge(&s, &[source("system", 1.1)], Some(&machine(20.0, None)), page(1500.0));
    assert_eq!(lines(&t), ["ALTER SYSTEM SET auto_explain.log_min_duration = '3s';"]);
    let timing = t.settings.iter().find(|s| s.name == "auto_explain.log_timing").unwrap();
    let c = timing.cost.as_ref().unwrap();
    assert!((c.ns - 2.0 * 0.1 * 10.0 * 1e6 / 200_006.0).abs() < 1e-9, "{c:?}");
    assert!(
        timing.judgement.contains("log_min_duration = 0"),
        "{}",
        timing.judgement
    );
    // A costly one: both.
    let t = judge(&s, &[source("system", 2.0)], Some(&machine(20.0, None)), page(1500.0));
    assert_eq!(
        lines(&t),
        [
            "ALTER SYSTEM SET auto_explain.log_timing = off;",
            "ALTER SYSTEM SET auto_explain.log_min_duration = '3s';"
        ]
    );
}

#[test]
fn an_explain_cost_inside_the_noise_is_not_resolved() {
    let s = auto_explain("on", "on", "250");
    // ON/OFF 1.01 with an interval from 0.98x: not resolved, no price.
    let t = judge(&s, &[source_ci("system", 1.01, 0.03)], Some(&machine(20.0, None)), None);
    assert_eq!(t.explain_read, None);
    assert!(
        t.explain_read_status.starts_with("not resolved"),
        "{}",
        t.explain_read_status
    );
    let timing = &t.settings[1];
    assert!(timing.cost.is_none());
    assert!(timing.judgement.contains("not resolved"), "{}", timing.judgement);
    assert!(lines(&t).is_empty());
    // Fewer than 6 blocks: no interval, not resolved either.
    let mut few = source("system", 3.0);
    (few.result, few.result_reason) = crate::report::arith::judge_result(None, None, 5, &few.control);
    let t = judge(&s, &[few], Some(&machine(20.0, None)), None);
    assert!(
        t.explain_read_status.contains("5 blocks of pairs, an interval needs 6"),
        "{}",
        t.explain_read_status
    );
    assert!(lines(&t).is_empty());
}

#[test]
fn a_placeholder_for_an_unloaded_auto_explain_is_not_judged() {
    let s = vec![
        setting("auto_explain.log_analyze", "on", "string"),
        setting("auto_explain.log_timing", "on", "string"),
        setting("auto_explain.log_min_duration", "0", "string"),
    ];
    assert!(judge(&s, &[source("system", 20.0)], Some(&machine(600.0, None)), None)
        .settings
        .is_empty());
}

#[test]
fn restart_and_source_come_from_pg_settings() {
    let m = machine(600.0, None);
    let mut s = setting("track_io_timing", "on", "bool");
    s.context = "postmaster".into();
    s.source = "database".into();
    let t = judge(&[s], &[source("system", 20.0)], Some(&m), page(1000.0));
    let r = t.settings[0].recommendation.as_ref().unwrap();
    assert!(r.needs_restart);
    assert_eq!(r.then, None);
    assert!(r.reason.contains("ALTER DATABASE"), "{}", r.reason);
    let mut s = setting("track_io_timing", "on", "bool");
    s.context = "internal".into();
    assert!(lines(&judge(&[s], &[source("system", 20.0)], Some(&m), page(1000.0))).is_empty());
}

#[test]
fn clock_source_system_is_moved_to_auto_only_when_the_tsc_was_clearly_cheaper() {
    let m = machine(25.0, Some(18.0));
    let sys = [setting("timing_clock_source", "system", "enum")];
    // Per read: system 2.0x -> 50 ns, tsc 1.1x -> 5 ns, intervals apart.
    let both = [source("system", 2.0), source("tsc", 1.1)];
    let t = judge(&sys, &both, Some(&m), None);
    assert_eq!(lines(&t), ["ALTER SYSTEM SET timing_clock_source = 'auto';"]);
    // Priced with the source the server uses.
    assert_eq!(t.explain_read.as_ref().map(|p| p.clock.as_str()), Some("system"));
    let slower_tsc = [source("system", 2.0), source("tsc", 2.5)];
    assert!(lines(&judge(&sys, &slower_tsc, Some(&m), None)).is_empty());
    // Overlapping intervals: no change.
    let close = [source_ci("system", 1.20, 0.05), source_ci("tsc", 1.16, 0.05)];
    assert!(lines(&judge(&sys, &close, Some(&m), None)).is_empty());
    let mut auto = setting("timing_clock_source", "auto", "enum");
    auto.shown = "auto (tsc)".into();
    let t = judge(&[auto], &both, Some(&m), None);
    assert!(lines(&t).is_empty());
    let p = t.explain_read.as_ref().unwrap();
    assert_eq!(p.clock, "tsc");
    assert!((p.ns - 0.1 * 10.0 * 1e6 / 200_006.0).abs() < 1e-9);
    let mut auto_system = setting("timing_clock_source", "auto", "enum");
    auto_system.shown = "auto (system)".into();
    let t = judge(&[auto_system], &both, Some(&m), None);
    assert!(lines(&t).is_empty());
    assert!(t.settings[0].judgement.contains("chose the system clock"));
}

#[test]
fn a_page_cache_read_is_measured() {
    if cfg!(unix) {
        let p = measure_page_cache_read(10).expect("a temp file can be read");
        assert!(p.ns.is_finite() && p.ns > 0.0, "{p:?}");
        let (lo, hi) = (p.low_ns.unwrap(), p.high_ns.unwrap());
        assert!(lo <= p.ns && p.ns <= hi, "{p:?}");
    }
}
