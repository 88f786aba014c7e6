//! The kernel's TSC and clocksource messages, recognised and explained: what
//! each one a DBA would grep for means on this machine, bare metal or guest.
//!
//! The formats are the kernel's own (arch/x86/kernel/tsc.c, tsc_sync.c,
//! cpu/amd.c, cpu/vmware.c, apic/apic.c, kvmclock.c and
//! kernel/time/clocksource.c), matched on their fixed text so every kernel
//! version's variant of a line is still recognised. The message text comes
//! from the kernel log and is untrusted: it is kept verbatim here and escaped
//! where a report renders it.

use serde::Serialize;

/// Where the kernel runs: it changes what several messages mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Machine {
    /// No hypervisor (CPUID's hypervisor bit is clear).
    BareMetal,
    /// Under a hypervisor.
    Guest,
    /// Not known (/proc/cpuinfo unreadable).
    Unknown,
}

impl Machine {
    /// From the kernel's `hypervisor` cpuinfo flag, when known.
    pub fn from_hypervisor_flag(flag: Option<bool>) -> Machine {
        match flag {
            Some(true) => Machine::Guest,
            Some(false) => Machine::BareMetal,
            None => Machine::Unknown,
        }
    }

    /// A guest when the kernel's cpuinfo `hypervisor` flag or
    /// /sys/hypervisor/type says so; bare metal when cpuinfo was read and
    /// says neither; otherwise unknown.
    pub fn of(e: &super::LinuxEvidence) -> Machine {
        Machine::from_hypervisor_flag(
            match (
                e.cpuinfo.found().map(|c| c.tsc_flags.hypervisor),
                e.hypervisor_type.is_found(),
            ) {
                (Some(true), _) | (_, true) => Some(true),
                (Some(false), false) => Some(false),
                (None, false) => None,
            },
        )
    }

    /// How reports name it.
    pub const fn label(self) -> &'static str {
        match self {
            Machine::BareMetal => "bare metal",
            Machine::Guest => "guest",
            Machine::Unknown => "bare metal or guest (unknown)",
        }
    }
}

/// The messages clockscope recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// `[Firmware Bug]: TSC doesn't count with P0 frequency!` (cpu/amd.c).
    FirmwareBugP0,
    /// `TSC ADJUST differs: ...`, `TSC ADJUST: CPU%u: %lld force to 0` (tsc_sync.c).
    TscAdjustDiffers,
    /// `TSC ADJUST compensate: CPU%u observed %lld warp. Adjust: %lld` (tsc_sync.c).
    TscAdjustCompensate,
    /// `tsc: Marking TSC unstable due to <reason>` (tsc.c).
    TscMarkedUnstable,
    /// `TSC found unstable after boot, most likely due to broken BIOS.` (tsc.c).
    TscUnstableAfterBoot,
    /// `timekeeping watchdog on CPU%d: Marking clocksource '%s' as unstable` (clocksource.c).
    ClocksourceMarkedUnstable,
    /// `TSC synchronization [CPU#a -> CPU#b]:` / `Measured N cycles TSC warp between CPUs` (tsc_sync.c).
    TscWarp,
    /// `tsc: Fast TSC calibration failed` (tsc.c).
    FastCalibrationFailed,
    /// `tsc: Refined TSC clocksource calibration: N MHz` (tsc.c).
    RefinedCalibration,
    /// `tsc: Detected N MHz processor|TSC` (tsc.c).
    TscDetected,
    /// `TSC freq read from hypervisor : N MHz` (cpu/vmware.c).
    HypervisorFrequency,
    /// `clocksource: Switched to clocksource <name>` (clocksource.c).
    SwitchedClocksource,
    /// `kvm-clock: ...` (kvmclock.c).
    KvmClock,
    /// `TSC deadline timer available|enabled` (apic.c).
    TscDeadlineTimer,
}

/// How much a message asks of a reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Explains how the kernel set the clock up.
    Info,
    /// Something to check or act on.
    Warning,
}

/// One recognised message (all lines of its kind grouped), with its meaning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelMessage {
    pub kind: MessageKind,
    pub severity: Severity,
    /// The first line of this kind, verbatim (untrusted: escape when shown).
    pub message: String,
    /// Lines of this kind in the log.
    pub count: u64,
    /// The last line of this kind when it differs from the first.
    pub last_message: Option<String>,
    /// What it means on this machine.
    pub meaning: String,
}

/// The kind of a message (without its log prefix), if clockscope knows it.
pub fn classify(msg: &str) -> Option<MessageKind> {
    let has = |needle: &str| msg.contains(needle);
    Some(if has("TSC doesn't count with P0 frequency") {
        MessageKind::FirmwareBugP0
    } else if has("TSC ADJUST compensate") {
        MessageKind::TscAdjustCompensate
    } else if has("TSC ADJUST differs") || (has("TSC ADJUST: CPU") && has("force to 0")) {
        MessageKind::TscAdjustDiffers
    } else if has("Marking TSC unstable due to") {
        MessageKind::TscMarkedUnstable
    } else if has("TSC found unstable after boot") {
        MessageKind::TscUnstableAfterBoot
    } else if has("Marking clocksource '") && has("as unstable") {
        MessageKind::ClocksourceMarkedUnstable
    } else if (has("TSC synchronization [CPU#") && !has("passed")) || has("cycles TSC warp between CPUs") {
        MessageKind::TscWarp
    } else if has("Fast TSC calibration failed") {
        MessageKind::FastCalibrationFailed
    } else if has("Refined TSC clocksource calibration") {
        MessageKind::RefinedCalibration
    } else if has("tsc: Detected ") && has(" MHz") {
        MessageKind::TscDetected
    } else if has("TSC freq read from hypervisor") {
        MessageKind::HypervisorFrequency
    } else if has("Switched to clocksource ") {
        MessageKind::SwitchedClocksource
    } else if has("kvm-clock: ") {
        MessageKind::KvmClock
    } else if has("TSC deadline timer") || has("TSC_DEADLINE disabled") {
        MessageKind::TscDeadlineTimer
    } else {
        return None;
    })
}

/// The text after `needle` in `msg`, trimmed.
fn after<'a>(msg: &'a str, needle: &str) -> Option<&'a str> {
    msg.find(needle).map(|i| msg[i + needle.len()..].trim())
}

/// Picks the bare-metal, guest or (unknown) both-sides text.
fn by_machine(machine: Machine, bare: &str, guest: &str) -> String {
    match machine {
        Machine::BareMetal => bare.to_string(),
        Machine::Guest => guest.to_string(),
        Machine::Unknown => format!("on bare metal: {bare}; in a guest: {guest}"),
    }
}

/// Why the kernel marked the TSC unstable, from the reason it printed.
fn unstable_reason_meaning(reason: &str, machine: Machine) -> String {
    let r = reason.trim().to_ascii_lowercase();
    let why = if r.contains("clocksource watchdog") {
        by_machine(
            machine,
            "the watchdog clock (hpet/acpi_pm) and the TSC drifted apart: a real TSC fault, \
             or SMIs or a broken watchdog clock; check the BIOS and firmware",
            "the watchdog clock and the TSC drifted apart, usually because the host delayed this \
             vCPU (overcommit, steal) or the VM migrated; ask for an invariant, stable host TSC",
        )
    } else if r.contains("check_tsc_sync") {
        "the TSCs of two CPUs were out of step when a CPU came up (see the warp line)".to_string()
    } else if r.contains("cpufreq") {
        "the TSC rate follows CPU frequency changes (no constant_tsc): it cannot time".to_string()
    } else if r.contains("halts in idle") || r.contains("c2") || r.contains("c-state") {
        "the TSC stops in deep idle states (no nonstop_tsc): time is lost while idle".to_string()
    } else if r.contains("boot parameter") || r.contains("tsc=unstable") {
        "the boot command line asked for it (tsc=unstable)".to_string()
    } else {
        format!("reason given by the kernel: {reason}")
    };
    format!("the kernel stopped trusting the TSC: {why}. clock_gettime no longer reads it")
}

/// What a switch to `name` means for clock reads.
fn clocksource_meaning(name: &str) -> String {
    let effect = match name {
        "tsc" => "clock_gettime reads the TSC in the vDSO, without a system call (the fast case)",
        "tsc-early" => "the early-boot TSC clocksource; a later switch to 'tsc' is expected",
        "kvm-clock" | "xen" | "hyperv_clocksource_tsc_page" => {
            "a paravirtual clock: the vDSO reads it only while the host marks it stable, \
             otherwise every read is a system call"
        }
        "hpet" | "acpi_pm" | "jiffies" | "refined-jiffies" | "pit" => {
            "a slow clock: every clock_gettime is a system call reading a device (about a microsecond or more)"
        }
        _ => "the clock clock_gettime reads from here on",
    };
    format!("the kernel times with '{name}' from here (the last switch is the current clocksource): {effect}")
}

/// The meaning of one kind of message on `machine`; `last` is the last line of
/// the kind (the one that matters for a switch or a refined frequency).
fn meaning(kind: MessageKind, first: &str, last: &str, machine: Machine) -> (Severity, String) {
    use MessageKind as K;
    use Severity::{Info, Warning};
    match kind {
        K::FirmwareBugP0 => match machine {
            Machine::Guest => (
                Info,
                "benign in a guest: the hypervisor shows a virtual AMD HWCR MSR without TscFreqSel \
                 (bit 24); the TSC rate is the host's, and the frequency sources below measure it"
                    .to_string(),
            ),
            _ => (
                Warning,
                by_machine(
                    machine,
                    "AMD HWCR.TscFreqSel (MSR C001_0015 bit 24) is clear: the BIOS lets the TSC count at \
                     other than the P0 frequency; check the BIOS and compare the frequency sources below",
                    "benign: the hypervisor hides the real HWCR MSR",
                ),
            ),
        },
        K::TscAdjustDiffers => (
            Warning,
            by_machine(
                machine,
                "firmware (BIOS/SMM) wrote IA32_TSC_ADJUST and the kernel restored it; if this repeats \
                 after boot the firmware keeps moving the TSC: update the BIOS",
                "the TSC_ADJUST the hypervisor exposes changed (host or migration) and the kernel restored it",
            ),
        ),
        K::TscAdjustCompensate => (
            Warning,
            "the CPUs' TSCs were out of step at boot and the kernel set TSC_ADJUST to line them up; \
             confirm with clockscope cross-cpu"
                .to_string(),
        ),
        K::TscMarkedUnstable => {
            let reason = after(first, "Marking TSC unstable due to").unwrap_or("");
            (Warning, unstable_reason_meaning(reason, machine))
        }
        K::TscUnstableAfterBoot => (
            Warning,
            "the TSC was found unstable after boot and the kernel switched away from it; \
             the kernel suggests a BIOS problem"
                .to_string(),
        ),
        K::ClocksourceMarkedUnstable => {
            let name = after(first, "Marking clocksource '")
                .and_then(|r| r.split_once('\''))
                .map_or("?", |(n, _)| n);
            if name == "tsc" || name == "tsc-early" {
                (
                    Warning,
                    by_machine(
                        machine,
                        "the clocksource watchdog found the TSC skewed against hpet/acpi_pm and dropped it: \
                         a TSC or firmware (SMI) problem, or a hung watchdog clock",
                        "the clocksource watchdog found the TSC skewed and dropped it: usually the host \
                         delayed this vCPU (overcommit, steal, migration), not a TSC fault",
                    ),
                )
            } else {
                (
                    Info,
                    format!("the watchdog distrusted '{name}', not the TSC: it is no longer used"),
                )
            }
        }
        K::TscWarp => (
            Warning,
            by_machine(
                machine,
                "two CPUs' TSCs disagree, so a time read on one CPU and then another can go backwards; \
                 the kernel turned the TSC clock off (multi-socket sync or firmware)",
                "two vCPUs' TSCs disagree (the host's TSC offsets differ per vCPU); a read can go \
                 backwards across CPUs and the kernel turned the TSC clock off",
            ),
        ),
        K::FastCalibrationFailed => (
            Info,
            "the quick PIT calibration did not settle (common in guests or under load); the kernel \
             calibrated the slow way, and a Refined line, if any, gives the final frequency"
                .to_string(),
        ),
        K::RefinedCalibration => (
            Info,
            "the kernel recalibrated the TSC against hpet/acpi_pm after boot: this is the frequency it \
             times with (no such line when the frequency is known from CPUID or the hypervisor)"
                .to_string(),
        ),
        K::TscDetected => (
            Info,
            by_machine(
                machine,
                "the boot-time frequency, from CPUID or a quick calibration; compared below",
                "the boot-time frequency, from the hypervisor, CPUID or a quick calibration; compared below",
            ),
        ),
        K::HypervisorFrequency => (
            Info,
            "the hypervisor (VMware) gave the kernel the TSC frequency: no calibration was run".to_string(),
        ),
        K::SwitchedClocksource => {
            let name = after(last, "Switched to clocksource ")
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or("?");
            (Info, clocksource_meaning(name))
        }
        K::KvmClock => (
            Info,
            "KVM's paravirtual clock: the host publishes the TSC scale per vCPU; Linux prefers the plain \
             TSC once the host reports it stable (constant, nonstop, invariant)"
                .to_string(),
        ),
        K::TscDeadlineTimer => {
            if first.contains("disabled") {
                (
                    Warning,
                    "the TSC deadline timer is off because of a CPU erratum: update the microcode".to_string(),
                )
            } else {
                (
                    Info,
                    by_machine(
                        machine,
                        "the local APIC timer fires at TSC deadlines: the TSC also drives timer interrupts",
                        "the local APIC timer fires at TSC deadlines, emulated by the hypervisor",
                    ),
                )
            }
        }
    }
}

/// Upper bound on how many lines of one kind are counted, so a flooded log
/// (a watchdog firing every second) cannot make this unbounded work.
const MAX_LINES_PER_KIND: u64 = 1_000_000;

/// Recognises the messages in `lines` (log messages without their prefixes,
/// in order) and explains each kind once, in the order of its first line.
pub fn interpret<S: AsRef<str>>(lines: &[S], machine: Machine) -> Vec<KernelMessage> {
    let mut found: Vec<(MessageKind, String, String, u64)> = Vec::new();
    for line in lines {
        let line = line.as_ref().trim();
        let Some(kind) = classify(line) else { continue };
        match found.iter_mut().find(|f| f.0 == kind) {
            Some(f) => {
                f.2 = line.to_string();
                f.3 = (f.3 + 1).min(MAX_LINES_PER_KIND);
            }
            None => found.push((kind, line.to_string(), line.to_string(), 1)),
        }
    }
    found
        .into_iter()
        .map(|(kind, first, last, count)| {
            let (severity, meaning) = meaning(kind, &first, &last, machine);
            KernelMessage {
                kind,
                severity,
                last_message: (last != first).then_some(last),
                message: first,
                count,
                meaning,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passed_sync_is_not_a_warp() {
        assert_eq!(classify("TSC synchronization [CPU#0 -> CPU#1]: passed"), None);
        assert_eq!(
            classify("TSC synchronization [CPU#0 -> CPU#1]:"),
            Some(MessageKind::TscWarp)
        );
    }

    #[test]
    fn unknown_machine_gives_both_readings() {
        let m = interpret(
            &["[Firmware Bug]: TSC doesn't count with P0 frequency!"],
            Machine::Unknown,
        );
        assert_eq!(m[0].severity, Severity::Warning);
        assert!(m[0].meaning.contains("on bare metal") && m[0].meaning.contains("in a guest"));
    }
}
