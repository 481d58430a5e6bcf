//! Lexer and parser of Go's `text/template` language, after Go's `text/template/parse`
//! (lex.go, parse.go, node.go of Go 1.26): actions with trim markers, comments, pipelines
//! with declarations and assignments, `if`/`else if`/`range`/`with`/`else with`/`define`/
//! `template`/`block`/`break`/`continue`, parenthesised pipelines and field chains.
//!
//! Unlike Go, lexing and parsing are one pass over the text (no goroutine hand-off); the
//! tree is the same. Function names are checked at parse time, as Go does ("function %q not
//! defined"), so an unknown function fails even in a branch that never runs.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
/// be parsed on two threads (`parse_many`, ADR 0012).
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// The template text.
    pub src: Box<str>,
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
}

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

/// A token. Names and numbers borrow the template text: an owned `String` per identifier
/// and field was most of the parser's allocations. A quoted string is borrowed too unless it
/// has escapes.
#[derive(Debug, Clone, PartialEq)]
enum Tok<'a> {
    Space,
    Ident(&'a str),
    Field(&'a str),
    Var(&'a str),
    Dot,
    Str(Cow<'a, str>),
    Num(&'a str),
    Char(i64),
    Pipe,
    LParen,
    RParen,
    Comma,
    Declare,
    Assign,
    Close,
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
    peeked: Option<(Tok<'a>, usize)>,
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
    let mut p = Parser {
        name,
        src,
        pos: 0,
        funcs: func,
        defines: Vec::new(),
        lits: Lits::default(),
        tree: Tree::default(),
        node_stack: Vec::new(),
        cmd_stack: Vec::new(),
        arg_stack: Vec::new(),
        vars: vec!["$"],
        peeked: None,
        trim_next: false,
        range_depth: 0,
        action_start: 0,
    };
    let (root, end) = p.list(false)?;
    if let Some(e) = end {
        return Err(p.err_at(e.1, format!("unexpected {}", e.0)));
    }
    let mut tree = p.tree;
    tree.src = Box::from(src);
    Ok(Parsed {
        tree,
        root,
        defines: p.defines,
        lits: p.lits,
    })
}

/// Below this many bytes of template text a second thread costs more than it saves (a
/// thread start is tens of microseconds).
const PARALLEL_MIN_BYTES: usize = 64 * 1024;

/// Parses `texts` (name, text) as [`parse`] would one after the other, and returns their
/// results in the same order, up to and including the first error: the caller reports the
/// first error in that order, as a sequential parse would. Texts are independent, so a large
/// set is parsed by this thread and a scoped helper thread together, each taking the next
/// unparsed text (docs/adr/0012-parallel-template-parse.md). Taking texts one at a time, not
/// a fixed half each, matters on two cores: when the other core is busy (the schema check
/// runs beside the render), this thread simply parses almost everything itself instead of
/// waiting for a half that was never started. The trees do not depend on the thread.
pub fn parse_many(
    texts: &[(&str, &str)],
    func: &(dyn Fn(&str) -> Option<FuncId> + Sync),
) -> Vec<Result<Parsed, ParseError>> {
    let total: usize = texts.iter().map(|(_, t)| t.len()).sum();
    let mut results: Vec<Option<Result<Parsed, ParseError>>> =
        if total < PARALLEL_MIN_BYTES || texts.len() < 2 {
            let mut out = Vec::with_capacity(texts.len());
            for (name, text) in texts {
                let r = parse(name, text, func);
                let failed = r.is_err();
                out.push(Some(r));
                if failed {
                    break;
                }
            }
            out
        } else {
            let next = AtomicUsize::new(0);
            let work = || {
                let mut done = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((name, text)) = texts.get(i) else {
                        return done;
                    };
                    done.push((i, parse(name, text, func)));
                }
            };
            // The helper is a job on rayon's pool, not a new thread: a pool thread is
            // already started and its allocator heap already has pages (a fresh thread's
            // first allocations fault in new memory). Inside `kiln render` the calling
            // thread is itself a pool thread: if no other is free, it runs the job itself
            // when the scope ends. A panic in the job is re-raised here by the scope.
            let theirs = std::sync::Mutex::new(Vec::new());
            let mine = rayon::in_place_scope(|scope| {
                scope.spawn(|_| {
                    let done = work();
                    if let Ok(mut t) = theirs.lock() {
                        *t = done;
                    }
                });
                work()
            });
            let theirs = theirs.into_inner().unwrap_or_default();
            let mut out: Vec<Option<Result<Parsed, ParseError>>> =
                std::iter::repeat_with(|| None).take(texts.len()).collect();
            for (i, r) in mine.into_iter().chain(theirs) {
                out[i] = Some(r);
            }
            out
        };
    // Everything after the first error is dropped, as a sequential parse never reaches it.
    if let Some(first_err) = results.iter().position(|r| matches!(r, Some(Err(_)))) {
        results.truncate(first_err + 1);
    }
    results.into_iter().flatten().collect()
}

/// What ended a list: `{{end}}`, `{{else ...}}`.
type End = (&'static str, usize);

fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r' || c == b'\n'
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// The length in bytes of the run of alphanumerics (and `_`) that starts `s`: bytes for
/// ASCII, characters only past it.
fn alnum_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if b == b'_' || b.is_ascii_alphanumeric() {
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

/// The offset of the first `{{` in `s`: a memchr for `{`, then a check of the next byte.
fn find_open(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(i) = s[from..].find('{') {
        let at = from + i;
        if bytes.get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
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
        self.tree.nodes.extend(self.node_stack.drain(mark..));
        Span {
            start,
            end: self.tree.nodes.len() as u32,
        }
    }

    fn name_id(&mut self, name: &str) -> u32 {
        self.tree.names.push(Box::from(name));
        self.tree.names.len() as u32 - 1
    }

    fn err_at(&self, off: usize, message: String) -> ParseError {
        ParseError {
            name: self.name.to_string(),
            line: self.line_of(off),
            message,
        }
    }

    /// Parses nodes until EOF or a `{{end}}`/`{{else}}` (returned) when `inner`.
    fn list(&mut self, inner: bool) -> Result<(Span, Option<End>), ParseError> {
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
                text = text.trim_start_matches([' ', '\t', '\r', '\n']);
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
                text = text.trim_end_matches([' ', '\t', '\r', '\n']);
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
                let Some(end) = self.src[body..].find("*/") else {
                    return Err(self.err_at(action_start, "unclosed comment".into()));
                };
                let mut q = body + end + 2;
                let tail = &self.src[q..];
                if tail.starts_with("}}") {
                    q += 2;
                } else if let Some(t) =
                    tail.strip_prefix(|c: char| c == ' ' || c == '\t' || c == '\r' || c == '\n')
                {
                    let t2 = t.trim_start_matches([' ', '\t', '\r', '\n']);
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
            let (tok, off) = self.next()?;
            match tok {
                Tok::Ident("end") => {
                    self.expect_close("end")?;
                    if !inner {
                        return Err(self.err_at(off, "unexpected {{end}}".into()));
                    }
                    return Ok((self.seal_nodes(mark), Some(("end", off))));
                }
                Tok::Ident("else") => {
                    if !inner {
                        return Err(self.err_at(off, "unexpected {{else}}".into()));
                    }
                    return Ok((self.seal_nodes(mark), Some(("else", off))));
                }
                Tok::Ident(kw @ ("if" | "range" | "with")) => {
                    let n = self.control(kw, off)?;
                    self.node_stack.push(n);
                }
                Tok::Ident(kw @ ("define" | "block")) => {
                    self.skip_space();
                    let (t, o) = self.next()?;
                    let Tok::Str(name) = t else {
                        return Err(self.err_at(o, format!("unexpected {t:?} in {kw} clause")));
                    };
                    let name = name.into_owned();
                    let pipe = if kw == "block" {
                        Some(self.pipeline(kw, true)?)
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
                Tok::Ident("template") => {
                    self.skip_space();
                    let (t, o) = self.next()?;
                    let Tok::Str(name) = t else {
                        return Err(self.err_at(o, format!("unexpected {t:?} in template clause")));
                    };
                    self.skip_space();
                    let pipe = if matches!(self.peek()?, Tok::Close) {
                        self.next()?;
                        None
                    } else {
                        Some(self.pipeline("template", false)?)
                    };
                    let n = Node::Template {
                        name: self.name_id(&name),
                        pipe,
                        pos: self.pos_of(off),
                    };
                    self.node_stack.push(n);
                }
                Tok::Ident(kw @ ("break" | "continue")) => {
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
                t => {
                    self.unread(t, off);
                    let pipe = self.pipeline("command", false)?;
                    self.node_stack.push(Node::Action(pipe));
                }
            }
        }
    }

    fn control(&mut self, kw: &str, off: usize) -> Result<Node, ParseError> {
        let mark = self.vars.len();
        let pipe = self.pipeline(kw, false)?;
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
                let (t, o) = self.next()?;
                match t {
                    Tok::Close => {
                        let (el, end2) = self.list(true)?;
                        match end2 {
                            Some(("end", _)) => Some(el),
                            Some((_, o2)) => {
                                return Err(self.err_at(o2, "expected end; found {{else}}".into()));
                            }
                            None => return Err(self.err_at(eoff, "unexpected EOF".into())),
                        }
                    }
                    Tok::Ident(k2)
                        if (k2 == "if" && kw == "if") || (k2 == "with" && kw == "with") =>
                    {
                        // The chained branch shares this `{{end}}`.
                        let node = self.control(k2, o)?;
                        let mark = self.node_stack.len();
                        self.node_stack.push(node);
                        Some(self.seal_nodes(mark))
                    }
                    t => return Err(self.err_at(o, format!("unexpected {t:?} in else"))),
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

    fn expect_close(&mut self, ctx: &str) -> Result<(), ParseError> {
        self.skip_space();
        let (t, o) = self.next()?;
        if t != Tok::Close {
            return Err(self.err_at(o, format!("unexpected {t:?} in {ctx}")));
        }
        Ok(())
    }

    fn skip_space(&mut self) {
        while let Ok(Tok::Space) = self.peek() {
            let _ = self.next();
        }
    }

    /// The next token, left in place.
    fn peek(&mut self) -> Result<&Tok<'a>, ParseError> {
        if self.peeked.is_none() {
            let t = self.lex()?;
            self.peeked = Some(t);
        }
        match &self.peeked {
            Some((t, _)) => Ok(t),
            None => unreachable_var(),
        }
    }

    fn next(&mut self) -> Result<(Tok<'a>, usize), ParseError> {
        if let Some(t) = self.peeked.take() {
            return Ok(t);
        }
        self.lex()
    }

    /// Puts back the token `next` returned (nothing was peeked after it).
    fn unread(&mut self, t: Tok<'a>, off: usize) {
        debug_assert!(self.peeked.is_none());
        self.peeked = Some((t, off));
    }

    /// One token inside an action.
    fn lex(&mut self) -> Result<(Tok<'a>, usize), ParseError> {
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
        if is_space(c) {
            let mut q = start;
            while q < bytes.len() && is_space(bytes[q]) {
                q += 1;
            }
            // ` -}}` closes with a right trim.
            if self.src[q..].starts_with("-}}") {
                self.pos = q + 3;
                self.trim_next = true;
                return Ok((Tok::Close, start));
            }
            self.pos = q;
            return Ok((Tok::Space, start));
        }
        if self.src[start..].starts_with("}}") {
            self.pos = start + 2;
            return Ok((Tok::Close, start));
        }
        let rest: &'a str = &src[start..];
        let tok = match c {
            b'|' => {
                self.pos += 1;
                Tok::Pipe
            }
            b'(' => {
                self.pos += 1;
                Tok::LParen
            }
            b')' => {
                self.pos += 1;
                Tok::RParen
            }
            b',' => {
                self.pos += 1;
                Tok::Comma
            }
            b':' if rest.starts_with(":=") => {
                self.pos += 2;
                Tok::Declare
            }
            b'=' => {
                self.pos += 1;
                Tok::Assign
            }
            b'"' => {
                // Most strings have no escapes: borrow them.
                let body = &rest.as_bytes()[1..];
                if let Some(i) = body
                    .iter()
                    .position(|&b| b == b'"' || b == b'\\' || b == b'\n')
                    && body[i] == b'"'
                {
                    self.pos = start + 2 + i;
                    return Ok((Tok::Str(Cow::Borrowed(&rest[1..1 + i])), start));
                }
                let mut q = start + 1;
                let mut s = String::new();
                loop {
                    let Some(ch) = self.src[q..].chars().next() else {
                        return Err(self.err_at(start, "unterminated quoted string".into()));
                    };
                    match ch {
                        '"' => {
                            q += 1;
                            break;
                        }
                        '\n' => return Err(self.err_at(start, "unterminated quoted string".into())),
                        '\\' => {
                            let (c2, n) = self.escape(q + 1)?;
                            s.push_str(&c2);
                            q += 1 + n;
                        }
                        _ => {
                            s.push(ch);
                            q += ch.len_utf8();
                        }
                    }
                }
                self.pos = q;
                Tok::Str(Cow::Owned(s))
            }
            b'`' => {
                let Some(end) = rest[1..].find('`') else {
                    return Err(self.err_at(start, "unterminated raw quoted string".into()));
                };
                self.pos = start + 2 + end;
                Tok::Str(Cow::Borrowed(&rest[1..1 + end]))
            }
            b'\'' => {
                let mut q = start + 1;
                let ch = self.src[q..].chars().next().unwrap_or('\'');
                let val = if ch == '\\' {
                    let (s, n) = self.escape(q + 1)?;
                    q += 1 + n;
                    s.chars().next().map(|c| c as i64).unwrap_or(0)
                } else {
                    q += ch.len_utf8();
                    ch as i64
                };
                if bytes.get(q) != Some(&b'\'') {
                    return Err(self.err_at(start, "unterminated character constant".into()));
                }
                self.pos = q + 1;
                Tok::Char(val)
            }
            b'$' => {
                let n = alnum_len(&rest[1..]);
                self.pos = start + 1 + n;
                Tok::Var(&rest[..1 + n])
            }
            b'.' => {
                let n = alnum_len(&rest[1..]);
                if n == 0 {
                    if rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
                        return self.number(start);
                    }
                    self.pos = start + 1;
                    Tok::Dot
                } else if rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
                    return self.number(start);
                } else {
                    self.pos = start + 1 + n;
                    Tok::Field(&rest[1..1 + n])
                }
            }
            b'0'..=b'9' | b'+' | b'-' => return self.number(start),
            _ if is_alnum(rest.chars().next().unwrap_or(' ')) => {
                let n = alnum_len(rest);
                self.pos = start + n;
                Tok::Ident(&rest[..n])
            }
            _ => {
                let ch = rest.chars().next().unwrap_or(' ');
                return Err(self.err_at(start, format!("unexpected {ch:?} in command")));
            }
        };
        Ok((tok, start))
    }

    fn number(&mut self, start: usize) -> Result<(Tok<'a>, usize), ParseError> {
        let src: &'a str = self.src;
        let rest = &src[start..];
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
        Ok((Tok::Num(&rest[..n]), start))
    }

    /// A backslash escape at `q` (after the backslash): the text and bytes consumed.
    fn escape(&self, q: usize) -> Result<(String, usize), ParseError> {
        let rest = &self.src[q..];
        let Some(c) = rest.chars().next() else {
            return Err(self.err_at(q, "unterminated quoted string".into()));
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
            return Ok((s.to_string(), 1));
        }
        let hex = |len: usize| -> Result<(String, usize), ParseError> {
            let h = rest.get(1..1 + len).unwrap_or("");
            let v =
                u32::from_str_radix(h, 16).map_err(|_| self.err_at(q, "invalid escape".into()))?;
            let ch = char::from_u32(v).ok_or_else(|| self.err_at(q, "invalid escape".into()))?;
            Ok((ch.to_string(), 1 + len))
        };
        match c {
            'x' => hex(2),
            'u' => hex(4),
            'U' => hex(8),
            '0'..='7' => {
                let h = rest.get(..3).unwrap_or("");
                let v = u32::from_str_radix(h, 8)
                    .map_err(|_| self.err_at(q, "invalid escape".into()))?;
                Ok((char::from_u32(v).unwrap_or('\0').to_string(), 3))
            }
            _ => Err(self.err_at(q, "unknown escape sequence".into())),
        }
    }

    /// A pipeline up to `}}` (or `)` when `paren`), with an optional declaration.
    fn pipeline(&mut self, ctx: &str, _block: bool) -> Result<u32, ParseError> {
        self.pipeline_inner(ctx, false)
    }

    fn pipeline_inner(&mut self, ctx: &str, paren: bool) -> Result<u32, ParseError> {
        self.skip_space();
        let start = self.peek_off()?;
        let decl_start = self.tree.decls.len() as u32;
        let mut pipe = Pipe {
            pos: self.pos_of(start),
            decl: Span::default(),
            is_assign: false,
            cmds: Span::default(),
        };
        // Declarations: `$x :=`, `$x =`, `$i, $v :=`.
        if let Tok::Var(_) = self.peek()? {
            let save_pos = self.pos;
            let save_peek = self.peeked.clone();
            let save_trim = self.trim_next;
            let (Tok::Var(v1), _) = self.next()? else {
                unreachable_var()
            };
            self.skip_space();
            let mut names: Vec<&'a str> = Vec::new();
            match self.peek()? {
                Tok::Declare | Tok::Assign => {
                    let (t, _) = self.next()?;
                    pipe.is_assign = t == Tok::Assign;
                    names.push(v1);
                }
                Tok::Comma if ctx == "range" => {
                    self.next()?;
                    self.skip_space();
                    let (t2, o2) = self.next()?;
                    let Tok::Var(v2) = t2 else {
                        return Err(self.err_at(o2, "missing variable in range declaration".into()));
                    };
                    self.skip_space();
                    let (t3, o3) = self.next()?;
                    match t3 {
                        Tok::Declare => {}
                        Tok::Assign => pipe.is_assign = true,
                        _ => {
                            return Err(
                                self.err_at(o3, "expected := or = in range declaration".into())
                            );
                        }
                    }
                    names.push(v1);
                    names.push(v2);
                }
                _ => {
                    self.pos = save_pos;
                    self.peeked = save_peek;
                    self.trim_next = save_trim;
                }
            }
            for v in names {
                if pipe.is_assign {
                    if !self.vars.contains(&v) {
                        return Err(self.err_at(start, format!("undefined variable \"{v}\"")));
                    }
                } else {
                    self.vars.push(v);
                }
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
            let (t, o) = self.next()?;
            match t {
                Tok::Close if !paren => break,
                Tok::RParen if paren => break,
                Tok::Close | Tok::RParen => {
                    return Err(self.err_at(o, format!("unexpected {t:?} in {ctx}")));
                }
                Tok::Pipe if self.cmd_stack.len() > cmd_mark => continue,
                t => {
                    self.unread(t, o);
                    let cmd = self.command(paren)?;
                    self.cmd_stack.push(cmd);
                }
            }
        }
        if self.cmd_stack.len() == cmd_mark {
            return Err(self.err_at(start, format!("missing value for {ctx}")));
        }
        let cmds_start = self.tree.cmds.len() as u32;
        self.tree.cmds.extend(self.cmd_stack.drain(cmd_mark..));
        pipe.cmds = Span {
            start: cmds_start,
            end: self.tree.cmds.len() as u32,
        };
        self.tree.pipes.push(pipe);
        Ok(self.tree.pipes.len() as u32 - 1)
    }

    fn peek_off(&mut self) -> Result<usize, ParseError> {
        self.peek()?;
        match &self.peeked {
            Some((_, off)) => Ok(*off),
            None => unreachable_var(),
        }
    }

    fn command(&mut self, paren: bool) -> Result<Cmd, ParseError> {
        let start = self.peek_off()?;
        let pos = self.pos_of(start);
        let arg_mark = self.arg_stack.len();
        loop {
            self.skip_space();
            match self.peek()? {
                Tok::Close | Tok::Pipe => break,
                Tok::RParen if paren => break,
                _ => {}
            }
            let arg = self.operand()?;
            self.arg_stack.push(arg);
            // Operands are separated by spaces.
            match self.peek()? {
                Tok::Space => {}
                Tok::Close | Tok::Pipe => {}
                Tok::RParen if paren => {}
                _ => {
                    let Some((t, o)) = &self.peeked else {
                        unreachable_var()
                    };
                    return Err(self.err_at(*o, format!("unexpected {t:?} in operand")));
                }
            }
        }
        if self.arg_stack.len() == arg_mark {
            return Err(self.err_at(start, "empty command".into()));
        }
        let args_start = self.tree.args.len() as u32;
        self.tree.args.extend(self.arg_stack.drain(arg_mark..));
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
    fn fields(&mut self) -> Result<Chain, ParseError> {
        let mut span: Option<(usize, usize)> = None;
        while let Tok::Field(_) = self.peek()? {
            let (Tok::Field(f), o) = self.next()? else {
                unreachable_var()
            };
            let end = o + 1 + f.len();
            span = Some(match span {
                None => (o + 1, end),
                Some((s, _)) => (s, end),
            });
        }
        Ok(match span {
            Some((s, e)) => Span {
                start: s as u32,
                end: e as u32,
            },
            None => Span::default(),
        })
    }

    fn operand(&mut self) -> Result<Arg, ParseError> {
        let (t, o) = self.next()?;
        let pos = self.pos_of(o);
        let term = match t {
            Tok::Ident(name) => match name {
                "true" => Arg::Bool(true),
                "false" => Arg::Bool(false),
                "nil" => Arg::Nil(pos),
                _ => match (self.funcs)(name) {
                    Some(id) => Arg::Ident(id, pos),
                    None => {
                        return Err(self.err_at(o, format!("function \"{name}\" not defined")));
                    }
                },
            },
            Tok::Dot => Arg::Dot(pos),
            Tok::Field(_) => {
                self.unread(t, o);
                return Ok(Arg::Field(self.fields()?, pos));
            }
            Tok::Var(v) => {
                if !self.vars.contains(&v) {
                    return Err(self.err_at(o, format!("undefined variable \"{v}\"")));
                }
                let name = Span {
                    start: o as u32,
                    end: (o + v.len()) as u32,
                };
                return Ok(Arg::Var(name, self.fields()?, pos));
            }
            Tok::Str(s) => Arg::Str(self.lits.push(&s)),
            Tok::Char(c) => Arg::Int(c),
            Tok::Num(text) => number_arg(text)
                .ok_or_else(|| self.err_at(o, format!("bad number syntax: \"{text}\"")))?,
            Tok::LParen => {
                let p = self.pipeline_inner("parenthesized pipeline", true)?;
                Arg::Pipe(p)
            }
            t => return Err(self.err_at(o, format!("unexpected {t:?} in operand"))),
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

#[allow(clippy::panic)]
fn unreachable_var() -> ! {
    // Only reached after a successful `peek` of the same token kind.
    panic!("token changed between peek and next")
}

/// A number literal as Go's parser types it: an int when it is written as one, else a float.
fn number_arg(text: &str) -> Option<Arg> {
    let t: String = text.chars().filter(|&c| c != '_').collect();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(&t)),
    };
    let int = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
        i64::from_str_radix(b, 2).ok()
    } else if let Some(o) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
        i64::from_str_radix(o, 8).ok()
    } else if body.len() > 1 && body.starts_with('0') && body.bytes().all(|b| b.is_ascii_digit()) {
        i64::from_str_radix(&body[1..], 8).ok()
    } else if body.bytes().all(|b| b.is_ascii_digit()) {
        body.parse::<i64>().ok()
    } else {
        None
    };
    if let Some(n) = int {
        return Some(Arg::Int(if neg { -n } else { n }));
    }
    let f: f64 = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => hex_float(h)?,
        None => body.parse().ok()?,
    };
    Some(Arg::Float(if neg { -f } else { f }))
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

    /// A text of about 60 KB, so four of them are parsed on two threads.
    fn big(i: usize, tail: &str) -> String {
        let mut t =
            format!("{{{{ .Values.a{i}.b | quote }}}} {{{{ $x := \"s\\t{i}\" }}}}\n").repeat(1500);
        t.push_str(tail);
        t
    }

    fn sequential(texts: &[(&str, &str)]) -> Vec<Result<Parsed, ParseError>> {
        let mut out = Vec::new();
        for (n, t) in texts {
            let r = parse(n, t, &quote_only);
            let failed = r.is_err();
            out.push(r);
            if failed {
                break;
            }
        }
        out
    }

    fn summary(rs: &[Result<Parsed, ParseError>]) -> Vec<String> {
        rs.iter()
            .map(|r| match r {
                Ok(p) => format!("{:?} {:?} {:?} {:?}", p.tree, p.root, p.defines, p.lits),
                Err(e) => e.to_string(),
            })
            .collect()
    }

    #[test]
    fn parsing_on_two_threads_reports_the_first_error_in_order() {
        let texts = [
            big(0, ""),
            big(1, "{{ nope }}"),
            big(2, ""),
            big(3, "{{ end }}"),
        ];
        let names = ["t0", "t1", "t2", "t3"];
        fn pairs<'a>(names: &[&'a str], texts: &'a [String]) -> Vec<(&'a str, &'a str)> {
            names
                .iter()
                .copied()
                .zip(texts.iter().map(String::as_str))
                .collect()
        }
        assert!(texts.iter().map(String::len).sum::<usize>() >= PARALLEL_MIN_BYTES);
        // Errors in both halves: the first half's is the one.
        let both = pairs(&names, &texts);
        let r = parse_many(&both, &quote_only);
        assert_eq!(summary(&r), summary(&sequential(&both)));
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[1].as_ref().err().map(ToString::to_string).as_deref(),
            Some("template: t1:1501: function \"nope\" not defined")
        );
        // Only the second half fails: everything before it is there, in order.
        let fixed = [
            texts[0].clone(),
            big(1, ""),
            texts[2].clone(),
            texts[3].clone(),
        ];
        let second = pairs(&names, &fixed);
        let r = parse_many(&second, &quote_only);
        assert_eq!(summary(&r), summary(&sequential(&second)));
        assert_eq!(r.len(), 4);
        assert!(r[3].is_err());
        // No error: the same trees as one after the other.
        let clean = [texts[0].clone(), big(1, ""), texts[2].clone(), big(3, "")];
        let clean = pairs(&names, &clean);
        let r = parse_many(&clean, &quote_only);
        assert_eq!(r.len(), 4);
        assert_eq!(summary(&r), summary(&sequential(&clean)));
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
