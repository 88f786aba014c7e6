//! The report by package, in plain language: every clock's results grouped
//! by package pair ([`PackageGroup`]) and one answer per clock
//! ([`ClockAnswer`]): whether the packages agree, or which one is off and by
//! how much.

use super::{ClockPairReport, CrossCpuReport, PairReport, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

/// One clock's results for one package pair (or within one package), for
/// the report by topology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
    /// an inconclusive result, then the largest warp, then the widest offset:
    /// its CPU a.
    pub worst_cpu_a: usize,
    /// The worst pair's CPU b.
    pub worst_cpu_b: usize,
    /// The worst pair's verdict.
    pub worst_verdict: Verdict,
    /// The worst pair's verdict in words.
    pub worst_text: String,
}

/// One clock's one-line answer by package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ClockAnswer {
    /// The clock's command-line name.
    pub clock: &'static str,
    /// Whether the answer reports a problem.
    pub problem: bool,
    /// The answer: `all 2 packages agree within ±66 ns`, or which package is off and by how much.
    pub text: String,
}

/// How bad a verdict is, for ranking: a warp before crossed bounds before
/// an offset before an inconclusive result.
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

/// "agree within ±N ns", or why there is no N.
fn agree_words(n: Option<u64>) -> String {
    match n {
        Some(n) => format!("agree within ±{n} ns"),
        None => "show no warp or offset (no offset in ns: the frequency is unknown)".to_string(),
    }
}

/// The group's worst pair in words.
fn worst_words(g: &PackageGroup) -> String {
    format!("CPU {} / CPU {}: {}", g.worst_cpu_a, g.worst_cpu_b, g.worst_text)
}

/// "s" unless `n` is 1.
fn plural(n: impl Into<u64>) -> &'static str {
    if n.into() == 1 {
        ""
    } else {
        "s"
    }
}

/// A group's key: (within one package, clock index, lower package, higher
/// package), so groups across packages sort first.
type GroupKey = (bool, usize, Option<i32>, Option<i32>);

/// The worst pair's rank: (severity, warp ticks, widest bound).
type WorstRank = (u8, u64, u64);

impl PackageGroup {
    /// A group of `c`'s clock between `package_a` and `package_b` with no
    /// pair counted yet; `p` is its worst pair until one is counted.
    fn empty(p: &PairReport, c: &ClockPairReport, package_a: Option<i32>, package_b: Option<i32>) -> PackageGroup {
        PackageGroup {
            clock: c.clock,
            package_a,
            package_b,
            pairs: 0,
            problems: 0,
            inconclusive: 0,
            warps: 0,
            max_warp_ns: c.max_warp_ns.map(|_| 0),
            offset_lower_ns: None,
            offset_upper_ns: None,
            agreed_lower_ns: None,
            agreed_upper_ns: None,
            worst_cpu_a: p.pair.cpu_a,
            worst_cpu_b: p.pair.cpu_b,
            worst_verdict: c.verdict,
            worst_text: c.verdict_text.clone(),
        }
    }

    /// Counts one pair's result: its verdict and warps.
    fn count(&mut self, c: &ClockPairReport) {
        self.pairs += 1;
        self.problems += usize::from(c.verdict.is_problem());
        self.inconclusive += usize::from(c.verdict == Verdict::Inconclusive);
        self.warps += c.warp.warps;
        self.max_warp_ns = self.max_warp_ns.zip(c.max_warp_ns).map(|(a, b)| a.max(b));
    }

    /// Widens the offset bounds by one pair's bounds `[l, h]` (oriented as
    /// the group's), and narrows the bounds all its pairs agree on.
    fn add_bounds(&mut self, l: i64, h: i64) {
        let had = self.offset_lower_ns.is_some();
        self.offset_lower_ns = Some(self.offset_lower_ns.map_or(l, |x| x.min(l)));
        self.offset_upper_ns = Some(self.offset_upper_ns.map_or(h, |x| x.max(h)));
        if !had {
            (self.agreed_lower_ns, self.agreed_upper_ns) = (Some(l), Some(h));
        } else if let (Some(al), Some(ah)) = (self.agreed_lower_ns, self.agreed_upper_ns) {
            let (al, ah) = (al.max(l), ah.min(h));
            (self.agreed_lower_ns, self.agreed_upper_ns) = if al <= ah { (Some(al), Some(ah)) } else { (None, None) };
        }
    }

    /// Makes `p`'s result `c` the group's worst pair.
    fn set_worst(&mut self, p: &PairReport, c: &ClockPairReport) {
        self.worst_cpu_a = p.pair.cpu_a;
        self.worst_cpu_b = p.pair.cpu_b;
        self.worst_verdict = c.verdict;
        self.worst_text = c.verdict_text.clone();
    }
}

/// `c`'s offset bounds, negated and swapped when `flip` (so they read as the
/// higher package's CPU minus the lower one's).
fn oriented_ns(c: &ClockPairReport, flip: bool) -> (Option<i64>, Option<i64>) {
    match (c.offset_lower_ns, c.offset_upper_ns) {
        (Some(l), Some(h)) if flip => (Some(-h), Some(-l)),
        other => other,
    }
}

impl CrossCpuReport {
    /// Every clock's results grouped by package pair (lower package first),
    /// across-package groups first, then within each package.
    pub fn package_groups(&self) -> Vec<PackageGroup> {
        let mut groups: BTreeMap<GroupKey, PackageGroup> = BTreeMap::new();
        let mut worst: BTreeMap<GroupKey, WorstRank> = BTreeMap::new();
        for p in &self.pairs {
            let (lo_pkg, hi_pkg) = (
                p.pair.package_a.min(p.pair.package_b),
                p.pair.package_a.max(p.pair.package_b),
            );
            let flip = p.pair.package_a != p.pair.package_b && p.pair.package_a > p.pair.package_b;
            for (ci, c) in p.clocks.iter().enumerate() {
                let key = (lo_pkg == hi_pkg, ci, lo_pkg, hi_pkg);
                let g = groups
                    .entry(key)
                    .or_insert_with(|| PackageGroup::empty(p, c, lo_pkg, hi_pkg));
                let first = g.pairs == 0;
                g.count(c);
                if let (Some(l), Some(h)) = oriented_ns(c, flip) {
                    g.add_bounds(l, h);
                }
                let rank = (severity(c.verdict), c.warp.max_warp_ticks, widest_ns(c).unwrap_or(0));
                let w = worst.entry(key).or_insert(rank);
                if first || rank > *w {
                    *w = rank;
                    g.set_worst(p, c);
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
    let tail = inconclusive_tail(gs);
    if gs.iter().any(|g| g.package_a.is_none()) {
        return answer_without_topology(gs, &tail);
    }
    let mut packages: Vec<i32> = gs.iter().flat_map(|g| [g.package_a, g.package_b]).flatten().collect();
    packages.sort_unstable();
    packages.dedup();
    let within_bad = gs
        .iter()
        .copied()
        .filter(|g| g.package_a == g.package_b && g.problems > 0)
        .max_by_key(|g| (severity(g.worst_verdict), g.problems));
    if packages.len() == 1 {
        return answer_one_package(packages[0], gs, within_bad, &tail);
    }
    let cross: Vec<&PackageGroup> = gs.iter().copied().filter(|g| g.package_a != g.package_b).collect();
    let bad: Vec<&PackageGroup> = cross.iter().copied().filter(|g| g.problems > 0).collect();
    if bad.is_empty() {
        return answer_packages_agree(packages.len(), &cross, within_bad, &tail);
    }
    match off_package(&packages, &cross, &bad) {
        Some(off) => (true, package_off_words(off, packages[0], &bad)),
        None => (true, format!("packages disagree: {}", worst_words(bad[0]))),
    }
}

/// "; N pairs inconclusive", or nothing.
fn inconclusive_tail(gs: &[&PackageGroup]) -> String {
    let inconclusive: usize = gs.iter().map(|g| g.inconclusive).sum();
    if inconclusive > 0 {
        format!("; {inconclusive} pair{} inconclusive", plural(inconclusive as u64))
    } else {
        String::new()
    }
}

/// The answer when the topology is unknown: whether the CPUs agree.
fn answer_without_topology(gs: &[&PackageGroup], tail: &str) -> (bool, String) {
    let problems: usize = gs.iter().map(|g| g.problems).sum();
    if problems > 0 {
        let worst = gs
            .iter()
            .max_by_key(|g| (severity(g.worst_verdict), g.problems))
            .expect("not empty");
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
    }
}

/// The answer with one package: whether its CPUs agree.
fn answer_one_package(
    package: i32,
    gs: &[&PackageGroup],
    within_bad: Option<&PackageGroup>,
    tail: &str,
) -> (bool, String) {
    let head = format!("1 package (package {package}): no package pair to compare");
    match within_bad {
        Some(g) => (true, format!("{head}; its CPUs disagree: {}", worst_words(g))),
        None => (
            false,
            format!("{head}; its CPUs {}{tail}", agree_words(within_ns(gs.iter().copied()))),
        ),
    }
}

/// The answer when no package pair disagrees: within how much they agree,
/// and the package whose CPUs disagree among themselves, if any.
fn answer_packages_agree(
    packages: usize,
    cross: &[&PackageGroup],
    within_bad: Option<&PackageGroup>,
    tail: &str,
) -> (bool, String) {
    let mut text = format!(
        "all {packages} packages {}",
        agree_words(within_ns(cross.iter().copied()))
    );
    if let Some(g) = within_bad {
        text.push_str(&format!(
            ", but CPUs within package {} disagree: {}",
            g.package_a.unwrap_or_default(),
            worst_words(g)
        ));
    }
    text.push_str(tail);
    (within_bad.is_some(), text)
}

/// The package that is off: with two packages the second (the first holds
/// the boot CPU); with more, the one every problem group involves and whose
/// every group is a problem, if there is one.
fn off_package(packages: &[i32], cross: &[&PackageGroup], bad: &[&PackageGroup]) -> Option<i32> {
    if packages.len() == 2 {
        return Some(packages[1]);
    }
    packages.iter().copied().find(|&p| {
        let has = |g: &PackageGroup| g.package_a == Some(p) || g.package_b == Some(p);
        bad.iter().all(|g| has(g)) && cross.iter().filter(|g| has(g)).all(|g| g.problems > 0)
    })
}

/// Package `off` in words: by how much its clock is ahead of or behind
/// another package's (the `reference` when they were compared), or its
/// worst pair when the bounds do not say.
fn package_off_words(off: i32, reference: i32, bad: &[&PackageGroup]) -> String {
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
            plural(g.warps),
            g.max_warp_ns.map(|w| format!(", largest {w} ns")).unwrap_or_default()
        )
    } else {
        String::new()
    };
    let disagree = format!("{} of {} pairs between them disagree{warps}", g.problems, g.pairs);
    match bounds {
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
    }
}
