//! The timing settings' data: a server setting as read, what one event of it
//! costs, the judgement and recommendation, the prices they were set with
//! (it imports nothing of this crate, so the report's model can hold it).

use clockscope_pg::predict::settings::SettingDecision;
use serde::Serialize;

/// The settings read from `pg_settings`, in report order.
pub(crate) const TIMING_SETTINGS: [&str; 7] = [
    "track_io_timing",
    "track_wal_io_timing",
    "timing_clock_source",
    "auto_explain.log_analyze",
    "auto_explain.log_timing",
    "auto_explain.log_min_duration",
    "auto_explain.sample_rate",
];

/// Pages in the file `measure_page_cache_read` reads (2 MiB).
pub(crate) use clockscope_pg::predict::settings::page_read::PAGE_READ_PAGES;

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

/// What one event of a setting costs in clock reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SettingCost {
    /// The event paid for: `block I/O`, `WAL write or sync`, `row per plan node`.
    pub per: String,
    /// Clock reads per event (2 for each).
    pub clock_reads: f64,
    /// clock_reads x the per-read price, ns, and at its interval's ends.
    pub ns: f64,
    /// ns at the low end of the read price's 95% interval; null without one.
    pub low_ns: Option<f64>,
    /// ns at the high end of the read price's 95% interval; null without one.
    pub high_ns: Option<f64>,
    /// The reference's ns (an 8 kB read from the page cache), for I/O timing.
    pub reference_ns: Option<f64>,
    /// ns / reference_ns, and its interval (low / reference high, high /
    /// reference low).
    pub share_of_reference: Option<f64>,
    /// low_ns / page_read.high_ns, a ratio: above 0.10 an I/O timing setting that is on is
    /// recommended off; null without both intervals.
    pub share_low: Option<f64>,
    /// high_ns / page_read.low_ns, a ratio; null without both intervals.
    pub share_high: Option<f64>,
}

/// What to change, as the exact statements to run.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// `ALTER SYSTEM SET name = value;`
    #[schemars(regex(pattern = r"^ALTER SYSTEM SET "))]
    pub alter_system: String,
    /// `SELECT pg_reload_conf();`, or null when the change needs a restart.
    pub then: Option<String>,
    /// True when the setting's context is postmaster: the change takes a
    /// restart, not a reload.
    pub needs_restart: bool,
    /// Why the change is recommended, in words.
    pub reason: String,
}

/// One setting, judged.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct JudgedSetting {
    /// The setting.
    pub name: String,
    /// As SHOW prints it.
    pub value: String,
    /// `pg_settings.source` and `context`.
    pub source: String,
    /// pg_settings.context: postmaster (a change needs a restart), sighup, superuser, user, ...
    pub context: String,
    /// The price of what the setting times, when it times something and a
    /// per-read cost was measured.
    pub cost: Option<SettingCost>,
    /// The judgement in words.
    pub judgement: String,
    /// What to change; null when nothing should change.
    pub recommendation: Option<Recommendation>,
    /// The judge's decision, as `clockscope check` gives it for the same
    /// setting (`clockscope_pg::predict::settings`); null for the settings
    /// the judge does not price (auto_explain.log_analyze, log_min_duration).
    pub decision: Option<SettingDecision>,
}

/// The server's timing settings, judged, and what they were priced with.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TimingSettings {
    /// `INSTR_TIME_SET_CURRENT`'s price (the I/O timing settings); null with
    /// `io_read_status` saying why.
    pub io_read: Option<ReadPrice>,
    /// 'priced', or why io_read is null.
    pub io_read_status: String,
    /// EXPLAIN's fast read inferred on this server (auto_explain.log_timing);
    /// null when not resolved, `explain_read_status` saying why.
    pub explain_read: Option<ReadPrice>,
    /// 'priced', or 'not resolved: ...' / why explain_read is null.
    pub explain_read_status: String,
    /// The page-cache read the I/O costs are set against; null if not measured.
    pub page_read: Option<PageReadReference>,
    /// One entry per timing setting the server has, in this order: track_io_timing,
    /// track_wal_io_timing (PostgreSQL 14+), timing_clock_source (PostgreSQL 19+), and
    /// auto_explain.log_analyze, auto_explain.log_timing, auto_explain.log_min_duration when
    /// auto_explain is loaded. Empty for a server with none of them.
    pub settings: Vec<JudgedSetting>,
}

/// One clock read's price, with its 95% interval when known.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReadPrice {
    /// The read, as pg_test_timing names it, or the server's clock source.
    pub clock: String,
    /// ns per read.
    pub ns: f64,
    /// The interval's low end, ns; null without one.
    pub low_ns: Option<f64>,
    /// The interval's high end, ns; null without one.
    pub high_ns: Option<f64>,
    /// Where the number comes from.
    pub source: String,
}

impl ReadPrice {
    /// "37.2 ns (95% interval 36.8 to 38.0)" or "37.2 ns (interval not available)".
    pub fn text(&self) -> String {
        match (self.low_ns, self.high_ns) {
            (Some(lo), Some(hi)) => format!("{:.1} ns (95% interval {lo:.1} to {hi:.1})", self.ns),
            _ => format!("{:.1} ns (interval not available)", self.ns),
        }
    }
}

/// The reference an I/O's timing cost is set against.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PageReadReference {
    /// Median ns of one 8 kB `pread` served from the OS page cache.
    pub ns: f64,
    /// The median's 95% interval over the passes; null when not available.
    pub low_ns: Option<f64>,
    /// The median's 95% interval, high end, ns; null when not available.
    pub high_ns: Option<f64>,
    /// Where the number comes from.
    pub source: String,
}
