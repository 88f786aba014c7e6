//! x86-64: the time-stamp counter's reads (RDTSC, RDTSCP, LFENCE;RDTSC) and
//! the CPUID instruction that says which exist. All of the TSC's unsafe code
//! is here; `clock::arch` builds its clock sources on these reads and
//! `instant` calls them directly.
//!
//! RDTSC may be executed out of order with the instructions around it, which
//! is fine for EXPLAIN ANALYZE's per-row reads and what PostgreSQL 19 uses as
//! its "fast" read. RDTSCP waits for earlier instructions to retire, so it is
//! the "precise" read (track_io_timing); LFENCE;RDTSC is the other ordered
//! form the kernel uses when RDTSCP is missing. RDTSCP is only executed after
//! CPUID says the CPU has it: it raises SIGILL on CPUs and VMs that hide it.

use super::{CounterKind, CounterPairVisitor, CounterVisitor};
use crate::clock::arch::{LfenceRdtsc, Rdtsc, Rdtscp};
use crate::clock::ClockId;
use crate::convert::Scale;
use core::arch::x86_64 as intr;

/// The counter of this architecture.
pub const KIND: Option<CounterKind> = Some(CounterKind::Tsc);
/// The fast read (`Instant::now`, EXPLAIN's per-row read).
pub const FAST: Option<ClockId> = Some(ClockId::Rdtsc);
/// The ordered read (`Instant::now_precise`, calibration, cross-CPU tests).
pub const PRECISE: Option<ClockId> = Some(ClockId::Rdtscp);

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

/// Why the counter cannot be read in order here, or `None` when it can
/// (checked before anything executes RDTSCP).
pub fn missing_ordered_read() -> Option<String> {
    if !cpu_has_tsc() {
        Some("the CPU reports no TSC (CPUID 1 EDX bit 4 clear)".to_string())
    } else if !cpu_has_rdtscp() {
        Some("the CPU reports no RDTSCP (CPUID 0x80000001 EDX bit 27 clear), so no ordered TSC read".to_string())
    } else {
        None
    }
}

/// RDTSC: the time-stamp counter, unordered.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU; it only reads the
    // time-stamp counter (CR4.TSD, which would make it fault in user mode,
    // is never set by Linux).
    #[allow(unused_unsafe)]
    unsafe {
        intr::_rdtsc()
    }
}

/// RDTSCP: the time-stamp counter, read after earlier instructions retire.
///
/// # Safety
/// The CPU must have RDTSCP ([`cpu_has_rdtscp`]); without it the
/// instruction raises SIGILL.
#[inline(always)]
pub unsafe fn rdtscp() -> u64 {
    let mut aux = 0u32;
    // SAFETY: the caller guarantees RDTSCP exists; it writes TSC_AUX into
    // `aux`, a valid local.
    #[allow(unused_unsafe)]
    unsafe {
        intr::__rdtscp(&mut aux)
    }
}

/// LFENCE;RDTSC: an ordered read without RDTSCP.
#[inline(always)]
pub fn lfence_rdtsc() -> u64 {
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
pub fn read_fast() -> u64 {
    rdtsc()
}

/// `Instant::now_precise()` in counter mode: RDTSCP.
///
/// # Safety
/// As [`rdtscp`]: the CPU must have RDTSCP. `clockscope::instant` enters
/// counter mode only after [`missing_ordered_read`] found nothing missing.
#[inline(always)]
pub unsafe fn read_ordered() -> u64 {
    // SAFETY: the caller guarantees RDTSCP exists.
    unsafe { rdtscp() }
}

/// Hands the ordered read to `visitor`: RDTSCP, or LFENCE;RDTSC where
/// RDTSCP is hidden; `Err` without a TSC.
pub fn visit_ordered<V: CounterVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    if let Some(c) = Rdtscp::new(scale) {
        Ok(visitor.visit(c))
    } else if let Some(c) = LfenceRdtsc::new(scale) {
        Ok(visitor.visit(c))
    } else {
        Err("the CPU reports no TSC (CPUID 1 EDX bit 4)")
    }
}

/// Hands the read PostgreSQL 19 calibrates with (RDTSCP) to `visitor`.
pub fn visit_postgresql_precise<V: CounterVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    Rdtscp::new(scale)
        .map(|c| visitor.visit(c))
        .ok_or("the CPU lacks RDTSCP, which PostgreSQL's TSC support requires")
}

/// Hands PostgreSQL 19's precise and fast reads (RDTSCP, RDTSC) to
/// `visitor`; `Err` without RDTSCP, which PostgreSQL's TSC clock needs.
pub fn visit_pair<V: CounterPairVisitor>(scale: Scale, visitor: V) -> Result<V::Output, &'static str> {
    match (Rdtscp::new(scale), Rdtsc::new(scale)) {
        (Some(p), Some(f)) => Ok(visitor.visit(p, f)),
        _ => Err("this CPU does not report RDTSCP, which PostgreSQL 19 needs for its TSC"),
    }
}

/// The counter's frequency register (CNTFRQ_EL0 on aarch64; the TSC has none).
pub fn frequency_register_hz() -> Option<u64> {
    None
}
