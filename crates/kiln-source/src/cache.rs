//! The source cache: content-addressed, shared by every checkout and every process, safe to
//! delete. Under `<base>/sources/` (`<base>` is `KILN_CACHE_DIR`, else `$XDG_CACHE_HOME/kiln`,
//! chosen by the CLI):
//!
//! ```text
//! sources/.lock            the file lock: held exclusively while an entry is stored
//! sources/trees/<hex>/     a fetched tree, named by its content digest (tree_digest)
//! sources/git/<hex>.git    a bare repository per Git URL, the fetches' object store
//! sources/tmp/             staging: a tree is written here, then renamed into trees/
//! ```
//!
//! A tree is renamed in whole, so a reader sees all of it or none; and every use hashes it
//! again ([`Cache::verified_tree`]): an entry whose content is not its name is refused,
//! never used.
#![allow(clippy::disallowed_methods)] // the source fetcher's I/O boundary (clippy.toml)

use crate::error::{Origin, SourceError};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::path::{Path, PathBuf};

/// The cache directory.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

/// The exclusive lock on the cache, released when dropped.
#[derive(Debug)]
pub struct CacheLock {
    file: File,
}

impl Drop for CacheLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl Cache {
    /// The cache under `base` (`KILN_CACHE_DIR`, or `$XDG_CACHE_HOME/kiln`).
    pub fn new(base: &Path) -> Cache {
        Cache {
            root: base.join("sources"),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Blocks until this process holds the cache's lock (other processes storing wait).
    pub fn lock(&self) -> Result<CacheLock, SourceError> {
        std::fs::create_dir_all(&self.root)
            .map_err(|e| SourceError::io("create", &self.root, e))?;
        let path = self.root.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| SourceError::io("open", &path, e))?;
        file.lock().map_err(|e| SourceError::io("lock", &path, e))?;
        Ok(CacheLock { file })
    }

    /// Where the tree of content digest `digest` (`sha256:<hex>`) lives.
    pub fn tree_path(&self, digest: &str) -> PathBuf {
        self.root
            .join("trees")
            .join(digest.strip_prefix("sha256:").unwrap_or(digest))
    }

    /// The bare repository fetches from `url` go into.
    pub fn git_dir(&self, url: &str) -> PathBuf {
        let key = kiln_base::digest::sha256_hex(url.as_bytes());
        self.root.join("git").join(format!("{}.git", &key[..32]))
    }

    /// A fresh staging directory (removed when dropped unless stored).
    pub fn staging(&self) -> Result<tempfile::TempDir, SourceError> {
        let tmp = self.root.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|e| SourceError::io("create", &tmp, e))?;
        tempfile::Builder::new()
            .prefix("fetch-")
            .tempdir_in(&tmp)
            .map_err(|e| SourceError::io("create a staging directory in", &tmp, e))
    }

    /// The tree of `digest`, hashed again: `Ok(None)` when it is not cached, an error when
    /// its content is not its digest.
    pub fn verified_tree(
        &self,
        digest: &str,
        origin: &Origin,
    ) -> Result<Option<PathBuf>, SourceError> {
        let path = self.tree_path(digest);
        if std::fs::symlink_metadata(&path).is_err() {
            return Ok(None);
        }
        let actual = tree_digest(&path)?;
        if actual != digest {
            return Err(SourceError::CacheTampered {
                origin: Box::new(origin.clone()),
                path: path.display().to_string(),
                expected: digest.to_string(),
                actual,
            });
        }
        Ok(Some(path))
    }

    /// Moves the staged tree `staged` into the cache under its content digest and returns
    /// both. An entry already there is checked and kept (another process stored the same
    /// content).
    pub fn store_tree(
        &self,
        staged: tempfile::TempDir,
        origin: &Origin,
    ) -> Result<(String, PathBuf), SourceError> {
        let digest = tree_digest(staged.path())?;
        let _lock = self.lock()?;
        if let Some(path) = self.verified_tree(&digest, origin)? {
            return Ok((digest, path));
        }
        let path = self.tree_path(&digest);
        let parent = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(parent).map_err(|e| SourceError::io("create", parent, e))?;
        let staged = staged.keep();
        std::fs::rename(&staged, &path).map_err(|e| SourceError::io("store", &path, e))?;
        Ok((digest, path))
    }
}

/// The content digest of a tree: SHA-256 over its sorted listing, one line per entry
/// (`F <mode> <path> <sha256>` for a file, `L <path> <target>` for a symbolic link; a
/// directory is implied by its entries). File names are compared as bytes, so the digest
/// is the same on every machine.
pub fn tree_digest(root: &Path) -> Result<String, SourceError> {
    let mut lines: Vec<(Vec<u8>, String)> = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let dir = root.join(&rel);
        let entries = std::fs::read_dir(&dir).map_err(|e| SourceError::io("list", &dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| SourceError::io("list", &dir, e))?;
            let rel = rel.join(entry.file_name());
            let path = root.join(&rel);
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| SourceError::io("inspect", &path, e))?;
            let key = rel.as_os_str().as_encoded_bytes().to_vec();
            let shown = rel.display().to_string();
            if meta.is_dir() {
                dirs.push(rel);
            } else if meta.file_type().is_symlink() {
                let target =
                    std::fs::read_link(&path).map_err(|e| SourceError::io("read", &path, e))?;
                lines.push((key, format!("L {shown} {}\n", target.display())));
            } else {
                let data = std::fs::read(&path).map_err(|e| SourceError::io("read", &path, e))?;
                let exec = {
                    use std::os::unix::fs::PermissionsExt;
                    meta.permissions().mode() & 0o111 != 0
                };
                let mode = if exec { "755" } else { "644" };
                let sum = kiln_base::digest::sha256_hex(&data);
                lines.push((key, format!("F {mode} {shown} {sum}\n")));
            }
        }
    }
    lines.sort();
    let mut h = Sha256::new();
    for (_, line) in &lines {
        h.update(line.as_bytes());
    }
    Ok(format!("sha256:{}", kiln_base::digest::hex(&h.finalize())))
}

/// A chart archive's one top-level directory.
pub fn chart_dir(root: &std::path::Path, origin: &Origin) -> Result<PathBuf, SourceError> {
    let entries: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(|e| SourceError::io("list", root, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    match &entries[..] {
        [one] if one.is_dir() && one.join("Chart.yaml").is_file() => Ok(one.clone()),
        _ => Err(SourceError::BadResponse {
            origin: Box::new(origin.clone()),
            detail: "the archive is not a chart (one top-level directory holding Chart.yaml)"
                .into(),
            help: "check that the URL names a packaged Helm chart".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin::new("git", "git://127.0.0.1/app.git", "main")
    }

    #[test]
    fn a_stored_tree_is_found_by_its_digest_and_a_tampered_one_refused() {
        let base = tempfile::tempdir().unwrap();
        let cache = Cache::new(base.path());
        let staged = cache.staging().unwrap();
        std::fs::create_dir(staged.path().join("deploy")).unwrap();
        std::fs::write(staged.path().join("deploy/component.yaml"), "a: 1\n").unwrap();
        let (digest, path) = cache.store_tree(staged, &origin()).unwrap();
        assert!(digest.starts_with("sha256:"));
        assert_eq!(
            cache.verified_tree(&digest, &origin()).unwrap(),
            Some(path.clone())
        );
        // The same content stored again keeps the first copy.
        let again = cache.staging().unwrap();
        std::fs::create_dir(again.path().join("deploy")).unwrap();
        std::fs::write(again.path().join("deploy/component.yaml"), "a: 1\n").unwrap();
        assert_eq!(cache.store_tree(again, &origin()).unwrap().0, digest);
        std::fs::write(path.join("deploy/component.yaml"), "a: 2\n").unwrap();
        let err = cache.verified_tree(&digest, &origin()).unwrap_err();
        assert!(matches!(err, SourceError::CacheTampered { .. }), "{err}");
        assert_eq!(cache.verified_tree("sha256:00", &origin()).unwrap(), None);
    }

    #[test]
    fn the_digest_covers_names_contents_modes_and_links() {
        let a = tempfile::tempdir().unwrap();
        std::fs::write(a.path().join("f"), "x").unwrap();
        let d1 = tree_digest(a.path()).unwrap();
        std::fs::write(a.path().join("f"), "y").unwrap();
        let d2 = tree_digest(a.path()).unwrap();
        std::os::unix::fs::symlink("f", a.path().join("l")).unwrap();
        let d3 = tree_digest(a.path()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(a.path().join("f"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let d4 = tree_digest(a.path()).unwrap();
        let all = [&d1, &d2, &d3, &d4];
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                assert_ne!(x, y);
            }
        }
    }

    #[test]
    fn the_lock_is_exclusive_between_handles() {
        let base = tempfile::tempdir().unwrap();
        let cache = Cache::new(base.path());
        let held = cache.lock().unwrap();
        let other = File::options()
            .write(true)
            .open(cache.root().join(".lock"))
            .unwrap();
        assert!(other.try_lock().is_err());
        drop(held);
        assert!(other.try_lock().is_ok());
    }
}
