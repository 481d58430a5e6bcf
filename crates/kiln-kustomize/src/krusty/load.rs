//! Loading for the kustomize engine: finding and decoding a directory's kustomization file,
//! resolving the paths it names under kustomize's load restrictions, and reading resource
//! files into [`Resource`]s.
//!
//! Where it sits: the first step of `build`; everything after works on values. The
//! invariants, mirroring kustomize's `api/internal/loader/fileloader.go` with the default
//! `LoadRestrictionsRootOnly`:
//! - a file is read only if it lies in or below the root of the kustomization naming it, both
//!   lexically and after resolving symlinks (a symlink must not escape);
//! - a directory (base, component) may lie anywhere, but may not be, or contain, a
//!   kustomization root already on the way from the build root (that is a cycle);
//! - bases and components nest at most [`MAX_DEPTH`] deep;
//! - every error names the kustomization file and the entry (line) that asked for the path.
//!
//! A remote target (`crate::git::RepoSpec`) is read from the tree the caller fetched
//! ([`crate::git::RemoteTrees`]) as kustomize reads a clone (`newLoaderAtGitClone`): loading
//! is root-only inside it whatever `--load-restrictor` says, a base inside it may not lie
//! outside the repository (`errIfGitContainmentViolation`), and a target whose URL prefixes
//! one already on the way is a cycle (`errIfRepoCycle`).

use crate::error::{KustomizeError, Site};
use crate::krusty::build::Session;
use crate::types::kustomization::{KUSTOMIZATION_FILE_NAMES, Kustomization};
use kiln_base::fs::{FileSystem, dangling_link, normalize};
use kiln_base::resource::{Origin, Resource};
use kiln_base::yaml;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How deep kustomizations may nest through `resources` (bases) and `components`, the build
/// root being depth 1. kustomize has no limit of its own: Go's stack grows to 1 GB, and
/// kubectl builds a chain of 5,000 bases (in minutes). kiln builds on heap-grown stacks
/// (`build::accumulate_target`, `stacker` as in ADR 0015) and stops here, past any real
/// layout, with an error naming the kustomization file and entry (issue 39, item 9;
/// ADR 0029).
pub const MAX_DEPTH: usize = 10_000;

/// Which files a kustomization may read (kustomize's `--load-restrictor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadRestrictor {
    /// Only files in or below the kustomization's own root (kustomize's default).
    #[default]
    RootOnly,
    /// Any file (`--load-restrictor=LoadRestrictionsNone`).
    None,
}

/// Why a path could not be used; turned into a [`KustomizeError`] by [`Loader::error`]
/// with the site of the entry that named it.
#[derive(Debug)]
pub enum LoadIssue {
    Missing,
    OutsideRoot,
    SymlinkEscapes {
        target: PathBuf,
    },
    Cycle {
        chain: Vec<PathBuf>,
    },
    /// The path goes through a symbolic link (`link`) whose target (`target`, as the link
    /// names it) does not exist.
    Dangling {
        link: PathBuf,
        target: PathBuf,
    },
    /// A base or component one level past [`MAX_DEPTH`].
    TooDeep,
    Io(std::io::Error),
    /// A remote target whose URL prefixes one already on the way (kustomize's
    /// `errIfRepoCycle`): the URLs from the first such one down to the new one.
    RepoCycle {
        chain: Vec<String>,
    },
    /// A base of a fetched repository lying outside it (`errIfGitContainmentViolation`).
    OutsideRepo {
        repo: String,
    },
    /// A remote target the caller did not fetch.
    NotFetched,
    /// A remote target naming a file, or a directory outside its repository.
    RemoteNotDir {
        reason: String,
    },
}

/// A fetched repository on the way from the build root (kustomize's `repoSpec` of a loader).
#[derive(Clone)]
struct RepoFrame {
    /// The entry as written.
    raw: String,
    /// The tree's root (canonical).
    root: PathBuf,
    /// `<repository>@<commit>`.
    label: String,
}

/// The kustomization roots from the build root down to one (inclusive), shared between a
/// loader and its children: a chain of thousands of bases costs one link per level, not a
/// copy of the chain per level.
struct Chain {
    root: PathBuf,
    depth: usize,
    parent: Option<Rc<Chain>>,
}

impl Chain {
    /// The roots from this one up to the build root.
    fn iter(self: &Rc<Self>) -> impl Iterator<Item = &Path> {
        std::iter::successors(Some(&**self), |c| c.parent.as_deref()).map(|c| c.root.as_path())
    }
}

/// Whether `path` is `dir` or lies below it. `Path::starts_with` splits both into
/// components; the cycle check asks this once per level of the chain for every base.
fn is_within(path: &Path, dir: &Path) -> bool {
    let (p, d) = (
        path.as_os_str().as_encoded_bytes(),
        dir.as_os_str().as_encoded_bytes(),
    );
    p.starts_with(d) && (p.len() == d.len() || p[d.len()] == b'/' || d.last() == Some(&b'/'))
}

/// Resolves paths for one kustomization root.
#[derive(Clone)]
pub struct Loader<'a> {
    fs: &'a dyn FileSystem,
    /// The build's options and warnings.
    session: &'a Session,
    /// Canonical directory of this kustomization.
    root: PathBuf,
    restrictor: LoadRestrictor,
    /// Canonical roots from the build root down to this one, for cycle detection.
    chain: Rc<Chain>,
    /// Canonical build root; display paths are relative to it.
    display_base: PathBuf,
    /// The fetched repositories on the way from the build root, outermost first.
    repos: Vec<RepoFrame>,
}

/// What a `resources` entry names.
pub enum Entry {
    /// A file (canonical path).
    File(PathBuf),
    /// A directory: a kustomization root.
    Dir(PathBuf),
}

/// `path` relative to `base`, with `..` where needed; both must be absolute and normalized.
pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let p: Vec<_> = path.components().collect();
    let b: Vec<_> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}

impl<'a> Loader<'a> {
    /// A loader for the build root `dir`.
    pub fn new_root(
        fs: &'a dyn FileSystem,
        dir: &Path,
        session: &'a Session,
    ) -> Result<Self, KustomizeError> {
        let restrictor = session.options.load_restrictor;
        let root = fs.canonicalize(dir).map_err(|e| KustomizeError::Io {
            path: dir.display().to_string(),
            source: e,
        })?;
        if !fs.is_dir(&root) {
            return Err(KustomizeError::KustomizationMissing {
                dir: dir.display().to_string(),
            });
        }
        Ok(Loader {
            fs,
            session,
            chain: Rc::new(Chain {
                root: root.clone(),
                depth: 1,
                parent: None,
            }),
            display_base: root.clone(),
            root,
            restrictor,
            repos: Vec::new(),
        })
    }

    /// The file system.
    pub fn fs(&self) -> &'a dyn FileSystem {
        self.fs
    }

    /// The build's options and warnings.
    pub fn session(&self) -> &'a Session {
        self.session
    }

    /// Canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The load restrictor in force.
    pub fn restrictor(&self) -> LoadRestrictor {
        self.restrictor
    }

    /// A path as shown to the user: relative to the build root; inside a fetched
    /// repository, `<repository>@<commit>//<path in it>`.
    /// Where `r` is defined, for an error naming it: `` `file:line:column` `` of its
    /// `metadata.name` in the file it was read from (read again: only on an error path), or
    /// the file alone when it cannot be read (a remote base's) or the name is not found.
    pub fn origin_position(&self, r: &Resource) -> String {
        let Some(o) = &r.origin else {
            return crate::krusty::build::origin_text(r);
        };
        let found = (!o.file.contains("//"))
            .then(|| {
                self.fs
                    .read_to_string(&self.display_base.join(&o.file))
                    .ok()
            })
            .flatten()
            .and_then(|text| kiln_base::yaml::locate(&text, o.document, "/metadata/name", false));
        match found {
            Some(l) => format!("`{}:{}:{}`", o.file, l.line, l.column),
            None => crate::krusty::build::origin_text(r),
        }
    }

    pub fn display(&self, path: &Path) -> String {
        if let Some(repo) = self.repos.iter().rev().find(|r| path.starts_with(&r.root)) {
            let rel = path.strip_prefix(&repo.root).unwrap_or(path);
            return format!("{}//{}", repo.label, rel.display());
        }
        relative_to(path, &self.display_base)
            .to_string_lossy()
            .into_owned()
    }

    fn within(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    /// Resolves `rel` (relative to this root, or absolute) to an existing file, enforcing the
    /// load restrictor. Returns the canonical path.
    pub fn resolve_file(&self, rel: &str) -> Result<PathBuf, LoadIssue> {
        let lexical = normalize(&self.root.join(rel));
        let canonical = self.canonicalize(&lexical)?;
        if self.fs.is_dir(&canonical) {
            return Err(LoadIssue::Missing);
        }
        self.restrict_file(&lexical, canonical)
    }

    /// The load restrictor's checks on a file already resolved (not a directory).
    fn restrict_file(&self, lexical: &Path, canonical: PathBuf) -> Result<PathBuf, LoadIssue> {
        if self.restrictor == LoadRestrictor::RootOnly {
            if !self.within(lexical) {
                return Err(LoadIssue::OutsideRoot);
            }
            if !self.within(&canonical) {
                return Err(LoadIssue::SymlinkEscapes { target: canonical });
            }
        }
        Ok(canonical)
    }

    /// The canonical path of `lexical`; a path that names nothing is [`LoadIssue::Missing`],
    /// or [`LoadIssue::Dangling`] when a symbolic link on the way leads nowhere.
    fn canonicalize(&self, lexical: &Path) -> Result<PathBuf, LoadIssue> {
        self.fs
            .canonicalize(lexical)
            .map_err(|_| match dangling_link(self.fs, lexical) {
                Some((link, target)) => LoadIssue::Dangling { link, target },
                None => LoadIssue::Missing,
            })
    }

    /// Reads the file `rel` as text (see [`Loader::resolve_file`]).
    pub fn read_file(&self, rel: &str) -> Result<(PathBuf, String), LoadIssue> {
        let path = self.resolve_file(rel)?;
        let text = self.fs.read_to_string(&path).map_err(LoadIssue::Io)?;
        Ok((path, text))
    }

    /// What `rel` names: a file (under the restrictor's rules) or a directory.
    pub fn entry(&self, rel: &str) -> Result<Entry, LoadIssue> {
        let lexical = normalize(&self.root.join(rel));
        let canonical = self.canonicalize(&lexical)?;
        if self.fs.is_dir(&canonical) {
            Ok(Entry::Dir(canonical))
        } else {
            // Checked with the paths just resolved (not via `resolve_file`, which would
            // resolve them again: two more syscalls per listed file).
            self.restrict_file(&lexical, canonical).map(Entry::File)
        }
    }

    /// A loader for the kustomization directory `dir` (canonical, from [`Loader::entry`]).
    /// A directory equal to or above a root on the current chain is a cycle (kustomize's
    /// "candidate root contains visited root"). One past [`MAX_DEPTH`] is
    /// [`LoadIssue::TooDeep`].
    pub fn child(&self, dir: &Path) -> Result<Loader<'a>, LoadIssue> {
        if let Some(repo) = self.repos.last()
            && !dir.starts_with(&repo.root)
        {
            return Err(LoadIssue::OutsideRepo {
                repo: repo.label.clone(),
            });
        }
        self.enter(dir, self.restrictor, None)
    }

    /// A loader for the remote target `spec` (kustomize's `newLoaderAtGitClone`), read from
    /// the tree the caller fetched for it.
    pub fn remote_child(&self, spec: &crate::git::RepoSpec) -> Result<Loader<'a>, LoadIssue> {
        if let Some(i) = self.repos.iter().position(|r| r.raw.starts_with(&spec.raw)) {
            let mut chain: Vec<String> = self.repos[i..].iter().map(|r| r.raw.clone()).collect();
            chain.push(spec.raw.clone());
            return Err(LoadIssue::RepoCycle { chain });
        }
        let tree = self
            .session
            .options
            .remotes
            .get(&spec.raw)
            .ok_or(LoadIssue::NotFetched)?;
        let lexical = normalize(&tree.root.join(&spec.kust_root_path));
        let dir = self
            .fs
            .canonicalize(&lexical)
            .map_err(|_| LoadIssue::Missing)?;
        if !dir.starts_with(&tree.root) {
            return Err(LoadIssue::RemoteNotDir {
                reason: format!(
                    "refers to a directory outside the repository `{}`",
                    tree.label
                ),
            });
        }
        if !self.fs.is_dir(&dir) {
            return Err(LoadIssue::RemoteNotDir {
                reason: format!(
                    "refers to the file `{}`; expecting a directory",
                    spec.kust_root_path
                ),
            });
        }
        let frame = RepoFrame {
            raw: spec.raw.clone(),
            root: tree.root.clone(),
            label: tree.label.clone(),
        };
        // A clone is always loaded root-only (kustomize's `RestrictionRootOnly` there).
        self.enter(&dir, LoadRestrictor::RootOnly, Some(frame))
    }

    fn enter(
        &self,
        dir: &Path,
        restrictor: LoadRestrictor,
        repo: Option<RepoFrame>,
    ) -> Result<Loader<'a>, LoadIssue> {
        if self.chain.iter().any(|seen| is_within(seen, dir)) {
            // From the outermost root inside `dir` down, as kustomize names the cycle.
            let mut chain: Vec<PathBuf> = self.chain.iter().map(Path::to_path_buf).collect();
            chain.reverse();
            let first = chain.iter().position(|seen| is_within(seen, dir));
            chain.drain(..first.unwrap_or(0));
            chain.push(dir.to_path_buf());
            return Err(LoadIssue::Cycle { chain });
        }
        if self.chain.depth >= MAX_DEPTH {
            return Err(LoadIssue::TooDeep);
        }
        let mut repos = self.repos.clone();
        repos.extend(repo);
        Ok(Loader {
            fs: self.fs,
            session: self.session,
            root: dir.to_path_buf(),
            restrictor,
            chain: Rc::new(Chain {
                root: dir.to_path_buf(),
                depth: self.chain.depth + 1,
                parent: Some(self.chain.clone()),
            }),
            display_base: self.display_base.clone(),
            repos,
        })
    }

    /// Turns a [`LoadIssue`] for `path` into a diagnostic at `site`; `what` names the kind
    /// of entry (`resource`, `patch`, …).
    pub fn error(
        &self,
        issue: LoadIssue,
        site: Site,
        what: &'static str,
        path: &str,
    ) -> KustomizeError {
        match issue {
            LoadIssue::Missing => KustomizeError::file_missing(site, what, path),
            LoadIssue::OutsideRoot => {
                KustomizeError::outside_root(site, path, self.display(&self.root))
            }
            LoadIssue::SymlinkEscapes { target } => KustomizeError::symlink_escapes(
                site,
                path,
                target.display().to_string(),
                self.display(&self.root),
            ),
            LoadIssue::Cycle { chain } => {
                let chain: Vec<String> = chain
                    .iter()
                    .map(|p| format!("`{}`", self.display(p)))
                    .collect();
                KustomizeError::base_cycle(site, chain.join(" → "))
            }
            LoadIssue::Dangling { link, target } => KustomizeError::dangling_link(
                site,
                what,
                path,
                self.display(&link),
                target.display().to_string(),
            ),
            LoadIssue::TooDeep => KustomizeError::too_deep(site, what, path, MAX_DEPTH),
            LoadIssue::Io(source) => KustomizeError::Io {
                path: path.to_string(),
                source,
            },
            LoadIssue::RepoCycle { chain } => {
                let chain: Vec<String> = chain.iter().map(|u| format!("`{u}`")).collect();
                KustomizeError::base_cycle(site, format!("remote {}", chain.join(" → ")))
            }
            LoadIssue::OutsideRepo { repo } => KustomizeError::invalid(
                site,
                format!("{what} `{path}` lies outside the fetched repository `{repo}`"),
                "bases in kustomizations found in fetched repositories must be within the repository (kustomize's rule)",
            ),
            LoadIssue::NotFetched => KustomizeError::unsupported(
                site,
                what,
                format!("remote target `{path}` was not fetched"),
                "kiln render fetches remote bases (and pins them in kiln.lock); `kiln kustomize` builds offline: vendor the base and reference it by path",
            ),
            LoadIssue::RemoteNotDir { reason } => KustomizeError::invalid(
                site,
                format!("remote target `{path}` {reason}"),
                "the part after `//` names the kustomization's folder in the repository",
            ),
        }
    }
}

/// A decoded kustomization file with its text (for spans) and display name.
pub struct KustFile {
    pub kustomization: Kustomization,
    /// The parsed document (for pointer lookups).
    pub value: Value,
    pub text: String,
    /// Path relative to the build root, e.g. `overlays/prod/kustomization.yaml`.
    pub display: String,
    /// Positions of the file's nodes, built on first use and shared by every site, so
    /// locating N entries costs one pass over the file, not N.
    pub spans: std::cell::OnceCell<yaml::SpanIndex>,
}

impl KustFile {
    fn locate(&self, pointer: &str, key: bool) -> Site {
        let index = self
            .spans
            .get_or_init(|| yaml::SpanIndex::build(&self.text));
        Site::located(
            &self.display,
            &self.text,
            0,
            pointer,
            key,
            index.find(0, pointer, key),
        )
    }
    /// A diagnostic site for the field at `pointer` (its value).
    pub fn site(&self, pointer: &str) -> Site {
        self.locate(pointer, false)
    }
    /// A diagnostic site for the key of the field at `pointer`.
    pub fn key_site(&self, pointer: &str) -> Site {
        self.locate(pointer, true)
    }
}

/// Finds, reads and decodes the kustomization file of `ldr`'s root.
///
/// Errors: no or several kustomization files; invalid YAML; unknown fields or wrong types
/// (located at the field); a wrong `kind`/`apiVersion`.
/// kustomize `CheckEmpty`: the kustomization decodes to Go's zero value apart from its type
/// metadata. Go's zero values: a missing or `null` field, `""`, `0`, `false`; an empty list or
/// map (`resources: []`) is *not* zero.
fn is_empty_kustomization(value: &Value) -> bool {
    value.as_object().is_some_and(|m| {
        m.iter().all(|(k, v)| {
            k == "apiVersion"
                || k == "kind"
                || match v {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    Value::Bool(b) => !b,
                    Value::Number(n) => n.as_f64() == Some(0.0),
                    Value::Array(_) | Value::Object(_) => false,
                }
        })
    })
}

pub fn load_kustomization(ldr: &Loader<'_>) -> Result<KustFile, KustomizeError> {
    let fs = ldr.fs();
    let found: Vec<&str> = KUSTOMIZATION_FILE_NAMES
        .iter()
        .copied()
        .filter(|n| fs.is_file(&ldr.root().join(n)))
        .collect();
    let name = match found.as_slice() {
        [] => {
            // A kustomization file that is a link leading nowhere is not "missing": name it
            // (issue 39, item 19).
            for name in KUSTOMIZATION_FILE_NAMES {
                let path = ldr.root().join(name);
                if let Some((link, target)) = dangling_link(fs, &path) {
                    return Err(KustomizeError::KustomizationDangling {
                        link: ldr.display(&link),
                        target: target.display().to_string(),
                    });
                }
            }
            // An unreadable directory looks empty to `is_file`: say what really failed.
            if let Err(source) = fs.read_dir(ldr.root()) {
                return Err(KustomizeError::Io {
                    path: ldr.display(ldr.root()),
                    source,
                });
            }
            // The build root shows as `.` relative to itself: name it in full instead.
            let shown = ldr.display(ldr.root());
            let dir = if shown.is_empty() || shown == "." {
                ldr.root().display().to_string()
            } else {
                shown
            };
            return Err(KustomizeError::KustomizationMissing { dir });
        }
        [one] => *one,
        many => {
            return Err(KustomizeError::KustomizationAmbiguous {
                dir: ldr.display(ldr.root()),
                names: many.join(", "),
            });
        }
    };
    let path = ldr.root().join(name);
    let display = ldr.display(&path);
    let text = fs.read_to_string(&path).map_err(|e| KustomizeError::Io {
        path: display.clone(),
        source: e,
    })?;
    let mut docs = yaml::parse_stream(&display, &text).map_err(Box::new)?;
    let value = if docs.is_empty() {
        Value::Object(Default::default())
    } else {
        docs.swap_remove(0)
    };
    if is_empty_kustomization(&value) {
        return Err(KustomizeError::invalid(
            Site::new(&display, &text, 0, "", false),
            // kubectl's words (`Kustomization.CheckEmpty`), whatever the file is called.
            "kustomization.yaml is empty".to_string(),
            "list `resources`, `components`, generators or transformers; a kustomization with nothing but apiVersion and kind builds nothing, and kubectl rejects it",
        ));
    }
    let kustomization = Kustomization::from_value(&value).map_err(|e| {
        let unknown = e.message.starts_with("unknown field");
        KustomizeError::invalid(
            Site::new(&display, &text, 0, &e.pointer, unknown),
            e.message,
            "see the kustomization reference (kustomize v5.5); kiln rejects unknown fields as kustomize does",
        )
    })?;
    let kf = KustFile {
        kustomization,
        value,
        text,
        display,
        spans: std::cell::OnceCell::new(),
    };
    if let Err(e) = kf.kustomization.check_kind() {
        return Err(KustomizeError::invalid(
            kf.site(&e.pointer),
            e.message,
            "use `kind: Kustomization` or `kind: Component` with its apiVersion",
        ));
    }
    Ok(kf)
}

/// Reads the resources of one file: every non-empty document, `kind: List` flattened into
/// its `items` (as kustomize does). `display` names the file in errors and origins.
///
/// Errors: invalid YAML; a document that is not a mapping or lacks `kind` / `metadata.name`.
pub fn parse_resources(display: &str, text: &str) -> Result<Vec<Resource>, KustomizeError> {
    let docs = yaml::parse_stream(display, text).map_err(Box::new)?;
    // Fields written as `key:` (gap c34): kept beside each resource for the strategic merge.
    let bare = yaml::bare_empty_fields(text, &docs);
    let bare_in = |doc: usize, prefix: &str| -> Vec<String> {
        bare.iter()
            .filter(|(d, _)| *d == doc)
            .filter_map(|(_, p)| p.strip_prefix(prefix))
            .filter(|p| p.starts_with('/'))
            .map(str::to_string)
            .collect()
    };
    let mut out = Vec::with_capacity(docs.len());
    for (i, doc) in docs.into_iter().enumerate() {
        let origin = Some(Origin {
            file: display.to_string(),
            document: i,
        });
        let invalid = |msg: &str| {
            KustomizeError::resource_invalid(Site::new(display, text, i, "", false), msg)
        };
        if !doc.is_object() {
            return Err(invalid("a resource document must be a mapping"));
        }
        // kustomize expands `kind: List` (and `*List` with items) into its items.
        let is_list = doc
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
            && doc.get("items").is_some_and(Value::is_array);
        if is_list {
            if let Value::Object(mut map) = doc
                && let Some(Value::Array(items)) = map.remove("items")
            {
                for (j, item) in items.into_iter().enumerate() {
                    let mut r = checked(item, origin.clone(), &invalid)?;
                    r.meta.bare_empty_fields = bare_in(i, &format!("/items/{j}"));
                    out.push(r);
                }
            }
            continue;
        }
        let mut r = checked(doc, origin, &invalid)?;
        r.meta.bare_empty_fields = bare_in(i, "");
        out.push(r);
    }
    Ok(out)
}

fn checked(
    value: Value,
    origin: Option<Origin>,
    invalid: &dyn Fn(&str) -> KustomizeError,
) -> Result<Resource, KustomizeError> {
    if !value.is_object() {
        return Err(invalid("a list item must be a mapping"));
    }
    if value
        .get("kind")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(invalid("missing `kind`"));
    }
    let has_name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty())
        || value
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .is_some();
    if !has_name {
        return Err(invalid("missing `metadata.name`"));
    }
    Ok(Resource::new(value, origin))
}

/// Whether an entry of a field that takes no remote target (`transformers`, values files,
/// `openapi`) looks like one (a URL, a git or GitHub shorthand), which is refused.
pub fn is_remote(path: &str) -> bool {
    path.contains("://")
        || path.starts_with("git@")
        || path.starts_with("github.com/")
        || path.starts_with("gitlab.com/")
        || path.starts_with("bitbucket.org/")
}

#[cfg(test)]
mod tests {
    /// A build root without a kustomization names the directory, not `.`.
    #[test]
    fn a_missing_root_kustomization_names_the_directory() {
        let mut fs = kiln_base::fs::MemFs::new();
        fs.add_file("/work/app/base/kustomization.yaml", "resources: []\n");
        let err =
            crate::build(&fs, Path::new("/work/app"), &crate::BuildOptions::default()).unwrap_err();
        assert_eq!(err.to_string(), "no kustomization file in `/work/app`");
    }

    use super::*;
    use kiln_base::fs::MemFs;

    /// One base past [`MAX_DEPTH`] is refused at the entry that names it, in the file that
    /// holds it, on a test thread's 2 MiB stack (issue 39, item 9; a chain of 1,500 bases
    /// overflowed the stack before). The 3,000-deep chain against kubectl is in
    /// `tests/kustomize.rs`.
    #[test]
    fn a_chain_one_past_the_depth_limit_is_refused_naming_the_file() {
        let mut fs = MemFs::new();
        for i in 0..=MAX_DEPTH {
            fs.add_file(
                format!("/c/b{i}/kustomization.yaml"),
                format!("resources:\n- ../b{}\n", i + 1),
            );
        }
        fs.add_file(
            format!("/c/b{}/kustomization.yaml", MAX_DEPTH + 1),
            "resources: []\n",
        );
        let err = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                crate::build(&fs, Path::new("/c/b0"), &crate::BuildOptions::default())
                    .map(|_| ())
                    .unwrap_err()
            })
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(matches!(err, KustomizeError::TooDeep { .. }), "{err}");
        let last = MAX_DEPTH - 1;
        assert!(
            err.to_string().starts_with(&format!(
                "../b{last}/kustomization.yaml:2:3 (field `resources[0]`): resource `../b{MAX_DEPTH}` nests kustomizations more than {MAX_DEPTH} deep"
            )),
            "{err}"
        );
    }

    /// A link that leads nowhere is named as such (issue 39, item 19): as the kustomization
    /// file of the root or of a base, as a `resources` entry, as a generator's file, and on
    /// the way to one.
    #[test]
    fn dangling_links_are_named_not_missing() {
        let mut fs = MemFs::new();
        fs.add_symlink("/d/root/kustomization.yaml", "nowhere.yaml")
            .add_file(
                "/d/base/kustomization.yaml",
                "resources: [sub, gone.yaml]\n",
            )
            .add_symlink("/d/base/sub/kustomization.yaml", "../k.yaml")
            .add_file("/d/res/kustomization.yaml", "resources: [gone.yaml]\n")
            .add_symlink("/d/res/gone.yaml", "nowhere.yaml")
            .add_file(
                "/d/gen/kustomization.yaml",
                "configMapGenerator:\n- name: c\n  files: [conf/a.txt, conf/gone.txt]\n",
            )
            .add_file("/d/gen/conf/a.txt", "a")
            .add_symlink("/d/gen/conf/gone.txt", "../../away/gone.txt")
            .add_file(
                "/d/via/kustomization.yaml",
                "configMapGenerator:\n- name: c\n  files: [conf/a.txt]\n",
            )
            .add_symlink("/d/via/conf", "missing-dir");
        for (root, code, text) in [
            (
                "root",
                "kiln::kustomize::dangling_link",
                "`kustomization.yaml` is a symbolic link to `nowhere.yaml`, which does not exist",
            ),
            (
                "base",
                "kiln::kustomize::dangling_link",
                "`sub/kustomization.yaml` is a symbolic link to `../k.yaml`, which does not exist",
            ),
            (
                "res",
                "kiln::kustomize::dangling_link",
                "kustomization.yaml:1:13 (field `resources[0]`): resource `gone.yaml`: `gone.yaml` is a symbolic link to `nowhere.yaml`, which does not exist",
            ),
            (
                "gen",
                "kiln::kustomize::transformer_failed",
                "`conf/gone.txt` is a symbolic link to `../../away/gone.txt`, which does not exist",
            ),
            (
                "via",
                "kiln::kustomize::transformer_failed",
                "`conf` is a symbolic link to `missing-dir`, which does not exist",
            ),
        ] {
            let dir = Path::new("/d").join(root);
            let err = crate::build(&fs, &dir, &crate::BuildOptions::default()).unwrap_err();
            let code_of = miette::Diagnostic::code(&err).map(|c| c.to_string());
            assert_eq!(code_of.as_deref(), Some(code), "{root}: {err}");
            assert!(err.to_string().contains(text), "{root}: {err}");
        }
    }

    fn session(load_restrictor: LoadRestrictor) -> Session {
        Session::new(crate::BuildOptions {
            load_restrictor,
            ..Default::default()
        })
    }

    fn fs() -> MemFs {
        let mut fs = MemFs::new();
        fs.add_file("/w/app/kustomization.yaml", "resources: [cm.yaml]\n")
            .add_file(
                "/w/app/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            )
            .add_file("/w/secret.yaml", "x")
            .add_symlink("/w/app/link.yaml", "../secret.yaml")
            .add_symlink("/w/app/inner.yaml", "cm.yaml")
            .add_file("/w/app/sub/kustomization.yaml", "");
        fs
    }

    /// A directory that exists but cannot be listed or opened (mode 000 for a non-root user).
    #[derive(Debug)]
    struct Unreadable(MemFs);

    impl FileSystem for Unreadable {
        fn read(&self, _: &Path) -> std::io::Result<Vec<u8>> {
            Err(std::io::ErrorKind::PermissionDenied.into())
        }
        fn is_dir(&self, path: &Path) -> bool {
            self.0.is_dir(path)
        }
        fn is_file(&self, _: &Path) -> bool {
            false
        }
        fn read_dir(&self, _: &Path) -> std::io::Result<Vec<PathBuf>> {
            Err(std::io::ErrorKind::PermissionDenied.into())
        }
        fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
            self.0.canonicalize(path)
        }
    }

    #[test]
    fn an_unreadable_directory_is_not_reported_as_missing_a_kustomization() {
        let fs = Unreadable(fs());
        let s_ldr = session(LoadRestrictor::RootOnly);
        let ldr = Loader::new_root(&fs, Path::new("/w/app"), &s_ldr).unwrap();
        let Err(err) = load_kustomization(&ldr) else {
            panic!("an unreadable directory loads");
        };
        assert!(matches!(err, KustomizeError::Io { .. }), "{err}");
        assert!(err.to_string().contains("ermission denied"), "{err}");
    }

    #[test]
    fn root_only_refuses_outside_files_and_escaping_symlinks() {
        let fs = fs();
        let s_ldr = session(LoadRestrictor::RootOnly);
        let ldr = Loader::new_root(&fs, Path::new("/w/app"), &s_ldr).unwrap();
        assert!(ldr.resolve_file("cm.yaml").is_ok());
        assert_eq!(
            ldr.resolve_file("inner.yaml").unwrap(),
            PathBuf::from("/w/app/cm.yaml")
        );
        assert!(matches!(
            ldr.resolve_file("../secret.yaml"),
            Err(LoadIssue::OutsideRoot)
        ));
        assert!(matches!(
            ldr.resolve_file("link.yaml"),
            Err(LoadIssue::SymlinkEscapes { .. })
        ));
        assert!(matches!(
            ldr.resolve_file("nope.yaml"),
            Err(LoadIssue::Missing)
        ));

        let s_open = session(LoadRestrictor::None);

        let open = Loader::new_root(&fs, Path::new("/w/app"), &s_open).unwrap();
        assert!(open.resolve_file("../secret.yaml").is_ok());
        assert!(open.resolve_file("link.yaml").is_ok());
    }

    #[test]
    fn child_detects_cycles() {
        let fs = fs();
        let s_ldr = session(LoadRestrictor::RootOnly);
        let ldr = Loader::new_root(&fs, Path::new("/w/app/sub"), &s_ldr).unwrap();
        // The parent directory contains the current root: a cycle.
        assert!(matches!(
            ldr.child(Path::new("/w/app")),
            Err(LoadIssue::Cycle { .. })
        ));
        let s_root = session(LoadRestrictor::RootOnly);
        let root = Loader::new_root(&fs, Path::new("/w/app"), &s_root).unwrap();
        let sub = root.child(Path::new("/w/app/sub")).unwrap();
        assert_eq!(
            sub.display(&PathBuf::from("/w/app/sub/x.yaml")),
            "sub/x.yaml"
        );
        assert!(matches!(
            sub.child(Path::new("/w/app/sub")),
            Err(LoadIssue::Cycle { .. })
        ));
    }

    #[test]
    fn kustomization_errors_point_at_the_field() {
        let mut fs = MemFs::new();
        fs.add_file(
            "/k/kustomization.yaml",
            "resources:\n- a.yaml\nnamePrefx: x-\n",
        );
        let s_ldr = session(LoadRestrictor::RootOnly);
        let ldr = Loader::new_root(&fs, Path::new("/k"), &s_ldr).unwrap();
        let err = load_kustomization(&ldr).err().unwrap();
        let msg = err.to_string();
        assert!(msg.starts_with("kustomization.yaml:3:1"), "{msg}");
        assert!(msg.contains("namePrefx"), "{msg}");

        fs.add_file("/k/Kustomization", "");
        let s_ldr = session(LoadRestrictor::RootOnly);
        let ldr = Loader::new_root(&fs, Path::new("/k"), &s_ldr).unwrap();
        let err = load_kustomization(&ldr).err().unwrap();
        assert!(matches!(err, KustomizeError::KustomizationAmbiguous { .. }));
    }

    #[test]
    fn resources_expand_lists_and_require_kind_and_name() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n";
        let rs = parse_resources("l.yaml", text).unwrap();
        assert_eq!(rs.iter().map(|r| r.name()).collect::<Vec<_>>(), ["a", "b"]);
        let err = parse_resources(
            "x.yaml",
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("metadata.name"), "{err}");
        assert!(parse_resources("x.yaml", "- a\n").is_err());
    }

    #[test]
    fn resources_carry_their_bare_empty_fields() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  data:\n    x:\n    y: null\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: b}\n  binaryData:\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations:\n    n:\n";
        let rs = parse_resources("l.yaml", text).unwrap();
        let bare: Vec<&[String]> = rs.iter().map(|r| &r.meta.bare_empty_fields[..]).collect();
        assert_eq!(
            bare,
            [
                &["/data/x".to_string()][..],
                &["/binaryData".to_string()][..],
                &["/metadata/annotations/n".to_string()][..],
            ]
        );
        let plain = parse_resources(
            "p.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata: {x: null}\n",
        )
        .unwrap();
        assert!(plain[0].meta.bare_empty_fields.is_empty());
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to(Path::new("/a/b/c"), Path::new("/a/d")),
            PathBuf::from("../b/c")
        );
        assert_eq!(
            relative_to(Path::new("/a"), Path::new("/a")),
            PathBuf::from(".")
        );
        assert!(is_remote("https://github.com/x/y//base?ref=v1"));
        assert!(is_remote("github.com/x/y/base"));
        assert!(!is_remote("../base"));
    }
}
