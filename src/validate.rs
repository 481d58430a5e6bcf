//! Stage 2, validate: [`LoadedPlatform`] → [`Platform`], the typed model later stages use.
//!
//! The JSON Schemas were checked by `load`; this stage checks what a schema cannot: names are
//! unique (clusters, environments, projects, component instances in a project), every name
//! used is defined (`environments[].cluster`, `environments[].from`, `kargo.promotion` keys,
//! per-instance `environments` keys, transformer `environments`), the promotion graph has no
//! cycle, each component's parameter schema compiles, and every parameter value set for a
//! component is declared by it.
//!
//! Invariant: every error is collected and reported together; a [`Platform`] exists only when
//! there are none. Defaults are filled in here (namespace pattern, Argo CD namespace and
//! project, source branch and rendered path), so later stages never see an `Option` that has a
//! documented default.

use crate::diag::{Errors, Loc, SourceId, Sources, help_for_name};
use crate::load::{LoadedComponent, LoadedPlatform};
use crate::resource::Resource;
use crate::spec::{self, Parameters};
use indexmap::IndexMap;
use kiln_base::pointer::escape;
use miette::{Diagnostic, NamedSource, SourceSpan};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use thiserror::Error;

/// References an output pattern (`branchPattern`, `pathPattern`) may use.
pub const PATTERN_REFERENCES: &[&str] = &[
    "env.name",
    "env.tier",
    "env.cluster",
    "project.name",
    "platform.name",
];

/// The default namespace pattern of an environment.
pub const DEFAULT_NAMESPACE: &str = "${project.name}-${env.name}";

/// The validated platform.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Platform {
    /// `metadata.name`.
    pub name: String,
    /// Where the platform and its rendered tree live.
    pub source: Source,
    /// Platform-level parameters (layer 2).
    pub parameters: Parameters,
    /// Clusters, in declared order.
    pub clusters: Vec<spec::Cluster>,
    /// Environments, in declared order; `from` names are known and acyclic.
    pub environments: Vec<Environment>,
    /// Argo CD settings with defaults filled in.
    pub argocd: ArgoCd,
    /// Kargo settings; `promotion` keys are known environments.
    pub kargo: spec::Kargo,
    /// `spec.secrets`: whether the render may emit Secrets.
    #[serde(skip_serializing_if = "is_warn")]
    pub secrets: spec::SecretPolicy,
    /// `spec.validation`: how rendered objects are validated (`crate::conform`).
    pub validation: spec::Validation,
    /// Projects, in declared order.
    pub projects: Vec<Project>,
    /// Each distinct component, in the order first referenced.
    #[serde(serialize_with = "serialize_arcs")]
    pub components: Vec<Arc<Component>>,
    /// Repository root (canonical): nothing outside it is read.
    #[serde(skip)]
    pub root: PathBuf,
    /// Platform directory (canonical).
    #[serde(skip)]
    pub dir: PathBuf,
    /// Every source text, for diagnostics of later stages.
    #[serde(skip)]
    pub sources: Arc<Sources>,
    /// `platform.yaml` in [`Platform::sources`].
    #[serde(skip)]
    pub file: SourceId,
}

/// The platform repository (`spec.source`) with defaults.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// `repoURL`, when given.
    #[serde(rename = "repoURL", skip_serializing_if = "Option::is_none")]
    pub repo_url: Option<String>,
    /// Default `main`.
    pub branch: String,
    /// Default `deploy`.
    pub rendered_path: String,
}

/// Argo CD settings with defaults.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArgoCd {
    /// Default `argocd`.
    pub namespace: String,
    /// Default `default`.
    pub project: String,
}

/// A validated environment.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    pub name: String,
    pub tier: String,
    /// A cluster name from [`Platform::clusters`].
    pub cluster: String,
    /// Namespace pattern (references unresolved); default [`DEFAULT_NAMESPACE`].
    pub namespace: String,
    /// Upstream environments (known names, no cycle).
    pub from: Vec<String>,
    /// Environment-level parameters (layer 3).
    pub parameters: Parameters,
    /// `/spec/environments/<i>` in `platform.yaml`.
    #[serde(skip)]
    pub loc: Loc,
}

/// A validated project.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub name: String,
    /// Project-level parameters (layer 4).
    pub parameters: Parameters,
    /// The write repository for Kargo promotions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<spec::ProjectOutput>,
    /// The unit of a Kargo promotion.
    pub promotion: spec::PromotionUnit,
    /// Extra metadata of the project's Kargo Namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_metadata: Option<spec::NamespaceMetadata>,
    /// Component instances, in declared order; names unique in the project.
    pub components: Vec<ComponentInstance>,
    /// `/spec/projects/<i>` in `platform.yaml`.
    #[serde(skip)]
    pub loc: Loc,
}

/// One component used in a project.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentInstance {
    /// Instance name (default: the component's name); unique in the project.
    pub name: String,
    /// The component's `metadata.name`.
    #[serde(rename = "component")]
    pub component_name: String,
    /// The component directory relative to the repository root.
    pub path: String,
    /// Instance parameters (layer 5).
    pub parameters: Parameters,
    /// Per-environment parameters (layer 6), by environment name (all known).
    pub environments: IndexMap<String, Parameters>,
    /// The environments it is deployed to (`deployTo`); `None`: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_to: Option<spec::When>,
    /// The component.
    #[serde(skip)]
    pub component: Arc<Component>,
    /// Where the instance's source follows another commit in some environments
    /// (`source.ref: ${env.tier}`): the component as that commit has it, by environment.
    #[serde(skip)]
    pub per_environment: BTreeMap<String, Arc<Component>>,
    /// `/spec/projects/<p>/components/<i>` in `platform.yaml`.
    #[serde(skip)]
    pub loc: Loc,
}

impl ComponentInstance {
    /// The component rendered in environment `env` (its own commit's, see
    /// [`ComponentInstance::per_environment`]).
    pub fn component_in(&self, env: &str) -> &Arc<Component> {
        self.per_environment.get(env).unwrap_or(&self.component)
    }

    /// Whether the instance is deployed to `env` (its `deployTo` selects it).
    pub fn deployed_in(&self, env: &Environment) -> bool {
        self.deploy_to
            .as_ref()
            .is_none_or(|w| w.admits(&env.name, &env.tier, &env.cluster))
    }
}

/// A validated component.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// `metadata.name`.
    pub name: String,
    /// Directory relative to the repository root.
    pub path: String,
    /// The directory as errors name it and the files in it ([`crate::load::shown_join`]):
    /// `path` for a local component, `<url>@<ref>:<path>` for a fetched one.
    #[serde(skip)]
    pub shown_dir: String,
    /// Images (base tags; references unresolved).
    pub images: Vec<spec::Image>,
    /// The parameter JSON Schema, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter_schema: Option<Value>,
    /// Top-level property names the schema declares; `None` when it declares none (every
    /// parameter is accepted).
    #[serde(skip)]
    pub declared: Option<BTreeSet<String>>,
    /// Defaults of the schema's top-level properties (layer 1).
    pub defaults: Parameters,
    /// The compiled parameter schema.
    #[serde(skip)]
    pub validator: Option<Arc<jsonschema::Validator>>,
    /// The spec (references unresolved).
    #[serde(skip)]
    pub spec: spec::ComponentSpec,
    /// `component.yaml`'s `spec` as JSON, where `evaluate` resolves references.
    #[serde(skip)]
    pub raw_spec: Value,
    /// Directory (canonical).
    #[serde(skip)]
    pub dir: PathBuf,
    /// `component.yaml` in the platform's sources.
    #[serde(skip)]
    pub file: SourceId,
    /// Resources of each `files:` generator, by generator index.
    #[serde(skip)]
    pub files: BTreeMap<usize, Vec<Resource>>,
    /// Generator input files (`configMapGenerator` files/envs), by path as written.
    #[serde(skip)]
    pub assets: BTreeMap<String, String>,
}

impl Component {
    /// Whether the component accepts a parameter named `name`.
    pub fn declares(&self, name: &str) -> bool {
        self.declared.as_ref().is_none_or(|d| d.contains(name))
    }
}

impl Platform {
    /// The environments' names, in the spec's order.
    pub fn environment_names(&self) -> Vec<String> {
        self.environments.iter().map(|e| e.name.clone()).collect()
    }

    /// The environment named `name`.
    pub fn environment(&self, name: &str) -> Option<&Environment> {
        self.environments.iter().find(|e| e.name == name)
    }

    /// The cluster named `name`.
    pub fn cluster(&self, name: &str) -> Option<&spec::Cluster> {
        self.clusters.iter().find(|c| c.name == name)
    }

    /// The project named `name`.
    pub fn project(&self, name: &str) -> Option<&Project> {
        self.projects.iter().find(|p| p.name == name)
    }

    /// Environments in promotion order: every environment after all of its `from`
    /// environments, ties in declared order.
    pub fn environments_in_promotion_order(&self) -> Vec<&Environment> {
        let mut done: BTreeSet<&str> = BTreeSet::new();
        let mut out = Vec::new();
        while out.len() < self.environments.len() {
            let before = out.len();
            for e in &self.environments {
                if !done.contains(e.name.as_str())
                    && e.from.iter().all(|f| done.contains(f.as_str()))
                {
                    done.insert(&e.name);
                    out.push(e);
                }
            }
            // Validation rules out cycles; this guard only keeps a bug from looping forever.
            if out.len() == before {
                break;
            }
        }
        out
    }
}

/// A semantic error in the spec. Codes `kiln::validate::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum ValidateError {
    /// A repository or cluster URL in the spec carries a password or token. It would be copied into every
    /// Warehouse, Stage and Application, committed, and printed; the source line is therefore
    /// not shown either.
    #[error("{at}: `{field}` carries credentials: {url}")]
    #[diagnostic(
        code(kiln::validate::credentials_in_url),
        help(
            "remove the user and token from the URL; kiln reads credentials from KILN_GIT_USERNAME/KILN_GIT_PASSWORD or a git credential helper, and Kargo from its repository credentials (a Secret labelled kargo.akuity.io/cred-type: git); a cluster's credentials belong in Argo CD's cluster Secret (labelled argocd.argoproj.io/secret-type: cluster)"
        )
    )]
    CredentialsInUrl {
        field: String,
        /// The URL with the secret redacted.
        url: String,
        at: String,
    },

    /// Two entries of one list share a name.
    #[error("{at}: duplicate {what} `{name}`")]
    #[diagnostic(code(kiln::validate::duplicate_name))]
    DuplicateName {
        what: &'static str,
        name: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("second definition")]
        span: Option<SourceSpan>,
    },

    /// A name that should be an environment is not one.
    #[error("{at}: unknown environment `{name}` in {context}")]
    #[diagnostic(code(kiln::validate::unknown_environment))]
    UnknownEnvironment {
        name: String,
        context: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not an environment")]
        span: Option<SourceSpan>,
    },

    /// A `when:` selector names an environment, tier or cluster the platform lacks.
    #[error("{at}: unknown {what} `{name}` in {context}")]
    #[diagnostic(code(kiln::validate::unknown_selection))]
    UnknownSelection {
        what: &'static str,
        name: String,
        context: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not a {what} of the platform")]
        span: Option<SourceSpan>,
    },

    /// A `deployTo` that selects no environment.
    #[error("{at}: `deployTo` of {scope} selects no environment")]
    #[diagnostic(
        code(kiln::validate::deploy_to_selects_nothing),
        help(
            "every list given must name the environment (by name, tier or cluster); remove the instance instead if it runs nowhere"
        )
    )]
    DeployToSelectsNothing {
        scope: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("selects nothing")]
        span: Option<SourceSpan>,
    },

    /// Per-environment parameters for an environment the instance is not deployed to.
    #[error("{at}: {scope} is not deployed to environment `{env}`, but has parameters for it")]
    #[diagnostic(
        code(kiln::validate::parameters_for_undeployed_environment),
        help(
            "`deployTo` leaves `{env}` out: remove these parameters, or add `{env}` to `deployTo`"
        )
    )]
    ParametersForUndeployedEnvironment {
        scope: String,
        env: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not deployed here")]
        span: Option<SourceSpan>,
    },

    /// In project mode one Stage moves every component: they must run in the same
    /// environments.
    #[error(
        "{at}: project `{project}` promotes as one unit, but {first} and {second} are deployed to different environments"
    )]
    #[diagnostic(
        code(kiln::validate::project_deploy_mismatch),
        help(
            "with `promotion: Project` every component is deployed to the same environments ({first}: {first_envs}; {second}: {second_envs}); give them the same `deployTo`, or promote per component"
        )
    )]
    ProjectDeployMismatch {
        project: String,
        first: String,
        first_envs: String,
        second: String,
        second_envs: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("differs from the first component")]
        span: Option<SourceSpan>,
    },

    /// A cluster's `kubeVersion` is one kiln has no API schemas for.
    #[error("{at}: no Kubernetes API schemas for `kubeVersion: {version}`")]
    #[diagnostic(code(kiln::validate::unknown_kube_version))]
    UnknownKubeVersion {
        version: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not a version kiln validates")]
        span: Option<SourceSpan>,
    },

    /// `spec.validation.warn` names a rule the validation does not have.
    #[error("{at}: `spec.validation.warn` names no rule `{rule}`")]
    #[diagnostic(code(kiln::validate::unknown_rule))]
    UnknownRule {
        rule: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not a rule")]
        span: Option<SourceSpan>,
    },

    /// An environment names a cluster that is not in `spec.clusters`.
    #[error("{at}: unknown cluster `{name}` in environment `{environment}`")]
    #[diagnostic(code(kiln::validate::unknown_cluster))]
    UnknownCluster {
        name: String,
        environment: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not a cluster")]
        span: Option<SourceSpan>,
    },

    /// The promotion graph (`environments[].from`) has a cycle.
    #[error("{at}: environments form a promotion cycle: {cycle}")]
    #[diagnostic(
        code(kiln::validate::environment_cycle),
        help(
            "`from` names upstream environments; freight must flow one way, so remove one edge of the cycle"
        )
    )]
    EnvironmentCycle {
        cycle: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("closes the cycle")]
        span: Option<SourceSpan>,
    },

    /// A parameter is set that no component in scope declares.
    #[error("{at}: unknown parameter `{name}` for {scope}")]
    #[diagnostic(code(kiln::validate::unknown_parameter))]
    UnknownParameter {
        name: String,
        scope: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not declared")]
        span: Option<SourceSpan>,
    },

    /// A component's `spec.parameters` is not a valid JSON Schema.
    #[error("{at}: the parameter schema of component `{component}` is invalid: {message}")]
    #[diagnostic(
        code(kiln::validate::invalid_parameter_schema),
        help("`spec.parameters` must be a JSON Schema (draft 2020-12) describing an object")
    )]
    InvalidParameterSchema {
        component: String,
        message: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("invalid schema")]
        span: Option<SourceSpan>,
    },

    /// A pattern (`output.branchPattern`, `output.pathPattern`) uses a reference that is not
    /// available there.
    #[error("{at}: unknown reference `${{{reference}}}` in {field}")]
    #[diagnostic(
        code(kiln::validate::unknown_reference),
        help(
            "{field} may use ${{env.name}}, ${{env.tier}}, ${{env.cluster}}, ${{project.name}} and ${{platform.name}}"
        )
    )]
    UnknownReference {
        reference: String,
        field: &'static str,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("unknown reference")]
        span: Option<SourceSpan>,
    },

    /// An image tag that is not an OCI tag, or a digest that is not `algorithm:encoded`: it
    /// would be rendered into every container as a reference no registry serves.
    #[error("{at}: `{field}`: {message}")]
    #[diagnostic(code(kiln::validate::invalid_image))]
    InvalidImage {
        field: String,
        message: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("here")]
        span: Option<SourceSpan>,
    },

    /// A transformer entry mixes options that do not go together.
    #[error("{at}: {message}")]
    #[diagnostic(code(kiln::validate::invalid_transformer))]
    InvalidTransformer {
        message: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("here")]
        span: Option<SourceSpan>,
    },
}

struct Checker<'a> {
    sources: &'a Sources,
    errors: Vec<ValidateError>,
    /// The parameters some instance's `source.ref` uses (`${params.NAME}`): an undeclared one
    /// is often given for the ref alone, and its error says how.
    ref_params: BTreeSet<String>,
}

macro_rules! located {
    ($self:ident, $loc:expr, $variant:ident { $($field:ident : $value:expr),* $(,)? }) => {{
        let sn = $self.sources.snippet(&$loc);
        $self.errors.push(ValidateError::$variant { $($field: $value,)* at: sn.at, src: sn.src, span: sn.span });
    }};
}

/// Checks the loaded platform and builds the typed model.
///
/// Errors: every [`ValidateError`] found, together.
pub fn validate(loaded: LoadedPlatform) -> Result<Platform, Errors<ValidateError>> {
    let LoadedPlatform {
        root,
        dir,
        sources,
        file,
        spec: pf,
        components: loaded_components,
        instances,
        environment_components,
        ..
    } = loaded;
    let mut ck = Checker {
        sources: &sources,
        errors: Vec::new(),
        ref_params: BTreeSet::new(),
    };
    let s = pf.spec;
    ck.ref_params = source_ref_params(&s);
    let at = |p: String| Loc::new(file, p);
    let platform_refs = platform_param_refs(&s);

    // Components first: instances need their names and declared parameters.
    // Each on its own (compiling a parameter schema is most of the work: 10,000 of them
    // took a core for half a second), their errors in the order they were loaded.
    let checked: Vec<(Component, Vec<ValidateError>)> = {
        use rayon::prelude::*;
        loaded_components
            .into_par_iter()
            .map(|c| {
                let mut one = Checker {
                    sources: &sources,
                    errors: Vec::new(),
                    ref_params: BTreeSet::new(),
                };
                (one.component(c), one.errors)
            })
            .collect()
    };
    let mut components: Vec<Arc<Component>> = Vec::with_capacity(checked.len());
    for (c, mut errors) in checked {
        components.push(Arc::new(c));
        ck.errors.append(&mut errors);
    }
    let env_names: Vec<&str> = s.environments.iter().map(|e| e.name.as_str()).collect();

    ck.unique("cluster", s.clusters.iter().map(|c| c.name.as_str()), |i| {
        at(format!("/spec/clusters/{i}/name"))
    });
    ck.unique("environment", env_names.iter().copied(), |i| {
        at(format!("/spec/environments/{i}/name"))
    });
    ck.unique("project", s.projects.iter().map(|p| p.name.as_str()), |i| {
        at(format!("/spec/projects/{i}/name"))
    });

    // What the Kubernetes validation is told to use, checked at the field (issue 36, item 7).
    for (i, c) in s.clusters.iter().enumerate() {
        if let Some(v) = &c.kube_version
            && kiln_k8s::builtin::normalize(v).is_none()
        {
            let versions = kiln_k8s::builtin::VERSIONS.join(", ");
            located!(
                ck,
                at(format!("/spec/clusters/{i}/kubeVersion")),
                UnknownKubeVersion {
                    version: v.clone(),
                    help: format!("kiln has the API schemas of Kubernetes {versions}"),
                }
            );
        }
    }
    let rules = kiln_k8s::Code::ALL.map(|c| c.as_str());
    for (i, w) in s.validation.warn.iter().enumerate() {
        if kiln_k8s::Code::parse(w).is_none() {
            located!(
                ck,
                at(format!("/spec/validation/warn/{i}")),
                UnknownRule {
                    rule: w.clone(),
                    help: help_for_name(w, "rule", rules.iter().copied()),
                }
            );
        }
    }

    // Credentials never belong in a spec URL: refuse them before any is copied into output.
    let urls = s
        .source
        .iter()
        .map(|r| {
            (
                "spec.source.repoURL".to_string(),
                "/spec/source/repoURL".to_string(),
                r.repo_url.as_str(),
            )
        })
        .chain(s.projects.iter().enumerate().filter_map(|(i, p)| {
            let url = p.output.as_ref()?.repo_url.as_str();
            Some((
                format!("spec.projects[{i}].output.repoURL"),
                format!("/spec/projects/{i}/output/repoURL"),
                url,
            ))
        }))
        // Every Application's `destination.server`: as public as the repository URLs.
        .chain(s.clusters.iter().enumerate().map(|(i, c)| {
            (
                format!("spec.clusters[{i}].server"),
                format!("/spec/clusters/{i}/server"),
                c.server.as_str(),
            )
        }));
    for (field, pointer, url) in urls {
        if kiln_base::url::has_credentials(url) {
            let at = ck.sources.snippet(&Loc::new(file, pointer)).at;
            ck.errors.push(ValidateError::CredentialsInUrl {
                field,
                url: kiln_base::url::redact(url),
                at,
            });
        }
    }

    let cluster_names: Vec<&str> = s.clusters.iter().map(|c| c.name.as_str()).collect();
    for (i, e) in s.environments.iter().enumerate() {
        if !cluster_names.contains(&e.cluster.as_str()) {
            located!(
                ck,
                at(format!("/spec/environments/{i}/cluster")),
                UnknownCluster {
                    name: e.cluster.clone(),
                    environment: e.name.clone(),
                    help: help_for_name(&e.cluster, "cluster", cluster_names.iter().copied()),
                }
            );
        }
        for (k, f) in e.from.iter().enumerate() {
            ck.known_env(
                f,
                &env_names,
                at(format!("/spec/environments/{i}/from/{k}")),
                || format!("`from` of environment `{}`", e.name),
            );
        }
    }
    ck.cycles(&s.environments, file);
    for (p, project) in s.projects.iter().enumerate() {
        let Some(out) = &project.output else { continue };
        let patterns = [
            ("branchPattern", &out.branch_pattern),
            ("pathPattern", &out.path_pattern),
        ];
        for (field, pattern) in patterns {
            let Some(pattern) = pattern else { continue };
            for reference in kiln_base::reference::names(pattern) {
                if !PATTERN_REFERENCES.contains(&reference.as_str()) {
                    located!(
                        ck,
                        at(format!("/spec/projects/{p}/output/{field}")),
                        UnknownReference {
                            reference: reference,
                            field: field,
                        }
                    );
                }
            }
        }
    }
    if let Some(k) = &s.kargo {
        for name in k.promotion.keys() {
            let loc = at(format!("/spec/kargo/promotion/{}", escape(name))).at_key();
            ck.known_env(name, &env_names, loc, || "`kargo.promotion`".to_string());
        }
    }
    let tiers: Vec<&str> = s.environments.iter().map(|e| e.tier.as_str()).collect();
    let clusters: Vec<&str> = s.environments.iter().map(|e| e.cluster.as_str()).collect();
    let vocabulary = [
        ("environments", "environment", env_names.as_slice()),
        ("tiers", "tier", tiers.as_slice()),
        ("clusters", "cluster", clusters.as_slice()),
    ];
    for c in &components {
        for (t, tr) in c.spec.transformers.iter().enumerate() {
            for (k, name) in tr.environments.iter().flatten().enumerate() {
                let loc = Loc::new(c.file, format!("/spec/transformers/{t}/environments/{k}"));
                ck.known_env(name, &env_names, loc, || {
                    format!("transformer {t} of component `{}`", c.name)
                });
            }
            if let Some(when) = &tr.when {
                ck.known_selection(
                    when,
                    &vocabulary,
                    &Loc::new(c.file, format!("/spec/transformers/{t}/when")),
                    &|| format!("transformer {t} of component `{}`", c.name),
                );
            }
        }
        for (g, entry) in c.spec.generators.iter().enumerate() {
            let gloc = format!("/spec/generators/{g}");
            if let Some(when) = &entry.when {
                ck.known_selection(
                    when,
                    &vocabulary,
                    &Loc::new(c.file, format!("{gloc}/when")),
                    &|| format!("generator {g} of component `{}`", c.name),
                );
            }
            let paths: Vec<(String, &spec::PathEntry)> = match &entry.generator {
                spec::Generator::Files(list) => list
                    .iter()
                    .enumerate()
                    .map(|(k, e)| (format!("{gloc}/files/{k}"), e))
                    .collect(),
                spec::Generator::Helm(h) => h
                    .values_files
                    .iter()
                    .enumerate()
                    .map(|(k, e)| (format!("{gloc}/helm/valuesFiles/{k}"), e))
                    .collect(),
                _ => Vec::new(),
            };
            for (pointer, e) in paths {
                if let Some(when) = e.when() {
                    ck.known_selection(
                        when,
                        &vocabulary,
                        &Loc::new(c.file, format!("{pointer}/when")),
                        &|| format!("generator {g} of component `{}`", c.name),
                    );
                }
            }
        }
    }

    let environments: Vec<Environment> = s
        .environments
        .iter()
        .enumerate()
        .map(|(i, e)| Environment {
            name: e.name.clone(),
            tier: e.tier.clone(),
            cluster: e.cluster.clone(),
            namespace: e
                .namespace
                .clone()
                .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string()),
            from: e.from.clone(),
            parameters: e.parameters.clone(),
            loc: at(format!("/spec/environments/{i}")),
        })
        .collect();

    let mut projects = Vec::new();
    for (p, (project, ids)) in s.projects.iter().zip(&instances).enumerate() {
        // `load` skips instances whose component failed; then it reported errors and
        // `validate` never runs, so `ids` lines up with `project.components` here.
        let mut instances = Vec::new();
        let mut first_deployed: Option<(String, Vec<&str>)> = None;
        for (i, (inst, &cid)) in project.components.iter().zip(ids).enumerate() {
            let component = components[cid].clone();
            let iloc = at(format!("/spec/projects/{p}/components/{i}"));
            let name = inst.name.clone().unwrap_or_else(|| component.name.clone());
            let scope = format!("component `{name}` in project `{}`", project.name);
            ck.declared(
                &component,
                &inst.parameters,
                &iloc.join("parameters"),
                &scope,
            );
            for (env, over) in &inst.environments {
                let eloc = iloc.join("environments").join(env);
                ck.known_env(env, &env_names, eloc.clone().at_key(), || scope.clone());
                ck.declared(
                    &component,
                    &over.parameters,
                    &eloc.join("parameters"),
                    &scope,
                );
            }
            let deployed: Vec<&str> = s
                .environments
                .iter()
                .filter(|e| {
                    inst.deploy_to
                        .as_ref()
                        .is_none_or(|w| w.admits(&e.name, &e.tier, &e.cluster))
                })
                .map(|e| e.name.as_str())
                .collect();
            if let Some(when) = &inst.deploy_to {
                let dloc = iloc.join("deployTo");
                let errors_before = ck.errors.len();
                ck.known_selection(when, &vocabulary, &dloc, &|| scope.clone());
                if ck.errors.len() == errors_before && deployed.is_empty() {
                    located!(
                        ck,
                        dloc,
                        DeployToSelectsNothing {
                            scope: scope.clone()
                        }
                    );
                }
                for env in inst.environments.keys() {
                    if env_names.contains(&env.as_str()) && !deployed.contains(&env.as_str()) {
                        let eloc = iloc.join("environments").join(env).at_key();
                        located!(
                            ck,
                            eloc,
                            ParametersForUndeployedEnvironment {
                                scope: scope.clone(),
                                env: env.clone(),
                            }
                        );
                    }
                }
            }
            if project.promotion == spec::PromotionUnit::Project
                && let Some((first, first_deployed)) = &first_deployed
                && *first_deployed != deployed
            {
                located!(
                    ck,
                    iloc.join("deployTo"),
                    ProjectDeployMismatch {
                        project: project.name.clone(),
                        first: format!("`{first}`"),
                        first_envs: first_deployed.join(", "),
                        second: format!("`{name}`"),
                        second_envs: deployed.join(", "),
                    }
                );
            }
            if first_deployed.is_none() {
                first_deployed = Some((name.clone(), deployed.clone()));
            }
            instances.push(ComponentInstance {
                deploy_to: inst.deploy_to.clone(),
                name,
                component_name: component.name.clone(),
                path: component.path.clone(),
                parameters: inst.parameters.clone(),
                environments: inst
                    .environments
                    .iter()
                    .map(|(k, v)| (k.clone(), v.parameters.clone()))
                    .collect(),
                component,
                per_environment: environment_components
                    .get(&(p, i))
                    .into_iter()
                    .flatten()
                    .map(|(env, &c)| (env.clone(), components[c].clone()))
                    .collect(),
                loc: iloc,
            });
        }
        ck.unique(
            "component instance",
            instances.iter().map(|c| c.name.as_str()),
            |i| {
                let base = format!("/spec/projects/{p}/components/{i}");
                // Point at `name` when given, else at the `path` that implied it.
                if project.components[i].name.is_some() {
                    at(format!("{base}/name"))
                } else {
                    at(format!("{base}/path"))
                }
            },
        );
        // Project parameters must be declared by one of the project's components.
        let project_scope: Vec<&Component> =
            instances.iter().map(|c| c.component.as_ref()).collect();
        let project_consumed = consumed(&project_scope, &platform_refs);
        ck.shared(
            &project.parameters,
            &project_scope,
            &project_consumed,
            (
                &at(format!("/spec/projects/{p}/parameters")),
                &format!("any component of project `{}`", project.name),
            ),
        );
        projects.push(Project {
            name: project.name.clone(),
            parameters: project.parameters.clone(),
            output: project.output.clone(),
            promotion: project.promotion,
            namespace_metadata: project.namespace_metadata.clone(),
            components: instances,
            loc: at(format!("/spec/projects/{p}")),
        });
    }
    let all: Vec<&Component> = components.iter().map(Arc::as_ref).collect();
    let all_consumed = consumed(&all, &platform_refs);
    let scope = "any component of the platform";
    ck.shared(
        &s.parameters,
        &all,
        &all_consumed,
        (&at("/spec/parameters".into()), scope),
    );
    for (i, e) in s.environments.iter().enumerate() {
        let loc = at(format!("/spec/environments/{i}/parameters"));
        ck.shared(&e.parameters, &all, &all_consumed, (&loc, scope));
    }

    let errors = ck.errors;
    let argocd = s.gitops.as_ref().and_then(|g| g.argocd.as_ref());
    Errors::check(errors, || Platform {
        name: pf.metadata.name,
        source: Source {
            repo_url: s.source.as_ref().map(|r| r.repo_url.clone()),
            branch: s
                .source
                .as_ref()
                .and_then(|r| r.branch.clone())
                .unwrap_or_else(|| "main".into()),
            rendered_path: s
                .source
                .as_ref()
                .and_then(|r| r.rendered_path.clone())
                .unwrap_or_else(|| "deploy".into()),
        },
        parameters: s.parameters.clone(),
        clusters: s.clusters.clone(),
        environments,
        argocd: ArgoCd {
            namespace: argocd
                .and_then(|a| a.namespace.clone())
                .unwrap_or_else(|| "argocd".into()),
            project: argocd
                .and_then(|a| a.project.clone())
                .unwrap_or_else(|| "default".into()),
        },
        kargo: s.kargo.clone().unwrap_or_default(),
        secrets: s.secrets,
        validation: s.validation.clone(),
        projects,
        components,
        root,
        dir,
        sources: sources.clone(),
        file,
    })
}

/// The parameter names (first path segment) that `${params.…}` references in `value` use.
pub(crate) fn collect_param_refs(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => text_param_refs(s, out),
        Value::Array(items) => items.iter().for_each(|v| collect_param_refs(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_param_refs(v, out)),
        _ => {}
    }
}

/// The parameters platform.yaml itself uses: those its `source.ref`s and its parameter values
/// (every layer) refer to with `${params.…}`.
fn platform_param_refs(s: &spec::PlatformSpec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut values = |p: &Parameters| p.values().for_each(|v| collect_param_refs(v, &mut out));
    values(&s.parameters);
    s.environments.iter().for_each(|e| values(&e.parameters));
    for project in &s.projects {
        values(&project.parameters);
        for inst in &project.components {
            values(&inst.parameters);
            inst.environments
                .values()
                .for_each(|e| values(&e.parameters));
        }
    }
    out.extend(source_ref_params(s));
    out
}

/// The parameters `${params.…}` references in `text` name, by their top-level name (`db` for
/// `${params.db.host}`: the key a parameter layer gives).
fn text_param_refs(text: &str, out: &mut BTreeSet<String>) {
    if !text.contains("${") {
        return;
    }
    for r in kiln_base::reference::find(text) {
        if let Some(path) = r.name().strip_prefix("params.") {
            out.insert(path.split('.').next().unwrap_or("").to_string());
        }
    }
}

/// The parameters the instances' `source.ref`s use, by top-level name ([`text_param_refs`]):
/// their use on a shared layer, and the hint of an undeclared instance parameter
/// ([`Checker::for_ref`]).
fn source_ref_params(s: &spec::PlatformSpec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for src in s
        .projects
        .iter()
        .flat_map(|p| &p.components)
        .filter_map(|i| i.source.as_ref())
    {
        text_param_refs(&src.reference, &mut out);
    }
    out
}

/// The parameters consumed in a scope: `platform`'s, and those the components of `scope`
/// without a parameter schema name in their spec.
fn consumed(scope: &[&Component], platform: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = platform.clone();
    for c in scope.iter().filter(|c| c.declared.is_none()) {
        collect_param_refs(&c.raw_spec, &mut out);
    }
    out
}

fn is_warn(p: &spec::SecretPolicy) -> bool {
    *p == spec::SecretPolicy::Warn
}

fn serialize_arcs<S: serde::Serializer>(v: &[Arc<Component>], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(Arc::as_ref))
}

impl Checker<'_> {
    fn unique<'n>(
        &mut self,
        what: &'static str,
        names: impl Iterator<Item = &'n str>,
        loc: impl Fn(usize) -> Loc,
    ) {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, name) in names.enumerate() {
            if let Some(&first) = seen.get(name) {
                let first_at = self.sources.snippet(&loc(first)).at;
                located!(
                    self,
                    loc(i),
                    DuplicateName {
                        what: what,
                        name: name.to_string(),
                        help: format!("first defined at {first_at}; names must be unique"),
                    }
                );
            } else {
                seen.insert(name, i);
            }
        }
    }

    fn known_env(&mut self, name: &str, envs: &[&str], loc: Loc, context: impl FnOnce() -> String) {
        if !envs.contains(&name) {
            located!(
                self,
                loc,
                UnknownEnvironment {
                    name: name.to_string(),
                    context: context(),
                    help: help_for_name(name, "environment", envs.iter().copied()),
                }
            );
        }
    }

    /// Checks that each name of a `when:` selector (at `loc`) is an environment, tier or
    /// cluster of the platform (`vocabulary`: field, singular, known names).
    fn known_selection(
        &mut self,
        when: &spec::When,
        vocabulary: &[(&'static str, &'static str, &[&str]); 3],
        loc: &Loc,
        context: &dyn Fn() -> String,
    ) {
        for ((field, list), (_, what, known)) in when.lists().into_iter().zip(vocabulary) {
            for (k, name) in list.iter().flatten().enumerate() {
                if !known.contains(&name.as_str()) {
                    located!(
                        self,
                        loc.join(field).join(k),
                        UnknownSelection {
                            what: what,
                            name: name.clone(),
                            context: context(),
                            help: help_for_name(name, what, known.iter().copied()),
                        }
                    );
                }
            }
        }
    }

    /// Reports every environment on a cycle of the `from` graph, once per cycle.
    fn cycles(&mut self, envs: &[spec::Environment], file: SourceId) {
        let index: BTreeMap<&str, usize> = envs
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.as_str(), i))
            .collect();
        // 0 = unvisited, 1 = on the stack, 2 = done.
        let mut state = vec![0u8; envs.len()];
        let mut reported: BTreeSet<Vec<usize>> = BTreeSet::new();
        fn dfs(
            i: usize,
            envs: &[spec::Environment],
            index: &BTreeMap<&str, usize>,
            state: &mut [u8],
            stack: &mut Vec<usize>,
            found: &mut Vec<(Vec<usize>, usize, usize)>,
        ) {
            state[i] = 1;
            stack.push(i);
            for (k, f) in envs[i].from.iter().enumerate() {
                let Some(&j) = index.get(f.as_str()) else {
                    continue;
                };
                match state[j] {
                    0 => dfs(j, envs, index, state, stack, found),
                    1 => {
                        let start = stack.iter().position(|&s| s == j).unwrap_or(0);
                        found.push((stack[start..].to_vec(), i, k));
                    }
                    _ => {}
                }
            }
            stack.pop();
            state[i] = 2;
        }
        let mut found = Vec::new();
        for i in 0..envs.len() {
            if state[i] == 0 {
                dfs(i, envs, &index, &mut state, &mut Vec::new(), &mut found);
            }
        }
        for (cycle, i, k) in found {
            let mut key = cycle.clone();
            key.sort_unstable();
            if !reported.insert(key) {
                continue;
            }
            // Edges point downstream → upstream (`from`), so print the promotion direction.
            // Start at the earliest-declared environment, so the message does not depend on
            // where the search happened to enter the cycle.
            let mut order: Vec<usize> = cycle.iter().rev().copied().collect();
            let first = order
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| **e)
                .map_or(0, |(p, _)| p);
            order.rotate_left(first);
            let mut names: Vec<&str> = order.iter().map(|&c| envs[c].name.as_str()).collect();
            names.push(names[0]);
            let loc = Loc::new(file, format!("/spec/environments/{i}/from/{k}"));
            located!(
                self,
                loc,
                EnvironmentCycle {
                    cycle: names.join(" → ")
                }
            );
        }
    }

    /// Instance-level parameters must be declared by the component.
    fn declared(&mut self, c: &Component, params: &Parameters, loc: &Loc, scope: &str) {
        for name in params.keys() {
            if !c.declares(name) {
                let known = c.declared.iter().flatten().map(String::as_str);
                located!(
                    self,
                    loc.join(name).at_key(),
                    UnknownParameter {
                        name: name.clone(),
                        scope: scope.to_string(),
                        help: format!(
                            "{} (declared in {}/component.yaml under `spec.parameters.properties`){}",
                            help_for_name(name, "parameter", known),
                            c.path,
                            self.for_ref(name, &format!("{}/component.yaml", c.path))
                        ),
                    }
                );
            }
        }
    }

    /// The end of an unknown instance parameter's help when a `source.ref` uses the
    /// parameter: given on the instance for the ref alone, it is still checked against the
    /// component's schema, so it must be declared there (on a shared layer, the `source.ref`
    /// use is enough: [`Checker::shared`]).
    fn for_ref(&self, name: &str, component_yaml: &str) -> String {
        if !self.ref_params.contains(name) {
            return String::new();
        }
        format!(
            "; `{name}` is used in `source.ref`: a parameter given on the instance for the ref alone must still be declared, as `{name}: {{type: string}}` under `spec.parameters.properties` in {component_yaml} (see \"A parameter for `source.ref` only\" in docs/spec.md)"
        )
    }

    /// Shared-layer parameters must be used: declared by a component in scope that declares
    /// its parameters, or consumed (`consumed`: named by a `${params.…}` reference of a
    /// component in scope without a parameter schema, of a `source.ref` or of a parameter's
    /// value). A component without a schema accepts every key, but only the ones it names are
    /// used, so it no longer makes every key "declared" (a typo such as `logLevle` rendered
    /// silently).
    fn shared(
        &mut self,
        params: &Parameters,
        scope: &[&Component],
        consumed: &BTreeSet<String>,
        (loc, what): (&Loc, &str),
    ) {
        let declaring = || scope.iter().filter_map(|c| c.declared.as_ref());
        for name in params.keys() {
            if declaring().any(|d| d.contains(name)) || consumed.contains(name) {
                continue;
            }
            let known: BTreeSet<&str> = declaring()
                .flatten()
                .chain(consumed)
                .map(String::as_str)
                .collect();
            located!(
                self,
                loc.join(name).at_key(),
                UnknownParameter {
                    name: name.clone(),
                    scope: what.to_string(),
                    help: format!(
                        "{} (a shared parameter must be declared under `spec.parameters.properties` of a component, or used by a `${{params.{name}}}` reference in a component without a parameter schema, a `source.ref` or another parameter)",
                        help_for_name(name, "parameter", known.iter().copied())
                    ),
                }
            );
        }
    }

    /// Checks an image's tag (field `tag_field`) and digest: `${…}` references are resolved
    /// later and not checked here.
    fn image_ref(
        &mut self,
        file: SourceId,
        field: &str,
        pointer: &str,
        (tag_field, tag): (&str, Option<&str>),
        digest: Option<&str>,
    ) {
        let checks = [(tag_field, tag, &OCI_TAG), ("digest", digest, &OCI_DIGEST)];
        for (name, value, check) in checks {
            let Some(value) = value.filter(|v| !v.contains("${") && !(check.ok)(v)) else {
                continue;
            };
            let (what, help) = (check.what, check.help);
            located!(
                self,
                Loc::new(file, format!("{pointer}/{name}")),
                InvalidImage {
                    field: format!("{field}.{name}"),
                    message: format!(
                        "`{}` {what}",
                        crate::diag::clip_text(&value.escape_debug().to_string(), 80)
                    ),
                    help: help.into()
                }
            );
        }
    }

    fn component(&mut self, c: LoadedComponent) -> Component {
        let schema = c.spec.spec.parameters.clone();
        let mut validator = None;
        let mut declared = None;
        let mut defaults = Parameters::new();
        if let Some(schema) = &schema {
            match jsonschema::validator_for(schema) {
                Ok(v) => validator = Some(Arc::new(v)),
                Err(e) => {
                    let loc = Loc::new(
                        c.file,
                        format!("/spec/parameters{}", e.schema_path().as_str()),
                    );
                    located!(
                        self,
                        loc,
                        InvalidParameterSchema {
                            component: c.spec.metadata.name.clone(),
                            message: e.to_string()
                        }
                    );
                }
            }
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                declared = Some(props.keys().cloned().collect());
                for (k, p) in props {
                    if let Some(d) = p.get("default") {
                        defaults.insert(k.clone(), d.clone());
                    }
                }
            }
        }
        for (i, img) in c.spec.spec.images.iter().enumerate() {
            self.image_ref(
                c.file,
                &format!("images[{i}]"),
                &format!("/spec/images/{i}"),
                ("tag", img.tag.as_deref()),
                img.digest.as_deref(),
            );
        }
        for (t, tr) in c.spec.spec.transformers.iter().enumerate() {
            for (i, o) in tr.images.iter().flatten().enumerate() {
                self.image_ref(
                    c.file,
                    &format!("transformers[{t}].images[{i}]"),
                    &format!("/spec/transformers/{t}/images/{i}"),
                    ("newTag", o.new_tag.as_deref()),
                    o.digest.as_deref(),
                );
            }
        }
        for (t, tr) in c.spec.spec.transformers.iter().enumerate() {
            if tr.labels.is_none()
                && (tr.include_selectors.is_some() || tr.include_templates.is_some())
            {
                located!(
                    self,
                    Loc::new(c.file, format!("/spec/transformers/{t}")),
                    InvalidTransformer {
                        message: "`includeSelectors`/`includeTemplates` only go with `labels`"
                            .into(),
                        help: "move them into the `labels` transformer entry they belong to".into(),
                    }
                );
            }
        }
        for (t, tr) in c.spec.spec.transformers.iter().enumerate() {
            for (k, op) in tr
                .json_patch
                .iter()
                .flat_map(|j| j.patch.iter())
                .enumerate()
            {
                let Some((member, reason, help)) = json_patch_op_problem(op) else {
                    continue;
                };
                let field = format!("transformers[{t}].jsonPatch.patch[{k}]");
                let at = format!("/spec/transformers/{t}/jsonPatch/patch/{k}");
                let (field, at) = if member.is_empty() {
                    (field, at)
                } else {
                    (format!("{field}.{member}"), format!("{at}/{member}"))
                };
                located!(
                    self,
                    Loc::new(c.file, at),
                    InvalidTransformer {
                        message: format!("`{field}`: {reason}"),
                        help: help,
                    }
                );
            }
        }
        Component {
            name: c.spec.metadata.name.clone(),
            path: c.display_dir,
            shown_dir: c.shown_dir,
            images: c.spec.spec.images.clone(),
            parameter_schema: schema,
            declared,
            defaults,
            validator,
            raw_spec: c.raw.get("spec").cloned().unwrap_or(Value::Null),
            spec: c.spec.spec,
            dir: c.dir,
            file: c.file,
            files: c.files,
            assets: c.assets,
        }
    }
}

/// What is wrong with one operation of a `jsonPatch` transformer, as written: the member at
/// fault (`""`: the operation itself), why, and the help. Checked at validate, before any
/// BuildPlan, so a typo is reported once at its line (repro A2: it was reported per plan at
/// render, at the transformer's first line). A `${…}` in `op` leaves the operation to render,
/// which reads it resolved and points at it the same way; one in `path` or `from` is any
/// pointer here (checked once resolved), one in `value` any value.
fn json_patch_op_problem(op: &Value) -> Option<(&'static str, String, String)> {
    use crate::kustomize::filters::patch_json6902::JsonPatch;
    let unresolved = |v: &Value| v.as_str().is_some_and(|s| s.contains("${"));
    let mut checked = op.clone();
    if let Some(m) = checked.as_object_mut() {
        if m.get("op").is_some_and(unresolved) {
            return None;
        }
        for member in ["path", "from"] {
            if let Some(v) = m.get_mut(member).filter(|v| unresolved(v)) {
                *v = Value::String("/".into());
            }
        }
    }
    let e = JsonPatch::from_value(&Value::Array(vec![checked])).err()?;
    let (_, member) = e.invalid_member()?;
    let reason = match &e {
        crate::kustomize::filters::patch_json6902::Json6902Error::InvalidOperation {
            reason,
            ..
        } => reason.clone(),
        other => other.to_string(),
    };
    Some((member, reason, json_patch_op_help(op)))
}

/// The help of a malformed JSON Patch operation `op`: the operation its `op` is closest to,
/// else what each operation needs.
pub(crate) fn json_patch_op_help(op: &Value) -> String {
    const OPS: [&str; 6] = ["add", "remove", "replace", "move", "copy", "test"];
    let needs = "each operation needs `op` (add, remove, replace, move, copy, test) and `path`; add/replace/test need `value`, move/copy need `from`";
    match op.get("op").and_then(Value::as_str) {
        Some(name) if !OPS.contains(&name) => match crate::diag::did_you_mean(name, OPS) {
            Some(s) => format!("did you mean `{s}`? {needs}"),
            None => needs.to_string(),
        },
        _ => needs.to_string(),
    }
}

/// What an image reference field must be, for the checks of literal values here and of
/// `${…}` values once resolved (evaluate).
pub struct ImageRefCheck {
    pub ok: fn(&str) -> bool,
    /// What a value that fails is (after the value).
    pub what: &'static str,
    pub help: &'static str,
}

pub const OCI_TAG: ImageRefCheck = ImageRefCheck {
    ok: is_oci_tag,
    what: "is not a valid OCI tag",
    help: "a tag is 1 to 128 of `A-Z a-z 0-9 _ . -`, not starting with `.` or `-` (`[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`)",
};

pub const OCI_DIGEST: ImageRefCheck = ImageRefCheck {
    ok: is_oci_digest,
    what: "is not a digest",
    help: "a digest is `algorithm:hex`, e.g. `sha256:` and 64 hex digits (OCI image-spec descriptor.md)",
};

/// Whether `s` is a valid OCI tag: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}` (OCI distribution
/// spec, "Pulling manifests"). A semver range such as `~1.4` or `>=1.0` is not one.
pub fn is_oci_tag(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 128
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// The OCI digest grammar (image-spec `descriptor.md`): `algorithm ":" encoded`, algorithm
/// `[a-z0-9]+([+._-][a-z0-9]+)*`, encoded `[a-zA-Z0-9=_-]+`; a `sha256`/`sha512` digest must
/// be 64/128 lower-case hex digits.
pub fn is_oci_digest(s: &str) -> bool {
    let Some((algo, encoded)) = s.split_once(':') else {
        return false;
    };
    let component_ok = |c: &str| {
        !c.is_empty()
            && c.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit())
    };
    let algo_ok = algo.split(['+', '.', '_', '-']).all(component_ok);
    let encoded_ok = !encoded.is_empty()
        && encoded
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '=' | '_' | '-'));
    let hex = |n: usize| {
        encoded.len() == n
            && encoded
                .chars()
                .all(|ch| ch.is_ascii_digit() || ('a'..='f').contains(&ch))
    };
    algo_ok
        && encoded_ok
        && match algo {
            "sha256" => hex(64),
            "sha512" => hex(128),
            _ => true,
        }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::load::{LoadOptions, RealFs, load};

    /// Writes `files` under a temp dir; returns it.
    pub(crate) fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = t.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        t
    }

    pub(crate) const COMPONENT: &str = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: a\nspec:\n  parameters:\n    type: object\n    properties:\n      replicas: {type: integer, minimum: 1, default: 1}\n      domain: {type: string}\n  generators:\n  - resources:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n";

    pub(crate) fn platform_yaml(envs: &str, projects: &str) -> String {
        format!(
            "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: p\nspec:\n  parameters: {{domain: example.com}}\n  clusters: [{{name: c, server: https://c}}]\n  environments:\n{envs}  projects:\n{projects}"
        )
    }

    pub(crate) const ENVS: &str = "  - {name: dev, tier: nonprod, cluster: c}\n  - {name: prod, tier: prod, cluster: c, from: [dev]}\n";
    pub(crate) const PROJECTS: &str = "  - name: web\n    components:\n    - path: ../../components/a\n      parameters: {replicas: 2}\n      environments:\n        prod: {parameters: {replicas: 4}}\n";

    pub(crate) fn run(platform: &str, component: &str) -> Result<Platform, Vec<String>> {
        run_files(&[
            ("platforms/p/platform.yaml", platform),
            ("components/a/component.yaml", component),
        ])
    }

    /// Loads and validates `platforms/p` of a tree of `files`.
    pub(crate) fn run_files(files: &[(&str, &str)]) -> Result<Platform, Vec<String>> {
        let t = tree(files);
        let opts = LoadOptions {
            root: Some(t.path()),
            ..Default::default()
        };
        let lp = load(&RealFs, &t.path().join("platforms/p"), &opts)
            .map_err(|e| e.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>())?;
        validate(lp).map_err(|e| e.errors.iter().map(|e| e.to_string()).collect())
    }

    /// Repro A2 (a newcomer's report): a mistyped `op` or a missing `path` in a `jsonPatch`
    /// transformer was reported only at render, once per BuildPlan, at the transformer's
    /// first line (its `target`). It is an error of validate at the operation's own line and
    /// field, with the op it is closest to.
    #[test]
    fn json_patch_operations_are_checked_at_their_line() {
        let c = format!(
            "{COMPONENT}  transformers:\n  - jsonPatch:\n      target: {{kind: ConfigMap}}\n      patch:\n      - {{op: add, path: /data, value: {{}}}}\n      - op: replase\n        path: /data/x\n        value: y\n      - {{op: replace, value: y}}\n      - {{op: add, path: \"/data/${{params.domain}}\", value: y}}\n      - {{op: repalce, path: /data/y, value: \"${{params.domain}}\"}}\n      - {{op: \"${{params.domain}}\", path: /data/z}}\n"
        );
        let errors = run(&platform_yaml(ENVS, PROJECTS), &c).unwrap_err();
        // The `op` with a reference is left to render (which the render test covers).
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].starts_with("components/a/component.yaml:19:13: ")
                && errors[0]
                    .contains("`transformers[0].jsonPatch.patch[1].op`: unknown op `replase`"),
            "{errors:?}"
        );
        assert!(
            errors[1].starts_with("components/a/component.yaml:22:9: ")
                && errors[1]
                    .contains("`transformers[0].jsonPatch.patch[2]`: `replace` needs `path`"),
            "{errors:?}"
        );
        // A reference in `value` does not hide the op's typo (the newcomer's patch had one).
        assert!(
            errors[2].starts_with("components/a/component.yaml:24:14: ")
                && errors[2].contains("unknown op `repalce`"),
            "{errors:?}"
        );
        assert!(
            json_patch_op_help(&serde_json::json!({"op": "replase"}))
                .starts_with("did you mean `replace`?")
        );
    }

    #[test]
    fn image_tags_and_digests_must_be_oci_references() {
        let with = |images: &str| {
            let c = COMPONENT.replace("  generators:\n", &format!("{images}  generators:\n"));
            run(&platform_yaml(ENVS, PROJECTS), &c)
        };
        let sha = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        with(&format!(
            "  images:\n  - {{name: a, repository: r, tag: \"1.0.0_rc-1.x\", digest: \"{sha}\"}}\n"
        ))
        .unwrap();
        let errors = with(
            "  images:\n  - {name: a, repository: r, tag: \"1.0.0 bad\"}\n  - {name: b, repository: r, digest: \"sha256:xyz\"}\n  - {name: c, repository: r, tag: \".x\"}\n  transformers:\n  - images: [{name: a, newTag: \"a/b\"}]\n",
        )
        .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0].contains("component.yaml:12:")
                && errors[0].contains("`images[0].tag`: `1.0.0 bad` is not a valid OCI tag"),
            "{errors:?}"
        );
        assert!(errors[1].contains("`images[1].digest`: `sha256:xyz` is not a digest"));
        assert!(errors[2].contains("`images[2].tag`"));
        assert!(errors[3].contains("`transformers[0].images[0].newTag`"));
        for (d, ok) in [
            (sha, true),
            ("sha512:abc", false),
            ("sha256:", false),
            (
                "multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8",
                true,
            ),
            ("SHA256:abc", false),
            ("sha256 abc", false),
        ] {
            assert_eq!(is_oci_digest(d), ok, "{d}");
        }
    }

    #[test]
    fn builds_the_model_with_defaults() {
        let p = run(&platform_yaml(ENVS, PROJECTS), COMPONENT).unwrap();
        assert_eq!(p.name, "p");
        assert_eq!(p.environments[0].namespace, DEFAULT_NAMESPACE);
        assert_eq!(p.argocd.namespace, "argocd");
        assert_eq!(p.source.rendered_path, "deploy");
        let inst = &p.projects[0].components[0];
        assert_eq!(inst.name, "a");
        assert_eq!(inst.path, "components/a");
        assert_eq!(inst.component.defaults["replicas"], 1);
        assert_eq!(inst.environments["prod"]["replicas"], 4);
        let order: Vec<&str> = p
            .environments_in_promotion_order()
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(order, ["dev", "prod"]);
    }

    #[test]
    fn reports_every_semantic_error_together() {
        let envs = "  - {name: dev, tier: nonprod, cluster: cc}\n  - {name: prod, tier: prod, cluster: c, from: [dve]}\n  - {name: dev, tier: x, cluster: c}\n";
        let projects = "  - name: web\n    components:\n    - path: ../../components/a\n      parameters: {replicaz: 2}\n      environments:\n        prd: {}\n";
        let errs = run(&platform_yaml(envs, projects), COMPONENT).unwrap_err();
        let joined = errs.join("\n");
        assert_eq!(errs.len(), 5, "{joined}");
        assert!(
            joined.contains("platforms/p/platform.yaml:11:")
                && joined.contains("duplicate environment `dev`"),
            "{joined}"
        );
        assert!(joined.contains("unknown cluster `cc`"), "{joined}");
        assert!(joined.contains("unknown environment `dve`"), "{joined}");
        assert!(joined.contains("unknown environment `prd`"), "{joined}");
        assert!(
            joined.contains(":16:") && joined.contains("unknown parameter `replicaz`"),
            "{joined}"
        );
    }

    #[test]
    fn components_checked_at_once_report_in_load_order() {
        // Twelve components with a broken parameter schema each, checked on rayon's pool:
        // their errors come in the order the platform lists them, every run.
        let names: Vec<String> = (0..12).map(|i| format!("c{i:02}")).collect();
        let projects: String = names
            .iter()
            .map(|n| format!("    - path: ../../components/{n}\n"))
            .collect();
        let platform = platform_yaml(ENVS, &format!("  - name: web\n    components:\n{projects}"));
        let components: Vec<(String, String)> = names
            .iter()
            .map(|n| {
                let c = COMPONENT
                    .replace("name: a\n", &format!("name: {n}\n"))
                    .replace("type: integer", "type: integr");
                (format!("components/{n}/component.yaml"), c)
            })
            .collect();
        let mut files = vec![("platforms/p/platform.yaml", platform.as_str())];
        files.extend(components.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        let errs = run_files(&files).unwrap_err();
        let order: Vec<&str> = errs
            .iter()
            .filter_map(|e| {
                names
                    .iter()
                    .find(|n| e.contains(n.as_str()))
                    .map(String::as_str)
            })
            .collect();
        assert_eq!(
            order,
            names.iter().map(String::as_str).collect::<Vec<_>>(),
            "{errs:?}"
        );
    }

    #[test]
    fn output_patterns_may_only_use_known_references() {
        let projects = PROJECTS.replace(
            "  - name: web\n",
            "  - name: web\n    output: {repoURL: https://x, branchPattern: \"stage/${env.name}\", pathPattern: \"envs/${params.x}\"}\n",
        );
        let errs = run(&platform_yaml(ENVS, &projects), COMPONENT).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("unknown reference `${params.x}` in pathPattern"),
            "{errs:?}"
        );
    }

    #[test]
    fn detects_promotion_cycles() {
        let envs = "  - {name: a, tier: t, cluster: c, from: [c]}\n  - {name: b, tier: t, cluster: c, from: [a]}\n  - {name: c, tier: t, cluster: c, from: [b]}\n";
        let errs = run(
            &platform_yaml(envs, PROJECTS.replace("prod:", "c:").as_str()),
            COMPONENT,
        )
        .unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("promotion cycle") && errs[0].contains("a → b → c → a"),
            "{errs:?}"
        );
    }

    #[test]
    fn shared_parameters_must_be_declared_somewhere() {
        let p = platform_yaml(ENVS, PROJECTS).replace(
            "{domain: example.com}",
            "{domain: example.com, colour: red}",
        );
        let errs = run(&p, COMPONENT).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("unknown parameter `colour`"), "{errs:?}");
    }

    /// Loads and validates the platform `platform` with components `a` ([`COMPONENT`]) and
    /// `plain` (`plain`, a component without a parameter schema).
    fn run_with_plain(platform: &str, plain: &str) -> Result<Platform, Vec<String>> {
        run_files(&[
            ("platforms/p/platform.yaml", platform),
            ("components/a/component.yaml", COMPONENT),
            ("components/plain/component.yaml", plain),
        ])
    }

    const PLAIN: &str = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {name: plain}\nspec:\n  generators:\n  - resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: plain}, data: {t: \"TEAM\"}}]\n";

    /// Repro 04 of the newcomer's estate: a component without `spec.parameters` made every
    /// platform and environment key "declared", so a typo rendered silently.
    #[test]
    fn a_schemaless_component_does_not_declare_every_shared_parameter() {
        let projects = "  - name: web\n    components:\n    - path: ../../components/a\n    - path: ../../components/plain\n";
        let envs = "  - {name: dev, tier: nonprod, cluster: c, parameters: {domian: x}}\n";
        let p = platform_yaml(envs, projects);
        let errs = run_with_plain(&p, &PLAIN.replace("TEAM", "none")).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("platform.yaml:")
                && errs[0].contains("unknown parameter `domian` for any component of the platform"),
            "{errs:?}"
        );
        // Consumed by the schema-less component, by a `source.ref` or by another parameter:
        // a key no schema declares is still used.
        let p = platform_yaml(envs, projects).replace("domian: x", "team: x");
        run_with_plain(&p, &PLAIN.replace("TEAM", "${params.team}")).unwrap();
        let p = platform_yaml(envs, projects)
            .replace("domian: x", "team: x, domain: \"${params.team}.example\"");
        run_with_plain(&p, &PLAIN.replace("TEAM", "none")).unwrap();
        // A `source.ref` consumes the parameters it names.
        let remote = "  - name: web\n    components:\n    - source: {git: \"https://git.example/app.git\", ref: \"${params.appRef}\"}\n";
        let text = platform_yaml(envs, remote);
        let value = crate::yaml::parse_one("platform.yaml", &text).unwrap();
        let pf: spec::PlatformFile = serde_json::from_value(value).unwrap();
        assert_eq!(
            platform_param_refs(&pf.spec),
            BTreeSet::from(["appRef".to_string()])
        );
    }

    /// A `source.ref` naming a field of an object parameter (`${params.git.ref}`) uses the
    /// parameter `git`, the key a layer gives: as its use on a shared layer and for the
    /// hint of an undeclared instance parameter alike (the hint's set had `git.ref`, so an
    /// undeclared `git` on the instance got no word of the ref).
    #[test]
    fn a_source_ref_uses_the_top_level_name_of_a_dotted_parameter() {
        let remote = "  - name: web\n    components:\n    - source: {git: \"https://git.example/app.git\", ref: \"${params.git.ref}-${params.tag}\"}\n";
        let text = platform_yaml(ENVS, remote);
        let value = crate::yaml::parse_one("platform.yaml", &text).unwrap();
        let pf: spec::PlatformFile = serde_json::from_value(value).unwrap();
        let names = BTreeSet::from(["git".to_string(), "tag".to_string()]);
        assert_eq!(source_ref_params(&pf.spec), names);
        assert_eq!(platform_param_refs(&pf.spec), names);
        let sources = Sources::default();
        let ck = Checker {
            sources: &sources,
            errors: Vec::new(),
            ref_params: source_ref_params(&pf.spec),
        };
        assert!(
            ck.for_ref("git", "c/component.yaml")
                .contains("`git` is used in `source.ref`")
        );
        assert_eq!(ck.for_ref("ref", "c/component.yaml"), "");
    }
}
