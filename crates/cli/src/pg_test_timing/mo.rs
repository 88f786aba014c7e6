//! GNU gettext message catalogs (`.mo`), read as libintl reads them: both
//! byte orders, revision 0 and 1, the system-dependent strings of revision 1
//! (`%<PRId64>`, which msgfmt stores apart and libintl expands to `ld` on
//! 64-bit Linux), plural forms through the header's `Plural-Forms`
//! expression, and no translation for an empty msgstr.
//!
//! Hand-written and bounded rather than the `gettext` crate: that crate
//! skips revision-1 system-dependent strings (so PostgreSQL's `Time warp`
//! would stay English), pulls in the unmaintained `encoding` crate, and
//! reads an unbounded file. Here the file is at most [`MAX_MO_BYTES`],
//! every offset is checked, and any inconsistency rejects the whole catalog
//! (the caller then prints English). Entries that are not UTF-8 or hold
//! control characters other than newline and tab are dropped, so a hostile
//! catalog never puts raw bytes on the terminal.

use std::collections::HashMap;

/// Largest catalog read (PostgreSQL's biggest, the backend's, is under 1 MiB).
pub const MAX_MO_BYTES: u64 = 4 << 20;
/// Most strings accepted in one catalog.
const MAX_STRINGS: u32 = 200_000;
const MAGIC: u32 = 0x9504_12de;

/// A parsed catalog.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// msgid (the singular, for plural entries) -> its translations.
    entries: HashMap<String, Vec<String>>,
    /// The header's `Project-Id-Version`.
    pub project: String,
    plural: Option<Plural>,
}

/// Why a catalog was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadCatalog(pub &'static str);

struct Reader<'a> {
    data: &'a [u8],
    big_endian: bool,
}

impl Reader<'_> {
    fn u32_at(&self, off: u64) -> Result<u32, BadCatalog> {
        let off = usize::try_from(off).map_err(|_| BadCatalog("offset"))?;
        let b: [u8; 4] = self
            .data
            .get(off..off.checked_add(4).ok_or(BadCatalog("offset"))?)
            .ok_or(BadCatalog("truncated"))?
            .try_into()
            .map_err(|_| BadCatalog("truncated"))?;
        Ok(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    fn bytes(&self, off: u32, len: u32) -> Result<&[u8], BadCatalog> {
        let (off, len) = (off as usize, len as usize);
        self.data
            .get(off..off.checked_add(len).ok_or(BadCatalog("offset"))?)
            .ok_or(BadCatalog("truncated"))
    }

    /// The string of descriptor `i` of the table at `table`.
    fn string(&self, table: u32, i: u32) -> Result<&[u8], BadCatalog> {
        let at = table as u64 + i as u64 * 8;
        let len = self.u32_at(at)?;
        let off = self.u32_at(at + 4)?;
        self.bytes(off, len)
    }

    /// A revision-1 system-dependent string, expanded (`None`: a segment
    /// this platform does not define, which libintl skips too).
    fn sysdep_string(&self, table: u32, i: u32, segments: &[Option<String>]) -> Result<Option<Vec<u8>>, BadCatalog> {
        let desc = self.u32_at(table as u64 + i as u64 * 4)? as u64;
        let mut static_at = self.u32_at(desc)?;
        let mut out = Vec::new();
        for pair in 0..64u64 {
            let segsize = self.u32_at(desc + 4 + pair * 8)?;
            let sysdepref = self.u32_at(desc + 8 + pair * 8)?;
            out.extend_from_slice(self.bytes(static_at, segsize)?);
            static_at = static_at.checked_add(segsize).ok_or(BadCatalog("offset"))?;
            if sysdepref == u32::MAX {
                while out.last() == Some(&0) {
                    out.pop();
                }
                return Ok(Some(out));
            }
            match segments.get(sysdepref as usize).ok_or(BadCatalog("segment"))? {
                Some(v) => out.extend_from_slice(v.as_bytes()),
                None => return Ok(None),
            }
        }
        Err(BadCatalog("too many segments"))
    }
}

/// libintl's `get_sysdep_segment_value` for the `<inttypes.h>` names on
/// 64-bit Linux (`PRId64` -> `ld`, `PRIu32` -> `u`, ...).
fn sysdep_segment_value(name: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(name).ok()?.trim_end_matches('\0');
    let rest = name.strip_prefix("PRI")?;
    let mut chars = rest.chars();
    let conv = chars.next().filter(|c| "diouxX".contains(*c))?;
    let size = chars.as_str();
    let prefix = match size {
        "8" | "16" | "32" | "LEAST8" | "LEAST16" | "LEAST32" | "FAST8" => "",
        "64" | "LEAST64" | "FAST16" | "FAST32" | "FAST64" | "MAX" | "PTR" => "l",
        _ => return None,
    };
    Some(format!("{prefix}{conv}"))
}

/// Text safe to print: UTF-8 without control characters but newline and tab.
fn clean(bytes: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(bytes).ok()?;
    (!s.chars().any(|c| c.is_control() && c != '\n' && c != '\t')).then_some(s)
}

impl Catalog {
    /// Parses a whole `.mo` file.
    pub fn parse(data: &[u8]) -> Result<Catalog, BadCatalog> {
        if data.len() as u64 > MAX_MO_BYTES {
            return Err(BadCatalog("too large"));
        }
        let le = Reader {
            data,
            big_endian: false,
        };
        let r = match le.u32_at(0)? {
            MAGIC => le,
            m if m.swap_bytes() == MAGIC => Reader { data, big_endian: true },
            _ => return Err(BadCatalog("not a .mo file")),
        };
        let revision = r.u32_at(4)?;
        if revision >> 16 > 1 || revision & 0xffff > 1 {
            return Err(BadCatalog("unknown revision"));
        }
        let (n, orig, trans) = (r.u32_at(8)?, r.u32_at(12)?, r.u32_at(16)?);
        if n > MAX_STRINGS {
            return Err(BadCatalog("too many strings"));
        }
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(n as usize);
        for i in 0..n {
            pairs.push((r.string(orig, i)?.to_vec(), r.string(trans, i)?.to_vec()));
        }
        if revision & 0xffff == 1 {
            let (nseg, segtab) = (r.u32_at(28)?, r.u32_at(32)?);
            let (nsys, origsys, transsys) = (r.u32_at(36)?, r.u32_at(40)?, r.u32_at(44)?);
            if nseg > 1000 || nsys > MAX_STRINGS {
                return Err(BadCatalog("too many strings"));
            }
            let segments: Vec<Option<String>> = (0..nseg)
                .map(|i| r.string(segtab, i).map(sysdep_segment_value))
                .collect::<Result<_, _>>()?;
            for i in 0..nsys {
                let id = r.sysdep_string(origsys, i, &segments)?;
                let tr = r.sysdep_string(transsys, i, &segments)?;
                if let (Some(id), Some(tr)) = (id, tr) {
                    pairs.push((id, tr));
                }
            }
        }
        Ok(Catalog::from_pairs(pairs))
    }

    fn from_pairs(pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Catalog {
        let mut c = Catalog::default();
        for (id, tr) in pairs {
            if id.is_empty() {
                let header = String::from_utf8_lossy(&tr);
                for line in header.lines() {
                    if let Some(v) = line.strip_prefix("Project-Id-Version:") {
                        c.project = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("Plural-Forms:") {
                        c.plural = Plural::parse(v);
                    }
                }
                continue;
            }
            // msgctxt entries ("ctx\x04msgid") are never looked up here.
            if id.contains(&4) || tr.is_empty() {
                continue;
            }
            let singular = id.split(|&b| b == 0).next().unwrap_or_default();
            let forms: Option<Vec<String>> = tr.split(|&b| b == 0).map(|f| clean(f).map(str::to_string)).collect();
            if let (Some(key), Some(forms)) = (clean(singular), forms) {
                c.entries.insert(key.to_string(), forms);
            }
        }
        c
    }

    /// `gettext`: the translation of `msgid`, if any.
    pub fn get(&self, msgid: &str) -> Option<&str> {
        self.entries
            .get(msgid)?
            .first()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// `ngettext`: the plural form for `n`, if translated.
    pub fn get_plural(&self, msgid: &str, n: u64) -> Option<&str> {
        let forms = self.entries.get(msgid)?;
        let (nplurals, index) = match &self.plural {
            Some(p) => (p.nplurals, p.eval(n)),
            None => (2, u64::from(n != 1)),
        };
        let index = if index >= nplurals { 0 } else { index };
        forms.get(index as usize).map(String::as_str).filter(|s| !s.is_empty())
    }
}

/// A `Plural-Forms` header: `nplurals=N; plural=EXPR;`.
#[derive(Clone, Debug)]
struct Plural {
    nplurals: u64,
    expr: Expr,
}

#[derive(Clone, Debug)]
enum Expr {
    N,
    Num(u64),
    Not(Box<Expr>),
    Bin(u8, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

impl Plural {
    fn parse(header: &str) -> Option<Plural> {
        let mut nplurals = None;
        let mut expr = None;
        for part in header.split(';') {
            let part = part.trim();
            if let Some(v) = part.strip_prefix("nplurals=") {
                nplurals = v.trim().parse::<u64>().ok().filter(|&n| (1..=100).contains(&n));
            } else if let Some(v) = part.strip_prefix("plural=") {
                let tokens = tokenize(v)?;
                let mut p = Parser {
                    t: &tokens,
                    i: 0,
                    depth: 0,
                };
                let e = p.cond()?;
                (p.i == tokens.len()).then_some(())?;
                expr = Some(e);
            }
        }
        Some(Plural {
            nplurals: nplurals?,
            expr: expr?,
        })
    }

    fn eval(&self, n: u64) -> u64 {
        self.expr.eval(n)
    }
}

impl Expr {
    fn eval(&self, n: u64) -> u64 {
        match self {
            Expr::N => n,
            Expr::Num(v) => *v,
            Expr::Not(e) => u64::from(e.eval(n) == 0),
            Expr::Cond(c, a, b) => {
                if c.eval(n) != 0 {
                    a.eval(n)
                } else {
                    b.eval(n)
                }
            }
            Expr::Bin(op, a, b) => {
                let (x, y) = (a.eval(n), b.eval(n));
                match op {
                    b'|' => u64::from(x != 0 || y != 0),
                    b'&' => u64::from(x != 0 && y != 0),
                    b'=' => u64::from(x == y),
                    b'!' => u64::from(x != y),
                    b'<' => u64::from(x < y),
                    b'>' => u64::from(x > y),
                    b'l' => u64::from(x <= y),
                    b'g' => u64::from(x >= y),
                    b'+' => x.wrapping_add(y),
                    b'-' => x.wrapping_sub(y),
                    b'*' => x.wrapping_mul(y),
                    b'/' => x.checked_div(y).unwrap_or(0),
                    _ => x.checked_rem(y).unwrap_or(0),
                }
            }
        }
    }
}

/// Tokens: `n`, numbers, and operators as one byte (`l` `<=`, `g` `>=`,
/// `=` `==`, `!` `!=` when followed by `=` else logical not `N`).
fn tokenize(s: &str) -> Option<Vec<(u8, u64)>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let two = b.get(i + 1).copied();
        i += 1;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => {}
            b'n' => out.push((b'n', 0)),
            b'0'..=b'9' => {
                let mut v = u64::from(c - b'0');
                while let Some(d) = b.get(i).filter(|d| d.is_ascii_digit()) {
                    v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                    i += 1;
                }
                out.push((b'#', v));
            }
            b'|' | b'&' if two == Some(c) => {
                i += 1;
                out.push((c, 0));
            }
            b'=' | b'!' if two == Some(b'=') => {
                i += 1;
                out.push((c, 0));
            }
            b'!' => out.push((b'N', 0)),
            b'<' | b'>' if two == Some(b'=') => {
                i += 1;
                out.push((if c == b'<' { b'l' } else { b'g' }, 0));
            }
            b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'?' | b':' | b'(' | b')' => out.push((c, 0)),
            _ => return None,
        }
    }
    Some(out)
}

struct Parser<'a> {
    t: &'a [(u8, u64)],
    i: usize,
    depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.t.get(self.i).map(|t| t.0)
    }

    fn cond(&mut self) -> Option<Expr> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let c = self.binary(0)?;
        let e = if self.peek() == Some(b'?') {
            self.i += 1;
            let a = self.cond()?;
            (self.peek() == Some(b':')).then_some(())?;
            self.i += 1;
            let b = self.cond()?;
            Expr::Cond(Box::new(c), Box::new(a), Box::new(b))
        } else {
            c
        };
        self.depth -= 1;
        Some(e)
    }

    /// C's precedence levels, lowest first.
    const LEVELS: [&'static [u8]; 6] = [b"|", b"&", b"=!", b"<>lg", b"+-", b"*/%"];

    fn binary(&mut self, level: usize) -> Option<Expr> {
        if level == Self::LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Some(op) = self.peek().filter(|op| Self::LEVELS[level].contains(op)) {
            self.i += 1;
            let right = self.binary(level + 1)?;
            left = Expr::Bin(op, Box::new(left), Box::new(right));
        }
        Some(left)
    }

    fn unary(&mut self) -> Option<Expr> {
        let (tok, v) = *self.t.get(self.i)?;
        self.i += 1;
        match tok {
            b'n' => Some(Expr::N),
            b'#' => Some(Expr::Num(v)),
            b'N' => Some(Expr::Not(Box::new(self.unary()?))),
            b'(' => {
                let e = self.cond()?;
                (self.peek() == Some(b')')).then_some(())?;
                self.i += 1;
                Some(e)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "mo_tests.rs"]
mod tests;
