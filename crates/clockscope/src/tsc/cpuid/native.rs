//! The CPUID instruction of this CPU as a [`CpuIdReader`] (x86-64 only; the
//! instruction itself is `clockscope::cpu::cpuid`, where the unsafe
//! code lives).

use super::{CpuIdReader, CpuIdResult};
use crate::cpu as arch;

/// This CPU's CPUID.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeCpuid;

impl CpuIdReader for NativeCpuid {
    fn cpuid2(&self, eax: u32, ecx: u32) -> CpuIdResult {
        let [a, b, c, d] = arch::cpuid(eax, ecx);
        CpuIdResult {
            eax: a,
            ebx: b,
            ecx: c,
            edx: d,
        }
    }
}
