//! Catalogs built by msgfmt from small .po files, and hand-made broken ones.

use super::*;
use std::process::Command;

const PO: &str = r#"msgid ""
msgstr ""
"Project-Id-Version: pg_test_timing (PostgreSQL) 19\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && "
"n%10<=4 && (n%100<10 || n%100>=20) ? 1 : 2);\n"

msgid "count"
msgstr "число"

#, c-format
msgid "Time warp: %<PRId64> ns\n"
msgstr "Сдвиг: %<PRId64> нс\n"

msgid "untranslated"
msgstr ""

msgid "Testing %u second.\n"
msgid_plural "Testing %u seconds.\n"
msgstr[0] "one %u\n"
msgstr[1] "few %u\n"
msgstr[2] "many %u\n"
"#;

/// Compiles `po` with GNU msgfmt (the tool PostgreSQL's build uses).
fn msgfmt(po: impl AsRef<[u8]>, extra: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("x.po"), dir.path().join("x.mo"));
    std::fs::write(&src, po).unwrap();
    let out = Command::new("msgfmt")
        .args(extra)
        .arg("-o")
        .arg(&dst)
        .arg(&src)
        .output()
        .expect("msgfmt (gettext) is needed to build test catalogs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(dst).unwrap()
}

#[test]
fn reads_msgfmt_catalogs_in_both_byte_orders() {
    for endian in ["--endianness=little", "--endianness=big"] {
        let c = Catalog::parse(&msgfmt(PO, &[endian])).unwrap();
        assert_eq!(c.project, "pg_test_timing (PostgreSQL) 19");
        assert_eq!(c.get("count"), Some("число"));
        assert_eq!(c.get("untranslated"), None, "{endian}");
        // The system-dependent string, expanded as libintl does on LP64.
        assert_eq!(c.get("Time warp: %ld ns\n"), Some("Сдвиг: %ld нс\n"));
        let forms: Vec<_> = [1, 2, 5, 11, 21, 22]
            .iter()
            .map(|&n| c.get_plural("Testing %u second.\n", n).unwrap())
            .collect();
        assert_eq!(
            forms,
            ["one %u\n", "few %u\n", "many %u\n", "many %u\n", "one %u\n", "few %u\n"]
        );
    }
}

#[test]
fn broken_catalogs_are_refused_whole() {
    let good = msgfmt(PO, &[]);
    assert!(Catalog::parse(&good[..good.len() / 2]).is_err(), "truncated");
    assert!(Catalog::parse(&good[..3]).is_err());
    assert!(Catalog::parse(b"not a catalog at all").is_err());
    let mut wrong_rev = good.clone();
    wrong_rev[6] = 7;
    assert!(Catalog::parse(&wrong_rev).is_err());
    let mut bad_offset = good.clone();
    bad_offset[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(Catalog::parse(&bad_offset).is_err());
    let huge = vec![0u8; MAX_MO_BYTES as usize + 1];
    assert_eq!(Catalog::parse(&huge).unwrap_err(), BadCatalog("too large"));
}

#[test]
fn control_characters_and_bad_utf8_are_never_kept() {
    let po = "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n\
              msgid \"a\"\nmsgstr \"\\033[2Jwiped\"\n\nmsgid \"b\\n\"\nmsgstr \"fine\\n\"\n";
    let c = Catalog::parse(&msgfmt(po, &[])).unwrap();
    assert_eq!(c.get("a"), None);
    assert_eq!(c.get("b\n"), Some("fine\n"));
    let po =
        b"msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=ISO-8859-1\\n\"\n\nmsgid \"a\"\nmsgstr \"caf\xe9\"\n";
    let latin1 = msgfmt(po, &[]);
    // msgfmt keeps the catalog's own charset: Latin-1 bytes, not UTF-8.
    assert_eq!(Catalog::parse(&latin1).unwrap().get("a"), None);
}

#[test]
fn plural_expressions() {
    let p = Plural::parse(" nplurals=2; plural=n != 1;").unwrap();
    assert_eq!((p.eval(1), p.eval(0), p.eval(7)), (0, 1, 1));
    let p = Plural::parse("nplurals=3; plural=n==1 ? 0 : (n==0 || (n%100 > 0 && n%100 < 20)) ? 1 : 2;").unwrap();
    assert_eq!((p.eval(1), p.eval(0), p.eval(19), p.eval(20)), (0, 1, 1, 2));
    assert!(Plural::parse("nplurals=2; plural=n +;").is_none());
    assert!(Plural::parse("nplurals=2; plural=exit(1);").is_none());
    let deep = format!("nplurals=2; plural={}n{};", "(".repeat(500), ")".repeat(500));
    assert!(Plural::parse(&deep).is_none(), "nesting is bounded");
    assert_eq!(Plural::parse("nplurals=2; plural=n/0;").unwrap().eval(3), 0);
}
