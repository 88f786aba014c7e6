//! Every kernel log fixture of docs/dev/kernel-messages/fixtures (written from
//! the kernel's format strings, one per environment and paste style) against
//! its `.expected.json`: the summary fields and the event kinds in order.

use std::path::{Path, PathBuf};

use clockscope_system::kernel_log::{summarise, Summary};
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/dev/kernel-messages/fixtures")
}

/// The fields the expected files hold, from a summary.
fn actual(s: &Summary) -> Value {
    json!({
        "tsc_marked_unstable": s.tsc_marked_unstable,
        "unstable_reasons": s.unstable_reasons,
        "final_clocksource": s.final_clocksource,
        "watchdog": s.watchdog,
        "warp_cycles": s.warp_cycles,
        "detected_processor_khz": s.detected_processor_khz,
        "detected_tsc_khz": s.detected_tsc_khz,
        "refined_khz": s.refined_khz,
        "hypervisor_tsc_khz": s.hypervisor_tsc_khz,
        "hypervisor": s.hypervisor,
        "events": s.events.iter().map(|e| e.kind.name()).collect::<Vec<_>>(),
    })
}

#[test]
fn every_fixture_matches_its_expected_summary() {
    let mut names: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    names.sort();
    assert!(names.len() >= 20, "fixtures missing: {names:?}");
    let mut failures = String::new();
    for txt in &names {
        let text = std::fs::read_to_string(txt).unwrap();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(txt.with_extension("expected.json")).unwrap()).unwrap();
        let got = actual(&summarise(&text, None));
        for (key, want) in got.as_object().unwrap() {
            let exp = &expected[key];
            if exp != want {
                failures.push_str(&format!("{}: {key}: expected {exp}, got {want}\n", txt.display()));
            }
        }
    }
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn every_event_has_a_meaning_and_the_summary_says_what_to_do() {
    for txt in std::fs::read_dir(fixtures()).unwrap().map(|e| e.unwrap().path()) {
        if txt.extension().is_some_and(|x| x == "txt") {
            let s = summarise(&std::fs::read_to_string(&txt).unwrap(), None);
            for e in &s.events {
                assert!(!e.meaning.is_empty(), "{}: {:?}", txt.display(), e.kind);
            }
            assert!(!s.postgres.is_empty() && !s.advice.is_empty());
            if s.tsc_marked_unstable {
                assert!(s.postgres.contains("will not use the TSC"), "{}", s.postgres);
            }
        }
    }
}

#[test]
fn work_is_bounded_by_the_line_limit() {
    // Lines beyond MAX_LOG_LINES are not read: a flood of empty lines cannot
    // make the interpretation unbounded, and what follows it is ignored.
    let mut text = "\n".repeat(clockscope_system::kernel_log::MAX_LOG_LINES);
    text.push_str("tsc: Detected 2599.998 MHz processor\n");
    assert_eq!(summarise(&text, None).detected_processor_khz, None);
    assert_eq!(
        summarise("tsc: Detected 2599.998 MHz processor\n", None).detected_processor_khz,
        Some(2_599_998)
    );
}

fn fixture(name: &str) -> Summary {
    summarise(&std::fs::read_to_string(fixtures().join(name)).unwrap(), None)
}

#[test]
fn multi_line_events_are_joined_with_their_values() {
    use clockscope_system::kernel_log::{Kind, Machine};
    // The failed sync check and its warp: one event, CPU pair and cycles.
    let s = fixture("baremetal_2s_warp_3x.txt");
    let warp = s.events.iter().find(|e| e.kind == Kind::TscSyncWarp).unwrap();
    assert_eq!((warp.facts.from_cpu, warp.facts.to_cpu), (Some(0), Some(4)));
    assert_eq!(warp.facts.warp_cycles, Some(2_588_706_918));
    assert_eq!(warp.detail.len(), 1);
    assert_eq!(warp.time.monotonic_us, Some(269_810));
    assert_eq!(warp.time.wall.as_deref(), Some("Nov 24 20:00:01"));
    // The 6.x watchdog block: the header and its four detail lines.
    let s = fixture("baremetal_watchdog_6x_wdnsec.txt");
    let wd = s
        .events
        .iter()
        .find(|e| e.kind == Kind::WatchdogMarkedUnstable)
        .unwrap();
    assert_eq!(wd.detail.len(), 4, "{wd:?}");
    assert_eq!(
        (wd.facts.cpu, wd.facts.skew_ns, wd.facts.interval_ns),
        (Some(2), Some(-863_625), Some(496_465_510))
    );
    assert_eq!(
        (wd.facts.wd_nsec, wd.facts.cs_nsec),
        (Some(496_465_510), Some(495_601_885))
    );
    assert_eq!(wd.level, Some(4));
    // Where the log runs decides the meanings.
    assert_eq!(fixture("kvm_3x_oneline_monotonic.txt").machine, Machine::Guest);
    assert_eq!(fixture("baremetal_recalibrate_kmsg.txt").machine, Machine::BareMetal);
    let guest = fixture("kvm_3x_oneline_monotonic.txt");
    assert!(guest.advice.contains("host"), "{}", guest.advice);
    assert!(fixture("xen_pv.txt").postgres.contains("leaves the vDSO"));
    // RHEL 6's report-only verdict keeps the TSC.
    let rhel = fixture("rhel6_failover_quoted.txt");
    assert!(!rhel.tsc_marked_unstable && rhel.lines == 4, "{rhel:?}");
}
