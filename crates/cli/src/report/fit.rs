//! Text reports that fit a terminal and a ticket: every line of a text report
//! at most [`REPORT_COLUMNS`] columns.
//!
//! [`FitWriter`] sits between a text renderer and its output and wraps each
//! longer line at word boundaries (the `textwrap` crate) with a hanging
//! indent chosen from the line's own layout ([`hanging_indent`]): a finding
//! after a label column continues under the finding, a `Word: text` line
//! under its text, a table's last column under that column. Every text
//! renderer writes through one, so lines added later fit without more code.
//! [`wrap`] wraps one paragraph under an indent (a note, a kernel message),
//! for text a renderer places itself.
//! [`cut`] shortens one untrusted value (a CPU model name) with an ellipsis,
//! for text forms only: JSON always carries the whole value.
//!
//! Widths are counted in terminal columns (`unicode-width`): one per
//! character for the text reports print, never bytes.

use std::borrow::Cow;
use std::io::{self, Write};
use textwrap::core::display_width;

/// The widest line a text report prints.
pub const REPORT_COLUMNS: usize = 100;

/// The column a wrapped line's continuation starts at, for `line` that does
/// not fit in `width` columns:
///
/// - after a label column: the start of the last field (text after two or
///   more spaces) that begins before the break, e.g. under `pass: ...` in
///   `  PostgreSQL's rule        pass: ...`, or under a table's note column;
/// - else after a short `Word:` prefix (`Verdict: `, `warning: `);
/// - else the line's own indent plus two.
///
/// A field starting past two thirds of the width would leave too little room:
/// the previous one is taken instead.
pub fn hanging_indent(line: &str, width: usize) -> usize {
    let lead = line.len() - line.trim_start_matches(' ').len();
    let fallback = (lead + 2).min(width / 3);
    let limit = width * 2 / 3;
    let chars: Vec<char> = line.chars().collect();
    let mut best = None;
    let mut col = 0;
    let mut i = lead;
    while i < chars.len() && col < width {
        if chars[i] == ' ' {
            let start = i;
            while i < chars.len() && chars[i] == ' ' {
                i += 1;
            }
            let run = i - start;
            let field = display_width(&chars[..i].iter().collect::<String>());
            if run >= 2 && i < chars.len() && field < width && field <= limit {
                best = Some(field);
            }
            col = field;
        } else {
            col += display_width(chars[i].encode_utf8(&mut [0; 4]));
            i += 1;
        }
    }
    if let Some(b) = best {
        return b;
    }
    // `Word: text` (or `Two words: text`), the prefix short.
    if let Some(colon) = line[lead..].find(": ") {
        // In columns, not bytes: `что делать: ` is 12 columns, 21 bytes.
        let prefix = &line[lead..lead + colon];
        let width = display_width(prefix);
        if width <= 24 && prefix.split(' ').count() <= 2 {
            return lead + width + 2;
        }
    }
    fallback
}

/// `line` (no newline) as lines of at most `width` columns, wrapped at word
/// boundaries with the continuation under [`hanging_indent`]; a word longer
/// than a line is broken. Unchanged (one borrowed line) when it fits.
pub fn fit_line(line: &str, width: usize) -> Vec<Cow<'_, str>> {
    if display_width(line) <= width {
        return vec![Cow::Borrowed(line)];
    }
    let indent = " ".repeat(hanging_indent(line, width));
    let options = textwrap::Options::new(width)
        .subsequent_indent(&indent)
        .break_words(true)
        // `row-heavy` and `2026-04` stay whole.
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::wrap(line, options)
        .into_iter()
        .map(|l| Cow::Owned(l.trim_end().to_string()))
        .collect()
}

/// `text` as lines of at most `width` columns, each starting with `indent`,
/// wrapped at spaces (runs of spaces inside a line are kept: they align
/// columns); a word longer than a line is broken. No line for text that is
/// only whitespace.
pub fn wrap(text: &str, indent: &str, width: usize) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    let options = textwrap::Options::new(width)
        .initial_indent(indent)
        .subsequent_indent(indent)
        .break_words(true)
        .word_splitter(textwrap::WordSplitter::NoHyphenation);
    textwrap::wrap(text.trim_start(), options)
        .into_iter()
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// `s` cut to at most `max` columns, the last one an ellipsis, when it is
/// longer. For untrusted values in text reports only (a CPU model name).
pub fn cut(s: &str, max: usize) -> Cow<'_, str> {
    if display_width(s) <= max {
        return Cow::Borrowed(s);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = display_width(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    Cow::Owned(out)
}

/// A writer that passes whole lines on, each fitted to [`REPORT_COLUMNS`]
/// (or the width given) by [`fit_line`]. A last line without a newline is
/// passed on by [`flush`](Write::flush), or when the writer is dropped
/// (where an error cannot be returned). Bytes that are not UTF-8 pass
/// unchanged.
pub struct FitWriter<W: Write> {
    inner: W,
    width: usize,
    line: Vec<u8>,
}

impl<W: Write> FitWriter<W> {
    /// Fits to [`REPORT_COLUMNS`].
    pub fn new(inner: W) -> Self {
        Self::with_width(inner, REPORT_COLUMNS)
    }

    /// Fits to `width` columns (at least 20).
    pub fn with_width(inner: W, width: usize) -> Self {
        FitWriter {
            inner,
            width: width.max(20),
            line: Vec::new(),
        }
    }

    fn emit(&mut self, newline: bool) -> io::Result<()> {
        let line = std::mem::take(&mut self.line);
        match std::str::from_utf8(&line) {
            Ok(text) => {
                let parts = fit_line(text, self.width);
                let last = parts.len() - 1;
                for (i, part) in parts.iter().enumerate() {
                    self.inner.write_all(part.as_bytes())?;
                    if i < last || newline {
                        self.inner.write_all(b"\n")?;
                    }
                }
            }
            Err(_) => {
                self.inner.write_all(&line)?;
                if newline {
                    self.inner.write_all(b"\n")?;
                }
            }
        }
        Ok(())
    }
}

impl<W: Write> Drop for FitWriter<W> {
    fn drop(&mut self) {
        if !self.line.is_empty() {
            // Nowhere to report an error: `flush` is the way to see one.
            let _ = self.emit(false);
        }
    }
}

impl<W: Write> Write for FitWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut rest = buf;
        while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..nl]);
            self.emit(true)?;
            rest = &rest[nl + 1..];
        }
        self.line.extend_from_slice(rest);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.line.is_empty() {
            self.emit(false)?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cyrillic_label_hangs_under_its_text_by_columns() {
        let line = format!("что делать: {}", "слово ".repeat(30));
        let lines = fit_line(line.trim_end(), 60);
        assert!(lines.len() > 1);
        for l in &lines[1..] {
            assert_eq!(l.len() - l.trim_start().len(), 12, "{lines:#?}");
        }
    }

    fn widths(lines: &[Cow<'_, str>]) -> Vec<usize> {
        lines.iter().map(|l| display_width(l)).collect()
    }

    #[test]
    fn a_finding_continues_under_its_label_column() {
        let line = format!("  {:<24} pass: {}", "PostgreSQL's rule", "word ".repeat(30).trim_end());
        let lines = fit_line(&line, 60);
        assert!(lines.len() > 2, "{lines:?}");
        assert!(widths(&lines).iter().all(|&w| w <= 60), "{lines:?}");
        assert!(lines[0].starts_with("  PostgreSQL's rule        pass: word"));
        for l in &lines[1..] {
            assert!(
                l.starts_with(&" ".repeat(27)) && !l.starts_with(&" ".repeat(28)),
                "{l:?}"
            );
        }
        // Every word is kept, in order.
        let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(words.join(" "), line.split_whitespace().collect::<Vec<_>>().join(" "));
    }

    #[test]
    fn a_word_colon_line_hangs_after_the_colon_and_short_lines_stay() {
        let line = format!("Verdict: GOOD. {}", "cheap ".repeat(20).trim_end());
        let lines = fit_line(&line, 40);
        assert!(lines[1].starts_with("         cheap"), "{lines:?}");
        assert_eq!(fit_line("short  line", 40), vec![Cow::Borrowed("short  line")]);
        // A long word is broken, never left over the width.
        let long = "x".repeat(130);
        let lines = fit_line(&long, 50);
        assert!(widths(&lines).iter().all(|&w| w <= 50), "{lines:?}");
        assert_eq!(lines.concat().replace(' ', ""), long);
    }

    #[test]
    fn wrap_fits_and_keeps_every_word_after_the_indent() {
        let t = "a fairly long sentence that must be wrapped at the width given, and a \
                 veryveryveryveryveryveryverylongword too";
        let lines = wrap(t, "  ", 20);
        assert!(
            lines.iter().all(|l| display_width(l) <= 20 && l.starts_with("  ")),
            "{lines:?}"
        );
        assert_eq!(lines.concat().replace(' ', ""), t.replace(' ', ""));
        assert_eq!(wrap("two  spaces kept", "", 40), ["two  spaces kept"]);
        assert!(wrap(" ", "  ", 40).is_empty());
    }

    #[test]
    fn a_far_right_field_is_not_used_as_indent() {
        let line = format!("{}  {}", "a ".repeat(40), "b ".repeat(30));
        let indent = hanging_indent(&line, 100);
        assert!(indent <= 66, "{indent}");
    }

    #[test]
    fn columns_are_counted_in_characters_not_bytes() {
        let line = format!("  {:<10} {}", "µs", "é".repeat(95));
        assert_eq!(fit_line(&line, 200).len(), 1);
        let lines = fit_line(&line, 100);
        assert!(
            lines.len() == 2 && widths(&lines).iter().all(|&w| w <= 100),
            "{lines:?}"
        );
        assert_eq!(cut("AMD EPYC 7B13 64-Core Processor", 12), "AMD EPYC 7B…");
        assert_eq!(cut("µµµ", 3), "µµµ");
    }

    #[test]
    fn the_writer_fits_whole_lines_across_writes() {
        let mut w = FitWriter::with_width(Vec::new(), 30);
        write!(w, "  label     one two three four ").unwrap();
        writeln!(w, "five six seven").unwrap();
        write!(w, "tail without newline").unwrap();
        w.flush().unwrap();
        let mut dropped = Vec::new();
        let mut d = FitWriter::with_width(&mut dropped, 30);
        write!(d, "no newline").unwrap();
        drop(d);
        assert_eq!(dropped, b"no newline");
        let out = String::from_utf8(std::mem::take(&mut w.inner)).unwrap();
        assert_eq!(
            out,
            "  label     one two three four\n            five six seven\ntail without newline"
        );
    }
}
