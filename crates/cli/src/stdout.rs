//! The writer every `clockscope` report goes through on its way to stdout.
//!
//! - A closed pipe (`clockscope | head -1`, `| true`) ends the output quietly:
//!   later writes are dropped, the command finishes and keeps the exit status
//!   its run earned (1 when it found a problem), as if the reader had read it
//!   all. Every other write error is returned (one line, exit 2).
//! - With [`ReportWriter::terminal_safe`], no control character but newline
//!   and tab reaches the output raw: each is written as `\xHH` (or `\u{HHHH}`)
//!   by [`clockscope_system::escape::escape_untrusted`]. Untrusted values are already
//!   escaped where a report renders them; this is the last line of defence for
//!   every report, the explain one included.
//! - [`crate::fd_at_start::stdout_was_closed`] tells a closed stdout (`>&-`),
//!   which Rust's runtime silently replaces with `/dev/null`, from a real one
//!   (`/dev/null` too).

use clockscope_system::escape::{escape_untrusted, escape_untrusted_bytes};
use std::io::{self, Write};

/// See the module documentation.
pub struct ReportWriter<W: Write> {
    inner: W,
    terminal_safe: bool,
    broken_pipe: bool,
    /// The start of a UTF-8 sequence split between two writes.
    pending: Vec<u8>,
}

impl<W: Write> ReportWriter<W> {
    /// Writes through unchanged (completion scripts, man pages: our own text).
    pub fn plain(inner: W) -> Self {
        ReportWriter {
            inner,
            terminal_safe: false,
            broken_pipe: false,
            pending: Vec::new(),
        }
    }

    /// Escapes every control character but newline and tab.
    pub fn terminal_safe(inner: W) -> Self {
        ReportWriter {
            terminal_safe: true,
            ..Self::plain(inner)
        }
    }

    /// Whether the reader went away (a broken pipe was seen and swallowed).
    pub fn reader_gone(&self) -> bool {
        self.broken_pipe
    }

    fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.broken_pipe {
            return Ok(());
        }
        let written = self.inner.write_all(bytes);
        self.check(written)
    }

    /// A broken pipe swallowed and remembered; any other error named as stdout's.
    fn check(&mut self, result: io::Result<()>) -> io::Result<()> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.broken_pipe = true;
                Ok(())
            }
            Err(e) => Err(io::Error::new(e.kind(), format!("writing to stdout: {e}"))),
            ok => ok,
        }
    }

    /// `data` made terminal-safe, keeping an incomplete UTF-8 tail for the next write.
    fn escaped(&mut self, data: &[u8]) -> String {
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(data);
        let complete = match std::str::from_utf8(&bytes) {
            Ok(_) => bytes.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => bytes.len(),
        };
        self.pending = bytes.split_off(complete);
        let mut out = String::with_capacity(bytes.len());
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                out.push('\n');
            }
            match std::str::from_utf8(line) {
                Ok(s) => out.push_str(&escape_untrusted(s)),
                Err(_) => out.push_str(&escape_untrusted_bytes(line)),
            }
        }
        out
    }
}

impl<W: Write> Write for ReportWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let plain = !self.terminal_safe
            || (self.pending.is_empty()
                && buf
                    .iter()
                    .all(|&b| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t'));
        if plain {
            self.send(buf)?;
        } else {
            let text = self.escaped(buf);
            self.send(text.as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let tail = escape_untrusted_bytes(&std::mem::take(&mut self.pending));
            self.send(tail.as_bytes())?;
        }
        if self.broken_pipe {
            return Ok(());
        }
        let flushed = self.inner.flush();
        self.check(flushed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepts `limit` bytes, then fails with `kind`.
    struct Failing {
        got: Vec<u8>,
        limit: usize,
        kind: io::ErrorKind,
    }
    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.got.len() + buf.len() > self.limit {
                return Err(io::Error::from(self.kind));
            }
            self.got.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn controls_are_escaped_but_lines_and_utf8_kept() {
        let mut w = ReportWriter::terminal_safe(Vec::new());
        w.write_all("brand \x1b]0;x\x07 ok\n\tµs ".as_bytes()).unwrap();
        // A two-byte character split across writes stays one character.
        let mu = "µ".as_bytes();
        w.write_all(&mu[..1]).unwrap();
        w.write_all(&mu[1..]).unwrap();
        w.write_all(b"\xff\x9b\n").unwrap();
        w.flush().unwrap();
        let out = String::from_utf8(w.inner).unwrap();
        assert_eq!(out, "brand \\x1b]0;x\\x07 ok\n\tµs µ\\xff\\x9b\n");
        let mut plain = ReportWriter::plain(Vec::new());
        plain.write_all(b"\x1b").unwrap();
        assert_eq!(plain.inner, b"\x1b");
    }

    #[test]
    fn a_broken_pipe_is_swallowed_and_remembered_other_errors_are_not() {
        let mut w = ReportWriter::terminal_safe(Failing {
            got: Vec::new(),
            limit: 4,
            kind: io::ErrorKind::BrokenPipe,
        });
        w.write_all(b"abc").unwrap();
        assert!(!w.reader_gone());
        w.write_all(b"defgh").unwrap();
        w.write_all(b"more").unwrap();
        w.flush().unwrap();
        assert!(w.reader_gone());
        assert_eq!(w.inner.got, b"abc");
        let mut full = ReportWriter::plain(Failing {
            got: Vec::new(),
            limit: 0,
            kind: io::ErrorKind::StorageFull,
        });
        assert_eq!(full.write_all(b"x").unwrap_err().kind(), io::ErrorKind::StorageFull);
        assert!(!full.reader_gone());
    }
}
