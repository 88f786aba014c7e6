//! The pure CPUID rules: how PostgreSQL 19 and Linux turn CPUID registers
//! into a TSC frequency, and which values are plausible at all. No I/O: every
//! function takes decoded [`CpuidFacts`](super::cpuid::CpuidFacts).
//!
//! - [`postgresql`]: PostgreSQL 19's rules and its 32-bit arithmetic.
//! - [`linux`]: Linux's rules (and clockscope's 128-bit versions of every
//!   leaf-0x15/0x16/hypervisor derivation).
//!
//! # CPUID rules
//! **PostgreSQL 19** ([`postgres_cpuid_khz`]): no TSC at all unless RDTSCP
//! and invariant TSC are both present. With the hypervisor bit set only
//! hypervisor leaves count: leaf 0x40000000 must report a highest leaf of
//! at least 0x40000010 and the signature "VMwareVMware" or "KVMKVMKVM\0\0\0"; then
//! 0x40000010 EAX is the kHz (0 = none). Otherwise leaf 0x15 when its ECX
//! (crystal Hz) is non-zero: EAX or EBX zero gives 0 with no fallback, else
//! kHz = (ECX / 1000) * EBX / EAX in integers. Otherwise leaf 0x16 EAX (base
//! MHz) * 1000. Otherwise PostgreSQL calibrates. The arithmetic is
//! PostgreSQL's: `uint32` (wrapping), and the result is stored in an `int32`
//! that must be > 0, else PostgreSQL calibrates (so a 1 Hz crystal, giving
//! 0, and a product that wraps to a negative `int32` both calibrate).
//!
//! **Linux** (`linux_cpuid_khz`): in a VMware or ACRN guest the hypervisor's
//! frequency first (VMware's GETHZ backdoor, published too as leaf 0x40000010
//! EAX; ACRN's leaf 0x40000010 EAX). Otherwise `native_calibrate_tsc`: Intel
//! only, leaf 0x15 needs EAX and EBX; crystal = ECX / 1000 kHz; when ECX is 0, Goldmont-D
//! (model 0x5F) gets 25 MHz, otherwise crystal = 0x16 base MHz * 1000 * EAX /
//! EBX (integer kHz, as the kernel computes it); TSC kHz = crystal * EBX / EAX.
//! When 0x15 gives nothing, `cpu_khz_from_cpuid` (Intel) takes leaf 0x16's base
//! MHz, which the kernel uses as the TSC frequency and later refines.
//! Kernels 4.10-5.0 instead used a model table when ECX was 0 (24 MHz for
//! Skylake/Kaby Lake client 0x4E/0x5E/0x8E/0x9E, 25 MHz Skylake-X 0x55, 19.2
//! MHz Goldmont 0x5C, 25 MHz Goldmont-D 0x5F); the table was dropped because
//! 0x55's 25 MHz was wrong (commit b51120309348, "Fix erroneous TSC rate on
//! Skylake Xeon"), and is reported here as its own source for comparison.
//!
//! # Plausibility
//! A TSC frequency from CPUID, a hypervisor leaf or the kernel outside
//! `PLAUSIBLE_TSC_KHZ` (100 MHz to 10 GHz), or a crystal (leaf 0x15 ECX,
//! or the one derived from leaf 0x16) outside `PLAUSIBLE_CRYSTAL_HZ` (1 to
//! 100 MHz), is evidence of a problem (a broken or hostile hypervisor, a
//! corrupt dump), not a frequency: the source reports it as
//! `implausible_khz` with `khz` null, clockscope never uses it, and the
//! agreement check (so "frequency known and sources agree") fails. Every
//! derivation is computed in 128-bit integers, so no register values
//! overflow. PostgreSQL 19 has no such check; its own 32-bit arithmetic is
//! modelled separately ([`postgres_cpuid_khz`]).

pub mod linux;
pub mod postgresql;

pub(crate) use linux::{
    cpuid15_from16_khz, cpuid15_implied_khz, cpuid15_khz, cpuid16_khz, hypervisor_khz, linux_cpuid_khz,
};
pub use postgresql::{
    postgres_cpuid_khz, PostgresCpuid, PG_SOURCE_CALIBRATION, PG_SOURCE_CPUID_15, PG_SOURCE_CPUID_16,
};

/// TSC frequencies clockscope accepts from CPUID, a hypervisor leaf or the
/// kernel: 100 MHz to 10 GHz, in kHz. The slowest x86-64 TSCs run at a few
/// hundred MHz, the fastest CPUs at about 6 GHz.
pub(crate) const PLAUSIBLE_TSC_KHZ: std::ops::RangeInclusive<u64> = 100_000..=10_000_000;

/// Crystal (core crystal clock, leaf 0x15 ECX) frequencies clockscope
/// accepts: 1 to 100 MHz, in Hz. Real crystals are 19.2, 24, 25 or 38.4 MHz.
pub(crate) const PLAUSIBLE_CRYSTAL_HZ: std::ops::RangeInclusive<u64> = 1_000_000..=100_000_000;

/// `100 MHz-10 GHz` for messages.
fn tsc_range_text() -> String {
    format!(
        "{} MHz-{} GHz",
        PLAUSIBLE_TSC_KHZ.start() / 1000,
        PLAUSIBLE_TSC_KHZ.end() / 1_000_000
    )
}

/// `1-100 MHz` for messages.
fn crystal_range_text() -> String {
    format!(
        "{}-{} MHz",
        PLAUSIBLE_CRYSTAL_HZ.start() / 1_000_000,
        PLAUSIBLE_CRYSTAL_HZ.end() / 1_000_000
    )
}

/// Why a TSC frequency is implausible, or `None` when it is plausible.
pub(crate) fn implausible_tsc_khz(khz: u64) -> Option<String> {
    (!PLAUSIBLE_TSC_KHZ.contains(&khz)).then(|| format!("{khz} kHz is outside {}", tsc_range_text()))
}

/// Why a crystal frequency is implausible, or `None` when it is plausible.
pub(crate) fn implausible_crystal_hz(hz: u64) -> Option<String> {
    (!PLAUSIBLE_CRYSTAL_HZ.contains(&hz)).then(|| format!("crystal {hz} Hz is outside {}", crystal_range_text()))
}
