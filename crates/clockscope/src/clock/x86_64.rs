//! x86-64 counters: RDTSC (fast), RDTSCP (precise) and LFENCE;RDTSC, plus the
//! raw CPUID instruction. All of this file's unsafe code is here.
//!
//! RDTSC may be executed out of order with the instructions around it, which
//! is fine for EXPLAIN ANALYZE's per-row reads and what PostgreSQL 19 uses as
//! its "fast" read. RDTSCP waits for earlier instructions to retire, so it is
//! the "precise" read (track_io_timing); LFENCE;RDTSC is the other ordered
//! form the kernel uses when RDTSCP is missing. RDTSCP is only executed after
//! CPUID says the CPU has it: it raises SIGILL on CPUs and VMs that hide it.

use super::{ClockError, ClockId, ClockSource, ClockVisitor};
use crate::convert::Scale;
use crate::ticks::Ticks;
use core::arch::x86_64 as intr;

/// Raw CPUID: `[eax, ebx, ecx, edx]` of `leaf`/`subleaf`.
#[inline]
pub fn cpuid(leaf: u32, subleaf: u32) -> [u32; 4] {
    // SAFETY: CPUID exists on every x86-64 CPU; it only writes the four
    // output registers, which the intrinsic returns.
    #[allow(unused_unsafe)]
    let r = unsafe { intr::__cpuid_count(leaf, subleaf) };
    [r.eax, r.ebx, r.ecx, r.edx]
}

/// Whether CPUID reports RDTSCP (leaf 0x8000_0001, EDX bit 27).
pub fn cpu_has_rdtscp() -> bool {
    let max_ext = cpuid(0x8000_0000, 0)[0];
    max_ext >= 0x8000_0001 && cpuid(0x8000_0001, 0)[3] & (1 << 27) != 0
}

/// Whether CPUID reports a TSC at all (leaf 1, EDX bit 4).
pub fn cpu_has_tsc() -> bool {
    cpuid(0, 0)[0] >= 1 && cpuid(1, 0)[3] & (1 << 4) != 0
}

#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU (checked by `cpu_has_tsc`
    // before a counter is built); it only reads the time-stamp counter.
    #[allow(unused_unsafe)]
    unsafe {
        intr::_rdtsc()
    }
}

#[inline(always)]
fn rdtscp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: only called through `Rdtscp`/`Rdtsc::now_ordered`, which are
    // built after `cpu_has_rdtscp` confirmed the instruction; it writes the
    // TSC_AUX value into `aux`, a valid local.
    #[allow(unused_unsafe)]
    unsafe {
        intr::__rdtscp(&mut aux)
    }
}

#[inline(always)]
fn lfence_rdtsc() -> u64 {
    // SAFETY: LFENCE (SSE2, part of x86-64) and RDTSC exist on every x86-64
    // CPU; the fence only orders the following RDTSC after earlier loads.
    #[allow(unused_unsafe)]
    unsafe {
        intr::_mm_lfence();
        intr::_rdtsc()
    }
}

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
        Ticks::from_raw(rdtscp())
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
        Ticks::from_raw(rdtscp())
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
