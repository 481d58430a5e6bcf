//! The lexer of Go's `text/template`, after `text/template/parse/lex.go`: tokens packed in a
//! `u64`, string escapes, and the byte scans that find actions and names. Unlike Go's lexer
//! (a goroutine handing items to the parser) it runs on demand inside the parser: the
//! `Parser` methods here read the next token of an action.

use super::*;

/// What a token is (sixteen kinds: four bits of a [`Tok`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub(super) enum Kind {
    Space,
    Ident,
    Field,
    Var,
    Dot,
    /// A raw string, or a quoted one without escapes.
    Str,
    /// A quoted string with backslash escapes (checked when lexed, decoded where used).
    StrEscaped,
    Num,
    Char,
    Pipe,
    LParen,
    RParen,
    Comma,
    Declare,
    Assign,
    Close,
}

/// The kinds by number, for [`Tok::kind`].
pub(super) const KINDS: [Kind; 16] = [
    Kind::Space,
    Kind::Ident,
    Kind::Field,
    Kind::Var,
    Kind::Dot,
    Kind::Str,
    Kind::StrEscaped,
    Kind::Num,
    Kind::Char,
    Kind::Pipe,
    Kind::LParen,
    Kind::RParen,
    Kind::Comma,
    Kind::Declare,
    Kind::Assign,
    Kind::Close,
];

/// A token: its kind and its bytes in the text (`start..end`; a string or character
/// constant with its quotes, a field with its dot), packed in one `u64`: the start in the
/// low 32 bits, the length in the next 28, the kind in the top 4. A token that held its
/// text (a 32-byte enum with a `Cow`) went between lexer and parser through the stack, with
/// store-forwarding stalls that were a quarter of parsing; a `u64` (and a `Result` of one)
/// goes in registers. [`parse`] refuses texts of 256 MiB or more, so every length fits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Tok(u64);

impl Tok {
    /// No token (the empty lookahead).
    pub(super) const NONE: Tok = Tok(u64::MAX);

    pub(super) fn new(kind: Kind, start: usize, end: usize) -> Tok {
        Tok(start as u64 | ((end - start) as u64) << 32 | (kind as u64) << 60)
    }
    pub(super) fn kind(self) -> Kind {
        KINDS[(self.0 >> 60) as usize]
    }
    pub(super) fn start(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
    pub(super) fn end(self) -> usize {
        self.start() + ((self.0 >> 32) & 0x0fff_ffff) as usize
    }
}

/// The largest text [`parse`] takes: a token's length must fit in 28 bits.
pub(super) const MAX_TEXT: usize = (1 << 28) - 1;

/// Decodes Go's escapes in a quoted string's body (without its quotes) into `out`; on a bad
/// escape, the offset of the byte after its backslash and Go's message.
pub(super) fn unescape_into(body: &str, out: &mut String) -> Result<(), (usize, &'static str)> {
    let mut q = 0;
    while let Some(i) = body[q..].find('\\') {
        out.push_str(&body[q..q + i]);
        let at = q + i + 1;
        let (c, n) = escape(&body[at..]).map_err(|m| (at, m))?;
        out.push(c);
        q = at + n;
    }
    out.push_str(&body[q..]);
    Ok(())
}

/// A backslash escape at the start of `rest` (after the backslash): the character and the
/// bytes consumed.
pub(super) fn escape(rest: &str) -> Result<(char, usize), &'static str> {
    let Some(c) = rest.chars().next() else {
        return Err("unterminated quoted string");
    };
    let simple = match c {
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        '\\' => Some('\\'),
        '"' => Some('"'),
        '\'' => Some('\''),
        'a' => Some('\x07'),
        'b' => Some('\x08'),
        'f' => Some('\x0c'),
        'v' => Some('\x0b'),
        _ => None,
    };
    if let Some(s) = simple {
        return Ok((s, 1));
    }
    let hex = |len: usize| -> Result<(char, usize), &'static str> {
        let h = rest.get(1..1 + len).unwrap_or("");
        let v = u32::from_str_radix(h, 16).map_err(|_| "invalid escape")?;
        let ch = char::from_u32(v).ok_or("invalid escape")?;
        Ok((ch, 1 + len))
    };
    match c {
        'x' => hex(2),
        'u' => hex(4),
        'U' => hex(8),
        '0'..='7' => {
            let h = rest.get(..3).unwrap_or("");
            let v = u32::from_str_radix(h, 8).map_err(|_| "invalid escape")?;
            Ok((char::from_u32(v).unwrap_or('\0'), 3))
        }
        _ => Err("unknown escape sequence"),
    }
}

pub(super) fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r' || c == b'\n'
}

pub(super) fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// ASCII letters, digits and `_`, by byte.
pub(super) static ASCII_ALNUM: [bool; 128] = {
    let mut t = [false; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = c == b'_' || c.is_ascii_alphanumeric();
        b += 1;
    }
    t
};

/// The length in bytes of the run of alphanumerics (and `_`) that starts `s`: eight ASCII
/// bytes at a time ([`stops`]), characters only past ASCII. A byte at a time, the loop's
/// exit was a mispredicted branch per name and a tenth of parsing a chart.
pub(super) fn alnum_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(word) = bytes.get(i..i + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let stop = stops(w);
        if stop != 0 {
            i += (stop.trailing_zeros() / 8) as usize;
            break;
        }
        i += 8;
    }
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if ASCII_ALNUM[b as usize] {
                i += 1;
                continue;
            }
            break;
        }
        match s[i..].chars().next() {
            Some(c) if is_alnum(c) => i += c.len_utf8(),
            _ => break,
        }
    }
    i
}

/// The bytes of `w` (eight, little-endian) that end an ASCII name: the high bit of each one
/// that is not `[0-9A-Za-z_]`, a non-ASCII byte included (the character loop decides
/// those). Each test adds to the bytes' low seven bits, so no sum carries into the next byte.
pub(super) fn stops(w: u64) -> u64 {
    pub(super) const fn each(b: u8) -> u64 {
        b as u64 * 0x0101_0101_0101_0101
    }
    pub(super) const HIGH: u64 = each(0x80);
    let x = w & !HIGH;
    // Bit 7 of `x + each(0x80 - lo)` is set when x >= lo, of `x + each(0x7f - hi)` when x > hi.
    let digit = (x + each(0x80 - b'0')) & !(x + each(0x7f - b'9'));
    let lower = x | each(0x20);
    let letter = (lower + each(0x80 - b'a')) & !(lower + each(0x7f - b'z'));
    let underscore = !((x ^ each(b'_')) + each(0x7f));
    !((digit | letter | underscore) & !w) & HIGH
}

/// The offset of the first `{{` in `s`.
pub(super) fn find_open(s: &str) -> Option<usize> {
    find_pair(s.as_bytes(), b'{', b'{')
}

/// The offset of the first `a` followed by `b` in `s`: a SIMD search for `a`, then a check
/// of the next byte (`str::find` of two bytes runs the two-way searcher).
pub(super) fn find_pair(s: &[u8], a: u8, b: u8) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(a, &s[from..]) {
        let at = from + i;
        if s.get(at + 1) == Some(&b) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// `s` without the spaces, tabs and line breaks that start it (Go's trim markers), by byte.
pub(super) fn trim_space_start(s: &str) -> &str {
    let n = s.bytes().take_while(|&c| is_space(c)).count();
    &s[n..]
}

/// `s` without the spaces, tabs and line breaks that end it.
pub(super) fn trim_space_end(s: &str) -> &str {
    let n = s.bytes().rev().take_while(|&c| is_space(c)).count();
    &s[..s.len() - n]
}

impl<'a> Parser<'a> {
    /// Skips spaces inside an action: straight over the bytes, not token by token (this was
    /// a tenth of the parse). Spaces before `-}}` are left: with it they are a trimming close.
    pub(super) fn skip_space(&mut self) {
        if self.peeked != Tok::NONE {
            if self.peeked.kind() != Kind::Space {
                return;
            }
            self.peeked = Tok::NONE;
        }
        let bytes = self.src.as_bytes();
        let mut q = self.pos;
        while q < bytes.len() && is_space(bytes[q]) {
            q += 1;
        }
        if q > self.pos && bytes[q..].starts_with(b"-}}") {
            return;
        }
        self.pos = q;
    }

    /// The next token, left in place.
    pub(super) fn peek(&mut self) -> PResult<Tok> {
        if self.peeked != Tok::NONE {
            return Ok(self.peeked);
        }
        let t = self.lex()?;
        self.peeked = t;
        Ok(t)
    }

    pub(super) fn next(&mut self) -> PResult<Tok> {
        let t = self.peeked;
        if t != Tok::NONE {
            self.peeked = Tok::NONE;
            return Ok(t);
        }
        self.lex()
    }

    /// Puts back the token `next` returned (nothing was peeked after it).
    pub(super) fn unread(&mut self, t: Tok) {
        debug_assert!(self.peeked == Tok::NONE);
        self.peeked = t;
    }

    /// A token of `kind` from `start` to the current position.
    pub(super) fn tok(&self, kind: Kind, start: usize) -> Tok {
        Tok::new(kind, start, self.pos)
    }

    /// One token inside an action.
    pub(super) fn lex(&mut self) -> PResult<Tok> {
        let src: &'a str = self.src;
        let bytes = src.as_bytes();
        let start = self.pos;
        let Some(&c) = bytes.get(start) else {
            let opened = self.line_of(self.action_start);
            return Err(self.err_at(
                start,
                format!("unclosed action started at {}:{opened}", self.name),
            ));
        };
        let kind = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                let mut q = start;
                while q < bytes.len() && is_space(bytes[q]) {
                    q += 1;
                }
                // ` -}}` closes with a right trim.
                if bytes[q..].starts_with(b"-}}") {
                    self.pos = q + 3;
                    self.trim_next = true;
                    return Ok(self.tok(Kind::Close, start));
                }
                self.pos = q;
                Kind::Space
            }
            b'}' if bytes.get(start + 1) == Some(&b'}') => {
                self.pos = start + 2;
                Kind::Close
            }
            b'|' => {
                self.pos += 1;
                Kind::Pipe
            }
            b'(' => {
                self.pos += 1;
                Kind::LParen
            }
            b')' => {
                self.pos += 1;
                Kind::RParen
            }
            b',' => {
                self.pos += 1;
                Kind::Comma
            }
            b':' if bytes.get(start + 1) == Some(&b'=') => {
                self.pos += 2;
                Kind::Declare
            }
            b'=' => {
                self.pos += 1;
                Kind::Assign
            }
            b'"' => {
                // Most strings have no escapes: the closing quote ends them.
                let body = &bytes[start + 1..];
                if let Some(i) = body
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\' || b == b'\n')
                    && body[i] == b'"'
                {
                    self.pos = start + 2 + i;
                    return Ok(self.tok(Kind::Str, start));
                }
                // Escapes: find the closing quote as Go's lexer does (an escaped quote does
                // not close, a newline ends it unterminated), then check the escapes as
                // Go's `strconv.Unquote` would.
                let mut q = start + 1;
                loop {
                    match bytes.get(q) {
                        None | Some(b'\n') => {
                            return Err(self.err_at(start, "unterminated quoted string".into()));
                        }
                        Some(b'"') => break,
                        Some(b'\\') if bytes.get(q + 1).is_some_and(|&b| b != b'\n') => q += 2,
                        Some(_) => q += 1,
                    }
                }
                if let Err((at, m)) = unescape_into(&src[start + 1..q], &mut String::new()) {
                    return Err(self.err_at(start + 1 + at, m.into()));
                }
                self.pos = q + 1;
                Kind::StrEscaped
            }
            b'`' => {
                let Some(end) = src[start + 1..].find('`') else {
                    return Err(self.err_at(start, "unterminated raw quoted string".into()));
                };
                self.pos = start + 2 + end;
                Kind::Str
            }
            b'\'' => {
                let mut q = start + 1;
                let ch = src[q..].chars().next().unwrap_or('\'');
                if ch == '\\' {
                    let (_, n) = escape(&src[q + 1..]).map_err(|m| self.err_at(q + 1, m.into()))?;
                    q += 1 + n;
                } else {
                    q += ch.len_utf8();
                }
                if bytes.get(q) != Some(&b'\'') {
                    return Err(self.err_at(start, "unterminated character constant".into()));
                }
                self.pos = q + 1;
                Kind::Char
            }
            b'$' => {
                self.pos = start + 1 + alnum_len(&src[start + 1..]);
                Kind::Var
            }
            b'.' => {
                if bytes.get(start + 1).is_some_and(u8::is_ascii_digit) {
                    return Ok(self.number(start));
                }
                let n = alnum_len(&src[start + 1..]);
                self.pos = start + 1 + n;
                if n == 0 { Kind::Dot } else { Kind::Field }
            }
            b'0'..=b'9' | b'+' | b'-' => return Ok(self.number(start)),
            _ if c < 0x80 && ASCII_ALNUM[c as usize]
                || c >= 0x80 && src[start..].chars().next().is_some_and(is_alnum) =>
            {
                self.pos = start + alnum_len(&src[start..]);
                Kind::Ident
            }
            _ => {
                let ch = src[start..].chars().next().unwrap_or(' ');
                return Err(self.err_at(start, format!("unexpected {ch:?} in command")));
            }
        };
        Ok(self.tok(kind, start))
    }

    pub(super) fn number(&mut self, start: usize) -> Tok {
        let rest = &self.src[start..];
        let n = rest
            .char_indices()
            .take_while(|&(i, c)| {
                c.is_ascii_alphanumeric()
                    || c == '.'
                    || c == '_'
                    || ((c == '+' || c == '-')
                        && (i == 0
                            || matches!(rest.as_bytes()[i - 1], b'e' | b'E' | b'p' | b'P')
                                && !rest[..i].starts_with("0x")))
            })
            .map(|(_, c)| c.len_utf8())
            .sum::<usize>();
        self.pos = start + n;
        self.tok(Kind::Num, start)
    }
}
