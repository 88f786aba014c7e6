//! The sentences the libraries write in English, and the bodies of one-line
//! errors, in Russian (crates/cli/src/i18n/library.rs): every marked msgid
//! is found by its own English and said with its translation, the
//! libraries' own sentences (their `Display` and labels, as they are today)
//! are translated, English is left as it was, and an error line under
//! `--lang ru` or `LANG=ru_RU.UTF-8` is Russian, one line, naming its option
//! or value, with the exit code of English.

use clockscope_cli::i18n::library::{error_body, has_adjacent_placeholders, msgids, reason};
use clockscope_cli::i18n::{format, gettext, in_english, localize_number, with_language, Lang};
use std::fmt::Display;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_clockscope");

fn ru() -> Lang {
    Lang::from_code("ru").unwrap()
}

fn has_cyrillic(s: &str) -> bool {
    s.chars().any(|c| ('\u{400}'..='\u{4ff}').contains(&c))
}

/// The `{name}` placeholders of a msgid, in order.
fn placeholders(msgid: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = msgid;
    while let Some(i) = rest.find('{') {
        let Some(end) = rest[i..].find('}') else { break };
        out.push(&rest[i + 1..i + end]);
        rest = &rest[i + end + 1..];
    }
    out
}

#[test]
fn every_marked_msgid_is_found_by_its_own_english_and_translated() {
    let mut checked = 0;
    for msgid in msgids() {
        assert!(
            !has_adjacent_placeholders(msgid),
            "two placeholders side by side: {msgid:?}"
        );
        // A number where the name asks for one (said with the locale's
        // separator), a token no msgid matches elsewhere.
        let names = placeholders(msgid);
        let values: Vec<(&str, String, String)> = names
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                if n == "n" || n.ends_with("_n") {
                    let v = format!("{}.5", i + 7);
                    let said = with_language(ru(), || localize_number(v.clone()));
                    (n, v, said)
                } else {
                    (n, format!("Q{i}"), format!("Q{i}"))
                }
            })
            .collect();
        let english_args: Vec<(String, String)> = values.iter().map(|v| (v.0.to_string(), v.1.clone())).collect();
        let russian_args: Vec<(String, String)> = values.iter().map(|v| (v.0.to_string(), v.2.clone())).collect();
        let fill = |template: &str, a: &[(String, String)]| {
            let dyn_args: Vec<(&str, &dyn Display)> = a.iter().map(|(n, v)| (n.as_str(), v as &dyn Display)).collect();
            format(template, &dyn_args)
        };
        let english = fill(msgid, &english_args);
        assert_eq!(in_english(|| reason(&english)), english, "English is left as it was");
        let want = with_language(ru(), || fill(gettext(msgid), &russian_args));
        assert_eq!(with_language(ru(), || reason(&english)), want, "msgid {msgid:?}");
        checked += 1;
    }
    assert!(checked > 150, "{checked} msgids");
}

/// `english` in Russian: translated, with no word of the English left but
/// the ones given.
fn assert_russian(english: &str) {
    let said = with_language(ru(), || reason(english));
    assert!(has_cyrillic(&said) && said != english, "{english:?} stayed {said:?}");
}

#[test]
fn the_libraries_own_sentences_are_translated() {
    use clockscope::ClockError;
    for e in [
        ClockError::OtherArchitecture("CNTVCT_EL0"),
        ClockError::NotSupportedByCpu("RDTSCP", "CPUID 0x80000001 EDX bit 27 (RDTSCP) is clear"),
        ClockError::NotSupportedByKernel("CLOCK_TAI", "Invalid argument".into()),
        ClockError::NoFrequency("RDTSC"),
    ] {
        assert_russian(&e.to_string());
    }
    assert_eq!(
        with_language(ru(), || reason(&ClockError::NoFrequency("RDTSC").to_string())),
        "частота RDTSC неизвестна"
    );
    use clockscope_system::tsc::source::SourceId;
    for s in SourceId::ALL.into_iter().filter(|s| *s != SourceId::Cpuid15) {
        assert_russian(s.label());
    }
    use clockscope_system::kernel_log::Machine;
    for m in [Machine::BareMetal, Machine::Guest, Machine::Unknown] {
        assert_russian(m.label());
    }
    // sweep's judge refuses without root in these words.
    let e = clockscope_cli::commands::sweep::require_root(1000).unwrap_err();
    let said = with_language(ru(), || error_body(&[e.to_string()]));
    assert!(
        has_cyrillic(&said) && said.contains("--apply") && said.contains("1000"),
        "{said}"
    );
    assert_eq!(in_english(|| error_body(&[e.to_string()])), e.to_string());
}

#[test]
fn a_sentence_inside_a_sentence_is_translated_and_numbers_take_the_comma() {
    let answer =
        "1 package (package 0): no package pair to compare; its CPUs agree within ±90 ns; 2 pairs inconclusive";
    assert_eq!(
        with_language(ru(), || reason(answer)),
        "1 сокет (сокет 0): нет пары сокетов для сравнения; его процессоры согласованы в пределах ±90 нс; без \
         ответа пар: 2"
    );
    let rec = "tsc 23.9 ns (95% interval 23.8 to 24.0) has the lowest read cost measured, apart from the next \
               (kvm-clock 27.7 ns (95% interval 27.6 to 28.1))";
    assert_eq!(
        with_language(ru(), || reason(rec)),
        "у tsc 23,9 нс (95% интервал от 23,8 до 24,0) наименьшая замеренная цена чтения, отличимая от следующего \
         (kvm-clock 27,7 нс (95% интервал от 27,6 до 28,1))"
    );
    // Two joiners match alike (`a: b; c`): the one that leaves less English.
    assert_eq!(
        with_language(ru(), || error_body(&[
            "--query: is empty; give one SELECT (or VALUES, TABLE, WITH ...) statement".to_string()
        ])),
        "--query: пуст; укажите один оператор SELECT (или VALUES, TABLE, WITH ...)"
    );
    // Worded otherwise: left in English rather than half-guessed.
    let other = "1 package (package 0): its CPUs were never compared";
    assert_eq!(with_language(ru(), || reason(other)), other);
}

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    for v in ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"] {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied()).args(args).output().unwrap()
}

/// Exit 2, one line on stderr, nothing on stdout; the line.
fn one_error_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err:?}");
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    err
}

#[test]
fn error_lines_in_russian_name_the_option_or_value_on_one_line_with_the_same_exit_code() {
    let dir = tempfile_dir();
    let missing = dir.join("missing.log");
    let missing = missing.to_str().unwrap();
    let unwritable = dir.join("no-such-dir/report.txt");
    let unwritable = unwritable.to_str().unwrap();
    let dir_s = dir.to_str().unwrap();
    // (arguments, what the line must name, a Russian word it must have)
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["-d", "0"], "'--duration <SECONDS>'", "положительной"),
        (vec!["-d", "5x"], "'x'", "неизвестная единица"),
        (vec!["--format", "xml"], "'--format <FORMAT>'", "допустимые значения"),
        (vec!["--clock", "nope"], "'nope'", "неизвестные часы"),
        (vec!["cross-cpu", "--cpus", "0"], "'--cpus <LIST>'", "для пары нужно"),
        (vec!["cross-cpu", "--cpus", "3-1"], "'3-1'", "кончается раньше"),
        (vec!["dmesg", missing], missing, "Нет такого файла"),
        (vec!["dmesg", dir_s], dir_s, "это каталог"),
        (vec!["clocks", "-o", unwritable], "--output", "Нет такого файла"),
        (vec!["bogus"], "'bogus'", "неизвестная подкоманда"),
    ];
    for (args, names, word) in cases {
        let english = one_error_line(&run(&[&args[..], &["--lang", "en"]].concat(), &[]));
        assert!(
            english.starts_with("clockscope: error: ") && english.contains(names),
            "{english}"
        );
        assert!(!has_cyrillic(&english), "{english}");
        let russian = one_error_line(&run(&[&args[..], &["--lang", "ru"]].concat(), &[]));
        assert!(russian.starts_with("clockscope: ошибка: "), "{russian}");
        assert!(russian.contains(names) && russian.contains(word), "{args:?}: {russian}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn the_sweep_locks_refusal_is_said_in_russian() {
    use clockscope_system::linux::clocksource::SwitchLock;
    use std::os::unix::fs::PermissionsExt;
    // A tree whose lock would sit in a directory anyone may write to.
    let dir = tempfile_dir();
    std::fs::create_dir_all(dir.join("sys")).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let Err(e) = SwitchLock::acquire(&dir.join("sys")) else {
        panic!("a lock in a directory anyone may write to was taken");
    };
    let english = e.to_string();
    assert!(english.starts_with("cannot take the sweep lock "), "{english}");
    assert_eq!(in_english(|| error_body(std::slice::from_ref(&english))), english);
    let said = with_language(ru(), || error_body(std::slice::from_ref(&english)));
    assert!(
        said.starts_with("не удалось взять блокировку sweep ")
            && said.contains("могут писать другие пользователи (режим 777, без sticky-бита)")
            && said.contains(dir.to_str().unwrap()),
        "{said}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "explain")]
#[test]
fn a_server_that_cannot_be_reached_is_said_in_russian() {
    let dir = tempfile_dir();
    let dsn = format!("host={} port=1", dir.display());
    let russian = one_error_line(&run(&["explain", "--dsn", &dsn, "--lang", "ru"], &[]));
    assert!(
        russian.starts_with("clockscope: ошибка: не удалось подключиться к PostgreSQL по адресу host=")
            && russian.contains("port=1"),
        "{russian}"
    );
    let english = one_error_line(&run(&["explain", "--dsn", &dsn, "--lang", "en"], &[]));
    assert!(
        english.starts_with("clockscope: error: cannot connect to PostgreSQL at host="),
        "{english}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_locale_of_the_process_chooses_the_language_of_an_error_line() {
    let installed = Command::new("locale")
        .arg("-a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_lowercase());
    if !installed.is_ok_and(|l| l.lines().any(|x| x == "ru_ru.utf8")) {
        skip!("the_locale_of_the_process_chooses_the_language_of_an_error_line: ru_RU.UTF-8 is not installed");
    }
    let ru = one_error_line(&run(&["-d", "0"], &[("LANG", "ru_RU.UTF-8")]));
    assert!(
        ru.starts_with("clockscope: ошибка: недопустимое значение '0' для '--duration"),
        "{ru}"
    );
    let c = one_error_line(&run(&["-d", "0"], &[("LANG", "ru_RU.UTF-8"), ("LC_ALL", "C")]));
    assert_eq!(
        c,
        "clockscope: error: invalid value '0' for '--duration <SECONDS>': '0' must be a positive duration\n"
    );
    // `--lang en` wins over the environment, before the arguments parse too.
    let en = one_error_line(&run(&["--lang=en", "-d", "0"], &[("LANG", "ru_RU.UTF-8")]));
    assert_eq!(en, c);
}

/// A fresh directory of this test process.
fn tempfile_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "clockscope-i18n-library-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}
