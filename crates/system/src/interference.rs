//! Interference accounting: how much of a run the machine took away from the
//! clock (preemption, throttling, steal, interrupts), told apart from what
//! reading the clock costs.
//!
//! # Gaps, from the histogram, after the loop
//! A difference between successive reads is a *gap* when it is far above the
//! clock's normal cost:
//!
//! ```text
//! normal    = max(p50, smallest non-zero step)      # a coarse clock's step is not a gap
//! threshold = max(GAP_MULTIPLE x normal, GAP_FLOOR_NS)   # 20 x, at least 1000 ns
//! ```
//!
//! Below 10000 ns every difference is counted exactly, so gaps there and
//! their sum are exact. Every difference of 10000 ns and more is a gap
//! when the threshold is below 10000 ns (the usual case), and its log2
//! bucket keeps the exact sum of those differences (one add on the loop's
//! rare path, which already handles them), so `lost_ns` is exact too. When
//! the threshold itself is above 10000 ns (a coarse clock), it is rounded up
//! to the upper edge of its log2 bucket and the buckets above it are the
//! gaps: again exact sums, no estimate.
//!
//! # The robust read cost
//! ```text
//! read_cost_ns = (elapsed_ns - lost_ns) / (loops - gaps)
//! ```
//! the mean cost of a read with the gaps taken out; without gaps it equals
//! PostgreSQL's average loop time (`elapsed / loops`), which is reported
//! unchanged beside it.
//!
//! # Sources, read before and after each run
//! Steal time, cgroup CPU throttling and the measuring thread's involuntary
//! context switches ([`crate::linux::cpu_time`]), as differences over the
//! run ([`Snapshot`]).
//!
//! # Noisy: one definition
//! A run is *noisy* ([`is_noisy`], [`noise_reason`]) when at least
//! [`NOISY_LOST_FRACTION`] (10%) of its measured time was lost in gaps. Steal,
//! cgroup throttling and preemption all show as gaps (the clock runs on while
//! the thread is off its CPU), so the gaps' share is the one figure; the
//! sources only say where the time went. A whole report is noisy by the same
//! rule over all its clocks' kept runs together ([`lost_fraction_of`]).
//! [`repeat_while_noisy`] repeats a noisy run (at most [`MAX_RUNS`] runs in
//! all) and keeps the cleanest.

use clockscope::{Histogram, Measurement};

use crate::linux::cpu_time::{self, Throttling};
use serde::Serialize;
use std::path::Path;

/// A gap is more than this many times the clock's normal cost: a vDSO read
/// costs 15-30 ns and varies by a few ns, so 20x is far outside its spread,
/// while an interrupt (2-10 us in a guest), a context switch (a few us) or
/// a lost time slice (ms) is far above it.
pub const GAP_MULTIPLE: u64 = 20;
/// ...and never less than 1 us: PostgreSQL's own line between a cheap and a
/// slow read; a syscall read (100-700 ns) stays below it.
pub const GAP_FLOOR_NS: u64 = 1_000;
/// A run that lost 10% or more of its measured time in gaps is noisy. On a
/// quiet machine timer interrupts take 0.05-0.5% and one preemption by a
/// kernel thread (a few ms) at most a few % of a 0.1 s run; a run that
/// shares its CPU with one busy process loses about half of its time, with
/// `nice -n 19` beside busy loops 90-99% (fleet/captures/README.md). 10%
/// lies between the two with margin on both sides.
pub const NOISY_LOST_FRACTION: f64 = 0.10;
/// Steal reported beside a noisy run's gaps from 1% of the run (per CPU)...
pub const NOISY_STEAL_FRACTION: f64 = 0.01;
/// ...and at least 20 ms of it: /proc/stat counts steal in 10 ms ticks, so
/// one tick on a short run is the counter's resolution, not evidence.
pub const NOISY_STEAL_MIN_NS: u64 = 20_000_000;
/// At most this many runs of the requested duration per clock (3x the time).
pub const MAX_RUNS: u32 = 3;

/// The gaps of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gaps {
    /// Differences strictly above this many ns are gaps.
    pub threshold_ns: u64,
    /// How many differences were gaps.
    pub count: u64,
    /// Their total, ns.
    pub lost_ns: u64,
}

/// The gap threshold of `h` (see the module documentation).
pub fn gap_threshold_ns(h: &Histogram) -> u64 {
    let p50 = h.percentile(0.5).map_or(0, |p| p.ns);
    let step = h.min_nonzero().map_or(0, |p| p.ns);
    let t = GAP_MULTIPLE.saturating_mul(p50.max(step)).max(GAP_FLOOR_NS);
    if t < Histogram::EXACT_LIMIT_NS {
        t
    } else {
        Histogram::bucket_upper_ns(Histogram::bucket_of(t))
    }
}

/// The gaps of `h`: every difference above [`gap_threshold_ns`], counted and summed exactly.
pub fn find_gaps(h: &Histogram) -> Gaps {
    let threshold_ns = gap_threshold_ns(h);
    let (mut count, mut lost_ns) = (0u64, 0u64);
    if threshold_ns < Histogram::EXACT_LIMIT_NS {
        for (ns, &c) in h.exact().iter().enumerate().skip(threshold_ns as usize + 1) {
            count += c;
            lost_ns = lost_ns.saturating_add((ns as u64).saturating_mul(c));
        }
        let exact_total: u64 = h.exact().iter().sum();
        count += h.count() - exact_total;
        lost_ns = h.long_sums_ns().iter().fold(lost_ns, |a, &s| a.saturating_add(s));
    } else {
        for b in Histogram::bucket_of(threshold_ns) + 1..Histogram::BUCKETS {
            count += h.buckets()[b];
            lost_ns = lost_ns.saturating_add(h.long_sums_ns()[b]);
        }
    }
    Gaps {
        threshold_ns,
        count,
        lost_ns,
    }
}

/// The mean cost of a read with the gaps taken out (see the module
/// documentation); `None` without a read outside the gaps.
pub fn read_cost_ns(m: &Measurement, g: &Gaps) -> Option<f64> {
    let reads = m.loops().checked_sub(g.count).filter(|&r| r > 0)?;
    Some(m.elapsed_ns.saturating_sub(g.lost_ns) as f64 / reads as f64)
}

/// What the system's counters say at one instant (each `None` when its
/// source cannot be read here).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Steal time so far, ns (`/proc/stat`).
    pub steal_ns: Option<u64>,
    /// The cgroup's throttling counters so far (`cpu.stat`).
    pub throttling: Option<Throttling>,
    /// The calling thread's involuntary context switches so far.
    pub involuntary_switches: Option<u64>,
}

impl Snapshot {
    /// Reads every source under `root` (steal over `cpus`, or all CPUs),
    /// and the calling thread's context switches. Call it on the measuring
    /// thread, outside the loop.
    pub fn take(root: &Path, cpus: Option<&[usize]>) -> Snapshot {
        Snapshot {
            steal_ns: cpu_time::read_steal_ns(root, cpus).into_found(),
            throttling: cpu_time::read_throttling(root).into_found(),
            involuntary_switches: cpu_time::thread_involuntary_switches(),
        }
    }
}

/// Interference during one run, as reported per clock.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Interference {
    /// `lost_ns / elapsed_ns`.
    pub lost_fraction: f64,
    /// Time in gaps, ns.
    pub lost_ns: u64,
    /// Differences above `gap_threshold_ns`.
    pub gaps: u64,
    /// A difference above this is a gap, ns.
    pub gap_threshold_ns: u64,
    /// Steal time during the run per CPU, ns (`/proc/stat`, averaged over the CPUs this process may use).
    pub steal_ns: Option<u64>,
    /// Time the cgroup was throttled during the run, ns.
    pub throttled_ns: Option<u64>,
    /// cgroup enforcement periods during the run, and how many were throttled.
    pub periods: Option<u64>,
    /// See `periods`.
    pub throttled_periods: Option<u64>,
    /// Involuntary context switches of the measuring thread during the run.
    pub involuntary_switches: Option<u64>,
    /// Runs of the requested duration made for this clock, and which one (1-based) is reported.
    pub runs: u32,
    /// See `runs`.
    pub kept_run: u32,
    /// Each run's noise in order ([`noise_reason`]; null when clean).
    pub noise_by_run: Vec<Option<String>>,
}

impl Interference {
    /// The gap part of a run of `elapsed_ns` (sources unknown, one run).
    pub fn from_gaps(g: &Gaps, elapsed_ns: u64) -> Interference {
        let mut i = Interference {
            lost_fraction: lost_fraction_of([(g.lost_ns, elapsed_ns)]),
            lost_ns: g.lost_ns,
            gaps: g.count,
            gap_threshold_ns: g.threshold_ns,
            runs: 1,
            kept_run: 1,
            ..Interference::default()
        };
        i.noise_by_run = vec![noise_reason(&i, elapsed_ns)];
        i
    }

    /// Adds what the sources counted between `before` and `after` (and
    /// judges the run again with them, over `elapsed_ns`).
    pub fn with_sources(mut self, before: &Snapshot, after: &Snapshot, elapsed_ns: u64) -> Interference {
        let diff = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
        self.steal_ns = diff(before.steal_ns, after.steal_ns);
        self.involuntary_switches = diff(before.involuntary_switches, after.involuntary_switches);
        if let (Some(a), Some(b)) = (&before.throttling, &after.throttling) {
            if a.path == b.path {
                self.throttled_ns = Some(b.throttled_ns.saturating_sub(a.throttled_ns));
                self.periods = Some(b.periods.saturating_sub(a.periods));
                self.throttled_periods = Some(b.throttled_periods.saturating_sub(a.throttled_periods));
            }
        }
        self.noise_by_run = vec![noise_reason(&self, elapsed_ns)];
        self
    }
}

/// Whether `lost_fraction` of a run (or of a report's runs together) is
/// noisy: the one definition, [`NOISY_LOST_FRACTION`].
pub fn is_noisy(lost_fraction: f64) -> bool {
    lost_fraction >= NOISY_LOST_FRACTION
}

/// The share of `(lost_ns, elapsed_ns)` runs lost in gaps, all together
/// (0 when nothing was measured).
pub fn lost_fraction_of(runs: impl IntoIterator<Item = (u64, u64)>) -> f64 {
    let (lost, elapsed) = runs.into_iter().fold((0u64, 0u64), |(l, e), (lr, er)| {
        (l.saturating_add(lr), e.saturating_add(er))
    });
    if elapsed == 0 {
        0.0
    } else {
        (lost as f64 / elapsed as f64).min(1.0)
    }
}

/// Why a run of `elapsed_ns` with interference `i` is noisy ("45.1% of the
/// run lost in 120 gaps > 1000 ns"), with where the time went when the
/// sources say ("; 31 of 32 cgroup periods throttled (2.30 s); steal 0.03
/// s; 40 involuntary context switches"), or `None` when it is not noisy
/// ([`is_noisy`]).
pub fn noise_reason(i: &Interference, elapsed_ns: u64) -> Option<String> {
    if !is_noisy(i.lost_fraction) {
        return None;
    }
    let mut why = vec![format!(
        "{:.1}% of the run lost in {} gaps > {} ns",
        i.lost_fraction * 100.0,
        i.gaps,
        i.gap_threshold_ns
    )];
    if let Some(t) = i.throttled_periods.filter(|&t| t > 0) {
        why.push(format!(
            "{t} of {} cgroup periods throttled ({:.2} s)",
            i.periods.unwrap_or(t),
            i.throttled_ns.unwrap_or(0) as f64 / 1e9
        ));
    }
    let stolen = |s: u64| s >= NOISY_STEAL_MIN_NS && s as f64 >= NOISY_STEAL_FRACTION * elapsed_ns as f64;
    if let Some(s) = i.steal_ns.filter(|&s| elapsed_ns > 0 && stolen(s)) {
        why.push(format!("steal {:.2} s", s as f64 / 1e9));
    }
    if let Some(n) = i.involuntary_switches.filter(|&n| n > 0) {
        why.push(format!("{n} involuntary context switches"));
    }
    Some(why.join("; "))
}

/// How one run went, for [`repeat_while_noisy`].
#[derive(Clone, Debug, PartialEq)]
pub struct RunQuality {
    /// Why the run is noisy, or `None` when clean.
    pub noise: Option<String>,
    /// The fraction of the run lost in gaps (lower is cleaner).
    pub lost_fraction: f64,
    /// The run was cut short (Ctrl-C): no more runs.
    pub interrupted: bool,
}

/// The result of [`repeat_while_noisy`].
#[derive(Clone, Debug)]
pub struct Repeated<R> {
    /// The cleanest run: the clean one, else the smallest lost fraction (the first on a tie).
    pub kept: R,
    /// Its number, 1-based.
    pub kept_run: u32,
    /// How many runs were made.
    pub runs: u32,
    /// Each run's noise (None: clean), in order.
    pub noise: Vec<Option<String>>,
}

/// Runs `run(n)` (n = 1, 2, ...) until a run is clean or interrupted, or
/// `max_runs` runs were made, and keeps the cleanest.
pub fn repeat_while_noisy<R>(
    max_runs: u32,
    mut run: impl FnMut(u32) -> R,
    quality: impl Fn(&R) -> RunQuality,
) -> Repeated<R> {
    let mut kept: Option<(R, f64, u32)> = None;
    let mut noise = Vec::new();
    let mut n = 0;
    while n < max_runs.max(1) {
        n += 1;
        let r = run(n);
        let q = quality(&r);
        let clean = q.noise.is_none();
        noise.push(q.noise);
        // A clean run ends the repeats and is kept; among noisy ones, the least lost.
        if clean || kept.as_ref().is_none_or(|(_, lost, _)| q.lost_fraction < *lost) {
            kept = Some((r, q.lost_fraction, n));
        }
        if clean || q.interrupted {
            break;
        }
    }
    let (kept, _, kept_run) = kept.expect("at least one run");
    Repeated {
        kept,
        kept_run,
        runs: n,
        noise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::testing::FakeRoot;
    use clockscope::Scale;
    use clockscope::ScriptedClock;
    use clockscope::{measure, Control};

    /// A clock read every `cost` ns, that pauses `pause` ns every `every` reads.
    fn pausing_clock(cost: u64, every: u64, pause: u64) -> ScriptedClock {
        ScriptedClock::new("pausing", Scale::NANOSECONDS, move |n| {
            1_000 + n * cost + n.checked_div(every).map_or(0, |k| k * pause)
        })
    }

    #[test]
    fn scripted_pauses_are_gaps_and_leave_the_read_cost() {
        // 30 ns per read; every 10000 reads a 3 ms pause (a lost time slice):
        // over 1 s of clock time, 100 ms of pauses.
        let c = pausing_clock(30, 10_000, 3_000_000);
        let m = measure(&c, 1_000_000_000, |_| Control::Continue);
        let g = find_gaps(&m.histogram);
        assert_eq!(g.threshold_ns, 1_000, "20 x 30 ns is under the 1 us floor");
        // Each pause is one difference of 3 ms + 30 ns.
        let pauses = m.loops() / 10_000;
        assert!(pauses > 200, "{pauses}");
        assert_eq!(g.count, pauses);
        assert_eq!(g.lost_ns, pauses * 3_000_030);
        let avg = m.avg_loop_ns().unwrap();
        let cost = read_cost_ns(&m, &g).unwrap();
        assert!(avg > 100.0, "PostgreSQL's average includes the pauses: {avg}");
        // elapsed includes the end read (30 ns): the cost is 30 ns to 1e-3.
        assert!((cost - 30.0).abs() < 0.01, "{cost}");
        let i = Interference::from_gaps(&g, m.elapsed_ns);
        assert!((i.lost_fraction - g.lost_ns as f64 / m.elapsed_ns as f64).abs() < 1e-12);
        let why = noise_reason(&i, m.elapsed_ns).expect("noisy");
        assert!(why.contains("gaps > 1000 ns"), "{why}");
        // Every difference outside the gaps is the 30 ns read.
        assert_eq!(m.histogram.exact()[30], m.loops() - g.count);
    }

    #[test]
    fn noisy_is_one_threshold_on_the_share_of_time_lost() {
        assert!(!is_noisy(0.0));
        assert!(!is_noisy(0.0999));
        assert!(is_noisy(NOISY_LOST_FRACTION));
        assert!(is_noisy(0.987));
        // Runs together: lost over elapsed, not an average of fractions.
        let f = lost_fraction_of([(50, 100), (0, 900)]);
        assert!((f - 0.05).abs() < 1e-12, "{f}");
        assert!(!is_noisy(f));
        assert_eq!(lost_fraction_of([]), 0.0);
        // A run lost in 6 long gaps is as noisy as one lost in many short ones.
        let c = pausing_clock(30, 100_000, 300_000_000);
        let m = measure(&c, 2_000_000_000, |_| Control::Continue);
        let g = find_gaps(&m.histogram);
        assert!(g.count <= 7, "{g:?}");
        let i = Interference::from_gaps(&g, m.elapsed_ns);
        assert!(i.lost_fraction > 0.9, "{}", i.lost_fraction);
        assert!(noise_reason(&i, m.elapsed_ns).is_some());
    }

    #[test]
    fn a_quiet_run_has_no_gaps_and_cost_equals_the_average() {
        let c = pausing_clock(25, 0, 0);
        let m = measure(&c, 10_000_000, |_| Control::Continue);
        let g = find_gaps(&m.histogram);
        assert_eq!((g.count, g.lost_ns), (0, 0));
        assert_eq!(read_cost_ns(&m, &g), m.avg_loop_ns());
        assert_eq!(
            noise_reason(&Interference::from_gaps(&g, m.elapsed_ns), m.elapsed_ns),
            None
        );
    }

    #[test]
    fn gaps_in_the_exact_range_are_exact_and_a_slow_clock_is_not_a_gap() {
        // A 700 ns syscall clock with a 5 us interrupt every 1000 reads:
        // threshold 20 x 700 = 14000 -> bucket edge 16383: the interrupts
        // are not gaps (they are part of such a clock's cost, 20x rule).
        let c = pausing_clock(700, 1_000, 5_000);
        let m = measure(&c, 100_000_000, |_| Control::Continue);
        let g = find_gaps(&m.histogram);
        assert_eq!(g.threshold_ns, 16_383);
        assert_eq!(g.count, 0);
        // A 40 ns clock with the same interrupts: threshold 1000, exact gaps of 5040 ns.
        let c = pausing_clock(40, 1_000, 5_000);
        let m = measure(&c, 10_000_000, |_| Control::Continue);
        let g = find_gaps(&m.histogram);
        assert_eq!(g.threshold_ns, 1_000);
        assert_eq!(g.lost_ns, g.count * 5_040);
        assert!(g.count > 200);
        assert!((read_cost_ns(&m, &g).unwrap() - 40.0).abs() < 0.01);
    }

    #[test]
    fn a_coarse_clocks_steps_are_not_gaps() {
        // A 4 ms coarse clock read every 20 ns, with one 100 ms pause.
        let c = ScriptedClock::new("coarse", Scale::NANOSECONDS, |n| {
            let t = n * 20 + if n > 100_000 { 100_000_000 } else { 0 };
            t / 4_000_000 * 4_000_000
        });
        let m = measure(&c, 500_000_000, |_| Control::Continue);
        let g = find_gaps(&m.histogram);
        // normal = the 4 ms step's bucket lower edge (2^21): 20 x -> bucket edge 2^26 - 1.
        assert_eq!(g.threshold_ns, (1 << 26) - 1);
        assert_eq!(g.count, 1);
        assert_eq!(g.lost_ns, 100_000_000); // 0 -> 100 ms: the pause swallowed the step
    }

    fn snapshot_tree(steal_cpu0: u64, steal_cpu1: u64) -> FakeRoot {
        let r = FakeRoot::new();
        r.write(
            "proc/stat",
            &format!(
                "cpu  10 0 0 0 0 0 0 {} 0 0\ncpu0 5 0 0 0 0 0 0 {steal_cpu0} 0 0\ncpu1 5 0 0 0 0 0 0 {steal_cpu1} 0 0\n",
                steal_cpu0 + steal_cpu1
            ),
        );
        r
    }

    #[test]
    fn sources_from_a_fake_cgroup_v2_tree() {
        let before = snapshot_tree(100, 7);
        before.write("proc/self/cgroup", "0::/kubepods/pod1\n");
        before.write(
            "sys/fs/cgroup/kubepods/pod1/cpu.stat",
            "usage_usec 9\nnr_periods 100\nnr_throttled 10\nthrottled_usec 500000\n",
        );
        let after = snapshot_tree(103, 7);
        after.write("proc/self/cgroup", "0::/kubepods/pod1\n");
        after.write(
            "sys/fs/cgroup/kubepods/pod1/cpu.stat",
            "usage_usec 9\nnr_periods 132\nnr_throttled 41\nthrottled_usec 2800000\n",
        );
        let mut a = Snapshot::take(before.path(), Some(&[0]));
        let mut b = Snapshot::take(after.path(), Some(&[0]));
        // The paths differ between two fake roots; the files' contents are what is tested.
        b.throttling.as_mut().unwrap().path = a.throttling.as_ref().unwrap().path.clone();
        assert_eq!(a.steal_ns, Some(1_000_000_000));
        assert_eq!(a.throttling.as_ref().unwrap().version, cpu_time::CgroupVersion::V2);
        let i = Interference::default().with_sources(&a, &b, 1_000_000_000);
        assert_eq!(i.steal_ns, Some(30_000_000));
        assert_eq!((i.periods, i.throttled_periods), (Some(32), Some(31)));
        assert_eq!(i.throttled_ns, Some(2_300_000_000));
        assert_eq!(i.noise_by_run[0], noise_reason(&i, 1_000_000_000));
        // Throttling and steal without time lost in the measuring loop's gaps
        // are not noise: one definition, the share of the run lost.
        assert_eq!(noise_reason(&i, 1_000_000_000), None);
        let lost = Interference {
            lost_fraction: 0.45,
            gaps: 120,
            gap_threshold_ns: 1_000,
            ..i.clone()
        };
        let why = noise_reason(&lost, 1_000_000_000).unwrap();
        assert_eq!(
            why,
            "45.0% of the run lost in 120 gaps > 1000 ns; 31 of 32 cgroup periods throttled (2.30 s); steal 0.03 s"
        );
        // One 10 ms tick of steal is the counter's resolution: not named.
        let one_tick = Interference {
            steal_ns: Some(10_000_000),
            lost_fraction: 0.2,
            gaps: 3,
            gap_threshold_ns: 1_000,
            ..Interference::default()
        };
        assert_eq!(
            noise_reason(&one_tick, 200_000_000).as_deref(),
            Some("20.0% of the run lost in 3 gaps > 1000 ns")
        );
        let two_ticks = Interference {
            steal_ns: Some(20_000_000),
            ..one_tick
        };
        assert_eq!(
            noise_reason(&two_ticks, 200_000_000).as_deref(),
            Some("20.0% of the run lost in 3 gaps > 1000 ns; steal 0.02 s")
        );
        // A counter that is unavailable on either side stays unknown.
        a.steal_ns = None;
        assert_eq!(
            Interference::default().with_sources(&a, &b, 1_000_000_000).steal_ns,
            None
        );
    }

    #[test]
    fn sources_from_a_fake_cgroup_v1_tree_beside_an_unenabled_v2() {
        // This machine's layout: cpu on v1, a v2 hierarchy without the cpu controller.
        let r = snapshot_tree(1, 2);
        r.write("proc/self/cgroup", "4:memory:/m\n1:cpu:/\n0::/\n");
        r.write("sys/fs/cgroup/unified/cpu.stat", "usage_usec 5\nuser_usec 3\n");
        r.write(
            "sys/fs/cgroup/cpu/cpu.stat",
            "nr_periods 7\nnr_throttled 3\nthrottled_time 1500\nnr_bursts 0\n",
        );
        let s = Snapshot::take(r.path(), None);
        assert_eq!(s.steal_ns, Some(15_000_000), "3 ticks over 2 CPUs");
        let t = s.throttling.unwrap();
        assert_eq!(t.version, cpu_time::CgroupVersion::V1);
        assert_eq!((t.periods, t.throttled_periods, t.throttled_ns), (7, 3, 1_500));
        assert!(t.path.ends_with("sys/fs/cgroup/cpu/cpu.stat"), "{}", t.path);
        // No cgroup files at all: unknown, not zero.
        let bare = snapshot_tree(0, 0);
        assert_eq!(Snapshot::take(bare.path(), None).throttling, None);
    }

    #[test]
    fn repeats_while_noisy_and_keeps_the_cleanest() {
        let q = |lost: f64| RunQuality {
            noise: (lost >= NOISY_LOST_FRACTION).then(|| format!("{lost}")),
            lost_fraction: lost,
            interrupted: false,
        };
        // Noisy, noisy, noisy: three runs, the least lost kept.
        let lost = [0.5, 0.2, 0.3];
        let r = repeat_while_noisy(MAX_RUNS, |n| lost[n as usize - 1], |&l| q(l));
        assert_eq!((r.runs, r.kept_run, r.kept), (3, 2, 0.2));
        assert_eq!(r.noise.len(), 3);
        // Noisy then clean: stops at the clean one.
        let lost = [0.5, 0.001, 0.0];
        let r = repeat_while_noisy(MAX_RUNS, |n| lost[n as usize - 1], |&l| q(l));
        assert_eq!((r.runs, r.kept_run), (2, 2));
        assert_eq!(r.noise[1], None);
        // Clean at once: one run.
        let r = repeat_while_noisy(MAX_RUNS, |_| 0.0, |&l| q(l));
        assert_eq!(r.runs, 1);
        // Interrupted: no more runs.
        let r = repeat_while_noisy(
            MAX_RUNS,
            |_| 0.9,
            |&l| RunQuality {
                interrupted: true,
                ..q(l)
            },
        );
        assert_eq!(r.runs, 1);
        // A clean run with a larger lost fraction (throttled before, not now)
        // beats a noisy one.
        let runs = [(0.005, true), (0.008, false)];
        let r = repeat_while_noisy(
            MAX_RUNS,
            |n| runs[n as usize - 1],
            |&(l, throttled)| RunQuality {
                noise: throttled.then(|| "throttled".to_string()),
                lost_fraction: l,
                interrupted: false,
            },
        );
        assert_eq!((r.runs, r.kept_run), (2, 2));
    }
}
