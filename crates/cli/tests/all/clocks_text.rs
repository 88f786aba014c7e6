//! `clockscope clocks`'s text table from a constructed report (no timing
//! dependence): the English snapshot, and (issue 34) the Russian one, its
//! columns lined up by display width under the Russian headings and its
//! numbers with a decimal comma.

use crate::common;
use clockscope_cli::commands::clocks::model::{ClockEntry, ClocksReport};
use clockscope_cli::commands::clocks::text::write_text;
use clockscope_cli::i18n::{in_english, with_language, Lang};
use clockscope_cli::report::stamp::{ReportStamp, Stamped};
use textwrap::core::display_width;

fn entry(name: &str, display: &str, works: bool) -> ClockEntry {
    ClockEntry {
        name: name.to_string(),
        display_name: display.to_string(),
        works,
        reason: (!works).then(|| format!("{display} is not available on this architecture (x86_64)")),
        clock_getres_ns: None,
        tick_ns: None,
        observed_resolution_ns: None,
        avg_loop_ns: None,
        read_cost_ns: None,
        interference: None,
    }
}

fn report() -> ClocksReport {
    let mut mono = entry("monotonic", "clock_gettime (CLOCK_MONOTONIC)", true);
    mono.clock_getres_ns = Some(1);
    mono.observed_resolution_ns = Some(10);
    mono.avg_loop_ns = Some(20.125);
    let mut coarse = entry("monotonic_coarse", "clock_gettime (CLOCK_MONOTONIC_COARSE)", true);
    coarse.clock_getres_ns = Some(4_000_000);
    coarse.observed_resolution_ns = Some(4_000_000);
    coarse.avg_loop_ns = Some(5.5);
    let mut tsc = entry("rdtsc", "RDTSC", true);
    tsc.tick_ns = Some(0.370_37);
    tsc.observed_resolution_ns = Some(11);
    tsc.avg_loop_ns = Some(13.25);
    ClocksReport {
        counter_frequency_khz: Some(2_700_000),
        counter_frequency_source: Some("x86, hypervisor, cpuid 0x40000010".to_string()),
        clocks: vec![mono, coarse, tsc, entry("cntvct", "CNTVCT_EL0", false)],
    }
}

fn text(lang: Lang) -> String {
    let stamp = ReportStamp {
        host: "db1.example".to_string(),
        timestamp: "2026-11-23T19:19:07Z".to_string(),
        tool: "clockscope 0.1.0".to_string(),
        schema_version: 1,
    };
    let r = report();
    let mut out = Vec::new();
    with_language(lang, || {
        write_text(
            &mut out,
            &Stamped {
                stamp: &stamp,
                report: &r,
            },
        )
    })
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn text_table_in_english_and_russian() {
    let en = in_english(|| text(Lang::ENGLISH));
    assert!(en.contains("rdtsc            RDTSC"), "{en}");
    common::snapshot_eq("clocks_constructed.txt", &en);
    let ru = text(Lang::from_code("ru").unwrap());
    assert!(
        ru.contains("0,370") && ru.contains("20,12") && ru.contains("частота счётчика"),
        "{ru}"
    );
    assert!(ru.lines().all(|l| display_width(l) <= 100), "{ru}");
    // Every working row ends where the heading ends, in display columns.
    let lines: Vec<&str> = ru.lines().collect();
    for row in &lines[2..5] {
        assert_eq!(display_width(row), display_width(lines[1]), "{ru}");
    }
    common::snapshot_eq("clocks_constructed.ru.txt", &ru);
}
