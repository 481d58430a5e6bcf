//! Coalescing values, after Helm v4.2.3 `pkg/chart/common/util/coalesce.go`
//! (`CoalesceValues`, `MergeValues`): user values over chart defaults, subchart sections
//! coalesced with the subchart's defaults, `global` copied down, `null` deleting a key.

use super::*;
use crate::template::value::Dict;

pub(super) fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(_))
}

pub(super) fn copy_map(m: &Map) -> Map {
    Rc::new(RefCell::new(copy_table(&m.borrow())))
}

/// `copystructure.Copy` of a table as [`Value::deep_copy`] gives it, made cheaper: the
/// entries are cloned as they stand, keys shared (collecting them again sorted them), then
/// each nested table (and list holding one) is replaced by its copy. A list with no table in
/// it is shared, not copied: lists are immutable and only tables are compared by identity,
/// so the copy cannot be told from the original. Copying chart defaults and user values
/// this way was a tenth of a prometheus render.
pub(super) fn copy_table(m: &Dict) -> Dict {
    let mut c = m.clone();
    for v in c.values_mut() {
        if holds_table(v) {
            *v = copy_value(v);
        }
    }
    c
}

pub(super) fn copy_value(v: &Value) -> Value {
    match v {
        Value::Map(m) => Value::map(copy_table(&m.borrow())),
        Value::List(l) if l.iter().any(holds_table) => {
            Value::list(l.iter().map(copy_value).collect())
        }
        other => other.clone(),
    }
}

/// Whether a copy of `v` must be made anew (it is or holds a table).
pub(super) fn holds_table(v: &Value) -> bool {
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
pub(super) fn coalesce(c: &Chart, dest: &Map, merge: bool) {
    coalesce_chart_values(c, dest, merge);
    coalesce_deps(c, dest, merge);
}

pub(super) fn coalesce_deps(c: &Chart, dest: &Map, merge: bool) {
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

pub(super) fn coalesce_globals(dest: &Map, src: &Map) {
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
    let entries: Vec<(std::rc::Rc<str>, Value)> = sg
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
    dest.borrow_mut().insert("global", Value::Map(dg));
}

/// The chart's defaults into `v`. Each default is copied only where it goes in (none for a
/// key the user set to a scalar, or nulled), and under coalescing its nulls are dropped
/// while it is copied: the table Helm's `cleanNilValues` leaves of a copy, in one walk.
/// The defaults themselves are only read (`v` holds no table of theirs, only copies).
pub(super) fn coalesce_chart_values(c: &Chart, v: &Map, merge: bool) {
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
                    let is_child = c.subcharts.iter().any(|s| *s.name == **key);
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
pub(super) fn copy_map_clean(m: &Map) -> Map {
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
    let mut deleted: Vec<std::rc::Rc<str>> = Vec::new();
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
pub(super) fn merge_tables(dst: &Map, src: &Map) {
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
pub(super) fn path_value(v: &Map, path: &str) -> Option<Value> {
    let parts: Vec<&str> = path.split('.').collect();
    let (last, head) = parts.split_last()?;
    let t = if head.is_empty() {
        v.clone()
    } else {
        table(v, &head.join("."))?
    };
    let val = t.borrow().get(last).cloned()?;
    if is_table(&val) { None } else { Some(val) }
}
