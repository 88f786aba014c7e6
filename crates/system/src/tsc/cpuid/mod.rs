//! CPUID, read through a trait so this CPU, a recorded dump and a test's
//! hand-written leaves are decoded by the same code.
//!
//! The reader trait is raw-cpuid's [`CpuIdReader`] (`cpuid2(leaf, subleaf)`),
//! so raw-cpuid's decoders (vendor, brand string, feature bits) work on every
//! reader. Three readers exist:
//! - [`NativeCpuid`] (x86-64 only): the CPUID instruction of this CPU, through
//!   `clockscope::cpu::cpuid`.
//! - [`RecordedCpuid`]: a map `(leaf, subleaf) -> [eax, ebx, ecx, edx]`, from
//!   a dump file ([`parse_dump`]) or built in a test. **A leaf absent from the
//!   map reads as four zeros**: that is what AMD CPUs return above their
//!   maximum leaf and what a hypervisor returns for leaves it does not
//!   implement. (Intel CPUs instead repeat the highest basic leaf above the
//!   maximum, see the 0x20000000 line of `kabylake_r_i5_8350u.txt`.) The
//!   decoder never relies on either: like Linux and GCC's `__get_cpuid` it
//!   reads a leaf only when leaf 0 / 0x80000000 / 0x40000000 says it exists.
//! - Any `Fn(u32, u32) -> CpuIdResult + Clone` (raw-cpuid's blanket impl).
//!
//! [`CpuidFacts::read`] decodes what matters for the TSC: vendor,
//! family/model/stepping, brand, the TSC/RDTSCP/invariant-TSC/TSC_ADJUST/
//! hypervisor bits, the hypervisor signature and its leaf 0x40000010, and the
//! frequency leaves 0x15 and 0x16.

pub mod dump;
#[cfg(target_arch = "x86_64")]
mod native;
mod recorded;

pub use dump::{parse_dump, DumpError, DumpFormat, ParsedDump};
#[cfg(target_arch = "x86_64")]
pub use native::NativeCpuid;
pub use raw_cpuid::{CpuIdReader, CpuIdResult};
pub use recorded::RecordedCpuid;

use crate::escape::escape_untrusted;
use raw_cpuid::CpuId;
use serde::Serialize;

/// Leaf 0: highest basic leaf and vendor.
pub(crate) const LEAF_VENDOR: u32 = 0x0;
/// Leaf 1: signature (family/model/stepping) and feature flags.
pub(crate) const LEAF_FEATURES: u32 = 0x1;
/// Leaf 7 subleaf 0: structured extended features (TSC_ADJUST).
pub(crate) const LEAF_EXTENDED_FEATURES: u32 = 0x7;
/// Leaf 0x15: TSC / core crystal clock ratio and crystal frequency.
pub(crate) const LEAF_TSC_CRYSTAL: u32 = 0x15;
/// Leaf 0x16: processor base / max / bus frequency in MHz.
pub(crate) const LEAF_FREQUENCY: u32 = 0x16;
/// Leaf 0x40000000: hypervisor signature and highest hypervisor leaf.
pub(crate) const LEAF_HYPERVISOR: u32 = 0x4000_0000;
/// Leaf 0x40000010: VMware's timing leaf (TSC kHz in EAX), also used by KVM/QEMU.
pub(crate) const LEAF_HYPERVISOR_TIMING: u32 = 0x4000_0010;
/// Leaf 0x80000000: highest extended leaf.
pub(crate) const LEAF_EXTENDED_MAX: u32 = 0x8000_0000;
/// Leaf 0x80000001: extended features (RDTSCP).
pub(crate) const LEAF_EXTENDED_FEATURES_1: u32 = 0x8000_0001;
/// Leaf 0x80000007: advanced power management (invariant TSC).
pub(crate) const LEAF_POWER_MANAGEMENT: u32 = 0x8000_0007;

/// Leaf 0x15: TSC frequency = crystal (ECX Hz) * EBX / EAX.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Leaf15 {
    /// Denominator of the TSC / crystal ratio.
    pub eax_denominator: u32,
    /// Numerator of the TSC / crystal ratio.
    pub ebx_numerator: u32,
    /// Crystal (core crystal clock) frequency in Hz; 0 = not enumerated.
    pub ecx_crystal_hz: u32,
}

/// Leaf 0x16: nominal frequencies in MHz (0 = not enumerated). The registers
/// are kept whole, as Linux and PostgreSQL use them (bits 31:16 are reserved
/// and zero on real CPUs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Leaf16 {
    /// Base frequency, MHz (EAX).
    pub base_mhz: u32,
    /// Maximum frequency, MHz (EBX).
    pub max_mhz: u32,
    /// Bus (reference) frequency, MHz (ECX).
    pub bus_mhz: u32,
}

/// Leaf 0x40000000 (and 0x40000010 when present).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct HypervisorLeaves {
    /// The 12-byte signature from EBX, ECX, EDX, NULs removed for display
    /// (e.g. "KVMKVMKVM", "VMwareVMware", "Microsoft Hv").
    pub signature: String,
    /// The raw signature registers, so "KVMKVMKVM\0\0\0" can be matched exactly.
    #[serde(skip)]
    pub signature_regs: [u32; 3],
    /// Highest hypervisor leaf (EAX of 0x40000000).
    pub max_leaf: u32,
    /// EAX of 0x40000010 (TSC kHz) when `max_leaf >= 0x40000010`.
    pub timing_leaf_tsc_khz: Option<u32>,
}

/// "VMwareVMware" as EBX, ECX, EDX.
pub const SIGNATURE_VMWARE: [u32; 3] = [0x6177_4d56, 0x4d56_6572, 0x6572_6177];
/// "KVMKVMKVM\0\0\0" as EBX, ECX, EDX.
pub const SIGNATURE_KVM: [u32; 3] = [0x4b4d_564b, 0x564b_4d56, 0x0000_004d];

impl HypervisorLeaves {
    /// Whether the signature is one PostgreSQL 19 trusts for 0x40000010:
    /// exactly "VMwareVMware" or "KVMKVMKVM\0\0\0".
    pub fn is_vmware_or_kvm(&self) -> bool {
        self.signature_regs == SIGNATURE_VMWARE || self.signature_regs == SIGNATURE_KVM
    }
}

/// Everything about the TSC that CPUID says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CpuidFacts {
    /// Vendor string of leaf 0 ("GenuineIntel", "AuthenticAMD", ...), control
    /// characters escaped.
    pub vendor: String,
    /// Highest basic leaf (leaf 0 EAX).
    pub max_basic_leaf: u32,
    /// Highest extended leaf (leaf 0x80000000 EAX; 0 when not reported).
    pub max_extended_leaf: u32,
    /// Leaf 1 EAX, the raw signature.
    pub signature_eax: u32,
    /// Display family: base family, plus extended family when base is 0xF.
    pub family: u32,
    /// Display model: base model, plus extended model << 4 when family >= 6.
    pub model: u32,
    /// Stepping (leaf 1 EAX bits 3:0).
    pub stepping: u32,
    /// Brand string of leaves 0x80000002..4, trimmed; `None` when absent or
    /// empty. Control characters (a hostile dump's) are escaped with
    /// [`escape_untrusted`], as in the vendor string.
    pub brand: Option<String>,
    /// Leaf 1 EDX bit 4.
    pub tsc: bool,
    /// Leaf 0x80000001 EDX bit 27.
    pub rdtscp: bool,
    /// Leaf 0x80000007 EDX bit 8.
    pub invariant_tsc: bool,
    /// Leaf 7 subleaf 0 EBX bit 1 (IA32_TSC_ADJUST MSR).
    pub tsc_adjust: bool,
    /// Leaf 1 ECX bit 31 (running under a hypervisor).
    pub hypervisor_bit: bool,
    /// Leaf 0x40000000, read only when the hypervisor bit is set.
    pub hypervisor: Option<HypervisorLeaves>,
    /// Leaf 0x15 when `max_basic_leaf >= 0x15`.
    pub leaf_15: Option<Leaf15>,
    /// Leaf 0x16 when `max_basic_leaf >= 0x16`.
    pub leaf_16: Option<Leaf16>,
}

fn regs<R: CpuIdReader>(reader: &R, leaf: u32, sub: u32) -> [u32; 4] {
    let r = reader.cpuid2(leaf, sub);
    [r.eax, r.ebx, r.ecx, r.edx]
}

/// Linux's `x86_family`: base family, plus extended family when base is 0xF.
pub(crate) fn display_family(signature_eax: u32) -> u32 {
    let base = (signature_eax >> 8) & 0xf;
    if base == 0xf {
        base + ((signature_eax >> 20) & 0xff)
    } else {
        base
    }
}

/// Linux's `x86_model`: base model, plus extended model << 4 when the display
/// family is 6 or more (Intel family 6 and 0xF, AMD family 0xF and later).
pub(crate) fn display_model(signature_eax: u32) -> u32 {
    let base = (signature_eax >> 4) & 0xf;
    if display_family(signature_eax) >= 6 {
        base | (((signature_eax >> 16) & 0xf) << 4)
    } else {
        base
    }
}

fn signature_text(regs: [u32; 3]) -> String {
    regs.iter()
        .flat_map(|r| r.to_le_bytes())
        .filter_map(|b| match b {
            0 => None,
            0x20..=0x7e => Some(b as char),
            _ => Some('?'),
        })
        .collect()
}

impl CpuidFacts {
    /// Decodes the TSC facts from any reader. Leaves are read only when the
    /// CPU reports them (leaf 0, 0x80000000, the hypervisor bit and
    /// 0x40000000 say which exist).
    pub fn read<R: CpuIdReader>(reader: R) -> CpuidFacts {
        let leaf0 = regs(&reader, LEAF_VENDOR, 0);
        let max_basic_leaf = leaf0[0];
        let ext0 = regs(&reader, LEAF_EXTENDED_MAX, 0)[0];
        let max_extended_leaf = if ext0 >= LEAF_EXTENDED_MAX { ext0 } else { 0 };

        let cpuid = CpuId::with_cpuid_reader(reader.clone());
        // raw-cpuid decodes the vendor and brand strings and the feature bits.
        let vendor = cpuid
            .get_vendor_info()
            .map(|v| escape_untrusted(v.as_str()).into_owned())
            .unwrap_or_else(|| signature_text([leaf0[1], leaf0[3], leaf0[2]]));
        let features = cpuid.get_feature_info();
        let tsc = features.as_ref().is_some_and(|f| f.has_tsc());
        let hypervisor_bit = features.as_ref().is_some_and(|f| f.has_hypervisor());
        let rdtscp = cpuid
            .get_extended_processor_and_feature_identifiers()
            .is_some_and(|e| e.has_rdtscp());
        let invariant_tsc = cpuid
            .get_advanced_power_mgmt_info()
            .is_some_and(|a| a.has_invariant_tsc());
        let tsc_adjust = cpuid
            .get_extended_feature_info()
            .is_some_and(|e| e.has_tsc_adjust_msr());
        let brand = cpuid
            .get_processor_brand_string()
            .map(|b| escape_untrusted(b.as_str().trim_matches(|c: char| c == '\0' || c.is_whitespace())).into_owned())
            .filter(|b| !b.is_empty());

        let signature_eax = if max_basic_leaf >= LEAF_FEATURES {
            regs(&reader, LEAF_FEATURES, 0)[0]
        } else {
            0
        };

        let hypervisor = hypervisor_bit.then(|| {
            let h = regs(&reader, LEAF_HYPERVISOR, 0);
            let signature_regs = [h[1], h[2], h[3]];
            let max_leaf = h[0];
            HypervisorLeaves {
                signature: signature_text(signature_regs),
                signature_regs,
                max_leaf,
                timing_leaf_tsc_khz: (max_leaf >= LEAF_HYPERVISOR_TIMING)
                    .then(|| regs(&reader, LEAF_HYPERVISOR_TIMING, 0)[0]),
            }
        });

        let leaf_15 = (max_basic_leaf >= LEAF_TSC_CRYSTAL).then(|| {
            let r = regs(&reader, LEAF_TSC_CRYSTAL, 0);
            Leaf15 {
                eax_denominator: r[0],
                ebx_numerator: r[1],
                ecx_crystal_hz: r[2],
            }
        });
        let leaf_16 = (max_basic_leaf >= LEAF_FREQUENCY).then(|| {
            let r = regs(&reader, LEAF_FREQUENCY, 0);
            Leaf16 {
                base_mhz: r[0],
                max_mhz: r[1],
                bus_mhz: r[2],
            }
        });

        CpuidFacts {
            vendor,
            max_basic_leaf,
            max_extended_leaf,
            signature_eax,
            family: display_family(signature_eax),
            model: display_model(signature_eax),
            stepping: signature_eax & 0xf,
            brand,
            tsc,
            rdtscp,
            invariant_tsc,
            tsc_adjust,
            hypervisor_bit,
            hypervisor,
            leaf_15,
            leaf_16,
        }
    }

    /// Decodes a recording.
    pub fn from_recorded(rec: &RecordedCpuid) -> CpuidFacts {
        CpuidFacts::read(rec)
    }

    /// Decodes this CPU; `None` on architectures without CPUID.
    pub fn native() -> Option<CpuidFacts> {
        #[cfg(target_arch = "x86_64")]
        {
            Some(CpuidFacts::read(NativeCpuid))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// Why `leaf` was not read, `not reported (highest extended leaf is
    /// 0x80000001)`; `None` when leaf 0, 0x80000000 or 0x40000000 says it
    /// exists. A flag of a leaf that is not reported is unknown, not clear:
    /// a dump may carry a line for it all the same (an Intel CPU repeats its
    /// highest basic leaf above the maximum), which is never read.
    pub fn unreported(&self, leaf: u32) -> Option<String> {
        if leaf >= LEAF_EXTENDED_MAX {
            return match self.max_extended_leaf {
                0 => Some("not reported (the CPU reports no extended leaves)".to_string()),
                max if leaf > max => Some(format!("not reported (highest extended leaf is {max:#x})")),
                _ => None,
            };
        }
        if leaf >= LEAF_HYPERVISOR {
            return match &self.hypervisor {
                None => Some("not reported (no hypervisor leaves)".to_string()),
                Some(h) if leaf > h.max_leaf => {
                    Some(format!("not reported (highest hypervisor leaf is {:#x})", h.max_leaf))
                }
                Some(_) => None,
            };
        }
        (leaf > self.max_basic_leaf).then(|| format!("not reported (highest basic leaf is {:#x})", self.max_basic_leaf))
    }

    /// A flag as evidence: `CPUID 0x80000007 EDX bit 8 set` / `... clear`,
    /// or `CPUID 0x80000007 not reported (highest extended leaf is
    /// 0x80000001)` when the leaf is beyond what the CPU reports.
    /// `bit` names the register and bit (`EDX bit 8`).
    pub(crate) fn flag_text(&self, leaf: u32, bit: &str, set: bool) -> String {
        match self.unreported(leaf) {
            Some(why) => format!("CPUID {leaf:#x} {why}"),
            None => format!("CPUID {leaf:#x} {bit} {}", if set { "set" } else { "clear" }),
        }
    }

    /// Whether the vendor is Intel (Linux's `native_calibrate_tsc` is Intel-only).
    pub(crate) fn is_intel(&self) -> bool {
        self.vendor == "GenuineIntel"
    }
}

/// Records this CPU's leaves (x86-64); `None` elsewhere.
pub fn record_native() -> Option<RecordedCpuid> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(RecordedCpuid::record(&NativeCpuid))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intel_base() -> RecordedCpuid {
        RecordedCpuid::new()
            // max basic 0x16, "GenuineIntel"
            .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
            // Skylake-X signature 0x50654: family 6, model 0x55, stepping 4
            .with(1, 0, [0x0005_0654, 0, 0, 1 << 4])
            .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
            .with(0x8000_0001, 0, [0, 0, 0, 1 << 27])
            .with(0x8000_0007, 0, [0, 0, 0, 1 << 8])
            .with(7, 0, [0, 1 << 1, 0, 0])
    }

    #[test]
    fn family_model_rules() {
        // Intel family 6: extended model used.
        assert_eq!((display_family(0x0005_0654), display_model(0x0005_0654)), (6, 0x55));
        // AMD Zen 2 (0x870F10): base family 0xF + ext 8 = 0x17, model 0x71.
        assert_eq!((display_family(0x0087_0F10), display_model(0x0087_0F10)), (0x17, 0x71));
        // Pentium (family 5): extended model ignored even if set.
        assert_eq!((display_family(0x0001_0543), display_model(0x0001_0543)), (5, 4));
    }

    #[test]
    fn family_model_agree_with_raw_cpuid() {
        // raw-cpuid applies the vendors' rules; ours is Linux's vendor-free rule.
        for (vendor, sig) in [
            ([0x756e_6547, 0x6c65_746e, 0x4965_6e69], 0x0005_0654), // GenuineIntel, Skylake-X
            ([0x756e_6547, 0x6c65_746e, 0x4965_6e69], 0x0000_0F43), // GenuineIntel, Pentium 4
            ([0x6874_7541, 0x444d_4163, 0x6974_6e65], 0x0087_0F10), // AuthenticAMD, Zen 2
            ([0x6874_7541, 0x444d_4163, 0x6974_6e65], 0x00A6_0F12), // AuthenticAMD, Zen 4
        ] {
            let rec = RecordedCpuid::new()
                .with(0, 0, [1, vendor[0], vendor[2], vendor[1]])
                .with(1, 0, [sig, 0, 0, 0]);
            let ours = CpuidFacts::from_recorded(&rec);
            let theirs = CpuId::with_cpuid_reader(&rec).get_feature_info().unwrap();
            assert_eq!(ours.family, theirs.family_id() as u32, "{sig:#x}");
            assert_eq!(ours.model, theirs.model_id() as u32, "{sig:#x}");
            assert_eq!(ours.stepping, theirs.stepping_id() as u32, "{sig:#x}");
        }
    }

    #[test]
    fn decodes_bits() {
        let f = CpuidFacts::from_recorded(&intel_base());
        assert_eq!(f.vendor, "GenuineIntel");
        assert!(f.is_intel());
        assert!(f.tsc && f.rdtscp && f.invariant_tsc && f.tsc_adjust);
        assert!(!f.hypervisor_bit && f.hypervisor.is_none());
        assert_eq!(
            f.leaf_15,
            Some(Leaf15 {
                eax_denominator: 0,
                ebx_numerator: 0,
                ecx_crystal_hz: 0
            })
        );
        assert_eq!(f.brand, None);
    }

    #[test]
    fn hostile_brand_string_is_escaped() {
        // "Evil \x1b]0;x\x07 CPU" as leaves 0x80000002..4, NUL padded.
        let mut brand = [0u8; 48];
        let text = b"Evil \x1b]0;x\x07 CPU";
        brand[..text.len()].copy_from_slice(text);
        let word = |i: usize| u32::from_le_bytes(brand[i * 4..i * 4 + 4].try_into().unwrap());
        let mut rec = intel_base().with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0]);
        for (n, leaf) in (0x8000_0002u32..=0x8000_0004).enumerate() {
            rec.insert(
                leaf,
                0,
                [word(n * 4), word(n * 4 + 1), word(n * 4 + 2), word(n * 4 + 3)],
            );
        }
        let f = CpuidFacts::from_recorded(&rec);
        assert_eq!(f.brand.as_deref(), Some("Evil \\x1b]0;x\\x07 CPU"));
    }

    #[test]
    fn leaves_beyond_max_are_not_read() {
        // Max basic leaf 0xD: 0x15 is recorded but must not be used.
        let rec = intel_base()
            .with(0, 0, [0xd, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
            .with(0x15, 0, [2, 200, 24_000_000, 0])
            .with(0x8000_0000, 0, [0x8000_0004, 0, 0, 0]);
        let f = CpuidFacts::from_recorded(&rec);
        assert_eq!(f.leaf_15, None);
        assert_eq!(f.leaf_16, None);
        assert!(f.tsc_adjust, "leaf 7 is within 0xD");
        assert!(!f.invariant_tsc, "0x80000007 is beyond the extended max 0x80000004");
    }

    #[test]
    fn flags_of_unreported_leaves_are_not_reported_not_clear() {
        // Highest extended leaf 0x80000001, but the recording has a 0x80000007 line with bit 8 set.
        let rec = intel_base().with(0x8000_0000, 0, [0x8000_0001, 0, 0, 0]);
        let f = CpuidFacts::from_recorded(&rec);
        assert!(!f.invariant_tsc);
        assert_eq!(
            f.unreported(LEAF_POWER_MANAGEMENT).as_deref(),
            Some("not reported (highest extended leaf is 0x80000001)")
        );
        assert_eq!(
            f.flag_text(LEAF_POWER_MANAGEMENT, "EDX bit 8", f.invariant_tsc),
            "CPUID 0x80000007 not reported (highest extended leaf is 0x80000001)"
        );
        assert_eq!(f.unreported(LEAF_EXTENDED_FEATURES_1), None);
        assert_eq!(
            f.flag_text(LEAF_EXTENDED_FEATURES_1, "EDX bit 27", f.rdtscp),
            "CPUID 0x80000001 EDX bit 27 set"
        );
        // Basic leaves beyond leaf 0's maximum.
        let rec = intel_base().with(0, 0, [0xd, 0x756e_6547, 0x6c65_746e, 0x4965_6e69]);
        let f = CpuidFacts::from_recorded(&rec);
        assert_eq!(
            f.unreported(LEAF_TSC_CRYSTAL).as_deref(),
            Some("not reported (highest basic leaf is 0xd)")
        );
        assert_eq!(f.unreported(LEAF_EXTENDED_FEATURES), None);
        // No extended leaves at all; no hypervisor leaves without the bit.
        let rec = intel_base().with(0x8000_0000, 0, [0x1234, 0, 0, 0]);
        let f = CpuidFacts::from_recorded(&rec);
        assert_eq!(
            f.flag_text(LEAF_EXTENDED_FEATURES_1, "EDX bit 27", f.rdtscp),
            "CPUID 0x80000001 not reported (the CPU reports no extended leaves)"
        );
        assert_eq!(
            f.unreported(LEAF_HYPERVISOR_TIMING).as_deref(),
            Some("not reported (no hypervisor leaves)")
        );
    }

    #[test]
    fn hypervisor_signature_exact() {
        let rec = intel_base()
            .with(1, 0, [0x0005_0654, 0, 1 << 31, 1 << 4])
            .with(
                0x4000_0000,
                0,
                [0x4000_0010, SIGNATURE_KVM[0], SIGNATURE_KVM[1], SIGNATURE_KVM[2]],
            )
            .with(0x4000_0010, 0, [2_599_998, 1_000_000, 0, 0]);
        let f = CpuidFacts::from_recorded(&rec);
        let h = f.hypervisor.expect("hypervisor leaves");
        assert_eq!(h.signature, "KVMKVMKVM");
        assert!(h.is_vmware_or_kvm());
        assert_eq!(h.timing_leaf_tsc_khz, Some(2_599_998));
        // "KVMKVMKVM" followed by something other than NULs is not KVM.
        let mut other = h.clone();
        other.signature_regs[2] = 0x2020_204d;
        assert!(!other.is_vmware_or_kvm());
    }

    #[test]
    fn display_round_trips_through_the_parser() {
        let rec = intel_base().with(0x15, 0, [2, 0x114, 0, 0]);
        let text = rec.to_string();
        let parsed = parse_dump(&text).expect("own output parses");
        assert_eq!(parsed.leaves, rec);
        assert_eq!(parsed.format, DumpFormat::CpuidRaw);
    }

    #[test]
    fn record_reads_only_existing_leaves() {
        let rec = intel_base();
        let again = RecordedCpuid::record(&&rec);
        // No hypervisor bit: no 0x4000_0000 leaf recorded.
        assert!(again.get(0x4000_0000, 0).is_none());
        assert_eq!(again.get(0x15, 0), Some([0; 4]));
        assert_eq!(CpuidFacts::from_recorded(&again), CpuidFacts::from_recorded(&rec));
    }
}
