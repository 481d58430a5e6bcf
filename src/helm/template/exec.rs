//! Execution of parsed templates, after Go's `text/template/exec.go`: dot and `$`,
//! variables with Go's scoping, field chains on maps and objects, method calls with the
//! piped value as last argument, lazy `and`/`or`, `range` over lists, maps (sorted keys)
//! and ints, `break`/`continue`, `template` with a fresh variable scope.
//!
//! `missingkey=zero` as Helm sets it: a missing map key is nil, printed as `<no value>`;
//! a field of nil is Go's "nil pointer evaluating interface {}.X" error.

use super::parse::{Arg, Branch, Cmd, FuncId, Node, Pipe, Pos};
use super::value::Value;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;
use std::sync::Arc;

/// A function as templates call it: it may execute templates (`include`, `tpl`).
pub type Func = Rc<dyn Fn(&mut Exec, &[Value]) -> Result<Value, String>>;

/// FxHash (rustc's): names are short and not attacker-chosen, and SipHash was a visible
/// part of every function and template lookup. Only used for lookups, never iterated into
/// output.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FxHasher`].
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The registered functions: a table indexed by [`FuncId`] (the parser resolves each call's
/// name once; execution indexes) and the names that resolve to it.
#[derive(Default, Clone)]
pub struct Funcs {
    ids: FxMap<String, FuncId>,
    table: Vec<(String, Func)>,
}

impl Funcs {
    /// Registers `name`; registering a name again replaces its function (same id).
    pub fn add(
        &mut self,
        name: &str,
        f: impl Fn(&mut Exec, &[Value]) -> Result<Value, String> + 'static,
    ) {
        let f: Func = Rc::new(f);
        match self.ids.get(name) {
            Some(id) => self.table[id.0 as usize].1 = f,
            None => {
                let id = FuncId(self.table.len() as u32);
                self.ids.insert(name.to_string(), id);
                self.table.push((name.to_string(), f));
            }
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
    pub fn has(&self, name: &str) -> bool {
        self.id(name).is_some()
    }
    pub fn get(&self, name: &str) -> Option<Func> {
        self.ids
            .get(name)
            .map(|id| self.table[id.0 as usize].1.clone())
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
        let mut v: Vec<String> = self.table.iter().map(|(n, _)| n.clone()).collect();
        v.push("and".into());
        v.push("or".into());
        v.sort();
        v
    }
}

/// Resolves function names to ids; `Sync`.
#[derive(Clone, Copy)]
pub struct FuncNames<'a>(&'a FxMap<String, FuncId>);

impl FuncNames<'_> {
    pub fn id(&self, name: &str) -> Option<FuncId> {
        match name {
            "and" => Some(FuncId::AND),
            "or" => Some(FuncId::OR),
            _ => self.0.get(name).copied(),
        }
    }
}

/// One named template: its tree and the file it was parsed from (for error locations).
pub struct Tmpl {
    pub name: String,
    pub file: Rc<str>,
    pub root: Rc<Vec<Node>>,
    /// The string literals of the text it was parsed from (`Arg::Str` indexes them), as
    /// values, shared by the text's templates.
    pub lits: Rc<[Value]>,
    /// The bytes of its top-level text: what its output needs at least, reserved up front
    /// (growing a large rendered file by doubling copied it several times).
    pub text_len: usize,
}

fn text_len(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Text(t) => t.len(),
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
        let lits: Rc<[Value]> = parsed.lits.iter().map(Value::str).collect();
        for (dname, body) in parsed.defines {
            self.own.insert(
                dname.clone(),
                Rc::new(Tmpl {
                    name: dname,
                    file: file.clone(),
                    text_len: text_len(&body),
                    root: Rc::new(body),
                    lits: lits.clone(),
                }),
            );
        }
        let keep_existing = self.own.contains_key(name) && is_empty_tree(&parsed.root);
        if !keep_existing {
            self.own.insert(
                name.to_string(),
                Rc::new(Tmpl {
                    name: name.to_string(),
                    file,
                    text_len: text_len(&parsed.root),
                    root: Rc::new(parsed.root),
                    lits,
                }),
            );
        }
    }
}

/// Go's `IsEmptyTree`: only whitespace text.
fn is_empty_tree(nodes: &[Node]) -> bool {
    nodes.iter().all(|n| match n {
        Node::Text(t) => t.trim().is_empty(),
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
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "template: {}: executing \"{}\" at <{}>: {}",
            self.location, self.name, self.what, self.message
        )
    }
}

enum Flow {
    Normal,
    Break,
    Continue,
}

/// Helm's limit on nested `include`/`template` calls.
const MAX_DEPTH: usize = 1000;

/// The state of one execution.
pub struct Exec {
    pub set: Rc<TemplateSet>,
    pub funcs: Rc<Funcs>,
    /// Variables in scope, innermost last. Names are shared with the tree (`Pipe::decl`).
    vars: Vec<(Arc<str>, Value)>,
    /// Where the running template's variables start in `vars`.
    base: usize,
    /// `$`, the name every template run starts with.
    dollar: Arc<str>,
    depth: usize,
    /// The template being executed (for errors and `tpl`'s name).
    cur: Option<Rc<Tmpl>>,
    /// Host data for functions (the chart context).
    pub host: Rc<dyn std::any::Any>,
}

type R<T> = Result<T, ExecError>;

impl Exec {
    pub fn new(set: Rc<TemplateSet>, funcs: Rc<Funcs>, host: Rc<dyn std::any::Any>) -> Exec {
        Exec {
            set,
            funcs,
            vars: Vec::new(),
            base: 0,
            dollar: Arc::from("$"),
            depth: 0,
            cur: None,
            host,
        }
    }

    /// Ends the execution and hands back its parsed trees, for the caller to drop where it
    /// costs nothing (they are `Send`; freeing every node of a chart's trees was ~5 % of a
    /// render). Trees still shared elsewhere are left to their other holders.
    pub fn into_trees(self) -> Vec<Vec<Node>> {
        let Ok(set) = Rc::try_unwrap(self.set) else {
            return Vec::new();
        };
        // The order does not matter: the trees are only dropped.
        #[allow(clippy::iter_over_hash_type)]
        set.own
            .into_values()
            .filter_map(|t| Rc::try_unwrap(t).ok())
            .filter_map(|t| Rc::try_unwrap(t.root).ok())
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
            });
        };
        self.run(t, dot)
    }

    /// Executes a template tree with a new variable scope.
    pub fn run(&mut self, t: Rc<Tmpl>, dot: Value) -> R<String> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err_at(
                Pos::default(),
                "",
                "exceeded maximum template depth (1000)".into(),
            ));
        }
        self.depth += 1;
        // A fresh scope on the same stack: the caller's variables stay below `base`, out
        // of sight (a new Vec for every `include` was an allocation per call).
        let saved_base = std::mem::replace(&mut self.base, self.vars.len());
        self.vars.push((self.dollar.clone(), dot.clone()));
        let saved_cur = self.cur.replace(t.clone());
        let mut out = String::with_capacity(t.text_len);
        let r = self.walk(&dot, &t.root, &mut out);
        self.vars.truncate(self.base);
        self.base = saved_base;
        self.cur = saved_cur;
        self.depth -= 1;
        r.map(|_| out)
    }

    fn err_at(&self, pos: Pos, what: &str, message: String) -> ExecError {
        let (file, name) = match &self.cur {
            Some(t) => (t.file.to_string(), t.name.clone()),
            None => (String::new(), String::new()),
        };
        ExecError {
            location: format!("{file}:{}:{}", pos.line, pos.col),
            name,
            what: what.to_string(),
            message,
        }
    }

    fn walk(&mut self, dot: &Value, nodes: &[Node], out: &mut String) -> R<Flow> {
        for n in nodes {
            match n {
                Node::Text(t) => out.push_str(t),
                Node::Action(p) => {
                    let v = self.pipe(dot, p)?;
                    if p.decl.is_empty() {
                        print_value(&v, out);
                    }
                }
                Node::If(b) => {
                    let mark = self.vars.len();
                    let v = self.pipe(dot, &b.pipe)?;
                    let f = if v.truthy() {
                        self.walk(dot, &b.list, out)?
                    } else if let Some(e) = &b.else_list {
                        self.walk(dot, e, out)?
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
                    let v = self.pipe(dot, &b.pipe)?;
                    let f = if v.truthy() {
                        self.walk(&v, &b.list, out)?
                    } else if let Some(e) = &b.else_list {
                        self.walk(dot, e, out)?
                    } else {
                        Flow::Normal
                    };
                    self.vars.truncate(mark);
                    if !matches!(f, Flow::Normal) {
                        return Ok(f);
                    }
                }
                Node::Range(b) => self.range(dot, b, out)?,
                Node::Template { name, pipe, pos } => {
                    let d = match pipe {
                        Some(p) => self.pipe(dot, p)?,
                        None => Value::Nil,
                    };
                    let Some(t) = self.set.lookup(name) else {
                        return Err(self.err_at(
                            *pos,
                            &format!("template \"{name}\""),
                            format!("template \"{name}\" not defined"),
                        ));
                    };
                    let s = self.run(t, d)?;
                    out.push_str(&s);
                }
                Node::Break(_) => return Ok(Flow::Break),
                Node::Continue(_) => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    fn range(&mut self, dot: &Value, b: &Branch, out: &mut String) -> R<()> {
        let mark = self.vars.len();
        let coll = self.pipe_no_decl(dot, &b.pipe)?;
        for v in &b.pipe.decl {
            if !b.pipe.is_assign {
                self.vars.push((v.clone(), Value::Nil));
            }
        }
        let items: Vec<(Value, Value)> = match &coll {
            Value::List(l) => l
                .iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i as i64), v.clone()))
                .collect(),
            Value::Map(m) => m
                .borrow()
                .iter()
                .map(|(k, v)| (Value::str(k), v.clone()))
                .collect(),
            Value::Int(n) => (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect(),
            Value::Nil => Vec::new(),
            Value::Object(o) if o.entries().is_some() => o
                .entries()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
            other => {
                return Err(self.err_at(
                    b.pipe.pos,
                    "range",
                    format!("range can't iterate over {}", other.go_string()),
                ));
            }
        };
        if items.is_empty() {
            if let Some(e) = &b.else_list {
                self.walk(dot, e, out)?;
            }
            self.vars.truncate(mark);
            return Ok(());
        }
        for (k, v) in items {
            match b.pipe.decl.len() {
                0 => {}
                1 => self.set_var(&b.pipe.decl[0], v.clone()),
                _ => {
                    self.set_var(&b.pipe.decl[0], k);
                    self.set_var(&b.pipe.decl[1], v.clone());
                }
            }
            let inner = self.vars.len();
            let f = self.walk(&v, &b.list, out)?;
            self.vars.truncate(inner);
            if matches!(f, Flow::Break) {
                break;
            }
        }
        self.vars.truncate(mark);
        Ok(())
    }

    fn set_var(&mut self, name: &str, v: Value) {
        let base = self.base;
        if let Some(slot) = self.vars[base..]
            .iter_mut()
            .rev()
            .find(|(n, _)| &**n == name)
        {
            slot.1 = v;
        }
    }

    fn var(&self, name: &str) -> Value {
        self.vars[self.base..]
            .iter()
            .rev()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or(Value::Nil)
    }

    fn pipe(&mut self, dot: &Value, p: &Pipe) -> R<Value> {
        let v = self.pipe_no_decl(dot, p)?;
        for name in &p.decl {
            if p.is_assign {
                self.set_var(name, v.clone());
            } else {
                self.vars.push((name.clone(), v.clone()));
            }
        }
        Ok(v)
    }

    fn pipe_no_decl(&mut self, dot: &Value, p: &Pipe) -> R<Value> {
        let mut fin: Option<Value> = None;
        for c in &p.cmds {
            fin = Some(self.cmd(dot, c, fin)?);
        }
        Ok(fin.unwrap_or(Value::Nil))
    }

    fn cmd(&mut self, dot: &Value, c: &Cmd, fin: Option<Value>) -> R<Value> {
        let first = &c.args[0];
        let rest = &c.args[1..];
        match first {
            Arg::Field(chain, pos) => self.field_chain(dot, dot.clone(), chain, rest, fin, *pos),
            Arg::Chain(term, chain, pos) => {
                let base = self.arg(dot, term)?;
                self.field_chain(dot, base, chain, rest, fin, *pos)
            }
            Arg::Var(name, chain, pos) => {
                let base = self.var(name);
                if chain.is_empty() {
                    self.not_a_function(rest, &fin, *pos, name)?;
                    return Ok(base);
                }
                self.field_chain(dot, base, chain, rest, fin, *pos)
            }
            Arg::Ident(id, pos) => self.call(dot, *id, rest, fin, *pos),
            Arg::Pipe(p) => {
                self.not_a_function(rest, &fin, p.pos, "pipeline")?;
                self.pipe(dot, p)
            }
            other => {
                let pos = c.pos;
                self.not_a_function(rest, &fin, pos, "constant")?;
                self.arg(dot, other)
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

    fn arg(&mut self, dot: &Value, a: &Arg) -> R<Value> {
        Ok(match a {
            Arg::Field(chain, pos) => self.field_chain(dot, dot.clone(), chain, &[], None, *pos)?,
            Arg::Dot(_) => dot.clone(),
            Arg::Var(name, chain, pos) => {
                let base = self.var(name);
                if chain.is_empty() {
                    base
                } else {
                    self.field_chain(dot, base, chain, &[], None, *pos)?
                }
            }
            Arg::Ident(id, pos) => self.call(dot, *id, &[], None, *pos)?,
            Arg::Chain(term, chain, pos) => {
                let base = self.arg(dot, term)?;
                self.field_chain(dot, base, chain, &[], None, *pos)?
            }
            Arg::Pipe(p) => self.pipe(dot, p)?,
            Arg::Str(i) => self
                .cur
                .as_ref()
                .and_then(|t| t.lits.get(*i as usize))
                .cloned()
                .unwrap_or(Value::Nil),
            Arg::Int(n) => Value::Int(*n),
            Arg::Float(f) => Value::Float(*f),
            Arg::Bool(b) => Value::Bool(*b),
            Arg::Nil(_) => Value::Nil,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn field_chain(
        &mut self,
        dot: &Value,
        mut recv: Value,
        chain: &str,
        args: &[Arg],
        fin: Option<Value>,
        pos: Pos,
    ) -> R<Value> {
        if chain.is_empty() {
            self.not_a_function(args, &fin, pos, ".")?;
            return Ok(recv);
        }
        let mut names = chain.split('.').enumerate().peekable();
        while let Some((i, name)) = names.next() {
            let last = names.peek().is_none();
            let has_args = last && (!args.is_empty() || fin.is_some());
            // A nil base (dot, a variable, a pipeline result) is Go's invalid value: its
            // fields are nil too. A nil met inside the chain (a map entry) is an error.
            if i == 0 && recv.is_nil() {
                return Ok(Value::Nil);
            }
            recv = match &recv {
                Value::Map(m) => {
                    if has_args {
                        return Err(self.err_at(
                            pos,
                            &format!(".{name}"),
                            format!("{name} is not a method but has arguments"),
                        ));
                    }
                    m.borrow().get(name).cloned().unwrap_or(Value::Nil)
                }
                Value::Object(o) => {
                    let o = o.clone();
                    if has_args || o.field(name).is_none() {
                        let mut vals = Vec::new();
                        if last {
                            for a in args {
                                vals.push(self.arg(dot, a)?);
                            }
                            if let Some(f) = &fin {
                                vals.push(f.clone());
                            }
                        }
                        match o.call(name, &vals) {
                            Some(Ok(v)) => v,
                            Some(Err(e)) => {
                                return Err(self.err_at(
                                    pos,
                                    &format!(".{name}"),
                                    format!("error calling {name}: {e}"),
                                ));
                            }
                            None => {
                                return Err(self.err_at(
                                    pos,
                                    &format!(".{name}"),
                                    format!(
                                        "can't evaluate field {name} in type {}",
                                        o.type_name()
                                    ),
                                ));
                            }
                        }
                    } else {
                        o.field(name).unwrap_or(Value::Nil)
                    }
                }
                Value::Nil => {
                    return Err(self.err_at(
                        pos,
                        &format!(".{name}"),
                        format!("nil pointer evaluating interface {{}}.{name}"),
                    ));
                }
                other => {
                    return Err(self.err_at(
                        pos,
                        &format!(".{name}"),
                        format!("can't evaluate field {name} in type {}", other.type_name()),
                    ));
                }
            };
        }
        Ok(recv)
    }

    fn call(
        &mut self,
        dot: &Value,
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
                last = self.arg(dot, a)?;
                if (name == "and") != last.truthy() {
                    return Ok(last);
                }
            }
            if let Some(f) = fin {
                last = f;
            }
            return Ok(last);
        }
        let Some(f) = self.funcs.table.get(id.0 as usize).map(|(_, f)| f.clone()) else {
            return Err(self.err_at(pos, "", "not a defined function".into()));
        };
        let mut vals = Vec::with_capacity(args.len() + 1);
        for a in args {
            vals.push(self.arg(dot, a)?);
        }
        if let Some(v) = fin {
            vals.push(v);
        }
        f(self, &vals).map_err(|e| {
            let name = self.funcs.name(id).to_string();
            self.err_at(pos, &name, format!("error calling {name}: {e}"))
        })
    }
}

/// Go's `printValue`: nil is `<no value>`, everything else `fmt.Sprint`.
fn print_value(v: &Value, out: &mut String) {
    match v {
        Value::Nil => out.push_str("<no value>"),
        Value::Str(s) => out.push_str(s),
        other => out.push_str(&other.go_string()),
    }
}
