//! Stage 6, write: [`ArtifactSet`] → a directory on disk. The only stage that changes the
//! outside world.
//!
//! kiln owns exactly the files listed in the directory's `.kiln-owned.json` (written by the
//! previous run). A run:
//! 1. plans: which files are new or changed (byte comparison), which owned files are no longer
//!    generated (to prune); a file in the way that kiln does not own and whose bytes differ is
//!    an error, and nothing is written;
//! 2. stages every new or changed file (and the new manifest) in a temporary directory beside
//!    the target, so a failure while writing leaves the target untouched;
//! 3. commits: when the target does not exist yet, the staged directory is renamed into place
//!    in one step; otherwise each staged file is renamed over its target (atomic per file),
//!    pruned files are removed (and directories they leave empty), and the manifest is renamed
//!    in last.
//!
//! Invariants: a file kiln did not generate is never deleted or changed; a second run on
//! unchanged input touches nothing (not even mtimes); paths from the manifest or the artifact
//! set that are not plain relative paths are refused, so nothing outside the target is touched.

use crate::artifact::ArtifactSet;
use miette::Diagnostic;
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The ownership manifest's file name, at the root of the output directory.
/// The ownership marker, shared with `kiln publish` (`crate::git::MARKER_FILE`), so a
/// rendered directory committed by hand is recognised by `publish`, `diff` and `verify`.
pub const MANIFEST: &str = crate::git::MARKER_FILE;

/// What a write did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Files created or changed.
    pub written: Vec<String>,
    /// Owned files left as they were.
    pub unchanged: Vec<String>,
    /// Owned files removed because they are no longer generated.
    pub removed: Vec<String>,
}

impl WriteReport {
    /// `true` when nothing on disk changed.
    pub fn is_noop(&self) -> bool {
        self.written.is_empty() && self.removed.is_empty()
    }
}

/// Why writing failed. Codes `kiln::write::<condition>`.
#[derive(Debug, Error, Diagnostic)]
pub enum WriteError {
    /// A file or directory operation failed.
    #[error("cannot {op} `{path}`: {source}")]
    #[diagnostic(
        code(kiln::write::io),
        help("check permissions and free space; the previous output is left as it was")
    )]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },

    /// A file kiln would write exists and kiln does not own it.
    #[error("refusing to overwrite `{path}`: kiln did not generate it")]
    #[diagnostic(
        code(kiln::write::unowned_file),
        help(
            "kiln only changes files listed in {MANIFEST}; move the file away, or write to another directory with --write-to"
        )
    )]
    UnownedFile { path: String },

    /// A directory on the way to a file kiln writes or prunes is a symbolic link. Following
    /// it would change files outside the output directory.
    #[error("refusing to write through the symbolic link `{path}` inside the output directory")]
    #[diagnostic(
        code(kiln::write::symlink_in_path),
        help(
            "kiln writes only inside the output directory; replace the link with a real directory, or point --write-to at the link's target"
        )
    )]
    SymlinkInPath { path: String },

    /// The ownership manifest cannot be read or lists an unsafe path.
    #[error("invalid ownership manifest `{path}`: {reason}")]
    #[diagnostic(
        code(kiln::write::manifest_invalid),
        help(
            "the manifest is written by kiln; restore it from version control, or delete it (kiln then owns nothing and prunes nothing)"
        )
    )]
    ManifestInvalid { path: String, reason: String },
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> WriteError + 'a {
    move |source| WriteError::Io {
        op,
        path: path.display().to_string(),
        source,
    }
}

/// A relative, `/`-separated path with no empty, `.` or `..` segment.
fn is_safe(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

fn read_manifest(out: &Path) -> Result<BTreeSet<String>, WriteError> {
    let path = out.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(io_err("read", &path)(e)),
    };
    let invalid = |reason: String| WriteError::ManifestInvalid {
        path: path.display().to_string(),
        reason,
    };
    let m = crate::git::OwnedMarker::parse(&path.display().to_string(), text.as_bytes())
        .map_err(|e| invalid(e.to_string()))?;
    if let Some(bad) = m
        .files
        .iter()
        .find(|f| !is_safe(f) || f.as_str() == MANIFEST)
    {
        return Err(invalid(format!("`{bad}` is not a plain relative path")));
    }
    Ok(m.files.into_iter().collect())
}

/// Refuses `rel` when a directory between `out` and the file is a symbolic link (`out` itself
/// may be one: that is the user's choice of target). `checked` caches directories already seen.
pub(crate) fn check_no_symlinked_dir(
    out: &Path,
    rel: &str,
    checked: &mut BTreeSet<PathBuf>,
) -> Result<(), WriteError> {
    let mut dir = out.to_path_buf();
    let segments: Vec<&str> = rel.split('/').collect();
    for seg in &segments[..segments.len().saturating_sub(1)] {
        dir.push(seg);
        if !checked.insert(dir.clone()) {
            continue;
        }
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(WriteError::SymlinkInPath {
                    path: dir.display().to_string(),
                });
            }
            Ok(_) => {}
            // Missing: created later as a real directory; nothing below it exists yet.
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e) => return Err(io_err("inspect", &dir)(e)),
        }
    }
    Ok(())
}

/// Takes an exclusive lock on `dir` (the output's parent) for the whole read-plan-commit
/// cycle, so two kiln processes writing the same directory cannot lose each other's manifest
/// entries (a partial render's files would otherwise end up unowned). Released on drop.
/// Where directories cannot be opened as files (Windows), writes go unlocked.
fn lock_dir(dir: &Path) -> Result<Option<std::fs::File>, WriteError> {
    let Ok(handle) = std::fs::File::open(dir) else {
        return Ok(None);
    };
    handle.lock().map_err(io_err("lock", dir))?;
    Ok(Some(handle))
}

/// Removes `.kiln-stage-*` directories left in `parent` by a run that was killed (SIGKILL,
/// power loss) before it could clean up. Only called while holding the lock on `parent`:
/// every writer stages under that lock, so no staging directory there is in use.
fn remove_stale_stages(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let is_stage = e.file_name().to_string_lossy().starts_with(".kiln-stage-");
        if is_stage && e.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn manifest_bytes(files: Vec<String>) -> Vec<u8> {
    crate::git::OwnedMarker::new(files).to_bytes()
}

/// Writes `set` into `out` (see the module docs); every owned file not in `set` is pruned.
///
/// Errors: [`WriteError`]; on any error before the commit step nothing in `out` has changed.
pub fn write(set: &ArtifactSet, out: &Path) -> Result<WriteReport, WriteError> {
    write_scoped(set, out, &|_| true)
}

/// [`write`] for a partial render (`--project`, `--environment`, …): only owned files for
/// which `in_scope` holds may be pruned; owned files outside the scope stay, and stay owned.
///
/// Errors: as [`write`].
pub fn write_scoped(
    set: &ArtifactSet,
    out: &Path,
    in_scope: &dyn Fn(&str) -> bool,
) -> Result<WriteReport, WriteError> {
    if let Some(bad) = set.paths().find(|p| !is_safe(p) || *p == MANIFEST) {
        // Emit builds every path itself; this is a bug, not user input.
        return Err(WriteError::ManifestInvalid {
            path: bad.to_string(),
            reason: "internal error: unsafe artifact path".into(),
        });
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(io_err("create directory", &parent))?;
    let lock = lock_dir(&parent)?;
    if lock.is_some() {
        remove_stale_stages(&parent);
    }
    if out.exists() && !out.is_dir() {
        return Err(WriteError::Io {
            op: "write into",
            path: out.display().to_string(),
            source: io::Error::new(
                io::ErrorKind::NotADirectory,
                "it is a file, not a directory",
            ),
        });
    }
    let exists = out.exists();
    let owned = if exists {
        read_manifest(out)?
    } else {
        BTreeSet::new()
    };

    // 1. Plan.
    let mut report = WriteReport::default();
    let mut checked = BTreeSet::new();
    for (path, bytes) in &set.files {
        check_no_symlinked_dir(out, path, &mut checked)?;
        let target = out.join(path);
        match std::fs::read(&target) {
            Ok(old) if &old == bytes => report.unchanged.push(path.clone()),
            Ok(_) if !owned.contains(path) => {
                return Err(WriteError::UnownedFile {
                    path: target.display().to_string(),
                });
            }
            Ok(_) => report.written.push(path.clone()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => report.written.push(path.clone()),
            // A directory where kiln wants a file is never kiln's to replace.
            Err(_) if target.is_dir() => {
                return Err(WriteError::UnownedFile {
                    path: target.display().to_string(),
                });
            }
            Err(e) => return Err(io_err("read", &target)(e)),
        }
    }
    let mut kept = Vec::new();
    for path in owned.iter().filter(|p| !set.files.contains_key(*p)) {
        if !in_scope(path) {
            kept.push(path.clone());
        } else if out.join(path).is_file() {
            check_no_symlinked_dir(out, path, &mut checked)?;
            report.removed.push(path.clone());
        }
    }
    let mut listed: Vec<String> = set.paths().map(str::to_string).chain(kept).collect();
    listed.sort();
    let manifest = manifest_bytes(listed);
    let manifest_same = std::fs::read(out.join(MANIFEST)).is_ok_and(|old| old == manifest);
    if report.is_noop() && manifest_same {
        return Ok(report);
    }

    // 2. Stage beside the target (same file system, so renames are atomic).
    let stage = tempfile::Builder::new()
        .prefix(".kiln-stage-")
        .tempdir_in(&parent)
        .map_err(io_err("create a staging directory in", &parent))?;
    let staged = |p: &str| stage.path().join(p);
    for path in &report.written {
        let dest = staged(path);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(io_err("create directory", dir))?;
        }
        std::fs::write(&dest, &set.files[path]).map_err(io_err("write", &dest))?;
    }
    std::fs::write(staged(MANIFEST), &manifest).map_err(io_err("write", &staged(MANIFEST)))?;

    // 3. Commit.
    if !exists {
        // Rename first, then disarm the cleanup: on failure the staging directory is dropped
        // (removed) instead of being left beside the target.
        std::fs::rename(stage.path(), out).map_err(io_err("move the staged tree to", out))?;
        let _ = stage.keep();
        return Ok(report);
    }
    for path in &report.written {
        let dest = out.join(path);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(io_err("create directory", dir))?;
        }
        std::fs::rename(staged(path), &dest).map_err(io_err("replace", &dest))?;
    }
    for path in &report.removed {
        let dest = out.join(path);
        std::fs::remove_file(&dest).map_err(io_err("remove", &dest))?;
        // Remove directories the prune left empty, up to (not including) `out`; a directory
        // holding anything else, owned or not, stays.
        let mut dir = dest.parent();
        while let Some(d) = dir {
            if d == out || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    let dest = out.join(MANIFEST);
    std::fs::rename(staged(MANIFEST), &dest).map_err(io_err("replace", &dest))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(files: &[(&str, &str)]) -> ArtifactSet {
        let mut s = ArtifactSet::new();
        for (p, t) in files {
            s.insert(*p, *t);
        }
        s
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(base, &p, out);
                } else {
                    out.push(
                        p.strip_prefix(base)
                            .unwrap()
                            .to_string_lossy()
                            .replace('\\', "/"),
                    );
                }
            }
        }
        walk(dir, dir, &mut out);
        out.sort();
        out
    }

    #[test]
    fn writes_prunes_owned_and_keeps_foreign_files() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let r = write(
            &set(&[("web/dev/a/a.gen.yaml", "a"), ("web/dev/b/b.gen.yaml", "b")]),
            &out,
        )
        .unwrap();
        assert_eq!(r.written.len(), 2);
        assert_eq!(
            listing(&out),
            [
                ".kiln-owned.json",
                "web/dev/a/a.gen.yaml",
                "web/dev/b/b.gen.yaml"
            ]
        );
        std::fs::write(out.join("README.md"), "mine").unwrap();
        std::fs::write(out.join("web/dev/b/notes.txt"), "mine too").unwrap();

        let r = write(&set(&[("web/dev/a/a.gen.yaml", "a2")]), &out).unwrap();
        assert_eq!(r.written, ["web/dev/a/a.gen.yaml"]);
        assert_eq!(r.removed, ["web/dev/b/b.gen.yaml"]);
        assert_eq!(
            listing(&out),
            [
                ".kiln-owned.json",
                "README.md",
                "web/dev/a/a.gen.yaml",
                "web/dev/b/notes.txt"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(out.join("web/dev/a/a.gen.yaml")).unwrap(),
            "a2"
        );
        // No staging directory is left behind.
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
    }

    #[test]
    fn scoped_write_prunes_only_inside_the_scope() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        write(
            &set(&[("web/dev/a/a.gen.yaml", "a"), ("api/dev/b/b.gen.yaml", "b")]),
            &out,
        )
        .unwrap();
        // A render of project `web` only, in which `a` changed.
        let r = write_scoped(&set(&[("web/dev/a/a.gen.yaml", "a2")]), &out, &|p| {
            p.starts_with("web/")
        })
        .unwrap();
        assert_eq!(r.removed, Vec::<String>::new());
        assert_eq!(
            listing(&out),
            [
                ".kiln-owned.json",
                "api/dev/b/b.gen.yaml",
                "web/dev/a/a.gen.yaml"
            ]
        );
        // `api/dev/b` is still owned: a full render without it prunes it.
        let r = write(&set(&[("web/dev/a/a.gen.yaml", "a2")]), &out).unwrap();
        assert_eq!(r.removed, ["api/dev/b/b.gen.yaml"]);
    }

    #[test]
    fn second_identical_run_touches_nothing() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let s = set(&[("p/e/c/c.gen.yaml", "x"), ("p/e/c/kustomization.yaml", "y")]);
        write(&s, &out).unwrap();
        let before = std::fs::metadata(out.join("p/e/c/c.gen.yaml"))
            .unwrap()
            .modified()
            .unwrap();
        let r = write(&s, &out).unwrap();
        assert!(r.is_noop());
        assert_eq!(r.unchanged.len(), 2);
        let after = std::fs::metadata(out.join("p/e/c/c.gen.yaml"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after);
    }

    #[test]
    fn refuses_to_overwrite_unowned_files_and_writes_nothing() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        std::fs::create_dir_all(out.join("p/e/c")).unwrap();
        std::fs::write(out.join("p/e/c/c.gen.yaml"), "hand-written").unwrap();
        let err = write(
            &set(&[("a/new.yaml", "n"), ("p/e/c/c.gen.yaml", "x")]),
            &out,
        )
        .unwrap_err();
        assert!(matches!(err, WriteError::UnownedFile { .. }), "{err}");
        assert_eq!(listing(&out), ["p/e/c/c.gen.yaml"]);
        // Identical bytes are adopted rather than refused.
        let r = write(&set(&[("p/e/c/c.gen.yaml", "hand-written")]), &out).unwrap();
        assert_eq!(r.unchanged, ["p/e/c/c.gen.yaml"]);
    }

    #[test]
    fn manifest_with_escaping_paths_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(t.path().join("victim"), "keep").unwrap();
        std::fs::write(
            out.join(MANIFEST),
            r#"{"generatedBy": "kiln", "files": ["../victim"]}"#,
        )
        .unwrap();
        let err = write(&set(&[("a.yaml", "a")]), &out).unwrap_err();
        assert!(matches!(err, WriteError::ManifestInvalid { .. }), "{err}");
        assert!(t.path().join("victim").exists());
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_directory_inside_the_output_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let files = [
            ("web/dev/a/a.gen.yaml", "new"),
            ("web/prod/a/a.gen.yaml", "new"),
        ];
        write(&set(&files), &out).unwrap();
        // Someone replaces `web/dev` with a link to a directory outside the output.
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir_all(elsewhere.join("a")).unwrap();
        std::fs::write(elsewhere.join("a/a.gen.yaml"), "precious").unwrap();
        std::fs::remove_dir_all(out.join("web/dev")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, out.join("web/dev")).unwrap();

        let changed = [
            ("web/dev/a/a.gen.yaml", "v2"),
            ("web/prod/a/a.gen.yaml", "v2"),
        ];
        let err = write(&set(&changed), &out).unwrap_err();
        assert!(matches!(err, WriteError::SymlinkInPath { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("a/a.gen.yaml")).unwrap(),
            "precious"
        );
        // Nothing written, not even beside the link.
        assert_eq!(
            std::fs::read_to_string(out.join("web/prod/a/a.gen.yaml")).unwrap(),
            "new"
        );

        // Pruning through the link is refused too.
        let err = write(&set(&[("web/prod/a/a.gen.yaml", "new")]), &out).unwrap_err();
        assert!(matches!(err, WriteError::SymlinkInPath { .. }), "{err}");
        assert!(elsewhere.join("a/a.gen.yaml").exists());
    }

    #[test]
    fn concurrent_partial_writes_keep_every_owned_file_and_leave_no_staging() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        // Fresh target: every writer but one finds the directory created by another.
        let projects: Vec<String> = (0..8).map(|i| format!("p{i}")).collect();
        std::thread::scope(|s| {
            for p in &projects {
                let out = &out;
                s.spawn(move || {
                    let files: Vec<(String, String)> = (0..20)
                        .map(|c| (format!("{p}/dev/c{c}/c{c}.gen.yaml"), format!("{p}-{c}")))
                        .collect();
                    let mut set = ArtifactSet::new();
                    for (path, text) in &files {
                        set.insert(path.as_str(), text.as_str());
                    }
                    let prefix = format!("{p}/");
                    write_scoped(&set, out, &|f| f.starts_with(&prefix)).unwrap();
                });
            }
        });
        let owned = read_manifest(&out).unwrap();
        assert_eq!(owned.len(), 8 * 20, "every writer's files stay owned");
        let leftovers: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".kiln-stage-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn stale_staging_directories_of_killed_runs_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let stale = t.path().join(".kiln-stage-killed");
        std::fs::create_dir_all(stale.join("web")).unwrap();
        std::fs::write(stale.join("web/a.yaml"), "half").unwrap();
        std::fs::write(t.path().join("notes.txt"), "mine").unwrap();
        write(&set(&[("a.yaml", "a")]), &out).unwrap();
        assert!(!stale.exists());
        assert!(t.path().join("notes.txt").exists());
    }

    #[test]
    fn a_file_as_output_directory_is_refused_and_kept() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        std::fs::write(&out, "a file").unwrap();
        let err = write(&set(&[("a.yaml", "a")]), &out).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "a file");
    }
}
