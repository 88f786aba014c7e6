//! The machine at both levels: the CPU and the kernel. The one screen gives
//! each a line; the full report gives the CPU's identity and its CPUID flags
//! (leaves 0x15 and 0x16 with them), and the kernel's evidence with its TSC
//! and clocksource messages.

use super::{heading, Detail, SCREEN_LABEL_W};
use crate::i18n::{library::reason, pad_right};
use crate::report::text::{column_width, write_line};
use crate::t;
use clockscope_system::linux::tsc_messages::Machine;
use clockscope_system::linux::{KernelCmdline, TscFlags};
use clockscope_system::tsc::policy::KernelLogTsc;
use clockscope_system::tsc::TscReport;
use std::io::Write;

/// Writes the CPU and the kernel at `detail`.
pub(super) fn write(out: &mut dyn Write, r: &TscReport, detail: Detail) -> std::io::Result<()> {
    match detail {
        Detail::Screen => {
            write_cpu_line(out, r)?;
            write_kernel_line(out, r)
        }
        Detail::Full => {
            write_cpu(out, r)?;
            writeln!(out)?;
            write_cpuid_flags(out, r)?;
            write_linux(out, r)
        }
    }
}

/// The one screen's CPU: its brand, vendor, family and model, and the
/// hypervisor it runs under; nothing without CPUID.
fn write_cpu_line(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let Some(f) = &r.cpuid else { return Ok(()) };
    let hv = f.hypervisor.as_ref().map_or(String::new(), |h| {
        t!(", guest of \"{hypervisor}\"", hypervisor = h.signature)
    });
    let cpu = t!(
        "{brand} ({vendor}, family {family} model {model}){hypervisor}",
        brand = f.brand.as_deref().unwrap_or(t!("(no brand)")),
        vendor = f.vendor,
        family = format!("{:#x}", f.family),
        model = format!("{:#x}", f.model),
        hypervisor = hv
    );
    writeln_escaped!(out, "{}{cpu}", pad_right(t!("CPU"), SCREEN_LABEL_W))
}

/// The one screen's kernel: its release and clocksource; nothing for a dump.
fn write_kernel_line(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let Some(k) = &r.linux else { return Ok(()) };
    let kernel = t!(
        "{release}, clocksource {current} (available: {available})",
        release = k.kernel_release.describe(|s| s.clone()),
        current = k.current_clocksource.describe(|s| s.clone()),
        available = k.available_clocksources.describe(|v| v.join(" "))
    );
    writeln_escaped!(out, "{}{kernel}", pad_right(t!("Kernel"), SCREEN_LABEL_W))
}

/// The labels of the CPU and Linux blocks, one column (24 in English).
fn machine_labels() -> [&'static str; 10] {
    [
        t!("vendor"),
        t!("family/model/stepping"),
        t!("brand"),
        t!("highest leaves"),
        t!("kernel"),
        t!("clocksource"),
        t!("cpuinfo TSC flags"),
        t!("cpuinfo model name"),
        t!("boot options"),
        t!("kernel log"),
    ]
}

/// `  label   value` in the CPU and Linux blocks.
fn machine_line(out: &mut dyn Write, label: &str, value: &str) -> std::io::Result<()> {
    let w = column_width(machine_labels(), 2, 24);
    writeln_escaped!(out, "  {}{value}", pad_right(label, w))
}

/// The CPU's identity from CPUID.
fn write_cpu(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    writeln_escaped!(out, "{}", heading(t!("CPU")))?;
    match &r.cpuid {
        None => write_line(
            out,
            &t!(
                "  no CPUID on this architecture ({arch}): the TSC is x86's",
                arch = std::env::consts::ARCH
            ),
        )?,
        Some(f) => {
            machine_line(out, t!("vendor"), &f.vendor)?;
            let fms = t!(
                "{family}/{model}/{stepping}  (signature {signature}, family {family_dec}, model {model_dec})",
                family = format!("{:#x}", f.family),
                model = format!("{:#x}", f.model),
                stepping = f.stepping,
                signature = format!("{:#010x}", f.signature_eax),
                family_dec = f.family,
                model_dec = f.model
            );
            machine_line(out, t!("family/model/stepping"), &fms)?;
            machine_line(out, t!("brand"), f.brand.as_deref().unwrap_or(t!("(none)")))?;
            let leaves = t!(
                "basic {basic}, extended {extended}",
                basic = format!("{:#x}", f.max_basic_leaf),
                extended = format!("{:#x}", f.max_extended_leaf)
            );
            machine_line(out, t!("highest leaves"), &leaves)?;
        }
    }
    Ok(())
}

/// `yes` or `no` in the report's language.
fn yes_no(b: bool) -> &'static str {
    if b {
        t!("yes")
    } else {
        t!("no")
    }
}

/// The CPUID flags that matter to the TSC, and leaves 0x15 and 0x16,
/// followed by a blank line; nothing without CPUID.
fn write_cpuid_flags(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    let Some(f) = &r.cpuid else { return Ok(()) };
    write_line(out, t!("CPUID flags"))?;
    // A flag of a leaf the CPU does not report is unknown, not "no".
    let flag = |leaf: u32, b: bool| f.unreported(leaf).map_or_else(|| yes_no(b).to_string(), |w| reason(&w));
    let hv = match (&f.hypervisor, f.hypervisor_bit) {
        (_, false) => t!("no").to_string(),
        (None, true) => t!("yes (leaf 0x40000000 not read)").to_string(),
        (Some(h), true) => t!(
            "yes: \"{signature}\", highest leaf {leaf}{khz}",
            signature = h.signature,
            leaf = format!("{:#010x}", h.max_leaf),
            khz = h
                .timing_leaf_tsc_khz
                .map_or(String::new(), |k| t!(", 0x40000010 EAX {khz} kHz", khz = k))
        ),
    };
    let rows = [
        ("TSC", t!("(1 EDX bit 4)"), flag(1, f.tsc)),
        ("RDTSCP", t!("(0x80000001 EDX bit 27)"), flag(0x8000_0001, f.rdtscp)),
        (
            t!("invariant TSC"),
            t!("(0x80000007 EDX bit 8)"),
            flag(0x8000_0007, f.invariant_tsc),
        ),
        ("TSC_ADJUST", t!("(7.0 EBX bit 1)"), flag(7, f.tsc_adjust)),
        (t!("hypervisor"), t!("(1 ECX bit 31)"), hv),
    ];
    let name_w = column_width(rows.iter().map(|r| r.0), 2, 16);
    let where_w = column_width(rows.iter().map(|r| r.1), 2, 25);
    for (name, bits, value) in &rows {
        writeln_escaped!(out, "  {}{}{value}", pad_right(name, name_w), pad_right(bits, where_w))?;
    }
    let unreported = |leaf: u32| {
        f.unreported(leaf)
            .map_or_else(|| t!("not reported").to_string(), |w| reason(&w))
    };
    let l15 = f.leaf_15.map_or_else(
        || unreported(0x15),
        |l| {
            t!(
                "EAX {eax} (denominator), EBX {ebx} (numerator), ECX {ecx} Hz (crystal)",
                eax = l.eax_denominator,
                ebx = l.ebx_numerator,
                ecx = l.ecx_crystal_hz
            )
        },
    );
    writeln_escaped!(out, "  {}{l15}", pad_right(t!("leaf 0x15"), name_w + where_w))?;
    let l16 = f.leaf_16.map_or_else(
        || unreported(0x16),
        |l| {
            t!(
                "base {base} MHz, max {max} MHz, bus {bus} MHz",
                base = l.base_mhz,
                max = l.max_mhz,
                bus = l.bus_mhz
            )
        },
    );
    writeln_escaped!(out, "  {}{l16}", pad_right(t!("leaf 0x16"), name_w + where_w))?;
    writeln!(out)
}

/// /proc/cpuinfo's TSC flags: those present, then those absent.
fn tsc_flags_text(f: &TscFlags) -> String {
    let all = [
        ("constant_tsc", f.constant_tsc),
        ("nonstop_tsc", f.nonstop_tsc),
        ("tsc_known_freq", f.tsc_known_freq),
        ("tsc_reliable", f.tsc_reliable),
        ("tsc_adjust", f.tsc_adjust),
        ("rdtscp", f.rdtscp),
        ("hypervisor", f.hypervisor),
    ];
    let have: Vec<&str> = all.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
    let lack: Vec<&str> = all.iter().filter(|(_, b)| !*b).map(|(n, _)| *n).collect();
    let list = |v: Vec<&str>| {
        if v.is_empty() {
            t!("none").to_string()
        } else {
            v.join(" ")
        }
    };
    t!("{have} (absent: {lack})", have = list(have), lack = list(lack))
}

/// The boot options that bear on the TSC.
fn boot_options_text(c: &KernelCmdline) -> String {
    let mut parts: Vec<String> = c.tsc.iter().map(|t| format!("tsc={t}")).collect();
    if let Some(cs) = &c.clocksource {
        parts.push(format!("clocksource={cs}"));
    }
    if c.notsc {
        parts.push("notsc".to_string());
    }
    if parts.is_empty() {
        t!("no tsc=, clocksource= or notsc").to_string()
    } else {
        parts.join(" ")
    }
}

/// What the kernel log says of the TSC: its frequency, whether it was
/// marked unstable, how many records were read.
fn kernel_log_text(l: &KernelLogTsc) -> String {
    let khz = match (l.tsc_khz, l.tsc_khz_message) {
        (Some(k), Some(m)) => t!("{khz} kHz ({message})", khz = k, message = reason(m)),
        _ => t!("no \"tsc: Detected/Refined\" line").to_string(),
    };
    let unstable = if l.marked_unstable {
        t!(
            "TSC marked unstable: {evidence}",
            evidence = l.unstable_evidence.join("; ")
        )
    } else {
        t!("TSC never marked unstable").to_string()
    };
    crate::tn!(
        "{khz}; {unstable}; {n} records",
        "{khz}; {unstable}; {n} records",
        l.records,
        khz = khz,
        unstable = unstable,
        n = l.records
    )
}

/// The kernel's evidence, and its TSC and clocksource messages.
fn write_linux(out: &mut dyn Write, r: &TscReport) -> std::io::Result<()> {
    writeln_escaped!(out, "Linux")?;
    let Some(k) = &r.linux else {
        return write_line(out, t!("  not read: analysing a CPUID dump"));
    };
    machine_line(out, t!("kernel"), &k.kernel_release.describe(|s| s.clone()))?;
    let cs = t!(
        "{current} (available: {available})",
        current = k.current_clocksource.describe(|s| s.clone()),
        available = k.available_clocksources.describe(|v| v.join(" "))
    );
    machine_line(out, t!("clocksource"), &cs)?;
    machine_line(out, t!("cpuinfo TSC flags"), &k.tsc_flags.describe(tsc_flags_text))?;
    if let Some(m) = &k.cpu_model_name {
        machine_line(out, t!("cpuinfo model name"), m)?;
    }
    machine_line(out, t!("boot options"), &k.cmdline.describe(boot_options_text))?;
    machine_line(out, t!("kernel log"), &k.kernel_log.describe(kernel_log_text))?;
    if let Some(l) = k.kernel_log.found() {
        writeln!(out)?;
        write_line(out, t!("Kernel log, TSC and clocksource messages"))?;
        let machine = match &r.hypervisor {
            Some(_) => Machine::Guest,
            None if r.cpuid.is_some() => Machine::BareMetal,
            None => Machine::Unknown,
        };
        crate::commands::tsc::evidence::write_kernel_messages(out, "  ", &l.messages, Some(machine))?;
    }
    Ok(())
}
