//! The server's own timing settings, judged, against real PostgreSQL servers:
//! one configured with the classic footgun (track_io_timing on, auto_explain
//! loaded with log_analyze, log_timing and log_min_duration = 0) and the
//! default shared one. Checks the exact ALTER SYSTEM lines, that nothing on
//! the server changed (pg_settings and pg_file_settings, which shows ALTER
//! SYSTEM's file, compared before and after), that auto_explain was kept off
//! the measured statements, and the `version()` string. Times are never
//! asserted: what depends on them is checked against the report's own numbers.

use clockscope::Control;
use clockscope_explain::testing::{self, ServerHandle, TestServer, SUPERUSER};
use clockscope_explain::timing_settings::{JudgedSetting, IO_TIMING_MAX_SHARE};
use clockscope_explain::{Options, Report};

const FOOTGUN_CONF: &str = "track_io_timing = on\nshared_preload_libraries = 'auto_explain'\n\
     auto_explain.log_analyze = on\nauto_explain.log_timing = on\nauto_explain.log_min_duration = 0\n";

/// A role without superuser rights (it may not SET auto_explain.*).
const PLAIN_ROLE: &str = "clockscope_plain";

fn small(dsn: String) -> Options {
    Options {
        rows: 100_000,
        runs: 2,
        clock_measure_ns: 20_000_000,
        ..Options::new(Some(dsn))
    }
}

fn run(opts: &Options) -> Report {
    clockscope_explain::run(opts, &mut |_| Control::Continue).unwrap()
}

/// Every setting as the server has it, and every line of its configuration
/// files (postgresql.auto.conf is where ALTER SYSTEM writes), from a new
/// session.
/// Rows of three text columns.
type Rows3 = Vec<(String, String, String)>;

fn server_state(server: &ServerHandle) -> (Rows3, Rows3) {
    let mut c = server.superuser_client().unwrap();
    let settings = c
        .query("SELECT name, setting, source FROM pg_settings ORDER BY name", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let files = c
        .query(
            "SELECT sourcefile, name, coalesce(setting, '') FROM pg_file_settings ORDER BY sourcefile, sourceline",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    (settings, files)
}

fn find<'a>(r: &'a Report, name: &str) -> &'a JudgedSetting {
    r.timing_settings
        .settings
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} not judged: {:#?}", r.timing_settings))
}

fn alter_lines(r: &Report) -> Vec<&str> {
    r.timing_settings
        .settings
        .iter()
        .filter_map(|s| s.recommendation.as_ref())
        .map(|x| x.alter_system.as_str())
        .collect()
}

fn text(r: &Report) -> String {
    let mut out = Vec::new();
    clockscope_cli::commands::explain::text::write(&mut out, r, clockscope_cli::commands::explain::text::Detail::Full)
        .unwrap();
    String::from_utf8(out).unwrap()
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn assert_version(r: &Report) {
    assert!(
        r.server_version_full.starts_with("PostgreSQL 1"),
        "{}",
        r.server_version_full
    );
    // version() names the release server_version gives (its first word).
    let release = r.server_version.split_whitespace().next().unwrap();
    assert!(
        r.server_version_full.contains(release),
        "{} / {}",
        r.server_version_full,
        r.server_version
    );
    assert!(
        // Words, not lines: a long version() wraps at 100 columns.
        words(&text(r)).contains(&format!("Version: {} ", words(&r.server_version_full))),
        "{}",
        text(r)
    );
}

/// Whether the judge turns an I/O timing setting `s` on or off, from the
/// share of the page-cache read its JSON cost carries: off when on and the
/// share's interval is at or above 10%, on when off and wholly below it.
fn io_change(s: &JudgedSetting) -> Option<&'static str> {
    let c = s.cost.as_ref()?;
    match s.value.as_str() {
        "on" => c.share_low.is_some_and(|lo| lo >= IO_TIMING_MAX_SHARE).then_some("off"),
        _ => c.share_high.is_some_and(|hi| hi < IO_TIMING_MAX_SHARE).then_some("on"),
    }
}

/// The footgun's recommendations: exact lines. log_min_duration = 0 always
/// (the log's volume); log_timing when the measured slowdown's interval is
/// at or above 1.3x; track_io_timing (`io`) when its share's interval is
/// at or above 10%, track_wal_io_timing (off) turned on when wholly below;
/// each with a reload, not a restart; I/O timing priced.
fn assert_footgun_recommendations(r: &Report, io: &JudgedSetting) {
    let lines = alter_lines(r);
    assert!(
        lines.contains(&"ALTER SYSTEM SET auto_explain.log_min_duration = '3s';"),
        "{lines:?}"
    );
    let source = &r.clock_sources[0];
    let timing_off = source.noise.slowdown_ci_low.is_some_and(|lo| lo >= 1.3);
    assert_eq!(
        lines.contains(&"ALTER SYSTEM SET auto_explain.log_timing = off;"),
        timing_off,
        "{:?}",
        source.noise
    );
    let io_off = io_change(io) == Some("off");
    assert_eq!(
        lines.contains(&"ALTER SYSTEM SET track_io_timing = off;"),
        io_off,
        "{io:?}"
    );
    let wal = find(r, "track_wal_io_timing");
    let wal_on = io_change(wal) == Some("on");
    assert_eq!(
        lines.contains(&"ALTER SYSTEM SET track_wal_io_timing = on;"),
        wal_on,
        "{wal:?}"
    );
    assert_eq!(
        lines.len(),
        1 + usize::from(timing_off) + usize::from(io_off) + usize::from(wal_on),
        "{lines:?}"
    );
    // PostgreSQL 15 reads the system clock around each I/O: priced with its
    // back-to-back read cost on this machine, not EXPLAIN's.
    let price = r.timing_settings.io_read.as_ref().expect("I/O timing priced");
    assert_eq!(price.clock, "clock_gettime (CLOCK_MONOTONIC)");
    assert_eq!(price.ns, r.this_machine.system.read_cost_ns);
    let c = io.cost.as_ref().unwrap();
    assert_eq!(c.ns, 2.0 * price.ns);
    assert_eq!(c.clock_reads, 2.0);
    assert!(r.timing_settings.page_read.as_ref().unwrap().ns > 0.0);
    for s in &r.timing_settings.settings {
        if let Some(x) = &s.recommendation {
            assert_eq!(x.then.as_deref(), Some("SELECT pg_reload_conf();"), "{s:?}");
            assert!(!x.needs_restart, "{s:?}");
        }
    }
}

#[test]
fn the_auto_explain_footgun_and_track_io_timing_are_judged_and_left_alone() {
    let server = TestServer::start_configured(FOOTGUN_CONF).unwrap();
    let handle = server.handle();
    handle.sql(&format!("CREATE ROLE {PLAIN_ROLE} LOGIN")).unwrap();
    let before = server_state(&handle);
    let r = run(&small(handle.socket_dsn(SUPERUSER, "postgres")));
    assert_eq!(server_state(&handle), before, "a run changed the server's settings");
    assert_version(&r);

    let io = find(&r, "track_io_timing");
    assert_eq!(
        (io.value.as_str(), io.source.as_str(), io.context.as_str()),
        ("on", "configuration file", "superuser")
    );
    let wal = find(&r, "track_wal_io_timing");
    assert_eq!((wal.value.as_str(), wal.source.as_str()), ("off", "default"));
    for (name, value) in [
        ("auto_explain.log_analyze", "on"),
        ("auto_explain.log_timing", "on"),
        ("auto_explain.log_min_duration", "0"),
    ] {
        assert_eq!(find(&r, name).value, value, "{name}");
    }

    assert_footgun_recommendations(&r, io);
    let t = text(&r);
    for needle in [
        "Recommended (clockscope changed nothing; run these as a superuser):",
        "  ALTER SYSTEM SET auto_explain.log_min_duration = '3s';  -- ",
        "  SELECT pg_reload_conf();",
        "  I/O timing: ",
    ] {
        assert!(t.contains(needle), "missing {needle:?} in\n{t}");
    }

    // The superuser's session kept auto_explain off its own statements: the
    // log has none of them, and the report says what it set.
    let ae = r
        .settings
        .iter()
        .find(|s| s.name == "auto_explain.log_min_duration")
        .expect("the session's auto_explain change is shown");
    assert_eq!(
        (ae.server_value.as_str(), ae.session_value.as_deref()),
        ("0", Some("-1"))
    );
    assert!(!server.log().contains("clockscope_explain_"), "{}", server.log());
    assert!(
        r.warnings.iter().all(|w| !w.contains("auto_explain")),
        "{:?}",
        r.warnings
    );

    // A role that may not: the same judgement, and a warning that auto_explain
    // timed the runs (its plans of them are in the log).
    let before = server_state(&handle);
    let r = run(&small(handle.socket_dsn(PLAIN_ROLE, "postgres")));
    assert_eq!(server_state(&handle), before);
    assert!(alter_lines(&r).contains(&"ALTER SYSTEM SET auto_explain.log_min_duration = '3s';"));
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("auto_explain is on (log_min_duration = 0) and this role may not turn it off")),
        "{:?}",
        r.warnings
    );
    assert!(server.log().contains("clockscope_explain_"));
}

#[test]
fn a_default_server_is_told_to_turn_on_what_is_cheap() {
    let server = testing::shared();
    let before = server_state(&server);
    let r = run(&small(server.socket_dsn(SUPERUSER, "postgres")));
    assert_eq!(server_state(&server), before, "a run changed the server's settings");
    assert_version(&r);
    let names: Vec<&str> = r.timing_settings.settings.iter().map(|s| s.name.as_str()).collect();
    // PostgreSQL 15: no timing_clock_source; auto_explain not loaded.
    assert_eq!(names, ["track_io_timing", "track_wal_io_timing"]);
    // Both off: turned on exactly when the judge's share interval lies
    // wholly below 10% (a fast clock here: 2 reads of ~25 ns against a
    // ~1.5 us cached read), with the reload; else no change.
    for s in &r.timing_settings.settings {
        assert_eq!((s.value.as_str(), s.source.as_str()), ("off", "default"), "{s:?}");
        assert!(s.judgement.starts_with("off: "), "{s:?}");
        let d = s.decision.as_ref().expect("decided by the judge");
        assert_eq!(d.setting, s.name);
        let want = io_change(s);
        assert_eq!(
            d.recommended_value.as_deref() == Some("on"),
            want == Some("on"),
            "{s:?}"
        );
        let rec = s.recommendation.as_ref();
        assert_eq!(
            rec.map(|x| x.alter_system.clone()),
            want.map(|v| format!("ALTER SYSTEM SET {} = {v};", s.name))
        );
        assert!(
            rec.is_none_or(|x| x.then.as_deref() == Some("SELECT pg_reload_conf();")),
            "{s:?}"
        );
    }
    assert!(r.settings.iter().all(|s| !s.name.starts_with("auto_explain")));
    if alter_lines(&r).is_empty() {
        assert!(text(&r).contains("\nNo change recommended.\n"), "{}", text(&r));
    } else {
        assert!(text(&r).contains("  SELECT pg_reload_conf();"), "{}", text(&r));
    }
}

/// `check` and `explain` decide the I/O timing settings with one judge: the
/// same read cost and page-cache read give the same decision (verdict,
/// value, interval and words) in both, in both directions, and explain's
/// ALTER SYSTEM line follows it (no server: injected prices).
#[test]
fn check_and_explain_decide_io_timing_alike() {
    use clockscope_cli::commands::check::judge::{decide, IoPrices, VerdictInputs};
    use clockscope_explain::clockcost::{ClockCost, MachineClocks};
    use clockscope_explain::timing_settings::{judge, PageReadReference, ServerSetting};
    use clockscope_pg::predict::settings::{Estimate, Verdict};
    use clockscope_system::stats::Interval;

    let stats = clockscope_cli::commands::check::model::stats::ClockStats::from_measurement(
        clockscope::ClockId::Monotonic,
        &clockscope::measure(
            &clockscope::ScriptedClock::new("mono", clockscope::Scale::NANOSECONDS, |n| 1000 + 20 * n),
            20_000,
            |_| clockscope::Control::Continue,
        ),
        None,
    );
    let page = (1500.0, 1450.0, 1550.0);
    for (read_ns, want) in [
        (20.0, Verdict::Cheap),
        (75.0, Verdict::NotResolved),
        (600.0, Verdict::Costly),
    ] {
        let (lo, hi) = (read_ns * 0.98, read_ns * 1.02);
        let inputs = VerdictInputs {
            io_prices: IoPrices {
                system: Some(Estimate::new(read_ns, Some(lo), Some(hi))),
                precise_tsc: None,
                page_read: Some(Estimate::new(page.0, Some(page.1), Some(page.2))),
            },
            baseline_row_ns: 40.0,
            ..Default::default()
        };
        let v = decide(std::slice::from_ref(&stats), &inputs);
        let machine = MachineClocks {
            system: ClockCost {
                clock: "clock_gettime (CLOCK_MONOTONIC)".into(),
                per_read_ns: read_ns,
                read_cost_ns: read_ns,
                read_cost_interval: Some(Interval {
                    low: lo,
                    high: hi,
                    coverage: 0.96,
                }),
                loops: 1000,
                method: "injected".into(),
                frequency_khz: None,
                frequency_source: None,
                executor_loop: None,
            },
            rdtsc: None,
            rdtscp: None,
            rdtsc_unavailable: None,
            tsc_auto: false,
        };
        let reference = PageReadReference {
            ns: page.0,
            low_ns: Some(page.1),
            high_ns: Some(page.2),
            source: "injected".into(),
        };
        for state in ["off", "on"] {
            let settings: Vec<ServerSetting> = ["track_io_timing", "track_wal_io_timing"]
                .iter()
                .map(|name| ServerSetting {
                    name: name.to_string(),
                    setting: state.into(),
                    shown: state.into(),
                    vartype: "bool".into(),
                    source: "default".into(),
                    context: "superuser".into(),
                })
                .collect();
            let t = judge(&settings, &[], Some(&machine), Some(reference.clone()));
            for (explain, check) in t.settings.iter().zip([&v.track_io_timing, &v.track_wal_io_timing]) {
                let d = explain.decision.as_ref().unwrap();
                assert_eq!(Some(d), check.as_ref().unwrap().decision.as_ref(), "{read_ns} ns");
                assert_eq!(d.verdict, want, "{read_ns} ns");
                assert_eq!(check.as_ref().unwrap().safe, want == Verdict::Cheap);
                let e = d.estimate.unwrap();
                assert!(e.low.unwrap() <= e.value && e.value <= e.high.unwrap(), "{e:?}");
                let alter = explain.recommendation.as_ref().map(|r| r.alter_system.clone());
                let turn = match (want, state) {
                    (Verdict::Cheap, "off") => Some("on"),
                    (Verdict::Costly, "on") => Some("off"),
                    _ => None,
                };
                assert_eq!(alter, turn.map(|v| format!("ALTER SYSTEM SET {} = {v};", explain.name)));
            }
        }
    }
}
