//! The one door to the file system for the reading stages (load, the kustomize engine): a
//! small [`FileSystem`] trait with the real disk ([`RealFs`]) and an in-memory tree
//! ([`MemFs`]) for tests.
//!
//! Invariant: engine code never calls `std::fs` directly; it goes through a `&dyn FileSystem`,
//! so a build can be run over an in-memory tree and is a pure function of its files.
//! Directory listings are returned sorted, so no output depends on the OS's listing order.
#![allow(clippy::disallowed_methods)] // RealFs is the one reader of the disk

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Read-only access to a tree of files.
///
/// Paths are absolute or relative to the process's working directory for [`RealFs`], and
/// absolute for [`MemFs`]. Errors are plain `io::Error`s; callers add the path and the
/// operation when they turn them into diagnostics.
pub trait FileSystem: Send + Sync + std::fmt::Debug {
    /// The whole file, as bytes.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Whether `path` is a directory (following symlinks).
    fn is_dir(&self, path: &Path) -> bool;
    /// Whether `path` is a regular file (following symlinks).
    fn is_file(&self, path: &Path) -> bool;
    /// The entries of a directory, as full paths, sorted by name.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// The absolute path with every symlink resolved and `.`/`..` removed; an error when the
    /// path does not exist.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    /// What `path` itself is, the last link not followed, when this file system can tell
    /// in one call: `Some(Dir)`/`Some(File)` only for an entry that is not a symlink. `None`
    /// (the default, and for links and anything odd) sends the caller the long way:
    /// [`canonicalize`](Self::canonicalize), then `is_dir`/`is_file` on the result. The chart
    /// loader walks thousands of entries; resolving each was a fifth of loading a chart.
    fn plain_kind(&self, _path: &Path) -> Option<PlainKind> {
        None
    }

    /// [`read_dir`](Self::read_dir) with each entry's [`plain_kind`](Self::plain_kind). The
    /// real disk answers from the listing itself (the kind the directory entry records), so
    /// a walk costs no `stat` per entry; the default asks `plain_kind` entry by entry.
    fn read_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, Option<PlainKind>)>> {
        Ok(self
            .read_dir(path)?
            .into_iter()
            .map(|p| {
                let kind = self.plain_kind(&p);
                (p, kind)
            })
            .collect())
    }

    /// The whole file when it holds at most `max` bytes, `Ok(None)` when it holds more. The
    /// real disk answers from the size before reading anything (Helm refuses a chart file
    /// over 5 MiB on its `stat`: a huge file must not be read only to be refused).
    fn read_at_most(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        let data = self.read(path)?;
        Ok((data.len() as u64 <= max).then_some(data))
    }

    /// The whole file as UTF-8 text; anything else is an `InvalidData` error carrying a
    /// [`NotUtf8`] (line, column, and whether a UTF-16 byte-order mark shows the encoding).
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        decode_utf8(self.read(path)?)
    }

    /// The target `path` names when `path` itself is a symbolic link (the last link not
    /// followed), as written in the link; `None` for anything else, and by default. Asked
    /// only to explain a failure: see [`dangling_link`].
    fn read_link(&self, _path: &Path) -> Option<PathBuf> {
        None
    }
}

/// The first symbolic link on the way to `path` that leads nowhere (its target does not
/// exist, or the links loop), with the target it names: what to say instead of "not found"
/// when `path` cannot be resolved (issue 39, item 19: a dangling `kustomization.yaml` read
/// as a missing one). `None` when the path is missing for another reason. Only called on
/// the error path: it resolves each prefix of `path` once more.
pub fn dangling_link(fs: &dyn FileSystem, path: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut prefix = PathBuf::new();
    for part in normalize(path).components() {
        prefix.push(part);
        if matches!(part, Component::RootDir | Component::Prefix(_)) {
            continue;
        }
        // A prefix that does not resolve and is no link may still lie on the way to one: a
        // rooted view resolves nothing above its root.
        if fs.canonicalize(&prefix).is_err()
            && let Some(target) = fs.read_link(&prefix)
        {
            return Some((prefix, target));
        }
    }
    None
}

/// A directory entry that is not a symbolic link ([`FileSystem::plain_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainKind {
    Dir,
    File,
}

/// Why a file is not UTF-8 text: where the first invalid byte sits (1-based line and byte
/// column), and the encoding its byte-order mark names, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotUtf8 {
    pub line: usize,
    pub column: usize,
    /// `Some("UTF-16LE")` etc. when the file starts with that byte-order mark.
    pub bom: Option<&'static str>,
}

impl std::fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.bom {
            Some(enc) => write!(
                f,
                "the file is {enc} (it starts with a {enc} byte-order mark), not UTF-8"
            ),
            None => write!(
                f,
                "not UTF-8 text: invalid byte at line {}, column {}",
                self.line, self.column
            ),
        }
    }
}

impl std::error::Error for NotUtf8 {}

/// `bytes` as UTF-8 text, or an `InvalidData` error holding a [`NotUtf8`].
pub fn decode_utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let valid = &bytes[..e.utf8_error().valid_up_to()];
        let line_start = valid.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let bom = if bytes.starts_with(&[0xFF, 0xFE, 0, 0]) {
            Some("UTF-32LE")
        } else if bytes.starts_with(&[0, 0, 0xFE, 0xFF]) {
            Some("UTF-32BE")
        } else if bytes.starts_with(&[0xFF, 0xFE]) {
            Some("UTF-16LE")
        } else if bytes.starts_with(&[0xFE, 0xFF]) {
            Some("UTF-16BE")
        } else {
            None
        };
        let err = NotUtf8 {
            line: valid.iter().filter(|b| **b == b'\n').count() + 1,
            column: valid.len() - line_start + 1,
            bom,
        };
        io::Error::new(io::ErrorKind::InvalidData, err)
    })
}

/// Reads a file only when it is a regular file: it is opened without blocking (`O_NONBLOCK`),
/// so a FIFO in place of a file is an error at once instead of a read that waits forever,
/// and a device or socket is never read.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    Ok(read_regular_at_most(path, u64::MAX)?.unwrap_or_default())
}

/// [`read_regular`], refusing (`Ok(None)`) a file larger than `max` bytes on its `fstat`,
/// before reading it.
fn read_regular_at_most(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            if meta.is_dir() {
                "is a directory, not a file"
            } else {
                "not a regular file (kiln never reads a FIFO, device or socket)"
            },
        ));
    }
    // The size is known, so the buffer is reserved here with one byte to spare and filled
    // by plain `read`s (`File::read_to_end` would ask the size again: a `statx` and an
    // `lseek`). A read of a regular file returns less than asked only at its end, so the
    // spare byte not being filled is the end: no extra read that returns 0 (the chart
    // loader reads every file of a chart, and that read was a fifth of its system calls).
    // A file that grew since the `fstat` fills the spare byte, and is read to its end.
    if meta.len() > max {
        return Ok(None);
    }
    let len = meta.len() as usize;
    let mut out = vec![0u8; len.saturating_add(1)];
    let mut file = &file;
    let mut filled = 0;
    loop {
        let n = match file.read(&mut out[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let want = out.len() - filled;
        filled += n;
        if n < want {
            break;
        }
        // The spare byte was filled: it grew since the fstat, so the rest the ordinary way.
        file.read_to_end(&mut out)?;
        return Ok((out.len() as u64 <= max).then_some(out));
    }
    out.truncate(filled);
    Ok(Some(out))
}

/// A [`FileSystem`] that reads nothing outside `root`: every path is resolved (symlinks
/// followed) before it is read or listed, and one that lands outside is refused with
/// `PermissionDenied`, as is any path with a `.git` component below the root (a listing
/// leaves `.git` out): a repository's own data, `.git/config` with its remote's credentials
/// first, is never input. A path is refused on its words first (`..` climbing out, `.git`),
/// before anything is looked at, and a missing path whose nearest existing directory lies
/// outside is refused the same way, so an error never tells what exists outside the root
/// (issue 39). `kiln render` reads through it, so a kustomize base that climbs out
/// of the repository (`resources: [../../../outside]`, an absolute path) cannot bring
/// outside files into the render; `kiln kustomize` keeps kustomize's own load restrictor.
///
/// Resolving a path whole (`realpath`: a `readlink` per component) before every read was a
/// third of `kiln render`'s system calls on a platform of charts (119,300 for 250 chart
/// renders). So each directory is resolved once, and a path whose last entry is no link
/// (one `lstat`, [`FileSystem::plain_kind`]) is its resolved directory joined with its
/// name; anything else (a link, `..`, a relative path, a file system that cannot tell) is
/// resolved whole. A directory resolved once stays resolved for this value's life, one
/// render: the tree is not expected to change under a render.
#[derive(Debug)]
pub struct RootedFs<'a> {
    inner: &'a dyn FileSystem,
    root: PathBuf,
    /// More roots beside it (canonical): the fetched source trees of a render (issue 33). A
    /// path under one of them must resolve inside that same tree.
    trees: Vec<PathBuf>,
    /// What the root is, for errors ("the repository root", "the chart directory").
    what: &'static str,
    /// Directory → where it really is.
    dirs: std::sync::Mutex<BTreeMap<PathBuf, PathBuf>>,
}

impl<'a> RootedFs<'a> {
    /// Reads through `inner`, only inside `root` (canonical).
    pub fn new(inner: &'a dyn FileSystem, root: impl Into<PathBuf>) -> Self {
        RootedFs {
            inner,
            root: root.into(),
            trees: Vec::new(),
            what: "the repository root",
            dirs: Default::default(),
        }
    }

    /// The same, naming the root `what` in its errors (`"the chart directory"`).
    pub fn named(inner: &'a dyn FileSystem, root: impl Into<PathBuf>, what: &'static str) -> Self {
        RootedFs {
            what,
            ..RootedFs::new(inner, root)
        }
    }

    /// The same view, also reading inside each of `trees` (canonical directories: the source
    /// trees a render fetched), each confined to itself.
    pub fn with_trees(mut self, trees: impl IntoIterator<Item = PathBuf>) -> Self {
        self.trees.extend(trees);
        self
    }

    /// The root or tree a normalized path lies under (the deepest).
    fn home(&self, n: &Path) -> Option<&Path> {
        std::iter::once(&self.root)
            .chain(&self.trees)
            .filter(|r| n.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
            .map(PathBuf::as_path)
    }

    /// Where `path` really is: the same answer as `canonicalize`, from the resolved
    /// directories where its last entry is no link.
    fn real(&self, path: &Path) -> io::Result<PathBuf> {
        let plain_path = path.is_absolute()
            && path
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return self.inner.canonicalize(path);
        };
        if !plain_path || self.inner.plain_kind(path).is_none() {
            return self.inner.canonicalize(path);
        }
        Ok(self.real_dir(parent)?.join(name))
    }

    fn real_dir(&self, dir: &Path) -> io::Result<PathBuf> {
        // The root is canonical, and so is each directory above it: the walk up stops at
        // the first (an inner rooted view, the chart's inside the repository's, refuses to
        // resolve what lies above its own root).
        if self.root.starts_with(dir) || self.trees.iter().any(|t| t.starts_with(dir)) {
            return Ok(dir.to_path_buf());
        }
        if let Some(r) = self.dirs.lock().ok().and_then(|d| d.get(dir).cloned()) {
            return Ok(r);
        }
        let r = match (dir.parent(), dir.file_name()) {
            (Some(parent), Some(name)) if self.inner.plain_kind(dir) == Some(PlainKind::Dir) => {
                self.real_dir(parent)?.join(name)
            }
            _ => self.inner.canonicalize(dir)?,
        };
        if let Ok(mut d) = self.dirs.lock() {
            d.insert(dir.to_path_buf(), r.clone());
        }
        Ok(r)
    }

    /// The error for a path refused: it names the path as asked, never where it leads,
    /// and is the same whether or not anything is there (issue 39, item 6).
    fn refused(&self, path: &Path) -> io::Error {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{}` lies outside {} `{}` (or inside a `.git` directory); kiln render reads only inside it",
                path.display(),
                self.what,
                self.root.display()
            ),
        )
    }

    /// Whether a path is refused on its words alone, before anything is looked at: it climbs
    /// out of the root once `.`/`..` are removed, or names a `.git` entry below the root.
    fn refused_lexically(&self, path: &Path) -> bool {
        if !path.is_absolute() {
            return false;
        }
        let n = normalize(path);
        match self.home(&n).map(|home| n.strip_prefix(home)) {
            Some(Ok(rel)) => has_git_component(rel),
            _ => true,
        }
    }

    /// Whether a resolved path is inside the root (or a tree) and below no `.git` entry.
    fn allowed_real(&self, real: &Path) -> bool {
        self.home(real)
            .and_then(|home| real.strip_prefix(home).ok())
            .is_some_and(|rel| !has_git_component(rel))
    }

    /// Where `path` really is, when it is allowed: refused first on its words, then on
    /// where it resolves to. A path that does not exist is refused the same way when the
    /// nearest directory above it that does exist resolves outside the root: "not found"
    /// is only said of paths inside it, so an error never tells what exists outside.
    fn confined(&self, path: &Path) -> io::Result<PathBuf> {
        if self.refused_lexically(path) {
            return Err(self.refused(path));
        }
        match self.real(path) {
            // A path stays in the root or tree it names: a link in one fetched tree does not
            // lead into another, nor into the repository.
            Ok(real)
                if self.allowed_real(&real) && self.home(&real) == self.home(&normalize(path)) =>
            {
                Ok(real)
            }
            Ok(_) => Err(self.refused(path)),
            Err(e) => {
                let mut above = path.parent();
                while let Some(dir) = above {
                    if let Ok(real) = self.real_dir(dir) {
                        if !self.allowed_real(&real) {
                            return Err(self.refused(path));
                        }
                        break;
                    }
                    above = dir.parent();
                }
                Err(e)
            }
        }
    }

    fn check(&self, path: &Path) -> io::Result<()> {
        self.confined(path).map(|_| ())
    }
}

/// Whether `rel` has a `.git` component (any case: a case-insensitive file system opens
/// `.GIT` as `.git`). kiln never reads a repository's own data: `.git/config` holds remote
/// URLs with credentials.
fn has_git_component(rel: &Path) -> bool {
    rel.components().any(
        |c| matches!(c, Component::Normal(n) if n.to_str().is_some_and(|n| n.eq_ignore_ascii_case(".git"))),
    )
}

/// A listing's `.git` entry, left out of every listing of a [`RootedFs`].
fn is_git_entry(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.eq_ignore_ascii_case(".git"))
}

impl FileSystem for RootedFs<'_> {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.check(path)?;
        self.inner.read(path)
    }
    fn read_at_most(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        self.check(path)?;
        self.inner.read_at_most(path, max)
    }
    // What is outside the root is neither a directory nor a file, as far as a render can tell.
    fn is_dir(&self, path: &Path) -> bool {
        self.check(path).is_ok() && self.inner.is_dir(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        self.check(path).is_ok() && self.inner.is_file(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.check(path)?;
        let mut list = self.inner.read_dir(path)?;
        list.retain(|p| !is_git_entry(p));
        Ok(list)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.confined(path)
    }
    // A link's own text is inside the root when its directory is: refused first on its
    // words, as every other call (issue 39, item 6).
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        let parent = path.parent()?;
        if self.refused_lexically(path) || !self.allowed_real(&self.real_dir(parent).ok()?) {
            return None;
        }
        self.inner.read_link(path)
    }
    // A plain entry (no link) of a directory inside the root is inside the root, so the
    // kinds of the listing may pass through; a link still gets `None` and is resolved (and
    // checked) the long way.
    fn plain_kind(&self, path: &Path) -> Option<PlainKind> {
        if self.refused_lexically(path) {
            return None;
        }
        self.inner.plain_kind(path)
    }
    fn read_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, Option<PlainKind>)>> {
        self.check(path)?;
        Ok(self
            .inner
            .read_dir_kinds(path)?
            .into_iter()
            .filter(|(p, _)| !is_git_entry(p))
            .collect())
    }
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        read_regular(path)
    }
    fn read_at_most(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        read_regular_at_most(path, max)
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(self
            .read_dir_kinds(path)?
            .into_iter()
            .map(|(p, _)| p)
            .collect())
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        std::fs::read_link(path).ok()
    }
    fn plain_kind(&self, path: &Path) -> Option<PlainKind> {
        plain(std::fs::symlink_metadata(path).ok()?.file_type())
    }
    fn read_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, Option<PlainKind>)>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            // `DirEntry::file_type` is the type the listing carries (`d_type`); std falls
            // back to an `lstat` only where the file system leaves it unknown.
            let kind = entry.file_type().ok().and_then(plain);
            names.push((entry.file_name(), kind));
        }
        // One directory's entries differ only in their names: sorting the names is the
        // order of the paths. Sorting the paths by `Path::file_name` split every path into
        // components twice per comparison, 7 % of loading ingress-nginx.
        names.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(names
            .into_iter()
            .map(|(name, kind)| (path.join(name), kind))
            .collect())
    }
}

/// A file type as a [`PlainKind`]: links and special files are `None`.
fn plain(t: std::fs::FileType) -> Option<PlainKind> {
    if t.is_dir() {
        Some(PlainKind::Dir)
    } else if t.is_file() {
        Some(PlainKind::File)
    } else {
        None
    }
}

/// Reads `base/rel` without following any link: every directory from `base` down and the
/// file itself must be plain ([`FileSystem::plain_kind`]), and `rel` must be a relative path
/// of plain names (no `..`, no root). For trees that are input to be copied (the shard trees
/// of `kiln merge`): a link in one could bring any file of the machine into the output.
pub fn read_beneath(fs: &dyn FileSystem, base: &Path, rel: &str) -> io::Result<Vec<u8>> {
    let refuse = |why: String| io::Error::new(io::ErrorKind::PermissionDenied, why);
    let names: Vec<&str> = rel.split('/').collect();
    if names
        .iter()
        .any(|n| n.is_empty() || *n == "." || *n == ".." || n.contains('\\'))
    {
        return Err(refuse(format!("`{rel}` is not a plain relative path")));
    }
    let mut at = base.to_path_buf();
    for (i, name) in names.iter().enumerate() {
        at.push(name);
        let want = if i + 1 == names.len() {
            PlainKind::File
        } else {
            PlainKind::Dir
        };
        if fs.plain_kind(&at) != Some(want) {
            return Err(refuse(format!(
                "`{}` is a symbolic link, missing or not a plain {}; links in this tree are never followed",
                at.display(),
                if want == PlainKind::File {
                    "file"
                } else {
                    "directory"
                }
            )));
        }
    }
    fs.read(&at)
}

/// A borrowed file system is one (a [`Routed`] over `&dyn FileSystem`).
impl<T: FileSystem + ?Sized> FileSystem for &T {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        (**self).read(path)
    }
    fn read_at_most(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        (**self).read_at_most(path, max)
    }
    fn is_dir(&self, path: &Path) -> bool {
        (**self).is_dir(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        (**self).is_file(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        (**self).read_dir(path)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        (**self).canonicalize(path)
    }
    fn plain_kind(&self, path: &Path) -> Option<PlainKind> {
        (**self).plain_kind(path)
    }
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        (**self).read_link(path)
    }
    fn read_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, Option<PlainKind>)>> {
        (**self).read_dir_kinds(path)
    }
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        (**self).read_to_string(path)
    }
}

/// Two file systems behind one: a path under one of `prefixes` is read through `inside`,
/// every other path through `outside`. Paths are compared lexically, after [`normalize`], so
/// `chart/../x` is not in `chart`: a `..` can never carry a read into the other file system's
/// rules. For a chart read confined to its directory inside the repository's rules
/// (`kiln::render`), and a committed tree with the source cache beside it (`kiln status`).
#[derive(Debug)]
pub struct Routed<I, O> {
    pub inside: I,
    pub outside: O,
    pub prefixes: Vec<PathBuf>,
}

impl<I: FileSystem, O: FileSystem> Routed<I, O> {
    fn at(&self, path: &Path) -> &dyn FileSystem {
        let n = normalize(path);
        if self.prefixes.iter().any(|p| n.starts_with(p)) {
            &self.inside
        } else {
            &self.outside
        }
    }
}

impl<I: FileSystem, O: FileSystem> FileSystem for Routed<I, O> {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.at(path).read(path)
    }
    fn read_at_most(&self, path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
        self.at(path).read_at_most(path, max)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.at(path).is_dir(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        self.at(path).is_file(path)
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        self.at(path).read_dir(path)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.at(path).canonicalize(path)
    }
    fn plain_kind(&self, path: &Path) -> Option<PlainKind> {
        self.at(path).plain_kind(path)
    }
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        self.at(path).read_link(path)
    }
    fn read_dir_kinds(&self, path: &Path) -> io::Result<Vec<(PathBuf, Option<PlainKind>)>> {
        self.at(path).read_dir_kinds(path)
    }
}

/// Removes `.` and resolves `..` lexically (no symlinks involved).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` stays `/`, as on a real file system.
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[derive(Debug, Clone)]
enum Node {
    File(Vec<u8>),
    Dir,
    Symlink(PathBuf),
}

/// An in-memory file tree for tests. Paths are absolute; parent directories are created
/// implicitly. Symlinks hold a target that is absolute or relative to the link's directory.
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    nodes: BTreeMap<PathBuf, Node>,
}

impl MemFs {
    /// An empty tree (only `/`).
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(PathBuf::from("/"), Node::Dir);
        MemFs { nodes }
    }

    fn add_parents(&mut self, path: &Path) {
        let mut p = path.parent();
        while let Some(dir) = p {
            self.nodes.entry(dir.to_path_buf()).or_insert(Node::Dir);
            p = dir.parent();
        }
    }

    /// Adds (or replaces) a file. `path` must be absolute.
    pub fn add_file(&mut self, path: impl AsRef<Path>, content: impl AsRef<[u8]>) -> &mut Self {
        let path = normalize(path.as_ref());
        self.add_parents(&path);
        self.nodes
            .insert(path, Node::File(content.as_ref().to_vec()));
        self
    }

    /// Adds an empty directory.
    pub fn add_dir(&mut self, path: impl AsRef<Path>) -> &mut Self {
        let path = normalize(path.as_ref());
        self.add_parents(&path);
        self.nodes.insert(path, Node::Dir);
        self
    }

    /// Adds a symlink at `path` pointing to `target`.
    pub fn add_symlink(&mut self, path: impl AsRef<Path>, target: impl AsRef<Path>) -> &mut Self {
        let path = normalize(path.as_ref());
        self.add_parents(&path);
        self.nodes
            .insert(path, Node::Symlink(target.as_ref().to_path_buf()));
        self
    }

    /// Resolves every symlink along `path`; `None` when a component does not exist.
    fn resolve(&self, path: &Path) -> Option<PathBuf> {
        let mut resolved = PathBuf::from("/");
        let mut pending: Vec<std::ffi::OsString> = normalize(path)
            .components()
            .rev()
            .map(|c| c.as_os_str().to_owned())
            .collect();
        let mut hops = 0;
        while let Some(part) = pending.pop() {
            if part == "/" {
                resolved = PathBuf::from("/");
                continue;
            }
            if part == ".." {
                resolved.pop();
                continue;
            }
            let candidate = resolved.join(&part);
            match self.nodes.get(&candidate)? {
                Node::Symlink(target) => {
                    hops += 1;
                    // A symlink loop; a real file system reports ELOOP.
                    if hops > 40 {
                        return None;
                    }
                    let full = if target.is_absolute() {
                        target.clone()
                    } else {
                        resolved.join(target)
                    };
                    for c in full.components().rev() {
                        pending.push(c.as_os_str().to_owned());
                    }
                    resolved = PathBuf::from("/");
                }
                _ => resolved = candidate,
            }
        }
        Some(resolved)
    }

    fn node(&self, path: &Path) -> Option<&Node> {
        self.nodes.get(&self.resolve(path)?)
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file or directory", path.display()),
    )
}

impl FileSystem for MemFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.node(path) {
            Some(Node::File(bytes)) => Ok(bytes.clone()),
            Some(_) => Err(io::Error::other(format!(
                "{}: is a directory",
                path.display()
            ))),
            None => Err(not_found(path)),
        }
    }
    fn is_dir(&self, path: &Path) -> bool {
        matches!(self.node(path), Some(Node::Dir))
    }
    fn is_file(&self, path: &Path) -> bool {
        matches!(self.node(path), Some(Node::File(_)))
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let dir = self.resolve(path).ok_or_else(|| not_found(path))?;
        if !matches!(self.nodes.get(&dir), Some(Node::Dir)) {
            return Err(io::Error::other(format!(
                "{}: not a directory",
                path.display()
            )));
        }
        let base = normalize(path);
        Ok(self
            .nodes
            .keys()
            .filter(|k| k.parent() == Some(dir.as_path()) && *k != &dir)
            .filter_map(|k| k.file_name().map(|n| base.join(n)))
            .collect())
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let resolved = self.resolve(path).ok_or_else(|| not_found(path))?;
        if self.nodes.contains_key(&resolved) {
            Ok(resolved)
        } else {
            Err(not_found(path))
        }
    }
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        let path = normalize(path);
        let dir = self.resolve(path.parent()?)?;
        match self.nodes.get(&dir.join(path.file_name()?))? {
            Node::Symlink(target) => Some(target.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real disk lists a directory sorted by name (bytewise, as Go's `os.ReadDir`), with
    /// full paths and the kind from the listing; `read_dir` is the same list.
    #[test]
    fn real_listings_are_sorted_by_name_with_their_kinds() {
        let t = tempfile::tempdir().unwrap();
        for f in ["b", "a.b", "C", "a", "_x", "é"] {
            std::fs::write(t.path().join(f), "").unwrap();
        }
        std::fs::create_dir(t.path().join("B")).unwrap();
        let listed = RealFs.read_dir_kinds(t.path()).unwrap();
        let names: Vec<String> = listed
            .iter()
            .map(|(p, _)| p.strip_prefix(t.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["B", "C", "_x", "a", "a.b", "b", "é"]);
        assert_eq!(listed[0].1, Some(PlainKind::Dir));
        assert_eq!(listed[1].1, Some(PlainKind::File));
        let paths: Vec<PathBuf> = listed.into_iter().map(|(p, _)| p).collect();
        assert_eq!(RealFs.read_dir(t.path()).unwrap(), paths);
    }

    #[test]
    fn read_at_most_refuses_a_larger_file_and_reads_one_that_fits() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(RealFs.read_at_most(&p, 9).unwrap(), None);
        assert_eq!(
            RealFs.read_at_most(&p, 10).unwrap().as_deref(),
            Some(&b"0123456789"[..])
        );
        assert_eq!(RealFs.read(&p).unwrap(), b"0123456789");
        let empty = dir.path().join("e");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(RealFs.read(&empty).unwrap(), b"");
    }

    /// A path under a prefix reads the inside file system, any other the outside one, and
    /// `prefix/../x` is outside: the route is decided on the normalized path.
    #[test]
    fn routed_picks_by_the_normalized_path() {
        let mut inside = MemFs::new();
        inside.add_file("/cache/a.yaml", "inside");
        inside.add_file("/repo/x.yaml", "inside's x");
        let mut outside = MemFs::new();
        outside.add_file("/repo/x.yaml", "outside's x");
        let fs = Routed {
            inside,
            outside: &outside,
            prefixes: vec![PathBuf::from("/cache")],
        };
        let read = |p: &str| fs.read_to_string(Path::new(p)).ok();
        assert_eq!(read("/cache/a.yaml").as_deref(), Some("inside"));
        assert_eq!(read("/cache/./a.yaml").as_deref(), Some("inside"));
        assert_eq!(
            read("/cache/../repo/x.yaml").as_deref(),
            Some("outside's x")
        );
        assert_eq!(read("/repo/x.yaml").as_deref(), Some("outside's x"));
        assert!(fs.is_dir(Path::new("/cache")) && !fs.is_file(Path::new("/cache/b.yaml")));
    }

    #[test]
    fn memfs_reads_lists_and_resolves_symlinks() {
        let mut fs = MemFs::new();
        fs.add_file("/a/k.yaml", "x: 1")
            .add_file("/a/b/c.yaml", "y")
            .add_symlink("/a/link", "b")
            .add_symlink("/a/out", "../etc");
        fs.add_file("/etc/passwd", "root");
        assert_eq!(fs.read_to_string(Path::new("/a/k.yaml")).unwrap(), "x: 1");
        assert!(fs.is_dir(Path::new("/a/b")));
        assert!(fs.is_file(Path::new("/a/link/c.yaml")));
        assert_eq!(
            fs.canonicalize(Path::new("/a/link/c.yaml")).unwrap(),
            PathBuf::from("/a/b/c.yaml")
        );
        assert_eq!(
            fs.canonicalize(Path::new("/a/out/passwd")).unwrap(),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(
            fs.read_dir(Path::new("/a")).unwrap(),
            vec![
                PathBuf::from("/a/b"),
                PathBuf::from("/a/k.yaml"),
                PathBuf::from("/a/link"),
                PathBuf::from("/a/out")
            ]
        );
        assert_eq!(
            fs.read(Path::new("/a/missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert!(fs.read(Path::new("/a/b")).is_err());
    }

    /// A path through a link that leads nowhere names that link and its target (issue 39,
    /// item 19), on every file system; a plainly missing path names none.
    #[cfg(unix)]
    #[test]
    fn dangling_links_are_found_on_the_way_to_a_path() {
        let mut mem = MemFs::new();
        mem.add_file("/r/a/ok.yaml", "x")
            .add_symlink("/r/a/gone.yaml", "nowhere.yaml")
            .add_symlink("/r/dir", "missing-dir");
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap().join("r");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/ok.yaml"), "x").unwrap();
        std::os::unix::fs::symlink("nowhere.yaml", root.join("a/gone.yaml")).unwrap();
        std::os::unix::fs::symlink("missing-dir", root.join("dir")).unwrap();
        let rooted = RootedFs::new(&RealFs, &root);
        let cases: [(&dyn FileSystem, PathBuf); 3] = [
            (&mem, PathBuf::from("/r")),
            (&RealFs, root.clone()),
            (&rooted, root.clone()),
        ];
        for (fs, r) in cases {
            assert_eq!(
                dangling_link(fs, &r.join("a/gone.yaml")),
                Some((r.join("a/gone.yaml"), PathBuf::from("nowhere.yaml")))
            );
            assert_eq!(
                dangling_link(fs, &r.join("dir/kustomization.yaml")),
                Some((r.join("dir"), PathBuf::from("missing-dir")))
            );
            assert_eq!(dangling_link(fs, &r.join("a/missing.yaml")), None);
            assert_eq!(dangling_link(fs, &r.join("a/ok.yaml")), None);
        }
        // Outside the root, a rooted view looks at nothing.
        assert_eq!(dangling_link(&rooted, &root.join("../r2/x")), None);
    }

    #[test]
    fn normalize_removes_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("a/../../b")), PathBuf::from("../b"));
    }

    #[test]
    fn memfs_detects_symlink_loops() {
        let mut fs = MemFs::new();
        fs.add_symlink("/x", "/y").add_symlink("/y", "/x");
        assert!(fs.canonicalize(Path::new("/x")).is_err());
    }

    #[test]
    fn non_utf8_errors_give_the_line_and_name_utf16() {
        let e = decode_utf8(b"a: 1\nb: x\xff\n".to_vec()).unwrap_err();
        let inner = e.get_ref().unwrap().downcast_ref::<NotUtf8>().unwrap();
        assert_eq!((inner.line, inner.column, inner.bom), (2, 5, None));
        assert_eq!(
            e.to_string(),
            "not UTF-8 text: invalid byte at line 2, column 5"
        );
        let e = decode_utf8(b"\xff\xfea\x00:\x00".to_vec()).unwrap_err();
        assert!(e.to_string().contains("UTF-16LE"), "{e}");
    }

    #[test]
    fn rooted_fs_refuses_reads_outside_the_root() {
        let mut fs = MemFs::new();
        fs.add_file("/repo/a.yaml", "a")
            .add_file("/outside/s.yaml", "secret")
            .add_symlink("/repo/link", "/outside");
        let rooted = RootedFs::new(&fs, "/repo");
        assert_eq!(rooted.read(Path::new("/repo/a.yaml")).unwrap(), b"a");
        for bad in [
            "/outside/s.yaml",
            "/repo/../outside/s.yaml",
            "/repo/link/s.yaml",
        ] {
            let e = rooted.read(Path::new(bad)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{bad}");
        }
        assert!(rooted.read_dir(Path::new("/outside")).is_err());
    }

    /// Issue 33, item 1: a fetched source tree is readable beside the root, and confined
    /// to itself: no path or link from it reaches the repository or another tree.
    #[test]
    fn rooted_fs_reads_source_trees_each_confined_to_itself() {
        let mut fs = MemFs::new();
        fs.add_file("/repo/a.yaml", "a")
            .add_file("/cache/t1/deploy/c.yaml", "c")
            .add_file("/cache/t2/x.yaml", "other tree")
            .add_file("/cache/loose.yaml", "cache")
            .add_symlink("/cache/t1/deploy/to-repo", "/repo")
            .add_symlink("/cache/t1/deploy/to-t2", "/cache/t2")
            .add_symlink("/cache/t1/deploy/inside", "/cache/t1/deploy");
        let rooted = RootedFs::new(&fs, "/repo")
            .with_trees([PathBuf::from("/cache/t1"), PathBuf::from("/cache/t2")]);
        assert_eq!(rooted.read(Path::new("/repo/a.yaml")).unwrap(), b"a");
        assert_eq!(
            rooted.read(Path::new("/cache/t1/deploy/c.yaml")).unwrap(),
            b"c"
        );
        assert_eq!(
            rooted
                .read(Path::new("/cache/t1/deploy/inside/c.yaml"))
                .unwrap(),
            b"c"
        );
        for bad in [
            "/cache/loose.yaml",
            "/cache/t1/deploy/to-repo/a.yaml",
            "/cache/t1/deploy/to-t2/x.yaml",
            "/cache/t1/../loose.yaml",
        ] {
            let e = rooted.read(Path::new(bad)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{bad}");
        }
        // Without the trees, the same view refuses them.
        let plain = RootedFs::new(&fs, "/repo");
        assert!(plain.read(Path::new("/cache/t1/deploy/c.yaml")).is_err());
    }

    /// Issue 39, item 1: a `.git` directory below the root is never read, listed or
    /// resolved, whichever way the path reaches it (plainly, by `..`, through a link).
    #[test]
    fn rooted_fs_never_reads_under_git() {
        let mut fs = MemFs::new();
        fs.add_file(
            "/repo/.git/config",
            "url = https://ghp_FAKE@example.com/x.git",
        )
        .add_file("/repo/chart/a.yaml", "a")
        .add_symlink("/repo/chart/config", "../.git/config")
        .add_symlink("/repo/chart/gitdir", "../.git");
        let rooted = RootedFs::new(&fs, "/repo");
        for bad in [
            "/repo/.git/config",
            "/repo/.GIT/config",
            "/repo/chart/../.git/config",
            "/repo/chart/config",
            "/repo/chart/gitdir/config",
        ] {
            let e = rooted.read(Path::new(bad)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{bad}");
            assert!(!e.to_string().contains("ghp_FAKE"), "{bad}");
            assert!(!rooted.is_file(Path::new(bad)), "{bad}");
        }
        assert!(rooted.read_dir(Path::new("/repo/.git")).is_err());
        let listed = rooted.read_dir(Path::new("/repo")).unwrap();
        assert_eq!(listed, [PathBuf::from("/repo/chart")]);
    }

    /// Issue 39, item 6: a path outside the root gets the same error whether or not
    /// something is there, so a render's error never tells what exists outside.
    #[test]
    fn rooted_fs_refuses_outside_paths_before_looking() {
        let mut fs = MemFs::new();
        fs.add_file("/repo/a.yaml", "a")
            .add_file("/outside/s.yaml", "secret")
            .add_symlink("/repo/link", "/outside");
        let rooted = RootedFs::new(&fs, "/repo");
        for (present, missing) in [
            ("/repo/../outside/s.yaml", "/repo/../outside/nothing.yaml"),
            ("/repo/link/s.yaml", "/repo/link/nothing.yaml"),
            ("/outside", "/elsewhere"),
        ] {
            let show = |p: &str| {
                let e = rooted.read(Path::new(p)).unwrap_err();
                (e.kind(), e.to_string().replace(p, "PATH"))
            };
            assert_eq!(show(present), show(missing), "{present} / {missing}");
            assert_eq!(show(missing).0, io::ErrorKind::PermissionDenied);
            let c = |p: &str| rooted.canonicalize(Path::new(p)).unwrap_err().kind();
            assert_eq!(c(present), c(missing));
            assert!(!rooted.is_dir(Path::new(present)));
        }
        // Inside the root, a missing file is still "not found".
        let e = rooted.read(Path::new("/repo/nothing.yaml")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    /// The real disk, counting the paths resolved whole.
    #[derive(Debug, Default)]
    struct CountingDisk(std::sync::atomic::AtomicUsize);

    impl FileSystem for CountingDisk {
        fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
            RealFs.read(path)
        }
        fn is_dir(&self, path: &Path) -> bool {
            RealFs.is_dir(path)
        }
        fn is_file(&self, path: &Path) -> bool {
            RealFs.is_file(path)
        }
        fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
            RealFs.read_dir(path)
        }
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            RealFs.canonicalize(path)
        }
        fn plain_kind(&self, path: &Path) -> Option<PlainKind> {
            RealFs.plain_kind(path)
        }
    }

    /// On the real disk, files of a directory already resolved are checked with one
    /// `lstat` each, not resolved whole; the answers are `canonicalize`'s, and links (to a
    /// directory or a file) and `..` out of the root are still refused, before and after
    /// their directory was resolved.
    #[cfg(unix)]
    #[test]
    fn rooted_fs_resolves_each_directory_once_and_still_refuses_links_out() {
        let t = tempfile::tempdir().unwrap();
        let base = RealFs.canonicalize(t.path()).unwrap();
        let (repo, outside) = (base.join("repo"), base.join("outside"));
        std::fs::create_dir_all(repo.join("c/templates")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        for f in ["a.yaml", "b.yaml", "c.yaml"] {
            std::fs::write(repo.join("c/templates").join(f), f).unwrap();
        }
        std::fs::write(outside.join("s.yaml"), "secret").unwrap();
        std::os::unix::fs::symlink(&outside, repo.join("c/out")).unwrap();
        std::os::unix::fs::symlink(outside.join("s.yaml"), repo.join("c/templates/s.yaml"))
            .unwrap();
        std::os::unix::fs::symlink(repo.join("c/templates"), repo.join("c/in")).unwrap();
        let disk = CountingDisk::default();
        let rooted = RootedFs::new(&disk, repo.clone());
        for f in ["a.yaml", "b.yaml", "c.yaml"] {
            let p = repo.join("c/templates").join(f);
            assert_eq!(rooted.read(&p).unwrap(), f.as_bytes());
            assert_eq!(
                rooted.canonicalize(&p).unwrap(),
                RealFs.canonicalize(&p).unwrap()
            );
        }
        let whole = disk.0.load(std::sync::atomic::Ordering::SeqCst);
        assert!(
            whole <= 1,
            "{whole} paths resolved whole for three files of one directory"
        );
        // Through a link inside the root, to a directory inside it: read, resolved.
        let via = repo.join("c/in/a.yaml");
        assert_eq!(rooted.read(&via).unwrap(), b"a.yaml");
        assert_eq!(
            rooted.canonicalize(&via).unwrap(),
            repo.join("c/templates/a.yaml")
        );
        for bad in [
            repo.join("c/templates/s.yaml"),
            repo.join("c/out/s.yaml"),
            repo.join("c/templates/../../../outside/s.yaml"),
        ] {
            let e = rooted.read(&bad).unwrap_err();
            assert_eq!(
                e.kind(),
                io::ErrorKind::PermissionDenied,
                "{}",
                bad.display()
            );
        }
        assert!(rooted.read_dir(&repo.join("c/out")).is_err());
        assert_eq!(
            rooted
                .read(&repo.join("c/templates/none.yaml"))
                .unwrap_err()
                .kind(),
            io::ErrorKind::NotFound
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("platform.yaml");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !status.is_ok_and(|s| s.success()) {
            return; // no mkfifo on this machine
        }
        // Without O_NONBLOCK this open waits for a writer forever.
        let e = RealFs.read(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(RealFs.read(t.path()).is_err());
    }
}
