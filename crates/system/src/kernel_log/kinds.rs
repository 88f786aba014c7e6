//! The vocabulary of a kernel log's interpretation: the kinds of event
//! (the JSON `events[].kind`, with their FORMATS.md format ids), how a line
//! takes part in an event, and the values a message carries.

use serde::Serialize;

/// The kind of an event in a kernel log (the JSON `events[].kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// W1-W3 (+ W4-W11 detail lines): the watchdog marked a clocksource unstable.
    WatchdogMarkedUnstable,
    /// W1v (RHEL 6): the skew was reported but nothing was marked unstable.
    WatchdogSkewReported,
    /// W12: the watchdog's reads were retried before one succeeded.
    WatchdogRetried,
    /// W13, W14: a read-back delay made the watchdog mark a clocksource unstable.
    WatchdogReadbackUnstable,
    /// W15 + W16: a slow watchdog read; the skew check was skipped.
    WatchdogSkewTestSkipped,
    /// W17: the watchdog interval was too long to judge.
    WatchdogLongReadout,
    /// W24 (unmerged RFC, test kernels).
    WatchdogCoarseCheck,
    /// W18: per-CPU verification of a condemned clocksource.
    ClocksourceSyncCheck,
    /// W19: CPUs ahead of the checking CPU.
    ClocksourceSyncAhead,
    /// W20: CPUs behind the checking CPU.
    ClocksourceSyncBehind,
    /// W21: the duration of the per-CPU check.
    ClocksourceSyncDurations,
    /// W22: a single CPU: nothing to compare.
    ClocksourceSyncNotEnoughCpus,
    /// S1, S2: the clocksource the kernel times with from here.
    ClocksourceSwitched,
    /// S3: a `clocksource=` override not HRT compatible (old text).
    OverrideNotHrt,
    /// S4: a `clocksource=` override refused because it is unstable.
    OverrideUnstableNotHrt,
    /// S5: a `clocksource=` override deferred.
    OverrideDeferred,
    /// S6: `%s: mask: 0x%llx ...`: a clocksource registered (not an event).
    ClocksourceRegistered,
    /// T1, T2: `Detected %lu.%03lu MHz processor` (cpu_khz).
    TscDetectedProcessor,
    /// T3: `Detected %lu.%03lu MHz TSC` (tsc_khz when it differs).
    TscDetectedTsc,
    /// T4, T5: `Refined TSC clocksource calibration`.
    TscRefined,
    /// T6: the quick PIT calibration worked.
    TscFastCalibrationOk,
    /// T7: the quick PIT calibration failed.
    TscFastCalibrationFailed,
    /// T8: the PIT could not be used.
    TscPitUnable,
    /// T9: neither HPET nor the PM timer to calibrate against.
    TscNoReference,
    /// T10, T14: the HPET/PM timer calibration failed.
    TscReferenceFailed,
    /// T11: calibrated against HPET or the PM timer.
    TscReferenceCalibration,
    /// T12: the PIT calibration matched the reference.
    TscPitMatches,
    /// T13: the PIT value was used.
    TscPitValue,
    /// T15: the PIT calibration deviated from the reference.
    TscPitDeviates,
    /// T16, T17, H13: `Marking TSC unstable due to %s`.
    TscMarkedUnstable,
    /// T18: `tsc=recalibrate` found a different frequency.
    TscRecalibrateMismatch,
    /// T19, T20: `tsc=recalibrate` values.
    TscRecalibrated,
    /// T22: TSC async resets.
    TscAsyncResets,
    /// Y1 `... passed.`: two CPUs' TSCs agreed at bring-up.
    TscSyncPassed,
    /// Y1/Y3 + Y2 (+ Y4): two CPUs' TSCs disagreed: the TSC clock is off.
    TscSyncWarp,
    /// Y5: sync checks skipped as the TSC is reliable.
    TscSyncSkipped,
    /// Y6: firmware left TSC_ADJUST non-zero at boot; forced to 0.
    TscAdjustForceZero,
    /// Y7: TSC_ADJUST left as is (async resets).
    TscAdjustNotForced,
    /// Y8, Y10: TSC_ADJUST differs between CPUs of a socket at boot.
    TscAdjustDiffers,
    /// Y9: TSC_ADJUST synchronised to the reference CPU (4.10-4.11).
    TscAdjustSynchronize,
    /// Y11: firmware changed TSC_ADJUST after boot; restored.
    TscAdjustRestored,
    /// Y12: TSC_ADJUST set to compensate an observed warp.
    TscAdjustCompensate,
    /// H1: `Hypervisor detected: %s`.
    HypervisorDetected,
    /// H2: `Booting paravirtualized kernel on %s`.
    ParavirtKernel,
    /// H3-H5: kvm-clock set-up.
    KvmClock,
    /// H7, H8: Xen version.
    XenVersion,
    /// H9-H12: Hyper-V feature lines.
    HypervFeatures,
    /// H15: `TSC freq read from hypervisor`.
    HypervisorTscFrequency,
    /// H18: `[Firmware Bug]: TSC doesn't count with P0 frequency!`.
    FirmwareBugP0,
    /// H19: TSC deadline timer.
    TscDeadlineTimer,
    /// H20: `TSC found unstable after boot`.
    TscUnstableAfterBoot,
    /// H21: `sched_clock: Marking unstable`.
    SchedClockUnstable,
    /// A1: `arch_timer: cp15 timer(s) running at %lu.%02luMHz (%s).` (ARM
    /// generic timer, the `arch_sys_counter` clocksource).
    ArchTimer,
}

impl Kind {
    /// The JSON name of the kind (`tsc_sync_warp`): serde's snake_case of
    /// the variant name.
    pub fn name(self) -> String {
        let mut out = String::new();
        for (i, c) in format!("{self:?}").chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    }
}

/// Where a fact of a summary was read: the line's number in the text read
/// (1-based) and the line as it stood (untrusted: escape when shown).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Citation {
    /// 1-based line number in the text read.
    pub line: u64,
    /// The line verbatim (paste prefixes kept), cut to 1 KiB.
    pub text: String,
    /// Its message (the paste prefixes removed; lines a mail client wrapped
    /// joined), cut to 1 KiB.
    pub message: String,
}

/// How a line takes part in an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An event of its own.
    Event,
    /// Opens an event that the following detail lines complete (W2/W3, W15,
    /// Y1/Y3 failure).
    Opens,
    /// Completes the open event of this kind, or stands alone without one.
    Detail,
    /// Recognised but not an event (S6 registration, W4-W11 without their header).
    NotEvent,
}

/// The values a message carries; every field optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Facts {
    /// The clocksource the message is about (switched to, condemned, registered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
    /// The watchdog clocksource that judged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watchdog: Option<String>,
    /// The kernel's reason text (`Marking TSC unstable due to <reason>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A frequency printed as `%lu.%03lu MHz`, exact in kHz.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub khz: Option<u64>,
    /// The CPU the message names (watchdog CPU, TSC_ADJUST CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// `[CPU#a -> CPU#b]` of a TSC sync check: source CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_cpu: Option<u32>,
    /// `[CPU#a -> CPU#b]` of a TSC sync check: target CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_cpu: Option<u32>,
    /// CPU list text (`%*pbl`, e.g. `0-2,4`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// TSC warp in cycles (Y2) or observed warp (Y12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warp_cycles: Option<i64>,
    /// Read-back delay, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ns: Option<i64>,
    /// Skew of the clocksource against the watchdog, ns (cs - wd).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew_ns: Option<i64>,
    /// Watchdog interval, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_ns: Option<i64>,
    /// `wd_nsec`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wd_nsec: Option<i64>,
    /// `cs_nsec`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cs_nsec: Option<i64>,
    /// Retries or attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i64>,
    /// TSC_ADJUST value(s) as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tsc_adjust: Option<i64>,
    /// The new TSC_ADJUST value of a restore (Y11) or the adjust of Y12.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tsc_adjust_new: Option<i64>,
    /// Hypervisor name as printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<String>,
}
