//! Every kernel message about the TSC and clocksources that clockscope knows,
//! recognised from its message text (the log prefix already removed by
//! [`super::paste`]) with the values it carries.
//!
//! The format ids in the comments (W1, T4, Y9, H1 ...) are those of
//! `docs/dev/kernel-messages/FORMATS.md`, which cites each format string's
//! kernel file and versions. Matching is on the fixed text of a format, with
//! the `clocksource: `, `tsc: ` and `vmware: ` prefixes optional (kernels
//! before 4.2 / 3.5 / 4.19 print none) and a trailing `.` accepted (≤3.4).
//! The text is untrusted: names are kept verbatim (escaped by renderers),
//! numbers are parsed exactly or not at all.

pub use super::kinds::{Citation, Facts, Kind, Role};

/// One recognised message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recognised {
    /// What the message says.
    pub kind: Kind,
    /// Its part in a sequence of messages.
    pub role: Role,
    /// The values read from it.
    pub facts: Facts,
}

/// Strips the optional pr_fmt prefixes a message may carry.
fn body(msg: &str) -> &str {
    let mut b = msg.trim();
    for p in ["clocksource: ", "tsc: ", "vmware: ", "[Firmware Bug]: "] {
        if let Some(r) = b.strip_prefix(p) {
            b = r.trim_start();
        }
    }
    b.trim_end()
}

/// The text after `needle`.
pub(crate) fn after<'a>(hay: &'a str, needle: &str) -> Option<&'a str> {
    hay.find(needle).map(|i| &hay[i + needle.len()..])
}

/// The text between `a` and the following `b`.
fn between<'a>(hay: &'a str, a: &str, b: &str) -> Option<&'a str> {
    after(hay, a).and_then(|r| r.find(b).map(|i| &r[..i]))
}

/// A leading signed decimal integer of `s` (after spaces).
fn int(s: &str) -> Option<i64> {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(s.len(), |(i, _)| i);
    s[..end].parse().ok()
}

/// The integer right after `needle`.
fn int_after(hay: &str, needle: &str) -> Option<i64> {
    after(hay, needle).and_then(int)
}

fn uint_after(hay: &str, needle: &str) -> Option<u32> {
    int_after(hay, needle).and_then(|v| u32::try_from(v).ok())
}

/// The first `'quoted'` name after `needle`.
fn quoted_after(hay: &str, needle: &str) -> Option<String> {
    after(hay, needle)
        .and_then(|r| r.strip_prefix('\'').or(Some(r)))
        .and_then(|r| r.split_once('\''))
        .map(|(n, _)| n.to_string())
}

/// The whitespace-delimited word right after `needle`.
fn word_after(hay: &str, needle: &str) -> Option<String> {
    after(hay, needle)
        .and_then(|r| r.split_whitespace().next())
        .map(str::to_string)
}

/// A `%lu.%03lu MHz` value (optional trailing `.`) right after `needle`.
fn mhz_after(hay: &str, needle: &str) -> Option<u64> {
    let r = after(hay, needle)?.trim_start();
    let num = r.split_whitespace().next()?;
    crate::kernel_log::parse_mhz_as_khz(num)
}

fn rec(kind: Kind, role: Role, facts: Facts) -> Option<Recognised> {
    Some(Recognised { kind, role, facts })
}

fn event(kind: Kind) -> Option<Recognised> {
    rec(kind, Role::Event, Facts::default())
}

/// A message naming one clocksource.
fn on_clocksource(kind: Kind, role: Role, clocksource: Option<String>) -> Option<Recognised> {
    let facts = Facts {
        clocksource,
        ..Facts::default()
    };
    rec(kind, role, facts)
}

/// Recognises a message (without its log prefix).
pub(crate) fn recognise(msg: &str) -> Option<Recognised> {
    let b = body(msg);
    watchdog(b)
        .or_else(|| verify(b))
        .or_else(|| selection(b))
        .or_else(|| tsc_c(b))
        .or_else(|| tsc_sync(b))
        .or_else(|| tsc_adjust(b))
        .or_else(|| platform(b))
}

/// W1-W17, W24: the clocksource watchdog.
fn watchdog(b: &str) -> Option<Recognised> {
    use Kind as K;
    // The `timekeeping watchdog on CPU%d: ` CPU number.
    let cpu = uint_after(b, "watchdog on CPU");
    if let (true, Some(name)) = (
        b.starts_with("Clocksource "),
        between(b, "Clocksource ", " unstable (delta = "),
    ) {
        let facts = Facts {
            clocksource: Some(name.to_string()),
            skew_ns: int_after(b, "(delta = "),
            ..Facts::default()
        };
        let kind = if b.contains("clocksource failover") {
            K::WatchdogSkewReported
        } else {
            K::WatchdogMarkedUnstable
        };
        return rec(kind, Role::Event, facts);
    }
    if b.contains("Marking clocksource '") && b.contains("as unstable") {
        let facts = Facts {
            clocksource: quoted_after(b, "Marking clocksource "),
            cpu,
            ..Facts::default()
        };
        return rec(K::WatchdogMarkedUnstable, Role::Opens, facts);
    }
    // `wd_nesc` is 5.x's misspelling of `wd_nsec` (fixed in 5.13).
    if b.starts_with('\'') && (b.contains("' wd_now: ") || b.contains("' wd_nsec: ") || b.contains("' wd_nesc: ")) {
        let facts = Facts {
            watchdog: quoted_after(b, ""),
            wd_nsec: int_after(b, "wd_nsec: ").or_else(|| int_after(b, "wd_nesc: ")),
            ..Facts::default()
        };
        return rec(K::WatchdogMarkedUnstable, Role::Detail, facts);
    }
    if b.starts_with('\'') && (b.contains("' cs_now: ") || b.contains("' cs_nsec: ")) {
        let facts = Facts {
            clocksource: quoted_after(b, ""),
            cs_nsec: int_after(b, "cs_nsec: "),
            ..Facts::default()
        };
        return rec(K::WatchdogMarkedUnstable, Role::Detail, facts);
    }
    if b.starts_with("Clocksource '") && b.contains(" skewed ") {
        let facts = Facts {
            clocksource: quoted_after(b, "Clocksource "),
            skew_ns: int_after(b, " skewed "),
            watchdog: quoted_after(b, "over watchdog "),
            interval_ns: int_after(b, "interval of "),
            ..Facts::default()
        };
        return rec(K::WatchdogMarkedUnstable, Role::Detail, facts);
    }
    if b.ends_with("is current clocksource.") || b == "No current clocksource." {
        return rec(K::WatchdogMarkedUnstable, Role::Detail, Facts::default());
    }
    if b.contains(" times before success") {
        let facts = Facts {
            cpu,
            watchdog: word_after(b, ": "),
            attempts: int_after(b, " retried "),
            ..Facts::default()
        };
        return rec(K::WatchdogRetried, Role::Event, facts);
    }
    watchdog_readback(b, cpu)
}

/// W13-W17, W24: read-back delays, long readouts.
fn watchdog_readback(b: &str, cpu: Option<u32>) -> Option<Recognised> {
    use Kind as K;
    let readback = |watchdog| Facts {
        cpu,
        watchdog,
        delay_ns: int_after(b, "read-back delay of "),
        ..Facts::default()
    };
    if b.contains("read-back delay of ") && b.contains("marking ") && b.ends_with("unstable") {
        let mut facts = readback(None);
        facts.attempts = int_after(b, "attempt ");
        if b.contains("excessive read-back delay") {
            facts.clocksource = between(b, "wd-", "-wd excessive").map(str::to_string);
        } else {
            facts.watchdog = word_after(b, ": ");
        }
        return rec(K::WatchdogReadbackUnstable, Role::Event, facts);
    }
    // W13 cut short by a paste (`... hpet read-back delay of 5252e`): the
    // only other `%s read-back delay` form is W15's `wd-wd` one.
    if b.contains("watchdog") && b.contains(" read-back delay of ") && !b.contains("wd-wd") && !b.starts_with("wd-") {
        return rec(K::WatchdogReadbackUnstable, Role::Event, readback(word_after(b, ": ")));
    }
    if b.starts_with("timekeeping watchdog on CPU") && b.contains(" wd-wd read-back delay of ") {
        return rec(K::WatchdogSkewTestSkipped, Role::Opens, readback(word_after(b, ": ")));
    }
    if b.starts_with("wd-") && b.contains("clock-skew test skipped") {
        let facts = Facts {
            clocksource: between(b, "wd-", "-wd read-back").map(str::to_string),
            delay_ns: int_after(b, "read-back delay of "),
            ..Facts::default()
        };
        return rec(K::WatchdogSkewTestSkipped, Role::Detail, facts);
    }
    if b.starts_with("Long readout interval") {
        let facts = Facts {
            cs_nsec: int_after(b, "cs_nsec: "),
            wd_nsec: int_after(b, "wd_nsec: "),
            ..Facts::default()
        };
        return rec(K::WatchdogLongReadout, Role::Event, facts);
    }
    if b.contains("coarse-grained") && b.contains("clock-skew check") {
        let facts = Facts {
            cpu,
            watchdog: word_after(b, ": "),
            ..Facts::default()
        };
        return rec(K::WatchdogCoarseCheck, Role::Event, facts);
    }
    None
}

/// W18-W22: the per-CPU verification of a condemned clocksource.
fn verify(b: &str) -> Option<Recognised> {
    use Kind as K;
    if b.starts_with("Checking clocksource ") && b.contains(" synchronization from CPU ") {
        let facts = Facts {
            clocksource: word_after(b, "Checking clocksource "),
            cpu: uint_after(b, "from CPU "),
            cpus: word_after(b, "to CPUs ").map(|c| c.trim_end_matches('.').to_string()),
            ..Facts::default()
        };
        return rec(K::ClocksourceSyncCheck, Role::Event, facts);
    }
    for (word, kind) in [
        (" ahead of CPU ", K::ClocksourceSyncAhead),
        (" behind CPU ", K::ClocksourceSyncBehind),
    ] {
        if b.starts_with("CPUs ") && b.contains(word) && b.contains(" for clocksource ") {
            let facts = Facts {
                cpus: between(b, "CPUs ", word).map(str::to_string),
                cpu: uint_after(b, word),
                clocksource: word_after(b, " for clocksource ").map(|c| c.trim_end_matches('.').to_string()),
                ..Facts::default()
            };
            return rec(kind, Role::Event, facts);
        }
    }
    if b.starts_with("CPU ") && b.contains(" check durations ") {
        let facts = Facts {
            cpu: uint_after(b, "CPU "),
            clocksource: word_after(b, " for clocksource ").map(|c| c.trim_end_matches('.').to_string()),
            ..Facts::default()
        };
        return rec(K::ClocksourceSyncDurations, Role::Event, facts);
    }
    if b.starts_with("Not enough CPUs to check clocksource ") {
        return on_clocksource(
            K::ClocksourceSyncNotEnoughCpus,
            Role::Event,
            quoted_after(b, "check clocksource "),
        );
    }
    None
}

/// S1-S6: clocksource selection and registration.
fn selection(b: &str) -> Option<Recognised> {
    use Kind as K;
    for needle in [
        "Switched to clocksource ",
        "Switching to clocksource ",
        "switching to clocksource ",
    ] {
        if b.starts_with(needle) {
            return on_clocksource(K::ClocksourceSwitched, Role::Event, word_after(b, needle));
        }
    }
    if let Some(name) = b
        .strip_prefix("Time: ")
        .and_then(|r| r.strip_suffix(" clocksource has been installed."))
    {
        return on_clocksource(K::ClocksourceSwitched, Role::Event, Some(name.to_string()));
    }
    if b.starts_with("Override clocksource ") {
        let kind = if b.contains("is unstable and not HRT compatible") {
            K::OverrideUnstableNotHrt
        } else if b.contains("not currently HRT compatible") {
            K::OverrideDeferred
        } else if b.contains("is not HRT compatible") {
            K::OverrideNotHrt
        } else {
            return None;
        };
        return on_clocksource(kind, Role::Event, word_after(b, "Override clocksource "));
    }
    if let Some((name, _)) = b.split_once(": mask: 0x") {
        if !name.is_empty() && !name.contains(char::is_whitespace) {
            return on_clocksource(K::ClocksourceRegistered, Role::NotEvent, Some(name.to_string()));
        }
    }
    None
}

/// T1-T22: arch/x86/kernel/tsc.c.
fn tsc_c(b: &str) -> Option<Recognised> {
    use Kind as K;
    let khz = |kind, needle| {
        rec(
            kind,
            Role::Event,
            Facts {
                khz: mhz_after(b, needle),
                ..Facts::default()
            },
        )
    };
    if b.starts_with("Detected ") {
        let unit = b.trim_end_matches('.');
        if unit.ends_with(" MHz processor") {
            return khz(K::TscDetectedProcessor, "Detected ");
        }
        if unit.ends_with(" MHz TSC") {
            return khz(K::TscDetectedTsc, "Detected ");
        }
    }
    if b.starts_with("Refined TSC clocksource calibration: ") {
        return khz(K::TscRefined, "calibration: ");
    }
    if let Some(reason) = after(b, "Marking TSC unstable due to ") {
        let facts = Facts {
            reason: Some(reason.trim().to_string()),
            ..Facts::default()
        };
        return rec(K::TscMarkedUnstable, Role::Event, facts);
    }
    if b.starts_with("Marking TSC async resets true due to ") {
        let facts = Facts {
            reason: after(b, " due to ").map(|r| r.trim().to_string()),
            ..Facts::default()
        };
        return rec(K::TscAsyncResets, Role::Event, facts);
    }
    if b.starts_with("Previous calibrated TSC freq:") {
        return khz(K::TscRecalibrated, "freq:");
    }
    if b.starts_with("TSC freq recalibrated by ") {
        return khz(K::TscRecalibrated, "]:");
    }
    let fixed: &[(&str, Kind)] = &[
        ("Fast TSC calibration using PIT", K::TscFastCalibrationOk),
        ("Fast TSC calibration failed", K::TscFastCalibrationFailed),
        ("Unable to calibrate against PIT", K::TscPitUnable),
        ("No reference (HPET/PMTIMER) available", K::TscNoReference),
        ("HPET/PMTIMER calibration failed", K::TscReferenceFailed),
        ("PIT calibration matches ", K::TscPitMatches),
        ("Using PIT calibration value", K::TscPitValue),
        ("PIT calibration deviates from ", K::TscPitDeviates),
        (
            "Warning: TSC freq calibrated by CPUID/MSR differs",
            K::TscRecalibrateMismatch,
        ),
    ];
    if let Some((_, kind)) = fixed.iter().find(|(p, _)| b.starts_with(p)) {
        return event(*kind);
    }
    if b.starts_with("using ") && b.ends_with(" reference calibration") {
        return event(K::TscReferenceCalibration);
    }
    None
}

/// Y1-Y5: arch/x86/kernel/tsc_sync.c, the bring-up sync test.
fn tsc_sync(b: &str) -> Option<Recognised> {
    use Kind as K;
    if b.starts_with("checking TSC synchronization [CPU#") || b.starts_with("TSC synchronization [CPU#") {
        let facts = Facts {
            from_cpu: uint_after(b, "[CPU#"),
            to_cpu: uint_after(b, "-> CPU#"),
            ..Facts::default()
        };
        if b.contains("passed") {
            return rec(K::TscSyncPassed, Role::Event, facts);
        }
        return rec(K::TscSyncWarp, Role::Opens, facts);
    }
    if b.starts_with("Measured ") && b.contains(" cycles TSC warp between CPUs") {
        let facts = Facts {
            warp_cycles: int_after(b, "Measured "),
            ..Facts::default()
        };
        return rec(K::TscSyncWarp, Role::Detail, facts);
    }
    if b.starts_with("TSC warped randomly between CPUs") {
        return rec(K::TscSyncWarp, Role::Detail, Facts::default());
    }
    if b.starts_with("Skipping synchronization checks as TSC is reliable") {
        return event(K::TscSyncSkipped);
    }
    None
}

/// Y6-Y12: TSC_ADJUST (tsc_sync.c).
fn tsc_adjust(b: &str) -> Option<Recognised> {
    use Kind as K;
    if !b.starts_with("TSC ADJUST") {
        return None;
    }
    let mut facts = Facts::default();
    let kind = if b.starts_with("TSC ADJUST compensate: ") {
        facts.cpu = uint_after(b, "compensate: CPU");
        facts.warp_cycles = int_after(b, " observed ");
        facts.tsc_adjust_new = int_after(b, "Adjust: ");
        K::TscAdjustCompensate
    } else if b.starts_with("TSC ADJUST synchronize: ") {
        facts.cpu = after(b, "Reference CPU").and_then(|r| uint_after(r, " CPU"));
        facts.tsc_adjust = after(b, "Reference CPU")
            .and_then(|r| after(r, " CPU"))
            .and_then(|r| int_after(r, ": "));
        K::TscAdjustSynchronize
    } else if b.starts_with("TSC ADJUST differs: CPU") && b.contains("Restoring") {
        facts.cpu = uint_after(b, "differs: CPU");
        facts.tsc_adjust = after(b, "differs: CPU").and_then(|r| int_after(r, " "));
        facts.tsc_adjust_new = int_after(b, "--> ");
        K::TscAdjustRestored
    } else if b.starts_with("TSC ADJUST differs") {
        facts.cpu = after(b, "Reference CPU").and_then(|r| uint_after(r, " CPU"));
        facts.tsc_adjust = after(b, "Reference CPU")
            .and_then(|r| after(r, " CPU"))
            .and_then(|r| int_after(r, ": "));
        K::TscAdjustDiffers
    } else if b.starts_with("TSC ADJUST: CPU") && b.ends_with("NOT forced to 0") {
        facts.cpu = uint_after(b, "ADJUST: CPU");
        facts.tsc_adjust = after(b, "ADJUST: CPU").and_then(|r| int_after(r, ": "));
        K::TscAdjustNotForced
    } else if b.starts_with("TSC ADJUST: CPU") && b.ends_with("force to 0") {
        facts.cpu = uint_after(b, "ADJUST: CPU");
        facts.tsc_adjust = after(b, "ADJUST: CPU").and_then(|r| int_after(r, ": "));
        K::TscAdjustForceZero
    } else {
        return None;
    };
    rec(kind, Role::Event, facts)
}

/// H1-H21: hypervisors, kvm-clock, AMD, APIC, sched_clock.
fn platform(b: &str) -> Option<Recognised> {
    use Kind as K;
    let named = |kind, needle| {
        let facts = Facts {
            hypervisor: after(b, needle).map(|r| r.trim().to_string()),
            ..Facts::default()
        };
        rec(kind, Role::Event, facts)
    };
    if b.starts_with("Hypervisor detected: ") {
        return named(K::HypervisorDetected, "detected: ");
    }
    if b.starts_with("Booting paravirtualized kernel on ") {
        return named(K::ParavirtKernel, " kernel on ");
    }
    if b.starts_with("TSC freq read from hypervisor") {
        let facts = Facts {
            khz: mhz_after(b, ": "),
            ..Facts::default()
        };
        return rec(K::HypervisorTscFrequency, Role::Event, facts);
    }
    let fixed: &[(&str, Kind)] = &[
        ("kvm-clock: ", K::KvmClock),
        ("Xen version", K::XenVersion),
        ("HyperV: features ", K::HypervFeatures),
        ("HyperV: LAPIC Timer Frequency", K::HypervFeatures),
        ("Hyper-V: LAPIC Timer Frequency", K::HypervFeatures),
        ("Hyper-V: privilege flags ", K::HypervFeatures),
        ("Hyper-V: features ", K::HypervFeatures),
        ("Hyper-V: Host Build ", K::HypervFeatures),
        ("Hyper-V Host Build:", K::HypervFeatures),
        ("TSC doesn't count with P0 frequency", K::FirmwareBugP0),
        ("TSC deadline timer", K::TscDeadlineTimer),
        ("TSC_DEADLINE disabled", K::TscDeadlineTimer),
        ("TSC found unstable after boot", K::TscUnstableAfterBoot),
        ("sched_clock: Marking unstable", K::SchedClockUnstable),
        ("arch_timer: cp15 timer", K::ArchTimer),
        ("arch_timer: cp15 and mmio timer", K::ArchTimer),
    ];
    fixed
        .iter()
        .find(|(p, _)| b.starts_with(p))
        .and_then(|(_, k)| event(*k))
}

#[cfg(test)]
mod tests;
