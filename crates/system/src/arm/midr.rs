//! MIDR_EL1, the ARM CPU identification register: decoding and display names.
//!
//! ```text
//! bits 31..24  implementer   0x41 Arm, 0x51 Qualcomm, 0x61 Apple, 0xc0 Ampere, ...
//! bits 23..20  variant       the "r" of rNpM (major revision)
//! bits 19..16  architecture  0xf on every ARMv8+ core ("see the ID registers")
//! bits 15..4   part number   0xd0c Neoverse N1, 0xd05 Cortex-A55, ...
//! bits  3..0   revision      the "p" of rNpM (minor revision)
//! ```
//!
//! Linux publishes the register per CPU as hex text in
//! `/sys/devices/system/cpu/cpuN/regs/identification/midr_el1`
//! (e.g. `0x00000000413fd0c1`), and the same fields in `/proc/cpuinfo`
//! ("CPU implementer", "CPU variant", "CPU part", "CPU revision"; its
//! "CPU architecture" line is a fixed `8` on arm64, not the MIDR field).
//!
//! Names come from Linux's `arch/arm64/include/asm/cputype.h` (the
//! `*_CPU_IMP_*` and `*_CPU_PART_*` constants). Parts not listed there are
//! shown by number.

use serde::Serialize;
use std::fmt;

/// A raw MIDR_EL1 value (the architecturally defined low 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub struct Midr(u32);

/// The schema of what `Serialize` writes: `0x` and eight lowercase hex digits.
#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Midr {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Midr".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "MIDR_EL1 (the low 32 bits), 0x and eight lowercase hexadecimal digits.",
            "type": "string",
            "pattern": "^0x[0-9a-f]{8}$"
        })
    }
}

/// Why a `midr_el1` file could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MidrParseError {
    #[error("midr_el1 text {0:?} is not a 0x-prefixed hexadecimal number")]
    /// Not a 0x-prefixed hexadecimal number (the text, escaped by the caller).
    NotHex(String),
    #[error("midr_el1 value {0:#x} has bits set above bit 31 (RES0 in MIDR_EL1)")]
    /// Bits set above bit 31 (the value).
    Reserved(u64),
}

impl Midr {
    /// Wraps a raw register value.
    pub const fn from_raw(raw: u32) -> Midr {
        Midr(raw)
    }

    /// Builds the value from its fields (each masked to its width).
    pub const fn from_fields(implementer: u8, variant: u8, architecture: u8, part: u16, revision: u8) -> Midr {
        Midr(
            (implementer as u32) << 24
                | ((variant as u32) & 0xf) << 20
                | ((architecture as u32) & 0xf) << 16
                | ((part as u32) & 0xfff) << 4
                | (revision as u32) & 0xf,
        )
    }

    /// Parses the sysfs text (`0x00000000413fd0c1`, surrounding whitespace allowed).
    pub fn parse_sysfs(text: &str) -> Result<Midr, MidrParseError> {
        let t = text.trim();
        let hex = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .ok_or_else(|| MidrParseError::NotHex(t.to_string()))?;
        let v = u64::from_str_radix(hex, 16).map_err(|_| MidrParseError::NotHex(t.to_string()))?;
        u32::try_from(v).map(Midr).map_err(|_| MidrParseError::Reserved(v))
    }

    /// The register's 32 bits.
    pub const fn raw(self) -> u32 {
        self.0
    }
    /// Implementer code (bits 31:24).
    pub const fn implementer(self) -> u8 {
        (self.0 >> 24) as u8
    }
    /// Variant (bits 23:20).
    pub const fn variant(self) -> u8 {
        ((self.0 >> 20) & 0xf) as u8
    }
    /// Architecture (bits 19:16; 0xF: defined by the ID registers).
    pub const fn architecture(self) -> u8 {
        ((self.0 >> 16) & 0xf) as u8
    }
    /// Part number (bits 15:4).
    pub const fn part(self) -> u16 {
        ((self.0 >> 4) & 0xfff) as u16
    }
    /// Revision (bits 3:0).
    pub const fn revision(self) -> u8 {
        (self.0 & 0xf) as u8
    }

    /// The core model: implementer and part number (what homogeneity compares).
    pub const fn model(self) -> CoreModel {
        CoreModel {
            implementer: self.implementer(),
            part: self.part(),
        }
    }

    /// The revision as Arm writes it: `r3p1` for variant 3, revision 1.
    pub fn rnpn(self) -> String {
        format!("r{}p{}", self.variant(), self.revision())
    }
}

impl fmt::Display for Midr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

impl From<Midr> for String {
    fn from(m: Midr) -> String {
        m.to_string()
    }
}

/// A core model: implementer plus part number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CoreModel {
    /// Implementer code.
    pub implementer: u8,
    /// Part number.
    pub part: u16,
}

impl CoreModel {
    /// The implementer's name, if Linux's cputype.h lists it.
    pub fn implementer_name(self) -> Option<&'static str> {
        implementer_name(self.implementer)
    }

    /// The part's marketing name, if known (see [`part_name`]).
    pub fn part_name(self) -> Option<&'static str> {
        part_name(self.implementer, self.part)
    }

    /// A display name that never hides the numbers when the part is unknown:
    /// `Arm Neoverse N1`, `Apple part 0x042`, `implementer 0x99 part 0x001`.
    pub fn display_name(self) -> String {
        match (self.implementer_name(), self.part_name()) {
            (Some(imp), Some(part)) => format!("{imp} {part}"),
            (Some(imp), None) => format!("{imp} part {:#05x}", self.part),
            (None, _) => format!("implementer {:#04x} part {:#05x}", self.implementer, self.part),
        }
    }
}

impl fmt::Display for CoreModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_name())
    }
}

/// Implementer codes (MIDR_EL1 bits 31..24), from Linux's `ARM_CPU_IMP_*`.
pub fn implementer_name(implementer: u8) -> Option<&'static str> {
    Some(match implementer {
        0x41 => "Arm",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x50 => "APM",
        0x51 => "Qualcomm",
        0x61 => "Apple",
        0x6d => "Microsoft",
        0xc0 => "Ampere",
        _ => return None,
    })
}

/// Part numbers (MIDR_EL1 bits 15..4) per implementer, from Linux's
/// `*_CPU_PART_*` constants. Linux notes that Qualcomm's Kryo 5xx/6xx cores
/// identify as the Arm cores they are built on (Cortex-A77/A78/X1/A55), and
/// that Ampere Altra reports Arm's Neoverse N1.
pub fn part_name(implementer: u8, part: u16) -> Option<&'static str> {
    Some(match (implementer, part) {
        (0x41, 0xd00) => "Foundation model",
        (0x41, 0xd03) => "Cortex-A53",
        (0x41, 0xd04) => "Cortex-A35",
        (0x41, 0xd05) => "Cortex-A55",
        (0x41, 0xd07) => "Cortex-A57",
        (0x41, 0xd08) => "Cortex-A72",
        (0x41, 0xd09) => "Cortex-A73",
        (0x41, 0xd0a) => "Cortex-A75",
        (0x41, 0xd0b) => "Cortex-A76",
        (0x41, 0xd0c) => "Neoverse N1",
        (0x41, 0xd0d) => "Cortex-A77",
        (0x41, 0xd0e) => "Cortex-A76AE",
        (0x41, 0xd0f) => "AEMv8 model",
        (0x41, 0xd40) => "Neoverse V1",
        (0x41, 0xd41) => "Cortex-A78",
        (0x41, 0xd42) => "Cortex-A78AE",
        (0x41, 0xd44) => "Cortex-X1",
        (0x41, 0xd46) => "Cortex-A510",
        (0x41, 0xd47) => "Cortex-A710",
        (0x41, 0xd48) => "Cortex-X2",
        (0x41, 0xd49) => "Neoverse N2",
        (0x41, 0xd4b) => "Cortex-A78C",
        (0x41, 0xd4c) => "Cortex-X1C",
        (0x41, 0xd4d) => "Cortex-A715",
        (0x41, 0xd4e) => "Cortex-X3",
        (0x41, 0xd4f) => "Neoverse V2",
        (0x41, 0xd80) => "Cortex-A520",
        (0x41, 0xd81) => "Cortex-A720",
        (0x41, 0xd82) => "Cortex-X4",
        (0x41, 0xd83) => "Neoverse V3AE",
        (0x41, 0xd84) => "Neoverse V3",
        (0x41, 0xd85) => "Cortex-X925",
        (0x41, 0xd87) => "Cortex-A725",
        (0x41, 0xd89) => "Cortex-A720AE",
        (0x41, 0xd8e) => "Neoverse N3",
        (0x42, 0x100) => "Brahma-B53",
        (0x42, 0x516) => "Vulcan",
        (0x43, 0x0a1) => "ThunderX",
        (0x43, 0x0a2) => "ThunderX 81xx",
        (0x43, 0x0a3) => "ThunderX 83xx",
        (0x43, 0x0af) => "ThunderX2",
        (0x43, 0x0b1) => "OcteonTX2 98xx",
        (0x43, 0x0b2) => "OcteonTX2 96xx",
        (0x43, 0x0b3) => "OcteonTX2 95xx",
        (0x46, 0x001) => "A64FX",
        (0x48, 0xd01) => "TSV110 (Kunpeng 920)",
        (0x48, 0xd02) => "HIP09",
        (0x48, 0xd06) => "HIP12",
        (0x4e, 0x003) => "Denver",
        (0x4e, 0x004) => "Carmel",
        (0x4e, 0x010) => "Olympus",
        (0x50, 0x000) => "X-Gene",
        (0x51, 0x001) => "Oryon X1",
        (0x51, 0x200) => "Kryo",
        // Linux defines both QCOM_CPU_PART_FALKOR_V1 and KRYO_2XX_GOLD as 0x800.
        (0x51, 0x800) => "Kryo 2xx Gold / Falkor v1",
        (0x51, 0x801) => "Kryo 2xx Silver",
        (0x51, 0x802) => "Kryo 3xx Gold",
        (0x51, 0x803) => "Kryo 3xx Silver",
        (0x51, 0x804) => "Kryo 4xx Gold",
        (0x51, 0x805) => "Kryo 4xx Silver",
        (0x51, 0xc00) => "Falkor",
        // Linux guests of Apple's Virtualization framework on M3 hosts report
        // implementer 0x61 with part 0 (recorded in cpufetch issue #229 and
        // elementary/installer #923): the real core type is hidden.
        (0x61, 0x000) => "virtual CPU (core type hidden by the hypervisor)",
        (0x61, 0x022) => "M1 Icestorm",
        (0x61, 0x023) => "M1 Firestorm",
        (0x61, 0x024) => "M1 Pro Icestorm",
        (0x61, 0x025) => "M1 Pro Firestorm",
        (0x61, 0x028) => "M1 Max Icestorm",
        (0x61, 0x029) => "M1 Max Firestorm",
        (0x61, 0x032) => "M2 Blizzard",
        (0x61, 0x033) => "M2 Avalanche",
        (0x61, 0x034) => "M2 Pro Blizzard",
        (0x61, 0x035) => "M2 Pro Avalanche",
        (0x61, 0x038) => "M2 Max Blizzard",
        (0x61, 0x039) => "M2 Max Avalanche",
        (0x6d, 0xd49) => "Azure Cobalt 100",
        (0xc0, 0xac3) => "AmpereOne",
        (0xc0, 0xac4) => "AmpereOne AC04",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_neoverse_n1_from_sysfs_text() {
        let m = Midr::parse_sysfs("0x00000000413fd0c1\n").unwrap();
        assert_eq!(m.raw(), 0x413f_d0c1);
        assert_eq!(m.implementer(), 0x41);
        assert_eq!(m.variant(), 3);
        assert_eq!(m.architecture(), 0xf);
        assert_eq!(m.part(), 0xd0c);
        assert_eq!(m.revision(), 1);
        assert_eq!(m.rnpn(), "r3p1");
        assert_eq!(m.model().display_name(), "Arm Neoverse N1");
        assert_eq!(m.to_string(), "0x413fd0c1");
    }

    #[test]
    fn fields_round_trip() {
        let m = Midr::from_fields(0x41, 2, 0xf, 0xd05, 0);
        assert_eq!(m.raw(), 0x412f_d050);
        assert_eq!(m.model().display_name(), "Arm Cortex-A55");
        let m = Midr::from_fields(0x61, 1, 0xf, 0x023, 1);
        assert_eq!(
            (m.implementer(), m.variant(), m.part(), m.revision()),
            (0x61, 1, 0x023, 1)
        );
    }

    #[test]
    fn bad_sysfs_text_is_an_error_naming_the_text() {
        assert_eq!(
            Midr::parse_sysfs("413fd0c1"),
            Err(MidrParseError::NotHex("413fd0c1".into()))
        );
        assert!(Midr::parse_sysfs("0xzz").is_err());
        assert_eq!(
            Midr::parse_sysfs("0x1413fd0c1"),
            Err(MidrParseError::Reserved(0x1_413f_d0c1))
        );
        assert!(MidrParseError::NotHex("x".into()).to_string().contains("midr_el1"));
    }

    #[test]
    fn unknown_parts_show_their_numbers() {
        assert_eq!(
            CoreModel {
                implementer: 0x61,
                part: 0x042
            }
            .display_name(),
            "Apple part 0x042"
        );
        assert_eq!(
            CoreModel {
                implementer: 0x99,
                part: 0x1
            }
            .display_name(),
            "implementer 0x99 part 0x001"
        );
        assert_eq!(
            CoreModel {
                implementer: 0xc0,
                part: 0xac3
            }
            .display_name(),
            "Ampere AmpereOne"
        );
        assert_eq!(
            CoreModel {
                implementer: 0x51,
                part: 0x804
            }
            .display_name(),
            "Qualcomm Kryo 4xx Gold"
        );
    }
}
