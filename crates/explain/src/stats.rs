//! Median and spread of run times, and the noise control's statistics: the
//! paired TIMING ON / TIMING OFF ratios, a distribution-free confidence
//! interval of their median, and the rule that says when it is precise enough.
//!
//! # The interval (binomial, order statistics)
//! For n independent ratios with median m, the count below m is Binomial(n,
//! 1/2) whatever their distribution. With the ratios sorted, r(1) <= ... <=
//! r(n), the interval [r(k), r(n+1-k)] holds m with probability
//! 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2). [`median_interval`] takes the
//! largest k that keeps that at or above the level asked for (95%): the
//! sign-test interval of the median (e.g. Conover, *Practical Nonparametric
//! Statistics*, 3rd ed., section 3.2). It needs n >= 6 at 95% (with 6 ratios:
//! [r(1), r(6)], 96.9%). No resampling: the same runs give the same interval.

use serde::Serialize;

/// Median, minimum and maximum of some samples (ms).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no samples; the median of an even count is the mean of the
    /// middle two.
    pub fn of(samples: &[f64]) -> Option<Spread> {
        if samples.is_empty() {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

/// The confidence level of the median slowdown's interval.
pub const CONFIDENCE: f64 = 0.95;
/// The precision the noise control aims for: the interval within +-5% of
/// the median.
pub const TARGET_HALF_WIDTH: f64 = 0.05;
/// What [`median_interval`] computes, for the report's readers.
pub const INTERVAL_METHOD: &str = "distribution-free interval of the median: order statistics [r(k), r(n+1-k)] \
     of the sorted paired ON/OFF ratios, k the largest with 1 - 2 P(Binomial(n, 1/2) <= k-1) >= 0.95";

/// A confidence interval of a median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    /// The interval's actual coverage, 1 - 2 P(B <= k-1), at or above the
    /// level asked for.
    pub coverage: f64,
}

impl Interval {
    /// The larger distance from `median` to an end, relative to `median`
    /// (0.05 = within +-5%).
    pub fn half_width(&self, median: f64) -> f64 {
        ((median - self.low).max(self.high - median) / median).abs()
    }
}

/// TIMING ON / TIMING OFF of each pair, in run order. A pair whose TIMING OFF
/// time is not above zero (EXPLAIN prints 3 decimals of ms) gives no ratio.
pub fn paired_ratios(off_ms: &[f64], on_ms: &[f64]) -> Vec<f64> {
    off_ms
        .iter()
        .zip(on_ms)
        .filter(|(off, on)| **off > 0.0 && on.is_finite())
        .map(|(off, on)| on / off)
        .collect()
}

/// P(B <= j) for B ~ Binomial(n, 1/2), summed in logs so n up to thousands
/// stays finite.
fn binomial_half_cdf(n: usize, j: usize) -> f64 {
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut sum = 0.0;
    for i in 0..=j.min(n) {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (ln_choose - ln_half_n).exp();
    }
    sum.min(1.0)
}

/// The distribution-free interval of the median of `samples` at `level` (see
/// the module docs); `None` when there are too few samples for that level.
pub fn median_interval(samples: &[f64], level: f64) -> Option<Interval> {
    let n = samples.len();
    let tail = (1.0 - level) / 2.0;
    // Largest k (1-based) with P(B <= k-1) <= tail; k <= n/2.
    let mut k = 0;
    while k < n / 2 && binomial_half_cdf(n, k) <= tail {
        k += 1;
    }
    if k == 0 {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Interval {
        low: v[k - 1],
        high: v[n - k],
        coverage: 1.0 - 2.0 * binomial_half_cdf(n, k - 1),
    })
}

/// The noise control's verdict on the ratios so far: their median, the 95%
/// interval (when there are enough), and whether it is within
/// [`TARGET_HALF_WIDTH`] of the median.
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
pub fn relative_range(samples: &[f64]) -> Option<f64> {
    let s = Spread::of(samples)?;
    (s.median > 0.0).then(|| (s.max - s.min) / s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_tails_match_exact_sums() {
        assert!((binomial_half_cdf(6, 0) - 1.0 / 64.0).abs() < 1e-15);
        assert!((binomial_half_cdf(10, 1) - 11.0 / 1024.0).abs() < 1e-15);
        assert!((binomial_half_cdf(10, 10) - 1.0).abs() < 1e-12);
        // Stays finite far beyond 2^-1074.
        assert!(binomial_half_cdf(2000, 900) > 0.0);
    }

    #[test]
    fn the_interval_needs_six_samples_at_95_percent() {
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), None);
        let i = median_interval(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0], 0.95).unwrap();
        assert_eq!((i.low, i.high), (1.0, 6.0));
        assert!((i.coverage - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
        // n = 20: P(B <= 5) = 0.0207 <= 0.025 < P(B <= 6) = 0.0577, so k = 6.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median_interval(&v, 0.95).unwrap();
        assert_eq!((i.low, i.high), (6.0, 15.0));
        assert!(i.coverage >= 0.95 && i.coverage < 0.96, "{}", i.coverage);
    }

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
