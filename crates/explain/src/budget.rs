//! `--max-time` as one client-side deadline for the whole run.
//!
//! The deadline is counted from the start of [`crate::run_with`] and covers
//! everything: connecting, reading and setting the session's settings, the
//! TEMP table, the side-effect check, every EXPLAIN, the teardown, and the
//! measurements on this machine that follow (its clocks, the executor-like
//! loop, the page-cache read). What it does at the deadline:
//! - a statement still running gets the server's cancel request, and a short
//!   wait ([`crate::session::DEADLINE_GRACE`] in all) for the server to
//!   confirm it; then the connection is closed, answered or not, and the
//!   message says which (never "cancelled" unless the server said so);
//! - the runs stop; what was measured is reported (no pair measured: one line);
//! - this machine's measurements stop at their next check, and if they have
//!   not returned [`LOCAL_OVERRUN`] after the deadline the report goes out
//!   without them (`crate::local`).
//!
//! So a run ends by about `--max-time` + [`crate::session::DEADLINE_GRACE`]
//! (+ [`LOCAL_OVERRUN`]), whatever the server does.
//!
//! # The split
//! The measurements on this machine come after the server's runs (their
//! executor-like loop works as much per row as the server's TIMING OFF runs
//! did), so the server's runs end early enough to leave them
//! `local_reserve`: what they take at full length (`local_need`) or at
//! most `LOCAL_SHARE` of `--max-time`. With less time they are shortened in
//! proportion (`clock_measure_ns_within`).

use std::time::{Duration, Instant};

/// The largest share of `--max-time` kept for this machine's measurements.
pub(crate) const LOCAL_SHARE: f64 = 0.25;
/// What this machine's measurements take besides the two pg_test_timing
/// loops (`--max-time` reserves it when it can): mostly the two
/// executor-like loops, 31 rounds of 100,000 rows each, so 3.1 million rows
/// of the server's TIMING OFF work per row and two reads. At 50 ns of work
/// that is about 0.25 s a loop; on this project's loaded AMD EPYC VM the
/// work measured 700 ns a row and each loop took about 2.3 s (release
/// build, computed from the report's rounds and ns per row). 3 s covers two
/// loops at about 450 ns a row, with the TSC's calibration (at most 50 ms,
/// PostgreSQL 19's rule) and the page-cache read (a few ms).
pub(crate) const LOCAL_EXTRA: Duration = Duration::from_secs(3);
/// How long after the deadline the report waits for this machine's
/// measurements to stop at their next check before it goes out without them.
pub const LOCAL_OVERRUN: Duration = Duration::from_millis(200);

/// The shortest pg_test_timing loop asked for: one 10 ms chunk.
pub(crate) const MIN_CLOCK_MEASURE_NS: u64 = 10_000_000;

/// What this machine's measurements take at full length: two
/// pg_test_timing loops of `clock_measure_ns` each and [`LOCAL_EXTRA`].
pub(crate) fn local_need(clock_measure_ns: u64) -> Duration {
    Duration::from_nanos(clock_measure_ns.saturating_mul(2)) + LOCAL_EXTRA
}

/// The time kept for this machine's measurements out of `max_time`:
/// [`local_need`], at most [`LOCAL_SHARE`] of `max_time`.
pub(crate) fn local_reserve(max_time: Duration, clock_measure_ns: u64) -> Duration {
    local_need(clock_measure_ns).min(max_time.mul_f64(LOCAL_SHARE))
}

/// The pg_test_timing loop's length per clock when `left` remains for this
/// machine's measurements: `clock_measure_ns`, shortened in proportion when
/// `left` is below [`local_need`]; at least [`MIN_CLOCK_MEASURE_NS`] (one of
/// the loop's 10 ms chunks, which it runs however soon it is stopped).
pub(crate) fn clock_measure_ns_within(left: Duration, clock_measure_ns: u64) -> u64 {
    let need = local_need(clock_measure_ns);
    if left >= need {
        return clock_measure_ns;
    }
    let share = left.as_secs_f64() / need.as_secs_f64();
    ((clock_measure_ns as f64 * share) as u64).max(MIN_CLOCK_MEASURE_NS.min(clock_measure_ns))
}

/// The deadline of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    start: Instant,
    max_time: Duration,
}

impl Budget {
    /// A run of at most `max_time` from `start`.
    pub fn new(start: Instant, max_time: Duration) -> Budget {
        Budget { start, max_time }
    }

    /// `--max-time` itself.
    pub fn max_time(&self) -> Duration {
        self.max_time
    }

    /// When the run must end.
    pub fn deadline(&self) -> Instant {
        self.start + self.max_time
    }

    /// The time left at `now`.
    pub(crate) fn left_at(&self, now: Instant) -> Duration {
        self.deadline().saturating_duration_since(now)
    }

    /// The time the server's runs (warm-up and pairs) may take from `now`,
    /// [`local_reserve`] kept for what follows; at least 1 ms (the runs then
    /// stop after their first statement).
    pub(crate) fn server_runs_at(&self, now: Instant, clock_measure_ns: u64) -> Duration {
        self.left_at(now)
            .saturating_sub(local_reserve(self.max_time, clock_measure_ns))
            .max(Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_local_reserve_is_the_need_or_a_quarter() {
        // 2 x 0.5 s of pg_test_timing loops + 3 s.
        let secs = Duration::from_secs;
        assert_eq!(local_need(500_000_000), secs(4));
        assert_eq!(local_reserve(secs(60), 500_000_000), secs(4));
        assert_eq!(local_reserve(secs(20), 500_000_000), secs(4));
        assert_eq!(local_reserve(secs(8), 500_000_000), secs(2));
        assert_eq!(local_reserve(secs(1), 500_000_000), 250 * MS);
    }

    #[test]
    fn the_server_runs_get_the_rest() {
        let t0 = clockscope_system::forward::now();
        let b = Budget::new(t0, Duration::from_secs(1));
        assert_eq!(b.deadline(), t0 + Duration::from_secs(1));
        // 100 ms went to connecting and set-up; 250 ms are kept.
        assert_eq!(b.server_runs_at(t0 + 100 * MS, 500_000_000), 650 * MS);
        // Set-up used everything: the runs get 1 ms (one statement).
        assert_eq!(b.server_runs_at(t0 + 2000 * MS, 500_000_000), MS);
        assert_eq!(b.left_at(t0 + 2000 * MS), Duration::ZERO);
        assert_eq!(b.left_at(t0 + 400 * MS), 600 * MS);
    }

    #[test]
    fn the_clock_loops_shrink_with_the_time_left() {
        let full = 500_000_000;
        assert_eq!(clock_measure_ns_within(Duration::from_secs(5), full), full);
        assert_eq!(clock_measure_ns_within(Duration::from_secs(4), full), full);
        // A quarter of the need: a quarter of each loop.
        assert_eq!(clock_measure_ns_within(Duration::from_secs(1), full), full / 4);
        assert_eq!(clock_measure_ns_within(Duration::ZERO, full), MIN_CLOCK_MEASURE_NS);
        assert_eq!(clock_measure_ns_within(Duration::ZERO, 1_000), 1_000);
    }
}
