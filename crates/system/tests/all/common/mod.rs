//! Helpers shared by the integration tests: recorded CPUID of the KVM guest
//! this was developed on, and the kernel's TSC flags on such a guest.
//!
//! Each test binary includes this module with `mod common;` and uses only
//! part of it, so unused helpers are allowed.
#![allow(dead_code)]

#[macro_use]
pub mod skip;
pub mod time_limit;

use clockscope_system::linux::TscFlags;
use clockscope_system::tsc::cpuid::{parse_dump, CpuidFacts};

/// The recorded CPUID of the KVM guest this was developed on
/// (tests/data/cpuid/kvm_this_machine.cpuid-r.txt): no TSC frequency in CPUID.
pub fn kvm_cpuid() -> CpuidFacts {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/cpuid/kvm_this_machine.cpuid-r.txt"
    );
    let text = std::fs::read_to_string(path).expect("recorded CPUID dump");
    CpuidFacts::from_recorded(&parse_dump(&text).expect("parses").leaves)
}

/// /proc/cpuinfo's TSC flags of a KVM guest with an invariant TSC: every
/// flag but `tsc_reliable`.
pub fn kvm_guest_tsc_flags() -> TscFlags {
    TscFlags {
        tsc: true,
        constant_tsc: true,
        nonstop_tsc: true,
        tsc_known_freq: true,
        tsc_reliable: false,
        tsc_adjust: true,
        rdtscp: true,
        hypervisor: true,
    }
}
