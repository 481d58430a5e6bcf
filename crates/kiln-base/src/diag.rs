//! Source files kept for diagnostics: every stage that reads YAML keeps a [`SourceFile`], so an
//! error found late in the pipeline can still underline the right line (taplo's and typst's
//! approach). The span index is built lazily, on the first error that needs it.
//!
//! Beside it, the pipeline's shared diagnostics vocabulary: [`Sources`] (every text one run
//! read, indexed by [`SourceId`]), [`Loc`] (file + document + JSON Pointer, what model nodes
//! carry so a late stage can point at the value's line; the one source location, also the
//! kustomize engine's), [`Errors`] (every error one stage
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

/// The lines of a document kept around a diagnostic's label (at most [`EXCERPT_LINES`]
/// before and after it), to give miette in place of a whole file.
pub const EXCERPT_LINES: usize = 20;

impl SourceFile {
    /// The part of the text a snippet of `at` (found by [`SourceFile::locate`], which knows
    /// its line) shows: the YAML document holding it, cut to
    /// [`EXCERPT_LINES`] lines either side, with the offset and line where it starts so spans
    /// and line numbers stay those of the whole file. miette reads a snippet's source from
    /// its start to find the span's line, and each diagnostic held its own copy of the text,
    /// so N diagnostics on one large stream cost N times its size (issue 36, `kiln validate`
    /// on a 50 MB stream); an excerpt costs the document around the label.
    ///
    /// A Secret's values are masked ([`redact_secrets`]) over the whole document before it is
    /// cut, as the lines that say `kind: Secret` may fall outside the cut.
    pub fn excerpt(&self, at: &Located) -> Excerpt {
        let text: &str = &self.text;
        let bytes = text.as_bytes();
        // Every cut is just after a line break (or at an end): always a character boundary.
        let line_start = |at: usize| {
            bytes[..at]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1)
        };
        let next_line = |at: usize| {
            bytes[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |i| at + i + 1)
        };
        let starts_doc = |from: usize, to: usize| {
            let l = bytes[from..to].trim_ascii_end();
            l == b"---" || l.starts_with(b"--- ")
        };
        let offset = at.offset.min(bytes.len());
        // The document: from the line after the last `---` before the label to the line
        // before the next one.
        let mut start = line_start(offset);
        while start > 0 {
            let prev = line_start(start - 1);
            if starts_doc(prev, start) {
                break;
            }
            start = prev;
        }
        let mut end = next_line(offset);
        while end < bytes.len() {
            let next = next_line(end);
            if starts_doc(end, next) {
                break;
            }
            end = next;
        }
        // The lines around the label, inside the document.
        let mut from = line_start(offset).max(start);
        for _ in 0..EXCERPT_LINES {
            if from <= start {
                break;
            }
            from = line_start(from - 1).max(start);
        }
        let mut to = next_line((offset + at.len).min(bytes.len())).min(end);
        for _ in 0..EXCERPT_LINES {
            if to >= end {
                break;
            }
            to = next_line(to).min(end);
        }
        let doc = &text[start..end];
        // Masked over the whole document, which says whether it is a Secret.
        let part = if could_be_secret(doc) {
            // Masking keeps every byte's place.
            let masked = redact_secrets(doc);
            masked
                .get(from - start..to - start)
                .unwrap_or_default()
                .to_string()
        } else {
            text[from..to].to_string()
        };
        // The label's line, less the lines above it in the excerpt (0-based).
        let above = bytes[from..offset].iter().filter(|&&b| b == b'\n').count();
        Excerpt {
            name: self.name.clone(),
            language: Some("yaml".to_string()),
            text: part,
            offset: from,
            line: at.line.saturating_sub(1 + above),
        }
    }
}

/// A part of a source text, whole lines, with the byte offset and the 0-based line where it
/// starts in the whole text: a miette source whose spans and line numbers are the whole
/// text's ([`SourceFile::excerpt`]). A span outside it reads as its nearest end.
#[derive(Debug, Clone)]
pub struct Excerpt {
    pub name: String,
    pub language: Option<String>,
    pub text: String,
    pub offset: usize,
    pub line: usize,
}

impl miette::SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let local = span
            .offset()
            .saturating_sub(self.offset)
            .min(self.text.len());
        let len = span.len().min(self.text.len() - local);
        let inner = self.text.as_str().read_span(
            &SourceSpan::from((local, len)),
            context_lines_before,
            context_lines_after,
        )?;
        let mut contents = miette::MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            SourceSpan::from((inner.span().offset() + self.offset, inner.span().len())),
            inner.line() + self.line,
            inner.column(),
            inner.line_count(),
        );
        if let Some(language) = &self.language {
            contents = contents.with_language(language.clone());
        }
        Ok(Box::new(contents))
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
/// `file`, at JSON Pointer `pointer`, and, once found in the text, its 1-based `line` and
/// `column` (0 until then). With `key`, diagnostics underline the mapping key instead of the
/// value (used for unknown fields). The one source location of every stage and engine.
///
/// `F` names the file. The pipeline uses a [`SourceId`]: the text stays in [`Sources`], and
/// the line is looked up only when a diagnostic needs it ([`Sources::resolve`]). An engine
/// that keeps no table (kustomize) uses the display name and resolves the line at once.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Loc<F = SourceId> {
    pub file: F,
    pub doc: usize,
    pub pointer: String,
    pub key: bool,
    pub line: usize,
    pub column: usize,
}

impl<F: Clone> Loc<F> {
    /// The value at `pointer` in document 0 of `file`.
    pub fn new(file: F, pointer: impl Into<String>) -> Loc<F> {
        Loc {
            file,
            doc: 0,
            pointer: pointer.into(),
            key: false,
            line: 0,
            column: 0,
        }
    }

    /// A child location: `pointer` + `/` + the escaped `token`.
    pub fn join(&self, token: impl fmt::Display) -> Loc<F> {
        // One allocation: the pipeline joins a location for every field it evaluates, most of
        // them never shown (four strings each were a fortieth of a large render's samples).
        use fmt::Write;
        let mut pointer = String::with_capacity(self.pointer.len() + 24);
        pointer.push_str(&self.pointer);
        pointer.push('/');
        let start = pointer.len();
        let _ = write!(pointer, "{token}");
        if pointer[start..].contains(['~', '/']) {
            let escaped = crate::pointer::escape(&pointer[start..]);
            pointer.truncate(start);
            pointer.push_str(&escaped);
        }
        self.child(pointer)
    }

    /// A child location given as a JSON Pointer suffix (already escaped, starting with `/`).
    pub fn extend(&self, suffix: &str) -> Loc<F> {
        let mut pointer = String::with_capacity(self.pointer.len() + suffix.len());
        pointer.push_str(&self.pointer);
        pointer.push_str(suffix);
        self.child(pointer)
    }

    /// The location at `pointer` in this one's document.
    fn child(&self, pointer: String) -> Loc<F> {
        Loc {
            file: self.file.clone(),
            doc: self.doc,
            pointer,
            key: false,
            line: 0,
            column: 0,
        }
    }

    /// The same location, underlining the key.
    pub fn at_key(mut self) -> Loc<F> {
        self.key = true;
        self
    }
}

impl<F> Loc<F> {
    /// The same location, its file named `file` (a [`SourceId`]'s display name, say).
    pub fn in_file<G>(&self, file: G) -> Loc<G> {
        Loc {
            file,
            doc: self.doc,
            pointer: self.pointer.clone(),
            key: self.key,
            line: self.line,
            column: self.column,
        }
    }

    /// The same location with the line and column it was `found` at (0 when not found).
    pub fn found_at(mut self, found: Option<Located>) -> Loc<F> {
        (self.line, self.column) = found.map_or((0, 0), |l| (l.line, l.column));
        self
    }
}

impl Loc<String> {
    /// `file:line:column`, or `file` alone when the line is unknown.
    pub fn position(&self) -> String {
        if self.line > 0 {
            format!("{}:{}:{}", self.file, self.line, self.column)
        } else {
            self.file.clone()
        }
    }
}

impl fmt::Display for Loc<String> {
    /// `file:line:column` (`file` alone when the line is unknown), plus `(field a[0].b)` when
    /// the location is inside the document.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.position())?;
        if !self.pointer.is_empty() {
            write!(
                f,
                " (field `{}`)",
                crate::pointer::field_path(&self.pointer)
            )?;
        }
        Ok(())
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
            at: loc.in_file(f.name.clone()).found_at(found).position(),
        }
    }

    /// `loc` with the file's display name, and the line and column it was found at (0 when
    /// the pointer is not in the text, see [`Sources::snippet`]).
    pub fn resolve(&self, loc: &Loc) -> Loc<String> {
        let f = self.get(loc.file);
        let found = f.locate(loc.doc, &loc.pointer, loc.key);
        loc.in_file(f.name.clone()).found_at(found)
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

/// The candidate equal to `name` but for case, else the one closest to `name` by edit
/// distance (optimal string alignment: a swap of two neighbouring characters is one edit, so
/// `dve` is one edit from `dev`), the first by name among equals, within a third of the
/// name's length and at least `reach` edits; the one rule behind every "did you mean" help.
pub fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    reach: usize,
) -> Option<&'a str> {
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    // A difference of case only (`jsonpatch`, `JSONPATCH` for `jsonPatch`) is the likeliest
    // slip of all, however many letters it changes.
    if let Some(same) = candidates
        .iter()
        .find(|c| c.to_lowercase() == name.to_lowercase())
    {
        return Some(same);
    }
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
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        match self.errors.as_slice() {
            [one] => one.diagnostic_source(),
            _ => None,
        }
    }
}

/// An error that several places hit alike (the same code, file, line, field and message: a
/// component's mistake in each environment it is deployed to), reported once, with every
/// place on a second line of its message (`in environments: dev, test, prod`). Everything
/// else is the error's own.
#[derive(Debug)]
pub struct Repeated<E> {
    pub error: E,
    /// The places as a line (`in environments: dev, test, prod`); `None` for one place.
    pub places: Option<String>,
}

impl<E> Repeated<E> {
    /// An error met in one place only.
    pub fn once(error: E) -> Repeated<E> {
        Repeated {
            error,
            places: None,
        }
    }
}

impl<E: Diagnostic> Repeated<E> {
    /// Groups `errors`, each with the place it arose in (if any), into one error per cause,
    /// in the order the causes first came, each with the places of all of them in the order
    /// they came (a place once). Errors are the same cause when their code and
    /// `message` (the message without what names the place) are equal. `places` turns two or
    /// more places into the line shown.
    pub fn group<P: PartialEq>(
        errors: Vec<(E, Option<P>)>,
        message: impl Fn(&E) -> String,
        places: impl Fn(&[P]) -> String,
    ) -> Vec<Repeated<E>> {
        let mut keys: Vec<String> = Vec::new();
        let mut groups: Vec<(E, Vec<P>)> = Vec::new();
        for (error, place) in errors {
            let code = error.code().map(|c| c.to_string()).unwrap_or_default();
            let key = format!("{code}\u{0}{}", message(&error));
            let i = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key);
                    groups.push((error, Vec::new()));
                    groups.len() - 1
                }
            };
            if let Some(p) = place
                && !groups[i].1.contains(&p)
            {
                groups[i].1.push(p);
            }
        }
        groups
            .into_iter()
            .map(|(error, ps)| Repeated {
                error,
                places: (ps.len() > 1).then(|| places(&ps)),
            })
            .collect()
    }
}

impl<E: fmt::Display> fmt::Display for Repeated<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.places {
            Some(places) => write!(f, "{}\n{places}", self.error),
            None => write!(f, "{}", self.error),
        }
    }
}

impl<E: std::error::Error> std::error::Error for Repeated<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl<E: Diagnostic> Diagnostic for Repeated<E> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.error.code()
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.error.severity()
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.error.help()
    }
    fn url<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.error.url()
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.error.source_code()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        self.error.labels()
    }
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        self.error.related()
    }
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.error.diagnostic_source()
    }
}

/// A diagnostic (and its causes and related ones) copied with its files shown under other
/// names: each snippet's source and every mention of its name in the messages and helps. An
/// engine names files from where it started (the kustomize engine from its build root, as
/// kubectl does: `../../base/kustomization.yaml`); a caller that started it elsewhere names
/// them from the user's root (`components/cart/base/kustomization.yaml`).
#[derive(Debug)]
pub struct Renamed {
    message: String,
    code: Option<String>,
    help: Option<String>,
    severity: Option<miette::Severity>,
    source: Option<NamedSource<String>>,
    labels: Option<Vec<miette::LabeledSpan>>,
    related: Vec<Renamed>,
    cause: Option<Box<Renamed>>,
}

impl Renamed {
    /// Copies `d`, showing each file name `rename` maps under its new name (`None`: as it is).
    pub fn new(d: &dyn Diagnostic, rename: &dyn Fn(&str) -> Option<String>) -> Renamed {
        let mut names = Vec::new();
        collect_source_names(d, &mut names);
        let pairs: Vec<(String, String)> = names
            .into_iter()
            .filter_map(|n| rename(&n).filter(|m| *m != n).map(|m| (n, m)))
            .collect();
        Renamed::copy(d, &pairs)
    }

    fn copy(d: &dyn Diagnostic, pairs: &[(String, String)]) -> Renamed {
        let text = |t: String| {
            pairs
                .iter()
                .fold(t, |t, (from, to)| replace_name(&t, from, to))
        };
        let source = d.source_code().and_then(|src| {
            let all = src
                .read_span(&SourceSpan::from((0, 0)), 0, usize::MAX)
                .ok()?;
            let name = all.name().unwrap_or("input");
            let name = pairs
                .iter()
                .find(|(from, _)| from == name)
                .map_or(name, |(_, to)| to.as_str());
            let mut named =
                NamedSource::new(name, String::from_utf8_lossy(all.data()).into_owned());
            if let Some(lang) = all.language() {
                named = named.with_language(lang);
            }
            Some(named)
        });
        Renamed {
            message: text(d.to_string()),
            code: d.code().map(|c| c.to_string()),
            help: d.help().map(|h| text(h.to_string())),
            severity: d.severity(),
            labels: source.as_ref().and(d.labels()).map(|l| {
                l.map(|l| {
                    miette::LabeledSpan::new(
                        l.label().map(|t| text(t.to_string())),
                        l.offset(),
                        l.len(),
                    )
                })
                .collect()
            }),
            source,
            related: d
                .related()
                .map(|r| r.map(|r| Renamed::copy(r, pairs)).collect())
                .unwrap_or_default(),
            cause: d
                .diagnostic_source()
                .map(|c| Box::new(Renamed::copy(c, pairs))),
        }
    }
}

/// The names of the sources `d`, its related diagnostics and its causes show.
fn collect_source_names(d: &dyn Diagnostic, out: &mut Vec<String>) {
    if let Some(src) = d.source_code()
        && let Ok(all) = src.read_span(&SourceSpan::from((0, 0)), 0, 0)
        && let Some(name) = all.name()
        && !out.iter().any(|n| n == name)
    {
        out.push(name.to_string());
    }
    for r in d.related().into_iter().flatten() {
        collect_source_names(r, out);
    }
    if let Some(c) = d.diagnostic_source() {
        collect_source_names(c, out);
    }
}

/// `text` with every mention of the file name `from` as a whole word (not inside a longer
/// name: `cm.yaml` in `xcm.yaml` or `base/cm.yaml` is left alone) replaced by `to`.
fn replace_name(text: &str, from: &str, to: &str) -> String {
    let part_of_name = |c: char| c.is_alphanumeric() || matches!(c, '.' | '/' | '-' | '_');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let before = rest[..i].chars().next_back().or(out.chars().next_back());
        let after = rest[i + from.len()..].chars().next();
        out.push_str(&rest[..i]);
        // A name ends before `:line`, a space, a quote or the end; `.` ends a sentence.
        let ends = after.is_none_or(|c| {
            !part_of_name(c)
                || c == '.'
                    && !rest[i + from.len() + 1..].starts_with(|c: char| c.is_alphanumeric())
        });
        if before.is_none_or(|c| !part_of_name(c)) && ends {
            out.push_str(to);
        } else {
            out.push_str(from);
        }
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

impl fmt::Display for Renamed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Renamed {}

impl Diagnostic for Renamed {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.code
            .as_ref()
            .map(|c| Box::new(c) as Box<dyn fmt::Display>)
    }
    fn severity(&self) -> Option<miette::Severity> {
        self.severity
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
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
            return None;
        }
        Some(Box::new(self.related.iter().map(|r| r as &dyn Diagnostic)))
    }
    fn diagnostic_source(&self) -> Option<&dyn Diagnostic> {
        self.cause.as_deref().map(|c| c as &dyn Diagnostic)
    }
}

/// At most this many places are listed; the rest are counted (`and 95 more`).
pub const MAX_PLACES: usize = 10;

/// `what: a, b, c` for a [`Repeated`] error's places, the first [`MAX_PLACES`] named and the
/// rest counted.
pub fn places_line(what: &str, names: &[&str]) -> String {
    let shown = names.len().min(MAX_PLACES);
    let mut line = format!("{what}: {}", names[..shown].join(", "));
    if names.len() > shown {
        line.push_str(&format!(", and {} more", names.len() - shown));
    }
    line
}

/// One JSON Schema violation, ready to be located: the instance's JSON Pointer, whether to
/// underline the key (unknown fields), a lower-case message and, for an unknown field close
/// to a known one, a `did you mean` help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub pointer: String,
    pub key: bool,
    pub message: String,
    pub help: Option<String>,
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
///
/// `schema` is the schema `validator` was compiled from: an unknown field then gets a `did
/// you mean` help naming the known field it is closest to (case first: `jsonpatch` →
/// `jsonPatch`). An unknown field that is a slip for one of the keys a `oneOf` asks for is one
/// error, not two: the "needs exactly one of" it causes is left out.
pub fn schema_violations(
    validator: &jsonschema::Validator,
    schema: Option<&serde_json::Value>,
    value: &serde_json::Value,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for e in validator.iter_errors(value) {
        push_violation(&e, schema, &mut out);
    }
    out
}

/// The `properties` names of the schema object holding the keyword at `keyword_path` (a
/// canonical schema location, `/$defs/Transformer/additionalProperties`).
fn known_fields<'s>(schema: Option<&'s serde_json::Value>, keyword_path: &str) -> Vec<&'s str> {
    let parent = keyword_path.rsplit_once('/').map_or("", |(p, _)| p);
    schema
        .and_then(|s| s.pointer(parent))
        .and_then(|s| s.get("properties"))
        .and_then(serde_json::Value::as_object)
        .map(|props| props.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn push_violation(
    e: &jsonschema::ValidationError<'_>,
    schema: Option<&serde_json::Value>,
    out: &mut Vec<Violation>,
) {
    use jsonschema::error::ValidationErrorKind as K;
    let pointer = e.instance_path().as_str().to_string();
    match e.kind() {
        K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
            let known = known_fields(schema, e.schema_path().as_str());
            for name in unexpected {
                let token = crate::pointer::escape(name);
                out.push(Violation {
                    pointer: format!("{pointer}/{token}"),
                    key: true,
                    message: format!("unknown field `{name}`"),
                    help: did_you_mean(name, known.iter().copied())
                        .map(|s| format!("did you mean `{s}`?")),
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
                        push_violation(b, schema, out);
                    }
                }
                _ => {
                    // Every branch only misses its one key (`files`, `namespace`, …): name them.
                    let mut keys = Vec::new();
                    for branch in context {
                        for b in branch {
                            if let K::Required { property } = b.kind()
                                && b.instance_path().as_str() == pointer
                                && let Some(property) = property.as_str()
                            {
                                keys.push(property);
                            }
                        }
                    }
                    if keys.len() == context.len()
                        && !keys.is_empty()
                        && slip_for_a_key(&pointer, &keys, out)
                    {
                        return;
                    }
                    let message = if keys.len() == context.len() && !keys.is_empty() {
                        let quoted: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
                        format!("needs exactly one of {}", quoted.join(", "))
                    } else {
                        "matches none of the allowed shapes".into()
                    };
                    out.push(Violation {
                        pointer,
                        key: false,
                        message,
                        help: None,
                    });
                }
            }
        }
        K::OneOfMultipleValid { .. } => out.push(Violation {
            pointer,
            key: false,
            message: "matches more than one of the allowed shapes (set exactly one kind of entry)"
                .into(),
            help: None,
        }),
        K::Required { property } => out.push(Violation {
            pointer,
            key: false,
            message: format!("missing required field {property}"),
            help: None,
        }),
        _ => out.push(Violation {
            pointer,
            key: false,
            message: e.to_string(),
            help: None,
        }),
    }
}

/// Whether an unknown field already reported under the object at `pointer` is a slip for
/// one of `keys`, the keys of a failed `oneOf` there (`jsonpatch` for `jsonPatch`): then that
/// field is the one error, its help says which key was meant, and the `oneOf` says nothing.
fn slip_for_a_key(pointer: &str, keys: &[&str], out: &mut [Violation]) -> bool {
    let mut found = false;
    for v in out.iter_mut() {
        let Some((parent, token)) = v.pointer.rsplit_once('/') else {
            continue;
        };
        if !v.key || parent != pointer {
            continue;
        }
        let name = crate::pointer::unescape(token);
        if let Some(key) = did_you_mean(&name, keys.iter().copied()) {
            v.help = Some(format!("did you mean `{key}`?"));
            found = true;
        }
    }
    found
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
    source: Option<Excerpt>,
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
) -> (Option<Excerpt>, Option<Vec<miette::LabeledSpan>>) {
    let Ok(all) = src.read_span(&SourceSpan::from((0, 0)), 0, usize::MAX) else {
        return (None, None);
    };
    let text = redacted(all.data());
    // A source may be an excerpt of a larger text ([`SourceFile::excerpt`]): its offset
    // and first line are kept, and the labels are read relative to it meanwhile.
    let (base, line) = (all.span().offset(), all.line());
    let excerpt = |text: String| Excerpt {
        name: all.name().unwrap_or("input").to_string(),
        language: all.language().map(str::to_string),
        text,
        offset: base,
        line,
    };
    if text.split('\n').all(|l| l.len() <= MAX_SNIPPET_LINE) {
        return (Some(excerpt(text)), Some(labels));
    }
    let labels: Vec<miette::LabeledSpan> = labels
        .into_iter()
        .map(|l| {
            let start = l.offset().saturating_sub(base);
            miette::LabeledSpan::new(l.label().map(str::to_string), start, l.len())
        })
        .collect();
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
            miette::LabeledSpan::new(l.label().map(str::to_string), base + start, end - start)
        })
        .collect();
    (Some(excerpt(out)), Some(labels))
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
    fn a_joined_location_escapes_its_token_and_keeps_the_document() {
        let mut at = Loc::new("f", "/spec");
        at.doc = 2;
        let child = at.join("a/b~c").join(3).extend("/x~1y").at_key();
        assert_eq!(child.pointer, "/spec/a~1b~0c/3/x~1y");
        assert_eq!((child.doc, child.key, child.file), (2, true, "f"));
        assert_eq!(Loc::new("f", "").join("").pointer, "/");
    }

    /// A diagnostic on an excerpt: what the CLI's handler prints.
    #[derive(Debug)]
    struct OnExcerpt(Excerpt, SourceSpan);

    impl fmt::Display for OnExcerpt {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("bad")
        }
    }

    impl std::error::Error for OnExcerpt {}

    impl Diagnostic for OnExcerpt {
        fn source_code(&self) -> Option<&dyn miette::SourceCode> {
            Some(&self.0)
        }
        fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
            Some(Box::new(std::iter::once(
                miette::LabeledSpan::new_with_span(Some("here".into()), self.1),
            )))
        }
    }

    /// Issue 36: an excerpt is the label's document cut to [`EXCERPT_LINES`] lines either
    /// side, keeps the whole file's line numbers through the clipping handler (long lines
    /// cut too), and masks a Secret's values whose `kind: Secret` lies outside the cut.
    #[test]
    fn excerpts_keep_line_numbers_and_mask_secrets_from_the_whole_document() {
        let filler: String = (0..30).map(|i| format!("  k{i}: dmFsdWU=\n")).collect();
        let long = "x".repeat(400);
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\ndata:\n{filler}  bad: {long}\n{filler}---\nkind: ConfigMap\n"
        );
        let file = SourceFile::new("s.yaml", text.as_str());
        let at = file.locate(1, "/data/bad", false).unwrap();
        assert_eq!(at.line, 39);
        let excerpt = file.excerpt(&at);
        // Lines 19 to 59: 20 either side of line 39, inside the Secret's document.
        assert_eq!(excerpt.line, 18);
        assert_eq!(excerpt.text.lines().count(), 41);
        assert_eq!(&text[excerpt.offset..excerpt.offset + 6], "  k10:");
        assert!(!excerpt.text.contains("Secret") && !excerpt.text.contains("dmFsdWU="));
        assert!(!excerpt.text.contains(&long), "the value is masked");
        let diagnostic = OnExcerpt(excerpt, at.span());
        let mut shown = String::new();
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .with_context_lines(2)
            .render_report(&mut shown, &Clipped::new(&diagnostic))
            .unwrap();
        assert!(shown.contains("[s.yaml:39:8]"), "{shown}");
        assert!(shown.contains("39 │   bad: ****"), "{shown}");
        assert!(shown.contains("37 │   k28: ********"), "{shown}");
        assert!(!shown.contains("xxxx"), "{shown}");
        // The lines kept are cut to the longest snippet line.
        assert!(
            shown
                .lines()
                .all(|l| l.chars().count() < MAX_SNIPPET_LINE + 40),
            "{shown}"
        );
    }

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

    /// Issue 38, item 10: `jsonpatch` for `jsonPatch` was two errors (the unknown field and
    /// the `oneOf` it broke) and no did-you-mean; a case slip too far by edit distance
    /// (`JSONPATCH`) was not matched at all.
    #[test]
    fn an_unknown_field_that_is_a_case_slip_is_one_error_with_a_did_you_mean() {
        let schema = serde_json::json!({
            "$defs": {"T": {
                "type": "object", "additionalProperties": false,
                "properties": {"jsonPatch": {}, "labels": {}, "environments": {}},
                "oneOf": [{"required": ["jsonPatch"]}, {"required": ["labels"]}]
            }},
            "type": "object", "additionalProperties": false,
            "properties": {"transformers": {"type": "array", "items": {"$ref": "#/$defs/T"}}}
        });
        let v = jsonschema::validator_for(&schema).unwrap();
        let doc = serde_json::json!({
            "transformers": [{"jsonpatch": {}}, {"JSONPATCH": {}}, {"colour": 1}],
            "Transformers": []
        });
        let got = schema_violations(&v, Some(&schema), &doc);
        let shown: Vec<(&str, &str, Option<&str>)> = got
            .iter()
            .map(|v| (v.pointer.as_str(), v.message.as_str(), v.help.as_deref()))
            .collect();
        assert_eq!(
            shown,
            [
                (
                    "/transformers/0/jsonpatch",
                    "unknown field `jsonpatch`",
                    Some("did you mean `jsonPatch`?")
                ),
                (
                    "/transformers/1/JSONPATCH",
                    "unknown field `JSONPATCH`",
                    Some("did you mean `jsonPatch`?")
                ),
                ("/transformers/2/colour", "unknown field `colour`", None),
                (
                    "/transformers/2",
                    "needs exactly one of `jsonPatch`, `labels`",
                    None
                ),
                (
                    "/Transformers",
                    "unknown field `Transformers`",
                    Some("did you mean `transformers`?")
                ),
            ]
        );
        // Without the schema, the `oneOf`'s keys still name what was meant.
        let bare = schema_violations(&v, None, &doc);
        assert_eq!(bare[0].help.as_deref(), Some("did you mean `jsonPatch`?"));
        assert_eq!(bare.len(), got.len());
    }

    #[test]
    fn renamed_files_are_renamed_as_whole_names_in_messages_and_snippets() {
        assert_eq!(
            replace_name(
                "../b/k.yaml:4:9 (field `x`): see `../b/k.yaml`.",
                "../b/k.yaml",
                "c/b/k.yaml"
            ),
            "c/b/k.yaml:4:9 (field `x`): see `c/b/k.yaml`."
        );
        assert_eq!(
            replace_name("a/cm.yaml xcm.yaml cm.yaml.bak", "cm.yaml", "z"),
            "a/cm.yaml xcm.yaml cm.yaml.bak"
        );
        let src = SourceFile::new("../b/k.yaml", "resources:\n- x\n");
        #[derive(Debug, thiserror::Error, Diagnostic)]
        #[error("../b/k.yaml:2:3: bad")]
        #[diagnostic(code(t::bad), help("fix ../b/k.yaml"))]
        struct Bad {
            #[source_code]
            src: NamedSource<String>,
            #[label("here")]
            span: Option<SourceSpan>,
        }
        let bad = Bad {
            src: src.named_source(),
            span: src.span(0, "/resources/0", false),
        };
        let r = Renamed::new(&bad, &|n| {
            Some(format!("c/{}", n.trim_start_matches("../")))
        });
        assert_eq!(r.to_string(), "c/b/k.yaml:2:3: bad");
        assert_eq!(r.help().unwrap().to_string(), "fix c/b/k.yaml");
        assert_eq!(r.code().unwrap().to_string(), "t::bad");
        let shown = graphical(&r);
        assert!(
            shown.contains("[c/b/k.yaml:2:3]") && shown.contains("here"),
            "{shown}"
        );
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
