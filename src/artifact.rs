//! The artifact set: what `emit` produces and `write` (a directory, or a Git tree) consumes.
//! A map from a relative path (always `/`-separated, no `..`, no leading `/`) to the file's
//! bytes. Sorted by path (`BTreeMap`), so every consumer iterates it in the same order.
//!
//! Invariant: the set is pure data; building it touches no disk. `diff`, `verify` and the
//! golden tests compare artifact sets directly.

use std::collections::BTreeMap;

/// The directory layout of the rendered tree (`--layout`): where emit puts each component
/// directory, and where Kargo's promotions and Argo CD's Applications find it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// `<project>/<env>/<component>/…` (a service repository).
    #[default]
    Service,
    /// `clusters/<cluster>/<project>/<env>/<component>/…` (a cluster repository).
    Cluster,
}

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

/// The part of an output tree a render is responsible for: everything (no filter), or the
/// directories of the selected slice. Commands that change or compare a tree (`render`,
/// `publish`, `diff`, `verify`) prune and compare only inside it, so a filtered run never
/// touches, or reports, files outside its slice.
///
/// The selection rule (README, "Selecting a slice"): `-p`, `-e`, `-c` and `-l` choose
/// BuildPlans (values of one flag are alternatives, flags combine with and); the slice is the
/// component directory of every chosen plan plus the Kargo and Argo CD directories of every
/// project with at least one chosen plan. No chosen plan: an empty slice, nothing written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// No filter: the whole tree.
    #[default]
    All,
    /// Directory prefixes, each ending in `/`.
    Dirs(std::collections::BTreeSet<String>),
}

impl Scope {
    /// `true` when `path` (relative to the output root) belongs to the slice.
    pub fn contains(&self, path: &str) -> bool {
        match self {
            Scope::All => true,
            Scope::Dirs(dirs) => dirs.iter().any(|d| path.starts_with(d.as_str())),
        }
    }

    /// `true` when the slice holds no path at all.
    pub fn is_empty(&self) -> bool {
        matches!(self, Scope::Dirs(d) if d.is_empty())
    }

    /// The part of `set` inside the slice.
    pub fn restrict(&self, set: &ArtifactSet) -> ArtifactSet {
        match self {
            Scope::All => set.clone(),
            Scope::Dirs(_) => ArtifactSet {
                files: set
                    .files
                    .iter()
                    .filter(|(p, _)| self.contains(p))
                    .map(|(p, b)| (p.clone(), b.clone()))
                    .collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_matches_whole_directories_only() {
        let scope = Scope::Dirs(["web/dev/api/".to_string()].into());
        assert!(scope.contains("web/dev/api/x.yaml"));
        assert!(!scope.contains("web/dev/api2/x.yaml"));
        assert!(!scope.contains("web/prod/api/x.yaml"));
        assert!(Scope::All.contains("anything"));
        assert!(Scope::Dirs(Default::default()).is_empty());
        let mut set = ArtifactSet::new();
        set.insert("web/dev/api/x.yaml", "a");
        set.insert("web/prod/api/x.yaml", "b");
        assert_eq!(
            scope.restrict(&set).paths().collect::<Vec<_>>(),
            ["web/dev/api/x.yaml"]
        );
    }
}
