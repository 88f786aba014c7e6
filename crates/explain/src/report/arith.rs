//! The report's arithmetic (see [`super`]): medians, overheads per row and
//! per read, and the prediction from this machine's clock cost.

use super::model::{
    AaControl, Inputs, Noise, PairedInTime, QueryBreakdown, Report, Resolution, SourceResult, TscPrediction,
    CLOCK_READS_FORMULA,
};
use crate::clockcost::{ClockCost, MachineClocks};
use crate::measure::SourceRuns;
use crate::stats::Spread;
use clockscope_pg::predict::settings::READS_PER_ROW_PER_NODE;
use clockscope_pg::predict::ExplainOverhead;

fn uses_tsc(clock_source: &str) -> bool {
    crate::clock_source::current_is(clock_source, "tsc")
}

/// The library's prediction for a run of `rows` rows taking `timing_off_ms`
/// with TIMING OFF, `reads_per_row` clock reads of `per_read_ns` each.
fn predict(timing_off_ms: f64, rows: f64, reads_per_row: f64, per_read_ns: f64) -> ExplainOverhead {
    clockscope_pg::predict::explain_overhead(timing_off_ms * 1e6 / rows, reads_per_row, per_read_ns, rows)
}

fn source_result(runs: &SourceRuns, rows: u64, machine: &MachineClocks) -> Option<SourceResult> {
    let off = Spread::of(&runs.timing_off_ms)?;
    let on = Spread::of(&runs.timing_on_ms)?;
    let noise = noise_of(runs)?;
    let control = control_of(runs);
    let reads = runs.clock_reads_per_run;
    let reads_per_row = reads as f64 / rows as f64;
    let cost = if uses_tsc(&runs.clock_source) {
        machine.rdtsc.as_ref()
    } else {
        Some(&machine.system)
    };
    let predicted = cost.and_then(ClockCost::added_per_read_ns);
    let prediction_status = cost.map_or_else(
        || "not measured: this machine cannot read that clock".to_string(),
        ClockCost::prediction_status,
    );
    let interval = cost
        .and_then(|c| c.executor_loop.as_ref())
        .filter(|e| e.resolved)
        .and_then(|e| e.interval);
    let back_to_back = cost.map(|c| c.per_read_ns).filter(|v| v.is_finite() && *v > 0.0);
    // One estimate: the median block slowdown and its interval; every
    // figure below is it, scaled (the TIMING OFF median sets the scale).
    let slowdown = noise.slowdown_median;
    let (low, high) = (noise.slowdown_ci_low, noise.slowdown_ci_high);
    let added_ns = |x: f64| (x - 1.0) * off.median * 1e6;
    let per_read = |x: f64| added_ns(x) / reads as f64;
    let per_row = |x: f64| added_ns(x) / rows as f64;
    let overhead_per_read_ns = per_read(slowdown);
    let (result, result_reason) = judge_result(low, high, noise.blocks, &control);
    let prediction = predicted.map(|p| predict(off.median, rows as f64, reads_per_row, p));
    // The model's interval is per row per node (two reads).
    let per_row_at = |per_row_per_node: f64| reads_per_row / READS_PER_ROW_PER_NODE * per_row_per_node;
    let over_predicted = |x: Option<f64>| x.map(per_read).zip(predicted).map(|(o, p)| o / p);
    Some(SourceResult {
        clock_source: runs.clock_source.clone(),
        how: runs.how.clone(),
        timing_off_ms: off.median,
        timing_off_ms_min: off.min,
        timing_off_ms_max: off.max,
        timing_on_ms: on.median,
        timing_on_ms_min: on.min,
        timing_on_ms_max: on.max,
        slowdown,
        slowdown_low: low,
        slowdown_high: high,
        result,
        result_reason,
        overhead_per_row_ns: per_row(slowdown),
        overhead_per_row_low_ns: low.map(per_row),
        overhead_per_row_high_ns: high.map(per_row),
        overhead_per_read_ns,
        overhead_per_read_low_ns: low.map(per_read),
        overhead_per_read_high_ns: high.map(per_read),
        clock_reads_per_run: reads,
        clock_reads_per_row: reads_per_row,
        predicted_clock: cost.map(|c| c.clock.clone()),
        predicted_per_read_ns: predicted,
        predicted_overhead_per_row_ns: prediction.map(|p| p.overhead_per_row_ns),
        predicted_overhead_per_row_low_ns: interval.map(|i| per_row_at(i.low)),
        predicted_overhead_per_row_high_ns: interval.map(|i| per_row_at(i.high)),
        predicted_timing_on_ms: prediction.map(|p| p.timing_on_ms),
        predicted_slowdown: prediction.map(|p| p.slowdown),
        observed_over_predicted: over_predicted(Some(slowdown)),
        observed_over_predicted_low: over_predicted(low),
        observed_over_predicted_high: over_predicted(high),
        paired_in_time: cost
            .and_then(|c| c.executor_loop.as_ref())
            .filter(|_| predicted.is_some())
            .and_then(|e| paired_in_time(runs, &e.slice_medians_ns_per_row)),
        prediction_status,
        back_to_back_per_read_ns: back_to_back,
        back_to_back_observed_over_predicted: back_to_back.map(|p| overhead_per_read_ns / p),
        runs_timing_off_ms: runs.timing_off_ms.clone(),
        runs_timing_on_ms: runs.timing_on_ms.clone(),
        noise,
        control,
    })
}

/// Whether the slowdown's interval (`low`, `high`, over `blocks` blocks)
/// stands clear of the A/A control: above both 1.0 and the control's
/// extent it is stated; wholly below both it is a measurement problem
/// (timing cannot make EXPLAIN faster); otherwise not resolved, and why.
pub(crate) fn judge_result(
    low: Option<f64>,
    high: Option<f64>,
    blocks: usize,
    control: &AaControl,
) -> (Resolution, String) {
    let (Some(lo), Some(hi)) = (low, high) else {
        return (
            Resolution::NotResolved,
            format!(
                "not resolved here: {blocks} block{} of pairs, an interval needs 6 (more time: --max-time, or more \
                 --rows)",
                if blocks == 1 { "" } else { "s" }
            ),
        );
    };
    let (Some(clo), Some(chi)) = (control.low, control.high) else {
        return (
            Resolution::NotResolved,
            "not resolved here: no A/A control block completed, so the machine's own variation is unknown (more \
             time: --max-time)"
                .to_string(),
        );
    };
    let aa = if control.extent == "range" {
        format!("A/A {clo:.2}x to {chi:.2}x, the range of {} blocks", control.blocks)
    } else {
        format!("A/A {clo:.2}x to {chi:.2}x")
    };
    if lo > chi.max(1.0) {
        (
            Resolution::Resolved,
            format!("resolved: {lo:.2}x to {hi:.2}x lies above the machine's own variation ({aa})"),
        )
    } else if hi < clo.min(1.0) {
        (
            Resolution::MeasurementProblem,
            format!(
                "measurement problem: TIMING ON measured faster than TIMING OFF ({lo:.2}x to {hi:.2}x, below the \
                 {aa}); timing every row cannot make EXPLAIN faster, so something else changed between the runs \
                 (a CPU's speed, a cache, other work on the machine); no overhead is stated"
            ),
        )
    } else {
        (
            Resolution::NotResolved,
            format!(
                "not resolved here: the machine's own variation ({aa}) is as large as the effect ({lo:.2}x to \
                 {hi:.2}x)"
            ),
        )
    }
}

/// The A/A control of one source's runs.
fn control_of(runs: &SourceRuns) -> AaControl {
    let ratios = runs.control.block_ratios();
    let interval = crate::stats::median_interval(&ratios, crate::stats::CONFIDENCE);
    let spread = Spread::of(&ratios);
    let (low, high, extent) = match (interval, spread) {
        (Some(i), _) => (Some(i.low), Some(i.high), "interval"),
        (None, Some(s)) => (Some(s.min), Some(s.max), "range"),
        (None, None) => (None, None, "range"),
    };
    AaControl {
        pairs: runs.control.a_ms.len(),
        blocks: ratios.len(),
        median: spread.map(|s| s.median),
        low,
        high,
        extent,
        runs_a_ms: runs.control.a_ms.clone(),
        runs_b_ms: runs.control.b_ms.clone(),
    }
}

/// The place in the run order (model slices counted from 0, one before
/// each pair, control pairs included) of measured pair `k`.
fn slot_of_pair(k: usize) -> usize {
    let schedule = crate::measure::SCHEDULE;
    let effects: Vec<usize> = (0..schedule.len())
        .filter(|&i| matches!(schedule[i], crate::measure::Slot::Effect { .. }))
        .collect();
    k / effects.len() * schedule.len() + effects[k % effects.len()]
}

/// observed / predicted block by block: block j of `runs` (pairs 2j and
/// 2j+1) against the mean of the two model slices that ran just before its
/// pairs (explain runs one slice before the first run of every pair, the
/// A/A control's included, in order; a stop can leave slices without pairs,
/// which are not used); `None` without such blocks. A block whose slices
/// measured no positive cost has no ratio and is left out (`pairs` counts
/// the blocks kept).
pub(crate) fn paired_in_time(runs: &SourceRuns, slice_medians_ns_per_row: &[f64]) -> Option<PairedInTime> {
    let reads = runs.clock_reads_per_run as f64;
    if reads <= 0.0 {
        return None;
    }
    let n = runs.timing_off_ms.len().min(runs.timing_on_ms.len());
    let mut ratios: Vec<f64> = (0..n / 2)
        .filter_map(|j| {
            let (a, b) = (2 * j, 2 * j + 1);
            let slices = [slot_of_pair(a), slot_of_pair(b)].map(|i| slice_medians_ns_per_row.get(i).copied());
            let [Some(sa), Some(sb)] = slices else {
                return None;
            };
            let predicted_per_read = (sa + sb) / 2.0 / READS_PER_ROW_PER_NODE;
            let added = runs.timing_on_ms[a] + runs.timing_on_ms[b] - runs.timing_off_ms[a] - runs.timing_off_ms[b];
            let observed_per_read = added / 2.0 * 1e6 / reads;
            (predicted_per_read > 0.0 && predicted_per_read.is_finite()).then(|| observed_per_read / predicted_per_read)
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let median = clockscope_system::stats::median(&ratios)?;
    let interval = clockscope_system::stats::median_interval(&ratios, clockscope_system::stats::CONFIDENCE);
    Some(PairedInTime {
        pairs: ratios.len(),
        observed_over_predicted: median,
        low: interval.map(|i| i.low),
        high: interval.map(|i| i.high),
    })
}

/// The noise control's figures for one source's blocks.
fn noise_of(runs: &SourceRuns) -> Option<Noise> {
    let n = runs.timing_off_ms.len();
    let blocks = crate::stats::block_ratios(&runs.timing_off_ms, &runs.timing_on_ms, &crate::measure::alternating(n));
    // A stop after one pair leaves no block: that pair's ratio, unresolved.
    let ratios = if blocks.is_empty() {
        crate::stats::paired_ratios(&runs.timing_off_ms, &runs.timing_on_ms)
    } else {
        blocks.clone()
    };
    let spread = Spread::of(&ratios)?;
    let p = crate::stats::precision(&ratios)?;
    Some(Noise {
        pairs: runs.timing_on_ms.len(),
        blocks: blocks.len(),
        slowdown_median: p.median,
        slowdown_min: spread.min,
        slowdown_max: spread.max,
        slowdown_ci_low: p.interval.map(|i| i.low),
        slowdown_ci_high: p.interval.map(|i| i.high),
        slowdown_ci_coverage: p.interval.map(|i| i.coverage),
        slowdown_ci_half_width: p.interval.map(|i| i.half_width(p.median)),
        target_half_width: crate::stats::TARGET_HALF_WIDTH,
        target_reached: p.reached,
        stopped_by: runs.stopped_by,
        timing_off_variation: crate::stats::relative_range(&runs.timing_off_ms),
    })
}

/// Above this (max - min) / median of TIMING OFF, the report warns.
pub(crate) const TIMING_OFF_VARIATION_WARN: f64 = 0.10;

/// The noise warnings for one source: TIMING OFF spread, precision missed.
fn noise_warnings(r: &SourceResult, warnings: &mut Vec<String>) {
    let n = &r.noise;
    if let Some(v) = n.timing_off_variation.filter(|v| *v > TIMING_OFF_VARIATION_WARN) {
        warnings.push(format!(
            "{}: TIMING OFF varied by {:.0}% between runs ((max - min) / median of {} runs: {:.3} to {:.3} ms); \
             something else competes with the server, so single runs mislead and only the medians count",
            r.clock_source,
            v * 100.0,
            n.pairs,
            r.timing_off_ms_min,
            r.timing_off_ms_max
        ));
    }
    if !n.target_reached && n.stopped_by != crate::measure::StopReason::Interrupted {
        let precision = match n.slowdown_ci_half_width {
            Some(h) => format!("is +-{:.1}%", h * 100.0),
            None => "needs at least 6 blocks (12 pairs)".to_string(),
        };
        let why = match n.stopped_by {
            crate::measure::StopReason::MaxTime => "--max-time ended the runs (raise it for more pairs)",
            _ => "the most pairs ran",
        };
        warnings.push(format!(
            "{}: the 95% interval of the median block slowdown {precision}, not within +-{:.0}%, after {} pairs: \
             {why}",
            r.clock_source,
            n.target_half_width * 100.0,
            n.pairs
        ));
    }
}

/// `--query`'s breakdown from the first measured source.
fn query_breakdown(inp: &Inputs, results: &[SourceResult]) -> Option<QueryBreakdown> {
    if inp.workload != crate::options::Workload::Query {
        return None;
    }
    let (runs, r) = inp.sources.iter().zip(results).next()?;
    let added_ms = r.timing_on_ms - r.timing_off_ms;
    let nodes = crate::nodes::breakdown(runs.timing_on_plan.as_deref()?, added_ms).ok()?;
    Some(QueryBreakdown {
        clock_source: r.clock_source.clone(),
        added_ms,
        nodes,
        auto_explain_log_timing_added_ms: added_ms,
        auto_explain_log_timing_slowdown: r.slowdown,
    })
}

fn tsc_prediction(results: &[SourceResult], machine: &MachineClocks, server_version_num: u32) -> Option<TscPrediction> {
    if results.iter().any(|r| uses_tsc(&r.clock_source)) {
        return None;
    }
    let rdtsc_cost = machine.rdtsc.as_ref()?;
    let rdtsc = rdtsc_cost.added_per_read_ns()?;
    let base = results.iter().find(|r| !uses_tsc(&r.clock_source))?;
    // Scaled only by a ratio that is stated.
    let ratio = base
        .observed_over_predicted
        .filter(|r| r.is_finite() && base.result == Resolution::Resolved);
    let rows = base.clock_reads_per_run as f64 / base.clock_reads_per_row;
    let at = |per_read: f64| predict(base.timing_off_ms, rows, base.clock_reads_per_row, per_read);
    let scaled = ratio.map(|r| rdtsc * r);
    let used_by = if server_version_num < crate::measure::PG19_VERSION_NUM {
        format!(
            "PostgreSQL {} reads the system clock for EXPLAIN; PostgreSQL 19 and later read the TSC \
             (timing_clock_source = tsc, or auto where it trusts it): what upgrading would give",
            server_version_num / 10_000
        )
    } else {
        "this server reads the TSC when timing_clock_source = tsc (or auto where it trusts the TSC)".to_string()
    };
    Some(TscPrediction {
        rdtsc_per_read_ns: rdtsc,
        rdtsc_back_to_back_per_read_ns: rdtsc_cost.per_read_ns,
        predicted_overhead_per_row_ns: at(rdtsc).overhead_per_row_ns,
        predicted_slowdown: at(rdtsc).slowdown,
        scaled_per_read_ns: scaled,
        scaled_overhead_per_row_ns: scaled.map(|v| at(v).overhead_per_row_ns),
        scaled_slowdown: scaled.map(|v| at(v).slowdown),
        from_clock_source: base.clock_source.clone(),
        used_by,
    })
}

/// The settings as the report shows them: a value set for the session that
/// equals the server's is no change and is shown as the server's alone
/// (`jit off -> off` says nothing); `timing_clock_source` shows what each
/// measurement set it to ("'system', then 'tsc'").
pub(crate) fn shown_settings(
    settings: &[crate::session::Setting],
    sources: &[SourceRuns],
) -> Vec<crate::session::Setting> {
    let set_by_us: Vec<String> = sources
        .iter()
        .filter(|s| s.how.starts_with("SET timing_clock_source"))
        .map(|s| format!("'{}'", s.clock_source))
        .collect();
    settings
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if s.session_value.as_deref() == Some(s.server_value.as_str()) {
                s.session_value = None;
                s.why = None;
            }
            if s.name == "timing_clock_source" && !set_by_us.is_empty() {
                s.session_value = Some(set_by_us.join(", then "));
                s.why = Some("one measurement each (the clock sources below), RESET after".into());
            }
            s
        })
        .collect()
}

/// Why there is no TSC prediction where one was wanted (no measured source
/// reads the TSC and this machine's RDTSC model did not resolve), said for
/// the server's version.
fn tsc_missing(inp: &Inputs, clock_sources: &[SourceResult], tsc: Option<&TscPrediction>) -> Option<String> {
    if tsc.is_some() || clock_sources.iter().any(|r| uses_tsc(&r.clock_source)) {
        return None;
    }
    let c = inp.machine.rdtsc.as_ref().filter(|c| c.added_per_read_ns().is_none())?;
    let who = if inp.server_version_num < crate::measure::PG19_VERSION_NUM {
        format!(
            "no prediction for the TSC, which PostgreSQL 19 and later read ({}; PostgreSQL {} reads the system \
             clock)",
            c.clock,
            inp.server_version_num / 10_000
        )
    } else {
        format!("with timing_clock_source = tsc ({}): no prediction", c.clock)
    };
    Some(format!("{who}: {}", c.prediction_status()))
}

/// Computes the report from what was measured.
pub fn build(inp: &Inputs) -> Report {
    let clock_sources: Vec<SourceResult> = inp
        .sources
        .iter()
        .filter_map(|s| source_result(s, inp.rows, inp.machine))
        .collect();
    let mut warnings = Vec::new();
    if !inp.locality.is_local() {
        warnings.push(format!(
            "the server ({}) is not on this machine: the prediction uses this machine's clocks, not the server's; \
             the server's own cost per clock read is inferred from EXPLAIN: (TIMING ON - TIMING OFF) / clock reads",
            inp.server
        ));
    }
    for r in &clock_sources {
        if r.result == Resolution::MeasurementProblem {
            warnings.push(format!("{}: {}", r.clock_source, r.result_reason));
        }
        if r.predicted_per_read_ns.is_none() {
            warnings.push(format!("{}: no prediction: {}", r.clock_source, r.prediction_status));
        }
        noise_warnings(r, &mut warnings);
    }
    if inp.interrupted {
        let runs = inp.runs;
        let done: Vec<String> = clock_sources
            .iter()
            .map(|r| format!("{} of {runs} runs on {}", r.runs_timing_on_ms.len(), r.clock_source))
            .collect();
        warnings.push(format!("interrupted: {}", done.join(", ")));
    }
    if let Some(c) = inp
        .cpu_contention
        .as_ref()
        .filter(|c| c.other_busy_fraction >= c.warn_fraction)
    {
        warnings.push(format!(
            "other processes kept {:.0}% of this machine's {} CPUs busy during the runs (/proc/stat, clockscope's and \
             the server's statements' time left out), and the server runs here: its runs compete with them, \
             expect noise",
            c.other_busy_fraction * 100.0,
            c.cpus
        ));
    }
    let tsc = tsc_prediction(&clock_sources, inp.machine, inp.server_version_num);
    warnings.extend(tsc_missing(inp, &clock_sources, tsc.as_ref()));
    let timing_settings = crate::timing_settings::judge(
        inp.timing_settings,
        &clock_sources,
        Some(inp.machine),
        inp.page_read.clone(),
    );
    let query_breakdown = query_breakdown(inp, &clock_sources);
    Report {
        server_version: inp.server_version.to_string(),
        server_version_num: inp.server_version_num,
        server_version_full: inp.server_version_full.to_string(),
        server: inp.server.to_string(),
        server_locality: inp.locality.clone(),
        settings: shown_settings(inp.settings, inp.sources),
        timing_settings,
        query: inp.query.to_string(),
        rows: inp.rows,
        temp_table_estimated_bytes: inp.temp_table_estimated_bytes,
        workload: inp.workload,
        workload_reason: inp.workload_reason.map(str::to_string),
        runs: inp.runs,
        warmup_runs: inp.warmup_runs,
        order: crate::measure::ORDER_TEXT.to_string(),
        clock_reads_formula: CLOCK_READS_FORMULA.to_string(),
        this_machine: inp.machine.clone(),
        clock_measure_ns: inp.clock_measure_ns,
        clock_sources,
        skipped_clock_sources: inp.skipped.to_vec(),
        tsc_prediction: tsc,
        warnings,
        interrupted: inp.interrupted,
        max_time_s: inp.max_time.as_secs_f64(),
        noise_method: crate::stats::INTERVAL_METHOD.to_string(),
        cpu_contention: inp.cpu_contention.clone(),
        query_breakdown,
    }
}

#[cfg(test)]
mod tests;
