//! Charts from a Helm HTTP repository: its `index.yaml` read, the chart's `version:`
//! resolved as Helm v4.2.3's `repo.IndexFile.Get` does (`pkg/repo/v1/index.go`: the entries
//! sorted newest first by `SortEntries`; an exact string match first, then the first
//! version the constraint — Masterminds/semver, kiln-helm's `sprig::semver` — accepts; an
//! empty version means `*`), and the archive downloaded from the entry's first URL
//! (`ResolveReferenceURL`: relative to the repository's URL). The index's `digest`, when it
//! gives one, is checked against the archive.

use crate::error::{Origin, SourceError, nearest};
use crate::http::Http;
use kiln_helm::sprig::semver::{Constraints, Version};
use serde_json::Value;

/// One chart version the index lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartVersion {
    pub version: String,
    /// The archive's URL, absolute.
    pub url: String,
    /// The index's `digest` (hex SHA-256 of the archive), when given.
    pub digest: Option<String>,
}

/// The versions of `chart` in the repository at `repo`, newest first.
pub fn versions(
    http: &Http,
    repo: &str,
    chart: &str,
    origin: &Origin,
) -> Result<Vec<ChartVersion>, SourceError> {
    let base = repo.trim_end_matches('/');
    let index_url = format!("{base}/index.yaml");
    let resp = http.get(&index_url, "application/x-yaml, */*", origin)?;
    if resp.status != 200 {
        return Err(SourceError::BadResponse {
            origin: Box::new(origin.clone()),
            detail: format!(
                "{} answered {} for index.yaml",
                kiln_base::url::redact(&index_url),
                resp.status
            ),
            help: "check that the URL is a Helm chart repository (it serves index.yaml)".into(),
        });
    }
    let text = String::from_utf8_lossy(&resp.body);
    let index =
        kiln_base::yaml::parse_one("index.yaml", &text).map_err(|e| SourceError::BadResponse {
            origin: Box::new(origin.clone()),
            detail: format!("its index.yaml is not YAML: {e}"),
            help: "check that the URL is a Helm chart repository".into(),
        })?;
    let entries = index.get("entries").and_then(Value::as_object);
    let Some(list) = entries.and_then(|e| e.get(chart)).and_then(Value::as_array) else {
        let names: Vec<String> = entries
            .map(|e| e.keys().cloned().collect())
            .unwrap_or_default();
        return Err(SourceError::NotFound {
            origin: Box::new(origin.clone()),
            wanted: chart.to_string(),
            help: format!(
                "the repository has no chart `{chart}`; {}",
                nearest(chart, &names, "charts")
            ),
        });
    };
    let mut out: Vec<(Option<Version>, ChartVersion)> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let Some(version) = v.get("version").and_then(Value::as_str) else {
            continue;
        };
        let Some(first) = v
            .get("urls")
            .and_then(Value::as_array)
            .and_then(|u| u.first())
            .and_then(Value::as_str)
        else {
            continue;
        };
        let digest = digest_text(&text, chart, i, v.get("digest"));
        out.push((
            Version::parse(version).ok(),
            ChartVersion {
                version: version.to_string(),
                url: resolve_reference(base, first),
                digest,
            },
        ));
    }
    // `SortEntries`: newest first; versions that do not parse sort last, as they never match.
    out.sort_by(|a, b| match (&a.0, &b.0) {
        (Some(x), Some(y)) => y.compare(x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    Ok(out.into_iter().map(|(_, v)| v).collect())
}

/// `IndexFile.Get`'s choice among `versions` (newest first) for `wanted`.
pub fn select<'a>(
    versions: &'a [ChartVersion],
    wanted: &str,
    origin: &Origin,
) -> Result<&'a ChartVersion, SourceError> {
    select_by(versions, |v| v.version.as_str(), wanted, origin)
}

/// The version `wanted` picks from `items` (newest first), by Helm's rule; shared by the
/// HTTP repository and the OCI registry's tags.
pub fn select_by<'a, T>(
    items: &'a [T],
    version_of: impl Fn(&T) -> &str,
    wanted: &str,
    origin: &Origin,
) -> Result<&'a T, SourceError> {
    if let Some(exact) = items
        .iter()
        .find(|v| !wanted.is_empty() && version_of(v) == wanted)
    {
        return Ok(exact);
    }
    let constraint_text = if wanted.is_empty() { "*" } else { wanted };
    let listed: Vec<String> = items.iter().map(|v| version_of(v).to_string()).collect();
    let constraint = match Constraints::parse(constraint_text) {
        Ok(c) => c,
        Err(e) => {
            return Err(SourceError::NotFound {
                origin: Box::new(origin.clone()),
                wanted: wanted.to_string(),
                help: format!(
                    "`{wanted}` is neither a listed version nor a constraint ({e}); {}",
                    nearest(wanted, &listed, "versions")
                ),
            });
        }
    };
    if let Some(v) = items
        .iter()
        .find(|v| Version::parse(version_of(v)).is_ok_and(|p| constraint.check(&p)))
    {
        return Ok(v);
    }
    // An exact version (no operator, no wildcard) that is not listed is a missing version;
    // anything else is a constraint matching nothing.
    let exact = Version::parse_strict(wanted.trim_start_matches('v')).is_ok();
    if exact {
        Err(SourceError::NotFound {
            origin: Box::new(origin.clone()),
            wanted: wanted.to_string(),
            help: nearest(wanted, &listed, "versions"),
        })
    } else {
        Err(SourceError::NoMatch {
            origin: Box::new(origin.clone()),
            constraint: wanted.to_string(),
            help: nearest(wanted, &listed, "versions"),
        })
    }
}

/// `repo.ResolveReferenceURL`: an absolute URL stands; a relative one is taken from the
/// repository's URL (as a directory).
fn resolve_reference(base: &str, reference: &str) -> String {
    if reference.contains("://") {
        return reference.to_string();
    }
    if let Some(path) = reference.strip_prefix('/') {
        let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
        let host = rest.split('/').next().unwrap_or_default();
        return format!("{scheme}://{host}/{path}");
    }
    format!("{base}/{}", reference.trim_start_matches("./"))
}

/// The `digest` of entry `i` of `chart` in the index (`text`) as Helm reads it: its
/// `ChartVersion.Digest` is a string, and sigs.k8s.io/yaml reads any plain scalar into a
/// string field as its text, so a digest YAML resolves to a number (all digits, `1e5…`) is
/// still the digest, taken from the text, and checked (never dropped).
fn digest_text(text: &str, chart: &str, i: usize, digest: Option<&Value>) -> Option<String> {
    match digest? {
        Value::String(s) => Some(s.clone()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
        other => {
            let pointer = format!("/entries/{}/{i}/digest", kiln_base::pointer::escape(chart));
            let at = kiln_base::yaml::locate(text, 0, &pointer, false);
            Some(
                at.and_then(|l| text.get(l.offset..l.offset + l.len))
                    .map_or_else(|| other.to_string(), |t| t.trim().to_string()),
            )
        }
    }
}

/// Downloads `version`'s archive of `chart`; refuses it when its sha256 differs from the
/// index's digest (the project's rule: a fetched source whose digest differs is refused;
/// Flux's source-controller does the same, Helm itself does not, helm/helm#7623).
pub fn download(
    http: &Http,
    chart: &str,
    version: &ChartVersion,
    origin: &Origin,
) -> Result<Vec<u8>, SourceError> {
    let resp = http.get(&version.url, "application/gzip, */*", origin)?;
    if resp.status != 200 {
        return Err(SourceError::BadResponse {
            origin: Box::new(origin.clone()),
            detail: format!(
                "{} answered {}",
                kiln_base::url::redact(&version.url),
                resp.status
            ),
            help: "the repository's index names an archive the server does not serve".into(),
        });
    }
    if let Some(want) = &version.digest {
        let actual = kiln_base::digest::sha256_hex(&resp.body);
        if !actual.eq_ignore_ascii_case(want) {
            return Err(SourceError::DigestMismatch {
                origin: Box::new(origin.clone()),
                what: format!(
                    "chart `{chart}` version {} (archive {})",
                    version.version,
                    kiln_base::url::redact(&version.url)
                ),
                expected: format!("sha256:{want}"),
                actual: format!("sha256:{actual}"),
                by: "the repository's index.yaml",
                help: "the server sent an archive other than the one its index describes; it was not used".into(),
            });
        }
    }
    Ok(resp.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(version: &str) -> ChartVersion {
        ChartVersion {
            version: version.into(),
            url: String::new(),
            digest: None,
        }
    }

    fn origin() -> Origin {
        Origin::new("helm", "http://127.0.0.1/charts", "web")
    }

    #[test]
    fn versions_resolve_as_helm_resolves_them() {
        let list = [
            v("2.0.0"),
            v("1.3.0-rc.1"),
            v("1.2.5"),
            v("1.2.0"),
            v("0.9.0"),
        ];
        let pick = |w: &str| select(&list, w, &origin()).map(|c| c.version.clone());
        assert_eq!(pick("").unwrap(), "2.0.0");
        assert_eq!(pick("1.2.0").unwrap(), "1.2.0");
        assert_eq!(pick("^1.2").unwrap(), "1.2.5");
        assert_eq!(pick("1.x").unwrap(), "1.2.5");
        assert_eq!(pick("~1.2.0").unwrap(), "1.2.5");
        assert_eq!(pick(">=1.3.0-0").unwrap(), "2.0.0");
        assert_eq!(pick(">=1.3.0-0 <2").unwrap(), "1.3.0-rc.1");
        // An exact string match first, even for a prerelease no constraint would pick.
        assert_eq!(pick("1.3.0-rc.1").unwrap(), "1.3.0-rc.1");
    }

    #[test]
    fn a_missing_version_and_an_unmatched_constraint_list_the_nearest() {
        let list = [v("1.2.5"), v("1.2.0")];
        let err = select(&list, "1.2.4", &origin()).unwrap_err();
        assert!(matches!(err, SourceError::NotFound { .. }), "{err}");
        let help = miette::Diagnostic::help(&err).unwrap().to_string();
        assert!(
            help.contains("`1.2.5`") && help.contains("`1.2.0`"),
            "{help}"
        );
        let err = select(&list, "^3", &origin()).unwrap_err();
        assert!(matches!(err, SourceError::NoMatch { .. }), "{err}");
        assert!(
            err.to_string()
                .contains("no version matches the constraint `^3`")
        );
    }

    #[test]
    fn archive_urls_are_resolved_against_the_repository() {
        assert_eq!(
            resolve_reference("http://h/charts", "web-1.0.0.tgz"),
            "http://h/charts/web-1.0.0.tgz"
        );
        assert_eq!(
            resolve_reference("http://h/charts", "/x/web.tgz"),
            "http://h/x/web.tgz"
        );
        assert_eq!(
            resolve_reference("http://h/charts", "https://o/web.tgz"),
            "https://o/web.tgz"
        );
    }
}
