//! Schema loading for `kiln validate`: turns a schema directory (Kubernetes CRD YAMLs,
//! kubeconform-style JSON Schemas, Kargo's step-config and subscription schemas) into compiled
//! validators keyed by what they check.
//!
//! Two rewrites happen before compiling, both pure functions of the input schema:
//! - [`kube_to_json_schema`] turns a CRD `openAPIV3Schema` (OpenAPI 3.0 dialect with
//!   `x-kubernetes-*` extensions) into a JSON Schema 2020-12 document with the API server's
//!   strict field validation (unknown fields are errors, as with `kubectl apply
//!   --validate=strict` and kubeconform `-strict`);
//! - [`expression_wildcard`] makes every subschema of a step-config schema accept a string
//!   holding a Kargo expression (`${{ … }}`), because Kargo evaluates expressions before it
//!   validates a step's `config` (pkg/promotion/runner/builtin: the schema is applied to the
//!   evaluated config).
//!
//! Invariant: lookups are deterministic; when two files define the same schema the choice
//! follows a documented precedence ([`SchemaSet::load`]), never directory iteration order.

use jsonschema::{Draft, Validator};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::CheckError;

/// `apiVersion` + `kind` of an object, e.g. (`kargo.akuity.io/v1alpha1`, `Stage`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    /// API group, `""` for the core group.
    pub group: String,
    /// API version without the group, e.g. `v1alpha1`.
    pub version: String,
    /// Kind, e.g. `Stage`.
    pub kind: String,
}

impl Gvk {
    /// Splits an `apiVersion` (`group/version` or `version`) and pairs it with `kind`.
    pub fn new(api_version: &str, kind: &str) -> Gvk {
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        Gvk {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.kind)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.kind)
        }
    }
}

/// The compiled schema of one kind.
pub struct KindSchema {
    /// Validator of the whole object.
    pub validator: Validator,
    /// `Some(true)` for namespaced kinds, `Some(false)` for cluster-scoped ones, `None` when
    /// the source (a bare JSON Schema) does not say.
    pub namespaced: Option<bool>,
    /// File the schema came from, for messages.
    pub source: String,
}

/// Everything `kiln validate` checks against, loaded from one schema directory.
#[derive(Default)]
pub struct SchemaSet {
    /// Object schemas by group/version/kind.
    kinds: BTreeMap<Gvk, KindSchema>,
    /// Kargo promotion step `config` validators by step name (`git-clone`, …).
    steps: BTreeMap<String, Validator>,
    /// Warehouse subscription validators by subscription type (`git`, `image`, `chart`).
    subscriptions: BTreeMap<String, Validator>,
    /// kubeconform-style JSON Schemas by lower-case file stem, compiled on first use (a
    /// schema directory often holds both a CRD and its JSON rendering; the CRD wins and the
    /// rendering is then never compiled).
    json_kinds: BTreeMap<String, JsonKind>,
    /// `(group, kind)` to plural, from the CRDs, to find `<plural>.<group>_<version>.json`.
    plurals: BTreeMap<(String, String), String>,
    /// Where the schemas were read from; the lazily compiled JSON schemas are read from it
    /// too. `None` for [`SchemaSet::empty`].
    fs: Option<std::sync::Arc<dyn crate::fs::FileSystem>>,
}

/// A JSON Schema file for one kind, compiled lazily.
struct JsonKind {
    path: PathBuf,
    display: String,
    compiled: OnceLock<Result<KindSchema, String>>,
}

impl fmt::Debug for SchemaSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaSet")
            .field(
                "kinds",
                &self
                    .kinds
                    .keys()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
            )
            .field("steps", &self.steps.keys().collect::<Vec<_>>())
            .field(
                "subscriptions",
                &self.subscriptions.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// One file found under the schema directory, classified by what it holds.
enum Found {
    /// A YAML file; may hold CustomResourceDefinitions.
    Yaml(PathBuf),
    /// A JSON Schema of one object kind, named the kubeconform way.
    KindJson(PathBuf),
    /// `step-config-schemas/<step>-config.json`, or a `$ref` target beside them.
    Step(PathBuf),
    /// `subscription-schemas/<type>.json`.
    Subscription(PathBuf),
}

impl Found {
    fn path(&self) -> &Path {
        match self {
            Found::Yaml(p) | Found::KindJson(p) | Found::Step(p) | Found::Subscription(p) => p,
        }
    }
}

/// Base URI under which step-config schemas and their `$ref` targets (`common.json`,
/// `argocd-common.json`) are registered, so relative references resolve offline.
const STEP_BASE: &str = "https://schemas.kiln.invalid/kargo/step-config/";

impl SchemaSet {
    /// An empty set: checks nothing but kiln's built-in rules.
    pub fn empty() -> SchemaSet {
        SchemaSet::default()
    }

    /// Loads every schema under `dir`, recursively.
    ///
    /// Recognised files:
    /// - `*.yaml`/`*.yml` holding `CustomResourceDefinition`s (every served version);
    /// - `*.json` JSON Schemas of one kind, named as kubeconform and openapi2jsonschema name
    ///   them: `<plural>.<group>_<version>.json`, `<kind>_<version>.json`,
    ///   `<kind>-<group>-<version>.json` (kind lower-case);
    /// - `step-config-schemas/<step>-config.json` (Kargo's step schemas, with `common.json`
    ///   and `argocd-common.json` as `$ref` targets);
    /// - `subscription-schemas/{git,image,chart}.json`.
    ///
    /// Precedence when several files define the same kind: a CRD beats a JSON Schema; then the
    /// file nearer to `dir` wins (so `kargo/x.yaml` beats `kargo/unreleased-main/x.yaml`);
    /// then the first in sorted path order.
    ///
    /// Errors: an unreadable file or directory, an unparsable YAML/JSON file, or a schema the
    /// validator cannot compile ([`CheckError::SchemaUnreadable`], [`CheckError::SchemaInvalid`]).
    pub fn load(
        fs: std::sync::Arc<dyn crate::fs::FileSystem>,
        dir: &Path,
    ) -> Result<SchemaSet, CheckError> {
        let mut found = Vec::new();
        walk(fs.as_ref(), dir, &mut found)?;
        // Nearer files first (then sorted path order), so the first definition of a kind is
        // the one that wins and nothing is compiled twice.
        found.sort_by_key(|f| {
            let p = f.path();
            (depth_of(dir, p), p.to_path_buf())
        });
        let mut set = SchemaSet {
            fs: Some(fs.clone()),
            ..SchemaSet::default()
        };
        // (depth, path) of the file that defined each kind, to apply the precedence rule.
        let mut crd_rank: BTreeMap<Gvk, (usize, String)> = BTreeMap::new();
        let mut plurals: BTreeMap<(String, String), String> = BTreeMap::new();
        let mut kind_json: Vec<PathBuf> = Vec::new();
        let mut step_files: Vec<PathBuf> = Vec::new();
        for f in found {
            match f {
                Found::Yaml(p) => {
                    let text = read(fs.as_ref(), &p)?;
                    if !text.contains("CustomResourceDefinition") {
                        continue;
                    }
                    let display = display_path(dir, &p);
                    // Only CRDs matter: other YAML files are skipped unread by the parser.
                    let docs = match super::parse_yaml_values(&display, &text) {
                        Ok(d) => d,
                        Err(e) => {
                            return Err(CheckError::SchemaInvalid {
                                path: display,
                                message: e,
                            });
                        }
                    };
                    let depth = depth_of(dir, &p);
                    for doc in docs {
                        for (gvk, schema, namespaced, plural) in crd_versions(&doc) {
                            let rank = (depth, display.clone());
                            if crd_rank.get(&gvk).is_some_and(|r| *r <= rank) {
                                continue;
                            }
                            let compiled = compile(&kube_to_json_schema(&schema, true)).map_err(
                                |message| CheckError::SchemaInvalid {
                                    path: display.clone(),
                                    message: format!("{gvk}: {message}"),
                                },
                            )?;
                            plurals.insert((gvk.group.clone(), gvk.kind.clone()), plural);
                            crd_rank.insert(gvk.clone(), rank);
                            set.kinds.insert(
                                gvk,
                                KindSchema {
                                    validator: compiled,
                                    namespaced: Some(namespaced),
                                    source: display.clone(),
                                },
                            );
                        }
                    }
                }
                Found::KindJson(p) => kind_json.push(p),
                Found::Step(p) => step_files.push(p),
                Found::Subscription(p) => {
                    let display = display_path(dir, &p);
                    let schema = read_json(fs.as_ref(), &p, &display)?;
                    let name = file_stem(&p);
                    let v = compile(&schema).map_err(|message| CheckError::SchemaInvalid {
                        path: display,
                        message,
                    })?;
                    set.subscriptions.entry(name).or_insert(v);
                }
            }
        }
        set.load_steps(dir, &step_files)?;
        // Shallower files first, then sorted path order: the first file seen per stem wins.
        kind_json.sort_by_key(|p| (depth_of(dir, p), p.clone()));
        for p in kind_json {
            let stem = file_stem(&p).to_ascii_lowercase();
            let display = display_path(dir, &p);
            set.json_kinds.entry(stem).or_insert(JsonKind {
                path: p,
                display,
                compiled: OnceLock::new(),
            });
        }
        set.plurals = plurals;
        Ok(set)
    }

    /// Registers the step-config schemas; files without the `-config.json` suffix
    /// (`common.json`, `argocd-common.json`) are only `$ref` targets.
    fn load_steps(&mut self, dir: &Path, files: &[PathBuf]) -> Result<(), CheckError> {
        if files.is_empty() {
            return Ok(());
        }
        let mut docs: Vec<(String, String, Value)> = Vec::new();
        for p in files {
            let display = display_path(dir, p);
            let fs = self
                .fs
                .as_deref()
                .ok_or_else(|| CheckError::SchemaInvalid {
                    path: display.clone(),
                    message: "no schema directory was read".into(),
                })?;
            let schema = read_json(fs, p, &display)?;
            let file = p
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("")
                .to_string();
            docs.push((file, display, expression_wildcard(&schema)));
        }
        let invalid = |display: &str, message: String| CheckError::SchemaInvalid {
            path: display.to_string(),
            message,
        };
        let mut builder = jsonschema::Registry::new().draft(Draft::Draft202012);
        for (file, display, schema) in &docs {
            builder = builder
                .add(format!("{STEP_BASE}{file}"), schema.clone())
                .map_err(|e| invalid(display, e.to_string()))?;
        }
        let registry = builder
            .prepare()
            .map_err(|e| invalid(&dir.display().to_string(), e.to_string()))?;
        for (file, display, schema) in &docs {
            let Some(step) = file.strip_suffix("-config.json") else {
                continue;
            };
            let v = jsonschema::options()
                .with_draft(Draft::Draft202012)
                .with_base_uri(format!("{STEP_BASE}{file}"))
                .with_registry(&registry)
                .build(schema)
                .map_err(|e| invalid(display, e.to_string()))?;
            self.steps.entry(step.to_string()).or_insert(v);
        }
        Ok(())
    }

    /// The schema of `gvk`, or `None` when the directory has none.
    ///
    /// Errors: a kubeconform-style JSON Schema that fails to compile on first use.
    pub fn kind(&self, gvk: &Gvk) -> Result<Option<&KindSchema>, CheckError> {
        if let Some(k) = self.kinds.get(gvk) {
            return Ok(Some(k));
        }
        let kind = gvk.kind.to_ascii_lowercase();
        let plural = self
            .plurals
            .get(&(gvk.group.clone(), gvk.kind.clone()))
            .cloned()
            .unwrap_or_else(|| guess_plural(&kind));
        let first_label = gvk.group.split('.').next().unwrap_or("");
        let mut candidates = Vec::new();
        if !gvk.group.is_empty() {
            candidates.push(format!("{plural}.{}_{}", gvk.group, gvk.version));
        }
        candidates.push(format!("{kind}_{}", gvk.version));
        if !gvk.group.is_empty() {
            candidates.push(format!("{kind}-{first_label}-{}", gvk.version));
        }
        candidates.push(format!("{kind}-{}", gvk.version));
        for c in candidates {
            let Some(j) = self.json_kinds.get(&c) else {
                continue;
            };
            let compiled = j.compiled.get_or_init(|| {
                let fs = self.fs.as_deref().ok_or("no schema directory was read")?;
                let text = fs.read_to_string(&j.path).map_err(|e| e.to_string())?;
                let schema: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
                let validator = compile(&kube_to_json_schema(&schema, true))?;
                Ok(KindSchema {
                    validator,
                    namespaced: None,
                    source: j.display.clone(),
                })
            });
            return match compiled {
                Ok(k) => Ok(Some(k)),
                Err(message) => Err(CheckError::SchemaInvalid {
                    path: j.display.clone(),
                    message: message.clone(),
                }),
            };
        }
        Ok(None)
    }

    /// The validator of a promotion step's `config`, by step name (`uses`).
    pub fn step(&self, uses: &str) -> Option<&Validator> {
        self.steps.get(uses)
    }

    /// Names of all known steps, sorted (for "did you mean").
    pub fn step_names(&self) -> impl Iterator<Item = &str> {
        self.steps.keys().map(String::as_str)
    }

    /// `true` when step-config schemas were loaded (otherwise `uses` is not checked).
    pub fn has_steps(&self) -> bool {
        !self.steps.is_empty()
    }

    /// The validator of a Warehouse subscription of type `kind` (`git`, `image`, `chart`).
    pub fn subscription(&self, kind: &str) -> Option<&Validator> {
        self.subscriptions.get(kind)
    }

    /// `true` when subscription schemas were loaded.
    pub fn has_subscriptions(&self) -> bool {
        !self.subscriptions.is_empty()
    }

    /// `true` when nothing was loaded at all (the directory held no schema).
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
            && self.json_kinds.is_empty()
            && self.steps.is_empty()
            && self.subscriptions.is_empty()
    }
}

/// The CustomResourceDefinitions of the YAML files under `dir` (nearer files first, then in
/// path order, as [`SchemaSet::load`] reads them), for the Kubernetes half of `kiln
/// validate --schema-dir`, which validates custom resources against them as the render does
/// against `spec.validation.crds`.
pub fn crd_documents(
    fs: &dyn crate::fs::FileSystem,
    dir: &Path,
) -> Result<Vec<serde_json::Value>, CheckError> {
    let mut found = Vec::new();
    walk(fs, dir, &mut found)?;
    let mut yaml: Vec<PathBuf> = found
        .into_iter()
        .filter_map(|f| match f {
            Found::Yaml(p) => Some(p),
            _ => None,
        })
        .collect();
    yaml.sort_by_key(|p| (depth_of(dir, p), p.clone()));
    let mut crds = Vec::new();
    for p in yaml {
        let text = read(fs, &p)?;
        if !text.contains("CustomResourceDefinition") {
            continue;
        }
        let display = display_path(dir, &p);
        let docs = super::parse_yaml_values(&display, &text).map_err(|message| {
            CheckError::SchemaInvalid {
                path: display,
                message,
            }
        })?;
        crds.extend(docs.into_iter().filter(kiln_k8s::Crds::is_crd));
    }
    Ok(crds)
}

fn depth_of(dir: &Path, p: &Path) -> usize {
    p.strip_prefix(dir)
        .map(|r| r.components().count())
        .unwrap_or(0)
}

/// Kubernetes' default plural for a lower-case kind (the guess `kubectl`'s RESTMapper makes:
/// `-s`/`-x`/`-ch`/`-sh` take `-es`, consonant + `y` becomes `-ies`, else `-s`).
fn guess_plural(kind: &str) -> String {
    if kind.ends_with('s') || kind.ends_with('x') || kind.ends_with("ch") || kind.ends_with("sh") {
        format!("{kind}es")
    } else if let Some(stem) = kind.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        format!("{stem}ies")
    } else {
        format!("{kind}s")
    }
}

/// Each served version of a CRD document: (gvk, openAPIV3Schema, namespaced, plural).
fn crd_versions(doc: &Value) -> Vec<(Gvk, Value, bool, String)> {
    let mut out = Vec::new();
    if doc.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return out;
    }
    let spec = &doc["spec"];
    let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
        return out;
    };
    let plural = spec["names"]["plural"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| guess_plural(&kind.to_ascii_lowercase()));
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    for v in spec["versions"].as_array().into_iter().flatten() {
        let (Some(name), Some(schema)) = (v["name"].as_str(), v.pointer("/schema/openAPIV3Schema"))
        else {
            continue;
        };
        if v.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let gvk = Gvk {
            group: group.into(),
            version: name.into(),
            kind: kind.into(),
        };
        out.push((gvk, schema.clone(), namespaced, plural.clone()));
    }
    out
}

/// Compiles a JSON Schema 2020-12 document. Formats stay annotations (the default for
/// 2020-12), as the API server checks only a handful of them.
fn compile(schema: &Value) -> Result<Validator, String> {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// The ObjectMeta rules kiln checks on every object, as the API server does
/// (k8s.io/apimachinery `ValidateObjectMeta`): label and annotation maps hold strings (a bare
/// `true` is a boolean and is rejected), label keys are qualified names and label values at
/// most 63 characters from `[A-Za-z0-9-_.]`, starting and ending alphanumeric. A `null`
/// map or list (`annotations: null`, common in charts' output) decodes to Go's nil, which
/// the server takes as empty.
pub fn object_meta_schema() -> Value {
    let qualified_name = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$";
    json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "minLength": 1, "maxLength": 253 },
            "generateName": { "type": "string" },
            "namespace": { "type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" },
            "labels": {
                "type": ["object", "null"],
                "propertyNames": { "pattern": qualified_name },
                "additionalProperties": {
                    "type": "string",
                    "maxLength": 63,
                    "pattern": "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
                }
            },
            "annotations": {
                "type": ["object", "null"],
                "propertyNames": { "pattern": qualified_name },
                "additionalProperties": { "type": "string" }
            },
            "finalizers": { "type": ["array", "null"], "items": { "type": "string" } }
        }
    })
}

/// The built-in schema of any object kiln has no CRD for: `apiVersion`, `kind` and, when
/// present, [`object_meta_schema`] (a `kustomization.yaml` has no metadata). `Namespace`
/// names are DNS-1123 labels.
pub fn builtin_object_schema(gvk: &Gvk) -> Value {
    let mut meta = object_meta_schema();
    if gvk.group.is_empty() && gvk.kind == "Namespace" {
        meta["properties"]["name"] = json!({ "type": "string", "minLength": 1, "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" });
    }
    // Kargo and Argo CD kinds: kiln's typed model, with the ObjectMeta rules.
    if let Some(mut typed) = super::model::object_schema(&gvk.group, &gvk.kind) {
        typed["properties"]["metadata"] = meta;
        return typed;
    }
    json!({
        "type": "object",
        "properties": {
            "apiVersion": { "type": "string" },
            "kind": { "type": "string" },
            "metadata": meta
        }
    })
}

/// Compiles [`builtin_object_schema`].
pub fn builtin_validator(gvk: &Gvk) -> Result<Validator, String> {
    compile(&builtin_object_schema(gvk))
}

/// Converts a Kubernetes structural schema (a CRD's `openAPIV3Schema`, or its JSON
/// rendering as kubeconform uses it) into JSON Schema 2020-12.
///
/// - `nullable: true` adds `null` to `type` (and to `enum`);
/// - a `required` field that has a `default` is no longer required (the API server
///   defaults before it validates);
/// - `x-kubernetes-int-or-string: true` becomes `anyOf: [integer, string]`;
/// - OpenAPI 3.0 boolean `exclusiveMinimum`/`exclusiveMaximum` become numeric bounds;
/// - an object with `properties` and no `additionalProperties` rejects unknown fields, unless
///   it is marked `x-kubernetes-preserve-unknown-fields` or `x-kubernetes-embedded-resource`
///   (strict field validation, `kubectl apply --validate=strict`);
/// - at the root (`root = true`), `metadata` gets [`object_meta_schema`], since CRDs declare
///   only `metadata: {type: object}` and the API server validates ObjectMeta itself;
/// - descriptions, defaults, formats and CEL rules (`x-kubernetes-validations`) are dropped.
pub fn kube_to_json_schema(node: &Value, root: bool) -> Value {
    let Value::Object(m) = node else {
        return node.clone();
    };
    let flag = |k: &str| m.get(k).and_then(Value::as_bool) == Some(true);
    let convert_all =
        |a: &Vec<Value>| Value::Array(a.iter().map(|s| kube_to_json_schema(s, false)).collect());
    let mut out = Map::new();
    for (k, v) in m {
        match k.as_str() {
            "properties" | "patternProperties" => {
                let converted = match v {
                    Value::Object(p) => Value::Object(
                        p.iter()
                            .map(|(n, s)| (n.clone(), kube_to_json_schema(s, false)))
                            .collect(),
                    ),
                    other => other.clone(),
                };
                out.insert(k.clone(), converted);
            }
            "items" | "additionalProperties" | "not" => {
                let converted = match v {
                    Value::Array(a) => convert_all(a),
                    other => kube_to_json_schema(other, false),
                };
                out.insert(k.clone(), converted);
            }
            "allOf" | "anyOf" | "oneOf" => {
                let converted = match v {
                    Value::Array(a) => convert_all(a),
                    other => other.clone(),
                };
                out.insert(k.clone(), converted);
            }
            "description" | "default" | "example" | "externalDocs" | "title" | "format"
            | "nullable" | "$schema" | "id" | "$id" => {}
            "exclusiveMinimum" | "exclusiveMaximum" if v.is_boolean() => {}
            _ if k.starts_with("x-kubernetes-") => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if flag(exclusive)
            && let Some(b) = out.remove(bound)
        {
            out.insert(exclusive.into(), b);
        }
    }
    if flag("x-kubernetes-int-or-string") && !out.contains_key("anyOf") {
        out.remove("type");
        out.insert(
            "anyOf".into(),
            json!([{ "type": "integer" }, { "type": "string" }]),
        );
    }
    if flag("nullable") {
        if let Some(Value::String(t)) = out.get("type").cloned() {
            out.insert("type".into(), json!([t, "null"]));
        }
        if let Some(Value::Array(e)) = out.get_mut("enum")
            && !e.contains(&Value::Null)
        {
            e.push(Value::Null);
        }
    }
    // The API server applies structural defaults before it validates, so a required field
    // with a `default` (Warehouse `spec.interval: 5m0s`) may be left out.
    if let (Some(Value::Array(required)), Some(Value::Object(props))) =
        (m.get("required"), m.get("properties"))
    {
        let kept: Vec<Value> = required
            .iter()
            .filter(|r| {
                r.as_str()
                    .and_then(|name| props.get(name))
                    .is_none_or(|p| p.get("default").is_none())
            })
            .cloned()
            .collect();
        if kept.is_empty() {
            out.remove("required");
        } else {
            out.insert("required".into(), Value::Array(kept));
        }
    }
    let preserve =
        flag("x-kubernetes-preserve-unknown-fields") || flag("x-kubernetes-embedded-resource");
    if !preserve
        && out.get("type").and_then(Value::as_str) == Some("object")
        && out.contains_key("properties")
        && !out.contains_key("additionalProperties")
    {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if root
        && let Value::Object(p) = out
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()))
    {
        p.insert("metadata".into(), object_meta_schema());
        p.entry("apiVersion")
            .or_insert_with(|| json!({ "type": "string" }));
        p.entry("kind")
            .or_insert_with(|| json!({ "type": "string" }));
    }
    Value::Object(out)
}

/// The test that marks a Kargo expression: a string containing `${{ … }}`.
const EXPRESSION: &str = r"\$\{\{[\s\S]*\}\}";

/// `true` when `s` holds a Kargo expression (`${{ … }}`).
pub fn is_expression(s: &str) -> bool {
    s.find("${{").is_some_and(|i| s[i..].contains("}}"))
}

/// Returns a copy of a step-config schema in which every subschema also accepts a string
/// holding a Kargo expression (`${{ … }}`), since the expression may evaluate to any type.
///
/// Each subschema `S` becomes `{if: <expression string>, then: T, else: S}`, keeping `$id`,
/// `$schema`, `definitions`/`$defs`, titles and descriptions in place so `$ref` pointers
/// still resolve, and so errors of `S` are reported as they are (jsonschema reports the
/// `else` branch's own errors). `T` is `true`, except when `S` is an `enum` of only "absent"
/// values (`null`, `""`, `false`): Kargo's schemas use those in `oneOf` branches to say "this
/// field is not set" (git-clone `checkout`: branch xor commit xor tag). An expression is a
/// set value; letting it match both branches would make such a `oneOf` fail.
pub fn expression_wildcard(node: &Value) -> Value {
    let Value::Object(m) = node else {
        return node.clone();
    };
    let mut structural = Map::new();
    let mut assertions = Map::new();
    for (k, v) in m {
        let rewritten = match k.as_str() {
            "properties" | "patternProperties" | "definitions" | "$defs" | "dependentSchemas" => {
                match v {
                    Value::Object(p) => Value::Object(
                        p.iter()
                            .map(|(n, s)| (n.clone(), expression_wildcard(s)))
                            .collect(),
                    ),
                    other => other.clone(),
                }
            }
            "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => match v {
                Value::Array(a) => Value::Array(a.iter().map(expression_wildcard).collect()),
                other => expression_wildcard(other),
            },
            "additionalProperties"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "additionalItems" => expression_wildcard(v),
            _ => v.clone(),
        };
        match k.as_str() {
            "$schema" | "$id" | "$anchor" | "$defs" | "definitions" | "title" | "description"
            | "$comment" | "default" | "examples" => structural.insert(k.clone(), rewritten),
            _ => assertions.insert(k.clone(), rewritten),
        };
    }
    if assertions.is_empty() {
        return Value::Object(structural);
    }
    let absent_only = assertions
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| {
            e.iter()
                .all(|v| matches!(v, Value::Null | Value::Bool(false)) || v.as_str() == Some(""))
        });
    structural.insert(
        "if".into(),
        json!({ "type": "string", "pattern": EXPRESSION }),
    );
    structural.insert("then".into(), Value::Bool(!absent_only));
    structural.insert("else".into(), Value::Object(assertions));
    Value::Object(structural)
}

fn read(fs: &dyn crate::fs::FileSystem, p: &Path) -> Result<String, CheckError> {
    fs.read_to_string(p)
        .map_err(|source| CheckError::SchemaUnreadable {
            path: p.display().to_string(),
            source,
        })
}

fn read_json(fs: &dyn crate::fs::FileSystem, p: &Path, display: &str) -> Result<Value, CheckError> {
    let text = read(fs, p)?;
    serde_json::from_str(&text).map_err(|e| CheckError::SchemaInvalid {
        path: display.to_string(),
        message: format!("invalid JSON: {e}"),
    })
}

fn file_stem(p: &Path) -> String {
    p.file_stem()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string()
}

/// `p` as shown in messages: the schema directory as given, then the `/`-separated rest.
fn display_path(dir: &Path, p: &Path) -> String {
    let rel = p.strip_prefix(dir).unwrap_or(p);
    let joined = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    format!(
        "{}/{}",
        dir.display().to_string().trim_end_matches('/'),
        joined
    )
}

/// Reads every directory entry under `dir`, recursively and sorted, classifying files by name.
fn walk(
    fs: &dyn crate::fs::FileSystem,
    dir: &Path,
    out: &mut Vec<Found>,
) -> Result<(), CheckError> {
    let mut entries = fs
        .read_dir(dir)
        .map_err(|source| CheckError::SchemaUnreadable {
            path: dir.display().to_string(),
            source,
        })?;
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if name.starts_with('.') {
            continue;
        }
        if fs.is_dir(&p) {
            walk(fs, &p, out)?;
            continue;
        }
        let parent = p
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(Found::Yaml(p));
        } else if name.ends_with(".json") {
            match parent {
                "step-config-schemas" => out.push(Found::Step(p)),
                "subscription-schemas" => out.push(Found::Subscription(p)),
                _ => out.push(Found::KindJson(p)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(schema: &Value, instance: &Value) -> bool {
        compile(schema).unwrap().is_valid(instance)
    }

    #[test]
    fn crd_conversion_is_strict_but_honours_kubernetes_extensions() {
        let crd = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["interval", "name"],
                    "properties": {
                        "interval": { "type": "string", "default": "5m0s" },
                        "name": { "type": "string" },
                        "port": { "x-kubernetes-int-or-string": true },
                        "note": { "type": "string", "nullable": true },
                        "config": { "x-kubernetes-preserve-unknown-fields": true },
                        "open": { "type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": { "a": { "type": "string" } } },
                        "ratio": { "type": "number", "minimum": 0, "exclusiveMinimum": true }
                    }
                }
            }
        });
        let s = kube_to_json_schema(&crd, true);
        let ok = json!({ "apiVersion": "x/v1", "kind": "X", "metadata": { "name": "a" },
            "spec": { "name": "n", "port": "http", "note": null, "config": { "any": [1] }, "open": { "b": 1 }, "ratio": 0.5 } });
        assert!(valid(&s, &ok));
        // Unknown field, wrong int-or-string, a required field without default, exclusive bound.
        for (ptr, bad) in [
            ("/spec/extra", json!(1)),
            ("/spec/port", json!(true)),
            ("/spec/ratio", json!(0)),
        ] {
            let mut inst = ok.clone();
            let (parent, key) = ptr.rsplit_once('/').unwrap();
            inst.pointer_mut(parent).unwrap()[key] = bad;
            assert!(!valid(&s, &inst), "{ptr}");
        }
        let mut no_name = ok.clone();
        no_name["spec"].as_object_mut().unwrap().remove("name");
        assert!(!valid(&s, &no_name));
    }

    #[test]
    fn object_meta_rejects_boolean_label_values() {
        let s = builtin_object_schema(&Gvk::new("v1", "Namespace"));
        let ns = |v: Value| json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "shop", "labels": { "kargo.akuity.io/project": v } } });
        assert!(valid(&s, &ns(json!("true"))));
        assert!(!valid(&s, &ns(json!(true))));
        let bad_name =
            json!({ "apiVersion": "v1", "kind": "Namespace", "metadata": { "name": "Shop_1" } });
        assert!(!valid(&s, &bad_name));
    }

    #[test]
    fn object_meta_takes_null_maps_and_lists_as_empty() {
        let cm = |meta: Value| json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta });
        let s = builtin_object_schema(&Gvk::new("v1", "ConfigMap"));
        assert!(valid(
            &s,
            &cm(json!({ "name": "c", "annotations": null, "labels": null, "finalizers": null }))
        ));
        assert!(!valid(&s, &cm(json!({ "name": "c", "annotations": "" }))));
        assert!(!valid(&s, &cm(json!({ "name": "c", "labels": [] }))));
    }

    #[test]
    fn expressions_stand_for_any_type_but_not_for_an_absent_value() {
        let step = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["checkout"],
            "properties": {
                "checkout": { "type": "array", "minItems": 1, "items": {
                    "type": "object",
                    "properties": { "branch": { "type": "string" }, "commit": { "type": "string" }, "create": { "type": "boolean" } },
                    "oneOf": [
                        { "required": ["branch"], "properties": { "branch": { "minLength": 1 }, "commit": { "enum": [null, ""] } } },
                        { "required": ["commit"], "properties": { "commit": { "minLength": 1 }, "branch": { "enum": [null, ""] } } }
                    ]
                } }
            }
        });
        let s = expression_wildcard(&step);
        assert!(valid(
            &s,
            &json!({ "checkout": [{ "branch": "${{ vars.b }}", "create": "${{ vars.c }}" }] })
        ));
        assert!(valid(&s, &json!({ "checkout": "${{ vars.all }}" })));
        assert!(!valid(
            &s,
            &json!({ "checkout": [{ "branch": "main", "create": "yes" }] })
        ));
        // An expression is a set value: branch and commit together still break the oneOf.
        assert!(!valid(
            &s,
            &json!({ "checkout": [{ "branch": "${{ vars.b }}", "commit": "${{ vars.c }}" }] })
        ));
        assert!(!valid(&s, &json!({ "checkout": [], "x": 1 })));
        assert!(is_expression("./out/${{ vars.path }}") && !is_expression("${ env.name }"));
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions:\n  - name: v1\n    served: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer}\n";

    #[test]
    fn loads_crds_kubeconform_json_and_kargo_schemas_with_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "widgets.yaml", CRD);
        // A deeper CRD of the same kind that would accept a string size: must lose.
        write(
            d,
            "newer/widgets.yaml",
            &CRD.replace("size: {type: integer}", "size: {type: string}"),
        );
        // kubeconform-style JSON Schemas, found by file name.
        write(
            d,
            "jsonschema/gadgets.example.com_v1.json",
            r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"on":{"type":"boolean"}}}}}"#,
        );
        write(
            d,
            "gizmo_v2.json",
            r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"n":{"type":"integer"}}}}}"#,
        );
        write(
            d,
            "step-config-schemas/common.json",
            r#"{"definitions":{"p":{"type":"string","minLength":1}}}"#,
        );
        write(
            d,
            "step-config-schemas/echo-config.json",
            r#"{"type":"object","required":["text"],"properties":{"text":{"$ref":"common.json#/definitions/p"}},"additionalProperties":false}"#,
        );
        write(
            d,
            "subscription-schemas/image.json",
            r#"{"type":"object","required":["repoURL"]}"#,
        );
        write(d, "notes.yaml", "just: text\n");
        let set = SchemaSet::load(std::sync::Arc::new(crate::fs::RealFs), d).unwrap();
        let widget = set
            .kind(&Gvk::new("example.com/v1", "Widget"))
            .unwrap()
            .unwrap();
        assert_eq!(widget.namespaced, Some(true));
        assert!(
            widget.source.ends_with("/widgets.yaml") && !widget.source.contains("newer"),
            "{}",
            widget.source
        );
        let obj = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
        assert!(widget.validator.is_valid(&obj(json!({"size": 3}))));
        assert!(!widget.validator.is_valid(&obj(json!({"size": "3"}))));
        assert!(
            !widget.validator.is_valid(&obj(json!({"colour": "red"}))),
            "strict: unknown fields fail"
        );
        let gadget = set
            .kind(&Gvk::new("example.com/v1", "Gadget"))
            .unwrap()
            .unwrap();
        assert!(!gadget.validator.is_valid(&json!({"spec": {"on": "yes"}})));
        assert!(!gadget.validator.is_valid(&json!({"spec": {"off": true}})));
        let gizmo = set
            .kind(&Gvk::new("tools.example.com/v2", "Gizmo"))
            .unwrap()
            .unwrap();
        assert!(gizmo.validator.is_valid(&json!({"spec": {"n": 1}})));
        assert!(
            set.kind(&Gvk::new("example.com/v1", "Nothing"))
                .unwrap()
                .is_none()
        );
        let echo = set.step("echo").unwrap();
        assert!(echo.is_valid(&json!({"text": "hi"})));
        assert!(echo.is_valid(&json!({"text": "${{ vars.t }}"})));
        assert!(!echo.is_valid(&json!({"text": ""})));
        assert!(set.step("common").is_none(), "ref targets are not steps");
        assert!(set.subscription("image").is_some() && set.has_subscriptions());
    }

    #[test]
    fn a_broken_crd_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "bad.yaml",
            "kind: CustomResourceDefinition\nspec: [\n",
        );
        let e = SchemaSet::load(std::sync::Arc::new(crate::fs::RealFs), dir.path()).unwrap_err();
        assert!(
            matches!(&e, CheckError::SchemaInvalid { path, .. } if path.ends_with("bad.yaml")),
            "{e:?}"
        );
        assert!(matches!(
            SchemaSet::load(
                std::sync::Arc::new(crate::fs::RealFs),
                &dir.path().join("missing")
            ),
            Err(CheckError::SchemaUnreadable { .. })
        ));
    }

    #[test]
    fn plurals_follow_kubernetes() {
        assert_eq!(guess_plural("stage"), "stages");
        assert_eq!(guess_plural("policy"), "policies");
        assert_eq!(guess_plural("ingress"), "ingresses");
        assert_eq!(guess_plural("gateway"), "gateways");
    }
}
