//! Every command's text report fits 100 columns (counted in characters, not
//! bytes), rendered from scripted and recorded inputs: check (a good
//! machine, a slow one, every clock, a long hostile CPU model name, `--brief`),
//! clocks, tsc from every recorded CPUID dump, explain from a recorded
//! model, and the real cross-cpu and sweep commands. pg_test_timing is
//! exempt: it prints PostgreSQL's report byte for byte.

use crate::common;
use clockscope::ScriptedClock;
use clockscope::{measure, Control};
use clockscope::{ClockId, Scale};
use clockscope_cli::commands::check::model::stats::ClockStats;
use clockscope_cli::commands::check::model::{CheckReport, Skipped};
use clockscope_cli::commands::check::{build_report, CheckArgs, Measured};
use clockscope_cli::commands::clocks::model::{ClockEntry, ClocksReport};
use clockscope_cli::commands::environment::CounterSetup;
use clockscope_cli::report::stamp::Stamped;
use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::linux::LinuxEvidence;
use common::{clockscope, test_stamp};

const COLUMNS: usize = 100;

/// Panics naming every line of `text` wider than 100 columns.
fn assert_fits(what: &str, text: &str) {
    let wide: Vec<String> = text
        .lines()
        .filter(|l| l.chars().count() > COLUMNS)
        .map(|l| format!("{} columns: {l}", l.chars().count()))
        .collect();
    assert!(
        wide.is_empty(),
        "{what}: lines over {COLUMNS} columns:\n{}\n\n{text}",
        wide.join("\n")
    );
    assert!(!text.trim().is_empty(), "{what}: empty");
}

fn rendered(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).unwrap()
}

/// A clock whose differences cycle through `steps` ticks, for `reads` reads.
fn scripted(id: ClockId, scale: Scale, steps: &'static [u64], reads: u64) -> ClockStats {
    let clock = ScriptedClock::new(id.display_name(), scale, move |n| {
        let n = n.min(reads + 1);
        (0..n).map(|i| steps[(i % steps.len() as u64) as usize]).sum::<u64>() + 1_000
    });
    let total_ticks: u64 = (0..reads).map(|i| steps[(i % steps.len() as u64) as usize]).sum();
    let m = measure(&clock, scale.ticks_to_ns(total_ticks), |_| Control::Continue);
    ClockStats::from_measurement(id, &m, id.is_counter().then(|| scale.khz()))
}

/// A KVM guest whose CPU model name is long and hostile.
fn root(model: &str, clocksource: &str) -> FakeRoot {
    let root = FakeRoot::new();
    root.write("proc/sys/kernel/osrelease", "6.1.0-test-amd64\n")
        .write(
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            &format!("{clocksource}\n"),
        )
        .write(
            "sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc kvm-clock acpi_pm hpet\n",
        )
        .write(
            "proc/cpuinfo",
            &format!(
                "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: {model}\n\
                 flags\t\t: fpu tsc rdtscp constant_tsc nonstop_tsc tsc_known_freq hypervisor\n\n"
            ),
        );
    root
}

fn counter() -> CounterSetup {
    CounterSetup {
        scale: Scale::from_khz(2_445_402),
        frequency_khz: Some(2_445_402),
        frequency_source: Some("kernel log (tsc: Detected/Refined), a long source name to wrap".into()),
        trusted: Some(true),
        reason: Some("every piece of evidence agrees".into()),
        evidence: vec![
            "ok: frequency known and sources agree: 2445402 kHz from kernel log (tsc: Detected/Refined); 1 \
             source(s) within 500 ppm of kernel log (tsc: Detected/Refined); largest 0.0 ppm"
                .into(),
        ],
        postgresql_auto_uses_tsc: Some(true),
        postgresql_reads_counter: true,
        hypervisor: Some("KVM".into()),
        ..Default::default()
    }
}

fn check_report(model: &str, clocksource: &str, stats: Vec<ClockStats>) -> CheckReport {
    let root = root(model, clocksource);
    let linux = LinuxEvidence::read(root.path());
    let args = CheckArgs {
        duration: 1.0,
        ..Default::default()
    };
    let measured = Measured {
        stats,
        skipped: vec![Skipped {
            name: "cntvct".into(),
            reason: "CNTVCT_EL0 is not available on this architecture (x86_64), and this reason is long".into(),
        }],
        interrupted: false,
        allowed_cpus: Some(vec![0, 1]),
        executor_loops: vec![clockscope_pg::predict::ExecutorLoopCost::recorded(
            "clock_gettime (CLOCK_MONOTONIC)",
            47.3,
        )],
        ..Default::default()
    };
    let mut r = build_report(&args, &linux, &counter(), measured, None);
    r.stamp = test_stamp();
    r
}

#[test]
fn check_text_and_brief_fit_100_columns() {
    let tsc = Scale::from_khz(2_445_402).unwrap();
    let ns = Scale::NANOSECONDS;
    let cases = [
        (
            "good",
            check_report(
                "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz",
                "tsc",
                vec![
                    scripted(ClockId::Monotonic, ns, &[19, 20, 21, 20], 10_000),
                    scripted(ClockId::Rdtsc, tsc, &[35, 38], 8_000),
                ],
            ),
        ),
        (
            "slow, huge outliers",
            check_report(
                "AMD EPYC 7B13 64-Core Processor",
                "acpi_pm",
                vec![scripted(ClockId::Monotonic, ns, &[700, 710, 123_456_789], 3_000)],
            ),
        ),
        (
            "every clock, a long hostile model name",
            check_report(
                &format!("\u{1b}]0;pwned\u{7} {}", "Very Long Vendor CPU Model Name ".repeat(6)),
                "tsc",
                ClockId::ALL
                    .into_iter()
                    .map(|id| scripted(id, ns, &[40, 41, 16_000_000], 2_000))
                    .collect(),
            ),
        ),
    ];
    for (what, r) in &cases {
        let text = rendered(|o| clockscope_cli::commands::check::text::write_full(o, r).unwrap());
        assert_fits(what, &text);
        assert!(text.starts_with("clockscope ") && text.contains(" on db1.example, 2026-11-23T19:19:07Z\n"));
        let screen = rendered(|o| clockscope_cli::commands::check::text::write_screen(o, r).unwrap());
        assert_fits(&format!("{what} (one screen)"), &screen);
        let brief = rendered(|o| clockscope_cli::commands::check::text::write_brief(o, r).unwrap());
        assert_fits(&format!("{what} --brief"), &brief);
        assert!(
            brief.lines().count() <= clockscope_cli::commands::check::text::BRIEF_MAX_LINES,
            "{what}:\n{brief}"
        );
        // The JSON keeps the untrusted model whole (escaped, never cut).
        let json = rendered(|o| clockscope_cli::report::json::write(o, r).unwrap());
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            v["environment"]["cpu_model"],
            serde_json::json!(r.environment.cpu_model)
        );
    }
}

#[test]
fn clocks_text_fits_100_columns() {
    let clocks = ClockId::ALL
        .into_iter()
        .enumerate()
        .map(|(i, id)| {
            let works = i % 4 != 3;
            ClockEntry {
                name: id.cli_name().into(),
                display_name: id.display_name().into(),
                works,
                reason: (!works).then(|| "not available on this architecture (x86_64): a long reason ".repeat(3)),
                clock_getres_ns: Some(4_000_000),
                tick_ns: id.is_counter().then_some(0.409),
                observed_resolution_ns: works.then_some(16_000_000),
                avg_loop_ns: works.then_some(12_345.67),
                read_cost_ns: works.then_some(12_001.23),
                interference: None,
            }
        })
        .collect();
    let r = ClocksReport {
        counter_frequency_khz: Some(2_445_402),
        counter_frequency_source: Some("kernel log (tsc: Detected/Refined)".into()),
        clocks,
    };
    let text = rendered(|o| {
        let stamp = test_stamp();
        clockscope_cli::commands::clocks::write_text(
            o,
            &Stamped {
                stamp: &stamp,
                report: &r,
            },
        )
        .unwrap()
    });
    assert_fits("clocks", &text);
}

#[test]
fn tsc_text_of_every_recorded_dump_fits_100_columns() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../system/tests/data/cpuid");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(dump) = clockscope_system::tsc::cpuid::parse_dump(&text) else {
            continue;
        };
        let report = clockscope_system::tsc::TscReport::from_dump(&dump);
        let output = clockscope_cli::commands::tsc::model::TscOutput {
            report: &report,
            ntp: None,
            ntp_unavailable: None,
            drift: None,
            dump: Some(&path),
        };
        use clockscope_cli::commands::tsc::text::{write, Detail};
        for detail in [Detail::Screen, Detail::Full] {
            let out = rendered(|o| write(o, &output, detail).unwrap());
            assert_fits(&path.display().to_string(), &out);
        }
        seen += 1;
    }
    assert!(seen >= 5, "only {seen} dumps parsed in {dir}");
}

#[test]
fn this_machines_tsc_clocks_cross_cpu_and_sweep_text_fit_100_columns() {
    for args in [
        &["tsc", "--calibration-ms", "20"][..],
        &["clocks"],
        &["check", "-d", "0.01", "--all"],
        &["check", "-d", "0.01", "--brief"],
        &["cross-cpu", "-d", "0.1"],
        &["cross-cpu", "--plan"],
        &["sweep"],
    ] {
        let out = clockscope(args);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{args:?}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_fits(&args.join(" "), &text);
        if args.contains(&"--brief") {
            assert!(text.lines().count() <= 8, "{text}");
        }
    }
}

#[cfg(feature = "explain")]
/// The clock costs as measured on the 2-core AMD EPYC KVM guest
/// (PostgreSQL 15, 1M rows).
fn recorded_machine_clocks() -> clockscope_explain::clockcost::MachineClocks {
    use clockscope_explain::clockcost::{ClockCost, MachineClocks};
    let cost = |clock: &str, ns: f64| ClockCost {
        clock: clock.into(),
        per_read_ns: ns,
        read_cost_ns: ns - 0.4,
        read_cost_interval: Some(clockscope_system::stats::Interval {
            low: ns - 0.9,
            high: ns + 0.3,
            coverage: 0.96,
        }),
        loops: 30_000_000,
        method: "pg_test_timing loop".into(),
        frequency_khz: Some(2_445_402),
        frequency_source: Some("kernel log (tsc: Detected/Refined)".into()),
        executor_loop: Some(clockscope_pg::predict::ExecutorLoopCost::recorded(
            clock,
            2.0 * ns - 11.5,
        )),
    };
    MachineClocks {
        system: cost("clock_gettime (CLOCK_MONOTONIC)", 30.1),
        rdtsc: Some(cost("RDTSC", 19.0)),
        rdtscp: Some(ClockCost {
            executor_loop: None,
            ..cost("RDTSCP", 22.6)
        }),
        rdtsc_unavailable: None,
        tsc_auto: true,
    }
}

#[cfg(feature = "explain")]
/// The timing settings of the recorded server: track_io_timing and
/// auto_explain.log_timing on.
fn recorded_timing_settings() -> [clockscope_explain::timing_settings::ServerSetting; 5] {
    [
        ("track_io_timing", "on", "bool", "postmaster"),
        ("track_wal_io_timing", "off", "bool", "superuser"),
        ("auto_explain.log_analyze", "on", "bool", "superuser"),
        ("auto_explain.log_timing", "on", "bool", "superuser"),
        ("auto_explain.log_min_duration", "0", "integer", "superuser"),
    ]
    .map(
        |(name, v, vartype, context)| clockscope_explain::timing_settings::ServerSetting {
            name: name.into(),
            setting: v.into(),
            shown: v.into(),
            vartype: vartype.into(),
            source: "configuration file".into(),
            context: context.into(),
        },
    )
}

#[cfg(feature = "explain")]
#[test]
fn explain_text_from_a_recorded_model_fits_100_columns() {
    use clockscope_explain::connect::Locality;
    use clockscope_explain::measure::{Skipped, SourceRuns};
    use clockscope_explain::session::Setting;
    let machine = recorded_machine_clocks();
    let settings = [
        Setting {
            name: "max_parallel_workers_per_gather".into(),
            server_value: "2".into(),
            session_value: Some("0".into()),
            why: Some("one process runs the whole plan, so every row's clock reads are counted once".into()),
        },
        Setting {
            name: "jit".into(),
            server_value: "on".into(),
            session_value: None,
            why: None,
        },
    ];
    let sources = [SourceRuns {
        clock_source: "system".into(),
        how: "PostgreSQL 15 has no timing_clock_source: it always reads clock_gettime (CLOCK_MONOTONIC)".into(),
        timing_off_ms: vec![55.1, 52.3, 57.0, 54.2, 53.9, 71.8],
        timing_on_ms: vec![92.4, 90.1, 95.3, 91.7, 93.0, 92.2],
        clock_reads_per_run: 2_000_004,
        stopped_by: clockscope_explain::measure::StopReason::MaxTime,
        timing_on_plan: None,
        control: clockscope_explain::measure::ControlRuns {
            a_ms: vec![55.1, 54.0],
            b_ms: vec![54.3, 55.0],
        },
    }];
    let timing_settings = recorded_timing_settings();
    let skipped = [Skipped {
        clock_source: "tsc".into(),
        reason: "the server is PostgreSQL 15, which has no timing_clock_source (PostgreSQL 19 and later)".into(),
    }];
    let server = format!(
        "host=/var/run/postgresql port=5432 user=postgres dbname={}",
        "d".repeat(80)
    );
    let report = clockscope_explain::report::build(&clockscope_explain::report::Inputs {
        server_version: "15.18 (Debian 15.18-0+deb12u1)",
        server_version_num: 150018,
        server_version_full: "PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc \
                              (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit",
        server: &server,
        locality: Locality::UnixSocket,
        settings: &settings,
        timing_settings: &timing_settings,
        page_read: Some(clockscope_explain::timing_settings::PageReadReference {
            ns: 1_050.0,
            low_ns: Some(1_020.0),
            high_ns: Some(1_090.0),
            source: "an 8 kB pread from the OS page cache (median of 5 passes over 256 pages) measured on this \
                     machine, the server's"
                .into(),
        }),
        query: "SELECT count(*) FROM clockscope_explain_rows",
        rows: 1_000_000,
        temp_table_estimated_bytes: 36_000_000,
        workload: clockscope_explain::options::Workload::Table,
        workload_reason: None,
        runs: 5,
        warmup_runs: 1,
        sources: &sources,
        skipped: &skipped,
        machine: &machine,
        clock_measure_ns: 1_000_000_000,
        interrupted: false,
        max_time: std::time::Duration::from_secs(60),
        cpu_contention: Some(clockscope_explain::report::CpuContention {
            other_busy_fraction: 0.49,
            cpus: 2,
            warn_fraction: clockscope_explain::contention::BUSY_WARN_FRACTION,
        }),
    });
    let text = rendered(|o| {
        let stamp = test_stamp();
        clockscope_cli::commands::explain::text::write_full(
            o,
            &Stamped {
                stamp: &stamp,
                report: &report,
            },
        )
        .unwrap()
    });
    assert_fits("explain", &text);
    assert!(text.contains("Clock source: system"), "{text}");
    // The sections the width rule must cover are all there.
    for part in [
        "ALTER SYSTEM SET",
        "instrumentation model",
        "other processes kept 49%",
        "Version:",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
}
