//! What `kiln status` reads of the render's Kargo and Argo CD objects: per Application where
//! it syncs from and which Stage writes there, per Stage the Warehouses it requests, and the
//! Warehouses whole.
//!
//! Parsing every Stage and Application of the render (`Objects::from_artifacts`) was 1.6 s of
//! a 3.5 s status at 1,000 components × 10 environments (docs/BENCHMARKS.md): a Stage's
//! promotion template is most of its bytes and status reads none of it. The render's files
//! are kiln's own YAML (`crate::yaml::to_yaml_stream`: block style, one key or `- ` item per
//! line, a scalar that would not read back as itself quoted), so [`leaves`] reads each
//! document line by line, following indentation, and keeps only the scalars under the
//! pointers asked for; every other subtree is skipped by its indentation alone. A scalar it
//! keeps that is not a plain string (quoted, or a word such as `true`) goes through the YAML
//! parser. Anything outside that form (flow collections, anchors, tags, comments, a scalar
//! folded over lines, a block scalar asked for) makes it give up, and that document is
//! parsed whole: the fast path never reads a value differently, it only declines.
//!
//! The rare drift rebuild needs the whole Stage and every Application: it parses the render
//! then ([`Objects::from_artifacts`], once per status).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::artifact::ArtifactSet;
use crate::promote::freight::Subscriptions;
use crate::promote::{Objects, PromoteError};

/// Where one Application syncs from, and the Stage authorized to write there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Application {
    pub name: String,
    /// The `kiln.dev/project`, `kiln.dev/component` and `kiln.dev/environment` labels.
    pub project: String,
    pub component: String,
    pub environment: String,
    /// `spec.source` (else `spec.sources[0]`): `repoURL`, `targetRevision`, `path`.
    pub repo_url: String,
    pub target_revision: String,
    pub path: String,
    /// `kargo.akuity.io/authorized-stage` (`<project>:<stage>`).
    pub authorized_stage: String,
}

/// A Stage as status needs it: its name and the Warehouses it requests Freight from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Stage {
    /// The Kargo project (the Stage's namespace).
    pub project: String,
    pub name: String,
    /// `requestedFreight[].origin.name`, in order.
    pub requested: Vec<String>,
}

/// The render's objects as [`super::status`] reads them.
#[derive(Debug, Default)]
pub(super) struct RenderObjects {
    pub applications: Vec<Application>,
    pub stages: BTreeMap<(String, String), Stage>,
    /// The Warehouses, whole (few and small), by project (their namespace):
    /// [`RenderObjects::subscriptions`] reads each project's alone.
    pub warehouses: BTreeMap<String, Objects>,
}

/// The pointers an Application or a Stage is read at (a sequence item's index is `*`).
const WANTED: &[&str] = &[
    "/apiVersion",
    "/kind",
    "/metadata/name",
    "/metadata/namespace",
    "/metadata/labels/kiln.dev~1project",
    "/metadata/labels/kiln.dev~1component",
    "/metadata/labels/kiln.dev~1environment",
    "/metadata/annotations/kargo.akuity.io~1authorized-stage",
    "/spec/source/repoURL",
    "/spec/source/targetRevision",
    "/spec/source/path",
    "/spec/sources/0/repoURL",
    "/spec/sources/0/targetRevision",
    "/spec/sources/0/path",
    "/spec/requestedFreight/*/origin/kind",
    "/spec/requestedFreight/*/origin/name",
];

/// Whether `pointer` is one of [`WANTED`] or lies on the way to one.
fn wanted(pointer: &str) -> bool {
    WANTED.iter().any(|w| on_the_way(pointer, w))
}

/// Whether `pointer` is `pattern` or a prefix of it, token by token (`*` matches an index).
/// Byte by byte, without splitting either: it is asked of every key the reader meets.
fn on_the_way(pointer: &str, pattern: &str) -> bool {
    let (p, w) = (pointer.as_bytes(), pattern.as_bytes());
    let (mut i, mut j) = (0, 0);
    loop {
        if i == p.len() {
            // The pointer ends: on the way when the pattern's token ends here too.
            return j == w.len() || w[j] == b'/';
        }
        if j == w.len() {
            return false;
        }
        let token_start = j > 0 && w[j - 1] == b'/';
        if token_start && w[j] == b'*' && w.get(j + 1).is_none_or(|&b| b == b'/') {
            let end = p[i..]
                .iter()
                .position(|&b| b == b'/')
                .map_or(p.len(), |k| i + k);
            let token = &p[i..end];
            if !(token.iter().all(u8::is_ascii_digit) || token == b"*") {
                return false;
            }
            i = end;
            j += 1;
            continue;
        }
        if p[i] != w[j] {
            return false;
        }
        i += 1;
        j += 1;
    }
}

impl RenderObjects {
    /// What each Warehouse of `project` subscribes to ([`Objects::subscriptions`] over that
    /// project's Warehouses only: filtering every Warehouse of the render per project was
    /// quadratic).
    pub fn subscriptions(&self, project: &str) -> BTreeMap<String, Subscriptions> {
        self.warehouses
            .get(project)
            .map(|o| o.subscriptions(project))
            .unwrap_or_default()
    }

    /// Reads every Application, Stage and Warehouse of `set`'s YAML files (the files
    /// `Objects::from_artifacts` reads).
    ///
    /// Errors: a file that does not parse (its documents are parsed whole then);
    /// [`PromoteError::InvalidStage`] for a Stage that requests Freight from anything but a
    /// Warehouse.
    pub fn read(set: &ArtifactSet) -> Result<Self, PromoteError> {
        let mut out = RenderObjects::default();
        for (path, text) in Objects::files(set) {
            let read: Option<Vec<(&str, Leaves<'_>)>> = documents(text)
                .map(|doc| doc.and_then(|d| Some((d, Leaves(leaves(d, &wanted)?)))))
                .collect();
            match read {
                Some(docs) => {
                    for (doc, leaves) in docs {
                        out.add_read(path, doc, &leaves)?;
                    }
                }
                // Not in the form `leaves` reads: the whole file, parsed.
                None => {
                    for value in parse(path, text)? {
                        out.add_parsed(value)?;
                    }
                }
            }
        }
        Ok(out)
    }

    /// Adds a document read by [`leaves`]; a Warehouse is parsed whole.
    fn add_read(&mut self, path: &str, doc: &str, leaves: &Leaves<'_>) -> Result<(), PromoteError> {
        match (
            leaves.text("/apiVersion").as_str(),
            leaves.text("/kind").as_str(),
        ) {
            ("kargo.akuity.io/v1alpha1", "Warehouse") => {
                for value in parse(path, doc)? {
                    self.add_parsed(value)?;
                }
            }
            ("kargo.akuity.io/v1alpha1", "Stage") => {
                let mut requested = Vec::new();
                for i in 0.. {
                    let item = format!("/spec/requestedFreight/{i}");
                    if !leaves.has(&item) {
                        break;
                    }
                    let kind = leaves.text(&format!("{item}/origin/kind"));
                    requested.push((kind, leaves.text(&format!("{item}/origin/name"))));
                }
                self.add_stage(
                    leaves.text("/metadata/namespace"),
                    leaves.text("/metadata/name"),
                    requested,
                )?;
            }
            ("argoproj.io/v1alpha1", "Application") => {
                let from = if leaves.has("/spec/source") {
                    "/spec/source"
                } else {
                    "/spec/sources/0"
                };
                let label = |k: &str| leaves.text(&format!("/metadata/labels/kiln.dev~1{k}"));
                self.applications.push(Application {
                    name: leaves.text("/metadata/name"),
                    project: label("project"),
                    component: label("component"),
                    environment: label("environment"),
                    repo_url: leaves.text(&format!("{from}/repoURL")),
                    target_revision: leaves.text(&format!("{from}/targetRevision")),
                    path: leaves.text(&format!("{from}/path")),
                    authorized_stage: leaves
                        .text("/metadata/annotations/kargo.akuity.io~1authorized-stage"),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// Adds a parsed document (what [`Objects::from_artifacts`] keeps of it).
    fn add_parsed(&mut self, d: Value) -> Result<(), PromoteError> {
        let s = |p: &str| {
            d.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match (s("/apiVersion").as_str(), s("/kind").as_str()) {
            ("kargo.akuity.io/v1alpha1", "Warehouse") => self
                .warehouses
                .entry(s("/metadata/namespace"))
                .or_default()
                .warehouses
                .push(d),
            ("kargo.akuity.io/v1alpha1", "Stage") => {
                let requested = d
                    .pointer("/spec/requestedFreight")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|r| {
                        let s = |p: &str| r.pointer(p).and_then(Value::as_str).unwrap_or("");
                        (s("/origin/kind").to_string(), s("/origin/name").to_string())
                    })
                    .collect();
                self.add_stage(s("/metadata/namespace"), s("/metadata/name"), requested)?;
            }
            ("argoproj.io/v1alpha1", "Application") => {
                let source = d
                    .pointer("/spec/source")
                    .or_else(|| d.pointer("/spec/sources/0"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let of = |v: &Value, p: &str| {
                    v.pointer(p)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let label = |k: &str| s(&format!("/metadata/labels/kiln.dev~1{k}"));
                self.applications.push(Application {
                    name: s("/metadata/name"),
                    project: label("project"),
                    component: label("component"),
                    environment: label("environment"),
                    repo_url: of(&source, "/repoURL"),
                    target_revision: of(&source, "/targetRevision"),
                    path: of(&source, "/path"),
                    authorized_stage: s("/metadata/annotations/kargo.akuity.io~1authorized-stage"),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// Adds a Stage; `requested` as (origin kind, name), each a Warehouse as
    /// [`crate::promote::StageDef::from_object`] requires.
    fn add_stage(
        &mut self,
        project: String,
        name: String,
        requested: Vec<(String, String)>,
    ) -> Result<(), PromoteError> {
        let mut warehouses = Vec::new();
        for (kind, warehouse) in requested {
            if kind != "Warehouse" {
                return Err(PromoteError::InvalidStage {
                    stage: name,
                    message: format!("requested Freight of origin kind {kind:?}"),
                });
            }
            warehouses.push(warehouse);
        }
        self.stages.insert(
            (project.clone(), name.clone()),
            Stage {
                project,
                name,
                requested: warehouses,
            },
        );
        Ok(())
    }
}

/// `text`'s documents, split at its `---` lines; `None` for a document the split cannot
/// vouch for (a `---` line with content after it, a `...` line), which sends the whole file
/// to the parser. The marker lines are found by searching for them, not line by line: the
/// reader ([`leaves`]) goes through each document's lines once.
fn documents(text: &str) -> impl Iterator<Item = Option<&str>> {
    let mut rest = Some(0);
    // The next line starting with `...` at or after an offset, found once for the file.
    let mut dots: Option<Option<usize>> = None;
    std::iter::from_fn(move || {
        let start = rest?;
        let from = |needle: &str| -> Option<usize> {
            if text[start..].starts_with(needle) {
                return Some(start);
            }
            let marked = format!("\n{needle}");
            text[start..].find(&marked).map(|i| start + i + 1)
        };
        let dashes = from("---");
        let dot = match dots {
            Some(Some(d)) if d >= start => Some(d),
            Some(None) => None,
            _ => {
                let d = from("...");
                dots = Some(d);
                d
            }
        };
        let at = match (dashes, dot) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(at) = at else {
            rest = None;
            return Some(Some(&text[start..]));
        };
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        if text[at..end].trim_end_matches(['\n', '\r']) == "---" {
            rest = Some(end);
            return Some(Some(&text[start..at]));
        }
        rest = None;
        Some(None)
    })
}

fn parse(path: &str, text: &str) -> Result<Vec<Value>, PromoteError> {
    crate::yaml::parse_stream(path, text).map_err(|e| PromoteError::Io {
        message: format!("{path}: {e}"),
    })
}

/// A scalar as [`leaves`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf<'t> {
    /// A plain scalar's text.
    Plain(&'t str),
    /// A one-line scalar the YAML parser decodes: quoted, `{}`, `[]`, or nothing (`key:`,
    /// null).
    Other(&'t str),
    /// A mapping or sequence written over the following lines (its nodes are leaves too).
    Collection,
}

/// The leaves of one document, by pointer, in document order.
struct Leaves<'t>(Vec<(String, Leaf<'t>)>);

impl Leaves<'_> {
    /// The string at `pointer`, `""` when there is none or it is no string (as
    /// `Value::pointer(..).as_str()` reads the parsed document).
    fn text(&self, pointer: &str) -> String {
        let Some((_, leaf)) = self.0.iter().find(|(p, _)| p == pointer) else {
            return String::new();
        };
        let parsed = |t: &str| {
            crate::yaml::parse_one("", t)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        match *leaf {
            // kiln's writer leaves a string plain only when it reads back as that string
            // (go-yaml's rule); anything else is left to the parser.
            Leaf::Plain(t) if kiln_base::yaml::goyaml::resolves_to_str(t) => t.to_string(),
            Leaf::Plain(t) | Leaf::Other(t) => parsed(t),
            Leaf::Collection => String::new(),
        }
    }

    /// Whether the document has a node at `pointer`.
    fn has(&self, pointer: &str) -> bool {
        self.0.iter().any(|(p, _)| {
            p.strip_prefix(pointer)
                .is_some_and(|r| r.is_empty() || r.starts_with('/'))
        })
    }
}

/// One open collection: the column of its entries, its pointer, and for a sequence the
/// index of its next item.
struct Open {
    indent: usize,
    pointer: String,
    next: Option<usize>,
}

/// Whether a line's content is a sequence item (`- …` or a bare `-`).
fn is_item(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

/// The scalars of the block-style YAML document `doc` at the pointers `wanted` accepts (or
/// below them), by pointer; `wanted` is asked of each mapping key, and a key it refuses is
/// skipped with everything indented below it. `None` when `doc` is not in the form kiln
/// writes (module docs): the caller parses it then.
fn leaves<'t>(doc: &'t str, wanted: &dyn Fn(&str) -> bool) -> Option<Vec<(String, Leaf<'t>)>> {
    // A byte order mark would make the first key another key: the parser's to read.
    if doc.starts_with('\u{feff}') {
        return None;
    }
    let mut out = Vec::new();
    let mut open = vec![Open {
        indent: 0,
        pointer: String::new(),
        next: None,
    }];
    // A key (or `-`) whose value starts on a later line: its column, its pointer, and whether
    // it is a sequence item (whose nested sequence must be indented further).
    let mut pending: Option<(usize, String, bool)> = None;
    // Skipping what lies below a key at this column (a refused subtree, a block scalar).
    let mut skip: Option<usize> = None;
    let mut buffer = String::new();
    for line in doc.lines() {
        let content = line.trim_start_matches(' ');
        if content.is_empty() {
            continue;
        }
        let indent = line.len() - content.len();
        if let Some(k) = skip {
            if indent > k || (indent == k && is_item(content)) {
                continue;
            }
            skip = None;
        }
        if content.starts_with(['#', '\t']) {
            return None;
        }
        if let Some((k, pointer, item)) = pending.take() {
            if is_item(content) && (indent > k || (indent == k && !item)) {
                out.push((pointer.clone(), Leaf::Collection));
                open.push(Open {
                    indent,
                    pointer,
                    next: Some(0),
                });
            } else if indent > k {
                out.push((pointer.clone(), Leaf::Collection));
                open.push(Open {
                    indent,
                    pointer,
                    next: None,
                });
            } else {
                out.push((pointer, Leaf::Other("")));
            }
        }
        while open.last().is_some_and(|o| o.indent > indent) {
            open.pop();
        }
        // A sequence written at its key's column ends at the next key there.
        if open.last().is_some_and(|o| o.next.is_some()) && !is_item(content) {
            open.pop();
        }
        let top = open.last_mut()?;
        if top.indent != indent {
            // A line indented past its collection: a folded scalar's continuation.
            return None;
        }
        let (column, parent, body) = match &mut top.next {
            Some(next) => {
                let item = format!("{}/{next}", top.pointer);
                *next += 1;
                let body = content[1..].trim_start_matches(' ');
                if body.is_empty() {
                    pending = Some((indent, item, true));
                    continue;
                }
                if is_item(body) {
                    return None;
                }
                let column = indent + content.len() - body.len();
                match split_key(body) {
                    Some(_) => {
                        out.push((item.clone(), Leaf::Collection));
                        open.push(Open {
                            indent: column,
                            pointer: item,
                            next: None,
                        });
                        let top = open.last()?;
                        (column, top.pointer.as_str(), body)
                    }
                    None => {
                        out.push((item, scalar(body)?));
                        continue;
                    }
                }
            }
            None => (indent, top.pointer.as_str(), content),
        };
        let (key, value) = split_key(body)?;
        // The pointer is built in one buffer and copied only for a key that is kept: most
        // keys are refused.
        buffer.clear();
        buffer.push_str(parent);
        buffer.push('/');
        match key.contains(['~', '/']) {
            true => buffer.push_str(&kiln_base::pointer::escape(key)),
            false => buffer.push_str(key),
        }
        if !wanted(&buffer) {
            skip = Some(column);
            continue;
        }
        let pointer = buffer.clone();
        if value.is_empty() {
            pending = Some((column, pointer, false));
        } else if value.starts_with(['|', '>']) {
            // A block scalar asked for: the parser reads it.
            return None;
        } else {
            out.push((pointer, scalar(value)?));
        }
    }
    if let Some((_, pointer, _)) = pending {
        out.push((pointer, Leaf::Other("")));
    }
    Some(out)
}

/// `key: value` (or `key:`) with a plain key; `None` for anything else.
fn split_key(content: &str) -> Option<(&str, &str)> {
    let (key, value) = match content.find(": ") {
        Some(i) => (&content[..i], content[i + 2..].trim_start_matches(' ')),
        None => (content.strip_suffix(':')?, ""),
    };
    // `<<` merges another mapping's keys in (YAML 1.1's merge key): the parser's to read.
    let plain = !key.is_empty()
        && key != "<<"
        && !key.starts_with([
            '"', '\'', '?', '&', '*', '!', '[', '{', '|', '>', '%', '@', '`', '#', '-', ':',
        ])
        && !key.contains(" #")
        && !key.ends_with(' ');
    plain.then_some((key, value))
}

/// A one-line scalar value; `None` when it is more (a flow collection, an anchor, alias or
/// tag, a comment, a quoted scalar that goes on past the line).
fn scalar(value: &str) -> Option<Leaf<'_>> {
    let value = value.trim_end_matches(' ');
    match value.as_bytes().first()? {
        b'"' => {
            let inner = value.get(1..value.len().checked_sub(1)?)?;
            let mut escaped = false;
            for c in inner.chars() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => return None,
                    _ => {}
                }
            }
            (value.len() >= 2 && value.ends_with('"') && !escaped).then_some(Leaf::Other(value))
        }
        b'\'' => {
            let inner = value.get(1..value.len().checked_sub(1)?)?;
            (value.len() >= 2
                && value.ends_with('\'')
                && inner.replace("''", "").find('\'').is_none())
            .then_some(Leaf::Other(value))
        }
        b'{' | b'[' => matches!(value, "{}" | "[]").then_some(Leaf::Other(value)),
        b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b'#' | b'|' | b'>' => None,
        b'-' | b'?' | b':' if value.len() == 1 || value.as_bytes()[1] == b' ' => None,
        _ if value.contains(" #") || value.contains(": ") || value.ends_with(':') => None,
        _ => Some(Leaf::Plain(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scalar of `doc` but `/o`'s, as text.
    fn read(doc: &str) -> Option<Vec<(String, String)>> {
        let l = Leaves(leaves(doc, &|p| p != "/o")?);
        Some(
            l.0.iter()
                .filter(|(_, leaf)| *leaf != Leaf::Collection)
                .map(|(p, _)| (p.clone(), l.text(p)))
                .collect(),
        )
    }

    #[test]
    fn block_documents_are_read_by_pointer_and_anything_else_is_declined() {
        let doc = "a: x\nb:\n  c: \"q:1\"\n  d:\n  - e: 1.0\n    f: 'it''s'\n  - g\n  -\n    h: y\nl:\n- m\nn: true\no: |\n  text\n  - not an item\np: {}\n";
        let got = read(doc).unwrap();
        let want = [
            ("/a", "x"),
            ("/b/c", "q:1"),
            ("/b/d/0/e", ""),
            ("/b/d/0/f", "it's"),
            ("/b/d/1", "g"),
            ("/b/d/2/h", "y"),
            ("/l/0", "m"),
            ("/n", ""),
            ("/p", ""),
        ];
        // `o`, a block scalar, is declined only when asked for.
        assert!(leaves(doc, &|_| true).is_none());
        let got: Vec<(&str, &str)> = got.iter().map(|(p, v)| (p.as_str(), v.as_str())).collect();
        // `true` and `1.0` are no strings; `y`, which go-yaml's writer quotes, is left to the
        // parser, which reads it as one.
        assert_eq!(got, want);
        // The parser agrees on every one of them.
        let value = crate::yaml::parse_one("", doc).unwrap();
        for (p, v) in want {
            assert_eq!(
                value.pointer(p).and_then(Value::as_str).unwrap_or(""),
                v,
                "{p}"
            );
        }
        for declined in [
            "a: &x 1\n",
            "a: [1, 2]\n",
            "a: x # note\n",
            "a: a long plain\n  scalar folded\n",
            "a: \"quoted\n  on\"\n",
            "\"a\": 1\n",
            "a:\n- - 1\n",
            "# comment\na: 1\n",
            "\u{feff}a: 1\n",
        ] {
            assert!(read(declined).is_none(), "{declined:?}");
        }
        // A merge key brings in fields the reader cannot see: declined even where nothing
        // under it is asked for.
        let merged = "b:\n  <<: *x\n  c: 1\n";
        assert!(leaves(merged, &|p| !p.ends_with("<<")).is_none());
    }

    #[test]
    fn refused_subtrees_are_skipped_with_their_compact_sequences() {
        let doc = "spec:\n  steps:\n  - as: one\n    config:\n      message: |\n        a: b\n  - as: two\n  vars:\n  - name: x\n";
        let only_vars = |p: &str| on_the_way(p, "/spec/vars/*/name");
        let got = Leaves(leaves(doc, &only_vars).unwrap());
        assert!(got.has("/spec/vars/0") && !got.has("/spec/steps"));
        let scalars: Vec<&(String, Leaf<'_>)> = got
            .0
            .iter()
            .filter(|(_, l)| *l != Leaf::Collection)
            .collect();
        assert_eq!(
            scalars,
            [&("/spec/vars/0/name".to_string(), Leaf::Plain("x"))]
        );
    }

    /// The fields of `read`, for comparing.
    fn fields(read: &RenderObjects) -> (Vec<Application>, Vec<Stage>, Vec<Value>) {
        (
            read.applications.clone(),
            read.stages.values().cloned().collect(),
            read.warehouses
                .values()
                .flat_map(|o| o.warehouses.clone())
                .collect(),
        )
    }

    /// The bank platform's render (every write mode, both promotion units), read line by line,
    /// is what parsing it gives; and written in flow style (JSON), which the line reader
    /// declines, it is parsed and reads the same.
    #[test]
    fn the_render_reads_as_its_parse_and_in_any_style() {
        let bank = concat!(env!("CARGO_MANIFEST_DIR"), "/platforms/bank");
        let built =
            crate::pipeline::build(&crate::pipeline::RenderOptions::new(bank), &|_, _| {}).unwrap();
        let set = &built.set;
        let read = RenderObjects::read(set).unwrap();
        let mut parsed = RenderObjects::default();
        let objects = Objects::from_artifacts(set).unwrap();
        for v in objects
            .warehouses
            .iter()
            .chain(&objects.stages)
            .chain(&objects.applications)
        {
            parsed.add_parsed(v.clone()).unwrap();
        }
        assert_eq!(fields(&read), fields(&parsed));
        assert!(read.applications.len() > 20 && read.stages.len() > 20);
        assert!(
            read.applications
                .iter()
                .any(|a| !a.authorized_stage.is_empty())
        );
        let mut flow = ArtifactSet::new();
        let mut declined = 0;
        for (path, bytes) in &set.files {
            let text = std::str::from_utf8(bytes).unwrap();
            if !path.ends_with(".yaml") || !text.contains("argoproj.io/") {
                continue;
            }
            // Every document of kiln's Kargo and Argo CD files is read line by line.
            let emitted = ["/kargo/", "/argocd/", "bootstrap/"];
            for doc in documents(text).filter(|_| emitted.iter().any(|e| path.contains(e))) {
                assert!(doc.and_then(|d| leaves(d, &wanted)).is_some(), "{path}");
            }
            let docs = crate::yaml::parse_stream(path, text).unwrap();
            let json: Vec<String> = docs.iter().map(Value::to_string).collect();
            let json = json.join("\n---\n");
            declined += documents(&json)
                .filter(|d| d.and_then(|d| leaves(d, &wanted)).is_none())
                .count();
            flow.insert(path.clone(), json);
        }
        assert!(declined > 20);
        assert_eq!(fields(&RenderObjects::read(&flow).unwrap()), fields(&read));
    }

    #[test]
    fn documents_split_at_their_marker_lines() {
        let docs: Vec<Option<&str>> = documents("a: 1\n---\nb: 2\n---\n").collect();
        assert_eq!(docs, [Some("a: 1\n"), Some("b: 2\n"), Some("")]);
        let docs: Vec<Option<&str>> = documents("a: 1\n--- b\n").collect();
        assert_eq!(docs, [None]);
    }
}
