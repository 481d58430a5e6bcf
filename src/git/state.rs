//! What a write branch holds now, for `kiln status`: the files of given folders at the branch
//! tip, and, per folder, the commits that changed it (newest first), found in one walk down
//! the first-parent chain.
//!
//! Sits beside `history`, reads Git only. Trees are read at the tip; history is walked only
//! for the per-folder past: each commit is compared with its first parent once (a tree diff,
//! which skips unchanged subtrees by id), its changed paths are attributed to the deepest
//! watched folder holding them, and the walk stops as soon as every folder has `past` writes
//! and its writer's newest write (or the root commit is reached). Publishes and Kargo's `git-push` (rebase, never a merge)
//! keep these branches linear, so the first-parent chain is the whole story.
//!
//! Invariant: output is ordered by folder path (a `BTreeMap`) and, per folder, newest first.

use super::history::Timestamp;
use super::trailers::git_order;
use super::{GitError, Identity, RemoteAuth, lg, open_for_reading, read_all_files};
use crate::artifact::ArtifactSet;
use std::collections::{BTreeMap, BTreeSet};

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
    /// The folder's tree id at this commit (`None`: no folder there).
    pub tree: Option<String>,
    /// Whether the commit's `Kiln-Promote` stamp ([`crate::git::trailers::PROMOTE`]) is the
    /// digest of its change to this folder: `kiln promote`'s runner made it, and it changed
    /// nothing else. A hand commit that copies the message or amends kiln's commit changes
    /// other bytes, so its stamp does not match; Kargo's commits carry none.
    pub stamped: bool,
}

/// A watched folder at the branch tip.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FolderState {
    /// Its files at the tip, relative to the folder (empty when it does not exist there).
    pub files: ArtifactSet,
    /// Its tree id at the tip (`None` when it does not exist there): equal to a write's
    /// [`WriteCommit::tree`] when no commit changed it since.
    pub tree: Option<String>,
    /// The commits that changed it, newest first, at most `past` of them.
    pub writes: Vec<WriteCommit>,
    /// The newest commit that changed it and that its writer made (the caller's `is_writers`),
    /// found however far back it lies: it may be one of `writes` or older than all of them.
    /// `None` when no commit of the first-parent chain is its writer's.
    pub by_writer: Option<WriteCommit>,
}

/// A branch of one repository, as [`read_branch`] found it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchState {
    /// The tip commit; `None` when the branch does not exist (nothing written yet).
    pub tip: Option<String>,
    /// Every watched folder (`""` is the branch root), by path.
    pub folders: BTreeMap<String, FolderState>,
    /// The (Stage, Freight) pairs promoted by the commits the walk read
    /// (`crate::git::history::promotions_in`); every promotion of the branch, as
    /// [`crate::git::promotions_on`] finds them, when `promotions_complete`.
    pub promotions: BTreeSet<(String, String)>,
    /// Whether the walk read the whole branch (it reached the root commit and met no merge),
    /// so that `promotions` needs no walk of its own.
    pub promotions_complete: bool,
}

/// Turns off libgit2's check that each object read hashes to its id, for the rest of the
/// process (a libgit2-global setting): only `kiln status` and `kiln history` call it, before
/// their read-only walks, which read every tree and commit of a branch once and spent 40 % of
/// their time hashing them (docs/BENCHMARKS.md). The objects were checked when they were
/// fetched or cloned (indexing a pack computes every id), nothing is written from what these
/// walks read, and Git itself does not hash objects on read; ADR 0034.
pub fn read_only_walks() {
    git2::opts::strict_hash_verification(false);
}

/// A file of a commit's tree: its bytes, or the target of a symbolic link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeFile {
    File(Vec<u8>),
    Link(String),
}

/// The files under the directory `root` (inside a Git work tree) as commit `commit` of that
/// repository holds them, by path relative to `root`; submodules skipped. For rendering a
/// publish's recorded source commit again (`kiln status`).
///
/// Errors: [`GitError::RepositoryNotFound`] when `root` is in no repository,
/// [`GitError::RefNotFound`] when the commit is not in it (a shallow clone).
pub fn files_at_commit(
    root: &std::path::Path,
    commit: &str,
) -> Result<BTreeMap<String, TreeFile>, GitError> {
    let not_found = || GitError::RepositoryNotFound {
        repo: root.display().to_string(),
    };
    let repo = git2::Repository::discover(root).map_err(|_| not_found())?;
    let display = repo.path().display().to_string();
    let workdir = repo
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .ok_or_else(not_found)?;
    let base = root
        .canonicalize()
        .ok()
        .and_then(|r| {
            r.strip_prefix(&workdir)
                .ok()
                .map(std::path::Path::to_path_buf)
        })
        .ok_or_else(not_found)?;
    let found = git2::Oid::from_str(commit)
        .and_then(|oid| repo.find_commit(oid))
        .map_err(|_| GitError::RefNotFound {
            repo: display,
            reference: commit.to_string(),
        })?;
    let mut tree = found.tree().map_err(lg("reading a commit's tree"))?;
    if !base.as_os_str().is_empty() {
        let Ok(entry) = tree.get_path(&base) else {
            return Ok(BTreeMap::new());
        };
        tree = repo.find_tree(entry.id()).map_err(lg("reading a tree"))?;
    }
    let mut files = BTreeMap::new();
    let mut failure = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return git2::TreeWalkResult::Ok;
        }
        let path = format!("{dir}{}", String::from_utf8_lossy(entry.name_bytes()));
        match repo.find_blob(entry.id()) {
            Ok(blob) if entry.filemode() == 0o120000 => {
                let target = String::from_utf8_lossy(blob.content()).into_owned();
                files.insert(path, TreeFile::Link(target));
            }
            Ok(blob) => {
                files.insert(path, TreeFile::File(blob.content().to_vec()));
            }
            Err(e) => {
                failure = Some(e);
                return git2::TreeWalkResult::Abort;
            }
        }
        git2::TreeWalkResult::Ok
    })
    .ok();
    match failure {
        Some(e) => Err(lg("reading a file")(e)),
        None => Ok(files),
    }
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

/// The message of `commit` in the repository `repo` (a path, or a URL: fetched); `None`
/// when it cannot be read (a squashed or unknown commit: the caller then says nothing).
pub fn commit_message(repo: &str, commit: &str, auth: &RemoteAuth) -> Option<String> {
    let opened = open_for_reading(repo, auth).ok()?;
    let oid = git2::Oid::from_str(commit.trim_end_matches("-dirty")).ok()?;
    let found = opened.repo.find_commit(oid).ok()?;
    found.message().map(str::to_string).ok()
}

/// Reads `folders` of `branch` in `repo` (a local path or URL): their files at the tip and
/// their last `past` writes (`past` ≥ 1),
/// and the newest write `is_writers(folder, message)` accepts ([`FolderState::by_writer`]):
/// the walk goes past `past` writes only for folders whose writer's write is not found yet,
/// so a hand edit on top of a promotion still names the promotion's Freight and commit.
///
/// Errors: [`GitError::RepositoryNotFound`], [`GitError::RemoteUnreachable`]; a missing
/// branch is an empty state, not an error (a Stage that never promoted has no branch yet).
pub fn read_branch(
    repo: &str,
    branch: &str,
    folders: &BTreeSet<String>,
    past: usize,
    is_writers: &dyn Fn(&str, &str) -> bool,
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
        state.promotions_complete = true;
        return Ok(state);
    };
    state.tip = Some(tip.id().to_string());
    let tip_tree = tip.tree().map_err(lg("reading a commit's tree"))?;
    // Trees over libgit2's cache limit (4 KiB) are read and hashed anew on each lookup: the
    // memo keeps the ones on the way to each folder, read once for all of them.
    let mut tip_memo = TreeMemo::default();
    for f in folders {
        let tree = tip_memo.folder(repo, &tip_tree, f)?;
        let files = tip_memo.files(repo, tree.as_ref())?;
        state.folders.insert(
            f.clone(),
            FolderState {
                files,
                tree: tree.map(|t| t.id().to_string()),
                ..FolderState::default()
            },
        );
    }
    let past = past.max(1);
    let mut open: BTreeSet<&String> = folders.iter().collect();
    let watch = Watch::new(folders);
    let mut commit = Some(tip);
    // The previous commit's parent tree is this commit's tree: carried over, with the
    // subtrees read below it, so each tree object is read from the object database once.
    let mut carried: Option<(git2::Tree<'_>, TreeMemo<'_>)> = Some((tip_tree, tip_memo));
    // Whether the walk reads the whole branch: no merge, and not stopped before the root.
    let mut whole = true;
    while let Some(c) = commit {
        if open.is_empty() {
            whole = false;
            break;
        }
        whole &= c.parent_count() <= 1;
        let message = String::from_utf8_lossy(c.message_bytes()).into_owned();
        state
            .promotions
            .extend(super::history::promotions_in(&message));
        let parent = c.parent(0).ok();
        let (tree, mut memo) = match carried.take() {
            Some(t) => t,
            None => (
                c.tree().map_err(lg("reading a commit's tree"))?,
                TreeMemo::default(),
            ),
        };
        let parent_tree = match &parent {
            Some(p) => Some(p.tree().map_err(lg("reading a commit's tree"))?),
            None => None,
        };
        let mut parent_memo = TreeMemo::default();
        let mut touched: BTreeSet<&String> = BTreeSet::new();
        diff_watched(
            repo,
            parent_tree.as_ref().map(|t| (t.id(), &mut parent_memo)),
            Some((tree.id(), &mut memo)),
            "",
            &watch,
            &mut touched,
        )?;
        for folder in touched {
            if !open.contains(folder) {
                continue;
            }
            let by_writer = is_writers(folder, &message);
            let state_of = state.folders.entry(folder.clone()).or_default();
            let in_window = state_of.writes.len() < past;
            if in_window || (by_writer && state_of.by_writer.is_none()) {
                let (time, author) = when_and_who(&c);
                let folder_tree = memo.folder(repo, &tree, folder)?;
                let stamped = match crate::git::trailers::promote_stamp(&message) {
                    Some(stamp) => {
                        let before = match &parent_tree {
                            Some(pt) => parent_memo.folder(repo, pt, folder)?,
                            None => None,
                        };
                        crate::git::trailers::folder_change_digest(
                            repo,
                            folder,
                            before.as_ref(),
                            folder_tree.as_ref(),
                        )
                        .map_err(lg("comparing a commit with its parent"))?
                            == stamp
                    }
                    None => false,
                };
                let tree_id = folder_tree.as_ref().map(|t| t.id().to_string());
                // Unchanged since: the tip's files, read already (most folders' last write).
                let files = match tree_id.is_some() && tree_id == state_of.tree {
                    true => state_of.files.clone(),
                    false => memo.files(repo, folder_tree.as_ref())?,
                };
                let write = WriteCommit {
                    id: c.id().to_string(),
                    time,
                    author,
                    message: message.clone(),
                    files,
                    tree: tree_id,
                    stamped,
                };
                if by_writer && state_of.by_writer.is_none() {
                    state_of.by_writer = Some(write.clone());
                }
                if in_window {
                    state_of.writes.push(write);
                }
            }
            if state_of.writes.len() >= past && state_of.by_writer.is_some() {
                open.remove(folder);
            }
        }
        if let Some(pt) = parent_tree {
            parent_memo.trees.insert(pt.id(), pt.clone());
            carried = Some((pt, parent_memo));
        }
        commit = parent;
    }
    // `promotions_on` resolves the branch its own way (a tag of the same name first): only
    // for the same tip are the walks the same.
    let same_tip = super::resolve_commit(repo, &opened.display, branch)
        .is_ok_and(|c| Some(c.id().to_string()) == state.tip);
    state.promotions_complete = whole && same_tip;
    Ok(state)
}

/// When a commit was made and by whom (its author).
pub(crate) fn when_and_who(c: &git2::Commit<'_>) -> (Timestamp, Identity) {
    let author = c.author();
    (
        Timestamp {
            seconds: c.time().seconds(),
            offset_minutes: c.time().offset_minutes(),
        },
        Identity {
            name: String::from_utf8_lossy(author.name_bytes()).into_owned(),
            email: String::from_utf8_lossy(author.email_bytes()).into_owned(),
        },
    )
}

/// The watched folders, and every directory on the way to one.
struct Watch<'f> {
    folders: &'f BTreeSet<String>,
    /// Directories strictly above some watched folder (`""` when any folder is watched).
    above: BTreeSet<String>,
}

impl<'f> Watch<'f> {
    fn new(folders: &'f BTreeSet<String>) -> Self {
        let mut above = BTreeSet::new();
        for f in folders.iter().filter(|f| !f.is_empty()) {
            above.insert(String::new());
            let mut dir = f.as_str();
            while let Some((parent, _)) = dir.rsplit_once('/') {
                above.insert(parent.to_string());
                dir = parent;
            }
        }
        Watch { folders, above }
    }
}

/// The trees read while comparing one commit with its parent, by id: each is needed again
/// when that parent is compared with its own parent.
#[derive(Default)]
struct TreeMemo<'r> {
    trees: std::collections::HashMap<git2::Oid, git2::Tree<'r>>,
}

impl<'r> TreeMemo<'r> {
    fn get(
        &mut self,
        repo: &'r git2::Repository,
        id: git2::Oid,
    ) -> Result<git2::Tree<'r>, GitError> {
        if let Some(t) = self.trees.get(&id) {
            return Ok(t.clone());
        }
        let t = repo.find_tree(id).map_err(lg("reading a tree"))?;
        self.trees.insert(id, t.clone());
        Ok(t)
    }

    /// The tree of `folder` of `root` (`None` when it is no directory there).
    fn folder(
        &mut self,
        repo: &'r git2::Repository,
        root: &git2::Tree<'r>,
        folder: &str,
    ) -> Result<Option<git2::Tree<'r>>, GitError> {
        let mut tree = root.clone();
        for part in folder.split('/').filter(|p| !p.is_empty()) {
            let id = match tree.get_name(part) {
                Some(e) if e.kind() == Some(git2::ObjectType::Tree) => e.id(),
                _ => return Ok(None),
            };
            tree = self.get(repo, id)?;
        }
        Ok(Some(tree))
    }

    /// The files of a folder's tree (empty for none).
    fn files(
        &mut self,
        repo: &'r git2::Repository,
        tree: Option<&git2::Tree<'r>>,
    ) -> Result<ArtifactSet, GitError> {
        match tree {
            Some(t) => read_all_files(repo, t, ""),
            None => Ok(ArtifactSet::new()),
        }
    }
}

/// One side of a comparison: a tree's id and the memo it is read through.
type Side<'a, 'r> = Option<(git2::Oid, &'a mut TreeMemo<'r>)>;

/// Adds to `touched` the deepest watched folder holding each path that differs between the
/// trees `old` and `new` at `dir`. Unlike a full tree diff (libgit2's iterates every entry
/// of every differing tree and reads each subtree), this descends only into directories
/// that lead to or lie in a watched folder, and stops at the first difference once nothing
/// deeper is watched: the walk reads one path of trees per commit, not the whole branch.
fn diff_watched<'f, 'r>(
    repo: &'r git2::Repository,
    old: Side<'_, 'r>,
    new: Side<'_, 'r>,
    dir: &str,
    watch: &Watch<'f>,
    touched: &mut BTreeSet<&'f String>,
) -> Result<(), GitError> {
    if old.as_ref().map(|o| o.0) == new.as_ref().map(|n| n.0) {
        return Ok(());
    }
    let owner = owning_dir(watch.folders, dir);
    if !watch.above.contains(dir) {
        // Nothing deeper is watched: any difference here belongs to `owner`.
        if let Some(f) = owner {
            touched.insert(f);
        }
        return Ok(());
    }
    let (old_tree, old_memo) = match old {
        Some((id, memo)) => (Some(memo.get(repo, id)?), Some(memo)),
        None => (None, None),
    };
    let (new_tree, new_memo) = match new {
        Some((id, memo)) => (Some(memo.get(repo, id)?), Some(memo)),
        None => (None, None),
    };
    // Both trees are sorted in Git's order; walk them side by side.
    // Each differing name: its entry on either side, as (id, is a tree).
    type Entry = Option<(git2::Oid, bool)>;
    let mut changed: Vec<(String, Entry, Entry)> = Vec::new();
    let len = |t: &Option<git2::Tree<'r>>| t.as_ref().map_or(0, git2::Tree::len);
    fn entry<'t>(t: &'t Option<git2::Tree<'_>>, i: usize) -> Option<(git2::TreeEntry<'t>, bool)> {
        let e = t.as_ref()?.get(i)?;
        let is_tree = e.kind() == Some(git2::ObjectType::Tree);
        Some((e, is_tree))
    }
    let name = |e: &git2::TreeEntry<'_>| String::from_utf8_lossy(e.name_bytes()).into_owned();
    // Both trees are sorted in Git's order; walk them side by side, without copying names.
    let (mut i, mut j) = (0, 0);
    while i < len(&old_tree) || j < len(&new_tree) {
        let (x, y) = (entry(&old_tree, i), entry(&new_tree, j));
        let order = match (&x, &y) {
            (Some(x), Some(y)) => git_order(x.0.name_bytes(), x.1, y.0.name_bytes(), y.1),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match (order, x, y) {
            (std::cmp::Ordering::Equal, Some((x, xt)), Some((y, yt))) => {
                if x.id() != y.id() {
                    changed.push((name(&x), Some((x.id(), xt)), Some((y.id(), yt))));
                }
                i += 1;
                j += 1;
            }
            (std::cmp::Ordering::Less, Some((x, xt)), _) => {
                changed.push((name(&x), Some((x.id(), xt)), None));
                i += 1;
            }
            (_, _, Some((y, yt))) => {
                changed.push((name(&y), None, Some((y.id(), yt))));
                j += 1;
            }
            // An entry that cannot be read: step past it on both sides.
            _ => {
                i += 1;
                j += 1;
            }
        }
    }
    let (mut old_memo, mut new_memo) = (old_memo, new_memo);
    let tree_of = |e: Entry| e.filter(|e| e.1).map(|e| e.0);
    for (entry, old_entry, new_entry) in changed {
        let path = match dir {
            "" => entry,
            _ => format!("{dir}/{entry}"),
        };
        let is_file = |e: Entry| e.is_some_and(|e| !e.1);
        if is_file(old_entry) || is_file(new_entry) {
            // A file of this directory changed (or replaced a directory, or was replaced).
            if let Some(f) = owner {
                touched.insert(f);
            }
        }
        let (old_sub, new_sub) = (tree_of(old_entry), tree_of(new_entry));
        if old_sub.is_none() && new_sub.is_none() {
            continue;
        }
        if watch.above.contains(&path) || watch.folders.contains(&path) {
            let o = old_sub.and_then(|id| old_memo.as_deref_mut().map(|m| (id, m)));
            let n = new_sub.and_then(|id| new_memo.as_deref_mut().map(|m| (id, m)));
            diff_watched(repo, o, n, &path, watch, touched)?;
        } else if let Some(f) = owner {
            // Nothing at or below `path` is watched: its change is its owner's.
            touched.insert(f);
        }
    }
    Ok(())
}

/// The deepest watched folder holding the directory `dir` (itself included).
fn owning_dir<'f>(folders: &'f BTreeSet<String>, dir: &str) -> Option<&'f String> {
    if let Some(f) = folders.get(dir) {
        return Some(f);
    }
    owning_folder(folders, dir)
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

    /// Commits `files` (path → content; `None` removes) on top of HEAD of `repo`.
    fn commit(repo: &git2::Repository, message: &str, files: &[(&str, Option<&str>)]) {
        commit_with(repo, &|_, _| message.to_string(), files);
    }

    /// [`commit`] stamped as `kiln promote` stamps its commits.
    fn commit_stamped(repo: &git2::Repository, message: &str, files: &[(&str, Option<&str>)]) {
        let stamp = |parent: Option<&git2::Tree<'_>>, tree: &git2::Tree<'_>| {
            let digest = crate::git::trailers::change_digest(repo, parent, tree).unwrap();
            crate::git::trailers::stamp_promote(message, &digest)
        };
        commit_with(repo, &stamp, files);
    }

    /// [`commit`] with the message made from the parent's tree and the new one.
    fn commit_with(
        repo: &git2::Repository,
        message: &dyn Fn(Option<&git2::Tree<'_>>, &git2::Tree<'_>) -> String,
        files: &[(&str, Option<&str>)],
    ) {
        let files: Vec<(&str, Option<&str>, u32)> =
            files.iter().map(|(p, c)| (*p, *c, 0o100644)).collect();
        commit_modes(repo, message, &files);
    }

    /// [`commit_with`], each file with its mode.
    fn commit_modes(
        repo: &git2::Repository,
        message: &dyn Fn(Option<&git2::Tree<'_>>, &git2::Tree<'_>) -> String,
        files: &[(&str, Option<&str>, u32)],
    ) {
        let mut index = repo.index().unwrap();
        for (path, content, mode) in files {
            match content {
                Some(c) => {
                    let id = repo.blob(c.as_bytes()).unwrap();
                    let mut entry = git2::IndexEntry {
                        ctime: git2::IndexTime::new(0, 0),
                        mtime: git2::IndexTime::new(0, 0),
                        dev: 0,
                        ino: 0,
                        mode: *mode,
                        uid: 0,
                        gid: 0,
                        file_size: 0,
                        id,
                        flags: 0,
                        flags_extended: 0,
                        path: path.as_bytes().to_vec(),
                    };
                    entry.flags = (path.len() as u16) & 0xfff;
                    index.add(&entry).unwrap();
                }
                None => index.remove_path(std::path::Path::new(path)).unwrap(),
            }
        }
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let who = git2::Signature::new("t", "t@example.com", &git2::Time::new(1, 0)).unwrap();
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parent_tree = parent.as_ref().map(|p| p.tree().unwrap());
        let message = message(parent_tree.as_ref(), &tree);
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        repo.commit(Some("HEAD"), &who, &who, &message, &tree, &parents)
            .unwrap();
    }

    /// [`read_branch`] of HEAD in the repository at `dir`, one write per folder, promotions
    /// (`kiln: promote …`) as every folder's writer.
    fn read_promotions(dir: &std::path::Path, folders: &[&str]) -> BranchState {
        let folders: BTreeSet<String> = folders.iter().map(|s| s.to_string()).collect();
        let promotion = |_: &str, message: &str| message.starts_with("kiln: promote");
        let path = dir.display().to_string();
        read_branch(
            &path,
            "HEAD",
            &folders,
            1,
            &promotion,
            &RemoteAuth::default(),
        )
        .unwrap()
    }

    /// A folder is stamped by a write only when the commit's `Kiln-Promote` digest is its
    /// change to that folder alone: a stamped commit that also changed another folder, or a
    /// stamp copied onto other bytes, is not; and the tip's tree is the write's tree until
    /// another commit changes the folder.
    #[test]
    fn a_write_is_stamped_only_when_its_stamp_is_its_change_to_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        commit_stamped(&repo, "kiln: promote a", &[("a/x.yaml", Some("1"))]);
        commit_stamped(
            &repo,
            "kiln: promote b and c",
            &[("b/x.yaml", Some("1")), ("c/x.yaml", Some("1"))],
        );
        // d's stamped promotion, then a hand commit that copies its message and stamp.
        commit_stamped(&repo, "kiln: promote d", &[("d/x.yaml", Some("1"))]);
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        let copied = head.message().unwrap().to_string();
        commit(&repo, &copied, &[("d/x.yaml", Some("by hand"))]);
        commit(&repo, "beside", &[("e/x.yaml", Some("1"))]);
        let state = read_promotions(dir.path(), &["a", "b", "c", "d"]);
        let a = &state.folders["a"];
        let w = a.by_writer.as_ref().unwrap();
        assert!(w.stamped);
        assert!(w.tree.is_some());
        assert_eq!(a.tree, w.tree, "nothing changed a since");
        for f in ["b", "c", "d"] {
            let w = state.folders[f].by_writer.as_ref().unwrap();
            assert!(!w.stamped, "{f}");
        }
    }

    /// The folder's stamp check is `kiln promote`'s own digest ([`trailers::change_digest`]),
    /// not a copy of it: a promotion whose change includes a file made executable (a mode
    /// change, same bytes) is stamped, and one amended by hand with such a change is not.
    #[test]
    fn a_write_changing_a_files_mode_is_stamped_as_kiln_promote_stamps_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        commit(
            &repo,
            "init",
            &[("a/run.sh", Some("echo")), ("b/run.sh", Some("echo"))],
        );
        let stamp = |parent: Option<&git2::Tree<'_>>, tree: &git2::Tree<'_>| {
            let digest = crate::git::trailers::change_digest(&repo, parent, tree).unwrap();
            crate::git::trailers::stamp_promote("kiln: promote a", &digest)
        };
        commit_modes(
            &repo,
            &stamp,
            &[
                ("a/x.yaml", Some("1"), 0o100644),
                ("a/run.sh", Some("echo"), 0o100755),
            ],
        );
        // b: kiln's change (x.yaml), amended by hand to make run.sh executable too.
        let kilns = |_: Option<&git2::Tree<'_>>, _: &git2::Tree<'_>| {
            let id = repo.blob(b"1").unwrap();
            let digest = crate::git::trailers::digest_of_lines(vec![format!("{id} b/x.yaml\n")]);
            crate::git::trailers::stamp_promote("kiln: promote b", &digest)
        };
        commit_modes(
            &repo,
            &kilns,
            &[
                ("b/x.yaml", Some("1"), 0o100644),
                ("b/run.sh", Some("echo"), 0o100755),
            ],
        );
        let state = read_promotions(dir.path(), &["a", "b"]);
        assert!(state.folders["a"].by_writer.as_ref().unwrap().stamped);
        assert!(!state.folders["b"].by_writer.as_ref().unwrap().stamped);
    }

    #[test]
    fn the_walk_goes_past_the_window_only_for_folders_without_their_writers_write() {
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        commit(&repo, "kiln: promote a", &[("a/x.yaml", Some("1"))]);
        commit(&repo, "kiln: promote b", &[("b/x.yaml", Some("1"))]);
        commit(&repo, "by hand", &[("a/x.yaml", Some("2"))]);
        commit(&repo, "by hand again", &[("a/x.yaml", Some("3"))]);
        commit(&repo, "only by hand", &[("c/x.yaml", Some("1"))]);
        let state = read_promotions(dir.path(), &["a", "b", "c"]);
        let a = &state.folders["a"];
        // The window holds the newest write only; the promotion two writes back is found.
        assert_eq!(a.writes.len(), 1);
        assert_eq!(a.writes[0].message, "by hand again");
        assert_eq!(a.files.files["x.yaml"], b"3");
        let by = a.by_writer.as_ref().unwrap();
        assert_eq!(by.message, "kiln: promote a");
        assert_eq!(by.files.files["x.yaml"], b"1");
        // b's newest write is its promotion: it is both.
        let b = &state.folders["b"];
        assert_eq!(b.writes, b.by_writer.iter().cloned().collect::<Vec<_>>());
        // c's writer never wrote it.
        let c = &state.folders["c"];
        assert_eq!(c.writes.len(), 1);
        assert!(c.by_writer.is_none());
    }

    #[test]
    fn tree_entries_compare_in_gits_order() {
        use std::cmp::Ordering::*;
        // A tree sorts as if its name ended in `/`: `a.b` < `a/` but `a` (a file) < `a.b`.
        assert_eq!(git_order(b"a", true, b"a.b", false), Greater);
        assert_eq!(git_order(b"a", false, b"a.b", false), Less);
        assert_eq!(git_order(b"a", true, b"a0", true), Less);
        assert_eq!(git_order(b"c10", true, b"c9", true), Less);
        assert_eq!(git_order(b"x", true, b"x", true), Equal);
    }
}
