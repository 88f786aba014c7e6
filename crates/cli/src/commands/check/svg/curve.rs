//! The plot's data: each clock's log2 buckets as steps, a CDF or a
//! histogram, with the points where its markers go.

use crate::commands::check::model::stats::ClockStats;

/// Smallest share drawn on the histogram's log axis, percent.
pub(super) const MIN_SHARE_PCT: f64 = 1e-6;

/// The CDF's markers stop once this share of reads is below the bucket's
/// upper edge: the flat tail near 100% would be a row of markers.
const CDF_MARKERS_UP_TO_PCT: f64 = 99.9;

/// Bucket `b`'s lower and upper edges in ns: [2^(b-1), 2^b); bucket 0
/// (zero differences) has none.
pub(super) fn bucket_edges_ns(b: usize) -> Option<(f64, f64)> {
    (b >= 1).then(|| ((b as f64 - 1.0).exp2(), (b as f64).exp2()))
}

/// One clock's curve: polylines (a gap in the data ends one) and the points
/// where its markers go.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Curve {
    pub(super) lines: Vec<Vec<(f64, f64)>>,
    pub(super) markers: Vec<(f64, f64)>,
}

/// Histogram steps: each non-empty bucket a flat step at its share across
/// its edges, joined to a non-empty neighbour by a vertical; a marker at
/// each step's geometric middle.
pub(super) fn histogram_steps(c: &ClockStats) -> Curve {
    let total: u64 = c.histogram.iter().map(|b| b.count).sum();
    let mut curve = Curve::default();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (b, bucket) in c.histogram.iter().enumerate() {
        match bucket_edges_ns(b) {
            Some((lo, hi)) if bucket.count > 0 && total > 0 => {
                let share = (bucket.count as f64 * 100.0 / total as f64).max(MIN_SHARE_PCT);
                current.push((lo, share));
                current.push((hi, share));
                curve.markers.push(((lo * hi).sqrt(), share));
            }
            _ => {
                if !current.is_empty() {
                    curve.lines.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        curve.lines.push(current);
    }
    curve
}

/// CDF steps: from the first non-empty bucket's lower edge at the share of
/// zero differences, flat across each bucket and up at its upper edge by
/// its share, to 100% at the last one's upper edge; a marker at each
/// non-empty bucket's upper corner (the exact share of reads shorter than
/// 2^k ns) until the share reaches [`CDF_MARKERS_UP_TO_PCT`].
pub(super) fn cdf_steps(c: &ClockStats) -> Curve {
    let total: u64 = c.histogram.iter().map(|b| b.count).sum();
    let mut curve = Curve::default();
    if total == 0 {
        return curve;
    }
    let share = |n: u64| n as f64 * 100.0 / total as f64;
    let mut below = c.histogram.first().map_or(0, |b| b.count);
    let mut line: Vec<(f64, f64)> = Vec::new();
    for (b, bucket) in c.histogram.iter().enumerate() {
        let Some((lo, hi)) = bucket_edges_ns(b) else { continue };
        if line.is_empty() {
            if bucket.count == 0 {
                continue;
            }
            line.push((lo, share(below)));
        }
        if bucket.count > 0 {
            line.push((hi, share(below)));
            if share(below) < CDF_MARKERS_UP_TO_PCT {
                curve.markers.push((hi, share(below + bucket.count)));
            }
            below += bucket.count;
            line.push((hi, share(below)));
        }
        if below == total {
            break;
        }
    }
    if !line.is_empty() {
        curve.lines.push(line);
    }
    curve
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::check::model::stats::{Bucket, Percentiles};

    fn stats(counts: &[u64]) -> ClockStats {
        ClockStats {
            name: "x".into(),
            display_name: "X".into(),
            avg_loop_ns: 20.0,
            read_cost_ns: 20.0,
            interference: Default::default(),
            loops: counts.iter().sum(),
            elapsed_ns: 1,
            elapsed_source: Default::default(),
            end_minus_start_ns: 1,
            percentiles_ns: Percentiles {
                p50: 0,
                p90: 0,
                p99: 0,
                p99_9: 0,
                p99_99: 0,
                max: 0,
            },
            resolution_ns: None,
            clock_getres_ns: None,
            zero_steps_pct: 0.0,
            under_1us_pct: 0.0,
            backward_steps: 0,
            largest_backward_ns: 0,
            histogram: counts
                .iter()
                .enumerate()
                .map(|(b, &count)| Bucket {
                    le_ns: (1u64 << b) - 1,
                    count,
                })
                .collect(),
            frequency_khz: None,
            interrupted: false,
        }
    }

    #[test]
    fn edges() {
        assert_eq!(bucket_edges_ns(0), None);
        assert_eq!(bucket_edges_ns(1), Some((1.0, 2.0)));
        assert_eq!(bucket_edges_ns(5), Some((16.0, 32.0)));
    }

    #[test]
    fn histogram_is_steps_with_gaps_kept() {
        // Buckets 5 (16-31 ns): 3, 6: 1, none in 7, 8: 4 (and 2 zeros, not drawn).
        let c = stats(&[2, 0, 0, 0, 0, 3, 1, 0, 4]);
        let h = histogram_steps(&c);
        let pct = |n: f64| n * 100.0 / 10.0;
        assert_eq!(
            h.lines,
            vec![
                vec![(16.0, pct(3.0)), (32.0, pct(3.0)), (32.0, pct(1.0)), (64.0, pct(1.0))],
                vec![(128.0, pct(4.0)), (256.0, pct(4.0))],
            ]
        );
        assert_eq!(h.markers.len(), 3);
        assert!((h.markers[0].0 - (16.0f64 * 32.0).sqrt()).abs() < 1e-9);
    }

    #[test]
    fn cdf_starts_at_the_zero_share_and_steps_up_at_upper_edges() {
        let c = stats(&[2, 0, 0, 0, 0, 3, 1, 0, 4]);
        let cdf = cdf_steps(&c);
        assert_eq!(
            cdf.lines,
            vec![vec![
                (16.0, 20.0),
                (32.0, 20.0),
                (32.0, 50.0),
                (64.0, 50.0),
                (64.0, 60.0),
                (256.0, 60.0),
                (256.0, 100.0),
            ]]
        );
        assert_eq!(cdf.markers, vec![(32.0, 50.0), (64.0, 60.0), (256.0, 100.0)]);
        assert_eq!(cdf_steps(&stats(&[])), Curve::default());
    }
}
