//! Sprig's dict functions, after Masterminds/sprig v3.3.0 `dict.go` (`dict`, `get`, `set`,
//! `pluck`, `dig`, …), with mergo's deep merge for `merge` and `mergeOverwrite`.

use super::*;
use crate::template::value::Dict;

/// mergo's deep merge as Sprig's `merge` (dst wins unless its value is empty) and
/// `mergeOverwrite` (src wins).
pub fn merge_into(dst: &Map, src: &Map, overwrite: bool) {
    if Rc::ptr_eq(dst, src) {
        return;
    }
    let entries: Vec<(std::rc::Rc<str>, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, sv) in entries {
        let dv = dst.borrow().get(&k).cloned();
        match (&sv, &dv) {
            (Value::Nil, _) => {
                if overwrite {
                    dst.borrow_mut().insert(k, Value::Nil);
                }
            }
            (Value::Map(sm), Some(Value::Map(dm))) => merge_into(dm, sm, overwrite),
            _ => {
                let dst_empty = dv.as_ref().is_none_or(empty);
                if overwrite || dst_empty {
                    dst.borrow_mut().insert(k, sv);
                }
            }
        }
    }
}

pub(super) fn register(f: &mut Funcs) {
    f.add("dict", |_, a| {
        let mut m = Dict::with_capacity(a.len().div_ceil(2));
        for pair in a.chunks(2) {
            let k = strval_key(&pair[0]);
            let v = pair.get(1).cloned().unwrap_or(Value::from(""));
            m.insert(k, v);
        }
        Ok(Value::map(m))
    });
    f.add2("get", |_, a0, a1| {
        let m = as_map(a0, "get")?;
        let v = m.borrow().get(s_ref(a1).as_ref()).cloned();
        Ok(v.unwrap_or(Value::from("")))
    });
    f.add3("set", |_, a0, a1, a2| {
        if a0.is_nil() {
            // Go's runtime panic, which text/template reports as the call's error.
            return Err("assignment to entry in nil map".into());
        }
        let m = as_map(a0, "set")?;
        m.borrow_mut().insert(s_key(a1), a2.clone());
        Ok(Value::Map(m))
    });
    f.add2("unset", |_, a0, a1| {
        let m = as_map(a0, "unset")?;
        m.borrow_mut().remove(s_ref(a1).as_ref());
        Ok(Value::Map(m))
    });
    f.add2("hasKey", |_, a0, a1| {
        let m = as_map(a0, "hasKey")?;
        let has = m.borrow().contains_key(s_ref(a1).as_ref());
        Ok(Value::Bool(has))
    });
    f.add("pluck", |_, a| {
        want_min(a, 1, "pluck")?;
        let k = s(&a[0]);
        let mut out = Vec::new();
        for d in &a[1..] {
            let m = as_map(d, "pluck")?;
            if let Some(v) = m.borrow().get(&k) {
                out.push(v.clone());
            }
        }
        Ok(list(out))
    });
    f.add("keys", |_, a| {
        // Go's map order is random; kiln gives the sorted order.
        let mut out = Vec::new();
        for d in a {
            let m = as_map(d, "keys")?;
            out.extend(m.borrow().keys().map(|k| Value::Str(k.clone())));
        }
        Ok(list(out))
    });
    f.add1("values", |_, a0| {
        let m = as_map(a0, "values")?;
        let v: Vec<Value> = m.borrow().values().cloned().collect();
        Ok(list(v))
    });
    f.add("pick", |_, a| {
        want_min(a, 1, "pick")?;
        let m = as_map(&a[0], "pick")?;
        let out = new_map();
        for k in &a[1..] {
            let k = s_key(k);
            if let Some(v) = m.borrow().get(&k) {
                out.borrow_mut().insert(k, v.clone());
            }
        }
        Ok(Value::Map(out))
    });
    f.add("omit", |_, a| {
        want_min(a, 1, "omit")?;
        let m = as_map(&a[0], "omit")?;
        let drop: Vec<Rc<str>> = a[1..].iter().map(s_key).collect();
        let out: Dict = m
            .borrow()
            .iter()
            .filter(|(k, _)| !drop.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Value::map(out))
    });
    for (name, overwrite) in [
        ("merge", false),
        ("mustMerge", false),
        ("mergeOverwrite", true),
        ("mustMergeOverwrite", true),
    ] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            let dst = as_map(&a[0], name)?;
            for src in &a[1..] {
                if src.is_nil() {
                    continue;
                }
                let src = as_map(src, name)?;
                merge_into(&dst, &src, overwrite);
            }
            Ok(Value::Map(dst))
        });
    }
    for name in ["deepCopy", "mustDeepCopy"] {
        f.add1(name, move |_, a0| Ok(a0.deep_copy()));
    }
    f.add("dig", |_, a| {
        want_min(a, 3, "dig")?;
        // dig's parameters are `...interface{}`: Sprig asserts their types itself, and a
        // failed assertion is Go's runtime panic (`interface conversion`), nil included.
        let assertion = |v: &Value, want: &str| {
            let got = if v.is_nil() {
                "nil".into()
            } else {
                v.type_name()
            };
            format!("interface conversion: interface {{}} is {got}, not {want}")
        };
        let d = match &a[a.len() - 1] {
            Value::Map(m) => m.clone(),
            other => return Err(assertion(other, "map[string]interface {}")),
        };
        let def = a[a.len() - 2].clone();
        let mut keys: Vec<String> = Vec::with_capacity(a.len() - 2);
        for k in &a[..a.len() - 2] {
            match k {
                Value::Str(k) => keys.push(k.to_string()),
                other => return Err(assertion(other, "string")),
            }
        }
        let mut cur = Value::Map(d);
        for (i, k) in keys.iter().enumerate() {
            let m = match &cur {
                Value::Map(m) => m.clone(),
                other => {
                    return Err(format!(
                        "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                        other.type_name()
                    ));
                }
            };
            let Some(step) = m.borrow().get(k).cloned() else {
                return Ok(def);
            };
            if i + 1 == keys.len() {
                return Ok(step);
            }
            cur = step;
        }
        Ok(def)
    });
    f.add("default", |_, a| {
        want_min(a, 1, "default")?;
        if a.len() == 1 {
            return Ok(a[0].clone());
        }
        let given = &a[1];
        Ok(if empty(given) {
            a[0].clone()
        } else {
            given.clone()
        })
    });
    f.add1("empty", |_, a0| Ok(Value::Bool(empty(a0))));
    f.add("coalesce", |_, a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
    });
    f.add("all", |_, a| Ok(Value::Bool(a.iter().all(|v| !empty(v)))));
    f.add("any", |_, a| Ok(Value::Bool(a.iter().any(|v| !empty(v)))));
    f.add3("ternary", |_, a0, a1, a2| {
        Ok(if a2.truthy() { a0.clone() } else { a1.clone() })
    });
}
