//! The pg_test_timing histogram of successive-reading differences, and the
//! percentiles computed from it after the loop.
//!
//! PostgreSQL 19 keeps, per run: a log2 histogram (bucket 0 = difference 0;
//! bucket b >= 1 holds [2^(b-1), 2^b - 1] ns), an exact count of every
//! difference below 10000 ns, and the largest difference with its count.
//! We keep exactly that (65 log2 buckets so that even a u64::MAX difference
//! has one) and derive percentiles afterwards, so the loop pays nothing for
//! them. Beyond PostgreSQL, each log2 bucket also keeps the exact sum of its
//! differences of 10000 ns and more (one add on the rare path that already
//! handles them), so the time lost in long gaps is known exactly
//! (`clockscope_system::interference`).

use serde::Serialize;

/// Differences below this many ns are counted exactly.
pub(crate) const EXACT_LIMIT_NS: u64 = 10_000;
/// Log2 buckets: 0 and one per bit of a u64.
pub(crate) const BUCKETS: usize = 65;

/// Counts of successive-reading differences, in nanoseconds.
///
/// ```
/// use clockscope::{measure, Control, PosixClock};
/// let m = measure(&PosixClock::monotonic(), 5_000_000, |_progress| Control::Continue);
/// assert!(m.loops() > 0 && m.backward.count == 0);
/// let median = m.histogram.percentile(0.5);
/// println!("{} loops, {:?} ns per loop, median step {:?} ns", m.loops(), m.avg_loop_ns(), median.map(|p| p.ns));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    buckets: [u64; BUCKETS],
    exact: Box<[u64]>,
    largest_ns: u64,
    largest_count: u64,
    count: u64,
    /// Per log2 bucket, the sum in ns of its differences >= [`Histogram::EXACT_LIMIT_NS`].
    long_sums_ns: [u64; BUCKETS],
}

/// A percentile read from a [`Histogram`].
///
/// ```
/// use clockscope::{measure, Control, PosixClock};
/// let m = measure(&PosixClock::monotonic(), 5_000_000, |_progress| Control::Continue);
/// assert!(m.loops() > 0 && m.backward.count == 0);
/// let median = m.histogram.percentile(0.5);
/// println!("{} loops, {:?} ns per loop, median step {:?} ns", m.loops(), m.avg_loop_ns(), median.map(|p| p.ns));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Percentile {
    /// The value in ns; an upper bound when `exact` is false.
    pub ns: u64,
    /// False when the value fell above the exact range and is the upper edge
    /// of its log2 bucket (capped at the largest difference seen).
    pub exact: bool,
}

impl Histogram {
    /// Differences below this many ns are counted exactly (one slot per ns).
    pub const EXACT_LIMIT_NS: u64 = EXACT_LIMIT_NS;
    /// Log2 buckets: 0 and one per bit of a u64.
    pub const BUCKETS: usize = BUCKETS;

    /// The log2 bucket of a difference: 0 for 0, else highest set bit + 1.
    #[inline(always)]
    pub const fn bucket_of(ns: u64) -> usize {
        bucket_of(ns)
    }

    /// The largest value bucket `b` holds: `2^b - 1`.
    pub const fn bucket_upper_ns(b: usize) -> u64 {
        bucket_upper_ns(b)
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

/// The log2 bucket of a difference: 0 for 0, else highest set bit + 1.
#[inline(always)]
pub(crate) const fn bucket_of(ns: u64) -> usize {
    (u64::BITS - ns.leading_zeros()) as usize
}

/// The largest value bucket `b` holds: `2^b - 1`.
pub(crate) const fn bucket_upper_ns(b: usize) -> u64 {
    if b >= 64 {
        u64::MAX
    } else {
        (1u64 << b) - 1
    }
}

impl Histogram {
    /// An empty histogram; the exact table is allocated (and touched) here,
    /// never in the loop.
    pub fn new() -> Self {
        Histogram {
            buckets: [0; BUCKETS],
            exact: vec![0u64; EXACT_LIMIT_NS as usize].into_boxed_slice(),
            largest_ns: 0,
            largest_count: 0,
            count: 0,
            long_sums_ns: [0; BUCKETS],
        }
    }

    /// Counts one difference of `ns` nanoseconds (PostgreSQL's loop body).
    #[inline(always)]
    pub fn record(&mut self, ns: u64) {
        let b = bucket_of(ns);
        self.buckets[b] += 1;
        if ns < EXACT_LIMIT_NS {
            self.exact[ns as usize] += 1;
        } else {
            self.long_sums_ns[b] = self.long_sums_ns[b].saturating_add(ns);
        }
        if ns > self.largest_ns {
            self.largest_ns = ns;
            self.largest_count = 1;
        } else if ns == self.largest_ns {
            self.largest_count += 1;
        }
        self.count += 1;
    }

    /// Counts `n` differences of `ns` nanoseconds at once (the loop counts in
    /// ticks and converts each distinct tick difference once, afterwards).
    pub fn record_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        let b = bucket_of(ns);
        self.buckets[b] += n;
        if ns < EXACT_LIMIT_NS {
            self.exact[ns as usize] += n;
        } else {
            self.long_sums_ns[b] = self.long_sums_ns[b].saturating_add(ns.saturating_mul(n));
        }
        if ns > self.largest_ns || self.count == 0 {
            self.largest_ns = ns;
            self.largest_count = n;
        } else if ns == self.largest_ns {
            self.largest_count += n;
        }
        self.count += n;
    }

    /// Differences recorded (PostgreSQL's loop_count).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The log2 buckets.
    pub fn buckets(&self) -> &[u64; BUCKETS] {
        &self.buckets
    }

    /// Exact counts of differences 0..10000 ns.
    pub fn exact(&self) -> &[u64] {
        &self.exact
    }

    /// Per log2 bucket, the exact sum in ns of the differences of
    /// [`Histogram::EXACT_LIMIT_NS`] and more it holds (0 for the buckets below).
    pub fn long_sums_ns(&self) -> &[u64; BUCKETS] {
        &self.long_sums_ns
    }

    /// The largest difference seen, in ns.
    pub fn largest_ns(&self) -> u64 {
        self.largest_ns
    }

    /// How often the largest difference was seen.
    pub fn largest_count(&self) -> u64 {
        self.largest_count
    }

    /// Index of the highest non-empty bucket (0 when empty).
    pub fn max_bucket(&self) -> usize {
        self.buckets.iter().rposition(|&c| c != 0).unwrap_or(0)
    }

    /// The smallest non-zero difference seen (the observed resolution): exact
    /// below 10000 ns, else the lower edge of the first non-empty bucket.
    pub fn min_nonzero(&self) -> Option<Percentile> {
        if let Some(i) = self.exact.iter().skip(1).position(|&c| c != 0) {
            return Some(Percentile {
                ns: i as u64 + 1,
                exact: true,
            });
        }
        let b = (bucket_of(EXACT_LIMIT_NS)..BUCKETS).find(|&b| self.buckets[b] != 0)?;
        Some(Percentile {
            ns: (1u64 << (b - 1)).max(EXACT_LIMIT_NS),
            exact: false,
        })
    }

    /// Fraction (0..=1) of differences that were exactly 0.
    pub fn zero_fraction(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.exact[0] as f64 / self.count as f64
        }
    }

    /// Fraction (0..=1) of differences strictly below `ns`.
    pub fn fraction_below(&self, ns: u64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let below: u64 = if ns <= EXACT_LIMIT_NS {
            self.exact[..ns as usize].iter().sum()
        } else {
            // Whole buckets whose upper edge is below ns.
            (0..BUCKETS)
                .filter(|&b| bucket_upper_ns(b) < ns)
                .map(|b| self.buckets[b])
                .sum()
        };
        below as f64 / self.count as f64
    }

    /// The `q`-quantile (0 < q <= 1): the smallest value v with at least
    /// `ceil(q * count)` differences <= v. `None` when empty.
    pub fn percentile(&self, q: f64) -> Option<Percentile> {
        if self.count == 0 || !(q > 0.0 && q <= 1.0) {
            return None;
        }
        // A hair below q * count before rounding up, so that 0.99 * 1000 (which
        // may come out as 990.0000000000001) gives rank 990, not 991.
        let rank = ((q * self.count as f64 - 1e-9).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (ns, &c) in self.exact.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Percentile {
                    ns: ns as u64,
                    exact: true,
                });
            }
        }
        // Above the exact range: the bucket that holds 10000 also holds
        // 8192..9999, which were counted exactly above.
        let first = bucket_of(EXACT_LIMIT_NS);
        let low_part: u64 = self.exact[(1usize << (first - 1))..].iter().sum();
        for b in first..BUCKETS {
            let mut c = self.buckets[b];
            if b == first {
                c -= low_part.min(c);
            }
            seen += c;
            if seen >= rank {
                if rank == self.count {
                    return Some(Percentile {
                        ns: self.largest_ns,
                        exact: true,
                    });
                }
                return Some(Percentile {
                    ns: bucket_upper_ns(b).min(self.largest_ns),
                    exact: false,
                });
            }
        }
        Some(Percentile {
            ns: self.largest_ns,
            exact: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram {
        let mut h = Histogram::new();
        for &v in values {
            h.record(v);
        }
        h
    }

    #[test]
    fn buckets_follow_postgresql() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 1);
        assert_eq!(bucket_of(2), 2);
        assert_eq!(bucket_of(3), 2);
        assert_eq!(bucket_of(4), 3);
        assert_eq!(bucket_of(10_000), 14);
        assert_eq!(bucket_of(u64::MAX), 64);
        assert_eq!(bucket_upper_ns(0), 0);
        assert_eq!(bucket_upper_ns(5), 31);
        assert_eq!(bucket_upper_ns(64), u64::MAX);
    }

    #[test]
    fn largest_and_counts() {
        let h = hist(&[0, 20, 20, 35, 35, 35, 12_345, 12_345]);
        assert_eq!(h.count(), 8);
        assert_eq!(h.largest_ns(), 12_345);
        assert_eq!(h.largest_count(), 2);
        assert_eq!(h.exact()[35], 3);
        assert_eq!(h.buckets()[14], 2);
        assert_eq!(h.max_bucket(), 14);
        assert_eq!(h.min_nonzero(), Some(Percentile { ns: 20, exact: true }));
        assert!((h.zero_fraction() - 0.125).abs() < 1e-12);
        assert!((h.fraction_below(21) - 3.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn first_zero_difference_counts_as_largest() {
        // PostgreSQL starts largest_diff at 0 with count 0, so a leading 0
        // difference is counted as the largest.
        let h = hist(&[0, 0]);
        assert_eq!((h.largest_ns(), h.largest_count()), (0, 2));
    }

    #[test]
    fn percentiles_exact_and_bucketed() {
        let mut v: Vec<u64> = (0..1000).map(|_| 20).collect();
        v.extend((0..9).map(|_| 40));
        v.push(50_000);
        let h = hist(&v);
        assert_eq!(h.percentile(0.5), Some(Percentile { ns: 20, exact: true }));
        assert_eq!(h.percentile(0.99), Some(Percentile { ns: 20, exact: true }));
        assert_eq!(h.percentile(0.999), Some(Percentile { ns: 40, exact: true }));
        // The top one is in bucket 16 (32768..65535), capped by the largest.
        assert_eq!(
            h.percentile(1.0),
            Some(Percentile {
                ns: 50_000,
                exact: true
            })
        );
        let h2 = hist(&[20, 20_000, 50_000]);
        assert_eq!(
            h2.percentile(0.6),
            Some(Percentile {
                ns: 32_767,
                exact: false
            })
        );
        assert_eq!(Histogram::new().percentile(0.5), None);
        assert_eq!(h.percentile(0.0), None);
    }

    #[test]
    fn bucket_straddling_exact_limit() {
        // 9000 is in bucket 14 and counted exactly; 12000 only in bucket 14.
        let h = hist(&[9000, 12_000]);
        assert_eq!(h.percentile(0.5), Some(Percentile { ns: 9000, exact: true }));
        assert_eq!(
            h.percentile(1.0),
            Some(Percentile {
                ns: 12_000,
                exact: true
            })
        );
        let h = hist(&[12_000, 16_000, 16_000]);
        assert_eq!(
            h.min_nonzero(),
            Some(Percentile {
                ns: 10_000,
                exact: false
            })
        );
    }

    #[test]
    fn record_n_equals_n_records() {
        let mut a = Histogram::new();
        for (ns, n) in [(20, 3), (0, 2), (12_000, 1), (20, 1), (5, 4)] {
            a.record_n(ns, n);
        }
        let b = hist(&[20, 20, 20, 0, 0, 12_000, 20, 5, 5, 5, 5]);
        assert_eq!(a, b);
        a.record_n(20_000, 3);
        a.record(9_000); // same bucket as 12000, but counted exactly: not summed
        assert_eq!(a.long_sums_ns()[bucket_of(20_000)], 60_000);
        assert_eq!(a.long_sums_ns()[bucket_of(12_000)], 12_000);
        // The first record is the largest so far even at 0 (PostgreSQL's start).
        let mut z = Histogram::new();
        z.record_n(0, 2);
        assert_eq!((z.largest_ns(), z.largest_count()), (0, 2));
    }
}
