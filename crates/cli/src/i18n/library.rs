//! The sentences the library crates write in English (a clock's skip reason,
//! `cross-cpu`'s answers and verdicts, the TSC and NTP evidence, `explain`'s
//! warnings) and the bodies of one-line errors, said in the reader's
//! language when a text report or an error line prints them.
//!
//! # How
//!
//! The libraries stay free of the CLI's catalogs (the layers test forbids
//! the import) and keep writing English: it is what their `Display` and the
//! JSON carry, byte for byte. Each English sentence shape they write is
//! marked here with [`n_!`](crate::n_), as PostgreSQL marks its
//! `gettext_noop` strings: the msgid is the library's format string with
//! named placeholders, and the catalog test extracts, checks and translates
//! it like every `t!` message.
//!
//! At print time [`reason`] looks a sentence up *exactly*: a msgid applies
//! only when its literal parts match the sentence from end to end (the
//! placeholders take the rest), so the msgid filled with those parts is the
//! sentence itself, byte for byte; then the translation is filled with them.
//! A part that is itself a marked sentence (a verdict inside an answer, an
//! amount in ns) is translated the same way; a placeholder named `n` or
//! `…_n` takes only a number, printed with the locale's decimal separator,
//! and one named `x` or `…_x` only a hexadecimal `0x…` number, as written.
//! Of several msgids that match, the one with the most literal text wins. A
//! sentence no msgid matches stays English, so a library that rewords a
//! sentence never gets a wrong translation, only an untranslated one
//! (`tests/all/i18n_library.rs` runs the libraries' own sentences through
//! here and fails when one is not translated).
//!
//! Why not typed reasons: the text renderers read the report models that
//! JSON serialises (and that tests build by hand), whose reasons are the
//! English strings; a parallel typed field would be one more thing every
//! producer and every hand-built model must fill in, for every library. The
//! marked shapes keep the models, the JSON and the libraries as they are.

use super::{current, format, gettext, localize_number};
use clockscope_system::crosscpu::{CrossCpuReport, Verdict};
use std::fmt::Display;
use std::sync::OnceLock;

mod arm;
mod errors;
mod kernel_log;
mod sentences;
mod tsc;

/// Every module's marked msgids.
fn all_msgids() -> impl Iterator<Item = &'static &'static str> {
    sentences::MSGIDS
        .iter()
        .chain(errors::MSGIDS)
        .chain(kernel_log::MSGIDS)
        .chain(arm::MSGIDS)
        .chain(tsc::MSGIDS)
}

/// One part of a msgid: literal text or a named placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Hole(&'static str),
}

/// A marked msgid, split into its parts.
struct Shape {
    msgid: &'static str,
    pieces: Vec<Piece>,
    /// The length of its literal text (the more, the more specific).
    literal_len: usize,
}

fn split(msgid: &'static str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut rest = msgid;
    while let Some(i) = rest.find(['{', '}']) {
        lit.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            lit.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let Some(end) = tail.find('}').filter(|_| tail.starts_with('{')) {
            if !lit.is_empty() {
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            pieces.push(Piece::Hole(
                &msgid[msgid.len() - tail.len() + 1..msgid.len() - tail.len() + end],
            ));
            rest = &tail[end + 1..];
        } else {
            lit.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    pieces
}

fn shapes() -> &'static [Shape] {
    static SHAPES: OnceLock<Vec<Shape>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        all_msgids()
            .map(|&msgid| {
                let pieces = split(msgid);
                let literal_len = pieces
                    .iter()
                    .map(|p| match p {
                        Piece::Lit(l) => l.len(),
                        Piece::Hole(_) => 0,
                    })
                    .sum();
                Shape {
                    msgid,
                    pieces,
                    literal_len,
                }
            })
            .collect()
    })
}

/// Whether placeholder `name` takes only a number.
fn numeric(name: &str) -> bool {
    name == "n" || name.ends_with("_n")
}

/// Whether placeholder `name` takes only a hexadecimal number (`0x1f`): a
/// CPUID leaf, family or model, which then cannot swallow the clause after
/// it (`... leaf is {max_x}); ...`).
fn hexadecimal(name: &str) -> bool {
    name == "x" || name.ends_with("_x")
}

fn is_hex(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_number(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
    !int.is_empty()
        && !frac.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
}

/// Matches `pieces` against all of `s`, the placeholders taking as little
/// as lets the rest match; the parts go to `caps`.
fn matches<'s>(pieces: &[Piece], s: &'s str, caps: &mut Vec<(&'static str, &'s str)>) -> bool {
    match pieces.split_first() {
        None => s.is_empty(),
        Some((Piece::Lit(l), rest)) => s.strip_prefix(l.as_str()).is_some_and(|s| matches(rest, s, caps)),
        Some((Piece::Hole(name), rest)) => {
            let ok = |part: &str| (!numeric(name) || is_number(part)) && (!hexadecimal(name) || is_hex(part));
            match rest.first() {
                None => {
                    if !ok(s) {
                        return false;
                    }
                    caps.push((name, s));
                    true
                }
                Some(Piece::Lit(next)) => {
                    for (at, _) in s.match_indices(next.as_str()) {
                        let part = &s[..at];
                        if !ok(part) {
                            continue;
                        }
                        caps.push((name, part));
                        if matches(rest, &s[at..], caps) {
                            return true;
                        }
                        caps.pop();
                    }
                    false
                }
                // Two placeholders side by side cannot be told apart: the
                // tests keep such msgids out.
                Some(Piece::Hole(_)) => false,
            }
        }
    }
}

/// How deep a sentence inside a sentence is still translated.
const MAX_DEPTH: usize = 8;

/// The most specific msgids that match `s` (the most literal text), said
/// in the current language; of those, the one that leaves the least English
/// (`{what}: {why}` and `{first}; {second}` both match `a: b; c`). When the
/// most specific ones leave the sentence as it was (a joiner such as
/// `{packages}, {dies}, {cores}, {cpus}` that happens to fit a sentence
/// with three commas), the next most specific are tried: for the whole
/// sentence only (`depth` 0), so that text no msgid fits (a kernel's own
/// words, with many separators) costs no more than one lookup per part.
fn translate(s: &str, depth: usize) -> Option<String> {
    let mut found: Vec<(&Shape, Vec<(&'static str, &str)>)> = Vec::new();
    // Inside a sentence only the most specific msgids are wanted.
    let most_specific_only = depth > 0;
    for shape in shapes() {
        if most_specific_only && found.first().is_some_and(|(b, _)| b.literal_len > shape.literal_len) {
            continue;
        }
        let mut caps = Vec::new();
        if matches(&shape.pieces, s, &mut caps) {
            if most_specific_only && found.first().is_some_and(|(b, _)| b.literal_len < shape.literal_len) {
                found.clear();
            }
            found.push((shape, caps));
        }
    }
    // Most literal text first; the order of the msgids within a length.
    found.sort_by_key(|(shape, _)| std::cmp::Reverse(shape.literal_len));
    let said = |text: &str| text.chars().filter(|c| !c.is_ascii()).count();
    let mut fallback = None;
    let mut rest = found.as_slice();
    while let Some((first, _)) = rest.first() {
        let len = first.literal_len;
        let same = rest.iter().take_while(|(shape, _)| shape.literal_len == len).count();
        let (group, after) = rest.split_at(same);
        rest = after;
        let best = group
            .iter()
            .map(|(shape, caps)| fill(shape, caps.clone(), depth))
            .enumerate()
            .max_by_key(|(i, text)| (said(text), std::cmp::Reverse(*i)))
            .map(|(_, text)| text)?;
        if best != s || depth > 0 {
            return Some(best);
        }
        fallback.get_or_insert(best);
    }
    fallback
}

/// `shape`'s translation with its parts `caps`, each said in turn.
fn fill(shape: &Shape, caps: Vec<(&'static str, &str)>, depth: usize) -> String {
    let parts: Vec<(&str, String)> = caps
        .into_iter()
        .map(|(name, part)| {
            let said = if numeric(name) {
                localize_number(part.to_string())
            } else if hexadecimal(name) {
                part.to_string()
            } else if depth < MAX_DEPTH {
                translate(part, depth + 1).unwrap_or_else(|| part.to_string())
            } else {
                part.to_string()
            };
            (name, said)
        })
        .collect();
    let args: Vec<(&str, &dyn Display)> = parts.iter().map(|(n, v)| (*n, v as &dyn Display)).collect();
    format(gettext(shape.msgid), &args)
}

/// `english` (a sentence a library wrote, or an error message) in the
/// current language: itself in English, or when no marked msgid matches it.
pub fn reason(english: &str) -> String {
    if current().is_english() {
        return english.to_string();
    }
    translate(english, 0).unwrap_or_else(|| english.to_string())
}

/// An error line's body in the current language: each part of the chain
/// (`context: cause: cause`) said on its own, as [`reason`] says it.
pub fn error_body(chain: &[String]) -> String {
    chain.iter().map(|part| reason(part)).collect::<Vec<_>>().join(": ")
}

/// `cross-cpu`'s summary line ([`CrossCpuReport::summary`], which JSON
/// carries) in the current language, rebuilt from the report's counts.
pub fn cross_cpu_summary(r: &CrossCpuReport) -> String {
    if current().is_english() {
        return r.summary();
    }
    let results: Vec<Verdict> = r.results().map(|(_, c)| c.verdict).collect();
    let count = |v: Verdict| results.iter().filter(|&&x| x == v).count();
    let found: Vec<String> = [
        (Verdict::Warp, count(Verdict::Warp)),
        (Verdict::Offset, count(Verdict::Offset)),
        (Verdict::Inconsistent, count(Verdict::Inconsistent)),
        (Verdict::Inconclusive, count(Verdict::Inconclusive)),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(v, n)| match v {
        Verdict::Warp => crate::tn!("{n} with warps", "{n} with warps", n, n = n),
        Verdict::Offset => crate::tn!("{n} with a proven offset", "{n} with a proven offset", n, n = n),
        Verdict::Inconsistent => crate::tn!(
            "{n} with crossed offset bounds",
            "{n} with crossed offset bounds",
            n,
            n = n
        ),
        _ => crate::tn!("{n} inconclusive", "{n} inconclusive", n, n = n),
    })
    .collect();
    let pairs = crate::tn!(
        "{done} of {planned} CPU pair",
        "{done} of {planned} CPU pairs",
        r.pairs_planned,
        done = r.pairs.len(),
        planned = r.pairs_planned
    );
    let clock_results = crate::tn!(
        "{n} clock result",
        "{n} clock results",
        results.len(),
        n = results.len()
    );
    let tail = if found.is_empty() {
        crate::t!("all in sync: no warp, no offset beyond the measurement bounds").to_string()
    } else {
        found.join(", ")
    };
    let line = crate::t!(
        "{pairs}, {clock_results}: {found}",
        pairs = pairs,
        clock_results = clock_results,
        found = tail
    );
    if r.interrupted {
        crate::t!("{summary} (interrupted)", summary = line)
    } else {
        line
    }
}

/// Every marked msgid (the tests check their shapes).
pub fn msgids() -> impl Iterator<Item = &'static str> {
    all_msgids().copied()
}

/// Whether a marked msgid puts two placeholders side by side (which the
/// lookup cannot split).
pub fn has_adjacent_placeholders(msgid: &'static str) -> bool {
    split(msgid)
        .windows(2)
        .any(|w| matches!(w, [Piece::Hole(_), Piece::Hole(_)]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::{with_language, Lang};

    #[test]
    fn a_msgid_applies_only_when_it_is_the_sentence_end_to_end() {
        let pieces = split("{clock} is not available on this architecture ({arch})");
        let mut caps = Vec::new();
        assert!(matches(
            &pieces,
            "CNTVCT_EL0 is not available on this architecture (x86_64)",
            &mut caps
        ));
        assert_eq!(caps, [("clock", "CNTVCT_EL0"), ("arch", "x86_64")]);
        caps.clear();
        assert!(!matches(
            &pieces,
            "CNTVCT_EL0 is not available on this architecture",
            &mut caps
        ));
        let n = split("{n} ns");
        assert!(matches(&n, "+12.5 ns", &mut Vec::new()));
        assert!(!matches(&n, "about 12 ns", &mut Vec::new()));
    }

    #[test]
    fn english_stays_as_written_and_unknown_sentences_stay_english() {
        let s = "CNTVCT_EL0 is not available on this architecture (x86_64)";
        assert_eq!(crate::i18n::in_english(|| reason(s)), s);
        let ru = Lang::from_code("ru").unwrap();
        assert_eq!(
            with_language(ru, || reason("a sentence nobody marked")),
            "a sentence nobody marked"
        );
        assert_eq!(
            with_language(ru, || reason(s)),
            "CNTVCT_EL0 недоступен на этой архитектуре (x86_64)"
        );
    }
}
