//! Lexer and parser of Go's `text/template` language, after Go's `text/template/parse`
//! (lex.go, parse.go, node.go of Go 1.26): actions with trim markers, comments, pipelines
//! with declarations and assignments, `if`/`else if`/`range`/`with`/`else with`/`define`/
//! `template`/`block`/`break`/`continue`, parenthesised pipelines and field chains.
//!
//! Unlike Go, lexing and parsing are one pass over the text (no goroutine hand-off); the
//! tree is the same. Function names are checked at parse time, as Go does ("function %q not
//! defined"), so an unknown function fails even in a branch that never runs.

use super::super::ahead::Ahead;
use std::sync::Arc;

/// A function resolved at parse time: its index in the function table (`exec::Funcs`), so a
/// call is an index, not a hash lookup of its name on every execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuncId(pub u32);

impl FuncId {
    /// `and` and `or` are built into the executor (they evaluate lazily).
    pub const AND: FuncId = FuncId(u32::MAX);
    pub const OR: FuncId = FuncId(u32::MAX - 1);
}

/// A position in a template text: its byte offset, as Go's `Pos`. The line and column of
/// an error are counted from the text when it is reported ([`line_col`]): counting newlines
/// for every pipeline, command and operand while parsing was a tenth of the parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos(pub u32);

impl Pos {
    /// No position: reported as line 0, column 0 (Go's zero `Pos` outside any node).
    pub const NONE: Pos = Pos(u32::MAX);
}

/// Go's `ErrorContext`: the 1-based line and 0-based byte column of `off` in `src` (a
/// newline at `off` belongs to its line).
pub fn line_col(src: &str, off: usize) -> (u32, u32) {
    let before = &src.as_bytes()[..off.min(src.len())];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count() as u32;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (line, (before.len() - start) as u32)
}

/// A range of a [`Tree`]'s arenas (nodes, commands, arguments, declarations) or of its
/// text (`Text` nodes, field chains, variable names): `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }
}

/// The parsed trees of one text, flat: every list of nodes, every command list and every
/// argument list is a [`Span`] of one arena, and texts, field chains and variable names are
/// spans of the template text kept here. A `Vec` or `Box` per pipeline, command, argument
/// list, branch and text was most of the parser's allocations and most of the cost of
/// dropping a chart's trees. A tree holds no `Rc`: it is `Send`, so a chart's templates can
/// be parsed on a pool thread while the chart loads ([`Slot`], ADR 0012).
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// The template text, shared with the chart that holds it (not copied per parse).
    pub src: Arc<str>,
    pub nodes: Vec<Node>,
    pub pipes: Vec<Pipe>,
    pub cmds: Vec<Cmd>,
    pub args: Vec<Arg>,
    /// Declared (`:=`) or assigned (`=`) variables (shared names: declaring one at execution
    /// time is a reference count, not a copy).
    pub decls: Vec<Arc<str>>,
    /// The names `template` and `block` call.
    pub names: Vec<Box<str>>,
}

impl Tree {
    /// Empty arenas with room for a text of `len` bytes: chart templates have about one
    /// node, pipeline and command per 45 to 80 bytes and an argument per 27 to 33
    /// (bitnami-postgresql, traefik, prometheus), so the arenas rarely grow, and growing
    /// them (a copy of each, again and again) was a tenth of the parser's copying.
    fn sized_for(len: usize) -> Tree {
        Tree {
            nodes: Vec::with_capacity(len / 40),
            pipes: Vec::with_capacity(len / 48),
            cmds: Vec::with_capacity(len / 40),
            args: Vec::with_capacity(len / 20),
            ..Tree::default()
        }
    }

    /// A span of the text.
    pub fn str(&self, s: Span) -> &str {
        &self.src[s.range()]
    }
    pub fn list(&self, s: Span) -> &[Node] {
        &self.nodes[s.range()]
    }
}

#[derive(Debug, Clone, Copy)]
pub enum Node {
    /// A span of the text.
    Text(Span),
    /// A pipeline: its index in [`Tree::pipes`].
    Action(u32),
    If(Branch),
    Range(Branch),
    With(Branch),
    Template {
        /// Its index in [`Tree::names`].
        name: u32,
        pipe: Option<u32>,
        pos: Pos,
    },
    Break(Pos),
    Continue(Pos),
}

#[derive(Debug, Clone, Copy)]
pub struct Branch {
    pub pipe: u32,
    pub list: Span,
    pub else_list: Option<Span>,
}

#[derive(Debug, Clone, Copy)]
pub struct Pipe {
    pub pos: Pos,
    /// Its variables: a span of [`Tree::decls`].
    pub decl: Span,
    pub is_assign: bool,
    /// A span of [`Tree::cmds`] (never empty).
    pub cmds: Span,
}

#[derive(Debug, Clone, Copy)]
pub struct Cmd {
    pub pos: Pos,
    /// A span of [`Tree::args`] (never empty).
    pub args: Span,
}

/// A field chain as written, without its leading dot: `A.B.C` for `.A.B.C`, a span of the
/// text (the executor walks it with `split('.')`, field names never contain a dot). Empty
/// for no fields.
pub type Chain = Span;

#[derive(Debug, Clone, Copy)]
pub enum Arg {
    /// `.A.B` (never empty: `.` alone is `Dot`).
    Field(Chain, Pos),
    Dot(Pos),
    /// `$x.A.B`: the variable's name (with its `$`) and the chain.
    Var(Span, Chain, Pos),
    /// A function, resolved at parse time.
    Ident(FuncId, Pos),
    /// `(pipe).A.B`: the term's index in [`Tree::args`].
    Chain(u32, Chain, Pos),
    /// A parenthesised pipeline: its index in [`Tree::pipes`].
    Pipe(u32),
    /// A string literal: its index in [`Parsed::lits`] (the executor makes each one a
    /// `Value` once, on its thread; values are `Rc`, a tree must not be).
    Str(u32),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil(Pos),
    /// An integer literal that fits uint64 but not int64: its text. Go parses it, and its
    /// evaluation fails (`N overflows int`).
    Overflow(Span, Pos),
}

/// Stack kept free at each nesting step of the parser, and the segment added when less is
/// left (`stacker`, ADR 0015).
const STACK_RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// A parse error: Go's "template: NAME:LINE: MESSAGE".
#[derive(Debug, Clone)]
pub struct ParseError {
    pub name: String,
    pub line: u32,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "template: {}:{}: {}", self.name, self.line, self.message)
    }
}

/// The parsed trees of one text: its main body and the templates it `define`s, as lists of
/// its tree.
pub struct Parsed {
    pub tree: Tree,
    pub root: Span,
    pub defines: Vec<(String, Span)>,
    /// The string literals of the text, in order of appearance (`Arg::Str` indexes).
    pub lits: Lits,
}

/// String literals, in one buffer (one allocation for all of a text's literals).
#[derive(Debug, Default, Clone)]
pub struct Lits {
    text: String,
    ends: Vec<u32>,
}

impl Lits {
    fn push(&mut self, s: &str) -> u32 {
        self.text.push_str(s);
        self.ends.push(self.text.len() as u32);
        self.ends.len() as u32 - 1
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The `i`th literal ("" past the end).
    pub fn get(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            _ => self.ends.get(i - 1).map_or(0, |&e| e as usize),
        };
        let end = self.ends.get(i).map_or(start, |&e| e as usize);
        &self.text[start..end]
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let s = &self.text[start..end as usize];
            start = end as usize;
            s
        })
    }
}

/// What a token is (sixteen kinds: four bits of a [`Tok`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Kind {
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
const KINDS: [Kind; 16] = [
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
struct Tok(u64);

impl Tok {
    /// No token (the empty lookahead).
    const NONE: Tok = Tok(u64::MAX);

    fn new(kind: Kind, start: usize, end: usize) -> Tok {
        Tok(start as u64 | ((end - start) as u64) << 32 | (kind as u64) << 60)
    }
    fn kind(self) -> Kind {
        KINDS[(self.0 >> 60) as usize]
    }
    fn start(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
    fn end(self) -> usize {
        self.start() + ((self.0 >> 32) & 0x0fff_ffff) as usize
    }
}

/// The largest text [`parse`] takes: a token's length must fit in 28 bits.
const MAX_TEXT: usize = (1 << 28) - 1;

type PResult<T> = Result<T, Box<ParseError>>;

/// Decodes Go's escapes in a quoted string's body (without its quotes) into `out`; on a bad
/// escape, the offset of the byte after its backslash and Go's message.
fn unescape_into(body: &str, out: &mut String) -> Result<(), (usize, &'static str)> {
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
fn escape(rest: &str) -> Result<(char, usize), &'static str> {
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

struct Parser<'a> {
    name: &'a str,
    src: &'a str,
    pos: usize,
    funcs: &'a dyn Fn(&str) -> Option<FuncId>,
    defines: Vec<(String, Span)>,
    lits: Lits,
    /// The arenas being filled (`src` is set at the end).
    tree: Tree,
    /// The nodes, commands and arguments of the lists being parsed: a list moves to its
    /// arena when it ends, after the lists nested in it, so each list is contiguous there.
    node_stack: Vec<Node>,
    cmd_stack: Vec<Cmd>,
    arg_stack: Vec<Arg>,
    /// Variables in scope (Go checks `undefined variable` at parse time).
    vars: Vec<&'a str>,
    /// The lookahead token with its start offset (one is all the grammar needs).
    peeked: Tok,
    /// Trim whitespace after the action that just closed.
    trim_next: bool,
    range_depth: usize,
    /// Where the current action opened (Go's "unclosed action started at").
    action_start: usize,
}

/// Parses `src` (named `name` in errors); `func` resolves a function name (`None`: not
/// defined).
pub fn parse(
    name: &str,
    src: &str,
    func: &dyn Fn(&str) -> Option<FuncId>,
) -> Result<Parsed, ParseError> {
    parse_shared(name, &Arc::from(src), func)
}

/// [`parse`] of a text the tree then shares (a chart's template: no copy of its text).
pub fn parse_shared(
    name: &str,
    src: &Arc<str>,
    func: &dyn Fn(&str) -> Option<FuncId>,
) -> Result<Parsed, ParseError> {
    let mut p = Parser {
        name,
        src,
        pos: 0,
        funcs: func,
        defines: Vec::new(),
        lits: Lits::default(),
        tree: Tree::sized_for(src.len()),
        node_stack: Vec::new(),
        cmd_stack: Vec::new(),
        arg_stack: Vec::new(),
        vars: vec!["$"],
        peeked: Tok::NONE,
        trim_next: false,
        range_depth: 0,
        action_start: 0,
    };
    if src.len() > MAX_TEXT {
        let m = format!(
            "template text of {} bytes is over the limit of {MAX_TEXT}",
            src.len()
        );
        return Err(*p.err_at(0, m));
    }
    let (root, end) = p.list(false).map_err(|e| *e)?;
    if let Some(e) = end {
        return Err(*p.err_at(e.1, format!("unexpected {}", e.0)));
    }
    let mut tree = p.tree;
    tree.src = src.clone();
    Ok(Parsed {
        tree,
        root,
        defines: p.defines,
        lits: p.lits,
    })
}

/// The name a text is parsed under ahead of its render, before its name in the render (its
/// chart's full path, which aliases decide) is known. A parse does not depend on its name
/// except in its error, so only a failed parse is done again, under the real name.
const AHEAD_NAME: &str = "(parsed ahead)";

/// A chart template's text and its parse, done ahead by a pool thread while the chart
/// loads ([`parse_slots`]) or by the render, which takes each tree in Helm's order
/// ([`Slot::take`]). Parsing is a quarter of rendering a large chart and needs nothing but
/// the text, so it runs beside the loader's reading of values.yaml and the render's
/// coalescing, which must stay on the render's thread (values are `Rc`s). The two go
/// through the templates from opposite ends and meet in the middle (super::super::ahead,
/// docs/adr/0012-parallel-template-parse.md).
pub struct Slot {
    text: Arc<str>,
    parsed: Ahead<Box<Result<Parsed, ParseError>>>,
}

impl Slot {
    pub fn new(text: Arc<str>) -> Arc<Slot> {
        Arc::new(Slot {
            text,
            parsed: Ahead::default(),
        })
    }

    /// Whether the parse was done ahead and not yet taken.
    #[cfg(test)]
    pub fn is_parsed_ahead(&self) -> bool {
        self.parsed.is_done()
    }

    /// The tree of this text, parsed as `name`: the one parsed ahead if there is one (a
    /// thread parsing it now is waited for), else parsed here. A parse ahead that failed
    /// is parsed again, for the error under its own name. Each render takes its own tree:
    /// it is executed, then freed, so a second render of the chart parses again.
    pub fn take(
        &self,
        name: &str,
        func: &dyn Fn(&str) -> Option<FuncId>,
    ) -> Result<Parsed, ParseError> {
        match self.parsed.take() {
            Some(done) if done.is_ok() => *done,
            _ => parse_shared(name, &self.text, func),
        }
    }

    fn ahead(&self, func: &dyn Fn(&str) -> Option<FuncId>) {
        self.parsed
            .run(|| Box::new(parse_shared(AHEAD_NAME, &self.text, func)));
    }
}

/// Parses `slots` in their order, on a pool thread, skipping any the render has reached
/// first. Nothing waits for this job: a render waits only on a slot this job is parsing at
/// that moment, so a job that never gets a thread (every pool thread rendering, inside
/// `kiln render`) delays nothing, and a slot nobody takes is simply dropped with its chart.
pub fn parse_slots(slots: &[Arc<Slot>], func: &dyn Fn(&str) -> Option<FuncId>) {
    for s in slots {
        s.ahead(func);
    }
}

/// What ended a list: `{{end}}`, `{{else ...}}`.
type End = (&'static str, usize);

fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r' || c == b'\n'
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// ASCII letters, digits and `_`, by byte.
static ASCII_ALNUM: [bool; 128] = {
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
fn alnum_len(s: &str) -> usize {
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
fn stops(w: u64) -> u64 {
    const fn each(b: u8) -> u64 {
        b as u64 * 0x0101_0101_0101_0101
    }
    const HIGH: u64 = each(0x80);
    let x = w & !HIGH;
    // Bit 7 of `x + each(0x80 - lo)` is set when x >= lo, of `x + each(0x7f - hi)` when x > hi.
    let digit = (x + each(0x80 - b'0')) & !(x + each(0x7f - b'9'));
    let lower = x | each(0x20);
    let letter = (lower + each(0x80 - b'a')) & !(lower + each(0x7f - b'z'));
    let underscore = !((x ^ each(b'_')) + each(0x7f));
    !((digit | letter | underscore) & !w) & HIGH
}

/// The offset of the first `{{` in `s`.
fn find_open(s: &str) -> Option<usize> {
    find_pair(s.as_bytes(), b'{', b'{')
}

/// The offset of the first `a` followed by `b` in `s`: a SIMD search for `a`, then a check
/// of the next byte (`str::find` of two bytes runs the two-way searcher).
fn find_pair(s: &[u8], a: u8, b: u8) -> Option<usize> {
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
fn trim_space_start(s: &str) -> &str {
    let n = s.bytes().take_while(|&c| is_space(c)).count();
    &s[n..]
}

/// `s` without the spaces, tabs and line breaks that end it.
fn trim_space_end(s: &str) -> &str {
    let n = s.bytes().rev().take_while(|&c| is_space(c)).count();
    &s[..s.len() - n]
}

impl<'a> Parser<'a> {
    /// The line of `off`, for an error.
    fn line_of(&self, off: usize) -> u32 {
        line_col(self.src, off).0
    }

    fn pos_of(&self, off: usize) -> Pos {
        Pos(off as u32)
    }

    /// The span of `s`, a slice of the text.
    fn span_of(&self, s: &str) -> Span {
        let start = s.as_ptr() as usize - self.src.as_ptr() as usize;
        Span {
            start: start as u32,
            end: (start + s.len()) as u32,
        }
    }

    /// Moves the nodes of the list that started at `mark` to the arena.
    fn seal_nodes(&mut self, mark: usize) -> Span {
        let start = self.tree.nodes.len() as u32;
        // A copy of a slice, not an element-by-element drain.
        self.tree.nodes.extend_from_slice(&self.node_stack[mark..]);
        self.node_stack.truncate(mark);
        Span {
            start,
            end: self.tree.nodes.len() as u32,
        }
    }

    fn name_id(&mut self, name: &str) -> u32 {
        self.tree.names.push(Box::from(name));
        self.tree.names.len() as u32 - 1
    }

    /// Boxed: a parse error is rare and large, and every token and node is returned in a
    /// `Result` beside it.
    fn err_at(&self, off: usize, message: String) -> Box<ParseError> {
        Box::new(ParseError {
            name: self.name.to_string(),
            line: self.line_of(off),
            message,
        })
    }

    /// The bytes of a token.
    fn text(&self, t: Tok) -> &'a str {
        &self.src[t.start()..t.end()]
    }

    /// A string token's value: borrowed from the text unless it has escapes.
    fn str_value(&self, t: Tok) -> std::borrow::Cow<'a, str> {
        let body = &self.src[t.start() + 1..t.end() - 1];
        if t.kind() == Kind::StrEscaped {
            let mut out = String::with_capacity(body.len());
            // Checked when lexed: decoding again cannot fail.
            let _ = unescape_into(body, &mut out);
            std::borrow::Cow::Owned(out)
        } else {
            std::borrow::Cow::Borrowed(body)
        }
    }

    /// A character constant's value (checked when lexed).
    fn char_value(&self, t: Tok) -> i64 {
        let body = &self.src[t.start() + 1..t.end() - 1];
        match body.strip_prefix('\\') {
            Some(e) => escape(e).map_or(0, |(c, _)| c as i64),
            None => body.chars().next().map_or(0, |c| c as i64),
        }
    }

    /// A token as errors name it (the form Go's messages here have always had: `Close`,
    /// `Ident("x")`, `Str("decoded")`).
    fn describe(&self, t: Tok) -> String {
        match t.kind() {
            Kind::Ident | Kind::Var | Kind::Num => format!("{:?}({:?})", t.kind(), self.text(t)),
            Kind::Field => format!("Field({:?})", &self.text(t)[1..]),
            Kind::Str | Kind::StrEscaped => format!("Str({:?})", self.str_value(t)),
            Kind::Char => format!("Char({})", self.char_value(t)),
            k => format!("{k:?}"),
        }
    }

    /// Parses nodes until EOF or a `{{end}}`/`{{else}}` (returned) when `inner`.
    fn list(&mut self, inner: bool) -> PResult<(Span, Option<End>)> {
        let mark = self.node_stack.len();
        loop {
            // Text up to the next action.
            let rest = &self.src[self.pos..];
            let next = find_open(rest);
            let mut text = match next {
                Some(i) => &rest[..i],
                None => rest,
            };
            if self.trim_next {
                text = trim_space_start(text);
                self.trim_next = false;
            }
            let Some(i) = next else {
                if !text.is_empty() {
                    let t = self.span_of(text);
                    self.node_stack.push(Node::Text(t));
                }
                self.pos = self.src.len();
                if inner {
                    return Err(self.err_at(self.pos, "unexpected EOF".into()));
                }
                return Ok((self.seal_nodes(mark), None));
            };
            let action_start = self.pos + i;
            self.action_start = action_start;
            let mut after = action_start + 2;
            let bytes = self.src.as_bytes();
            // `{{- ` trims the text before.
            if bytes.get(after) == Some(&b'-') && bytes.get(after + 1).is_some_and(|&c| is_space(c))
            {
                text = trim_space_end(text);
                after += 1;
            }
            if !text.is_empty() {
                let t = self.span_of(text);
                self.node_stack.push(Node::Text(t));
            }
            self.pos = after;
            // A comment: `{{/* … */}}`, possibly with trim markers.
            let ws = self.src[self.pos..]
                .bytes()
                .take_while(|&c| is_space(c))
                .count();
            if self.src[self.pos + ws..].starts_with("/*") {
                let body = self.pos + ws + 2;
                let Some(end) = find_pair(&self.src.as_bytes()[body..], b'*', b'/') else {
                    return Err(self.err_at(action_start, "unclosed comment".into()));
                };
                let mut q = body + end + 2;
                let tail = &self.src[q..];
                if tail.starts_with("}}") {
                    q += 2;
                } else if let Some(t) =
                    tail.strip_prefix(|c: char| c == ' ' || c == '\t' || c == '\r' || c == '\n')
                {
                    let t2 = trim_space_start(t);
                    if let Some(rest) = t2.strip_prefix("-}}") {
                        let _ = rest;
                        q = self.src.len() - t2.len() + 3;
                        self.trim_next = true;
                    } else if t2.starts_with("}}") {
                        q = self.src.len() - t2.len() + 2;
                    } else {
                        return Err(self
                            .err_at(action_start, "comment ends before closing delimiter".into()));
                    }
                } else {
                    return Err(
                        self.err_at(action_start, "comment ends before closing delimiter".into())
                    );
                }
                self.pos = q;
                continue;
            }
            // An action.
            self.skip_space();
            let t = self.next()?;
            let off = t.start();
            let word = if t.kind() == Kind::Ident {
                self.text(t)
            } else {
                ""
            };
            match word {
                "end" => {
                    self.expect_close("end")?;
                    if !inner {
                        return Err(self.err_at(off, "unexpected {{end}}".into()));
                    }
                    return Ok((self.seal_nodes(mark), Some(("end", off))));
                }
                "else" => {
                    if !inner {
                        return Err(self.err_at(off, "unexpected {{else}}".into()));
                    }
                    return Ok((self.seal_nodes(mark), Some(("else", off))));
                }
                kw @ ("if" | "range" | "with") => {
                    let n = self.control(kw, off)?;
                    self.node_stack.push(n);
                }
                kw @ ("define" | "block") => {
                    self.skip_space();
                    let t = self.next()?;
                    if !matches!(t.kind(), Kind::Str | Kind::StrEscaped) {
                        let d = self.describe(t);
                        return Err(
                            self.err_at(t.start(), format!("unexpected {d} in {kw} clause"))
                        );
                    }
                    let name = self.str_value(t).into_owned();
                    let pipe = if kw == "block" {
                        Some(self.pipeline(kw)?)
                    } else {
                        self.expect_close(kw)?;
                        None
                    };
                    let saved = std::mem::replace(&mut self.vars, vec!["$"]);
                    let (body, end) = self.list(true)?;
                    self.vars = saved;
                    match end {
                        Some(("end", _)) => {}
                        Some((e, o)) => {
                            return Err(self.err_at(o, format!("unexpected {{{{{e}}}}} in {kw}")));
                        }
                        None => return Err(self.err_at(off, "unexpected EOF".into())),
                    }
                    if let Some(pipe) = pipe {
                        let n = Node::Template {
                            name: self.name_id(&name),
                            pipe: Some(pipe),
                            pos: self.pos_of(off),
                        };
                        self.node_stack.push(n);
                    }
                    self.defines.push((name, body));
                }
                "template" => {
                    self.skip_space();
                    let t = self.next()?;
                    if !matches!(t.kind(), Kind::Str | Kind::StrEscaped) {
                        let d = self.describe(t);
                        return Err(
                            self.err_at(t.start(), format!("unexpected {d} in template clause"))
                        );
                    }
                    let name = self.str_value(t);
                    self.skip_space();
                    let pipe = if self.peek()?.kind() == Kind::Close {
                        self.next()?;
                        None
                    } else {
                        Some(self.pipeline("template")?)
                    };
                    let n = Node::Template {
                        name: self.name_id(&name),
                        pipe,
                        pos: self.pos_of(off),
                    };
                    self.node_stack.push(n);
                }
                kw @ ("break" | "continue") => {
                    if self.range_depth == 0 {
                        return Err(self.err_at(off, format!("{{{{{kw}}}}} outside {{{{range}}}}")));
                    }
                    self.expect_close(kw)?;
                    let pos = self.pos_of(off);
                    self.node_stack.push(if kw == "break" {
                        Node::Break(pos)
                    } else {
                        Node::Continue(pos)
                    });
                }
                _ => {
                    self.unread(t);
                    let pipe = self.pipeline("command")?;
                    self.node_stack.push(Node::Action(pipe));
                }
            }
        }
    }

    /// A control structure (`if`, `with`, `range`, …); its body may nest another, so a deep
    /// nest continues on heap-grown stack segments (ADR 0015), as Go's parser's goroutine
    /// stack grows: 5,000 nested `if`s parse as in Helm.
    fn control(&mut self, kw: &str, off: usize) -> PResult<Node> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.control_here(kw, off))
    }

    fn control_here(&mut self, kw: &str, off: usize) -> PResult<Node> {
        let mark = self.vars.len();
        let pipe = self.pipeline(kw)?;
        if kw == "range" {
            self.range_depth += 1;
        }
        let (list, end) = self.list(true)?;
        if kw == "range" {
            self.range_depth -= 1;
        }
        let else_list = match end {
            Some(("end", _)) => None,
            Some((_, eoff)) => {
                // `{{else}}`, `{{else if …}}`, `{{else with …}}`.
                self.skip_space();
                let t = self.next()?;
                let o = t.start();
                let word = if t.kind() == Kind::Ident {
                    self.text(t)
                } else {
                    ""
                };
                match t.kind() {
                    Kind::Close => {
                        let (el, end2) = self.list(true)?;
                        match end2 {
                            Some(("end", _)) => Some(el),
                            Some((_, o2)) => {
                                return Err(self.err_at(o2, "expected end; found {{else}}".into()));
                            }
                            None => return Err(self.err_at(eoff, "unexpected EOF".into())),
                        }
                    }
                    Kind::Ident
                        if (word == "if" && kw == "if") || (word == "with" && kw == "with") =>
                    {
                        // The chained branch shares this `{{end}}`.
                        let node = self.control(word, o)?;
                        let mark = self.node_stack.len();
                        self.node_stack.push(node);
                        Some(self.seal_nodes(mark))
                    }
                    _ => {
                        let d = self.describe(t);
                        return Err(self.err_at(o, format!("unexpected {d} in else")));
                    }
                }
            }
            None => return Err(self.err_at(off, "unexpected EOF".into())),
        };
        self.vars.truncate(mark);
        let b = Branch {
            pipe,
            list,
            else_list,
        };
        Ok(match kw {
            "if" => Node::If(b),
            "range" => Node::Range(b),
            _ => Node::With(b),
        })
    }

    fn expect_close(&mut self, ctx: &str) -> PResult<()> {
        self.skip_space();
        let t = self.next()?;
        if t.kind() != Kind::Close {
            let d = self.describe(t);
            return Err(self.err_at(t.start(), format!("unexpected {d} in {ctx}")));
        }
        Ok(())
    }

    /// Skips spaces inside an action: straight over the bytes, not token by token (this was
    /// a tenth of the parse). Spaces before `-}}` are left: with it they are a trimming close.
    fn skip_space(&mut self) {
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
    fn peek(&mut self) -> PResult<Tok> {
        if self.peeked != Tok::NONE {
            return Ok(self.peeked);
        }
        let t = self.lex()?;
        self.peeked = t;
        Ok(t)
    }

    fn next(&mut self) -> PResult<Tok> {
        let t = self.peeked;
        if t != Tok::NONE {
            self.peeked = Tok::NONE;
            return Ok(t);
        }
        self.lex()
    }

    /// Puts back the token `next` returned (nothing was peeked after it).
    fn unread(&mut self, t: Tok) {
        debug_assert!(self.peeked == Tok::NONE);
        self.peeked = t;
    }

    /// A token of `kind` from `start` to the current position.
    fn tok(&self, kind: Kind, start: usize) -> Tok {
        Tok::new(kind, start, self.pos)
    }

    /// One token inside an action.
    fn lex(&mut self) -> PResult<Tok> {
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

    fn number(&mut self, start: usize) -> Tok {
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

    /// A pipeline up to `}}` (or `)` when `paren`), with an optional declaration.
    fn pipeline(&mut self, ctx: &str) -> PResult<u32> {
        self.pipeline_inner(ctx, false)
    }

    /// A pipeline; a parenthesized one nests, on heap-grown stack segments when deep.
    fn pipeline_inner(&mut self, ctx: &str, paren: bool) -> PResult<u32> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.pipeline_here(ctx, paren)
        })
    }

    fn pipeline_here(&mut self, ctx: &str, paren: bool) -> PResult<u32> {
        self.skip_space();
        let first = self.peek()?;
        let start = first.start();
        let decl_start = self.tree.decls.len() as u32;
        let mut pipe = Pipe {
            pos: self.pos_of(start),
            decl: Span::default(),
            is_assign: false,
            cmds: Span::default(),
        };
        // Declarations: `$x :=`, `$x =`, `$i, $v :=`.
        if first.kind() == Kind::Var {
            let save_pos = self.pos;
            let save_peek = self.peeked;
            let save_trim = self.trim_next;
            let t1 = self.next()?;
            let v1 = self.text(t1);
            self.skip_space();
            let mut names: [Option<&'a str>; 2] = [None, None];
            match self.peek()?.kind() {
                Kind::Declare | Kind::Assign => {
                    pipe.is_assign = self.next()?.kind() == Kind::Assign;
                    names[0] = Some(v1);
                }
                Kind::Comma if ctx == "range" => {
                    self.next()?;
                    self.skip_space();
                    let t2 = self.next()?;
                    if t2.kind() != Kind::Var {
                        return Err(
                            self.err_at(t2.start(), "missing variable in range declaration".into())
                        );
                    }
                    self.skip_space();
                    let t3 = self.next()?;
                    match t3.kind() {
                        Kind::Declare => {}
                        Kind::Assign => pipe.is_assign = true,
                        _ => {
                            return Err(self.err_at(
                                t3.start(),
                                "expected := or = in range declaration".into(),
                            ));
                        }
                    }
                    names = [Some(v1), Some(self.text(t2))];
                }
                _ => {
                    self.pos = save_pos;
                    self.peeked = save_peek;
                    self.trim_next = save_trim;
                }
            }
            // Go's parser (parse.go `pipeline`) takes `$x = …` as it takes `$x := …`: the
            // name is in scope from here on, and assigning to a variable never declared
            // fails only when the action runs (exec.go `setVar`), so a branch never taken
            // renders.
            for v in names.into_iter().flatten() {
                self.vars.push(v);
                self.tree.decls.push(Arc::from(v));
            }
        }
        pipe.decl = Span {
            start: decl_start,
            end: self.tree.decls.len() as u32,
        };
        let cmd_mark = self.cmd_stack.len();
        loop {
            self.skip_space();
            let t = self.next()?;
            match t.kind() {
                Kind::Close if !paren => break,
                Kind::RParen if paren => break,
                Kind::Close | Kind::RParen => {
                    let d = self.describe(t);
                    return Err(self.err_at(t.start(), format!("unexpected {d} in {ctx}")));
                }
                Kind::Pipe if self.cmd_stack.len() > cmd_mark => continue,
                _ => {
                    self.unread(t);
                    let cmd = self.command(paren)?;
                    self.cmd_stack.push(cmd);
                }
            }
        }
        if self.cmd_stack.len() == cmd_mark {
            return Err(self.err_at(start, format!("missing value for {ctx}")));
        }
        let cmds_start = self.tree.cmds.len() as u32;
        self.tree
            .cmds
            .extend_from_slice(&self.cmd_stack[cmd_mark..]);
        self.cmd_stack.truncate(cmd_mark);
        pipe.cmds = Span {
            start: cmds_start,
            end: self.tree.cmds.len() as u32,
        };
        self.tree.pipes.push(pipe);
        Ok(self.tree.pipes.len() as u32 - 1)
    }

    fn command(&mut self, paren: bool) -> PResult<Cmd> {
        let start = self.peek()?.start();
        let pos = self.pos_of(start);
        let arg_mark = self.arg_stack.len();
        loop {
            self.skip_space();
            match self.peek()?.kind() {
                Kind::Close | Kind::Pipe => break,
                Kind::RParen if paren => break,
                _ => {}
            }
            let arg = self.operand()?;
            self.arg_stack.push(arg);
            // Operands are separated by spaces.
            let t = self.peek()?;
            match t.kind() {
                Kind::Space | Kind::Close | Kind::Pipe => {}
                Kind::RParen if paren => {}
                _ => {
                    let d = self.describe(t);
                    return Err(self.err_at(t.start(), format!("unexpected {d} in operand")));
                }
            }
        }
        if self.arg_stack.len() == arg_mark {
            return Err(self.err_at(start, "empty command".into()));
        }
        let args_start = self.tree.args.len() as u32;
        self.tree
            .args
            .extend_from_slice(&self.arg_stack[arg_mark..]);
        self.arg_stack.truncate(arg_mark);
        Ok(Cmd {
            pos,
            args: Span {
                start: args_start,
                end: self.tree.args.len() as u32,
            },
        })
    }

    /// The fields that follow (`.A.B` after a term), as one slice of the text: adjacent
    /// field tokens are contiguous in it.
    fn fields(&mut self) -> PResult<Chain> {
        let mut span: Option<(u32, u32)> = None;
        loop {
            let t = self.peek()?;
            if t.kind() != Kind::Field {
                break;
            }
            self.peeked = Tok::NONE;
            span = Some(match span {
                None => (t.start() as u32 + 1, t.end() as u32),
                Some((s, _)) => (s, t.end() as u32),
            });
        }
        Ok(match span {
            Some((start, end)) => Span { start, end },
            None => Span::default(),
        })
    }

    fn operand(&mut self) -> PResult<Arg> {
        let t = self.next()?;
        let o = t.start();
        let pos = self.pos_of(o);
        let term = match t.kind() {
            Kind::Ident => match self.text(t) {
                "true" => Arg::Bool(true),
                "false" => Arg::Bool(false),
                "nil" => Arg::Nil(pos),
                name => match (self.funcs)(name) {
                    Some(id) => Arg::Ident(id, pos),
                    None => {
                        return Err(self.err_at(o, format!("function \"{name}\" not defined")));
                    }
                },
            },
            Kind::Dot => Arg::Dot(pos),
            Kind::Field => {
                self.unread(t);
                return Ok(Arg::Field(self.fields()?, pos));
            }
            Kind::Var => {
                let v = self.text(t);
                if !self.vars.contains(&v) {
                    return Err(self.err_at(o, format!("undefined variable \"{v}\"")));
                }
                let name = Span {
                    start: t.start() as u32,
                    end: t.end() as u32,
                };
                return Ok(Arg::Var(name, self.fields()?, pos));
            }
            Kind::Str => {
                let body = &self.src[t.start() + 1..t.end() - 1];
                Arg::Str(self.lits.push(body))
            }
            Kind::StrEscaped => Arg::Str(self.lits.push(&self.str_value(t))),
            Kind::Char => Arg::Int(self.char_value(t)),
            Kind::Num => {
                let text = self.text(t);
                number_arg(text, self.span_of(text), pos).map_err(|m| self.err_at(o, m))?
            }
            Kind::LParen => {
                let p = self.pipeline_inner("parenthesized pipeline", true)?;
                Arg::Pipe(p)
            }
            _ => {
                let d = self.describe(t);
                return Err(self.err_at(o, format!("unexpected {d} in operand")));
            }
        };
        // A field chain right after a term: `(pipe).A.B`.
        let chain = self.fields()?;
        if chain.is_empty() {
            return Ok(term);
        }
        self.tree.args.push(term);
        Ok(Arg::Chain(self.tree.args.len() as u32 - 1, chain, pos))
    }
}

/// A number literal as Go's parser types it (text/template/parse `newNumber`, and exec's
/// `idealConstant` for what a bare constant evaluates to): an int when it is written as an
/// integer that fits int64, a float when it has a `.`, an exponent or a `p`; an integer that
/// fits uint64 only parses but fails when evaluated, and a larger one is Go's parse error
/// `integer overflow` (`Err` holds the message).
fn number_arg(text: &str, span: Span, pos: Pos) -> Result<Arg, String> {
    let t: String = text.chars().filter(|&c| c != '_').collect();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(&t)),
    };
    let (digits, radix) = if let Some(h) =
        body.strip_prefix("0x").or_else(|| body.strip_prefix("0X"))
    {
        (h, 16)
    } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
        (b, 2)
    } else if let Some(o) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
        (o, 8)
    } else if body.len() > 1 && body.starts_with('0') && body.bytes().all(|b| b.is_ascii_digit()) {
        (&body[1..], 8)
    } else {
        (body, 10)
    };
    let integral = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
    if integral {
        return match u64::from_str_radix(digits, radix) {
            Ok(m) if neg && m <= 1 << 63 => Ok(Arg::Int((m as i64).wrapping_neg())),
            Ok(m) if !neg && m <= i64::MAX as u64 => Ok(Arg::Int(m as i64)),
            // Go: a uint64 but not an int64 (`IsUint` only): "N overflows int" at exec.
            Ok(_) if !neg => Ok(Arg::Overflow(span, pos)),
            _ => Err(format!("integer overflow: \"{text}\"")),
        };
    }
    let f: f64 = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => hex_float(h),
        None => body.parse().ok(),
    }
    .ok_or_else(|| format!("bad number syntax: \"{text}\""))?;
    if !text.contains(['.', 'e', 'E', 'p', 'P']) {
        // Go: a float that "looks like an integer" (`09`, a legacy octal that is not one).
        return Err(format!("integer overflow: \"{text}\""));
    }
    Ok(Arg::Float(if neg { -f } else { f }))
}

/// A hexadecimal float (`1p60`, `1.8p1`) after its `0x`.
fn hex_float(h: &str) -> Option<f64> {
    let (mant, exp) = h.split_once(['p', 'P'])?;
    let exp: i32 = exp.parse().ok()?;
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quote_only(name: &str) -> Option<FuncId> {
        (name == "quote").then_some(FuncId(0))
    }

    /// A text of about 60 KB: long enough that a pool thread is still parsing it when the
    /// render asks for it.
    fn big(i: usize, tail: &str) -> String {
        let mut t =
            format!("{{{{ .Values.a{i}.b | quote }}}} {{{{ $x := \"s\\t{i}\" }}}}\n").repeat(1500);
        t.push_str(tail);
        t
    }

    fn summary(r: &Result<Parsed, ParseError>) -> String {
        match r {
            Ok(p) => format!("{:?} {:?} {:?} {:?}", p.tree, p.root, p.defines, p.lits),
            Err(e) => e.to_string(),
        }
    }

    /// Whoever parses a slot (the pool ahead of the render, or the render itself, before,
    /// while or after the pool does), the render gets the tree or error a parse of the text
    /// under its own name gives; a second render parses anew.
    #[test]
    fn slots_give_the_trees_and_errors_of_a_parse_under_the_render_name() {
        let texts = [
            big(0, ""),
            big(1, "{{ nope }}"),
            big(2, "{{ define \"d\" }}x{{ end }}"),
            big(3, "{{ end }}"),
        ];
        let names = ["t0", "t1", "t2", "t3"];
        let want: Vec<String> = names
            .iter()
            .zip(&texts)
            .map(|(n, t)| summary(&parse(n, t, &quote_only)))
            .collect();
        assert_eq!(want[1], "template: t1:1501: function \"nope\" not defined");
        assert_eq!(want[3], "template: t3:1501: unexpected {{end}}");
        let func: &'static (dyn Fn(&str) -> Option<FuncId> + Sync) = &quote_only;
        // Parsed ahead on the pool, taken from the other end (some taken while the pool is
        // still at them, some before it starts them).
        for _ in 0..20 {
            let slots: Vec<Arc<Slot>> = texts
                .iter()
                .map(|t| Slot::new(Arc::from(t.as_str())))
                .collect();
            let job = slots.clone();
            rayon::spawn(move || parse_slots(&job, func));
            for i in (0..4).rev() {
                assert_eq!(
                    summary(&slots[i].take(names[i], &quote_only)),
                    want[i],
                    "{i}"
                );
            }
            // A second render of the same chart parses again.
            assert_eq!(summary(&slots[2].take("t2", &quote_only)), want[2]);
        }
        // Never parsed ahead: the render parses.
        let lone = Slot::new(Arc::from(texts[1].as_str()));
        assert_eq!(summary(&lone.take("t1", &quote_only)), want[1]);
        // Parsed ahead to the end before the render: an error is parsed again under the
        // render's name, never reported under the placeholder.
        let done = Slot::new(Arc::from(texts[3].as_str()));
        done.ahead(&quote_only);
        assert!(done.parsed.is_done());
        assert_eq!(summary(&done.take("t3", &quote_only)), want[3]);
    }

    /// The tree shares the chart's text: parsing copies nothing of it.
    #[test]
    fn a_shared_parse_keeps_the_text_it_was_given() {
        let text: Arc<str> = Arc::from("a {{ 1 }} b");
        let p = parse_shared("t", &text, &quote_only).unwrap();
        assert!(Arc::ptr_eq(&p.tree.src, &text));
    }

    /// Go's lexer (`lexQuote`) ends a quoted string at a newline even after a backslash:
    /// "unterminated quoted string", not an escape error; escapes are still checked and
    /// decoded, and an error names the line it is on.
    #[test]
    fn quoted_strings_end_and_decode_as_in_go() {
        let err = |src: &str| parse("t", src, &quote_only).err().map(|e| e.to_string());
        assert_eq!(
            err("{{ \"back\\\nslash\" }}").as_deref(),
            Some("template: t:1: unterminated quoted string")
        );
        assert_eq!(
            err("{{ \"a\" }}\n{{ \"b\\q\" }}").as_deref(),
            Some("template: t:2: unknown escape sequence")
        );
        assert_eq!(
            err("{{ \"x\\x4\" }}").as_deref(),
            Some("template: t:1: invalid escape")
        );
        assert_eq!(
            err("{{ 'ab' }}").as_deref(),
            Some("template: t:1: unterminated character constant")
        );
        let p = parse(
            "t",
            r#"{{ "\"q\" \\ \x41\u00e9\101" }}{{ '\n' }}{{ 'é' }}"#,
            &quote_only,
        )
        .unwrap();
        assert_eq!(p.lits.iter().collect::<Vec<_>>(), ["\"q\" \\ Aé\u{41}"]);
        let ints: Vec<i64> = p
            .tree
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Int(i) => Some(*i),
                _ => None,
            })
            .collect();
        assert_eq!(ints, [10, 'é' as i64]);
    }

    /// Errors name the token they met as they always have (`Close`, `Str("decoded")`).
    #[test]
    fn errors_name_the_token() {
        let err = |src: &str| parse("t", src, &quote_only).err().map(|e| e.to_string());
        assert_eq!(
            err("{{ define 1 }}{{ end }}").as_deref(),
            Some("template: t:1: unexpected Num(\"1\") in define clause")
        );
        assert_eq!(
            err("{{ quote \"a\"\"b\\n\" }}").as_deref(),
            Some("template: t:1: unexpected Str(\"b\\n\") in operand")
        );
        assert_eq!(
            err("{{ template .X }}").as_deref(),
            Some("template: t:1: unexpected Field(\"X\") in template clause")
        );
        assert_eq!(
            err("{{ if 1 }}{{ else $x }}{{ end }}").as_deref(),
            Some("template: t:1: unexpected Var(\"$x\") in else")
        );
        assert_eq!(
            err("{{ quote 'a'( }}").as_deref(),
            Some("template: t:1: unexpected LParen in operand")
        );
    }

    /// The eight-byte name scan ends where the byte-at-a-time rule ends, for every ASCII
    /// byte at every place in the word, and past it (non-ASCII letters, a word's tail).
    #[test]
    fn names_end_where_a_byte_at_a_time_scan_ends() {
        fn slow(s: &str) -> usize {
            s.char_indices()
                .find(|&(_, c)| !is_alnum(c))
                .map_or(s.len(), |(i, _)| i)
        }
        for b in 0u8..128 {
            for at in 0..12 {
                let mut name = "abcdefghijkl_".to_string().into_bytes();
                name.insert(at, b);
                let s = String::from_utf8(name).unwrap();
                assert_eq!(alnum_len(&s), slow(&s), "{s:?}");
            }
        }
        for s in [
            "",
            "a",
            "Zz09_",
            "abcdefgh",
            "abcdefghé x",
            "abcdefg€",
            "abcdefgh\u{a0}",
            "ab.cd",
        ] {
            assert_eq!(alnum_len(s), slow(s), "{s:?}");
        }
    }

    #[test]
    fn literals_and_field_chains_borrow_or_decode_the_text() {
        let p = parse(
            "t",
            r#"{{ .A.B.C | quote }}{{ $v := "plain" }}{{ "esc\"aped\n" }}{{ `raw\n` }}{{ $v.X.Y }}"#,
            &quote_only,
        )
        .unwrap();
        assert_eq!(
            p.lits.iter().collect::<Vec<_>>(),
            ["plain", "esc\"aped\n", "raw\\n"]
        );
        let t = &p.tree;
        let first = t.list(p.root)[0];
        let Node::Action(pipe) = first else {
            panic!("{first:?}")
        };
        let cmds = &t.cmds[t.pipes[pipe as usize].cmds.range()];
        let Arg::Field(chain, _) = t.args[cmds[0].args.start as usize] else {
            panic!("{cmds:?}")
        };
        assert_eq!(t.str(chain), "A.B.C");
        assert!(matches!(
            t.args[cmds[1].args.start as usize],
            Arg::Ident(FuncId(0), _)
        ));
        let var = t
            .args
            .iter()
            .find_map(|a| match *a {
                Arg::Var(n, c, _) => Some((t.str(n), t.str(c))),
                _ => None,
            })
            .unwrap();
        assert_eq!(var, ("$v", "X.Y"));
    }
}
