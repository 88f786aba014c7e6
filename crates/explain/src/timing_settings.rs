//! The server's own timing settings, judged: `track_io_timing`,
//! `track_wal_io_timing`, auto_explain's `log_analyze` / `log_timing` /
//! `log_min_duration` / `sample_rate` (when auto_explain is loaded) and, on
//! PostgreSQL 19, `timing_clock_source`, each priced with the read PostgreSQL
//! makes for it ([`price`]), and what to change printed as exact `ALTER
//! SYSTEM` lines. clockscope reads these settings (one query on
//! `pg_settings`) and never changes them.
//!
//! # Prices
//! - `track_io_timing`: two `INSTR_TIME_SET_CURRENT` around every block read
//!   or write (`pgstat_prepare_io_time` / `pgstat_count_io_op_time`): RDTSCP
//!   under `timing_clock_source = tsc`, the system clock otherwise, at this
//!   machine's back-to-back read cost (`price::io_read_price`, as `clockscope
//!   check` prices it), set against an 8 kB read served from the OS page
//!   cache, the cheapest I/O PostgreSQL times (`measure_page_cache_read`,
//!   measured on this machine: the server's own when it is local, an example
//!   when not).
//! - `track_wal_io_timing`: two reads around every WAL write and every WAL
//!   sync (xlog.c), set against the same reference (a WAL write copies as
//!   much into the page cache; a sync waits for the device, so the share is
//!   overstated for syncs).
//! - `auto_explain.log_timing` with `log_analyze`: EXPLAIN ANALYZE's per-node
//!   timing on every statement auto_explain samples (`sample_rate`), logged
//!   or not: auto_explain turns instrumentation on when the statement starts,
//!   before its duration is known, so `log_min_duration` limits only what is
//!   written to the log. Two fast reads per row per plan node, priced with
//!   EXPLAIN's own cost on the server (`price::explain_read_price`).
//!
//! # Rules (each a named constant below)
//! A change is recommended only when the measured cost's 95% interval lies
//! wholly on the far side of the threshold; a cost whose ON-OFF difference is
//! inside the noise is "not resolved" and changes nothing.
//! - Timing I/O costs too much when two reads exceed [`IO_TIMING_MAX_SHARE`]
//!   of the page-cache read (the interval's low end: the reads' low over the
//!   page read's high): recommend turning it off.
//! - `log_timing` with `log_analyze` is recommended off when the count(*)
//!   measured here ran [`LOG_TIMING_MAX_SLOWDOWN`] or more times slower with
//!   TIMING ON (the slowdown's interval at or above it).
//! - `log_min_duration = 0` with `log_analyze` (every sampled statement's
//!   analyzed plan goes to the log: a rule about the log, not a measured
//!   cost) is recommended up to `LOG_MIN_DURATION_EXAMPLE`.
//! - `timing_clock_source = system` set explicitly when the TSC measured
//!   cheaper here (its per-read interval wholly below the system clock's):
//!   recommend `auto` (PostgreSQL then uses the TSC only where it trusts it).
//!
//! Whether a change needs a restart comes from `pg_settings.context`
//! (`postmaster`: restart; `internal`: cannot be changed; else
//! `SELECT pg_reload_conf();`).

pub mod model;
pub mod price;

use crate::clockcost::MachineClocks;
use crate::report::model::SourceResult;
pub(crate) use model::PAGE_READ_PAGES;
pub use model::{
    JudgedSetting, PageReadReference, ReadPrice, Recommendation, ServerSetting, SettingCost, TimingSettings,
};
pub(crate) use price::measure_page_cache_read;

// One judge, one set of constants, shared with `clockscope check`.
pub(crate) use clockscope_pg::predict::settings::READS_PER_ROW_PER_NODE;
use clockscope_pg::predict::settings::{
    self as judge_of, Estimate, IoSetting, SettingDecision, Verdict, TRACK_IO_TIMING, TRACK_WAL_IO_TIMING,
};
pub use clockscope_pg::predict::settings::{IO_TIMING_MAX_SHARE, LOG_TIMING_MAX_SLOWDOWN, READS_PER_IO};
/// The `auto_explain.log_min_duration` recommended in place of 0: the value
/// in the configuration example of PostgreSQL's auto_explain documentation
/// (F.4.3); use your own slow-query threshold.
pub(crate) const LOG_MIN_DURATION_EXAMPLE: &str = "3s";
/// auto_explain's `log_min_duration` as SHOW prints it, when the module is
/// loaded and on (>= 0): it then acts on this session's statements too.
pub(crate) fn auto_explain_on(settings: &[ServerSetting]) -> Option<&str> {
    settings
        .iter()
        .find(|s| s.name == "auto_explain.log_min_duration" && s.vartype == "integer")
        .filter(|s| s.setting.parse::<i64>().is_ok_and(|m| m >= 0))
        .map(|s| s.shown.as_str())
}

/// Whether a bool setting is on (`pg_settings.setting` says `on`).
fn is_on(s: &ServerSetting) -> bool {
    s.setting == "on"
}

/// What the judgement says to do: the recommended value, keep it (a
/// resolved verdict with nothing to change), or no change (not resolved).
fn advice(d: &SettingDecision, recommended: bool) -> String {
    match (d.verdict, recommended) {
        (Verdict::Cheap | Verdict::Costly, true) => {
            format!(": turn it {}", d.recommended_value.as_deref().unwrap_or("?"))
        }
        (Verdict::Cheap | Verdict::Costly, false) => ": keep it".to_string(),
        _ => ": no change recommended".to_string(),
    }
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

fn decided(
    s: &ServerSetting,
    cost: Option<SettingCost>,
    judgement: String,
    rec: Option<Recommendation>,
    decision: Option<SettingDecision>,
) -> JudgedSetting {
    JudgedSetting {
        decision,
        name: s.name.clone(),
        value: s.shown.clone(),
        source: s.source.clone(),
        context: s.context.clone(),
        cost,
        judgement,
        recommendation: rec,
    }
}

fn estimate(p: &ReadPrice) -> Estimate {
    Estimate::new(p.ns, p.low_ns, p.high_ns)
}

fn page_estimate(p: &PageReadReference) -> Estimate {
    Estimate::new(p.ns, p.low_ns, p.high_ns)
}

/// The cost's JSON: the reads' ns and the share of the page-cache read with
/// the interval the judge set against the limit.
fn io_cost(
    per: &str,
    reads: f64,
    price: &ReadPrice,
    page: Option<&PageReadReference>,
    d: &SettingDecision,
) -> SettingCost {
    let price = estimate(price);
    let share = d.estimate.filter(|_| d.measure == "share_of_page_cache_read");
    SettingCost {
        per: per.to_string(),
        clock_reads: reads,
        ns: reads * price.value,
        low_ns: price.low.map(|v| reads * v),
        high_ns: price.high.map(|v| reads * v),
        reference_ns: page.map(|p| p.ns).filter(|v| v.is_finite() && *v > 0.0),
        share_of_reference: share.map(|e| e.value),
        share_low: share.and_then(|e| e.low),
        share_high: share.and_then(|e| e.high),
    }
}

/// track_io_timing / track_wal_io_timing, decided by the one judge
/// ([`judge_of::io_timing`]) in both directions: off and cheap, turn it on;
/// on and costly, turn it off; otherwise no change.
fn judge_io_timing(
    s: &ServerSetting,
    setting: &IoSetting,
    price: Result<&ReadPrice, &str>,
    page: Option<&PageReadReference>,
) -> JudgedSetting {
    let state = if is_on(s) { "on" } else { "off" };
    let IoSetting { per, reads, .. } = *setting;
    let price = match price {
        Ok(p) => p,
        Err(why) => {
            let d = judge_of::io_timing(setting, None, page.map(page_estimate));
            return decided(s, None, format!("{state}; not priced: {why}"), None, Some(d));
        }
    };
    let d = judge_of::io_timing(setting, Some(estimate(price)), page.map(page_estimate));
    let c = io_cost(per, reads, price, page, &d);
    let rec = d.change_from(&s.setting).and_then(|value| {
        let why = match d.verdict {
            Verdict::Cheap => format!("timing each {per} is cheap here: {}", d.text),
            _ => format!("timing each {per} costs too much here: {}", d.text),
        };
        recommend(s, value, why)
    });
    let advice = advice(&d, rec.is_some());
    let judgement = format!("{state}: {}: {}{advice}", d.verdict.word(), d.text);
    decided(s, Some(c), judgement, rec, Some(d))
}

/// Judges the settings read from the server (`settings`, from
/// [`crate::session::PgSession::timing_settings`]) with the clock sources
/// measured on it, this machine's read costs and the page-cache reference.
pub fn judge(
    settings: &[ServerSetting],
    sources: &[SourceResult],
    machine: Option<&MachineClocks>,
    page: Option<PageReadReference>,
) -> TimingSettings {
    let io = price::io_read_price(settings, machine);
    let explain = price::explain_read_price(settings, sources);
    let get = |name: &str| settings.iter().find(|s| s.name == name);
    let mut out = Vec::new();
    let io_ref = io.as_ref().map_err(String::as_str);
    for io_setting in [&TRACK_IO_TIMING, &TRACK_WAL_IO_TIMING] {
        out.extend(get(io_setting.name).map(|s| judge_io_timing(s, io_setting, io_ref, page.as_ref())));
    }
    out.extend(get("timing_clock_source").map(|s| judge_clock_source(s, sources)));
    judge_auto_explain(
        settings,
        explain.as_ref().map(|(p, r)| (p, *r)).map_err(String::as_str),
        &mut out,
    );
    fn status<T>(r: &Result<T, String>) -> String {
        r.as_ref().err().cloned().unwrap_or_else(|| "priced".to_string())
    }
    TimingSettings {
        io_read_status: status(&io),
        explain_read_status: status(&explain),
        io_read: io.ok(),
        explain_read: explain.ok().map(|(p, _)| p),
        page_read: page,
        settings: out,
    }
}

/// auto_explain's rows, when the module is loaded (a placeholder for an
/// unloaded module is a string, not a bool), judged with EXPLAIN's price on
/// this server and the slowdown measured with it.
fn judge_auto_explain(
    settings: &[ServerSetting],
    explain: Result<(&ReadPrice, &SourceResult), &str>,
    out: &mut Vec<JudgedSetting>,
) {
    let loaded = |name: &str| {
        settings
            .iter()
            .find(|s| s.name == name)
            .filter(|s| s.vartype != "string")
    };
    let (Some(analyze), Some(timing), Some(min_duration)) = (
        loaded("auto_explain.log_analyze"),
        loaded("auto_explain.log_timing"),
        loaded("auto_explain.log_min_duration"),
    ) else {
        return;
    };
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

    out.push(decided(
        analyze,
        None,
        match (is_on(analyze), enabled) {
            (true, true) => format!("on: {sampled} runs with EXPLAIN ANALYZE's instrumentation"),
            (true, false) => "on, but auto_explain is off (log_min_duration = -1 or sample_rate = 0)".into(),
            (false, _) => "off: plans are logged without actual times, nothing is timed".into(),
        },
        None,
        None,
    ));
    out.push(judge_log_timing(
        timing,
        is_on(analyze) && enabled,
        every_statement,
        &sampled,
        explain,
    ));

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
    out.push(decided(min_duration, None, judgement, rec, None));
}

/// `auto_explain.log_timing`, decided by the one judge
/// ([`judge_of::log_timing`]) on the count(*) slowdown measured here, in
/// both directions: on and costly, turn it off; off and cheap, turn it on
/// (only where it would time something: log_analyze on, auto_explain on).
fn judge_log_timing(
    timing: &ServerSetting,
    analyzed: bool,
    every_statement: bool,
    sampled: &str,
    explain: Result<(&ReadPrice, &SourceResult), &str>,
) -> JudgedSetting {
    let state = if is_on(timing) { "on" } else { "off" };
    if !analyzed {
        let needs = if is_on(timing) {
            " (it needs log_analyze on and auto_explain enabled)"
        } else {
            ""
        };
        return decided(timing, None, format!("{state}: nothing timed{needs}"), None, None);
    }
    let (price, source) = match explain {
        Ok(p) => p,
        Err(why) => {
            let judgement = format!("{state}: {why}; no change recommended");
            return decided(timing, None, judgement, None, Some(judge_of::log_timing(None)));
        }
    };
    let cost = SettingCost {
        per: "row per plan node".into(),
        clock_reads: READS_PER_ROW_PER_NODE,
        ns: READS_PER_ROW_PER_NODE * price.ns,
        low_ns: price.low_ns.map(|v| READS_PER_ROW_PER_NODE * v),
        high_ns: price.high_ns.map(|v| READS_PER_ROW_PER_NODE * v),
        ..SettingCost::default()
    };
    let n = &source.noise;
    let d = judge_of::log_timing(Some(Estimate::new(
        source.slowdown,
        n.slowdown_ci_low,
        n.slowdown_ci_high,
    )));
    let measured = format!(
        "{:.0} ns per row per plan node ({} clock reads); the {}",
        cost.ns, cost.clock_reads, d.text
    );
    let footgun = if every_statement && is_on(timing) {
        format!("; with log_min_duration = 0 {sampled} is timed per plan node and logged")
    } else {
        String::new()
    };
    let rec = d.change_from(&timing.setting).and_then(|value| {
        let why = if d.verdict == Verdict::Costly {
            format!(
                "{sampled} is timed per plan node, whatever log_min_duration (it only limits what is logged): \
                 {measured}"
            )
        } else {
            format!("per-node times in the logged plans are cheap here: {measured}")
        };
        recommend(timing, value, why)
    });
    let advice = advice(&d, rec.is_some());
    let judgement = format!("{state}: {}: {measured}{footgun}{advice}", d.verdict.word());
    decided(timing, Some(cost), judgement, rec, Some(d))
}

/// PostgreSQL 19's `timing_clock_source`, decided by the one judge
/// ([`judge_of::timing_clock_source`]) with what the server shows: whether
/// it reads the TSC here (a `tsc` source was measured on it, or it shows
/// one), what `auto` picks (`auto (tsc)`), and the two clocks' reads
/// measured on it (clockscope's trust in the TSC is `clockscope check`'s, on
/// the server's machine).
fn judge_clock_source(s: &ServerSetting, sources: &[SourceResult]) -> JudgedSetting {
    let found = |want: &str| {
        sources
            .iter()
            .find(|r| crate::clock_source::current_is(&r.clock_source, want))
    };
    let price_of = |want: &str| found(want).map(price::observed_read_price);
    let (system, tsc) = (price_of("system"), price_of("tsc"));
    let words = |p: &Option<Result<ReadPrice, String>>| match p {
        Some(Ok(p)) => Some(p.text()),
        Some(Err(_)) => Some("not resolved".to_string()),
        None => None,
    };
    let measured = match (words(&system), words(&tsc)) {
        (Some(sy), Some(t)) => format!("; measured here per read: system {sy}, tsc {t}"),
        (Some(sy), None) => format!("; measured here per read: system {sy}"),
        (None, Some(t)) => format!("; measured here per read: tsc {t}"),
        (None, None) => String::new(),
    };
    let shows_tsc = crate::clock_source::current_is(&s.shown, "tsc");
    let auto = s.setting == "auto";
    let facts = judge_of::ClockSourceFacts {
        postgresql_reads_counter: found("tsc").is_some() || shows_tsc,
        auto_picks_tsc: auto.then_some(shows_tsc),
        tsc_trusted: None,
        tsc_reason: None,
        system_read_ns: system.as_ref().and_then(|p| p.as_ref().ok()).map(estimate),
        tsc_read_ns: tsc.as_ref().and_then(|p| p.as_ref().ok()).map(estimate),
    };
    let d = judge_of::timing_clock_source(&facts);
    let rec = d
        .change_from(&s.setting)
        .and_then(|value| recommend(s, &format!("'{value}'"), d.text.clone()));
    let what = if s.setting == "system" {
        "system, set explicitly".to_string()
    } else if crate::clock_source::current_is(&s.shown, "system") {
        format!(
            "{}: PostgreSQL chose the system clock (it does not trust or cannot use this server's TSC)",
            s.shown
        )
    } else {
        format!("{}: the TSC", s.shown)
    };
    let judgement = format!(
        "{what}{measured}; {}: {} (clockscope's trust in the TSC: `clockscope check` on the server)",
        d.verdict.word(),
        d.text
    );
    decided(s, None, judgement, rec, Some(d))
}

#[cfg(test)]
mod tests;
