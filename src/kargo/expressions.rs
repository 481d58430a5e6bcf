//! Kargo expressions (`${{ … }}`) that would reach the cluster as text.
//!
//! Kargo evaluates expressions only inside a promotion step's `config` (and a Stage's
//! `vars`); a manifest that `kustomize-build` writes is copied byte for byte
//! (`pkg/promotion/runner/builtin/kustomize_builder.go` at Kargo v1.11.2 writes the build
//! output, it never evaluates it). So `${{ ctx.stage }}` inside a rendered ConfigMap is
//! deployed literally. To inject a per-promotion value, a step before `kustomize-build`
//! must write it (e.g. `yaml-update` on the source folder), or the manifest must not use it.

use serde_json::Value;

/// One `${{` found in a rendered manifest value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpressionInManifest {
    /// File of the rendered tree.
    pub file: String,
    /// `kind/name` of the resource.
    pub resource: String,
    /// JSON pointer of the value (or of the key) holding it.
    pub pointer: String,
    /// The string holding it.
    pub text: String,
}

impl std::fmt::Display for ExpressionInManifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} {}: `{}` holds a Kargo expression; Kargo evaluates `${{{{ }}}}` only in promotion step config, so this text reaches the cluster as written",
            self.file, self.resource, self.pointer, self.text
        )
    }
}

/// Every string value or key under `value` that holds `${{`, with its JSON pointer.
pub fn find(value: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out);
    out
}

fn walk(v: &Value, at: &mut String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) if s.contains("${{") => out.push((at.clone(), s.clone())),
        Value::Object(m) => {
            for (k, child) in m {
                let len = at.len();
                kiln_base::pointer::push(at, k);
                if k.contains("${{") {
                    out.push((at.clone(), k.clone()));
                }
                walk(child, at, out);
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let len = at.len();
                at.push_str(&format!("/{i}"));
                walk(child, at, out);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// The `${{` in the rendered manifests of `set` (its `*.gen.yaml` files; the Kargo objects,
/// where expressions belong, are not scanned). Files are parsed only when their text holds
/// `${{`, so a clean tree costs one substring search per file.
pub fn scan(set: &crate::artifact::ArtifactSet) -> Vec<ExpressionInManifest> {
    let mut out = Vec::new();
    for (path, bytes) in &set.files {
        scan_file(path, bytes, &mut out);
    }
    out
}

/// [`scan`] of one file of the set, its expressions appended to `out` (a render that
/// streams its files into the write scans each as it is rendered).
pub fn scan_file(path: &str, bytes: &[u8], out: &mut Vec<ExpressionInManifest>) {
    if !path.ends_with(".gen.yaml") {
        return;
    }
    let text = String::from_utf8_lossy(bytes);
    if !text.contains("${{") {
        return;
    }
    for doc in crate::yaml::parse_stream(path, &text).unwrap_or_default() {
        let resource = format!(
            "{}/{}",
            doc["kind"].as_str().unwrap_or_default(),
            doc["metadata"]["name"].as_str().unwrap_or_default()
        );
        for (pointer, text) in find(&doc) {
            out.push(ExpressionInManifest {
                file: path.to_string(),
                resource: resource.clone(),
                pointer,
                text,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_expressions_in_values_and_keys_with_their_pointer() {
        let v = json!({
            "kind": "ConfigMap",
            "metadata": { "annotations": { "a/b": "${{ ctx.stage }}" } },
            "data": { "x": "plain", "${{ k }}": "v", "list": ["ok", "${{ vars.y }}"] },
        });
        let mut got = find(&v);
        got.sort();
        assert_eq!(
            got,
            vec![
                ("/data/${{ k }}".to_string(), "${{ k }}".to_string()),
                ("/data/list/1".to_string(), "${{ vars.y }}".to_string()),
                (
                    "/metadata/annotations/a~1b".to_string(),
                    "${{ ctx.stage }}".to_string()
                ),
            ]
        );
        assert!(find(&json!({"a": "${ env.name }", "b": "{{ .X }}"})).is_empty());
    }
}
