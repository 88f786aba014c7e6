//! Each of `check`'s rules and pieces of advice alone, through injected
//! statistics and facts (no clock is read).

use super::advice;
use super::rules::{self, StatusFacts};
use super::*;
use crate::commands::check::model::stats::Percentiles;
use crate::commands::check::model::verdict::Status;
use clockscope_pg::predict::settings::Estimate;

/// A clock `name` whose reads cost `read_cost_ns` (the average loop the
/// same), `under_1us_pct` of differences under 1 us, p99 `p99_ns`.
fn clock(name: &str, read_cost_ns: f64, under_1us_pct: f64, p99_ns: u64) -> ClockStats {
    ClockStats {
        name: name.into(),
        display_name: format!("clock {name}"),
        avg_loop_ns: read_cost_ns,
        read_cost_ns,
        interference: Default::default(),
        loops: 1_000,
        elapsed_ns: 1_000_000,
        elapsed_source: Default::default(),
        end_minus_start_ns: 1_000_000,
        percentiles_ns: Percentiles {
            p50: 20,
            p90: 30,
            p99: p99_ns,
            p99_9: p99_ns,
            p99_99: p99_ns,
            max: p99_ns,
        },
        resolution_ns: Some(1),
        clock_getres_ns: Some(1),
        zero_steps_pct: 0.0,
        under_1us_pct,
        backward_steps: 0,
        largest_backward_ns: 0,
        histogram: Vec::new(),
        frequency_khz: None,
        interrupted: false,
    }
}

fn cheap() -> ClockStats {
    clock("monotonic", 20.0, 99.99, 40)
}

fn inputs() -> VerdictInputs {
    VerdictInputs {
        baseline_row_ns: 40.0,
        baseline_source: "measured".into(),
        ..Default::default()
    }
}

fn prediction(slowdown: Option<f64>, low: Option<f64>, high: Option<f64>) -> ExplainPrediction {
    ExplainPrediction {
        clock: "clock monotonic".into(),
        per_read_ns: 20.0,
        back_to_back_per_row_ns: 40.0,
        per_row_per_node_ns: slowdown.map(|_| 30.0),
        status: "not resolved: inside the noise".into(),
        executor_loop: None,
        count_timing_off_ms: 40.0,
        count_timing_on_ms: slowdown.map(|x| 40.0 * x),
        slowdown,
        slowdown_low: low,
        slowdown_high: high,
        used_by_postgresql: true,
    }
}

#[test]
fn pg_rule_needs_90_pct_under_1us_and_a_loop_under_100_ns() {
    assert!(rules::pg_rule(&cheap()).passed);
    assert!(!rules::pg_rule(&clock("monotonic", 20.0, 90.0, 40)).passed);
    assert!(!rules::pg_rule(&clock("monotonic", 100.0, 99.0, 40)).passed);
    let r = rules::pg_rule(&clock("monotonic", 120.0, 95.0, 40));
    assert_eq!(r.clock, "clock monotonic");
    assert!(r.detail.contains("95.0000% of reads under 1 us"), "{}", r.detail);
    assert!(r.detail.contains("average loop 120.00 ns"), "{}", r.detail);
}

#[test]
fn modern_rule_needs_cheap_reads_a_short_tail_and_no_backward_step() {
    assert!(rules::modern_rule(&cheap()).passed);
    assert!(rules::modern_rule(&clock("monotonic", 50.0, 99.0, 200)).passed);
    assert!(!rules::modern_rule(&clock("monotonic", 50.5, 99.0, 40)).passed);
    assert!(!rules::modern_rule(&clock("monotonic", 20.0, 99.0, 201)).passed);
    let mut back = cheap();
    back.backward_steps = 1;
    let r = rules::modern_rule(&back);
    assert!(!r.passed);
    assert!(r.detail.ends_with("1 backward steps (needs 0)"), "{}", r.detail);
}

#[test]
fn interference_alone_does_not_fail_postgresqls_rule() {
    // The average loop includes gaps that took a tenth of the reads' time:
    // the rule fails on it, passes on the read cost without them.
    let mut s = clock("monotonic", 30.0, 89.0, 40);
    s.avg_loop_ns = 130.0;
    s.interference.gaps = 20;
    s.interference.lost_fraction = 0.1;
    let rule = rules::pg_rule(&s);
    assert!(!rule.passed);
    assert!(rules::pg_rule_without_interference(&s));
    assert!(rules::fails_only_from_interference(&rule, &s));
    let note = rules::interference_note(&s);
    assert!(note.contains("average loop (130.00 ns) includes 10.0%"), "{note}");
    assert!(note.contains("lost in 20 gaps"), "{note}");
    // Slow without the gaps too: a real failure.
    let slow = clock("monotonic", 120.0, 89.0, 40);
    assert!(!rules::fails_only_from_interference(&rules::pg_rule(&slow), &slow));
    // A passed rule never "fails only from interference".
    assert!(!rules::fails_only_from_interference(
        &rules::pg_rule(&cheap()),
        &cheap()
    ));
}

#[test]
fn backward_steps_are_problems_and_break_only_monotonic_clocks() {
    assert!(rules::backward_steps(&[cheap()]).is_empty());
    assert!(!rules::broken(&[cheap()]));
    let mut mono = cheap();
    mono.backward_steps = 3;
    mono.largest_backward_ns = 500;
    let mut wall = clock("realtime", 20.0, 99.0, 40);
    wall.backward_steps = 1;
    let problems = rules::backward_steps(&[mono.clone(), cheap(), wall.clone()]);
    assert_eq!(problems.len(), 2);
    assert!(problems[0].starts_with("clock monotonic went backwards 3 times (largest step 500 ns)"));
    assert!(!problems[0].contains("NTP"));
    assert!(problems[1].ends_with("a wall clock may be stepped by NTP, so this is not a clock fault by itself"));
    assert!(rules::broken(&[mono]));
    assert!(!rules::broken(&[wall]));
}

#[test]
fn syscall_fallback_by_clocksource_name_or_by_cost() {
    assert_eq!(rules::syscall_fallback(&cheap(), Some("tsc")), None);
    assert_eq!(rules::syscall_fallback(&cheap(), None), None);
    let by_name = rules::syscall_fallback(&cheap(), Some("hpet")).unwrap();
    assert_eq!(
        by_name,
        "the kernel clocksource 'hpet' has no vDSO read: every clock_gettime is a syscall"
    );
    let slow = clock("monotonic", 600.0, 99.0, 900);
    let by_cost = rules::syscall_fallback(&slow, Some("tsc")).unwrap();
    assert!(
        by_cost.starts_with("clock_gettime costs 600.00 ns per read (> 150 ns)"),
        "{by_cost}"
    );
    let both = rules::syscall_fallback(&slow, Some("xen")).unwrap();
    assert!(
        both.starts_with("the kernel clocksource 'xen'") && both.contains("; clock_gettime costs"),
        "{both}"
    );
}

#[test]
fn status_from_the_rules() {
    let good = StatusFacts {
        system_measured: true,
        postgresql_rule_passed: Some(true),
        modern_rule_passed: Some(true),
        ..Default::default()
    };
    assert_eq!(rules::status(good), Status::Good);
    assert_eq!(rules::status(StatusFacts { broken: true, ..good }), Status::Broken);
    assert_eq!(
        rules::status(StatusFacts {
            system_measured: false,
            ..good
        }),
        Status::NoVerdict
    );
    assert_eq!(
        rules::status(StatusFacts {
            time_interposed: true,
            ..good
        }),
        Status::Bad
    );
    let pg_fails = StatusFacts {
        postgresql_rule_passed: Some(false),
        ..good
    };
    assert_eq!(rules::status(pg_fails), Status::Bad);
    // Noise alone never gives BAD.
    assert_eq!(
        rules::status(StatusFacts {
            fails_only_from_interference: true,
            ..pg_fails
        }),
        Status::Good
    );
    assert_eq!(
        rules::status(StatusFacts {
            modern_rule_passed: Some(false),
            ..good
        }),
        Status::Fair
    );
    assert_eq!(
        rules::status(StatusFacts {
            syscall_fallback: true,
            ..good
        }),
        Status::Fair
    );
}

fn est(v: f64, lo: f64, hi: f64) -> Option<Estimate> {
    Some(Estimate::new(v, Some(lo), Some(hi)))
}

/// Inputs whose system clock reads for `read_ns` (95% interval +-2%) and
/// whose page-cache read takes 1.5 us (1.45 to 1.55).
fn priced(read_ns: f64) -> VerdictInputs {
    VerdictInputs {
        io_prices: IoPrices {
            system: est(read_ns, read_ns * 0.98, read_ns * 1.02),
            precise_tsc: est(9.0, 8.8, 9.2),
            page_read: est(1500.0, 1450.0, 1550.0),
        },
        ..inputs()
    }
}

#[test]
fn io_timing_is_decided_by_the_judge_in_both_directions() {
    use clockscope_pg::predict::settings::Verdict;
    // 2 x 20 ns of a 1.5 us cached read: 2.7%, wholly below 10%: turn it on.
    let a = advice::io_timing(&advice::TRACK_IO_TIMING, &cheap(), None, &priced(20.0));
    let d = a.decision.as_ref().unwrap();
    assert!(a.safe);
    assert_eq!(
        (d.verdict, d.recommended_value.as_deref()),
        (Verdict::Cheap, Some("on"))
    );
    assert_eq!(a.word(), "safe");
    assert!(
        a.why.starts_with(
            "turn it on if you want I/O times: each block I/O adds 2 INSTR_TIME_SET_CURRENT reads of clock monotonic: 40 ns per block \
             I/O (2 clock reads), 2.7% of an 8 kB read from the page cache (1.50 us; 95% interval"
        ),
        "{}",
        a.why
    );
    let tsc = clock("rdtscp", 9.0, 100.0, 20);
    let a = advice::io_timing(&advice::TRACK_IO_TIMING, &cheap(), Some(&tsc), &priced(20.0));
    assert!(
        a.why
            .ends_with("; 18 ns with PostgreSQL 19's clock rdtscp (timing_clock_source = tsc)"),
        "{}",
        a.why
    );
    // A syscall clock, 600 ns: 80%: keep it off.
    let slow = clock("monotonic", 600.0, 99.0, 900);
    let a = advice::io_timing(&advice::TRACK_WAL_IO_TIMING, &slow, None, &priced(600.0));
    assert!(!a.safe);
    assert_eq!(a.word(), "costly");
    assert_eq!(a.decision.as_ref().unwrap().recommended_value.as_deref(), Some("off"));
    assert!(
        a.why.starts_with("keep it off: each WAL write or sync adds 2"),
        "{}",
        a.why
    );
    // 75 ns: 10.0%, its interval from 9.5% to 10.6%: no change either way.
    let a = advice::io_timing(&advice::TRACK_IO_TIMING, &cheap(), None, &priced(75.0));
    assert!(!a.safe);
    assert_eq!(a.word(), "not resolved");
    assert!(a.why.starts_with("no change either way: "), "{}", a.why);
    // Not priced (no page-cache read): no decision, and not called safe.
    let a = advice::io_timing(&advice::TRACK_IO_TIMING, &cheap(), None, &inputs());
    assert_eq!(a.decision.as_ref().unwrap().verdict, Verdict::NotPriced);
    assert!(!a.safe);
}

#[test]
fn log_timing_is_costly_only_when_the_whole_interval_reaches_the_limit() {
    let i = inputs();
    let a = advice::log_timing(&prediction(Some(1.2), Some(1.1), Some(1.25)), None, &i);
    assert!(a.safe && a.why.contains("below the 1.3x limit"), "{}", a.why);
    let a = advice::log_timing(&prediction(Some(1.3), Some(1.2), Some(1.4)), None, &i);
    assert!(a.safe && a.why.contains("not a clear case"), "{}", a.why);
    assert_eq!(a.word(), "not resolved");
    let a = advice::log_timing(&prediction(Some(1.5), Some(1.3), Some(1.7)), None, &i);
    assert!(!a.safe, "{}", a.why);
    assert_eq!(a.decision.as_ref().unwrap().recommended_value.as_deref(), Some("off"));
    assert!(
        a.why
            .contains("1.50x at your measured 40.0 ns/row, 95% interval 1.300x to 1.700x"),
        "{}",
        a.why
    );
    // An interval that misses its estimate is widened to contain it.
    let a = advice::log_timing(&prediction(Some(1.2), Some(1.22), Some(1.28)), None, &i);
    assert!(a.why.contains("95% interval 1.200x to 1.280x"), "{}", a.why);
    // Nothing measured: not priced, and says so.
    let a = advice::log_timing(&prediction(None, None, None), None, &i);
    assert!(
        a.safe && a.why.contains("nothing measured to set against the 1.3x limit"),
        "{}",
        a.why
    );
    assert_eq!(a.word(), "not priced");
    // PostgreSQL 19's TSC beside it.
    let mut tsc = prediction(Some(1.1), None, None);
    tsc.clock = "RDTSCP".into();
    let a = advice::log_timing(&prediction(Some(1.2), None, None), Some(&tsc), &i);
    assert!(a.why.contains(", 1.10x with PostgreSQL 19's RDTSCP"), "{}", a.why);
}

#[test]
fn a_slowdown_from_the_reference_baseline_is_an_example() {
    let mut i = inputs();
    assert_eq!(advice::at_baseline(&i, 1.234, 2), "1.23x at your measured 40.0 ns/row");
    i.baseline_is_example = true;
    assert_eq!(
        advice::at_baseline(&i, 1.234, 1),
        "example: 1.2x for a 40.0 ns/row count(*) measured elsewhere"
    );
}

#[test]
fn timing_clock_source_by_what_auto_picks_and_trust() {
    let tcs = |i: &VerdictInputs, native| advice::timing_clock_source(i, &advice::clock_source_decision(i), native);
    let mut i = inputs();
    assert!(tcs(&i, true).unwrap().contains("it has no TSC clock here"));
    assert!(tcs(&i, false).unwrap().contains("is x86-64 only"));
    i.postgresql_reads_counter = true;
    assert_eq!(tcs(&i, true), None);
    let rec = |auto: bool, trusted: bool| {
        let i = VerdictInputs {
            postgresql_auto_uses_tsc: Some(auto),
            tsc_trusted: Some(trusted),
            tsc_reason: Some("a reason".into()),
            ..i.clone()
        };
        tcs(&i, true).unwrap()
    };
    assert!(rec(true, true).starts_with("PostgreSQL 19: keep timing_clock_source = auto: auto picks tsc"));
    assert!(rec(true, false).starts_with("PostgreSQL 19: set timing_clock_source = system"));
    assert!(rec(true, false).ends_with("(a reason)"));
    assert!(rec(false, true).starts_with("PostgreSQL 19: set timing_clock_source = tsc"));
    assert!(rec(false, false).starts_with("PostgreSQL 19: keep timing_clock_source = auto: auto picks system"));
}

#[test]
fn older_postgresql_installed_is_said() {
    assert_eq!(advice::with_older_postgresql("rec".into(), &[]), "rec");
    assert_eq!(advice::with_older_postgresql("rec".into(), &[15, 19]), "rec");
    assert_eq!(
        advice::with_older_postgresql("rec".into(), &[14, 15]),
        "rec; installed here: PostgreSQL 14, 15, which has no timing_clock_source and always reads the system clock"
    );
}

#[test]
fn postgresql19_auto_picks_in_its_words() {
    let mut i = inputs();
    assert_eq!(advice::postgresql19_auto_picks(&i), None);
    i.postgresql_auto_uses_tsc = Some(true);
    assert_eq!(advice::postgresql19_auto_picks(&i).as_deref(), Some("tsc"));
    i.postgresql_auto_uses_tsc = Some(false);
    assert_eq!(advice::postgresql19_auto_picks(&i).as_deref(), Some("system"));
}

#[test]
fn summary_by_status() {
    let mut i = inputs();
    let p = prediction(Some(1.5), None, None);
    assert!(advice::summary(Status::Broken, Some(&p), &i, true).starts_with("Time went backwards"));
    assert!(advice::summary(Status::Good, None, &i, true).starts_with("The system clock was not measured"));
    assert!(advice::summary(Status::NoVerdict, Some(&p), &i, true).starts_with("The system clock was not measured"));
    assert_eq!(
        advice::summary(Status::Good, Some(&p), &i, true),
        "Reading the clock is cheap here (20 ns per read): EXPLAIN ANALYZE adds about 30 ns per row per plan node \
         (1.50x at your measured 40.0 ns/row; `clockscope explain` measures your server)."
    );
    assert!(advice::summary(Status::Bad, Some(&p), &i, true).contains("(1.5x at your measured"));
    assert!(advice::summary(Status::Fair, Some(&prediction(None, None, None)), &i, true)
        .ends_with("EXPLAIN ANALYZE's timing cost with clock monotonic: not resolved (`clockscope explain` measures your server)."));
    // The one-screen headline leaves out only an example measured elsewhere.
    assert_eq!(
        advice::summary(Status::Good, Some(&p), &i, false),
        advice::summary(Status::Good, Some(&p), &i, true)
    );
    i.baseline_is_example = true;
    let headline = advice::summary(Status::Good, Some(&p), &i, false);
    assert_eq!(
        headline,
        "Reading the clock is cheap here (20 ns per read): EXPLAIN ANALYZE adds about 30 ns per row per plan node."
    );
    assert!(advice::summary(Status::Good, Some(&p), &i, true).contains("measured elsewhere"));
    i.time_interposition = Some("libfaketime".into());
    assert!(advice::summary(Status::Bad, Some(&p), &i, true).starts_with("Something between clockscope and the kernel"));
}

#[test]
fn decide_puts_the_problems_in_order() {
    let mut mono = clock("monotonic", 200.0, 80.0, 900);
    mono.backward_steps = 1;
    let i = VerdictInputs {
        current_clocksource: Some("hpet".into()),
        time_interposition: Some("libfaketime".into()),
        ..inputs()
    };
    let v = decide(&[mono], &i);
    assert_eq!(v.status, Status::Broken);
    assert_eq!(v.problems.len(), 4, "{:?}", v.problems);
    assert!(v.problems[0].contains("went backwards"));
    assert!(v.problems[1].starts_with("the kernel clocksource 'hpet'"));
    assert!(v.problems[2].starts_with("time is not the kernel's here"));
    assert!(v.problems[3].starts_with("clock monotonic fails PostgreSQL's rule"));
}

/// adjtimex's answer: `status` bits, clock state, estimated and maximum error (µs).
fn ntp(status: i32, state: i32, esterror: i64, maxerror: i64) -> clockscope_system::linux::ntp::NtpState {
    clockscope_system::linux::ntp::NtpState::from_raw(&clockscope_system::linux::ntp::RawTimex {
        state,
        status,
        freq: 0,
        maxerror,
        esterror,
        offset: 0,
    })
}

#[test]
fn ntp_not_synchronised_is_a_problem_with_its_error_and_exit_1() {
    use clockscope_system::linux::ntp::{STA_UNSYNC, TIME_ERROR};
    // Synchronised: nothing to act on, exit 0.
    let i = VerdictInputs {
        ntp: Some(ntp(0, 0, 120, 300_000)),
        ..inputs()
    };
    let v = decide(&[cheap()], &i);
    assert_eq!((v.status, v.problems.len(), v.exit_code()), (Status::Good, 0, 0));
    // Never synchronised (a VM without chrony): the kernel's cap, no bound.
    let i = VerdictInputs {
        ntp: Some(ntp(STA_UNSYNC, TIME_ERROR, 16_000_000, 16_000_000)),
        ..inputs()
    };
    let v = decide(&[cheap()], &i);
    assert_eq!(v.status, Status::Good, "the clock's cost is still good");
    assert_eq!(
        v.problems,
        vec![
            "NTP is not synchronised (no error bound: the kernel's maximum error is at its 16 s cap): the wall \
             clock drifts uncorrected; start chronyd or systemd-timesyncd (`timedatectl status` says which)"
                .to_string()
        ]
    );
    assert_eq!(v.exit_code(), 1, "a problem to act on");
    // Lost synchronisation a while ago: the error the kernel gives.
    let i = VerdictInputs {
        ntp: Some(ntp(STA_UNSYNC, 0, 2_500, 1_250_000)),
        ..inputs()
    };
    let p = &decide(&[cheap()], &i).problems[0];
    assert!(
        p.starts_with("NTP is not synchronised (the kernel's maximum error is 1.250 s, estimated error 2500 µs)"),
        "{p}"
    );
    // Not read (another root, not Linux): no problem claimed.
    assert!(decide(&[cheap()], &inputs()).problems.is_empty());
}

#[test]
fn exit_1_means_a_problem_listed_and_only_that() {
    // FAIR from clockscope's rule alone: nothing to act on, exit 0.
    let v = decide(&[clock("monotonic", 70.0, 99.99, 90)], &inputs());
    assert_eq!((v.status, v.problems.len(), v.exit_code()), (Status::Fair, 0, 0));
    // FAIR with a syscall per read (a Xen guest): a problem, exit 1.
    let i = VerdictInputs {
        current_clocksource: Some("xen".into()),
        ..inputs()
    };
    let v = decide(&[clock("monotonic", 90.0, 99.99, 150)], &i);
    assert_eq!(v.status, Status::Fair);
    assert!(v.problems[0].starts_with("the kernel clocksource 'xen' has no vDSO read"));
    assert_eq!(v.exit_code(), 1);
    // GOOD, nothing listed: exit 0.
    assert_eq!(decide(&[cheap()], &inputs()).exit_code(), 0);
}
