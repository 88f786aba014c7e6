use super::*;

fn setting(name: &str, server: &str, session: Option<&str>) -> crate::session::Setting {
    crate::session::Setting {
        name: name.into(),
        server_value: server.into(),
        session_value: session.map(str::to_string),
        why: session.map(|_| "why".to_string()),
    }
}

fn runs(clock_source: &str, how: &str) -> SourceRuns {
    SourceRuns {
        clock_source: clock_source.into(),
        how: how.into(),
        timing_off_ms: vec![1.0],
        timing_on_ms: vec![2.0],
        clock_reads_per_run: 2,
        stopped_by: crate::measure::StopReason::Precision,
        timing_on_plan: None,
        control: crate::measure::ControlRuns::default(),
    }
}

#[test]
fn settings_show_real_changes_and_the_clock_source_of_each_measurement() {
    let settings = [
        setting("jit", "off", Some("off")),
        setting("max_parallel_workers_per_gather", "2", Some("0")),
        setting("timing_clock_source", "auto (tsc)", None),
    ];
    let measured = [
        runs("system", "SET timing_clock_source = 'system' for this session"),
        runs("tsc", "SET timing_clock_source = 'tsc' for this session"),
    ];
    let shown = shown_settings(&settings, &measured);
    // jit off -> off is no change.
    assert_eq!(
        (shown[0].session_value.as_deref(), shown[0].why.as_deref()),
        (None, None)
    );
    assert_eq!(shown[1].session_value.as_deref(), Some("0"));
    assert_eq!(shown[2].session_value.as_deref(), Some("'system', then 'tsc'"));
    assert!(shown[2].why.as_deref().unwrap().contains("one measurement each"));
    // Measured as the server runs (SET refused): shown as the server has it.
    let current = [runs(
        "auto (tsc)",
        "the current setting, measured as the server runs (SET refused)",
    )];
    let shown = shown_settings(&settings, &current);
    assert_eq!(shown[2].session_value, None);
}

#[test]
fn blocks_set_against_the_slices_before_them_hold_when_the_speed_changes() {
    // 1,000 reads per run; the machine switches speed after 3 of 6
    // blocks (12 pairs): the server adds 9 ns per read, then 18; each
    // slice before a pair says the same (its per-row median is two
    // reads). The A/A control's slices, between, say nothing of it (999).
    // The medians of all runs would set 9 against 18.
    let mut r = runs("tsc", "SET");
    r.clock_reads_per_run = 1000;
    r.timing_off_ms = vec![10.0; 12];
    r.timing_on_ms = (0..12)
        .map(|k| if k < 6 { 9.0 } else { 18.0 })
        .map(|ns| 10.0 + ns * 1000.0 / 1e6)
        .collect();
    let effect_slot = |i: usize| matches!(crate::measure::SCHEDULE[i % 6], crate::measure::Slot::Effect { .. });
    let slices: Vec<f64> = (0..18)
        .map(|i| {
            let e = (0..i).filter(|k| effect_slot(*k)).count();
            match (effect_slot(i), e < 6) {
                (false, _) => 999.0,
                (true, true) => 18.0,
                (true, false) => 36.0,
            }
        })
        .collect();
    assert_eq!(slot_of_pair(4), 6);
    assert_eq!(slot_of_pair(7), 9);
    let p = paired_in_time(&r, &slices).unwrap();
    assert_eq!(p.pairs, 6);
    assert!((p.observed_over_predicted - 1.0).abs() < 1e-9, "{p:?}");
    let (low, high) = (p.low.unwrap(), p.high.unwrap());
    assert!((low - 1.0).abs() < 1e-9 && (high - 1.0).abs() < 1e-9, "{p:?}");
    // The server twice the model's cost in every pair: 2.
    let doubled: Vec<f64> = slices.iter().map(|s| s / 2.0).collect();
    assert!((paired_in_time(&r, &doubled).unwrap().observed_over_predicted - 2.0).abs() < 1e-9);
    // Fewer slices than pairs (a stop): only the blocks with both; below
    // 6, no interval.
    let few = paired_in_time(&r, &slices[..8]).unwrap();
    assert_eq!((few.pairs, few.low), (3, None));
    // No slice, or slices that resolved nothing: no ratio.
    assert_eq!(paired_in_time(&r, &[]), None);
    assert_eq!(paired_in_time(&r, &[0.0, f64::NAN]), None);
}

#[test]
fn tsc_is_recognised_in_show_values() {
    assert!(uses_tsc("tsc"));
    assert!(uses_tsc("auto (tsc)"));
    assert!(!uses_tsc("auto (system)"));
    assert!(!uses_tsc("system"));
}
