//! Which paths of a values tree the templates read (issue 36, item 6: a value given to a
//! chart that no template reads is a typo more often than not). Go's `text/template` has no
//! such record and Helm has no such check; kiln keeps it beside the execution, off unless a
//! caller asks ([`super::exec::Exec::reads`]), so `helm template`'s output never depends on it.
//!
//! A read is a key looked up in a map of the tree: a field chain (`.Values.a.b` reads `a` and
//! `a.b`), `index`, `get`, `hasKey`, `pluck`, `dig`. A map used as a whole reads everything
//! below it: ranged over, the value of a `with`, printed, or given to any function that is not
//! one of those lookups nor one that only passes it on or tests it (`default`, `empty`,
//! `include`, …): `toYaml .Values.x` reads all of `x`. Maps are known by their address, taken
//! when the recording starts; the recorder holds each one so no address is reused meanwhile.
//!
//! With a trace ([`ValueReads::traced`], issue 36, item 7: a finding in a chart's output names
//! the values that printed it) each read is also kept with the action it served: the
//! outermost action running in the file being rendered (`{{ … }}`, the pipeline of an `if`,
//! `with` or `range`, a `{{ template }}` call), so the reads of an `include`d or `tpl`
//! template count for the line that called it. A variable keeps the reads of the pipeline
//! that last set it, and an action that uses it reads them again. Not traced: a value that
//! reaches the output through a function's hidden state (`set` on a dict, then read
//! elsewhere through another variable), and the text around an `if` (only its pipeline).
//! The trace is only built for a render made to explain a finding: a render with reads
//! recorded but no trace pays one branch per read.

use super::value::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;

/// A path in the values tree, one key per step.
pub type Path = Vec<String>;

/// The record: maps of the tree by address, and what was read of them. A read is recorded as
/// (map address, key), with no path built, and a repeated read allocates nothing: the
/// templates look values up far more often than [`ValueReads::unused`] asks (once, at the
/// end of a render), which builds the paths.
pub struct ValueReads {
    maps: rustc_hash::FxHashMap<usize, (Map, Path)>,
    keys: rustc_hash::FxHashMap<usize, rustc_hash::FxHashSet<String>>,
    whole: rustc_hash::FxHashSet<usize>,
    /// Paths read by something other than a template ([`ValueReads::path`]).
    paths: BTreeSet<Path>,
    /// The reads per action, when traced.
    trace: Option<Box<Trace>>,
}

/// One read: a map of the tree (by address) and the key looked up, or `None` for the map
/// used whole.
type Read = (usize, Option<Rc<str>>);

/// The reads of each action ([`ValueReads::traced`]).
#[derive(Default)]
struct Trace {
    /// The outermost action running: its file and byte offset.
    at: Option<(Rc<str>, u32)>,
    /// The reads per action, in the order first read.
    sites: BTreeMap<(Rc<str>, u32), Vec<Read>>,
    /// Each file's text, for the lines of its offsets.
    texts: BTreeMap<Rc<str>, Arc<str>>,
    /// The reads behind each variable's last value.
    vars: BTreeMap<Arc<str>, Vec<Read>>,
}

/// What a traced render read for one line of a template: the values paths, in the order
/// first read, each with `true` when a map was used whole (`toYaml .Values.resources`).
pub type LineReads = Vec<(Path, bool)>;

/// The record as paths: those read, and the maps used whole.
struct Paths {
    read: BTreeSet<Path>,
    whole: BTreeSet<Path>,
}

/// Functions that look up keys themselves (recorded by [`ValueReads::call`]) or only pass a
/// map on or test it: a map given to them is not read whole.
const NOT_WHOLE: &[&str] = &[
    "index",
    "get",
    "hasKey",
    "pluck",
    "dig",
    "set",
    "unset",
    "default",
    "empty",
    "not",
    "eq",
    "ne",
    "len",
    "kindIs",
    "kindOf",
    "typeOf",
    "typeIs",
    "typeIsLike",
    "coalesce",
    "ternary",
    "list",
    "dict",
    "required",
    "include",
    "tpl",
    "fail",
];

fn address(m: &Map) -> usize {
    std::rc::Rc::as_ptr(m) as *const () as usize
}

impl ValueReads {
    /// Starts a record over the tree `values` (every map below it, not inside lists).
    pub fn new(values: &Map) -> ValueReads {
        let mut maps = rustc_hash::FxHashMap::default();
        let mut stack = vec![(values.clone(), Path::new())];
        while let Some((m, path)) = stack.pop() {
            for (k, v) in m.borrow().iter() {
                if let Value::Map(child) = v {
                    let mut p = path.clone();
                    p.push(k.to_string());
                    stack.push((child.clone(), p));
                }
            }
            maps.insert(address(&m), (m, path));
        }
        ValueReads {
            maps,
            keys: rustc_hash::FxHashMap::default(),
            whole: rustc_hash::FxHashSet::default(),
            paths: BTreeSet::new(),
            trace: None,
        }
    }

    /// [`ValueReads::new`] with a trace of which action read what ([`ValueReads::lines`]).
    pub fn traced(values: &Map) -> ValueReads {
        let mut r = ValueReads::new(values);
        r.trace = Some(Box::default());
        r
    }

    /// Whether reads are traced per action.
    pub fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// An action of `file` (whose text is `text`) at byte `offset` begins; `true` when it is
    /// the outermost one running, whose reads it then collects until [`ValueReads::leave`].
    pub fn enter(&mut self, file: &Rc<str>, text: &Arc<str>, offset: u32) -> bool {
        let Some(t) = self.trace.as_mut() else {
            return false;
        };
        if t.at.is_some() {
            return false;
        }
        if !t.texts.contains_key(file) {
            t.texts.insert(file.clone(), text.clone());
        }
        t.at = Some((file.clone(), offset));
        t.sites.entry((file.clone(), offset)).or_default();
        true
    }

    /// The outermost action ends.
    pub fn leave(&mut self) {
        if let Some(t) = self.trace.as_mut() {
            t.at = None;
        }
    }

    /// How many reads the running action has made: a mark for [`ValueReads::assigned`].
    pub fn mark(&self) -> usize {
        self.trace
            .as_ref()
            .and_then(|t| t.sites.get(t.at.as_ref()?))
            .map_or(0, Vec::len)
    }

    /// Variable `name` was set by a pipeline whose reads are those since `mark`.
    pub fn assigned(&mut self, name: &Arc<str>, mark: usize) {
        let Some(t) = self.trace.as_mut() else { return };
        let reads =
            t.at.as_ref()
                .and_then(|at| t.sites.get(at))
                .map(|r| r[mark.min(r.len())..].to_vec())
                .unwrap_or_default();
        t.vars.insert(name.clone(), reads);
    }

    /// Variable `name` was used: the reads behind its value are read again.
    pub fn used(&mut self, name: &str) {
        let Some(t) = self.trace.as_mut() else { return };
        let Some(reads) = t.vars.get(name).cloned() else {
            return;
        };
        for r in reads {
            t.read(r);
        }
    }

    /// For each traced file and each line (1-based) with an action that read values: what
    /// it read, as paths.
    pub fn lines(&self) -> BTreeMap<String, BTreeMap<u32, LineReads>> {
        let mut out: BTreeMap<String, BTreeMap<u32, LineReads>> = BTreeMap::new();
        let Some(t) = &self.trace else { return out };
        for ((file, offset), reads) in &t.sites {
            let Some(text) = t.texts.get(file) else {
                continue;
            };
            let line = super::parse::line_col(text, *offset as usize).0;
            let at = out
                .entry(file.to_string())
                .or_default()
                .entry(line)
                .or_default();
            for (map, key) in reads {
                let Some((_, path)) = self.maps.get(map) else {
                    continue;
                };
                let mut p = path.clone();
                if let Some(k) = key {
                    p.push(k.to_string());
                }
                let read = (p, key.is_none());
                if !at.contains(&read) {
                    at.push(read);
                }
            }
        }
        out.retain(|_, lines| {
            lines.retain(|_, r| !r.is_empty());
            !lines.is_empty()
        });
        out
    }

    /// `key` looked up in `m`.
    pub fn key(&mut self, m: &Map, key: &str) {
        let at = address(m);
        if self.maps.contains_key(&at) {
            let keys = self.keys.entry(at).or_default();
            if !keys.contains(key) {
                keys.insert(key.to_string());
            }
            if let Some(t) = self.trace.as_mut() {
                t.read((at, Some(Rc::from(key))));
            }
        }
    }

    /// `v` used whole; a list's maps too.
    pub fn whole(&mut self, v: &Value) {
        match v {
            Value::Map(m) => {
                let at = address(m);
                if self.maps.contains_key(&at) {
                    self.whole.insert(at);
                    if let Some(t) = self.trace.as_mut() {
                        t.read((at, None));
                    }
                }
            }
            Value::List(l) => l.iter().for_each(|x| self.whole(x)),
            _ => {}
        }
    }

    /// A path read by something other than a template (a dependency's `condition`).
    pub fn path(&mut self, path: Path) {
        self.paths.insert(path);
    }

    /// The record as paths (in key order: the hash sets' order goes no further than the
    /// BTreeSets they are collected into).
    #[allow(clippy::iter_over_hash_type)]
    fn paths(&self) -> Paths {
        let mut read = self.paths.clone();
        for (at, keys) in &self.keys {
            if let Some((_, path)) = self.maps.get(at) {
                for k in keys {
                    let mut p = path.clone();
                    p.push(k.clone());
                    read.insert(p);
                }
            }
        }
        let whole = self
            .whole
            .iter()
            .filter_map(|at| self.maps.get(at).map(|(_, path)| path.clone()))
            .collect();
        Paths { read, whole }
    }

    /// The function `name` called with `args`.
    pub fn call(&mut self, name: &str, args: &[Value]) {
        let chain = |me: &mut ValueReads, mut cur: Value, keys: &[Value]| {
            for k in keys {
                let Value::Map(m) = &cur else { return };
                let key = super::fmt::s(k);
                me.key(m, &key);
                let next = m.borrow().get(&key).cloned().unwrap_or(Value::Nil);
                cur = next;
            }
        };
        match name {
            "index" if !args.is_empty() => chain(self, args[0].clone(), &args[1..]),
            "get" | "hasKey" if args.len() == 2 => chain(self, args[0].clone(), &args[1..]),
            "pluck" if !args.is_empty() => {
                for d in &args[1..] {
                    chain(self, d.clone(), &args[..1]);
                }
            }
            "dig" if args.len() >= 3 => {
                let n = args.len();
                chain(self, args[n - 1].clone(), &args[..n - 2]);
            }
            _ if NOT_WHOLE.contains(&name) => {}
            _ => args.iter().for_each(|a| self.whole(a)),
        }
    }

    /// The shallowest paths of `user` that no template read, in key order, each with the
    /// keys read beside it (for "did you mean").
    pub fn unused(&self, user: &Map) -> Vec<(Path, Vec<String>)> {
        let mut out = Vec::new();
        self.paths().unused_below(user, &mut Path::new(), &mut out);
        out
    }
}

impl Trace {
    /// `read` made by the running action, if any (a read outside every action, a
    /// dependency's condition, is no line's).
    fn read(&mut self, read: Read) {
        let Some(at) = &self.at else { return };
        let reads = self.sites.entry(at.clone()).or_default();
        if !reads.contains(&read) {
            reads.push(read);
        }
    }
}

impl Paths {
    /// Whether `path` was read: looked up itself or below (a subchart's templates read
    /// `.Values.port` from the map at `db`, never the key `db`), or below a map used whole.
    /// A subchart's copy of `global` counts for the top-level `global`.
    fn is_read(&self, path: &[String]) -> bool {
        let covered = |set: &BTreeSet<Path>, below: bool| {
            set.iter().any(|r| {
                let tail = r
                    .iter()
                    .position(|k| k == "global")
                    .filter(|&i| i > 0 && path.first().is_some_and(|f| f == "global"))
                    .map_or(&r[..], |i| &r[i..]);
                if below {
                    tail.starts_with(path)
                } else {
                    path.starts_with(tail)
                }
            })
        };
        covered(&self.read, true) || covered(&self.whole, false)
    }

    fn unused_below(&self, m: &Map, path: &mut Path, out: &mut Vec<(Path, Vec<String>)>) {
        if self.is_whole(path) {
            return;
        }
        for (k, v) in m.borrow().iter() {
            path.push(k.to_string());
            if !self.is_read(path) {
                let parent = &path[..path.len() - 1];
                let siblings = self
                    .read
                    .iter()
                    .filter(|r| r.len() == path.len() && r.starts_with(parent))
                    .filter_map(|r| r.last().cloned())
                    .collect();
                out.push((path.clone(), siblings));
            } else if let Value::Map(child) = v {
                self.unused_below(child, path, out);
            }
            path.pop();
        }
    }

    fn is_whole(&self, path: &[String]) -> bool {
        self.whole.iter().any(|w| path.starts_with(w))
    }
}
