//! The x86-64 reads behind `clockscope::instant` in counter mode: RDTSC for
//! `now()`, RDTSCP for `now_precise()`. All of this module's unsafe code.
//!
//! Counter mode is only chosen after CPUID reported both a TSC (leaf 1 EDX
//! bit 4) and RDTSCP (leaf 0x8000_0001 EDX bit 27) and clockscope's TSC
//! decision trusted the counter, so neither read can raise SIGILL.

use core::arch::x86_64 as intr;

/// RDTSC: the fast read.
#[inline(always)]
pub(super) fn read_fast() -> u64 {
    // SAFETY: RDTSC exists on every x86-64 CPU; counter mode is entered only
    // after CPUID reported the TSC. It only reads the time-stamp counter.
    #[allow(unused_unsafe)]
    unsafe {
        intr::_rdtsc()
    }
}

/// RDTSCP: the read that waits for earlier instructions to finish.
///
/// # Safety
/// The CPU must have RDTSCP (CPUID 0x8000_0001 EDX bit 27); without it the
/// instruction raises SIGILL. `clockscope::instant` calls this only in
/// counter mode, which requires that bit.
#[inline(always)]
pub(super) unsafe fn read_ordered() -> u64 {
    let mut aux = 0u32;
    // SAFETY: the caller guarantees RDTSCP exists; it writes TSC_AUX into
    // `aux`, a valid local.
    #[allow(unused_unsafe)]
    unsafe {
        intr::__rdtscp(&mut aux)
    }
}
