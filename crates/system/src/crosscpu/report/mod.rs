//! What the cross-CPU tests found, per CPU pair and clock, and the verdict:
//! serialisable report types whose field names carry their units (here),
//! the judging of one clock on one pair (`judge.rs`), and the report by
//! package in plain language (`by_package.rs`: [`PackageGroup`],
//! [`ClockAnswer`]).

mod by_package;
mod judge;

pub use by_package::{ClockAnswer, PackageGroup};

use super::pingpong::OffsetResult;
use super::plan::PlannedPair;
use super::warp::WarpResult;
use super::{ClockUnderTest, PairMode};
use judge::{judge, signed_ticks_to_ns};
use serde::Serialize;

/// The verdict on one clock for one CPU pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No warp, and the offset bounds contain 0.
    InSync,
    /// Time went backwards between readings taken in order.
    Warp,
    /// The offset bounds exclude 0: one CPU's clock is ahead.
    Offset,
    /// The offset bounds crossed: the offset changed during the run.
    Inconsistent,
    /// Too few cross-CPU comparisons to say anything (threads never met).
    Inconclusive,
}

impl Verdict {
    /// Whether this verdict is a problem (exit status 1).
    pub fn is_problem(self) -> bool {
        matches!(self, Verdict::Warp | Verdict::Offset | Verdict::Inconsistent)
    }

    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::InSync => "in sync",
            Verdict::Warp => "WARP",
            Verdict::Offset => "OFFSET",
            Verdict::Inconsistent => "INCONSISTENT",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// One clock on one CPU pair. `_a_to_b` / `b_behind_a` name the direction;
/// offsets are `clock_b - clock_a`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ClockPairReport {
    /// The clock's command-line name (`rdtscp`, `monotonic`).
    pub clock: &'static str,
    /// Its display name (`RDTSCP`, `clock_gettime (CLOCK_MONOTONIC)`).
    pub clock_name: &'static str,
    /// Ticks per second used for the ns fields (`null`: ticks only).
    pub frequency_hz: Option<u64>,
    /// Where that frequency came from.
    pub frequency_source: Option<String>,
    /// The warp test's counts: `iterations`, `handovers_a_to_b`,
    /// `handovers_b_to_a`, `warps`, `warps_b_behind_a`, `warps_a_behind_b`,
    /// `max_warp_ticks` (its duration is `warp_test_ns`).
    #[serde(flatten)]
    pub warp: WarpResult,
    /// The largest backward step in ns.
    pub max_warp_ns: Option<u64>,
    /// How long the warp test ran.
    pub warp_test_ns: u64,
    /// Ping-pong: completed round trips.
    pub offset_rounds: u64,
    /// Ping-pong: lower bound of `clock_b - clock_a` in ticks.
    pub offset_lower_ticks: Option<i64>,
    /// Ping-pong: upper bound of `clock_b - clock_a` in ticks.
    pub offset_upper_ticks: Option<i64>,
    /// Lower bound of `clock_b - clock_a` in ns.
    pub offset_lower_ns: Option<i64>,
    /// Upper bound of `clock_b - clock_a` in ns.
    pub offset_upper_ns: Option<i64>,
    /// Shortest round trip on CPU a in ticks.
    pub min_round_trip_ticks: Option<u64>,
    /// Shortest round trip on CPU a in ns.
    pub min_round_trip_ns: Option<u64>,
    /// How long the ping-pong estimate ran.
    pub offset_test_ns: u64,
    /// The verdict.
    pub verdict: Verdict,
    /// The verdict in words, naming the CPU that is off.
    pub verdict_text: String,
}

/// Every clock on one CPU pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PairReport {
    /// The pair as planned: its CPUs, how they relate, their packages and
    /// the planned duration of each of its tests.
    #[serde(flatten)]
    pub pair: PlannedPair,
    /// What each clock showed on it.
    pub clocks: Vec<ClockPairReport>,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CrossCpuReport {
    /// The CPUs tested.
    pub cpus: Vec<usize>,
    /// Which pairs were planned.
    pub pair_mode: PairMode,
    /// The topology read (`2 packages, 2 dies, 96 cores, 192 CPUs`), `None` when not read.
    pub topology: Option<String>,
    /// The clocks tested on each pair (command-line names).
    pub clocks: Vec<&'static str>,
    /// How many pairs were planned (fewer are reported when interrupted).
    pub pairs_planned: usize,
    /// The time budget asked for.
    pub budget_ns: u64,
    /// The duration of each test (warp or ping-pong) of one clock on a
    /// weight-1 pair (within a die); others run a multiple ([`PairKind::weight`](super::PairKind::weight)).
    pub test_ns: u64,
    /// How long the planned tests take.
    pub expected_ns: u64,
    /// Why the run takes longer than the budget, when it does.
    pub extended: Option<String>,
    /// Handovers each direction must see before a warp test may end.
    pub min_handovers: u64,
    /// What was measured, one entry per CPU pair.
    pub pairs: Vec<PairReport>,
    /// Whether a stop request ended the run early.
    pub interrupted: bool,
    /// How long the run took.
    pub elapsed_ns: u64,
}

impl CrossCpuReport {
    /// Every (pair, clock) result.
    pub fn results(&self) -> impl Iterator<Item = (&PairReport, &ClockPairReport)> {
        self.pairs.iter().flat_map(|p| p.clocks.iter().map(move |c| (p, c)))
    }

    /// Whether any result is a problem (a warp, a proven offset, crossed bounds).
    pub fn has_problem(&self) -> bool {
        self.results().any(|(_, c)| c.verdict.is_problem())
    }

    /// One line: how many pairs and clocks, and what was found.
    pub fn summary(&self) -> String {
        let results: Vec<_> = self.results().collect();
        let count = |v: Verdict| results.iter().filter(|(_, c)| c.verdict == v).count();
        let mut found = Vec::new();
        for (v, what) in [
            (Verdict::Warp, "with warps"),
            (Verdict::Offset, "with a proven offset"),
            (Verdict::Inconsistent, "with crossed offset bounds"),
            (Verdict::Inconclusive, "inconclusive"),
        ] {
            let n = count(v);
            if n > 0 {
                found.push(format!("{n} {what}"));
            }
        }
        let head = format!(
            "{} of {} CPU pair{}, {} clock result{}",
            self.pairs.len(),
            self.pairs_planned,
            if self.pairs_planned == 1 { "" } else { "s" },
            results.len(),
            if results.len() == 1 { "" } else { "s" },
        );
        let tail = if found.is_empty() {
            "all in sync: no warp, no offset beyond the measurement bounds".to_string()
        } else {
            found.join(", ")
        };
        let stop = if self.interrupted { " (interrupted)" } else { "" };
        format!("{head}: {tail}{stop}")
    }
}

impl ClockPairReport {
    /// Builds the report of `clock` on `cpu_a`/`cpu_b` from both tests.
    pub fn new(
        clock: &ClockUnderTest,
        cpu_a: usize,
        cpu_b: usize,
        warp: &WarpResult,
        offset: &OffsetResult,
        min_handovers: u64,
    ) -> ClockPairReport {
        let scale = clock.scale;
        let (verdict, verdict_text) = judge(cpu_a, cpu_b, warp, offset, scale, min_handovers);
        ClockPairReport {
            clock: clock.id.cli_name(),
            clock_name: clock.id.display_name(),
            frequency_hz: scale.map(|s| s.hz()),
            frequency_source: clock.scale_source.clone().filter(|_| scale.is_some()),
            warp: *warp,
            max_warp_ns: scale.map(|s| s.ticks_to_ns(warp.max_warp_ticks)),
            warp_test_ns: warp.elapsed_ns,
            offset_rounds: offset.rounds,
            offset_lower_ticks: offset.lower_ticks,
            offset_upper_ticks: offset.upper_ticks,
            offset_lower_ns: scale.zip(offset.lower_ticks).map(|(s, t)| signed_ticks_to_ns(s, t)),
            offset_upper_ns: scale.zip(offset.upper_ticks).map(|(s, t)| signed_ticks_to_ns(s, t)),
            min_round_trip_ticks: offset.min_round_trip_ticks,
            min_round_trip_ns: scale.zip(offset.min_round_trip_ticks).map(|(s, t)| s.ticks_to_ns(t)),
            offset_test_ns: offset.elapsed_ns,
            verdict,
            verdict_text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope::Scale;

    #[test]
    fn signed_conversion() {
        let ghz2 = Scale::from_hz(2_000_000_000).unwrap();
        assert_eq!(signed_ticks_to_ns(ghz2, -2000), -1000);
        assert_eq!(signed_ticks_to_ns(ghz2, 2001), 1000);
        assert_eq!(signed_ticks_to_ns(Scale::NANOSECONDS, i64::MIN), i64::MIN + 1);
    }
}
