//! The read-cost engine: the one way a clock's read cost is measured, for
//! `check`, `clocks`, `sweep` and `explain` (`docs/options.md` promises one
//! definition).
//!
//! 1. A *run* is PostgreSQL's pg_test_timing loop ([`clockscope::measure()`])
//!    with the interference sources read just before and after it, outside
//!    the loop, on the measuring thread ([`measure_once`]); its read cost is
//!    the mean read with the interference gaps taken out
//!    ([`interference::read_cost_ns`]).
//! 2. A noisy run is repeated, at most [`interference::MAX_RUNS`] runs
//!    inside one budget ([`run_budget_ns`]), and the cleanest is kept
//!    ([`measure_clean`]).
//! 3. Several such measurements (`explain`'s chunks, `sweep`'s interleaved
//!    rounds) give a median with its 95% interval ([`Estimate`], from
//!    [`crate::stats`]).

use crate::interference::{self, Interference, RunQuality, Snapshot};
use crate::stats::{self, Interval};
use clockscope::{measure, ClockError, ClockId, ClockSource, ClockVisitor, Control, Measurement, Progress, Scale};
use std::path::Path;

/// One run of the loop on `clock` for `duration_ns`, with the interference
/// sources read just before and after it (outside the loop, on the
/// measuring thread; `cpus`: the CPUs steal time is summed over).
pub fn measure_once<C: ClockSource>(
    clock: &C,
    duration_ns: u64,
    cpus: Option<&[usize]>,
    mut control: impl FnMut(&Progress) -> Control,
) -> (Measurement, Interference) {
    let root = Path::new("/");
    let before = Snapshot::take(root, cpus);
    let m = measure(clock, duration_ns, &mut control);
    let after = Snapshot::take(root, cpus);
    let gaps = interference::find_gaps(&m.histogram);
    let i = Interference::from_gaps(&gaps, m.elapsed_ns).with_sources(&before, &after, m.elapsed_ns);
    (m, i)
}

/// The time of run `n` (from 1) of a clock whose measurements may take
/// `budget_ns` in all: the first run half of it, each repeat of a noisy run
/// half of what is left, the last ([`interference::MAX_RUNS`]) all that is
/// left, so that the repeats fit inside the budget.
pub fn run_budget_ns(budget_ns: u64, n: u32) -> u64 {
    let mut left = budget_ns;
    for _ in 1..n {
        left -= left / 2;
    }
    if n >= interference::MAX_RUNS {
        left
    } else {
        left / 2
    }
}

/// Measures with `run(n)` and repeats while the run is noisy, at most
/// [`interference::MAX_RUNS`] runs, keeping the cleanest; the kept run's
/// interference says how many runs were made and what each saw.
pub fn measure_repeating_noisy(mut run: impl FnMut(u32) -> (Measurement, Interference)) -> (Measurement, Interference) {
    let r = interference::repeat_while_noisy(interference::MAX_RUNS, &mut run, |(m, i)| RunQuality {
        noise: i.noise_by_run.first().cloned().flatten(),
        lost_fraction: i.lost_fraction,
        interrupted: m.interrupted,
    });
    let (m, mut i) = r.kept;
    i.runs = r.runs;
    i.kept_run = r.kept_run;
    i.noise_by_run = r.noise;
    (m, i)
}

/// One clean measurement of `clock` inside `budget_ns`: [`measure_once`]
/// repeated while noisy ([`measure_repeating_noisy`], each run
/// [`run_budget_ns`]). `control` is asked between chunks of the loop with
/// the run's number and its progress.
pub fn measure_clean<C: ClockSource>(
    clock: &C,
    budget_ns: u64,
    cpus: Option<&[usize]>,
    mut control: impl FnMut(u32, &Progress) -> Control,
) -> (Measurement, Interference) {
    measure_repeating_noisy(|n| measure_once(clock, run_budget_ns(budget_ns, n), cpus, |p| control(n, p)))
}

/// What [`measure_clock`] found: the kept run, the clock's observed step
/// ([`Measurement::observed_step_ns`]) and the interference.
pub struct Clean {
    /// The clock's display name ([`ClockSource::name`]).
    pub name: &'static str,
    /// The kept run.
    pub measurement: Measurement,
    /// The smallest step the clock was seen to take, ns.
    pub observed_step_ns: Option<u64>,
    /// What interfered with the kept run, and how many runs were made.
    pub interference: Interference,
}

/// [`measure_clean`] on the clock named by `id` (a counter at
/// `counter_scale`), with the observed step. Not generic, so the loop is
/// monomorphised here, in a crate the dev profile optimises: the tools call
/// this and build at opt-level 0 (Cargo.toml). `control` gets the clock's
/// name, the run's number and its progress between chunks of the loop.
pub fn measure_clock(
    id: ClockId,
    counter_scale: Option<Scale>,
    budget_ns: u64,
    cpus: Option<&[usize]>,
    control: &mut dyn FnMut(&str, u32, &Progress) -> Control,
) -> Result<Clean, ClockError> {
    struct Visit<'a> {
        budget_ns: u64,
        cpus: Option<&'a [usize]>,
        control: &'a mut dyn FnMut(&str, u32, &Progress) -> Control,
    }
    impl ClockVisitor for Visit<'_> {
        type Output = Clean;
        fn visit<C: ClockSource>(self, clock: &C) -> Clean {
            let control = self.control;
            let (measurement, interference) =
                measure_clean(clock, self.budget_ns, self.cpus, |n, p| control(clock.name(), n, p));
            Clean {
                name: clock.name(),
                observed_step_ns: measurement.observed_step_ns(clock),
                measurement,
                interference,
            }
        }
    }
    clockscope::visit(
        id,
        counter_scale,
        Visit {
            budget_ns,
            cpus,
            control,
        },
    )
}

/// The read cost of a measurement: the mean read without its interference
/// gaps, ns; `None` when nothing was measured.
pub fn read_cost_ns(m: &Measurement) -> Option<f64> {
    interference::read_cost_ns(m, &interference::find_gaps(&m.histogram))
}

/// Several measurements' read costs as one: their median and its 95%
/// interval (order statistics, [`stats::median_interval`]: 6 samples at
/// least).
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The median read cost, ns.
    pub median_ns: f64,
    /// Its 95% interval; `None` under 6 samples.
    pub interval: Option<Interval>,
    /// Each measurement's read cost, ns, in the order measured.
    pub samples_ns: Vec<f64>,
}

impl Estimate {
    /// The estimate of `samples_ns`; `None` when empty.
    pub fn of(samples_ns: Vec<f64>) -> Option<Estimate> {
        Some(Estimate {
            median_ns: stats::median(&samples_ns)?,
            interval: stats::median_interval(&samples_ns, stats::CONFIDENCE),
            samples_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope::Scale;
    use clockscope::ScriptedClock;

    #[test]
    fn run_budgets_fit_inside_the_budget() {
        let total: u64 = (1..=interference::MAX_RUNS).map(|n| run_budget_ns(1_000, n)).sum();
        assert_eq!(total, 1_000);
        assert_eq!(run_budget_ns(1_000, 1), 500);
    }

    #[test]
    fn a_clean_clock_is_measured_once_with_gaps_taken_out() {
        // 20 ns a read, and every 1000th read a 1.5 us pause: gaps, not
        // cost, but under 10% of the time, so the run is clean.
        let clock = ScriptedClock::new("scripted", Scale::NANOSECONDS, |n| 20 * n + (n / 1000) * 1_500);
        let (m, i) = measure_clean(&clock, 2_000_000, None, |_, _| Control::Continue);
        assert_eq!(i.runs, 1);
        let cost = read_cost_ns(&m).unwrap();
        assert!(cost < m.avg_loop_ns().unwrap(), "{cost} vs {:?}", m.avg_loop_ns());
    }

    #[test]
    fn a_noisy_clock_is_measured_again() {
        // A 30 us pause every 100 reads of 20 ns: most of the time lost in gaps.
        let clock = ScriptedClock::new("noisy", Scale::NANOSECONDS, |n| 20 * n + (n / 100) * 30_000);
        let (_, i) = measure_clean(&clock, 3_000_000, None, |_, _| Control::Continue);
        assert_eq!(i.runs, interference::MAX_RUNS);
        assert_eq!(i.noise_by_run.len(), interference::MAX_RUNS as usize);
    }

    #[test]
    fn an_estimate_is_a_median_with_its_interval() {
        let e = Estimate::of(vec![5.0, 1.0, 3.0, 2.0, 4.0, 6.0, 7.0]).unwrap();
        assert_eq!(e.median_ns, 4.0);
        assert!(e.interval.is_some());
        let few = Estimate::of(vec![1.0, 2.0]).unwrap();
        assert_eq!(few.interval, None);
        assert_eq!(Estimate::of(Vec::new()), None);
    }
}
