//! PostgreSQL's locale handling in a frontend, without the C library's
//! locale machinery (so the static musl build behaves as the glibc one):
//! `setlocale(LC_ALL, "")` resolved as glibc resolves it, the locale's
//! decimal point read from glibc's own locale data (`LOCPATH`, else
//! `/usr/lib/locale/locale-archive`, else `/usr/lib/locale/<name>/`), and
//! the `pg_test_timing-19` catalog chosen as gettext chooses it
//! (`LANGUAGE`, `LC_ALL`, `LC_MESSAGES`, `LANG`; C and POSIX untranslated).
//!
//! - Each category's locale name is `LC_ALL`, else `LC_<category>`, else
//!   `LANG`, else `C` (empty values skipped). If any category names a locale
//!   that does not exist, glibc's `setlocale(LC_ALL, "")` fails and every
//!   category stays `C` (English, `.`): so here.
//! - Catalog directories, first hit wins: `PGLOCALEDIR`, `/usr/share/locale`
//!   (distribution packages), `<dir>/../share/locale` for each `<dir>` on
//!   `PATH` holding `pg_config` (a source build's `PREFIX/share/locale`).
//! - A translation is used only when its `printf` conversions match the
//!   msgid's; a non-ASCII one only when `LC_CTYPE`'s codeset is UTF-8
//!   (gettext would convert it to another codeset, which is not done here).

use super::glibc_locale::{self, Category};
use super::mo::{Catalog, MAX_MO_BYTES};
use super::printf::{self, Arg};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The message catalog's domain: `PG_TEXTDOMAIN("pg_test_timing")`.
pub const DOMAIN: &str = "pg_test_timing-19";

/// The locale pg_test_timing prints in.
#[derive(Clone, Debug)]
pub struct PgLocale {
    /// `LC_NUMERIC`'s radix character, as `printf("%f")` uses it.
    pub decimal_point: String,
    /// The catalog in use, if any.
    catalog: Option<Catalog>,
    /// Non-ASCII translations can be printed (`LC_CTYPE` is UTF-8).
    utf8: bool,
    /// glibc's own `libc` catalog (its getopt messages), from the system's
    /// catalog directory.
    libc: Option<Catalog>,
}

impl Default for PgLocale {
    fn default() -> Self {
        PgLocale::c()
    }
}

/// Where the locale comes from: the environment and the file system roots.
pub struct LocaleSources<'a> {
    /// `getenv`.
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
    /// glibc's locale directory (`/usr/lib/locale`, holding `locale-archive`).
    pub glibc_locale_dir: PathBuf,
    /// The distribution's message catalogs (`/usr/share/locale`).
    pub system_catalog_dir: PathBuf,
}

impl LocaleSources<'_> {
    fn get(&self, name: &str) -> Option<String> {
        (self.var)(name)
            .and_then(|v| v.into_string().ok())
            .filter(|v| !v.is_empty())
    }

    /// The name `setlocale(LC_ALL, "")` gives `category`.
    fn category_name(&self, category: &str) -> String {
        self.get("LC_ALL")
            .or_else(|| self.get(category))
            .or_else(|| self.get("LANG"))
            .unwrap_or_else(|| "C".to_string())
    }

    fn catalog_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.get("PGLOCALEDIR").map(PathBuf::from).into_iter().collect();
        dirs.push(self.system_catalog_dir.clone());
        if let Some(path) = (self.var)("PATH") {
            for dir in std::env::split_paths(&path).take(64) {
                if dir.join("pg_config").is_file() {
                    dirs.push(dir.join("../share/locale"));
                }
            }
        }
        dirs
    }
}

fn is_c(name: &str) -> bool {
    name == "C" || name == "POSIX"
}

/// Reads at most [`MAX_MO_BYTES`] + 1 bytes of `path`.
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_MO_BYTES + 1)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// PostgreSQL's pg_test_timing catalogs name their project
/// `pg_test_timing (PostgreSQL) 19`, `PostgreSQL 17` or `postgresql`; another
/// program's (`psql (PostgreSQL) 19`) is another domain.
fn is_pg_test_timing(project: &str) -> bool {
    let p = project.to_ascii_lowercase();
    p.contains("pg_test_timing") || p.starts_with("postgresql")
}

/// glibc's catalogs: `GNU libc 2.34.9000`, `libc 2.33.9000`, `libc-2.33.9000`.
fn is_libc(project: &str) -> bool {
    ["GNU libc ", "libc ", "libc-"].iter().any(|p| project.starts_with(p))
}

/// A usable catalog of `domain` for `languages` under `dir`, whose header's
/// `Project-Id-Version` is `project`'s.
fn find_catalog(dir: &Path, languages: &[String], domain: &str, project: fn(&str) -> bool) -> Option<Catalog> {
    for lang in languages {
        if is_c(lang) {
            return None;
        }
        for variant in glibc_locale::name_variants(lang) {
            if variant.contains('/') || variant.starts_with('.') {
                continue;
            }
            let path = dir.join(&variant).join("LC_MESSAGES").join(format!("{domain}.mo"));
            let Some(data) = read_bounded(&path) else { continue };
            // A corrupt, truncated, huge or foreign catalog is skipped
            // (English), never printed.
            match Catalog::parse(&data) {
                Ok(c) if project(&c.project) => return Some(c),
                _ => continue,
            }
        }
    }
    None
}

impl PgLocale {
    /// The C locale: English, `.`.
    pub fn c() -> PgLocale {
        PgLocale {
            decimal_point: ".".to_string(),
            catalog: None,
            utf8: false,
            libc: None,
        }
    }

    /// This process's locale, as PostgreSQL 19's pg_test_timing sets it up.
    pub fn from_env() -> PgLocale {
        let var = |n: &str| std::env::var_os(n);
        PgLocale::resolve(&LocaleSources {
            var: &var,
            glibc_locale_dir: PathBuf::from(glibc_locale::GLIBC_LOCALE_DIR),
            system_catalog_dir: PathBuf::from("/usr/share/locale"),
        })
    }

    /// [`PgLocale::from_env`] over injected sources.
    pub fn resolve(src: &LocaleSources<'_>) -> PgLocale {
        let locpath = src.get("LOCPATH");
        let finder = glibc_locale::Finder::new(&src.glibc_locale_dir, locpath.as_deref());
        // setlocale(LC_ALL, ""): all categories or none.
        let names: Vec<(Category, String)> = Category::ALL
            .iter()
            .map(|&c| (c, src.category_name(c.env_name())))
            .collect();
        if names.iter().any(|(c, n)| !is_c(n) && !finder.exists(n, *c)) {
            return PgLocale::c();
        }
        let name_of = |cat: Category| {
            names
                .iter()
                .find(|(c, _)| *c == cat)
                .map(|(_, n)| n.as_str())
                .unwrap_or("C")
        };
        let numeric = name_of(Category::Numeric);
        let decimal_point = Some(numeric)
            .filter(|n| !is_c(n))
            .and_then(|n| finder.decimal_point(n))
            .unwrap_or_else(|| ".".to_string());
        let messages = name_of(Category::Messages);
        let ctype = name_of(Category::Ctype);
        let utf8 = ctype
            .split_once('.')
            .is_some_and(|(_, c)| glibc_locale::normalize_codeset(c.split('@').next().unwrap_or(c)) == "utf8");
        let (catalog, libc) = if is_c(messages) {
            (None, None)
        } else {
            let languages: Vec<String> = match src.get("LANGUAGE") {
                Some(list) => list.split(':').filter(|s| !s.is_empty()).map(str::to_string).collect(),
                None => vec![messages.to_string()],
            };
            let catalog = src
                .catalog_dirs()
                .iter()
                .find_map(|d| find_catalog(d, &languages, DOMAIN, is_pg_test_timing));
            let libc = find_catalog(&src.system_catalog_dir, &languages, "libc", is_libc);
            (catalog, libc)
        };
        PgLocale {
            decimal_point,
            catalog,
            utf8,
            libc,
        }
    }

    /// A translation is usable: printable here and with the msgid's
    /// conversions.
    fn usable<'a>(&self, msgid: &str, tr: Option<&'a str>) -> Option<&'a str> {
        let tr = tr?;
        if !self.utf8 && !tr.is_ascii() {
            return None;
        }
        // The same conversions; or the msgid is no format at all (a header
        // such as "% of total", `xgettext:no-c-format`, printed through
        // `%s`), so neither is the translation used as one ("% du total").
        match printf::signature(msgid) {
            None => Some(tr),
            sig => (printf::signature(tr) == sig).then_some(tr),
        }
    }

    /// `_(msgid)`.
    pub fn tr<'a>(&'a self, msgid: &'a str) -> &'a str {
        let found = self.catalog.as_ref().and_then(|c| c.get(msgid));
        self.usable(msgid, found).unwrap_or(msgid)
    }

    /// `ngettext(msgid, plural, n)`.
    pub fn ntr<'a>(&'a self, msgid: &'a str, plural: &'a str, n: u64) -> &'a str {
        let found = self.catalog.as_ref().and_then(|c| c.get_plural(msgid, n));
        self.usable(msgid, found).unwrap_or(if n == 1 { msgid } else { plural })
    }

    /// `printf(fmt, args...)` in this locale (`fmt` already translated).
    pub fn format(&self, fmt: &str, args: &[Arg<'_>]) -> Vec<u8> {
        printf::format(fmt, args, &self.decimal_point).unwrap_or_else(|| fmt.as_bytes().to_vec())
    }

    /// glibc's getopt message `msgid` through glibc's `libc` catalog (as its
    /// `_()` does), with `args` and the untranslated `tail`.
    pub fn libc_msg(&self, msgid: &str, args: &[Arg<'_>], tail: &[u8]) -> Vec<u8> {
        let found = self.libc.as_ref().and_then(|c| c.get(msgid));
        let fmt = self.usable(msgid, found).unwrap_or(msgid);
        let mut out = printf::format(fmt, args, &self.decimal_point).unwrap_or_else(|| msgid.as_bytes().to_vec());
        out.extend_from_slice(tail);
        out
    }

    /// `printf(_(msgid), args...)`.
    pub fn msg(&self, msgid: &str, args: &[Arg<'_>]) -> Vec<u8> {
        let tr = self.tr(msgid);
        printf::format(tr, args, &self.decimal_point)
            .or_else(|| printf::format(msgid, args, &self.decimal_point))
            .unwrap_or_else(|| msgid.as_bytes().to_vec())
    }
}

#[cfg(test)]
#[path = "locale_tests.rs"]
mod tests;
