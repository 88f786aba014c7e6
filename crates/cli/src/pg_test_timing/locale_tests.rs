//! Locales and catalogs the tests create: a glibc-format locale directory
//! (`LOCPATH`) whose LC_NUMERIC has a decimal comma, and a catalog built by
//! msgfmt.

use super::*;
use crate::pg_test_timing::glibc_locale::name_variants;
use std::collections::HashMap;
use std::process::Command;

/// A category file in glibc's format: magic, count, offsets, strings.
fn category_file(magic: u32, strings: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&magic.to_ne_bytes());
    out.extend_from_slice(&(strings.len() as u32).to_ne_bytes());
    let mut off = 8 + 4 * strings.len();
    let mut data = Vec::new();
    for s in strings {
        out.extend_from_slice(&(off as u32).to_ne_bytes());
        data.extend_from_slice(s.as_bytes());
        data.push(0);
        off += s.len() + 1;
    }
    out.extend(data);
    out
}

/// Creates locale `name` under `locpath` with `decimal_point`.
fn make_locale(locpath: &Path, name: &str, decimal_point: &str) {
    let dir = locpath.join(name);
    std::fs::create_dir_all(dir.join("LC_MESSAGES")).unwrap();
    for cat in glibc_locale::Category::ALL {
        let path = dir.join(cat.env_name());
        match cat {
            glibc_locale::Category::Messages => std::fs::write(path.join("SYS_LC_MESSAGES"), b"x").unwrap(),
            glibc_locale::Category::Numeric => {
                std::fs::write(path, category_file(0x2003_1115 ^ 1, &[decimal_point, "."])).unwrap()
            }
            _ => std::fs::write(path, b"data").unwrap(),
        }
    }
}

const PO: &str = r#"msgid ""
msgstr ""
"Project-Id-Version: pg_test_timing (PostgreSQL) 19\n"
"Content-Type: text/plain; charset=UTF-8\n"

msgid "count"
msgstr "число"

msgid "% of total"
msgstr "% du total"

msgid "Average loop time including overhead: %0.2f ns\n"
msgstr "Время цикла: %0.2f нс\n"

msgid "%s: invalid argument for option %s\n"
msgstr "%s: недопустимый аргумент %d\n"
"#;

struct Fixture {
    _dir: tempfile::TempDir,
    locpath: PathBuf,
    catalogs: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let locpath = dir.path().join("locales");
    make_locale(&locpath, "xx_XX.utf8", ",");
    make_locale(&locpath, "yy_YY.utf8", ".");
    let catalogs = dir.path().join("share/locale");
    let lc = catalogs.join("xx/LC_MESSAGES");
    std::fs::create_dir_all(&lc).unwrap();
    std::fs::write(dir.path().join("x.po"), PO).unwrap();
    let ok = Command::new("msgfmt")
        .arg("-o")
        .arg(lc.join(format!("{DOMAIN}.mo")))
        .arg(dir.path().join("x.po"))
        .status()
        .expect("msgfmt (gettext) builds the test catalog")
        .success();
    assert!(ok);
    Fixture {
        _dir: dir,
        locpath,
        catalogs,
    }
}

fn resolve(f: &Fixture, env: &[(&str, &str)]) -> PgLocale {
    let mut vars: HashMap<String, OsString> = env.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
    vars.insert("LOCPATH".into(), f.locpath.clone().into_os_string());
    let var = move |n: &str| vars.get(n).cloned();
    PgLocale::resolve(&LocaleSources {
        var: &var,
        glibc_locale_dir: f.locpath.join("no-archive"),
        system_catalog_dir: f.catalogs.clone(),
    })
}

fn text(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap()
}

#[test]
fn decimal_comma_and_catalog_from_lang() {
    let f = fixture();
    let l = resolve(&f, &[("LANG", "xx_XX.UTF-8")]);
    assert_eq!(l.decimal_point, ",");
    assert_eq!(l.tr("count"), "число");
    assert_eq!(l.tr("% of total"), "% du total", "no-c-format headers");
    let avg = "Average loop time including overhead: %0.2f ns\n";
    assert_eq!(text(l.msg(avg, &[Arg::Float(63.075)])), "Время цикла: 63,08 нс\n");
    // A translation whose conversions differ from the msgid's is not used.
    let bad = "%s: invalid argument for option %s\n";
    assert_eq!(l.tr(bad), bad);
}

#[test]
fn gettext_and_setlocale_precedence() {
    let f = fixture();
    // LC_ALL wins over LANG; LC_NUMERIC and LC_MESSAGES are separate.
    let l = resolve(&f, &[("LANG", "xx_XX.UTF-8"), ("LC_ALL", "yy_YY.UTF-8")]);
    assert_eq!((l.decimal_point.as_str(), l.tr("count")), (".", "count"));
    let l = resolve(&f, &[("LANG", "yy_YY.UTF-8"), ("LC_NUMERIC", "xx_XX.UTF-8")]);
    assert_eq!((l.decimal_point.as_str(), l.tr("count")), (",", "count"));
    let l = resolve(&f, &[("LANG", "yy_YY.UTF-8"), ("LC_MESSAGES", "xx_XX.UTF-8")]);
    assert_eq!((l.decimal_point.as_str(), l.tr("count")), (".", "число"));
    // LANGUAGE lists languages, used unless the messages locale is C.
    let l = resolve(&f, &[("LANG", "yy_YY.UTF-8"), ("LANGUAGE", "zz:xx")]);
    assert_eq!(l.tr("count"), "число");
    let l = resolve(&f, &[("LANG", "C"), ("LANGUAGE", "xx")]);
    assert_eq!((l.decimal_point.as_str(), l.tr("count")), (".", "count"));
    let l = resolve(&f, &[("LANG", "POSIX")]);
    assert_eq!(l.tr("count"), "count");
}

#[test]
fn an_unknown_locale_leaves_everything_c_as_glibc_does() {
    let f = fixture();
    // One category naming a missing locale fails setlocale(LC_ALL, ""):
    // every category stays C, even those that exist.
    let l = resolve(&f, &[("LANG", "xx_XX.UTF-8"), ("LC_TIME", "qq_QQ.UTF-8")]);
    assert_eq!((l.decimal_point.as_str(), l.tr("count")), (".", "count"));
    let l = resolve(&f, &[("LANG", "../../etc")]);
    assert_eq!(l.decimal_point, ".");
}

#[test]
fn pglocaledir_comes_first_and_bad_catalogs_are_skipped() {
    let f = fixture();
    let other = tempfile::tempdir().unwrap();
    let lc = other.path().join("xx/LC_MESSAGES");
    std::fs::create_dir_all(&lc).unwrap();
    std::fs::write(lc.join(format!("{DOMAIN}.mo")), b"\xde\x12\x04\x95garbage").unwrap();
    let dir = other.path().to_str().unwrap();
    // A corrupt catalog in PGLOCALEDIR: skipped, the next directory's used.
    let l = resolve(&f, &[("LANG", "xx_XX.UTF-8"), ("PGLOCALEDIR", dir)]);
    assert_eq!(l.tr("count"), "число");
    // Another domain's catalog (right file name, foreign header): skipped.
    let foreign = std::fs::read(f.catalogs.join(format!("xx/LC_MESSAGES/{DOMAIN}.mo"))).unwrap();
    let foreign = String::from_utf8_lossy(&foreign).replace("pg_test_timing (PostgreSQL)", "psql (PostgreSQL) 19xx");
    std::fs::write(lc.join(format!("{DOMAIN}.mo")), foreign.as_bytes()).unwrap();
    let l = resolve(&f, &[("LANG", "xx_XX.UTF-8"), ("PGLOCALEDIR", dir)]);
    assert_eq!(l.tr("count"), "число");
}

#[test]
fn non_ascii_translations_need_a_utf8_ctype() {
    let f = fixture();
    let l = resolve(&f, &[("LANG", "xx_XX.UTF-8"), ("LC_CTYPE", "C")]);
    assert_eq!(l.tr("count"), "count");
}

#[test]
fn name_variants_follow_gettext() {
    assert_eq!(
        name_variants("ru_RU.UTF-8"),
        ["ru_RU.UTF-8", "ru_RU.utf8", "ru_RU", "ru.UTF-8", "ru.utf8", "ru"]
    );
    assert_eq!(name_variants("de@euro"), ["de@euro", "de"]);
}

#[test]
fn this_machines_glibc_locales_when_generated() {
    // The archive as glibc reads it: every category of a generated locale,
    // and its decimal point (de_DE, fr_FR and ru_RU write a comma). Where
    // a locale is not generated, glibc's setlocale fails too.
    let f = glibc_locale::Finder::new(Path::new(glibc_locale::GLIBC_LOCALE_DIR), None);
    for name in ["de_DE.UTF-8", "ru_RU.UTF-8", "fr_FR.UTF-8"] {
        let generated = Command::new("locale").arg("-a").output().is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l == name.replace("UTF-8", "utf8"))
        });
        let all = glibc_locale::Category::ALL.iter().all(|&c| f.exists(name, c));
        assert_eq!(all, generated, "{name}");
        if generated {
            assert_eq!(f.decimal_point(name).as_deref(), Some(","), "{name}");
        }
    }
    assert!(!f.exists("qq_QQ.UTF-8", glibc_locale::Category::Numeric));
}

#[test]
fn getopt_messages_go_through_glibcs_own_catalog() {
    let f = fixture();
    let po = "msgid \"\"\nmsgstr \"Project-Id-Version: libc 2.33.9000\\n\"\n\"Content-Type: text/plain; charset=UTF-8\\n\"\n\n\
              msgid \"%s: invalid option -- '%c'\\n\"\nmsgstr \"%s: неверный ключ — «%c»\\n\"\n";
    let dir = f.catalogs.join("xx/LC_MESSAGES");
    std::fs::write(dir.join("libc.po"), po).unwrap();
    let ok = Command::new("msgfmt")
        .arg("-o")
        .arg(dir.join("libc.mo"))
        .arg(dir.join("libc.po"))
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let l = resolve(&f, &[("LANG", "xx_XX.UTF-8")]);
    let msg = "%s: invalid option -- '%c'\n";
    assert_eq!(
        text(l.libc_msg(msg, &[Arg::Str(b"p"), Arg::Str(b"x")], b"")),
        "p: неверный ключ — «x»\n"
    );
    let l = resolve(&f, &[("LANG", "yy_YY.UTF-8")]);
    assert_eq!(
        text(l.libc_msg(msg, &[Arg::Str(b"p"), Arg::Str(b"x")], b"")),
        "p: invalid option -- 'x'\n"
    );
}

#[test]
fn postgresql_catalog_projects() {
    for ok in [
        "pg_test_timing (PostgreSQL) 19",
        "PostgreSQL 17",
        "postgresql",
        "pg_test_timing (PostgreSQL 17)",
    ] {
        assert!(is_pg_test_timing(ok), "{ok}");
    }
    assert!(!is_pg_test_timing("psql (PostgreSQL) 19"));
    assert!(is_libc("GNU libc 2.34.9000") && is_libc("libc-2.33.9000") && !is_libc("libcrypt 1"));
}
