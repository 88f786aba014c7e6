//! pg_test_timing's number conversions: the C library's own `strtoul` and
//! `strtod`, with PostgreSQL's acceptance checks around them.
//!
//! PostgreSQL accepts `-d` when `strtoul(arg, &end, 10)` consumed the whole
//! argument, left `errno` at 0 and fits an `unsigned int`; and `-c` when
//! `strtod(arg, &end)` consumed the whole argument and left `errno` at 0.
//! Calling the C library itself (glibc on Linux) gives its exact grammar by
//! construction: leading white space, a sign, `-5` wrapping to a huge value,
//! decimal and hexadecimal floats (`0x1p-1074`), `inf`, `infinity`, `nan`,
//! `nan(chars)`, and `ERANGE` on overflow and on inexact underflow.
//!
//! This process never calls `setlocale`, so both run in the C locale: `.` is
//! the decimal point. PostgreSQL's `set_pglocale_pgservice` calls
//! `setlocale(LC_ALL, "")`, so under a locale with a decimal comma (`de_DE`)
//! its `strtod` wants `99,5` and its `printf` prints commas; in the C, POSIX
//! and English locales the two agree.

use std::ffi::CString;

/// `strtoul(s, &end, 10)` accepted as PostgreSQL accepts `--duration`:
/// the whole string consumed, `errno` still 0, and the value fits an
/// `unsigned int`. `None` is PostgreSQL's "invalid argument"; zero is
/// returned as `Some(0)` (the caller's range message).
pub fn strtoul_u32(s: &[u8]) -> Option<u32> {
    let value = convert_whole(s, |start, end| {
        // SAFETY: `start` is a NUL-terminated string that outlives the call
        // and `end` points to a live `*mut c_char`; strtoul only reads the
        // string and writes `end`.
        unsafe { libc::strtoul(start, end, 10) }
    })?;
    u32::try_from(value).ok()
}

/// `strtod(s, &end)` accepted as PostgreSQL accepts `--cutoff`: the whole
/// string consumed and `errno` still 0. NaN and infinities pass through;
/// the caller applies the range check.
pub fn strtod(s: &[u8]) -> Option<f64> {
    convert_whole(s, |start, end| {
        // SAFETY: as in `strtoul_u32`: a live NUL-terminated string and a
        // live end pointer; strtod only reads the one and writes the other.
        unsafe { libc::strtod(start, end) }
    })
}

/// Runs the C conversion `convert(start, &end)` on `s` with `errno` cleared
/// first; its value when it consumed all of `s` (and `s` is not empty) and
/// left `errno` at 0, as PostgreSQL checks `end == arg || *end != '\0' ||
/// errno != 0`. A real argv cannot hold a NUL byte; a string that does
/// (only possible through the library API) is rejected rather than cut short.
fn convert_whole<T>(s: &[u8], convert: impl FnOnce(*const libc::c_char, *mut *mut libc::c_char) -> T) -> Option<T> {
    let c = CString::new(s).ok()?;
    let start = c.as_ptr();
    let mut end: *mut libc::c_char = std::ptr::null_mut();
    let errno = errno_location();
    // SAFETY: `errno_location` returns this thread's errno, always valid.
    unsafe { *errno = 0 };
    let value = convert(start, &mut end);
    // SAFETY: as above; read right after the call, before any other libc call.
    let errno_set = unsafe { *errno } != 0;
    let consumed = (end as usize).wrapping_sub(start as usize);
    (!errno_set && !s.is_empty() && !end.is_null() && consumed == s.len()).then_some(value)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn errno_location() -> *mut libc::c_int {
    // SAFETY: a plain libc accessor with no preconditions.
    unsafe { libc::__errno_location() }
}

#[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
fn errno_location() -> *mut libc::c_int {
    // SAFETY: a plain libc accessor with no preconditions.
    unsafe { libc::__error() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_string_errno_and_width_checks() {
        assert_eq!(strtoul_u32(b" +42"), Some(42));
        assert_eq!(strtoul_u32(b"0"), Some(0));
        assert_eq!(strtoul_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(strtoul_u32(b"4294967296"), None, "wider than unsigned int");
        assert_eq!(strtoul_u32(b"-1"), None, "wraps to ULONG_MAX");
        assert_eq!(strtoul_u32(b"99999999999999999999"), None, "ERANGE");
        assert_eq!(strtoul_u32(b"7 "), None, "trailing space is not consumed");
        assert_eq!(strtoul_u32(b""), None);
        assert_eq!(strtod(b"0x1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(strtod(b"1e-320"), None, "inexact underflow: ERANGE");
        assert_eq!(strtod(b"1e309"), None, "overflow: ERANGE");
        assert_eq!(strtod(b"infinity"), Some(f64::INFINITY));
        assert!(strtod(b"nan(abc)").is_some_and(f64::is_nan));
        assert_eq!(strtod(b"   "), None, "nothing converted");
    }

    #[test]
    fn errno_left_by_an_earlier_call_does_not_leak_in() {
        assert_eq!(strtod(b"1e400"), None);
        assert_eq!(strtod(b"50"), Some(50.0));
    }

    #[test]
    fn an_embedded_nul_is_rejected_not_cut_short() {
        assert_eq!(strtoul_u32(b"5\0x"), None);
        assert_eq!(strtod(b"5\0"), None);
    }
}
