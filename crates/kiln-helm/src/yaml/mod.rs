//! YAML and JSON as Helm reads and writes them.
//!
//! Reading follows `sigs.k8s.io/yaml` (go-yaml v2 then JSON): YAML 1.1 plain scalars
//! (`yes`/`no`/`on`/`off`/`y`/`n` are booleans, `0644` is octal, `<<` merges), every number a
//! float64, mapping keys as strings. It walks `granit-parser` events (the parser under
//! serde-saphyr) because the typing of a plain scalar depends on its style.
//!
//! Writing follows what `toYaml` prints (`sigs.k8s.io/yaml.Marshal`: JSON, then go-yaml v2):
//! keys sorted, two-space indent, sequences at their key's indent, integral floats as
//! integers, multi-line strings as literal blocks, ambiguous strings double-quoted. And Go's
//! `encoding/json` for `toJson` (sorted keys, `<`, `>`, `&` escaped as `\u003c`…).

mod fast;
mod goerror;
pub mod gojson;

use super::template::value::{Dict, Marshaled, Value, format_float};
use granit_parser::{ErrorKind, Event, Parser, ScalarStyle};
use kiln_base::yaml::goyaml::{self, pad};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

/// A YAML read error with its 1-based line.
#[derive(Debug, Clone)]
pub struct YamlError {
    pub line: usize,
    pub message: String,
    /// go-yaml v2's text for the error where kiln knows it (`fromYaml`'s `.Error`).
    pub go_yaml: Option<String>,
}

impl std::fmt::Display for YamlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "yaml: line {}: {}", self.line, self.message)
    }
}

/// Where the first `\n` at or after `from` is in `b`, or `b.len()`. Eight bytes a step (a
/// byte at a time, skipping the comment lines of a values.yaml was a tenth of reading it).
pub(crate) fn find_newline(b: &[u8], from: usize) -> usize {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut i = from.min(b.len());
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let x = w ^ (LO * u64::from(b'\n'));
        // The lowest set high bit marks the first zero byte of `x` (a borrow only ever
        // marks bytes above a real zero).
        let z = x.wrapping_sub(LO) & !x & HI;
        if z != 0 {
            return i + (z.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |j| i + j)
}

/// Reads every document of a stream (empty documents become `Nil`).
pub fn parse_all(text: &str) -> Result<Vec<Value>, YamlError> {
    parse_all_mode(text, false, false)
}

/// Reads one document with every non-null scalar as its text, as `sigs.k8s.io/yaml` fills
/// string fields (`version: 1.0` in Chart.yaml is the string "1.0").
pub fn parse_one_strings(text: &str) -> Result<Value, YamlError> {
    Ok(parse_all_mode(text, true, true)?
        .into_iter()
        .next()
        .unwrap_or(Value::Nil))
}

/// `first`: only the first document, as sigs.k8s.io/yaml's `Unmarshal` (go-yaml v2's, whose
/// parser stops at the end of the first document): nothing after it is read, so an error
/// there is none.
fn parse_all_mode(text: &str, strings: bool, first: bool) -> Result<Vec<Value>, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Most values.yaml and Chart.yaml files are in the subset the line reader takes; the rest
    // (and every error) is granit's.
    match fast::parse_all(text, strings) {
        Some(docs) => Ok(docs),
        None => parse_all_granit(text, strings, first),
    }
}

/// The stream read from granit-parser's events (with `first`, up to the end of the first
/// document's root node, or the first document's end when it has none).
fn parse_all_granit(text: &str, strings: bool, first: bool) -> Result<Vec<Value>, YamlError> {
    granit_docs(text, strings, first).map(|(docs, _)| docs)
}

/// [`parse_all_granit`], and the byte offset where the read stopped: with `first`, where the
/// first document's root or the document ended; else the text's end.
fn granit_docs(text: &str, strings: bool, first: bool) -> Result<(Vec<Value>, usize), YamlError> {
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut cur_doc: Option<Value> = None;
    // With `first`: where the first document's root ended.
    let mut root_end = None;
    for ev in Parser::new_from_str(text) {
        let (event, span) = match ev {
            Ok(ev) => ev,
            Err(e) => {
                // A closing bracket outside any flow collection (`{a: 1}}`, or in a later
                // document): go-yaml v2's scanner takes it as a token like any other, and
                // where the first document ended before it, sigs.k8s.io/yaml reads that
                // document (`{a: 1}`). granit refuses it as it looks ahead, before any event:
                // read the text before it, and keep its first document if it ended there
                // and not at the cut (`a: }` stays an error).
                if first
                    && *e.kind() == ErrorKind::MisplacedFlowCollectionEnd
                    && let Some(before) = e.marker().byte_offset().and_then(|at| text.get(..at))
                    && let Ok((docs, end)) = granit_docs(before, strings, true)
                    && end < before.trim_end().len()
                {
                    return Ok((docs, end));
                }
                return Err(YamlError {
                    line: e.marker().line(),
                    message: e.to_string(),
                    go_yaml: goerror::go_yaml_text(text, &e),
                });
            }
        };
        // go-yaml's parser reads one token past the root (its document end), so an error there
        // is one (`x` then `y: 1`); then it stops.
        if let Some(end) = root_end {
            return Ok((docs, end));
        }
        let line = span.start.line();
        let node = match event {
            Event::DocumentStart(..) => {
                cur_doc = None;
                continue;
            }
            Event::DocumentEnd => {
                docs.push(cur_doc.take().unwrap_or(Value::Nil));
                if first {
                    return Ok((docs, span.start.byte_offset().unwrap_or(text.len())));
                }
                continue;
            }
            Event::StreamStart | Event::StreamEnd => continue,
            Event::Scalar(text, style, anchor, tag) => {
                let v = match resolve_scalar(
                    &text,
                    style,
                    tag.as_ref().map(|t| t.suffix().to_string()),
                ) {
                    v if strings => stringify_scalar(&text, v),
                    v => v,
                };
                if anchor != 0 {
                    anchors.insert(anchor, v.clone());
                }
                v
            }
            Event::Alias(id) => anchors.get(&id).cloned().ok_or_else(|| YamlError {
                line,
                message: "unknown anchor".into(),
                go_yaml: None,
            })?,
            Event::SequenceStart(_, anchor, _) => {
                stack.push(Frame::Seq(Vec::new(), anchor));
                continue;
            }
            Event::MappingStart(_, anchor, _) => {
                stack.push(Frame::Map(Vec::new(), None, anchor, Vec::new()));
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq(items, anchor)) => {
                    let v = Value::list(items);
                    if anchor != 0 {
                        anchors.insert(anchor, v.clone());
                    }
                    v
                }
                _ => {
                    return Err(YamlError {
                        line,
                        message: "unbalanced sequence".into(),
                        go_yaml: None,
                    });
                }
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map(entries, _, anchor, merges)) => {
                    // Sorted once (`Dict`'s `FromIterator`: a repeated key's last value
                    // wins, as go-yaml v2 lets it).
                    let mut m: Dict = entries.into_iter().collect();
                    // `<<` merges: explicit keys win, earlier merged maps win over later ones.
                    for merged in merges {
                        let sources: Vec<Value> = match merged {
                            Value::List(l) => l.iter().cloned().collect(),
                            other => vec![other],
                        };
                        for src in sources {
                            if let Value::Map(sm) = src {
                                for (k, v) in sm.borrow().iter() {
                                    m.get_or_insert_with(k.clone(), || v.deep_copy());
                                }
                            }
                        }
                    }
                    let v = Value::map(m);
                    if anchor != 0 {
                        anchors.insert(anchor, v.clone());
                    }
                    v
                }
                _ => {
                    return Err(YamlError {
                        line,
                        message: "unbalanced mapping".into(),
                        go_yaml: None,
                    });
                }
            },
            _ => continue,
        };
        // Attach the node to its parent.
        match stack.last_mut() {
            None if first => {
                docs.push(node);
                root_end = Some(span.start.byte_offset().unwrap_or(text.len()));
            }
            None => cur_doc = Some(node),
            Some(Frame::Seq(items, _)) => items.push(node),
            Some(Frame::Map(m, key, _, merges)) => match key.take() {
                None => *key = Some(node),
                Some(k) => {
                    if matches!(&k, Value::Str(s) if &**s == "<<")
                        && matches!(node, Value::Map(_) | Value::List(_))
                    {
                        merges.push(node);
                    } else {
                        // go-yaml v2 (sigs.k8s.io/yaml) lets a repeated key win (the
                        // mapping is collected when it ends).
                        m.push((Rc::from(key_string(&k)), node));
                    }
                }
            },
        }
    }
    Ok((docs, root_end.unwrap_or(text.len())))
}

/// A scalar read into a Go string field by sigs.k8s.io/yaml: the YAML value, formatted
/// (`off` is "false", `1.10` is "1.1", `0644` is "420"), as Helm reads Chart.yaml.
fn stringify_scalar(text: &str, v: Value) -> Value {
    match v {
        Value::Bool(b) => Value::from(b.to_string()),
        Value::Float(f) => {
            let integral = !text.contains(['.', 'e', 'E']) && f.fract() == 0.0;
            if integral {
                Value::from(format!("{f:.0}"))
            } else {
                let short: f64 = format!("{}", f as f32).parse().unwrap_or(f);
                Value::from(format_float(short, -4, 6))
            }
        }
        other => other,
    }
}

enum Frame {
    Seq(Vec<Value>, usize),
    /// entries in document order, pending key, anchor, `<<` values
    Map(Vec<(Rc<str>, Value)>, Option<Value>, usize, Vec<Value>),
}

/// A mapping key as sigs.k8s.io/yaml turns it into a JSON key.
fn key_string(k: &Value) -> String {
    match k {
        Value::Str(s) => s.to_string(),
        Value::Nil => "null".into(),
        Value::Float(f) => json_float(*f),
        other => other.go_string(),
    }
}

/// Reads the first document (none gives `Nil`) and nothing after it, as sigs.k8s.io/yaml's
/// `Unmarshal` does.
pub fn parse_one(text: &str) -> Result<Value, YamlError> {
    Ok(parse_all_mode(text, false, true)?
        .into_iter()
        .next()
        .unwrap_or(Value::Nil))
}

/// What a YAML-to-JSON read (sigs.k8s.io/yaml) cannot carry: JSON has no infinities or NaN,
/// so `.inf` anywhere fails as encoding/json fails (`json: unsupported value: +Inf`).
pub fn json_unsupported(v: &Value) -> Option<String> {
    let f = first_non_finite(v)?;
    let text = if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    };
    Some(format!("json: unsupported value: {text}"))
}

fn first_non_finite(v: &Value) -> Option<f64> {
    match v {
        Value::Float(f) if !f.is_finite() => Some(*f),
        Value::List(l) => l.iter().find_map(first_non_finite),
        Value::Map(m) => m.borrow().values().find_map(first_non_finite),
        _ => None,
    }
}

/// `fromYaml`'s read: [`parse_one`], then refused where JSON could not carry the value. A
/// read error is worded as go-yaml v2 words it where kiln knows how.
pub fn parse_one_as_json(text: &str) -> Result<Value, String> {
    let v = parse_one(text).map_err(|e| e.go_yaml.clone().unwrap_or_else(|| e.to_string()))?;
    match json_unsupported(&v) {
        Some(e) => Err(e),
        None => Ok(v),
    }
}

/// YAML 1.1 resolution of a scalar, as go-yaml v2.
/// A plain scalar's value (YAML 1.1, as go-yaml v2 resolves it).
pub(crate) fn plain_scalar(text: &str) -> Value {
    resolve_scalar(text, ScalarStyle::Plain, None)
}

fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<String>) -> Value {
    if let Some(t) = tag.as_deref() {
        match t {
            "str" | "binary" => return Value::str(text),
            "int" | "float" => {
                if let Some(v) = resolve_number(text) {
                    return v;
                }
            }
            "bool" => {
                if let Some(b) = resolve_bool(text) {
                    return Value::Bool(b);
                }
            }
            "null" => return Value::Nil,
            _ => {}
        }
    }
    if style != ScalarStyle::Plain {
        return Value::str(text);
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Nil,
        _ => {}
    }
    if let Some(b) = resolve_bool(text) {
        return Value::Bool(b);
    }
    if let Some(v) = resolve_number(text) {
        return v;
    }
    Value::str(text)
}

/// Whether a plain scalar's value is its text (not null, a bool or a number), as
/// [`resolve_scalar`] would find without making the string it would give.
fn plain_is_str(text: &str) -> bool {
    !matches!(text, "" | "~" | "null" | "Null" | "NULL")
        && resolve_bool(text).is_none()
        && resolve_number(text).is_none()
}

fn resolve_bool(text: &str) -> Option<bool> {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Some(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Some(false)
        }
        _ => None,
    }
}

fn resolve_number(text: &str) -> Option<Value> {
    let first = text.as_bytes().first()?;
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return None;
    }
    match text {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Some(Value::Float(f64::INFINITY));
        }
        "-.inf" | "-.Inf" | "-.INF" => return Some(Value::Float(f64::NEG_INFINITY)),
        ".nan" | ".NaN" | ".NAN" => return Some(Value::Float(f64::NAN)),
        _ => {}
    }
    // Borrowed unless there is a `_` to drop: most numbers in a values file have none.
    let plain: std::borrow::Cow<str> = if text.contains('_') {
        text.replace('_', "").into()
    } else {
        text.into()
    };
    let (neg, body) = match plain.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, plain.strip_prefix('+').unwrap_or(&plain)),
    };
    if body.is_empty() {
        return None;
    }
    let sign = if neg { -1.0 } else { 1.0 };
    // strconv.ParseInt(plain, 0, 64)'s prefixes, either case (`0o17` is 15), and v2's `0b`.
    let prefixed = |p: &str| {
        body.get(..2)
            .filter(|h| h.eq_ignore_ascii_case(p))
            .map(|_| &body[2..])
    };
    let int = if let Some(h) = prefixed("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = prefixed("0b") {
        u64::from_str_radix(b, 2).ok()
    } else if let Some(o) = prefixed("0o") {
        u64::from_str_radix(o, 8).ok()
    } else if body.len() > 1 && body.starts_with('0') && body.bytes().all(|b| b.is_ascii_digit()) {
        u64::from_str_radix(&body[1..], 8).ok()
    } else if body.bytes().all(|b| b.is_ascii_digit()) {
        body.parse::<u64>().ok()
    } else {
        None
    };
    if let Some(n) = int {
        // An integer is exact before it becomes a float64 (sigs.k8s.io/yaml's JSON step), so
        // `-0` is the integer 0, not the float -0.
        return Some(Value::Float(if n == 0 { 0.0 } else { sign * n as f64 }));
    }
    // Digits that fit no 64-bit integer (go-yaml v2: ParseInt and ParseUint fail) are read
    // by its float rule, in decimal even with a leading 0: the nearest float64, never a
    // clamped one.
    if body.bytes().all(|b| b.is_ascii_digit())
        && let Ok(f) = body.parse::<f64>()
    {
        return Some(Value::Float(sign * f));
    }
    // YAML 1.1 floats: digits with a `.` or an exponent.
    let ok = body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && body.bytes().any(|b| b.is_ascii_digit())
        && (body.contains('.') || body.contains('e') || body.contains('E'));
    if ok && let Ok(f) = body.parse::<f64>() {
        return Some(Value::Float(sign * f));
    }
    None
}

// ---------------------------------------------------------------------------------------
// toYaml
// ---------------------------------------------------------------------------------------

/// Which of Helm's encoders writes: `toYaml` is sigs.k8s.io/yaml (JSON in between, then
/// go-yaml v2), `toYamlPretty` go-yaml v3's encoder with `SetIndent(2)` (helm/helm
/// pkg/engine/funcs.go), which indents a sequence under its key and prints a float64 with
/// strconv's shortest `'g'` (`1e+06`), there being no JSON step to make it an integer.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Encoder {
    SigsYaml,
    GoYamlV3,
}

/// The encoder's bytes, final line break included.
pub fn to_yaml(v: &Value) -> String {
    encode(v, Encoder::SigsYaml)
}

/// Helm's `toYaml`/`toYamlPretty` (and `.Files.AsConfig`): the encoder's text with one final
/// line break trimmed (`strings.TrimSuffix`), so a kept block's last empty line stays.
///
/// `toYaml`'s text passes through JSON and go-yaml v2's reader first, which changes two
/// things: a character that JSON leaves raw and the reader refuses (DEL, the C1 controls,
/// U+FFFE, U+FFFF) fails the marshal (`toYaml` then gives "", `mustToYaml` this error), and a
/// raw NEL, a line break to that reader, is folded as in any double-quoted scalar.
pub fn to_yaml_func(v: &Value, enc: Encoder) -> Result<String, &'static str> {
    let folded;
    let v = if enc == Encoder::SigsYaml {
        match json_round_trip(v) {
            RoundTrip::Same => v,
            RoundTrip::Refused => return Err("yaml: control characters are not allowed"),
            RoundTrip::Folded(f) => {
                folded = f;
                &folded
            }
        }
    } else {
        v
    };
    let mut out = encode(v, enc);
    if out.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

enum RoundTrip {
    Same,
    Refused,
    Folded(Value),
}

/// What JSON and go-yaml v2's reader make of the strings (keys too) of `v`.
fn json_round_trip(v: &Value) -> RoundTrip {
    // Every character concerned has a lead byte of 0x7F, 0xC2 or 0xEF: one byte scan per
    // string, and the tree is copied only when a NEL is in it.
    fn suspect(s: &str) -> bool {
        s.bytes().any(|b| matches!(b, 0x7F | 0xC2 | 0xEF | 0xF4))
    }
    fn refused(c: char) -> bool {
        matches!(c, '\u{7F}'..='\u{84}' | '\u{86}'..='\u{9F}' | '\u{FFFE}' | '\u{FFFF}')
    }
    fn check(s: &str, nel: &mut bool) -> bool {
        if suspect(s) {
            if s.chars().any(refused) {
                return false;
            }
            *nel |= s.contains('\u{85}') || s.chars().any(crate::template::fmt::is_byte_escape);
        }
        true
    }
    fn scan(v: &Value, nel: &mut bool) -> bool {
        match v {
            Value::Str(s) => check(s, nel),
            Value::List(l) => l.iter().all(|x| scan(x, nel)),
            Value::Map(m) => m
                .borrow()
                .iter()
                .all(|(k, x)| check(k, nel) && scan(x, nel)),
            // An object JSON writes as a structure comes back as that structure: the tree
            // is rebuilt (`nel` here means "rebuild").
            Value::Object(o) => match o.marshal() {
                Some(m) => {
                    *nel = true;
                    scan(&m.plain(), nel)
                }
                None => check(&o.display(), nel),
            },
            _ => true,
        }
    }
    fn fold_tree(v: &Value) -> Value {
        match v {
            Value::Str(s) => Value::from(fold_nel(s)),
            Value::Object(o) => match o.marshal() {
                Some(m) => fold_tree(&m.plain()),
                // Written as its text: folded as text.
                None => Value::from(fold_nel(&o.display())),
            },
            Value::List(l) => Value::List(std::rc::Rc::new(l.iter().map(fold_tree).collect())),
            Value::Map(m) => Value::map(
                m.borrow()
                    .iter()
                    .map(|(k, x)| (fold_nel(k), fold_tree(x)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut nel = false;
    if !scan(v, &mut nel) {
        RoundTrip::Refused
    } else if nel {
        RoundTrip::Folded(fold_tree(v))
    } else {
        RoundTrip::Same
    }
}

/// YAML's line folding in a double-quoted scalar, for NEL as the only break (JSON escapes
/// `\n` and `\r`): blanks around a run of breaks are dropped, one break becomes a space and
/// `n` breaks `n - 1` line feeds. A byte that is not UTF-8 is JSON's U+FFFD.
fn fold_nel(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if crate::template::fmt::is_byte_escape(c) {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    if !s.contains('\u{85}') {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{85}' {
            out.push(c);
            continue;
        }
        while out.ends_with([' ', '\t']) {
            out.pop();
        }
        let mut breaks = 1;
        while let Some(&n) = chars.peek() {
            match n {
                '\u{85}' => breaks += 1,
                ' ' | '\t' => {}
                _ => break,
            }
            chars.next();
        }
        if breaks == 1 {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n('\n', breaks - 1));
        }
    }
    out
}

fn encode(v: &Value, enc: Encoder) -> String {
    let mut out = String::new();
    match v {
        Value::Map(m) if !m.borrow().is_empty() => write_map(&mut out, &m.borrow(), 0, enc),
        Value::List(l) if !l.is_empty() => write_seq(&mut out, l, 0, enc),
        other => {
            // go-yaml indents a top-level block scalar by two.
            write_inline_scalar(&mut out, other, 2, enc);
            out.push('\n');
        }
    }
    out
}

fn write_map(out: &mut String, m: &Dict, ind: usize, enc: Encoder) {
    let mut first = true;
    let mut entries: Vec<(&Rc<str>, &Value)> = m.iter().collect();
    entries.sort_by(|a, b| goyaml::key_order(a.0, b.0));
    for (k, v) in entries {
        if !first || !out.ends_with("- ") {
            pad(out, ind);
        }
        first = false;
        out.push_str(&goyaml::scalar_text(k, goyaml::string_style(k, true)));
        out.push(':');
        write_after_key(out, v, ind, enc);
    }
}

fn write_after_key(out: &mut String, v: &Value, ind: usize, enc: Encoder) {
    match v {
        Value::Map(m) if !m.borrow().is_empty() => {
            out.push('\n');
            write_map(out, &m.borrow(), ind + 2, enc);
        }
        Value::List(l) if !l.is_empty() => {
            out.push('\n');
            let seq_ind = if enc == Encoder::GoYamlV3 {
                ind + 2
            } else {
                ind
            };
            write_seq(out, l, seq_ind, enc);
        }
        other => {
            out.push(' ');
            write_inline_scalar(out, other, ind + 2, enc);
            out.push('\n');
        }
    }
}

fn write_seq(out: &mut String, l: &[Value], ind: usize, enc: Encoder) {
    for v in l {
        pad(out, ind);
        out.push_str("- ");
        match v {
            Value::Map(m) if !m.borrow().is_empty() => write_map(out, &m.borrow(), ind + 2, enc),
            Value::List(inner) if !inner.is_empty() => {
                // go-yaml writes a nested sequence on the same line: `- - a`.
                let mut sub = String::new();
                write_seq(&mut sub, inner, ind + 2, enc);
                out.push_str(sub.trim_start());
            }
            other => {
                write_inline_scalar(out, other, ind + 2, enc);
                out.push('\n');
            }
        }
    }
}

/// A scalar (or empty collection) after `key: ` or `- `; `ind` is the block indent.
fn write_inline_scalar(out: &mut String, v: &Value, ind: usize, enc: Encoder) {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(f) if enc == Encoder::GoYamlV3 && f.is_finite() => {
            out.push_str(&crate::template::value::format_float_g(*f))
        }
        Value::Float(f) => out.push_str(&yaml_float(*f)),
        Value::Map(_) => out.push_str("{}"),
        Value::List(_) => out.push_str("[]"),
        Value::Str(s) => match goyaml::string_style(s, false) {
            goyaml::Style::Literal => {
                // The block ends its own line; the caller's line break is the block's.
                goyaml::write_literal(out, s, ind);
                out.pop();
            }
            style => push_scalar(out, &goyaml::scalar_text(s, style), ind, enc),
        },
        Value::Object(o) => {
            let text = o.display();
            let style = goyaml::string_style(&text, false);
            push_scalar(out, &goyaml::scalar_text(&text, style), ind, enc)
        }
    }
}

/// A plain or quoted value scalar: folded as go-yaml v2 folds it ([`goyaml::push_folded`])
/// for `toYaml`; v3, `toYamlPretty`'s encoder, does not fold.
fn push_scalar(out: &mut String, text: &str, ind: usize, enc: Encoder) {
    if enc == Encoder::SigsYaml {
        goyaml::push_folded(out, text, ind);
    } else {
        out.push_str(text);
    }
}

/// A float as Helm's `toYaml` prints it: sigs.k8s.io/yaml writes JSON, and go-yaml v2 reads
/// that text back. A JSON integer that fits int64 or uint64 stays an integer; anything else
/// (a fraction, an exponent, an integer wider than 64 bits) becomes a float64, which go-yaml
/// prints with strconv's shortest `'g'` (`1.2345675e+06`, `1e-06`, `1e+20`). JSON's `-0` is
/// read as the integer 0.
fn yaml_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+.inf".into()
        } else {
            "-.inf".into()
        };
    }
    let json = json_float(f);
    if json.parse::<i64>().is_ok() || json.parse::<u64>().is_ok() {
        json
    } else {
        crate::template::value::format_float_g(f)
    }
}

// ---------------------------------------------------------------------------------------
// JSON (Go encoding/json)
// ---------------------------------------------------------------------------------------

/// A float64 as Go's encoding/json writes it.
pub fn json_float(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        // 'e' format with Go's cleanup (e-07 → e-7).
        let s = format_float(f, 1000, -1000);
        let s = s.replace("e-0", "e-").replace("e+0", "e+");
        return s;
    }
    format_float(f, -1000, 1000)
}

/// `toJson`/`toRawJson`/`toPrettyJson`.
pub fn to_json(v: &Value, escape_html: bool, pretty: bool) -> String {
    let mut out = String::new();
    write_json(
        &mut out,
        v,
        escape_html,
        if pretty { Some(0) } else { None },
    );
    out
}

fn write_json(out: &mut String, v: &Value, esc: bool, ind: Option<usize>) {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(f) => out.push_str(&json_float(*f)),
        Value::Str(s) => json_string(out, s, esc),
        Value::Object(o) => match o.marshal() {
            None => json_string(out, &o.display(), esc),
            Some(Marshaled::Value(v)) => write_json(out, &v, esc, ind),
            Some(Marshaled::Fields(fields)) => {
                write_json_object(out, fields.iter().map(|(k, x)| (*k, x)), esc, ind)
            }
        },
        Value::List(l) => {
            if l.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, ind.map(|n| n + 1));
                write_json(out, x, esc, ind.map(|n| n + 1));
            }
            newline(out, ind);
            out.push(']');
        }
        Value::Map(m) => {
            let m = m.borrow();
            write_json_object(out, m.iter().map(|(k, x)| (&**k, x)), esc, ind);
        }
    }
}

/// A JSON object, as encoding/json writes a map and a struct alike: `{}` when empty, else one
/// member per line when indenting.
fn write_json_object<'a>(
    out: &mut String,
    members: impl Iterator<Item = (&'a str, &'a Value)>,
    esc: bool,
    ind: Option<usize>,
) {
    out.push('{');
    let mut any = false;
    for (k, x) in members {
        if any {
            out.push(',');
        }
        any = true;
        newline(out, ind.map(|n| n + 1));
        json_string(out, k, esc);
        out.push(':');
        if ind.is_some() {
            out.push(' ');
        }
        write_json(out, x, esc, ind.map(|n| n + 1));
    }
    if any {
        newline(out, ind);
    }
    out.push('}');
}

fn newline(out: &mut String, ind: Option<usize>) {
    if let Some(n) = ind {
        out.push('\n');
        for _ in 0..n {
            out.push_str("  ");
        }
    }
}

fn json_string(out: &mut String, s: &str, esc: bool) {
    out.push('"');
    // Runs of characters written as they are go out as one slice: only the bytes below
    // decide where a run ends (a character per push was most of `toJson`).
    let bytes = s.as_bytes();
    let (mut run, mut i) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        let special = !(0x20..0x80).contains(&b) || b == b'"' || b == b'\\';
        if !(special || esc && matches!(b, b'<' | b'>' | b'&')) {
            i += 1;
            continue;
        }
        // `i` is a character's start: runs end only at ASCII bytes and lead bytes.
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        let escape: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            // Go 1.22's encoding/json (appendString): `\b` and `\f` by name.
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            // A byte that is not UTF-8 (encode::go_text): encoding/json writes U+FFFD.
            c if crate::template::fmt::is_byte_escape(c) => Some("\\ufffd"),
            '<' | '>' | '&' if esc => None,
            '\u{2028}' | '\u{2029}' => None,
            c if (c as u32) < 0x20 => None,
            _ => {
                i += c.len_utf8();
                continue;
            }
        };
        out.push_str(&s[run..i]);
        match escape {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
        i += c.len_utf8();
        run = i;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// Reads JSON as Go's encoding/json into interface{}: numbers are float64.
pub fn from_json(text: &str) -> Result<Value, String> {
    // Plain JSON is read straight into values (`gojson::read`, held to this general path
    // by `the_direct_read_is_serde_jsons`). Go's `json.Unmarshal` checks the whole text
    // first; its error is the one Helm shows. Every text serde_json reads is one Go's check
    // passes (the grammar is RFC 8259's on both sides;
    // `gojson::tests::what_serde_json_reads_go_checks_valid`), so the check runs only when
    // the read fails: it was a third of `fromJson`'s time (nats).
    if let Some(v) = gojson::read(text) {
        return Ok(v);
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(v) => Ok(Value::from_json(&v)),
        Err(e) => Err(gojson::syntax_error(text).unwrap_or_else(|| e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_scalars() {
        let v = parse_one("a: yes\nb: 0644\nc: '1'\nd: 1.5\ne: ~\nf: n\n").unwrap();
        assert_eq!(
            super::to_json(&v, true, false),
            r#"{"a":true,"b":420,"c":"1","d":1.5,"e":null,"f":false}"#
        );
    }

    #[test]
    fn to_yaml_matches_go_layout() {
        let v = parse_one("b: [1, x]\na: {c: 'true', d: \"l1\\nl2\"}\ne: []\n").unwrap();
        assert_eq!(
            to_yaml(&v),
            "a:\n  c: \"true\"\n  d: |-\n    l1\n    l2\nb:\n- 1\n- x\ne: []\n"
        );
        assert_eq!(to_yaml(&Value::str("{{ x \"y\" }}")), "'{{ x \"y\" }}'\n");
    }

    /// A scalar with `: ` or ` #` in it (or a final `:`) is quoted, `:`/`#` elsewhere are
    /// plain, in keys and values; indentation deeper than one run of spaces is whole.
    #[test]
    fn to_yaml_quotes_what_would_read_back_otherwise_at_any_depth() {
        let v = parse_one("k: {'a: b': 'c #d', 'x:': 'a:b', 'a#b': ' #', p: 'q:', r: 's :t'}\n")
            .unwrap();
        assert_eq!(
            to_yaml(&v),
            "k:\n  a#b: ' #'\n  'a: b': 'c #d'\n  p: 'q:'\n  r: s :t\n  'x:': a:b\n"
        );
        let depth = 20;
        let mut text = String::new();
        let mut want = String::new();
        for i in 0..depth {
            text.push_str(&format!("{}k{i}:\n", " ".repeat(2 * i)));
            want.push_str(&format!("{}k{i}:\n", " ".repeat(2 * i)));
        }
        text.push_str(&format!("{}leaf: x\n", " ".repeat(2 * depth)));
        want.push_str(&format!("{}leaf: x\n", " ".repeat(2 * depth)));
        assert_eq!(to_yaml(&parse_one(&text).unwrap()), want);
    }

    #[test]
    fn integers_wider_than_64_bits_are_the_nearest_float_and_minus_zero_is_zero() {
        // Real Helm v4.2.3 on these values (tests/helm/charts/numbers):
        // 1.2345678901234569e+23, -9.876543210987654e+19, 0; toYaml of -0.0 prints 0.
        let v = parse_one(
            "big: 123456789012345678901234\nneg: -98765432109876543210\nz: -0\n\
             o: 0777777777777777777777777\nf: -0.0\n",
        )
        .unwrap();
        assert_eq!(
            super::to_json(&v, true, false),
            r#"{"big":1.2345678901234569e+23,"f":-0,"neg":-98765432109876540000,"o":7.777777777777778e+23,"z":0}"#
        );
        assert_eq!(
            to_yaml(&v),
            "big: 1.2345678901234569e+23\nf: 0\nneg: -9.876543210987654e+19\no: 7.777777777777778e+23\nz: 0\n"
        );
        // Real Helm's toYaml of 1234567.5, 0.000001, 1e20, 123456.5 and 2^63.
        let v =
            parse_one("a: 1234567.5\nb: 0.000001\nc: 1e20\ne: 123456.5\nm: 9223372036854775808\n")
                .unwrap();
        assert_eq!(
            to_yaml(&v),
            "a: 1.2345675e+06\nb: 1e-06\nc: 1e+20\ne: 123456.5\nm: 9223372036854776000\n"
        );
    }

    #[test]
    fn json_escapes_html() {
        assert_eq!(
            to_json(&Value::str("<a&b>"), true, false),
            r#""\u003ca\u0026b\u003e""#
        );
        assert_eq!(json_float(1e6), "1000000");
        assert_eq!(json_float(1e21), "1e+21");
    }

    /// Go 1.22's encoding/json names `\b` and `\f`; other control characters are `\u00XX`
    /// (Helm 4.2.3's `toJson "\t\v\f\b\x01"`).
    #[test]
    fn json_names_backspace_and_form_feed() {
        assert_eq!(
            to_json(&Value::str("\t\u{b}\u{c}\u{8}\u{1}"), true, false),
            r#""\t\u000b\f\b\u0001""#
        );
    }

    /// Plain runs between escapes, non-ASCII text and HTML escaping only when asked, as
    /// encoding/json writes them (`toJson` is HTML-escaped, `mustToRawJson` is not).
    #[test]
    fn json_strings_escape_only_what_go_escapes() {
        let s = Value::str("ab\"c\\d\ne\u{1}<f>&é\u{2028}g");
        assert_eq!(
            to_json(&s, true, false),
            r#""ab\"c\\d\ne\u0001\u003cf\u003e\u0026é\u2028g""#
        );
        assert_eq!(
            to_json(&s, false, false),
            r#""ab\"c\\d\ne\u0001<f>&é\u2028g""#
        );
        assert_eq!(to_json(&Value::str(""), true, false), r#""""#);
        assert_eq!(to_json(&Value::str("é"), true, false), r#""é""#);
    }
}
