//! `sweep`'s judgement: each clocksource's rounds combined into its row and
//! an interval, and the recommendation, which advises a kernel change only
//! when the read costs are told apart beyond the noise.
//!
//! The sweep measures the clocksources interleaved, [`ROUNDS`] rounds of
//! `A B C`, each slice a `-d / ROUNDS` run of `check`'s loop, so that a
//! burst of interference (another process on the CPU for a second) lands
//! in one slice of one clocksource, not in one clocksource's whole run. A
//! slice's read cost is `check`'s (the mean read without interference gaps,
//! [`clockscope_system::interference::read_cost_ns`]); a row's read cost
//! is the median of its slices, with the median's order-statistics 95%
//! interval ([`clockscope_system::stats::median_interval`], which needs 6 samples;
//! [`ROUNDS`] says why 10). A median always lies inside its interval.
//!
//! A change is advised only when both hold: the intervals of the cheapest
//! clocksource and of the one in use do not overlap, and the difference of
//! their medians is at least [`KEEP_CURRENT_WITHIN`] of the one in use's
//! read cost. Otherwise the clocksources are not distinguishable here and
//! the one in use is kept.
//!
//! With `sweep --dsn` the same rule runs on the server's measured EXPLAIN
//! ANALYZE overhead per row ([`Basis`]) when the server's clock follows the
//! kernel clocksource; those runs follow one another rather than
//! interleave, so a change also needs the cheapest apart from the
//! original's repeat at the end (the sweep's A/A control).

use crate::commands::check::model::stats::{ClockStats, Percentiles};
use crate::commands::sweep::model::{Recommendation, ServerExplain, SweepResult};
use crate::i18n::num;
use crate::t;
use clockscope_system::engine::Estimate;

/// Interleaved rounds per sweep: each clocksource is measured this many
/// times, `-d / ROUNDS` each. 6 is the fewest samples with a 95% interval
/// of a median, and that interval is the smallest to the largest round, so
/// one disturbed round stretches it; with 10 it runs from the second
/// smallest to the second largest (97.9%), so one disturbed round does not.
pub const ROUNDS: u32 = 10;

/// A change is advised only for a read-cost difference of at least this
/// fraction of the read cost in use (and intervals apart): a switch needs a
/// reboot to persist and can be undone by the kernel's watchdog, and
/// run-to-run differences of a few percent are common between boots and on
/// VMs, so a smaller gain is not worth it even when measured.
pub const KEEP_CURRENT_WITHIN: f64 = 0.10;

/// The median of unsigned values (the lower middle for an even count).
fn median_u64(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// One clocksource's slices as one set of statistics: loops, elapsed time
/// and backward steps added up, the average loop over all of them, the
/// read cost the median of the slices' (see the module), each percentile
/// the median of the slices', the maximum the largest.
pub fn combine(slices: &[ClockStats]) -> Option<ClockStats> {
    let mut all = slices.first()?.clone();
    all.loops = slices.iter().map(|s| s.loops).sum();
    all.elapsed_ns = slices.iter().map(|s| s.elapsed_ns).sum();
    let loops = all.loops;
    let per_loop = |total: f64| if loops > 0 { total / loops as f64 } else { 0.0 };
    all.avg_loop_ns = per_loop(all.elapsed_ns as f64);
    all.read_cost_ns = Estimate::of(read_costs(slices)).map_or(0.0, |e| e.median_ns);
    let pick = |f: fn(&Percentiles) -> u64| median_u64(slices.iter().map(|s| f(&s.percentiles_ns)).collect());
    all.percentiles_ns = Percentiles {
        p50: pick(|p| p.p50),
        p90: pick(|p| p.p90),
        p99: pick(|p| p.p99),
        p99_9: pick(|p| p.p99_9),
        p99_99: pick(|p| p.p99_99),
        max: slices.iter().map(|s| s.percentiles_ns.max).max().unwrap_or(0),
    };
    all.under_1us_pct = per_loop(slices.iter().map(|s| s.under_1us_pct * s.loops as f64).sum());
    all.backward_steps = slices.iter().map(|s| s.backward_steps).sum();
    all.largest_backward_ns = slices.iter().map(|s| s.largest_backward_ns).max().unwrap_or(0);
    all.interrupted = slices.iter().any(|s| s.interrupted);
    Some(all)
}

/// Each slice's read cost, in the order measured.
pub fn read_costs(slices: &[ClockStats]) -> Vec<f64> {
    slices.iter().map(|s| s.read_cost_ns).collect()
}

/// What the recommendation compares, row by row: a value and its 95%
/// interval. Without `--dsn` the system clock's read cost; with it, when
/// the server's clock for EXPLAIN follows the kernel's clocksource, the
/// server's EXPLAIN ANALYZE overhead per row (the real cost the sweep is
/// about; the read cost stays in the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    ReadCost,
    ServerOverheadPerRow,
}

impl Basis {
    /// The basis for `results`: the server's overhead when a valid row has
    /// it measured whole on a clock that follows the kernel clocksource.
    pub fn for_results(results: &[SweepResult]) -> Basis {
        if results.iter().any(|r| r.valid && Basis::ServerOverheadPerRow.counts(r)) {
            Basis::ServerOverheadPerRow
        } else {
            Basis::ReadCost
        }
    }

    /// Its name in the JSON (`recommendation.based_on`).
    pub fn key(self) -> &'static str {
        match self {
            Basis::ReadCost => "read_cost",
            Basis::ServerOverheadPerRow => "explain_overhead_per_row",
        }
    }

    /// The row's value, when it has one for this basis.
    fn value(self, r: &SweepResult) -> Option<f64> {
        match self {
            Basis::ReadCost => Some(r.read_cost.median_ns),
            Basis::ServerOverheadPerRow => r.server_explain.as_ref().map(|e| e.overhead_per_row_ns),
        }
    }

    /// The value's 95% interval (low, high), when it has one.
    fn interval(self, r: &SweepResult) -> Option<(f64, f64)> {
        match self {
            Basis::ReadCost => r.read_cost.interval.map(|i| (i.low, i.high)),
            Basis::ServerOverheadPerRow => {
                let e = r.server_explain.as_ref()?;
                e.overhead_per_row_low_ns.zip(e.overhead_per_row_high_ns)
            }
        }
    }

    /// Whether the row counts for this basis: a server measurement on a
    /// clock that follows the kernel clocksource, neither cut short nor
    /// contradicting itself.
    fn counts(self, r: &SweepResult) -> bool {
        match self {
            Basis::ReadCost => true,
            Basis::ServerOverheadPerRow => r.server_explain.as_ref().is_some_and(|e| {
                e.follows_kernel_clocksource && e.stopped_by != "interrupted" && e.result != "measurement_problem"
            }),
        }
    }

    fn shown(self, r: &SweepResult) -> String {
        let v = num(self.value(r).unwrap_or(f64::NAN), 1);
        let clock = &r.clocksource;
        match (self, self.interval(r)) {
            (Basis::ReadCost, Some((low, high))) => t!(
                "{clock} {value} ns (95% interval {low} to {high})",
                clock = clock,
                value = v,
                low = num(low, 1),
                high = num(high, 1)
            ),
            (Basis::ReadCost, None) => t!(
                "{clock} {value} ns (no interval: {n} round(s), 6 needed)",
                clock = clock,
                value = v,
                n = r.read_cost.samples_ns.len()
            ),
            (Basis::ServerOverheadPerRow, Some((low, high))) => t!(
                "{clock} {value} ns/row (95% interval {low} to {high})",
                clock = clock,
                value = v,
                low = num(low, 1),
                high = num(high, 1)
            ),
            (Basis::ServerOverheadPerRow, None) => t!(
                "{clock} {value} ns/row (no interval: {n} pair(s), 6 blocks of 2 needed)",
                clock = clock,
                value = v,
                n = r.server_explain.as_ref().map_or(0, |e| e.pairs)
            ),
        }
    }

    /// `shown` has the lowest value measured, and how it stands to the next.
    fn lowest(self, shown: String, next: String) -> String {
        match self {
            Basis::ReadCost => t!(
                "{shown} has the lowest read cost measured{next}",
                shown = shown,
                next = next
            ),
            Basis::ServerOverheadPerRow => t!(
                "{shown} has the lowest EXPLAIN ANALYZE overhead per row measured{next}",
                shown = shown,
                next = next
            ),
        }
    }

    /// Whether `cheap` costs less than `dear` beyond the noise: the
    /// intervals apart, and the difference at least [`KEEP_CURRENT_WITHIN`]
    /// of `dear`'s (a positive) value.
    pub fn told_apart(self, cheap: &SweepResult, dear: &SweepResult) -> bool {
        match (
            self.interval(cheap),
            self.interval(dear),
            self.value(cheap),
            self.value(dear),
        ) {
            (Some(c), Some(d), Some(cv), Some(dv)) => c.1 < d.0 && dv > 0.0 && dv - cv >= KEEP_CURRENT_WITHIN * dv,
            _ => false,
        }
    }
}

/// The choice among the rows that count: sound (valid, measured, never
/// backwards, not cut short) and, where any is, served by the vDSO and
/// passing PostgreSQL's rule; compared on [`Basis::for_results`]. A change
/// from `original` only when the cheapest is told apart from it
/// ([`Basis::told_apart`]); otherwise `original` is kept.
///
/// With the server's overhead as the basis, the clocksources' runs follow
/// one another, so a drift of the machine between runs could pass for a
/// difference: `repeat` is the original measured again at the end (the
/// sweep's A/A control), and a change is advised only when the cheapest
/// is told apart from both of the original's runs; without the repeat, none.
///
/// Its sentences are English, as the report (and JSON) keeps them;
/// [`recommend_words`] gives them in the reader's language.
pub fn recommend(results: &[SweepResult], original: &str, repeat: Option<&ServerExplain>) -> Option<Recommendation> {
    crate::i18n::in_english(|| recommend_words(results, original, repeat))
}

/// [`recommend`] in the current language (the text's).
pub fn recommend_words(
    results: &[SweepResult],
    original: &str,
    repeat: Option<&ServerExplain>,
) -> Option<Recommendation> {
    let basis = Basis::for_results(results);
    let value = |r: &SweepResult| basis.value(r).unwrap_or(f64::INFINITY);
    let sound: Vec<&SweepResult> = results
        .iter()
        .filter(|r| r.valid && r.loops > 0 && r.backward_steps == 0 && !r.interrupted && basis.counts(r))
        .collect();
    let good: Vec<&SweepResult> = sound
        .iter()
        .copied()
        .filter(|r| r.syscall_fallback.is_none() && r.postgresql_rule.as_ref().is_some_and(|p| p.passed))
        .collect();
    let pool = if good.is_empty() { &sound } else { &good };
    let best = *pool.iter().min_by(|a, b| value(a).total_cmp(&value(b)))?;
    let threshold = format!("{}%", num(KEEP_CURRENT_WITHIN * 100.0, 0));
    let keep = |why: String, distinguishable: bool| Recommendation {
        clocksource: original.to_string(),
        in_use: true,
        why,
        kernel_parameter: format!("clocksource={original}"),
        distinguishable,
        based_on: basis.key().to_string(),
    };
    let Some(current) = sound.iter().copied().find(|r| r.clocksource == original) else {
        return Some(keep(
            t!(
                "{original} (in use) was not measured soundly, so nothing is compared with it: no change advised \
                 (sweep it too, without --only, to compare)",
                original = original
            ),
            false,
        ));
    };
    if best.clocksource == original {
        // The one in use is the cheapest: told apart from the runner-up, or not.
        let next = pool
            .iter()
            .copied()
            .filter(|r| r.clocksource != original)
            .min_by(|a, b| value(a).total_cmp(&value(b)));
        let apart = next.is_some_and(|n| basis.told_apart(current, n));
        let next = match next {
            Some(n) if apart => t!(", apart from the next ({next})", next = basis.shown(n)),
            Some(n) => t!(", not distinguishable here from {next}", next = basis.shown(n)),
            None => String::new(),
        };
        return Some(keep(basis.lowest(basis.shown(current), next), apart));
    }
    let drift_ruled_out = drift_ruled_out(basis, best, current, repeat, original);
    if let (true, Err(why)) = (basis.told_apart(best, current), &drift_ruled_out) {
        return Some(keep(
            t!(
                "{best} against {current} (in use) looks apart, but {why}: keep {original}",
                best = basis.shown(best),
                current = basis.shown(current),
                why = why,
                original = original
            ),
            false,
        ));
    }
    if let (true, Ok(control)) = (basis.told_apart(best, current), &drift_ruled_out) {
        return Some(Recommendation {
            clocksource: best.clocksource.clone(),
            in_use: false,
            why: apart_words(
                basis,
                basis.shown(best),
                basis.shown(current),
                num(value(current) - value(best), 1),
                &threshold,
                if good.is_empty() {
                    t!("; no clocksource stayed in the vDSO and passed PostgreSQL's rule")
                } else {
                    t!("; it stays in the vDSO and passes PostgreSQL's rule")
                },
                control,
            ),
            kernel_parameter: format!("clocksource={}", best.clocksource),
            distinguishable: true,
            based_on: basis.key().to_string(),
        });
    }
    let why = not_distinguishable(basis, basis.shown(best), basis.shown(current), &threshold, original);
    Some(keep(why, false))
}

/// Why the one in use is kept: `best` and `current` not told apart.
fn not_distinguishable(basis: Basis, best: String, current: String, threshold: &str, original: &str) -> String {
    match basis {
        Basis::ReadCost => t!(
            "{best} and {current} (in use) are not distinguishable here (intervals that overlap, or a difference \
             under {threshold} of the read cost in use): keep {original}",
            best = best,
            current = current,
            threshold = threshold,
            original = original
        ),
        Basis::ServerOverheadPerRow => t!(
            "{best} and {current} (in use) are not distinguishable here (intervals that overlap, or a difference \
             under {threshold} of the EXPLAIN ANALYZE overhead per row in use): keep {original}",
            best = best,
            current = current,
            threshold = threshold,
            original = original
        ),
    }
}

/// Why a change is advised: the two values, their difference, the rules
/// and the drift control (`control`).
fn apart_words(
    basis: Basis,
    best: String,
    current: String,
    difference: String,
    threshold: &str,
    rules: &str,
    control: &str,
) -> String {
    match basis {
        Basis::ReadCost => t!(
            "{best} against {current} (in use): the 95% intervals do not overlap and the difference, {difference} \
             ns, is at least {threshold} of the read cost in use{rules}{control}",
            best = best,
            current = current,
            difference = difference,
            threshold = threshold,
            rules = rules,
            control = control
        ),
        Basis::ServerOverheadPerRow => t!(
            "{best} against {current} (in use): the 95% intervals do not overlap and the difference, {difference} \
             ns, is at least {threshold} of the EXPLAIN ANALYZE overhead per row in use{rules}{control}",
            best = best,
            current = current,
            difference = difference,
            threshold = threshold,
            rules = rules,
            control = control
        ),
    }
}

/// With the server's overhead as the basis: whether `best` is also apart
/// from the original's repeat at the end (`repeat`), which rules out the
/// machine's drift between the runs; `Ok` with the words to add to the
/// advice, `Err` with why no change is advised. Always `Ok` on the read
/// cost (its rounds are interleaved).
fn drift_ruled_out(
    basis: Basis,
    best: &SweepResult,
    current: &SweepResult,
    repeat: Option<&ServerExplain>,
    original: &str,
) -> Result<String, String> {
    if basis == Basis::ReadCost {
        return Ok(String::new());
    }
    let Some(again) = repeat.map(|e| SweepResult {
        server_explain: Some(e.clone()),
        ..current.clone()
    }) else {
        return Err(t!(
            "{original} was not measured again at the end (the sweep's control for the machine's drift between \
             runs)",
            original = original
        ));
    };
    if basis.told_apart(best, &again) {
        let e = again.server_explain.as_ref();
        Ok(t!(
            "; and apart from {original}'s repeat at the end ({low} to {high} ns/row), so not the machine's drift \
             between the runs",
            original = original,
            low = num(e.and_then(|e| e.overhead_per_row_low_ns).unwrap_or(f64::NAN), 1),
            high = num(e.and_then(|e| e.overhead_per_row_high_ns).unwrap_or(f64::NAN), 1)
        ))
    } else {
        Err(t!(
            "{original}'s repeat at the end ({repeat}) is not apart from {best}: the difference is within the \
             machine's drift between the runs",
            original = original,
            repeat = basis.shown(&again),
            best = best.clocksource
        ))
    }
}

/// How to make the choice persistent, and when a choice can be undone by the
/// system: in the current language (the report keeps the English, which
/// JSON carries, and the text asks again in the reader's language).
pub fn persistence_advice(name: &str) -> Vec<String> {
    vec![
        crate::t!(
            "persistent: add clocksource={name} to the kernel command line (Debian/Ubuntu: GRUB_CMDLINE_LINUX in \
             /etc/default/grub, then update-grub; RHEL/Fedora: grubby --update-kernel=ALL --args=clocksource={name}), \
             reboot, and check /proc/cmdline and current_clocksource; a switch through sysfs lasts until reboot",
            name = name
        ),
        crate::t!(
            "caveat, VM live migration: the TSC of the new host may run at another rate or offset; kvm-clock, \
             hyperv_clocksource_tsc_page and xen correct for that, a raw tsc does not unless the hypervisor scales it \
             (TSC scaling, an invariant TSC exposed to the guest); check with `clockscope tsc` after a migration"
        )
        .to_string(),
        crate::t!(
            "caveat, suspend and resume (hibernation, VM pause): the TSC may stop or be reset; the kernel re-checks \
             it on resume and may mark it unstable"
        )
        .to_string(),
        crate::t!(
            "caveat, the kernel's clocksource watchdog compares the clocksource with another (hpet, acpi_pm) and, on \
             a disagreement, marks it unstable and switches away for good (dmesg: \"Marking clocksource 'tsc' as \
             unstable\"); clocksource= cannot override that, and tsc=reliable disables the check: use it only where \
             `clockscope tsc` trusts the TSC"
        )
        .to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope_system::stats::{median, CONFIDENCE};

    /// Every read-cost interval the sweep prints holds its estimate (the
    /// median), whatever the rounds: 2000 sets of 6 to 40 rounds, costs
    /// from a fixed-seed generator, ties and outliers included.
    #[test]
    fn an_interval_always_contains_its_estimate() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2000 {
            let n = 6 + (next() % 35) as usize;
            let samples: Vec<f64> = (0..n)
                .map(|_| match next() % 10 {
                    0 => 300.0 + (next() % 1000) as f64,
                    1 => 24.0,
                    _ => 20.0 + (next() % 100) as f64 / 10.0,
                })
                .collect();
            let m = median(&samples).unwrap();
            let i = Estimate::of(samples.clone()).unwrap().interval.unwrap();
            assert!(i.low <= m && m <= i.high, "{samples:?}: {m} outside {i:?}");
            assert!(i.coverage >= CONFIDENCE, "{i:?}");
        }
        // Under 6 rounds: no interval at all, never one without its estimate.
        assert!(Estimate::of(vec![20.0, 21.0, 22.0, 23.0, 24.0])
            .unwrap()
            .interval
            .is_none());
    }

    #[test]
    fn ten_rounds_keep_one_disturbed_round_out_of_the_interval() {
        let mut rounds = vec![24.0; 9];
        rounds.insert(0, 300.0);
        let i = Estimate::of(rounds.to_vec()).unwrap().interval.unwrap();
        assert_eq!((i.low, i.high), (24.0, 24.0));
        assert_eq!(rounds.len(), ROUNDS as usize);
    }
}
