//! JSON output: the serialised report, pretty-printed, one trailing newline.
//!
//! serde_json escapes the C0 control characters in strings; [`write()`]
//! also writes DEL, the C1 controls and the Unicode bidirectional controls
//! as `\uXXXX`, which JSON decodes to the very same string. So a value
//! copied from an untrusted source (a dump's brand string, a kernel log
//! line) stays exact for a program and harmless on a terminal (`cat
//! report.json`). Every JSON clockscope writes goes through [`write()`]
//! (crates/cli/tests/all/layers.rs fails on a `serde_json::to_writer` elsewhere).

use serde::Serialize;
use std::io::{self, Write};

/// Whether serde_json would leave `c` raw although a terminal interprets it.
fn needs_unicode_escape(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Writes any report as pretty JSON: the JSON renderer of every command
/// ([`crate::report::Renderer`] for any serialisable model; a report without
/// a stamp of its own is given as [`Stamped`](crate::report::stamp::Stamped)).
/// Outside its strings JSON text is ASCII without DEL, so every character
/// `needs_unicode_escape` finds in it lies in a string (a key or a value)
/// and is escaped there.
pub fn write<T: Serialize + ?Sized>(out: &mut dyn Write, report: &T) -> io::Result<()> {
    let json = serde_json::to_string_pretty(report).map_err(io::Error::other)?;
    let mut rest = json.as_str();
    while let Some(i) = rest.find(needs_unicode_escape) {
        out.write_all(&rest.as_bytes()[..i])?;
        let c = rest[i..].chars().next().expect("found at i");
        write!(out, "\\u{:04x}", c as u32)?;
        rest = &rest[i + c.len_utf8()..];
    }
    out.write_all(rest.as_bytes())?;
    writeln!(out)
}

/// A value's serde name, as its JSON gives it (`unix_socket`, `no_verdict`, ...).
pub fn serde_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_control_character_is_written_raw_and_the_value_round_trips() {
        let hostile = "brand\x1b]0;x\x07\u{7f}\u{9b}2J\u{202e}é\n";
        let mut out = Vec::new();
        write(&mut out, &serde_json::json!({ "brand": hostile, "list": [1, 2] })).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            !text.trim_end().chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(!text.contains('\u{202e}'), "{text:?}");
        assert!(text.contains("\\u001b]0;x\\u0007\\u007f\\u009b2J\\u202eé\\n"), "{text}");
        assert!(text.contains("\"list\": [\n"), "still pretty: {text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["brand"], hostile);
    }
}
