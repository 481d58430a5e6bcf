//! One commit of a Git repository, through libgit2 (git2, https and ssh as `kiln publish`
//! uses them; ADR 0018): the refs are listed (`git ls-remote`), the asked-for ref resolved
//! to a commit (a branch, a tag — annotated tags peeled — a full ref name, or a commit id),
//! and only that commit fetched, at depth 1 where the server allows it, into a bare
//! repository per URL in the cache. Its tree is then written out as a plain directory
//! (what `git archive` would give): no `.git`, submodules (gitlinks) left out, and a symbolic
//! link refused when it points out of the tree.
#![allow(clippy::disallowed_methods)] // the source fetcher's I/O boundary (clippy.toml)

use crate::archive::{Limits, Which, link_stays_inside};
use crate::cache::Cache;
use crate::error::{Origin, SourceError, nearest};
use git2::{AutotagOption, Direction, FetchOptions, ObjectType, Oid, RemoteCallbacks, Repository};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Makes the remote callbacks for one connection: the caller's credential policy (the
/// pipeline hands `kiln::git::remote_callbacks`, the one kiln publishes with).
pub type Callbacks<'a> = &'a (dyn Fn() -> RemoteCallbacks<'a> + Sync);

/// A ref the server advertises: its full name and the commit it names (tags peeled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRef {
    pub name: String,
    pub commit: String,
}

/// Bounds how long libgit2 waits on a server, to connect and then on each read or write:
/// its `GIT_OPT_SET_SERVER_CONNECT_TIMEOUT` and `GIT_OPT_SET_SERVER_TIMEOUT` (libgit2
/// `src/libgit2/streams/socket.c`), which every fetch and push over `git://` and HTTP(S)
/// honours. Without them a server that accepts and never answers hangs the run for good.
///
/// # Safety
/// The options are process-wide C globals written without synchronisation: call this once,
/// at the start of the process, before any thread that may use libgit2 exists (the binary's
/// `main` does).
pub unsafe fn set_timeouts(timeout: std::time::Duration) {
    let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: the caller guarantees no other thread touches libgit2 yet; both calls only
    // store an integer.
    unsafe {
        let _ = git2::opts::set_server_connect_timeout_in_milliseconds(ms);
        let _ = git2::opts::set_server_timeout_in_milliseconds(ms);
    }
}

/// The server timeout libgit2 runs with, for the error that reports it.
fn server_timeout_ms() -> i32 {
    // SAFETY: a read of an integer option; the only writer is `set_timeouts`, which runs
    // before any thread exists.
    unsafe { git2::opts::get_server_timeout_in_milliseconds() }.unwrap_or(0)
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
        SourceError::Timeout {
            origin: Box::new(origin.clone()),
            seconds: u64::try_from(server_timeout_ms()).unwrap_or(0) / 1000,
            detail,
        }
    } else if auth {
        SourceError::Auth {
            origin: Box::new(origin.clone()),
            detail,
            help: crate::error::GIT_CREDENTIALS,
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

/// The refs `url` advertises, peeled (`git ls-remote`).
pub fn list_refs(
    cache: &Cache,
    url: &str,
    callbacks: Callbacks<'_>,
    origin: &Origin,
) -> Result<Vec<RemoteRef>, SourceError> {
    let repo = open(cache, url, origin)?;
    let mut remote = repo
        .remote_anonymous(url)
        .map_err(|e| remote_error(origin, &e))?;
    let conn = remote
        .connect_auth(Direction::Fetch, Some(callbacks()), None)
        .map_err(|e| remote_error(origin, &e))?;
    let heads = conn.list().map_err(|e| remote_error(origin, &e))?;
    let mut refs: Vec<RemoteRef> = Vec::new();
    for h in heads {
        let name = h.name().to_string();
        let commit = h.oid().to_string();
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

/// Fetches `commit` (advertised as `via`, when it is) into the cache's repository for `url`,
/// unless it is there already, and writes its tree into a staging directory.
pub fn fetch_tree(
    cache: &Cache,
    url: &str,
    commit: &str,
    via: Option<&str>,
    callbacks: Callbacks<'_>,
    limits: &Limits,
    origin: &Origin,
) -> Result<tempfile::TempDir, SourceError> {
    let oid = Oid::from_str(commit).map_err(|e| local_error(origin, "not a commit id", &e))?;
    let repo = {
        // One fetch into a repository at a time (other processes wait on the cache lock).
        let _lock = cache.lock()?;
        let repo = open(cache, url, origin)?;
        if repo.find_commit(oid).is_err() {
            fetch(&repo, url, oid, via, callbacks, limits, origin)?;
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
    let staged = cache.staging()?;
    let mut budget = Budget::default();
    write_tree(
        &repo,
        &tree,
        staged.path(),
        Path::new(""),
        limits,
        &mut budget,
        origin,
    )?;
    check_links(staged.path(), origin)?;
    Ok(staged)
}

fn fetch(
    repo: &Repository,
    url: &str,
    oid: Oid,
    via: Option<&str>,
    callbacks: Callbacks<'_>,
    limits: &Limits,
    origin: &Origin,
) -> Result<(), SourceError> {
    let over = AtomicBool::new(false);
    let run = |refspecs: &[String], depth: i32| -> Result<(), git2::Error> {
        let mut remote = repo.remote_anonymous(url)?;
        let mut cb = callbacks();
        let max = limits.max_bytes;
        let over = &over;
        cb.transfer_progress(move |p| {
            // Returning false cancels the fetch: a repository over the limit is never
            // downloaded whole.
            let ok = (p.received_bytes() as u64) <= max;
            if !ok {
                over.store(true, Ordering::Relaxed);
            }
            ok
        });
        let mut fo = FetchOptions::new();
        fo.remote_callbacks(cb);
        fo.download_tags(AutotagOption::None);
        if depth > 0 {
            fo.depth(depth);
        }
        remote.fetch(refspecs, Some(&mut fo), None)
    };
    let refspec = match via {
        Some(name) => format!("+{name}:refs/kiln/fetched"),
        None => format!("+{oid}:refs/kiln/fetched"),
    };
    let shallow = run(std::slice::from_ref(&refspec), 1);
    let too_large = || limits.too_large(origin, "the fetched repository".into(), Which::Bytes);
    if over.load(Ordering::Relaxed) {
        return Err(too_large());
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
        if over.load(Ordering::Relaxed) {
            return Err(too_large());
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

fn write_tree(
    repo: &Repository,
    tree: &git2::Tree<'_>,
    root: &Path,
    rel: &Path,
    limits: &Limits,
    budget: &mut Budget,
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
                write_tree(repo, &sub, root, &entry_rel, limits, budget, origin)?;
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
            // A gitlink (submodule): its commit is another repository's, not fetched.
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
