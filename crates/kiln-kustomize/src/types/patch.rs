//! The `patches:` model (kustomize `api/types/patch.go`, `patchstrategicmerge.go`): one
//! [`Patch`] for `patches:` and legacy `patchesJson6902:` entries and for builtin
//! `PatchTransformer` configs. Parsing and applying are in `builtins::patch_transformer`.

use super::kustomization::{nullable, nullable_fields};
use super::selector::Selector;
use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize};

/// Options of a `patches:` entry. kustomize keeps them as `map[string]bool`: other names, such
/// as kiln's former `allowNoTargetMatch`, are accepted and ignored, as kubectl does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchOptions {
    /// A strategic merge patch may change `metadata.name`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_name_change: bool,
    /// A strategic merge patch may change `kind`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_kind_change: bool,
    /// The order of lists a strategic merge merges: not a kustomization field, but the
    /// build's `--fixes merge-order` (kustomize's by default).
    #[serde(skip)]
    pub list_order: ListOrder,
}

impl<'de> Deserialize<'de> for PatchOptions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map: IndexMap<String, bool> = nullable(d)?;
        let get = |k: &str| map.get(k).copied().unwrap_or(false);
        Ok(PatchOptions {
            allow_name_change: get("allowNameChange"),
            allow_kind_change: get("allowKindChange"),
            list_order: ListOrder::default(),
        })
    }
}

nullable_fields! {
    /// One `patches:` entry (also the shape of a legacy `patchesJson6902:` entry, where `target`
    /// holds group/version/kind/name/namespace and the patch must be JSON 6902): a file (`path`)
    /// or inline text (`patch`), and an optional `target`. Empty strings are absent, as with
    /// kustomize's `omitempty` fields.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Patch {
        /// A file with the patch, relative to the kustomization directory.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub path: String,
        /// The patch inline.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub patch: String,
        /// The resources to patch; required for JSON 6902, optional for strategic merge.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        pub target: Option<Selector>,
        /// `allowNameChange`, `allowKindChange`.
        #[serde(skip_serializing_if = "is_default_options", default)]
        pub options: PatchOptions,
    }
}

fn is_default_options(o: &PatchOptions) -> bool {
    *o == PatchOptions::default()
}

/// Where an entry's patch text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchSource<'a> {
    /// Read this file (relative to the kustomization).
    Path(&'a str),
    /// The text itself.
    Inline(&'a str),
}

/// A legacy `patchesStrategicMerge:` item: a file path or, for legacy reasons, the patch
/// itself inline (kustomize tries to parse the string as YAML resources first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PatchStrategicMerge(
    /// The path or the inline patch, as written.
    pub String,
);

impl PatchStrategicMerge {
    /// `Inline` when the string holds patch content (several lines, or a flow map `{…}`),
    /// otherwise `Path`. A file path never contains a line break, and a one-line YAML resource
    /// must be a flow map.
    pub fn source(&self) -> PatchSource<'_> {
        let s = self.0.trim();
        if s.contains('\n') || s.starts_with('{') {
            PatchSource::Inline(&self.0)
        } else {
            PatchSource::Path(&self.0)
        }
    }
}

/// The order of a merged list's items.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// kustomize's (kyaml `merge2` with `ListIncreaseDirection: Prepend`): the items the patch
    /// names first, in patch order, then the others in their original order (case k09).
    #[default]
    Kustomize,
    /// Kubernetes apimachinery's (`normalizeElementOrder` + `mergeSortedSlice`): the opt-in
    /// `--fix apimachinery-merge-order` (ADR 0003).
    Apimachinery,
}
