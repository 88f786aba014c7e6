//! The language of the text reports: gettext catalogs (`crates/cli/locale/*.po`)
//! compiled into the binary, the language chosen as gettext chooses it
//! ([`select`]), Russian plural forms, and the locale's decimal separator.
//!
//! # Messages
//!
//! Every sentence a person reads is a [`t!`](crate::t) or [`tn!`](crate::tn)
//! call whose msgid is the English text with named placeholders:
//!
//! ```text
//! t!("Verdict: {status}. {headline}", status = s, headline = h)
//! tn!("{n} CPU usable", "{n} CPUs usable", n, n = n)
//! ```
//!
//! The msgid is the English output itself, so English (the default, `C`, and
//! every language without a catalog) prints exactly what it printed before
//! catalogs existed. `crates/cli/tests/all/i18n_catalog.rs` extracts every msgid
//! from the source, checks that `locale/clockscope.pot` is what the source
//! gives (`CLOCKSCOPE_UPDATE_POT=1` rewrites it) and that every catalog
//! translates every message with the same placeholders.
//!
//! Numbers in a sentence go through [`num`]: the locale's decimal separator
//! (a comma in Russian, as PostgreSQL's programs print it). JSON, Prometheus,
//! metric labels and exit codes never go through this module.
//!
//! # Adding a language
//!
//! One `.po` file in `crates/cli/locale/` (copy `clockscope.pot`) and one
//! line in [`LANGUAGES`].

pub mod library;
pub mod po;
pub mod select;

use std::cell::Cell;
use std::fmt::Display;
use std::sync::OnceLock;

/// A language with a catalog: its code (`LANGUAGE`'s and a locale name's
/// first part), the catalog, its plural rule and its decimal separator.
pub struct Language {
    pub code: &'static str,
    /// The `.po` file, as written.
    pub po: &'static str,
    /// The index of the plural form for a count (the `.po` header's `plural=`).
    pub plural: fn(u64) -> usize,
    /// The number of plural forms (the `.po` header's `nplurals=`).
    pub nplurals: usize,
    pub decimal: char,
}

/// Every language with a catalog; English is the msgids themselves.
pub const LANGUAGES: &[Language] = &[Language {
    code: "ru",
    po: include_str!("../../locale/ru.po"),
    plural: plural_ru,
    nplurals: 3,
    decimal: ',',
}];

/// Russian (and Ukrainian, Belarusian) plural forms, as the `.po` header says:
/// `n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2`.
pub fn plural_ru(n: u64) -> usize {
    if n % 10 == 1 && n % 100 != 11 {
        0
    } else if (2..=4).contains(&(n % 10)) && !(10..20).contains(&(n % 100)) {
        1
    } else {
        2
    }
}

/// The language text is printed in: English, or an index into [`LANGUAGES`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lang(Option<usize>);

impl Lang {
    pub const ENGLISH: Lang = Lang(None);

    /// The language with catalog code `code` (`en` is English); `None` for
    /// a language without a catalog.
    pub fn from_code(code: &str) -> Option<Lang> {
        if code.eq_ignore_ascii_case("en") {
            return Some(Lang::ENGLISH);
        }
        LANGUAGES
            .iter()
            .position(|l| l.code.eq_ignore_ascii_case(code))
            .map(|i| Lang(Some(i)))
    }

    /// `en`, or the catalog's code.
    pub fn code(self) -> &'static str {
        self.0.map_or("en", |i| LANGUAGES[i].code)
    }

    pub fn is_english(self) -> bool {
        self.0.is_none()
    }

    fn language(self) -> Option<&'static Language> {
        self.0.map(|i| &LANGUAGES[i])
    }
}

static CHOSEN: OnceLock<Lang> = OnceLock::new();

thread_local! {
    static OVERRIDE: Cell<Option<Lang>> = const { Cell::new(None) };
}

/// Sets the process's language once, at startup (the binary does, from the
/// environment and `--lang`); later calls are ignored.
pub fn set_language(lang: Lang) {
    let _ = CHOSEN.set(lang);
}

/// The language text is printed in now: [`with_language`]'s, else the
/// process's, else English.
pub fn current() -> Lang {
    OVERRIDE
        .with(Cell::get)
        .unwrap_or_else(|| CHOSEN.get().copied().unwrap_or_default())
}

/// Runs `f` with text in `lang` on this thread (JSON's English fields, tests).
pub fn with_language<R>(lang: Lang, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Lang>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(lang))));
    f()
}

/// Runs `f` in English: what machines read.
pub fn in_english<R>(f: impl FnOnce() -> R) -> R {
    with_language(Lang::ENGLISH, f)
}

fn catalogs() -> &'static [po::Catalog] {
    static PARSED: OnceLock<Vec<po::Catalog>> = OnceLock::new();
    PARSED.get_or_init(|| {
        // A catalog that does not parse translates nothing (English); the
        // tests parse every one, so a release never ships one.
        LANGUAGES
            .iter()
            .map(|l| po::Catalog::parse(l.po).unwrap_or_default())
            .collect()
    })
}

/// `msgid` in the current language (itself in English or when untranslated).
pub fn gettext(msgid: &'static str) -> &'static str {
    match current().0 {
        None => msgid,
        Some(i) => catalogs()[i].get(msgid).unwrap_or(msgid),
    }
}

/// The singular or plural `msgid` for `n`, in the current language.
pub fn ngettext(msgid: &'static str, plural: &'static str, n: u64) -> &'static str {
    let english = if n == 1 { msgid } else { plural };
    let Some(i) = current().0 else { return english };
    let lang = &LANGUAGES[i];
    catalogs()[i].get_plural(msgid, (lang.plural)(n)).unwrap_or(english)
}

/// `template` with each `{name}` replaced by its value; `{{`/`}}` are braces.
pub fn format(template: &str, args: &[(&str, &dyn Display)]) -> String {
    let mut out = String::with_capacity(template.len() + 16 * args.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if let Some(end) = tail.find('}').filter(|_| tail.starts_with('{')) {
            let name = &tail[1..end];
            if let Some((_, v)) = args.iter().find(|(n, _)| *n == name) {
                out.push_str(&v.to_string());
                rest = &tail[end + 1..];
                continue;
            }
        }
        out.push_str(&tail[..1]);
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

/// `x` with `decimals` digits after the separator of the current language
/// (`1.50` in English, `1,50` in Russian).
pub fn num(x: f64, decimals: usize) -> String {
    localize_number(format!("{x:.decimals$}"))
}

/// `x` with a sign, as `{:+.decimals$}` (`+36.2`, `+36,2`).
pub fn signed(x: f64, decimals: usize) -> String {
    localize_number(format!("{x:+.decimals$}"))
}

/// A number already formatted with `.` as its separator, in the current language.
pub fn localize_number(s: String) -> String {
    match current().language() {
        Some(l) if l.decimal != '.' => s.replace('.', l.decimal.encode_utf8(&mut [0; 4])),
        _ => s,
    }
}

/// `s` padded with spaces on the right to `width` terminal columns (Rust's
/// `{:<w}` counts characters, not columns).
pub fn pad_right(s: &str, width: usize) -> String {
    let w = textwrap::core::display_width(s);
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// `s` padded with spaces on the left to `width` terminal columns.
pub fn pad_left(s: &str, width: usize) -> String {
    let w = textwrap::core::display_width(s);
    format!("{}{s}", " ".repeat(width.saturating_sub(w)))
}

/// A message in the current language: `t!("text")` is a `&'static str`,
/// `t!("text {a}", a = x)` a `String` with each named placeholder replaced.
#[macro_export]
macro_rules! t {
    ($msgid:literal) => {
        $crate::i18n::gettext($msgid)
    };
    ($msgid:literal, $($name:ident = $value:expr),+ $(,)?) => {
        $crate::i18n::format(
            $crate::i18n::gettext($msgid),
            &[$((stringify!($name), &$value as &dyn ::std::fmt::Display)),+],
        )
    };
}

/// A message marked for the catalog but not translated here (gettext's
/// `N_`): a phrase a table holds, translated later with [`gettext`].
#[macro_export]
macro_rules! n_ {
    ($msgid:literal) => {
        $msgid
    };
}

/// A message with plural forms for the count `n`:
/// `tn!("{n} CPU", "{n} CPUs", n, n = n)`.
#[macro_export]
macro_rules! tn {
    ($msgid:literal, $plural:literal, $n:expr) => {
        $crate::i18n::ngettext($msgid, $plural, ($n) as u64)
    };
    ($msgid:literal, $plural:literal, $n:expr, $($name:ident = $value:expr),+ $(,)?) => {
        $crate::i18n::format(
            $crate::i18n::ngettext($msgid, $plural, ($n) as u64),
            &[$((stringify!($name), &$value as &dyn ::std::fmt::Display)),+],
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn russian_plural_forms() {
        let cases = [
            (0, 2),
            (1, 0),
            (2, 1),
            (4, 1),
            (5, 2),
            (11, 2),
            (12, 2),
            (14, 2),
            (21, 0),
            (22, 1),
            (25, 2),
            (101, 0),
            (111, 2),
            (112, 2),
            (122, 1),
            (1_000_001, 0),
        ];
        for (n, form) in cases {
            assert_eq!(plural_ru(n), form, "n = {n}");
        }
    }

    #[test]
    fn placeholders_by_name_in_any_order() {
        let s = format("{b} then {a}, {{literal}}, {unknown}", &[("a", &1), ("b", &"two")]);
        assert_eq!(s, "two then 1, {literal}, {unknown}");
    }

    #[test]
    fn decimal_separator_follows_the_language() {
        assert_eq!(in_english(|| num(1.5, 2)), "1.50");
        let ru = Lang::from_code("ru").unwrap();
        assert_eq!(with_language(ru, || num(1.5, 2)), "1,50");
        assert_eq!(with_language(ru, || signed(36.25, 1)), "+36,2");
        // The override ends with its closure.
        assert_eq!(in_english(|| num(0.25, 1)), "0.2");
    }

    #[test]
    fn english_is_the_msgid_and_russian_the_catalog() {
        let ru = Lang::from_code("ru").unwrap();
        assert_eq!(in_english(|| crate::t!("Environment")), "Environment");
        assert_eq!(with_language(ru, || crate::t!("Environment")), "Окружение");
        let cpus = |n: u64| with_language(ru, || crate::tn!("{n} CPU usable", "{n} CPUs usable", n, n = n));
        assert_eq!(cpus(1), "доступен 1 процессор");
        assert_eq!(cpus(2), "доступно 2 процессора");
        assert_eq!(cpus(5), "доступно 5 процессоров");
        assert_eq!(cpus(21), "доступен 21 процессор");
    }
}
