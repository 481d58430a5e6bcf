//! conform: every rendered object validated as the Kubernetes API server would (issue 36),
//! after emit and before write, with `kiln-k8s` (ADRs 0020, 0021): built-in kinds against
//! the schemas of their cluster's Kubernetes version (`clusters[].kubeVersion`, default
//! [`kiln_k8s::builtin::DEFAULT_VERSION`]), custom resources against the CRDs the platform
//! renders plus those named in `spec.validation.crds`, and the conflicts between Argo CD
//! Applications. Errors stop the write; the rules named in `spec.validation.warn` (and kinds
//! with no schema, unless `--strict`) are warnings.
//!
//! Each finding names the rendered file, the object and the field, with the file's line
//! (the span index of `kiln_base::diag`).

use crate::artifact::ArtifactSet;
use crate::diag::SourceFile;
use crate::evaluate::BuildPlan;
use crate::fs::FileSystem;
use crate::validate::Platform;
use kiln_k8s::conflict::{Placement, conflicts};
use kiln_k8s::{Code, Crds, Validator};
use miette::{Diagnostic, LabeledSpan, SourceCode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// One finding on one rendered object.
#[derive(Debug, Clone)]
pub struct Finding {
    pub code: Code,
    /// The rendered file (artifact path) and the 0-based document in it.
    pub file: String,
    pub document: usize,
    /// `Kind/namespace/name` of the object.
    pub object: String,
    /// JSON Pointer of the field inside the object.
    pub pointer: String,
    pub message: String,
    /// `true` when a platform turned the rule into a warning.
    pub warning: bool,
    source: Option<SourceFile>,
    named: Option<miette::NamedSource<String>>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = match &self.source {
            Some(s) => s.position(self.document, &self.pointer),
            None => self.file.clone(),
        };
        let field = if self.pointer.is_empty() {
            String::new()
        } else {
            format!(" at `{}`", self.pointer)
        };
        write!(f, "{at}: {}{field}: {}", self.object, self.message)
    }
}

impl std::error::Error for Finding {}

impl Diagnostic for Finding {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(format!("kiln::k8s::{}", self.code.as_str())))
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(if self.warning {
            miette::Severity::Warning
        } else {
            miette::Severity::Error
        })
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let text = match self.code {
            Code::WrongType => {
                "quote the value (`\"true\"`) where the field is a string; a `${params.x}` of another type inside a longer string, or a string parameter, gives one"
            }
            Code::UnknownField => {
                "the API server refuses unknown fields (strict field validation); check the spelling and the path of the patch that wrote it"
            }
            Code::SharedResource => {
                "give each instance its own name (namePrefix/nameSuffix) or namespace, or render the object in one component only"
            }
            Code::NoSchema => {
                "name the CRD in `spec.validation.crds`, or render it with the platform"
            }
            _ => {
                "fix the field in the source that renders it; `spec.validation.warn: [<rule>]` turns a rule into a warning"
            }
        };
        Some(Box::new(text))
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.named.as_ref().map(|s| s as &dyn SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let source = self.source.as_ref()?;
        let key = self.code == Code::UnknownField;
        let span = source.span(self.document, &self.pointer, key)?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some("here".to_string()),
            span,
        ))))
    }
}

/// What conform found in one render or one `kiln validate`.
#[derive(Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// `group/version Kind` with no schema → how many objects.
    pub unvalidated: BTreeMap<String, usize>,
    /// CEL rules not evaluated (transition rules, functions cel-rust lacks).
    pub skipped_rules: usize,
    /// Kubernetes objects looked at ([`validate_files`]; `kiln validate`'s summary counts
    /// them), the unvalidated ones included.
    pub objects: usize,
}

impl Report {
    pub fn errors(&self) -> Vec<Finding> {
        self.findings
            .iter()
            .filter(|f| !f.warning)
            .cloned()
            .collect()
    }

    /// The warnings, as lines for stderr (the unvalidated kinds first, counted).
    pub fn warning_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.unvalidated.is_empty() {
            let kinds: Vec<String> = self
                .unvalidated
                .iter()
                .map(|(k, n)| format!("{k} ({n})"))
                .collect();
            out.push(format!(
                "warning: not validated: {} kinds with no schema: {}",
                kinds.len(),
                kinds.join(", ")
            ));
        }
        out.extend(
            self.findings
                .iter()
                .filter(|f| f.warning)
                .map(|f| format!("warning[kiln::k8s::{}]: {f}", f.code.as_str())),
        );
        out
    }
}

/// How conform runs: which rules are warnings, and whether a kind with no schema is an error.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub warn: Vec<Code>,
    pub strict: bool,
}

impl Options {
    fn is_warning(&self, code: Code) -> bool {
        self.warn.contains(&code)
    }
}

fn object_name(o: &Value) -> String {
    let kind = o["kind"].as_str().unwrap_or("?");
    let name = o["metadata"]["name"].as_str().unwrap_or("?");
    match o["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// A parsed rendered file: its text kept for spans.
struct Stream {
    file: String,
    source: SourceFile,
    docs: Vec<Value>,
}

fn parse(file: &str, bytes: &[u8]) -> Option<Stream> {
    let text = std::str::from_utf8(bytes).ok()?;
    let docs = crate::yaml::parse_stream(file, text).ok()?;
    Some(Stream {
        file: file.to_string(),
        source: SourceFile::new(file, text),
        docs,
    })
}

/// Validators per Kubernetes version, each with every CRD.
struct Validators {
    by_version: BTreeMap<&'static str, Validator>,
    crds: Vec<Value>,
}

impl Validators {
    fn get(&mut self, version: &str) -> Result<&Validator, String> {
        let v = Validator::new(version)?;
        let key = v.version();
        if !self.by_version.contains_key(key) {
            let mut v = v;
            for crd in &self.crds {
                // A CRD that does not compile is reported where it is rendered.
                let _ = v.crds.add(crd);
            }
            self.by_version.insert(key, v);
        }
        Ok(&self.by_version[key])
    }
}

/// Validates `streams` (each owned by a placement: Application, cluster, namespace and
/// Kubernetes version) into `report`.
fn run(
    streams: &[(Stream, Owner)],
    extra_crds: Vec<Value>,
    options: &Options,
) -> Result<Report, String> {
    let mut report = Report::default();
    let mut crds = extra_crds;
    let push = |report: &mut Report,
                code: Code,
                s: &Stream,
                doc: usize,
                object: String,
                pointer: String,
                message: String| {
        let warning = options.is_warning(code) || code == Code::NoSchema && !options.strict;
        report.findings.push(Finding {
            code,
            file: s.file.clone(),
            document: doc,
            object,
            pointer,
            message,
            warning,
            source: Some(s.source.clone()),
            named: Some(s.source.named_source()),
        });
    };
    for (s, _) in streams {
        for (i, doc) in s.docs.iter().enumerate().filter(|(_, d)| Crds::is_crd(d)) {
            for f in Crds::default().add(doc) {
                push(
                    &mut report,
                    f.code,
                    s,
                    i,
                    object_name(doc),
                    f.pointer,
                    f.message,
                );
            }
            crds.push(doc.clone());
        }
    }
    let mut validators = Validators {
        by_version: BTreeMap::new(),
        crds,
    };
    let mut placements_src = Vec::new();
    for (si, (s, owner)) in streams.iter().enumerate() {
        let validator = validators.get(&owner.kube_version)?;
        for (i, doc) in s.docs.iter().enumerate() {
            // An empty document, or one `kiln validate` found not to be a Kubernetes object.
            if doc.is_null() {
                continue;
            }
            let outcome = validator.validate(doc);
            for f in outcome.findings {
                push(
                    &mut report,
                    f.code,
                    s,
                    i,
                    object_name(doc),
                    f.pointer,
                    f.message,
                );
            }
            if let Some(kind) = outcome.unvalidated {
                if options.strict {
                    push(
                        &mut report,
                        Code::NoSchema,
                        s,
                        i,
                        object_name(doc),
                        String::new(),
                        format!("no schema for {kind}"),
                    );
                }
                *report.unvalidated.entry(kind).or_default() += 1;
            }
            report.skipped_rules += outcome.skipped_rules;
            let namespaced = validator.namespaced(
                doc["apiVersion"].as_str().unwrap_or_default(),
                doc["kind"].as_str().unwrap_or_default(),
            );
            placements_src.push((si, i, namespaced));
        }
    }
    if streams.iter().any(|(_, o)| o.application.is_some()) {
        let placements: Vec<Placement> = placements_src
            .iter()
            .filter_map(|&(si, i, namespaced)| {
                let (s, owner) = &streams[si];
                Some(Placement {
                    application: owner.application.as_deref()?,
                    cluster: &owner.cluster,
                    destination_namespace: owner.namespace.as_deref(),
                    object: &s.docs[i],
                    namespaced,
                })
            })
            .collect();
        let index: Vec<(usize, usize)> = placements_src
            .iter()
            .filter(|(si, _, _)| streams[*si].1.application.is_some())
            .map(|&(si, i, _)| (si, i))
            .collect();
        for c in conflicts(&placements) {
            let (si, i) = index[c.at];
            let s = &streams[si].0;
            push(
                &mut report,
                c.finding.code,
                s,
                i,
                object_name(&s.docs[i]),
                c.finding.pointer,
                c.finding.message,
            );
        }
    }
    Ok(report)
}

/// Who deploys a rendered file.
struct Owner {
    application: Option<String>,
    cluster: String,
    namespace: Option<String>,
    kube_version: String,
}

/// Validates the files each BuildPlan rendered (`files[i]` are plan `i`'s artifact paths),
/// with the CRDs of the whole set and of `spec.validation.crds` (read through `fs`).
pub fn validate_render(
    set: &ArtifactSet,
    platform: &Platform,
    plans: &[BuildPlan],
    files: &[Vec<String>],
    fs: &dyn FileSystem,
    strict: bool,
) -> Result<Report, String> {
    let options = Options {
        warn: platform
            .validation
            .warn
            .iter()
            .filter_map(|w| Code::parse(w))
            .collect(),
        strict,
    };
    if let Some(bad) = platform
        .validation
        .warn
        .iter()
        .find(|w| Code::parse(w).is_none())
    {
        let known: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        return Err(format!(
            "`spec.validation.warn` names no rule `{bad}`; the rules are {}",
            known.join(", ")
        ));
    }
    let mut extra = Vec::new();
    for path in &platform.validation.crds {
        let full = platform.dir.join(path);
        let bytes = fs
            .read(&full)
            .map_err(|e| format!("cannot read CRD file `{path}` (spec.validation.crds): {e}"))?;
        let stream = parse(path, &bytes).ok_or_else(|| format!("CRD file `{path}` is not YAML"))?;
        extra.extend(stream.docs.into_iter().filter(Crds::is_crd));
    }
    let mut streams = Vec::new();
    for (plan, paths) in plans.iter().zip(files) {
        let cluster = platform.clusters.iter().find(|c| c.name == plan.cluster);
        let kube_version = cluster
            .and_then(|c| c.kube_version.clone())
            .unwrap_or_else(|| kiln_k8s::builtin::DEFAULT_VERSION.to_string());
        // kiln's own kustomization.yaml beside each plan's manifests is for Kargo and Argo
        // CD to build, never applied itself.
        for path in paths.iter().filter(|p| !p.ends_with("kustomization.yaml")) {
            let Some(stream) = set.files.get(path).and_then(|b| parse(path, b)) else {
                continue;
            };
            let owner = Owner {
                application: Some(crate::kargo::naming::application_name(
                    &plan.project,
                    &plan.component,
                    &plan.environment,
                )),
                cluster: plan.cluster.clone(),
                namespace: Some(plan.namespace.clone()).filter(|n| !n.is_empty()),
                kube_version: kube_version.clone(),
            };
            streams.push((stream, owner));
        }
    }
    run(&streams, extra, &options)
}

/// `kiln validate PATHS…`: any manifests, as kubeconform takes them, for `kube_version`.
pub fn validate_files(
    files: &[(String, Vec<u8>)],
    kube_version: &str,
    options: &Options,
    checked_elsewhere: &[&str],
) -> Result<Report, String> {
    let streams: Vec<(Stream, Owner)> = files
        .iter()
        .filter_map(|(name, bytes)| parse(name, bytes))
        .map(|mut s| {
            // Any YAML in the paths given: a document with neither `apiVersion` nor `kind`
            // (a values file, a test expectation) is no Kubernetes object and is not checked,
            // as the Kargo and Argo CD half of `kiln validate` skips it. Its index is kept.
            // Objects of `checked_elsewhere` (API groups) are left to the check that owns them
            // (Kargo's and Argo CD's, `crate::check`), not counted as unvalidated here.
            for d in &mut s.docs {
                let group = d
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .and_then(|v| v.split_once('/'))
                    .map(|(g, _)| g);
                if d.get("apiVersion").is_none() && d.get("kind").is_none()
                    || group.is_some_and(|g| checked_elsewhere.contains(&g))
                {
                    *d = Value::Null;
                }
            }
            (
                s,
                Owner {
                    application: None,
                    cluster: String::new(),
                    namespace: None,
                    kube_version: kube_version.to_string(),
                },
            )
        })
        .collect();
    let objects = streams
        .iter()
        .map(|(s, _)| s.docs.iter().filter(|d| !d.is_null()).count())
        .sum();
    let mut report = run(&streams, Vec::new(), options)?;
    report.objects = objects;
    Ok(report)
}

/// `true` for a path conform reads as manifests.
/// kustomizations and kiln's hidden bookkeeping (`.kiln-owned.json`) are not applied.
pub fn is_manifest(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    !name.starts_with('.')
        && !matches!(
            name,
            "kustomization.yaml" | "kustomization.yml" | "Kustomization"
        )
        && path
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
}

#[cfg(test)]
mod tests {
    use crate::fs::MemFs;
    use crate::pipeline::{KilnError, RenderOptions, build};
    use std::sync::Arc;

    const PLATFORM: &str = "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: p\nspec:\n  clusters: [{name: c, server: https://c}]\n  environments:\n  - {name: dev, tier: nonprod, cluster: c}\n  - {name: prod, tier: prod, cluster: c, from: [dev]}\n  projects:\n  - name: web\n    components:\n    - path: ../../components/cr\n    - path: ../../components/crd\n    - path: ../../components/bad\n    - path: ../../components/role\n    - {path: ../../components/shared, name: s1}\n    - {path: ../../components/shared, name: s2}\n";

    fn component(name: &str, resources: &str) -> String {
        format!(
            "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: {name}\nspec:\n  generators:\n  - resources:\n{resources}"
        )
    }

    /// A platform whose findings cover every kind of rule and every order the driver keeps:
    /// custom resources rendered before their CRD (component `cr` before `crd`), an invalid
    /// CRD, built-in objects, a kind with no schema, and both platform-wide conflicts.
    fn fixture(validation: &str) -> MemFs {
        let mut fs = MemFs::new();
        let ns = "metadata: {name: N, namespace: \"${env.namespace}\"}";
        fs.add_file(
            "/r/platforms/p/platform.yaml",
            PLATFORM.replace("  clusters:", &format!("{validation}  clusters:")),
        )
        .add_file(
            "/r/components/cr/component.yaml",
            component(
                "cr",
                &[
                    format!("    - {{apiVersion: example.com/v1, kind: Widget, {}, spec: {{size: 20}}}}\n", ns.replace('N', "w")),
                    format!("    - {{apiVersion: example.com/v2, kind: Widget, {}, spec: {{size: 1}}}}\n", ns.replace('N', "w2")),
                    format!("    - {{apiVersion: v1, kind: ConfigMap, {}, data: {{k: 1}}}}\n", ns.replace('N', "c")),
                ]
                .concat(),
            ),
        )
        .add_file(
            "/r/components/crd/component.yaml",
            component(
                "crd",
                &[
                    "    - apiVersion: apiextensions.k8s.io/v1\n      kind: CustomResourceDefinition\n      metadata: {name: widgets.example.com}\n      spec:\n        group: example.com\n        names: {kind: Widget, plural: widgets}\n        scope: Namespaced\n        versions:\n        - name: v1\n          served: true\n          storage: true\n          schema:\n            openAPIV3Schema:\n              type: object\n              properties:\n                spec:\n                  type: object\n                  properties:\n                    size: {type: integer, maximum: 10}\n",
                    "    - apiVersion: apiextensions.k8s.io/v1\n      kind: CustomResourceDefinition\n      metadata: {name: bolts.example.com}\n      spec:\n        group: example.com\n        names: {kind: Bolt, plural: bolts}\n        scope: Cluster\n        versions:\n        - name: v1\n          served: true\n          storage: true\n          schema:\n            openAPIV3Schema: {type: object, properties: {spec: {type: string, pattern: \"[\"}}}\n",
                    &format!("    - {{apiVersion: example.com/v1, kind: Gadget, {}, spec: {{size: 20}}}}\n", ns.replace('N', "g")),
                    &format!("    - {{apiVersion: example.com/v1, kind: Widget, {}, spec: {{size: 30}}}}\n", ns.replace('N', "w3")),
                ]
                .concat(),
            ),
        )
        .add_file(
            "/r/components/bad/component.yaml",
            component(
                "bad",
                &[
                    format!("    - {{apiVersion: v1, kind: ConfigMap, {}, spec: {{}}, data: {{n: 5}}}}\n", ns.replace('N', "bad")),
                    format!("    - {{apiVersion: policy/v1beta1, kind: PodDisruptionBudget, {}}}\n", ns.replace('N', "pdb")),
                    "    - {apiVersion: v1, kind: Service, metadata: {name: svc, namespace: \"${env.namespace}\"}, spec: {ports: [{port: 99999}]}}\n".to_string(),
                ]
                .concat(),
            ),
        )
        .add_file(
            "/r/components/role/component.yaml",
            component(
                "role",
                "    - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader, labels: {env: \"${env.name}\"}}, rules: []}\n    - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: same}, rules: []}\n",
            ),
        )
        .add_file(
            "/r/components/shared/component.yaml",
            component(
                "shared",
                "    - {apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: common}}\n",
            ),
        )
        .add_dir("/r/.git");
        fs
    }

    /// The findings of a render of [`fixture`], as `code file:line: object at pointer:
    /// message`, and its warning lines.
    fn findings(validation: &str, strict: bool) -> (Vec<String>, Vec<String>) {
        let mut opts = RenderOptions::new("/r/platforms/p");
        opts.fs = Arc::new(fixture(validation));
        opts.strict_kinds = strict;
        match build(&opts, &|_, _| {}) {
            Ok(b) => (Vec::new(), b.validation_warnings),
            Err(KilnError::Conform(e)) => (
                e.errors
                    .iter()
                    .map(|f| format!("{} {f}", f.code.as_str()))
                    .collect(),
                Vec::new(),
            ),
            Err(e) => panic!("{e:?}"),
        }
    }

    /// Every finding of the render, byte for byte and in order: first every invalid CRD, then
    /// each object's findings in plan, file and document order (a custom resource rendered
    /// before its CRD, `cr` before `crd`, is validated against it all the same), then the
    /// conflicts between Applications in the same order.
    const EXPECTED: &[&str] = &[
        "invalid_crd web/dev/crd/crd.gen.yaml:18: CustomResourceDefinition/bolts.example.com at `/spec/versions/0/schema/openAPIV3Schema/properties/spec`: invalid pattern `[`: regex parse error:\n    [\n    ^\nerror: unclosed character class",
        "invalid_crd web/prod/crd/crd.gen.yaml:18: CustomResourceDefinition/bolts.example.com at `/spec/versions/0/schema/openAPIV3Schema/properties/spec`: invalid pattern `[`: regex parse error:\n    [\n    ^\nerror: unclosed character class",
        "maximum web/dev/cr/cr.gen.yaml:16: Widget/web-dev/w at `/spec/size`: 20 must be <= 10",
        "unserved_version web/dev/cr/cr.gen.yaml:18: Widget/web-dev/w2 at `/apiVersion`: the CRD of Widget does not serve `example.com/v2`; it serves `example.com/v1`",
        "maximum web/prod/cr/cr.gen.yaml:16: Widget/web-prod/w at `/spec/size`: 20 must be <= 10",
        "unserved_version web/prod/cr/cr.gen.yaml:18: Widget/web-prod/w2 at `/apiVersion`: the CRD of Widget does not serve `example.com/v2`; it serves `example.com/v1`",
        "no_schema web/dev/crd/crd.gen.yaml:49: Gadget/web-dev/g: no schema for example.com/v1 Gadget",
        "maximum web/dev/crd/crd.gen.yaml:63: Widget/web-dev/w3 at `/spec/size`: 30 must be <= 10",
        "no_schema web/prod/crd/crd.gen.yaml:49: Gadget/web-prod/g: no schema for example.com/v1 Gadget",
        "maximum web/prod/crd/crd.gen.yaml:63: Widget/web-prod/w3 at `/spec/size`: 30 must be <= 10",
        "unknown_field web/dev/bad/bad.gen.yaml:9: ConfigMap/web-dev/bad at `/spec`: unknown field `spec`",
        "unserved_version web/dev/bad/bad.gen.yaml:20: PodDisruptionBudget/web-dev/pdb at `/apiVersion`: Kubernetes 1.36 does not serve `policy/v1beta1` PodDisruptionBudget; it serves `policy/v1`",
        "unknown_field web/prod/bad/bad.gen.yaml:9: ConfigMap/web-prod/bad at `/spec`: unknown field `spec`",
        "unserved_version web/prod/bad/bad.gen.yaml:20: PodDisruptionBudget/web-prod/pdb at `/apiVersion`: Kubernetes 1.36 does not serve `policy/v1beta1` PodDisruptionBudget; it serves `policy/v1`",
        "cluster_scoped_conflict web/prod/role/role.gen.yaml:2: ClusterRole/reader: cluster-scoped ClusterRole `reader` is emitted into cluster `c` by Applications `web-role-dev` and `web-role-prod` with different content",
        "shared_resource web/prod/s1/s1.gen.yaml:2: ConfigMap/common/shared: ConfigMap `shared` in namespace `common` of cluster `c` is owned by Applications `web-s1-dev` and `web-s1-prod`; they would overwrite each other (Argo CD's SharedResourceWarning)",
        "shared_resource web/dev/s2/s2.gen.yaml:2: ConfigMap/common/shared: ConfigMap `shared` in namespace `common` of cluster `c` is owned by Applications `web-s1-dev` and `web-s2-dev`; they would overwrite each other (Argo CD's SharedResourceWarning)",
        "shared_resource web/prod/s2/s2.gen.yaml:2: ConfigMap/common/shared: ConfigMap `shared` in namespace `common` of cluster `c` is owned by Applications `web-s1-dev` and `web-s2-prod`; they would overwrite each other (Argo CD's SharedResourceWarning)",
    ];

    #[test]
    fn findings_come_in_document_order_then_conflicts() {
        let (errors, _) = findings("", true);
        assert_eq!(errors, EXPECTED);
        // As warnings, in the same order, after the count of objects with no schema (the
        // `no_schema` findings are errors only under `--strict`).
        let every: Vec<&str> = kiln_k8s::Code::ALL.iter().map(|c| c.as_str()).collect();
        let warn = format!("  validation: {{warn: [{}]}}\n", every.join(", "));
        let (errors, warnings) = findings(&warn, false);
        assert!(errors.is_empty(), "{errors:?}");
        let mut expected = vec![
            "warning: not validated: 1 kinds with no schema: example.com/v1 Gadget (2)".to_string(),
        ];
        expected.extend(
            EXPECTED
                .iter()
                .filter(|e| !e.starts_with("no_schema "))
                .map(|e| {
                    let (code, rest) = e.split_once(' ').unwrap();
                    format!("warning[kiln::k8s::{code}]: {rest}")
                }),
        );
        assert_eq!(warnings, expected);
    }
}
