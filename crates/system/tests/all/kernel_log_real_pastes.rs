//! Real kernel-log excerpts people posted in public issues (tests/data/kmsg/,
//! each file's source URL in its index.tsv): the summary of each names the
//! hypervisor and the watchdog the log shows, whether the TSC was marked
//! unstable, whether to act (`clockscope dmesg`'s exit 1), and the clocksource
//! the log ends on; each fact it states cites a line that says it.

use clockscope_system::kernel_log::{summarise, Citation, Summary};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kmsg")
}

/// (file, source, hypervisor, watchdog, unstable, act, final clocksource), `-` for none.
fn index() -> Vec<[String; 7]> {
    let text = std::fs::read_to_string(dir().join("index.tsv")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<String> = l.split('\t').map(str::to_string).collect();
            f.try_into().unwrap_or_else(|f| panic!("index.tsv: 7 fields: {f:?}"))
        })
        .collect()
}

fn opt(s: &str) -> Option<&str> {
    (s != "-").then_some(s)
}

/// The cited line is the line of that number in `text` (first line of a joined one).
fn check_citation(text: &str, c: Option<&Citation>, what: &str) {
    let Some(c) = c else { return };
    let line = text.lines().nth(usize::try_from(c.line).unwrap() - 1).unwrap();
    assert_eq!(c.text.lines().next().unwrap(), line, "{what}");
}

#[test]
fn every_real_paste_is_summarised_as_its_log_shows() {
    let rows = index();
    assert!(rows.len() >= 10, "{} pastes", rows.len());
    let mut failures = String::new();
    for [file, source, hv, wd, unstable, act, cs] in &rows {
        assert!(source.starts_with("https://"), "{file}: no source URL");
        let text = std::fs::read_to_string(dir().join(file)).unwrap();
        let s: Summary = summarise(&text, None);
        let got = (
            s.hypervisor.as_deref(),
            s.watchdog.as_deref(),
            s.tsc_marked_unstable.to_string(),
            s.act.to_string(),
            s.final_clocksource.as_deref(),
        );
        let want = (opt(hv), opt(wd), unstable.clone(), act.clone(), opt(cs));
        if got != want {
            failures.push_str(&format!("{file}: got {got:?}, want {want:?}\n"));
        }
        assert_eq!(s.hypervisor.is_some(), s.cited.hypervisor.is_some(), "{file}");
        assert_eq!(s.watchdog.is_some(), s.cited.watchdog.is_some(), "{file}");
        assert_eq!(s.tsc_marked_unstable, s.cited.tsc_marked_unstable.is_some(), "{file}");
        check_citation(&text, s.cited.hypervisor.as_ref(), file);
        check_citation(&text, s.cited.watchdog.as_ref(), file);
        check_citation(&text, s.cited.tsc_marked_unstable.as_ref(), file);
        check_citation(&text, s.cited.final_clocksource.as_ref(), file);
        for e in &s.events {
            assert!(e.line >= 1 && e.line <= text.lines().count() as u64, "{file}: {e:?}");
        }
    }
    assert!(failures.is_empty(), "\n{failures}");
}

#[test]
fn a_watchdog_verdict_a_mail_client_wrapped_is_joined_and_cites_both_lines() {
    let text = std::fs::read_to_string(dir().join("acrn_257_mail_wrapped.txt")).unwrap();
    let s = summarise(&text, None);
    let e = &s.events[0];
    assert_eq!(e.facts.clocksource.as_deref(), Some("tsc-early"), "{e:?}");
    assert_eq!(e.line, 1);
    let c = s.cited.tsc_marked_unstable.unwrap();
    assert_eq!((c.line, c.text.lines().count()), (1, 2), "{c:?}");
    // The detail lines after the wrapped `mask:` rest stay with the verdict.
    assert!(e.detail.iter().any(|d| d.contains("'tsc-early' cs_now")), "{e:?}");
}

#[test]
fn the_guest_advice_names_the_hypervisor_the_log_shows() {
    let s = summarise(
        &std::fs::read_to_string(dir().join("qubes_2044_xen_grep_clock.txt")).unwrap(),
        None,
    );
    assert!(s.advice.starts_with("Xen: "), "{}", s.advice);
    let s = summarise(
        &std::fs::read_to_string(dir().join("sap_118_azure_old_host.txt")).unwrap(),
        None,
    );
    assert!(s.advice.starts_with("Hyper-V/Azure: ") && !s.act, "{s:?}");
    let s = summarise(
        &std::fs::read_to_string(dir().join("corefreq_308_baremetal_hpet.txt")).unwrap(),
        None,
    );
    assert!(
        s.advice.contains("on bare metal: ") && s.advice.contains("in a guest: "),
        "no line says bare metal or guest: both: {}",
        s.advice
    );
}
