//! Which lines of a kernel log prove where the kernel runs: a hypervisor's
//! name from every line that shows one (not only `Hypervisor detected`), or
//! bare hardware. Each proof has a strength, so the summary keeps the line
//! that says it most directly and cites it.
//!
//! Sources, strongest first: `Hypervisor detected: %s` (arch/x86/kernel/
//! cpu/hypervisor.c, 3.x+); `Booting paravirtualized kernel on %s`
//! (paravirt.c, `bare hardware` when none); the hypervisor's own set-up lines
//! (`Hyper-V Host Build:`, `Hyper-V: ...`, `HyperV: ...`, `Xen version`,
//! `kvm-clock: ...`, `vmware: ...`, `TSC freq read from hypervisor`,
//! `tsc: Marking TSC unstable due to running on Hyper-V`); the DMI strings
//! the virtual firmware reports (`DMI: Microsoft Corporation Virtual
//! Machine`, `DMI: QEMU Standard PC`, `DMI: VMware, Inc. VMware Virtual
//! Platform`, `DMI: Xen HVM domU`, `DMI: innotek GmbH VirtualBox`, `DMI:
//! Amazon EC2`, `DMI: Google Google Compute Engine`, `DMI: BHYVE`); and the
//! paravirtual clocksources (`kvm-clock`, `xen`, `hyperv_clocksource_*`)
//! switched to, registered or named as the watchdog.

/// What one line proves: a hypervisor (its lower-case name) or bare
/// hardware (`None`), with a strength (higher is more direct).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The hypervisor, lower case (`hyper-v`, `kvm`, `xen`, `vmware`, ...);
    /// `None`: the line says bare hardware.
    pub hypervisor: Option<String>,
    /// 5 `Hypervisor detected`, 4 `Booting paravirtualized kernel on`,
    /// 3 the hypervisor's own set-up lines, 2 DMI strings, 1 a paravirtual
    /// clocksource's name.
    pub strength: u8,
}

fn proof(name: &str, strength: u8) -> Option<Proof> {
    Some(Proof {
        hypervisor: Some(name.to_string()),
        strength,
    })
}

/// The lower-case hypervisor name of a printed name (`Microsoft Hyper-V`,
/// `KVM`, `Xen HVM`, `VMware`); `None` for bare hardware.
pub fn hypervisor_name(printed: &str) -> Option<String> {
    let p = printed.trim().trim_end_matches('.').to_ascii_lowercase();
    Some(if p == "bare hardware" || p.is_empty() {
        return None;
    } else if p.starts_with("xen") {
        "xen".to_string()
    } else if p.contains("hyperv") || p.contains("hyper-v") {
        "hyper-v".to_string()
    } else if p.starts_with("vmware") {
        "vmware".to_string()
    } else if p.starts_with("kvm") {
        "kvm".to_string()
    } else {
        p
    })
}

/// The hypervisor a clocksource's name proves (`kvm-clock`, `xen`,
/// `hyperv_clocksource_tsc_page`, `hyperv_clocksource_msr`).
pub fn clocksource_hypervisor(name: &str) -> Option<&'static str> {
    match name {
        "kvm-clock" => Some("kvm"),
        "xen" => Some("xen"),
        n if n.starts_with("hyperv_clocksource") => Some("hyper-v"),
        _ => None,
    }
}

/// DMI vendor/product strings of virtual firmware. QEMU's firmware says
/// QEMU under KVM and under TCG emulation alike: `qemu`.
const DMI: [(&str, &str); 10] = [
    ("Microsoft Corporation Virtual Machine", "hyper-v"),
    ("QEMU", "qemu"),
    ("VMware", "vmware"),
    ("Xen HVM domU", "xen"),
    ("innotek GmbH VirtualBox", "virtualbox"),
    ("Amazon EC2", "kvm"),
    ("Google Google Compute Engine", "kvm"),
    ("BHYVE", "bhyve"),
    ("OpenStack Foundation OpenStack Nova", "kvm"),
    ("Parallels Software International", "parallels"),
];

/// What `msg` (a message without its log prefix) proves about where the
/// kernel runs, if anything. Paravirtual clocksource names are left to the
/// caller, which knows them from the recognised message.
pub fn proof_in(msg: &str) -> Option<Proof> {
    let b = msg.trim();
    let b = b.strip_prefix("tsc: ").unwrap_or(b);
    for (prefix, strength) in [("Hypervisor detected: ", 5), ("Booting paravirtualized kernel on ", 4)] {
        if let Some(h) = b.strip_prefix(prefix) {
            let hypervisor = hypervisor_name(h);
            return Some(Proof { hypervisor, strength });
        }
    }
    let own: [(&str, &str); 9] = [
        ("Hyper-V Host Build", "hyper-v"),
        ("Hyper-V: ", "hyper-v"),
        ("HyperV: ", "hyper-v"),
        ("Marking TSC unstable due to running on Hyper-V", "hyper-v"),
        ("Xen version", "xen"),
        ("Xen HVM callback vector", "xen"),
        ("kvm-clock: ", "kvm"),
        ("vmware: ", "vmware"),
        ("TSC freq read from hypervisor", "vmware"),
    ];
    if let Some((_, h)) = own.iter().find(|(p, _)| b.starts_with(p)) {
        return proof(h, 3);
    }
    if let Some(dmi) = b.strip_prefix("DMI: ") {
        return DMI
            .iter()
            .find(|(p, _)| dmi.starts_with(p))
            .and_then(|(_, h)| proof(h, 2));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_line_names_its_hypervisor() {
        let name = |m: &str| proof_in(m).and_then(|p| p.hypervisor);
        assert_eq!(
            name("Hypervisor detected: Microsoft Hyper-V").as_deref(),
            Some("hyper-v")
        );
        assert_eq!(
            name("Hyper-V Host Build:18362-10.0-3-0.3256").as_deref(),
            Some("hyper-v")
        );
        assert_eq!(
            name("tsc: Marking TSC unstable due to running on Hyper-V").as_deref(),
            Some("hyper-v")
        );
        assert_eq!(
            name("DMI: Microsoft Corporation Virtual Machine/Virtual Machine, BIOS 090008  12/07/2018").as_deref(),
            Some("hyper-v")
        );
        assert_eq!(
            name("DMI: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.13.0-1ubuntu1 04/01/2014").as_deref(),
            Some("qemu")
        );
        assert_eq!(name("Booting paravirtualized kernel on Xen").as_deref(), Some("xen"));
        assert_eq!(
            name("kvm-clock: Using msrs 4b564d01 and 4b564d00").as_deref(),
            Some("kvm")
        );
        assert_eq!(
            proof_in("Booting paravirtualized kernel on bare hardware"),
            Some(Proof {
                hypervisor: None,
                strength: 4
            })
        );
        assert_eq!(proof_in("DMI: Dell Inc. PowerEdge R740/06WXJT, BIOS 2.8.2"), None);
        assert_eq!(clocksource_hypervisor("hyperv_clocksource_tsc_page"), Some("hyper-v"));
        assert_eq!(clocksource_hypervisor("hpet"), None);
    }
}
