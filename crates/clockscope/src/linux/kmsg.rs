//! The kernel log: what the kernel said about the TSC and its clocksources
//! (the frequency it detected or refined, TSC instability, clocksource
//! switches), parsed from `/dev/kmsg` records or `dmesg` text.
//!
//! The kernel prints frequencies as `%lu.%03lu MHz` of an integer kHz, so
//! they are parsed back to kHz exactly, with no float: "2599.998 MHz" is
//! 2599998 kHz.
//!
//! Reading: with root `/`, `/dev/kmsg` is opened non-blocking and read one
//! record per `read` until `EAGAIN` (this needs root or
//! `kernel.dmesg_restrict=0`). Under any other root (tests), `<root>/dev/kmsg`
//! is read as a plain text file of log lines, each either a kmsg record
//! (`6,123,456789,-;tsc: ...`) or a `dmesg` line (`[    0.000058] tsc: ...`).

use serde::Serialize;
use std::io::{ErrorKind, Read};
use std::path::Path;

use super::Evidence;
use crate::escape::escape_untrusted;

/// What the kernel log says about the TSC and clocksources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KernelLog {
    /// Where the log was read from (`/dev/kmsg`, or a file under a test root).
    pub source: String,
    /// Log records (lines) read.
    pub records: u64,
    /// Sequence number of the first kmsg record; 0 means the log reaches back
    /// to boot, larger means early messages (the TSC detection) were
    /// overwritten. `None` for dmesg text without sequence numbers.
    pub first_sequence: Option<u64>,
    /// "tsc: Detected 2599.998 MHz processor": the kernel's cpu_khz.
    pub detected_processor_khz: Option<u64>,
    /// "tsc: Detected 2600.000 MHz TSC": the kernel's tsc_khz, printed only
    /// when it differs from cpu_khz.
    pub detected_tsc_khz: Option<u64>,
    /// "tsc: Refined TSC clocksource calibration: 2599.996 MHz": tsc_khz
    /// after the delayed recalibration (skipped with tsc_known_freq).
    pub refined_khz: Option<u64>,
    /// Reasons from `tsc: Marking TSC unstable due to <reason>`, in order.
    pub tsc_unstable_reasons: Vec<String>,
    /// Clocksources named in `Marking clocksource '<name>' as unstable`, in order.
    pub clocksources_marked_unstable: Vec<String>,
    /// Clocksources from `clocksource: Switched to clocksource <name>`, in order.
    pub clocksource_switches: Vec<String>,
    /// Cycles from `Measured <n> cycles TSC warp between CPUs` (tsc_sync).
    pub tsc_warp_cycles: Vec<i64>,
    /// "kvm-clock: using sched offset ...": sched_clock is kvm-clock's
    /// paravirtual one, so perf pages carry no TSC scale.
    pub kvm_sched_clock: bool,
    /// The text after "Performance Events: " (PMU driver, or "no PMU driver,
    /// software events only").
    pub performance_events: Option<String>,
    /// Every TSC- or clocksource-related message, in order, without prefixes.
    pub lines: Vec<String>,
    /// Why reading `/dev/kmsg` stopped before the end of the log (a record,
    /// byte or time bound); `None` when the whole log was read.
    pub stopped_early: Option<String>,
}

/// Which kernel-log line a TSC frequency came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum KernelKhzSource {
    /// "tsc: Refined TSC clocksource calibration: N MHz"
    Refined,
    /// "tsc: Detected N MHz TSC"
    DetectedTsc,
    /// "tsc: Detected N MHz processor"
    DetectedProcessor,
}

impl KernelKhzSource {
    /// A label for reports: which kernel message the number comes from.
    pub const fn label(self) -> &'static str {
        match self {
            KernelKhzSource::Refined => "kernel log, \"tsc: Refined TSC clocksource calibration\"",
            KernelKhzSource::DetectedTsc => "kernel log, \"tsc: Detected ... MHz TSC\"",
            KernelKhzSource::DetectedProcessor => "kernel log, \"tsc: Detected ... MHz processor\"",
        }
    }
}

impl KernelLog {
    /// Parses log text: kmsg records, dmesg lines or bare messages, one per line.
    pub fn parse(text: &str) -> KernelLog {
        let mut log = KernelLog::default();
        for line in text.lines() {
            log.add_line(line);
        }
        log
    }

    /// Adds one record or line (kmsg record continuation lines, which start
    /// with a space and hold `KEY=value`, are ignored).
    pub fn add_line(&mut self, line: &str) {
        let line = line.trim_end_matches(['\n', '\r']);
        if line.starts_with(' ') && !line.trim_start().starts_with('[') {
            return;
        }
        if line.trim().is_empty() {
            return;
        }
        self.records += 1;
        let (seq, msg) = split_record(line);
        if self.records == 1 {
            self.first_sequence = seq;
        }
        self.add_message(msg);
    }

    fn add_message(&mut self, msg: &str) {
        let mut relevant = false;
        if let Some(rest) = after(msg, "tsc: Detected ") {
            if let Some(v) = rest.strip_suffix(" MHz processor").and_then(parse_mhz_as_khz) {
                self.detected_processor_khz = Some(v);
                relevant = true;
            } else if let Some(v) = rest.strip_suffix(" MHz TSC").and_then(parse_mhz_as_khz) {
                self.detected_tsc_khz = Some(v);
                relevant = true;
            }
        }
        if let Some(rest) = after(msg, "Refined TSC clocksource calibration: ") {
            if let Some(v) = rest.strip_suffix(" MHz").and_then(parse_mhz_as_khz) {
                self.refined_khz = Some(v);
                relevant = true;
            }
        }
        if let Some(rest) = after(msg, "Marking TSC unstable due to ") {
            self.tsc_unstable_reasons.push(rest.trim().to_string());
            relevant = true;
        }
        if let Some(rest) = after(msg, "Marking clocksource '") {
            if let Some((name, _)) = rest.split_once('\'') {
                self.clocksources_marked_unstable.push(name.to_string());
                relevant = true;
            }
        }
        if let Some(rest) = after(msg, "Switched to clocksource ") {
            if let Some(name) = rest.split_whitespace().next() {
                self.clocksource_switches.push(name.to_string());
                relevant = true;
            }
        }
        if let Some(rest) = after(msg, "Measured ") {
            if let Some(n) = rest.strip_suffix(" cycles TSC warp between CPUs, turning off TSC clock.") {
                if let Ok(n) = n.trim().parse::<i64>() {
                    self.tsc_warp_cycles.push(n);
                }
                relevant = true;
            }
        }
        if msg.contains("kvm-clock: using sched offset") {
            self.kvm_sched_clock = true;
            relevant = true;
        }
        if let Some(rest) = after(msg, "Performance Events: ") {
            self.performance_events = Some(rest.trim().to_string());
            relevant = true;
        }
        let lower = msg.to_ascii_lowercase();
        if relevant
            || lower.contains("tsc")
            || lower.contains("clocksource")
            || lower.contains("sched_clock")
            || lower.contains("kvm-clock")
        {
            self.lines.push(msg.trim().to_string());
        }
    }

    /// The TSC frequency the kernel ended up with and the message it came
    /// from: refined, else "Detected ... TSC", else "Detected ... processor".
    pub fn kernel_tsc_khz(&self) -> Option<(u64, KernelKhzSource)> {
        self.refined_khz
            .map(|k| (k, KernelKhzSource::Refined))
            .or(self.detected_tsc_khz.map(|k| (k, KernelKhzSource::DetectedTsc)))
            .or(self
                .detected_processor_khz
                .map(|k| (k, KernelKhzSource::DetectedProcessor)))
    }

    /// Whether the log says the TSC was found unstable.
    pub fn tsc_marked_unstable(&self) -> bool {
        !self.tsc_unstable_reasons.is_empty()
            || self
                .clocksources_marked_unstable
                .iter()
                .any(|c| c == "tsc" || c == "tsc-early")
            || !self.tsc_warp_cycles.is_empty()
    }
}

/// The text after the first occurrence of `needle`.
fn after<'a>(hay: &'a str, needle: &str) -> Option<&'a str> {
    hay.find(needle).map(|i| &hay[i + needle.len()..])
}

/// Splits a log line into its kmsg sequence number (if it is a kmsg record)
/// and the message: `6,123,456789,-;msg`, `[    0.000058] msg`, `<6>msg`,
/// `Jan 16 17:13:19 host kernel: msg` (journal), or a bare message.
pub fn split_record(line: &str) -> (Option<u64>, &str) {
    if let Some((prefix, msg)) = line.split_once(';') {
        let fields: Vec<&str> = prefix.split(',').collect();
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if fields.len() >= 3 && numeric(fields[0]) && numeric(fields[1]) && numeric(fields[2]) {
            return (fields[1].parse().ok(), msg);
        }
    }
    let mut msg = line.trim_start();
    // journalctl/syslog: "Jan 16 17:13:19 host kernel: msg".
    if !msg.starts_with(['[', '<']) {
        if let Some(i) = msg.find(" kernel: ") {
            return (None, &msg[i + " kernel: ".len()..]);
        }
    }
    if let Some(rest) = msg.strip_prefix('<') {
        if let Some((prio, rest)) = rest.split_once('>') {
            if !prio.is_empty() && prio.bytes().all(|b| b.is_ascii_digit()) {
                msg = rest;
            }
        }
    }
    // "[    0.000058] " and an optional caller id "[    T0] " (not a
    // message's own "[Firmware Bug]: ").
    while let Some(rest) = msg.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inside, rest)) if is_log_prefix(inside) => msg = rest.trim_start(),
            _ => break,
        }
    }
    (None, msg)
}

/// Whether the text inside `[...]` is dmesg's timestamp (`    0.000058`) or
/// caller id (`    T0`, `  C1`).
fn is_log_prefix(inside: &str) -> bool {
    let t = inside.trim();
    let caller = t
        .strip_prefix(['T', 'C'])
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let timestamp = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    caller || timestamp
}

/// Parses the kernel's `%lu.%03lu` MHz to kHz exactly: "2599.998" is
/// 2599998. Up to three decimals are accepted (fewer are zero-padded: "2600.5"
/// is 2600500); more cannot be a whole number of kHz and are rejected.
pub fn parse_mhz_as_khz(text: &str) -> Option<u64> {
    let text = text.trim();
    let (whole, frac) = match text.split_once('.') {
        Some((w, f)) => (w, f),
        None => (text, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 3 {
        return None;
    }
    let mut frac_khz: u64 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    for _ in frac.len()..3 {
        frac_khz *= 10;
    }
    whole.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(frac_khz)
}

/// The reason given when `/dev/kmsg` refuses us (EPERM/EACCES).
pub const KMSG_NOT_READABLE: &str = "kernel log not readable (dmesg_restrict; run as root)";

/// Upper bound on records read from `/dev/kmsg`, so a log that is being
/// flooded while we read cannot keep us reading forever (the default 128 KiB
/// ring holds a few thousand records).
const MAX_KMSG_RECORDS: u64 = 1_000_000;

/// Upper bound on bytes read from `/dev/kmsg`: the largest ring
/// `CONFIG_LOG_BUF_SHIFT` allows (2^25).
const MAX_KMSG_BYTES: u64 = 32 << 20;

/// Upper bound on the time spent reading `/dev/kmsg`. Reading a full ring
/// takes a few milliseconds; a log flooded faster than we read ends here.
const KMSG_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

/// A kmsg record is at most 1 KiB of text plus its dictionary; the kernel
/// returns EINVAL for a smaller buffer, so 8 KiB leaves ample room.
const KMSG_BUFFER_BYTES: usize = 8192;

/// Reads the kernel log under `root` (see the module documentation for the
/// test convention). A test root's `dev/kmsg` must be a regular file of at
/// most [`crate::input::KERNEL_LOG_TEXT`] bytes.
pub fn read_kernel_log(root: &Path) -> Evidence<KernelLog> {
    if root == Path::new("/") {
        read_dev_kmsg(Path::new("/dev/kmsg"))
    } else {
        let path = root.join("dev/kmsg");
        super::read_text(&path, &crate::input::KERNEL_LOG_TEXT).map(|text| {
            let mut log = KernelLog::parse(&text);
            log.source = path.display().to_string();
            log
        })
    }
}

/// Reads the live kernel log: a character device, opened non-blocking, read
/// one record per `read` until `EAGAIN`, and at most [`MAX_KMSG_RECORDS`]
/// records, [`MAX_KMSG_BYTES`] bytes and [`KMSG_DEADLINE`].
fn read_dev_kmsg(path: &Path) -> Evidence<KernelLog> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let shown = || escape_untrusted(&path.to_string_lossy()).into_owned();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Evidence::Missing(format!("{}: not present", shown())),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) => {
            return Evidence::Unreadable(format!("{}: {KMSG_NOT_READABLE}", shown()))
        }
        Err(e) => return Evidence::Unreadable(format!("{}: {e}", shown())),
    };
    match file.metadata() {
        Ok(m) if m.file_type().is_char_device() => {}
        Ok(_) => {
            return Evidence::Unreadable(format!(
                "{}: not a character device: refused (the kernel log is one)",
                shown()
            ))
        }
        Err(e) => return Evidence::Unreadable(format!("{}: {e}", shown())),
    }
    let mut log = KernelLog {
        source: path.display().to_string(),
        ..KernelLog::default()
    };
    let started = std::time::Instant::now();
    let mut bytes_read: u64 = 0;
    let mut buf = vec![0u8; KMSG_BUFFER_BYTES];
    loop {
        if log.records >= MAX_KMSG_RECORDS {
            log.stopped_early = Some(format!("stopped after {MAX_KMSG_RECORDS} records"));
            break;
        }
        if bytes_read >= MAX_KMSG_BYTES {
            log.stopped_early = Some(format!("stopped after {} MiB", MAX_KMSG_BYTES >> 20));
            break;
        }
        if started.elapsed() >= KMSG_DEADLINE {
            log.stopped_early = Some(format!("stopped after {} s", KMSG_DEADLINE.as_secs()));
            break;
        }
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes_read += n as u64;
                let text = String::from_utf8_lossy(&buf[..n]);
                // One record per read: the first line; the rest is its dictionary.
                if let Some(first) = text.lines().next() {
                    log.add_line(first);
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            // EPIPE: the record we were about to read was overwritten; the
            // next read continues with the oldest remaining one.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::EACCES)) => {
                return Evidence::Unreadable(format!("{}: {KMSG_NOT_READABLE}", shown()))
            }
            Err(e) => return Evidence::Unreadable(format!("{}: {e}", shown())),
        }
    }
    Evidence::Found(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mhz_to_khz_is_exact() {
        assert_eq!(parse_mhz_as_khz("2599.998"), Some(2_599_998));
        assert_eq!(parse_mhz_as_khz("2599.996"), Some(2_599_996));
        assert_eq!(parse_mhz_as_khz("2600.000"), Some(2_600_000));
        assert_eq!(parse_mhz_as_khz("2600"), Some(2_600_000));
        assert_eq!(parse_mhz_as_khz("2600.5"), Some(2_600_500));
        assert_eq!(parse_mhz_as_khz("0.001"), Some(1));
        // Every kHz value prints and parses back exactly (no float rounding).
        for khz in (1_000_000u64..1_010_000).chain([2_449_228, 3_333_333, 9_999_999]) {
            assert_eq!(
                parse_mhz_as_khz(&format!("{}.{:03}", khz / 1000, khz % 1000)),
                Some(khz)
            );
        }
        for bad in ["", ".5", "2599.9985", "2,599.998", "abc", "-1.000", "1.2.3", "2599.99x"] {
            assert_eq!(parse_mhz_as_khz(bad), None, "{bad}");
        }
    }

    #[test]
    fn splits_record_forms() {
        assert_eq!(
            split_record("6,123,456789,-;tsc: Detected"),
            (Some(123), "tsc: Detected")
        );
        assert_eq!(split_record("6,0,58,-,caller=T0;tsc: x"), (Some(0), "tsc: x"));
        assert_eq!(split_record("[    0.000058] tsc: x"), (None, "tsc: x"));
        assert_eq!(split_record("[    0.000058][    T0] tsc: x"), (None, "tsc: x"));
        assert_eq!(split_record("<6>[    1.5] tsc: x"), (None, "tsc: x"));
        assert_eq!(split_record("tsc: x; y"), (None, "tsc: x; y"));
        assert_eq!(
            split_record("[    0.000000] [Firmware Bug]: TSC doesn't count with P0 frequency!"),
            (None, "[Firmware Bug]: TSC doesn't count with P0 frequency!")
        );
    }
}
