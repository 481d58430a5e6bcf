//! The patch transformers of a kustomization — `patches:`, and the legacy
//! `patchesStrategicMerge:` and `patchesJson6902:` — applied to a list of resources.
//!
//! Sits in the kustomize engine after resources are loaded and generated: the caller reads
//! each entry's `path` (or takes its inline `patch`), turns the text into a [`ParsedPatch`]
//! with [`parse_patch`], and calls [`apply_patch`] with the entry's target and options. kiln's
//! own component transformers use the same functions (and [`merge_patch_7386`]) without a
//! kustomization. Source: kustomize `api/internal/builtins/PatchTransformer.go`,
//! `PatchStrategicMergeTransformer.go`, `PatchJson6902Transformer.go`,
//! `api/resource/resource.go` (`ApplySmPatch`), `api/resmap/reswrangler.go` (`Select`,
//! `GetById`).
//!
//! Behaviour (checked against `kubectl kustomize` v5.5.0):
//! - a patch is JSON 6902 when it parses as a list of operations, otherwise a strategic merge
//!   patch, possibly of several YAML documents, each applied in turn;
//! - a strategic merge patch without target patches the one resource with the patch's own
//!   group, version, kind, name and namespace (absent = `default`), current or original name;
//!   none or several is an error; with a target it patches every selected resource, and the
//!   patch's own apiVersion, kind and name are ignored;
//! - after a strategic merge the resource keeps its kind and name unless the options allow
//!   changing them, and always keeps its namespace; `$patch: delete` at the top removes it;
//! - a JSON patch needs a target; kustomize quirk: `add /metadata/annotations/<key>` works on
//!   a resource without annotations (kustomize keeps internal annotations on every object while
//!   it builds) while `/metadata/labels/<key>` fails with a missing path (case k10); an
//!   `annotations` map left empty is dropped, as kustomize's `SetAnnotations` does. (Not
//!   mirrored: a `test` of the whole `/metadata/annotations` map, where kustomize would see its
//!   internal annotations too.)
//! - a target that selects nothing is fine for kustomize, and for [`apply_patch`], which
//!   returns the number of objects patched; the callers decide: `kiln kustomize` warns (or
//!   fails under `--strict`, [`PatchError::PatchTargetMissing`]) when the target names one
//!   object (a `name` without regular-expression metacharacters), kiln's component
//!   transformers fail on any empty selection.
//!
//! Invariant: each resource is patched all or nothing (a failing patch leaves it as it was),
//! but a patch that fails on its third match leaves the first two patched; the build stops
//! at the first error anyway.

#![warn(missing_docs)]
use crate::filters::patch_json6902::{Json6902Error, JsonPatch};
use crate::filters::patch_strategic_merge::{self, SmpError};
use crate::filters::select::{SelectorError, effective_namespace};
use crate::konfig::merge_keys::PatchSchema;
use crate::konfig::openapi::OpenApi;
pub use crate::types::patch::{Patch, PatchOptions, PatchSource, PatchStrategicMerge};
use crate::types::selector::Selector;
use kiln_base::resource::Resource;
use miette::Diagnostic;
use serde_json::{Map, Value};
use std::collections::HashMap;
use thiserror::Error;

pub use crate::filters::patch_json6902::merge_patch_7386;

impl Patch {
    /// Exactly one of `path` and `patch` (kustomize: "must specify one of patch and path",
    /// "patch and path can't be set at the same time"). An inline patch that is only
    /// whitespace counts as absent, as kustomize trims it.
    pub fn source(&self) -> Result<PatchSource<'_>, PatchError> {
        let inline = Some(self.patch.as_str()).filter(|p| !p.trim().is_empty());
        let path = Some(self.path.as_str()).filter(|p| !p.is_empty());
        match (path, inline) {
            (Some(path), None) => Ok(PatchSource::Path(path)),
            (None, Some(text)) => Ok(PatchSource::Inline(text)),
            (Some(_), Some(_)) => Err(PatchError::PatchSourceConflict),
            (None, None) => Err(PatchError::PatchSourceMissing),
        }
    }
}

/// A patch after parsing, ready to apply.
#[derive(Debug, Clone, PartialEq)]
pub enum ParsedPatch {
    /// A JSON Patch (RFC 6902).
    Json6902(JsonPatch),
    /// One or more strategic merge patch documents (each a map).
    StrategicMerge(Vec<Value>),
}

/// Why a patch entry cannot be parsed or applied. `document` is the 0-based index of a YAML
/// document in a strategic merge patch; `resource` the patched resource's id
/// (`group/Kind/namespace/name`); `target` the selector as `field=value` pairs.
#[derive(Debug, Error, Diagnostic)]
#[allow(missing_docs)] // fields: see the enum docs
pub enum PatchError {
    /// Neither `path` nor `patch` is set.
    #[error("a patch entry needs `path` or `patch`")]
    #[diagnostic(
        code(kiln::kustomize::patch_source_missing),
        help("give the patch inline under `patch:` or in a file under `path:`")
    )]
    PatchSourceMissing,

    /// Both `path` and `patch` are set.
    #[error("a patch entry has both `path` and `patch`")]
    #[diagnostic(
        code(kiln::kustomize::patch_source_conflict),
        help("keep one of them; use two entries to apply two patches")
    )]
    PatchSourceConflict,

    /// The patch text holds no document.
    #[error("the patch is empty")]
    #[diagnostic(
        code(kiln::kustomize::patch_empty),
        help(
            "write a strategic merge patch (a partial resource) or a JSON patch (a list of operations)"
        )
    )]
    PatchEmpty,

    /// The patch text is not YAML.
    #[error(transparent)]
    #[diagnostic(transparent)]
    PatchInvalidYaml(Box<kiln_base::yaml::YamlError>),

    /// Neither a list of operations nor maps (kustomize: "unable to parse SM or JSON patch").
    #[error(
        "the patch is neither a strategic merge patch nor a JSON patch: document {document} is {found}"
    )]
    #[diagnostic(
        code(kiln::kustomize::patch_unrecognized),
        help(
            "a strategic merge patch is a partial resource (a map with apiVersion, kind, metadata.name); a JSON patch is a list of operations"
        )
    )]
    PatchUnrecognized {
        document: usize,
        found: &'static str,
    },

    /// The JSON patch's operations are malformed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    JsonPatchInvalid(Box<Json6902Error>),

    /// A legacy field got the other kind of patch.
    #[error("`{field}` needs {expected}")]
    #[diagnostic(
        code(kiln::kustomize::patch_kind_unexpected),
        help("move the patch to `patches:`, which accepts both kinds")
    )]
    PatchKindUnexpected {
        field: &'static str,
        expected: &'static str,
    },

    /// kustomize: "must specify a target for patch".
    #[error("a JSON patch needs a `target`")]
    #[diagnostic(
        code(kiln::kustomize::patch_target_required),
        help("add `target:` with the kind and name (or labelSelector) of the resources to patch")
    )]
    PatchTargetRequired,

    /// The target's regular expressions or selectors do not compile.
    #[error(transparent)]
    #[diagnostic(transparent)]
    TargetInvalid(#[from] SelectorError),

    /// A target naming one object selects nothing: an error under `kiln kustomize --strict`
    /// and for kiln's own component transformers, a warning otherwise (kustomize accepts it).
    #[error("patch target `{target}` matches no resource")]
    #[diagnostic(
        code(kiln::kustomize::patch_target_missing),
        help(
            "check the target's kind, name and namespace against the resources (names are matched before prefixes/suffixes too); kustomize applies such a patch to nothing"
        )
    )]
    PatchTargetMissing { target: String },

    /// A strategic merge patch without target whose id matches no resource (kustomize: "no
    /// resource matches strategic merge patch").
    #[error("strategic merge patch document {document} (`{id}`) matches no resource")]
    #[diagnostic(
        code(kiln::kustomize::smp_target_missing),
        help(
            "a patch without `target` is applied to the resource with the same apiVersion, kind, name and namespace; check them, or add a `target`"
        )
    )]
    SmpTargetMissing { document: usize, id: String },

    /// A strategic merge patch without target whose id matches several resources.
    #[error("strategic merge patch document {document} (`{id}`) matches {count} resources")]
    #[diagnostic(
        code(kiln::kustomize::smp_target_ambiguous),
        help("add a namespace to the patch or use a `target` to select the resources explicitly")
    )]
    SmpTargetAmbiguous {
        document: usize,
        id: String,
        count: usize,
    },

    /// A JSON patch operation failed on a selected resource.
    #[error("JSON patch failed on `{resource}`")]
    #[diagnostic(code(kiln::kustomize::json_patch_failed))]
    JsonPatchFailed {
        resource: String,
        #[source]
        #[diagnostic_source]
        source: Json6902Error,
    },

    /// A JSON patch turned a resource into something that is not a map.
    #[error("JSON patch left `{resource}` as something other than a map")]
    #[diagnostic(
        code(kiln::kustomize::patch_resource_not_a_map),
        help("a patch on the root pointer (`path: \"\"`) must keep the resource a map")
    )]
    ResourceNotAnObject { resource: String },

    /// A JSON patch left the object without `kind` (e.g. `replace` of `""` by `{}`).
    #[error("JSON patch left `{resource}` without a kind (missing kind in object)")]
    #[diagnostic(
        code(kiln::kustomize::patch_removed_kind),
        help("a JSON patch must keep `kind`; kustomize rejects the object as well")
    )]
    KindMissing { resource: String },

    /// A strategic merge patch document failed on a resource.
    #[error("strategic merge patch document {document} failed on `{resource}`")]
    #[diagnostic(code(kiln::kustomize::smp_failed))]
    SmpFailed {
        document: usize,
        resource: String,
        #[source]
        #[diagnostic_source]
        source: SmpError,
    },
}

impl PatchError {
    /// Attaches the kustomization field (`patches`, `patchesStrategicMerge`,
    /// `patchesJson6902`) and the entry's 0-based index, for the caller to underline.
    pub fn at(self, field: &'static str, index: usize) -> PatchEntryError {
        PatchEntryError {
            field,
            index,
            error: Box::new(self),
        }
    }
}

/// A [`PatchError`] located at one entry of a kustomization. Displays as
/// `patches[2]: <error>` and forwards the inner error's code, help and diagnostic source.
#[derive(Debug, Error)]
#[error("{field}[{index}]: {error}")]
pub struct PatchEntryError {
    /// `patches`, `patchesStrategicMerge` or `patchesJson6902`.
    pub field: &'static str,
    /// 0-based index of the entry in that field.
    pub index: usize,
    /// What went wrong (boxed: results stay small).
    pub error: Box<PatchError>,
}

impl Diagnostic for PatchEntryError {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.error.code()
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.error.help()
    }
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.error.diagnostic_source()
    }
}

pub(crate) fn shape(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Parses patch text (YAML or JSON; several YAML documents allowed for strategic merge).
/// `name` is the file (or `patches[i].patch`) shown in YAML errors.
pub fn parse_patch(name: &str, text: &str) -> Result<ParsedPatch, PatchError> {
    if text.trim().is_empty() {
        return Err(PatchError::PatchEmpty);
    }
    let mut docs = kiln_base::yaml::parse_stream(name, text)
        .map_err(|e| PatchError::PatchInvalidYaml(Box::new(e)))?;
    // `annotations: {x: null}` removes `x` (case p48), where a resource keeps the text `"null"`.
    for (doc, pointer) in kiln_base::yaml::plain_null_annotations(text) {
        if let Some(v) = docs.get_mut(doc).and_then(|d| d.pointer_mut(&pointer)) {
            *v = Value::Null;
        }
    }
    parse_patch_docs(docs)
}

/// Parses a legacy `patchesJson6902:` patch: it must be a JSON patch (kustomize's
/// `PatchJson6902Transformer` never reads a strategic merge patch there).
pub fn parse_json6902(name: &str, text: &str) -> Result<ParsedPatch, PatchError> {
    match parse_patch(name, text)? {
        p @ ParsedPatch::Json6902(_) => Ok(p),
        ParsedPatch::StrategicMerge(_) => Err(PatchError::PatchKindUnexpected {
            field: "patchesJson6902",
            expected: "a JSON patch (a list of operations)",
        }),
    }
}

/// Parses a legacy `patchesStrategicMerge:` patch: it must be a strategic merge patch.
pub fn parse_strategic_merge(name: &str, text: &str) -> Result<ParsedPatch, PatchError> {
    match parse_patch(name, text)? {
        p @ ParsedPatch::StrategicMerge(_) => Ok(p),
        ParsedPatch::Json6902(_) => Err(PatchError::PatchKindUnexpected {
            field: "patchesStrategicMerge",
            expected: "a strategic merge patch (a partial resource)",
        }),
    }
}

/// Classifies already-parsed documents: one list → JSON 6902 (operations validated);
/// maps → strategic merge. Empty (`null`) documents are skipped.
pub fn parse_patch_docs(docs: Vec<Value>) -> Result<ParsedPatch, PatchError> {
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    match docs.as_slice() {
        [] => Err(PatchError::PatchEmpty),
        [list @ Value::Array(_)] => JsonPatch::from_value(list)
            .map(ParsedPatch::Json6902)
            .map_err(|e| PatchError::JsonPatchInvalid(Box::new(e))),
        _ => {
            if let Some((document, d)) = docs.iter().enumerate().find(|(_, d)| !d.is_object()) {
                return Err(PatchError::PatchUnrecognized {
                    document,
                    found: shape(d),
                });
            }
            Ok(ParsedPatch::StrategicMerge(docs))
        }
    }
}

/// Applies one parsed patch to `resources`; returns how many resources it patched (a
/// strategic merge patch of several documents counts each document's matches).
///
/// `target` selects the resources (required for JSON 6902); `options` as in the entry.
/// Resources a strategic merge patch deletes (`$patch: delete`) are removed from the list.
/// Errors: see [`PatchError`]; a target that matches nothing is not one (kustomize): the
/// count is 0.
pub fn apply_patch(
    resources: &mut Vec<Resource>,
    patch: &ParsedPatch,
    target: Option<&Selector>,
    options: &PatchOptions,
) -> Result<usize, PatchError> {
    apply_patch_with(resources, patch, target, options, None, None)
}

/// The objects' positions by every name a target's `name` is matched against (the current
/// name and the original one), kept by the caller across the patch entries of one
/// kustomization. Why: kustomize tests every object against every entry's target, so 1,000
/// entries naming one object each over 1,000 objects cost 10⁶ selector tests; with the index
/// a target whose `name` is a plain name tests only the objects carrying that name.
///
/// It may list too much (a renamed object stays under its old key, and every candidate is
/// still tested against the whole target), never too little: each patched object is indexed
/// again under its new names, and deleting objects (which moves positions) drops the index,
/// rebuilt at its next use. Between uses nothing but these patches may change the objects.
#[derive(Debug, Default)]
pub struct TargetIndex {
    by_name: Option<HashMap<String, Vec<usize>>>,
}

impl TargetIndex {
    /// Ascending positions of the objects that may carry `name`.
    fn candidates(&mut self, resources: &[Resource], name: &str) -> Vec<usize> {
        let by_name = self.by_name.get_or_insert_with(|| {
            let mut m: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, r) in resources.iter().enumerate() {
                for key in index_keys(r) {
                    m.entry(key.to_string()).or_default().push(i);
                }
            }
            m
        });
        let mut out = by_name.get(name).cloned().unwrap_or_default();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// After objects `touched` were patched: indexed under their names now.
    fn reindex(&mut self, resources: &[Resource], touched: &[usize]) {
        let Some(by_name) = &mut self.by_name else {
            return;
        };
        for &i in touched {
            for key in index_keys(&resources[i]) {
                let list = by_name.entry(key.to_string()).or_default();
                if !list.contains(&i) {
                    list.push(i);
                }
            }
        }
    }
}

/// The names `CompiledSelector::matches` tests a target's `name` against.
fn index_keys(r: &Resource) -> impl Iterator<Item = &str> {
    std::iter::once(r.name()).chain(r.meta.previous_names.first().map(|(_, n)| n.as_str()))
}

/// The target's `name` when it is a plain name (no regular-expression metacharacter, `.`
/// included): it then matches exactly the objects carrying that name.
fn literal_name(target: &Selector) -> Option<&str> {
    target
        .name
        .as_deref()
        .filter(|n| !n.is_empty() && !n.chars().any(|c| "\\.+*?()|[]{}^$".contains(c)))
}

/// [`apply_patch`] under the build's `openapi:` schema, when it has one (which then replaces
/// the builtin merge keys, see `konfig/openapi.rs`).
pub fn apply_patch_with(
    resources: &mut Vec<Resource>,
    patch: &ParsedPatch,
    target: Option<&Selector>,
    options: &PatchOptions,
    openapi: Option<&OpenApi>,
    mut index: Option<&mut TargetIndex>,
) -> Result<usize, PatchError> {
    let compiled = target.map(Selector::compile).transpose()?;
    let literal = target.and_then(literal_name);
    // `None`: no target. With a plain name and an index, only the objects carrying that name
    // are tested.
    let select = |resources: &[Resource], index: Option<&mut TargetIndex>| -> Option<Vec<usize>> {
        let c = compiled.as_ref()?;
        let candidates: Vec<usize> = match (literal, index) {
            (Some(name), Some(ix)) => ix.candidates(resources, name),
            _ => (0..resources.len()).collect(),
        };
        Some(
            candidates
                .into_iter()
                .filter(|&i| c.matches(&resources[i]))
                .collect(),
        )
    };
    // Selecting tests every object against the target: done once here and reused by the
    // first (or only) patch document, which sees the same objects.
    let mut selected = Some(select(resources, index.as_deref_mut()));
    match patch {
        ParsedPatch::Json6902(ops) => {
            let Some(Some(idx)) = selected else {
                return Err(PatchError::PatchTargetRequired);
            };
            for &i in &idx {
                apply_json6902(&mut resources[i], ops)?;
            }
            if let Some(ix) = index {
                ix.reindex(resources, &idx);
            }
            Ok(idx.len())
        }
        ParsedPatch::StrategicMerge(docs) => {
            let mut count = 0;
            for (document, doc) in docs.iter().enumerate() {
                // Selected again for every document: an earlier one may have deleted
                // resources, and kustomize rebuilds its resmap between documents.
                let idx = match selected
                    .take()
                    .unwrap_or_else(|| select(resources, index.as_deref_mut()))
                {
                    Some(idx) => idx,
                    None => vec![find_by_id(resources, document, doc)?],
                };
                let mut deleted = Vec::new();
                for &i in &idx {
                    if apply_smp(
                        &mut resources[i],
                        document,
                        doc,
                        options,
                        target.is_some(),
                        openapi,
                    )? {
                        deleted.push(i);
                    }
                }
                count += idx.len();
                if let Some(ix) = index.as_deref_mut() {
                    ix.reindex(resources, &idx);
                }
                // One pass, not one `remove` (a shift of everything after) per deleted object:
                // `$patch: delete` on a broad target deletes many.
                if !deleted.is_empty() {
                    if let Some(ix) = index.as_deref_mut() {
                        *ix = TargetIndex::default();
                    }
                    let mut gone = vec![false; resources.len()];
                    deleted.iter().for_each(|&i| gone[i] = true);
                    let mut at = 0;
                    resources.retain(|_| {
                        at += 1;
                        !gone[at - 1]
                    });
                }
            }
            Ok(count)
        }
    }
}

/// JSON 6902 on one resource, with kustomize's annotations bookkeeping quirk.
fn apply_json6902(res: &mut Resource, ops: &JsonPatch) -> Result<(), PatchError> {
    let before = (res.namespace().map(str::to_string), res.name().to_string());
    let resource = res.id().to_string();
    // Patched on a copy, so a failing patch leaves the resource as it was.
    let mut value = res.value.clone();
    // kustomize quirk (case k10): its objects always carry internal annotations while patches
    // run, so `/metadata/annotations` exists for the patch even when the user wrote none.
    if let Some(md) = value.get_mut("metadata").and_then(Value::as_object_mut)
        && !md.contains_key("annotations")
    {
        md.insert("annotations".into(), Value::Object(Map::new()));
    }
    ops.apply(&mut value)
        .map_err(|source| PatchError::JsonPatchFailed {
            resource: resource.clone(),
            source,
        })?;
    // A patch on the root pointer can leave something that is not an object; every later
    // stage relies on `Resource::value` being one.
    let Some(obj) = value.as_object_mut() else {
        return Err(PatchError::ResourceNotAnObject { resource });
    };
    // kustomize reads the patched JSON back as an unstructured object, which needs a kind.
    if obj
        .get("kind")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(PatchError::KindMissing { resource });
    }
    // kustomize then strips its internal annotations and writes the map back with
    // `SetAnnotations`, which drops an empty map: whether we added it or the patch emptied it
    // (case p09), an empty `annotations` does not survive.
    if let Some(Value::Object(md)) = obj.get_mut("metadata")
        && md
            .get("annotations")
            .is_some_and(|a| a.as_object().is_some_and(Map::is_empty))
    {
        md.shift_remove("annotations");
    }
    res.value = value;
    // kustomize applies a JSON patch to the object's JSON form and reads the result back:
    // an empty-valued field comes back as an explicit `null`, which a later strategic merge
    // keeps (checked with kubectl kustomize v5.5.0).
    res.meta.bare_empty_fields.clear();
    // kustomize `StorePreviousId` before a JSON patch: a renamed object stays findable.
    if (res.namespace().map(str::to_string), res.name().to_string()) != before {
        res.meta.previous_names.push(before);
    }
    Ok(())
}

/// The one resource whose current or original id equals the patch document's id
/// (kustomize `GetById(patch.OrgId())`).
fn find_by_id(resources: &[Resource], document: usize, doc: &Value) -> Result<usize, PatchError> {
    let patch = Resource::new(doc.clone(), None);
    let want = patch.id();
    // kustomize `ResId.Equals` compares effective namespaces.
    let effective = |ns: Option<&str>| effective_namespace(&want.group, &want.kind, ns).to_string();
    let want_ns = effective(want.namespace.as_deref());
    let hits: Vec<usize> = resources
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            let gvk =
                r.group() == want.group && r.version() == want.version && r.kind() == want.kind;
            let current = r.name() == want.name && effective(r.namespace()) == want_ns;
            let earlier = r
                .meta
                .previous_names
                .iter()
                .any(|(ns, n)| *n == want.name && effective(ns.as_deref()) == want_ns);
            gvk && (current || earlier)
        })
        .map(|(i, _)| i)
        .collect();
    match hits.as_slice() {
        [i] => Ok(*i),
        [] => Err(PatchError::SmpTargetMissing {
            document,
            id: want.to_string(),
        }),
        _ => Err(PatchError::SmpTargetAmbiguous {
            document,
            id: want.to_string(),
            count: hits.len(),
        }),
    }
}

/// Strategic merge on one resource (kustomize `Resource.ApplySmPatch`); `Ok(true)` when the
/// patch deletes it.
fn apply_smp(
    res: &mut Resource,
    document: usize,
    doc: &Value,
    options: &PatchOptions,
    targeted: bool,
    openapi: Option<&OpenApi>,
) -> Result<bool, PatchError> {
    let (kind, name, namespace) = (
        res.kind().to_string(),
        res.name().to_string(),
        res.namespace().map(str::to_string),
    );
    let resource = res.id().to_string();
    let mut patch = doc.clone();
    if let Some(p) = patch.as_object_mut() {
        // kustomize `ApplySmPatch` on the resmap: the patch copy takes the resource's
        // apiVersion; with a target, a patch without kind keeps the resource's kind.
        p.insert(
            "apiVersion".into(),
            Value::String(res.api_version().to_string()),
        );
        if targeted && !p.contains_key("kind") {
            p.insert("kind".into(), Value::String(kind.clone()));
        }
    }
    let schema = match openapi {
        Some(o) => o.patch_schema(res.group(), res.api_version(), &kind),
        None => PatchSchema::for_kind(res.group(), &kind),
    };
    // Merged on a copy, so a failing patch leaves the resource as it was.
    let mut value = res.value.clone();
    patch_strategic_merge::drop_bare_empty_fields(
        &mut value,
        &res.meta.bare_empty_fields,
        schema.as_ref(),
    );
    let deleted = patch_strategic_merge::merge_ordered(
        &mut value,
        &patch,
        schema.as_ref(),
        options.list_order,
    )
    .map_err(|source| PatchError::SmpFailed {
        document,
        resource,
        source,
    })?;
    if deleted {
        return Ok(true);
    }
    res.value = value;
    // Dropped now, or out of the walk's reach (replaced lists, custom resources), which a
    // later strategic merge of the same kind does not reach either.
    res.meta.bare_empty_fields.clear();
    if !options.allow_kind_change
        && let Some(obj) = res.value.as_object_mut()
    {
        obj.insert("kind".into(), Value::String(kind));
    }
    if !options.allow_name_change {
        res.set_name(&name);
    } else if res.name() != name {
        res.meta.previous_names.push((namespace.clone(), name));
    }
    // kustomize restores the namespace unconditionally.
    match namespace {
        Some(ns) => res.set_namespace(&ns),
        None => {
            res.metadata_mut().shift_remove("namespace");
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml_docs(text: &str) -> Vec<Value> {
        kiln_base::yaml::parse_stream("test.yaml", text).unwrap()
    }

    fn resources(text: &str) -> Vec<Resource> {
        yaml_docs(text)
            .into_iter()
            .map(|v| Resource::new(v, None))
            .collect()
    }

    /// Compares resource lists as kustomize output, ignoring resource order (kubectl sorts
    /// its output; order is another module's contract).
    fn assert_same_resources(got: &[Resource], expected_yaml: &str) {
        let want = yaml_docs(expected_yaml);
        assert_eq!(got.len(), want.len(), "resource count");
        for w in &want {
            let wid = Resource::new(w.clone(), None).id();
            let g = got
                .iter()
                .find(|r| r.id() == wid)
                .unwrap_or_else(|| panic!("missing {wid}"));
            assert_eq!(&g.value, w, "resource {wid}");
        }
    }

    fn selector(v: Value) -> Selector {
        serde_json::from_value(v).unwrap()
    }

    /// Applies every `patches:` entry of an inlined kustomization (inline patches only, or
    /// patch files supplied by name).
    fn build(
        kustomization: &str,
        files: &[(&str, &str)],
        res: &mut Vec<Resource>,
    ) -> Result<(), PatchEntryError> {
        let k = yaml_docs(kustomization).remove(0);
        let entries: Vec<Patch> = serde_json::from_value(k["patches"].clone()).unwrap();
        for (i, e) in entries.iter().enumerate() {
            let text = match e.source().map_err(|err| err.at("patches", i))? {
                PatchSource::Inline(t) => t.to_string(),
                PatchSource::Path(p) => files.iter().find(|(n, _)| *n == p).unwrap().1.to_string(),
            };
            let parsed = parse_patch("patch.yaml", &text).map_err(|err| err.at("patches", i))?;
            apply_patch(res, &parsed, e.target.as_ref(), &e.options)
                .map_err(|err| err.at("patches", i))?;
        }
        Ok(())
    }

    macro_rules! case {
        ($name:literal, $file:literal) => {
            include_str!(concat!("../../../../tests/kustomize/", $name, "/", $file))
        };
    }

    #[test]
    fn k04_jsonpatch_pointer_escapes() {
        let mut res = resources(case!("k04-jsonpatch-pointer-escapes", "input/ingress.yaml"));
        build(
            case!("k04-jsonpatch-pointer-escapes", "input/kustomization.yaml"),
            &[],
            &mut res,
        )
        .unwrap();
        assert_same_resources(
            &res,
            case!("k04-jsonpatch-pointer-escapes", "expected.yaml"),
        );
    }

    #[test]
    fn k08_smp_delete_replace_directives() {
        let mut res = resources(case!(
            "k08-smp-delete-replace-directives",
            "input/deploy.yaml"
        ));
        let files = [(
            "patch.yaml",
            case!("k08-smp-delete-replace-directives", "input/patch.yaml"),
        )];
        build(
            case!(
                "k08-smp-delete-replace-directives",
                "input/kustomization.yaml"
            ),
            &files,
            &mut res,
        )
        .unwrap();
        assert_same_resources(
            &res,
            case!("k08-smp-delete-replace-directives", "expected.yaml"),
        );
    }

    #[test]
    fn k09_smp_list_order_follows_apimachinery() {
        let mut res = resources(case!("k09-smp-list-order", "input/deploy.yaml"));
        let files = [(
            "patch.yaml",
            case!("k09-smp-list-order", "input/patch.yaml"),
        )];
        build(
            case!("k09-smp-list-order", "input/kustomization.yaml"),
            &files,
            &mut res,
        )
        .unwrap();
        assert_same_resources(&res, case!("k09-smp-list-order", "expected.yaml"));
    }

    #[test]
    fn p26_json_patch_turns_empty_values_into_nulls() {
        const CASE: &str = "p26-json-patch-turns-empty-values-into-nulls";
        let text = case!(
            "p26-json-patch-turns-empty-values-into-nulls",
            "input/resources.yaml"
        );
        let mut res = crate::krusty::load::parse_resources(CASE, text).unwrap();
        assert!(res.iter().all(|r| r.meta.bare_empty_fields.len() == 2));
        build(
            case!(
                "p26-json-patch-turns-empty-values-into-nulls",
                "input/kustomization.yaml"
            ),
            &[],
            &mut res,
        )
        .unwrap();
        assert!(res.iter().all(|r| r.meta.bare_empty_fields.is_empty()));
        assert_same_resources(
            &res,
            case!(
                "p26-json-patch-turns-empty-values-into-nulls",
                "expected.yaml"
            ),
        );
    }

    #[test]
    fn k10_jsonpatch_add_under_absent_annotations_succeeds() {
        let mut res = resources(case!("k10-jsonpatch-missing-parent", "input/crds.yaml"));
        build(
            case!("k10-jsonpatch-missing-parent", "input/kustomization.yaml"),
            &[],
            &mut res,
        )
        .unwrap();
        assert_same_resources(&res, case!("k10-jsonpatch-missing-parent", "expected.yaml"));
    }

    #[test]
    fn k10_jsonpatch_add_under_absent_labels_fails() {
        let mut res = resources(case!(
            "k10-jsonpatch-missing-parent",
            "input-labels-error/crds.yaml"
        ));
        let err = build(
            case!(
                "k10-jsonpatch-missing-parent",
                "input-labels-error/kustomization.yaml"
            ),
            &[],
            &mut res,
        )
        .unwrap_err();
        assert_eq!(err.index, 0);
        let PatchError::JsonPatchFailed { resource, source } = &*err.error else {
            panic!("{err:?}")
        };
        assert!(resource.contains("CustomResourceDefinition"), "{resource}");
        assert_eq!(
            *source,
            Json6902Error::PathMissing {
                index: 0,
                op: "add",
                path: "/metadata/labels/example.com~1managed-by".into()
            }
        );
    }

    #[test]
    fn annotations_stay_absent_when_the_patch_leaves_them_empty() {
        let mut res = resources("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n");
        let p = parse_patch("patch.yaml", "- op: add\n  path: /data\n  value: {a: b}\n").unwrap();
        apply_patch(
            &mut res,
            &p,
            Some(&selector(json!({"kind": "ConfigMap"}))),
            &PatchOptions::default(),
        )
        .unwrap();
        assert_eq!(
            res[0].value,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
        );
    }

    #[test]
    fn parse_classifies_json_and_smp() {
        assert!(matches!(
            parse_patch("patch.yaml", "[{\"op\": \"remove\", \"path\": \"/a\"}]").unwrap(),
            ParsedPatch::Json6902(_)
        ));
        assert!(matches!(
            parse_patch("patch.yaml", "- op: remove\n  path: /a\n").unwrap(),
            ParsedPatch::Json6902(_)
        ));
        let ParsedPatch::StrategicMerge(docs) = parse_patch(
            "patch.yaml",
            "kind: A\nmetadata: {name: a}\n---\nkind: B\nmetadata: {name: b}\n",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(docs.len(), 2);
        assert!(matches!(
            parse_patch("patch.yaml", "  \n"),
            Err(PatchError::PatchEmpty)
        ));
        assert!(matches!(
            parse_patch("patch.yaml", "just text"),
            Err(PatchError::PatchUnrecognized { document: 0, .. })
        ));
        let err = parse_patch("patch.yaml", "- op: add\n  path: /a\n").unwrap_err();
        assert!(
            matches!(err, PatchError::JsonPatchInvalid(e) if matches!(*e, Json6902Error::InvalidOperation { index: 0, .. }))
        );
    }

    #[test]
    fn legacy_fields_take_one_kind_of_patch() {
        let smp = "kind: A\nmetadata: {name: a}\n";
        let ops = "- {op: remove, path: /a}\n";
        assert!(parse_strategic_merge("p", smp).is_ok());
        assert!(parse_json6902("p", ops).is_ok());
        assert!(matches!(
            parse_json6902("p", smp),
            Err(PatchError::PatchKindUnexpected {
                field: "patchesJson6902",
                ..
            })
        ));
        assert!(matches!(
            parse_strategic_merge("p", ops),
            Err(PatchError::PatchKindUnexpected {
                field: "patchesStrategicMerge",
                ..
            })
        ));
    }

    #[test]
    fn json_patch_must_leave_a_map() {
        let mut res = resources("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
        let p = parse_patch("p", "- {op: replace, path: '', value: 5}").unwrap();
        let t = selector(json!({"kind": "ConfigMap"}));
        let err = apply_patch(&mut res, &p, Some(&t), &PatchOptions::default()).unwrap_err();
        assert!(
            matches!(err, PatchError::ResourceNotAnObject { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn json_patch_without_target_is_an_error() {
        let mut res = resources("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
        let p = parse_patch("patch.yaml", "- {op: remove, path: /metadata}").unwrap();
        assert!(matches!(
            apply_patch(&mut res, &p, None, &PatchOptions::default()),
            Err(PatchError::PatchTargetRequired)
        ));
    }

    const TWO: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {app: x}}\ndata: {k: '1'}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: prod}\nspec: {replicas: 1}\n";

    #[test]
    fn smp_without_target_matches_by_id_including_namespace() {
        let mut res = resources(TWO);
        let p = parse_patch("patch.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: prod}\nspec: {replicas: 3}\n").unwrap();
        assert_eq!(
            apply_patch(&mut res, &p, None, &PatchOptions::default()).unwrap(),
            1
        );
        assert_eq!(res[1].value["spec"]["replicas"], json!(3));
        // Absent namespace means `default`, so this patch misses `prod/d` (kubectl kustomize
        // v5.5.0 errors the same way).
        let p = parse_patch(
            "patch.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2}\n",
        )
        .unwrap();
        let err = apply_patch(&mut res, &p, None, &PatchOptions::default()).unwrap_err();
        assert!(
            matches!(err, PatchError::SmpTargetMissing { document: 0, .. }),
            "{err:?}"
        );
        // So does another version of the same kind.
        let p = parse_patch(
            "patch.yaml",
            "apiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: d, namespace: prod}\n",
        )
        .unwrap();
        assert!(apply_patch(&mut res, &p, None, &PatchOptions::default()).is_err());
        // `default` explicitly equals absent.
        let p = parse_patch("patch.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\ndata: {b: '2'}\n").unwrap();
        apply_patch(&mut res, &p, None, &PatchOptions::default()).unwrap();
        assert_eq!(res[0].value["data"], json!({"k": "1", "b": "2"}));
        assert!(res[0].value["metadata"].get("namespace").is_none());
    }

    #[test]
    fn smp_with_target_ignores_patch_name_unless_allowed() {
        let mut res = resources(TWO);
        let p = parse_patch(
            "patch.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: zz}\ndata: {b: '2'}\n",
        )
        .unwrap();
        let t = selector(json!({"kind": "ConfigMap"}));
        apply_patch(&mut res, &p, Some(&t), &PatchOptions::default()).unwrap();
        assert_eq!(res[0].name(), "a");
        assert_eq!(res[0].value["data"]["b"], json!("2"));
        let opts = PatchOptions {
            allow_name_change: true,
            ..Default::default()
        };
        apply_patch(&mut res, &p, Some(&t), &opts).unwrap();
        assert_eq!(res[0].name(), "zz");
        assert_eq!(res[0].meta.previous_names, vec![(None, "a".to_string())]);
    }

    #[test]
    fn smp_keeps_kind_unless_allowed() {
        let mut res = resources(TWO);
        let p = parse_patch("patch.yaml", "kind: Secret\nmetadata: {name: a}\n").unwrap();
        let t = selector(json!({"name": "a"}));
        apply_patch(&mut res, &p, Some(&t), &PatchOptions::default()).unwrap();
        assert_eq!(res[0].kind(), "ConfigMap");
        apply_patch(
            &mut res,
            &p,
            Some(&t),
            &PatchOptions {
                allow_kind_change: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(res[0].kind(), "Secret");
    }

    #[test]
    fn smp_delete_removes_the_resource() {
        let mut res = resources(TWO);
        let p = parse_patch(
            "patch.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n$patch: delete\n",
        )
        .unwrap();
        assert_eq!(
            apply_patch(&mut res, &p, None, &PatchOptions::default()).unwrap(),
            1
        );
        assert_eq!(res.len(), 1);
        assert_eq!(res[0].kind(), "Deployment");
    }

    #[test]
    fn smp_documents_reselect_after_a_delete() {
        let mut res = resources(&format!(
            "{TWO}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b}}\n"
        ));
        // The first document deletes every ConfigMap; the second must not touch what moved
        // into their slots (the Deployment).
        let p = parse_patch(
            "patch.yaml",
            "kind: ConfigMap\nmetadata: {name: x}\n$patch: delete\n---\nkind: ConfigMap\nmetadata: {name: x}\ndata: {late: 'yes'}\n",
        )
        .unwrap();
        let n = apply_patch(
            &mut res,
            &p,
            Some(&selector(json!({"kind": "ConfigMap"}))),
            &PatchOptions::default(),
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(res.len(), 1);
        assert_eq!(res[0].kind(), "Deployment");
        assert!(res[0].value.get("data").is_none());
    }

    #[test]
    fn target_index_selects_as_the_scan_does() {
        // The same entries with and without an index: renames (to a name a later entry
        // targets, and away from the name another targets by the original name), a regex
        // name, a delete (positions move) and a target after it.
        let objects: String = (0..6)
            .map(|i| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}}}\ndata: {{a: '1'}}\n"))
            .collect::<Vec<_>>()
            .join("---\n");
        let entries: Vec<(Value, &str, bool)> = vec![
            (
                json!({"kind": "ConfigMap", "name": "cm-1"}),
                "- {op: replace, path: /metadata/name, value: cm-9}",
                false,
            ),
            (
                json!({"kind": "ConfigMap", "name": "cm-9"}),
                "- {op: add, path: /data/b, value: renamed}",
                false,
            ),
            (
                json!({"kind": "ConfigMap", "name": "cm-1"}),
                "- {op: add, path: /data/c, value: original}",
                false,
            ),
            (
                json!({"name": "cm-[23]"}),
                "- {op: add, path: /data/d, value: regex}",
                false,
            ),
            (
                json!({"kind": "ConfigMap", "name": "cm-2"}),
                "$patch: delete\n",
                true,
            ),
            (
                json!({"kind": "ConfigMap", "name": "cm-5"}),
                "- {op: add, path: /data/e, value: after}",
                false,
            ),
            (
                json!({"kind": "ConfigMap", "name": "cm-4"}),
                "metadata: {name: cm-2}\n",
                true,
            ),
            (
                json!({"kind": "ConfigMap", "name": "cm-2"}),
                "- {op: add, path: /data/f, value: reused}",
                false,
            ),
        ];
        let run = |with_index: bool| {
            let mut res = resources(&objects);
            let mut index = TargetIndex::default();
            for (t, text, smp) in &entries {
                let p = parse_patch("patch.yaml", text).unwrap();
                let opts = PatchOptions {
                    allow_name_change: *smp,
                    ..Default::default()
                };
                apply_patch_with(
                    &mut res,
                    &p,
                    Some(&selector(t.clone())),
                    &opts,
                    None,
                    with_index.then_some(&mut index),
                )
                .unwrap();
            }
            res.into_iter().map(|r| r.value).collect::<Vec<_>>()
        };
        let scanned = run(false);
        assert_eq!(run(true), scanned);
        assert_eq!(scanned.len(), 5);
        assert_eq!(scanned[1]["data"]["b"], "renamed");
        assert_eq!(scanned[1]["data"]["c"], "original");
        assert_eq!(scanned[3]["metadata"]["name"], "cm-2");
        assert_eq!(scanned[3]["data"]["f"], "reused");
    }

    #[test]
    fn target_matching_nothing() {
        let p = parse_patch("patch.yaml", "- {op: add, path: /data/q, value: '1'}").unwrap();
        let mut res = resources(TWO);
        // kustomize: a kind-only or regex target may select nothing.
        for t in [
            json!({"kind": "Secret"}),
            json!({"name": "z.*"}),
            json!({"labelSelector": "app=none"}),
        ] {
            assert_eq!(
                apply_patch(&mut res, &p, Some(&selector(t)), &PatchOptions::default()).unwrap(),
                0
            );
        }
        // A named target that matches nothing patches nothing; callers decide what it means.
        let t = selector(json!({"kind": "ConfigMap", "name": "zzz"}));
        assert_eq!(
            apply_patch(&mut res, &p, Some(&t), &PatchOptions::default()).unwrap(),
            0
        );
    }

    #[test]
    fn label_selector_target_patches_every_match() {
        let mut res = resources(&format!(
            "{TWO}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: b, labels: {{app: x}}}}\n"
        ));
        let p = parse_patch(
            "patch.yaml",
            "- {op: add, path: /metadata/labels/patched, value: 'yes'}",
        )
        .unwrap();
        let n = apply_patch(
            &mut res,
            &p,
            Some(&selector(json!({"labelSelector": "app=x"}))),
            &PatchOptions::default(),
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(res[2].label("patched"), Some("yes"));
        assert_eq!(res[1].label("patched"), None);
    }

    #[test]
    fn entry_sources() {
        let e: Patch =
            serde_json::from_value(json!({"path": "p.yaml", "options": {"allowNameChange": true}}))
                .unwrap();
        assert_eq!(e.source().unwrap(), PatchSource::Path("p.yaml"));
        assert!(e.options.allow_name_change);
        let e: Patch = serde_json::from_value(json!({"path": "p.yaml", "patch": "x"})).unwrap();
        assert!(matches!(e.source(), Err(PatchError::PatchSourceConflict)));
        assert!(matches!(
            Patch::default().source(),
            Err(PatchError::PatchSourceMissing)
        ));
        assert_eq!(
            PatchStrategicMerge("patch.yaml".into()).source(),
            PatchSource::Path("patch.yaml")
        );
        assert!(matches!(
            PatchStrategicMerge("kind: A\nmetadata: {name: a}\n".into()).source(),
            PatchSource::Inline(_)
        ));
    }

    #[test]
    fn errors_carry_entry_index_and_codes() {
        use miette::Diagnostic;
        let err = PatchError::PatchTargetMissing {
            target: "name=x".into(),
        }
        .at("patchesJson6902", 2);
        assert_eq!(
            err.to_string(),
            "patchesJson6902[2]: patch target `name=x` matches no resource"
        );
        assert_eq!(
            err.code().unwrap().to_string(),
            "kiln::kustomize::patch_target_missing"
        );
    }
}
