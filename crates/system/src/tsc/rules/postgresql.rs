//! PostgreSQL 19's CPUID rules (`pg_initialize_timing`'s x86 branch): which
//! leaf gives the TSC frequency, in PostgreSQL's own `uint32`/`int32`
//! arithmetic (see [`super`]).

use super::implausible_tsc_khz;
use crate::tsc::cpuid::CpuidFacts;
use serde::Serialize;

/// PostgreSQL's `frequency_source` strings.
pub const PG_SOURCE_CPUID_15: &str = "x86, cpuid 0x15";
/// PostgreSQL's `frequency_source` for leaf 0x16.
pub const PG_SOURCE_CPUID_16: &str = "x86, cpuid 0x16";
pub(crate) const PG_SOURCE_HYPERVISOR: &str = "x86, hypervisor, cpuid 0x40000010";
/// PostgreSQL's `frequency_source` for its calibration.
pub const PG_SOURCE_CALIBRATION: &str = "x86, calibration";

/// PostgreSQL 19's CPUID outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PostgresCpuid {
    /// RDTSCP and invariant TSC are both present (otherwise PostgreSQL has no TSC).
    pub tsc_usable: bool,
    /// The CPUID-derived kHz, `None` when PostgreSQL falls back to calibration.
    pub khz: Option<u64>,
    /// PostgreSQL's `frequency_source` string when CPUID gave the frequency.
    pub source: Option<&'static str>,
    /// Which rule applied.
    pub why: String,
    /// The kHz PostgreSQL uses is outside `PLAUSIBLE_TSC_KHZ` (PostgreSQL
    /// itself does not check).
    pub implausible: bool,
}

/// PostgreSQL's use of a 32-bit CPUID result: stored in an `int32`
/// (`timing_tsc_frequency_khz`) that must be > 0.
fn postgres_int32_khz(value: u32) -> Option<u64> {
    let stored = value as i32;
    (stored > 0).then_some(stored as u64)
}

/// A CPUID kHz PostgreSQL uses, or the calibration fallback when its int32
/// is not > 0.
fn postgres_uses(value: u32, source: &'static str, rule: String) -> PostgresCpuid {
    match postgres_int32_khz(value) {
        Some(khz) => {
            let implausible = implausible_tsc_khz(khz);
            PostgresCpuid {
                tsc_usable: true,
                khz: Some(khz),
                source: Some(source),
                why: match &implausible {
                    Some(why) => format!(
                        "{rule} kHz; implausible ({why}), but PostgreSQL 19 has no plausibility check and uses it"
                    ),
                    None => format!("{rule} kHz"),
                },
                implausible: implausible.is_some(),
            }
        }
        None => PostgresCpuid {
            tsc_usable: true,
            khz: None,
            source: None,
            why: format!(
                "{rule}, which PostgreSQL stores in an int32 as {}: not > 0, so calibration",
                value as i32
            ),
            implausible: false,
        },
    }
}

/// PostgreSQL 19's CPUID frequency (see the module documentation).
pub fn postgres_cpuid_khz(f: &CpuidFacts) -> PostgresCpuid {
    let none = |why: String| PostgresCpuid {
        tsc_usable: true,
        khz: None,
        source: None,
        why,
        implausible: false,
    };
    if !(f.rdtscp && f.invariant_tsc) {
        let missing: Vec<&str> = [
            (!f.rdtscp).then_some("RDTSCP"),
            (!f.invariant_tsc).then_some("invariant TSC"),
        ]
        .into_iter()
        .flatten()
        .collect();
        return PostgresCpuid {
            tsc_usable: false,
            khz: None,
            source: None,
            why: format!("no {}: PostgreSQL does not use the TSC", missing.join(" and no ")),
            implausible: false,
        };
    }
    if f.hypervisor_bit {
        let Some(h) = &f.hypervisor else {
            return none("hypervisor bit set but leaf 0x40000000 is empty: calibration".to_string());
        };
        if !h.is_vmware_or_kvm() {
            return none(format!(
                "hypervisor \"{}\" is neither VMwareVMware nor KVMKVMKVM: only hypervisor leaves count, so calibration",
                h.signature
            ));
        }
        return match h.timing_leaf_tsc_khz {
            None => none(format!(
                "hypervisor {} reports highest leaf {:#010x} < 0x40000010: calibration",
                h.signature, h.max_leaf
            )),
            Some(0) => none(format!(
                "hypervisor {} leaf 0x40000010 EAX is 0: calibration",
                h.signature
            )),
            Some(k) => postgres_uses(
                k,
                PG_SOURCE_HYPERVISOR,
                format!("{} leaf 0x40000010 EAX = {k}", h.signature),
            ),
        };
    }
    if let Some(l) = f.leaf_15.filter(|l| l.ecx_crystal_hz > 0) {
        if l.eax_denominator == 0 || l.ebx_numerator == 0 {
            return none(format!(
                "leaf 0x15 ECX = {} Hz but EAX = {}, EBX = {}: 0 with no fallback to 0x16, so calibration",
                l.ecx_crystal_hz, l.eax_denominator, l.ebx_numerator
            ));
        }
        // PostgreSQL: `reg[ECX] / 1000 * reg[EBX] / reg[EAX]` in uint32.
        let khz = (l.ecx_crystal_hz / 1000).wrapping_mul(l.ebx_numerator) / l.eax_denominator;
        return postgres_uses(
            khz,
            PG_SOURCE_CPUID_15,
            format!(
                "leaf 0x15: ({} Hz / 1000) * {} / {} = {khz} in 32-bit arithmetic",
                l.ecx_crystal_hz, l.ebx_numerator, l.eax_denominator
            ),
        );
    }
    if let Some(l) = f.leaf_16.filter(|l| l.base_mhz > 0) {
        // PostgreSQL: `reg[EAX] * 1000` in uint32.
        let khz = l.base_mhz.wrapping_mul(1000);
        return postgres_uses(
            khz,
            PG_SOURCE_CPUID_16,
            format!(
                "leaf 0x15 has no crystal; leaf 0x16 base {} MHz * 1000 = {khz} in 32-bit arithmetic",
                l.base_mhz
            ),
        );
    }
    none(format!(
        "no crystal in leaf 0x15 and no base frequency in leaf 0x16 (highest basic leaf is {:#x}): calibration",
        f.max_basic_leaf
    ))
}
