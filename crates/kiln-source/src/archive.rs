//! Safe extraction of the gzipped tar archives charts come in (a Helm repository's `.tgz`,
//! an OCI chart layer). Helm's own loader (`pkg/chart/v2/loader/archive.go`, `LoadArchiveFiles`)
//! reads only regular files and refuses paths leaving the chart; kiln writes the archive to
//! the cache, so it holds more: an entry with `..`, an absolute path, a link (symbolic or
//! hard) whose target leaves the tree, a device, a FIFO or a socket refuses the archive
//! whole, and so do one file or all of them over [`Limits`].
#![allow(clippy::disallowed_methods)] // the source fetcher's I/O boundary (clippy.toml)

use crate::error::{Origin, SourceError};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Size limits on what one source may bring in. The defaults are Helm's for a chart (100 MiB
/// decompressed, 5 MiB per file: `pkg/chart/v2/loader/archive.go`) and the same total for a
/// Git fetch; `KILN_SOURCE_MAX_BYTES`, `KILN_SOURCE_MAX_FILE_BYTES` and
/// `KILN_SOURCE_MAX_ENTRIES` change them (read by the CLI, docs/sources.md). `timeout` bounds
/// how long a server may stay silent (`KILN_SOURCE_TIMEOUT`, seconds): a server that accepts
/// a connection and never answers must fail the run, never hang it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes one source may bring: the download (archive, pack) and the extracted tree.
    pub max_bytes: u64,
    /// Bytes of one extracted file.
    pub max_file_bytes: u64,
    /// Entries (files, directories, links) of one extracted tree.
    pub max_entries: u64,
    /// The longest a server may take to accept a connection, or to answer once asked.
    pub timeout: std::time::Duration,
}

/// A server's silence that fails a fetch: git's own `http.lowSpeedTime` idea with a bound
/// a slow registry on a bad day still meets.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 100 << 20,
            max_file_bytes: 5 << 20,
            max_entries: 20_000,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl Limits {
    /// The limits `var` (the environment, read by the caller) sets: `KILN_SOURCE_TIMEOUT`
    /// (whole seconds), `KILN_SOURCE_MAX_BYTES`, `KILN_SOURCE_MAX_FILE_BYTES` and
    /// `KILN_SOURCE_MAX_ENTRIES` (whole numbers), each at least 1; an unset or empty
    /// variable keeps its default. Any other value is refused
    /// ([`SourceError::BadSetting`]), never read as the default.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Limits, SourceError> {
        let mut limits = Limits::default();
        let seconds = number(
            &var,
            "KILN_SOURCE_TIMEOUT",
            "a whole number of seconds, at least 1",
            "30",
        )?;
        if let Some(s) = seconds {
            limits.timeout = std::time::Duration::from_secs(s);
        }
        let bytes = "a whole number of bytes, at least 1";
        let default = Limits::default();
        for (variable, expected, field, default) in [
            (
                "KILN_SOURCE_MAX_BYTES",
                bytes,
                &mut limits.max_bytes,
                default.max_bytes,
            ),
            (
                "KILN_SOURCE_MAX_FILE_BYTES",
                bytes,
                &mut limits.max_file_bytes,
                default.max_file_bytes,
            ),
            (
                "KILN_SOURCE_MAX_ENTRIES",
                "a whole number of entries, at least 1",
                &mut limits.max_entries,
                default.max_entries,
            ),
        ] {
            if let Some(n) = number(&var, variable, expected, &default.to_string())? {
                *field = n;
            }
        }
        Ok(limits)
    }

    pub(crate) fn too_large(&self, origin: &Origin, what: String, which: Which) -> SourceError {
        let (limit, unit, variable) = match which {
            Which::Bytes => (self.max_bytes, "bytes", "KILN_SOURCE_MAX_BYTES"),
            Which::FileBytes => (self.max_file_bytes, "bytes", "KILN_SOURCE_MAX_FILE_BYTES"),
            Which::Entries => (self.max_entries, "entries", "KILN_SOURCE_MAX_ENTRIES"),
        };
        SourceError::TooLarge {
            origin: Box::new(origin.clone()),
            what,
            limit,
            unit,
            variable,
        }
    }
}

/// The value of `variable`: `None` when unset or empty, a number of at least 1, else
/// refused.
fn number(
    var: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    expected: &'static str,
    default: &str,
) -> Result<Option<u64>, SourceError> {
    let Some(value) = var(variable).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(SourceError::BadSetting {
            variable,
            value,
            expected,
            default: default.to_string(),
        }),
    }
}

/// Which limit was passed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Which {
    Bytes,
    FileBytes,
    Entries,
}

/// A relative path with only normal parts: `None` for an absolute path, one with `..`, or
/// an empty one.
pub fn safe_relative(name: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in name.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Whether a link at `link` (relative to the tree) pointing at `target` stays inside the
/// tree, followed lexically (an absolute target never does).
pub fn link_stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth: Vec<&std::ffi::OsStr> = link
        .parent()
        .map(|p| {
            p.components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    for part in target.components() {
        match part {
            Component::Normal(n) => depth.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Extracts the gzipped tar `data` into `dest` (an empty directory), under `limits`.
pub fn extract_tgz(
    data: &[u8],
    dest: &Path,
    limits: &Limits,
    origin: &Origin,
) -> Result<(), SourceError> {
    if data.len() as u64 > limits.max_bytes {
        return Err(limits.too_large(origin, "the archive".into(), Which::Bytes));
    }
    let unsafe_entry = |entry: &Path, reason: &str| SourceError::UnsafeArchive {
        origin: Box::new(origin.clone()),
        entry: entry.display().to_string(),
        reason: reason.to_string(),
    };
    let bad = |e: std::io::Error| SourceError::BadResponse {
        origin: Box::new(origin.clone()),
        detail: format!("the archive cannot be read: {e}"),
        help: "the server sent something that is not a gzipped tar archive".into(),
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(data));
    let mut total = 0u64;
    let mut count = 0u64;
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        count += 1;
        if count > limits.max_entries {
            return Err(limits.too_large(
                origin,
                "the archive's entry count".into(),
                Which::Entries,
            ));
        }
        let name = entry.path().map_err(bad)?.into_owned();
        let kind = entry.header().entry_type();
        // PAX headers and GNU long names are folded into the next entry by the tar crate;
        // their own records carry nothing to write.
        if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
            || kind.is_gnu_longlink()
        {
            continue;
        }
        let Some(rel) = safe_relative(&name) else {
            let reason = if name.is_absolute() {
                "is an absolute path"
            } else {
                "leaves the archive's tree (`..`)"
            };
            return Err(unsafe_entry(&name, reason));
        };
        let path = dest.join(&rel);
        if kind.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| SourceError::io("create", &path, e))?;
            continue;
        }
        if kind.is_symlink() || kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(bad)?
                .map(|t| t.into_owned())
                .unwrap_or_default();
            // A hard link's target is relative to the archive's root, a symbolic link's to
            // its own directory.
            let inside = if kind.is_hard_link() {
                safe_relative(&target).is_some()
            } else {
                link_stays_inside(&rel, &target)
            };
            if !inside {
                return Err(unsafe_entry(
                    &name,
                    &format!(
                        "is a link to `{}`, out of the archive's tree",
                        target.display()
                    ),
                ));
            }
            // Inside links are refused too: Helm's loader does not follow them, and a chart
            // needs none.
            return Err(unsafe_entry(
                &name,
                "is a link (charts hold regular files only)",
            ));
        }
        if !(kind.is_file() || kind == tar::EntryType::Continuous) {
            return Err(unsafe_entry(
                &name,
                "is a device, FIFO or other special file",
            ));
        }
        let size = entry.header().size().map_err(bad)?;
        if size > limits.max_file_bytes {
            return Err(limits.too_large(
                origin,
                format!("`{}`", name.display()),
                Which::FileBytes,
            ));
        }
        total += size;
        if total > limits.max_bytes {
            return Err(limits.too_large(origin, "the extracted archive".into(), Which::Bytes));
        }
        let mut buf = Vec::with_capacity(size as usize);
        entry
            .by_ref()
            .take(limits.max_file_bytes + 1)
            .read_to_end(&mut buf)
            .map_err(bad)?;
        if buf.len() as u64 > limits.max_file_bytes {
            return Err(limits.too_large(
                origin,
                format!("`{}`", name.display()),
                Which::FileBytes,
            ));
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| SourceError::io("create", parent, e))?;
        }
        std::fs::write(&path, &buf).map_err(|e| SourceError::io("write", &path, e))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Each `KILN_SOURCE_*` variable: a number sets it, unset or empty keeps the default,
    /// anything else (`abc`, `0`, `-1`, `1.5`, `10k`) is refused naming the variable, the
    /// value and what it takes.
    #[test]
    fn limits_from_the_environment_refuse_what_is_not_a_number() {
        let vars = |pairs: &[(&str, &str)]| {
            let pairs: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            }
        };
        assert_eq!(Limits::from_vars(vars(&[])).unwrap(), Limits::default());
        let set = Limits::from_vars(vars(&[
            ("KILN_SOURCE_TIMEOUT", "7"),
            ("KILN_SOURCE_MAX_BYTES", "1000"),
            ("KILN_SOURCE_MAX_FILE_BYTES", " 100 "),
            ("KILN_SOURCE_MAX_ENTRIES", "3"),
        ]))
        .unwrap();
        assert_eq!(set.timeout, std::time::Duration::from_secs(7));
        assert_eq!(
            (set.max_bytes, set.max_file_bytes, set.max_entries),
            (1000, 100, 3)
        );
        let empty = Limits::from_vars(vars(&[("KILN_SOURCE_TIMEOUT", "")])).unwrap();
        assert_eq!(empty, Limits::default());
        for (variable, unit) in [
            ("KILN_SOURCE_TIMEOUT", "seconds"),
            ("KILN_SOURCE_MAX_BYTES", "bytes"),
            ("KILN_SOURCE_MAX_FILE_BYTES", "bytes"),
            ("KILN_SOURCE_MAX_ENTRIES", "entries"),
        ] {
            for bad in ["abc", "0", "-1", "1.5", "10k"] {
                let e = Limits::from_vars(vars(&[(variable, bad)])).unwrap_err();
                let shown = e.to_string();
                assert!(
                    shown.contains(&format!("{variable}=`{bad}`"))
                        && shown.contains(&format!("a whole number of {unit}, at least 1")),
                    "{shown}"
                );
                assert!(matches!(e, SourceError::BadSetting { .. }), "{e:?}");
            }
        }
    }

    /// A gzipped tar of `entries` written by hand (raw headers), so that hostile names and
    /// types reach the reader exactly as an attacker would write them.
    pub(crate) fn tgz(entries: &[(&str, tar::EntryType, &[u8], &str)]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, kind, data, link) in entries {
            let mut h = tar::Header::new_old();
            {
                let raw = h.as_old_mut();
                raw.name[..name.len()].copy_from_slice(name.as_bytes());
                raw.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        let tar = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &tar).unwrap();
        gz.finish().unwrap()
    }

    fn origin() -> Origin {
        Origin::new("helm", "http://127.0.0.1/charts", "web 1.0.0")
    }

    fn extract(data: &[u8], limits: &Limits) -> Result<tempfile::TempDir, SourceError> {
        let dir = tempfile::tempdir().unwrap();
        extract_tgz(data, dir.path(), limits, &origin()).map(|()| dir)
    }

    #[test]
    fn a_plain_chart_is_extracted() {
        let data = tgz(&[
            ("web/", tar::EntryType::Directory, b"", ""),
            (
                "web/Chart.yaml",
                tar::EntryType::Regular,
                b"name: web\n",
                "",
            ),
        ]);
        let dir = extract(&data, &Limits::default()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("web/Chart.yaml")).unwrap(),
            "name: web\n"
        );
    }

    #[test]
    fn hostile_entries_refuse_the_archive() {
        use tar::EntryType::*;
        let cases: &[(&str, tar::EntryType, &str, &str)] = &[
            ("../evil", Regular, "", "leaves the archive's tree"),
            ("web/../../evil", Regular, "", "leaves the archive's tree"),
            ("/etc/evil", Regular, "", "absolute path"),
            (
                "web/link",
                Symlink,
                "../../etc/passwd",
                "out of the archive's tree",
            ),
            (
                "web/link",
                Symlink,
                "/etc/passwd",
                "out of the archive's tree",
            ),
            ("web/hard", Link, "../outside", "out of the archive's tree"),
            ("web/dev", Char, "", "device"),
            ("web/blk", Block, "", "device"),
            ("web/fifo", Fifo, "", "FIFO"),
        ];
        for (name, kind, link, want) in cases {
            let data = tgz(&[(name, *kind, b"", link)]);
            let err = extract(&data, &Limits::default()).unwrap_err();
            assert!(
                matches!(err, SourceError::UnsafeArchive { .. }) && err.to_string().contains(want),
                "{name}: {err}"
            );
        }
    }

    #[test]
    fn size_limits_hold() {
        let big = vec![b'x'; 2048];
        let data = tgz(&[
            ("web/a", tar::EntryType::Regular, &big, ""),
            ("web/b", tar::EntryType::Regular, &big, ""),
        ]);
        let one_file = Limits {
            max_file_bytes: 1024,
            ..Limits::default()
        };
        let err = extract(&data, &one_file).unwrap_err();
        assert!(
            err.to_string()
                .contains("`web/a` is over the limit of 1024 bytes"),
            "{err}"
        );
        let total = Limits {
            max_bytes: 3000,
            ..Limits::default()
        };
        let err = extract(&data, &total).unwrap_err();
        assert!(
            err.to_string()
                .contains("the extracted archive is over the limit of 3000"),
            "{err}"
        );
        let entries = Limits {
            max_entries: 1,
            ..Limits::default()
        };
        assert!(matches!(
            extract(&data, &entries),
            Err(SourceError::TooLarge { .. })
        ));
        assert!(extract(&data, &Limits::default()).is_ok());
    }

    #[test]
    fn links_are_followed_lexically() {
        assert!(link_stays_inside(Path::new("a/b/l"), Path::new("../c")));
        assert!(!link_stays_inside(Path::new("a/l"), Path::new("../../c")));
        assert!(!link_stays_inside(Path::new("l"), Path::new("/c")));
    }
}
