//! What the cross-CPU tests found, per CPU pair and clock, and the verdict:
//! serialisable report types whose field names carry their units.

use super::pingpong::{OffsetFinding, OffsetResult};
use super::plan::PairKind;
use super::warp::WarpResult;
use super::{ClockUnderTest, PairMode};
use crate::convert::Scale;
use serde::Serialize;
use std::collections::BTreeMap;

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
    /// How the two CPUs relate (across packages, dies, ...).
    pub kind: PairKind,
    /// CPU a's package (`None`: topology unknown).
    pub package_a: Option<i32>,
    /// CPU b's package.
    pub package_b: Option<i32>,
    /// The planned duration of each of its tests.
    pub test_ns: u64,
    pub clocks: Vec<ClockPairReport>,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
    /// weight-1 pair (within a die); others run a multiple ([`PairKind::weight`]).
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

/// One clock's results for one package pair (or within one package), for
/// the report by topology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PackageGroup {
    /// The clock's command-line name.
    pub clock: &'static str,
    /// The lower package (`None`: topology unknown).
    pub package_a: Option<i32>,
    /// The higher package (equal to `package_a` within one package).
    pub package_b: Option<i32>,
    /// CPU pairs measured.
    pub pairs: usize,
    /// Pairs with a warp, a proven offset or crossed bounds.
    pub problems: usize,
    /// Pairs with too few comparisons.
    pub inconclusive: usize,
    /// Warps, all pairs.
    pub warps: u64,
    /// The largest backward step, ns (`None` without a frequency).
    pub max_warp_ns: Option<u64>,
    /// The lowest lower offset bound of its pairs, ns: every pair's offset is
    /// at least this. Across packages, oriented as package_b's CPU minus
    /// package_a's; within one, CPU b minus CPU a of each pair.
    pub offset_lower_ns: Option<i64>,
    /// The highest upper offset bound of its pairs, ns.
    pub offset_upper_ns: Option<i64>,
    /// The tightest bounds all its pairs allow together (the largest lower and
    /// smallest upper bound), ns; `None` when they do not overlap or without a round.
    pub agreed_lower_ns: Option<i64>,
    /// See `agreed_lower_ns`.
    pub agreed_upper_ns: Option<i64>,
    /// The worst pair: a warp before crossed bounds before an offset before
    /// an inconclusive result, then the largest warp, then the widest offset.
    pub worst_cpu_a: usize,
    pub worst_cpu_b: usize,
    pub worst_verdict: Verdict,
    pub worst_text: String,
}

/// One clock's one-line answer by package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClockAnswer {
    /// The clock's command-line name.
    pub clock: &'static str,
    /// Whether the answer reports a problem.
    pub problem: bool,
    /// The answer: `all 2 packages agree within ±66 ns`, or which package is off and by how much.
    pub text: String,
}

fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Warp => 4,
        Verdict::Inconsistent => 3,
        Verdict::Offset => 2,
        Verdict::Inconclusive => 1,
        Verdict::InSync => 0,
    }
}

/// The largest magnitude of a result's offset bounds, ns.
fn widest_ns(c: &ClockPairReport) -> Option<u64> {
    Some(c.offset_lower_ns?.unsigned_abs().max(c.offset_upper_ns?.unsigned_abs()))
}

/// ±N over groups: the largest offset bound magnitude, ns.
fn within_ns<'a>(groups: impl Iterator<Item = &'a PackageGroup>) -> Option<u64> {
    groups
        .filter_map(|g| Some(g.offset_lower_ns?.unsigned_abs().max(g.offset_upper_ns?.unsigned_abs())))
        .max()
}

fn agree_words(n: Option<u64>) -> String {
    match n {
        Some(n) => format!("agree within ±{n} ns"),
        None => "show no warp or offset (no offset in ns: the frequency is unknown)".to_string(),
    }
}

fn worst_words(g: &PackageGroup) -> String {
    format!("CPU {} / CPU {}: {}", g.worst_cpu_a, g.worst_cpu_b, g.worst_text)
}

impl CrossCpuReport {
    /// Every clock's results grouped by package pair (lower package first),
    /// across-package groups first, then within each package.
    pub fn package_groups(&self) -> Vec<PackageGroup> {
        // (within one package, clock index, lower package, higher package): across packages sort first.
        type Key = (bool, usize, Option<i32>, Option<i32>);
        let mut groups: BTreeMap<Key, PackageGroup> = BTreeMap::new();
        // The worst pair's rank so far: (severity, warp ticks, widest bound).
        let mut worst_key: BTreeMap<Key, (u8, u64, u64)> = BTreeMap::new();
        for p in &self.pairs {
            let (lo_pkg, hi_pkg) = (p.package_a.min(p.package_b), p.package_a.max(p.package_b));
            let flip = p.package_a != p.package_b && p.package_a > p.package_b;
            for (ci, c) in p.clocks.iter().enumerate() {
                let key = (lo_pkg == hi_pkg, ci, lo_pkg, hi_pkg);
                let (lo, hi) = match (c.offset_lower_ns, c.offset_upper_ns) {
                    (Some(l), Some(h)) if flip => (Some(-h), Some(-l)),
                    other => other,
                };
                let g = groups.entry(key).or_insert_with(|| PackageGroup {
                    clock: c.clock,
                    package_a: lo_pkg,
                    package_b: hi_pkg,
                    pairs: 0,
                    problems: 0,
                    inconclusive: 0,
                    warps: 0,
                    max_warp_ns: c.max_warp_ns.map(|_| 0),
                    offset_lower_ns: None,
                    offset_upper_ns: None,
                    agreed_lower_ns: None,
                    agreed_upper_ns: None,
                    worst_cpu_a: p.cpu_a,
                    worst_cpu_b: p.cpu_b,
                    worst_verdict: c.verdict,
                    worst_text: c.verdict_text.clone(),
                });
                let first = g.pairs == 0;
                g.pairs += 1;
                g.problems += usize::from(c.verdict.is_problem());
                g.inconclusive += usize::from(c.verdict == Verdict::Inconclusive);
                g.warps += c.warps;
                g.max_warp_ns = g.max_warp_ns.zip(c.max_warp_ns).map(|(a, b)| a.max(b));
                if let (Some(l), Some(h)) = (lo, hi) {
                    let had = g.offset_lower_ns.is_some();
                    g.offset_lower_ns = Some(g.offset_lower_ns.map_or(l, |x| x.min(l)));
                    g.offset_upper_ns = Some(g.offset_upper_ns.map_or(h, |x| x.max(h)));
                    if !had {
                        (g.agreed_lower_ns, g.agreed_upper_ns) = (Some(l), Some(h));
                    } else if let (Some(al), Some(ah)) = (g.agreed_lower_ns, g.agreed_upper_ns) {
                        let (al, ah) = (al.max(l), ah.min(h));
                        (g.agreed_lower_ns, g.agreed_upper_ns) =
                            if al <= ah { (Some(al), Some(ah)) } else { (None, None) };
                    }
                }
                let rank = (severity(c.verdict), c.max_warp_ticks, widest_ns(c).unwrap_or(0));
                let w = worst_key.entry(key).or_insert(rank);
                if first || rank > *w {
                    *w = rank;
                    g.worst_cpu_a = p.cpu_a;
                    g.worst_cpu_b = p.cpu_b;
                    g.worst_verdict = c.verdict;
                    g.worst_text = c.verdict_text.clone();
                }
            }
        }
        groups.into_values().collect()
    }

    /// One answer per clock: whether the packages agree (within ±N ns, the
    /// largest offset bound between packages), or which package is off and
    /// by how much. The reference package is the lowest one (it holds the
    /// boot CPU the kernel synchronises the others to); with three or more
    /// packages a package is named only when every problem is between it and
    /// another package.
    pub fn answers(&self) -> Vec<ClockAnswer> {
        let groups = self.package_groups();
        self.clocks
            .iter()
            .map(|&clock| {
                let gs: Vec<&PackageGroup> = groups.iter().filter(|g| g.clock == clock).collect();
                let (problem, text) = answer(&gs);
                ClockAnswer { clock, problem, text }
            })
            .collect()
    }
}

/// The answer for one clock's groups.
fn answer(gs: &[&PackageGroup]) -> (bool, String) {
    if gs.is_empty() {
        return (false, "nothing measured".to_string());
    }
    let problems: usize = gs.iter().map(|g| g.problems).sum();
    let inconclusive: usize = gs.iter().map(|g| g.inconclusive).sum();
    let worst = gs
        .iter()
        .max_by_key(|g| (severity(g.worst_verdict), g.problems))
        .expect("not empty");
    let tail = if inconclusive > 0 {
        format!(
            "; {inconclusive} pair{} inconclusive",
            if inconclusive == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    if gs.iter().any(|g| g.package_a.is_none()) {
        return if problems > 0 {
            (
                true,
                format!("CPUs disagree (topology unknown): {}", worst_words(worst)),
            )
        } else {
            (
                false,
                format!(
                    "topology unknown: the CPUs tested {}{tail}",
                    agree_words(within_ns(gs.iter().copied()))
                ),
            )
        };
    }
    let mut packages: Vec<i32> = gs.iter().flat_map(|g| [g.package_a, g.package_b]).flatten().collect();
    packages.sort_unstable();
    packages.dedup();
    let cross: Vec<&PackageGroup> = gs.iter().copied().filter(|g| g.package_a != g.package_b).collect();
    let within_bad = gs
        .iter()
        .copied()
        .filter(|g| g.package_a == g.package_b && g.problems > 0);
    let within_bad = within_bad.max_by_key(|g| (severity(g.worst_verdict), g.problems));
    if packages.len() == 1 {
        let head = format!("1 package (package {}): no package pair to compare", packages[0]);
        return match within_bad {
            Some(g) => (true, format!("{head}; its CPUs disagree: {}", worst_words(g))),
            None => (
                false,
                format!("{head}; its CPUs {}{tail}", agree_words(within_ns(gs.iter().copied()))),
            ),
        };
    }
    let bad: Vec<&PackageGroup> = cross.iter().copied().filter(|g| g.problems > 0).collect();
    if bad.is_empty() {
        let mut text = format!(
            "all {} packages {}",
            packages.len(),
            agree_words(within_ns(cross.iter().copied()))
        );
        if let Some(g) = within_bad {
            text.push_str(&format!(
                ", but CPUs within package {} disagree: {}",
                g.package_a.unwrap_or_default(),
                worst_words(g)
            ));
        }
        text.push_str(&tail);
        return (within_bad.is_some(), text);
    }
    let reference = packages[0];
    let off = if packages.len() == 2 {
        Some(packages[1])
    } else {
        packages.iter().copied().find(|&p| {
            let has = |g: &PackageGroup| g.package_a == Some(p) || g.package_b == Some(p);
            bad.iter().all(|g| has(g)) && cross.iter().filter(|g| has(g)).all(|g| g.problems > 0)
        })
    };
    let Some(off) = off else {
        return (true, format!("packages disagree: {}", worst_words(bad[0])));
    };
    // The problem group of `off` with the reference, else its first.
    let g = bad
        .iter()
        .find(|g| g.package_a == Some(reference) && g.package_b == Some(off))
        .or_else(|| {
            bad.iter()
                .find(|g| g.package_a == Some(off) || g.package_b == Some(off))
        })
        .expect("off is in a problem group");
    let other = if g.package_a == Some(off) {
        g.package_b
    } else {
        g.package_a
    }
    .unwrap_or_default();
    let bounds = g
        .agreed_lower_ns
        .zip(g.agreed_upper_ns)
        .or(g.offset_lower_ns.zip(g.offset_upper_ns));
    // Oriented as `off` minus `other`.
    let bounds = bounds.map(|(l, h)| if g.package_b == Some(off) { (l, h) } else { (-h, -l) });
    let warps = if g.warps > 0 {
        format!(
            "; {} warp{}{}",
            g.warps,
            if g.warps == 1 { "" } else { "s" },
            g.max_warp_ns.map(|w| format!(", largest {w} ns")).unwrap_or_default()
        )
    } else {
        String::new()
    };
    let disagree = format!("{} of {} pairs between them disagree{warps}", g.problems, g.pairs);
    let text = match bounds {
        Some((l, h)) if l > 0 || h < 0 => {
            let (dir, l, h) = if l > 0 { ("ahead of", l, h) } else { ("behind", -h, -l) };
            let amount = if l == h {
                format!("{l} ns")
            } else {
                format!("{l} to {h} ns")
            };
            format!("package {off} is off: its clock is {amount} {dir} package {other}'s ({disagree})")
        }
        _ => format!(
            "package {off} is off against package {other} ({disagree}; worst {})",
            worst_words(g)
        ),
    };
    (true, text)
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
