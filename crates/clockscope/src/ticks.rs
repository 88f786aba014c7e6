//! The opaque reading of a clock source: [`Ticks`].
//!
//! A reading only means something relative to another reading of the *same*
//! source: subtract two readings, then convert the difference to nanoseconds
//! with the source's [`Scale`](crate::convert::Scale). Like PostgreSQL's
//! `instr_time`, the representation is wrapped so that no caller relies on it:
//! a bare `u64` that is sometimes cycles and sometimes nanoseconds is a bug.

/// One reading of a clock source, in that source's ticks (TSC cycles,
/// generic-timer counts, nanoseconds or microseconds).
///
/// ```
/// use clockscope::{ClockSource, PosixClock, Ticks};
/// let clock = PosixClock::monotonic();
/// let (a, b) = (clock.now(), clock.now());
/// assert!(b.delta_since(a) >= 0); // signed: < 0 would be a backward step
/// assert_eq!(Ticks::from_raw(5).delta_since(Ticks::from_raw(7)), -2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Ticks(u64);

impl Ticks {
    /// Wraps a raw counter value.
    #[inline(always)]
    pub const fn from_raw(raw: u64) -> Self {
        Ticks(raw)
    }

    /// The raw counter value.
    #[inline(always)]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Signed tick difference `self - earlier`, wrapping like PostgreSQL's
    /// `INSTR_TIME_SUBTRACT` on an `int64`. Negative means time went backwards.
    #[inline(always)]
    pub const fn delta_since(self, earlier: Ticks) -> i64 {
        self.0.wrapping_sub(earlier.0) as i64
    }

    /// `self - ticks`, saturating at 0.
    #[inline(always)]
    pub const fn saturating_sub(self, ticks: u64) -> Ticks {
        Ticks(self.0.saturating_sub(ticks))
    }

    /// `self + ticks`, saturating at the counter's end.
    #[inline(always)]
    pub const fn saturating_add(self, ticks: u64) -> Ticks {
        Ticks(self.0.saturating_add(ticks))
    }
}
