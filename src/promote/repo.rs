//! The one door of `kiln promote` to the outside world: the Git repositories (through libgit2,
//! never a `git` binary) and the promotion's work directory on disk. Everything else in
//! `promote` is pure.
//!
//! Git semantics implemented from Kargo v1.11.2:
//! - `pkg/promotion/runner/builtin/git_cloner.go` `ensureRemoteBranch`: a missing branch with
//!   `create: true` becomes an orphan branch holding one empty commit, `Initial commit`,
//!   pushed before the checkout.
//! - `pkg/controller/git/work_tree.go` `Push` and `remote_commit_integration.go`
//!   (`IntegrateRemoteChanges`, AlwaysRebase = `git pull --rebase origin <branch>` when the
//!   remote branch exists, a conflict is `ErrMergeConflict`), `git_commiter.go` (`AddAll`,
//!   `HasDiffs`, commit only when something changed).
//!
//! Local repositories (a `--repo-map` path) are written the way `kiln publish` writes them:
//! objects straight into the repository, the branch moved with a compare-and-swap on its old
//! value, because libgit2's local transport force-updates the ref (see `src/git/publish.rs`).
//! A moved branch is then a rejected (non-fast-forward) push, as a Git server reports it.
#![allow(clippy::disallowed_methods)] // promote's one door to the outside world (see above)

use crate::git::Attempt;
use git2::{Oid, Repository};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `--repo-map URL=PATH` entries: local stand-ins for remote repositories.
#[derive(Debug, Clone, Default)]
pub struct RepoMap {
    entries: Vec<(String, PathBuf)>,
}

/// Where a repository URL really is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Local(PathBuf),
    Remote(String),
}

impl RepoMap {
    /// Parses `URL=PATH` (PATH a directory or a `file://` URL).
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let mut map = RepoMap::default();
        for a in args {
            // Either side may carry a token: never echo it.
            let shown = || {
                a.split_once('=').map_or_else(
                    || crate::git::redact(a),
                    |(u, p)| format!("{}={}", crate::git::redact(u), crate::git::redact(p)),
                )
            };
            let Some((url, path)) = a.split_once('=') else {
                return Err(format!("`--repo-map {}`: expected URL=PATH", shown()));
            };
            if url.is_empty() || path.is_empty() {
                return Err(format!("`--repo-map {}`: expected URL=PATH", shown()));
            }
            if let crate::git::RepoLocation::Remote(_) = crate::git::RepoLocation::parse(path) {
                return Err(format!(
                    "`--repo-map {}`: PATH must be a local repository (a directory or file:// URL); kiln promote writes only to local stand-ins",
                    shown()
                ));
            }
            map.insert(url, path);
        }
        Ok(map)
    }

    /// Maps `url` to `path`.
    pub fn insert(&mut self, url: &str, path: impl AsRef<str>) {
        let path = path.as_ref();
        let local = match crate::git::RepoLocation::parse(path) {
            crate::git::RepoLocation::Local(p) => p,
            crate::git::RepoLocation::Remote(r) => PathBuf::from(r),
        };
        self.entries
            .push((super::freight::normalize_git(url), local));
    }

    /// Where `url` lives: a mapped local path, a `file://` URL or plain path as itself, else
    /// the network.
    pub fn locate(&self, url: &str) -> Location {
        let norm = super::freight::normalize_git(url);
        if let Some((_, p)) = self.entries.iter().find(|(u, _)| *u == norm) {
            return Location::Local(p.clone());
        }
        match crate::git::RepoLocation::parse(url) {
            crate::git::RepoLocation::Local(p) => Location::Local(p),
            crate::git::RepoLocation::Remote(r) => Location::Remote(r),
        }
    }
}

fn lg(what: &str) -> impl FnOnce(git2::Error) -> String + '_ {
    move |e| format!("{what}: {}", e.message())
}

/// How a push ended when it did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushError {
    /// Rebasing the local commits onto the remote branch conflicted (`ErrMergeConflict`):
    /// terminal, no retry helps.
    MergeConflict(String),
    /// The branch kept moving: every attempt was rejected as non-fast-forward.
    Rejected { attempts: u32 },
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushError::MergeConflict(m) => write!(f, "merge conflict: {m}"),
            PushError::Rejected { attempts } => write!(
                f,
                "error pushing commits to remote: non-fast-forward after {attempts} attempts"
            ),
            PushError::Other(m) => f.write_str(m),
        }
    }
}

/// What a successful push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub commit: Oid,
    pub attempts: u32,
    /// Local commits were replayed onto a moved remote branch.
    pub rebased: bool,
}

/// Git access for one promotion.
pub struct Git<'a> {
    pub map: &'a RepoMap,
    pub auth: &'a crate::git::RemoteAuth,
}

impl Git<'_> {
    fn fetch_options(&self) -> git2::FetchOptions<'_> {
        let mut fo = git2::FetchOptions::new();
        fo.remote_callbacks(crate::git::remote_callbacks(self.auth));
        fo.download_tags(git2::AutotagOption::All);
        fo
    }

    /// The tip of `branch` in the repository at `url`, or `None` when it has no such branch.
    pub fn remote_branch_tip(&self, url: &str, branch: &str) -> Result<Option<Oid>, String> {
        let refname = format!("refs/heads/{branch}");
        match self.map.locate(url) {
            Location::Local(p) => {
                let repo = open_local(&p, url)?;
                Ok(repo.refname_to_id(&refname).ok())
            }
            Location::Remote(r) => {
                let mut remote =
                    git2::Remote::create_detached(r.as_str()).map_err(lg("creating a remote"))?;
                let conn = remote
                    .connect_auth(
                        git2::Direction::Fetch,
                        Some(crate::git::remote_callbacks(self.auth)),
                        None,
                    )
                    .map_err(|e| {
                        format!("cannot reach {}: {}", crate::git::redact(&r), e.message())
                    })?;
                let heads = conn.list().map_err(lg("listing remote refs"))?;
                Ok(heads.iter().find(|h| h.name() == refname).map(|h| h.oid()))
            }
        }
    }

    /// `ensureRemoteBranch` with `create`: an orphan branch with one empty commit.
    pub fn create_orphan_branch(
        &self,
        url: &str,
        branch: &str,
        signature: &git2::Signature<'_>,
        scratch: &Path,
    ) -> Result<Oid, String> {
        let refname = format!("refs/heads/{branch}");
        match self.map.locate(url) {
            Location::Local(p) => {
                let repo = open_local(&p, url)?;
                let commit = empty_commit(&repo, signature)?;
                crate::git::move_branch(
                    &repo,
                    &refname,
                    commit,
                    None,
                    "kiln promote: create branch",
                )
                .map_err(lg("creating the branch"))?;
                Ok(commit)
            }
            Location::Remote(r) => {
                let repo =
                    Repository::init_bare(scratch).map_err(lg("creating a scratch repository"))?;
                let commit = empty_commit(&repo, signature)?;
                repo.reference("refs/heads/kiln-orphan", commit, true, "")
                    .map_err(lg("creating the branch"))?;
                let mut remote = repo.remote_anonymous(&r).map_err(lg("creating a remote"))?;
                push_refspec(
                    &mut remote,
                    self.auth,
                    &format!("refs/heads/kiln-orphan:{refname}"),
                )
                .map_err(|e| {
                    format!("error pushing initial commit to new branch {branch:?}: {e}")
                })?;
                Ok(commit)
            }
        }
    }

    /// Clones `url` into `dest` (which must not exist or be empty) and checks out `what`;
    /// returns the checked-out commit. The clone's `origin` is the real location, so pushes go
    /// where the map says.
    pub fn clone(&self, url: &str, dest: &Path, what: &super::steps::Ref) -> Result<Oid, String> {
        use super::steps::Ref;
        let location = match self.map.locate(url) {
            Location::Local(p) => {
                open_local(&p, url)?;
                absolute(&p)?.to_string_lossy().into_owned()
            }
            Location::Remote(r) => r,
        };
        if dest.exists()
            && std::fs::read_dir(dest)
                .map(|mut d| d.next().is_some())
                .unwrap_or(true)
        {
            return Err(format!(
                "checkout path {} already exists and is not empty",
                dest.display()
            ));
        }
        let repo = Repository::init(dest).map_err(lg("creating the working tree"))?;
        let mut remote = repo
            .remote("origin", &location)
            .map_err(lg("adding the remote"))?;
        remote
            .fetch(
                &["+refs/heads/*:refs/remotes/origin/*"],
                Some(&mut self.fetch_options()),
                None,
            )
            .map_err(|e| format!("error cloning {}: {}", crate::git::redact(url), e.message()))?;
        let (commit, branch) = match what {
            Ref::Branch(b) => {
                let id = repo
                    .refname_to_id(&format!("refs/remotes/origin/{b}"))
                    .map_err(|_| format!("remote branch {b:?} of repo {url} does not exist"))?;
                (id, Some(b.clone()))
            }
            Ref::Commit(c) => {
                let obj = repo
                    .revparse_single(c)
                    .map_err(|_| format!("commit {c} not found in {url}"))?;
                let commit = obj
                    .peel_to_commit()
                    .map_err(|_| format!("{c} is not a commit in {url}"))?;
                (commit.id(), None)
            }
            Ref::Tag(t) => {
                let id = repo
                    .revparse_single(&format!("refs/tags/{t}"))
                    .and_then(|o| o.peel_to_commit())
                    .map_err(|_| format!("tag {t:?} not found in {url}"))?
                    .id();
                (id, None)
            }
            Ref::Default => {
                let default = self.default_branch(url)?;
                let id = repo
                    .refname_to_id(&format!("refs/remotes/origin/{default}"))
                    .map_err(|_| format!("{url} has no default branch to check out"))?;
                (id, Some(default))
            }
        };
        let c = repo.find_commit(commit).map_err(lg("reading the commit"))?;
        match branch {
            Some(b) => {
                repo.branch(&b, &c, true)
                    .map_err(lg("creating the local branch"))?;
                repo.set_head(&format!("refs/heads/{b}"))
                    .map_err(lg("checking out the branch"))?;
            }
            None => repo
                .set_head_detached(commit)
                .map_err(lg("checking out the commit"))?,
        }
        repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .map_err(lg("checking out the working tree"))?;
        Ok(commit)
    }

    fn default_branch(&self, url: &str) -> Result<String, String> {
        match self.map.locate(url) {
            Location::Local(p) => {
                let repo = open_local(&p, url)?;
                let head = repo.find_reference("HEAD").map_err(lg("reading HEAD"))?;
                Ok(head
                    .symbolic_target()
                    .ok()
                    .flatten()
                    .and_then(|t| t.strip_prefix("refs/heads/"))
                    .unwrap_or("main")
                    .to_string())
            }
            Location::Remote(r) => {
                let mut remote =
                    git2::Remote::create_detached(r.as_str()).map_err(lg("creating a remote"))?;
                let conn = remote
                    .connect_auth(
                        git2::Direction::Fetch,
                        Some(crate::git::remote_callbacks(self.auth)),
                        None,
                    )
                    .map_err(lg("connecting"))?;
                let b = conn
                    .default_branch()
                    .map_err(lg("reading the default branch"))?;
                Ok(b.as_str()
                    .unwrap_or("refs/heads/main")
                    .trim_start_matches("refs/heads/")
                    .to_string())
            }
        }
    }

    /// `AddAll` + `HasDiffs` + `Commit`: stages every change of the working tree and commits
    /// when the tree differs from HEAD. Returns whether it committed, and HEAD afterwards.
    pub fn commit_all(
        &self,
        dir: &Path,
        message: &str,
        signature: &git2::Signature<'_>,
    ) -> Result<(bool, Oid), String> {
        let repo = Repository::open(dir).map_err(lg("loading the working tree"))?;
        let mut index = repo.index().map_err(lg("reading the index"))?;
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .map_err(lg("adding all changes"))?;
        index
            .update_all(["*"], None)
            .map_err(lg("adding all changes"))?;
        index.write().map_err(lg("writing the index"))?;
        let tree_id = index.write_tree().map_err(lg("writing the tree"))?;
        let head = repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map_err(lg("reading HEAD"))?;
        if head.tree_id() == tree_id {
            return Ok((false, head.id()));
        }
        let tree = repo.find_tree(tree_id).map_err(lg("reading the tree"))?;
        let parent = head.tree().map_err(lg("reading HEAD's tree"))?;
        let message = stamped(&repo, message, Some(&parent), &tree)?;
        let id = repo
            .commit(
                Some("HEAD"),
                signature,
                signature,
                &message,
                &tree,
                &[&head],
            )
            .map_err(lg("committing"))?;
        Ok((true, id))
    }

    /// `git-push` with AlwaysRebase: fetch the target branch, replay the local commits onto it
    /// when it moved, push; a rejected push is retried up to `max_attempts` times.
    pub fn push(
        &self,
        dir: &Path,
        url: &str,
        branch: &str,
        max_attempts: u32,
    ) -> Result<Pushed, PushError> {
        let other = PushError::Other;
        let repo = Repository::open(dir)
            .map_err(|e| other(format!("error loading working tree: {}", e.message())))?;
        let refname = format!("refs/heads/{branch}");
        let mut rebased = false;
        crate::git::push_with_retry(
            max_attempts,
            |attempt| {
                // Integrate: `git pull --rebase origin <branch>` when the branch exists remotely.
                let remote_tip = self.fetch_branch(&repo, branch).map_err(other)?;
                let mut head = repo
                    .head()
                    .and_then(|h| h.peel_to_commit())
                    .map_err(|e| other(format!("reading HEAD: {}", e.message())))?
                    .id();
                if let Some(tip) = remote_tip
                    && tip != head
                    && !repo.graph_descendant_of(head, tip).unwrap_or(false)
                {
                    head = rebase_onto(&repo, head, tip)?;
                    rebased = true;
                }
                let pushed = Attempt::Done(Pushed {
                    commit: head,
                    attempts: attempt,
                    rebased,
                });
                if remote_tip == Some(head) {
                    return Ok(pushed);
                }
                let accepted = match self.map.locate(url) {
                    Location::Local(p) => {
                        let target = open_local(&p, url).map_err(other)?;
                        if !target.is_bare()
                            && target
                                .head()
                                .ok()
                                .and_then(|h| h.name().ok().map(str::to_string))
                                == Some(refname.clone())
                        {
                            return Err(other(format!(
                                "branch {branch:?} is checked out in the non-bare repository {}; push into a bare repository",
                                p.display()
                            )));
                        }
                        copy_objects(&repo, &target, head, remote_tip).map_err(other)?;
                        crate::git::move_branch(
                            &target,
                            &refname,
                            head,
                            remote_tip,
                            "kiln promote: push",
                        )
                        .is_ok()
                    }
                    Location::Remote(_) => {
                        repo.reference("refs/kiln/push", head, true, "")
                            .map_err(|e| other(e.message().to_string()))?;
                        let mut remote = repo
                            .find_remote("origin")
                            .map_err(|e| other(e.message().to_string()))?;
                        push_refspec(&mut remote, self.auth, &format!("refs/kiln/push:{refname}"))
                            .is_ok()
                    }
                };
                Ok(if accepted {
                    pushed
                } else {
                    Attempt::Moved(String::new())
                })
            },
            |attempts, _| PushError::Rejected { attempts },
        )
    }

    /// Fetches `branch` into `refs/remotes/origin/<branch>`; its tip, `None` when absent.
    fn fetch_branch(&self, repo: &Repository, branch: &str) -> Result<Option<Oid>, String> {
        let tracking = format!("refs/remotes/origin/{branch}");
        // A branch deleted remotely must not linger as a stale tracking ref.
        if let Ok(mut r) = repo.find_reference(&tracking) {
            let _ = r.delete();
        }
        let mut remote = repo.find_remote("origin").map_err(lg("finding origin"))?;
        let url = remote.url().unwrap_or("").to_string();
        if let Location::Local(p) = self.map.locate(&url)
            && let Ok(target) = open_local(&p, &url)
            && target
                .refname_to_id(&format!("refs/heads/{branch}"))
                .is_err()
        {
            return Ok(None);
        }
        match remote.fetch(
            &[format!("+refs/heads/{branch}:{tracking}")],
            Some(&mut self.fetch_options()),
            None,
        ) {
            Ok(()) => Ok(repo.refname_to_id(&tracking).ok()),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(format!("error fetching {branch:?}: {}", e.message())),
        }
    }

    /// Opens the repository at `url` for reading (a local path directly, a network remote
    /// fetched into `scratch`).
    pub fn open_for_read(&self, url: &str, scratch: &Path) -> Result<Repository, String> {
        match self.map.locate(url) {
            Location::Local(p) => open_local(&p, url),
            Location::Remote(r) => {
                let repo =
                    Repository::init_bare(scratch).map_err(lg("creating a scratch repository"))?;
                {
                    let mut remote = repo.remote_anonymous(&r).map_err(lg("creating a remote"))?;
                    remote
                        .fetch(
                            &["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                            Some(&mut self.fetch_options()),
                            None,
                        )
                        .map_err(|e| {
                            format!("cannot fetch {}: {}", crate::git::redact(url), e.message())
                        })?;
                }
                Ok(repo)
            }
        }
    }
}

fn absolute(p: &Path) -> Result<PathBuf, String> {
    std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()))
}

fn open_local(p: &Path, url: &str) -> Result<Repository, String> {
    Repository::open(p).map_err(|_| {
        format!(
            "repository {} (for {}) does not exist or is not a Git repository",
            crate::git::redact(&p.display().to_string()),
            crate::git::redact(url)
        )
    })
}

fn empty_commit(repo: &Repository, signature: &git2::Signature<'_>) -> Result<Oid, String> {
    let tree_id = repo
        .treebuilder(None)
        .and_then(|b| b.write())
        .map_err(lg("writing an empty tree"))?;
    let tree = repo
        .find_tree(tree_id)
        .map_err(lg("reading the empty tree"))?;
    let message = stamped(repo, "Initial commit", None, &tree)?;
    repo.commit(None, signature, signature, &message, &tree, &[])
        .map_err(lg("making the initial commit"))
}

/// `message` stamped as kiln's (`Kiln-Promote`, see [`crate::git::trailers::PROMOTE`]) for a
/// commit of `tree` onto `parent`: `kiln history` tells kiln's commits from Kargo's and from
/// hand commits that copy the message.
fn stamped(
    repo: &Repository,
    message: &str,
    parent: Option<&git2::Tree<'_>>,
    tree: &git2::Tree<'_>,
) -> Result<String, String> {
    let digest = crate::git::trailers::change_digest(repo, parent, tree)
        .map_err(lg("comparing the commit with its parent"))?;
    Ok(crate::git::trailers::stamp_promote(message, &digest))
}

/// [`crate::git::push_ref`], a refusal or failure as promote reports it.
fn push_refspec(
    remote: &mut git2::Remote<'_>,
    auth: &crate::git::RemoteAuth,
    refspec: &str,
) -> Result<(), String> {
    match crate::git::push_ref(remote, auth, refspec) {
        Ok(None) => Ok(()),
        Ok(Some(s)) => Err(format!("rejected ({s})")),
        Err(e) => Err(e.message().to_string()),
    }
}

/// `git pull --rebase`: replays the commits of `head` that `onto` lacks, oldest first, on top
/// of `onto`. Commits that become empty are dropped, as git does; merge commits are dropped,
/// as `git rebase` without `--rebase-merges` does. Moves HEAD (its branch, or detached) and
/// the working tree to the result.
fn rebase_onto(repo: &Repository, head: Oid, onto: Oid) -> Result<Oid, PushError> {
    let other =
        |e: git2::Error| PushError::Other(format!("error pulling and rebasing: {}", e.message()));
    let mut walk = repo.revwalk().map_err(other)?;
    walk.push(head).map_err(other)?;
    walk.hide(onto).map_err(other)?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
        .map_err(other)?;
    let mut base = repo.find_commit(onto).map_err(other)?;
    for oid in walk {
        let c = repo.find_commit(oid.map_err(other)?).map_err(other)?;
        if c.parent_count() > 1 {
            continue;
        }
        let mut index = repo.cherrypick_commit(&c, &base, 0, None).map_err(other)?;
        if index.has_conflicts() {
            let paths: Vec<String> = index
                .conflicts()
                .map(|cs| {
                    cs.filter_map(Result::ok)
                        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
                        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                        .collect()
                })
                .unwrap_or_default();
            return Err(PushError::MergeConflict(format!(
                "replaying {} onto {} conflicts in {}",
                short(c.id()),
                short(onto),
                paths.join(", ")
            )));
        }
        let tree_id = index.write_tree_to(repo).map_err(other)?;
        if tree_id == base.tree_id() {
            continue;
        }
        let tree = repo.find_tree(tree_id).map_err(other)?;
        // Replayed, the change may differ (merged into a file upstream changed too): kiln's
        // stamp is made again for it.
        let mut message = c.message().unwrap_or("").to_string();
        if crate::git::trailers::promote_stamp(&message).is_some() {
            let parent = base.tree().map_err(other)?;
            message = stamped(repo, &message, Some(&parent), &tree).map_err(PushError::Other)?;
        }
        let id = repo
            .commit(None, &c.author(), &c.committer(), &message, &tree, &[&base])
            .map_err(other)?;
        base = repo.find_commit(id).map_err(other)?;
    }
    let new_head = base.id();
    let head_ref = repo.find_reference("HEAD").map_err(other)?;
    match head_ref.symbolic_target().ok().flatten() {
        Some(branch) => {
            repo.reference(branch, new_head, true, "kiln promote: rebase")
                .map_err(other)?;
        }
        None => repo.set_head_detached(new_head).map_err(other)?,
    }
    repo.checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
        .map_err(other)?;
    Ok(new_head)
}

/// Abbreviated id for messages.
pub fn short(id: Oid) -> String {
    id.to_string()[..7].to_string()
}

/// Copies the objects of the commits `head` has and `known` lacks from `src` into `dst`.
fn copy_objects(
    src: &Repository,
    dst: &Repository,
    head: Oid,
    known: Option<Oid>,
) -> Result<(), String> {
    let from = src.odb().map_err(lg("opening the object database"))?;
    let to = dst.odb().map_err(lg("opening the object database"))?;
    let mut walk = src.revwalk().map_err(lg("walking history"))?;
    walk.push(head).map_err(lg("walking history"))?;
    if let Some(k) = known
        && src.find_commit(k).is_ok()
    {
        walk.hide(k).map_err(lg("walking history"))?;
    }
    let copy = |oid: Oid| -> Result<bool, String> {
        if to.exists(oid) {
            return Ok(false);
        }
        let obj = from.read(oid).map_err(lg("reading an object"))?;
        to.write(obj.kind(), obj.data())
            .map_err(lg("writing an object"))?;
        Ok(true)
    };
    fn copy_tree(
        src: &Repository,
        tree: Oid,
        copy: &dyn Fn(Oid) -> Result<bool, String>,
    ) -> Result<(), String> {
        if !copy(tree)? {
            return Ok(());
        }
        let t = src.find_tree(tree).map_err(lg("reading a tree"))?;
        for entry in t.iter() {
            match entry.kind() {
                Some(git2::ObjectType::Tree) => copy_tree(src, entry.id(), copy)?,
                Some(git2::ObjectType::Blob) => {
                    copy(entry.id())?;
                }
                _ => {}
            }
        }
        Ok(())
    }
    for oid in walk {
        let oid = oid.map_err(lg("walking history"))?;
        let commit = src.find_commit(oid).map_err(lg("reading a commit"))?;
        copy_tree(src, commit.tree_id(), &copy)?;
        copy(oid)?;
    }
    Ok(())
}

/// The newest commit reachable from `head` (newest first by commit time, as `git log`) whose
/// changes against its first parent (every file, for a root commit) `select` accepts: Kargo's
/// `GetDiffPathsForCommitID` (`git show --name-status --no-renames --first-parent`,
/// `pkg/controller/git/work_tree.go`, Kargo v1.11.2) lists both sides of a move.
pub fn newest_commit_changing(
    repo: &Repository,
    head: Oid,
    select: &dyn Fn(&[String]) -> Result<bool, String>,
) -> Result<Option<Oid>, String> {
    let mut walk = repo.revwalk().map_err(lg("walking the history"))?;
    walk.set_sorting(git2::Sort::TIME)
        .map_err(lg("walking the history"))?;
    walk.push(head).map_err(lg("walking the history"))?;
    for id in walk {
        let id = id.map_err(lg("walking the history"))?;
        let commit = repo.find_commit(id).map_err(lg("reading a commit"))?;
        let tree = commit.tree().map_err(lg("reading a tree"))?;
        let parent = match commit.parent(0) {
            Ok(p) => Some(p.tree().map_err(lg("reading a tree"))?),
            Err(_) => None,
        };
        let diff = repo
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), None)
            .map_err(lg("comparing trees"))?;
        let mut changed = Vec::new();
        for d in diff.deltas() {
            for f in [d.old_file(), d.new_file()] {
                if let Some(p) = f.path().and_then(|p| p.to_str())
                    && !changed.iter().any(|c: &String| c == p)
                {
                    changed.push(p.to_string());
                }
            }
        }
        if select(&changed)? {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Whether a commit reachable from `head` has a message `accept` accepts (`git log
/// --format=%B`, newest first).
pub fn any_commit_message(
    repo: &Repository,
    head: Oid,
    accept: &dyn Fn(&str) -> bool,
) -> Result<bool, String> {
    let mut walk = repo.revwalk().map_err(lg("walking the history"))?;
    walk.push(head).map_err(lg("walking the history"))?;
    for id in walk {
        let id = id.map_err(lg("walking the history"))?;
        let commit = repo.find_commit(id).map_err(lg("reading a commit"))?;
        if accept(&String::from_utf8_lossy(commit.message_bytes())) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// What Argo CD would check out for `targetRevision`: `HEAD`/empty is the default branch, a
/// full commit id that commit, else a branch, else a tag.
pub fn resolve_revision(repo: &Repository, revision: &str) -> Option<Oid> {
    if revision.is_empty() || revision == "HEAD" {
        return repo.head().ok()?.peel_to_commit().ok().map(|c| c.id());
    }
    if revision.len() == 40 && revision.chars().all(|c| c.is_ascii_hexdigit()) {
        let id = Oid::from_str(revision).ok()?;
        return repo.find_commit(id).ok().map(|c| c.id());
    }
    for refname in [
        format!("refs/heads/{revision}"),
        format!("refs/tags/{revision}"),
    ] {
        if let Ok(r) = repo.find_reference(&refname)
            && let Ok(c) = r.peel_to_commit()
        {
            return Some(c.id());
        }
    }
    None
}

/// Every file under `path` in `commit`, by path relative to the repository root.
pub fn tree_files(
    repo: &Repository,
    commit: Oid,
    path: &str,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(lg("reading the commit's tree"))?;
    let prefix = path.trim_matches('/');
    let start = if prefix.is_empty() || prefix == "." {
        tree
    } else {
        match tree.get_path(Path::new(prefix)) {
            Ok(e) if e.kind() == Some(git2::ObjectType::Tree) => {
                repo.find_tree(e.id()).map_err(lg("reading a tree"))?
            }
            _ => return Ok(out),
        }
    };
    let base = if prefix.is_empty() || prefix == "." {
        String::new()
    } else {
        format!("{prefix}/")
    };
    let mut err = None;
    start
        .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                match repo.find_blob(entry.id()) {
                    Ok(b) => {
                        out.insert(
                            format!("{base}{dir}{}", entry.name().unwrap_or("")),
                            b.content().to_vec(),
                        );
                    }
                    Err(e) => {
                        err = Some(e.message().to_string());
                        return git2::TreeWalkResult::Abort;
                    }
                }
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(lg("walking the tree"))?;
    match err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The promotion's work directory: every step path is resolved inside it.
pub struct WorkDir {
    pub root: PathBuf,
}

impl WorkDir {
    /// `root` must exist; it is canonicalized so symlink checks compare like with like.
    pub fn new(root: &Path) -> Result<Self, String> {
        Ok(WorkDir {
            root: absolute(root)?,
        })
    }

    /// A fresh temporary work directory, removed when the returned guard drops (`kiln
    /// status` rebuilding a promotion).
    pub fn temporary() -> Result<(tempfile::TempDir, Self), String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
        let work = WorkDir::new(dir.path())?;
        Ok((dir, work))
    }

    /// The absolute path of a step path (already checked by `steps::work_path`).
    pub fn join(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// `fileDeleter.secureResolve` + `removePath`: deletes a file, directory or symlink (as a
    /// link); `Ok(false)` when nothing is there. A parent that resolves outside the work
    /// directory is refused.
    pub fn remove(&self, rel: &str) -> Result<bool, String> {
        let abs = self.join(rel);
        let Some(parent) = abs.parent() else {
            return Err("refusing to delete the work directory".into());
        };
        let resolved = match std::fs::canonicalize(parent) {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e.to_string()),
        };
        if !resolved.starts_with(&self.root) {
            return Err(format!(
                "path {rel:?} attempts to traverse outside the working directory"
            ));
        }
        let target = resolved.join(abs.file_name().unwrap_or_default());
        let meta = match std::fs::symlink_metadata(&target) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e.to_string()),
        };
        if meta.is_dir() {
            std::fs::remove_dir_all(&target)
        } else {
            std::fs::remove_file(&target)
        }
        .map_err(|e| format!("failed to delete {rel}: {e}"))?;
        Ok(true)
    }

    /// `findKustomization`: exactly one of the recognized file names, a regular file.
    pub fn find_kustomization(&self, rel: &str) -> Result<PathBuf, String> {
        let dir = self.join(rel);
        let mut found = Vec::new();
        for name in ["kustomization.yaml", "kustomization.yml", "Kustomization"] {
            let p = dir.join(name);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_file()) {
                found.push(p);
            }
        }
        match found.len() {
            0 => Err(format!("could not find any Kustomization files in {rel:?}")),
            1 => Ok(found.remove(0)),
            _ => Err(format!(
                "ambiguous result: found multiple Kustomization files in {rel:?}"
            )),
        }
    }

    /// Reads a file inside the work directory.
    pub fn read(&self, abs: &Path) -> Result<String, String> {
        self.check_inside(abs)?;
        std::fs::read_to_string(abs).map_err(|e| format!("could not read {}: {e}", self.shown(abs)))
    }

    /// Writes a file (creating its directories) inside the work directory.
    pub fn write(&self, abs: &Path, bytes: &[u8]) -> Result<(), String> {
        if let Some(dir) = abs.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("could not create {}: {e}", self.shown(dir)))?;
        }
        self.check_inside(abs)?;
        std::fs::write(abs, bytes).map_err(|e| format!("could not write {}: {e}", self.shown(abs)))
    }

    /// Creates a directory inside the work directory.
    pub fn create_dir(&self, abs: &Path) -> Result<(), String> {
        std::fs::create_dir_all(abs)
            .map_err(|e| format!("could not create {}: {e}", self.shown(abs)))?;
        self.check_inside(abs)
    }

    fn check_inside(&self, abs: &Path) -> Result<(), String> {
        let parent = abs.parent().unwrap_or(abs);
        match std::fs::canonicalize(parent) {
            Ok(p) if p.starts_with(&self.root) => Ok(()),
            Ok(_) => Err(format!(
                "{} resolves outside the working directory",
                self.shown(abs)
            )),
            Err(e) => Err(format!("{}: {e}", self.shown(abs))),
        }
    }

    fn shown(&self, abs: &Path) -> String {
        abs.strip_prefix(&self.root)
            .unwrap_or(abs)
            .display()
            .to_string()
    }

    /// The file system the kustomize engine builds from: the work directory, nothing outside
    /// it (Kargo's `MakeFsOnDiskSecureBuild`), so `LoadRestrictionsNone` is safe.
    pub fn rooted_fs(&self) -> crate::fs::RootedFs<'static> {
        crate::fs::RootedFs::new(&crate::fs::RealFs, self.root.clone())
    }
}
