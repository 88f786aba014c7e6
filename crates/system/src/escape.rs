//! Escaping of untrusted text before it reaches a terminal, a file or a
//! scrape: brand strings and lines from CPUID dumps, kernel log records,
//! sysfs values, file names and server messages.
//!
//! Every output format (text, JSON strings, Prometheus label values, SVG
//! text) passes such text through [`escape_untrusted`] once, where the report
//! is rendered, so a hostile dump cannot move the cursor, retitle the
//! terminal, ring the bell or hide text behind a bidirectional override.
//!
//! Written by hand: the crates that escape for a specific syntax (JSON, shell)
//! keep characters a terminal interprets, and `str::escape_debug` also
//! escapes quotes and every non-ASCII character a user may want to read.

use std::borrow::Cow;

/// Whether `c` must not reach an output raw: C0 controls (but tab), DEL, C1
/// controls, and the Unicode bidirectional overrides and isolates.
fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with each control character written as `\xHH` (ASCII and C1 controls)
/// or `\u{HHHH}` (bidirectional controls); borrowed when nothing changes.
/// Newlines are escaped too: one untrusted value never spans two lines.
pub fn escape_untrusted(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

/// Untrusted text as a message quotes it: cut to `max` characters (with
/// `...`), control characters escaped.
pub(crate) fn escape_cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        let cut: String = text.chars().take(max).collect();
        format!("{}...", escape_untrusted(&cut))
    } else {
        escape_untrusted(text).into_owned()
    }
}

/// [`escape_untrusted`] for bytes that may not be UTF-8: invalid sequences are
/// written as `\xHH` per byte.
pub fn escape_untrusted_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&escape_untrusted(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let s = "Intel(R) Xeon(R) Processor\tµs ok";
        assert!(matches!(escape_untrusted(s), Cow::Borrowed(x) if x == s));
    }

    #[test]
    fn terminal_controls_are_escaped() {
        assert_eq!(
            escape_untrusted("a\x1b]0;x\x07b\0\n\r\x7f"),
            "a\\x1b]0;x\\x07b\\x00\\x0a\\x0d\\x7f"
        );
        assert_eq!(escape_untrusted("\u{9b}31m"), "\\x9b31m");
        assert_eq!(escape_untrusted("abc\u{202e}fed"), "abc\\u{202e}fed");
    }

    #[test]
    fn invalid_utf8_is_shown_per_byte() {
        assert_eq!(escape_untrusted_bytes(b"ok\xff\x1b[2J"), "ok\\xff\\x1b[2J");
    }

    #[test]
    fn escaped_output_has_no_control_character() {
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        assert!(!escape_untrusted(&all).chars().any(needs_escape));
    }
}
