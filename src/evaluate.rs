//! Stage 3, evaluate: [`Platform`] → `Vec<`[`BuildPlan`]`>`, one per (project, component
//! instance, environment), in declared order (project, then instance, then environment).
//!
//! For each plan, parameter values are layered (lowest first): component schema defaults <
//! platform < environment < project < component instance < instance-per-environment. Objects
//! merge key by key; any other value replaces the one below. The shared layers (platform,
//! environment, project) only pass on the parameters the component declares. The result is
//! validated against the component's JSON Schema: every violation, each at the file and line
//! of the layer that set the offending value.
//!
//! Then the component's `images`, `generators` and `transformers` (their `component.yaml`
//! values, never manifest files) get their `${...}` references resolved: `${params.<name>}`
//! (dots descend into objects), `${env.name}`, `${env.tier}`, `${env.cluster}`,
//! `${env.namespace}`, `${project.name}`, `${component.name}`, `${platform.name}`. A string
//! that is exactly one reference takes the referenced value with its type; a reference inside
//! a longer string is interpolated. `${{ ... }}` (Kargo expressions) and `{{ ... }}` are not
//! references and pass through untouched. Parameter values may use references too, including
//! `${params.<other>}` (resolved after layering, dependencies first; a cycle is an error);
//! an environment's namespace pattern may not use `${params...}`.
//!
//! Expansion has a budget ([`MAX_EXPANSION`] bytes of referenced values per resolved value),
//! as YAML aliases have: a chain `p2: "${params.p1}${params.p1}"` doubles at each link, so
//! without it 40 links never finish.
//!
//! Invariant: pure and deterministic; a plan holds everything `render` needs except file
//! contents already loaded into the component.

mod selector;

use crate::diag::{Errors, Loc, Repeated, Sources, help_for_name, schema_violations};
use crate::spec::{self, Parameters};
use crate::validate::{Component, ComponentInstance, Environment, Platform, Project};
use kiln_base::reference;
use miette::{Diagnostic, NamedSource, SourceSpan};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use thiserror::Error;

/// Which BuildPlans to evaluate. Empty lists select everything; several values of one list
/// are alternatives (or), the lists combine with and.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub projects: Vec<String>,
    pub environments: Vec<String>,
    /// Component instance names.
    pub components: Vec<String>,
    /// `key=value` over the plan labels `project`, `environment`, `component`, `tier`,
    /// `cluster`.
    pub labels: Vec<String>,
}

/// Everything needed to render one component instance in one environment.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildPlan {
    pub project: String,
    pub environment: String,
    /// Instance name (unique in the project): the output directory and `${component.name}`.
    pub component: String,
    /// The component's `metadata.name`.
    pub component_name: String,
    /// Component directory relative to the repository root.
    pub path: String,
    pub tier: String,
    pub cluster: String,
    /// The environment's namespace pattern, resolved.
    pub namespace: String,
    /// `project`, `environment`, `component`, `tier`, `cluster`: what `-l` selects on.
    pub labels: BTreeMap<String, String>,
    /// Layered, validated parameters.
    pub parameters: Parameters,
    /// Images with references resolved.
    pub images: Vec<spec::Image>,
    /// Generators that apply in this environment (`when:`), references resolved.
    pub generators: Vec<PlanGenerator>,
    /// Transformers that apply in this environment, references resolved.
    pub transformers: Vec<PlanTransformer>,
    /// The component (loaded files, source id).
    #[serde(skip)]
    pub source: Arc<Component>,
}

/// A generator of a plan and its index in `component.yaml` (for diagnostics, and the files
/// `load` read for it).
#[derive(Debug, Clone, Serialize)]
pub struct PlanGenerator {
    #[serde(skip)]
    pub index: usize,
    #[serde(flatten)]
    pub generator: spec::Generator,
}

/// A transformer of a plan and its index in `component.yaml` (for diagnostics).
#[derive(Debug, Clone, Serialize)]
pub struct PlanTransformer {
    #[serde(skip)]
    pub index: usize,
    #[serde(flatten)]
    pub transformer: spec::Transformer,
}

/// The BuildPlan an error of evaluate or render arose in: its project, environment and
/// component instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanPlace {
    pub project: String,
    pub environment: String,
    pub component: String,
}

impl PlanPlace {
    /// How a [`Repeated`] error names the plans it arose in (issue 38, item 10): `in
    /// environments: dev, test, prod` (in the order of the spec) when they are one component
    /// instance's, else `in BuildPlans: web/dev/cart, shop/dev/cart` (as [`BuildPlan::key`]).
    pub fn line(places: &[PlanPlace]) -> String {
        let first = &places[0];
        if places
            .iter()
            .all(|p| p.project == first.project && p.component == first.component)
        {
            let names: Vec<&str> = places.iter().map(|p| p.environment.as_str()).collect();
            crate::diag::places_line("in environments", &names)
        } else {
            let keys: Vec<String> = places
                .iter()
                .map(|p| format!("{}/{}/{}", p.project, p.environment, p.component))
                .collect();
            let names: Vec<&str> = keys.iter().map(String::as_str).collect();
            crate::diag::places_line("in BuildPlans", &names)
        }
    }
}

impl BuildPlan {
    /// `<project>/<environment>/<component>`, how messages name a plan.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.project, self.environment, self.component)
    }

    /// Where an error of this plan arose.
    pub fn place(&self) -> PlanPlace {
        PlanPlace {
            project: self.project.clone(),
            environment: self.environment.clone(),
            component: self.component.clone(),
        }
    }

    /// Drops what only the render reads: the parameters, generators and transformers (at
    /// 100,000 BuildPlans about 2 GB of resolved patches). What the later stages read (names,
    /// namespace, images, labels, the component) stays. Called on each plan once it is
    /// rendered ([`crate::render::render`]); such a plan cannot be rendered
    /// again, nor shown (`kiln show buildplans` evaluates its own).
    pub fn release_render_inputs(&mut self) {
        self.parameters = Parameters::new();
        self.generators = Vec::new();
        self.transformers = Vec::new();
    }
}

/// Why evaluation failed. Codes `kiln::evaluate::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum EvaluateError {
    /// `--project`, `--environment` or `--component` names nothing.
    #[error("unknown {what} `{name}`")]
    #[diagnostic(code(kiln::evaluate::unknown_selection))]
    UnknownSelection {
        what: &'static str,
        name: String,
        #[help]
        help: String,
    },

    /// A `-l` selector is not one kubectl would parse (`selector::parse`).
    #[error("invalid label selector `{selector}`: {reason}")]
    #[diagnostic(
        code(kiln::evaluate::invalid_selector),
        help(
            "write requirements joined by commas, all of which must hold: `key=value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`, `!key`; keys: project, environment, component, tier, cluster"
        )
    )]
    InvalidSelector { selector: String, reason: String },

    /// A `${...}` reference names nothing.
    #[error("{at}: unknown reference `${{{reference}}}`")]
    #[diagnostic(code(kiln::evaluate::unknown_reference))]
    UnknownReference {
        reference: String,
        at: String,
        #[help]
        help: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("unknown reference")]
        span: Option<SourceSpan>,
    },

    /// A reference in a path whose value is not a string (a path is text: `${params.replicas}`
    /// would name a file `3`).
    #[error("{at}: reference `${{{reference}}}` in a path is {kind}, not a string")]
    #[diagnostic(
        code(kiln::evaluate::path_reference_not_string),
        help(
            "paths take string values: `${{env.name}}`, `${{env.tier}}`, `${{env.cluster}}`, `${{project.name}}` or a string parameter"
        )
    )]
    PathReferenceNotString {
        reference: String,
        kind: &'static str,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not a string")]
        span: Option<SourceSpan>,
    },

    /// A `${` that is never closed (`"${params.replicas"`): without the error it would reach
    /// the manifests as literal text.
    #[error("{at}: unterminated reference `{text}`")]
    #[diagnostic(
        code(kiln::evaluate::unterminated_reference),
        help(
            "close the reference with `}}` (`${{params.name}}`); a reference cannot contain `{{`"
        )
    )]
    UnterminatedReference {
        text: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("not closed")]
        span: Option<SourceSpan>,
    },

    /// References expand to more than [`MAX_EXPANSION`] bytes (a chain of parameters that
    /// each repeat the one before grows exponentially).
    #[error("{at}: references here expand to more than {limit} bytes")]
    #[diagnostic(
        code(kiln::evaluate::expansion_too_large),
        help(
            "a parameter that refers to another parameter several times doubles its size at each link; refer to the value once, or write it out"
        )
    )]
    ExpansionTooLarge {
        limit: usize,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("expands past the limit")]
        span: Option<SourceSpan>,
    },

    /// Parameter values refer to each other in a circle.
    #[error("{at}: parameters refer to each other in a cycle: {cycle}")]
    #[diagnostic(
        code(kiln::evaluate::parameter_cycle),
        help(
            "a parameter may refer to other parameters with `${{params.<name>}}`, but not (indirectly) to itself"
        )
    )]
    ParameterCycle {
        cycle: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("closes the cycle")]
        span: Option<SourceSpan>,
    },

    /// A parameter value violates the component's parameter schema.
    #[error("{at}: invalid parameter `{field}` for component `{component}`: {message}")]
    #[diagnostic(
        code(kiln::evaluate::parameter_invalid),
        help(
            "{guess}{schema_file} declares the parameters of `{component}` under `spec.parameters`"
        )
    )]
    ParameterInvalid {
        /// `did you mean `x`? ` for an unknown field close to a declared one, else empty.
        guess: String,
        component: String,
        /// The parameter, as a path (`resources.limits`).
        field: String,
        message: String,
        schema_file: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("{message}")]
        span: Option<SourceSpan>,
    },

    /// An image's tag or digest held a `${…}` reference that resolved to no valid OCI tag
    /// or digest (a literal one is refused by validate).
    #[error("{at}: `{field}` is `{value}` once resolved, which {what}")]
    #[diagnostic(
        code(kiln::evaluate::invalid_image),
        help("{help}; check the parameters the reference reads")
    )]
    ImageRefInvalid {
        field: String,
        value: String,
        what: &'static str,
        help: &'static str,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("resolves to `{value}`")]
        span: Option<SourceSpan>,
    },

    /// After references were resolved, a spec value has the wrong type (a whole-string
    /// reference kept a type the field does not take).
    #[error("{at}: {message}")]
    #[diagnostic(
        code(kiln::evaluate::resolved_value_invalid),
        help(
            "a string that is exactly one `${{...}}` reference takes the referenced value's type; embed it in text (or quote the parameter) to get a string"
        )
    )]
    ResolvedValueInvalid {
        message: String,
        at: String,
        #[source_code]
        src: NamedSource<String>,
        #[label("here")]
        span: Option<SourceSpan>,
    },
}

/// An image reference in a component: its field path (`images[0]`), JSON Pointer below
/// `spec`, the name of its tag field (`tag`, `newTag`), tag and digest.
type ImageRefAt<'r> = (
    String,
    String,
    &'static str,
    Option<&'r str>,
    Option<&'r str>,
);

/// Evaluates the selected BuildPlans.
///
/// Errors: every [`EvaluateError`], together, each reported once even when several plans hit
/// it, with the environments (or plans) it arose in.
pub fn evaluate(
    platform: &Platform,
    selection: &Selection,
) -> Result<Vec<BuildPlan>, Errors<Repeated<EvaluateError>>> {
    let mut plans = Vec::new();
    evaluate_each(platform, selection, &mut |mut instance| {
        plans.append(&mut instance)
    })?;
    Ok(plans)
}

/// [`evaluate`] a component instance at a time (issue 38, item 8): `each` gets the selected
/// BuildPlans of one instance (its environments, in order), in the order [`evaluate`] returns
/// them, so a caller can render and release them before the next are made. Once an error is
/// found, no more plans are handed out (the result is the errors, as [`evaluate`]'s), but
/// every plan is still evaluated, so every error is reported.
///
/// Errors: as [`evaluate`].
pub fn evaluate_each(
    platform: &Platform,
    selection: &Selection,
    each: &mut dyn FnMut(Vec<BuildPlan>),
) -> Result<(), Errors<Repeated<EvaluateError>>> {
    let mut errors = check_selection(platform, selection);
    let labels = parse_labels(&selection.labels, &mut errors);
    if !errors.is_empty() {
        return Err(Errors::new(
            errors.into_iter().map(Repeated::once).collect(),
        ));
    }
    let mut found: Vec<(EvaluateError, Option<PlanPlace>)> = Vec::new();
    // Instances are evaluated a batch at a time on rayon's pool (issue 38, item 8: evaluate
    // was 8.6 s of one thread at 100,000 BuildPlans), each instance on its own, and handed
    // out in the spec's order: the plans, errors and their order are the sequential ones.
    let selected = selected(platform, selection, &labels);
    for batch in selected.chunks(EVALUATE_BATCH) {
        let evaluated: Vec<InstanceEval> = batch
            .par_iter()
            .map(|(project, inst, envs)| evaluate_instance(platform, project, inst, envs))
            .collect();
        for (plans, mut errors) in evaluated {
            found.append(&mut errors);
            if found.is_empty() && !plans.is_empty() {
                each(plans);
            }
        }
    }
    // The same bad value reaches many plans (a platform parameter, a component used in five
    // environments); report it once, with where.
    let grouped = Repeated::group(found, ToString::to_string, PlanPlace::line);
    Errors::check(grouped, || ())
}

/// How many component instances [`evaluate_each`] evaluates together: enough to share
/// among the cores, few enough that a batch's plans (about 20 KB each before render
/// releases their inputs) stay a few MB and reach the render a piece at a time.
const EVALUATE_BATCH: usize = 32;

/// One instance's BuildPlans (its selected environments, in order) and the errors found
/// while making them, each with its plan.
type InstanceEval = (Vec<BuildPlan>, Vec<(EvaluateError, Option<PlanPlace>)>);

/// The BuildPlans of one component instance in `envs`, for [`evaluate_each`].
fn evaluate_instance(
    platform: &Platform,
    project: &Project,
    inst: &ComponentInstance,
    envs: &[&Environment],
) -> InstanceEval {
    let mut plans = Vec::with_capacity(envs.len());
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for env in envs {
        let mut ev = PlanEval {
            platform,
            project,
            inst,
            env,
            errors: &mut errors,
        };
        if let Some(plan) = ev.plan(plan_labels(project, inst, env)) {
            plans.push(plan);
        }
        let place = PlanPlace {
            project: project.name.clone(),
            environment: env.name.clone(),
            component: inst.name.clone(),
        };
        found.extend(errors.drain(..).map(|e| (e, Some(place.clone()))));
    }
    (plans, found)
}

/// How many BuildPlans [`evaluate`] makes for `selection` when it succeeds (for progress).
pub fn count(platform: &Platform, selection: &Selection) -> usize {
    let mut errors = Vec::new();
    let labels = parse_labels(&selection.labels, &mut errors);
    selected(platform, selection, &labels)
        .iter()
        .map(|(_, _, envs)| envs.len())
        .sum()
}

/// The selected (project, component instance, environments) in evaluation order.
fn selected<'p>(
    platform: &'p Platform,
    selection: &Selection,
    labels: &[kiln_kustomize::types::selector::LabelSelector],
) -> Vec<(&'p Project, &'p ComponentInstance, Vec<&'p Environment>)> {
    let pick = |list: &[String], name: &str| list.is_empty() || list.iter().any(|n| n == name);
    let mut out = Vec::new();
    for project in platform
        .projects
        .iter()
        .filter(|p| pick(&selection.projects, &p.name))
    {
        for inst in project
            .components
            .iter()
            .filter(|c| pick(&selection.components, &c.name))
        {
            let envs = platform
                .environments
                .iter()
                .filter(|e| pick(&selection.environments, &e.name))
                .filter(|e| inst.deployed_in(e))
                .filter(|e| {
                    if labels.is_empty() {
                        return true;
                    }
                    let plan_labels = plan_labels(project, inst, e);
                    labels.iter().all(|s| selector::selects(s, &plan_labels))
                })
                .collect();
            out.push((project, inst, envs));
        }
    }
    out
}

/// The labels `-l` selects a plan on.
fn plan_labels(
    project: &Project,
    inst: &ComponentInstance,
    env: &Environment,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("project".to_string(), project.name.clone()),
        ("environment".to_string(), env.name.clone()),
        ("component".to_string(), inst.name.clone()),
        ("tier".to_string(), env.tier.clone()),
        ("cluster".to_string(), env.cluster.clone()),
    ])
}

fn check_selection(platform: &Platform, sel: &Selection) -> Vec<EvaluateError> {
    let mut errors = Vec::new();
    let mut check = |what: &'static str, names: &[String], known: Vec<&str>| {
        for n in names {
            if !known.contains(&n.as_str()) {
                errors.push(EvaluateError::UnknownSelection {
                    what,
                    name: n.clone(),
                    help: help_for_name(n, what, known.iter().copied()),
                });
            }
        }
    };
    check(
        "project",
        &sel.projects,
        platform.projects.iter().map(|p| p.name.as_str()).collect(),
    );
    check(
        "environment",
        &sel.environments,
        platform
            .environments
            .iter()
            .map(|e| e.name.as_str())
            .collect(),
    );
    let mut instances: Vec<&str> = platform
        .projects
        .iter()
        .flat_map(|p| p.components.iter().map(|c| c.name.as_str()))
        .collect();
    instances.sort_unstable();
    instances.dedup();
    check("component", &sel.components, instances);
    errors
}

fn parse_labels(
    selectors: &[String],
    errors: &mut Vec<EvaluateError>,
) -> Vec<kiln_kustomize::types::selector::LabelSelector> {
    let mut out = Vec::new();
    for s in selectors {
        match selector::parse(s) {
            Ok(parsed) => out.push(parsed),
            Err(reason) => errors.push(EvaluateError::InvalidSelector {
                selector: s.clone(),
                reason,
            }),
        }
    }
    out
}

/// Where a parameter layer came from.
enum LayerLoc {
    /// A map of values at this location (`.../parameters`).
    Map(Loc),
    /// The schema defaults of a component: key `k` sits at
    /// `/spec/parameters/properties/<k>/default`.
    Defaults(Loc),
}

impl LayerLoc {
    fn at(&self, key: &str, rest: &str) -> Loc {
        match self {
            LayerLoc::Map(base) => base.join(key).extend(rest),
            LayerLoc::Defaults(base) => base
                .join("properties")
                .join(key)
                .join("default")
                .extend(rest),
        }
    }
}

/// Where a value being resolved sits. Made into a [`Loc`] (a pointer string per node, escaped
/// and allocated) only when an error names it: resolving every string of 100,000 BuildPlans
/// built one for each node, most of evaluate's time (issue 38, item 8).
#[derive(Clone, Copy)]
enum At<'a> {
    /// A known location.
    Loc(&'a Loc),
    /// A location worked out on demand (a parameter's layer).
    Lazy(&'a dyn Fn() -> Loc),
    /// Item `usize` of the array at the parent.
    Index(&'a At<'a>, usize),
    /// Key `&str` of the object at the parent.
    Key(&'a At<'a>, &'a str),
}

impl At<'_> {
    fn loc(&self) -> Loc {
        match self {
            At::Loc(l) => (*l).clone(),
            At::Lazy(f) => f(),
            At::Index(parent, i) => parent.loc().join(i),
            At::Key(parent, k) => parent.loc().join(k),
        }
    }
}

/// The values references resolve against.
struct Context<'a> {
    platform: &'a str,
    project: &'a str,
    component: &'a str,
    env: &'a Environment,
    /// `None` while the namespace itself is being resolved.
    namespace: Option<&'a str>,
    /// `None` while parameters themselves are being resolved.
    params: Option<&'a Parameters>,
    /// Leave `${params.…}` untouched (first pass over parameter values; the second pass,
    /// after layering, resolves them against the merged parameters).
    defer_params: bool,
    /// Bytes of referenced values expanded so far (see [`MAX_EXPANSION`]).
    spent: std::cell::Cell<usize>,
}

/// The most bytes of referenced values one resolution (one parameter value, one spec value)
/// may expand to.
pub const MAX_EXPANSION: usize = 1 << 20;

/// A cheap upper estimate of a value's size as text, stopping once past `limit`.
fn value_size(v: &Value, limit: usize) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(items) => {
            let mut n = 2;
            for i in items {
                n += value_size(i, limit) + 1;
                if n > limit {
                    break;
                }
            }
            n
        }
        Value::Object(map) => {
            let mut n = 2;
            for (k, i) in map {
                n += k.len() + value_size(i, limit) + 2;
                if n > limit {
                    break;
                }
            }
            n
        }
        _ => 8,
    }
}

impl Context<'_> {
    /// Whether `reference` is a parameter reference left for the second pass.
    fn deferred(&self, reference: &str) -> bool {
        self.defer_params && self.params.is_none() && reference.trim().starts_with("params.")
    }

    /// The value of one reference (the text between `${` and `}`), or a help text.
    fn lookup(&self, reference: &str) -> Result<Value, String> {
        let r = reference.trim();
        let s = |v: &str| Ok(Value::String(v.to_string()));
        match r {
            "platform.name" => s(self.platform),
            "project.name" => s(self.project),
            "component.name" => s(self.component),
            "env.name" => s(&self.env.name),
            "env.tier" => s(&self.env.tier),
            "env.cluster" => s(&self.env.cluster),
            "env.namespace" => match self.namespace {
                Some(ns) => s(ns),
                None => Err("the namespace pattern cannot refer to the namespace itself".into()),
            },
            _ => {
                let Some(path) = r.strip_prefix("params.") else {
                    const NAMES: [&str; 8] = [
                        "env.name",
                        "env.tier",
                        "env.cluster",
                        "env.namespace",
                        "project.name",
                        "component.name",
                        "platform.name",
                        "params.",
                    ];
                    return Err(match crate::diag::did_you_mean(r, NAMES) {
                        Some(m) if m != "params." => {
                            format!("did you mean `${{{m}}}`? {KNOWN_REFS}")
                        }
                        _ => KNOWN_REFS.to_string(),
                    });
                };
                let Some(params) = self.params else {
                    return Err(
                        "a namespace pattern cannot refer to parameters (parameters may differ per component)".into(),
                    );
                };
                let mut parts = path.split('.');
                let first = parts.next().unwrap_or("");
                let Some(mut v) = params.get(first) else {
                    return Err(
                        match crate::diag::did_you_mean(first, params.keys().map(String::as_str)) {
                            Some(m) => {
                                format!("parameter `{first}` has no value; did you mean `{m}`?")
                            }
                            None => format!(
                                "parameter `{first}` has no value (declare it with a default, or set it)"
                            ),
                        },
                    );
                };
                for p in parts {
                    v = match v.get(p) {
                        Some(inner) => inner,
                        None => return Err(format!("`{path}`: no field `{p}`")),
                    };
                }
                Ok(v.clone())
            }
        }
    }

    /// Resolves references in every string of `value`; errors go to `errors` with the string's
    /// location (built only then: see [`At`]).
    fn resolve(
        &self,
        value: &Value,
        at: At<'_>,
        sources: &Sources,
        errors: &mut Vec<EvaluateError>,
    ) -> Value {
        match value {
            Value::String(text) => self.resolve_str(text, at, sources, errors),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.resolve(v, At::Index(&at, i), sources, errors))
                    .collect(),
            ),
            Value::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    out.insert(k.clone(), self.resolve(v, At::Key(&at, k), sources, errors));
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    fn resolve_str(
        &self,
        text: &str,
        at: At<'_>,
        sources: &Sources,
        errors: &mut Vec<EvaluateError>,
    ) -> Value {
        if !text.contains("${") {
            return Value::String(text.to_string());
        }
        let over_budget = |v: &Value| {
            let spent = self.spent.get();
            if spent > MAX_EXPANSION {
                return true;
            }
            self.spent.set(spent + value_size(v, MAX_EXPANSION));
            self.spent.get() > MAX_EXPANSION
        };
        let too_large = |errors: &mut Vec<EvaluateError>| {
            let sn = sources.snippet(&at.loc());
            errors.push(EvaluateError::ExpansionTooLarge {
                limit: MAX_EXPANSION,
                at: sn.at,
                src: sn.src,
                span: sn.span,
            });
            Value::String(text.to_string())
        };
        if self.spent.get() > MAX_EXPANSION {
            // Already reported once for this resolution.
            return Value::String(text.to_string());
        }
        let mut report = |reference: &str, help: String| {
            let sn = sources.snippet(&at.loc());
            errors.push(EvaluateError::UnknownReference {
                reference: reference.trim().to_string(),
                at: sn.at,
                help,
                src: sn.src,
                span: sn.span,
            });
        };
        if let Some(start) = reference::unterminated(text) {
            let sn = sources.snippet(&at.loc());
            errors.push(EvaluateError::UnterminatedReference {
                text: text[start..].to_string(),
                at: sn.at,
                src: sn.src,
                span: sn.span,
            });
            return Value::String(text.to_string());
        }
        // A whole-string reference keeps the referenced value's type.
        if let Some(r) = reference::whole(text) {
            if self.deferred(r.raw) {
                return Value::String(text.to_string());
            }
            return match self.lookup(r.raw) {
                Ok(v) if over_budget(&v) => too_large(errors),
                Ok(v) => v,
                Err(help) => {
                    report(r.raw, help);
                    Value::String(text.to_string())
                }
            };
        }
        let mut out = String::new();
        let mut last = 0;
        for r in reference::find(text) {
            out.push_str(&text[last..r.start]);
            if self.deferred(r.raw) {
                out.push_str(r.text);
                last = r.end;
                continue;
            }
            match self.lookup(r.raw) {
                Ok(v) if over_budget(&v) => return too_large(errors),
                Ok(Value::String(s)) => out.push_str(&s),
                Ok(Value::Null) => {}
                Ok(other @ (Value::Number(_) | Value::Bool(_))) => out.push_str(&other.to_string()),
                Ok(other) => out.push_str(&serde_json::to_string(&other).unwrap_or_default()),
                Err(help) => {
                    report(r.raw, help);
                    out.push_str(r.text);
                }
            }
            last = r.end;
        }
        out.push_str(&text[last..]);
        Value::String(out)
    }
}

/// The paths of one generator as written in `component.yaml` (its `when` removed), with
/// their JSON Pointers below the generator: `files` entries, `kustomize`, the chart and
/// values files of `helm`, and the `files`/`envs` of the kustomize generators (`key=path`
/// entries give their path).
pub fn generator_paths(generator: &Value) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    fn entry(v: &Value) -> Option<(&'static str, &str)> {
        match v {
            Value::String(p) => Some(("", p.as_str())),
            Value::Object(o) => o.get("path").and_then(Value::as_str).map(|p| ("/path", p)),
            _ => None,
        }
    }
    let Some(obj) = generator.as_object() else {
        return out;
    };
    for (key, value) in obj {
        match (key.as_str(), value) {
            ("files", Value::Array(items)) => {
                for (k, v) in items.iter().enumerate() {
                    if let Some((tail, p)) = entry(v) {
                        out.push((format!("/files/{k}{tail}"), p));
                    }
                }
            }
            ("kustomize", Value::String(p)) => out.push(("/kustomize".to_string(), p.as_str())),
            ("helm", Value::Object(h)) => {
                if let Some(p) = h.get("chart").and_then(Value::as_str) {
                    out.push(("/helm/chart".to_string(), p));
                }
                for (k, v) in h
                    .get("valuesFiles")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    if let Some((tail, p)) = entry(v) {
                        out.push((format!("/helm/valuesFiles/{k}{tail}"), p));
                    }
                }
            }
            ("configMapGenerator" | "secretGenerator", Value::Object(a)) => {
                for field in ["files", "envs"] {
                    for (k, v) in a
                        .get(field)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        if let Some(p) = v.as_str() {
                            let p = p.split_once('=').map_or(p, |(_, p)| p);
                            out.push((format!("/{key}/{field}/{k}"), p));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Expands a project output pattern (`branchPattern`, `pathPattern`; validated to use only
/// [`crate::validate::PATTERN_REFERENCES`]) for one environment, e.g. `stage/${env.name}` →
/// `stage/prod-east`. Unknown references are left as written (validation rejected them).
pub fn expand_pattern(
    pattern: &str,
    platform: &Platform,
    project: &Project,
    env: &Environment,
) -> String {
    reference::replace(pattern, |r| match r.name() {
        "env.name" => Some(env.name.clone()),
        "env.tier" => Some(env.tier.clone()),
        "env.cluster" => Some(env.cluster.clone()),
        "project.name" => Some(project.name.clone()),
        "platform.name" => Some(platform.name.clone()),
        _ => None,
    })
}

const KNOWN_REFS: &str = "known references: ${params.<name>}, ${env.name}, ${env.tier}, ${env.cluster}, ${env.namespace}, ${project.name}, ${component.name}, ${platform.name}";

/// State of the parameters-referring-to-parameters pass.
struct ParamPass<'m> {
    map: &'m mut Map<String, Value>,
    done: BTreeSet<String>,
    stack: Vec<String>,
}

struct PlanEval<'a> {
    platform: &'a Platform,
    project: &'a Project,
    inst: &'a ComponentInstance,
    env: &'a Environment,
    errors: &'a mut Vec<EvaluateError>,
}

/// Deep-merges `upper` into `lower`: objects key by key, anything else replaces.
fn merge(lower: &mut Value, upper: &Value) {
    match (lower, upper) {
        (Value::Object(l), Value::Object(u)) => {
            for (k, v) in u {
                match l.get_mut(k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        l.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (l, u) => *l = u.clone(),
    }
}

impl PlanEval<'_> {
    fn plan(&mut self, labels: BTreeMap<String, String>) -> Option<BuildPlan> {
        let before = self.errors.len();
        let sources = self.platform.sources.clone();
        let component = self.inst.component_in(&self.env.name).clone();
        let mut ctx = Context {
            platform: &self.platform.name,
            project: &self.project.name,
            component: &self.inst.name,
            env: self.env,
            namespace: None,
            params: None,
            defer_params: false,
            spent: Default::default(),
        };
        let ns_loc = if self.env.namespace == crate::validate::DEFAULT_NAMESPACE {
            self.env.loc.clone()
        } else {
            self.env.loc.join("namespace")
        };
        let namespace =
            match ctx.resolve_str(&self.env.namespace, At::Loc(&ns_loc), &sources, self.errors) {
                Value::String(s) => s,
                other => other.to_string(),
            };
        ctx.namespace = Some(&namespace);

        // Layers, lowest first. Shared layers pass on only what the component declares.
        let declared = |p: &Parameters| -> Parameters {
            p.iter()
                .filter(|(k, _)| component.declares(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let empty = Parameters::new();
        let layers: Vec<(Parameters, LayerLoc)> = vec![
            (
                component.defaults.clone(),
                LayerLoc::Defaults(Loc::new(component.file, "/spec/parameters")),
            ),
            (
                declared(&self.platform.parameters),
                LayerLoc::Map(Loc::new(self.platform.file, "/spec/parameters")),
            ),
            (
                declared(&self.env.parameters),
                LayerLoc::Map(self.env.loc.join("parameters")),
            ),
            (
                declared(&self.project.parameters),
                LayerLoc::Map(self.project.loc.join("parameters")),
            ),
            (
                self.inst.parameters.clone(),
                LayerLoc::Map(self.inst.loc.join("parameters")),
            ),
            (
                self.inst
                    .environments
                    .get(&self.env.name)
                    .unwrap_or(&empty)
                    .clone(),
                LayerLoc::Map(
                    self.inst
                        .loc
                        .join("environments")
                        .join(&self.env.name)
                        .join("parameters"),
                ),
            ),
        ];
        let mut merged = Value::Object(Map::new());
        let mut resolved_layers = Vec::new();
        ctx.defer_params = true;
        for (values, at) in &layers {
            let mut layer = Map::new();
            for (k, v) in values {
                let loc = || at.at(k, "");
                layer.insert(
                    k.clone(),
                    ctx.resolve(v, At::Lazy(&loc), &sources, self.errors),
                );
            }
            let layer = Value::Object(layer);
            merge(&mut merged, &layer);
            resolved_layers.push(layer);
        }
        ctx.defer_params = false;
        if let Value::Object(map) = &mut merged {
            let mut pass = ParamPass {
                map,
                done: BTreeSet::new(),
                stack: Vec::new(),
            };
            let keys: Vec<String> = pass.map.keys().cloned().collect();
            for k in keys {
                self.resolve_param(&k, &mut pass, &ctx, &resolved_layers, &layers, &sources);
            }
        }
        if let Some(v) = &component.validator {
            let schema = component.raw_spec.get("parameters");
            for violation in schema_violations(v, schema, &merged) {
                let loc = self.param_loc(&violation.pointer, &resolved_layers, &layers);
                let sn = sources.snippet(&if violation.key { loc.at_key() } else { loc });
                self.errors.push(EvaluateError::ParameterInvalid {
                    guess: violation.help.map(|h| h + " ").unwrap_or_default(),
                    component: component.name.clone(),
                    field: crate::diag::field_path(&violation.pointer),
                    message: violation.message,
                    schema_file: format!("{}/component.yaml", component.path),
                    at: sn.at,
                    src: sn.src,
                    span: sn.span,
                });
            }
        }
        let parameters: Parameters = match merged {
            Value::Object(m) => m.into_iter().collect(),
            _ => Parameters::new(),
        };
        ctx.params = Some(&parameters);

        let spec_loc = Loc::new(component.file, "/spec");
        let raw = &component.raw_spec;
        let images: Vec<spec::Image> =
            self.typed(&ctx, raw.get("images"), &spec_loc.join("images"), &sources);
        let admits = |when: Option<&spec::When>| {
            when.is_none_or(|w| w.admits(&self.env.name, &self.env.tier, &self.env.cluster))
        };
        let mut generators = Vec::new();
        for (index, entry) in component.spec.generators.iter().enumerate() {
            if !admits(entry.when.as_ref()) {
                continue;
            }
            let loc = spec_loc.join("generators").join(index);
            let mut raw_g = raw.pointer(&format!("/generators/{index}")).cloned();
            if let Some(Value::Object(m)) = &mut raw_g {
                m.shift_remove("when");
            }
            if let Some(g) = &raw_g {
                self.check_path_references(&ctx, g, &loc, &sources);
            }
            let generator: Option<spec::Generator> =
                self.typed(&ctx, raw_g.as_ref(), &loc, &sources);
            if let Some(generator) = generator {
                generators.push(PlanGenerator { index, generator });
            }
        }
        let mut transformers = Vec::new();
        for (index, t) in component.spec.transformers.iter().enumerate() {
            if t.environments
                .as_ref()
                .is_some_and(|envs| !envs.contains(&self.env.name))
                || !admits(t.when.as_ref())
            {
                continue;
            }
            let loc = spec_loc.join("transformers").join(index);
            let raw_t = raw.pointer(&format!("/transformers/{index}"));
            let transformer: Option<spec::Transformer> = self.typed(&ctx, raw_t, &loc, &sources);
            if let Some(transformer) = transformer {
                transformers.push(PlanTransformer { index, transformer });
            }
        }
        let component_refs = images.iter().enumerate().map(|(i, img)| {
            (
                format!("images[{i}]"),
                format!("/images/{i}"),
                "tag",
                img.tag.as_deref(),
                img.digest.as_deref(),
            )
        });
        let transformer_refs = transformers.iter().flat_map(|t| {
            t.transformer
                .images
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, o)| {
                    (
                        format!("transformers[{}].images[{i}]", t.index),
                        format!("/transformers/{}/images/{i}", t.index),
                        "newTag",
                        o.new_tag.as_deref(),
                        o.digest.as_deref(),
                    )
                })
        });
        let refs: Vec<ImageRefAt> = component_refs.chain(transformer_refs).collect();
        self.check_resolved_images(refs, raw, &spec_loc, &sources);
        if self.errors.len() > before {
            return None;
        }
        Some(BuildPlan {
            project: self.project.name.clone(),
            environment: self.env.name.clone(),
            component: self.inst.name.clone(),
            component_name: component.name.clone(),
            path: component.path.clone(),
            tier: self.env.tier.clone(),
            cluster: self.env.cluster.clone(),
            namespace,
            labels,
            parameters,
            images,
            generators,
            transformers,
            source: component,
        })
    }

    /// Resolves `${params.…}` inside the value of parameter `key`, after the parameters it
    /// refers to (depth first; a cycle is an error at the value that closes it).
    fn resolve_param(
        &mut self,
        key: &str,
        pass: &mut ParamPass<'_>,
        ctx: &Context<'_>,
        resolved_layers: &[Value],
        layers: &[(Parameters, LayerLoc)],
        sources: &Sources,
    ) {
        if pass.done.contains(key) {
            return;
        }
        // Where the value sits, looked up only when it has references: for every parameter
        // of 100,000 BuildPlans the lookup was a fifth of evaluate.
        let loc = || self.param_loc(&kiln_base::pointer::join("", key), resolved_layers, layers);
        if let Some(start) = pass.stack.iter().position(|k| k == key) {
            let mut cycle: Vec<&str> = pass.stack[start..].iter().map(String::as_str).collect();
            cycle.push(key);
            let sn = sources.snippet(&loc());
            self.errors.push(EvaluateError::ParameterCycle {
                cycle: cycle.join(" → "),
                at: sn.at,
                src: sn.src,
                span: sn.span,
            });
            pass.done.insert(key.to_string());
            return;
        }
        let Some(value) = pass.map.get(key).cloned() else {
            return;
        };
        let mut deps = BTreeSet::new();
        crate::validate::collect_param_refs(&value, &mut deps);
        if deps.is_empty() {
            pass.done.insert(key.to_string());
            return;
        }
        pass.stack.push(key.to_string());
        for dep in &deps {
            if pass.map.contains_key(dep) {
                self.resolve_param(dep, pass, ctx, resolved_layers, layers, sources);
            }
        }
        pass.stack.pop();
        let snapshot: Parameters = pass
            .map
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let with_params = Context {
            platform: ctx.platform,
            project: ctx.project,
            component: ctx.component,
            env: ctx.env,
            namespace: ctx.namespace,
            params: Some(&snapshot),
            defer_params: false,
            spent: Default::default(),
        };
        let loc = self.param_loc(&kiln_base::pointer::join("", key), resolved_layers, layers);
        let resolved = with_params.resolve(&value, At::Loc(&loc), sources, self.errors);
        pass.map.insert(key.to_string(), resolved);
        pass.done.insert(key.to_string());
    }

    /// Resolves references in `raw` and deserializes it; `T::default()` (with an error
    /// recorded) when the resolved value does not fit.
    /// Validate checks literal tags and digests (`validate::image_ref`); one built from
    /// `${…}` is known only now, and a bad one would otherwise reach the manifests and the
    /// Warehouse.
    fn check_resolved_images<'r>(
        &mut self,
        refs: impl IntoIterator<Item = ImageRefAt<'r>>,
        raw_spec: &Value,
        spec_loc: &Loc,
        sources: &Sources,
    ) {
        for (path, pointer, tag_field, tag, digest) in refs {
            let checks = [
                (tag_field, tag, &crate::validate::OCI_TAG),
                ("digest", digest, &crate::validate::OCI_DIGEST),
            ];
            for (field, value, check) in checks {
                let written = raw_spec
                    .pointer(&format!("{pointer}/{field}"))
                    .and_then(Value::as_str);
                let Some(value) =
                    value.filter(|v| !(check.ok)(v) && written.is_some_and(|t| t.contains("${")))
                else {
                    continue;
                };
                let sn = sources.snippet(&spec_loc.extend(&format!("{pointer}/{field}")));
                self.errors.push(EvaluateError::ImageRefInvalid {
                    field: format!("{path}.{field}"),
                    value: value.to_string(),
                    what: check.what,
                    help: check.help,
                    at: sn.at,
                    src: sn.src,
                    span: sn.span,
                });
            }
        }
    }

    /// Refuses a reference in a generator path whose value is not a string. Unknown
    /// references are left to the resolution, which reports them.
    fn check_path_references(
        &mut self,
        ctx: &Context<'_>,
        generator: &Value,
        loc: &Loc,
        sources: &Sources,
    ) {
        for (pointer, text) in generator_paths(generator) {
            for reference in reference::names(text) {
                let Ok(v) = ctx.lookup(&reference) else {
                    continue;
                };
                let kind = match v {
                    Value::String(_) => continue,
                    Value::Null => "null",
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    Value::Array(_) => "a list",
                    Value::Object(_) => "a map",
                };
                let mut at = loc.clone();
                for token in pointer.split('/').filter(|t| !t.is_empty()) {
                    at = at.join(token);
                }
                let sn = sources.snippet(&at);
                self.errors.push(EvaluateError::PathReferenceNotString {
                    reference,
                    kind,
                    at: sn.at,
                    src: sn.src,
                    span: sn.span,
                });
            }
        }
    }

    fn typed<T: serde::de::DeserializeOwned + Default>(
        &mut self,
        ctx: &Context<'_>,
        raw: Option<&Value>,
        loc: &Loc,
        sources: &Sources,
    ) -> T {
        let Some(raw) = raw else {
            return T::default();
        };
        let resolved = ctx.resolve(raw, At::Loc(loc), sources, self.errors);
        match serde_json::from_value(resolved) {
            Ok(v) => v,
            Err(e) => {
                let sn = sources.snippet(loc);
                self.errors.push(EvaluateError::ResolvedValueInvalid {
                    message: e.to_string(),
                    at: sn.at,
                    src: sn.src,
                    span: sn.span,
                });
                T::default()
            }
        }
    }

    /// The location of the value at `pointer` in the merged parameters: the highest layer
    /// that holds it (or its nearest ancestor); the instance when no layer does.
    fn param_loc(
        &self,
        pointer: &str,
        resolved: &[Value],
        layers: &[(Parameters, LayerLoc)],
    ) -> Loc {
        let mut p = pointer.to_string();
        while !p.is_empty() {
            for (i, layer) in resolved.iter().enumerate().rev() {
                if layer.pointer(&p).is_some() {
                    let mut parts = p[1..].splitn(2, '/');
                    let key = kiln_base::pointer::unescape(parts.next().unwrap_or(""));
                    let rest = parts.next().map(|r| format!("/{r}")).unwrap_or_default();
                    return layers[i].1.at(&key, &rest);
                }
            }
            match p.rfind('/') {
                Some(i) => p.truncate(i),
                None => p.clear(),
            }
        }
        self.inst.loc.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::tests::{COMPONENT, ENVS, PROJECTS, platform_yaml, run};

    fn eval(
        platform: &str,
        component: &str,
        sel: &Selection,
    ) -> Result<Vec<BuildPlan>, Vec<String>> {
        let p = run(platform, component)?;
        evaluate(&p, sel).map_err(|e| e.errors.iter().map(|e| e.to_string()).collect())
    }

    const REFS: &str = "  transformers:\n  - namespace: \"${env.namespace}\"\n  - jsonPatch:\n      target: {kind: ConfigMap}\n      patch:\n      - {op: add, path: /data, value: {replicas: \"${params.replicas}\", host: \"web.${params.domain}\", kargo: \"${{ vars.x }}\", tpl: \"{{ .Values }}\"}}\n    environments: [prod]\n";

    #[test]
    fn layers_parameters_and_keeps_reference_types() {
        let comp = format!("{COMPONENT}{REFS}");
        let plans = eval(&platform_yaml(ENVS, PROJECTS), &comp, &Selection::default()).unwrap();
        assert_eq!(
            plans.iter().map(|p| p.key()).collect::<Vec<_>>(),
            ["web/dev/a", "web/prod/a"]
        );
        let (dev, prod) = (&plans[0], &plans[1]);
        assert_eq!(dev.parameters["replicas"], 2);
        assert_eq!(dev.parameters["domain"], "example.com");
        assert_eq!(prod.parameters["replicas"], 4);
        assert_eq!(dev.namespace, "web-dev");
        assert_eq!(dev.transformers.len(), 1, "jsonPatch is limited to prod");
        assert_eq!(
            dev.transformers[0].transformer.namespace.as_deref(),
            Some("web-dev")
        );
        let patch = &prod.transformers[1]
            .transformer
            .json_patch
            .as_ref()
            .unwrap()
            .patch[0]["value"];
        assert_eq!(
            patch["replicas"],
            serde_json::json!(4),
            "whole-string reference keeps the integer"
        );
        assert_eq!(patch["host"], "web.example.com");
        assert_eq!(patch["kargo"], "${{ vars.x }}");
        assert_eq!(patch["tpl"], "{{ .Values }}");
    }

    #[test]
    fn parameters_may_refer_to_parameters() {
        let projects = PROJECTS.replace(
            "{replicas: 2}",
            "{replicas: 2, domain: \"web.${params.base}\"}",
        );
        let comp = COMPONENT.replace("      domain: {type: string}\n", "      domain: {type: string}\n      base: {type: string, default: \"${env.name}.example.com\"}\n");
        let plans = eval(
            &platform_yaml(ENVS, &projects),
            &comp,
            &Selection::default(),
        )
        .unwrap();
        assert_eq!(plans[0].parameters["domain"], "web.dev.example.com");
        assert_eq!(plans[1].parameters["domain"], "web.prod.example.com");

        let cyclic = COMPONENT.replace("      domain: {type: string}\n", "      domain: {type: string, default: \"${params.base}\"}\n      base: {type: string, default: \"x.${params.domain}\"}\n");
        let platform =
            platform_yaml(ENVS, PROJECTS).replace("  parameters: {domain: example.com}\n", "");
        let errs = eval(&platform, &cyclic, &Selection::default()).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("cycle: base → domain → base")
                || errs[0].contains("cycle: domain → base → domain"),
            "{errs:?}"
        );
    }

    #[test]
    fn doubling_parameter_chains_stop_at_the_expansion_budget() {
        // p0 = "xxxxxxxx", p{i} = p{i-1} twice: 40 links would be 8 TiB.
        let mut props = String::from("      p0: {type: string, default: xxxxxxxx}\n");
        for i in 1..=40 {
            let j = i - 1;
            props.push_str(&format!(
                "      p{i}: {{type: string, default: \"${{params.p{j}}}${{params.p{j}}}\"}}\n"
            ));
        }
        props.push_str("      domain: {type: string}\n");
        let comp = COMPONENT.replace("      domain: {type: string}\n", &props);
        let errs = eval(&platform_yaml(ENVS, PROJECTS), &comp, &Selection::default())
            .expect_err("the chain is refused");
        assert!(
            errs.iter()
                .all(|e| e.contains("expand to more than 1048576 bytes")),
            "{errs:?}"
        );
        // p17 (1 MiB) is the first link past the budget, in each of the two plans.
        assert!(!errs.is_empty() && errs.len() <= 2 * 24, "{}", errs.len());
    }

    #[test]
    fn kargo_expressions_next_to_references_stay_untouched() {
        let p = run(&platform_yaml(ENVS, PROJECTS), COMPONENT).unwrap();
        let ctx = Context {
            platform: &p.name,
            project: "web",
            component: "a",
            env: &p.environments[0],
            namespace: Some("web-dev"),
            params: None,
            defer_params: false,
            spent: Default::default(),
        };
        let mut errors = Vec::new();
        let got = ctx.resolve_str(
            "${{ ctx.stage }}-${env.name}/{{ .x }}/${ env.tier }",
            At::Loc(&Loc::new(p.file, "")),
            &p.sources,
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(got, "${{ ctx.stage }}-dev/{{ .x }}/nonprod");
    }

    #[test]
    fn output_patterns_expand_per_environment() {
        let p = run(&platform_yaml(ENVS, PROJECTS), COMPONENT).unwrap();
        let got = expand_pattern(
            "stage/${env.name}/${ project.name }@${env.tier}",
            &p,
            &p.projects[0],
            &p.environments[1],
        );
        assert_eq!(got, "stage/prod/web@prod");
    }

    #[test]
    fn unterminated_references_are_errors_not_literal_text() {
        let comp = format!(
            "{COMPONENT}  transformers:\n  - namespace: \"${{env.name\"\n  - namePrefix: \"${{{{ ctx.stage }}}}-${{env.name}}-${{params.x\"\n  - nameSuffix: \"-${{{{ vars.kargo }}}}-${{env.tier}}\"\n"
        );
        let errs = eval(&platform_yaml(ENVS, PROJECTS), &comp, &Selection::default()).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].starts_with("components/a/component.yaml:15:")
                && errs[0].contains("unterminated reference `${env.name`"),
            "{errs:?}"
        );
        assert!(
            errs[1].starts_with("components/a/component.yaml:16:")
                && errs[1].contains("`${params.x`"),
            "{errs:?}"
        );
        assert_eq!(reference::unterminated("${{ a }}-${env.name}"), None);
        assert_eq!(reference::unterminated("a-${b"), Some(2));
        assert_eq!(reference::unterminated("${a{b}"), Some(0));
    }

    #[test]
    fn unknown_references_name_file_and_line() {
        let comp = format!(
            "{COMPONENT}  transformers:\n  - namespace: \"${{env.nmae}}\"\n  - namePrefix: \"${{params.replica}}-\"\n"
        );
        let errs = eval(&platform_yaml(ENVS, PROJECTS), &comp, &Selection::default()).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0].starts_with("components/a/component.yaml:15:")
                && errs[0].contains("`${env.nmae}`"),
            "{errs:?}"
        );
        assert!(
            errs[1].starts_with("components/a/component.yaml:16:")
                && errs[1].contains("`${params.replica}`"),
            "{errs:?}"
        );
    }

    #[test]
    fn schema_violations_point_at_the_layer_that_set_them() {
        let projects = PROJECTS
            .replace("{replicas: 4}", "{replicas: 0}")
            .replace("{replicas: 2}", "{replicas: two}");
        let errs = eval(
            &platform_yaml(ENVS, &projects),
            COMPONENT,
            &Selection::default(),
        )
        .unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        // dev: instance layer (line 15) sets a string; prod: instance-per-env (line 17) sets 0.
        assert!(
            errs[0].starts_with("platforms/p/platform.yaml:15:") && errs[0].contains("not of type"),
            "{errs:?}"
        );
        assert!(
            errs[1].starts_with("platforms/p/platform.yaml:17:") && errs[1].contains("minimum"),
            "{errs:?}"
        );
    }

    #[test]
    fn selection_filters_and_rejects_unknown_names() {
        let sel = Selection {
            environments: vec!["prod".into()],
            ..Default::default()
        };
        let plans = eval(&platform_yaml(ENVS, PROJECTS), COMPONENT, &sel).unwrap();
        assert_eq!(plans.len(), 1);
        let sel = Selection {
            labels: vec!["tier=nonprod".into()],
            ..Default::default()
        };
        let plans = eval(&platform_yaml(ENVS, PROJECTS), COMPONENT, &sel).unwrap();
        assert_eq!(
            plans
                .iter()
                .map(|p| p.environment.as_str())
                .collect::<Vec<_>>(),
            ["dev"]
        );
        let sel = Selection {
            environments: vec!["prd".into()],
            components: vec!["zzz".into()],
            ..Default::default()
        };
        let errs = eval(&platform_yaml(ENVS, PROJECTS), COMPONENT, &sel).unwrap_err();
        assert_eq!(
            errs,
            ["unknown environment `prd`", "unknown component `zzz`"]
        );
    }
}
