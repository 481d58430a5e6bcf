//! The raw spec: serde + schemars types that mirror `platform.yaml` (kind `Platform`) and
//! `component.yaml` (kind `Component`), `apiVersion: kiln/v1alpha1`, field for field.
//!
//! This is the first stage's vocabulary, before any semantic check: names are unresolved
//! strings, references (`${params.x}`) are still text, parameters are plain JSON. `validate`
//! turns these into the typed model (`crate::validate::Platform`). The JSON Schemas under
//! `schema/` are generated from these types ([`platform_schema`], [`component_schema`]) and a
//! unit test fails when the committed files drift.
//!
//! Invariant: every struct rejects unknown fields (`deny_unknown_fields`, which schemars turns
//! into `additionalProperties: false`), so a typo is an error that names the field, never a
//! silently ignored key.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The only `apiVersion` this version of kiln reads.
pub const API_VERSION: &str = "kiln/v1alpha1";

/// Parameter values by name, in the user's order.
pub type Parameters = IndexMap<String, Value>;

/// `metadata` of a kiln document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metadata {
    /// The document's name: the platform name or the component name.
    pub name: String,
    /// Free-form description, for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `platform.yaml`: the whole platform, its environments, clusters and projects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "kiln Platform", extend("$id" = "https://kiln.dev/schema/platform.schema.json"))]
pub struct PlatformFile {
    /// Always `kiln/v1alpha1`.
    #[schemars(extend("const" = "kiln/v1alpha1"))]
    pub api_version: String,
    /// Always `Platform`.
    #[schemars(extend("const" = "Platform"))]
    pub kind: String,
    pub metadata: Metadata,
    pub spec: PlatformSpec,
}

/// `spec` of a `Platform`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlatformSpec {
    /// The repository that holds this platform and its rendered tree (Kargo reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRepo>,
    /// Platform-level parameter values (layer 2 of 6, above component defaults).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub parameters: Parameters,
    /// Kubernetes clusters environments deploy to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<Cluster>,
    /// Environments, the nodes of the promotion graph.
    pub environments: Vec<Environment>,
    /// Argo CD settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gitops: Option<Gitops>,
    /// Kargo settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kargo: Option<Kargo>,
    /// Projects (business services), each a set of component instances.
    pub projects: Vec<Project>,
    /// What to do when the rendered tree would hold a `kind: Secret` (from a
    /// `secretGenerator` or a manifest): `warn` (default) renders and names them on stderr;
    /// `forbid` fails the render, so no Secret reaches the Git repository.
    #[serde(default, skip_serializing_if = "SecretPolicy::is_default")]
    pub secrets: SecretPolicy,
    /// Validation of the rendered objects against the Kubernetes API (issue 36).
    #[serde(default, skip_serializing_if = "Validation::is_default")]
    pub validation: Validation,
}

/// `spec.secrets`: whether Secrets may be emitted into the rendered tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SecretPolicy {
    /// Render them, with a warning naming each one.
    #[default]
    Warn,
    /// Fail the render (exit 1) when any Secret would be emitted.
    Forbid,
}

impl SecretPolicy {
    fn is_default(&self) -> bool {
        *self == SecretPolicy::Warn
    }
}

/// Where the platform lives and where its rendered tree is committed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceRepo {
    /// Clone URL of the platform repository.
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// Branch Kargo watches; default `main`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Directory of the rendered tree inside the repository; default `deploy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered_path: Option<String>,
}

/// How rendered objects are validated against the Kubernetes API (built-in schemas of each
/// cluster's `kubeVersion`, CRDs, CEL rules, conflicts between Applications).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Validation {
    /// CRD files (YAML, relative to the platform directory) whose custom resources are
    /// validated, beside the CRDs the platform renders itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crds: Vec<String>,
    /// Rules reported as warnings instead of errors: `unknown_field`, `wrong_type`,
    /// `shared_resource`, … (the last part of the `kiln::k8s::` code).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warn: Vec<String>,
}

impl Validation {
    fn is_default(&self) -> bool {
        self == &Validation::default()
    }
}

/// A cluster environments deploy to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Cluster {
    /// Cluster name, referenced by `environments[].cluster`.
    pub name: String,
    /// API server URL (Argo CD `destination.server`).
    pub server: String,
    /// The cluster's Kubernetes version (`1.33` to `1.37`): rendered objects are validated
    /// against its API schemas. Default 1.36.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
}

/// One environment: a stage of the promotion graph on one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Environment {
    /// Environment name, unique in the platform (`dev`, `prod-east`).
    pub name: String,
    /// Tier, e.g. `nonprod` or `prod`; available as `${env.tier}`.
    pub tier: String,
    /// Name of a cluster in `spec.clusters`.
    pub cluster: String,
    /// Namespace pattern; may use references. Default `${project.name}-${env.name}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Upstream environments (the promotion graph). Empty: takes freight straight from the
    /// Warehouse.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<String>,
    /// Environment-level parameter values (layer 3 of 6).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub parameters: Parameters,
}

/// GitOps (Argo CD) settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Gitops {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argocd: Option<ArgoCd>,
}

/// Argo CD settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArgoCd {
    /// Namespace Argo CD runs in (where Applications live); default `argocd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Argo CD AppProject the Applications belong to; default `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// Kargo settings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Kargo {
    /// Generate Kargo resources; default `false`.
    #[serde(default)]
    pub enabled: bool,
    /// Promotion policy per environment name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub promotion: IndexMap<String, Promotion>,
}

/// Promotion policy of one environment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Promotion {
    /// Promote new freight automatically.
    #[serde(default)]
    pub auto: bool,
}

/// A project: a business service bundling component instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Project {
    /// Project name, unique in the platform.
    pub name: String,
    /// Project-level parameter values (layer 4 of 6).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub parameters: Parameters,
    /// Where Kargo promotions write this project's rendered manifests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<ProjectOutput>,
    /// The unit of a Kargo promotion; default `component`.
    #[serde(default, skip_serializing_if = "PromotionUnit::is_default")]
    pub promotion: PromotionUnit,
    /// Extra labels and annotations of the project's Kargo Namespace, for a namespace the
    /// platform pre-creates with its own policy labels (Kargo adopts it through the label
    /// `kargo.akuity.io/project: "true"`, which kiln always adds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_metadata: Option<NamespaceMetadata>,
    /// Component instances of this project.
    pub components: Vec<ComponentInstance>,
}

/// What one Kargo promotion moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PromotionUnit {
    /// One Warehouse per component and one Stage per (component, environment).
    #[default]
    Component,
    /// One Warehouse per project (every component's images and rendered folders) and one
    /// Stage per (project, environment): every component in one commit, one push and one
    /// `argocd-update`.
    Project,
    /// One Warehouse per component, as with `component`, and one Stage per (project,
    /// environment) requesting Freight from each of them (Kargo's `requestedFreight` with
    /// several origins): each component's Freight is promoted on its own, into the one Stage
    /// of each environment, whose steps select it by its origin
    /// (`commitFrom(vars.srcRepo, warehouse("<component>"))`).
    EnvironmentStage,
}

impl PromotionUnit {
    /// One Stage per (project, environment) rather than per (component, environment).
    pub fn stage_per_environment(self) -> bool {
        self != PromotionUnit::Component
    }

    fn is_default(&self) -> bool {
        *self == PromotionUnit::Component
    }
}

/// Labels and annotations for a generated Namespace. Values are strings, as Kubernetes
/// requires (quote `"true"` in YAML).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NamespaceMetadata {
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub labels: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub annotations: IndexMap<String, String>,
}

/// How a project's write repository is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OutputMode {
    /// One branch per environment (`stage/<env>`), the Kargo default.
    #[default]
    BranchPerEnvironment,
    /// One directory per environment on one branch.
    PathPerEnvironment,
    /// A cluster repository: grouped by cluster first.
    ClusterRepo,
}

/// The write repository of a project (issue 3: Kargo promotions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProjectOutput {
    /// Clone URL of the write repository.
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// Layout of the write repository; default `branch-per-environment`.
    #[serde(default)]
    pub mode: OutputMode,
    /// Branch name pattern; default `stage/${env.name}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_pattern: Option<String>,
    /// Path pattern inside the write repository (path-per-environment, cluster-repo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_pattern: Option<String>,
}

/// One use of a component inside a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComponentInstance {
    /// Instance name, unique in the project; default: the component's `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Component directory, relative to the platform directory; must stay inside the
    /// repository root. Exactly one of `path` and `source`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The component kept in another Git repository (issue 33): fetched, pinned in
    /// `kiln.lock` and read from the source cache. Exactly one of `path` and `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ComponentSource>,
    /// Instance parameter values (layer 5 of 6).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub parameters: Parameters,
    /// Per-environment overrides of this instance, by environment name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub environments: IndexMap<String, InstanceEnvironment>,
    /// The environments this instance is deployed to, by name, tier or cluster
    /// (`deployTo: {tiers: [dev, test]}`); default: every environment. Elsewhere it has no
    /// directory, no Application and no Stage; Freight skips to its next deployed
    /// environment from the nearest deployed ancestor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_to: Option<When>,
}

/// `components[].source`: a component in another Git repository.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComponentSource {
    /// The repository: `https://`, `ssh://` or `git@host:org/repo.git`, `git://`, `file://`.
    /// No credentials in it (they come from the environment, as for `kiln publish`).
    #[schemars(length(min = 1))]
    pub git: String,
    /// A branch, a tag or a full commit id (default: the repository's HEAD). May hold
    /// `${env.name}`, `${env.tier}`, `${project.name}` and `${params.*}` (the platform's,
    /// environment's, project's and instance's parameters), so that one environment can
    /// follow a tag while another follows a branch.
    #[serde(default, rename = "ref", skip_serializing_if = "String::is_empty")]
    pub reference: String,
    /// The folder holding `component.yaml`, relative to the repository's root (default:
    /// the root); it may not leave the repository.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}

/// Per-environment overrides of one component instance.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InstanceEnvironment {
    /// Parameter values for this instance in this environment (layer 6 of 6, the highest).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub parameters: Parameters,
}

/// `component.yaml`: one deployable unit, its parameters, images and how it renders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "kiln Component", extend("$id" = "https://kiln.dev/schema/component.schema.json"))]
pub struct ComponentFile {
    /// Always `kiln/v1alpha1`.
    #[schemars(extend("const" = "kiln/v1alpha1"))]
    pub api_version: String,
    /// Always `Component`.
    #[schemars(extend("const" = "Component"))]
    pub kind: String,
    pub metadata: Metadata,
    pub spec: ComponentSpec,
}

/// `spec` of a `Component`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ComponentSpec {
    /// A JSON Schema (draft 2020-12) for the component's parameters; `default`s of its
    /// top-level `properties` are the lowest parameter layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Container images the component ships.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// Generators, applied in order; their resources are concatenated. Each may carry a
    /// `when:` selector (the environments it applies in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<GeneratorEntry>,
    /// Transformers, applied in order after all generators.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transformers: Vec<Transformer>,
}

/// A container image of a component.
///
/// With `strategy: Digest` (Kargo follows the digest of one mutable tag), `constraint` names
/// that tag, so it must be a valid OCI tag: Kargo asks the registry for it literally
/// (`pkg/image/digest_selector.go` at Kargo v1.11.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(extend("if" = {"properties": {"strategy": {"const": "Digest"}}, "required": ["strategy"]},
    "then" = {"properties": {"constraint": {"pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"}}}))]
pub struct Image {
    /// Image name as it appears in the manifests (kustomize `images[].name`).
    pub name: String,
    /// Repository the image is pulled from; becomes `newName` when it differs from `name`.
    pub repository: String,
    /// Base tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Base digest (`sha256:...`), instead of or beside `tag`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Semver constraint for the Kargo Warehouse subscription (`^1.4.0`); with
    /// `strategy: Digest`, the mutable tag to follow (`stable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<String>,
    /// How Kargo selects new images. Default: `SemVer`, except for an image pinned by
    /// `digest` (no `tag`) whose `constraint` is a plain tag, which follows that tag's digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ImageStrategy>,
}

/// Kargo's image selection strategies that kiln generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ImageStrategy {
    /// The newest version within the semver `constraint`; an image pinned by digest is
    /// promoted by the digest of that version.
    SemVer,
    /// The digest of one mutable tag (`constraint`, e.g. `latest`).
    Digest,
}

/// A generator: where a component's resources come from. Exactly one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Generator {
    /// Plain YAML files or directories (multi-document streams allowed), relative to the
    /// component directory. Directories are read non-recursively, `*.yaml`/`*.yml` sorted.
    /// A path may hold references (`manifests/${env.tier}/`); an entry may be
    /// `{path, optional, when}`.
    Files(Vec<PathEntry>),
    /// An existing kustomization directory, rendered by the native engine.
    Kustomize(String),
    /// Inline resources.
    Resources(Vec<Value>),
    /// One kustomize `configMapGenerator` entry.
    ConfigMapGenerator(GeneratorArgs),
    /// One kustomize `secretGenerator` entry.
    SecretGenerator(GeneratorArgs),
    /// A Helm chart, vendored in the repository or pulled from a chart repository or an
    /// OCI registry, rendered by kiln's Helm engine (docs/helm.md, docs/sources.md).
    Helm(HelmGenerator),
}

/// Which environments an entry applies in. Every list that is given must name the
/// environment: by its name, its tier or its cluster (`when: {tiers: [prod]}`). Tiers and
/// clusters are the portable vocabulary: a component in an app repository never has to name
/// a platform's environments. Names the platform lacks are errors at evaluate.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct When {
    /// Environment names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<String>>,
    /// Environment tiers (`environments[].tier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// Cluster names (`environments[].cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<String>>,
}

impl When {
    /// Whether the environment `name` (of `tier`, on `cluster`) is selected.
    pub fn admits(&self, name: &str, tier: &str, cluster: &str) -> bool {
        let ok = |list: &Option<Vec<String>>, v: &str| {
            list.as_ref().is_none_or(|l| l.iter().any(|x| x == v))
        };
        ok(&self.environments, name) && ok(&self.tiers, tier) && ok(&self.clusters, cluster)
    }

    /// The lists, with the field name each is under.
    pub fn lists(&self) -> [(&'static str, &Option<Vec<String>>); 3] {
        [
            ("environments", &self.environments),
            ("tiers", &self.tiers),
            ("clusters", &self.clusters),
        ]
    }
}

/// A path in a list of paths: the path alone, or with options. The path may hold references
/// (`values-${env.tier}.yaml`), resolved per BuildPlan; it must stay inside the component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PathEntry {
    /// A path, relative to the component directory.
    Path(String),
    /// A path with options.
    Options(PathOptions),
}

/// `{path, optional, when}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PathOptions {
    /// The path, relative to the component directory; references allowed.
    pub path: String,
    /// A missing file is skipped instead of an error (a values file kept only for some
    /// environments).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
    /// Only in these environments; default: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

impl PathEntry {
    /// The path as written (references unresolved in the spec, resolved in a BuildPlan).
    pub fn path(&self) -> &str {
        match self {
            PathEntry::Path(p) => p,
            PathEntry::Options(o) => &o.path,
        }
    }

    /// Whether a missing file is skipped.
    pub fn optional(&self) -> bool {
        matches!(self, PathEntry::Options(o) if o.optional)
    }

    /// The entry's `when`, if any.
    pub fn when(&self) -> Option<&When> {
        match self {
            PathEntry::Path(_) => None,
            PathEntry::Options(o) => o.when.as_ref(),
        }
    }
}

impl From<&str> for PathEntry {
    fn from(p: &str) -> Self {
        PathEntry::Path(p.to_string())
    }
}

/// A generator with its `when:` selector: `component.yaml` writes `when` beside the
/// generator's one key (`- kustomize: overlays/prod` / `when: {tiers: [prod]}`).
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorEntry {
    /// Only in these environments; default: all.
    pub when: Option<When>,
    /// The generator.
    pub generator: Generator,
}

impl From<Generator> for GeneratorEntry {
    fn from(generator: Generator) -> Self {
        GeneratorEntry {
            when: None,
            generator,
        }
    }
}

impl Serialize for GeneratorEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut v = serde_json::to_value(&self.generator).map_err(S::Error::custom)?;
        if let (Some(when), Value::Object(map)) = (&self.when, &mut v) {
            map.insert(
                "when".into(),
                serde_json::to_value(when).map_err(S::Error::custom)?,
            );
        }
        v.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for GeneratorEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut v = Value::deserialize(deserializer)?;
        let when = match v.as_object_mut().and_then(|m| m.shift_remove("when")) {
            Some(w) => Some(serde_json::from_value(w).map_err(D::Error::custom)?),
            None => None,
        };
        let generator = serde_json::from_value(v).map_err(D::Error::custom)?;
        Ok(GeneratorEntry { when, generator })
    }
}

impl JsonSchema for GeneratorEntry {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Generator".into()
    }

    /// [`Generator`]'s schema (one variant per key) with `when` allowed beside the key.
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = Generator::json_schema(generator);
        let when = generator.subschema_for::<When>().to_value();
        if let Some(variants) = schema.get_mut("oneOf").and_then(Value::as_array_mut) {
            for v in variants {
                if let Some(props) = v.get_mut("properties").and_then(Value::as_object_mut) {
                    props.insert("when".into(), when.clone());
                }
            }
        }
        schema
    }
}

/// The `helm` generator: `helm template` of a chart directory inside the repository, or of
/// a chart pulled from a Helm repository or an OCI registry and pinned in `kiln.lock`
/// (docs/sources.md, "Charts").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HelmGenerator {
    /// The chart directory (or `.tgz`), relative to the component directory; with
    /// `repository`, the chart's name in that repository (`redis`); or an OCI reference
    /// (`oci://registry.example.com/charts/redis`, as `helm pull` takes it).
    pub chart: String,
    /// A Helm chart repository (`https://charts.example.com`, serving `index.yaml`) or an
    /// OCI registry path (`oci://registry.example.com/charts`) to pull `chart` from, as
    /// `helm template --repo`. Credentials come from the environment, never from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    /// For a pulled chart: an exact version or a semver constraint (`18.x`, `^1.2`),
    /// resolved as Helm resolves `--version` (the newest version it admits; none: the newest
    /// stable one) and pinned in `kiln.lock`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The release name (default: the component instance name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_name: Option<String>,
    /// The release namespace (default: the environment's namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Values, over the chart's defaults and the values files; may hold `${params.*}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Value>,
    /// Values files relative to the component directory, merged in order before `values`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values_files: Vec<PathEntry>,
    /// Also emit the chart's `crds/` files (`helm template --include-crds`; spelled as
    /// kustomize's `helmCharts[].includeCRDs`).
    #[serde(default, rename = "includeCRDs")]
    pub include_crds: bool,
    /// Leave out the chart's hooks (`helm template --no-hooks`, kustomize's `skipHooks`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_hooks: bool,
    /// Leave out the chart's test hooks (`helm.sh/hook: test`/`test-success`: `helm template
    /// --skip-tests`, kustomize's `skipTests`): Pods that only `helm test` runs, which a
    /// GitOps tree would otherwise deploy and Kargo report as deployed images.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_tests: bool,
    /// `.Capabilities.KubeVersion` (default v1.36.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// Extra `.Capabilities.APIVersions` entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_versions: Vec<String>,
}

impl HelmGenerator {
    /// Whether the chart is pulled (`repository:` set, or `chart: oci://…`) rather than a
    /// directory of the repository.
    pub fn is_remote(&self) -> bool {
        self.repository.as_deref().is_some_and(|r| !r.is_empty())
            || self.chart.starts_with("oci://")
    }

    /// The pulled chart, in kustomize's terms (`repo`, `name`, `version`, which the source
    /// stage pulls and the render looks up): `chart: oci://r/charts/redis` is repo
    /// `oci://r/charts`, name `redis`. `None` for a local chart.
    pub fn remote(&self) -> Option<kiln_kustomize::ChartSource> {
        if !self.is_remote() {
            return None;
        }
        let version = self.version.clone().unwrap_or_default();
        let chart = self.chart.trim_end_matches('/');
        match self.repository.as_deref().filter(|r| !r.is_empty()) {
            Some(repo) => Some(kiln_kustomize::ChartSource {
                repo: repo.trim_end_matches('/').to_string(),
                name: chart.to_string(),
                version,
            }),
            None => {
                let (repo, name) = chart.rsplit_once('/')?;
                Some(kiln_kustomize::ChartSource {
                    repo: repo.to_string(),
                    name: name.to_string(),
                    version,
                })
            }
        }
    }
}

/// A `configMapGenerator`/`secretGenerator` entry, kustomize's `GeneratorArgs` syntax.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GeneratorArgs {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `create` (default), `merge` or `replace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<String>,
    /// `KEY=VALUE` pairs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub literals: Vec<String>,
    /// Files (`[key=]path`, relative to the component directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// `.env` files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub envs: Vec<String>,
    /// Secret type (secretGenerator only).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Generator options (labels, annotations, disableNameSuffixHash, immutable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<GeneratorOptions>,
}

/// kustomize's `generatorOptions`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GeneratorOptions {
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub labels: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub annotations: IndexMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_name_suffix_hash: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

/// A transformer, applied to every resource the generators produced. Exactly one of the
/// transformer keys (`namespace`, `labels`, `annotations`, `images`, `namePrefix`,
/// `nameSuffix`, `jsonPatch`, `mergePatch`, `strategicMergePatch`) is set; `includeSelectors`
/// and `includeTemplates` go with `labels`; `environments` limits any of them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(extend("oneOf" = [
    {"required": ["namespace"]}, {"required": ["labels"]}, {"required": ["annotations"]},
    {"required": ["images"]}, {"required": ["namePrefix"]}, {"required": ["nameSuffix"]},
    {"required": ["jsonPatch"]}, {"required": ["mergePatch"]}, {"required": ["strategicMergePatch"]}
]))]
pub struct Transformer {
    /// Set `metadata.namespace` (kustomize `namespace:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Add labels (kustomize `labels:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<IndexMap<String, String>>,
    /// With `labels`: also add them to selectors (kustomize `commonLabels` behaviour);
    /// default `false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_selectors: Option<bool>,
    /// With `labels`: also add them to pod templates; default: the value of
    /// `includeSelectors`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_templates: Option<bool>,
    /// Add annotations (kustomize `commonAnnotations:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<IndexMap<String, String>>,
    /// Retarget images (kustomize `images:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Vec<ImageOverride>>,
    /// Prefix every name (kustomize `namePrefix:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_prefix: Option<String>,
    /// Suffix every name (kustomize `nameSuffix:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_suffix: Option<String>,
    /// An RFC 6902 JSON Patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_patch: Option<JsonPatch>,
    /// An RFC 7386 JSON Merge Patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_patch: Option<MergePatch>,
    /// A kustomize strategic merge patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategic_merge_patch: Option<ObjectPatch>,
    /// Apply only in these environments; default: all. A shorthand for
    /// `when: {environments: […]}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environments: Option<Vec<String>>,
    /// Apply only in the environments this selects (names, tiers, clusters); default: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

/// kustomize's `images:` entry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImageOverride {
    /// Image name to match (without tag or digest).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_tag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// Which resources a component transformer's patch applies to: kustomize's `Selector`, the
/// engine's one selector type (empty fields match anything; `name` and `namespace` are
/// anchored regular expressions).
pub use crate::kustomize::types::selector::Selector as Target;

/// An RFC 6902 patch with its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JsonPatch {
    /// Resources to patch; a target that matches nothing is an error.
    pub target: Target,
    /// The operations (`op`, `path`, `value`, `from`).
    pub patch: Vec<Value>,
}

/// An RFC 7386 merge patch with its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MergePatch {
    /// Resources to patch; a target that matches nothing is an error.
    pub target: Target,
    /// The patch document (an object; `null` values delete).
    pub patch: Value,
}

/// A strategic merge patch with its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectPatch {
    /// Resources to patch; a target that matches nothing is an error. For a strategic merge
    /// patch it may be omitted: the patch's own `kind`/`metadata.name` select the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// The patch document (an object).
    pub patch: Value,
}

fn generator() -> schemars::SchemaGenerator {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
}

/// Removes `null` from the schema of every optional field: schemars admits `null` for an
/// `Option`, but in kiln's YAML an optional field is left out, never written as `null` (and a
/// message like "is not of types null, string" would only confuse).
fn strip_null(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            let null_branch = |v: &Value| {
                v.get("type").is_some_and(|t| t == "null")
                    && v.as_object().is_some_and(|o| o.len() == 1)
            };
            if let Some(Value::Array(branches)) = map.get("anyOf")
                && branches.len() == 2
                && branches.iter().any(null_branch)
            {
                let keep = branches.iter().find(|b| !null_branch(b)).cloned();
                map.remove("anyOf");
                if let Some(Value::Object(inner)) = keep {
                    for (k, v) in inner {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            map.values_mut().for_each(strip_null);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null),
        _ => {}
    }
}

/// The JSON Schema (draft 2020-12) of `platform.yaml`, generated from [`PlatformFile`].
pub fn platform_schema() -> Value {
    let mut s = generator()
        .into_root_schema_for::<PlatformFile>()
        .to_value();
    strip_null(&mut s);
    s
}

/// The JSON Schema (draft 2020-12) of `component.yaml`, generated from [`ComponentFile`].
pub fn component_schema() -> Value {
    let mut s = generator()
        .into_root_schema_for::<ComponentFile>()
        .to_value();
    strip_null(&mut s);
    s
}

/// A schema as committed under `schema/`: pretty JSON with a trailing newline.
pub fn schema_text(schema: &Value) -> String {
    let mut s = serde_json::to_string_pretty(schema).expect("a JSON value always serializes");
    s.push('\n');
    s
}

/// Both schemas as `(file name, text)`, as `kiln schema` prints them and `schema/` holds them.
pub fn schemas() -> Vec<(&'static str, String)> {
    vec![
        ("platform.schema.json", schema_text(&platform_schema())),
        ("component.schema.json", schema_text(&component_schema())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The committed schemas must equal the generated ones; `KILN_BLESS=1 cargo test` rewrites
    /// them.
    #[test]
    fn committed_schemas_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema");
        let bless = std::env::var_os("KILN_BLESS").is_some();
        for (name, text) in schemas() {
            let path = dir.join(name);
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &text).unwrap();
                continue;
            }
            let committed = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                committed == text,
                "schema/{name} drifted from the spec types in src/spec.rs; \
                 regenerate it with `KILN_BLESS=1 cargo test --lib spec` and commit the result"
            );
        }
    }

    #[test]
    fn unknown_fields_are_rejected_by_types_and_schema() {
        let doc = json!({
            "apiVersion": "kiln/v1alpha1", "kind": "Component",
            "metadata": {"name": "x"}, "spec": {"imagez": []}
        });
        assert!(serde_json::from_value::<ComponentFile>(doc.clone()).is_err());
        let v = jsonschema::validator_for(&component_schema()).unwrap();
        let errs: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| e.instance_path().to_string())
            .collect();
        assert_eq!(errs, ["/spec"]);
    }

    #[test]
    fn generators_and_transformers_parse_from_single_key_maps() {
        let doc = json!({
            "apiVersion": "kiln/v1alpha1", "kind": "Component", "metadata": {"name": "x"},
            "spec": {
                "generators": [{"files": ["a.yaml"]}, {"kustomize": "base"},
                               {"configMapGenerator": {"name": "c", "literals": ["A=b"]}}],
                "transformers": [{"labels": {"a": "b"}, "includeSelectors": true},
                                 {"jsonPatch": {"target": {"kind": "Deployment"}, "patch": []},
                                  "environments": ["dev"]}]
            }
        });
        let v = jsonschema::validator_for(&component_schema()).unwrap();
        assert!(
            v.is_valid(&doc),
            "{:?}",
            v.iter_errors(&doc)
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        );
        let c: ComponentFile = serde_json::from_value(doc).unwrap();
        assert_eq!(
            c.spec.generators[1].generator,
            Generator::Kustomize("base".into())
        );
        assert_eq!(c.spec.transformers[0].include_selectors, Some(true));
        assert_eq!(
            c.spec.transformers[1].environments.as_deref(),
            Some(&["dev".to_string()][..])
        );

        // Two transformer keys in one entry violate the schema's oneOf.
        let bad = json!({
            "apiVersion": "kiln/v1alpha1", "kind": "Component", "metadata": {"name": "x"},
            "spec": {"transformers": [{"namePrefix": "a-", "nameSuffix": "-b"}]}
        });
        assert!(!v.is_valid(&bad));
    }

    #[test]
    fn optional_fields_do_not_admit_null() {
        let text = schema_text(&component_schema()) + &schema_text(&platform_schema());
        assert!(!text.contains("\"null\""), "a schema still admits null");
        let v = jsonschema::validator_for(&component_schema()).unwrap();
        let doc = json!({
            "apiVersion": "kiln/v1alpha1", "kind": "Component", "metadata": {"name": "x"},
            "spec": {"images": [{"name": "a", "repository": "r", "tag": 1}]}
        });
        let errs: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert_eq!(errs, ["1 is not of type \"string\""]);
    }

    #[test]
    fn platform_schema_requires_environments_and_projects() {
        let v = jsonschema::validator_for(&platform_schema()).unwrap();
        let doc = json!({"apiVersion": "kiln/v1alpha1", "kind": "Platform", "metadata": {"name": "b"}, "spec": {}});
        let mut errs: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
        errs.sort();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].contains("environments"));
        assert!(errs[1].contains("projects"));
    }

    #[test]
    fn one_of_errors_name_the_keys_to_choose_from() {
        let v = jsonschema::validator_for(&super::component_schema()).unwrap();
        let doc = serde_json::json!({
            "apiVersion": "kiln/v1alpha1", "kind": "Component", "metadata": {"name": "x"},
            "spec": {"transformers": [{"environments": ["dev"]}], "generators": [{"files": "a.yaml"}]}
        });
        let mut got: Vec<(String, String)> = crate::diag::schema_violations(&v, None, &doc)
            .into_iter()
            .map(|v| (v.pointer, v.message))
            .collect();
        got.sort();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].0, "/spec/generators/0/files");
        assert!(got[0].1.contains("not of type"), "{got:?}");
        assert_eq!(got[1].0, "/spec/transformers/0");
        assert!(
            got[1]
                .1
                .starts_with("needs exactly one of `namespace`, `labels`"),
            "{got:?}"
        );
    }
}
