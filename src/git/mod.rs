//! Git: the `write` stage's second target and kiln's audit trail. `publish` commits an
//! [`ArtifactSet`] into a branch (and optional sub-path) of a service or cluster repository;
//! `diff` and `verify` compare an artifact set with a directory or a committed tree; `history`
//! reads kiln's commits back (components, environments, image tags, provenance).
//!
//! Everything goes through libgit2 (`git2`); kiln never runs a `git` binary. Submodules:
//! `publish` (the commit and the push), `trailers` (what a commit message says and how it is
//! read back), `diff` (artifact set against a directory or tree, per resource), `verify`
//! (drift of a committed tree) and `history` (the audit trail, `--at`). The outside world is
//! touched only by the repository openers and remote callbacks here, `publish`'s ref update and
//! checked-out working tree, and `diff::load_dir`; clock and environment only by the helpers
//! meant for the CLI ([`CommitTime::now`], [`Identity::from_env_or_git_config`],
//! [`RemoteAuth::from_env`], [`source_commit`]).
//!
//! Invariants:
//! - kiln only ever writes files it lists in its ownership marker ([`MARKER_FILE`]) inside the
//!   managed path; everything else in the branch is left byte-for-byte as it was.
//! - A branch is only moved forward, with a compare-and-swap on its old value (never a force
//!   push), and only after every check passed, so a failed publish leaves the repository's refs,
//!   index and working tree unchanged.
//! - Identical input produces an identical tree and therefore no commit.
#![allow(clippy::disallowed_methods)] // the git stage touches repositories, the clock and the identity

pub mod diff;
pub mod history;
pub mod publish;
pub mod state;
pub mod trailers;
pub mod verify;

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use git2::{Cred, CredentialType, Oid, RemoteCallbacks, Repository};
use miette::Diagnostic;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::artifact::ArtifactSet;

pub use diff::{
    Against, DiffReport, FileDiff, ResourceDiff, ResourceKey, Status, diff_sets, load_dir,
    load_tree,
};
pub use history::{
    ComponentImages, DeployedState, History, HistoryEntry, HistoryFilter, StateSource, Timestamp,
    branch_names, deployed_at, folder_images, history, parse_date, parse_when, printable,
    promotions_on,
};
pub use publish::{
    EnvironmentSplit, FileCounts, PublishOptions, PublishOutcome, SplitMode, is_valid_branch_name,
    publish, publish_per_environment, split_by_environment,
};
pub use state::{
    BranchState, FolderState, TreeFile, WriteCommit, commit_message, files_at_commit,
    normalize_folder, read_branch, read_only_walks,
};
pub use trailers::{ChangeAction, Unit, UnitChange, WriteLayout};
pub use verify::{VerifyReport, verify, verify_scoped};

/// The ownership marker and its path rule live in the leaf module [`crate::marker`], shared
/// with the directory writer.
pub use crate::marker::{MARKER_FILE, OwnedMarker};
/// The one redaction rule, in `kiln_base::url` (validate, kargo and promote need it too).
pub use kiln_base::url::{has_credentials, redact};

/// Default number of attempts when the branch moves under a publisher (non-fast-forward).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// Errors of the Git stage. Codes are `kiln::git::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum GitError {
    #[error("repository `{repo}` does not exist or is not a Git repository")]
    #[diagnostic(
        code(kiln::git::repository_not_found),
        help("create it first (`git init --bare {repo}`), or pass the URL of an existing remote")
    )]
    RepositoryNotFound { repo: String },

    #[error("branch `{branch}` path `{path}` is not managed by kiln (no `{marker}` there)")]
    #[diagnostic(
        code(kiln::git::unmanaged_path),
        help(
            "kiln only writes where it left its ownership marker; pass --adopt to take over this path (existing files are kept, generated files overwrite same-named ones), or publish into an empty path"
        )
    )]
    UnmanagedPath {
        branch: String,
        path: String,
        marker: &'static str,
    },

    #[error("nothing to verify: `{reference}` holds no kiln marker at `{path}`")]
    #[diagnostic(
        code(kiln::git::not_published),
        help(
            "kiln verifies only what it published; pass the --path and --ref kiln publish writes to"
        )
    )]
    NotPublished { reference: String, path: String },

    #[error(
        "`{path}` in branch `{branch}` was not written by kiln, and the render wants to write it"
    )]
    #[diagnostic(
        code(kiln::git::unowned_file_in_the_way),
        help(
            "kiln never overwrites files it did not generate; remove or rename the file, or pass --adopt to let kiln own it"
        )
    )]
    UnownedFileInTheWay { branch: String, path: String },

    #[error("ownership marker `{path}` is not valid: {message}")]
    #[diagnostic(
        code(kiln::git::invalid_marker),
        help(
            "the marker is written by kiln; restore it from history (`git log -- {path}`), or remove it and publish with --adopt"
        )
    )]
    InvalidMarker { path: String, message: String },

    #[error("invalid path `{path}`: {reason}")]
    #[diagnostic(
        code(kiln::git::invalid_path),
        help("paths must be relative, `/`-separated, without `.`/`..` segments or empty parts")
    )]
    InvalidPath { path: String, reason: &'static str },

    #[error("invalid branch name `{branch}`")]
    #[diagnostic(
        code(kiln::git::invalid_branch),
        help("use a plain branch name such as `main` or `stage/prod` (see git-check-ref-format)")
    )]
    InvalidBranch { branch: String },

    #[error("`--per-environment` cannot be combined with Kargo (spec.kargo.enabled: true)")]
    #[diagnostic(
        code(kiln::git::per_environment_with_kargo),
        help(
            "with Kargo, its promotions write the stage branches and the Applications track them; publish the tree without --per-environment (into spec.source.repoURL at spec.source.renderedPath)"
        )
    )]
    PerEnvironmentWithKargo,

    #[error("stale lock `{path}` ({age_seconds} s old) blocks branch `{branch}`")]
    #[diagnostic(
        code(kiln::git::stale_lock),
        help(
            "a git process or kiln publisher was killed while updating the branch; if none is running, delete the lock file and publish again"
        )
    )]
    StaleLock {
        path: PathBuf,
        branch: String,
        age_seconds: u64,
    },

    /// The index of a checked-out repository is locked by someone else (a running git, or
    /// one that was killed): kiln cannot stage its files, and changes nothing.
    #[error("the index is locked: `{path}` exists ({age_seconds} s old)")]
    #[diagnostic(
        code(kiln::git::index_locked),
        help(
            "another git process is using the repository, or one was killed; if none is running, delete the lock file and publish again (a lock a killed kiln publish left is removed by the next publish)"
        )
    )]
    IndexLocked { path: PathBuf, age_seconds: u64 },

    #[error("refusing to write through the symbolic link `{path}` in the checked-out working tree")]
    #[diagnostic(
        code(kiln::git::symlink_in_worktree),
        help(
            "kiln writes only real files inside the repository; replace the link with a real directory (or remove it), nothing was changed"
        )
    )]
    SymlinkInWorktree { path: String },

    #[error("`--against {against}`: {reason}")]
    #[diagnostic(
        code(kiln::git::invalid_against),
        help("pass an existing directory, or `REPO@REF` (a path inside the ref goes into --path)")
    )]
    InvalidAgainst { against: String, reason: String },

    #[error("remote `{url}` is unreachable: {message}")]
    #[diagnostic(
        code(kiln::git::remote_unreachable),
        help(
            "check the URL, the network, and that the repository exists (for ssh: that the host key is in ~/.ssh/known_hosts); nothing was changed"
        )
    )]
    RemoteUnreachable { url: String, message: String },

    #[error("authentication to `{url}` failed")]
    #[diagnostic(
        code(kiln::git::authentication_failed),
        help("{}", kiln_source::error::GIT_CREDENTIALS)
    )]
    AuthenticationFailed { url: String },

    #[error(
        "refusing to publish source commit {publishing} to `{branch}`: its tip {kiln_commit} was published from source commit {published}, which is not an ancestor of {publishing}{reason}"
    )]
    #[diagnostic(
        code(kiln::git::older_source),
        help(
            "publishing would put an older render over a newer one (a silent revert). Publish a commit that contains {published} (merge or rebase onto it); in CI, check out the source with its history (actions/checkout fetch-depth: 0) so kiln can tell"
        )
    )]
    OlderSource {
        branch: String,
        kiln_commit: String,
        published: String,
        publishing: String,
        /// Empty, or why the ancestry could not be told.
        reason: String,
    },

    #[error("branch `{branch}` of `{url}` kept moving: push rejected {attempts} times ({message})")]
    #[diagnostic(
        code(kiln::git::push_rejected),
        help(
            "another publisher is writing the same branch; retry later. kiln never force-pushes, so nothing was overwritten"
        )
    )]
    PushRejected {
        url: String,
        branch: String,
        attempts: u32,
        message: String,
    },

    #[error("reference `{reference}` not found in `{repo}`")]
    #[diagnostic(
        code(kiln::git::ref_not_found),
        help("pass a branch, tag or commit id that exists in the repository")
    )]
    RefNotFound { repo: String, reference: String },

    #[error("the working tree of `{repo}` has local changes to files kiln wants to write: {paths}")]
    #[diagnostic(
        code(kiln::git::working_tree_conflict),
        help(
            "branch `{branch}` is checked out there; commit, stash or discard those changes first, nothing was changed"
        )
    )]
    WorkingTreeConflict {
        repo: String,
        branch: String,
        paths: String,
    },

    #[error("invalid date `{input}`")]
    #[diagnostic(
        code(kiln::git::invalid_date),
        help(
            "use RFC 3339 (`2026-11-29T15:07:18Z`, `2026-11-29T16:07:18+01:00`) or `YYYY-MM-DD` (midnight UTC)"
        )
    )]
    InvalidDate { input: String },

    #[error("cannot {operation} `{path}`")]
    #[diagnostic(
        code(kiln::git::io),
        help("check that the path exists and that kiln may read and write it")
    )]
    Io {
        operation: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("git operation failed while {operation}: {message}")]
    #[diagnostic(
        code(kiln::git::libgit2),
        help("this is unexpected; if the repository is healthy (`git fsck`), please report it")
    )]
    Libgit2 {
        operation: &'static str,
        message: String,
    },
}

/// Maps a libgit2 error to [`GitError::Libgit2`], naming what kiln was doing.
/// Moves the branch `refname` to `commit` only if it still points at `expected`, or creates
/// it only if it does not exist (`expected` is `None`), checked under git's ref lock: the one
/// compare-and-swap of every push into a local repository (publish, promote). For a new
/// branch, `git_reference_create` without force checks for the ref before taking the lock
/// (libgit2 src/libgit2/refdb_fs.c `refdb_fs_backend__write`: `reference_path_available`,
/// then `loose_lock`), so two creators can both pass and the second overwrites the first; an
/// expected old value of zero is compared after the lock is taken (`cmp_old_ref`), and a
/// branch someone created meanwhile fails the call (`GIT_EMODIFIED`).
pub(crate) fn move_branch<'r>(
    repo: &'r Repository,
    refname: &str,
    commit: Oid,
    expected: Option<Oid>,
    log: &str,
) -> Result<git2::Reference<'r>, git2::Error> {
    repo.reference_matching(
        refname,
        commit,
        true,
        expected.unwrap_or(Oid::ZERO_SHA1),
        log,
    )
}

/// Pushes `refspec` to `remote` (never forced unless the refspec says `+`): `Ok(None)` when
/// the remote took it, `Ok(Some(status))` when the remote refused the update (a
/// non-fast-forward, a hook), `Err` when the push itself failed. The one push of publish and
/// promote; each decides what a refusal means for its retries.
pub(crate) fn push_ref(
    remote: &mut git2::Remote<'_>,
    auth: &RemoteAuth,
    refspec: &str,
) -> Result<Option<String>, git2::Error> {
    let rejected = std::cell::RefCell::new(None);
    let mut callbacks = remote_callbacks(auth);
    callbacks.push_update_reference(|_, status| {
        if let Some(s) = status {
            *rejected.borrow_mut() = Some(s.to_string());
        }
        Ok(())
    });
    let mut options = git2::PushOptions::new();
    options.remote_callbacks(callbacks);
    remote.push(&[refspec], Some(&mut options))?;
    drop(options);
    Ok(rejected.into_inner())
}

/// How one attempt to move a branch ended, for [`push_with_retry`].
pub(crate) enum Attempt<T> {
    /// Done: the branch moved, or there was nothing to move it for.
    Done(T),
    /// The branch moved under this writer (a refused non-fast-forward, a lost compare-and-swap),
    /// for the reason given: build again on its new tip, after a pause.
    Moved(String),
    /// Another writer holds the ref lock right now: try again shortly, without spending an
    /// attempt (the branch has not moved yet).
    Busy,
}

/// The one push-with-retry loop of publish (local and remote) and promote's `git-push`: runs
/// `attempt(n)`, n counting from 1, until it is done; a [`Attempt::Moved`] is tried again after
/// [`back_off`], up to `max_attempts` (at least 1) in all, then `kept_moving(attempts, last
/// reason)` is the error; a [`Attempt::Busy`] is tried again after 10 ms under the same
/// number. Each attempt decides for itself how many times it may be busy.
pub(crate) fn push_with_retry<T, E>(
    max_attempts: u32,
    mut attempt: impl FnMut(u32) -> Result<Attempt<T>, E>,
    kept_moving: impl FnOnce(u32, String) -> E,
) -> Result<T, E> {
    let attempts = max_attempts.max(1);
    let mut n = 1;
    loop {
        match attempt(n)? {
            Attempt::Done(done) => return Ok(done),
            Attempt::Busy => std::thread::sleep(std::time::Duration::from_millis(10)),
            Attempt::Moved(reason) if n >= attempts => return Err(kept_moving(attempts, reason)),
            Attempt::Moved(_) => {
                back_off(n);
                n += 1;
            }
        }
    }
}

/// Short pause between attempts, growing with the attempt number, so two writers racing for
/// one branch do not collide again in lockstep.
fn back_off(attempt: u32) {
    std::thread::sleep(std::time::Duration::from_millis(20 * u64::from(attempt)));
}

pub(crate) fn lg(operation: &'static str) -> impl FnOnce(git2::Error) -> GitError {
    move |e| GitError::Libgit2 {
        operation,
        message: e.message().to_string(),
    }
}

/// Who commits: name and e-mail of the author (also used as committer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

/// A commit time: seconds since the Unix epoch plus the author's UTC offset in minutes.
/// Passed in by the caller (the CLI uses "now"), so the engine never reads a clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitTime {
    pub seconds: i64,
    pub offset_minutes: i32,
}

impl Identity {
    /// The identity the CLI commits as: `KILN_GIT_AUTHOR_NAME`/`KILN_GIT_AUTHOR_EMAIL`, else
    /// git's `user.name`/`user.email` (global and system config), else `kiln <kiln@localhost>`.
    /// Reads the environment: for the CLI, not the engine.
    pub fn from_env_or_git_config() -> Self {
        let config = git2::Config::open_default().ok();
        let lookup = |env: &str, key: &str, fallback: &str| {
            std::env::var(env)
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| config.as_ref().and_then(|c| c.get_string(key).ok()))
                .unwrap_or_else(|| fallback.to_string())
        };
        Self {
            name: lookup("KILN_GIT_AUTHOR_NAME", "user.name", "kiln"),
            email: lookup("KILN_GIT_AUTHOR_EMAIL", "user.email", "kiln@localhost"),
        }
    }

    pub(crate) fn signature(&self, time: CommitTime) -> Result<git2::Signature<'static>, GitError> {
        git2::Signature::new(
            &self.name,
            &self.email,
            &git2::Time::new(time.seconds, time.offset_minutes),
        )
        .map_err(lg("building the commit signature"))
    }
}

impl CommitTime {
    /// The current time in UTC. Reads the clock: for the CLI, not the engine.
    pub fn now() -> Self {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Self {
            seconds,
            offset_minutes: 0,
        }
    }
}

/// The commit the platform directory is checked out at, for the `Kiln-Source-Commit` trailer:
/// `None` when it is not inside a Git repository (or HEAD is unborn), `<id>-dirty` (as
/// `git describe --dirty`) when files under the directory have uncommitted changes.
pub fn source_commit(platform_dir: &Path) -> Option<String> {
    source_commit_of(platform_dir, platform_dir, [])
}

/// [`source_commit`] for a render: dirty when any of `inputs` (paths relative to `root`, as
/// `crate::pipeline::Slice::inputs`) has uncommitted changes, not only files under the
/// platform directory: a component edited in the working tree changes what was rendered.
pub fn source_commit_of<'a>(
    platform_dir: &Path,
    root: &Path,
    inputs: impl IntoIterator<Item = &'a String>,
) -> Option<String> {
    let repo = Repository::discover(platform_dir).ok()?;
    let head = repo.head().ok()?.peel_to_commit().ok()?;
    let mut id = head.id().to_string();
    let dirty = (|| {
        let workdir = repo.workdir()?.canonicalize().ok()?;
        let root = root.canonicalize().ok()?;
        let base = root.strip_prefix(&workdir).ok()?.to_path_buf();
        let dir = platform_dir.canonicalize().ok()?;
        let mut options = git2::StatusOptions::new();
        options.include_untracked(true).recurse_untracked_dirs(true);
        if let Ok(rel) = dir.strip_prefix(&workdir)
            && !rel.as_os_str().is_empty()
        {
            options.pathspec(rel);
        }
        let under_platform = repo.statuses(Some(&mut options)).ok()?;
        if under_platform.iter().any(|s| !s.status().is_ignored()) {
            return Some(true);
        }
        // Submodules and plain gitlinks: a file inside one is the nested repository's, whose
        // own state decides (the parent's status of such a path says nothing).
        let links = gitlinks(&repo);
        let mut checked = BTreeSet::new();
        for input in inputs {
            let rel = base.join(input);
            if let Some((path, oid)) = links.iter().find(|(p, _)| rel.starts_with(p)) {
                if checked.insert(path.clone()) && nested_dirty(&workdir.join(path), *oid) {
                    return Some(true);
                }
                continue;
            }
            match repo.status_file(&rel) {
                Ok(status) if status.is_empty() || status.is_ignored() => {}
                Err(e) if e.code() == git2::ErrorCode::NotFound => {}
                _ => return Some(true),
            }
        }
        Some(false)
    })();
    if dirty == Some(true) {
        id.push_str("-dirty");
    }
    Some(id)
}

/// Every gitlink of `repo`'s index (a submodule, or a repository committed inside another
/// without one): its path and the commit it records.
fn gitlinks(repo: &Repository) -> Vec<(PathBuf, git2::Oid)> {
    let Ok(index) = repo.index() else {
        return Vec::new();
    };
    index
        .iter()
        .filter(|e| e.mode == 0o160000)
        .map(|e| {
            (
                PathBuf::from(String::from_utf8_lossy(&e.path).into_owned()),
                e.id,
            )
        })
        .collect()
}

/// Whether the repository checked out at `dir` differs from the commit its gitlink records:
/// another HEAD, or uncommitted changes (its own submodules' included). One that cannot be
/// opened is dirty (what was read cannot be named by a commit).
fn nested_dirty(dir: &Path, recorded: git2::Oid) -> bool {
    let Ok(nested) = Repository::open(dir) else {
        return true;
    };
    let head = nested.head().ok().and_then(|h| h.target());
    if head != Some(recorded) {
        return true;
    }
    let mut options = git2::StatusOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true);
    nested
        .statuses(Some(&mut options))
        .map_or(true, |s| s.iter().any(|e| !e.status().is_ignored()))
}

/// `Kiln-Spec-Digest` of a render: `sha256:` over every input file (path and content digest,
/// one `path\0digest\n` line each, in path order), so changing any file the render read (a
/// component's image tag, a patch, a manifest) changes the digest.
pub fn inputs_digest(inputs: &std::collections::BTreeMap<String, String>) -> String {
    let mut text = String::new();
    for (path, digest) in inputs {
        text.push_str(path);
        text.push('\0');
        text.push_str(digest);
        text.push('\n');
    }
    spec_digest(text.as_bytes())
}

/// Provenance recorded as commit trailers: the platform's own commit (when it sits in Git),
/// kiln's version and the spec digest (see [`spec_digest`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub source_commit: Option<String>,
    pub kiln_version: String,
    pub spec_digest: Option<String>,
    /// Every remote source the render used, as `<url>[#<chart>]@<commit or digest>`
    /// (`crate::source::trailer_value`), one `Kiln-App-Commit` trailer each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

/// `sha256:<hex>` of the given spec bytes (the CLI feeds the concatenated spec files in a
/// stable order). Used for the `Kiln-Spec-Digest` trailer.
pub fn spec_digest(bytes: &[u8]) -> String {
    kiln_base::digest::sha256_tagged(bytes)
}

/// A secret string (password, token). Never printed: `Debug` and `Display` show `***`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }
    fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How kiln authenticates to network remotes (https and ssh). Credentials live only in memory
/// and are handed to libgit2 in its credential callback; they are never written to disk or to
/// errors.
///
/// ssh: the host key must already be in `~/.ssh/known_hosts` (libgit2 checks it; kiln adds
/// no callback that would accept an unknown host). The key comes from the ssh agent
/// (`SSH_AUTH_SOCK`), then from `ssh_key`.
#[derive(Debug, Clone, Default)]
pub struct RemoteAuth {
    /// Username for `password`; defaults to the URL's user, then `x-access-token` (the name
    /// GitHub and most forges accept with a token).
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// Ask the configured git credential helpers (`credential.helper`, gitcredentials(7)).
    pub credential_helper: bool,
    /// ssh: ask the ssh agent for a key.
    pub ssh_agent: bool,
    /// ssh: a private key file (its public half beside it as `<key>.pub`, or derived).
    pub ssh_key: Option<PathBuf>,
    /// ssh: the passphrase of `ssh_key`.
    pub ssh_key_passphrase: Option<Secret>,
    /// The variables `username` and `password` were read from (`KILN_GIT_USERNAME`, or
    /// `GIT_USERNAME`), for an error naming where a refused credential came from.
    pub username_variable: Option<&'static str>,
    pub password_variable: Option<&'static str>,
}

impl RemoteAuth {
    /// Reads `KILN_GIT_USERNAME`/`KILN_GIT_PASSWORD` (falling back to `GIT_USERNAME`/
    /// `GIT_PASSWORD`), `KILN_SSH_KEY`/`KILN_SSH_KEY_PASSPHRASE`, and enables the credential
    /// helpers and the ssh agent (when `SSH_AUTH_SOCK` is set). The one place in this module
    /// that reads the environment; the CLI calls it, tests build `RemoteAuth` directly.
    pub fn from_env() -> Self {
        let var = |a: &'static str, b: &'static str| {
            std::env::var(a)
                .map(|v| (v, a))
                .or_else(|_| std::env::var(b).map(|v| (v, b)))
                .ok()
        };
        let username = var("KILN_GIT_USERNAME", "GIT_USERNAME");
        let password = var("KILN_GIT_PASSWORD", "GIT_PASSWORD");
        Self {
            username_variable: username.as_ref().map(|u| u.1),
            password_variable: password.as_ref().map(|p| p.1),
            username: username.map(|u| u.0),
            password: password.map(|p| Secret(p.0)),
            credential_helper: true,
            ssh_agent: std::env::var_os("SSH_AUTH_SOCK").is_some(),
            ssh_key: std::env::var_os("KILN_SSH_KEY").map(PathBuf::from),
            ssh_key_passphrase: std::env::var("KILN_SSH_KEY_PASSPHRASE").ok().map(Secret),
        }
    }
}

/// Where a repository lives, from a `--repo` argument: a local path (or `file://` URL), which
/// kiln opens directly, or a network URL, which it fetches from and pushes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoLocation {
    Local(PathBuf),
    Remote(String),
}

impl RepoLocation {
    /// `file:///x` and plain paths are local; `scheme://…` and scp-like `user@host:path` are
    /// remote.
    pub fn parse(spec: &str) -> Self {
        if let Some(rest) = spec.strip_prefix("file://") {
            // `file:///abs/path` → `/abs/path`; `file://localhost/abs` → `/abs`.
            let rest = rest.strip_prefix("localhost").unwrap_or(rest);
            // `file://user:token@/path`: a file URL has no use for credentials; drop them so
            // they never reach a message.
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let rest = match rest[..authority_end].rfind('@') {
                Some(at) => &rest[at + 1..],
                None => rest,
            };
            return Self::Local(PathBuf::from(percent_decode(rest)));
        }
        if spec.contains("://") {
            return Self::Remote(spec.to_string());
        }
        // scp-like syntax: `git@github.com:org/repo.git` (a colon before any slash).
        if let Some(colon) = spec.find(':') {
            let slash = spec.find('/').unwrap_or(usize::MAX);
            if colon < slash && colon > 1 {
                return Self::Remote(spec.to_string());
            }
        }
        Self::Local(PathBuf::from(spec))
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// `true` when two repository locations name the same repository, ignoring credentials, a
/// trailing `/` or `.git`, and the case of the host. Local paths compare canonically.
pub fn same_repo(a: &str, b: &str) -> bool {
    fn norm(s: &str) -> String {
        if let RepoLocation::Local(p) = RepoLocation::parse(s) {
            return p
                .canonicalize()
                .unwrap_or(p)
                .display()
                .to_string()
                .trim_end_matches('/')
                .trim_end_matches(".git")
                .to_string();
        }
        let r = redact(s);
        let r = r.trim_end_matches('/').trim_end_matches(".git");
        let r = r.split_once("@").map_or(r, |(_, host)| host);
        r.split_once("://")
            .map_or(r, |(_, rest)| rest)
            .to_ascii_lowercase()
    }
    norm(a) == norm(b)
}

/// `true` when `repo` is `url` ([`same_repo`]), or a local checkout whose `origin` remote is
/// `url`: a CI job publishing into its clone of the platform repository, then pushing it
/// (`scripts/ci-kiln update`).
pub fn same_repo_or_clone(repo: &str, url: &str) -> bool {
    same_repo(repo, url)
        || match RepoLocation::parse(repo) {
            RepoLocation::Local(path) => git2::Repository::open(&path)
                .ok()
                .and_then(|r| r.find_remote("origin").ok()?.url().ok().map(str::to_string))
                .is_some_and(|origin| same_repo(&origin, url)),
            RepoLocation::Remote(_) => false,
        }
}

/// What to offer libgit2 next when a remote asks for credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CredentialChoice {
    /// `RemoteAuth`'s username and password (token).
    Explicit { username: String },
    /// Ask the git credential helpers.
    Helper { username: Option<String> },
    /// ssh: the user name alone (libgit2 asks for it before it asks for a key).
    SshUsername { username: String },
    /// ssh: a key from the agent.
    SshAgent { username: String },
    /// ssh: the key file of `RemoteAuth::ssh_key`.
    SshKeyFile { username: String },
    /// libgit2's default credentials (Negotiate/NTLM).
    Default,
    /// Nothing left to try.
    GiveUp,
}

/// kiln's credential policy: explicit credentials first, then the git credential helpers, then
/// libgit2's default; each at most once, because libgit2 calls back again after every rejected
/// attempt and would otherwise loop forever.
#[derive(Default)]
struct Tried {
    explicit: bool,
    helper: bool,
    default: bool,
    ssh_username: bool,
    ssh_agent: bool,
    ssh_key: bool,
}

struct CredentialPolicy<'a> {
    auth: &'a RemoteAuth,
    tried: Tried,
}

impl<'a> CredentialPolicy<'a> {
    fn new(auth: &'a RemoteAuth) -> Self {
        Self {
            auth,
            tried: Tried::default(),
        }
    }

    fn next(
        &mut self,
        allowed: CredentialType,
        username_from_url: Option<&str>,
    ) -> CredentialChoice {
        let username = self.auth.username.as_deref().or(username_from_url);
        let once = |flag: &mut bool| !std::mem::replace(flag, true);
        // ssh: the user is the URL's (`git@host`), else `git`, the forges' convention.
        let ssh_user = || username_from_url.unwrap_or("git").to_string();
        if allowed.contains(CredentialType::USERNAME) && once(&mut self.tried.ssh_username) {
            return CredentialChoice::SshUsername {
                username: ssh_user(),
            };
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            if self.auth.ssh_agent && once(&mut self.tried.ssh_agent) {
                return CredentialChoice::SshAgent {
                    username: ssh_user(),
                };
            }
            if self.auth.ssh_key.is_some() && once(&mut self.tried.ssh_key) {
                return CredentialChoice::SshKeyFile {
                    username: ssh_user(),
                };
            }
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            if self.auth.password.is_some() && once(&mut self.tried.explicit) {
                return CredentialChoice::Explicit {
                    username: username.unwrap_or("x-access-token").to_string(),
                };
            }
            if self.auth.credential_helper && once(&mut self.tried.helper) {
                return CredentialChoice::Helper {
                    username: username.map(str::to_string),
                };
            }
        }
        if allowed.contains(CredentialType::DEFAULT) && once(&mut self.tried.default) {
            return CredentialChoice::Default;
        }
        CredentialChoice::GiveUp
    }
}

/// Remote callbacks applying [`CredentialPolicy`]. Secrets go from memory to libgit2 only.
pub(crate) fn remote_callbacks(auth: &RemoteAuth) -> RemoteCallbacks<'_> {
    remote_callbacks_noting(auth, &|_, _| {})
}

/// [`remote_callbacks`], telling `note` the user name of each credential handed to
/// libgit2 and where it came from (never the secret): the source fetcher names them when
/// the server refuses them (`kiln_source::git::note_offered`).
pub(crate) fn remote_callbacks_noting<'a>(
    auth: &'a RemoteAuth,
    note: &'a (dyn Fn(&str, &str) + 'a),
) -> RemoteCallbacks<'a> {
    let mut callbacks = RemoteCallbacks::new();
    let policy = std::cell::RefCell::new(CredentialPolicy::new(auth));
    callbacks.credentials(move |url, username_from_url, allowed| {
        loop {
            let choice = policy.borrow_mut().next(allowed, username_from_url);
            match choice {
                CredentialChoice::Explicit { username } => {
                    let password = auth.password.as_ref().map(Secret::expose).unwrap_or("");
                    note(&username, &explicit_source(auth, username_from_url));
                    return Cred::userpass_plaintext(&username, password);
                }
                CredentialChoice::Helper { username } => {
                    let config = git2::Config::open_default()?;
                    // What `Cred::credential_helper` does, keeping the user name it got.
                    if let Some((user, password)) = git2::CredentialHelper::new(url)
                        .config(&config)
                        .username(username.as_deref())
                        .execute()
                    {
                        note(
                            &user,
                            "a git credential helper (git config credential.helper)",
                        );
                        return Cred::userpass_plaintext(&user, &password);
                    }
                    // No helper answered: fall through to the next choice.
                }
                CredentialChoice::SshUsername { username } => return Cred::username(&username),
                CredentialChoice::SshAgent { username } => {
                    if let Ok(cred) = Cred::ssh_key_from_agent(&username) {
                        note(&username, "the ssh agent (SSH_AUTH_SOCK)");
                        return Ok(cred);
                    }
                }
                CredentialChoice::SshKeyFile { username } => {
                    if let Some(key) = &auth.ssh_key {
                        note(&username, "the key file of KILN_SSH_KEY");
                        let public = key.with_extension("pub");
                        return Cred::ssh_key(
                            &username,
                            public.is_file().then_some(public.as_path()),
                            key,
                            auth.ssh_key_passphrase.as_ref().map(Secret::expose),
                        );
                    }
                }
                CredentialChoice::Default => {
                    note(
                        "(the system's login)",
                        "libgit2's default credentials (Negotiate/NTLM)",
                    );
                    return Cred::default();
                }
                CredentialChoice::GiveUp => {
                    return Err(git2::Error::new(
                        git2::ErrorCode::Auth,
                        git2::ErrorClass::Net,
                        "no accepted credentials",
                    ));
                }
            }
        }
    });
    callbacks
}

/// Where [`CredentialChoice::Explicit`]'s user name and password came from, in the terms the
/// user set them in.
fn explicit_source(auth: &RemoteAuth, username_from_url: Option<&str>) -> String {
    let password = auth.password_variable.unwrap_or("the configured password");
    match (auth.username_variable, username_from_url) {
        (Some(user), _) => format!("{user} and {password}"),
        (None, Some(_)) => format!("the URL's user name and {password}"),
        (None, None) => format!("{password}, with the default user name"),
    }
}

/// Maps a fetch/connect error to the user-facing condition.
pub(crate) fn network_error(url: &str, e: &git2::Error) -> GitError {
    if e.code() == git2::ErrorCode::Auth {
        GitError::AuthenticationFailed { url: redact(url) }
    } else {
        GitError::RemoteUnreachable {
            url: redact(url),
            message: redact_message(e.message(), url),
        }
    }
}

/// libgit2 messages can quote the URL (or parts of it); make sure no secret survives.
fn redact_message(message: &str, url: &str) -> String {
    redact(&message.replace(url, &redact(url)))
}

/// Opens an existing local repository exactly at `path` (no discovery upwards, so a typo never
/// writes into an enclosing repository).
pub(crate) fn open_local(path: &Path) -> Result<Repository, GitError> {
    Repository::open_ext(
        path,
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .map_err(|_| GitError::RepositoryNotFound {
        repo: redact(&path.display().to_string()),
    })
}

/// A repository opened for reading: the local one, or a temporary bare fetch of a remote
/// (kept alive by `_temp`).
pub(crate) struct ReadRepo {
    pub(crate) repo: Repository,
    pub(crate) display: String,
    _temp: Option<tempfile::TempDir>,
}

/// Opens `spec` for reading: local paths directly; remotes are fetched (all branches and tags)
/// into a temporary bare repository.
pub(crate) fn open_for_reading(spec: &str, auth: &RemoteAuth) -> Result<ReadRepo, GitError> {
    match RepoLocation::parse(spec) {
        RepoLocation::Local(path) => Ok(ReadRepo {
            repo: open_local(&path)?,
            display: redact(&path.display().to_string()),
            _temp: None,
        }),
        RepoLocation::Remote(url) => {
            let temp = tempfile::tempdir().map_err(|source| GitError::Io {
                operation: "create a temporary directory in",
                path: std::env::temp_dir(),
                source,
            })?;
            let repo =
                Repository::init_bare(temp.path()).map_err(lg("creating a scratch repository"))?;
            {
                let mut remote = repo
                    .remote_anonymous(&url)
                    .map_err(|e| network_error(&url, &e))?;
                let mut fetch = git2::FetchOptions::new();
                fetch.remote_callbacks(remote_callbacks(auth));
                // FETCH_HEAD would record the URL (and any password in it) on disk.
                fetch.update_fetchhead(false);
                remote
                    .fetch(
                        &["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                        Some(&mut fetch),
                        None,
                    )
                    .map_err(|e| network_error(&url, &e))?;
            }
            Ok(ReadRepo {
                repo,
                display: redact(&url),
                _temp: Some(temp),
            })
        }
    }
}

/// Resolves a branch, tag, `refs/...` name or commit id to a commit.
pub(crate) fn resolve_commit<'r>(
    repo: &'r Repository,
    display: &str,
    reference: &str,
) -> Result<git2::Commit<'r>, GitError> {
    let not_found = || GitError::RefNotFound {
        repo: display.to_string(),
        reference: reference.to_string(),
    };
    let candidates = [
        reference.to_string(),
        format!("refs/heads/{reference}"),
        format!("refs/remotes/origin/{reference}"),
    ];
    for candidate in candidates {
        if let Ok(object) = repo.revparse_single(&candidate) {
            return object.peel_to_commit().map_err(|_| not_found());
        }
    }
    Err(not_found())
}

/// Reads an ownership marker; `path` names it in errors.
///
/// Errors: [`GitError::InvalidMarker`] (not JSON, another format, an invalid path listed).
pub(crate) fn parse_marker(path: &str, bytes: &[u8]) -> Result<OwnedMarker, GitError> {
    OwnedMarker::parse(bytes).map_err(|e| GitError::InvalidMarker {
        path: path.to_string(),
        message: e.0,
    })
}

/// Checks an artifact or managed path: relative, `/`-separated, no empty/`.`/`..` segments,
/// never `.git`. Returns its segments.
pub(crate) fn validate_rel_path(path: &str) -> Result<Vec<&str>, GitError> {
    crate::marker::check_rel_path(path).map_err(|reason| GitError::InvalidPath {
        path: path.to_string(),
        reason,
    })
}

/// Normalises a `--path` value: `None`, `""`, `"."` and `"/"` mean the branch root; one
/// leading and one trailing slash are dropped. Anything else must be a clean relative path
/// ([`validate_rel_path`]): `//`, a newline, spaces around a segment or `.gitmodules` are
/// refused, never read as the root or written as a folder.
pub(crate) fn normalize_managed_path(path: Option<&str>) -> Result<String, GitError> {
    let raw = path.unwrap_or("");
    if matches!(raw, "" | "." | "/") {
        return Ok(String::new());
    }
    let p = raw.strip_prefix('/').unwrap_or(raw);
    let p = p.strip_suffix('/').unwrap_or(p);
    validate_rel_path(p)?;
    Ok(p.to_string())
}

/// Joins a managed path and a relative file path.
pub(crate) fn join_path(base: &str, rel: &str) -> String {
    if base.is_empty() {
        rel.to_string()
    } else {
        format!("{base}/{rel}")
    }
}

/// Reads the files kiln owns at `path` in `tree`, as an [`ArtifactSet`] relative to `path`
/// (without the marker). `Ok(None)` when there is no marker there.
pub(crate) fn read_owned_files(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    path: &str,
) -> Result<Option<ArtifactSet>, GitError> {
    let marker_path = join_path(path, MARKER_FILE);
    let Some(bytes) = read_blob_at(repo, tree, &marker_path)? else {
        return Ok(None);
    };
    let marker = parse_marker(&marker_path, &bytes)?;
    let mut set = ArtifactSet::new();
    for file in &marker.files {
        if let Some(bytes) = read_blob_at(repo, tree, &join_path(path, file))? {
            set.insert(file.clone(), bytes);
        }
    }
    Ok(Some(set))
}

/// Reads every file under `path` in `tree` (relative to `path`), submodules skipped.
pub(crate) fn read_all_files(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    path: &str,
) -> Result<ArtifactSet, GitError> {
    let mut set = ArtifactSet::new();
    let sub = if path.is_empty() {
        tree.clone()
    } else {
        match tree.get_path(Path::new(path)) {
            Ok(entry) if entry.kind() == Some(git2::ObjectType::Tree) => {
                repo.find_tree(entry.id()).map_err(lg("reading a tree"))?
            }
            _ => return Ok(set),
        }
    };
    let mut failure = None;
    sub.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            let name = entry.name().unwrap_or_default();
            match repo.find_blob(entry.id()) {
                Ok(blob) => set.insert(format!("{dir}{name}"), blob.content().to_vec()),
                Err(e) => {
                    failure = Some(e);
                    return git2::TreeWalkResult::Abort;
                }
            }
        }
        git2::TreeWalkResult::Ok
    })
    .ok();
    if let Some(e) = failure {
        return Err(lg("reading a blob")(e));
    }
    Ok(set)
}

/// The blob at `path` in `tree`, if there is a blob there.
pub(crate) fn read_blob_at(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    path: &str,
) -> Result<Option<Vec<u8>>, GitError> {
    match tree.get_path(Path::new(path)) {
        Ok(entry) if entry.kind() == Some(git2::ObjectType::Blob) => {
            let blob = repo.find_blob(entry.id()).map_err(lg("reading a blob"))?;
            Ok(Some(blob.content().to_vec()))
        }
        _ => Ok(None),
    }
}

/// The blob id a file would get (no write).
pub(crate) fn blob_id(bytes: &[u8]) -> Result<Oid, GitError> {
    Oid::hash_object(git2::ObjectType::Blob, bytes).map_err(lg("hashing a blob"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one retry loop: a moved branch is tried again up to the limit (then the last reason
    /// is the error), a busy lock does not spend an attempt, and at least one attempt is made.
    #[test]
    fn push_with_retry_counts_moves_not_busy_locks() {
        let kept_moving = |n: u32, why: String| format!("kept moving after {n}: {why}");
        let mut seen = Vec::new();
        let busy_then_moved = push_with_retry(
            3,
            |n| {
                seen.push(n);
                Ok::<_, String>(match seen.len() {
                    1 | 2 => Attempt::Busy,
                    _ => Attempt::<()>::Moved(format!("tip {}", seen.len())),
                })
            },
            kept_moving,
        );
        assert_eq!(
            busy_then_moved,
            Err("kept moving after 3: tip 5".to_string())
        );
        assert_eq!(seen, [1, 1, 1, 2, 3]);
        let mut tries = 0;
        let second = push_with_retry(
            5,
            |n| {
                tries += 1;
                Ok::<_, String>(if n == 2 {
                    Attempt::Done(n)
                } else {
                    Attempt::Moved(String::new())
                })
            },
            kept_moving,
        );
        assert_eq!((second, tries), (Ok(2), 2));
        let once = push_with_retry(
            0,
            |n| Ok::<_, String>(Attempt::<u32>::Moved(format!("{n}"))),
            kept_moving,
        );
        assert_eq!(once, Err("kept moving after 1: 1".to_string()));
        let failed = push_with_retry(
            3,
            |_| Err::<Attempt<()>, _>("no network".to_string()),
            kept_moving,
        );
        assert_eq!(failed, Err("no network".to_string()));
    }

    #[test]
    fn repo_location_distinguishes_paths_and_urls() {
        assert_eq!(
            RepoLocation::parse("file:///tmp/a%20b"),
            RepoLocation::Local(PathBuf::from("/tmp/a b"))
        );
        assert_eq!(
            RepoLocation::parse("./out"),
            RepoLocation::Local(PathBuf::from("./out"))
        );
        assert_eq!(
            RepoLocation::parse("C:/x"),
            RepoLocation::Local(PathBuf::from("C:/x"))
        );
        assert!(matches!(
            RepoLocation::parse("https://github.com/acme/deploy.git"),
            RepoLocation::Remote(_)
        ));
        assert!(matches!(
            RepoLocation::parse("git@github.com:acme/deploy.git"),
            RepoLocation::Remote(_)
        ));
    }

    #[test]
    fn secrets_never_print() {
        assert!(!format!("{:?}", Secret::new("s3cret")).contains("s3cret"));
    }

    #[test]
    fn same_repo_ignores_credentials_and_spelling() {
        assert!(same_repo(
            "https://x:t@GitHub.com/a/b.git",
            "https://github.com/a/b"
        ));
        assert!(!same_repo(
            "https://github.com/a/b",
            "https://github.com/a/c"
        ));
    }

    #[test]
    fn rel_paths_are_validated() {
        assert!(validate_rel_path("a/b.yaml").is_ok());
        for bad in ["", "/a", "a//b", "a/../b", "./a", ".git/config", "a\\b"] {
            assert!(validate_rel_path(bad).is_err(), "{bad}");
        }
        assert_eq!(normalize_managed_path(Some("/x/y/")).unwrap(), "x/y");
        assert_eq!(normalize_managed_path(Some(".")).unwrap(), "");
        assert_eq!(normalize_managed_path(None).unwrap(), "");
        // `--path "  "`, `.git ` and `git~1` are refused with kiln's own message.
        for bad in ["  ", ".git ", "x/git~1"] {
            assert!(normalize_managed_path(Some(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn marker_round_trips_and_rejects_foreign_formats() {
        let m = OwnedMarker::new(["b".to_string(), "a/x".to_string()]);
        let back = parse_marker("m", &m.to_bytes()).unwrap();
        assert_eq!(back, m);
        assert!(parse_marker("m", br#"{"format":"other","files":[]}"#).is_err());
        assert!(
            parse_marker("m", br#"{"format":"kiln.owned-files/v1","files":["../x"]}"#).is_err()
        );
    }

    #[test]
    fn credentials_are_each_tried_once_then_given_up() {
        let both = CredentialType::USER_PASS_PLAINTEXT | CredentialType::DEFAULT;
        let auth = RemoteAuth {
            username: None,
            password: Some(Secret::new("tok")),
            credential_helper: true,
            ..RemoteAuth::default()
        };
        let mut policy = CredentialPolicy::new(&auth);
        assert_eq!(
            policy.next(both, Some("bot")),
            CredentialChoice::Explicit {
                username: "bot".into()
            }
        );
        assert_eq!(
            policy.next(both, Some("bot")),
            CredentialChoice::Helper {
                username: Some("bot".into())
            }
        );
        assert_eq!(policy.next(both, None), CredentialChoice::Default);
        assert_eq!(policy.next(both, None), CredentialChoice::GiveUp);

        // No password, no helper: only what the server allows, once.
        let none = RemoteAuth::default();
        let mut policy = CredentialPolicy::new(&none);
        assert_eq!(
            policy.next(CredentialType::USER_PASS_PLAINTEXT, None),
            CredentialChoice::GiveUp
        );
        // A token without a user name goes in as `x-access-token`.
        let token = RemoteAuth {
            password: Some(Secret::new("tok")),
            ..RemoteAuth::default()
        };
        assert_eq!(
            CredentialPolicy::new(&token).next(CredentialType::USER_PASS_PLAINTEXT, None),
            CredentialChoice::Explicit {
                username: "x-access-token".into()
            }
        );
    }

    #[test]
    fn ssh_offers_user_then_agent_then_key_file_each_once() {
        let auth = RemoteAuth {
            ssh_agent: true,
            ssh_key: Some(PathBuf::from("/keys/id_ed25519")),
            ..RemoteAuth::default()
        };
        let mut policy = CredentialPolicy::new(&auth);
        let user = |u: &str| u.to_string();
        assert_eq!(
            policy.next(CredentialType::USERNAME, None),
            CredentialChoice::SshUsername {
                username: user("git")
            }
        );
        let key = CredentialType::SSH_KEY;
        assert_eq!(
            policy.next(key, Some("deploy")),
            CredentialChoice::SshAgent {
                username: user("deploy")
            }
        );
        assert_eq!(
            policy.next(key, Some("deploy")),
            CredentialChoice::SshKeyFile {
                username: user("deploy")
            }
        );
        assert_eq!(policy.next(key, Some("deploy")), CredentialChoice::GiveUp);
        // Neither an agent nor a key: nothing to offer, and no endless retry.
        let none = RemoteAuth::default();
        assert_eq!(
            CredentialPolicy::new(&none).next(key, None),
            CredentialChoice::GiveUp
        );
    }

    #[test]
    fn spec_digest_is_sha256_hex() {
        assert_eq!(
            spec_digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
