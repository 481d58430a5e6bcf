//! The [`Fetcher`]: one run's sources, under the lock's rules (Cargo's, applied to a
//! platform's sources):
//!
//! - a source the lock pins is taken from the cache when its tree is there and its digest
//!   holds; otherwise fetched at the pinned commit or digest and checked against the lock;
//! - a source the lock does not list is resolved and added, unless `--locked` (then it is an
//!   error) or `--offline` (which never touches the network);
//! - `kiln update` re-resolves the sources it names (all by default);
//! - each distinct source is fetched once per run, however many components use it.

use crate::archive::{Limits, extract_tgz};
use crate::cache::Cache;
use crate::error::{Origin, SourceError};
use crate::git::{self, Callbacks};
use crate::git_http;
use crate::helm_repo;
use crate::http::Http;
use crate::lock::{LockEntry, LockFile, LockKey};
use crate::oci;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Mutex;

/// What kind of source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A Git repository at a ref.
    Git,
    /// A chart in a Helm HTTP repository.
    Helm,
    /// A chart in an OCI registry.
    Oci,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Git => "git",
            Kind::Helm => "helm",
            Kind::Oci => "oci",
        }
    }
}

/// One source a platform needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub kind: Kind,
    /// The repository, chart repository or `oci://` reference.
    pub url: String,
    /// The chart's name (Helm repositories; empty otherwise).
    pub chart: String,
    /// The ref (Git), or the version or constraint (charts).
    pub requested: String,
    /// What needs it, for errors (`component cart (project shop)`).
    pub needed_by: String,
    /// Names `kiln update NAME` selects it by (component instances); its URL and chart name
    /// select it too.
    pub names: Vec<String>,
    /// Git: kustomize's clone options (a remote base's `?submodules=` and `?timeout=`).
    pub git: git::Options,
}

impl Request {
    pub fn key(&self) -> LockKey {
        LockKey {
            kind: self.kind.as_str().to_string(),
            url: self.url.clone(),
            chart: self.chart.clone(),
            requested: self.requested.clone(),
            submodules: self.git.submodules,
        }
    }

    fn origin(&self) -> Origin {
        let requested = if self.chart.is_empty() {
            self.requested.clone()
        } else {
            format!("{} {}", self.chart, self.requested)
        };
        let mut o = Origin::new(self.kind.as_str(), &self.url, requested.trim());
        o.needed_by = (!self.needed_by.is_empty()).then(|| self.needed_by.clone());
        o
    }
}

/// A source on disk: its lock entry and its verified tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub entry: LockEntry,
    /// The tree's root in the cache.
    pub root: PathBuf,
    /// For a chart, the chart's directory (the archive's one top-level directory).
    pub chart_dir: Option<PathBuf>,
}

/// How a run may use the lock and the network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mode {
    /// `--locked`: the lock must already hold every source.
    pub locked: bool,
    /// `--offline`: only the cache.
    pub offline: bool,
    /// `kiln update`: re-resolve these sources (`Some(empty)`: all of them).
    pub update: Option<BTreeSet<String>>,
}

/// One run's fetcher.
pub struct Fetcher<'a> {
    cache: Cache,
    http: Http,
    callbacks: Callbacks<'a>,
    limits: Limits,
    mode: Mode,
    old: LockFile,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    lock: LockFile,
    /// Every source on disk this run, with whether it was resolved anew (not taken as the
    /// old lock pinned it): a probe's pinned source is fetched again once `kiln update`
    /// selects it, a resolved one never.
    done: BTreeMap<LockKey, (Fetched, bool)>,
    /// The Git sources resolved through a tag (`refs/tags/*`) in this run.
    git_tags: BTreeSet<LockKey>,
    /// Every source that failed this run, with its error: a later request for it (another
    /// instance of one component, a second base from one repository) gets the same answer at
    /// once, never a second wait for the same dead server.
    failed: BTreeMap<LockKey, SourceError>,
}

impl std::fmt::Debug for Fetcher<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("cache", &self.cache)
            .field("mode", &self.mode)
            .finish()
    }
}

impl<'a> Fetcher<'a> {
    pub fn new(
        cache: Cache,
        http: Http,
        callbacks: Callbacks<'a>,
        mode: Mode,
        lock: LockFile,
    ) -> Fetcher<'a> {
        let limits = *http.limits();
        Fetcher {
            cache,
            http,
            callbacks,
            limits,
            mode,
            old: lock,
            state: Mutex::new(State::default()),
        }
    }

    /// The lock as this run leaves it: every source fetched, and (when `keep_unused`, for a
    /// run over part of the platform) the old entries no fetch replaced.
    pub fn lock_file(&self, keep_unused: bool) -> LockFile {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut lock = if keep_unused {
            self.old.clone()
        } else {
            LockFile::default()
        };
        for e in state.lock.entries.values() {
            lock.insert(e.clone());
        }
        lock
    }

    /// How the lock this run leaves differs from the one it read, per source, with the tags
    /// that moved (`kiln update`'s report).
    pub fn changes(&self, new: &LockFile) -> Vec<crate::lock::Change> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.old.changes(new, &state.git_tags)
    }

    fn selected_for_update(&self, req: &Request) -> bool {
        match &self.mode.update {
            None => false,
            Some(names) if names.is_empty() => true,
            Some(names) => {
                names.contains(&req.url)
                    || (!req.chart.is_empty() && names.contains(&req.chart))
                    || req.names.iter().any(|n| names.contains(n))
            }
        }
    }

    /// `kiln update`'s selection, once it is known: a source [`Fetcher::probe`] took as the
    /// lock pinned it is re-resolved by the next [`Fetcher::fetch`] that it selects.
    pub fn set_update(&mut self, update: Option<BTreeSet<String>>) {
        self.mode.update = update;
    }

    /// The source `req`, on disk and verified.
    pub fn fetch(&self, req: &Request) -> Result<Fetched, SourceError> {
        self.fetch_as(req, true)
    }

    /// The source `req` as the lock pins it (never re-resolved for `kiln update`), kept out
    /// of the lock this run leaves until a [`Fetcher::fetch`] asks for it: what the caller
    /// reads before it knows what the run fetches (an unnamed component's `metadata.name`).
    /// The run's own fetch of the same source reuses it (each source is fetched once).
    pub fn probe(&self, req: &Request) -> Result<Fetched, SourceError> {
        self.fetch_as(req, false)
    }

    fn fetch_as(&self, req: &Request, run: bool) -> Result<Fetched, SourceError> {
        let key = req.key();
        let update = run && self.selected_for_update(req);
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((done, renewed)) = state.done.get(&key).cloned()
                && (renewed || !update)
            {
                if run {
                    state.lock.insert(done.entry.clone());
                }
                return Ok(done);
            }
            if let Some(e) = state.failed.get(&key) {
                let mut e = e.clone();
                if let Some(o) = e.origin_mut() {
                    o.needed_by = req.origin().needed_by;
                }
                return Err(e);
            }
        }
        let fetched = self.fetch_anew(req, key.clone(), run, update);
        if let Err(e) = &fetched {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.failed.insert(key, e.clone());
        }
        fetched
    }

    /// [`Fetcher::fetch_as`] for a source not on disk yet this run.
    fn fetch_anew(
        &self,
        req: &Request,
        key: LockKey,
        run: bool,
        update: bool,
    ) -> Result<Fetched, SourceError> {
        let origin = req.origin();
        let pinned = self.old.get(&key).filter(|_| !update).cloned();
        let renewed = pinned.is_none();
        let fetched = match pinned {
            Some(entry) => self.pinned(req, entry, &origin)?,
            None => {
                if self.mode.offline {
                    return Err(SourceError::NotCached {
                        origin: Box::new(origin),
                    });
                }
                if self.mode.locked {
                    return Err(SourceError::LockOutOfDate {
                        origin: Box::new(origin),
                        problem: if self.mode.update.is_some() {
                            "would change".into()
                        } else {
                            "does not list it".into()
                        },
                    });
                }
                self.resolve(req, &origin)?
            }
        };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if run {
            state.lock.insert(fetched.entry.clone());
        }
        state.done.insert(key, (fetched.clone(), renewed));
        Ok(fetched)
    }

    /// A source the lock pins: from the cache, else fetched at the pinned point and checked.
    fn pinned(
        &self,
        req: &Request,
        entry: LockEntry,
        origin: &Origin,
    ) -> Result<Fetched, SourceError> {
        if let Some(root) = self.cache.verified_tree(&entry.digest, origin)? {
            return self.done(req, entry, root, origin);
        }
        if self.mode.offline {
            return Err(SourceError::NotCached {
                origin: Box::new(origin.clone()),
            });
        }
        let staged = match req.kind {
            Kind::Git => {
                let pinned = |refs: &[git::RemoteRef]| {
                    let via = refs
                        .iter()
                        .find(|r| r.commit == entry.resolved)
                        .map(|r| r.name.clone());
                    Ok((entry.resolved.clone(), via))
                };
                self.git(req, origin, pinned)?.1
            }
            Kind::Helm => {
                let versions = helm_repo::versions(&self.http, &req.url, &req.chart, origin)?;
                let v = helm_repo::select(&versions, &entry.version, origin)?;
                let data = helm_repo::download(&self.http, &req.chart, v, origin)?;
                self.check_archive(&data, &entry, origin)?;
                self.extract(&data, origin)?
            }
            Kind::Oci => {
                let r = oci::Reference::parse(&req.url, origin)?;
                let (manifest, _) = oci::manifest(&self.http, &r, &entry.resolved, origin)?;
                let data = oci::chart_layer(&self.http, &r, &manifest, origin)?;
                self.extract(&data, origin)?
            }
        };
        let (digest, root) = self.cache.store_tree(staged, origin)?;
        if digest != entry.digest {
            return Err(SourceError::DigestMismatch {
                origin: Box::new(origin.clone()),
                what: "the fetched content".into(),
                expected: entry.digest.clone(),
                actual: digest,
                by: "kiln.lock",
                help: "the server's content at the pinned commit or digest differs from what was locked; it was not used. If the change is expected, `kiln update` the source".into(),
            });
        }
        self.done(req, entry, root, origin)
    }

    fn check_archive(
        &self,
        data: &[u8],
        entry: &LockEntry,
        origin: &Origin,
    ) -> Result<(), SourceError> {
        let actual = kiln_base::digest::sha256_tagged(data);
        if actual != entry.resolved {
            return Err(SourceError::DigestMismatch {
                origin: Box::new(origin.clone()),
                what: format!("the archive of version {}", entry.version),
                expected: entry.resolved.clone(),
                actual,
                by: "kiln.lock",
                help: "the repository now serves another archive under the locked version; it was not used. If the change is expected, `kiln update` the source".into(),
            });
        }
        Ok(())
    }

    /// A source resolved anew (not locked, or `kiln update`).
    fn resolve(&self, req: &Request, origin: &Origin) -> Result<Fetched, SourceError> {
        let (version, resolved, staged) = match req.kind {
            Kind::Git => {
                let resolve = |refs: &[git::RemoteRef]| {
                    let (commit, via) = git::resolve(refs, &req.requested, origin)?;
                    if via.as_deref().is_some_and(|v| v.starts_with("refs/tags/")) {
                        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                        state.git_tags.insert(req.key());
                    }
                    Ok((commit, via))
                };
                let (commit, staged) = self.git(req, origin, resolve)?;
                (String::new(), commit, staged)
            }
            Kind::Helm => {
                let versions = helm_repo::versions(&self.http, &req.url, &req.chart, origin)?;
                let v = helm_repo::select(&versions, &req.requested, origin)?;
                let data = helm_repo::download(&self.http, &req.chart, v, origin)?;
                let staged = self.extract(&data, origin)?;
                (
                    v.version.clone(),
                    kiln_base::digest::sha256_tagged(&data),
                    staged,
                )
            }
            Kind::Oci => {
                let r = oci::Reference::parse(&req.url, origin)?;
                let tags = oci::tags(&self.http, &r, origin)?;
                let tag =
                    helm_repo::select_by(&tags, |t| t.as_str(), &req.requested, origin)?.clone();
                let (manifest, digest) = oci::manifest(&self.http, &r, &tag, origin)?;
                let data = oci::chart_layer(&self.http, &r, &manifest, origin)?;
                (tag, digest, self.extract(&data, origin)?)
            }
        };
        let (digest, root) = self.cache.store_tree(staged, origin)?;
        let entry = LockEntry {
            kind: req.kind.as_str().to_string(),
            url: req.url.clone(),
            chart: req.chart.clone(),
            requested: req.requested.clone(),
            submodules: req.git.submodules,
            version,
            resolved,
            digest,
        };
        self.done(req, entry, root, origin)
    }

    /// One Git source: its refs listed, the commit `pick` chooses among them fetched, its
    /// tree staged; under the source's `?timeout=`. Over smart HTTP, a server whose answers
    /// libgit2 cannot read (ended by closing the connection) is spoken to through kiln's
    /// own HTTP client instead ([`git_http`], ADR 0040).
    fn git(
        &self,
        req: &Request,
        origin: &Origin,
        pick: impl FnOnce(&[git::RemoteRef]) -> Result<(String, Option<String>), SourceError>,
    ) -> Result<(String, tempfile::TempDir), SourceError> {
        let deadline = git::Deadline::start(req.git.timeout);
        let d = deadline.as_ref();
        let (refs, carried) = match git::list_refs(&req.url, self.callbacks, d, origin) {
            Ok(refs) => (refs, None),
            // libgit2 says "cannot be reached" of a server that answered, but not with a
            // repository's refs: kiln asks again and says what it answered, or carries the
            // fetch when libgit2 only failed to read the answer.
            Err(e @ SourceError::Unreachable { .. }) => {
                match git_http::probe(&self.http, &req.url, origin) {
                    git_http::Answer::CloseDelimited => {}
                    git_http::Answer::Refused(answered) => return Err(answered),
                    git_http::Answer::Unknown => return Err(e),
                }
                let url = git_http::carried(&req.url);
                let refs = git_http::with_client(&self.http, || {
                    git::list_refs(&url, self.callbacks, d, origin)
                })?;
                (refs, Some(url))
            }
            Err(e) => return Err(e),
        };
        let (commit, via) = pick(&refs)?;
        let url = carried.as_deref().unwrap_or(&req.url);
        let fetch = || git::fetch_tree(&self.session(req), url, &commit, via.as_deref(), d, origin);
        let staged = match carried {
            Some(_) => git_http::with_client(&self.http, fetch)?,
            None => fetch()?,
        };
        Ok((commit, staged))
    }

    fn session(&self, req: &Request) -> git::Session<'_, 'a> {
        git::Session {
            cache: &self.cache,
            callbacks: self.callbacks,
            limits: &self.limits,
            options: req.git,
        }
    }

    fn extract(&self, data: &[u8], origin: &Origin) -> Result<tempfile::TempDir, SourceError> {
        let staged = self.cache.staging()?;
        extract_tgz(data, staged.path(), &self.limits, origin)?;
        Ok(staged)
    }

    fn done(
        &self,
        req: &Request,
        entry: LockEntry,
        root: PathBuf,
        origin: &Origin,
    ) -> Result<Fetched, SourceError> {
        let chart_dir = match req.kind {
            Kind::Git => None,
            Kind::Helm | Kind::Oci => Some(crate::cache::chart_dir(&root, origin)?),
        };
        Ok(Fetched {
            entry,
            root,
            chart_dir,
        })
    }
}

#[cfg(test)]
mod tests {
    //! Every fetch path against a real server on 127.0.0.1 (crate::testing).
    use super::*;
    use crate::http::Credentials;
    use crate::testing;
    use std::path::Path;
    use std::time::Duration;

    fn no_callbacks() -> git2::RemoteCallbacks<'static> {
        git2::RemoteCallbacks::new()
    }

    struct Env {
        cache: tempfile::TempDir,
    }

    impl Env {
        fn new() -> Env {
            Env {
                cache: tempfile::tempdir().unwrap(),
            }
        }

        fn fetcher(&self, mode: Mode, lock: LockFile) -> Fetcher<'static> {
            self.fetcher_with(mode, lock, Credentials::default(), Limits::default())
        }

        fn fetcher_with(
            &self,
            mode: Mode,
            lock: LockFile,
            creds: Credentials,
            limits: Limits,
        ) -> Fetcher<'static> {
            Fetcher::new(
                Cache::new(self.cache.path()),
                Http::new(creds, limits),
                &no_callbacks,
                mode,
                lock,
            )
        }
    }

    fn git_req(url: &str, requested: &str) -> Request {
        Request {
            kind: Kind::Git,
            url: url.into(),
            chart: String::new(),
            requested: requested.into(),
            needed_by: "component cart (project shop)".into(),
            names: vec!["cart".into()],
            git: git::Options::default(),
        }
    }

    fn chart_req(kind: Kind, url: &str, chart: &str, requested: &str) -> Request {
        Request {
            kind,
            url: url.into(),
            chart: chart.into(),
            requested: requested.into(),
            needed_by: "component web (project shop)".into(),
            names: vec!["web".into()],
            git: git::Options::default(),
        }
    }

    fn read(p: &Path) -> String {
        std::fs::read_to_string(p).unwrap()
    }

    fn app(base: &Path) -> Vec<String> {
        testing::app_repo(
            base,
            "cart.git",
            &[
                (
                    &[("deploy/component.yaml", "v: 1\n"), ("deploy/link", "")],
                    Some("v1.0.0"),
                ),
                (&[("deploy/component.yaml", "v: 2\n")], None),
            ],
        )
    }

    /// The app repository behind `git daemon`: the directory, the server, the URL, the commits.
    fn served_app() -> (tempfile::TempDir, testing::Server, String, Vec<String>) {
        let repos = tempfile::tempdir().unwrap();
        let ids = app(repos.path());
        let daemon = testing::git_daemon(repos.path());
        let url = format!("git://127.0.0.1:{}/cart.git", daemon.port);
        (repos, daemon, url, ids)
    }

    /// A Git server that refuses kiln's (absent) credentials: the help names Git's
    /// credentials, never the registries' variables (the newcomer was told to set
    /// `KILN_REGISTRY_<HOST>` for a Git repository).
    #[test]
    fn a_git_login_failure_names_gits_credentials() {
        let repos = tempfile::tempdir().unwrap();
        app(repos.path());
        let http = testing::git_http_with_login(repos.path(), "alice:pw");
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let err = f
            .fetch(&git_req(&format!("{}/cart.git", http.http()), "main"))
            .unwrap_err();
        let help = miette::Diagnostic::help(&err).map(|h| h.to_string());
        assert!(matches!(err, SourceError::Auth { .. }), "{err}");
        let help = help.unwrap_or_default();
        assert!(help.contains("KILN_GIT_USERNAME"), "{help}");
        assert!(!help.contains("KILN_REGISTRY_"), "{help}");
    }

    /// Smart HTTP from a server that ends each answer by closing the connection (HTTP/1.0,
    /// no Content-Length: `python3 -m http.server --cgi` running `git http-backend`), which
    /// libgit2 reads as empty: fetched through kiln's own HTTP client (ADR 0040), a branch
    /// and a tag, shallow, then the pinned commit again from a fresh cache.
    #[test]
    fn smart_http_ended_by_closing_the_connection_is_fetched() {
        let repos = tempfile::tempdir().unwrap();
        let ids = app(repos.path());
        let http = testing::git_http_close_delimited(repos.path());
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let url = format!("{}/cart.git", http.http());
        let main = f.fetch(&git_req(&url, "main")).unwrap();
        assert_eq!(main.entry.resolved, ids[1]);
        assert_eq!(read(&main.root.join("deploy/component.yaml")), "v: 2\n");
        let tag = f.fetch(&git_req(&url, "v1.0.0")).unwrap();
        assert_eq!(tag.entry.resolved, ids[0]);
        assert_eq!(read(&tag.root.join("deploy/component.yaml")), "v: 1\n");
        let lock = f.lock_file(false);
        std::fs::remove_dir_all(Cache::new(env.cache.path()).root()).unwrap();
        let again = env.fetcher(Mode::default(), lock);
        assert_eq!(again.fetch(&git_req(&url, "main")).unwrap(), main);
        // A missing ref is named as over any other transport.
        let err = f.fetch(&git_req(&url, "v9.9.9")).unwrap_err();
        assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
    }

    #[test]
    fn git_daemon_and_smart_http_fetch_a_ref_once_then_serve_from_the_lock_and_cache() {
        let repos = tempfile::tempdir().unwrap();
        let ids = app(repos.path());
        let daemon = testing::git_daemon(repos.path());
        let http = testing::git_http(repos.path());
        for url in [
            format!("git://127.0.0.1:{}/cart.git", daemon.port),
            format!("{}/cart.git", http.http()),
        ] {
            let env = Env::new();
            let f = env.fetcher(Mode::default(), LockFile::default());
            let main = f.fetch(&git_req(&url, "main")).unwrap();
            assert_eq!(main.entry.resolved, ids[1], "{url}");
            assert_eq!(read(&main.root.join("deploy/component.yaml")), "v: 2\n");
            assert!(!main.root.join(".git").exists());
            // An annotated tag is peeled to its commit; a commit id stands for itself.
            let tag = f.fetch(&git_req(&url, "v1.0.0")).unwrap();
            assert_eq!(tag.entry.resolved, ids[0]);
            assert_eq!(read(&tag.root.join("deploy/component.yaml")), "v: 1\n");
            let by_id = f.fetch(&git_req(&url, &ids[0])).unwrap();
            assert_eq!(by_id.entry.digest, tag.entry.digest);
            let lock = f.lock_file(false);
            assert_eq!(lock.entries.len(), 3);
            // Locked and offline: the same trees, without a server.
            let locked = env.fetcher(
                Mode {
                    locked: true,
                    offline: true,
                    update: None,
                },
                lock.clone(),
            );
            assert_eq!(locked.fetch(&git_req(&url, "main")).unwrap(), main);
            assert_eq!(locked.lock_file(true), lock);
        }
    }

    #[test]
    fn a_pinned_commit_is_fetched_even_after_the_branch_moved() {
        let (_repos, _daemon, url, ids) = served_app();
        let env = Env::new();
        let first = env.fetcher(Mode::default(), LockFile::default());
        let got = first.fetch(&git_req(&url, "main")).unwrap();
        let mut lock = first.lock_file(false);
        // Pin `main` to the older commit, as a lock written before the push would.
        let mut entry = lock.entries.values().next().unwrap().clone();
        let old = env
            .fetcher(Mode::default(), LockFile::default())
            .fetch(&git_req(&url, &ids[0]))
            .unwrap();
        entry.resolved = ids[0].clone();
        entry.digest = old.entry.digest.clone();
        lock.insert(entry);
        std::fs::remove_dir_all(Cache::new(env.cache.path()).root()).unwrap();
        let again = env.fetcher(
            Mode {
                locked: true,
                ..Mode::default()
            },
            lock.clone(),
        );
        let pinned = again.fetch(&git_req(&url, "main")).unwrap();
        assert_eq!(pinned.entry.resolved, ids[0]);
        assert_eq!(read(&pinned.root.join("deploy/component.yaml")), "v: 1\n");
        // `kiln update cart` moves it to the branch's head.
        let update = env.fetcher(
            Mode {
                update: Some(["cart".to_string()].into()),
                ..Mode::default()
            },
            lock,
        );
        assert_eq!(
            update.fetch(&git_req(&url, "main")).unwrap().entry,
            got.entry
        );
    }

    #[test]
    fn git_bad_input_is_named_clearly() {
        let (_repos, _daemon, url, _) = served_app();
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        // A missing ref lists the nearest.
        let err = f.fetch(&git_req(&url, "v1.0.1")).unwrap_err();
        let help = miette::Diagnostic::help(&err).unwrap().to_string();
        assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
        assert!(
            help.contains("`v1.0.0`") && err.to_string().contains("component cart"),
            "{err}: {help}"
        );
        // An unreachable host names the source, the component and the URL, no credentials.
        let dead = format!("http://kiln:s3cret@127.0.0.1:{}/cart.git", free_port());
        let err = f.fetch(&git_req(&dead, "main")).unwrap_err();
        let shown = err.to_string();
        assert!(matches!(err, SourceError::Unreachable { .. }), "{shown}");
        assert!(
            shown.contains("127.0.0.1")
                && shown.contains("component cart")
                && !shown.contains("s3cret"),
            "{shown}"
        );
        // --locked with a source the lock lacks; --offline with nothing cached.
        let locked = env.fetcher(
            Mode {
                locked: true,
                ..Mode::default()
            },
            LockFile::default(),
        );
        assert!(matches!(
            locked.fetch(&git_req(&url, "main")),
            Err(SourceError::LockOutOfDate { .. })
        ));
        let offline = env.fetcher(
            Mode {
                offline: true,
                ..Mode::default()
            },
            LockFile::default(),
        );
        assert!(matches!(
            offline.fetch(&git_req(&url, "main")),
            Err(SourceError::NotCached { .. })
        ));
    }

    /// A server that answers, but not with a Git repository, is not "unreachable": a 404,
    /// an empty 200, a web page and a repository served only over git's dumb HTTP are each
    /// told as what the server answered, with a help, never with the URL's credentials.
    #[test]
    fn a_server_that_answers_without_a_repository_says_what_it_answered() {
        let root = tempfile::tempdir().unwrap();
        for (repo, refs) in [
            ("empty.git", ""),
            ("page.git", "<html><body>Sign in</body></html>\n"),
        ] {
            std::fs::create_dir_all(root.path().join(repo).join("info")).unwrap();
            std::fs::write(root.path().join(repo).join("info/refs"), refs).unwrap();
        }
        // A bare repository as static files: `info/refs` of `git update-server-info`.
        app(root.path());
        let server = testing::static_http(root.path(), None);
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let base = format!("http://kiln:s3cret@127.0.0.1:{}", server.port);
        let shown = format!("http://kiln:***@127.0.0.1:{}", server.port);
        for (repo, said) in [
            ("nope.git", "no such repository at"),
            ("empty.git", "is not a Git repository"),
            ("page.git", "is not a Git repository"),
            ("cart.git", "dumb HTTP"),
        ] {
            let err = f
                .fetch(&git_req(&format!("{base}/{repo}"), "main"))
                .unwrap_err();
            let text = err.to_string();
            let help = miette::Diagnostic::help(&err)
                .map(|h| h.to_string())
                .unwrap_or_default();
            let code = miette::Diagnostic::code(&err).map(|c| c.to_string());
            assert_eq!(
                code.as_deref(),
                Some("kiln::source::no_repository"),
                "{repo}: {text}"
            );
            assert!(text.contains(said), "{repo}: {text}");
            assert!(
                text.contains(&format!("{shown}/{repo}")) && text.contains("component cart"),
                "{repo}: {text}"
            );
            assert!(!text.contains("cannot be reached"), "{repo}: {text}");
            assert!(
                !format!("{text}{help}").contains("s3cret"),
                "{repo}: {text}"
            );
            assert!(!help.is_empty(), "{repo}: no help");
        }
        let err = f
            .fetch(&git_req(&format!("{base}/nope.git"), "main"))
            .unwrap_err();
        assert!(err.to_string().contains("404 Not Found"), "{err}");
        let err = f
            .fetch(&git_req(&format!("{base}/empty.git"), "main"))
            .unwrap_err();
        assert!(
            err.to_string().contains("200 OK with an empty body"),
            "{err}"
        );
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn a_tampered_cache_or_a_changed_server_is_refused() {
        let (_repos, _daemon, url, _) = served_app();
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let got = f.fetch(&git_req(&url, "main")).unwrap();
        let lock = f.lock_file(false);
        std::fs::write(got.root.join("deploy/component.yaml"), "evil: 1\n").unwrap();
        let again = env.fetcher(Mode::default(), lock.clone());
        let err = again.fetch(&git_req(&url, "main")).unwrap_err();
        assert!(matches!(err, SourceError::CacheTampered { .. }), "{err}");
        // The lock's digest disagreeing with what the server sends for the commit.
        std::fs::remove_dir_all(Cache::new(env.cache.path()).root()).unwrap();
        let mut bad = lock.clone();
        let mut e = bad.entries.values().next().unwrap().clone();
        e.digest = format!("sha256:{}", "0".repeat(64));
        bad.insert(e);
        let err = env
            .fetcher(Mode::default(), bad)
            .fetch(&git_req(&url, "main"))
            .unwrap_err();
        assert!(
            matches!(
                err,
                SourceError::DigestMismatch {
                    by: "kiln.lock",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn links_out_of_a_repository_and_size_limits_refuse_it() {
        let repos = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        testing::git(work.path(), &["init", "-q"]);
        std::fs::create_dir(work.path().join("deploy")).unwrap();
        std::os::unix::fs::symlink(
            "../../../etc/passwd",
            work.path().join("deploy/values.yaml"),
        )
        .unwrap();
        testing::git(work.path(), &["add", "-A"]);
        testing::git(work.path(), &["commit", "-q", "-m", "evil"]);
        testing::git(
            repos.path(),
            &[
                "clone",
                "-q",
                "--bare",
                &work.path().display().to_string(),
                "evil.git",
            ],
        );
        testing::app_repo(
            repos.path(),
            "big.git",
            &[(
                &[("a", &"x".repeat(200_000)), ("b", &"y".repeat(200_000))],
                None,
            )],
        );
        let daemon = testing::git_daemon(repos.path());
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let evil = format!("git://127.0.0.1:{}/evil.git", daemon.port);
        let err = f.fetch(&git_req(&evil, "main")).unwrap_err();
        assert!(
            matches!(err, SourceError::UnsafeArchive { .. })
                && err.to_string().contains("out of the repository"),
            "{err}"
        );
        let big = format!("git://127.0.0.1:{}/big.git", daemon.port);
        let small = Limits {
            max_bytes: 100_000,
            ..Limits::default()
        };
        let err = env
            .fetcher_with(
                Mode::default(),
                LockFile::default(),
                Credentials::default(),
                small,
            )
            .fetch(&git_req(&big, "main"))
            .unwrap_err();
        assert!(matches!(err, SourceError::TooLarge { .. }), "{err}");
    }

    /// A remote base's request: kustomize's clone options.
    fn base_req(url: &str, submodules: bool, timeout: Option<Duration>) -> Request {
        Request {
            needed_by: "remote base `app` (in kust/kustomization.yaml)".into(),
            git: git::Options {
                submodules,
                timeout,
            },
            ..git_req(url, "main")
        }
    }

    /// Issue 33 item 3, `?submodules=`: each gitlink's commit is fetched (relative URL,
    /// commit at no branch's tip) and written in its place; `submodules=false` leaves it out
    /// (another lock entry, another digest); the submodule's commit is pinned through the
    /// superproject's, and its files are verified with the rest.
    #[test]
    fn a_remote_base_s_submodules_are_fetched_pinned_and_verified() {
        let repos = tempfile::tempdir().unwrap();
        let lib = testing::app_repo(
            repos.path(),
            "lib.git",
            &[
                (&[("lib.yaml", "v: 1\n")], None),
                (&[("lib.yaml", "v: 2\n")], None),
            ],
        );
        testing::repo_with_submodules(
            repos.path(),
            "app.git",
            &[(
                &[("deploy/k.yaml", "k: 1\n")],
                &[("deploy/lib", "../lib.git", &lib[0])],
            )],
        );
        let daemon = testing::git_daemon(repos.path());
        let url = format!("git://127.0.0.1:{}/app.git", daemon.port);
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let with = f.fetch(&base_req(&url, true, None)).unwrap();
        assert_eq!(read(&with.root.join("deploy/lib/lib.yaml")), "v: 1\n");
        assert!(with.entry.submodules);
        let without = f.fetch(&base_req(&url, false, None)).unwrap();
        assert!(!without.root.join("deploy/lib/lib.yaml").exists());
        assert_eq!(read(&without.root.join("deploy/k.yaml")), "k: 1\n");
        assert_ne!(with.entry.digest, without.entry.digest);
        let lock = f.lock_file(false);
        assert_eq!(lock.entries.len(), 2);
        assert_eq!(lock.to_text().matches("submodules = true").count(), 1);
        assert_eq!(LockFile::parse("kiln.lock", &lock.to_text()).unwrap(), lock);

        // The superproject moves its submodule to the library's next commit.
        let work = tempfile::tempdir().unwrap();
        let bare = repos.path().join("app.git").display().to_string();
        testing::git(work.path(), &["clone", "-q", &bare, "."]);
        let link = format!("160000,{},deploy/lib", lib[1]);
        testing::git(work.path(), &["update-index", "--cacheinfo", &link]);
        testing::git(work.path(), &["commit", "-q", "-m", "bump"]);
        testing::git(work.path(), &["push", "-q", "origin", "HEAD:main"]);
        // Locked: the old commit's submodule, from the cache and then fetched anew.
        let pinned = env.fetcher(Mode::default(), lock.clone());
        let got = pinned.fetch(&base_req(&url, true, None)).unwrap();
        assert_eq!(got.entry, with.entry);
        assert_eq!(read(&got.root.join("deploy/lib/lib.yaml")), "v: 1\n");
        std::fs::remove_dir_all(Cache::new(env.cache.path()).root().join("trees")).unwrap();
        let got = env
            .fetcher(Mode::default(), lock.clone())
            .fetch(&base_req(&url, true, None))
            .unwrap();
        assert_eq!(got.entry, with.entry);
        assert_eq!(read(&got.root.join("deploy/lib/lib.yaml")), "v: 1\n");
        // Updated: the new commit, and its submodule's new files (never the cached old ones).
        let update = env.fetcher(
            Mode {
                update: Some(BTreeSet::new()),
                ..Mode::default()
            },
            lock,
        );
        let moved = update.fetch(&base_req(&url, true, None)).unwrap();
        assert_ne!(moved.entry.resolved, with.entry.resolved);
        assert_ne!(moved.entry.digest, with.entry.digest);
        assert_eq!(read(&moved.root.join("deploy/lib/lib.yaml")), "v: 2\n");
        // A submodule's file changed in the cache is refused with the rest of the tree.
        std::fs::write(moved.root.join("deploy/lib/lib.yaml"), "v: 1\n").unwrap();
        let err = env
            .fetcher(Mode::default(), update.lock_file(false))
            .fetch(&base_req(&url, true, None))
            .unwrap_err();
        assert!(matches!(err, SourceError::CacheTampered { .. }), "{err}");

        // A submodule kiln does not fetch (a local path, as git refuses by default), and one
        // .gitmodules does not name: clear errors naming the submodule and the base.
        testing::repo_with_submodules(
            repos.path(),
            "local.git",
            &[(&[("a", "a\n")], &[("lib", "/srv/lib.git", &lib[0])])],
        );
        let local = format!("git://127.0.0.1:{}/local.git", daemon.port);
        let err = f.fetch(&base_req(&local, true, None)).unwrap_err();
        let help = miette::Diagnostic::help(&err).unwrap().to_string();
        assert!(
            err.to_string()
                .contains("submodule at `lib` names `/srv/lib.git`")
                && err.to_string().contains("local.git")
                && help.contains("protocol.file.allow"),
            "{err}: {help}"
        );
        assert!(f.fetch(&base_req(&local, false, None)).is_ok());
    }

    /// Runs `f` on a thread, failing the test when it has not finished within a minute (a
    /// fetch that hangs).
    fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the fetch did not end: it hung")
    }

    /// What the cache holds: its trees and its repositories.
    fn cached(env: &Env) -> Vec<String> {
        let root = Cache::new(env.cache.path()).root().to_path_buf();
        ["trees", "git"]
            .iter()
            .flat_map(|d| std::fs::read_dir(root.join(d)).into_iter().flatten())
            .map(|e| e.unwrap().path().display().to_string())
            .collect()
    }

    /// Issue 33 item 3, `?timeout=`: a server that accepts and never answers (git daemon's
    /// protocol and smart HTTP), and one that lists its refs and then stalls the fetch: each
    /// fails at the timeout, naming the URL without its credentials, and stores nothing.
    #[test]
    fn a_stalled_server_times_out_naming_the_base_and_storing_nothing() {
        let silent = testing::silent();
        let repos = tempfile::tempdir().unwrap();
        testing::app_repo(repos.path(), "app.git", &[(&[("a.yaml", "a: 1\n")], None)]);
        let slow = testing::git_http_slow(repos.path(), 30);
        for (url, what) in [
            (
                format!("git://127.0.0.1:{}/app.git", silent.port),
                "listing its refs",
            ),
            (
                format!("http://kiln:s3cret@127.0.0.1:{}/app.git", silent.port),
                "listing its refs",
            ),
            (
                format!("http://kiln:s3cret@127.0.0.1:{}/app.git", slow.port),
                "the fetch",
            ),
        ] {
            let env = Env::new();
            let f = env.fetcher(Mode::default(), LockFile::default());
            let req = base_req(&url, true, Some(Duration::from_secs(2)));
            let err = bounded(move || f.fetch(&req).map(|_| ()).unwrap_err());
            let shown = err.to_string();
            assert!(matches!(err, SourceError::Timeout { .. }), "{shown}");
            assert!(
                shown.contains(&format!("{what} did not finish within 2s"))
                    && shown.contains("/app.git")
                    && shown.contains("remote base `app`")
                    && !shown.contains("s3cret"),
                "{shown}"
            );
            assert_eq!(cached(&env), Vec::<String>::new(), "{url}");
        }
    }

    /// A source that failed is not fetched again in the same run: the second request (another
    /// instance, another base from the same repository) gets the first one's error at once,
    /// naming what needs it this time, and the dead server sees no second connection.
    #[test]
    fn a_failed_source_is_not_fetched_again_in_one_run() {
        let silent = testing::silent();
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let url = format!("http://127.0.0.1:{}/app.git", silent.port);
        let first = base_req(&url, true, Some(Duration::from_secs(1)));
        let mut second = first.clone();
        second.needed_by = "remote base `app` (in other/kustomization.yaml)".into();
        let (a, b, after_first) = bounded(move || {
            let a = f.fetch(&first).map(|_| ()).unwrap_err();
            let after_first = silent.accepted.load(std::sync::atomic::Ordering::Relaxed);
            let b = f.fetch(&second).map(|_| ()).unwrap_err();
            let after_second = silent.accepted.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(
                after_first, after_second,
                "the second request connected again"
            );
            (a, b, after_first)
        });
        assert!(after_first >= 1, "the first request never connected");
        assert!(matches!(a, SourceError::Timeout { .. }), "{a}");
        assert!(matches!(b, SourceError::Timeout { .. }), "{b}");
        assert!(b.to_string().contains("other/kustomization.yaml"), "{b}");
    }

    fn charts() -> Vec<(&'static str, &'static str, Vec<u8>)> {
        ["1.0.0", "1.2.0", "1.2.5", "2.0.0"]
            .into_iter()
            .map(|v| {
                (
                    "web",
                    v,
                    testing::chart_tgz("web", v, &[("templates/cm.yaml", "kind: ConfigMap\n")]),
                )
            })
            .collect()
    }

    #[test]
    fn a_helm_repository_resolves_constraints_with_and_without_basic_auth() {
        let root = tempfile::tempdir().unwrap();
        testing::helm_repo(root.path(), &charts());
        let open = testing::static_http(root.path(), None);
        let closed = testing::static_http(root.path(), Some("alice:pw"));
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let got = f
            .fetch(&chart_req(Kind::Helm, &open.http(), "web", "^1.2"))
            .unwrap();
        assert_eq!(got.entry.version, "1.2.5");
        assert_eq!(
            got.entry.resolved,
            kiln_base::digest::sha256_tagged(&charts()[2].2)
        );
        assert!(read(&got.chart_dir.unwrap().join("Chart.yaml")).contains("version: 1.2.5"));
        // Behind basic auth: refused without credentials, naming the host, never a password.
        let err = f
            .fetch(&chart_req(Kind::Helm, &closed.http(), "web", "1.x"))
            .unwrap_err();
        assert!(matches!(err, SourceError::Auth { .. }), "{err}");
        assert!(err.to_string().contains("component web"), "{err}");
        let host = crate::http::host_of(&closed.http()).to_string();
        let var = crate::http::variable_for(&host);
        let creds = Credentials::new(None, [(var.as_str(), "alice:pw")]);
        let f = env.fetcher_with(
            Mode::default(),
            LockFile::default(),
            creds,
            Limits::default(),
        );
        assert_eq!(
            f.fetch(&chart_req(Kind::Helm, &closed.http(), "web", "1.x"))
                .unwrap()
                .entry
                .version,
            "1.2.5"
        );
        let wrong = Credentials::new(None, [(var.as_str(), "alice:nope")]);
        let f = env.fetcher_with(
            Mode::default(),
            LockFile::default(),
            wrong,
            Limits::default(),
        );
        let err = f
            .fetch(&chart_req(Kind::Helm, &closed.http(), "web", "1.x"))
            .unwrap_err();
        assert!(
            matches!(err, SourceError::Auth { .. }) && !err.to_string().contains("nope"),
            "{err}"
        );
    }

    /// The index's digest binds it to the archive, whatever YAML makes of it: 64 zeros,
    /// unquoted, is an integer to YAML and still the digest to Helm (sigs.k8s.io/yaml keeps a
    /// string field's text), so an archive of another sha256 is refused, nothing cached, and
    /// the error names the chart, its version, the archive's URL and both digests
    /// (newcomer 5's repro 03).
    #[test]
    fn an_archive_differing_from_a_numeric_index_digest_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let tgz = testing::chart_tgz("redis-lite", "1.2.0", &[]);
        std::fs::write(root.path().join("redis-lite-1.2.0.tgz"), &tgz).unwrap();
        let zeros = "0".repeat(64);
        std::fs::write(
            root.path().join("index.yaml"),
            format!("apiVersion: v1\nentries:\n  redis-lite:\n  - {{name: redis-lite, version: 1.2.0, urls: [redis-lite-1.2.0.tgz], digest: {zeros}}}\n"),
        )
        .unwrap();
        let server = testing::static_http(root.path(), None);
        let env = Env::new();
        let err = env
            .fetcher(Mode::default(), LockFile::default())
            .fetch(&chart_req(
                Kind::Helm,
                &server.http(),
                "redis-lite",
                "1.2.0",
            ))
            .unwrap_err();
        assert!(matches!(err, SourceError::DigestMismatch { .. }), "{err}");
        let text = err.to_string();
        let actual = kiln_base::digest::sha256_hex(&tgz);
        for part in [
            "chart `redis-lite` version 1.2.0",
            &format!("{}/redis-lite-1.2.0.tgz", server.http()),
            &format!("sha256:{zeros}"),
            &format!("sha256:{actual}"),
        ] {
            assert!(text.contains(part), "no `{part}` in: {text}");
        }
    }

    #[test]
    fn a_helm_repository_s_bad_answers_are_refused() {
        let root = tempfile::tempdir().unwrap();
        testing::helm_repo(root.path(), &charts());
        let server = testing::static_http(root.path(), None);
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let err = f
            .fetch(&chart_req(Kind::Helm, &server.http(), "web", "^3"))
            .unwrap_err();
        assert!(matches!(err, SourceError::NoMatch { .. }), "{err}");
        let err = f
            .fetch(&chart_req(Kind::Helm, &server.http(), "web", "1.2.4"))
            .unwrap_err();
        assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
        let err = f
            .fetch(&chart_req(Kind::Helm, &server.http(), "wbe", "1.0.0"))
            .unwrap_err();
        assert!(
            miette::Diagnostic::help(&err)
                .unwrap()
                .to_string()
                .contains("`web`"),
            "{err}"
        );
        // Locked at 1.2.5; the server then serves other bytes under that name.
        let got = f
            .fetch(&chart_req(Kind::Helm, &server.http(), "web", "~1.2"))
            .unwrap();
        let lock = f.lock_file(false);
        let evil = testing::chart_tgz("web", "1.2.5", &[("templates/cm.yaml", "kind: Secret\n")]);
        std::fs::write(root.path().join("web-1.2.5.tgz"), &evil).unwrap();
        std::fs::remove_dir_all(got.root).unwrap();
        let err = env
            .fetcher(Mode::default(), lock)
            .fetch(&chart_req(Kind::Helm, &server.http(), "web", "~1.2"))
            .unwrap_err();
        assert!(matches!(err, SourceError::DigestMismatch { .. }), "{err}");
        // The index's own digest disagreeing with the archive.
        let env2 = Env::new();
        let err = env2
            .fetcher(Mode::default(), LockFile::default())
            .fetch(&chart_req(Kind::Helm, &server.http(), "web", "1.2.5"))
            .unwrap_err();
        assert!(
            matches!(
                err,
                SourceError::DigestMismatch {
                    by: "the repository's index.yaml",
                    ..
                }
            ),
            "{err}"
        );
        // A hostile archive.
        let hostile =
            crate::archive::tests::tgz(&[("web/../../evil", tar::EntryType::Regular, b"x", "")]);
        testing::helm_repo(root.path(), &[("web", "9.0.0", hostile)]);
        let err = env2
            .fetcher(Mode::default(), LockFile::default())
            .fetch(&chart_req(Kind::Helm, &server.http(), "web", "9.0.0"))
            .unwrap_err();
        assert!(matches!(err, SourceError::UnsafeArchive { .. }), "{err}");
    }

    fn push_all(server: &testing::Server, creds: Credentials) {
        let http = Http::new(creds, Limits::default());
        let url = format!("oci://127.0.0.1:{}/charts/web", server.port);
        let origin = Origin::new("oci", &url, "push");
        let r = oci::Reference::parse(&url, &origin).unwrap();
        for (_, version, data) in charts() {
            let config = format!("{{\"name\":\"web\",\"version\":\"{version}\"}}");
            oci::push(&http, &r, version, &data, config.as_bytes(), &origin).unwrap();
        }
    }

    #[test]
    fn an_oci_registry_serves_charts_anonymously_and_with_htpasswd() {
        let Some(open) = testing::registry(None) else {
            return;
        };
        let Some(closed) = testing::registry(Some(("bob", "pw"))) else {
            return;
        };
        push_all(&open, Credentials::default());
        let host = format!("127.0.0.1:{}", closed.port);
        let docker = format!(
            "{{\"auths\": {{\"{host}\": {{\"auth\": \"{}\"}}}}}}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "bob:pw")
        );
        let creds = Credentials::new(Some(&docker), []);
        push_all(&closed, creds.clone());
        let env = Env::new();
        let f = env.fetcher(Mode::default(), LockFile::default());
        let url = format!("oci://127.0.0.1:{}/charts/web", open.port);
        let got = f.fetch(&chart_req(Kind::Oci, &url, "", "1.x")).unwrap();
        assert_eq!(got.entry.version, "1.2.5");
        assert!(got.entry.resolved.starts_with("sha256:"));
        assert!(read(&got.chart_dir.unwrap().join("Chart.yaml")).contains("version: 1.2.5"));
        let closed_url = format!("oci://{host}/charts/web");
        let err = f
            .fetch(&chart_req(Kind::Oci, &closed_url, "", "2.0.0"))
            .unwrap_err();
        assert!(matches!(err, SourceError::Auth { .. }), "{err}");
        let f = env.fetcher_with(
            Mode::default(),
            LockFile::default(),
            creds,
            Limits::default(),
        );
        let got = f
            .fetch(&chart_req(Kind::Oci, &closed_url, "", "2.0.0"))
            .unwrap();
        assert_eq!(got.entry.version, "2.0.0");
        // Missing tag lists the nearest; a constraint matching nothing says so.
        let err = f
            .fetch(&chart_req(Kind::Oci, &url, "", "1.2.6"))
            .unwrap_err();
        assert!(
            miette::Diagnostic::help(&err)
                .unwrap()
                .to_string()
                .contains("`1.2.5`"),
            "{err}"
        );
        assert!(matches!(
            f.fetch(&chart_req(Kind::Oci, &url, "", ">5")),
            Err(SourceError::NoMatch { .. })
        ));
        // Locked: fetched again by the manifest's digest, which the registry checks.
        f.fetch(&chart_req(Kind::Oci, &url, "", "1.x")).unwrap();
        let lock = f.lock_file(false);
        std::fs::remove_dir_all(Cache::new(env.cache.path()).root()).unwrap();
        let again = env.fetcher(
            Mode {
                locked: true,
                ..Mode::default()
            },
            lock,
        );
        assert_eq!(
            again
                .fetch(&chart_req(Kind::Oci, &url, "", "1.x"))
                .unwrap()
                .entry
                .version,
            "1.2.5"
        );
    }

    /// Every file under `dir`, read as text.
    fn all_text(dir: &Path) -> String {
        let mut out = String::new();
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    todo.push(p);
                } else if let Ok(bytes) = std::fs::read(&p) {
                    out.push_str(&String::from_utf8_lossy(&bytes));
                }
            }
        }
        out
    }

    /// Issue 33 item 2: Docker's bearer-token exchange against Debian's docker-registry with
    /// `auth: token:` and a token server started here (its key made now): charts pushed and
    /// pulled with credentials from Docker's config.json and from `KILN_REGISTRY_*`; wrong or
    /// missing credentials are refused naming the host, never the password; no token is
    /// ever shown, cached or locked.
    #[test]
    fn an_oci_registry_behind_a_token_server() {
        let Some(reg) = testing::token_registry("carol", "t0ken-pw") else {
            return;
        };
        let host = format!("127.0.0.1:{}", reg.registry.port);
        let docker = format!(
            "{{\"auths\": {{\"{host}\": {{\"auth\": \"{}\"}}}}}}",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "carol:t0ken-pw")
        );
        push_all(&reg.registry, Credentials::new(Some(&docker), []));
        let url = format!("oci://{host}/charts/web");
        let var = crate::http::variable_for(&host);
        for creds in [
            Credentials::new(Some(&docker), []),
            Credentials::new(None, [(var.as_str(), "carol:t0ken-pw")]),
        ] {
            let env = Env::new();
            let f = env.fetcher_with(
                Mode::default(),
                LockFile::default(),
                creds,
                Limits::default(),
            );
            let got = f.fetch(&chart_req(Kind::Oci, &url, "", "^1.2")).unwrap();
            assert_eq!(got.entry.version, "1.2.5");
            assert!(read(&got.chart_dir.unwrap().join("Chart.yaml")).contains("version: 1.2.5"));
            // Locked: fetched again by the manifest's digest, with a token again.
            let lock = f.lock_file(false);
            std::fs::remove_dir_all(Cache::new(env.cache.path()).root()).unwrap();
            let again = env.fetcher_with(
                Mode::default(),
                lock.clone(),
                Credentials::new(Some(&docker), []),
                Limits::default(),
            );
            again
                .fetch(&chart_req(Kind::Oci, &url, "", "^1.2"))
                .unwrap();
            let issued = reg.tokens.issued.lock().unwrap().clone();
            assert!(!issued.is_empty());
            let kept = format!("{}{}", lock.to_text(), all_text(env.cache.path()));
            for t in &issued {
                assert!(!kept.contains(t.as_str()), "a token was kept");
            }
        }
        let env = Env::new();
        let wrong = Credentials::new(None, [(var.as_str(), "carol:wrong-pw")]);
        for creds in [wrong, Credentials::default()] {
            let f = env.fetcher_with(
                Mode::default(),
                LockFile::default(),
                creds,
                Limits::default(),
            );
            let err = f
                .fetch(&chart_req(Kind::Oci, &url, "", "2.0.0"))
                .unwrap_err();
            let shown = format!("{err} {}", miette::Diagnostic::help(&err).unwrap());
            assert!(matches!(err, SourceError::Auth { .. }), "{shown}");
            assert!(
                shown.contains("127.0.0.1")
                    && shown.contains("component web")
                    && !shown.contains("wrong-pw")
                    && !shown.contains("t0ken-pw"),
                "{shown}"
            );
            for t in reg.tokens.issued.lock().unwrap().iter() {
                assert!(!shown.contains(t.as_str()));
            }
        }
    }
}
