//! Reading a YAML stream into `serde_json::Value`s, one scalar at a time the way kustomize
//! reads it (ADR 0004): the events of `granit-parser` (ADR 0001) are folded into values here,
//! so each plain scalar's source text is at hand when its type is decided
//! (`super::scalar`).
//!
//! Beyond scalar typing, this is plain YAML: anchors and aliases (expansion is bounded, so an
//! alias bomb is an error, not an out-of-memory), merge keys (`<<`, explicit keys win, then
//! earlier merged maps), duplicate keys are errors (go-yaml v3 rejects them too), empty and
//! comment-only documents are skipped.
//!
//! One field is read by its text rather than its type: the values of an object's own
//! `metadata.annotations`. kustomize rewrites every resource's annotations from their source
//! text (`RNode.SetAnnotations` while it removes its build annotations), so kubectl prints
//! `build/sha: 1234e56` as `"1234e56"`, `0755` as `"0755"`, `~` as `"~"` and an empty value
//! as `""`. Labels and every other field keep the resolved type (`x: 010` is 8), with two
//! exceptions: a ConfigMap's or Secret's `data`/`stringData`/`binaryData` values keep their
//! text as strings too, where kubectl's retyped output would be rejected by the API server (a
//! divergence, case y08; [`keep_string_data_text`]); and a missing value in a flow map
//! (`{a: }`) is `""`, as go-yaml v3 reads it (case y09), where a block map's `a:` is null.

use super::scalar::{Resolved, non_finite, resolve_plain, resolve_tagged};
use super::{YamlError, offset_of};
use granit_parser::{Event, Marker, Parser, ScalarStyle, Span, Tag};
use miette::{NamedSource, SourceSpan};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Alias expansion beyond this many nodes (plus ten per node written) is an alias bomb.
const ALIAS_NODE_ALLOWANCE: usize = 1_000_000;

/// Alias expansion beyond this many bytes of text (plus 100 per byte of the file) is an alias
/// bomb too: a few long strings aliased in a tree stay under the node count yet make 46 MB
/// from 348 bytes. Tied to the file's size, the total over many files stays linear in the
/// input (at most 1 MiB per file plus 100 times the input).
const ALIAS_BYTE_ALLOWANCE: usize = 1 << 20;

/// The deepest nesting of block or flow collections read (granit-parser's own default, made
/// explicit and documented in README): deep enough for real CRDs, shallow enough that no
/// recursive walk over a value can exhaust a thread's stack.
pub const MAX_NESTING: usize = 255;

enum Frame {
    Map {
        map: Map<String, Value>,
        /// The key whose value is being read, with where it is written and whether it is `<<`.
        key: Option<(String, Marker, bool)>,
        /// Maps merged in with `<<`, in order.
        merges: Vec<Map<String, Value>>,
        anchor: usize,
        /// Written in flow style (`{a: 1}`).
        flow: bool,
    },
    Seq {
        items: Vec<Value>,
        anchor: usize,
    },
}

struct Reader<'t> {
    name: &'t str,
    text: &'t str,
    body: &'t str,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Value>,
    docs: Vec<Value>,
    nodes: usize,
    alias_nodes: usize,
    alias_bytes: usize,
    /// Plain scalars of the document's root `data`/`stringData`/`binaryData` maps that read
    /// as a number or a boolean: (field, key, text as written), for [`STRING_DATA_KINDS`].
    string_data: Vec<(String, String, String)>,
    /// Every plain scalar typed, no field kept as its text ([`super::parse_stream_as_applied`]).
    as_applied: bool,
}

/// Kinds whose `data`/`stringData`/`binaryData` hold strings only (`map[string]string`,
/// `map[string][]byte` as base64 text).
const STRING_DATA_KINDS: &[&str] = &["ConfigMap", "Secret"];

/// A ConfigMap's or Secret's unquoted `010`, `0x1F`, `1234e56` or `true` under `data`,
/// `stringData` or `binaryData` keeps the text written, as a string: the only type the field
/// has. kubectl kustomize prints them retyped (`8`, `31`, `1.234e+59`, `true`), which the API
/// server rejects ("cannot unmarshal number into Go struct field ConfigMap.data of type
/// string"): a deliberate divergence (DIVERGENCES.md, y08).
fn keep_string_data_text(doc: &mut Value, texts: Vec<(String, String, String)>) {
    let is_string_data_kind = doc.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && doc
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| STRING_DATA_KINDS.contains(&k));
    if !is_string_data_kind {
        return;
    }
    for (field, key, text) in texts {
        if let Some(v) = doc.get_mut(&field).and_then(|m| m.get_mut(&key))
            && (v.is_number() || v.is_boolean())
        {
            *v = Value::String(text);
        }
    }
}

/// Parses `body` (the text without its byte order mark; `text` is the full text, for
/// positions) into documents.
pub(super) fn read_stream(
    name: &str,
    text: &str,
    body: &str,
    as_applied: bool,
) -> Result<Vec<Value>, YamlError> {
    let options = granit_parser::options! {
        // Go's yaml.v3 (hence kustomize) ends a block scalar that ends the text without a
        // line break without one too (YAML 1.2 §8.1.1.2, clip).
        block_scalar_eof_without_line_feed: true,
        flow_nesting_limit: MAX_NESTING,
        block_nesting_limit: MAX_NESTING,
    };
    let mut r = Reader {
        name,
        text,
        body,
        stack: Vec::new(),
        anchors: HashMap::new(),
        docs: Vec::new(),
        nodes: 0,
        alias_nodes: 0,
        alias_bytes: 0,
        string_data: Vec::new(),
        as_applied,
    };
    for ev in Parser::new_from_str_with_options(body, options) {
        let (event, span) = ev.map_err(|e| {
            let m = e.marker();
            if e.info() == "recursion limit exceeded" {
                let msg = format!("collections nested deeper than {MAX_NESTING} levels");
                return r.error_at(m.line(), m.col(), msg);
            }
            r.error_at(m.line(), m.col(), e.info())
        })?;
        r.event(event, span)?;
    }
    r.docs.retain(|d| !d.is_null());
    Ok(r.docs)
}

impl Reader<'_> {
    fn error_at(&self, line: usize, col: usize, message: impl Into<String>) -> YamlError {
        // Markers count in the text without its byte order mark.
        let off = self.text.len() - self.body.len() + offset_of(self.body, line, col + 1);
        YamlError {
            file: self.name.to_string(),
            message: message.into(),
            line: Some(line),
            src: NamedSource::new(self.name, self.text.to_string()),
            span: Some(SourceSpan::from((off.min(self.text.len()), 1usize))),
        }
    }

    fn error(&self, m: &Marker, message: impl Into<String>) -> YamlError {
        self.error_at(m.line(), m.col(), message)
    }

    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), YamlError> {
        match event {
            Event::DocumentStart(..) => {
                self.stack.clear();
                self.anchors.clear();
                self.string_data.clear();
            }
            Event::Scalar(value, style, anchor, tag) => {
                self.nodes += 1;
                if self.expects_key() {
                    let merge = style == ScalarStyle::Plain && tag.is_none() && value == "<<";
                    if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
                        *key = Some((value.into_owned(), span.start, merge));
                    }
                    return Ok(());
                }
                let empty = span.start.index() == span.end.index();
                let in_flow_map = matches!(self.stack.last(), Some(Frame::Map { flow: true, .. }));
                let v = if !self.as_applied && self.in_own_annotations() {
                    // A missing value (`key:`) is reported as a zero-width `~`.
                    Value::String(if empty {
                        String::new()
                    } else {
                        value.into_owned()
                    })
                } else if empty && in_flow_map {
                    // go-yaml v3 reads a missing value in a flow map (`{a: }`, `{a}`) as the
                    // empty string, where a block map's `a:` is null (checked with kubectl
                    // kustomize v5.5.0).
                    Value::String(String::new())
                } else {
                    let v = self.scalar(&value, style, tag.as_deref(), empty, &span.start)?;
                    if (v.is_number() || v.is_boolean())
                        && !self.as_applied
                        && let Some((field, key)) = self.in_root_string_map()
                    {
                        self.string_data.push((field, key, value.into_owned()));
                    }
                    v
                };
                if anchor != 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                self.complete(v)?;
            }
            Event::MappingStart(style, anchor, _) => {
                self.nodes += 1;
                self.no_complex_key(&span.start)?;
                self.stack.push(Frame::Map {
                    map: Map::new(),
                    key: None,
                    merges: Vec::new(),
                    anchor,
                    flow: matches!(style, granit_parser::StructureStyle::Flow),
                });
            }
            Event::SequenceStart(_, anchor, _) => {
                self.nodes += 1;
                self.no_complex_key(&span.start)?;
                self.stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let (v, anchor) = match self.stack.pop() {
                    Some(Frame::Map {
                        mut map,
                        merges,
                        anchor,
                        ..
                    }) => {
                        for merged in merges {
                            for (k, v) in merged {
                                map.entry(k).or_insert(v);
                            }
                        }
                        (Value::Object(map), anchor)
                    }
                    Some(Frame::Seq { items, anchor }) => (Value::Array(items), anchor),
                    None => return Ok(()),
                };
                if anchor != 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                self.complete(v)?;
            }
            Event::Alias(id) => {
                let Some(v) = self.anchors.get(&id).cloned() else {
                    return Err(self.error(
                        &span.start,
                        "alias to an anchor that is not complete (a recursive alias)",
                    ));
                };
                self.alias_nodes += count_nodes(&v);
                self.alias_bytes += count_bytes(&v);
                if self.alias_bytes > ALIAS_BYTE_ALLOWANCE + 100 * self.text.len() {
                    return Err(self.error(
                        &span.start,
                        format!(
                            "aliases expand to more than {} bytes (an alias bomb?)",
                            ALIAS_BYTE_ALLOWANCE + 100 * self.text.len()
                        ),
                    ));
                }
                if self.alias_nodes > ALIAS_NODE_ALLOWANCE + 10 * self.nodes {
                    return Err(self.error(
                        &span.start,
                        "aliases expand to too many nodes (an alias bomb?)",
                    ));
                }
                if self.expects_key() {
                    let Value::String(k) = v else {
                        return Err(self.error(&span.start, "a mapping key must be a scalar"));
                    };
                    if let Some(Frame::Map { key, .. }) = self.stack.last_mut() {
                        *key = Some((k, span.start, false));
                    }
                    return Ok(());
                }
                self.complete(v)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn expects_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    fn no_complex_key(&self, at: &Marker) -> Result<(), YamlError> {
        if self.expects_key() {
            return Err(self.error(
                at,
                "complex mapping keys (a map or list as key) are not supported",
            ));
        }
        Ok(())
    }

    /// The value being read is `<field>.<key>` of a document's root object, `field` one of
    /// `data`, `stringData`, `binaryData`: `(field, key)`.
    fn in_root_string_map(&self) -> Option<(String, String)> {
        let [
            Frame::Map {
                key: Some((field, ..)),
                ..
            },
            Frame::Map {
                key: Some((key, ..)),
                ..
            },
        ] = self.stack.as_slice()
        else {
            return None;
        };
        ["data", "stringData", "binaryData"]
            .contains(&field.as_str())
            .then(|| (field.clone(), key.clone()))
    }

    /// The value being read is `metadata.annotations.<key>` of a document's root object.
    fn in_own_annotations(&self) -> bool {
        let [
            Frame::Map {
                key: Some((meta, ..)),
                ..
            },
            Frame::Map {
                key: Some((ann, ..)),
                ..
            },
            Frame::Map { .. },
        ] = self.stack.as_slice()
        else {
            return false;
        };
        meta == "metadata" && ann == "annotations"
    }

    fn scalar(
        &self,
        value: &str,
        style: ScalarStyle,
        tag: Option<&Tag>,
        empty: bool,
        at: &Marker,
    ) -> Result<Value, YamlError> {
        if let Some(tag) = tag {
            return match tag.core_suffix() {
                Some("str") => Ok(Value::String(value.to_string())),
                Some(t @ ("int" | "float" | "bool" | "null")) => {
                    let text = if empty { "" } else { value };
                    resolve_tagged(t, text).map_err(|m| self.error(at, m))
                }
                // `!!binary`, `!!timestamp`, local tags (`!foo`), the non-specific `!`: go-yaml
                // decodes these scalars as strings.
                _ => Ok(Value::String(value.to_string())),
            };
        }
        if style != ScalarStyle::Plain {
            return Ok(Value::String(value.to_string()));
        }
        if empty {
            return Ok(Value::Null);
        }
        Ok(match resolve_plain(value) {
            Resolved::Null => Value::Null,
            Resolved::Bool(b) => Value::Bool(b),
            Resolved::Number(n) => Value::Number(n),
            Resolved::Str => Value::String(value.to_string()),
            Resolved::NonFinite => return Err(self.error(at, non_finite(value))),
        })
    }

    /// Puts a finished node where it belongs: a document root, a list item or a map value.
    fn complete(&mut self, v: Value) -> Result<(), YamlError> {
        let duplicate = match self.stack.last_mut() {
            None => {
                let mut v = v;
                keep_string_data_text(&mut v, std::mem::take(&mut self.string_data));
                self.docs.push(v);
                return Ok(());
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(v);
                return Ok(());
            }
            Some(Frame::Map {
                map, key, merges, ..
            }) => {
                let Some((k, at, merge)) = key.take() else {
                    return Ok(());
                };
                if merge {
                    match v {
                        Value::Object(m) => merges.push(m),
                        Value::Array(list) if list.iter().all(Value::is_object) => {
                            merges.extend(list.into_iter().filter_map(|x| match x {
                                Value::Object(m) => Some(m),
                                _ => None,
                            }))
                        }
                        _ => {
                            return Err(self.error(
                                &at,
                                "the value of a merge key `<<` must be a map or a list of maps",
                            ));
                        }
                    }
                    return Ok(());
                }
                if map.contains_key(&k) {
                    Some((k, at))
                } else {
                    map.insert(k, v);
                    None
                }
            }
        };
        match duplicate {
            Some((k, at)) => Err(self.error(&at, format!("duplicate mapping key `{k}`"))),
            None => Ok(()),
        }
    }
}

fn count_nodes(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(count_nodes).sum::<usize>(),
        Value::Array(a) => 1 + a.iter().map(count_nodes).sum::<usize>(),
        _ => 1,
    }
}

/// The text a value stands for, roughly: string and key lengths plus one per node.
fn count_bytes(v: &Value) -> usize {
    match v {
        Value::Object(m) => {
            1 + m
                .iter()
                .map(|(k, v)| k.len() + count_bytes(v))
                .sum::<usize>()
        }
        Value::Array(a) => 1 + a.iter().map(count_bytes).sum::<usize>(),
        Value::String(s) => 1 + s.len(),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_one, parse_stream};
    use serde_json::json;

    #[test]
    fn configmap_and_secret_data_keep_their_text() {
        let text = "apiVersion: v1\nkind: ConfigMap\ndata: {a: 010, b: 0x1F, c: , d: true, e: x}\n---\napiVersion: v1\nkind: Secret\nstringData:\n  pin: 0123\n  none:\n---\napiVersion: example.com/v1\nkind: ConfigMap\ndata: {a: 010}\n";
        let docs = parse_stream("t.yaml", text).unwrap();
        assert_eq!(
            docs[0]["data"],
            serde_json::json!({"a": "010", "b": "0x1F", "c": "", "d": "true", "e": "x"})
        );
        assert_eq!(
            docs[1]["stringData"],
            serde_json::json!({"pin": "0123", "none": null})
        );
        assert_eq!(docs[2]["data"]["a"], serde_json::json!(8));
    }

    #[test]
    fn own_annotations_keep_their_text_and_nothing_else_does() {
        let text = "metadata:\n  annotations:\n    a: 1234e56\n    b: 010\n    c: 0755\n    d: 0x1F\n    e:\n    f: .inf\n    g: 123e4567\n    h: ~\n    i: null\n    j: true\n    k: '010'\n    l: !!int 010\n  labels:\n    x: 010\n    e:\nspec:\n  template:\n    metadata:\n      annotations:\n        x: 010\n  a: 1234e56\n  g: 123e4567\n";
        let v = parse_one("t", text).unwrap();
        assert_eq!(
            v["metadata"]["annotations"],
            json!({"a": "1234e56", "b": "010", "c": "0755", "d": "0x1F", "e": "", "f": ".inf",
                "g": "123e4567", "h": "~", "i": "null", "j": "true", "k": "010", "l": "010"})
        );
        assert_eq!(v["metadata"]["labels"], json!({"x": 8, "e": null}));
        assert_eq!(
            v["spec"]["template"]["metadata"]["annotations"]["x"],
            json!(8)
        );
        assert_eq!(v["spec"]["a"].as_f64(), Some(1.234e59));
        assert_eq!(v["spec"]["g"], json!("123e4567"));
    }

    #[test]
    fn as_applied_every_plain_scalar_is_typed() {
        // What the API server receives from kubectl or Argo CD: no field keeps its text.
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations: {a: 1, b: '2'}\ndata: {port: 8080, on: true, s: x}\n";
        let docs = super::super::parse_stream_as_applied("t", text).unwrap();
        assert_eq!(
            docs[0]["metadata"]["annotations"],
            json!({"a": 1, "b": "2"})
        );
        assert_eq!(docs[0]["data"], json!({"port": 8080, "on": true, "s": "x"}));
        let kept = parse_stream("t", text).unwrap();
        assert_eq!(kept[0]["data"]["port"], json!("8080"));
    }

    #[test]
    fn infinities_outside_strings_are_errors_with_position() {
        let err = parse_stream("t.yaml", "a: 1\nb: .inf\n").unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.message.contains("quote it"), "{}", err.message);
    }

    #[test]
    fn tags_anchors_and_merge_keys() {
        let v = parse_one(
            "t",
            "a: !!str 010\nb: !!int '010'\nc: !foo 12\nbase: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nn:\n  <<: [{p: 1}, {p: 2, q: 2}]\nl: &l [1, 2]\nk: *l\n",
        )
        .unwrap();
        assert_eq!(v["a"], json!("010"));
        assert_eq!(v["b"], json!(8));
        assert_eq!(v["c"], json!("12"));
        assert_eq!(v["m"], json!({"x": 1, "y": 3}));
        assert_eq!(v["n"], json!({"p": 1, "q": 2}));
        assert_eq!(v["k"], json!([1, 2]));
        assert!(parse_one("t", "a: !!int abc\n").is_err());
    }

    #[test]
    fn alias_bombs_are_errors() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let p = i - 1;
            text.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let err = parse_stream("bomb.yaml", &text).unwrap_err();
        assert!(err.message.contains("alias"), "{}", err.message);
    }

    #[test]
    fn aliases_of_long_strings_have_a_byte_budget() {
        // 5 levels of 10 aliases over a 100-byte string: 100,000 nodes (under the node
        // budget) but 10 MB of text from a file under 1 KB.
        let mut text = format!("a0: &a0 {}\n", "x".repeat(100));
        for i in 1..6 {
            let p = i - 1;
            let items = vec![format!("*a{p}"); 10].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{items}]\n"));
        }
        assert!(text.len() < 1000);
        let err = parse_stream("bomb.yaml", &text).unwrap_err();
        assert!(err.message.contains("more than"), "{}", err.message);
    }

    #[test]
    fn nesting_is_allowed_to_the_documented_limit() {
        let ok = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
        assert!(parse_stream("deep.yaml", &ok).is_ok());
        let mut block = String::new();
        for i in 0..200 {
            block.push_str(&format!("{}k{i}:\n", "  ".repeat(i)));
        }
        block.push_str(&format!("{}v: 1\n", "  ".repeat(200)));
        assert!(parse_stream("deep.yaml", &block).is_ok());
        let too_deep = format!("a: {}{}\n", "[".repeat(300), "]".repeat(300));
        let err = parse_stream("deep.yaml", &too_deep).unwrap_err();
        assert!(err.message.contains("deeper than 255"), "{}", err.message);
    }
}
