//! kustomize's field specs (kustomize `api/types/fieldspec.go`): a slash-separated path into an
//! object (`spec/template/metadata/labels`) plus an optional group/version/kind filter and a
//! `create` flag. The walk along the path is the engine's one field-spec walker,
//! `filters::fieldspec::visit_path_mut`.
//!
//! One type for every field spec: the builtin tables of `konfig` (borrowed `'static` text,
//! built by `const fn`s) and the ones users write (kustomization `labels[].fields`,
//! `configurations:` files, builtin transformer configs; owned text).

use super::kustomization::{nullable, nullable_fields};
use kiln_base::resource::Resource;
use serde::{Deserialize, Deserializer, Serialize};
use std::borrow::Cow;

/// One field spec: where a transformer applies (`path`) and to which kinds (`group`,
/// `version`, `kind`; empty means any). Decoded strictly: unknown fields are rejected and
/// `path` is required (a kustomization's `labels[].fields` entry, which kustomize lets go
/// without a path, is read by `types::kustomization` and checked where it is used).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    #[serde(default, skip_serializing_if = "str::is_empty")]
    pub group: Cow<'static, str>,
    #[serde(default, skip_serializing_if = "str::is_empty")]
    pub version: Cow<'static, str>,
    #[serde(default, skip_serializing_if = "str::is_empty")]
    pub kind: Cow<'static, str>,
    /// Slash-separated path; `\/` is a slash inside a key (kustomize's `PathSplitter`).
    pub path: Cow<'static, str>,
    /// Create missing maps along the path (kustomize's `create: true`).
    #[serde(default)]
    pub create: bool,
}

impl FieldSpec {
    /// A field spec of a builtin table.
    pub const fn new(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        path: &'static str,
        create: bool,
    ) -> Self {
        FieldSpec {
            group: Cow::Borrowed(group),
            version: Cow::Borrowed(version),
            kind: Cow::Borrowed(kind),
            path: Cow::Borrowed(path),
            create,
        }
    }
    /// A field spec for any kind.
    pub const fn any(path: &'static str, create: bool) -> Self {
        FieldSpec::new("", "", "", path, create)
    }
    /// A field spec for one kind (any group and version).
    pub const fn kind(kind: &'static str, path: &'static str, create: bool) -> Self {
        FieldSpec::new("", "", kind, path, create)
    }
    /// A field spec for one group and kind.
    pub const fn group_kind(
        group: &'static str,
        kind: &'static str,
        path: &'static str,
        create: bool,
    ) -> Self {
        FieldSpec::new(group, "", kind, path, create)
    }

    /// Whether this spec applies to `res` (kind, group and version filters; empty = any).
    pub fn applies_to(&self, res: &Resource) -> bool {
        (self.kind.is_empty() || self.kind == res.kind())
            && (self.group.is_empty() || self.group == res.group())
            && (self.version.is_empty() || self.version == res.version())
    }
}

/// Reads a list of field specs as a kustomization's `labels[].fields` holds them: every field
/// optional (`path` too) and an explicit `null` read as empty, as kustomize's decoding of
/// `types.FieldSpec` does; unknown fields are still rejected, with the same message as
/// [`FieldSpec`]'s.
pub fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<FieldSpec>, D::Error> {
    nullable_fields! {
        /// The decoding shape only: the same fields as [`FieldSpec`], each optional.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Written {
            #[nullable]
            group: String,
            #[nullable]
            version: String,
            #[nullable]
            kind: String,
            #[nullable]
            path: String,
            #[serde(default)]
            create: bool,
        }
    }
    let written: Vec<Written> = nullable(d)?;
    Ok(written
        .into_iter()
        .map(|w| FieldSpec {
            group: w.group.into(),
            version: w.version.into(),
            kind: w.kind.into(),
            path: w.path.into(),
            create: w.create,
        })
        .collect())
}
