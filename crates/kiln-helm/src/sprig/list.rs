//! Sprig's list functions, after Masterminds/sprig v3.3.0 `list.go` (`list`, `append`,
//! `first`, `uniq`, `sortAlpha`, …) and `functions.go`'s `until`, `untilStep`, `seq`.

use super::*;

pub(super) fn register(f: &mut Funcs) {
    f.add("list", |_, a| Ok(list(a.to_vec())));
    f.add("tuple", |_, a| Ok(list(a.to_vec())));
    for (name, must) in [("first", false), ("mustFirst", true)] {
        f.add1(name, move |_, a0| {
            let l = list_arg(a0, name, must)?;
            Ok(l.first().cloned().unwrap_or(Value::Nil))
        });
    }
    for (name, must) in [("last", false), ("mustLast", true)] {
        f.add1(name, move |_, a0| {
            let l = list_arg(a0, name, must)?;
            Ok(l.last().cloned().unwrap_or(Value::Nil))
        });
    }
    for (name, must) in [("rest", false), ("mustRest", true)] {
        f.add1(name, move |_, a0| {
            let l = list_arg(a0, name, must)?;
            Ok(if l.is_empty() {
                Value::Nil
            } else {
                list(l[1..].to_vec())
            })
        });
    }
    for (name, must) in [("initial", false), ("mustInitial", true)] {
        f.add1(name, move |_, a0| {
            let l = list_arg(a0, name, must)?;
            Ok(if l.is_empty() {
                Value::Nil
            } else {
                list(l[..l.len() - 1].to_vec())
            })
        });
    }
    for (name, must) in [
        ("append", false),
        ("push", false),
        ("mustAppend", true),
        ("mustPush", true),
    ] {
        f.add2(name, move |_, a0, a1| {
            let mut l = list_arg(a0, name, must)?;
            l.push(a1.clone());
            Ok(list(l))
        });
    }
    for (name, must) in [("prepend", false), ("mustPrepend", true)] {
        f.add2(name, move |_, a0, a1| {
            let mut l = list_arg(a0, name, must)?;
            l.insert(0, a1.clone());
            Ok(list(l))
        });
    }
    for (name, must) in [("reverse", false), ("mustReverse", true)] {
        f.add1(name, move |_, a0| {
            let mut l = list_arg(a0, name, must)?;
            l.reverse();
            Ok(list(l))
        });
    }
    for (name, must) in [("uniq", false), ("mustUniq", true)] {
        f.add1(name, move |_, a0| {
            let l = list_arg(a0, name, must)?;
            let mut out: Vec<Value> = Vec::new();
            for v in l {
                if !out.iter().any(|o| o.deep_eq(&v)) {
                    out.push(v);
                }
            }
            Ok(list(out))
        });
    }
    for (name, must) in [("compact", false), ("mustCompact", true)] {
        f.add1(name, move |_, a0| {
            let l = list_arg(a0, name, must)?;
            Ok(list(l.into_iter().filter(|v| !empty(v)).collect()))
        });
    }
    for (name, must) in [("without", false), ("mustWithout", true)] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            let l = list_arg(&a[0], name, must)?;
            let omit = &a[1..];
            Ok(list(
                l.into_iter()
                    .filter(|v| !omit.iter().any(|o| o.deep_eq(v)))
                    .collect(),
            ))
        });
    }
    for (name, must) in [("has", false), ("mustHas", true)] {
        f.add2(name, move |_, a0, a1| {
            let l = list_arg(a1, name, must)?;
            Ok(Value::Bool(l.iter().any(|v| v.deep_eq(a0))))
        });
    }
    // Sprig's `mustSlice` (list.go) takes lists only, by reflection: a string is refused
    // (Go's builtin `slice`, which cuts strings, is shadowed by Sprig's), an empty list gives
    // nil, and indices out of range are reflect's panic.
    for (name, must) in [("slice", false), ("mustSlice", true)] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            let kind = match &a[0] {
                Value::Str(_) => Some("string"),
                Value::Map(_) => Some("map"),
                Value::Int(_) => Some("int"),
                Value::Float(_) => Some("float64"),
                Value::Bool(_) => Some("bool"),
                _ => None,
            };
            if let Some(kind) = kind {
                return Err(format!("list should be type of slice or array but {kind}"));
            }
            let l = list_arg(&a[0], name, must)?;
            if l.is_empty() {
                return Ok(Value::Nil);
            }
            let i = a.get(1).map_or(0, to_i64);
            let j = a.get(2).map_or(l.len() as i64, to_i64);
            if i < 0 || i > j || j > l.len() as i64 {
                return Err("reflect.Value.Slice: slice index out of range".into());
            }
            Ok(list(l[i as usize..j as usize].to_vec()))
        });
    }
    f.add("concat", |_, a| {
        let mut out = Vec::new();
        for v in a {
            match v {
                Value::List(l) => out.extend(l.iter().cloned()),
                Value::Nil => {}
                other => return Err(format!("Cannot concat type {} as list", other.type_name())),
            }
        }
        Ok(list(out))
    });
    for (name, must) in [("chunk", false), ("mustChunk", true)] {
        f.add2(name, move |_, a0, a1| {
            let size = to_i64(a0).max(1) as usize;
            let l = list_arg(a1, name, must)?;
            Ok(list(l.chunks(size).map(|c| list(c.to_vec())).collect()))
        });
    }
    f.add1("until", |_, a0| {
        let n = to_i64(a0);
        bound_items("until", n.unsigned_abs() as u128)?;
        let v: Vec<Value> = if n >= 0 {
            (0..n).map(Value::Int).collect()
        } else {
            (n + 1..=0).rev().map(Value::Int).collect()
        };
        Ok(list(v))
    });
    f.add3("untilStep", |_, a0, a1, a2| {
        let (start, stop, step) = (to_i64(a0), to_i64(a1), to_i64(a2));
        if step != 0 && (stop > start) == (step > 0) {
            let span = (stop as i128 - start as i128).unsigned_abs();
            bound_items("untilStep", span.div_ceil(step.unsigned_abs() as u128))?;
        }
        let mut v = Vec::new();
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            v.push(Value::Int(i));
            // Past i64's end there is nothing more to give (a wrap would loop forever).
            let Some(next) = i.checked_add(step) else {
                break;
            };
            i = next;
        }
        Ok(list(v))
    });
    f.add("seq", |_, a| {
        let n: Vec<i64> = a.iter().map(to_i64).collect();
        let (start, step, end) = match n.as_slice() {
            [] => return Ok(Value::from("")),
            [e] => (1, if *e >= 1 { 1 } else { -1 }, *e),
            [s, e] => (*s, if e >= s { 1 } else { -1 }, *e),
            [s, st, e] => (*s, *st, *e),
            _ => return Err("seq takes at most 3 arguments".into()),
        };
        let mut out = Vec::new();
        if step == 0 {
            return Ok(Value::from(""));
        }
        if (end >= start) == (step > 0) {
            let span = (end as i128 - start as i128).unsigned_abs();
            bound_items("seq", span / step.unsigned_abs() as u128 + 1)?;
        }
        let mut i = start;
        while (step > 0 && i <= end) || (step < 0 && i >= end) {
            out.push(i.to_string());
            let Some(next) = i.checked_add(step) else {
                break;
            };
            i = next;
        }
        Ok(Value::from(out.join(" ")))
    });
}

fn list_arg(v: &Value, name: &str, must: bool) -> Result<Vec<Value>, String> {
    match v {
        Value::List(l) => Ok(l.to_vec()),
        Value::Object(o) if o.entries().is_some() => Ok(o
            .entries()
            .unwrap_or_default()
            .into_iter()
            .map(|(_, v)| v)
            .collect()),
        Value::Nil if !must => Ok(Vec::new()),
        other => Err(format!("Cannot find {name} on type {}", other.type_name())),
    }
}
