//! Which CPU pairs a cross-CPU run compares, how long each test runs, and
//! how long the whole run takes, decided before anything is measured (and
//! printed alone by `clockscope cross-cpu --plan`).
//!
//! # Pairs ([`PairMode`])
//! - `topology` (the default): clocks drift apart across packages (sockets)
//!   and sometimes dies, not between the threads of one core. One
//!   representative per package (its lowest allowed CPU) is compared with
//!   every other package's, in both directions; one representative per die
//!   (its lowest CPU) with the other dies' of its package; every other CPU
//!   with its die's representative. An SMT sibling of a representative is
//!   compared with the die's next core instead (threads of one core share one
//!   counter), and siblings are paired with each other only with
//!   `smt_pairs`. That is O(N) pairs: about N + P·(P−1) + D for N CPUs, P
//!   packages, D dies; beyond [`MAX_MESHED_GROUPS`] packages (or dies in a
//!   package: virtual machines often show every vCPU as its own socket) the
//!   representatives are compared with the first one only.
//! - `all`: every pair, N·(N−1)/2. `first`: each CPU with the first, N−1.
//!   Without a readable topology `topology` falls back to `first`.
//!
//! # Time budget
//! Each test (warp or ping-pong, per clock) of a pair runs `weight x unit`:
//! weight [`PairKind::weight`] is 4 across packages, 2 across dies of one
//! package, 1 otherwise. `unit = budget / (sum of weights x clocks x 2)`,
//! but at least [`MIN_TEST_NS`] (1 ms), and every warp test also runs on
//! (within its grace) until it has seen `min_handovers` handovers each way.
//! So the run takes about `unit x sum of weights x clocks x 2`: `-d` when
//! that gives every test its minimum, otherwise longer ([`Plan::extended`]
//! says by how much), and never more than `max_time_ns`
//! ([`PlanError::OverTimeLimit`] instead).
//!
//! # Bounded before anything is allocated
//! A plan takes at most [`MAX_CPUS`] CPUs and [`MAX_PAIRS`] pairs. For `all`
//! and `first` the pair count is arithmetic (N·(N−1)/2, N−1), so a plan over
//! the limit is refused before one pair is made (10,000 CPUs with `all` is
//! 49,995,000 pairs: refused, not 3.5 GB of pairs). `topology`
//! makes O(N) pairs (O(N·[`MAX_SMT_THREADS`]) with `smt_pairs`), counted
//! before they are typed and timed.

use super::{PairMode, MAX_CPUS, MIN_TEST_NS, TESTS_PER_CLOCK};
use crate::linux::topology::MAX_SMT_THREADS;
use crate::linux::{CpuList, Topology};
use serde::Serialize;
use std::collections::BTreeMap;

/// Beyond this many packages (or dies of one package) the representatives
/// are compared with the first one only, not with each other.
pub const MAX_MESHED_GROUPS: usize = 16;

/// The most pairs a plan may have: 131,072 (2^17), every pair of 512 CPUs
/// (130,816) fits. At least 4 ms each (2 clocks x 2 tests x 1 ms) that is
/// over 8 minutes of tests; the plan and its report stay in tens of MB.
pub const MAX_PAIRS: usize = 1 << 17;

/// How the two CPUs of a pair relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PairKind {
    /// In different packages (sockets).
    CrossPackage,
    /// In different dies of one package.
    CrossDie,
    /// In one die, on different cores.
    SameDie,
    /// Two threads of one core.
    SmtSiblings,
    /// The topology was not read.
    Unknown,
}

impl PairKind {
    /// How much more test time this kind of pair gets than a pair within a die.
    pub fn weight(self) -> u64 {
        match self {
            PairKind::CrossPackage => 4,
            PairKind::CrossDie => 2,
            PairKind::SameDie | PairKind::SmtSiblings | PairKind::Unknown => 1,
        }
    }

    /// Words for tables.
    pub fn label(self) -> &'static str {
        match self {
            PairKind::CrossPackage => "across packages",
            PairKind::CrossDie => "across dies",
            PairKind::SameDie => "within a die",
            PairKind::SmtSiblings => "SMT siblings",
            PairKind::Unknown => "topology unknown",
        }
    }
}

/// One pair to test. Offsets are measured as CPU b's clock minus CPU a's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PlannedPair {
    /// CPU a (offsets are CPU b's clock minus CPU a's).
    pub cpu_a: usize,
    /// CPU b.
    pub cpu_b: usize,
    /// How the two CPUs relate (across packages, dies, ...).
    pub kind: PairKind,
    /// CPU a's package (`null` when the topology is unknown).
    pub package_a: Option<i32>,
    /// CPU b's package.
    pub package_b: Option<i32>,
    /// The duration of each of its tests (per clock: warp and ping-pong).
    pub test_ns: u64,
}

/// The representative CPU of a package or of a die.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Representative {
    /// Its package.
    pub package: i32,
    /// `null` for a package's representative.
    pub die: Option<i32>,
    /// The representative CPU.
    pub cpu: usize,
}

/// A CPU in no pair, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Uncovered {
    /// The CPU.
    pub cpu: usize,
    /// Why it is in no pair.
    pub reason: String,
}

/// Pairs and time per package pair (`package_a <= package_b`; equal: within one package).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PlanGroup {
    /// The lower package (`null`: topology unknown).
    pub package_a: Option<i32>,
    /// The higher package (equal to `package_a` within one package).
    pub package_b: Option<i32>,
    /// Pairs planned in it.
    pub pairs: usize,
    /// The time its tests take, all clocks.
    pub time_ns: u64,
}

/// Why a run cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Giving every test its minimum takes longer than the time limit.
    #[error(
        "{pairs} CPU pairs need at least {:.3} s ({} ms per test and weight), more than the time limit of {:.3} s",
        *needed_ns as f64 / 1e9, MIN_TEST_NS / 1_000_000, *limit_ns as f64 / 1e9
    )]
    OverTimeLimit {
        /// Pairs planned.
        pairs: usize,
        /// The time their tests need at least.
        needed_ns: u64,
        /// The time limit.
        limit_ns: u64,
    },
    /// More CPUs than any kernel has.
    #[error("{cpus} CPUs to plan, more than {MAX_CPUS} (the x86-64 kernel's largest NR_CPUS)")]
    TooManyCpus {
        /// CPUs asked for.
        cpus: usize,
    },
    /// More pairs than a plan may have.
    #[error("{pairs} CPU pairs, more than a plan may have ({MAX_PAIRS})")]
    TooManyPairs {
        /// Pairs the plan would have.
        pairs: usize,
    },
}

/// What to plan.
#[derive(Clone, Copy, Debug)]
pub struct PlanOptions {
    /// Which pairs.
    pub mode: PairMode,
    /// Also pair the threads of each core with each other (`topology` mode).
    pub smt_pairs: bool,
    /// The time asked for (`-d`).
    pub budget_ns: u64,
    /// How far the budget may be extended to give every test its minimum (`--max-time`).
    pub max_time_ns: u64,
    /// Clocks tested on each pair.
    pub clocks: usize,
    /// Handovers each direction every warp test must see.
    pub min_handovers: u64,
}

/// The plan of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Plan {
    /// Which pairs were asked for.
    pub mode: PairMode,
    /// Whether the threads of each core are paired with each other too.
    pub smt_pairs: bool,
    /// The CPUs to test, ascending.
    pub cpus: Vec<usize>,
    /// `2 packages, 2 dies, 96 cores, 192 CPUs`; `null` when not read.
    pub topology: Option<String>,
    /// Why the topology was not read, or what was absent from it.
    pub topology_notes: Vec<String>,
    /// The package and die representatives (`topology` mode).
    pub representatives: Vec<Representative>,
    /// In test order: across packages first.
    pub pairs: Vec<PlannedPair>,
    /// CPUs in no pair (an SMT sibling alone with its core's other thread in a die without `smt_pairs`).
    pub uncovered: Vec<Uncovered>,
    /// Clocks tested on each pair.
    pub clocks: usize,
    /// Handovers each direction every warp test must see.
    pub min_handovers: u64,
    /// The time asked for (`-d`).
    pub budget_ns: u64,
    /// How far the budget may be extended (`--max-time`).
    pub max_time_ns: u64,
    /// The duration of one test of a weight-1 pair.
    #[cfg_attr(feature = "schemars", schemars(range(min = MIN_TEST_NS)))]
    pub unit_test_ns: u64,
    /// The sum of the pairs' weights.
    pub total_weight: u64,
    /// How long the tests take, all pairs and clocks.
    pub expected_ns: u64,
    /// Why the run takes longer than the budget, when it does.
    pub extended: Option<String>,
    /// Pairs and time per package pair, across packages first.
    pub groups: Vec<PlanGroup>,
}

/// Plans a run on `cpus` with `topology` (`None`: not read, with `why`).
pub fn plan(cpus: &[usize], topology: Result<&Topology, &str>, opts: &PlanOptions) -> Result<Plan, PlanError> {
    if cpus.len() > MAX_CPUS {
        return Err(PlanError::TooManyCpus { cpus: cpus.len() });
    }
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    check_pair_count(cpus.len(), opts.mode)?;
    // A topology that lacks one of the CPUs is as good as none.
    let topo = topology.ok().filter(|t| cpus.iter().all(|&c| t.place(c).is_some()));
    let mut notes: Vec<String> = match (topology, topo) {
        (Err(why), _) => vec![format!("topology not read: {why}")],
        (Ok(_), None) => vec!["topology does not cover every CPU tested: not used".to_string()],
        (Ok(t), Some(_)) => t.notes.clone(),
    };
    let mut representatives = Vec::new();
    let mut uncovered = Vec::new();
    let raw: Vec<(usize, usize)> = match (opts.mode, topo) {
        (PairMode::All | PairMode::First, _) => super::pairs(&cpus, opts.mode),
        (PairMode::Topology, None) => {
            notes.push("without the topology each CPU is compared with the first (as --pairs first)".to_string());
            super::pairs(&cpus, PairMode::First)
        }
        (PairMode::Topology, Some(t)) => topology_pairs(
            &cpus,
            t,
            opts.smt_pairs,
            &mut representatives,
            &mut uncovered,
            &mut notes,
        ),
    };
    if raw.len() > MAX_PAIRS {
        return Err(PlanError::TooManyPairs { pairs: raw.len() });
    }
    let mut pairs = typed_pairs(raw, topo);
    // The pairs most likely to disagree first (a stable sort keeps CPU order within a kind).
    pairs.sort_by_key(|p| p.kind);
    let total_weight: u64 = pairs.iter().map(|p| p.kind.weight()).sum();
    let tests_per_weight = (opts.clocks as u64).saturating_mul(TESTS_PER_CLOCK).max(1);
    let unit_test_ns = (opts.budget_ns / total_weight.saturating_mul(tests_per_weight).max(1)).max(MIN_TEST_NS);
    for p in &mut pairs {
        p.test_ns = unit_test_ns.saturating_mul(p.kind.weight());
    }
    let expected_ns = unit_test_ns
        .saturating_mul(total_weight)
        .saturating_mul(opts.clocks as u64 * TESTS_PER_CLOCK);
    let limit_ns = opts.max_time_ns.max(opts.budget_ns);
    if expected_ns > limit_ns {
        return Err(PlanError::OverTimeLimit {
            pairs: pairs.len(),
            needed_ns: expected_ns,
            limit_ns,
        });
    }
    let extended = (expected_ns > opts.budget_ns).then(|| {
        format!(
            "{:.3} s cannot give {} pairs their minimum ({} ms per test and weight): this run takes about {:.3} s",
            opts.budget_ns as f64 / 1e9,
            pairs.len(),
            MIN_TEST_NS / 1_000_000,
            expected_ns as f64 / 1e9
        )
    });
    let groups = plan_groups(&pairs, opts.clocks);
    Ok(Plan {
        mode: opts.mode,
        smt_pairs: opts.smt_pairs,
        cpus,
        topology: topo.map(Topology::describe),
        topology_notes: notes,
        representatives,
        pairs,
        uncovered,
        clocks: opts.clocks,
        min_handovers: opts.min_handovers,
        budget_ns: opts.budget_ns,
        max_time_ns: opts.max_time_ns,
        unit_test_ns,
        total_weight,
        expected_ns,
        extended,
        groups,
    })
}

/// The pairs `raw`, each with its kind and packages from `topo` (its test
/// time is set once the weights are summed).
fn typed_pairs(raw: Vec<(usize, usize)>, topo: Option<&Topology>) -> Vec<PlannedPair> {
    raw.into_iter()
        .map(|(a, b)| {
            let (pa, pb) = (topo.and_then(|t| t.place(a)), topo.and_then(|t| t.place(b)));
            let kind = match (pa, pb) {
                (Some(x), Some(y)) if x.package != y.package => PairKind::CrossPackage,
                (Some(x), Some(y)) if x.die != y.die => PairKind::CrossDie,
                (Some(x), Some(_)) if x.smt_siblings.contains(&b) => PairKind::SmtSiblings,
                (Some(_), Some(_)) => PairKind::SameDie,
                _ => PairKind::Unknown,
            };
            PlannedPair {
                cpu_a: a,
                cpu_b: b,
                kind,
                package_a: pa.map(|p| p.package),
                package_b: pb.map(|p| p.package),
                test_ns: 0,
            }
        })
        .collect()
}

/// Pairs and test time per package pair, across packages first.
fn plan_groups(pairs: &[PlannedPair], clocks: usize) -> Vec<PlanGroup> {
    let mut groups: BTreeMap<(Option<i32>, Option<i32>), PlanGroup> = BTreeMap::new();
    for p in pairs {
        let key = (p.package_a.min(p.package_b), p.package_a.max(p.package_b));
        let g = groups.entry(key).or_insert(PlanGroup {
            package_a: key.0,
            package_b: key.1,
            pairs: 0,
            time_ns: 0,
        });
        g.pairs += 1;
        g.time_ns += p.test_ns * clocks as u64 * TESTS_PER_CLOCK;
    }
    // Cross-package groups first.
    let mut groups: Vec<PlanGroup> = groups.into_values().collect();
    groups.sort_by_key(|g| (g.package_a == g.package_b, g.package_a, g.package_b));
    groups
}

/// Refuses, before any pair is made, a plan of `n` CPUs in `all` or `first`
/// mode whose pair count (arithmetic) is over [`MAX_PAIRS`]. `topology`
/// makes O(N) pairs, counted once made; the time limit is checked on the
/// pairs made, with their weights.
fn check_pair_count(n: usize, mode: PairMode) -> Result<(), PlanError> {
    let pairs = match mode {
        PairMode::All => n.saturating_mul(n.saturating_sub(1)) / 2,
        PairMode::First => n.saturating_sub(1),
        PairMode::Topology => return Ok(()),
    };
    if pairs > MAX_PAIRS {
        return Err(PlanError::TooManyPairs { pairs });
    }
    Ok(())
}

/// Compares `reps` with each other: every pair (both directions when
/// `both_ways`), or each with the first beyond [`MAX_MESHED_GROUPS`].
fn mesh(reps: &[usize], both_ways: bool, out: &mut Vec<(usize, usize)>) -> bool {
    let meshed = reps.len() <= MAX_MESHED_GROUPS;
    for (i, &a) in reps.iter().enumerate() {
        for &b in &reps[i + 1..] {
            if !meshed && i > 0 {
                break;
            }
            out.push((a, b));
            if both_ways {
                out.push((b, a));
            }
        }
    }
    meshed
}

/// The `topology` mode's pairs (see the module documentation).
fn topology_pairs(
    cpus: &[usize],
    t: &Topology,
    smt_pairs: bool,
    representatives: &mut Vec<Representative>,
    uncovered: &mut Vec<Uncovered>,
    notes: &mut Vec<String>,
) -> Vec<(usize, usize)> {
    // package -> die -> CPUs (ascending, as `cpus` is).
    let mut tree: BTreeMap<i32, BTreeMap<i32, Vec<usize>>> = BTreeMap::new();
    for &c in cpus {
        let p = t.place(c).expect("checked by the caller");
        tree.entry(p.package).or_default().entry(p.die).or_default().push(c);
    }
    let mut out = Vec::new();
    let package_reps: Vec<usize> = tree
        .iter()
        .map(|(&package, dies)| {
            let cpu = dies.values().next().expect("a die has CPUs")[0];
            representatives.push(Representative {
                package,
                die: None,
                cpu,
            });
            cpu
        })
        .collect();
    if !mesh(&package_reps, true, &mut out) {
        notes.push(format!(
            "{} packages (more than {MAX_MESHED_GROUPS}): each package is compared with the first one only",
            package_reps.len()
        ));
    }
    for (&package, dies) in &tree {
        let die_reps: Vec<usize> = dies.values().map(|d| d[0]).collect();
        if dies.len() > 1 {
            for (&die, d) in dies {
                representatives.push(Representative {
                    package,
                    die: Some(die),
                    cpu: d[0],
                });
            }
            if !mesh(&die_reps, false, &mut out) {
                notes.push(format!(
                    "package {package} has {} dies (more than {MAX_MESHED_GROUPS}): each die is compared with the \
                     first one only",
                    dies.len()
                ));
            }
        }
        for d in dies.values() {
            let rep = d[0];
            // The die's first CPU on another core than the representative.
            let alt = d.iter().copied().find(|&c| c != rep && !t.are_smt_siblings(rep, c));
            for &c in &d[1..] {
                if !t.are_smt_siblings(rep, c) {
                    out.push((rep, c));
                } else if let (Some(alt), false) = (alt, smt_pairs) {
                    out.push((alt, c));
                } else if !smt_pairs {
                    uncovered.push(Uncovered {
                        cpu: c,
                        reason: format!(
                            "an SMT sibling of CPU {rep}, the only core of its die (threads of one core share a \
                             counter; --smt-pairs pairs them)"
                        ),
                    });
                }
            }
            if smt_pairs {
                // At most MAX_SMT_THREADS siblings per CPU (checked when read), found in `d` by binary search.
                let mut seen = std::collections::HashSet::new();
                for &c in d {
                    if seen.contains(&c) {
                        continue;
                    }
                    let sibs: Vec<usize> = t
                        .place(c)
                        .map(|p| {
                            p.smt_siblings
                                .iter()
                                .copied()
                                .take(MAX_SMT_THREADS)
                                .filter(|s| d.binary_search(s).is_ok())
                                .collect()
                        })
                        .unwrap_or_default();
                    out.extend(sibs.iter().filter(|&&s| s != c).map(|&s| (c, s)));
                    seen.extend(sibs);
                }
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(*p));
    out
}

impl Plan {
    /// The CPUs that appear in at least one pair.
    pub fn covered(&self) -> CpuList {
        CpuList::from_cpus(self.pairs.iter().flat_map(|p| [p.cpu_a, p.cpu_b]))
    }

    /// How many pairs of each kind, in kind order.
    pub fn kind_counts(&self) -> Vec<(PairKind, usize)> {
        let mut counts: BTreeMap<PairKind, usize> = BTreeMap::new();
        for p in &self.pairs {
            *counts.entry(p.kind).or_default() += 1;
        }
        counts.into_iter().collect()
    }
}
