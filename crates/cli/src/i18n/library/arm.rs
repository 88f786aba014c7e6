//! The ARM generic timer's reasons, notes, errata and firmware checks
//! (clockscope_system::arm), marked for the catalog: `tsc` on aarch64.
//! See [`super`] for the lookup.

use crate::n_;

pub(super) const MSGIDS: &[&str] = &[
    n_!("coarse: single reads useless for EXPLAIN: each read is only accurate to {ns} ns (CNTFRQ_EL0 = {hz_n} Hz, below {mhz_n} MHz)"),
    n_!("CNTFRQ_EL0 reads 0: the firmware did not program the counter frequency, so ticks cannot be converted to time"),
    n_!("the device tree's timer clock-frequency is {dt_n} Hz but CNTFRQ_EL0 says {cntfrq_n} Hz: Linux uses the device-tree value, so CNTFRQ_EL0 misstates the counter's rate"),
    n_!("the device tree's timer clock-frequency ({dt_n} Hz) equals CNTFRQ_EL0"),
    n_!("the kernel's timer rate implied by BogoMIPS {bogomips} ({hz_n} Hz) differs from CNTFRQ_EL0 ({cntfrq_n} Hz) by {ppm} ppm: the kernel converts the counter with another rate"),
    n_!("/proc/cpuinfo BogoMIPS {bogomips} implies {hz_n} Hz, consistent with CNTFRQ_EL0 (arm64 Linux derives BogoMIPS from the timer rate)"),
    n_!("the calibration against {reference} is a check of the kernel's arithmetic, not independent evidence: the kernel's clocksource is arch_sys_counter, this counter itself"),
    n_!("calibrated against {reference} the counter runs at {hz_n} Hz, {ppm} ppm from CNTFRQ_EL0 ({cntfrq_n} Hz; tolerance {tolerance_n} ppm + {uncertainty_n} ppm uncertainty){gross}"),
    n_!(", more than {n} ppm: {explanation}"),
    n_!("no CPU identification found (no sys/devices/system/cpu/cpu*/regs/identification/midr_el1 and no arm64 CPU lines in /proc/cpuinfo): homogeneity and CPU errata cannot be checked"),
    n_!("the CPUs are not all the same core ({mix}): errata and counter behaviour must hold on every core type, and clockscope trusts only homogeneous systems by default"),
    n_!("{id} on {cpus} ({detected}): {problem}; {workaround}"),
    n_!("{id} on {cpus} ({detected}): {problem}"),
    n_!("the whole SoC"),
    n_!("CPUs {cpus}"),
    n_!("CPUs {cpus} report {name}: a hypervisor hides the real core, so errata matched by MIDR are checked against what it reports, not the host's core"),
    n_!("CPUs {cpus} are {name}, not in clockscope's table of parts: no known counter erratum matches it"),
    n_!("Linux replaces its own counter reads with a retrying accessor, stops using the counter in the vDSO and traps user-space CNTVCT_EL0 reads (each read becomes a kernel trap: correct but as slow as a system call)"),
    n_!("Cortex-A73 (all revisions): a CNTVCT_EL0/CNTPCT_EL0 read can return a wrong value when the counter crosses a 32-bit boundary"),
    n_!("Cortex-A76 and Neoverse N1 r0p0-r3p1, Kryo 4xx Gold: in AArch32 state an MRC read following an MRRC read of some generic-timer registers can return a wrong value (1188873 is the same problem on Cortex-A76 r0p0-r2p0); 64-bit processes are not affected"),
    n_!("Linux stops using the counter in the vDSO of 32-bit (compat) tasks only"),
    n_!("NXP/Freescale QorIQ SoCs: the counter can hold an erroneous value for a few core cycles each time it changes"),
    n_!("HiSilicon Hip05/Hip06/Hip07: a counter read can be wrong (Linux re-reads until two reads are less than 32 ticks apart)"),
    n_!("Allwinner A64: the counter's low bits are indeterminate while bit 10 or above rolls over, so a read can jump backwards or forwards"),
    n_!("sys/firmware/acpi/tables/GTDT is not a GTDT table ({n} bytes): ACPI-matched counter errata (HiSilicon 161010101) not checked"),
    n_!("{why} (readable by root only): ACPI-matched counter errata (HiSilicon 161010101) not checked"),
    n_!("neither a device tree nor ACPI tables were found: SoC-level counter errata (NXP A-008585, HiSilicon 161010101, Allwinner UNKNOWN1) not checked"),
    n_!("the device tree has no arm,armv8-timer node: device-tree counter errata not checked"),
];
