//! aarch64: the ARM generic timer. The one place that reads its virtual count
//! (CNTVCT_EL0, ISB;CNTVCT_EL0) and its frequency register CNTFRQ_EL0.

use crate::clock::{ClockError, ClockId, ClockSource, ClockVisitor};
use crate::convert::Scale;
use crate::counter::{CounterKind, CounterPairVisitor, CounterVisitor};
use crate::ticks::Ticks;

pub(crate) const KIND: Option<CounterKind> = Some(CounterKind::GenericTimer);

#[inline(always)]
fn cntvct() -> u64 {
    let v: u64;
    // SAFETY: Linux lets EL0 read CNTVCT_EL0 (CNTKCTL_EL1.EL0VCTEN is set
    // by the arch timer driver); the read has no side effects.
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

fn cntfrq_hz() -> u64 {
    let v: u64;
    // SAFETY: CNTFRQ_EL0 is readable from EL0; the read has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// The generic timer's rate is architecturally constant.
pub(crate) fn invariant() -> bool {
    true
}

/// Every aarch64 Linux lets user space read the count in order (ISB).
pub(crate) fn missing_ordered_read() -> Option<String> {
    None
}

/// CNTFRQ_EL0, the frequency firmware programmed.
pub(crate) fn frequency_register_hz() -> Option<u64> {
    Some(cntfrq_hz())
}

#[inline(always)]
pub(crate) fn read_fast() -> u64 {
    cntvct()
}

/// ISB;CNTVCT_EL0.
///
/// # Safety
/// None needed on aarch64; `unsafe` only to match the x86-64 signature.
#[inline(always)]
pub(crate) unsafe fn read_ordered() -> u64 {
    isb_cntvct()
}

/// CNTVCT_EL0 as a clock source: the fast read (ordered reads use ISB).
#[derive(Clone, Copy, Debug)]
pub struct Cntvct {
    scale: Scale,
}

/// ISB;CNTVCT_EL0 as a clock source: the ordered read.
#[derive(Clone, Copy, Debug)]
pub struct IsbCntvct {
    scale: Scale,
}

impl Cntvct {
    /// The generic timer at `scale`; every aarch64 Linux has it.
    pub fn new(scale: Scale) -> Self {
        Cntvct { scale }
    }
}

impl IsbCntvct {
    /// The ordered generic timer read at `scale`.
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

pub(crate) fn counter_supported(id: ClockId) -> Result<(), ClockError> {
    match id {
        ClockId::Cntvct | ClockId::IsbCntvct => Ok(()),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}

pub(crate) fn visit_counter<V: ClockVisitor>(id: ClockId, scale: Scale, visitor: V) -> Result<V::Output, ClockError> {
    match id {
        ClockId::Cntvct => Ok(visitor.visit(&Cntvct::new(scale))),
        ClockId::IsbCntvct => Ok(visitor.visit(&IsbCntvct::new(scale))),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}

pub(crate) fn visit_ordered<V: CounterVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    Ok(visitor.visit(IsbCntvct::new(scale)))
}

pub(crate) fn visit_pair<V: CounterPairVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    Ok(visitor.visit(IsbCntvct::new(scale), Cntvct::new(scale)))
}
