//! The library as a fast clock for other programs: [`Instant`] reads the CPU
//! counter (RDTSC, CNTVCT_EL0) when clockscope trusts it, and
//! clock_gettime(CLOCK_MONOTONIC) otherwise. The choice is made once per
//! process.
//!
//! ```text
//! Instant::now()                 a fast reading: RDTSC / CNTVCT_EL0 / CLOCK_MONOTONIC
//! Instant::now_precise()         a reading not taken before earlier instructions finish:
//!                                RDTSCP / ISB;CNTVCT_EL0 / CLOCK_MONOTONIC
//! b.duration_since(a)            Duration from a to b; ZERO if the clock stepped backward
//! b.checked_duration_since(a)    Some(Duration from a to b); None if the clock stepped backward
//! a.elapsed()                    Instant::now().duration_since(a)
//! b - a                          b.duration_since(a)
//! a.ticks()                      the raw reading, in the clock's ticks (u64)
//! raw_ticks(), raw_ticks_precise()   Instant::now().ticks(), without building an Instant
//! ticks_to_ns(delta)             a tick difference in ns: integer fixed point, exact to 1 ns
//! scale()                        the Scale ticks_to_ns uses, to hold in a local in a hot loop
//! clock_info()                   which clock, its frequency, where that came from, why (not) trusted
//! init()                         choose now rather than at the first reading; returns clock_info()
//! init_with(config)              same with a Config (force the system clock, calibration budgets)
//! ```
//!
//! Rules of use:
//! - A reading means nothing alone (no epoch, not wall time): only the
//!   difference of two readings of this process is a duration.
//! - All readings of one process come from one clock, chosen at the first
//!   use (or [`init`]) and never changed; raw ticks are that clock's ticks and
//!   must not be mixed with ticks of other processes (which may have chosen
//!   differently, e.g. with `CLOCKSCOPE_CLOCK=system`) or other clocks.
//! - Convert late: in a hot loop add up tick differences as `u64` and call
//!   [`ticks_to_ns`] (or `scale().ticks_to_ns`) once at the end. The
//!   conversion is two multiplications and an add, no division, no float.
//! - `now()` may be executed before the instructions that precede it (RDTSC
//!   and CNTVCT_EL0 are not ordered); bracket a short piece of code with
//!   `now_precise()` when that matters. Neither is a fence for memory.
//! - Two readings from different threads compare only as far as the
//!   counters of different CPUs agree: the trust decision requires the kernel
//!   to time with the same counter (on x86-64 its clocksource is `tsc`, which
//!   it abandons when its warp test or watchdog fails); `clockscope
//!   cross-cpu` measures the residual offset. Use [`Instant::checked_duration_since`]
//!   where a backward step must be seen, [`Instant::duration_since`] where
//!   it must be clamped.
//! - Whether time spent suspended is counted is unspecified (CLOCK_MONOTONIC
//!   does not count it; the TSC may or may not).
//!
//! # Initialisation
//! Lazy and once ([`std::sync::OnceLock`]): the first reading, or [`init`] /
//! [`init_with`], gathers the evidence and decides, in bounded time: the
//! calibration budget is 5 ms when CPUID, the hypervisor leaf, the perf page
//! or the kernel log gives the frequency (a cross-check), 50 ms at most when
//! none does, and always cut so it ends by 90 ms after the start, leaving
//! 10 ms of the 100 ms initialisation budget for the rest (see
//! [`detect`] for the details). The decision is clockscope's own, found by
//! the counter layer's one discovery ([`crate::counter::discover()`]:
//! [`crate::tsc::policy::clockscope_decision`], [`crate::arm`]'s on
//! aarch64), and the reads are [`crate::counter::arch`]'s. RDTSCP is never executed unless CPUID reports it; without it,
//! without an invariant TSC, or with any other failed check, the clock is
//! CLOCK_MONOTONIC (never the wall clock). Nothing here panics.
//!
//! Initialisation therefore takes at most 100 ms, and a few µs when the system
//! clock is forced. Times measured on one machine, with its CPU named:
//! `bench/README.md` (`examples/bare_reads`).
//!
//! Force the system clock with `CLOCKSCOPE_CLOCK=system` in the environment,
//! or [`init_with`]`(Config { force_system_clock: true, ..Config::default() })`
//! before the first reading.
//!
//! # Hot path
//! After initialisation `now()` is one load of a byte that is written only
//! while initialising (a `Relaxed` atomic load: a plain `mov` on x86-64, a
//! plain `ldrb` on aarch64; no read-modify-write, no lock, no fence), a
//! compare and a predicted branch, then the counter read. No scale is looked
//! up: the conversion is deferred to [`ticks_to_ns`]. On x86-64 (release
//! build, `objdump -d` of a non-inlined caller in a PIE) the counter-mode path
//! is `mov GOT(MODE),%rax; movzbl (%rax),%eax; cmp $0x1,%al; je L; ..; L:
//! rdtsc; shl $0x20,%rdx; or %rdx,%rax; ret`, and `now_precise()` the same
//! with `rdtscp`. Measured numbers: `bench/README.md`.

pub mod detect;

pub use detect::{ClockInfo, ClockMode, Config, ENV_VAR};

use crate::clock::posix::PosixClock;
use crate::clock::ClockSource;
use crate::convert::Scale;
// The counter reads (RDTSC/RDTSCP, CNTVCT_EL0, or the system clock where
// there is no counter; counter mode is never chosen there).
use crate::counter::arch;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// Not chosen yet: the next reading initialises.
const MODE_UNSET: u8 = 0;
/// The CPU counter.
const MODE_COUNTER: u8 = 1;
/// CLOCK_MONOTONIC.
const MODE_SYSTEM: u8 = 2;

/// The process's choice, as one byte read by every `now()`. Written only by
/// [`install`], always with the mode of [`INFO`], so it changes at most
/// once (from [`MODE_UNSET`]).
static MODE: AtomicU8 = AtomicU8::new(MODE_UNSET);
/// The process's choice, in full.
static INFO: OnceLock<ClockInfo> = OnceLock::new();

/// A reading of this process's clock (see the [module documentation](self)).
///
/// ```
/// use clockscope::instant::{self, Instant};
///
/// let start = Instant::now();
/// let mut x = 0u64;
/// for i in 0..1000u64 {
///     x = x.wrapping_mul(31).wrapping_add(i);
/// }
/// let end = Instant::now_precise();
/// // Never negative: a backward step reads as zero here, as None below.
/// let took = end.duration_since(start);
/// assert_eq!(end.checked_duration_since(start).unwrap_or_default(), took);
///
/// // Hot loop: raw ticks, converted once.
/// let mut ticks = 0u64;
/// for _ in 0..10 {
///     let t0 = instant::raw_ticks();
///     x = std::hint::black_box(x).rotate_left(7);
///     ticks += instant::raw_ticks().saturating_sub(t0);
/// }
/// let ns = instant::ticks_to_ns(ticks);
///
/// let info = instant::clock_info();
/// assert_eq!(instant::ticks_to_ns(info.frequency_hz), 1_000_000_000);
/// println!(
///     "{} at {} kHz ({}), loop {took:?}, 10 reads apart: {ns} ns",
///     info.clock_name, info.frequency_khz, info.frequency_source
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    ticks: u64,
}

impl Instant {
    /// A fast reading: RDTSC, CNTVCT_EL0 or CLOCK_MONOTONIC. Initialises on
    /// first use.
    #[inline]
    pub fn now() -> Instant {
        Instant { ticks: read_fast() }
    }

    /// A reading taken only after earlier instructions completed: RDTSCP,
    /// ISB;CNTVCT_EL0 or CLOCK_MONOTONIC.
    #[inline]
    pub fn now_precise() -> Instant {
        Instant { ticks: read_precise() }
    }

    /// The raw reading in the clock's ticks ([`clock_info`]`().frequency_hz` per second).
    #[inline]
    pub const fn ticks(self) -> u64 {
        self.ticks
    }

    /// The time from `earlier` to `self`, or `None` when `earlier` is later
    /// (the clock stepped backward, or the arguments are swapped).
    #[inline]
    pub fn checked_duration_since(self, earlier: Instant) -> Option<Duration> {
        (self.ticks >= earlier.ticks).then(|| self.duration_since(earlier))
    }

    /// The time from `earlier` to `self`, zero when `earlier` is later.
    #[inline]
    pub fn duration_since(self, earlier: Instant) -> Duration {
        // One path for both cases (0 ticks are 0 ns), so the compiler can
        // fold `Duration::from_nanos(..).as_nanos()` away.
        Duration::from_nanos(ticks_to_ns(self.ticks.saturating_sub(earlier.ticks)))
    }

    /// The time since `self`, by a fast reading (zero if the clock stepped backward).
    #[inline]
    pub fn elapsed(self) -> Duration {
        Instant::now().duration_since(self)
    }
}

impl std::ops::Sub for Instant {
    type Output = Duration;

    /// `self.duration_since(earlier)`: saturating at zero.
    #[inline]
    fn sub(self, earlier: Instant) -> Duration {
        self.duration_since(earlier)
    }
}

/// `Instant::now().ticks()`.
#[inline]
pub fn raw_ticks() -> u64 {
    read_fast()
}

/// `Instant::now_precise().ticks()`.
#[inline]
pub fn raw_ticks_precise() -> u64 {
    read_precise()
}

/// A difference of raw ticks in nanoseconds (exact to 1 ns, saturating at
/// `u64::MAX`). Initialises on first use.
#[inline]
pub fn ticks_to_ns(delta_ticks: u64) -> u64 {
    scale().ticks_to_ns(delta_ticks)
}

/// The conversion of the clock in use (CLOCK_MONOTONIC: 1 tick = 1 ns).
#[inline]
pub fn scale() -> Scale {
    clock_info().scale
}

/// The clock in use and why. Initialises on first use.
#[inline]
pub fn clock_info() -> &'static ClockInfo {
    match INFO.get() {
        Some(info) => info,
        None => install(None).0,
    }
}

/// Chooses the clock now (environment and default [`Config`]) if no reading
/// did yet, and returns the choice. Idempotent.
pub fn init() -> &'static ClockInfo {
    clock_info()
}

/// Returned by [`init_with`] when the clock had been chosen already.
#[derive(Clone, Copy, Debug, thiserror::Error)]
#[error("clockscope::instant was already initialised (using {}); init_with must come before the first reading", .0.clock_name)]
pub struct AlreadyInitialized(pub &'static ClockInfo);

/// Chooses the clock with `config` (the environment can still force the
/// system clock). `Err` with the earlier choice when the clock was already
/// chosen, by [`init`], [`init_with`] or a reading: call it first.
pub fn init_with(config: Config) -> Result<&'static ClockInfo, AlreadyInitialized> {
    match install(Some(config)) {
        (info, true) => Ok(info),
        (info, false) => Err(AlreadyInitialized(info)),
    }
}

/// Decides once, publishes the mode, and says whether this call decided.
#[cold]
#[inline(never)]
fn install(config: Option<Config>) -> (&'static ClockInfo, bool) {
    let mut decided = false;
    let info = INFO.get_or_init(|| {
        decided = true;
        detect::detect(&config.unwrap_or_default())
    });
    MODE.store(mode_code(info.mode), Ordering::Release);
    (info, decided)
}

fn mode_code(mode: ClockMode) -> u8 {
    match mode {
        ClockMode::Counter => MODE_COUNTER,
        ClockMode::System => MODE_SYSTEM,
    }
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
        // SAFETY: MODE_COUNTER is stored only when `detect` chose the
        // counter, which on x86-64 requires CPUID to report RDTSCP.
        MODE_COUNTER => unsafe { arch::read_ordered() },
        MODE_SYSTEM => system_ns(),
        _ => read_uninitialised(true),
    }
}

/// The first reading: decide, then read with the mode chosen.
#[cold]
#[inline(never)]
fn read_uninitialised(precise: bool) -> u64 {
    let info = install(None).0;
    match (info.mode, precise) {
        (ClockMode::Counter, false) => arch::read_fast(),
        // SAFETY: as in `read_precise`: the counter was chosen, so on x86-64
        // CPUID reported RDTSCP.
        (ClockMode::Counter, true) => unsafe { arch::read_ordered() },
        _ => system_ns(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_uses_the_scale_in_use() {
        let info = clock_info();
        assert_eq!(scale(), info.scale);
        assert_eq!(ticks_to_ns(0), 0);
        // One second of ticks is one second, exactly.
        assert_eq!(ticks_to_ns(info.frequency_hz), 1_000_000_000);
        assert_eq!(info.scale.hz(), info.frequency_hz);
        assert_eq!(info.frequency_khz, info.frequency_hz / 1000);
    }

    #[test]
    fn the_mode_matches_the_info() {
        let info = init();
        let _ = Instant::now();
        assert_eq!(MODE.load(Ordering::Relaxed), mode_code(info.mode));
        assert!(init_with(Config::default()).is_err(), "the choice is made once");
    }

    #[test]
    fn durations_saturate_and_check() {
        let a = Instant { ticks: 1000 };
        let b = Instant {
            ticks: 1000 + scale().hz(),
        }; // one second later
        assert_eq!(b.duration_since(a), Duration::from_secs(1));
        assert_eq!(b.checked_duration_since(a), Some(Duration::from_secs(1)));
        assert_eq!(a.checked_duration_since(b), None);
        assert_eq!(a.duration_since(b), Duration::ZERO);
        assert_eq!(a - b, Duration::ZERO);
        assert_eq!(b - a, Duration::from_secs(1));
        assert_eq!(a.checked_duration_since(a), Some(Duration::ZERO));
        assert!(a < b);
    }
}
