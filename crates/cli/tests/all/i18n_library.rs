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
                } else if n == "x" || n.ends_with("_x") {
                    (n, format!("0x{:x}", i + 0x1a), format!("0x{:x}", i + 0x1a))
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

/// The first run of four English words in a row in `s` (punctuation around
/// a word ignored), or `None`: a Russian sentence keeps only names, flags
/// and quoted log text in Latin letters, never a clause.
fn english_run(s: &str) -> Option<String> {
    let mut run: Vec<&str> = Vec::new();
    for w in s.split_whitespace() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic()) {
            run.push(w);
            if run.len() >= 4 {
                return Some(run.join(" "));
            }
        } else {
            run.clear();
        }
    }
    None
}

/// `english` said in Russian, with no English clause left.
fn assert_all_russian(english: &str) {
    let said = with_language(ru(), || reason(english));
    assert!(has_cyrillic(&said), "{english:?} stayed {said:?}");
    assert_eq!(english_run(&said), None, "{english:?} is partly English: {said:?}");
}

mod kernel_log_meanings {
    use super::*;
    use clockscope_system::kernel_log::meaning::event_meaning;
    use clockscope_system::kernel_log::{Facts, Kind, Machine};

    const KINDS: [Kind; 53] = [
        Kind::WatchdogMarkedUnstable,
        Kind::WatchdogSkewReported,
        Kind::WatchdogRetried,
        Kind::WatchdogReadbackUnstable,
        Kind::WatchdogSkewTestSkipped,
        Kind::WatchdogLongReadout,
        Kind::WatchdogCoarseCheck,
        Kind::ClocksourceSyncCheck,
        Kind::ClocksourceSyncAhead,
        Kind::ClocksourceSyncBehind,
        Kind::ClocksourceSyncDurations,
        Kind::ClocksourceSyncNotEnoughCpus,
        Kind::ClocksourceSwitched,
        Kind::OverrideNotHrt,
        Kind::OverrideUnstableNotHrt,
        Kind::OverrideDeferred,
        Kind::ClocksourceRegistered,
        Kind::TscDetectedProcessor,
        Kind::TscDetectedTsc,
        Kind::TscRefined,
        Kind::TscFastCalibrationOk,
        Kind::TscFastCalibrationFailed,
        Kind::TscPitUnable,
        Kind::TscNoReference,
        Kind::TscReferenceFailed,
        Kind::TscReferenceCalibration,
        Kind::TscPitMatches,
        Kind::TscPitValue,
        Kind::TscPitDeviates,
        Kind::TscMarkedUnstable,
        Kind::TscRecalibrateMismatch,
        Kind::TscRecalibrated,
        Kind::TscAsyncResets,
        Kind::TscSyncPassed,
        Kind::TscSyncWarp,
        Kind::TscSyncSkipped,
        Kind::TscAdjustForceZero,
        Kind::TscAdjustNotForced,
        Kind::TscAdjustDiffers,
        Kind::TscAdjustSynchronize,
        Kind::TscAdjustRestored,
        Kind::TscAdjustCompensate,
        Kind::HypervisorDetected,
        Kind::ParavirtKernel,
        Kind::KvmClock,
        Kind::XenVersion,
        Kind::HypervFeatures,
        Kind::HypervisorTscFrequency,
        Kind::FirmwareBugP0,
        Kind::TscDeadlineTimer,
        Kind::TscUnstableAfterBoot,
        Kind::SchedClockUnstable,
        Kind::ArchTimer,
    ];

    /// Fails to compile when the library adds a kind that [`KINDS`] lacks.
    #[allow(dead_code)]
    fn listed(k: Kind) {
        use Kind as K;
        match k {
            K::WatchdogMarkedUnstable
            | K::WatchdogSkewReported
            | K::WatchdogRetried
            | K::WatchdogReadbackUnstable
            | K::WatchdogSkewTestSkipped
            | K::WatchdogLongReadout
            | K::WatchdogCoarseCheck
            | K::ClocksourceSyncCheck
            | K::ClocksourceSyncAhead
            | K::ClocksourceSyncBehind
            | K::ClocksourceSyncDurations
            | K::ClocksourceSyncNotEnoughCpus
            | K::ClocksourceSwitched
            | K::OverrideNotHrt
            | K::OverrideUnstableNotHrt
            | K::OverrideDeferred
            | K::ClocksourceRegistered
            | K::TscDetectedProcessor
            | K::TscDetectedTsc
            | K::TscRefined
            | K::TscFastCalibrationOk
            | K::TscFastCalibrationFailed
            | K::TscPitUnable
            | K::TscNoReference
            | K::TscReferenceFailed
            | K::TscReferenceCalibration
            | K::TscPitMatches
            | K::TscPitValue
            | K::TscPitDeviates
            | K::TscMarkedUnstable
            | K::TscRecalibrateMismatch
            | K::TscRecalibrated
            | K::TscAsyncResets
            | K::TscSyncPassed
            | K::TscSyncWarp
            | K::TscSyncSkipped
            | K::TscAdjustForceZero
            | K::TscAdjustNotForced
            | K::TscAdjustDiffers
            | K::TscAdjustSynchronize
            | K::TscAdjustRestored
            | K::TscAdjustCompensate
            | K::HypervisorDetected
            | K::ParavirtKernel
            | K::KvmClock
            | K::XenVersion
            | K::HypervFeatures
            | K::HypervisorTscFrequency
            | K::FirmwareBugP0
            | K::TscDeadlineTimer
            | K::TscUnstableAfterBoot
            | K::SchedClockUnstable
            | K::ArchTimer => {}
        }
    }

    /// Every (kind, message, facts) whose meaning differs: each kind with no
    /// facts, the facts a meaning names, and the message texts a meaning
    /// reads (the reasons the kernel gives, every clocksource switched to).
    fn cases() -> Vec<(Kind, String, Facts)> {
        let mut out: Vec<(Kind, String, Facts)> = KINDS.iter().map(|&k| (k, String::new(), Facts::default())).collect();
        let facts = |f: fn(&mut Facts)| {
            let mut x = Facts::default();
            f(&mut x);
            x
        };
        for k in [Kind::WatchdogRetried, Kind::WatchdogSkewTestSkipped] {
            out.push((k, String::new(), facts(|f| f.watchdog = Some("hpet".into()))));
        }
        for k in [Kind::OverrideNotHrt, Kind::OverrideUnstableNotHrt] {
            out.push((k, String::new(), facts(|f| f.clocksource = Some("tsc".into()))));
        }
        for k in [Kind::HypervisorDetected, Kind::ParavirtKernel] {
            for h in ["bare hardware", "KVM"] {
                let f = Facts {
                    hypervisor: Some(h.to_string()),
                    ..Facts::default()
                };
                out.push((k, String::new(), f));
            }
        }
        out.push((
            Kind::ClocksourceRegistered,
            String::new(),
            facts(|f| f.clocksource = Some("kvm-clock".into())),
        ));
        for why in [
            "clocksource watchdog",
            "check_tsc_sync_source failed",
            "cpufreq changes",
            "TSC halts in idle",
            "running on Hyper-V",
            "could not calculate TSC khz",
            "unsynchronized TSC",
            "backwards tsc",
            "boot parameter",
            "gremlins",
        ] {
            out.push((
                Kind::TscMarkedUnstable,
                format!("tsc: Marking TSC unstable due to {why}"),
                Facts::default(),
            ));
        }
        for cs in [
            "tsc",
            "tsc-early",
            "kvm-clock",
            "xen",
            "hyperv_clocksource_tsc_page",
            "arch_sys_counter",
            "hyperv_clocksource_msr",
            "hpet",
            "acpi_pm",
            "jiffies",
            "other_clock",
        ] {
            out.push((
                Kind::ClocksourceSwitched,
                format!("clocksource: Switched to clocksource {cs}"),
                Facts::default(),
            ));
        }
        for cs in ["tsc", "tsc-early", "hpet"] {
            out.push((
                Kind::WatchdogMarkedUnstable,
                format!(
                    "clocksource: timekeeping watchdog on CPU0: Marking clocksource '{cs}' as unstable because the \
                     skew is too large:"
                ),
                Facts::default(),
            ));
        }
        for line in [
            "TSC deadline timer available",
            "TSC_DEADLINE disabled due to Errata; please update microcode to version: 0xb2 (or later)",
        ] {
            out.push((Kind::TscDeadlineTimer, line.to_string(), Facts::default()));
        }
        out
    }

    #[test]
    fn every_meaning_of_every_kernel_log_event_kind_is_russian() {
        let mut said = 0;
        for (kind, message, facts) in cases() {
            for machine in [Machine::BareMetal, Machine::Guest, Machine::Unknown] {
                let meaning = event_meaning(kind, &message, &facts, machine);
                if meaning.is_empty() {
                    continue;
                }
                assert_eq!(in_english(|| reason(&meaning)), meaning);
                if meaning.ends_with("gremlins. clock_gettime no longer reads it") {
                    // The kernel's own reason is quoted as it wrote it.
                    let ru = with_language(ru(), || reason(&meaning));
                    assert!(
                        ru.starts_with("ядро перестало доверять TSC: причина по словам ядра: gremlins"),
                        "{ru}"
                    );
                    continue;
                }
                assert_all_russian(&meaning);
                said += 1;
            }
        }
        assert!(said > 150, "{said} meanings");
    }
}

#[test]
fn the_tsc_reports_of_every_recorded_cpuid_dump_are_russian() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../system/tests/data/cpuid");
    let mut dumps: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    dumps.sort();
    assert!(dumps.len() >= 10, "{dumps:?}");
    for dump in &dumps {
        let o = run(
            &["tsc", "-v", "--cpuid-dump", dump.to_str().unwrap()],
            &[("LANG", "ru_RU.UTF-8")],
        );
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(!text.is_empty(), "{dump:?}: {}", String::from_utf8_lossy(&o.stderr));
        // The report's lines, each sentence whole (the wrap joined again);
        // the dump's own header names its file and format.
        let joined = text.lines().skip(1).map(str::trim).collect::<Vec<_>>().join(" ");
        assert_eq!(english_run(&joined), None, "{dump:?}:\n{text}");
    }
}

#[test]
fn ntp_calibration_interference_and_the_explain_model_are_russian() {
    use clockscope_system::linux::ntp::{NtpState, RawTimex};
    for (state, status, freq) in [(0, 0, 65536 * 12), (0, 0, -65536 * 3), (0, 0x40, 0), (5, 0x40, 655)] {
        let n = NtpState::from_raw(&RawTimex {
            state,
            status,
            freq,
            maxerror: 16_000,
            esterror: 120,
            offset: 0,
        });
        assert_all_russian(&n.meaning);
    }
    for english in [
        "converged: within 0.412 ppm over a 187.500 ms window (target 1 ppm)",
        "converged to 3.033 ppm over a 13.517 ms window, above the 1 ppm target: budget spent",
        "did not converge: the budget ended before a second anchor was read (12 reads; budget spent)",
        "converged: 3 estimates in a row within 100 ppm of the previous one, after 3001 passes",
        "45.0% of the run lost in 120 gaps > 1000 ns; 31 of 32 cgroup periods throttled (2.30 s); steal 0.03 s; \
         40 involuntary context switches",
        "3 runs within the 1 s budget, kept run 2 (0.25 s)",
        "6 slices (90 ms in all) pinned to CPUs 0, 1 in turn; the pairs of CPU 1, which ran the plain work fastest \
         (CPU 0: TIMING OFF row 38.0 ns, 1.52x, +19.0 ns per row)",
        "95% interval 18.2 to 20.4 ns, +-5.6%",
        "not resolved: the 95% interval of the difference, -1.5 to 3.0 ns per row, includes 0: TIMING ON's cost is \
         inside the noise",
        clockscope_cli::commands::check::judge::DEFAULT_BASELINE_SOURCE,
        "partial result: interrupted after 1.3 s of 10 s",
        "6 slices (75 ms in all), one before the first run of each of the server's pairs (of alternating order), so \
         the model and the server sample the same time; each slice pinned to the CPU the server's backend last ran \
         on (CPU 0: 10 pairs, CPU 1: 20 pairs)",
        "CLOCK_REALTIME was stepped 2 time(s) during the window (first +1000.000 ms at 3.2 s: settimeofday, \
         clock_settime or an NTP step): no rate against REALTIME",
    ] {
        assert_all_russian(english);
    }
}
