//! `kiln bootstrap`: creates every write branch the Stages push to, before Kargo runs.
//!
//! Why: a Stage's `git-clone` with `create: true` turns a missing branch into an orphan branch
//! holding one empty commit and pushes it once, with no retry
//! (`pkg/promotion/runner/builtin/git_cloner.go` `ensureRemoteBranch`, Kargo v1.11.2). Two
//! Stages auto-promoting into one new branch at once race on that push: the loser's step
//! errors, and Kargo does not promote that Freight again. Creating every branch first, with
//! the same initial commit, leaves that code path unused.
//!
//! Invariant: an existing branch is never moved. A local repository's branch is created with
//! a compare-and-swap on "absent", a remote one by a push that is not forced (both through
//! [`super::repo::Git::create_orphan_branch`]), so running it twice, or beside a Kargo that
//! already created a branch, changes nothing.

use super::{Objects, PromoteError, StageDef, repo, s};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// One write branch and what bootstrap did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchStatus {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    pub branch: String,
    /// `true`: created now; `false`: it existed.
    pub created: bool,
    /// The branch's commit.
    pub commit: String,
}

/// The (repository, branch) of every `git-clone` checkout with `create: true` of every Stage,
/// with the Stage's `vars` substituted; sorted, each once.
pub fn write_branches(objects: &Objects) -> Result<BTreeSet<(String, String)>, PromoteError> {
    let mut out = BTreeSet::new();
    for v in &objects.stages {
        let stage = StageDef::from_object(v)?;
        for st in stage.steps.iter().filter(|st| st.uses == "git-clone") {
            let repo_url = stage.substitute(s(&st.config, "/repoURL"));
            for c in st.config["checkout"].as_array().into_iter().flatten() {
                let branch = stage.substitute(s(c, "/branch"));
                if c.get("create") == Some(&Value::Bool(true)) && !branch.is_empty() {
                    out.insert((repo_url.clone(), branch));
                }
            }
        }
    }
    Ok(out)
}

/// Creates each of [`write_branches`] that is missing, with Kargo's initial commit; `scratch`
/// is an empty directory for remote pushes.
pub fn bootstrap(
    objects: &Objects,
    git: &repo::Git<'_>,
    signature: &git2::Signature<'_>,
    scratch: &std::path::Path,
) -> Result<Vec<BranchStatus>, PromoteError> {
    let mut out = Vec::new();
    for (n, (repo_url, branch)) in write_branches(objects)?.into_iter().enumerate() {
        let io = |message: String| PromoteError::Io {
            message: format!("{repo_url} branch {branch:?}: {message}"),
        };
        let (created, commit) = match git.remote_branch_tip(&repo_url, &branch).map_err(io)? {
            Some(tip) => (false, tip),
            None => (
                true,
                git.create_orphan_branch(
                    &repo_url,
                    &branch,
                    signature,
                    &scratch.join(n.to_string()),
                )
                .map_err(io)?,
            ),
        };
        out.push(BranchStatus {
            repo_url,
            branch,
            created,
            commit: commit.to_string(),
        });
    }
    Ok(out)
}
