//! aarch64 counters: the ARM generic timer's virtual count CNTVCT_EL0 (fast)
//! and ISB;CNTVCT_EL0 (ordered), with the frequency from CNTFRQ_EL0.
//! All of this file's unsafe code is here.

use super::{ClockError, ClockId, ClockSource, ClockVisitor};
use crate::convert::Scale;
use crate::ticks::Ticks;

#[inline(always)]
fn cntvct() -> u64 {
    let v: u64;
    // SAFETY: CNTVCT_EL0 is readable from EL0 on Linux (the kernel sets
    // CNTKCTL_EL1.EL0VCTEN); the read has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

#[inline(always)]
fn isb_cntvct() -> u64 {
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

/// CNTVCT_EL0: the fast generic-timer read.
#[derive(Clone, Copy, Debug)]
pub struct Cntvct {
    scale: Scale,
}

/// ISB;CNTVCT_EL0: the ordered generic-timer read.
#[derive(Clone, Copy, Debug)]
pub struct IsbCntvct {
    scale: Scale,
}

impl Cntvct {
    pub fn new(scale: Scale) -> Self {
        Cntvct { scale }
    }
}

impl IsbCntvct {
    pub fn new(scale: Scale) -> Self {
        IsbCntvct { scale }
    }
}

impl ClockSource for Cntvct {
    fn name(&self) -> &'static str {
        "CNTVCT_EL0"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        Ticks::from_raw(cntvct())
    }
    #[inline(always)]
    fn now_ordered(&self) -> Ticks {
        Ticks::from_raw(isb_cntvct())
    }
    fn scale(&self) -> Scale {
        self.scale
    }
}

impl ClockSource for IsbCntvct {
    fn name(&self) -> &'static str {
        "ISB;CNTVCT_EL0"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        Ticks::from_raw(isb_cntvct())
    }
    fn scale(&self) -> Scale {
        self.scale
    }
}

pub(super) fn counter_supported(id: ClockId) -> Result<(), ClockError> {
    match id {
        ClockId::Cntvct | ClockId::IsbCntvct => Ok(()),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}

pub(super) fn visit_counter<V: ClockVisitor>(id: ClockId, scale: Scale, visitor: V) -> Result<V::Output, ClockError> {
    match id {
        ClockId::Cntvct => Ok(visitor.visit(&Cntvct::new(scale))),
        ClockId::IsbCntvct => Ok(visitor.visit(&IsbCntvct::new(scale))),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}
