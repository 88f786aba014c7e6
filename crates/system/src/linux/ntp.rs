//! The kernel's NTP state, read with `adjtimex(2)` in read-only mode (modes
//! 0: nothing is ever set): whether the clock is synchronised, the error
//! bounds NTP maintains, and the frequency correction the kernel applies.
//!
//! That correction is independent evidence about the TSC: with clocksource
//! `tsc`, CLOCK_MONOTONIC_RAW is the TSC scaled by the kernel's mult/shift,
//! and NTP (when synchronised to a real time source) steers
//! CLOCK_REALTIME/MONOTONIC by `freq` ppm so they keep true time. So `freq`
//! says how far the kernel's idea of the TSC rate is from true time as NTP
//! sees it. Unsynchronised, it says nothing.
//!
//! The read goes through [`NtpSource`] so tests script it; the only unsafe
//! code is the `adjtimex` call in [`SystemNtp`], compiled on Linux only.

use serde::Serialize;

/// `STA_UNSYNC` (include/uapi/linux/timex.h): the clock is not synchronised.
pub const STA_UNSYNC: i32 = 0x0040;
/// `STA_NANO`: `offset` is in ns rather than µs (does not affect `freq`).
pub const STA_NANO: i32 = 0x2000;
/// `TIME_ERROR`: adjtimex's return value when the clock is not synchronised.
pub const TIME_ERROR: i32 = 5;

/// The fields of `struct timex` clockscope reads, and adjtimex's return value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawTimex {
    /// adjtimex's return value: TIME_OK 0, TIME_INS 1, TIME_DEL 2, TIME_OOP 3,
    /// TIME_WAIT 4, TIME_ERROR 5.
    pub state: i32,
    /// `status` bits (STA_*).
    pub status: i32,
    /// Frequency offset, ppm with a 16-bit fraction (`freq / 65536` ppm).
    pub freq: i64,
    /// Maximum error, µs.
    pub maxerror: i64,
    /// Estimated error, µs.
    pub esterror: i64,
    /// Current time offset, µs (ns with STA_NANO).
    pub offset: i64,
}

/// Reads the kernel's NTP state. [`SystemNtp`] is the real one.
pub trait NtpSource {
    /// `adjtimex` with modes 0, or why it could not be read.
    fn read(&self) -> Result<RawTimex, String>;
}

/// The running kernel's `adjtimex` (read-only).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemNtp;

impl NtpSource for SystemNtp {
    #[cfg(target_os = "linux")]
    fn read(&self) -> Result<RawTimex, String> {
        // SAFETY: `timex` is a plain C struct for which all-zero bytes are a
        // valid value; modes 0 makes adjtimex only read the kernel's state
        // into it, and the pointer is valid for the duration of the call.
        let mut t: libc::timex = unsafe { std::mem::zeroed() };
        t.modes = 0;
        // SAFETY: see above; `t` is a live, exclusively borrowed timex.
        let state = unsafe { libc::adjtimex(&mut t) };
        if state < 0 {
            return Err(format!("adjtimex: {}", std::io::Error::last_os_error()));
        }
        Ok(RawTimex {
            state,
            status: t.status,
            freq: t.freq as i64,
            maxerror: t.maxerror as i64,
            esterror: t.esterror as i64,
            offset: t.offset as i64,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn read(&self) -> Result<RawTimex, String> {
        Err("adjtimex is Linux's: NTP state not read on this platform".to_string())
    }
}

/// A scripted NTP state, for tests.
#[derive(Clone, Debug)]
pub struct ScriptedNtp(pub Result<RawTimex, String>);

impl NtpSource for ScriptedNtp {
    fn read(&self) -> Result<RawTimex, String> {
        self.0.clone()
    }
}

/// The NTP state as clockscope reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct NtpState {
    /// STA_UNSYNC clear and adjtimex did not return TIME_ERROR.
    pub synchronised: bool,
    /// adjtimex's clock state: `ok`, `insert_leap`, `delete_leap`,
    /// `leap_in_progress`, `leap_done` or `error` (unsynchronised).
    pub time_state: &'static str,
    /// The raw `status` bits.
    pub status: i32,
    /// Estimated error, µs (meaningful only when synchronised).
    pub estimated_error_us: i64,
    /// Maximum error, µs (the kernel grows it by 500 ppm of elapsed time
    /// while nothing updates it; 16 s means "no bound").
    pub maximum_error_us: i64,
    /// The frequency correction the kernel applies to its clock, ppm
    /// (`freq / 65536`): positive speeds the clock up.
    pub frequency_ppm: f64,
    /// Current offset NTP is slewing away, µs.
    pub offset_us: f64,
    /// What the numbers mean here.
    pub meaning: String,
}

/// adjtimex's return value as a name.
fn time_state_name(state: i32) -> &'static str {
    match state {
        0 => "ok",
        1 => "insert_leap",
        2 => "delete_leap",
        3 => "leap_in_progress",
        4 => "leap_done",
        5 => "error",
        _ => "unknown",
    }
}

impl NtpState {
    /// Interprets a raw read (pure).
    pub fn from_raw(t: &RawTimex) -> NtpState {
        let synchronised = t.status & STA_UNSYNC == 0 && t.state != TIME_ERROR;
        let frequency_ppm = t.freq as f64 / 65536.0;
        let offset_us = if t.status & STA_NANO != 0 {
            t.offset as f64 / 1000.0
        } else {
            t.offset as f64
        };
        let meaning = if synchronised {
            let direction = if frequency_ppm >= 0.0 { "slow" } else { "fast" };
            format!(
                "NTP is synchronised (estimated error {} µs): the kernel corrects its clock by {frequency_ppm:+.3} ppm, \
                 so the clock it derives from its clocksource (the TSC when clocksource is tsc) runs {:.3} ppm {direction} \
                 against true time as NTP sees it",
                t.esterror,
                frequency_ppm.abs()
            )
        } else {
            format!(
                "NTP is not synchronised (STA_UNSYNC{}): the correction of {frequency_ppm:+.3} ppm is whatever was last set \
                 (0 if nothing ever set it), not evidence of the clock's true rate",
                if t.state == TIME_ERROR { ", TIME_ERROR" } else { "" }
            )
        };
        NtpState {
            synchronised,
            time_state: time_state_name(t.state),
            status: t.status,
            estimated_error_us: t.esterror,
            maximum_error_us: t.maxerror,
            frequency_ppm,
            offset_us,
            meaning,
        }
    }
}

/// Reads and interprets the NTP state from `source`.
pub fn read_ntp(source: &dyn NtpSource) -> Result<NtpState, String> {
    source.read().map(|t| NtpState::from_raw(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn this_kernel_answers_a_read_only_adjtimex() {
        // Modes 0 needs no privilege; any kernel answers it.
        let s = read_ntp(&SystemNtp).expect("adjtimex modes 0");
        assert_ne!(s.time_state, "unknown");
    }
}
