//! conform: every rendered object validated as the Kubernetes API server would (issue 36),
//! after emit and before write, with `kiln-k8s` (ADRs 0020, 0021): built-in kinds against
//! the schemas of their cluster's Kubernetes version (`clusters[].kubeVersion`, default
//! [`kiln_k8s::builtin::DEFAULT_VERSION`]), custom resources against the CRDs the platform
//! renders plus those named in `spec.validation.crds`, and the conflicts between Argo CD
//! Applications. Errors stop the write; the rules named in `spec.validation.warn` (and kinds
//! with no schema, unless `--strict`) are warnings.
//!
//! Each finding names the rendered file, the object and the field, with the file's line
//! (the span index of `kiln_base::diag`), and the source that produced the field (issue 36,
//! item 7), from the [`Provenance`] render kept for each object: the spec value that set it
//! (a patch, a label, an inline resource in `component.yaml`), else the manifest's line, else
//! the chart template's line (found by following the field's keys through the template's
//! text, which is not YAML until rendered). A wrong type where a spec value was one whole
//! `${params.x}` names that parameter (item 4).

use crate::artifact::ArtifactSet;
use crate::diag::{SourceFile, Sources};
use crate::evaluate::BuildPlan;
use crate::fs::FileSystem;
use crate::resource::Provenance;
use crate::validate::Platform;
use kiln_k8s::conflict::{Placement, conflicts};
use kiln_k8s::{Code, Crds, Validator};
use miette::{Diagnostic, LabeledSpan, SourceCode};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A text, a document in it and a JSON Pointer: what a finding's snippet underlines.
type Snippet = (SourceFile, usize, String);

/// The source of a finding's field (issue 36, item 7).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SourceAt {
    /// `manifest`, `template` (a chart template), or the spec field that set the value
    /// (`jsonPatch`, `strategicMergePatch`, `mergePatch`, `labels`, `annotations`,
    /// `resources`).
    pub kind: String,
    /// The file, relative to the repository root (absolute for a chart in the source cache).
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// For a spec value: its JSON Pointer in `file`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
}

impl fmt::Display for SourceAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, " ({})", self.kind)
    }
}

/// A parameter that a spec value placed whole (`"${params.debug}"`), keeping its type, in a
/// field whose type differs (issue 36, item 4).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ParameterAt {
    /// `debug` (or `a.b` for a field of an object parameter).
    pub name: String,
    /// Its JSON type: `boolean`, `integer`, `number`, `object`, `array`, `null`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `file:line` of its definition (`spec.parameters.properties.<name>` of
    /// component.yaml), or of the value that placed it when it has none.
    pub defined: String,
}

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
    /// Where the field came from, when render kept it.
    pub origin: Option<SourceAt>,
    /// The parameter a `wrong_type` finding's value is.
    pub parameter: Option<ParameterAt>,
    /// The rendered file's text, for its line.
    rendered: Option<SourceFile>,
    /// What the snippet shows: the source's text when it is YAML kiln can point into (a spec
    /// file, a manifest), else the rendered file's; the document and pointer in it.
    snippet: Option<Snippet>,
    named: Option<miette::NamedSource<String>>,
}

impl Finding {
    /// The finding as `-o json` gives it.
    pub fn to_json(&self) -> Value {
        let line = self
            .rendered
            .as_ref()
            .and_then(|s| s.locate(self.document, &self.pointer, false))
            .map(|l| l.line);
        serde_json::json!({
            "code": format!("kiln::k8s::{}", self.code.as_str()),
            "severity": if self.warning { "warning" } else { "error" },
            "file": self.file,
            "line": line,
            "object": self.object,
            "pointer": self.pointer,
            "message": self.message,
            "source": self.origin,
            "parameter": self.parameter,
        })
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = match &self.rendered {
            Some(s) => s.position(self.document, &self.pointer),
            None => self.file.clone(),
        };
        let field = if self.pointer.is_empty() {
            String::new()
        } else {
            format!(" at `{}`", self.pointer)
        };
        write!(f, "{at}: {}{field}: {}", self.object, self.message)?;
        if let Some(p) = &self.parameter {
            write!(
                f,
                "; it is parameter `{}` ({}, defined at {}), placed whole by `${{params.{}}}`",
                p.name, p.kind, p.defined, p.name
            )?;
        }
        if let Some(o) = &self.origin {
            write!(f, "; from {o}")?;
        }
        Ok(())
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
        if let Some(p) = &self.parameter {
            return Some(Box::new(format!(
                "a whole `${{params.{0}}}` keeps the parameter's type: write `\"${{params.{0}}}\"` inside a longer string (`\"{0}=${{params.{0}}}\"`), or make `{0}` a string parameter",
                p.name
            )));
        }
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
        let (source, document, pointer) = self.snippet.as_ref()?;
        let key = self.code == Code::UnknownField;
        let span = source.span(*document, pointer, key)?;
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

/// A parsed rendered file: its text kept for spans, and where each document came from.
struct Stream {
    file: String,
    source: SourceFile,
    docs: Vec<Value>,
    provenance: Vec<Option<Provenance>>,
}

fn parse(file: &str, bytes: &[u8]) -> Option<Stream> {
    let text = std::str::from_utf8(bytes).ok()?;
    let docs = crate::yaml::parse_stream(file, text).ok()?;
    Some(Stream {
        file: file.to_string(),
        source: SourceFile::new(file, text),
        docs,
        provenance: Vec::new(),
    })
}

/// Finds the sources of findings: the spec's texts, and the manifests and templates read
/// again through the file system (only for findings, which are few).
struct Sourcing<'a> {
    sources: Option<&'a Sources>,
    fs: Option<&'a dyn FileSystem>,
    root: PathBuf,
    read: RefCell<BTreeMap<String, Option<SourceFile>>>,
}

impl Sourcing<'_> {
    fn none() -> Sourcing<'static> {
        Sourcing {
            sources: None,
            fs: None,
            root: PathBuf::new(),
            read: RefCell::new(BTreeMap::new()),
        }
    }

    /// The text of `file`: a spec file kiln loaded, else read below the root.
    fn text(&self, file: &str) -> Option<SourceFile> {
        if let Some(f) = self
            .sources
            .and_then(|s| s.files().iter().find(|f| f.name == file))
        {
            return Some(f.clone());
        }
        let fs = self.fs?;
        self.read
            .borrow_mut()
            .entry(file.to_string())
            .or_insert_with(|| {
                let path = self.root.join(file);
                let text = fs.read_to_string(&path).ok()?;
                Some(SourceFile::new(file, text))
            })
            .clone()
    }

    /// Where the field at `pointer` of an object with provenance `p` came from; with the
    /// spec file's text, document 0, and the pointer in it, for the snippet.
    fn origin(&self, p: &Provenance, pointer: &str) -> Option<(SourceAt, Option<Snippet>)> {
        if let Some((set, rest)) = p.setter(pointer) {
            let at = format!("{}{rest}", set.at);
            let text = self.text(&set.file);
            let line = text
                .as_ref()
                .and_then(|t| t.locate(0, &at, false))
                .map(|l| l.line);
            return Some((
                SourceAt {
                    kind: set.by.clone(),
                    file: set.file.clone(),
                    line,
                    pointer: Some(at.clone()),
                },
                text.map(|t| (t, 0, at)),
            ));
        }
        let file = p.file.as_ref()?;
        let text = self.text(file);
        if p.template {
            let line = text
                .as_ref()
                .and_then(|t| template_line(&t.text, p.document, pointer));
            return Some((
                SourceAt {
                    kind: "template".into(),
                    file: file.clone(),
                    line,
                    pointer: None,
                },
                None,
            ));
        }
        let line = text
            .as_ref()
            .and_then(|t| t.locate(p.document, pointer, false))
            .map(|l| l.line);
        Some((
            SourceAt {
                kind: "manifest".into(),
                file: file.clone(),
                line,
                pointer: None,
            },
            text.map(|t| (t, p.document, pointer.to_string())),
        ))
    }

    /// The parameter a spec value placed whole at `origin`, whose value `value` has the wrong
    /// type.
    fn parameter(&self, origin: &SourceAt, value: Option<&Value>) -> Option<ParameterAt> {
        let at = origin.pointer.as_ref()?;
        let text = self.text(&origin.file)?;
        let spec = crate::yaml::parse_stream(&origin.file, &text.text).ok()?;
        let written = spec.first()?.pointer(at)?.as_str()?;
        let name = kiln_base::reference::whole(written)?
            .name()
            .strip_prefix("params.")?
            .to_string();
        let kind = match value? {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => return None,
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let first = name.split('.').next().unwrap_or_default();
        let declared = format!(
            "/spec/parameters/properties/{}",
            kiln_base::pointer::escape(first)
        );
        let defined = match spec.first()?.pointer(&declared) {
            Some(_) => text.position(0, &declared),
            None => text.position(0, at),
        };
        Some(ParameterAt {
            name,
            kind: kind.into(),
            defined,
        })
    }
}

/// The line (1-based) of the field at `pointer` in a chart template: the template's
/// `document`th document (split at `---` lines; the whole text when it has fewer), then
/// each key of the pointer in turn, on a later line than the one before. Where a key is not
/// written (a `toYaml` of a value wrote it) the last key found is the line.
fn template_line(text: &str, document: usize, pointer: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.trim_end() == "---" || l.starts_with("--- "))
                .map(|(i, _)| i + 1),
        )
        .collect();
    let mut at = starts.get(document).copied().unwrap_or(0);
    let mut found = None;
    for token in kiln_base::pointer::tokens(pointer) {
        if token.parse::<usize>().is_ok() {
            continue;
        }
        let key = format!("{token}:");
        let hit = lines.iter().enumerate().skip(at).find(|(_, l)| {
            let t = l.trim_start().trim_start_matches("- ").trim_start();
            t.starts_with(&key) || t.starts_with(&format!("\"{token}\":"))
        });
        match hit {
            Some((i, _)) => {
                found = Some(i + 1);
                at = i + 1;
            }
            None => break,
        }
    }
    found.or(Some(starts.get(document).copied().unwrap_or(0) + 1))
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
    sourcing: &Sourcing,
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
        let found = s
            .provenance
            .get(doc)
            .and_then(Option::as_ref)
            .and_then(|p| sourcing.origin(p, &pointer));
        let (origin, snippet) = found.map_or((None, None), |(o, s)| (Some(o), s));
        let parameter = origin
            .as_ref()
            .filter(|_| code == Code::WrongType)
            .and_then(|o| sourcing.parameter(o, s.docs.get(doc).and_then(|d| d.pointer(&pointer))));
        // The snippet shows the source when it is YAML kiln can point into, else the
        // rendered file.
        let snippet = snippet.unwrap_or_else(|| (s.source.clone(), doc, pointer.clone()));
        report.findings.push(Finding {
            code,
            file: s.file.clone(),
            document: doc,
            object,
            pointer,
            message,
            warning,
            origin,
            parameter,
            named: Some(snippet.0.named_source()),
            snippet: Some(snippet),
            rendered: Some(s.source.clone()),
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

/// Validates the files each BuildPlan rendered (`files[i]` are plan `i`'s artifact paths,
/// `provenance[i]` where each document of its `.gen.yaml` came from), with the CRDs of the
/// whole set and of `spec.validation.crds` (read through `fs`, as the sources of findings).
pub fn validate_render(
    set: &ArtifactSet,
    platform: &Platform,
    plans: &[BuildPlan],
    (files, provenance): (&[Vec<String>], &[&[Option<Provenance>]]),
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
    for (i, (plan, paths)) in plans.iter().zip(files).enumerate() {
        let cluster = platform.clusters.iter().find(|c| c.name == plan.cluster);
        let kube_version = cluster
            .and_then(|c| c.kube_version.clone())
            .unwrap_or_else(|| kiln_k8s::builtin::DEFAULT_VERSION.to_string());
        // kiln's own kustomization.yaml beside each plan's manifests is for Kargo and Argo
        // CD to build, never applied itself.
        for path in paths.iter().filter(|p| !p.ends_with("kustomization.yaml")) {
            let Some(mut stream) = set.files.get(path).and_then(|b| parse(path, b)) else {
                continue;
            };
            if path.ends_with(".gen.yaml") {
                stream.provenance = provenance.get(i).map(|p| p.to_vec()).unwrap_or_default();
            }
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
    let sourcing = Sourcing {
        sources: Some(&platform.sources),
        fs: Some(fs),
        root: platform.root.clone(),
        read: RefCell::new(BTreeMap::new()),
    };
    run(&streams, extra, &options, &sourcing)
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
    let mut report = run(&streams, Vec::new(), options, &Sourcing::none())?;
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
