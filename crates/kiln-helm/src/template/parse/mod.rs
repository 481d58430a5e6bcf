//! Lexer and parser of Go's `text/template` language, after Go's `text/template/parse`
//! (lex.go, parse.go, node.go of Go 1.26): actions with trim markers, comments, pipelines
//! with declarations and assignments, `if`/`else if`/`range`/`with`/`else with`/`define`/
//! `template`/`block`/`break`/`continue`, parenthesised pipelines and field chains.
//!
//! The files are Go's: `lex` (lex.go) the tokens, this module (parse.go) the grammar, `node`
//! (node.go) the tree, re-exported here. Unlike Go, lexing and parsing are one pass over the
//! text (no goroutine hand-off): the parser asks the lexer for each token; the tree is the
//! same. Function names are checked at parse time, as Go does ("function %q not defined"),
//! so an unknown function fails even in a branch that never runs.

use super::super::ahead::Ahead;
use std::sync::Arc;

mod lex;
mod node;

use lex::*;
pub use node::*;

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

type PResult<T> = Result<T, Box<ParseError>>;

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

    /// The text, as the parse reads it.
    #[cfg(test)]
    pub fn text(&self) -> &str {
        &self.text
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
}

impl<'a> Parser<'a> {
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

    /// The symbol of variable `name` in this tree ([`Tree::var_names`]): a text has a few
    /// dozen names at most, so they are scanned.
    fn var_sym(&mut self, name: &str) -> u32 {
        let names = &mut self.tree.var_names;
        match names.iter().position(|n| **n == *name) {
            Some(i) => i as u32,
            None => {
                names.push(Arc::from(name));
                (names.len() - 1) as u32
            }
        }
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
                let sym = self.var_sym(v);
                self.tree.decls.push(sym);
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
                let sym = self.var_sym(v);
                return Ok(Arg::Var(sym, self.fields()?, pos));
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
                Arg::Var(n, c, _) => Some((t.var_name(n), t.str(c))),
                _ => None,
            })
            .unwrap();
        assert_eq!(var, ("$v", "X.Y"));
    }
}
