//! The measuring procedure over a scripted server: which clock sources are
//! measured on PostgreSQL 15 and 19, what a role without the right to SET
//! timing_clock_source gets, runs alternating, and Ctrl-C.

use clockscope::Control;
use clockscope_explain::measure::{run_sources, ExplainServer, Slot, Step, StopReason, SCHEDULE};
use clockscope_explain::{Error, Options};

use crate::common;
use common::data;

/// A server that answers from the hand-written PostgreSQL 19 plans, with
/// "Execution Time" replaced by a counter so every run is distinguishable:
/// TIMING OFF takes the call's number in ms, TIMING ON twice its number, so
/// every balanced block's slowdown is exactly 2 ((2(n+1) + 2(n+2)) /
/// (n + n+3)) and the noise control stops when the A/A control has its 6
/// blocks: 36 pairs, 24 of them measured (or at `--runs` when that is more).
struct Scripted {
    off: String,
    on: String,
    /// Result of `SET timing_clock_source` per value: `None` = allowed,
    /// `Some(sqlstate)` = refused with that SQLSTATE.
    refuse: fn(&str) -> Option<&'static str>,
    show: &'static str,
    current: String,
    calls: Vec<String>,
    next_ms: f64,
}

impl Scripted {
    fn new(refuse: fn(&str) -> Option<&'static str>, show: &'static str) -> Scripted {
        Scripted {
            off: data("pg19_count_100k_timing_off.json"),
            on: data("pg19_count_100k_timing_on.json"),
            refuse,
            show,
            current: show.to_string(),
            calls: Vec::new(),
            next_ms: 1.0,
        }
    }
}

fn with_time(plan: &str, ms: f64) -> String {
    let start = plan.find("\"Execution Time\": ").unwrap() + "\"Execution Time\": ".len();
    let end = start + plan[start..].find(|c: char| c != '.' && !c.is_ascii_digit()).unwrap();
    format!("{}{ms:.3}{}", &plan[..start], &plan[end..])
}

impl ExplainServer for Scripted {
    fn explain(&mut self, timing: bool) -> Result<String, Error> {
        self.calls
            .push(format!("{} {}", if timing { "on" } else { "off" }, self.current));
        let ms = if timing { 2.0 * self.next_ms } else { self.next_ms };
        self.next_ms += 1.0;
        Ok(with_time(if timing { &self.on } else { &self.off }, ms))
    }
    fn set_clock_source(&mut self, value: &str) -> Result<(), Error> {
        self.calls.push(format!("SET {value}"));
        match (self.refuse)(value) {
            None => {
                self.current = value.to_string();
                Ok(())
            }
            Some(state) => Err(Error::Server {
                step: format!("SET timing_clock_source = '{value}'"),
                message: "refused".into(),
                sqlstate: Some(state.into()),
            }),
        }
    }
    fn show_clock_source(&mut self) -> Result<String, Error> {
        Ok(self.current.clone())
    }
    fn reset_clock_source(&mut self) -> Result<(), Error> {
        self.calls.push("RESET".into());
        self.current = self.show.to_string();
        Ok(())
    }
}

fn opts(runs: u32) -> Options {
    Options {
        rows: 100_000,
        runs,
        ..Options::new(None)
    }
}

fn go(server: &mut Scripted, pg19: bool, runs: u32) -> Result<clockscope_explain::measure::ServerRuns, Error> {
    run_sources(server, pg19, &opts(runs), &mut |_| Control::Continue)
}

/// The calls of a warm-up pair and `slots` pairs of the schedule on
/// `source`: measured pairs OFF ON, ON OFF, ..., A/A pairs OFF OFF.
fn alternating(source: &str, slots: usize) -> Vec<String> {
    let (off, on) = (format!("off {source}"), format!("on {source}"));
    let mut calls = vec![off.clone(), on.clone()];
    for slot in SCHEDULE.iter().cycle().take(slots) {
        calls.extend(match slot {
            Slot::Effect { on_first: false } => [off.clone(), on.clone()],
            Slot::Effect { on_first: true } => [on.clone(), off.clone()],
            Slot::Control { .. } => [off.clone(), off.clone()],
        });
    }
    calls
}

#[test]
fn before_postgresql_19_the_system_clock_is_measured_alternating() {
    let mut s = Scripted::new(|_| unreachable!("no SET before PostgreSQL 19"), "n/a");
    let out = go(&mut s, false, 2).unwrap();
    assert_eq!(out.sources.len(), 1);
    let src = &out.sources[0];
    assert_eq!(src.clock_source, "system");
    // Warm-up (1, 4), then pairs in turn OFF ON (3, 8) and ON OFF (10, 6),
    // the A/A pairs after every two blocks: --runs 2 is a minimum, the
    // control's interval needs 6 blocks, and every block's slowdown is 2.0.
    assert_eq!(&src.timing_off_ms[..4], [3.0, 6.0, 7.0, 10.0]);
    assert_eq!(&src.timing_on_ms[..4], [8.0, 10.0, 16.0, 18.0]);
    assert_eq!(src.control.a_ms[..2], [11.0, 14.0]);
    assert_eq!(src.control.b_ms[..2], [12.0, 13.0]);
    assert_eq!((src.timing_on_ms.len(), src.control.a_ms.len()), (24, 12));
    assert_eq!(src.stopped_by, StopReason::Precision);
    assert_eq!(src.clock_reads_per_run, 200_006);
    assert_eq!(s.calls, alternating("n/a", 36));
    assert!(out.skipped.is_empty() && !out.interrupted);
}

#[test]
fn a_superuser_on_postgresql_19_measures_system_and_tsc() {
    let mut s = Scripted::new(|_| None, "auto (tsc)");
    let out = go(&mut s, true, 1).unwrap();
    let names: Vec<&str> = out.sources.iter().map(|r| r.clock_source.as_str()).collect();
    assert_eq!(names, ["system", "tsc"]);
    assert!(out.sources[0].how.contains("SET timing_clock_source = 'system'"));
    let mut want = vec!["SET system".to_string()];
    want.extend(alternating("system", 36));
    want.push("SET tsc".into());
    want.extend(alternating("tsc", 36));
    want.push("RESET".into());
    assert_eq!(s.calls, want);
}

#[test]
fn a_role_that_may_not_set_it_measures_the_current_source_and_says_why() {
    let mut s = Scripted::new(|_| Some("42501"), "auto (tsc)");
    let out = go(&mut s, true, 1).unwrap();
    assert_eq!(out.sources.len(), 1);
    assert_eq!(out.sources[0].clock_source, "auto (tsc)");
    assert!(out.sources[0].how.contains("SET refused"), "{}", out.sources[0].how);
    // The current source is tsc, so only system is reported as not measured,
    // and that one line says why.
    assert_eq!(out.skipped.len(), 1);
    assert_eq!(out.skipped[0].clock_source, "system");
    assert!(
        out.skipped[0].reason.contains("superuser only"),
        "{}",
        out.skipped[0].reason
    );
    assert!(
        out.skipped[0].reason.contains("SQLSTATE 42501"),
        "{}",
        out.skipped[0].reason
    );
    assert!(!s.calls.contains(&"RESET".to_string()));
}

#[test]
fn a_server_without_a_usable_tsc_skips_it_with_the_servers_reason() {
    let mut s = Scripted::new(|v| (v == "tsc").then_some("22023"), "auto (system)");
    let out = go(&mut s, true, 1).unwrap();
    let names: Vec<&str> = out.sources.iter().map(|r| r.clock_source.as_str()).collect();
    assert_eq!(names, ["system"]);
    assert_eq!(out.skipped[0].clock_source, "tsc");
    assert!(out.skipped[0].reason.contains("(SQLSTATE 22023)"));
    assert_eq!(s.calls.last().unwrap(), "RESET");
}

#[test]
fn a_broken_connection_while_setting_is_an_error() {
    struct Broken(Scripted);
    impl ExplainServer for Broken {
        fn explain(&mut self, t: bool) -> Result<String, Error> {
            self.0.explain(t)
        }
        fn set_clock_source(&mut self, value: &str) -> Result<(), Error> {
            Err(Error::Server {
                step: format!("SET timing_clock_source = '{value}'"),
                message: "the server closed the connection".into(),
                sqlstate: None,
            })
        }
        fn show_clock_source(&mut self) -> Result<String, Error> {
            self.0.show_clock_source()
        }
        fn reset_clock_source(&mut self) -> Result<(), Error> {
            self.0.reset_clock_source()
        }
    }
    let mut b = Broken(Scripted::new(|_| None, "auto (tsc)"));
    let err = run_sources(&mut b, true, &opts(1), &mut |_| Control::Continue).unwrap_err();
    assert!(err.to_string().contains("closed the connection"), "{err}");
}

#[test]
fn a_plan_that_did_not_scan_the_table_is_an_error() {
    let mut s = Scripted::new(|_| None, "n/a");
    let o = Options { rows: 5, ..opts(1) };
    let err = run_sources(&mut s, false, &o, &mut |_| Control::Continue).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unexpected EXPLAIN output: the scan returned 100000 rows, the TEMP table has 5"
    );
}

#[test]
fn ctrl_c_keeps_the_completed_pairs() {
    let mut s = Scripted::new(|_| None, "n/a");
    let mut seen = 0;
    // Stop when asked for the second pair's TIMING ON run.
    let mut observer = |step: &Step| {
        seen += 1;
        match step {
            Step::Explain {
                run: 2, timing: true, ..
            } => Control::Stop,
            _ => Control::Continue,
        }
    };
    let out = run_sources(&mut s, false, &opts(5), &mut observer).unwrap();
    assert!(out.interrupted);
    assert_eq!(out.sources[0].timing_off_ms.len(), 1);
    assert_eq!(out.sources[0].timing_on_ms.len(), 1);
    // Warm-up 2, pair 1 2, and pair 2 runs TIMING ON first.
    assert_eq!(seen, 5);

    // Stopped before any pair: nothing to report.
    let mut s = Scripted::new(|_| None, "n/a");
    let err = run_sources(&mut s, false, &opts(5), &mut |_| Control::Stop).unwrap_err();
    assert!(matches!(err, Error::Interrupted));
}
