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
use std::collections::BTreeMap;

fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(_))
}

fn copy_map(m: &Map) -> Map {
    match Value::Map(m.clone()).deep_copy() {
        Value::Map(c) => c,
        _ => new_map(),
    }
}

/// `CoalesceValues(chrt, vals)`: a copy of `vals` coalesced with the chart's defaults.
pub fn coalesce_values(c: &Chart, vals: &Map) -> Map {
    let v = copy_map(vals);
    coalesce(c, &v, "", false);
    v
}

/// `MergeValues`: as coalesce, but `null` keeps the key.
pub fn merge_values(c: &Chart, vals: &Map) -> Map {
    let v = copy_map(vals);
    coalesce(c, &v, "", true);
    v
}

fn coalesce(c: &Chart, dest: &Map, prefix: &str, merge: bool) {
    coalesce_chart_values(c, dest, prefix, merge);
    coalesce_deps(c, dest, prefix, merge);
}

fn concat_prefix(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}.{b}")
    }
}

fn coalesce_deps(c: &Chart, dest: &Map, prefix: &str, merge: bool) {
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
        let sub_prefix = concat_prefix(prefix, &c.name);
        coalesce_globals(&dv, dest, &sub_prefix);
        coalesce(sub, &dv, &sub_prefix, merge);
    }
}

fn coalesce_globals(dest: &Map, src: &Map, prefix: &str) {
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
                    coalesce_tables(&vv, &destv, &concat_prefix(prefix, &key), true);
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

fn coalesce_chart_values(c: &Chart, v: &Map, prefix: &str, merge: bool) {
    let _sub_prefix = concat_prefix(prefix, &c.name);
    let vc = match c.values.deep_copy() {
        Value::Map(m) => m,
        _ => new_map(),
    };
    let entries: Vec<(String, Value)> = vc
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (key, val) in entries {
        let cur = v.borrow().get(&key).cloned();
        match cur {
            Some(Value::Nil) if !merge => {
                v.borrow_mut().remove(&key);
            }
            Some(Value::Map(dest)) => {
                if let Value::Map(src) = &val {
                    let is_child = c.subcharts.iter().any(|s| s.name == key);
                    let merge = merge || is_child;
                    // Helm v4 cleans nils from chart defaults before coalescing.
                    if !merge {
                        clean_nil_values(src);
                    }
                    coalesce_tables(&dest, src, "", merge);
                }
            }
            Some(_) => {}
            None => {
                if !merge {
                    if val.is_nil() {
                        continue;
                    }
                    if let Value::Map(sub) = &val {
                        clean_nil_values(sub);
                    }
                }
                v.borrow_mut().insert(key, val);
            }
        }
    }
}

fn clean_nil_values(m: &Map) {
    let keys: Vec<String> = m.borrow().keys().cloned().collect();
    for k in keys {
        let v = m.borrow().get(&k).cloned();
        match v {
            Some(Value::Nil) => {
                m.borrow_mut().remove(&k);
            }
            Some(Value::Map(sub)) => clean_nil_values(&sub),
            _ => {}
        }
    }
}

/// `coalesceTablesFullKey`: `dst` wins; `src` fills in.
pub fn coalesce_tables(dst: &Map, src: &Map, prefix: &str, merge: bool) {
    if std::rc::Rc::ptr_eq(dst, src) {
        return;
    }
    let src_non_nil: std::collections::HashSet<String> = src
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
                    coalesce_tables(&dm, sm, &concat_prefix(prefix, &key), merge);
                }
            }
            Some(_) => {}
        }
    }
}

/// `MergeTables(dst, src)`.
fn merge_tables(dst: &Map, src: &Map) {
    coalesce_tables(dst, src, "", true);
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
    let merged = copy_map(&cvals);
    merge_tables(&merged, &b);
    c.values = Value::Map(merged);
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

/// `--set a.b=c,d[0]=e` as Helm's `strvals.ParseInto` (values typed: ints, bools, null).
pub fn apply_set(dst: &Map, expr: &str) -> Result<(), String> {
    for item in split_unescaped(expr, ',') {
        if item.is_empty() {
            continue;
        }
        let Some((key, val)) = split_once_unescaped(&item, '=') else {
            return Err(format!("key \"{item}\" has no value"));
        };
        let value = typed(&unescape(&val));
        let parts = key_parts(&key)?;
        set_path(dst, &parts, value)?;
    }
    Ok(())
}

enum Part {
    Key(String),
    Index(usize),
}

fn key_parts(key: &str) -> Result<Vec<Part>, String> {
    let mut out = Vec::new();
    for seg in split_unescaped(key, '.') {
        let mut rest = seg.as_str();
        let name_end = rest.find('[').unwrap_or(rest.len());
        let name = unescape(&rest[..name_end]);
        if !name.is_empty() {
            out.push(Part::Key(name));
        }
        rest = &rest[name_end..];
        while let Some(r) = rest.strip_prefix('[') {
            let close = r
                .find(']')
                .ok_or_else(|| format!("missing ']' in key \"{key}\""))?;
            let idx: usize = r[..close]
                .parse()
                .map_err(|_| format!("invalid index in key \"{key}\""))?;
            out.push(Part::Index(idx));
            rest = &r[close + 1..];
        }
    }
    Ok(out)
}

fn set_path(dst: &Map, parts: &[Part], value: Value) -> Result<(), String> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    let Part::Key(k) = first else {
        return Err("a --set key must start with a name".into());
    };
    let cur = dst.borrow().get(k).cloned();
    let new = set_in(cur, rest, value)?;
    dst.borrow_mut().insert(k.clone(), new);
    Ok(())
}

fn set_in(cur: Option<Value>, parts: &[Part], value: Value) -> Result<Value, String> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(value);
    };
    match first {
        Part::Key(k) => {
            let m = match cur {
                Some(Value::Map(m)) => m,
                _ => new_map(),
            };
            let inner = m.borrow().get(k).cloned();
            let v = set_in(inner, rest, value)?;
            m.borrow_mut().insert(k.clone(), v);
            Ok(Value::Map(m))
        }
        Part::Index(i) => {
            let mut l = match cur {
                Some(Value::List(l)) => l.to_vec(),
                _ => Vec::new(),
            };
            while l.len() <= *i {
                l.push(Value::Nil);
            }
            let inner = Some(l[*i].clone()).filter(|v| !v.is_nil());
            l[*i] = set_in(inner, rest, value)?;
            Ok(Value::list(l))
        }
    }
}

/// strvals typing: `true`/`false`, `null`, integers (not with a leading 0), else a string.
fn typed(v: &str) -> Value {
    match v {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Nil,
        _ => {
            if (v == "0" || (!v.starts_with('0') && !v.starts_with("-0")))
                && let Ok(n) = v.parse::<i64>()
            {
                return Value::Int(n);
            }
            Value::str(v)
        }
    }
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    let mut depth = 0;
    for c in s.chars() {
        if esc {
            cur.push('\\');
            cur.push(c);
            esc = false;
            continue;
        }
        match c {
            '\\' => esc = true,
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' => {
                depth -= 1;
                cur.push(c);
            }
            c if c == sep && depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn split_once_unescaped(s: &str, sep: char) -> Option<(String, String)> {
    let mut esc = false;
    for (i, c) in s.char_indices() {
        if esc {
            esc = false;
            continue;
        }
        if c == '\\' {
            esc = true;
        } else if c == sep {
            return Some((s[..i].to_string(), s[i + 1..].to_string()));
        }
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in s.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
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
        into_map(crate::helm::yaml::parse_one(text).unwrap())
    }

    #[test]
    fn set_parses_like_strvals() {
        let d = new_map();
        apply_set(&d, "a.b=1,c[1]=x,d=true,e=007,f.g\\.h=y").unwrap();
        assert_eq!(
            crate::helm::yaml::to_json(&Value::Map(d), false, false),
            r#"{"a":{"b":1},"c":[null,"x"],"d":true,"e":"007","f":{"g.h":"y"}}"#
        );
    }

    #[test]
    fn user_files_merge_deeply() {
        let a = m("x: {a: 1, b: 2}\nz: 1\n");
        merge_user(&a, &m("x: {b: 3}\nz: [1]\n"));
        assert_eq!(
            crate::helm::yaml::to_json(&Value::Map(a), false, false),
            r#"{"x":{"a":1,"b":3},"z":[1]}"#
        );
    }

    #[test]
    fn null_deletes_a_default() {
        let dst = m("a: {b: null, c: 1}\n");
        coalesce_tables(&dst, &m("a: {b: 2, d: 3}\n"), "", false);
        assert_eq!(
            crate::helm::yaml::to_json(&Value::Map(dst), false, false),
            r#"{"a":{"c":1,"d":3}}"#
        );
    }
}
