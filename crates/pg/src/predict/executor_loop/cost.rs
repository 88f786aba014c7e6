//! The pairs of rounds a run measures ([`RoundPair`], [`StopReason`]) and
//! the cost from them: the median paired difference per row, its
//! 95% interval, whether it is resolved above the noise, and the words for
//! them ([`ExecutorLoopCost`]).

use super::instr::PgInstrumentation;
use super::DEFAULT_WORK_STEPS;
use crate::predict::settings::READS_PER_ROW_PER_NODE;
use clockscope_system::stats::{self, Interval};

/// One pair of rounds, ns from start to end of each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundPair {
    /// The TIMING ON round, ns.
    pub timing_on_ns: f64,
    /// The TIMING OFF round, ns.
    pub timing_off_ns: f64,
}

/// What ended the pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Another pair would have passed the time budget.
    Budget,
    /// [`MAX_PAIRS`](super::MAX_PAIRS) pairs ran.
    MaxPairs,
    /// `keep_going` said stop (Ctrl-C).
    Interrupted,
}

/// What TIMING ON added per row in the model.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ExecutorLoopCost {
    /// The clock read, as pg_test_timing names it.
    pub clock: String,
    /// The instrumentation modelled ([`PgInstrumentation::describe`]).
    pub instrumentation: String,
    /// The headline, ns per row per timed node: the median paired
    /// difference when resolved, else null ("not resolved").
    pub added_ns_per_row: Option<f64>,
    /// `added_ns_per_row / 2`.
    pub added_ns_per_read: Option<f64>,
    /// The median paired difference per row, ns, resolved or not.
    pub median_ns_per_row: f64,
    /// Its 95% interval, ns per row; null when not available (fewer than 6
    /// pairs, or every pair equal).
    pub interval: Option<Interval>,
    /// The interval in words: "95% interval 5.1 to 6.3 ns (+-11%)" or
    /// "interval not available (n=5)".
    pub interval_text: String,
    /// Whether the difference is resolved above the noise.
    pub resolved: bool,
    /// "resolved", or why not.
    pub status: String,
    /// Smallest and largest paired difference per row, ns.
    pub added_ns_per_row_min: f64,
    /// See `added_ns_per_row_min`.
    pub added_ns_per_row_max: f64,
    /// Median TIMING OFF round per row: the model's work, ns.
    pub work_ns_per_row: f64,
    /// Expression steps per row ([`DEFAULT_WORK_STEPS`]).
    pub work_steps: u32,
    /// Rows per round.
    pub rows_per_round: u64,
    /// Pairs measured.
    pub pairs: u32,
    /// What ended the pairs.
    pub stopped_by: StopReason,
    /// The time budget and the time taken (calibration included), ns.
    pub budget_ns: u64,
    /// See `budget_ns`.
    pub elapsed_ns: u64,
    /// How the pairs were taken: "one run of 150 ms", or "12 slices (...),
    /// one before the first run of each of the server's pairs ...".
    pub sampling: String,
    /// Where the pairs ran when the model was pinned to CPUs, one entry per
    /// CPU (empty when it was not pinned).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<CpuRun>,
    /// Each slice's median paired difference per row, ns, in the order the
    /// slices ran (empty for one run): for comparing each slice with what
    /// ran just after it (explain: the server's pair of runs). Not in the
    /// JSON.
    #[serde(skip)]
    pub slice_medians_ns_per_row: Vec<f64>,
}

/// The model's pairs on one CPU, when it ran pinned.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CpuRun {
    /// The CPU.
    pub cpu: usize,
    /// Pairs run there.
    pub pairs: u32,
    /// Their median TIMING OFF round per row, ns: how fast this CPU ran the
    /// plain work.
    pub work_ns_per_row: f64,
    /// Their median paired difference per row, ns.
    pub median_ns_per_row: f64,
    /// Whether these pairs are in the headline's median.
    pub used: bool,
}

impl ExecutorLoopCost {
    /// A resolved result of the shape the model reports, for tests and
    /// examples that need one without measuring: `added_ns_per_row` with an
    /// interval of +-10% over 40 pairs of 12,500 rows of 20 ns of work.
    pub fn recorded(clock: &str, added_ns_per_row: f64) -> ExecutorLoopCost {
        let d = added_ns_per_row.abs() * 0.1;
        let interval = Interval {
            low: added_ns_per_row - d,
            high: added_ns_per_row + d,
            coverage: 0.96,
        };
        ExecutorLoopCost {
            clock: clock.into(),
            instrumentation: PgInstrumentation::Pg19 { tsc: clock == "RDTSC" }.describe().into(),
            added_ns_per_row: Some(added_ns_per_row),
            added_ns_per_read: Some(added_ns_per_row / READS_PER_ROW_PER_NODE),
            median_ns_per_row: added_ns_per_row,
            interval: Some(interval),
            interval_text: interval_text(added_ns_per_row, Some(interval), 40),
            resolved: true,
            status: "resolved".into(),
            added_ns_per_row_min: added_ns_per_row - 2.0 * d,
            added_ns_per_row_max: added_ns_per_row + 2.0 * d,
            work_ns_per_row: 20.0,
            work_steps: DEFAULT_WORK_STEPS,
            rows_per_round: 12_500,
            pairs: 40,
            stopped_by: StopReason::Budget,
            budget_ns: 150_000_000,
            elapsed_ns: 149_000_000,
            sampling: sampling_text(1, 149_000_000),
            cpus: Vec::new(),
            slice_medians_ns_per_row: Vec::new(),
        }
    }

    /// The headline in words: "+6.1 ns" or "not resolved".
    pub fn headline(&self) -> String {
        match self.added_ns_per_row {
            Some(v) => format!("{v:+.1} ns"),
            None => "not resolved".into(),
        }
    }
}

/// "95% interval 5.1 to 6.3 ns (+-11%)", or "interval not available (n=..)"
/// when there is none or it has no width.
pub fn interval_text(median: f64, interval: Option<Interval>, n: usize) -> String {
    match interval {
        Some(i) if !i.is_degenerate() => {
            let rel = if median != 0.0 {
                format!(", +-{:.1}%", i.half_width(median) * 100.0)
            } else {
                String::new()
            };
            format!("95% interval {:.1} to {:.1} ns{rel}", i.low, i.high)
        }
        Some(_) => format!("interval not available (n={n}, every pair equal)"),
        None => format!("interval not available (n={n})"),
    }
}

/// The cost from measured pairs (see the module docs); `None` without pairs
/// or rows.
pub(crate) fn cost_from_pairs(
    clock: &str,
    pairs: &[RoundPair],
    rows_per_round: u64,
    instrumentation: PgInstrumentation,
) -> Option<ExecutorLoopCost> {
    if pairs.is_empty() || rows_per_round == 0 {
        return None;
    }
    let rows = rows_per_round as f64;
    let mut diffs: Vec<f64> = pairs
        .iter()
        .map(|p| (p.timing_on_ns - p.timing_off_ns) / rows)
        .collect();
    diffs.sort_by(f64::total_cmp);
    let work: Vec<f64> = pairs.iter().map(|p| p.timing_off_ns / rows).collect();
    let median = stats::median(&diffs)?;
    let raw_interval = stats::median_interval(&diffs, stats::CONFIDENCE);
    let n = diffs.len();
    let (resolved, status) = match raw_interval {
        None => (
            false,
            format!(
                "not resolved: interval not available (n={n}; an interval needs {} pairs)",
                stats::MIN_SAMPLES_FOR_INTERVAL
            ),
        ),
        Some(i) if i.low <= 0.0 => (
            false,
            format!(
                "not resolved: the 95% interval of the difference, {:.1} to {:.1} ns per row, includes 0: \
                 TIMING ON's cost is inside the noise",
                i.low, i.high
            ),
        ),
        Some(_) => (true, "resolved".to_string()),
    };
    let interval = raw_interval.filter(|i| !i.is_degenerate());
    Some(ExecutorLoopCost {
        clock: clock.to_string(),
        instrumentation: instrumentation.describe().to_string(),
        added_ns_per_row: resolved.then_some(median),
        added_ns_per_read: resolved.then_some(median / READS_PER_ROW_PER_NODE),
        median_ns_per_row: median,
        interval,
        interval_text: interval_text(median, raw_interval, n),
        resolved,
        status,
        added_ns_per_row_min: diffs[0],
        added_ns_per_row_max: diffs[n - 1],
        work_ns_per_row: stats::median(&work).unwrap_or(f64::NAN),
        work_steps: 0,
        rows_per_round,
        pairs: n as u32,
        stopped_by: StopReason::Budget,
        budget_ns: 0,
        elapsed_ns: 0,
        sampling: String::new(),
        cpus: Vec::new(),
        slice_medians_ns_per_row: Vec::new(),
    })
}

/// [`ExecutorLoopCost::sampling`] for `slices` runs taking `elapsed_ns`.
pub(crate) fn sampling_text(slices: u32, elapsed_ns: u64) -> String {
    let ms = elapsed_ns as f64 / 1e6;
    if slices <= 1 {
        format!("one run of {ms:.0} ms")
    } else {
        format!(
            "{slices} slices ({ms:.0} ms in all), one before the first run of each of the server's pairs (of \
             alternating order), so the model and the server sample the same time"
        )
    }
}
