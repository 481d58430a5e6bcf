//! The one door to the file system for the reading stages (load, the kustomize engine): a
//! small [`FileSystem`] trait with the real disk ([`RealFs`]) and an in-memory tree
//! ([`MemFs`]) for tests.
//!
//! Invariant: engine code never calls `std::fs` directly; it goes through a `&dyn FileSystem`,
//! so a build can be run over an in-memory tree and is a pure function of its files.
//! Directory listings are returned sorted, so no output depends on the OS's listing order.

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Read-only access to a tree of files.
///
/// Paths are absolute or relative to the process's working directory for [`RealFs`], and
/// absolute for [`MemFs`]. Errors are plain `io::Error`s; callers add the path and the
/// operation when they turn them into diagnostics.
pub trait FileSystem: Sync {
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

    /// The whole file as UTF-8 text; invalid UTF-8 is an `InvalidData` error.
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        let bytes = self.read(path)?;
        String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }
    fn read_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            out.push(entry?.path());
        }
        out.sort();
        Ok(out)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
