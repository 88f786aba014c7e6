//! x86-64: the time-stamp counter. The one place that executes RDTSC, RDTSCP
//! and LFENCE;RDTSC, and the CPUID checks that say which of them exist.
//!
//! RDTSC may be executed out of order with the instructions around it, which
//! is fine for EXPLAIN ANALYZE's per-row reads and what PostgreSQL 19 uses as
//! its "fast" read. RDTSCP waits for earlier instructions to retire, so it is
//! the "precise" read (track_io_timing); LFENCE;RDTSC is the other ordered
//! form the kernel uses when RDTSCP is missing. RDTSCP is only executed after
//! CPUID says the CPU has it: it raises SIGILL on CPUs and VMs that hide it.

use crate::clock::{ClockError, ClockId, ClockSource, ClockVisitor};
use crate::convert::Scale;
use crate::counter::{CounterKind, CounterPairVisitor, CounterVisitor};
use crate::ticks::Ticks;
use core::arch::x86_64 as intr;

pub(crate) const KIND: Option<CounterKind> = Some(CounterKind::Tsc);

/// Raw CPUID: `[eax, ebx, ecx, edx]` of `leaf`/`subleaf`.
fn cpuid(leaf: u32, subleaf: u32) -> [u32; 4] {
    // SAFETY: CPUID exists on every x86-64 CPU; it only writes the four
    // output registers, which the intrinsic returns.
    #[allow(unused_unsafe)]
    let r = unsafe { intr::__cpuid_count(leaf, subleaf) };
    [r.eax, r.ebx, r.ecx, r.edx]
}

fn has_rdtscp() -> bool {
    let max_ext = cpuid(0x8000_0000, 0)[0];
    max_ext >= 0x8000_0001 && cpuid(0x8000_0001, 0)[3] & (1 << 27) != 0
}

fn has_tsc() -> bool {
    cpuid(0, 0)[0] >= 1 && cpuid(1, 0)[3] & (1 << 4) != 0
}

/// Whether CPUID reports an invariant TSC (leaf 0x8000_0007, EDX bit 8): one
/// rate in every P-, C- and T-state.
pub(crate) fn invariant() -> bool {
    let max_ext = cpuid(0x8000_0000, 0)[0];
    max_ext >= 0x8000_0007 && cpuid(0x8000_0007, 0)[3] & (1 << 8) != 0
}

/// Why the counter cannot be read in order here, or `None` when it can
/// (checked before anything executes RDTSCP).
pub(crate) fn missing_ordered_read() -> Option<String> {
    if !has_tsc() {
        Some("the CPU reports no TSC (CPUID 1 EDX bit 4 clear)".to_string())
    } else if !has_rdtscp() {
        Some("the CPU reports no RDTSCP (CPUID 0x80000001 EDX bit 27 clear), so no ordered TSC read".to_string())
    } else {
        None
    }
}

/// The counter's frequency register (the TSC has none).
pub(crate) fn frequency_register_hz() -> Option<u64> {
    None
}

#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU; it only reads the
    // time-stamp counter (CR4.TSD, which would make it fault in user mode,
    // is never set by Linux).
    #[allow(unused_unsafe)]
    unsafe {
        intr::_rdtsc()
    }
}

/// RDTSCP.
///
/// # Safety
/// The CPU must have RDTSCP ([`missing_ordered_read`] is `None`); without it
/// the instruction raises SIGILL.
#[inline(always)]
unsafe fn rdtscp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: the caller guarantees RDTSCP exists; it writes TSC_AUX into
    // `aux`, a valid local.
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

/// `Instant::now()` in counter mode: RDTSC.
#[inline(always)]
pub(crate) fn read_fast() -> u64 {
    rdtsc()
}

/// `Instant::now_precise()` in counter mode: RDTSCP.
///
/// # Safety
/// As [`rdtscp`]: the CPU must have RDTSCP. `Instant` enters counter mode
/// only after [`missing_ordered_read`] found nothing missing.
#[inline(always)]
pub(crate) unsafe fn read_ordered() -> u64 {
    // SAFETY: the caller guarantees RDTSCP exists.
    unsafe { rdtscp() }
}

/// RDTSC as a clock source: PostgreSQL 19's fast TSC read (EXPLAIN ANALYZE).
/// Its ordered reads (the start and end of a measuring loop) use RDTSCP, as
/// PostgreSQL's do.
///
/// ```
/// use clockscope::{ClockSource, Rdtsc, Scale};
/// if let Some(tsc) = Rdtsc::new(Scale::from_khz(2_600_000).unwrap()) {
///     let (a, b) = (tsc.now_ordered(), tsc.now_ordered());
///     assert!(b.delta_since(a) >= 0);
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Rdtsc {
    scale: Scale,
}

/// RDTSCP as a clock source: PostgreSQL 19's precise TSC read.
///
/// ```
/// use clockscope::{ClockSource, Rdtscp, Scale};
/// if let Some(tsc) = Rdtscp::new(Scale::from_khz(2_600_000).unwrap()) {
///     assert_eq!(tsc.name(), "RDTSCP");
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Rdtscp {
    scale: Scale,
}

/// LFENCE;RDTSC as a clock source: an ordered read without RDTSCP.
///
/// ```
/// use clockscope::{ClockSource, LfenceRdtsc, Scale};
/// let tsc = LfenceRdtsc::new(Scale::from_khz(2_600_000).unwrap()).expect("every x86-64 CPU has a TSC");
/// let (a, b) = (tsc.now(), tsc.now());
/// assert!(b.delta_since(a) >= 0);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LfenceRdtsc {
    scale: Scale,
}

impl Rdtsc {
    /// A fast TSC clock at `scale`; `None` without RDTSCP (its ordered reads
    /// use RDTSCP, as PostgreSQL's do).
    pub fn new(scale: Scale) -> Option<Self> {
        (has_tsc() && has_rdtscp()).then_some(Rdtsc { scale })
    }
}

impl Rdtscp {
    /// A precise TSC clock at `scale`; `None` when the CPU lacks RDTSCP.
    pub fn new(scale: Scale) -> Option<Self> {
        (has_tsc() && has_rdtscp()).then_some(Rdtscp { scale })
    }
}

impl LfenceRdtsc {
    /// An LFENCE-ordered TSC clock at `scale`; `None` without a TSC.
    pub fn new(scale: Scale) -> Option<Self> {
        has_tsc().then_some(LfenceRdtsc { scale })
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
        // SAFETY: an `Rdtsc` is only built after `has_rdtscp`.
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
        // SAFETY: an `Rdtscp` is only built after `has_rdtscp`.
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
pub(crate) fn counter_supported(id: ClockId) -> Result<(), ClockError> {
    match id {
        ClockId::Rdtsc | ClockId::Rdtscp if !has_rdtscp() => Err(ClockError::NotSupportedByCpu(
            id.display_name(),
            "CPUID 0x80000001 EDX bit 27 (RDTSCP) is clear",
        )),
        ClockId::Rdtsc | ClockId::Rdtscp | ClockId::LfenceRdtsc if !has_tsc() => Err(ClockError::NotSupportedByCpu(
            id.display_name(),
            "CPUID 1 EDX bit 4 (TSC) is clear",
        )),
        ClockId::Rdtsc | ClockId::Rdtscp | ClockId::LfenceRdtsc => Ok(()),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}

pub(crate) fn visit_counter<V: ClockVisitor>(id: ClockId, scale: Scale, visitor: V) -> Result<V::Output, ClockError> {
    counter_supported(id)?;
    let unsupported = || ClockError::NotSupportedByCpu(id.display_name(), "the CPU lacks the instruction");
    match id {
        ClockId::Rdtsc => Ok(visitor.visit(&Rdtsc::new(scale).ok_or_else(unsupported)?)),
        ClockId::Rdtscp => Ok(visitor.visit(&Rdtscp::new(scale).ok_or_else(unsupported)?)),
        ClockId::LfenceRdtsc => Ok(visitor.visit(&LfenceRdtsc::new(scale).ok_or_else(unsupported)?)),
        _ => Err(ClockError::OtherArchitecture(id.display_name())),
    }
}

/// The ordered read: RDTSCP, or LFENCE;RDTSC where RDTSCP is hidden.
pub(crate) fn visit_ordered<V: CounterVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    if let Some(c) = Rdtscp::new(scale) {
        Ok(visitor.visit(c))
    } else if let Some(c) = LfenceRdtsc::new(scale) {
        Ok(visitor.visit(c))
    } else {
        Err("the CPU reports no TSC (CPUID 1 EDX bit 4)")
    }
}

/// PostgreSQL 19's precise and fast reads (RDTSCP, RDTSC).
pub(crate) fn visit_pair<V: CounterPairVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    match (Rdtscp::new(scale), Rdtsc::new(scale)) {
        (Some(p), Some(f)) => Ok(visitor.visit(p, f)),
        _ => Err("this CPU does not report RDTSCP, which PostgreSQL 19 needs for its TSC"),
    }
}
