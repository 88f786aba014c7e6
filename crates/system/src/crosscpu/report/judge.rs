//! The judging: the verdict on one clock for one CPU pair from its warp test
//! and its ping-pong offset estimate, and the verdict in words, naming the
//! CPU that is off.

use super::Verdict;
use crate::crosscpu::pingpong::{OffsetFinding, OffsetResult};
use crate::crosscpu::warp::WarpResult;
use clockscope::Scale;

/// `ticks` (signed) in ns at `scale`, saturating.
pub(crate) fn signed_ticks_to_ns(scale: Scale, ticks: i64) -> i64 {
    let ns = scale.ticks_to_ns(ticks.unsigned_abs()).min(i64::MAX as u64) as i64;
    if ticks < 0 {
        -ns
    } else {
        ns
    }
}

/// An unsigned amount of ticks in words: ns when the scale is known.
fn amount(ticks: u64, scale: Option<Scale>) -> String {
    match scale {
        Some(s) => format!("{} ns", s.ticks_to_ns(ticks)),
        None => format!("{ticks} ticks"),
    }
}

/// A signed amount of ticks in words, with its sign: ns when the scale is known.
fn signed(ticks: i64, scale: Option<Scale>) -> String {
    match scale {
        Some(s) => format!("{:+} ns", signed_ticks_to_ns(s, ticks)),
        None => format!("{ticks:+} ticks"),
    }
}

/// The offset in words when it is proven nonzero, naming the CPU ahead.
fn offset_words(cpu_a: usize, cpu_b: usize, o: &OffsetResult, scale: Option<Scale>) -> Option<String> {
    let (lo, hi) = (o.lower_ticks?, o.upper_ticks?);
    let (ahead, behind, least, most) = match o.finding() {
        OffsetFinding::BAhead => (cpu_b, cpu_a, lo, hi),
        OffsetFinding::AAhead => (cpu_a, cpu_b, -hi, -lo),
        _ => return None,
    };
    let least = amount(least.unsigned_abs(), scale);
    let most = amount(most.unsigned_abs(), scale);
    Some(format!(
        "CPU {ahead} is {least} ahead of CPU {behind} (at least; at most {most})"
    ))
}

/// The verdict on one clock for one CPU pair, and its words.
pub(crate) fn judge(
    cpu_a: usize,
    cpu_b: usize,
    warp: &WarpResult,
    offset: &OffsetResult,
    scale: Option<Scale>,
    min_handovers: u64,
) -> (Verdict, String) {
    let offset_text = offset_words(cpu_a, cpu_b, offset, scale);
    if warp.warps > 0 {
        return (Verdict::Warp, warp_words(cpu_a, cpu_b, warp, offset_text, scale));
    }
    match offset.finding() {
        OffsetFinding::Crossed => {
            let (lo, hi) = (offset.lower_ticks.unwrap_or(0), offset.upper_ticks.unwrap_or(0));
            return (
                Verdict::Inconsistent,
                format!(
                    "offset bounds crossed (lower {} > upper {}): the offset of CPU {cpu_b} to CPU {cpu_a} changed \
                     during the run",
                    signed(lo, scale),
                    signed(hi, scale)
                ),
            );
        }
        OffsetFinding::BAhead | OffsetFinding::AAhead => {
            return (Verdict::Offset, offset_text.unwrap_or_default());
        }
        OffsetFinding::Unmeasured | OffsetFinding::InSync => {}
    }
    if !warp.has_handovers(min_handovers.max(1)) || offset.rounds == 0 {
        return (Verdict::Inconclusive, inconclusive_words(warp, offset, min_handovers));
    }
    let (lo, hi) = (offset.lower_ticks.unwrap_or(0), offset.upper_ticks.unwrap_or(0));
    (
        Verdict::InSync,
        format!(
            "in sync: no warp in {} readings; offset of CPU {cpu_b} to CPU {cpu_a} within [{}, {}]",
            warp.iterations,
            signed(lo, scale),
            signed(hi, scale)
        ),
    )
}

/// The warps in words: how many, the largest, which CPU read behind, and
/// the proven offset when there is one.
fn warp_words(
    cpu_a: usize,
    cpu_b: usize,
    warp: &WarpResult,
    offset_text: Option<String>,
    scale: Option<Scale>,
) -> String {
    let who = match (warp.warps_b_behind_a > 0, warp.warps_a_behind_b > 0) {
        (true, false) => format!("CPU {cpu_b} read behind CPU {cpu_a}"),
        (false, true) => format!("CPU {cpu_a} read behind CPU {cpu_b}"),
        (true, true) => format!("CPUs {cpu_a} and {cpu_b} each read behind the other"),
        (false, false) => "time went backwards on one CPU".to_string(),
    };
    let mut text = format!(
        "{} warp{} (largest {}): {who}",
        warp.warps,
        if warp.warps == 1 { "" } else { "s" },
        amount(warp.max_warp_ticks, scale)
    );
    if let Some(o) = offset_text {
        text.push_str("; ");
        text.push_str(&o);
    }
    text
}

/// Why too few comparisons were made, in words, with their counts.
fn inconclusive_words(warp: &WarpResult, offset: &OffsetResult, min_handovers: u64) -> String {
    // A stop request cut the tests short: say so, not that the CPUs gave too few.
    let why = if warp.stopped || offset.stopped {
        "interrupted before enough cross-CPU comparisons"
    } else {
        "too few cross-CPU comparisons"
    };
    format!(
        "{why}: {} + {} handovers (at least {} each way wanted), {} round trips",
        warp.handovers_a_to_b,
        warp.handovers_b_to_a,
        min_handovers.max(1),
        offset.rounds
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warp(warps: u64, b_behind_a: u64, max: u64) -> WarpResult {
        WarpResult {
            iterations: 1000,
            handovers_a_to_b: 100,
            handovers_b_to_a: 100,
            warps,
            warps_b_behind_a: b_behind_a,
            max_warp_ticks: max,
            ..Default::default()
        }
    }

    fn offset(lo: i64, hi: i64) -> OffsetResult {
        OffsetResult {
            rounds: 10,
            lower_ticks: Some(lo),
            upper_ticks: Some(hi),
            min_round_trip_ticks: Some((hi - lo) as u64),
            ..Default::default()
        }
    }

    const NS: Option<Scale> = Some(Scale::NANOSECONDS);

    #[test]
    fn verdicts_name_the_cpu_that_is_off() {
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &offset(1234, 1300), NS, 10);
        assert_eq!(v, Verdict::Offset);
        assert_eq!(t, "CPU 1 is 1234 ns ahead of CPU 0 (at least; at most 1300 ns)");
        let (v, t) = judge(2, 5, &warp(0, 0, 0), &offset(-900, -50), NS, 10);
        assert_eq!(v, Verdict::Offset);
        assert_eq!(t, "CPU 2 is 50 ns ahead of CPU 5 (at least; at most 900 ns)");
        let (v, t) = judge(0, 1, &warp(3, 3, 77), &offset(-100, -60), None, 10);
        assert_eq!(v, Verdict::Warp);
        assert_eq!(
            t,
            "3 warps (largest 77 ticks): CPU 1 read behind CPU 0; CPU 0 is 60 ticks ahead of CPU 1 (at least; at \
             most 100 ticks)"
        );
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &offset(-40, 35), NS, 10);
        assert_eq!(v, Verdict::InSync);
        assert_eq!(
            t,
            "in sync: no warp in 1000 readings; offset of CPU 1 to CPU 0 within [-40 ns, +35 ns]"
        );
        let (v, _) = judge(0, 1, &warp(0, 0, 0), &offset(10, 5), NS, 10);
        assert_eq!(v, Verdict::Inconsistent);
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &offset(-40, 35), NS, 1000);
        assert_eq!(v, Verdict::Inconclusive, "{t}");
        let (v, t) = judge(0, 1, &warp(0, 0, 0), &OffsetResult::default(), NS, 10);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(
            t.starts_with("too few cross-CPU comparisons: 100 + 100 handovers"),
            "{t}"
        );
        let stopped = WarpResult {
            stopped: true,
            ..warp(0, 0, 0)
        };
        let (v, t) = judge(0, 1, &stopped, &OffsetResult::default(), NS, 10);
        assert_eq!(v, Verdict::Inconclusive);
        assert!(
            t.starts_with("interrupted before enough cross-CPU comparisons: 100 + 100 handovers"),
            "{t}"
        );
        assert!(!Verdict::Inconclusive.is_problem() && !Verdict::InSync.is_problem());
        assert!(Verdict::Warp.is_problem() && Verdict::Offset.is_problem() && Verdict::Inconsistent.is_problem());
    }
}
