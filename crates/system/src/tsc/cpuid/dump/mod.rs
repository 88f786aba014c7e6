//! Parsers for recorded CPUID dumps, so `clockscope tsc --cpuid-dump FILE`
//! can analyse another machine.
//!
//! Two formats are read; the first leaf line decides which one a file is:
//!
//! - **`cpuid -r`** (Todd Allen's `cpuid` tool, `cpuid -r` / `cpuid -1 -r`):
//!   ```text
//!   CPU 0:
//!      0x00000015 0x00: eax=0x00000002 ebx=0x0000009e ecx=0x00000000 edx=0x00000000
//!   ```
//!   `CPU N:` (or `CPU:` with `-1`) starts a processor; only the first one is
//!   used. Every other non-blank line is an error.
//! - **InstLatX64 / AIDA64** (`*_CPUID.txt` of instlatx64.atw.hu):
//!   ```text
//!   ------[ Logical CPU #0 ]------
//!   CPUID 00000004: 1C004121-01C0003F-0000003F-00000000 [SL 00]
//!   CPUID 00000015: 00000002-00000114-00000000-00000000 [138.00x / 0]
//!   ```
//!   These files also carry free text (`------[ Versions ]------` sections,
//!   `CPU Type : ...`, `allcpu:` lines, cache summaries, `MSR ...` lines,
//!   APIC clock measurements), which is skipped. Processors are separated by
//!   `------[ ... ]------` group headers (`Logical CPU #N` or `CPUID Registers /
//!   Logical CPU #N`), by `CPU#NNN AffMask: ...` lines in older files, or by a
//!   second leaf-0 line; the first processor's leaves are used. A subleaf is
//!   given by a `[SL nn]` annotation; without one (older files), repeated lines
//!   of a leaf are subleaves 0, 1, 2, ... in order. Other bracketed
//!   annotations (`[GenuineIntel]`, `[x87]`, `[3300 / 4000 / 100]`) are ignored.
//!
//! In both formats, lines starting with `#` are comments (used for the source
//! notes of the recorded dumps in `tests/data/cpuid`). A line that looks like
//! a leaf line but does not parse, or a file with no leaf lines at all, is an
//! error naming the line number and its content.
//!
//! A UTF-8 byte order mark at the start of the file is skipped (editors on
//! Windows add one). A leaf and subleaf given twice for the first processor
//! with different registers is an error naming both lines: which one is the
//! CPU's cannot be known. Given twice with the same registers it is accepted
//! (a dump pasted twice, or concatenated, loses nothing and means one thing).
//!
//! Error messages quote the file's text through
//! [`crate::escape::escape_untrusted`] (a line holding `ESC ] 0 ;` cannot
//! retitle the terminal that shows the error), cut to 100 characters.

use super::RecordedCpuid;
use crate::escape::{escape_cut, escape_untrusted};
use std::collections::BTreeMap;

/// Which dump format a file was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    /// `cpuid -r` raw output.
    CpuidRaw,
    /// InstLatX64 / AIDA64 CPUID dump.
    Aida64,
}

impl DumpFormat {
    /// A short human name.
    pub fn name(self) -> &'static str {
        match self {
            DumpFormat::CpuidRaw => "cpuid -r",
            DumpFormat::Aida64 => "InstLatX64/AIDA64",
        }
    }
}

/// A parsed dump: the first processor's leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedDump {
    /// Which format the dump was in.
    pub format: DumpFormat,
    /// The first processor's leaves.
    pub leaves: RecordedCpuid,
}

/// Why a file is not a usable dump, with the offending line (1-based).
/// Displayed as `line N: reason: 'content'`, the content cut to 100
/// characters; the reason and content escaped (both may quote the file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {}{}", escape_untrusted(.reason), quoted_content(.content))]
pub struct DumpError {
    /// The offending line, 1-based.
    pub line: usize,
    /// That line, trimmed (escaped when displayed).
    pub content: String,
    /// Why it is not usable.
    pub reason: String,
}

/// `: 'content'` of a [`DumpError`], or nothing when it has none.
fn quoted_content(content: &str) -> String {
    if content.is_empty() {
        String::new()
    } else {
        format!(": '{}'", escape_cut(content, 100))
    }
}

/// One classified line.
enum Line {
    Blank,
    /// `CPU:` / `CPU N:` of `cpuid -r`.
    RawCpuHeader,
    /// A `cpuid -r` leaf line.
    RawLeaf {
        leaf: u32,
        subleaf: u32,
        regs: [u32; 4],
    },
    /// An AIDA64 leaf line; `subleaf` is `None` without `[SL nn]`.
    AidaLeaf {
        leaf: u32,
        subleaf: Option<u32>,
        regs: [u32; 4],
    },
    /// `------[ name ]------` or `CPU#NNN AffMask:` in AIDA64 files.
    AidaSeparator,
    /// Anything else.
    Other,
}

fn parse_hex(s: &str) -> Option<u32> {
    let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if s.is_empty() || s.len() > 8 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

/// `0x00000015 0x00: eax=0x... ebx=0x... ecx=0x... edx=0x...`
fn parse_raw_leaf(t: &str) -> Result<Line, String> {
    let (head, rest) = t
        .split_once(':')
        .ok_or_else(|| "malformed `cpuid -r` leaf line (no ':' after the leaf)".to_string())?;
    let mut head_words = head.split_whitespace();
    let leaf = head_words.next().and_then(parse_hex);
    let subleaf = head_words.next().and_then(parse_hex);
    let (leaf, subleaf) = match (leaf, subleaf, head_words.next()) {
        (Some(l), Some(s), None) => (l, s),
        _ => return Err("malformed `cpuid -r` leaf line (expected `0xLEAF 0xSUB:`)".to_string()),
    };
    let mut regs = [None; 4];
    for word in rest.split_whitespace() {
        let (name, value) = word.split_once('=').ok_or_else(|| {
            format!(
                "malformed `cpuid -r` leaf line ('{}' is not REG=0xVALUE)",
                escape_cut(word, 40)
            )
        })?;
        let idx = ["eax", "ebx", "ecx", "edx"]
            .iter()
            .position(|r| *r == name)
            .ok_or_else(|| {
                format!(
                    "malformed `cpuid -r` leaf line (unknown register '{}')",
                    escape_cut(name, 40)
                )
            })?;
        if !value.starts_with("0x") {
            return Err(format!(
                "malformed `cpuid -r` leaf line ('{}' is not a 0x hex value)",
                escape_cut(value, 40)
            ));
        }
        regs[idx] = Some(parse_hex(value).ok_or_else(|| {
            format!(
                "malformed `cpuid -r` leaf line ('{}' is not 32-bit hex)",
                escape_cut(value, 40)
            )
        })?);
    }
    match regs {
        [Some(a), Some(b), Some(c), Some(d)] => Ok(Line::RawLeaf {
            leaf,
            subleaf,
            regs: [a, b, c, d],
        }),
        _ => Err("malformed `cpuid -r` leaf line (needs eax, ebx, ecx and edx)".to_string()),
    }
}

/// `CPUID 00000004: 1C004121-01C0003F-0000003F-00000000 [SL 00] [x87]`,
/// given the text after `CPUID ` and knowing the leaf token is hex + ':'.
fn parse_aida_leaf(leaf: u32, rest: &str) -> Result<Line, String> {
    let rest = rest.trim_start();
    let (values, annotations) = rest.split_at(rest.find(char::is_whitespace).unwrap_or(rest.len()));
    let parts: Vec<&str> = values.split('-').collect();
    let regs: Vec<u32> = parts
        .iter()
        .filter(|p| p.len() == 8)
        .filter_map(|p| parse_hex(p))
        .collect();
    if parts.len() != 4 || regs.len() != 4 {
        return Err("malformed InstLatX64/AIDA64 leaf line (expected EAX-EBX-ECX-EDX, 8 hex digits each)".to_string());
    }
    let mut subleaf = None;
    if let Some(i) = annotations.find("[SL ") {
        let tail = &annotations[i + 4..];
        let end = tail
            .find(']')
            .ok_or_else(|| "unterminated [SL nn] annotation".to_string())?;
        subleaf = Some(parse_hex(tail[..end].trim()).ok_or_else(|| "bad subleaf in [SL nn] annotation".to_string())?);
    }
    Ok(Line::AidaLeaf {
        leaf,
        subleaf,
        regs: [regs[0], regs[1], regs[2], regs[3]],
    })
}

fn is_raw_cpu_header(t: &str) -> bool {
    let Some(body) = t.strip_prefix("CPU").and_then(|b| b.strip_suffix(':')) else {
        return false;
    };
    let body = body.trim();
    body.is_empty() || body.bytes().all(|b| b.is_ascii_digit())
}

fn classify(raw_line: &str) -> Result<Line, String> {
    let t = raw_line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(Line::Blank);
    }
    if t.starts_with("0x") || t.starts_with("0X") {
        return parse_raw_leaf(t);
    }
    if is_raw_cpu_header(t) {
        return Ok(Line::RawCpuHeader);
    }
    if let Some(rest) = t.strip_prefix("CPUID ") {
        // A leaf line when the next token is hex followed by ':'; otherwise
        // free text such as "CPUID Manufacturer: GenuineIntel".
        if let Some((token, tail)) = rest.split_once(':') {
            let token = token.trim();
            if !token.is_empty() && token.bytes().all(|b| b.is_ascii_hexdigit()) {
                let leaf = parse_hex(token).ok_or_else(|| "leaf number is longer than 32 bits".to_string())?;
                return parse_aida_leaf(leaf, tail);
            }
        }
        return Ok(Line::Other);
    }
    if (t.starts_with("------[") && t.ends_with("]------")) || (t.starts_with("CPU#") && t.contains("AffMask")) {
        return Ok(Line::AidaSeparator);
    }
    Ok(Line::Other)
}

/// Records `regs` for `key` given on line `n`; the same registers given again
/// are accepted, different ones are an error naming the first line.
fn insert_once(
    leaves: &mut RecordedCpuid,
    given_on: &mut BTreeMap<(u32, u32), usize>,
    key: (u32, u32),
    regs: [u32; 4],
    n: usize,
) -> Result<(), String> {
    let (leaf, subleaf) = key;
    match (leaves.get(leaf, subleaf), given_on.get(&key)) {
        (Some(old), Some(&first)) if old != regs => Err(format!(
            "leaf {leaf:#010x} subleaf {subleaf:#x} is given twice with different registers, on line {first} and \
             line {n}: which one is the CPU's cannot be known"
        )),
        (Some(_), Some(_)) => Ok(()),
        _ => {
            leaves.insert(leaf, subleaf, regs);
            given_on.insert(key, n);
            Ok(())
        }
    }
}

/// Parses a `cpuid -r` or InstLatX64/AIDA64 dump; the first processor's
/// leaves are returned. See the module documentation for the rules.
pub fn parse_dump(text: &str) -> Result<ParsedDump, DumpError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut parser = DumpParser::default();
    for (i, line) in text.lines().enumerate() {
        parser.line(i + 1, line)?;
    }
    parser.finish(text)
}

/// The state of [`parse_dump`] between lines.
#[derive(Default)]
struct DumpParser {
    format: Option<DumpFormat>,
    leaves: RecordedCpuid,
    /// The first processor's leaves: the line each was first given on.
    given_on: BTreeMap<(u32, u32), usize>,
    first_other: Option<(usize, String)>,
    first_leaf_line: Option<(usize, String)>,
    /// Whether the first processor's block has ended.
    past_first: bool,
    cpu_headers_seen: usize,
    /// AIDA64 without [SL nn]: next ordinal subleaf per leaf.
    ordinal: BTreeMap<u32, u32>,
}

/// The error of line `n`, quoting it.
fn line_error(n: usize, line: &str, reason: String) -> DumpError {
    DumpError {
        line: n,
        content: line.trim().to_string(),
        reason,
    }
}

impl DumpParser {
    /// Takes line `n` (1-based).
    fn line(&mut self, n: usize, line: &str) -> Result<(), DumpError> {
        let class = classify(line).map_err(|reason| line_error(n, line, reason))?;
        let line_format = match class {
            Line::RawCpuHeader | Line::RawLeaf { .. } => Some(DumpFormat::CpuidRaw),
            Line::AidaLeaf { .. } => Some(DumpFormat::Aida64),
            _ => None,
        };
        if let (Some(lf), Some(f)) = (line_format, self.format) {
            if lf != f && matches!(class, Line::RawLeaf { .. } | Line::AidaLeaf { .. }) {
                return Err(line_error(
                    n,
                    line,
                    format!("a {} line in a {} dump", lf.name(), f.name()),
                ));
            }
        }
        match class {
            Line::Blank => {}
            Line::Other => {
                if self.format == Some(DumpFormat::CpuidRaw) {
                    return Err(line_error(n, line, "not a `cpuid -r` line".to_string()));
                }
                self.first_other.get_or_insert_with(|| (n, line.trim().to_string()));
            }
            Line::RawCpuHeader => {
                // "CPU 0:" before any leaf, a second one ends the first CPU.
                self.cpu_headers_seen += 1;
                if self.cpu_headers_seen > 1 {
                    self.past_first = true;
                }
            }
            Line::AidaSeparator => {
                if !self.leaves.is_empty() {
                    self.past_first = true;
                }
            }
            Line::RawLeaf { leaf, subleaf, regs } => self.raw_leaf(n, line, (leaf, subleaf), regs)?,
            Line::AidaLeaf { leaf, subleaf, regs } => self.aida_leaf(n, line, leaf, subleaf, regs)?,
        }
        Ok(())
    }

    /// A `cpuid -r` leaf line: the text before it must all have been blank.
    fn raw_leaf(&mut self, n: usize, line: &str, key: (u32, u32), regs: [u32; 4]) -> Result<(), DumpError> {
        if self.format.is_none() {
            if let Some((on, content)) = self.first_other.take() {
                return Err(line_error(on, &content, "not a `cpuid -r` line".to_string()));
            }
            self.format = Some(DumpFormat::CpuidRaw);
        }
        self.first_leaf_line.get_or_insert_with(|| (n, line.trim().to_string()));
        if !self.past_first {
            insert_once(&mut self.leaves, &mut self.given_on, key, regs, n)
                .map_err(|reason| line_error(n, line, reason))?;
        }
        Ok(())
    }

    /// An InstLatX64/AIDA64 leaf line; a second leaf 0 starts the next
    /// processor, and a leaf without `[SL nn]` takes the next ordinal subleaf.
    fn aida_leaf(
        &mut self,
        n: usize,
        line: &str,
        leaf: u32,
        subleaf: Option<u32>,
        regs: [u32; 4],
    ) -> Result<(), DumpError> {
        self.format.get_or_insert(DumpFormat::Aida64);
        self.first_leaf_line.get_or_insert_with(|| (n, line.trim().to_string()));
        if leaf == 0 && subleaf.unwrap_or(0) == 0 && self.leaves.get(0, 0).is_some() {
            // A second leaf-0 line: the next processor starts here.
            self.past_first = true;
        }
        if !self.past_first {
            let sub = subleaf.unwrap_or_else(|| {
                let next = self.ordinal.entry(leaf).or_insert(0);
                *next += 1;
                *next - 1
            });
            insert_once(&mut self.leaves, &mut self.given_on, (leaf, sub), regs, n)
                .map_err(|reason| line_error(n, line, reason))?;
        }
        Ok(())
    }

    /// The dump, or why the whole `text` is not one.
    fn finish(self, text: &str) -> Result<ParsedDump, DumpError> {
        let Some(format) = self.format else {
            return Err(match self.first_other {
                Some((n, content)) => line_error(
                    n,
                    &content,
                    "not a CPUID dump (expected `cpuid -r` lines like `0x00000000 0x00: eax=0x... ebx=0x... \
                     ecx=0x... edx=0x...` or InstLatX64 lines like `CPUID 00000000: EAX-EBX-ECX-EDX`)"
                        .to_string(),
                ),
                None => DumpError {
                    line: text.lines().count().max(1),
                    content: String::new(),
                    reason: if text.trim().is_empty() {
                        "the file is empty: not a CPUID dump".to_string()
                    } else {
                        "no CPUID leaves in the file".to_string()
                    },
                },
            });
        };
        if self.leaves.get(0, 0).is_none() {
            let (n, content) = self.first_leaf_line.unwrap_or((1, String::new()));
            let reason = "the first processor has no leaf 0x00000000 (vendor and highest leaf)";
            return Err(line_error(n, &content, reason.to_string()));
        }
        Ok(ParsedDump {
            format,
            leaves: self.leaves,
        })
    }
}

#[cfg(test)]
mod tests;
