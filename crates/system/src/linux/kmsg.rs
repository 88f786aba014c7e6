//! The kernel log: what the kernel said about the TSC and its clocksources
//! (the frequency it detected or refined, TSC instability, clocksource
//! switches), read from `/dev/kmsg` (or a test root's text file) and
//! interpreted by [`crate::kernel_log`] (every paste style and message format).
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
use crate::kernel_log::{formats, paste, summary};

/// What the kernel log says about the TSC and clocksources.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
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
    /// Parses log text in any paste style ([`crate::kernel_log::paste`]).
    pub fn parse(text: &str) -> KernelLog {
        let mut b = LogBuilder::default();
        for line in paste::lines(text) {
            b.add(line);
        }
        b.finish()
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

/// Builds a [`KernelLog`] line by line: the values come from
/// [`crate::kernel_log`]'s summary, the kept lines are the TSC-related ones.
#[derive(Default)]
struct LogBuilder {
    log: KernelLog,
    summary: summary::Builder,
}

impl LogBuilder {
    fn add(&mut self, line: paste::LogLine) {
        self.log.records += 1;
        if self.log.records == 1 {
            self.log.first_sequence = line.sequence;
        }
        let msg = line.message.trim();
        let recognised = formats::recognise(msg).inspect(|r| self.legacy_lists(r)).is_some();
        self.log.kvm_sched_clock |= msg.contains("kvm-clock: using sched offset");
        if let Some(rest) = formats::after(msg, "Performance Events: ") {
            self.log.performance_events = Some(rest.trim().to_string());
        }
        let lower = msg.to_ascii_lowercase();
        if recognised
            || lower.contains("tsc")
            || lower.contains("clocksource")
            || lower.contains("sched_clock")
            || lower.contains("kvm-clock")
            || msg.contains("Performance Events: ")
        {
            self.log.lines.push(msg.to_string());
        }
        self.summary.add(line);
    }

    /// The lists as printed, every occurrence (the summary keeps reasons and
    /// condemned clocksources once each, and adds the reasons kernels before
    /// 4.11 did not print).
    fn legacy_lists(&mut self, r: &formats::Recognised) {
        use formats::{Kind, Role};
        let (f, log) = (&r.facts, &mut self.log);
        match r.kind {
            Kind::TscMarkedUnstable => log.tsc_unstable_reasons.extend(f.reason.clone()),
            Kind::WatchdogMarkedUnstable | Kind::WatchdogReadbackUnstable if r.role != Role::Detail => {
                log.clocksources_marked_unstable.extend(f.clocksource.clone())
            }
            _ => {}
        }
    }

    fn finish(self) -> KernelLog {
        let s = self.summary.finish(None);
        KernelLog {
            detected_processor_khz: s.detected_processor_khz,
            detected_tsc_khz: s.detected_tsc_khz,
            refined_khz: s.refined_khz,
            clocksource_switches: s.clocksource_switches,
            tsc_warp_cycles: s.warp_cycles,
            ..self.log
        }
    }
}

pub use crate::kernel_log::parse_mhz_as_khz;

/// The reason given when `/dev/kmsg` refuses us (EPERM/EACCES).
pub(crate) const KMSG_NOT_READABLE: &str = "kernel log not readable (dmesg_restrict; run as root)";

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

/// A kernel log's text as read, before interpretation: `/dev/kmsg` records
/// (each with its dictionary lines) or a saved log. The `dmesg` command
/// interprets it with [`crate::kernel_log::summarise`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelLogText {
    /// Where it was read from.
    pub source: String,
    /// The log's text, verbatim (untrusted: escaped where a report shows it).
    pub text: String,
    /// Records read (live log) or 0 (a file).
    pub records: u64,
    /// Why reading stopped before the end (a record, byte or time bound).
    pub stopped_early: Option<String>,
}

/// Reads the kernel log under `root` (see the module documentation for the
/// test convention). A test root's `dev/kmsg` must be a regular file of at
/// most [`crate::input::KERNEL_LOG_TEXT`] bytes.
pub fn read_kernel_log(root: &Path) -> Evidence<KernelLog> {
    read_kernel_log_text(root).map(|raw| {
        let mut log = KernelLog::parse(&raw.text);
        log.source = raw.source;
        log.stopped_early = raw.stopped_early;
        log
    })
}

/// The kernel log's text under `root`, uninterpreted.
pub fn read_kernel_log_text(root: &Path) -> Evidence<KernelLogText> {
    // This machine's `/` under any name (`/proc/self/root`, `/.`): its /dev/kmsg.
    if super::identity::is_this_root(root) {
        read_dev_kmsg(Path::new("/dev/kmsg"))
    } else {
        // One rule with a saved log (`clockscope dmesg FILE`): bytes that are
        // not UTF-8 are replaced, not a reason to refuse the whole log.
        let path = root.join("dev/kmsg");
        super::read_bytes(&path, &crate::input::KERNEL_LOG_TEXT).map(|bytes| KernelLogText {
            source: path.display().to_string(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
            ..KernelLogText::default()
        })
    }
}

/// Reads the live kernel log: a character device, opened non-blocking, read
/// one record per `read` until `EAGAIN`, and at most [`MAX_KMSG_RECORDS`]
/// records, [`MAX_KMSG_BYTES`] bytes and [`KMSG_DEADLINE`].
fn read_dev_kmsg(path: &Path) -> Evidence<KernelLogText> {
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
    let mut log = KernelLogText {
        source: path.display().to_string(),
        ..KernelLogText::default()
    };
    let started = std::time::Instant::now();
    let mut buf = vec![0u8; KMSG_BUFFER_BYTES];
    loop {
        if log.records >= MAX_KMSG_RECORDS {
            log.stopped_early = Some(format!("stopped after {MAX_KMSG_RECORDS} records"));
            break;
        }
        if log.text.len() as u64 >= MAX_KMSG_BYTES {
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
                // One record per read: its first line, then its dictionary.
                log.records += 1;
                log.text.push_str(&String::from_utf8_lossy(&buf[..n]));
                if !log.text.ends_with('\n') {
                    log.text.push('\n');
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
