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

/// Clock reads per block I/O with `track_io_timing` (bufmgr.c: one before,
/// one after the read or write).
pub const READS_PER_IO: f64 = 2.0;
/// Clock reads per WAL write or sync with `track_wal_io_timing` (xlog.c).
pub(crate) const READS_PER_WAL_IO: f64 = 2.0;
/// Clock reads per row per plan node with EXPLAIN ANALYZE's timing
/// (InstrStartNode and InstrStopNode around each ExecProcNode call).
pub(crate) const READS_PER_ROW_PER_NODE: f64 = 2.0;
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

fn io_cost(per: &str, reads: f64, price: &ReadPrice, page: Option<&PageReadReference>) -> SettingCost {
    let ns = reads * price.ns;
    let low_ns = price.low_ns.map(|v| reads * v);
    let high_ns = price.high_ns.map(|v| reads * v);
    let page = page.filter(|p| p.ns.is_finite() && p.ns > 0.0);
    let share = |num: Option<f64>, den: Option<f64>| num.zip(den).map(|(n, d)| n / d).filter(|v| v.is_finite());
    SettingCost {
        per: per.to_string(),
        clock_reads: reads,
        ns,
        low_ns,
        high_ns,
        reference_ns: page.map(|p| p.ns),
        share_of_reference: page.map(|p| ns / p.ns),
        share_low: share(low_ns, page.and_then(|p| p.high_ns)),
        share_high: share(high_ns, page.and_then(|p| p.low_ns)),
    }
}

/// "48 ns per block I/O (2 clock reads), 3.1% of an 8 kB read from the page
/// cache (1.55 us; 95% interval 2.9% to 3.4%)".
fn io_cost_text(c: &SettingCost) -> String {
    let interval = match (c.share_low, c.share_high) {
        (Some(lo), Some(hi)) => format!("; 95% interval {:.1}% to {:.1}%", lo * 100.0, hi * 100.0),
        _ => "; interval not available".to_string(),
    };
    match (c.reference_ns, c.share_of_reference) {
        (Some(r), Some(share)) => format!(
            "{:.0} ns per {} ({} clock reads), {:.1}% of an 8 kB read from the page cache ({:.2} us{interval})",
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
    price: Result<&ReadPrice, &str>,
    page: Option<&PageReadReference>,
) -> JudgedSetting {
    let on = is_on(s);
    let state = if on { "on" } else { "off" };
    let price = match price {
        Ok(p) => p,
        Err(why) => return judged(s, None, format!("{state}; not priced: {why}"), None),
    };
    let c = io_cost(per, reads, price, page);
    let limit = IO_TIMING_MAX_SHARE * 100.0;
    // Costly only when the whole interval is above the limit.
    let costly = c.share_low.is_some_and(|low| low > IO_TIMING_MAX_SHARE);
    let above = c.share_of_reference.is_some_and(|share| share > IO_TIMING_MAX_SHARE);
    let (judgement, rec) = match (on, c.share_of_reference) {
        (true, Some(_)) if costly => (
            format!("on: {}, above the {limit:.0}% limit", io_cost_text(&c)),
            recommend(
                s,
                "off",
                format!(
                    "timing each {} costs {}, more than {limit:.0}% of a cached 8 kB read",
                    c.per,
                    io_cost_text(&c)
                ),
            ),
        ),
        (true, Some(_)) if above => (
            format!(
                "on: {}: above the {limit:.0}% limit, but its interval is not wholly above it: no change recommended",
                io_cost_text(&c)
            ),
            None,
        ),
        (true, Some(_)) => (format!("on: {}, within the {limit:.0}% limit", io_cost_text(&c)), None),
        (true, None) => (
            format!("on: {}; no page-cache reference to judge it", io_cost_text(&c)),
            None,
        ),
        (false, _) => (
            format!(
                "off: no cost; turned on it would cost {}{}",
                io_cost_text(&c),
                if costly { ", above the limit" } else { "" }
            ),
            None,
        ),
    };
    judged(s, Some(c), judgement, rec)
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
    if let Some(s) = get("track_io_timing") {
        out.push(judge_io_timing(s, "block I/O", READS_PER_IO, io_ref, page.as_ref()));
    }
    if let Some(s) = get("track_wal_io_timing") {
        out.push(judge_io_timing(
            s,
            "WAL write or sync",
            READS_PER_WAL_IO,
            io_ref,
            page.as_ref(),
        ));
    }
    if let Some(s) = get("timing_clock_source") {
        out.push(judge_clock_source(s, sources));
    }
    judge_auto_explain(
        settings,
        explain.as_ref().map(|(p, r)| (p, *r)).map_err(String::as_str),
        &mut out,
    );
    let status = |r: &Result<_, String>| match r {
        Ok(_) => "priced".to_string(),
        Err(why) => why.clone(),
    };
    TimingSettings {
        io_read_status: status(&io.as_ref().map(|_| ()).map_err(Clone::clone)),
        explain_read_status: status(&explain.as_ref().map(|_| ()).map_err(Clone::clone)),
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
    out.push(judge_log_timing(timing, timed, every_statement, &sampled, explain));

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

/// `auto_explain.log_timing`: costly only when the measured slowdown's whole
/// interval is at or above [`LOG_TIMING_MAX_SLOWDOWN`].
fn judge_log_timing(
    timing: &ServerSetting,
    timed: bool,
    every_statement: bool,
    sampled: &str,
    explain: Result<(&ReadPrice, &SourceResult), &str>,
) -> JudgedSetting {
    let state = if is_on(timing) { "on" } else { "off" };
    if !timed {
        let needs = if is_on(timing) {
            " (it needs log_analyze on and auto_explain enabled)"
        } else {
            ""
        };
        return judged(timing, None, format!("{state}: nothing timed{needs}"), None);
    }
    let (price, source) = match explain {
        Ok(p) => p,
        Err(why) => return judged(timing, None, format!("on: {why}; no change recommended"), None),
    };
    let cost = SettingCost {
        per: "row per plan node".into(),
        clock_reads: READS_PER_ROW_PER_NODE,
        ns: READS_PER_ROW_PER_NODE * price.ns,
        low_ns: price.low_ns.map(|v| READS_PER_ROW_PER_NODE * v),
        high_ns: price.high_ns.map(|v| READS_PER_ROW_PER_NODE * v),
        reference_ns: None,
        share_of_reference: None,
        share_low: None,
        share_high: None,
    };
    let n = &source.noise;
    let interval = match (n.slowdown_ci_low, n.slowdown_ci_high) {
        (Some(lo), Some(hi)) => format!(" (95% interval {lo:.2}x to {hi:.2}x)"),
        _ => String::new(),
    };
    let measured = format!(
        "{:.0} ns per row per plan node ({} clock reads); the count(*) measured here ran {:.2}x{interval} as long \
         with it",
        cost.ns, cost.clock_reads, source.slowdown
    );
    let costly = n.slowdown_ci_low.is_some_and(|lo| lo >= LOG_TIMING_MAX_SLOWDOWN);
    let footgun = if every_statement {
        format!("; with log_min_duration = 0 {sampled} is timed per plan node and logged")
    } else {
        String::new()
    };
    let (judgement, rec) = if costly {
        let why = format!(
            "{sampled} is timed per plan node, whatever log_min_duration (it only limits what is logged): \
             {measured}, at or above {LOG_TIMING_MAX_SLOWDOWN}x"
        );
        (format!("on: {measured}{footgun}"), recommend(timing, "off", why))
    } else if source.slowdown >= LOG_TIMING_MAX_SLOWDOWN {
        (
            format!(
                "on: {measured}{footgun}: at or above {LOG_TIMING_MAX_SLOWDOWN}x, but its interval is not wholly: \
                 no change recommended"
            ),
            None,
        )
    } else {
        (
            format!("on: {measured}, below {LOG_TIMING_MAX_SLOWDOWN}x{footgun}"),
            None,
        )
    };
    judged(timing, Some(cost), judgement, rec)
}

/// PostgreSQL 19's `timing_clock_source`: `system` set by hand while the TSC
/// measured cheaper here (its per-read interval wholly below the system
/// clock's) is worth changing to `auto`.
fn judge_clock_source(s: &ServerSetting, sources: &[SourceResult]) -> JudgedSetting {
    let price_of = |want: &str| {
        sources
            .iter()
            .find(|r| crate::clock_source::current_is(&r.clock_source, want))
            .map(price::observed_read_price)
    };
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
    let (judgement, rec) = if s.setting == "system" {
        match (system, tsc) {
            (Some(Ok(sy)), Some(Ok(t))) if t.high_ns.zip(sy.low_ns).is_some_and(|(th, sl)| th < sl) => (
                format!("system, set explicitly{measured}"),
                recommend(
                    s,
                    "'auto'",
                    format!(
                        "the TSC read for {} against the system clock's {} here; auto uses the TSC only where \
                         PostgreSQL trusts it",
                        t.text(),
                        sy.text()
                    ),
                ),
            ),
            _ => (format!("system, set explicitly{measured}"), None),
        }
    } else if crate::clock_source::current_is(&s.shown, "system") {
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
mod tests;
