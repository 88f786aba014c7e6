//! What one clock read costs back to back, with an interval: the read-cost
//! engine ([`clockscope_system::engine`]: interference taken out, repeated when
//! noisy) run in chunks, their median and its 95% interval
//! ([`engine::Estimate`]).
//!
//! This is the price of reads that have nothing to overlap with: the two
//! `INSTR_TIME_SET_CURRENT` around a block I/O (`track_io_timing`) or a WAL
//! write (`track_wal_io_timing`) sit next to a system call, which drains the
//! pipeline. EXPLAIN's per-row reads are priced by the instrumentation
//! model instead ([`super::executor_loop`]).

use clockscope::{ClockError, ClockId, ClockSource, ClockVisitor, Control, Scale};
use clockscope_system::engine::{self, Estimate};
use clockscope_system::stats::Interval;
use serde::Serialize;

/// Chunks a measurement is split into: 9 gives the interval [x(2), x(8)]
/// (96.1%).
pub const CHUNKS: u32 = 9;

/// One clock's back-to-back read cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ReadCost {
    /// The clock, as pg_test_timing names it.
    pub clock: String,
    /// pg_test_timing's "Average loop time including overhead" over all
    /// chunks (interference included), ns.
    pub avg_loop_ns: f64,
    /// Loop iterations measured.
    pub loops: u64,
    /// The median over chunks of the read cost without interference gaps, ns.
    pub read_cost_ns: f64,
    /// Its 95% interval; null with fewer than 6 chunks or all equal.
    pub interval: Option<Interval>,
    /// Chunks measured.
    pub chunks: u32,
}

/// [`measure_read_cost`] on the clock named by `id` (a counter at
/// `counter_scale`). Not generic, so the loop is monomorphised in this crate,
/// which the dev profile optimises (the tools build at opt-level 0).
pub fn measure_read_cost_of(
    id: ClockId,
    counter_scale: Option<Scale>,
    duration_ns: u64,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Option<ReadCost>, ClockError> {
    struct Visit<'a> {
        duration_ns: u64,
        keep_going: &'a mut dyn FnMut() -> bool,
    }
    impl ClockVisitor for Visit<'_> {
        type Output = Option<ReadCost>;
        fn visit<C: ClockSource>(self, clock: &C) -> Self::Output {
            measure_read_cost(clock, self.duration_ns, self.keep_going)
        }
    }
    clockscope::visit(
        id,
        counter_scale,
        Visit {
            duration_ns,
            keep_going,
        },
    )
}

/// Measures `clock` for `duration_ns` in [`CHUNKS`] chunks, asking
/// `keep_going` every 10 ms; `None` when nothing was measured.
pub fn measure_read_cost<C: ClockSource>(
    clock: &C,
    duration_ns: u64,
    keep_going: &mut dyn FnMut() -> bool,
) -> Option<ReadCost> {
    let chunk_ns = (duration_ns / u64::from(CHUNKS)).max(1);
    let mut costs = Vec::new();
    let (mut loops, mut elapsed_ns) = (0u64, 0u64);
    for _ in 0..CHUNKS {
        let mut stopped = false;
        let (m, _) = engine::measure_clean(clock, chunk_ns, None, |_, _| {
            if keep_going() {
                Control::Continue
            } else {
                stopped = true;
                Control::Stop
            }
        });
        loops += m.loops();
        elapsed_ns = elapsed_ns.saturating_add(m.elapsed_ns);
        costs.extend(engine::read_cost_ns(&m));
        if stopped {
            break;
        }
    }
    let chunks = costs.len() as u32;
    let Estimate {
        median_ns, interval, ..
    } = Estimate::of(costs)?;
    Some(ReadCost {
        clock: clock.name().to_string(),
        avg_loop_ns: if loops > 0 {
            elapsed_ns as f64 / loops as f64
        } else {
            f64::NAN
        },
        loops,
        read_cost_ns: median_ns,
        interval: interval.filter(|i| !i.is_degenerate()),
        chunks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope::Scale;
    use clockscope::ScriptedClock;

    #[test]
    fn nine_chunks_of_a_clock_costing_20_ns() {
        let clock = ScriptedClock::new("scripted", Scale::from_hz(1_000_000_000).unwrap(), |n| 20 * n);
        let c = measure_read_cost(&clock, 9_000_000, &mut || true).unwrap();
        assert_eq!(c.chunks, CHUNKS);
        // Each chunk's elapsed time spans one read more than its loops.
        assert!((c.read_cost_ns - 20.0).abs() < 0.01, "{c:?}");
        // Every chunk equal: no interval.
        assert_eq!(c.interval, None);
        assert!((c.avg_loop_ns - 20.0).abs() < 0.1, "{c:?}");
        assert_eq!(c.clock, "scripted");
    }

    #[test]
    fn stopped_at_once_still_reports_what_ran() {
        let clock = ScriptedClock::new("scripted", Scale::from_hz(1_000_000_000).unwrap(), |n| 30 * n);
        let c = measure_read_cost(&clock, 9_000_000_000, &mut || false).unwrap();
        assert_eq!(c.chunks, 1);
        assert!((c.read_cost_ns - 30.0).abs() < 0.01, "{c:?}");
    }
}
