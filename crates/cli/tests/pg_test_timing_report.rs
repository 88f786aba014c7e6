//! pg_test_timing's report from scripted clocks, compared byte for byte with
//! expected files written by hand from upstream PostgreSQL's committed
//! `pg_test_timing.c` (label column 19 wide, the TSC lines after the fast
//! block with no empty line before the policy sentence).

use clockscope::clock::scripted::ScriptedClock;
use clockscope::measure::pg_loop::{pg_test_timing_loop, PgOutcome, PgTicksToNs};
use clockscope::Scale;
use clockscope_cli::pg_test_timing::{args::Options, report, run, tsc_lines, Counter, CounterSection};

fn snapshot(name: &str) -> String {
    let path = format!("{}/tests/snapshots/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn render(readings: Vec<u64>, duration_ns: u64, cutoff: f64) -> String {
    let clock = ScriptedClock::from_readings("scripted", Scale::NANOSECONDS, readings);
    let PgOutcome::Done(run) = pg_test_timing_loop(&clock, PgTicksToNs::SYSTEM, duration_ns) else {
        panic!("the scripted readings go forward");
    };
    let mut out = Vec::new();
    report::write_average(&mut out, &run).unwrap();
    report::write_histograms(&mut out, &run, cutoff).unwrap();
    String::from_utf8(out).unwrap()
}

/// Differences 0, 20, 20, 30, 30, 30, 10, 12000, 40, 70 (a zero difference, one
/// >= 10000 ns); elapsed 12300 ns.
fn mixed() -> Vec<u64> {
    vec![
        1000, 1000, 1020, 1040, 1070, 1100, 1130, 1140, 13_140, 13_180, 13_250, 13_300,
    ]
}

#[test]
fn mixed_differences_at_every_cutoff() {
    for (cutoff, file) in [
        (99.99, "pg_report_mixed_c99.99.txt"),
        (50.0, "pg_report_mixed_c50.txt"),
        (0.0, "pg_report_mixed_c0.txt"),
        (100.0, "pg_report_mixed_c100.txt"),
    ] {
        assert_eq!(render(mixed(), 12_200, cutoff), snapshot(file), "cutoff {cutoff}");
    }
}

#[test]
fn largest_difference_below_10000_after_the_cutoff() {
    let mut r = vec![0];
    r.extend((1..=8).map(|i| i * 20));
    r.extend([190, 5190, 5200]);
    assert_eq!(render(r, 5000, 50.0), snapshot("pg_report_largest_after_cutoff.txt"));
}

#[test]
fn full_run_sections_in_order() {
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| n * 250_000);
    let tsc = Scale::from_khz(2_000_000).unwrap();
    let precise = ScriptedClock::new("scripted precise", tsc, |n| n * 500_000);
    let fast = ScriptedClock::new("scripted fast", tsc, |n| n * 500_000);
    let section = CounterSection {
        precise: &precise,
        fast: &fast,
        closing_lines: Box::new(|| tsc_lines(2_000_000, Some(1_999_990), true)),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run(&opts, &system, Counter::Usable(section), &mut out, &mut err).unwrap();
    assert_eq!(code, 0);
    assert!(err.is_empty());
    assert_eq!(String::from_utf8(out).unwrap(), snapshot("pg_run_full.txt"));
}

#[test]
fn not_usable_tsc_prints_postgresql_sentence() {
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| n * 250_000);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let counter: Counter<'_, ScriptedClock, ScriptedClock> = Counter::NotUsable(report::TSC_NOT_USABLE);
    assert_eq!(run(&opts, &system, counter, &mut out, &mut err).unwrap(), 0);
    let out = String::from_utf8(out).unwrap();
    let system_part = snapshot("pg_run_full.txt")
        .split("\nClock source:")
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        out,
        format!(
            "{system_part}\nTSC clock source is not usable. Likely unable to determine TSC frequency. \
             Are you running in an unsupported virtualized environment?\n"
        )
    );
}

#[test]
fn tsc_lines_follow_upstream() {
    for calibrated in [None, Some(0)] {
        assert_eq!(
            tsc_lines(2_449_228, calibrated, false),
            [
                "TSC frequency in use: 2449228 kHz",
                "TSC calibration did not converge",
                "TSC clock source will not be used by default, unless timing_clock_source is set to 'tsc'.",
            ]
        );
    }
    assert_eq!(
        tsc_lines(2_445_402, Some(2_444_190), true),
        [
            "TSC frequency in use: 2445402 kHz",
            "TSC frequency from calibration: 2444190 kHz",
            "TSC clock source will be used by default, unless timing_clock_source is set to 'system'.",
        ]
    );
}

#[test]
fn closing_lines_are_computed_after_the_fast_block() {
    // Upstream calibrates after both TSC blocks: the closing lines must be
    // computed once the fast clock has been read for the last time.
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| n * 250_000);
    let tsc = Scale::from_khz(2_000_000).unwrap();
    let precise = ScriptedClock::new("scripted precise", tsc, |n| n * 500_000);
    let fast = ScriptedClock::new("scripted fast", tsc, |n| n * 500_000);
    let section = CounterSection {
        precise: &precise,
        fast: &fast,
        closing_lines: Box::new(|| vec![format!("fast reads before closing: {}", fast.reads())]),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(
        run(&opts, &system, Counter::Usable(section), &mut out, &mut err).unwrap(),
        0
    );
    let out = String::from_utf8(out).unwrap();
    assert!(fast.reads() > 4000, "the fast block ran: {}", fast.reads());
    assert!(
        out.ends_with(&format!("\n\nfast reads before closing: {}\n", fast.reads())),
        "{out}"
    );
}

#[test]
fn backward_step_ends_with_postgresql_message() {
    let opts = Options {
        duration_s: 1,
        cutoff_pct: 99.99,
    };
    // Forward 100 ns per read, then one step back by 40 ns, then forward.
    let system = ScriptedClock::new("scripted system", Scale::NANOSECONDS, |n| {
        if n < 10 {
            1_000 + n * 100
        } else {
            1_000 + n * 100 - 140
        }
    });
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let counter: Counter<'_, ScriptedClock, ScriptedClock> = Counter::Absent;
    assert_eq!(run(&opts, &system, counter, &mut out, &mut err).unwrap(), 1);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Testing timing overhead for 1 second.\n\nSystem clock source: scripted system\n"
    );
    assert_eq!(
        String::from_utf8(err).unwrap(),
        "Detected clock going backwards in time.\nTime warp: -40 ns\n"
    );
}
