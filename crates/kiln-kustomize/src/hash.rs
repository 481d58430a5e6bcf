//! kustomize's content hash for generated ConfigMaps and Secrets, bit-exact, and the hash
//! suffix transformer that appends it to names (`app-settings` → `app-settings-7mh5hth542`).
//!
//! Where it sits: after every other rename of the outermost kustomization (prefix, suffix,
//! namespace), before the name-reference transformer; kustomize runs it once, at the top
//! (`KustTarget.addHashesToNames`), never per base.
//!
//! Invariant: the hash of an object depends only on the fields kustomize's
//! `api/hasher/hasher.go` reads, encoded byte for byte as Go's `encoding/json` does:
//! - ConfigMap: `{"binaryData":…,"data":…,"kind":"ConfigMap","name":""}` (`binaryData` only
//!   when present as a map);
//! - Secret: `{"data":…,"kind":"Secret","name":"","stringData":…,"type":…}` (`stringData`
//!   only when present as a map).
//!
//! `name` is always `""`: kustomize looks the name up with `yaml.Lookup("metadata/name")`, a
//! *single* field literally called `metadata/name`, which never exists — so prefixes,
//! suffixes and namespaces never change the hash. An absent `data` (or `type`) is encoded as
//! the empty string `""`, not `null` or `{}`. SHA-256 of those bytes, first 10 hex digits,
//! then kustomize's (kubectl's) vowel-avoiding substitution `0→g 1→h 3→k a→m e→t`.

use kiln_base::digest::sha256_hex as hex_sha256;
use kiln_base::resource::Resource;
use serde_json::Value;
use std::fmt::Write as _;

/// Errors of the hash suffix transformer.
#[derive(Debug, thiserror::Error, miette::Diagnostic, PartialEq, Eq)]
pub enum HashError {
    /// An object marked for a hash suffix has no `metadata.name`.
    #[error("generated {kind} has no metadata.name, so no hash suffix can be appended")]
    #[diagnostic(
        code(kiln::kustomize::hash_name_missing),
        help("generators always set a name; a patch may have removed it — keep `metadata.name`")
    )]
    NameMissing { kind: String },
}

/// The 10-character hash kustomize appends to a generated object's name.
///
/// ConfigMap and Secret hash the fields listed in the module docs; any other kind hashes the
/// whole object (sorted keys, Go encoding) — kustomize marshals its internal YAML node there,
/// which no generator of ours produces, so that branch is a documented approximation.
pub fn content_hash(value: &Value) -> String {
    let input = hash_input(value);
    encode(&hex_sha256(input.as_bytes()))
}

/// The exact bytes kustomize feeds to SHA-256 for `value` (exposed for tests and debugging).
pub fn hash_input(value: &Value) -> String {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let mut fields: Vec<(&str, Value)> = Vec::new();
    // Absent fields become "" (kustomize's getNodeValues default), present maps stay maps.
    let field = |k: &str| {
        value
            .get(k)
            .cloned()
            .unwrap_or(Value::String(String::new()))
    };
    match kind {
        "ConfigMap" => {
            fields.push(("kind", Value::String("ConfigMap".into())));
            fields.push(("name", Value::String(String::new())));
            fields.push(("data", field("data")));
            if let Some(bd @ Value::Object(_)) = value.get("binaryData") {
                fields.push(("binaryData", bd.clone()));
            }
        }
        "Secret" => {
            fields.push(("kind", Value::String("Secret".into())));
            fields.push(("type", field("type")));
            fields.push(("name", Value::String(String::new())));
            fields.push(("data", field("data")));
            if let Some(sd @ Value::Object(_)) = value.get("stringData") {
                fields.push(("stringData", sd.clone()));
            }
        }
        _ => {
            let mut out = String::new();
            go_json(value, &mut out);
            return out;
        }
    }
    let obj: serde_json::Map<String, Value> = fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let mut out = String::new();
    go_json(&Value::Object(obj), &mut out);
    out
}

/// Appends `-<hash>` to the name of every resource with `meta.needs_hash_suffix`, recording
/// the old name in `meta.previous_names` (kustomize's `HashTransformerPlugin`, which calls
/// `StorePreviousId` before `SetName`). The flag is cleared afterwards, so applying the
/// transformer twice does not hash twice.
///
/// Errors: [`HashError::NameMissing`] when a flagged object has no name.
pub fn apply_hash_suffixes(resources: &mut [Resource]) -> Result<(), HashError> {
    for res in resources.iter_mut().filter(|r| r.meta.needs_hash_suffix) {
        if res.name().is_empty() {
            return Err(HashError::NameMissing {
                kind: res.kind().to_string(),
            });
        }
        let hash = content_hash(&res.value);
        let old = (res.namespace().map(str::to_string), res.name().to_string());
        let new_name = format!("{}-{hash}", old.1);
        res.meta.previous_names.push(old);
        res.set_name(&new_name);
        res.meta.needs_hash_suffix = false;
    }
    Ok(())
}

/// kubectl's `hash.encode`: first 10 hex digits, with `0 1 3 a e` replaced so the result
/// cannot spell words (or look like a number).
fn encode(hex: &str) -> String {
    hex.chars()
        .take(10)
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect()
}

/// Serializes like Go's `json.Marshal` of `map[string]interface{}` values: object keys sorted
/// by bytes, no whitespace, strings escaped by [`go_string`].
fn go_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => go_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(it, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_string(k, out);
                out.push(':');
                go_json(&map[k], out);
            }
            out.push('}');
        }
    }
}

/// Go decodes JSON numbers into `float64` before re-marshalling them (kustomize round-trips
/// the data map through `interface{}`): integral values print without a fraction, others in
/// the shortest round-trip form, which Rust's `Display` for `f64` matches in the usual range.
fn go_number(n: &serde_json::Number) -> String {
    match n.to_string().parse::<f64>() {
        Ok(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
        Ok(f) if f.is_finite() => format!("{f}"),
        _ => n.to_string(),
    }
}

/// Go's `encoding/json` string encoder with HTML escaping on (the `json.Marshal` default):
/// `<`, `>`, `&` become `\u003c`, `\u003e`, `\u0026`; U+2028/U+2029 become `\u2028`/`\u2029`;
/// `"` and `\` are backslash-escaped; `\n`, `\r`, `\t`, `\b`, `\f` use their short forms
/// (Go ≥ 1.22); other control characters become `\u00XX` (lower-case hex); everything else,
/// including non-ASCII, stays raw UTF-8.
fn go_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "whatever"}, "data": data})
    }

    #[test]
    fn encodes_like_go_json_marshal() {
        let v = cm(json!({"MESSAGE": "Grüße & <welcome>", "EMOJI": "🚀"}));
        assert_eq!(
            hash_input(&v),
            r#"{"data":{"EMOJI":"🚀","MESSAGE":"Grüße \u0026 \u003cwelcome\u003e"},"kind":"ConfigMap","name":""}"#
        );
        let mut s = String::new();
        go_string("a\u{1}\u{8}\u{c}\u{2028}\"\\\t", &mut s);
        assert_eq!(s, r#""a\u0001\b\f\u2028\"\\\t""#);
    }

    #[test]
    fn k06_unicode_html_and_secret_hashes() {
        // /work/shared/cases/k06-generator-hash-encoding/expected.yaml
        let v = cm(json!({"MESSAGE": "Grüße & <welcome>", "EMOJI": "🚀"}));
        assert_eq!(content_hash(&v), "59h595f882");
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
            "type": "Opaque", "data": {"USER": "YWRtaW4="}});
        assert_eq!(
            hash_input(&secret),
            r#"{"data":{"USER":"YWRtaW4="},"kind":"Secret","name":"","type":"Opaque"}"#
        );
        assert_eq!(content_hash(&secret), "248m72gbcd");
    }

    #[test]
    fn k05_hash_ignores_name_and_namespace() {
        // /work/shared/cases/k05-generator-hash-prefix-suffix-refs/expected.yaml
        let mut v = cm(json!({"LOG_LEVEL": "warn", "FEATURE_X": "off"}));
        assert_eq!(content_hash(&v), "7mh5hth542");
        v["metadata"] = json!({"name": "prod-app-settings-v2", "namespace": "shop-prod"});
        assert_eq!(content_hash(&v), "7mh5hth542");
        let files = cm(json!({"app.properties": "timeout=30\nretries=3\n"}));
        assert_eq!(content_hash(&files), "bh4ckb66bc");
    }

    #[test]
    fn absent_data_hashes_as_empty_string() {
        // `kubectl kustomize` of `configMapGenerator: [{name: x}]` gives `x-6ct58987ht`.
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        assert_eq!(
            hash_input(&v),
            r#"{"data":"","kind":"ConfigMap","name":""}"#
        );
        assert_eq!(content_hash(&v), "6ct58987ht");
    }

    #[test]
    fn binary_data_enters_the_hash() {
        // kubectl kustomize: files [bin.dat (00 01 ff), named=ctl.txt] → bin-9247c92m6f.
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bin"},
            "binaryData": {"bin.dat": "AAH/"},
            "data": {"named": "hello\u{2028} <&>\"\\\t\n"}});
        assert_eq!(content_hash(&v), "9247c92m6f");
    }

    #[test]
    fn apply_renames_and_records_previous_name() {
        let mut rs = vec![
            Resource::new(cm(json!({"LOG_LEVEL": "warn", "FEATURE_X": "off"})), None),
            Resource::new(cm(json!({"a": "b"})), None),
        ];
        rs[0].meta.needs_hash_suffix = true;
        rs[0].set_namespace("shop");
        apply_hash_suffixes(&mut rs).unwrap();
        assert_eq!(rs[0].name(), "whatever-7mh5hth542");
        assert_eq!(
            rs[0].meta.previous_names,
            vec![(Some("shop".to_string()), "whatever".to_string())]
        );
        assert_eq!(rs[1].name(), "whatever");
        apply_hash_suffixes(&mut rs).unwrap();
        assert_eq!(rs[0].name(), "whatever-7mh5hth542");

        let mut nameless = vec![Resource::new(
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            None,
        )];
        nameless[0].meta.needs_hash_suffix = true;
        assert_eq!(
            apply_hash_suffixes(&mut nameless),
            Err(HashError::NameMissing {
                kind: "ConfigMap".into()
            })
        );
    }
}
