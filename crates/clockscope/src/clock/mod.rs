//! Clock sources: every way this machine can be asked the time, behind one
//! trait.
//!
//! A [`ClockSource`] returns opaque [`Ticks`] and the [`Scale`] that turns a
//! tick *difference* into nanoseconds. Measuring loops are generic over the
//! trait so each source gets its own monomorphised loop (no dynamic dispatch
//! per read). [`ClockId`] names every source the tools know; [`visit`] turns an
//! id into a concrete source and hands it to a [`ClockVisitor`].
//!
//! The counter sources are the platform's (`arch/x86_64.rs`: RDTSC, RDTSCP,
//! LFENCE;RDTSC; `arch/aarch64.rs`: CNTVCT_EL0; `arch/fallback.rs`: none),
//! the one place that executes those instructions. `posix.rs` holds the
//! clock_gettime/gettimeofday sources every Unix has.

mod posix;
#[cfg(any(test, feature = "testing"))]
mod scripted;

use crate::arch;
pub use posix::PosixClock;
#[cfg(any(test, feature = "testing"))]
pub use scripted::ScriptedClock;

use crate::convert::Scale;
use crate::ticks::Ticks;
use std::fmt;

/// A source of time readings.
///
/// ```
/// use clockscope::{ClockSource, PosixClock};
/// fn elapsed_ns<C: ClockSource>(clock: &C, work: impl FnOnce()) -> i64 {
///     let start = clock.now_ordered();
///     work();
///     let d = clock.now_ordered().delta_since(start);
///     clock.scale().ticks_to_ns(d.unsigned_abs()) as i64 * d.signum()
/// }
/// assert!(elapsed_ns(&PosixClock::monotonic(), || {}) >= 0);
/// ```
pub trait ClockSource {
    /// The display name PostgreSQL uses, e.g. `clock_gettime (CLOCK_MONOTONIC)`, `RDTSCP`.
    fn name(&self) -> &'static str;

    /// One reading, as cheap as the source allows (PostgreSQL's
    /// `INSTR_TIME_SET_CURRENT_FAST` for the TSC).
    fn now(&self) -> Ticks;

    /// One reading that is not reordered before earlier instructions
    /// (PostgreSQL's `INSTR_TIME_SET_CURRENT`: RDTSCP for the TSC). Measuring
    /// loops take their start and end with this. Defaults to [`now`](Self::now).
    #[inline(always)]
    fn now_ordered(&self) -> Ticks {
        self.now()
    }

    /// Ticks to nanoseconds for this source.
    fn scale(&self) -> Scale;
}

impl<C: ClockSource + ?Sized> ClockSource for &C {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        (**self).now()
    }
    #[inline(always)]
    fn now_ordered(&self) -> Ticks {
        (**self).now_ordered()
    }
    fn scale(&self) -> Scale {
        (**self).scale()
    }
}

/// What a clock counts, so reports can say where its resolution comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClockKind {
    /// A POSIX clock read with clock_gettime (vDSO or syscall).
    Posix(libc::clockid_t),
    /// gettimeofday(2): microseconds of wall time.
    GetTimeOfDay,
    /// Rust's `std::time::Instant`.
    StdInstant,
    /// A CPU counter (TSC, generic timer) that needs a frequency.
    Counter,
}

/// Every clock source clockscope knows, on every platform (a source of another
/// architecture is simply unavailable).
///
/// ```
/// use clockscope::ClockId;
/// assert_eq!(ClockId::parse("monotonic"), Some(ClockId::Monotonic));
/// assert!(ClockId::Rdtsc.is_counter());
/// for id in ClockId::ALL {
///     println!("{id}: {:?}", id.is_supported());
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClockId {
    /// `CLOCK_MONOTONIC`.
    Monotonic,
    /// `CLOCK_MONOTONIC_RAW` (not slewed by NTP).
    MonotonicRaw,
    /// `CLOCK_MONOTONIC_COARSE` (the last tick's time).
    MonotonicCoarse,
    /// `CLOCK_REALTIME` (wall time; steps with settimeofday).
    Realtime,
    /// `CLOCK_REALTIME_COARSE`.
    RealtimeCoarse,
    /// `CLOCK_BOOTTIME` (monotonic, counting suspend).
    Boottime,
    /// `CLOCK_TAI`.
    Tai,
    /// `gettimeofday` (microseconds).
    GetTimeOfDay,
    /// Rust's `std::time::Instant`.
    StdInstant,
    /// RDTSC (x86-64).
    Rdtsc,
    /// RDTSCP (x86-64; waits for earlier instructions).
    Rdtscp,
    /// LFENCE;RDTSC (x86-64).
    LfenceRdtsc,
    /// CNTVCT_EL0 (aarch64).
    Cntvct,
    /// ISB;CNTVCT_EL0 (aarch64; after earlier instructions).
    IsbCntvct,
}

impl ClockId {
    /// Every id, in report order.
    pub const ALL: [ClockId; 14] = [
        ClockId::Monotonic,
        ClockId::MonotonicRaw,
        ClockId::MonotonicCoarse,
        ClockId::Realtime,
        ClockId::RealtimeCoarse,
        ClockId::Boottime,
        ClockId::Tai,
        ClockId::GetTimeOfDay,
        ClockId::StdInstant,
        ClockId::Rdtsc,
        ClockId::Rdtscp,
        ClockId::LfenceRdtsc,
        ClockId::Cntvct,
        ClockId::IsbCntvct,
    ];

    /// The name used on the command line and in JSON (`monotonic`, `rdtscp`, ...).
    pub const fn cli_name(self) -> &'static str {
        match self {
            ClockId::Monotonic => "monotonic",
            ClockId::MonotonicRaw => "monotonic_raw",
            ClockId::MonotonicCoarse => "monotonic_coarse",
            ClockId::Realtime => "realtime",
            ClockId::RealtimeCoarse => "realtime_coarse",
            ClockId::Boottime => "boottime",
            ClockId::Tai => "tai",
            ClockId::GetTimeOfDay => "gettimeofday",
            ClockId::StdInstant => "std_instant",
            ClockId::Rdtsc => "rdtsc",
            ClockId::Rdtscp => "rdtscp",
            ClockId::LfenceRdtsc => "lfence_rdtsc",
            ClockId::Cntvct => "cntvct",
            ClockId::IsbCntvct => "isb_cntvct",
        }
    }

    /// The human display name (PostgreSQL's where it has one).
    pub const fn display_name(self) -> &'static str {
        match self {
            ClockId::Monotonic => "clock_gettime (CLOCK_MONOTONIC)",
            ClockId::MonotonicRaw => "clock_gettime (CLOCK_MONOTONIC_RAW)",
            ClockId::MonotonicCoarse => "clock_gettime (CLOCK_MONOTONIC_COARSE)",
            ClockId::Realtime => "clock_gettime (CLOCK_REALTIME)",
            ClockId::RealtimeCoarse => "clock_gettime (CLOCK_REALTIME_COARSE)",
            ClockId::Boottime => "clock_gettime (CLOCK_BOOTTIME)",
            ClockId::Tai => "clock_gettime (CLOCK_TAI)",
            ClockId::GetTimeOfDay => "gettimeofday",
            ClockId::StdInstant => "std::time::Instant",
            ClockId::Rdtsc => "RDTSC",
            ClockId::Rdtscp => "RDTSCP",
            ClockId::LfenceRdtsc => "LFENCE;RDTSC",
            ClockId::Cntvct => "CNTVCT_EL0",
            ClockId::IsbCntvct => "ISB;CNTVCT_EL0",
        }
    }

    /// Parses a command-line name (case-insensitive; display names and the
    /// `CLOCK_` constant names are accepted too).
    pub fn parse(name: &str) -> Option<ClockId> {
        let n = name.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        let n = n.strip_prefix("clock_").unwrap_or(&n);
        ClockId::ALL.into_iter().find(|id| {
            id.cli_name() == n
                || id.display_name().eq_ignore_ascii_case(name.trim())
                || (n == "lfence;rdtsc" && *id == ClockId::LfenceRdtsc)
                || (n == "isb;cntvct_el0" && *id == ClockId::IsbCntvct)
                || (n == "cntvct_el0" && *id == ClockId::Cntvct)
                || (n == "instant" && *id == ClockId::StdInstant)
        })
    }

    /// What the source counts.
    pub(crate) const fn kind(self) -> ClockKind {
        match self {
            ClockId::Monotonic => ClockKind::Posix(libc::CLOCK_MONOTONIC),
            ClockId::MonotonicRaw => ClockKind::Posix(libc::CLOCK_MONOTONIC_RAW),
            ClockId::MonotonicCoarse => ClockKind::Posix(libc::CLOCK_MONOTONIC_COARSE),
            ClockId::Realtime => ClockKind::Posix(libc::CLOCK_REALTIME),
            ClockId::RealtimeCoarse => ClockKind::Posix(libc::CLOCK_REALTIME_COARSE),
            ClockId::Boottime => ClockKind::Posix(libc::CLOCK_BOOTTIME),
            ClockId::Tai => ClockKind::Posix(libc::CLOCK_TAI),
            ClockId::GetTimeOfDay => ClockKind::GetTimeOfDay,
            ClockId::StdInstant => ClockKind::StdInstant,
            ClockId::Rdtsc | ClockId::Rdtscp | ClockId::LfenceRdtsc | ClockId::Cntvct | ClockId::IsbCntvct => {
                ClockKind::Counter
            }
        }
    }

    /// Whether the source must never step backwards: false for the wall
    /// clocks (CLOCK_REALTIME, its coarse form, CLOCK_TAI, gettimeofday),
    /// which NTP or an administrator may step; a backward step on any other
    /// source is a fault.
    pub const fn is_monotonic(self) -> bool {
        !matches!(
            self,
            ClockId::Realtime | ClockId::RealtimeCoarse | ClockId::Tai | ClockId::GetTimeOfDay
        )
    }

    /// Whether the source is a CPU counter that needs a frequency.
    pub const fn is_counter(self) -> bool {
        matches!(self.kind(), ClockKind::Counter)
    }

    /// Whether this build and CPU can read the source (a counter may still
    /// lack a frequency).
    pub fn is_supported(self) -> Result<(), ClockError> {
        match self.kind() {
            ClockKind::Counter => arch::counter_supported(self),
            ClockKind::Posix(id) => posix::clock_supported(id),
            _ => Ok(()),
        }
    }

    /// clock_getres(2) for POSIX sources, in ns (gettimeofday has none: its
    /// unit, 1 us, is not a resolution the kernel reports).
    pub fn reported_resolution_ns(self) -> Option<u64> {
        match self.kind() {
            ClockKind::Posix(id) => posix::clock_getres_ns(id),
            _ => None,
        }
    }
}

impl fmt::Display for ClockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.cli_name())
    }
}

/// Why a clock source cannot be read.
///
/// ```
/// use clockscope::{visit, ClockError, ClockId, ClockSource, ClockVisitor};
/// struct Name;
/// impl ClockVisitor for Name {
///     type Output = &'static str;
///     fn visit<C: ClockSource>(self, c: &C) -> &'static str {
///         c.name()
///     }
/// }
/// // A counter needs its frequency.
/// assert!(matches!(visit(ClockId::Rdtsc, None, Name), Err(ClockError::NoFrequency(_) | ClockError::OtherArchitecture(_))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    /// The source belongs to another architecture.
    #[error("{0} is not available on this architecture ({arch})", arch = std::env::consts::ARCH)]
    OtherArchitecture(&'static str),
    /// The CPU does not have the instruction (reading it would raise SIGILL).
    #[error("{0} is not supported by this CPU ({1})")]
    NotSupportedByCpu(&'static str, &'static str),
    /// The kernel refused the clock id.
    #[error("{0} is not supported by this kernel (clock_gettime: {1})")]
    NotSupportedByKernel(&'static str, String),
    /// A counter without a known frequency cannot be converted to time.
    #[error("{0} has no known frequency")]
    NoFrequency(&'static str),
}

/// Receives a concrete, monomorphised clock source from [`visit`].
///
/// ```
/// use clockscope::{visit, ClockId, ClockSource, ClockVisitor};
/// struct Resolution;
/// impl ClockVisitor for Resolution {
///     type Output = i64;
///     fn visit<C: ClockSource>(self, c: &C) -> i64 {
///         let a = c.now();
///         let mut b = c.now();
///         while b == a {
///             b = c.now();
///         }
///         b.delta_since(a)
///     }
/// }
/// assert!(visit(ClockId::Monotonic, None, Resolution).unwrap() > 0);
/// ```
pub trait ClockVisitor {
    /// What [`ClockVisitor::visit`] returns.
    type Output;
    /// Called once with the clock source.
    fn visit<C: ClockSource>(self, clock: &C) -> Self::Output;
}

/// Builds the source named by `id` and passes it to `visitor`. Counters need
/// `counter_scale` (the TSC or generic-timer frequency).
///
/// ```
/// use clockscope::{visit, ClockId, ClockSource, ClockVisitor, Scale};
/// struct Name;
/// impl ClockVisitor for Name {
///     type Output = &'static str;
///     fn visit<C: ClockSource>(self, c: &C) -> &'static str {
///         c.name()
///     }
/// }
/// assert_eq!(visit(ClockId::Monotonic, None, Name).unwrap(), "clock_gettime (CLOCK_MONOTONIC)");
/// let _ = visit(ClockId::Rdtscp, Scale::from_khz(2_600_000), Name); // Err where the CPU lacks it
/// ```
pub fn visit<V: ClockVisitor>(id: ClockId, counter_scale: Option<Scale>, visitor: V) -> Result<V::Output, ClockError> {
    id.is_supported()?;
    match id.kind() {
        ClockKind::Posix(cid) => Ok(visitor.visit(&PosixClock::new(cid, id.display_name()))),
        ClockKind::GetTimeOfDay => Ok(visitor.visit(&posix::GetTimeOfDay)),
        ClockKind::StdInstant => Ok(visitor.visit(&posix::StdInstant::new())),
        ClockKind::Counter => {
            let scale = counter_scale.ok_or(ClockError::NoFrequency(id.display_name()))?;
            arch::visit_counter(id, scale, visitor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for id in ClockId::ALL {
            assert_eq!(ClockId::parse(id.cli_name()), Some(id));
            assert_eq!(ClockId::parse(id.display_name()), Some(id));
        }
        assert_eq!(ClockId::parse("CLOCK_MONOTONIC_RAW"), Some(ClockId::MonotonicRaw));
        assert_eq!(ClockId::parse("LFENCE;RDTSC"), Some(ClockId::LfenceRdtsc));
        assert_eq!(ClockId::parse("nope"), None);
    }

    struct ReadTwice;
    impl ClockVisitor for ReadTwice {
        type Output = (i64, &'static str);
        fn visit<C: ClockSource>(self, clock: &C) -> Self::Output {
            let a = clock.now_ordered();
            let b = clock.now();
            (b.delta_since(a), clock.name())
        }
    }

    #[test]
    fn every_supported_source_reads() {
        for id in ClockId::ALL {
            if id.is_supported().is_err() {
                continue;
            }
            // 1 GHz stands in for a counter frequency: only the name and a
            // forward step are checked here, not a time.
            let (d, name) = visit(id, Scale::from_khz(1_000_000), ReadTwice).unwrap();
            assert_eq!(name, id.display_name());
            if id.is_monotonic() {
                assert!(d >= 0, "{id} went backwards between two reads");
            }
        }
    }

    #[test]
    fn only_wall_clocks_may_go_backwards() {
        let wall: Vec<ClockId> = ClockId::ALL.into_iter().filter(|id| !id.is_monotonic()).collect();
        assert_eq!(
            wall,
            [
                ClockId::Realtime,
                ClockId::RealtimeCoarse,
                ClockId::Tai,
                ClockId::GetTimeOfDay
            ]
        );
    }

    #[test]
    fn counter_without_frequency_is_an_error() {
        for id in ClockId::ALL.into_iter().filter(|i| i.is_counter()) {
            if id.is_supported().is_ok() {
                assert_eq!(
                    visit(id, None, ReadTwice),
                    Err(ClockError::NoFrequency(id.display_name()))
                );
            }
        }
    }
}
