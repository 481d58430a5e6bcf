//! Strategic merge patch (SMP) over `serde_json::Value`, as Kubernetes apimachinery
//! (`k8s.io/apimachinery/pkg/util/strategicpatch`, `patch.go`) defines it, with the merge keys
//! of `konfig::merge_keys`.
//!
//! Sits under the `patches:`/`patchesStrategicMerge:` transformers (`builtins::patch_transformer`) and kiln's
//! own component SMP transformer: [`merge`] takes an object, a patch and the kind's
//! [`PatchSchema`] (or `None` for custom resources) and merges in place.
//!
//! Semantics:
//! - maps merge key by key; a `null` in the patch deletes the key;
//! - lists with a merge key (containers by `name`, …) merge item by item; other lists, and
//!   every list of a kind without schema, are replaced; scalar lists tagged `merge`
//!   (`metadata.finalizers`) merge as sets;
//! - directives: `$patch: replace|merge|delete` on maps, `$patch: delete` and a lone
//!   `{$patch: replace}` item in lists (an item with more fields beside it is rejected: see
//!   `merge_list`), `$retainKeys`, `$deleteFromPrimitiveList/<field>`,
//!   `$setElementOrder/<field>`; directives never reach the output;
//! - order of merged lists follows kustomize (kyaml `merge2`, `walk/associative_sequence.go`
//!   with `ListIncreaseDirection: Prepend`): the items the patch names, patched or new, come
//!   first in patch order, then the other items in their original order (case k09). With
//!   [`ListOrder::Apimachinery`] (opt-in) it follows apimachinery (`normalizeElementOrder` +
//!   `mergeSortedSlice`): original-only items are interleaved by their original positions.
//!   A `$setElementOrder` list always orders as apimachinery does.
//! - lists with two `x-kubernetes-list-map-keys` in kyaml's schema (container `ports`
//!   `[containerPort, protocol]`, Service `ports` `[port, protocol]`,
//!   `topologySpreadConstraints` `[topologyKey, whenUnsatisfiable]`; kyaml
//!   `openapi/openapi.go` `PatchStrategyAndKeyList`, `openapi/kubernetesapi/v1_21_2`) match
//!   items by both keys once any item has the second one (`merge_by_two_keys`, kyaml
//!   `walk/associative_sequence.go`; case p43).
//!
//! Divergences from kustomize v5.5 (kyaml `merge2`), listed in `tests/kustomize/DIVERGENCES.md`:
//! kyaml passes `$retainKeys`, `$deleteFromPrimitiveList/…` and `$setElementOrder/…` through to the output
//! unprocessed. A patch item lacking the second list-map key (or whose original lacks it) is
//! applied to the item kyaml pairs it with, where kyaml drops it (p44). Like kustomize, a patch that changes a field from a map to a list (or back)
//! is an error, and so is a list item without its merge key (kyaml silently drops the list).
//! Mirrored kyaml quirk: fields the source wrote with an empty value (`key:`) vanish wherever
//! kyaml's walk reaches them, patched or not ([`drop_bare_empty_fields`], case p25).
//!
//! Invariant: on success the original holds no directive keys that came from the patch.

#![warn(missing_docs)]
use crate::filters::patch_json6902::json_equal;
use crate::konfig::merge_keys::{ListMeta, PatchSchema};
pub use crate::types::patch::ListOrder;
use miette::Diagnostic;
use serde_json::{Map, Value};
use thiserror::Error;

/// Why a strategic merge patch does not apply. `path` is a dotted field path from the object
/// root (`spec.template.spec.containers`); `item` a 0-based index in the patch's list.
#[derive(Debug, Clone, PartialEq, Error, Diagnostic)]
#[allow(missing_docs)] // fields: see the enum docs
pub enum SmpError {
    /// `$patch` has a value other than `replace`, `merge` or `delete`.
    #[error("unknown strategic merge directive `$patch: {value}` at `{path}`")]
    #[diagnostic(
        code(kiln::kustomize::smp_unknown_directive),
        help("`$patch` accepts `replace`, `merge` or `delete`")
    )]
    UnknownDirective { path: String, value: String },

    /// A directive has the wrong shape (e.g. `$retainKeys` not a list of strings).
    #[error("malformed strategic merge directive `{directive}` at `{path}`: {reason}")]
    #[diagnostic(
        code(kiln::kustomize::smp_malformed_directive),
        help(
            "`$retainKeys`, `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` take lists"
        )
    )]
    MalformedDirective {
        path: String,
        directive: String,
        reason: String,
    },

    /// An item of a list merged by key lacks the key.
    #[error("item {item} of `{path}` has no merge key `{key}`")]
    #[diagnostic(
        code(kiln::kustomize::smp_merge_key_missing),
        help("items of this list are matched by `{key}`; add it to the patch item")
    )]
    MergeKeyMissing {
        path: String,
        key: String,
        item: usize,
    },

    /// The patch gives a map where the original has a list, or the other way round.
    #[error("strategic merge patch gives {patch} at `{path}` where the resource has {original}")]
    #[diagnostic(
        code(kiln::kustomize::smp_type_mismatch),
        help(
            "a strategic merge patch must keep the shape of the field; use `$patch: replace` or a JSON patch to change it"
        )
    )]
    TypeMismatch {
        path: String,
        original: &'static str,
        patch: &'static str,
    },
}

/// Merges `patch` into `original` in place. Returns `Ok(false)` normally and `Ok(true)` when
/// the patch deletes the whole object (`$patch: delete` at the top; kustomize then drops the
/// resource). `schema` is `PatchSchema::for_kind` of the *original* object; `None` replaces
/// every list. When either side is not a map, the original becomes the (cleaned) patch.
pub fn merge(
    original: &mut Value,
    patch: &Value,
    schema: Option<&PatchSchema>,
) -> Result<bool, SmpError> {
    merge_ordered(original, patch, schema, ListOrder::Kustomize)
}

/// [`merge`], with merged lists in `order`.
pub fn merge_ordered(
    original: &mut Value,
    patch: &Value,
    schema: Option<&PatchSchema>,
    order: ListOrder,
) -> Result<bool, SmpError> {
    if let (Some(schema), ListOrder::Kustomize) = (schema, order) {
        collapse_duplicate_keys(original, schema, &mut Vec::new());
    }
    let mut ctx = Ctx {
        order,
        schema,
        path: Vec::new(),
    };
    match (original.as_object_mut(), patch) {
        (Some(o), Value::Object(p)) => merge_map(o, p, &mut ctx),
        _ => {
            *original = fresh(patch, &mut ctx)?.unwrap_or(Value::Null);
            Ok(false)
        }
    }
}

/// kustomize quirk (kyaml `walk/associative_sequence.go`, case p42): a strategic merge rebuilds
/// every merged list of the object, patched or not, from its merge keys, so items sharing a key
/// (a JSON patch can append a second `env` entry `A`) collapse into one: at the first one's
/// position, with the last one's content (the whole item, not a merge). Lists are collapsed top
/// down, so a collapsed container keeps only the last one's `env`. Keys are the list's merge key
/// and, where kyaml has one, the second key (`protocol` of ports); an item without the merge
/// key stays as it is. kiln's `--fixes merge-order` (apimachinery) keeps duplicates.
fn collapse_duplicate_keys(value: &mut Value, schema: &PatchSchema, path: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                path.push(k.clone());
                if let Value::Array(items) = v
                    && let Some(meta) = schema.lookup(path)
                    && let Some(key) = meta.merge_key
                {
                    collapse_list(items, key, meta.second_key);
                }
                collapse_duplicate_keys(v, schema, path);
                path.pop();
            }
        }
        Value::Array(items) => {
            for it in items {
                collapse_duplicate_keys(it, schema, path);
            }
        }
        _ => {}
    }
}

fn collapse_list(items: &mut Vec<Value>, key: &str, second: Option<&str>) {
    let ident = |it: &Value| -> Option<(Value, Value)> {
        let id = it.get(key).filter(|v| !v.is_null())?.clone();
        let second = second
            .and_then(|s| it.get(s))
            .cloned()
            .unwrap_or(Value::Null);
        Some((id, second))
    };
    let ids: Vec<Option<(Value, Value)>> = items.iter().map(ident).collect();
    let has_duplicates = ids
        .iter()
        .enumerate()
        .any(|(i, a)| a.is_some() && ids[..i].contains(a));
    if !has_duplicates {
        return;
    }
    let old = std::mem::take(items);
    for (i, it) in old.iter().enumerate() {
        match &ids[i] {
            None => items.push(it.clone()),
            // A later duplicate: already placed at the first one's position.
            Some(_) if ids[..i].contains(&ids[i]) => {}
            Some(_) => {
                let last = ids.iter().rposition(|x| *x == ids[i]).unwrap_or(i);
                items.push(old[last].clone());
            }
        }
    }
}

/// kustomize quirk (kyaml `merge2`, corpus c34): before a strategic merge patch, drops the
/// fields the source file wrote with an empty value (`key:`; `pointers` are JSON Pointers
/// from `BuildMeta::bare_empty_fields`) wherever kyaml's merge walk reaches them.
///
/// kyaml walks the *whole* resource, not only the patch's paths: every map, and the items
/// of a list its schema merges (containers, env, ports, volumes… — `schema` is the kind's
/// [`PatchSchema`]); items of a replaced list, and every list of a custom resource, are not
/// visited. A reached field whose value node has empty text is cleared, while an explicit
/// `null` or `~` stays (checked with `kubectl kustomize` v5.5.0). Doing this before the merge
/// gives kyaml's result: a field the patch sets is set either way, and list indices still
/// match the file. A pointer that no longer leads to a `null` (or, for an annotation, `""`)
/// field is skipped.
///
/// Not mirrored: kyaml's schema also merges lists kiln's table leaves out (`status.conditions`,
/// kinds outside `konfig::merge_keys`), whose items it reaches too, and it drops empty *items* of a
/// merged scalar list (`metadata.finalizers`); such fields stay `null` in kiln.
pub fn drop_bare_empty_fields(
    original: &mut Value,
    pointers: &[String],
    schema: Option<&PatchSchema>,
) {
    for pointer in pointers {
        let tokens: Vec<String> = kiln_base::pointer::tokens(pointer).collect();
        let Some((field, parents)) = tokens.split_last() else {
            continue;
        };
        if let Some(Value::Object(map)) = reached(original, parents, schema)
            // An own annotation reads as its text (ADR 0004): a bare one is "".
            && map
                .get(field)
                .is_some_and(|v| v.is_null() || v.as_str() == Some(""))
        {
            map.shift_remove(field);
        }
    }
}

/// The value at `tokens` if kyaml's merge walk visits it (see [`drop_bare_empty_fields`]).
fn reached<'v>(
    mut value: &'v mut Value,
    tokens: &[String],
    schema: Option<&PatchSchema>,
) -> Option<&'v mut Value> {
    // Field names from the root, list items transparent, as `PatchSchema::lookup` wants.
    let mut path: Vec<String> = Vec::new();
    for token in tokens {
        value = match value {
            Value::Object(map) => {
                path.push(token.clone());
                map.get_mut(token)?
            }
            Value::Array(items) => {
                let associative = schema
                    .and_then(|s| s.lookup(&path))
                    .is_some_and(|m| m.merge_key.is_some());
                if !associative {
                    return None;
                }
                items.get_mut(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(value)
}

struct Ctx<'a> {
    schema: Option<&'a PatchSchema>,
    order: ListOrder,
    /// Field names from the root; list items add nothing (schema paths work that way).
    path: Vec<String>,
}

impl Ctx<'_> {
    fn dotted(&self) -> String {
        if self.path.is_empty() {
            "(root)".to_string()
        } else {
            self.path.join(".")
        }
    }
    fn list_meta(&self) -> Option<ListMeta> {
        self.schema.and_then(|s| s.lookup(&self.path))
    }
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

fn is_directive(key: &str) -> bool {
    key == PATCH
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

fn shape(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "a map",
        Value::Array(_) => "a list",
        Value::Null => "null",
        _ => "a scalar",
    }
}

/// The patch value as it lands where the original has nothing: merged into an empty value of
/// its own shape, so directives and nulls disappear. `None` when it deletes itself.
fn fresh(patch: &Value, ctx: &mut Ctx) -> Result<Option<Value>, SmpError> {
    match patch {
        Value::Object(p) => {
            let mut m = Map::new();
            Ok((!merge_map(&mut m, p, ctx)?).then_some(Value::Object(m)))
        }
        Value::Array(p) => {
            let mut l = Vec::new();
            merge_list(&mut l, p, None, ctx)?;
            Ok(Some(Value::Array(l)))
        }
        other => Ok(Some(other.clone())),
    }
}

fn string_list(v: &Value, directive: &str, ctx: &Ctx) -> Result<Vec<String>, SmpError> {
    let malformed = |reason: &str| SmpError::MalformedDirective {
        path: ctx.dotted(),
        directive: directive.to_string(),
        reason: reason.to_string(),
    };
    let Value::Array(items) = v else {
        return Err(malformed("expected a list"));
    };
    items
        .iter()
        .map(|i| {
            i.as_str()
                .map(str::to_string)
                .ok_or_else(|| malformed("expected strings"))
        })
        .collect()
}

/// Merges a map; `Ok(true)` when the patch says `$patch: delete`.
fn merge_map(
    orig: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    ctx: &mut Ctx,
) -> Result<bool, SmpError> {
    match patch.get(PATCH) {
        None => {}
        Some(Value::String(s)) if s == "merge" => {}
        Some(Value::String(s)) if s == "delete" => return Ok(true),
        Some(Value::String(s)) if s == "replace" => {
            orig.clear();
            let rest: Map<String, Value> = patch
                .iter()
                .filter(|(k, _)| *k != PATCH)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            return merge_map(orig, &rest, ctx);
        }
        Some(other) => {
            let value = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_string);
            return Err(SmpError::UnknownDirective {
                path: ctx.dotted(),
                value,
            });
        }
    }

    // apimachinery `applyRetainKeysDirective`: drop what the list does not name, then merge.
    if let Some(keep) = patch.get(RETAIN_KEYS) {
        let keep = string_list(keep, RETAIN_KEYS, ctx)?;
        orig.retain(|k, _| keep.iter().any(|x| x == k));
    }

    let mut orders: Vec<(&str, &Vec<Value>)> = Vec::new();
    for (k, v) in patch {
        if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            ctx.path.push(field.to_string());
            let Value::Array(gone) = v else {
                let err = SmpError::MalformedDirective {
                    path: ctx.dotted(),
                    directive: k.clone(),
                    reason: "expected a list".into(),
                };
                return Err(err);
            };
            ctx.path.pop();
            if let Some(Value::Array(list)) = orig.get_mut(field) {
                list.retain(|item| !gone.iter().any(|g| json_equal(g, item)));
            }
        } else if let Some(field) = k.strip_prefix(SET_ELEMENT_ORDER) {
            let Value::Array(order) = v else {
                let err = SmpError::MalformedDirective {
                    path: ctx.dotted(),
                    directive: k.clone(),
                    reason: "expected a list".into(),
                };
                return Err(err);
            };
            orders.push((field, order));
        }
    }

    for (k, pv) in patch {
        if is_directive(k) {
            continue;
        }
        if pv.is_null() {
            orig.shift_remove(k);
            continue;
        }
        ctx.path.push(k.clone());
        let order = orders
            .iter()
            .find(|(f, _)| f == k)
            .map(|(_, o)| o.as_slice());
        match (orig.get_mut(k), pv) {
            (Some(Value::Object(o)), Value::Object(p)) => {
                if merge_map(o, p, ctx)? {
                    orig.shift_remove(k);
                }
            }
            (Some(Value::Array(o)), Value::Array(p)) => merge_list(o, p, order, ctx)?,
            // kyaml refuses to turn a map into a list or back ("wrong node kind").
            (
                Some(o @ (Value::Object(_) | Value::Array(_))),
                p @ (Value::Object(_) | Value::Array(_)),
            ) => {
                return Err(SmpError::TypeMismatch {
                    path: ctx.dotted(),
                    original: shape(o),
                    patch: shape(p),
                });
            }
            _ => match fresh(pv, ctx)? {
                Some(v) => {
                    orig.insert(k.clone(), v);
                }
                None => {
                    orig.shift_remove(k);
                }
            },
        }
        ctx.path.pop();
    }

    // A `$setElementOrder` for a list the patch does not touch still reorders it.
    for (field, order) in orders {
        if patch.contains_key(field) {
            continue;
        }
        ctx.path.push(field.to_string());
        // Only lists that merge have an order to keep; a replaced list is left alone.
        if ctx.list_meta().is_some()
            && let Some(Value::Array(o)) = orig.get_mut(field)
        {
            merge_list(o, &[], Some(order), ctx)?;
        }
        ctx.path.pop();
    }
    Ok(false)
}

/// The identity of a list item: its merge-key value for lists of maps, itself for scalars.
fn ident<'v>(item: &'v Value, key: Option<&str>) -> Option<&'v Value> {
    match key {
        Some(k) => item.get(k),
        None => Some(item),
    }
}

fn position(list: &[&Value], item: &Value, key: Option<&str>) -> Option<usize> {
    let id = ident(item, key)?;
    list.iter().position(|x| json_equal(x, id))
}

/// Merges a list. `order` is a `$setElementOrder` list for it, if any.
fn merge_list(
    orig: &mut Vec<Value>,
    patch: &[Value],
    order: Option<&[Value]>,
    ctx: &mut Ctx,
) -> Result<(), SmpError> {
    // apimachinery `mergeSliceWithSpecialElements`: a `{$patch: replace}` item replaces the
    // list with the other items.
    let is_replace = |v: &Value| v.get(PATCH).and_then(Value::as_str) == Some("replace");
    // An item with other fields besides `$patch: replace` reads like "replace this item", but
    // apimachinery empties the list of it and kyaml ignores the item: neither is what the
    // author meant, so kiln rejects it.
    if let Some(i) = patch
        .iter()
        .position(|v| is_replace(v) && v.as_object().is_some_and(|m| m.len() > 1))
    {
        return Err(SmpError::MalformedDirective {
            path: ctx.dotted(),
            directive: format!("{PATCH}: replace"),
            reason: format!(
                "item {i} has other fields; in a list, `- $patch: replace` stands alone and replaces the whole list"
            ),
        });
    }
    if patch.iter().any(is_replace) {
        let rest: Vec<Value> = patch.iter().filter(|v| !is_replace(v)).cloned().collect();
        orig.clear();
        return merge_list(orig, &rest, None, ctx);
    }

    let meta = ctx.list_meta();
    let key = meta.and_then(|m| m.merge_key);
    let all_maps = patch.iter().all(Value::is_object) && orig.iter().all(Value::is_object);
    let mergeable = match (meta, key) {
        (None, _) => false,
        (Some(_), Some(_)) => all_maps,
        (Some(_), None) => !patch.iter().any(|v| v.is_object() || v.is_array()),
    };
    if !mergeable {
        // Replaced wholesale; items still lose their directives (and `$patch: delete` items
        // vanish), as kyaml does for new lists.
        let mut out = Vec::with_capacity(patch.len());
        for (i, item) in patch.iter().enumerate() {
            if let Value::Object(p) = item
                && let Some(k) = key
                && p.get(PATCH).and_then(Value::as_str) == Some("delete")
                && !p.contains_key(k)
            {
                return Err(SmpError::MergeKeyMissing {
                    path: ctx.dotted(),
                    key: k.to_string(),
                    item: i,
                });
            }
            if let Some(v) = fresh(item, ctx)? {
                out.push(v);
            }
        }
        *orig = out;
        return Ok(());
    }

    let mut patch_items: Vec<&Value> = Vec::new();
    if let Some(k) = key {
        let mut deletions: Vec<&Value> = Vec::new();
        for (i, item) in patch.iter().enumerate() {
            let missing = || SmpError::MergeKeyMissing {
                path: ctx.dotted(),
                key: k.to_string(),
                item: i,
            };
            match item.get(PATCH) {
                None => {
                    item.get(k).ok_or_else(missing)?;
                    patch_items.push(item);
                }
                Some(Value::String(s)) if s == "delete" => {
                    item.get(k).ok_or_else(missing)?;
                    deletions.push(item);
                }
                Some(Value::String(s)) if s == "merge" => {
                    item.get(k).ok_or_else(missing)?;
                    patch_items.push(item);
                }
                Some(other) => {
                    let value = other
                        .as_str()
                        .map_or_else(|| other.to_string(), str::to_string);
                    return Err(SmpError::UnknownDirective {
                        path: ctx.dotted(),
                        value,
                    });
                }
            }
        }
        // kyaml `validateKeys`: the second list-map key counts only when some item, of the
        // original or the patch, has a value for it.
        let second = meta.and_then(|m| m.second_key).filter(|k2| {
            orig.iter()
                .chain(patch)
                .any(|v| !key_text(v.get(*k2)).is_empty())
        });
        if let Some(k2) = second
            && order.is_none()
            && ctx.order == ListOrder::Kustomize
        {
            return merge_by_two_keys(orig, patch, [k, k2], ctx);
        }
        // Deletions first (apimachinery `mergeSliceWithSpecialElements`).
        for item in deletions {
            if let Some(id) = item.get(k) {
                orig.retain(|o| !o.get(k).is_some_and(|x| json_equal(x, id)));
            }
        }
    } else {
        patch_items = patch.iter().collect();
    }

    // Original identities after deletions: the "server order".
    let server_order: Vec<Value> = orig.iter().filter_map(|o| ident(o, key).cloned()).collect();

    // Merge matching items in place; collect new ones.
    let mut merged: Vec<Value> = std::mem::take(orig);
    for item in &patch_items {
        let Some(id) = ident(item, key) else { continue };
        let found = merged
            .iter()
            .position(|o| ident(o, key).is_some_and(|x| json_equal(x, id)));
        match (found, key) {
            (Some(i), Some(_)) => {
                // Both are maps: `mergeable` checked every item.
                if let (Value::Object(o), Value::Object(p)) = (&mut merged[i], item) {
                    merge_map(o, p, ctx)?;
                }
            }
            // A scalar already present: sets do not repeat (apimachinery `deduplicateScalars`).
            (Some(_), None) => {}
            (None, _) => {
                if let Some(v) = fresh(item, ctx)? {
                    merged.push(v);
                }
            }
        }
    }

    if order.is_none() && ctx.order == ListOrder::Kustomize {
        // kyaml `setAssociativeSequenceElements` with `MergeOptionsListPrepend`: the items the
        // patch names, in patch order (patched and new alike), then the others in their
        // original order.
        let patch_ids: Vec<&Value> = patch_items.iter().filter_map(|v| ident(v, key)).collect();
        let (mut named, rest): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| position(&patch_ids, v, key).is_some());
        named.sort_by_key(|v| position(&patch_ids, v, key));
        named.extend(rest);
        *orig = named;
        return Ok(());
    }

    // Order (apimachinery `normalizeElementOrder`): partition into items the patch (or
    // `$setElementOrder`) names and server-only items, then interleave.
    let patch_order: Vec<&Value> = match order {
        Some(o) => o.iter().filter_map(|v| ident(v, key)).collect(),
        None => patch_items.iter().filter_map(|v| ident(v, key)).collect(),
    };
    let (mut named, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| position(&patch_order, v, key).is_some());
    named.sort_by_key(|v| position(&patch_order, v, key));
    let server_refs: Vec<&Value> = server_order.iter().collect();
    *orig = merge_sorted(server_only, named, &server_refs, key);
    Ok(())
}

/// A list-map key's value as kyaml compares it (`ElementValuesList`): the scalar's text, and
/// `""` for a missing, null or non-scalar field.
fn key_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// kyaml `mergeValues`/`match`: two key tuples name the same item when they share a value and
/// differ only where one of them is empty (a port without `protocol` pairs with the same port
/// with one); the pair's tuple is the union.
fn pair_tuples(a: &[String; 2], b: &[String; 2]) -> Option<[String; 2]> {
    let mut common = false;
    let mut out: [String; 2] = Default::default();
    for i in 0..2 {
        if a[i] == b[i] {
            common = true;
            out[i] = a[i].clone();
        } else if !a[i].is_empty() && !b[i].is_empty() {
            return None;
        } else {
            out[i] = if a[i].is_empty() { &b[i] } else { &a[i] }.clone();
        }
    }
    common.then_some(out)
}

/// Merges a list with two list-map keys in use (`[containerPort, protocol]` of container
/// ports, `[port, protocol]` of Service ports, `[topologyKey, whenUnsatisfiable]`), as kyaml's
/// `walk/associative_sequence.go` (`setAssociativeSequenceElements`, `appendListNode`) does:
/// - items are named by their key tuple; the tuples of the patch then the original, once
///   each, are paired by `mergeValues` ([`pair_tuples`]);
/// - for each tuple, the patch item merges into the original item (`$patch: delete` deletes
///   every original item of the tuple), a patch item without original is new, an original
///   item without patch item stays;
/// - order: the new items in tuple order (patch order), then every original item in its
///   original order.
///
/// Divergence (case p44, DIVERGENCES.md): kyaml looks both items of a pair up by the paired
/// tuple, which the item lacking the second key does not match, so a patch item without
/// `protocol` for a port with one (or the reverse) is silently dropped, and its
/// `$patch: delete` deletes nothing. kiln applies it to the item kyaml paired it with: an
/// item matches a tuple by its own key values first, else by its paired tuple.
fn merge_by_two_keys(
    orig: &mut Vec<Value>,
    patch: &[Value],
    keys: [&str; 2],
    ctx: &mut Ctx,
) -> Result<(), SmpError> {
    let tuple = |v: &Value| -> [String; 2] { keys.map(|k| key_text(v.get(k))) };
    let patch_tuples: Vec<[String; 2]> = patch.iter().map(tuple).collect();
    let orig_tuples: Vec<[String; 2]> = orig.iter().map(tuple).collect();
    let mut raw: Vec<[String; 2]> = Vec::new();
    for t in patch_tuples.iter().chain(&orig_tuples) {
        if !raw.contains(t) {
            raw.push(t.clone());
        }
    }
    // `mergeValues` updates the list in place while it compares, as here.
    let mut paired = raw.clone();
    for i in 0..paired.len() {
        for j in 0..paired.len() {
            if let Some(m) = pair_tuples(&paired[i], &paired[j]) {
                paired[i] = m.clone();
                paired[j] = m;
            }
        }
    }
    let resolve = |t: &[String; 2]| raw.iter().position(|r| r == t).map(|i| &paired[i]);
    let patch_paired: Vec<Option<&[String; 2]>> = patch_tuples.iter().map(resolve).collect();
    let orig_paired: Vec<Option<&[String; 2]>> = orig_tuples.iter().map(resolve).collect();
    // The item for tuple `t`: one with exactly these key values, else one paired with them.
    let find = |own: &[[String; 2]],
                paired: &[Option<&[String; 2]>],
                t: &[String; 2],
                live: &dyn Fn(usize) -> bool| {
        (0..own.len())
            .find(|&i| live(i) && own[i] == *t)
            .or_else(|| (0..own.len()).find(|&i| live(i) && paired[i] == Some(t)))
    };
    let mut deleted = vec![false; orig.len()];
    let mut new_items: Vec<Value> = Vec::new();
    let mut done: Vec<&[String; 2]> = Vec::new();
    for t in &paired {
        if done.contains(&t) {
            continue;
        }
        done.push(t);
        let Some(p) = find(&patch_tuples, &patch_paired, t, &|_| true) else {
            continue;
        };
        let item = &patch[p];
        if item.get(PATCH).and_then(Value::as_str) == Some("delete") {
            for (i, gone) in deleted.iter_mut().enumerate() {
                *gone |= orig_tuples[i] == *t || orig_paired[i] == Some(t);
            }
            continue;
        }
        let d = find(&orig_tuples, &orig_paired, t, &|i| !deleted[i]);
        match (d, item) {
            (Some(i), Value::Object(p)) => {
                if let Value::Object(o) = &mut orig[i]
                    && merge_map(o, p, ctx)?
                {
                    deleted[i] = true;
                }
            }
            _ => new_items.extend(fresh(item, ctx)?),
        }
    }
    let old = std::mem::take(orig);
    *orig = new_items;
    orig.extend(
        old.into_iter()
            .zip(deleted)
            .filter_map(|(v, gone)| (!gone).then_some(v)),
    );
    Ok(())
}

/// apimachinery `mergeSortedSlice`: interleave `left` (server-only items) into `right`
/// (patch items) keeping each list's relative order; a left item goes first when both are in
/// the server order and it came first there.
fn merge_sorted(
    left: Vec<Value>,
    right: Vec<Value>,
    server: &[&Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut l = left.into_iter().peekable();
    let mut r = right.into_iter().peekable();
    loop {
        let take_left = match (l.peek(), r.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => match (position(server, a, key), position(server, b, key)) {
                (Some(i), Some(j)) => i < j,
                _ => false,
            },
        };
        let next = if take_left { l.next() } else { r.next() };
        out.extend(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(kind: (&str, &str), mut orig: Value, patch: Value) -> Result<(Value, bool), SmpError> {
        let schema = PatchSchema::for_kind(kind.0, kind.1);
        let deleted = merge(&mut orig, &patch, schema.as_ref())?;
        Ok((orig, deleted))
    }

    fn smp_apimachinery(kind: (&str, &str), mut orig: Value, patch: Value) -> Value {
        let schema = PatchSchema::for_kind(kind.0, kind.1);
        merge_ordered(&mut orig, &patch, schema.as_ref(), ListOrder::Apimachinery).unwrap();
        orig
    }

    fn pod(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
    }

    const POD: (&str, &str) = ("", "Pod");

    #[test]
    fn bare_empty_fields_dropped_where_the_walk_reaches() {
        let mut d = json!({"kind": "Deployment", "spec": {"paused": null, "template": {"spec": {
            "affinity": {"nodeAffinity": {"preferred": null}},
            "containers": [{"name": "a", "env": [{"name": "X", "value": null}], "workingDir": null}],
            "tolerations": [{"key": "k", "effect": null}]}}}});
        let pointers: Vec<String> = [
            "/spec/paused",
            "/spec/template/spec/affinity/nodeAffinity/preferred",
            "/spec/template/spec/containers/0/env/0/value",
            "/spec/template/spec/tolerations/0/effect",
            "/spec/gone",
        ]
        .map(str::to_string)
        .to_vec();
        let schema = PatchSchema::for_kind("apps", "Deployment");
        drop_bare_empty_fields(&mut d, &pointers, schema.as_ref());
        assert_eq!(
            d,
            json!({"kind": "Deployment", "spec": {"template": {"spec": {
                "affinity": {"nodeAffinity": {}},
                "containers": [{"name": "a", "env": [{"name": "X"}], "workingDir": null}],
                "tolerations": [{"key": "k", "effect": null}]}}}})
        );
    }

    #[test]
    fn bare_empty_fields_of_custom_resources_stay_in_lists() {
        let mut w =
            json!({"spec": {"size": null, "parts": [{"name": "a", "weight": null}], "n": 1}});
        let pointers = ["/spec/size", "/spec/parts/0/weight", "/spec/n"].map(str::to_string);
        drop_bare_empty_fields(&mut w, &pointers, None);
        assert_eq!(
            w,
            json!({"spec": {"parts": [{"name": "a", "weight": null}], "n": 1}})
        );
    }

    #[test]
    fn maps_merge_and_null_deletes() {
        let (out, _) = smp(
            ("", "ConfigMap"),
            json!({"data": {"a": "1", "b": "2"}, "metadata": {"labels": {"x": "y"}}}),
            json!({"data": {"a": null, "c": "3"}, "metadata": {"labels": {"z": "w"}}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"data": {"b": "2", "c": "3"}, "metadata": {"labels": {"x": "y", "z": "w"}}})
        );
    }

    #[test]
    fn containers_merge_by_name_in_apimachinery_order() {
        let orig = pod(json!({"containers": [
            {"name": "api", "image": "a:1"}, {"name": "metrics", "image": "m:1"}, {"name": "proxy", "image": "p:1"}]}));
        let patch = pod(
            json!({"containers": [{"name": "proxy", "image": "p:2"}, {"name": "sidecar", "image": "s:1"}]}),
        );
        let names = |out: &Value| -> Vec<String> {
            out["spec"]["containers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_string())
                .collect()
        };
        let out = smp_apimachinery(POD, orig.clone(), patch.clone());
        assert_eq!(names(&out), ["api", "metrics", "proxy", "sidecar"]);
        assert_eq!(out["spec"]["containers"][2]["image"], "p:2");
        // kustomize (k09): the patch's items first, in patch order, then the others.
        let (out, _) = smp(POD, orig, patch).unwrap();
        assert_eq!(names(&out), ["proxy", "sidecar", "api", "metrics"]);
        assert_eq!(out["spec"]["containers"][0]["image"], "p:2");
    }

    #[test]
    fn patch_order_wins_for_named_items() {
        // k08: patch names [proxy, api, debug] → that order, server-only items interleaved.
        let orig =
            pod(json!({"containers": [{"name": "api"}, {"name": "metrics"}, {"name": "proxy"}]}));
        let patch = pod(json!({"containers": [
            {"name": "proxy", "image": "p"}, {"name": "api", "image": "a"},
            {"name": "metrics", "$patch": "delete"}, {"name": "debug"}]}));
        let (out, _) = smp(POD, orig, patch).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "proxy", "image": "p"}, {"name": "api", "image": "a"}, {"name": "debug"}])
        );
    }

    #[test]
    fn volume_mounts_merge_by_mount_path() {
        let orig = pod(json!({"containers": [{"name": "c", "volumeMounts": [
            {"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]}]}));
        let patch = pod(json!({"containers": [{"name": "c", "volumeMounts": [
            {"mountPath": "/b", "readOnly": true}, {"mountPath": "/c", "name": "v"}]}]}));
        let out = smp_apimachinery(POD, orig.clone(), patch.clone());
        assert_eq!(
            out["spec"]["containers"][0]["volumeMounts"],
            json!([{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b", "readOnly": true}, {"mountPath": "/c", "name": "v"}])
        );
        let (out, _) = smp(POD, orig, patch).unwrap();
        assert_eq!(
            out["spec"]["containers"][0]["volumeMounts"],
            json!([{"name": "v", "mountPath": "/b", "readOnly": true}, {"mountPath": "/c", "name": "v"}, {"name": "v", "mountPath": "/a"}])
        );
    }

    #[test]
    fn untagged_lists_are_replaced() {
        let orig = pod(
            json!({"containers": [{"name": "c", "args": ["a", "b"]}], "tolerations": [{"key": "x"}]}),
        );
        let patch = pod(
            json!({"containers": [{"name": "c", "args": ["z"]}], "tolerations": [{"key": "y"}]}),
        );
        let (out, _) = smp(POD, orig, patch).unwrap();
        assert_eq!(out["spec"]["containers"][0]["args"], json!(["z"]));
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "y"}]));
    }

    #[test]
    fn custom_resource_lists_are_replaced_even_with_name_keys() {
        let (out, _) = smp(
            ("example.com", "Widget"),
            json!({"metadata": {"finalizers": ["a"]}, "spec": {"items": [{"name": "one"}, {"name": "two", "v": 2}]}}),
            json!({"metadata": {"finalizers": ["c"]}, "spec": {"items": [{"name": "two", "v": 22}]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["c"]}, "spec": {"items": [{"name": "two", "v": 22}]}})
        );
    }

    #[test]
    fn finalizers_merge_as_a_set() {
        // Same result as kubectl kustomize v5.5.0 on a Pod: [c, a, b].
        let (out, _) = smp(
            POD,
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
    }

    #[test]
    fn patch_delete_on_map_and_whole_object() {
        let (out, deleted) = smp(
            ("", "Service"),
            json!({"spec": {"selector": {"a": "b"}, "type": "X"}}),
            json!({"spec": {"selector": {"$patch": "delete"}}}),
        )
        .unwrap();
        assert!(!deleted);
        assert_eq!(out, json!({"spec": {"type": "X"}}));
        let (_, deleted) = smp(
            ("", "Service"),
            json!({"spec": {}}),
            json!({"$patch": "delete"}),
        )
        .unwrap();
        assert!(deleted);
    }

    #[test]
    fn patch_replace_on_map_and_list() {
        let (out, _) = smp(
            ("", "Service"),
            json!({"spec": {"selector": {"a": "b"}}}),
            json!({"spec": {"selector": {"$patch": "replace", "c": "d"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"selector": {"c": "d"}}}));
        let orig = pod(json!({"containers": [{"name": "a"}, {"name": "b"}]}));
        let (out, _) = smp(
            POD,
            orig,
            pod(json!({"containers": [{"$patch": "replace"}, {"name": "n"}]})),
        )
        .unwrap();
        assert_eq!(out["spec"]["containers"], json!([{"name": "n"}]));
        let (out, _) = smp(
            ("", "Service"),
            json!({"spec": {"selector": {"a": "b"}}}),
            json!({"spec": {"selector": {"$patch": "merge", "c": "d"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"spec": {"selector": {"a": "b", "c": "d"}}}));
    }

    #[test]
    fn replace_directive_with_fields_in_a_list_item_is_rejected() {
        let orig = pod(json!({"containers": [{"name": "c", "image": "old"}]}));
        let patch =
            pod(json!({"containers": [{"name": "c", "image": "new", "$patch": "replace"}]}));
        let e = smp(POD, orig, patch).unwrap_err();
        assert!(
            matches!(&e, SmpError::MalformedDirective { path, .. } if path == "spec.containers"),
            "{e:?}"
        );
    }

    #[test]
    fn retain_keys_drops_unlisted_fields() {
        let orig = pod(json!({"volumes": [{"name": "v", "emptyDir": {}}]}));
        let patch = pod(
            json!({"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}),
        );
        let (out, _) = smp(POD, orig, patch).unwrap();
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name": "v", "hostPath": {"path": "/x"}}])
        );
    }

    #[test]
    fn delete_from_primitive_list() {
        let (out, _) = smp(
            POD,
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "c"]}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"finalizers": ["b"]}}));
    }

    #[test]
    fn set_element_order_reorders_and_is_removed() {
        let orig = pod(json!({"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}));
        let patch = pod(json!({
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "x"}]}));
        let (out, _) = smp(POD, orig, patch).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c"}, {"name": "a", "image": "x"}, {"name": "b"}])
        );
        assert!(out["spec"].get("$setElementOrder/containers").is_none());
    }

    #[test]
    fn new_values_lose_directives_and_nulls() {
        let orig = pod(json!({"containers": [{"name": "c"}]}));
        let patch = pod(
            json!({"containers": [{"name": "d", "env": [{"name": "A", "$patch": "delete"}], "x": {"a": null, "b": 1}}]}),
        );
        let (out, _) = smp(POD, orig, patch).unwrap();
        // apimachinery `mergeSortedSlice`: a new item that leads the patch cannot be compared
        // with server items, so it goes first (kustomize agrees here).
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "d", "env": [], "x": {"b": 1}}, {"name": "c"}])
        );
    }

    #[test]
    fn errors_name_the_path() {
        let e = smp(
            POD,
            pod(json!({"containers": [{"name": "c"}]})),
            pod(json!({"containers": [{"image": "x"}]})),
        )
        .unwrap_err();
        assert_eq!(
            e,
            SmpError::MergeKeyMissing {
                path: "spec.containers".into(),
                key: "name".into(),
                item: 0
            }
        );
        let e = smp(
            POD,
            pod(json!({"x": {"a": 1}})),
            pod(json!({"x": {"$patch": "explode"}})),
        )
        .unwrap_err();
        assert!(
            matches!(e, SmpError::UnknownDirective { ref path, .. } if path == "spec.x"),
            "{e:?}"
        );
        let e = smp(POD, pod(json!({"x": {"a": 1}})), pod(json!({"x": [1]}))).unwrap_err();
        assert!(matches!(e, SmpError::TypeMismatch { .. }));
        let e = smp(
            POD,
            pod(json!({"x": {"a": 1}})),
            pod(json!({"x": {"$retainKeys": "a"}})),
        )
        .unwrap_err();
        assert!(matches!(e, SmpError::MalformedDirective { .. }));
    }

    #[test]
    fn service_ports_merge_by_port() {
        let (out, _) = smp(
            ("", "Service"),
            json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}}),
            json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}, {"port": 9000, "name": "extra"}]}}),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["ports"],
            json!([{"name": "https", "port": 443, "targetPort": 8443}, {"port": 9000, "name": "extra"}, {"name": "http", "port": 80}])
        );
        // With `protocol` on an item, kyaml merges by (port, protocol): new items first, then
        // the originals in their order (p04).
        let (out, _) = smp(
            ("", "Service"),
            json!({"spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "https", "port": 443, "protocol": "TCP"}]}}),
            json!({"spec": {"ports": [{"port": 443, "protocol": "TCP", "targetPort": 8443}, {"port": 9000, "name": "extra"}]}}),
        )
        .unwrap();
        let names: Vec<&str> = out["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["extra", "http", "https"]);
    }

    #[test]
    fn container_ports_match_by_port_and_protocol() {
        let ports = json!([
            {"containerPort": 53, "protocol": "TCP"},
            {"containerPort": 53, "protocol": "UDP"},
            {"containerPort": 80}
        ]);
        let patch = json!([
            {"containerPort": 53, "protocol": "UDP", "name": "dns"},
            {"containerPort": 80, "$patch": "delete"},
            {"containerPort": 53, "protocol": "TCP", "$patch": "delete"}
        ]);
        let (out, _) = smp(
            ("", "Pod"),
            pod(json!({"containers": [{"name": "c", "ports": ports}]})),
            pod(json!({"containers": [{"name": "c", "ports": patch}]})),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 53, "protocol": "UDP", "name": "dns"}])
        );
    }

    #[test]
    fn a_missing_second_key_pairs_with_the_same_port() {
        assert_eq!(
            pair_tuples(&["53".into(), "".into()], &["53".into(), "TCP".into()]),
            Some(["53".into(), "TCP".into()])
        );
        assert_eq!(
            pair_tuples(&["53".into(), "UDP".into()], &["53".into(), "TCP".into()]),
            None
        );
        assert_eq!(
            pair_tuples(&["80".into(), "".into()], &["53".into(), "".into()]),
            None
        );
        // A patch item without `protocol` renames the TCP port it pairs with (case p44).
        let (out, _) = smp(
            ("", "Pod"),
            pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 53, "protocol": "TCP"}]}]})),
            pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 53, "name": "dns"}]}]})),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 53, "protocol": "TCP", "name": "dns"}])
        );
    }

    #[test]
    fn scalar_replacement_and_non_map_patch() {
        let mut v = json!({"a": 1});
        assert!(!merge(&mut v, &json!([1, 2]), None).unwrap());
        assert_eq!(v, json!([1, 2]));
    }
}
