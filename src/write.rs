//! Stage 6, write: [`ArtifactSet`] → a directory on disk. The only stage that changes the
//! outside world.
//!
//! kiln owns exactly the files listed in the directory's `.kiln-owned.json` (written by the
//! previous run). A run:
//! 1. resolves the target (following a symlinked `--write-to`) and locks its real parent, so
//!    two names for one directory take one lock;
//! 2. plans: which files are new or changed (byte comparison), which owned files are no longer
//!    generated (to prune); a file in the way that kiln does not own is an error (even with
//!    the same bytes: only files kiln wrote become owned), and nothing is written;
//! 3. stages every new or changed file (and the new manifest) in a temporary directory beside
//!    the real target (same file system, so renames never cross devices), marked as kiln's;
//! 4. commits: when the target does not exist yet, the staged directory is renamed into place
//!    in one step. Otherwise the journal comes first: a manifest listing the old *and* new
//!    files replaces the old one, so whatever happens next every file kiln places is already
//!    owned and any next run, whatever its input, finishes the job (it prunes what it does not
//!    generate). Then each replaced or pruned file is moved into the staging directory as a
//!    backup, the staged file renamed over its target (atomic per file), and the final
//!    manifest renamed in last. An I/O error during the commit moves every backup back and
//!    restores the old manifest, so the previous output is left as it was.
//!
//! Invariants: a file kiln did not generate is never deleted or changed; a second run on
//! unchanged input touches nothing (not even mtimes); paths from the manifest or the artifact
//! set that are not plain relative paths are refused, so nothing outside the target is touched;
//! only regular files are read (a FIFO is refused, never waited on); the only directories
//! removed beside the target are staging directories holding kiln's stage marker.
#![allow(clippy::disallowed_methods)] // the write stage: the only one that changes the disk

use crate::artifact::{ArtifactSet, Scope};
use miette::Diagnostic;
use std::collections::BTreeSet;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The ownership manifest's file name, at the root of the output directory: the marker of
/// [`crate::marker`], shared with `kiln publish`, so a rendered directory committed by hand is
/// recognised by `publish`, `diff` and `verify`.
pub const MANIFEST: &str = crate::marker::MARKER_FILE;

mod at;
mod summary;

/// What a write did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteReport {
    /// Files created or changed.
    pub written: Vec<String>,
    /// Owned files left as they were.
    pub unchanged: Vec<String>,
    /// Owned files removed because they are no longer generated.
    pub removed: Vec<String>,
    /// What the removals and renames mean, one line per kind and environment (`removes 6
    /// Applications in prod-us`, `renames cart → shop-cart in dev`; `summary`).
    pub changes: Vec<String>,
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
        help(
            "check permissions and free space; kiln undoes a failed update, so the previous output is left as it was"
        )
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

    /// The output directory is, or is inside, a Git directory: writing there would corrupt the
    /// repository (its objects, refs and config).
    #[error("refusing to write into the Git directory `{path}`")]
    #[diagnostic(
        code(kiln::write::git_directory),
        help(
            "--write-to names the folder for the rendered tree, e.g. `deploy`; use `kiln publish` to commit it"
        )
    )]
    GitDirectory { path: String },

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

    /// `--write-to` names a directory whose pruning could touch the sources.
    #[error("refusing to write to `{path}`: {reason}")]
    #[diagnostic(
        code(kiln::write::dangerous_target),
        help(
            "write to a directory of its own that holds no sources, such as `deploy/` at the repository root"
        )
    )]
    DangerousTarget { path: String, reason: String },

    /// The ownership manifest cannot be read or lists an unsafe path.
    #[error("invalid ownership manifest `{path}`: {reason}")]
    #[diagnostic(
        code(kiln::write::manifest_invalid),
        help(
            "the manifest is written by kiln; restore it from version control, or delete it (kiln then owns nothing and prunes nothing)"
        )
    )]
    ManifestInvalid { path: String, reason: String },

    /// SIGINT or SIGTERM arrived while the output was being written: the write either
    /// finished its renames or undid them before stopping, as the message says. `signal` is
    /// the signal's number: the binary ends by it, as it would have in any other phase
    /// ([`WriteError::signal`]).
    #[error("interrupted by {}: {outcome}", signal_name(*signal))]
    #[diagnostic(
        code(kiln::write::interrupted),
        help("the output is whole; run the render again to bring it up to date")
    )]
    Interrupted { outcome: String, signal: i32 },

    /// An incremental render reuses a file of the previous write without its bytes, and the
    /// file is no longer the one written then (edited while kiln ran). Nothing was written;
    /// the caller renders in full instead.
    #[error("`{path}` changed while kiln rendered")]
    #[diagnostic(
        code(kiln::write::changed_during_render),
        help("run the render again; kiln rewrites the whole tree when its output was edited")
    )]
    ChangedDuringRender { path: String },
}

impl WriteError {
    /// The signal that stopped the write (SIGINT or SIGTERM), for a caller that ends the
    /// process by it once it has said what the write did.
    pub fn signal(&self) -> Option<i32> {
        match self {
            WriteError::Interrupted { signal, .. } => Some(*signal),
            _ => None,
        }
    }
}

/// The name of the signals the write holds, as `kill -l` prints them.
fn signal_name(signal: i32) -> String {
    match signal {
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
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
    let text = match crate::fs::read_regular(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(io_err("read", &path)(e)),
    };
    let invalid = |reason: String| WriteError::ManifestInvalid {
        path: path.display().to_string(),
        reason,
    };
    let m = crate::marker::OwnedMarker::parse(&text).map_err(|e| invalid(e.0))?;
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

/// Takes an exclusive lock on `dir` (the output's real parent) for the whole
/// read-plan-commit cycle, so two kiln processes writing the same directory cannot lose each
/// other's manifest entries (a partial render's files would otherwise end up unowned).
/// Released on drop. Where directories cannot be opened as files (Windows), writes go unlocked.
fn lock_dir(dir: &Path) -> Result<Option<std::fs::File>, WriteError> {
    let Ok(handle) = std::fs::File::open(dir) else {
        return Ok(None);
    };
    handle.lock().map_err(io_err("lock", dir))?;
    Ok(Some(handle))
}

/// The file inside a staging directory that proves kiln made it; it names the output.
const STAGE_MARKER: &str = ".kiln-stage";

/// The staging directory name prefix for output `name`: `.kiln-stage-<name>-`.
fn stage_prefix(out: &Path) -> String {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".kiln-stage-{name}-")
}

fn stage_marker_text(out: &Path) -> String {
    format!("kiln staging directory for {}\n", out.display())
}

/// Removes staging directories that a killed run (SIGKILL, power loss) left beside `out`.
/// Only called while holding the lock on `out`'s parent, under which every writer stages, and
/// only a directory that kiln can prove it made goes: its name is this output's staging
/// prefix, it is a real directory (not a symlink), and it holds the stage marker naming
/// this output. Anything else named `.kiln-stage-*` is left alone.
fn remove_stale_stages(parent: &Path, out: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let prefix = stage_prefix(out);
    let expected = stage_marker_text(out);
    for e in entries.flatten() {
        let named = e.file_name().to_string_lossy().starts_with(&prefix);
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !named || !is_dir {
            continue;
        }
        let marker = crate::fs::read_regular(&e.path().join(STAGE_MARKER));
        if marker.is_ok_and(|m| m == expected.as_bytes()) {
            remove_stage(&e.path());
        } else {
            // A run killed between removing the marker and the directory (or between
            // creating the directory and its marker) left it empty: `rmdir` removes only an
            // empty directory, so nothing of anyone's is lost (issue 39, item 13).
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Removes a staging directory in an order that keeps it recognisable until the end: every
/// entry but the marker, then the marker, then the (empty) directory. A kill at any point
/// leaves either a marked directory or an empty one, both of which the next run removes
/// (`remove_stale_stages`); `remove_dir_all` removes in directory order and could leave a
/// half-removed directory without its marker, beside the output forever.
fn remove_stage(stage: &Path) {
    #[cfg(test)]
    if let Some(signal) = SIGNAL_IN_CLEANUP.take() {
        interrupt::note_in_test(signal);
    }
    if let Ok(entries) = std::fs::read_dir(stage) {
        for e in entries.flatten() {
            if e.file_name() == STAGE_MARKER {
                continue;
            }
            #[cfg(test)]
            if FAULT.with(|f| f.get().is_some_and(|(_, kill)| kill)) && fault().is_err() {
                return; // a simulated kill
            }
            let path = e.path();
            let _ = if e.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
    }
    let _ = std::fs::remove_file(stage.join(STAGE_MARKER));
    let _ = std::fs::remove_dir(stage);
}

/// A staging directory of this run, removed with [`remove_stage`] when dropped unless kept.
struct Stage {
    path: PathBuf,
    keep: bool,
}

impl Stage {
    /// A new staging directory for `out` in `parent`, its marker written at once.
    fn create(parent: &Path, out: &Path) -> Result<Stage, WriteError> {
        let path = tempfile::Builder::new()
            .prefix(&stage_prefix(out))
            .tempdir_in(parent)
            .map_err(io_err("create a staging directory in", parent))?
            .keep();
        let stage = Stage { path, keep: false };
        let marker = stage.path.join(STAGE_MARKER);
        std::fs::write(&marker, stage_marker_text(out)).map_err(io_err("write", &marker))?;
        Ok(stage)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if !self.keep {
            remove_stage(&self.path);
        }
    }
}

/// `out` with every symlink resolved: the real directory when it exists, else its real
/// parent joined with its name. The lock, the staging directory and every path below are
/// taken from this, so `--write-to /abs/out`, `--write-to .` and a symlink to the same
/// directory share one lock and one file system.
fn resolve_target(out: &Path) -> Result<PathBuf, WriteError> {
    let absolute = if out.is_absolute() {
        out.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(io_err("resolve", out))?
            .join(out)
    };
    let absolute = crate::fs::normalize(&absolute);
    if let Ok(real) = std::fs::canonicalize(&absolute) {
        return Ok(real);
    }
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        return Ok(absolute);
    };
    std::fs::create_dir_all(parent).map_err(io_err("create directory", parent))?;
    let parent = std::fs::canonicalize(parent).map_err(io_err("resolve", parent))?;
    Ok(parent.join(name))
}

/// `out` resolved as the write resolves it (see `resolve_target`), creating nothing; for
/// naming the output (the render journal's key).
pub fn resolved_target(out: &Path) -> Option<PathBuf> {
    let absolute = crate::fs::normalize(&std::env::current_dir().ok()?.join(out));
    if let Ok(real) = std::fs::canonicalize(&absolute) {
        return Some(real);
    }
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .ok()
            .map(|p| p.join(name))
            .or(Some(absolute.clone())),
        _ => Some(absolute),
    }
}

fn manifest_bytes(files: Vec<String>) -> Vec<u8> {
    crate::marker::OwnedMarker::new(files).to_bytes()
}

/// Refuses a `--write-to` target that would put kiln's output (and its pruning) over the
/// sources: the target may not be, contain, or lie inside any of `protected` (the repository
/// root, the platform directory, each component directory), and may not be `/`. Paths are
/// compared after resolving symlinks.
///
/// Errors: [`WriteError::DangerousTarget`].
pub fn check_target(out: &Path, root: &Path, sources: &[PathBuf]) -> Result<(), WriteError> {
    let target = resolve_target(out)?;
    let refuse = |reason: String| {
        Err(WriteError::DangerousTarget {
            path: out.display().to_string(),
            reason,
        })
    };
    if target.parent().is_none() {
        return refuse("it is the file system root".into());
    }
    if root.starts_with(&target) {
        return refuse(format!(
            "it is or contains the repository root `{}`",
            root.display()
        ));
    }
    for src in sources {
        if src.starts_with(&target) {
            return refuse(format!("it contains the sources in `{}`", src.display()));
        }
        if target.starts_with(src) {
            return refuse(format!("it lies inside the sources in `{}`", src.display()));
        }
    }
    Ok(())
}

/// What `stat` says about a file kiln wrote: enough that a file whose stamp is unchanged
/// (and older than the record of it, see [`Known`]) can be taken as unchanged without
/// reading it. `ctime` and the inode change on every write and rename and cannot be set by
/// hand, so restoring an edited file's size and mtime does not fool the check.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Stamp {
    pub len: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub ino: u64,
    pub dev: u64,
}

/// The stamp of the regular file at `path` (symbolic links are not followed); `None` for
/// anything else, and on systems without these fields (there every file is read).
pub fn stamp(path: &Path) -> Option<Stamp> {
    let m = std::fs::symlink_metadata(path).ok()?;
    if !m.file_type().is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(Stamp {
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        })
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// A file of a previous write: its path, the SHA-256 of the bytes written, its stamp after
/// the write.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Written {
    pub path: String,
    pub digest: String,
    pub stamp: Option<Stamp>,
}

/// What a previous write left, for a cheaper comparison (see [`WriteOptions::known`]): its files,
/// recorded at `recorded` (a file modified at or after that instant is racily clean, as
/// git calls it, and is read), and the digest of each file about to be written.
#[derive(Debug, Default)]
pub struct Known<'a> {
    pub files: std::collections::BTreeMap<&'a str, &'a Written>,
    pub recorded: Option<std::time::SystemTime>,
    pub digests: Option<&'a std::collections::BTreeMap<String, String>>,
    /// Files of the set whose bytes are placeholders (an incremental render reuses them from
    /// the previous write): each must be unchanged by its stamp, else the write stops with
    /// [`WriteError::ChangedDuringRender`] before anything is written.
    pub reused: Option<&'a BTreeSet<String>>,
}

impl Known<'_> {
    /// `true` when the file at `target` (relative `path`) is, by its stamp, exactly the one
    /// recorded with `digest`.
    fn unchanged(&self, path: &str, target: &Path, digest: &str) -> bool {
        let (Some(w), Some(recorded)) = (self.files.get(path), self.recorded) else {
            return false;
        };
        let Some(old) = w.stamp else {
            return false;
        };
        w.digest == digest && before(old.mtime, recorded) && stamp(target) == Some(old)
    }
}

impl Known<'_> {
    /// [`Known::unchanged`] for the file `name` in the directory `dir`.
    fn unchanged_at(
        &self,
        path: &str,
        dir: std::os::fd::BorrowedFd,
        name: &str,
        digest: &str,
    ) -> bool {
        let (Some(w), Some(recorded)) = (self.files.get(path), self.recorded) else {
            return false;
        };
        let Some(old) = w.stamp else {
            return false;
        };
        w.digest == digest && before(old.mtime, recorded) && at::stamp(dir, name) == Some(old)
    }
}

/// Whether `mtime` (seconds, nanoseconds since the epoch) lies strictly before `t`.
fn before(mtime: (i64, i64), t: std::time::SystemTime) -> bool {
    let Ok(d) = t.duration_since(std::time::UNIX_EPOCH) else {
        return false;
    };
    let t = (
        i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        i64::from(d.subsec_nanos()),
    );
    mtime < t
}

/// Stamps and digests of the files of `set` as now written in `out` (for the journal).
pub fn written(
    set: &ArtifactSet,
    out: &Path,
    digests: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<Written>, WriteError> {
    use rayon::prelude::*;
    let out = resolve_target(out)?;
    Ok(set
        .files
        .par_iter()
        .map(|(path, _)| Written {
            path: path.clone(),
            digest: digests.get(path).cloned().unwrap_or_default(),
            stamp: stamp(&out.join(path)),
        })
        .collect())
}

/// [`written`] of every file `digests` names (a write streamed file by file, whose set was
/// never held whole).
pub fn written_digests(
    out: &Path,
    digests: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<Written>, WriteError> {
    use rayon::prelude::*;
    let out = resolve_target(out)?;
    Ok(digests
        .par_iter()
        .map(|(path, digest)| Written {
            path: path.clone(),
            digest: digest.clone(),
            stamp: stamp(&out.join(path)),
        })
        .collect())
}

/// `true` when `out` holds exactly the files of a previous write, unchanged, and its
/// ownership marker has the SHA-256 `marker`: then writing the same tree again would
/// change nothing. Files are compared by stamp where [`Known`] allows it, else read and
/// digested; no directory on the way may be a symbolic link (the write would refuse it).
pub fn verify_unchanged(
    out: &Path,
    files: &[Written],
    marker: &str,
    recorded: std::time::SystemTime,
) -> bool {
    use rayon::prelude::*;
    let Ok(out) = resolve_target(out) else {
        return false;
    };
    let same_marker = crate::fs::read_regular(&out.join(MANIFEST))
        .is_ok_and(|b| kiln_base::digest::sha256_hex(&b) == marker);
    if !same_marker {
        return false;
    }
    let mut checked = BTreeSet::new();
    if files
        .iter()
        .any(|w| !is_safe(&w.path) || check_no_symlinked_dir(&out, &w.path, &mut checked).is_err())
    {
        return false;
    }
    let known = Known {
        files: files.iter().map(|w| (w.path.as_str(), w)).collect(),
        recorded: Some(recorded),
        digests: None,
        reused: None,
    };
    files.par_iter().all(|w| {
        let target = out.join(&w.path);
        known.unchanged(&w.path, &target, &w.digest)
            || crate::fs::read_regular(&target)
                .is_ok_and(|b| kiln_base::digest::sha256_hex(&b) == w.digest)
    })
}

/// How to write: the variants of the write stage.
#[derive(Debug, Default)]
pub struct WriteOptions<'a> {
    /// The slice this write is responsible for ([`Scope`]; a partial render: `--project`,
    /// `--environment`, …): only owned files inside it may be pruned; owned files outside it
    /// stay, and stay owned. An empty slice writes nothing.
    pub scope: Scope,
    /// What the previous write left: a file is taken as unchanged without reading it when
    /// `known` proves it (the same digest and an unchanged, not racily recent [`Stamp`]).
    pub known: Known<'a>,
    /// The platform's environments in the spec's order: the summary of what the write
    /// renames and removes lists them so (environment names sorted when empty).
    pub environments: &'a [String],
}

/// Stage 6, the one entry: writes `set` into `out` (see the module docs); every owned file
/// of `opts.scope` not in `set` is pruned. A [`Writer`] given every file of `set` in turn.
///
/// Errors: [`WriteError`]; on any error before the commit step nothing in `out` has changed.
pub fn write(
    set: &ArtifactSet,
    out: &Path,
    opts: &WriteOptions,
) -> Result<WriteReport, WriteError> {
    if opts.scope.is_empty() {
        return Ok(WriteReport::default());
    }
    if let Some(bad) = set.paths().find(|p| !is_safe(p) || *p == MANIFEST) {
        return Err(unsafe_path(bad));
    }
    let known = Known {
        files: opts.known.files.clone(),
        recorded: opts.known.recorded,
        digests: None,
        reused: opts.known.reused,
    };
    let mut writer = Writer::new(out, known);
    for (path, bytes) in &set.files {
        let digest = opts.known.digests.and_then(|d| d.get(path));
        writer.add(path, bytes, digest.map(String::as_str))?;
    }
    writer.finish(&opts.scope, opts.environments)
}

/// An artifact path that is not a plain relative one: emit builds every path itself, so
/// this is a bug, not user input.
fn unsafe_path(path: &str) -> WriteError {
    WriteError::ManifestInvalid {
        path: path.to_string(),
        reason: "internal error: unsafe artifact path".into(),
    }
}

/// [`write()`] a file at a time (issue 38, item 8): each file given to [`Writer::add`] is
/// compared with the output and, when new or changed, staged at once, so a render hands
/// its files over as each piece of BuildPlans is rendered and holds none of their bytes
/// until the end. [`Writer::finish`] then prunes (it needs every path, which only the end
/// knows) and commits, as [`write()`] does. Dropped without `finish`, it removes what it
/// staged: the output is left as it was.
///
/// The output is opened (resolved, locked, its manifest read) when the first file comes, and
/// stays locked until the end. SIGINT and SIGTERM are held from the first staged file: an
/// [`Writer::add`] after one arrived returns [`WriteError::Interrupted`] (the staged files
/// are dropped, nothing changed).
pub struct Writer<'a> {
    shown: PathBuf,
    known: Known<'a>,
    open: Option<Open>,
}

/// The output of a [`Writer`] once opened, and what the write planned so far.
struct Open {
    out: PathBuf,
    parent: PathBuf,
    /// Held until the end (see `lock_dir`).
    _lock: Option<std::fs::File>,
    exists: bool,
    owned: BTreeSet<String>,
    /// Handles in the output, for comparing (`None`: the output does not exist yet).
    dirs: Option<at::Dirs<'static>>,
    /// Every file given, and whether it is written (new or changed).
    files: std::collections::BTreeMap<String, bool>,
    replaced: BTreeSet<String>,
    new_dirs: BTreeSet<String>,
    /// The old bytes of the summarized files replaced ([`summary::reduced`]).
    old_bytes: Vec<(String, Vec<u8>)>,
    /// The summarized files written, reduced, and the environments and projects of every
    /// component directory given; only over an existing output (a new one replaces nothing).
    new_summarized: std::collections::BTreeMap<String, Vec<u8>>,
    present: summary::Present,
    staged: Option<Staged>,
}

/// The staging directory, once the first file is staged.
struct Staged {
    held: interrupt::Held,
    stage: Stage,
    new_root: PathBuf,
    dirs: at::Dirs<'static>,
}

impl<'a> Writer<'a> {
    /// A write into `out` (nothing is touched until the first file comes). `known` as
    /// [`WriteOptions::known`]; its `digests` are not read: each file's comes with it.
    pub fn new(out: &Path, known: Known<'a>) -> Self {
        Writer {
            shown: out.to_path_buf(),
            known,
            open: None,
        }
    }

    /// Takes the file `path` (relative, `/`-separated) with `bytes`; `digest` is its
    /// SHA-256 (hex) when the caller has it, for [`Known`]'s cheap comparison. Each path is
    /// given once.
    ///
    /// Errors: as [`write()`]'s planning ([`WriteError::UnownedFile`], a link on the way, …),
    /// an I/O error staging it, [`WriteError::Interrupted`] when SIGINT or SIGTERM came.
    pub fn add(
        &mut self,
        path: &str,
        bytes: &[u8],
        digest: Option<&str>,
    ) -> Result<(), WriteError> {
        if !is_safe(path) || path == MANIFEST {
            return Err(unsafe_path(path));
        }
        if self.open.is_none() {
            self.open = Some(Open::new(&self.shown)?);
        }
        let open = self.open.as_mut().expect("opened above");
        let written = open.plan(path, bytes, digest, &self.known)?;
        open.files.insert(path.to_string(), written);
        if open.exists && summary::summarized(path) {
            if written {
                open.new_summarized
                    .insert(path.to_string(), summary::reduced(path, bytes));
            }
            open.present.note(path, bytes);
        }
        if written {
            open.stage(path, bytes)?;
        }
        match open.staged.as_ref().and_then(|s| s.held.pending()) {
            Some(signal) => Err(stopped(signal)),
            None => Ok(()),
        }
    }

    /// The bytes of `path`, given earlier, as this write will leave them: read back from
    /// the staged tree, or from the output when unchanged. For a caller that dropped them
    /// and needs a few again (the Kubernetes validation's custom resources).
    pub fn read_back(&self, path: &str) -> Option<Vec<u8>> {
        let open = self.open.as_ref()?;
        let file = match (open.files.get(path)?, &open.staged) {
            (true, Some(s)) => s.new_root.join(path),
            (true, None) => return None,
            (false, _) => open.out.join(path),
        };
        crate::fs::read_regular(&file).ok()
    }

    /// Every path given, in path order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.open
            .iter()
            .flat_map(|o| o.files.keys().map(String::as_str))
    }

    /// Prunes the owned files of `scope` not given, and commits (see the module docs).
    /// `environments` as [`WriteOptions::environments`]. An empty `scope` writes nothing.
    ///
    /// Errors: as [`write()`].
    pub fn finish(
        mut self,
        scope: &Scope,
        environments: &[String],
    ) -> Result<WriteReport, WriteError> {
        if scope.is_empty() {
            return Ok(WriteReport::default());
        }
        let open = match self.open.take() {
            Some(open) => open,
            None => Open::new(&self.shown)?,
        };
        open.commit(scope, environments)
    }
}

/// The outcome of SIGINT or SIGTERM before the commit.
fn stopped(signal: i32) -> WriteError {
    WriteError::Interrupted {
        outcome: "the output was left as it was (the staged files were removed)".into(),
        signal,
    }
}

impl Open {
    fn new(shown: &Path) -> Result<Open, WriteError> {
        // Refused before anything is created on the way, and again once symlinks are resolved.
        let in_git = |p: &Path| {
            p.components()
                .any(|c| crate::marker::is_dotgit(&c.as_os_str().to_string_lossy()))
        };
        if in_git(shown) {
            return Err(WriteError::GitDirectory {
                path: shown.display().to_string(),
            });
        }
        let out = resolve_target(shown)?;
        if in_git(&out) {
            return Err(WriteError::GitDirectory {
                path: shown.display().to_string(),
            });
        }
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let lock = lock_dir(&parent)?;
        if lock.is_some() {
            remove_stale_stages(&parent, &out);
        }
        if out.exists() && !out.is_dir() {
            return Err(WriteError::Io {
                op: "write into",
                path: shown.display().to_string(),
                source: io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "it is a file, not a directory",
                ),
            });
        }
        let exists = out.exists();
        let owned = if exists {
            read_manifest(&out)?
        } else {
            BTreeSet::new()
        };
        // Plan through directory handles (`at`): each directory of the output is opened
        // once per run of paths below it, without following a link, and a file under a
        // directory that does not exist is new without a look.
        let dirs = if exists {
            let fd = at::open_root(&out)?;
            Some(at::Dirs::owning(fd, out.clone(), at::Missing::Absent))
        } else {
            None
        };
        Ok(Open {
            out,
            parent,
            _lock: lock,
            exists,
            owned,
            dirs,
            files: Default::default(),
            replaced: BTreeSet::new(),
            new_dirs: BTreeSet::new(),
            old_bytes: Vec::new(),
            new_summarized: Default::default(),
            present: summary::Present::default(),
            staged: None,
        })
    }

    /// Whether `path` is to be written (new or changed), by what is at its place.
    fn plan(
        &mut self,
        path: &str,
        bytes: &[u8],
        digest: Option<&str>,
        known: &Known,
    ) -> Result<bool, WriteError> {
        let (dir, name) = at::split(path);
        let handle = match &mut self.dirs {
            Some(d) => d.open(dir)?,
            None => None,
        };
        let out = &self.out;
        let target = || out.join(path);
        let unowned = || WriteError::UnownedFile {
            path: target().display().to_string(),
        };
        if let Some(fd) = handle
            && self.owned.contains(path)
            && digest.is_some_and(|d| known.unchanged_at(path, fd, name, d))
        {
            return Ok(false);
        }
        if known.reused.is_some_and(|r| r.contains(path)) {
            return Err(WriteError::ChangedDuringRender {
                path: path.to_string(),
            });
        }
        let Some(fd) = handle else {
            if self.exists
                && let Some(d) = &self.dirs
            {
                self.new_dirs.insert(d.first_missing(dir));
            }
            return Ok(true);
        };
        Ok(
            match at::read(fd, name).map_err(io_err("read", &target()))? {
                // Same bytes, but not kiln's: adopting it would let a later prune delete it.
                at::Found::File(_) | at::Found::Link if !self.owned.contains(path) => {
                    return Err(unowned());
                }
                at::Found::File(old) if old == bytes => false,
                // An owned file, or a link in its place (replaced, never followed).
                at::Found::File(old) => {
                    if summary::summarized(path) {
                        self.old_bytes
                            .push((path.to_string(), summary::reduced(path, &old)));
                    }
                    self.replaced.insert(path.to_string());
                    true
                }
                at::Found::Link => {
                    self.replaced.insert(path.to_string());
                    true
                }
                at::Found::Missing => true,
                // A directory where kiln wants a file is never kiln's to replace.
                at::Found::Directory => return Err(unowned()),
            },
        )
    }

    /// Stages `path` (see the module docs): the staging directory beside the real target is
    /// made with the first file (same file system, so renames are atomic). From then on
    /// SIGINT and SIGTERM are held (issue 38, item 6): before the commit the staged files
    /// are dropped and nothing changes; once it starts, it finishes.
    fn stage(&mut self, path: &str, bytes: &[u8]) -> Result<(), WriteError> {
        if self.staged.is_none() {
            let held = interrupt::Held::hold();
            let stage = Stage::create(&self.parent, &self.out)?;
            let new_root = stage.path().join("new");
            let fd = at::create_root(&new_root)?;
            // Every directory of the staged tree is new: one `mkdirat` each.
            let dirs = at::Dirs::owning(fd, new_root.clone(), at::Missing::Build);
            self.staged = Some(Staged {
                held,
                stage,
                new_root,
                dirs,
            });
        }
        let staged = self.staged.as_mut().expect("made above");
        let (dir, name) = at::split(path);
        let Some(fd) = staged.dirs.open(dir)? else {
            unreachable!("Missing::Build creates every directory")
        };
        at::create(fd, name, bytes).map_err(io_err("write", &staged.new_root.join(path)))
    }

    /// The end of [`write()`]: the prune planned, the manifest staged, the commit.
    fn commit(mut self, scope: &Scope, environments: &[String]) -> Result<WriteReport, WriteError> {
        let out = self.out.clone();
        let mut report = WriteReport::default();
        for (path, written) in &self.files {
            match written {
                true => report.written.push(path.clone()),
                false => report.unchanged.push(path.clone()),
            }
        }
        // The old bytes of the files replaced, in path order, then of those removed.
        let mut old_bytes = std::mem::take(&mut self.old_bytes);
        old_bytes.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept = Vec::new();
        // Owned files already gone (a run killed during its prune moved them away, issue 39,
        // item 13): their directories, where empty, are removed as the prune would have.
        let mut vacated = Vec::new();
        if let Some(dirs) = &self.dirs {
            let mut dirs = at::Dirs::new(dirs.root(), &out, at::Missing::Absent);
            for path in self.owned.iter().filter(|p| !self.files.contains_key(*p)) {
                if !scope.contains(path) {
                    kept.push(path.clone());
                    continue;
                }
                let (dir, name) = at::split(path);
                match dirs.open(dir) {
                    Ok(Some(fd)) if at::is_file_or_link(fd, name) => {
                        if summary::summarized(path)
                            && let Ok(at::Found::File(old)) = at::read(fd, name)
                        {
                            old_bytes.push((path.clone(), summary::reduced(path, &old)));
                        }
                        report.removed.push(path.clone());
                    }
                    Ok(_) => vacated.push(path.clone()),
                    // Pruning through a link is refused; an owned file that is gone anyway
                    // needs nothing.
                    Err(e) if out.join(path).is_file() => return Err(e),
                    Err(_) => {}
                }
            }
        }
        if !old_bytes.is_empty() {
            let new: Vec<(&str, &[u8], bool)> = self
                .new_summarized
                .iter()
                .map(|(p, b)| (p.as_str(), b.as_slice(), !self.replaced.contains(p)))
                .collect();
            let present = kept.is_empty().then_some(&self.present);
            report.changes = summary::changes(&old_bytes, &new, present, environments);
        }
        let mut listed: Vec<String> = self.files.keys().cloned().chain(kept).collect();
        listed.sort();
        let manifest = manifest_bytes(listed.clone());
        let old_manifest = crate::fs::read_regular(&out.join(MANIFEST)).ok();
        if report.is_noop() && old_manifest.as_deref() == Some(manifest.as_slice()) {
            return Ok(report);
        }
        self.stage(MANIFEST, &manifest)?;
        let Staged {
            held,
            stage,
            new_root,
            dirs: new_dirs_handles,
        } = self.staged.take().expect("staged above");
        if let Some(signal) = held.pending() {
            return Err(stopped(signal));
        }

        // Commit.
        let finished = |report: WriteReport| {
            let Some(signal) = held.pending() else {
                return Ok(report);
            };
            Err(WriteError::Interrupted {
                outcome: format!(
                    "the update was finished first ({} files written, {} removed)",
                    report.written.len(),
                    report.removed.len()
                ),
                signal,
            })
        };
        let Some(out_dirs) = self.dirs.take() else {
            // One rename; on failure the staging directory is dropped (removed).
            drop(new_dirs_handles);
            std::fs::rename(&new_root, &out).map_err(io_err("move the staged tree to", &out))?;
            drop(stage);
            return finished(report);
        };
        // The journal: old and new files owned at once, so a kill from here on leaves nothing
        // unowned, and the next run (whatever its input) completes the update.
        let journal: BTreeSet<String> = self.owned.iter().cloned().chain(listed).collect();
        let journal_path = stage.path().join("journal.json");
        std::fs::write(&journal_path, manifest_bytes(journal.into_iter().collect()))
            .map_err(io_err("write", &journal_path))?;
        let backup = stage.path().join("old");
        let mut commit = Commit {
            out: &out,
            backup: backup.clone(),
            new_root: new_root.clone(),
            moved: Vec::new(),
            placed: Vec::new(),
            placed_dirs: Vec::new(),
            old_manifest,
        };
        let handles = Handles {
            out: out_dirs.root(),
            new: new_dirs_handles.root(),
            backup: &backup,
        };
        let plan = Plan {
            report: &report,
            replaced: &self.replaced,
            new_dirs: &self.new_dirs,
            vacated: &vacated,
        };
        match commit.run(&plan, &handles, &journal_path) {
            Ok(()) => {
                // The staging directory (the replaced files' backup) is removed while the
                // signals are still held, before the last look at them: a signal that came
                // during that clean-up was noted and would be lost (the render ended 0).
                drop(commit);
                drop(stage);
                finished(report)
            }
            #[cfg(test)]
            Err(e) if FAULT.with(|f| f.get().is_some_and(|(_, kill)| kill)) => {
                // A simulated SIGKILL: no roll-back, no clean-up.
                let mut stage = stage;
                stage.keep = true;
                Err(e)
            }
            Err(e) => {
                commit.roll_back();
                Err(e)
            }
        }
    }
}

/// SIGINT and SIGTERM held off while a write stages and commits (issue 38, item 6): a
/// handler only notes the signal, and the write looks at the note where stopping is safe (see
/// `write`). The first writer of the process installs the handler and the last one
/// restores what was there, so concurrent writes share one. A signal the process ignores
/// (`nohup`, a shell's background job) stays ignored: holding it would make it stop the
/// write.
#[cfg(unix)]
mod interrupt {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicI32, Ordering};

    /// The signal noted while held, 0 for none.
    static PENDING: AtomicI32 = AtomicI32::new(0);
    /// How many writes hold the signals, and the actions they replaced.
    static HELD: Mutex<(usize, Vec<(libc::c_int, libc::sigaction)>)> = Mutex::new((0, Vec::new()));
    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    extern "C" fn note(signal: libc::c_int) {
        PENDING.store(signal, Ordering::SeqCst);
    }

    // A signal noted for this thread's write only (tests run writes in parallel, and the
    // process-wide note would stop theirs too).
    #[cfg(test)]
    thread_local! {
        static NOTED_IN_TEST: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
    }

    /// Notes `signal` as the handler would, for this thread's write only, until the next
    /// write of the thread holds the signals.
    #[cfg(test)]
    pub(super) fn note_in_test(signal: i32) {
        NOTED_IN_TEST.set(Some(signal));
    }

    /// Signals held until dropped.
    pub(super) struct Held;

    impl Held {
        pub(super) fn hold() -> Held {
            #[cfg(test)]
            NOTED_IN_TEST.set(None);
            let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
            if held.0 == 0 {
                PENDING.store(0, Ordering::SeqCst);
                for signal in SIGNALS {
                    // SAFETY: plain sigaction calls with zeroed, then filled, structures; the
                    // handler only stores to an atomic (async-signal-safe).
                    unsafe {
                        let mut old: libc::sigaction = std::mem::zeroed();
                        if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                            || old.sa_sigaction == libc::SIG_IGN
                        {
                            continue;
                        }
                        let mut action: libc::sigaction = std::mem::zeroed();
                        action.sa_sigaction = note as extern "C" fn(libc::c_int) as usize;
                        action.sa_flags = libc::SA_RESTART;
                        libc::sigemptyset(&mut action.sa_mask);
                        if libc::sigaction(signal, &action, &mut old) == 0 {
                            held.1.push((signal, old));
                        }
                    }
                }
            }
            held.0 += 1;
            Held
        }

        /// The signal (SIGINT or SIGTERM) that arrived while held, if one did.
        pub(super) fn pending(&self) -> Option<i32> {
            #[cfg(test)]
            if let Some(signal) = NOTED_IN_TEST.get() {
                return Some(signal);
            }
            match PENDING.load(Ordering::SeqCst) {
                0 => None,
                signal => Some(signal),
            }
        }
    }

    impl Drop for Held {
        fn drop(&mut self) {
            let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
            held.0 -= 1;
            if held.0 == 0 {
                for (signal, old) in std::mem::take(&mut held.1) {
                    // SAFETY: restores the action `hold` replaced.
                    unsafe {
                        libc::sigaction(signal, &old, std::ptr::null_mut());
                    }
                }
            }
        }
    }
}

#[cfg(not(unix))]
mod interrupt {
    /// Without POSIX signals nothing is held.
    pub(super) struct Held;
    #[cfg(test)]
    pub(super) fn note_in_test(_: i32) {}
    impl Held {
        pub(super) fn hold() -> Held {
            Held
        }
        pub(super) fn pending(&self) -> Option<i32> {
            None
        }
    }
}

// Test-only fault injection into the commit step: `Some((n, kill))` makes the `n`-th file
// operation fail; with `kill`, nothing is rolled back or cleaned up (as after SIGKILL).
#[cfg(test)]
thread_local! {
    static FAULT: std::cell::Cell<Option<(usize, bool)>> = const { std::cell::Cell::new(None) };
    /// A signal to note when the staging directory is removed (the end of a commit).
    static SIGNAL_IN_CLEANUP: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
fn fault() -> Result<(), WriteError> {
    FAULT.with(|f| match f.get() {
        Some((0, _)) => Err(WriteError::Io {
            op: "replace",
            path: "(injected fault)".into(),
            source: io::Error::other("injected fault"),
        }),
        Some((n, kill)) => {
            f.set(Some((n - 1, kill)));
            Ok(())
        }
        None => Ok(()),
    })
}

#[cfg(not(test))]
fn fault() -> Result<(), WriteError> {
    Ok(())
}

/// What the commit step does: the plan's files, by what is at their place.
struct Plan<'a> {
    report: &'a WriteReport,
    /// Written files that replace one (moved into the backup first).
    replaced: &'a BTreeSet<String>,
    /// The outermost new directories, each renamed in whole from the staged tree.
    new_dirs: &'a BTreeSet<String>,
    vacated: &'a [String],
}

/// The directories the commit works in: the output, the staged tree, the backup (created
/// on first use).
struct Handles<'a> {
    out: std::os::fd::BorrowedFd<'a>,
    new: std::os::fd::BorrowedFd<'a>,
    backup: &'a Path,
}

/// The commit step's undo log: every old file moved into the backup, every new file placed.
struct Commit<'a> {
    out: &'a Path,
    backup: PathBuf,
    /// The staged tree (`new/` in the staging directory).
    new_root: PathBuf,
    /// Old files moved into the backup (relative paths), in order.
    moved: Vec<String>,
    /// New files placed where no file was (relative paths), in order.
    placed: Vec<String>,
    /// New directories placed in whole (relative paths), in order.
    placed_dirs: Vec<String>,
    /// The manifest before this run, restored on roll-back.
    old_manifest: Option<Vec<u8>>,
}

impl Commit<'_> {
    fn run(&mut self, plan: &Plan, at_: &Handles, journal: &Path) -> Result<(), WriteError> {
        let manifest = self.out.join(MANIFEST);
        std::fs::rename(journal, &manifest).map_err(io_err("replace", &manifest))?;
        let (out_path, new_root) = (self.out, self.new_root.clone());
        let mut out = at::Dirs::new(at_.out, out_path, at::Missing::Create);
        let mut new = at::Dirs::new(at_.new, &new_root, at::Missing::Absent);
        // The backup's directories are made as old files move in (two passes in path
        // order: a directory of the first may be met again in the second).
        let backup_fd = if plan.replaced.is_empty() && plan.report.removed.is_empty() {
            None
        } else {
            Some(at::create_root(at_.backup)?)
        };
        let mut backup = backup_fd
            .as_ref()
            .map(|fd| at::Dirs::new(fd.as_fd(), at_.backup, at::Missing::Build));
        let mut to_backup = |from: std::os::fd::BorrowedFd, path: &str, moved: &mut Vec<String>| {
            let Some(backup) = &mut backup else {
                unreachable!("the backup exists when a file is replaced or removed")
            };
            let (dir, name) = at::split(path);
            let to = backup.open(dir)?.expect("Missing::Build creates");
            fault()?;
            at::rename(from, to, name).map_err(io_err("move aside", &out_path.join(path)))?;
            moved.push(path.to_string());
            Ok::<(), WriteError>(())
        };
        let within = |path: &str, dir: &str| {
            path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/'
        };
        let mut placed_dir: Option<&str> = None;
        for path in &plan.report.written {
            if placed_dir.is_some_and(|d| within(path, d)) {
                continue; // renamed with its directory
            }
            let new_dir = plan
                .new_dirs
                .range::<str, _>((
                    std::ops::Bound::Unbounded,
                    std::ops::Bound::Included(path.as_str()),
                ))
                .next_back()
                .filter(|d| within(path, d));
            if let Some(d) = new_dir {
                // A directory the output does not have: renamed in whole, one call.
                let (parent, name) = at::split(d);
                fault()?;
                let to = out.open(parent)?.expect("Missing::Create opens or creates");
                let from = new
                    .open(parent)?
                    .ok_or_else(|| missing_staged(&new_root, d))?;
                at::rename(from, to, name).map_err(io_err("replace", &out_path.join(d)))?;
                self.placed_dirs.push(d.clone());
                placed_dir = Some(d);
                continue;
            }
            let (dir, name) = at::split(path);
            let to = out.open(dir)?.expect("Missing::Create opens or creates");
            if plan.replaced.contains(path) {
                to_backup(to, path, &mut self.moved)?;
            } else {
                self.placed.push(path.clone());
            }
            fault()?;
            let from = new
                .open(dir)?
                .ok_or_else(|| missing_staged(&new_root, path))?;
            at::rename(from, to, name).map_err(io_err("replace", &out_path.join(path)))?;
        }
        for path in &plan.report.removed {
            let (dir, _) = at::split(path);
            let from = out.open(dir)?.expect("Missing::Create opens or creates");
            to_backup(from, path, &mut self.moved)?;
        }
        drop(out);
        for path in plan.report.removed.iter().chain(plan.vacated) {
            // Remove directories the prune left empty, up to (not including) `out`; a
            // directory holding anything else, owned or not, stays.
            let mut dir = self.out.join(path).parent().map(Path::to_path_buf);
            while let Some(d) = dir {
                fault()?;
                if d == self.out {
                    break;
                }
                match std::fs::remove_dir(&d) {
                    // Gone already: a killed run removed it, its parents may remain.
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(_) => break,
                }
                dir = d.parent().map(Path::to_path_buf);
            }
        }
        fault()?;
        at::rename(at_.new, at_.out, MANIFEST).map_err(io_err("replace", &manifest))?;
        Ok(())
    }

    /// Undoes what [`Commit::run`] did, best effort: new files removed, new directories
    /// moved back into the staged tree, old files moved back, the old manifest restored.
    fn roll_back(&mut self) {
        for path in self.placed.iter().rev() {
            let _ = std::fs::remove_file(self.out.join(path));
        }
        for dir in self.placed_dirs.iter().rev() {
            let _ = std::fs::rename(self.out.join(dir), self.new_root.join(dir));
        }
        for path in self.moved.iter().rev() {
            let dest = self.out.join(path);
            if let Some(dir) = dest.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::rename(self.backup.join(path), &dest);
        }
        let manifest = self.out.join(MANIFEST);
        match &self.old_manifest {
            Some(bytes) => {
                let _ = std::fs::write(&manifest, bytes);
            }
            None => {
                let _ = std::fs::remove_file(&manifest);
            }
        }
    }
}

/// A staged file or directory that is not where staging put it: a bug, or someone else
/// changed the staging directory.
fn missing_staged(new_root: &Path, path: &str) -> WriteError {
    WriteError::Io {
        op: "move the staged file",
        path: new_root.join(path).display().to_string(),
        source: io::Error::from(io::ErrorKind::NotFound),
    }
}

#[cfg(test)]
mod tests {
    /// Options of a write responsible for the directories `dirs` only.
    fn scoped(dirs: &[&str]) -> WriteOptions<'static> {
        WriteOptions {
            scope: Scope::Dirs(dirs.iter().map(|d| d.to_string()).collect()),
            ..Default::default()
        }
    }

    /// Issue 39, item 17: `--write-to .git` (or a folder inside it, or a symlink to it) is
    /// refused, and nothing is created there.
    #[test]
    fn a_git_directory_is_never_an_output() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("repo/.git")).unwrap();
        std::os::unix::fs::symlink(t.path().join("repo/.git"), t.path().join("link")).unwrap();
        let mut set = ArtifactSet::new();
        set.insert("a.yaml".to_string(), b"x".to_vec());
        for out in ["repo/.git", "repo/.git/deploy", "repo/.GIT", "link/deploy"] {
            let err = write(&set, &t.path().join(out), &WriteOptions::default()).unwrap_err();
            assert!(
                matches!(err, WriteError::GitDirectory { .. }),
                "{out}: {err:?}"
            );
        }
        let entries: Vec<_> = std::fs::read_dir(t.path().join("repo/.git"))
            .unwrap()
            .collect();
        assert!(entries.is_empty(), "nothing written into .git");
    }

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

    /// Issue 38, item 8: a `Writer` stages each file when it is given, so a render holds
    /// no file's bytes until the end; dropped unfinished it leaves nothing, and finished it
    /// leaves what `write` of the whole set leaves.
    #[test]
    fn a_writer_stages_each_file_when_given() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let staged = |name: &str| -> Vec<String> {
            stages_beside(t.path())
                .iter()
                .map(|s| t.path().join(s).join("new").join(name))
                .filter(|p| p.is_file())
                .map(|p| std::fs::read_to_string(p).unwrap())
                .collect()
        };
        let mut w = Writer::new(&out, Known::default());
        w.add("web/dev/b/b.gen.yaml", b"b", None).unwrap();
        assert_eq!(staged("web/dev/b/b.gen.yaml"), ["b"]);
        w.add("web/dev/a/a.gen.yaml", b"a", None).unwrap();
        assert_eq!(staged("web/dev/a/a.gen.yaml"), ["a"]);
        assert!(!out.exists());
        drop(w);
        assert_eq!(stages_beside(t.path()), Vec::<String>::new());
        assert!(!out.exists());

        let files = [("web/dev/b/b.gen.yaml", "b"), ("web/dev/a/a.gen.yaml", "a")];
        let mut w = Writer::new(&out, Known::default());
        for (p, b) in files {
            w.add(p, b.as_bytes(), None).unwrap();
        }
        let r = w.finish(&Scope::All, &[]).unwrap();
        assert_eq!(r.written, ["web/dev/a/a.gen.yaml", "web/dev/b/b.gen.yaml"]);
        let whole = t.path().join("whole");
        write(&set(&files), &whole, &WriteOptions::default()).unwrap();
        assert_eq!(snapshot(&out), snapshot(&whole));
        assert_eq!(stages_beside(t.path()), Vec::<String>::new());
    }

    #[test]
    fn writes_prunes_owned_and_keeps_foreign_files() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let r = write(
            &set(&[("web/dev/a/a.gen.yaml", "a"), ("web/dev/b/b.gen.yaml", "b")]),
            &out,
            &WriteOptions::default(),
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

        let r = write(
            &set(&[("web/dev/a/a.gen.yaml", "a2")]),
            &out,
            &WriteOptions::default(),
        )
        .unwrap();
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
            &WriteOptions::default(),
        )
        .unwrap();
        // A render of project `web` only, in which `a` changed.
        let r = write(
            &set(&[("web/dev/a/a.gen.yaml", "a2")]),
            &out,
            &scoped(&["web/"]),
        )
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
        let r = write(
            &set(&[("web/dev/a/a.gen.yaml", "a2")]),
            &out,
            &WriteOptions::default(),
        )
        .unwrap();
        assert_eq!(r.removed, ["api/dev/b/b.gen.yaml"]);
    }

    #[test]
    fn second_identical_run_touches_nothing() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let s = set(&[("p/e/c/c.gen.yaml", "x"), ("p/e/c/kustomization.yaml", "y")]);
        write(&s, &out, &WriteOptions::default()).unwrap();
        let before = std::fs::metadata(out.join("p/e/c/c.gen.yaml"))
            .unwrap()
            .modified()
            .unwrap();
        let r = write(&s, &out, &WriteOptions::default()).unwrap();
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
            &WriteOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, WriteError::UnownedFile { .. }), "{err}");
        assert_eq!(listing(&out), ["p/e/c/c.gen.yaml"]);
    }

    #[test]
    fn a_foreign_file_with_generated_bytes_is_not_adopted() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap();
        std::fs::write(out.join("b.yaml"), "same").unwrap();
        // Adopting it would make the next prune delete a file kiln never wrote.
        let err = write(
            &set(&[("a.yaml", "a"), ("b.yaml", "same")]),
            &out,
            &WriteOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, WriteError::UnownedFile { .. }), "{err}");
        assert_eq!(read_manifest(&out).unwrap().len(), 1);
        write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("b.yaml")).unwrap(), "same");
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
        let err = write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap_err();
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
        write(&set(&files), &out, &WriteOptions::default()).unwrap();
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
        let err = write(&set(&changed), &out, &WriteOptions::default()).unwrap_err();
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
        let err = write(
            &set(&[("web/prod/a/a.gen.yaml", "new")]),
            &out,
            &WriteOptions::default(),
        )
        .unwrap_err();
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
                    write(&set, out, &scoped(&[&prefix])).unwrap();
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
    fn only_staging_directories_kiln_made_for_this_output_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let real = resolve_target(&out).unwrap();
        let stale = t.path().join(format!("{}killed", stage_prefix(&real)));
        std::fs::create_dir_all(stale.join("new/web")).unwrap();
        std::fs::write(stale.join("new/web/a.yaml"), "half").unwrap();
        std::fs::write(stale.join(STAGE_MARKER), stage_marker_text(&real)).unwrap();
        // Named like a staging directory, but without kiln's marker, or another output's.
        let foreign = t.path().join(".kiln-stage-mine");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("data"), "precious").unwrap();
        let other = t.path().join(".kiln-stage-deploy-other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(
            other.join(STAGE_MARKER),
            "kiln staging directory for /elsewhere\n",
        )
        .unwrap();
        std::fs::write(t.path().join("notes.txt"), "mine").unwrap();
        write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap();
        assert!(!stale.exists());
        assert!(foreign.join("data").exists());
        assert!(other.exists());
        assert!(t.path().join("notes.txt").exists());
    }

    #[cfg(unix)]
    #[test]
    fn one_output_named_two_ways_takes_one_lock() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        std::fs::create_dir_all(t.path().join("elsewhere")).unwrap();
        let link = t.path().join("elsewhere/link");
        std::os::unix::fs::symlink(&out, &link).unwrap();
        write(&set(&[("seed.yaml", "s")]), &out, &WriteOptions::default()).unwrap();
        std::thread::scope(|s| {
            for i in 0..8 {
                let target = if i % 2 == 0 {
                    out.clone()
                } else {
                    link.clone()
                };
                s.spawn(move || {
                    let mut set = ArtifactSet::new();
                    for c in 0..20 {
                        set.insert(format!("p{i}/c{c}.yaml"), format!("{i}-{c}"));
                    }
                    let prefix = format!("p{i}/");
                    write(&set, &target, &scoped(&[&prefix])).unwrap();
                });
            }
        });
        assert_eq!(read_manifest(&out).unwrap().len(), 1 + 8 * 20);
    }

    fn snapshot(dir: &Path) -> Vec<(String, String)> {
        listing(dir)
            .into_iter()
            .map(|p| {
                let text = std::fs::read_to_string(dir.join(&p)).unwrap();
                (p, text)
            })
            .collect()
    }

    #[test]
    fn an_io_error_mid_commit_rolls_back_to_the_previous_output() {
        for n in 0..6 {
            let t = tempfile::tempdir().unwrap();
            let out = t.path().join("deploy");
            write(
                &set(&[("a.yaml", "a"), ("b/b.yaml", "b"), ("c.yaml", "c")]),
                &out,
                &WriteOptions::default(),
            )
            .unwrap();
            let before = snapshot(&out);
            FAULT.with(|f| f.set(Some((n, false))));
            let next = set(&[("a.yaml", "a2"), ("d/d.yaml", "d"), ("c.yaml", "c2")]);
            let err = write(&next, &out, &WriteOptions::default());
            FAULT.with(|f| f.set(None));
            assert!(err.is_err(), "fault {n} was not hit");
            assert_eq!(snapshot(&out), before, "after a fault at step {n}");
            assert_eq!(
                std::fs::read_dir(t.path()).unwrap().count(),
                1,
                "stage left"
            );
        }
    }

    /// Issue 38, item 6: a signal that came while the commit's staging directory (the backup
    /// of the replaced files, seconds at thousands of files) was removed was noted but never
    /// looked at, and the render ended 0. It now ends the write as interrupted, the update
    /// finished, with nothing left beside the output.
    #[cfg(unix)]
    #[test]
    fn a_signal_during_the_commits_clean_up_is_reported_as_finished() {
        for first in [false, true] {
            let t = tempfile::tempdir().unwrap();
            let out = t.path().join("deploy");
            if first {
                write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap();
            }
            SIGNAL_IN_CLEANUP.set(Some(libc::SIGINT));
            let next = set(&[("a.yaml", "a2"), ("d/d.yaml", "d")]);
            let err = write(&next, &out, &WriteOptions::default());
            SIGNAL_IN_CLEANUP.set(None);
            let err = err.expect_err("the signal was lost");
            assert_eq!(err.signal(), Some(libc::SIGINT));
            assert!(
                err.to_string().contains("the update was finished first"),
                "{err}"
            );
            assert_eq!(std::fs::read_to_string(out.join("a.yaml")).unwrap(), "a2");
            assert_eq!(
                std::fs::read_dir(t.path()).unwrap().count(),
                1,
                "stage left"
            );
        }
    }

    #[test]
    fn a_kill_mid_commit_is_finished_by_the_next_run_whatever_its_input() {
        for n in 0..6 {
            let t = tempfile::tempdir().unwrap();
            let out = t.path().join("deploy");
            write(
                &set(&[("a.yaml", "a"), ("b/b.yaml", "b"), ("c.yaml", "c")]),
                &out,
                &WriteOptions::default(),
            )
            .unwrap();
            FAULT.with(|f| f.set(Some((n, true))));
            let killed = set(&[("a.yaml", "a2"), ("d/d.yaml", "d"), ("e.yaml", "e")]);
            assert!(
                write(&killed, &out, &WriteOptions::default()).is_err(),
                "fault {n} was not hit"
            );
            FAULT.with(|f| f.set(None));
            // The next run renders different input: it owns every file the killed run
            // placed, so it prunes them instead of leaving orphans or refusing them.
            let next = set(&[("a.yaml", "a3"), ("f.yaml", "f")]);
            write(&next, &out, &WriteOptions::default()).unwrap();
            assert_eq!(
                snapshot(&out),
                [
                    (
                        ".kiln-owned.json".to_string(),
                        String::from_utf8(manifest_bytes(vec!["a.yaml".into(), "f.yaml".into()]))
                            .unwrap()
                    ),
                    ("a.yaml".into(), "a3".into()),
                    ("f.yaml".into(), "f".into()),
                ],
                "after a kill at step {n}"
            );
            assert_eq!(
                std::fs::read_dir(t.path()).unwrap().count(),
                1,
                "stage left"
            );
        }
    }

    fn stages_beside(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".kiln-stage-"))
            .collect()
    }

    /// Issue 39, item 13: a run killed while it removes a staging directory (at each of its
    /// entries, and between the marker and the directory itself) leaves a directory the next
    /// run recognises and removes.
    #[test]
    fn a_kill_while_a_stage_is_removed_is_cleaned_by_the_next_run() {
        for n in 0..4 {
            let t = tempfile::tempdir().unwrap();
            let out = t.path().join("deploy");
            let real = resolve_target(&out).unwrap();
            let stale = t.path().join(format!("{}killed", stage_prefix(&real)));
            std::fs::create_dir_all(stale.join("new/web")).unwrap();
            std::fs::create_dir_all(stale.join("old")).unwrap();
            std::fs::write(stale.join("new/web/a.yaml"), "half").unwrap();
            std::fs::write(stale.join("old/b.yaml"), "backup").unwrap();
            std::fs::write(stale.join("journal.json"), "{}").unwrap();
            std::fs::write(stale.join(STAGE_MARKER), stage_marker_text(&real)).unwrap();
            FAULT.with(|f| f.set(Some((n, true))));
            remove_stage(&stale);
            FAULT.with(|f| f.set(None));
            write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap();
            assert_eq!(stages_beside(t.path()), Vec::<String>::new(), "kill at {n}");
        }
        // Killed after the marker went, before the directory did: empty, and removed.
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        let real = resolve_target(&out).unwrap();
        std::fs::create_dir(t.path().join(format!("{}empty", stage_prefix(&real)))).unwrap();
        write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap();
        assert_eq!(stages_beside(t.path()), Vec::<String>::new());
    }

    /// Issue 39, item 13: a run killed at the prune's first `rmdir` has moved the removed
    /// component's files away but left its directories; the next run, which still owns the
    /// files by the journal manifest, removes the empty directories.
    #[test]
    fn a_kill_at_the_prunes_first_rmdir_is_finished_by_the_next_run() {
        let mut hit = false;
        for n in 0..10 {
            let t = tempfile::tempdir().unwrap();
            let out = t.path().join("deploy");
            let v1 = set(&[("a.yaml", "a"), ("web/dev/b/b.gen.yaml", "b")]);
            write(&v1, &out, &WriteOptions::default()).unwrap();
            FAULT.with(|f| f.set(Some((n, true))));
            let killed = write(&set(&[("a.yaml", "a2")]), &out, &WriteOptions::default());
            FAULT.with(|f| f.set(None));
            if killed.is_ok() {
                break;
            }
            hit |= !out.join("web/dev/b/b.gen.yaml").exists() && out.join("web/dev/b").is_dir();
            write(&set(&[("a.yaml", "a3")]), &out, &WriteOptions::default()).unwrap();
            assert!(!out.join("web").exists(), "kill at {n}: directories left");
            assert_eq!(listing(&out), [".kiln-owned.json", "a.yaml"]);
            assert_eq!(stages_beside(t.path()), Vec::<String>::new());
        }
        assert!(hit, "no kill fell between the move and the rmdir");
    }

    #[cfg(unix)]
    #[test]
    fn fifos_in_the_output_are_refused_without_blocking() {
        for name in [MANIFEST, "a.yaml"] {
            let t = tempfile::tempdir().unwrap();
            let out = t.path().join("deploy");
            write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap();
            std::fs::remove_file(out.join(name)).unwrap();
            let made = std::process::Command::new("mkfifo")
                .arg(out.join(name))
                .status();
            if !made.is_ok_and(|s| s.success()) {
                return;
            }
            let (tx, rx) = std::sync::mpsc::channel();
            let o = out.clone();
            std::thread::spawn(move || {
                let _ = tx.send(
                    write(&set(&[("a.yaml", "a2")]), &o, &WriteOptions::default()).map(|_| ()),
                );
            });
            let got = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("write hangs on a FIFO as {name}"));
            let err = got.unwrap_err();
            assert!(
                err.to_string().contains("not a regular file"),
                "{name}: {err}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_output_symlinked_to_another_file_system_is_staged_there() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let Ok(shm) = tempfile::tempdir_in("/dev/shm") else {
            return;
        };
        let dev = |p: &Path| std::fs::metadata(p).unwrap().dev();
        if dev(t.path()) == dev(shm.path()) {
            return; // one file system here: nothing to show
        }
        let real = shm.path().join("deploy");
        std::fs::create_dir_all(&real).unwrap();
        let link = t.path().join("deploy");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        // A first write into the (empty, existing) target, then an update.
        write(&set(&[("a.yaml", "a")]), &link, &WriteOptions::default()).unwrap();
        write(
            &set(&[("a.yaml", "a2"), ("b/b.yaml", "b")]),
            &link,
            &WriteOptions::default(),
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(real.join("a.yaml")).unwrap(), "a2");
        // The link stays a link, and no staging directory is left on either side.
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
        assert_eq!(std::fs::read_dir(shm.path()).unwrap().count(), 1);
    }

    #[test]
    fn targets_that_hold_or_sit_inside_the_sources_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let platform = root.join("platforms/p");
        let component = root.join("components/web");
        std::fs::create_dir_all(&platform).unwrap();
        std::fs::create_dir_all(&component).unwrap();
        let sources = [platform.clone(), component.clone()];
        for bad in [
            root.clone(),
            platform.clone(),
            root.join("components"),
            component.join("out"),
            PathBuf::from("/"),
        ] {
            let err = check_target(&bad, &root, &sources).unwrap_err();
            assert!(matches!(err, WriteError::DangerousTarget { .. }), "{bad:?}");
        }
        assert!(check_target(&root.join("deploy"), &root, &sources).is_ok());
        assert!(check_target(&root.join("platforms/deploy"), &root, &sources).is_ok());
    }

    #[test]
    fn a_file_as_output_directory_is_refused_and_kept() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("deploy");
        std::fs::write(&out, "a file").unwrap();
        let err = write(&set(&[("a.yaml", "a")]), &out, &WriteOptions::default()).unwrap_err();
        assert!(err.to_string().contains("not a directory"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "a file");
    }
}
