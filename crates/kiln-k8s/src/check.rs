//! The walk of one value against a compiled [`Node`], collecting every [`Finding`] (not
//! stopping at the first), each at the JSON Pointer of the offending value.
//!
//! What it holds a value to is what the API server holds it to: for built-in kinds, its
//! strict JSON decoding (k8s.io/apimachinery `pkg/runtime/serializer/json`, sigs.k8s.io/json:
//! unknown fields, Go's types, int32 range, base64 `[]byte`, RFC 3339 `metav1.Time`,
//! `resource.Quantity`); for CRDs, the structural schema's pruning (unknown fields) and
//! kube-openapi's value validations plus CEL rules. `null` is accepted everywhere: Go decodes
//! it to the zero value, and CRD pruning drops it before validation.

use crate::cel::Outcome;
use crate::schema::{Decode, Extra, Format, ListType, Node, NodeId, Schemas, Ty};
use crate::{Code, Finding};
use serde_json::Value;

/// Counts what could not be checked, for the report.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// CEL rules not evaluated (transition rules, functions outside kiln's CEL environment).
    pub cel_rules: usize,
}

/// Applies a CRD's structural `default`s to `value`, as the API server does when it decodes
/// a custom resource, before pruning and validation (k8s.io/apiextensions-apiserver
/// `pkg/apiserver/schema/defaulting/algorithm.go`, `Default`): a property that is missing,
/// or `null` and not `nullable`, takes a copy of its default; then every property, map value
/// and list item is defaulted below, the copied defaults included.
pub(crate) fn apply_defaults(schemas: &Schemas, id: NodeId, value: &mut Value) {
    let node = &schemas.nodes[id];
    if let Some(target) = node.target {
        return apply_defaults(schemas, target, value);
    }
    // A non-nullable `null` map value or list item takes its schema's default.
    let null_default = |sub: NodeId, v: &mut Value| {
        let n = &schemas.nodes[sub];
        if let (Value::Null, Some(d), false) = (&*v, &n.default, n.nullable) {
            *v = d.clone();
        }
    };
    match value {
        Value::Object(map) => {
            for (key, &sub) in &node.properties {
                let prop = &schemas.nodes[sub];
                if let Some(default) = &prop.default
                    && map.get(key).is_none_or(|v| v.is_null() && !prop.nullable)
                {
                    map.insert(key.clone(), default.clone());
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(&sub) = node.properties.get(key) {
                    apply_defaults(schemas, sub, child);
                } else if let Extra::Schema(sub) = node.extra {
                    null_default(sub, child);
                    apply_defaults(schemas, sub, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = node.items {
                for item in items {
                    null_default(sub, item);
                    apply_defaults(schemas, sub, item);
                }
            }
        }
        _ => {}
    }
}

/// One walk: the arena, the findings, the counters.
pub(crate) struct Walk<'a> {
    pub schemas: &'a Schemas,
    pub findings: Vec<Finding>,
    pub skipped: Skipped,
}

/// Appends `/i` to `pointer`.
fn push_index(pointer: &mut String, i: usize) {
    use std::fmt::Write as _;
    // Writing into a String cannot fail.
    let _ = write!(pointer, "/{i}");
}

/// JSON type name as the server's messages say it.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An integral JSON number (`3` or `3.0`: YAML's float with no fraction reaches the server
/// as `3` once sigs.k8s.io/yaml has turned it into JSON).
fn as_integer(value: &Value) -> Option<Option<i128>> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(Some(i128::from(i)));
    }
    if let Some(u) = n.as_u64() {
        return Some(Some(i128::from(u)));
    }
    let f = n.as_f64()?;
    // Out of i128's range or fractional: not an integer the server takes.
    #[allow(clippy::cast_possible_truncation)]
    Some((f.fract() == 0.0 && f.abs() < 1e30).then_some(f as i128))
}

/// RFC 3339 date-time as Go's `time.Parse(time.RFC3339, …)` takes it.
fn is_date_time(s: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
            .expect("a valid pattern")
    })
    .is_match(s)
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// `resource.ParseQuantity`'s grammar (k8s.io/apimachinery `pkg/api/resource/quantity.go`).
pub fn is_quantity(s: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$",
        )
        .expect("a valid pattern")
    })
    .is_match(s)
}

impl Walk<'_> {
    fn push(&mut self, code: Code, pointer: &str, message: String) {
        self.findings.push(Finding {
            code,
            pointer: pointer.to_string(),
            message,
        });
    }

    /// Checks `value` at `pointer` against `id`. `structural` is false inside
    /// `allOf`/`anyOf`/`oneOf`/`not`, whose subschemas validate values but never prune
    /// (so never report unknown fields).
    ///
    /// `pointer` is one buffer for the whole walk: each child's token is pushed and popped,
    /// so a walk allocates nothing per field it checks.
    pub fn check(&mut self, id: NodeId, value: &Value, pointer: &mut String, structural: bool) {
        let node: &Node = &self.schemas.nodes[id];
        if let Some(target) = node.target {
            return self.check(target, value, pointer, structural);
        }
        if value.is_null() {
            return;
        }
        if let Some(decode) = node.decode {
            return self.decode(decode, value, pointer);
        }
        if !self.check_type(node, value, pointer) {
            return;
        }
        self.check_format(node, value, pointer);
        self.check_values(node, value, pointer);
        let len = pointer.len();
        match value {
            Value::Object(map) => {
                for key in &node.required {
                    if !map.contains_key(key) {
                        let at = format!("{pointer}/{}", kiln_base::pointer::escape(key));
                        self.push(
                            Code::RequiredField,
                            &at,
                            format!("required field `{key}` is missing"),
                        );
                    }
                }
                for (key, child) in map {
                    kiln_base::pointer::push(pointer, key);
                    if let Some(&sub) = node.properties.get(key) {
                        self.check(sub, child, pointer, structural);
                    } else {
                        match node.extra {
                            Extra::Schema(sub) => self.check(sub, child, pointer, structural),
                            Extra::Preserved => {}
                            Extra::Forbidden if structural => {
                                let known: Vec<&str> =
                                    node.properties.keys().map(String::as_str).collect();
                                let hint =
                                    kiln_base::diag::did_you_mean(key, known.iter().copied())
                                        .map(|m| format!("; did you mean `{m}`?"))
                                        .unwrap_or_default();
                                self.push(
                                    Code::UnknownField,
                                    pointer,
                                    format!("unknown field `{key}`{hint}"),
                                );
                            }
                            Extra::Forbidden => {}
                        }
                    }
                    pointer.truncate(len);
                }
                if node.embedded {
                    for key in ["apiVersion", "kind", "metadata"] {
                        if !map.contains_key(key) {
                            self.push(
                                Code::EmbeddedResource,
                                pointer,
                                format!("an embedded resource needs `{key}`"),
                            );
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = node.items {
                    for (i, item) in items.iter().enumerate() {
                        push_index(pointer, i);
                        self.check(sub, item, pointer, structural);
                        pointer.truncate(len);
                    }
                }
                self.check_list_type(node, items, pointer);
            }
            _ => {}
        }
        let (all, any, one, not) = (&node.all_of, &node.any_of, &node.one_of, node.not);
        for &sub in all {
            self.check(sub, value, pointer, false);
        }
        if !any.is_empty() && !any.iter().any(|&s| self.passes(s, value, pointer)) {
            self.push(
                Code::AnyOf,
                pointer,
                "matches none of the schemas of `anyOf`".to_string(),
            );
        }
        if !one.is_empty() {
            let n = one
                .iter()
                .filter(|&&s| self.passes(s, value, pointer))
                .count();
            if n != 1 {
                self.push(
                    Code::OneOf,
                    pointer,
                    format!("must match exactly one schema of `oneOf`, matches {n}"),
                );
            }
        }
        if let Some(sub) = not
            && self.passes(sub, value, pointer)
        {
            self.push(
                Code::Not,
                pointer,
                "must not match the schema of `not`".to_string(),
            );
        }
        self.check_rules(id, value, pointer);
    }

    /// A Go type with its own `UnmarshalJSON` ([`Decode`]): the shape is chosen by the value,
    /// and what is below is decoded without strictness (unknown fields are dropped).
    fn decode(&mut self, decode: Decode, value: &Value, pointer: &mut String) {
        match (decode, value) {
            (Decode::Raw, _) => {}
            (
                Decode::SchemaOrBool(props)
                | Decode::SchemaOrArray(props)
                | Decode::SchemaOrStringArray(props),
                Value::Object(_),
            ) => self.check(props, value, pointer, false),
            (Decode::SchemaOrBool(_), Value::Bool(_)) => {}
            (Decode::SchemaOrBool(_), other) => self.push(
                Code::WrongType,
                pointer,
                format!(
                    "must be a boolean or a schema object, not {}",
                    json_type(other)
                ),
            ),
            (Decode::SchemaOrArray(props), Value::Array(items)) => {
                let len = pointer.len();
                for (i, item) in items.iter().enumerate() {
                    push_index(pointer, i);
                    self.check(props, item, pointer, false);
                    pointer.truncate(len);
                }
            }
            (Decode::SchemaOrStringArray(_), Value::Array(items)) => {
                for (i, item) in items.iter().enumerate().filter(|(_, v)| !v.is_string()) {
                    self.push(
                        Code::WrongType,
                        &format!("{pointer}/{i}"),
                        format!("must be a string, not {}", json_type(item)),
                    );
                }
            }
            // `JSONSchemaPropsOrArray` and `…OrStringArray` drop any other value.
            (Decode::SchemaOrArray(_) | Decode::SchemaOrStringArray(_), _) => {}
        }
    }

    /// `true` when `value` passes `id` with no finding (for `anyOf`, `oneOf`, `not`).
    fn passes(&mut self, id: NodeId, value: &Value, pointer: &mut String) -> bool {
        let mut inner = Walk {
            schemas: self.schemas,
            findings: Vec::new(),
            skipped: Skipped::default(),
        };
        inner.check(id, value, pointer, false);
        inner.findings.is_empty()
    }

    /// The type check; `false` stops the walk below this value.
    fn check_type(&mut self, node: &Node, value: &Value, pointer: &str) -> bool {
        let ok = match node.ty {
            Ty::Any => true,
            Ty::Object => value.is_object(),
            Ty::Array => value.is_array(),
            Ty::String => value.is_string(),
            Ty::Boolean => value.is_boolean(),
            Ty::Number => value.is_number(),
            Ty::Integer => matches!(as_integer(value), Some(Some(_))),
            Ty::IntOrString => value.is_string() || matches!(as_integer(value), Some(Some(_))),
            Ty::Quantity => {
                if let Value::String(s) = value {
                    if !is_quantity(s.trim()) {
                        self.push(
                            Code::InvalidQuantity,
                            pointer,
                            format!("`{s}` is not a quantity (a number with an optional suffix: `500m`, `128Mi`, `1e3`)"),
                        );
                    }
                    return false;
                }
                value.is_number()
            }
        };
        if !ok {
            let want = match node.ty {
                Ty::Object => "an object",
                Ty::Array => "an array",
                Ty::String => "a string",
                Ty::Boolean => "a boolean",
                Ty::Number => "a number",
                Ty::Integer => "an integer",
                Ty::IntOrString => "an integer or a string",
                Ty::Quantity => "a quantity (a string such as `128Mi`, or a number)",
                Ty::Any => "anything",
            };
            let shown = match value {
                Value::String(_) | Value::Object(_) | Value::Array(_) => String::new(),
                other => format!(" `{other}`"),
            };
            self.push(
                Code::WrongType,
                pointer,
                format!("must be {want}, not {}{shown}", json_type(value)),
            );
        }
        ok
    }

    fn check_format(&mut self, node: &Node, value: &Value, pointer: &str) {
        let Some(format) = node.format else { return };
        match (format, value) {
            (Format::Int32 | Format::Int64, _) => {
                let Some(Some(i)) = as_integer(value) else {
                    return;
                };
                let (lo, hi, name) = match format {
                    Format::Int32 => (i128::from(i32::MIN), i128::from(i32::MAX), "int32"),
                    _ => (i128::from(i64::MIN), i128::from(i64::MAX), "int64"),
                };
                if i < lo || i > hi {
                    self.push(
                        Code::IntegerRange,
                        pointer,
                        format!("{i} is out of range for {name}"),
                    );
                }
            }
            // Go's encoding/json decodes `[]byte` with StdEncoding (padded).
            (Format::Byte, Value::String(s)) if !crate::server::is_base64(s) => {
                self.push(
                    Code::InvalidBase64,
                    pointer,
                    "is not valid base64 (a byte string is base64-encoded)".to_string(),
                );
            }
            (Format::DateTime, Value::String(s)) if !is_date_time(s) => {
                self.push(
                    Code::InvalidDateTime,
                    pointer,
                    format!("`{s}` is not an RFC 3339 date-time (`2006-01-02T15:04:05Z`)"),
                );
            }
            (Format::Date, Value::String(s)) if !is_date(s) => {
                self.push(
                    Code::InvalidDate,
                    pointer,
                    format!("`{s}` is not a full-date (`2006-01-02`)"),
                );
            }
            _ => {}
        }
    }

    fn check_values(&mut self, node: &Node, value: &Value, pointer: &str) {
        if !node.enumeration.is_empty() && !node.enumeration.iter().any(|e| same(e, value)) {
            let allowed: Vec<String> = node.enumeration.iter().map(Value::to_string).collect();
            self.push(
                Code::Enum,
                pointer,
                format!("{value} is not one of {}", allowed.join(", ")),
            );
        }
        if let (Some(re), Value::String(s)) = (&node.pattern, value)
            && !re.is_match(s)
        {
            self.push(
                Code::Pattern,
                pointer,
                format!("`{s}` does not match `{}`", re.as_str()),
            );
        }
        if let Some(n) = value.as_f64() {
            if let Some((min, exclusive)) = node.minimum
                && (n < min || exclusive && n == min)
            {
                let op = if exclusive { ">" } else { ">=" };
                self.push(
                    Code::Minimum,
                    pointer,
                    format!("{value} must be {op} {min}"),
                );
            }
            if let Some((max, exclusive)) = node.maximum
                && (n > max || exclusive && n == max)
            {
                let op = if exclusive { "<" } else { "<=" };
                self.push(
                    Code::Maximum,
                    pointer,
                    format!("{value} must be {op} {max}"),
                );
            }
        }
        let bound = |this: &mut Self,
                     len: usize,
                     min: Option<u64>,
                     max: Option<u64>,
                     codes: (Code, Code),
                     what: &str| {
            let len = len as u64;
            if let Some(min) = min
                && len < min
            {
                this.push(
                    codes.0,
                    pointer,
                    format!("has {len} {what}, fewer than {min}"),
                );
            }
            if let Some(max) = max
                && len > max
            {
                this.push(
                    codes.1,
                    pointer,
                    format!("has {len} {what}, more than {max}"),
                );
            }
        };
        match value {
            Value::String(s) => bound(
                self,
                s.chars().count(),
                node.min_length,
                node.max_length,
                (Code::MinLength, Code::MaxLength),
                "characters",
            ),
            Value::Array(a) => bound(
                self,
                a.len(),
                node.min_items,
                node.max_items,
                (Code::MinItems, Code::MaxItems),
                "items",
            ),
            Value::Object(m) => bound(
                self,
                m.len(),
                node.min_properties,
                node.max_properties,
                (Code::MinProperties, Code::MaxProperties),
                "properties",
            ),
            _ => {}
        }
    }

    fn check_list_type(&mut self, node: &Node, items: &[Value], pointer: &str) {
        match &node.list_type {
            ListType::Atomic => {}
            ListType::Set => {
                for (i, item) in items.iter().enumerate() {
                    if items[..i].iter().any(|e| same(e, item)) {
                        self.push(
                            Code::DuplicateSetItem,
                            &format!("{pointer}/{i}"),
                            format!("duplicate value {item} in a set"),
                        );
                    }
                }
            }
            ListType::Map(keys) => {
                let key_of = |v: &Value| -> Vec<Value> {
                    keys.iter()
                        .map(|k| v.get(k).cloned().unwrap_or(Value::Null))
                        .collect()
                };
                for (i, item) in items.iter().enumerate() {
                    let k = key_of(item);
                    if items[..i].iter().any(|e| key_of(e) == k) {
                        let shown: Vec<String> = keys
                            .iter()
                            .zip(&k)
                            .map(|(n, v)| format!("{n}={v}"))
                            .collect();
                        self.push(
                            Code::DuplicateMapKey,
                            &format!("{pointer}/{i}"),
                            format!("duplicate entry for key {}", shown.join(", ")),
                        );
                    }
                }
            }
        }
    }

    fn check_rules(&mut self, id: NodeId, value: &Value, pointer: &str) {
        let rules = &self.schemas.nodes[id].rules;
        let mut found = Vec::new();
        for rule in rules {
            match rule.evaluate(value) {
                Outcome::Passed => {}
                Outcome::Unsupported(_) => self.skipped.cel_rules += 1,
                Outcome::Failed(message) => {
                    let at = match &rule.field_path {
                        Some(path) => format!("{pointer}{}", field_path_pointer(path)),
                        None => pointer.to_string(),
                    };
                    found.push((Code::CelRule, at, message));
                }
                Outcome::Error(message) => {
                    found.push((Code::CelError, pointer.to_string(), message))
                }
            }
        }
        for (code, at, message) in found {
            self.push(code, &at, message);
        }
    }
}

/// `fieldPath` (`.spec.replicas`, `['a.b']`) as a JSON Pointer suffix.
fn field_path_pointer(path: &str) -> String {
    let mut out = String::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        out.push('/');
        out.push_str(&kiln_base::pointer::escape(
            part.trim_start_matches("['").trim_end_matches("']"),
        ));
    }
    out
}

/// JSON equality with numbers compared by value (`1` and `1.0` are one enum member).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}
