//! PostgreSQL 19's pg_test_timing command line (`handle_args`), byte for
//! byte: `--help`/`-?` and `--version`/`-V` as the first argument only, then
//! glibc's `getopt_long` ([`getopt`](super::getopt)) with `-d`/`--duration`
//! converted by `strtoul` and `-c`/`--cutoff` by `strtod`
//! ([`c_numbers`](super::c_numbers)), PostgreSQL's messages and exit code 1.
//!
//! Differences on purpose: `--version` does not claim to be PostgreSQL; a NaN
//! cutoff (`nan`, `-nan`, `nan(...)`) is rejected with PostgreSQL's range
//! message. PostgreSQL's check `v < 0 || v > 100` is false for NaN, so it
//! accepts it, prints `Observed timing durations up to NaN%:` (its own
//! printf) and, as no running percentage is `>= NaN`, lists every exact
//! duration: a cutoff that cannot be met, which we refuse as bad input.

use super::c_numbers::{strtod, strtoul_u32};
use super::getopt::{GetoptLong, Item, LongOption, Ordering};
use super::locale::PgLocale;
use super::printf::Arg;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// Parsed options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    /// `-d`: seconds per clock.
    pub duration_s: u32,
    /// `-c`: percent of the exact-duration list to print.
    pub cutoff_pct: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            duration_s: 3,
            cutoff_pct: 99.99,
        }
    }
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    Run(Options),
    /// Print this to stdout and exit 0 (`--help`, `--version`).
    Print(Vec<u8>),
    /// Print these bytes to stderr and exit 1.
    Fail(Vec<u8>),
}

/// The version line: ours, not PostgreSQL's.
pub fn version_line() -> String {
    format!("pg_test_timing (clockscope) {}\n", env!("CARGO_PKG_VERSION"))
}

/// PostgreSQL's `get_progname` on Unix: the last path component, as bytes
/// (it strips ".exe" only on Windows).
pub fn progname(argv0: &OsStr) -> Vec<u8> {
    let bytes = argv0.as_bytes();
    bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes).to_vec()
}

const TRY_HELP: &str = "Try \"%s --help\" for more information.\n";

/// pg_test_timing's option table: `"c:d:"` and its long names, in 19.0's
/// order (3277e69b8e, "Fix options listing of pg_test_timing --cutoff").
const SHORTS: &[u8] = b"cd";
const LONGS: [LongOption; 2] = [
    LongOption {
        name: b"cutoff",
        short: b'c',
    },
    LongOption {
        name: b"duration",
        short: b'd',
    },
];

/// Parses `argv` (including `argv[0]`) the way PostgreSQL 19's pg_test_timing
/// does with glibc's default ordering (`POSIXLY_CORRECT` unset), in the C
/// locale.
pub fn parse(argv: &[OsString]) -> Parsed {
    parse_with(argv, Ordering::Permute, &PgLocale::c())
}

/// [`parse`] with the operand ordering given (the binary passes
/// [`Ordering::from_env`]) and PostgreSQL's locale: its messages through the
/// catalog, `-c` read with the locale's decimal point as `strtod` reads it.
pub fn parse_with(argv: &[OsString], ordering: Ordering, l: &PgLocale) -> Parsed {
    let args: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    let prog = progname(OsStr::from_bytes(args.first().copied().unwrap_or(b"pg_test_timing")));
    let p = Arg::Str(&prog);
    if let Some(&first) = args.get(1) {
        if first == b"--help" || first == b"-?" {
            return Parsed::Print(l.msg("Usage: %s [-c CUTOFF] [-d DURATION]\n", &[p]));
        }
        if first == b"--version" || first == b"-V" {
            return Parsed::Print(version_line().into_bytes());
        }
    }

    let mut opts = Options::default();
    let mut getopt = GetoptLong::new(&args, SHORTS, &LONGS, ordering);
    while let Some(item) = getopt.next() {
        let result = match item {
            Item::Option(b'd', value) => duration(value, l, p).map(|d| opts.duration_s = d),
            Item::Option(_, value) => cutoff(value, l, p).map(|c| opts.cutoff_pct = c),
            Item::Error(english) => {
                // glibc's own message, through glibc's catalog as its getopt does.
                let mut message = match getopt.last_error() {
                    Some(m) => {
                        let args: Vec<Arg> = m.args.iter().map(|a| Arg::Str(a)).collect();
                        l.libc_msg(m.msgid, &args, &m.tail)
                    }
                    None => english,
                };
                message.extend(l.msg(TRY_HELP, &[p]));
                Err(message)
            }
        };
        if let Err(message) = result {
            return Parsed::Fail(message);
        }
    }
    if let Some(first) = getopt.operands().first() {
        let mut err = l.msg(
            "%s: too many command-line arguments (first is \"%s\")\n",
            &[p, Arg::Str(first)],
        );
        err.extend(l.msg(TRY_HELP, &[p]));
        return Parsed::Fail(err);
    }
    Parsed::Run(opts)
}

/// "invalid argument for option" with the Try line.
fn invalid(l: &PgLocale, p: Arg<'_>, option: &str) -> Vec<u8> {
    let mut err = l.msg(
        "%s: invalid argument for option %s\n",
        &[p, Arg::Str(option.as_bytes())],
    );
    err.extend(l.msg(TRY_HELP, &[p]));
    err
}

/// `-d`: PostgreSQL's two messages, "invalid argument" (with the Try line)
/// and the range message for 0 (without).
fn duration(value: &[u8], l: &PgLocale, p: Arg<'_>) -> Result<u32, Vec<u8>> {
    let Some(v) = strtoul_u32(value) else {
        return Err(invalid(l, p, "--duration"));
    };
    if v == 0 {
        let range = [p, Arg::Str(b"--duration"), Arg::Int(1), Arg::Int(u32::MAX.into())];
        return Err(l.msg("%s: %s must be in range %u..%u\n", &range));
    }
    Ok(v)
}

/// The argument as the C library's `strtod` sees it in a locale whose
/// radix character is `decimal_point`: that sequence reads as `.`, and a
/// `.` (not the radix there) as a byte `strtod` stops at.
fn in_c_locale(value: &[u8], decimal_point: &str) -> Vec<u8> {
    if decimal_point == "." {
        return value.to_vec();
    }
    let dp = decimal_point.as_bytes();
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        if value[i..].starts_with(dp) {
            out.push(b'.');
            i += dp.len();
        } else {
            out.push(if value[i] == b'.' { 0x01 } else { value[i] });
            i += 1;
        }
    }
    out
}

/// `-c`: "invalid argument" (with the Try line), and the range message for
/// values outside 0..100 and, unlike PostgreSQL, NaN (see the module doc).
fn cutoff(value: &[u8], l: &PgLocale, p: Arg<'_>) -> Result<f64, Vec<u8>> {
    let Some(v) = strtod(&in_c_locale(value, &l.decimal_point)) else {
        return Err(invalid(l, p, "--cutoff"));
    };
    if v.is_nan() || !(0.0..=100.0).contains(&v) {
        let range = [p, Arg::Str(b"--cutoff"), Arg::Int(0), Arg::Int(100)];
        return Err(l.msg("%s: %s must be in range %u..%u\n", &range));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn fail(list: &[&str]) -> String {
        match parse(&args(list)) {
            Parsed::Fail(e) => String::from_utf8(e).unwrap(),
            other => panic!("expected failure for {list:?}, got {other:?}"),
        }
    }

    fn run(list: &[&str]) -> Options {
        match parse(&args(list)) {
            Parsed::Run(o) => o,
            other => panic!("expected run for {list:?}, got {other:?}"),
        }
    }

    const TRY: &str = "Try \"pg_test_timing --help\" for more information.\n";

    #[test]
    fn defaults_and_forms() {
        assert_eq!(
            run(&["pg_test_timing"]),
            Options {
                duration_s: 3,
                cutoff_pct: 99.99
            }
        );
        assert_eq!(run(&["p", "-d", "5"]).duration_s, 5);
        assert_eq!(run(&["p", "-d5"]).duration_s, 5);
        assert_eq!(run(&["p", "--duration=7"]).duration_s, 7);
        assert_eq!(run(&["p", "--duration", "7"]).duration_s, 7);
        assert_eq!(run(&["p", "--dur=8"]).duration_s, 8);
        assert_eq!(run(&["p", "--c", "50"]).cutoff_pct, 50.0);
        assert_eq!(run(&["p", "-c", "0"]).cutoff_pct, 0.0);
        assert_eq!(run(&["p", "-c", "100"]).cutoff_pct, 100.0);
        assert_eq!(run(&["p", "-c", " 1e1"]).cutoff_pct, 10.0);
        assert_eq!(run(&["p", "-c", "0x1p3"]).cutoff_pct, 8.0);
        // glibc's strtod: exact subnormals set no ERANGE; -0 is not below 0.
        assert_eq!(run(&["p", "-c", "0x1p-1074"]).cutoff_pct, f64::from_bits(1));
        let negative_zero = run(&["p", "-c", "-0"]).cutoff_pct;
        assert!(negative_zero == 0.0 && negative_zero.is_sign_negative());
        assert_eq!(run(&["p", "-c", "\t+0x1.8p1"]).cutoff_pct, 3.0);
        assert_eq!(run(&["p", "-c", "1e-300"]).cutoff_pct, 1e-300);
        // strtoul wraps a negative value: -(2^64 - 1) is 1.
        assert_eq!(run(&["p", "-d", "-18446744073709551615"]).duration_s, 1);
        assert_eq!(run(&["p", "-d", " +4294967295"]).duration_s, u32::MAX);
        assert_eq!(run(&["p", "-d", "2", "-d", "3"]).duration_s, 3);
    }

    #[test]
    fn help_and_version_only_as_first_argument() {
        assert_eq!(
            parse(&args(&["/usr/bin/pg_test_timing", "--help"])),
            Parsed::Print(b"Usage: pg_test_timing [-c CUTOFF] [-d DURATION]\n".to_vec())
        );
        assert_eq!(
            parse(&args(&["pg_test_timing", "-?"])),
            Parsed::Print(b"Usage: pg_test_timing [-c CUTOFF] [-d DURATION]\n".to_vec())
        );
        assert_eq!(
            parse(&args(&["pg_test_timing", "-V"])),
            Parsed::Print(version_line().into_bytes())
        );
        assert!(!version_line().contains("PostgreSQL"));
        assert_eq!(
            fail(&["pg_test_timing", "-d", "1", "--help"]),
            format!("pg_test_timing: unrecognized option '--help'\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "-d", "1", "-?"]),
            format!("pg_test_timing: invalid option -- '?'\n{TRY}")
        );
    }

    #[test]
    fn duration_errors() {
        let invalid = format!("pg_test_timing: invalid argument for option --duration\n{TRY}");
        for bad in [
            "",
            "abc",
            "5x",
            "-5",
            "4294967296",
            "99999999999999999999999",
            "0x10",
            "1.5",
        ] {
            assert_eq!(fail(&["pg_test_timing", "-d", bad]), invalid, "{bad:?}");
        }
        for zero in ["0", "-0", "+0", "000"] {
            assert_eq!(
                fail(&["pg_test_timing", "-d", zero]),
                "pg_test_timing: --duration must be in range 1..4294967295\n"
            );
        }
    }

    #[test]
    fn cutoff_errors() {
        let invalid = format!("pg_test_timing: invalid argument for option --cutoff\n{TRY}");
        // Not all consumed, nothing consumed, or ERANGE (overflow, inexact underflow).
        for bad in [
            "",
            " ",
            "abc",
            "5%",
            "1e",
            "1e400",
            "1e-400",
            "1e-320",
            "4.9e-324",
            "0x1p-1075",
            "0x",
            ".",
            "1,5",
        ] {
            assert_eq!(fail(&["pg_test_timing", "-c", bad]), invalid, "{bad:?}");
        }
        let range = "pg_test_timing: --cutoff must be in range 0..100\n";
        for bad in [
            "-1", "100.0001", "inf", "-inf", "INFINITY", "nan", "-nan", "NaN", "nan(123)", "1e308",
        ] {
            assert_eq!(fail(&["pg_test_timing", "-c", bad]), range, "{bad:?}");
        }
    }

    #[test]
    fn getopt_errors() {
        assert_eq!(
            fail(&["./pg_test_timing", "-x"]),
            format!("./pg_test_timing: invalid option -- 'x'\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "--foo=1"]),
            format!("pg_test_timing: unrecognized option '--foo=1'\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "-d"]),
            format!("pg_test_timing: option requires an argument -- 'd'\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "--cutoff"]),
            format!("pg_test_timing: option '--cutoff' requires an argument\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "--cut"]),
            format!("pg_test_timing: option '--cutoff' requires an argument\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "foo", "-d", "1", "bar"]),
            format!("pg_test_timing: too many command-line arguments (first is \"foo\")\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "--", "-d"]),
            format!("pg_test_timing: too many command-line arguments (first is \"-d\")\n{TRY}")
        );
        assert_eq!(
            fail(&["pg_test_timing", "-"]),
            format!("pg_test_timing: too many command-line arguments (first is \"-\")\n{TRY}")
        );
        // An option error comes before the operand error, as getopt permutes.
        assert_eq!(
            fail(&["pg_test_timing", "foo", "-x"]),
            format!("pg_test_timing: invalid option -- 'x'\n{TRY}")
        );
    }

    #[test]
    fn posixly_correct_stops_at_the_first_operand() {
        let argv = args(&["pg_test_timing", "foo", "-x"]);
        assert_eq!(
            parse_with(&argv, Ordering::RequireOrder, &PgLocale::c()),
            Parsed::Fail(
                format!("pg_test_timing: too many command-line arguments (first is \"foo\")\n{TRY}").into_bytes()
            )
        );
        let argv = args(&["pg_test_timing", "-d", "0", "foo"]);
        assert_eq!(
            parse_with(&argv, Ordering::RequireOrder, &PgLocale::c()),
            Parsed::Fail(b"pg_test_timing: --duration must be in range 1..4294967295\n".to_vec())
        );
    }

    #[test]
    fn empty_long_name_is_ambiguous_and_progname_is_kept_verbatim() {
        assert_eq!(
            fail(&["pg_test_timing", "--=5"]),
            format!("pg_test_timing: option '--=5' is ambiguous; possibilities: '--cutoff' '--duration'\n{TRY}")
        );
        // get_progname strips ".exe" only on Windows.
        assert_eq!(
            parse(&args(&["/opt/pg15.exe", "--help"])),
            Parsed::Print(b"Usage: pg15.exe [-c CUTOFF] [-d DURATION]\n".to_vec())
        );
        assert_eq!(fail(&["", "-d", "0"]), ": --duration must be in range 1..4294967295\n");
    }

    #[test]
    fn non_utf8_never_panics() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![0xff, 0xfe, b'x']);
        for v in [
            vec![OsString::from("pg_test_timing"), bad.clone()],
            vec![OsString::from("pg_test_timing"), OsString::from("-d"), bad.clone()],
            vec![OsString::from("pg_test_timing"), OsString::from("-c"), bad.clone()],
            vec![bad.clone(), OsString::from("-z")],
        ] {
            assert!(matches!(parse(&v), Parsed::Fail(_)));
        }
        match parse(&[OsString::from("pg_test_timing"), bad]) {
            Parsed::Fail(e) => {
                assert!(e.starts_with(b"pg_test_timing: too many command-line arguments (first is \"\xff\xfex\")"))
            }
            _ => unreachable!(),
        }
    }
}
