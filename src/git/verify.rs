//! `kiln verify`: does the committed tree still match a fresh render? Compares the files kiln
//! owns at a ref (per its ownership marker) with an [`ArtifactSet`], and names every file and
//! resource that drifted: a hand edit, a hand-deleted file, or a stale render (the spec changed
//! and nobody published).
//!
//! Sits at the end of the pipeline, beside `publish`; reads Git only through
//! `open_for_reading` in `git/mod.rs`. Files in the branch that kiln does not own are not drift.
//!
//! Invariant: a tree written by `publish` from the same artifact set verifies clean.

use std::fmt;

use serde::Serialize;

use super::diff::{DiffReport, Status, diff_sets, write_bounded, write_hidden};
use super::{
    GitError, RemoteAuth, lg, normalize_managed_path, open_for_reading, read_owned_files,
    resolve_commit,
};
use crate::artifact::{ArtifactSet, Scope};

/// Result of a verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// The repository (password redacted).
    pub repo: String,
    pub reference: String,
    /// The commit the reference resolved to.
    pub commit: String,
    /// Managed path (`""` = branch root).
    pub path: String,
    /// Committed (old side) against rendered (new side): `added` = rendered but missing in Git,
    /// `removed` = in Git but no longer rendered, `changed` = different content.
    pub drift: DiffReport,
}

impl VerifyReport {
    /// The first line of the report and one line per drifted file (`--stat`).
    pub fn summary(&self) -> String {
        let mut out = self
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        out.push('\n');
        for file in &self.drift.files {
            out.push_str(&format!(
                "  {:<8} {}\n",
                file.status.word(),
                super::history::printable_field(&file.path)
            ));
        }
        out
    }

    /// `true` when the committed tree differs from the render (`kiln verify` exits 1).
    pub fn has_drift(&self) -> bool {
        self.drift.has_differences()
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::new();
        self.write_text(&mut text)?;
        // Paths and contents come from Git (a committed tree, a hand edit): shown escaped.
        f.write_str(&super::history::printable(&text))
    }
}

impl VerifyReport {
    /// The report as text, raw: [`fmt::Display`] makes it printable.
    fn write_text(&self, f: &mut String) -> fmt::Result {
        use fmt::Write as _;
        let short = &self.commit[..self.commit.len().min(12)];
        let place = if self.path.is_empty() {
            format!("{}@{} ({short})", self.repo, self.reference)
        } else {
            format!(
                "{}@{} ({short}) path `{}`",
                self.repo, self.reference, self.path
            )
        };
        if !self.has_drift() {
            return writeln!(f, "{place} matches the render");
        }
        writeln!(
            f,
            "{place} drifted from the render in {} file{}:",
            self.drift.files.len(),
            if self.drift.files.len() == 1 { "" } else { "s" }
        )?;
        for file in &self.drift.files {
            let what = match file.status {
                Status::Added => "missing in Git (rendered, not committed)",
                Status::Removed => "stale in Git (committed, no longer rendered)",
                Status::Changed => "differs (hand edit or stale render)",
            };
            writeln!(f, "  {}: {what}", file.path)?;
            let (mut shown, mut hidden) = (0, 0);
            for resource in &file.resources {
                let what = match resource.status {
                    Status::Added => "missing in Git",
                    Status::Removed => "only in Git",
                    Status::Changed => "differs",
                };
                writeln!(f, "    {}: {what}", resource.resource)?;
                write_bounded(f, &resource.diff, "      ", &mut shown, &mut hidden)?;
            }
            if let Some(text) = &file.text_diff {
                write_bounded(f, text, "      ", &mut shown, &mut hidden)?;
            }
            write_hidden(f, "      ", hidden)?;
        }
        Ok(())
    }
}

/// Compares the files kiln owns at `reference` (branch, tag or commit) and `path` of `repo`
/// (local path or URL) with `set`.
///
/// Errors: [`GitError::RepositoryNotFound`], [`GitError::RemoteUnreachable`],
/// [`GitError::RefNotFound`], [`GitError::NotPublished`] when there is no kiln marker at
/// `path` (kiln cannot tell its files from others'), [`GitError::InvalidMarker`].
pub fn verify(
    set: &ArtifactSet,
    repo: &str,
    reference: &str,
    path: Option<&str>,
    auth: &RemoteAuth,
) -> Result<VerifyReport, GitError> {
    verify_scoped(set, &Scope::All, repo, reference, path, auth)
}

/// [`verify`] of a filtered render: only the committed files inside `scope` are compared, so
/// `verify -e dev` checks the dev slice and does not call every other file stale.
pub fn verify_scoped(
    set: &ArtifactSet,
    scope: &Scope,
    repo: &str,
    reference: &str,
    path: Option<&str>,
    auth: &RemoteAuth,
) -> Result<VerifyReport, GitError> {
    let path = normalize_managed_path(path)?;
    let opened = open_for_reading(repo, auth)?;
    let commit = resolve_commit(&opened.repo, &opened.display, reference)?;
    let tree = commit.tree().map_err(lg("reading a commit's tree"))?;
    let committed =
        read_owned_files(&opened.repo, &tree, &path)?.ok_or_else(|| GitError::NotPublished {
            reference: reference.to_string(),
            path: if path.is_empty() {
                "/".to_string()
            } else {
                path.clone()
            },
        })?;
    Ok(VerifyReport {
        repo: opened.display.clone(),
        reference: reference.to_string(),
        commit: commit.id().to_string(),
        path,
        drift: diff_sets(&scope.restrict(&committed), set),
    })
}
