//! The `replacements:` transformer: copies one field of one resource into fields of others.
//!
//! Sits in the transformer phase of a kustomization build (after name prefixes/suffixes, so a
//! source `metadata.name` is the final name). Mirrors kustomize v5.5's replacement filter
//! (api/filters/replacement/replacement.go) and kyaml's path syntax:
//! - a field path is dot-separated; `[name=app]` selects list elements by a field (created
//!   with `create`), `[=value]` scalar list elements, `[a.b/c]` is a map key containing dots,
//!   a number is a list index, `*` every list element; `\.` escapes a dot;
//! - the source must select exactly one resource (by current or earlier name) and its field
//!   must be present and non-empty; `options.delimiter`/`index` cut one part out of it;
//! - every target selected (and not rejected) must have every `fieldPaths` entry, unless
//!   `options.create`; `options.delimiter`/`index` replace one part of the target (a negative
//!   index prepends, an index past the end appends);
//! - an existing scalar target keeps its type (`replicas: 1` takes `"3"` as the number 3;
//!   a value that does not fit the type -- `abc` into a number, anything into `null` -- is an
//!   error, as in kustomize); a map or list target is replaced by the source value.
//!
//! Divergence (kustomize#5338, `tests/kustomize/DIVERGENCES.md`): a field *created* by a
//! replacement carries the source value with the source's type. kustomize v5.5 writes it
//! untyped, so the string `"20230921.12345678"` becomes the float `2.023092112345678e+07`.
//!
//! Invariant: resources are only changed at the selected target fields; on error, earlier
//! replacements of the same call may already have been applied (the build stops anyway).

pub use crate::types::replacement::{
    FieldOptions, Replacement, ReplacementField, SourceSelector, TargetSelector,
};
use crate::types::selector::LabelSelector;
use kiln_base::resource::Resource;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Errors of the replacements transformer.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReplacementError {
    #[error("replacement {index} has no source or no targets")]
    #[diagnostic(
        code(kiln::kustomize::replacement_incomplete),
        help("a replacement needs `source:` and at least one entry in `targets:`")
    )]
    Incomplete { index: usize },

    #[error("replacement source {selector} selects no resource")]
    #[diagnostic(
        code(kiln::kustomize::replacement_source_missing),
        help(
            "check kind, name and namespace of `source:` against the resources of this kustomization"
        )
    )]
    SourceMissing { selector: String },

    #[error("replacement source {selector} selects more than one resource: {first} and {second}")]
    #[diagnostic(
        code(kiln::kustomize::replacement_source_ambiguous),
        help(
            "add `name:`, `namespace:` or `kind:` to `source:` so that it selects exactly one resource"
        )
    )]
    SourceAmbiguous {
        selector: String,
        first: String,
        second: String,
    },

    #[error("field `{field_path}` is missing or empty in replacement source {resource}")]
    #[diagnostic(
        code(kiln::kustomize::replacement_source_field_missing),
        help("the source field must exist and not be null or empty; check `fieldPath`")
    )]
    SourceFieldMissing {
        field_path: String,
        resource: String,
    },

    #[error(
        "`options.delimiter` needs a scalar value, but `{field_path}` of {resource} is a map or list"
    )]
    #[diagnostic(
        code(kiln::kustomize::replacement_delimiter_on_non_scalar),
        help("remove `options.delimiter`, or point `fieldPath` at a string")
    )]
    DelimiterOnNonScalar {
        field_path: String,
        resource: String,
    },

    #[error(
        "`options.index` {index} is out of bounds for source value `{value}` split on `{delimiter}`"
    )]
    #[diagnostic(
        code(kiln::kustomize::replacement_index_out_of_bounds),
        help("the value has {parts} part(s); use an index from 0 to {last}")
    )]
    IndexOutOfBounds {
        index: i64,
        value: String,
        delimiter: String,
        parts: usize,
        last: usize,
    },

    #[error("replacement target {target} has no `select:`")]
    #[diagnostic(
        code(kiln::kustomize::replacement_select_missing),
        help("add `select:` (e.g. `select: {{kind: Deployment}}`) to every target")
    )]
    SelectMissing { target: usize },

    #[error("invalid {which} selector `{selector}`: {reason}")]
    #[diagnostic(
        code(kiln::kustomize::replacement_selector_invalid),
        help(
            "use Kubernetes selector syntax: `key=value`, `key!=value`, `key in (a,b)`, `key notin (a)`, `key`, `!key`"
        )
    )]
    SelectorInvalid {
        which: &'static str,
        selector: String,
        reason: String,
    },

    #[error("field `{field_path}` not found in replacement target {resource}")]
    #[diagnostic(
        code(kiln::kustomize::replacement_target_field_missing),
        help(
            "fix the field path, narrow `select:`/`reject:`, or set `options.create: true` to create it"
        )
    )]
    TargetFieldMissing {
        field_path: String,
        resource: String,
    },

    #[error(
        "cannot write `{value}` into `{field_path}` of {resource}: the field holds a {target_type}"
    )]
    #[diagnostic(
        code(kiln::kustomize::replacement_type_mismatch),
        help(
            "an existing scalar keeps its type (as in kustomize); copy a compatible value or change the target"
        )
    )]
    TypeMismatch {
        value: String,
        field_path: String,
        resource: String,
        target_type: &'static str,
    },

    #[error("replacement left {resource} without a `metadata.name`")]
    #[diagnostic(
        code(kiln::kustomize::replacement_name_removed),
        help(
            "the value copied into `metadata.name` is not a non-empty string; check the source `fieldPath`"
        )
    )]
    NameRemoved { resource: String },

    #[error("invalid replacement in `{path}`: {reason}")]
    #[diagnostic(
        code(kiln::kustomize::replacement_file_invalid),
        help(
            "a replacements file holds one replacement (a map with `source` and `targets`) or a list of them"
        )
    )]
    FileInvalid { path: String, reason: String },
}

/// Reads the content of a `replacements: - path:` file (already parsed from YAML): one
/// replacement or a list of them, as kustomize's `ReplacementTransformer.Config`.
///
/// Errors: [`ReplacementError::FileInvalid`] naming `path`.
pub fn replacements_from_value(
    path: &str,
    value: &Value,
) -> Result<Vec<Replacement>, ReplacementError> {
    let invalid = |e: serde_json::Error| ReplacementError::FileInvalid {
        path: path.to_string(),
        reason: e.to_string(),
    };
    match value {
        Value::Array(_) => serde_json::from_value(value.clone()).map_err(invalid),
        Value::Object(_) => Ok(vec![
            serde_json::from_value(value.clone()).map_err(invalid)?,
        ]),
        _ => Err(ReplacementError::FileInvalid {
            path: path.to_string(),
            reason: "not a map or a list".into(),
        }),
    }
}

/// Applies the replacements in order.
///
/// Errors: see [`ReplacementError`]; every variant is a condition kustomize also rejects.
pub fn apply_replacements(
    resources: &mut [Resource],
    replacements: &[Replacement],
) -> Result<(), ReplacementError> {
    for (index, r) in replacements.iter().enumerate() {
        let Some(source) = &r.source else {
            return Err(ReplacementError::Incomplete { index });
        };
        if r.targets.is_empty() {
            return Err(ReplacementError::Incomplete { index });
        }
        let value = source_value(resources, source)?;
        for (t, target) in r.targets.iter().enumerate() {
            apply_target(resources, &value, target, t)?;
        }
    }
    Ok(())
}

/// The (possibly cut) source value.
fn source_value(
    resources: &[Resource],
    source: &SourceSelector,
) -> Result<Value, ReplacementError> {
    let id = source.id();
    let mut found: Option<&Resource> = None;
    for res in resources {
        if id.selects_id(res) {
            if let Some(first) = found {
                return Err(ReplacementError::SourceAmbiguous {
                    selector: id.id_text(),
                    first: first.id().to_string(),
                    second: res.id().to_string(),
                });
            }
            found = Some(res);
        }
    }
    let Some(res) = found else {
        return Err(ReplacementError::SourceMissing {
            selector: id.id_text(),
        });
    };
    let field_path = if source.field_path.is_empty() {
        "metadata.name"
    } else {
        source.field_path.as_str()
    };
    let missing = || ReplacementError::SourceFieldMissing {
        field_path: field_path.to_string(),
        resource: id.id_text(),
    };
    let segs = split_path(field_path);
    // kustomize's `IsNilOrEmpty`: null, `{}` and `[]` count as missing.
    let value = lookup(&res.value, &segs)
        .filter(|v| !is_nil_or_empty(v))
        .ok_or_else(missing)?;
    let Some(opts) = source.options.as_ref().filter(|o| !o.delimiter.is_empty()) else {
        return Ok(value.clone());
    };
    let Some(text) = scalar_text(value) else {
        return Err(ReplacementError::DelimiterOnNonScalar {
            field_path: field_path.to_string(),
            resource: res.id().to_string(),
        });
    };
    let parts: Vec<&str> = text.split(opts.delimiter.as_str()).collect();
    match usize::try_from(opts.index).ok().and_then(|i| parts.get(i)) {
        Some(part) => Ok(Value::String(part.to_string())),
        None => Err(ReplacementError::IndexOutOfBounds {
            index: opts.index,
            value: text.clone(),
            delimiter: opts.delimiter.clone(),
            parts: parts.len(),
            last: parts.len().saturating_sub(1),
        }),
    }
}

fn is_nil_or_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The text of a scalar as YAML holds it (`None` for maps and lists).
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

fn apply_target(
    resources: &mut [Resource],
    value: &Value,
    target: &TargetSelector,
    index: usize,
) -> Result<(), ReplacementError> {
    let Some(select) = &target.select else {
        return Err(ReplacementError::SelectMissing { target: index });
    };
    let select_labels = meta_selector("label", &select.label_selector)?;
    let select_annos = meta_selector("annotation", &select.annotation_selector)?;
    let mut rejects = Vec::new();
    for r in &target.reject {
        rejects.push((
            r,
            meta_selector("label", &r.label_selector)?,
            meta_selector("annotation", &r.annotation_selector)?,
        ));
    }
    let default_paths = ["metadata.name".to_string()];
    let field_paths: &[String] = if target.field_paths.is_empty() {
        &default_paths
    } else {
        &target.field_paths
    };
    let options = target.options.clone().unwrap_or_default();
    for res in resources.iter_mut() {
        if !meta_matches(&select_labels, res, "labels")
            || !meta_matches(&select_annos, res, "annotations")
        {
            continue;
        }
        // A reject entry rejects the objects that match *all* of its fields, as a `select`
        // does. kustomize splits it (`selectByAnnoAndLabel` / `containsRejectId`): its id
        // fields and its label/annotation selectors each reject alone, so `kind: Deployment`
        // plus `labelSelector: frozen=true` rejects every Deployment and every frozen object
        // of any kind. Divergence (tests/kustomize/kf31, DIVERGENCES.md).
        let rejected = rejects.iter().any(|(r, l, a)| {
            let has_meta = r.has_meta();
            (has_meta || r.has_id())
                && (!has_meta
                    || (meta_matches(l, res, "labels") && meta_matches(a, res, "annotations")))
                && (!r.has_id() || r.selects_id(res))
        });
        if rejected || !select.selects_id(res) {
            continue;
        }
        let before = res.id().to_string();
        for fp in field_paths {
            copy_to_target(res, value, fp, &options)?;
        }
        // kustomize rebuilds its resource map after the filter and fails on an object left
        // without a name (a map or list copied into `metadata.name` leaves `""`).
        if res.name().is_empty() {
            return Err(ReplacementError::NameRemoved { resource: before });
        }
    }
    Ok(())
}

fn copy_to_target(
    res: &mut Resource,
    value: &Value,
    field_path: &str,
    options: &FieldOptions,
) -> Result<(), ReplacementError> {
    let segs = split_path(field_path);
    let resource = res.id().to_string();
    let mut result = Ok(());
    let mut count = 0usize;
    walk_mut(
        &mut res.value,
        &segs,
        options.create,
        &mut |field, created| {
            count += 1;
            if result.is_ok() {
                result = set_field(field, created, value, options, field_path, &resource);
            }
        },
    );
    result?;
    if count == 0 {
        return Err(ReplacementError::TargetFieldMissing {
            field_path: field_path.to_string(),
            resource,
        });
    }
    Ok(())
}

/// kustomize's `setFieldValue`, with the #5338 correction for created fields.
fn set_field(
    field: &mut Value,
    created: bool,
    value: &Value,
    options: &FieldOptions,
    field_path: &str,
    resource: &str,
) -> Result<(), ReplacementError> {
    let mut value = value.clone();
    if !options.delimiter.is_empty() {
        // kyaml creates the missing field with the *value's* node kind, so a created field
        // is a map or list (and the delimiter an error) when the value is one.
        let current = if created {
            scalar_text(&value).map(|_| String::new())
        } else {
            scalar_text(field)
        };
        let Some(current) = current else {
            return Err(ReplacementError::DelimiterOnNonScalar {
                field_path: field_path.to_string(),
                resource: resource.to_string(),
            });
        };
        let v = scalar_text(&value).unwrap_or_default();
        let mut parts: Vec<String> = current
            .split(options.delimiter.as_str())
            .map(str::to_string)
            .collect();
        match usize::try_from(options.index) {
            Err(_) => parts.insert(0, v),
            Ok(i) if i >= parts.len() => parts.push(v),
            Ok(i) => parts[i] = v,
        }
        value = Value::String(parts.join(&options.delimiter));
    }
    if created {
        // #5338: kustomize writes the created scalar untyped; we keep the source's type.
        *field = value;
        return Ok(());
    }
    match field {
        Value::Object(_) | Value::Array(_) => *field = value,
        _ => {
            // "For scalar, only copy the value (leave any type intact ...)": the text of
            // the value, decoded as the target's type. A map or list has the text "".
            let text = scalar_text(&value).unwrap_or_default();
            let mismatch = |target_type| ReplacementError::TypeMismatch {
                value: text.clone(),
                field_path: field_path.to_string(),
                resource: resource.to_string(),
                target_type,
            };
            *field = match field {
                Value::String(_) => Value::String(text.clone()),
                Value::Number(n) if n.is_i64() || n.is_u64() => {
                    parse_int(&text).ok_or_else(|| mismatch("integer"))?
                }
                Value::Number(_) => parse_number(&text).ok_or_else(|| mismatch("number"))?,
                Value::Bool(_) => parse_bool(&text)
                    .map(Value::Bool)
                    .ok_or_else(|| mismatch("boolean"))?,
                _ => return Err(mismatch("null")),
            };
        }
    }
    Ok(())
}

fn parse_int(text: &str) -> Option<Value> {
    let t = text.strip_prefix('+').unwrap_or(text);
    t.parse::<i64>()
        .ok()
        .map(Value::from)
        .or_else(|| t.parse::<u64>().ok().map(Value::from))
}

fn parse_number(text: &str) -> Option<Value> {
    parse_int(text).or_else(|| {
        let f: f64 = text.parse().ok().filter(|f: &f64| f.is_finite())?;
        serde_json::Number::from_f64(f).map(Value::Number)
    })
}

fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    }
}

/// One segment of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// A map key.
    Field(String),
    /// `[key=value]` (key empty: `[=value]` over scalar elements).
    Match(String, String),
    /// A list index.
    Index(usize),
    /// `*`: every element.
    Every,
}

/// kyaml's `SmarterPathSplitter` plus segment parsing: split on unescaped `.` outside
/// brackets; `[k=v]` stays a matcher, `[key]` becomes a plain key.
fn split_path(path: &str) -> Vec<Seg> {
    let mut raw = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                cur.push('.');
                chars.next();
            }
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            '.' if depth == 0 => raw.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    raw.push(cur);
    raw.into_iter()
        .filter(|s| !s.is_empty())
        .map(|s| {
            if let Some(inner) = s.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
                match inner.split_once('=') {
                    Some((k, v)) => Seg::Match(k.to_string(), v.to_string()),
                    None => Seg::Field(inner.to_string()),
                }
            } else if s == "*" {
                Seg::Every
            } else if let Ok(i) = s.parse::<usize>() {
                Seg::Index(i)
            } else {
                Seg::Field(s)
            }
        })
        .collect()
}

fn element_matches(el: &Value, key: &str, want: &str) -> bool {
    let probe = if key.is_empty() {
        Some(el)
    } else {
        el.get(key)
    };
    probe.and_then(scalar_text).is_some_and(|t| t == want)
}

/// The first value at `segs` (kyaml `Lookup`).
fn lookup<'a>(value: &'a Value, segs: &[Seg]) -> Option<&'a Value> {
    let Some((first, rest)) = segs.split_first() else {
        return Some(value);
    };
    match (first, value) {
        (Seg::Field(k), Value::Object(m)) => lookup(m.get(k)?, rest),
        (Seg::Index(i), Value::Array(a)) => lookup(a.get(*i)?, rest),
        (Seg::Match(k, v), Value::Array(a)) => a
            .iter()
            .filter(|el| element_matches(el, k, v))
            .find_map(|el| lookup(el, rest)),
        (Seg::Every, Value::Array(a)) => a.iter().find_map(|el| lookup(el, rest)),
        _ => None,
    }
}

/// A fresh container for the segment after `next` when creating (kyaml `getPathPartKind`).
fn fresh_for(next: Option<&Seg>) -> Value {
    match next {
        Some(Seg::Match(..)) | Some(Seg::Index(_)) => Value::Array(Vec::new()),
        Some(_) => Value::Object(Map::new()),
        None => Value::Null,
    }
}

/// Calls `f(field, created)` on every target field at `segs` (kyaml `PathMatcher`); with
/// `create`, missing map keys, `[k=v]` elements and list slots are created on the way.
fn walk_mut(value: &mut Value, segs: &[Seg], create: bool, f: &mut dyn FnMut(&mut Value, bool)) {
    walk_inner(value, segs, create, false, f)
}

fn walk_inner(
    value: &mut Value,
    segs: &[Seg],
    create: bool,
    created: bool,
    f: &mut dyn FnMut(&mut Value, bool),
) {
    let Some((first, rest)) = segs.split_first() else {
        f(value, created);
        return;
    };
    // A container created on the way comes in as `Null`.
    if value.is_null() && create && created {
        *value = fresh_for(Some(first));
    }
    match (first, value) {
        (Seg::Field(k), Value::Object(m)) => {
            let missing = m.get(k).is_none_or(|v| v.is_null() && !rest.is_empty());
            if missing {
                if !create {
                    return;
                }
                m.insert(k.clone(), fresh_for(rest.first()));
            }
            let child = m.get_mut(k).expect("present or just inserted");
            walk_inner(child, rest, create, missing, f);
        }
        (Seg::Index(i), Value::Array(a)) => {
            if *i >= a.len() {
                if !create || *i > a.len() {
                    return;
                }
                a.push(fresh_for(rest.first()));
                let child = a.last_mut().expect("just pushed");
                walk_inner(child, rest, create, true, f);
                return;
            }
            walk_inner(&mut a[*i], rest, create, false, f);
        }
        (Seg::Match(k, v), Value::Array(a)) => {
            let mut any = false;
            for el in a.iter_mut().filter(|el| element_matches(el, k, v)) {
                any = true;
                walk_inner(el, rest, create, false, f);
            }
            if !any && create {
                let el = if k.is_empty() {
                    Value::String(v.clone())
                } else {
                    let mut m = Map::new();
                    m.insert(k.clone(), Value::String(v.clone()));
                    Value::Object(m)
                };
                a.push(el);
                let child = a.last_mut().expect("just pushed");
                walk_inner(child, rest, create, false, f);
            }
        }
        (Seg::Every, Value::Array(a)) => {
            for el in a.iter_mut() {
                walk_inner(el, rest, create, false, f);
            }
        }
        _ => {}
    }
}

/// A `labelSelector`/`annotationSelector` of a replacement, parsed by the engine's one
/// label-selector parser.
fn meta_selector(
    which: &'static str,
    text: &Option<String>,
) -> Result<LabelSelector, ReplacementError> {
    let text = text.as_deref().unwrap_or("");
    LabelSelector::parse(text).map_err(|reason| ReplacementError::SelectorInvalid {
        which,
        selector: text.to_string(),
        reason,
    })
}

/// Whether `sel` holds over the resource's labels or annotations (`field`). Values compare as
/// YAML holds them as text (kyaml's `GetLabels` reads node values), so `tier: 1` is `"1"`.
fn meta_matches(sel: &LabelSelector, res: &Resource, field: &str) -> bool {
    let map = res.value.get("metadata").and_then(|m| m.get(field));
    sel.matches(|k| {
        map.and_then(|m| m.get(k))
            .and_then(scalar_text)
            .map(Cow::Owned)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(v: Value) -> Resource {
        Resource::new(v, None)
    }

    fn parse(v: Value) -> Vec<Replacement> {
        serde_json::from_value(v).unwrap()
    }

    fn fixture() -> Vec<Resource> {
        vec![
            res(
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
                "spec": {"replicas": 1, "template": {"spec": {"containers": [
                    {"name": "app", "image": "registry.local:5000/app:20230921.12345678"}]}}}}),
            ),
            res(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "app", "labels": {"tier": "web"}}}),
            ),
            res(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info"},
                "data": {"BUILD": "placeholder", "N": "3", "LIST": "a,b,c"}}),
            ),
        ]
    }

    #[test]
    fn splits_paths_like_kyaml() {
        assert_eq!(
            split_path("spec.containers.[name=app].image"),
            [
                Seg::Field("spec".into()),
                Seg::Field("containers".into()),
                Seg::Match("name".into(), "app".into()),
                Seg::Field("image".into())
            ]
        );
        assert_eq!(
            split_path("metadata.labels.[app.kubernetes.io/name]"),
            [
                Seg::Field("metadata".into()),
                Seg::Field("labels".into()),
                Seg::Field("app.kubernetes.io/name".into())
            ]
        );
        assert_eq!(
            split_path(r"a\.b.0.*"),
            [Seg::Field("a.b".into()), Seg::Index(0), Seg::Every]
        );
        assert_eq!(
            split_path("x.[name=a.b].y")[1],
            Seg::Match("name".into(), "a.b".into())
        );
    }

    #[test]
    fn delimiter_source_and_created_label_keeps_string() {
        let mut rs = fixture();
        let reps = parse(json!([{
            "source": {"kind": "Deployment", "name": "app", "fieldPath": "spec.template.spec.containers.[name=app].image",
                       "options": {"delimiter": ":", "index": 2}},
            "targets": [
                {"select": {"kind": "Service"}, "fieldPaths": ["metadata.labels.[app.kubernetes.io/version]"], "options": {"create": true}},
                {"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.BUILD"]}
            ]
        }]));
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(
            rs[1].value["metadata"]["labels"]["app.kubernetes.io/version"],
            json!("20230921.12345678")
        );
        assert_eq!(rs[2].value["data"]["BUILD"], json!("20230921.12345678"));
    }

    #[test]
    fn scalar_targets_keep_their_type() {
        let mut rs = fixture();
        let reps = parse(json!([
            {"source": {"kind": "ConfigMap", "fieldPath": "data.N"}, "targets": [{"select": {"kind": "Deployment"}, "fieldPaths": ["spec.replicas"]}]},
            {"source": {"kind": "Deployment", "fieldPath": "spec.replicas"}, "targets": [{"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.BUILD"]}]}
        ]));
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(rs[0].value["spec"]["replicas"], json!(3));
        assert_eq!(rs[2].value["data"]["BUILD"], json!("3"));

        let bad = parse(
            json!([{"source": {"kind": "ConfigMap", "fieldPath": "data.LIST"},
            "targets": [{"select": {"kind": "Deployment"}, "fieldPaths": ["spec.replicas"]}]}]),
        );
        let err = apply_replacements(&mut rs, &bad).unwrap_err();
        assert!(matches!(
            err,
            ReplacementError::TypeMismatch {
                target_type: "integer",
                ..
            }
        ));
    }

    #[test]
    fn target_delimiter_prefix_suffix_and_replace() {
        let mut rs = fixture();
        let reps = parse(json!([{"source": {"kind": "Service"},
        "targets": [
            {"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.LIST"], "options": {"delimiter": ",", "index": -1}},
            {"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.LIST"], "options": {"delimiter": ",", "index": 9}},
            {"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.LIST"], "options": {"delimiter": ",", "index": 2}}
        ]}]));
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(rs[2].value["data"]["LIST"], "app,a,app,c,app");
    }

    #[test]
    fn select_reject_and_label_selectors() {
        let mut rs = fixture();
        rs.push(res(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "x",
            "labels": {"team": "b"}}, "data": {"BUILD": "o"}})));
        let reps = parse(json!([{"source": {"kind": "Service", "name": "app"},
            "targets": [{"select": {"kind": "ConfigMap"}, "reject": [{"name": "info"}], "fieldPaths": ["data.BUILD"]}]}]));
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(rs[2].value["data"]["BUILD"], "placeholder");
        assert_eq!(rs[3].value["data"]["BUILD"], "app");

        let reps = parse(json!([{"source": {"kind": "Service"},
            "targets": [{"select": {"labelSelector": "team in (a, b),!nope"}, "fieldPaths": ["data.BUILD"]},
                        {"select": {"kind": "ConfigMap"}, "reject": [{"labelSelector": "team"}], "fieldPaths": ["data.N"]}]}]));
        rs[3].value["data"]["BUILD"] = json!("o");
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(rs[3].value["data"]["BUILD"], "app");
        assert_eq!(rs[2].value["data"]["N"], "app");
        assert!(rs[3].value["data"].get("N").is_none());
    }

    #[test]
    fn a_reject_entry_needs_all_its_fields_to_match() {
        // kf31: `kind` plus `labelSelector` rejects the labelled objects of that kind only
        // (kustomize: every object of the kind, and every labelled object).
        let mut rs = fixture();
        rs.push(res(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen",
            "labels": {"frozen": "true"}}, "data": {"N": "o"}}),
        ));
        rs.push(res(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s",
            "labels": {"frozen": "true"}}, "data": {"N": "o"}}),
        ));
        let n = rs.len();
        let reps = parse(json!([{"source": {"kind": "Service", "name": "app"},
            "targets": [{"select": {"kind": "ConfigMap"},
                "reject": [{"kind": "ConfigMap", "labelSelector": "frozen=true"}],
                "fieldPaths": ["data.N"], "options": {"create": true}},
                {"select": {"kind": "Secret"},
                "reject": [{"kind": "ConfigMap", "labelSelector": "frozen=true"}],
                "fieldPaths": ["data.N"], "options": {"create": true}}]}]));
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(
            rs[n - 2].value["data"]["N"],
            "o",
            "the frozen ConfigMap is rejected"
        );
        assert_eq!(
            rs[n - 1].value["data"]["N"],
            "app",
            "a frozen Secret is not"
        );
        assert_eq!(
            rs[2].value["data"]["N"], "app",
            "an unlabelled ConfigMap is not"
        );
    }

    #[test]
    fn source_matches_previous_names_and_errors() {
        let mut rs = fixture();
        rs[1].meta.previous_names.push((None, "old-svc".into()));
        let reps = parse(
            json!([{"source": {"name": "old-svc"}, "targets": [{"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.BUILD"]}]}]),
        );
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(rs[2].value["data"]["BUILD"], "app");

        let cases = [
            (
                json!({"source": {"kind": "Nope"}, "targets": [{"select": {}}]}),
                "replacement_source_missing",
            ),
            (
                json!({"source": {"name": "app"}, "targets": [{"select": {}}]}),
                "replacement_source_ambiguous",
            ),
            (
                json!({"source": {"kind": "Service", "fieldPath": "spec.x"}, "targets": [{"select": {}}]}),
                "replacement_source_field_missing",
            ),
            (
                json!({"source": {"kind": "Service"}, "targets": [{"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.nope"]}]}),
                "replacement_target_field_missing",
            ),
            (
                json!({"source": {"kind": "Service", "options": {"delimiter": "-", "index": 1}}, "targets": [{"select": {}}]}),
                "replacement_index_out_of_bounds",
            ),
            (
                json!({"source": {"kind": "Service"}, "targets": [{"fieldPaths": ["a"]}]}),
                "replacement_select_missing",
            ),
            (
                json!({"source": {"kind": "Service"}, "targets": []}),
                "replacement_incomplete",
            ),
            (
                json!({"source": {"kind": "Service", "fieldPath": "metadata.labels"},
                       "targets": [{"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.NEW"],
                                    "options": {"create": true, "delimiter": "/"}}]}),
                "replacement_delimiter_on_non_scalar",
            ),
            (
                json!({"source": {"kind": "Service", "fieldPath": "metadata.labels"},
                       "targets": [{"select": {"kind": "ConfigMap"}}]}),
                "replacement_name_removed",
            ),
        ];
        for (rep, code) in cases {
            let mut rs = fixture();
            let err = apply_replacements(&mut rs, &parse(json!([rep]))).unwrap_err();
            let got = miette::Diagnostic::code(&err).unwrap().to_string();
            assert_eq!(got, format!("kiln::kustomize::{code}"));
        }
    }

    #[test]
    fn absent_namespace_is_default_when_selecting() {
        let mut rs = fixture();
        let reps = parse(
            json!([{"source": {"kind": "Service", "namespace": "default"},
            "targets": [{"select": {"kind": "ConfigMap", "namespace": "default"}, "fieldPaths": ["data.BUILD"]},
                        {"select": {"kind": "Deployment", "namespace": "other"}, "fieldPaths": ["spec.template.spec.containers.0.image"]}]}]),
        );
        apply_replacements(&mut rs, &reps).unwrap();
        assert_eq!(rs[2].value["data"]["BUILD"], "app");
        assert_eq!(
            rs[0].value["spec"]["template"]["spec"]["containers"][0]["image"],
            "registry.local:5000/app:20230921.12345678"
        );
    }

    #[test]
    fn create_builds_lists_and_matched_elements() {
        let mut rs = fixture();
        let reps = parse(
            json!([{"source": {"kind": "Service"}, "targets": [{"select": {"kind": "Deployment"},
            "fieldPaths": ["spec.template.spec.containers.[name=side].image", "spec.new.0.val", "spec.template.metadata.labels"],
            "options": {"create": true}}]}]),
        );
        apply_replacements(&mut rs, &reps).unwrap();
        let d = &rs[0].value;
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][1],
            json!({"name": "side", "image": "app"})
        );
        assert_eq!(d["spec"]["new"], json!([{"val": "app"}]));
        assert_eq!(d["spec"]["template"]["metadata"]["labels"], json!("app"));
    }

    #[test]
    fn path_entries_and_files() {
        let f: Vec<ReplacementField> = serde_json::from_value(
            json!([{"path": "r.yaml"}, {"source": {"kind": "A"}, "targets": []}]),
        )
        .unwrap();
        assert_eq!(f[0].path, "r.yaml");
        assert!(f[1].path.is_empty() && f[1].source.is_some());
        let one = replacements_from_value(
            "r.yaml",
            &json!({"source": {"kind": "A"}, "targets": [{"select": {"kind": "B"}}]}),
        )
        .unwrap();
        assert_eq!(one.len(), 1);
        let many = replacements_from_value("r.yaml", &json!([{"source": {"kind": "A"}, "targets": []}, {"source": {"kind": "B"}, "targets": []}])).unwrap();
        assert_eq!(many.len(), 2);
        assert!(replacements_from_value("r.yaml", &json!("x")).is_err());
        // Unknown fields are rejected, as kustomize's strict decoding does.
        assert!(
            serde_json::from_value::<crate::types::selector::Selector>(
                json!({"kind": "A", "bogus": 1})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<SourceSelector>(json!({"kind": "A", "bogus": 1})).is_err()
        );
        assert!(
            serde_json::from_value::<Replacement>(json!({"source": {}, "targets": [], "x": 1}))
                .is_err()
        );
    }
}
