//! kiln's built-in typed model of the Kargo v1.11 and Argo CD v3.5 objects and promotion step
//! configs that kiln emits, so `kiln validate` checks them with no `--schema-dir`.
//!
//! Written from the API types: Kargo v1.11.2 `api/v1alpha1/{project,project_config,
//! warehouse,stage}_types.go` and the step configs in
//! `pkg/x/promotion/runner/builtin/zz_config_types.go`; Argo CD v3.5.1
//! `pkg/apis/application/v1alpha1/{types,app_project_types}.go`. Every struct rejects
//! unknown fields (`kubectl apply --validate=strict`); fields that kiln never writes and
//! whose shape is large (Helm and plugin sources, verification, sync windows…) are accepted
//! as opaque values rather than guessed at. The JSON Schemas come from these types
//! (schemars) and run through the same validator as CRDs, so findings point at the field.
//! With `--schema-dir`, the real CRDs and step schemas win wherever they define a kind.

#![allow(dead_code)] // The types exist for their schemas; nothing deserializes into them.

use schemars::{JsonSchema, schema_for};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

type Map = BTreeMap<String, String>;
type Opaque = Option<Value>;

/// `apiVersion`, `kind`, `metadata` and a typed `spec`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Object<S> {
    api_version: String,
    kind: String,
    metadata: Value,
    spec: S,
}

/// An object with no `spec` (Kargo `Project` since v1.7).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Bare {
    api_version: String,
    kind: String,
    metadata: Value,
    status: Opaque,
}

// --- Kargo ---------------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ProjectConfigSpec {
    promotion_policies: Option<Vec<PromotionPolicy>>,
    webhook_receivers: Option<Vec<Value>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PromotionPolicy {
    /// Deprecated: use `stageSelector`.
    stage: Option<String>,
    stage_selector: Option<Selector>,
    auto_promotion_enabled: Option<bool>,
    auto_rollback: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Selector {
    name: Option<String>,
    match_labels: Option<Map>,
    match_expressions: Option<Vec<Value>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WarehouseSpec {
    shard: Option<String>,
    interval: Option<String>,
    freight_creation_policy: Option<FreightCreationPolicy>,
    freight_creation_criteria: Opaque,
    subscriptions: Vec<Subscription>,
}

#[derive(Deserialize, JsonSchema)]
enum FreightCreationPolicy {
    Automatic,
    Manual,
}

/// Exactly one of `git`, `image`, `chart` (checked by the subscription rules).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Subscription {
    git: Option<GitSubscription>,
    image: Option<ImageSubscription>,
    chart: Opaque,
    subscription: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GitSubscription {
    #[serde(rename = "repoURL")]
    repo_url: String,
    commit_selection_strategy: Option<CommitSelectionStrategy>,
    branch: Option<String>,
    strict_semvers: Option<bool>,
    semver_constraint: Option<String>,
    allow_tags: Option<String>,
    allow_tags_regexes: Option<Vec<String>>,
    ignore_tags: Option<Vec<String>>,
    ignore_tags_regexes: Option<Vec<String>>,
    expression_filter: Option<String>,
    insecure_skip_tls_verify: Option<bool>,
    include_paths: Option<Vec<String>>,
    exclude_paths: Option<Vec<String>>,
    discovery_limit: Option<i64>,
}

#[derive(Deserialize, JsonSchema)]
enum CommitSelectionStrategy {
    Lexical,
    NewestFromBranch,
    NewestTag,
    SemVer,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImageSubscription {
    #[serde(rename = "repoURL")]
    repo_url: String,
    image_selection_strategy: Option<ImageSelectionStrategy>,
    strict_semvers: Option<bool>,
    constraint: Option<String>,
    allow_tags: Option<String>,
    allow_tags_regexes: Option<Vec<String>>,
    ignore_tags: Option<Vec<String>>,
    ignore_tags_regexes: Option<Vec<String>>,
    platform: Option<String>,
    insecure_skip_tls_verify: Option<bool>,
    discovery_limit: Option<i64>,
    cache_by_tag: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
enum ImageSelectionStrategy {
    Digest,
    Lexical,
    NewestBuild,
    SemVer,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StageSpec {
    shard: Option<String>,
    vars: Option<Vec<Var>>,
    requested_freight: Vec<FreightRequest>,
    promotion_template: Option<PromotionTemplate>,
    verification: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Var {
    name: String,
    value: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FreightRequest {
    origin: FreightOrigin,
    sources: FreightSources,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FreightOrigin {
    kind: OriginKind,
    name: String,
}

#[derive(Deserialize, JsonSchema)]
enum OriginKind {
    Warehouse,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FreightSources {
    direct: Option<bool>,
    stages: Option<Vec<String>>,
    required_soak_time: Option<String>,
    availability_strategy: Option<String>,
    auto_promotion_options: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PromotionTemplate {
    spec: PromotionTemplateSpec,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PromotionTemplateSpec {
    vars: Option<Vec<Var>>,
    steps: Vec<PromotionStep>,
}

/// One step; its `config` is checked against the step's own model ([`step_schema`]).
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PromotionStep {
    uses: Option<String>,
    task: Opaque,
    #[serde(rename = "as")]
    alias: Option<String>,
    #[serde(rename = "if")]
    condition: Option<String>,
    continue_on_error: Option<bool>,
    retry: Opaque,
    vars: Option<Vec<Var>>,
    config: Opaque,
}

// --- Kargo step configs ------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GitCloneConfig {
    author: Opaque,
    blobless: Option<bool>,
    checkout: Vec<Checkout>,
    insecure_skip_tls_verify: Option<bool>,
    recurse_submodules: Option<bool>,
    #[serde(rename = "repoURL")]
    repo_url: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Checkout {
    #[serde(rename = "as")]
    alias: Option<String>,
    branch: Option<String>,
    commit: Option<String>,
    create: Option<bool>,
    path: String,
    sparse: Option<Vec<String>>,
    tag: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DeleteConfig {
    path: Option<String>,
    paths: Option<Vec<String>>,
    paths_are_globs: Option<bool>,
    strict: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KustomizeSetImageConfig {
    images: Option<Vec<SetImage>>,
    path: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SetImage {
    digest: Option<String>,
    image: String,
    name: Option<String>,
    new_name: Option<String>,
    tag: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KustomizeBuildConfig {
    out_path: String,
    output_format: Opaque,
    path: String,
    plugin: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GitCommitConfig {
    author: Opaque,
    message: String,
    path: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GitPushConfig {
    force: Option<bool>,
    generate_target_branch: Option<bool>,
    insecure_skip_tls_verify: Option<bool>,
    max_attempts: Option<i64>,
    path: String,
    provider: Option<String>,
    tag: Option<String>,
    target_branch: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ArgoCdUpdateConfig {
    apps: Vec<ArgoCdAppUpdate>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ArgoCdAppUpdate {
    name: Option<String>,
    namespace: Option<String>,
    selector: Opaque,
    sources: Option<Vec<ArgoCdSourceUpdate>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ArgoCdSourceUpdate {
    chart: Option<String>,
    desired_revision: Option<String>,
    helm: Opaque,
    kustomize: Opaque,
    #[serde(rename = "repoURL")]
    repo_url: String,
    update_target_revision: Option<bool>,
}

// --- Argo CD -------------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ApplicationSpec {
    project: String,
    source: Option<ApplicationSource>,
    sources: Option<Vec<ApplicationSource>>,
    destination: Destination,
    sync_policy: Option<SyncPolicy>,
    ignore_differences: Option<Vec<IgnoreDifference>>,
    info: Option<Vec<Value>>,
    revision_history_limit: Option<i64>,
    source_hydrator: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ApplicationSource {
    #[serde(rename = "repoURL")]
    repo_url: String,
    path: Option<String>,
    target_revision: Option<String>,
    chart: Option<String>,
    helm: Opaque,
    kustomize: Opaque,
    directory: Option<Directory>,
    plugin: Opaque,
    #[serde(rename = "ref")]
    reference: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Directory {
    recurse: Option<bool>,
    include: Option<String>,
    exclude: Option<String>,
    jsonnet: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Destination {
    server: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SyncPolicy {
    automated: Option<Automated>,
    sync_options: Option<Vec<String>>,
    retry: Opaque,
    managed_namespace_metadata: Opaque,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Automated {
    enabled: Option<bool>,
    prune: Option<bool>,
    self_heal: Option<bool>,
    allow_empty: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct IgnoreDifference {
    group: Option<String>,
    kind: String,
    name: Option<String>,
    namespace: Option<String>,
    json_pointers: Option<Vec<String>>,
    jq_path_expressions: Option<Vec<String>>,
    managed_fields_managers: Option<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AppProjectSpec {
    description: Option<String>,
    source_repos: Option<Vec<String>>,
    destinations: Option<Vec<Destination>>,
    cluster_resource_whitelist: Option<Vec<GroupKind>>,
    cluster_resource_blacklist: Option<Vec<GroupKind>>,
    namespace_resource_whitelist: Option<Vec<GroupKind>>,
    namespace_resource_blacklist: Option<Vec<GroupKind>>,
    roles: Option<Vec<Value>>,
    sync_windows: Option<Vec<Value>>,
    orphaned_resources: Opaque,
    signature_keys: Option<Vec<Value>>,
    source_namespaces: Option<Vec<String>>,
    permit_only_project_scoped_clusters: Option<bool>,
    destination_service_accounts: Option<Vec<Value>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GroupKind {
    group: String,
    kind: String,
}

/// The model's JSON Schema of an object of `group`/`kind`, or `None` for a kind it does not
/// model.
pub fn object_schema(group: &str, kind: &str) -> Option<Value> {
    let schema = match (group, kind) {
        (super::rules::KARGO_GROUP, "Project") => schema_for!(Bare),
        (super::rules::KARGO_GROUP, "ProjectConfig") => schema_for!(Object<ProjectConfigSpec>),
        (super::rules::KARGO_GROUP, "Warehouse") => schema_for!(Object<WarehouseSpec>),
        (super::rules::KARGO_GROUP, "Stage") => schema_for!(Object<StageSpec>),
        (super::rules::ARGOCD_GROUP, "Application") => schema_for!(Object<ApplicationSpec>),
        (super::rules::ARGOCD_GROUP, "AppProject") => schema_for!(Object<AppProjectSpec>),
        _ => return None,
    };
    serde_json::to_value(schema).ok().map(required_when_present)
}

/// Every kind of Kargo's API group: the CRDs of v1.11.2 (`charts/kargo/resources/crds/`),
/// and `PromotionRequest` and `Target` of its main branch (v1.12 development), so that a
/// newer Kargo's objects are not refused as typos.
pub const KARGO_KINDS: &[&str] = &[
    "ClusterConfig",
    "ClusterPromotionTask",
    "Freight",
    "Project",
    "ProjectConfig",
    "Promotion",
    "PromotionRequest",
    "PromotionTask",
    "Stage",
    "Target",
    "Warehouse",
];

/// Argo CD v3.5's kinds (`manifests/crds/`). Its API group `argoproj.io` is shared with Argo
/// Rollouts, Workflows and Events, whose kinds kiln does not list.
pub const ARGOCD_KINDS: &[&str] = &["AppProject", "Application", "ApplicationSet"];

/// A `kind` its API group does not have: what `kubectl apply` refuses outright.
pub struct UnknownKind {
    /// The group's kind the name most likely meant (`Stage` for `Stgae`).
    pub meant: Option<&'static str>,
    /// The lower-case message and the help naming the fix.
    pub message: String,
    pub help: String,
}

/// The object's `kind` when Kargo's or Argo CD's API group has no such kind, else `None`.
/// In Kargo's group any other kind is one; in `argoproj.io` (shared with the other Argo
/// projects) only a near miss of an Argo CD kind, within "did you mean" reach, is taken
/// for a typo: any other kind may be another Argo project's and stays unchecked.
pub fn unknown_kind(group: &str, kind: &str) -> Option<UnknownKind> {
    let (known, whose) = match group {
        super::rules::KARGO_GROUP => (KARGO_KINDS, "Kargo"),
        super::rules::ARGOCD_GROUP => (ARGOCD_KINDS, "Argo CD"),
        _ => return None,
    };
    if known.contains(&kind) {
        return None;
    }
    let meant = kiln_base::diag::closest(kind, known.iter().copied(), 2);
    if meant.is_none() && group == super::rules::ARGOCD_GROUP {
        return None;
    }
    let kinds = known.join(", ");
    Some(UnknownKind {
        meant,
        message: format!("unknown kind `{kind}` in API group `{group}`"),
        help: match meant {
            Some(m) => format!("did you mean `{m}`?"),
            None => format!("{whose}'s kinds are {kinds}"),
        },
    })
}

/// The model's compiled `config` validator of step `uses` (see [`step_schema`]).
pub fn step_validator(uses: &str) -> Option<&'static jsonschema::Validator> {
    static STEPS: std::sync::LazyLock<BTreeMap<&'static str, jsonschema::Validator>> =
        std::sync::LazyLock::new(|| {
            STEP_NAMES
                .iter()
                .filter_map(|n| {
                    let schema = step_schema(n)?;
                    let v = jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft202012)
                        .build(&schema)
                        .ok()?;
                    Some((*n, v))
                })
                .collect()
        });
    STEPS.get(uses)
}

/// Kargo v1.11.2's built-in promotion steps (`pkg/promotion/runner/builtin/`, one
/// `<name>-config.json` schema each in its `schemas/`): a `uses` outside this list fails the
/// Promotion at run time.
pub const KARGO_STEPS: [&str; 34] = [
    "argocd-update",
    "argocd-wait",
    "compose-output",
    "copy",
    "delete",
    "fail",
    "file-write",
    "git-clear",
    "git-clone",
    "git-commit",
    "git-merge-pr",
    "git-open-pr",
    "git-push",
    "git-tag",
    "git-wait-for-pr",
    "github-push",
    "helm-template",
    "helm-update-chart",
    "http",
    "http-download",
    "json-parse",
    "json-update",
    "kustomize-build",
    "kustomize-set-image",
    "oci-download",
    "oci-push",
    "set-freight-alias",
    "set-metadata",
    "toml-parse",
    "toml-update",
    "untar",
    "yaml-merge",
    "yaml-parse",
    "yaml-update",
];

/// The steps the model knows: those kiln emits.
pub const STEP_NAMES: [&str; 7] = [
    "git-clone",
    "delete",
    "kustomize-set-image",
    "kustomize-build",
    "git-commit",
    "git-push",
    "argocd-update",
];

/// The model's JSON Schema of the `config` of step `uses`, or `None` for a step it does not
/// model (it is then not checked).
pub fn step_schema(uses: &str) -> Option<Value> {
    let schema = match uses {
        "git-clone" => schema_for!(GitCloneConfig),
        "delete" => schema_for!(DeleteConfig),
        "kustomize-set-image" => schema_for!(KustomizeSetImageConfig),
        "kustomize-build" => schema_for!(KustomizeBuildConfig),
        "git-commit" => schema_for!(GitCommitConfig),
        "git-push" => schema_for!(GitPushConfig),
        "argocd-update" => schema_for!(ArgoCdUpdateConfig),
        _ => return None,
    };
    serde_json::to_value(schema).ok().map(required_when_present)
}

/// Drops the `null` that schemars allows for every `Option` field: an absent field is
/// optional, but an explicit `null` is no valid value for these APIs, and a schema without
/// the `anyOf` alternatives gives findings that name the field and the expected type.
fn required_when_present(v: Value) -> Value {
    match v {
        Value::Object(mut m) => {
            if let Some(Value::Array(alts)) = m.get("anyOf") {
                let rest: Vec<Value> = alts
                    .iter()
                    .filter(|a| a.get("type") != Some(&Value::from("null")))
                    .cloned()
                    .collect();
                if rest.len() == 1 && rest.len() < alts.len() {
                    m.remove("anyOf");
                    if let Value::Object(inner) = required_when_present(rest[0].clone()) {
                        m.extend(inner);
                    }
                }
            }
            if let Some(Value::Array(types)) = m.get("type") {
                let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if rest.len() == 1 {
                    m.insert("type".into(), rest[0].clone());
                }
            }
            Value::Object(
                m.into_iter()
                    .map(|(k, v)| (k, required_when_present(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(required_when_present).collect()),
        other => other,
    }
}
