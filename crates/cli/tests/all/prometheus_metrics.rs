//! The Prometheus output of `clockscope check` against its contract:
//! `docs/metrics.md` lists exactly the metric names, types and labels
//! rendered (from a scripted report that has every optional metric), and
//! `promtool check metrics` (Debian's `prometheus` package) finds nothing to
//! lint in that output nor in a real run's. `--output` replaces its file
//! atomically and refuses a missing or unwritable directory before measuring.

use clockscope::ScriptedClock;
use clockscope::{measure, Control};
use clockscope::{ClockId, Scale};
use clockscope_cli::commands::check::model::stats::ClockStats;
use clockscope_cli::commands::check::model::{CheckReport, Skipped};
use clockscope_cli::commands::check::prometheus;
use clockscope_cli::commands::check::{build_report, CheckArgs, Measured};
use clockscope_cli::commands::environment::CounterSetup;
use clockscope_system::linux::testing::FakeRoot;
use clockscope_system::linux::LinuxEvidence;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `r` as Prometheus text, `at` its run's end.
fn prom_at(r: &CheckReport, at: SystemTime) -> String {
    let mut out = Vec::new();
    prometheus::write_at(&mut out, r, at).unwrap();
    String::from_utf8(out).unwrap()
}

const BIN: &str = env!("CARGO_BIN_EXE_clockscope");

/// A clock whose differences cycle through `steps` ticks, `reads` times.
fn scripted(id: ClockId, scale: Scale, steps: &'static [u64], reads: u64) -> ClockStats {
    let clock = ScriptedClock::new(id.display_name(), scale, move |n| {
        let n = n.min(reads + 1);
        (0..n).map(|i| steps[(i % steps.len() as u64) as usize]).sum::<u64>() + 1_000
    });
    let total: u64 = (0..reads).map(|i| steps[(i % steps.len() as u64) as usize]).sum();
    let m = measure(&clock, scale.ticks_to_ns(total), |_| Control::Continue);
    ClockStats::from_measurement(id, &m, id.is_counter().then(|| scale.khz()))
}

/// A report with every optional metric: two clocks, a skipped one, a trusted
/// counter with its frequency, the affinity mask.
fn full_report() -> CheckReport {
    let root = FakeRoot::new();
    root.write("proc/sys/kernel/osrelease", "6.1.0-test-amd64\n")
        .write(
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        )
        .write(
            "sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc hpet\n",
        )
        .write(
            "proc/cpuinfo",
            "processor\t: 0\nmodel name\t: Test \"CPU\" @ 2.70GHz\n\n",
        );
    let linux = LinuxEvidence::read(root.path());
    let tsc = Scale::from_khz(2_700_000).unwrap();
    let counter = CounterSetup {
        scale: Some(tsc),
        frequency_khz: Some(2_700_000),
        frequency_source: Some("x86, hypervisor, cpuid 0x40000010".into()),
        trusted: Some(true),
        reason: Some("every piece of evidence agrees".into()),
        evidence: vec!["ok: invariant TSC".into()],
        postgresql_auto_uses_tsc: Some(true),
        postgresql_reads_counter: true,
        hypervisor: Some("KVM".into()),
        ..Default::default()
    };
    let measured = Measured {
        stats: vec![
            scripted(ClockId::Monotonic, Scale::NANOSECONDS, &[19, 20, 21, 20], 4_000),
            scripted(ClockId::Rdtsc, tsc, &[35, 38], 4_000),
        ],
        skipped: vec![Skipped {
            name: "cntvct".into(),
            reason: "not on this architecture".into(),
        }],
        interrupted: false,
        allowed_cpus: Some(vec![0, 1]),
        // The instrumentation model's results (the EXPLAIN metrics need a
        // resolved prediction).
        executor_loops: vec![
            clockscope_pg::predict::ExecutorLoopCost::recorded(ClockId::Monotonic.display_name(), 36.0),
            clockscope_pg::predict::ExecutorLoopCost::recorded(ClockId::Rdtsc.display_name(), 6.0),
        ],
        ..Default::default()
    };
    let args = CheckArgs {
        duration: 1.0,
        ..Default::default()
    };
    let mut r = build_report(&args, &linux, &counter, measured, None);
    // A fake root reads no NTP state: give the report a synchronised one.
    r.environment.ntp = Some(clockscope_system::linux::ntp::NtpState::from_raw(
        &clockscope_system::linux::ntp::RawTimex {
            state: 0,
            status: 0,
            freq: 0,
            maxerror: 300_000,
            esterror: 120,
            offset: 0,
        },
    ));
    r
}

/// name -> (type, label names), from the exposition text.
fn rendered_families(text: &str) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut out: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').unwrap();
            out.entry(name.into()).or_default().0 = ty.into();
        } else if !line.starts_with('#') {
            let name_end = line.find(['{', ' ']).unwrap();
            let name = &line[..name_end];
            let labels = out
                .get_mut(name)
                .unwrap_or_else(|| panic!("sample before its TYPE: {line}"));
            if line[name_end..].starts_with('{') {
                let body = &line[name_end + 1..line.rfind('}').unwrap()];
                for pair in body.split("\",") {
                    labels.1.insert(pair.split('=').next().unwrap().to_string());
                }
            }
        }
    }
    out
}

/// A documented metric: type, label names, and whether it may be absent.
type Documented = BTreeMap<String, (String, BTreeSet<String>, bool)>;

/// The metrics of `check` (`cross_cpu == false`) or of `cross-cpu`, from the tables in docs/metrics.md.
fn documented(cross_cpu: bool) -> Documented {
    all_documented()
        .into_iter()
        .filter(|(name, _)| name.starts_with("clockscope_cross_cpu_") == cross_cpu)
        .collect()
}

/// Every metric of the tables in docs/metrics.md.
fn all_documented() -> Documented {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/metrics.md")).unwrap();
    let mut out = BTreeMap::new();
    for line in doc.lines().filter(|l| l.starts_with("| `clockscope_")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_string();
        let labels: BTreeSet<String> = cells[3]
            .split(',')
            .map(|l| l.trim().trim_matches('`').to_string())
            .filter(|l| !l.is_empty() && l != "—")
            .collect();
        let optional = cells[4].starts_with("*Optional.*");
        assert!(
            out.insert(name.clone(), (cells[2].to_string(), labels, optional))
                .is_none(),
            "{name} is listed twice in docs/metrics.md"
        );
    }
    out
}

#[test]
fn docs_list_exactly_the_rendered_metrics() {
    let text = prom_at(&full_report(), SystemTime::now());
    // The scripted report has every optional metric: the two sets are equal.
    assert_matches_docs(&text, &documented(false), true);
}

/// Every rendered family is documented with its type and labels; every
/// documented one is rendered (`all`) or, when not, is marked optional.
fn assert_matches_docs(text: &str, documented: &Documented, all: bool) {
    let rendered = rendered_families(text);
    for (name, r) in &rendered {
        let doc = documented.get(name).map(|(t, l, _)| (t.clone(), l.clone()));
        assert_eq!(
            doc.as_ref(),
            Some(r),
            "{name}: rendered as {r:?}, docs/metrics.md says {doc:?}"
        );
    }
    for (name, (_, _, optional)) in documented {
        assert!(
            rendered.contains_key(name) || (!all && *optional),
            "docs/metrics.md lists {name}, which is not rendered"
        );
    }
}

#[test]
fn cross_cpu_prometheus_matches_the_docs_and_promtool() {
    let o = Command::new(BIN)
        .args(["cross-cpu", "-d", "0.05", "--format", "prometheus"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert_matches_docs(&text, &documented(true), false);
    let pairs: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("clockscope_cross_cpu_pairs "))
        .unwrap()
        .parse()
        .unwrap();
    // One state-set line per status, clock and pair.
    let states = text
        .lines()
        .filter(|l| l.starts_with("clockscope_cross_cpu_verdict{"))
        .count();
    assert_eq!(states % 5, 0, "{text}");
    assert_eq!(states == 0, pairs == 0.0, "{text}");
    if promtool().is_none() {
        return skip!("promtool not found (Debian package `prometheus`; scripts/test.sh installs it)");
    }
    let (ok, said) = promtool_check(&text);
    assert!(ok && said.trim().is_empty(), "cross-cpu: {said}");
}

#[test]
fn every_family_has_help_and_one_type() {
    let text = prom_at(&full_report(), SystemTime::now());
    let helps = text.lines().filter(|l| l.starts_with("# HELP ")).count();
    let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
    assert_eq!(helps, types);
    assert_eq!(types, rendered_families(&text).len(), "a family was written twice");
    assert!(text.lines().all(|l| l.starts_with('#') || l.starts_with("clockscope_")));
    assert!(!text.contains("quantile"), "no quantile label on a gauge");
}

#[test]
fn run_timestamp_rule_results_and_info_are_rendered() {
    let r = full_report();
    let at = UNIX_EPOCH + Duration::from_millis(1_795_000_000_250);
    let text = prom_at(&r, at);
    assert!(
        text.contains("\nclockscope_last_run_timestamp_seconds 1795000000.25\n"),
        "{text}"
    );
    assert!(text.contains("\nclockscope_rule_passed{rule=\"postgresql\",clock=\"monotonic\"} 1\n"));
    assert!(text.contains("\nclockscope_rule_passed{rule=\"modern\",clock=\"monotonic\"} 1\n"));
    assert!(
        text.contains("\nclockscope_tsc_frequency_hertz{source=\"x86, hypervisor, cpuid 0x40000010\"} 2700000000\n")
    );
    assert!(text.contains("\nclockscope_clock_skipped{clock=\"cntvct\"} 1\n"));
    assert!(text.contains("\nclockscope_cpus 2\n"));
    assert!(
        text.contains("\nclockscope_clock_step_seconds{clock=\"monotonic\",percentile=\"50\"} 0.00000002\n"),
        "{text}"
    );
    assert!(
        text.contains("cpu_model=\"Test \\\"CPU\\\" @ 2.70GHz\",hypervisor=\"KVM\""),
        "{text}"
    );
    // Without the system clock: no verdict, no rule, the state set says so.
    let mut r2 = r.clone();
    r2.clocks.retain(|c| c.name != "monotonic");
    r2.verdict = clockscope_cli::commands::check::judge::decide(&r2.clocks, &Default::default());
    let text = prom_at(&r2, at);
    assert!(!text.contains("clockscope_rule_passed"));
    assert!(text.contains("\nclockscope_verdict{status=\"no_verdict\"} 1\n"));
    assert!(text.contains("\nclockscope_verdict{status=\"good\"} 0\n"));
}

fn promtool() -> Option<&'static str> {
    let ok = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some("promtool")
}

/// `promtool check metrics` on `text`: its exit status and what it printed.
fn promtool_check(text: &str) -> (bool, String) {
    let mut child = Command::new(promtool().unwrap())
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), said)
}

#[test]
fn promtool_finds_nothing_to_lint() {
    if promtool().is_none() {
        return skip!("promtool not found (Debian package `prometheus`; scripts/test.sh installs it)");
    }
    // promtool can fail: a unit abbreviation in a name is a lint finding.
    let (ok, said) = promtool_check("# HELP x_ns A time.\n# TYPE x_ns gauge\nx_ns 1\n");
    assert!(!ok && said.contains("x_ns"), "{said}");
    let (ok, said) = promtool_check(&prom_at(&full_report(), SystemTime::now()));
    assert!(ok && said.trim().is_empty(), "scripted report: {said}");
    let o = Command::new(BIN)
        .args(["-d", "0.02", "--format", "prometheus"])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{o:?}");
    let (ok, said) = promtool_check(&String::from_utf8(o.stdout).unwrap());
    assert!(ok && said.trim().is_empty(), "real run: {said}");
}

#[test]
fn output_file_is_replaced_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("clockscope.prom");
    std::fs::write(&prom, "old\n").unwrap();
    let o = Command::new(BIN)
        .args([
            "-d",
            "0.01",
            "--clock",
            "monotonic",
            "--format",
            "prometheus",
            "--output",
        ])
        .arg(&prom)
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{o:?}");
    assert!(o.stdout.is_empty(), "the report goes to the file only");
    let text = std::fs::read_to_string(&prom).unwrap();
    assert!(
        text.contains("\nclockscope_clock_read_cost_seconds{clock=\"monotonic\"} "),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn a_missing_or_unwritable_directory_is_one_line_exit_2_and_the_old_file_stays() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir/clockscope.prom");
    let o = Command::new(BIN)
        .args(["-d", "0.01", "--format", "prometheus", "--output"])
        .arg(&missing)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--output ") && err.contains("no-such-dir"), "{err}");
    assert!(o.stdout.is_empty());

    // A read-only directory holding the previous good file. Root may write
    // anywhere, so as root the run drops to nobody (setpriv, util-linux).
    use std::os::unix::fs::PermissionsExt;
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let prom = ro.join("clockscope.prom");
    std::fs::write(&prom, "good\n").unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&prom, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    let o = cmd
        .args(["-d", "0.01", "--format", "prometheus", "--output"])
        .arg(&prom)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--output ") && err.contains("ermission denied"), "{err}");
    assert_eq!(std::fs::read_to_string(&prom).unwrap(), "good\n");
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 1, "no temporary file");
}

/// Whether this test runs as root (from /proc/self/status, without unsafe code).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0")
}
