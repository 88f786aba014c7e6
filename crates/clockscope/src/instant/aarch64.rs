//! The aarch64 reads behind `clockscope::instant` in counter mode:
//! CNTVCT_EL0 for `now()`, ISB;CNTVCT_EL0 for `now_precise()`. All of this
//! module's unsafe code.

/// CNTVCT_EL0: the fast read.
#[inline(always)]
pub(super) fn read_fast() -> u64 {
    let v: u64;
    // SAFETY: Linux lets EL0 read CNTVCT_EL0 (CNTKCTL_EL1.EL0VCTEN is set
    // by the arch timer driver); the read has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// ISB;CNTVCT_EL0: the read not taken before earlier instructions complete.
///
/// # Safety
/// None beyond [`read_fast`]'s; `unsafe` only to share the x86-64
/// signature, where the ordered read needs a CPUID check.
#[inline(always)]
pub(super) unsafe fn read_ordered() -> u64 {
    let v: u64;
    // SAFETY: ISB only synchronises the instruction stream; the counter read
    // is as in `read_fast`.
    unsafe { core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nostack, preserves_flags)) };
    v
}
