//! Charts from an OCI registry, as Helm v4.2.3 stores them (`pkg/registry/constants.go`:
//! config `application/vnd.cncf.helm.config.v1+json`, one layer
//! `application/vnd.cncf.helm.chart.content.v1.tar+gzip`), through the distribution API
//! (`GET /v2/<name>/tags/list`, `/manifests/<reference>`, `/blobs/<digest>`). A tag's `+`
//! is stored as `_` (OCI tags allow no `+`; `pkg/registry/client.go`), and a constraint is
//! resolved over the tags as Helm's `registry.GetTagMatchingVersionOrConstraint` does. The
//! manifest's digest is what the lock pins; every blob is checked against its digest.

use crate::error::{Origin, SourceError};
use crate::http::{Http, Response};
use serde_json::Value;

pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.cncf.helm.config.v1+json";
pub const CHART_LAYER_MEDIA_TYPE: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// `oci://host[:port]/path/name` split into the registry's base URL and the repository name.
/// Plain HTTP for a loopback host (as Helm's `--plain-http` is needed for), HTTPS otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub base: String,
    pub name: String,
}

impl Reference {
    pub fn parse(url: &str, origin: &Origin) -> Result<Reference, SourceError> {
        let bad = || SourceError::BadResponse {
            origin: Box::new(origin.clone()),
            detail: format!("`{}` is not an OCI reference", kiln_base::url::redact(url)),
            help: "write it as oci://host[:port]/path/chart, the version in `version:`".into(),
        };
        let rest = url.strip_prefix("oci://").ok_or_else(bad)?;
        let (host, name) = rest.split_once('/').ok_or_else(bad)?;
        if host.is_empty() || name.is_empty() || name.contains(':') || name.contains('@') {
            return Err(bad());
        }
        let hostname = host.rsplit_once(':').map_or(host, |(h, _)| h);
        let scheme = if matches!(hostname, "localhost" | "127.0.0.1" | "[::1]") {
            "http"
        } else {
            "https"
        };
        Ok(Reference {
            base: format!("{scheme}://{host}/v2/{}", name.trim_end_matches('/')),
            name: name.trim_end_matches('/').to_string(),
        })
    }

    /// The chart's name: the repository's last segment.
    pub fn chart(&self) -> &str {
        self.name.rsplit('/').next().unwrap_or(&self.name)
    }
}

fn fail(origin: &Origin, what: &str, resp: &Response) -> SourceError {
    SourceError::BadResponse {
        origin: Box::new(origin.clone()),
        detail: format!("the registry answered {} for {what}", resp.status),
        help: "check the reference and that the registry serves the OCI distribution API".into(),
    }
}

/// The repository's tags, as chart versions (`_` read back as `+`).
pub fn tags(http: &Http, r: &Reference, origin: &Origin) -> Result<Vec<String>, SourceError> {
    let resp = http.get(&format!("{}/tags/list", r.base), "application/json", origin)?;
    if resp.status == 404 {
        return Err(SourceError::NotFound {
            origin: Box::new(origin.clone()),
            wanted: r.name.clone(),
            help: "the registry has no such repository; check the path after the host".into(),
        });
    }
    if resp.status != 200 {
        return Err(fail(origin, "the tag list", &resp));
    }
    let doc: Value = serde_json::from_slice(&resp.body).unwrap_or_default();
    let mut tags: Vec<(kiln_helm::sprig::semver::Version, String)> = doc
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|t| t.replace('_', "+"))
        .filter_map(|t| {
            kiln_helm::sprig::semver::Version::parse(&t)
                .ok()
                .map(|v| (v, t))
        })
        .collect();
    tags.sort_by(|a, b| b.0.compare(&a.0));
    Ok(tags.into_iter().map(|(_, t)| t).collect())
}

/// The manifest at `reference` (a tag or a `sha256:` digest): its bytes and digest.
pub fn manifest(
    http: &Http,
    r: &Reference,
    reference: &str,
    origin: &Origin,
) -> Result<(Vec<u8>, String), SourceError> {
    let tag = reference.replace('+', "_");
    let resp = http.get(
        &format!("{}/manifests/{tag}", r.base),
        MANIFEST_MEDIA_TYPE,
        origin,
    )?;
    if resp.status == 404 {
        return Err(SourceError::NotFound {
            origin: Box::new(origin.clone()),
            wanted: format!("{}:{reference}", r.name),
            help: "the registry has no manifest by that tag or digest".into(),
        });
    }
    if resp.status != 200 {
        return Err(fail(origin, "the manifest", &resp));
    }
    let digest = kiln_base::digest::sha256_tagged(&resp.body);
    if reference.starts_with("sha256:") && digest != reference {
        return Err(SourceError::DigestMismatch {
            origin: Box::new(origin.clone()),
            what: "the manifest the registry sent".into(),
            expected: reference.to_string(),
            actual: digest,
            by: "kiln.lock",
            help: "the registry answered a digest request with other content; it was not used"
                .into(),
        });
    }
    Ok((resp.body, digest))
}

/// The chart archive a manifest's layer holds, its digest checked.
pub fn chart_layer(
    http: &Http,
    r: &Reference,
    manifest: &[u8],
    origin: &Origin,
) -> Result<Vec<u8>, SourceError> {
    let doc: Value = serde_json::from_slice(manifest).unwrap_or_default();
    let layer = doc
        .get("layers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|l| l.get("mediaType").and_then(Value::as_str) == Some(CHART_LAYER_MEDIA_TYPE));
    let Some(digest) = layer.and_then(|l| l.get("digest")).and_then(Value::as_str) else {
        return Err(SourceError::BadResponse {
            origin: Box::new(origin.clone()),
            detail: format!("the manifest has no layer of type {CHART_LAYER_MEDIA_TYPE}"),
            help: "the artifact is not a Helm chart (push it with `helm push`)".into(),
        });
    };
    let resp = http.get(
        &format!("{}/blobs/{digest}", r.base),
        "application/octet-stream",
        origin,
    )?;
    if resp.status != 200 {
        return Err(fail(origin, "the chart layer", &resp));
    }
    let actual = kiln_base::digest::sha256_tagged(&resp.body);
    if actual != digest {
        return Err(SourceError::DigestMismatch {
            origin: Box::new(origin.clone()),
            what: "the chart layer the registry sent".into(),
            expected: digest.to_string(),
            actual,
            by: "the manifest",
            help: "the registry sent a blob other than the one asked for; it was not used".into(),
        });
    }
    Ok(resp.body)
}

/// Pushes `chart` (a `.tgz`) as `name:version` with Helm's media types, through the
/// distribution API's monolithic upload (`POST /blobs/uploads/`, `PUT ?digest=`): what
/// `helm push` does. kiln itself never pushes; the tests fill their registries with it.
pub fn push(
    http: &Http,
    r: &Reference,
    version: &str,
    chart: &[u8],
    config: &[u8],
    origin: &Origin,
) -> Result<String, SourceError> {
    let blob = |data: &[u8]| -> Result<(String, usize), SourceError> {
        let digest = kiln_base::digest::sha256_tagged(data);
        let start = http.send(
            "POST",
            &format!("{}/blobs/uploads/", r.base),
            "*/*",
            Some(("application/octet-stream", &[])),
            origin,
        )?;
        let location = start
            .location
            .clone()
            .ok_or_else(|| fail(origin, "the upload", &start))?;
        let location = if location.starts_with('/') {
            let host = r.base.split("/v2/").next().unwrap_or_default();
            format!("{host}{location}")
        } else {
            location
        };
        let sep = if location.contains('?') { '&' } else { '?' };
        let put = http.send(
            "PUT",
            &format!("{location}{sep}digest={digest}"),
            "*/*",
            Some(("application/octet-stream", data)),
            origin,
        )?;
        if put.status != 201 {
            return Err(fail(origin, "the blob upload", &put));
        }
        Ok((digest, data.len()))
    };
    let (config_digest, config_size) = blob(config)?;
    let (layer_digest, layer_size) = blob(chart)?;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": CHART_LAYER_MEDIA_TYPE, "digest": layer_digest, "size": layer_size}],
    });
    let body = serde_json::to_vec(&manifest).unwrap_or_default();
    let tag = version.replace('+', "_");
    let put = http.send(
        "PUT",
        &format!("{}/manifests/{tag}", r.base),
        "*/*",
        Some((MANIFEST_MEDIA_TYPE, &body)),
        origin,
    )?;
    if put.status != 201 {
        return Err(fail(origin, "the manifest upload", &put));
    }
    Ok(kiln_base::digest::sha256_tagged(&body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_split_into_registry_and_name() {
        let o = Origin::new("oci", "oci://x", "1");
        let r = Reference::parse("oci://127.0.0.1:5000/charts/web", &o).unwrap();
        assert_eq!(r.base, "http://127.0.0.1:5000/v2/charts/web");
        assert_eq!(r.chart(), "web");
        let r = Reference::parse("oci://registry.example.com/a/b/redis", &o).unwrap();
        assert_eq!(r.base, "https://registry.example.com/v2/a/b/redis");
        for bad in ["https://x/y", "oci://host", "oci://host/web:1.0"] {
            assert!(Reference::parse(bad, &o).is_err(), "{bad}");
        }
    }
}
