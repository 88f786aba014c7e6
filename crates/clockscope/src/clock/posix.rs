//! clock_gettime(2), gettimeofday(2) and `std::time::Instant` as clock sources.
//!
//! These are the "system clock" of PostgreSQL (`clock_gettime
//! (CLOCK_MONOTONIC)`) and its relatives. Their ticks are nanoseconds
//! (microseconds for gettimeofday). Whether a read is a cheap vDSO call or a
//! syscall depends on the kernel's clocksource, which is why clockscope
//! measures them rather than assuming.

use super::{ClockError, ClockSource};
use crate::convert::Scale;
use crate::ticks::Ticks;

/// A POSIX clock read with clock_gettime.
///
/// ```
/// use clockscope::{ClockSource, PosixClock};
/// let raw = PosixClock::monotonic_raw();
/// let (a, b) = (raw.now(), raw.now());
/// assert!(b >= a);
/// assert_eq!(raw.scale(), clockscope::Scale::NANOSECONDS);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct PosixClock {
    id: libc::clockid_t,
    name: &'static str,
}

impl PosixClock {
    /// The clock `id` (a `libc::CLOCK_*` constant), shown as `name`.
    pub const fn new(id: libc::clockid_t, name: &'static str) -> Self {
        PosixClock { id, name }
    }

    /// PostgreSQL's system clock, `clock_gettime (CLOCK_MONOTONIC)`.
    pub const fn monotonic() -> Self {
        PosixClock::new(libc::CLOCK_MONOTONIC, "clock_gettime (CLOCK_MONOTONIC)")
    }

    /// `CLOCK_MONOTONIC_RAW`: not slewed by NTP, the reference for calibration.
    pub const fn monotonic_raw() -> Self {
        PosixClock::new(libc::CLOCK_MONOTONIC_RAW, "clock_gettime (CLOCK_MONOTONIC_RAW)")
    }
}

impl PosixClock {
    /// One reading as clock_gettime returns it, `(tv_sec, tv_nsec)`: what
    /// PostgreSQL 15 and older store as their `instr_time` (a `struct
    /// timespec`), without the conversion to ns.
    #[inline(always)]
    // `time_t` and `c_long` are i32 on 32-bit targets: the casts are no-ops only here.
    #[allow(clippy::unnecessary_cast)]
    pub fn now_timespec(&self) -> (i64, i64) {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: as in `gettime_ns`: a valid, writable timespec; an invalid
        // id leaves it zeroed.
        unsafe { libc::clock_gettime(self.id, &mut ts) };
        // time_t and long are i64 on 64-bit targets, narrower on some 32-bit ones.
        #[allow(clippy::useless_conversion)]
        (i64::from(ts.tv_sec), i64::from(ts.tv_nsec))
    }
}

#[inline(always)]
fn gettime_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime writes only
    // into it. Ids are checked by `clock_supported` before a clock is built;
    // an invalid id would return EINVAL and leave `ts` zeroed, never UB.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

impl ClockSource for PosixClock {
    fn name(&self) -> &'static str {
        self.name
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        Ticks::from_raw(gettime_ns(self.id))
    }
    fn scale(&self) -> Scale {
        Scale::NANOSECONDS
    }
}

/// Whether the kernel knows clock `id`.
pub(crate) fn clock_supported(id: libc::clockid_t) -> Result<(), ClockError> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc == 0 {
        Ok(())
    } else {
        let name = super::ClockId::ALL
            .into_iter()
            .find(|c| c.kind() == super::ClockKind::Posix(id))
            .map_or("clock", |c| c.display_name());
        Err(ClockError::NotSupportedByKernel(
            name,
            std::io::Error::last_os_error().to_string(),
        ))
    }
}

/// clock_getres(2) in nanoseconds, if the kernel answers.
pub fn clock_getres_ns(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_getres(id, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// gettimeofday(2): wall-clock microseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetTimeOfDay;

const MICROSECONDS: Scale = match Scale::from_hz(1_000_000) {
    Some(s) => s,
    None => panic!("1 MHz is a valid frequency"),
};

impl ClockSource for GetTimeOfDay {
    fn name(&self) -> &'static str {
        "gettimeofday"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
        // SAFETY: `tv` is a valid, writable timeval; a null timezone is allowed.
        unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
        Ticks::from_raw(
            (tv.tv_sec as u64)
                .wrapping_mul(1_000_000)
                .wrapping_add(tv.tv_usec as u64),
        )
    }
    fn scale(&self) -> Scale {
        MICROSECONDS
    }
}

/// Rust's `std::time::Instant`, as nanoseconds since the source was built.
#[derive(Clone, Copy, Debug)]
pub struct StdInstant {
    base: std::time::Instant,
}

impl StdInstant {
    /// A clock whose epoch is now.
    pub fn new() -> Self {
        StdInstant {
            base: std::time::Instant::now(),
        }
    }
}

impl Default for StdInstant {
    fn default() -> Self {
        Self::new()
    }
}

impl ClockSource for StdInstant {
    fn name(&self) -> &'static str {
        "std::time::Instant"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        Ticks::from_raw(std::time::Instant::now().duration_since(self.base).as_nanos() as u64)
    }
    fn scale(&self) -> Scale {
        Scale::NANOSECONDS
    }
}
