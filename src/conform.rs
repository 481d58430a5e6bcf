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
use crate::resource::{ChartRender, Provenance, Resource};
use crate::validate::Platform;
use kiln_k8s::conflict::{Identity, Placement, conflicts};
use kiln_k8s::{Code, Crds, Outcome, Validator};
use miette::{Diagnostic, LabeledSpan, SourceCode};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

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
    /// For a chart template: the values its line printed, and where each was set.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<ValueAt>,
}

impl fmt::Display for SourceAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, " ({})", self.kind)?;
        for v in &self.values {
            write!(f, "; {v}")?;
        }
        Ok(())
    }
}

/// A Helm value a chart template's line printed, and the layer that set it (issue 36, item
/// 7): a values file, the component's inline `values`, the chart's own values.yaml.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ValueAt {
    /// Its path in the chart's values (`image.tag`; a subchart's below its name).
    pub path: String,
    /// `valuesFile` (`valuesFiles`), `values` (inline in the spec), `chartDefault` (a
    /// chart's values.yaml), `set`.
    pub kind: String,
    /// The file that set it, as findings name files.
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl fmt::Display for ValueAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "value `{}` from {}", self.path, self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        match self.kind.as_str() {
            "chartDefault" => write!(f, " (chart default)"),
            "values" => write!(f, " (values)"),
            _ => Ok(()),
        }
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
    /// file, a manifest), else the rendered file's; the document and pointer in it. The
    /// text is shared by every finding on it (an `Arc`), never copied.
    snippet: Option<Snippet>,
    /// The lines around the snippet's label, cut from its text when miette first asks
    /// ([`SourceFile::excerpt`]): miette scans a source from its start to find the label's
    /// line, which made printing N findings of one large stream cost N times its size.
    excerpt: std::sync::OnceLock<Option<kiln_base::diag::Excerpt>>,
    /// For a `wrong_type`: the value found, kept until [`Finding::resolve`] names the
    /// parameter that placed it (the validated objects are dropped before).
    value: Option<Value>,
}

impl Finding {
    /// Sets where the field came from, given the object's provenance (`None`: render kept
    /// none), and the snippet on that source when kiln can point into it.
    fn resolve(&mut self, provenance: Option<&Provenance>, sourcing: &Sourcing) {
        let value = self.value.take();
        let Some((origin, snippet)) = provenance.and_then(|p| sourcing.origin(p, &self.pointer))
        else {
            return;
        };
        if self.code == Code::WrongType {
            self.parameter = sourcing.parameter(&origin, value.as_ref());
        }
        if let Some(snippet) = snippet {
            self.excerpt = std::sync::OnceLock::new();
            self.snippet = Some(snippet);
        }
        self.origin = Some(origin);
    }
}

impl Finding {
    /// The finding as `-o json` gives it.
    pub fn to_json(&self) -> Value {
        let at = self
            .rendered
            .as_ref()
            .and_then(|s| s.locate(self.document, &self.pointer, false));
        serde_json::json!({
            "code": format!("kiln::k8s::{}", self.code.as_str()),
            "severity": if self.warning { "warning" } else { "error" },
            "file": self.file,
            "line": at.as_ref().map(|l| l.line),
            "column": at.as_ref().map(|l| l.column),
            "help": self.help().map(|h| h.to_string()),
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
        self.excerpt
            .get_or_init(|| {
                let (source, document, pointer) = self.snippet.as_ref()?;
                let key = self.code == Code::UnknownField;
                Some(source.excerpt(&source.locate(*document, pointer, key)?))
            })
            .as_ref()
            .map(|s| s as &dyn SourceCode)
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
    /// CEL rules not evaluated (transition rules, functions outside kiln's CEL environment).
    pub skipped_rules: usize,
    /// Kubernetes objects looked at ([`validate_files`]; `kiln validate`'s summary counts
    /// them), the unvalidated ones included.
    pub objects: usize,
    /// The counts of each BuildPlan, in plan order (a render's journal keeps them: an
    /// incremental render counts the plans it does not render again).
    pub by_plan: Vec<PlanCounts>,
    /// The (group, kind) each CRD of the validation defines.
    pub crd_kinds: BTreeSet<(String, String)>,
}

/// What one BuildPlan's validation counted: its objects of kinds with no schema and its CEL
/// rules not evaluated.
#[derive(Debug, Default, Clone)]
pub struct PlanCounts {
    pub unvalidated: BTreeMap<String, usize>,
    pub skipped_rules: usize,
}

/// The warning lines of the counts: `unvalidated`'s kinds (`group/version Kind` → objects),
/// then the CEL rules not evaluated; counted, never passed silently (ADR 0021, ADR 0048).
pub fn summary_lines(unvalidated: &BTreeMap<String, usize>, skipped_rules: usize) -> Vec<String> {
    let mut out = Vec::new();
    if !unvalidated.is_empty() {
        let kinds: Vec<String> = unvalidated
            .iter()
            .map(|(k, n)| format!("{k} ({n})"))
            .collect();
        out.push(format!(
            "warning: not validated: {} kinds with no schema: {}",
            kinds.len(),
            kinds.join(", ")
        ));
    }
    if skipped_rules > 0 {
        out.push(format!(
            "warning: not evaluated: {skipped_rules} CEL rule{} (transition rules, functions outside kiln's CEL environment)",
            if skipped_rules == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The (group, kind) of an [`Report::unvalidated`] key (`group/version Kind`; a core kind's
/// group is empty).
pub fn group_kind(key: &str) -> (&str, &str) {
    let (api_version, kind) = key.split_once(' ').unwrap_or((key, ""));
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    (group, kind)
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
        self.warnings().into_iter().map(|(_, l)| l).collect()
    }

    /// [`warning_lines`](Self::warning_lines), each with its finding (`None`: the line of
    /// the unvalidated kinds).
    pub fn warnings(&self) -> Vec<(Option<&Finding>, String)> {
        let mut out: Vec<(Option<&Finding>, String)> =
            summary_lines(&self.unvalidated, self.skipped_rules)
                .into_iter()
                .map(|l| (None, l))
                .collect();
        out.extend(self.findings.iter().filter(|f| f.warning).map(|f| {
            (
                Some(f),
                format!("warning[kiln::k8s::{}]: {f}", f.code.as_str()),
            )
        }));
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

/// A rendered file's text and documents, or `None` when it is no UTF-8 YAML stream (not
/// validated, as before the render wrote it). Read as the API server receives it, every
/// plain scalar typed: an unquoted `8080` in a ConfigMap's `data` is the number it refuses.
fn parse<'b>(file: &str, bytes: &'b [u8]) -> Option<(&'b str, Vec<Value>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let docs = crate::yaml::parse_stream_as_applied(file, text).ok()?;
    Some((text, docs))
}

/// Finds the sources of findings: where render said each object came from, the spec's
/// texts, and the manifests and templates read again through the file system (only for
/// findings, which are few).
pub struct Sourcing<'a> {
    /// Per BuildPlan (in the order of [`Validation::finish`]'s `checked`), where each
    /// document of its `.gen.yaml` came from.
    provenance: Vec<&'a [Option<Provenance>]>,
    sources: Option<&'a Sources>,
    fs: Option<&'a dyn FileSystem>,
    root: PathBuf,
    read: RefCell<BTreeMap<String, Option<SourceFile>>>,
    /// Each spec file's first document, parsed once for the `wrong_type` findings whose
    /// parameter it names ([`Sourcing::parameter`]).
    specs: RefCell<BTreeMap<String, Option<std::rc::Rc<Value>>>>,
    /// Each chart render a finding asked about, rendered again traced ([`Sourcing::trace`]).
    traces: RefCell<Vec<ChartTrace>>,
    /// How many spec files were parsed.
    #[cfg(test)]
    parses: std::cell::Cell<usize>,
}

/// A chart render and its traced render again, if it rendered.
type ChartTrace = (Arc<ChartRender>, Option<Rc<kiln_helm::ValuesTrace>>);

/// How many values a finding names at most.
const MAX_VALUES: usize = 4;

/// The lines (1-based) of the field at line `line` of a template `text`: that line, and the
/// lines after it indented deeper (or blank).
fn block(text: &str, line: usize) -> Vec<usize> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut lines = text.lines().enumerate().skip(line.saturating_sub(1));
    let Some((first, at)) = lines.next() else {
        return Vec::new();
    };
    let depth = indent(at);
    std::iter::once(first + 1)
        .chain(
            lines
                .take_while(|(_, l)| l.trim().is_empty() || indent(l) > depth)
                .map(|(i, _)| i + 1),
        )
        .collect()
}

impl<'a> Sourcing<'a> {
    /// No source known: `kiln validate`'s manifests are their own source.
    pub fn none() -> Sourcing<'static> {
        Sourcing {
            provenance: Vec::new(),
            sources: None,
            fs: None,
            root: PathBuf::new(),
            read: RefCell::new(BTreeMap::new()),
            specs: RefCell::new(BTreeMap::new()),
            traces: RefCell::new(Vec::new()),
            #[cfg(test)]
            parses: std::cell::Cell::new(0),
        }
    }

    /// The sources of a render of `platform`: `provenance[i]` is where each document of
    /// BuildPlan `i`'s `.gen.yaml` came from; spec files and manifests are read through `fs`.
    pub fn render(
        platform: &'a Platform,
        fs: &'a dyn FileSystem,
        provenance: Vec<&'a [Option<Provenance>]>,
    ) -> Sourcing<'a> {
        Sourcing {
            provenance,
            sources: Some(&platform.sources),
            fs: Some(fs),
            root: platform.root.clone(),
            read: RefCell::new(BTreeMap::new()),
            specs: RefCell::new(BTreeMap::new()),
            traces: RefCell::new(Vec::new()),
            #[cfg(test)]
            parses: std::cell::Cell::new(0),
        }
    }

    /// Where document `doc` of BuildPlan `plan`'s `file` came from.
    fn of(&self, plan: usize, file: &str, doc: usize) -> Option<&'a Provenance> {
        if !file.ends_with(".gen.yaml") {
            return None;
        }
        self.provenance.get(plan)?.get(doc)?.as_ref()
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
                    values: Vec::new(),
                },
                text.map(|t| (t, 0, at)),
            ));
        }
        let file = p.file.as_ref()?;
        let text = self.text(file);
        if p.template {
            let line = text
                .as_ref()
                .and_then(|t| crate::render::template_line(&t.text, p.document, pointer));
            let values = text
                .as_ref()
                .zip(line)
                .map(|(t, line)| self.values(p, &t.text, line, pointer))
                .unwrap_or_default();
            return Some((
                SourceAt {
                    kind: "template".into(),
                    file: file.clone(),
                    line,
                    pointer: None,
                    values,
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
                values: Vec::new(),
            },
            text.map(|t| (t, p.document, pointer.to_string())),
        ))
    }

    /// The values that line `line` of the template `text` (rendered as `p` says) printed
    /// into the field at `pointer`, with where each was set (issue 36, item 7): the chart is
    /// rendered again with its reads traced, once per chart render with a finding
    /// ([`crate::render::trace_chart`]). The line's actions count, and those of the lines
    /// below it indented deeper (a value printed under its key, `{{- toYaml .Values.x |
    /// nindent 4 }}`). A map printed whole is narrowed to the value under it at the rest of
    /// `pointer` when one layer set it. At most [`MAX_VALUES`], in the order read.
    fn values(&self, p: &Provenance, text: &str, line: usize, pointer: &str) -> Vec<ValueAt> {
        let Some(render) = &p.chart else {
            return Vec::new();
        };
        let Some(trace) = self.trace(render) else {
            return Vec::new();
        };
        let in_chart = p
            .file
            .as_deref()
            .and_then(|f| f.strip_prefix(render.shown.as_str()))
            .and_then(|f| f.strip_prefix('/'));
        let Some(lines) = trace.lines.iter().find_map(|(name, lines)| {
            (name.split_once('/').map(|(_, rest)| rest) == in_chart).then_some(lines)
        }) else {
            return Vec::new();
        };
        let mut read: Vec<(Vec<String>, bool)> = Vec::new();
        for l in block(text, line) {
            for (path, whole) in lines.get(&(l as u32)).into_iter().flatten() {
                match read.iter_mut().find(|(p, _)| p == path) {
                    Some(found) => found.1 |= *whole,
                    None => read.push((path.clone(), *whole)),
                }
            }
        }
        // A key looked up on the way to another (`image` of `.Values.image.tag`) is no value
        // printed.
        let deeper = |p: &[String]| {
            read.iter()
                .any(|(q, _)| q.len() > p.len() && q.starts_with(p))
        };
        let printed: Vec<Vec<String>> = read
            .iter()
            .filter(|(p, whole)| *whole || !deeper(p))
            .map(|(p, whole)| {
                if !whole {
                    return p.clone();
                }
                let tokens: Vec<String> = kiln_base::pointer::tokens(pointer).collect();
                (0..tokens.len())
                    .map(|k| [p.as_slice(), &tokens[k..]].concat())
                    .find(|q| trace.layers.origin(q).is_some())
                    .unwrap_or_else(|| p.clone())
            })
            .collect();
        let mut out: Vec<ValueAt> = Vec::new();
        for path in printed {
            let Some(o) = trace.layers.origin(&path) else {
                continue;
            };
            let at = self.value_at(render, &path, o);
            if !out.contains(&at) {
                out.push(at);
            }
            if out.len() == MAX_VALUES {
                break;
            }
        }
        out
    }

    /// [`ValueAt`] of `path`, from its origin `o` in chart render `render`.
    fn value_at(
        &self,
        render: &ChartRender,
        path: &[String],
        o: kiln_helm::chartutil::origin::ValueOrigin,
    ) -> ValueAt {
        use kiln_helm::chartutil::origin::LayerKind;
        let (kind, file, line) = match o.kind {
            LayerKind::File => {
                let shown = render
                    .value_files
                    .iter()
                    .find(|(real, _)| *real == o.name)
                    .map_or(o.name, |(_, shown)| shown.clone());
                ("valuesFile", shown, o.line)
            }
            LayerKind::Inline => {
                let (file, at) = &render.values_at;
                let at: String = std::iter::once(at.clone())
                    .chain(o.path.iter().map(|k| kiln_base::pointer::escape(k)))
                    .collect::<Vec<_>>()
                    .join("/");
                let line = self
                    .text(file)
                    .and_then(|t| t.locate(0, &at, true))
                    .map(|l| l.line);
                ("values", file.clone(), line)
            }
            LayerKind::ChartDefault => {
                let shown = match o.name.strip_prefix(render.chart.as_str()) {
                    Some(rest) => format!("{}{rest}", render.shown),
                    None => o.name,
                };
                ("chartDefault", shown, o.line)
            }
            LayerKind::Set => ("set", o.name, None),
        };
        ValueAt {
            path: path.join("."),
            kind: kind.into(),
            file,
            line,
        }
    }

    /// Chart render `render` made again with its reads traced, once; `None` when it fails
    /// (its inputs changed under the render).
    fn trace(&self, render: &Arc<ChartRender>) -> Option<Rc<kiln_helm::ValuesTrace>> {
        let mut traces = self.traces.borrow_mut();
        if let Some((_, t)) = traces
            .iter()
            .find(|(r, _)| Arc::ptr_eq(r, render) || **r == **render)
        {
            return t.clone();
        }
        let t = self
            .fs
            .and_then(|fs| crate::render::trace_chart(fs, render).ok())
            .map(Rc::new);
        traces.push((render.clone(), t.clone()));
        t
    }

    /// The first document of spec file `file` (`text`), parsed once.
    fn spec(&self, file: &str, text: &SourceFile) -> Option<std::rc::Rc<Value>> {
        self.specs
            .borrow_mut()
            .entry(file.to_string())
            .or_insert_with(|| {
                #[cfg(test)]
                self.parses.set(self.parses.get() + 1);
                let docs = crate::yaml::parse_stream(file, &text.text).ok()?;
                docs.into_iter().next().map(std::rc::Rc::new)
            })
            .clone()
    }

    /// The parameter a spec value placed whole at `origin`, whose value `value` has the wrong
    /// type.
    fn parameter(&self, origin: &SourceAt, value: Option<&Value>) -> Option<ParameterAt> {
        let at = origin.pointer.as_ref()?;
        let text = self.text(&origin.file)?;
        let spec = self.spec(&origin.file, &text)?;
        let written = spec.pointer(at)?.as_str()?;
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
        let defined = match spec.pointer(&declared) {
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

/// Who deploys a rendered file: its Argo CD Application, cluster and destination namespace.
#[derive(Debug, Clone)]
struct Owner {
    application: String,
    environment: String,
    cluster: String,
    namespace: Option<String>,
}

/// One object, once validated where it was rendered: what the end of the validation reads.
#[derive(Debug)]
struct Object {
    /// Its file (index into [`Checked::files`]) and document.
    file: usize,
    doc: usize,
    /// Its keys for the conflicts between Applications (`None` with no owner).
    identity: Option<Identity>,
    namespaced: Option<bool>,
    /// Set for an object a CRD may concern ([`Validator::custom_kinds`]).
    custom: Option<Box<Custom>>,
}

/// An object of kinds a CRD may define, rendered anywhere in the platform: its validation
/// with no CRD stands unless one of the platform's CRDs defines one of `kinds`, in which
/// case its file is parsed again at the end and the object validated with them.
#[derive(Debug)]
struct Custom {
    kinds: Vec<(String, String)>,
    api_version: String,
    kind: String,
    outcome: Outcome,
}

/// What validating one BuildPlan's files (or one file of `kiln validate`) keeps for the
/// platform-wide end of the validation ([`Validation::finish`]): the CRDs, the findings,
/// and per object only its conflict keys. The parsed documents are dropped, so a render's
/// validation holds a few hundred bytes per object, not the objects (issue 38, item 8).
#[derive(Debug, Default)]
pub struct Checked {
    /// The cluster's Kubernetes version has no schema table (the validation's error).
    error: Option<String>,
    version: String,
    owner: Option<Owner>,
    /// The files validated, in order.
    files: Vec<String>,
    /// The CRDs rendered, in order, and their own findings.
    crds: Vec<Value>,
    crd_findings: Vec<Finding>,
    /// The findings of the objects validated at once, each with its index in `objects`.
    findings: Vec<(usize, Finding)>,
    objects: Vec<Object>,
    unvalidated: BTreeMap<String, usize>,
    skipped_rules: usize,
}

/// A finding on document `doc` (`object`) of `source`; where its field came from is set
/// at the end of the validation ([`Finding::resolve`]).
fn finding(
    options: &Options,
    source: &SourceFile,
    doc: usize,
    object: &Value,
    (code, pointer, message): (Code, String, String),
) -> Finding {
    let warning = options.is_warning(code) || code == Code::NoSchema && !options.strict;
    let value = (code == Code::WrongType)
        .then(|| object.pointer(&pointer).cloned())
        .flatten();
    Finding {
        code,
        file: source.name.clone(),
        document: doc,
        object: object_name(object),
        snippet: Some((source.clone(), doc, pointer.clone())),
        pointer,
        message,
        warning,
        origin: None,
        parameter: None,
        excerpt: std::sync::OnceLock::new(),
        rendered: Some(source.clone()),
        value,
    }
}

impl Checked {
    /// The findings of `outcome` on object `doc` of `source` (with `--strict`, its kind
    /// with no schema), its counts added.
    fn outcome(
        &mut self,
        options: &Options,
        (source, doc, object): (&SourceFile, usize, &Value),
        outcome: Outcome,
        out: &mut Vec<Finding>,
    ) {
        for f in outcome.findings {
            let at = (f.code, f.pointer, f.message);
            out.push(finding(options, source, doc, object, at));
        }
        if let Some(kind) = &outcome.unvalidated
            && options.strict
        {
            let at = (
                Code::NoSchema,
                String::new(),
                format!("no schema for {kind}"),
            );
            out.push(finding(options, source, doc, object, at));
        }
        self.count(outcome.unvalidated, outcome.skipped_rules);
    }

    /// Counts an object's kind with no schema and its CEL rules not evaluated.
    fn count(&mut self, unvalidated: Option<String>, skipped_rules: usize) {
        if let Some(kind) = unvalidated {
            *self.unvalidated.entry(kind).or_default() += 1;
        }
        self.skipped_rules += skipped_rules;
    }

    /// Validates the documents of `file` (`None` ones skipped) with `validator`, which holds
    /// no CRD: every object of a built-in kind is final; the others wait for the CRDs.
    fn stream(
        &mut self,
        validator: &Validator,
        options: &Options,
        file: &str,
        (text, docs): (&str, Vec<Value>),
    ) {
        let index = self.files.len();
        self.files.push(file.to_string());
        // The text is copied only for a file with findings.
        let source = std::cell::OnceCell::new();
        let source = || source.get_or_init(|| SourceFile::new(file, text));
        for (i, doc) in docs.iter().enumerate().filter(|(_, d)| Crds::is_crd(d)) {
            for f in Crds::default().add(doc) {
                let at = (f.code, f.pointer, f.message);
                let found = finding(options, source(), i, doc, at);
                self.crd_findings.push(found);
            }
            self.crds.push(doc.clone());
        }
        for (i, doc) in docs.iter().enumerate() {
            // An empty document, or one `kiln validate` found not to be a Kubernetes object.
            if doc.is_null() {
                continue;
            }
            let outcome = validator.validate(doc);
            let at = self.objects.len();
            let (object, outcome) = Object::new(validator, (index, i, doc), &self.owner, outcome);
            if let Some(outcome) = outcome {
                let mut found = Vec::new();
                if outcome.findings.is_empty() && outcome.unvalidated.is_none() {
                    self.count(None, outcome.skipped_rules);
                } else {
                    self.outcome(options, (source(), i, doc), outcome, &mut found);
                }
                self.findings.extend(found.into_iter().map(|f| (at, f)));
            }
            self.objects.push(object);
        }
    }
}

impl Object {
    /// Document `doc` (`value`) of file `file`, validated with `outcome`: with its conflict
    /// keys when it has an owner, and for a kind a CRD may define its outcome, kept for the
    /// end ([`Validation::finish`]); the outcome of any other kind is handed back.
    fn new(
        validator: &Validator,
        (file, doc, value): (usize, usize, &Value),
        owner: &Option<Owner>,
        outcome: Outcome,
    ) -> (Object, Option<Outcome>) {
        let api_version = value["apiVersion"].as_str().unwrap_or_default();
        let kind = value["kind"].as_str().unwrap_or_default();
        let namespaced = validator.namespaced(api_version, kind);
        let kinds = validator.custom_kinds(value);
        let (custom, outcome) = if kinds.is_empty() {
            (None, Some(outcome))
        } else {
            let custom = Custom {
                kinds,
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                outcome,
            };
            (Some(Box::new(custom)), None)
        };
        let object = Object {
            file,
            doc,
            identity: owner.is_some().then(|| Identity::of(value, namespaced)),
            namespaced,
            custom,
        };
        (object, outcome)
    }
}

/// A file's documents, as [`Validation::check`] takes them.
enum Input<'s> {
    /// Its text and its documents parsed from it.
    Parsed((&'s str, Vec<Value>)),
    /// Its bytes and the resources they were printed from, one per document.
    Rendered(&'s [u8], &'s [Resource]),
}

impl Checked {
    /// Validates `values`, the resources `file` (`bytes`) was printed from, in memory: each
    /// judged as its printed bytes read back ([`crate::yaml::as_printed`]: the numbers the
    /// printer writes otherwise, `1.0` as the integer `1`), keeping what [`Checked::stream`]
    /// keeps for the same file. A file with a CRD or with an object that has a finding is
    /// parsed and given to [`Checked::stream`] instead: its findings, their order (a walk
    /// follows the map's keys, printed in go-yaml's order) and their values and lines are
    /// then those of the bytes. A clean object keeps its conflict keys (the content digest
    /// is of sorted keys) and, for a kind a CRD may define, its outcome, which has no finding.
    fn rendered(
        &mut self,
        validator: &Validator,
        options: &Options,
        file: &str,
        bytes: &[u8],
        values: &[Resource],
    ) {
        let index = self.files.len();
        let mut objects = Vec::with_capacity(values.len());
        let mut counts = Vec::new();
        for (i, resource) in values.iter().enumerate() {
            let doc = crate::yaml::as_printed(&resource.value);
            if Crds::is_crd(&doc) {
                return self.reparsed(validator, options, file, bytes);
            }
            let outcome = validator.validate(&doc);
            if !outcome.findings.is_empty() || options.strict && outcome.unvalidated.is_some() {
                return self.reparsed(validator, options, file, bytes);
            }
            let (object, outcome) = Object::new(validator, (index, i, &doc), &self.owner, outcome);
            if let Some(outcome) = outcome {
                counts.push((outcome.unvalidated, outcome.skipped_rules));
            }
            objects.push(object);
        }
        self.files.push(file.to_string());
        self.objects.append(&mut objects);
        for (unvalidated, skipped_rules) in counts {
            self.count(unvalidated, skipped_rules);
        }
    }

    /// [`Checked::stream`] of `file` parsed from `bytes` (none when they are no UTF-8 YAML
    /// stream, as [`Validation::check_plan`] skips such a file).
    fn reparsed(&mut self, validator: &Validator, options: &Options, file: &str, bytes: &[u8]) {
        if let Some(parsed) = parse(file, bytes) {
            self.stream(validator, options, file, parsed);
        }
    }
}

/// The Kubernetes validation of one render (or one `kiln validate`), fed a BuildPlan at a
/// time as the render produces them ([`Validation::check_plan`], on the render's workers),
/// then ended once for the whole platform ([`Validation::finish`]): the CRDs rendered
/// anywhere, the custom resources they define, and the conflicts between Applications.
/// The findings, and their order, are those of validating every file at once.
pub struct Validation {
    options: Options,
    /// The CRDs of `spec.validation.crds`, or why `spec.validation` cannot be used (reported
    /// by [`Validation::finish`], after the render's own errors).
    crds: Result<Vec<Value>, String>,
    /// Each cluster's Kubernetes version.
    versions: BTreeMap<String, String>,
    /// A validator with no CRD per Kubernetes version named, or why there is none.
    builtin: BTreeMap<String, Result<Validator, String>>,
}

impl Validation {
    /// The validation of a render of `platform` (`spec.validation`, each cluster's
    /// `kubeVersion`); `spec.validation.crds` is read through `fs`.
    pub fn new(platform: &Platform, fs: &dyn FileSystem, strict: bool) -> Validation {
        let options = Options {
            warn: platform
                .validation
                .warn
                .iter()
                .filter_map(|w| Code::parse(w))
                .collect(),
            strict,
        };
        let versions: BTreeMap<String, String> = platform
            .clusters
            .iter()
            .map(|c| {
                let version = c.kube_version.clone();
                let version =
                    version.unwrap_or_else(|| kiln_k8s::builtin::DEFAULT_VERSION.to_string());
                (c.name.clone(), version)
            })
            .collect();
        let mut named: Vec<&str> = versions.values().map(String::as_str).collect();
        named.push(kiln_k8s::builtin::DEFAULT_VERSION);
        Validation {
            crds: spec_crds(platform, fs),
            builtin: named
                .into_iter()
                .map(|v| (v.to_string(), Validator::new(v)))
                .collect(),
            versions,
            options,
        }
    }

    /// Validates the files BuildPlan `plan` rendered, keeping what [`Validation::finish`]
    /// needs. kiln's own kustomization.yaml beside each plan's manifests is for Kargo and
    /// Argo CD to build, never applied itself. `rendered`, when given, holds the resources the
    /// plan's `.gen.yaml` was printed from, one per document in order: they are validated in
    /// memory, and the file's bytes parsed only when one of them has a finding
    /// (`Checked::rendered`); the other files (and every file without it: a render cache
    /// hit, an incremental render) are parsed.
    pub fn check_plan<'f>(
        &self,
        plan: &BuildPlan,
        files: impl IntoIterator<Item = (&'f str, &'f [u8])>,
        rendered: Option<&'f [Resource]>,
    ) -> Checked {
        let version = self
            .versions
            .get(&plan.cluster)
            .map_or(kiln_k8s::builtin::DEFAULT_VERSION, String::as_str);
        let owner = Owner {
            application: crate::kargo::naming::application_name(
                &plan.project,
                &plan.component,
                &plan.environment,
            ),
            environment: plan.environment.clone(),
            cluster: plan.cluster.clone(),
            namespace: Some(plan.namespace.clone()).filter(|n| !n.is_empty()),
        };
        let streams = files
            .into_iter()
            .filter(|(p, _)| !p.ends_with("kustomization.yaml"))
            .filter_map(|(p, b)| match rendered {
                Some(values) if p.ends_with(".gen.yaml") => Some((p, Input::Rendered(b, values))),
                _ => Some((p, Input::Parsed(parse(p, b)?))),
            });
        self.check(Some(owner), version, streams)
    }

    /// Validates `streams` (file, its documents) of `owner` for Kubernetes `version`.
    fn check<'s>(
        &self,
        owner: Option<Owner>,
        version: &str,
        streams: impl Iterator<Item = (&'s str, Input<'s>)>,
    ) -> Checked {
        let mut checked = Checked {
            version: version.to_string(),
            owner,
            ..Default::default()
        };
        if self.crds.is_err() {
            return checked;
        }
        for (file, input) in streams {
            // Every version a cluster names has its entry, made by `new`.
            let validator = match self.builtin.get(version) {
                Some(Ok(v)) => v,
                Some(Err(e)) => {
                    checked.error = Some(e.clone());
                    return checked;
                }
                None => {
                    checked.error = Some(format!("no validator for Kubernetes {version}"));
                    return checked;
                }
            };
            match input {
                Input::Parsed(parsed) => checked.stream(validator, &self.options, file, parsed),
                Input::Rendered(bytes, values) => {
                    checked.rendered(validator, &self.options, file, bytes, values);
                }
            }
        }
        checked
    }

    /// Ends the validation of `checked` (in plan order; `text` gives each file's bytes
    /// again): the custom resources validated against every CRD the platform rendered or
    /// named, then the conflicts between Applications.
    pub fn finish<'t>(
        self,
        checked: Vec<Checked>,
        text: &dyn Fn(&str) -> Option<&'t [u8]>,
        sourcing: &Sourcing,
    ) -> Result<Report, String> {
        let mut crds = self.crds?;
        if let Some(e) = checked.iter().find_map(|c| c.error.clone()) {
            return Err(e);
        }
        let mut report = Report::default();
        let mut checked = checked;
        for c in &mut checked {
            report.findings.append(&mut c.crd_findings);
            crds.append(&mut c.crds);
        }
        report.crd_kinds = crds
            .iter()
            .filter_map(|d| {
                let spec = &d["spec"];
                let (group, kind) = (spec["group"].as_str()?, spec["names"]["kind"].as_str()?);
                Some((group.to_string(), kind.to_string()))
            })
            .collect();
        let mut validators = Validators {
            by_version: BTreeMap::new(),
            crds,
        };
        // The file parsed again last: a plan's custom resources come file by file.
        let mut parsed: Option<(String, SourceFile, Vec<Value>)> = None;
        for c in &mut checked {
            let mut found = std::mem::take(&mut c.findings).into_iter().peekable();
            for i in 0..c.objects.len() {
                while let Some((_, f)) = found.next_if(|(at, _)| *at == i) {
                    report.findings.push(f);
                }
                let Some(custom) = c.objects[i].custom.take() else {
                    continue;
                };
                let (file, doc) = (c.files[c.objects[i].file].clone(), c.objects[i].doc);
                let validator = validators.get(&c.version)?;
                let defined = custom
                    .kinds
                    .iter()
                    .any(|(g, k)| validator.crds.defines(g, k));
                let mut outcome = custom.outcome;
                let strict = self.options.strict && outcome.unvalidated.is_some();
                if !defined && outcome.findings.is_empty() && !strict {
                    // As validated where rendered, and nothing to point at.
                    c.count(outcome.unvalidated, outcome.skipped_rules);
                    continue;
                }
                if parsed.as_ref().is_none_or(|(f, _, _)| *f != file) {
                    parsed = reparse(&file, text).map(|(s, d)| (file.clone(), s, d));
                }
                let changed = || format!("the rendered file `{file}` changed under the validation");
                let (source, object) = match &parsed {
                    Some((_, source, docs)) => (source, docs.get(doc).ok_or_else(changed)?),
                    None => return Err(changed()),
                };
                if defined {
                    outcome = validator.validate(object);
                    c.objects[i].namespaced =
                        validator.namespaced(&custom.api_version, &custom.kind);
                }
                let mut out = Vec::new();
                c.outcome(&self.options, (source, doc, object), outcome, &mut out);
                report.findings.append(&mut out);
            }
            report.findings.extend(found.map(|(_, f)| f));
            for (kind, n) in &c.unvalidated {
                *report.unvalidated.entry(kind.clone()).or_default() += n;
            }
            report.by_plan.push(PlanCounts {
                unvalidated: std::mem::take(&mut c.unvalidated),
                skipped_rules: c.skipped_rules,
            });
            report.skipped_rules += c.skipped_rules;
            report.objects += c.objects.len();
        }
        report
            .findings
            .extend(conflict_findings(&self.options, &checked, text)?);
        if report.findings.is_empty() {
            return Ok(report);
        }
        // Each rendered file is one BuildPlan's (an index of every file: built only for
        // findings to resolve).
        let plan_of: BTreeMap<&str, usize> = checked
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.files.iter().map(move |f| (f.as_str(), i)))
            .collect();
        for f in &mut report.findings {
            let provenance = plan_of
                .get(f.file.as_str())
                .and_then(|&plan| sourcing.of(plan, &f.file, f.document));
            f.resolve(provenance, sourcing);
        }
        Ok(report)
    }
}

/// `file`'s text (from `text`) parsed again, with its source for findings.
fn reparse<'t>(
    file: &str,
    text: &dyn Fn(&str) -> Option<&'t [u8]>,
) -> Option<(SourceFile, Vec<Value>)> {
    let (text, docs) = parse(file, text(file)?)?;
    Some((SourceFile::new(file, text), docs))
}

/// The conflicts between the Applications of `checked`, in object order.
fn conflict_findings<'t>(
    options: &Options,
    checked: &[Checked],
    text: &dyn Fn(&str) -> Option<&'t [u8]>,
) -> Result<Vec<Finding>, String> {
    let mut placements = Vec::new();
    let mut index = Vec::new();
    for c in checked {
        let Some(owner) = &c.owner else { continue };
        for o in &c.objects {
            let Some(identity) = &o.identity else {
                continue;
            };
            placements.push(Placement {
                application: &owner.application,
                environment: &owner.environment,
                cluster: &owner.cluster,
                destination_namespace: owner.namespace.as_deref(),
                object: identity,
                namespaced: o.namespaced,
            });
            index.push((&c.files[o.file], o.doc));
        }
    }
    let mut sources: BTreeMap<&str, (SourceFile, Vec<Value>)> = BTreeMap::new();
    let mut out = Vec::new();
    for c in conflicts(&placements) {
        let (file, doc) = index[c.at];
        if !sources.contains_key(file.as_str()) {
            let parsed = reparse(file, text).ok_or_else(|| {
                format!("the rendered file `{file}` changed under the validation")
            })?;
            sources.insert(file, parsed);
        }
        let (source, docs) = &sources[file.as_str()];
        let object = docs
            .get(doc)
            .ok_or_else(|| format!("the rendered file `{file}` changed under the validation"))?;
        let at = (c.finding.code, c.finding.pointer, c.finding.message);
        out.push(finding(options, source, doc, object, at));
    }
    Ok(out)
}

/// The CRDs of `spec.validation.crds` (read through `fs`), or why `spec.validation` cannot
/// be used: a rule it names does not exist, a CRD file cannot be read.
fn spec_crds(platform: &Platform, fs: &dyn FileSystem) -> Result<Vec<Value>, String> {
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
        let (_, docs) =
            parse(path, &bytes).ok_or_else(|| format!("CRD file `{path}` is not YAML"))?;
        extra.extend(docs.into_iter().filter(Crds::is_crd));
    }
    Ok(extra)
}

/// Validates the files each BuildPlan rendered, all at once (an incremental render's):
/// `files[i]` are plan `i`'s artifact paths in `set`, `provenance[i]` where each document of
/// its `.gen.yaml` came from; `spec.validation.crds` and the sources of findings are read
/// through `fs`.
pub fn validate_render(
    set: &ArtifactSet,
    platform: &Platform,
    plans: &[BuildPlan],
    (files, provenance): (&[Vec<String>], &[&[Option<Provenance>]]),
    fs: &dyn FileSystem,
    strict: bool,
) -> Result<Report, String> {
    let validation = Validation::new(platform, fs, strict);
    let checked = plans
        .iter()
        .zip(files)
        .map(|(plan, paths)| {
            let files = paths
                .iter()
                .filter_map(|p| Some((p.as_str(), set.files.get(p)?.as_slice())));
            validation.check_plan(plan, files, None)
        })
        .collect();
    let sourcing = Sourcing::render(platform, fs, provenance.to_vec());
    let text = |path: &str| set.files.get(path).map(Vec::as_slice);
    validation.finish(checked, &text, &sourcing)
}

/// `kiln validate PATHS…`: any manifests, as kubeconform takes them, for `kube_version`,
/// custom resources against `crds` (`--schema-dir`'s) and the CRDs among them.
pub fn validate_files(
    files: &[(String, Vec<u8>)],
    (kube_version, crds): (&str, Vec<Value>),
    options: &Options,
    checked_elsewhere: &[&str],
) -> Result<Report, String> {
    let validation = Validation {
        options: options.clone(),
        crds: Ok(crds),
        versions: BTreeMap::new(),
        builtin: BTreeMap::from([(kube_version.to_string(), Validator::new(kube_version))]),
    };
    let checked = files
        .iter()
        .filter_map(|(name, bytes)| Some((name.as_str(), parse(name, bytes)?)))
        .map(|(name, (text, mut docs))| {
            // Any YAML in the paths given: a document with neither `apiVersion` nor `kind`
            // (a values file, a test expectation) is no Kubernetes object and is not checked,
            // as the Kargo and Argo CD half of `kiln validate` skips it. Its index is kept.
            // Objects of `checked_elsewhere` (API groups) are left to the check that owns them
            // (Kargo's and Argo CD's, `crate::check`), not counted as unvalidated here.
            for d in &mut docs {
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
            let input = Input::Parsed((text, docs));
            validation.check(None, kube_version, std::iter::once((name, input)))
        })
        .collect();
    let lookup = |name: &str| {
        files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    };
    validation.finish(checked, &lookup, &Sourcing::none())
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
    pub(super) fn fixture(validation: &str) -> MemFs {
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
            Ok(b) => (Vec::new(), b.warnings.into_iter().map(|w| w.line).collect()),
            Err(KilnError::Conform(e)) => (
                e.errors
                    .iter()
                    .map(|f| format!("{} {}", f.error.code.as_str(), f.error))
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
        "invalid_crd web/dev/crd/crd.gen.yaml:18: CustomResourceDefinition/bolts.example.com at `/spec/versions/0/schema/openAPIV3Schema/properties/spec`: invalid pattern `[`: regex parse error:\n    [\n    ^\nerror: unclosed character class; from components/crd/component.yaml:39 (resources)",
        "invalid_crd web/prod/crd/crd.gen.yaml:18: CustomResourceDefinition/bolts.example.com at `/spec/versions/0/schema/openAPIV3Schema/properties/spec`: invalid pattern `[`: regex parse error:\n    [\n    ^\nerror: unclosed character class; from components/crd/component.yaml:39 (resources)",
        "wrong_type web/dev/cr/cr.gen.yaml:4: ConfigMap/web-dev/c at `/data/k`: must be a string, not integer `1`; from components/cr/component.yaml:10 (resources)",
        "maximum web/dev/cr/cr.gen.yaml:16: Widget/web-dev/w at `/spec/size`: 20 must be <= 10; from components/cr/component.yaml:8 (resources)",
        "unserved_version web/dev/cr/cr.gen.yaml:18: Widget/web-dev/w2 at `/apiVersion`: the CRD of Widget does not serve `example.com/v2`; it serves `example.com/v1`; from components/cr/component.yaml:9 (resources)",
        "wrong_type web/prod/cr/cr.gen.yaml:4: ConfigMap/web-prod/c at `/data/k`: must be a string, not integer `1`; from components/cr/component.yaml:10 (resources)",
        "maximum web/prod/cr/cr.gen.yaml:16: Widget/web-prod/w at `/spec/size`: 20 must be <= 10; from components/cr/component.yaml:8 (resources)",
        "unserved_version web/prod/cr/cr.gen.yaml:18: Widget/web-prod/w2 at `/apiVersion`: the CRD of Widget does not serve `example.com/v2`; it serves `example.com/v1`; from components/cr/component.yaml:9 (resources)",
        "no_schema web/dev/crd/crd.gen.yaml:49: Gadget/web-dev/g: no schema for example.com/v1 Gadget; from components/crd/component.yaml:40 (resources)",
        "maximum web/dev/crd/crd.gen.yaml:63: Widget/web-dev/w3 at `/spec/size`: 30 must be <= 10; from components/crd/component.yaml:41 (resources)",
        "no_schema web/prod/crd/crd.gen.yaml:49: Gadget/web-prod/g: no schema for example.com/v1 Gadget; from components/crd/component.yaml:40 (resources)",
        "maximum web/prod/crd/crd.gen.yaml:63: Widget/web-prod/w3 at `/spec/size`: 30 must be <= 10; from components/crd/component.yaml:41 (resources)",
        "wrong_type web/dev/bad/bad.gen.yaml:4: ConfigMap/web-dev/bad at `/data/n`: must be a string, not integer `5`; from components/bad/component.yaml:8 (resources)",
        "unknown_field web/dev/bad/bad.gen.yaml:9: ConfigMap/web-dev/bad at `/spec`: unknown field `spec`; from components/bad/component.yaml:8 (resources)",
        "maximum web/dev/bad/bad.gen.yaml:18: Service/web-dev/svc at `/spec/ports/0/port`: 99999 must be <= 65535 (a port number); from components/bad/component.yaml:10 (resources)",
        "unserved_version web/dev/bad/bad.gen.yaml:20: PodDisruptionBudget/web-dev/pdb at `/apiVersion`: Kubernetes 1.36 does not serve `policy/v1beta1` PodDisruptionBudget; it serves `policy/v1`; from components/bad/component.yaml:9 (resources)",
        "wrong_type web/prod/bad/bad.gen.yaml:4: ConfigMap/web-prod/bad at `/data/n`: must be a string, not integer `5`; from components/bad/component.yaml:8 (resources)",
        "unknown_field web/prod/bad/bad.gen.yaml:9: ConfigMap/web-prod/bad at `/spec`: unknown field `spec`; from components/bad/component.yaml:8 (resources)",
        "maximum web/prod/bad/bad.gen.yaml:18: Service/web-prod/svc at `/spec/ports/0/port`: 99999 must be <= 65535 (a port number); from components/bad/component.yaml:10 (resources)",
        "unserved_version web/prod/bad/bad.gen.yaml:20: PodDisruptionBudget/web-prod/pdb at `/apiVersion`: Kubernetes 1.36 does not serve `policy/v1beta1` PodDisruptionBudget; it serves `policy/v1`; from components/bad/component.yaml:9 (resources)",
        "cluster_scoped_conflict web/prod/role/role.gen.yaml:2: ClusterRole/reader: cluster-scoped ClusterRole `reader` is emitted into cluster `c` by Applications `web-role-dev` and `web-role-prod` with different content; from components/role/component.yaml:8 (resources)",
        "shared_resource web/prod/s1/s1.gen.yaml:2: ConfigMap/common/shared: ConfigMap `shared` in namespace `common` of cluster `c` is owned by Applications `web-s1-dev` and `web-s1-prod`; they would overwrite each other (Argo CD's SharedResourceWarning); from components/shared/component.yaml:8 (resources)",
        "shared_resource web/dev/s2/s2.gen.yaml:2: ConfigMap/common/shared: ConfigMap `shared` in namespace `common` of cluster `c` is owned by Applications `web-s1-dev` and `web-s2-dev`; they would overwrite each other (Argo CD's SharedResourceWarning); from components/shared/component.yaml:8 (resources)",
        "shared_resource web/prod/s2/s2.gen.yaml:2: ConfigMap/common/shared: ConfigMap `shared` in namespace `common` of cluster `c` is owned by Applications `web-s1-dev` and `web-s2-prod`; they would overwrite each other (Argo CD's SharedResourceWarning); from components/shared/component.yaml:8 (resources)",
    ];

    #[test]
    fn findings_come_in_document_order_then_conflicts() {
        let (errors, _) = findings("", true);
        // The render reports an error met alike in dev and prod once (issue 38, item 10).
        let mut once: Vec<&str> = Vec::new();
        let alike = |e: &str| {
            e.replace("web/prod/", "web/dev/")
                .replace("web-prod/", "web-dev/")
        };
        for e in EXPECTED {
            if e.contains("_conflict")
                || e.starts_with("shared_")
                || !once.iter().any(|o| alike(o) == alike(e))
            {
                once.push(e);
            }
        }
        assert_eq!(errors, once);
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

    const WIDGET_CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Cluster\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer, maximum: 10}}}}}\n";

    /// A validation of Kubernetes 1.33 with no platform.
    pub(super) fn validation() -> super::Validation {
        super::Validation {
            options: super::Options::default(),
            crds: Ok(Vec::new()),
            versions: Default::default(),
            builtin: [("1.33".to_string(), kiln_k8s::Validator::new("1.33"))].into(),
        }
    }

    /// Issue 38, item 8: each plan's objects are validated as it is rendered and dropped;
    /// only an object of a kind no built-in schema covers waits for the platform's CRDs,
    /// and a custom resource rendered before its CRD is validated against it all the same.
    #[test]
    fn a_custom_resource_rendered_before_its_crd_is_validated_the_same() {
        let cr = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 20}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n";
        let files = [
            ("cr.yaml".to_string(), cr.as_bytes().to_vec()),
            ("crd.yaml".to_string(), WIDGET_CRD.as_bytes().to_vec()),
        ];
        let owner = |app: &str| super::Owner {
            application: app.to_string(),
            environment: "dev".to_string(),
            cluster: "c".to_string(),
            namespace: None,
        };
        let run = |order: [usize; 2]| {
            let v = validation();
            let checked: Vec<super::Checked> = order
                .iter()
                .map(|&i| {
                    let (name, bytes) = &files[i];
                    let parsed = super::parse(name, bytes).unwrap();
                    v.check(
                        Some(owner(name)),
                        "1.33",
                        std::iter::once((name.as_str(), super::Input::Parsed(parsed))),
                    )
                })
                .collect();
            let cr = &checked[order.iter().position(|&i| i == 0).unwrap()];
            // The ConfigMap and the ClusterRole were final where rendered: only their
            // conflict keys are kept, the ClusterRole's with a digest of its content.
            let kept: Vec<bool> = cr.objects.iter().map(|o| o.custom.is_some()).collect();
            assert_eq!(kept, [true, false, false]);
            let digests: Vec<bool> = cr
                .objects
                .iter()
                .map(|o| o.identity.as_ref().unwrap().content.is_some())
                .collect();
            assert_eq!(digests, [true, false, true]);
            let text = |name: &str| {
                files
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, b)| b.as_slice())
            };
            let report = v.finish(checked, &text, &super::Sourcing::none()).unwrap();
            let found: Vec<String> = report.findings.iter().map(|f| f.to_string()).collect();
            (found, report.unvalidated)
        };
        let (before, unvalidated) = run([0, 1]);
        assert_eq!(
            before,
            ["cr.yaml:4: Widget/w at `/spec/size`: 20 must be <= 10"]
        );
        assert!(unvalidated.is_empty(), "{unvalidated:?}");
        assert_eq!(run([1, 0]), (before, unvalidated));
        // With no CRD the Widget stays as validated where rendered: counted, not checked.
        let v = validation();
        let (name, bytes) = &files[0];
        let parsed = super::parse(name, bytes).unwrap();
        let checked = v.check(
            Some(owner(name)),
            "1.33",
            std::iter::once((name.as_str(), super::Input::Parsed(parsed))),
        );
        let report = v
            .finish(vec![checked], &|_| None, &super::Sourcing::none())
            .unwrap();
        assert!(report.findings.is_empty());
        assert_eq!(report.unvalidated.get("example.com/v1 Widget"), Some(&1));
    }
}

/// Issue 36 (speed): the rendered objects are validated in memory, as printed, and their
/// bytes parsed only for a file with a finding or a CRD. What each plan's validation keeps
/// (findings, conflict keys, content digests, custom resources, counts) is what parsing the
/// bytes gives.
#[cfg(test)]
mod in_memory {
    use crate::emit::{Layout, emit_plan};
    use crate::evaluate::Selection;
    use crate::fs::FileSystem;
    use std::path::Path;

    /// Each plan's validation, as `Debug` text, from its `.gen.yaml`'s bytes and from the
    /// resources it was printed from.
    fn both_ways(fs: &dyn FileSystem, dir: &str, strict: bool) -> Vec<(String, String)> {
        let (platform, mut plans) =
            crate::pipeline::plan(fs, Path::new(dir), None, &Selection::default()).unwrap();
        let validation = super::Validation::new(&platform, fs, strict);
        crate::render::render(&mut plans, &platform.sources, fs, &|plan, render| {
            let rendered = render()?;
            let files = emit_plan(&rendered, Layout::Service);
            let check = |values| {
                let files = files.iter().map(|(p, b)| (p.as_str(), b.as_slice()));
                format!("{:?}", validation.check_plan(plan, files, values))
            };
            Ok((check(None), check(Some(rendered.resources.as_slice()))))
        })
        .unwrap()
    }

    #[test]
    fn the_bank_platform_validates_in_memory_as_its_bytes() {
        let bank = concat!(env!("CARGO_MANIFEST_DIR"), "/platforms/bank");
        let checked = both_ways(&crate::fs::RealFs, bank, true);
        assert!(checked.len() > 20, "{}", checked.len());
        for (bytes, values) in &checked {
            assert_eq!(bytes, values);
        }
    }

    /// The conform fixture has findings of every kind, CRDs and custom resources, kinds with
    /// no schema and conflicts: its files with findings are parsed, the others not.
    #[test]
    fn findings_crds_and_conflict_keys_are_those_of_the_bytes() {
        for strict in [false, true] {
            let fs = super::tests::fixture("");
            for (bytes, values) in both_ways(&fs, "/r/platforms/p", strict) {
                assert_eq!(bytes, values);
            }
        }
    }

    /// An integral float in memory is printed, and so applied, as an integer: a
    /// cluster-scoped object rendered with `value: 1000.0` in one environment and read back
    /// from its bytes (`value: 1000`, as a render cache hit gives it) in another is the same
    /// content. Validated as it is in memory, its digest would differ, and the two
    /// environments would conflict (`cluster_scoped_conflict`).
    #[test]
    fn an_integral_float_is_judged_as_the_integer_it_prints() {
        let class = |value: &str| {
            format!(
                "{{\"apiVersion\": \"scheduling.k8s.io/v1\", \"kind\": \"PriorityClass\", \"metadata\": {{\"name\": \"high\"}}, \"value\": {value}}}"
            )
        };
        let run = |dev: &str, prod: &str| {
            let v = super::tests::validation();
            let resource = |text: &str| {
                let value: serde_json::Value = serde_json::from_str(text).unwrap();
                crate::resource::Resource::new(value, None)
            };
            let dev = [resource(&class(dev))];
            let dev_bytes = crate::yaml::to_yaml(&dev[0].value);
            let prod_bytes = crate::yaml::to_yaml(&resource(&class(prod)).value);
            let owner = |env: &str| super::Owner {
                application: format!("web-pc-{env}"),
                environment: env.to_string(),
                cluster: "c".to_string(),
                namespace: None,
            };
            let in_memory = super::Input::Rendered(dev_bytes.as_bytes(), &dev);
            let parsed = super::parse("prod.gen.yaml", prod_bytes.as_bytes()).unwrap();
            let checked = vec![
                v.check(
                    Some(owner("dev")),
                    "1.33",
                    std::iter::once(("dev.gen.yaml", in_memory)),
                ),
                v.check(
                    Some(owner("prod")),
                    "1.33",
                    std::iter::once(("prod.gen.yaml", super::Input::Parsed(parsed))),
                ),
            ];
            let files = [
                ("dev.gen.yaml", dev_bytes.clone()),
                ("prod.gen.yaml", prod_bytes),
            ];
            let text = |name: &str| {
                files
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, t)| t.as_bytes())
            };
            let report = v.finish(checked, &text, &super::Sourcing::none()).unwrap();
            (
                dev_bytes,
                report
                    .findings
                    .iter()
                    .map(|f| f.code.as_str())
                    .collect::<Vec<_>>(),
            )
        };
        let (printed, found) = run("1000.0", "1000");
        assert!(printed.contains("value: 1000\n"), "{printed}");
        assert!(found.is_empty(), "{found:?}");
        // Different content does conflict.
        assert_eq!(run("1000.0", "2000").1, ["cluster_scoped_conflict"]);
    }
}

/// Issue 36 (speed): a `wrong_type` finding's parameter is read from its spec file, which is
/// parsed once however many findings name it.
#[cfg(test)]
mod parameters {
    use crate::fs::MemFs;
    use std::path::Path;

    #[test]
    fn a_spec_file_is_parsed_once_for_every_wrong_type_it_placed() {
        let mut fs = MemFs::new();
        fs.add_file(
            "/r/platforms/p/platform.yaml",
            "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: p\nspec:\n  clusters: [{name: c, server: https://c}]\n  environments:\n  - {name: dev, tier: nonprod, cluster: c}\n  projects:\n  - name: web\n    components:\n    - path: ../../components/a\n",
        )
        .add_file(
            "/r/components/a/component.yaml",
            "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: a\nspec:\n  parameters:\n    type: object\n    properties:\n      debug: {type: boolean, default: true}\n  generators:\n  - resources:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {debug: \"${params.debug}\"}}}\n",
        )
        .add_dir("/r/.git");
        let platform =
            crate::pipeline::load_platform(&fs, Path::new("/r/platforms/p"), None).unwrap();
        let sourcing = super::Sourcing::render(&platform, &fs, Vec::new());
        let origin = super::SourceAt {
            kind: "resources".into(),
            file: "components/a/component.yaml".into(),
            line: Some(12),
            pointer: Some("/spec/generators/0/resources/0/metadata/labels/debug".into()),
            values: Vec::new(),
        };
        for _ in 0..5 {
            let found = sourcing.parameter(&origin, Some(&serde_json::json!(true)));
            let found = found.unwrap();
            assert_eq!(
                (found.name.as_str(), found.kind.as_str()),
                ("debug", "boolean")
            );
            assert_eq!(found.defined, "components/a/component.yaml:9");
        }
        assert_eq!(sourcing.parses.get(), 1);
    }
}

#[cfg(test)]
mod snippets {
    use miette::{Diagnostic, SourceSpan};

    /// Issue 36: the findings of one large stream share its text, and miette gets only the
    /// lines around each label, with the whole file's line numbers: printing N findings
    /// no longer reads (nor copies) the whole stream N times.
    #[test]
    fn findings_share_their_file_and_give_miette_the_lines_around_the_label() {
        let doc = |i: usize| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n  namespace: n\ndata:\n  a: \"x\"\nreplicas: {i}\n"
            )
        };
        let text: String = (0..2000).map(|i| format!("---\n{}", doc(i))).collect();
        let files = [("big.yaml".to_string(), text.clone().into_bytes())];
        let report = super::validate_files(
            &files,
            ("1.33", Vec::new()),
            &super::Options::default(),
            &[],
        )
        .unwrap();
        assert_eq!(report.findings.len(), 2000);
        let first = report.findings[0].rendered.as_ref().unwrap();
        for f in &report.findings {
            let rendered = f.rendered.as_ref().unwrap();
            assert!(std::sync::Arc::ptr_eq(&first.text, &rendered.text));
            let (snippet, _, _) = f.snippet.as_ref().unwrap();
            assert!(std::sync::Arc::ptr_eq(&first.text, &snippet.text));
        }
        let last = report.findings.last().unwrap();
        let source = last.source_code().unwrap();
        let all = source
            .read_span(&SourceSpan::from((0, 0)), 0, usize::MAX)
            .unwrap();
        // One document of 8 lines (from line 17,993), where the file has 18,000.
        assert_eq!(std::str::from_utf8(all.data()).unwrap(), doc(1999));
        assert_eq!(all.line() + 1, 17_993);
        // The label reads where the whole file has it: the key on line 18,000, the last.
        let label = last.labels().unwrap().next().unwrap();
        let at = source.read_span(label.inner(), 0, 0).unwrap();
        assert_eq!((at.line() + 1, at.data()), (18_000, b"replicas".as_slice()));
        assert_eq!(last.to_json()["line"], 18_000);
        let mut shown = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .render_report(&mut shown, last)
            .unwrap();
        assert!(shown.contains("[big.yaml:18000:1]"), "{shown}");
        assert!(shown.contains("18000 │ replicas: 1999"), "{shown}");
    }
}
