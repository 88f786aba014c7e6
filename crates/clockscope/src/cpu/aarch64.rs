//! aarch64: the instructions that read the generic timer's virtual count
//! (CNTVCT_EL0, ISB;CNTVCT_EL0) and its frequency register CNTFRQ_EL0. Every
//! unsafe block that executes one of them is here; `clock::arch` and
//! `counter::arch` build on these functions.

/// CNTVCT_EL0: the virtual count, unordered.
#[inline(always)]
pub fn cntvct() -> u64 {
    let v: u64;
    // SAFETY: Linux lets EL0 read CNTVCT_EL0 (CNTKCTL_EL1.EL0VCTEN is set
    // by the arch timer driver); the read has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// ISB;CNTVCT_EL0: the virtual count, not read before earlier instructions complete.
#[inline(always)]
pub fn isb_cntvct() -> u64 {
    let v: u64;
    // SAFETY: ISB only synchronises the instruction stream; the counter read
    // is as in `cntvct`.
    unsafe { core::arch::asm!("isb", "mrs {}, cntvct_el0", out(reg) v, options(nostack, preserves_flags)) };
    v
}

/// The counter frequency from CNTFRQ_EL0, in Hz (0 when firmware left it unset).
pub fn cntfrq_hz() -> u64 {
    let v: u64;
    // SAFETY: CNTFRQ_EL0 is readable from EL0; the read has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntfrq_el0", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}
