//! kustomize's field specs (kustomize `api/types/fieldspec.go`): a slash-separated path into an
//! object (`spec/template/metadata/labels`) plus an optional group/version/kind filter and a
//! `create` flag. The walk along the path is the engine's one field-spec walker,
//! `filters::fieldspec`.

use kiln_base::resource::Resource;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One field spec: where a transformer applies (`path`) and to which kinds (`group`,
/// `version`, `kind`; empty means any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Slash-separated path; `\/` is a slash inside a key (kustomize's `PathSplitter`).
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
        super::super::filters::fieldspec::visit_path_mut(value, self.path, self.create, f)
    }
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
        super::super::filters::fieldspec::visit_path_mut(value, &self.path, self.create, f)
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
