//! Linux's CPUID rules (`native_calibrate_tsc`) and the derivation of every
//! leaf-0x15, leaf-0x16 and hypervisor-leaf frequency, in 128-bit integers
//! (see [`super`]).

use crate::tsc::cpuid::{CpuidFacts, Leaf15};
use crate::tsc::source::SourceId;

/// Linux 4.10-5.0's crystal table for leaf 0x15 without ECX (Intel family 6).
pub(crate) fn linux_implied_crystal_khz(f: &CpuidFacts) -> Option<u32> {
    if !f.is_intel() || f.family != 6 {
        return None;
    }
    match f.model {
        0x4E | 0x5E | 0x8E | 0x9E => Some(24_000), // Skylake / Kaby Lake client
        0x55 => Some(25_000),                      // Skylake-X / Skylake-SP
        0x5C => Some(19_200),                      // Goldmont (Apollo Lake)
        0x5F => Some(25_000),                      // Goldmont-D (Denverton)
        _ => None,
    }
}

/// Leaf 0x15's ratio, or why it cannot be used.
fn leaf15_ratio(f: &CpuidFacts) -> Result<Leaf15, String> {
    let l = f
        .leaf_15
        .ok_or_else(|| format!("leaf 0x15 not reported (highest basic leaf is {:#x})", f.max_basic_leaf))?;
    if l.eax_denominator == 0 || l.ebx_numerator == 0 {
        return Err(format!(
            "leaf 0x15 ratio not enumerated (EAX = {}, EBX = {})",
            l.eax_denominator, l.ebx_numerator
        ));
    }
    Ok(l)
}

/// crystal * EBX / EAX in 128 bits (cannot overflow: at most 2^64 * 2^32),
/// saturated to `u64` (only reachable with a crystal beyond any plausible one).
fn ratio_khz(crystal_khz: u64, l: &Leaf15) -> u64 {
    let khz = crystal_khz as u128 * l.ebx_numerator as u128 / l.eax_denominator as u128;
    u64::try_from(khz).unwrap_or(u64::MAX)
}

/// The crystal Linux derives from leaf 0x16 when 0x15 ECX is 0, in kHz:
/// base_MHz * 1000 * EAX / EBX, in 128 bits.
fn crystal_from16_khz(base_mhz: u64, l: &Leaf15) -> u64 {
    let khz = base_mhz as u128 * 1000 * l.eax_denominator as u128 / l.ebx_numerator as u128;
    u64::try_from(khz).unwrap_or(u64::MAX)
}

/// The crystal a leaf-0x15 source multiplies, in Hz, for the plausibility
/// check: ECX, Linux 4.x's table value, or the one derived from leaf 0x16.
pub(crate) fn crystal_hz_of(id: SourceId, f: &CpuidFacts) -> Option<u64> {
    let l = leaf15_ratio(f).ok()?;
    match id {
        SourceId::Cpuid15 => (l.ecx_crystal_hz != 0).then_some(l.ecx_crystal_hz as u64),
        SourceId::Cpuid15ImpliedCrystal if l.ecx_crystal_hz == 0 => {
            linux_implied_crystal_khz(f).map(|k| k as u64 * 1000)
        }
        SourceId::Cpuid15CrystalFrom16 if l.ecx_crystal_hz == 0 => {
            let base = f.leaf_16.filter(|l16| l16.base_mhz > 0)?.base_mhz as u64;
            Some(crystal_from16_khz(base, &l).saturating_mul(1000))
        }
        _ => None,
    }
}

/// Leaf 0x15 with the crystal it enumerates: (ECX / 1000) * EBX / EAX kHz.
pub(crate) fn cpuid15_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz == 0 {
        return Err(format!(
            "crystal not enumerated (ECX = 0; ratio {}/{})",
            l.ebx_numerator, l.eax_denominator
        ));
    }
    let crystal_khz = l.ecx_crystal_hz as u64 / 1000;
    Ok((
        ratio_khz(crystal_khz, &l),
        format!(
            "crystal {} Hz (ECX) * {}/{}",
            l.ecx_crystal_hz, l.ebx_numerator, l.eax_denominator
        ),
    ))
}

/// Leaf 0x15 with Linux 4.10-5.0's model table when ECX is 0.
pub(crate) fn cpuid15_implied_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz != 0 {
        return Err("not needed: leaf 0x15 enumerates the crystal".to_string());
    }
    let crystal_khz = linux_implied_crystal_khz(f).ok_or_else(|| {
        format!(
            "{} family {:#x} model {:#x} is not in Linux 4.x's crystal table",
            f.vendor, f.family, f.model
        )
    })?;
    Ok((
        ratio_khz(crystal_khz as u64, &l),
        format!(
            "model {:#x}: {} kHz crystal * {}/{}",
            f.model, crystal_khz, l.ebx_numerator, l.eax_denominator
        ),
    ))
}

/// Leaf 0x15 with the crystal derived from leaf 0x16, in integer kHz as Linux
/// computes it: crystal = base_MHz * 1000 * EAX / EBX; TSC = crystal * EBX / EAX.
pub(crate) fn cpuid15_from16_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz != 0 {
        return Err("not needed: leaf 0x15 enumerates the crystal".to_string());
    }
    let base_mhz = match f.leaf_16 {
        Some(l16) if l16.base_mhz > 0 => l16.base_mhz as u64,
        Some(_) => return Err("leaf 0x16 base frequency is 0".to_string()),
        None => {
            return Err(format!(
                "leaf 0x16 not reported (highest basic leaf is {:#x})",
                f.max_basic_leaf
            ))
        }
    };
    let crystal_khz = crystal_from16_khz(base_mhz, &l);
    if crystal_khz == 0 {
        return Err("derived crystal is 0 kHz".to_string());
    }
    Ok((
        ratio_khz(crystal_khz, &l),
        format!(
            "crystal {base_mhz} MHz * {}/{} = {crystal_khz} kHz, * {}/{}",
            l.eax_denominator, l.ebx_numerator, l.ebx_numerator, l.eax_denominator
        ),
    ))
}

/// Leaf 0x16 base frequency: EAX MHz * 1000.
pub(crate) fn cpuid16_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    match f.leaf_16 {
        Some(l) if l.base_mhz > 0 => Ok((
            l.base_mhz as u64 * 1000,
            format!(
                "nominal base {} MHz (max {} MHz, bus {} MHz)",
                l.base_mhz, l.max_mhz, l.bus_mhz
            ),
        )),
        Some(_) => Err("leaf 0x16 is zero".to_string()),
        None => Err(format!(
            "leaf 0x16 not reported (highest basic leaf is {:#x})",
            f.max_basic_leaf
        )),
    }
}

/// Hypervisor leaf 0x40000010 EAX, whatever the hypervisor.
pub(crate) fn hypervisor_khz(f: &CpuidFacts) -> Result<(u64, String), String> {
    if !f.hypervisor_bit {
        return Err("no hypervisor bit (leaf 1 ECX bit 31)".to_string());
    }
    let h = f
        .hypervisor
        .as_ref()
        .ok_or_else(|| "hypervisor leaf 0x40000000 not read".to_string())?;
    let pg = if h.is_vmware_or_kvm() {
        "PostgreSQL accepts this signature"
    } else {
        "PostgreSQL ignores it: not VMwareVMware/KVMKVMKVM"
    };
    match h.timing_leaf_tsc_khz {
        None => Err(format!(
            "\"{}\" highest leaf {:#010x} < 0x40000010",
            h.signature, h.max_leaf
        )),
        Some(0) => Err(format!("\"{}\" leaf 0x40000010 EAX = 0", h.signature)),
        Some(k) => Ok((k as u64, format!("\"{}\" EAX; {pg}", h.signature))),
    }
}

/// "ACRNACRNACRN" as EBX, ECX, EDX.
const SIGNATURE_ACRN: [u32; 3] = [0x4e52_4341, 0x4e52_4341, 0x4e52_4341];

/// Whether Linux takes the TSC frequency from the hypervisor in this guest:
/// VMware (`vmware_platform_setup`: the GETHZ backdoor, whose value VMware
/// also publishes as leaf 0x40000010 EAX) and ACRN (`acrn_get_tsc_khz`:
/// leaf 0x40000010 EAX). Other hypervisors' leaf 0x40000010 is not Linux's.
fn linux_trusts_hypervisor_leaf(f: &CpuidFacts) -> bool {
    f.hypervisor_bit
        && f.hypervisor.as_ref().is_some_and(|h| {
            h.signature_regs == crate::tsc::cpuid::SIGNATURE_VMWARE || h.signature_regs == SIGNATURE_ACRN
        })
}

/// The name of the Linux rule behind a [`linux_cpuid_khz`] source.
pub(crate) const fn linux_rule_label(id: SourceId) -> &'static str {
    match id {
        SourceId::Cpuid15 => "leaf 0x15: crystal (ECX) x EBX/EAX",
        SourceId::Cpuid15ImpliedCrystal => "leaf 0x15 with Linux's known crystal (Goldmont-D: 25 MHz) x EBX/EAX",
        SourceId::Cpuid15CrystalFrom16 => "leaf 0x15 with the crystal derived from leaf 0x16 base MHz",
        SourceId::Cpuid16 => "leaf 0x16 base MHz (cpu_khz_from_cpuid; the kernel refines it later)",
        SourceId::Hypervisor40000010 => "hypervisor leaf 0x40000010 EAX (VMware/ACRN guest)",
        _ => "not a CPUID rule",
    }
}

/// Current Linux's CPUID rules for the TSC frequency (see the module
/// documentation): in a VMware or ACRN guest the hypervisor's frequency
/// (leaf 0x40000010 EAX); else on Intel `native_calibrate_tsc` (leaf 0x15),
/// else `cpu_khz_from_cpuid` (leaf 0x16 base MHz, which Linux uses as the
/// TSC frequency when 0x15 gives none). Returns the kHz and which source it
/// amounts to.
pub(crate) fn linux_cpuid_khz(f: &CpuidFacts) -> Result<(u64, SourceId, String), String> {
    let mut why_not_hypervisor = None;
    if linux_trusts_hypervisor_leaf(f) {
        match hypervisor_khz(f) {
            Ok((k, n)) => return Ok((k, SourceId::Hypervisor40000010, n)),
            Err(e) => why_not_hypervisor = Some(e),
        }
    }
    if !f.is_intel() {
        let mut why = format!("Linux reads the TSC frequency from CPUID on Intel only ({})", f.vendor);
        if let Some(e) = why_not_hypervisor {
            why = format!("{e}; {why}");
        }
        return Err(why);
    }
    linux_leaf15_khz(f).or_else(|e15| match cpuid16_khz(f) {
        Ok((k, n)) => Ok((k, SourceId::Cpuid16, format!("{n}; leaf 0x15: {e15}"))),
        Err(e16) => Err(format!("{e15}; {e16}")),
    })
}

/// `native_calibrate_tsc`'s leaf-0x15 rule (Intel).
fn linux_leaf15_khz(f: &CpuidFacts) -> Result<(u64, SourceId, String), String> {
    let l = leaf15_ratio(f)?;
    if l.ecx_crystal_hz != 0 {
        return cpuid15_khz(f).map(|(k, n)| (k, SourceId::Cpuid15, n));
    }
    if f.family == 6 && f.model == 0x5F {
        // Denverton: no crystal and no leaf 0x16; the kernel hardcodes 25 MHz.
        return Ok((
            ratio_khz(25_000, &l),
            SourceId::Cpuid15ImpliedCrystal,
            format!(
                "Goldmont-D: 25000 kHz crystal * {}/{}",
                l.ebx_numerator, l.eax_denominator
            ),
        ));
    }
    cpuid15_from16_khz(f).map(|(k, n)| (k, SourceId::Cpuid15CrystalFrom16, n))
}
