//! The checks of `kiln validate`, as functions from documents to [`RawFinding`]s: schema
//! validation with readable messages, removed fields, promotion steps, Warehouse
//! subscriptions, and references across the validated set.
//!
//! Invariant: rules only read documents; findings carry JSON Pointers into the document they
//! are about, resolved to lines by the caller.

use super::schemas::{Gvk, SchemaSet, builtin_object_schema, builtin_validator, is_expression};
use super::{CheckError, Document, RawFinding, Rule};
use crate::kargo::AUTHORIZED_STAGE;
use crate::promote::steps::DEFAULT_ARGOCD_NAMESPACE;
use jsonschema::Validator;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use kiln_base::pointer::escape as esc;
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

/// Kargo's API group.
pub const KARGO_GROUP: &str = "kargo.akuity.io";
/// Argo CD's API group.
pub const ARGOCD_GROUP: &str = "argoproj.io";

/// Step aliases Kargo reserves for generated ones (pkg/promotion `ReservedStepAliasRegex`).
static RESERVED_ALIAS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(step|task)-\d+$").expect("valid regex"));
/// The body of each `${{ … }}` in a string.
static EXPRESSION_BODY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$\{\{([\s\S]*?)\}\}").expect("valid regex"));
/// `vars.name` / `vars['name']` not preceded by a member access (`task.vars` is not ours).
static VAR_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[^\w.])vars(?:\.([A-Za-z_]\w*)|\[\s*['"]([^'"]+)['"]\s*\])"#)
        .expect("valid regex")
});
/// `outputs.alias` / `outputs['alias']`, not preceded by a member access.
static OUTPUT_REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[^\w.])outputs(?:\.([A-Za-z_]\w*)|\[\s*['"]([^'"]+)['"]\s*\])"#)
        .expect("valid regex")
});

/// What [`run`] returns.
pub(super) struct Outcome {
    pub raw: Vec<RawFinding>,
    /// Kargo and Argo CD objects checked against a schema (a CRD, else kiln's model).
    pub objects: usize,
    /// Kargo and Argo CD objects of kinds with neither: checked for ObjectMeta only.
    pub meta_only: usize,
    /// Objects of other API groups, checked here for ObjectMeta only.
    pub others: usize,
}

/// One Kubernetes object among the documents.
struct Object<'a> {
    doc: usize,
    gvk: Gvk,
    name: &'a str,
    namespace: &'a str,
    value: &'a Value,
    /// The kind a `kind` its group does not have most likely meant ([`unknown_kind`]).
    ///
    /// [`unknown_kind`]: super::model::unknown_kind
    meant: Option<&'static str>,
}

impl Object<'_> {
    /// `Stage `dev`` — how messages name the object.
    fn label(&self) -> String {
        format!("{} `{}`", self.gvk.kind, self.name)
    }
    fn is_kargo(&self, kind: &str) -> bool {
        self.gvk.group == KARGO_GROUP && self.gvk.kind == kind
    }
    /// Whether references across the set read the object as `group`'s `kind`: a mistyped
    /// kind counts as the one it meant, so that the typo is reported once (`unknown_kind`)
    /// and not again by every Stage or Application that names the object.
    fn reads_as(&self, group: &str, kind: &str) -> bool {
        self.gvk.group == group && (self.gvk.kind == kind || self.meant == Some(kind))
    }
}

/// Runs every rule over `docs`.
pub(super) fn run(docs: &[Document], schemas: &SchemaSet) -> Result<Outcome, CheckError> {
    let mut out = Outcome {
        raw: Vec::new(),
        objects: 0,
        meta_only: 0,
        others: 0,
    };
    let mut objects = Vec::new();
    for (doc, d) in docs.iter().enumerate() {
        let (Some(api), Some(kind)) = (d.value["apiVersion"].as_str(), d.value["kind"].as_str())
        else {
            continue;
        };
        // kustomization.yaml files sit beside rendered manifests; they are not objects.
        if api.starts_with("kustomize.config.k8s.io/") {
            continue;
        }
        let gvk = Gvk::new(api, kind);
        objects.push(Object {
            doc,
            meant: super::model::unknown_kind(&gvk.group, &gvk.kind).and_then(|u| u.meant),
            gvk,
            name: d
                .value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
            namespace: d
                .value
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            value: &d.value,
        });
    }
    let mut builtin: BTreeMap<Gvk, (Validator, Value)> = BTreeMap::new();
    for o in &objects {
        let mut raw = Vec::new();
        removed_fields(o, &mut raw);
        // A removed field is also an unknown field to the schema: report it once, with help.
        let reported: BTreeSet<String> = raw.iter().map(|r| r.pointer.clone()).collect();
        let ours = o.gvk.group == KARGO_GROUP || o.gvk.group == ARGOCD_GROUP;
        match schemas.kind(&o.gvk)? {
            Some(k) => {
                out.objects += 1;
                raw.extend(schema_findings(
                    Rule::SchemaViolation,
                    o,
                    "",
                    (&k.validator, None),
                    o.value,
                    &o.label(),
                    &reported,
                ));
            }
            None => {
                // A kind its group does not have (a typo `kubectl apply` refuses), else a
                // kind of ours the schema directory lacks.
                let unknown = match super::model::unknown_kind(&o.gvk.group, &o.gvk.kind) {
                    Some(u) => Some((format!("`{}`: {}", o.name, u.message), u.help)),
                    None if ours && !schemas.is_empty() => Some((
                        format!(
                            "no schema for `{}` `{}`",
                            o.value["apiVersion"].as_str().unwrap_or(""),
                            o.gvk.kind
                        ),
                        "check `apiVersion` and `kind`, or add the CRD to the schema directory"
                            .into(),
                    )),
                    None => None,
                };
                if let Some((message, help)) = unknown {
                    out.objects += 1;
                    raw.push(RawFinding {
                        rule: Rule::UnknownKind,
                        doc: o.doc,
                        pointer: "/kind".into(),
                        at_key: false,
                        message,
                        help: Some(help),
                    });
                } else if !ours {
                    out.others += 1;
                } else if super::model::object_schema(&o.gvk.group, &o.gvk.kind).is_some() {
                    // Checked below against kiln's typed model of the kind.
                    out.objects += 1;
                } else {
                    out.meta_only += 1;
                }
                if !builtin.contains_key(&o.gvk) {
                    let v =
                        builtin_validator(&o.gvk).map_err(|message| CheckError::SchemaInvalid {
                            path: "<built-in>".into(),
                            message,
                        })?;
                    builtin.insert(o.gvk.clone(), (v, builtin_object_schema(&o.gvk)));
                }
                let (v, schema) = &builtin[&o.gvk];
                raw.extend(schema_findings(
                    Rule::SchemaViolation,
                    o,
                    "",
                    (v, Some(schema)),
                    o.value,
                    &o.label(),
                    &reported,
                ));
            }
        }
        if o.gvk.group == KARGO_GROUP {
            if let Some(steps) = step_lists(o) {
                for (pointer, vars) in steps {
                    check_steps(o, &pointer, &vars, schemas, &mut raw);
                }
            }
            if o.gvk.kind == "Warehouse" {
                check_subscriptions(o, schemas, &mut raw);
            }
        }
        out.raw.extend(raw);
    }
    references(&objects, docs, &mut out.raw);
    super::semantics::run(docs, &mut out.raw);
    Ok(out)
}

/// A value shortened for messages.
fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Validates `instance` (found at `base` inside object `o`) and turns each error into a
/// finding; unknown fields whose pointer is in `skip` are left out (already reported).
fn schema_findings(
    rule: Rule,
    o: &Object<'_>,
    base: &str,
    (validator, schema): (&Validator, Option<&Value>),
    instance: &Value,
    what: &str,
    skip: &BTreeSet<String>,
) -> Vec<RawFinding> {
    let mut out = Vec::new();
    for e in validator.iter_errors(instance) {
        let path = format!("{base}{}", e.instance_path().as_str());
        let found = e.instance();
        let mut push = |pointer: String, at_key: bool, detail: String, help: Option<String>| {
            if !skip.contains(&pointer) {
                out.push(RawFinding {
                    rule,
                    doc: o.doc,
                    pointer,
                    at_key,
                    message: format!("{what}: {detail}"),
                    help,
                });
            }
        };
        match e.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let known = schema
                    .and_then(|root| properties_at(root, e.schema_path().as_str()))
                    .unwrap_or_default();
                for u in unexpected {
                    let help = match did_you_mean(u, known.iter().map(String::as_str)) {
                        Some(meant) => format!("{meant} the schema allows no such field here"),
                        None => "the schema allows no such field here; check its spelling and indentation".into(),
                    };
                    push(
                        format!("{path}/{}", esc(u)),
                        true,
                        format!("unknown field `{u}`"),
                        Some(help),
                    );
                }
            }
            ValidationErrorKind::Required { property } => {
                let p = property
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| property.to_string());
                // Point at the key of the map that lacks the field.
                push(path, true, format!("missing required field `{p}`"), None);
            }
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    TypeKind::Single(t) => t.to_string(),
                    TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                let help = (expected == "string" && !found.is_string())
                    .then(|| format!("quote the value: \"{}\"", short(found)));
                push(
                    path,
                    false,
                    format!(
                        "expected {expected}, found {} `{}`",
                        json_type(found),
                        short(found)
                    ),
                    help,
                );
            }
            ValidationErrorKind::Enum { options } => {
                let opts = options
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|o| format!("`{}`", short(o)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                push(
                    path,
                    false,
                    format!("`{}` is not one of {opts}", short(found)),
                    None,
                );
            }
            ValidationErrorKind::Pattern { pattern } => {
                push(
                    path,
                    false,
                    format!("`{}` does not match `{pattern}`", short(found)),
                    None,
                );
            }
            ValidationErrorKind::FalseSchema => {
                push(
                    path,
                    false,
                    format!("`{}` is not allowed here", short(found)),
                    None,
                );
            }
            ValidationErrorKind::OneOfMultipleValid { .. } => {
                push(
                    path,
                    false,
                    "matches more than one of the allowed forms".into(),
                    Some("set only one of the mutually exclusive fields".into()),
                );
            }
            ValidationErrorKind::OneOfNotValid { context }
            | ValidationErrorKind::AnyOf { context } => {
                // The branch with the fewest errors is the form the author most likely meant.
                let best = context
                    .iter()
                    .filter(|b| !b.is_empty())
                    .min_by_key(|b| b.len());
                let help = best.and_then(|b| b.first()).map(|first| {
                    let at = first.instance_path().as_str();
                    let at = if at.is_empty() {
                        String::new()
                    } else {
                        format!(" at `{base}{at}`")
                    };
                    format!("closest form fails with: {}{at}", first.masked())
                });
                push(
                    path,
                    false,
                    "matches none of the allowed forms".into(),
                    help,
                );
            }
            _ => push(path, false, e.masked().to_string(), None),
        }
    }
    out
}

/// How to replace a removed field, given the key and where it is.
fn removal(
    o: &Object<'_>,
    pointer: &[String],
    key: &str,
    in_config: bool,
) -> Option<(Rule, String, String)> {
    let at = |segments: &[&str]| {
        pointer.len() == segments.len()
            && pointer
                .iter()
                .zip(segments)
                .all(|(a, b)| *b == "*" || a == b)
    };
    if in_config {
        let help = match key {
            "fromFreight" => {
                "removed in Kargo v1.3: check out the Freight's commit with an expression, \
                 e.g. `commit: ${{ commitFrom(vars.srcRepo).ID }}`"
                    .to_string()
            }
            "fromOrigin" => "removed in Kargo v1.3: name the origin inside the expression, \
                 e.g. `tag: ${{ imageFrom(vars.imageRepo, warehouse('name')).Tag }}`"
                .to_string(),
            "useDigest" => {
                "removed in Kargo v1.3: set `digest: ${{ imageFrom(vars.imageRepo).Digest }}`"
                    .to_string()
            }
            "messageFromSteps" => "removed in Kargo v1.5: set `message`, e.g. \
                 `message: ${{ outputs['update-image'].commitMessage }}`"
                .to_string(),
            k if k.ends_with("FromStep") && k.len() > "FromStep".len() => {
                let field = &k[..k.len() - "FromStep".len()];
                format!(
                    "removed in Kargo v1.3: set `{field}` from the step's output, e.g. `{field}: ${{{{ outputs['alias'].{field} }}}}`"
                )
            }
            _ => return None,
        };
        return Some((
            Rule::RemovedField,
            format!("`{key}` was removed from promotion steps"),
            help,
        ));
    }
    if o.is_kargo("Project") && pointer.is_empty() && key == "spec" {
        return Some((
            Rule::RemovedField,
            "`spec` was removed from Project in Kargo v1.7".into(),
            format!(
                "move `spec.promotionPolicies` into a `ProjectConfig` named `{0}` in namespace `{0}`",
                o.name
            ),
        ));
    }
    if o.is_kargo("Stage") {
        let help = match key {
            "fromFreight" => {
                "request Freight with `spec.requestedFreight[]`: `origin: {kind: Warehouse, name: …}` \
                 and `sources: {direct: true}` or `sources: {stages: [upstream]}`"
            }
            "subscriptions" if at(&["spec"]) => {
                "replaced by `spec.requestedFreight[]` (`origin` + `sources`) in Kargo v0.8"
            }
            "promotionMechanisms" if at(&["spec"]) => {
                "replaced by `spec.promotionTemplate.spec.steps` (promotion steps) in Kargo v1.0"
            }
            "upstreamStages" => "use `sources: {stages: [upstream]}` in `spec.requestedFreight[]`",
            _ => return None,
        };
        return Some((
            Rule::RemovedField,
            format!("`{key}` is not a Stage field in Kargo v1.11"),
            help.into(),
        ));
    }
    if o.is_kargo("Warehouse") && at(&["spec", "subscriptions", "*", "image"]) {
        let help = match key {
            "semverConstraint" => {
                "renamed to `constraint` (the old name was removed in Kargo v1.9)"
            }
            "useDigest" => "use `imageSelectionStrategy: Digest` with `constraint: <mutable tag>`",
            "gitRepoURL" => {
                "removed in Kargo v1.7: the source repository is read from the image's \
                 `org.opencontainers.image.source` annotation"
            }
            _ => return None,
        };
        return Some((
            Rule::RemovedField,
            format!("`{key}` was removed from image subscriptions"),
            help.into(),
        ));
    }
    None
}

/// Finds removed or renamed fields anywhere in `o`, and deprecated ones that fail at run time.
fn removed_fields(o: &Object<'_>, out: &mut Vec<RawFinding>) {
    fn walk(
        o: &Object<'_>,
        v: &Value,
        path: &mut Vec<String>,
        config_depth: Option<usize>,
        out: &mut Vec<RawFinding>,
    ) {
        match v {
            Value::Object(m) => {
                for (k, child) in m {
                    if let Some((rule, detail, help)) = removal(o, path, k, config_depth.is_some())
                    {
                        let pointer = format!("{}/{}", pointer_of(path), esc(k));
                        out.push(RawFinding {
                            rule,
                            doc: o.doc,
                            pointer,
                            at_key: true,
                            message: format!("{}: {detail}", o.label()),
                            help: Some(help),
                        });
                        continue;
                    }
                    path.push(k.clone());
                    // A step's `config` starts at `…/steps/<i>/config`.
                    let depth = config_depth.or_else(|| {
                        let n = path.len();
                        (n >= 3 && path[n - 1] == "config" && path[n - 3] == "steps").then_some(n)
                    });
                    walk(o, child, path, depth, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    path.push(i.to_string());
                    walk(o, child, path, config_depth, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    if o.gvk.group != KARGO_GROUP {
        return;
    }
    walk(o, o.value, &mut Vec::new(), None, out);
    if o.gvk.kind == "Warehouse" {
        for (i, sub) in o
            .value
            .pointer("/spec/subscriptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(image) = sub.get("image") else {
                continue;
            };
            for (field, replacement) in [
                ("allowTags", "allowTagsRegexes"),
                ("ignoreTags", "ignoreTagsRegexes"),
            ] {
                let set = match image.get(field) {
                    Some(Value::String(s)) => !s.is_empty(),
                    Some(Value::Array(a)) => !a.is_empty(),
                    _ => false,
                };
                if set {
                    out.push(RawFinding {
                        rule: Rule::DeprecatedField,
                        doc: o.doc,
                        pointer: format!("/spec/subscriptions/{i}/image/{field}"),
                        at_key: true,
                        message: format!(
                            "{}: artifact discovery fails when `{field}` is set (Kargo v1.11)",
                            o.label()
                        ),
                        help: Some(format!("use `{replacement}` (regular expressions) instead")),
                    });
                }
            }
        }
    }
}

fn pointer_of(path: &[String]) -> String {
    path.iter().map(|s| format!("/{}", esc(s))).collect()
}

/// The step lists of a Kargo object with their variable scopes: (pointer to `steps`, names
/// of the variables visible to every step).
fn step_lists(o: &Object<'_>) -> Option<Vec<(String, BTreeSet<String>)>> {
    let names = |p: &str| -> BTreeSet<String> {
        o.value
            .pointer(p)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str().map(str::to_string))
            .collect()
    };
    match o.gvk.kind.as_str() {
        "Stage" => {
            let mut vars = names("/spec/vars");
            vars.extend(names("/spec/promotionTemplate/spec/vars"));
            Some(vec![("/spec/promotionTemplate/spec/steps".into(), vars)])
        }
        "PromotionTask" | "ClusterPromotionTask" | "Promotion" => {
            Some(vec![("/spec/steps".into(), names("/spec/vars"))])
        }
        _ => None,
    }
}

/// Every string in `v` with its pointer.
fn strings<'v>(v: &'v Value, pointer: String, out: &mut Vec<(String, &'v str)>) {
    match v {
        Value::String(s) => out.push((pointer, s)),
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                strings(c, format!("{pointer}/{i}"), out);
            }
        }
        Value::Object(m) => {
            for (k, c) in m {
                strings(c, format!("{pointer}/{}", esc(k)), out);
            }
        }
        _ => {}
    }
}

/// Steps: shape (`uses` xor `task`), aliases, config against the step schema, and the
/// `vars`/`outputs` names their expressions use.
fn check_steps(
    o: &Object<'_>,
    at: &str,
    vars: &BTreeSet<String>,
    schemas: &SchemaSet,
    out: &mut Vec<RawFinding>,
) {
    let Some(steps) = o.value.pointer(at).and_then(Value::as_array) else {
        return;
    };
    let mut aliases: BTreeMap<String, usize> = BTreeMap::new();
    let label = o.label();
    let finding =
        |rule: Rule, pointer: String, at_key: bool, detail: String, help: Option<String>| {
            RawFinding {
                rule,
                doc: o.doc,
                pointer,
                at_key,
                message: format!("{label}: {detail}"),
                help,
            }
        };
    for (i, step) in steps.iter().enumerate() {
        let sp = format!("{at}/{i}");
        let uses = step.get("uses").and_then(Value::as_str);
        let has_task = step.get("task").is_some();
        if uses.is_some() == has_task {
            out.push(finding(
                Rule::StepShapeInvalid,
                sp.clone(),
                false,
                format!("step {i} must set exactly one of `uses` and `task`"),
                None,
            ));
        }
        if let Some(alias) = step
            .get("as")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            if RESERVED_ALIAS.is_match(alias) {
                out.push(finding(
                    Rule::ReservedStepAlias,
                    format!("{sp}/as"),
                    false,
                    format!("step alias `{alias}` is reserved"),
                    Some(
                        "aliases matching `^(step|task)-<number>$` are Kargo's own; choose another"
                            .into(),
                    ),
                ));
            }
            if let Some(first) = aliases.get(alias) {
                out.push(finding(
                    Rule::DuplicateStepAlias,
                    format!("{sp}/as"),
                    false,
                    format!("step alias `{alias}` is already used by step {first}"),
                    None,
                ));
            } else {
                aliases.insert(alias.to_string(), i);
            }
        }
        if let Some(uses) = uses {
            if uses == "helm-update-image" {
                out.push(finding(
                    Rule::RemovedStep,
                    format!("{sp}/uses"),
                    false,
                    "step `helm-update-image` was removed in Kargo v1.3".into(),
                    Some("use `yaml-update` on the values file with `value: ${{ imageFrom(vars.imageRepo).Tag }}`".into()),
                ));
            } else {
                // The step schemas of `--schema-dir`, else kiln's built-in model (which knows
                // the steps kiln emits and leaves others unchecked).
                let validator = if schemas.has_steps() {
                    schemas.step(uses).ok_or(())
                } else {
                    super::model::step_validator(uses).ok_or(())
                };
                match validator {
                    // A step the model does not check: known to Kargo, else a typo the
                    // Promotion would fail on at run time.
                    Err(()) if !schemas.has_steps() => {
                        if !super::model::KARGO_STEPS.contains(&uses) {
                            out.push(finding(
                                Rule::UnknownStep,
                                format!("{sp}/uses"),
                                false,
                                format!("unknown promotion step `{uses}`"),
                                did_you_mean(uses, super::model::KARGO_STEPS.into_iter()),
                            ));
                        }
                    }
                    Err(()) => out.push(finding(
                        Rule::UnknownStep,
                        format!("{sp}/uses"),
                        false,
                        format!("unknown promotion step `{uses}`"),
                        did_you_mean(uses, schemas.step_names()),
                    )),
                    Ok(v) => {
                        let empty = Value::Object(Map::new());
                        let config = step.get("config").unwrap_or(&empty);
                        let base = if step.get("config").is_some() {
                            format!("{sp}/config")
                        } else {
                            sp.clone()
                        };
                        let what = format!(
                            "{label}: step `{uses}` ({})",
                            step.get("as")
                                .and_then(Value::as_str)
                                .map_or(format!("#{i}"), |a| format!("`{a}`"))
                        );
                        let skip: BTreeSet<String> = out
                            .iter()
                            .filter(|r| r.doc == o.doc)
                            .map(|r| r.pointer.clone())
                            .collect();
                        // kiln's model of the step, for the fields' names (`--schema-dir`'s
                        // step schemas `$ref` other files).
                        let model = (!schemas.has_steps())
                            .then(|| super::model::step_schema(uses))
                            .flatten();
                        for mut r in schema_findings(
                            Rule::StepConfigInvalid,
                            o,
                            &base,
                            (v, model.as_ref()),
                            config,
                            "",
                            &skip,
                        ) {
                            r.message = format!("{what}{}", r.message);
                            out.push(r);
                        }
                    }
                }
            }
        }
        // Expressions: variables and earlier steps' outputs.
        let mut visible = vars.clone();
        visible.extend(
            step.get("vars")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v["name"].as_str().map(str::to_string)),
        );
        let mut texts = Vec::new();
        strings(step, sp.clone(), &mut texts);
        for (pointer, text) in texts {
            if !is_expression(text) {
                continue;
            }
            for body in EXPRESSION_BODY.captures_iter(text).filter_map(|c| c.get(1)) {
                for c in VAR_REF.captures_iter(body.as_str()) {
                    let name = c.get(1).or(c.get(2)).map(|m| m.as_str()).unwrap_or("");
                    if !visible.contains(name) {
                        out.push(finding(
                            Rule::UndefinedVar,
                            pointer.clone(),
                            false,
                            format!("expression uses `vars.{name}`, which no `vars` entry defines"),
                            did_you_mean(name, visible.iter().map(String::as_str)).or_else(|| {
                                Some(format!(
                                    "add `{{name: {name}, value: …}}` to the template's `vars`"
                                ))
                            }),
                        ));
                    }
                }
                for c in OUTPUT_REF.captures_iter(body.as_str()) {
                    let alias = c.get(1).or(c.get(2)).map(|m| m.as_str()).unwrap_or("");
                    let earlier = aliases.get(alias).is_some_and(|&j| j < i)
                        || alias
                            .strip_prefix("step-")
                            .and_then(|n| n.parse::<usize>().ok())
                            .is_some_and(|n| n < i);
                    if !earlier {
                        out.push(finding(
                            Rule::UnknownStepOutput,
                            pointer.clone(),
                            false,
                            format!("expression reads `outputs` of `{alias}`, which is not an earlier step's alias"),
                            did_you_mean(alias, aliases.keys().map(String::as_str)),
                        ));
                    }
                }
            }
        }
    }
}

/// Warehouse subscriptions: exactly one of `git`, `image`, `chart`, each valid against its
/// schema.
fn check_subscriptions(o: &Object<'_>, schemas: &SchemaSet, out: &mut Vec<RawFinding>) {
    let Some(subs) = o
        .value
        .pointer("/spec/subscriptions")
        .and_then(Value::as_array)
    else {
        return;
    };
    let skip: BTreeSet<String> = out.iter().map(|r| r.pointer.clone()).collect();
    for (i, sub) in subs.iter().enumerate() {
        let at = format!("/spec/subscriptions/{i}");
        let Some(m) = sub.as_object() else { continue };
        // Semver constraints, as the Warehouse would parse them at discovery time
        // (Masterminds/semver): image `constraint` under SemVer (the default strategy), git
        // `semverConstraint` under SemVer, chart `semverConstraint`.
        let semver = [
            ("image", "constraint", "imageSelectionStrategy", true),
            ("git", "semverConstraint", "commitSelectionStrategy", false),
            ("chart", "semverConstraint", "", true),
        ];
        for (kind, field, strategy_field, semver_by_default) in semver {
            let Some(body) = m.get(kind) else { continue };
            let strategy = body.get(strategy_field).and_then(Value::as_str);
            let is_semver = strategy.map_or(semver_by_default, |s| s == "SemVer");
            if let Some(c) = body
                .get(field)
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                && is_semver
                && let Err(e) = crate::kargo::constraint::parse(c)
            {
                out.push(RawFinding {
                    rule: Rule::ConstraintInvalid,
                    doc: o.doc,
                    pointer: format!("{at}/{kind}/{field}"),
                    at_key: false,
                    message: format!("{}: semver constraint `{c}` does not parse: {e}", o.label()),
                    help: Some(
                        "use Masterminds/semver syntax, e.g. `^1.4.0`, `~1.2`, `>=1.0 <2.0`, `1.x`"
                            .into(),
                    ),
                });
            }
        }
        let keys: Vec<&String> = m.keys().collect();
        if keys.len() != 1 {
            out.push(RawFinding {
                rule: Rule::SubscriptionInvalid,
                doc: o.doc,
                pointer: at.clone(),
                at_key: false,
                message: format!(
                    "{}: a subscription must have exactly one of `git`, `image`, `chart`",
                    o.label()
                ),
                help: None,
            });
        }
        for (kind, body) in m {
            let p = format!("{at}/{}", esc(kind));
            match schemas.subscription(kind) {
                Some(v) => out.extend(schema_findings(
                    Rule::SubscriptionInvalid,
                    o,
                    &p,
                    (v, None),
                    body,
                    &format!("{}: {kind} subscription", o.label()),
                    &skip,
                )),
                None if schemas.has_subscriptions() => out.push(RawFinding {
                    rule: Rule::SubscriptionInvalid,
                    doc: o.doc,
                    pointer: p,
                    at_key: true,
                    message: format!("{}: unknown subscription type `{kind}`", o.label()),
                    help: did_you_mean(kind, ["git", "image", "chart"].into_iter()),
                }),
                None => {}
            }
        }
    }
}

/// The `properties` names of the schema an `additionalProperties` error came from:
/// `schema_path` is the error's keyword location in `root` (through `$ref`s to `#/…`), its
/// last segment the `additionalProperties` keyword itself. `None` where it cannot be followed.
fn properties_at(root: &Value, schema_path: &str) -> Option<Vec<String>> {
    let mut segments: Vec<String> = schema_path
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    segments.pop();
    let mut node = root;
    for seg in &segments {
        node = if seg == "$ref" {
            let target = node.get("$ref")?.as_str()?.strip_prefix('#')?;
            root.pointer(target)?
        } else {
            match node {
                Value::Array(items) => items.get(seg.parse::<usize>().ok()?)?,
                _ => node.get(seg.as_str())?,
            }
        };
    }
    // The object schema itself may sit behind a `$ref`.
    while let Some(target) = node.get("$ref").and_then(Value::as_str) {
        node = root.pointer(target.strip_prefix('#')?)?;
    }
    Some(
        node.get("properties")?
            .as_object()?
            .keys()
            .cloned()
            .collect(),
    )
}

/// `help: did you mean `x`?` for the closest candidate within edit distance 2 (or a third of
/// the word's length).
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<String> {
    kiln_base::diag::closest(word, candidates, 2).map(|c| format!("did you mean `{c}`?"))
}

/// `true` when `pattern` (with `*` wildcards) matches `text`.
fn glob(pattern: &str, text: &str) -> bool {
    let Some((head, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(mut t) = text.strip_prefix(head) else {
        return false;
    };
    let parts: Vec<&str> = rest.split('*').collect();
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return t.len() >= p.len() && t.ends_with(p);
        }
        match t.find(p) {
            Some(at) => t = &t[at + p.len()..],
            None => return false,
        }
    }
    true
}

/// References across the validated set: duplicates, Stage → Warehouse/upstream Stage,
/// cycles, ProjectConfig, `argocd-update` → Application and its authorization.
fn references(objects: &[Object<'_>], docs: &[Document], out: &mut Vec<RawFinding>) {
    // Kargo and Argo CD objects each live in one control plane, and a Kargo Project adopts
    // the Namespace of its own name: those are compared across the whole set (`None`). Any
    // other object is deployed by the Application of its own directory (one environment,
    // cluster and destination namespace), so the same Deployment in `web/dev/frontend/` and
    // `web/prod/frontend/` is no duplicate: those are compared within their directory.
    let projects: BTreeSet<&str> = objects
        .iter()
        .filter(|o| o.reads_as(KARGO_GROUP, "Project"))
        .map(|o| o.name)
        .collect();
    let scope = |o: &Object<'_>| -> Option<&str> {
        let control_plane = o.gvk.group == KARGO_GROUP
            || o.gvk.group == ARGOCD_GROUP
            || (o.gvk.group.is_empty() && o.gvk.kind == "Namespace" && projects.contains(o.name));
        (!control_plane).then(|| docs[o.doc].file.rsplit_once('/').map_or("", |(dir, _)| dir))
    };
    let mut seen: BTreeSet<(Option<&str>, String, String, &str, &str)> = BTreeSet::new();
    for o in objects {
        let key = (
            scope(o),
            o.gvk.group.clone(),
            o.gvk.kind.clone(),
            o.namespace,
            o.name,
        );
        if seen.contains(&key) {
            out.push(RawFinding {
                rule: Rule::DuplicateObject,
                doc: o.doc,
                pointer: "/metadata/name".into(),
                at_key: false,
                message: format!(
                    "{} is defined more than once in namespace `{}`",
                    o.label(),
                    o.namespace
                ),
                help: None,
            });
        } else {
            seen.insert(key);
        }
    }
    let kargo = |kind: &'static str| {
        objects
            .iter()
            .filter(move |o| o.reads_as(KARGO_GROUP, kind))
    };
    let warehouses: BTreeSet<(&str, &str)> =
        kargo("Warehouse").map(|o| (o.namespace, o.name)).collect();
    // A real Stage wins over a mistyped kind read as one (`Stgae` beside a `Stage` of the
    // same name): the typo is reported on its own, and must not replace the real body.
    let mut stages: BTreeMap<(&str, &str), &Object<'_>> = BTreeMap::new();
    for o in kargo("Stage") {
        let entry = stages.entry((o.namespace, o.name)).or_insert(o);
        if entry.gvk.kind != "Stage" && o.gvk.kind == "Stage" {
            *entry = o;
        }
    }
    let origins = |stage: &Object<'_>| -> BTreeSet<(String, String)> {
        stage
            .value
            .pointer("/spec/requestedFreight")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|rf| {
                (
                    rf.pointer("/origin/kind")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    rf.pointer("/origin/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect()
    };
    let names_in = |ns: &str, set: &mut dyn Iterator<Item = (&str, &str)>| -> Vec<String> {
        set.filter(|(n, _)| *n == ns)
            .map(|(_, s)| s.to_string())
            .collect()
    };
    // Stage → Warehouse and upstream Stages; edges for the cycle check.
    let mut edges: BTreeMap<(&str, &str), Vec<(String, String)>> = BTreeMap::new();
    for s in stages.values() {
        let label = s.label();
        for (j, rf) in s
            .value
            .pointer("/spec/requestedFreight")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("/spec/requestedFreight/{j}");
            let kind = rf
                .pointer("/origin/kind")
                .and_then(Value::as_str)
                .unwrap_or("");
            let name = rf
                .pointer("/origin/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if kind == "Warehouse" && !name.is_empty() && !warehouses.contains(&(s.namespace, name))
            {
                let known = names_in(s.namespace, &mut warehouses.iter().copied());
                out.push(RawFinding {
                    rule: Rule::UnknownWarehouse,
                    doc: s.doc,
                    pointer: format!("{at}/origin/name"),
                    at_key: false,
                    message: format!("{label}: requests Freight from unknown Warehouse `{name}` in namespace `{}`", s.namespace),
                    help: did_you_mean(name, known.iter().map(String::as_str))
                        .or_else(|| Some(format!("define a Warehouse `{name}` in namespace `{}`", s.namespace))),
                });
            }
            let direct = rf.pointer("/sources/direct").and_then(Value::as_bool) == Some(true);
            let ups: Vec<&str> = rf
                .pointer("/sources/stages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if !direct && ups.is_empty() && rf.get("sources").is_some() {
                out.push(RawFinding {
                    rule: Rule::FreightSourceMissing,
                    doc: s.doc,
                    pointer: format!("{at}/sources"),
                    at_key: false,
                    message: format!("{label}: requested Freight has no source"),
                    help: Some(
                        "set `direct: true` (from the Warehouse) or `stages: [upstream]`".into(),
                    ),
                });
            }
            for (k, up) in ups.iter().enumerate() {
                let p = format!("{at}/sources/stages/{k}");
                match stages.get(&(s.namespace, *up)) {
                    None => {
                        let known: Vec<&str> = stages
                            .keys()
                            .filter(|(n, _)| *n == s.namespace)
                            .map(|(_, n)| *n)
                            .collect();
                        out.push(RawFinding {
                            rule: Rule::UnknownUpstreamStage,
                            doc: s.doc,
                            pointer: p,
                            at_key: false,
                            message: format!(
                                "{label}: unknown upstream Stage `{up}` in namespace `{}`",
                                s.namespace
                            ),
                            help: did_you_mean(up, known.into_iter()),
                        });
                    }
                    Some(upstream) => {
                        if !origins(upstream).contains(&(kind.to_string(), name.to_string())) {
                            out.push(RawFinding {
                                rule: Rule::UpstreamOriginMismatch,
                                doc: s.doc,
                                pointer: p.clone(),
                                at_key: false,
                                message: format!(
                                    "{label}: upstream Stage `{up}` does not request Freight from {kind} `{name}`"
                                ),
                                help: Some(format!("add `origin: {{kind: {kind}, name: {name}}}` to `{up}`'s requestedFreight")),
                            });
                        }
                        edges
                            .entry((s.namespace, s.name))
                            .or_default()
                            .push((up.to_string(), p.clone()));
                    }
                }
            }
        }
    }
    stage_cycles(&stages, &edges, out);
    // ProjectConfig.
    for pc in kargo("ProjectConfig") {
        if !pc.namespace.is_empty() && pc.name != pc.namespace {
            out.push(RawFinding {
                rule: Rule::ProjectConfigInvalid,
                doc: pc.doc,
                pointer: "/metadata/name".into(),
                at_key: false,
                message: format!(
                    "{}: a ProjectConfig must be named like its project namespace `{}`",
                    pc.label(),
                    pc.namespace
                ),
                help: Some(format!("rename it to `{}`", pc.namespace)),
            });
        }
        let any_stage = stages.keys().any(|(n, _)| *n == pc.namespace);
        for (i, p) in pc
            .value
            .pointer("/spec/promotionPolicies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(stage) = p["stage"].as_str()
                && any_stage
                && !stages.contains_key(&(pc.namespace, stage))
            {
                let known: Vec<&str> = stages
                    .keys()
                    .filter(|(n, _)| *n == pc.namespace)
                    .map(|(_, n)| *n)
                    .collect();
                out.push(RawFinding {
                    rule: Rule::ProjectConfigInvalid,
                    doc: pc.doc,
                    pointer: format!("/spec/promotionPolicies/{i}/stage"),
                    at_key: false,
                    message: format!(
                        "{}: promotion policy names unknown Stage `{stage}`",
                        pc.label()
                    ),
                    help: did_you_mean(stage, known.into_iter()),
                });
            }
        }
    }
    applications(objects, &stages, out);
}

fn stage_cycles(
    stages: &BTreeMap<(&str, &str), &Object<'_>>,
    edges: &BTreeMap<(&str, &str), Vec<(String, String)>>,
    out: &mut Vec<RawFinding>,
) {
    // Iterative DFS with colours; each cycle is reported once, at the edge that closes it.
    let mut state: BTreeMap<(&str, &str), u8> = BTreeMap::new();
    for &start in stages.keys() {
        if state.get(&start).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut stack: Vec<((&str, &str), usize)> = vec![(start, 0)];
        let mut path: Vec<(&str, &str)> = vec![start];
        state.insert(start, 1);
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let outgoing = edges.get(&node).map(Vec::as_slice).unwrap_or(&[]);
            if *next >= outgoing.len() {
                state.insert(node, 2);
                stack.pop();
                path.pop();
                continue;
            }
            let (up, pointer) = &outgoing[*next];
            *next += 1;
            let Some((&key, _)) = stages.get_key_value(&(node.0, up.as_str())) else {
                continue;
            };
            match state.get(&key).copied().unwrap_or(0) {
                0 => {
                    state.insert(key, 1);
                    stack.push((key, 0));
                    path.push(key);
                }
                1 => {
                    let from = path.iter().position(|p| *p == key).unwrap_or(0);
                    let mut names: Vec<&str> = path[from..].iter().map(|p| p.1).collect();
                    names.push(key.1);
                    let o = stages[&node];
                    out.push(RawFinding {
                        rule: Rule::StageCycle,
                        doc: o.doc,
                        pointer: pointer.clone(),
                        at_key: false,
                        message: format!(
                            "{}: Stages form a cycle through `sources.stages`: {}",
                            o.label(),
                            names
                                .iter()
                                .rev()
                                .map(|n| format!("`{n}`"))
                                .collect::<Vec<_>>()
                                .join(" → ")
                        ),
                        help: Some(
                            "Freight flows from a Warehouse down a DAG; remove one upstream edge"
                                .into(),
                        ),
                    });
                }
                _ => {}
            }
        }
    }
}

/// `argocd-update` targets exist and authorize the Stage; every Application's
/// `authorized-stage` names a Stage in the set (when the set has that project's Stages).
fn applications(
    objects: &[Object<'_>],
    stages: &BTreeMap<(&str, &str), &Object<'_>>,
    out: &mut Vec<RawFinding>,
) {
    let apps: BTreeMap<(&str, &str), &Object<'_>> = objects
        .iter()
        .filter(|o| o.reads_as(ARGOCD_GROUP, "Application"))
        .map(|o| ((o.namespace, o.name), o))
        .collect();
    for s in stages.values() {
        for (i, step) in s
            .value
            .pointer("/spec/promotionTemplate/spec/steps")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if step["uses"].as_str() != Some("argocd-update") {
                continue;
            }
            for (k, app) in step
                .pointer("/config/apps")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let Some(name) = app["name"].as_str().filter(|n| !is_expression(n)) else {
                    continue;
                };
                let ns = app["namespace"]
                    .as_str()
                    .unwrap_or(DEFAULT_ARGOCD_NAMESPACE);
                if is_expression(ns) || apps.is_empty() {
                    continue;
                }
                let pointer =
                    format!("/spec/promotionTemplate/spec/steps/{i}/config/apps/{k}/name");
                let wanted = format!("{}:{}", s.namespace, s.name);
                match apps.get(&(ns, name)) {
                    None => out.push(RawFinding {
                        rule: Rule::UnknownApplication,
                        doc: s.doc,
                        pointer,
                        at_key: false,
                        message: format!("{}: `argocd-update` names unknown Application `{name}` in namespace `{ns}`", s.label()),
                        help: did_you_mean(name, apps.keys().filter(|(n, _)| *n == ns).map(|(_, a)| *a)),
                    }),
                    Some(a) => {
                        let granted = a
                            .value
                            .pointer(&format!("/metadata/annotations/{}", esc(AUTHORIZED_STAGE)))
                            .and_then(Value::as_str);
                        if !granted.is_some_and(|g| glob(g, &wanted)) {
                            out.push(RawFinding {
                                rule: Rule::ApplicationNotAuthorized,
                                doc: s.doc,
                                pointer,
                                at_key: false,
                                message: format!(
                                    "{}: Argo CD Application `{name}` does not permit mutation by Kargo Stage `{}` in namespace `{}`",
                                    s.label(),
                                    s.name,
                                    s.namespace
                                ),
                                help: Some(format!("annotate the Application with `{AUTHORIZED_STAGE}: \"{wanted}\"`")),
                            });
                        }
                    }
                }
            }
        }
    }
    for a in apps.values() {
        let pointer = format!("/metadata/annotations/{}", esc(AUTHORIZED_STAGE));
        let Some(granted) = a.value.pointer(&pointer).and_then(Value::as_str) else {
            continue;
        };
        let Some((project, stage)) = granted.split_once(':') else {
            out.push(RawFinding {
                rule: Rule::ApplicationNotAuthorized,
                doc: a.doc,
                pointer,
                at_key: false,
                message: format!(
                    "{}: `{AUTHORIZED_STAGE}` must be `<project>:<stage>`, found `{granted}`",
                    a.label()
                ),
                help: None,
            });
            continue;
        };
        let project_stages: Vec<&str> = stages
            .keys()
            .filter(|(n, _)| *n == project)
            .map(|(_, s)| *s)
            .collect();
        if !project_stages.is_empty() && !stage.contains('*') && !project_stages.contains(&stage) {
            out.push(RawFinding {
                rule: Rule::ApplicationNotAuthorized,
                doc: a.doc,
                pointer,
                at_key: false,
                message: format!(
                    "{}: authorizes unknown Stage `{stage}` of project `{project}`",
                    a.label()
                ),
                help: did_you_mean(stage, project_stages.into_iter()),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_kargo_authorized_stage_patterns() {
        assert!(glob("shop:dev", "shop:dev"));
        assert!(glob("shop:*", "shop:dev"));
        assert!(glob("*:dev", "shop:dev"));
        assert!(!glob("shop:dev", "shop:prod"));
        assert!(!glob("shop:d*v", "shop:prod"));
    }

    #[test]
    fn did_you_mean_picks_the_closest_within_reach() {
        let c = ["git-clone", "git-push", "kustomize-build"];
        assert_eq!(
            did_you_mean("git-clon", c.into_iter()).as_deref(),
            Some("did you mean `git-clone`?")
        );
        assert_eq!(did_you_mean("helm-template", c.into_iter()), None);
    }

    #[test]
    fn expression_references_are_found_but_not_member_accesses() {
        let names: Vec<&str> = VAR_REF
            .captures_iter(" vars.srcRepo + task.vars.x + vars['a-b']")
            .map(|c| c.get(1).or(c.get(2)).unwrap().as_str())
            .collect();
        assert_eq!(names, ["srcRepo", "a-b"]);
        let outs: Vec<&str> = OUTPUT_REF
            .captures_iter(" outputs.push.commit + outputs['update-image'].x + task.outputs.y")
            .map(|c| c.get(1).or(c.get(2)).unwrap().as_str())
            .collect();
        assert_eq!(outs, ["push", "update-image"]);
    }
}
