//! The small SQL lexer of `--query`'s side-effect checks (see
//! [`super`]): comments, string literals (`'...'`, `E'...'`, `B'...'`,
//! `U&'...'`, dollar quotes) skipped, identifiers (quoted, `U&"..."`,
//! unquoted lower-cased), operators and the punctuation that marks a call.

pub(super) enum Token {
    Ident(String),
    Punct(u8),
    /// An operator: a run of `+-*/<>=~!@#%^&|`?` (a comment ends it).
    Op(String),
    /// A literal, number, parameter or other punctuation.
    Other,
}

pub(super) struct Lexer<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    /// '...' takes backslash escapes (`standard_conforming_strings = off`).
    pub(super) backslash_escapes: bool,
}

impl Lexer<'_> {
    fn peek(&self, at: usize) -> Option<u8> {
        self.s.get(self.i + at).copied()
    }

    pub(super) fn next_token(&mut self) -> Option<Token> {
        self.skip_blanks();
        let c = self.peek(0)?;
        let next = self.peek(1);
        Some(match c {
            b'\'' => {
                self.i += 1;
                self.quoted_body(b'\'', self.backslash_escapes);
                Token::Other
            }
            b'E' | b'e' if next == Some(b'\'') => {
                self.i += 2;
                self.quoted_body(b'\'', true);
                Token::Other
            }
            // B'..', X'..', N'..': plain string bodies.
            b'B' | b'b' | b'X' | b'x' | b'N' | b'n' if next == Some(b'\'') => {
                self.i += 2;
                self.quoted_body(b'\'', false);
                Token::Other
            }
            b'U' | b'u' if next == Some(b'&') && matches!(self.peek(2), Some(b'"' | b'\'')) => {
                let quote = self.peek(2).unwrap_or(b'"');
                self.i += 3;
                let body = self.quoted_body(quote, false);
                let escape = self.uescape().unwrap_or(b'\\');
                if quote == b'"' {
                    Token::Ident(decode_unicode_escapes(&body, escape))
                } else {
                    Token::Other
                }
            }
            b'"' => {
                self.i += 1;
                Token::Ident(String::from_utf8_lossy(&self.quoted_body(b'"', false)).into_owned())
            }
            b'$' if self.dollar_tag().is_some() => {
                let tag = self.dollar_tag().unwrap_or_default();
                self.i += tag.len();
                self.skip_until(&tag);
                Token::Other
            }
            c if is_ident_start(c) => {
                let start = self.i;
                while self.peek(0).is_some_and(is_ident_char) {
                    self.i += 1;
                }
                Token::Ident(String::from_utf8_lossy(&self.s[start..self.i]).to_ascii_lowercase())
            }
            b'(' | b'.' => {
                self.i += 1;
                Token::Punct(c)
            }
            c if is_op_char(c) => {
                let start = self.i;
                while self.peek(0).is_some_and(is_op_char)
                    && !matches!(
                        (self.peek(0), self.peek(1)),
                        (Some(b'-'), Some(b'-')) | (Some(b'/'), Some(b'*'))
                    )
                {
                    self.i += 1;
                }
                if self.i == start {
                    // A comment right here: skip_blanks takes it next.
                    self.i += 1;
                    return Some(Token::Other);
                }
                Token::Op(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
            }
            _ => {
                self.i += 1;
                Token::Other
            }
        })
    }

    /// Skips whitespace, `--` comments and nested `/* */` comments.
    fn skip_blanks(&mut self) {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(c), _) if c.is_ascii_whitespace() => self.i += 1,
                (Some(b'-'), Some(b'-')) => {
                    while self.peek(0).is_some_and(|c| c != b'\n') {
                        self.i += 1;
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    self.i += 2;
                    let mut depth = 1;
                    while depth > 0 {
                        match (self.peek(0), self.peek(1)) {
                            (None, _) => return,
                            (Some(b'/'), Some(b'*')) => {
                                depth += 1;
                                self.i += 2;
                            }
                            (Some(b'*'), Some(b'/')) => {
                                depth -= 1;
                                self.i += 2;
                            }
                            _ => self.i += 1,
                        }
                    }
                }
                _ => return,
            }
        }
    }

    /// A quoted body up to its closing `quote`, doubled quotes undoubled;
    /// with `backslash`, `\x` is one character (and only its `\` is kept:
    /// such bodies are skipped, not read).
    fn quoted_body(&mut self, quote: u8, backslash: bool) -> Vec<u8> {
        let mut body = Vec::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            if backslash && c == b'\\' {
                self.i += 1;
            } else if c == quote {
                if self.peek(0) == Some(quote) {
                    self.i += 1;
                } else {
                    break;
                }
            }
            body.push(c);
        }
        body
    }

    /// `UESCAPE 'c'` after a `U&` literal: its escape character.
    fn uescape(&mut self) -> Option<u8> {
        let save = self.i;
        self.skip_blanks();
        let word = self.s.get(self.i..self.i + 7)?;
        if word.eq_ignore_ascii_case(b"uescape") {
            self.i += 7;
            self.skip_blanks();
            if self.peek(0) == Some(b'\'') && self.peek(2) == Some(b'\'') {
                let c = self.peek(1);
                self.i += 3;
                return c;
            }
        }
        self.i = save;
        None
    }

    /// `$tag$` starting here (the tag not starting with a digit: `$1` is a
    /// parameter), with both dollars.
    fn dollar_tag(&self) -> Option<Vec<u8>> {
        let rest = self.s.get(self.i + 1..)?;
        let end = rest.iter().position(|&c| c == b'$')?;
        let tag = &rest[..end];
        let valid =
            tag.first().is_none_or(|&c| is_ident_start(c)) && tag.iter().all(|&c| c != b'$' && is_ident_char(c));
        valid.then(|| self.s[self.i..self.i + end + 2].to_vec())
    }

    fn skip_until(&mut self, end: &[u8]) {
        while self.i < self.s.len() {
            if self.s[self.i..].starts_with(end) {
                self.i += end.len();
                return;
            }
            self.i += 1;
        }
    }
}

fn is_op_char(c: u8) -> bool {
    b"+-*/<>=~!@#%^&|`?".contains(&c)
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_ident_char(c: u8) -> bool {
    is_ident_start(c) || c.is_ascii_digit() || c == b'$'
}

/// A `U&"..."` identifier's body with its `\XXXX` and `\+XXXXXX` escapes
/// (the escape character `escape`, doubled for itself) decoded.
fn decode_unicode_escapes(body: &[u8], escape: u8) -> String {
    let text = String::from_utf8_lossy(body);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let hex = |from: usize, n: usize| -> Option<char> {
        let digits: String = chars.get(from..from + n)?.iter().collect();
        char::from_u32(u32::from_str_radix(&digits, 16).ok()?)
    };
    while i < chars.len() {
        let c = chars[i];
        if c == char::from(escape) {
            if chars.get(i + 1) == Some(&c) {
                out.push(c);
                i += 2;
                continue;
            }
            if chars.get(i + 1) == Some(&'+') {
                if let Some(d) = hex(i + 2, 6) {
                    out.push(d);
                    i += 8;
                    continue;
                }
            } else if let Some(d) = hex(i + 1, 4) {
                out.push(d);
                i += 5;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}
