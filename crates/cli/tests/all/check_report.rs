//! `clockscope check`'s report logic with scripted clocks and a fake sysfs
//! root: exact text and JSON snapshots, the JSON schema, Prometheus parsed back,
//! and the verdict for each kind of machine.

use clockscope::ScriptedClock;
use clockscope::{measure, Control};
use clockscope::{ClockId, Scale};
use clockscope_cli::args::CheckFormat;
use clockscope_cli::commands::check::judge as verdict;
use clockscope_cli::commands::check::model::stats::ClockStats;
use clockscope_cli::commands::check::model::verdict::Status;
use clockscope_cli::commands::check::model::{CheckReport, Skipped};
use clockscope_cli::commands::check::{build_report, finish, CheckArgs, Measured};
use clockscope_cli::commands::environment::CounterSetup;
use clockscope_cli::output_file::OutputFile;
use clockscope_cli::stdout::ReportWriter;
use clockscope_pg::predict::ExecutorLoopCost;
use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::linux::LinuxEvidence;
use std::io::Write;

use crate::common::snapshot::snapshot_eq;

/// A clock whose differences cycle through `steps` (in its own ticks), for
/// `reads` loop iterations after the start read; the end read follows.
fn scripted_stats(id: ClockId, scale: Scale, steps: &'static [u64], reads: u64) -> ClockStats {
    let clock = ScriptedClock::new(id.display_name(), scale, move |n| {
        let n = n.min(reads + 1);
        (0..n).map(|i| steps[(i % steps.len() as u64) as usize]).sum::<u64>() + 1_000
    });
    // Duration in ns that ends exactly at the last scripted read.
    let total_ticks: u64 = (0..reads).map(|i| steps[(i % steps.len() as u64) as usize]).sum();
    let m = measure(&clock, scale.ticks_to_ns(total_ticks), |_| Control::Continue);
    let khz = id.is_counter().then(|| scale.khz());
    ClockStats::from_measurement(id, &m, khz)
}

fn kvm_root() -> FakeRoot {
    let root = FakeRoot::new();
    root.write("proc/sys/kernel/osrelease", "6.1.0-test-amd64\n")
        .write("sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n")
        .write("sys/devices/system/clocksource/clocksource0/available_clocksource", "tsc kvm-clock acpi_pm \n")
        .write("sys/devices/system/cpu/online", "0-1\n")
        .write(
            "proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n\
             model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\nstepping\t: 8\n\
             flags\t\t: fpu tsc rdtscp constant_tsc nonstop_tsc tsc_known_freq tsc_adjust hypervisor\n\n\
             processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n\n",
        );
    root
}

/// The arguments of a default 1-second `check`.
fn one_second() -> CheckArgs {
    CheckArgs {
        duration: 1.0,
        ..Default::default()
    }
}

/// The system clock alone: 1000 scripted differences of about 20 ns.
fn monotonic_only() -> Vec<ClockStats> {
    vec![scripted_stats(
        ClockId::Monotonic,
        Scale::NANOSECONDS,
        MONO_STEPS,
        1_000,
    )]
}

fn trusted_counter() -> CounterSetup {
    CounterSetup {
        scale: Scale::from_khz(2_700_000),
        frequency_khz: Some(2_700_000),
        frequency_source: Some("x86, hypervisor, cpuid 0x40000010".into()),
        trusted: Some(true),
        reason: Some("every piece of evidence agrees".into()),
        evidence: vec!["ok: RDTSCP present".into(), "ok: invariant TSC".into()],
        postgresql_auto_uses_tsc: Some(true),
        postgresql_reads_counter: true,
        unusable_reason: None,
        hypervisor: Some("KVM".into()),
        cpuid: None,
        time_interposition: None,
    }
}

/// The I/O timing settings' prices, injected: the system clock at
/// `read_ns` per read back to back (95% interval +-2%), an 8 kB page-cache
/// read of 1.5 us (1.45 to 1.55).
fn io_prices(read_ns: f64) -> verdict::IoPrices {
    use clockscope_pg::predict::settings::Estimate;
    verdict::IoPrices {
        system: Some(Estimate::new(read_ns, Some(read_ns * 0.98), Some(read_ns * 1.02))),
        precise_tsc: None,
        page_read: Some(Estimate::new(1500.0, Some(1450.0), Some(1550.0))),
    }
}

const MONO_STEPS: &[u64] = &[19, 20, 20, 21, 20, 20, 19, 20, 22, 20];
/// 2.7 GHz ticks: 35 ticks = 12.96 ns, 38 = 14.07 ns.
const TSC_STEPS: &[u64] = &[35, 35, 38, 35, 35, 35, 38, 35];

fn good_report() -> CheckReport {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let tsc = Scale::from_khz(2_700_000).unwrap();
    let stats = vec![
        scripted_stats(ClockId::Monotonic, Scale::NANOSECONDS, MONO_STEPS, 10_000),
        scripted_stats(ClockId::Rdtsc, tsc, TSC_STEPS, 8_000),
    ];
    let skipped = vec![Skipped {
        name: "cntvct".into(),
        reason: "CNTVCT_EL0 is not available on this architecture (x86_64)".into(),
    }];
    let args = one_second();
    build_report(
        &args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            skipped,
            // What TIMING ON added per row in the model on the AMD EPYC guest
            // (bench/README.md): +36 ns with the system clock, +6 with RDTSC.
            executor_loops: vec![
                clockscope_pg::predict::ExecutorLoopCost::recorded(ClockId::Monotonic.display_name(), 36.0),
                clockscope_pg::predict::ExecutorLoopCost::recorded(ClockId::Rdtsc.display_name(), 6.0),
            ],
            io_prices: io_prices(20.3),
            ..Default::default()
        },
        None,
    )
}

/// `r` with a fixed host and time (2026-11-23T19:19:07Z), as snapshots need.
fn stamped(r: &CheckReport) -> CheckReport {
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_461_547);
    CheckReport {
        stamp: clockscope_cli::report::stamp::ReportStamp::at("db1.example", when, r.stamp.schema_version),
        ..r.clone()
    }
}

/// `r` as Prometheus text.
fn prometheus_text(r: &CheckReport) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::check::prometheus::write(&mut out, r).unwrap();
    String::from_utf8(out).unwrap()
}

/// `r` drawn as an SVG chart of `kind`.
fn svg(
    r: &CheckReport,
    kind: clockscope_cli::args::PlotKind,
    header: &clockscope_cli::commands::check::svg::PlotHeader,
) -> String {
    let plot = clockscope_cli::commands::check::svg::Plot {
        report: r,
        kind,
        header: header.clone(),
    };
    let mut out = Vec::new();
    clockscope_cli::commands::check::svg::write(&mut out, &plot).unwrap();
    String::from_utf8(out).unwrap()
}

/// The full report (`-v/--verbose`).
fn text(r: &CheckReport) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::check::text::write_full(&mut out, &stamped(r)).unwrap();
    String::from_utf8(out).unwrap()
}

/// The default one-screen report.
fn screen(r: &CheckReport) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::check::text::write_screen(&mut out, &stamped(r)).unwrap();
    String::from_utf8(out).unwrap()
}

/// No line of `text` ends inside a word that goes on at the start of the
/// next: each line break is where `flat` has a space (a word broken across
/// lines would join into a longer word than any in the unwrapped text), and
/// no "…".
fn assert_whole_words(text: &str, whole: &[&str]) {
    assert!(!text.contains('…'), "{text}");
    let words: std::collections::HashSet<&str> = whole.iter().flat_map(|w| w.split_whitespace()).collect();
    for w in text.split_whitespace() {
        assert!(
            words.contains(w),
            "'{w}' is not a whole word of the report's texts:\n{text}"
        );
    }
}

/// The words of `text`, one space between: a wrapped line compares as one.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn brief(r: &CheckReport) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::check::text::write_brief(&mut out, &stamped(r)).unwrap();
    String::from_utf8(out).unwrap()
}

fn json(r: &CheckReport) -> String {
    let mut out = Vec::new();
    clockscope_cli::report::json::write(&mut out, &stamped(r)).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn good_machine_text_and_json_snapshots() {
    let r = good_report();
    assert_eq!(r.verdict.status, Status::Good);
    assert_eq!(r.exit_code(), 0);
    snapshot_eq("check_good.txt", &screen(&r));
    snapshot_eq("check_good_verbose.txt", &text(&r));
    snapshot_eq("check_good.json", &json(&r));
}

#[test]
fn brief_is_at_most_eight_lines_with_host_cpu_clocksource_costs_verdict_and_recommendation() {
    let r = good_report();
    let b = brief(&r);
    snapshot_eq("check_good_brief.txt", &b);
    let lines: Vec<&str> = b.lines().collect();
    assert!(lines.len() <= 8, "{b}");
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{b}");
    assert!(lines[0].contains("on db1.example, 2026-11-23T19:19:07Z"), "{b}");
    assert!(
        b.contains("Intel(R) Xeon(R) Platinum 8481C") && b.contains("clocksource  tsc"),
        "{b}"
    );
    for c in &r.clocks {
        assert!(b.contains(&format!("{} {:.1} ns", c.name, c.avg_loop_ns)), "{b}");
    }
    assert!(b.contains("verdict      GOOD."), "{b}");
    let rec = r.verdict.recommendation.as_deref().unwrap();
    assert!(flat(&b).contains(rec), "{b}");
    // Every clock that works here: still at most 8 lines, whole lines left out, never cut.
    let mut all = r.clone();
    let one = all.clocks[0].clone();
    for id in clockscope::ClockId::ALL {
        all.clocks.push(ClockStats {
            name: id.cli_name().into(),
            display_name: id.display_name().into(),
            ..one.clone()
        });
    }
    let b = brief(&all);
    assert!(
        b.lines().count() <= 8 && b.lines().all(|l| l.chars().count() <= 100),
        "{b}"
    );
    assert!(!b.contains('…') && b.contains("verdict"), "{b}");
    assert!(flat(&b).contains(rec), "{b}");
    assert!(!b.contains("read cost"), "the read costs were left out whole: {b}");
}

fn schema() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schema/check.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("the schema itself is valid")
}

#[test]
fn json_matches_the_documented_schema() {
    let v: serde_json::Value = serde_json::from_str(&json(&good_report())).unwrap();
    let validator = schema();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // And the schema can fail: a wrong type is caught.
    let mut bad = v.clone();
    bad["clocks"][0]["avg_loop_ns"] = serde_json::json!("fast");
    assert!(!validator.is_valid(&bad));
    let mut extra = v;
    extra["verdict"]["surprise"] = serde_json::json!(1);
    assert!(!validator.is_valid(&extra));
}

#[test]
fn prometheus_output_parses_back() {
    let r = good_report();
    let text = prometheus_text(&r);
    let lines = text.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).expect("valid exposition format");
    let get = |metric: &str, clock: &str| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == metric && s.labels.get("clock") == Some(clock))
            .map(|s| match s.value {
                prometheus_parse::Value::Gauge(v) => v,
                ref other => panic!("{metric} is not a gauge: {other:?}"),
            })
    };
    // One statistic, one name: the loop average under its name, and under
    // the deprecated one for one release; the read cost under its own.
    let avg = get("clockscope_clock_loop_average_seconds", "monotonic").unwrap();
    assert!((avg - r.clocks[0].avg_loop_ns / 1e9).abs() < 1e-18);
    assert_eq!(get("clockscope_clock_read_seconds", "monotonic"), Some(avg));
    let cost = get("clockscope_clock_read_cost_seconds", "monotonic").unwrap();
    assert!((cost - r.clocks[0].read_cost_ns / 1e9).abs() < 1e-18);
    assert_eq!(get("clockscope_clock_backward_steps", "rdtsc"), Some(0.0));
    assert_eq!(get("clockscope_clock_resolution_seconds", "monotonic"), Some(19e-9));
    let p99 = scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == "clockscope_clock_step_seconds"
                && s.labels.get("percentile") == Some("99")
                && s.labels.get("clock") == Some("rdtsc")
        })
        .unwrap();
    assert!(matches!(p99.value, prometheus_parse::Value::Gauge(v) if v == r.clocks[1].percentiles_ns.p99 as f64 / 1e9));
    assert!(scrape
        .samples
        .iter()
        .any(|s| s.metric == "clockscope_info" && s.labels.get("clocksource") == Some("tsc")));
    let slowdown = get("clockscope_explain_predicted_slowdown_ratio", "rdtsc").unwrap();
    assert!((slowdown - r.verdict.explain_tsc.as_ref().unwrap().slowdown.unwrap()).abs() < 1e-9);
    // The verdict is a state set: the current status 1, every other one 0.
    let states: Vec<(String, f64)> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == "clockscope_verdict")
        .map(|s| match s.value {
            prometheus_parse::Value::Gauge(v) => (s.labels.get("status").unwrap().to_string(), v),
            ref other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        states,
        [
            ("broken", 0.0),
            ("bad", 0.0),
            ("fair", 0.0),
            ("good", 1.0),
            ("no_verdict", 0.0)
        ]
        .map(|(s, v)| (s.to_string(), v))
    );
    assert!(text.lines().all(|l| l.starts_with('#') || l.starts_with("clockscope_")));
}

#[test]
fn syscall_clocksource_and_slow_clock_are_flagged() {
    let root = kvm_root();
    root.write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "xen\n",
    );
    let linux = LinuxEvidence::read(root.path());
    // 700 ns per read, as acpi_pm measured in PostgreSQL's docs.
    let stats = vec![scripted_stats(
        ClockId::Monotonic,
        Scale::NANOSECONDS,
        &[700, 710, 690],
        3_000,
    )];
    let args = one_second();
    let r = build_report(
        &args,
        &linux,
        &CounterSetup::default(),
        Measured {
            stats,
            // The model with a syscall clock: most of the two reads stay.
            executor_loops: vec![clockscope_pg::predict::ExecutorLoopCost::recorded(
                ClockId::Monotonic.display_name(),
                1300.0,
            )],
            io_prices: io_prices(650.0),
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.verdict.status, Status::Bad);
    assert_eq!(r.exit_code(), 1);
    let f = r.verdict.syscall_fallback.as_deref().unwrap();
    assert!(f.contains("'xen'") && f.contains("syscall"), "{f}");
    assert!(!r.verdict.postgresql_rule.as_ref().unwrap().passed);
    let io = r.verdict.track_io_timing.as_ref().unwrap();
    assert!(!io.safe && io.word() == "costly", "{io:?}");
    snapshot_eq("check_xen_slow.txt", &screen(&r));
    snapshot_eq("check_xen_slow_verbose.txt", &text(&r));
}

#[test]
fn backward_step_is_broken_and_exit_1() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let clock = ScriptedClock::from_readings(
        "clock_gettime (CLOCK_MONOTONIC)",
        Scale::NANOSECONDS,
        vec![1000, 1020, 1040, 1010, 1030, 1050, 1070, 1090, 1110, 1120],
    );
    let m = measure(&clock, 100, |_| Control::Continue);
    let stats = vec![ClockStats::from_measurement(ClockId::Monotonic, &m, None)];
    let args = one_second();
    let r = build_report(
        &args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.verdict.status, Status::Broken);
    assert_eq!(r.exit_code(), 1);
    assert_eq!(r.clocks[0].backward_steps, 1);
    assert_eq!(r.clocks[0].largest_backward_ns, 30);
    assert!(r.verdict.problems[0].contains("went backwards 1 times (largest step 30 ns)"));

    // `clockscope --clock monotonic | true`: the reader is gone before the
    // report is written; the output ends quietly and the status stays 1.
    for format in [CheckFormat::Text, CheckFormat::Json, CheckFormat::Prometheus] {
        let args = CheckArgs { format, ..one_second() };
        let mut out = ReportWriter::terminal_safe(ClosedPipe);
        let code = finish(&args, &r, None, &mut out).unwrap();
        out.flush().unwrap();
        assert_eq!(code, 1, "{format:?}");
        assert!(out.reader_gone(), "{format:?}");
    }
}

/// Issue 21: CLOCK_MONOTONIC stepped back by 100 s mid-run (a faketime file
/// changed from +0 to -100) once reported `elapsed_ns 0` and "average loop
/// 0.00 ns". The elapsed time is now the sum of the forward steps, and the
/// report says so in text and JSON.
#[test]
fn a_clock_stepped_back_100_s_still_reports_the_elapsed_time_and_loop_cost() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    // Reads 25 ns apart; from read 1000 on, 100 s earlier.
    let clock = ScriptedClock::new("clock_gettime (CLOCK_MONOTONIC)", Scale::NANOSECONDS, |n| {
        let t = 200_000_000_000 + n * 25;
        if n >= 1000 {
            t - 100_000_000_000
        } else {
            t
        }
    });
    let m = measure(&clock, 100_000, |_| Control::Continue);
    let stats = vec![ClockStats::from_measurement(ClockId::Monotonic, &m, None)];
    let r = build_report(
        &one_second(),
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            ..Default::default()
        },
        None,
    );
    let c = &r.clocks[0];
    assert_eq!(c.backward_steps, 1);
    // 100 us of forward time plus the end read; 25 ns per loop, not 0.
    assert_eq!(c.elapsed_ns, 100_025);
    assert_eq!(c.end_minus_start_ns, 100_050 - 100_000_000_000);
    assert!((c.avg_loop_ns - 25.0).abs() < 0.1, "{}", c.avg_loop_ns);
    assert!((c.read_cost_ns - 25.0).abs() < 0.1, "{}", c.read_cost_ns);
    assert_eq!(r.verdict.status, Status::Broken);
    assert_eq!(
        r.verdict.problems[0],
        "clock_gettime (CLOCK_MONOTONIC) went backwards 1 times (largest step 99999999975 ns); its elapsed time \
         (0.000100 s) and loop cost are the sum of its forward steps, as its end reading minus its start says \
         -99.999900 s"
    );
    let v: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
    let errors: Vec<String> = schema()
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["clocks"][0]["elapsed_source"], "forward_steps");
    assert_eq!(v["clocks"][0]["elapsed_ns"], 100_025);
    assert!(
        flat(&text(&r)).contains("are the sum of its forward steps"),
        "{}",
        text(&r)
    );
}

/// Issue 21: `faketime -f '+0 x10'` once left the verdict GOOD with the
/// counter "trusted". A calibration grossly off the kernel's frequency means
/// the measured clocks are not the kernel's: BAD (exit 1), said in the
/// summary, the problems, text and JSON, whatever the read costs.
#[test]
fn time_changed_on_its_way_to_clockscope_is_bad_never_good() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let why = "clockscope's calibration against CLOCK_MONOTONIC_RAW is -900000.0 ppm from kernel log (tsc: \
               Detected/Refined) (more than 1000 ppm): the kernel's clock is this counter scaled, so something \
               between clockscope and the kernel changes time (an LD_PRELOAD time library such as libfaketime, a \
               broken vDSO): the counter is not trusted";
    let counter = CounterSetup {
        trusted: Some(false),
        reason: Some(format!("frequency known and sources agree: {why}")),
        time_interposition: Some(why.to_string()),
        ..trusted_counter()
    };
    // The same cheap, clean measurements that are GOOD without it.
    assert_eq!(good_report().verdict.status, Status::Good);
    let r = build_report(
        &one_second(),
        &linux,
        &counter,
        Measured {
            stats: monotonic_only(),
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.verdict.status, Status::Bad);
    assert_eq!(r.exit_code(), 1);
    assert!(r
        .verdict
        .summary
        .starts_with("Something between clockscope and the kernel changes time"));
    assert!(r
        .verdict
        .problems
        .contains(&format!("time is not the kernel's here: {why}")));
    let v: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
    let errors: Vec<String> = schema()
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(v["verdict"]["status"], "bad");
    let t = flat(&text(&r));
    assert!(
        t.contains("Verdict: BAD. Something between clockscope and the kernel changes time"),
        "{t}"
    );
}

/// clockscope's own rule (`modern_rule`) asks for no backward step: a system
/// clock fast enough on average and at p99 still fails it when it stepped back
/// once, and the rule's detail says why.
#[test]
fn modern_rule_fails_on_a_backward_step_alone() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let clock = ScriptedClock::from_readings(
        "clock_gettime (CLOCK_MONOTONIC)",
        Scale::NANOSECONDS,
        vec![1000, 1020, 1040, 1010, 1030, 1050, 1070, 1090, 1110, 1120],
    );
    let m = measure(&clock, 100, |_| Control::Continue);
    let stats = vec![ClockStats::from_measurement(ClockId::Monotonic, &m, None)];
    let r = build_report(
        &one_second(),
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            ..Default::default()
        },
        None,
    );
    let c = &r.clocks[0];
    // Speed and tail alone would pass: only the backward step can fail the rule.
    assert!(c.avg_loop_ns <= verdict::MODERN_AVG_LOOP_NS, "{}", c.avg_loop_ns);
    assert!(
        c.percentiles_ns.p99 <= verdict::MODERN_P99_NS,
        "{}",
        c.percentiles_ns.p99
    );
    assert_eq!(c.backward_steps, 1);
    let rule = r.verdict.modern_rule.as_ref().expect("the system clock was measured");
    assert!(!rule.passed, "{}", rule.detail);
    assert!(rule.detail.contains("1 backward steps (needs 0)"), "{}", rule.detail);
}

/// A pipe whose reader has gone.
struct ClosedPipe;
impl Write for ClosedPipe {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Err(std::io::ErrorKind::BrokenPipe.into())
    }
}

#[test]
fn wall_clock_steps_are_reported_but_not_fatal() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let clock = ScriptedClock::from_readings(
        "rt",
        Scale::NANOSECONDS,
        vec![1000, 1020, 1040, 1010, 1030, 1050, 1200, 1300],
    );
    let m = measure(&clock, 100, |_| Control::Continue);
    let mono = scripted_stats(ClockId::Monotonic, Scale::NANOSECONDS, MONO_STEPS, 1_000);
    let stats = vec![mono, ClockStats::from_measurement(ClockId::Realtime, &m, None)];
    let args = one_second();
    let r = build_report(
        &args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.verdict.status, Status::Good);
    assert!(r.verdict.problems[0].contains("wall clock may be stepped by NTP"));
}

#[test]
fn recommendation_follows_trust_and_auto() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let args = one_second();
    let mut c = trusted_counter();
    c.trusted = Some(false);
    c.reason = Some("the kernel marked the TSC unstable".into());
    let r = build_report(
        &args,
        &linux,
        &c,
        Measured {
            stats: monotonic_only(),
            ..Default::default()
        },
        None,
    );
    let rec = r.verdict.timing_clock_source_recommendation.unwrap();
    assert!(
        rec.starts_with("PostgreSQL 19: set timing_clock_source = system") && rec.contains("marked the TSC unstable"),
        "{rec}"
    );
    c.postgresql_auto_uses_tsc = Some(false);
    c.trusted = Some(true);
    let r = build_report(
        &args,
        &linux,
        &c,
        Measured {
            stats: monotonic_only(),
            ..Default::default()
        },
        None,
    );
    assert!(r
        .verdict
        .timing_clock_source_recommendation
        .unwrap()
        .starts_with("PostgreSQL 19: set timing_clock_source = tsc"));
    assert_eq!(r.verdict.postgresql19_auto_picks.as_deref(), Some("system"));
}

#[test]
fn arm_counter_is_not_offered_to_postgresql() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let args = one_second();
    let timer = Scale::from_khz(25_000).unwrap();
    let stats = vec![
        scripted_stats(ClockId::Monotonic, Scale::NANOSECONDS, MONO_STEPS, 1_000),
        scripted_stats(ClockId::Cntvct, timer, &[1, 1, 2], 1_000),
    ];
    let mut c = trusted_counter();
    c.postgresql_reads_counter = false;
    c.postgresql_auto_uses_tsc = Some(false);
    let r = build_report(
        &args,
        &linux,
        &c,
        Measured {
            stats,
            executor_loops: vec![
                clockscope_pg::predict::ExecutorLoopCost::recorded(ClockId::Monotonic.display_name(), 36.0),
                clockscope_pg::predict::ExecutorLoopCost::recorded(ClockId::Cntvct.display_name(), 4.0),
            ],
            ..Default::default()
        },
        None,
    );
    let rec = r.verdict.timing_clock_source_recommendation.as_deref().unwrap();
    assert!(rec.starts_with("PostgreSQL 19: nothing to set: "), "{rec}");
    let p = r.verdict.explain_tsc.as_ref().unwrap();
    assert!(!p.used_by_postgresql);
    assert!(
        text(&r).contains("    not read by PostgreSQL 19 here, CNTVCT_EL0: +"),
        "{}",
        text(&r)
    );
    // auto_explain advice is about the clock PostgreSQL reads: the system clock.
    assert!(r
        .verdict
        .auto_explain_log_timing
        .as_ref()
        .unwrap()
        .why
        .contains("CLOCK_MONOTONIC"));
}

#[test]
fn older_installed_postgresql_is_named_in_the_recommendation() {
    let root = kvm_root();
    root.write("usr/lib/postgresql/15/bin/postgres", "")
        .write("usr/lib/postgresql/13/bin/postgres", "")
        .write("usr/lib/postgresql/notaversion/bin/postgres", "")
        .write("usr/lib/postgresql/16/share/README", "");
    let linux = LinuxEvidence::read(root.path());
    let args = one_second();
    let stats = monotonic_only();
    let r = build_report(
        &args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            io_prices: io_prices(20.0),
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.environment.postgresql_installed_majors, vec![13, 15]);
    let rec = r.verdict.timing_clock_source_recommendation.as_deref().unwrap();
    assert!(
        rec.ends_with(
            "installed here: PostgreSQL 13, 15, which has no timing_clock_source and always reads the system clock"
        ),
        "{rec}"
    );
    assert!(text(&r).contains("  PostgreSQL    13, 15 installed (/usr/lib/postgresql)"));
    // The one recommendation for this host is about the PostgreSQL installed
    // here, in the one-screen report and in --brief, whole.
    let here = r.verdict.recommendation.as_deref().unwrap();
    assert!(
        here.starts_with("installed here: PostgreSQL 13, 15, which always reads the system clock")
            && here.contains("track_io_timing is safe to turn on"),
        "{here}"
    );
    assert!(
        flat(&screen(&r)).contains(&format!("recommendation {here}")),
        "{}",
        screen(&r)
    );
    assert!(flat(&brief(&r)).contains(&format!("recommend {here}")), "{}", brief(&r));
    // With PostgreSQL 19 installed the advice stands alone.
    root.write("usr/lib/postgresql/19/bin/postgres", "");
    let linux = LinuxEvidence::read(root.path());
    let stats = monotonic_only();
    let r = build_report(
        &args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.verdict.recommendation, r.verdict.timing_clock_source_recommendation);
    assert!(!r
        .verdict
        .timing_clock_source_recommendation
        .unwrap()
        .contains("installed here"));
}

#[test]
fn the_default_report_fits_one_screen_and_brief_eight_lines_of_whole_words() {
    let root = kvm_root();
    root.write("usr/lib/postgresql/15/bin/postgres", "");
    let linux = LinuxEvidence::read(root.path());
    let r = build_report(
        &one_second(),
        &linux,
        &trusted_counter(),
        Measured {
            stats: monotonic_only(),
            ..Default::default()
        },
        None,
    );
    let mut reports = vec![good_report(), r];
    // A clock that went backwards, with every problem it raises.
    let mut broken = good_report();
    broken.clocks[0].backward_steps = 3;
    broken.clocks[0].largest_backward_ns = 1_000_000;
    reports.push(broken);
    for r in &reports {
        let s = screen(r);
        let b = brief(r);
        let v = text(r);
        assert!(
            s.lines().count() <= clockscope_cli::commands::check::text::SCREEN_MAX_LINES,
            "{} lines:\n{s}",
            s.lines().count()
        );
        assert!(b.lines().count() <= 8, "{} lines:\n{b}", b.lines().count());
        assert!(s.lines().chain(b.lines()).all(|l| l.chars().count() <= 100), "{s}\n{b}");
        // Every word of the one-screen report and of --brief is a word the
        // renderer wrote whole: the unwrapped headline, recommendation,
        // problems and the rest of the lines.
        let verdict = &stamped(r).verdict;
        let mut whole: Vec<String> = vec![s.clone(), verdict.headline.clone()];
        whole.extend(verdict.recommendation.clone());
        whole.extend(verdict.problems.iter().cloned());
        let whole_ref: Vec<&str> = whole.iter().map(String::as_str).collect();
        assert_whole_words(&s, &whole_ref);
        // --brief: the headline and the recommendation whole, never cut.
        assert!(flat(&b).contains(&flat(&verdict.headline)), "{b}");
        let rec = verdict
            .recommendation
            .clone()
            .or_else(|| verdict.problems.first().cloned());
        assert!(flat(&b).contains(&flat(&rec.unwrap_or_default())), "{b}");
        assert!(!b.contains('…'), "{b}");
        // The one-screen report cites no slowdown measured elsewhere and calls nothing costly.
        assert!(!s.contains("measured elsewhere") && !s.contains("costly"), "{s}");
        // The verbose report is the full one: longer, and with what the screen leaves out.
        assert!(
            v.lines().count() > s.lines().count() && v.contains("clockscope's rule"),
            "{v}"
        );
    }
}

#[test]
fn no_system_clock_means_no_verdict_and_exit_0() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let args = one_second();
    let tsc = Scale::from_khz(2_700_000).unwrap();
    let stats = vec![scripted_stats(ClockId::Rdtsc, tsc, TSC_STEPS, 800)];
    let r = build_report(
        &args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.verdict.status, Status::NoVerdict);
    assert_eq!(r.exit_code(), 0);
    assert!(text(&r).contains("Verdict: NO VERDICT. The system clock was not measured"));
}

#[test]
fn interrupted_report_exits_130() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let args = one_second();
    let stats = monotonic_only();
    let r = build_report(
        &args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            interrupted: true,
            ..Default::default()
        },
        None,
    );
    assert_eq!(r.exit_code(), 130);
    let t = text(&r);
    assert!(t.contains("Interrupted: the numbers above cover only what was measured before Ctrl-C (or SIGTERM)."));
    // The header says what was measured, not the 1 s asked for.
    let secs = r.clocks[0].elapsed_ns as f64 / 1e9;
    assert!(
        t.contains(&format!(
            "Clocks (measured {secs:.4} s each of 1 s asked for, interrupted;"
        )),
        "{t}"
    );
    let prom = prometheus_text(&r);
    assert!(prom.contains("\nclockscope_interrupted 1\n"), "{prom}");
    assert!(prometheus_text(&good_report()).contains("\nclockscope_interrupted 0\n"));

    // An interrupted run leaves an existing plot as it was, and no temporary file.
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("p.svg");
    std::fs::write(&plot, "keep").unwrap();
    let prepared = OutputFile::prepare("--plot", &plot).unwrap();
    let args = CheckArgs {
        plot: Some(plot.clone()),
        ..one_second()
    };
    let mut out = Vec::new();
    assert_eq!(finish(&args, &r, Some(prepared), &mut out).unwrap(), 130);
    assert_eq!(std::fs::read_to_string(&plot).unwrap(), "keep");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    // A finished one replaces it.
    let prepared = OutputFile::prepare("--plot", &plot).unwrap();
    finish(&args, &good_report(), Some(prepared), &mut Vec::new()).unwrap();
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn cpu_count_is_the_affinity_mask_with_the_cpuset_beside_it() {
    let root = kvm_root();
    root.write("proc/self/cgroup", "0::/box\n")
        .write("sys/fs/cgroup/box/cpuset.cpus.effective", "0-3\n");
    let linux = LinuxEvidence::read(root.path());
    let measured = |allowed: Option<Vec<usize>>| Measured {
        stats: monotonic_only(),
        allowed_cpus: allowed,
        ..Default::default()
    };
    let r = build_report(&one_second(), &linux, &trusted_counter(), measured(Some(vec![0])), None);
    assert_eq!(
        (r.environment.cpus, r.environment.cgroup_cpuset_cpus),
        (Some(1), Some(4))
    );
    assert!(
        flat(&text(&r)).contains(", 1 CPU usable (cgroup cpuset: 4)"),
        "{}",
        text(&r)
    );
    let r = build_report(
        &one_second(),
        &linux,
        &trusted_counter(),
        measured(Some(vec![0, 1, 2, 3])),
        None,
    );
    assert!(text(&r).contains(", 4 CPUs usable\n"), "{}", text(&r));
    // Without the mask, the cpuset stands in.
    let r = build_report(&one_second(), &linux, &trusted_counter(), measured(None), None);
    assert_eq!(r.environment.cpus, Some(4));
}

#[test]
fn untrusted_environment_text_is_escaped_in_text_and_prometheus() {
    let root = kvm_root();
    root.write(
        "sys/devices/system/clocksource/clocksource0/current_clocksource",
        "ts\x1b]0;x\x07c\n",
    );
    let linux = LinuxEvidence::read(root.path());
    let mut counter = trusted_counter();
    counter.hypervisor = Some("KVM\u{9b}2J".into());
    let r = build_report(
        &one_second(),
        &linux,
        &counter,
        Measured {
            stats: monotonic_only(),
            ..Default::default()
        },
        None,
    );
    let t = text(&r);
    assert!(t.contains("clocksource   ts\\x1b]0;x\\x07c"), "{t}");
    assert!(t.contains("hypervisor    KVM\\x9b2J"), "{t}");
    assert!(!t.chars().any(|c| c.is_control() && c != '\n'), "{t:?}");
    let prom = prometheus_text(&r);
    assert!(!prom.chars().any(|c| c.is_control() && c != '\n'), "{prom:?}");
    assert!(prom.contains("clocksource=\"ts\\\\x1b]0;x\\\\x07c\""), "{prom}");
}

#[test]
fn svg_plot_stands_alone_with_title_fields_and_the_1us_line() {
    use clockscope_cli::args::PlotKind;
    use clockscope_cli::commands::check::svg::{PlotHeader, POSTGRESQL_RULE};
    let header = PlotHeader {
        host: "db-7\x1b[2J".into(),
        time_utc: "2026-11-23 19:40 UTC".into(),
    };
    let r = good_report();
    for kind in [PlotKind::Cdf, PlotKind::Histogram] {
        let svg = svg(&r, kind, &header);
        assert!(svg.starts_with("<svg"), "{kind:?}");
        // The title: host (escaped), date, kernel, clocksource, measured time.
        let kernel = r.environment.kernel_release.as_deref().unwrap();
        let clocksource = r.environment.current_clocksource.as_deref().unwrap();
        for field in [
            "db-7\\x1b[2J",
            "2026-11-23 19:40 UTC",
            &format!("kernel {kernel}"),
            &format!("clocksource {clocksource}"),
            &format!(" s per clock, {} clocks", r.clocks.len()),
        ] {
            assert!(svg.contains(field), "{kind:?}: {field} missing");
        }
        assert!(!svg.contains('\x1b'));
        // The 1 us line with PostgreSQL's rule, and "µs" on the axis.
        assert!(
            svg.contains(&POSTGRESQL_RULE.replace('>', "&gt;").replace('\'', "&apos;")),
            "{kind:?}"
        );
        assert!(svg.contains("µs"));
        // Each clock in the legend with its read cost.
        for c in &r.clocks {
            assert!(svg.contains(&c.display_name), "{kind:?}");
            assert!(svg.contains(&format!("read cost {:.1} ns", c.avg_loop_ns)), "{kind:?}");
        }
    }
    let cdf = svg(&r, PlotKind::Cdf, &header);
    let hist = svg(&r, PlotKind::Histogram, &header);
    assert!(cdf.contains("cumulative") && !hist.contains("cumulative"));
}

#[test]
fn the_clocks_header_shows_the_measured_time() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let stats = monotonic_only();
    let secs = stats[0].elapsed_ns as f64 / 1e9;
    let report = |duration: f64, interrupted: bool| {
        let args = CheckArgs {
            duration,
            ..Default::default()
        };
        let measured = Measured {
            stats: stats.clone(),
            interrupted,
            ..Default::default()
        };
        text(&build_report(&args, &linux, &trusted_counter(), measured, None))
    };
    // `-d` is each clock's budget (repeats and the EXPLAIN model inside
    // it): the measured time and the budget.
    assert!(report(secs, false).contains(&format!("Clocks ({secs:.4} s each, within {secs} s per clock;")));
    assert!(report(1.0, false).contains(&format!("Clocks ({secs:.4} s each, within 1 s per clock;")));
    assert!(report(1.0, true).contains(&format!(
        "Clocks (measured {secs:.4} s each of 1 s asked for, interrupted;"
    )));
}

/// The instrumentation model's results for the two clocks of
/// [`explain_report`]: 32 ns per row for the system clock, 10 for the TSC.
fn recorded_loops() -> Vec<ExecutorLoopCost> {
    vec![
        ExecutorLoopCost::recorded(ClockId::Monotonic.display_name(), 32.0),
        ExecutorLoopCost::recorded(ClockId::Rdtsc.display_name(), 10.0),
    ]
}

/// A report on the KVM root from scripted MONOTONIC and TSC measurements,
/// with `executor_loops` as the instrumentation model's results.
fn explain_report(args: &CheckArgs, executor_loops: Vec<ExecutorLoopCost>) -> CheckReport {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let tsc = Scale::from_khz(2_700_000).unwrap();
    let stats = vec![
        scripted_stats(ClockId::Monotonic, Scale::NANOSECONDS, MONO_STEPS, 10_000),
        scripted_stats(ClockId::Rdtsc, tsc, TSC_STEPS, 8_000),
    ];
    build_report(
        args,
        &linux,
        &trusted_counter(),
        Measured {
            stats,
            executor_loops,
            ..Default::default()
        },
        None,
    )
}

#[test]
fn the_explain_headline_is_the_models_added_ns_per_row() {
    let r = explain_report(&one_second(), recorded_loops());
    let v = &r.verdict;
    let p = v.explain_system.as_ref().unwrap();
    assert_eq!(p.per_row_per_node_ns, Some(32.0));
    assert_eq!(p.status, "resolved");
    // The old model is kept beside it for comparison: two back-to-back reads.
    assert_eq!(p.back_to_back_per_row_ns, 2.0 * p.per_read_ns);
    // The default baseline comes from another machine: its slowdown is an example.
    assert!(v.baseline_is_example);
    let base = verdict::DEFAULT_BASELINE_ROW_NS;
    assert!((p.slowdown.unwrap() - (base + 32.0) / base).abs() < 1e-12);
    // The model's +-10% interval carries into the slowdown.
    assert!((p.slowdown_low.unwrap() - (base + 28.8) / base).abs() < 1e-12);
    assert!((p.slowdown_high.unwrap() - (base + 35.2) / base).abs() < 1e-12);
    // Words, not lines: the text wraps at 100 columns.
    let t = text(&r).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        t.contains(
            "+32.0 ns per row per node (95% interval 28.8 to 35.2 ns, +-10.0%; the model's TIMING OFF row 20.0 ns, \
             one run of 149 ms); back to back 2 x"
        ),
        "{t}"
    );
    assert!(t.contains("example: count(*) of 1M rows"), "{t}");
    assert!(t.contains("example baseline, measured elsewhere: 42.66 ns/row"), "{t}");
    assert!(
        v.summary.contains("adds about 32 ns per row per plan node"),
        "{}",
        v.summary
    );
    assert!(
        v.summary
            .contains("example: 1.75x for a 42.7 ns/row count(*) measured elsewhere"),
        "{}",
        v.summary
    );
    let tsc = v.explain_tsc.as_ref().unwrap();
    assert_eq!(tsc.per_row_per_node_ns, Some(10.0));
}

#[test]
fn a_baseline_the_user_measured_is_not_an_example() {
    let args = CheckArgs {
        baseline_row_ns: Some(55.0),
        ..one_second()
    };
    let measured = explain_report(&args, recorded_loops());
    let v = &measured.verdict;
    assert!(!v.baseline_is_example);
    let p = v.explain_system.as_ref().unwrap();
    assert!((p.slowdown.unwrap() - (55.0 + 32.0) / 55.0).abs() < 1e-12);
    assert!(
        v.summary.contains("1.58x at your measured 55.0 ns/row"),
        "{}",
        v.summary
    );
    assert!(!text(&measured).contains("example:"));
}

#[test]
fn a_model_result_for_another_clock_is_not_used() {
    // No number, and no other method stands in for it.
    let other = explain_report(&one_second(), vec![ExecutorLoopCost::recorded("some other clock", 5.0)]);
    let p = other.verdict.explain_system.as_ref().unwrap();
    assert_eq!(
        (p.per_row_per_node_ns, p.slowdown, p.count_timing_on_ms),
        (None, None, None)
    );
    assert!(p.status.starts_with("not measured"), "{}", p.status);
    assert!(
        other.verdict.summary.contains("not measured"),
        "{}",
        other.verdict.summary
    );
}

#[test]
fn a_model_difference_inside_the_noise_is_not_resolved() {
    let mut unresolved = ExecutorLoopCost::recorded(ClockId::Monotonic.display_name(), 1.0);
    unresolved.added_ns_per_row = None;
    unresolved.added_ns_per_read = None;
    unresolved.resolved = false;
    unresolved.status = "not resolved: the 95% interval of the difference, -1.0 to 3.0 ns per row, includes 0".into();
    let r = explain_report(&one_second(), vec![unresolved]);
    let p = r.verdict.explain_system.as_ref().unwrap();
    assert_eq!(p.per_row_per_node_ns, None);
    let t = text(&r).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        t.contains("clock_gettime (CLOCK_MONOTONIC): not resolved: the 95% interval"),
        "{t}"
    );
    assert!(!t.contains("count(*) of 1M rows 42.7 ms ->"), "{t}");
    // auto_explain.log_timing: nothing measured against the limit, no alarm.
    let a = r.verdict.auto_explain_log_timing.as_ref().unwrap();
    assert!(a.safe && a.why.contains("nothing measured"), "{a:?}");
}

#[test]
fn log_timing_is_costly_only_when_the_whole_interval_is_above_the_limit() {
    let root = kvm_root();
    let linux = LinuxEvidence::read(root.path());
    let stats = vec![scripted_stats(
        ClockId::Monotonic,
        Scale::NANOSECONDS,
        MONO_STEPS,
        10_000,
    )];
    let at = |per_row: f64| {
        let r = build_report(
            &CheckArgs {
                baseline_row_ns: Some(40.0),
                ..one_second()
            },
            &linux,
            &trusted_counter(),
            Measured {
                stats: stats.clone(),
                executor_loops: vec![clockscope_pg::predict::ExecutorLoopCost::recorded(
                    ClockId::Monotonic.display_name(),
                    per_row,
                )],
                ..Default::default()
            },
            None,
        );
        r.verdict.auto_explain_log_timing.unwrap()
    };
    // 40 ns of work: 1.3x is 12 ns. 20 +-2: 1.45x-1.55x: costly.
    assert!(!at(20.0).safe);
    assert_eq!(at(20.0).word(), "costly");
    // 12.5 +-1.25: 1.28x-1.34x: reaches the limit, not a clear case.
    let a = at(12.5);
    assert!(a.safe && a.why.contains("not a clear case"), "{a:?}");
    // 6 +-0.6: well below.
    let a = at(6.0);
    assert!(a.safe && a.why.contains("below the 1.3x limit"), "{a:?}");
    assert_eq!(a.decision.as_ref().unwrap().recommended_value.as_deref(), Some("on"));
}

#[test]
fn kernel_log_is_interpreted_in_the_environment() {
    // This AMD guest's recorded log under the KVM root (a guest: cpuinfo's hypervisor flag).
    let root = kvm_root();
    let log = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../system/tests/data/linux/amd-kvm-guest.dmesg"
    ))
    .unwrap();
    root.write(
        "dev/kmsg",
        &format!("{log}[    9.0] TSC deadline timer available\u{1b}[2J\n"),
    );
    let linux = LinuxEvidence::read(root.path());
    let r = build_report(
        &one_second(),
        &linux,
        &trusted_counter(),
        Measured {
            stats: monotonic_only(),
            ..Default::default()
        },
        None,
    );
    let e = &r.environment;
    assert_eq!(e.machine, Some(clockscope_system::linux::tsc_messages::Machine::Guest));
    assert_eq!(e.kernel_messages.len(), 5);
    assert_eq!(e.ntp, None);
    assert_eq!(
        e.ntp_unavailable.as_deref(),
        Some("not read: kernel files under another root")
    );
    let t = text(&r);
    let start = t.find("  kernel log\n").expect("kernel log section");
    let section = &t[start..t.find("\nClocks").unwrap()];
    assert!(
        section.contains("\"[Firmware Bug]: TSC doesn't count with P0 frequency!\""),
        "{section}"
    );
    assert!(section.contains("benign in a guest"), "{section}");
    assert!(!section.contains('\u{1b}') && section.contains("\\x1b[2J"), "{section}");
    assert!(section.lines().all(|l| l.chars().count() <= 100), "{section}");
    let mut json = Vec::new();
    clockscope_cli::report::json::write(&mut json, &r).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["environment"]["kernel_messages"][0]["kind"], "firmware_bug_p0");
    assert_eq!(v["environment"]["machine"], "guest");
}

/// NTP not synchronised is a problem on the default screen, with the error
/// adjtimex gives, and exit 1 (something to act on); a synchronised clock is
/// not mentioned there (the full report shows its state).
#[test]
fn ntp_not_synchronised_is_a_problem_on_the_default_screen() {
    use clockscope_system::linux::ntp::{NtpState, RawTimex, STA_UNSYNC};
    let mut r = good_report();
    let ntp = NtpState::from_raw(&RawTimex {
        state: 0,
        status: STA_UNSYNC,
        freq: 0,
        maxerror: 1_250_000,
        esterror: 2_500,
        offset: 0,
    });
    r.environment.ntp = Some(ntp.clone());
    let inputs = verdict::VerdictInputs {
        current_clocksource: r.environment.current_clocksource.clone(),
        postgresql_auto_uses_tsc: Some(true),
        postgresql_reads_counter: true,
        tsc_trusted: Some(true),
        baseline_row_ns: verdict::DEFAULT_BASELINE_ROW_NS,
        baseline_source: verdict::DEFAULT_BASELINE_SOURCE.to_string(),
        baseline_is_example: true,
        executor_loops: vec![
            ExecutorLoopCost::recorded(ClockId::Monotonic.display_name(), 36.0),
            ExecutorLoopCost::recorded(ClockId::Rdtsc.display_name(), 6.0),
        ],
        ntp: Some(ntp),
        ..Default::default()
    };
    r.verdict = verdict::decide(&r.clocks, &inputs);
    assert_eq!(r.verdict.status, Status::Good);
    assert_eq!(r.exit_code(), 1);
    let s = screen(&stamped(&r));
    snapshot_eq("check_ntp_unsynchronised.txt", &s);
    assert!(
        flat(&s).contains(
            "problem NTP is not synchronised (the kernel's maximum error is 1.250 s, estimated error 2500 µs)"
        ),
        "{s}"
    );
    // Synchronised: "problems none" and exit 0.
    assert!(screen(&stamped(&good_report())).contains("problems        none"));
    assert_eq!(good_report().exit_code(), 0);
}

/// Russian, as `LANG=ru_RU.UTF-8` chooses it.
fn russian() -> clockscope_cli::i18n::Lang {
    clockscope_cli::i18n::Lang::from_code("ru").unwrap()
}

/// The language `vars` choose (every locale installed).
fn chosen(vars: &[(&str, &str)]) -> clockscope_cli::i18n::Lang {
    use clockscope_cli::i18n::select::{choose, Sources};
    let var = |n: &str| {
        vars.iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| std::ffi::OsString::from(*v))
    };
    choose(&Sources {
        var: &var,
        installed: &|_| true,
    })
}

#[test]
fn russian_one_screen_and_brief_snapshots_and_c_is_english() {
    use clockscope_cli::i18n::with_language;
    let ru = chosen(&[("LANG", "ru_RU.UTF-8")]);
    assert_eq!(ru, russian());
    let (s, b, v) = with_language(ru, || {
        let r = good_report();
        (screen(&r), brief(&r), text(&r))
    });
    snapshot_eq("check_good.ru.txt", &s);
    snapshot_eq("check_good_brief.ru.txt", &b);
    snapshot_eq("check_good_verbose.ru.txt", &v);
    assert!(v.lines().all(|l| textwrap::core::display_width(l) <= 100), "{v}");
    // The decimal comma in the text, the English words gone.
    assert!(
        s.contains("Вердикт: ХОРОШО.") && s.contains(",") && !s.contains("Verdict"),
        "{s}"
    );
    // LC_ALL=C under a Russian LANG: the English report, byte for byte.
    let c = chosen(&[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "C")]);
    assert!(c.is_english());
    let en = with_language(c, || screen(&good_report()));
    snapshot_eq("check_good.txt", &en);
}

#[test]
fn machines_read_the_same_json_and_prometheus_in_russian() {
    use clockscope_cli::i18n::{in_english, with_language};
    let en = in_english(good_report);
    let ru = with_language(russian(), good_report);
    // The Russian verdict is kept for the text reports only.
    assert!(ru.verdict.local.is_some() && en.verdict.local.is_none());
    assert_ne!(ru.verdict.headline, en.verdict.headline);
    let (json_en, json_ru) = (json(&en), with_language(russian(), || json(&ru)));
    assert_eq!(json_en, json_ru);
    assert!(
        !json_ru.chars().any(|c| ('\u{400}'..='\u{4ff}').contains(&c)),
        "no Cyrillic in JSON"
    );
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_461_547);
    let prom = |r: &CheckReport| {
        let mut out = Vec::new();
        clockscope_cli::commands::check::prometheus::write_at(&mut out, r, when).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(prom(&en), with_language(russian(), || prom(&ru)));
}

#[test]
fn russian_report_keeps_its_line_budget_and_columns() {
    use clockscope_cli::i18n::with_language;
    use textwrap::core::display_width;
    with_language(russian(), || {
        let mut broken = good_report();
        broken.clocks[0].backward_steps = 3;
        broken.clocks[0].largest_backward_ns = 1_000_000;
        // The judge again, for the problems the backward steps raise.
        let broken = {
            let stats = broken.clocks.clone();
            let linux = LinuxEvidence::read(kvm_root().path());
            build_report(
                &one_second(),
                &linux,
                &trusted_counter(),
                Measured {
                    stats,
                    ..Default::default()
                },
                None,
            )
        };
        for r in [good_report(), broken] {
            let s = screen(&r);
            let b = brief(&r);
            assert!(
                s.lines().count() <= clockscope_cli::commands::check::text::SCREEN_MAX_LINES,
                "{} lines:\n{s}",
                s.lines().count()
            );
            assert!(b.lines().count() <= 8, "{} lines:\n{b}", b.lines().count());
            assert!(s.lines().chain(b.lines()).all(|l| display_width(l) <= 100), "{s}\n{b}");
            // The clocks table lines up by columns, not bytes: every row's
            // numbers end where the heading's columns end.
            let lines: Vec<&str> = s.lines().collect();
            let head = lines.iter().position(|l| l.trim_start().starts_with("часы ")).unwrap();
            let end = display_width(lines[head]);
            for row in &lines[head + 1..head + 1 + r.clocks.len()] {
                assert_eq!(display_width(row.trim_end_matches("  (прервано)")), end, "{s}");
            }
            assert!(r.verdict.text().problems.iter().all(|p| !p.contains(" times")), "{s}");
        }
    });
}
