//! The tree of a parsed template, after Go's `text/template/parse/node.go`: positions and
//! spans into the text, the arenas of nodes, pipelines, commands and arguments, the string
//! literals, and what a number literal is (`newNumber`).

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
/// be parsed on a pool thread while the chart loads ([`Slot`](super::Slot), ADR 0012).
/// The symbol of `$`, the variable every execution starts with.
pub const DOLLAR: u32 = 0;

#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// The template text, shared with the chart that holds it (not copied per parse).
    pub src: Arc<str>,
    pub nodes: Vec<Node>,
    pub pipes: Vec<Pipe>,
    pub cmds: Vec<Cmd>,
    pub args: Vec<Arg>,
    /// Declared (`:=`) or assigned (`=`) variables, as symbols of [`Tree::var_names`].
    pub decls: Vec<u32>,
    /// The variable names of the text, each once: a variable is its index here (its
    /// symbol; `$` is [`DOLLAR`]). Every variable in scope during an execution comes from
    /// the tree being executed (`template`, `include` and `tpl` start a scope of their own),
    /// so the executor finds a variable by comparing symbols, not names.
    pub var_names: Vec<Arc<str>>,
    /// The names `template` and `block` call.
    pub names: Vec<Box<str>>,
}

impl Tree {
    /// Empty arenas with room for a text of `len` bytes: chart templates have about one
    /// node, pipeline and command per 45 to 80 bytes and an argument per 27 to 33
    /// (bitnami-postgresql, traefik, prometheus), so the arenas rarely grow, and growing
    /// them (a copy of each, again and again) was a tenth of the parser's copying.
    pub(super) fn sized_for(len: usize) -> Tree {
        Tree {
            nodes: Vec::with_capacity(len / 40),
            pipes: Vec::with_capacity(len / 48),
            cmds: Vec::with_capacity(len / 40),
            args: Vec::with_capacity(len / 20),
            var_names: vec![Arc::from("$")],
            ..Tree::default()
        }
    }

    /// The name of variable `sym` (with its `$`).
    pub fn var_name(&self, sym: u32) -> &str {
        self.var_names.get(sym as usize).map_or("$", |n| n)
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
    /// `$x.A.B`: the variable (its symbol, [`Tree::var_names`]) and the chain.
    Var(u32, Chain, Pos),
    /// A function, resolved at parse time.
    Ident(FuncId, Pos),
    /// `(pipe).A.B`: the term's index in [`Tree::args`].
    Chain(u32, Chain, Pos),
    /// A parenthesised pipeline: its index in [`Tree::pipes`].
    Pipe(u32),
    /// A string literal: its index in [`Parsed::lits`](super::Parsed::lits) (the executor makes each one a
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

/// String literals, in one buffer (one allocation for all of a text's literals).
#[derive(Debug, Default, Clone)]
pub struct Lits {
    text: String,
    ends: Vec<u32>,
}

impl Lits {
    pub(super) fn push(&mut self, s: &str) -> u32 {
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

/// A number literal as Go's parser types it (text/template/parse `newNumber`, and exec's
/// `idealConstant` for what a bare constant evaluates to): an int when it is written as an
/// integer that fits int64, a float when it has a `.`, an exponent or a `p`; an integer that
/// fits uint64 only parses but fails when evaluated, and a larger one is Go's parse error
/// `integer overflow` (`Err` holds the message).
pub(super) fn number_arg(text: &str, span: Span, pos: Pos) -> Result<Arg, String> {
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
pub(super) fn hex_float(h: &str) -> Option<f64> {
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
