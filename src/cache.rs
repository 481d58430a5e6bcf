//! The render cache: a content-addressed store of emitted BuildPlans, so that re-rendering
//! unchanged input costs a lookup instead of a render (issue 13, part 3). Part of the write
//! stage's I/O boundary: entries are read through the [`FileSystem`] trait and written here,
//! nowhere else.
//!
//! **Key.** A SHA-256 over everything a BuildPlan's output depends on: kiln's version and this
//! cache's format, the output layout, the BuildPlan itself (layered parameters, resolved
//! generators, transformers and images, names, namespace), and the component's inputs as
//! loaded (its spec, the resources of its `files:` generators, the texts its
//! `configMapGenerator`/`secretGenerator` entries read).
//!
//! **Reads.** What a render reads beyond that (kustomization trees, anywhere they point to;
//! charts) is not known before it runs. A [`Recorder`] wraps the [`FileSystem`] during the
//! render and notes each read and its result's digest; the entry stores that list, and a
//! lookup replays it: an entry whose reads give a different result is stale and ignored, like
//! a compiler's dependency file.
//!
//! **Entries.** `<dir>/<first two hex digits>/<key>.json`: a line with the HMAC-SHA256 of the
//! body under the [`CacheKey`], then the body (JSON: the key, the reads, the emitted files).
//! An entry whose tag, key or shape does not check out is a miss, never an error, so a
//! corrupt, truncated or forged entry cannot change the output; it is overwritten by the next
//! store. Entries are written to a temporary file and renamed in, so concurrent renders never
//! see half an entry.
//!
//! **Trust.** Whoever can write the directory (a cache committed in a pull request, one
//! restored from a shared CI cache) could recompute a plain digest; the tag needs the key,
//! which lives outside the checkout (the CLI's default `$XDG_CACHE_HOME/kiln/key`, mode
//! 0600, created on first use) and never in the cache directory. A directory any component
//! of whose path is a symbolic link is not used at all ([`check_dir`]), so a committed
//! `.kiln/cache` link cannot make a render write elsewhere. ADR 0017.
//!
//! The directory (the CLI's default `$XDG_CACHE_HOME/kiln/<digest of the checkout's path>`)
//! holds nothing else and is safe to delete at any time. It is not pruned: delete it to
//! reclaim space.
#![allow(clippy::disallowed_methods)] // the render cache persists entries in its directory

use crate::evaluate::BuildPlan;
use crate::fs::FileSystem;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Bumped whenever the entry layout or the key's inputs change, and whenever the engines
/// print other bytes for the same input (4: go-yaml v2's folding and key order, issue 37),
/// or an entry of an older kiln of the same version would be replayed.
const FORMAT: &str = "kiln-render-cache/6";

/// The secret a cache's entries and journals are authenticated under (HMAC-SHA256): 32
/// random bytes, kept outside any checkout. Its `Debug` never shows it.
#[derive(Clone)]
pub struct CacheKey([u8; 32]);

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheKey(..)")
    }
}

/// 32 bytes from the operating system's generator.
fn random_key() -> io::Result<[u8; 32]> {
    let mut k = [0u8; 32];
    io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut k)?;
    Ok(k)
}

impl CacheKey {
    /// The key in `path` (64 hex digits), created with 32 random bytes and mode 0600 (its
    /// directory 0700) when there is none. A link in place of the file, a file of another
    /// shape or one that other users may read is an error: the caller renders without a
    /// cache it could trust.
    pub fn load_or_create(path: &Path) -> io::Result<CacheKey> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let bad = |why: &str| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the cache key `{}` {why}", path.display()),
            )
        };
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(path)
            {
                Ok(mut file) => {
                    let meta = file.metadata()?;
                    if !meta.is_file() {
                        return Err(bad("is not a regular file"));
                    }
                    if meta.permissions().mode() & 0o077 != 0 {
                        return Err(bad("may be read by other users (make it mode 0600)"));
                    }
                    let mut text = String::new();
                    io::Read::read_to_string(&mut io::Read::take(&mut file, 100), &mut text)?;
                    let mut k = [0u8; 32];
                    return match base16ct::mixed::decode(text.trim(), &mut k) {
                        Ok(d) if d.len() == 32 => Ok(CacheKey(k)),
                        _ => Err(bad("is not 64 hexadecimal digits")),
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let k = random_key()?;
                    match std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(path)
                    {
                        Ok(mut file) => {
                            io::Write::write_all(&mut file, format!("{}\n", hex(&k)).as_bytes())?;
                            file.sync_all()?;
                            return Ok(CacheKey(k));
                        }
                        // Another render created it first: read theirs.
                        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(e),
                    }
                }
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    return Err(bad("is a symbolic link"));
                }
                Err(e) => return Err(e),
            }
        }
        Err(bad("could not be read or created"))
    }

    /// A key for this process only, random: what it authenticates is a miss for any other
    /// process (the library's default without a key file).
    pub fn ephemeral() -> CacheKey {
        static KEY: std::sync::OnceLock<CacheKey> = std::sync::OnceLock::new();
        KEY.get_or_init(|| {
            // Without the OS generator, a key from the hasher's per-process seed and the
            // time: no other process can predict it, and it never leaves this one.
            CacheKey(random_key().unwrap_or_else(|_| {
                use std::hash::{BuildHasher, Hasher};
                let mut k = [0u8; 32];
                for (i, chunk) in k.chunks_mut(8).enumerate() {
                    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                    h.write_usize(i);
                    h.write_u128(std::time::Instant::now().elapsed().as_nanos());
                    chunk.copy_from_slice(&h.finish().to_le_bytes());
                }
                k
            }))
        })
        .clone()
    }

    /// The key in `path`, or with `None` (or a key file that cannot be used) the
    /// [`ephemeral`](Self::ephemeral) one: a cache without a trusted key is only slower.
    pub fn for_file(path: Option<&Path>) -> CacheKey {
        path.and_then(|p| CacheKey::load_or_create(p).ok())
            .unwrap_or_else(CacheKey::ephemeral)
    }

    fn mac(&self, purpose: &[u8], body: &[u8]) -> Hmac<Sha256> {
        // `new_from_slice` accepts any key length for HMAC; 32 bytes never fail.
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| <Hmac<Sha256> as Mac>::new(&Default::default()));
        m.update(purpose);
        m.update(b"\n");
        m.update(body);
        m
    }

    /// The tag (hex) of `body` stored for `purpose` (`entry`, `journal`).
    fn tag(&self, purpose: &[u8], body: &[u8]) -> String {
        hex(&self.mac(purpose, body).finalize().into_bytes())
    }

    /// Whether `tag` (hex) authenticates `body` for `purpose`, compared in constant time.
    fn verify(&self, purpose: &[u8], tag: &[u8], body: &[u8]) -> bool {
        let mut t = [0u8; 32];
        match base16ct::lower::decode(tag, &mut t) {
            Ok(d) if d.len() == 32 => self.mac(purpose, body).verify_slice(&t).is_ok(),
            _ => false,
        }
    }

    /// `body` behind its tag line, as entries and journals are stored.
    fn seal(&self, purpose: &[u8], body: &[u8]) -> Vec<u8> {
        let mut bytes = self.tag(purpose, body).into_bytes();
        bytes.push(b'\n');
        bytes.extend_from_slice(body);
        bytes
    }

    /// The body of `bytes` when its tag line authenticates it, else `None`.
    fn open<'b>(&self, purpose: &[u8], bytes: &'b [u8]) -> Option<&'b [u8]> {
        let newline = bytes.iter().position(|b| *b == b'\n')?;
        let (tag, body) = (&bytes[..newline], &bytes[newline + 1..]);
        self.verify(purpose, tag, body).then_some(body)
    }
}

/// Why `dir` may not hold a render cache: a component of its path (made absolute) is a
/// symbolic link, or is not a directory. Checked component by component with `lstat`, before
/// anything is created or read there: a committed `.kiln/cache` link to `/etc` would make a
/// render create directories and write entries there (issue 39, item 3). `Ok` for a path
/// whose missing tail the cache creates.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    let abs = std::path::absolute(dir).map_err(|e| format!("`{}`: {e}", dir.display()))?;
    let mut at = PathBuf::new();
    for c in abs.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("`{}` is a symbolic link", at.display()));
            }
            Ok(m) if !m.is_dir() => return Err(format!("`{}` is not a directory", at.display())),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("`{}`: {e}", at.display())),
        }
    }
    Ok(())
}

/// One observed file-system call of a render and a digest of what it returned.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Read {
    /// `read`, `read_at_most:<max>`, `is_dir`, `is_file`, `plain_kind`, `read_dir`,
    /// `read_dir_kinds` or `canonicalize`.
    pub op: String,
    pub path: String,
    /// SHA-256 (hex) of the result, errors included.
    pub result: String,
}

use kiln_base::digest::{hex, sha256_hex as digest};

fn result_digest<T: AsRef<[u8]>>(r: &io::Result<T>) -> String {
    match r {
        Ok(v) => digest(v.as_ref()),
        Err(e) => error_digest(e),
    }
}

fn error_digest(e: &io::Error) -> String {
    digest(format!("error {:?}", e.kind()).as_bytes())
}

fn paths_text(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join("\n")
}

fn kind_name(k: Option<crate::fs::PlainKind>) -> &'static str {
    match k {
        Some(crate::fs::PlainKind::Dir) => "dir",
        Some(crate::fs::PlainKind::File) => "file",
        None => "other",
    }
}

fn kinds_text(l: &[(PathBuf, Option<crate::fs::PlainKind>)]) -> String {
    l.iter()
        .map(|(p, k)| format!("{}\t{}", p.to_string_lossy(), kind_name(*k)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A bounded read's result: the bytes, tagged, or that there were more than the bound.
fn at_most_digest(r: &io::Result<Option<Vec<u8>>>) -> String {
    match r {
        Ok(Some(d)) => hex(&Sha256::new().chain_update(b"+").chain_update(d).finalize()),
        Ok(None) => digest(b"-over"),
        Err(e) => error_digest(e),
    }
}

/// A link's target, or that `path` is no link.
fn link_digest(target: Option<&Path>) -> String {
    match target {
        Some(t) => digest(format!("+{}", t.to_string_lossy()).as_bytes()),
        None => digest(b"-"),
    }
}

/// Performs `op` on `path` through `fs` and digests the result: the one definition of a read,
/// used both to record and to replay.
fn observe(fs: &dyn FileSystem, op: &str, path: &Path) -> String {
    match op {
        "read" => result_digest(&fs.read(path)),
        "is_dir" => digest(if fs.is_dir(path) { b"1" } else { b"0" }),
        "is_file" => digest(if fs.is_file(path) { b"1" } else { b"0" }),
        "plain_kind" => digest(kind_name(fs.plain_kind(path)).as_bytes()),
        "read_dir" => result_digest(&fs.read_dir(path).map(|l| paths_text(&l))),
        "read_dir_kinds" => result_digest(&fs.read_dir_kinds(path).map(|l| kinds_text(&l))),
        "canonicalize" => result_digest(
            &fs.canonicalize(path)
                .map(|p| p.to_string_lossy().into_owned()),
        ),
        "read_link" => link_digest(fs.read_link(path).as_deref()),
        _ => match op.strip_prefix("read_at_most:").map(str::parse::<u64>) {
            Some(Ok(max)) => at_most_digest(&fs.read_at_most(path, max)),
            _ => String::new(),
        },
    }
}

/// The recording file system, kiln's one: a [`FileSystem`] that passes every call through
/// and remembers it (see the module docs) — every call and its result's digest
/// ([`Recorder::new`], for the cache and the journal), or the digest of every file read
/// ([`Recorder::contents`], for provenance: exactly the inputs of a render, not a guess at
/// which files matter).
///
/// Calls made through a [`Scope`] ([`Recorder::scope`]: load reads each component directory
/// through its own) are kept apart, by scope, so that the journal can tell which component's
/// load a changed file reaches ([`Journal::component_reads`]). The scope is the handle's, not
/// the recorder's: components loaded at once on several threads each record their own calls.
#[derive(Debug)]
pub struct Recorder<'a> {
    inner: &'a dyn FileSystem,
    /// Whether calls are recorded.
    calls: bool,
    reads: Mutex<Vec<Read>>,
    scoped: Mutex<BTreeMap<PathBuf, Vec<Read>>>,
    /// Path → `sha256:` of its bytes, of every file read whole or within a bound; `None`:
    /// not recorded.
    contents: Option<Mutex<BTreeMap<PathBuf, String>>>,
}

impl<'a> Recorder<'a> {
    /// A recorder of every call.
    pub fn new(inner: &'a dyn FileSystem) -> Self {
        Recorder {
            inner,
            calls: true,
            reads: Mutex::new(Vec::new()),
            scoped: Mutex::new(BTreeMap::new()),
            contents: None,
        }
    }

    /// A recorder of the contents of the files read, and of nothing else (see
    /// [`Recorder::inputs`]).
    pub fn contents(inner: &'a dyn FileSystem) -> Self {
        Recorder {
            calls: false,
            contents: Some(Mutex::new(BTreeMap::new())),
            ..Recorder::new(inner)
        }
    }

    /// Every file read so far ([`Recorder::contents`]): its path relative to `root`
    /// (`/`-separated; absolute when outside it) → `sha256:` of its bytes.
    pub fn inputs(&self, root: &Path) -> BTreeMap<String, String> {
        self.inputs_with_trees(root, &[])
    }

    /// [`inputs`](Self::inputs), a file of a fetched source tree named `source:<tree's
    /// content digest>/<path>`: the same on every machine, wherever its cache lies.
    pub fn inputs_with_trees(&self, root: &Path, trees: &[PathBuf]) -> BTreeMap<String, String> {
        let read = self
            .contents
            .as_ref()
            .and_then(|c| c.lock().ok().map(|r| r.clone()))
            .unwrap_or_default();
        let root = self
            .inner
            .canonicalize(root)
            .unwrap_or_else(|_| root.to_path_buf());
        // Resolved as the render's reads were checked: each directory once.
        let resolve = crate::fs::RootedFs::new(self.inner, root.clone()).with_trees(trees.to_vec());
        let slashed = |p: &Path| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/")
        };
        read.into_iter()
            .map(|(path, digest)| {
                let abs = resolve.canonicalize(&path).unwrap_or(path);
                if let Some(t) = trees.iter().find(|t| abs.starts_with(t)) {
                    let name = t
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let rel = abs.strip_prefix(t).unwrap_or(&abs);
                    return (format!("source:{name}/{}", slashed(rel)), digest);
                }
                let shown = match abs.strip_prefix(&root) {
                    Ok(rel) => slashed(rel),
                    Err(_) => abs.display().to_string(),
                };
                (shown, digest)
            })
            .collect()
    }

    /// Notes that `path` read as `digest` (`sha256:…`), when contents are recorded.
    fn note_contents(&self, path: &Path, digest: impl FnOnce() -> String) {
        if let Some(Ok(mut c)) = self.contents.as_ref().map(|c| c.lock()) {
            c.insert(path.to_path_buf(), digest());
        }
    }

    /// This recorder, its calls noted under the component directory `dir` instead of the
    /// unscoped list, until the scope is dropped. A scope that makes no call is still
    /// recorded, as having made none. Each scope keeps its own list (merged in on drop), so
    /// that scopes used on several threads at once neither mix their calls nor wait on one
    /// another.
    pub fn scope(&self, dir: &Path) -> Scope<'_, 'a> {
        Scope {
            rec: self,
            dir: dir.to_path_buf(),
            reads: Mutex::new(Vec::new()),
        }
    }

    /// Every scope's calls, each list sorted, each call once.
    pub fn scoped_reads(&self) -> Vec<ComponentReads> {
        let m = self.scoped.lock().map(|m| m.clone()).unwrap_or_default();
        m.into_iter()
            .map(|(dir, mut reads)| {
                reads.sort();
                reads.dedup();
                ComponentReads { dir, reads }
            })
            .collect()
    }

    /// The file system underneath.
    pub fn inner(&self) -> &'a dyn FileSystem {
        self.inner
    }

    /// Adds reads observed elsewhere (a shared kustomize build) to this recorder's.
    pub fn extend(&self, reads: &[Read]) {
        if let Ok(mut r) = self.reads.lock() {
            r.extend_from_slice(reads);
        }
    }

    /// Every read so far, sorted, each once.
    pub fn reads(&self) -> Vec<Read> {
        let mut r = self.reads.lock().map(|r| r.clone()).unwrap_or_default();
        r.sort();
        r.dedup();
        r
    }

    /// The calls made through this recorder, noted in the unscoped list.
    fn unscoped(&self) -> Noting<'_, 'a> {
        Noting {
            rec: self,
            to: &self.reads,
        }
    }
}

/// A [`Recorder`] whose calls are noted under one component directory
/// ([`Recorder::scope`]).
#[derive(Debug)]
pub struct Scope<'s, 'a> {
    rec: &'s Recorder<'a>,
    dir: PathBuf,
    reads: Mutex<Vec<Read>>,
}

impl Scope<'_, '_> {
    fn noting(&self) -> Noting<'_, '_> {
        Noting {
            rec: self.rec,
            to: &self.reads,
        }
    }
}

impl Drop for Scope<'_, '_> {
    fn drop(&mut self) {
        let reads = std::mem::take(
            self.reads
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if let Ok(mut m) = self.rec.scoped.lock() {
            m.entry(std::mem::take(&mut self.dir))
                .or_default()
                .extend(reads);
        }
    }
}

/// The calls of a [`Recorder`] or a [`Scope`]: passed through to the file system underneath,
/// each noted in `to` (and the files read in the recorder's contents).
#[derive(Debug)]
struct Noting<'s, 'a> {
    rec: &'s Recorder<'a>,
    to: &'s Mutex<Vec<Read>>,
}

impl Noting<'_, '_> {
    fn note(&self, op: &str, path: &Path, result: impl FnOnce() -> String) {
        if !self.rec.calls {
            return;
        }
        let result = result();
        let read = Read {
            op: op.to_string(),
            // A path that is not UTF-8 cannot be replayed exactly; the empty op never
            // matches on replay, so such an entry is never used.
            path: path.to_str().map_or_else(String::new, str::to_string),
            result: if path.to_str().is_some() {
                result
            } else {
                String::new()
            },
        };
        if let Ok(mut r) = self.to.lock() {
            r.push(read);
        }
    }
}

impl FileSystem for Noting<'_, '_> {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let r = self.rec.inner.read(path);
        if let Ok(bytes) = &r {
            // One digest for both records when both are kept.
            let d = digest(bytes);
            self.rec.note_contents(path, || format!("sha256:{d}"));
            self.note("read", path, || d);
        } else {
            self.note("read", path, || result_digest(&r));
        }
        r
    }
    fn is_dir(&self, path: &Path) -> bool {
        let r = self.rec.inner.is_dir(path);
        self.note("is_dir", path, || digest(if r { b"1" } else { b"0" }));
        r
    }
    fn is_file(&self, path: &Path) -> bool {
        let r = self.rec.inner.is_file(path);
        self.note("is_file", path, || digest(if r { b"1" } else { b"0" }));
        r
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let r = self.rec.inner.read_dir(path);
        self.note("read_dir", path, || {
            result_digest(
                &r.as_ref()
                    .map(|l| paths_text(l))
                    .map_err(|e| e.kind().into()),
            )
        });
        r
    }
    // The chart loader's fast walk and bounded reads go through too: without them a chart
    // inside `kiln render` was walked the long way (a canonicalize and two stats per entry)
    // and every file read whole before its size was checked.
    fn plain_kind(&self, path: &Path) -> Option<crate::fs::PlainKind> {
        let r = self.rec.inner.plain_kind(path);
        self.note("plain_kind", path, || digest(kind_name(r).as_bytes()));
        r
    }
    fn read_dir_kinds(
        &self,
        path: &Path,
    ) -> io::Result<Vec<(PathBuf, Option<crate::fs::PlainKind>)>> {
        let r = self.rec.inner.read_dir_kinds(path);
        self.note("read_dir_kinds", path, || {
            result_digest(
                &r.as_ref()
                    .map(|l| kinds_text(l))
                    .map_err(|e| e.kind().into()),
            )
        });
        r
    }
    fn read_at_most(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        let r = self.rec.inner.read_at_most(path, max);
        // A bounded read that returns the file is a read of it.
        if let Ok(Some(b)) = &r {
            self.rec
                .note_contents(path, || kiln_base::digest::sha256_tagged(b));
        }
        if self.rec.calls {
            self.note(&format!("read_at_most:{max}"), path, || at_most_digest(&r));
        }
        r
    }
    // Only asked to explain a path that does not resolve (`fs::dangling_link`).
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        let r = self.rec.inner.read_link(path);
        self.note("read_link", path, || link_digest(r.as_deref()));
        r
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let r = self.rec.inner.canonicalize(path);
        self.note("canonicalize", path, || {
            result_digest(
                &r.as_ref()
                    .map(|p| p.to_string_lossy().into_owned())
                    .map_err(|e| e.kind().into()),
            )
        });
        r
    }
}

/// Forwards every call of the file system trait, overridden ones included, to `$via`.
macro_rules! forward_fs {
    ($t:ty, $via:ident) => {
        impl FileSystem for $t {
            fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
                self.$via().read(path)
            }
            fn is_dir(&self, path: &Path) -> bool {
                self.$via().is_dir(path)
            }
            fn is_file(&self, path: &Path) -> bool {
                self.$via().is_file(path)
            }
            fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
                self.$via().read_dir(path)
            }
            fn plain_kind(&self, path: &Path) -> Option<crate::fs::PlainKind> {
                self.$via().plain_kind(path)
            }
            fn read_dir_kinds(
                &self,
                path: &Path,
            ) -> io::Result<Vec<(PathBuf, Option<crate::fs::PlainKind>)>> {
                self.$via().read_dir_kinds(path)
            }
            fn read_at_most(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
                self.$via().read_at_most(path, max)
            }
            fn read_link(&self, path: &Path) -> Option<PathBuf> {
                self.$via().read_link(path)
            }
            fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
                self.$via().canonicalize(path)
            }
        }
    };
}

forward_fs!(Recorder<'_>, unscoped);
forward_fs!(Scope<'_, '_>, noting);

impl crate::load::Scopes for Recorder<'_> {
    fn scope<'s>(&'s self, dir: &Path) -> Box<dyn FileSystem + 's> {
        Box::new(Recorder::scope(self, dir))
    }
}

/// A render's warning (a chart value no template read): printed on stderr, given in `-o
/// json`'s `findings`, and kept by the render cache and journal with the plan, so that a
/// render that reuses the plan repeats it (issue 36, item 7).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Warning {
    /// `kiln::render::unused_value`.
    pub code: String,
    /// Where it is, its file relative to the repository root (line and column 0 when
    /// unknown).
    pub at: kiln_base::diag::Loc<String>,
    pub message: String,
}

impl Warning {
    /// The warning as `-o json` gives it (the fields of a validation finding's).
    pub fn to_json(&self) -> serde_json::Value {
        let known = |n: usize| (n > 0).then_some(n);
        serde_json::json!({
            "code": self.code,
            "severity": "warning",
            "file": self.at.file,
            "line": known(self.at.line),
            "column": known(self.at.column),
            "message": self.message,
        })
    }
}

impl std::fmt::Display for Warning {
    /// The line for stderr: `warning[code]: file:line:column: message`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.at.position();
        write!(f, "warning[{}]: {at}: {}", self.code, self.message)
    }
}

/// The emitted files of one BuildPlan: relative path → text.
pub type Files = Vec<(String, Vec<u8>)>;

/// What the render keeps of one BuildPlan: its files and the cluster-scoped kinds among its
/// resources (for the Argo CD AppProject).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Emitted {
    /// The plan's cache key (empty without a cache), for the [`Journal`].
    pub key: String,
    pub files: Files,
    pub cluster_kinds: std::collections::BTreeSet<(String, String)>,
    /// What producing them read (the render's reads, or the cache entry's), for the
    /// [`Journal`].
    pub reads: Vec<Read>,
    /// Where each document of the plan's `.gen.yaml` came from (issue 36, item 7), for
    /// validation's findings; `None` where nothing is known.
    pub provenance: Vec<Option<crate::resource::Provenance>>,
    /// The render's warnings ([`crate::render::Rendered::warnings`]).
    pub warnings: Vec<Warning>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    reads: Vec<Read>,
    files: Vec<(String, String)>,
    cluster_kinds: Vec<(String, String)>,
    provenance: Vec<Option<crate::resource::Provenance>>,
    warnings: Vec<Warning>,
}

/// Hit/miss counts of one render.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: usize,
    pub misses: usize,
}

/// A cache directory (see the module docs).
pub struct Cache {
    dir: PathBuf,
    secret: CacheKey,
    layout: String,
    /// What the source stage pulled (`crate::source::Resolved::charts_digest`), part of
    /// every key; empty without remote charts.
    sources: String,
    /// Digest of each component's loaded inputs, by component path: computed once per
    /// component, not once per environment.
    components: Mutex<BTreeMap<String, String>>,
    hits: std::sync::atomic::AtomicUsize,
    misses: std::sync::atomic::AtomicUsize,
}

impl Cache {
    /// A cache in `dir` (created on the first store) for output in `layout` (`{:?}` of it),
    /// its entries authenticated under `secret`.
    pub fn new(dir: impl Into<PathBuf>, layout: impl std::fmt::Debug, secret: CacheKey) -> Cache {
        Cache {
            dir: dir.into(),
            secret,
            layout: format!("{layout:?}"),
            sources: String::new(),
            components: Mutex::new(BTreeMap::new()),
            hits: Default::default(),
            misses: Default::default(),
        }
    }

    /// Hits and misses so far.
    pub fn stats(&self) -> CacheStats {
        use std::sync::atomic::Ordering::Relaxed;
        CacheStats {
            hits: self.hits.load(Relaxed),
            misses: self.misses.load(Relaxed),
        }
    }

    fn component_digest(&self, plan: &BuildPlan) -> String {
        let c = &plan.source;
        if let Some(d) = self
            .components
            .lock()
            .ok()
            .and_then(|m| m.get(&c.path).cloned())
        {
            return d;
        }
        let mut h = Sha256::new();
        // serde_json never fails on these types (string keys only).
        let _ = serde_json::to_writer(&mut HashWriter(&mut h), &**c);
        let _ = serde_json::to_writer(&mut HashWriter(&mut h), &c.raw_spec);
        for (g, rs) in &c.files {
            h.update(format!("\nfiles {g}\n"));
            for r in rs {
                let _ = serde_json::to_writer(&mut HashWriter(&mut h), &r.value);
                h.update(b"\n");
            }
        }
        let _ = serde_json::to_writer(&mut HashWriter(&mut h), &c.assets);
        let d = hex(&h.finalize());
        if let Ok(mut m) = self.components.lock() {
            m.insert(c.path.clone(), d.clone());
        }
        d
    }

    /// The key of `plan` (see the module docs).
    pub fn key(&self, plan: &BuildPlan) -> String {
        let mut h = Sha256::new();
        h.update(FORMAT);
        h.update(b"\nkiln ");
        h.update(env!("CARGO_PKG_VERSION"));
        h.update(b"\nlayout ");
        h.update(&self.layout);
        if !self.sources.is_empty() {
            h.update(b"\nsources ");
            h.update(&self.sources);
        }
        h.update(b"\ncomponent ");
        h.update(self.component_digest(plan));
        h.update(b"\nplan ");
        let _ = serde_json::to_writer(&mut HashWriter(&mut h), plan);
        hex(&h.finalize())
    }

    /// The same cache, its keys also over `sources` (the pulled charts' digest).
    pub fn with_sources(mut self, sources: String) -> Cache {
        self.sources = sources;
        self
    }

    fn entry_path(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    /// The files stored under `key`, when the entry is intact and every read it recorded
    /// still gives the same result through `fs`.
    pub fn lookup(&self, key: &str, fs: &dyn FileSystem) -> Option<Emitted> {
        let found = self.try_lookup(key, fs);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        found
    }

    fn try_lookup(&self, key: &str, fs: &dyn FileSystem) -> Option<Emitted> {
        let bytes = fs.read(&self.entry_path(key)).ok()?;
        let body = self.secret.open(b"entry", &bytes)?;
        let entry: Entry = serde_json::from_slice(body).ok()?;
        if entry.key != key {
            return None;
        }
        let fresh = entry
            .reads
            .iter()
            .all(|r| !r.result.is_empty() && observe(fs, &r.op, Path::new(&r.path)) == r.result);
        fresh.then(|| Emitted {
            key: key.to_string(),
            reads: entry.reads,
            files: entry
                .files
                .into_iter()
                .map(|(p, t)| (p, t.into_bytes()))
                .collect(),
            cluster_kinds: entry.cluster_kinds.into_iter().collect(),
            provenance: entry.provenance,
            warnings: entry.warnings,
        })
    }

    /// Stores `files` under `key` with the reads that produced them. Best effort: a cache
    /// that cannot be written only makes the next render slower, so errors are returned for
    /// the caller to report, never to fail the render on.
    pub fn store(&self, key: &str, reads: Vec<Read>, emitted: &Emitted) -> io::Result<()> {
        let Ok(files) = emitted
            .files
            .iter()
            .map(|(p, b)| String::from_utf8(b.clone()).map(|t| (p.clone(), t)))
            .collect::<Result<Vec<_>, _>>()
        else {
            return Ok(());
        };
        let entry = Entry {
            key: key.to_string(),
            reads,
            files,
            cluster_kinds: emitted.cluster_kinds.iter().cloned().collect(),
            provenance: emitted.provenance.clone(),
            warnings: emitted.warnings.clone(),
        };
        let body = serde_json::to_vec(&entry).map_err(io::Error::other)?;
        let bytes = self.secret.seal(b"entry", &body);
        let path = self.entry_path(key);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        io::Write::write_all(&mut tmp, &bytes)?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// Feeds serde_json's writer straight into a hasher, without an intermediate buffer.
struct HashWriter<'a>(&'a mut Sha256);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Bumped whenever the journal's layout or key inputs change.
const JOURNAL_FORMAT: &str = "kiln-render-journal/8";

/// The render journal: what the last full `kiln render` into one output directory, with one
/// set of options, read and wrote, so that the next render of unchanged input can skip
/// every stage (issue 13, part 3: a no-op re-render).
///
/// **Why it is safe.** The engine is deterministic and reads nothing but the file system
/// (no clock, no environment), so replaying every recorded call of the last render (each
/// `read`, `is_dir`, `read_dir`, … with the digest of what it returned) and getting the same
/// results proves the render would produce the same tree again. The tree on disk is then
/// checked against the recorded digests ([`crate::write::verify_unchanged`]: a file whose
/// `stat` is exactly as recorded, and not racily recent, is taken as unchanged, as git
/// does for its index; any other file is read and digested). Any difference, a missing or
/// corrupt journal, or a journal of other options falls back to the full render, which
/// rewrites the journal. So a stale or corrupt journal can cost time, never output.
///
/// **Incremental.** Load's calls are recorded in two parts: those made for the platform
/// itself (`platform.yaml`, resolving each instance's component path) and, apart, those
/// made while loading each component directory ([`Journal::component_reads`]; a `files:`
/// entry reading under another component's directory is that component's call). When the
/// platform's calls all replay, a change can only reach:
/// - the render of some BuildPlans ([`PlanRecord::reads`]): their BuildPlans are the
///   recorded ones (load read the same, validate and evaluate are pure; each is checked to
///   have the recorded cache key), only they are rendered again;
/// - the load of some components: only those are loaded, validated and evaluated again, and
///   their BuildPlans rendered again. The Kargo and Argo CD objects read of each BuildPlan
///   only its ids, namespace and component name ([`plan_facts`]) and its images
///   ([`plan_images`]): when the re-evaluated BuildPlans have the recorded ids and facts,
///   those objects are the recorded ones, except the Kargo/Argo CD files of a project
///   whose BuildPlans' images changed, which are generated again for that project alone.
///
/// Either way the cluster-scoped kinds the render produced must stay the same (the
/// AppProject lists them), and the rest of the tree is the recorded one (see
/// `crate::pipeline`).
///
/// **Where.** `<cache dir>/journal/<key>.json` (key: a digest of the options and the output
/// directory), written like a cache entry: a digest line, then the JSON body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Journal {
    pub key: String,
    /// Calls made by load outside any component directory's load (replayed on the plain
    /// file system: load may look above the root for `.git`).
    pub load_reads: Vec<Read>,
    /// Calls made by load while loading each component directory, by directory (replayed
    /// like `load_reads`).
    pub component_reads: Vec<ComponentReads>,
    /// Calls made by the render of BuildPlans (replayed inside the repository root).
    pub render_reads: Vec<Read>,
    pub root: PathBuf,
    /// The platform and component directories (for [`crate::write::check_target`]).
    pub sources: Vec<PathBuf>,
    pub plans: usize,
    /// Each BuildPlan rendered, in plan order.
    pub records: Vec<PlanRecord>,
    /// Every file written: path, SHA-256 of its bytes, its `stat` after the write; in path
    /// order.
    pub files: Vec<crate::write::Written>,
    /// SHA-256 of the ownership marker written.
    pub marker: String,
    /// The warnings of that render, repeated by a skipped one.
    pub expressions: Vec<[String; 4]>,
    /// The Secrets of the tree: (file, as reported).
    pub secrets: Vec<(String, String)>,
    /// The render's warnings, in the order printed: a render the journal skips repeats
    /// them (issue 36, item 7).
    pub warnings: Vec<Replayed>,
    /// The (group, kind) of each CRD the render validated against: an incremental render,
    /// which sees only the CRDs of the plans it renders again, does not count the custom
    /// resources of these kinds as having no schema.
    pub crd_kinds: Vec<(String, String)>,
}

impl From<&Warning> for Replayed {
    fn from(w: &Warning) -> Replayed {
        Replayed {
            line: w.to_string(),
            json: Some(w.to_json()),
        }
    }
}

/// A warning of a render (the render's own, [`Warning`], or the Kubernetes
/// validation's) as it was printed and as `-o json` gave it, kept by the journal so that a
/// render that reuses the work repeats it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replayed {
    /// The line on stderr.
    pub line: String,
    /// Its entry in `-o json`'s `findings`; `None` for a summary line (the kinds not
    /// validated).
    pub json: Option<serde_json::Value>,
}

/// The calls one component directory's load made (see [`Recorder::scope`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentReads {
    /// The component directory (canonical).
    pub dir: PathBuf,
    pub reads: Vec<Read>,
}

/// What changed since a journal's render, when the platform's own load calls all replay
/// ([`Journal::changes`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Component directories whose load made a call with another result.
    pub components: BTreeSet<PathBuf>,
    /// Indexes into [`Journal::render_reads`] of the calls that give another result.
    pub render: BTreeSet<usize>,
}

impl Changes {
    /// Nothing changed.
    pub fn is_empty(&self) -> bool {
        self.components.is_empty() && self.render.is_empty()
    }
}

/// A digest of what the Kargo and Argo CD objects read of a BuildPlan besides its ids and
/// images (`crate::kargo`: the namespace, which the platform-wide AppProject lists; the
/// component name and path for safety): two BuildPlans with the same ids, facts and
/// [`plan_images`] give the same objects.
pub fn plan_facts(plan: &BuildPlan) -> String {
    let mut h = Sha256::new();
    h.update(b"facts ");
    let _ = serde_json::to_writer(
        &mut HashWriter(&mut h),
        &(&plan.namespace, &plan.component_name, &plan.path),
    );
    hex(&h.finalize())
}

/// A digest of a BuildPlan's images, which only its own project's Kargo objects read (the
/// Warehouse subscriptions, the promotion steps).
pub fn plan_images(plan: &BuildPlan) -> String {
    let mut h = Sha256::new();
    h.update(b"images ");
    let _ = serde_json::to_writer(&mut HashWriter(&mut h), &plan.images);
    hex(&h.finalize())
}

/// A digest of everything the Kargo and Argo CD objects are built from: the validated
/// platform (its components included) and every BuildPlan's ids, [`plan_facts`] and
/// [`plan_images`]. A `--shard` render records it (`format` names the record's version);
/// `kiln merge` loads the platform again from the checkout it runs in, and a different
/// digest means that checkout is not the one the shards were rendered from (its Stages would
/// not match the shards' manifests).
pub fn pipeline_inputs(
    format: &str,
    platform: &crate::validate::Platform,
    plans: &[BuildPlan],
) -> String {
    let mut h = Sha256::new();
    h.update(format.as_bytes());
    let _ = serde_json::to_writer(&mut HashWriter(&mut h), platform);
    for p in plans {
        let _ = serde_json::to_writer(
            &mut HashWriter(&mut h),
            &(
                &p.project,
                &p.environment,
                &p.component,
                plan_facts(p),
                plan_images(p),
            ),
        );
    }
    hex(&h.finalize())
}

/// One BuildPlan of a journal's render: what it is, what it read, what it wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub project: String,
    pub environment: String,
    pub component: String,
    /// The component directory (canonical).
    pub dir: PathBuf,
    /// Its cache key: a BuildPlan evaluated again must have the same one, unless its
    /// component's load changed.
    pub key: String,
    /// [`plan_facts`] of the BuildPlan: what the Kargo and Argo CD objects read of it.
    pub facts: String,
    /// [`plan_images`] of the BuildPlan.
    pub images: String,
    /// Indexes into [`Journal::render_reads`] of the calls its render made.
    pub reads: Vec<u32>,
    /// Indexes into [`Journal::files`] of the files it emitted.
    pub files: Vec<u32>,
    pub cluster_kinds: Vec<(String, String)>,
    /// Its warnings: the render's, and the validation's on its files (an incremental render
    /// repeats those of the plans it does not render again).
    pub warnings: Vec<Replayed>,
    /// Its objects of kinds with no schema, by `group/version Kind` (an incremental render
    /// counts those of the plans it does not render again: the "not validated" line).
    pub unvalidated: Vec<(String, usize)>,
    /// Its CEL rules not evaluated (counted as `unvalidated` is).
    pub cel_skipped: usize,
}

/// A journal's key and location (see [`Journal`]).
#[derive(Debug, Clone)]
pub struct JournalSlot {
    key: String,
    path: PathBuf,
    secret: CacheKey,
}

impl JournalSlot {
    /// The slot for a render described by `options` (every option that can change the
    /// output, `{:?}`-formatted by the caller) into `out`, authenticated under `secret`.
    pub fn new(cache_dir: &Path, options: &str, out: &Path, secret: CacheKey) -> JournalSlot {
        let mut h = Sha256::new();
        h.update(JOURNAL_FORMAT);
        h.update(b"\nkiln ");
        h.update(env!("CARGO_PKG_VERSION"));
        h.update(b"\noptions ");
        h.update(options);
        h.update(b"\nout ");
        h.update(out.to_string_lossy().as_bytes());
        let key = hex(&h.finalize());
        let path = cache_dir.join("journal").join(format!("{key}.json"));
        JournalSlot { key, path, secret }
    }

    /// The journal and its modification time, when it is intact and of this key.
    pub fn load(&self) -> Option<(Journal, std::time::SystemTime)> {
        let bytes = crate::fs::read_regular(&self.path).ok()?;
        let mtime = std::fs::symlink_metadata(&self.path)
            .ok()?
            .modified()
            .ok()?;
        let body = self.secret.open(b"journal", &bytes)?;
        let j: Journal = serde_json::from_slice(body).ok()?;
        (j.key == self.key).then_some((j, mtime))
    }

    /// Removes the journal (before a full render rewrites the output, so that a render
    /// killed half-way never leaves a journal describing a tree that is not there).
    pub fn forget(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// Stores `journal` (its key is set here). Best effort, as [`Cache::store`].
    pub fn store(&self, mut journal: Journal) -> io::Result<()> {
        journal.key = self.key.clone();
        let body = serde_json::to_vec(&journal).map_err(io::Error::other)?;
        let bytes = self.secret.seal(b"journal", &body);
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        io::Write::write_all(&mut tmp, &bytes)?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

impl Journal {
    /// Whether every path this journal would have kiln look at is confined, checked before
    /// anything is opened (issue 39, item 2): its root is `root` (the root this render
    /// uses), its render's and components' calls lie inside it, load's own calls inside it or
    /// at a `.git` of a directory above it (where load looks for the repository), and every
    /// written file is a relative path below the output. A journal is authenticated, so this
    /// holds for any journal kiln wrote; it is checked anyway, as a second wall.
    pub fn confined_to(&self, root: &Path) -> bool {
        let inside = |p: &str| {
            let p = Path::new(p);
            p.is_absolute() && crate::fs::normalize(p).starts_with(root)
        };
        let above_git = |p: &str| {
            let p = crate::fs::normalize(Path::new(p));
            p.file_name().is_some_and(|n| n == ".git")
                && p.parent().is_some_and(|d| root.starts_with(d))
        };
        // Load may be handed the platform directory relative to the working directory.
        let below_cwd = |p: &str| {
            let p = Path::new(p);
            p.is_relative()
                && p.components().all(|c| {
                    matches!(
                        c,
                        std::path::Component::Normal(_) | std::path::Component::CurDir
                    )
                })
        };
        let relative = |p: &str| {
            !p.is_empty()
                && Path::new(p)
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        };
        self.root == root
            && self
                .load_reads
                .iter()
                .all(|r| inside(&r.path) || above_git(&r.path) || below_cwd(&r.path))
            && self.component_reads.iter().all(|c| {
                c.dir.starts_with(root)
                    && c.reads
                        .iter()
                        .all(|r| inside(&r.path) || above_git(&r.path))
            })
            && self.render_reads.iter().all(|r| inside(&r.path))
            && self.sources.iter().all(|s| s.starts_with(root))
            && self.records.iter().all(|r| r.dir.starts_with(root))
            && self.files.iter().all(|w| relative(&w.path))
    }

    /// Whether every recorded call still gives the same result: load's through `fs`,
    /// the render's through `fs` confined to the root.
    pub fn replays(&self, fs: &dyn FileSystem) -> bool {
        self.changes(fs).is_some_and(|c| c.is_empty())
    }

    /// `None` when a call load made for the platform itself gives a different result
    /// through `fs`; else the components whose load calls do, and the indexes of the
    /// render's calls (through `fs` confined to the root) that do.
    pub fn changes(&self, fs: &dyn FileSystem) -> Option<Changes> {
        use rayon::prelude::*;
        let rooted = crate::fs::RootedFs::new(fs, self.root.clone());
        let same = |fs: &dyn FileSystem, r: &Read| {
            !r.result.is_empty() && observe(fs, &r.op, Path::new(&r.path)) == r.result
        };
        if !self.load_reads.par_iter().all(|r| same(fs, r)) {
            return None;
        }
        let components = self
            .component_reads
            .par_iter()
            .filter(|c| !c.reads.iter().all(|r| same(fs, r)))
            .map(|c| c.dir.clone())
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        let render = self
            .render_reads
            .par_iter()
            .enumerate()
            .filter(|(_, r)| !same(&rooted, r))
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        Some(Changes { components, render })
    }

    /// The plans (indexes into [`Journal::records`]) that `changes` reaches: their render
    /// made one of the changed calls, or their component's load did.
    pub fn affected(&self, changes: &Changes) -> Vec<usize> {
        self.records
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                changes.components.contains(&r.dir)
                    || r.reads
                        .iter()
                        .any(|i| changes.render.contains(&(*i as usize)))
            })
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Provenance's recording file system passes the chart loader's fast walk and bounded
    /// reads through to the disk (a chart inside `kiln render` was walked the long way), and
    /// a bounded read that returns the file records it as read.
    #[test]
    fn provenance_passes_the_fast_walk_and_bounded_reads_through() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir(t.path().join("d")).unwrap();
        std::fs::write(t.path().join("a"), "abc").unwrap();
        std::fs::write(t.path().join("big"), "0123456789").unwrap();
        let fs = Recorder::contents(&crate::fs::RealFs);
        let kinds: Vec<_> = fs
            .read_dir_kinds(t.path())
            .unwrap()
            .into_iter()
            .map(|(_, k)| k)
            .collect();
        use crate::fs::PlainKind::{Dir, File};
        assert_eq!(kinds, [Some(File), Some(File), Some(Dir)]);
        assert_eq!(fs.plain_kind(&t.path().join("d")), Some(Dir));
        assert_eq!(
            fs.read_at_most(&t.path().join("a"), 5).unwrap().unwrap(),
            b"abc"
        );
        assert_eq!(fs.read_at_most(&t.path().join("big"), 5).unwrap(), None);
        let inputs: Vec<String> = fs.inputs(t.path()).into_keys().collect();
        assert_eq!(inputs, ["a"]);
    }

    use crate::fs::RealFs;

    /// The chart loader's fast walk (listing kinds, an entry's kind) and its bounded reads
    /// pass through the recorder to the disk and are recorded like every other read: the
    /// same tree replays each to its result; a changed file, size or kind does not.
    #[test]
    fn the_fast_walk_and_bounded_reads_pass_through_and_replay() {
        let t = tempfile::tempdir().unwrap();
        let (dir, file) = (t.path().join("d"), t.path().join("a.txt"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(&file, "abc").unwrap();
        let rec = Recorder::new(&RealFs);
        assert_eq!(
            rec.read_dir_kinds(t.path()).unwrap(),
            RealFs.read_dir_kinds(t.path()).unwrap()
        );
        assert_eq!(rec.plain_kind(&dir), Some(crate::fs::PlainKind::Dir));
        assert_eq!(rec.read_at_most(&file, 3).unwrap(), Some(b"abc".to_vec()));
        assert_eq!(rec.read_at_most(&file, 2).unwrap(), None);
        let reads = rec.reads();
        let ops: BTreeSet<&str> = reads.iter().map(|r| r.op.as_str()).collect();
        assert_eq!(
            ops,
            BTreeSet::from([
                "plain_kind",
                "read_at_most:2",
                "read_at_most:3",
                "read_dir_kinds"
            ])
        );
        let replays = || {
            reads
                .iter()
                .filter(|r| observe(&RealFs, &r.op, Path::new(&r.path)) != r.result)
                .map(|r| r.op.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(replays(), Vec::<String>::new());
        std::fs::write(&file, "abd").unwrap();
        assert_eq!(replays(), ["read_at_most:3"], "same size, other bytes");
        std::fs::write(&file, "ab").unwrap();
        assert_eq!(replays(), ["read_at_most:2", "read_at_most:3"], "now fits");
        std::fs::remove_dir(&dir).unwrap();
        std::fs::write(&dir, "").unwrap();
        assert_eq!(
            replays(),
            [
                "plain_kind",
                "read_at_most:2",
                "read_at_most:3",
                "read_dir_kinds"
            ]
        );
    }

    /// Issue 38 item 8: the scope is the handle's, not the recorder's. Two scopes used on two
    /// threads at once, their calls interleaved, each keep their own; a scope that made no
    /// call is recorded as having made none; the recorder's own calls stay unscoped.
    #[test]
    fn scopes_used_at_once_on_two_threads_keep_their_own_calls() {
        let t = tempfile::tempdir().unwrap();
        for d in ["a", "b", "c"] {
            std::fs::create_dir(t.path().join(d)).unwrap();
            std::fs::write(t.path().join(d).join("f"), d).unwrap();
        }
        let rec = Recorder::new(&RealFs);
        let turns = std::sync::Barrier::new(2);
        std::thread::scope(|threads| {
            for d in ["a", "b"] {
                let (rec, turns, dir) = (&rec, &turns, t.path().join(d));
                threads.spawn(move || {
                    let scope = rec.scope(&dir);
                    for _ in 0..3 {
                        // Each call of one scope falls between two of the other's.
                        turns.wait();
                        assert_eq!(scope.read(&dir.join("f")).unwrap(), d.as_bytes());
                        assert!(scope.is_dir(&dir));
                    }
                });
            }
        });
        drop(rec.scope(&t.path().join("c")));
        assert!(rec.is_file(&t.path().join("c/f")));
        let scoped = rec.scoped_reads();
        assert_eq!(scoped.len(), 3);
        for (c, d) in scoped.iter().zip(["a", "b"]) {
            assert_eq!(c.dir, t.path().join(d));
            let paths: BTreeSet<&str> = c.reads.iter().map(|r| r.path.as_str()).collect();
            let dir = t.path().join(d);
            let file = dir.join("f");
            assert_eq!(
                paths,
                BTreeSet::from([dir.to_str().unwrap(), file.to_str().unwrap()])
            );
        }
        assert!(scoped[2].reads.is_empty());
        let unscoped = rec.reads();
        assert_eq!(unscoped.len(), 1);
        assert_eq!(unscoped[0].op, "is_file");
    }

    /// Issue 39, items 2 and 3: the key is created 0600 and read back; a link in its place
    /// is refused; a body under a recomputed plain digest or another purpose's tag does not
    /// open; a cache path through a link is refused.
    #[test]
    fn keys_tags_and_cache_paths() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("home/kiln/key");
        let k = CacheKey::load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = CacheKey::load_or_create(&path).unwrap();
        assert_eq!(k.0, again.0);
        assert_eq!(format!("{k:?}"), "CacheKey(..)");
        let sealed = k.seal(b"entry", b"{}");
        assert_eq!(k.open(b"entry", &sealed), Some(&b"{}"[..]));
        assert_eq!(k.open(b"journal", &sealed), None);
        let mut forged = digest(b"{}").into_bytes();
        forged.extend_from_slice(b"\n{}");
        assert_eq!(k.open(b"entry", &forged), None);
        assert_eq!(CacheKey::ephemeral().open(b"entry", &sealed), None);

        std::os::unix::fs::symlink(&path, t.path().join("link")).unwrap();
        assert!(CacheKey::load_or_create(&t.path().join("link")).is_err());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(CacheKey::load_or_create(&path).is_err());

        assert!(check_dir(&t.path().join("home/kiln/x/y")).is_ok());
        std::os::unix::fs::symlink(t.path().join("home"), t.path().join("cache")).unwrap();
        assert!(check_dir(&t.path().join("cache")).is_err());
        assert!(check_dir(&t.path().join("cache/kiln/deeper")).is_err());
    }
}
