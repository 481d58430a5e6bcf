//! kustomize's field specs: a slash-separated path into an object (`spec/template/metadata/labels`)
//! plus an optional group/version/kind filter and a `create` flag. Lists met on the way are
//! walked element by element, as kustomize's `fieldspec` does, so
//! `spec/template/spec/containers/image` reaches every container's image.
//!
//! Source: kustomize `api/types/fieldspec.go` and `api/filters/fsslice`. Invariant: visiting never
//! creates anything unless `create` is set, and then only maps along the path (never lists).

use crate::resource::Resource;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One field spec: where a transformer applies (`path`) and to which kinds (`group`,
/// `version`, `kind`; empty means any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Slash-separated path; a segment may be escaped as in kustomize (`\/` is not used by the
    /// built-in tables, so plain splitting on `/` is enough).
    pub path: &'static str,
    /// Create missing maps along the path (kustomize's `create: true`).
    pub create: bool,
}

impl FieldSpec {
    /// A field spec for any kind.
    pub const fn any(path: &'static str, create: bool) -> Self {
        FieldSpec {
            group: "",
            version: "",
            kind: "",
            path,
            create,
        }
    }
    /// A field spec for one kind (any group and version).
    pub const fn kind(kind: &'static str, path: &'static str, create: bool) -> Self {
        FieldSpec {
            group: "",
            version: "",
            kind,
            path,
            create,
        }
    }
    /// A field spec for one group and kind.
    pub const fn group_kind(
        group: &'static str,
        kind: &'static str,
        path: &'static str,
        create: bool,
    ) -> Self {
        FieldSpec {
            group,
            version: "",
            kind,
            path,
            create,
        }
    }

    /// Whether this spec applies to `res` (kind, group and version filters).
    pub fn applies_to(&self, res: &Resource) -> bool {
        (self.kind.is_empty() || self.kind == res.kind())
            && (self.group.is_empty() || self.group == res.group())
            && (self.version.is_empty() || self.version == res.version())
    }

    /// Calls `f` on every value at this spec's path in `value`; with `create`, missing maps on
    /// the way and the final field are created (the final field as `Value::Null`, so `f` can
    /// fill it). Returns the number of fields visited.
    pub fn visit_mut(&self, value: &mut Value, f: &mut dyn FnMut(&mut Value)) -> usize {
        visit_path_mut(value, self.path, self.create, f)
    }
}

/// Calls `f` on every value at the slash-separated `path` in `value`, walking lists
/// implicitly; with `create`, missing maps on the way and the final field (as `Null`) are
/// created. The walker behind [`FieldSpec::visit_mut`] and [`UserFieldSpec::visit_mut`].
pub fn visit_path_mut(
    value: &mut Value,
    path: &str,
    create: bool,
    f: &mut dyn FnMut(&mut Value),
) -> usize {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    visit(value, &segs, create, f)
}

/// A field spec with owned strings, as written by users: kustomization `labels[].fields`,
/// `configurations:` files (kustomize `types.FieldSpec`: `group`, `version`, `kind`, `path`,
/// `create`). Built-in tables convert to it with `From<&FieldSpec>`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserFieldSpec {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Slash-separated path, as in [`FieldSpec::path`].
    pub path: String,
    /// Create missing maps along the path.
    #[serde(default)]
    pub create: bool,
}

impl UserFieldSpec {
    /// Whether this spec applies to `res` (kind, group and version filters; empty = any).
    pub fn applies_to(&self, res: &Resource) -> bool {
        (self.kind.is_empty() || self.kind == res.kind())
            && (self.group.is_empty() || self.group == res.group())
            && (self.version.is_empty() || self.version == res.version())
    }

    /// Same walk as [`FieldSpec::visit_mut`].
    pub fn visit_mut(&self, value: &mut Value, f: &mut dyn FnMut(&mut Value)) -> usize {
        visit_path_mut(value, &self.path, self.create, f)
    }
}

impl From<&FieldSpec> for UserFieldSpec {
    fn from(fs: &FieldSpec) -> Self {
        UserFieldSpec {
            group: fs.group.to_string(),
            version: fs.version.to_string(),
            kind: fs.kind.to_string(),
            path: fs.path.to_string(),
            create: fs.create,
        }
    }
}

fn visit(value: &mut Value, segs: &[&str], create: bool, f: &mut dyn FnMut(&mut Value)) -> usize {
    let Some((first, rest)) = segs.split_first() else {
        f(value);
        return 1;
    };
    match value {
        // kustomize walks list elements implicitly; a `[]` marker is tolerated too.
        Value::Array(items) => items.iter_mut().map(|it| visit(it, segs, create, f)).sum(),
        Value::Object(map) => {
            let key = first.trim_end_matches("[]");
            // A segment marked `[]` names a list, which kustomize never creates (a StatefulSet
            // without `volumeClaimTemplates` does not get one from commonLabels).
            let creatable = create && !first.ends_with("[]");
            if !map.contains_key(key) {
                if !creatable {
                    return 0;
                }
                let fresh = if rest.is_empty() {
                    Value::Null
                } else {
                    Value::Object(Map::new())
                };
                map.insert(key.to_string(), fresh);
            }
            let child = map.get_mut(key).expect("present");
            if child.is_null() && !rest.is_empty() {
                if !creatable {
                    return 0;
                }
                *child = Value::Object(Map::new());
            }
            visit(child, rest, create, f)
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn walks_lists_and_creates_maps() {
        let mut v = json!({"spec": {"template": {"spec": {"containers": [{"image": "a"}, {"image": "b"}]}}}});
        let mut seen = vec![];
        let n = FieldSpec::any("spec/template/spec/containers/image", false)
            .visit_mut(&mut v, &mut |x| seen.push(x.as_str().unwrap().to_string()));
        assert_eq!(n, 2);
        assert_eq!(seen, ["a", "b"]);

        let mut v = json!({"metadata": {}});
        FieldSpec::any("spec/selector/matchLabels", true)
            .visit_mut(&mut v, &mut |x| *x = json!({"a": "b"}));
        assert_eq!(v["spec"]["selector"]["matchLabels"]["a"], "b");

        let mut v = json!({"spec": {}});
        let n = FieldSpec::any("spec/volumeClaimTemplates[]/metadata/labels", true)
            .visit_mut(&mut v, &mut |_| {});
        assert_eq!(n, 0);
        assert_eq!(v, json!({"spec": {}}));

        let mut v = json!({"metadata": {}});
        let n = FieldSpec::any("spec/selector", false).visit_mut(&mut v, &mut |_| {});
        assert_eq!(n, 0);
        assert!(v.get("spec").is_none());
    }
}
