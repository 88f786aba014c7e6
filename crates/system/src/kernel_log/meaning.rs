//! What the kernel's TSC and clocksource messages mean: on bare metal or in a
//! guest, for PostgreSQL's clock reads, and what to do. Two views of the same
//! recognition ([`super::formats`]): each event of a log
//! ([`event_meaning`]), and the older per-kind grouping `check` and `tsc`
//! print ([`interpret`], [`MessageKind`]: 14 groups of event kinds).
//!
//! The message text is untrusted: it is kept verbatim here and escaped where
//! a report renders it.

use serde::Serialize;

use super::formats::{recognise, Facts, Kind, Role};

/// Where the kernel runs: it changes what several messages mean.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Machine {
    /// No hypervisor (CPUID's hypervisor bit is clear).
    BareMetal,
    /// Under a hypervisor.
    Guest,
    /// Not known (/proc/cpuinfo unreadable, or a log that does not say).
    #[default]
    Unknown,
}

impl Machine {
    /// From the kernel's `hypervisor` cpuinfo flag, when known.
    pub(crate) fn from_hypervisor_flag(flag: Option<bool>) -> Machine {
        match flag {
            Some(true) => Machine::Guest,
            Some(false) => Machine::BareMetal,
            None => Machine::Unknown,
        }
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Explains how the kernel set the clock up.
    Info,
    /// Something to check or act on.
    Warning,
}

/// One recognised message (all lines of its kind grouped), with its meaning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct KernelMessage {
    /// What the message says.
    pub kind: MessageKind,
    /// How much it matters for trusting the TSC.
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

/// The text after `needle` in `msg`, trimmed.
fn after<'a>(msg: &'a str, needle: &str) -> Option<&'a str> {
    msg.find(needle).map(|i| msg[i + needle.len()..].trim())
}

/// Picks the bare-metal, guest or (unknown) both-sides text.
pub(crate) fn by_machine(machine: Machine, bare: &str, guest: &str) -> String {
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
    } else if r.contains("hyper-v") {
        "this kernel does not trust the TSC under Hyper-V hosts that do not promise an invariant TSC \
         (newer hosts and kernels do)"
            .to_string()
    } else if r.contains("could not calculate") || r.contains("khz") {
        "the kernel could not measure the TSC's frequency at boot (no working PIT, HPET or PM timer, as in \
         some emulators): it cannot time with the TSC"
            .to_string()
    } else if r.contains("unsynchronized") {
        "the platform says the CPUs' TSCs are not synchronised (multi-board systems)".to_string()
    } else if r.contains("backwards tsc") {
        "the KVM host saw its TSC go backwards (printed on the host): its guests' clocks are affected".to_string()
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
        "arch_sys_counter" => "ARM's generic timer, read in the vDSO without a system call (the fast case)",
        "hyperv_clocksource" | "hyperv_clocksource_msr" => {
            "Hyper-V's MSR clock: every read is a system call that traps to the host"
        }
        "hpet" | "acpi_pm" | "jiffies" | "refined-jiffies" | "pit" => {
            "a slow clock: every clock_gettime is a system call reading a device (about a microsecond or more)"
        }
        _ => "the clock clock_gettime reads from here on",
    };
    format!("the kernel times with '{name}' from here (the last switch is the current clocksource): {effect}")
}

/// The meaning of one group of messages on `machine`; `last` is the last line
/// of the group (the one that matters for a switch or a refined frequency).
pub(crate) fn group_meaning(kind: MessageKind, first: &str, last: &str, machine: Machine) -> (Severity, String) {
    warning_group_meaning(kind, first, machine).unwrap_or_else(|| info_group_meaning(kind, first, last, machine))
}

/// The groups that may ask something of the reader.
fn warning_group_meaning(kind: MessageKind, first: &str, machine: Machine) -> Option<(Severity, String)> {
    use MessageKind as K;
    use Severity::{Info, Warning};
    Some(match kind {
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
                "firmware (BIOS/SMM) wrote IA32_TSC_ADJUST and the kernel restored it: firmware, not a TSC \
                 warp, and the TSC stays in use; if this repeats after boot the firmware keeps moving the \
                 TSC: update the BIOS",
                "the TSC_ADJUST the hypervisor exposes changed (host or migration) and the kernel restored \
                 it: not a TSC warp, and the TSC stays in use",
            ),
        ),
        K::TscAdjustCompensate => (
            Warning,
            "the CPUs' TSCs were out of step at boot (firmware left them apart) and the kernel set \
             TSC_ADJUST to line them up: not a verdict on the TSC, which stays in use; confirm with \
             clockscope cross-cpu"
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
            let facts = recognise(first).map(|r| r.facts).unwrap_or_default();
            let name = facts.clocksource.as_deref().unwrap_or("?");
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
        _ => return None,
    })
}

/// The groups that explain the set-up.
fn info_group_meaning(kind: MessageKind, first: &str, last: &str, machine: Machine) -> (Severity, String) {
    use MessageKind as K;
    use Severity::{Info, Warning};
    match kind {
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
            let facts = recognise(last).map(|r| r.facts).unwrap_or_default();
            let name = facts.clocksource.as_deref().unwrap_or("?");
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
        _ => (Severity::Warning, String::new()),
    }
}

/// The old group of a recognised line (`check`/`tsc` group lines by it).
pub(crate) fn group_of(kind: Kind, role: Role, facts: &Facts) -> Option<MessageKind> {
    use Kind as K;
    use MessageKind as G;
    Some(match kind {
        K::FirmwareBugP0 => G::FirmwareBugP0,
        K::TscAdjustDiffers | K::TscAdjustForceZero | K::TscAdjustRestored | K::TscAdjustSynchronize => {
            G::TscAdjustDiffers
        }
        K::TscAdjustCompensate => G::TscAdjustCompensate,
        K::TscMarkedUnstable => G::TscMarkedUnstable,
        K::TscUnstableAfterBoot => G::TscUnstableAfterBoot,
        K::WatchdogMarkedUnstable if role != Role::Detail => G::ClocksourceMarkedUnstable,
        K::TscSyncWarp if role == Role::Opens || facts.warp_cycles.is_some() => G::TscWarp,
        K::TscFastCalibrationFailed => G::FastCalibrationFailed,
        K::TscRefined => G::RefinedCalibration,
        K::TscDetectedProcessor | K::TscDetectedTsc => G::TscDetected,
        K::HypervisorTscFrequency => G::HypervisorFrequency,
        K::ClocksourceSwitched => G::SwitchedClocksource,
        K::KvmClock => G::KvmClock,
        K::ClocksourceRegistered if facts.clocksource.as_deref() == Some("kvm-clock") => G::KvmClock,
        K::TscDeadlineTimer => G::TscDeadlineTimer,
        _ => return None,
    })
}

/// The group of a message (without its log prefix), if clockscope knows it.
pub fn classify(msg: &str) -> Option<MessageKind> {
    recognise(msg).and_then(|r| group_of(r.kind, r.role, &r.facts))
}

/// Upper bound on how many lines of one kind are counted, so a flooded log
/// (a watchdog firing every second) cannot make this unbounded work.
const MAX_LINES_PER_KIND: u64 = 1_000_000;

/// Recognises the messages in `lines` (log messages without their prefixes,
/// in order) and explains each group once, in the order of its first line.
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
            let (severity, meaning) = group_meaning(kind, &first, &last, machine);
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

/// What one event means on `machine`.
pub fn event_meaning(kind: Kind, message: &str, facts: &Facts, machine: Machine) -> String {
    let role = if kind == Kind::TscSyncWarp {
        Role::Opens
    } else {
        Role::Event
    };
    if let Some(group) = group_of(kind, role, facts) {
        return group_meaning(group, message, message, machine).1;
    }
    other_meaning(kind, facts, machine)
}

/// Meanings of the kinds outside the 14 groups.
fn other_meaning(kind: Kind, facts: &Facts, machine: Machine) -> String {
    use Kind as K;
    let wd = facts.watchdog.as_deref().unwrap_or("the watchdog clock");
    match kind {
        K::WatchdogSkewReported => "the watchdog measured a skew but this (RHEL 6) kernel did not act on it: \
             the TSC stays in use unless booted with clocksource_failover"
            .to_string(),
        K::WatchdogRetried => format!(
            "reading {wd} took too long and was retried: the watchdog clock itself is slow or the CPU was \
             interrupted (SMIs; in a guest, the host); repeated retries precede unstable verdicts"
        ),
        K::WatchdogReadbackUnstable => by_machine(
            machine,
            "reading the watchdog clock kept taking too long, so the kernel gave up on the clocksource \
             without measuring a skew: SMIs or a slow hpet, not necessarily a TSC fault",
            "reading the watchdog clock kept taking too long (the host delayed this vCPU), so the kernel \
             gave up on the clocksource without measuring a skew: not a TSC fault",
        ),
        K::WatchdogSkewTestSkipped => format!(
            "a read of {wd} was slow, so the watchdog skipped this skew check (and pauses): \
             harmless once, a sign of SMIs or host delays when frequent"
        ),
        K::WatchdogLongReadout => "the watchdog's interval was too long to judge (the CPU or vCPU was stalled, \
             an SMI or the host): the check was skipped, nothing was marked; a stall, not a bad clock"
            .to_string(),
        K::WatchdogCoarseCheck => "a test kernel's coarse watchdog check (unmerged patch)".to_string(),
        K::ClocksourceSyncCheck => "the kernel compares the condemned clocksource across CPUs: \
             the lines that follow say which CPUs were ahead or behind"
            .to_string(),
        K::ClocksourceSyncAhead | K::ClocksourceSyncBehind => "these CPUs' clocks disagree with the checking CPU: \
             the TSCs are not in step across CPUs (cross-CPU skew, not only watchdog noise)"
            .to_string(),
        K::ClocksourceSyncDurations => "how long the per-CPU comparison took (its resolution)".to_string(),
        K::ClocksourceSyncNotEnoughCpus => "one CPU only: the cross-CPU comparison could not run".to_string(),
        K::OverrideNotHrt | K::OverrideUnstableNotHrt => format!(
            "the clocksource= boot parameter asked for '{}', which the kernel refused (unstable or not usable \
             for high-resolution timers): the parameter has no effect",
            facts.clocksource.as_deref().unwrap_or("?")
        ),
        K::OverrideDeferred => {
            "the clocksource= choice waits until the clocksource can serve high-resolution timers".to_string()
        }
        K::TscFastCalibrationOk => "the TSC frequency was measured against the PIT at boot".to_string(),
        K::TscPitUnable | K::TscNoReference | K::TscReferenceFailed | K::TscPitDeviates => {
            "the boot-time calibration had trouble (no PIT or reference timer, typical of emulators and some \
             guests): compare the detected frequency with the other sources"
                .to_string()
        }
        K::TscReferenceCalibration | K::TscPitMatches | K::TscPitValue => {
            "how the kernel calibrated the TSC at boot (against HPET, the PM timer or the PIT)".to_string()
        }
        K::TscRecalibrateMismatch | K::TscRecalibrated => {
            "tsc=recalibrate: the frequency from CPUID/MSR was checked against a hardware timer".to_string()
        }
        K::TscAsyncResets => "the TSC may be reset per socket: TSC_ADJUST is not forced to 0".to_string(),
        K::TscSyncPassed => "the new CPU's TSC agreed with the boot CPU's".to_string(),
        K::TscSyncSkipped => "the kernel trusts the TSC as reliable and skipped the sync test".to_string(),
        K::TscAdjustNotForced => "TSC_ADJUST left as the firmware set it (async resets)".to_string(),
        K::HypervisorDetected | K::ParavirtKernel => match facts.hypervisor.as_deref().map(str::trim) {
            Some("bare hardware") => "no hypervisor: this kernel runs on bare metal".to_string(),
            Some(h) => format!("the kernel runs under a hypervisor ({h}): its clock is the host's"),
            None => "the hypervisor the kernel found".to_string(),
        },
        K::XenVersion => "Xen: the 'xen' clocksource has no vDSO read (every clock_gettime is a system call) \
             unless the kernel uses the TSC"
            .to_string(),
        K::HypervFeatures => {
            "Hyper-V's features: the TSC page clocksource and, on newer hosts, an invariant TSC".to_string()
        }
        K::SchedClockUnstable => "the scheduler clock no longer trusts the TSC either".to_string(),
        K::ArchTimer => "ARM's generic timer: the arch_sys_counter clocksource, read in the vDSO; the x86 TSC \
             messages do not apply"
            .to_string(),
        _ => String::new(),
    }
}
