//! A fast reader for the YAML that values.yaml and Chart.yaml files are written in, and that
//! go-yaml writes (what `fromYaml` reads back: istio-base's 964 KB of CRDs): block mappings
//! and sequences (a sequence may sit at its key's indentation), plain, single- and
//! double-quoted scalars (over several lines, folded, as go-yaml writes them past 80
//! columns), literal and folded block scalars (with an indentation indicator, as go-yaml
//! writes `|2-`), scalar anchors and their aliases, `[]`, `{}` and one-line flow sequences of
//! scalars, comments, blank lines, CRLF and `---`.
//!
//! Walking granit-parser's events costs a tenth of a small chart's render (its scanner keeps
//! a token queue, simple-key bookkeeping and a `String` per scalar); these files are mostly
//! comments and `key: value` lines, which a line reader takes in one pass.
//!
//! It gives exactly the `Value` the granit path gives, typing each scalar with the same
//! functions ([`super::resolve_scalar`], [`super::stringify_scalar`], [`super::key_string`]).
//! Anything outside the subset, or that YAML might read another way (anchored collections,
//! tags, `?` keys, `<<`, flow collections over lines, tabs outside comments and scalars,
//! `...`, directives, non-printable characters, odd indentation, a continuation line less
//! indented than its collection), is a [`Bail`]: the caller reads the whole text with granit,
//! so every error and its line stay granit's.

use super::{find_newline, key_string, plain_is_str, resolve_scalar, stringify_scalar};
use crate::template::value::{Dict, Value};
use granit_parser::ScalarStyle;
use kiln_base::yaml::goyaml::indicator;
use std::borrow::Cow;
use std::rc::Rc;

/// The text is outside the subset: granit reads it.
#[derive(Debug)]
pub(super) struct Bail;

type R<T> = Result<T, Bail>;

/// Deeper nesting goes to granit (its own limit is 255), so the recursion here stays shallow.
const MAX_DEPTH: usize = 100;

/// Longer implicit keys go to granit, which inspects at most 1024 characters for a key.
const MAX_KEY_BYTES: usize = 512;

/// Every document of `text` (a leading BOM already dropped), or `None` when granit must read
/// it.
pub(super) fn parse_all(text: &str, strings: bool) -> Option<Vec<Value>> {
    if !printable(text.as_bytes()) {
        return None;
    }
    let mut r = Reader {
        s: text,
        b: text.as_bytes(),
        pos: 0,
        line_start: 0,
        peeked: None,
        strings,
        depth: 0,
        anchors: Vec::new(),
    };
    r.stream().ok()
}

/// No character granit might reject or read as a line break: C0 controls other than tab, LF
/// and CR before LF, DEL, C1 controls (NEL among them), U+2028/U+2029, a BOM inside the text,
/// U+FFFE/U+FFFF.
fn printable(b: &[u8]) -> bool {
    // 32 bytes a step, most of a file: printable ASCII, LF and tab, checked without a branch
    // per byte (the compiler compares them as vectors). Only a step holding something else
    // (UTF-8, CR, a control) is looked at byte by byte.
    let mut i = 0;
    while i < b.len() {
        let end = (i + 32).min(b.len());
        let step = &b[i..end];
        let ascii = step.iter().fold(true, |ok, &c| {
            ok & ((0x20..0x7F).contains(&c) | (c == b'\n') | (c == b'\t'))
        });
        if !((step.len() == 32 && ascii) || (i..end).all(|j| printable_at(b, j))) {
            return false;
        }
        i = end;
    }
    true
}

/// The byte at `i` (with the bytes after it, for a multi-byte character) is one granit
/// takes as it is.
fn printable_at(b: &[u8], i: usize) -> bool {
    match b[i] {
        0x20..=0x7E | b'\n' | b'\t' => true,
        b'\r' => b.get(i + 1) == Some(&b'\n'),
        0xC2 => !matches!(b.get(i + 1), Some(0x80..=0x9F)),
        0xE2 => !(b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xA8 | 0xA9))),
        0xEF => {
            !((b.get(i + 1) == Some(&0xBB) && b.get(i + 2) == Some(&0xBF))
                || (b.get(i + 1) == Some(&0xBF) && matches!(b.get(i + 2), Some(0xBE | 0xBF))))
        }
        0x80..=0xFF => true,
        _ => false,
    }
}

/// A mapping key read from its line.
struct Key<'t> {
    text: Cow<'t, str>,
    plain: bool,
    /// Just after its `:`.
    after: usize,
}

#[derive(Clone, Copy)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

struct Reader<'t> {
    s: &'t str,
    b: &'t [u8],
    pos: usize,
    /// The start of the line `pos` is on.
    line_start: usize,
    /// `next_content`'s answer for a position, so asking again is free.
    peeked: Option<(usize, Option<usize>)>,
    strings: bool,
    depth: usize,
    /// The scalars anchored so far in this document, latest last (a name anchored again
    /// is found at its latest).
    anchors: Vec<(&'t str, Value)>,
}

impl<'t> Reader<'t> {
    fn at(&self, p: usize) -> u8 {
        self.b.get(p).copied().unwrap_or(b'\n')
    }

    /// At the end of a line (LF, CR LF, or the end of the text).
    fn eol(&self, p: usize) -> bool {
        matches!(self.at(p), b'\n' | b'\r')
    }

    /// A space or the end of a line follows (what makes `-` and `:` indicators).
    fn blank(&self, p: usize) -> bool {
        matches!(self.at(p), b' ' | b'\n' | b'\r')
    }

    fn skip_spaces(&self, mut p: usize) -> usize {
        while self.b.get(p) == Some(&b' ') {
            p += 1;
        }
        p
    }

    /// Where the line holding `p` ends (before its CR LF or LF).
    fn content_end(&self, p: usize) -> usize {
        let e = find_newline(self.b, p);
        if e > p && self.b[e - 1] == b'\r' {
            e - 1
        } else {
            e
        }
    }

    /// Moves to the start of the line after the one holding `p`.
    fn next_line(&mut self, p: usize) {
        self.pos = (find_newline(self.b, p) + 1).min(self.b.len());
        self.line_start = self.pos;
    }

    /// From `p`, only spaces and a comment to the end of the line; moves past it.
    fn end_of_line(&mut self, p: usize) -> R<()> {
        let q = self.skip_spaces(p);
        if self.eol(q) || (self.at(q) == b'#' && q > p) {
            self.next_line(q);
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// Skips blank and comment lines to the next content: its indentation, with `pos` on its
    /// first character, or `None` at the end of the document (the end of the text or a `---`
    /// line, `pos` on it). `pos` is at the start of a line or where a previous call left it.
    fn next_content(&mut self) -> R<Option<usize>> {
        if let Some((p, ind)) = self.peeked
            && p == self.pos
        {
            return Ok(ind);
        }
        loop {
            let start = self.pos;
            let p = self.skip_spaces(start);
            match self.b.get(p) {
                None => {
                    self.pos = p;
                    self.peeked = Some((p, None));
                    return Ok(None);
                }
                Some(b'\n' | b'\r' | b'#') => self.next_line(p),
                Some(b'\t') => return Err(Bail),
                Some(&c) => {
                    let ind = p - start;
                    self.pos = p;
                    self.line_start = start;
                    if ind == 0
                        && (self.b[p..].starts_with(b"---") || self.b[p..].starts_with(b"..."))
                    {
                        if c == b'-' && self.blank(p + 3) {
                            self.peeked = Some((p, None));
                            return Ok(None);
                        }
                        return Err(Bail);
                    }
                    self.peeked = Some((p, Some(ind)));
                    return Ok(Some(ind));
                }
            }
        }
    }

    fn stream(&mut self) -> R<Vec<Value>> {
        let mut docs = Vec::new();
        // A `---` was read and its document has no node yet.
        let mut open = false;
        loop {
            match self.next_content()? {
                None if self.pos >= self.b.len() => {
                    if open {
                        docs.push(Value::Nil);
                    }
                    return Ok(docs);
                }
                None => {
                    if open {
                        docs.push(Value::Nil);
                    }
                    self.end_of_line(self.pos + 3)?;
                    open = true;
                }
                Some(ind) => {
                    // Anchors are a document's own: an alias to an earlier one is granit's.
                    self.anchors.clear();
                    docs.push(self.block_node(ind)?);
                    open = false;
                    if self.next_content()?.is_some() {
                        return Err(Bail);
                    }
                }
            }
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail);
        }
        Ok(())
    }

    /// `-` followed by a space or the end of its line.
    fn dash(&self, p: usize) -> bool {
        self.at(p) == b'-' && self.blank(p + 1)
    }

    /// A collection starting on its own line at `pos`, column `col`.
    fn block_node(&mut self, col: usize) -> R<Value> {
        if self.dash(self.pos) {
            return self.seq(col);
        }
        match self.key(self.pos)? {
            Some(k) => self.map(col, k),
            None => Err(Bail),
        }
    }

    fn scalar(&self, text: &str, plain: bool) -> Value {
        let v = if plain {
            resolve_scalar(text, ScalarStyle::Plain, None)
        } else {
            Value::str(text)
        };
        if self.strings {
            stringify_scalar(text, v)
        } else {
            v
        }
    }

    /// The mapping key starting at `p`, if its line is `key: …`.
    fn key(&self, p: usize) -> R<Option<Key<'t>>> {
        let (text, plain, q) = match self.at(p) {
            // A quoted scalar that goes on past its line is no implicit key (a key is one
            // line): it is a value, read as a multi-line scalar, or the caller's bail.
            b'"' | b'\'' if !self.quote_ends_on_its_line(p) => return Ok(None),
            b'"' => {
                let (t, q) = self.double_quoted(p, None)?;
                (t, false, self.skip_spaces(q))
            }
            b'\'' => {
                let (t, q) = self.single_quoted(p, None)?;
                (t, false, self.skip_spaces(q))
            }
            c if indicator(c) => return Ok(None),
            _ => {
                let (end, colon) = self.plain(p)?;
                match colon {
                    Some(c) => (Cow::Borrowed(&self.s[p..end]), true, c),
                    None => return Ok(None),
                }
            }
        };
        if self.at(q) != b':' || !self.blank(q + 1) {
            return Ok(None);
        }
        if q - p > MAX_KEY_BYTES || text == "<<" {
            return Err(Bail);
        }
        Ok(Some(Key {
            text,
            plain,
            after: q + 1,
        }))
    }

    /// A plain scalar on one line from `p`: where its text ends (trailing spaces dropped) and,
    /// when a `:` followed by a space or the line's end comes first, that `:` (the text is then
    /// a key, ending before it).
    fn plain(&self, p: usize) -> R<(usize, Option<usize>)> {
        let mut i = p;
        let end = loop {
            match self.b.get(i) {
                None | Some(b'\n' | b'\r') => break i,
                Some(b':') if self.blank(i + 1) => {
                    let mut e = i;
                    while e > p && self.b[e - 1] == b' ' {
                        e -= 1;
                    }
                    return Ok((e, Some(i)));
                }
                Some(b'#') if self.b[i - 1] == b' ' => break i,
                Some(b'\t') => return Err(Bail),
                _ => i += 1,
            }
        };
        let mut e = end;
        while e > p && self.b[e - 1] == b' ' {
            e -= 1;
        }
        Ok((e, None))
    }

    /// A double-quoted scalar from its opening quote at `p`: its text and where it ends (after
    /// the closing quote). On one line, or (`lines`: the column of the collection it is a
    /// value in) over the lines after it, folded ([`Self::fold`]); a line break escaped with
    /// `\\` joins the lines without a space.
    fn double_quoted(&self, p: usize, lines: Option<usize>) -> R<(Cow<'t, str>, usize)> {
        let start = p + 1;
        let mut i = start;
        let mut out: Option<String> = None;
        let mut run = start;
        loop {
            match self.b.get(i) {
                None => return Err(Bail),
                Some(b'\n' | b'\r') => {
                    i = self.fold(&mut out, run, i, lines)?;
                    run = i;
                }
                Some(b'"') => break,
                Some(b'\\') if matches!(self.at(i + 1), b'\n' | b'\r') => {
                    // An escaped line break: the text before the `\\` is kept as it is (its
                    // trailing spaces too), the break and the next line's indentation are
                    // dropped. An empty line after it, or a tab, is granit's.
                    let col = lines.ok_or(Bail)?;
                    let o = out.get_or_insert_with(String::new);
                    o.push_str(&self.s[run..i]);
                    let next = find_newline(self.b, i + 1) + 1;
                    let f = self.skip_spaces(next);
                    if f >= self.b.len()
                        || f - next <= col
                        || matches!(self.at(f), b'\t' | b'\n' | b'\r')
                    {
                        return Err(Bail);
                    }
                    i = f;
                    run = f;
                }
                Some(b'\\') => {
                    let o = out.get_or_insert_with(String::new);
                    o.push_str(&self.s[run..i]);
                    let (c, len) = match self.at(i + 1) {
                        b'0' => ('\0', 2),
                        b'a' => ('\x07', 2),
                        b'b' => ('\x08', 2),
                        b't' => ('\t', 2),
                        b'n' => ('\n', 2),
                        b'v' => ('\x0b', 2),
                        b'f' => ('\x0c', 2),
                        b'r' => ('\r', 2),
                        b'e' => ('\x1b', 2),
                        b' ' => (' ', 2),
                        b'"' => ('"', 2),
                        b'/' => ('/', 2),
                        b'\\' => ('\\', 2),
                        b'N' => ('\u{85}', 2),
                        b'_' => ('\u{a0}', 2),
                        b'L' => ('\u{2028}', 2),
                        b'P' => ('\u{2029}', 2),
                        h @ (b'x' | b'u' | b'U') => {
                            let n = match h {
                                b'x' => 2,
                                b'u' => 4,
                                _ => 8,
                            };
                            let digits = self.b.get(i + 2..i + 2 + n).ok_or(Bail)?;
                            if !digits.iter().all(u8::is_ascii_hexdigit) {
                                return Err(Bail);
                            }
                            let hex = std::str::from_utf8(digits).map_err(|_| Bail)?;
                            let v = u32::from_str_radix(hex, 16).map_err(|_| Bail)?;
                            // Surrogates (granit pairs them) and values beyond Unicode: granit.
                            (char::from_u32(v).ok_or(Bail)?, 2 + n)
                        }
                        _ => return Err(Bail),
                    };
                    o.push(c);
                    i += len;
                    run = i;
                }
                Some(_) => i += 1,
            }
        }
        Ok((self.quoted_text(out, start, run, i), i + 1))
    }

    /// A line break inside a quoted scalar, at `at` (its CR or LF), the text since `run` not
    /// yet in `out`: flow folding, as YAML reads a multi-line quoted scalar (and go-yaml
    /// writes one past 80 columns). The line's trailing spaces are dropped; one break is a
    /// space, a break then `n` empty lines is `n` newlines; the next content line's
    /// indentation is dropped and it must be deeper than `lines`, the column of the
    /// collection the scalar is a value in (`None`: a key or a flow item, one line only). A
    /// tab around the break, or the text's end, is granit's. Returns where the next line's
    /// content starts.
    fn fold(
        &self,
        out: &mut Option<String>,
        run: usize,
        at: usize,
        lines: Option<usize>,
    ) -> R<usize> {
        let col = lines.ok_or(Bail)?;
        let out = out.get_or_insert_with(String::new);
        let mut e = at;
        while e > run && self.b[e - 1] == b' ' {
            e -= 1;
        }
        if e > run && self.b[e - 1] == b'\t' {
            return Err(Bail);
        }
        out.push_str(&self.s[run..e]);
        let mut breaks = 0;
        let mut q = at;
        let f = loop {
            q = find_newline(self.b, q) + 1;
            breaks += 1;
            let f = self.skip_spaces(q);
            match self.b.get(f) {
                None | Some(b'\t') => return Err(Bail),
                Some(b'\n' | b'\r') => q = f,
                Some(_) if f - q <= col => return Err(Bail),
                Some(_) => break f,
            }
        };
        if breaks == 1 {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n('\n', breaks - 1));
        }
        Ok(f)
    }

    /// Whether the quoted scalar opening at `p` closes on its own line.
    fn quote_ends_on_its_line(&self, p: usize) -> bool {
        let q = self.b[p];
        let mut i = p + 1;
        loop {
            match self.b.get(i) {
                None | Some(b'\n' | b'\r') => return false,
                Some(b'\\') if q == b'"' => {
                    if matches!(self.at(i + 1), b'\n' | b'\r') {
                        return false;
                    }
                    i += 2;
                }
                Some(b'\'') if q == b'\'' && self.at(i + 1) == b'\'' => i += 2,
                Some(&c) if c == q => return true,
                Some(_) => i += 1,
            }
        }
    }

    /// A quoted scalar's text from `start` to its closing quote at `end`: borrowed, or what
    /// was unescaped before `run` and the rest.
    fn quoted_text(
        &self,
        out: Option<String>,
        start: usize,
        run: usize,
        end: usize,
    ) -> Cow<'t, str> {
        match out {
            None => Cow::Borrowed(&self.s[start..end]),
            Some(mut o) => {
                o.push_str(&self.s[run..end]);
                Cow::Owned(o)
            }
        }
    }

    /// A single-quoted scalar from its opening quote at `p`, as [`Self::double_quoted`] (with
    /// `''` for a quote and no escapes).
    fn single_quoted(&self, p: usize, lines: Option<usize>) -> R<(Cow<'t, str>, usize)> {
        let start = p + 1;
        let mut i = start;
        let mut out: Option<String> = None;
        let mut run = start;
        loop {
            match self.b.get(i) {
                None => return Err(Bail),
                Some(b'\n' | b'\r') => {
                    i = self.fold(&mut out, run, i, lines)?;
                    run = i;
                }
                Some(b'\'') if self.at(i + 1) == b'\'' => {
                    let o = out.get_or_insert_with(String::new);
                    o.push_str(&self.s[run..=i]);
                    i += 2;
                    run = i;
                }
                Some(b'\'') => break,
                Some(_) => i += 1,
            }
        }
        Ok((self.quoted_text(out, start, run, i), i + 1))
    }

    /// A block mapping at column `col` whose first key is read.
    fn map(&mut self, col: usize, first: Key<'t>) -> R<Value> {
        self.enter()?;
        // Collected, then sorted once (`Dict`'s `FromIterator`).
        let mut m: Vec<(Rc<str>, Value)> = Vec::new();
        let mut key = first;
        loop {
            let k = match key.plain {
                // A plain key that is not null, a bool or a number is its text in both modes.
                true if plain_is_str(&key.text) => Rc::from(&*key.text),
                true => Rc::from(key_string(&self.scalar(&key.text, true))),
                false => Rc::from(&*key.text),
            };
            self.pos = key.after;
            let v = self.value(col, false)?;
            // A repeated key wins, as in the granit path (go-yaml v2).
            m.push((k, v));
            match self.next_content()? {
                Some(i) if i == col => key = self.key(self.pos)?.ok_or(Bail)?,
                Some(i) if i > col => return Err(Bail),
                _ => break,
            }
        }
        self.depth -= 1;
        Ok(Value::map(m.into_iter().collect()))
    }

    /// A block sequence at column `col`, `pos` on its first `-`.
    fn seq(&mut self, col: usize) -> R<Value> {
        self.enter()?;
        let mut items = Vec::new();
        loop {
            self.pos += 1;
            items.push(self.value(col, true)?);
            match self.next_content()? {
                Some(i) if i == col && self.dash(self.pos) => {}
                Some(i) if i > col => return Err(Bail),
                _ => break,
            }
        }
        self.depth -= 1;
        Ok(Value::list(items))
    }

    /// The node after a key's `:` (`in_seq` false) or an entry's `-` in a collection at column
    /// `col`; leaves `pos` at the start of the line after it.
    fn value(&mut self, col: usize, in_seq: bool) -> R<Value> {
        let p = self.skip_spaces(self.pos);
        match self.at(p) {
            b'\n' | b'\r' | b'#' => {
                self.next_line(p);
                match self.next_content()? {
                    Some(i) if i > col => match self.at(self.pos) {
                        b'[' | b'{' => self.flow(self.pos),
                        _ => self.block_node(i),
                    },
                    // A sequence may sit at its key's indentation.
                    Some(i) if i == col && !in_seq && self.dash(self.pos) => self.seq(col),
                    _ => Ok(self.scalar("", true)),
                }
            }
            b'\t' => Err(Bail),
            b'|' | b'>' => self.block_scalar(p, col),
            b'[' | b'{' => self.flow(p),
            b'&' => self.anchored(p, col),
            b'*' => self.alias(p),
            b'-' if self.dash(p) => {
                if !in_seq {
                    return Err(Bail);
                }
                self.pos = p;
                self.seq(p - self.line_start)
            }
            c => {
                if in_seq && let Some(k) = self.key(p)? {
                    return self.map(p - self.line_start, k);
                }
                match c {
                    b'"' | b'\'' => {
                        let (t, q) = if c == b'"' {
                            self.double_quoted(p, Some(col))?
                        } else {
                            self.single_quoted(p, Some(col))?
                        };
                        self.end_of_line(q)?;
                        Ok(self.scalar(&t, false))
                    }
                    b'-' | b'?' | b':' if !self.blank(p + 1) && self.at(p + 1) != b'\t' => {
                        self.plain_value(p, col)
                    }
                    c if indicator(c) => Err(Bail),
                    _ => self.plain_value(p, col),
                }
            }
        }
    }

    /// An anchor name from `p`: letters, digits, `_` and `-` (where go-yaml and granit end
    /// it alike), then a space or the end of the line; and where it ends.
    fn anchor_name(&self, p: usize) -> R<(&'t str, usize)> {
        let mut q = p;
        while matches!(self.at(q), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-') {
            q += 1;
        }
        if q == p || !self.blank(q) {
            return Err(Bail);
        }
        Ok((&self.s[p..q], q))
    }

    /// `&name` and a scalar after it on its line (a key's value, or an entry's): the scalar,
    /// remembered for the aliases after it. An anchored collection, null or block scalar,
    /// and an anchor on a key, are granit's.
    fn anchored(&mut self, p: usize, col: usize) -> R<Value> {
        let (name, q) = self.anchor_name(p + 1)?;
        let q = self.skip_spaces(q);
        if self.eol(q)
            || self.dash(q)
            || matches!(
                self.at(q),
                b'#' | b'\t' | b'|' | b'>' | b'[' | b'{' | b'&' | b'*' | b'!'
            )
        {
            return Err(Bail);
        }
        self.pos = q;
        // Not as an entry: `- &a k: v` (which node is anchored) is granit's, and a plain
        // scalar holding `: ` bails.
        let v = self.value(col, false)?;
        if matches!(v, Value::Map(_) | Value::List(_)) {
            return Err(Bail);
        }
        self.anchors.push((name, v.clone()));
        Ok(v)
    }

    /// `*name` alone on its line (but for a comment): the scalar anchored by that name.
    fn alias(&mut self, p: usize) -> R<Value> {
        let (name, q) = self.anchor_name(p + 1)?;
        let v = match self.anchors.iter().rev().find(|(n, _)| *n == name) {
            Some((_, v)) => v.clone(),
            // An unknown anchor is granit's error.
            None => return Err(Bail),
        };
        self.end_of_line(q)?;
        Ok(v)
    }

    /// A plain scalar from `p`, with the lines that continue it (more indented than the
    /// collection at column `col`; folded: a line break is a space, `n` empty lines are `n`
    /// newlines).
    fn plain_value(&mut self, p: usize, col: usize) -> R<Value> {
        let (end, colon) = self.plain(p)?;
        if colon.is_some() {
            return Err(Bail);
        }
        let commented = self.at(self.skip_spaces(end)) == b'#';
        self.next_line(end);
        let mut folded: Option<String> = None;
        // After a comment nothing continues the scalar (a more indented line is then the
        // caller's bail).
        loop {
            if commented {
                break;
            }
            let mut q = self.pos;
            let mut empty = 0;
            let f = loop {
                let f = self.skip_spaces(q);
                if f >= self.b.len() {
                    break None;
                }
                if self.eol(f) {
                    empty += 1;
                    q = f + if self.at(f) == b'\r' { 2 } else { 1 };
                    continue;
                }
                break Some(f);
            };
            let Some(f) = f else { break };
            let c = self.at(f);
            if f - q <= col || c == b'#' {
                break;
            }
            // A continuation line may start with what cannot start a plain scalar (a
            // backquote, a quote, a bracket, `*`, `&`, `!`, `@`...): after the first line it
            // is text (`ns-plain-char`), and go-yaml folds long descriptions before any word.
            // `- `, `? ` and `: ` there are granit's.
            if c == b'\t' || (matches!(c, b'-' | b'?' | b':') && self.blank(f + 1)) {
                return Err(Bail);
            }
            let (e, colon) = self.plain(f)?;
            if colon.is_some() || self.at(self.skip_spaces(e)) == b'#' {
                return Err(Bail);
            }
            let t = folded.get_or_insert_with(|| self.s[p..end].to_string());
            if empty == 0 {
                t.push(' ');
            }
            for _ in 0..empty {
                t.push('\n');
            }
            t.push_str(&self.s[f..e]);
            self.next_line(e);
        }
        Ok(match folded {
            None => self.scalar(&self.s[p..end], true),
            Some(t) => self.scalar(&t, true),
        })
    }

    /// `[]`, `{}` or a flow sequence of scalars, on one line.
    fn flow(&mut self, p: usize) -> R<Value> {
        let mut q = self.skip_spaces(p + 1);
        if self.at(p) == b'{' {
            if self.at(q) != b'}' {
                return Err(Bail);
            }
            self.end_of_line(q + 1)?;
            return Ok(Value::map(Dict::new()));
        }
        let mut items = Vec::new();
        if self.at(q) != b']' {
            loop {
                match self.at(q) {
                    c @ (b'"' | b'\'') => {
                        let (t, r) = if c == b'"' {
                            self.double_quoted(q, None)?
                        } else {
                            self.single_quoted(q, None)?
                        };
                        items.push(self.scalar(&t, false));
                        q = r;
                    }
                    c if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'~') => {
                        let mut r = q;
                        while matches!(self.at(r), b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'/' | b'-' | b'+' | b'~')
                        {
                            r += 1;
                        }
                        items.push(self.scalar(&self.s[q..r], true));
                        q = r;
                    }
                    _ => return Err(Bail),
                }
                q = self.skip_spaces(q);
                match self.at(q) {
                    b',' => {
                        q = self.skip_spaces(q + 1);
                        if self.at(q) == b']' {
                            return Err(Bail);
                        }
                    }
                    b']' => break,
                    _ => return Err(Bail),
                }
            }
        }
        self.end_of_line(q + 1)?;
        Ok(Value::list(items))
    }

    /// A literal (`|`) or folded (`>`) block scalar whose header is at `p`, in a collection at
    /// column `col`.
    fn block_scalar(&mut self, p: usize, col: usize) -> R<Value> {
        let literal = self.at(p) == b'|';
        let mut q = p + 1;
        // The header: a chomping indicator and an indentation indicator (1-9), each at most
        // once, in either order (go-yaml writes `|2-` for text that starts with a space or
        // an empty line).
        let mut chomp = Chomp::Clip;
        let mut explicit = None;
        loop {
            match self.at(q) {
                b'-' if matches!(chomp, Chomp::Clip) => chomp = Chomp::Strip,
                b'+' if matches!(chomp, Chomp::Clip) => chomp = Chomp::Keep,
                d @ b'1'..=b'9' if explicit.is_none() => explicit = Some(usize::from(d - b'0')),
                _ => break,
            }
            q += 1;
        }
        if !self.blank(q) {
            // Anything else after the header.
            return Err(Bail);
        }
        self.end_of_line(q)?;
        let mut out = String::new();
        // An indentation indicator counts from the collection's column, as go-yaml and
        // granit count it (the parser's current indentation plus the indicator).
        let mut indent: Option<usize> = explicit.map(|m| col + m);
        // Empty lines since the last content line (or the header).
        let mut breaks = 0usize;
        // The widest empty line before the first content line.
        let mut leading = 0usize;
        let mut started = false;
        loop {
            let start = self.pos;
            if start >= self.b.len() {
                if indent.is_none() {
                    return self.empty_block_scalar(chomp, leading);
                }
                if !started && explicit.is_some() {
                    return Err(Bail);
                }
                break;
            }
            let e = self.skip_spaces(start);
            let sp = e - start;
            if self.b.get(e).is_none() {
                // A last line without a line break: granit's rule for it is not ours to copy.
                return Err(Bail);
            }
            if self.eol(e) {
                match indent {
                    None => leading = leading.max(sp),
                    // Spaces beyond the indentation are content.
                    Some(ind) if sp > ind => return Err(Bail),
                    Some(_) => {}
                }
                breaks += 1;
                self.next_line(e);
                continue;
            }
            let ind = match indent {
                None => {
                    if self.at(e) == b'\t' {
                        return Err(Bail);
                    }
                    if sp <= col {
                        return self.empty_block_scalar(chomp, leading);
                    }
                    if leading > sp {
                        return Err(Bail);
                    }
                    indent = Some(sp);
                    sp
                }
                Some(ind) if sp < ind => {
                    // With an indentation indicator and no content yet: an empty scalar or
                    // an error, granit's.
                    if self.at(e) == b'\t' || (!started && explicit.is_some()) {
                        return Err(Bail);
                    }
                    break;
                }
                Some(ind) => ind,
            };
            let end = self.content_end(start);
            if end == self.b.len() {
                return Err(Bail);
            }
            let text = &self.s[start + ind..end];
            if !literal && matches!(text.as_bytes()[0], b' ' | b'\t') {
                // More-indented lines of a folded scalar keep their breaks: granit.
                return Err(Bail);
            }
            if started {
                if literal || breaks > 0 {
                    for _ in 0..breaks + usize::from(literal) {
                        out.push('\n');
                    }
                } else {
                    out.push(' ');
                }
            } else {
                for _ in 0..breaks {
                    out.push('\n');
                }
                started = true;
            }
            out.push_str(text);
            breaks = 0;
            self.next_line(end);
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => out.push('\n'),
            Chomp::Keep => {
                for _ in 0..=breaks {
                    out.push('\n');
                }
            }
        }
        Ok(self.scalar(&out, false))
    }

    /// A block scalar without content lines (the next line is the collection's): empty.
    /// Kept line breaks and whitespace-only lines before it are granit's.
    fn empty_block_scalar(&self, chomp: Chomp, leading: usize) -> R<Value> {
        if leading > 0 || matches!(chomp, Chomp::Keep) {
            return Err(Bail);
        }
        Ok(self.scalar("", false))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_all, parse_all_granit, parse_one_strings};
    use super::*;
    use crate::template::value::same;
    use std::path::{Path, PathBuf};

    fn same_docs(a: &[Value], b: &[Value]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
    }

    /// Both readers on `text` in both modes: equal, or the fast one bails. Whether the fast
    /// one took the text (in the values mode).
    fn check(text: &str) -> bool {
        let mut took = false;
        for strings in [false, true] {
            let Some(fast) = super::parse_all(text, strings) else {
                continue;
            };
            took |= !strings;
            match parse_all_granit(text, strings, false) {
                Ok(g) => assert!(
                    same_docs(&fast, &g),
                    "strings={strings} {text:?}\nfast:   {fast:?}\ngranit: {g:?}"
                ),
                Err(e) => panic!("granit rejects what the fast reader took: {text:?}: {e}"),
            }
        }
        took
    }

    /// The documents the fast reader gives (it must take the text).
    fn fast(text: &str) -> Vec<Value> {
        assert!(check(text), "the fast reader bails on {text:?}");
        super::parse_all(text, false).unwrap()
    }

    fn bails(text: &str) {
        check(text);
        assert!(
            super::parse_all(text, false).is_none() && super::parse_all(text, true).is_none(),
            "the fast reader takes {text:?}"
        );
    }

    /// Snippets the fast reader must take.
    const TAKEN: &[&str] = &[
        "",
        "\n\n",
        "# only a comment\n",
        "   # indented comment\n\n",
        "---\n",
        "---",
        "--- # a comment\n",
        "---\n---\n",
        "a: 1\n---\n",
        "a: 1\n---\nb: 2\n",
        "# c\n---\na: 1\n--- \nb: 2\n---\n# c\n",
        "a: 1",
        "a:",
        "a:\n",
        "a: \n",
        "a: b\n",
        "a: b   \n",
        "a: b #c\n",
        "a: b#c\n",
        "a: b # c: d\n",
        "a:    b    c  \n",
        "a: \"a # b\"\n",
        "a: 'a # b'\n",
        "a: 'x' # c\n",
        "a: \"x\"   # c\n",
        "a: ''\nb: \"\"\n",
        "a: 'it''s'\nb: ''''\n",
        "a: \"q \\\" \\\\ \\/ \\n \\t \\r \\0 \\a \\b \\e \\f \\v \\  \\N \\_ \\L \\P\"\n",
        "a: \"\\x41\\u00e9\\U0001F600\"\n",
        "a: é\nключ: значение\n\"ü\": '日本'\n",
        "a: http://example.com:8080/path?q=1#frag\n",
        "a: :8080\nb: -x\nc: ?x\nd: ---\ne: --flag=1\nf: a:b\n",
        "a: x,y\nb: x]\nc: x}\nd: a[0]\ne: x{{ y }}\n",
        "a: \"1\"\nb: '1.0'\nc: \"true\"\nd: 'null'\n",
        "a: yes\nb: no\nc: on\nd: off\ne: y\nf: n\ng: Y\nh: N\ni: True\nj: FALSE\nk: Yes\nl: OFF\n",
        "a: ~\nb: null\nc: Null\nd: NULL\ne: nULL\nf: none\n",
        "a: 0x1F\nb: 0o17\nc: 017\nd: 08\ne: 0b101\nf: -0x1F\ng: 0xZZ\n",
        "a: 1e3\nb: 1E3\nc: 1.5e-3\nd: 1.\ne: .5\nf: -.5\ng: 1e\nh: e3\n",
        "a: .inf\nb: -.inf\nc: .Inf\nd: +.INF\ne: .nan\nf: .NaN\ng: inf\nh: nan\n",
        // Scalar anchors and their aliases (alertmanager's `containerPortName`).
        "a: &x 1\nb: *x\n",
        "a: &x http\nb:\n  c: *x\n  d: *x # c\n",
        "a: &x 'q'\nb: &y \"1\"\nc: *y\nd: *x\n",
        "a: &x-1_b yes\nb: *x-1_b\n",
        "a: &x 1\nb: &x 2\nc: *x\n",
        "a: &x   0644   # c\nb: *x   \n",
        "a: &x one\n  two\nb: *x\n",
        "- &x a\n- *x\n- b: *x\n",
        "a:\n- &x a\n- *x\n",
        "a: &x ~\nb: *x\nc: &y null\nd: *y\n",
        "a: +1\nb: -1\nc: -0\nd: +0\ne: 0\nf: 00\ng: +\n",
        "a: 1_000\nb: 1_0.5\nc: _1\nd: 1__0\n",
        "a: 12345678901234567890123\nb: 18446744073709551615\nc: 18446744073709551616\nd: -9223372036854775808\n",
        "a: 3.14159265358979323846\nb: 1.10\nc: 1.0\nd: 0.1\ne: 100000000000000000000.0\n",
        "a: 2001-12-14t21:59:43.10-05:00\nb: 2002-12-14\nc: 12:30:45\nd: 1:20\ne: 190:20:30.15\n",
        "a: 1.2.3\nb: v1.2.3\nc: 1.0.0-rc.1\nd: 0.1.0\n",
        "1: a\n01: b\n1.5: c\ntrue: d\nyes: e\nnull: f\n~: g\n0x10: h\n.inf: j\n",
        "\"quoted key\": 1\n'single': 2\n\"a: b\": 3\n'#x': 4\n\"\": 5\n",
        "a  : b\n\"c\" : d\n",
        "a: 1\na: 2\nb:\n  x: 1\nb:\n  y: 2\n",
        "a:\n  b:\n    c: d\n  e: f\ng: h\n",
        "a:\n - x\n - y\n",
        "a:\n- x\n- y\nb: 1\n",
        "a:\n- x\n-\n- ''\nb:\n",
        "- a\n- b\n",
        "- - a\n  - b\n- - c\n",
        "- a: 1\n  b: 2\n- c: 3\n",
        "-\n  a: 1\n-\n",
        "- # comment\n  a: 1\n",
        "-   a: 1\n    b: 2\n",
        "- a:\n  - x\n  b: 1\n- c\n",
        "- a:\n    - x\n  b: 1\n",
        "- \"k\": v\n- 'k2': v\n- \"scalar\"\n- 'x'\n",
        "a:\n  # comment\n  b: 1\n# col 0 comment\n  c: 2\n",
        "a: 1\n  # indented comment after a value\nb: 2\n",
        "a:\n\n\n  b: 1\n   \n\n  c: 2\n",
        "a: b\r\nc:\r\n  - d\r\n  - e\r\n# x\r\n",
        "a: []\nb: {}\nc: [ ]\nd: { }\ne: []  # c\n",
        "a: [x, y]\nb: [\"x\", 'y']\nc: [1, true, null, ~, 1.5, 0x10, yes]\nd: [ a ,b ]\n",
        "verbs: [\"get\", \"list\", \"watch\"]\nsource_labels: [__meta_kubernetes_namespace]\n",
        "a: [a/b, c.d, e-f, g_h, x+y]\n",
        "a: |\n  line 1\n  line 2\nb: 1\n",
        "a: |-\n  line 1\n  line 2\nb: 1\n",
        "a: |+\n  line 1\n\n\nb: 1\n",
        "a: |\n  line 1\n\n  line 3\n\n\nb: 1\n",
        "a: |\n\n  after a blank\n",
        "a: |\n  x\n    more indented\n  y\n",
        "a: |\n  # not a comment\n  k: v\n  - z\n  \"q\"\n  \ttab\n",
        "a: |  # header comment\n  x\n",
        "a: |\n  trailing spaces   \n  x\n",
        "a: >\n  folded\n  lines\n\n  para\nb: 1\n",
        "a: >-\n  folded\n  lines\n",
        "a: >+\n  folded\n\n",
        "a: >\n\n  x\n",
        "a:\n  b: |\n    x\n    y\n  c: d\n",
        "- |\n  x\n- >-\n  y\n  z\n",
        "a:\n- |\n  x\n",
        "a: |\n  x\n# comment\nb: |+\n  y\n\n# c\n\n",
        "a: |\r\n  x\r\n\r\n  y\r\n",
        "apiVersion: v2\nname: c\nversion: 1.0\nappVersion: 1.10\nkubeVersion: '>=1.2'\nx: 0644\ny: off\nz: 1e3\nw: 0.1\n",
        "description: a long\n  description\n   over lines\nb: 1\n",
        "a: b\n\n  c\n\n\n  d\n   \ne: f\n",
        "a: b\n c\n",
        "- a\n  b\n- c\n",
        "- k: a\n   b\n  j: c\n",
        "a: 1\n  2\nb: tr\n  ue\nc: x  \n  y  \n",
        "a: b\n  c\n# comment\nd: e\n",
        "a: |\n\nb: 1\n",
        "a: |-\n\n\n  # comment\n  b: 1\n",
        "a: >\nb: 1\n",
        "a: |\n",
        "a: |\nb: 1\n",
        "a:\n  b: |\n  c: 1\n",
        "a:\n    {}\n    # c\nb:\n  []\n",
        "- \n  [a, b]\n",
        "a: \"\\t\"\nb: 'x\ty'\n",
        // Plain continuation lines starting with what cannot start a plain scalar.
        "a: x\n  `y`\n",
        "a: x\n  'y' z\n  \"w\"\n",
        "a: x\n  [y]\n  {y}\n  ]y\n",
        "a: x\n  *y\n  &y\n  !y\n",
        "a: x\n  @y %z\n  |y\n  >y\n",
        "a: x\n  -y\n  ?y\n  :y\n  ,y\n",
        "- a\n  `b`\n",
        // Block scalars with an indentation indicator.
        "a: |2\n   x\n",
        "a: |2\n  x\n",
        "a: |1\n  x\n",
        "a: |2-\n\n\n    x\n  y\nb: 1\n",
        "a: |-2\n   x\n",
        "a:\n  b: |2+\n      x\n\n  c: 1\n",
        "- |2\n   x\n",
        "a: >2\n  x\n  y\n",
        "- - |1\n    x\n",
        "a:\n  b: |4\n        x\n       y\n  c: 1\n",
        // Multi-line quoted scalars, folded (go-yaml writes them past 80 columns).
        "a: 'x\n  y'\n",
        "a: \"x\n  y\"\n",
        "a: \"x\\\n  y\"\n",
        "a: \"x  \\\n  y\"\n",
        "a: 'x   \n     y  \n\n\n  z'\nb: 1\n",
        "a: \"x\n\n  y \\t\n  z\"\n",
        "- 'x\n  y'\n- \"x\n  y\"\n",
        "- description: 'a long\n    text: with # and - and ''q'''\n  jsonPath: .x\n",
        "a:\n  b: 'one\n    two'   # c\n  c: d\n",
        "a: 'x\r\n  y'\r\n",
        "a: &x 'one\n  two'\nb: *x\n",
        "a: 1 # tab\tin a comment\n#\ttab comment\n",
    ];

    /// Snippets outside the subset (or invalid YAML).
    const BAILED: &[&str] = &[
        "? a\n: b\n",
        "a: !!str 1\n",
        "a: !foo x\n",
        "<<: {a: 1}\n",
        "b: &m {a: 1}\nc:\n  <<: *m\n",
        "a: b # c\n  d\n",
        "a: b\n  # c\n  d\n",
        "a: b\n  c # d\n",
        "a: b\n  c: d\n",
        "a: b\n  - c\n",
        "a: b\n  \tc\n",
        "a: 'b'\n  c\n",
        "a: |+\n\nb: 1\n",
        "a: |\n    more\n  less\n",
        "a: |\n   \nb: 1\n",
        "a:\n  {b: 1}\n",
        "a:\n  [a,\n  b]\n",
        "a:\n  b\n",
        "a: b: c\n",
        "a: b:\n",
        "a:\tb\n",
        "\ta: b\n",
        "a:\n\t- b\n",
        "a: b\t\n",
        "a: |foo\n  x\n",
        "a: |\n  x",
        "a: >\n  x\n    more\n  y\n",
        "a: {b: c}\n",
        "a: {{ x }}\n",
        "a: [a, [b]]\n",
        "a: [a,]\n",
        "a: [a\n  , b]\n",
        "a: [a b]\n",
        "a: [*x]\n",
        "a: \"x\"#c\n",
        "a: \"x\" y\n",
        "a: - b\n",
        "a: 1\n- b\n",
        "- a\nb: 1\n",
        "a:\n  b: 1\n c: 2\n",
        "a:\n  b: 1\n    c: 2\n",
        "a: 1\n...\n",
        "a: b\n...x\n",
        "%YAML 1.1\n---\na: 1\n",
        "--- a\n",
        "--- |\n  x\n",
        "scalar\n",
        "[a, b]\n",
        "a: x\n  - y\n",
        "a: x\n  ? y\n",
        "a: x\n  : y\n",
        "a: |2\n x\n",
        "a: |0\n  x\n",
        "a: |22\n  x\n",
        "a: |2\n     \n  x\n",
        "a: |-+\n  x\n",
        // Multi-line quoted scalars the fast reader leaves to granit.
        "a: 'x\ny'\n",
        "a:\n  b: 'x\n  y'\n",
        "a: 'x\t\n  y'\n",
        "a: 'x\n\ty'\n",
        "a: 'x\n  y\n",
        "a: \"x\\\n\n  y\"\n",
        "'k\n  x': 1\n",
        "- 'k\n  x': 1\n",
        "a: 'x\n  y' z\n",
        "a: [\"x\n  y\"]\n",
        "a: \"\\q\"\n",
        "a: \"\\ud800\"\n",
        "a: \"\\x4\"\n",
        "a: b\rc: d\n",
        "a: \u{85}\n",
        "a: x\u{2028}y\n",
        "a: \u{feff}x\n",
        "a: \u{7}\n",
        "a:\n  - b\n   - c\n",
        "a: ?\n",
        "a: ? b\n",
        "h: -\n",
        "a: : b\n",
        "a: @x\n",
        "a: `x`\n",
        "a: %x\n",
        "-a: 1\n",
        "&a a: 1\n",
        // Anchors beyond a scalar value, and aliases beyond a whole value.
        "a: &x\nb: *x\n",
        "a: &x # c\nb: *x\n",
        "a: &x\n  b: 1\nc: *x\n",
        "a: &x [1]\nb: *x\n",
        "a: &x {}\nb: *x\n",
        "a: &x |\n  t\nb: *x\n",
        "a: &x &y 1\nb: *x\n",
        "a: &x *y\n",
        "a: &x !!str 1\nb: *x\n",
        "a: &x - 1\n",
        "a: &x\tb\n",
        "a: &x:y 1\nb: *x:y\n",
        "a: &x.y 1\nb: *x.y\n",
        "a: &x b: c\n",
        "- &x a: 1\n- *x\n",
        "b: *x\n",
        "a: *x\n",
        "a: &x 1\n---\nb: *x\n",
        "a: &x 1\nb: *x c\n",
        "a: &x 1\nb: *x: c\n",
        "a: &x 1\n*x : c\n",
        "a: &x 1\nb: [*x]\n",
        "a: &x 1\nb:\n  *x: c\n",
        "a: &\nb: 1\n",
        "a: *\n",
    ];

    #[test]
    fn the_subset_reads_as_granit_does() {
        let mut wrong = Vec::new();
        for t in TAKEN {
            if !check(t) {
                wrong.push(format!("bails: {t:?}"));
            }
        }
        for t in BAILED {
            check(t);
            if super::parse_all(t, false).is_some() || super::parse_all(t, true).is_some() {
                wrong.push(format!("takes: {t:?}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn values_read_from_the_subset() {
        let v = fast("a: yes\nb: 0644\nc: '1'\nd:\n- x\ne: |\n  l1\n  l2\n");
        assert_eq!(
            super::super::to_json(&v[0], false, false),
            r#"{"a":true,"b":420,"c":"1","d":["x"],"e":"l1\nl2\n"}"#
        );
        let c = parse_one_strings("version: 1.10\nappVersion: 0644\nx: off\n").unwrap();
        assert_eq!(c.go_string(), "map[appVersion:420 version:1.1 x:false]");
        // A BOM is dropped before either reader.
        let a = parse_all("\u{feff}a: 1\n").unwrap();
        assert!(same_docs(&a, &parse_all("a: 1\n").unwrap()));
    }

    #[test]
    fn a_bad_character_is_found_wherever_it_sits() {
        // Every place in and around the 32- and 8-byte steps, next to printable ASCII,
        // UTF-8, LF and tab, which all pass.
        let ok = "ab: c\td é\n# x ü 日本\n";
        for bad in [
            "\u{7}", "\u{7f}", "\u{85}", "\u{2028}", "\u{feff}", "\u{fffe}", "\r",
        ] {
            for at in 0..80 {
                let mut t: String = ok.chars().cycle().take(at).collect();
                t.push_str(bad);
                t.push_str("x: y\n");
                assert!(!printable(t.as_bytes()), "{bad:?} after {at} characters");
                assert!(printable(t.replace(bad, "").as_bytes()));
            }
        }
        assert!(printable(b"a: b\r\nc: d\r\n"));
    }

    #[test]
    fn newlines_are_found_as_a_byte_search_finds_them() {
        for len in 0..40 {
            for nl in (0..len).chain([usize::MAX]) {
                let b: Vec<u8> = (0..len)
                    .map(|i| if i == nl { b'\n' } else { b'x' })
                    .collect();
                for from in 0..=len + 1 {
                    let naive = b
                        .get(from.min(len)..)
                        .and_then(|r| r.iter().position(|&c| c == b'\n'))
                        .map_or(len, |i| from.min(len) + i);
                    assert_eq!(
                        find_newline(&b, from),
                        naive,
                        "len {len} nl {nl} from {from}"
                    );
                }
            }
        }
    }

    #[test]
    fn long_lines_and_deep_nesting() {
        let long = "x".repeat(100_000);
        fast(&format!("a: {long}\nb: '{long}'\n- not a key\n").replace("\n- not a key", ""));
        fast(&format!("{}: 1\n", "k".repeat(500)));
        bails(&format!("{}: 1\n", "k".repeat(2000)));
        let deep = |n: usize| {
            (0..n)
                .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
                .collect::<String>()
        };
        fast(&deep(60));
        bails(&deep(150));
        let seq = |n: usize| format!("{}x\n", "- ".repeat(n));
        fast(&seq(60));
        bails(&seq(150));
    }

    use crate::testutil::Rng;

    #[test]
    fn mutated_snippets_read_as_granit_does_or_bail() {
        const INSERTS: &[char] = &[
            ' ', ' ', ' ', '\n', ':', '-', '#', '"', '\'', '|', '>', '[', ']', '{', '}', ',', '\t',
            'a', '1', '0', '.', '\\', '&', '*', '!', '?', '\r', 'é', '+', 'e', '~',
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut taken = 0;
        let mut total = 0;
        for seed in TAKEN.iter().chain(BAILED) {
            for _ in 0..150 {
                let mut chars: Vec<char> = seed.chars().collect();
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(chars.len() + 1);
                    match rng.below(4) {
                        0 if at < chars.len() => {
                            chars.remove(at);
                        }
                        1 if at < chars.len() => {
                            // Duplicate a stretch (indentation, lines).
                            let end = (at + 1 + rng.below(8)).min(chars.len());
                            let piece: Vec<char> = chars[at..end].to_vec();
                            chars.splice(at..at, piece);
                        }
                        _ => chars.insert(at, INSERTS[rng.below(INSERTS.len())]),
                    }
                }
                let text: String = chars.into_iter().collect();
                total += 1;
                taken += usize::from(check(&text));
            }
        }
        // The mutations still reach the fast reader often, so this tests it.
        assert!(taken * 5 > total, "{taken} of {total} mutations taken");
    }

    fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                yaml_files(&p, out);
            } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                out.push(p);
            }
        }
    }

    /// Every YAML file of the shared charts: both readers agree or the fast one bails; most
    /// values.yaml and Chart.yaml files take the fast path.
    #[test]
    fn shared_chart_yaml_reads_as_granit_does() {
        let Some(root) = crate::testutil::shared("charts") else {
            return;
        };
        let mut files = Vec::new();
        yaml_files(&root, &mut files);
        let (mut total, mut taken, mut chart_total, mut chart_taken) = (0, 0, 0, 0);
        let mut missed = Vec::new();
        for f in &files {
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            let name = f.file_name().unwrap().to_string_lossy();
            let loaded = !f.components().any(|c| c.as_os_str() == "templates")
                && (name == "Chart.yaml" || name.starts_with("values"));
            let took = check(text);
            total += 1;
            taken += usize::from(took);
            if loaded {
                chart_total += 1;
                chart_taken += usize::from(took);
                if !took {
                    missed.push(f.strip_prefix(&root).unwrap_or(f).display().to_string());
                }
            }
        }
        eprintln!(
            "fast path: {taken} of {total} YAML files; {chart_taken} of {chart_total} values*.yaml and Chart.yaml files; bailed: {missed:?}"
        );
        assert!(
            chart_taken * 10 >= chart_total * 8,
            "{chart_taken} of {chart_total}"
        );
    }
}
