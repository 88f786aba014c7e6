//! `clockscope dmesg [FILE|-]`: explains a kernel log — this machine's
//! (`/dev/kmsg`), a saved file, or one pasted on stdin (`-`) — with the
//! interpretation `check` and `tsc` use ([`clockscope_system::kernel_log`]): the
//! TSC and clocksource events in order, what they add up to, what it means
//! for PostgreSQL and what to do.
//!
//! Bounded like every input: a file must be a regular file of at most
//! [`clockscope_system::input::KERNEL_LOG_TEXT`] (8 MiB; a FIFO, socket or device
//! is refused without being opened); stdin is read up to the same cap; the
//! interpretation reads at most [`clockscope_system::kernel_log::MAX_LOG_LINES`]
//! lines. Exit status (one meaning across commands): 0 nothing to act on,
//! 1 something the user should act on (the log ends on a clocksource that
//! costs a system call per read, or the kernel marked the TSC unstable and no
//! fast clocksource follows), 2 the log could not be read or holds no kernel
//! line at all.

use crate::args::{ReportFormat, VerboseArg};
use crate::commands::dmesg::model::{DmesgReport, SCHEMA_VERSION};
use crate::exit;
use crate::report::stamp::{ReportStamp, Stamped};
use crate::report::Renderer;
use clap::Args;
use clockscope_system::input::{InputError, KERNEL_LOG_TEXT};
use clockscope_system::kernel_log::{self, Machine};
use clockscope_system::linux::{self, LinuxEvidence};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone)]
pub struct DmesgArgs {
    /// A saved kernel log (dmesg, dmesg -T, journalctl -k, kern.log, /dev/kmsg records), or `-` for stdin;
    /// without it, this machine's log.
    #[arg(value_name = "FILE|-", value_hint = clap::ValueHint::FilePath)]
    pub file: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,

    #[command(flatten)]
    pub verbose: VerboseArg,

    #[command(flatten)]
    pub output: crate::args::OutputArg,

    /// Read DIR/sys, DIR/proc and DIR/dev/kmsg instead of this machine's (support bundles, tests).
    #[arg(long, value_name = "DIR", conflicts_with = "file")]
    pub root: Option<PathBuf>,
}

/// The log's text and where it came from: (source, text, stopped early, machine).
struct Gathered {
    source: String,
    text: String,
    stopped_early: Option<String>,
    machine: Option<Machine>,
}

/// Reads stdin up to the kernel log cap; more is an error, not a cut log.
fn read_stdin(input: &mut dyn Read) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    input
        .take(KERNEL_LOG_TEXT.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("stdin: {e}"))?;
    if bytes.len() as u64 > KERNEL_LOG_TEXT.max_bytes {
        anyhow::bail!(
            "stdin: larger than {} MiB: not a kernel log",
            KERNEL_LOG_TEXT.max_bytes >> 20
        );
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A saved log: a regular file through [`clockscope_system::input`]. Bytes that are
/// not UTF-8 (a paste through a Latin-1 terminal) are replaced, not refused.
fn read_file(path: &Path) -> anyhow::Result<String> {
    let bytes =
        clockscope_system::input::read_bytes(path, &KERNEL_LOG_TEXT).map_err(|e: InputError| anyhow::anyhow!("{e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// This machine's log (or a test root's `dev/kmsg`), judged with its cpuinfo.
fn read_live(root: &Path) -> anyhow::Result<Gathered> {
    let raw = match linux::read_kernel_log_text(root) {
        linux::Evidence::Found(raw) => raw,
        other => anyhow::bail!(
            "the kernel log: {} (give a saved log: clockscope dmesg FILE)",
            other.reason().unwrap_or("not readable")
        ),
    };
    Ok(Gathered {
        source: raw.source,
        text: raw.text,
        stopped_early: raw.stopped_early,
        machine: Some(Machine::of(&LinuxEvidence::read(root))),
    })
}

fn gather(args: &DmesgArgs) -> anyhow::Result<Gathered> {
    let saved = |source: String, text: String| Gathered {
        source,
        text,
        stopped_early: None,
        machine: None,
    };
    match &args.file {
        Some(p) if p.as_os_str() == "-" => Ok(saved("stdin".into(), read_stdin(&mut std::io::stdin().lock())?)),
        Some(p) => Ok(saved(p.to_string_lossy().into_owned(), read_file(p)?)),
        None => read_live(args.root.as_deref().unwrap_or(Path::new("/"))),
    }
}

/// Runs the command, writing its report to `out`; returns the exit code.
pub fn run(args: &DmesgArgs, out: &mut dyn Write) -> anyhow::Result<u8> {
    let g = gather(args)?;
    let summary = kernel_log::summarise(&g.text, g.machine);
    if summary.kernel_like_lines == 0 {
        anyhow::bail!("{}", nothing_read(&g.source, &g.text));
    }
    let report = DmesgReport {
        source: g.source,
        machine_from: if g.machine.is_some() { "this machine" } else { "the log" }.to_string(),
        stopped_early: g.stopped_early,
        summary,
        verbose: args.verbose.verbose,
    };
    let stamp = ReportStamp::now(SCHEMA_VERSION);
    renderer(args.format)(out, &stamp.on(&report))?;
    Ok(if report.summary.act { exit::PROBLEM } else { exit::OK })
}

/// What was read when no line of it was a kernel line: an empty stdin is not
/// a clean log. (The error line is escaped where it is printed.)
fn nothing_read(source: &str, text: &str) -> String {
    if text.trim().is_empty() {
        return format!(
            "{source}: no kernel log line ({} bytes read, all blank): nothing to explain",
            text.len()
        );
    }
    let lines = text.lines().count();
    let replaced = text.chars().filter(|&c| c == char::REPLACEMENT_CHARACTER).count();
    let binary = if replaced > 0 {
        format!(", {replaced} sequences not UTF-8 replaced")
    } else {
        String::new()
    };
    format!("{source}: no kernel log line in {lines} lines{binary}: not a kernel log (dmesg, journalctl -k, kern.log)")
}

/// The renderer of `format`.
pub fn renderer<'a>(format: ReportFormat) -> Renderer<Stamped<'a, DmesgReport>> {
    match format {
        ReportFormat::Text => crate::commands::dmesg::text::write,
        ReportFormat::Json => crate::report::json::write,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_is_read_up_to_the_cap_and_refused_beyond() {
        let ok = vec![b'a'; KERNEL_LOG_TEXT.max_bytes as usize];
        assert_eq!(read_stdin(&mut ok.as_slice()).unwrap().len(), ok.len());
        let big = vec![b'a'; KERNEL_LOG_TEXT.max_bytes as usize + 1];
        let e = read_stdin(&mut big.as_slice()).unwrap_err().to_string();
        assert_eq!(e, "stdin: larger than 8 MiB: not a kernel log");
    }

    #[test]
    fn nothing_read_says_what_was_read() {
        assert_eq!(
            nothing_read("stdin", ""),
            "stdin: no kernel log line (0 bytes read, all blank): nothing to explain"
        );
        let m = nothing_read("x.bin", "\u{fffd}\u{fffd}ab\nsystemd[1]: x\n");
        assert!(m.contains("in 2 lines, 2 sequences not UTF-8 replaced"), "{m}");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_replaced() {
        let text = read_stdin(&mut &b"tsc: Detected 2400.000 MHz processor \xff\n"[..]).unwrap();
        assert!(text.contains('\u{fffd}'), "{text}");
    }
}
