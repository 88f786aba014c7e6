//! Architectures without a CPU counter clockscope reads: no counter, and
//! `Instant`'s reads are the system clock (counter mode is never chosen here).

use crate::clock::{ClockError, ClockId, ClockSource, ClockVisitor, PosixClock};
use crate::convert::Scale;
use crate::counter::{CounterKind, CounterPairVisitor, CounterVisitor};

pub(crate) const KIND: Option<CounterKind> = None;

pub(crate) fn invariant() -> bool {
    false
}

pub(crate) fn missing_ordered_read() -> Option<String> {
    Some(format!(
        "no CPU counter is supported on this architecture ({})",
        std::env::consts::ARCH
    ))
}

pub(crate) fn frequency_register_hz() -> Option<u64> {
    None
}

#[inline(always)]
pub(crate) fn read_fast() -> u64 {
    PosixClock::monotonic().now().raw()
}

/// # Safety
/// None needed; `unsafe` only to match the x86-64 signature.
#[inline(always)]
pub(crate) unsafe fn read_ordered() -> u64 {
    read_fast()
}

pub(crate) fn counter_supported(id: ClockId) -> Result<(), ClockError> {
    Err(ClockError::OtherArchitecture(id.display_name()))
}

pub(crate) fn visit_counter<V: ClockVisitor>(id: ClockId, _scale: Scale, _visitor: V) -> Result<V::Output, ClockError> {
    Err(ClockError::OtherArchitecture(id.display_name()))
}

pub(crate) fn visit_ordered<V: CounterVisitor>(_scale: Scale, _visitor: V) -> Result<V::Output, &'static str> {
    Err("no CPU counter on this architecture")
}

pub(crate) fn visit_pair<V: CounterPairVisitor>(_scale: Scale, _visitor: V) -> Result<V::Output, &'static str> {
    Err("no CPU counter on this architecture")
}
