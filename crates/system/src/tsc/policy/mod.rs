//! Whether to read time from the TSC: PostgreSQL 19's `auto` policy, and
//! clockscope's own decision, both pure functions over injected evidence.
//!
//! **PostgreSQL 19** ([`postgres_auto`], `tsc_use_by_default`): use the TSC
//! when its frequency is known (> 0) and either the CPU has TSC_ADJUST
//! (CPUID 7.0 EBX bit 1, taken as "Intel" after Linux's
//! `check_system_tsc_reliable`) or the kernel's
//! `/sys/devices/system/clocksource/clocksource0/current_clocksource` is
//! exactly `tsc`. That is an OR of two indirect hints.
//!
//! **clockscope** ([`clockscope_decision`]): the AND of every piece of
//! evidence, each printed as a reason:
//! 1. RDTSCP (CPUID 0x80000001 EDX bit 27): the ordered read exists;
//! 2. invariant TSC (CPUID 0x80000007 EDX bit 8) and, when /proc/cpuinfo is
//!    readable, the kernel's `constant_tsc` and `nonstop_tsc` flags;
//! 3. the kernel times with the TSC (current clocksource `tsc`) or marks it
//!    `tsc_reliable`;
//! 4. the kernel log does not say it marked the TSC unstable;
//! 5. a known frequency whose measuring sources agree within 500 ppm
//!    ([`super::frequency::DISAGREEMENT_LIMIT_PPM`]);
//! 6. no boot option against the TSC (`tsc=unstable`, `notsc`,
//!    `clocksource=` other than `tsc`).
//!
//! The trust rules, one function each, are in `trust.rs`.
//!
//! Missing evidence is not taken as good news: a check whose evidence could
//! not be read fails, with the reason (except check 4 when the kernel still
//! times with the TSC, which it would not do had it marked the TSC unstable).

mod trust;

pub use trust::clockscope_decision;

use crate::linux::tsc_messages::{self, KernelMessage, Machine};
use crate::linux::{Evidence, KernelCmdline, LinuxEvidence, TscFlags};
use serde::Serialize;
use std::path::Path;

/// One line of a decision: the counter layer's [`Check`](crate::evidence::Check) (serialised as
/// `{"ok", "check", "evidence"}`).
pub use crate::evidence::Check as Reason;

/// PostgreSQL 19's `auto` decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PostgresAuto {
    /// `tsc_use_by_default`: `SHOW timing_clock_source` gives `auto (tsc)`.
    pub use_by_default: bool,
    /// The frequency PostgreSQL uses, kHz; `None` when it has none.
    pub frequency_khz: Option<u64>,
    /// Where that frequency comes from (PostgreSQL's `frequency_source`).
    pub frequency_source: Option<String>,
    /// The evidence for `use_by_default`, one line each.
    pub reasons: Vec<Reason>,
}

/// clockscope's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct TscDecision {
    /// Every check passed.
    pub trusted: bool,
    /// The frequency clockscope uses (also when not trusted, for reference).
    pub frequency_khz: Option<u64>,
    /// Where that frequency comes from.
    pub frequency_source: Option<String>,
    /// Every rule's result, in report order.
    pub reasons: Vec<Reason>,
}

/// What the kernel log says about the TSC, reduced to what decisions need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct KernelLogTsc {
    /// Log records read.
    pub records: u64,
    /// The kernel's TSC frequency from "tsc: Refined/Detected", kHz.
    pub tsc_khz: Option<u64>,
    /// Which message that was.
    pub tsc_khz_message: Option<&'static str>,
    /// The kernel said it marked the TSC unstable (or measured a TSC warp).
    pub marked_unstable: bool,
    /// The messages saying so.
    pub unstable_evidence: Vec<String>,
    /// The TSC and clocksource messages recognised, each with what it means
    /// on this machine ([`crate::linux::tsc_messages`]).
    pub messages: Vec<KernelMessage>,
}

/// The kernel evidence the decisions use. Built from
/// [`LinuxEvidence`] or injected by tests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct KernelEvidence {
    /// The kernel's release (`uname -r`).
    pub kernel_release: Evidence<String>,
    /// The current clocksource (sysfs).
    pub current_clocksource: Evidence<String>,
    /// The available clocksources (sysfs).
    pub available_clocksources: Evidence<Vec<String>>,
    /// The TSC flags of /proc/cpuinfo.
    pub tsc_flags: Evidence<TscFlags>,
    /// /proc/cpuinfo `model name`.
    pub cpu_model_name: Option<String>,
    /// The kernel command line (`/proc/cmdline`).
    pub cmdline: Evidence<KernelCmdline>,
    /// The kernel log's TSC messages.
    pub kernel_log: Evidence<KernelLogTsc>,
}

impl KernelEvidence {
    /// Reduces everything the kernel publishes to what the decisions need.
    pub fn from_linux(e: &LinuxEvidence) -> KernelEvidence {
        let machine = Machine::of(e);
        KernelEvidence {
            kernel_release: e.kernel_release.clone(),
            current_clocksource: e.current_clocksource.clone(),
            available_clocksources: e.available_clocksources.clone(),
            tsc_flags: e.cpuinfo.clone().map(|c| c.tsc_flags),
            cpu_model_name: e.cpuinfo.found().and_then(|c| c.model_name.clone()),
            cmdline: e.cmdline.clone(),
            kernel_log: e.kernel_log.clone().map(|log| {
                let khz = log.kernel_tsc_khz();
                let mut unstable_evidence: Vec<String> = log
                    .tsc_unstable_reasons
                    .iter()
                    .map(|r| format!("Marking TSC unstable due to {r}"))
                    .collect();
                unstable_evidence.extend(
                    log.clocksources_marked_unstable
                        .iter()
                        .filter(|c| *c == "tsc" || *c == "tsc-early")
                        .map(|c| format!("Marking clocksource '{c}' as unstable")),
                );
                unstable_evidence.extend(
                    log.tsc_warp_cycles
                        .iter()
                        .map(|c| format!("Measured {c} cycles TSC warp between CPUs")),
                );
                KernelLogTsc {
                    records: log.records,
                    tsc_khz: khz.map(|(k, _)| k),
                    tsc_khz_message: khz.map(|(_, s)| s.label()),
                    marked_unstable: log.tsc_marked_unstable(),
                    unstable_evidence,
                    messages: tsc_messages::interpret(&log.lines, machine),
                }
            }),
        }
    }

    /// Reads the kernel evidence under `root` (`/` in production).
    pub fn read(root: &Path) -> KernelEvidence {
        KernelEvidence::from_linux(&LinuxEvidence::read(root))
    }
}

/// PostgreSQL 19's `auto` policy. `current_clocksource` is `None` when it
/// could not be read (PostgreSQL then sees no `tsc`).
pub fn postgres_auto(
    frequency_khz: Option<u64>,
    frequency_source: Option<&str>,
    tsc_adjust: bool,
    current_clocksource: Result<&str, &str>,
) -> PostgresAuto {
    let freq_ok = frequency_khz.is_some_and(|k| k > 0);
    let freq_reason = Reason::new(
        freq_ok,
        "TSC frequency > 0",
        match (frequency_khz, frequency_source) {
            (Some(k), Some(s)) => format!("{k} kHz ({s})"),
            (Some(k), None) => format!("{k} kHz"),
            (None, _) => "no frequency: PostgreSQL cannot use the TSC".to_string(),
        },
    );
    let cs_tsc = current_clocksource == Ok("tsc");
    let cs_text = match current_clocksource {
        Ok(c) => format!("current_clocksource is '{c}'"),
        Err(r) => format!("current_clocksource not read ({r})"),
    };
    let hint_reason = Reason::new(
        tsc_adjust || cs_tsc,
        "TSC_ADJUST or current_clocksource 'tsc'",
        format!(
            "TSC_ADJUST (CPUID 7.0 EBX bit 1) {}; {cs_text}",
            if tsc_adjust { "present" } else { "absent" }
        ),
    );
    PostgresAuto {
        use_by_default: freq_ok && (tsc_adjust || cs_tsc),
        frequency_khz,
        frequency_source: frequency_source.map(str::to_string),
        reasons: vec![freq_reason, hint_reason],
    }
}
