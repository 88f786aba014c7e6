//! The server's own timing settings, judged: `track_io_timing`,
//! `track_wal_io_timing`, auto_explain's `log_analyze` / `log_timing` /
//! `log_min_duration` / `sample_rate` (when auto_explain is loaded) and, on
//! PostgreSQL 19, `timing_clock_source`, each priced with the cost of one
//! clock read inferred on this server by the EXPLAIN runs
//! (`(TIMING ON - TIMING OFF) / clock reads`), and what to change printed as
//! exact `ALTER SYSTEM` lines. clockscope reads these settings (one query on
//! `pg_settings`) and never changes them.
//!
//! # Prices
//! - `track_io_timing`: two clock reads around every block read or write
//!   (bufmgr.c, `INSTR_TIME_SET_CURRENT` before and after `smgrread` /
//!   `smgrwrite`), set against an 8 kB read served from the OS page cache,
//!   the cheapest I/O PostgreSQL times ([`measure_page_cache_read`], measured
//!   on this machine: the server's own when it is local, an example when not).
//! - `track_wal_io_timing`: two reads around every WAL write and every WAL
//!   sync (xlog.c), set against the same reference (a WAL write copies as
//!   much into the page cache; a sync waits for the device, so the share is
//!   overstated for syncs).
//! - `auto_explain.log_timing` with `log_analyze`: EXPLAIN ANALYZE's per-node
//!   timing on every statement auto_explain samples (`sample_rate`), logged
//!   or not: auto_explain turns instrumentation on when the statement starts,
//!   before its duration is known, so `log_min_duration` limits only what is
//!   written to the log. Two reads per row per plan node.
//!
//! # Rules (each a named constant below)
//! - Timing I/O costs too much when two reads exceed [`IO_TIMING_MAX_SHARE`]
//!   of the page-cache read: recommend turning it off.
//! - `log_timing` with `log_analyze` is recommended off when
//!   `log_min_duration` is 0 (every statement timed per node and its plan
//!   logged: the classic footgun) or when the count(*) measured here ran
//!   [`LOG_TIMING_MAX_SLOWDOWN`] or more times slower with TIMING ON.
//! - `log_min_duration = 0` with `log_analyze` is recommended up to
//!   [`LOG_MIN_DURATION_EXAMPLE`].
//! - `timing_clock_source = system` set explicitly when the TSC measured
//!   cheaper here: recommend `auto` (PostgreSQL then uses the TSC only where it
//!   trusts it).
//!
//! Whether a change needs a restart comes from `pg_settings.context`
//! (`postmaster`: restart; `internal`: cannot be changed; else
//! `SELECT pg_reload_conf();`).

use crate::report::SourceResult;
use serde::Serialize;

/// The settings read from `pg_settings`, in report order.
pub const TIMING_SETTINGS: [&str; 7] = [
    "track_io_timing",
    "track_wal_io_timing",
    "timing_clock_source",
    "auto_explain.log_analyze",
    "auto_explain.log_timing",
    "auto_explain.log_min_duration",
    "auto_explain.sample_rate",
];

/// Clock reads per block I/O with `track_io_timing` (bufmgr.c: one before,
/// one after the read or write).
pub const READS_PER_IO: f64 = 2.0;
/// Clock reads per WAL write or sync with `track_wal_io_timing` (xlog.c).
pub const READS_PER_WAL_IO: f64 = 2.0;
/// Clock reads per row per plan node with EXPLAIN ANALYZE's timing
/// (InstrStartNode and InstrStopNode around each ExecProcNode call).
pub const READS_PER_ROW_PER_NODE: f64 = 2.0;
/// Timing an I/O is judged too costly above this share of an 8 kB read from
/// the page cache: 10%, the point where the timing itself becomes a visible
/// part of a cached read (a fast clock, 20-40 ns per read, costs 2-5% of a
/// 1.5-2 us cached read; a syscall clock such as hpet or xen, 500-700 ns per
/// read, costs more than the read).
pub const IO_TIMING_MAX_SHARE: f64 = 0.10;
/// `auto_explain.log_timing` is judged too costly at this slowdown of the
/// count(*) measured here, the same limit as `clockscope check`'s advice
/// (PostgreSQL 19 with the TSC measured 1.27x on its 10M-row benchmark).
pub const LOG_TIMING_MAX_SLOWDOWN: f64 = 1.3;
/// The `auto_explain.log_min_duration` recommended in place of 0: the value
/// in the configuration example of PostgreSQL's auto_explain documentation
/// (F.4.3); use your own slow-query threshold.
pub const LOG_MIN_DURATION_EXAMPLE: &str = "3s";
/// Bytes of one read in [`measure_page_cache_read`]: PostgreSQL's default
/// block size.
pub const PAGE_BYTES: usize = 8192;

/// Pages in the file [`measure_page_cache_read`] reads (2 MiB).
pub const PAGE_READ_PAGES: u64 = 256;

/// One row of `pg_settings`, as read (text escaped).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSetting {
    pub name: String,
    /// `pg_settings.setting`: the value in its base unit (ms for
    /// log_min_duration), what the rules compare.
    pub setting: String,
    /// `current_setting(name)`: as SHOW prints it (e.g. `250ms`, `auto (tsc)`).
    pub shown: String,
    /// `pg_settings.vartype`: a placeholder of an unloaded module is `string`.
    pub vartype: String,
    /// `pg_settings.source`: default, configuration file, database, user, ...
    pub source: String,
    /// `pg_settings.context`: postmaster, sighup, superuser, user, ...
    pub context: String,
}

/// The reference an I/O's timing cost is set against.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PageReadReference {
    /// Median ns of one 8 kB `pread` served from the OS page cache.
    pub ns: f64,
    /// Where the number comes from.
    pub source: String,
}

/// What one event of a setting costs in clock reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SettingCost {
    /// The event paid for: `block I/O`, `WAL write or sync`, `row per plan node`.
    pub per: String,
    pub clock_reads: f64,
    /// clock_reads x the per-read cost inferred on this server, ns.
    pub ns: f64,
    /// The reference's ns (an 8 kB read from the page cache), for I/O timing.
    pub reference_ns: Option<f64>,
    /// ns / reference_ns.
    pub share_of_reference: Option<f64>,
}

/// What to change, as the exact statements to run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Recommendation {
    /// `ALTER SYSTEM SET name = value;`
    pub alter_system: String,
    /// `SELECT pg_reload_conf();`, or null when the change needs a restart.
    pub then: Option<String>,
    pub needs_restart: bool,
    pub reason: String,
}

/// One setting, judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JudgedSetting {
    pub name: String,
    /// As SHOW prints it.
    pub value: String,
    /// `pg_settings.source` and `context`.
    pub source: String,
    pub context: String,
    /// The price of what the setting times, when it times something and a
    /// per-read cost was measured.
    pub cost: Option<SettingCost>,
    /// The judgement in words.
    pub judgement: String,
    pub recommendation: Option<Recommendation>,
}

/// The server's timing settings, judged, and what they were priced with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimingSettings {
    /// ns per clock read inferred on this server from EXPLAIN, null when the
    /// runs were noise-bound (TIMING ON not slower).
    pub per_read_ns: Option<f64>,
    /// The measured clock source that price comes from.
    pub priced_with_clock_source: Option<String>,
    /// The page-cache read the I/O costs are set against; null if not measured.
    pub page_read: Option<PageReadReference>,
    pub settings: Vec<JudgedSetting>,
}

/// auto_explain's `log_min_duration` as SHOW prints it, when the module is
/// loaded and on (>= 0): it then acts on this session's statements too.
pub fn auto_explain_on(settings: &[ServerSetting]) -> Option<&str> {
    settings
        .iter()
        .find(|s| s.name == "auto_explain.log_min_duration" && s.vartype == "integer")
        .filter(|s| s.setting.parse::<i64>().is_ok_and(|m| m >= 0))
        .map(|s| s.shown.as_str())
}

/// Reads 8 kB pages of a 2 MiB file in the temp dir over and over (after one
/// warming pass, so they come from the page cache) and returns the median
/// ns per read of `rounds` passes; None when the file cannot be made or read
/// (then the I/O costs have no reference). About 256 x `rounds` reads.
#[cfg(unix)]
pub fn measure_page_cache_read(rounds: usize) -> Option<f64> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    const PAGES: u64 = PAGE_READ_PAGES;
    let mut file = tempfile::tempfile().ok()?;
    let page = vec![0x5a_u8; PAGE_BYTES];
    for _ in 0..PAGES {
        file.write_all(&page).ok()?;
    }
    let mut buf = vec![0_u8; PAGE_BYTES];
    let pass = |buf: &mut [u8]| -> Option<std::time::Duration> {
        let start = std::time::Instant::now();
        for i in 0..PAGES {
            if file.read_at(buf, i * PAGE_BYTES as u64).ok()? != PAGE_BYTES {
                return None;
            }
        }
        Some(start.elapsed())
    };
    pass(&mut buf)?;
    let mut per_read: Vec<f64> = (0..rounds.max(1))
        .map(|_| pass(&mut buf).map(|d| d.as_nanos() as f64 / PAGES as f64))
        .collect::<Option<_>>()?;
    per_read.sort_by(f64::total_cmp);
    Some(per_read[per_read.len() / 2]).filter(|v| v.is_finite() && *v > 0.0)
}

/// No page-cache reference off unix.
#[cfg(not(unix))]
pub fn measure_page_cache_read(_rounds: usize) -> Option<f64> {
    None
}

/// The measured source a setting's reads are priced with: the one matching
/// the server's `timing_clock_source` (PostgreSQL 19), else the first
/// (before 19 the only one, `system`).
fn pricing_source<'a>(settings: &[ServerSetting], sources: &'a [SourceResult]) -> Option<&'a SourceResult> {
    let current = settings.iter().find(|s| s.name == "timing_clock_source");
    current
        .and_then(|c| {
            sources.iter().find(|r| {
                r.clock_source == c.shown
                    || ["tsc", "system"].iter().any(|w| {
                        crate::measure::current_is(&c.shown, w) && crate::measure::current_is(&r.clock_source, w)
                    })
            })
        })
        .or_else(|| sources.first())
}

fn usable(v: f64) -> Option<f64> {
    Some(v).filter(|v| v.is_finite() && *v > 0.0)
}

/// Whether a bool setting is on (`pg_settings.setting` says `on`).
fn is_on(s: &ServerSetting) -> bool {
    s.setting == "on"
}

/// Why ALTER SYSTEM may not be the whole story for a setting set elsewhere.
fn source_note(s: &ServerSetting) -> String {
    match s.source.as_str() {
        "database" | "user" | "database user" => format!(
            " (it is set by ALTER {}: ALTER SYSTEM does not override that; RESET it there too)",
            match s.source.as_str() {
                "database" => "DATABASE",
                "user" => "ROLE",
                _ => "ROLE ... IN DATABASE",
            }
        ),
        "client" => " (this session's client set it, in its connection options or PGOPTIONS: ALTER SYSTEM does \
                      not override that; change it there too)"
            .to_string(),
        _ => String::new(),
    }
}

fn recommend(s: &ServerSetting, value: &str, reason: String) -> Option<Recommendation> {
    match s.context.as_str() {
        // Fixed at build or initdb time: nothing to run.
        "internal" => None,
        context => {
            let needs_restart = context == "postmaster";
            Some(Recommendation {
                alter_system: format!("ALTER SYSTEM SET {} = {value};", s.name),
                then: (!needs_restart).then(|| "SELECT pg_reload_conf();".to_string()),
                needs_restart,
                reason: format!("{reason}{}", source_note(s)),
            })
        }
    }
}

fn judged(
    s: &ServerSetting,
    cost: Option<SettingCost>,
    judgement: String,
    rec: Option<Recommendation>,
) -> JudgedSetting {
    JudgedSetting {
        name: s.name.clone(),
        value: s.shown.clone(),
        source: s.source.clone(),
        context: s.context.clone(),
        cost,
        judgement,
        recommendation: rec,
    }
}

fn io_cost(per: &str, reads: f64, per_read: Option<f64>, page: Option<&PageReadReference>) -> Option<SettingCost> {
    let ns = reads * per_read?;
    let reference_ns = page.map(|p| p.ns).and_then(usable);
    Some(SettingCost {
        per: per.to_string(),
        clock_reads: reads,
        ns,
        reference_ns,
        share_of_reference: reference_ns.map(|r| ns / r),
    })
}

/// "48 ns per block I/O, 3.1% of an 8 kB page-cache read (1.55 us)".
fn io_cost_text(c: &SettingCost) -> String {
    match (c.reference_ns, c.share_of_reference) {
        (Some(r), Some(share)) => format!(
            "{:.0} ns per {} ({} clock reads), {:.1}% of an 8 kB read from the page cache ({:.2} us)",
            c.ns,
            c.per,
            c.clock_reads,
            share * 100.0,
            r / 1000.0
        ),
        _ => format!("{:.0} ns per {} ({} clock reads)", c.ns, c.per, c.clock_reads),
    }
}

fn judge_io_timing(
    s: &ServerSetting,
    per: &str,
    reads: f64,
    per_read: Option<f64>,
    page: Option<&PageReadReference>,
) -> JudgedSetting {
    let cost = io_cost(per, reads, per_read, page);
    let on = is_on(s);
    let Some(c) = &cost else {
        return judged(
            s,
            None,
            format!(
                "{}; not priced: no cost per clock read was measured (TIMING ON was not slower)",
                if on { "on" } else { "off" }
            ),
            None,
        );
    };
    let too_costly = c.share_of_reference.is_some_and(|share| share > IO_TIMING_MAX_SHARE);
    let limit = IO_TIMING_MAX_SHARE * 100.0;
    let (judgement, rec) = match (on, c.share_of_reference) {
        (true, Some(_)) if too_costly => (
            format!("on: {}, above the {limit:.0}% limit", io_cost_text(c)),
            recommend(
                s,
                "off",
                format!(
                    "timing each {} costs {}, more than {limit:.0}% of a cached 8 kB read",
                    c.per,
                    io_cost_text(c)
                ),
            ),
        ),
        (true, Some(_)) => (format!("on: {}, within the {limit:.0}% limit", io_cost_text(c)), None),
        (true, None) => (
            format!("on: {}; no page-cache reference to judge it", io_cost_text(c)),
            None,
        ),
        (false, _) => (
            format!(
                "off: no cost; turned on it would cost {}{}",
                io_cost_text(c),
                if too_costly { ", above the limit" } else { "" }
            ),
            None,
        ),
    };
    judged(s, cost, judgement, rec)
}

/// Judges the settings read from the server (`settings`, from
/// [`crate::session::PgSession::timing_settings`]) with the clock sources
/// measured on it and the page-cache reference.
pub fn judge(settings: &[ServerSetting], sources: &[SourceResult], page: Option<PageReadReference>) -> TimingSettings {
    let pricing = pricing_source(settings, sources);
    let per_read = pricing.and_then(|r| usable(r.overhead_per_read_ns));
    let slowdown = pricing.map(|r| r.slowdown).filter(|v| v.is_finite());
    let get = |name: &str| settings.iter().find(|s| s.name == name);
    let mut out = Vec::new();

    if let Some(s) = get("track_io_timing") {
        out.push(judge_io_timing(s, "block I/O", READS_PER_IO, per_read, page.as_ref()));
    }
    if let Some(s) = get("track_wal_io_timing") {
        out.push(judge_io_timing(
            s,
            "WAL write or sync",
            READS_PER_WAL_IO,
            per_read,
            page.as_ref(),
        ));
    }
    if let Some(s) = get("timing_clock_source") {
        out.push(judge_clock_source(s, sources));
    }

    // auto_explain's rows exist only when the module is loaded (a placeholder
    // for an unloaded module is a string, not a bool).
    let loaded = |name: &str| get(name).filter(|s| s.vartype != "string");
    if let (Some(analyze), Some(timing), Some(min_duration)) = (
        loaded("auto_explain.log_analyze"),
        loaded("auto_explain.log_timing"),
        loaded("auto_explain.log_min_duration"),
    ) {
        let sample_rate = loaded("auto_explain.sample_rate")
            .and_then(|s| s.setting.parse::<f64>().ok())
            .unwrap_or(1.0);
        let min_ms: Option<i64> = min_duration.setting.parse().ok();
        let enabled = min_ms.is_some_and(|m| m >= 0) && sample_rate > 0.0;
        let every_statement = min_ms == Some(0);
        let sampled = if sample_rate >= 1.0 {
            "every statement".to_string()
        } else {
            format!("{:.0}% of statements (sample_rate)", sample_rate * 100.0)
        };

        out.push(judged(
            analyze,
            None,
            match (is_on(analyze), enabled) {
                (true, true) => format!("on: {sampled} runs with EXPLAIN ANALYZE's instrumentation"),
                (true, false) => "on, but auto_explain is off (log_min_duration = -1 or sample_rate = 0)".into(),
                (false, _) => "off: plans are logged without actual times, nothing is timed".into(),
            },
            None,
        ));

        let timed = is_on(analyze) && is_on(timing) && enabled;
        let cost = per_read.filter(|_| timed).map(|p| SettingCost {
            per: "row per plan node".into(),
            clock_reads: READS_PER_ROW_PER_NODE,
            ns: READS_PER_ROW_PER_NODE * p,
            reference_ns: None,
            share_of_reference: None,
        });
        let measured = match (&cost, slowdown) {
            (Some(c), Some(x)) => format!(
                "{:.0} ns per row per plan node ({} clock reads); the count(*) measured here ran {x:.2}x as long \
                 with it",
                c.ns, c.clock_reads
            ),
            _ => "not priced: no cost per clock read was measured".into(),
        };
        let (judgement, rec) = if !timed {
            (
                format!(
                    "{}: nothing timed{}",
                    if is_on(timing) { "on" } else { "off" },
                    if is_on(timing) {
                        " (it needs log_analyze on and auto_explain enabled)"
                    } else {
                        ""
                    }
                ),
                None,
            )
        } else {
            let too_slow = slowdown.is_some_and(|x| x >= LOG_TIMING_MAX_SLOWDOWN);
            let why = if every_statement {
                Some(format!(
                    "with log_min_duration = 0 {sampled} is timed per plan node and logged: {measured}; row counts \
                     stay in the logged plans"
                ))
            } else if too_slow {
                Some(format!(
                    "{sampled} is timed per plan node, whatever log_min_duration (it only limits what is \
                     logged): {measured}, at or above {LOG_TIMING_MAX_SLOWDOWN}x"
                ))
            } else {
                None
            };
            match why {
                Some(why) => (format!("on: {measured}"), recommend(timing, "off", why)),
                None => (format!("on: {measured}, below {LOG_TIMING_MAX_SLOWDOWN}x"), None),
            }
        };
        out.push(judged(timing, cost, judgement, rec));

        let (judgement, rec) = if every_statement && is_on(analyze) {
            (
                format!("0: the plan of {sampled}, with actual rows (and times with log_timing), goes to the log"),
                recommend(
                    min_duration,
                    &format!("'{LOG_MIN_DURATION_EXAMPLE}'"),
                    format!(
                        "log_min_duration = 0 with log_analyze writes the analyzed plan of {sampled} to the log; \
                         '{LOG_MIN_DURATION_EXAMPLE}' is the example in PostgreSQL's auto_explain documentation, use \
                         your slow-query threshold (it limits the logging only: sampled statements are still \
                         instrumented)"
                    ),
                ),
            )
        } else {
            (
                match min_ms {
                    Some(m) if m < 0 => "-1: auto_explain logs nothing and instruments nothing".to_string(),
                    _ => format!("{}: plans of statements running longer are logged", min_duration.shown),
                },
                None,
            )
        };
        out.push(judged(min_duration, None, judgement, rec));
    }

    TimingSettings {
        per_read_ns: per_read,
        priced_with_clock_source: pricing.filter(|_| per_read.is_some()).map(|r| r.clock_source.clone()),
        page_read: page,
        settings: out,
    }
}

/// PostgreSQL 19's `timing_clock_source`: `system` set by hand while the TSC
/// measured cheaper here is worth changing to `auto`.
fn judge_clock_source(s: &ServerSetting, sources: &[SourceResult]) -> JudgedSetting {
    let cost_of = |want: &str| {
        sources
            .iter()
            .find(|r| crate::measure::current_is(&r.clock_source, want))
            .and_then(|r| usable(r.overhead_per_read_ns))
    };
    let (system, tsc) = (cost_of("system"), cost_of("tsc"));
    let measured = match (system, tsc) {
        (Some(sy), Some(t)) => format!("; measured here: system {sy:.1} ns, tsc {t:.1} ns per read"),
        (Some(sy), None) => format!("; measured here: system {sy:.1} ns per read"),
        (None, Some(t)) => format!("; measured here: tsc {t:.1} ns per read"),
        (None, None) => String::new(),
    };
    let (judgement, rec) = if s.setting == "system" {
        match (system, tsc) {
            (Some(sy), Some(t)) if t < sy => (
                format!("system, set explicitly{measured}"),
                recommend(
                    s,
                    "'auto'",
                    format!(
                        "the TSC read for {t:.1} ns against the system clock's {sy:.1} ns here; auto uses the TSC \
                         only where PostgreSQL trusts it"
                    ),
                ),
            ),
            _ => (format!("system, set explicitly{measured}"), None),
        }
    } else if crate::measure::current_is(&s.shown, "system") {
        (
            format!(
                "{}: PostgreSQL chose the system clock (it does not trust or cannot use this server's TSC){measured} (see \
                 `clockscope check` on the server)",
                s.shown
            ),
            None,
        )
    } else {
        (format!("{}: the TSC{measured}", s.shown), None)
    };
    judged(s, None, judgement, rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(name: &str, setting: &str, vartype: &str) -> ServerSetting {
        ServerSetting {
            name: name.into(),
            setting: setting.into(),
            shown: setting.into(),
            vartype: vartype.into(),
            source: "configuration file".into(),
            context: "superuser".into(),
        }
    }

    fn source(clock: &str, per_read_ns: f64, slowdown: f64) -> SourceResult {
        SourceResult {
            clock_source: clock.into(),
            how: String::new(),
            timing_off_ms: 10.0,
            timing_off_ms_min: 10.0,
            timing_off_ms_max: 10.0,
            timing_on_ms: 10.0 * slowdown,
            timing_on_ms_min: 10.0 * slowdown,
            timing_on_ms_max: 10.0 * slowdown,
            slowdown,
            overhead_per_row_ns: 2.0 * per_read_ns,
            overhead_per_read_ns: per_read_ns,
            clock_reads_per_run: 200_006,
            clock_reads_per_row: 2.0,
            predicted_clock: None,
            predicted_per_read_ns: None,
            predicted_overhead_per_row_ns: None,
            predicted_timing_on_ms: None,
            predicted_slowdown: None,
            observed_over_predicted: None,
            prediction_method: None,
            back_to_back_per_read_ns: None,
            back_to_back_observed_over_predicted: None,
            runs_timing_off_ms: vec![],
            runs_timing_on_ms: vec![],
            noise: crate::report::model::Noise {
                pairs: 6,
                slowdown_median: slowdown,
                slowdown_min: slowdown,
                slowdown_max: slowdown,
                slowdown_ci_low: Some(slowdown),
                slowdown_ci_high: Some(slowdown),
                slowdown_ci_coverage: Some(0.968_75),
                slowdown_ci_half_width: Some(0.0),
                target_half_width: 0.05,
                target_reached: true,
                stopped_by: crate::measure::StopReason::Precision,
                timing_off_variation: Some(0.0),
            },
        }
    }

    fn page(ns: f64) -> Option<PageReadReference> {
        Some(PageReadReference {
            ns,
            source: "test".into(),
        })
    }

    fn lines(t: &TimingSettings) -> Vec<&str> {
        t.settings
            .iter()
            .filter_map(|s| s.recommendation.as_ref())
            .map(|r| r.alter_system.as_str())
            .collect()
    }

    fn auto_explain(analyze: &str, timing: &str, min_ms: &str) -> Vec<ServerSetting> {
        vec![
            setting("auto_explain.log_analyze", analyze, "bool"),
            setting("auto_explain.log_timing", timing, "bool"),
            setting("auto_explain.log_min_duration", min_ms, "integer"),
            setting("auto_explain.sample_rate", "1", "real"),
        ]
    }

    #[test]
    fn io_timing_is_judged_against_the_page_cache_read() {
        let on = [setting("track_io_timing", "on", "bool")];
        // A fast clock: 2 x 25 ns of a 1500 ns read is 3.3%: fine.
        let t = judge(&on, &[source("system", 25.0, 1.5)], page(1500.0));
        assert!(lines(&t).is_empty());
        let c = t.settings[0].cost.as_ref().unwrap();
        assert_eq!(c.ns, 50.0);
        assert!((c.share_of_reference.unwrap() - 50.0 / 1500.0).abs() < 1e-12);
        assert!(
            t.settings[0].judgement.contains("within the 10% limit"),
            "{:?}",
            t.settings[0]
        );
        // A syscall clock (hpet): 2 x 600 ns is 80% of the read: turn it off.
        let t = judge(&on, &[source("system", 600.0, 20.0)], page(1500.0));
        assert_eq!(lines(&t), ["ALTER SYSTEM SET track_io_timing = off;"]);
        let r = t.settings[0].recommendation.as_ref().unwrap();
        assert_eq!(r.then.as_deref(), Some("SELECT pg_reload_conf();"));
        assert!(!r.needs_restart);
        // Off is never changed, only priced.
        let off = [setting("track_io_timing", "off", "bool")];
        let t = judge(&off, &[source("system", 600.0, 20.0)], page(1500.0));
        assert!(lines(&t).is_empty());
        assert!(
            t.settings[0].judgement.starts_with("off: no cost"),
            "{:?}",
            t.settings[0]
        );
    }

    #[test]
    fn without_a_price_nothing_is_recommended_for_io() {
        let on = [
            setting("track_io_timing", "on", "bool"),
            setting("track_wal_io_timing", "on", "bool"),
        ];
        // Noise-bound: TIMING ON was not slower.
        let t = judge(&on, &[source("system", -3.0, 0.99)], page(1500.0));
        assert_eq!(t.per_read_ns, None);
        assert!(lines(&t).is_empty());
        assert!(t.settings.iter().all(|s| s.cost.is_none()));
        // No page-cache reference: priced, not judged.
        let t = judge(&on, &[source("system", 600.0, 20.0)], None);
        assert!(lines(&t).is_empty());
        assert_eq!(t.settings[1].cost.as_ref().unwrap().per, "WAL write or sync");
    }

    #[test]
    fn log_timing_with_log_min_duration_zero_is_the_footgun() {
        let s = auto_explain("on", "on", "0");
        // Even with a fast clock and a small slowdown.
        let t = judge(&s, &[source("system", 20.0, 1.1)], page(1500.0));
        assert_eq!(
            lines(&t),
            [
                "ALTER SYSTEM SET auto_explain.log_timing = off;",
                "ALTER SYSTEM SET auto_explain.log_min_duration = '3s';"
            ]
        );
        let timing = t.settings.iter().find(|s| s.name == "auto_explain.log_timing").unwrap();
        assert_eq!(timing.cost.as_ref().unwrap().ns, 40.0);
        assert!(timing
            .recommendation
            .as_ref()
            .unwrap()
            .reason
            .contains("log_min_duration = 0"));
    }

    #[test]
    fn log_timing_with_a_threshold_is_judged_on_the_measured_slowdown() {
        let s = auto_explain("on", "on", "250");
        let t = judge(&s, &[source("system", 20.0, 1.2)], None);
        assert!(lines(&t).is_empty(), "{t:?}");
        let t = judge(&s, &[source("system", 60.0, 2.4)], None);
        assert_eq!(lines(&t), ["ALTER SYSTEM SET auto_explain.log_timing = off;"]);
        assert!(t.settings[1]
            .recommendation
            .as_ref()
            .unwrap()
            .reason
            .contains("whatever log_min_duration"));
        // Timing without log_analyze, or auto_explain disabled, costs nothing.
        for s in [auto_explain("off", "on", "0"), auto_explain("on", "on", "-1")] {
            let t = judge(&s, &[source("system", 600.0, 20.0)], None);
            assert!(lines(&t).is_empty(), "{t:?}");
            assert!(t.settings.iter().all(|s| s.cost.is_none()));
        }
    }

    #[test]
    fn a_placeholder_for_an_unloaded_auto_explain_is_not_judged() {
        let s = vec![
            setting("auto_explain.log_analyze", "on", "string"),
            setting("auto_explain.log_timing", "on", "string"),
            setting("auto_explain.log_min_duration", "0", "string"),
        ];
        assert!(judge(&s, &[source("system", 600.0, 20.0)], None).settings.is_empty());
    }

    #[test]
    fn restart_and_source_come_from_pg_settings() {
        let mut s = setting("track_io_timing", "on", "bool");
        s.context = "postmaster".into();
        s.source = "database".into();
        let t = judge(&[s], &[source("system", 600.0, 20.0)], page(1000.0));
        let r = t.settings[0].recommendation.as_ref().unwrap();
        assert!(r.needs_restart);
        assert_eq!(r.then, None);
        assert!(r.reason.contains("ALTER DATABASE"), "{}", r.reason);
        let mut s = setting("track_io_timing", "on", "bool");
        s.context = "internal".into();
        assert!(lines(&judge(&[s], &[source("system", 600.0, 20.0)], page(1000.0))).is_empty());
    }

    #[test]
    fn clock_source_system_is_moved_to_auto_only_when_the_tsc_was_cheaper() {
        let sys = [setting("timing_clock_source", "system", "enum")];
        let both = [source("system", 30.0, 2.0), source("tsc", 12.0, 1.4)];
        let t = judge(&sys, &both, None);
        assert_eq!(lines(&t), ["ALTER SYSTEM SET timing_clock_source = 'auto';"]);
        // Priced with the source the server uses.
        assert_eq!(t.priced_with_clock_source.as_deref(), Some("system"));
        let slower_tsc = [source("system", 30.0, 2.0), source("tsc", 40.0, 2.5)];
        assert!(lines(&judge(&sys, &slower_tsc, None)).is_empty());
        let auto = [setting("timing_clock_source", "auto (tsc)", "enum")];
        let t = judge(&auto, &both, None);
        assert!(lines(&t).is_empty());
        assert_eq!(t.priced_with_clock_source.as_deref(), Some("tsc"));
        assert_eq!(t.per_read_ns, Some(12.0));
        let auto_system = [setting("timing_clock_source", "auto (system)", "enum")];
        let t = judge(&auto_system, &both, None);
        assert!(lines(&t).is_empty());
        assert!(t.settings[0].judgement.contains("chose the system clock"));
    }

    #[test]
    fn a_page_cache_read_is_measured() {
        if cfg!(unix) {
            let ns = measure_page_cache_read(3).expect("a temp file can be read");
            assert!(ns.is_finite() && ns > 0.0, "{ns}");
        }
    }
}
