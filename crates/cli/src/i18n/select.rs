//! The language of the text reports, chosen as GNU gettext chooses it for a
//! program that called `setlocale(LC_ALL, "")`:
//!
//! 1. The messages locale is the first set of `LC_ALL`, `LC_MESSAGES`,
//!    `LANG`. `C` or `POSIX` (or `C.UTF-8`), or unset: English, and
//!    `LANGUAGE` is ignored (gettext ignores it in the C locale). `LC_ALL=C`
//!    is the usual way to force English.
//! 2. A locale that is not installed (glibc's `setlocale` would fail and the
//!    program run in C): English.
//! 3. The character set is the `LC_CTYPE` locale's (`LC_ALL`, `LC_CTYPE`,
//!    `LANG`): the reports are UTF-8, so a locale whose codeset is not UTF-8
//!    (`ru_RU.KOI8-R`, or `ru_RU`, which is ISO-8859-5) gives English, never
//!    mojibake.
//! 4. Then each entry of `LANGUAGE` (colon-separated), then the messages
//!    locale: the first whose language has a catalog wins; `en` and `C` are
//!    English. An entry that is not a well-formed locale name is skipped (as
//!    gettext finds no catalog for it); a value that is not UTF-8 or not a
//!    well-formed name in `LC_*`/`LANG` gives English.
//!
//! `--lang en` (or any code with a catalog) overrides all of it; `--lang
//! auto` is this choice.

use super::Lang;
use std::ffi::OsString;

/// Where the choice is made from: the environment and which locales exist.
pub struct Sources<'a> {
    /// `getenv`.
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
    /// Whether glibc has the locale `name` (its `LC_MESSAGES`).
    pub installed: &'a dyn Fn(&str) -> bool,
}

/// This process's environment and glibc's locales on this machine.
pub fn from_env() -> Lang {
    use crate::pg_test_timing::glibc_locale::{Category, Finder, GLIBC_LOCALE_DIR};
    let locpath = std::env::var("LOCPATH").ok().filter(|p| !p.is_empty());
    let finder = Finder::new(std::path::Path::new(GLIBC_LOCALE_DIR), locpath.as_deref());
    choose(&Sources {
        var: &|name| std::env::var_os(name),
        installed: &|name| finder.exists(name, Category::Messages),
    })
}

/// What `--lang` gives: `auto` the environment's choice, else the language
/// with that code (`en` English); `None` for a code without a catalog.
pub fn from_option(value: &str, auto: impl FnOnce() -> Lang) -> Option<Lang> {
    if value.eq_ignore_ascii_case("auto") {
        Some(auto())
    } else {
        Lang::from_code(value)
    }
}

/// A set variable: `Err(())` when it is not UTF-8 (never a usable name).
fn get(src: &Sources<'_>, name: &str) -> Option<Result<String, ()>> {
    let v = (src.var)(name).filter(|v| !v.is_empty())?;
    Some(v.into_string().map_err(|_| ()))
}

/// The first set of `names`.
fn first(src: &Sources<'_>, names: &[&str]) -> Option<Result<String, ()>> {
    names.iter().find_map(|n| get(src, n))
}

fn is_c(name: &str) -> bool {
    name == "C" || name == "POSIX" || name.starts_with("C.")
}

/// The parts of a well-formed locale name `language[_TERRITORY][.codeset][@modifier]`.
struct LocaleName<'a> {
    language: &'a str,
    codeset: Option<&'a str>,
}

fn parse(name: &str) -> Option<LocaleName<'_>> {
    if name.len() > 64 {
        return None;
    }
    let (rest, modifier) = name.split_once('@').map_or((name, None), |(r, m)| (r, Some(m)));
    let (rest, codeset) = rest.split_once('.').map_or((rest, None), |(r, c)| (r, Some(c)));
    let (language, territory) = rest.split_once('_').map_or((rest, None), |(l, t)| (l, Some(t)));
    let alpha =
        |s: &str, lo: usize, hi: usize| (lo..=hi).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphabetic());
    let token = |s: &str| {
        !s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let ok = alpha(language, 2, 3)
        && territory.is_none_or(|t| alpha(t, 2, 3) || (t.len() == 3 && t.bytes().all(|b| b.is_ascii_digit())))
        && codeset.is_none_or(token)
        && modifier.is_none_or(token);
    ok.then_some(LocaleName { language, codeset })
}

fn is_utf8(codeset: Option<&str>) -> bool {
    codeset.is_some_and(|c| {
        let c: String = c.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        c.eq_ignore_ascii_case("utf8")
    })
}

/// The language chosen from `src` (see the module documentation).
pub fn choose(src: &Sources<'_>) -> Lang {
    let Some(Ok(messages)) = first(src, &["LC_ALL", "LC_MESSAGES", "LANG"]) else {
        return Lang::ENGLISH; // unset, or not UTF-8
    };
    if is_c(&messages) || parse(&messages).is_none() || !(src.installed)(&messages) {
        return Lang::ENGLISH;
    }
    let Some(Ok(ctype)) = first(src, &["LC_ALL", "LC_CTYPE", "LANG"]) else {
        return Lang::ENGLISH;
    };
    if !parse(&ctype).is_some_and(|c| is_utf8(c.codeset)) {
        return Lang::ENGLISH;
    }
    let language_list = get(src, "LANGUAGE").and_then(Result::ok).unwrap_or_default();
    let candidates = language_list
        .split(':')
        .filter(|s| !s.is_empty())
        .take(32)
        .chain([messages.as_str()]);
    for name in candidates {
        if is_c(name) {
            return Lang::ENGLISH;
        }
        if let Some(lang) = parse(name).and_then(|n| Lang::from_code(n.language)) {
            return lang;
        }
    }
    Lang::ENGLISH
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn pick(vars: &[(&str, &str)]) -> &'static str {
        pick_with(vars, &|_| true)
    }

    fn pick_with(vars: &[(&str, &str)], installed: &dyn Fn(&str) -> bool) -> &'static str {
        let var = |n: &str| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| OsString::from(*v));
        choose(&Sources { var: &var, installed }).code()
    }

    #[test]
    fn lang_and_its_overrides_in_gettexts_order() {
        assert_eq!(pick(&[]), "en");
        assert_eq!(pick(&[("LANG", "ru_RU.UTF-8")]), "ru");
        assert_eq!(pick(&[("LANG", "ru_RU.utf8")]), "ru");
        assert_eq!(pick(&[("LANG", "de_DE.UTF-8")]), "en", "no German catalog");
        assert_eq!(pick(&[("LANG", "en_US.UTF-8"), ("LC_MESSAGES", "ru_RU.UTF-8")]), "ru");
        assert_eq!(pick(&[("LANG", "ru_RU.UTF-8"), ("LC_MESSAGES", "en_US.UTF-8")]), "en");
        assert_eq!(
            pick(&[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "C")]),
            "en",
            "LC_ALL=C forces English"
        );
        assert_eq!(pick(&[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "C.UTF-8")]), "en");
        assert_eq!(pick(&[("LANG", "POSIX")]), "en");
        assert_eq!(pick(&[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "")]), "ru", "empty is unset");
    }

    #[test]
    fn language_list_comes_first_but_not_in_the_c_locale() {
        assert_eq!(pick(&[("LANG", "de_DE.UTF-8"), ("LANGUAGE", "fr:ru:en")]), "ru");
        assert_eq!(pick(&[("LANG", "ru_RU.UTF-8"), ("LANGUAGE", "en:ru")]), "en");
        assert_eq!(
            pick(&[("LANG", "ru_RU.UTF-8"), ("LANGUAGE", "fr:de")]),
            "ru",
            "then the locale"
        );
        assert_eq!(
            pick(&[("LANG", "C"), ("LANGUAGE", "ru")]),
            "en",
            "ignored in the C locale"
        );
        assert_eq!(pick(&[("LANGUAGE", "ru")]), "en", "ignored without a locale");
    }

    #[test]
    fn not_utf8_or_malformed_or_not_installed_is_english() {
        assert_eq!(pick(&[("LANG", "ru_RU.KOI8-R")]), "en");
        assert_eq!(pick(&[("LANG", "ru_RU")]), "en", "ISO-8859-5 by default");
        assert_eq!(
            pick(&[("LANG", "ru_RU.UTF-8"), ("LC_CTYPE", "C")]),
            "en",
            "LC_CTYPE=C is ASCII"
        );
        assert_eq!(
            pick(&[("LANG", "en_US.UTF-8"), ("LC_MESSAGES", "ru_RU.UTF-8")]),
            "ru",
            "LANG's codeset"
        );
        assert_eq!(
            pick(&[("LC_MESSAGES", "ru_RU.UTF-8"), ("LC_CTYPE", "ru_RU.CP1251")]),
            "en"
        );
        assert_eq!(
            pick(&[("LC_MESSAGES", "ru_RU.UTF-8"), ("LANG", "C")]),
            "en",
            "the C ctype is ASCII"
        );
        assert_eq!(pick(&[("LANG", "ru_RU.UTF-8/../../etc")]), "en");
        assert_eq!(pick(&[("LANG", "русский")]), "en");
        assert_eq!(
            pick(&[("LANG", "ru_RU.UTF-8"), ("LANGUAGE", "r\u{1b}[31mu:::ru")]),
            "ru"
        );
        assert_eq!(pick_with(&[("LANG", "ru_RU.UTF-8")], &|_| false), "en", "not installed");
        let var = |n: &str| (n == "LANG").then(|| OsString::from_vec(b"ru_RU.UTF-8\xff".to_vec()));
        assert_eq!(
            choose(&Sources {
                var: &var,
                installed: &|_| true
            })
            .code(),
            "en"
        );
    }

    #[test]
    fn the_option() {
        let auto = || Lang::from_code("ru").unwrap();
        assert_eq!(from_option("auto", auto).map(Lang::code), Some("ru"));
        assert_eq!(from_option("en", auto).map(Lang::code), Some("en"));
        assert_eq!(from_option("RU", auto).map(Lang::code), Some("ru"));
        assert_eq!(from_option("xx", auto), None);
    }
}
