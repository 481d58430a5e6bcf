//! kustomize's builtin transformers and generators (kustomize `api/builtins`), one per file:
//! a typed config and its application through [`super::filters`].
//!
//! A config (`apiVersion: builtin`, in `transformers:`) is read strictly: kustomize decodes
//! it with `sigs.k8s.io/yaml`, which fails on a wrong type (`labels: [a]`) but silently drops
//! unknown fields. kiln rejects unknown fields too, with file, line and field: a misspelt
//! `fieldSpecs` would otherwise leave the objects untransformed, which is not what the
//! configuration says (a listed divergence, `tests/kustomize/DIVERGENCES.md`). Field names
//! match case-insensitively, as Go's `encoding/json` does.

use super::types::kustomization::{FieldError, decode_located};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod annotations_transformer;
pub mod generators;
pub mod helm_chart_inflation_generator;
pub mod image_tag_transformer;
pub mod label_transformer;
pub mod namespace_transformer;
pub mod patch_json6902_transformer;
pub mod patch_strategic_merge_transformer;
pub mod patch_transformer;
pub mod prefix_suffix_transformer;
pub mod replacement_transformer;
pub mod replica_count_transformer;
pub mod sort_order_transformer;

/// One builtin transformer config, decoded.
#[derive(Debug, Clone)]
pub enum Builtin {
    Patch(patch_transformer::Patch),
    PatchJson6902(patch_json6902_transformer::PatchJson6902Transformer),
    PatchStrategicMerge(patch_strategic_merge_transformer::PatchStrategicMergeTransformer),
    PrefixSuffix(prefix_suffix_transformer::PrefixSuffixTransformer),
    Label(label_transformer::LabelTransformer),
    Annotations(annotations_transformer::AnnotationsTransformer),
    Namespace(namespace_transformer::NamespaceTransformer),
    ImageTag(image_tag_transformer::ImageTagTransformer),
    ReplicaCount(replica_count_transformer::ReplicaCountTransformer),
    Replacement(replacement_transformer::ReplacementTransformer),
}

impl Builtin {
    /// Decodes a config by its `kind`; `Ok(None)` for a kind that is not a supported builtin
    /// transformer. `Err` holds the JSON pointer of the offending field.
    pub fn from_config(doc: &Value) -> Result<Option<Builtin>, FieldError> {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        Ok(Some(match kind {
            "PatchTransformer" => Builtin::Patch(decode(doc)?),
            "PatchJson6902Transformer" => Builtin::PatchJson6902(decode(doc)?),
            "PatchStrategicMergeTransformer" => Builtin::PatchStrategicMerge(decode(doc)?),
            "PrefixSuffixTransformer" | "PrefixTransformer" | "SuffixTransformer" => {
                Builtin::PrefixSuffix(decode(doc)?)
            }
            "LabelTransformer" => Builtin::Label(decode(doc)?),
            "AnnotationsTransformer" => Builtin::Annotations(decode(doc)?),
            "NamespaceTransformer" => {
                let mut ns: namespace_transformer::NamespaceTransformer = decode(doc)?;
                ns.namespace = doc
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                Builtin::Namespace(ns)
            }
            "ImageTagTransformer" => Builtin::ImageTag(decode(doc)?),
            "ReplicaCountTransformer" => Builtin::ReplicaCount(decode(doc)?),
            "ReplacementTransformer" => Builtin::Replacement(decode(doc)?),
            _ => return Ok(None),
        }))
    }
}

/// Decodes the config's own fields: everything but the plugin header (`apiVersion`, `kind`,
/// `metadata`), which every builtin has.
fn decode<T: DeserializeOwned>(doc: &Value) -> Result<T, FieldError> {
    let mut cfg = doc.clone();
    if let Some(m) = cfg.as_object_mut() {
        for k in ["apiVersion", "kind", "metadata"] {
            m.shift_remove(k);
        }
    }
    decode_located(&cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configs_are_read_strictly_and_located() {
        let cfg = json!({"apiVersion": "builtin", "kind": "LabelTransformer",
            "metadata": {"name": "x"}, "labels": {"a": "b"}, "fieldSpecz": []});
        let e = Builtin::from_config(&cfg).unwrap_err();
        assert_eq!(e.pointer, "/fieldSpecz");
        let cfg = json!({"kind": "LabelTransformer", "labels": ["a"]});
        assert_eq!(Builtin::from_config(&cfg).unwrap_err().pointer, "/labels/0");
        let cfg = json!({"kind": "LabelTransformer", "labels": {"a": "b"},
            "fieldSpecs": {"path": "metadata/labels"}});
        assert_eq!(
            Builtin::from_config(&cfg).unwrap_err().pointer,
            "/fieldSpecs"
        );
        let cfg = json!({"kind": "PatchTransformer", "patch": "x",
            "target": {"kind": "A", "nam": "a"}});
        assert_eq!(Builtin::from_config(&cfg).unwrap_err().pointer, "/target");
        // Go's encoding/json: field names match case-insensitively.
        let cfg = json!({"kind": "LabelTransformer", "LABELS": {"a": "b"}});
        assert!(matches!(
            Builtin::from_config(&cfg),
            Ok(Some(Builtin::Label(_)))
        ));
        assert!(matches!(
            Builtin::from_config(&json!({"kind": "Exec"})),
            Ok(None)
        ));
    }
}
