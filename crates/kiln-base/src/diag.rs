//! Source files kept for diagnostics: every stage that reads YAML keeps a [`SourceFile`], so an
//! error found late in the pipeline can still underline the right line (taplo's and typst's
//! approach). The span index is built lazily, on the first error that needs it.
//!
//! Beside it, the pipeline's shared diagnostics vocabulary: [`Sources`] (every text one run
//! read, indexed by [`SourceId`]), [`Loc`] (file + document + JSON Pointer, what model nodes
//! carry so a late stage can point at the value's line), [`Errors`] (every error one stage
//! found, reported together), [`schema_violations`] (JSON Schema errors walked back to
//! pointers) and [`did_you_mean`]. Invariant: resolving a location never fails; an unknown
//! pointer falls back to its nearest ancestor, and finally to the whole file.

use crate::yaml::{Located, SpanIndex};
use miette::{Diagnostic, NamedSource, SourceSpan};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// A source text and its display name (a path relative to what the user named).
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path as shown to the user.
    pub name: String,
    /// The full text.
    pub text: Arc<str>,
    index: Arc<OnceLock<SpanIndex>>,
}

impl SourceFile {
    /// Keeps `text` under the display name `name`.
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        SourceFile {
            name: name.into(),
            text: text.into(),
            index: Arc::new(OnceLock::new()),
        }
    }

    /// The text as miette wants it for `#[source_code]`.
    pub fn named_source(&self) -> NamedSource<String> {
        NamedSource::new(&self.name, self.text.to_string()).with_language("yaml")
    }

    /// Where the value (or, with `key`, the key) at `pointer` in document `doc` sits; the
    /// nearest existing ancestor when the pointer does not exist.
    pub fn locate(&self, doc: usize, pointer: &str, key: bool) -> Option<Located> {
        self.index
            .get_or_init(|| SpanIndex::build(&self.text))
            .find(doc, pointer, key)
    }

    /// Like [`SourceFile::locate`], as a miette span.
    pub fn span(&self, doc: usize, pointer: &str, key: bool) -> Option<SourceSpan> {
        self.locate(doc, pointer, key).map(|l| l.span())
    }

    /// `name:line` for messages, e.g. `components/web/component.yaml:12`.
    pub fn position(&self, doc: usize, pointer: &str) -> String {
        match self.locate(doc, pointer, false) {
            Some(l) => format!("{}:{}", self.name, l.line),
            None => self.name.clone(),
        }
    }
}

/// Index of a file in [`Sources`].
pub type SourceId = usize;

/// Every text kiln read for one run, in the order it was read.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    files: Vec<SourceFile>,
}

/// Where a value came from: document `doc` (0-based, empty documents not counted) of file
/// `file`, at JSON Pointer `pointer`. With `key`, diagnostics underline the mapping key
/// instead of the value (used for unknown fields).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    pub file: SourceId,
    pub doc: usize,
    pub pointer: String,
    pub key: bool,
}

impl Loc {
    /// The value at `pointer` in document 0 of `file`.
    pub fn new(file: SourceId, pointer: impl Into<String>) -> Loc {
        Loc {
            file,
            doc: 0,
            pointer: pointer.into(),
            key: false,
        }
    }

    /// A child location: `pointer` + `/` + the escaped `token`.
    pub fn join(&self, token: impl fmt::Display) -> Loc {
        let token = crate::pointer::escape(&token.to_string());
        Loc {
            file: self.file,
            doc: self.doc,
            pointer: format!("{}/{token}", self.pointer),
            key: false,
        }
    }

    /// A child location given as a JSON Pointer suffix (already escaped, starting with `/`).
    pub fn extend(&self, suffix: &str) -> Loc {
        Loc {
            file: self.file,
            doc: self.doc,
            pointer: format!("{}{suffix}", self.pointer),
            key: false,
        }
    }

    /// The same location, underlining the key.
    pub fn at_key(mut self) -> Loc {
        self.key = true;
        self
    }
}

/// A location resolved for miette: the named source, the span (if the pointer was found)
/// and the 1-based line.
#[derive(Debug, Clone)]
pub struct Snippet {
    pub src: NamedSource<String>,
    pub span: Option<SourceSpan>,
    /// `file:line` (or just `file`) for messages.
    pub at: String,
}

impl Sources {
    /// An empty table.
    pub fn new() -> Sources {
        Sources::default()
    }

    /// Adds a text and returns its id.
    pub fn add(&mut self, display: impl Into<String>, text: impl Into<Arc<str>>) -> SourceId {
        self.files.push(SourceFile::new(display, text));
        self.files.len() - 1
    }

    /// The file with id `id`.
    ///
    /// Panics if `id` did not come from this table (an internal bug, not user input).
    pub fn get(&self, id: SourceId) -> &SourceFile {
        &self.files[id]
    }

    /// All files, in the order they were added.
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// Resolves `loc` to a miette snippet. A pointer that is not in the text falls back to its
    /// nearest ancestor (see `yaml::SpanIndex::find`); a text that does not parse gives no span.
    pub fn snippet(&self, loc: &Loc) -> Snippet {
        let f = self.get(loc.file);
        let found = f.locate(loc.doc, &loc.pointer, loc.key);
        Snippet {
            src: f.named_source(),
            span: found.map(|l| l.span()),
            at: match found {
                Some(l) => format!("{}:{}:{}", f.name, l.line, l.column),
                None => f.name.clone(),
            },
        }
    }

    /// A snippet for the whole of file `id` (no span).
    pub fn file_snippet(&self, id: SourceId) -> Snippet {
        let f = self.get(id);
        Snippet {
            src: f.named_source(),
            span: None,
            at: f.name.clone(),
        }
    }
}

/// The candidate closest to `name` by edit distance, when it is close enough to be a typo
/// (distance at most a third of the name's length, and at least 1).
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(name, candidates, 1).map(str::to_string)
}

/// The candidate closest to `name` by edit distance (optimal string alignment: a swap of two
/// neighbouring characters is one edit, so `dve` is one edit from `dev`), the first by name
/// among equals, within a third of the name's length and at least `reach` edits; the one
/// rule behind every "did you mean" help.
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    reach: usize,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(reach);
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

/// "did you mean `x`?" or a fallback help text listing the known names.
pub fn help_for_name<'a>(
    name: &str,
    what: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> String {
    match did_you_mean(name, candidates.clone()) {
        Some(s) => format!("did you mean `{s}`?"),
        None => {
            let all: Vec<&str> = candidates.into_iter().collect();
            if all.is_empty() {
                format!("no {what} is defined")
            } else {
                format!("known {what}s: {}", all.join(", "))
            }
        }
    }
}

/// Every error one stage found, reported together. Renders as a summary line with each error
/// as a related diagnostic (miette prints each with its own snippet).
///
/// Invariant: never empty when returned as an `Err`.
#[derive(Debug)]
pub struct Errors<E> {
    pub errors: Vec<E>,
}

impl<E> Errors<E> {
    /// Wraps a non-empty list.
    pub fn new(errors: Vec<E>) -> Errors<E> {
        Errors { errors }
    }

    /// `Ok(value)` when `errors` is empty, else all of them.
    pub fn check<T>(errors: Vec<E>, value: impl FnOnce() -> T) -> Result<T, Errors<E>> {
        if errors.is_empty() {
            Ok(value())
        } else {
            Err(Errors { errors })
        }
    }
}

impl<E: fmt::Display> fmt::Display for Errors<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.errors.as_slice() {
            [one] => write!(f, "{one}"),
            many => write!(f, "{} errors", many.len()),
        }
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Errors<E> {}

impl<E: Diagnostic> Diagnostic for Errors<E> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        match self.errors.as_slice() {
            [one] => one.code(),
            _ => None,
        }
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        match self.errors.as_slice() {
            [one] => one.help(),
            _ => None,
        }
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        match self.errors.as_slice() {
            [one] => one.source_code(),
            _ => None,
        }
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        match self.errors.as_slice() {
            [one] => one.labels(),
            _ => None,
        }
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        match self.errors.as_slice() {
            [one] => one.related(),
            many => Some(Box::new(many.iter().map(|e| e as &dyn Diagnostic))),
        }
    }
}

/// One JSON Schema violation, ready to be located: the instance's JSON Pointer, whether to
/// underline the key (unknown fields) and a lower-case message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub pointer: String,
    pub key: bool,
    pub message: String,
}

/// A JSON Pointer as a field path for messages: `/spec/images/0/tag` → `spec.images[0].tag`;
/// the root is `(document)`.
pub fn field_path(pointer: &str) -> String {
    let out = crate::pointer::field_path(pointer);
    if out.is_empty() {
        "(document)".into()
    } else {
        out
    }
}

/// Every violation of `value` against `validator`, in the validator's order. `oneOf` failures
/// are replaced by the errors of the closest branch (fewest errors), so `files: a.yaml` reports
/// "not of type array" rather than "matches no shape" (taplo does the same walk).
pub fn schema_violations(
    validator: &jsonschema::Validator,
    value: &serde_json::Value,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in validator.iter_errors(value) {
        push_violation(&e, &mut out);
    }
    out
}

fn push_violation(e: &jsonschema::ValidationError<'_>, out: &mut Vec<Violation>) {
    use jsonschema::error::ValidationErrorKind as K;
    let pointer = e.instance_path().as_str().to_string();
    match e.kind() {
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            for name in unexpected {
                let token = crate::pointer::escape(name);
                out.push(Violation {
                    pointer: format!("{pointer}/{token}"),
                    key: true,
                    message: format!("unknown field `{name}`"),
                });
            }
        }
        K::OneOfNotValid { context } | K::AnyOf { context } => {
            let best = context.iter().min_by_key(|branch| branch.len());
            match best {
                Some(branch)
                    if !branch.is_empty()
                        && branch.iter().all(|b| b.instance_path().as_str() != pointer) =>
                {
                    for b in branch {
                        push_violation(b, out);
                    }
                }
                _ => {
                    // Every branch only misses its one key (`files`, `namespace`, …): name them.
                    let mut keys = Vec::new();
                    for branch in context {
                        for b in branch {
                            if let K::Required { property } = b.kind()
                                && b.instance_path().as_str() == pointer
                            {
                                keys.push(format!("`{}`", property.as_str().unwrap_or_default()));
                            }
                        }
                    }
                    let message = if keys.len() == context.len() && !keys.is_empty() {
                        format!("needs exactly one of {}", keys.join(", "))
                    } else {
                        "matches none of the allowed shapes".into()
                    };
                    out.push(Violation {
                        pointer,
                        key: false,
                        message,
                    });
                }
            }
        }
        K::OneOfMultipleValid { .. } => out.push(Violation {
            pointer,
            key: false,
            message: "matches more than one of the allowed shapes (set exactly one kind of entry)"
                .into(),
        }),
        K::Required { property } => out.push(Violation {
            pointer,
            key: false,
            message: format!("missing required field {property}"),
        }),
        _ => out.push(Violation {
            pointer,
            key: false,
            message: e.to_string(),
        }),
    }
}

/// The longest source line (in bytes) a snippet shows; longer lines are cut around their
/// label, with `…` where text was left out. miette's graphical handler panics on a column past
/// 65,535 (a `format!` width limit), and a 200 KB line is unreadable anyway.
pub const MAX_SNIPPET_LINE: usize = 240;

/// The longest message (in bytes) a diagnostic prints before it is cut.
pub const MAX_MESSAGE: usize = 2000;

/// A miette report handler that shows every diagnostic through [`Clipped`], so no snippet line
/// is longer than [`MAX_SNIPPET_LINE`] and no message longer than [`MAX_MESSAGE`], whatever
/// the stage that built it. Installed by the CLI.
pub struct ClippingHandler(pub Box<dyn miette::ReportHandler>);

impl miette::ReportHandler for ClippingHandler {
    fn debug(&self, diagnostic: &dyn Diagnostic, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.debug(&Clipped::new(diagnostic), f)
    }
}

/// A view of a diagnostic whose source text has its long lines cut (labels moved to match)
/// and whose message is cut at [`MAX_MESSAGE`]. Line numbers stay those of the original file.
pub struct Clipped<'a> {
    inner: &'a dyn Diagnostic,
    message: String,
    source: Option<NamedSource<String>>,
    labels: Option<Vec<miette::LabeledSpan>>,
    related: Vec<Clipped<'a>>,
    cause: Option<Box<Clipped<'a>>>,
}

impl<'a> Clipped<'a> {
    /// Prepares `inner` for display (reads its source once, when it has labels).
    pub fn new(inner: &'a dyn Diagnostic) -> Clipped<'a> {
        let (source, labels) = match (inner.source_code(), inner.labels()) {
            (Some(src), Some(labels)) => clip_source(src, labels.collect()),
            _ => (None, None),
        };
        Clipped {
            inner,
            message: clip_text(&inner.to_string(), MAX_MESSAGE),
            source,
            labels,
            related: inner
                .related()
                .map(|r| r.map(Clipped::new).collect())
                .unwrap_or_default(),
            cause: inner.diagnostic_source().map(|d| Box::new(Clipped::new(d))),
        }
    }
}

/// `text` cut to at most `max` bytes (on character boundaries), with a note of how much was
/// left out of the middle. The end is kept too: a Go error wraps its cause last (`error
/// calling include: … nested reference name: loop`), so that is where the cause is.
pub fn clip_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max * 3 / 4;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut start = text.len() - (max - end);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!(
        "{}… ({} bytes left out) …{}",
        &text[..end],
        start - end,
        &text[start..]
    )
}

/// The whole text of `src` with every line longer than [`MAX_SNIPPET_LINE`] cut around the
/// first label on it, and `labels` moved into the new text. `(None, None)` (show no snippet)
/// when the text cannot be read.
/// [`redact_secrets`] of `data`, remembered for the last text seen on this thread: the
/// findings of one file share its text, and redacting it again for each (a YAML parse of
/// the whole file per finding) made printing N findings of one stream quadratic (issue 36:
/// minutes for 300 duplicate objects in a 300 KB stream).
fn redacted(data: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    thread_local! {
        static LAST: std::cell::RefCell<Option<(u64, usize, Arc<str>)>> =
            const { std::cell::RefCell::new(None) };
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut h);
    let key = (h.finish(), data.len());
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if let Some((hash, len, text)) = last.as_ref()
            && (*hash, *len) == key
        {
            return text.to_string();
        }
        let text: Arc<str> = redact_secrets(&String::from_utf8_lossy(data)).into();
        *last = Some((key.0, key.1, text.clone()));
        text.to_string()
    })
}

fn clip_source(
    src: &dyn miette::SourceCode,
    labels: Vec<miette::LabeledSpan>,
) -> (
    Option<NamedSource<String>>,
    Option<Vec<miette::LabeledSpan>>,
) {
    let Ok(all) = src.read_span(&SourceSpan::from((0, 0)), 0, usize::MAX) else {
        return (None, None);
    };
    let text = redacted(all.data());
    let name = all.name().unwrap_or("input").to_string();
    let language = all.language().map(str::to_string);
    if text.split('\n').all(|l| l.len() <= MAX_SNIPPET_LINE) {
        let mut named = NamedSource::new(name, text);
        if let Some(lang) = language {
            named = named.with_language(lang);
        }
        return (Some(named), Some(labels));
    }
    // Kept pieces: (old start, old end, new start).
    let mut pieces: Vec<(usize, usize, usize)> = Vec::new();
    let mut out = String::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let line_end = line_start + body.len();
        let (keep_start, keep_end) = if body.len() <= MAX_SNIPPET_LINE {
            (line_start, line_end)
        } else {
            let anchor = labels
                .iter()
                .map(|l| l.offset())
                .find(|o| (line_start..=line_end).contains(o))
                .unwrap_or(line_start);
            let mut start = anchor.saturating_sub(MAX_SNIPPET_LINE / 3).max(line_start);
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let mut end = (start + MAX_SNIPPET_LINE).min(line_end);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            (start, end)
        };
        if keep_start > line_start {
            out.push('…');
        }
        pieces.push((keep_start, keep_end, out.len()));
        out.push_str(&text[keep_start..keep_end]);
        if keep_end < line_end {
            out.push('…');
        }
        // The line break itself, kept so line numbers stay right.
        let brk_start = line_end;
        let brk_end = line_start + line.len();
        pieces.push((brk_start, brk_end, out.len()));
        out.push_str(&text[brk_start..brk_end]);
        line_start = brk_end;
    }
    // An offset inside a cut-out part moves to the start of the next kept piece.
    let map = |o: usize| -> usize {
        for &(a, b, n) in &pieces {
            if o < a {
                return n;
            }
            if o <= b {
                return n + (o - a);
            }
        }
        out.len()
    };
    let labels = labels
        .into_iter()
        .map(|l| {
            let start = map(l.offset());
            let end = map(l.offset() + l.len()).max(start);
            miette::LabeledSpan::new(l.label().map(str::to_string), start, end - start)
        })
        .collect();
    let mut named = NamedSource::new(name, out);
    if let Some(lang) = language {
        named = named.with_language(lang);
    }
    (Some(named), Some(labels))
}

/// `text` with every Secret value a snippet could show replaced by `*`, byte for byte, so spans
/// and line numbers stay right. A snippet never prints a Secret's value; the key stays
/// visible, so the user still sees which entry is meant. Three rules, each masking what it
/// finds (issue 39, item 5):
///
/// - **By structure** ([`secret_value_spans`]): the text is parsed, and every value under
///   `data`/`stringData` of a mapping whose `kind` is `Secret` is masked, in any syntax the
///   parser reads (block or flow/JSON, quoted keys and values, tags, escapes, comments,
///   anchors: a node an alias under `data` names is masked where it is defined).
/// - **What does not parse**: from the document where parsing stopped, a document that could
///   be a Secret (it says `Secret`, or holds an escape) has every value masked, keys kept.
/// - **By line** (below): the values under `data:`/`stringData:` of a `kind: Secret` at the
///   same indentation (inline patches count too) and the value after `=` of each `literals:`
///   entry of a `secretGenerator`.
pub fn redact_secrets(text: &str) -> String {
    let lines = redact_secret_lines(text);
    let mut out = lines.into_bytes();
    for (a, b) in secret_value_spans(text) {
        for byte in out.get_mut(a..b).unwrap_or_default() {
            if *byte != b'\n' && *byte != b'\r' {
                *byte = b'*';
            }
        }
    }
    // Only ASCII bytes were written, and only over whole characters' bytes.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Whether a document's text could be a Secret's: it names the kind, or holds an escape
/// (`"Secr\u0065t"`) or a tab that a parse would have had to read.
fn could_be_secret(doc: &str) -> bool {
    doc.contains("Secret") || doc.contains('\\')
}

/// A map being read by [`secret_value_spans`].
struct MaskFrame {
    /// A mapping (else a sequence).
    map: bool,
    /// The key whose value comes next (a mapping expecting a value).
    key: Option<String>,
    /// Whether its `kind` is `Secret`.
    secret: bool,
    /// Byte ranges of the values under its `data`/`stringData`, masked if it is a Secret.
    pending: Vec<(usize, usize)>,
    /// Anchors aliased under its `data`/`stringData`.
    aliases: Vec<usize>,
    /// The frame whose `data`/`stringData` this collection lies in.
    owner: Option<usize>,
    /// Its anchor and start, to mask the whole node if an alias under `data` names it.
    anchor: usize,
    start: usize,
}

/// Byte ranges of `text` that hold a Secret's values, by parsed structure (see
/// [`redact_secrets`]), plus, from the document where parsing stopped, every value of each
/// document that could be a Secret.
pub fn secret_value_spans(text: &str) -> Vec<(usize, usize)> {
    use granit_parser::{Event, Parser};
    // Character index → byte offset (the parser counts characters).
    let bytes_at: Vec<usize> = text
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()))
        .collect();
    let at = |m: granit_parser::Marker| {
        m.byte_offset()
            .unwrap_or_else(|| bytes_at.get(m.index()).copied().unwrap_or(text.len()))
    };
    let mut masks: Vec<(usize, usize)> = Vec::new();
    let mut anchors: std::collections::BTreeMap<usize, (usize, usize)> = Default::default();
    let mut aliased: Vec<usize> = Vec::new();
    let mut stack: Vec<MaskFrame> = Vec::new();
    // Where the document being read started (after the last one finished).
    let mut doc_start = 0usize;
    let mut failed = false;
    for ev in Parser::new_from_str(text) {
        let Ok((event, span)) = ev else {
            failed = true;
            break;
        };
        let (a, b) = (at(span.start), at(span.end));
        let frame = |map: bool, owner: Option<usize>, anchor: usize| MaskFrame {
            map,
            key: None,
            secret: false,
            pending: Vec::new(),
            aliases: Vec::new(),
            owner,
            anchor,
            start: a,
        };
        match event {
            Event::DocumentEnd => {
                doc_start = b;
                stack.clear();
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some(f) = stack.pop() {
                    if f.secret {
                        masks.extend(f.pending);
                        aliased.extend(f.aliases);
                    }
                    if f.anchor != 0 {
                        anchors.insert(f.anchor, (f.start, b));
                    }
                }
                if let Some(MaskFrame { map: true, key, .. }) = stack.last_mut() {
                    *key = None;
                }
                continue;
            }
            Event::Scalar(..)
            | Event::Alias(..)
            | Event::MappingStart(..)
            | Event::SequenceStart(..) => {}
            _ => continue,
        }
        // Where this node sits: a key, or a value (in whose `data`, if any).
        let depth = stack.len();
        let (is_key, parent_key, owner) = match stack.last_mut() {
            None => (false, None, None),
            Some(p) if p.map && p.key.is_none() => (true, None, p.owner),
            Some(p) => {
                let k = if p.map { p.key.take() } else { None };
                let owner = match k.as_deref() {
                    Some("data" | "stringData") => Some(depth - 1),
                    _ => p.owner,
                };
                (false, k, owner)
            }
        };
        match event {
            Event::Scalar(v, _, anchor, _) => {
                if anchor != 0 {
                    anchors.insert(anchor, (a, b));
                }
                if is_key {
                    if let Some(p) = stack.last_mut() {
                        // An empty key still expects a value.
                        p.key = Some(v.into_owned());
                    }
                } else {
                    if parent_key.as_deref() == Some("kind")
                        && v == "Secret"
                        && let Some(p) = stack.last_mut()
                    {
                        p.secret = true;
                    }
                    if let Some(o) = owner.and_then(|o| stack.get_mut(o)) {
                        o.pending.push((a, b));
                    }
                }
            }
            Event::Alias(id) => {
                if is_key {
                    if let Some(p) = stack.last_mut() {
                        p.key = Some(String::new());
                    }
                } else {
                    // A kind given by an alias may be a Secret: treat it as one.
                    if parent_key.as_deref() == Some("kind")
                        && let Some(p) = stack.last_mut()
                    {
                        p.secret = true;
                    }
                    if let Some(o) = owner.and_then(|o| stack.get_mut(o)) {
                        o.aliases.push(id);
                    }
                }
            }
            Event::MappingStart(_, anchor, _) | Event::SequenceStart(_, anchor, _) => {
                let map = matches!(event, Event::MappingStart(..));
                if is_key {
                    // A collection as a key (never in a manifest): its contents stay keys of
                    // nothing; its parent's next node is its value.
                    if let Some(p) = stack.last_mut() {
                        p.key = Some(String::new());
                    }
                }
                stack.push(frame(map, owner, anchor));
            }
            _ => {}
        }
    }
    if failed {
        // What was read of the open collections may be a Secret's values.
        for f in stack.drain(..) {
            masks.extend(f.pending);
            aliased.extend(f.aliases);
        }
        let rest = text.get(doc_start..).unwrap_or("");
        let mut offset = doc_start;
        for doc in rest.split_inclusive('\n').collect::<Vec<_>>().split(|l| {
            let l = l.trim_end();
            l == "---" || l.starts_with("--- ")
        }) {
            let len: usize = doc.iter().map(|l| l.len()).sum();
            if could_be_secret(&text[offset..offset + len]) {
                let mut start = offset;
                for line in doc {
                    let body = line.trim_end_matches(['\n', '\r']);
                    let t = body.trim_start_matches([' ', '\t', '-', '{', '[', ',']);
                    let indent = body.len() - t.len();
                    if !t.is_empty() && !t.starts_with('#') && t != "---" {
                        // Keep a key (up to `: `), mask the rest of the line.
                        let from = t.find(": ").map_or(indent, |k| indent + k + 2);
                        let key = t.split(':').next().unwrap_or("").trim();
                        if key != "kind" && key != "apiVersion" {
                            masks.push((start + from.min(body.len()), start + body.len()));
                        }
                    }
                    start += line.len();
                }
            }
            offset += len;
            // The `---` line between documents.
            offset += text[offset..]
                .find('\n')
                .map_or(text.len() - offset, |k| k + 1);
        }
    }
    for id in aliased {
        if let Some(&r) = anchors.get(&id) {
            masks.push(r);
        }
    }
    masks
}

/// The line rules of [`redact_secrets`].
fn redact_secret_lines(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    let mut offset = 0;
    for doc in text.split_inclusive('\n').collect::<Vec<_>>().split(|l| {
        let l = l.trim_end();
        l == "---" || l.starts_with("--- ")
    }) {
        let secret_cols: Vec<usize> = doc
            .iter()
            .filter_map(|l| {
                let (col, rest) = key_column(l);
                let kind = rest.strip_prefix("kind:")?.trim();
                (kind.trim_matches(['"', '\'']) == "Secret").then_some(col)
            })
            .collect();
        // (what is masked, the key's column)
        let mut data: Option<usize> = None;
        let mut generator: Option<usize> = None;
        let mut literals: Option<usize> = None;
        for line in doc {
            let start = offset;
            offset += line.len();
            let body = line.trim_end_matches(['\n', '\r']);
            let indent = body.len() - body.trim_start_matches(' ').len();
            let (col, rest) = key_column(body);
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            let item = body[indent..].starts_with("- ") || body[indent..] == *"-";
            if data.is_some_and(|c| indent <= c) {
                data = None;
            }
            if literals.is_some_and(|c| indent < c || (indent == c && !item)) {
                literals = None;
            }
            if generator.is_some_and(|c| indent < c || (indent == c && !item)) {
                generator = None;
                literals = None;
            }
            let mask_from = |from: usize, out: &mut Vec<u8>| {
                for b in &mut out[start + from..start + body.len()] {
                    *b = b'*';
                }
            };
            if data.is_some() {
                // `key: value` keeps the key; a block scalar's lines are all value.
                let from = match rest.find(": ") {
                    Some(k) if !rest.starts_with(['"', '\'', '|', '>']) => col + k + 2,
                    _ => indent,
                };
                mask_from(from, &mut out);
                continue;
            }
            if literals.is_some() && item {
                let from = body.find('=').map_or(indent + 2, |k| k + 1);
                mask_from(from.min(body.len()), &mut out);
                continue;
            }
            let key = rest.split(':').next().unwrap_or("").trim();
            let value = rest.split_once(':').map_or("", |(_, v)| v.trim());
            // A generator written in flow style on one line (`- secretGenerator: {name: x,
            // literals: [k=v]}`, or an item `- {name: x, literals: [...]}` under one): all
            // after `literals` is value.
            if (key == "secretGenerator" || (generator.is_some() && item))
                && key != "literals"
                && let Some(k) = body.find("literals")
            {
                mask_from(k + "literals".len(), &mut out);
                if key == "secretGenerator" {
                    generator = Some(col);
                }
                continue;
            }
            if (key == "data" || key == "stringData") && secret_cols.contains(&col) {
                if value.is_empty() || value.starts_with('#') {
                    data = Some(col);
                } else {
                    mask_from(col + key.len() + 1, &mut out);
                }
            } else if key == "secretGenerator" {
                generator = Some(col);
            } else if key == "literals" && generator.is_some() {
                if value.is_empty() || value.starts_with('#') {
                    literals = Some(col);
                } else {
                    mask_from(col + key.len() + 1, &mut out);
                }
            }
        }
        // The `---` line between documents.
        offset += text[offset..]
            .find('\n')
            .map_or(text.len() - offset, |k| k + 1);
    }
    // Only ASCII bytes were written, and only over whole characters' bytes.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The column where a line's mapping key starts (after list dashes) and the text from there.
fn key_column(line: &str) -> (usize, &str) {
    let mut col = line.len() - line.trim_start_matches(' ').len();
    let mut rest = &line[col..];
    while let Some(r) = rest.strip_prefix("- ") {
        let r2 = r.trim_start_matches(' ');
        col += 2 + (r.len() - r2.len());
        rest = r2;
    }
    (col, rest.trim_end())
}

impl fmt::Display for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Clipped<'_> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

impl Diagnostic for Clipped<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.code()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.inner.severity()
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.help()
    }
    fn url<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.inner.url()
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.labels
            .as_ref()
            .map(|l| Box::new(l.iter().cloned()) as Box<dyn Iterator<Item = _>>)
    }
    fn related<'b>(&'b self) -> Option<Box<dyn Iterator<Item = &'b dyn Diagnostic> + 'b>> {
        if self.related.is_empty() {
            None
        } else {
            Some(Box::new(self.related.iter().map(|r| r as &dyn Diagnostic)))
        }
    }
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.cause.as_deref().map(|c| c as &dyn Diagnostic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_never_show_secret_values() {
        let text = "\
resources:
- a.yaml
secretGenerator:
- name: db
  literals:
  - password=hunter2
  - \"token=s3cr3t\"
  behavior: merge
- literals: [api=k3y]
configMapGenerator:
- name: cm
  literals:
  - plain=visible
---
apiVersion: v1
kind: Secret
metadata:
  name: s
stringData:
  user: admin
  cert: |
    -----BEGIN-----
    abcdef
data: {x: eHl6}
type: Opaque
---
kind: ConfigMap
data:
  kept: value
";
        let r = redact_secrets(text);
        assert_eq!(r.len(), text.len());
        assert_eq!(r.lines().count(), text.lines().count());
        for secret in [
            "hunter2", "s3cr3t", "k3y", "admin", "BEGIN", "abcdef", "eHl6",
        ] {
            assert!(!r.contains(secret), "{secret} shown:\n{r}");
        }
        for kept in [
            "password=",
            "user: ",
            "plain=visible",
            "kept: value",
            "behavior: merge",
            "type: Opaque",
            "name: s",
        ] {
            assert!(r.contains(kept), "{kept} hidden:\n{r}");
        }
        // A Secret inside an inline patch, at its own indentation.
        let patch = "patches:\n- patch: |-\n    kind: Secret\n    data:\n      k: c2VjcmV0\n";
        assert!(!redact_secrets(patch).contains("c2VjcmV0"));
        // Flow style on one line, as a component.yaml generator or a kustomization item.
        let flow = "spec:\n  generators:\n  - secretGenerator: {name: gen, literals: [\"pw=SUPERSECRET123\"]}\n\
                    secretGenerator:\n- {name: x, literals: [k=v4lue]}\n- name: y\n  literals: [a=b1]\n";
        let r = redact_secrets(flow);
        for secret in ["SUPERSECRET123", "v4lue", "b1"] {
            assert!(!r.contains(secret), "{secret} shown:\n{r}");
        }
        assert!(r.contains("secretGenerator: {name: gen, literals") && r.contains("- name: y"));
    }

    #[test]
    fn locates_lazily() {
        let f = SourceFile::new("a.yaml", "kind: X\nspec:\n  replicas: 2\n");
        assert_eq!(f.position(0, "/spec/replicas"), "a.yaml:3");
        assert!(f.span(0, "/spec/replicas", true).is_some());
    }

    #[test]
    fn did_you_mean_picks_close_names_only() {
        let envs = ["dev", "test", "stage", "prod-east"];
        assert_eq!(
            did_you_mean("prod-eats", envs).as_deref(),
            Some("prod-east")
        );
        assert_eq!(did_you_mean("stag", envs).as_deref(), Some("stage"));
        assert_eq!(did_you_mean("qa", envs), None);
        assert_eq!(did_you_mean("tset", envs).as_deref(), Some("test"));
    }

    #[test]
    fn field_paths_read_like_yaml() {
        assert_eq!(field_path("/spec/images/0/tag"), "spec.images[0].tag");
        assert_eq!(field_path("/spec/labels/a~1b"), "spec.labels.a/b");
        assert_eq!(field_path(""), "(document)");
    }

    #[test]
    fn snippet_points_at_line_of_pointer() {
        let mut s = Sources::new();
        let id = s.add("platforms/x/platform.yaml", "a: 1\nb:\n  c: [x, y]\n");
        let sn = s.snippet(&Loc::new(id, "/b/c/1"));
        assert_eq!(sn.at, "platforms/x/platform.yaml:3:10");
        let missing = s.snippet(&Loc::new(id, "/b/zzz"));
        assert!(
            missing.at.starts_with("platforms/x/platform.yaml:3"),
            "{}",
            missing.at
        );
    }

    /// A diagnostic whose label sits past column 65,535 on one very long line.
    #[derive(Debug, thiserror::Error, Diagnostic)]
    #[error("bad value")]
    struct FarLabel {
        #[source_code]
        src: NamedSource<String>,
        #[label("here")]
        at: SourceSpan,
    }

    fn graphical(d: &dyn Diagnostic) -> String {
        let mut out = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, &Clipped::new(d))
            .unwrap();
        out
    }

    #[test]
    fn labels_past_column_65535_are_shown_clipped_without_panicking() {
        let line = format!("name: {}BAD : [", "y".repeat(200_000));
        let text = format!("kind: Platform\n{line}\nnext: 1\n");
        let at = text.find("BAD").unwrap();
        let d = FarLabel {
            src: NamedSource::new("p.yaml", text),
            at: (at, 3).into(),
        };
        let out = graphical(&d);
        assert!(
            out.len() < 4 * MAX_SNIPPET_LINE + 1000,
            "{} bytes",
            out.len()
        );
        assert!(out.contains("BAD"), "{out}");
        assert!(out.contains("here"), "{out}");
        // Line numbers are the file's own: the long line is line 2.
        assert!(out.contains(" 2 │"), "{out}");
    }

    #[test]
    fn short_sources_are_shown_unchanged_and_long_messages_are_cut() {
        let text = "a: 1\nb: 2\n".to_string();
        let d = FarLabel {
            src: NamedSource::new("p.yaml", text),
            at: (8, 1).into(),
        };
        let out = graphical(&d);
        assert!(out.contains("b: 2"), "{out}");
        let long = clip_text(&format!("{}cause", "x".repeat(10_000)), MAX_MESSAGE);
        assert!(long.len() < MAX_MESSAGE + 40, "{long}");
        assert!(
            long.contains("(8005 bytes left out)") && long.ends_with("xcause"),
            "{long}"
        );
    }

    /// Issue 39, item 5: a Secret's values are masked in every syntax a manifest may be
    /// written in; the keys and the rest of the text stay.
    #[test]
    fn secret_values_are_masked_in_every_syntax() {
        let cases: &[(&str, &str)] = &[
            (
                "comment after the kind",
                "apiVersion: v1\nkind: Secret # db\nmetadata: {name: db}\ndata:\n  token: SECRET1\n",
            ),
            (
                "JSON",
                "{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"db\"}, \"data\": {\"token\": \"SECRET1\"}}\n",
            ),
            (
                "JSON over lines",
                "{\n  \"kind\": \"Secret\",\n  \"stringData\": {\n    \"token\": \"SECRET1\"\n  }\n}\n",
            ),
            (
                "quoted keys",
                "\"kind\": 'Secret'\n'data':\n  \"token\": SECRET1\n",
            ),
            (
                "data before kind",
                "data:\n  token: SECRET1\nkind: Secret\n",
            ),
            (
                "escaped kind",
                "kind: \"Secr\\u0065t\"\ndata: {token: SECRET1}\n",
            ),
            (
                "tagged",
                "kind: !!str Secret\ndata: !!map\n  token: !!str SECRET1\n",
            ),
            (
                "anchor and alias",
                "metadata:\n  annotations:\n    x: &v SECRET1\nkind: Secret\ndata:\n  token: *v\n",
            ),
            (
                "anchored map merged",
                "base: &b {token: SECRET1}\nkind: Secret\ndata:\n  <<: *b\n",
            ),
            (
                "block scalar",
                "kind: Secret\nstringData:\n  key.pem: |\n    SECRET1\n    SECRET2\n",
            ),
            ("tab indentation", "kind: Secret\ndata:\n\ttoken: SECRET1\n"),
            (
                "in a List",
                "kind: List\nitems:\n- kind: Secret\n  data: {token: SECRET1}\n",
            ),
            (
                "second document",
                "kind: ConfigMap\ndata: {a: b}\n---\n{\"kind\":\"Secret\",\"data\":{\"token\":\"SECRET1\"}}\n",
            ),
            (
                "broken after",
                "kind: Secret\ndata:\n  token: SECRET1\n  bad: [\n",
            ),
        ];
        for (what, text) in cases {
            let r = redact_secrets(text);
            assert!(!r.contains("SECRET"), "{what}: {r}");
            assert_eq!(r.len(), text.len(), "{what}");
            assert_eq!(r.lines().count(), text.lines().count(), "{what}");
            assert!(r.contains("kind"), "{what}: {r}");
        }
        // A ConfigMap's data stays.
        let cm = "{\"kind\": \"ConfigMap\", \"data\": {\"a\": \"visible\"}}\n";
        assert_eq!(redact_secrets(cm), cm);
    }
}
