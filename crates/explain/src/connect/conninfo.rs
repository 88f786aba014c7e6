//! libpq's conninfo lexer: every `key=value` of a conninfo string (values
//! optionally single-quoted, backslash escapes) or of a URI's query
//! (`?key=value&...`, percent-encoded), and the DSN without some of them.
//!
//! Written by hand: the client library's parser is private, and it rejects
//! libpq keys it does not know (`sslrootcert`, `service`, `passfile`, ...),
//! which [`super::resolve`] reads itself and removes before the client
//! library parses the rest.

use std::ops::Range;

/// One `key=value` of a conninfo string or a URI's query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub(crate) key: String,
    pub(crate) value: String,
    /// The raw text of the whole pair in the DSN.
    pub(crate) pair_span: Range<usize>,
}

fn is_uri(dsn: &str) -> bool {
    dsn.starts_with("postgresql://") || dsn.starts_with("postgres://")
}

/// `dsn` without the pairs whose key is in `keys` (a URI's query is rebuilt
/// from the remaining pairs).
pub(crate) fn strip_params(dsn: &str, params: &[Param], keys: &[&str]) -> String {
    if is_uri(dsn) {
        let Some(q) = dsn.find('?') else {
            return dsn.to_string();
        };
        let kept: Vec<&str> = params
            .iter()
            .filter(|p| !keys.contains(&p.key.as_str()))
            .map(|p| &dsn[p.pair_span.clone()])
            .collect();
        let mut out = dsn[..q].to_string();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
        return out;
    }
    let mut out = dsn.to_string();
    for p in params.iter().rev() {
        if keys.contains(&p.key.as_str()) {
            out.replace_range(p.pair_span.clone(), " ");
        }
    }
    out
}

/// Every `key=value` of a libpq conninfo string or of a URI's query, in
/// order. `None` when the text does not parse (the client library then
/// reports the error).
pub(crate) fn dsn_params(dsn: &str) -> Option<Vec<Param>> {
    if is_uri(dsn) {
        uri_params(dsn)
    } else {
        conninfo_params(dsn)
    }
}

/// The pairs of a URI's query, percent-decoded.
fn uri_params(dsn: &str) -> Option<Vec<Param>> {
    let mut found = Vec::new();
    let Some(q) = dsn.find('?') else {
        return Some(found);
    };
    let query_start = q + 1;
    let mut pos = query_start;
    for pair in dsn[query_start..].split('&') {
        if let Some((k, v)) = pair.split_once('=') {
            found.push(Param {
                key: percent_decode(k)?,
                value: percent_decode(v)?,
                pair_span: pos..pos + pair.len(),
            });
        }
        pos += pair.len() + 1;
    }
    Some(found)
}

/// The pairs of a conninfo string: `key = value` separated by white space.
fn conninfo_params(dsn: &str) -> Option<Vec<Param>> {
    let bytes = dsn.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    loop {
        i = skip_space(bytes, i);
        if i >= bytes.len() {
            return Some(found);
        }
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let this_key = &dsn[key_start..i];
        i = skip_space(bytes, i);
        if bytes.get(i) != Some(&b'=') {
            return None;
        }
        i = skip_space(bytes, i + 1);
        let (value, end) = if bytes.get(i) == Some(&b'\'') {
            quoted_value(bytes, i + 1)?
        } else {
            bare_value(bytes, i)
        };
        i = end;
        found.push(Param {
            key: this_key.to_string(),
            value: String::from_utf8(value).ok()?,
            pair_span: key_start..i,
        });
    }
}

/// The first index at or after `i` that is not white space.
fn skip_space(bytes: &[u8], i: usize) -> usize {
    i + bytes.iter().skip(i).take_while(|b| b.is_ascii_whitespace()).count()
}

/// A single-quoted value starting after its opening quote at `i`: its bytes
/// (backslash escapes resolved) and the index after the closing quote;
/// `None` when the quote is never closed.
fn quoted_value(bytes: &[u8], mut i: usize) -> Option<(Vec<u8>, usize)> {
    let mut value = Vec::new();
    loop {
        match bytes.get(i) {
            None => return None,
            Some(b'\'') => break,
            Some(b'\\') => {
                value.push(*bytes.get(i + 1)?);
                i += 2;
            }
            Some(&b) => {
                value.push(b);
                i += 1;
            }
        }
    }
    Some((value, i + 1))
}

/// An unquoted value starting at `i`, up to white space: its bytes
/// (backslash escapes resolved) and the index after it.
fn bare_value(bytes: &[u8], mut i: usize) -> (Vec<u8>, usize) {
    let mut value = Vec::new();
    while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            i += 1;
        }
        value.push(bytes[i]);
        i += 1;
    }
    (value, i)
}

/// `%XX` decoding of a URI component; `None` for a bad escape or non-UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last value of `key`, and the raw text of its pair.
    fn dsn_param<'a>(dsn: &'a str, key: &str) -> Option<(&'a str, String)> {
        dsn_params(dsn)?
            .into_iter()
            .rev()
            .find(|p| p.key == key)
            .map(|p| (&dsn[p.pair_span], p.value))
    }

    #[test]
    fn libpq_only_keys_are_removed_before_the_client_parses() {
        let own = super::super::OWN_KEYS;
        let dsn = "host=db sslrootcert='/a b' user=u sslkey=/k passfile=/p";
        let params = dsn_params(dsn).unwrap();
        let stripped = strip_params(dsn, &params, &own);
        assert_eq!(stripped.split_whitespace().collect::<Vec<_>>(), ["host=db", "user=u"]);
        let uri = "postgresql://u@db/x?sslcert=%2Fc&connect_timeout=3&service=s";
        let params = dsn_params(uri).unwrap();
        assert_eq!(
            strip_params(uri, &params, &own),
            "postgresql://u@db/x?connect_timeout=3"
        );
        let uri = "postgresql://u@db/x?service=s";
        assert_eq!(
            strip_params(uri, &dsn_params(uri).unwrap(), &own),
            "postgresql://u@db/x"
        );
    }

    #[test]
    fn dsn_params_are_read_as_libpq_writes_them() {
        let value = |dsn: &str, key: &str| dsn_param(dsn, key).map(|(_, v)| v);
        assert_eq!(value("a=1 sslmode=x b=2", "sslmode").as_deref(), Some("x"));
        assert_eq!(value("sslmode = 'a b\\'c' x=1", "sslmode").as_deref(), Some("a b'c"));
        assert_eq!(value("sslmode=a sslmode=b", "sslmode").as_deref(), Some("b"));
        assert_eq!(value("password='sslmode=x'", "sslmode"), None);
        assert_eq!(
            value("postgres://h/db?a=1&ssl%6dode=verify%2Dfull", "sslmode").as_deref(),
            Some("verify-full")
        );
        assert_eq!(value("postgres://h/db", "sslmode"), None);
        assert_eq!(value("broken 'x", "sslmode"), None);
        let dsn = "host=/tmp sslmode='allow' user=u";
        let (pair, _) = dsn_param(dsn, "sslmode").unwrap();
        assert_eq!(pair, "sslmode='allow'");
        let uri = "postgres://h/db?a=1&sslmode=require";
        assert_eq!(dsn_param(uri, "sslmode").unwrap().0, "sslmode=require");
    }
}
