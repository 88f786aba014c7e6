//! The one judge of PostgreSQL's timing settings: `clockscope check` (this
//! machine, no server) and `clockscope explain` (a server's own settings)
//! decide `track_io_timing`, `track_wal_io_timing`, `auto_explain.log_timing`
//! and PostgreSQL 19's `timing_clock_source` with these functions and
//! constants, so the same measurements get the same answer in both, in both
//! directions (turn a cheap setting on, a costly one off).
//!
//! # Rules
//! A change rests only on a difference outside its 95% interval: a setting
//! is `cheap` when its cost's whole interval lies below the limit, `costly`
//! when it lies wholly at or above it, and `not_resolved` (no change) when the
//! interval reaches the limit or there is no interval; `not_priced` when a
//! price is missing. Every interval a decision carries contains its
//! estimate (an interval from another statistic than the estimate is
//! widened to it, [`Estimate::new`]).
//!
//! - `track_io_timing`, `track_wal_io_timing` ([`io_timing`]): two
//!   `INSTR_TIME_SET_CURRENT` reads per timed I/O set against an 8 kB read
//!   from the OS page cache, the cheapest I/O PostgreSQL times
//!   ([`page_read::measure_page_cache_read`]); limit [`IO_TIMING_MAX_SHARE`].
//! - `auto_explain.log_timing` ([`log_timing`]): the count(*) slowdown with
//!   EXPLAIN's per-node timing; limit [`LOG_TIMING_MAX_SLOWDOWN`].
//! - `timing_clock_source` ([`timing_clock_source`]): from whether PostgreSQL
//!   19 can read the TSC here, what its `auto` picks, clockscope's trust in
//!   the TSC and, when trust is not known, the two clocks' measured reads.

pub mod page_read;

use serde::Serialize;

/// Clock reads per block I/O with `track_io_timing` (bufmgr.c,
/// `pgstat_prepare_io_time` / `pgstat_count_io_op_time`: one before, one after).
pub const READS_PER_IO: f64 = 2.0;
/// Clock reads per WAL write or sync with `track_wal_io_timing` (xlog.c).
pub const READS_PER_WAL_IO: f64 = 2.0;

/// An I/O timing setting: its name, the event it times and the clock reads
/// per event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IoSetting {
    /// The GUC's name.
    pub name: &'static str,
    /// The event timed, as the reports name it.
    pub per: &'static str,
    /// Clock reads per event.
    pub reads: f64,
}

/// `track_io_timing`: [`READS_PER_IO`] reads per block I/O.
pub const TRACK_IO_TIMING: IoSetting = IoSetting {
    name: "track_io_timing",
    per: "block I/O",
    reads: READS_PER_IO,
};
/// `track_wal_io_timing`: [`READS_PER_WAL_IO`] reads per WAL write or sync.
pub const TRACK_WAL_IO_TIMING: IoSetting = IoSetting {
    name: "track_wal_io_timing",
    per: "WAL write or sync",
    reads: READS_PER_WAL_IO,
};
/// Clock reads per row per plan node with EXPLAIN ANALYZE's timing
/// (InstrStartNode and InstrStopNode around each ExecProcNode call).
pub const READS_PER_ROW_PER_NODE: f64 = 2.0;
/// Timing an I/O is judged costly above this share of an 8 kB read from the
/// page cache, cheap below it: 10%, the point where the timing itself
/// becomes a visible part of a cached read (a fast clock, 20-40 ns per read,
/// costs 2-5% of a 1.5-2 us cached read; a syscall clock such as hpet or
/// xen, 500-700 ns per read, costs more than the read).
pub const IO_TIMING_MAX_SHARE: f64 = 0.10;
/// `auto_explain.log_timing` is judged costly at this count(*) slowdown
/// (PostgreSQL 19 with the TSC measured 1.27x on its 10M-row benchmark).
pub const LOG_TIMING_MAX_SLOWDOWN: f64 = 1.3;

/// A measured value with its 95% interval (`low`/`high` both or neither).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Estimate {
    /// The estimate.
    pub value: f64,
    /// Its 95% interval's low end (null without an interval).
    pub low: Option<f64>,
    /// Its 95% interval's high end (null without an interval).
    pub high: Option<f64>,
}

impl Estimate {
    /// `value` with the interval `low..high`, widened to contain `value`
    /// (a median's interval from other samples than the value's own may
    /// miss it; a printed interval always contains its estimate). An
    /// interval with one end missing or not finite is dropped.
    pub fn new(value: f64, low: Option<f64>, high: Option<f64>) -> Estimate {
        let interval = low
            .zip(high)
            .filter(|(l, h)| l.is_finite() && h.is_finite())
            .map(|(l, h)| (l.min(h).min(value), l.max(h).max(value)));
        Estimate {
            value,
            low: interval.map(|i| i.0),
            high: interval.map(|i| i.1),
        }
    }

    /// Whether the value is a usable positive number.
    fn usable(&self) -> bool {
        self.value.is_finite() && self.value > 0.0
    }
}

/// What the judge concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The cost's whole interval is below the limit: safe to turn on.
    Cheap,
    /// The cost's whole interval is above the limit: turn it off.
    Costly,
    /// The interval reaches the limit, or there is none: no change.
    NotResolved,
    /// A price or reference is missing: no change.
    NotPriced,
    /// timing_clock_source: the TSC is trustworthy (or measured cheaper).
    TscTrusted,
    /// timing_clock_source: clockscope does not trust the TSC here.
    TscNotTrusted,
    /// timing_clock_source: PostgreSQL 19 cannot read a TSC here.
    NoTsc,
}

impl Verdict {
    /// The word printed before a decision's text.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Cheap => "cheap",
            Verdict::Costly => "costly",
            Verdict::NotResolved => "not resolved",
            Verdict::NotPriced => "not priced",
            Verdict::TscTrusted => "TSC trusted",
            Verdict::TscNotTrusted => "TSC not trusted",
            Verdict::NoTsc => "no TSC",
        }
    }
}

/// One setting decided: the same shape in `check`'s and `explain`'s JSON.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct SettingDecision {
    /// The setting's name in postgresql.conf.
    pub setting: String,
    /// What the judge concluded.
    pub verdict: Verdict,
    /// The value the judge says the setting should have (`on`, `off`,
    /// `auto`, `system`, `tsc`); null when nothing is decided.
    pub recommended_value: Option<String>,
    /// What is compared with the limit: `share_of_page_cache_read` (a
    /// fraction), `slowdown` (a ratio), or `clock_trust`.
    pub measure: String,
    /// The measure and its 95% interval (null for clock_trust).
    pub estimate: Option<Estimate>,
    /// The limit the interval is set against (null for clock_trust).
    pub limit: Option<f64>,
    /// The decision in one sentence, with its numbers.
    pub text: String,
}

impl SettingDecision {
    /// The value to set on a server whose setting is `current`
    /// (`pg_settings.setting`), or None when it already has what the judge
    /// recommends (a server set to `tsc` has what a trusted TSC's `auto`
    /// would give) or nothing is recommended.
    pub fn change_from(&self, current: &str) -> Option<&str> {
        let want = self.recommended_value.as_deref()?;
        let same = want == current || (self.verdict == Verdict::TscTrusted && want == "auto" && current == "tsc");
        (!same).then_some(want)
    }
}

/// "95% interval LOW to HIGH" with each end as `show` writes it, or that
/// there is none.
fn interval_text(e: &Estimate, show: impl Fn(f64) -> String) -> String {
    match (e.low, e.high) {
        (Some(lo), Some(hi)) => format!("95% interval {} to {}", show(lo), show(hi)),
        _ => "interval not available".to_string(),
    }
}

/// Where `e`'s interval lies against `limit`: at or above it, wholly below
/// it, or neither (it straddles the limit, or there is none); and that side
/// in words.
fn against(e: &Estimate, limit: f64) -> (Verdict, &'static str) {
    match (e.low, e.high) {
        (Some(lo), _) if lo >= limit => (Verdict::Costly, "above"),
        (_, Some(hi)) if hi < limit => (Verdict::Cheap, "below"),
        _ => (Verdict::NotResolved, "not clear of"),
    }
}

/// A decision on an on/off setting whose `measure` was set against `limit`:
/// cheap recommends on, costly off.
fn on_off(
    setting: &str,
    measure: &str,
    limit: f64,
    verdict: Verdict,
    estimate: Option<Estimate>,
    text: String,
) -> SettingDecision {
    SettingDecision {
        setting: setting.to_string(),
        verdict,
        recommended_value: match verdict {
            Verdict::Cheap => Some("on".to_string()),
            Verdict::Costly => Some("off".to_string()),
            _ => None,
        },
        measure: measure.to_string(),
        estimate,
        limit: Some(limit),
        text,
    }
}

/// `track_io_timing` / `track_wal_io_timing` ([`TRACK_IO_TIMING`],
/// [`TRACK_WAL_IO_TIMING`]): the setting's reads of `per_read_ns` per
/// event, set against `page_read_ns`, an 8 kB page-cache read.
pub fn io_timing(
    setting: &IoSetting,
    per_read_ns: Option<Estimate>,
    page_read_ns: Option<Estimate>,
) -> SettingDecision {
    let IoSetting { name, per, reads } = *setting;
    let limit = IO_TIMING_MAX_SHARE;
    let decision = |verdict, estimate, text| on_off(name, "share_of_page_cache_read", limit, verdict, estimate, text);
    let Some(price) = per_read_ns.filter(Estimate::usable) else {
        return decision(Verdict::NotPriced, None, "the clock read was not measured".to_string());
    };
    let ns = reads * price.value;
    let Some(page) = page_read_ns.filter(Estimate::usable) else {
        return decision(
            Verdict::NotPriced,
            None,
            format!("{ns:.0} ns per {per} ({reads} clock reads); no page-cache read measured to set it against"),
        );
    };
    let share = Estimate::new(
        ns / page.value,
        price.low.zip(page.high).map(|(l, ph)| reads * l / ph),
        price.high.zip(page.low).map(|(h, pl)| reads * h / pl),
    );
    let (verdict, side) = against(&share, limit);
    let text = format!(
        "{ns:.0} ns per {per} ({reads} clock reads), {:.1}% of an 8 kB read from the page cache ({:.2} us; {}), {side} \
         the {:.0}% limit",
        share.value * 100.0,
        page.value / 1000.0,
        interval_text(&share, |v| format!("{:.1}%", v * 100.0)),
        limit * 100.0
    );
    decision(verdict, Some(share), text)
}

/// `auto_explain.log_timing` with `log_analyze`: the count(*) `slowdown`
/// with EXPLAIN's per-node timing (a ratio, with its interval).
pub fn log_timing(slowdown: Option<Estimate>) -> SettingDecision {
    let limit = LOG_TIMING_MAX_SLOWDOWN;
    let (verdict, text) = match slowdown.filter(Estimate::usable) {
        None => (
            Verdict::NotPriced,
            "no slowdown measured to set against the limit".to_string(),
        ),
        Some(s) => {
            let (verdict, side) = against(&s, limit);
            let interval = interval_text(&s, |v| format!("{v:.3}x"));
            (
                verdict,
                format!(
                    "count(*) {:.3}x as long with timing ({interval}), {side} the {limit}x limit",
                    s.value
                ),
            )
        }
    };
    on_off("auto_explain.log_timing", "slowdown", limit, verdict, slowdown, text)
}

/// What the `timing_clock_source` decision rests on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClockSourceFacts {
    /// Whether PostgreSQL 19 can read the CPU counter here
    /// (`timing_clock_source = tsc`: x86-64 with RDTSCP and an invariant TSC).
    pub postgresql_reads_counter: bool,
    /// What `auto` picks here: Some(true) = tsc.
    pub auto_picks_tsc: Option<bool>,
    /// clockscope's own trust decision for the TSC, with its reason.
    pub tsc_trusted: Option<bool>,
    /// Why the TSC is (not) trusted, in one line.
    pub tsc_reason: Option<String>,
    /// The system clock's measured per-read cost, ns (used when trust is not known).
    pub system_read_ns: Option<Estimate>,
    /// The TSC's measured per-read cost, ns (used when trust is not known).
    pub tsc_read_ns: Option<Estimate>,
}

/// PostgreSQL 19's `timing_clock_source`: `system` where clockscope does
/// not trust the TSC and `auto` would pick it; `tsc` where it trusts the TSC
/// and `auto` does not pick it; else `auto`. Without a trust decision, `auto`
/// when the TSC's read measured cheaper (its interval wholly below the
/// system clock's): PostgreSQL then uses the TSC only where it trusts it.
pub fn timing_clock_source(f: &ClockSourceFacts) -> SettingDecision {
    let reason = || f.tsc_reason.as_deref().unwrap_or("see the tsc report");
    let (verdict, value, text): (Verdict, Option<&str>, String) = if !f.postgresql_reads_counter {
        (
            Verdict::NoTsc,
            None,
            "nothing to set: PostgreSQL 19 cannot read a TSC here (it needs x86-64 with RDTSCP and an invariant \
             TSC), so it reads the system clock"
                .to_string(),
        )
    } else {
        match (f.tsc_trusted, f.auto_picks_tsc) {
            (Some(true), Some(false)) => (
                Verdict::TscTrusted,
                Some("tsc"),
                "auto picks system, but every piece of evidence says the TSC is trustworthy".to_string(),
            ),
            (Some(true), _) => (
                Verdict::TscTrusted,
                Some("auto"),
                "auto picks tsc, and the TSC is trustworthy here".to_string(),
            ),
            (Some(false), Some(true)) => (
                Verdict::TscNotTrusted,
                Some("system"),
                format!(
                    "auto would pick tsc, but clockscope does not trust the TSC here ({})",
                    reason()
                ),
            ),
            (Some(false), _) => (
                Verdict::TscNotTrusted,
                Some("auto"),
                format!("auto picks system: the TSC is not trustworthy here ({})", reason()),
            ),
            (None, _) => by_measured_reads(f),
        }
    };
    SettingDecision {
        setting: "timing_clock_source".to_string(),
        verdict,
        recommended_value: value.map(str::to_string),
        measure: "clock_trust".to_string(),
        estimate: None,
        limit: None,
        text,
    }
}

fn read_text(e: &Estimate) -> String {
    format!("{:.1} ns ({})", e.value, interval_text(e, |v| format!("{v:.1}")))
}

/// Without a trust decision: `auto` when the TSC's read interval lies
/// wholly below the system clock's.
fn by_measured_reads(f: &ClockSourceFacts) -> (Verdict, Option<&'static str>, String) {
    match (f.system_read_ns, f.tsc_read_ns) {
        (Some(sy), Some(t)) if t.high.zip(sy.low).is_some_and(|(th, sl)| th < sl) => (
            Verdict::TscTrusted,
            Some("auto"),
            format!(
                "the TSC read for {} against the system clock's {} here; auto uses the TSC only where PostgreSQL \
                 trusts it",
                read_text(&t),
                read_text(&sy)
            ),
        ),
        (Some(sy), Some(t)) => (
            Verdict::NotResolved,
            None,
            format!(
                "the TSC read for {} against the system clock's {}: not clearly cheaper",
                read_text(&t),
                read_text(&sy)
            ),
        ),
        _ => (
            Verdict::NotResolved,
            None,
            "the TSC's trust and read cost are not known here (run `clockscope check` on the server)".to_string(),
        ),
    }
}

#[cfg(test)]
mod tests;
