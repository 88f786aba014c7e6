//! x86-64 counters as clock sources: RDTSC (fast), RDTSCP (precise) and
//! LFENCE;RDTSC. The instructions themselves, and CPUID, are in
//! `cpu/x86_64.rs` (re-exported here for the CPUID reader).
//!
//! RDTSC may be executed out of order with the instructions around it, which
//! is fine for EXPLAIN ANALYZE's per-row reads and what PostgreSQL 19 uses as
//! its "fast" read. RDTSCP waits for earlier instructions to retire, so it is
//! the "precise" read (track_io_timing); LFENCE;RDTSC is the other ordered
//! form the kernel uses when RDTSCP is missing. RDTSCP is only executed after
//! CPUID says the CPU has it: it raises SIGILL on CPUs and VMs that hide it.

use super::{ClockError, ClockId, ClockSource, ClockVisitor};
use crate::convert::Scale;
use crate::cpu::{lfence_rdtsc, rdtsc, rdtscp};
use crate::ticks::Ticks;

pub use crate::cpu::{cpu_has_rdtscp, cpu_has_tsc, cpuid};

/// RDTSC: PostgreSQL 19's fast TSC read (EXPLAIN ANALYZE). Start and end of a
/// measuring loop use RDTSCP, as PostgreSQL does.
#[derive(Clone, Copy, Debug)]
pub struct Rdtsc {
    scale: Scale,
}

/// RDTSCP: PostgreSQL 19's precise TSC read.
#[derive(Clone, Copy, Debug)]
pub struct Rdtscp {
    scale: Scale,
}

/// LFENCE;RDTSC: an ordered read without RDTSCP.
#[derive(Clone, Copy, Debug)]
pub struct LfenceRdtsc {
    scale: Scale,
}

impl Rdtsc {
    /// A fast TSC clock at `scale`; `None` without RDTSCP (its ordered reads
    /// use RDTSCP, as PostgreSQL's do).
    pub fn new(scale: Scale) -> Option<Self> {
        (cpu_has_tsc() && cpu_has_rdtscp()).then_some(Rdtsc { scale })
    }
}

impl Rdtscp {
    /// A precise TSC clock at `scale`; `None` when the CPU lacks RDTSCP.
    pub fn new(scale: Scale) -> Option<Self> {
        (cpu_has_tsc() && cpu_has_rdtscp()).then_some(Rdtscp { scale })
    }
}

impl LfenceRdtsc {
    /// An LFENCE-ordered TSC clock at `scale`; `None` without a TSC.
    pub fn new(scale: Scale) -> Option<Self> {
        cpu_has_tsc().then_some(LfenceRdtsc { scale })
    }
}

impl ClockSource for Rdtsc {
    fn name(&self) -> &'static str {
        "RDTSC"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        Ticks::from_raw(rdtsc())
    }
    #[inline(always)]
    fn now_ordered(&self) -> Ticks {
        // SAFETY: an `Rdtsc` is only built after `cpu_has_rdtscp`.
        Ticks::from_raw(unsafe { rdtscp() })
    }
    fn scale(&self) -> Scale {
        self.scale
    }
}

impl ClockSource for Rdtscp {
    fn name(&self) -> &'static str {
        "RDTSCP"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        // SAFETY: an `Rdtscp` is only built after `cpu_has_rdtscp`.
        Ticks::from_raw(unsafe { rdtscp() })
    }
    fn scale(&self) -> Scale {
        self.scale
    }
}

impl ClockSource for LfenceRdtsc {
    fn name(&self) -> &'static str {
        "LFENCE;RDTSC"
    }
    #[inline(always)]
    fn now(&self) -> Ticks {
        Ticks::from_raw(lfence_rdtsc())
    }
    fn scale(&self) -> Scale {
        self.scale
    }
}

/// Whether counter `id` can be read on this CPU.
pub(super) fn counter_supported(id: ClockId) -> Result<(), ClockError> {
    match id {
        ClockId::Rdtsc | ClockId::Rdtscp if !cpu_has_rdtscp() => Err(ClockError::NotSupportedByCpu(
            id.display_name(),
            "CPUID 0x80000001 EDX bit 27 (RDTSCP) is clear",
        )),
        ClockId::Rdtsc | ClockId::Rdtscp | ClockId::LfenceRdtsc if !cpu_has_tsc() => Err(
            ClockError::NotSupportedByCpu(id.display_name(), "CPUID 1 EDX bit 4 (TSC) is clear"),
        ),
        ClockId::Rdtsc | ClockId::Rdtscp | ClockId::LfenceRdtsc => Ok(()),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}

pub(super) fn visit_counter<V: ClockVisitor>(id: ClockId, scale: Scale, visitor: V) -> Result<V::Output, ClockError> {
    counter_supported(id)?;
    let unsupported = || ClockError::NotSupportedByCpu(id.display_name(), "the CPU lacks the instruction");
    match id {
        ClockId::Rdtsc => Ok(visitor.visit(&Rdtsc::new(scale).ok_or_else(unsupported)?)),
        ClockId::Rdtscp => Ok(visitor.visit(&Rdtscp::new(scale).ok_or_else(unsupported)?)),
        ClockId::LfenceRdtsc => Ok(visitor.visit(&LfenceRdtsc::new(scale).ok_or_else(unsupported)?)),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}
