//! clockscope's trust decision ([`clockscope_decision`]): one function per
//! rule (see [`super`]'s documentation for the list), each over the same
//! [`TrustEvidence`] and each tested alone; the TSC is trusted when all hold.

use super::{KernelEvidence, Reason, TscDecision};
use crate::linux::{Evidence, TscFlags};
use crate::tsc::cpuid::{CpuidFacts, LEAF_EXTENDED_FEATURES_1, LEAF_POWER_MANAGEMENT};
use crate::tsc::frequency::FrequencyReport;

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
/// TSC is trusted when every rule of `TRUST_RULES` holds.
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
    match e.cpuid {
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
    match e.cpuid {
        None => Reason::new(false, "invariant TSC", "no CPUID on this architecture"),
        Some(f) => {
            let cpuid_text = f.flag_text(LEAF_POWER_MANAGEMENT, "EDX bit 8", f.invariant_tsc);
            match (e.kernel, e.flags()) {
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
    let current = e.current_clocksource();
    match e.kernel {
        None => Reason::new(false, "kernel clocksource", NO_KERNEL),
        Some(k) => match (&current, e.flags().map(|f| f.tsc_reliable)) {
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
    let current = e.current_clocksource();
    match e.kernel {
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
///    [`crate::tsc::frequency::DISAGREEMENT_LIMIT_PPM`].
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
    match e.kernel {
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
    //! fails it; `tests/all/tsc_policy.rs` covers the decision as a whole.

    use super::*;
    use crate::linux::KernelCmdline;
    use crate::tsc::cpuid::RecordedCpuid;
    use crate::tsc::frequency::{frequency_report, CalibrationInput, FrequencyInputs};
    use crate::tsc::policy::KernelLogTsc;

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
