//! The C library's `printf` for the formats pg_test_timing's messages use,
//! so a message and its translation are formatted as PostgreSQL's `printf`
//! formats them: `%s %d %u %ld %lld %llu`, `%.Nf` with the locale's decimal
//! point (`LC_NUMERIC`), `%*s`/`%*d` padding counted in **bytes** (so a
//! Cyrillic header comes out misaligned exactly as PostgreSQL's does),
//! `%%`, and the positional `%N$` a translation may use.
//!
//! Hand-written: no crate formats C format strings at run time with a
//! locale's radix character, and the set used here is small and fixed.

/// One argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    /// `%s` (bytes: a program name need not be UTF-8).
    Str(&'a [u8]),
    /// `%d`, `%u`, `%ld`, `%lld`, `%llu` (any C integer).
    Int(i128),
    /// `%f` with a precision.
    Float(f64),
}

/// What a conversion consumes, to compare a translation's conversions with
/// its msgid's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// `%s`.
    #[default]
    Str,
    /// Any integer conversion.
    Int,
    /// `%f`.
    Float,
    /// The `*` width.
    Width,
}

/// One parsed conversion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Spec {
    /// `%N$`: 1-based argument position.
    position: Option<usize>,
    /// `*`: the width comes from the next argument.
    star_width: bool,
    width: Option<usize>,
    left: bool,
    precision: Option<usize>,
    kind: Kind,
}

impl Spec {
    /// The argument index this conversion takes: its `%N$` position, else
    /// the next one (`next`, then counted on).
    fn arg(&self, next: &mut usize) -> usize {
        match self.position {
            Some(p) => p - 1,
            None => {
                *next += 1;
                *next - 1
            }
        }
    }
}

/// Parses `fmt` into literal pieces and conversions; `None` for anything
/// outside the supported set (a bad translation, so the msgid is used).
fn parse(fmt: &str) -> Option<Vec<Result<&str, Spec>>> {
    let mut out = Vec::new();
    let mut rest = fmt;
    while let Some(i) = rest.find('%') {
        if i > 0 {
            out.push(Ok(&rest[..i]));
        }
        let b = rest.as_bytes();
        let mut j = i + 1;
        if b.get(j) == Some(&b'%') {
            out.push(Ok("%"));
            rest = &rest[j + 1..];
            continue;
        }
        let digits = |j: &mut usize| -> Option<usize> {
            let start = *j;
            while b.get(*j).is_some_and(u8::is_ascii_digit) {
                *j += 1;
            }
            (start < *j).then(|| rest[start..*j].parse().ok()).flatten()
        };
        let mut spec = Spec::default();
        let save = j;
        if let Some(n) = digits(&mut j) {
            if b.get(j) == Some(&b'$') && n > 0 {
                spec.position = Some(n);
                j += 1;
            } else {
                j = save;
            }
        }
        while let Some(&f) = b.get(j) {
            match f {
                b'-' => spec.left = true,
                b'0' | b' ' | b'+' | b'#' => {}
                _ => break,
            }
            j += 1;
        }
        if b.get(j) == Some(&b'*') {
            spec.star_width = true;
            j += 1;
        } else {
            spec.width = digits(&mut j);
        }
        if b.get(j) == Some(&b'.') {
            j += 1;
            spec.precision = Some(digits(&mut j).unwrap_or(0));
        }
        while b.get(j) == Some(&b'l') || b.get(j) == Some(&b'z') {
            j += 1;
        }
        spec.kind = match b.get(j)? {
            // `%c` takes a one-byte string here (getopt's option letter).
            b's' | b'c' => Kind::Str,
            b'd' | b'i' | b'u' => Kind::Int,
            b'f' => Kind::Float,
            _ => return None,
        };
        out.push(Err(spec));
        rest = &rest[j + 1..];
    }
    if !rest.is_empty() {
        out.push(Ok(rest));
    }
    Some(out)
}

/// The kinds of the arguments `fmt` consumes, in argument order; `None`
/// when it cannot be formatted here.
pub fn signature(fmt: &str) -> Option<Vec<Kind>> {
    let mut kinds: Vec<Option<Kind>> = Vec::new();
    let mut next = 0usize;
    for piece in parse(fmt)? {
        let Err(spec) = piece else { continue };
        let mut put = |at: usize, k: Kind| -> Option<()> {
            kinds.resize(kinds.len().max(at + 1), None);
            if kinds[at].is_some_and(|old| old != k) {
                return None;
            }
            kinds[at] = Some(k);
            Some(())
        };
        if spec.star_width {
            if spec.position.is_some() {
                return None;
            }
            put(next, Kind::Width)?;
            next += 1;
        }
        put(spec.arg(&mut next), spec.kind)?;
    }
    kinds.into_iter().collect()
}

/// `%.{prec}f` as glibc prints it, with `decimal_point` as the radix
/// character: `inf`, `-inf`, `nan` or `-nan` (the sign bit of the NaN)
/// for the values that are not finite.
pub fn c_float(value: f64, prec: usize, decimal_point: &str) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    // Rust's fixed-precision formatting is exact and rounds half to even on
    // the exact binary value, as glibc's printf does.
    format!("{value:.prec$}").replacen('.', decimal_point, 1)
}

/// Pads `s` to `width` **bytes**, on the left (or the right for `%-`).
fn pad(out: &mut Vec<u8>, s: &[u8], width: usize, left: bool) {
    let fill = width.saturating_sub(s.len());
    if left {
        out.extend_from_slice(s);
    }
    out.extend(std::iter::repeat_n(b' ', fill));
    if !left {
        out.extend_from_slice(s);
    }
}

/// Formats `fmt` with `args` as C's `printf` would in a locale whose decimal
/// point is `decimal_point`. `None` when `fmt` needs arguments of other
/// kinds than `args` are, or more of them.
pub fn format(fmt: &str, args: &[Arg<'_>], decimal_point: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut next = 0usize;
    for piece in parse(fmt)? {
        let spec = match piece {
            Ok(lit) => {
                out.extend_from_slice(lit.as_bytes());
                continue;
            }
            Err(spec) => spec,
        };
        let mut width = spec.width.unwrap_or(0);
        let mut left = spec.left;
        if spec.star_width {
            let Arg::Int(w) = *args.get(next)? else { return None };
            next += 1;
            left |= w < 0;
            width = usize::try_from(w.unsigned_abs()).ok()?;
        }
        let text = match (spec.kind, *args.get(spec.arg(&mut next))?) {
            (Kind::Str, Arg::Str(s)) => s.to_vec(),
            (Kind::Int, Arg::Int(i)) => i.to_string().into_bytes(),
            (Kind::Float, Arg::Float(f)) => c_float(f, spec.precision.unwrap_or(6), decimal_point).into_bytes(),
            _ => return None,
        };
        pad(&mut out, &text, width, left);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_glibc_does() {
        let f = |fmt, args: &[Arg]| String::from_utf8(format(fmt, args, ".").unwrap()).unwrap();
        assert_eq!(f("%0.2f ns", &[Arg::Float(63.0751)]), "63.08 ns");
        assert_eq!(f("%*.4f|", &[Arg::Int(10), Arg::Float(99.99)]), "   99.9900|");
        assert_eq!(f("%.1f%%", &[Arg::Float(12.25)]), "12.2%");
        assert_eq!(f("%2$s %1$s", &[Arg::Str(b"a"), Arg::Str(b"b")]), "b a");
        assert_eq!(f("%*lld", &[Arg::Int(6), Arg::Int(-5)]), "    -5");
        assert_eq!(f("%ld ns", &[Arg::Int(-20)]), "-20 ns");
        assert_eq!(format("%0.2f", &[Arg::Float(1.5)], ",").unwrap(), b"1,50");
        assert_eq!(c_float(f64::INFINITY, 2, ","), "inf");
        assert_eq!(c_float(-f64::NAN, 2, "."), "-nan");
    }

    #[test]
    fn pads_in_bytes_as_printf_does() {
        // "число" is 5 characters, 10 bytes: no padding at width 10.
        let f = |w, s: &str| {
            String::from_utf8(format("%*s|", &[Arg::Int(w), Arg::Str(s.as_bytes())], ".").unwrap()).unwrap()
        };
        assert_eq!(f(10, "число"), "число|");
        assert_eq!(f(8, "count"), "   count|");
    }

    #[test]
    fn signatures_compare_a_translation_with_its_msgid() {
        assert_eq!(
            signature("%s: %s must be in range %u..%u\n"),
            Some(vec![Kind::Str, Kind::Str, Kind::Int, Kind::Int])
        );
        assert_eq!(signature("%2$s %1$u"), Some(vec![Kind::Int, Kind::Str]));
        assert_eq!(signature("%n"), None);
        assert_eq!(signature("%1$s %1$d"), None);
        assert_eq!(signature("%3$s"), None, "a gap in the positions");
        assert!(format("%s %s", &[Arg::Str(b"x")], ".").is_none(), "too few arguments");
    }
}
