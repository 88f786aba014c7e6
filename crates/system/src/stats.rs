//! Small statistics the measurements share: the median, and a
//! distribution-free confidence interval of a median from order statistics.
//!
//! # The interval (binomial, order statistics)
//! For n independent samples with median m, the count below m is Binomial(n,
//! 1/2) whatever their distribution. With the samples sorted, x(1) <= ... <=
//! x(n), the interval [x(k), x(n+1-k)] holds m with probability
//! 1 - 2 P(B <= k-1), B ~ Binomial(n, 1/2). [`median_interval`] takes the
//! largest k that keeps that at or above the level asked for (95%): the
//! sign-test interval of the median (e.g. Conover, *Practical Nonparametric
//! Statistics*, 3rd ed., section 3.2). It needs n >= 6 at 95% (with 6
//! samples: [x(1), x(6)], 96.9%). No resampling: the same samples give the
//! same interval.

use serde::Serialize;

/// The confidence level clockscope states intervals at.
pub const CONFIDENCE: f64 = 0.95;

/// A confidence interval of a median.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
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

    /// Whether the interval has no width (every sample in it equal): it then
    /// says nothing about the noise and is not shown as +-0%.
    pub fn is_degenerate(&self) -> bool {
        self.low == self.high
    }
}

/// The median of `samples` (the mean of the middle two for an even count);
/// `None` without samples. NaNs sort last.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// P(B <= j) for B ~ Binomial(n, 1/2), summed in logs so n up to thousands
/// stays finite.
pub(crate) fn binomial_half_cdf(n: usize, j: usize) -> f64 {
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

/// The fewest samples [`median_interval`] needs at [`CONFIDENCE`].
pub const MIN_SAMPLES_FOR_INTERVAL: usize = 6;

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
        assert_eq!(median_interval(&[1.0, 2.0, 3.0, 4.0, 5.0], CONFIDENCE), None);
        let i = median_interval(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0], CONFIDENCE).unwrap();
        assert_eq!((i.low, i.high), (1.0, 6.0));
        assert!((i.coverage - (1.0 - 2.0 / 64.0)).abs() < 1e-12);
        // n = 20: P(B <= 5) = 0.0207 <= 0.025 < P(B <= 6) = 0.0577, so k = 6.
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let i = median_interval(&v, CONFIDENCE).unwrap();
        assert_eq!((i.low, i.high), (6.0, 15.0));
        assert!(i.coverage >= 0.95 && i.coverage < 0.96, "{}", i.coverage);
        assert!(!i.is_degenerate());
        assert!(median_interval(&[2.0; 8], CONFIDENCE).unwrap().is_degenerate());
        assert_eq!(MIN_SAMPLES_FOR_INTERVAL, 6);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 10.0]), Some(3.0));
    }
}
