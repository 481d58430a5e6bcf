//! Directory handles for the write stage (issue 38, item 7; ADR 0028): every file operation
//! of a write is relative to an open directory (`openat`, `mkdirat`, `renameat`, `statat`)
//! and refuses symbolic links (`O_NOFOLLOW`), so each directory of the tree is looked up once
//! per pass instead of once per file and path component, and no link is ever followed.
//!
//! [`Dirs`] keeps the handles of the directories along the path it was last asked for. The
//! write visits paths in sorted order, where all paths below one directory are contiguous,
//! so a pass opens (or creates) each directory exactly once and holds at most one handle per
//! level of the tree.
#![allow(clippy::disallowed_methods)] // the write stage: the only one that changes the disk

use super::WriteError;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// How [`Dirs`] treats a directory that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Missing {
    /// Report it (`None`): nothing below it exists either.
    Absent,
    /// Create it (`mkdirat`) and open it; the tree is mostly there, so open first.
    Create,
    /// Create it first and open it then: the tree is being built (a staging directory),
    /// so nearly every directory is new and the `openat` that would fail is saved.
    Build,
}

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens the directory at `path` (resolved by the caller; it may be reached through links).
pub(super) fn open_root(path: &Path) -> Result<OwnedFd, WriteError> {
    rustix::fs::open(path, DIR.difference(OFlags::NOFOLLOW), Mode::empty())
        .map_err(|e| io_error("open directory", path, e))
}

/// Creates the directory `path` and opens it.
pub(super) fn create_root(path: &Path) -> Result<OwnedFd, WriteError> {
    rustix::fs::mkdir(path, Mode::from_raw_mode(0o777))
        .map_err(|e| io_error("create directory", path, e))?;
    open_root(path)
}

fn io_error(op: &'static str, path: &Path, e: Errno) -> WriteError {
    WriteError::Io {
        op,
        path: path.display().to_string(),
        source: io::Error::from(e),
    }
}

/// `rel` split at its last `/`: (directory, file name); the directory is `""` at the root.
pub(super) fn split(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// Handles on the directories along one path below a root (see the module docs).
pub(super) struct Dirs<'a> {
    root: Root<'a>,
    root_path: std::borrow::Cow<'a, Path>,
    missing: Missing,
    /// The directories entered, outermost first: name and handle (`None`: it does not
    /// exist, and so neither does anything below it).
    stack: Vec<(String, Option<OwnedFd>)>,
}

impl<'a> Dirs<'a> {
    pub(super) fn new(root: BorrowedFd<'a>, root_path: &'a Path, missing: Missing) -> Self {
        Dirs {
            root: Root::Borrowed(root),
            root_path: root_path.into(),
            missing,
            stack: Vec::new(),
        }
    }

    /// [`Dirs::new`] owning its root's handle: for a write that takes its files over time
    /// (`super::Writer`).
    pub(super) fn owning(root: OwnedFd, root_path: PathBuf, missing: Missing) -> Dirs<'static> {
        Dirs {
            root: Root::Owned(root),
            root_path: root_path.into(),
            missing,
            stack: Vec::new(),
        }
    }

    /// The root's handle.
    pub(super) fn root(&self) -> BorrowedFd<'_> {
        match &self.root {
            Root::Borrowed(fd) => *fd,
            Root::Owned(fd) => fd.as_fd(),
        }
    }

    /// The handle of directory `dir` (relative, `/`-separated, `""` for the root); `None`
    /// when it does not exist (only with [`Missing::Absent`]).
    ///
    /// Errors: [`WriteError::SymlinkInPath`] when a directory on the way is a symbolic link,
    /// [`WriteError::Io`] when it is something else that is not a directory, or cannot be
    /// opened or created.
    pub(super) fn open(&mut self, dir: &str) -> Result<Option<BorrowedFd<'_>>, WriteError> {
        let wanted = dir.split('/').filter(|s| !s.is_empty());
        let mut depth = 0;
        for seg in wanted {
            if depth < self.stack.len() && self.stack[depth].0 == seg {
                depth += 1;
                continue;
            }
            self.stack.truncate(depth);
            let parent = match self.stack.last() {
                None => Some(self.root()),
                Some((_, fd)) => fd.as_ref().map(AsFd::as_fd),
            };
            let fd = match parent {
                Some(parent) => self.enter(parent, seg, depth)?,
                None => None,
            };
            self.stack.push((seg.to_string(), fd));
            depth += 1;
        }
        self.stack.truncate(depth);
        Ok(match self.stack.last() {
            None => Some(self.root()),
            Some((_, fd)) => fd.as_ref().map(AsFd::as_fd),
        })
    }

    /// After [`Dirs::open`] returned `None` for `dir`: the outermost directory on its way
    /// that does not exist (relative, `/`-separated).
    pub(super) fn first_missing(&self, dir: &str) -> String {
        let n = self
            .stack
            .iter()
            .position(|(_, fd)| fd.is_none())
            .map_or(self.stack.len(), |i| i + 1);
        let segs: Vec<&str> = self.stack[..n].iter().map(|(s, _)| s.as_str()).collect();
        debug_assert!(dir.starts_with(&segs.join("/")));
        segs.join("/")
    }

    /// The path of the `depth`-th directory entered, then `seg`, for messages.
    fn path_of(&self, depth: usize, seg: &str) -> std::path::PathBuf {
        let mut p = self.root_path.to_path_buf();
        p.extend(self.stack[..depth].iter().map(|(s, _)| s.as_str()));
        p.push(seg);
        p
    }

    fn enter(
        &self,
        parent: BorrowedFd,
        seg: &str,
        depth: usize,
    ) -> Result<Option<OwnedFd>, WriteError> {
        let path = || self.path_of(depth, seg);
        let mkdir = || match rustix::fs::mkdirat(parent, seg, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => Ok(()),
            Err(e) => Err(io_error("create directory", &path(), e)),
        };
        if self.missing == Missing::Build {
            mkdir()?;
        }
        match rustix::fs::openat(parent, seg, DIR, Mode::empty()) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::NOENT) if self.missing == Missing::Absent => Ok(None),
            Err(Errno::NOENT) if self.missing == Missing::Create => {
                mkdir()?;
                rustix::fs::openat(parent, seg, DIR, Mode::empty())
                    .map(Some)
                    .map_err(|e| io_error("open directory", &path(), e))
            }
            // O_NOFOLLOW on a link: ELOOP, or ENOTDIR with O_DIRECTORY (Linux checks that
            // first); a look at the entry itself tells a link from a file.
            Err(e @ (Errno::LOOP | Errno::NOTDIR)) => {
                let link = rustix::fs::statat(parent, seg, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| is_link(&st));
                if link {
                    return Err(WriteError::SymlinkInPath {
                        path: path().display().to_string(),
                    });
                }
                Err(io_error("open directory", &path(), e))
            }
            Err(e) => Err(io_error("open directory", &path(), e)),
        }
    }
}

/// The root of a [`Dirs`]: borrowed for one pass, or owned by a write kept open.
enum Root<'a> {
    Borrowed(BorrowedFd<'a>),
    Owned(OwnedFd),
}

fn is_link(st: &rustix::fs::Stat) -> bool {
    rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
}

/// What is at `name` in `dir` without following a link: a regular file's bytes, or why not.
pub(super) enum Found {
    File(Vec<u8>),
    Missing,
    /// A symbolic link (never followed).
    Link,
    Directory,
}

/// Reads the regular file `name` in `dir`. A FIFO, device or socket is refused (opened
/// non-blocking, so never waited on), as [`crate::fs::read_regular`] does.
pub(super) fn read(dir: BorrowedFd, name: &str) -> io::Result<Found> {
    use std::io::Read;
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Found::Missing),
        Err(Errno::LOOP) => return Ok(Found::Link),
        Err(e) => return Err(e.into()),
    };
    let st = rustix::fs::fstat(&fd)?;
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => {}
        rustix::fs::FileType::Directory => return Ok(Found::Directory),
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (kiln never reads a FIFO, device or socket)",
            ));
        }
    }
    // One spare byte: a read that does not fill it is the end (see `crate::fs::read_regular`).
    let len = usize::try_from(st.st_size).unwrap_or(0);
    let mut out = Vec::with_capacity(len.saturating_add(1));
    std::fs::File::from(fd).read_to_end(&mut out)?;
    Ok(Found::File(out))
}

/// Creates the file `name` in `dir` (it must not exist; links are not followed) holding
/// `bytes`.
pub(super) fn create(dir: BorrowedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o666))?;
    std::fs::File::from(fd).write_all(bytes)
}

/// Renames `name` in `from` to the same name in `to` (the entry itself, never a link's
/// target).
pub(super) fn rename(from: BorrowedFd, to: BorrowedFd, name: &str) -> io::Result<()> {
    Ok(rustix::fs::renameat(from, name, to, name)?)
}

/// The [`super::Stamp`] of the regular file `name` in `dir`; `None` for anything else.
pub(super) fn stamp(dir: BorrowedFd, name: &str) -> Option<super::Stamp> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    stamp_of(&st)
}

/// The [`super::Stamp`] of `st` when it is a regular file's.
pub(super) fn stamp_of(st: &rustix::fs::Stat) -> Option<super::Stamp> {
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return None;
    }
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)] // widths differ by platform
    Some(super::Stamp {
        len: st.st_size as u64,
        mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
        ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        ino: st.st_ino as u64,
        dev: st.st_dev as u64,
    })
}

/// Whether `name` in `dir` is a regular file or a symbolic link (what a prune moves away).
pub(super) fn is_file_or_link(dir: BorrowedFd, name: &str) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        matches!(
            rustix::fs::FileType::from_raw_mode(st.st_mode),
            rustix::fs::FileType::RegularFile | rustix::fs::FileType::Symlink
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_paths_open_each_directory_once_and_refuse_links() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink(t.path().join("a"), t.path().join("l")).unwrap();
        let root = open_root(t.path()).unwrap();
        let mut dirs = Dirs::new(root.as_fd(), t.path(), Missing::Absent);
        assert!(dirs.open("a/b").unwrap().is_some());
        assert!(dirs.open("a/c/d").unwrap().is_none());
        assert!(dirs.open("").unwrap().is_some());
        let err = dirs.open("l/b").err().unwrap();
        assert!(matches!(err, WriteError::SymlinkInPath { .. }), "{err}");
        let mut build = Dirs::new(root.as_fd(), t.path(), Missing::Build);
        let fd = build.open("n/m").unwrap().unwrap();
        create(fd, "f", b"x").unwrap();
        assert_eq!(std::fs::read(t.path().join("n/m/f")).unwrap(), b"x");
        let dir = build.open("n/m").unwrap().unwrap();
        assert!(matches!(read(dir, "f").unwrap(), Found::File(b) if b == b"x"));
        assert!(matches!(read(dir, "g").unwrap(), Found::Missing));
    }
}
