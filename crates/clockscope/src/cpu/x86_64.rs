//! x86-64: the instructions that read the time-stamp counter (RDTSC, RDTSCP,
//! LFENCE;RDTSC) and CPUID, which says which exist. Every unsafe block that
//! executes one of them is here; `clock::arch` and `counter::arch` build on
//! these functions.

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
