//! What the cross-CPU tests found, per CPU pair and clock, and the verdict:
//! serialisable report types whose field names carry their units.

use super::pingpong::{OffsetFinding, OffsetResult};
use super::warp::WarpResult;
use super::{ClockUnderTest, PairMode};
use crate::convert::Scale;
use serde::Serialize;

/// The verdict on one clock for one CPU pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
pub struct ClockPairReport {
    /// The clock's command-line name (`rdtscp`, `monotonic`).
    pub clock: &'static str,
    /// Its display name (`RDTSCP`, `clock_gettime (CLOCK_MONOTONIC)`).
    pub clock_name: &'static str,
    /// Ticks per second used for the ns fields (`null`: ticks only).
    pub frequency_hz: Option<u64>,
    /// Where that frequency came from.
    pub frequency_source: Option<String>,
    /// Warp test: readings taken on both CPUs.
    pub iterations: u64,
    /// Warp test: readings on CPU b right after one on CPU a.
    pub handovers_a_to_b: u64,
    /// Warp test: readings on CPU a right after one on CPU b.
    pub handovers_b_to_a: u64,
    /// Warp test: readings smaller than the one taken before them.
    pub warps: u64,
    /// Warps where CPU b read less than CPU a just had.
    pub warps_b_behind_a: u64,
    /// Warps where CPU a read less than CPU b just had.
    pub warps_a_behind_b: u64,
    /// The largest backward step in ticks.
    pub max_warp_ticks: u64,
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
pub struct PairReport {
    pub cpu_a: usize,
    pub cpu_b: usize,
    pub clocks: Vec<ClockPairReport>,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrossCpuReport {
    /// The CPUs tested.
    pub cpus: Vec<usize>,
    /// Which pairs were planned.
    pub pair_mode: PairMode,
    /// The clocks tested on each pair (command-line names).
    pub clocks: Vec<&'static str>,
    /// How many pairs were planned (fewer are reported when interrupted).
    pub pairs_planned: usize,
    /// The time budget asked for.
    pub budget_ns: u64,
    /// The duration of each test (warp or ping-pong) of one clock on one pair.
    pub test_ns: u64,
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

/// `ticks` (signed) in ns at `scale`, saturating.
pub fn signed_ticks_to_ns(scale: Scale, ticks: i64) -> i64 {
    let ns = scale.ticks_to_ns(ticks.unsigned_abs()).min(i64::MAX as u64) as i64;
    if ticks < 0 {
        -ns
    } else {
        ns
    }
}

fn amount(ticks: u64, scale: Option<Scale>) -> String {
    match scale {
        Some(s) => format!("{} ns", s.ticks_to_ns(ticks)),
        None => format!("{ticks} ticks"),
    }
}

fn signed(ticks: i64, scale: Option<Scale>) -> String {
    match scale {
        Some(s) => format!("{:+} ns", signed_ticks_to_ns(s, ticks)),
        None => format!("{ticks:+} ticks"),
    }
}

/// The offset in words when it is proven nonzero, naming the CPU ahead.
fn offset_words(cpu_a: usize, cpu_b: usize, o: &OffsetResult, scale: Option<Scale>) -> Option<String> {
    let (lo, hi) = (o.lower_ticks?, o.upper_ticks?);
    let (ahead, behind, least, most) = match o.finding() {
        OffsetFinding::BAhead => (cpu_b, cpu_a, lo, hi),
        OffsetFinding::AAhead => (cpu_a, cpu_b, -hi, -lo),
        _ => return None,
    };
    let least = amount(least.unsigned_abs(), scale);
    let most = amount(most.unsigned_abs(), scale);
    Some(format!(
        "CPU {ahead} is {least} ahead of CPU {behind} (at least; at most {most})"
    ))
}

/// The verdict on one clock for one CPU pair, and its words.
pub fn judge(
    cpu_a: usize,
    cpu_b: usize,
    warp: &WarpResult,
    offset: &OffsetResult,
    scale: Option<Scale>,
    min_handovers: u64,
) -> (Verdict, String) {
    let offset_text = offset_words(cpu_a, cpu_b, offset, scale);
    if warp.warps > 0 {
        let who = match (warp.warps_b_behind_a > 0, warp.warps_a_behind_b > 0) {
            (true, false) => format!("CPU {cpu_b} read behind CPU {cpu_a}"),
            (false, true) => format!("CPU {cpu_a} read behind CPU {cpu_b}"),
            (true, true) => format!("CPUs {cpu_a} and {cpu_b} each read behind the other"),
            (false, false) => "time went backwards on one CPU".to_string(),
        };
        let mut text = format!(
            "{} warp{} (largest {}): {who}",
            warp.warps,
            if warp.warps == 1 { "" } else { "s" },
            amount(warp.max_warp_ticks, scale)
        );
        if let Some(o) = offset_text {
            text.push_str("; ");
            text.push_str(&o);
        }
        return (Verdict::Warp, text);
    }
    match offset.finding() {
        OffsetFinding::Crossed => {
            let (lo, hi) = (offset.lower_ticks.unwrap_or(0), offset.upper_ticks.unwrap_or(0));
            return (
                Verdict::Inconsistent,
                format!(
                    "offset bounds crossed (lower {} > upper {}): the offset of CPU {cpu_b} to CPU {cpu_a} changed \
                     during the run",
                    signed(lo, scale),
                    signed(hi, scale)
                ),
            );
        }
        OffsetFinding::BAhead | OffsetFinding::AAhead => {
            return (Verdict::Offset, offset_text.unwrap_or_default());
        }
        OffsetFinding::Unmeasured | OffsetFinding::InSync => {}
    }
    if !warp.has_handovers(min_handovers.max(1)) || offset.rounds == 0 {
        // A stop request cut the tests short: say so, not that the CPUs gave too few.
        let why = if warp.stopped || offset.stopped {
            "interrupted before enough cross-CPU comparisons"
        } else {
            "too few cross-CPU comparisons"
        };
        return (
            Verdict::Inconclusive,
            format!(
                "{why}: {} + {} handovers (at least {} each way wanted), {} round trips",
                warp.handovers_a_to_b,
                warp.handovers_b_to_a,
                min_handovers.max(1),
                offset.rounds
            ),
        );
    }
    let (lo, hi) = (offset.lower_ticks.unwrap_or(0), offset.upper_ticks.unwrap_or(0));
    (
        Verdict::InSync,
        format!(
            "in sync: no warp in {} readings; offset of CPU {cpu_b} to CPU {cpu_a} within [{}, {}]",
            warp.iterations,
            signed(lo, scale),
            signed(hi, scale)
        ),
    )
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
            iterations: warp.iterations,
            handovers_a_to_b: warp.handovers_a_to_b,
            handovers_b_to_a: warp.handovers_b_to_a,
            warps: warp.warps,
            warps_b_behind_a: warp.warps_b_behind_a,
            warps_a_behind_b: warp.warps_a_behind_b,
            max_warp_ticks: warp.max_warp_ticks,
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

    fn warp(warps: u64, b_behind_a: u64, max: u64) -> WarpResult {
        WarpResult {
            iterations: 1000,
            handovers_a_to_b: 100,
            handovers_b_to_a: 100,
            warps,
            warps_b_behind_a: b_behind_a,
            max_warp_ticks: max,
            ..Default::default()
        }
    }

    fn offset(lo: i64, hi: i64) -> OffsetResult {
        OffsetResult {
            rounds: 10,
            lower_ticks: Some(lo),
            upper_ticks: Some(hi),
            min_round_trip_ticks: Some((hi - lo) as u64),
            ..Default::default()
        }
    }

    const NS: Option<Scale> = Some(Scale::NANOSECONDS);

    #[test]
    fn verdicts_name_the_cpu_that_is_off() {
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &offset(1234, 1300), NS, 10);
        assert_eq!(v, Verdict::Offset);
        assert_eq!(t, "CPU 1 is 1234 ns ahead of CPU 0 (at least; at most 1300 ns)");
        let (v, t) = judge(2, 5, &warp(0, 0, 0), &offset(-900, -50), NS, 10);
        assert_eq!(v, Verdict::Offset);
        assert_eq!(t, "CPU 2 is 50 ns ahead of CPU 5 (at least; at most 900 ns)");
        let (v, t) = judge(0, 1, &warp(3, 3, 77), &offset(-100, -60), None, 10);
        assert_eq!(v, Verdict::Warp);
        assert_eq!(
            t,
            "3 warps (largest 77 ticks): CPU 1 read behind CPU 0; CPU 0 is 60 ticks ahead of CPU 1 (at least; at \
             most 100 ticks)"
        );
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &offset(-40, 35), NS, 10);
        assert_eq!(v, Verdict::InSync);
        assert_eq!(
            t,
            "in sync: no warp in 1000 readings; offset of CPU 1 to CPU 0 within [-40 ns, +35 ns]"
        );
        let (v, _) = judge(0, 1, &warp(0, 0, 0), &offset(10, 5), NS, 10);
        assert_eq!(v, Verdict::Inconsistent);
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &offset(-40, 35), NS, 1000);
        assert_eq!(v, Verdict::Inconclusive, "{t}");
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &OffsetResult::default(), NS, 10);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(
            t.starts_with("too few cross-CPU comparisons: 100 + 100 handovers"),
            "{t}"
        );
        let stopped = WarpResult {
            stopped: true,
            ..warp(0, 0, 0)
        };
        let (v, t) = judge(0, 1, &stopped, &OffsetResult::default(), NS, 10);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(
            t.starts_with("interrupted before enough cross-CPU comparisons: 100 + 100 handovers"),
            "{t}"
        );
        assert!(!Verdict::Inconclusive.is_problem() && !Verdict::InSync.is_problem());
        assert!(Verdict::Warp.is_problem() && Verdict::Offset.is_problem() && Verdict::Inconsistent.is_problem());
    }

    #[test]
    fn signed_conversion() {
        let ghz2 = Scale::from_hz(2_000_000_000).unwrap();
        assert_eq!(signed_ticks_to_ns(ghz2, -2000), -1000);
        assert_eq!(signed_ticks_to_ns(ghz2, 2001), 1000);
        assert_eq!(signed_ticks_to_ns(Scale::NANOSECONDS, i64::MIN), i64::MIN + 1);
    }
}
