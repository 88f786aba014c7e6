//! Known generic-timer counter errata and how each is detected here.
//!
//! The list is Linux's: `drivers/clocksource/arm_arch_timer.c`
//! (`ool_workarounds[]`, the out-of-line counter accessors) with the MIDR
//! ranges from `arch/arm64/kernel/cpu_errata.c`. Nothing is added that Linux
//! does not work around.
//!
//! | erratum | matched by Linux with | detected here from |
//! |---|---|---|
//! | ARM 858921 (Cortex-A73, all revisions) | MIDR, per CPU | MIDR |
//! | ARM 1418040 (+ 1188873): Cortex-A76 / Neoverse N1 r0p0-r3p1, Kryo 4xx Gold | MIDR, per CPU | MIDR (AArch32 only: informational) |
//! | Freescale/NXP A-008585 | device-tree property on the timer node | `sys/firmware/devicetree/base` |
//! | HiSilicon 161010101 | device-tree property, or ACPI GTDT OEM id HISI HIP05/06/07 | device tree; GTDT when readable (root only) |
//! | Allwinner UNKNOWN1 (A64) | device-tree property | device tree |
//!
//! When Linux applies a workaround that replaces counter reads, it also clears
//! EL0 access to CNTVCT_EL0 on the affected CPUs ("Trapping CNTVCT access" in
//! the kernel log): every user-space read then traps into the kernel, which is
//! correct but as slow as a system call, and the vDSO stops using the counter.

use super::cores::Core;
use super::midr::CoreModel;
use crate::input;
use crate::linux::{read_bytes, Evidence};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A range of MIDR variant/revision values of one core model, as Linux's
/// `MIDR_RANGE(model, v_min, r_min, v_max, r_max)`.
#[derive(Clone, Copy, Debug)]
pub struct MidrRange {
    /// The core model the range applies to.
    pub model: CoreModel,
    /// (variant, revision), inclusive.
    pub min: (u8, u8),
    /// (variant, revision), inclusive.
    pub max: (u8, u8),
}

impl MidrRange {
    /// Linux's `MIDR_RANGE`: variants/revisions `min..=max` of one model.
    const fn new(implementer: u8, part: u16, min: (u8, u8), max: (u8, u8)) -> MidrRange {
        MidrRange {
            model: CoreModel { implementer, part },
            min,
            max,
        }
    }

    /// Whether a core falls in the range (model equal, rNpM within bounds).
    pub fn contains(&self, core: &Core) -> bool {
        core.model() == self.model && (self.min..=self.max).contains(&(core.variant, core.revision))
    }
}

/// How an erratum is recognised.
#[derive(Clone, Copy, Debug)]
pub enum Matcher {
    /// By core model and revision, per CPU.
    Midr(&'static [MidrRange]),
    /// By a boolean property on the device tree's arch timer node, and
    /// optionally by ACPI GTDT OEM identity (oem_id, oem_table_id, oem_revision).
    Firmware {
        /// The boolean device-tree property that marks the erratum.
        dt_property: &'static str,
        /// ACPI GTDT OEM identities (oem_id, oem_table_id, oem_revision) that mark it.
        acpi_gtdt_oem: &'static [(&'static str, &'static str, u32)],
    },
}

/// One erratum Linux works around in its counter reads.
#[derive(Clone, Copy, Debug)]
pub struct KnownErratum {
    /// As Linux names it: `ARM erratum 858921`.
    pub id: &'static str,
    /// The kernel option that enables the workaround.
    pub linux_config: &'static str,
    /// What goes wrong.
    pub problem: &'static str,
    /// Whether 64-bit (AArch64) reads of CNTVCT_EL0 are affected.
    pub affects_aarch64: bool,
    /// What Linux does about it.
    pub linux_workaround: &'static str,
    /// How the erratum is detected on a machine.
    pub matcher: Matcher,
}

const TRAPS: &str = "Linux replaces its own counter reads with a retrying accessor, stops using the counter in the \
vDSO and traps user-space CNTVCT_EL0 reads (each read becomes a kernel trap: correct but as slow as a system call)";

/// Every counter erratum Linux's arch timer driver knows.
pub const KNOWN_ERRATA: &[KnownErratum] = &[
    KnownErratum {
        id: "ARM erratum 858921",
        linux_config: "CONFIG_ARM64_ERRATUM_858921",
        problem: "Cortex-A73 (all revisions): a CNTVCT_EL0/CNTPCT_EL0 read can return a wrong value when the \
counter crosses a 32-bit boundary",
        affects_aarch64: true,
        linux_workaround: TRAPS,
        matcher: Matcher::Midr(&[MidrRange::new(0x41, 0xd09, (0, 0), (0xf, 0xf))]),
    },
    KnownErratum {
        id: "ARM erratum 1418040",
        linux_config: "CONFIG_ARM64_ERRATUM_1418040",
        problem: "Cortex-A76 and Neoverse N1 r0p0-r3p1, Kryo 4xx Gold: in AArch32 state an MRC read following an \
MRRC read of some generic-timer registers can return a wrong value (1188873 is the same problem on Cortex-A76 \
r0p0-r2p0); 64-bit processes are not affected",
        affects_aarch64: false,
        linux_workaround: "Linux stops using the counter in the vDSO of 32-bit (compat) tasks only",
        matcher: Matcher::Midr(&[
            MidrRange::new(0x41, 0xd0b, (0, 0), (3, 1)),
            MidrRange::new(0x41, 0xd0c, (0, 0), (3, 1)),
            // Linux: "Kryo4xx Gold (rcpe to rfpf) => (r0p0 to r3p1)".
            MidrRange::new(0x51, 0x804, (0xc, 0xe), (0xf, 0xf)),
        ]),
    },
    KnownErratum {
        id: "Freescale/NXP erratum A-008585",
        linux_config: "CONFIG_FSL_ERRATUM_A008585",
        problem: "NXP/Freescale QorIQ SoCs: the counter can hold an erroneous value for a few core cycles each \
time it changes",
        affects_aarch64: true,
        linux_workaround: TRAPS,
        matcher: Matcher::Firmware {
            dt_property: "fsl,erratum-a008585",
            acpi_gtdt_oem: &[],
        },
    },
    KnownErratum {
        id: "HiSilicon erratum 161010101",
        linux_config: "CONFIG_HISILICON_ERRATUM_161010101",
        problem: "HiSilicon Hip05/Hip06/Hip07: a counter read can be wrong (Linux re-reads until two reads are \
less than 32 ticks apart)",
        affects_aarch64: true,
        linux_workaround: TRAPS,
        matcher: Matcher::Firmware {
            dt_property: "hisilicon,erratum-161010101",
            acpi_gtdt_oem: &[
                ("HISI  ", "HIP05   ", 0),
                ("HISI  ", "HIP06   ", 0),
                ("HISI  ", "HIP07   ", 0),
            ],
        },
    },
    KnownErratum {
        id: "Allwinner erratum UNKNOWN1",
        linux_config: "CONFIG_SUN50I_ERRATUM_UNKNOWN1",
        problem: "Allwinner A64: the counter's low bits are indeterminate while bit 10 or above rolls over, so a \
read can jump backwards or forwards",
        affects_aarch64: true,
        linux_workaround: TRAPS,
        matcher: Matcher::Firmware {
            dt_property: "allwinner,erratum-unknown1",
            acpi_gtdt_oem: &[],
        },
    },
];

/// An erratum found to apply to this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ErratumFinding {
    /// The erratum's name, as Linux's Kconfig help gives it.
    pub id: &'static str,
    /// What goes wrong.
    pub problem: &'static str,
    /// The evidence: `MIDR 0x410fd092 (Arm Cortex-A73 r0p2)` or the firmware property.
    pub detected_by: String,
    /// The affected CPUs; empty when the whole SoC is affected.
    pub cpus: Vec<u32>,
    /// False for errata that only affect 32-bit processes (informational).
    pub affects_aarch64: bool,
    /// What Linux does about it.
    pub linux_workaround: &'static str,
    /// The Linux config option of the workaround.
    pub linux_config: &'static str,
}

/// The device tree's arch timer node, as far as the counter is concerned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct DtTimer {
    /// The node's path under the device-tree root, e.g. `timer`.
    pub node: String,
    /// Its `clock-frequency` property: when present Linux uses it instead of CNTFRQ_EL0.
    pub clock_frequency_hz: Option<u64>,
    /// The erratum properties present on the node.
    pub erratum_properties: Vec<String>,
}

/// The ACPI GTDT header fields Linux matches errata against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct GtdtOem {
    /// The table's OEM ID.
    pub oem_id: String,
    /// The table's OEM table ID.
    pub oem_table_id: String,
    /// The table's OEM revision.
    pub oem_revision: u32,
}

/// What the firmware tables under a root say about the timer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct FirmwareEvidence {
    /// The device-tree root used, relative to the scanned root (None: no device tree).
    pub device_tree: Option<String>,
    /// The arch timer node (`arm,armv8-timer` / `arm,armv7-timer`), if found.
    pub dt_timer: Option<DtTimer>,
    /// Whether `sys/firmware/acpi/tables` exists (an ACPI system).
    pub acpi: bool,
    /// The GTDT header, when readable.
    pub gtdt: Option<GtdtOem>,
    /// What could not be checked, one line each.
    pub unchecked: Vec<String>,
}

const DT_TIMER_COMPATIBLE: [&str; 2] = ["arm,armv8-timer", "arm,armv7-timer"];

impl FirmwareEvidence {
    /// Reads the device tree (`sys/firmware/devicetree/base`, else
    /// `proc/device-tree`) and the ACPI GTDT header under `root`.
    pub fn read(root: &Path) -> FirmwareEvidence {
        let mut ev = FirmwareEvidence::default();
        let dt = ["sys/firmware/devicetree/base", "proc/device-tree"]
            .into_iter()
            .find(|p| root.join(p).is_dir());
        if let Some(rel) = dt {
            ev.device_tree = Some(rel.to_string());
            ev.dt_timer = find_dt_timer(&root.join(rel));
        }
        let tables = root.join("sys/firmware/acpi/tables");
        ev.acpi = tables.is_dir();
        if ev.acpi {
            match read_bytes(&tables.join("GTDT"), &input::FIRMWARE_TABLE) {
                Evidence::Found(bytes) => match parse_gtdt_header(&bytes) {
                    Some(oem) => ev.gtdt = Some(oem),
                    None => ev.unchecked.push(format!(
                        "sys/firmware/acpi/tables/GTDT is not a GTDT table ({} bytes): ACPI-matched counter errata \
(HiSilicon 161010101) not checked",
                        bytes.len()
                    )),
                },
                Evidence::Missing(_) => {}
                Evidence::Unreadable(why) => ev.unchecked.push(format!(
                    "{why} (readable by root only): ACPI-matched counter errata (HiSilicon 161010101) not checked"
                )),
            }
        }
        if dt.is_none() && !ev.acpi {
            ev.unchecked.push(
                "neither a device tree nor ACPI tables were found: SoC-level counter errata (NXP A-008585, HiSilicon \
161010101, Allwinner UNKNOWN1) not checked"
                    .to_string(),
            );
        } else if dt.is_some() && ev.dt_timer.is_none() && !ev.acpi {
            ev.unchecked.push(
                "the device tree has no arm,armv8-timer node: device-tree counter errata not checked".to_string(),
            );
        }
        ev
    }
}

/// Finds the arch timer node among the device tree's top two levels.
fn find_dt_timer(dt_root: &Path) -> Option<DtTimer> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dt_root).ok()?.flatten() {
        let p = entry.path();
        if p.is_dir() {
            candidates.push(p.clone());
            if let Ok(sub) = std::fs::read_dir(&p) {
                candidates.extend(sub.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
            }
        }
    }
    candidates.sort();
    let node = candidates.into_iter().find(|p| {
        read_bytes(&p.join("compatible"), &input::KERNEL_VALUE)
            .into_found()
            .is_some_and(|c| {
                c.split(|&b| b == 0)
                    .any(|s| DT_TIMER_COMPATIBLE.iter().any(|want| s == want.as_bytes()))
            })
    })?;
    let clock_frequency_hz = read_bytes(&node.join("clock-frequency"), &input::KERNEL_VALUE)
        .into_found()
        .and_then(|b| <[u8; 4]>::try_from(b.as_slice()).ok())
        .map(|b| u64::from(u32::from_be_bytes(b)));
    let mut erratum_properties: Vec<String> = KNOWN_ERRATA
        .iter()
        .filter_map(|e| match e.matcher {
            Matcher::Firmware { dt_property, .. } if node.join(dt_property).exists() => Some(dt_property.to_string()),
            _ => None,
        })
        .collect();
    erratum_properties.sort();
    Some(DtTimer {
        node: node
            .strip_prefix(dt_root)
            .unwrap_or(&node)
            .to_string_lossy()
            .into_owned(),
        clock_frequency_hz,
        erratum_properties,
    })
}

/// The OEM fields of an ACPI table header: signature at 0, OEM ID at 10 (6
/// bytes), OEM table ID at 16 (8 bytes), OEM revision at 24 (u32 LE).
pub fn parse_gtdt_header(bytes: &[u8]) -> Option<GtdtOem> {
    if bytes.len() < 28 || &bytes[0..4] != b"GTDT" {
        return None;
    }
    Some(GtdtOem {
        oem_id: String::from_utf8_lossy(&bytes[10..16]).into_owned(),
        oem_table_id: String::from_utf8_lossy(&bytes[16..24]).into_owned(),
        oem_revision: u32::from_le_bytes(bytes[24..28].try_into().ok()?),
    })
}

/// Every known erratum that applies to these cores and this firmware.
pub(crate) fn find_errata(cores: &[Core], firmware: &FirmwareEvidence) -> Vec<ErratumFinding> {
    let found = KNOWN_ERRATA.iter().filter_map(|e| {
        let (detected_by, cpus) = match e.matcher {
            Matcher::Midr(ranges) => {
                let hit: Vec<&Core> = cores.iter().filter(|c| ranges.iter().any(|r| r.contains(c))).collect();
                if hit.is_empty() {
                    return None;
                }
                let mut midrs: Vec<String> = hit
                    .iter()
                    .map(|c| format!("MIDR {} ({} {})", c.midr, c.name, c.rnpn))
                    .collect();
                midrs.dedup();
                (midrs.join(", "), hit.iter().map(|c| c.cpu).collect())
            }
            Matcher::Firmware {
                dt_property,
                acpi_gtdt_oem,
            } => {
                let dt_hit = firmware
                    .dt_timer
                    .as_ref()
                    .filter(|t| t.erratum_properties.iter().any(|p| p == dt_property));
                let acpi_hit = firmware.gtdt.as_ref().filter(|g| {
                    acpi_gtdt_oem
                        .iter()
                        .any(|(id, table, rev)| g.oem_id == *id && g.oem_table_id == *table && g.oem_revision == *rev)
                });
                let detected_by = match (dt_hit, acpi_hit) {
                    (Some(t), _) => format!("device tree: property {dt_property} on the timer node {}", t.node),
                    (None, Some(g)) => format!(
                        "ACPI GTDT OEM id {:?}, table id {:?}, revision {}",
                        g.oem_id, g.oem_table_id, g.oem_revision
                    ),
                    (None, None) => return None,
                };
                (detected_by, Vec::new())
            }
        };
        Some(ErratumFinding {
            id: e.id,
            problem: e.problem,
            detected_by,
            cpus,
            affects_aarch64: e.affects_aarch64,
            linux_workaround: e.linux_workaround,
            linux_config: e.linux_config,
        })
    });
    found.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::cores::IdSource;
    use crate::arm::midr::Midr;

    fn core(cpu: u32, raw: u32) -> Core {
        Core::new(cpu, Midr::from_raw(raw), IdSource::SysfsMidr)
    }

    #[test]
    fn a73_matches_858921_on_its_cpus_only() {
        let cores = [core(0, 0x410f_d034), core(1, 0x410f_d092), core(2, 0x410f_d092)];
        let f = find_errata(&cores, &FirmwareEvidence::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "ARM erratum 858921");
        assert_eq!(f[0].cpus, vec![1, 2]);
        assert!(f[0].affects_aarch64);
        assert_eq!(f[0].detected_by, "MIDR 0x410fd092 (Arm Cortex-A73 r0p2)");
    }

    #[test]
    fn erratum_1418040_follows_linux_revision_ranges() {
        // Neoverse N1 r3p1 (Graviton2) is in range, r4p0 would not be.
        let f = find_errata(&[core(0, 0x413f_d0c1)], &FirmwareEvidence::default());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "ARM erratum 1418040");
        assert!(!f[0].affects_aarch64);
        assert!(find_errata(&[core(0, 0x414f_d0c0)], &FirmwareEvidence::default()).is_empty());
        // Kryo 4xx Gold: Linux's rcpe..rfpf.
        assert_eq!(
            find_errata(&[core(0, 0x51df_804e)], &FirmwareEvidence::default()).len(),
            1
        );
        assert!(find_errata(&[core(0, 0x51cf_804d)], &FirmwareEvidence::default()).is_empty());
        // Cortex-A55 and Neoverse V1: nothing known.
        assert!(find_errata(
            &[core(0, 0x412f_d050), core(1, 0x411f_d401)],
            &FirmwareEvidence::default()
        )
        .is_empty());
    }

    #[test]
    fn gtdt_header_is_decoded_and_matched() {
        let mut t = b"GTDT".to_vec();
        t.extend_from_slice(&96u32.to_le_bytes()); // length
        t.push(2); // revision
        t.push(0); // checksum
        t.extend_from_slice(b"HISI  HIP07   ");
        t.extend_from_slice(&0u32.to_le_bytes());
        t.extend_from_slice(b"INTL");
        let oem = parse_gtdt_header(&t).unwrap();
        assert_eq!(oem.oem_table_id, "HIP07   ");
        let fw = FirmwareEvidence {
            acpi: true,
            gtdt: Some(oem),
            ..Default::default()
        };
        let f = find_errata(&[], &fw);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "HiSilicon erratum 161010101");
        assert!(f[0].cpus.is_empty());
        assert!(parse_gtdt_header(b"FACP").is_none());
    }
}
