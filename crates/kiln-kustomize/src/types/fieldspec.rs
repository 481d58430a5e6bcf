//! kustomize's field specs (kustomize `api/types/fieldspec.go`): a slash-separated path into an
//! object (`spec/template/metadata/labels`) plus an optional group/version/kind filter and a
//! `create` flag. The walk along the path is the engine's one field-spec walker,
//! `filters::fieldspec::visit_path_mut`.

use kiln_base::resource::Resource;
use serde::{Deserialize, Serialize};

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
