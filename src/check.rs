//! Offline validation of Kargo and Argo CD objects (`kiln validate`, and `kiln render
//! --schema-dir` on its own output).
//!
//! Where it sits: beside the pipeline. It reads YAML (files, or the in-memory
//! [`ArtifactSet`] that `emit` produced) and a schema directory, and returns a [`Report`]
//! of [`Finding`]s, each a miette diagnostic pointing at the file and line of the offending
//! node. Checks, in order:
//! 1. every object against its kind's schema (CRD `openAPIV3Schema`, strict: unknown fields
//!    are errors), and ObjectMeta rules (label values are strings, …);
//! 2. removed and renamed Kargo fields (`fromFreight`, `semverConstraint`, `Project.spec`, …),
//!    with the replacement in `help`, even without a schema directory;
//! 3. each promotion step's `config` against Kargo's step schema, a `${{ … }}` string
//!    standing for a value of any type; step aliases (unique, not reserved); `vars.x` and
//!    `outputs.alias` references;
//! 4. each Warehouse subscription against the subscription schemas;
//! 5. references across the validated set: a Stage's Warehouse and upstream Stages, cycles,
//!    ProjectConfig policies, `argocd-update` targets and their `authorized-stage`.
//!
//! Invariant: validation never mutates its input and reports every finding of a run at once,
//! in document order, then by JSON pointer.

mod model;
mod rules;
/// The API groups whose objects this module checks (Kargo's and Argo CD's).
pub use rules::{ARGOCD_GROUP, KARGO_GROUP};
mod schemas;
mod semantics;

pub use schemas::{
    Gvk, KindSchema, SchemaSet, builtin_object_schema, crd_documents, expression_wildcard,
    is_expression, kube_to_json_schema, object_meta_schema,
};

use crate::artifact::ArtifactSet;
use crate::diag::{Loc, SourceFile};
use miette::{Diagnostic, LabeledSpan, SourceSpan};
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// Failures that stop validation before any object is checked (the findings about objects
/// are data in [`Report`], not errors).
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum CheckError {
    /// A schema file or directory could not be read.
    #[error("cannot read schema `{path}`")]
    #[diagnostic(
        code(kiln::check::schema_unreadable),
        help("pass a directory of CRD YAMLs or JSON Schemas")
    )]
    SchemaUnreadable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A schema file is not valid YAML/JSON, or not a valid schema.
    #[error("invalid schema `{path}`: {message}")]
    #[diagnostic(
        code(kiln::check::schema_invalid),
        help("schema files are used as they are; fix or remove the file")
    )]
    SchemaInvalid { path: String, message: String },
    /// An input file or directory could not be read.
    #[error("cannot read `{path}`")]
    #[diagnostic(code(kiln::check::input_unreadable))]
    InputUnreadable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// An input file is not valid YAML.
    #[error("invalid YAML in `{path}`: {message}")]
    #[diagnostic(code(kiln::check::input_yaml))]
    InputYaml { path: String, message: String },
}

/// What a finding is about; each rule has a stable diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// The object violates its kind's schema.
    SchemaViolation,
    /// The object's kind is one Kargo's or Argo CD's API group does not have, or a Kargo or
    /// Argo CD kind the schema directory does not define.
    UnknownKind,
    /// A field Kargo removed or renamed.
    RemovedField,
    /// A field Kargo deprecated and that now breaks at run time.
    DeprecatedField,
    /// A promotion step that Kargo removed (`helm-update-image`).
    RemovedStep,
    /// A promotion step (`uses`) that no schema defines.
    UnknownStep,
    /// A step's `config` violates the step's schema.
    StepConfigInvalid,
    /// A step sets both or neither of `uses` and `task`.
    StepShapeInvalid,
    /// Two steps of one template share an alias.
    DuplicateStepAlias,
    /// A step alias matches Kargo's reserved `^(step|task)-\d+$`.
    ReservedStepAlias,
    /// An expression names a variable no `vars` entry defines.
    UndefinedVar,
    /// An expression reads `outputs` of an alias no earlier step has.
    UnknownStepOutput,
    /// A Warehouse subscription violates its schema, or has not exactly one type.
    SubscriptionInvalid,
    /// A semver constraint of a subscription does not parse.
    ConstraintInvalid,
    /// A Stage requests Freight from a Warehouse not in the validated set.
    UnknownWarehouse,
    /// A Stage names an upstream Stage not in the validated set.
    UnknownUpstreamStage,
    /// An upstream Stage does not request Freight from the same origin.
    UpstreamOriginMismatch,
    /// `requestedFreight[].sources` has neither `direct: true` nor `stages`.
    FreightSourceMissing,
    /// Stages form a cycle through `sources.stages`.
    StageCycle,
    /// A ProjectConfig is not named like its namespace, or a policy names an unknown Stage.
    ProjectConfigInvalid,
    /// `argocd-update` names an Application not in the validated set.
    UnknownApplication,
    /// An Application's `kargo.akuity.io/authorized-stage` does not authorize the Stage that
    /// updates it, or names a Stage not in the validated set.
    ApplicationNotAuthorized,
    /// Two objects share group, kind, namespace and name.
    DuplicateObject,
    /// Stages share a write (repository, branch) and `argocd-update` checks
    /// `desiredRevision` against an Application tracking the branch head.
    SharedBranchRevision,
    /// A Digest image subscription whose `constraint` is not a tag.
    DigestConstraintNotTag,
    /// `argocd-update` names an Application that does not track what the Stage writes.
    ApplicationSourceMismatch,
    /// A Kargo expression (`${{`) inside a rendered manifest, deployed as text.
    ExpressionInManifest,
    /// A container's `image` holds whitespace: no registry serves such a reference.
    InvalidImageReference,
}

impl Rule {
    /// The short label drawn under the offending node.
    pub fn label(self) -> &'static str {
        match self {
            Rule::SchemaViolation => "does not match the schema",
            Rule::UnknownKind => "unknown kind",
            Rule::RemovedField => "removed field",
            Rule::DeprecatedField => "deprecated field",
            Rule::RemovedStep => "removed step",
            Rule::UnknownStep => "unknown step",
            Rule::StepConfigInvalid => "invalid step config",
            Rule::StepShapeInvalid => "invalid step",
            Rule::DuplicateStepAlias => "duplicate alias",
            Rule::ReservedStepAlias => "reserved alias",
            Rule::UndefinedVar => "undefined variable",
            Rule::UnknownStepOutput => "unknown step output",
            Rule::SubscriptionInvalid => "invalid subscription",
            Rule::ConstraintInvalid => "invalid constraint",
            Rule::UnknownWarehouse => "unknown Warehouse",
            Rule::UnknownUpstreamStage => "unknown Stage",
            Rule::UpstreamOriginMismatch => "origin not requested upstream",
            Rule::FreightSourceMissing => "no Freight source",
            Rule::StageCycle => "closes a cycle",
            Rule::ProjectConfigInvalid => "invalid ProjectConfig",
            Rule::UnknownApplication => "unknown Application",
            Rule::ApplicationNotAuthorized => "not authorized",
            Rule::DuplicateObject => "duplicate",
            Rule::SharedBranchRevision => "revision check fails on a shared branch",
            Rule::DigestConstraintNotTag => "not a tag",
            Rule::ApplicationSourceMismatch => "does not track what the Stage writes",
            Rule::ExpressionInManifest => "Kargo expression in a manifest",
            Rule::InvalidImageReference => "invalid image reference",
        }
    }

    /// The stable code, e.g. `kiln::check::removed_field`.
    pub fn code(self) -> &'static str {
        match self {
            Rule::SchemaViolation => "kiln::check::schema_violation",
            Rule::UnknownKind => "kiln::check::unknown_kind",
            Rule::RemovedField => "kiln::check::removed_field",
            Rule::DeprecatedField => "kiln::check::deprecated_field",
            Rule::RemovedStep => "kiln::check::removed_step",
            Rule::UnknownStep => "kiln::check::unknown_step",
            Rule::StepConfigInvalid => "kiln::check::step_config_invalid",
            Rule::StepShapeInvalid => "kiln::check::step_shape_invalid",
            Rule::DuplicateStepAlias => "kiln::check::duplicate_step_alias",
            Rule::ReservedStepAlias => "kiln::check::reserved_step_alias",
            Rule::UndefinedVar => "kiln::check::undefined_var",
            Rule::UnknownStepOutput => "kiln::check::unknown_step_output",
            Rule::SubscriptionInvalid => "kiln::check::subscription_invalid",
            Rule::ConstraintInvalid => "kiln::check::constraint_invalid",
            Rule::UnknownWarehouse => "kiln::check::unknown_warehouse",
            Rule::UnknownUpstreamStage => "kiln::check::unknown_upstream_stage",
            Rule::UpstreamOriginMismatch => "kiln::check::upstream_origin_mismatch",
            Rule::FreightSourceMissing => "kiln::check::freight_source_missing",
            Rule::StageCycle => "kiln::check::stage_cycle",
            Rule::ProjectConfigInvalid => "kiln::check::project_config_invalid",
            Rule::UnknownApplication => "kiln::check::unknown_application",
            Rule::ApplicationNotAuthorized => "kiln::check::application_not_authorized",
            Rule::DuplicateObject => "kiln::check::duplicate_object",
            Rule::SharedBranchRevision => "kiln::check::shared_branch_revision",
            Rule::DigestConstraintNotTag => "kiln::check::digest_constraint_not_tag",
            Rule::ApplicationSourceMismatch => "kiln::check::application_source_mismatch",
            Rule::ExpressionInManifest => "kiln::check::expression_in_manifest",
            Rule::InvalidImageReference => "kiln::check::invalid_image_reference",
        }
    }
}

/// One problem found in one object: a miette diagnostic with the file, line and column of the
/// node it is about (the key for an unknown or removed field, the value otherwise).
#[derive(Debug, Clone)]
pub struct Finding {
    /// What kind of problem.
    pub rule: Rule,
    /// Lower-case sentence naming the object and the problem.
    pub message: String,
    /// The fix, when there is one.
    pub help: Option<String>,
    /// Where: the file as shown to the user (or the artifact path), the 0-based YAML document
    /// in it, the JSON Pointer of the node (`/spec/requestedFreight/0`), and its 1-based line
    /// and column when the source text is known and the node was found in it (0 otherwise).
    pub at: Loc<String>,
    source: Option<kiln_base::diag::Excerpt>,
    span: Option<SourceSpan>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Finding {}

impl Diagnostic for Finding {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.rule.code()))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        let label = self.rule.label().to_string();
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(label),
            span,
        ))))
    }
}

/// `kiln validate -o json`: one object per finding, the fields of the text diagnostic.
impl serde::Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut f = s.serialize_struct("Finding", 9)?;
        f.serialize_field("code", self.rule.code())?;
        f.serialize_field("message", &self.message)?;
        f.serialize_field("help", &self.help)?;
        let known = |n: usize| (self.at.line > 0).then_some(n);
        f.serialize_field("file", &self.at.file)?;
        f.serialize_field("document", &self.at.doc)?;
        f.serialize_field("pointer", &self.at.pointer)?;
        f.serialize_field("line", &known(self.at.line))?;
        f.serialize_field("column", &known(self.at.column))?;
        f.serialize_field("location", &self.location())?;
        f.end()
    }
}

impl Finding {
    /// `file:line:column` (or `file` plus the JSON pointer when the line is unknown).
    pub fn location(&self) -> String {
        if self.at.line > 0 {
            self.at.position()
        } else {
            format!("{}#{}{}", self.at.file, self.at.doc, self.at.pointer)
        }
    }
}

/// The outcome of a validation run.
#[derive(Debug, Default)]
pub struct Report {
    /// Every finding, in document order.
    pub findings: Vec<Finding>,
    /// Kargo and Argo CD objects checked against a schema: a CRD of the schema directory,
    /// else kiln's typed model of the kind (a kind the directory lacks is a finding).
    pub objects: usize,
    /// Kargo and Argo CD objects of kinds with no schema at all (no CRD given, not in kiln's
    /// model): checked for ObjectMeta only.
    pub meta_only: usize,
    /// Objects of other API groups (`apps/v1` Deployment, `v1` Namespace…): this check
    /// reads only their ObjectMeta; the Kubernetes validation ([`crate::conform`]) checks
    /// them against the API schemas. Not in [`Report::summary`].
    pub others: usize,
}

/// `kiln validate -o json`: `clean`, the summary line, the counts and every finding.
impl serde::Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut r = s.serialize_struct("Report", 5)?;
        r.serialize_field("clean", &self.is_clean())?;
        r.serialize_field("summary", &self.summary())?;
        r.serialize_field("objects", &self.objects)?;
        r.serialize_field("metaOnly", &self.meta_only)?;
        r.serialize_field("findings", &self.findings)?;
        r.end()
    }
}

impl Report {
    /// `true` when nothing was found.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// One line for the end of a run, counting the Kargo and Argo CD objects this check
    /// owns, e.g. `2 problems in 116 objects checked against their Kargo and Argo CD schemas
    /// (3 of kinds with no schema, checked for metadata only)`.
    pub fn summary(&self) -> String {
        let head = match self.findings.len() {
            0 => "no problems".to_string(),
            1 => "1 problem".to_string(),
            n => format!("{n} problems"),
        };
        let objects = if self.objects == 1 {
            "object"
        } else {
            "objects"
        };
        let head = format!(
            "{head} in {} {objects} checked against their Kargo and Argo CD schemas",
            self.objects
        );
        if self.meta_only > 0 {
            format!(
                "{head} ({} of kinds with no schema, checked for metadata only)",
                self.meta_only
            )
        } else {
            head
        }
    }
}

/// One YAML document to validate.
#[derive(Debug, Clone)]
pub struct Document {
    /// File as shown in findings.
    pub file: String,
    /// 0-based index among the file's non-empty documents.
    pub index: usize,
    /// The parsed document.
    pub value: Value,
    /// The whole file, to point at lines; `None` for values built in memory.
    pub source: Option<SourceFile>,
}

/// Parses a YAML stream (Kubernetes typing, [`crate::yaml::parse_stream`]) into documents,
/// keeping the text for line lookups.
///
/// Errors: [`CheckError::InputYaml`].
pub fn parse_documents(file: &str, text: &str) -> Result<Vec<Document>, CheckError> {
    let values = crate::yaml::parse_stream(file, text).map_err(|e| CheckError::InputYaml {
        path: file.into(),
        message: match e.line {
            Some(l) => format!("line {l}: {}", e.message),
            None => e.message,
        },
    })?;
    let source = SourceFile::new(file, text);
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(index, value)| Document {
            file: file.to_string(),
            index,
            value,
            source: Some(source.clone()),
        })
        .collect())
}

/// Parses a YAML stream into JSON values (for schema files).
pub(crate) fn parse_yaml_values(file: &str, text: &str) -> Result<Vec<Value>, String> {
    crate::yaml::parse_stream(file, text).map_err(|e| e.message)
}

/// Validates YAML files (or directories of them, recursively, `*.yaml`/`*.yml`, sorted)
/// against the schemas under `schema_dir` ([`SchemaSet::load`]) and kiln's rules.
///
/// Errors: unreadable inputs or schemas, invalid YAML. Problems in objects are
/// [`Report::findings`].
pub fn validate_paths(
    fs: std::sync::Arc<dyn crate::fs::FileSystem>,
    paths: &[PathBuf],
    schema_dir: &Path,
) -> Result<Report, CheckError> {
    let schemas = SchemaSet::load(fs.clone(), schema_dir)?;
    validate_paths_with(fs.as_ref(), paths, &schemas)
}

/// [`validate_paths`] with schemas already loaded (or [`SchemaSet::empty`]).
pub fn validate_paths_with(
    fs: &dyn crate::fs::FileSystem,
    paths: &[PathBuf],
    schemas: &SchemaSet,
) -> Result<Report, CheckError> {
    let mut files = Vec::new();
    for p in paths {
        collect_yaml_files(fs, p, &mut files)?;
    }
    let mut docs = Vec::new();
    for f in files {
        let text = fs
            .read_to_string(&f)
            .map_err(|source| CheckError::InputUnreadable {
                path: f.display().to_string(),
                source,
            })?;
        docs.extend(parse_documents(&f.display().to_string(), &text)?);
    }
    validate_documents(&docs, schemas)
}

/// Validates the YAML files of an artifact set (`kiln render --schema-dir`): every path
/// ending in `.yaml`/`.yml`; findings name the artifact path.
pub fn validate_artifacts(set: &ArtifactSet, schemas: &SchemaSet) -> Result<Report, CheckError> {
    let mut docs = Vec::new();
    for (path, bytes) in &set.files {
        if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        docs.extend(parse_documents(path, &text)?);
    }
    validate_documents(&docs, schemas)
}

/// Validates documents against `schemas` and kiln's rules (see the module docs for the list).
///
/// Errors: only a kubeconform-style JSON Schema that fails to compile on first use.
pub fn validate_documents(docs: &[Document], schemas: &SchemaSet) -> Result<Report, CheckError> {
    let outcome = rules::run(docs, schemas)?;
    let mut findings: Vec<Finding> = outcome.raw.into_iter().map(|r| resolve(docs, r)).collect();
    findings.sort_by(|a, b| {
        (&a.at.file, a.at.doc, a.at.line, &a.at.pointer, a.rule).cmp(&(
            &b.at.file,
            b.at.doc,
            b.at.line,
            &b.at.pointer,
            b.rule,
        ))
    });
    Ok(Report {
        findings,
        objects: outcome.objects,
        meta_only: outcome.meta_only,
        others: outcome.others,
    })
}

/// A finding before its position in the source is looked up.
#[derive(Debug, Clone)]
pub(crate) struct RawFinding {
    pub rule: Rule,
    /// Index into the validated documents.
    pub doc: usize,
    pub pointer: String,
    /// Point at the key (unknown/removed fields) rather than the value.
    pub at_key: bool,
    pub message: String,
    pub help: Option<String>,
}

fn resolve(docs: &[Document], raw: RawFinding) -> Finding {
    let doc = &docs[raw.doc];
    let mut finding = Finding {
        rule: raw.rule,
        message: raw.message,
        help: raw.help,
        at: Loc {
            doc: doc.index,
            key: raw.at_key,
            ..Loc::new(doc.file.clone(), raw.pointer)
        },
        source: None,
        span: None,
    };
    if let Some(source) = &doc.source
        && let Some(pos) = source.locate(doc.index, &finding.at.pointer, raw.at_key)
    {
        finding.at = finding.at.found_at(Some(pos));
        finding.span = Some(pos.span());
        // The lines around the node, not the whole file: miette scans a source from its
        // start, once per finding (issue 36, a 50 MB stream).
        finding.source = Some(source.excerpt(&pos));
    }
    finding
}

fn collect_yaml_files(
    fs: &dyn crate::fs::FileSystem,
    p: &Path,
    out: &mut Vec<PathBuf>,
) -> Result<(), CheckError> {
    let unreadable = |source| CheckError::InputUnreadable {
        path: p.display().to_string(),
        source,
    };
    if fs.is_file(p) {
        out.push(p.to_path_buf());
        return Ok(());
    }
    let mut entries = fs.read_dir(p).map_err(unreadable)?;
    entries.sort();
    for e in entries {
        let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if fs.is_dir(&e) {
            collect_yaml_files(fs, &e, out)?;
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(text: &str) -> Vec<Finding> {
        let docs = parse_documents("t.yaml", text).unwrap();
        validate_documents(&docs, &SchemaSet::empty())
            .unwrap()
            .findings
    }

    #[test]
    fn container_images_with_whitespace_are_reported() {
        let f = findings(
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: j}\nspec:\n  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n          initContainers: [{name: i, image: 'ghcr.io/acme/api:1.0.0'}]\n          containers: [{name: c, image: 'ghcr.io/acme/api:1.0.0 bad'}]\n",
        );
        let bad: Vec<&Finding> = f
            .iter()
            .filter(|f| f.rule == Rule::InvalidImageReference)
            .collect();
        assert_eq!(bad.len(), 1, "{f:?}");
        assert_eq!(
            bad[0].at.pointer,
            "/spec/jobTemplate/spec/template/spec/containers/0/image"
        );
        assert_eq!(bad[0].at.line, 12);
        assert!(bad[0].message.contains("1.0.0 bad"), "{}", bad[0].message);
    }

    #[test]
    fn same_workload_in_two_environment_directories_is_no_duplicate() {
        let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n";
        let namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n";
        let project =
            "apiVersion: kargo.akuity.io/v1alpha1\nkind: Project\nmetadata: {name: shop}\n";
        let mut docs = Vec::new();
        for (file, text) in [
            ("shop/dev/web/web.gen.yaml", deployment),
            ("shop/prod/web/web.gen.yaml", deployment),
            // The component ships the Namespace its Kargo Project adopts: one object, twice.
            ("shop/dev/ns/ns.gen.yaml", namespace),
            (
                "shop/kargo/project.yaml",
                &format!("{namespace}---\n{project}"),
            ),
        ] {
            docs.extend(parse_documents(file, text).unwrap());
        }
        let dups = |docs: &[Document]| -> Vec<String> {
            validate_documents(docs, &SchemaSet::empty())
                .unwrap()
                .findings
                .into_iter()
                .filter(|f| f.rule == Rule::DuplicateObject)
                .map(|f| f.at.file)
                .collect()
        };
        assert_eq!(dups(&docs), ["shop/kargo/project.yaml"]);
        // Within one directory (one Application) a repeated object is still a duplicate.
        docs.extend(parse_documents("shop/dev/web/extra.yaml", deployment).unwrap());
        assert_eq!(
            dups(&docs),
            ["shop/dev/web/extra.yaml", "shop/kargo/project.yaml"]
        );
    }

    const PIPELINE: &str = "\
apiVersion: kargo.akuity.io/v1alpha1
kind: Warehouse
metadata: {name: api, namespace: shop}
spec:
  subscriptions:
  - image: {repoURL: ghcr.io/x/api, constraint: '^1.x.y'}
---
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata: {name: dev, namespace: shop}
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: api}
    sources: {direct: true}
---
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata: {name: test, namespace: shop}
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: apis}
    sources: {stages: [prod]}
---
apiVersion: kargo.akuity.io/v1alpha1
kind: Stage
metadata: {name: prod, namespace: shop}
spec:
  requestedFreight:
  - origin: {kind: Warehouse, name: api}
    sources: {stages: [test]}
  promotionTemplate:
    spec:
      steps:
      - uses: argocd-update
        as: step-3
        config:
          apps:
          - name: shop-prod
            sources:
            - repoURL: https://x
              desiredRevision: ${{ outputs.push.commit }}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop-prod
  namespace: argocd
  annotations: {kargo.akuity.io/authorized-stage: 'shop:dev'}
spec: {}
";

    #[test]
    fn references_across_the_set_are_checked() {
        let f = findings(PIPELINE);
        let rules: Vec<Rule> = f.iter().map(|f| f.rule).collect();
        for expected in [
            Rule::ConstraintInvalid,
            Rule::UnknownWarehouse,
            Rule::UpstreamOriginMismatch,
            Rule::StageCycle,
            Rule::ReservedStepAlias,
            Rule::UnknownStepOutput,
            Rule::ApplicationNotAuthorized,
        ] {
            assert!(
                rules.contains(&expected),
                "{expected:?} missing from {rules:?}"
            );
        }
        let unknown = f.iter().find(|f| f.rule == Rule::UnknownWarehouse).unwrap();
        assert_eq!(unknown.at.line, 21);
        assert_eq!(unknown.help.as_deref(), Some("did you mean `api`?"));
        let cycle = f.iter().find(|f| f.rule == Rule::StageCycle).unwrap();
        assert!(
            cycle.message.contains("`prod` → `test` → `prod`")
                || cycle.message.contains("`test` → `prod` → `test`"),
            "{}",
            cycle.message
        );
    }

    /// newcomer3's repro 09: `kind: Stgae` in Kargo's group counted as a kind with no schema
    /// ("metadata only"); the only findings were its knock-ons (an Application authorizing an
    /// unknown Stage, with a did-you-mean naming another Stage).
    #[test]
    fn unknown_kinds_of_kargo_and_argo_cd_are_named_once() {
        let text = "apiVersion: kargo.akuity.io/v1alpha1\nkind: Warehouse\nmetadata: {name: w, namespace: shop}\nspec:\n  subscriptions:\n  - image: {repoURL: nginx}\n---\napiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata: {name: dev, namespace: shop}\nspec:\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {direct: true}\n---\napiVersion: kargo.akuity.io/v1alpha1\nkind: Stgae\nmetadata: {name: test, namespace: shop}\nspec:\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {stages: [dev]}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop-test\n  namespace: argocd\n  annotations: {kargo.akuity.io/authorized-stage: 'shop:test'}\nspec:\n  project: default\n  source: {repoURL: 'https://x', path: p, targetRevision: HEAD}\n  destination: {server: 'https://kubernetes.default.svc', namespace: shop}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Applicaton\nmetadata: {name: a, namespace: argocd}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, namespace: shop}\n---\napiVersion: kargo.akuity.io/v1alpha1\nkind: Whatever\nmetadata: {name: x, namespace: shop}\n";
        let docs = parse_documents("t.yaml", text).unwrap();
        let report = validate_documents(&docs, &SchemaSet::empty()).unwrap();
        let f = &report.findings;
        let shown: Vec<(Rule, usize, &str, Option<&str>)> = f
            .iter()
            .map(|f| (f.rule, f.at.line, f.message.as_str(), f.help.as_deref()))
            .collect();
        assert_eq!(f.len(), 3, "{shown:#?}");
        assert!(f.iter().all(|f| f.rule == Rule::UnknownKind), "{shown:#?}");
        let (stage, app, other) = (&f[0], &f[1], &f[2]);
        assert_eq!(stage.at.line, 17);
        assert_eq!(
            stage.message,
            "`test`: unknown kind `Stgae` in API group `kargo.akuity.io`"
        );
        let help = |f: &Finding| f.help.clone().unwrap_or_default();
        assert!(
            help(stage).starts_with("did you mean `Stage`?"),
            "{shown:#?}"
        );
        assert!(
            help(app).starts_with("did you mean `Application`?"),
            "{shown:#?}"
        );
        assert!(
            help(other).starts_with("Kargo's kinds are ClusterConfig"),
            "{shown:#?}"
        );
        // Another Argo project's kind (Rollouts) is no typo of Argo CD's.
        assert_eq!(report.meta_only, 1);
    }

    /// A mistyped kind read as the kind it meant never replaces a real object of that kind
    /// and name: the real Stage's `requestedFreight` is the one checked.
    #[test]
    fn a_mistyped_kind_does_not_shadow_the_real_object() {
        let text = "apiVersion: kargo.akuity.io/v1alpha1\nkind: Warehouse\nmetadata: {name: w, namespace: shop}\nspec:\n  subscriptions:\n  - image: {repoURL: nginx}\n---\napiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata: {name: dev, namespace: shop}\nspec:\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {direct: true}\n---\napiVersion: kargo.akuity.io/v1alpha1\nkind: Stgae\nmetadata: {name: dev, namespace: shop}\nspec:\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {stages: [dev]}\n";
        let docs = parse_documents("t.yaml", text).unwrap();
        let report = validate_documents(&docs, &SchemaSet::empty()).unwrap();
        let rules: Vec<Rule> = report.findings.iter().map(|f| f.rule).collect();
        // The typo's body (a Stage fed by itself) would be a cycle had it replaced the real one.
        assert_eq!(rules, [Rule::UnknownKind], "{:#?}", report.findings);
    }

    #[test]
    fn artifact_sets_are_validated_like_files() {
        let mut set = ArtifactSet::new();
        set.insert("shop/kargo/x.yaml", PIPELINE.as_bytes().to_vec());
        set.insert("shop/README.md", b"not yaml: [".to_vec());
        let report = validate_artifacts(&set, &SchemaSet::empty()).unwrap();
        assert!(!report.is_clean());
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.at.file == "shop/kargo/x.yaml")
        );
        // A clean set of one valid object.
        let mut ok = ArtifactSet::new();
        ok.insert("ns.yaml", b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels:\n    kargo.akuity.io/project: \"true\"\n".to_vec());
        let report = validate_artifacts(&ok, &SchemaSet::empty()).unwrap();
        assert!(report.is_clean(), "{:?}", report.findings);
        // A Namespace is the Kubernetes validation's to check, not counted here.
        assert_eq!((report.objects, report.meta_only, report.others), (0, 0, 1));
        assert_eq!(
            report.summary(),
            "no problems in 0 objects checked against their Kargo and Argo CD schemas"
        );
    }

    /// Issue 36: Kargo and Argo CD objects checked against kiln's model count as checked,
    /// not as "metadata only"; a kind of their groups with no schema does; other kinds are
    /// the Kubernetes validation's.
    #[test]
    fn objects_are_counted_by_what_checked_them() {
        let text = "apiVersion: kargo.akuity.io/v1alpha1\nkind: Warehouse\nmetadata: {name: w, namespace: n}\nspec:\n  subscriptions:\n  - image: {repoURL: nginx}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec:\n  project: default\n  source: {repoURL: 'https://x', path: p, targetRevision: HEAD}\n  destination: {server: 'https://kubernetes.default.svc', namespace: n}\n---\napiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r, namespace: n}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: n}\n";
        let docs = parse_documents("t.yaml", text).unwrap();
        let report = validate_documents(&docs, &SchemaSet::empty()).unwrap();
        assert!(report.is_clean(), "{:?}", report.findings);
        assert_eq!((report.objects, report.meta_only, report.others), (2, 1, 1));
        assert_eq!(
            report.summary(),
            "no problems in 2 objects checked against their Kargo and Argo CD schemas (1 of kinds with no schema, checked for metadata only)"
        );
    }

    #[test]
    fn removed_and_deprecated_fields_name_their_replacement() {
        let text = "\
apiVersion: kargo.akuity.io/v1alpha1
kind: Project
metadata: {name: shop}
spec:
  promotionPolicies: []
---
apiVersion: kargo.akuity.io/v1alpha1
kind: Warehouse
metadata: {name: api, namespace: shop}
spec:
  subscriptions:
  - image: {repoURL: ghcr.io/x/api, semverConstraint: ^1.0.0, allowTags: '^v1'}
---
apiVersion: kargo.akuity.io/v1alpha1
kind: PromotionTask
metadata: {name: t, namespace: shop}
spec:
  steps:
  - uses: git-wait-for-pr
    config: {prNumberFromStep: open-pr}
";
        let f = findings(text);
        let help = |needle: &str| {
            f.iter()
                .find(|f| f.message.contains(needle))
                .and_then(|f| f.help.clone())
                .unwrap_or_else(|| panic!("no finding about {needle}: {f:#?}"))
        };
        assert!(help("`spec` was removed from Project").contains("ProjectConfig"));
        assert!(help("`semverConstraint`").contains("`constraint`"));
        assert!(help("`allowTags`").contains("allowTagsRegexes"));
        assert!(help("`prNumberFromStep`").contains("`prNumber`"));
        let lines: Vec<usize> = f.iter().map(|f| f.at.line).filter(|&l| l > 0).collect();
        assert_eq!(lines, [4, 12, 12, 20], "{f:#?}");
    }

    #[test]
    fn unquoted_true_label_is_reported_with_a_quoting_help() {
        let f = findings(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels:\n    kargo.akuity.io/project: true\n",
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].at.line, 6);
        assert_eq!(f[0].help.as_deref(), Some("quote the value: \"true\""));
    }

    /// newcomer5's repro 18: an unknown field of a kind kiln models has the closest known
    /// field as its help, as the README promises.
    #[test]
    fn an_unknown_field_suggests_the_known_one() {
        let f = findings(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: x}\n  source: {repoURL: https://git.example.com/x.git, path: ., targetRevison: main}\n",
        );
        let typo = f
            .iter()
            .find(|f| f.message.contains("unknown field `targetRevison`"))
            .unwrap_or_else(|| panic!("{f:#?}"));
        assert!(
            typo.help
                .as_deref()
                .is_some_and(|h| h.starts_with("did you mean `targetRevision`?")),
            "{typo:#?}"
        );
    }

    /// newcomer5's repro 17: a step `uses` no Kargo v1.11 runner has (a typo) is found, with
    /// the closest step's name, even where kiln's model does not check that step's `config`.
    #[test]
    fn an_unknown_step_name_is_found_without_step_schemas() {
        let stage = |uses: &str| {
            format!(
                "apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata: {{name: s, namespace: p}}\nspec:\n  requestedFreight:\n  - origin: {{kind: Warehouse, name: w}}\n    sources: {{direct: true}}\n  promotionTemplate:\n    spec:\n      steps:\n      - uses: {uses}\n        config: {{}}\n"
            )
        };
        let unknown = |f: &[Finding]| {
            f.iter()
                .find(|f| f.rule == Rule::UnknownStep)
                .map(|f| (f.at.line, f.message.clone(), f.help.clone()))
        };
        let (line, message, help) = unknown(&findings(&stage("git-clon"))).expect("found");
        assert_eq!(line, 11);
        assert!(
            message.contains("unknown promotion step `git-clon`"),
            "{message}"
        );
        assert_eq!(help.as_deref(), Some("did you mean `git-clone`?"));
        // A step of Kargo's that the model does not check passes.
        assert_eq!(unknown(&findings(&stage("http"))), None);
    }
}
