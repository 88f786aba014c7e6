//! aarch64: the ARM generic timer as the counter layer sees it: its fast and
//! ordered reads and visitors over `clock::arch`'s sources. The instructions
//! (CNTVCT_EL0, ISB;CNTVCT_EL0, CNTFRQ_EL0) are [`crate::cpu`]'s, re-exported
//! here; `instant` calls them through this module.

use super::{CounterKind, CounterPairVisitor, CounterVisitor};
use crate::clock::arch::{Cntvct, IsbCntvct};
use crate::clock::ClockId;
use crate::convert::Scale;
pub use crate::cpu::{cntfrq_hz, cntvct, isb_cntvct};

/// The counter of this architecture.
pub const KIND: Option<CounterKind> = Some(CounterKind::GenericTimer);
/// The fast read (`Instant::now`).
pub const FAST: Option<ClockId> = Some(ClockId::Cntvct);
/// The ordered read (`Instant::now_precise`, calibration, cross-CPU tests).
pub const PRECISE: Option<ClockId> = Some(ClockId::IsbCntvct);

/// The generic timer is always readable from EL0 on Linux.
pub fn missing_ordered_read() -> Option<String> {
    None
}

/// `Instant::now()` in counter mode: CNTVCT_EL0.
#[inline(always)]
pub fn read_fast() -> u64 {
    cntvct()
}

/// `Instant::now_precise()` in counter mode: ISB;CNTVCT_EL0.
///
/// # Safety
/// The portable contract of every platform's `read_ordered`: call it only
/// after the counter layer found the ordered read available (on x86-64,
/// CPUID's RDTSCP bit; `Instant`'s counter mode guarantees it), so callers
/// are written once for every platform. On aarch64 the condition always
/// holds: Linux lets EL0 read CNTVCT_EL0.
#[inline(always)]
pub unsafe fn read_ordered() -> u64 {
    isb_cntvct()
}

/// Hands the ordered read (ISB;CNTVCT_EL0) to `visitor`.
pub fn visit_ordered<V: CounterVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    Ok(visitor.visit(IsbCntvct::new(scale)))
}

/// PostgreSQL calibrates only the x86-64 TSC.
pub fn visit_postgresql_precise<V: CounterVisitor>(_scale: Scale, _visitor: V) -> Result<V::Output, &'static str> {
    Err("PostgreSQL calibrates the TSC only on x86-64")
}

/// Hands the precise and fast reads (ISB;CNTVCT_EL0, CNTVCT_EL0) to `visitor`.
pub fn visit_pair<V: CounterPairVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    Ok(visitor.visit(IsbCntvct::new(scale), Cntvct::new(scale)))
}

/// The counter's frequency register (CNTFRQ_EL0 on aarch64; the TSC has none).
pub fn frequency_register_hz() -> Option<u64> {
    Some(cntfrq_hz())
}
