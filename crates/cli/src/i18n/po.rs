//! A reader of gettext `.po` catalogs, for the catalogs compiled into the
//! binary (`include_str!`), parsed once at first use.
//!
//! Hand-written, on purpose: the `gettext` crate reads compiled `.mo` files
//! only (a `msgfmt` step in the build, or binary files in the repository,
//! for the static build and the .deb alike), and the catalogs here are our
//! own, in the subset of the format `msgmerge` writes: comments, `msgid`,
//! `msgid_plural`, `msgstr`/`msgstr[N]`, strings continued on the next lines,
//! C escapes. `msgctxt` is read and kept apart; `#, fuzzy` entries are not
//! used (as `msgfmt` leaves them out). The reader is strict: anything else is
//! an error with its line number, which `tests/all/i18n_catalog.rs` would show.

use std::collections::HashMap;

/// One entry of a catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub msgctxt: Option<String>,
    pub msgid: String,
    pub msgid_plural: Option<String>,
    /// `msgstr`, or `msgstr[0..]` of a plural entry.
    pub msgstr: Vec<String>,
    pub fuzzy: bool,
}

/// A parsed catalog: every entry in order, and the usable translations.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub entries: Vec<Entry>,
    /// The header (the entry whose msgid is empty).
    pub header: String,
    index: HashMap<String, usize>,
}

impl Catalog {
    /// Parses `text`; an error names the line.
    pub fn parse(text: &str) -> Result<Catalog, String> {
        let entries = parse_entries(text)?;
        let mut cat = Catalog::default();
        for e in entries {
            if e.msgid.is_empty() && e.msgctxt.is_none() {
                cat.header = e.msgstr.first().cloned().unwrap_or_default();
                continue;
            }
            let usable = !e.fuzzy && e.msgctxt.is_none() && e.msgstr.iter().all(|s| !s.is_empty());
            if usable {
                cat.index.insert(e.msgid.clone(), cat.entries.len());
            }
            cat.entries.push(e);
        }
        Ok(cat)
    }

    /// The translation of a singular `msgid`.
    pub fn get(&self, msgid: &str) -> Option<&str> {
        let e = &self.entries[*self.index.get(msgid)?];
        e.msgid_plural.is_none().then(|| e.msgstr[0].as_str())
    }

    /// Plural form `form` of the entry `msgid`.
    pub fn get_plural(&self, msgid: &str, form: usize) -> Option<&str> {
        let e = &self.entries[*self.index.get(msgid)?];
        e.msgid_plural.as_ref()?;
        e.msgstr.get(form).map(String::as_str)
    }
}

/// Which string the continuation lines extend.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    None,
    Ctxt,
    Id,
    Plural,
    Str(usize),
}

fn parse_entries(text: &str) -> Result<Vec<Entry>, String> {
    let mut entries = Vec::new();
    let mut cur = Entry::default();
    let mut field = Field::None;
    let mut started = false;
    let mut next_fuzzy = false;
    for (no, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let err = |what: &str| format!("line {}: {what}: {raw}", no + 1);
        if line.is_empty() {
            continue;
        }
        if let Some(flags) = line.strip_prefix("#,") {
            next_fuzzy |= flags.split(',').any(|f| f.trim() == "fuzzy");
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let (keyword, rest) = match line.find(' ') {
            Some(i) if !line.starts_with('"') => (&line[..i], line[i..].trim_start()),
            _ => ("", line),
        };
        let value = unquote(rest).ok_or_else(|| err("not a quoted string"))?;
        let new_field = match keyword {
            "" => {
                if field == Field::None {
                    return Err(err("a string continues no keyword"));
                }
                field
            }
            "msgctxt" => Field::Ctxt,
            "msgid" => Field::Id,
            "msgid_plural" => Field::Plural,
            "msgstr" => Field::Str(0),
            k => {
                let n = k
                    .strip_prefix("msgstr[")
                    .and_then(|k| k.strip_suffix(']'))
                    .and_then(|n| n.parse::<usize>().ok())
                    .filter(|&n| n < 16)
                    .ok_or_else(|| err("unknown keyword"))?;
                Field::Str(n)
            }
        };
        // A new entry starts at msgctxt, or at msgid not after msgctxt.
        let starts_entry = keyword == "msgctxt" || (keyword == "msgid" && field != Field::Ctxt);
        if starts_entry {
            if started {
                entries.push(std::mem::take(&mut cur));
            }
            started = true;
            cur.fuzzy = std::mem::take(&mut next_fuzzy);
        }
        if !started {
            return Err(err("text before the first msgid"));
        }
        let target = match new_field {
            Field::None => unreachable!("a continuation needs a field"),
            Field::Ctxt => cur.msgctxt.get_or_insert_with(String::new),
            Field::Id => &mut cur.msgid,
            Field::Plural => cur.msgid_plural.get_or_insert_with(String::new),
            Field::Str(n) => {
                if keyword.starts_with("msgstr") && n != cur.msgstr.len() {
                    return Err(err("msgstr[N] out of order"));
                }
                if n == cur.msgstr.len() {
                    cur.msgstr.push(String::new());
                }
                &mut cur.msgstr[n]
            }
        };
        target.push_str(&value);
        field = new_field;
    }
    if started {
        entries.push(cur);
    }
    Ok(entries)
}

/// The characters a quoted string escapes, and the letter after its backslash.
const ESCAPES: [(char, char); 5] = [('\n', 'n'), ('\t', 't'), ('\r', 'r'), ('"', '"'), ('\\', '\\')];

/// The contents of a `"..."` string with C escapes, or `None`.
fn unquote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let escaped = chars.next()?;
                out.push(ESCAPES.iter().find(|(_, e)| *e == escaped)?.0);
            }
            '"' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// `s` as a `.po` string (the inverse of [`unquote`]).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match ESCAPES.iter().find(|(plain, _)| *plain == c) {
            Some(&(_, e)) => out.extend(['\\', e]),
            None => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PO: &str = r#"# A comment
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=3; plural=(n%10==1);\n"

#: src/a.rs
msgid "Environment"
msgstr "Окружение"

msgid "a \"quoted\" "
"word"
msgstr "слово"

#, fuzzy
msgid "Clocks"
msgstr "Часы"

msgid "{n} CPU"
msgid_plural "{n} CPUs"
msgstr[0] "{n} процессор"
msgstr[1] "{n} процессора"
msgstr[2] "{n} процессоров"

msgid "untranslated"
msgstr ""
"#;

    #[test]
    fn reads_entries_plurals_continuations_and_skips_fuzzy() {
        let c = Catalog::parse(PO).unwrap();
        assert!(c.header.contains("nplurals=3"));
        assert_eq!(c.get("Environment"), Some("Окружение"));
        assert_eq!(c.get("a \"quoted\" word"), Some("слово"));
        assert_eq!(c.get("Clocks"), None, "fuzzy");
        assert_eq!(c.get("untranslated"), None);
        assert_eq!(c.get_plural("{n} CPU", 2), Some("{n} процессоров"));
        assert_eq!(c.get("{n} CPU"), None, "a plural entry is not a singular one");
        assert_eq!(c.entries.len(), 5);
    }

    #[test]
    fn rejects_what_it_does_not_know() {
        assert!(Catalog::parse("msgid \"a\"\nmsgfoo \"b\"\n")
            .unwrap_err()
            .contains("line 2"));
        assert!(Catalog::parse("msgid \"a\nmsgstr \"b\"\n").is_err());
        assert!(Catalog::parse("\"orphan\"\n").is_err());
        assert!(Catalog::parse("msgid \"a\"\nmsgstr[1] \"b\"\n").is_err());
    }

    #[test]
    fn quote_and_unquote_are_inverse() {
        for s in ["plain", "a \"b\" \\ c\nd\te", "кириллица"] {
            assert_eq!(unquote(&quote(s)).as_deref(), Some(s));
        }
    }
}
