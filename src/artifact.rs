//! The artifact set: what `emit` produces and `write` (a directory, or a Git tree) consumes.
//! A map from a relative path (always `/`-separated, no `..`, no leading `/`) to the file's
//! bytes. Sorted by path (`BTreeMap`), so every consumer iterates it in the same order.
//!
//! Invariant: the set is pure data; building it touches no disk. `diff`, `verify` and the
//! golden tests compare artifact sets directly.

use std::collections::BTreeMap;

/// Rendered output, path → bytes. Paths are relative to the output root (`--write-to`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArtifactSet {
    pub files: BTreeMap<String, Vec<u8>>,
}

impl ArtifactSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) one file. `path` must be relative and `/`-separated.
    pub fn insert(&mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), bytes.into());
    }

    /// Paths in sorted order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// `true` when there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}
