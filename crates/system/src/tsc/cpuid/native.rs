//! The CPUID instruction of this CPU as a [`CpuIdReader`] (x86-64 only; the
//! instruction itself is `clockscope::cpu::cpuid`, where the unsafe
//! code lives).

use super::{CpuIdReader, CpuIdResult};

/// This CPU's CPUID.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeCpuid;

impl CpuIdReader for NativeCpuid {
    fn cpuid2(&self, eax: u32, ecx: u32) -> CpuIdResult {
        let r = raw_cpuid::native_cpuid::cpuid_count(eax, ecx);
        CpuIdResult {
            eax: r.eax,
            ebx: r.ebx,
            ecx: r.ecx,
            edx: r.edx,
        }
    }
}
