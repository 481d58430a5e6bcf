//! Kubernetes resources as every kiln stage sees them: a JSON object plus where it came
//! from and the bookkeeping kustomize keeps beside it.
//!
//! Invariant: `Resource::value` is always a JSON object (`serde_json::Value::Object`) with
//! `apiVersion`, `kind` and `metadata.name` (generators and loaders check this before
//! building one). Maps keep insertion order (`serde_json` with `preserve_order`); the YAML
//! emitter sorts keys on output, as `kubectl kustomize` does.

use serde_json::{Map, Value};
use std::fmt;

/// Where a resource was read from: a file (as shown to the user, relative to the root the
/// user named) and the index of the YAML document within that file (0-based).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    /// Path as displayed in diagnostics, e.g. `components/ledger/deployment.yaml`.
    pub file: String,
    /// 0-based index of the document in a multi-document stream.
    pub document: usize,
}

/// Identity of a resource, as kustomize's `resid.ResId`: group, version, kind, namespace,
/// name. `namespace` is `None` when absent (kustomize treats absent and `default` alike when
/// matching, see [`ResId::same_namespace`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResId {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ResId {
    /// `true` when both namespaces are equal, counting absent and `default` as the same,
    /// which is how kustomize compares ids of namespaced objects.
    pub fn same_namespace(&self, other: &ResId) -> bool {
        fn norm(ns: &Option<String>) -> &str {
            match ns.as_deref() {
                None | Some("") => "default",
                Some(s) => s,
            }
        }
        norm(&self.namespace) == norm(&other.namespace)
    }

    /// `group/version` or just `version` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for ResId {
    /// `Kind/namespace/name` (or `Kind/name` when not namespaced), plus the group when it
    /// is not the core group: `apps/Deployment/shop/frontend`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.group.is_empty() {
            write!(f, "{}/", self.group)?;
        }
        write!(f, "{}/", self.kind)?;
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        write!(f, "{}", self.name)
    }
}

/// Bookkeeping kustomize keeps beside an object while it builds (in kustomize these are
/// internal `config.kubernetes.io/*` and `internal.config.kubernetes.io/*` annotations,
/// stripped before output). Never serialized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuildMeta {
    /// Names (namespace, name) this object had before prefix/suffix/hash transformers
    /// renamed it, oldest first; used by the name-reference transformer.
    pub previous_names: Vec<(Option<String>, String)>,
    /// Set for objects made by `configMapGenerator`/`secretGenerator` whose name gets the
    /// content hash suffix (kustomize's `needsHashSuffix`).
    pub needs_hash_suffix: bool,
    /// Generator `behavior` (create/merge/replace) for generated objects.
    pub generator_behavior: Option<String>,
    /// Names of the legacy `vars` whose `objref` selects this object (kustomize's
    /// `AppendRefVarName`, set when the declaring kustomization is accumulated).
    pub ref_vars: Vec<String>,
    /// Non-empty `namePrefix` values applied to this object, innermost kustomization first
    /// (kustomize's `config.kubernetes.io/prefixes`); the name-reference transformer uses them
    /// to break ties between candidates.
    pub name_prefixes: Vec<String>,
    /// Non-empty `nameSuffix` values applied, innermost first (`config.kubernetes.io/suffixes`).
    pub name_suffixes: Vec<String>,
    /// JSON Pointers of the fields the source file wrote with an empty value (`key:`), which
    /// kiln reads as `null` like an explicit `null`. kustomize's kyaml keeps them apart: the
    /// first strategic merge patch on the object drops them, a JSON patch turns them into
    /// explicit nulls (see `kustomize::strategic_merge::drop_bare_empty_fields`). Set by the
    /// resource loader, emptied by either patch.
    pub bare_empty_fields: Vec<String>,
    /// The kustomizations this object was built through, innermost first, as ids of one
    /// build (kustomize keeps no such record). With `rename_scopes` it tells the
    /// name-reference transformer which name an object had where a referrer first met it.
    pub scopes: Vec<u32>,
    /// For each entry of `previous_names`, the kustomization (an id of `scopes`) whose
    /// transformers made that rename; missing entries were made at the top of the build.
    pub rename_scopes: Vec<u32>,
    /// For an object made by a builtin generator: the kustomization file (as displayed,
    /// relative to the build root) and the generator kind, for `buildMetadata:
    /// [originAnnotations]` (kustomize's `configuredIn` / `configuredBy`).
    pub generated_in: Option<(String, &'static str)>,
    /// Where kiln's own spec says the object and its fields came from, for validation's
    /// findings (issue 36, item 7); kustomize never reads it. `None` costs nothing.
    pub provenance: Option<Box<Provenance>>,
}

/// Where a rendered object came from, kept from render to validation (and in the render
/// cache) so that a finding names the source line, not only the rendered one.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    /// The file the object was read or rendered from, relative to the repository root (or
    /// absolute, for a chart in the source cache): a manifest or a chart template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The object's document in `file` (for a template: among the documents it rendered).
    #[serde(default)]
    pub document: usize,
    /// `file` is a Helm chart template: not YAML until rendered, so a field's line is found
    /// by following its keys.
    #[serde(default)]
    pub template: bool,
    /// Fields kiln's spec set, in the order applied (later ones win).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<FieldSet>,
    /// For an object a Helm chart rendered: how it was rendered, shared by the render's
    /// objects (one pointer each), so that a finding can render it again to name the values
    /// behind a field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<std::sync::Arc<ChartRender>>,
}

/// How a Helm chart was rendered: the `helm` generator's inputs as evaluated. A finding in
/// the chart's output renders it again with the reads traced (issue 36, item 7: the values
/// file where the value came from); the render itself keeps nothing else for it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChartRender {
    /// The chart directory or archive, as read.
    pub chart: String,
    /// The chart's directory as findings name it (relative to the repository root, or
    /// absolute for a chart in the source cache).
    pub shown: String,
    /// The chart directories added as its dependencies, as read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    pub release_name: String,
    pub namespace: String,
    /// The values files, in order: as read, and as findings name them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value_files: Vec<(String, String)>,
    /// The values given inline, evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<serde_json::Value>,
    /// Where those are written: the spec file and the JSON Pointer of `values` in it.
    pub values_at: (String, String),
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
}

/// A field (and everything below it) that a spec value set: a transformer's patch, an
/// inline resource (`pointer` empty: the whole object).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldSet {
    /// JSON Pointer in the object.
    pub pointer: String,
    /// The spec file (`components/web/component.yaml`, as diagnostics name it).
    pub file: String,
    /// JSON Pointer of the value in that file (document 0).
    pub at: String,
    /// What set it: `jsonPatch`, `labels`, `resources`, …
    pub by: String,
}

impl Provenance {
    /// The last spec value that set `pointer` or a field above it, with the rest of the
    /// pointer below that field.
    pub fn setter<'a>(&self, pointer: &'a str) -> Option<(&FieldSet, &'a str)> {
        self.set.iter().rev().find_map(|f| {
            let rest = pointer.strip_prefix(f.pointer.as_str())?;
            (rest.is_empty() || rest.starts_with('/')).then_some((f, rest))
        })
    }
}

/// One Kubernetes object.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// The object; always a JSON object.
    pub value: Value,
    /// Where it was read from; `None` for generated objects.
    pub origin: Option<Origin>,
    /// Build-time bookkeeping; not part of the output.
    pub meta: BuildMeta,
}

impl Resource {
    /// Wraps a JSON object. The caller guarantees `value` is an object.
    pub fn new(value: Value, origin: Option<Origin>) -> Self {
        Resource {
            value,
            origin,
            meta: BuildMeta::default(),
        }
    }

    fn str_at(&self, path: &[&str]) -> Option<&str> {
        let mut v = &self.value;
        for k in path {
            v = v.get(k)?;
        }
        v.as_str()
    }

    /// `apiVersion`, or `""` when absent.
    pub fn api_version(&self) -> &str {
        self.str_at(&["apiVersion"]).unwrap_or("")
    }
    /// `kind`, or `""` when absent.
    pub fn kind(&self) -> &str {
        self.str_at(&["kind"]).unwrap_or("")
    }
    /// `metadata.name`, or `""` when absent.
    pub fn name(&self) -> &str {
        self.str_at(&["metadata", "name"]).unwrap_or("")
    }
    /// `metadata.namespace`, `None` when absent or empty.
    pub fn namespace(&self) -> Option<&str> {
        self.str_at(&["metadata", "namespace"])
            .filter(|s| !s.is_empty())
    }
    /// API group (`""` for the core group), from `apiVersion`.
    pub fn group(&self) -> &str {
        match self.api_version().rsplit_once('/') {
            Some((g, _)) => g,
            None => "",
        }
    }
    /// API version without the group.
    pub fn version(&self) -> &str {
        match self.api_version().rsplit_once('/') {
            Some((_, v)) => v,
            None => self.api_version(),
        }
    }
    /// The current id.
    pub fn id(&self) -> ResId {
        ResId {
            group: self.group().to_string(),
            version: self.version().to_string(),
            kind: self.kind().to_string(),
            namespace: self.namespace().map(str::to_string),
            name: self.name().to_string(),
        }
    }

    /// `metadata`, created as an empty map when absent.
    pub fn metadata_mut(&mut self) -> &mut Map<String, Value> {
        let obj = self
            .value
            .as_object_mut()
            .expect("resource value is an object");
        let md = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !md.is_object() {
            *md = Value::Object(Map::new());
        }
        md.as_object_mut().expect("metadata is an object")
    }

    /// Sets `metadata.name`.
    pub fn set_name(&mut self, name: &str) {
        self.metadata_mut()
            .insert("name".into(), Value::String(name.into()));
    }

    /// Sets `metadata.namespace`.
    pub fn set_namespace(&mut self, ns: &str) {
        self.metadata_mut()
            .insert("namespace".into(), Value::String(ns.into()));
    }

    /// `metadata.<field>` (`labels` or `annotations`) as a mutable map, created when absent.
    pub fn string_map_mut(&mut self, field: &str) -> &mut Map<String, Value> {
        let md = self.metadata_mut();
        let m = md.entry(field).or_insert_with(|| Value::Object(Map::new()));
        if !m.is_object() {
            *m = Value::Object(Map::new());
        }
        m.as_object_mut().expect("map is an object")
    }

    /// `metadata.labels.<key>` as a string.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.str_at(&["metadata", "labels", key])
    }

    /// `metadata.annotations.<key>` as a string.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.str_at(&["metadata", "annotations", key])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn id_splits_group_and_version() {
        let r = Resource::new(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "namespace": "x"}}),
            None,
        );
        let id = r.id();
        assert_eq!(id.group, "apps");
        assert_eq!(id.version, "v1");
        assert_eq!(id.to_string(), "apps/Deployment/x/a");
        let core = Resource::new(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}),
            None,
        );
        assert_eq!(core.group(), "");
        assert_eq!(core.id().api_version(), "v1");
    }
}
