//! Median and spread of run times, and the noise control's statistics: the
//! paired TIMING ON / TIMING OFF ratios, a distribution-free confidence
//! interval of their median, and the rule that says when it is precise enough.
//!
//! # The interval
//! The sign-test interval of the median from order statistics,
//! [`clockscope::stats::median_interval`] (documented there): needs n >= 6
//! ratios at 95%; the same runs give the same interval.

use serde::Serialize;

/// Median, minimum and maximum of some samples (ms).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no samples; the median is [`clockscope::stats::median`]
    /// (the mean of the middle two for an even count).
    pub fn of(samples: &[f64]) -> Option<Spread> {
        let median = clockscope::stats::median(samples)?;
        // The ends of the same total order the median sorts by.
        let min = samples.iter().copied().min_by(f64::total_cmp)?;
        let max = samples.iter().copied().max_by(f64::total_cmp)?;
        Some(Spread { median, min, max })
    }
}

pub use clockscope::stats::{median_interval, Interval, CONFIDENCE};

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
