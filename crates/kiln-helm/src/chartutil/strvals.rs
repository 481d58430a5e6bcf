//! strvals: `--set`, `--set-string`, `--set-json`, `--set-file`, `--set-literal`.
//!
//! A port of Helm v4.2.3's `pkg/strvals/parser.go` and `pkg/strvals/literal_parser.go`
//! (helm/helm), kept function for function so that its corner cases stay Helm's: `{a,b}`
//! lists (`a={}` is `[""]`), `\` escaping any character, `a[0]` with no value giving `[]`,
//! an unterminated index (`a[0`) ending the line without an error (Helm wraps `io.EOF`),
//! indices capped at `MaxIndex` (65536) *before* a list is allocated, names nested at most
//! `MaxNestedNameLevel` (30) deep, and Go's panics on a type clash (`a=1,a.b=2`) reported
//! as Helm reports them ("unable to parse key: interface conversion: …").
//! The order the flags are applied in is `pkg/cli/values/options.go` `MergeValues`'s.

use super::*;
use crate::chart::loader::merge_user;

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
pub(super) enum E {
    Eof,
    Msg(String),
}

pub(super) fn msg(m: String) -> E {
    E::Msg(m)
}

/// What `valList` found: a list, the end of the line, or no `{`.
pub(super) enum ValList {
    List(Vec<Value>),
    Eof,
    NotList,
}

pub(super) struct Parser<'a> {
    sc: Vec<char>,
    pos: usize,
    kind: SetKind,
    read: &'a dyn Fn(&str) -> Result<String, String>,
}

/// Go's type name of a value, for the text of a failed type assertion.
pub(super) fn go_type(v: &Value) -> &'static str {
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
pub(super) fn conversion_panic(v: &Value, want: &str) -> E {
    let got = go_type(v);
    let tail = if got == "nil" {
        format!("interface {{}} is nil, not {want}")
    } else {
        format!("interface {{}} is {got}, not {want}")
    };
    msg(format!("unable to parse key: interface conversion: {tail}"))
}

/// `%q` of a `[]rune`: each rune quoted, space-separated, in brackets.
pub(super) fn quote_runes(s: &str) -> String {
    let runes: Vec<String> = s
        .chars()
        .map(|c| {
            let q = crate::template::fmt::go_quote(&c.to_string());
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
pub(super) fn atoi(s: &str) -> Result<i64, String> {
    s.parse::<i64>().map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        format!(
            "strconv.Atoi: parsing {}: {why}",
            crate::template::fmt::go_quote(s)
        )
    })
}

/// `set`: an empty key is not set.
pub(super) fn set(data: &Map, key: &str, val: Value) {
    if !key.is_empty() {
        data.borrow_mut().insert(key.to_string(), val);
    }
}

/// `setIndex`: the index is checked against `MAX_INDEX` before the list grows.
pub(super) fn set_index(
    mut list: Vec<Value>,
    index: i64,
    val: Value,
) -> (Vec<Value>, Result<(), E>) {
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
pub(super) fn typed_val(v: &str, as_string: bool) -> Value {
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
pub(super) fn equal_fold(v: &str, word: &str) -> bool {
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
                        crate::template::fmt::go_quote(&k)
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
                    crate::template::fmt::go_quote(&k)
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
                        crate::template::fmt::go_quote(&k)
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
                crate::template::fmt::go_quote(k)
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
pub(super) fn json_end(b: &[u8]) -> Option<usize> {
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
