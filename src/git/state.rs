//! What a write branch holds now, for `kiln status`: the files of given folders at the branch
//! tip, and, per folder, the commits that changed it (newest first), found in one walk down
//! the first-parent chain.
//!
//! Sits beside `history`, reads Git only. Trees are read at the tip; history is walked only
//! for the per-folder past: each commit is compared with its first parent once (a tree diff,
//! which skips unchanged subtrees by id), its changed paths are attributed to the deepest
//! watched folder holding them, and the walk stops as soon as every folder has `past` writes
//! (or the root commit is reached). Publishes and Kargo's `git-push` (rebase, never a merge)
//! keep these branches linear, so the first-parent chain is the whole story.
//!
//! Invariant: output is ordered by folder path (a `BTreeMap`) and, per folder, newest first.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::history::Timestamp;
use super::{GitError, Identity, RemoteAuth, lg, open_for_reading, read_all_files};
use crate::artifact::ArtifactSet;

/// One commit that changed a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteCommit {
    pub id: String,
    pub time: Timestamp,
    pub author: Identity,
    /// The full commit message (subject, body, trailers).
    pub message: String,
    /// The folder's files at this commit (relative to the folder); read only for the newest
    /// `past` writes.
    pub files: ArtifactSet,
}

/// A watched folder at the branch tip.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderState {
    /// Its files at the tip, relative to the folder (empty when it does not exist there).
    pub files: ArtifactSet,
    /// The commits that changed it, newest first, at most `past` of them.
    pub writes: Vec<WriteCommit>,
}

/// A branch of one repository, as [`read_branch`] found it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchState {
    /// The tip commit; `None` when the branch does not exist (nothing written yet).
    pub tip: Option<String>,
    /// Every watched folder (`""` is the branch root), by path.
    pub folders: BTreeMap<String, FolderState>,
}

/// `folder` without `./`, leading or trailing slashes; `.` is the root (`""`).
pub fn normalize_folder(folder: &str) -> String {
    let f = folder.trim_start_matches("./").trim_matches('/');
    if f == "." {
        String::new()
    } else {
        f.to_string()
    }
}

/// Reads `folders` of `branch` in `repo` (a local path or URL): their files at the tip and
/// their last `past` writes (`past` ≥ 1).
///
/// Errors: [`GitError::RepositoryNotFound`], [`GitError::RemoteUnreachable`]; a missing
/// branch is an empty state, not an error (a Stage that never promoted has no branch yet).
/// The message of `commit` in the repository `repo` (a path, or a URL: fetched); `None`
/// when it cannot be read (a squashed or unknown commit: the caller then says nothing).
pub fn commit_message(repo: &str, commit: &str, auth: &RemoteAuth) -> Option<String> {
    let opened = open_for_reading(repo, auth).ok()?;
    let oid = git2::Oid::from_str(commit.trim_end_matches("-dirty")).ok()?;
    let found = opened.repo.find_commit(oid).ok()?;
    found.message().map(str::to_string).ok()
}

pub fn read_branch(
    repo: &str,
    branch: &str,
    folders: &BTreeSet<String>,
    past: usize,
    auth: &RemoteAuth,
) -> Result<BranchState, GitError> {
    let opened = open_for_reading(repo, auth)?;
    let repo = &opened.repo;
    let tip = ["refs/heads/", "refs/remotes/origin/", ""]
        .iter()
        .find_map(|prefix| repo.revparse_single(&format!("{prefix}{branch}")).ok())
        .and_then(|o| o.peel_to_commit().ok());
    let mut state = BranchState::default();
    let Some(tip) = tip else {
        for f in folders {
            state.folders.insert(f.clone(), FolderState::default());
        }
        return Ok(state);
    };
    state.tip = Some(tip.id().to_string());
    let tip_tree = tip.tree().map_err(lg("reading a commit's tree"))?;
    for f in folders {
        let files = read_all_files(repo, &tip_tree, f)?;
        state.folders.insert(
            f.clone(),
            FolderState {
                files,
                writes: Vec::new(),
            },
        );
    }
    let past = past.max(1);
    let mut open: BTreeSet<&String> = folders.iter().collect();
    let mut commit = Some(tip);
    let mut diff_options = git2::DiffOptions::new();
    diff_options.skip_binary_check(true);
    while let Some(c) = commit {
        if open.is_empty() {
            break;
        }
        let parent = c.parent(0).ok();
        let tree = c.tree().map_err(lg("reading a commit's tree"))?;
        let parent_tree = match &parent {
            Some(p) => Some(p.tree().map_err(lg("reading a commit's tree"))?),
            None => None,
        };
        let diff = repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut diff_options))
            .map_err(lg("comparing a commit with its parent"))?;
        let mut touched: BTreeSet<&String> = BTreeSet::new();
        for delta in diff.deltas() {
            for file in [delta.old_file(), delta.new_file()] {
                if let Some(path) = file.path().and_then(Path::to_str)
                    && let Some(folder) = owning_folder(folders, path)
                {
                    touched.insert(folder);
                }
            }
        }
        for folder in touched {
            if !open.contains(folder) {
                continue;
            }
            let author = c.author();
            let state_of = state.folders.entry(folder.clone()).or_default();
            state_of.writes.push(WriteCommit {
                id: c.id().to_string(),
                time: Timestamp {
                    seconds: c.time().seconds(),
                    offset_minutes: c.time().offset_minutes(),
                },
                author: Identity {
                    name: String::from_utf8_lossy(author.name_bytes()).into_owned(),
                    email: String::from_utf8_lossy(author.email_bytes()).into_owned(),
                },
                message: String::from_utf8_lossy(c.message_bytes()).into_owned(),
                files: read_all_files(repo, &tree, folder)?,
            });
            if state_of.writes.len() >= past {
                open.remove(folder);
            }
        }
        commit = parent;
    }
    Ok(state)
}

/// The deepest watched folder holding `path` (`""`, the root, holds everything).
fn owning_folder<'f>(folders: &'f BTreeSet<String>, path: &str) -> Option<&'f String> {
    let mut dir = path;
    while let Some((parent, _)) = dir.rsplit_once('/') {
        if let Some(f) = folders.get(parent) {
            return Some(f);
        }
        dir = parent;
    }
    folders.get("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deepest_watched_folder_owns_a_path() {
        let folders: BTreeSet<String> = ["a", "a/b", ""].iter().map(|s| s.to_string()).collect();
        assert_eq!(owning_folder(&folders, "a/b/c.yaml").unwrap(), "a/b");
        assert_eq!(owning_folder(&folders, "a/c.yaml").unwrap(), "a");
        assert_eq!(owning_folder(&folders, "x.yaml").unwrap(), "");
        let only: BTreeSet<String> = ["a/b".to_string()].into();
        assert!(owning_folder(&only, "a/bb/c.yaml").is_none());
        assert_eq!(normalize_folder("./out/x/"), "out/x");
        assert_eq!(normalize_folder("."), "");
    }
}
