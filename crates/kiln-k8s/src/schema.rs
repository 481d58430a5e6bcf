//! Schemas compiled once into an arena of [`Node`]s: the built-in tables (JSON Schema as
//! k8s-openapi's `schemars` impls write it, `$ref`s into `definitions`) and CRDs'
//! `openAPIV3Schema` (structural schemas, no `$ref`) take the same path. Compiling resolves
//! references to indices, parses patterns and CEL programs, and reads the `x-kubernetes-*`
//! extensions, so checking an object is one walk with no lookups by name.
//!
//! Mirrors what the API server reads of a schema: k8s.io/apiextensions-apiserver's
//! `pkg/apiserver/schema` (structural schema, `x-kubernetes-*`) and kube-openapi's
//! `pkg/validation/validate` (the value validations).

use crate::cel::Rule;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Index of a node in a [`Schemas`] arena.
pub type NodeId = usize;

/// The JSON type a node admits (`type:`, or the Kubernetes extensions that stand for one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// No `type`: anything (a built-in `RawExtension`, or `x-kubernetes-preserve-unknown-fields`).
    Any,
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    /// `x-kubernetes-int-or-string`: an integer or a string.
    IntOrString,
    /// `resource.Quantity`: a string in the Quantity grammar, or a number.
    Quantity,
}

/// The `format`s the API server checks while decoding (built-ins) or validating (CRDs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Int32,
    Int64,
    /// Base64 (`[]byte` fields; `format: byte` in CRDs).
    Byte,
    /// RFC 3339 (`metav1.Time`, `format: date-time`).
    DateTime,
    /// `format: date`, full-date of RFC 3339.
    Date,
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    Atomic,
    Set,
    /// `map`, with `x-kubernetes-list-map-keys`.
    Map(Vec<String>),
}

/// How fields outside `properties` are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    /// Unknown fields are errors (strict field validation).
    Forbidden,
    /// `additionalProperties: {schema}`: a map whose values follow the schema.
    Schema(NodeId),
    /// `x-kubernetes-preserve-unknown-fields`, or a built-in free-form object.
    Preserved,
}

/// One compiled schema node.
#[derive(Debug, Clone)]
pub struct Node {
    pub ty: Ty,
    pub format: Option<Format>,
    pub properties: BTreeMap<String, NodeId>,
    pub required: Vec<String>,
    pub extra: Extra,
    pub items: Option<NodeId>,
    pub enumeration: Vec<Value>,
    pub pattern: Option<regex::Regex>,
    pub minimum: Option<(f64, bool)>,
    pub maximum: Option<(f64, bool)>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub list_type: ListType,
    /// `x-kubernetes-embedded-resource`: needs `apiVersion`, `kind` and `metadata`.
    pub embedded: bool,
    pub all_of: Vec<NodeId>,
    pub any_of: Vec<NodeId>,
    pub one_of: Vec<NodeId>,
    pub not: Option<NodeId>,
    /// `x-kubernetes-validations`.
    pub rules: Vec<Rule>,
    /// A CRD's `default`, applied before validation (`crate::check::apply_defaults`).
    pub default: Option<Value>,
    /// `nullable: true`: a `null` stays, where a non-nullable one takes the default.
    pub nullable: bool,
    /// A `$ref`: the node is its target.
    pub target: Option<NodeId>,
    /// A Go type with its own `UnmarshalJSON` that picks its shape by the value's first
    /// byte (apiextensions' `JSONSchemaPropsOr*`): checked by [`Decode`], not by `oneOf`.
    pub decode: Option<Decode>,
}

/// How a Go type with its own `UnmarshalJSON` reads a value (k8s.io/apiextensions-apiserver
/// `pkg/apis/apiextensions/v1/marshal.go`). k8s-openapi describes them as `oneOf`s (and
/// `JSON` as `type: object`), which the server never checks; it decodes. Inside such a type
/// the decode is Go's plain `json.Unmarshal`, not the strict one, so unknown fields below it
/// are dropped, not refused: the schemas under it are walked without strictness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decode {
    /// `JSON`: any value, kept raw (`default`, `example`, `enum` items).
    Raw,
    /// `JSONSchemaPropsOrBool`: a schema object or a boolean; anything else is an error
    /// ("boolean or JSON schema expected").
    SchemaOrBool(NodeId),
    /// `JSONSchemaPropsOrArray`: a schema object or a list of them; anything else is dropped.
    SchemaOrArray(NodeId),
    /// `JSONSchemaPropsOrStringArray`: a schema object or a list of strings; anything else is
    /// dropped.
    SchemaOrStringArray(NodeId),
}

impl Node {
    fn new(ty: Ty) -> Node {
        Node {
            ty,
            format: None,
            properties: BTreeMap::new(),
            required: Vec::new(),
            extra: Extra::Forbidden,
            items: None,
            enumeration: Vec::new(),
            pattern: None,
            minimum: None,
            maximum: None,
            min_length: None,
            max_length: None,
            min_items: None,
            max_items: None,
            min_properties: None,
            max_properties: None,
            list_type: ListType::Atomic,
            embedded: false,
            all_of: Vec::new(),
            any_of: Vec::new(),
            one_of: Vec::new(),
            not: None,
            rules: Vec::new(),
            default: None,
            nullable: false,
            target: None,
            decode: None,
        }
    }
}

/// A schema that could not be compiled (a CRD's bad pattern, an unresolved `$ref`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON Pointer into the schema.
    pub pointer: String,
    pub message: String,
}

/// An arena of compiled nodes; built-in tables and CRDs each own one.
#[derive(Debug, Default)]
pub struct Schemas {
    pub nodes: Vec<Node>,
    /// Definition name → node, for `$ref` (built-in tables).
    by_name: BTreeMap<String, NodeId>,
}

/// Where a schema is read from: built-in tables (free-form `type: object` preserves, `$ref`
/// resolves, Quantity is known by name) or a CRD (structural: `type: object` with no
/// properties prunes everything, so its unknown fields are reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Builtin,
    Crd,
}

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const APIEXTENSIONS: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.";

/// The [`Decode`] of a built-in definition with its own `UnmarshalJSON`, if it is one.
fn decode_of(name: &str, by_name: &BTreeMap<String, NodeId>) -> Option<Decode> {
    let short = name.strip_prefix(APIEXTENSIONS)?;
    let props = *by_name.get(&format!("{APIEXTENSIONS}JSONSchemaProps"))?;
    Some(match short {
        "JSON" => Decode::Raw,
        "JSONSchemaPropsOrBool" => Decode::SchemaOrBool(props),
        "JSONSchemaPropsOrArray" => Decode::SchemaOrArray(props),
        "JSONSchemaPropsOrStringArray" => Decode::SchemaOrStringArray(props),
        _ => return None,
    })
}

impl Schemas {
    /// Compiles every definition of a built-in table; returns the arena.
    pub fn from_definitions(defs: &Map<String, Value>) -> Result<Schemas, SchemaError> {
        let mut s = Schemas::default();
        // Reserve one node per definition first, so `$ref`s resolve in one pass.
        for name in defs.keys() {
            let id = s.nodes.len();
            s.nodes.push(Node::new(Ty::Any));
            s.by_name.insert(name.clone(), id);
        }
        for (name, schema) in defs {
            let id = s.by_name[name];
            let node = if name == QUANTITY {
                Node::new(Ty::Quantity)
            } else if let Some(decode) = decode_of(name, &s.by_name) {
                let mut node = Node::new(Ty::Any);
                node.extra = Extra::Preserved;
                node.decode = Some(decode);
                node
            } else {
                s.compile_node(schema, Dialect::Builtin, &format!("/definitions/{name}"))?
            };
            s.nodes[id] = node;
        }
        Ok(s)
    }

    /// The node of a definition name.
    pub fn definition(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// Compiles one schema (a CRD version's `openAPIV3Schema`) into this arena.
    pub fn compile(
        &mut self,
        schema: &Value,
        dialect: Dialect,
        pointer: &str,
    ) -> Result<NodeId, SchemaError> {
        let node = self.compile_node(schema, dialect, pointer)?;
        self.nodes.push(node);
        Ok(self.nodes.len() - 1)
    }

    fn compile_node(
        &mut self,
        schema: &Value,
        dialect: Dialect,
        pointer: &str,
    ) -> Result<Node, SchemaError> {
        let err = |message: String| SchemaError {
            pointer: pointer.to_string(),
            message,
        };
        let Some(map) = schema.as_object() else {
            // `true`/absent: anything.
            let mut node = Node::new(Ty::Any);
            node.extra = Extra::Preserved;
            return Ok(node);
        };
        if let Some(target) = map.get("$ref").and_then(Value::as_str) {
            let name = target.rsplit('/').next().unwrap_or(target);
            let Some(&id) = self.by_name.get(name) else {
                return Err(err(format!("unresolved $ref `{target}`")));
            };
            // Definitions are reserved before any compiles, so the target may still be empty
            // here; the walk follows `target` instead of copying it.
            let mut node = Node::new(Ty::Any);
            node.target = Some(id);
            return Ok(node);
        }
        let flag = |key: &str| map.get(key).and_then(Value::as_bool).unwrap_or(false);
        let preserve = flag("x-kubernetes-preserve-unknown-fields");
        let ty = if flag("x-kubernetes-int-or-string") {
            Ty::IntOrString
        } else {
            match map.get("type").and_then(Value::as_str) {
                Some("object") => Ty::Object,
                Some("array") => Ty::Array,
                Some("string") => Ty::String,
                Some("integer") => Ty::Integer,
                Some("number") => Ty::Number,
                Some("boolean") => Ty::Boolean,
                Some(other) => return Err(err(format!("unknown type `{other}`"))),
                None => Ty::Any,
            }
        };
        let mut node = Node::new(ty);
        node.format = match map.get("format").and_then(Value::as_str) {
            Some("int32") => Some(Format::Int32),
            Some("int64") => Some(Format::Int64),
            Some("byte") => Some(Format::Byte),
            Some("date-time") => Some(Format::DateTime),
            Some("date") => Some(Format::Date),
            _ => None,
        };
        if let Some(props) = map.get("properties").and_then(Value::as_object) {
            for (key, sub) in props {
                let p = format!("{pointer}/properties/{}", kiln_base::pointer::escape(key));
                let child = self.compile(sub, dialect, &p)?;
                node.properties.insert(key.clone(), child);
            }
        }
        if let Some(req) = map.get("required").and_then(Value::as_array) {
            node.required = req
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
        node.extra = match map.get("additionalProperties") {
            Some(Value::Bool(false)) | None => {
                let free_form = dialect == Dialect::Builtin
                    && node.properties.is_empty()
                    && matches!(ty, Ty::Object | Ty::Any);
                if preserve || free_form || ty == Ty::Any && dialect == Dialect::Crd {
                    Extra::Preserved
                } else {
                    Extra::Forbidden
                }
            }
            Some(Value::Bool(true)) => Extra::Preserved,
            Some(sub) => Extra::Schema(self.compile(
                sub,
                dialect,
                &format!("{pointer}/additionalProperties"),
            )?),
        };
        if preserve && matches!(node.extra, Extra::Forbidden) {
            node.extra = Extra::Preserved;
        }
        if let Some(items) = map.get("items") {
            node.items = Some(self.compile(items, dialect, &format!("{pointer}/items"))?);
        }
        if let Some(values) = map.get("enum").and_then(Value::as_array) {
            node.enumeration = values.clone();
        }
        if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
            // kube-openapi compiles patterns with Go's regexp (RE2), which the regex crate
            // follows; they are unanchored, as JSON Schema says.
            let re = regex::Regex::new(pattern)
                .map_err(|e| err(format!("invalid pattern `{pattern}`: {e}")))?;
            node.pattern = Some(re);
        }
        let num = |key: &str| map.get(key).and_then(Value::as_f64);
        let count = |key: &str| map.get(key).and_then(Value::as_u64);
        node.minimum = num("minimum").map(|m| (m, flag("exclusiveMinimum")));
        node.maximum = num("maximum").map(|m| (m, flag("exclusiveMaximum")));
        node.min_length = count("minLength");
        node.max_length = count("maxLength");
        node.min_items = count("minItems");
        node.max_items = count("maxItems");
        node.min_properties = count("minProperties");
        node.max_properties = count("maxProperties");
        node.list_type = match map.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(
                map.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => ListType::Atomic,
        };
        node.embedded = flag("x-kubernetes-embedded-resource");
        // The built-in tables' defaults are the Go code's (`SetDefaults_*`), not applied by
        // a schema walk; a CRD's are (structural defaulting).
        if dialect == Dialect::Crd {
            node.default = map.get("default").cloned();
            node.nullable = flag("nullable");
        }
        for (key, slot) in [("allOf", 0), ("anyOf", 1), ("oneOf", 2)] {
            if let Some(list) = map.get(key).and_then(Value::as_array) {
                let mut ids = Vec::new();
                for (i, sub) in list.iter().enumerate() {
                    ids.push(self.compile(sub, dialect, &format!("{pointer}/{key}/{i}"))?);
                }
                match slot {
                    0 => node.all_of = ids,
                    1 => node.any_of = ids,
                    _ => node.one_of = ids,
                }
            }
        }
        if let Some(not) = map.get("not") {
            node.not = Some(self.compile(not, dialect, &format!("{pointer}/not"))?);
        }
        if let Some(rules) = map
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
        {
            for (i, rule) in rules.iter().enumerate() {
                node.rules
                    .push(Rule::compile(rule).map_err(|message| SchemaError {
                        pointer: format!("{pointer}/x-kubernetes-validations/{i}"),
                        message,
                    })?);
            }
        }
        Ok(node)
    }
}
