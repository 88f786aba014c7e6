//! Measuring the model: rounds of rows with TIMING ON and OFF, in pairs,
//! within a time budget ([`run_pairs`], [`measure_model`]), on this
//! machine's clocks, and in slices between other work ([`Slices`]).

use super::cost::{cost_from_pairs, sampling_text, CpuRun, ExecutorLoopCost, RoundPair, StopReason};
use super::executor::{Executor, Table};
use super::instr::{FastRead, PgInstrumentation, PgRead, SystemRead, TimespecRead};
use super::{
    DEFAULT_WORK_STEPS, MAX_PAIRS, MAX_ROWS_PER_ROUND, MAX_WORK_STEPS, MIN_ROWS_PER_ROUND, ROUND_NS, SIZING_ROWS,
};
use clockscope::PosixClock;
use clockscope::{ClockSource, CounterPairVisitor, Scale};
use clockscope_system::stats;
use std::collections::BTreeMap;

/// The model's shape for one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelConfig {
    /// The version's instrumentation shape.
    pub instrumentation: PgInstrumentation,
    /// Expression steps per row ([`DEFAULT_WORK_STEPS`]).
    pub work_steps: u32,
    /// The most time the whole measurement may take, ns.
    pub budget_ns: u64,
    /// Rows per round; `None`: [`ROUND_NS`] of work, sized by a first round.
    pub rows_per_round: Option<u64>,
}

impl ModelConfig {
    /// A config for `instrumentation` with the default work and a budget of
    /// `budget_ns`.
    pub fn new(instrumentation: PgInstrumentation, budget_ns: u64) -> Self {
        ModelConfig {
            instrumentation,
            work_steps: DEFAULT_WORK_STEPS,
            budget_ns,
            rows_per_round: None,
        }
    }
}

/// Rows per round for `ns_per_row` of TIMING OFF work: [`ROUND_NS`] of
/// work, within the MIN/MAX constants ([`MAX_ROWS_PER_ROUND`] when the
/// time per row is not a positive number).
pub(crate) fn rows_for_round(ns_per_row: f64) -> u64 {
    if !(ns_per_row.is_finite() && ns_per_row > 0.0) {
        return MAX_ROWS_PER_ROUND;
    }
    ((ROUND_NS / ns_per_row) as u64).clamp(MIN_ROWS_PER_ROUND, MAX_ROWS_PER_ROUND)
}

/// The pairs of one model run, before they become a cost.
#[derive(Clone, Debug, PartialEq)]
pub struct PairsRun {
    /// The clock read, as pg_test_timing names it.
    pub clock: &'static str,
    /// The pairs measured.
    pub pairs: Vec<RoundPair>,
    /// Rows per round.
    pub rows_per_round: u64,
    /// What ended the pairs.
    pub stopped_by: StopReason,
    /// Time taken, calibration included, ns.
    pub elapsed_ns: u64,
}

/// Runs the model's pairs with `read` and `timer` (see [`measure_model`]);
/// `None` when stopped before the first round.
pub fn run_pairs<R: PgRead, C: ClockSource>(
    read: &R,
    timer: &C,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<PairsRun> {
    // Time counted forward only (the sum of the timer's forward steps between
    // looks): a clock moved back (faketime, a bad hypervisor) cannot hold the
    // budget off until MAX_PAIRS.
    let mut last = timer.now_ordered();
    let mut forward_ticks = 0u64;
    let mut elapsed_ns = || {
        let now = timer.now_ordered();
        forward_ticks = forward_ticks.saturating_add(now.delta_since(last).max(0) as u64);
        last = now;
        timer.scale().ticks_to_ns(forward_ticks)
    };
    let mut exec = Box::new(Executor::new(read, table, config.instrumentation.inline()));
    exec.set_steps(config.work_steps.min(MAX_WORK_STEPS));
    // A first round warms up and, unless given, sizes the rounds.
    let sizing = exec.round(timer, SIZING_ROWS, false) / SIZING_ROWS as f64;
    let rows = config.rows_per_round.unwrap_or_else(|| rows_for_round(sizing)).max(1);
    let mut pairs = Vec::new();
    let mut stopped_by = StopReason::MaxPairs;
    let mut last_pair_ns = 0u64;
    for i in 0..MAX_PAIRS {
        let before = elapsed_ns();
        if before.saturating_add(last_pair_ns) > config.budget_ns {
            stopped_by = StopReason::Budget;
            break;
        }
        if !keep_going() {
            stopped_by = StopReason::Interrupted;
            break;
        }
        let (timing_on_ns, timing_off_ns) = if i % 2 == 0 {
            let on = exec.round(timer, rows, true);
            (on, exec.round(timer, rows, false))
        } else {
            let off = exec.round(timer, rows, false);
            (exec.round(timer, rows, true), off)
        };
        pairs.push(RoundPair {
            timing_on_ns,
            timing_off_ns,
        });
        last_pair_ns = elapsed_ns().saturating_sub(before);
    }
    debug_assert_eq!(
        exec.node.instr.errors, 0,
        "the model's instrumentation took an error branch"
    );
    Some(PairsRun {
        clock: read.name(),
        pairs,
        rows_per_round: rows,
        stopped_by,
        elapsed_ns: elapsed_ns(),
    })
}

/// Runs the model with `read` (whose time representation and clock are the
/// version's) and `timer` for the rounds, within `config.budget_ns`, asking
/// `keep_going` before each pair. `None` when stopped before a pair.
pub fn measure_model<R: PgRead, C: ClockSource>(
    read: &R,
    timer: &C,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ExecutorLoopCost> {
    cost_of_run(&run_pairs(read, timer, table, config, keep_going)?, config)
}

/// The model for `instrumentation` on this machine's clocks: the system clock
/// (`clock_gettime(CLOCK_MONOTONIC)`) and, for PostgreSQL 19 with the TSC,
/// `tsc` (the counter's fast read), rounds timed by the system clock.
/// `None` when stopped before a pair, or when the TSC is asked for and
/// `tsc` is `None`.
pub fn measure_on_this_machine<T: ClockSource>(
    tsc: Option<&T>,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ExecutorLoopCost> {
    cost_of_run(&pairs_on_this_machine(tsc, table, config, keep_going)?, config)
}

/// [`pairs_on_this_machine`] with the counter's fast read at `fast_counter`
/// (`None`: the system clock alone; `Err` where this build has no counter).
/// Not generic, so the model is
/// monomorphised in this crate, which the dev profile optimises (the tools
/// build at opt-level 0).
pub fn pairs_on_this_machine_of(
    fast_counter: Option<Scale>,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Option<PairsRun>, &'static str> {
    struct Fast<'a> {
        table: &'a Table,
        config: ModelConfig,
        keep_going: &'a mut dyn FnMut() -> bool,
    }
    impl CounterPairVisitor for Fast<'_> {
        type Output = Option<PairsRun>;
        fn visit<P: ClockSource, F: ClockSource>(self, _precise: P, fast: F) -> Self::Output {
            pairs_on_this_machine(Some(&fast), self.table, self.config, self.keep_going)
        }
    }
    match fast_counter {
        None => Ok(pairs_on_this_machine::<PosixClock>(None, table, config, keep_going)),
        Some(scale) => clockscope::visit_pair(
            scale,
            Fast {
                table,
                config,
                keep_going,
            },
        ),
    }
}

/// [`run_pairs`] on this machine's clocks (as [`measure_on_this_machine`]).
pub fn pairs_on_this_machine<T: ClockSource>(
    tsc: Option<&T>,
    table: &Table,
    config: ModelConfig,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<PairsRun> {
    let system = PosixClock::monotonic();
    let timer = PosixClock::monotonic();
    match config.instrumentation {
        PgInstrumentation::Pg19 { tsc: true } => {
            let read = FastRead::new(tsc?, system, true);
            run_pairs(&read, &timer, table, config, keep_going)
        }
        PgInstrumentation::Pg19 { tsc: false } => {
            let read = FastRead::new(system, system, false);
            run_pairs(&read, &timer, table, config, keep_going)
        }
        PgInstrumentation::Pg16To18 => run_pairs(&SystemRead(system), &timer, table, config, keep_going),
        PgInstrumentation::Pg15OrOlder => run_pairs(&TimespecRead(system), &timer, table, config, keep_going),
    }
}

/// The model sampled in slices, each a short run between other work (the
/// server's EXPLAIN pairs), all with the first slice's rows per round so
/// their pairs pool into one median. On a machine whose speed changes over
/// seconds (bench/README.md: the AMD EPYC guest's two speeds), slices spread
/// over the server's runs see the speeds the server's runs saw, where one
/// run of a few hundred ms sees only the speed of its moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Slices {
    /// Each slice's shape (its budget is the slice's).
    pub config: ModelConfig,
    /// The clock read, once a slice ran.
    pub clock: Option<&'static str>,
    /// Every slice's pairs, pooled (at most [`MAX_PAIRS`]).
    pub pairs: Vec<RoundPair>,
    /// Fixed by the first slice.
    pub rows_per_round: Option<u64>,
    /// Slices run.
    pub slices: u32,
    /// Their time, calibration included, ns.
    pub elapsed_ns: u64,
    /// [`StopReason::Interrupted`] once a slice was interrupted.
    pub stopped_by: StopReason,
    /// The CPU each pair ran pinned to (`None`: not pinned), in the order of
    /// `pairs`.
    pub pair_cpus: Vec<Option<usize>>,
    /// What a slice was pinned to, in words ("the CPU the server's backend
    /// last ran on"), for the sampling text.
    pub pinned_to: Option<&'static str>,
    /// Each slice's median paired difference per row, ns, in order
    /// ([`ExecutorLoopCost::slice_medians_ns_per_row`]).
    pub slice_medians_ns_per_row: Vec<f64>,
}

impl Slices {
    /// No slices yet; each slice runs with `config` (its budget is the
    /// slice's).
    pub fn new(config: ModelConfig) -> Slices {
        Slices {
            config,
            clock: None,
            pairs: Vec::new(),
            rows_per_round: None,
            slices: 0,
            elapsed_ns: 0,
            stopped_by: StopReason::Budget,
            pair_cpus: Vec::new(),
            pinned_to: None,
            slice_medians_ns_per_row: Vec::new(),
        }
    }

    /// Whether another slice may run ([`MAX_PAIRS`] in all).
    pub fn wants_more(&self) -> bool {
        self.pairs.len() < MAX_PAIRS as usize
    }

    /// Adds one slice's run (not pinned to a CPU).
    pub fn add(&mut self, run: PairsRun) {
        self.add_on(run, None);
    }

    /// Adds one slice's run, which ran pinned to `cpu` (`None`: not pinned).
    pub fn add_on(&mut self, run: PairsRun, cpu: Option<usize>) {
        if self.rows_per_round.is_some_and(|r| r != run.rows_per_round) {
            // Not commensurable (cannot happen through config_for_next).
            return;
        }
        self.rows_per_round = Some(run.rows_per_round);
        self.clock = Some(run.clock);
        let (_, median_ns_per_row) = medians(&run.pairs, run.rows_per_round.max(1) as f64);
        self.slice_medians_ns_per_row.push(median_ns_per_row);
        let room = (MAX_PAIRS as usize).saturating_sub(self.pairs.len());
        let added = run.pairs.len().min(room);
        self.pairs.extend(run.pairs.into_iter().take(room));
        self.pair_cpus.extend(std::iter::repeat_n(cpu, added));
        self.slices += 1;
        self.elapsed_ns = self.elapsed_ns.saturating_add(run.elapsed_ns);
        if run.stopped_by == StopReason::Interrupted {
            self.stopped_by = StopReason::Interrupted;
        }
    }

    /// The config of the next slice: the first slice's rows per round.
    pub fn config_for_next(&self) -> ModelConfig {
        ModelConfig {
            rows_per_round: self.rows_per_round.or(self.config.rows_per_round),
            ..self.config
        }
    }

    /// The pooled cost; `None` without pairs.
    pub fn cost(&self) -> Option<ExecutorLoopCost> {
        let mut cost = self.cost_of(&self.pairs)?;
        cost.budget_ns = self.config.budget_ns.saturating_mul(u64::from(self.slices));
        cost.sampling = sampling_text(self.slices, self.elapsed_ns);
        cost.cpus = cpu_runs(self, None);
        cost.slice_medians_ns_per_row = self.slice_medians_ns_per_row.clone();
        if let (Some(what), false) = (self.pinned_to, cost.cpus.is_empty()) {
            let unpinned = self.pair_cpus.iter().filter(|c| c.is_none()).count();
            let per_cpu = slices_per_cpu_text(self);
            cost.sampling.push_str(&if unpinned == 0 {
                format!("; each slice pinned to {what} ({per_cpu})")
            } else {
                format!("; slices pinned to {what} where they could be ({per_cpu}; not pinned: {unpinned} pairs)")
            });
        }
        Some(cost)
    }

    /// The cost of `pairs` (all of the slices' or one CPU's), with the
    /// slices' work, stop and time.
    pub(crate) fn cost_of(&self, pairs: &[RoundPair]) -> Option<ExecutorLoopCost> {
        let mut cost = cost_from_pairs(self.clock?, pairs, self.rows_per_round?, self.config.instrumentation)?;
        cost.work_steps = self.config.work_steps.min(MAX_WORK_STEPS);
        cost.stopped_by = if self.pairs.len() >= MAX_PAIRS as usize {
            StopReason::MaxPairs
        } else {
            self.stopped_by
        };
        cost.elapsed_ns = self.elapsed_ns;
        Some(cost)
    }
}

/// One run of pairs as the cost it measured, with how it was measured (one
/// sampling window: the run's own).
fn cost_of_run(run: &PairsRun, config: ModelConfig) -> Option<ExecutorLoopCost> {
    let mut cost = cost_from_pairs(run.clock, &run.pairs, run.rows_per_round, config.instrumentation)?;
    cost.work_steps = config.work_steps.min(MAX_WORK_STEPS);
    cost.stopped_by = run.stopped_by;
    cost.budget_ns = config.budget_ns;
    cost.elapsed_ns = run.elapsed_ns;
    cost.sampling = sampling_text(1, run.elapsed_ns);
    Some(cost)
}

/// Each CPU's pairs (pinned pairs only), by CPU.
pub(crate) fn groups(slices: &Slices) -> BTreeMap<usize, Vec<RoundPair>> {
    let mut by_cpu: BTreeMap<usize, Vec<RoundPair>> = BTreeMap::new();
    for (pair, cpu) in slices.pairs.iter().zip(&slices.pair_cpus) {
        if let Some(cpu) = cpu {
            by_cpu.entry(*cpu).or_default().push(*pair);
        }
    }
    by_cpu
}

/// The median TIMING OFF row and paired difference per row of `pairs`, ns.
pub(crate) fn medians(pairs: &[RoundPair], rows: f64) -> (f64, f64) {
    let work: Vec<f64> = pairs.iter().map(|p| p.timing_off_ns / rows).collect();
    let diff: Vec<f64> = pairs
        .iter()
        .map(|p| (p.timing_on_ns - p.timing_off_ns) / rows)
        .collect();
    (
        stats::median(&work).unwrap_or(f64::NAN),
        stats::median(&diff).unwrap_or(f64::NAN),
    )
}

/// Each CPU's pairs as a [`CpuRun`]; `used`: the CPU whose pairs make the
/// headline, `None` for all (pooled). Empty when no pair was pinned.
pub(crate) fn cpu_runs(slices: &Slices, used: Option<usize>) -> Vec<CpuRun> {
    let rows = slices.rows_per_round.unwrap_or(1).max(1) as f64;
    groups(slices)
        .into_iter()
        .map(|(cpu, pairs)| {
            let (work_ns_per_row, median_ns_per_row) = medians(&pairs, rows);
            CpuRun {
                cpu,
                pairs: pairs.len() as u32,
                work_ns_per_row,
                median_ns_per_row,
                used: used.is_none_or(|u| u == cpu),
            }
        })
        .collect()
}

/// "CPU 0: 140 pairs, CPU 1: 96 pairs".
pub(crate) fn slices_per_cpu_text(slices: &Slices) -> String {
    groups(slices)
        .iter()
        .map(|(cpu, pairs)| format!("CPU {cpu}: {} pairs", pairs.len()))
        .collect::<Vec<_>>()
        .join(", ")
}
