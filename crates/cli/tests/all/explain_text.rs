//! `clockscope explain`'s text forms (crates/cli/src/commands/explain/text/, both levels)
//! of reports built from recorded and made-up runs: the lines a reader looks
//! for are there. The reports' arithmetic is tested in the explain library
//! (crates/explain/tests/all/plans.rs), on the same inputs.

#[path = "../../../explain/tests/all/common/inputs.rs"]
mod common;
use crate::common::snapshot;

use clockscope_explain::clockcost::{ClockCost, MachineClocks};
use clockscope_explain::measure::{ControlRuns, SourceRuns, StopReason};
use clockscope_explain::plan::parse_explain_json;
use clockscope_explain::report::{self, Inputs, Report};

/// A recorded plan of the explain library's tests (crates/explain/tests/data).
fn data(name: &str) -> String {
    let path = format!("{}/../explain/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// This machine's clocks as plans.rs sets them: each read costs `ns`.
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

fn text(r: &Report) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::explain::text::write(&mut out, r, clockscope_cli::commands::explain::text::Detail::Full)
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_report_from_recorded_runs_says_all_of_it_on_lines_a_reader_can_find() {
    let off = parse_explain_json(&data("pg15_count_100k_timing_off.json")).unwrap();
    let on = parse_explain_json(&data("pg15_count_100k_timing_on.json")).unwrap();
    // Three pairs: the recorded times and two made-up ones around them.
    let runs = SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        timing_off_ms: vec![off.execution_time_ms, 2.0, 4.0],
        timing_on_ms: vec![on.execution_time_ms, 5.0, 30.0],
        clock_reads_per_run: on.clock_reads(),
        stopped_by: StopReason::Precision,
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
    let text = text(&r);
    for needle in [
        "Clock source: system (test)",
        "overhead per row",
        "overhead per clock read",
        "predicted per clock read",
        "observed / predicted",
        "With PostgreSQL 19 on this machine (timing_clock_source = tsc): about",
        "200,006 clock reads per TIMING ON run (2.000 per row)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn the_prediction_from_the_executor_like_loop_is_shown_with_its_interval() {
    // 1M rows: TIMING OFF 55 ms (55 ns per row), ON 105 ms; 2,000,006 reads.
    let runs = SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        timing_off_ms: [55.0, 56.0, 54.0, 55.0, 56.0, 54.0].repeat(2),
        timing_on_ms: [105.0, 104.0, 106.0, 105.0, 104.0, 106.0].repeat(2),
        clock_reads_per_run: 2_000_006,
        stopped_by: StopReason::Precision,
        timing_on_plan: None,
        control: steady_control(),
    };
    let mut m = machine(30.0, Some(20.0));
    // Two reads per row add 48 ns (24 per read) with the system clock, 16 with RDTSC.
    let mut system = clockscope_pg::predict::ExecutorLoopCost::recorded("clock_gettime (CLOCK_MONOTONIC)", 48.0);
    // One slice before each pair (the A/A control's too: 18 in all), each
    // at the pooled cost: block by block the server's 49-51 ms per pair over
    // 2,000,006 reads against 24 ns per read.
    system.slice_medians_ns_per_row = vec![48.0; 18];
    m.system.executor_loop = Some(system);
    m.rdtsc.as_mut().unwrap().executor_loop = Some(clockscope_pg::predict::ExecutorLoopCost::recorded("RDTSC", 16.0));
    let r = report::build(&Inputs {
        query: "SELECT count(*) FROM t",
        rows: 1_000_000,
        runs: 3,
        temp_table_estimated_bytes: 36_249_600,
        ..common::report_inputs(&[runs], &m)
    });
    // Words, not lines: the text wraps at 100 columns.
    let text = text(&r).split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "in the instrumentation model",
        "predicted TIMING ON",
        "observed / back-to-back",
        "+48.0 ns per row per node with TIMING ON, 95% interval 43.2 to 52.8 ns, +-10.0%",
        "(95% interval 43.20 to 52.80 ns)",
        "paired in time 1.04 each block against the model slices just before its pairs (95% interval 1.02-1.06, 6 \
         blocks)",
        "A/A control 1.00x, 95% interval 1.00x to 1.00x; TIMING OFF against TIMING OFF, 6 blocks of 12 pairs",
        "result resolved: 1.88x to 1.94x lies above the machine's own variation (A/A 1.00x to 1.00x)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

/// Issue 24: the default text is one screen (the server, a row per clock
/// source, the TSC prediction, the recommendation), `--verbose` the full
/// report; both snapshotted from the recorded runs.
#[test]
fn default_text_is_one_screen_and_verbose_is_the_full_report() {
    let off = parse_explain_json(&data("pg15_count_100k_timing_off.json")).unwrap();
    let on = parse_explain_json(&data("pg15_count_100k_timing_on.json")).unwrap();
    let runs = SourceRuns {
        clock_source: "system".into(),
        how: "test".into(),
        timing_off_ms: vec![off.execution_time_ms, 2.0, 4.0],
        timing_on_ms: vec![on.execution_time_ms, 5.0, 30.0],
        clock_reads_per_run: on.clock_reads(),
        stopped_by: StopReason::Precision,
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
    let render = |verbose: bool| {
        let mut out = Vec::new();
        clockscope_cli::commands::explain::renderer(clockscope_cli::args::ReportFormat::Text, verbose)(
            &mut out,
            &clockscope_cli::report::stamp::Stamped {
                stamp: &clockscope_cli::report::stamp::ReportStamp::at(
                    "db1.example",
                    std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_461_547),
                    1,
                ),
                report: &r,
            },
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    };
    let (short, full) = (render(false), render(true));
    assert!(
        short.contains("With PostgreSQL 19's timing_clock_source = tsc: about"),
        "{short}"
    );
    assert!(!short.contains("overhead per clock read") && full.contains("overhead per clock read"));
    snapshot::one_screen_and_verbose("explain_recorded", &short, &full);
    // In Russian: the same one screen, its table lined up by columns, the
    // decimal comma and no digit grouping read as a fraction.
    let ru = clockscope_cli::i18n::Lang::from_code("ru").unwrap();
    let short_ru = clockscope_cli::i18n::with_language(ru, || render(false));
    assert_eq!(short_ru.lines().count(), short.lines().count(), "{short_ru}");
    assert!(
        short_ru.contains("строк: 100\u{a0}000") && short_ru.contains("2,993 мс"),
        "{short_ru}"
    );
    assert!(
        short_ru.lines().all(|l| textwrap::core::display_width(l) <= 100),
        "{short_ru}"
    );
    snapshot::snapshot_eq("explain_recorded.ru.txt", &short_ru);
    // Issue 34: the --verbose text in Russian, every label of clockscope's
    // through the catalog and its columns lined up by display width.
    let full_ru = clockscope_cli::i18n::with_language(ru, || render(true));
    assert!(
        full_ru.contains("замедление по блокам") && full_ru.contains("2,993 мс"),
        "{full_ru}"
    );
    assert!(
        full_ru.lines().all(|l| textwrap::core::display_width(l) <= 100),
        "{full_ru}"
    );
    let body = full_ru.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    snapshot::snapshot_eq("explain_recorded_verbose.ru.txt", &body);
}

/// Issue 36: TIMING ON wholly faster than OFF (every block 0.8x, the A/A
/// control steady) is a measurement problem: no overhead in the row, a
/// warning, exit 1; the same runs slower with timing exit 0.
#[test]
fn timing_on_wholly_faster_is_said_and_exits_1() {
    let report_of = |x: f64| {
        let runs = SourceRuns {
            clock_source: "system".into(),
            how: "test".into(),
            timing_off_ms: vec![10.0; 12],
            timing_on_ms: vec![10.0 * x; 12],
            clock_reads_per_run: 2_000_006,
            stopped_by: StopReason::Precision,
            timing_on_plan: None,
            control: steady_control(),
        };
        let m = machine(20.0, None);
        report::build(&Inputs {
            query: "q",
            rows: 1_000_000,
            ..common::report_inputs(&[runs], &m)
        })
    };
    let r = report_of(0.8);
    let mut out = Vec::new();
    clockscope_cli::commands::explain::text::write(
        &mut out,
        &r,
        clockscope_cli::commands::explain::text::Detail::Screen,
    )
    .unwrap();
    let text = String::from_utf8(out)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains(
            "system 10.000 ms measurement problem: TIMING ON measured faster than TIMING OFF (0.80x to 0.80x"
        ),
        "{text}"
    );
    assert!(!text.contains(" ns "), "no overhead stated: {text}");
    assert_eq!(clockscope_cli::commands::explain::exit_code(&r), 1);
    assert_eq!(clockscope_cli::commands::explain::exit_code(&report_of(1.5)), 0);
}
