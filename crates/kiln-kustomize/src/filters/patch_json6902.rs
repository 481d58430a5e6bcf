//! JSON Patch (RFC 6902) over `serde_json::Value`, with the semantics kustomize v5.5 gets from
//! `github.com/evanphx/json-patch` (v4) rather than the letter of the RFC where the two differ.
//!
//! Sits under the `patches:`/`patchesJson6902:` transformers (`builtins::patch_transformer`) and kiln's own
//! component JSON Patch transformer. Input is a parsed list of operations ([`JsonPatch`]);
//! output is the patched document or a [`Json6902Error`] naming the operation (0-based index),
//! its `op` and the pointer that failed. Invariant: on error the document may be partially
//! patched (operations before the failing one applied), as in kustomize, so callers that need
//! atomicity patch a clone.
//!
//! kustomize quirks mirrored here (checked against `kubectl kustomize` v5.5.0):
//! - negative array indices count from the end: for `add`, `-1` appends (index `len + 1 + i`),
//!   for `remove`/`replace`/traversal, `-1` is the last element (index `len + i`);
//! - `replace` of an absent *object member* adds it (evanphx `partialDoc.get` never fails);
//!   `replace` of an absent *array index* fails;
//! - pointer tokens are unescaped with `~1` → `/` then `~0` → `~`; other `~` sequences are
//!   taken literally (evanphx `decodePatchKey`).
//!
//! The kustomize quirk that `add /metadata/annotations/x` works on an object without
//! annotations lives in `builtins::patch_transformer`, because it comes from kustomize's build bookkeeping, not
//! from JSON Patch.

#![warn(missing_docs)]
use miette::Diagnostic;
use serde_json::{Map, Value};
use std::fmt;
use thiserror::Error;

/// An RFC 6901 JSON Pointer, stored as its unescaped reference tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    /// The pointer as written, for messages.
    raw: String,
    /// Unescaped tokens; empty for the whole document (`""`).
    tokens: Vec<String>,
}

impl Pointer {
    /// Parses `""` or `/a/b~1c`. Errors when a non-empty pointer does not start with `/`.
    pub fn parse(raw: &str) -> Result<Pointer, String> {
        if raw.is_empty() {
            return Ok(Pointer {
                raw: String::new(),
                tokens: Vec::new(),
            });
        }
        let Some(rest) = raw.strip_prefix('/') else {
            return Err(format!(
                "JSON pointer `{raw}` must be empty or start with `/`"
            ));
        };
        // RFC 6901 §4: `~1` first, then `~0`, so `~01` decodes to `~1`, not `/`.
        let tokens = rest.split('/').map(kiln_base::pointer::unescape).collect();
        Ok(Pointer {
            raw: raw.to_string(),
            tokens,
        })
    }

    /// The unescaped tokens.
    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// The pointer as written.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// `true` when `self` is a proper prefix of `other` (used to reject moving a value into
    /// one of its own children).
    fn is_proper_prefix_of(&self, other: &Pointer) -> bool {
        self.tokens.len() < other.tokens.len() && other.tokens.starts_with(&self.tokens)
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// One JSON Patch operation.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // `path`, `from` and `value` are RFC 6902's members of the same name.
pub enum PatchOp {
    /// Insert into an array or set an object member; the parent must exist.
    Add { path: Pointer, value: Value },
    /// Remove an existing member or element.
    Remove { path: Pointer },
    /// Replace a value (an absent object member is added, as in kustomize).
    Replace { path: Pointer, value: Value },
    /// Remove at `from`, add at `path`.
    Move { from: Pointer, path: Pointer },
    /// Add a copy of the value at `from` at `path`.
    Copy { from: Pointer, path: Pointer },
    /// Fail unless the value at `path` equals `value` (absent equals `null`).
    Test { path: Pointer, value: Value },
}

impl PatchOp {
    /// The `op` name as written in a patch.
    pub fn name(&self) -> &'static str {
        match self {
            PatchOp::Add { .. } => "add",
            PatchOp::Remove { .. } => "remove",
            PatchOp::Replace { .. } => "replace",
            PatchOp::Move { .. } => "move",
            PatchOp::Copy { .. } => "copy",
            PatchOp::Test { .. } => "test",
        }
    }

    /// The target pointer (`path`).
    pub fn path(&self) -> &Pointer {
        match self {
            PatchOp::Add { path, .. }
            | PatchOp::Remove { path }
            | PatchOp::Replace { path, .. }
            | PatchOp::Move { path, .. }
            | PatchOp::Copy { path, .. }
            | PatchOp::Test { path, .. } => path,
        }
    }
}

/// A parsed JSON Patch: operations in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JsonPatch(
    /// The operations, applied in order.
    pub Vec<PatchOp>,
);

/// Why a JSON Patch could not be parsed or applied. In every variant `index` is the 0-based
/// position of the operation in the patch, `op` its name and `path` the pointer as written.
#[derive(Debug, Clone, PartialEq, Error, Diagnostic)]
#[allow(missing_docs)] // fields: see the enum docs
pub enum Json6902Error {
    /// The patch is not a list of operation objects.
    #[error("a JSON patch must be a list of operations, found {found}")]
    #[diagnostic(
        code(kiln::kustomize::json_patch_not_a_list),
        help(
            "write the patch as a YAML or JSON list, e.g. `- op: add\\n  path: /metadata/labels/x\\n  value: y`"
        )
    )]
    NotAList { found: &'static str },

    /// An operation is malformed: unknown `op`, missing `path`/`value`/`from`, bad pointer.
    #[error("JSON patch operation {index} is invalid: {reason}")]
    #[diagnostic(
        code(kiln::kustomize::json_patch_invalid_op),
        help(
            "each operation needs `op` (add, remove, replace, move, copy, test) and `path`; add/replace/test need `value`, move/copy need `from`"
        )
    )]
    InvalidOperation {
        index: usize,
        /// The member at fault (`op`, `path`, `from`, `value`), or `""` for the operation
        /// itself (not a map): where a caller that knows the patch's text points.
        member: &'static str,
        reason: String,
    },

    /// A pointer names a location whose parent (or, for remove/move/copy/replace on arrays,
    /// the location itself) does not exist. kustomize: `doc is missing path`.
    #[error(
        "JSON patch operation {index} (`{op}`) does not apply: the document is missing path `{path}`"
    )]
    #[diagnostic(
        code(kiln::kustomize::json_patch_path_missing),
        help(
            "JSON Patch does not create parents: add the parent first (e.g. `op: add` of `{{}}` at the parent path)"
        )
    )]
    PathMissing {
        index: usize,
        op: &'static str,
        path: String,
    },

    /// An array index is not a number, or out of bounds.
    #[error(
        "JSON patch operation {index} (`{op}`) does not apply: invalid array index `{token}` in `{path}` (array has {len} items)"
    )]
    #[diagnostic(
        code(kiln::kustomize::json_patch_invalid_index),
        help(
            "array indices are 0-based; `-` appends; negative indices count from the end as in kustomize"
        )
    )]
    InvalidIndex {
        index: usize,
        op: &'static str,
        path: String,
        token: String,
        len: usize,
    },

    /// A pointer walks into a scalar.
    #[error(
        "JSON patch operation {index} (`{op}`) does not apply: `{path}` goes through a value that is neither an object nor an array"
    )]
    #[diagnostic(
        code(kiln::kustomize::json_patch_not_a_container),
        help("check the path against the document")
    )]
    NotAContainer {
        index: usize,
        op: &'static str,
        path: String,
    },

    /// A `test` operation found a different value.
    #[error(
        "JSON patch operation {index} (`test`) failed: value at `{path}` is {actual}, expected {expected}"
    )]
    #[diagnostic(
        code(kiln::kustomize::json_patch_test_failed),
        help(
            "the document does not hold the expected value; the patch was written for another version of it"
        )
    )]
    TestFailed {
        index: usize,
        path: String,
        expected: String,
        actual: String,
    },

    /// `move` into one of the moved value's own children.
    #[error(
        "JSON patch operation {index} (`move`) does not apply: cannot move `{from}` into its own child `{path}`"
    )]
    #[diagnostic(
        code(kiln::kustomize::json_patch_move_into_child),
        help("RFC 6902 §4.4 forbids this")
    )]
    MoveIntoChild {
        index: usize,
        from: String,
        path: String,
    },
}

impl Json6902Error {
    /// For a malformed operation: its index and the member at fault (`""`: the operation
    /// itself), so that a caller holding the patch's text can point at it.
    pub fn invalid_member(&self) -> Option<(usize, &'static str)> {
        match self {
            Json6902Error::InvalidOperation { index, member, .. } => Some((*index, member)),
            _ => None,
        }
    }
}

impl JsonPatch {
    /// Parses a patch from its JSON form: a list of objects with `op`, `path` and `value` or
    /// `from`. Extra members are ignored (RFC 6902 §4). Errors name the operation index.
    pub fn from_value(value: &Value) -> Result<JsonPatch, Json6902Error> {
        let Value::Array(items) = value else {
            return Err(Json6902Error::NotAList {
                found: kind_name(value),
            });
        };
        let mut ops = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            ops.push(parse_op(index, item)?);
        }
        Ok(JsonPatch(ops))
    }

    /// Applies every operation in order to `doc`. See the module docs for the kustomize
    /// semantics; on error `doc` keeps the operations applied before the failing one.
    pub fn apply(&self, doc: &mut Value) -> Result<(), Json6902Error> {
        for (index, op) in self.0.iter().enumerate() {
            apply_op(doc, index, op)?;
        }
        Ok(())
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

fn parse_op(index: usize, item: &Value) -> Result<PatchOp, Json6902Error> {
    let invalid_at = |member: &'static str, reason: String| Json6902Error::InvalidOperation {
        index,
        member,
        reason,
    };
    let Value::Object(m) = item else {
        return Err(invalid_at(
            "",
            format!("expected a map, found {}", kind_name(item)),
        ));
    };
    let invalid = |reason: String| invalid_at("op", reason);
    let op = match m.get("op") {
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(invalid(format!(
                "`op` must be a string, found {}",
                kind_name(other)
            )));
        }
        None => return Err(invalid_at("", "missing `op`".into())),
    };
    let pointer = |field: &'static str| -> Result<Pointer, Json6902Error> {
        match m.get(field) {
            Some(Value::String(s)) => Pointer::parse(s).map_err(|r| invalid_at(field, r)),
            Some(other) => Err(invalid_at(
                field,
                format!("`{field}` must be a string, found {}", kind_name(other)),
            )),
            // The operation lacks it: the operation is at fault.
            None => Err(invalid_at("", format!("`{op}` needs `{field}`"))),
        }
    };
    // A present `value: null` is a real value; only an absent member is an error.
    let value = || {
        m.get("value")
            .cloned()
            .ok_or_else(|| invalid_at("", format!("`{op}` needs `value`")))
    };
    Ok(match op {
        "add" => PatchOp::Add {
            path: pointer("path")?,
            value: value()?,
        },
        "remove" => PatchOp::Remove {
            path: pointer("path")?,
        },
        "replace" => PatchOp::Replace {
            path: pointer("path")?,
            value: value()?,
        },
        "move" => PatchOp::Move {
            from: pointer("from")?,
            path: pointer("path")?,
        },
        "copy" => PatchOp::Copy {
            from: pointer("from")?,
            path: pointer("path")?,
        },
        "test" => PatchOp::Test {
            path: pointer("path")?,
            value: value()?,
        },
        other => return Err(invalid(format!("unknown op `{other}`"))),
    })
}

/// Context for error construction while applying one operation.
struct Ctx<'a> {
    index: usize,
    op: &'static str,
    path: &'a Pointer,
}

impl Ctx<'_> {
    fn missing(&self) -> Json6902Error {
        Json6902Error::PathMissing {
            index: self.index,
            op: self.op,
            path: self.path.raw.clone(),
        }
    }
    fn bad_index(&self, token: &str, len: usize) -> Json6902Error {
        Json6902Error::InvalidIndex {
            index: self.index,
            op: self.op,
            path: self.path.raw.clone(),
            token: token.to_string(),
            len,
        }
    }
    fn not_container(&self) -> Json6902Error {
        Json6902Error::NotAContainer {
            index: self.index,
            op: self.op,
            path: self.path.raw.clone(),
        }
    }
}

/// Index of an existing element (`get`/`remove`/`replace`/traversal): `0..len`, or negative
/// from the end (`-1` is the last), as evanphx `partialArray.get` with negative indices on.
fn existing_index(ctx: &Ctx, token: &str, len: usize) -> Result<usize, Json6902Error> {
    let i: i64 = token.parse().map_err(|_| ctx.bad_index(token, len))?;
    let len_i = len as i64;
    let idx = if i < 0 { i + len_i } else { i };
    if idx < 0 || idx >= len_i {
        return Err(ctx.bad_index(token, len));
    }
    Ok(idx as usize)
}

/// Insertion index for `add`: `0..=len`, `-` for `len`, or negative counting from the slot
/// after the last element (`-1` appends), as evanphx `partialArray.add`.
fn insert_index(ctx: &Ctx, token: &str, len: usize) -> Result<usize, Json6902Error> {
    if token == "-" {
        return Ok(len);
    }
    let i: i64 = token.parse().map_err(|_| ctx.bad_index(token, len))?;
    let slots = len as i64 + 1;
    let idx = if i < 0 { i + slots } else { i };
    if idx < 0 || idx >= slots {
        return Err(ctx.bad_index(token, len));
    }
    Ok(idx as usize)
}

/// The value at `tokens`, or `Ok(None)` when an object member on the way is absent. Arrays
/// on the way must hold the index (kustomize errors there too).
fn get<'v>(
    ctx: &Ctx,
    doc: &'v Value,
    tokens: &[String],
) -> Result<Option<&'v Value>, Json6902Error> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => match m.get(t) {
                Some(v) => v,
                None => return Ok(None),
            },
            Value::Array(a) => &a[existing_index(ctx, t, a.len())?],
            _ => return Err(ctx.not_container()),
        };
    }
    Ok(Some(cur))
}

/// The parent container of the location, which must exist (`doc is missing path` otherwise).
fn parent_mut<'v>(
    ctx: &Ctx,
    doc: &'v mut Value,
    tokens: &[String],
) -> Result<&'v mut Value, Json6902Error> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or_else(|| ctx.missing())?,
            Value::Array(a) => {
                let i = existing_index(ctx, t, a.len())?;
                &mut a[i]
            }
            _ => return Err(ctx.missing()),
        };
    }
    match cur {
        Value::Object(_) | Value::Array(_) => Ok(cur),
        // evanphx reports a scalar parent as a missing path, too.
        _ => Err(ctx.missing()),
    }
}

fn add(ctx: &Ctx, doc: &mut Value, path: &Pointer, value: Value) -> Result<(), Json6902Error> {
    let Some((last, parent)) = path.tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent_mut(ctx, doc, parent)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i = insert_index(ctx, last, a.len())?;
            a.insert(i, value);
        }
        _ => return Err(ctx.missing()),
    }
    Ok(())
}

fn remove(ctx: &Ctx, doc: &mut Value, path: &Pointer) -> Result<Value, Json6902Error> {
    let Some((last, parent)) = path.tokens.split_last() else {
        return Ok(std::mem::take(doc));
    };
    match parent_mut(ctx, doc, parent)? {
        Value::Object(m) => m.shift_remove(last).ok_or_else(|| ctx.missing()),
        Value::Array(a) => {
            let i = existing_index(ctx, last, a.len())?;
            Ok(a.remove(i))
        }
        _ => Err(ctx.missing()),
    }
}

fn replace(ctx: &Ctx, doc: &mut Value, path: &Pointer, value: Value) -> Result<(), Json6902Error> {
    let Some((last, parent)) = path.tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    match parent_mut(ctx, doc, parent)? {
        // kustomize quirk (evanphx v4 `partialDoc.get` never fails): replacing an absent
        // member adds it; `kubectl kustomize` v5.5.0 prints the new member.
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i = existing_index(ctx, last, a.len())?;
            a[i] = value;
        }
        _ => return Err(ctx.missing()),
    }
    Ok(())
}

fn apply_op(doc: &mut Value, index: usize, op: &PatchOp) -> Result<(), Json6902Error> {
    let ctx = Ctx {
        index,
        op: op.name(),
        path: op.path(),
    };
    match op {
        PatchOp::Add { path, value } => add(&ctx, doc, path, value.clone()),
        PatchOp::Remove { path } => remove(&ctx, doc, path).map(|_| ()),
        PatchOp::Replace { path, value } => replace(&ctx, doc, path, value.clone()),
        PatchOp::Move { from, path } => {
            if from == path {
                return Ok(());
            }
            if from.is_proper_prefix_of(path) {
                return Err(Json6902Error::MoveIntoChild {
                    index,
                    from: from.raw.clone(),
                    path: path.raw.clone(),
                });
            }
            let from_ctx = Ctx {
                index,
                op: "move",
                path: from,
            };
            let v = remove(&from_ctx, doc, from)?;
            add(&ctx, doc, path, v)
        }
        PatchOp::Copy { from, path } => {
            let from_ctx = Ctx {
                index,
                op: "copy",
                path: from,
            };
            // evanphx/json-patch (kustomize's) cannot copy the whole document: `from: ""` is
            // "doc is missing from path" there, checked with kubectl kustomize v5.5.0.
            if from.tokens.is_empty() {
                return Err(from_ctx.missing());
            }
            let v = get(&from_ctx, doc, &from.tokens)?
                .cloned()
                .ok_or_else(|| from_ctx.missing())?;
            add(&ctx, doc, path, v)
        }
        PatchOp::Test { path, value } => {
            let actual = get(&ctx, doc, &path.tokens)?;
            // evanphx: an absent member tests equal to `null`.
            let equal = match actual {
                Some(a) => json_equal(a, value),
                None => value.is_null(),
            };
            if equal {
                Ok(())
            } else {
                // A Secret's values never reach an error message (kubectl prints only that
                // the test failed); the message would otherwise be logged or published in CI.
                let secret = doc.get("kind").and_then(Value::as_str) == Some("Secret");
                let show = |v: &Value| {
                    if secret {
                        "a Secret value (not shown)".to_string()
                    } else {
                        v.to_string()
                    }
                };
                Err(Json6902Error::TestFailed {
                    index,
                    path: path.raw.clone(),
                    expected: show(value),
                    actual: actual.map_or_else(|| "absent".to_string(), show),
                })
            }
        }
    }
}

/// Structural equality where numbers compare by value (`1` equals `1.0`), because with
/// `arbitrary_precision` `serde_json::Number` compares its text.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || matches!((x.as_f64(), y.as_f64()), (Some(p), Some(q)) if p == q)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// JSON Merge Patch (RFC 7386) as the RFC's pseudo-code: a non-object patch replaces the
/// target; an object patch merges member by member, `null` removing a member; the target
/// becomes an object when it was not one. Never fails.
pub fn merge_patch_7386(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("made an object above");
    for (k, v) in p {
        if v.is_null() {
            t.shift_remove(k);
        } else {
            merge_patch_7386(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(doc: Value, ops: Value) -> Result<Value, Json6902Error> {
        let mut doc = doc;
        JsonPatch::from_value(&ops)?.apply(&mut doc)?;
        Ok(doc)
    }

    #[test]
    fn pointer_unescapes_tilde_one_before_tilde_zero() {
        let p = Pointer::parse("/a~1b/c~0d/e~01").unwrap();
        assert_eq!(p.tokens(), ["a/b", "c~d", "e~1"]);
        assert_eq!(Pointer::parse("").unwrap().tokens().len(), 0);
        assert!(Pointer::parse("a/b").is_err());
    }

    #[test]
    fn add_sets_member_and_inserts_into_arrays() {
        let out = run(
            json!({"a": {"x": 1}, "l": [1, 2, 3]}),
            json!([
                {"op": "add", "path": "/a/y", "value": 2},
                {"op": "add", "path": "/l/1", "value": 9},
                {"op": "add", "path": "/l/-", "value": 7},
                {"op": "add", "path": "/l/5", "value": 8},
            ]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": {"x": 1, "y": 2}, "l": [1, 9, 2, 3, 7, 8]}));
    }

    #[test]
    fn add_beyond_end_is_an_invalid_index() {
        let err = run(
            json!({"l": [1]}),
            json!([{"op": "add", "path": "/l/3", "value": 0}]),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                Json6902Error::InvalidIndex {
                    index: 0,
                    len: 1,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    // Observed with kubectl kustomize v5.5.0 on args [one, two, three]:
    // add -1 → append, add -4 → front, add -5 → error; remove -1 → last, remove -4 → error.
    #[test]
    fn negative_indices_follow_kustomize() {
        let l = || json!({"l": ["one", "two", "three"]});
        let add = |i: &str| {
            run(
                l(),
                json!([{"op": "add", "path": format!("/l/{i}"), "value": "N"}]),
            )
        };
        assert_eq!(
            add("-1").unwrap(),
            json!({"l": ["one", "two", "three", "N"]})
        );
        assert_eq!(
            add("-2").unwrap(),
            json!({"l": ["one", "two", "N", "three"]})
        );
        assert_eq!(
            add("-4").unwrap(),
            json!({"l": ["N", "one", "two", "three"]})
        );
        assert!(add("-5").is_err());
        let rm = |i: &str| run(l(), json!([{"op": "remove", "path": format!("/l/{i}")}]));
        assert_eq!(rm("-1").unwrap(), json!({"l": ["one", "two"]}));
        assert_eq!(rm("-3").unwrap(), json!({"l": ["two", "three"]}));
        assert!(matches!(
            rm("-4").unwrap_err(),
            Json6902Error::InvalidIndex { .. }
        ));
        let rep = run(
            l(),
            json!([{"op": "replace", "path": "/l/-1", "value": "N"}]),
        )
        .unwrap();
        assert_eq!(rep, json!({"l": ["one", "two", "N"]}));
        let rep = run(
            l(),
            json!([{"op": "replace", "path": "/l/-4", "value": "N"}]),
        );
        assert!(rep.is_err());
    }

    #[test]
    fn add_with_missing_parent_names_op_and_path() {
        let err = run(
            json!({"metadata": {"name": "x"}}),
            json!([
                {"op": "add", "path": "/metadata/x", "value": 1},
                {"op": "add", "path": "/metadata/labels/a~1b", "value": "v"},
            ]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            Json6902Error::PathMissing {
                index: 1,
                op: "add",
                path: "/metadata/labels/a~1b".into()
            }
        );
        assert!(err.to_string().contains("/metadata/labels/a~1b"));
    }

    #[test]
    fn remove_requires_the_member() {
        let out = run(
            json!({"a": 1, "b": 2}),
            json!([{"op": "remove", "path": "/a"}]),
        )
        .unwrap();
        assert_eq!(out, json!({"b": 2}));
        let err = run(json!({"a": 1}), json!([{"op": "remove", "path": "/nope"}])).unwrap_err();
        assert!(matches!(
            err,
            Json6902Error::PathMissing { op: "remove", .. }
        ));
    }

    // kubectl kustomize v5.5.0: `replace /data/nope` on a ConfigMap without `nope` adds it.
    #[test]
    fn replace_of_absent_member_adds_it_like_kustomize() {
        let out = run(
            json!({"d": {"x": "1"}}),
            json!([{"op": "replace", "path": "/d/nope", "value": 1}]),
        )
        .unwrap();
        assert_eq!(out, json!({"d": {"x": "1", "nope": 1}}));
        let err = run(
            json!({"l": [1]}),
            json!([{"op": "replace", "path": "/l/1", "value": 1}]),
        )
        .unwrap_err();
        assert!(matches!(err, Json6902Error::InvalidIndex { .. }));
    }

    #[test]
    fn move_and_copy() {
        let out = run(
            json!({"a": {"x": 1}, "b": {}, "l": [1, 2]}),
            json!([
                {"op": "move", "from": "/a/x", "path": "/b/y"},
                {"op": "copy", "from": "/l", "path": "/b/l"},
                {"op": "move", "from": "/l/0", "path": "/l/-"},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"a": {}, "b": {"y": 1, "l": [1, 2]}, "l": [2, 1]})
        );
        let err = run(
            json!({"a": {}}),
            json!([{"op": "copy", "from": "/nope", "path": "/a/b"}]),
        )
        .unwrap_err();
        assert_eq!(
            err,
            Json6902Error::PathMissing {
                index: 0,
                op: "copy",
                path: "/nope".into()
            }
        );
        let err = run(
            json!({"a": {"b": {}}}),
            json!([{"op": "move", "from": "/a", "path": "/a/b/c"}]),
        )
        .unwrap_err();
        assert!(matches!(err, Json6902Error::MoveIntoChild { .. }));
    }

    #[test]
    fn test_op_compares_structurally() {
        let doc = json!({"a": {"n": 1, "s": "x"}});
        assert!(
            run(
                doc.clone(),
                json!([{"op": "test", "path": "/a", "value": {"s": "x", "n": 1.0}}])
            )
            .is_ok()
        );
        assert!(
            run(
                doc.clone(),
                json!([{"op": "test", "path": "/absent", "value": null}])
            )
            .is_ok()
        );
        let err = run(doc, json!([{"op": "test", "path": "/a/s", "value": "y"}])).unwrap_err();
        assert!(
            matches!(err, Json6902Error::TestFailed { index: 0, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("\"x\""));
    }

    #[test]
    fn invalid_operations_are_reported_with_their_index() {
        // With the member at fault, for callers pointing at it (repro A2): the one written
        // wrong, or the operation (`""`) when one is missing.
        for (ops, needle, at) in [
            (
                json!([{"op": "add", "path": "/a", "value": 1}, {"op": "bogus", "path": "/a"}]),
                "unknown op `bogus`",
                (1, "op"),
            ),
            (
                json!([{"op": "add", "path": "/a"}]),
                "needs `value`",
                (0, ""),
            ),
            (
                json!([{"op": "move", "path": "/a"}]),
                "needs `from`",
                (0, ""),
            ),
            (
                json!([{"op": "replace", "value": 1}]),
                "needs `path`",
                (0, ""),
            ),
            (json!([{"path": "/a"}]), "missing `op`", (0, "")),
            (
                json!([{"op": "remove", "path": "a"}]),
                "must be empty or start with `/`",
                (0, "path"),
            ),
            (
                json!([{"op": "copy", "from": 3, "path": "/a"}]),
                "`from` must be a string",
                (0, "from"),
            ),
        ] {
            let err = JsonPatch::from_value(&ops).unwrap_err();
            assert!(err.to_string().contains(needle), "{err} lacks {needle}");
            assert_eq!(err.invalid_member(), Some(at), "{err}");
        }
        let err = JsonPatch::from_value(&json!([{"op": "add", "path": "/a", "value": 1}, 3]))
            .unwrap_err();
        assert!(matches!(
            err,
            Json6902Error::InvalidOperation { index: 1, .. }
        ));
        assert!(matches!(
            JsonPatch::from_value(&json!({"op": "add"})),
            Err(Json6902Error::NotAList { .. })
        ));
    }

    #[test]
    fn add_null_value_is_kept() {
        let out = run(
            json!({}),
            json!([{"op": "add", "path": "/a", "value": null}]),
        )
        .unwrap();
        assert_eq!(out, json!({"a": null}));
    }

    #[test]
    fn root_pointer_replaces_document() {
        let out = run(
            json!({"a": 1}),
            json!([{"op": "replace", "path": "", "value": {"b": 2}}]),
        )
        .unwrap();
        assert_eq!(out, json!({"b": 2}));
    }

    // RFC 7386 appendix A examples.
    #[test]
    fn merge_patch_7386_rfc_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, want) in cases {
            let mut t = target.clone();
            merge_patch_7386(&mut t, &patch);
            assert_eq!(t, want, "target {target} patch {patch}");
        }
    }
}
