//! A proof that values meet a values.schema.json, read straight from the schema's JSON,
//! without compiling it (issue 37, "≥ 10× Helm on every chart"; ADR 0053).
//!
//! Compiling a schema is most of what `helm template` of a chart with a large one costs:
//! jsonschema first builds its meta-schema's validator and checks the schema against it,
//! then compiles every subschema into a validator, whether the values reach it or not
//! (traefik's 181 KB schema: 45 % of kiln's CPU for the chart, 690 of its 1,900 page
//! faults). Nearly every chart's values are valid, and proving that needs only the parts
//! of the schema the values reach. So [`proves_valid`] walks the schema once for what the
//! meta-schema asks of it, then the values along the schema, and answers `true` only when
//! it is sure jsonschema would find both the schema and the values valid. Anything else —
//! a failure, a keyword it does not know, a number it cannot compare exactly, a `format`
//! jsonschema asserts — is "not proven", and the caller compiles the schema with jsonschema
//! as before, which gives the verdict and the error messages. So this module can make
//! kiln faster, never more or less strict: a wrong `false` costs a compile, and a wrong
//! `true` is the one thing it must never say (the tests hold every `true` against
//! jsonschema's own verdict).
//!
//! The subset: drafts 7 and 2020-12 (as `jsonschema::Draft::from_schema_uri` reads
//! `$schema`, and none, which jsonschema reads as its default, 2020-12); the keywords of
//! `keyword` below; `$ref` to a JSON pointer in the same document that names a subschema;
//! `pattern` only in the syntax Rust's `regex`, ECMA-262 and RE2 read alike.

use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// The drafts the proof knows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Draft {
    /// Draft 7: `format` is an assertion (jsonschema's default for drafts 4–7), `$ref`
    /// overrides its siblings, `items` may be an array.
    D7,
    /// Draft 2020-12: `format` is an annotation, `$ref` applies beside its siblings.
    D2020,
}

/// A verdict that may be unknown: `Some(true)` valid, `Some(false)` invalid, `None` not
/// decided here. A `Some(false)` must be as sure as a `Some(true)`: `not`, `oneOf`, `anyOf`
/// and `if` turn one into the other.
type Verdict = Option<bool>;

/// How deep subschemas and `$ref` chains are followed before giving up (a `$ref` cycle
/// that consumes no instance, or a deep document: jsonschema decides those).
const DEPTH: usize = 128;

/// Whether `instance` is proven valid against `schema`, the schema itself proven valid
/// against its meta-schema. `false` means "not proven": compile it.
pub fn proves_valid(schema: &Value, instance: &Value) -> bool {
    let Some(draft) = draft_of(schema) else {
        return false;
    };
    let mut proof = Proof {
        root: schema,
        draft,
        schemas: HashSet::new(),
        refs: Vec::new(),
        patterns: RefCell::new(HashMap::new()),
    };
    if !proof.well_formed(schema, 0) {
        return false;
    }
    // Every `$ref` must name a subschema the walk checked. One into a member that is no
    // keyword (alertmanager's `#/definitions/config/route`) names a schema the meta-schema
    // never looked at, which jsonschema compiles when it follows the `$ref`: it is checked
    // here as a subschema. One into `default`, `enum`, `const` or `examples` is not proven.
    let mut n = 0;
    while n < proof.refs.len() {
        let target = proof.refs[n].clone();
        n += 1;
        let Some(sub) = schema.pointer(&target) else {
            return false;
        };
        if proof.schemas.contains(&address(sub)) {
            continue;
        }
        let inside_a_value = target
            .split('/')
            .any(|seg| matches!(seg, "default" | "enum" | "const" | "examples"));
        if inside_a_value || !proof.well_formed(sub, 1) {
            return false;
        }
    }
    proof.check(schema, instance, 0) == Some(true)
}

/// The draft jsonschema reads the schema in (its own reading of `$schema`), if the proof
/// knows it.
fn draft_of(schema: &Value) -> Option<Draft> {
    let root = schema.as_object()?;
    let draft = match root.get("$schema") {
        None => jsonschema::Draft::default(),
        Some(Value::String(uri)) => jsonschema::Draft::from_schema_uri(uri),
        Some(_) => return None,
    };
    match draft {
        jsonschema::Draft::Draft7 => Some(Draft::D7),
        jsonschema::Draft::Draft202012 => Some(Draft::D2020),
        _ => None,
    }
}

/// The keywords the proof reads, and how the meta-schema constrains each.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keyword {
    /// Any value: an annotation the meta-schemas leave open (`default`, `const`).
    Any,
    String,
    Bool,
    /// A non-negative integer (`minItems`, …).
    Count,
    Number,
    /// An array (`enum`, `examples`).
    Array,
    /// One subschema.
    Schema,
    /// An object whose values are subschemas (`properties`, `$defs`).
    SchemaMap,
    /// A non-empty array of subschemas (`allOf`, …).
    SchemaList,
    /// `type`: a simple type name, or a non-empty array of distinct ones.
    Type,
    /// `required`: an array of distinct strings.
    Required,
    /// `items`: a subschema (an array of them in draft 7 is not read here).
    Items,
    Pattern,
    /// `patternProperties`: an object of subschemas keyed by patterns.
    PatternMap,
    /// Draft 7's `dependencies`: an object of subschemas or arrays of distinct strings.
    Dependencies,
    Ref,
    Id,
    /// `$schema`: only at the root, where [`draft_of`] read it.
    Dialect,
    /// A keyword of either draft the proof does not read: not proven.
    Unknown,
}

/// Names that are JSON Schema keywords in draft 7 or 2020-12 but not read here. A name in
/// neither list is not a keyword: both meta-schemas let any other member through.
const NOT_READ: &[&str] = &[
    "multipleOf",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "prefixItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveAnchor",
    "$recursiveRef",
    "$vocabulary",
    "id",
];

fn keyword(name: &str) -> Keyword {
    use Keyword::*;
    match name {
        "$schema" => Dialect,
        "$id" => Id,
        "$ref" => Ref,
        "$defs" | "definitions" | "properties" => SchemaMap,
        "$comment" | "title" | "description" | "format" => String,
        "default" | "const" => Any,
        "examples" | "enum" => Array,
        "readOnly" | "writeOnly" | "deprecated" | "uniqueItems" => Bool,
        "type" => Type,
        "additionalProperties" | "not" | "if" | "then" | "else" => Schema,
        "items" => Items,
        "required" => Required,
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => Number,
        "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties" | "maxProperties" => {
            Count
        }
        "pattern" => Pattern,
        "patternProperties" => PatternMap,
        "dependencies" => Dependencies,
        "allOf" | "anyOf" | "oneOf" => SchemaList,
        n if NOT_READ.contains(&n) => Unknown,
        _ => Any,
    }
}

const SIMPLE_TYPES: &[&str] = &[
    "array", "boolean", "integer", "null", "number", "object", "string",
];

struct Proof<'a> {
    root: &'a Value,
    draft: Draft,
    /// Every subschema the walk checked, by address in the document (which nothing moves
    /// while the proof holds it): a set asked only whether it holds a node, never walked,
    /// so no output depends on an address.
    schemas: HashSet<usize>,
    /// The JSON pointer each `$ref` names.
    refs: Vec<String>,
    /// Each `pattern` compiled so far, once, or `None` where it is outside the shared syntax
    /// or does not compile.
    patterns: RefCell<HashMap<&'a str, Option<regex::Regex>>>,
}

impl<'a> Proof<'a> {
    /// Whether subschema `s` is surely valid against the draft's meta-schema.
    fn well_formed(&mut self, s: &'a Value, depth: usize) -> bool {
        if depth > DEPTH {
            return false;
        }
        let map = match s {
            Value::Bool(_) => {
                self.schemas.insert(address(s));
                return true;
            }
            Value::Object(m) => m,
            _ => return false,
        };
        self.schemas.insert(address(s));
        for (name, v) in map {
            let ok = match keyword(name) {
                Keyword::Any => true,
                Keyword::String => v.is_string(),
                Keyword::Bool => v.is_boolean(),
                Keyword::Number => v.is_number(),
                Keyword::Count => v.as_u64().is_some(),
                Keyword::Array => v.is_array(),
                Keyword::Schema => self.well_formed(v, depth + 1),
                Keyword::SchemaMap => v
                    .as_object()
                    .is_some_and(|m| m.values().all(|sub| self.well_formed(sub, depth + 1))),
                Keyword::SchemaList => v.as_array().is_some_and(|l| {
                    !l.is_empty() && l.iter().all(|sub| self.well_formed(sub, depth + 1))
                }),
                Keyword::Items => !v.is_array() && self.well_formed(v, depth + 1),
                Keyword::Type => match v {
                    Value::String(t) => SIMPLE_TYPES.contains(&t.as_str()),
                    Value::Array(ts) => {
                        !ts.is_empty()
                            && ts
                                .iter()
                                .all(|t| t.as_str().is_some_and(|t| SIMPLE_TYPES.contains(&t)))
                            && distinct(ts)
                    }
                    _ => false,
                },
                Keyword::Required => v
                    .as_array()
                    .is_some_and(|l| l.iter().all(Value::is_string) && distinct(l)),
                Keyword::Pattern => v.as_str().is_some_and(|p| self.pattern(p).is_some()),
                Keyword::PatternMap => v.as_object().is_some_and(|m| {
                    m.iter().all(|(p, sub)| {
                        self.pattern(p).is_some() && self.well_formed(sub, depth + 1)
                    })
                }),
                Keyword::Dependencies => {
                    self.draft == Draft::D7
                        && v.as_object().is_some_and(|m| {
                            m.values().all(|dep| match dep {
                                Value::Array(l) => l.iter().all(Value::is_string) && distinct(l),
                                _ => self.well_formed(dep, depth + 1),
                            })
                        })
                }
                Keyword::Ref => match v.as_str().and_then(local_pointer) {
                    Some(target) => {
                        self.refs.push(target);
                        true
                    }
                    None => false,
                },
                // 2020-12: a string without a fragment but an empty one, at the root (the
                // base of every `$ref` here). Draft 7 asserts it is a URI reference.
                Keyword::Id => {
                    self.draft == Draft::D2020
                        && depth == 0
                        && v.as_str().is_some_and(|id| {
                            id.find('#').is_none_or(|i| i == id.len() - 1)
                                && id.chars().all(|c| c.is_ascii_graphic())
                        })
                }
                Keyword::Dialect => depth == 0,
                Keyword::Unknown => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// The verdict of subschema `s` on `i`.
    fn check(&self, s: &'a Value, i: &Value, depth: usize) -> Verdict {
        if depth > DEPTH {
            return None;
        }
        let map = match s {
            Value::Bool(b) => return Some(*b),
            Value::Object(m) => m,
            _ => return None,
        };
        if let Some(Value::String(r)) = map.get("$ref") {
            let target = self.resolve(r)?;
            if self.draft == Draft::D7 {
                // Draft 7 ignores a `$ref`'s siblings (jsonschema too: a test below holds
                // it to that), so the target alone decides.
                return self.check(target, i, depth + 1);
            }
        }
        for (name, v) in map {
            if !self.keyword(map, name, v, i, depth)? {
                return Some(false);
            }
        }
        Some(true)
    }

    /// One keyword's verdict. `None` (not decided) stops the whole check.
    fn keyword(
        &self,
        map: &'a Map<String, Value>,
        name: &str,
        v: &'a Value,
        i: &Value,
        depth: usize,
    ) -> Verdict {
        match name {
            "$ref" => {
                let target = self.resolve(v.as_str()?)?;
                self.check(target, i, depth + 1)
            }
            "type" => Some(match v {
                Value::String(t) => has_type(t, i)?,
                Value::Array(ts) => {
                    let mut any = false;
                    for t in ts {
                        any |= has_type(t.as_str()?, i)?;
                    }
                    any
                }
                _ => return None,
            }),
            "enum" => {
                let mut unsure = false;
                for e in v.as_array()? {
                    match equal(e, i) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => unsure = true,
                    }
                }
                if unsure { None } else { Some(false) }
            }
            "const" => equal(v, i),
            "properties" => {
                let Value::Object(obj) = i else {
                    return Some(true);
                };
                let props = v.as_object()?;
                // The smaller side drives the walk: a values map usually sets a few of a
                // large schema's properties.
                for (k, val) in obj {
                    if let Some(sub) = props.get(k)
                        && !self.check(sub, val, depth + 1)?
                    {
                        return Some(false);
                    }
                }
                Some(true)
            }
            "additionalProperties" => {
                let Value::Object(obj) = i else {
                    return Some(true);
                };
                let props = map.get("properties").and_then(Value::as_object);
                let patterns = map.get("patternProperties").and_then(Value::as_object);
                for (k, val) in obj {
                    if props.is_some_and(|p| p.contains_key(k)) {
                        continue;
                    }
                    if let Some(patterns) = patterns {
                        let mut matched = false;
                        for p in patterns.keys() {
                            matched |= self.matches(p, k)?;
                        }
                        if matched {
                            continue;
                        }
                    }
                    if !self.check(v, val, depth + 1)? {
                        return Some(false);
                    }
                }
                Some(true)
            }
            "patternProperties" => {
                let Value::Object(obj) = i else {
                    return Some(true);
                };
                for (p, sub) in v.as_object()? {
                    for (k, val) in obj {
                        if self.matches(p, k)? && !self.check(sub, val, depth + 1)? {
                            return Some(false);
                        }
                    }
                }
                Some(true)
            }
            "dependencies" => {
                let Value::Object(obj) = i else {
                    return Some(true);
                };
                for (k, dep) in v.as_object()? {
                    if !obj.contains_key(k) {
                        continue;
                    }
                    let ok = match dep {
                        Value::Array(names) => names
                            .iter()
                            .all(|n| n.as_str().is_some_and(|n| obj.contains_key(n))),
                        _ => self.check(dep, i, depth + 1)?,
                    };
                    if !ok {
                        return Some(false);
                    }
                }
                Some(true)
            }
            "required" => match i {
                Value::Object(obj) => Some(
                    v.as_array()?
                        .iter()
                        .all(|n| n.as_str().is_some_and(|n| obj.contains_key(n))),
                ),
                _ => Some(true),
            },
            "items" => match i {
                Value::Array(items) => {
                    for item in items {
                        if !self.check(v, item, depth + 1)? {
                            return Some(false);
                        }
                    }
                    Some(true)
                }
                _ => Some(true),
            },
            "minItems" | "maxItems" => match i {
                Value::Array(a) => bound(name, a.len(), v),
                _ => Some(true),
            },
            "minLength" | "maxLength" => match i {
                Value::String(t) => bound(name, t.chars().count(), v),
                _ => Some(true),
            },
            "minProperties" | "maxProperties" => match i {
                Value::Object(o) => bound(name, o.len(), v),
                _ => Some(true),
            },
            "uniqueItems" => match (v, i) {
                (Value::Bool(true), Value::Array(a)) => {
                    for (n, x) in a.iter().enumerate() {
                        for y in &a[n + 1..] {
                            if equal(x, y)? {
                                return Some(false);
                            }
                        }
                    }
                    Some(true)
                }
                _ => Some(true),
            },
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => match i {
                Value::Number(n) => {
                    let (x, limit) = (exact(n)?, exact(v.as_number()?)?);
                    Some(match name {
                        "minimum" => x >= limit,
                        "maximum" => x <= limit,
                        "exclusiveMinimum" => x > limit,
                        _ => x < limit,
                    })
                }
                _ => Some(true),
            },
            "pattern" => match i {
                Value::String(t) => self.matches(v.as_str()?, t),
                _ => Some(true),
            },
            // jsonschema asserts draft 7's formats: it decides any string given one.
            "format" => match (self.draft, i) {
                (Draft::D7, Value::String(_)) => None,
                _ => Some(true),
            },
            "allOf" => {
                for sub in v.as_array()? {
                    if !self.check(sub, i, depth + 1)? {
                        return Some(false);
                    }
                }
                Some(true)
            }
            "anyOf" => {
                let mut unsure = false;
                for sub in v.as_array()? {
                    match self.check(sub, i, depth + 1) {
                        Some(true) => return Some(true),
                        Some(false) => {}
                        None => unsure = true,
                    }
                }
                if unsure { None } else { Some(false) }
            }
            "oneOf" => {
                let mut valid = 0;
                for sub in v.as_array()? {
                    valid += usize::from(self.check(sub, i, depth + 1)?);
                }
                Some(valid == 1)
            }
            "not" => self.check(v, i, depth + 1).map(|b| !b),
            "if" => {
                let branch = if self.check(v, i, depth + 1)? {
                    "then"
                } else {
                    "else"
                };
                match map.get(branch) {
                    Some(sub) => self.check(sub, i, depth + 1),
                    None => Some(true),
                }
            }
            // Read with `if`, or annotations, or no keyword at all.
            _ => match keyword(name) {
                Keyword::Unknown => None,
                _ => Some(true),
            },
        }
    }

    /// Whether pattern `p` (checked by [`Proof::well_formed`]) matches `t`. Outside ASCII,
    /// or with a line terminator, the dialects' classes and `.` part ways: jsonschema decides.
    /// The pattern is compiled the first time a value meets it (or was, by `well_formed`).
    fn matches(&self, p: &'a str, t: &str) -> Verdict {
        if !t.is_ascii() || t.contains(['\n', '\r']) {
            return None;
        }
        let mut patterns = self.patterns.borrow_mut();
        let compiled = patterns.entry(p).or_insert_with(|| {
            shared_syntax(p)
                .then(|| regex::Regex::new(p).ok())
                .flatten()
        });
        Some(compiled.as_ref()?.is_match(t))
    }

    /// The subschema a `$ref` names (checked by [`Proof::well_formed`]).
    fn resolve(&self, r: &str) -> Option<&'a Value> {
        let target = self.root.pointer(&local_pointer(r)?)?;
        self.schemas.contains(&address(target)).then_some(target)
    }

    /// Whether a `pattern` keeps to the syntax the dialects read alike. A schema's patterns
    /// are compiled when a value meets them ([`Proof::matches`]): most never are, and
    /// compiling each (its automata, its prefilters) was a third of proving alertmanager's
    /// values. One with a counted repetition is compiled here: nested ones can pass the
    /// syntax and still be too large to compile (for RE2 too), and such a schema is never
    /// proven, whether a value meets the pattern or not.
    fn pattern(&mut self, p: &'a str) -> Option<()> {
        if !shared_syntax(p) {
            return None;
        }
        if !p.contains('{') {
            return Some(());
        }
        let compiled = self
            .patterns
            .get_mut()
            .entry(p)
            .or_insert_with(|| regex::Regex::new(p).ok());
        compiled.as_ref().map(|_| ())
    }
}

/// A node's identity within the document.
fn address(v: &Value) -> usize {
    std::ptr::from_ref(v) as usize
}

/// The JSON pointer of a `$ref` to the same document (`#` or `#/…`), or `None` for any
/// other reference. Only characters a URI fragment takes as they are: no percent-escapes.
fn local_pointer(r: &str) -> Option<String> {
    let rest = r.strip_prefix('#')?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "-._~/$:@!*+,;=".contains(c);
    rest.chars().all(plain).then(|| rest.to_string())
}

fn distinct(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .all(|(n, x)| items[n + 1..].iter().all(|y| x != y))
}

fn has_type(t: &str, i: &Value) -> Option<bool> {
    Some(match (t, i) {
        ("null", Value::Null) => true,
        ("boolean", Value::Bool(_)) => true,
        ("object", Value::Object(_)) => true,
        ("array", Value::Array(_)) => true,
        ("string", Value::String(_)) => true,
        ("number", Value::Number(_)) => true,
        // `1.0` and `1e2` are integers to jsonschema from draft 6 on: only a plain
        // integer literal is decided here.
        ("integer", Value::Number(n)) if plain_integer(n) => true,
        ("integer", Value::Number(_)) => return None,
        ("null" | "boolean" | "object" | "array" | "string" | "number" | "integer", _) => false,
        _ => return None,
    })
}

fn plain_integer(n: &Number) -> bool {
    let s = n.to_string();
    let digits = s.strip_prefix('-').unwrap_or(&s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A number as an `f64` when that is exact and order-preserving: a decimal literal of at
/// most 15 significant digits and no exponent (every such decimal round-trips through an
/// `f64`, so two of them compare as their doubles do).
fn exact(n: &Number) -> Option<f64> {
    let s = n.to_string();
    let body = s.strip_prefix('-').unwrap_or(&s);
    let digits = body.bytes().filter(u8::is_ascii_digit).count();
    let shape = body.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && body.bytes().filter(|&b| b == b'.').count() <= 1;
    if !shape || digits == 0 || digits > 15 {
        return None;
    }
    s.parse().ok()
}

/// JSON equality as jsonschema decides it, or `None` where numbers are written
/// differently (`1` and `1.0`): equal in value, and left to jsonschema.
fn equal(a: &Value, b: &Value) -> Option<bool> {
    Some(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => {
            if x.to_string() == y.to_string() {
                true
            } else if exact(x)? != exact(y)? {
                false
            } else {
                return None;
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            let mut all = true;
            for (p, q) in x.iter().zip(y) {
                all &= equal(p, q)?;
            }
            all
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            let mut all = true;
            for (k, p) in x {
                match y.get(k) {
                    Some(q) => all &= equal(p, q)?,
                    None => return Some(false),
                }
            }
            all
        }
        _ => false,
    })
}

/// `min*`/`max*` on a length.
fn bound(name: &str, len: usize, limit: &Value) -> Verdict {
    let limit = usize::try_from(limit.as_u64()?).ok()?;
    Some(if name.starts_with("min") {
        len >= limit
    } else {
        len <= limit
    })
}

/// Whether a pattern keeps to a syntax Rust's `regex`, ECMA-262 (jsonschema's dialect) and
/// RE2 all accept and read the same way on ASCII text without line breaks: literals,
/// escaped syntax characters, `.`, `^`, `$`, classes of literals and ranges, groups,
/// alternation, and `*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}` (each perhaps lazy) after an
/// atom. Not: `\d`, `\w`, `\s`, `\b` (Unicode in one, ASCII in another), back-references,
/// lookaround and flags (`(?`), nested classes and class set operations (`[[`, `&&`, `--`),
/// a quantifier on nothing or on a quantifier (`a**`: Rust's `regex` takes it, ECMA-262
/// refuses it), or a brace that is not a repetition.
fn shared_syntax(p: &str) -> bool {
    if !p.is_ascii() {
        return false;
    }
    let mut parser = Shared {
        b: p.as_bytes(),
        n: 0,
    };
    parser.alternation(0) && parser.n == parser.b.len()
}

/// The parser of [`shared_syntax`]: each method consumes what it accepts.
struct Shared<'p> {
    b: &'p [u8],
    n: usize,
}

impl Shared<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.n).copied()
    }

    fn alternation(&mut self, depth: usize) -> bool {
        if depth > 32 {
            return false;
        }
        loop {
            if !self.sequence(depth) {
                return false;
            }
            if self.peek() != Some(b'|') {
                return true;
            }
            self.n += 1;
        }
    }

    fn sequence(&mut self, depth: usize) -> bool {
        while let Some(c) = self.peek() {
            let quantifiable = match c {
                b'|' | b')' => return true,
                b'^' | b'$' => {
                    self.n += 1;
                    false
                }
                b'(' => {
                    self.n += 1;
                    if self.peek() == Some(b'?') || !self.alternation(depth + 1) {
                        return false;
                    }
                    if self.peek() != Some(b')') {
                        return false;
                    }
                    self.n += 1;
                    true
                }
                b'[' => {
                    if !self.class() {
                        return false;
                    }
                    true
                }
                b'\\' => {
                    if !self.escape() {
                        return false;
                    }
                    true
                }
                b'*' | b'+' | b'?' | b'{' | b'}' | b']' => return false,
                c if c.is_ascii_control() => return false,
                _ => {
                    self.n += 1;
                    true
                }
            };
            if self.quantifier() && !quantifiable {
                return false;
            }
            if matches!(self.peek(), Some(b'*' | b'+' | b'?' | b'{')) {
                // A quantifier after a quantifier (its lazy `?` taken).
                return false;
            }
        }
        true
    }

    /// An escaped syntax character.
    fn escape(&mut self) -> bool {
        match self.b.get(self.n + 1) {
            Some(c) if b"^$\\.*+?()[]{}|/".contains(c) => {
                self.n += 2;
                true
            }
            _ => false,
        }
    }

    /// A quantifier here, if any (and its lazy `?`); `false` when there is none.
    fn quantifier(&mut self) -> bool {
        match self.peek() {
            Some(b'*' | b'+' | b'?') => self.n += 1,
            Some(b'{') => {
                let digits = |s: &mut Self| {
                    let start = s.n;
                    while s.peek().is_some_and(|c| c.is_ascii_digit()) {
                        s.n += 1;
                    }
                    std::str::from_utf8(&s.b[start..s.n])
                        .ok()
                        .and_then(|d| d.parse::<u32>().ok())
                };
                let at = self.n;
                self.n += 1;
                let Some(lo) = digits(self).filter(|&lo| lo <= 1000) else {
                    self.n = at;
                    return false;
                };
                if self.peek() == Some(b',') {
                    self.n += 1;
                    if self.peek() != Some(b'}') {
                        match digits(self) {
                            Some(hi) if hi >= lo && hi <= 1000 => {}
                            _ => {
                                self.n = at;
                                return false;
                            }
                        }
                    }
                }
                if self.peek() != Some(b'}') {
                    self.n = at;
                    return false;
                }
                self.n += 1;
            }
            _ => return false,
        }
        if self.peek() == Some(b'?') {
            self.n += 1;
        }
        true
    }

    /// `[…]` or `[^…]`: literals, escaped syntax characters and ascending ranges.
    fn class(&mut self) -> bool {
        self.n += 1;
        if self.peek() == Some(b'^') {
            self.n += 1;
        }
        let mut members = 0;
        let mut last: Option<u8> = None;
        loop {
            let c = match self.peek() {
                None => return false,
                Some(b']') if members > 0 => {
                    self.n += 1;
                    return true;
                }
                Some(b'[' | b']') => return false,
                Some(b'\\') => {
                    if !self.escape() {
                        return false;
                    }
                    self.b[self.n - 1]
                }
                Some(b'&' | b'~') if self.b.get(self.n + 1) == self.peek().as_ref() => {
                    return false;
                }
                Some(b'-') if members > 0 && self.b.get(self.n + 1) != Some(&b']') => {
                    // A range: the member before to the one after.
                    self.n += 1;
                    let hi = match self.peek() {
                        Some(b'\\' | b'[' | b']' | b'-') | None => return false,
                        Some(hi) => hi,
                    };
                    match last {
                        Some(lo)
                            if lo <= hi
                                && lo.is_ascii_alphanumeric()
                                && hi.is_ascii_alphanumeric() => {}
                        _ => return false,
                    }
                    self.n += 1;
                    members += 1;
                    last = None;
                    continue;
                }
                Some(c) if c.is_ascii_control() => return false,
                Some(c) => {
                    self.n += 1;
                    c
                }
            };
            members += 1;
            last = Some(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// jsonschema's verdict: the schema compiles (its meta-schema check included) and the
    /// instance is valid.
    fn jsonschema_valid(schema: &Value, instance: &Value) -> bool {
        jsonschema::validator_for(schema).is_ok_and(|v| v.is_valid(instance))
    }

    /// A proof is never given where jsonschema refuses.
    fn agrees(schema: &Value, instance: &Value) -> bool {
        let proven = proves_valid(schema, instance);
        assert!(
            !proven || jsonschema_valid(schema, instance),
            "proven valid but jsonschema refuses:\nschema {schema}\ninstance {instance}"
        );
        proven
    }

    #[test]
    fn values_within_the_subset_are_proven_and_jsonschema_agrees() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://example.com/chart.schema.json",
            "type": "object",
            "additionalProperties": false,
            "required": ["image"],
            "properties": {
                "image": {"$ref": "#/$defs/image"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"enum": ["a", "b"]},
                "ports": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true},
                "extra": {"type": ["object", "null"]},
            },
            "$defs": {
                "image": {
                    "type": "object",
                    "properties": {
                        "tag": {"type": "string", "pattern": "^v[0-9]+(\\.[0-9]+)*$", "minLength": 2},
                        "digest": {"type": ["string", "null"], "pattern": "^sha256:[a-f0-9]{64}$"},
                    }
                }
            }
        });
        let good = json!({"image": {"tag": "v1.2", "digest": null}, "replicas": 3, "mode": "a",
            "ports": [80, 443], "extra": null});
        assert!(agrees(&schema, &good));
        for bad in [
            json!({"image": {"tag": "1.2"}}),
            json!({"image": {}, "replicas": 0}),
            json!({"image": {}, "replicas": 11}),
            json!({"image": {}, "mode": "c"}),
            json!({"image": {}, "ports": [80, 80]}),
            json!({"image": {}, "unknown": 1}),
            json!({"replicas": 2}),
            json!({"image": {"tag": "v"}}),
            json!({"image": {}, "extra": []}),
        ] {
            assert!(!agrees(&schema, &bad), "{bad}");
            assert!(!jsonschema_valid(&schema, &bad), "{bad}");
        }
    }

    #[test]
    fn draft_7_with_refs_definitions_and_combinators() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"port": {"type": "integer", "minimum": 0, "maximum": 65535}},
            "type": "object",
            "properties": {
                "port": {"$ref": "#/definitions/port", "description": "the port"},
                "either": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                "one": {"oneOf": [{"type": "string"}, {"const": 5}]},
                "cond": {"if": {"type": "string"}, "then": {"maxLength": 3}, "else": {"type": "integer"}},
                "neg": {"not": {"type": "null"}},
                "all": {"allOf": [{"type": "object"}, {"required": ["a"]}], "maxProperties": 2},
            }
        });
        assert!(agrees(
            &schema,
            &json!({"port": 80, "either": true, "one": "x", "cond": "abc", "neg": 1, "all": {"a": 1}})
        ));
        for bad in [
            json!({"port": 70000}),
            json!({"either": 1}),
            json!({"one": 6}),
            json!({"cond": "abcd"}),
            json!({"cond": 1.5}),
            json!({"neg": null}),
            json!({"all": {"b": 1}}),
            json!({"all": {"a": 1, "b": 2, "c": 3}}),
        ] {
            assert!(!agrees(&schema, &bad), "{bad}");
        }
    }

    #[test]
    fn a_schema_jsonschema_refuses_is_never_proven() {
        // Each is invalid against its meta-schema, or does not compile.
        for schema in [
            json!({"type": "strnig"}),
            json!({"type": ["string", "string"]}),
            json!({"properties": {"a": 5}}),
            json!({"required": "a"}),
            json!({"minItems": -1}),
            json!({"allOf": []}),
            json!({"$ref": "#/definitions/missing"}),
            json!({"$ref": "#/properties/a/default", "properties": {"a": {"default": {"type": "string"}}}}),
            json!({"pattern": "(unclosed"}),
            json!({"title": 5}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "properties": {"a": {"$schema": "x"}}}),
        ] {
            assert!(!agrees(&schema, &json!({"a": "x"})), "{schema}");
        }
    }

    #[test]
    fn what_the_subset_does_not_decide_is_left_to_jsonschema() {
        let d7 = "http://json-schema.org/draft-07/schema#";
        for (schema, instance) in [
            // draft 7 asserts formats
            (json!({"$schema": d7, "format": "email"}), json!("a@b.c")),
            // not read: multipleOf, patternProperties, dependencies, a $ref elsewhere
            (json!({"multipleOf": 2}), json!(4)),
            (json!({"patternProperties": {"^\\w": {}}}), json!({"a": 1})),
            (
                json!({"dependencies": {"a": ["b"]}}),
                json!({"a": 1, "b": 2}),
            ),
            (json!({"$ref": "other.json#/x"}), json!(1)),
            // numbers that need more than a double, or written two ways
            (json!({"maximum": 10}), serde_json::from_str("1e1").unwrap()),
            (
                json!({"minimum": 0}),
                serde_json::from_str("12345678901234567890").unwrap(),
            ),
            (json!({"type": "integer"}), json!(1.0)),
            (json!({"const": 1}), json!(1.0)),
            // a pattern whose classes the dialects read differently
            (json!({"pattern": "^\\d+$"}), json!("12")),
            (json!({"pattern": "^.+$"}), json!("é")),
            // an unknown dialect, a draft the proof does not read
            (json!({"$schema": "https://example.com/meta"}), json!(1)),
            (
                json!({"$schema": "http://json-schema.org/draft-04/schema#"}),
                json!(1),
            ),
            // a $ref cycle that consumes nothing
            (json!({"$ref": "#"}), json!(1)),
            // a pattern in the shared syntax too large to compile, even where no value
            // meets it (jsonschema's compile, and Go's, refuse the schema)
            (
                json!({"properties": {"b": {"pattern": "(a{1000}){1000}"}}}),
                json!({"a": 1}),
            ),
        ] {
            assert!(!agrees(&schema, &instance), "{schema} {instance}");
        }
    }

    #[test]
    fn a_draft_7_ref_overrides_its_siblings_as_jsonschema_reads_it() {
        let schema = json!({"$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"a": {}}, "$ref": "#/definitions/a", "type": "string"});
        assert!(jsonschema_valid(&schema, &json!(5)));
        assert!(agrees(&schema, &json!(5)));
        // 2020-12 applies both.
        let schema = json!({"$defs": {"a": {}}, "$ref": "#/$defs/a", "type": "string"});
        assert!(agrees(&schema, &json!("x")));
        assert!(!agrees(&schema, &json!(5)));
    }

    /// Random schemas in and around the subset, with random instances: every proof holds
    /// against jsonschema, and a good share of valid pairs are proven (the proof is of use).
    #[test]
    fn random_schemas_and_values_never_prove_what_jsonschema_refuses() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut proven, mut valid) = (0, 0);
        for _ in 0..4000 {
            let schema = rng.schema(3);
            for _ in 0..3 {
                let instance = rng.instance(3);
                let ok = jsonschema_valid(&schema, &instance);
                let p = agrees(&schema, &instance);
                valid += usize::from(ok);
                proven += usize::from(p);
            }
        }
        assert!(valid > 500, "{valid}");
        assert!(proven * 2 > valid, "{proven} of {valid} valid pairs proven");
    }

    use crate::testutil::Rng;

    /// The generators of the random test.
    impl Rng {
        fn instance(&mut self, depth: u32) -> Value {
            match self.below(if depth == 0 { 6 } else { 8 }) {
                0 => Value::Null,
                1 => json!(self.below(2) == 0),
                2 => json!(self.below(12) as i64 - 2),
                3 => json!(self.pick(&[0.5, 1.0, 2.5, -1.5, 1e3])),
                4 => json!(self.pick(&["", "a", "ab", "abc", "v1", "x-y", "é", "a\nb", "12"])),
                5 => json!(self.pick(&["a", "b", "c", "port"])),
                6 => Value::Array(
                    (0..self.below(4))
                        .map(|_| self.instance(depth - 1))
                        .collect(),
                ),
                _ => {
                    let mut m = Map::new();
                    for _ in 0..self.below(4) {
                        let k: &str = self.pick(&["a", "b", "c", "port", "x"]);
                        m.insert(k.to_string(), self.instance(depth - 1));
                    }
                    Value::Object(m)
                }
            }
        }
        fn schema(&mut self, depth: u32) -> Value {
            if self.below(10) == 0 {
                return json!(self.below(3) != 0);
            }
            let mut m = Map::new();
            if depth == 3 {
                match self.below(4) {
                    0 => {
                        m.insert(
                            "$schema".into(),
                            json!("http://json-schema.org/draft-07/schema#"),
                        );
                    }
                    1 => {
                        m.insert(
                            "$schema".into(),
                            json!("https://json-schema.org/draft/2020-12/schema"),
                        );
                    }
                    _ => {}
                }
                m.insert(
                    "$defs".into(),
                    json!({"p": {"type": "integer", "minimum": 0, "x": {"type": "string"}}}),
                );
                m.insert(
                    "definitions".into(),
                    json!({"s": {"type": "string", "maxLength": 2}}),
                );
            }
            for _ in 0..self.below(4) {
                let (k, v) = self.keyword(depth);
                m.insert(k.to_string(), v);
            }
            Value::Object(m)
        }
        fn keyword(&mut self, depth: u32) -> (&'static str, Value) {
            let sub = |r: &mut Rng| {
                if depth == 0 {
                    json!({})
                } else {
                    r.schema(depth - 1)
                }
            };
            match self.below(if depth == 0 { 16 } else { 29 }) {
                0 => (
                    "type",
                    json!(self.pick(&[
                        "null", "boolean", "integer", "number", "string", "array", "object"
                    ])),
                ),
                1 => (
                    "type",
                    json!([
                        "string",
                        self.pick(&["null", "integer", "object", "string"])
                    ]),
                ),
                2 => ("enum", json!([self.instance(1), "a", 1])),
                3 => ("const", self.instance(1)),
                4 => ("minimum", json!(self.pick(&[0, 1, 2]))),
                5 => ("maximum", json!(self.pick(&[1.5, 3.0, 5.0]))),
                6 => ("exclusiveMinimum", json!(0)),
                7 => ("minLength", json!(self.below(3))),
                8 => ("maxItems", json!(self.below(3))),
                9 => ("required", json!([self.pick(&["a", "b", "port"])])),
                10 => ("uniqueItems", json!(true)),
                11 => (
                    "pattern",
                    json!(self.pick(&[
                        "^a", "b$", "^[a-z]+$", "^\\d$", "^.$", "x{2,", "a{,3}", "[a-]", "\\-",
                        "a{2}{3}", "(a)|", "[]", "[^]", "a**", "^\\.$", "[\\]]"
                    ])),
                ),
                12 => ("format", json!(self.pick(&["email", "uri", "date"]))),
                13 => (
                    "$ref",
                    json!(self.pick(&["#/$defs/p", "#/definitions/s", "#/$defs/q", "#"])),
                ),
                14 => ("minProperties", json!(1)),
                15 => ("multipleOf", json!(2)),
                26 => (
                    "patternProperties",
                    json!({self.pick(&["^a", "^p", "[", "^\\d"]): sub(self)}),
                ),
                27 => (
                    "dependencies",
                    json!({"a": self.pick(&[json!(["b"]), json!({"required": ["port"]}), json!(["b", "b"])])}),
                ),
                28 => (
                    "$ref",
                    json!(self.pick(&[
                        "#/$defs/p/x",
                        "#/properties/a",
                        "#/definitions/s/minLength"
                    ])),
                ),
                16 => ("properties", json!({"a": sub(self), "port": sub(self)})),
                17 => ("additionalProperties", sub(self)),
                18 => ("items", sub(self)),
                19 => ("allOf", json!([sub(self), sub(self)])),
                20 => ("anyOf", json!([sub(self), sub(self)])),
                21 => ("oneOf", json!([sub(self), sub(self)])),
                22 => ("not", sub(self)),
                23 => ("if", sub(self)),
                24 => ("then", sub(self)),
                25 => ("else", sub(self)),
                _ => ("not", json!(false)),
            }
        }
    }
}
