//! Values as Helm v4.2.3 computes them, after `pkg/chart/common/util/coalesce.go` and
//! `pkg/chart/v2/util/dependencies.go`:
//! - dependency processing (`ProcessDependenciesWithMerge`): aliases, `tags`, `condition`,
//!   disabled subcharts removed, then `import-values` (child `exports` or explicit
//!   child/parent paths) merged under the parent's own values;
//! - coalescing (`CoalesceValues`): user values over chart defaults, subchart sections
//!   coalesced with the subchart's defaults, `global` copied down, `null` deleting a key;
//! - user values from `-f` files (deep-merged, later wins) and `--set` (`strvals`).

use super::chart::Chart;
use super::funcs::semver;
use super::template::value::{Map, Value, new_map};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(_))
}

fn copy_map(m: &Map) -> Map {
    Rc::new(RefCell::new(copy_table(&m.borrow())))
}

/// `copystructure.Copy` of a table as [`Value::deep_copy`] gives it, made cheaper: the
/// B-tree is cloned as it stands (collecting the entries again sorted and rebuilt it), then
/// each nested table (and list holding one) is replaced by its copy. A list with no table in
/// it is shared, not copied: lists are immutable and only tables are compared by identity,
/// so the copy cannot be told from the original. Copying chart defaults and user values
/// this way was a tenth of a prometheus render.
fn copy_table(m: &BTreeMap<String, Value>) -> BTreeMap<String, Value> {
    let mut c = m.clone();
    for v in c.values_mut() {
        if holds_table(v) {
            *v = copy_value(v);
        }
    }
    c
}

fn copy_value(v: &Value) -> Value {
    match v {
        Value::Map(m) => Value::map(copy_table(&m.borrow())),
        Value::List(l) if l.iter().any(holds_table) => {
            Value::list(l.iter().map(copy_value).collect())
        }
        other => other.clone(),
    }
}

/// Whether a copy of `v` must be made anew (it is or holds a table).
fn holds_table(v: &Value) -> bool {
    match v {
        Value::Map(_) => true,
        Value::List(l) => l.iter().any(holds_table),
        _ => false,
    }
}

/// `CoalesceValues(chrt, vals)`: a copy of `vals` coalesced with the chart's defaults.
pub fn coalesce_values(c: &Chart, vals: &Map) -> Map {
    let v = copy_map(vals);
    coalesce(c, &v, false);
    v
}

/// `MergeValues`: as coalesce, but `null` keeps the key.
pub fn merge_values(c: &Chart, vals: &Map) -> Map {
    let v = copy_map(vals);
    coalesce(c, &v, true);
    v
}

/// Helm passes a key prefix down these functions only to name keys in warnings, which
/// kiln does not print, so it is left out.
fn coalesce(c: &Chart, dest: &Map, merge: bool) {
    coalesce_chart_values(c, dest, merge);
    coalesce_deps(c, dest, merge);
}

fn coalesce_deps(c: &Chart, dest: &Map, merge: bool) {
    for sub in &c.subcharts {
        let existing = dest.borrow().get(&sub.name).cloned();
        let dv = match existing {
            None => {
                let m = new_map();
                dest.borrow_mut()
                    .insert(sub.name.clone(), Value::Map(m.clone()));
                m
            }
            Some(Value::Map(m)) => m,
            // Helm: "type mismatch on <sub>"; the subchart then sees no values.
            Some(_) => continue,
        };
        coalesce_globals(&dv, dest);
        coalesce(sub, &dv, merge);
    }
}

fn coalesce_globals(dest: &Map, src: &Map) {
    let dg = match dest.borrow().get("global").cloned() {
        None => new_map(),
        Some(Value::Map(m)) => m,
        Some(_) => return,
    };
    let sg = match src.borrow().get("global").cloned() {
        None => new_map(),
        Some(Value::Map(m)) => m,
        Some(_) => return,
    };
    let entries: Vec<(String, Value)> = sg
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, val) in entries {
        if let Value::Map(vm) = &val {
            let vv = copy_map(vm);
            let existing = dg.borrow().get(&key).cloned();
            match existing {
                None => {
                    dg.borrow_mut().insert(key, Value::Map(vv));
                }
                Some(Value::Map(destv)) => {
                    coalesce_tables(&vv, &destv, true);
                    dg.borrow_mut().insert(key, Value::Map(vv));
                }
                Some(_) => {}
            }
        } else if dg.borrow().get(&key).is_some_and(is_table) {
            // "key is table. Skipping"
        } else {
            dg.borrow_mut().insert(key, val);
        }
    }
    dest.borrow_mut().insert("global".into(), Value::Map(dg));
}

/// The chart's defaults into `v`. Each default is copied only where it goes in (none for a
/// key the user set to a scalar, or nulled), and under coalescing its nulls are dropped
/// while it is copied: the table Helm's `cleanNilValues` leaves of a copy, in one walk.
/// The defaults themselves are only read (`v` holds no table of theirs, only copies).
fn coalesce_chart_values(c: &Chart, v: &Map, merge: bool) {
    let Value::Map(defaults) = &c.values else {
        return;
    };
    for (key, val) in defaults.borrow().iter() {
        let cur = v.borrow().get(key).cloned();
        match cur {
            Some(Value::Nil) if !merge => {
                v.borrow_mut().remove(key);
            }
            Some(Value::Map(dest)) => {
                if let Value::Map(src) = val {
                    let is_child = c.subcharts.iter().any(|s| s.name == *key);
                    let merge = merge || is_child;
                    // Helm v4 cleans nils from chart defaults before coalescing.
                    let src = if merge {
                        copy_map(src)
                    } else {
                        copy_map_clean(src)
                    };
                    coalesce_tables(&dest, &src, merge);
                }
            }
            Some(_) => {}
            None => {
                let copy = match val {
                    Value::Nil if !merge => continue,
                    Value::Map(sub) if !merge => Value::Map(copy_map_clean(sub)),
                    other => copy_value(other),
                };
                v.borrow_mut().insert(key.clone(), copy);
            }
        }
    }
}

/// [`copy_map`] followed by Helm's `cleanNilValues`, in one walk: no null in the copy's
/// tables (lists are copied as they are, nulls in them kept, as the clean leaves them).
fn copy_map_clean(m: &Map) -> Map {
    let mut c = m.borrow().clone();
    c.retain(|_, v| !v.is_nil());
    for v in c.values_mut() {
        match v {
            Value::Map(sub) => *v = Value::Map(copy_map_clean(sub)),
            other if holds_table(other) => *other = copy_value(other),
            _ => {}
        }
    }
    Rc::new(RefCell::new(c))
}

/// `coalesceTablesFullKey`: `dst` wins; `src` fills in. (Helm's key prefix only names the
/// key in warnings, which are not printed, so it is not built.)
///
/// Without copying keys up front: `dst`'s nulls are put into `src` as Helm does, noting
/// the keys where that replaced a value (under coalescing, the null then deletes the key
/// from `dst`); then `src` is walked in place. `src` stays borrowed meanwhile, which is
/// sound because no table is its own descendant and `src` is never inside `dst` (every
/// caller passes a copy it has just made, or a section of one, as one side).
pub fn coalesce_tables(dst: &Map, src: &Map, merge: bool) {
    if std::rc::Rc::ptr_eq(dst, src) {
        return;
    }
    // Sorted, as `dst` is walked in order.
    let mut deleted: Vec<String> = Vec::new();
    {
        let d = dst.borrow();
        if d.values().any(Value::is_nil) {
            let mut s = src.borrow_mut();
            for (k, _) in d.iter().filter(|(_, v)| v.is_nil()) {
                let had = s
                    .insert(k.clone(), Value::Nil)
                    .is_some_and(|old| !old.is_nil());
                if had && !merge {
                    deleted.push(k.clone());
                }
            }
        }
    }
    let s = src.borrow();
    for (key, val) in s.iter() {
        let dv = dst.borrow().get(key).cloned();
        match dv {
            // Only a key null in `dst` before the walk can be null there now (a null
            // copied in below is not met again).
            Some(Value::Nil) if deleted.binary_search(key).is_ok() => {
                dst.borrow_mut().remove(key);
            }
            None => {
                dst.borrow_mut().insert(key.clone(), val.clone());
            }
            Some(Value::Map(dm)) => {
                if let Value::Map(sm) = val {
                    coalesce_tables(&dm, sm, merge);
                }
            }
            Some(_) => {}
        }
    }
}

/// `MergeTables(dst, src)`.
fn merge_tables(dst: &Map, src: &Map) {
    coalesce_tables(dst, src, true);
}

/// `Values.Table(path)`: the map at a dotted path.
pub fn table(v: &Map, path: &str) -> Option<Map> {
    let mut cur = v.clone();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let next = cur.borrow().get(part).cloned();
        match next {
            Some(Value::Map(m)) => cur = m,
            _ => return None,
        }
    }
    Some(cur)
}

/// `Values.PathValue(path)`: a non-table value at a dotted path.
fn path_value(v: &Map, path: &str) -> Option<Value> {
    let parts: Vec<&str> = path.split('.').collect();
    let (last, head) = parts.split_last()?;
    let t = if head.is_empty() {
        v.clone()
    } else {
        table(v, &head.join("."))?
    };
    let val = t.borrow().get(*last).cloned()?;
    if is_table(&val) { None } else { Some(val) }
}

/// `ProcessDependenciesWithMerge`: decides which subcharts are enabled and applies
/// `import-values`. Changes `c` (its subcharts and values), as Helm changes the chart.
pub fn process_dependencies(c: &mut Chart, user: &Map) {
    process_enabled(c, user, "");
    process_import_values(c);
}

fn compatible(constraint: &str, version: &str) -> bool {
    match semver::Version::parse(version) {
        Ok(v) => semver::satisfies(constraint, &v).unwrap_or(false),
        Err(_) => false,
    }
}

fn process_enabled(c: &mut Chart, v: &Map, path: &str) {
    if c.deps.is_empty() {
        return;
    }
    let existing = std::mem::take(&mut c.subcharts);
    let mut chosen: Vec<Chart> = existing
        .iter()
        .filter(|e| {
            !c.deps
                .iter()
                .any(|r| e.name == r.name && compatible(&r.version, &e.version))
        })
        .cloned()
        .collect();
    for r in &mut c.deps {
        if let Some(found) = existing
            .iter()
            .find(|e| e.name == r.name && compatible(&r.version, &e.version))
        {
            let mut copy = found.clone();
            if !r.alias.is_empty() {
                copy.name = r.alias.clone();
            }
            chosen.push(copy);
        }
        if !r.alias.is_empty() {
            r.name = r.alias.clone();
        }
    }
    c.subcharts = chosen;
    let cvals = coalesce_values(c, v);
    // Tags, then conditions (a condition that resolves overrides the tags).
    let tags = table(&cvals, "tags");
    let mut enabled: Vec<bool> = vec![true; c.deps.len()];
    for (i, r) in c.deps.iter().enumerate() {
        if let Some(tags) = &tags {
            let (mut has_true, mut has_false) = (false, false);
            for k in &r.tags {
                match tags.borrow().get(k) {
                    Some(Value::Bool(true)) => has_true = true,
                    Some(Value::Bool(false)) => has_false = true,
                    _ => {}
                }
            }
            if !has_true && has_false {
                enabled[i] = false;
            }
        }
        for cond in r.condition.trim().split(',') {
            if cond.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(&cvals, &format!("{path}{cond}")) {
                enabled[i] = b;
                break;
            }
        }
    }
    let removed: Vec<String> = c
        .deps
        .iter()
        .zip(&enabled)
        .filter(|(_, e)| !**e)
        .map(|(r, _)| r.name.clone())
        .collect();
    c.subcharts.retain(|s| !removed.contains(&s.name));
    let mut i = 0;
    c.deps.retain(|_| {
        i += 1;
        enabled[i - 1]
    });
    for sub in &mut c.subcharts {
        let sub_path = format!("{path}{}.", sub.name);
        process_enabled(sub, &cvals, &sub_path);
    }
}

fn process_import_values(c: &mut Chart) {
    for sub in &mut c.subcharts {
        process_import_values(sub);
    }
    if c.deps.is_empty() {
        return;
    }
    let cvals = merge_values(c, &new_map());
    let b = new_map();
    for r in &c.deps {
        for iv in &r.import_values {
            match iv {
                Value::Map(m) => {
                    let g = |k: &str| {
                        m.borrow()
                            .get(k)
                            .map(super::funcs::conv::strval)
                            .unwrap_or_default()
                    };
                    let (child, parent) = (g("child"), g("parent"));
                    let Some(vv) = table(&cvals, &format!("{}.{child}", r.name)) else {
                        continue;
                    };
                    merge_tables(&b, &path_to_map(&parent, &copy_map(&vv)));
                }
                Value::Str(s) => {
                    let Some(vm) = table(&cvals, &format!("{}.exports.{s}", r.name)) else {
                        continue;
                    };
                    merge_tables(&b, &copy_map(&vm));
                }
                _ => {}
            }
        }
    }
    // `cvals` is this function's own copy (`merge_values` copies every table it takes in,
    // and what went into `b` was copied out of it), so it is merged into as it is rather
    // than copied once more.
    merge_tables(&cvals, &b);
    c.values = Value::Map(cvals);
}

fn path_to_map(path: &str, data: &Map) -> Map {
    if path == "." {
        return data.clone();
    }
    let mut cur = data.clone();
    for part in path.split('.').filter(|p| !p.is_empty()).rev() {
        let m = new_map();
        m.borrow_mut().insert(part.to_string(), Value::Map(cur));
        cur = m;
    }
    cur
}

/// Helm's `mergeMaps` for `-f` files: maps merge deeply, anything else replaces.
pub fn merge_user(dst: &Map, src: &Map) {
    let entries: Vec<(String, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in entries {
        let cur = dst.borrow().get(&k).cloned();
        match (&v, cur) {
            (Value::Map(sm), Some(Value::Map(dm))) => merge_user(&dm, sm),
            _ => {
                dst.borrow_mut().insert(k, v);
            }
        }
    }
}

/// Why a values file cannot be read: its 1-based line and the message.
#[derive(Debug, Clone)]
pub struct ValuesError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ValuesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Helm's `loader.LoadValues` (pkg/chart/v2/loader/load.go, v4.2.3), for a chart's
/// values.yaml and for `-f` files alike (pkg/cli/values/options.go calls it too): the text is
/// cut into documents as apimachinery's `YAMLReader` cuts it (a line starting with `---`,
/// followed by nothing but spaces or a comment), each document is read as a map, and the
/// maps are merged in order with `MergeMaps` (maps deeply, anything else replaced). A document
/// of only comments adds nothing; one that is not a map is an error, as is a `---` line with
/// text after it. Lines in errors count from the top of the file, not of the document.
pub fn load_values(text: &str) -> Result<Map, ValuesError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let out = new_map();
    let mut doc_start = 0;
    let mut doc_line = 1;
    let mut line_no = 1;
    let mut pos = 0;
    let read = |doc: &str, first_line: usize| -> Result<(), ValuesError> {
        if doc.is_empty() {
            return Ok(());
        }
        let v = super::yaml::parse_one(doc).map_err(|e| {
            let line = e.line + first_line - 1;
            ValuesError {
                line,
                message: format!("yaml: line {line}: {}", e.message),
            }
        })?;
        match v {
            // The first map is taken as it is: merging it into the empty table would only
            // copy its entries (it is read here, so nothing else holds it).
            Value::Map(m) if out.borrow().is_empty() => {
                std::mem::swap(&mut *out.borrow_mut(), &mut *m.borrow_mut());
            }
            Value::Map(m) => merge_user(&out, &m),
            Value::Nil => {}
            other => {
                let kind = match other {
                    Value::List(_) => "array",
                    Value::Bool(_) => "bool",
                    Value::Int(_) | Value::Float(_) => "number",
                    _ => "string",
                };
                return Err(ValuesError {
                    line: first_line,
                    message: format!(
                        "cannot unmarshal yaml document: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
                    ),
                });
            }
        }
        Ok(())
    };
    // Most files have no `---` line: then the whole text is one document, and the lines
    // need not be walked.
    if !text.starts_with("---") && !text.contains("\n---") {
        pos = text.len();
    }
    while pos < text.len() {
        let end = (super::yaml::find_newline(text.as_bytes(), pos) + 1).min(text.len());
        let line = &text[pos..end];
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(ValuesError {
                    line: line_no,
                    message: format!(
                        "error reading yaml document: invalid Yaml document separator: {trimmed}"
                    ),
                });
            }
            // A separator ends a document that has text; before any, it is the document's
            // own first line (the reader keeps it).
            if pos > doc_start {
                read(&text[doc_start..pos], doc_line)?;
                doc_start = end;
                doc_line = line_no + 1;
            }
        }
        pos = end;
        line_no += 1;
    }
    read(&text[doc_start..], doc_line)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// strvals: `--set`, `--set-string`, `--set-json`, `--set-file`, `--set-literal`.
//
// A port of Helm v4.2.3's `pkg/strvals/parser.go` and `pkg/strvals/literal_parser.go`
// (helm/helm), kept function for function so that its corner cases stay Helm's: `{a,b}`
// lists (`a={}` is `[""]`), `\` escaping any character, `a[0]` with no value giving `[]`,
// an unterminated index (`a[0`) ending the line without an error (Helm wraps `io.EOF`),
// indices capped at `MaxIndex` (65536) *before* a list is allocated, names nested at most
// `MaxNestedNameLevel` (30) deep, and Go's panics on a type clash (`a=1,a.b=2`) reported
// as Helm reports them ("unable to parse key: interface conversion: …").
// The order the flags are applied in is `pkg/cli/values/options.go` `MergeValues`'s.
// ---------------------------------------------------------------------------------------

/// `MaxIndex` in parser.go: the largest list index a line may set.
pub const MAX_INDEX: i64 = 65536;
/// `MaxNestedNameLevel` in parser.go.
pub const MAX_NESTED_NAME_LEVEL: usize = 30;

/// Which flag a strvals line comes from, which decides how its values are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetKind {
    /// `--set`: typed (`true`, `null`, integers) by `typedVal`.
    Set,
    /// `--set-string`: every value a string.
    String,
    /// `--set-json`: every value a JSON document.
    Json,
    /// `--set-file`: every value the text of the file it names.
    File,
    /// `--set-literal`: one `key=value`, the value verbatim up to the end.
    Literal,
}

impl SetKind {
    pub fn flag(self) -> &'static str {
        match self {
            SetKind::Set => "--set",
            SetKind::String => "--set-string",
            SetKind::Json => "--set-json",
            SetKind::File => "--set-file",
            SetKind::Literal => "--set-literal",
        }
    }
}

/// The `--set…` flags of one command line, each in the order given.
#[derive(Debug, Clone, Default)]
pub struct SetFlags {
    pub set: Vec<String>,
    pub string: Vec<String>,
    pub json: Vec<String>,
    pub file: Vec<String>,
    pub literal: Vec<String>,
}

/// Applies the flags to `dst` (the `-f` files already merged in) as Helm's `MergeValues`
/// does: `--set-json`, then `--set`, `--set-string`, `--set-file`, `--set-literal`, each
/// parsed *into* the values so far (a later `a[1]=x` keeps an earlier `a[0]`). `read`
/// gives the text of a `--set-file` path. The error names the flag and Helm's message.
pub fn apply_set_flags(
    dst: &Map,
    flags: &SetFlags,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(), (SetKind, String)> {
    for line in &flags.json {
        let trimmed = line.trim();
        if trimmed.starts_with('{') {
            // A whole JSON object is merged as a values file would be (`loader.MergeMaps`).
            match serde_json::from_str::<serde_json::Value>(trimmed) {
                Ok(v @ serde_json::Value::Object(_)) => merge_user(dst, &from_json_map(&v)),
                _ => {
                    return Err((
                        SetKind::Json,
                        format!("failed parsing --set-json data JSON: {line}"),
                    ));
                }
            }
        } else if parse_into(line, dst, SetKind::Json, read).is_err() {
            // Helm drops the cause here and names the line.
            return Err((
                SetKind::Json,
                format!("failed parsing --set-json data {line}"),
            ));
        }
    }
    for (kind, lines) in [
        (SetKind::Set, &flags.set),
        (SetKind::String, &flags.string),
        (SetKind::File, &flags.file),
        (SetKind::Literal, &flags.literal),
    ] {
        for line in lines {
            parse_into(line, dst, kind, read).map_err(|m| (kind, m))?;
        }
    }
    Ok(())
}

/// `--set a.b=c,d[0]=e` into `dst`, as `strvals.ParseInto`.
pub fn apply_set(dst: &Map, expr: &str) -> Result<(), String> {
    parse_into(expr, dst, SetKind::Set, &|_| Err("no files".into()))
}

/// `ParseInto`, `ParseIntoString`, `ParseJSON`, `ParseIntoFile`, `ParseLiteralInto`.
pub fn parse_into(
    line: &str,
    dst: &Map,
    kind: SetKind,
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(), String> {
    let mut p = Parser {
        sc: line.chars().collect(),
        pos: 0,
        kind,
        read,
    };
    loop {
        let r = if kind == SetKind::Literal {
            p.literal_key(dst, 0)
        } else {
            p.key(dst, 0)
        };
        match r {
            Ok(()) => continue,
            Err(E::Eof) => return Ok(()),
            Err(E::Msg(m)) => return Err(m),
        }
    }
}

/// A parser error: `io.EOF` (also when wrapped, as `errors.Is` sees it: the line ends
/// without an error) or a message.
enum E {
    Eof,
    Msg(String),
}

fn msg(m: String) -> E {
    E::Msg(m)
}

/// What `valList` found: a list, the end of the line, or no `{`.
enum ValList {
    List(Vec<Value>),
    Eof,
    NotList,
}

struct Parser<'a> {
    sc: Vec<char>,
    pos: usize,
    kind: SetKind,
    read: &'a dyn Fn(&str) -> Result<String, String>,
}

/// Go's type name of a value, for the text of a failed type assertion.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int64",
        Value::Float(_) => "float64",
        Value::Str(_) => "string",
        Value::List(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
        Value::Object(_) => "interface {}",
    }
}

/// The panic of `x.(T)` on a value of another type, as `key`'s `recover` reports it.
fn conversion_panic(v: &Value, want: &str) -> E {
    let got = go_type(v);
    let tail = if got == "nil" {
        format!("interface {{}} is nil, not {want}")
    } else {
        format!("interface {{}} is {got}, not {want}")
    };
    msg(format!("unable to parse key: interface conversion: {tail}"))
}

/// `%q` of a `[]rune`: each rune quoted, space-separated, in brackets.
fn quote_runes(s: &str) -> String {
    let runes: Vec<String> = s
        .chars()
        .map(|c| {
            let q = super::funcs::conv::go_quote(&c.to_string());
            let inner = &q[1..q.len() - 1];
            match c {
                '"' => "'\"'".to_string(),
                '\'' => "'\\''".to_string(),
                _ => format!("'{inner}'"),
            }
        })
        .collect();
    format!("[{}]", runes.join(" "))
}

/// `strconv.Atoi`'s result and error text.
fn atoi(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!(
            "strconv.Atoi: parsing {}: {why}",
            super::funcs::conv::go_quote(s)
        )
    })
}

/// `set`: an empty key is not set.
fn set(data: &Map, key: &str, val: Value) {
    if !key.is_empty() {
        data.borrow_mut().insert(key.to_string(), val);
    }
}

/// `setIndex`: the index is checked against `MAX_INDEX` before the list grows.
fn set_index(mut list: Vec<Value>, index: i64, val: Value) -> (Vec<Value>, Result<(), E>) {
    if index < 0 {
        return (
            list,
            Err(msg(format!("negative {index} index not allowed"))),
        );
    }
    if index > MAX_INDEX {
        return (
            list,
            Err(msg(format!(
                "index of {index} is greater than maximum supported index of {MAX_INDEX}"
            ))),
        );
    }
    let i = index as usize;
    if list.len() <= i {
        list.resize(i + 1, Value::Nil);
    }
    list[i] = val;
    (list, Ok(()))
}

/// `typedVal`: `true`/`false`/`null` in any case, `0`, integers not starting with `0`.
fn typed_val(v: &str, as_string: bool) -> Value {
    if as_string {
        return Value::str(v);
    }
    if equal_fold(v, "true") {
        return Value::Bool(true);
    }
    if equal_fold(v, "false") {
        return Value::Bool(false);
    }
    if equal_fold(v, "null") {
        return Value::Nil;
    }
    if v == "0" {
        return Value::Int(0);
    }
    if !v.is_empty()
        && !v.starts_with('0')
        && let Ok(n) = v.parse::<i64>()
    {
        return Value::Int(n);
    }
    Value::str(v)
}

/// Go's `strings.EqualFold` against an ASCII lower-case word: Unicode simple folding
/// adds only `ſ` (U+017F) for `s` and `K` (U+212A) for `k` to the ASCII pairs.
fn equal_fold(v: &str, word: &str) -> bool {
    let mut a = v.chars();
    for w in word.chars() {
        match a.next() {
            Some(c) if c.to_ascii_lowercase() == w => {}
            Some('\u{17f}') if w == 's' => {}
            Some('\u{212a}') if w == 'k' => {}
            _ => return false,
        }
    }
    a.next().is_none()
}

impl Parser<'_> {
    fn read_rune(&mut self) -> Option<char> {
        let c = self.sc.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    /// `runesUntil`: the runes up to a stop rune (consumed), `\` taking the next rune
    /// as it is; `None` at the end of the line.
    fn until(&mut self, stop: &[char]) -> (String, Option<char>) {
        let mut v = String::new();
        loop {
            match self.read_rune() {
                None => return (v, None),
                Some(c) if stop.contains(&c) => return (v, Some(c)),
                Some('\\') => match self.read_rune() {
                    None => return (v, None),
                    Some(n) => v.push(n),
                },
                Some(c) => v.push(c),
            }
        }
    }

    /// `runesUntilLiteral`: as `until`, without escapes.
    fn until_literal(&mut self, stop: &[char]) -> (String, Option<char>) {
        let mut v = String::new();
        loop {
            match self.read_rune() {
                None => return (v, None),
                Some(c) if stop.contains(&c) => return (v, Some(c)),
                Some(c) => v.push(c),
            }
        }
    }

    /// The parser's `reader`: typed, string, or the named file's text.
    fn reader(&self, rs: &str) -> Result<Value, E> {
        match self.kind {
            SetKind::Set => Ok(typed_val(rs, false)),
            SetKind::File => (self.read)(rs).map(Value::str).map_err(msg),
            _ => Ok(typed_val(rs, true)),
        }
    }

    fn key(&mut self, data: &Map, level: usize) -> Result<(), E> {
        let (k, last) = self.until(&['=', '[', ',', '.']);
        match last {
            None => {
                if k.is_empty() {
                    Err(E::Eof)
                } else {
                    Err(msg(format!(
                        "key {} has no value",
                        super::funcs::conv::go_quote(&k)
                    )))
                }
            }
            Some('[') => self.bracket(data, &k, level),
            Some('=') => {
                if self.kind == SetKind::Json {
                    let v = if self.empty_val() {
                        Value::Nil
                    } else {
                        self.json_value()?
                    };
                    set(data, &k, v);
                    self.empty_val();
                    return Ok(());
                }
                match self.val_list()? {
                    ValList::List(vl) => {
                        set(data, &k, Value::list(vl));
                        Ok(())
                    }
                    ValList::Eof => {
                        set(data, &k, Value::str(""));
                        Err(E::Eof)
                    }
                    ValList::NotList => {
                        let (rs, _) = self.until(&[',']);
                        let (v, e) = match self.reader(&rs) {
                            Ok(v) => (v, Ok(())),
                            Err(e) => (Value::Nil, Err(e)),
                        };
                        set(data, &k, v);
                        e
                    }
                }
            }
            Some(',') => {
                set(data, &k, Value::str(""));
                Err(msg(format!(
                    "key {} has no value (cannot end with ,)",
                    super::funcs::conv::go_quote(&k)
                )))
            }
            Some(_) => self.dot(data, &k, level),
        }
    }

    /// The map under `k` (changed in place, as a Go map is) or a new one.
    fn inner_map(&self, data: &Map, k: &str) -> Result<Map, E> {
        match data.borrow().get(k) {
            None => Ok(new_map()),
            Some(Value::Map(m)) => Ok(m.clone()),
            Some(other) => Err(conversion_panic(other, "map[string]interface {}")),
        }
    }

    /// `keyIndex`: the runes up to `]`, as `strconv.Atoi` reads them.
    fn key_index(&mut self) -> Result<i64, E> {
        let (v, last) = if self.kind == SetKind::Literal {
            self.until_literal(&[']'])
        } else {
            self.until(&[']'])
        };
        if last.is_none() {
            return Err(E::Eof);
        }
        atoi(&v).map_err(msg)
    }

    /// `listItem`: what follows `[i]`. Returns the list even on an error, as Go does: an
    /// error wrapping `io.EOF` ends the line successfully with the list set.
    fn list_item(
        &mut self,
        mut list: Vec<Value>,
        i: i64,
        level: usize,
    ) -> (Vec<Value>, Result<(), E>) {
        if i < 0 {
            return (list, Err(msg(format!("negative {i} index not allowed"))));
        }
        let literal = self.kind == SetKind::Literal;
        let (k, last) = if literal {
            self.until_literal(&['[', '.', '='])
        } else {
            self.until(&['[', '.', '='])
        };
        if !k.is_empty() {
            return (
                list,
                Err(msg(format!(
                    "unexpected data at end of array index: {}",
                    quote_runes(&k)
                ))),
            );
        }
        match last {
            None => (list, Err(E::Eof)),
            Some('=') => {
                if literal {
                    let (v, _) = self.until_literal(&[]);
                    return set_index(list, i, Value::str(v));
                }
                if self.kind == SetKind::Json {
                    if self.empty_val() {
                        return set_index(list, i, Value::Nil);
                    }
                    let v = match self.json_value() {
                        Ok(v) => v,
                        Err(e) => return (list, Err(e)),
                    };
                    let (list, r) = set_index(list, i, v);
                    if r.is_err() {
                        return (list, r);
                    }
                    self.empty_val();
                    return (list, Ok(()));
                }
                match self.val_list() {
                    Ok(ValList::List(vl)) => set_index(list, i, Value::list(vl)),
                    Ok(ValList::Eof) => set_index(list, i, Value::str("")),
                    Ok(ValList::NotList) => {
                        let (rs, _) = self.until(&[',']);
                        match self.reader(&rs) {
                            Ok(v) => set_index(list, i, v),
                            Err(e) => (list, Err(e)),
                        }
                    }
                    Err(e) => (list, Err(e)),
                }
            }
            Some('[') => {
                let next = match self.key_index() {
                    Ok(n) => n,
                    Err(E::Eof) => return (list, Err(E::Eof)),
                    Err(E::Msg(m)) => {
                        return (list, Err(msg(format!("error parsing index: {m}"))));
                    }
                };
                let mut current = Vec::new();
                if (list.len() as i64) > i {
                    match &list[i as usize] {
                        Value::Nil => {}
                        Value::List(l) => current = l.to_vec(),
                        other => {
                            let e = conversion_panic(other, "[]interface {}");
                            return (list, Err(e));
                        }
                    }
                }
                let (inner, r) = self.list_item(current, next, level);
                if r.is_err() {
                    return (list, r);
                }
                set_index(list, i, Value::list(inner))
            }
            Some(_) => {
                // A nested object; an element that is not a map is replaced by one.
                let mut inner = new_map();
                if (list.len() as i64) > i {
                    match &list[i as usize] {
                        Value::Map(m) => inner = m.clone(),
                        _ => list[i as usize] = Value::Map(inner.clone()),
                    }
                }
                let r = self.next_key(&inner, level);
                if r.is_err() {
                    return (list, r);
                }
                set_index(list, i, Value::Map(inner))
            }
        }
    }

    /// `emptyVal`: skips spaces; true at a `,` (consumed) or the end, false before
    /// anything else (not consumed).
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read_rune() {
                None | Some(',') => return true,
                Some(c) if c.is_whitespace() => {}
                Some(_) => {
                    self.pos -= 1;
                    return false;
                }
            }
        }
    }

    /// One JSON value from the rest of the line, as `json.Decoder.Decode` reads it: the
    /// value ends where its grammar ends, whatever follows (`1x` is `1`, then key `x`).
    fn json_value(&mut self) -> Result<Value, E> {
        let rest: String = self.sc[self.pos..].iter().collect();
        let bad = || msg("invalid JSON value".to_string());
        let end = json_end(rest.as_bytes()).ok_or_else(bad)?;
        let v: serde_json::Value = serde_json::from_str(&rest[..end]).map_err(|_| bad())?;
        self.pos += rest[..end].chars().count();
        Ok(Value::from_json(&v))
    }

    /// `valList`: `{a,b}` read with the parser's reader; `NotList` (nothing consumed)
    /// when the value does not start with `{`.
    fn val_list(&mut self) -> Result<ValList, E> {
        match self.read_rune() {
            None => return Ok(ValList::Eof),
            Some('{') => {}
            Some(_) => {
                self.pos -= 1;
                return Ok(ValList::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            let (rs, last) = self.until(&[',', '}']);
            match last {
                None => return Err(msg("list must terminate with '}'".into())),
                Some('}') => {
                    if let Some(c) = self.read_rune()
                        && c != ','
                    {
                        self.pos -= 1;
                    }
                    list.push(self.reader(&rs)?);
                    return Ok(ValList::List(list));
                }
                Some(_) => list.push(self.reader(&rs)?),
            }
        }
    }

    /// literal_parser.go's `key`: no `,` separator and no escapes; the value is the rest
    /// of the line.
    fn literal_key(&mut self, data: &Map, level: usize) -> Result<(), E> {
        let (k, last) = self.until_literal(&['=', '[', '.']);
        match last {
            None => {
                if k.is_empty() {
                    Err(E::Eof)
                } else {
                    Err(msg(format!(
                        "key {} has no value",
                        super::funcs::conv::go_quote(&k)
                    )))
                }
            }
            Some('=') => {
                let (v, _) = self.until_literal(&[]);
                set(data, &k, Value::str(v));
                Ok(())
            }
            Some('.') => self.dot(data, &k, level),
            Some(_) => self.bracket(data, &k, level),
        }
    }

    /// The next key: parser.go's or literal_parser.go's.
    fn next_key(&mut self, data: &Map, level: usize) -> Result<(), E> {
        if self.kind == SetKind::Literal {
            self.literal_key(data, level)
        } else {
            self.key(data, level)
        }
    }

    /// `key`'s `.` case: a nested map, at most `MAX_NESTED_NAME_LEVEL` deep.
    fn dot(&mut self, data: &Map, k: &str, level: usize) -> Result<(), E> {
        let level = level + 1;
        if level > MAX_NESTED_NAME_LEVEL {
            return Err(msg(format!(
                "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
            )));
        }
        let inner = self.inner_map(data, k)?;
        let e = self.next_key(&inner, level);
        let empty = inner.borrow().is_empty();
        if e.is_ok() && empty {
            return Err(msg(format!(
                "key map {} has no value",
                super::funcs::conv::go_quote(k)
            )));
        }
        if !empty {
            set(data, k, Value::Map(inner));
        }
        e
    }

    /// `key`'s `[` case: an index into the list under `k`.
    fn bracket(&mut self, data: &Map, k: &str, level: usize) -> Result<(), E> {
        let i = self.key_index().map_err(|e| match e {
            E::Eof => E::Eof,
            E::Msg(m) => msg(format!("error parsing index: {m}")),
        })?;
        let existing = data.borrow().get(k).cloned();
        let list = match existing {
            None => Vec::new(),
            Some(Value::List(l)) => l.to_vec(),
            Some(other) => return Err(conversion_panic(&other, "[]interface {}")),
        };
        let (list, r) = self.list_item(list, i, level);
        set(data, k, Value::list(list));
        r
    }
}

/// The byte length of the JSON value at the start of `b` (after its leading
/// whitespace), by the grammar alone; `None` when none starts there.
fn json_end(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
    }
    match *b.get(i)? {
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut in_str = false;
            while i < b.len() {
                let c = b[i];
                if in_str {
                    if c == b'\\' {
                        i += 1;
                    } else if c == b'"' {
                        in_str = false;
                    }
                } else {
                    match c {
                        b'"' => in_str = true,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                return Some(i + 1);
                            }
                        }
                        _ => {}
                    }
                }
                i += 1;
            }
            None
        }
        b'"' => {
            i += 1;
            while i < b.len() {
                match b[i] {
                    b'\\' => i += 1,
                    b'"' => return Some(i + 1),
                    _ => {}
                }
                i += 1;
            }
            None
        }
        b't' | b'f' | b'n' => ["true", "false", "null"]
            .iter()
            .find(|w| b[i..].starts_with(w.as_bytes()))
            .map(|w| i + w.len()),
        _ => {
            // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
            let digits = |mut j: usize| {
                let s = j;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                (j > s).then_some(j)
            };
            let mut j = i;
            if b.get(j) == Some(&b'-') {
                j += 1;
            }
            j = match b.get(j)? {
                b'0' => j + 1,
                b'1'..=b'9' => digits(j)?,
                _ => return None,
            };
            if b.get(j) == Some(&b'.') {
                j = digits(j + 1)?;
            }
            if matches!(b.get(j), Some(b'e' | b'E')) {
                let mut k = j + 1;
                if matches!(b.get(k), Some(b'+' | b'-')) {
                    k += 1;
                }
                j = digits(k)?;
            }
            Some(j)
        }
    }
}

/// A values map from JSON (the kiln spec's `values:`), numbers as float64 like YAML's.
pub fn from_json_map(v: &serde_json::Value) -> Map {
    match Value::from_json(v) {
        Value::Map(m) => m,
        _ => new_map(),
    }
}

/// An empty values map.
pub fn empty() -> Map {
    into_map(Value::map(BTreeMap::new()))
}

fn into_map(v: Value) -> Map {
    match v {
        Value::Map(m) => m,
        _ => new_map(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(text: &str) -> Map {
        into_map(crate::yaml::parse_one(text).unwrap())
    }

    /// A copied table equals its original and shares no table with it (at any depth, in
    /// lists too), as `Value::deep_copy` gives it; tables in the copy can change alone.
    #[test]
    fn copied_tables_share_no_table_with_their_original() {
        let orig =
            m("a:\n  b:\n    c: 1\n  l:\n  - x: 1\n  - [ {y: 2} ]\n  s: [1, two]\nd: text\n");
        let copy = copy_map(&orig);
        assert!(Value::Map(copy.clone()).deep_eq(&Value::Map(orig.clone())));
        assert!(Value::Map(copy.clone()).deep_eq(&Value::Map(orig.clone()).deep_copy()));
        fn tables(v: &Value, out: &mut Vec<*const ()>) {
            match v {
                Value::Map(m) => {
                    out.push(Rc::as_ptr(m) as *const ());
                    m.borrow().values().for_each(|v| tables(v, out));
                }
                Value::List(l) => l.iter().for_each(|v| tables(v, out)),
                _ => {}
            }
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        tables(&Value::Map(orig.clone()), &mut a);
        tables(&Value::Map(copy.clone()), &mut b);
        assert_eq!(a.len(), 5);
        assert_eq!(a.len(), b.len());
        assert!(a.iter().all(|p| !b.contains(p)));
        let Some(Value::Map(inner)) = copy.borrow().get("a").cloned() else {
            panic!("a")
        };
        inner.borrow_mut().insert("new".into(), Value::Int(1));
        assert!(!Value::Map(copy).deep_eq(&Value::Map(orig)));
    }

    fn parsed(kind: SetKind, line: &str) -> Result<String, String> {
        let d = new_map();
        parse_into(line, &d, kind, &|p| Ok(format!("<{p}>")))?;
        Ok(crate::yaml::to_json(&Value::Map(d), false, false))
    }

    /// Each expectation is what real Helm v4.2.3's strvals gives (helm-python-sdk).
    fn check(kind: SetKind, cases: &[(&str, Result<&str, &str>)]) {
        for (line, want) in cases {
            let got = parsed(kind, line);
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                *want,
                "{kind:?} {line:?}"
            );
        }
    }

    /// Each expectation is what real Helm v4.2.3's `Chart.load` gives for the text as a
    /// chart's values.yaml (helm-python-sdk; the errors' Helm wording follows "cannot load
    /// values.yaml: ").
    #[test]
    fn values_files_merge_their_documents_as_load_values_does() {
        let ok = |text: &str| {
            let v = load_values(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            crate::yaml::to_json(&Value::Map(v), false, false)
        };
        let cases = [
            (
                "a: 1\nb: {x: 1, z: [1]}\n---\nb: {y: 2, z: [2]}\nc: 3\n",
                r#"{"a":1,"b":{"true":2,"x":1,"z":[2]},"c":3}"#,
            ),
            ("a: 1\n--- # two\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("a: 1\n---\n# nothing\n---\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("---\na: 1\n...\n", r#"{"a":1}"#),
            ("a: 1\n ---\nb: 2\n", r#"{"a":"1 ---","b":2}"#),
            ("a: 1\n...\n---\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("a: 1\n---\t\r\nb: 2\n", r#"{"a":1,"b":2}"#),
            ("---\n---\n", "{}"),
            ("", "{}"),
            // A later null is kept as null here; coalescing deletes the key afterwards.
            ("a: {x: 1}\n---\na: null\n", r#"{"a":null}"#),
        ];
        for (text, want) in cases {
            assert_eq!(ok(text), want, "{text:?}");
        }
        let bad = |text: &str| load_values(text).map(|_| ()).unwrap_err();
        let e = bad("a: 1\n--- b: 2\nc: 3\n");
        assert_eq!(e.line, 2);
        assert_eq!(
            e.message,
            "error reading yaml document: invalid Yaml document separator: b: 2"
        );
        let e = bad("a: 1\n---\n- 1\n");
        assert_eq!(e.line, 3);
        assert!(
            e.message
                .ends_with("cannot unmarshal array into Go value of type map[string]interface {}"),
            "{}",
            e.message
        );
        assert!(
            bad("a: 1\n---\nfoo\n")
                .message
                .contains("cannot unmarshal string")
        );
        // A YAML error in a later document is placed on its line in the file.
        let e = bad("a: 1\n---\nb: 2\nc: [\n");
        assert!(e.line >= 4, "{e:?}");
        assert!(
            e.message.starts_with(&format!("yaml: line {}: ", e.line)),
            "{e:?}"
        );
    }

    #[test]
    fn set_parses_like_strvals() {
        check(
            SetKind::Set,
            &[
                (
                    "a.b=1,c[1]=x,d=true,e=007,f.g\\.h=y",
                    Ok(r#"{"a":{"b":1},"c":[null,"x"],"d":true,"e":"007","f":{"g.h":"y"}}"#),
                ),
                (
                    "a=TRUE,b=Null,c=-0,d=-1,e=+1,f=0x1,g=00,h=9223372036854775808",
                    Ok(
                        r#"{"a":true,"b":null,"c":0,"d":-1,"e":1,"f":"0x1","g":"00","h":"9223372036854775808"}"#,
                    ),
                ),
                ("a=1,", Ok(r#"{"a":1}"#)),
                ("a=b=c", Ok(r#"{"a":"b=c"}"#)),
                (".a=1", Ok("{}")),
                ("a=,b=2", Ok(r#"{"a":"","b":2}"#)),
                ("name1=value1,=x", Ok(r#"{"name1":"value1"}"#)),
                ("a[1]=x,a[0].b=y", Ok(r#"{"a":[{"b":"y"},"x"]}"#)),
                ("a[0][1]=x", Ok(r#"{"a":[[null,"x"]]}"#)),
                ("a[0]=1,a[0].b=2", Ok(r#"{"a":[{"b":2}]}"#)),
                // No value, or an index left open: Helm's io.EOF ends the line quietly.
                ("a[0]", Ok(r#"{"a":[]}"#)),
                ("a[0", Ok("{}")),
                ("a[0][1", Ok(r#"{"a":[]}"#)),
                ("a=fal\u{17f}e", Ok(r#"{"a":false}"#)),
                ("a", Err(r#"key "a" has no value"#)),
                ("a.b", Err(r#"key "b" has no value"#)),
                ("a,b=2", Err(r#"key "a" has no value (cannot end with ,)"#)),
                ("a.=1", Err(r#"key map "a" has no value"#)),
                (
                    "a[0]b=1",
                    Err("unexpected data at end of array index: ['b']"),
                ),
                ("a[-1]=1", Err("negative -1 index not allowed")),
                (
                    "a[x]=1",
                    Err(r#"error parsing index: strconv.Atoi: parsing "x": invalid syntax"#),
                ),
                (
                    "a[99999999999999999999]=1",
                    Err(
                        r#"error parsing index: strconv.Atoi: parsing "99999999999999999999": value out of range"#,
                    ),
                ),
                (
                    "a=1,a.b=2",
                    Err(
                        "unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}",
                    ),
                ),
                (
                    "a=null,a[0]=1",
                    Err(
                        "unable to parse key: interface conversion: interface {} is nil, not []interface {}",
                    ),
                ),
                (
                    "a[0]=1,a[0][0]=2",
                    Err(
                        "unable to parse key: interface conversion: interface {} is int64, not []interface {}",
                    ),
                ),
            ],
        );
        let deep = "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.bb.cc.dd.ee";
        assert!(parsed(SetKind::Set, &format!("{deep}=1")).is_ok());
        assert_eq!(
            parsed(SetKind::Set, &format!("{deep}.ff=1")),
            Err(
                "value name nested level is greater than maximum supported nested level of 30"
                    .into()
            )
        );
    }

    #[test]
    fn braces_make_lists() {
        check(
            SetKind::Set,
            &[
                ("a={--v=4,--foo}", Ok(r#"{"a":["--v=4","--foo"]}"#)),
                ("a={}", Ok(r#"{"a":[""]}"#)),
                ("a.b={x,y}", Ok(r#"{"a":{"b":["x","y"]}}"#)),
                ("a[0]={x}", Ok(r#"{"a":[["x"]]}"#)),
                ("a={x\\,y,z}", Ok(r#"{"a":["x,y","z"]}"#)),
                ("a=\\{x}", Ok(r#"{"a":"{x}"}"#)),
                ("a={1,true,null,007}", Ok(r#"{"a":[1,true,null,"007"]}"#)),
                ("a={x},b=1", Ok(r#"{"a":["x"],"b":1}"#)),
                ("a={x", Err("list must terminate with '}'")),
                ("a={x}y", Err(r#"key "y" has no value"#)),
                ("a={x,{y},z}", Err(r#"key "z}" has no value"#)),
            ],
        );
        check(
            SetKind::String,
            &[(
                "a=1,b=true,c={1,2},d=null",
                Ok(r#"{"a":"1","b":"true","c":["1","2"],"d":"null"}"#),
            )],
        );
        check(
            SetKind::File,
            &[("a=x,b={y,z}", Ok(r#"{"a":"<x>","b":["<y>","<z>"]}"#))],
        );
    }

    #[test]
    fn huge_index_is_refused_before_allocating() {
        let t = std::time::Instant::now();
        assert_eq!(
            parsed(SetKind::Set, "a[100000000]=1"),
            Err("index of 100000000 is greater than maximum supported index of 65536".into())
        );
        assert_eq!(
            parsed(SetKind::Set, "a[65537]=1"),
            Err("index of 65537 is greater than maximum supported index of 65536".into())
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        let d = new_map();
        apply_set(&d, "a[65536]=1").unwrap();
        let Some(Value::List(l)) = d.borrow().get("a").cloned() else {
            panic!("a list")
        };
        assert_eq!(l.len(), 65537);
    }

    #[test]
    fn json_and_literal_lines() {
        check(
            SetKind::Json,
            &[
                (r#"a={"b":[1,2]}"#, Ok(r#"{"a":{"b":[1,2]}}"#)),
                ("a=", Ok(r#"{"a":null}"#)),
                ("a= ,b=1", Ok(r#"{"a":null,"b":1}"#)),
                ("a=1 , b=2", Ok(r#"{" b":2,"a":1}"#)),
                (r#"a[0]={"x":1}"#, Ok(r#"{"a":[{"x":1}]}"#)),
                (r#"a="x,y",b=true"#, Ok(r#"{"a":"x,y","b":true}"#)),
                ("a=-0.5e3,b=1e2", Ok(r#"{"a":-500,"b":100}"#)),
                ("a[1]=null,a[0]=2", Ok(r#"{"a":[2,null]}"#)),
                ("a=1x", Err(r#"key "x" has no value"#)),
                ("a=[1,2]x", Err(r#"key "x" has no value"#)),
                ("a=1.5.3", Err(r#"key "3" has no value"#)),
            ],
        );
        assert!(parsed(SetKind::Json, r#"a={"x":"#).is_err());
        assert!(parsed(SetKind::Json, "a=nul").is_err());
        check(
            SetKind::Literal,
            &[
                ("a=b,c=d", Ok(r#"{"a":"b,c=d"}"#)),
                ("a.b=1,2", Ok(r#"{"a":{"b":"1,2"}}"#)),
                ("a[0]=x\\y", Ok(r#"{"a":["x\\y"]}"#)),
                ("a=", Ok(r#"{"a":""}"#)),
                ("a[1]=x=y", Ok(r#"{"a":[null,"x=y"]}"#)),
                ("a,b=c", Ok(r#"{"a,b":"c"}"#)),
                ("a[0].b=x,y", Ok(r#"{"a":[{"b":"x,y"}]}"#)),
                ("a", Err(r#"key "a" has no value"#)),
                ("a.b", Err(r#"key "b" has no value"#)),
            ],
        );
    }

    #[test]
    fn flags_apply_in_helms_order() {
        let d = m("o: {a: file, b: file, c: file, d: file, e: file, f: file}\nl: [x, y]\n");
        let flags = SetFlags {
            set: vec!["o.c=set,o.d=set,o.e=set".into(), "l[1]=z".into()],
            string: vec!["o.d=string".into()],
            json: vec!["o.b=\"json\",o.c=1".into(), r#"{"o":{"j":[1]}}"#.into()],
            file: vec!["o.e=path".into()],
            literal: vec!["o.f=literal,x".into()],
        };
        apply_set_flags(&d, &flags, &|p| Ok(format!("<{p}>"))).unwrap();
        assert_eq!(
            crate::yaml::to_json(&Value::Map(d), false, false),
            r#"{"l":["x","z"],"o":{"a":"file","b":"json","c":"set","d":"string","e":"<path>","f":"literal,x","j":[1]}}"#
        );
        let err = apply_set_flags(
            &new_map(),
            &SetFlags {
                json: vec!["a=[1".into()],
                ..SetFlags::default()
            },
            &|_| Err("no".into()),
        );
        assert_eq!(
            err,
            Err((SetKind::Json, "failed parsing --set-json data a=[1".into()))
        );
    }

    #[test]
    fn user_files_merge_deeply() {
        let a = m("x: {a: 1, b: 2}\nz: 1\n");
        merge_user(&a, &m("x: {b: 3}\nz: [1]\n"));
        assert_eq!(
            crate::yaml::to_json(&Value::Map(a), false, false),
            r#"{"x":{"a":1,"b":3},"z":[1]}"#
        );
    }

    /// Helm's `coalesceTablesFullKey` as it was first ported (keys collected up front), to
    /// pin the in-place walk to it.
    fn coalesce_tables_collected(dst: &Map, src: &Map, merge: bool) {
        if Rc::ptr_eq(dst, src) {
            return;
        }
        let src_non_nil: Vec<String> = src
            .borrow()
            .iter()
            .filter(|(_, v)| !v.is_nil())
            .map(|(k, _)| k.clone())
            .collect();
        let nil_keys: Vec<String> = dst
            .borrow()
            .iter()
            .filter(|(_, v)| v.is_nil())
            .map(|(k, _)| k.clone())
            .collect();
        for k in nil_keys {
            src.borrow_mut().insert(k, Value::Nil);
        }
        let entries: Vec<(String, Value)> = src
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (key, val) in entries {
            let dv = dst.borrow().get(&key).cloned();
            match dv {
                Some(Value::Nil) if !merge && src_non_nil.contains(&key) => {
                    dst.borrow_mut().remove(&key);
                }
                None => {
                    dst.borrow_mut().insert(key, val);
                }
                Some(Value::Map(dm)) => {
                    if let Value::Map(sm) = &val {
                        coalesce_tables_collected(&dm, sm, merge);
                    }
                }
                Some(_) => {}
            }
        }
    }

    /// Helm's `cleanNilValues` as it was first ported.
    fn clean_nil_collected(m: &Map) {
        let keys: Vec<String> = m.borrow().keys().cloned().collect();
        for k in keys {
            let v = m.borrow().get(&k).cloned();
            match v {
                Some(Value::Nil) => {
                    m.borrow_mut().remove(&k);
                }
                Some(Value::Map(sub)) => clean_nil_collected(&sub),
                _ => {}
            }
        }
    }

    fn json(m: &Map) -> String {
        crate::yaml::to_json(&Value::Map(m.clone()), false, false)
    }

    const TABLES: &[&str] = &[
        "{}",
        "a: null\n",
        "a: 1\nb: null\nc: {d: null, e: 2, f: {g: null}}\nl: [null, {x: null}]\n",
        "a: {b: null, c: 1}\nd: null\n",
        "a: {b: 2, d: 3}\nd: 4\ne: null\n",
        "a: x\nc: {d: 1, f: 3}\nl: [1]\nb: {z: null}\n",
        "c: null\nb: 7\nn: null\n",
    ];

    #[test]
    fn coalescing_in_place_is_the_collected_walk() {
        for merge in [false, true] {
            for d in TABLES {
                for s in TABLES {
                    let (d1, s1) = (m(d), m(s));
                    let (d2, s2) = (m(d), m(s));
                    coalesce_tables(&d1, &s1, merge);
                    coalesce_tables_collected(&d2, &s2, merge);
                    let case = format!("merge={merge} dst={d:?} src={s:?}");
                    assert_eq!(json(&d1), json(&d2), "dst, {case}");
                    // Helm writes dst's nulls into src; that stays as it was too.
                    assert_eq!(json(&s1), json(&s2), "src, {case}");
                }
            }
        }
    }

    #[test]
    fn a_clean_copy_is_a_copy_cleaned() {
        for t in TABLES {
            let orig = m(t);
            let before = json(&orig);
            let fused = copy_map_clean(&orig);
            let two_steps = copy_map(&orig);
            clean_nil_collected(&two_steps);
            assert_eq!(json(&fused), json(&two_steps), "{t:?}");
            // The defaults are only read.
            assert_eq!(json(&orig), before, "{t:?}");
        }
    }

    #[test]
    fn null_deletes_a_default() {
        let dst = m("a: {b: null, c: 1}\n");
        coalesce_tables(&dst, &m("a: {b: 2, d: 3}\n"), false);
        assert_eq!(
            crate::yaml::to_json(&Value::Map(dst), false, false),
            r#"{"a":{"c":1,"d":3}}"#
        );
    }
}
