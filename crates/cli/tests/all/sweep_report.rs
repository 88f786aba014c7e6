//! `clockscope sweep`'s logic in-process: a fake sysfs root, a scripted clock
//! per clocksource (so costs differ as they do on real hardware), and
//! controls that refuse a write or read back another name. Every test checks
//! that the original clocksource is in place afterwards (or, when its file
//! vanished, that the error gives the command to restore it). The control's
//! log holds the sweep's own switches; the original is written back by the
//! guardian process, whose answer (`restore`: restored only when it wrote
//! and read it back) and the file it wrote are checked.

use crate::common;
use clockscope::ScriptedClock;
use clockscope::{measure, Control};
use clockscope::{ClockId, Scale};
use clockscope_cli::args::CheckFormat;
use clockscope_cli::commands::check::model::stats::ClockStats;
use clockscope_cli::commands::sweep::model::{RestoreOutcome, SweepReport};
use clockscope_cli::commands::sweep::{renderer, sweep_with, SweepArgs, ROUNDS};
use clockscope_system::linux::clocksource::CLOCKSOURCE0;
use clockscope_system::linux::testing::{FakeRoot, LoggedClocksource};
use std::sync::Arc;

struct Fake {
    root: FakeRoot,
    control: Arc<LoggedClocksource>,
}

impl Fake {
    fn new(current: &str, available: &str) -> Fake {
        Fake::with(current, available, None, None)
    }
    fn with(current: &str, available: &str, ignored: Option<&'static str>, failing: Option<&'static str>) -> Fake {
        let root = FakeRoot::new();
        root.write(&format!("{CLOCKSOURCE0}/current_clocksource"), &format!("{current}\n"))
            .write(
                &format!("{CLOCKSOURCE0}/available_clocksource"),
                &format!("{available} \n"),
            );
        // The kernel ignores writes of `ignored` (as it does for a
        // clocksource it cannot select) and fails writes of `failing`.
        let mut control = LoggedClocksource::new(root.path());
        if let Some(name) = ignored {
            control = control.ignoring(name);
        }
        if let Some(name) = failing {
            control = control.failing(name, "Device or resource busy (os error 16)");
        }
        let control = Arc::new(control);
        Fake { root, control }
    }
    fn current(&self) -> String {
        std::fs::read_to_string(self.control.sysfs().current_path()).unwrap()
    }
    fn writes(&self) -> Vec<String> {
        self.control.writes()
    }
    fn dir(&self) -> String {
        self.root.path().join(CLOCKSOURCE0).to_string_lossy().into_owned()
    }
    fn run(
        &self,
        args: &SweepArgs,
        euid: u32,
        m: &mut dyn FnMut(&str) -> anyhow::Result<ClockStats>,
    ) -> anyhow::Result<SweepReport> {
        let args = SweepArgs {
            sysfs_root: self.root.path().to_path_buf(),
            ..args.clone()
        };
        sweep_with(&args, self.control.clone(), &self.dir(), euid, m, None, None)
    }
}

/// The system clock as a scripted clock stepping `step_ns` per read (costs
/// per clocksource as PostgreSQL's docs measured them: tsc cheap, acpi_pm a syscall).
fn scripted(step_ns: u64) -> ClockStats {
    let reads = 2_000u64;
    let clock = ScriptedClock::new("scripted", Scale::NANOSECONDS, move |n| {
        1_000 + n.min(reads + 1) * step_ns
    });
    let m = measure(&clock, reads * step_ns, |_| Control::Continue);
    ClockStats::from_measurement(ClockId::Monotonic, &m, None)
}

fn cost_of(name: &str) -> u64 {
    match name {
        "tsc" => 20,
        "kvm-clock" => 30,
        "hpet" => 560,
        "acpi_pm" => 720,
        _ => 50,
    }
}

fn apply() -> SweepArgs {
    SweepArgs {
        apply: true,
        ..Default::default()
    }
}

/// The switches of a sweep of `planned` that ran every round.
fn rounds_of(planned: &[&str]) -> Vec<String> {
    (0..ROUNDS)
        .flat_map(|_| planned.iter().map(|s| s.to_string()))
        .collect()
}

/// The guardian wrote `original` back and read it back, after the switches.
fn restored_by_the_guardian(f: &Fake, r: &SweepReport, original: &str) {
    assert_eq!(r.restore, Some(RestoreOutcome::Restored));
    assert_eq!(r.final_clocksource.as_deref(), Some(original));
    assert_eq!(f.current(), format!("{original}\n"));
}

fn by_cost(name: &str) -> anyhow::Result<ClockStats> {
    Ok(scripted(cost_of(name)))
}

#[test]
fn sweeps_every_clocksource_and_restores_the_original() {
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let r = f.run(&apply(), 0, &mut by_cost).unwrap();
    assert_eq!(f.current(), "kvm-clock\n");
    assert_eq!(f.writes(), rounds_of(&["tsc", "kvm-clock", "acpi_pm"]));
    restored_by_the_guardian(&f, &r, "kvm-clock");
    assert_eq!(r.original, "kvm-clock");
    assert!(r.applied && !r.interrupted && !r.live_sysfs);
    let names: Vec<&str> = r.results.iter().map(|x| x.clocksource.as_str()).collect();
    assert_eq!(names, ["tsc", "kvm-clock", "acpi_pm"]);
    let tsc = &r.results[0];
    assert_eq!(
        (tsc.read_cost.median_ns.round() as u64, tsc.avg_loop_ns.round() as u64),
        (20, 20)
    );
    assert_eq!(tsc.clock_gettime, "vdso");
    assert!(tsc.postgresql_rule.as_ref().unwrap().passed);
    let acpi = &r.results[2];
    assert_eq!(acpi.read_cost.median_ns.round() as u64, 720);
    assert_eq!(acpi.percentiles_ns.p99, 720);
    assert_eq!(acpi.clock_gettime, "syscall");
    assert!(acpi
        .syscall_fallback
        .as_deref()
        .unwrap()
        .contains("'acpi_pm' has no vDSO read"));
    assert!(!acpi.postgresql_rule.as_ref().unwrap().passed);
    assert!((acpi.avg_loop_ns - 720.0).abs() < 15.0, "{}", acpi.avg_loop_ns);
    // The sweep runs no instrumentation model: no EXPLAIN number, said so
    // (the back-to-back read cost is not a stand-in for it).
    let e = acpi.explain.as_ref().unwrap();
    assert_eq!((e.slowdown, e.per_row_per_node_ns), (None, None));
    assert!(e.status.starts_with("not measured"), "{}", e.status);
    assert_eq!(e.back_to_back_per_row_ns, 2.0 * e.per_read_ns);
    let rec = r.recommendation.as_ref().unwrap();
    assert_eq!((rec.clocksource.as_str(), rec.in_use), ("tsc", false));
    assert_eq!(rec.kernel_parameter, "clocksource=tsc");
    assert!(r.persistence[0].contains("clocksource=tsc"));
    for caveat in ["live migration", "suspend", "watchdog"] {
        assert!(r.persistence.iter().any(|l| l.contains(caveat)), "{caveat}");
    }
}

#[test]
fn keeps_the_clocksource_in_use_when_it_is_nearly_as_cheap() {
    let f = Fake::new("kvm-clock", "tsc kvm-clock");
    let mut m = |name: &str| Ok(scripted(if name == "tsc" { 20 } else { 21 }));
    let r = f.run(&apply(), 0, &mut m).unwrap();
    let rec = r.recommendation.unwrap();
    assert_eq!((rec.clocksource.as_str(), rec.in_use), ("kvm-clock", true));
    // Intervals apart (the scripted costs do not vary) but 1 ns is under 10% of 21 ns.
    assert!(!rec.distinguishable);
    assert!(
        rec.why.contains("are not distinguishable here") && rec.why.contains("keep kvm-clock"),
        "{}",
        rec.why
    );
    assert!(r.persistence.is_empty(), "no change, nothing to persist");
}

/// A measurement whose read cost, per clocksource, follows `costs` round after round.
fn per_round(costs: &'static [(&'static str, [u64; 10])]) -> impl FnMut(&str) -> anyhow::Result<ClockStats> {
    let mut calls: std::collections::HashMap<String, usize> = Default::default();
    move |name: &str| {
        let n = calls.entry(name.to_string()).or_default();
        let (_, c) = costs.iter().find(|(cs, _)| *cs == name).unwrap();
        let cost = c[*n % c.len()];
        *n += 1;
        Ok(scripted(cost))
    }
}

#[test]
fn noise_gives_no_advice_and_the_clocksource_in_use_is_kept() {
    // tsc in use. Interference moves both clocksources' rounds about: kvm-clock's
    // median is 3 ns lower (24 against 27), more than 10%, but the intervals
    // overlap. A sweep that compared one run each, or the medians alone, would
    // advise clocksource=kvm-clock.
    const NOISY: &[(&str, [u64; 10])] = &[
        ("tsc", [24, 30, 22, 31, 25, 29, 23, 30, 26, 28]),
        ("kvm-clock", [20, 27, 21, 26, 22, 28, 21, 27, 23, 25]),
    ];
    let f = Fake::new("tsc", "tsc kvm-clock");
    let r = f.run(&apply(), 0, &mut per_round(NOISY)).unwrap();
    // Interleaved: tsc, kvm-clock, tsc, kvm-clock ... then tsc written back.
    assert_eq!(f.writes(), rounds_of(&["tsc", "kvm-clock"]));
    restored_by_the_guardian(&f, &r, "tsc");
    let (tsc, kvm) = (&r.results[0], &r.results[1]);
    assert_eq!(
        tsc.read_cost.samples_ns.iter().map(|c| c.round()).collect::<Vec<_>>(),
        [24.0, 30.0, 22.0, 31.0, 25.0, 29.0, 23.0, 30.0, 26.0, 28.0]
    );
    assert_eq!(
        (tsc.read_cost.median_ns.round(), kvm.read_cost.median_ns.round()),
        (27.0, 24.0)
    );
    let rec = r.recommendation.as_ref().unwrap();
    assert_eq!(
        (rec.clocksource.as_str(), rec.in_use, rec.distinguishable),
        ("tsc", true, false)
    );
    assert!(rec.why.contains("are not distinguishable here"), "{}", rec.why);
    assert!(r.persistence.is_empty());
    let mut out = Vec::new();
    renderer(CheckFormat::Text, false)(&mut out, &r).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("Recommendation: tsc (in use, keep it): kvm-clock 24.0 ns (95% interval"),
        "{text}"
    );
    assert!(!text.contains("clocksource=kvm-clock"), "{text}");

    // A burst on the CPU during tsc's first round only: one round of ten, outside
    // the median's interval; tsc is still the cheaper, kept, and told apart.
    const BURST: &[(&str, [u64; 10])] = &[
        ("tsc", [300, 24, 24, 24, 24, 24, 24, 24, 24, 24]),
        ("kvm-clock", [28; 10]),
    ];
    let f = Fake::new("tsc", "tsc kvm-clock");
    let r = f.run(&apply(), 0, &mut per_round(BURST)).unwrap();
    let rec = r.recommendation.as_ref().unwrap();
    assert_eq!(
        (rec.clocksource.as_str(), rec.in_use, rec.distinguishable),
        ("tsc", true, true)
    );
    assert!(r.persistence.is_empty());

    // Told apart: intervals apart and 6 ns (21%) less: a change is advised, with how to persist it.
    const APART: &[(&str, [u64; 10])] = &[
        ("tsc", [22, 23, 22, 24, 23, 22, 23, 22, 24, 23]),
        ("kvm-clock", [28, 29, 28, 30, 29, 28, 29, 28, 30, 29]),
    ];
    let f = Fake::new("kvm-clock", "tsc kvm-clock");
    let r = f.run(&apply(), 0, &mut per_round(APART)).unwrap();
    let rec = r.recommendation.as_ref().unwrap();
    assert_eq!(
        (rec.clocksource.as_str(), rec.in_use, rec.distinguishable),
        ("tsc", false, true)
    );
    assert!(rec.why.contains("the 95% intervals do not overlap"), "{}", rec.why);
    assert!(r.persistence[0].contains("clocksource=tsc"));
    // The row's JSON keeps schema 3's read-cost keys, in their order.
    let row = serde_json::to_string(&r.results[0]).unwrap();
    let at = |k: &str| {
        row.find(&format!("\"{k}\":"))
            .unwrap_or_else(|| panic!("{k} missing: {row}"))
    };
    assert!(
        at("read_back") < at("read_cost_ns")
            && at("read_cost_ns") < at("rounds")
            && at("rounds") < at("read_cost_rounds_ns")
            && at("read_cost_rounds_ns") < at("read_cost_interval_ns")
            && at("read_cost_interval_ns") < at("avg_loop_ns"),
        "{row}"
    );
    assert!(row.contains("\"rounds\":10,"), "{row}");
    // Every interval holds its estimate.
    for x in &r.results {
        let i = x.read_cost.interval.unwrap();
        assert!(
            i.low <= x.read_cost.median_ns && x.read_cost.median_ns <= i.high,
            "{x:?}"
        );
    }
}

#[test]
fn only_limits_and_orders_the_sweep() {
    let f = Fake::new("tsc", "tsc hpet acpi_pm");
    let args = SweepArgs {
        only: vec!["acpi_pm".into(), "hpet".into(), "acpi_pm".into()],
        ..apply()
    };
    let r = f.run(&args, 0, &mut by_cost).unwrap();
    assert_eq!(r.planned, ["acpi_pm", "hpet"]);
    assert_eq!(f.writes(), rounds_of(&["acpi_pm", "hpet"]));
    restored_by_the_guardian(&f, &r, "tsc");
    assert_eq!(f.current(), "tsc\n");
    // The one in use was not measured: nothing is compared with it, no change.
    let rec = r.recommendation.unwrap();
    assert_eq!((rec.clocksource.as_str(), rec.in_use), ("tsc", true));
    assert!(rec.why.contains("was not measured"), "{}", rec.why);
}

#[test]
fn without_apply_it_lists_and_writes_nothing() {
    let f = Fake::new("tsc", "tsc hpet");
    let mut never = |_: &str| -> anyhow::Result<ClockStats> { panic!("measured without --apply") };
    let r = f.run(&SweepArgs::default(), 1000, &mut never).unwrap();
    assert!(!r.applied && r.results.is_empty() && r.recommendation.is_none());
    assert_eq!(r.planned, ["tsc", "hpet"]);
    assert!(f.writes().is_empty());
    let mut text = Vec::new();
    renderer(CheckFormat::Text, true)(&mut text, &r).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("Would switch to tsc, hpet in turn") && text.contains("Nothing was changed"),
        "{text}"
    );
}

#[test]
fn refuses_without_root_and_writes_nothing() {
    let f = Fake::new("tsc", "tsc hpet");
    let mut never = |_: &str| -> anyhow::Result<ClockStats> { panic!("measured without root") };
    let e = f.run(&apply(), 1000, &mut never).unwrap_err().to_string();
    assert!(e.contains("needs root (effective uid 1000)"), "{e}");
    assert!(f.writes().is_empty());
    assert_eq!(f.current(), "tsc\n");
}

#[test]
fn odd_or_unavailable_names_are_refused_before_any_switch() {
    let f = Fake::new("tsc", "tsc hpet");
    for (bad, needle) in [
        ("hpet;reboot", "'hpet;reboot' is not a clocksource name"),
        ("hpet\n", "is not a clocksource name"),
        ("../../x", "is not a clocksource name"),
        (
            "acpi_pm",
            "clocksource 'acpi_pm' is not available here (available: tsc, hpet)",
        ),
    ] {
        let args = SweepArgs {
            only: vec!["hpet".into(), bad.into()],
            ..apply()
        };
        let e = f.run(&args, 0, &mut by_cost).unwrap_err().to_string();
        assert!(e.contains(needle) && !e.contains('\n'), "{bad:?}: {e}");
    }
    assert!(f.writes().is_empty());
    assert_eq!(f.current(), "tsc\n");
}

#[test]
fn a_switch_the_kernel_ignores_is_an_error_and_the_original_comes_back() {
    let f = Fake::with("tsc", "tsc hpet acpi_pm", Some("hpet"), None);
    let mut m = by_cost;
    // tsc is in use: switch to it (no change), then hpet is ignored by the "kernel".
    let e = f.run(&apply(), 0, &mut m).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("wrote clocksource 'hpet' but the kernel reads back 'tsc'"),
        "{msg}"
    );
    assert_eq!(f.current(), "tsc\n");
    assert_eq!(f.writes(), ["tsc", "hpet"], "acpi_pm never tried; tsc already in place");
}

#[test]
fn a_write_that_fails_mid_sweep_restores_the_original() {
    let f = Fake::with("kvm-clock", "tsc acpi_pm kvm-clock", None, Some("acpi_pm"));
    let e = f.run(&apply(), 0, &mut by_cost).unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("switching to clocksource 'acpi_pm' failed") && msg.contains("clocksource kvm-clock restored"),
        "{msg}"
    );
    // kvm-clock written back by the guardian ("restored": its answer).
    assert_eq!(f.writes(), ["tsc", "acpi_pm"]);
    assert_eq!(f.current(), "kvm-clock\n");
}

#[test]
fn a_change_the_sweep_did_not_make_invalidates_the_row_stops_and_is_left_alone() {
    // The watchdog marks tsc unstable mid-measurement: the kernel now uses
    // acpi_pm. The row is invalid, the sweep stops, and acpi_pm (not the
    // sweep's doing) is left in place: nothing is written after tsc.
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let path = f.control.sysfs().current_path();
    let mut m = |name: &str| {
        if name == "tsc" {
            std::fs::write(&path, "acpi_pm\n").unwrap();
        }
        by_cost(name)
    };
    let r = f.run(&apply(), 0, &mut m).unwrap();
    assert_eq!(f.current(), "acpi_pm\n");
    assert_eq!(
        f.writes(),
        ["tsc"],
        "kvm-clock and acpi_pm never visited, nothing restored"
    );
    assert_eq!(r.results.len(), 1);
    let row = &r.results[0];
    assert!(!row.valid && row.read_back == "tsc" && row.read_back_after == "acpi_pm");
    assert!(row
        .invalid_reason
        .as_deref()
        .unwrap()
        .contains("read acpi_pm after the measurement, not tsc"));
    assert!(r.changed_by_others.as_deref().unwrap().contains("from tsc to acpi_pm"));
    assert_eq!(r.restore, Some(RestoreOutcome::LeftAlone));
    assert_eq!(r.final_clocksource.as_deref(), Some("acpi_pm"));
    assert!(r.recommendation.is_none(), "an invalid row recommends nothing");
    assert_eq!(r.exit_code(), 1);
    let mut out = Vec::new();
    renderer(CheckFormat::Text, true)(&mut out, &r).unwrap();
    let text = String::from_utf8(out).unwrap();
    for needle in [
        "tsc         invalid: the clocksource changed during the measurement",
        "Invalid row tsc: current_clocksource read acpi_pm after the measurement, not tsc",
        "Stopped: the clocksource changed from tsc to acpi_pm during the measurement of tsc",
        "Not restored: acpi_pm is in use, put there by someone else",
    ] {
        assert!(text.contains(needle), "{needle:?} in {text}");
    }
    assert!(!text.contains("Restored:"), "{text}");
    let mut out = Vec::new();
    renderer(CheckFormat::Json, false)(&mut out, &r).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert!(schema().is_valid(&doc));
    assert_eq!(doc["results"][0]["valid"], false);
    assert_eq!(doc["restore"], "left_alone");
    let mut prom = Vec::new();
    renderer(CheckFormat::Prometheus, false)(&mut prom, &r).unwrap();
    let prom = String::from_utf8(prom).unwrap();
    assert!(
        prom.contains("clockscope_sweep_invalid{clocksource=\"tsc\"} 1"),
        "{prom}"
    );
    assert!(prom.contains("clockscope_sweep_left_alone 1"), "{prom}");
    assert!(!prom.contains("clockscope_sweep_read_cost_ns{"), "{prom}");
}

#[test]
fn a_change_back_to_the_original_is_in_place_and_nothing_is_written() {
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let path = f.control.sysfs().current_path();
    let mut m = |name: &str| {
        std::fs::write(&path, "kvm-clock\n").unwrap();
        by_cost(name)
    };
    let r = f.run(&apply(), 0, &mut m).unwrap();
    assert_eq!(f.writes(), ["tsc"]);
    assert_eq!(r.restore, Some(RestoreOutcome::InPlace));
    assert!(!r.results[0].valid);
    assert_eq!(f.current(), "kvm-clock\n");
}

#[test]
fn a_clocksource_no_longer_available_is_never_written() {
    // During tsc's measurement the original disappears from the list: it is
    // not written back (the error says so, with the manual command).
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let avail = f.control.sysfs().available_path();
    let mut m = |name: &str| {
        std::fs::write(&avail, "tsc acpi_pm\n").unwrap();
        by_cost(name)
    };
    let args = SweepArgs {
        only: vec!["tsc".into()],
        ..apply()
    };
    let msg = format!("{:#}", f.run(&args, 0, &mut m).unwrap_err());
    assert!(
        msg.contains("could not restore the clocksource 'kvm-clock' (clocksource 'kvm-clock' is not available here"),
        "{msg}"
    );
    assert_eq!(f.writes(), rounds_of(&["tsc"]));
    assert_eq!(f.current(), "tsc\n");
    // And a planned one that disappears before its turn is not switched to.
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let avail = f.control.sysfs().available_path();
    let mut m = |name: &str| {
        std::fs::write(&avail, "tsc kvm-clock\n").unwrap();
        by_cost(name)
    };
    let msg = format!("{:#}", f.run(&apply(), 0, &mut m).unwrap_err());
    assert!(msg.contains("clocksource 'acpi_pm' is not available here"), "{msg}");
    assert!(msg.contains("clocksource kvm-clock restored"), "{msg}");
    assert_eq!(f.writes(), ["tsc", "kvm-clock"]);
    assert_eq!(f.current(), "kvm-clock\n");
}

#[test]
fn duplicates_are_planned_once_and_any_number_of_names_is_accepted() {
    let mut names: Vec<String> = (0..300).map(|i| format!("cs{i}")).collect();
    names.extend(std::iter::repeat_n("tsc".to_string(), 64));
    let f = Fake::new("tsc", &names.join(" "));
    let r = f.run(&SweepArgs::default(), 0, &mut by_cost).unwrap();
    assert_eq!(r.planned.len(), 301);
    assert_eq!(r.available.len(), 301);
    let f = Fake::new("tsc", &["tsc"; 64].join(" "));
    let r = f.run(&apply(), 0, &mut by_cost).unwrap();
    assert_eq!(r.planned, ["tsc"]);
    assert_eq!(f.writes(), rounds_of(&["tsc"]));
    assert_eq!(r.restore, Some(RestoreOutcome::InPlace));
}

#[test]
fn a_file_that_disappears_mid_sweep_gives_the_restore_command() {
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let path = f.control.sysfs().current_path();
    let mut m = |name: &str| {
        if name == "kvm-clock" {
            std::fs::remove_file(&path).unwrap();
        }
        by_cost(name)
    };
    let msg = format!("{:#}", f.run(&apply(), 0, &mut m).unwrap_err());
    // The read-back after kvm-clock's measurement fails; so does the restore.
    assert!(msg.contains("current_clocksource"), "{msg}");
    assert!(
        msg.ends_with(&format!("restore it with: echo kvm-clock > {}", path.display())),
        "{msg}"
    );
    assert!(!path.exists(), "the sweep never creates the file");
    assert!(!msg.contains('\n'));
}

#[test]
fn a_panic_inside_a_measurement_restores_the_original() {
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut m = |name: &str| -> anyhow::Result<ClockStats> {
            if name == "acpi_pm" {
                assert_eq!(f.current(), "acpi_pm\n");
                panic!("injected panic in the measurement");
            }
            by_cost(name)
        };
        f.run(&apply(), 0, &mut m)
    }));
    assert!(r.is_err(), "the panic propagates");
    assert_eq!(f.current(), "kvm-clock\n");
    // The first round's acpi_pm slice panics: restored from there (by the guardian).
    assert_eq!(f.writes(), ["tsc", "kvm-clock", "acpi_pm"]);
}

#[test]
fn a_missing_file_is_a_one_line_error_before_any_switch() {
    let f = Fake::new("tsc", "tsc hpet");
    std::fs::remove_file(f.control.sysfs().available_path()).unwrap();
    let e = f.run(&apply(), 0, &mut by_cost).unwrap_err().to_string();
    assert!(e.contains("available_clocksource") && !e.contains('\n'), "{e}");
    assert!(f.writes().is_empty());
    assert_eq!(f.current(), "tsc\n");
}

fn schema() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/schema/sweep.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[test]
fn json_matches_the_schema_and_prometheus_parses() {
    let v = schema();
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    for report in [
        f.run(&apply(), 0, &mut by_cost).unwrap(),
        f.run(&SweepArgs::default(), 0, &mut by_cost).unwrap(),
    ] {
        let mut out = Vec::new();
        renderer(CheckFormat::Json, false)(&mut out, &report).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        // The schema is strict: an extra key or a bad value fails.
        let mut bad = doc.clone();
        bad["extra"] = serde_json::json!(1);
        assert!(!v.is_valid(&bad));
        let mut bad = doc.clone();
        bad["original"] = serde_json::json!(3);
        assert!(!v.is_valid(&bad));

        let mut prom = Vec::new();
        renderer(CheckFormat::Prometheus, false)(&mut prom, &report).unwrap();
        let text = String::from_utf8(prom).unwrap();
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape = prometheus_parse::Scrape::parse(lines).unwrap();
        let get = |name: &str, cs: &str| {
            scrape
                .samples
                .iter()
                .find(|s| s.metric == name && s.labels.get("clocksource") == Some(cs))
                .map(|s| match s.value {
                    prometheus_parse::Value::Gauge(g) => g,
                    _ => f64::NAN,
                })
        };
        assert_eq!(get("clockscope_sweep_original", "kvm-clock"), Some(1.0));
        if report.applied {
            // check's read cost: a mean, so not exactly the scripted 720 ns step.
            let cost = get("clockscope_sweep_read_cost_ns", "acpi_pm").unwrap();
            assert_eq!(cost.round(), 720.0, "{cost}");
            assert_eq!(get("clockscope_sweep_syscall_fallback", "acpi_pm"), Some(1.0));
            assert_eq!(get("clockscope_sweep_syscall_fallback", "tsc"), Some(0.0));
            assert_eq!(get("clockscope_sweep_recommended", "tsc"), Some(1.0));
        } else {
            assert_eq!(get("clockscope_sweep_read_cost_ns", "tsc"), None);
        }
    }
}

#[test]
fn text_table_and_recommendation() {
    let f = Fake::new("acpi_pm", "tsc acpi_pm");
    let r = f.run(&apply(), 0, &mut by_cost).unwrap();
    let mut out = Vec::new();
    renderer(CheckFormat::Text, true)(&mut out, &r).unwrap();
    let text = String::from_utf8(out).unwrap();
    // Every line fits 100 columns, and the header names the host and time.
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    assert!(
        text.starts_with("clockscope ") && text.lines().next().unwrap().ends_with('Z'),
        "{text}"
    );
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
            .to_string()
    };
    let acpi = row("acpi_pm ");
    assert!(
        acpi.contains("720 ns") && acpi.contains("syscall") && acpi.contains("FAIL"),
        "{text}"
    );
    let tsc = row("tsc ");
    assert!(
        tsc.contains(" 20 ns") && tsc.contains("vDSO") && tsc.contains("pass"),
        "{text}"
    );
    assert!(text.contains("Restored: acpi_pm (read back)."), "{text}");
    assert!(
        text.contains("Recommendation: tsc: tsc 20.0 ns (95% interval 20.0 to 20.0) against acpi_pm 720.4 ns"),
        "{text}"
    );
    assert!(
        text.contains("add clocksource=tsc to the kernel command line"),
        "{text}"
    );
}

/// A clocksource name holding C1 and bidi controls (the kernel's sysfs is
/// read as given) comes out of the JSON escaped as `\uXXXX`, as every JSON
/// clockscope writes (crate::report::json), and decodes back to the same name.
#[test]
fn json_escapes_c1_and_bidi_controls_in_clocksource_names() {
    let f = Fake::new("tsc", "tsc hpet");
    let mut never = |_: &str| -> anyhow::Result<ClockStats> { panic!("measured without --apply") };
    let mut r = f.run(&SweepArgs::default(), 1000, &mut never).unwrap();
    let hostile = "tsc\u{85}\u{9b}2J\u{202e}cba";
    r.original = hostile.to_string();
    r.available.push(hostile.to_string());
    let mut json = Vec::new();
    renderer(CheckFormat::Json, false)(&mut json, &r).unwrap();
    let json = String::from_utf8(json).unwrap();
    assert!(json.contains(r#""original": "tsc\u0085\u009b2J\u202ecba""#), "{json}");
    assert!(
        !json.contains('\u{85}') && !json.contains('\u{9b}') && !json.contains('\u{202e}'),
        "{json}"
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["original"], hostile);
    assert_eq!(v["available"][2], hostile);
}

/// Issue 24: the default text is one screen (the table, the problems, the
/// recommendation), `--verbose` adds where it was read and the column
/// legend; both snapshotted from a scripted sweep. The header fits 100
/// columns, `EXPLAIN` over its own column.
#[test]
fn default_text_is_one_screen_and_verbose_is_the_full_report() {
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let r = f.run(&apply(), 0, &mut by_cost).unwrap();
    let render = |verbose: bool| {
        let mut out = Vec::new();
        renderer(CheckFormat::Text, verbose)(&mut out, &r).unwrap();
        // The fake sysfs root is a temporary directory.
        String::from_utf8(out)
            .unwrap()
            .replace(&r.clocksource_dir, "SYSFS/clocksource0")
    };
    let (short, full) = (render(false), render(true));
    let header = full.lines().find(|l| l.starts_with("clocksource ")).unwrap();
    assert!(header.ends_with("PG rule   EXPLAIN") && header.len() <= 100, "{header}");
    assert!(
        !short.contains("read cost: mean read") && full.contains("read cost: mean read"),
        "{short}"
    );
    common::one_screen_and_verbose("sweep_scripted", &short, &full);
}

/// Issue 34: the default text in Russian from the same scripted sweep: the
/// table's columns lined up by display width under their Russian headings,
/// the numbers with a decimal comma; English stays the English snapshot.
#[test]
fn default_text_in_russian_snapshot() {
    use clockscope_cli::i18n::{in_english, with_language, Lang};
    use textwrap::core::display_width;
    let ru = Lang::from_code("ru").unwrap();
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let r = f.run(&apply(), 0, &mut by_cost).unwrap();
    let render = |lang: Lang| {
        let mut out = Vec::new();
        with_language(lang, || renderer(CheckFormat::Text, false)(&mut out, &r)).unwrap();
        let text = String::from_utf8(out)
            .unwrap()
            .replace(&r.clocksource_dir, "SYSFS/clocksource0");
        text.split_once('\n').map_or(String::new(), |(_, b)| b.to_string())
    };
    let text = render(ru);
    assert!(text.lines().all(|l| display_width(l) <= 100), "{text}");
    assert!(text.lines().count() < common::ONE_SCREEN_LINES, "{text}");
    assert!(
        text.contains("Восстановлено: kvm-clock") && text.contains("720,4"),
        "{text}"
    );
    // Every row ends where the heading ends, in display columns.
    let lines: Vec<&str> = text.lines().collect();
    let head = lines.iter().position(|l| l.starts_with("часовой источник ")).unwrap();
    for row in &lines[head + 1..head + 4] {
        assert_eq!(display_width(row), display_width(lines[head]), "{text}");
    }
    common::snapshot_eq("sweep_scripted.ru.txt", &text);
    common::snapshot_eq("sweep_scripted.txt", &in_english(|| render(Lang::ENGLISH)));
    // A sweep run under a Russian locale: its JSON is the English one.
    let json = |r: &SweepReport| {
        let mut out = Vec::new();
        renderer(CheckFormat::Json, false)(&mut out, r).unwrap();
        String::from_utf8(out).unwrap()
    };
    let under_ru = with_language(ru, || {
        Fake::new("kvm-clock", "tsc kvm-clock acpi_pm").run(&apply(), 0, &mut by_cost)
    });
    let under_ru = under_ru.unwrap();
    assert_eq!(under_ru.persistence, r.persistence);
    let j = with_language(ru, || json(&under_ru));
    assert!(!j.chars().any(|c| ('\u{400}'..='\u{4ff}').contains(&c)), "{j}");
}

/// Issue 34: the `--verbose` text in Russian from the same scripted sweep:
/// where it was read, the table, its legend with the baseline's decimal
/// comma, the intervals and the recommendation's advice.
#[test]
fn verbose_text_in_russian_snapshot() {
    use clockscope_cli::i18n::{with_language, Lang};
    use textwrap::core::display_width;
    let f = Fake::new("kvm-clock", "tsc kvm-clock acpi_pm");
    let r = f.run(&apply(), 0, &mut by_cost).unwrap();
    let mut out = Vec::new();
    with_language(Lang::from_code("ru").unwrap(), || {
        renderer(CheckFormat::Text, true)(&mut out, &r)
    })
    .unwrap();
    let text = String::from_utf8(out)
        .unwrap()
        .replace(&r.clocksource_dir, "SYSFS/clocksource0");
    let text = text.split_once('\n').map_or(String::new(), |(_, b)| b.to_string());
    assert!(text.lines().all(|l| display_width(l) <= 100), "{text}");
    assert!(text.contains("Каталог sysfs:") && text.contains("42,66"), "{text}");
    common::snapshot_eq("sweep_scripted_verbose.ru.txt", &text);
}
