//! The ownership marker `.kiln-owned.json` and the path rule it enforces: a leaf module (it
//! imports nothing from kiln) shared by `write` (a rendered directory) and `git` (a managed
//! path in a branch), so a directory rendered and committed by hand is recognised by
//! `publish`, `diff` and `verify`, and both sides refuse the same paths.
//!
//! The path rule follows git's own `verify_path` (git's `read-cache.c`, `is_ntfs_dotgit`): a
//! segment that any file system git supports would treat as `.git` is refused, so `.git ` and
//! `git~1` (the NTFS 8.3 short name) never reach libgit2's generic error.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;

/// Name of kiln's ownership marker, written at the root of the managed path or output
/// directory. It lists every file kiln generated there (paths relative to it), so the next
/// run can prune what is no longer generated and leave everything else alone.
pub const MARKER_FILE: &str = ".kiln-owned.json";

/// Format tag stored in the marker; bumped only if the marker's shape changes.
pub const MARKER_FORMAT: &str = "kiln.owned-files/v1";

/// Why a marker could not be read: a sentence the caller wraps in its stage's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerError(pub String);

impl fmt::Display for MarkerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MarkerError {}

/// The ownership marker: the files kiln generated, as paths relative to the marker's
/// directory. JSON: `{"format": "kiln.owned-files/v1", "files": [...sorted]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedMarker {
    pub format: String,
    pub files: BTreeSet<String>,
}

impl OwnedMarker {
    /// A marker listing `files`.
    pub fn new(files: impl IntoIterator<Item = String>) -> Self {
        Self {
            format: MARKER_FORMAT.to_string(),
            files: files.into_iter().collect(),
        }
    }

    /// Pretty JSON with a trailing newline; stable for identical file lists.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text.into_bytes()
    }

    /// Reads a marker.
    ///
    /// Errors: not JSON, another format, a listed path that [`check_rel_path`] refuses, or the
    /// marker listing itself.
    pub fn parse(bytes: &[u8]) -> Result<Self, MarkerError> {
        let marker: Self = serde_json::from_slice(bytes).map_err(|e| MarkerError(e.to_string()))?;
        if marker.format != MARKER_FORMAT {
            return Err(MarkerError(format!(
                "unknown format `{}` (this kiln understands `{MARKER_FORMAT}`)",
                marker.format
            )));
        }
        for file in &marker.files {
            if check_rel_path(file).is_err() || file == MARKER_FILE {
                return Err(MarkerError(format!("lists an invalid path `{file}`")));
            }
        }
        Ok(marker)
    }
}

/// Checks a path kiln writes: relative, `/`-separated, no empty, blank, `.` or `..` segment,
/// no backslash or NUL, and no segment a file system would take for `.git`. Returns its
/// segments, or the reason it is refused.
pub fn check_rel_path(path: &str) -> Result<Vec<&str>, &'static str> {
    if path.is_empty() {
        return Err("empty path");
    }
    if path.starts_with('/') {
        return Err("absolute path");
    }
    if path.contains('\\') || path.contains('\0') {
        return Err("backslash or NUL in path");
    }
    if path.chars().any(char::is_control) {
        return Err("control character (a newline, a tab) in path");
    }
    let segments: Vec<&str> = path.split('/').collect();
    for s in &segments {
        match *s {
            "" => return Err("empty segment"),
            "." | ".." => return Err("`.` or `..` segment"),
            s if s.trim().is_empty() => return Err("blank segment"),
            s if s.trim() != s => return Err("segment with leading or trailing spaces"),
            s if is_dotgit(s) => return Err("`.git` segment"),
            s if is_git_metadata(s) => {
                return Err(
                    "`.gitmodules`, `.gitattributes` or `.gitignore` segment (git reads them)",
                );
            }
            _ => {}
        }
    }
    Ok(segments)
}

/// Whether `segment` is a file git itself reads (`.gitmodules`, `.gitattributes`,
/// `.gitignore`, any case): a folder of that name would break the repository's checkout.
fn is_git_metadata(segment: &str) -> bool {
    [".gitmodules", ".gitattributes", ".gitignore"]
        .iter()
        .any(|m| segment.eq_ignore_ascii_case(m))
}

/// Whether a file system may resolve `segment` to `.git`: any case, trailing spaces or dots
/// (Windows strips them), or the NTFS short name `git~1`.
pub fn is_dotgit(segment: &str) -> bool {
    let trimmed = segment.trim_end_matches([' ', '.']);
    trimmed.eq_ignore_ascii_case(".git") || trimmed.eq_ignore_ascii_case("git~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trips_and_rejects_foreign_formats() {
        let m = OwnedMarker::new(["b".to_string(), "a/x".to_string()]);
        assert_eq!(OwnedMarker::parse(&m.to_bytes()).unwrap(), m);
        assert!(OwnedMarker::parse(br#"{"format":"other","files":[]}"#).is_err());
        for bad in ["../x", ".kiln-owned.json", "a/.git /config"] {
            let json = format!(r#"{{"format":"kiln.owned-files/v1","files":["{bad}"]}}"#);
            assert!(OwnedMarker::parse(json.as_bytes()).is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_git_would_treat_as_dotgit_or_blank_are_refused() {
        assert_eq!(check_rel_path("a/b.yaml").unwrap(), ["a", "b.yaml"]);
        assert!(check_rel_path("a/.github/x").is_ok());
        for bad in [
            "",
            "/a",
            "a//b",
            "a/../b",
            "./a",
            "a\\b",
            ".git/config",
            ".GIT",
            ".git ",
            ".git.",
            "git~1",
            "GIT~1/x",
            "  ",
            "a/ /b",
        ] {
            assert!(check_rel_path(bad).is_err(), "{bad:?}");
        }
    }
}
