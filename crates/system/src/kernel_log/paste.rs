//! The log prefixes people paste, removed: each line of a saved or pasted
//! kernel log becomes its message, the time it was printed (monotonic and/or
//! wall clock, as printed) and its level, when the paste style shows them.
//!
//! Styles (FORMATS.md part B): `dmesg` with or without `[ seconds]` and a
//! caller id, `dmesg -T`, `dmesg --time-format iso`, `dmesg -x`, `dmesg -r`
//! (`<6>`), `/dev/kmsg` records (`6,123,456,-;msg`, their ` KEY=value`
//! dictionary lines skipped, `\xNN` escapes decoded), `journalctl -k` (short,
//! precise, iso, monotonic), syslog / kern.log, `kern.info kernel:`, RFC 5424,
//! lines indented or `>`-quoted by a paste, CRLF. A line whose syslog tag is
//! not `kernel` (`systemd[1]:`) is not a kernel line. Hand-written: no crate
//! knows these formats, and each is a few string tests.

use serde::Serialize;

/// When a line was printed, as far as its paste style tells.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct LogTime {
    /// Microseconds since boot: the kernel's `[seconds]` or a kmsg record's usec.
    pub monotonic_us: Option<u64>,
    /// A wall-clock stamp verbatim (`Nov 24 20:00:01`, `[Tue Nov 24 20:00:01 2026]`,
    /// an ISO 8601 time); untrusted text.
    pub wall: Option<String>,
}

impl LogTime {
    /// Whether the style showed no time at all.
    pub fn is_empty(&self) -> bool {
        self.monotonic_us.is_none() && self.wall.is_none()
    }
}

/// One kernel line of a log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct LogLine {
    /// When it was printed, as far as the paste shows.
    pub time: LogTime,
    /// The console level 0 (emerg) to 7 (debug), when the style shows it.
    pub level: Option<u8>,
    /// The kmsg sequence number, for `/dev/kmsg` records.
    pub sequence: Option<u64>,
    /// The message without any prefix (kmsg `\xNN` escapes decoded); untrusted.
    pub message: String,
    /// Whether the line was a `/dev/kmsg` record (its dictionary may follow).
    pub kmsg_record: bool,
    /// Its 1-based line number in the text read (0 when parsed alone).
    pub line: u64,
    /// The line as it stood in the text (paste prefixes and all), cut to
    /// [`MAX_CITED_BYTES`]: what a citation quotes. Untrusted.
    pub raw: String,
}

/// Upper bound on the text of a line kept for citations and messages: the
/// kernel prints at most 1 KiB per record (`LOG_LINE_MAX`), so a longer
/// "line" is not one message and is cut, marked with how much was dropped.
pub const MAX_CITED_BYTES: usize = 1024;

/// `text` cut to [`MAX_CITED_BYTES`] at a character boundary, with
/// ` [... N bytes cut]` when it was longer.
pub fn cut(text: &str) -> String {
    if text.len() <= MAX_CITED_BYTES {
        return text.to_string();
    }
    let mut end = MAX_CITED_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} [... {} bytes cut]", &text[..end], text.len() - end)
}

/// Level names of `dmesg -x` and syslog `kern.LEVEL`.
const LEVELS: [&str; 8] = ["emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"];

fn level_named(name: &str) -> Option<u8> {
    let name = match name {
        "warning" => "warn",
        "error" => "err",
        other => other,
    };
    LEVELS
        .iter()
        .position(|l| *l == name)
        .and_then(|i| u8::try_from(i).ok())
}

fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `line` is a kmsg dictionary continuation (` KEY=value`).
pub(crate) fn is_dictionary_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix(' ') else {
        return false;
    };
    rest.split_once('=').is_some_and(|(key, _)| {
        !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// Parses one line. `None`: blank, or not a kernel line (another syslog tag).
pub(crate) fn parse_line(raw: &str) -> Option<LogLine> {
    let mut line = raw.trim_end_matches(['\n', '\r']);
    // Indentation and e-mail/markdown quoting.
    while let Some(r) = line.trim_start().strip_prefix('>') {
        line = r;
    }
    let line = grep_file_prefix(line.trim());
    if line.is_empty() {
        return None;
    }
    if let Some(rec) = kmsg_record(line) {
        return Some(rec);
    }
    let mut out = LogLine::default();
    let rest = rfc5424(line, &mut out)?;
    let rest = raw_priority(rest, &mut out);
    let rest = decode_prefix(rest, &mut out);
    let (rest, syslog_style) = wall_clock(rest, &mut out);
    let rest = kernel_stamps(rest, &mut out);
    let rest = host_and_tag(rest, syslog_style, &mut out)?;
    let rest = kernel_stamps(rest, &mut out);
    out.message = rest.to_string();
    (!out.message.is_empty()).then_some(out)
}

/// `grep PATTERN /var/log/kern.log /var/log/kern.log.1` names the file
/// before each line (`/var/log/kern.log:Feb  2 17:33:32 host kernel: ...`):
/// removed when the first word ends in `:` and is a path (starts with `/`) or
/// a log file name (`kern.log.1:`). Words such as `x86/fpu:` are kept.
fn grep_file_prefix(line: &str) -> &str {
    let Some((word, rest)) = line.split_once(':') else {
        return line;
    };
    let path_like = !word.contains(char::is_whitespace)
        && (word.starts_with('/') || word.contains(".log") || word.starts_with("messages") || word == "syslog");
    if path_like && !rest.is_empty() {
        rest.trim_start()
    } else {
        line
    }
}

/// `prio,seq,usec,flags[,caller=..];message`.
fn kmsg_record(line: &str) -> Option<LogLine> {
    let (prefix, msg) = line.split_once(';')?;
    let mut fields = prefix.split(',');
    let (prio, seq, usec) = (fields.next()?, fields.next()?, fields.next()?);
    if !(digits(prio) && digits(seq) && digits(usec)) {
        return None;
    }
    Some(LogLine {
        time: LogTime {
            monotonic_us: usec.parse().ok(),
            wall: None,
        },
        level: prio.parse::<u32>().ok().and_then(|p| u8::try_from(p & 7).ok()),
        sequence: seq.parse().ok(),
        message: decode_kmsg_escapes(msg),
        kmsg_record: true,
        ..LogLine::default()
    })
}

/// `/dev/kmsg` writes non-printable bytes as `\xNN`; decoded back (invalid
/// UTF-8 replaced), everything else kept.
pub(crate) fn decode_kmsg_escapes(msg: &str) -> String {
    if !msg.contains("\\x") {
        return msg.to_string();
    }
    let b = msg.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            let hex = b.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok());
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// RFC 5424: `<6>1 TIMESTAMP HOST APP PROCID MSGID SD MSG`; `None` when the
/// app is not `kernel`.
fn rfc5424<'a>(line: &'a str, out: &mut LogLine) -> Option<&'a str> {
    let Some((prio, rest)) = line.strip_prefix('<').and_then(|r| r.split_once('>')) else {
        return Some(line);
    };
    let Some(rest) = rest.strip_prefix("1 ") else {
        return Some(line);
    };
    if !digits(prio) {
        return Some(line);
    }
    let parts: Vec<&str> = rest.splitn(7, ' ').collect();
    let [ts, _host, app, _pid, _msgid, sd, msg @ ..] = parts.as_slice() else {
        return Some(line);
    };
    if *app != "kernel" {
        return None;
    }
    out.level = prio.parse::<u32>().ok().and_then(|p| u8::try_from(p & 7).ok());
    out.time.wall = (*ts != "-").then(|| ts.to_string());
    let msg = msg.first().copied().unwrap_or("");
    Some(if *sd == "-" {
        msg
    } else {
        msg.trim_start_matches(|c| c != ' ').trim_start()
    })
}

/// `dmesg -r`: `<6>`.
fn raw_priority<'a>(line: &'a str, out: &mut LogLine) -> &'a str {
    if let Some((prio, rest)) = line.strip_prefix('<').and_then(|r| r.split_once('>')) {
        if digits(prio) && prio.len() <= 3 {
            out.level = prio.parse::<u32>().ok().and_then(|p| u8::try_from(p & 7).ok());
            return rest.trim_start();
        }
    }
    line
}

/// `dmesg -x`: `kern  :info  : `.
fn decode_prefix<'a>(line: &'a str, out: &mut LogLine) -> &'a str {
    let Some((facility, rest)) = line.split_once(':') else {
        return line;
    };
    let facility = facility.trim_end();
    let known = [
        "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp",
    ];
    if !(known.contains(&facility) || facility.starts_with("local")) {
        return line;
    }
    let Some((level, rest)) = rest.split_once(':') else {
        return line;
    };
    let Some(l) = level_named(level.trim()) else {
        return line;
    };
    out.level = Some(l);
    rest.trim_start()
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// Length of a `HH:MM:SS` (with optional `.ffffff`) at the start of `s`.
fn clock_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let ok = b.len() >= 8 && b[2] == b':' && b[5] == b':' && [0, 1, 3, 4, 6, 7].iter().all(|&i| b[i].is_ascii_digit());
    if !ok {
        return None;
    }
    let mut n = 8;
    if b.get(8) == Some(&b'.') || b.get(8) == Some(&b',') {
        n += 1;
        while b.get(n).is_some_and(u8::is_ascii_digit) {
            n += 1;
        }
    }
    Some(n)
}

/// `Mon DD HH:MM:SS[.ffffff]` (syslog, journal): its length.
fn syslog_date_len(s: &str) -> Option<usize> {
    let month = s.get(..4)?;
    if !MONTHS.iter().any(|m| month == format!("{m} ")) {
        return None;
    }
    let day = s.get(4..7)?;
    if !(day.ends_with(' ') && day.trim().bytes().all(|b| b.is_ascii_digit()) && !day.trim().is_empty()) {
        return None;
    }
    clock_len(s.get(7..)?).map(|n| n + 7)
}

/// ISO 8601 `YYYY-MM-DD[T ]HH:MM:SS[.,]ffffff[zone]`: its length.
fn iso_len(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let date = b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && (b[10] == b'T' || b[10] == b' ')
        && [0, 1, 2, 3, 5, 6, 8, 9].iter().all(|&i| b[i].is_ascii_digit());
    if !date {
        return None;
    }
    let mut n = 11 + clock_len(s.get(11..)?)?;
    if b.get(n) == Some(&b'Z') {
        n += 1;
    } else if matches!(b.get(n), Some(b'+') | Some(b'-')) {
        n += 1;
        while b.get(n).is_some_and(|c| c.is_ascii_digit() || *c == b':') {
            n += 1;
        }
    }
    Some(n)
}

/// `Tue Nov 24 20:00:01 2026` (dmesg -T inside brackets, OpenWrt): its length.
fn ctime_len(s: &str) -> Option<usize> {
    let day = s.get(..4)?;
    if !DAYS.iter().any(|d| day == format!("{d} ")) {
        return None;
    }
    let n = 4 + syslog_date_len(s.get(4..)?)?;
    let year = s.get(n..n + 5)?;
    (year.starts_with(' ') && digits(&year[1..])).then_some(n + 5)
}

/// A leading wall-clock stamp, kept verbatim, and whether it is a syslog
/// style stamp (a host and a tag may follow) rather than dmesg's own (`-T`,
/// `--time-format iso` with its comma before the microseconds).
fn wall_clock<'a>(line: &'a str, out: &mut LogLine) -> (&'a str, bool) {
    if let Some(inner) = line.strip_prefix('[') {
        if let Some(n) = ctime_len(inner).filter(|&n| inner.as_bytes().get(n) == Some(&b']')) {
            out.time.wall = Some(inner[..n].to_string());
            return (inner[n + 1..].trim_start(), false);
        }
    }
    let n = ctime_len(line)
        .or_else(|| syslog_date_len(line))
        .or_else(|| iso_len(line));
    match n {
        Some(n) => {
            let stamp = &line[..n];
            out.time.wall.get_or_insert_with(|| stamp.to_string());
            let dmesg_iso = stamp.get(10..).is_some_and(|t| t.contains(','));
            (line[n..].trim_start(), !dmesg_iso)
        }
        None => (line, false),
    }
}

/// `[    0.000058]`, `[  0.000058 <  0.000002>]`, caller ids `[    T0]`, and a
/// `[kernel] :` template prefix: removed, the seconds kept.
fn kernel_stamps<'a>(mut line: &'a str, out: &mut LogLine) -> &'a str {
    if let Some(r) = line.strip_prefix("[kernel] :") {
        line = r.trim_start();
    }
    while let Some((inside, rest)) = line.strip_prefix('[').and_then(|r| r.split_once(']')) {
        let t = inside.trim();
        let t = t.split_once('<').map_or(t, |(a, _)| a.trim());
        if let Some(us) = seconds_to_us(t) {
            out.time.monotonic_us.get_or_insert(us);
        } else if !t.strip_prefix(['T', 'C']).is_some_and(digits) {
            break;
        }
        line = rest.trim_start();
    }
    line
}

/// `12.345678` seconds to microseconds (digits beyond µs dropped).
fn seconds_to_us(t: &str) -> Option<u64> {
    let (s, f) = t.split_once('.')?;
    if !digits(s) || !(f.is_empty() || digits(f)) {
        return None;
    }
    // The fraction's first 6 digits, padded with zeros: microseconds.
    let frac = format!("{f:0<6.6}");
    s.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(frac.parse().ok()?)
}

/// Whether `t` looks like a syslog tag: `name:` or `name[pid]:`.
fn is_tag(t: &str) -> bool {
    let Some(t) = t.strip_suffix(':') else { return false };
    let name = match t.split_once('[') {
        Some((n, pid)) => match pid.strip_suffix(']') {
            Some(p) if digits(p) => n,
            _ => return false,
        },
        None => t,
    };
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./@".contains(&b))
}

/// `host kernel: `, `kernel: `, `host kern.info kernel: `, `kern.warn kernel: `:
/// removed (with the level). `None` for another tag after a syslog stamp and
/// a host; without a syslog stamp only `host kernel:` is taken as a prefix.
fn host_and_tag<'a>(line: &'a str, syslog_style: bool, out: &mut LogLine) -> Option<&'a str> {
    let mut rest = line;
    let mut host_seen = false;
    for _ in 0..3 {
        let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        if word == "kernel:" {
            return Some(tail.trim_start());
        }
        if let Some(level) = word.strip_prefix("kern.").and_then(level_named) {
            out.level = Some(level);
            rest = tail.trim_start();
            continue;
        }
        if host_seen || word.contains(':') || word.is_empty() {
            break;
        }
        // A host name, if the next word is a tag.
        let next = tail.split(' ').next().unwrap_or("");
        let kernel_next = next == "kernel:" || next.starts_with("kern.");
        if !(kernel_next || syslog_style && is_tag(next)) {
            break;
        }
        if !kernel_next {
            return None;
        }
        host_seen = true;
        rest = tail.trim_start();
    }
    Some(if host_seen { rest } else { line })
}

/// Every kernel line of `text`, in order, bounded by [`super::MAX_LOG_LINES`]
/// lines and [`super::MAX_LOG_BYTES`] bytes; a ` KEY=value` line right after a
/// kmsg record is its dictionary and skipped.
pub fn lines(text: &str) -> impl Iterator<Item = LogLine> + '_ {
    let text = super::bounded(text);
    let mut after_kmsg = false;
    text.lines()
        .take(super::MAX_LOG_LINES)
        .zip(1u64..)
        .filter_map(move |(raw, number)| {
            let raw = raw.trim_end_matches('\r');
            if after_kmsg && is_dictionary_line(raw) {
                return None;
            }
            let Some(mut line) = parse_line(raw) else {
                after_kmsg = false;
                return None;
            };
            after_kmsg = line.kmsg_record;
            line.line = number;
            line.raw = cut(raw);
            if line.message.len() > MAX_CITED_BYTES {
                line.message = cut(&line.message);
            }
            Some(line)
        })
}

#[cfg(test)]
mod tests;
