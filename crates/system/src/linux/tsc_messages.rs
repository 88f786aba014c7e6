//! The kernel's TSC and clocksource messages as `check` and `tsc` report
//! them: grouped per kind of message and explained for this machine. The
//! recognition and the meanings are [`crate::kernel_log`]'s (one
//! interpretation for every command); this module adds only where this
//! machine runs, from its cpuinfo.

pub use crate::kernel_log::meaning::{classify, interpret, KernelMessage, Machine, MessageKind, Severity};

impl Machine {
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
