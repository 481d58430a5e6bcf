//! Loading a packaged chart (`.tgz`), after Helm v4.2.3 `pkg/chart/v2/loader/archive.go`
//! and `internal/chart/v3/util`'s `archive` limits: every entry under the archive's top
//! directory, no file over 5 MiB and no archive inflating past 100 MiB.

use super::loader::{R, Resolve, build, err, strip_utf8_bom, walk_order};
use super::*;

/// Helm's `archive.MaxDecompressedFileSize`: no chart file may be larger (5 MiB).
pub(super) const MAX_FILE_SIZE: u64 = 5 * 1024 * 1024;
/// Helm's `archive.MaxDecompressedChartSize`: an archive inflates to less than this (100 MiB).
pub(super) const MAX_CHART_SIZE: u64 = 100 * 1024 * 1024;

/// Loads a packaged chart: every entry under the archive's top directory.
pub fn load_archive(data: &[u8], shown: &str, resolve: Resolve) -> R<Chart> {
    let gz = flate2::read::GzDecoder::new(data);
    let mut ar = tar::Archive::new(gz);
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut remaining = MAX_CHART_SIZE;
    let entries = ar.entries().map_err(|e| err(shown, e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| err(shown, e.to_string()))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry
            .path()
            .map_err(|e| err(shown, e.to_string()))?
            .to_string_lossy()
            .replace('\\', "/");
        let Some((_, inner)) = path.split_once('/') else {
            continue;
        };
        if inner.split('/').any(|p| p == "..") {
            return Err(err(
                shown,
                format!("chart archive entry {path:?} leaves the chart"),
            ));
        }
        // Helm's limits, checked on the header before anything is inflated: a small archive
        // cannot make the loader hold gigabytes.
        let size = entry.header().size().unwrap_or(u64::MAX);
        if size > remaining {
            return Err(err(
                shown,
                format!("decompressed chart is larger than the maximum size {MAX_CHART_SIZE}"),
            ));
        }
        if size > MAX_FILE_SIZE {
            return Err(err(
                shown,
                format!(
                    "decompressed chart file {path:?} is larger than the maximum file size {MAX_FILE_SIZE}"
                ),
            ));
        }
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(&mut entry, remaining), &mut buf)
            .map_err(|e| err(shown, e.to_string()))?;
        remaining -= buf.len() as u64;
        if (buf.len() as u64) < size || remaining == 0 {
            return Err(err(
                shown,
                format!("decompressed chart is larger than the maximum size {MAX_CHART_SIZE}"),
            ));
        }
        files.push((inner.to_string(), strip_utf8_bom(buf)));
    }
    // No `.helmignore` here, and no hidden-template default either: Helm's archive loader
    // (pkg/chart/loader/archive) takes every file; `helm package` applied the rules when it
    // made the archive.
    files.sort_by(|a, b| walk_order(&a.0, &b.0));
    let files = files
        .into_iter()
        .map(|(n, d)| (n, FileData::Loaded(d)))
        .collect();
    build(None, files, shown, resolve)
}
