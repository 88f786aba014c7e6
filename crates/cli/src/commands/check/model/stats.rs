//! Per-clock statistics for `clockscope check`, computed from a
//! [`Measurement`]'s histogram after the loop (the loop itself pays nothing
//! for percentiles), with the interference gaps and the read cost without
//! them ([`clockscope_system::interference`]).

use clockscope::ClockId;
use clockscope::Histogram;
use clockscope::{ElapsedSource, Measurement};
use clockscope_system::interference::{self, Interference};
use serde::Serialize;

/// Percentiles of the successive-reading differences, in ns. Values above
/// 10000 ns are upper bounds of their log2 bucket (capped at `max`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Percentiles {
    /// Median, ns.
    pub p50: u64,
    /// 90th percentile, ns.
    pub p90: u64,
    /// 99th percentile, ns.
    pub p99: u64,
    /// 99.9th percentile, ns.
    pub p99_9: u64,
    /// 99.99th percentile, ns.
    pub p99_99: u64,
    /// Largest difference, ns (exact).
    pub max: u64,
}

/// One log2 bucket of the JSON histogram: differences `<= le_ns` above the previous bucket.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Bucket {
    /// Upper edge of the bucket, ns (inclusive).
    pub le_ns: u64,
    /// Differences in the bucket.
    pub count: u64,
}

/// What was measured for one clock.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ClockStats {
    /// Command-line name (`monotonic`, `rdtscp`, ...).
    pub name: String,
    /// Display name (`clock_gettime (CLOCK_MONOTONIC)`, `RDTSCP`, ...).
    pub display_name: String,
    /// Average time per loop iteration (one read plus bookkeeping), ns:
    /// PostgreSQL's number, interference included.
    pub avg_loop_ns: f64,
    /// Mean cost of a read with the interference gaps taken out, ns:
    /// `(elapsed_ns - interference.lost_ns) / (loops - interference.gaps)`.
    pub read_cost_ns: f64,
    /// What the machine took away from the run (gaps, steal, throttling, preemption).
    pub interference: Interference,
    /// Loop iterations with a forward (or zero) difference.
    pub loops: u64,
    /// Measured time, ns: the sum of the clock's non-negative steps (end
    /// minus start when it never stepped back).
    pub elapsed_ns: u64,
    /// How `elapsed_ns` was found: `end_minus_start`, or `forward_steps`
    /// when the clock stepped back.
    pub elapsed_source: ElapsedSource,
    /// The clock's end reading minus its start reading, ns (negative when it
    /// stepped back further than it ran).
    pub end_minus_start_ns: i64,
    pub percentiles_ns: Percentiles,
    /// Observed resolution: the smallest non-zero difference, ns.
    pub resolution_ns: Option<u64>,
    /// clock_getres(2), ns, for POSIX clocks.
    pub clock_getres_ns: Option<u64>,
    /// Differences that were exactly 0, percent.
    pub zero_steps_pct: f64,
    /// Differences under 1 us, percent (PostgreSQL's old rule).
    pub under_1us_pct: f64,
    /// Successive reads that went backwards.
    pub backward_steps: u64,
    /// Largest backward step, ns (0 when none).
    pub largest_backward_ns: u64,
    /// Log2 histogram up to the highest non-empty bucket.
    pub histogram: Vec<Bucket>,
    /// Counter frequency used to convert ticks, kHz (counters only).
    pub frequency_khz: Option<u64>,
    /// Whether Ctrl-C cut this clock's run short.
    pub interrupted: bool,
}

impl ClockStats {
    /// Statistics of `m`, measured on clock `id`.
    pub fn from_measurement(id: ClockId, m: &Measurement, frequency_khz: Option<u64>) -> ClockStats {
        let h = &m.histogram;
        let pct = |q: f64| h.percentile(q).map_or(0, |p| p.ns);
        let gaps = interference::find_gaps(h);
        ClockStats {
            name: id.cli_name().to_string(),
            display_name: id.display_name().to_string(),
            avg_loop_ns: m.avg_loop_ns().unwrap_or(0.0),
            read_cost_ns: interference::read_cost_ns(m, &gaps).unwrap_or(0.0),
            interference: Interference::from_gaps(&gaps, m.elapsed_ns),
            loops: m.loops(),
            elapsed_ns: m.elapsed_ns,
            elapsed_source: m.elapsed_source,
            end_minus_start_ns: m.end_minus_start_ns,
            percentiles_ns: Percentiles {
                p50: pct(0.5),
                p90: pct(0.9),
                p99: pct(0.99),
                p99_9: pct(0.999),
                p99_99: pct(0.9999),
                max: h.largest_ns(),
            },
            resolution_ns: h.min_nonzero().map(|p| p.ns),
            clock_getres_ns: id.reported_resolution_ns(),
            zero_steps_pct: h.zero_fraction() * 100.0,
            under_1us_pct: h.fraction_below(1000) * 100.0,
            backward_steps: m.backward.count,
            largest_backward_ns: m.backward.largest_ns,
            histogram: (0..=h.max_bucket())
                .map(|b| Bucket {
                    le_ns: Histogram::bucket_upper_ns(b),
                    count: h.buckets()[b],
                })
                .collect(),
            frequency_khz,
            interrupted: m.interrupted,
        }
    }

    /// PostgreSQL's "under 1 us" percentage among the differences outside
    /// the gaps (every gap is above 1 us).
    pub fn under_1us_pct_without_gaps(&self) -> f64 {
        let rest = self.loops.saturating_sub(self.interference.gaps);
        if rest == 0 {
            return 0.0;
        }
        (self.under_1us_pct * self.loops as f64 / rest as f64).min(100.0)
    }

    /// Why this clock's kept run is noisy, or `None` when it is clean.
    pub fn noise(&self) -> Option<&str> {
        let i = &self.interference;
        i.noise_by_run
            .get(i.kept_run.max(1) as usize - 1)
            .and_then(|n| n.as_deref())
    }

    /// Whether a backward step on this clock is a fault (wall clocks may be stepped by NTP).
    pub fn must_be_monotonic(&self) -> bool {
        ClockId::parse(&self.name).is_none_or(ClockId::is_monotonic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope::Scale;
    use clockscope::ScriptedClock;
    use clockscope::{measure, Control};

    #[test]
    fn stats_from_scripted_clock() {
        // 1000 differences: 980 of 20 ns, 10 zero, 9 of 500 ns, one of 20 us.
        let mut r = vec![0u64];
        let mut t = 0u64;
        for i in 0..1000 {
            t += match i {
                0..=9 => 0,
                10..=18 => 500,
                19 => 20_000,
                _ => 20,
            };
            r.push(t);
        }
        r.push(t + 1); // the ordered end read
        let end = t;
        let c = ScriptedClock::from_readings("s", Scale::NANOSECONDS, r);
        let m = measure(&c, end, |_| Control::Continue);
        let s = ClockStats::from_measurement(ClockId::Monotonic, &m, None);
        assert_eq!(s.loops, 1000);
        assert_eq!(
            s.percentiles_ns,
            Percentiles {
                p50: 20,
                p90: 20,
                p99: 20, // 10 zeros + 980 x 20 ns = 990 of 1000 differences <= 20 ns
                p99_9: 500,
                p99_99: 20_000,
                max: 20_000
            }
        );
        assert_eq!(s.resolution_ns, Some(20));
        assert!((s.zero_steps_pct - 1.0).abs() < 1e-9);
        assert!((s.under_1us_pct - 99.9).abs() < 1e-9);
        assert_eq!(s.histogram.len(), 16);
        assert_eq!(
            s.histogram[15],
            Bucket {
                le_ns: 32_767,
                count: 1
            }
        );
        assert_eq!(s.backward_steps, 0);
        assert!(s.must_be_monotonic());
    }
}
