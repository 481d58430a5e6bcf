//! kustomize's `crds:` field: OpenAPI definition files whose vendor extensions declare which
//! fields of a custom kind the builtin transformers treat like their builtin counterparts.
//!
//! Source: kustomize v5.5.0 `api/internal/accumulator/loadconfigfromcrds.go`
//! (`LoadConfigFromCRDs`), called from `api/internal/target/kusttarget.go`
//! (`accumulateTarget`, right after `configurations:`, into the same transformer config).
//! The file is not a CustomResourceDefinition manifest but a map of Go type names to
//! kube-openapi `OpenAPIDefinition`s (`{"<pkg>.<Kind>": {"Schema": {...}, "Dependencies":
//! [...]}}`, as `openapi-gen` writes them), JSON when the file starts with `{`, else YAML.
//! For every definition whose properties include `kind`, `apiVersion` and `metadata`
//! (`looksLikeAk8sType`), the kind is the type name after its last `.`, and its properties
//! are walked, following `$ref` to other definitions of the same file:
//! - `x-kubernetes-annotation` → a `commonAnnotations` field spec at that path;
//! - `x-kubernetes-label-selector` → a `commonLabels` field spec;
//! - `x-kubernetes-identity` → a `namePrefix` field spec;
//! - `x-kubernetes-object-ref-api-version` + `x-kubernetes-object-ref-kind` → a
//!   `nameReference` from `<path>/<x-kubernetes-object-ref-name-key, default name>` to objects
//!   of that version and kind.
//!
//! Each extension counts only when its value is a string, as kube-openapi's
//! `Extensions.GetString` requires. Merge keys (`x-kubernetes-patch-merge-key`) in these files
//! are *not* read: kustomize's strategic merge takes them from `openapi:` only (case n33
//! checks a list of a `crds:` kind is still replaced by a patch, as kubectl does).
//! Divergence-free except: a `$ref` cycle stops at the repeated definition (kustomize
//! recurses until the stack overflows), and an empty file is an error (kustomize panics).

use crate::builtins::patch_transformer::shape;
use crate::konfig::transformer_config::{NameBackReference, TransformerConfig, lookup_ci};
use crate::types::fieldspec::FieldSpec;
use serde_json::Value;

/// Reads one `crds:` file (`text`, named `display` in errors) into the field specs it declares.
///
/// Errors: a message naming the file and, where it applies, the definition and property.
pub fn config_from_openapi(display: &str, text: &str) -> Result<TransformerConfig, String> {
    let unable =
        |why: String| format!("unable to parse open API definition from `{display}`: {why}");
    if text.is_empty() {
        return Err(unable("the file is empty".into()));
    }
    let doc = crate::konfig::openapi::json_or_yaml(display, text).map_err(unable)?;
    let defs = match &doc {
        Value::Null => return Ok(TransformerConfig::default()),
        Value::Object(m) => m,
        other => {
            return Err(unable(format!(
                "expected a map of type names, found {}",
                shape(other)
            )));
        }
    };
    // Walked in name order (kustomize iterates a Go map): the result is a set anyway, and the
    // order of equal sets must not depend on the run.
    let mut names: Vec<&String> = defs.keys().collect();
    names.sort();
    let mut tc = TransformerConfig::default();
    for name in names {
        let props = properties(defs, name).map_err(unable)?;
        let looks_like_k8s = ["kind", "apiVersion", "metadata"]
            .iter()
            .all(|k| props.is_some_and(|p| p.contains_key(*k)));
        if !looks_like_k8s {
            continue;
        }
        let kind = name.rsplit('.').next().unwrap_or(name);
        let mut chain = vec![name.as_str()];
        walk(defs, kind, name, &mut Vec::new(), &mut chain, &mut tc).map_err(unable)?;
    }
    Ok(tc)
}

/// `Schema.properties` of definition `name` (`None` when it has none). Keys of the
/// definition and the schema match case-insensitively, as Go's `encoding/json` does.
fn properties<'a>(
    defs: &'a serde_json::Map<String, Value>,
    name: &str,
) -> Result<Option<&'a serde_json::Map<String, Value>>, String> {
    let Some(def) = defs.get(name) else {
        return Ok(None);
    };
    let schema = match def {
        Value::Null => return Ok(None),
        Value::Object(_) => lookup_ci(def, "schema"),
        other => {
            return Err(format!(
                "definition `{name}` is {}, not a map",
                shape(other)
            ));
        }
    };
    let props = match schema {
        None | Some(Value::Null) => return Ok(None),
        Some(s @ Value::Object(_)) => lookup_ci(s, "properties"),
        Some(other) => return Err(format!("`{name}`.Schema is {}, not a map", shape(other))),
    };
    match props {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(p)) => Ok(Some(p)),
        Some(other) => Err(format!(
            "`{name}`.Schema.properties is {}, not a map",
            shape(other)
        )),
    }
}

/// kustomize's `loadCrdIntoConfig` for the properties of definition `type_name`, at `path`.
fn walk<'a>(
    defs: &'a serde_json::Map<String, Value>,
    kind: &str,
    type_name: &str,
    path: &mut Vec<String>,
    chain: &mut Vec<&'a str>,
    tc: &mut TransformerConfig,
) -> Result<(), String> {
    let Some(props) = properties(defs, type_name)? else {
        return Ok(());
    };
    let mut names: Vec<&String> = props.keys().collect();
    names.sort();
    for prop_name in names {
        let property = &props[prop_name];
        let Value::Object(p) = property else {
            if property.is_null() {
                continue;
            }
            return Err(format!(
                "property `{prop_name}` of `{type_name}` is {}, not a schema",
                shape(property)
            ));
        };
        let ext = |key: &str| p.get(key).and_then(Value::as_str);
        path.push(prop_name.clone());
        let spec = |path: &[String]| FieldSpec {
            kind: kind.to_string().into(),
            path: path.join("/").into(),
            ..Default::default()
        };
        if ext("x-kubernetes-annotation").is_some() {
            push(&mut tc.common_annotations, spec(path));
        }
        if ext("x-kubernetes-label-selector").is_some() {
            push(&mut tc.common_labels, spec(path));
        }
        if ext("x-kubernetes-identity").is_some() {
            push(&mut tc.name_prefix, spec(path));
        }
        if let (Some(version), Some(ref_kind)) = (
            ext("x-kubernetes-object-ref-api-version"),
            ext("x-kubernetes-object-ref-kind"),
        ) {
            let key = ext("x-kubernetes-object-ref-name-key").unwrap_or("name");
            let mut ref_path = path.clone();
            ref_path.push(key.to_string());
            tc.merge(&TransformerConfig {
                name_reference: vec![NameBackReference {
                    group: String::new(),
                    version: version.to_string(),
                    kind: ref_kind.to_string(),
                    field_specs: vec![spec(&ref_path)],
                }],
                ..Default::default()
            });
        }
        if let Some((target, _)) = p
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| defs.get_key_value(r))
            && !chain.contains(&target.as_str())
        {
            chain.push(target);
            walk(defs, kind, target, path, chain, tc)?;
            chain.pop();
        }
        path.pop();
    }
    Ok(())
}

fn push(list: &mut Vec<FieldSpec>, fs: FieldSpec) {
    if !list.contains(&fs) {
        list.push(fs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFS: &str = r#"{
      "x.io/api/v1.Gate": {"Schema": {"properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {},
        "spec": {"$ref": "x.io/api/v1.GateSpec"}}}},
      "x.io/api/v1.GateSpec": {"schema": {"Properties": {
        "owner": {"x-kubernetes-object-ref-api-version": "v1", "x-kubernetes-object-ref-kind": "Secret"},
        "peer": {"x-kubernetes-object-ref-api-version": "v1", "x-kubernetes-object-ref-kind": "Gate",
                 "x-kubernetes-object-ref-name-key": "gate"},
        "selector": {"x-kubernetes-label-selector": ""},
        "notes": {"x-kubernetes-annotation": ""},
        "id": {"x-kubernetes-identity": "true"},
        "flag": {"x-kubernetes-identity": true},
        "loop": {"$ref": "x.io/api/v1.GateSpec"}}}},
      "x.io/api/v1.GateList": {"Schema": {"properties": {"items": {"type": "array"}}}}
    }"#;

    #[test]
    fn extensions_become_field_specs_of_the_kind() {
        let tc = config_from_openapi("gate.json", DEFS).unwrap();
        let paths = |l: &[FieldSpec]| {
            l.iter()
                .map(|f| format!("{}:{}", f.kind, f.path))
                .collect::<Vec<_>>()
        };
        assert_eq!(paths(&tc.common_labels), ["Gate:spec/selector"]);
        assert_eq!(paths(&tc.common_annotations), ["Gate:spec/notes"]);
        // A boolean extension is no string: ignored, as kube-openapi does.
        assert_eq!(paths(&tc.name_prefix), ["Gate:spec/id"]);
        let refs: Vec<String> = tc
            .name_reference
            .iter()
            .map(|n| format!("{}/{} <- {:?}", n.version, n.kind, paths(&n.field_specs)))
            .collect();
        assert_eq!(
            refs,
            [
                r#"v1/Secret <- ["Gate:spec/owner/name"]"#,
                r#"v1/Gate <- ["Gate:spec/peer/gate"]"#
            ]
        );
    }

    #[test]
    fn yaml_files_and_errors() {
        let tc = config_from_openapi(
            "w.yaml",
            "a.W:\n  Schema:\n    properties:\n      kind: {}\n      apiVersion: {}\n      metadata: {}\n      tags: {x-kubernetes-annotation: ''}\n",
        )
        .unwrap();
        assert_eq!(tc.common_annotations[0].path, "tags");
        assert_eq!(tc.common_annotations[0].kind, "W");
        assert!(
            config_from_openapi("e.yaml", "")
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            config_from_openapi("l.yaml", "- a\n")
                .unwrap_err()
                .contains("`l.yaml`")
        );
        let e = config_from_openapi(
            "p.json",
            r#"{"a.W": {"Schema": {"properties": {"kind": 1, "apiVersion": {}, "metadata": {}}}}}"#,
        )
        .unwrap_err();
        assert!(e.contains("property `kind` of `a.W`"), "{e}");
    }
}
