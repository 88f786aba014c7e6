use super::*;

fn e(v: f64, lo: f64, hi: f64) -> Option<Estimate> {
    Some(Estimate::new(v, Some(lo), Some(hi)))
}

/// A 1.5 us page-cache read (95% interval 1.45 to 1.55 us).
fn page() -> Option<Estimate> {
    e(1500.0, 1450.0, 1550.0)
}

#[test]
fn a_cheap_io_timing_is_turned_on_a_costly_one_off() {
    // 24 ns a read: 48 ns per I/O, 3.2% of the page read: on.
    let d = io_timing(&TRACK_IO_TIMING, e(24.0, 23.5, 24.5), page());
    assert_eq!(d.verdict, Verdict::Cheap);
    assert_eq!(d.recommended_value.as_deref(), Some("on"));
    let s = d.estimate.unwrap();
    assert!((s.value - 0.032).abs() < 1e-12, "{s:?}");
    assert!((s.low.unwrap() - 47.0 / 1550.0).abs() < 1e-12);
    assert!((s.high.unwrap() - 49.0 / 1450.0).abs() < 1e-12);
    assert!(
        d.text
            .contains("48 ns per block I/O (2 clock reads), 3.2% of an 8 kB read"),
        "{}",
        d.text
    );
    assert!(d.text.contains("below the 10% limit"), "{}", d.text);
    // A syscall clock, 600 ns a read: 1.2 us per I/O, 80%: off.
    let d = io_timing(&TRACK_IO_TIMING, e(600.0, 590.0, 610.0), page());
    assert_eq!(d.verdict, Verdict::Costly);
    assert_eq!(d.recommended_value.as_deref(), Some("off"));
    assert!(d.text.contains("above the 10% limit"), "{}", d.text);
}

#[test]
fn an_io_cost_whose_interval_reaches_the_limit_changes_nothing() {
    // 75 ns: 150 ns, exactly 10%; interval 9.4% to 10.7%.
    let d = io_timing(&TRACK_WAL_IO_TIMING, e(75.0, 73.0, 77.0), page());
    assert_eq!(d.verdict, Verdict::NotResolved);
    assert_eq!(d.recommended_value, None);
    // No interval: no decision either way, however cheap.
    let d = io_timing(&TRACK_IO_TIMING, Some(Estimate::new(24.0, None, None)), page());
    assert_eq!(d.verdict, Verdict::NotResolved);
    assert_eq!(d.recommended_value, None);
    assert!(d.text.contains("interval not available"), "{}", d.text);
    // Nothing to set it against, or no price.
    assert_eq!(
        io_timing(&TRACK_IO_TIMING, e(24.0, 23.0, 25.0), None).verdict,
        Verdict::NotPriced
    );
    assert_eq!(io_timing(&TRACK_IO_TIMING, None, page()).verdict, Verdict::NotPriced);
}

#[test]
fn every_interval_contains_its_estimate() {
    // A median's interval from other samples may miss the value: widened.
    let x = Estimate::new(1.40, Some(1.20), Some(1.35));
    assert_eq!((x.low, x.high), (Some(1.20), Some(1.40)));
    let x = Estimate::new(1.0, Some(1.2), Some(1.1));
    assert_eq!((x.low, x.high), (Some(1.0), Some(1.2)));
    assert_eq!(Estimate::new(1.0, Some(f64::NAN), Some(2.0)).low, None);
    let d = log_timing(Some(Estimate::new(1.5, Some(1.1), Some(1.2))));
    let s = d.estimate.unwrap();
    assert!(s.low.unwrap() <= s.value && s.value <= s.high.unwrap());
    // Widened to 1.1..1.5: it reaches 1.3, so no change.
    assert_eq!(d.verdict, Verdict::NotResolved);
}

#[test]
fn log_timing_in_both_directions() {
    let d = log_timing(e(1.10, 1.08, 1.12));
    assert_eq!(
        (d.verdict, d.recommended_value.as_deref()),
        (Verdict::Cheap, Some("on"))
    );
    assert!(d.text.contains("below the 1.3x limit"), "{}", d.text);
    let d = log_timing(e(1.60, 1.50, 1.70));
    assert_eq!(
        (d.verdict, d.recommended_value.as_deref()),
        (Verdict::Costly, Some("off"))
    );
    let d = log_timing(e(1.30, 1.25, 1.35));
    assert_eq!((d.verdict, d.recommended_value), (Verdict::NotResolved, None));
    // At the limit is not below it.
    assert_eq!(log_timing(e(1.2, 1.1, 1.3)).verdict, Verdict::NotResolved);
    assert_eq!(log_timing(None).verdict, Verdict::NotPriced);
}

#[test]
fn timing_clock_source_by_trust_then_by_measured_reads() {
    let facts = |reads, auto, trusted| ClockSourceFacts {
        postgresql_reads_counter: reads,
        auto_picks_tsc: auto,
        tsc_trusted: trusted,
        tsc_reason: Some("unstable".into()),
        system_read_ns: e(24.0, 23.0, 25.0),
        tsc_read_ns: e(9.0, 8.5, 9.5),
    };
    let value = |f: &ClockSourceFacts| timing_clock_source(f).recommended_value;
    assert_eq!(value(&facts(false, Some(true), Some(true))), None);
    assert_eq!(timing_clock_source(&facts(false, None, None)).verdict, Verdict::NoTsc);
    assert_eq!(value(&facts(true, Some(true), Some(true))).as_deref(), Some("auto"));
    assert_eq!(value(&facts(true, Some(false), Some(true))).as_deref(), Some("tsc"));
    assert_eq!(value(&facts(true, Some(true), Some(false))).as_deref(), Some("system"));
    assert_eq!(value(&facts(true, Some(false), Some(false))).as_deref(), Some("auto"));
    // Trust unknown (a remote server): the measured reads decide.
    assert_eq!(value(&facts(true, None, None)).as_deref(), Some("auto"));
    let mut close = facts(true, None, None);
    close.tsc_read_ns = e(22.0, 20.0, 23.5);
    let d = timing_clock_source(&close);
    assert_eq!((d.verdict, d.recommended_value), (Verdict::NotResolved, None));
    close.tsc_read_ns = None;
    assert_eq!(timing_clock_source(&close).verdict, Verdict::NotResolved);
}

#[test]
fn the_page_cache_read_is_measured_with_an_interval() {
    let p = page_read::measure_page_cache_read(8).expect("a temp file to read");
    assert!(p.ns > 0.0);
    let x = p.estimate();
    assert!(x.low.unwrap() <= x.value && x.value <= x.high.unwrap(), "{x:?}");
}

#[test]
fn a_change_is_what_differs_from_the_server() {
    let cheap = io_timing(&TRACK_IO_TIMING, e(24.0, 23.5, 24.5), page());
    assert_eq!(cheap.change_from("off"), Some("on"));
    assert_eq!(cheap.change_from("on"), None);
    let costly = io_timing(&TRACK_IO_TIMING, e(600.0, 590.0, 610.0), page());
    assert_eq!(costly.change_from("on"), Some("off"));
    assert_eq!(costly.change_from("off"), None);
    let unresolved = log_timing(e(1.3, 1.25, 1.35));
    assert_eq!(
        (unresolved.change_from("on"), unresolved.change_from("off")),
        (None, None)
    );
    let trusted = timing_clock_source(&ClockSourceFacts {
        postgresql_reads_counter: true,
        auto_picks_tsc: Some(true),
        tsc_trusted: Some(true),
        ..Default::default()
    });
    assert_eq!(trusted.change_from("system"), Some("auto"));
    assert_eq!(trusted.change_from("tsc"), None);
    assert_eq!(trusted.change_from("auto"), None);
}
