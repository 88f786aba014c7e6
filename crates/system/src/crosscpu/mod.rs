//! Whether a clock agrees across CPUs: the kernel's warp test and a
//! ping-pong offset estimate, for every pair of the CPUs this process may
//! run on.
//!
//! # The tests
//! - [`warp::warp_test`]: two threads pinned to CPUs a and b take turns
//!   under one lock reading the clock; a reading smaller than the one before
//!   it is a *warp* (the kernel's `check_tsc_warp`). Any warp means code that
//!   moves between CPUs can see time go backwards.
//! - [`pingpong::ping_pong`]: a on CPU a sends its reading, b answers with
//!   its own, a reads again; the offset `clock_b - clock_a` lies in
//!   `[tb - t1, tb - t0]`. Bounds that exclude 0 prove one CPU's clock is
//!   ahead, and name it.
//!
//! Both are run for the CPU counter read in order (RDTSCP, ISB;CNTVCT_EL0)
//! and for clock_gettime(CLOCK_MONOTONIC) ([`clocks::default_clocks`]).
//!
//! # Design for testing
//! The clock is a [`CpuClock`]: `read(cpu)` is told which CPU the reading
//! thread is pinned to, so tests script per-CPU clocks (offsets, warps every
//! Nth read) over a shared counter. Pinning is a [`Pinner`]: [`OsPinner`]
//! calls `sched_setaffinity`, [`NoPinning`] does nothing. Every wait is
//! bounded by the test's deadline plus a grace period ([`spin`]).
//!
//! # Pairs and budget
//! [`plan()`] chooses the pairs from the CPU topology ([`PairMode::Topology`]:
//! O(N), every package pair) or takes every pair ([`PairMode::All`],
//! N*(N-1)/2) or each CPU with the first ([`PairMode::First`], N-1, as the
//! kernel checks each CPU against the boot CPU), and splits `budget_ns` over
//! pairs x clocks x 2 tests, weighted towards pairs across packages, each
//! test at least [`MIN_TEST_NS`] (the rule is in [`mod@plan`]). [`run_plan`]
//! measures a plan; [`report::CrossCpuReport::package_groups`] and
//! [`report::CrossCpuReport::answers`] read the result by package.

pub mod affinity;
pub mod clocks;
pub mod pingpong;
pub mod plan;
pub mod report;
pub mod spin;
pub mod warp;

pub use affinity::AffinityError;
pub use pingpong::{ping_pong, OffsetFinding, OffsetResult};
pub use plan::{plan, PairKind, Plan, PlanError, PlanOptions, PlannedPair, MAX_PAIRS};
pub use report::{ClockAnswer, ClockPairReport, CrossCpuReport, PackageGroup, PairReport, Verdict};
pub use warp::{warp_test, WarpResult};

use crate::linux::{self, CpuSet, Evidence, Topology};
use clockscope::ClockId;
use clockscope::Scale;
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// A clock that can be read from a thread pinned to a CPU. `cpu` is the CPU
/// the thread was pinned to; real clocks ignore it, scripted ones use it to
/// give each CPU its own offset or fault.
pub trait CpuClock: Sync {
    /// One ordered reading, in the clock's ticks.
    fn read(&self, cpu: usize) -> u64;
}

impl<F: Fn(usize) -> u64 + Sync> CpuClock for F {
    #[inline(always)]
    fn read(&self, cpu: usize) -> u64 {
        self(cpu)
    }
}

/// Moves the calling thread onto a CPU.
pub trait Pinner: Sync {
    /// Pins the calling thread to `cpu`.
    fn pin(&self, cpu: usize) -> Result<(), CrossCpuError>;
}

/// Real pinning with `sched_setaffinity` (Linux).
#[derive(Clone, Copy, Debug, Default)]
pub struct OsPinner;

impl Pinner for OsPinner {
    fn pin(&self, cpu: usize) -> Result<(), CrossCpuError> {
        affinity::pin_current_thread(cpu).map_err(CrossCpuError::from)
    }
}

/// No pinning: both threads run wherever the scheduler puts them (tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPinning;

impl Pinner for NoPinning {
    fn pin(&self, _cpu: usize) -> Result<(), CrossCpuError> {
        Ok(())
    }
}

/// Why a cross-CPU run failed.
#[derive(Debug, thiserror::Error)]
pub enum CrossCpuError {
    /// An affinity system call failed or is not available.
    #[error(transparent)]
    Affinity(#[from] AffinityError),
    /// This side stopped because the thread on the other CPU failed.
    #[error("the measuring thread on CPU {cpu} stopped because its partner failed")]
    PartnerFailed {
        /// The CPU whose thread stopped.
        cpu: usize,
    },
    /// The two threads were not both running within the start timeout.
    #[error("the measuring threads on CPUs {cpu_a} and {cpu_b} did not both start within 5 s")]
    StartTimeout {
        /// The pair's CPU a.
        cpu_a: usize,
        /// The pair's CPU b.
        cpu_b: usize,
    },
    /// A measuring thread panicked.
    #[error("the measuring thread on CPU {cpu} panicked")]
    ThreadPanicked {
        /// The CPU the thread was pinned to.
        cpu: usize,
    },
    /// The run cannot be planned within its time limit.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// A clock to test: what it is, how its ticks become ns, and how to read it.
pub struct ClockUnderTest {
    /// Which clock (names in reports).
    pub id: ClockId,
    /// Ticks to ns (`None`: report ticks only).
    pub scale: Option<Scale>,
    /// Where the scale's frequency came from.
    pub scale_source: Option<String>,
    /// The reads.
    pub clock: Box<dyn CpuClock>,
}

/// Which CPU pairs to test.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PairMode {
    /// From the CPU topology: package and die representatives with each
    /// other, every other CPU with its die's representative ([`plan()`]).
    #[default]
    Topology,
    /// Every pair: N*(N-1)/2.
    All,
    /// Each CPU with the first one: N-1 (the kernel's check against the boot CPU).
    First,
}

/// The most CPUs a plan or run takes: 8192, the x86-64 kernel's largest
/// NR_CPUS ([`linux::cpulist::DEFAULT_KERNEL_MAX_CPU`] + 1). Callers check a
/// CPU list's length against it before expanding the list.
pub const MAX_CPUS: usize = linux::cpulist::DEFAULT_KERNEL_MAX_CPU + 1;

/// The shortest test (1 ms): below this a 2-thread run is mostly start-up.
pub const MIN_TEST_NS: u64 = 1_000_000;
/// Tests per clock per pair: the warp test and the ping-pong estimate.
pub const TESTS_PER_CLOCK: u64 = 2;
/// Handovers each direction must see before a warp test may end: enough
/// that both CPUs really alternated, few enough for a loaded machine.
pub const DEFAULT_MIN_HANDOVERS: u64 = 100;
/// The least extra time a test may take to reach its handovers or first
/// round (50 ms: several scheduler time slices).
pub const MIN_GRACE_NS: u64 = 50_000_000;

/// Options of one test (warp or ping-pong) on one pair.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// How long the test runs.
    pub duration_ns: u64,
    /// How much longer it may run to reach `min_handovers` (warp) or a first
    /// round (ping-pong); also bounds every wait.
    pub grace_ns: u64,
    /// Handovers each direction must see before the warp test may end.
    pub min_handovers: u64,
    /// How threads are pinned.
    pub pinner: &'a dyn Pinner,
    /// Asked now and then; true stops the test (Ctrl-C).
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

impl<'a> RunOptions<'a> {
    /// A test of `duration_ns` with a grace of `max(duration, 50 ms)` and
    /// [`DEFAULT_MIN_HANDOVERS`].
    pub fn new(duration_ns: u64, pinner: &'a dyn Pinner, stop: &'a (dyn Fn() -> bool + Sync)) -> Self {
        RunOptions {
            duration_ns,
            grace_ns: duration_ns.max(MIN_GRACE_NS),
            min_handovers: DEFAULT_MIN_HANDOVERS,
            pinner,
            stop,
        }
    }
}

/// The CPU pairs `(a, b)`, `a` before `b` in `cpus`, without topology
/// ([`PairMode::Topology`] is [`PairMode::First`] here; [`plan()`] uses the topology).
pub fn pairs(cpus: &[usize], mode: PairMode) -> Vec<(usize, usize)> {
    match mode {
        PairMode::All => cpus
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| cpus[i + 1..].iter().map(move |&b| (a, b)))
            .collect(),
        PairMode::First | PairMode::Topology => match cpus.split_first() {
            Some((&first, rest)) => rest.iter().map(|&b| (first, b)).collect(),
            None => Vec::new(),
        },
    }
}

/// The CPUs this process may use, with context.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CpuContext {
    /// From `sched_getaffinity` (reflects cgroup cpusets and taskset).
    pub allowed: Vec<usize>,
    /// `/sys/devices/system/cpu/online` ([`linux::read_cpus_online_file`]).
    pub online: Evidence<CpuSet>,
    /// The cgroup cpuset ([`linux::read_cpuset`]); context only, the
    /// affinity mask already reflects it.
    pub cgroup_cpuset: Evidence<CpuSet>,
}

/// Reads the affinity mask, and the online and cpuset files under `root`
/// (`/` on a real system).
pub fn cpu_context(root: &Path) -> Result<CpuContext, CrossCpuError> {
    Ok(CpuContext {
        allowed: affinity::allowed_cpus()?,
        online: linux::read_cpus_online_file(root),
        cgroup_cpuset: linux::read_cpuset(root),
    })
}

/// How a whole run is done.
#[derive(Clone, Copy)]
pub struct Settings<'a> {
    /// Total time for all pairs, clocks and tests.
    pub budget_ns: u64,
    /// Which pairs.
    pub pair_mode: PairMode,
    /// See [`RunOptions::min_handovers`].
    pub min_handovers: u64,
    /// Each test's grace ([`RunOptions::grace_ns`]) is the larger of this and
    /// its duration.
    pub min_grace_ns: u64,
    /// The CPUs' topology for [`PairMode::Topology`] and the report by
    /// package (`Err`: why it was not read).
    pub topology: Result<&'a Topology, &'a str>,
    /// Pair the threads of each core with each other too ([`PairMode::Topology`]).
    pub smt_pairs: bool,
    /// How far `budget_ns` may be extended to give every test its minimum.
    pub max_time_ns: u64,
    /// How threads are pinned.
    pub pinner: &'a dyn Pinner,
    /// Asked now and then; true stops the run (Ctrl-C).
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// The default `max_time_ns` (60 s): how far a budget may be extended.
pub const DEFAULT_MAX_TIME_NS: u64 = 60_000_000_000;

impl<'a> Settings<'a> {
    /// Every pair, no topology, [`DEFAULT_MIN_HANDOVERS`], [`MIN_GRACE_NS`],
    /// [`DEFAULT_MAX_TIME_NS`].
    pub fn new(budget_ns: u64, pinner: &'a dyn Pinner, stop: &'a (dyn Fn() -> bool + Sync)) -> Self {
        Settings {
            budget_ns,
            pair_mode: PairMode::All,
            topology: Err("not read"),
            smt_pairs: false,
            max_time_ns: DEFAULT_MAX_TIME_NS,
            min_handovers: DEFAULT_MIN_HANDOVERS,
            min_grace_ns: MIN_GRACE_NS,
            pinner,
            stop,
        }
    }

    /// The plan options of these settings for `clocks` clocks.
    pub fn plan_options(&self, clocks: usize) -> PlanOptions {
        PlanOptions {
            mode: self.pair_mode,
            smt_pairs: self.smt_pairs,
            budget_ns: self.budget_ns,
            max_time_ns: self.max_time_ns,
            clocks,
            min_handovers: self.min_handovers,
        }
    }
}

/// Runs both tests for every clock on every pair of `planned`, calling
/// `progress(done_ns, total_ns)` after each test. A stop request ends the run
/// after the test in progress; what was measured is kept. `settings` gives
/// the pinning, stop request, handovers and grace (its budget and pair
/// choice are already in the plan).
pub fn run_plan(
    planned: &Plan,
    clocks: &[ClockUnderTest],
    settings: &Settings<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CrossCpuReport, CrossCpuError> {
    let started = Instant::now();
    let total_ns: u64 = planned
        .pairs
        .iter()
        .map(|p| p.test_ns.saturating_mul(TESTS_PER_CLOCK * clocks.len() as u64))
        .sum();
    let mut done_ns = 0u64;
    let mut interrupted = false;
    let mut reports = Vec::new();
    'pairs: for planned_pair in &planned.pairs {
        let (a, b, test_ns) = (planned_pair.cpu_a, planned_pair.cpu_b, planned_pair.test_ns);
        let mut opts = RunOptions::new(test_ns, settings.pinner, settings.stop);
        opts.min_handovers = settings.min_handovers;
        opts.grace_ns = test_ns.max(settings.min_grace_ns);
        let mut pair = PairReport {
            pair: *planned_pair,
            clocks: Vec::new(),
        };
        for c in clocks {
            let warp = warp_test(&*c.clock, a, b, &opts)?;
            done_ns += test_ns;
            progress(done_ns, total_ns);
            let offset = if warp.stopped {
                OffsetResult::default()
            } else {
                let o = ping_pong(&*c.clock, a, b, &opts)?;
                done_ns += test_ns;
                progress(done_ns, total_ns);
                o
            };
            pair.clocks
                .push(ClockPairReport::new(c, a, b, &warp, &offset, settings.min_handovers));
            if warp.stopped || offset.stopped || (settings.stop)() {
                interrupted = true;
                reports.push(pair);
                break 'pairs;
            }
        }
        reports.push(pair);
    }
    Ok(CrossCpuReport {
        cpus: planned.cpus.clone(),
        pair_mode: planned.mode,
        topology: planned.topology.clone(),
        clocks: clocks.iter().map(|c| c.id.cli_name()).collect(),
        pairs_planned: planned.pairs.len(),
        budget_ns: planned.budget_ns,
        test_ns: planned.unit_test_ns,
        expected_ns: planned.expected_ns,
        extended: planned.extended.clone(),
        min_handovers: settings.min_handovers,
        pairs: reports,
        interrupted,
        elapsed_ns: started.elapsed().as_nanos().min(u64::MAX as u128) as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_without_topology() {
        assert_eq!(pairs(&[0, 1], PairMode::All), vec![(0, 1)]);
        assert_eq!(pairs(&[0, 2, 5], PairMode::All), vec![(0, 2), (0, 5), (2, 5)]);
        assert_eq!(pairs(&[0, 2, 5], PairMode::First), vec![(0, 2), (0, 5)]);
        assert_eq!(pairs(&[3], PairMode::All), vec![]);
        assert_eq!(pairs(&[], PairMode::First), vec![]);
        let n = 64usize;
        let cpus: Vec<usize> = (0..n).collect();
        assert_eq!(pairs(&cpus, PairMode::All).len(), n * (n - 1) / 2);
    }
}
