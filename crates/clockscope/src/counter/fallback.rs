//! Architectures without a CPU counter clockscope reads: no counter, and
//! `instant`'s reads are the system clock (counter mode is never chosen here).

use super::{CounterKind, CounterPairVisitor, CounterVisitor};
use crate::clock::posix::PosixClock;
use crate::clock::{ClockId, ClockSource};
use crate::convert::Scale;

/// No counter on this architecture.
pub const KIND: Option<CounterKind> = None;
/// No fast counter read.
pub const FAST: Option<ClockId> = None;
/// No ordered counter read.
pub const PRECISE: Option<ClockId> = None;

/// Why there is no ordered counter read.
pub fn missing_ordered_read() -> Option<String> {
    Some(format!(
        "no CPU counter is supported on this architecture ({})",
        std::env::consts::ARCH
    ))
}

/// CLOCK_MONOTONIC (counter mode is never chosen here).
#[inline(always)]
pub fn read_fast() -> u64 {
    PosixClock::monotonic().now().raw()
}

/// CLOCK_MONOTONIC (counter mode is never chosen here).
///
/// # Safety
/// The portable contract of every platform's `read_ordered`: call it only
/// after the counter layer found the ordered read available (on x86-64,
/// CPUID's RDTSCP bit; `Instant`'s counter mode guarantees it), so callers
/// are written once for every platform. Here the condition always holds.
#[inline(always)]
pub unsafe fn read_ordered() -> u64 {
    read_fast()
}

/// No counter: `Err`.
pub fn visit_ordered<V: CounterVisitor>(_scale: Scale, _visitor: V) -> Result<V::Output, &'static str> {
    Err("no CPU counter on this architecture")
}

/// PostgreSQL calibrates only the x86-64 TSC.
pub fn visit_postgresql_precise<V: CounterVisitor>(_scale: Scale, _visitor: V) -> Result<V::Output, &'static str> {
    Err("PostgreSQL calibrates the TSC only on x86-64")
}

/// No counter: `Err`.
pub fn visit_pair<V: CounterPairVisitor>(_scale: Scale, _visitor: V) -> Result<V::Output, &'static str> {
    Err("no CPU counter on this architecture")
}

/// The counter's frequency register (CNTFRQ_EL0 on aarch64; the TSC has none).
pub fn frequency_register_hz() -> Option<u64> {
    None
}
