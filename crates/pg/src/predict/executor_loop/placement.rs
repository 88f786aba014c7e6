//! The model pinned to CPUs in turn, and the cost of the one that ran the
//! plain work fastest ([`measure_across_cpus`]).
//!
//! On a shared virtual machine one vCPU can run everything slower for
//! seconds while another does not: the host's other work on that core, not
//! the clock (bench/README.md, "The two speeds", has the measurements). A
//! model run that lands there says the clock costs about twice what it costs.
//!
//! So the model runs in slices pinned to each of up to [`MAX_MODEL_CPUS`]
//! CPUs in turn (round robin; the slice length aims at [`SLICES_PER_CPU`]
//! slices each within the budget, and every CPU gets at least one while the
//! budget lasts: at `-d 0.01` a slice is 1.25 ms), keeps each slice's pairs with its CPU, and the headline is
//! the median of the CPU whose TIMING OFF rows were fastest (the plain
//! work's own speed, which TIMING ON does not enter): the clock's cost on an
//! uncontended CPU. The other CPUs' numbers stay in the result
//! ([`CpuRun`]) and in the sampling text, so a slow vCPU is shown, not
//! hidden. Where pinning is not possible (one allowed CPU, not Linux, or the
//! kernel refuses) the model runs once, unpinned, and says why.

use super::cost::{CpuRun, ExecutorLoopCost, StopReason};
use super::executor::Table;
use super::measuring::{
    cpu_runs, groups, measure_on_this_machine, pairs_on_this_machine, ModelConfig, PairsRun, Slices,
};
use clockscope::{ClockError, ClockId, ClockSource, ClockVisitor, Scale};
use clockscope_system::crosscpu::affinity;
use clockscope_system::stats;

/// The most CPUs the model is pinned to in turn: enough to find an
/// uncontended one, few enough that each gets enough pairs within a budget
/// of a quarter of `-d`.
pub const MAX_MODEL_CPUS: usize = 4;
/// Slices per CPU the slice length aims at, so that a CPU's speed is sampled
/// at several moments, not one.
pub const SLICES_PER_CPU: u64 = 3;
/// A slice's length bounds, ns: at least 40 pairs of 2 x 250 us rounds; at
/// most as long as explain's slices.
const SLICE_MIN_NS: u64 = 10_000_000;
const SLICE_MAX_NS: u64 = 30_000_000;

/// Up to `max` CPUs from `allowed` (sorted), evenly spaced from the first to
/// the last: CPUs far apart in numbering are more often on different cores
/// and packages.
pub fn spread_cpus(allowed: &[usize], max: usize) -> Vec<usize> {
    let n = allowed.len();
    if n <= max {
        return allowed.to_vec();
    }
    if max <= 1 {
        return allowed.iter().take(max).copied().collect();
    }
    (0..max).map(|i| allowed[i * (n - 1) / (max - 1)]).collect()
}

/// The length of each slice for `budget_ns` over `cpus` CPUs, ns: within
/// the bounds, unless the budget cannot give every CPU a slice of the
/// shortest length, and then an equal share each.
fn slice_ns_for(budget_ns: u64, cpus: usize) -> u64 {
    let cpus = cpus.max(1) as u64;
    if budget_ns < cpus * SLICE_MIN_NS {
        return (budget_ns / cpus).max(1);
    }
    (budget_ns / (cpus * SLICES_PER_CPU)).clamp(SLICE_MIN_NS, SLICE_MAX_NS)
}

/// Runs slices of `config`'s model round robin over `cpus` within
/// `config.budget_ns` (the slices' own time, calibration included);
/// `run_slice(cpu, slice_config)` runs one slice pinned to `cpu`, `None`
/// when it could not (then no more slices run). A slice that was
/// interrupted ends the run.
pub fn run_across_cpus(
    config: ModelConfig,
    cpus: &[usize],
    run_slice: &mut dyn FnMut(usize, ModelConfig) -> Option<PairsRun>,
) -> Slices {
    let slice_ns = slice_ns_for(config.budget_ns, cpus.len());
    let mut slices = Slices::new(ModelConfig {
        budget_ns: slice_ns,
        ..config
    });
    for &cpu in cpus.iter().cycle() {
        let left = config.budget_ns.saturating_sub(slices.elapsed_ns);
        // Every CPU gets its first slice while there is time; after that, a
        // slice shorter than half of one gives a CPU too few pairs.
        let first_round = (slices.slices as usize) < cpus.len();
        if left == 0 || (!first_round && left < slice_ns / 2) || !slices.wants_more() {
            break;
        }
        let mut next = slices.config_for_next();
        next.budget_ns = slice_ns.min(left);
        let Some(run) = run_slice(cpu, next) else {
            break;
        };
        let (interrupted, empty) = (run.stopped_by == StopReason::Interrupted, run.elapsed_ns == 0);
        slices.add_on(run, Some(cpu));
        if interrupted || empty {
            break;
        }
    }
    slices
}

/// The model on this machine's clocks (as [`measure_on_this_machine`]),
/// pinned in turn to [`spread_cpus`] of the CPUs this thread may run on
/// (its affinity mask: a `taskset` is kept); the headline is the CPU that
/// ran the plain work fastest (see the module docs). With one CPU, when the
/// mask cannot be read, or when no pinned slice ran, one unpinned run, and
/// its sampling text says why.
pub fn measure_across_cpus<T: ClockSource>(
    tsc: Option<&T>,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ExecutorLoopCost> {
    let unpinned = |why: String, keep_going: &mut dyn FnMut() -> bool| {
        let mut cost = measure_on_this_machine(tsc, table, config, keep_going)?;
        cost.sampling.push_str(&format!(", not pinned ({why})"));
        Some(cost)
    };
    let cpus = match affinity::allowed_cpus() {
        Ok(allowed) => spread_cpus(&allowed, MAX_MODEL_CPUS),
        Err(e) => return unpinned(e.to_string(), keep_going),
    };
    if cpus.len() < 2 {
        return unpinned("this process may run on one CPU".into(), keep_going);
    }
    let mut pin_error = None;
    let slices = run_across_cpus(config, &cpus, &mut |cpu, slice| {
        let pinned = affinity::pin_current_thread_for_now(cpu)
            .map_err(|e| pin_error = Some(e.to_string()))
            .ok()?;
        let run = pairs_on_this_machine(tsc, table, slice, keep_going);
        drop(pinned);
        run
    });
    if slices.pairs.is_empty() {
        return unpinned(pin_error.unwrap_or_else(|| "no pinned slice ran".into()), keep_going);
    }
    let mut cost = slices.cost_of_fastest_cpu()?;
    cost.budget_ns = config.budget_ns;
    if let Some(why) = pin_error {
        cost.sampling.push_str(&format!("; pinning stopped there ({why})"));
    }
    Some(cost)
}

/// [`measure_across_cpus`] with the clock named by `id` in the fast-read
/// slot when it is a counter (a counter at `counter_scale`), the system clock
/// alone otherwise. Not generic, so the model is monomorphised in this crate,
/// which the dev profile optimises (the tools build at opt-level 0).
pub fn measure_across_cpus_of(
    id: ClockId,
    counter_scale: Option<Scale>,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Option<ExecutorLoopCost>, ClockError> {
    struct Visit<'a> {
        counter: bool,
        table: &'a Table,
        config: ModelConfig,
        keep_going: &'a mut dyn FnMut() -> bool,
    }
    impl ClockVisitor for Visit<'_> {
        type Output = Option<ExecutorLoopCost>;
        fn visit<C: ClockSource>(self, clock: &C) -> Self::Output {
            let tsc = self.counter.then_some(clock);
            measure_across_cpus(tsc, self.table, self.config, self.keep_going)
        }
    }
    let visit = Visit {
        counter: id.is_counter(),
        table,
        config,
        keep_going,
    };
    clockscope::visit(id, counter_scale, visit)
}

impl Slices {
    /// The cost from the pairs of the CPU that ran the plain work fastest
    /// (the lowest median TIMING OFF row among the CPUs with enough pairs
    /// for an interval; with none, the CPU with the most pairs). `None`
    /// without a pinned pair.
    pub fn cost_of_fastest_cpu(&self) -> Option<ExecutorLoopCost> {
        let runs = cpu_runs(self, None);
        let enough = |r: &&CpuRun| r.pairs as usize >= stats::MIN_SAMPLES_FOR_INTERVAL;
        let chosen = runs
            .iter()
            .filter(enough)
            .min_by(|a, b| a.work_ns_per_row.total_cmp(&b.work_ns_per_row))
            .or_else(|| runs.iter().max_by_key(|r| r.pairs))?
            .cpu;
        let pairs = groups(self).remove(&chosen)?;
        let mut cost = self.cost_of(&pairs)?;
        cost.cpus = cpu_runs(self, Some(chosen));
        cost.sampling = fastest_cpu_text(self, &cost.cpus, chosen);
        Some(cost)
    }
}

/// "6 slices (75 ms in all) pinned to CPUs 0, 1 in turn; the pairs of CPU 1,
/// which ran the plain work fastest (CPU 0: TIMING OFF row 38.1 ns, 1.53x
/// slower, +19.0 ns per row)".
fn fastest_cpu_text(slices: &Slices, runs: &[CpuRun], chosen: usize) -> String {
    let ms = slices.elapsed_ns as f64 / 1e6;
    let list = runs.iter().map(|r| r.cpu.to_string()).collect::<Vec<_>>().join(", ");
    let n = slices.slices;
    let mut text = if runs.len() == 1 {
        format!(
            "{n} slice{} ({ms:.0} ms in all) pinned to CPU {list}",
            if n == 1 { "" } else { "s" }
        )
    } else {
        format!("{n} slices ({ms:.0} ms in all) pinned to CPUs {list} in turn")
    };
    let Some(best) = runs.iter().find(|r| r.cpu == chosen) else {
        return text;
    };
    if runs.len() == 1 {
        text.push_str("; the budget gave no other CPU a slice");
        return text;
    }
    let others = runs
        .iter()
        .filter(|r| r.cpu != chosen)
        .map(|r| {
            format!(
                "CPU {}: TIMING OFF row {:.1} ns, {:.2}x, {:+.1} ns per row",
                r.cpu,
                r.work_ns_per_row,
                r.work_ns_per_row / best.work_ns_per_row,
                r.median_ns_per_row
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    text.push_str(&format!(
        "; the pairs of CPU {chosen}, which ran the plain work fastest ({others})"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::executor_loop::{PgInstrumentation, RoundPair};

    fn config(budget_ns: u64) -> ModelConfig {
        ModelConfig {
            instrumentation: PgInstrumentation::Pg19 { tsc: true },
            work_steps: 4,
            budget_ns,
            rows_per_round: Some(1000),
        }
    }

    /// A slice of `n` pairs at `work` ns per row with `added` ns per row on,
    /// taking `ns`.
    fn run(n: usize, work: f64, added: f64, ns: u64) -> PairsRun {
        PairsRun {
            clock: "RDTSC",
            pairs: (0..n)
                .map(|i| RoundPair {
                    // A little spread, so intervals exist.
                    timing_off_ns: 1000.0 * work + i as f64,
                    timing_on_ns: 1000.0 * (work + added) + 2.0 * i as f64,
                })
                .collect(),
            rows_per_round: 1000,
            stopped_by: StopReason::Budget,
            elapsed_ns: ns,
        }
    }

    #[test]
    fn cpus_are_spread_from_first_to_last() {
        assert_eq!(spread_cpus(&[0, 1], 4), vec![0, 1]);
        assert_eq!(spread_cpus(&(0..64).collect::<Vec<_>>(), 4), vec![0, 21, 42, 63]);
        assert_eq!(spread_cpus(&[3, 5, 9, 11, 20], 2), vec![3, 20]);
        assert_eq!(spread_cpus(&[3, 5], 1), vec![3]);
        assert!(spread_cpus(&[], 4).is_empty());
    }

    #[test]
    fn a_small_budget_still_gives_every_cpu_a_slice() {
        // -d 0.01: 2.5 ms of model per clock over 2 CPUs: 1.25 ms each.
        let mut order = Vec::new();
        let slices = run_across_cpus(config(2_500_000), &[0, 1], &mut |cpu, c| {
            order.push((cpu, c.budget_ns));
            Some(run(3, 25.0, 9.0, c.budget_ns))
        });
        assert_eq!(order, vec![(0, 1_250_000), (1, 1_250_000)]);
        let cost = slices.cost_of_fastest_cpu().unwrap();
        assert!(
            cost.sampling
                .starts_with("2 slices (2 ms in all) pinned to CPUs 0, 1 in turn"),
            "{}",
            cost.sampling
        );
        // 15 ms over 2 CPUs: below two of the shortest slices, so halves.
        assert_eq!(slice_ns_for(15_000_000, 2), 7_500_000);
        assert_eq!(slice_ns_for(90_000_000, 2), 15_000_000);
        assert_eq!(slice_ns_for(0, 2), 1);
        // One CPU reached: said so, in the singular.
        let mut one = Slices::new(config(30_000_000));
        one.add_on(run(8, 25.0, 9.0, 5_000_000), Some(3));
        let cost = one.cost_of_fastest_cpu().unwrap();
        assert_eq!(
            cost.sampling,
            "1 slice (5 ms in all) pinned to CPU 3; the budget gave no other CPU a slice"
        );
    }

    #[test]
    fn slices_go_round_robin_within_the_budget() {
        let mut order = Vec::new();
        // 90 ms over 2 CPUs: 15 ms slices, 6 of them.
        let slices = run_across_cpus(config(90_000_000), &[0, 1], &mut |cpu, c| {
            order.push((cpu, c.budget_ns));
            Some(run(10, 25.0, 9.0, c.budget_ns))
        });
        assert_eq!(order.len(), 6);
        assert_eq!(order.iter().map(|o| o.0).collect::<Vec<_>>(), vec![0, 1, 0, 1, 0, 1]);
        assert!(order.iter().all(|o| o.1 == 15_000_000));
        assert_eq!(slices.slices, 6);
        assert_eq!(slices.pair_cpus.iter().filter(|c| **c == Some(1)).count(), 30);
    }

    #[test]
    fn a_failed_pin_or_an_interruption_ends_the_slices() {
        let mut calls = 0;
        let slices = run_across_cpus(config(90_000_000), &[0, 1], &mut |cpu, c| {
            calls += 1;
            (cpu == 0).then(|| run(10, 25.0, 9.0, c.budget_ns))
        });
        assert_eq!((calls, slices.slices), (2, 1));
        let slices = run_across_cpus(config(90_000_000), &[0, 1], &mut |_, c| {
            let mut r = run(10, 25.0, 9.0, c.budget_ns);
            r.stopped_by = StopReason::Interrupted;
            Some(r)
        });
        assert_eq!(slices.slices, 1);
        assert_eq!(slices.stopped_by, StopReason::Interrupted);
    }

    #[test]
    fn the_headline_is_the_cpu_that_ran_the_plain_work_fastest() {
        // CPU 0 in the slow speed (38 ns rows, +19 ns), CPU 1 fast (25 ns, +9).
        let slices = run_across_cpus(config(90_000_000), &[0, 1], &mut |cpu, c| {
            Some(if cpu == 0 {
                run(10, 38.0, 19.0, c.budget_ns)
            } else {
                run(10, 25.0, 9.0, c.budget_ns)
            })
        });
        let cost = slices.cost_of_fastest_cpu().unwrap();
        let on_1: Vec<_> = (0..10).map(|i| 9.0 + f64::from(i) / 1000.0).collect();
        assert_eq!(cost.median_ns_per_row, stats::median(&on_1).unwrap());
        assert_eq!(cost.pairs, 30);
        assert_eq!(cost.cpus.len(), 2);
        assert!(!cost.cpus[0].used && cost.cpus[1].used, "{:?}", cost.cpus);
        assert!((cost.cpus[0].median_ns_per_row - 19.0).abs() < 0.01);
        assert!(
            cost.sampling
                .starts_with("6 slices (90 ms in all) pinned to CPUs 0, 1 in turn; the pairs of CPU 1"),
            "{}",
            cost.sampling
        );
        assert!(cost
            .sampling
            .contains("CPU 0: TIMING OFF row 38.0 ns, 1.52x, +19.0 ns per row"));
        // Pooled instead (explain's slices follow the server): every CPU used.
        let pooled = slices.cost().unwrap();
        assert!(pooled.cpus.iter().all(|c| c.used));
        assert_eq!(pooled.pairs, 60);
    }

    #[test]
    fn a_cpu_with_too_few_pairs_does_not_win_on_speed() {
        let mut slices = Slices::new(config(30_000_000));
        slices.add_on(run(3, 20.0, 5.0, 1_000_000), Some(0));
        slices.add_on(run(20, 25.0, 9.0, 10_000_000), Some(1));
        let cost = slices.cost_of_fastest_cpu().unwrap();
        assert_eq!(cost.cpus.iter().find(|c| c.used).unwrap().cpu, 1);
        // No CPU with enough pairs: the one with most.
        let mut few = Slices::new(config(30_000_000));
        few.add_on(run(2, 20.0, 5.0, 1_000_000), Some(0));
        few.add_on(run(4, 25.0, 9.0, 1_000_000), Some(1));
        assert_eq!(few.cost_of_fastest_cpu().unwrap().pairs, 4);
        // Nothing pinned: no per-CPU cost.
        let mut unpinned = Slices::new(config(30_000_000));
        unpinned.add(run(20, 25.0, 9.0, 1_000_000));
        assert!(unpinned.cost_of_fastest_cpu().is_none());
        assert!(unpinned.cost().unwrap().cpus.is_empty());
    }

    #[test]
    fn pooled_slices_say_what_they_were_pinned_to() {
        let mut slices = Slices::new(config(30_000_000));
        slices.pinned_to = Some("the CPU the server's backend last ran on");
        slices.add_on(run(20, 25.0, 9.0, 10_000_000), Some(1));
        slices.add_on(run(10, 25.0, 9.0, 10_000_000), Some(0));
        let cost = slices.cost().unwrap();
        assert!(
            cost.sampling.ends_with(
                "; each slice pinned to the CPU the server's backend last ran on (CPU 0: 10 pairs, CPU 1: 20 pairs)"
            ),
            "{}",
            cost.sampling
        );
        // One slice could not be pinned: said, with its pairs.
        slices.add_on(run(5, 25.0, 9.0, 10_000_000), None);
        let cost = slices.cost().unwrap();
        assert!(
            cost.sampling.ends_with(
                "; slices pinned to the CPU the server's backend last ran on where they could be (CPU 0: 10 pairs, \
                 CPU 1: 20 pairs; not pinned: 5 pairs)"
            ),
            "{}",
            cost.sampling
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn on_this_machine_every_allowed_cpu_runs_and_the_mask_comes_back() {
        use clockscope::PosixClock;
        std::thread::spawn(|| {
            let before = affinity::allowed_cpus().unwrap();
            let table = Table::with_tuples(4096);
            let c = ModelConfig {
                instrumentation: PgInstrumentation::Pg16To18,
                work_steps: 4,
                budget_ns: 60_000_000,
                rows_per_round: Some(200),
            };
            let cost = measure_across_cpus::<PosixClock>(None, &table, c, &mut || true).unwrap();
            assert_eq!(affinity::allowed_cpus().unwrap(), before);
            if before.len() >= 2 {
                let ran: Vec<usize> = cost.cpus.iter().map(|r| r.cpu).collect();
                assert_eq!(ran, spread_cpus(&before, MAX_MODEL_CPUS), "{}", cost.sampling);
                assert_eq!(cost.cpus.iter().filter(|r| r.used).count(), 1);
            } else {
                assert!(cost.sampling.contains("not pinned"), "{}", cost.sampling);
            }
        })
        .join()
        .unwrap();
    }
}
