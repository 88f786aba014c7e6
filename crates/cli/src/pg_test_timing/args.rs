//! PostgreSQL 19's pg_test_timing command line, byte for byte.
//!
//! PostgreSQL parses with glibc's `getopt_long` (options may come after
//! operands; `--dur=5` abbreviations; `-d5`; `--` ends options) and converts
//! with `strtoul`/`strtod`. clap cannot reproduce those messages and corner
//! cases, so this small parser is written by hand. Differences on purpose:
//! `--version` does not claim to be PostgreSQL, and NaN cutoffs are rejected.

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

fn line(parts: &[&[u8]]) -> Vec<u8> {
    let mut v = parts.concat();
    v.push(b'\n');
    v
}

fn try_help(prog: &[u8]) -> Vec<u8> {
    line(&[b"Try \"", prog, b" --help\" for more information."])
}

#[derive(Clone, Copy)]
enum Opt {
    Duration,
    Cutoff,
}

const LONG: [(&[u8], Opt, u8); 2] = [(b"duration", Opt::Duration, b'd'), (b"cutoff", Opt::Cutoff, b'c')];

/// Parses `argv` (including `argv[0]`) the way PostgreSQL 19's pg_test_timing does.
pub fn parse(argv: &[OsString]) -> Parsed {
    let argv0 = argv.first().map(|a| a.as_bytes()).unwrap_or(b"pg_test_timing");
    let prog = progname(OsStr::from_bytes(argv0));
    if let Some(first) = argv.get(1).map(|a| a.as_bytes()) {
        if first == b"--help" || first == b"-?" {
            let usage = line(&[b"Usage: ", &prog, b" [-d DURATION] [-c CUTOFF]"]);
            return Parsed::Print(usage);
        }
        if first == b"--version" || first == b"-V" {
            return Parsed::Print(version_line().into_bytes());
        }
    }

    let mut opts = Options::default();
    let mut operands: Vec<&[u8]> = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let arg = argv[i].as_bytes();
        i += 1;
        if arg == b"--" {
            operands.extend(argv[i..].iter().map(|a| a.as_bytes()));
            break;
        }
        if let Some(body) = arg.strip_prefix(b"--") {
            // Long option, possibly abbreviated, possibly with =value.
            let (name, inline) = match body.iter().position(|&b| b == b'=') {
                Some(p) => (&body[..p], Some(&body[p + 1..])),
                None => (body, None),
            };
            // glibc: an exact name wins; else a unique prefix; several
            // prefixes (only possible for an empty name, "--=x") are ambiguous.
            let prefixed: Vec<_> = LONG.iter().filter(|(n, _, _)| n.starts_with(name)).collect();
            let found = LONG.iter().find(|(n, _, _)| *n == name).or(match prefixed.as_slice() {
                [one] => Some(*one),
                _ => None,
            });
            if found.is_none() && prefixed.len() > 1 {
                let mut err = [argv0, b": option '", arg, b"' is ambiguous; possibilities:"].concat();
                for (n, _, _) in &prefixed {
                    err.extend([b" '--", *n, b"'"].concat());
                }
                err.push(b'\n');
                err.extend(try_help(&prog));
                return Parsed::Fail(err);
            }
            let Some(&(full, opt, _)) = found else {
                let mut err = line(&[argv0, b": unrecognized option '", arg, b"'"]);
                err.extend(try_help(&prog));
                return Parsed::Fail(err);
            };
            let value = match inline {
                Some(v) => v,
                None if i < argv.len() => {
                    i += 1;
                    argv[i - 1].as_bytes()
                }
                None => {
                    let mut err = line(&[argv0, b": option '--", full, b"' requires an argument"]);
                    err.extend(try_help(&prog));
                    return Parsed::Fail(err);
                }
            };
            if let Err(e) = apply(opt, value, &prog, &mut opts) {
                return Parsed::Fail(e);
            }
        } else if arg.len() > 1 && arg[0] == b'-' {
            // Short option: the first char after '-'; both take an argument.
            let c = arg[1];
            let opt = match c {
                b'd' => Opt::Duration,
                b'c' => Opt::Cutoff,
                _ => {
                    // glibc prints the offending byte as a char.
                    let mut err = line(&[argv0, b": invalid option -- '", &[c], b"'"]);
                    err.extend(try_help(&prog));
                    return Parsed::Fail(err);
                }
            };
            let value = if arg.len() > 2 {
                &arg[2..]
            } else if i < argv.len() {
                i += 1;
                argv[i - 1].as_bytes()
            } else {
                let mut err = line(&[argv0, b": option requires an argument -- '", &[c], b"'"]);
                err.extend(try_help(&prog));
                return Parsed::Fail(err);
            };
            if let Err(e) = apply(opt, value, &prog, &mut opts) {
                return Parsed::Fail(e);
            }
        } else {
            // glibc permutes operands to the end and keeps going.
            operands.push(arg);
        }
    }
    if let Some(first) = operands.first() {
        let mut err = line(&[&prog, b": too many command-line arguments (first is \"", first, b"\")"]);
        err.extend(try_help(&prog));
        return Parsed::Fail(err);
    }
    Parsed::Run(opts)
}

fn apply(opt: Opt, value: &[u8], prog: &[u8], opts: &mut Options) -> Result<(), Vec<u8>> {
    match opt {
        Opt::Duration => {
            let Some(v) = strtoul_u32(value) else {
                let mut err = line(&[prog, b": invalid argument for option --duration"]);
                err.extend(try_help(prog));
                return Err(err);
            };
            if v == 0 {
                return Err(line(&[prog, b": --duration must be in range 1..4294967295"]));
            }
            opts.duration_s = v;
        }
        Opt::Cutoff => {
            let Some(v) = strtod(value) else {
                let mut err = line(&[prog, b": invalid argument for option --cutoff"]);
                err.extend(try_help(prog));
                return Err(err);
            };
            // PostgreSQL's `v < 0 || v > 100` lets NaN through; we do not.
            if v.is_nan() || !(0.0..=100.0).contains(&v) {
                return Err(line(&[prog, b": --cutoff must be in range 0..100"]));
            }
            opts.cutoff_pct = v;
        }
    }
    Ok(())
}

/// C `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `strtoul(s, &end, 10)` accepted only when the whole string was consumed,
/// errno stayed 0 and the value fits an unsigned int (PostgreSQL's checks).
/// strtoul accepts leading spaces and a sign; "-5" wraps to a huge value,
/// which then fails the unsigned-int check, as in C.
pub fn strtoul_u32(s: &[u8]) -> Option<u32> {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None; // no digits, or trailing characters
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?; // ERANGE
    }
    let v = if negative { v.wrapping_neg() } else { v };
    u32::try_from(v).ok()
}

/// `strtod(s, &end)` accepted only when the whole string was consumed and
/// errno stayed 0: leading C spaces, a sign, decimal or hexadecimal floats,
/// `inf`/`infinity`/`nan`/`nan(...)`. Overflow and underflow (ERANGE) fail.
pub fn strtod(s: &[u8]) -> Option<f64> {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let rest = std::str::from_utf8(&s[i..]).ok()?;
    let (sign, body) = match rest.as_bytes().first() {
        Some(b'-') => (-1.0, &rest[1..]),
        Some(b'+') => (1.0, &rest[1..]),
        _ => (1.0, rest),
    };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(sign * f64::INFINITY);
    }
    if lower == "nan"
        || (lower.starts_with("nan(")
            && lower.ends_with(')')
            && lower[4..lower.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    {
        return Some(f64::NAN);
    }
    let value = match lower.strip_prefix("0x") {
        Some(hex) => parse_hex_float(hex)?,
        None => parse_decimal_float(body)?,
    };
    Some(sign * value)
}

fn parse_decimal_float(body: &str) -> Option<f64> {
    let b = body.as_bytes();
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_digits = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp_digits == 0 {
            return None; // strtod would stop before 'e': trailing characters
        }
        i = j + exp_digits;
    }
    if i != b.len() {
        return None;
    }
    let v: f64 = body.parse().ok()?;
    let nonzero_mantissa = b
        .iter()
        .take_while(|c| **c != b'e' && **c != b'E')
        .any(|c| (b'1'..=b'9').contains(c));
    if v.is_infinite() || (nonzero_mantissa && (v == 0.0 || v.is_subnormal())) {
        return None; // ERANGE
    }
    Some(v)
}

fn parse_hex_float(hex: &str) -> Option<f64> {
    let b = hex.as_bytes();
    let mut mantissa: f64 = 0.0;
    let mut exp: i64 = 0;
    let mut i = 0;
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_hexdigit() {
        mantissa = mantissa * 16.0 + (b[i] as char).to_digit(16)? as f64;
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            mantissa = mantissa * 16.0 + (b[i] as char).to_digit(16)? as f64;
            exp -= 4;
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && b[i] == b'p' {
        let mut j = i + 1;
        let neg = j < b.len() && b[j] == b'-';
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == start {
            return None;
        }
        let e: i64 = hex[start..j].parse().ok()?;
        exp += if neg { -e } else { e };
        i = j;
    }
    if i != b.len() {
        return None;
    }
    let v = mantissa * 2f64.powi(exp.clamp(-2000, 2000) as i32);
    if v.is_infinite() || (mantissa != 0.0 && (v == 0.0 || v.is_subnormal())) {
        return None;
    }
    Some(v)
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
        assert_eq!(run(&["p", "-d", " +4294967295"]).duration_s, u32::MAX);
        assert_eq!(run(&["p", "-d", "2", "-d", "3"]).duration_s, 3);
    }

    #[test]
    fn help_and_version_only_as_first_argument() {
        assert_eq!(
            parse(&args(&["/usr/bin/pg_test_timing", "--help"])),
            Parsed::Print(b"Usage: pg_test_timing [-d DURATION] [-c CUTOFF]\n".to_vec())
        );
        assert_eq!(
            parse(&args(&["pg_test_timing", "-?"])),
            Parsed::Print(b"Usage: pg_test_timing [-d DURATION] [-c CUTOFF]\n".to_vec())
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
        for bad in ["", "abc", "5%", "1e", "1e400", "1e-400", "0x", "."] {
            assert_eq!(fail(&["pg_test_timing", "-c", bad]), invalid, "{bad:?}");
        }
        let range = "pg_test_timing: --cutoff must be in range 0..100\n";
        for bad in ["-1", "100.0001", "inf", "-inf", "nan", "NaN", "nan(123)"] {
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
    fn empty_long_name_is_ambiguous_and_progname_is_kept_verbatim() {
        assert_eq!(
            fail(&["pg_test_timing", "--=5"]),
            format!("pg_test_timing: option '--=5' is ambiguous; possibilities: '--duration' '--cutoff'\n{TRY}")
        );
        // get_progname strips ".exe" only on Windows.
        assert_eq!(
            parse(&args(&["/opt/pg15.exe", "--help"])),
            Parsed::Print(b"Usage: pg15.exe [-d DURATION] [-c CUTOFF]\n".to_vec())
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
