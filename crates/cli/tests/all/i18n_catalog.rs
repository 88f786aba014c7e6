//! The message catalogs kept whole: the template `locale/clockscope.pot` is
//! what the source's `t!`/`tn!` calls give (`CLOCKSCOPE_UPDATE_POT=1 cargo
//! test -p clockscope-cli --test all i18n_catalog::` rewrites it), and every
//! catalog of `i18n::LANGUAGES` translates every message, with the same
//! placeholders in the same order and every plural form.
//!
//! The extraction is a scan of the source text (as `xgettext --keyword=t
//! --keyword=tn:1,2` would do for C): the code is rustfmt-formatted and every
//! msgid is a string literal right after `t!(` or `tn!(`.

use clockscope_cli::i18n::po::{quote, Catalog};
use clockscope_cli::i18n::LANGUAGES;
use std::fs;
use std::path::{Path, PathBuf};

/// One message of the source.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Message {
    msgid: String,
    plural: Option<String>,
}

fn cli_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// A Rust string literal at the start of `s` (after whitespace): its value
/// and the rest of `s`.
fn literal(s: &str) -> Option<(String, &str)> {
    let s = s.trim_start();
    let body = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                '\'' => out.push('\''),
                '\n' => {
                    // A continuation: the next line's leading whitespace is skipped.
                    let rest = &body[i + 2..];
                    let skip = rest.len() - rest.trim_start().len();
                    for _ in 0..rest[..skip].chars().count() {
                        chars.next();
                    }
                }
                _ => return None,
            },
            c => out.push(c),
        }
    }
    None
}

/// Every message of the source, in order of first appearance, each once.
fn source_messages() -> Vec<Message> {
    let mut files = Vec::new();
    rust_files(&cli_dir().join("src"), &mut files);
    let mut found: Vec<Message> = Vec::new();
    for f in files {
        let text = fs::read_to_string(&f).unwrap();
        // Comments are not code (the module docs show the macros).
        let code: String = text
            .lines()
            .map(|l| if l.trim_start().starts_with("//") { "" } else { l })
            .collect::<Vec<_>>()
            .join("\n");
        for (macro_name, plural) in [("t!(", false), ("tn!(", true), ("n_!(", false)] {
            for (at, _) in code.match_indices(macro_name) {
                let before = code[..at].chars().last();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    continue; // `print!(`, `fmt!(`...
                }
                let rest = &code[at + macro_name.len()..];
                let where_ = format!("{}: {}", f.display(), &rest[..rest.len().min(60)]);
                let (msgid, rest) = literal(rest).unwrap_or_else(|| panic!("no literal msgid at {where_}"));
                let plural = plural.then(|| {
                    let rest = rest.trim_start().strip_prefix(',').expect("tn!'s plural");
                    literal(rest)
                        .unwrap_or_else(|| panic!("no literal plural at {where_}"))
                        .0
                });
                let m = Message { msgid, plural };
                if let Some(old) = found.iter().find(|o| o.msgid == m.msgid) {
                    assert_eq!(old, &m, "one msgid, singular and plural alike");
                } else {
                    found.push(m);
                }
            }
        }
    }
    found
}

/// The template the source gives.
fn template(messages: &[Message]) -> String {
    let mut pot = String::from(
        "# clockscope's messages: generated from the source by tests/all/i18n_catalog.rs\n\
         # (CLOCKSCOPE_UPDATE_POT=1 cargo test -p clockscope-cli --test all i18n_catalog::). Do not edit.\n\
         msgid \"\"\n\
         msgstr \"\"\n\
         \"Project-Id-Version: clockscope\\n\"\n\
         \"MIME-Version: 1.0\\n\"\n\
         \"Content-Type: text/plain; charset=UTF-8\\n\"\n\
         \"Content-Transfer-Encoding: 8bit\\n\"\n\
         \"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\\n\"\n",
    );
    for m in messages {
        pot.push('\n');
        if m.msgid.contains('{') {
            pot.push_str("#, rust-format\n");
        }
        pot.push_str(&format!("msgid {}\n", quote(&m.msgid)));
        match &m.plural {
            Some(p) => {
                pot.push_str(&format!("msgid_plural {}\nmsgstr[0] \"\"\nmsgstr[1] \"\"\n", quote(p)));
            }
            None => pot.push_str("msgstr \"\"\n"),
        }
    }
    pot
}

/// The `{name}` placeholders of `s`, in order (`{{` is a brace).
fn placeholders(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('{') {
        if rest[i..].starts_with("{{") {
            rest = &rest[i + 2..];
            continue;
        }
        let Some(end) = rest[i..].find('}') else { break };
        out.push(rest[i + 1..i + end].to_string());
        rest = &rest[i + end + 1..];
    }
    out
}

#[test]
fn the_template_is_what_the_source_gives() {
    let messages = source_messages();
    assert!(messages.len() > 50, "found {} messages", messages.len());
    let pot = template(&messages);
    let path = cli_dir().join("locale/clockscope.pot");
    if std::env::var_os("CLOCKSCOPE_UPDATE_POT").is_some() {
        fs::write(&path, &pot).unwrap();
    }
    let committed = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == pot,
        "locale/clockscope.pot is not what the source gives: run CLOCKSCOPE_UPDATE_POT=1 cargo test -p clockscope-cli --test all i18n_catalog::"
    );
    // It is a catalog like any other.
    assert_eq!(Catalog::parse(&pot).unwrap().entries.len(), messages.len());
}

#[test]
fn every_catalog_translates_every_message_with_its_placeholders() {
    let messages = source_messages();
    for lang in LANGUAGES {
        let cat = Catalog::parse(lang.po).unwrap_or_else(|e| panic!("{}.po: {e}", lang.code));
        let header = format!("nplurals={};", lang.nplurals);
        assert!(
            cat.header.contains(&header),
            "{}.po's Plural-Forms says {header}",
            lang.code
        );
        let mut missing = Vec::new();
        for m in &messages {
            let Some(e) = cat.entries.iter().find(|e| e.msgid == m.msgid) else {
                missing.push(m.msgid.clone());
                continue;
            };
            assert!(!e.fuzzy, "{}.po: fuzzy: {}", lang.code, m.msgid);
            assert_eq!(e.msgid_plural, m.plural, "{}.po: plural of {}", lang.code, m.msgid);
            let forms = if m.plural.is_some() { lang.nplurals } else { 1 };
            assert_eq!(e.msgstr.len(), forms, "{}.po: forms of {}", lang.code, m.msgid);
            for s in &e.msgstr {
                assert!(!s.is_empty(), "{}.po: untranslated: {}", lang.code, m.msgid);
                // Plural forms may drop the count only where the msgid's has it.
                let want = placeholders(&m.msgid);
                assert_eq!(
                    placeholders(s),
                    want,
                    "{}.po: placeholders of {:?} in {:?}",
                    lang.code,
                    m.msgid,
                    s
                );
                assert_eq!(
                    s.starts_with(' '),
                    m.msgid.starts_with(' '),
                    "{}.po: leading space of {:?}",
                    lang.code,
                    m.msgid
                );
            }
        }
        assert!(
            missing.is_empty(),
            "{}.po lacks {} messages: {missing:#?}",
            lang.code,
            missing.len()
        );
        let obsolete: Vec<&str> = cat
            .entries
            .iter()
            .filter(|e| !messages.iter().any(|m| m.msgid == e.msgid))
            .map(|e| e.msgid.as_str())
            .collect();
        assert!(
            obsolete.is_empty(),
            "{}.po has messages the source no longer has: {obsolete:#?}",
            lang.code
        );
    }
}

#[test]
fn the_extractor_reads_continued_literals() {
    let (s, rest) = literal("  \"a \\\"b\\\" \\\n       c\", x").unwrap();
    assert_eq!(s, "a \"b\" c");
    assert_eq!(rest, ", x");
    assert_eq!(placeholders("{a} {{b}} {c}"), ["a", "c"]);
}
