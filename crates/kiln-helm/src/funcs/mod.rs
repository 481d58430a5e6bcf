//! The functions Helm gives templates: Go's builtins, Sprig v3.3.0 as Helm v4.2.3 exposes it
//! (`pkg/engine/funcs.go`: Sprig's `TxtFuncMap` without `env`/`expandenv`, plus Helm's own),
//! each after the source of github.com/Masterminds/sprig v3.3.0 (strings.go, list.go,
//! dict.go, numeric.go, defaults.go, regex.go, crypto.go, date.go, semver.go).
//!
//! Non-deterministic functions are deterministic here: `now` is a fixed instant and every
//! random function (`randAlphaNum`, `uuidv4`, `genCA`, …) draws from one generator seeded
//! by the caller (see [`Seed`] and docs in `crates/kiln-helm/src/lib.rs`).

pub mod conv;
mod decimal;
pub mod goregex;
mod gounicode;
pub mod semver;
mod time;

use crate::template::exec::{Exec, Funcs};
use crate::template::value::{Map, Value, new_map};
use conv::{empty, go_quote, s, s_ref, sprintf, strval, to_f64, to_i64};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

/// The deterministic random generator behind `rand*`, `uuidv4` and the `gen*` functions
/// (splitmix64; the seed is a digest of chart, release and values).
pub struct Seed {
    state: u64,
}

impl Seed {
    pub fn new(seed: u64) -> Seed {
        Seed { state: seed }
    }
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
    fn string_from(&mut self, alphabet: &[u8], n: usize) -> String {
        (0..n)
            .map(|_| alphabet[self.below(alphabet.len() as u64) as usize] as char)
            .collect()
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

type Args<'a> = &'a [Value];

/// The most items a function's list holds and the most bytes its text holds. Where Helm
/// allocates without bound until the process dies (`until 100000000000`, `repeat` or
/// `indent` by a billion), kiln stops with an error naming the function
/// (tests/helm/DIVERGENCES.md).
const MAX_ITEMS: u128 = 1 << 24;
const MAX_TEXT: u128 = 1 << 28;

fn bound_items(name: &str, n: u128) -> Result<(), String> {
    if n > MAX_ITEMS {
        return Err(format!(
            "{name}: a list of {n} items is more than kiln builds ({MAX_ITEMS})"
        ));
    }
    Ok(())
}

fn bound_text(name: &str, n: u128) -> Result<(), String> {
    if n > MAX_TEXT {
        return Err(format!(
            "{name}: a text of {n} bytes is more than kiln builds ({MAX_TEXT})"
        ));
    }
    Ok(())
}

fn want(a: Args, n: usize, name: &str) -> Result<(), String> {
    if a.len() != n {
        return Err(format!(
            "wrong number of args for {name}: want {n} got {}",
            a.len()
        ));
    }
    Ok(())
}

fn want_min(a: Args, n: usize, name: &str) -> Result<(), String> {
    if a.len() < n {
        return Err(format!(
            "wrong number of args for {name}: want at least {n} got {}",
            a.len()
        ));
    }
    Ok(())
}

fn as_map(v: &Value, name: &str) -> Result<Map, String> {
    match v {
        Value::Map(m) => Ok(m.clone()),
        other => Err(format!(
            "wrong type for value; expected map[string]interface {{}}; got {} (in {name})",
            other.type_name()
        )),
    }
}

fn list(v: Vec<Value>) -> Value {
    Value::list(v)
}

fn str_list(v: Vec<String>) -> Value {
    Value::list(v.into_iter().map(Value::from).collect())
}

/// Sprig's `strslice`.
fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l.iter().filter(|x| !x.is_nil()).map(strval).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

/// `r` as a string value, where `r` is a part of the string argument `v` as [`s_ref`]
/// borrowed it: `v` itself when `r` is all of it. Charts run most names through
/// `trunc 63 | trimSuffix "-"` and values through `toString`, which usually change nothing,
/// and a copy of the text for every such call was an allocation and a copy.
fn part_of(v: &Value, r: &str) -> Value {
    part_of_bytes(v, r.as_bytes()).unwrap_or_else(|| Value::from(r))
}

fn part_of_bytes(v: &Value, r: &[u8]) -> Option<Value> {
    match v {
        Value::Str(x) if x.len() == r.len() && std::ptr::eq(x.as_ptr(), r.as_ptr()) => {
            Some(v.clone())
        }
        _ => None,
    }
}

/// Bytes cut from the string argument `v` (`substr`, `trunc` cut at byte offsets, possibly
/// inside a character, which Go keeps and Helm's output shows as U+FFFD): `v` itself when
/// they are all of it.
fn bytes_of(v: &Value, r: &[u8]) -> Value {
    part_of_bytes(v, r).unwrap_or_else(|| Value::from(String::from_utf8_lossy(r).into_owned()))
}

/// mergo's deep merge as Sprig's `merge` (dst wins unless its value is empty) and
/// `mergeOverwrite` (src wins).
pub fn merge_into(dst: &Map, src: &Map, overwrite: bool) {
    if Rc::ptr_eq(dst, src) {
        return;
    }
    let entries: Vec<(String, Value)> = src
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

/// Registers every function on `f`; `seed` drives the random ones.
pub fn register(f: &mut Funcs, seed: Rc<RefCell<Seed>>) {
    builtins(f);
    strings(f);
    lists(f);
    dicts(f);
    math(f);
    encoding(f);
    types(f);
    regex(f);
    paths(f);
    semvers(f);
    time::register(f);
    random(f, seed);
}

fn builtins(f: &mut Funcs) {
    f.add("not", |_, a| {
        want(a, 1, "not")?;
        Ok(Value::Bool(!a[0].truthy()))
    });
    f.add("len", |_, a| {
        want(a, 1, "len")?;
        Ok(Value::Int(match &a[0] {
            Value::Str(s) => crate::encode::go_bytes(s).len() as i64,
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
    f.add("ne", |_, a| {
        want(a, 2, "ne")?;
        Ok(Value::Bool(!go_eq(&a[0], &a[1])?))
    });
    f.add("lt", |_, a| {
        want(a, 2, "lt")?;
        Ok(Value::Bool(go_lt(&a[0], &a[1])?))
    });
    f.add("le", |_, a| {
        want(a, 2, "le")?;
        Ok(Value::Bool(go_lt(&a[0], &a[1])? || go_eq(&a[0], &a[1])?))
    });
    f.add("gt", |_, a| {
        want(a, 2, "gt")?;
        Ok(Value::Bool(!(go_lt(&a[0], &a[1])? || go_eq(&a[0], &a[1])?)))
    });
    f.add("ge", |_, a| {
        want(a, 2, "ge")?;
        Ok(Value::Bool(!go_lt(&a[0], &a[1])?))
    });
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

/// Masterminds/goutils `AbbreviateFull(str, offset, maxWidth)`, the caller having refused the
/// widths it errs on (Sprig's `abbrev`/`abbrevboth`). Go counts and cuts bytes, so a cut
/// inside a character leaves an invalid byte, which shows as U+FFFD.
fn abbreviate_full(t: &str, offset: i64, width: i64) -> String {
    let b = t.as_bytes();
    let len = b.len() as i64;
    if t.is_empty() || len <= width {
        return t.to_string();
    }
    let cut = |from: i64, to: i64| {
        String::from_utf8_lossy(&b[from.clamp(0, len) as usize..to.clamp(0, len) as usize])
            .into_owned()
    };
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return cut(0, width - 3) + "...";
    }
    if width < 7 {
        return String::new();
    }
    if offset + width - 3 < len {
        let rest = String::from_utf8_lossy(&b[offset as usize..]).into_owned();
        return format!("...{}", abbreviate_full(&rest, 0, width - 3));
    }
    format!("...{}", cut(len - (width - 3), len))
}

/// huandu/xstrings v1.5 `ToPascalCase` (Sprig's `camelcase`): leading connectors (`-`, `_`,
/// blanks) kept, the character after a connector upper-cased and the connector dropped, a
/// run of connectors keeping all but its last; other letters keep their case except the
/// capitals right after a word's capital first letter (`FOO_BAR` is `FooBar`, `fooBar`
/// `FooBar`, `aBC dEF` `ABCDEF`, `foo__bar` `Foo_Bar`). A text of connectors only gets its
/// last one twice (`_` is `__`), as xstrings writes it.
fn camel_case(t: &str) -> String {
    use gounicode::{is_upper, to_lower, to_upper};
    let mut out = String::with_capacity(t.len() + 1);
    let mut chars = t.chars();
    let mut first_upper = false;
    let mut cur = None;
    for c in chars.by_ref() {
        if !xconnector(c) {
            first_upper = is_upper(c);
            cur = Some(to_upper(c));
            break;
        }
        out.push(c);
        cur = Some(c);
    }
    let Some(mut cur) = cur else {
        return out;
    };
    for next in chars {
        let prev = cur;
        cur = next;
        if xconnector(cur) && xconnector(prev) {
            out.push(prev);
            continue;
        }
        if xconnector(prev) {
            first_upper = is_upper(cur);
            cur = to_upper(cur);
        } else {
            if first_upper {
                if is_upper(cur) {
                    cur = to_lower(cur);
                } else {
                    first_upper = false;
                }
            }
            out.push(prev);
        }
    }
    out.push(cur);
    out
}

/// Go's `strings.Title` (Sprig's `title`): a letter after a separator is title-cased, all
/// else kept. Separators are ASCII characters other than letters, digits and `_` (so
/// `o'neil` is `O'Neil`, `hello-world` `Hello-World`, `foo_bar` `Foo_bar`) and, past ASCII,
/// spaces only (`a²b` is `A²b`).
fn title_case(t: &str) -> String {
    fn separator(c: char) -> bool {
        if c.is_ascii() {
            return !(c.is_ascii_alphanumeric() || c == '_');
        }
        if gounicode::is_letter(c) || gounicode::is_digit(c) {
            return false;
        }
        gounicode::is_space(c)
    }
    let mut prev = ' ';
    t.chars()
        .map(|c| {
            let out = if separator(prev) {
                gounicode::to_title(c)
            } else {
                c
            };
            prev = c;
            out
        })
        .collect()
}

/// Go's `strings.ToUpper`: each character by its simple (one-character) mapping, so `ß`
/// stays `ß` (Rust's `to_uppercase` gives `SS`).
fn go_upper(t: &str) -> String {
    t.chars().map(gounicode::to_upper).collect()
}

/// Go's `strings.ToLower`: each character alone, so a final `Σ` is `σ` (Rust's
/// `to_lowercase` gives `ς` there), and `İ` is `i` (its simple mapping).
fn go_lower(t: &str) -> String {
    t.chars().map(gounicode::to_lower).collect()
}

/// goutils `DeleteWhiteSpace` (Sprig's `nospace`) reads the text byte by byte, each byte
/// as the character of that number (Latin-1): a byte that is a space there (`\t\n\v\f\r`,
/// space, 0x85, 0xA0) is dropped, and when one was, every other byte is written as that
/// character, so `é` (C3 A9) becomes `Ã©` and `a\u00a0b` (61 C2 A0 62) `aÂb`. Text without
/// such a byte is given back as it is.
fn delete_white_space(t: &str) -> Option<String> {
    let space = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xa0);
    if !t.bytes().any(space) {
        return None;
    }
    Some(t.bytes().filter(|&b| !space(b)).map(char::from).collect())
}

/// goutils `Initials` (Sprig's `initials`), byte by byte as [`delete_white_space`]: the
/// first byte of each word (after a Latin-1 space byte), as the Latin-1 character, so
/// `élan vital` gives `Ãv`.
fn initials(t: &str) -> String {
    let space = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xa0);
    let mut gap = true;
    let mut out = String::new();
    for b in t.bytes() {
        if space(b) {
            gap = true;
        } else if gap {
            out.push(char::from(b));
            gap = false;
        }
    }
    out
}

/// goutils `SwapCase` (Sprig's `swapcase`): upper and title case to lower, lower case to
/// title case after a space or at the start, else to upper case.
fn swap_case(t: &str) -> String {
    let mut space = true;
    t.chars()
        .map(|c| {
            if gounicode::is_upper(c) || gounicode::is_title(c) {
                space = false;
                gounicode::to_lower(c)
            } else if gounicode::is_lower(c) {
                let out = if space {
                    gounicode::to_title(c)
                } else {
                    gounicode::to_upper(c)
                };
                space = false;
                out
            } else {
                space = gounicode::is_space(c);
                c
            }
        })
        .collect()
}

/// goutils `Uncapitalize` (Sprig's `untitle`): the first character and each one after a
/// space lower-cased.
fn uncapitalize(t: &str) -> String {
    let mut next = true;
    t.chars()
        .map(|c| {
            if gounicode::is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                gounicode::to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

fn strings(f: &mut Funcs) {
    fn s1(f: &mut Funcs, name: &'static str, op: fn(&str) -> String) {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            Ok(Value::from(op(&s_ref(&a[0]))))
        });
    }
    // ASCII text with nothing to change (no byte `changes`) is the argument itself (as
    // Go's ToUpper/ToLower give it back): most `lower` calls are on names already lower case.
    fn case(f: &mut Funcs, name: &'static str, changes: fn(&u8) -> bool, op: fn(&str) -> String) {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let t = s_ref(&a[0]);
            if t.bytes().all(|b| b.is_ascii() && !changes(&b)) {
                return Ok(part_of(&a[0], &t));
            }
            Ok(Value::from(op(&t)))
        });
    }
    case(f, "upper", u8::is_ascii_lowercase, go_upper);
    case(f, "lower", u8::is_ascii_uppercase, go_lower);
    s1(f, "title", title_case);
    s1(f, "untitle", uncapitalize);
    f.add("trim", |_, a| {
        want(a, 1, "trim")?;
        let t = s_ref(&a[0]);
        Ok(part_of(&a[0], t.trim()))
    });
    f.add("nospace", |_, a| {
        want(a, 1, "nospace")?;
        let t = s_ref(&a[0]);
        Ok(match delete_white_space(&t) {
            Some(out) => Value::from(out),
            None => part_of(&a[0], &t),
        })
    });
    s1(f, "initials", initials);
    s1(f, "swapcase", swap_case);
    s1(f, "snakecase", |t| case_words(t, '_'));
    s1(f, "kebabcase", |t| case_words(t, '-'));
    s1(f, "camelcase", camel_case);
    f.add("toString", |_, a| {
        want(a, 1, "toString")?;
        Ok(match &a[0] {
            Value::Str(_) => a[0].clone(),
            other => Value::from(strval(other)),
        })
    });
    f.add("trimAll", |_, a| {
        want(a, 2, "trimAll")?;
        let cut: Vec<char> = s_ref(&a[0]).chars().collect();
        let t = s_ref(&a[1]);
        Ok(part_of(&a[1], t.trim_matches(cut.as_slice())))
    });
    f.add("trimall", |_, a| {
        want(a, 2, "trimall")?;
        let cut: Vec<char> = s_ref(&a[0]).chars().collect();
        let t = s_ref(&a[1]);
        Ok(part_of(&a[1], t.trim_matches(cut.as_slice())))
    });
    f.add("trimPrefix", |_, a| {
        want(a, 2, "trimPrefix")?;
        let (p, t) = (s_ref(&a[0]), s_ref(&a[1]));
        Ok(part_of(&a[1], t.strip_prefix(&*p).unwrap_or(&t)))
    });
    f.add("trimSuffix", |_, a| {
        want(a, 2, "trimSuffix")?;
        let (p, t) = (s_ref(&a[0]), s_ref(&a[1]));
        Ok(part_of(&a[1], t.strip_suffix(&*p).unwrap_or(&t)))
    });
    f.add("contains", |_, a| {
        want(a, 2, "contains")?;
        Ok(Value::Bool(s_ref(&a[1]).contains(&*s_ref(&a[0]))))
    });
    f.add("hasPrefix", |_, a| {
        want(a, 2, "hasPrefix")?;
        Ok(Value::Bool(s_ref(&a[1]).starts_with(&*s_ref(&a[0]))))
    });
    f.add("hasSuffix", |_, a| {
        want(a, 2, "hasSuffix")?;
        Ok(Value::Bool(s_ref(&a[1]).ends_with(&*s_ref(&a[0]))))
    });
    f.add("quote", |_, a| {
        // One argument (the usual `quote .x`): quoted from the borrowed text, with no list
        // of parts to join (a copy of the text, the list and the join for every call).
        if let [v] = a {
            return Ok(Value::from(if v.is_nil() {
                String::new()
            } else {
                go_quote(&s_ref(v))
            }));
        }
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !v.is_nil())
            .map(|v| go_quote(&s_ref(v)))
            .collect();
        Ok(Value::from(parts.join(" ")))
    });
    f.add("squote", |_, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !v.is_nil())
            .map(|v| format!("'{}'", strval(v)))
            .collect();
        Ok(Value::from(parts.join(" ")))
    });
    f.add("cat", |_, a| {
        let parts: Vec<String> = a.iter().filter(|v| !v.is_nil()).map(strval).collect();
        Ok(Value::from(parts.join(" ")))
    });
    f.add("indent", |_, a| {
        want(a, 2, "indent")?;
        let text = s_ref(&a[1]);
        bound_indent("indent", &a[0], &text)?;
        Ok(Value::from(indented("", &a[0], &text)))
    });
    f.add("nindent", |_, a| {
        want(a, 2, "nindent")?;
        let text = s_ref(&a[1]);
        bound_indent("nindent", &a[0], &text)?;
        Ok(Value::from(indented("\n", &a[0], &text)))
    });
    f.add("replace", |_, a| {
        want(a, 3, "replace")?;
        let (old, new, src) = (s_ref(&a[0]), s_ref(&a[1]), s_ref(&a[2]));
        Ok(if old.is_empty() {
            Value::from(go_replace_empty(&src, &new))
        } else if !src.contains(&*old) {
            // Nothing to replace: the text itself.
            part_of(&a[2], &src)
        } else {
            Value::from(src.replace(&*old, &new))
        })
    });
    f.add("repeat", |_, a| {
        want(a, 2, "repeat")?;
        let (n, text) = (to_i64(&a[0]).max(0), s(&a[1]));
        bound_text("repeat", n as u128 * text.len() as u128)?;
        Ok(Value::from(text.repeat(n as usize)))
    });
    f.add("substr", |_, a| {
        want(a, 3, "substr")?;
        let (start, end, t) = (to_i64(&a[0]), to_i64(&a[1]), s_ref(&a[2]));
        let b = t.as_bytes();
        let len = b.len() as i64;
        // Sprig's `substring` slices the bytes; a slice out of range is Go's panic, which
        // the template reports as the call's error.
        let oob = |m: String| Err(format!("runtime error: slice bounds out of range {m}"));
        let r = if start < 0 {
            if end < 0 {
                return oob(format!("[:{end}]"));
            }
            if end > len {
                return oob(format!("[:{end}] with length {len}"));
            }
            &b[..end as usize]
        } else if end < 0 || end > len {
            if start > len {
                return oob(format!("[{start}:{len}]"));
            }
            &b[start as usize..]
        } else {
            if start > end {
                return oob(format!("[{start}:{end}]"));
            }
            &b[start as usize..end as usize]
        };
        Ok(bytes_of(&a[2], r))
    });
    f.add("trunc", |_, a| {
        want(a, 2, "trunc")?;
        let (c, t) = (to_i64(&a[0]), s_ref(&a[1]));
        let len = t.len() as i64;
        let b = t.as_bytes();
        let r = if c < 0 && len + c > 0 {
            &b[(len + c) as usize..]
        } else if c >= 0 && len > c {
            &b[..c as usize]
        } else {
            b
        };
        Ok(bytes_of(&a[1], r))
    });
    f.add("abbrev", |_, a| {
        want(a, 2, "abbrev")?;
        let (w, t) = (to_i64(&a[0]), s(&a[1]));
        if w < 4 {
            return Ok(Value::from(t));
        }
        Ok(Value::from(abbreviate_full(&t, 0, w)))
    });
    f.add("abbrevboth", |_, a| {
        want(a, 3, "abbrevboth")?;
        let (left, right, t) = (to_i64(&a[0]), to_i64(&a[1]), s(&a[2]));
        if right < 4 || left > 0 && right < 7 {
            return Ok(Value::from(t));
        }
        Ok(Value::from(abbreviate_full(&t, left, right)))
    });
    f.add("wrap", |_, a| {
        want(a, 2, "wrap")?;
        Ok(Value::from(wrap_words(&s(&a[1]), to_i64(&a[0]), "", false)))
    });
    f.add("wrapWith", |_, a| {
        want(a, 3, "wrapWith")?;
        Ok(Value::from(wrap_words(
            &s(&a[2]),
            to_i64(&a[0]),
            &s(&a[1]),
            true,
        )))
    });
    f.add("plural", |_, a| {
        want(a, 3, "plural")?;
        Ok(if to_i64(&a[2]) == 1 {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    f.add("split", |_, a| {
        want(a, 2, "split")?;
        let (sep, t) = (s(&a[0]), s(&a[1]));
        let m: BTreeMap<String, Value> = go_split(&t, &sep, -1)
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::from(p)))
            .collect();
        Ok(Value::map(m))
    });
    f.add("splitn", |_, a| {
        want(a, 3, "splitn")?;
        let (sep, n, t) = (s(&a[0]), to_i64(&a[1]), s(&a[2]));
        let m: BTreeMap<String, Value> = go_split(&t, &sep, n)
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::from(p)))
            .collect();
        Ok(Value::map(m))
    });
    f.add("splitList", |_, a| {
        want(a, 2, "splitList")?;
        Ok(str_list(go_split(&s(&a[1]), &s(&a[0]), -1)))
    });
    f.add("join", |_, a| {
        want(a, 2, "join")?;
        Ok(Value::from(strslice(&a[1]).join(&s(&a[0]))))
    });
    f.add("sortAlpha", |_, a| {
        want(a, 1, "sortAlpha")?;
        let mut v = strslice(&a[0]);
        v.sort();
        Ok(str_list(v))
    });
    f.add("toStrings", |_, a| {
        want(a, 1, "toStrings")?;
        Ok(str_list(strslice(&a[0])))
    });
    f.add("hello", |_, _| Ok(Value::from("Hello!")));
}

/// Go's `strings.Split`/`SplitN` (an empty separator splits into UTF-8 characters).
fn go_split(t: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let mut v: Vec<String> = t.chars().map(String::from).collect();
        if n > 0 && v.len() > n as usize {
            let rest: String = v[n as usize - 1..].concat();
            v.truncate(n as usize - 1);
            v.push(rest);
        }
        return v;
    }
    if n < 0 {
        t.split(sep).map(str::to_string).collect()
    } else {
        t.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

/// Go's `strings.Replace` with an empty `old`: inserts `new` around every character.
fn go_replace_empty(src: &str, new: &str) -> String {
    let mut out = String::from(new);
    for c in src.chars() {
        out.push(c);
        out.push_str(new);
    }
    out
}

/// huandu/xstrings `ToSnakeCase`/`ToKebabCase` (Sprig's `snakecase`, `kebabcase`): the text
/// read as words (runs of connectors `-` `_` blanks, of punctuation, of digits, upper-case
/// runs, letters, other characters), each connector written as `sep` (a run keeps its
/// length: `a--b` is `a__b`), `sep` put between two words that touch (`fooBar` is
/// `foo_bar`, `a+b` `a_+_b`), none next to punctuation (`foo.Bar` is `foo.bar`), and digits
/// joined to the word before when a letter word does not follow them (`Bld4Floor3rd` is
/// `bld4_floor_3rd`, `http2xx` `http_2xx`). Upper-case letters are lower-cased.
fn case_words(t: &str, sep: char) -> String {
    use XWord::*;
    fn lower(out: &mut String, wt: XWord, word: &str, sep: char) {
        if wt != Upper && wt != Connector {
            out.push_str(word);
            return;
        }
        for c in word.chars() {
            if xconnector(c) {
                out.push(sep);
            } else if gounicode::is_upper(c) {
                out.push(gounicode::to_lower(c));
            } else {
                out.push(c);
            }
        }
    }
    let mut out = String::with_capacity(t.len() + 4);
    if t.is_empty() {
        return out;
    }
    let (mut wt, mut word, mut rest) = next_xword(t);
    while !rest.is_empty() {
        if wt != Connector {
            lower(&mut out, wt, word, sep);
        }
        let (prev, last) = (wt, word);
        (wt, word, rest) = next_xword(rest);
        match prev {
            Number => {
                while wt == Alphabet || wt == Number {
                    lower(&mut out, wt, word, sep);
                    (wt, word, rest) = next_xword(rest);
                }
                if wt != Invalid && wt != Punct && wt != Connector {
                    out.push(sep);
                }
            }
            Connector => lower(&mut out, prev, last, sep),
            Punct => {}
            _ => {
                if wt != Number {
                    if wt != Connector && wt != Punct {
                        out.push(sep);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, rest) = next_xword(rest);
                // A number ends the word before it ("Bld4Floor" is "bld4_floor") unless
                // lower-case letters follow it ("HTTP2xx" is "http_2xx").
                if wt != Alphabet {
                    lower(&mut out, Number, last, sep);
                    if wt != Connector && wt != Punct {
                        out.push(sep);
                    }
                    continue;
                }
                out.push(sep);
                lower(&mut out, Number, last, sep);
                while wt == Alphabet || wt == Number {
                    lower(&mut out, wt, word, sep);
                    (wt, word, rest) = next_xword(rest);
                }
                if wt != Invalid && wt != Connector && wt != Punct {
                    out.push(sep);
                }
            }
        }
    }
    lower(&mut out, wt, word, sep);
    out
}

/// xstrings' word types (`nextWord`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum XWord {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings' `isConnector`.
fn xconnector(c: char) -> bool {
    c == '-' || c == '_' || gounicode::is_space(c)
}

/// xstrings' `isAlphabet`: a letter, but not a CJK ideograph.
fn xalphabet(c: char) -> bool {
    gounicode::is_letter(c)
        && !matches!(c as u32, 0x4E00..=0x9FCC | 0x3400..=0x4D85 | 0x20000..=0x2B81D)
}

/// xstrings' `nextValidRune`: the next character that is not U+FFFD (Go's decoding error,
/// which xstrings skips) and the bytes up to its end; `prev` and all of `s` if none.
fn next_valid(s: &str, prev: char) -> (char, usize) {
    let mut size = 0;
    for c in s.chars() {
        size += c.len_utf8();
        if c != '\u{FFFD}' {
            return (c, size);
        }
    }
    (prev, size)
}

/// xstrings' `nextWord`: the type of the word `s` starts with, the word and the rest.
fn next_xword(s: &str) -> (XWord, &str, &str) {
    use XWord::*;
    if s.is_empty() {
        return (Invalid, "", "");
    }
    let (mut r, mut size) = next_valid(s, '\u{FFFD}');
    let mut offset = size;
    if r == '\u{FFFD}' {
        return (Invalid, &s[..offset], &s[offset..]);
    }
    let mut rest = &s[size..];
    // Extends the word over the characters `keep` takes.
    let extend =
        |rest: &mut &str, r: &mut char, offset: &mut usize, keep: &dyn Fn(char) -> bool| {
            while !rest.is_empty() {
                let (c, n) = next_valid(rest, *r);
                *r = c;
                if !keep(c) {
                    break;
                }
                *offset += n;
                *rest = &rest[n..];
            }
        };
    let wt = if xconnector(r) {
        extend(&mut rest, &mut r, &mut offset, &xconnector);
        Connector
    } else if gounicode::is_punct(r) {
        extend(&mut rest, &mut r, &mut offset, &gounicode::is_punct);
        Punct
    } else if gounicode::is_upper(r) {
        if !rest.is_empty() {
            (r, size) = next_valid(rest, r);
            if gounicode::is_upper(r) {
                let mut prev_size = size;
                offset += size;
                rest = &rest[size..];
                while !rest.is_empty() {
                    (r, size) = next_valid(rest, r);
                    if !gounicode::is_upper(r) {
                        break;
                    }
                    prev_size = size;
                    offset += size;
                    rest = &rest[size..];
                }
                // "HTTPStatus" is "HTTP" and "Status": the last capital starts the next word.
                if !rest.is_empty() && xalphabet(r) {
                    offset -= prev_size;
                    rest = &s[offset..];
                }
            } else if xalphabet(r) {
                offset += size;
                rest = &rest[size..];
                extend(&mut rest, &mut r, &mut offset, &|c| {
                    xalphabet(c) && !gounicode::is_upper(c)
                });
            }
        }
        Upper
    } else if xalphabet(r) {
        extend(&mut rest, &mut r, &mut offset, &|c| {
            xalphabet(c) && !gounicode::is_upper(c)
        });
        Alphabet
    } else if gounicode::is_number(r) {
        extend(&mut rest, &mut r, &mut offset, &gounicode::is_number);
        Number
    } else {
        extend(&mut rest, &mut r, &mut offset, &|c| {
            !(xconnector(c) || xalphabet(c) || gounicode::is_number(c) || gounicode::is_punct(c))
        });
        Other
    };
    (wt, &s[..offset], rest)
}

/// goutils `WrapCustom` (Sprig's `wrap`, and `wrapWith` with `long` true): lines broken at
/// the last space within `width` bytes, spaces at a line's start dropped; a word longer
/// than the width is cut at the width when `long` (Go cuts bytes: a cut inside a character
/// leaves U+FFFD here), else kept whole up to the next space.
fn wrap_words(t: &str, width: i64, nl: &str, long: bool) -> String {
    if t.is_empty() {
        return String::new();
    }
    let nl = if nl.is_empty() { "\n" } else { nl };
    let width = width.max(1) as usize;
    let b = t.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len() + 8);
    let mut offset = 0;
    while b.len() - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (width + offset + 1).min(b.len());
        if let Some(i) = b[offset..end].iter().rposition(|&c| c == b' ') {
            out.extend_from_slice(&b[offset..offset + i]);
            out.extend_from_slice(nl.as_bytes());
            offset += i + 1;
        } else if long {
            out.extend_from_slice(&b[offset..offset + width]);
            out.extend_from_slice(nl.as_bytes());
            offset += width;
        } else {
            let end = width + offset;
            match b[end..].iter().position(|&c| c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = b.len();
                }
                Some(i) => {
                    out.extend_from_slice(&b[offset..end + i]);
                    out.extend_from_slice(nl.as_bytes());
                    offset = end + i + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

fn lists(f: &mut Funcs) {
    f.add("list", |_, a| Ok(list(a.to_vec())));
    f.add("tuple", |_, a| Ok(list(a.to_vec())));
    for (name, must) in [("first", false), ("mustFirst", true)] {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let l = list_arg(&a[0], name, must)?;
            Ok(l.first().cloned().unwrap_or(Value::Nil))
        });
    }
    for (name, must) in [("last", false), ("mustLast", true)] {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let l = list_arg(&a[0], name, must)?;
            Ok(l.last().cloned().unwrap_or(Value::Nil))
        });
    }
    for (name, must) in [("rest", false), ("mustRest", true)] {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let l = list_arg(&a[0], name, must)?;
            Ok(if l.is_empty() {
                Value::Nil
            } else {
                list(l[1..].to_vec())
            })
        });
    }
    for (name, must) in [("initial", false), ("mustInitial", true)] {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let l = list_arg(&a[0], name, must)?;
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
        f.add(name, move |_, a| {
            want(a, 2, name)?;
            let mut l = list_arg(&a[0], name, must)?;
            l.push(a[1].clone());
            Ok(list(l))
        });
    }
    for (name, must) in [("prepend", false), ("mustPrepend", true)] {
        f.add(name, move |_, a| {
            want(a, 2, name)?;
            let mut l = list_arg(&a[0], name, must)?;
            l.insert(0, a[1].clone());
            Ok(list(l))
        });
    }
    for (name, must) in [("reverse", false), ("mustReverse", true)] {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let mut l = list_arg(&a[0], name, must)?;
            l.reverse();
            Ok(list(l))
        });
    }
    for (name, must) in [("uniq", false), ("mustUniq", true)] {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let l = list_arg(&a[0], name, must)?;
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
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let l = list_arg(&a[0], name, must)?;
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
        f.add(name, move |_, a| {
            want(a, 2, name)?;
            let l = list_arg(&a[1], name, must)?;
            Ok(Value::Bool(l.iter().any(|v| v.deep_eq(&a[0]))))
        });
    }
    for (name, must) in [("slice", false), ("mustSlice", true)] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            if let Value::Str(st) = &a[0] {
                let b = st.as_bytes();
                let i = a.get(1).map_or(0, to_i64) as usize;
                let j = a.get(2).map_or(b.len() as i64, to_i64) as usize;
                if i > j || j > b.len() {
                    return Err(format!("error calling slice: index out of range: {j}"));
                }
                return Ok(Value::from(String::from_utf8_lossy(&b[i..j]).into_owned()));
            }
            let l = list_arg(&a[0], name, must)?;
            let i = a.get(1).map_or(0, to_i64).max(0) as usize;
            let j = a.get(2).map_or(l.len() as i64, to_i64).max(0) as usize;
            if i > j || j > l.len() {
                return Err(format!("error calling slice: index out of range: {j}"));
            }
            Ok(list(l[i..j].to_vec()))
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
        f.add(name, move |_, a| {
            want(a, 2, name)?;
            let size = to_i64(&a[0]).max(1) as usize;
            let l = list_arg(&a[1], name, must)?;
            Ok(list(l.chunks(size).map(|c| list(c.to_vec())).collect()))
        });
    }
    f.add("until", |_, a| {
        want(a, 1, "until")?;
        let n = to_i64(&a[0]);
        bound_items("until", n.unsigned_abs() as u128)?;
        let v: Vec<Value> = if n >= 0 {
            (0..n).map(Value::Int).collect()
        } else {
            (n + 1..=0).rev().map(Value::Int).collect()
        };
        Ok(list(v))
    });
    f.add("untilStep", |_, a| {
        want(a, 3, "untilStep")?;
        let (start, stop, step) = (to_i64(&a[0]), to_i64(&a[1]), to_i64(&a[2]));
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

fn dicts(f: &mut Funcs) {
    f.add("dict", |_, a| {
        let m = new_map();
        for pair in a.chunks(2) {
            let k = strval(&pair[0]);
            let v = pair.get(1).cloned().unwrap_or(Value::from(""));
            m.borrow_mut().insert(k, v);
        }
        Ok(Value::Map(m))
    });
    f.add("get", |_, a| {
        want(a, 2, "get")?;
        let m = as_map(&a[0], "get")?;
        let v = m.borrow().get(s_ref(&a[1]).as_ref()).cloned();
        Ok(v.unwrap_or(Value::from("")))
    });
    f.add("set", |_, a| {
        want(a, 3, "set")?;
        let m = as_map(&a[0], "set")?;
        m.borrow_mut().insert(s(&a[1]), a[2].clone());
        Ok(Value::Map(m))
    });
    f.add("unset", |_, a| {
        want(a, 2, "unset")?;
        let m = as_map(&a[0], "unset")?;
        m.borrow_mut().remove(s_ref(&a[1]).as_ref());
        Ok(Value::Map(m))
    });
    f.add("hasKey", |_, a| {
        want(a, 2, "hasKey")?;
        let m = as_map(&a[0], "hasKey")?;
        let has = m.borrow().contains_key(s_ref(&a[1]).as_ref());
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
            out.extend(m.borrow().keys().cloned());
        }
        Ok(str_list(out))
    });
    f.add("values", |_, a| {
        want(a, 1, "values")?;
        let m = as_map(&a[0], "values")?;
        let v: Vec<Value> = m.borrow().values().cloned().collect();
        Ok(list(v))
    });
    f.add("pick", |_, a| {
        want_min(a, 1, "pick")?;
        let m = as_map(&a[0], "pick")?;
        let out = new_map();
        for k in &a[1..] {
            let k = s(k);
            if let Some(v) = m.borrow().get(&k) {
                out.borrow_mut().insert(k, v.clone());
            }
        }
        Ok(Value::Map(out))
    });
    f.add("omit", |_, a| {
        want_min(a, 1, "omit")?;
        let m = as_map(&a[0], "omit")?;
        let drop: Vec<String> = a[1..].iter().map(s).collect();
        let out: BTreeMap<String, Value> = m
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
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            Ok(a[0].deep_copy())
        });
    }
    f.add("dig", |_, a| {
        want_min(a, 3, "dig")?;
        let d = as_map(&a[a.len() - 1], "dig")?;
        let def = a[a.len() - 2].clone();
        let keys: Vec<String> = a[..a.len() - 2].iter().map(s).collect();
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
    f.add("empty", |_, a| {
        want(a, 1, "empty")?;
        Ok(Value::Bool(empty(&a[0])))
    });
    f.add("coalesce", |_, a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(Value::Nil))
    });
    f.add("all", |_, a| Ok(Value::Bool(a.iter().all(|v| !empty(v)))));
    f.add("any", |_, a| Ok(Value::Bool(a.iter().any(|v| !empty(v)))));
    f.add("ternary", |_, a| {
        want(a, 3, "ternary")?;
        Ok(if a[2].truthy() {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
}

fn math(f: &mut Funcs) {
    fn int2(f: &mut Funcs, name: &'static str, op: fn(i64, i64) -> Result<i64, String>) {
        f.add(name, move |_, a| {
            want(a, 2, name)?;
            Ok(Value::Int(op(to_i64(&a[0]), to_i64(&a[1]))?))
        });
    }
    f.add("add", |_, a| {
        Ok(Value::Int(
            a.iter().map(to_i64).fold(0i64, i64::wrapping_add),
        ))
    });
    f.add("mul", |_, a| {
        Ok(Value::Int(
            a.iter().map(to_i64).fold(1i64, i64::wrapping_mul),
        ))
    });
    f.add("add1", |_, a| {
        want(a, 1, "add1")?;
        Ok(Value::Int(to_i64(&a[0]) + 1))
    });
    int2(f, "sub", |x, y| Ok(x.wrapping_sub(y)));
    int2(f, "div", |x, y| {
        if y == 0 {
            Err("runtime error: integer divide by zero".into())
        } else {
            Ok(x / y)
        }
    });
    int2(f, "mod", |x, y| {
        if y == 0 {
            Err("runtime error: integer divide by zero".into())
        } else {
            Ok(x % y)
        }
    });
    for name in ["max", "biggest"] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            Ok(Value::Int(a.iter().map(to_i64).max().unwrap_or(0)))
        });
    }
    f.add("min", |_, a| {
        want_min(a, 1, "min")?;
        Ok(Value::Int(a.iter().map(to_i64).min().unwrap_or(0)))
    });
    // Decimal arithmetic, as Sprig's execDecimalOp (funcs/decimal.rs).
    fn decimal_op(first: f64, rest: &[Value], op: decimal::Op) -> Result<Value, String> {
        let rest: Vec<f64> = rest.iter().map(to_f64).collect();
        decimal::exec(first, &rest, op).map(Value::Float)
    }
    f.add("addf", |_, a| decimal_op(0.0, a, decimal::Op::Add));
    f.add("add1f", |_, a| {
        want(a, 1, "add1f")?;
        decimal_op(to_f64(&a[0]), &[Value::Int(1)], decimal::Op::Add)
    });
    for (name, op) in [
        ("subf", decimal::Op::Sub),
        ("mulf", decimal::Op::Mul),
        ("divf", decimal::Op::Div),
    ] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            decimal_op(to_f64(&a[0]), &a[1..], op)
        });
    }
    f.add("maxf", |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::NEG_INFINITY, f64::max),
        ))
    });
    f.add("minf", |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::INFINITY, f64::min),
        ))
    });
    f.add("floor", |_, a| {
        want(a, 1, "floor")?;
        Ok(Value::Float(to_f64(&a[0]).floor()))
    });
    f.add("ceil", |_, a| {
        want(a, 1, "ceil")?;
        Ok(Value::Float(to_f64(&a[0]).ceil()))
    });
    f.add("round", |_, a| {
        want_min(a, 2, "round")?;
        let (x, places) = (to_f64(&a[0]), to_i64(&a[1]));
        let p = 10f64.powi(places as i32);
        Ok(Value::Float((x * p).round() / p))
    });
    f.add("int", |_, a| {
        want(a, 1, "int")?;
        Ok(Value::Int(to_i64(&a[0])))
    });
    f.add("int64", |_, a| {
        want(a, 1, "int64")?;
        Ok(Value::Int(to_i64(&a[0])))
    });
    f.add("float64", |_, a| {
        want(a, 1, "float64")?;
        Ok(Value::Float(to_f64(&a[0])))
    });
    f.add("atoi", |_, a| {
        want(a, 1, "atoi")?;
        // strconv.Atoi: no blanks around the digits (`" 12"` is 0).
        Ok(Value::Int(s(&a[0]).parse().unwrap_or(0)))
    });
    f.add("toDecimal", |_, a| {
        want(a, 1, "toDecimal")?;
        Ok(Value::Int(
            i64::from_str_radix(&strval(&a[0]), 8).unwrap_or(0),
        ))
    });
}

fn encoding(f: &mut Funcs) {
    use crate::encode;
    f.add("b64enc", |_, a| {
        want(a, 1, "b64enc")?;
        Ok(Value::from(encode::b64(&encode::go_bytes(&strval(&a[0])))))
    });
    f.add("b64dec", |_, a| {
        want(a, 1, "b64dec")?;
        // Sprig gives the decoding error as the result, not as an error.
        Ok(Value::from(match encode::b64_decode(&s_ref(&a[0])) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(at) => format!("illegal base64 data at input byte {at}"),
        }))
    });
    f.add("b32enc", |_, a| {
        want(a, 1, "b32enc")?;
        Ok(Value::from(encode::b32(&encode::go_bytes(&strval(&a[0])))))
    });
    f.add("b32dec", |_, a| {
        want(a, 1, "b32dec")?;
        Ok(Value::from(match encode::b32_decode(&s_ref(&a[0])) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(at) => format!("illegal base32 data at input byte {at}"),
        }))
    });
    f.add("sha256sum", |_, a| {
        want(a, 1, "sha256sum")?;
        Ok(Value::from(kiln_base::digest::sha256_hex(
            &encode::go_bytes(&s_ref(&a[0])),
        )))
    });
    f.add("sha512sum", |_, a| {
        want(a, 1, "sha512sum")?;
        use sha2::Digest;
        Ok(Value::from(encode::hex(&sha2::Sha512::digest(
            encode::go_bytes(&s_ref(&a[0])),
        ))))
    });
    f.add("sha1sum", |_, a| {
        want(a, 1, "sha1sum")?;
        Ok(Value::from(encode::hex(&encode::sha1(&encode::go_bytes(
            &s_ref(&a[0]),
        )))))
    });
    f.add("adler32sum", |_, a| {
        want(a, 1, "adler32sum")?;
        Ok(Value::from(
            encode::adler32(&encode::go_bytes(&s_ref(&a[0]))).to_string(),
        ))
    });
    f.add("urlParse", |_, a| {
        want(a, 1, "urlParse")?;
        Ok(encode::url_parse(&s_ref(&a[0])))
    });
    f.add("urlJoin", |_, a| {
        want(a, 1, "urlJoin")?;
        let m = as_map(&a[0], "urlJoin")?;
        Ok(Value::from(encode::url_join(&m.borrow())))
    });
    f.add("getHostByName", |_, _| Ok(Value::from("")));
}

fn types(f: &mut Funcs) {
    f.add("typeOf", |_, a| {
        want(a, 1, "typeOf")?;
        Ok(Value::from(a[0].type_name()))
    });
    f.add("typeIs", |_, a| {
        want(a, 2, "typeIs")?;
        Ok(Value::Bool(s_ref(&a[0]) == a[1].type_name()))
    });
    f.add("typeIsLike", |_, a| {
        want(a, 2, "typeIsLike")?;
        let t = s(&a[0]);
        let n = a[1].type_name();
        Ok(Value::Bool(t == n || t == format!("*{n}")))
    });
    f.add("kindOf", |_, a| {
        want(a, 1, "kindOf")?;
        Ok(Value::from(a[0].kind()))
    });
    f.add("kindIs", |_, a| {
        want(a, 2, "kindIs")?;
        Ok(Value::Bool(s_ref(&a[0]) == a[1].kind()))
    });
    f.add("deepEqual", |_, a| {
        want(a, 2, "deepEqual")?;
        Ok(Value::Bool(a[0].deep_eq(&a[1])))
    });
}

/// The size `indent` would make: a pad per line.
fn bound_indent(name: &str, n: &Value, text: &str) -> Result<(), String> {
    let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count() as u128 + 1;
    bound_text(name, to_i64(n).max(0) as u128 * lines + text.len() as u128)
}

/// Sprig's `indent` (`pad + strings.Replace(text, "\n", "\n"+pad, -1)`) after `lead`, written
/// once into a string of its final size (the replace, its pattern and the final format were
/// three strings, a visible part of charts that `nindent` every block).
fn indented(lead: &str, n: &Value, text: &str) -> String {
    let pad = " ".repeat(to_i64(n).max(0) as usize);
    // Room for the text and a few padded lines; more lines grow it (counting them first was
    // a pass of its own).
    let mut out = String::with_capacity(lead.len() + pad.len() * 8 + text.len());
    out.push_str(lead);
    out.push_str(&pad);
    // Newlines found by a byte loop: `find('\n')`'s char searcher cost more per (short)
    // line than the bytes it skipped.
    let mut start = 0;
    for (i, &c) in text.as_bytes().iter().enumerate() {
        if c == b'\n' {
            out.push_str(&text[start..=i]);
            out.push_str(&pad);
            start = i + 1;
        }
    }
    out.push_str(&text[start..]);
    out
}

/// A Go regexp (RE2 syntax) compiled with the `regex` crate (see [`goregex`]).
///
/// Compiled once per pattern and execution (render), not across renders: charts call
/// `regexMatch`/`regexReplaceAll` with the same few literal patterns for every resource
/// (bitnami's common library in every name), and compiling was 13 % of a
/// bitnami-postgresql render. Kept behind an `Rc`, not cloned: a `Regex` clone gets a pool
/// of its own, and making the clone's search cache on every call was most of a match.
/// Only successes are kept, so an invalid pattern fails on every call.
fn regex_of(ex: &mut Exec, p: &str) -> Result<Rc<regex::Regex>, String> {
    if let Some(r) = ex.regexes.get(p) {
        return Ok(r.clone());
    }
    let r = Rc::new(
        regex::Regex::new(
            &goregex::translate(p).map_err(|e| format!("error parsing regexp: {e}"))?,
        )
        .map_err(|e| format!("error parsing regexp: {e}"))?,
    );
    // Bounded: a chart that builds patterns from data must not grow it without end.
    if ex.regexes.len() >= 512 {
        ex.regexes.clear();
    }
    ex.regexes.insert(p.to_string(), r.clone());
    Ok(r)
}

/// [`regex_of`] for an ASCII pattern searched in ASCII text: compiled with Unicode off. On
/// ASCII text that matches as the Unicode one does (every byte is a character; an ASCII
/// pattern's literals and case folding meet only ASCII there), and it compiles for a
/// fraction of the cost: a Unicode class such as `[^}]` or `[^a-z]` is compiled into UTF-8
/// automata, forward and reverse. It starts in regex-lite and moves to the `regex` crate
/// once it has been searched enough ([`goregex::AsciiSlot`]). `None` when pattern or text is
/// not ASCII or the pattern needs Unicode (`\pL`); the caller then uses [`regex_of`], which
/// also reports a pattern that does not parse. Kept, failures too, for one execution like
/// `regex_of`'s.
fn ascii_regex_of(ex: &mut Exec, p: &str, text: &str) -> Option<goregex::AsciiRegex> {
    if !p.is_ascii() || !text.is_ascii() {
        return None;
    }
    if let Some(slot) = ex.ascii_regexes.get_mut(p) {
        return slot.search(p, text.len());
    }
    let mut slot = goregex::AsciiSlot::new(p, text.len());
    let r = slot.search(p, text.len());
    if ex.ascii_regexes.len() >= 512 {
        ex.ascii_regexes.clear();
    }
    ex.ascii_regexes.insert(p.to_string(), slot);
    r
}

/// Go's `Regexp.Expand` template syntax (`$1`, `${name}`) is the `regex` crate's.
fn regex(f: &mut Funcs) {
    for (name, must) in [("regexMatch", false), ("mustRegexMatch", true)] {
        f.add(name, move |ex: &mut Exec, a| {
            want(a, 2, name)?;
            let (p, t) = (s_ref(&a[0]), s_ref(&a[1]));
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(Value::Bool(r.is_match(&t)));
            }
            match regex_of(ex, &p) {
                Ok(r) => Ok(Value::Bool(r.is_match(&t))),
                Err(e) if must => Err(e),
                Err(_) => Ok(Value::Bool(false)),
            }
        });
    }
    for name in ["regexFind", "mustRegexFind"] {
        f.add(name, move |ex: &mut Exec, a| {
            want(a, 2, name)?;
            let (p, t) = (s_ref(&a[0]), s_ref(&a[1]));
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(Value::from(r.find(&t).unwrap_or("")));
            }
            let r = regex_of(ex, &p)?;
            Ok(Value::from(r.find(&t).map_or("", |m| m.as_str())))
        });
    }
    for name in ["regexFindAll", "mustRegexFindAll"] {
        f.add(name, move |ex: &mut Exec, a| {
            want(a, 3, name)?;
            let (p, t) = (s_ref(&a[0]), s_ref(&a[1]));
            let n = to_i64(&a[2]);
            let take = if n < 0 { usize::MAX } else { n as usize };
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(str_list(r.find_all(&t, take)));
            }
            let r = regex_of(ex, &p)?;
            let it = r.find_iter(&t).map(|m| m.as_str().to_string());
            Ok(str_list(it.take(take).collect()))
        });
    }
    for (name, literal) in [
        ("regexReplaceAll", false),
        ("mustRegexReplaceAll", false),
        ("regexReplaceAllLiteral", true),
        ("mustRegexReplaceAllLiteral", true),
    ] {
        f.add(name, move |ex: &mut Exec, a| {
            want(a, 3, name)?;
            let (p, t, with) = (s_ref(&a[0]), s_ref(&a[1]), s_ref(&a[2]));
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(Value::from(r.replace_all(&t, &with, literal)));
            }
            let r = regex_of(ex, &p)?;
            let out = if literal {
                r.replace_all(&t, regex::NoExpand(&with))
            } else {
                r.replace_all(&t, &*with)
            };
            Ok(Value::from(out.into_owned()))
        });
    }
    for name in ["regexSplit", "mustRegexSplit"] {
        f.add(name, move |ex: &mut Exec, a| {
            want(a, 3, name)?;
            let (p, t) = (s_ref(&a[0]), s_ref(&a[1]));
            let n = to_i64(&a[2]);
            let take = usize::try_from(n).unwrap_or(usize::MAX);
            let ranges = match ascii_regex_of(ex, &p, &t) {
                Some(r) => r.ranges(&t, take),
                None => regex_of(ex, &p)?
                    .find_iter(&t)
                    .take(take)
                    .map(|m| m.range())
                    .collect(),
            };
            Ok(str_list(goregex::go_split(&p, &t, ranges, n)))
        });
    }
    f.add("regexQuoteMeta", |_, a| {
        want(a, 1, "regexQuoteMeta")?;
        Ok(Value::from(goregex::quote_meta(&s_ref(&a[0]))))
    });
}

fn paths(f: &mut Funcs) {
    fn p1(f: &mut Funcs, name: &'static str, op: fn(&str) -> Value) {
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            Ok(op(&s_ref(&a[0])))
        });
    }
    for (b, d, c, e, abs) in [
        ("base", "dir", "clean", "ext", "isAbs"),
        ("osBase", "osDir", "osClean", "osExt", "osIsAbs"),
    ] {
        p1(f, b, |p| Value::from(crate::encode::path_base(p)));
        p1(f, d, |p| Value::from(crate::encode::path_dir(p)));
        p1(f, c, |p| Value::from(crate::encode::path_clean(p)));
        p1(f, e, |p| {
            let base = p.rsplit('/').next().unwrap_or("");
            Value::from(
                base.rfind('.')
                    .map(|i| base[i..].to_string())
                    .unwrap_or_default(),
            )
        });
        p1(f, abs, |p| Value::Bool(p.starts_with('/')));
    }
}

fn semvers(f: &mut Funcs) {
    f.add("semver", |_, a| {
        want(a, 1, "semver")?;
        let v = semver::Version::parse(&s_ref(&a[0]))?;
        Ok(semver_value(&v))
    });
    f.add("semverCompare", |_, a| {
        want(a, 2, "semverCompare")?;
        // Sprig reads the constraint first: a bad one is the error even with a bad version.
        let c = semver::Constraints::parse(&s_ref(&a[0]))?;
        let v = semver::Version::parse(&s_ref(&a[1]))?;
        Ok(Value::Bool(c.check(&v)))
    });
}

struct SemverObj(semver::Version);

impl crate::template::value::Object for SemverObj {
    fn type_name(&self) -> &str {
        "*semver.Version"
    }
    fn arity(&self, name: &str) -> Option<usize> {
        (name == "Compare").then_some(1)
    }
    fn field(&self, name: &str) -> Option<Value> {
        let v = &self.0;
        Some(match name {
            "Major" => Value::Int(v.major as i64),
            "Minor" => Value::Int(v.minor as i64),
            "Patch" => Value::Int(v.patch as i64),
            "Prerelease" => Value::from(v.pre.clone()),
            "Metadata" => Value::from(v.meta.clone()),
            "Original" => Value::from(v.original.clone()),
            "String" => Value::from(self.display()),
            _ => return None,
        })
    }
    fn call(
        &self,
        _: &crate::template::value::Cx,
        name: &str,
        args: &[Value],
    ) -> Option<Result<Value, String>> {
        match name {
            "Compare" => {
                let other = match args.first() {
                    Some(Value::Object(o)) => semver::Version::parse(&o.display()),
                    Some(v) => semver::Version::parse(&strval(v)),
                    None => return Some(Err("Compare needs a version".into())),
                };
                Some(other.map(|o| {
                    Value::Int(match self.0.compare(&o) {
                        std::cmp::Ordering::Less => -1,
                        std::cmp::Ordering::Equal => 0,
                        std::cmp::Ordering::Greater => 1,
                    })
                }))
            }
            _ => None,
        }
    }
    fn display(&self) -> String {
        self.0.to_string()
    }
}

fn semver_value(v: &semver::Version) -> Value {
    Value::Object(Rc::new(SemverObj(v.clone())))
}

fn random(f: &mut Funcs, seed: Rc<RefCell<Seed>>) {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const NUM: &[u8] = b"0123456789";
    let ascii: Vec<u8> = (32u8..127).collect();
    for (name, alphabet) in [
        ("randAlphaNum", ALNUM.to_vec()),
        ("randAlpha", ALPHA.to_vec()),
        ("randNumeric", NUM.to_vec()),
        ("randAscii", ascii),
    ] {
        let seed = seed.clone();
        f.add(name, move |_, a| {
            want(a, 1, name)?;
            let n = to_i64(&a[0]).max(0);
            bound_text(name, n as u128)?;
            Ok(Value::from(
                seed.borrow_mut().string_from(&alphabet, n as usize),
            ))
        });
    }
    let sd = seed.clone();
    f.add("randInt", move |_, a| {
        want(a, 2, "randInt")?;
        let (lo, hi) = (to_i64(&a[0]), to_i64(&a[1]));
        Ok(Value::Int(
            lo + sd.borrow_mut().below((hi - lo).max(1) as u64) as i64,
        ))
    });
    let sd = seed.clone();
    f.add("randBytes", move |_, a| {
        want(a, 1, "randBytes")?;
        let b = sd.borrow_mut().bytes(to_i64(&a[0]).max(0) as usize);
        Ok(Value::from(crate::encode::b64(&b)))
    });
    let sd = seed.clone();
    f.add("shuffle", move |_, a| {
        want(a, 1, "shuffle")?;
        let mut c: Vec<char> = s(&a[0]).chars().collect();
        let mut r = sd.borrow_mut();
        for i in (1..c.len()).rev() {
            let j = r.below(i as u64 + 1) as usize;
            c.swap(i, j);
        }
        Ok(Value::from(c.into_iter().collect::<String>()))
    });
    let sd = seed.clone();
    f.add("uuidv4", move |_, _| {
        let mut b = sd.borrow_mut().bytes(16);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h = crate::encode::hex(&b);
        Ok(Value::from(format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )))
    });
    crate::certs::register(f, seed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::exec::{Exec, TemplateSet};
    use crate::template::parse;

    /// Executes `text` with every function registered, dot nil.
    fn run(text: &str) -> Result<String, String> {
        run_with(text).and_then(|(out, _)| out)
    }

    /// [`run`] after the parse, and the execution it ran in.
    fn run_with(text: &str) -> Result<(Result<String, String>, Exec<'static>), String> {
        let mut funcs = Funcs::default();
        register(&mut funcs, Rc::new(RefCell::new(Seed::new(1))));
        let funcs = Rc::new(funcs);
        let is_func = |n: &str| funcs.id(n);
        let parsed = parse::parse("t", text, &is_func).map_err(|e| e.to_string())?;
        let mut set = TemplateSet::default();
        set.add("t", "t", parsed);
        let mut ex = Exec::new(Rc::new(set), funcs.clone(), Rc::new(()));
        Ok((ex.execute("t", Value::Nil).map_err(|e| e.to_string()), ex))
    }

    /// A list or text past kiln's bounds is an error naming the function, before anything
    /// is allocated (Helm's process would run out of memory); a sequence at the end of
    /// int64 stops there instead of wrapping around forever.
    #[test]
    fn lists_and_texts_past_the_bounds_are_errors() {
        for (text, name) in [
            ("{{ until 100000000000 }}", "until"),
            ("{{ until -100000000000 }}", "until"),
            ("{{ untilStep 0 100000000000 3 }}", "untilStep"),
            ("{{ seq 1 1000000000 }}", "seq"),
            ("{{ repeat 1000000000 \"ab\" }}", "repeat"),
            ("{{ indent 100000000 \"a\\nb\\nc\" }}", "indent"),
            ("{{ nindent 300000000 \"a\" }}", "nindent"),
            ("{{ randAlphaNum 1000000000 }}", "randAlphaNum"),
        ] {
            let e = run(text).unwrap_err();
            assert!(
                e.contains(&format!("error calling {name}: {name}: a "))
                    && e.contains("more than kiln builds"),
                "{text}: {e}"
            );
        }
        assert_eq!(
            run("{{ seq 9223372036854775806 9223372036854775807 }}").as_deref(),
            Ok("9223372036854775806 9223372036854775807")
        );
        assert_eq!(
            run("{{ untilStep 9223372036854775806 9223372036854775807 5 }}").as_deref(),
            Ok("[9223372036854775806]")
        );
        assert_eq!(
            run("{{ until 3 }} {{ seq 3 1 }}").as_deref(),
            Ok("[0 1 2] 3 2 1")
        );
    }

    /// Sprig's `semverCompare` parses the constraint before the version, so a bad
    /// constraint is the error even when the version is bad too.
    #[test]
    fn semver_compare_reads_the_constraint_first() {
        let e = run("{{ semverCompare \"xx\" \"bad\" }}").unwrap_err();
        assert!(
            e.ends_with("error calling semverCompare: constraint parser error"),
            "{e}"
        );
        let e = run("{{ semverCompare \">=1\" \"bad\" }}").unwrap_err();
        assert!(
            e.ends_with("error calling semverCompare: invalid semantic version"),
            "{e}"
        );
    }

    /// String functions that change nothing give back their argument itself (no copy of
    /// the text); what they give is what Go gives either way.
    #[test]
    fn string_functions_that_change_nothing_give_their_argument() {
        let mut funcs = Funcs::default();
        register(&mut funcs, Rc::new(RefCell::new(Seed::new(1))));
        let funcs = Rc::new(funcs);
        let mut ex = Exec::new(Rc::new(TemplateSet::default()), funcs.clone(), Rc::new(()));
        let arg = Value::from("name-x");
        let calls: [(&str, Vec<Value>); 10] = [
            ("trimSuffix", vec![Value::from("-"), arg.clone()]),
            ("trimPrefix", vec![Value::from("-"), arg.clone()]),
            ("trimAll", vec![Value::from("-"), arg.clone()]),
            ("trunc", vec![Value::Int(63), arg.clone()]),
            ("trunc", vec![Value::Int(-63), arg.clone()]),
            ("substr", vec![Value::Int(0), Value::Int(99), arg.clone()]),
            ("lower", vec![arg.clone()]),
            ("trim", vec![arg.clone()]),
            ("toString", vec![arg.clone()]),
            (
                "replace",
                vec![Value::from("+"), Value::from("_"), arg.clone()],
            ),
        ];
        for (name, args) in calls {
            let f = funcs.get(name).unwrap();
            let got = f(&mut ex, &args).unwrap();
            match (&got, &arg) {
                (Value::Str(a), Value::Str(b)) => assert!(Rc::ptr_eq(a, b), "{name}"),
                _ => panic!("{name}: {got:?}"),
            }
        }
        let cases = [
            (r#"{{ "A-b-" | trimSuffix "-" | lower }}"#, "a-b"),
            (
                r#"{{ upper "ab" }}|{{ upper "AB" }}|{{ lower "ÀB" }}"#,
                "AB|AB|àb",
            ),
            (
                r#"{{ lower 12 }}|{{ toString 1.5 }}|{{ trim nil }}"#,
                "12|1.5|",
            ),
            (
                r#"{{ replace "x" "y" "abc" }}|{{ replace "" "-" "ab" }}"#,
                "abc|-a-b-",
            ),
            (
                r#"{{ trunc 3 "abcd" }}|{{ trunc -2 "abcd" }}|{{ trunc 2 12345 }}"#,
                "abc|cd|12",
            ),
            (
                r#"{{ substr 1 3 "abcd" }}|{{ trimAll "-" "--a--" }}"#,
                "bc|a",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// `quote` of one argument as of several: nil dropped, others printed and quoted.
    #[test]
    fn quote_of_one_argument_is_quote_of_a_list_of_one() {
        let cases = [
            (r#"{{ quote "a\"b" }}"#, r#""a\"b""#),
            ("{{ quote nil }}|{{ quote }}", "|"),
            ("{{ quote 1.5 }}|{{ quote true }}", r#""1.5"|"true""#),
            (r#"{{ quote "a" nil 2 }}"#, r#""a" "2""#),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// `indent`/`nindent` as Sprig's replace gives them: every line padded, empty ones and
    /// a trailing newline's too, non-strings printed, negative widths none.
    #[test]
    fn indent_pads_every_line() {
        let cases = [
            (r#"{{ indent 2 "a\nb" }}"#, "  a\n  b"),
            (r#"{{ nindent 2 "a\n\nb\n" }}"#, "\n  a\n  \n  b\n  "),
            (r#"{{ indent 0 "a\nb" }}"#, "a\nb"),
            (r#"{{ nindent -3 "x" }}"#, "\nx"),
            (r#"{{ indent 1 "" }}|{{ nindent 1 "" }}"#, " |\n "),
            (r#"{{ indent 3 12 }}|{{ nindent 1 nil }}"#, "   12|\n "),
            (r#"{{ indent "2" "é\nü" }}"#, "  é\n  ü"),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    #[test]
    fn cached_regexes_answer_for_their_own_pattern_every_time() {
        // The same patterns again and again (the cache hit), interleaved with others.
        for _ in 0..3 {
            assert_eq!(
                run(r#"{{ regexMatch "^a+$" "aaa" }} {{ regexMatch "^a+$" "ab" }} {{ regexMatch "^b" "ba" }}"#)
                    .unwrap(),
                "true false true"
            );
            assert_eq!(
                run(r#"{{ regexReplaceAll "[^a-z0-9-]" "Foo_Bar" "-" }} {{ regexFind "[0-9]+" "ab12cd" }}"#)
                    .unwrap(),
                "-oo--ar 12"
            );
        }
    }

    #[test]
    fn an_invalid_regex_fails_on_every_call() {
        for _ in 0..2 {
            let e = run(r#"{{ mustRegexMatch "a(" "a" }}"#).unwrap_err();
            assert!(e.contains("error parsing regexp"), "{e}");
            // Non-must: false, not an error, and not remembered as a match.
            assert_eq!(run(r#"{{ regexMatch "a(" "a" }}"#).unwrap(), "false");
        }
    }

    #[test]
    fn the_regex_cache_is_bounded() {
        let text: String = (0..600)
            .map(|i| format!(r#"{{{{ regexMatch "^x{i}$" "x{i}" }}}}"#))
            .collect();
        let (out, ex) = run_with(&text).unwrap();
        assert_eq!(out.unwrap(), "true".repeat(600));
        assert!(ex.regexes.len() <= 512);
    }

    /// Each execution compiles its own: nothing is kept from one render to the next.
    #[test]
    fn regexes_are_kept_for_one_execution() {
        let (out, ex) =
            run_with(r#"{{ regexMatch "^a+$" "aaa" }}{{ regexMatch "^a+$" "b" }}"#).unwrap();
        assert_eq!(out.unwrap(), "truefalse");
        assert_eq!(ex.regexes.len() + ex.ascii_regexes.len(), 1);
        let (_, ex) = run_with("{{ 1 }}").unwrap();
        assert!(ex.regexes.is_empty() && ex.ascii_regexes.is_empty());
    }

    /// ASCII patterns on ASCII text run compiled without Unicode; anything else (non-ASCII
    /// text, a pattern that needs Unicode) as before. Both answer as Go's regexp does.
    #[test]
    fn ascii_regexes_answer_as_unicode_ones() {
        let cases = [
            (
                r#"{{ regexMatch "^[^}]*$" "é" }} {{ regexMatch "^.$" "é" }}"#,
                "true true",
            ),
            (r#"{{ regexReplaceAll "[^a-z]" "aé" "-" }}"#, "a-"),
            (r#"{{ regexReplaceAll "[^a-z]" "a_b" "-" }}"#, "a-b"),
            (r#"{{ regexReplaceAll "x" "axb" "é" }}"#, "aéb"),
            (r#"{{ regexReplaceAll "(a)(b)" "abab" "${2}$1" }}"#, "baba"),
            (r#"{{ regexReplaceAllLiteral "a" "aXa" "$1" }}"#, "$1X$1"),
            (
                r#"{{ regexMatch `\pL` "a" }} {{ regexMatch `\pL` "1" }}"#,
                "true false",
            ),
            (
                r#"{{ regexFind "(?i)K" "xk" }}|{{ regexFind "z" "xk" }}"#,
                "k|",
            ),
            (r#"{{ regexFind "(?i)k" "K" }}"#, "\u{212a}"),
            (
                r#"{{ regexSplit "," "a,b,c" -1 }} {{ regexSplit "," "a,b,c" 2 }}"#,
                "[a b c] [a b,c]",
            ),
            (
                r#"{{ regexFindAll "[0-9]" "a1b2c3" 2 }} {{ regexFindAll "[0-9]" "a1b2c3" -1 }}"#,
                "[1 2] [1 2 3]",
            ),
            (
                r#"{{ regexMatch `\d` "٣" }} {{ regexMatch `\w` "é" }} {{ regexMatch `\bb` "a b" }}"#,
                "false false true",
            ),
            (r#"{{ regexMatch "a(" "a" }}"#, "false"),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
        let e = run(r#"{{ mustRegexFind "a(" "a" }}"#).unwrap_err();
        assert!(e.contains("error parsing regexp"), "{e}");
        // Which compile each took.
        let (_, ex) = run_with(
            r#"{{ regexMatch "a" "a" }}{{ regexMatch "b" "é" }}{{ regexMatch `\pL` "a" }}"#,
        )
        .unwrap();
        assert!(matches!(
            ex.ascii_regexes.get("a"),
            Some(goregex::AsciiSlot::Lite(..))
        ));
        assert!(!ex.ascii_regexes.contains_key("b") && ex.regexes.contains_key("b"));
        assert!(
            matches!(
                ex.ascii_regexes.get("\\pL"),
                Some(goregex::AsciiSlot::Invalid)
            ) && ex.regexes.contains_key("\\pL")
        );
    }

    /// Helm 4.2.3's answers for text functions at their edges.
    #[test]
    fn substr_out_of_range_and_case_mapping_are_gos() {
        for (text, want) in [
            (r#"{{ substr 1 3 "hello" }}"#, "el"),
            (r#"{{ substr -1 3 "hello" }}"#, "hel"),
            (r#"{{ substr 2 -1 "hello" }}"#, "llo"),
            (r#"{{ substr 2 99 "hello" }}"#, "llo"),
            (r#"{{ upper "straße ᾳ ﬀ ᾀ" }}"#, "STRAßE ᾼ ﬀ ᾈ"),
            (r#"{{ lower "ΣΑΣ" }}"#, "σασ"),
            (r#"{{ lower "İSTANBUL K" }}"#, "istanbul k"),
            (r#"{{ upper "héllo" }}"#, "HÉLLO"),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
        for (text, msg) in [
            (
                r#"{{ substr 3 1 "hello world" }}"#,
                "slice bounds out of range [3:1]",
            ),
            (
                r#"{{ substr 100 200 "x" }}"#,
                "slice bounds out of range [100:1]",
            ),
            (
                r#"{{ substr -5 -2 "x" }}"#,
                "slice bounds out of range [:-2]",
            ),
            (
                r#"{{ substr -1 5 "x" }}"#,
                "slice bounds out of range [:5] with length 1",
            ),
            (r#"{{ substr 1 2 "" }}"#, "slice bounds out of range [1:0]"),
        ] {
            let e = run(text).unwrap_err();
            assert!(
                e.contains(&format!("error calling substr: runtime error: {msg}")),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn b32dec_and_b64dec_decode_or_say_where_they_stopped() {
        for (text, want) in [
            (r#"{{ b32dec "NBSWY3DP" }}"#, "hello"),
            (
                r#"{{ b32dec "nbswy3dp" }}"#,
                "illegal base32 data at input byte 0",
            ),
            (r#"{{ b64dec "aGVsbG8=" }}"#, "hello"),
            (
                r#"{{ b64dec "aGVsbG8" }}"#,
                "illegal base64 data at input byte 4",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// What Go's regexp reads differently from the crate, as Helm 4.2.3 answers (each case
    /// checked against helm-python-sdk).
    #[test]
    fn regexes_read_go_syntax_as_go_does() {
        let split = |p: &str, t: &str, n: i64| {
            format!(
                r#"{{{{ $l := regexSplit `{p}` "{t}" {n} }}}}{{{{ len $l }}}}:{{{{ join "|" $l }}}}"#
            )
        };
        let splits = [
            // No empty part for an empty match at either end.
            (split("", "ab", -1), "2:a|b"),
            (split("", "ab", 2), "2:a|b"),
            (split(r"\b", "ab cd", -1), "3:ab| |cd"),
            (split(r"\B", "", -1), "1:"),
            (split(",", "a,b,,c,", -1), "5:a|b||c|"),
            (split("x*", "axbc", 3), "3:a|b|c"),
            (split(",", "a,b", 0), "0:"),
        ];
        for (text, want) in splits {
            assert_eq!(run(&text).unwrap(), want, "{text}");
        }
        let cases = [
            // Braces of \p{…} and \x{…} are theirs, not literal.
            (r#"{{ regexFind `\p{Greek}+` "xΣΑΣ" }}"#, "ΣΑΣ"),
            (r#"{{ regexFind `\P{Greek}+` "ΣxyΣ" }}"#, "xy"),
            (r#"{{ regexMatch `\x{1F600}` "a😀" }}"#, "true"),
            // Quoted literals and octal escapes.
            (r#"{{ regexFind `\Q*\E+` "a***" }}"#, "***"),
            (r#"{{ regexFind `\Qa.b` "xa.b" }}"#, "a.b"),
            (r#"{{ regexReplaceAll `\012` "a\nb" "-" }}"#, "a-b"),
            (r#"{{ regexFind `\123` "xSy" }}"#, "S"),
            // `\<` and `\>` are the characters, not word boundaries.
            (r#"{{ regexReplaceAll `\<` "ab cd" "^" }}"#, "ab cd"),
            (r#"{{ regexFind `\<b\>` "a<b>" }}"#, "<b>"),
            (r#"{{ regexQuoteMeta "a-b#c d&e~f" }}"#, "a-b#c d&e~f"),
            (r#"{{ regexQuoteMeta "1.5*[x]{2}" }}"#, r"1\.5\*\[x\]\{2\}"),
            // Patterns Go refuses: false, as for any pattern that does not parse.
            (r#"{{ regexMatch "a**" "aa" }}"#, "false"),
            (r#"{{ regexMatch "a{1001}" "a" }}"#, "false"),
            (r#"{{ regexMatch "(?x) a b" "ab" }}"#, "false"),
            (
                r#"{{ regexMatch "a*?" "a" }} {{ regexMatch "a??" "a" }}"#,
                "true true",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
        for (p, msg) in [
            ("a**", "invalid nested repetition operator: `**`"),
            ("a*?+", "invalid nested repetition operator: `*?+`"),
            ("a{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            ("(?x)a", "invalid or unsupported Perl syntax: `(?x`"),
        ] {
            let e = run(&format!(r#"{{{{ mustRegexMatch "{p}" "a" }}}}"#)).unwrap_err();
            assert!(
                e.contains(&format!("error parsing regexp: {msg}")),
                "{p}: {e}"
            );
        }
    }

    /// A pattern starts in regex-lite and is compiled by the `regex` crate once its searches
    /// have cost the budget; a text over the budget goes to the crate at once. The answers
    /// are the same before and after.
    #[test]
    fn an_ascii_regex_moves_to_the_regex_crate_once_searched_enough() {
        let call = r#"{{ regexReplaceAll "(-?[^a-z0-9-])+-?" "My_Release.Name" "-" }},"#;
        let (out, ex) = run_with(call).unwrap();
        assert_eq!(out.unwrap(), "-y-elease-ame,");
        assert!(matches!(
            ex.ascii_regexes.values().next(),
            Some(goregex::AsciiSlot::Lite(..))
        ));
        let (out, ex) = run_with(&call.repeat(100)).unwrap();
        assert_eq!(out.unwrap(), "-y-elease-ame,".repeat(100));
        assert!(matches!(
            ex.ascii_regexes.values().next(),
            Some(goregex::AsciiSlot::Full(..))
        ));
        let long = "x".repeat(5000);
        let (out, ex) = run_with(&format!(r#"{{{{ regexMatch "y$" "{long}" }}}}"#)).unwrap();
        assert_eq!(out.unwrap(), "false");
        assert!(matches!(
            ex.ascii_regexes.values().next(),
            Some(goregex::AsciiSlot::Full(..))
        ));
    }

    /// Helm 4.2.3's `snakecase` and `kebabcase` (xstrings' word rules): connector runs keep
    /// their length, punctuation takes no separator, numbers join the word before them.
    #[test]
    fn snakecase_and_kebabcase_are_xstrings() {
        for (text, want) in [
            (r#"{{ snakecase "a--b__c  d" }}"#, "a__b__c__d"),
            (r#"{{ kebabcase "HTTPServer_ID" }}"#, "http-server-id"),
            (r#"{{ snakecase "fooBar-Baz qux" }}"#, "foo_bar_baz_qux"),
            (r#"{{ snakecase "_complex__case_" }}"#, "_complex__case_"),
            (
                r#"{{ snakecase "  lead" }}|{{ snakecase "trail  " }}"#,
                "__lead|trail__",
            ),
            (
                r#"{{ snakecase "foo.Bar" }}|{{ snakecase "ab-.cd" }}"#,
                "foo.bar|ab_.cd",
            ),
            (
                r#"{{ snakecase "a+b" }}|{{ snakecase "hello world!" }}"#,
                "a_+_b|hello_world!",
            ),
            (
                r#"{{ snakecase "HTTP20xOK" }}|{{ snakecase "Bld4Floor3rd" }}"#,
                "http_20x_ok|bld4_floor_3rd",
            ),
            (
                r#"{{ snakecase "123ABC" }}|{{ snakecase "a1b2" }}|{{ snakecase "A1B2" }}"#,
                "123_abc|a_1b2|a1_b2",
            ),
            (
                r#"{{ snakecase "FOO22bar" }}|{{ snakecase "FOO22Bar" }}"#,
                "foo_22bar|foo22_bar",
            ),
            (
                r#"{{ snakecase "XYz" }}|{{ snakecase "v1.2Beta" }}"#,
                "x_yz|v1.2_beta",
            ),
            (
                r#"{{ snakecase "ÉcoleNormale" }}|{{ snakecase "x中文" }}"#,
                "école_normale|x_中文",
            ),
            (
                r#"{{ snakecase "x²y" }}|{{ snakecase "A😀B" }}"#,
                "x_²y|a_😀_b",
            ),
            (r#"{{ kebabcase "a__b" }}|{{ snakecase "-" }}"#, "a--b|_"),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `camelcase` (xstrings v1.5 `ToPascalCase`): a word's case is kept but
    /// for capitals after its capital first letter.
    #[test]
    fn camelcase_is_xstrings_pascal_case() {
        for (text, want) in [
            (
                r#"{{ camelcase "FOO_BAR" }}|{{ camelcase "fooBar" }}"#,
                "FooBar|FooBar",
            ),
            (
                r#"{{ camelcase "aBC dEF" }}|{{ camelcase "some_Words" }}"#,
                "ABCDEF|SomeWords",
            ),
            (
                r#"{{ camelcase "_complex__case_" }}|{{ camelcase "a__" }}"#,
                "_Complex_Case_|A__",
            ),
            (
                r#"{{ camelcase "_" }}|{{ camelcase "__" }}|{{ camelcase "a" }}"#,
                "__|___|A",
            ),
            (
                r#"{{ camelcase "ǆa_ǆb" }}|{{ camelcase "ß_ß" }}|{{ camelcase "x_ⓐ" }}"#,
                "ǄaǄb|ßß|XⒶ",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `title` (`strings.Title`: a letter after any ASCII character but a
    /// letter, digit or `_`, or after a space, is title-cased), `untitle` and `swapcase`
    /// (goutils: words are split at spaces only, a swapped word starts in title case).
    #[test]
    fn title_untitle_and_swapcase_are_gos() {
        for (text, want) in [
            (
                r#"{{ title "o'neil" }}|{{ title "don't" }}"#,
                "O'Neil|Don'T",
            ),
            (
                r#"{{ title "hello-world foo_bar" }}"#,
                "Hello-World Foo_bar",
            ),
            (
                r#"{{ title "x.y,z" }}|{{ title "a1b c2d" }}|{{ title "1st" }}"#,
                "X.Y,Z|A1b C2d|1st",
            ),
            (
                r#"{{ title "ǆemal" }}|{{ title "ß x" }}|{{ title "a²b" }}"#,
                "ǅemal|ß X|A²b",
            ),
            (
                r#"{{ title "a\u00a0b" }}|{{ title "a\u0301b" }}|{{ title "aⅰb" }}"#,
                "A\u{a0}B|A\u{301}b|Aⅰb",
            ),
            (
                r#"{{ untitle "HELLO-WORLD" }}|{{ untitle "A.B" }}|{{ untitle "É É" }}"#,
                "hELLO-WORLD|a.B|é é",
            ),
            (
                r#"{{ swapcase "hello World" }}|{{ swapcase "1a b" }}"#,
                "HELLO wORLD|1A B",
            ),
            (r#"{{ swapcase "ǆ ǅ Ǆ" }}|{{ swapcase "ß" }}"#, "ǅ ǆ ǆ|ß"),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `wrap` (goutils `Wrap`: a long word is kept whole) and `wrapWith`
    /// (`WrapCustom` with long words cut at the width).
    #[test]
    fn wrap_keeps_long_words_and_wrap_with_cuts_them() {
        for (text, want) in [
            (
                r#"{{ wrap 5 "a verylongword here" }}"#,
                "a\nverylongword\nhere",
            ),
            (
                r#"{{ wrapWith 5 "<br>" "a verylongword here" }}"#,
                "a<br>veryl<br>ongwo<br>rd<br>here",
            ),
            (
                r#"{{ wrapWith 5 "" "a verylongword here" }}"#,
                "a\nveryl\nongwo\nrd\nhere",
            ),
            (
                r#"{{ wrap 3 "  leading spaces here" }}"#,
                "leading\nspaces\nhere",
            ),
            (
                r#"{{ wrap 3 "trailing   " }}|{{ wrap 0 "a b c" }}"#,
                "trailing\n  |a\nb\nc",
            ),
            (r#"{{ wrap 5 "a\nb c d e f g" }}"#, "a\nb c\nd e f\ng"),
            (
                r#"{{ wrapWith 3 "|" "abcdefgh ij" }}|{{ wrapWith 4 "|" "ab  cd  ef" }}"#,
                "abc|def|gh|ij|ab |cd |ef",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }

    /// Helm 4.2.3's `nospace` and `initials` (goutils reads bytes as Latin-1 characters: a
    /// 0xA0 or 0x85 byte inside a character is a space, and the bytes are written back as
    /// characters when anything was dropped).
    #[test]
    fn nospace_and_initials_read_bytes_as_goutils() {
        for (text, want) in [
            (
                r#"{{ initials "élan vital" }}|{{ initials "  a  b  " }}"#,
                "\u{c3}v|ab",
            ),
            (
                r#"{{ initials "a\u00a0b c" }}|{{ initials "a\u3000b" }}"#,
                "abc|a",
            ),
            (
                r#"{{ initials "a\u180eb" }}|{{ initials "a-b" }}"#,
                "a\u{8e}|a",
            ),
            (
                r#"{{ nospace "a\u00a0b c" }}|{{ nospace "élan  vital" }}"#,
                "a\u{c2}bc|\u{c3}\u{a9}lanvital",
            ),
            (
                r#"{{ nospace "a\u3000b\tc\nd" }}"#,
                "a\u{e3}\u{80}\u{80}bcd",
            ),
            (
                r#"{{ nospace "a\u2028b" }}|{{ nospace "a\u000bb\u000cc\rd" }}"#,
                "a\u{2028}b|abcd",
            ),
        ] {
            assert_eq!(run(text).unwrap(), want, "{text}");
        }
    }
}
