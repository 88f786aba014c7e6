//! Waits that a clock stepped back cannot stretch: time counted as the sum
//! of a clock's forward steps between two looks.
//!
//! A wait written as `while now() < deadline` lasts as long as the clock's
//! backward step: a day when `faketime` (or a bad hypervisor, or a person
//! with `clock_settime` on a clock they can set) moves CLOCK_MONOTONIC back
//! a day. Here each look adds only the step since the previous look when it
//! is forward, and nothing when it is backward, so a wait ends after its
//! duration of forward time wherever the clock was moved. A clock moved
//! forward ends a wait early: never a hang. [`ForwardNs`] counts raw
//! nanosecond readings (the drift window's CLOCK_MONOTONIC_RAW);
//! [`ForwardDeadline`] is a deadline on std's monotonic clock; [`now`] is
//! std's monotonic clock read forward only, for code that keeps `Instant`
//! deadlines (the `explain` session's statements and budget).

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// std's monotonic clock (`Instant::now()`), forward only and process-wide:
/// each call adds the step since the previous call (in any thread) when it
/// is forward and nothing when the clock went back, so an `Instant` deadline
/// taken from it passes after its duration of forward time wherever the
/// clock was moved, and `now() - earlier` never saturates to zero for a day.
/// A lock per call: for deadlines and budgets, not for measuring loops.
pub fn now() -> Instant {
    // (the raw reading of the last call, what it returned)
    static LAST: Mutex<Option<(Instant, Instant)>> = Mutex::new(None);
    let raw = Instant::now();
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    let out = match *last {
        None => raw,
        Some((last_raw, last_out)) => last_out + raw.saturating_duration_since(last_raw),
    };
    *last = Some((raw, out));
    out
}

/// Forward time since `earlier`, an instant [`now`] returned.
pub fn since(earlier: Instant) -> Duration {
    now().saturating_duration_since(earlier)
}

/// Forward time of a clock read in nanoseconds: the sum of its forward steps.
#[derive(Clone, Copy, Debug)]
pub struct ForwardNs {
    last: u64,
    forward: u64,
    backward_steps: u64,
}

impl ForwardNs {
    /// Starts counting at the reading `now`.
    pub fn new(now: u64) -> Self {
        ForwardNs {
            last: now,
            forward: 0,
            backward_steps: 0,
        }
    }

    /// Takes the reading `now`; returns the forward time since the start.
    pub fn look(&mut self, now: u64) -> u64 {
        match now.checked_sub(self.last) {
            Some(step) => self.forward = self.forward.saturating_add(step),
            None => self.backward_steps += 1,
        }
        self.last = now;
        self.forward
    }

    /// Forward time counted so far, ns.
    pub fn elapsed(&self) -> u64 {
        self.forward
    }

    /// How many looks found the clock behind the previous one.
    pub fn backward_steps(&self) -> u64 {
        self.backward_steps
    }
}

/// A deadline `after` forward time from its making, on std's monotonic
/// clock (`Instant`): a backward step of that clock does not push it away.
/// Each thread keeps its own (looking needs `&mut`).
#[derive(Clone, Copy, Debug)]
pub struct ForwardDeadline {
    last: Instant,
    left: Duration,
}

impl ForwardDeadline {
    /// A deadline `after` from now.
    pub fn after(after: Duration) -> Self {
        ForwardDeadline {
            last: Instant::now(),
            left: after,
        }
    }

    /// A deadline at `deadline` on the clock as it reads now (the forward
    /// time left is fixed now; later steps of the clock do not move it).
    pub fn at(deadline: Instant) -> Self {
        let now = Instant::now();
        ForwardDeadline {
            last: now,
            left: deadline.saturating_duration_since(now),
        }
    }

    /// Forward time left, after counting the step since the last look.
    pub fn remaining(&mut self) -> Duration {
        let now = Instant::now();
        // Zero when the clock went back: a backward step counts for nothing.
        self.left = self.left.saturating_sub(now.saturating_duration_since(self.last));
        self.last = now;
        self.left
    }

    /// Whether the deadline has passed.
    pub fn passed(&mut self) -> bool {
        self.remaining().is_zero()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_steps_count_for_nothing_and_forward_time_goes_on() {
        let mut f = ForwardNs::new(1_000);
        assert_eq!(f.look(1_500), 500);
        // A day back: nothing added, and the wait goes on from there.
        assert_eq!(f.look(1_500 - 1_000), 500);
        assert_eq!(f.look(700), 700);
        assert_eq!(f.look(700), 700);
        assert_eq!(f.backward_steps(), 1);
        assert_eq!(f.elapsed(), 700);
    }

    #[test]
    fn now_never_goes_back_and_follows_forward_time() {
        let a = now();
        std::thread::sleep(Duration::from_millis(5));
        let b = now();
        assert!(b >= a + Duration::from_millis(5), "{a:?} {b:?}");
        assert!(since(a) >= Duration::from_millis(5));
        // Readings from several threads never go back either.
        let handles: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut prev = now();
                    for _ in 0..1000 {
                        let t = now();
                        assert!(t >= prev);
                        prev = t;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }

    #[test]
    fn a_deadline_passes_after_its_duration_and_at_a_past_instant() {
        let mut d = ForwardDeadline::after(Duration::from_millis(20));
        assert!(!d.passed());
        std::thread::sleep(Duration::from_millis(25));
        assert!(d.passed());
        let past = Instant::now();
        std::thread::sleep(Duration::from_millis(1));
        assert!(ForwardDeadline::at(past).passed());
    }
}
