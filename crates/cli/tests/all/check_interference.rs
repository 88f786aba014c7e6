//! `clockscope check` on a busy machine, with scripted clocks that pause
//! (a lost time slice, a throttled cgroup period) and fake /proc/stat and
//! cpu.stat trees: the read cost without the gaps, the verdict (noisy but
//! GOOD, never BAD for noise; a truly slow clock is still BAD), the run's
//! measurement quality, the repeat of noisy runs, and the text, JSON and
//! Prometheus forms.

use clockscope::ScriptedClock;
use clockscope::{measure, Control, Measurement};
use clockscope::{ClockId, Scale};
use clockscope_cli::commands::check::model::stats::ClockStats;
use clockscope_cli::commands::check::model::verdict::Status;
use clockscope_cli::commands::check::model::{CheckReport, MeasurementQuality};
use clockscope_cli::commands::check::{build_report, CheckArgs, Measured};
use clockscope_cli::commands::environment::CounterSetup;
use clockscope_system::engine::measure_repeating_noisy;
use clockscope_system::interference::{self, Interference, Snapshot};
use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::linux::LinuxEvidence;

/// A run of a clock read every `cost` ns that pauses `pause` ns every
/// `every` reads (0: never), for `duration` ns of clock time.
fn pausing_run(cost: u64, every: u64, pause: u64, duration: u64) -> Measurement {
    let clock = ScriptedClock::new("clock_gettime (CLOCK_MONOTONIC)", Scale::NANOSECONDS, move |n| {
        1_000 + n * cost + n.checked_div(every).map_or(0, |k| k * pause)
    });
    measure(&clock, duration, |_| Control::Continue)
}

fn stats(m: &Measurement) -> ClockStats {
    ClockStats::from_measurement(ClockId::Monotonic, m, None)
}

fn report(stats: Vec<ClockStats>) -> CheckReport {
    let root = FakeRoot::new();
    root.write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "tsc\n",
    );
    let linux = LinuxEvidence::read(root.path());
    let args = CheckArgs {
        duration: 1.0,
        ..Default::default()
    };
    // The I/O timing settings' price is the read cost without the
    // interference gaps (as `check` measures it, with an interval), set
    // against a 1.5 us page-cache read.
    let io_prices = stats.first().map(|c| {
        use clockscope_pg::predict::settings::Estimate;
        let ns = c.read_cost_ns;
        clockscope_cli::commands::check::judge::IoPrices {
            system: Some(Estimate::new(ns, Some(ns * 0.98), Some(ns * 1.02))),
            precise_tsc: None,
            page_read: Some(Estimate::new(1500.0, Some(1450.0), Some(1550.0))),
        }
    });
    let measured = Measured {
        stats,
        io_prices: io_prices.unwrap_or_default(),
        ..Default::default()
    };
    build_report(&args, &linux, &CounterSetup::default(), measured, None)
}

/// `r` as Prometheus text.
fn prometheus_text(r: &CheckReport) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::check::prometheus::write(&mut out, r).unwrap();
    String::from_utf8(out).unwrap()
}

fn text(r: &CheckReport) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::check::text::write_full(&mut out, r).unwrap();
    String::from_utf8(out).unwrap()
}

/// 25 ns reads, a 75 ms pause every 25 ms of reading: a 25% CPU quota.
fn throttled_clock() -> ClockStats {
    stats(&pausing_run(25, 1_000_000, 75_000_000, 1_000_000_000))
}

#[test]
fn interference_alone_is_noisy_but_good_and_exit_0() {
    let s = throttled_clock();
    // PostgreSQL's average includes the pauses: ~100 ns per loop.
    assert!(s.avg_loop_ns >= 99.0, "{}", s.avg_loop_ns);
    assert!((s.read_cost_ns - 25.0).abs() < 0.01, "{}", s.read_cost_ns);
    assert!(s.interference.lost_fraction > 0.7, "{:?}", s.interference);
    assert_eq!(s.interference.gaps, s.loops / 1_000_000);
    let r = report(vec![s]);
    let v = &r.verdict;
    let pg = v.postgresql_rule.as_ref().unwrap();
    assert!(
        !pg.passed,
        "PostgreSQL's rule is reported as PostgreSQL computes it: {}",
        pg.detail
    );
    assert_eq!(v.status, Status::Good, "{v:#?}");
    assert_eq!(r.exit_code(), 0);
    let note = v
        .interference_note
        .as_deref()
        .expect("the verdict says why the rule failed");
    assert!(note.contains("fails only because of interference"), "{note}");
    // In the text, the note is wrapped under the findings' column within 100 columns.
    let t = text(&r);
    let note_lines: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.contains("fails only because of interference"))
        .take_while(|l| !l.contains("clockscope's rule"))
        .collect();
    assert!(note_lines.len() >= 2, "{t}");
    for l in note_lines {
        assert!(l.starts_with(&" ".repeat(27)) && l.chars().count() <= 100, "{l}");
    }
    assert!(v.track_io_timing.as_ref().unwrap().safe);
    assert!(v.modern_rule.as_ref().unwrap().passed);
    assert!(v.problems.is_empty(), "{:?}", v.problems);
    // The prediction uses the read cost, not the inflated average.
    assert!((v.explain_system.as_ref().unwrap().per_read_ns - 25.0).abs() < 0.01);
    assert_eq!(r.measurement_quality, MeasurementQuality::Noisy);
    let why = r.measurement_quality_reason.as_deref().unwrap();
    assert!(
        why.starts_with("monotonic: ") && why.contains("of the run lost in"),
        "{why}"
    );
}

#[test]
fn a_slow_clock_without_interference_is_still_bad() {
    // 150 ns per read, no pause: the clock itself fails PostgreSQL's rule.
    let s = stats(&pausing_run(150, 0, 0, 100_000_000));
    assert_eq!(s.interference.gaps, 0);
    assert_eq!(s.read_cost_ns, s.avg_loop_ns);
    let r = report(vec![s]);
    assert_eq!(r.verdict.status, Status::Bad);
    assert_eq!(r.exit_code(), 1);
    assert_eq!(r.verdict.interference_note, None);
    assert_eq!(r.measurement_quality, MeasurementQuality::Clean);
    assert_eq!(r.measurement_quality_reason, None);
    assert!(!r.verdict.track_io_timing.as_ref().unwrap().safe);
}

#[test]
fn a_slow_clock_with_interference_is_bad_for_the_clock() {
    // 120 ns per read and 3 ms pauses: without the gaps it still costs > 100 ns.
    let s = stats(&pausing_run(120, 10_000, 3_000_000, 1_000_000_000));
    assert!(s.interference.gaps > 0);
    assert!((s.read_cost_ns - 120.0).abs() < 0.01, "{}", s.read_cost_ns);
    let r = report(vec![s]);
    assert_eq!(r.verdict.status, Status::Bad);
    assert_eq!(r.verdict.interference_note, None);
    assert_eq!(r.measurement_quality, MeasurementQuality::Noisy);
}

#[test]
fn noise_alone_gives_fair_at_worst() {
    // A fast clock so disturbed that 20% of its differences are 5 us gaps:
    // PostgreSQL's "under 1 us" fails and p99 is 5 us, yet not BAD.
    let s = stats(&pausing_run(20, 5, 5_000, 10_000_000));
    assert!(s.under_1us_pct < 91.0, "{}", s.under_1us_pct);
    let r = report(vec![s]);
    assert_eq!(r.verdict.status, Status::Fair);
    assert_eq!(r.exit_code(), 0);
    assert!(r.verdict.interference_note.is_some());
}

/// Interference of a run with fake cgroup counters before and after it: a
/// v1 `cpu.stat` whose throttling grew by `throttled` of `periods`.
fn throttled_sources(m: &Measurement, periods: u64, throttled: u64) -> Interference {
    let root = FakeRoot::new();
    root.write("proc/self/cgroup", "1:cpu:/pg\n0::/\n");
    root.write("proc/stat", "cpu  1 0 0 0 0 0 0 5 0 0\ncpu0 1 0 0 0 0 0 0 5 0 0\n");
    let stat = |p: u64, t: u64| format!("nr_periods {p}\nnr_throttled {t}\nthrottled_time {}\n", t * 80_000_000);
    root.write("sys/fs/cgroup/cpu/pg/cpu.stat", &stat(100, 10));
    let before = Snapshot::take(root.path(), None);
    root.write("sys/fs/cgroup/cpu/pg/cpu.stat", &stat(100 + periods, 10 + throttled));
    let after = Snapshot::take(root.path(), None);
    let gaps = interference::find_gaps(&m.histogram);
    Interference::from_gaps(&gaps, m.elapsed_ns).with_sources(&before, &after, m.elapsed_ns)
}

#[test]
fn noisy_runs_are_repeated_up_to_three_and_the_cleanest_kept() {
    // Runs 1-3 all throttled, run 2 the least: 3 runs, run 2 kept.
    let pauses = [75_000_000, 20_000_000, 50_000_000];
    let mut calls = 0;
    let (m, i) = measure_repeating_noisy(|n| {
        calls += 1;
        let m = pausing_run(25, 1_000_000, pauses[n as usize - 1], 1_000_000_000);
        let i = throttled_sources(&m, 32, 31);
        (m, i)
    });
    assert_eq!(calls, 3, "at most 3 runs: 3x the duration");
    assert_eq!((i.runs, i.kept_run), (3, 2));
    assert_eq!(i.noise_by_run.len(), 3);
    // Noisy by the share of the run lost; the sources say where it went.
    assert!(i.noise_by_run.iter().all(|n| {
        let n = n.as_deref().unwrap();
        n.contains("% of the run lost in") && n.contains("; 31 of 32 cgroup periods throttled")
    }));
    let mut s = stats(&m);
    s.interference = i;
    let r = report(vec![s]);
    assert_eq!(r.measurement_quality, MeasurementQuality::Noisy);
    let why = r.measurement_quality_reason.as_deref().unwrap();
    // Run 2: 25 ms of reads then a 20 ms pause, 22 times in 1 s: 44% lost.
    assert!(
        why.starts_with("monotonic: 44.0% of the run lost in 22 gaps")
            && why.contains("31 of 32 cgroup periods throttled (2.48 s);")
            && why.ends_with("3 runs within the 1 s budget, kept run 2 (1.00 s)"),
        "{why}"
    );
    assert!(
        (r.interference_lost_fraction - 0.44).abs() < 0.005,
        "{}",
        r.interference_lost_fraction
    );
    assert_eq!(r.verdict.status, Status::Good);
    let t = text(&r);
    assert!(t.contains("noisy: 44.0% of the run lost in"), "{t}");
    assert!(
        t.contains("measurement: NOISY, 44.0% of the run lost to interference (noisy from 10%)"),
        "{t}"
    );
    assert!(t.contains("throttled 31/32"), "{t}");

    // A noisy run then a clean one: 2 runs, the clean one kept, quality clean.
    let (m, i) = measure_repeating_noisy(|n| {
        let m = if n == 1 {
            pausing_run(25, 1_000_000, 75_000_000, 1_000_000_000)
        } else {
            pausing_run(25, 0, 0, 100_000_000)
        };
        let i = if n == 1 {
            throttled_sources(&m, 32, 31)
        } else {
            throttled_sources(&m, 10, 0)
        };
        (m, i)
    });
    assert_eq!((i.runs, i.kept_run), (2, 2));
    let mut s = stats(&m);
    s.interference = i;
    let r = report(vec![s]);
    assert_eq!(r.measurement_quality, MeasurementQuality::Clean);
    let why = r.measurement_quality_reason.as_deref().unwrap();
    assert!(
        why.contains("clean after repeats (run 1: 75.0% of the run lost in"),
        "{why}"
    );
    assert_eq!(r.interference_lost_fraction, 0.0);
}

#[test]
fn noisy_report_text_fits_100_columns_and_json_fits_the_schema() {
    let m = pausing_run(25, 1_000_000, 75_000_000, 1_000_000_000);
    let mut s = stats(&m);
    s.interference = throttled_sources(&m, 32, 31);
    let r = report(vec![s]);
    let t = text(&r);
    let block: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.starts_with("Read cost without interference"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(block.len() >= 4, "{t}");
    for l in &block {
        assert!(l.chars().count() <= 100, "{} columns: {l}", l.chars().count());
    }
    assert!(block.iter().any(|l| l.contains("measurement: NOISY")), "{t}");

    let mut out = Vec::new();
    clockscope_cli::report::json::write(&mut out, &r).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schema/check.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["measurement_quality"], "noisy");
    let i = &v["clocks"][0]["interference"];
    assert_eq!(i["throttled_periods"], 31);
    assert_eq!(i["throttled_ns"], 31 * 80_000_000u64);
    assert_eq!(i["steal_ns"], 0);
    // Read live (getrusage of this thread), even with a fake root.
    assert!(i["involuntary_switches"].is_u64(), "{i}");

    let prom = prometheus_text(&r);
    assert!(prom.contains("clockscope_measurement_noisy 1\n"), "{prom}");
    assert!(prom.contains("clockscope_interference_lost_ratio 0.75"), "{prom}");
    assert!(
        (v["interference_lost_fraction"].as_f64().unwrap() - 0.75).abs() < 0.001,
        "{v}"
    );
    assert!(
        prom.contains("clockscope_clock_read_cost_seconds{clock=\"monotonic\"} 0.000000025"),
        "{prom}"
    );
}

/// The one definition of noisy: the same share, the same threshold, in the
/// text, JSON and Prometheus. A run that lost 5% (an occasional preemption on
/// a quiet machine) is quiet; one that lost 98.7% in 6 long gaps is noisy.
#[test]
fn noisy_means_the_same_share_in_every_format() {
    // 25 ns reads; every 4M reads (0.1 s) a 5.26 ms pause: 9 in 1 s, 4.7% lost.
    let quiet = report(vec![stats(&pausing_run(25, 4_000_000, 5_263_158, 1_000_000_000))]);
    assert!(
        (quiet.interference_lost_fraction - 0.05).abs() < 0.005,
        "{}",
        quiet.interference_lost_fraction
    );
    assert_eq!(quiet.measurement_quality, MeasurementQuality::Clean);
    assert!(prometheus_text(&quiet).contains("clockscope_measurement_noisy 0\n"));
    assert!(
        text(&quiet).contains("measurement: 4.7% of the run lost to interference (quiet; noisy from 10%)"),
        "{}",
        text(&quiet)
    );
    // 6 pauses of 1.3 s after 17 ms of reads each: 98.7% lost in 6 gaps.
    let busy = stats(&pausing_run(25, 680_000, 1_300_000_000, 8_000_000_000));
    assert!(busy.interference.gaps <= 7, "{:?}", busy.interference);
    let busy = report(vec![busy]);
    assert!(
        busy.interference_lost_fraction > 0.98,
        "{}",
        busy.interference_lost_fraction
    );
    assert_eq!(busy.measurement_quality, MeasurementQuality::Noisy);
    let prom = prometheus_text(&busy);
    assert!(prom.contains("clockscope_measurement_noisy 1\n"), "{prom}");
    assert!(prom.contains("clockscope_interference_lost_ratio 0.98"), "{prom}");
    let mut out = Vec::new();
    clockscope_cli::report::json::write(&mut out, &busy).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["measurement_quality"], "noisy");
    assert!(text(&busy).contains("measurement: NOISY, 98.7% of the run lost to interference"));
    // Noise alone is not a problem to act on: exit 0.
    assert_eq!(busy.exit_code(), 0);
}
