//! `kiln.lock`: every remote source of a platform, what was asked for and what it resolved
//! to, in the shape of `Cargo.lock` (TOML, one `[[source]]` table per source). Sorted by
//! kind, URL, chart name and what was asked for, one key a line, so a change is a small diff.
//!
//! ```toml
//! # kiln.lock: the remote sources of this platform, resolved. Written by kiln; `kiln update` changes it.
//! version = 1
//!
//! [[source]]
//! kind = "git"
//! url = "https://git.example/shop/cart.git"
//! requested = "main"
//! submodules = true           # a remote base's submodules are in the tree (only when so)
//! resolved = "4f3c…"          # the commit
//! digest = "sha256:…"         # the fetched tree (cache::tree_digest)
//!
//! [[source]]
//! kind = "helm"
//! url = "https://charts.example.com"
//! chart = "redis"
//! requested = "18.x"
//! version = "18.2.1"
//! resolved = "sha256:…"       # the archive (or, for oci, the manifest)
//! digest = "sha256:…"
//! ```
//!
//! The pipeline decides when the lock is read and written; this module parses, prints and
//! stores it (a temporary file beside it, renamed over it: never half-written).
#![allow(clippy::disallowed_methods)] // the source fetcher's I/O boundary (clippy.toml)

use crate::error::SourceError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The file's name, beside `platform.yaml`.
pub const FILE_NAME: &str = "kiln.lock";

/// What identifies a source in the lock: its kind, URL, chart name (empty for Git) and what
/// was asked for. Two uses asking the same thing share one entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockKey {
    pub kind: String,
    pub url: String,
    pub chart: String,
    pub requested: String,
    /// A Git source fetched with its submodules (a remote base's `?submodules=`, true when
    /// absent): another tree than the same commit without them.
    pub submodules: bool,
}

/// One resolved source.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    pub kind: String,
    pub url: String,
    #[serde(default)]
    pub chart: String,
    pub requested: String,
    /// Git: the submodules' trees are part of the tree (`submodules = true`; written only
    /// then). Their commits are the gitlinks of `resolved`, and their files are in `digest`.
    #[serde(default)]
    pub submodules: bool,
    /// A chart's version (empty for Git).
    #[serde(default)]
    pub version: String,
    /// The commit id (Git), or the archive's or OCI manifest's `sha256:` digest (charts).
    pub resolved: String,
    /// The fetched tree's content digest.
    pub digest: String,
}

impl LockEntry {
    pub fn key(&self) -> LockKey {
        LockKey {
            kind: self.kind.clone(),
            url: self.url.clone(),
            chart: self.chart.clone(),
            requested: self.requested.clone(),
            submodules: self.submodules,
        }
    }
}

/// `kiln.lock`, as a sorted map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockFile {
    pub entries: BTreeMap<LockKey, LockEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    version: u32,
    #[serde(default)]
    source: Vec<LockEntry>,
}

impl LockFile {
    /// Parses `text` (read from `path`, named in errors).
    pub fn parse(path: &str, text: &str) -> Result<LockFile, SourceError> {
        let bad = |detail: String| SourceError::BadLock {
            path: path.to_string(),
            detail,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        if raw.version != 1 {
            return Err(bad(format!(
                "version {} is not one this kiln reads (1)",
                raw.version
            )));
        }
        let mut entries = BTreeMap::new();
        for e in raw.source {
            if e.url.contains('@') && kiln_base::url::has_credentials(&e.url) {
                return Err(bad(format!(
                    "`{}` holds credentials",
                    kiln_base::url::redact(&e.url)
                )));
            }
            if let Some(old) = entries.insert(e.key(), e) {
                return Err(bad(format!(
                    "`{}` ({}) is listed twice",
                    old.url, old.requested
                )));
            }
        }
        Ok(LockFile { entries })
    }

    /// The lock at `path`; `Ok(None)` when there is none.
    pub fn read(path: &Path) -> Result<Option<LockFile>, SourceError> {
        match std::fs::read_to_string(path) {
            Ok(text) => LockFile::parse(&path.display().to_string(), &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SourceError::io("read", path, e)),
        }
    }

    /// Writes the lock to `path` when its text differs from what is there; whether it wrote.
    pub fn store(&self, path: &Path) -> Result<bool, SourceError> {
        let text = self.to_text();
        if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
            return Ok(false);
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut tmp =
            tempfile::NamedTempFile::new_in(dir).map_err(|e| SourceError::io("write", path, e))?;
        std::io::Write::write_all(&mut tmp, text.as_bytes())
            .map_err(|e| SourceError::io("write", path, e))?;
        tmp.persist(path)
            .map_err(|e| SourceError::io("write", path, e.error))?;
        Ok(true)
    }

    pub fn get(&self, key: &LockKey) -> Option<&LockEntry> {
        self.entries.get(key)
    }

    pub fn insert(&mut self, entry: LockEntry) {
        self.entries.insert(entry.key(), entry);
    }

    /// The file's text: stable, sorted, one key a line.
    pub fn to_text(&self) -> String {
        let mut out = String::from(
            "# kiln.lock: the remote sources of this platform, resolved. Written by kiln; `kiln update` changes it.\nversion = 1\n",
        );
        for e in self.entries.values() {
            out.push_str("\n[[source]]\n");
            let field =
                |k: &str, v: &str| format!("{k} = {}\n", kiln_helm::engine::toml::quoted(v));
            out.push_str(&field("kind", &e.kind));
            out.push_str(&field("url", &e.url));
            if !e.chart.is_empty() {
                out.push_str(&field("chart", &e.chart));
            }
            out.push_str(&field("requested", &e.requested));
            if e.submodules {
                out.push_str("submodules = true\n");
            }
            if !e.version.is_empty() {
                out.push_str(&field("version", &e.version));
            }
            out.push_str(&field("resolved", &e.resolved));
            out.push_str(&field("digest", &e.digest));
        }
        out
    }
}

/// How one source differs between the lock a run read and the lock it leaves (`kiln
/// update`'s report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A source the old lock did not list.
    Added(LockEntry),
    /// A source the old lock listed and this run no longer uses.
    Removed(LockEntry),
    /// The same source (kind, URL, chart, what was asked for) resolved to another commit,
    /// version or digest.
    Moved {
        old: LockEntry,
        new: LockEntry,
        /// What was asked for is a tag that now names something else: a Git tag resolved to
        /// another commit, or a chart version (a Helm repository's version, an OCI tag) now
        /// served with another archive or manifest. Tags are expected never to move; one that
        /// does is a supply-chain warning.
        tag_moved: bool,
    },
}

impl LockFile {
    /// Every source that differs between `self` (the old lock) and `new`, in the lock's
    /// order. `git_tags` are the Git sources this run resolved through a tag
    /// (`refs/tags/*`); a chart's version is its tag.
    pub fn changes(
        &self,
        new: &LockFile,
        git_tags: &std::collections::BTreeSet<LockKey>,
    ) -> Vec<Change> {
        let mut out = Vec::new();
        for (key, n) in &new.entries {
            match self.entries.get(key) {
                None => out.push(Change::Added(n.clone())),
                Some(o) if o.resolved != n.resolved || o.digest != n.digest => {
                    let tag_moved = match n.kind.as_str() {
                        // The same commit stored anew is no tag moving.
                        "git" => git_tags.contains(key) && o.resolved != n.resolved,
                        _ => o.version == n.version,
                    };
                    out.push(Change::Moved {
                        old: o.clone(),
                        new: n.clone(),
                        tag_moved,
                    });
                }
                Some(_) => {}
            }
        }
        for (key, o) in &self.entries {
            if !new.entries.contains_key(key) {
                out.push(Change::Removed(o.clone()));
            }
        }
        out
    }
}

/// A commit id or digest, short enough for a line (`4f3c2a1b9e0d`, `sha256:9a0b…` to 12).
fn short(id: &str) -> &str {
    let (prefix, hex) = id
        .split_once(':')
        .map_or((0, id), |(p, h)| (p.len() + 1, h));
    &id[..prefix + hex.len().min(12)]
}

impl LockEntry {
    /// `git <url> (<requested>)`, `helm <url> <chart> (<requested>)`.
    fn label(&self) -> String {
        let chart = if self.chart.is_empty() {
            String::new()
        } else {
            format!(" {}", self.chart)
        };
        format!(
            "{} {}{chart} ({})",
            self.kind,
            kiln_base::url::redact(&self.url),
            self.requested
        )
    }

    /// What it resolved to: the commit, or the chart's version and digest.
    fn point(&self) -> String {
        if self.version.is_empty() {
            short(&self.resolved).to_string()
        } else {
            format!("{} {}", self.version, short(&self.resolved))
        }
    }
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Added(e) => write!(f, "added {}: {}", e.label(), e.point()),
            Change::Removed(e) => write!(f, "removed {}: was {}", e.label(), e.point()),
            Change::Moved { old, new, .. } => {
                write!(
                    f,
                    "moved {}: {} → {}",
                    new.label(),
                    old.point(),
                    new.point()
                )
            }
        }
    }
}

impl Change {
    /// The supply-chain warning of a moved tag, with the full ids to check; `None` otherwise.
    pub fn tag_warning(&self) -> Option<String> {
        let Change::Moved {
            old,
            new,
            tag_moved: true,
        } = self
        else {
            return None;
        };
        let what = if new.kind == "git" {
            format!("the tag `{}`", new.requested)
        } else {
            format!("the version `{}` of chart `{}`", new.version, new.chart)
        };
        Some(format!(
            "{what} of {} `{}` moved: kiln.lock had {}, the server now has {}. A tag is expected never to change; check what it now points at before committing kiln.lock",
            new.kind,
            kiln_base::url::redact(&new.url),
            old.resolved,
            new.resolved
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: &str, url: &str, chart: &str, requested: &str) -> LockEntry {
        LockEntry {
            kind: kind.into(),
            url: url.into(),
            chart: chart.into(),
            requested: requested.into(),
            submodules: false,
            version: if chart.is_empty() {
                String::new()
            } else {
                "1.2.3".into()
            },
            resolved: "abc".into(),
            digest: "sha256:00".into(),
        }
    }

    #[test]
    fn written_sorted_and_read_back() {
        let mut lock = LockFile::default();
        lock.insert(entry("oci", "oci://r/charts/web", "web", "^1"));
        lock.insert(entry("git", "https://g/b.git", "", "v1"));
        lock.insert(entry("git", "https://g/a.git", "", "main \"x\"\\"));
        let text = lock.to_text();
        let a = text.find("g/a.git").unwrap();
        let b = text.find("g/b.git").unwrap();
        let o = text.find("oci://").unwrap();
        assert!(a < b && b < o, "{text}");
        assert_eq!(LockFile::parse("kiln.lock", &text).unwrap(), lock);
        // The same entries in another order: the same bytes.
        let mut again = LockFile::default();
        for e in lock.entries.values().rev() {
            again.insert(e.clone());
        }
        assert_eq!(again.to_text(), text);
    }

    #[test]
    fn stored_only_when_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        assert_eq!(LockFile::read(&path).unwrap(), None);
        let mut lock = LockFile::default();
        lock.insert(entry("git", "https://g/a.git", "", "main"));
        assert!(lock.store(&path).unwrap());
        assert!(!lock.store(&path).unwrap());
        assert_eq!(LockFile::read(&path).unwrap(), Some(lock));
    }

    #[test]
    fn changes_name_each_moved_source_and_moved_tags() {
        let mut old = LockFile::default();
        let branch = entry("git", "https://g/a.git", "", "main");
        let tag = entry("git", "https://g/b.git", "", "v1");
        let chart = entry("helm", "https://c", "web", "^1");
        let gone = entry("git", "https://g/c.git", "", "main");
        for e in [&branch, &tag, &chart, &gone] {
            old.insert(e.clone());
        }
        let mut new = LockFile::default();
        let moved = |e: &LockEntry, resolved: &str, version: &str| LockEntry {
            resolved: resolved.into(),
            version: version.into(),
            ..e.clone()
        };
        new.insert(moved(&branch, "def", ""));
        new.insert(moved(&tag, "0123456789abcdef0123", ""));
        // The same chart version with another archive: a moved tag.
        new.insert(moved(&chart, "sha256:ffff", "1.2.3"));
        new.insert(entry("git", "https://g/d.git", "", "main"));
        let tags: std::collections::BTreeSet<LockKey> = [tag.key()].into();
        let changes = old.changes(&new, &tags);
        let shown: Vec<String> = changes.iter().map(|c| c.to_string()).collect();
        assert_eq!(
            shown,
            [
                "moved git https://g/a.git (main): abc → def",
                "moved git https://g/b.git (v1): abc → 0123456789ab",
                "added git https://g/d.git (main): abc",
                "moved helm https://c web (^1): 1.2.3 abc → 1.2.3 sha256:ffff",
                "removed git https://g/c.git (main): was abc",
            ]
        );
        let warned: Vec<String> = changes.iter().filter_map(Change::tag_warning).collect();
        assert_eq!(warned.len(), 2, "{warned:?}");
        assert!(
            warned[0].contains("the tag `v1`") && warned[0].contains("0123456789abcdef0123"),
            "{warned:?}"
        );
        assert!(warned[1].contains("version `1.2.3` of chart `web`"));
        // A chart resolved to a newer version is a move, not a moved tag.
        let mut newer = LockFile::default();
        newer.insert(moved(&chart, "sha256:eeee", "1.3.0"));
        let c = old.changes(&newer, &tags);
        assert!(c.iter().all(|c| c.tag_warning().is_none()), "{c:?}");
        // A tag at the same commit whose tree digest was stored anew did not move.
        let mut same = LockFile::default();
        same.insert(LockEntry {
            digest: "sha256:other".into(),
            ..tag.clone()
        });
        let c = old.changes(&same, &tags);
        assert!(
            c.iter()
                .any(|c| c.to_string().starts_with("moved git https://g/b.git")),
            "{c:?}"
        );
        assert!(c.iter().all(|c| c.tag_warning().is_none()), "{c:?}");
    }

    #[test]
    fn a_bad_lock_is_refused() {
        for (text, want) in [
            ("version = 2\n", "version 2"),
            ("version = 1\n[[source]]\nkind = \"git\"\n", "missing field"),
            ("version = 1\nextra = 1\n", "unknown field"),
        ] {
            let err = LockFile::parse("kiln.lock", text).unwrap_err();
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
        let e = entry("git", "https://g/a.git", "", "main");
        let mut lock = LockFile::default();
        lock.insert(e);
        let text = lock.to_text();
        let twice = format!("{text}{}", &text[text.find("[[source]]").unwrap() - 1..]);
        assert!(
            LockFile::parse("kiln.lock", &twice)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
    }
}
