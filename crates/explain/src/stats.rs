//! Median and spread of run times, and the noise control's statistics: the
//! paired TIMING ON / TIMING OFF ratios, a distribution-free confidence
//! interval of their median, and the rule that says when it is precise enough.
//!
//! # The interval
//! The sign-test interval of the median from order statistics,
//! [`clockscope_system::stats::median_interval`] (documented there): needs n >= 6
//! ratios at 95%; the same runs give the same interval.

use serde::Serialize;

/// Median, minimum and maximum of some samples (ms).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub(crate) struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no samples; the median is [`clockscope_system::stats::median`]
    /// (the mean of the middle two for an even count).
    pub fn of(samples: &[f64]) -> Option<Spread> {
        let median = clockscope_system::stats::median(samples)?;
        // The ends of the same total order the median sorts by.
        let min = samples.iter().copied().min_by(f64::total_cmp)?;
        let max = samples.iter().copied().max_by(f64::total_cmp)?;
        Some(Spread { median, min, max })
    }
}

pub use clockscope_system::stats::{median_interval, Interval, CONFIDENCE};

/// The precision the noise control aims for: the interval within +-5% of
/// the median.
pub(crate) const TARGET_HALF_WIDTH: f64 = 0.05;
/// What [`median_interval`] computes, for the report's readers.
pub(crate) const INTERVAL_METHOD: &str = "distribution-free interval of the median: order statistics [r(k), r(n+1-k)] \
     of the sorted paired ON/OFF ratios, k the largest with 1 - 2 P(Binomial(n, 1/2) <= k-1) >= 0.95";

/// TIMING ON / TIMING OFF of each pair, in run order. A pair whose TIMING OFF
/// time is not above zero (EXPLAIN prints 3 decimals of ms) gives no ratio.
pub(crate) fn paired_ratios(off_ms: &[f64], on_ms: &[f64]) -> Vec<f64> {
    off_ms
        .iter()
        .zip(on_ms)
        .filter(|(off, on)| **off > 0.0 && on.is_finite())
        .map(|(off, on)| on / off)
        .collect()
}

/// The ratio of one balanced block: two pairs in opposite order (TIMING OFF
/// then ON, then ON then OFF), `(ON_1 + ON_2) / (OFF_1 + OFF_2)`. A cost
/// that falls on whichever run comes second (a cache, a CPU's speed left by
/// the model slice before the pair) adds to one pair's ON and to the other's
/// OFF: it cancels from the block's ON - OFF (and stays, halved, in its
/// OFF sum), where pair by pair it would be all of one mode's. `on_first[k]` says pair k's order; blocks
/// are consecutive pairs of opposite order, a pair without its opposite
/// left out. The same for the A/A control, with its second role as "ON".
pub(crate) fn block_ratios(off_ms: &[f64], on_ms: &[f64], on_first: &[bool]) -> Vec<f64> {
    let n = off_ms.len().min(on_ms.len()).min(on_first.len());
    let mut out = Vec::new();
    let mut k = 0;
    while k + 1 < n {
        if on_first[k] == on_first[k + 1] {
            // Not a balanced block (cannot happen with the schedule): move on by one.
            k += 1;
            continue;
        }
        let (off, on) = (off_ms[k] + off_ms[k + 1], on_ms[k] + on_ms[k + 1]);
        if off > 0.0 && on.is_finite() {
            out.push(on / off);
        }
        k += 2;
    }
    out
}

/// The noise control's verdict on the ratios so far: their median, the 95%
/// interval (when there are enough), and whether it is within
/// `TARGET_HALF_WIDTH` of the median.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Precision {
    pub median: f64,
    pub interval: Option<Interval>,
    pub reached: bool,
}

/// Judges the paired ratios (see [`Precision`]); `None` without a ratio.
pub fn precision(ratios: &[f64]) -> Option<Precision> {
    let median = Spread::of(ratios)?.median;
    let interval = median_interval(ratios, CONFIDENCE);
    let reached = interval.is_some_and(|i| median > 0.0 && i.half_width(median) <= TARGET_HALF_WIDTH);
    Some(Precision {
        median,
        interval,
        reached,
    })
}

/// How much the samples vary: (max - min) / median; `None` without samples
/// or with a median of zero.
pub(crate) fn relative_range(samples: &[f64]) -> Option<f64> {
    let s = Spread::of(samples)?;
    (s.median > 0.0).then(|| (s.max - s.min) / s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_is_reached_when_the_interval_is_within_5_percent() {
        // Six ratios within +-4% of 2.0.
        let tight = [2.0, 1.94, 2.06, 1.98, 2.02, 2.0];
        let p = precision(&tight).unwrap();
        assert!(p.reached, "{p:?}");
        // One ratio 10% off: the six-sample interval reaches it.
        let wide = [2.0, 1.8, 2.06, 1.98, 2.02, 2.0];
        assert!(!precision(&wide).unwrap().reached);
        // Five are never enough, however tight.
        assert!(!precision(&tight[..5]).unwrap().reached);
        assert_eq!(precision(&[]), None);
        assert_eq!(paired_ratios(&[1.0, 0.0, 2.0], &[2.0, 5.0, 3.0]), vec![2.0, 1.5]);
        assert_eq!(relative_range(&[9.0, 10.0, 11.0]), Some(0.2));
    }

    #[test]
    fn a_cost_on_the_second_run_cancels_in_a_block() {
        // The true slowdown 1.5 on 10 ms; the second run of every pair
        // costs 1 ms more. Pair by pair: 16/10 and 15/11 (6 and 4 ms added);
        // per block 31/21: 10 ms added over two pairs, 5 each, the truth.
        let off = [10.0, 11.0, 10.0, 11.0];
        let on = [16.0, 15.0, 16.0, 15.0];
        let order = [false, true, false, true];
        let b = block_ratios(&off, &on, &order);
        assert_eq!(b.len(), 2);
        assert!((b[0] - 31.0 / 21.0).abs() < 1e-12);
        // Two pairs of one order do not make a block; a lone pair neither.
        assert_eq!(
            block_ratios(&off[..3], &on[..3], &[false, false, true]),
            vec![31.0 / 21.0]
        );
        assert!(block_ratios(&off[..1], &on[..1], &order[..1]).is_empty());
    }

    #[test]
    fn median_min_max() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(
            Spread::of(&[3.0]),
            Some(Spread {
                median: 3.0,
                min: 3.0,
                max: 3.0
            })
        );
        assert_eq!(
            Spread::of(&[5.0, 1.0, 3.0]),
            Some(Spread {
                median: 3.0,
                min: 1.0,
                max: 5.0
            })
        );
        assert_eq!(
            Spread::of(&[4.0, 1.0, 2.0, 10.0]),
            Some(Spread {
                median: 3.0,
                min: 1.0,
                max: 10.0
            })
        );
    }
}
