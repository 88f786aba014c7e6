//! The counter's rate over a long window against CLOCK_REALTIME (which NTP
//! disciplines to true time when it is synchronised) and CLOCK_MONOTONIC_RAW
//! (the kernel's undisciplined clock), in ppm of the frequency in use, with an
//! uncertainty (`clockscope tsc --drift SECONDS`).
//!
//! # Method
//! At the start, every [`DriftPlan::interval_ns`] and at the end, one
//! *sample*: the best of `TRIES_PER_SAMPLE` bracketed reads
//! `REALTIME, MONOTONIC, MONOTONIC_RAW, counter, MONOTONIC_RAW, MONOTONIC, REALTIME`
//! (the one with the narrowest REALTIME bracket). The counter read's time on
//! each reference clock is the bracket's midpoint, within half its width.
//!
//! The rate against each reference is the least-squares slope of counter
//! ticks on reference nanoseconds over all samples. Its uncertainty, in ppm,
//! is the bracketing bound at both ends (the half-widths of the first and
//! last brackets over the window) plus twice the regression's standard error
//! (about 95 %) when there are at least three samples.
//!
//! A step of CLOCK_REALTIME (settimeofday, clock_settime, an NTP step) moves
//! REALTIME against MONOTONIC, which NTP only slews together with REALTIME:
//! when `REALTIME - MONOTONIC` changes between two samples by more than
//! `STEP_TOLERANCE_NS` plus both brackets, the step is reported and no ppm
//! against REALTIME is given (it would be bogus); MONOTONIC_RAW's stands.
//!
//! Bounded: the window is the caller's (at most [`MAX_DRIFT_S`]), waits are
//! sliced so cancellation (Ctrl-C) is seen within [`SLEEP_SLICE_NS`]; a
//! cancelled run ends with one last sample and a result labelled partial.

use crate::forward::ForwardNs;
use clockscope::ClockSource;
use clockscope::PosixClock;
use serde::Serialize;

/// Longest window `--drift` accepts, in seconds (one day).
pub const MAX_DRIFT_S: u64 = 86_400;
/// Bracketed reads per sample; the narrowest bracket is kept.
pub(crate) const TRIES_PER_SAMPLE: usize = 16;
/// Change of `REALTIME - MONOTONIC` between samples beyond which (plus both
/// brackets) REALTIME was stepped: 50 µs. NTP slews REALTIME and MONOTONIC
/// together, so without a step the difference does not move at all.
pub(crate) const STEP_TOLERANCE_NS: f64 = 50_000.0;
/// Longest single sleep, so cancellation is noticed quickly.
pub const SLEEP_SLICE_NS: u64 = 100_000_000;

/// One bracketed read of the three reference clocks around the counter:
/// each clock's reads before and after, in ns, kept as integers (REALTIME
/// is about 1.7e18 ns, beyond f64's exact range; differences are taken first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Counter ticks.
    pub counter: u64,
    /// REALTIME before and after the counter read.
    pub realtime: (u64, u64),
    /// MONOTONIC before and after.
    pub monotonic: (u64, u64),
    /// MONOTONIC_RAW before and after.
    pub raw: (u64, u64),
}

/// `(a + b) / 2 - base` as f64, exact for any u64 inputs.
fn mid_since(bracket: (u64, u64), base: u64) -> f64 {
    (((bracket.0 as i128 + bracket.1 as i128) - 2 * base as i128) as f64) / 2.0
}

/// Half a bracket's width, ns.
fn half_width(bracket: (u64, u64)) -> f64 {
    bracket.1.saturating_sub(bracket.0) as f64 / 2.0
}

impl Sample {
    /// Half the REALTIME bracket, ns.
    pub(crate) fn realtime_half_width_ns(&self) -> f64 {
        half_width(self.realtime)
    }
    /// `REALTIME - MONOTONIC` (midpoints) minus `earlier`'s, ns: how far
    /// REALTIME moved against MONOTONIC between the two samples.
    pub(crate) fn realtime_moved_since(&self, earlier: &Sample) -> f64 {
        let diff2 = |s: &Sample| {
            (s.realtime.0 as i128 + s.realtime.1 as i128) - (s.monotonic.0 as i128 + s.monotonic.1 as i128)
        };
        ((diff2(self) - diff2(earlier)) as f64) / 2.0
    }
}

/// The clocks a drift measurement reads, and how it waits: this machine's
/// ([`NativeDriftClocks`]) or scripted.
pub trait DriftClocks {
    /// One counter read, in ticks.
    fn counter(&mut self) -> u64;
    /// `CLOCK_REALTIME`, in ns.
    fn realtime_ns(&mut self) -> u64;
    /// `CLOCK_MONOTONIC`, in ns.
    fn monotonic_ns(&mut self) -> u64;
    /// `CLOCK_MONOTONIC_RAW`, in ns.
    fn monotonic_raw_ns(&mut self) -> u64;
    /// Waits `ns` (at most [`SLEEP_SLICE_NS`] at a time).
    fn sleep_ns(&mut self, ns: u64);
    /// Whether the run was cancelled (Ctrl-C).
    fn cancelled(&mut self) -> bool;
}

/// What to measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DriftPlan {
    /// The window, ns.
    pub window_ns: u64,
    /// Time between samples, ns.
    pub interval_ns: u64,
    /// The counter frequency in use, Hz (ppm are relative to it).
    pub nominal_hz: f64,
}

impl DriftPlan {
    /// A window of `seconds`, sampled about 20 times (at least every 10 s,
    /// at most every 50 ms).
    pub fn new(seconds: u64, nominal_hz: f64) -> DriftPlan {
        let window_ns = seconds.min(MAX_DRIFT_S) * 1_000_000_000;
        DriftPlan {
            window_ns,
            interval_ns: (window_ns / 20).clamp(50_000_000, 10_000_000_000),
            nominal_hz,
        }
    }
}

/// The counter's rate against one reference clock.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct RateEstimate {
    /// The counter's rate measured on this clock, Hz.
    pub hz: f64,
    /// `(hz / nominal - 1) * 1e6`.
    pub ppm: f64,
    /// Bracketing bound plus twice the regression's standard error, ppm.
    pub uncertainty_ppm: f64,
    /// The bracketing bound alone (both ends), ppm.
    pub bracket_ppm: f64,
    /// The regression's standard error of the slope, ppm (`null` under three samples).
    pub regression_se_ppm: Option<f64>,
}

/// A detected step of CLOCK_REALTIME.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct RealtimeStep {
    /// Seconds into the window (at the sample after the step).
    pub at_s: f64,
    /// How far `REALTIME - MONOTONIC` moved, ns.
    pub step_ns: f64,
}

/// The result of `clockscope tsc --drift`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct DriftReport {
    /// The window asked for, s.
    pub requested_s: f64,
    /// The window measured (first to last sample on MONOTONIC_RAW), s.
    pub measured_s: f64,
    /// Samples taken.
    pub samples: usize,
    /// `false` when cancelled before the window ended: a partial result.
    pub complete: bool,
    /// The frequency the ppm are relative to, Hz.
    pub nominal_hz: f64,
    /// Against CLOCK_REALTIME; `null` after a step or with too few samples.
    pub vs_realtime: Option<RateEstimate>,
    /// Against CLOCK_MONOTONIC_RAW; `null` with too few samples.
    pub vs_monotonic_raw: Option<RateEstimate>,
    /// REALTIME steps seen during the window.
    pub realtime_steps: Vec<RealtimeStep>,
    /// What the numbers mean, and why one is missing.
    pub notes: Vec<String>,
}

/// One bracketed read.
fn bracketed<C: DriftClocks + ?Sized>(c: &mut C) -> Sample {
    let rt_a = c.realtime_ns();
    let mono_a = c.monotonic_ns();
    let raw_a = c.monotonic_raw_ns();
    let counter = c.counter();
    let raw_b = c.monotonic_raw_ns();
    let mono_b = c.monotonic_ns();
    let rt_b = c.realtime_ns();
    Sample {
        counter,
        realtime: (rt_a, rt_b),
        monotonic: (mono_a, mono_b),
        raw: (raw_a, raw_b),
    }
}

/// The best (narrowest REALTIME bracket) of [`TRIES_PER_SAMPLE`] reads.
pub(crate) fn take_sample<C: DriftClocks + ?Sized>(c: &mut C) -> Sample {
    (0..TRIES_PER_SAMPLE)
        .map(|_| bracketed(c))
        .min_by(|a, b| a.realtime_half_width_ns().total_cmp(&b.realtime_half_width_ns()))
        .expect("at least one try")
}

/// Least-squares slope of `y` on `x` and its standard error (`None` under 3 points).
fn regression(points: &[(f64, f64)]) -> Option<(f64, Option<f64>)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    let se = (points.len() >= 3).then(|| {
        let intercept = my - slope * mx;
        let ssr: f64 = points.iter().map(|p| (p.1 - intercept - slope * p.0).powi(2)).sum();
        (ssr / (n - 2.0) / sxx).sqrt()
    });
    Some((slope, se))
}

/// The rate against one reference clock, whose bracket `reference` picks from a sample.
fn rate(samples: &[Sample], reference: fn(&Sample) -> (u64, u64), nominal_hz: f64) -> Option<RateEstimate> {
    let (first, last) = (samples.first()?, samples.last()?);
    let base_x = reference(first).0;
    // Relative values keep the regression well conditioned and exact.
    let points: Vec<(f64, f64)> = samples
        .iter()
        .map(|s| {
            (
                mid_since(reference(s), base_x),
                s.counter.wrapping_sub(first.counter) as f64,
            )
        })
        .collect();
    let (slope, se) = regression(&points)?;
    let hz = slope * 1e9;
    if !(hz.is_finite() && hz > 0.0 && nominal_hz > 0.0) {
        return None;
    }
    let span = mid_since(reference(last), base_x) - mid_since(reference(first), base_x);
    let bracket_ppm = (half_width(reference(first)) + half_width(reference(last))) / span * 1e6;
    let regression_se_ppm = se.map(|se| se / slope * 1e6);
    Some(RateEstimate {
        hz,
        ppm: (hz / nominal_hz - 1.0) * 1e6,
        uncertainty_ppm: bracket_ppm + 2.0 * regression_se_ppm.unwrap_or(0.0),
        bracket_ppm,
        regression_se_ppm,
    })
}

/// Seconds from `first` to `s` on MONOTONIC_RAW.
fn raw_seconds(first: &Sample, s: &Sample) -> f64 {
    mid_since(s.raw, first.raw.0) / 1e9 - mid_since(first.raw, first.raw.0) / 1e9
}

/// REALTIME steps between consecutive samples.
pub fn realtime_steps(samples: &[Sample]) -> Vec<RealtimeStep> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    samples
        .windows(2)
        .filter_map(|w| {
            let moved = w[1].realtime_moved_since(&w[0]);
            // Both midpoints of each sample are uncertain by their half widths.
            let slack = STEP_TOLERANCE_NS + 2.0 * (w[0].realtime_half_width_ns() + w[1].realtime_half_width_ns());
            (moved.abs() > slack).then(|| RealtimeStep {
                at_s: raw_seconds(first, &w[1]),
                step_ns: moved,
            })
        })
        .collect()
}

/// Analyses samples taken over a window (pure; tests feed it directly).
pub(crate) fn analyse(samples: &[Sample], plan: &DriftPlan, complete: bool) -> DriftReport {
    let measured_s = match (samples.first(), samples.last()) {
        (Some(a), Some(b)) => raw_seconds(a, b),
        _ => 0.0,
    };
    let steps = realtime_steps(samples);
    let mut notes = Vec::new();
    if !complete {
        notes.push(format!(
            "partial result: interrupted after {measured_s:.1} s of {:.0} s",
            plan.window_ns as f64 / 1e9
        ));
    }
    let enough = samples.len() >= 2 && measured_s > 0.0;
    if !enough {
        notes.push("too few samples for a rate".to_string());
    }
    let vs_monotonic_raw = enough.then(|| rate(samples, |s| s.raw, plan.nominal_hz)).flatten();
    let vs_realtime = if !enough {
        None
    } else if !steps.is_empty() {
        notes.push(format!(
            "CLOCK_REALTIME was stepped {} time(s) during the window (first {:+.3} ms at {:.1} s: settimeofday, \
             clock_settime or an NTP step): no rate against REALTIME",
            steps.len(),
            steps[0].step_ns / 1e6,
            steps[0].at_s
        ));
        None
    } else {
        rate(samples, |s| s.realtime, plan.nominal_hz)
    };
    if vs_realtime.is_some() {
        notes.push(
            "against REALTIME: the counter's rate as NTP-disciplined time sees it (true time only when NTP is \
             synchronised)"
                .to_string(),
        );
    }
    if vs_monotonic_raw.is_some() {
        notes.push(
            "against MONOTONIC_RAW: the kernel's undisciplined clock; with clocksource tsc it is the TSC itself \
             scaled by the kernel, so this checks the kernel's arithmetic"
                .to_string(),
        );
    }
    DriftReport {
        requested_s: plan.window_ns as f64 / 1e9,
        measured_s,
        samples: samples.len(),
        complete,
        nominal_hz: plan.nominal_hz,
        vs_realtime,
        vs_monotonic_raw,
        realtime_steps: steps,
        notes,
    }
}

/// Samples the window as `plan` says, then analyses it. Cancellation ends
/// the window early with one last sample (a partial result).
///
/// The window is forward time ([`ForwardNs`]: MONOTONIC_RAW's forward steps
/// only) and never less than the time slept, so a reference clock moved
/// back (a day, by `faketime`) cannot stretch it: it ends after the window's
/// length in any case, and then gives no rate (its reference went back).
pub fn measure_drift<C: DriftClocks + ?Sized>(clocks: &mut C, plan: &DriftPlan) -> DriftReport {
    let mut samples = vec![take_sample(clocks)];
    let mut forward = ForwardNs::new(samples[0].raw.0);
    // Every sleep lasts at least what it asked for: a floor on real time
    // that no clock can move.
    let mut slept: u64 = 0;
    let mut complete = true;
    loop {
        forward.look(samples.last().expect("one sample").raw.1);
        let elapsed = forward.elapsed().max(slept);
        if elapsed >= plan.window_ns {
            break;
        }
        let next = (elapsed + plan.interval_ns).min(plan.window_ns);
        // Sleep in slices until the next sample is due, watching for Ctrl-C.
        let mut now = forward.look(clocks.monotonic_raw_ns()).max(slept);
        while now < next && !clocks.cancelled() {
            let slice = (next - now).min(SLEEP_SLICE_NS);
            clocks.sleep_ns(slice);
            slept = slept.saturating_add(slice);
            now = forward.look(clocks.monotonic_raw_ns()).max(slept);
        }
        samples.push(take_sample(clocks));
        if clocks.cancelled() {
            let last = forward.look(samples.last().expect("sample").raw.1).max(slept);
            complete = last >= plan.window_ns;
            break;
        }
    }
    let backward = forward.backward_steps() + samples.windows(2).filter(|w| w[1].raw.0 < w[0].raw.1).count() as u64;
    let mut report = analyse(&samples, plan, complete);
    if backward > 0 {
        report.measured_s = forward.elapsed().max(slept) as f64 / 1e9;
        report.vs_realtime = None;
        report.vs_monotonic_raw = None;
        // Its rates and their shortness were the stepped clock's, not the window's.
        report
            .notes
            .retain(|n| !n.starts_with("against ") && !n.starts_with("too few samples"));
        report.notes.push(format!(
            "CLOCK_MONOTONIC_RAW went back during the window ({backward} time(s)): time is interposed on its way \
             (LD_PRELOAD, faketime) or the kernel's clock is broken; no rate, and the window was counted in forward \
             time"
        ));
    }
    report
}

/// This machine's clocks with `counter` (the ordered counter read), and a
/// cancellation check (the CLI's Ctrl-C flag).
pub struct NativeDriftClocks<C, F> {
    /// The ordered counter read.
    pub counter: C,
    /// True once the measurement should stop (Ctrl-C).
    pub cancelled: F,
}

impl<C: ClockSource, F: FnMut() -> bool> DriftClocks for NativeDriftClocks<C, F> {
    fn counter(&mut self) -> u64 {
        self.counter.now_ordered().raw()
    }
    fn realtime_ns(&mut self) -> u64 {
        PosixClock::new(libc::CLOCK_REALTIME, "clock_gettime (CLOCK_REALTIME)")
            .now()
            .raw()
    }
    fn monotonic_ns(&mut self) -> u64 {
        PosixClock::monotonic().now().raw()
    }
    fn monotonic_raw_ns(&mut self) -> u64 {
        PosixClock::monotonic_raw().now().raw()
    }
    fn sleep_ns(&mut self, ns: u64) {
        std::thread::sleep(std::time::Duration::from_nanos(ns.min(SLEEP_SLICE_NS)));
    }
    fn cancelled(&mut self) -> bool {
        (self.cancelled)()
    }
}

/// Measures this CPU's counter (the ordered read) for `plan`, `cancelled`
/// polled between samples; `Err` without a counter.
pub fn measure_native_drift(plan: &DriftPlan, cancelled: impl FnMut() -> bool) -> Result<DriftReport, String> {
    struct Run<'a, F>(&'a DriftPlan, F);
    impl<F: FnMut() -> bool> super::CounterVisitor for Run<'_, F> {
        type Output = DriftReport;
        fn visit<C: ClockSource + Copy + Send + Sync + 'static>(self, counter: C) -> DriftReport {
            let mut clocks = NativeDriftClocks {
                counter,
                cancelled: self.1,
            };
            measure_drift(&mut clocks, self.0)
        }
    }
    clockscope::visit_ordered(clockscope::Scale::NANOSECONDS, Run(plan, cancelled)).map_err(str::to_string)
}
