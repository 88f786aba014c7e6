//! PostgreSQL 19's system clock read, as `pg_test_timing`'s loop does it.
//! (The one `unsafe` of this crate: the clock_gettime call.)

use clockscope::{ClockSource, Scale, Ticks};

/// PostgreSQL 19's system read, `pg_get_ticks_system()`: clock_gettime
/// (CLOCK_MONOTONIC) into a timespec that is not zeroed first, then
/// `tv_sec * 10^9 + tv_nsec`. The drop-in `pg_test_timing` reads its system
/// block with it so that its loop does upstream's work and no more;
/// [`clockscope::PosixClock`] zeroes its timespec before each call (one more store per
/// read, which measured about 1.5% of the loop on the AMD EPYC guest,
/// bench/README.md). Where upstream ignores the return value, we test it
/// (never reading a timespec the call did not fill): a predicted branch.
#[derive(Clone, Copy, Debug, Default)]
pub struct PgSystemClock;

impl ClockSource for PgSystemClock {
    fn name(&self) -> &'static str {
        "clock_gettime (CLOCK_MONOTONIC)"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        let mut ts = std::mem::MaybeUninit::<libc::timespec>::uninit();
        // SAFETY: `ts` points to writable memory for one timespec, which
        // clock_gettime fills when it returns 0; CLOCK_MONOTONIC exists on
        // every Linux.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, ts.as_mut_ptr()) } != 0 {
            return Ticks::from_raw(0);
        }
        // SAFETY: the call returned 0, so it wrote the whole timespec.
        let ts = unsafe { ts.assume_init() };
        Ticks::from_raw(
            (ts.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(ts.tv_nsec as u64),
        )
    }
    fn scale(&self) -> Scale {
        Scale::NANOSECONDS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clockscope::PosixClock;

    #[test]
    fn postgresql_system_read_is_clock_monotonic() {
        // CLOCK_MONOTONIC never goes back: a PgSystemClock read lies between
        // two PosixClock::monotonic reads taken around it.
        let (posix, pg) = (PosixClock::monotonic(), PgSystemClock);
        for _ in 0..1000 {
            let a = posix.now();
            let b = pg.now();
            let c = posix.now();
            assert!(a <= b && b <= c, "{a:?} {b:?} {c:?}");
        }
        assert_eq!(pg.name(), posix.name());
        assert_eq!(pg.scale(), Scale::NANOSECONDS);
    }
}
