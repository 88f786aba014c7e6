//! What `clockscope sweep` found or would do: the system clock measured under
//! each kernel clocksource, and the recommendation. Its JSON form is
//! documented in `docs/schema/sweep.schema.json`.

use crate::commands::check::model::stats::Percentiles;
use crate::commands::check::model::verdict::{ExplainPrediction, RuleResult, Status};
use crate::exit;
use clockscope_system::engine::Estimate;
use clockscope_system::stats::Interval;
use serde::Serialize;

/// Version of the JSON layout (docs/schema/sweep.schema.json).
pub const SCHEMA_VERSION: u32 = 3;

/// What one clocksource measured.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SweepResult {
    /// The clocksource switched to.
    pub clocksource: String,
    /// What `current_clocksource` read back right after the switch (equal to `clocksource`).
    pub read_back: String,
    /// The read cost over the rounds, as the read-cost engine estimates it
    /// ([`Estimate`]): in JSON `read_cost_ns` (the median over the rounds of
    /// `check`'s read cost, the mean read without the interference gaps),
    /// `rounds` (how many interleaved rounds measured this clocksource),
    /// `read_cost_rounds_ns` (each round's, in the order measured) and
    /// `read_cost_interval_ns` (the median's 95% interval; null under 6 rounds).
    #[serde(flatten, with = "RoundsJson")]
    #[schemars(with = "RoundsJson")]
    pub read_cost: Estimate,
    /// pg_test_timing's average loop time, ns.
    pub avg_loop_ns: f64,
    /// Loop iterations measured (reads with a forward or zero difference).
    pub loops: u64,
    pub percentiles_ns: Percentiles,
    /// Differences under 1 us, percent (PostgreSQL's rule needs more than 90).
    pub under_1us_pct: f64,
    /// Successive reads that went backwards (a fault on CLOCK_MONOTONIC).
    pub backward_steps: u64,
    /// "vdso" or "syscall": how clock_gettime was served (by clocksource name and by cost, as in `check`).
    pub clock_gettime: String,
    /// Why it is judged a syscall, when it is.
    pub syscall_fallback: Option<String>,
    /// PostgreSQL's pg_test_timing rule (over 90% of reads under 1 us and an average loop under 100
    /// ns) for the system clock under this clocksource; null when nothing was measured.
    pub postgresql_rule: Option<RuleResult>,
    /// Predicted EXPLAIN ANALYZE overhead of a row-heavy count(*) reading the system clock under
    /// this clocksource (check's verdict.explain_system); null when nothing was measured.
    pub explain: Option<ExplainPrediction>,
    /// `check`'s verdict status for the system clock under this clocksource.
    pub status: Status,
    /// Whether Ctrl-C or SIGTERM cut this measurement short.
    pub interrupted: bool,
    /// What `current_clocksource` read right after the measurement.
    pub read_back_after: String,
    /// False when that is not `clocksource`: someone else (or the kernel's
    /// watchdog) changed it during the measurement, so the numbers are not
    /// this clocksource's alone.
    pub valid: bool,
    /// Why the row is invalid, one line; null when valid.
    pub invalid_reason: Option<String>,
}

/// A row's [`Estimate`] under the JSON names of schema version 3.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(remote = "Estimate")]
struct RoundsJson {
    /// The read cost: the median over the rounds of `check`'s read cost (the
    /// mean read without the interference gaps), ns.
    #[serde(rename = "read_cost_ns")]
    median_ns: f64,
    /// How many interleaved rounds measured this clocksource.
    #[serde(getter = "rounds")]
    rounds: u32,
    /// Each round's read cost, ns, in the order measured.
    #[serde(rename = "read_cost_rounds_ns")]
    samples_ns: Vec<f64>,
    /// The 95% interval of the median read cost (order statistics); null under 6 rounds.
    #[serde(rename = "read_cost_interval_ns")]
    interval: Option<Interval>,
}

/// How many rounds an estimate is over.
fn rounds(e: &Estimate) -> u32 {
    e.samples_ns.len() as u32
}

/// How the sweep ended for the kernel's clocksource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RestoreOutcome {
    /// The original was written back and read back.
    Restored,
    /// The original was in use already: nothing written.
    InPlace,
    /// Someone else's change since the sweep's last switch was left in place.
    LeftAlone,
}

/// The clocksource clockscope recommends, and why.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Recommendation {
    /// The recommended clocksource.
    pub clocksource: String,
    /// Whether it is the one in use already.
    pub in_use: bool,
    /// The numbers behind the choice, in words.
    pub why: String,
    /// The kernel parameter that makes it persistent (`clocksource=NAME`).
    pub kernel_parameter: String,
    /// Whether its read cost was told apart from the one it was compared with
    /// (95% intervals apart and a difference of at least 10%); a change is
    /// advised (`in_use` false) only then.
    pub distinguishable: bool,
}

/// Everything `clockscope sweep` found or would do.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SweepReport {
    /// `host`, `timestamp`, `tool`, `schema_version` (first in the JSON).
    #[serde(flatten)]
    pub stamp: crate::report::stamp::ReportStamp,
    /// `.../clocksource0`, under `--sysfs-root`.
    pub clocksource_dir: String,
    /// Whether those are the kernel's own files (a sysfs mount, known by its
    /// file system's magic, under whatever path): switching there changes the
    /// kernel's clocksource; otherwise it changes no clock.
    pub live_sysfs: bool,
    /// The clocksource in use before the sweep (and after it, unless `restore` is `left_alone`).
    pub original: String,
    /// available_clocksource: the clocksources the kernel could switch to, in the kernel's order.
    pub available: Vec<String>,
    /// The clocksources the sweep visits (or would visit), in order.
    pub planned: Vec<String>,
    /// Whether `--apply` was given (clocksources were switched).
    pub applied: bool,
    /// Seconds the system clock was measured under each clocksource (-d).
    pub duration_per_clocksource_s: f64,
    /// Interleaved rounds planned: each clocksource measured this many times, `duration / rounds` each.
    pub rounds: u32,
    /// ns per row of a count(*) with TIMING OFF used for the EXPLAIN predictions.
    pub baseline_row_ns: f64,
    /// Where baseline_row_ns comes from (--baseline-row-ns, or the reference benchmark).
    pub baseline_source: String,
    /// One entry per clocksource measured, in sweep order (empty without --apply; shorter than
    /// planned when interrupted).
    pub results: Vec<SweepResult>,
    /// The clocksource to use: a change from the one in use (in_use false) only when the cheapest
    /// clocksource's read-cost interval and the one in use's do not overlap and the difference is
    /// at least 10% of the read cost in use; otherwise the one in use, kept (in_use true). Null
    /// without --apply or when nothing was measured soundly.
    pub recommendation: Option<Recommendation>,
    /// How to make a clocksource persistent, and the caveats, one line each.
    pub persistence: Vec<String>,
    /// Whether Ctrl-C or SIGTERM stopped the sweep early.
    pub interrupted: bool,
    /// What happened to the original at the end; null without --apply.
    pub restore: Option<RestoreOutcome>,
    /// `current_clocksource` read at the end; null without --apply.
    pub final_clocksource: Option<String>,
    /// A change of the clocksource the sweep did not make, which stopped it (one line); null if none.
    pub changed_by_others: Option<String>,
}

impl SweepReport {
    /// 130 when interrupted; 1 when someone else changed the clocksource
    /// under the sweep; else 0 (a sweep reports; it does not judge).
    pub fn exit_code(&self) -> u8 {
        if self.interrupted {
            exit::INTERRUPTED
        } else if self.changed_by_others.is_some() {
            exit::PROBLEM
        } else {
            exit::OK
        }
    }
}
