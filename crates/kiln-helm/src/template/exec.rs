//! Execution of parsed templates, after Go's `text/template/exec.go`: dot and `$`,
//! variables with Go's scoping, field chains on maps and objects, method calls with the
//! piped value as last argument, lazy `and`/`or`, `range` over lists, maps (sorted keys)
//! and ints, `break`/`continue`, `template` with a fresh variable scope.
//!
//! `missingkey=zero` as Helm sets it: a missing map key is nil, printed as `<no value>`;
//! a field of nil is Go's "nil pointer evaluating interface {}.X" error.

use super::params::{Origin, Sig};
use super::parse::{Arg, Branch, Cmd, DOLLAR, FuncId, Node, Pipe, Pos, Span, Tree};
use super::value::Value;
use std::rc::Rc;

/// A function as templates call it: it may execute templates (`include`, `tpl`).
///
/// A `Box`, not an `Rc`: nearly every function captures nothing, and a boxed zero-sized
/// closure allocates nothing, where an `Rc` of it was one allocation per function per
/// render (the table is built for every render). A call borrows it through the execution's
/// `Rc<Funcs>`.
pub type Func = Box<dyn Fn(&mut Exec, &[Value]) -> Result<Value, String>>;

/// A `HashMap` with FxHash (rustc's, the `rustc-hash` crate): names are short and not
/// attacker-chosen, and SipHash was a visible part of every function and template lookup.
/// Only used for lookups, never iterated into output.
pub type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// About how many functions Helm's table has (Sprig's and Helm's own): reserved up front,
/// as growing the name map rehashed it several times for every render.
const TABLE_SIZE: usize = 320;

/// The registered functions: a table indexed by [`FuncId`] (the parser resolves each call's
/// name once; execution indexes) and the names that resolve to it.
///
/// Names are `&'static str` (every function is registered under a literal): the table is
/// built for every render, and two `String`s per name were a visible part of it.
#[derive(Default)]
pub struct Funcs {
    ids: FxMap<&'static str, FuncId>,
    table: Vec<(&'static str, Func)>,
    /// The Go signature of each id that has one ([`Funcs::sign`]); a call checks its
    /// arguments against it as Go's `evalCall` does (`super::params`).
    sigs: Vec<Option<Sig>>,
    /// The steps a call of each id costs where it is more than one ([`Funcs::weigh`]).
    weights: Vec<u64>,
}

impl Funcs {
    /// Registers `name`; registering a name again replaces its function (same id). Ids
    /// are given in registration order.
    pub fn add(
        &mut self,
        name: &'static str,
        f: impl Fn(&mut Exec, &[Value]) -> Result<Value, String> + 'static,
    ) {
        let f: Func = Box::new(f);
        if self.table.is_empty() {
            self.table.reserve(TABLE_SIZE);
            self.ids.reserve(TABLE_SIZE);
        }
        match self.ids.get(name) {
            Some(id) => self.table[id.0 as usize].1 = f,
            None => {
                let id = FuncId(self.table.len() as u32);
                self.ids.insert(name, id);
                self.table.push((name, f));
            }
        }
    }
    /// Gives the functions of `table` that are registered their Go signatures.
    pub fn sign(&mut self, table: &[(&str, Sig)]) {
        self.sigs.resize(self.table.len(), None);
        for (name, sig) in table {
            if let Some(id) = self.ids.get(name) {
                self.sigs[id.0 as usize] = Some(*sig);
            }
        }
    }

    /// Makes a call of `name` cost `steps` of the render's budget ([`Budget`]): key
    /// generation takes milliseconds where a step takes nanoseconds.
    pub fn weigh(&mut self, name: &str, steps: u64) {
        if let Some(id) = self.ids.get(name) {
            self.weights
                .resize(self.table.len().max(self.weights.len()), 1);
            self.weights[id.0 as usize] = steps;
        }
    }

    /// The id a template's call of `name` resolves to (`and`/`or` included).
    pub fn id(&self, name: &str) -> Option<FuncId> {
        self.resolver().id(name)
    }
    /// The name-to-id part of the table, which (unlike the functions) can be shared with
    /// a parsing thread.
    pub fn resolver(&self) -> FuncNames<'_> {
        FuncNames(&self.ids)
    }
    /// The name-to-id table alone, kept where no `Funcs` lives: a chart's templates are
    /// parsed while it loads, before any render has a table ([`FuncNames::of`]). Its names
    /// are the registrations' `'static` ones: keeping it copies none.
    pub fn into_names(self) -> FxMap<&'static str, FuncId> {
        self.ids
    }
    pub fn has(&self, name: &str) -> bool {
        self.id(name).is_some()
    }
    pub fn get(&self, name: &str) -> Option<&Func> {
        self.ids.get(name).map(|id| &self.table[id.0 as usize].1)
    }
    /// The name of a function id.
    pub fn name(&self, id: FuncId) -> &str {
        match id {
            FuncId::AND => "and",
            FuncId::OR => "or",
            _ => self.table.get(id.0 as usize).map_or("", |(n, _)| n),
        }
    }
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.table.iter().map(|(n, _)| n.to_string()).collect();
        v.push("and".into());
        v.push("or".into());
        v.sort();
        v
    }
}

/// Resolves function names to ids; `Sync`.
#[derive(Clone, Copy)]
pub struct FuncNames<'a>(&'a FxMap<&'static str, FuncId>);

impl<'a> FuncNames<'a> {
    /// The resolver of a table [`Funcs::into_names`] kept.
    pub fn of(ids: &'a FxMap<&'static str, FuncId>) -> Self {
        FuncNames(ids)
    }
    pub fn id(&self, name: &str) -> Option<FuncId> {
        match name {
            "and" => Some(FuncId::AND),
            "or" => Some(FuncId::OR),
            _ => self.0.get(name).copied(),
        }
    }
}

/// One named template: its list in the tree of its text and the file it was parsed from
/// (for error locations).
pub struct Tmpl {
    pub name: String,
    pub file: Rc<str>,
    /// The tree of the text it was parsed from, shared by the text's templates.
    pub tree: Rc<Tree>,
    pub root: Span,
    /// The string literals of the text it was parsed from (`Arg::Str` indexes them),
    /// shared by the text's templates.
    pub lits: Rc<LitValues>,
    /// The bytes of its top-level text: what its output needs at least, reserved up front
    /// (growing a large rendered file by doubling copied it several times).
    pub text_len: usize,
}

/// A text's string literals, each made a value when it is first evaluated (most literals of
/// a chart are in `define`s that never run: making every one a value up front was a
/// visible part of adding a chart's templates).
pub struct LitValues {
    lits: super::parse::Lits,
    values: Box<[std::cell::OnceCell<Value>]>,
}

impl LitValues {
    fn new(lits: super::parse::Lits) -> LitValues {
        let values = std::iter::repeat_with(std::cell::OnceCell::new)
            .take(lits.len())
            .collect();
        LitValues { lits, values }
    }

    fn get(&self, i: usize) -> Value {
        match self.values.get(i) {
            Some(v) => v.get_or_init(|| Value::str(self.lits.get(i))).clone(),
            None => Value::Nil,
        }
    }
}

fn text_len(tree: &Tree, list: Span) -> usize {
    tree.list(list)
        .iter()
        .map(|n| match n {
            Node::Text(t) => t.range().len(),
            _ => 0,
        })
        .sum()
}

/// A set of named templates; `tpl` layers a child set over its parent.
#[derive(Default)]
pub struct TemplateSet {
    pub parent: Option<Rc<TemplateSet>>,
    pub own: FxMap<String, Rc<Tmpl>>,
}

impl TemplateSet {
    pub fn lookup(&self, name: &str) -> Option<Rc<Tmpl>> {
        match self.own.get(name) {
            Some(t) => Some(t.clone()),
            None => self.parent.as_ref().and_then(|p| p.lookup(name)),
        }
    }

    /// Adds a text parsed as `name` (from `file`) with its `define`s; later ones win, as
    /// Go's `AddParseTree` replaces (an empty body does not replace an existing one).
    pub fn add(&mut self, name: &str, file: &str, parsed: super::parse::Parsed) {
        let file: Rc<str> = Rc::from(file);
        let lits = Rc::new(LitValues::new(parsed.lits));
        let tree = Rc::new(parsed.tree);
        for (dname, body) in parsed.defines {
            self.own.insert(
                dname.clone(),
                Rc::new(Tmpl {
                    name: dname,
                    file: file.clone(),
                    text_len: text_len(&tree, body),
                    tree: tree.clone(),
                    root: body,
                    lits: lits.clone(),
                }),
            );
        }
        let keep_existing = self.own.contains_key(name) && is_empty_tree(&tree, parsed.root);
        if !keep_existing {
            self.own.insert(
                name.to_string(),
                Rc::new(Tmpl {
                    name: name.to_string(),
                    file,
                    text_len: text_len(&tree, parsed.root),
                    tree,
                    root: parsed.root,
                    lits,
                }),
            );
        }
    }
}

/// Go's `IsEmptyTree`: only whitespace text.
fn is_empty_tree(tree: &Tree, list: Span) -> bool {
    tree.list(list).iter().all(|n| match n {
        Node::Text(t) => tree.str(*t).trim().is_empty(),
        _ => false,
    })
}

/// An execution error, in Go's words: `template: LOC: executing "NAME" at <WHAT>: MSG`.
#[derive(Debug, Clone)]
pub struct ExecError {
    /// `file:line:col` of the node that failed.
    pub location: String,
    pub name: String,
    pub what: String,
    pub message: String,
    /// Raised before any node ran (`ExecuteTemplate` of an unknown name): Go's text is
    /// `template: MSG`, with no location.
    pub unplaced: bool,
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.unplaced {
            return write!(f, "template: {}", self.message);
        }
        write!(
            f,
            "template: {}: executing \"{}\" at <{}>: {}",
            self.location, self.name, self.what, self.message
        )
    }
}

/// The constant that starts at byte `off` of a template's text, as written (`1`, `"a"`).
fn constant_text(src: &str, off: usize) -> &str {
    let rest = src.get(off..).unwrap_or("");
    rest.get(..token_end(rest.as_bytes(), 0)).unwrap_or(rest)
}

/// Where the operand token that starts at `b[i]` ends: a quoted, raw or character constant
/// at its closing quote, a parenthesis or `|` after itself, anything else at the space,
/// parenthesis, `|` or `}}` after it. Byte offsets, never inside a character (every
/// delimiter is ASCII).
fn token_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        None => i,
        Some(&q @ (b'"' | b'\'')) => {
            let mut j = i + 1;
            while j < b.len() && b[j] != q {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(b.len())
        }
        Some(b'`') => b[i + 1..]
            .iter()
            .position(|&c| c == b'`')
            .map_or(b.len(), |j| i + j + 2),
        Some(b'(' | b')' | b'|') => i + 1,
        Some(_) => {
            let mut j = i;
            while j < b.len()
                && !b[j].is_ascii_whitespace()
                && !matches!(b[j], b'(' | b')' | b'|')
                && !b[j..].starts_with(b"}}")
            {
                j += 1;
            }
            j
        }
    }
}

/// Go's `CommandNode.String()` for the command that starts at byte `off` of a template's
/// text, as a failing call's error names it (`at <include "x" .>`): its operands as written,
/// one space apart, up to the `|`, `)` or `}}` that ends it; a parenthesized pipeline inside
/// it prints as `(a | b)`.
fn command_text(src: &str, off: usize) -> String {
    let Some(rest) = src.get(off..) else {
        return String::new();
    };
    let b = rest.as_bytes();
    let (mut out, mut depth, mut i, mut space) = (String::new(), 0usize, 0, false);
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            space = true;
            i += 1;
            continue;
        }
        if b[i..].starts_with(b"}}")
            || (space && b[i..].starts_with(b"-}}"))
            || (depth == 0 && matches!(c, b'|' | b')'))
        {
            break;
        }
        let start = i;
        i = token_end(b, i);
        let tok = rest.get(start..i).unwrap_or("");
        match tok {
            "(" => depth += 1,
            ")" => depth -= 1,
            _ => {}
        }
        let glued = out.is_empty() || out.ends_with('(') || tok == ")";
        if !glued && (space || tok == "|" || out.ends_with('|')) {
            out.push(' ');
        }
        out.push_str(tok);
        space = false;
    }
    out
}

/// What Go makes of an operand as written ([`Origin`]): a constant of its kind, `nil`, a
/// pipeline's untyped result, or a typed value.
fn operand_origin(a: &Arg) -> Origin {
    match a {
        Arg::Str(_) => Origin::Str,
        Arg::Int(n) => Origin::Number {
            int: true,
            unsigned: *n >= 0,
        },
        Arg::Float(f) => Origin::Number {
            int: f.fract() == 0.0 && f.abs() < 9.2e18,
            unsigned: *f >= 0.0 && f.fract() == 0.0,
        },
        Arg::Bool(_) => Origin::Bool,
        Arg::Nil(_) => Origin::Nil,
        Arg::Var(_, chain, _) if chain.is_empty() => Origin::Untyped,
        Arg::Pipe(_) => Origin::Untyped,
        Arg::Dot(_)
        | Arg::Ident(..)
        | Arg::Field(..)
        | Arg::Var(..)
        | Arg::Chain(..)
        | Arg::Overflow(..) => Origin::Typed,
    }
}

/// Where Go reports an error about the field chain `head.chain` written at `pos`, and how
/// it prints the node: `""` for `.A.B`, `"$x"` for `$x.A.B`. Go's parser puts the node at
/// the chain's second part (`.a` of `.Values.a.b`, `.A` of `$x.A`: the lexer makes
/// `.Values` and `.a` two tokens and the chain starts at the second).
fn chain_site(head: Option<&str>, chain: &str, pos: Pos) -> (Pos, String) {
    let h = head.unwrap_or("");
    let at = match h {
        "" => chain.find('.').map_or(0, |i| i + 1),
        var => var.len(),
    };
    (Pos(pos.0 + at as u32), format!("{h}.{chain}"))
}

/// The byte offset of operand `i` of the command whose function name starts at byte `off`
/// of a template's text: the name and `i` operands skipped (a parenthesized operand whole).
fn operand_offset(src: &str, off: usize, i: usize) -> usize {
    let b = src.as_bytes();
    let skip_space = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        j
    };
    let skip_operand = |j: usize| {
        if b.get(j) != Some(&b'(') {
            return token_end(b, j);
        }
        let (mut depth, mut k) = (0usize, j);
        while k < b.len() {
            match b[k] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return k + 1;
                    }
                }
                b'"' | b'\'' | b'`' => {
                    k = token_end(b, k);
                    continue;
                }
                _ => {}
            }
            k += 1;
        }
        k
    };
    let mut j = skip_space(token_end(b, off));
    for _ in 0..i {
        j = skip_space(skip_operand(j));
    }
    j
}

/// What a `range` walks.
enum Items {
    List(Rc<Vec<Value>>),
    Int(i64),
    Pairs(std::vec::IntoIter<(Value, Value)>),
}

enum Flow {
    Normal,
    Break,
    Continue,
}

/// Go's limit on nested template calls (text/template exec.go `maxExecDepth`). Go counts
/// `{{template}}` only (an `include` starts a fresh execution; Helm bounds those itself,
/// [`Exec::included`]); kiln counts both, which only a chart nesting 100,000 calls deep sees.
const MAX_DEPTH: usize = 100_000;

/// Stack kept free below each template call, and the segment added when less is left: an
/// execution recurses once per nested call, and 100,000 of them do not fit in a thread's
/// stack (a self-`include` overflowed it at about 700), so deep calls continue on heap
/// segments (`stacker`, ADR 0015).
const STACK_RED_ZONE: usize = 256 * 1024;
const STACK_SEGMENT: usize = 8 * 1024 * 1024;
/// The same for each nested list or parenthesized pipeline (a smaller frame than a call's).
const WALK_RED_ZONE: usize = 128 * 1024;

/// A render's budget (issue 39, item 10): the template steps it may take (a node walked,
/// a `range` iteration, a function call; key generation costs [`Funcs::weigh`]'s weight)
/// and the bytes its templates may produce (text printed, and every string a function
/// returns, so a doubling `include` or `print $s $s` is counted as it grows). Helm has no
/// such bound and runs until the machine gives out; kiln stops with an error naming the
/// template and line (docs/helm.md, "Budgets").
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub steps: u64,
    pub output_bytes: u64,
}

impl Budget {
    /// The defaults: far above what the largest public charts take (kube-prometheus-stack
    /// takes about 2 million steps and 10 MB), far below what exhausts a CI machine.
    pub const DEFAULT: Budget = Budget {
        steps: 50_000_000,
        output_bytes: 512 << 20,
    };
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::DEFAULT
    }
}

/// The state of one execution.
pub struct Exec<'a> {
    pub set: Rc<TemplateSet>,
    pub funcs: Rc<Funcs>,
    /// Variables in scope, innermost last, by symbol of the running tree
    /// ([`Tree::var_names`]): every variable above `base` is that tree's.
    vars: Vec<(u32, Value)>,
    /// Where the running template's variables start in `vars`.
    base: usize,
    depth: usize,
    /// The names of the `include` calls running, outermost first: Helm's `includedNames`
    /// (pkg/engine/engine.go), which refuses a name nested more than 1,000 deep.
    pub included: Vec<Rc<str>>,
    /// The template being executed (for errors and `tpl`'s name).
    cur: Option<Rc<Tmpl>>,
    /// Host data for functions (the chart context).
    pub host: Rc<dyn std::any::Any>,
    /// Emptied argument lists, reused by function calls (a new `Vec` per call was an
    /// allocation per call; calls nest, so there is one per depth in use).
    arg_lists: Vec<Vec<Value>>,
    /// What object methods may use (`.Files` reads through its file system).
    pub cx: super::value::Cx<'a>,
    /// What is left of the render's budget ([`Budget`]); `limit` is what it started with.
    pub budget: Budget,
    limit: Budget,
    /// What functions keep for the rest of one execution (one render), one value per type:
    /// the `regex*` functions' compiled patterns (`sprig::regex`). Go's `text/template` has
    /// no such place; here the function layer owns what it keeps, and this layer only holds it.
    extensions: Vec<Box<dyn std::any::Any>>,
    /// Which values paths the templates read, when a caller asks (`None`: not recorded, and
    /// nothing is spent on it).
    pub reads: Option<Box<super::reads::ValueReads>>,
}

type R<T> = Result<T, ExecError>;

impl<'a> Exec<'a> {
    pub fn new(set: Rc<TemplateSet>, funcs: Rc<Funcs>, host: Rc<dyn std::any::Any>) -> Self {
        Exec {
            set,
            funcs,
            vars: Vec::new(),
            base: 0,
            depth: 0,
            included: Vec::new(),
            cur: None,
            host,
            arg_lists: Vec::new(),
            cx: Default::default(),
            budget: Budget::DEFAULT,
            limit: Budget::DEFAULT,
            extensions: Vec::new(),
            reads: None,
        }
    }

    /// Sets the render's budget.
    pub fn set_budget(&mut self, b: Budget) {
        self.budget = b;
        self.limit = b;
    }

    /// Takes `n` steps from the budget, or fails at `pos` once it is spent (and every time
    /// after: a function that swallows an error cannot carry on past it).
    fn step(&mut self, n: u64, pos: Pos) -> R<()> {
        match self.budget.steps.checked_sub(n) {
            Some(left) => {
                self.budget.steps = left;
                Ok(())
            }
            None => {
                self.budget.steps = 0;
                Err(self.err_at(
                    pos,
                    "",
                    format!(
                        "the render took more than its budget of {} template steps (`--max-steps`)",
                        self.limit.steps
                    ),
                ))
            }
        }
    }

    /// Takes `n` bytes of output from the budget, or fails at `pos` once it is spent.
    fn produce(&mut self, n: usize, pos: Pos) -> R<()> {
        match self.budget.output_bytes.checked_sub(n as u64) {
            Some(left) => {
                self.budget.output_bytes = left;
                Ok(())
            }
            None => {
                self.budget.output_bytes = 0;
                Err(self.err_at(
                    pos,
                    "",
                    format!(
                        "the templates produced more than the render's budget of {} bytes (`--max-output-bytes`)",
                        self.limit.output_bytes
                    ),
                ))
            }
        }
    }

    /// Runs `f` on this execution's value of type `T`, made by `T::default()` on first use
    /// and kept until the execution ends (`Exec::extensions`).
    pub fn with_extension<T: Default + 'static, O>(&mut self, f: impl FnOnce(&mut T) -> O) -> O {
        if !self.extensions.iter().any(|e| e.is::<T>()) {
            self.extensions.push(Box::<T>::default());
        }
        match self
            .extensions
            .iter_mut()
            .find_map(|e| e.downcast_mut::<T>())
        {
            Some(t) => f(t),
            // Not reached (pushed above); a fresh value only costs what it would have kept.
            None => f(&mut T::default()),
        }
    }

    /// Ends the execution and hands back its parsed trees, for the caller to drop where it
    /// costs nothing (they are `Send`). Trees still shared elsewhere are left to their other
    /// holders.
    pub fn into_trees(self) -> Vec<Tree> {
        let Ok(set) = Rc::try_unwrap(self.set) else {
            return Vec::new();
        };
        // The order does not matter: the trees are only dropped.
        #[allow(clippy::iter_over_hash_type)]
        let shared: Vec<Rc<Tree>> = set
            .own
            .into_values()
            .filter_map(|t| Rc::try_unwrap(t).ok())
            .map(|t| t.tree)
            .collect();
        // A text's templates share its tree: the last of them to be unwrapped gets it.
        shared
            .into_iter()
            .filter_map(|t| Rc::try_unwrap(t).ok())
            .collect()
    }

    /// The name of the template being executed (Helm's `tpl` parses under it).
    pub fn current_name(&self) -> String {
        self.cur
            .as_ref()
            .map(|t| t.name.clone())
            .unwrap_or_default()
    }

    /// Executes the template `name` with `dot`, returning its output.
    pub fn execute(&mut self, name: &str, dot: Value) -> R<String> {
        let Some(t) = self.set.lookup(name) else {
            return Err(ExecError {
                location: name.to_string(),
                name: name.to_string(),
                what: String::new(),
                message: format!("no template \"{name}\" associated with template \"gotpl\""),
                unplaced: true,
            });
        };
        self.run(t, dot)
    }

    /// Executes a template tree with a new variable scope.
    pub fn run(&mut self, t: Rc<Tmpl>, dot: Value) -> R<String> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.run_here(t, dot))
    }

    fn run_here(&mut self, t: Rc<Tmpl>, dot: Value) -> R<String> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err_at(
                Pos::NONE,
                "",
                format!("exceeded maximum template depth ({MAX_DEPTH})"),
            ));
        }
        self.depth += 1;
        // A fresh scope on the same stack: the caller's variables stay below `base`, out
        // of sight (a new Vec for every `include` was an allocation per call).
        let saved_base = std::mem::replace(&mut self.base, self.vars.len());
        self.vars.push((DOLLAR, dot.clone()));
        let saved_cur = self.cur.replace(t.clone());
        let mut out = String::with_capacity(t.text_len);
        let r = self.walk(&dot, &t.tree, t.root, &mut out);
        self.vars.truncate(self.base);
        self.base = saved_base;
        self.cur = saved_cur;
        self.depth -= 1;
        r.map(|_| out)
    }

    fn err_at_site(&self, (pos, what): (Pos, String), message: String) -> ExecError {
        self.err_at(pos, &what, message)
    }

    fn err_at(&self, pos: Pos, what: &str, message: String) -> ExecError {
        let (file, name, (line, col)) = match &self.cur {
            Some(t) if pos != Pos::NONE => (
                t.file.to_string(),
                t.name.clone(),
                super::parse::line_col(&t.tree.src, pos.0 as usize),
            ),
            Some(t) => (t.file.to_string(), t.name.clone(), (0, 0)),
            None => (String::new(), String::new(), (0, 0)),
        };
        ExecError {
            location: format!("{file}:{line}:{col}"),
            name,
            what: what.to_string(),
            message,
            unplaced: false,
        }
    }

    /// Walks a list; an `if`, `with` or `range` in it walks its own, so a deep nest
    /// continues on heap-grown stack segments (ADR 0015).
    fn walk(&mut self, dot: &Value, t: &Tree, list: Span, out: &mut String) -> R<Flow> {
        stacker::maybe_grow(WALK_RED_ZONE, STACK_SEGMENT, || {
            self.walk_here(dot, t, list, out)
        })
    }

    fn walk_here(&mut self, dot: &Value, t: &Tree, list: Span, out: &mut String) -> R<Flow> {
        for n in t.list(list) {
            match n {
                Node::Text(s) => {
                    let at = Pos(s.start);
                    self.step(1, at)?;
                    self.produce(s.range().len(), at)?;
                    out.push_str(t.str(*s));
                }
                Node::Action(p) => {
                    let p = &t.pipes[*p as usize];
                    self.step(1, p.pos)?;
                    let traced = self.enter(t, p.pos);
                    let v = self.pipe(dot, t, p);
                    if let (Ok(v), Some(r), true) = (&v, self.reads.as_mut(), p.decl.is_empty()) {
                        r.whole(v);
                    }
                    let v = self.leave(traced, v)?;
                    if p.decl.is_empty() {
                        let before = out.len();
                        print_value(&v, out);
                        self.produce(out.len() - before, p.pos)?;
                    }
                }
                Node::If(b) => {
                    let mark = self.vars.len();
                    let pipe = &t.pipes[b.pipe as usize];
                    let traced = self.enter(t, pipe.pos);
                    let v = self.pipe(dot, t, pipe);
                    let v = self.leave(traced, v)?;
                    let f = if v.truthy() {
                        self.walk(dot, t, b.list, out)?
                    } else if let Some(e) = b.else_list {
                        self.walk(dot, t, e, out)?
                    } else {
                        Flow::Normal
                    };
                    self.vars.truncate(mark);
                    if !matches!(f, Flow::Normal) {
                        return Ok(f);
                    }
                }
                Node::With(b) => {
                    let mark = self.vars.len();
                    let pipe = &t.pipes[b.pipe as usize];
                    let traced = self.enter(t, pipe.pos);
                    let v = self.pipe(dot, t, pipe);
                    if let (Ok(v), Some(r)) = (&v, self.reads.as_mut()) {
                        r.whole(v);
                    }
                    let v = self.leave(traced, v)?;
                    let f = if v.truthy() {
                        self.walk(&v, t, b.list, out)?
                    } else if let Some(e) = b.else_list {
                        self.walk(dot, t, e, out)?
                    } else {
                        Flow::Normal
                    };
                    self.vars.truncate(mark);
                    if !matches!(f, Flow::Normal) {
                        return Ok(f);
                    }
                }
                Node::Range(b) => self.range(dot, t, b, out)?,
                Node::Template { name, pipe, pos } => {
                    let traced = self.enter(t, *pos);
                    let s = self.call_template(dot, t, (*name, *pipe, *pos));
                    out.push_str(&self.leave(traced, s)?);
                }
                Node::Break(_) => return Ok(Flow::Break),
                Node::Continue(_) => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    /// `{{ template name pipe }}` at `pos`: the template run with the pipeline's value.
    fn call_template(
        &mut self,
        dot: &Value,
        t: &Tree,
        (name, pipe, pos): (u32, Option<u32>, Pos),
    ) -> R<String> {
        let d = match pipe {
            Some(p) => self.pipe(dot, t, &t.pipes[p as usize])?,
            None => Value::Nil,
        };
        let name = &*t.names[name as usize];
        let Some(tm) = self.set.lookup(name) else {
            return Err(self.err_at(
                pos,
                &format!("template \"{name}\""),
                format!("template \"{name}\" not defined"),
            ));
        };
        self.run(tm, d)
    }

    /// With a trace ([`super::reads::ValueReads::traced`]): the action at `pos` of `t` begins;
    /// `true` when it is the outermost one running, to be ended by [`Exec::leave`].
    fn enter(&mut self, t: &Tree, pos: Pos) -> bool {
        match (self.reads.as_mut(), &self.cur) {
            (Some(r), Some(cur)) if r.tracing() => r.enter(&cur.file, &t.src, pos.0),
            _ => false,
        }
    }

    /// Ends the action [`Exec::enter`] began (when it returned `true`), passing its result.
    fn leave<T>(&mut self, traced: bool, result: R<T>) -> R<T> {
        if traced && let Some(r) = self.reads.as_mut() {
            r.leave();
        }
        result
    }

    fn range(&mut self, dot: &Value, t: &Tree, b: &Branch, out: &mut String) -> R<()> {
        let mark = self.vars.len();
        let pipe = &t.pipes[b.pipe as usize];
        let decl = &t.decls[pipe.decl.range()];
        let traced = self.enter(t, pipe.pos);
        let read_mark = self.reads.as_ref().map_or(0, |r| r.mark());
        let coll = self.pipe_no_decl(dot, t, pipe);
        if let (Ok(coll), Some(r)) = (&coll, self.reads.as_mut()) {
            r.whole(coll);
            if r.tracing() {
                // `range $k, $v := .Values.env`: the variables hold what the pipeline read.
                decl.iter()
                    .filter_map(|&sym| t.var_names.get(sym as usize))
                    .for_each(|name| r.assigned(name, read_mark));
            }
        }
        let coll = self.leave(traced, coll)?;
        for v in decl {
            if !pipe.is_assign {
                self.vars.push((*v, Value::Nil));
            }
        }
        // Lists (immutable) and ints are walked in place; maps are read into pairs first, as
        // the body may change the map it ranges over (Go ranges over its sorted keys). A key
        // is made a value only for a `$k, $v :=` range: a string per entry was made and
        // dropped unread by every other range over a map.
        let keys = decl.len() >= 2;
        let mut items = match &coll {
            Value::List(l) => Items::List(l.clone()),
            Value::Map(m) => Items::Pairs(
                m.borrow()
                    .iter()
                    .map(|(k, v)| {
                        let k = if keys {
                            Value::Str(k.clone())
                        } else {
                            Value::Nil
                        };
                        (k, v.clone())
                    })
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            Value::Int(n) => Items::Int(*n),
            Value::Nil => Items::Pairs(Vec::new().into_iter()),
            Value::Object(o) if o.entry_count().is_some() => Items::Pairs(
                o.range(&self.cx)
                    .unwrap_or(Ok(Vec::new()))
                    .map_err(|e| self.err_at(pipe.pos, "range", e))?
                    .into_iter()
                    .map(|(k, v)| (Value::from(k), v))
                    .collect::<Vec<_>>()
                    .into_iter(),
            ),
            other => {
                return Err(self.err_at(
                    pipe.pos,
                    "range",
                    format!("range can't iterate over {}", other.go_string()),
                ));
            }
        };
        let empty = match &items {
            Items::List(l) => l.is_empty(),
            Items::Int(n) => *n <= 0,
            Items::Pairs(p) => p.len() == 0,
        };
        if empty {
            if let Some(e) = b.else_list {
                self.walk(dot, t, e, out)?;
            }
            self.vars.truncate(mark);
            return Ok(());
        }
        let mut i = 0usize;
        loop {
            let (k, v) = match &mut items {
                Items::List(l) => match l.get(i) {
                    Some(v) => (Value::Int(i as i64), v.clone()),
                    None => break,
                },
                Items::Int(n) => {
                    if i as i64 >= *n {
                        break;
                    }
                    (Value::Int(i as i64), Value::Int(i as i64))
                }
                Items::Pairs(p) => match p.next() {
                    Some(kv) => kv,
                    None => break,
                },
            };
            i += 1;
            self.step(1, pipe.pos)?;
            let assigned = match decl.len() {
                0 => true,
                1 => self.set_var(decl[0], v.clone()),
                _ => self.set_var(decl[0], k) && self.set_var(decl[1], v.clone()),
            };
            if !assigned {
                let name = decl
                    .iter()
                    .find(|n| !self.vars[self.base..].iter().any(|(m, _)| m == *n));
                let name = name.map_or("", |n| t.var_name(*n));
                return Err(self.undefined_assignment(t, pipe, name));
            }
            let inner = self.vars.len();
            let f = self.walk(&v, t, b.list, out)?;
            self.vars.truncate(inner);
            if matches!(f, Flow::Break) {
                break;
            }
        }
        self.vars.truncate(mark);
        Ok(())
    }

    /// Go's `setVar`: false when no variable `sym` is in scope (an `=` to a variable never
    /// declared, which Go's parser accepts: the caller fails with Go's message).
    fn set_var(&mut self, sym: u32, v: Value) -> bool {
        let base = self.base;
        match self.vars[base..].iter_mut().rev().find(|(n, _)| *n == sym) {
            Some(slot) => {
                slot.1 = v;
                true
            }
            None => false,
        }
    }

    /// Go's `varValue`: the value of `$name`, or its "undefined variable" error.
    /// With a trace: variable `name` was used, so the values behind it were read again.
    fn used(&mut self, name: &str) {
        if let Some(r) = self.reads.as_mut()
            && r.tracing()
        {
            r.used(name);
        }
    }

    fn var(&self, t: &Tree, sym: u32, pos: Pos) -> R<Value> {
        match self.vars[self.base..].iter().rev().find(|(n, _)| *n == sym) {
            Some((_, v)) => Ok(v.clone()),
            None => {
                let name = t.var_name(sym);
                Err(self.err_at(pos, name, format!("undefined variable: {name}")))
            }
        }
    }

    /// The error of an `=` to `name`, never declared: Go names the last node it evaluated,
    /// the pipeline's last command.
    fn undefined_assignment(&self, t: &Tree, p: &Pipe, name: &str) -> ExecError {
        let pos = t.cmds[p.cmds.range()].last().map_or(p.pos, |c| c.pos);
        let what = command_text(&t.src, pos.0 as usize);
        self.err_at(pos, &what, format!("undefined variable: {name}"))
    }

    fn pipe(&mut self, dot: &Value, t: &Tree, p: &Pipe) -> R<Value> {
        let mark = match self.reads.as_ref() {
            Some(r) if r.tracing() && !p.decl.is_empty() => Some(r.mark()),
            _ => None,
        };
        let v = self.pipe_no_decl(dot, t, p)?;
        if let (Some(mark), Some(r)) = (mark, self.reads.as_mut()) {
            for &sym in &t.decls[p.decl.range()] {
                if let Some(name) = t.var_names.get(sym as usize) {
                    r.assigned(name, mark);
                }
            }
        }
        for &sym in &t.decls[p.decl.range()] {
            if p.is_assign {
                if !self.set_var(sym, v.clone()) {
                    return Err(self.undefined_assignment(t, p, t.var_name(sym)));
                }
            } else {
                self.vars.push((sym, v.clone()));
            }
        }
        Ok(v)
    }

    fn pipe_no_decl(&mut self, dot: &Value, t: &Tree, p: &Pipe) -> R<Value> {
        let mut fin: Option<Value> = None;
        for c in &t.cmds[p.cmds.range()] {
            fin = Some(self.cmd(dot, t, c, fin)?);
        }
        Ok(fin.unwrap_or(Value::Nil))
    }

    fn cmd(&mut self, dot: &Value, t: &Tree, c: &Cmd, fin: Option<Value>) -> R<Value> {
        let args = &t.args[c.args.range()];
        let first = &args[0];
        let rest = &args[1..];
        match first {
            Arg::Field(chain, pos) => self.field_chain(
                dot,
                t,
                dot.clone(),
                Some(""),
                t.str(*chain),
                rest,
                fin,
                *pos,
            ),
            Arg::Chain(term, chain, pos) => {
                let base = self.arg(dot, t, &t.args[*term as usize])?;
                self.field_chain(dot, t, base, None, t.str(*chain), rest, fin, *pos)
            }
            Arg::Var(sym, chain, pos) => {
                let base = self.var(t, *sym, *pos)?;
                let name = t.var_name(*sym);
                self.used(name);
                if chain.is_empty() {
                    self.not_a_function(rest, &fin, *pos, name)?;
                    return Ok(base);
                }
                self.field_chain(dot, t, base, Some(name), t.str(*chain), rest, fin, *pos)
            }
            Arg::Ident(id, pos) => self.call(dot, t, *id, rest, fin, *pos),
            Arg::Pipe(p) => {
                let p = &t.pipes[*p as usize];
                self.not_a_function(rest, &fin, p.pos, "pipeline")?;
                stacker::maybe_grow(WALK_RED_ZONE, STACK_SEGMENT, || self.pipe(dot, t, p))
            }
            Arg::Nil(pos) => {
                self.not_a_function(rest, &fin, *pos, "nil")?;
                Err(self.err_at(*pos, "nil", "nil is not a command".into()))
            }
            other => {
                let pos = c.pos;
                if !rest.is_empty() || fin.is_some() {
                    // Go names the constant as written (`<1>`, `<"a">`, `<.>`).
                    let text = constant_text(&t.src, pos.0 as usize);
                    self.not_a_function(rest, &fin, pos, text)?;
                }
                self.arg(dot, t, other)
            }
        }
    }

    fn not_a_function(&self, rest: &[Arg], fin: &Option<Value>, pos: Pos, what: &str) -> R<()> {
        if !rest.is_empty() || fin.is_some() {
            return Err(self.err_at(
                pos,
                what,
                format!("can't give argument to non-function {what}"),
            ));
        }
        Ok(())
    }

    fn arg(&mut self, dot: &Value, t: &Tree, a: &Arg) -> R<Value> {
        Ok(match a {
            Arg::Field(chain, pos) => self.field_chain(
                dot,
                t,
                dot.clone(),
                Some(""),
                t.str(*chain),
                &[],
                None,
                *pos,
            )?,
            Arg::Dot(_) => dot.clone(),
            Arg::Var(sym, chain, pos) => {
                let base = self.var(t, *sym, *pos)?;
                let name = t.var_name(*sym);
                self.used(name);
                if chain.is_empty() {
                    base
                } else {
                    self.field_chain(dot, t, base, Some(name), t.str(*chain), &[], None, *pos)?
                }
            }
            Arg::Ident(id, pos) => self.call(dot, t, *id, &[], None, *pos)?,
            Arg::Chain(term, chain, pos) => {
                let base = self.arg(dot, t, &t.args[*term as usize])?;
                self.field_chain(dot, t, base, None, t.str(*chain), &[], None, *pos)?
            }
            // A parenthesized pipeline nests: deep ones continue on heap-grown segments.
            Arg::Pipe(p) => stacker::maybe_grow(WALK_RED_ZONE, STACK_SEGMENT, || {
                self.pipe(dot, t, &t.pipes[*p as usize])
            })?,
            Arg::Str(i) => match &self.cur {
                Some(t) => t.lits.get(*i as usize),
                None => Value::Nil,
            },
            Arg::Int(n) => Value::Int(*n),
            Arg::Float(f) => Value::Float(*f),
            Arg::Bool(b) => Value::Bool(*b),
            Arg::Nil(_) => Value::Nil,
            Arg::Overflow(text, pos) => {
                let text = t.str(*text);
                return Err(self.err_at(*pos, text, format!("{text} overflows int")));
            }
        })
    }

    #[allow(clippy::too_many_arguments)]
    /// `head` is what the chain hangs off as written: `""` for `.A.B`, `"$x"` for `$x.A.B`,
    /// `None` for `(pipe).A.B`. Go's errors name the whole node (`<.Values.a.b>`) at the
    /// node's position, which its parser puts at the chain's second part (`.a` of
    /// `.Values.a.b`, `.A` of `$x.A`: the lexer makes `.Values` and `.a` two tokens and the
    /// chain starts at the second); a `(pipe)` chain keeps naming the failing field.
    #[allow(clippy::too_many_arguments)]
    fn field_chain(
        &mut self,
        dot: &Value,
        t: &Tree,
        mut recv: Value,
        head: Option<&str>,
        chain: &str,
        args: &[Arg],
        fin: Option<Value>,
        pos: Pos,
    ) -> R<Value> {
        if chain.is_empty() {
            self.not_a_function(args, &fin, pos, ".")?;
            return Ok(recv);
        }
        // Where an error is reported, and the node it names: worked out only for an error,
        // a field chain is evaluated for nearly every action.
        let site = |name: &str| match head {
            Some(_) => chain_site(head, chain, pos),
            None => (pos, format!(".{name}")),
        };
        // The names of the chain, cut at each `.` by a byte search: `split('.')`'s char
        // searcher cost more than the (short) names it skipped, for every field evaluated.
        let mut rest = Some(chain);
        let mut at_start = true;
        // Go names a receiver by its static type: what a map of the chain gave is an
        // `interface {}` (evalField takes the type before looking inside).
        let mut via_map = false;
        let type_of = |via_map: bool, v: &Value| -> String {
            if via_map {
                "interface {}".to_string()
            } else {
                v.type_name()
            }
        };
        while let Some(r) = rest {
            let (name, last) = match r.bytes().position(|c| c == b'.') {
                Some(d) => {
                    rest = Some(&r[d + 1..]);
                    (&r[..d], false)
                }
                None => {
                    rest = None;
                    (r, true)
                }
            };
            let first = std::mem::replace(&mut at_start, false);
            let has_args = last && (!args.is_empty() || fin.is_some());
            // A nil base (dot, a variable, a pipeline result) is Go's invalid value: its
            // fields are nil too. A nil met inside the chain (a map entry) is an error.
            if first && recv.is_nil() {
                return Ok(Value::Nil);
            }
            recv = match &recv {
                Value::Map(m) => {
                    if has_args {
                        return Err(self.err_at_site(
                            site(name),
                            format!("{name} is not a method but has arguments"),
                        ));
                    }
                    via_map = true;
                    if let Some(r) = self.reads.as_mut() {
                        r.key(m, name);
                    }
                    m.borrow().get(name).cloned().unwrap_or(Value::Nil)
                }
                Value::Object(o) => {
                    let o = o.clone();
                    // Struct fields and method results have their own types.
                    let was_via_map = std::mem::replace(&mut via_map, false);
                    // A field is read once: `.Capabilities.KubeVersion.Version` builds its
                    // value for each read.
                    let field = if has_args { None } else { o.field(name) };
                    if let Some(v) = field {
                        v
                    } else {
                        let mut vals = Vec::new();
                        if last {
                            for a in args {
                                vals.push(self.arg(dot, t, a)?);
                            }
                            if let Some(f) = &fin {
                                vals.push(f.clone());
                            }
                        }
                        if let Some(want) = o.arity(name)
                            && want != vals.len()
                        {
                            return Err(self.err_at_site(
                                site(name),
                                format!(
                                    "wrong number of args for {name}: want {want} got {}",
                                    vals.len()
                                ),
                            ));
                        }
                        match o.call(&self.cx, name, &vals) {
                            Some(Ok(v)) => v,
                            Some(Err(e)) => {
                                return Err(self.err_at_site(
                                    site(name),
                                    format!("error calling {name}: {e}"),
                                ));
                            }
                            None => {
                                return Err(self.err_at_site(
                                    site(name),
                                    format!(
                                        "can't evaluate field {name} in type {}",
                                        type_of(was_via_map, &recv)
                                    ),
                                ));
                            }
                        }
                    }
                }
                Value::Nil => {
                    return Err(self.err_at_site(
                        site(name),
                        format!("nil pointer evaluating interface {{}}.{name}"),
                    ));
                }
                other => {
                    return Err(self.err_at_site(
                        site(name),
                        format!(
                            "can't evaluate field {name} in type {}",
                            type_of(via_map, other)
                        ),
                    ));
                }
            };
        }
        Ok(recv)
    }

    /// Operand `i` of the call of the function at `call`, as Go's typed-argument checks see
    /// it: where Go reports it and how it prints. Only a refused operand needs it: finding
    /// the written text scans the template's source and allocates, and a chart's every typed
    /// call (nats: a fifth of its render) paid for it when it was made for each operand.
    fn operand_site(&self, t: &Tree, a: &Arg, call: Pos, i: usize) -> (Pos, String) {
        match a {
            Arg::Str(_) | Arg::Int(_) | Arg::Float(_) | Arg::Bool(_) => {
                let off = operand_offset(&t.src, call.0 as usize, i);
                (Pos(off as u32), constant_text(&t.src, off).to_string())
            }
            Arg::Nil(p) => (*p, "nil".into()),
            Arg::Dot(p) => (*p, ".".into()),
            Arg::Ident(id, p) => (*p, self.funcs.name(*id).to_string()),
            Arg::Field(chain, p) => chain_site(Some(""), t.str(*chain), *p),
            Arg::Var(sym, chain, p) if chain.is_empty() => (*p, t.var_name(*sym).to_string()),
            Arg::Var(sym, chain, p) => chain_site(Some(t.var_name(*sym)), t.str(*chain), *p),
            Arg::Chain(_, chain, p) => (*p, format!(".{}", t.str(*chain))),
            Arg::Pipe(p) => {
                let p = &t.pipes[*p as usize];
                (p.pos, command_text(&t.src, p.pos.0 as usize))
            }
            Arg::Overflow(text, p) => (*p, t.str(*text).to_string()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        dot: &Value,
        t: &Tree,
        id: FuncId,
        args: &[Arg],
        fin: Option<Value>,
        pos: Pos,
    ) -> R<Value> {
        // `and`/`or` evaluate their arguments lazily (Go 1.18).
        if id == FuncId::AND || id == FuncId::OR {
            let name = if id == FuncId::AND { "and" } else { "or" };
            let total = args.len() + usize::from(fin.is_some());
            if total == 0 {
                return Err(self.err_at(
                    pos,
                    name,
                    format!("wrong number of args for {name}: want at least 1 got 0"),
                ));
            }
            let mut last = Value::Nil;
            for a in args {
                last = self.arg(dot, t, a)?;
                if (name == "and") != last.truthy() {
                    return Ok(last);
                }
            }
            if let Some(f) = fin {
                last = f;
            }
            return Ok(last);
        }
        // The table is borrowed through a clone of its `Rc` (one count), as the function
        // gets the execution mutably.
        let funcs = self.funcs.clone();
        let Some((_, f)) = funcs.table.get(id.0 as usize) else {
            return Err(self.err_at(pos, "", "not a defined function".into()));
        };
        let sig = funcs.sigs.get(id.0 as usize).copied().flatten();
        let n = args.len() + usize::from(fin.is_some());
        let mut vals = self.arg_lists.pop().unwrap_or_default();
        for (i, a) in args.iter().enumerate() {
            let mut v = self.arg(dot, t, a)?;
            if let Some(param) = sig.and_then(|s| s.param(i, n)) {
                let origin = operand_origin(a);
                if let Err(m) =
                    super::params::check(param, &v, origin, || self.operand_site(t, a, pos, i).1)
                {
                    let (at, what) = self.operand_site(t, a, pos, i);
                    return Err(self.err_at(at, &what, m));
                }
                v = param.as_passed(v, origin);
            }
            vals.push(v);
        }
        if let Some(v) = fin {
            if let Some(param) = sig.and_then(|s| s.param(n - 1, n)) {
                // Go names the node it evaluated last: the last operand, or the function.
                let site = || match args.len() {
                    0 => (pos, self.funcs.name(id).to_string()),
                    k => self.operand_site(t, &args[k - 1], pos, k - 1),
                };
                if let Err(m) = super::params::check(param, &v, Origin::Untyped, || site().1) {
                    let (at, what) = site();
                    return Err(self.err_at(at, &what, m));
                }
            }
            vals.push(v);
        }
        // What reflect's Call passes (`and`/`or` above return the operand itself).
        for v in vals.iter_mut() {
            if let Value::Object(o) = v
                && let Some(copy) = o.as_argument()
            {
                *v = copy;
            }
        }
        self.step(funcs.weights.get(id.0 as usize).copied().unwrap_or(1), pos)?;
        if let Some(r) = self.reads.as_mut() {
            r.call(funcs.name(id), &vals);
        }
        let r = f(self, &vals);
        vals.clear();
        self.arg_lists.push(vals);
        if let Ok(Value::Str(text)) = &r {
            self.produce(text.len(), pos)?;
        }
        r.map_err(|e| {
            let name = self.funcs.name(id).to_string();
            // Go names the whole command; a function called without operands (an operand
            // itself, or a command of one word) is that word.
            let what = if args.is_empty() {
                name.clone()
            } else {
                command_text(&t.src, pos.0 as usize)
            };
            self.err_at(pos, &what, format!("error calling {name}: {e}"))
        })
    }
}

/// Go's `printValue`: nil is `<no value>`, everything else `fmt.Sprint`, written into the
/// output (not made a string of its own first: ports and replica counts are printed so).
fn print_value(v: &Value, out: &mut String) {
    match v {
        Value::Nil => out.push_str("<no value>"),
        Value::Str(s) => out.push_str(s),
        other => other.write_go_into(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::parse;
    use crate::template::value::Dict;

    fn render(text: &str, dot: Value) -> Result<String, String> {
        let mut funcs = Funcs::default();
        funcs.add("include", |ex: &mut Exec, a| {
            let Value::Str(name) = &a[0] else {
                return Err("name".into());
            };
            ex.execute(name, a[1].clone())
                .map(Value::from)
                .map_err(|e| e.to_string())
        });
        funcs.add("list", |_, a| Ok(Value::List(Rc::new(a.to_vec()))));
        let funcs = Rc::new(funcs);
        let parsed = parse::parse("t", text, &|n: &str| funcs.id(n)).map_err(|e| e.to_string())?;
        let mut set = TemplateSet::default();
        set.add("t", "t", parsed);
        let mut ex = Exec::new(Rc::new(set), funcs, Rc::new(()));
        let out = ex.execute("t", dot).map_err(|e| e.to_string());
        assert!(!ex.into_trees().is_empty());
        out
    }

    /// Ids are given in registration order (templates may be parsed against a copy of
    /// the names); registering a name again replaces its function under the same id.
    #[test]
    fn functions_keep_their_registration_ids() {
        let mut f = Funcs::default();
        f.add("a", |_, _| Ok(Value::Int(1)));
        f.add("bb", |_, _| Ok(Value::Int(2)));
        f.add("a", |_, _| Ok(Value::Int(3)));
        let names: Vec<String> = (0..40).map(|n| "x".repeat(n + 1)).collect();
        for n in &names {
            f.add(n.clone().leak(), |_, _| Ok(Value::Nil));
        }
        assert_eq!(f.id("a").map(|i| i.0), Some(0));
        assert_eq!(f.id("bb").map(|i| i.0), Some(1));
        for (i, n) in names.iter().enumerate() {
            assert_eq!(f.id(n).map(|i| i.0), Some(i as u32 + 2), "{n}");
            assert_eq!(f.name(FuncId(i as u32 + 2)), n);
        }
        assert!(f.id("c").is_none() && f.id("").is_none() && f.id("xxxxxxxxx ").is_none());
        assert!(f.id("and") == Some(FuncId::AND) && f.id("or") == Some(FuncId::OR));
        let funcs = Rc::new(f);
        let mut ex = Exec::new(Rc::new(TemplateSet::default()), funcs.clone(), Rc::new(()));
        let got = (funcs.get("a").unwrap())(&mut ex, &[]).unwrap();
        assert!(matches!(got, Value::Int(3)));
        // The kept names resolve as the table does.
        drop(ex);
        let Ok(f) = Rc::try_unwrap(funcs) else {
            panic!("shared")
        };
        let ids: Vec<Option<u32>> = ["a", "bb", "xxx", "and", "c"]
            .iter()
            .map(|n| f.id(n).map(|i| i.0))
            .collect();
        let kept = f.into_names();
        let of = FuncNames::of(&kept);
        let kept_ids: Vec<Option<u32>> = ["a", "bb", "xxx", "and", "c"]
            .iter()
            .map(|n| of.id(n).map(|i| i.0))
            .collect();
        assert_eq!(ids, kept_ids);
    }

    #[test]
    fn a_define_shares_its_texts_tree_and_renders_the_same_every_time() {
        let text = r#"{{define "x"}}[{{.}}{{with $y := .}}{{$y}}{{end}}]{{end}}{{template "x" 1}}{{include "x" 2}}{{template "x" 1}}{{ (include "x" 3) }}"#;
        assert_eq!(render(text, Value::Nil).as_deref(), Ok("[11][22][11][33]"));
    }

    /// Go names the whole field node and puts it at the chain's second part (what real Helm
    /// v4.2.3 reports for each, helm-python-sdk, the file named `t` here).
    #[test]
    fn field_errors_name_the_whole_chain_at_its_second_part() {
        let values = || {
            let mut v = Dict::new();
            v.insert("foo".to_string(), Value::map(Dict::new()));
            v.insert("n".to_string(), Value::Int(1));
            let mut top = Dict::new();
            top.insert("Values".to_string(), Value::map(v));
            Value::map(top)
        };
        let cases = [
            (
                "x: {{ .Values.foo.bar.baz }}",
                "t:1:13",
                "<.Values.foo.bar.baz>: nil pointer evaluating interface {}.baz",
            ),
            (
                "x: {{ .Values.nope.baz }}",
                "t:1:13",
                "<.Values.nope.baz>: nil pointer evaluating interface {}.baz",
            ),
            (
                "{{ $x := .Values }}x: {{ $x.foo.bar.baz }}",
                "t:1:27",
                "<$x.foo.bar.baz>: nil pointer evaluating interface {}.baz",
            ),
            (
                "a: 1\n  x: {{ .Values.foo.bar.baz }}",
                "t:2:15",
                "<.Values.foo.bar.baz>: nil pointer",
            ),
            (
                "{{ $x := 1 }}x: {{ $x.foo }}",
                "t:1:21",
                "<$x.foo>: can't evaluate field foo in type int",
            ),
            (
                "x: {{ .Values.foo.bar 1 }}",
                "t:1:13",
                "<.Values.foo.bar>: bar is not a method but has arguments",
            ),
            // What a map gave is an `interface {}` to Go; a pipeline's result (`with`, a
            // variable) is the value inside.
            (
                "x: {{ .Values.n.z }}",
                "t:1:13",
                "<.Values.n.z>: can't evaluate field z in type interface {}",
            ),
            (
                "x: {{ with .Values.n }}{{ .z }}{{ end }}",
                "t:1:26",
                "<.z>: can't evaluate field z in type int",
            ),
        ];
        for (text, at, what) in cases {
            let err = render(text, values()).unwrap_err();
            assert!(
                err.starts_with(&format!("template: {at}: executing \"t\" at {what}")),
                "{text:?}: {err}"
            );
        }
    }

    #[test]
    fn error_locations_are_counted_from_the_text_of_the_template() {
        let mut m = Dict::new();
        m.insert("a".to_string(), Value::Nil);
        let text = "a\n{{define \"x\"}}\n  {{ .a.b }}{{end}}\n{{template \"x\" .}}";
        let err = render(text, Value::map(m)).unwrap_err();
        assert!(
            err.starts_with("template: t:3:7: executing \"x\" at <.a.b>: nil pointer"),
            "{err}"
        );
        let err = render("{{define \"x\"}}\n\n {{ nope }}{{end}}", Value::Nil).unwrap_err();
        assert_eq!(err, "template: t:3: function \"nope\" not defined");
    }

    #[test]
    fn branches_ranges_and_variables_walk_the_flat_tree() {
        let mut m = Dict::new();
        m.insert("b".to_string(), Value::Bool(true));
        let mut inner = Dict::new();
        inner.insert("c".to_string(), Value::from("deep"));
        m.insert("m".to_string(), Value::map(inner));
        let dot = Value::map(m);
        let cases = [
            ("{{if .a}}A{{else if .b}}B{{else}}C{{end}}", "B"),
            ("{{if .a}}A{{else if .z}}B{{else}}C{{end}}", "C"),
            (
                r#"{{range $i, $v := list "a" "b" "c"}}{{if $i}},{{end}}{{$i}}={{$v}}{{end}}"#,
                "0=a,1=b,2=c",
            ),
            (
                "{{range 3}}{{.}}{{end}}|{{range 0}}x{{else}}none{{end}}",
                "012|none",
            ),
            (
                "{{range list 1 2 3}}{{.}}{{if .}}{{break}}{{end}}{{end}}",
                "1",
            ),
            ("{{range $k, $v := .m}}{{$k}}:{{$v}}{{end}}", "c:deep"),
            // Without a key variable the keys are not made; the values are the same.
            (
                "{{range $v := .m}}{{$v}}{{end}}|{{range .m}}{{.}}{{end}}",
                "deep|deep",
            ),
            (
                "{{$x := 1}}{{with $y := 2}}{{$x}}{{$y}}{{end}}{{$x = 5}}{{$x}}",
                "125",
            ),
            (
                "{{ .m.c }} {{ $.m.c }} {{ (.m).c }} {{ with .m }}{{ .c }}{{ end }}",
                "deep deep deep deep",
            ),
            ("  {{- .m.c -}}  \n{{/* c */}}{{ `raw` }}", "deepraw"),
        ];
        for (text, want) in cases {
            assert_eq!(render(text, dot.clone()).as_deref(), Ok(want), "{text}");
        }
    }

    /// Number literals as Go types them: int64's edges are ints in every radix, a float is
    /// only what is written as one, an integer past int64 but within uint64 parses and fails
    /// when evaluated, and a larger one (or `09`, no octal and no float) does not parse.
    #[test]
    fn number_literals_are_typed_and_bounded_as_gos_parser_does() {
        let dot = Value::Nil;
        let cases = [
            ("{{ -9223372036854775808 }}", "-9223372036854775808"),
            ("{{ -0x8000000000000000 }}", "-9223372036854775808"),
            ("{{ 9223372036854775807 }}", "9223372036854775807"),
            (
                "{{ 0o17 }} {{ 017 }} {{ 0b101 }} {{ 0x1F }} {{ 1_000 }}",
                "15 15 5 31 1000",
            ),
            ("{{ 1e3 }} {{ 0x1p4 }} {{ 1.5 }}", "1000 16 1.5"),
        ];
        for (text, want) in cases {
            assert_eq!(render(text, dot.clone()).as_deref(), Ok(want), "{text}");
        }
        let err = render("{{ 9223372036854775808 }}", dot.clone()).unwrap_err();
        assert!(
            err.ends_with("at <9223372036854775808>: 9223372036854775808 overflows int"),
            "{err}"
        );
        // Inside a branch that is not taken, the literal is never evaluated.
        assert_eq!(
            render(
                "{{ if false }}{{ 18446744073709551615 }}{{ end }}",
                dot.clone()
            )
            .as_deref(),
            Ok("")
        );
        for text in [
            "{{ 18446744073709551616 }}",
            "{{ -9223372036854775809 }}",
            "{{ 09 }}",
        ] {
            let err = render(text, dot.clone()).unwrap_err();
            assert!(err.contains("integer overflow: \""), "{text}: {err}");
        }
        let err = render("{{ 1x }}", dot).unwrap_err();
        assert!(err.contains("bad number syntax: \"1x\""), "{err}");
    }

    /// `nil` is an argument, never a command: Go refuses it at its own position wherever it
    /// starts a command (alone, piped, as a condition, assigned).
    #[test]
    fn nil_is_not_a_command() {
        for (text, col) in [
            ("{{ nil }}", 3),
            ("{{ nil | list }}", 3),
            ("{{ if nil }}x{{ end }}", 6),
            ("{{ $x := nil }}", 9),
        ] {
            let err = render(text, Value::Nil).unwrap_err();
            assert_eq!(
                err,
                format!("template: t:1:{col}: executing \"t\" at <nil>: nil is not a command"),
                "{text}"
            );
        }
        assert_eq!(
            render("{{ list nil }}", Value::Nil).as_deref(),
            Ok("[<nil>]")
        );
    }

    /// 5,000 nested parentheses or `if`s parse and run, on heap-grown stacks, where they
    /// overflowed the thread's stack (issue 39, item 9); Go's stacks grow too.
    #[test]
    fn deep_nests_parse_and_run_on_grown_stacks() {
        let n = 5000;
        let parens = format!("{{{{ {}1{} }}}}", "(".repeat(n), ")".repeat(n));
        assert_eq!(render(&parens, Value::Nil).as_deref(), Ok("1"));
        let ifs = format!("{}x{}", "{{ if true }}".repeat(n), "{{ end }}".repeat(n));
        assert_eq!(render(&ifs, Value::Nil).as_deref(), Ok("x"));
    }

    /// `=` to a variable never declared parses (Go's parser puts it in scope) and fails only
    /// when it runs, with exec.go `setVar`'s message (issue 37, Helm class 3).
    #[test]
    fn assignment_to_an_undeclared_variable_fails_only_when_it_runs() {
        assert_eq!(
            render("{{ if false }}{{ $x = 1 }}{{ $x }}{{ end }}ok", Value::Nil).as_deref(),
            Ok("ok")
        );
        assert_eq!(
            render("a{{ $x = 1 }}", Value::Nil).unwrap_err(),
            "template: t:1:9: executing \"t\" at <1>: undefined variable: $x"
        );
        // Still a parse error where no `=` or `:=` ever named it.
        assert!(
            render("{{ $y }}", Value::Nil)
                .unwrap_err()
                .contains("undefined variable \"$y\"")
        );
    }

    /// A constant given arguments is named as written, as Go prints the node.
    #[test]
    fn a_constant_given_arguments_is_named_as_written() {
        for (text, what) in [
            ("{{ 1 2 }}", "1"),
            ("{{ 0x10 2 }}", "0x10"),
            ("{{ \"s\" 2 }}", "\"s\""),
            ("{{ `r s` 2 }}", "`r s`"),
            ("{{ . 2 }}", "."),
            ("{{ true 2 }}", "true"),
            ("{{ 1 | list }}", ""),
        ] {
            let got = render(text, Value::Nil);
            if what.is_empty() {
                assert_eq!(got.as_deref(), Ok("[1]"), "{text}");
                continue;
            }
            let err = got.unwrap_err();
            assert!(
                err.ends_with(&format!(
                    "at <{what}>: can't give argument to non-function {what}"
                )),
                "{text}: {err}"
            );
        }
    }

    /// A failing call is named by its whole command as Go's `CommandNode.String()` prints
    /// it: operands as written, one space apart, inner pipelines as `(a | b)`, without the
    /// value piped in; called without operands, by its name.
    #[test]
    fn a_failing_call_is_named_by_its_command() {
        for (text, what) in [
            ("{{ include \"nope\" . }}", "include \"nope\" ."),
            ("{{ . | include   \"nope\" -}}", "include \"nope\""),
            (
                "{{ list (include `nope` ( list 1 |  list ) $.a) }}",
                "include `nope` (list 1 | list) $.a",
            ),
            ("{{- include \"no}pe\" (.).x }}", "include \"no}pe\" (.).x"),
            // Names may hold any letter: the text is cut at characters, never inside one.
            ("{{ include \"é\" .é.ü }}", "include \"é\" .é.ü"),
        ] {
            let err = render(text, Value::Nil).unwrap_err();
            assert!(
                err.contains(&format!(" at <{what}>: error calling include: ")),
                "{text}: {err}"
            );
        }
    }
}
