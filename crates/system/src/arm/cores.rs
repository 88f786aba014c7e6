//! Which cores this machine has: MIDR_EL1 per CPU from sysfs or /proc/cpuinfo, and whether they are all alike.
//!
//! Sources, read under a root path so tests use a fake tree:
//! 1. `sys/devices/system/cpu/cpuN/regs/identification/midr_el1`: the exact
//!    register, per online CPU (Linux 4.11+).
//! 2. `proc/cpuinfo`: one block per processor with "CPU implementer",
//!    "CPU variant", "CPU part", "CPU revision". It does not publish the MIDR
//!    architecture field; every AArch64 core reports 0xf there ("features
//!    identified in the ID registers"), so a MIDR rebuilt from cpuinfo carries
//!    0xf and says `source: proc_cpuinfo`.
//!
//! A CPU found in sysfs is taken from sysfs; cpuinfo fills the CPUs sysfs
//! does not list (older kernels have no `regs/identification`).

use super::midr::{CoreModel, Midr};
use crate::linux::Evidence;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Where a core's identification came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IdSource {
    /// `/sys/devices/system/cpu/cpuN/regs/identification/midr_el1`.
    SysfsMidr,
    /// The "CPU implementer/variant/part/revision" lines of `/proc/cpuinfo`.
    ProcCpuinfo,
}

/// One logical CPU's identification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Core {
    /// Logical CPU number (`cpuN`, cpuinfo's "processor").
    pub cpu: u32,
    /// The register value (hex in JSON).
    pub midr: Midr,
    /// Implementer code (MIDR bits 31:24; 0x41 is Arm).
    pub implementer: u8,
    /// Variant (MIDR bits 23:20, the `r` of `rNpN`).
    pub variant: u8,
    /// Part number (MIDR bits 15:4).
    pub part: u16,
    /// Revision (MIDR bits 3:0, the `p` of `rNpN`).
    pub revision: u8,
    /// `r3p1`.
    pub rnpn: String,
    /// `Arm Neoverse N1`, or the numbers when the part is not in the table.
    pub name: String,
    /// Where the identification was read.
    pub source: IdSource,
}

impl Core {
    /// The identification of logical CPU `cpu` from its MIDR, read from `source`.
    pub fn new(cpu: u32, midr: Midr, source: IdSource) -> Core {
        Core {
            cpu,
            midr,
            implementer: midr.implementer(),
            variant: midr.variant(),
            part: midr.part(),
            revision: midr.revision(),
            rnpn: midr.rnpn(),
            name: midr.model().display_name(),
            source,
        }
    }

    /// The core model (implementer and part) this CPU reports.
    pub fn model(&self) -> CoreModel {
        self.midr.model()
    }
}

/// A group of CPUs that report the same implementer and part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CoreType {
    /// Implementer code shared by the group.
    pub implementer: u8,
    /// Part number shared by the group.
    pub part: u16,
    /// The model's display name (`Arm Neoverse N1`, or the numbers).
    pub name: String,
    /// The logical CPUs of this type, ascending.
    pub cpus: Vec<u32>,
}

/// The cores found under a root, and what could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuScan {
    /// Ascending by CPU number.
    pub cores: Vec<Core>,
    /// Files that existed but could not be decoded, one line each.
    pub problems: Vec<String>,
}

impl CpuScan {
    /// Reads sysfs MIDR files and /proc/cpuinfo under `root` (`/` on a live system).
    pub fn read(root: &Path) -> CpuScan {
        let mut scan = CpuScan::default();
        let mut by_cpu: BTreeMap<u32, Core> = BTreeMap::new();
        let cpu_dir = root.join("sys/devices/system/cpu");
        if let Ok(entries) = std::fs::read_dir(&cpu_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(cpu) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("cpu"))
                    .and_then(|n| n.parse().ok())
                else {
                    continue;
                };
                let path = entry.path().join("regs/identification/midr_el1");
                let text = match crate::linux::read_text(&path, &crate::input::KERNEL_VALUE) {
                    Evidence::Found(text) => text,
                    Evidence::Missing(_) => continue,
                    Evidence::Unreadable(why) => {
                        scan.problems.push(format!("cpu{cpu}: {why}"));
                        continue;
                    }
                };
                match Midr::parse_sysfs(&text) {
                    Ok(midr) => {
                        by_cpu.insert(cpu, Core::new(cpu, midr, IdSource::SysfsMidr));
                    }
                    Err(e) => scan.problems.push(format!("cpu{cpu}: {e}")),
                }
            }
        }
        match crate::linux::read_cpuinfo_text(root) {
            Evidence::Found(text) => {
                let parsed = parse_cpuinfo(&text);
                scan.problems.extend(parsed.problems);
                for core in parsed.cores {
                    by_cpu.entry(core.cpu).or_insert(core);
                }
            }
            Evidence::Missing(_) => {}
            Evidence::Unreadable(why) => scan.problems.push(why),
        }
        scan.cores = by_cpu.into_values().collect();
        scan
    }
}

/// Parses arm64 `/proc/cpuinfo` text into one [`Core`] per processor block.
/// Blocks without "CPU implementer" and "CPU part" (an x86 cpuinfo, say) are
/// skipped; a block without "processor" takes the next number in order.
pub fn parse_cpuinfo(text: &str) -> CpuScan {
    let mut scan = CpuScan::default();
    let mut next_cpu = 0u32;
    for block in text.split("\n\n") {
        let mut processor = None;
        let (mut imp, mut var, mut part, mut rev) = (None, None, None, None);
        for line in block.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            let field = match key {
                "processor" => &mut processor,
                "CPU implementer" => &mut imp,
                "CPU variant" => &mut var,
                "CPU part" => &mut part,
                "CPU revision" => &mut rev,
                _ => continue,
            };
            match parse_number(value) {
                Some(v) => *field = Some(v),
                None => scan
                    .problems
                    .push(format!("/proc/cpuinfo: {key} {value:?} is not a number")),
            }
        }
        let (Some(imp), Some(part)) = (imp, part) else {
            continue;
        };
        let cpu = processor.map_or(next_cpu, |p| p as u32);
        next_cpu = cpu + 1;
        let (Ok(imp), Ok(part)) = (u8::try_from(imp), u16::try_from(part)) else {
            scan.problems.push(format!(
                "/proc/cpuinfo: processor {cpu}: implementer or part out of range"
            ));
            continue;
        };
        let midr = Midr::from_fields(imp, var.unwrap_or(0) as u8, 0xf, part, rev.unwrap_or(0) as u8);
        scan.cores.push(Core::new(cpu, midr, IdSource::ProcCpuinfo));
    }
    scan
}

/// `0x41` (hex) or `1` (decimal), as cpuinfo prints them.
fn parse_number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Groups cores by implementer and part, in order of their first CPU.
pub fn core_types(cores: &[Core]) -> Vec<CoreType> {
    let mut types: Vec<CoreType> = Vec::new();
    for core in cores {
        match types
            .iter_mut()
            .find(|t| t.implementer == core.implementer && t.part == core.part)
        {
            Some(t) => t.cpus.push(core.cpu),
            None => types.push(CoreType {
                implementer: core.implementer,
                part: core.part,
                name: core.name.clone(),
                cpus: vec![core.cpu],
            }),
        }
    }
    types
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_TYPES: &str = "processor\t: 0\nBogoMIPS\t: 48.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n\
CPU variant\t: 0x2\nCPU part\t: 0xd05\nCPU revision\t: 0\n\n\
processor\t: 1\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 0\n";

    #[test]
    fn cpuinfo_blocks_become_cores() {
        let scan = parse_cpuinfo(TWO_TYPES);
        assert!(scan.problems.is_empty(), "{:?}", scan.problems);
        assert_eq!(scan.cores.len(), 2);
        assert_eq!(scan.cores[0].midr.raw(), 0x412f_d050);
        assert_eq!(scan.cores[0].name, "Arm Cortex-A55");
        assert_eq!(scan.cores[1].cpu, 1);
        assert_eq!(scan.cores[1].rnpn, "r4p0");
        assert_eq!(scan.cores[1].source, IdSource::ProcCpuinfo);
        assert_ne!(core_types(&scan.cores).len(), 1, "not homogeneous");
        let types = core_types(&scan.cores);
        assert_eq!(types.len(), 2);
        assert_eq!(types[1].name, "Arm Cortex-A76");
    }

    #[test]
    fn x86_cpuinfo_has_no_arm_cores() {
        let scan = parse_cpuinfo("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nbogomips\t: 5199.99\n");
        assert!(scan.cores.is_empty());
        assert_ne!(core_types(&scan.cores).len(), 1, "no cores is not homogeneous");
    }

    #[test]
    fn garbage_numbers_are_reported() {
        let scan = parse_cpuinfo("processor : 0\nCPU implementer : 0x41\nCPU part : banana\n");
        assert!(scan.cores.is_empty());
        assert_eq!(scan.problems.len(), 1);
        assert!(scan.problems[0].contains("banana"));
    }
}
