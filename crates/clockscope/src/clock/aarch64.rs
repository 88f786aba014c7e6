//! aarch64 counters as clock sources: the ARM generic timer's virtual count
//! CNTVCT_EL0 (fast) and ISB;CNTVCT_EL0 (ordered), with the frequency from
//! CNTFRQ_EL0. The register reads themselves are in `cpu/aarch64.rs`.

use super::{ClockError, ClockId, ClockSource, ClockVisitor};
use crate::convert::Scale;
use crate::cpu::{cntvct, isb_cntvct};
use crate::ticks::Ticks;

pub use crate::cpu::cntfrq_hz;

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
    /// The read, converted to ns with `scale` (CNTFRQ_EL0's frequency).
    pub fn new(scale: Scale) -> Self {
        Cntvct { scale }
    }
}

impl IsbCntvct {
    /// The ordered read, converted to ns with `scale` (CNTFRQ_EL0's frequency).
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
