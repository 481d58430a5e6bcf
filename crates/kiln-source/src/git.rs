//! One commit of a Git repository, through libgit2 (git2, https and ssh as `kiln publish`
//! uses them; ADR 0018): the refs are listed (`git ls-remote`), the asked-for ref resolved
//! to a commit (a branch, a tag — annotated tags peeled — a full ref name, or a commit id),
//! and only that commit fetched, at depth 1 where the server allows it, into a bare
//! repository per URL in the cache. Its tree is then written out as a plain directory
//! (what `git archive` would give): no `.git`, and a symbolic link refused when it points out
//! of the tree.
//!
//! Two of kustomize's clone options ([`Options`]; kustomize v5.5.0
//! `api/internal/git/cloner.go` `ClonerUsingGitExec`, `gitrunner.go`, `utils/timedcall.go`):
//! - `?timeout=`: kustomize runs each git command under `TimedCall`; here the fetch of the
//!   repository (listing its refs and fetching the commit, kustomize's `git fetch`) and then
//!   the fetch of its submodules (kustomize's `git submodule update`) each get the timeout,
//!   and one running past it fails, naming the URL, with nothing stored;
//! - `?submodules=`: kustomize runs `git submodule update --init --recursive`; here each
//!   gitlink's commit is fetched from the URL `.gitmodules` gives it (relative URLs resolved
//!   against the repository's, as git resolves them) and its tree written in its place,
//!   recursively. Without it (and for component sources) gitlinks are left out.
#![allow(clippy::disallowed_methods)] // the source fetcher's I/O boundary (clippy.toml)

use crate::archive::{Limits, Which, link_stays_inside};
use crate::cache::Cache;
use crate::error::{Origin, SourceError, go_duration, nearest};
use git2::{
    AutotagOption, Direction, FetchOptions, ObjectType, Oid, Remote, RemoteCallbacks, Repository,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Makes the remote callbacks for one connection: the caller's credential policy (the
/// pipeline hands `kiln::git::remote_callbacks`, the one kiln publishes with).
pub type Callbacks<'a> = &'a (dyn Fn() -> RemoteCallbacks<'a> + Sync);

/// How a repository is fetched: kustomize's clone options, for a remote base.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Write each submodule's tree in place of its gitlink (`?submodules=`).
    pub submodules: bool,
    /// Bound the fetch, and then the submodules' fetch (`?timeout=`); `None`: unbounded.
    pub timeout: Option<Duration>,
}

/// When a timed step must be over.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    timeout: Duration,
}

impl Deadline {
    /// A step bounded by `timeout`, starting now.
    pub fn start(timeout: Option<Duration>) -> Option<Deadline> {
        timeout.map(|timeout| Deadline {
            at: Instant::now() + timeout,
            timeout,
        })
    }

    fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    /// What is left, in libgit2's milliseconds (at least 1: 0 would mean no timeout),
    /// rounded up and one more: a wait libgit2 ends a fraction of a millisecond before the
    /// deadline would otherwise be reported as the server's silence, not the deadline.
    fn remaining_ms(&self) -> i32 {
        let left = self
            .at
            .saturating_duration_since(Instant::now())
            .as_micros()
            .div_ceil(1000)
            + 1;
        i32::try_from(left).unwrap_or(i32::MAX).max(1)
    }

    fn error(&self, origin: &Origin, what: &str) -> SourceError {
        SourceError::Timeout {
            origin: Box::new(origin.clone()),
            what: what.to_string(),
            timeout: go_duration(self.timeout),
            help: crate::error::BASE_TIMEOUT,
        }
    }
}

/// libgit2's connect and read/write timeouts are process-wide options (`git_libgit2_opts`,
/// read by its socket stream when it connects and each time it waits for the server). Every
/// network step of this module holds this lock; a timed one sets them to the time it has
/// left, so a server that accepts and never answers ends the step there, and sets them back
/// to the process's default ([`set_default_timeout`]) when it is over.
static NETWORK: Mutex<()> = Mutex::new(());

/// Runs one network step, bounded by `deadline` when there is one.
fn network<T>(deadline: Option<&Deadline>, step: impl FnOnce() -> T) -> T {
    let _one = NETWORK.lock().unwrap_or_else(|e| e.into_inner());
    OFFERED.with(|o| o.borrow_mut().clear());
    let Some(d) = deadline else {
        return step();
    };
    let base = BASE_MS.load(std::sync::atomic::Ordering::Relaxed);
    set_timeouts(match base {
        0 => d.remaining_ms(),
        base => d.remaining_ms().min(base),
    });
    let out = step();
    set_timeouts(base);
    out
}

thread_local! {
    /// The credentials the caller's callbacks handed libgit2 during this thread's last
    /// network step: (user name, where it came from). libgit2 runs the callbacks on the
    /// thread that called it, inside [`network`], which starts the list anew.
    static OFFERED: std::cell::RefCell<Vec<(String, String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Called by the caller's credential callback for each credential it hands libgit2: the
/// user name and where it came from (`KILN_GIT_USERNAME and KILN_GIT_PASSWORD`, a
/// credential helper), never the secret. A refused login then names them
/// ([`SourceError::Auth`]'s help).
pub fn note_offered(username: &str, from: &str) {
    OFFERED.with(|o| {
        let mut o = o.borrow_mut();
        let entry = (username.to_string(), from.to_string());
        if !o.contains(&entry) {
            o.push(entry);
        }
    });
}

/// A Git login failure's help: what was offered and refused (the user and its source), then
/// where Git credentials come from.
fn tried_help() -> String {
    let offered = OFFERED.with(|o| o.borrow().clone());
    let tried = if offered.is_empty() {
        "kiln offered no credential (none is configured for this host)".to_string()
    } else {
        let each: Vec<String> = offered
            .iter()
            .map(|(user, from)| format!("user `{user}` from {from}"))
            .collect();
        format!("the server refused {}", each.join(", then "))
    };
    format!("{tried}. {}", crate::error::GIT_CREDENTIALS)
}

/// The wait libgit2 allows outside a deadline: kiln's `KILN_SOURCE_TIMEOUT`, once the binary
/// set it ([`set_default_timeout`]); 0 (none, libgit2's default) in a library caller that
/// did not.
static BASE_MS: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

fn set_timeouts(ms: i32) {
    // SAFETY: the two options are plain `int`s that libgit2 only reads; kiln writes them
    // nowhere else, and here only under NETWORK, so no two of kiln's fetches race on them.
    // Another thread's libgit2 call outside this module (a publish in the same process) may
    // read either value: a bounded wait for its server, never a memory error. Both calls
    // cannot fail (git2 documents it).
    unsafe {
        let _ = git2::opts::set_server_connect_timeout_in_milliseconds(ms);
        let _ = git2::opts::set_server_timeout_in_milliseconds(ms);
    }
}

/// A ref the server advertises: its full name and the commit it names (tags peeled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRef {
    pub name: String,
    pub commit: String,
}

/// Bounds how long libgit2 waits on a server, to connect and then on each read or write:
/// its `GIT_OPT_SET_SERVER_CONNECT_TIMEOUT` and `GIT_OPT_SET_SERVER_TIMEOUT` (libgit2
/// `src/libgit2/streams/socket.c`), which every fetch and push over `git://` and HTTP(S)
/// honours. Without them a server that accepts and never answers hangs the run for good. A
/// remote base's own deadline narrows it while that base is fetched (`network`).
///
/// # Safety
/// The options are process-wide C globals written without synchronisation: call this once,
/// at the start of the process, before any thread that may use libgit2 exists (the binary's
/// `main` does).
pub unsafe fn set_default_timeout(timeout: Duration) {
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    BASE_MS.store(ms, std::sync::atomic::Ordering::Relaxed);
    set_timeouts(ms);
}

/// What went wrong talking to the remote, in kiln's terms.
fn remote_error(origin: &Origin, e: &git2::Error) -> SourceError {
    let detail = kiln_base::url::redact(e.message());
    let auth = e.code() == git2::ErrorCode::Auth
        || e.class() == git2::ErrorClass::Ssh && detail.contains("auth")
        || detail.contains("401")
        || detail.contains("403")
        || detail.contains("authentication");
    // libgit2 reports its socket timeouts with `GIT_TIMEOUT` only sometimes: the smart
    // protocol passes them up as a generic network error with the socket's message.
    let timed_out = e.code() == git2::ErrorCode::Timeout
        || e.class() == git2::ErrorClass::Net && detail.contains("timed out");
    if timed_out {
        let ms = BASE_MS.load(std::sync::atomic::Ordering::Relaxed);
        SourceError::Timeout {
            origin: Box::new(origin.clone()),
            what: format!("the conversation with the server ({detail})"),
            timeout: go_duration(Duration::from_millis(u64::try_from(ms).unwrap_or(0))),
            help: crate::error::SILENCE_TIMEOUT,
        }
    } else if auth {
        SourceError::Auth {
            origin: Box::new(origin.clone()),
            detail,
            help: tried_help(),
        }
    } else {
        SourceError::Unreachable {
            origin: Box::new(origin.clone()),
            detail,
        }
    }
}

fn local_error(origin: &Origin, what: &str, e: &git2::Error) -> SourceError {
    SourceError::BadResponse {
        origin: Box::new(origin.clone()),
        detail: format!("{what}: {}", kiln_base::url::redact(e.message())),
        help: "the cache is safe to delete; remove the source cache's `git/` folder and run again"
            .into(),
    }
}

/// Opens (or creates) the cache's bare repository for `url`.
fn open(cache: &Cache, url: &str, origin: &Origin) -> Result<Repository, SourceError> {
    let dir = cache.git_dir(url);
    Repository::open_bare(&dir)
        .or_else(|_| Repository::init_bare(&dir))
        .map_err(|e| local_error(origin, "cannot open the cache's repository", &e))
}

/// The refs `url` advertises, peeled (`git ls-remote`); nothing is written.
pub fn list_refs(
    url: &str,
    callbacks: Callbacks<'_>,
    deadline: Option<&Deadline>,
    origin: &Origin,
) -> Result<Vec<RemoteRef>, SourceError> {
    let heads = network(
        deadline,
        || -> Result<Vec<(String, String)>, git2::Error> {
            let mut remote = Remote::create_detached(url)?;
            let conn = remote.connect_auth(Direction::Fetch, Some(callbacks()), None)?;
            let heads = conn.list()?;
            Ok(heads
                .iter()
                .map(|h| (h.name().to_string(), h.oid().to_string()))
                .collect())
        },
    );
    if let Some(d) = deadline.filter(|d| d.passed()) {
        return Err(d.error(origin, "listing its refs"));
    }
    let heads = heads.map_err(|e| remote_error(origin, &e))?;
    let mut refs: Vec<RemoteRef> = Vec::new();
    for (name, commit) in heads {
        // `refs/tags/v1^{}` is the commit an annotated tag points at: it replaces the tag's
        // own object.
        if let Some(tag) = name.strip_suffix("^{}") {
            if let Some(r) = refs.iter_mut().find(|r| r.name == tag) {
                r.commit = commit;
            }
            continue;
        }
        refs.push(RemoteRef { name, commit });
    }
    Ok(refs)
}

/// Resolves `requested` against the advertised refs, as `git fetch <url> <ref>` does: a full
/// ref name, then `refs/heads/<ref>`, then `refs/tags/<ref>`; `HEAD` (or empty) the remote's
/// HEAD; a full commit id stands for itself. The error lists the nearest refs.
pub fn resolve(
    refs: &[RemoteRef],
    requested: &str,
    origin: &Origin,
) -> Result<(String, Option<String>), SourceError> {
    let wanted = if requested.is_empty() {
        "HEAD"
    } else {
        requested
    };
    for name in [
        wanted.to_string(),
        format!("refs/heads/{wanted}"),
        format!("refs/tags/{wanted}"),
    ] {
        if let Some(r) = refs.iter().find(|r| r.name == name) {
            return Ok((r.commit.clone(), Some(r.name.clone())));
        }
    }
    if wanted.len() == 40 && wanted.bytes().all(|b| b.is_ascii_hexdigit()) {
        let id = wanted.to_ascii_lowercase();
        let via = refs.iter().find(|r| r.commit == id).map(|r| r.name.clone());
        return Ok((id, via));
    }
    let names: Vec<String> = refs
        .iter()
        .filter_map(|r| {
            r.name
                .strip_prefix("refs/heads/")
                .or_else(|| r.name.strip_prefix("refs/tags/"))
                .map(str::to_string)
        })
        .collect();
    Err(SourceError::NotFound {
        origin: Box::new(origin.clone()),
        wanted: wanted.to_string(),
        help: format!("{} (branches and tags)", nearest(wanted, &names, "refs")),
    })
}

/// What every step of one source's fetch shares.
pub struct Session<'s, 'a> {
    pub cache: &'s Cache,
    pub callbacks: Callbacks<'a>,
    pub limits: &'s Limits,
    pub options: Options,
}

/// Fetches `commit` (advertised as `via`, when it is) into the cache's repository for `url`,
/// unless it is there already, and writes its tree into a staging directory; with
/// [`Options::submodules`], each submodule's tree too. `deadline` bounds the fetch of the
/// repository (begun by the caller, who listed its refs under it).
pub fn fetch_tree(
    s: &Session<'_, '_>,
    url: &str,
    commit: &str,
    via: Option<&str>,
    deadline: Option<&Deadline>,
    origin: &Origin,
) -> Result<tempfile::TempDir, SourceError> {
    let staged = s.cache.staging()?;
    let mut budget = Budget::default();
    let root = staged.path();
    let top = checkout(
        s,
        url,
        commit,
        via,
        deadline,
        root,
        Path::new(""),
        &mut budget,
        origin,
    )?;
    if s.options.submodules && !top.links.is_empty() {
        // kustomize's `git submodule update --init --recursive`: a command of its own, under
        // a timeout of its own.
        let deadline = Deadline::start(s.options.timeout);
        let at = Where {
            url,
            dir: Path::new(""),
            root,
        };
        submodules(s, &at, top, deadline.as_ref(), &mut budget, origin, 0)?;
    }
    check_links(root, origin)?;
    Ok(staged)
}

/// A repository's place in the written tree: its URL, its directory (relative to the root)
/// and the root.
struct Where<'w> {
    url: &'w str,
    dir: &'w Path,
    root: &'w Path,
}

/// A written tree's submodules: its `.gitmodules` and its gitlinks (path from the root,
/// commit).
struct Gitlinks {
    gitmodules: String,
    links: Vec<(PathBuf, Oid)>,
}

/// Fetches `commit` of `url` when the cache's repository lacks it and writes its tree at
/// `root/rel`; its gitlinks, for [`submodules`].
#[allow(clippy::too_many_arguments)]
fn checkout(
    s: &Session<'_, '_>,
    url: &str,
    commit: &str,
    via: Option<&str>,
    deadline: Option<&Deadline>,
    root: &Path,
    rel: &Path,
    budget: &mut Budget,
    origin: &Origin,
) -> Result<Gitlinks, SourceError> {
    let oid = Oid::from_str(commit).map_err(|e| local_error(origin, "not a commit id", &e))?;
    let repo = {
        // One fetch into a repository at a time (other processes wait on the cache lock).
        let _lock = s.cache.lock()?;
        let dir = s.cache.git_dir(url);
        let fresh = !dir.exists();
        let repo = open(s.cache, url, origin)?;
        if repo.find_commit(oid).is_err()
            && let Err(e) = fetch(&repo, url, oid, via, s, deadline, origin)
        {
            // A fetch that failed leaves nothing behind: not even the repository it made.
            drop(repo);
            if fresh {
                let _ = std::fs::remove_dir_all(&dir);
            }
            return Err(e);
        }
        repo
    };
    let commit = repo.find_commit(oid).map_err(|_| SourceError::NotFound {
        origin: Box::new(origin.clone()),
        wanted: commit.to_string(),
        help: "the server does not have this commit (or does not serve commits that no branch or tag names); name a branch or tag".into(),
    })?;
    let tree = commit
        .tree()
        .map_err(|e| local_error(origin, "cannot read the commit's tree", &e))?;
    let mut links = Vec::new();
    write_tree(
        &repo, &tree, root, rel, s.limits, budget, &mut links, origin,
    )?;
    // `.gitmodules` as committed (a regular file; git reads no other).
    let gitmodules = tree
        .get_name(".gitmodules")
        .filter(|e| matches!(e.filemode(), 0o100644 | 0o100755))
        .and_then(|e| repo.find_blob(e.id()).ok())
        .map(|b| String::from_utf8_lossy(b.content()).into_owned())
        .unwrap_or_default();
    Ok(Gitlinks { gitmodules, links })
}

/// How deep submodules may nest (each level is another repository's fetch).
const MAX_SUBMODULE_DEPTH: usize = 16;

/// kustomize's `git submodule update --init --recursive`: each gitlink of the repository at
/// `at` gets its commit, fetched from the URL `.gitmodules` gives its path, written in its
/// place; then that repository's own submodules.
fn submodules(
    s: &Session<'_, '_>,
    at: &Where<'_>,
    got: Gitlinks,
    deadline: Option<&Deadline>,
    budget: &mut Budget,
    origin: &Origin,
    depth: usize,
) -> Result<(), SourceError> {
    let urls = gitmodules_urls(&got.gitmodules);
    for (path, oid) in got.links {
        let inner = path.strip_prefix(at.dir).unwrap_or(&path);
        let inner = inner.to_string_lossy();
        let bad = |detail: String, help: &str| SourceError::BadResponse {
            origin: Box::new(origin.clone()),
            detail,
            help: help.into(),
        };
        if depth >= MAX_SUBMODULE_DEPTH {
            return Err(bad(
                format!("submodules nest deeper than {MAX_SUBMODULE_DEPTH} (at `{inner}`)"),
                "set `?submodules=false` on the remote base to leave them out",
            ));
        }
        let Some(written) = urls.get(inner.as_ref()) else {
            return Err(bad(
                format!("the submodule at `{inner}` has no `url` in .gitmodules"),
                "git cannot fetch it either (`git submodule update` fails the same way); fix .gitmodules, or set `?submodules=false`",
            ));
        };
        let url = submodule_url(at.url, written).ok_or_else(|| {
            bad(
                format!(
                    "the submodule at `{inner}` names `{}`, which kiln does not fetch",
                    kiln_base::url::redact(written)
                ),
                "a submodule is fetched over https, http, ssh or git://; a local path or file:// is refused, as git refuses it by default (protocol.file.allow=user)",
            )
        })?;
        let commit = oid.to_string();
        let mut sub = Origin::new("git", &url, &commit);
        sub.needed_by = Some(match &origin.needed_by {
            Some(by) => format!("submodule `{inner}` of `{}`, {by}", origin.url),
            None => format!("submodule `{inner}` of `{}`", origin.url),
        });
        let refs = list_refs(&url, s.callbacks, deadline, &sub)?;
        let via = refs
            .iter()
            .find(|r| r.commit == commit)
            .map(|r| r.name.clone());
        let got = checkout(
            s,
            &url,
            &commit,
            via.as_deref(),
            deadline,
            at.root,
            &path,
            budget,
            &sub,
        )?;
        let below = Where {
            url: &url,
            dir: &path,
            root: at.root,
        };
        submodules(s, &below, got, deadline, budget, &sub, depth + 1)?;
    }
    Ok(())
}

/// Each submodule's `path` → `url` in a `.gitmodules` file (git's config syntax:
/// `[submodule "name"]` sections with `path = ` and `url = `; the last value of a key wins,
/// as `git config` reads it). Include directives are not followed: git reads `.gitmodules`
/// without them.
fn gitmodules_urls(text: &str) -> BTreeMap<String, String> {
    let mut by_name: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut section: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            let head = head.split(']').next().unwrap_or_default().trim();
            section = head
                .strip_prefix("submodule")
                .map(str::trim)
                .and_then(|q| q.strip_prefix('"'))
                .and_then(|q| q.strip_suffix('"'))
                .map(str::to_string);
            continue;
        }
        let Some(name) = &section else { continue };
        let (key, value) = line.split_once('=').unwrap_or((line, ""));
        let value = config_value(value);
        let entry = by_name.entry(name.clone()).or_default();
        match key.trim().to_ascii_lowercase().as_str() {
            "path" => entry.0 = value,
            "url" => entry.1 = value,
            _ => {}
        }
    }
    by_name
        .into_values()
        .filter(|(path, url)| !path.is_empty() && !url.is_empty())
        .map(|(path, url)| (path.trim_end_matches('/').to_string(), url))
        .collect()
}

/// A git config value: quotes removed, `\"`, `\\`, `\t`, `\n` unescaped, a comment (`#`,
/// `;` outside quotes) cut off, the ends trimmed.
fn config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some(o) => out.push(o),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

/// A submodule's URL as `git submodule` resolves it (git's remote.c `relative_url` and
/// `chop_last_dir`): `./x` and `../x` relative to the repository's own URL, each `../`
/// taking off one directory (or an scp-style `host:` part); any other URL as written. `None`
/// for what kiln does not fetch for a submodule: a local path or `file://` (git's
/// `protocol.file.allow=user`), a transport helper (`ext::`).
fn submodule_url(base: &str, url: &str) -> Option<String> {
    let resolved = if url.starts_with("./") || url.starts_with("../") {
        let mut base = base.trim_end_matches('/').to_string();
        let mut rest = url;
        let mut colon = false;
        loop {
            if let Some(r) = rest.strip_prefix("../") {
                rest = r;
                if let Some(i) = base.rfind('/') {
                    base.truncate(i);
                } else if let Some(i) = base.rfind(':') {
                    base.truncate(i);
                    colon = true;
                } else {
                    return None;
                }
            } else if let Some(r) = rest.strip_prefix("./") {
                rest = r;
            } else {
                break;
            }
        }
        format!("{base}{}{rest}", if colon { ":" } else { "/" })
    } else {
        url.to_string()
    };
    let lower = resolved.to_ascii_lowercase();
    let remote = ["https://", "http://", "ssh://", "git://"]
        .iter()
        .any(|p| lower.starts_with(p));
    // scp-style `[user@]host:path`: a colon before any slash, no `::` transport helper, and
    // no `scheme://` (`file://`, or a scheme kiln does not fetch, would pass the colon test).
    let scp = !lower.contains("::")
        && !lower.contains("://")
        && resolved
            .find(':')
            .is_some_and(|c| c > 0 && !resolved[..c].contains('/'));
    (remote || scp).then_some(resolved)
}

fn fetch(
    repo: &Repository,
    url: &str,
    oid: Oid,
    via: Option<&str>,
    s: &Session<'_, '_>,
    deadline: Option<&Deadline>,
    origin: &Origin,
) -> Result<(), SourceError> {
    let over = AtomicBool::new(false);
    let timed = deadline.copied();
    let run = |refspecs: &[String], depth: i32| {
        network(deadline, || -> Result<(), git2::Error> {
            let mut remote = repo.remote_anonymous(url)?;
            let mut cb = (s.callbacks)();
            let max = s.limits.max_bytes;
            let over = &over;
            cb.transfer_progress(move |p| {
                // Returning false cancels the fetch: a repository over the limit is never
                // downloaded whole, and one arriving too slowly stops at the deadline.
                let ok = (p.received_bytes() as u64) <= max;
                if !ok {
                    over.store(true, Ordering::Relaxed);
                }
                ok && !timed.is_some_and(|d| d.passed())
            });
            let mut fo = FetchOptions::new();
            fo.remote_callbacks(cb);
            fo.download_tags(AutotagOption::None);
            if depth > 0 {
                fo.depth(depth);
            }
            remote.fetch(refspecs, Some(&mut fo), None)
        })
    };
    let refspec = match via {
        Some(name) => format!("+{name}:refs/kiln/fetched"),
        None => format!("+{oid}:refs/kiln/fetched"),
    };
    let stopped = || {
        if over.load(Ordering::Relaxed) {
            return Some(
                s.limits
                    .too_large(origin, "the fetched repository".into(), Which::Bytes),
            );
        }
        timed
            .filter(|d| d.passed())
            .map(|d| d.error(origin, "the fetch"))
    };
    let shallow = run(std::slice::from_ref(&refspec), 1);
    if let Some(e) = stopped() {
        return Err(e);
    }
    let fetched = shallow.is_ok() && repo.find_commit(oid).is_ok();
    if !fetched {
        // The server serves no shallow fetch, or no commit by id, or the branch moved since
        // it was listed: every branch and tag, whole.
        let all = [
            "+refs/heads/*:refs/kiln/heads/*".to_string(),
            "+refs/tags/*:refs/kiln/tags/*".to_string(),
        ];
        let full = run(&all, 0);
        if let Some(e) = stopped() {
            return Err(e);
        }
        if let Err(e) = full {
            return Err(match shallow {
                Err(first) => remote_error(origin, &first),
                Ok(()) => remote_error(origin, &e),
            });
        }
    }
    Ok(())
}

/// What a written tree has used of the limits.
#[derive(Default)]
struct Budget {
    bytes: u64,
    entries: u64,
}

#[allow(clippy::too_many_arguments)]
fn write_tree(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    root: &Path,
    rel: &Path,
    limits: &Limits,
    budget: &mut Budget,
    links: &mut Vec<(PathBuf, Oid)>,
    origin: &Origin,
) -> Result<(), SourceError> {
    let dir = root.join(rel);
    std::fs::create_dir_all(&dir).map_err(|e| SourceError::io("create", &dir, e))?;
    for entry in tree.iter() {
        let name = String::from_utf8_lossy(entry.name_bytes()).into_owned();
        let entry_rel = rel.join(&name);
        let unsafe_entry = |reason: String| SourceError::UnsafeArchive {
            origin: Box::new(origin.clone()),
            entry: entry_rel.display().to_string(),
            reason,
        };
        if name.is_empty() || name == "." || name == ".." || name.contains('/') || name == ".git" {
            return Err(unsafe_entry("is not a plain file name".into()));
        }
        budget.entries += 1;
        if budget.entries > limits.max_entries {
            return Err(limits.too_large(
                origin,
                "the repository's file count".into(),
                Which::Entries,
            ));
        }
        let path = root.join(&entry_rel);
        match (entry.kind(), entry.filemode()) {
            (Some(ObjectType::Tree), _) => {
                let sub = repo
                    .find_tree(entry.id())
                    .map_err(|e| local_error(origin, "cannot read a tree", &e))?;
                write_tree(repo, &sub, root, &entry_rel, limits, budget, links, origin)?;
            }
            (Some(ObjectType::Blob), mode) => {
                let blob = repo
                    .find_blob(entry.id())
                    .map_err(|e| local_error(origin, "cannot read a file", &e))?;
                let data = blob.content();
                if mode == 0o120000 {
                    let target = String::from_utf8_lossy(data).into_owned();
                    if !link_stays_inside(&entry_rel, Path::new(&target)) {
                        return Err(unsafe_entry(format!(
                            "is a symbolic link to `{target}`, out of the repository"
                        )));
                    }
                    std::os::unix::fs::symlink(&target, &path)
                        .map_err(|e| SourceError::io("write", &path, e))?;
                    continue;
                }
                if data.len() as u64 > limits.max_file_bytes {
                    return Err(limits.too_large(
                        origin,
                        format!("`{}`", entry_rel.display()),
                        Which::FileBytes,
                    ));
                }
                budget.bytes += data.len() as u64;
                if budget.bytes > limits.max_bytes {
                    return Err(limits.too_large(
                        origin,
                        "the repository's files".into(),
                        Which::Bytes,
                    ));
                }
                std::fs::write(&path, data).map_err(|e| SourceError::io("write", &path, e))?;
                if mode == 0o100755 {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                        .map_err(|e| SourceError::io("write", &path, e))?;
                }
            }
            // A gitlink (submodule): its commit is another repository's, fetched (or not)
            // by the caller.
            (Some(ObjectType::Commit), _) => links.push((entry_rel, entry.id())),
            _ => {}
        }
    }
    Ok(())
}

/// Every symbolic link of the written tree, resolved on disk: a chain of links that leaves
/// the tree (`a -> ..` read through `b -> a/..`) is refused even when each link alone stays.
fn check_links(root: &Path, origin: &Origin) -> Result<(), SourceError> {
    let real_root = std::fs::canonicalize(root).map_err(|e| SourceError::io("resolve", root, e))?;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| SourceError::io("list", &dir, e))? {
            let path = entry.map_err(|e| SourceError::io("list", &dir, e))?.path();
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| SourceError::io("inspect", &path, e))?;
            if meta.file_type().is_symlink() {
                if let Ok(real) = std::fs::canonicalize(&path)
                    && !real.starts_with(&real_root)
                {
                    let rel = path.strip_prefix(root).unwrap_or(&path);
                    return Err(SourceError::UnsafeArchive {
                        origin: Box::new(origin.clone()),
                        entry: rel.display().to_string(),
                        reason: "is a symbolic link that resolves out of the repository".into(),
                    });
                }
            } else if meta.is_dir() {
                dirs.push(path);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::submodule_url;

    /// A remote base's `.gitmodules` may name only network repositories: a local path,
    /// `file://` (git's `protocol.file.allow=user`), a transport helper or another scheme is
    /// refused; relative URLs resolve against the base's own URL, as git resolves them.
    #[test]
    fn a_submodule_url_is_a_network_repository_or_refused() {
        let base = "https://example.com/org/app.git";
        for refused in [
            "file:///etc/repo",
            "FILE:///etc/repo",
            "/srv/repo",
            "ext::sh -c evil",
            "kiln+http://example.com/x.git",
            "ftp://example.com/x.git",
        ] {
            assert_eq!(submodule_url(base, refused), None, "{refused}");
        }
        assert_eq!(
            submodule_url(base, "../lib.git").as_deref(),
            Some("https://example.com/org/lib.git")
        );
        assert_eq!(
            submodule_url("git@example.com:org/app.git", "../lib.git").as_deref(),
            Some("git@example.com:org/lib.git")
        );
        assert_eq!(
            submodule_url(base, "git@example.com:org/lib.git").as_deref(),
            Some("git@example.com:org/lib.git")
        );
    }
}
