//! aarch64: the ARM generic timer's virtual count (CNTVCT_EL0, ISB;CNTVCT_EL0)
//! and its frequency register CNTFRQ_EL0. All of the generic timer's unsafe
//! code is here; `clock::arch` builds its clock sources on these reads and
//! `instant` calls them directly.

use super::{CounterKind, CounterPairVisitor, CounterVisitor};
use crate::clock::arch::{Cntvct, IsbCntvct};
use crate::clock::ClockId;
use crate::convert::Scale;

/// The counter of this architecture.
pub const KIND: Option<CounterKind> = Some(CounterKind::GenericTimer);
/// The fast read (`Instant::now`).
pub const FAST: Option<ClockId> = Some(ClockId::Cntvct);
/// The ordered read (`Instant::now_precise`, calibration, cross-CPU tests).
pub const PRECISE: Option<ClockId> = Some(ClockId::IsbCntvct);

/// CNTVCT_EL0: the virtual count, unordered.
#[inline(always)]
pub fn cntvct() -> u64 {
    let v: u64;
    // SAFETY: Linux lets EL0 read CNTVCT_EL0 (CNTKCTL_EL1.EL0VCTEN is set
    // by the arch timer driver); the read has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// ISB;CNTVCT_EL0: the virtual count, not read before earlier instructions complete.
#[inline(always)]
pub fn isb_cntvct() -> u64 {
    let v: u64;
    // SAFETY: ISB only synchronises the instruction stream; the counter read
    // is as in `cntvct`.
    unsafe { core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nostack, preserves_flags)) };
    v
}

/// The counter frequency from CNTFRQ_EL0, in Hz (0 when firmware left it unset).
pub fn cntfrq_hz() -> u64 {
    let v: u64;
    // SAFETY: CNTFRQ_EL0 is readable from EL0; the read has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

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
