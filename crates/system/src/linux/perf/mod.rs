//! The kernel's own TSC-to-nanoseconds scale, from a perf_event mmap page.
//!
//! When the kernel lets user space convert TSC readings itself, the first page
//! of a perf event's mapping (`struct perf_event_mmap_page`) publishes
//! `cap_user_time`, `time_mult`, `time_shift` and (with `cap_user_time_zero`)
//! `time_zero`, such that
//!
//! ```text
//! ns        = (cycles * time_mult) >> time_shift
//! timestamp = time_zero + ns            (perf's clock, sched_clock)
//! kHz       = 10^6 * 2^time_shift / time_mult
//! ```
//!
//! x86 publishes them only when sched_clock is the native TSC one and stable
//! (`arch_perf_update_userpage`); a paravirtual sched_clock (kvm-clock, Xen)
//! leaves `cap_user_time` clear. The math here is pure and tested; the system
//! call, mmap and volatile reads live in `x86_64.rs`.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod x86_64;

use serde::Serialize;
use std::fmt;

/// The TSC scale read from a perf_event mmap page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct PerfTimeScale {
    /// Multiplier: ns = (cycles * time_mult) >> time_shift.
    pub time_mult: u32,
    /// Shift for `time_mult`.
    pub time_shift: u16,
    /// `time_offset` (for converting `time_enabled`/`time_running`).
    pub time_offset: u64,
    /// `time_zero`, when `cap_user_time_zero` is set: the perf clock at TSC 0.
    pub time_zero: Option<u64>,
    /// Which perf event's page this came from (e.g. "software dummy").
    pub event: &'static str,
}

impl PerfTimeScale {
    /// The TSC frequency this scale implies, in kHz (rounded to nearest).
    pub fn khz(&self) -> Option<u64> {
        khz_from_mult_shift(self.time_mult, self.time_shift)
    }

    /// The TSC frequency this scale implies, in Hz (rounded to nearest).
    pub fn hz(&self) -> Option<u64> {
        hz_from_mult_shift(self.time_mult, self.time_shift)
    }
}

/// `10^6 * 2^shift / mult`, rounded to nearest, in exact integer arithmetic;
/// `None` for a zero multiplier or a shift beyond 64.
pub fn khz_from_mult_shift(mult: u32, shift: u16) -> Option<u64> {
    ratio_rounded(1_000_000, mult, shift)
}

/// `10^9 * 2^shift / mult`, rounded to nearest.
pub fn hz_from_mult_shift(mult: u32, shift: u16) -> Option<u64> {
    ratio_rounded(1_000_000_000, mult, shift)
}

fn ratio_rounded(unit: u128, mult: u32, shift: u16) -> Option<u64> {
    if mult == 0 || shift > 64 {
        return None;
    }
    let num = unit << shift;
    let m = mult as u128;
    u64::try_from((num + m / 2) / m).ok()
}

/// The raw fields of a perf_event mmap page that matter here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageFields {
    /// `version`: the kernel bumps it while it updates the page (a seqlock).
    pub version: u32,
    /// `capabilities`: the `CAP_USER_*` bits below.
    pub capabilities: u64,
    /// `time_shift`: TSC ticks to ns is `(ticks * time_mult) >> time_shift`.
    pub time_shift: u16,
    /// `time_mult`: see `time_shift`.
    pub time_mult: u32,
    /// `time_offset`: added to the converted ticks for the perf clock.
    pub time_offset: u64,
    /// `time_zero`: the TSC value at perf clock zero (with `CAP_USER_TIME_ZERO`).
    pub time_zero: u64,
}

/// Capability bits of `perf_event_mmap_page.capabilities` (after
/// `cap_bit0`, `cap_bit0_is_deprecated` and `cap_user_rdpmc`).
/// `cap_user_time`: `time_shift`, `time_mult` and `time_offset` are valid.
pub const CAP_USER_TIME: u64 = 1 << 3;
/// `cap_user_time_zero`: `time_zero` is valid.
pub const CAP_USER_TIME_ZERO: u64 = 1 << 4;

/// Decodes a page read under its seqlock.
pub fn decode_page(page: &PageFields, event: &'static str) -> Result<PerfTimeScale, PerfUnavailable> {
    if page.capabilities & CAP_USER_TIME == 0 {
        return Err(PerfUnavailable(format!(
            "no cap_user_time in the perf page (version {}, capabilities {:#x}): the kernel does \
             not publish the TSC scale here (x86 publishes it only when sched_clock is the native, stable \
             TSC one; a paravirtual sched_clock such as kvm-clock's leaves it clear)",
            page.version, page.capabilities
        )));
    }
    if page.time_mult == 0 {
        return Err(PerfUnavailable(
            "cap_user_time is set but time_mult is 0 in the perf page".to_string(),
        ));
    }
    Ok(PerfTimeScale {
        time_mult: page.time_mult,
        time_shift: page.time_shift,
        time_offset: page.time_offset,
        time_zero: (page.capabilities & CAP_USER_TIME_ZERO != 0).then_some(page.time_zero),
        event,
    })
}

/// Why the kernel's TSC scale could not be read (one line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{0}")]
pub struct PerfUnavailable(pub String);

/// Reads the TSC scale from a perf_event mmap page of this process.
pub fn read_tsc_scale() -> Result<PerfTimeScale, PerfUnavailable> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        x86_64::read_tsc_scale()
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        Err(PerfUnavailable(format!(
            "the perf_event TSC scale is read only on Linux x86-64 (this is {} {})",
            std::env::consts::OS,
            std::env::consts::ARCH
        )))
    }
}

/// The errno's symbolic name, for one-line messages.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub(crate) fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ENODEV => "ENODEV",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOSYS => "ENOSYS",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::EBUSY => "EBUSY",
        libc::E2BIG => "E2BIG",
        libc::ENOMEM => "ENOMEM",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

impl fmt::Display for PerfTimeScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "time_mult={} time_shift={}", self.time_mult, self.time_shift)?;
        if let Some(k) = self.khz() {
            write!(f, " ({k} kHz)")?;
        }
        Ok(())
    }
}
