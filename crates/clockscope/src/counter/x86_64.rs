//! x86-64: the time-stamp counter as the counter layer sees it: which reads
//! are fast and ordered, whether the CPU has them, and visitors over
//! `clock::arch`'s sources. The instructions (RDTSC, RDTSCP, LFENCE;RDTSC,
//! CPUID) are [`crate::cpu`]'s, re-exported here; `instant` calls them through
//! this module.
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
pub use crate::cpu::{cpu_has_rdtscp, cpu_has_tsc, cpuid, lfence_rdtsc, rdtsc, rdtscp};

/// The counter of this architecture.
pub const KIND: Option<CounterKind> = Some(CounterKind::Tsc);
/// The fast read (`Instant::now`, EXPLAIN's per-row read).
pub const FAST: Option<ClockId> = Some(ClockId::Rdtsc);
/// The ordered read (`Instant::now_precise`, calibration, cross-CPU tests).
pub const PRECISE: Option<ClockId> = Some(ClockId::Rdtscp);

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
