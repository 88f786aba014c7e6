//! The kernel log, interpreted once for every command: what the kernel said
//! about the TSC and its clocksources, from this machine's `/dev/kmsg` or a
//! log a user saved or pasted.
//!
//! - [`paste`]: each line's paste prefix removed (dmesg, `dmesg -T`/`-x`/`-r`,
//!   `/dev/kmsg` records, journalctl, syslog, RFC 5424, indented or quoted
//!   pastes), keeping its time and level.
//! - [`kinds`]: the kinds of event and the values a message carries.
//! - [`formats`]: every TSC/clocksource message format the kernel printed
//!   since 3.x recognised, with its values (docs/dev/kernel-messages/FORMATS.md).
//! - [`summary`]: the events in order (multi-line events joined) and the
//!   summary `check`, `tsc` and `dmesg` report.
//! - [`meaning`]: what each event means on bare metal or in a guest.
//! - [`evidence`]: the lines that prove a hypervisor (or bare hardware).
//! - [`boots`]: a log of several boots cut at each boot.
//! - [`advice`]: what the log means for PostgreSQL, whether to act, what to
//!   do on the machine it describes, and the next command.
//!
//! Layer: below `linux` (whose `/dev/kmsg` reader and `tsc_messages` use it)
//! and `tsc`; it imports nothing else of the library. Input is untrusted:
//! nothing here panics on any bytes, work is bounded by [`MAX_LOG_BYTES`] and
//! [`MAX_LOG_LINES`] (linear in the text), and text is kept verbatim
//! (renderers escape it).

pub mod advice;
pub mod boots;
pub mod evidence;
pub mod formats;
pub mod kinds;
pub mod meaning;
pub mod paste;
pub mod summary;

pub use boots::summarise;
pub use formats::{Citation, Facts, Kind};
pub use meaning::{Machine, Severity};
pub use paste::{LogLine, LogTime};
pub use summary::{Cited, EarlierBoot, Event, Summary};

/// Upper bound on the text interpreted: 32 MiB, the largest kernel ring
/// (`CONFIG_LOG_BUF_SHIFT` = 25) and what the live `/dev/kmsg` reader reads
/// at most. Text beyond it is ignored (cut at a character boundary).
pub const MAX_LOG_BYTES: usize = 32 << 20;

/// Upper bound on the lines interpreted: one per 8 bytes of [`MAX_LOG_BYTES`],
/// so a log of empty lines is bounded too.
pub const MAX_LOG_LINES: usize = 4 << 20;

/// Upper bound on the events kept (a watchdog firing for months): later
/// events still update the summary, but are not listed.
pub const MAX_EVENTS: usize = 10_000;

/// `text` cut to [`MAX_LOG_BYTES`] at a character boundary.
pub fn bounded(text: &str) -> &str {
    if text.len() <= MAX_LOG_BYTES {
        return text;
    }
    let mut end = MAX_LOG_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Parses the kernel's `%lu.%03lu` MHz to kHz exactly: "2599.998" is
/// 2599998. Up to three decimals are accepted (fewer are zero-padded: "2600.5"
/// is 2600500), and one trailing `.` (kernels ≤3.4 end the line with one);
/// more decimals cannot be a whole number of kHz and are rejected.
pub fn parse_mhz_as_khz(text: &str) -> Option<u64> {
    let text = text.trim();
    let text = match text.strip_suffix('.') {
        Some(t) if t.contains('.') => t,
        _ => text,
    };
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 3 {
        return None;
    }
    // Up to 3 decimals of a MHz, padded with zeros: kHz.
    let frac_khz: u64 = format!("{frac:0<3}").parse().ok()?;
    whole.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(frac_khz)
}
