//! `sweep --dsn`'s second pass in-process: a fake sysfs root, scripted read
//! costs, a scripted server measurement (what `explain` would report under
//! each clocksource) and a scripted clock for `--max-time`. The switch
//! before each server measurement, the read back after it, each
//! clocksource's share of the deadline, a change under the sweep, a server
//! error, and the recommendation made on the server's overhead per row
//! (the no-advice-from-noise rule) or, when the server's clock does not
//! follow the kernel clocksource, on the read cost. The original is in
//! place after every test. (With a real PostgreSQL: tests/sweep_dsn.rs.)

use crate::common::snapshot;

use clockscope::ScriptedClock;
use clockscope::{measure, Control};
use clockscope::{ClockId, Scale};
use clockscope_cli::args::CheckFormat;
use clockscope_cli::commands::check::model::stats::ClockStats;
use clockscope_cli::commands::sweep::model::{RestoreOutcome, ServerExplain, SweepReport, SweepServer};
use clockscope_cli::commands::sweep::server::{ServerOutcome, ServerPlan};
use clockscope_cli::commands::sweep::{renderer, sweep_with, SweepArgs};
use clockscope_system::linux::clocksource::{ClocksourceControl, CLOCKSOURCE0};
use clockscope_system::linux::testing::{FakeRoot, LoggedClocksource};
use std::sync::Arc;
use std::time::Duration;

fn fake(current: &str, available: &str) -> (FakeRoot, Arc<LoggedClocksource>) {
    let root = FakeRoot::new();
    root.write(&format!("{CLOCKSOURCE0}/current_clocksource"), &format!("{current}\n"))
        .write(
            &format!("{CLOCKSOURCE0}/available_clocksource"),
            &format!("{available} \n"),
        );
    let control = Arc::new(LoggedClocksource::new(root.path()));
    (root, control)
}

/// Every clocksource reads alike (20 ns): only the server tells them apart.
fn same_cost(_: &str) -> anyhow::Result<ClockStats> {
    let reads = 2_000u64;
    let clock = ScriptedClock::new("scripted", Scale::NANOSECONDS, move |n| 1_000 + n.min(reads + 1) * 20);
    let m = measure(&clock, reads * 20, |_| Control::Continue);
    Ok(ClockStats::from_measurement(ClockId::Monotonic, &m, None))
}

/// What `explain` would report: `ns` per row within `half` either side.
fn measured(clock_source: &str, ns: f64, half: f64) -> ServerExplain {
    ServerExplain {
        clock_source: clock_source.to_string(),
        follows_kernel_clocksource: clock_source == "system",
        timing_off_ms: 10.0,
        timing_on_ms: 10.0 + ns / 100.0,
        slowdown: 1.0 + ns / 1000.0,
        slowdown_low: Some(1.0 + (ns - half) / 1000.0),
        slowdown_high: Some(1.0 + (ns + half) / 1000.0),
        overhead_per_row_ns: ns,
        overhead_per_row_low_ns: Some(ns - half),
        overhead_per_row_high_ns: Some(ns + half),
        overhead_per_read_ns: ns / 2.0,
        clock_reads_per_row: 2.0,
        pairs: 24,
        result: "resolved".to_string(),
        result_reason: "apart from the A/A control".to_string(),
        stopped_by: "precision".to_string(),
        max_time_s: 0.0,
    }
}

fn header() -> SweepServer {
    SweepServer {
        server: "host=/tmp port=5432 user=postgres dbname=postgres".to_string(),
        locality: "unix_socket".to_string(),
        server_version: None,
        server_version_num: None,
        query: String::new(),
        workload: "auto".to_string(),
        rows: 1_000_000,
        max_time_s: 60.0,
        clock_source_note: String::new(),
        tsc_reference: None,
        original_again: None,
        warnings: Vec::new(),
    }
}

/// One call of the server measurement: the clocksource in place, the share, whether first.
type Call = (String, String, Duration, bool);

/// Runs a sweep of `available` (original `current`) with `--max-time 60`,
/// the server answering `answer(name)`, the clock reading `times` in turn.
fn run(
    current: &str,
    available: &str,
    times: &[u64],
    answer: &mut dyn FnMut(&str, &LoggedClocksource) -> anyhow::Result<ServerOutcome>,
) -> (anyhow::Result<SweepReport>, Vec<Call>, String) {
    let (root, control) = fake(current, available);
    let args = SweepArgs {
        apply: true,
        duration: 0.01,
        sysfs_root: root.path().to_path_buf(),
        ..SweepArgs::default()
    };
    let mut calls = Vec::new();
    let mut times = times.iter().copied();
    let mut elapsed = || Duration::from_secs(times.next().expect("the clock was read more often than scripted"));
    let c = control.clone();
    let mut measure_server = |name: &str, share: Duration, first: bool| {
        calls.push((name.to_string(), c.current().unwrap(), share, first));
        answer(name, &c)
    };
    let plan = ServerPlan {
        max_time: Duration::from_secs(60),
        elapsed: &mut elapsed,
        measure: &mut measure_server,
        header: header(),
    };
    let dir = root.path().join(CLOCKSOURCE0).to_string_lossy().into_owned();
    let r = sweep_with(&args, control.clone(), &dir, 0, &mut same_cost, None, Some(plan));
    let after = control.current().unwrap();
    (r, calls, after)
}

fn answer_with(ns: fn(&str) -> f64) -> impl FnMut(&str, &LoggedClocksource) -> anyhow::Result<ServerOutcome> {
    move |name, _| {
        Ok(ServerOutcome {
            explain: Some(measured("system", ns(name), 5.0)),
            ..ServerOutcome::default()
        })
    }
}

#[test]
fn each_clocksource_is_switched_to_then_measured_with_its_share_and_the_cheapest_advised() {
    let mut answer = answer_with(|name| match name {
        "tsc" => 30.0,
        "kvm-clock" => 100.0,
        _ => 1000.0,
    });
    // Four turns (the original again at the end): the second ends at 30 s,
    // not at 12 + 16, and the last has the rest.
    let (r, calls, after) = run("kvm-clock", "tsc kvm-clock acpi_pm", &[0, 12, 30, 40], &mut answer);
    let r = r.unwrap();
    assert_eq!(after, "kvm-clock");
    let s = Duration::from_secs;
    assert_eq!(
        calls,
        [
            ("tsc".into(), "tsc".into(), s(15), true),
            ("kvm-clock".into(), "kvm-clock".into(), s(16), false),
            ("acpi_pm".into(), "acpi_pm".into(), s(15), false),
            ("kvm-clock".into(), "kvm-clock".into(), s(20), false),
        ]
    );
    let rec = r.recommendation.unwrap();
    assert_eq!((rec.clocksource.as_str(), rec.in_use), ("tsc", false));
    assert_eq!(rec.based_on, "explain_overhead_per_row");
    assert!(
        rec.why
            .starts_with("tsc 30.0 ns/row (95% interval 25.0 to 35.0) against kvm-clock 100.0 ns/row"),
        "{}",
        rec.why
    );
    assert!(
        rec.why.contains("apart from kvm-clock's repeat at the end"),
        "{}",
        rec.why
    );
    // The repeat left the original in place.
    assert_eq!(r.restore, Some(RestoreOutcome::InPlace));
    assert!(r.results.iter().all(|x| x.server_explain.is_some()));
    assert!(r.server.unwrap().original_again.is_some());
}

/// The sweep's A/A control: the original measured again at the end came
/// out as cheap as the best, so the difference is the machine's drift
/// between runs, not the clocksource: no change advised.
#[test]
fn a_difference_the_originals_repeat_does_not_confirm_is_not_advised() {
    let mut seen = 0;
    let mut answer = move |name: &str, _: &LoggedClocksource| {
        let ns = match name {
            "tsc" => 30.0,
            _ => {
                seen += 1;
                if seen == 1 {
                    100.0
                } else {
                    33.0
                }
            }
        };
        Ok(ServerOutcome {
            explain: Some(measured("system", ns, 5.0)),
            ..ServerOutcome::default()
        })
    };
    let (r, calls, _) = run("kvm-clock", "tsc kvm-clock", &[2, 3, 4], &mut answer);
    assert_eq!(calls.len(), 3);
    let rec = r.unwrap().recommendation.unwrap();
    assert!(rec.in_use && !rec.distinguishable, "{rec:?}");
    assert!(
        rec.why.contains("within the machine's drift between the runs"),
        "{}",
        rec.why
    );
}

#[test]
fn overheads_inside_each_others_noise_keep_the_one_in_use() {
    let mut answer = answer_with(|name| if name == "tsc" { 95.0 } else { 100.0 });
    let (r, _, after) = run("kvm-clock", "tsc kvm-clock", &[2, 3, 4], &mut answer);
    let rec = r.unwrap().recommendation.unwrap();
    assert_eq!(after, "kvm-clock");
    assert!(rec.in_use && !rec.distinguishable, "{rec:?}");
    assert!(rec.why.contains("are not distinguishable here"), "{}", rec.why);
    assert!(
        rec.why.contains("of the EXPLAIN ANALYZE overhead per row in use"),
        "{}",
        rec.why
    );
}

#[test]
fn a_server_clock_that_does_not_follow_the_kernel_leaves_the_choice_to_the_read_cost() {
    // A role that may not SET timing_clock_source on PostgreSQL 19 with tsc as its setting.
    let mut answer = |name: &str, _: &LoggedClocksource| {
        Ok(ServerOutcome {
            explain: Some(measured("auto (tsc)", if name == "tsc" { 5.0 } else { 50.0 }, 1.0)),
            ..ServerOutcome::default()
        })
    };
    let (r, _, _) = run("kvm-clock", "tsc kvm-clock", &[2, 3, 4], &mut answer);
    let rec = r.unwrap().recommendation.unwrap();
    assert_eq!(rec.based_on, "read_cost");
    assert!(rec.in_use, "{rec:?}");
}

#[test]
fn a_change_during_the_explain_runs_invalidates_the_row_and_leaves_it_alone() {
    let mut answer = |name: &str, c: &LoggedClocksource| {
        if name == "tsc" {
            // The kernel's watchdog (or someone) switches away meanwhile.
            std::fs::write(c.sysfs().current_path(), "hpet\n").unwrap();
        }
        Ok(ServerOutcome {
            explain: Some(measured("system", 30.0, 5.0)),
            ..ServerOutcome::default()
        })
    };
    let (r, calls, after) = run("kvm-clock", "tsc kvm-clock hpet", &[2, 3, 4], &mut answer);
    let r = r.unwrap();
    assert_eq!(calls.len(), 1, "the sweep stopped at the change");
    assert_eq!(after, "hpet", "someone else's choice left in place");
    assert_eq!(r.restore, Some(RestoreOutcome::LeftAlone));
    assert!(!r.results[0].valid);
    assert!(r.results[0]
        .invalid_reason
        .as_deref()
        .unwrap()
        .contains("after the EXPLAIN runs"));
    assert!(r.changed_by_others.is_some());
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn a_server_error_restores_the_original_and_is_the_sweeps_error() {
    let mut answer = |name: &str, _: &LoggedClocksource| {
        if name == "kvm-clock" {
            anyhow::bail!("EXPLAIN ANALYZE under clocksource kvm-clock: the server closed the connection")
        }
        Ok(ServerOutcome {
            explain: Some(measured("system", 30.0, 5.0)),
            ..ServerOutcome::default()
        })
    };
    let (r, _, after) = run("acpi_pm", "tsc kvm-clock acpi_pm", &[2, 3, 4], &mut answer);
    let e = format!("{:#}", r.unwrap_err());
    assert_eq!(after, "acpi_pm");
    assert!(
        e.contains("the server closed the connection") && e.contains("clocksource acpi_pm restored"),
        "{e}"
    );
}

#[test]
fn a_clocksource_whose_turn_comes_after_the_deadline_is_not_measured_and_said_so() {
    let mut answer = answer_with(|_| 30.0);
    let (r, calls, after) = run("tsc", "tsc kvm-clock", &[2, 61, 62], &mut answer);
    let r = r.unwrap();
    assert_eq!(after, "tsc");
    assert_eq!(calls.len(), 1);
    assert!(r.results[1].server_explain.is_none());
    let warnings = &r.server.unwrap().warnings;
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("kvm-clock: not measured on the server: --max-time 60 s")),
        "{warnings:?}"
    );
}

#[test]
fn a_stop_during_the_explain_runs_ends_the_pass_and_keeps_what_was_measured() {
    let mut answer = |_: &str, _: &LoggedClocksource| {
        Ok(ServerOutcome {
            explain: Some(ServerExplain {
                stopped_by: "interrupted".into(),
                ..measured("system", 30.0, 5.0)
            }),
            interrupted: true,
            ..ServerOutcome::default()
        })
    };
    let (r, calls, after) = run("kvm-clock", "tsc kvm-clock", &[2, 3, 4], &mut answer);
    let r = r.unwrap();
    assert_eq!((calls.len(), after.as_str()), (1, "kvm-clock"));
    assert!(r.interrupted);
    assert_eq!(r.exit_code(), 130);
    assert_eq!(r.results[0].server_explain.as_ref().unwrap().stopped_by, "interrupted");
    // A stopped measurement does not count for the comparison: the read cost decides.
    assert_eq!(r.recommendation.unwrap().based_on, "read_cost");
}

/// The text of a scripted `--dsn` sweep (the numbers are the test's, not
/// measured): the server's table under the read-cost table, the control,
/// the recommendation on the overhead per row; one screen, and `--verbose`.
#[test]
fn the_text_of_a_scripted_sweep_with_a_server_is_one_screen() {
    let mut answer = |name: &str, _: &LoggedClocksource| {
        let ns = match name {
            "tsc" => 30.0,
            "kvm-clock" => 100.0,
            _ => 1000.0,
        };
        Ok(ServerOutcome {
            explain: Some(measured("system", ns, 5.0)),
            facts: Some(clockscope_cli::commands::sweep::server::ServerFacts {
                server_version: "15.18".to_string(),
                server_version_num: 150_018,
                query: "SELECT count(*) FROM clockscope_timing_test".to_string(),
                workload: "table".to_string(),
                rows: 1_000_000,
                clock_source_note: "the server reads clock_gettime(CLOCK_MONOTONIC) for EXPLAIN ANALYZE (before \
                                    PostgreSQL 19 its only clock), which the kernel's clocksource serves"
                    .to_string(),
            }),
            ..ServerOutcome::default()
        })
    };
    let (r, _, _) = run("kvm-clock", "tsc kvm-clock acpi_pm", &[0, 12, 30, 40], &mut answer);
    let r = r.unwrap();
    let text = |verbose| {
        let mut out = Vec::new();
        renderer(CheckFormat::Text, verbose)(&mut out, &r).unwrap();
        // The fake sysfs root is a temporary directory.
        String::from_utf8(out)
            .unwrap()
            .replace(&r.clocksource_dir, "SYSFS/clocksource0")
    };
    snapshot::one_screen_and_verbose("sweep_dsn_scripted", &text(false), &text(true));
    // Issue 34: the same one screen in Russian, the server's table lined up
    // by display columns under its Russian headings.
    let ru = clockscope_cli::i18n::with_language(clockscope_cli::i18n::Lang::from_code("ru").unwrap(), || text(false));
    let ru = ru.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    let lines: Vec<&str> = ru.lines().collect();
    let head = lines.iter().position(|l| l.starts_with("часовой источник ")).unwrap();
    let width = textwrap::core::display_width;
    for row in &lines[head + 1..head + 4] {
        assert_eq!(width(row), width(lines[head]), "{ru}");
    }
    assert!(
        ru.lines().all(|l| width(l) <= 100) && ru.contains("100,0 нс (от 95,0 до 105,0)"),
        "{ru}"
    );
    snapshot::snapshot_eq("sweep_dsn_scripted.ru.txt", &ru);
    // And its --verbose text: the server's notes and the legend in Russian too.
    let ru_full =
        clockscope_cli::i18n::with_language(clockscope_cli::i18n::Lang::from_code("ru").unwrap(), || text(true));
    let ru_full = ru_full.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    assert!(
        ru_full.lines().all(|l| width(l) <= 100) && ru_full.contains("--max-time 60 с"),
        "{ru_full}"
    );
    snapshot::snapshot_eq("sweep_dsn_scripted_verbose.ru.txt", &ru_full);
    let mut out = Vec::new();
    renderer(CheckFormat::Prometheus, false)(&mut out, &r).unwrap();
    let prom = String::from_utf8(out).unwrap();
    for line in [
        "clockscope_sweep_server_overhead_per_row_ns{clocksource=\"tsc\"} 30",
        "clockscope_sweep_server_overhead_per_row_low_ns{clocksource=\"kvm-clock\"} 95",
        "clockscope_sweep_server_slowdown{clocksource=\"acpi_pm\"} 2",
    ] {
        assert!(prom.lines().any(|l| l == line), "{line} not in:\n{prom}");
    }
}

/// A change during the original's repeat at the end: the sweep stops and
/// leaves it alone; the original's first row stays valid, and with no
/// repeat no change is advised on the server's numbers.
#[test]
fn a_change_during_the_originals_repeat_drops_the_repeat_alone() {
    let mut calls = 0;
    let mut answer = move |name: &str, c: &LoggedClocksource| {
        calls += 1;
        if calls == 4 {
            std::fs::write(c.sysfs().current_path(), "hpet\n").unwrap();
        }
        Ok(ServerOutcome {
            explain: Some(measured("system", if name == "tsc" { 30.0 } else { 100.0 }, 5.0)),
            ..ServerOutcome::default()
        })
    };
    let (r, calls, after) = run("kvm-clock", "tsc kvm-clock hpet", &[2, 3, 4, 5], &mut answer);
    let r = r.unwrap();
    assert_eq!(calls.len(), 4);
    assert_eq!(after, "hpet");
    assert!(r.results.iter().all(|x| x.valid));
    assert!(r
        .changed_by_others
        .as_deref()
        .unwrap()
        .contains("during the repeat of kvm-clock"));
    assert!(r.server.as_ref().unwrap().original_again.is_none());
    let rec = r.recommendation.unwrap();
    assert!(
        rec.in_use && rec.why.contains("was not measured again at the end"),
        "{}",
        rec.why
    );
}
