//! The Kubernetes API server's rules for object names, namespaces and labels (apimachinery's
//! `pkg/util/validation`: `IsDNS1123Label`, `IsDNS1123Subdomain`, `IsDNS1035Label`,
//! `IsQualifiedName`, `IsValidLabelValue`; `ValidatePathSegmentName` for RBAC and custom
//! resources), checked on every object kiln emits so an invalid name fails the render with
//! its plan and object instead of failing later at `kubectl apply` or in Argo CD.

use serde_json::Value;

/// Why `name` is not a DNS-1123 label (lower-case alphanumerics and `-`, alphanumeric at both
/// ends, at most 63 characters).
pub fn dns1123_label(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name.len() > 63 {
        return Some(format!(
            "it has {} characters, at most 63 are allowed",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(format!(
            "`{c}` is not allowed (only lower-case letters, digits and `-`)"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("it must start and end with a letter or digit".into());
    }
    None
}

/// Why `s` is not a DNS-1123 subdomain (DNS-1123 labels joined by `.`, at most 253).
pub fn dns1123_subdomain(s: &str) -> Option<String> {
    if s.len() > 253 {
        return Some(format!(
            "it has {} characters, at most 253 are allowed",
            s.len()
        ));
    }
    if s.is_empty() {
        return Some("it is empty".into());
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '.'))
    {
        return Some(format!(
            "`{c}` is not allowed (only lower-case letters, digits, `-` and `.`)"
        ));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if s.split('.')
        .any(|part| !alnum(part.chars().next()) || !alnum(part.chars().last()))
    {
        return Some("each `.`-separated part must start and end with a letter or digit".into());
    }
    None
}

/// Why `s` is not a path segment name (RBAC objects, custom resources): not `.` or `..`, no
/// `/` or `%`.
pub fn path_segment(s: &str) -> Option<String> {
    match s {
        "" => Some("it is empty".into()),
        "." | ".." => Some(format!("`{s}` is not a name")),
        _ if s.contains('/') || s.contains('%') => Some("`/` and `%` are not allowed".into()),
        _ => None,
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63: a label value or a key's name part.
fn qualified_part(s: &str) -> Option<String> {
    if s.len() > 63 {
        return Some(format!(
            "it has {} characters, at most 63 are allowed",
            s.len()
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Some(format!(
            "`{c}` is not allowed (only letters, digits, `-`, `_` and `.`)"
        ));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(s.chars().next()) || !alnum(s.chars().last()) {
        return Some("it must start and end with a letter or digit".into());
    }
    None
}

/// Why `key` is not a label key: an optional DNS-1123 subdomain prefix and `/`, then a name of
/// at most 63 characters.
pub fn label_key(key: &str) -> Option<String> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            if let Some(p) = dns1123_subdomain(prefix) {
                return Some(format!("its prefix `{prefix}`: {p}"));
            }
            name
        }
        None => key,
    };
    if name.is_empty() {
        return Some("its name part is empty".into());
    }
    qualified_part(name)
}

/// Why `value` is not a label value (empty, or as a key's name part).
pub fn label_value(value: &str) -> Option<String> {
    if value.is_empty() {
        None
    } else {
        qualified_part(value)
    }
}

/// API groups whose object names the API server checks as DNS-1123 subdomains (the built-in
/// groups); objects of other groups (custom resources) only need path segment names.
const SUBDOMAIN_GROUPS: &[&str] = &[
    "",
    "apps",
    "batch",
    "policy",
    "autoscaling",
    "networking.k8s.io",
    "storage.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "node.k8s.io",
    "certificates.k8s.io",
    "apiextensions.k8s.io",
    "admissionregistration.k8s.io",
];

/// The JSON type of `v`, for messages that must not print the value itself.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Every problem with `object`'s `apiVersion`, `kind`, `metadata.name`, `metadata.namespace`,
/// labels and annotations, as `(field, reason)`.
pub fn object_problems(object: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let api = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    let meta = object.get("metadata");
    let text = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str);
    // What makes it an object at all (a transformer may have removed it: a JSON patch
    // `remove /metadata/name`, or `replace ""` with `{}`).
    for (field, present) in [
        (
            "apiVersion",
            object.get("apiVersion").is_some_and(Value::is_string),
        ),
        ("kind", object.get("kind").is_some_and(Value::is_string)),
    ] {
        if !present {
            out.push((field.to_string(), "missing, or not a string".to_string()));
        }
    }
    let has = |k: &str| text(k).is_some_and(|s| !s.is_empty());
    if !has("name") && !has("generateName") {
        out.push((
            "metadata.name".to_string(),
            "missing (and no metadata.generateName)".to_string(),
        ));
    }
    if meta
        .and_then(|m| m.get("namespace"))
        .is_some_and(|ns| !ns.is_string() && !ns.is_null())
    {
        out.push(("metadata.namespace".to_string(), "not a string".to_string()));
    }
    // Labels and annotations are map[string]string in the API: `l: 8` is refused.
    for field in ["labels", "annotations"] {
        if let Some(map) = meta.and_then(|m| m.get(field)).and_then(Value::as_object) {
            for (k, v) in map {
                if !v.is_string() {
                    out.push((
                        format!("metadata.{field}.{k}"),
                        format!("a {} where the API takes a string (quote it)", json_type(v)),
                    ));
                }
            }
        }
    }
    if let Some(name) = text("name") {
        let problem = match (group, kind) {
            ("", "Namespace") => dns1123_label(name),
            ("", "Service") => dns1123_label(name).or_else(|| {
                (!name.starts_with(|c: char| c.is_ascii_lowercase()))
                    .then(|| "a Service name must start with a letter".into())
            }),
            ("rbac.authorization.k8s.io", _) => path_segment(name),
            (g, _) if SUBDOMAIN_GROUPS.contains(&g) => dns1123_subdomain(name),
            _ => path_segment(name),
        };
        if let Some(p) = problem {
            out.push(("metadata.name".to_string(), p));
        }
    }
    if let Some(ns) = text("namespace")
        && let Some(p) = dns1123_label(ns)
    {
        out.push(("metadata.namespace".to_string(), p));
    }
    if let Some(labels) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        for (k, v) in labels {
            if let Some(p) = label_key(k) {
                out.push((format!("metadata.labels key `{k}`"), p));
            }
            if let Some(p) = v.as_str().and_then(label_value) {
                out.push((format!("metadata.labels.{k}"), p));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dns_labels() {
        assert_eq!(dns1123_label("web"), None);
        assert!(dns1123_label("Web").is_some());
        assert!(dns1123_label("web_app").is_some());
        assert!(dns1123_label("-web").is_some());
        assert!(dns1123_label(&"a".repeat(64)).is_some());
    }

    #[test]
    fn names_namespaces_and_label_keys_follow_the_api_server() {
        let bad = |o: Value| object_problems(&o);
        let ok = |o: Value| assert_eq!(object_problems(&o), Vec::<(String, String)>::new());
        ok(
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "frontend-pdb", "namespace": "web-dev", "labels": {"app.kubernetes.io/name": "web", "tier": ""}}}),
        );
        ok(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:aggregate-to-edit"}}),
        );
        ok(
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "Mixed_Case"}}),
        );
        assert_eq!(
            bad(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "Frontend_PDB"}}))[0].0,
            "metadata.name"
        );
        assert!(!bad(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a".repeat(300)}})).is_empty());
        assert_eq!(
            bad(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "../../etc"}}))[0].0,
            "metadata.namespace"
        );
        assert!(bad(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"has space": "x"}}}))[0].0.contains("has space"));
        assert!(
            !bad(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1web"}}))
                .is_empty()
        );
        assert!(!bad(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a/b"}})).is_empty());
    }

    /// Found by the QA pass: a transformer removed the name, emptied the object, or wrote an
    /// unquoted number into a label; each reached the rendered tree with exit 0.
    #[test]
    fn objects_without_identity_or_with_non_string_metadata_are_problems() {
        let fields = |o: Value| {
            object_problems(&o)
                .into_iter()
                .map(|(f, _)| f)
                .collect::<Vec<_>>()
        };
        assert_eq!(fields(json!({})), ["apiVersion", "kind", "metadata.name"]);
        assert_eq!(
            fields(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "a"}})
            ),
            ["metadata.name"]
        );
        assert!(fields(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "migrate-"}})).is_empty());
        let labelled = object_problems(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"l": 8}, "annotations": {"n": 8, "ok": "8"}}}));
        assert_eq!(
            labelled.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
            ["metadata.labels.l", "metadata.annotations.n"]
        );
        assert!(labelled[0].1.contains("number"), "{labelled:?}");
    }
}
