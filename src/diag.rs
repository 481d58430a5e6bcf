//! Source files kept for diagnostics: every stage that reads YAML keeps a [`SourceFile`], so an
//! error found late in the pipeline can still underline the right line (taplo's and typst's
//! approach). The span index is built lazily, on the first error that needs it.

use crate::yaml::{Located, SpanIndex};
use miette::{NamedSource, SourceSpan};
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_lazily() {
        let f = SourceFile::new("a.yaml", "kind: X\nspec:\n  replicas: 2\n");
        assert_eq!(f.position(0, "/spec/replicas"), "a.yaml:3");
        assert!(f.span(0, "/spec/replicas", true).is_some());
    }
}
