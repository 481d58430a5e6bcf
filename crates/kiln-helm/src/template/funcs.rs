//! Go's builtin template functions, after `text/template/funcs.go` (`builtins`, `eq`/`lt`'s
//! basic kinds and their errors), and the arity check every function call meets
//! (`exec.go` `evalCall`: "wrong number of args for NAME: want N got M").

use super::exec::{Exec, Funcs};
use super::fmt::{s_ref, sprintf, strval, to_i64};
use super::params::{Param, Sig};
use super::value::Value;

/// A function's arguments, as the call evaluated them.
pub type Args<'a> = &'a [Value];

/// Go's arity error (`exec.go` `evalCall`) for a call of `name` with `got` arguments where it
/// takes `n`.
fn wrong_args(name: &str, n: usize, got: usize) -> String {
    format!("wrong number of args for {name}: want {n} got {got}")
}

/// Go's arity error for a variadic function unless `a` holds at least `n` arguments.
pub fn want_min(a: Args, n: usize, name: &str) -> Result<(), String> {
    if a.len() < n {
        return Err(format!(
            "wrong number of args for {name}: want at least {n} got {}",
            a.len()
        ));
    }
    Ok(())
}

/// The typed adapters: a function of one, two or three arguments gets them as such, after
/// the arity check every call of it meets (`wrong_args`: Go's message, written once here).
impl Funcs {
    /// Adds `name`, a function of exactly one argument.
    pub fn add1(
        &mut self,
        name: &'static str,
        f: impl Fn(&mut Exec, &Value) -> Result<Value, String> + 'static,
    ) {
        self.add(name, move |ex, a| match a {
            [a0] => f(ex, a0),
            _ => Err(wrong_args(name, 1, a.len())),
        });
    }

    /// Adds `name`, a function of exactly two arguments.
    pub fn add2(
        &mut self,
        name: &'static str,
        f: impl Fn(&mut Exec, &Value, &Value) -> Result<Value, String> + 'static,
    ) {
        self.add(name, move |ex, a| match a {
            [a0, a1] => f(ex, a0, a1),
            _ => Err(wrong_args(name, 2, a.len())),
        });
    }

    /// Adds `name`, a function of exactly three arguments.
    pub fn add3(
        &mut self,
        name: &'static str,
        f: impl Fn(&mut Exec, &Value, &Value, &Value) -> Result<Value, String> + 'static,
    ) {
        self.add(name, move |ex, a| match a {
            [a0, a1, a2] => f(ex, a0, a1, a2),
            _ => Err(wrong_args(name, 3, a.len())),
        });
    }
}

/// The builtins' Go signatures (funcs.go) where a parameter is typed: `printf`'s format is
/// a `string`; the others take `reflect.Value` or `any`.
pub const SIGNATURES: &[(&str, Sig)] = &[(
    "printf",
    Sig {
        fixed: &[Param::Str],
        variadic: Some(Param::Any),
    },
)];

/// Registers Go's builtins (`and`, `or`, `not`, `len`, `index`, `slice`, `print*`, `html`,
/// `js`, `urlquery`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `call`) on `f`.
pub fn builtins(f: &mut Funcs) {
    f.add1("not", |_, a0| Ok(Value::Bool(!a0.truthy())));
    f.add1("len", |_, a0| {
        Ok(Value::Int(match a0 {
            Value::Str(s) => crate::template::fmt::go_bytes(s).len() as i64,
            Value::List(l) => l.len() as i64,
            Value::Map(m) => m.borrow().len() as i64,
            Value::Object(o) if o.entry_count().is_some() => o.entry_count().unwrap_or(0) as i64,
            Value::Nil => return Err("len of nil pointer".into()),
            other => return Err(format!("len of type {}", other.type_name())),
        }))
    });
    f.add("index", |_, a| {
        want_min(a, 1, "index")?;
        let mut cur = a[0].clone();
        for k in &a[1..] {
            cur = match (&cur, k) {
                (Value::Map(m), k) => m
                    .borrow()
                    .get(s_ref(k).as_ref())
                    .cloned()
                    .unwrap_or(Value::Nil),
                (Value::List(l), k) => {
                    let i = to_i64(k);
                    if i < 0 || i as usize >= l.len() {
                        return Err(format!("error calling index: index out of range: {i}"));
                    }
                    l[i as usize].clone()
                }
                (Value::Str(st), k) => {
                    let i = to_i64(k);
                    match st.as_bytes().get(i as usize) {
                        Some(b) => Value::Int(i64::from(*b)),
                        None => {
                            return Err(format!("error calling index: index out of range: {i}"));
                        }
                    }
                }
                (Value::Nil, _) => return Err("index of untyped nil".into()),
                (other, _) => {
                    return Err(format!("can't index item of type {}", other.type_name()));
                }
            };
        }
        Ok(cur)
    });
    f.add("print", |_, a| {
        // fmt.Sprint: spaces only between operands when neither is a string.
        let mut out = String::new();
        for (i, v) in a.iter().enumerate() {
            if i > 0 && !matches!(v, Value::Str(_)) && !matches!(a[i - 1], Value::Str(_)) {
                out.push(' ');
            }
            out.push_str(&strval(v));
        }
        Ok(Value::from(out))
    });
    f.add("println", |_, a| {
        let parts: Vec<String> = a.iter().map(strval).collect();
        Ok(Value::from(parts.join(" ") + "\n"))
    });
    f.add("printf", |_, a| {
        want_min(a, 1, "printf")?;
        Ok(Value::from(sprintf(&s_ref(&a[0]), &a[1..])))
    });
    f.add("eq", |_, a| {
        if a.len() < 2 {
            return Err("missing argument for comparison".into());
        }
        for b in &a[1..] {
            if go_eq(&a[0], b)? {
                return Ok(Value::Bool(true));
            }
        }
        Ok(Value::Bool(false))
    });
    f.add2("ne", |_, a0, a1| Ok(Value::Bool(!go_eq(a0, a1)?)));
    f.add2("lt", |_, a0, a1| Ok(Value::Bool(go_lt(a0, a1)?)));
    f.add2("le", |_, a0, a1| {
        Ok(Value::Bool(go_lt(a0, a1)? || go_eq(a0, a1)?))
    });
    f.add2("gt", |_, a0, a1| {
        Ok(Value::Bool(!(go_lt(a0, a1)? || go_eq(a0, a1)?)))
    });
    f.add2("ge", |_, a0, a1| Ok(Value::Bool(!go_lt(a0, a1)?)));
    f.add("html", |_, a| {
        let t: String = a.iter().map(strval).collect();
        Ok(Value::from(
            t.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&#34;")
                .replace('\'', "&#39;"),
        ))
    });
    f.add("js", |_, a| {
        let t: String = a.iter().map(strval).collect();
        let mut out = String::new();
        for c in t.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                '"' => out.push_str("\\\""),
                '<' => out.push_str("\\u003C"),
                '>' => out.push_str("\\u003E"),
                '&' => out.push_str("\\u0026"),
                '=' => out.push_str("\\u003D"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c => out.push(c),
            }
        }
        Ok(Value::from(out))
    });
    f.add("urlquery", |_, a| {
        let t: String = a.iter().map(strval).collect();
        Ok(Value::from(query_escape(&t)))
    });
    f.add("call", |_, _| {
        Err("call of a function value is not supported".into())
    });
}

fn query_escape(t: &str) -> String {
    let mut out = String::new();
    for b in t.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The kinds Go's template comparisons know (text/template funcs.go `basicKind`); kiln's one
/// integer type is Go's `int`/`int64`, so the int/uint special case never arises.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
    /// nil, and the kinds Go refuses to order (maps, slices, objects).
    Other,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::Str(_) => Kind::Str,
        _ => Kind::Other,
    }
}

/// Go template `eq` of two arguments (funcs.go `eq`): values of one basic kind by value; of
/// two kinds an error (`eq .Values.replicas 1` fails in Helm, a values file's numbers being
/// float64), unless one is nil, which equals only nil; maps and slices are not comparable.
fn go_eq(a: &Value, b: &Value) -> Result<bool, String> {
    let (ka, kb) = (kind(a), kind(b));
    if ka != kb {
        if !matches!(a, Value::Nil) && !matches!(b, Value::Nil) {
            return Err(incompatible(a, b));
        }
        return Ok(false);
    }
    if ka != Kind::Other {
        return Ok(a.deep_eq(b));
    }
    // Go's default branch: nil equals nil only; otherwise the kinds must agree
    // (`canCompare`) and the type be comparable (a map or slice is not; an object, a
    // pointer in Go, is equal to itself).
    let nil = |v: &Value| matches!(v, Value::Nil);
    if nil(a) || nil(b) {
        return Ok(nil(a) && nil(b));
    }
    let same_kind = matches!(
        (a, b),
        (Value::Map(_), Value::Map(_))
            | (Value::List(_), Value::List(_))
            | (Value::Object(_), Value::Object(_))
    );
    if !same_kind {
        return Err(format!(
            "non-comparable types {}: {}, {}: {}",
            a.go_string(),
            a.type_name(),
            b.type_name(),
            b.go_string()
        ));
    }
    if let Value::Object(_) = a {
        return Ok(a.deep_eq(b));
    }
    Err(format!(
        "non-comparable type {}: {}",
        b.go_string(),
        b.type_name()
    ))
}

fn incompatible(a: &Value, b: &Value) -> String {
    format!(
        "incompatible types for comparison: {} and {}",
        a.type_name(),
        b.type_name()
    )
}

/// Go template `lt` (funcs.go `lt`): ints, floats and strings of one kind; nil, bools and
/// collections are "invalid type for comparison", two kinds "incompatible types".
fn go_lt(a: &Value, b: &Value) -> Result<bool, String> {
    let (ka, kb) = (kind(a), kind(b));
    if ka == Kind::Other || kb == Kind::Other {
        return Err("invalid type for comparison".into());
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        _ if ka != kb => Err(incompatible(a, b)),
        _ => Err("invalid type for comparison".into()),
    }
}
