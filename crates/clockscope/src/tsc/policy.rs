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
//! Missing evidence is not taken as good news: a check whose evidence could
//! not be read fails, with the reason (except check 4 when the kernel still
//! times with the TSC, which it would not do had it marked the TSC unstable).

use super::cpuid::{CpuidFacts, LEAF_EXTENDED_FEATURES_1, LEAF_POWER_MANAGEMENT};
use super::frequency::FrequencyReport;
use crate::linux::tsc_messages::{self, KernelMessage, Machine};
use crate::linux::{Evidence, KernelCmdline, LinuxEvidence, TscFlags};
use serde::Serialize;
use std::path::Path;

/// One line of a decision: the counter layer's [`Check`](crate::counter::Check) (serialised as
/// `{"ok", "check", "evidence"}`).
pub use crate::counter::Check as Reason;

/// PostgreSQL 19's `auto` decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PostgresAuto {
    /// `tsc_use_by_default`: `SHOW timing_clock_source` gives `auto (tsc)`.
    pub use_by_default: bool,
    pub frequency_khz: Option<u64>,
    pub frequency_source: Option<String>,
    pub reasons: Vec<Reason>,
}

/// clockscope's decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TscDecision {
    /// Every check passed.
    pub trusted: bool,
    /// The frequency clockscope uses (also when not trusted, for reference).
    pub frequency_khz: Option<u64>,
    pub frequency_source: Option<String>,
    pub reasons: Vec<Reason>,
}

/// What the kernel log says about the TSC, reduced to what decisions need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
pub struct KernelEvidence {
    pub kernel_release: Evidence<String>,
    pub current_clocksource: Evidence<String>,
    pub available_clocksources: Evidence<Vec<String>>,
    /// The TSC flags of /proc/cpuinfo.
    pub tsc_flags: Evidence<TscFlags>,
    /// /proc/cpuinfo `model name`.
    pub cpu_model_name: Option<String>,
    pub cmdline: Evidence<KernelCmdline>,
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

/// What clockscope's trust rules look at: CPUID (`None` without CPUID),
/// the kernel's evidence (`None` when analysing a dump) and the frequency table.
#[derive(Clone, Copy)]
struct TrustEvidence<'a> {
    cpuid: Option<&'a CpuidFacts>,
    kernel: Option<&'a KernelEvidence>,
    freq: &'a FrequencyReport,
}

/// The reason a kernel-evidence rule gives when there is no kernel.
const NO_KERNEL: &str = "no kernel evidence (analysing a CPUID dump)";

impl TrustEvidence<'_> {
    /// The kernel's TSC flags from /proc/cpuinfo, when read.
    fn flags(&self) -> Option<TscFlags> {
        self.kernel.and_then(|k| k.tsc_flags.found().copied())
    }

    /// The kernel's current clocksource, when read.
    fn current_clocksource(&self) -> Option<String> {
        self.kernel.and_then(|k| k.current_clocksource.found().cloned())
    }
}

/// One trust rule: the evidence in, one [`Reason`] out.
type TrustRule = fn(&TrustEvidence<'_>) -> Reason;

/// clockscope's trust rules, in report order (see the module documentation).
const TRUST_RULES: [TrustRule; 6] = [
    rule_rdtscp,
    rule_invariant_tsc,
    rule_kernel_clocksource,
    rule_not_marked_unstable,
    rule_frequency_agrees,
    rule_no_boot_option_against,
];

/// clockscope's decision (see the module documentation). `cpuid` is `None`
/// without CPUID; `kernel` is `None` when analysing a dump (no kernel). The
/// TSC is trusted when every rule of [`TRUST_RULES`] holds.
pub fn clockscope_decision(
    cpuid: Option<&CpuidFacts>,
    kernel: Option<&KernelEvidence>,
    freq: &FrequencyReport,
) -> TscDecision {
    let evidence = TrustEvidence { cpuid, kernel, freq };
    let reasons: Vec<Reason> = TRUST_RULES.iter().map(|rule| rule(&evidence)).collect();
    TscDecision {
        trusted: reasons.iter().all(|r| r.ok),
        frequency_khz: freq.clockscope.khz,
        frequency_source: freq.clockscope.source_label.map(str::to_string),
        reasons,
    }
}

/// 1. RDTSCP (CPUID 0x80000001 EDX bit 27): the ordered read exists.
fn rule_rdtscp(e: &TrustEvidence<'_>) -> Reason {
    let cpuid = e.cpuid;
    match cpuid {
        Some(f) if f.rdtscp => Reason::new(true, "RDTSCP", "CPUID 0x80000001 EDX bit 27 set"),
        Some(f) => Reason::new(
            false,
            "RDTSCP",
            format!(
                "{}: no ordered TSC read",
                f.flag_text(LEAF_EXTENDED_FEATURES_1, "EDX bit 27", false)
            ),
        ),
        None => Reason::new(false, "RDTSCP", "no CPUID on this architecture"),
    }
}

/// 2. Invariant TSC (CPUID 0x80000007 EDX bit 8) and, when /proc/cpuinfo is
///    readable, the kernel's `constant_tsc` and `nonstop_tsc` flags.
fn rule_invariant_tsc(e: &TrustEvidence<'_>) -> Reason {
    let cpuid = e.cpuid;
    let kernel = e.kernel;
    let flags = e.flags();
    match cpuid {
        None => Reason::new(false, "invariant TSC", "no CPUID on this architecture"),
        Some(f) => {
            let cpuid_text = f.flag_text(LEAF_POWER_MANAGEMENT, "EDX bit 8", f.invariant_tsc);
            match (kernel, flags) {
                (None, _) => Reason::new(f.invariant_tsc, "invariant TSC", format!("{cpuid_text}; {NO_KERNEL}")),
                (Some(k), None) => Reason::new(
                    false,
                    "invariant TSC",
                    format!(
                        "{cpuid_text}; /proc/cpuinfo {}",
                        k.tsc_flags.describe(|_| String::new())
                    ),
                ),
                (Some(_), Some(fl)) => {
                    let ok = f.invariant_tsc && fl.constant_tsc && fl.nonstop_tsc;
                    Reason::new(
                        ok,
                        "invariant TSC",
                        format!(
                            "{cpuid_text}; kernel flags constant_tsc {}, nonstop_tsc {}",
                            yes_no(fl.constant_tsc),
                            yes_no(fl.nonstop_tsc)
                        ),
                    )
                }
            }
        }
    }
}

/// 3. The kernel times with the TSC (current clocksource `tsc`) or marks it
///    `tsc_reliable`.
fn rule_kernel_clocksource(e: &TrustEvidence<'_>) -> Reason {
    let kernel = e.kernel;
    let flags = e.flags();
    let current = e.current_clocksource();
    match kernel {
        None => Reason::new(false, "kernel clocksource", NO_KERNEL),
        Some(k) => match (&current, flags.map(|f| f.tsc_reliable)) {
            (Some(c), _) if c == "tsc" => Reason::new(true, "kernel clocksource", "current clocksource is tsc"),
            (c, Some(true)) => Reason::new(
                true,
                "kernel clocksource",
                format!(
                    "current clocksource is {}, but the kernel flags the TSC tsc_reliable",
                    c.as_deref().unwrap_or("unknown")
                ),
            ),
            (Some(c), _) => Reason::new(
                false,
                "kernel clocksource",
                format!(
                    "current clocksource is {c}, not tsc, and no tsc_reliable flag (available: {})",
                    k.available_clocksources.describe(|v| v.join(" "))
                ),
            ),
            (None, _) => Reason::new(
                false,
                "kernel clocksource",
                format!("current clocksource {}", k.current_clocksource.describe(|c| c.clone())),
            ),
        },
    }
}

/// 4. The kernel log does not say it marked the TSC unstable (unread, it
///    passes only while the kernel still times with the TSC).
fn rule_not_marked_unstable(e: &TrustEvidence<'_>) -> Reason {
    let kernel = e.kernel;
    let current = e.current_clocksource();
    match kernel {
        None => Reason::new(false, "not marked unstable", NO_KERNEL),
        Some(k) => match &k.kernel_log {
            Evidence::Found(log) if log.marked_unstable => Reason::new(
                false,
                "not marked unstable",
                format!("kernel log: {}", log.unstable_evidence.join("; ")),
            ),
            Evidence::Found(log) => Reason::new(
                true,
                "not marked unstable",
                format!("kernel log ({} records) never marks the TSC unstable", log.records),
            ),
            other => {
                let why = other.reason().unwrap_or("").to_string();
                let tsc_available = k.available_clocksources.found().map(|v| v.iter().any(|c| c == "tsc"));
                if current.as_deref() == Some("tsc") {
                    Reason::new(
                    true,
                    "not marked unstable",
                    format!(
                        "kernel log not read ({why}); the kernel still times with the TSC, which it stops doing once it marks the TSC unstable"
                    ),
                )
                } else if tsc_available == Some(false) {
                    Reason::new(
                    false,
                    "not marked unstable",
                    format!(
                        "kernel log not read ({why}); tsc is missing from the available clocksources, as after the kernel marks it unstable"
                    ),
                )
                } else {
                    Reason::new(
                        false,
                        "not marked unstable",
                        format!("kernel log not read ({why}) and the kernel does not time with the TSC: cannot tell"),
                    )
                }
            }
        },
    }
}

/// 5. A known frequency whose measuring sources agree within
///    [`super::frequency::DISAGREEMENT_LIMIT_PPM`].
fn rule_frequency_agrees(e: &TrustEvidence<'_>) -> Reason {
    let freq = e.freq;
    match freq.clockscope.khz {
        Some(k) => Reason::new(
            freq.agreement.agree,
            "frequency known and sources agree",
            format!(
                "{k} kHz from {}; {}",
                freq.clockscope.source_label.unwrap_or("?"),
                freq.agreement.evidence
            ),
        ),
        None => Reason::new(false, "frequency known and sources agree", freq.clockscope.why.clone()),
    }
}

/// 6. No boot option against the TSC (`tsc=unstable`, `notsc`,
///    `clocksource=` other than `tsc`).
fn rule_no_boot_option_against(e: &TrustEvidence<'_>) -> Reason {
    let kernel = e.kernel;
    match kernel {
        None => Reason::new(false, "no boot option against the TSC", NO_KERNEL),
        Some(k) => match &k.cmdline {
            Evidence::Found(c) => {
                let mut against = Vec::new();
                if c.tsc_unstable {
                    against.push("tsc=unstable".to_string());
                }
                if c.notsc {
                    against.push("notsc".to_string());
                }
                if let Some(cs) = c.clocksource.as_deref().filter(|cs| *cs != "tsc") {
                    against.push(format!("clocksource={cs}"));
                }
                if against.is_empty() {
                    let tsc_opts = if c.tsc.is_empty() {
                        "no tsc= option".to_string()
                    } else {
                        format!("tsc={}", c.tsc.join(","))
                    };
                    let cs = c
                        .clocksource
                        .as_deref()
                        .map_or("no clocksource= option".to_string(), |cs| format!("clocksource={cs}"));
                    Reason::new(true, "no boot option against the TSC", format!("{tsc_opts}, {cs}"))
                } else {
                    Reason::new(
                        false,
                        "no boot option against the TSC",
                        format!("kernel command line has {}", against.join(" ")),
                    )
                }
            }
            other => Reason::new(
                false,
                "no boot option against the TSC",
                format!("/proc/cmdline not read ({})", other.reason().unwrap_or("")),
            ),
        },
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
mod tests {
    //! Each trust rule alone, on evidence that passes it and evidence that
    //! fails it; `tests/tsc_policy.rs` covers the decision as a whole.

    use super::*;
    use crate::tsc::cpuid::RecordedCpuid;
    use crate::tsc::frequency::{frequency_report, CalibrationInput, FrequencyInputs};

    fn facts(rdtscp: bool, invariant: bool) -> CpuidFacts {
        let rec = RecordedCpuid::new()
            .with(0, 0, [0x16, 0x756e_6547, 0x6c65_746e, 0x4965_6e69])
            .with(1, 0, [0x000a_0671, 0, 0, 1 << 4])
            .with(0x8000_0000, 0, [0x8000_0008, 0, 0, 0])
            .with(0x8000_0001, 0, [0, 0, 0, if rdtscp { 1 << 27 } else { 0 }])
            .with(0x8000_0007, 0, [0, 0, 0, if invariant { 1 << 8 } else { 0 }]);
        CpuidFacts::from_recorded(&rec)
    }

    fn kernel() -> KernelEvidence {
        KernelEvidence {
            kernel_release: Evidence::Found("6.18.0".to_string()),
            current_clocksource: Evidence::Found("tsc".to_string()),
            available_clocksources: Evidence::Found(vec!["tsc".to_string(), "hpet".to_string()]),
            tsc_flags: Evidence::Found(TscFlags {
                tsc: true,
                constant_tsc: true,
                nonstop_tsc: true,
                ..TscFlags::default()
            }),
            cpu_model_name: None,
            cmdline: Evidence::Found(KernelCmdline::parse("root=/dev/vda1 ro")),
            kernel_log: Evidence::Found(KernelLogTsc {
                records: 10,
                tsc_khz: None,
                tsc_khz_message: None,
                marked_unstable: false,
                unstable_evidence: vec![],
                messages: vec![],
            }),
        }
    }

    /// A frequency table with only the kernel log's kHz (and our calibration
    /// at `ours_khz`).
    fn freq(ours_khz: u64) -> FrequencyReport {
        frequency_report(&FrequencyInputs {
            cpuid: None,
            perf_page_khz: Err("no PMU".to_string()),
            kernel_log_khz: Ok((2_445_404, "kernel log".to_string())),
            calibration: Ok(CalibrationInput {
                khz: Some(ours_khz),
                hz: Some(ours_khz * 1000),
                uncertainty_ppm: Some(1.0),
                note: "converged".to_string(),
            }),
            postgres_calibration: Err("not run".to_string()),
            clocksource_is_counter: false,
        })
    }

    fn rule(rule: TrustRule, cpuid: Option<&CpuidFacts>, kernel: Option<&KernelEvidence>) -> Reason {
        rule(&TrustEvidence {
            cpuid,
            kernel,
            freq: &freq(2_445_404),
        })
    }

    #[test]
    fn rdtscp_needs_the_cpuid_bit() {
        assert!(rule(rule_rdtscp, Some(&facts(true, true)), None).ok);
        assert!(!rule(rule_rdtscp, Some(&facts(false, true)), None).ok);
        assert!(!rule(rule_rdtscp, None, None).ok);
    }

    #[test]
    fn invariant_tsc_needs_cpuid_and_both_kernel_flags() {
        let k = kernel();
        assert!(rule(rule_invariant_tsc, Some(&facts(true, true)), Some(&k)).ok);
        assert!(!rule(rule_invariant_tsc, Some(&facts(true, false)), Some(&k)).ok);
        let mut no_nonstop = kernel();
        no_nonstop.tsc_flags = Evidence::Found(TscFlags {
            constant_tsc: true,
            ..TscFlags::default()
        });
        assert!(!rule(rule_invariant_tsc, Some(&facts(true, true)), Some(&no_nonstop)).ok);
        let mut unread = kernel();
        unread.tsc_flags = Evidence::Unreadable("permission denied".to_string());
        assert!(!rule(rule_invariant_tsc, Some(&facts(true, true)), Some(&unread)).ok);
    }

    #[test]
    fn kernel_clocksource_is_tsc_or_tsc_reliable() {
        assert!(rule(rule_kernel_clocksource, None, Some(&kernel())).ok);
        let mut hpet = kernel();
        hpet.current_clocksource = Evidence::Found("hpet".to_string());
        assert!(!rule(rule_kernel_clocksource, None, Some(&hpet)).ok);
        hpet.tsc_flags = Evidence::Found(TscFlags {
            tsc_reliable: true,
            ..TscFlags::default()
        });
        assert!(rule(rule_kernel_clocksource, None, Some(&hpet)).ok);
        assert!(!rule(rule_kernel_clocksource, None, None).ok);
    }

    #[test]
    fn not_marked_unstable_reads_the_log_or_the_clocksource() {
        assert!(rule(rule_not_marked_unstable, None, Some(&kernel())).ok);
        let mut marked = kernel();
        marked.kernel_log = Evidence::Found(KernelLogTsc {
            records: 10,
            tsc_khz: None,
            tsc_khz_message: None,
            marked_unstable: true,
            unstable_evidence: vec!["clocksource: Marking clocksource 'tsc' as unstable".to_string()],
            messages: vec![],
        });
        let r = rule(rule_not_marked_unstable, None, Some(&marked));
        assert!(!r.ok);
        assert!(r.evidence.contains("Marking clocksource"), "{}", r.evidence);
        // Unread log: passes while the kernel times with the TSC, fails when tsc left the list.
        let mut unread = kernel();
        unread.kernel_log = Evidence::Unreadable("permission denied".to_string());
        assert!(rule(rule_not_marked_unstable, None, Some(&unread)).ok);
        unread.current_clocksource = Evidence::Found("hpet".to_string());
        unread.available_clocksources = Evidence::Found(vec!["hpet".to_string()]);
        assert!(!rule(rule_not_marked_unstable, None, Some(&unread)).ok);
    }

    #[test]
    fn frequency_rule_follows_the_agreement() {
        // The rule passes exactly when the frequency report's sources agree
        // (a lone kernel-log source with our calibration is the report's call).
        let agree = freq(2_445_404);
        let r = rule_frequency_agrees(&TrustEvidence {
            cpuid: None,
            kernel: None,
            freq: &agree,
        });
        assert_eq!(r.ok, agree.agreement.agree, "{}", r.evidence);
        // Our calibration 2000 ppm off the kernel log's kHz.
        let off = freq(2_445_404 + 4_891);
        assert!(
            !rule_frequency_agrees(&TrustEvidence {
                cpuid: None,
                kernel: None,
                freq: &off
            })
            .ok
        );
    }

    #[test]
    fn boot_options_against_the_tsc_fail() {
        assert!(rule(rule_no_boot_option_against, None, Some(&kernel())).ok);
        for cmdline in ["ro tsc=unstable", "ro notsc", "ro clocksource=hpet"] {
            let mut k = kernel();
            k.cmdline = Evidence::Found(KernelCmdline::parse(cmdline));
            let r = rule(rule_no_boot_option_against, None, Some(&k));
            assert!(!r.ok, "{cmdline}");
        }
        assert!(!rule(rule_no_boot_option_against, None, None).ok);
    }
}
