//! What a log adds up to for PostgreSQL, whether the user should act
//! (`clockscope dmesg`'s exit status 1), what to do on the machine the log
//! describes (bare metal, or a guest of a named hypervisor) and the one
//! command to run next.
//!
//! The cost of a clock read follows from the clocksource the log ends on:
//! `tsc`, `kvm-clock` (while the host marks it stable),
//! `hyperv_clocksource_tsc_page` (kernels ≥4.14) and ARM's `arch_sys_counter`
//! are read in the vDSO without a system call; `hpet`, `acpi_pm`, `xen`,
//! `hyperv_clocksource` / `hyperv_clocksource_msr` (an MSR read that traps
//! to the host), `jiffies` and `pit` cost a system call per read. A TSC the
//! kernel marked unstable matters only where it leaves a slow clock: on
//! Hyper-V a kernel that marks it unstable "due to running on Hyper-V" reads
//! the TSC page instead, as fast.

use super::meaning::{by_machine, Machine};

/// How expensive a read of a clocksource is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadCost {
    /// Read in the vDSO, no system call.
    Vdso,
    /// A system call (and a device or MSR read) per call.
    Syscall,
    /// Not known (a clocksource clockscope does not know, or none shown).
    Unknown,
}

/// The read cost of clocksource `name`.
pub fn read_cost(name: Option<&str>) -> ReadCost {
    match name {
        Some("tsc" | "kvm-clock" | "hyperv_clocksource_tsc_page" | "arch_sys_counter") => ReadCost::Vdso,
        Some(
            "hpet"
            | "acpi_pm"
            | "xen"
            | "jiffies"
            | "refined-jiffies"
            | "pit"
            | "hyperv_clocksource"
            | "hyperv_clocksource_msr",
        ) => ReadCost::Syscall,
        _ => ReadCost::Unknown,
    }
}

/// Whether the log asks the user to act, and why (one sentence).
pub fn verdict(final_clocksource: Option<&str>, tsc_marked_unstable: bool) -> (bool, String) {
    let cs = final_clocksource.unwrap_or("?");
    match (read_cost(final_clocksource), tsc_marked_unstable) {
        (ReadCost::Syscall, _) => (
            true,
            format!("act: the log ends on '{cs}', which costs a system call per clock read"),
        ),
        (ReadCost::Unknown, true) => (
            true,
            "act: the kernel marked the TSC unstable and the log shows no fast clocksource after it".to_string(),
        ),
        (ReadCost::Vdso, true) => (
            false,
            format!("nothing to act on: the kernel marked the TSC unstable, but '{cs}' is read in the vDSO"),
        ),
        (_, false) => (false, "nothing to act on: the log shows no slow clock".to_string()),
    }
}

/// What the clocksource a log ends on (`None`: no switch in the log) means
/// for PostgreSQL, and what the TSC being marked unstable means for it.
pub(crate) fn postgres_meaning(final_clocksource: Option<&str>, tsc_marked_unstable: bool) -> String {
    let reads = match (final_clocksource, read_cost(final_clocksource)) {
        (Some("tsc"), _) => "clock_gettime reads the TSC in the vDSO without a system call: timing is cheap",
        (Some("arch_sys_counter"), _) => {
            "clock_gettime reads the ARM generic timer in the vDSO without a system call: timing is cheap \
             (the TSC messages do not apply to ARM)"
        }
        (_, ReadCost::Syscall) => {
            "clock_gettime leaves the vDSO: every call is a system call (about a microsecond or more), so \
             EXPLAIN ANALYZE, track_io_timing and pg_test_timing slow down"
        }
        (_, ReadCost::Vdso) => {
            "clock_gettime reads the paravirtual clock in the vDSO while the host marks it stable: timing \
             stays cheap"
        }
        (Some(_), ReadCost::Unknown) => "clock_gettime reads this clocksource",
        (None, _) => "the log shows no clocksource switch (clockscope check reports the current one)",
    };
    let auto = if tsc_marked_unstable {
        "; PostgreSQL 19's timing_clock_source=auto will not use the TSC once the kernel marked it unstable"
    } else {
        ""
    };
    format!("{reads}{auto}")
}

/// Guest advice for hypervisor `hv` (lower case, or unknown).
fn guest_advice(hv: Option<&str>, cost: ReadCost, unstable: bool) -> String {
    match hv {
        Some("hyper-v") if cost == ReadCost::Vdso => "Hyper-V/Azure: the TSC page clocksource is read in the \
             vDSO, so clock reads stay cheap; newer host builds also expose an invariant TSC that kernels \
             5.x and later use directly: nothing to do for the clock"
            .to_string(),
        Some("hyper-v") => "Hyper-V/Azure: this kernel reads a slow Hyper-V clock; a kernel of 4.14 or later uses \
             the TSC page clocksource in the vDSO (ask for a current image or VM generation, or a host build with an \
             invariant TSC)"
            .to_string(),
        Some("kvm") if cost == ReadCost::Vdso => "KVM: kvm-clock is read in the vDSO while the host marks it \
             stable; to let the guest use the TSC ask the host or cloud for an invariant TSC passed through \
             (libvirt host-passthrough or -cpu host,+invtsc), no CPU overcommit and no migration between \
             different CPUs"
            .to_string(),
        Some("kvm") => "KVM: ask the host or cloud for an invariant TSC passed through (libvirt host-passthrough or \
             -cpu host,+invtsc), no CPU overcommit and no migration between different CPUs, and a guest kernel with \
             kvm-clock (CONFIG_KVM_GUEST)"
            .to_string(),
        Some("xen") => "Xen: the xen clocksource costs a system call per read; where the host gives an invariant TSC \
             and does not migrate the guest (AWS advises this for its Xen instances), boot with clocksource=tsc, or \
             ask for a KVM-based (AWS Nitro) instance type"
            .to_string(),
        Some("vmware") => "VMware: ask the VMware administrator for a host with an invariant TSC, no CPU overcommit \
             and the VM's TSC kept in step (the kernel read the TSC frequency from the hypervisor)"
            .to_string(),
        Some(h) if unstable || cost == ReadCost::Syscall => {
            format!("{h}: ask the host for an invariant, stable TSC passed to the guest (no overcommit)")
        }
        _ if unstable || cost == ReadCost::Syscall => "ask the host or cloud for an invariant, stable TSC passed to \
             the guest (no overcommit, CPU passthrough of invtsc) or accept the slower clock"
            .to_string(),
        _ => "nothing to do for the clock".to_string(),
    }
}

/// What to do, for the machine the log describes (`hv`: its hypervisor).
pub fn advice(
    final_clocksource: Option<&str>,
    tsc_marked_unstable: bool,
    machine: Machine,
    hv: Option<&str>,
) -> String {
    let cost = read_cost(final_clocksource);
    let bare = if tsc_marked_unstable {
        "find the cause (BIOS/firmware update, SMIs, deep C-states, a multi-socket TSC sync problem); do not \
         force tsc=reliable unless the TSCs are proven in step"
    } else if cost == ReadCost::Syscall {
        "the TSC was not marked unstable: if clockscope check finds it invariant and in step, the kernel can \
         use it (clocksource=tsc); otherwise timing stays slow"
    } else {
        "nothing to do for the clock"
    };
    let guest = guest_advice(hv, cost, tsc_marked_unstable);
    let what = if bare == guest {
        bare.to_string()
    } else {
        by_machine(machine, bare, &guest)
    };
    if verdict(final_clocksource, tsc_marked_unstable).0 {
        format!("{what}; until then keep EXPLAIN ANALYZE timing and track_io_timing to what you need")
    } else {
        what
    }
}

/// The one command to run next, on the machine the log came from.
pub fn next_command(act: bool, warp: bool) -> String {
    if warp {
        "clockscope cross-cpu (on that machine: are the CPUs' TSCs in step now?)".to_string()
    } else if act {
        "clockscope check (on that machine: the clocksource, the TSC and the cost of a clock read now)".to_string()
    } else {
        "clockscope check (on that machine, to confirm the clock as it runs now)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_clock_after_an_unstable_tsc_is_nothing_to_act_on() {
        assert!(!verdict(Some("hyperv_clocksource_tsc_page"), true).0);
        assert!(!verdict(Some("kvm-clock"), true).0);
        assert!(verdict(Some("xen"), false).0);
        assert!(verdict(Some("hpet"), true).0);
        assert!(verdict(None, true).0);
        assert!(!verdict(None, false).0);
        assert!(verdict(Some("hyperv_clocksource"), true).0);
    }

    #[test]
    fn guest_advice_names_the_hypervisor_and_bare_metal_gets_its_own() {
        let a = advice(Some("xen"), false, Machine::Guest, Some("xen"));
        assert!(a.starts_with("Xen: ") && a.contains("clocksource=tsc"), "{a}");
        let a = advice(Some("hpet"), true, Machine::BareMetal, None);
        assert!(a.contains("BIOS") && !a.contains("guest"), "{a}");
        let a = advice(Some("hpet"), true, Machine::Unknown, None);
        assert!(a.contains("on bare metal: ") && a.contains("in a guest: "), "{a}");
    }
}
