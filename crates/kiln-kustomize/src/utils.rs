//! The annotations kustomize keeps on objects while it builds (kustomize
//! `api/internal/utils/annotations.go`, `api/resource/origin.go`): their keys and the one way
//! to set one. A utility at the bottom of the engine, named by generators, transformers and
//! the build.

use kiln_base::resource::Resource;
use serde_json::Value;

/// kustomize's origin annotation (`api/internal/utils/annotations.go`).
pub const ORIGIN_ANNOTATION: &str = "config.kubernetes.io/origin";
/// kustomize's list of the transformers that ran over an object (`api/resource/origin.go`
/// `Transformations`, `resmap/reswrangler.go` `AddTransformerAnnotation`).
pub const TRANSFORMATIONS_ANNOTATION: &str = "alpha.config.kubernetes.io/transformations";

/// Sets one annotation, creating the map (or replacing a null one).
pub fn set_annotation(r: &mut Resource, key: &str, text: String) {
    let Some(md) = r.value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = md
        .entry("annotations")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if annotations.is_null() {
        *annotations = Value::Object(serde_json::Map::new());
    }
    if let Some(a) = annotations.as_object_mut() {
        a.insert(key.into(), Value::String(text));
    }
}
