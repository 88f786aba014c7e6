//! Median and spread of a handful of run times.

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

#[cfg(test)]
mod tests {
    use super::*;

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
