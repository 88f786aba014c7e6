//! `/proc/cpuinfo`: the CPU model and the TSC flags the kernel derived (it
//! also clears flags it distrusts, so they can differ from raw CPUID), and the
//! raw ARM identification lines per processor.

use serde::Serialize;

/// What `/proc/cpuinfo` says, from the first processor's block unless noted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CpuInfo {
    /// `vendor_id` (x86: "GenuineIntel", "AuthenticAMD").
    pub vendor_id: Option<String>,
    /// `model name` (x86) or `Hardware`/`Processor` text when present.
    pub model_name: Option<String>,
    /// x86 `cpu family`, `model`, `stepping` in decimal.
    pub cpu_family: Option<u32>,
    /// x86 `model`, decimal.
    pub model: Option<u32>,
    /// x86 `stepping`, decimal.
    pub stepping: Option<u32>,
    /// Number of `processor : N` blocks.
    pub processors: usize,
    /// The TSC-related flags of the first processor.
    pub tsc_flags: TscFlags,
    /// Per processor, the raw ARM identification lines (empty on x86).
    pub arm_cpus: Vec<ArmCpuId>,
    /// Every flag of the first processor (`flags` on x86, `Features` on ARM).
    #[serde(skip)]
    pub flags: Vec<String>,
}

/// The TSC flags of `/proc/cpuinfo` (x86). The kernel sets `constant_tsc`
/// and `nonstop_tsc` from CPUID 0x80000007 EDX bit 8, `tsc_known_freq` when
/// it took the frequency from CPUID or a hypervisor rather than measuring,
/// and `tsc_reliable` when it skips the clocksource watchdog for the TSC.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct TscFlags {
    /// `tsc`: the CPU has a time-stamp counter.
    pub tsc: bool,
    /// `constant_tsc`: it ticks at a constant rate whatever the core's frequency.
    pub constant_tsc: bool,
    /// `nonstop_tsc`: it keeps ticking in deep C-states.
    pub nonstop_tsc: bool,
    /// `tsc_known_freq`: the kernel took the frequency from CPUID or the hypervisor.
    pub tsc_known_freq: bool,
    /// `tsc_reliable`: the kernel skips the clocksource watchdog for the TSC.
    pub tsc_reliable: bool,
    /// `tsc_adjust`: the IA32_TSC_ADJUST MSR exists (the kernel keeps CPUs in sync with it).
    pub tsc_adjust: bool,
    /// `rdtscp`: the RDTSCP instruction exists.
    pub rdtscp: bool,
    /// `hypervisor`: CPUID says the kernel runs under a hypervisor.
    pub hypervisor: bool,
}

/// One processor's ARM identification lines, raw as the kernel prints them
/// (`CPU implementer : 0x41`, `CPU part : 0xd0c`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct ArmCpuId {
    /// `processor`: the kernel's CPU number.
    pub processor: Option<u32>,
    /// `CPU implementer` (e.g. `0x41`, Arm).
    pub implementer: Option<String>,
    /// `CPU architecture` (e.g. `8`).
    pub architecture: Option<String>,
    /// `CPU variant` (e.g. `0x1`).
    pub variant: Option<String>,
    /// `CPU part` (e.g. `0xd0c`, Neoverse N1).
    pub part: Option<String>,
    /// `CPU revision` (e.g. `1`).
    pub revision: Option<String>,
}

impl CpuInfo {
    /// Parses the text of `/proc/cpuinfo`. Errors when the text has no
    /// processor block at all (an empty or foreign file).
    pub fn parse(text: &str) -> Result<CpuInfo, String> {
        let mut info = CpuInfo::default();
        let mut have_flags = false;
        for line in text.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            let first = info.processors <= 1;
            match key {
                "processor" => {
                    info.processors += 1;
                    let n = value.parse::<u32>().ok();
                    info.arm_cpus.push(ArmCpuId {
                        processor: n,
                        ..ArmCpuId::default()
                    });
                }
                "vendor_id" if first && info.vendor_id.is_none() => info.vendor_id = Some(value.to_string()),
                "model name" if first && info.model_name.is_none() => info.model_name = Some(value.to_string()),
                "cpu family" if first && info.cpu_family.is_none() => info.cpu_family = value.parse().ok(),
                "model" if first && info.model.is_none() => info.model = value.parse().ok(),
                "stepping" if first && info.stepping.is_none() => info.stepping = value.parse().ok(),
                "flags" | "Features" if !have_flags => {
                    have_flags = true;
                    info.flags = value.split_whitespace().map(str::to_string).collect();
                }
                "CPU implementer" | "CPU architecture" | "CPU variant" | "CPU part" | "CPU revision" => {
                    if info.arm_cpus.is_empty() {
                        info.arm_cpus.push(ArmCpuId::default());
                    }
                    let cpu = info.arm_cpus.last_mut().expect("pushed above");
                    let slot = match key {
                        "CPU implementer" => &mut cpu.implementer,
                        "CPU architecture" => &mut cpu.architecture,
                        "CPU variant" => &mut cpu.variant,
                        "CPU part" => &mut cpu.part,
                        _ => &mut cpu.revision,
                    };
                    *slot = Some(value.to_string());
                }
                "Hardware" if info.model_name.is_none() => info.model_name = Some(value.to_string()),
                _ => {}
            }
        }
        if info.processors == 0 && info.vendor_id.is_none() && !have_flags {
            return Err("no processor entries".to_string());
        }
        // Keep ARM ids only when some processor has them.
        if info
            .arm_cpus
            .iter()
            .all(|c| c.implementer.is_none() && c.part.is_none())
        {
            info.arm_cpus.clear();
        }
        let has = |f: &str| info.flags.iter().any(|x| x == f);
        info.tsc_flags = TscFlags {
            tsc: has("tsc"),
            constant_tsc: has("constant_tsc"),
            nonstop_tsc: has("nonstop_tsc"),
            tsc_known_freq: has("tsc_known_freq"),
            tsc_reliable: has("tsc_reliable"),
            tsc_adjust: has("tsc_adjust"),
            rdtscp: has("rdtscp"),
            hypervisor: has("hypervisor"),
        };
        Ok(info)
    }
}
