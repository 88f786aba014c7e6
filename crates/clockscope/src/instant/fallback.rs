//! Architectures without a CPU counter clockscope reads: `clockscope::instant`
//! never chooses counter mode there, and these reads are the system clock.

use crate::clock::posix::PosixClock;
use crate::clock::ClockSource;

/// CLOCK_MONOTONIC (counter mode is never chosen here).
#[inline(always)]
pub(super) fn read_fast() -> u64 {
    PosixClock::monotonic().now().raw()
}

/// CLOCK_MONOTONIC (counter mode is never chosen here).
///
/// # Safety
/// None needed: kept `unsafe` to share the counter reads' signature.
#[inline(always)]
pub(super) unsafe fn read_ordered() -> u64 {
    read_fast()
}
