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

use super::value::{Map, Value};
use std::collections::BTreeSet;

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
}

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
                    p.push(k.clone());
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
        }
    }

    /// `key` looked up in `m`.
    pub fn key(&mut self, m: &Map, key: &str) {
        let at = address(m);
        if self.maps.contains_key(&at) {
            let keys = self.keys.entry(at).or_default();
            if !keys.contains(key) {
                keys.insert(key.to_string());
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
            path.push(k.clone());
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
