//! The library as a fast clock for other programs: [`Instant`] reads the CPU
//! counter (RDTSC, CNTVCT_EL0) when [`trust()`](crate::trust()) says it can,
//! and clock_gettime(CLOCK_MONOTONIC) otherwise. The choice is made once per
//! process, at the first reading or at [`Instant::init`].
//!
//! ```text
//! Instant::now()                 a fast reading: RDTSC / CNTVCT_EL0 / CLOCK_MONOTONIC
//! Instant::now_precise()         a reading not taken before earlier instructions finish:
//!                                RDTSCP / ISB;CNTVCT_EL0 / CLOCK_MONOTONIC
//! b.nanos_since(a)               signed ns from a to b: < 0 when the clock stepped backward
//! b.checked_duration_since(a)    Some(Duration from a to b); None if the clock stepped backward
//! a.elapsed_nanos()              Instant::now().nanos_since(a)
//! a.ticks()                      the raw reading (Ticks): subtract with Ticks::delta_since
//! Instant::scale()               ticks to ns, to hold in a local and convert once, late
//! Instant::init()                choose now rather than at the first reading; returns the Trust
//! ```
//!
//! Rules of use:
//! - A reading means nothing alone (no epoch, not wall time): only the
//!   difference of two readings of this process is a duration.
//! - All readings of one process come from one clock, chosen at the first
//!   use and never changed; ticks are that clock's ticks and must not be
//!   mixed with ticks of other processes (which may have chosen
//!   differently, e.g. with `CLOCKSCOPE_CLOCK=system`) or other clocks.
//! - Convert late: in a hot loop add up tick differences and convert once
//!   at the end with [`Instant::scale`]. The conversion is two
//!   multiplications and an add, no division, no float.
//! - `now()` may be executed before the instructions that precede it (RDTSC
//!   and CNTVCT_EL0 are not ordered); bracket a short piece of code with
//!   `now_precise()` when that matters. Neither is a fence for memory.
//! - A difference is signed: a backward step is reported, never clamped.
//!   Two readings from different threads compare only as far as the counters
//!   of different CPUs agree: the trust decision requires the kernel to time
//!   with the same counter (on x86-64 its clocksource is `tsc`, which it
//!   abandons when its warp test or watchdog fails); `clockscope cross-cpu`
//!   measures the residual offset.
//! - Whether time spent suspended is counted is unspecified (CLOCK_MONOTONIC
//!   does not count it; the TSC may or may not).
//!
//! # Initialisation
//! Lazy and once ([`std::sync::OnceLock`]): [`trust()`](crate::trust()) runs
//! CPUID, reads `current_clocksource` and calibrates the counter against
//! CLOCK_MONOTONIC_RAW for at most [`Trust::CALIBRATION_BUDGET_NS`] (10 ms),
//! nothing more. RDTSCP is never executed unless CPUID reports it; without
//! it, without an invariant TSC, or with any other failed rule, the clock is
//! CLOCK_MONOTONIC (never the wall clock). Nothing here panics. A program
//! that must not pay this at its first measurement calls [`Instant::init`]
//! at start-up. `CLOCKSCOPE_CLOCK=system` forces the system clock.
//!
//! # Hot path
//! After initialisation `now()` is one load of a byte that is written only
//! while initialising (a `Relaxed` atomic load: a plain `mov` on x86-64, a
//! plain `ldrb` on aarch64; no read-modify-write, no lock, no fence), a
//! compare and a predicted branch, then the counter read. No scale is looked
//! up: the conversion is deferred to [`Scale::ticks_to_ns`](crate::Scale::ticks_to_ns). On x86-64 (release
//! build, `objdump -d` of a non-inlined caller in a PIE) the counter-mode path
//! is `mov GOT(MODE),%rax; movzbl (%rax),%eax; cmp $0x1,%al; je L; ..; L:
//! rdtsc; shl $0x20,%rdx; or %rdx,%rax; ret`, and `now_precise()` the same
//! with `rdtscp`. Measured numbers: `bench/README.md`.

use crate::arch;
use crate::clock::{ClockSource, PosixClock};
use crate::convert::Scale;
use crate::ticks::Ticks;
use crate::trust::{trust, Trust};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

const MODE_UNSET: u8 = 0;
const MODE_COUNTER: u8 = 1;
const MODE_SYSTEM: u8 = 2;

/// Which clock `Instant` reads; written only while initialising.
static MODE: AtomicU8 = AtomicU8::new(MODE_UNSET);
static TRUST: OnceLock<Trust> = OnceLock::new();

/// A reading of this process's clock: the CPU counter when trusted, else
/// CLOCK_MONOTONIC. Differences are signed.
///
/// ```
/// use clockscope::Instant;
/// let a = Instant::now_precise();
/// let b = Instant::now_precise();
/// assert!(b.nanos_since(a) >= 0);
/// assert_eq!(b.checked_duration_since(a).map(|d| d.as_nanos() as i64), Some(b.nanos_since(a)));
/// println!("{} via {}", b.nanos_since(a), Instant::init().clock_name);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    ticks: Ticks,
}

impl Instant {
    /// A fast reading: RDTSC, CNTVCT_EL0 or CLOCK_MONOTONIC.
    #[inline]
    pub fn now() -> Instant {
        Instant {
            ticks: Ticks::from_raw(read_fast()),
        }
    }

    /// A reading taken after earlier instructions finish: RDTSCP,
    /// ISB;CNTVCT_EL0 or CLOCK_MONOTONIC.
    #[inline]
    pub fn now_precise() -> Instant {
        Instant {
            ticks: Ticks::from_raw(read_precise()),
        }
    }

    /// The raw reading, in the ticks of the clock in use.
    #[inline]
    pub const fn ticks(self) -> Ticks {
        self.ticks
    }

    /// Signed nanoseconds from `earlier` to `self`: negative when the clock
    /// stepped backward (never clamped, never wrapped).
    #[inline]
    pub fn nanos_since(self, earlier: Instant) -> i64 {
        let d = self.ticks.delta_since(earlier.ticks);
        let ns = Instant::scale().ticks_to_ns(d.unsigned_abs());
        let ns = i64::try_from(ns).unwrap_or(i64::MAX);
        if d < 0 {
            -ns
        } else {
            ns
        }
    }

    /// The time from `earlier` to `self`, or `None` when the clock stepped
    /// backward in between.
    #[inline]
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        let ns = self.nanos_since(earlier);
        (ns >= 0).then(|| Duration::from_nanos(ns as u64))
    }

    /// Signed nanoseconds from `self` to now.
    #[inline]
    pub fn elapsed_nanos(self) -> i64 {
        Instant::now().nanos_since(self)
    }

    /// The conversion of the clock in use (1 tick = 1 ns for the system
    /// clock): hold it in a local in a hot loop and convert once, at the end.
    #[inline]
    pub fn scale() -> Scale {
        Instant::init().scale
    }

    /// Chooses the clock now rather than at the first reading, and returns
    /// the decision: which clock, its frequency and every rule's outcome.
    #[inline]
    pub fn init() -> &'static Trust {
        match TRUST.get() {
            Some(t) => t,
            None => install(),
        }
    }
}

#[cold]
#[inline(never)]
fn install() -> &'static Trust {
    let t = TRUST.get_or_init(trust);
    MODE.store(
        if t.use_counter { MODE_COUNTER } else { MODE_SYSTEM },
        Ordering::Release,
    );
    t
}

#[inline(always)]
fn system_ns() -> u64 {
    PosixClock::monotonic().now().raw()
}

#[inline(always)]
fn read_fast() -> u64 {
    match MODE.load(Ordering::Relaxed) {
        MODE_COUNTER => arch::read_fast(),
        MODE_SYSTEM => system_ns(),
        _ => read_uninitialised(false),
    }
}

#[inline(always)]
fn read_precise() -> u64 {
    match MODE.load(Ordering::Relaxed) {
        // SAFETY: MODE_COUNTER is stored only when `trust` chose the
        // counter, which on x86-64 requires CPUID to report RDTSCP.
        MODE_COUNTER => unsafe { arch::read_ordered() },
        MODE_SYSTEM => system_ns(),
        _ => read_uninitialised(true),
    }
}

#[cold]
#[inline(never)]
fn read_uninitialised(precise: bool) -> u64 {
    let _ = install();
    if precise {
        read_precise()
    } else {
        read_fast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_uses_the_scale_in_use() {
        let t = Instant::init();
        assert_eq!(Instant::scale(), t.scale);
        let hz = t.scale.hz();
        // One second of ticks is one second, exactly.
        assert_eq!(Instant::scale().ticks_to_ns(hz), 1_000_000_000);
        assert_eq!(t.use_counter, t.frequency_hz.is_some());
    }

    #[test]
    fn the_mode_matches_the_decision() {
        let t = Instant::init();
        let _ = Instant::now();
        let want = if t.use_counter { MODE_COUNTER } else { MODE_SYSTEM };
        assert_eq!(MODE.load(Ordering::Relaxed), want);
        assert!(std::ptr::eq(Instant::init(), t), "the choice is made once");
    }

    #[test]
    fn differences_are_signed_and_checked() {
        let hz = Instant::scale().hz();
        let a = Instant {
            ticks: Ticks::from_raw(1000),
        };
        let b = Instant {
            ticks: Ticks::from_raw(1000 + hz),
        }; // one second later
        assert_eq!(b.nanos_since(a), 1_000_000_000);
        assert_eq!(
            a.nanos_since(b),
            -1_000_000_000,
            "a backward step is reported, not clamped"
        );
        assert_eq!(b.checked_duration_since(a), Some(Duration::from_secs(1)));
        assert_eq!(a.checked_duration_since(b), None);
        assert_eq!(a.checked_duration_since(a), Some(Duration::ZERO));
        assert!(a < b);
    }
}
