//! The raw model of a `kustomization.yaml` (or `kind: Component`) file: serde types that
//! mirror kustomize v5.5's `api/types` one to one, legacy fields included, and reject unknown
//! fields (kustomize decodes with `DisallowUnknownFields`, so does kiln).
//!
//! This is the first stage of the engine: text → [`Kustomization`]. Nothing here reads other
//! files or applies anything; `load` and `build` resolve paths and run transformers. The
//! invariant: a value accepted here is one kustomize v5.5 accepts, with the same typing
//! (`commonLabels` values must be strings, `replicas[].count` an integer, …).
//!
//! Errors name the field that failed: [`Kustomization::from_value`] narrows a serde failure
//! down to the JSON pointer of the offending entry (e.g. `/patches/1/target`) so the caller can
//! underline the right line.

use super::configmapargs::ConfigMapArgs;
use super::generatoroptions::GeneratorOptions;
use super::helmchartargs::{HelmChart, HelmChartArgs, HelmGlobals};
use super::image::Image;
use super::labels::Label;
use super::patch::Patch;
use super::replacement::ReplacementField;
use super::replica::{self, Replica};
use super::secretargs::SecretArgs;
use super::sortoptions::SortOptions;
use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// `apiVersion` of a Kustomization (kustomize's `KustomizationVersion`).
pub const KUSTOMIZATION_VERSION: &str = "kustomize.config.k8s.io/v1beta1";
/// `apiVersion` of a Component (kustomize's `ComponentVersion`).
pub const COMPONENT_VERSION: &str = "kustomize.config.k8s.io/v1alpha1";
/// File names recognised as a kustomization, in kustomize's order
/// (`konfig.RecognizedKustomizationFileNames`).
pub const KUSTOMIZATION_FILE_NAMES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// A string map that keeps the user's order (kustomize sorts where it matters).
pub type StringMap = IndexMap<String, String>;

/// Treats an explicit YAML `null` like an absent field, as Go's `encoding/json` does for
/// slices, maps, strings and booleans. Fields use it through [`nullable_fields!`]'s
/// `#[nullable]`, so a field decodes the same wherever it is used.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Declares a serde struct whose fields marked `#[nullable]` read an explicit `null` as their
/// default ([`nullable`]), as Go's `encoding/json` decodes kustomize's strings, slices, maps
/// and booleans: the one way the engine reads kustomize's nullable fields. `#[nullable]` may
/// stand anywhere among a field's attributes and means
/// `#[serde(default, deserialize_with = "nullable")]`; a field without it decodes as serde
/// does (an explicit `null` is then an error, as for `create` of a field spec). Everything
/// else (strict unknown fields, renames, case-insensitive names through
/// [`from_value_case_insensitive`], every error message) is the struct's own serde.
///
/// ```text
/// nullable_fields! {
///     #[derive(Deserialize)]
///     #[serde(deny_unknown_fields)]
///     pub struct Entry {
///         #[nullable]
///         pub name: String,
///     }
/// }
/// ```
macro_rules! nullable_fields {
    ($(#[$m:meta])* $v:vis struct $name:ident { $($body:tt)* }) => {
        $crate::types::kustomization::nullable_fields!(
            @next [$(#[$m])* $v struct $name] [] [] [] $($body)*
        );
    };
    // `#[nullable]`: noted for the field it precedes.
    (@next $head:tt $done:tt $attrs:tt $flag:tt #[nullable] $($rest:tt)*) => {
        $crate::types::kustomization::nullable_fields!(
            @next $head $done $attrs [nullable] $($rest)*
        );
    };
    // Any other attribute, doc comments included: kept in place.
    (@next $head:tt $done:tt [$($attrs:tt)*] $flag:tt #[$a:meta] $($rest:tt)*) => {
        $crate::types::kustomization::nullable_fields!(
            @next $head $done [$($attrs)* #[$a]] $flag $($rest)*
        );
    };
    // A field marked `#[nullable]`.
    (@next $head:tt [$($done:tt)*] [$($attrs:tt)*] [nullable]
        $fv:vis $f:ident : $t:ty $(, $($rest:tt)*)?) => {
        $crate::types::kustomization::nullable_fields!(
            @next $head [
                $($done)*
                $($attrs)*
                #[serde(default, deserialize_with = "crate::types::kustomization::nullable")]
                $fv $f: $t,
            ] [] [] $($($rest)*)?
        );
    };
    // Any other field.
    (@next $head:tt [$($done:tt)*] [$($attrs:tt)*] []
        $fv:vis $f:ident : $t:ty $(, $($rest:tt)*)?) => {
        $crate::types::kustomization::nullable_fields!(
            @next $head [$($done)* $($attrs)* $fv $f: $t,] [] [] $($($rest)*)?
        );
    };
    (@next [$($head:tt)*] [$($done:tt)*] [] []) => {
        $($head)* { $($done)* }
    };
}
pub(crate) use nullable_fields;

/// A kustomization file (`kind: Kustomization`, the default) or a component
/// (`kind: Component`). Field names and types follow kustomize's `types.Kustomization`.
/// Fields whose values are user maps (label and annotation keys, Helm values): their keys
/// are data, never field names, so case folding leaves them alone.
const USER_MAPS: &[&str] = &[
    "commonLabels",
    "commonAnnotations",
    "pairs",
    "labels",
    "annotations",
    "valuesInline",
    "valuesLocal",
    "additionalValuesFiles",
];

/// Deserializes `value` as Go's `encoding/json` does kustomize's types: a key that is no
/// field name exactly but matches one case-insensitively (`RESOURCES`, `fieldpath`) is that
/// field (kustomize reads `kustomization.yaml` through `yaml.YAMLToJSON` + `json.Decoder`).
/// serde names the expected fields in its unknown-field error; each such key is renamed and
/// the decoding retried.
pub fn from_value_case_insensitive<T: serde::de::DeserializeOwned>(
    mut value: Value,
) -> Result<T, serde_json::Error> {
    loop {
        let err = match serde_json::from_value::<T>(value.clone()) {
            Ok(t) => return Ok(t),
            Err(e) => e,
        };
        let msg = err.to_string();
        let Some(rest) = msg.strip_prefix("unknown field `") else {
            return Err(err);
        };
        let Some((unknown, expected)) = rest.split_once('`') else {
            return Err(err);
        };
        let known = expected
            .split('`')
            .skip(1)
            .step_by(2)
            .find(|k| k.to_lowercase() == unknown.to_lowercase());
        let Some(known) = known else { return Err(err) };
        if !rename_key(&mut value, unknown, known) {
            return Err(err);
        }
    }
}

/// Renames `from` to `to` in every map outside [`USER_MAPS`] that has `from` but not `to`;
/// `true` if something changed.
fn rename_key(v: &mut Value, from: &str, to: &str) -> bool {
    match v {
        Value::Object(m) => {
            let mut changed = false;
            if !m.contains_key(to)
                && let Some(x) = m.shift_remove(from)
            {
                m.insert(to.to_string(), x);
                changed = true;
            }
            for (k, x) in m.iter_mut() {
                if !(x.is_object() && USER_MAPS.contains(&k.as_str())) {
                    changed |= rename_key(x, from, to);
                }
            }
            changed
        }
        Value::Array(a) => a.iter_mut().fold(false, |c, x| rename_key(x, from, to) | c),
        _ => false,
    }
}

nullable_fields! {
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct Kustomization {
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub api_version: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub kind: String,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        pub metadata: Option<ObjectMeta>,
        /// `openapi: {path: schema.json}` or `{version: …}`; only affects merge keys of custom
        /// kinds in strategic merge patches.
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub openapi: StringMap,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name_prefix: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name_suffix: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub namespace: String,
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub common_labels: StringMap,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub labels: Vec<Label>,
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub common_annotations: StringMap,
        /// Legacy: file paths or inline strategic merge patches.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub patches_strategic_merge: Vec<String>,
        /// Legacy: JSON 6902 patches with a target.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub patches_json6902: Vec<Patch>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub patches: Vec<Patch>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub images: Vec<Image>,
        /// Legacy spelling of `images`.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub image_tags: Vec<Image>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub replacements: Vec<ReplacementField>,
        /// Read as kustomize writes them ([`replica::lenient`]): a missing `name` is refused where
        /// the entry is applied (`krusty::transform`), a missing `count` is 0.
        #[serde(
            skip_serializing_if = "Vec::is_empty",
            default,
            deserialize_with = "replica::lenient"
        )]
        pub replicas: Vec<Replica>,
        /// Legacy: `$(VAR)` substitution.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub vars: Vec<Var>,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        pub sort_options: Option<SortOptions>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub resources: Vec<String>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub components: Vec<String>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub crds: Vec<String>,
        /// Legacy spelling of directory `resources`.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub bases: Vec<String>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub config_map_generator: Vec<ConfigMapArgs>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub secret_generator: Vec<SecretArgs>,
        /// `helmGlobals`, `helmCharts` and the deprecated `helmChartInflationGenerator`: charts
        /// rendered by kiln's Helm engine (`builtins::helm_chart_inflation_generator`).
        #[serde(skip_serializing_if = "Option::is_none", default)]
        pub helm_globals: Option<HelmGlobals>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub helm_charts: Vec<HelmChart>,
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub helm_chart_inflation_generator: Vec<HelmChartArgs>,
        #[serde(skip_serializing_if = "Option::is_none", default)]
        pub generator_options: Option<GeneratorOptions>,
        /// Transformer configuration files (custom field specs).
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub configurations: Vec<String>,
        /// Generator plugin configs (files or inline YAML).
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub generators: Vec<String>,
        /// Transformer plugin configs (files or inline YAML); builtin kinds are supported.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub transformers: Vec<String>,
        /// Validator plugin configs; not supported.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub validators: Vec<String>,
        /// `originAnnotations`, `transformerAnnotations`, `managedByLabel`.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub build_metadata: Vec<String>,
    }
}

nullable_fields! {
    /// The `metadata` of a kustomization (ignored by the build).
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct ObjectMeta {
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub namespace: String,
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub labels: StringMap,
        #[nullable]
        #[serde(skip_serializing_if = "IndexMap::is_empty")]
        pub annotations: StringMap,
    }
}

nullable_fields! {
    /// The object a var points at (kustomize's `types.Target`).
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct VarTarget {
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub api_version: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub group: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub version: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub kind: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub namespace: String,
    }
}

nullable_fields! {
    /// `fieldref` of a var.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct FieldSelector {
        /// Go's JSON decoding matches keys case-insensitively, and real trees write `fieldpath`.
        #[nullable]
        #[serde(alias = "fieldpath", alias = "FieldPath", skip_serializing_if = "String::is_empty")]
        pub field_path: String,
    }
}

nullable_fields! {
    /// One legacy `vars` entry.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Var {
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name: String,
        #[serde(default)]
        pub objref: VarTarget,
        #[serde(default)]
        pub fieldref: FieldSelector,
    }
}

/// Why a kustomization value was rejected: a message and the JSON pointer of the offending
/// entry (as precise as could be determined; `""` for the whole document).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub pointer: String,
    pub message: String,
}

use kiln_base::pointer::escape as escape_pointer;

impl Kustomization {
    /// Decodes a parsed kustomization document. On failure, narrows the error down to the
    /// entry that caused it: the top-level field, then the list item, then the item's field,
    /// by re-decoding ever smaller single-field documents (every field is optional, so a
    /// single-field document decodes exactly when that field is valid).
    ///
    /// Errors: not a mapping; unknown field; wrong type — as kustomize's `DisallowUnknownFields`
    /// decoding, plus `type` on a `configMapGenerator` entry.
    pub fn from_value(value: &Value) -> Result<Kustomization, FieldError> {
        if !value.is_object() {
            return Err(FieldError {
                pointer: String::new(),
                message: "a kustomization must be a YAML mapping".into(),
            });
        }
        decode_located(value)
    }

    /// Whether this file is a component (`kind: Component`).
    pub fn is_component(&self) -> bool {
        self.kind == "Component"
    }

    /// Checks `kind` and `apiVersion` as kustomize's `EnforceFields` does; `Err` holds the
    /// JSON pointer and message.
    pub fn check_kind(&self) -> Result<(), FieldError> {
        if !self.kind.is_empty() && self.kind != "Kustomization" && self.kind != "Component" {
            return Err(FieldError {
                pointer: "/kind".into(),
                message: format!(
                    "kind `{}` should be `Kustomization` or `Component`",
                    self.kind
                ),
            });
        }
        let required = if self.is_component() {
            COMPONENT_VERSION
        } else {
            KUSTOMIZATION_VERSION
        };
        if !self.api_version.is_empty() && self.api_version != required {
            let kind = if self.kind.is_empty() {
                "Kustomization"
            } else {
                &self.kind
            };
            return Err(FieldError {
                pointer: "/apiVersion".into(),
                message: format!(
                    "apiVersion for {kind} should be `{required}`, not `{}`",
                    self.api_version
                ),
            });
        }
        Ok(())
    }
}

/// Decodes a map `value` into `T` as Go's `encoding/json` would (field names matched
/// case-insensitively, see [`from_value_case_insensitive`]). On failure, narrows the error
/// down to the entry that caused it: the top-level field, then the list item, then the item's
/// field, by re-decoding ever smaller single-field documents (every field of `T` must be
/// optional, so a single-field document decodes exactly when that field is valid). Used for
/// kustomizations and for builtin transformer configs.
pub fn decode_located<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, FieldError> {
    let Some(map) = value.as_object() else {
        return Err(FieldError {
            pointer: String::new(),
            message: "expected a YAML mapping".into(),
        });
    };
    match from_value_case_insensitive::<T>(value.clone()) {
        Ok(k) => Ok(k),
        Err(whole) => {
            for (key, field) in map {
                let single = |v: Value| {
                    let mut m = serde_json::Map::new();
                    m.insert(key.clone(), v);
                    serde_json::from_value::<T>(Value::Object(m))
                };
                let Err(e) = single(field.clone()) else {
                    continue;
                };
                let mut pointer = format!("/{}", escape_pointer(key));
                let mut message = e.to_string();
                // An unknown key is the culprit itself, whatever its value holds.
                let unknown = message.starts_with(&format!("unknown field `{key}`"));
                if let Value::Array(items) = field
                    && !unknown
                {
                    for (i, item) in items.iter().enumerate() {
                        let Err(e) = single(Value::Array(vec![item.clone()])) else {
                            continue;
                        };
                        pointer = format!("{pointer}/{i}");
                        message = e.to_string();
                        // One more level: the field inside the list item.
                        if let Value::Object(fields) = item {
                            for (sub, v) in fields {
                                let mut one = serde_json::Map::new();
                                one.insert(sub.clone(), v.clone());
                                if let Err(e) = single(Value::Array(vec![Value::Object(one)])) {
                                    pointer = format!("{pointer}/{}", escape_pointer(sub));
                                    message = e.to_string();
                                    break;
                                }
                            }
                        }
                        break;
                    }
                }
                return Err(FieldError {
                    pointer,
                    message: tidy_serde_message(&message),
                });
            }
            Err(FieldError {
                pointer: String::new(),
                message: tidy_serde_message(&whole.to_string()),
            })
        }
    }
}

/// serde's messages mention Rust-side details ("expected one of …" lists of camelCase names
/// are fine; "at line 0 column 0" from value decoding is noise).
fn tidy_serde_message(msg: &str) -> String {
    msg.trim_end_matches(" at line 0 column 0").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_every_section() {
        let v = json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namePrefix": "p-",
            "namespace": "ns",
            "commonLabels": {"b": "1", "a": "2"},
            "labels": [{"pairs": {"x": "y"}, "includeSelectors": true, "fields": [{"path": "spec/x", "kind": "Foo", "create": true}]}],
            "patches": [{"path": "p.yaml", "target": {"kind": "Deployment", "labelSelector": "a=b"}}],
            "patchesJson6902": [{"path": "j.yaml", "target": {"kind": "Service", "name": "s"}}],
            "images": [{"name": "nginx", "newTag": "1", "tagSuffix": "-x"}],
            "replicas": [{"name": "d", "count": 3}],
            "replacements": [{"path": "r.yaml"}, {"source": {"kind": "ConfigMap", "fieldPath": "data.a"}, "targets": [{"select": {"kind": "Secret"}, "fieldPaths": ["data.b"], "options": {"create": true}}]}],
            "vars": [{"name": "V", "objref": {"kind": "Service", "name": "s", "apiVersion": "v1"}, "fieldref": {"fieldPath": "metadata.name"}}],
            "configMapGenerator": [{"name": "c", "literals": ["a=b"], "env": "x.env", "options": {"disableNameSuffixHash": true}}],
            "secretGenerator": [{"name": "s", "type": "kubernetes.io/tls", "files": ["tls.crt"]}],
            "sortOptions": {"order": "legacy", "legacySortOptions": {"orderFirst": ["Namespace"], "orderLast": []}},
            "buildMetadata": ["originAnnotations"],
            "bases": ["../base"],
            "resources": null
        });
        let k = Kustomization::from_value(&v).unwrap();
        assert_eq!(k.name_prefix, "p-");
        assert_eq!(k.common_labels.keys().collect::<Vec<_>>(), ["b", "a"]);
        assert!(k.labels[0].include_selectors);
        assert_eq!(
            k.patches[0]
                .target
                .as_ref()
                .unwrap()
                .label_selector
                .as_deref(),
            Some("a=b")
        );
        assert_eq!(k.replicas[0].count, 3);
        assert_eq!(k.replacements[0].path, "r.yaml");
        assert_eq!(k.vars[0].objref.api_version, "v1");
        assert_eq!(k.secret_generator[0].secret_type, "kubernetes.io/tls");
        assert_eq!(k.bases, ["../base"]);
        assert!(k.resources.is_empty());
        k.check_kind().unwrap();
    }

    #[test]
    fn unknown_field_is_located() {
        let err =
            Kustomization::from_value(&json!({"resources": ["a.yaml"], "foo": 1})).unwrap_err();
        assert_eq!(err.pointer, "/foo");
        assert!(
            err.message.contains("unknown field `foo`"),
            "{}",
            err.message
        );

        let err = Kustomization::from_value(
            &json!({"images": [{"name": "a"}, {"name": "b", "newTg": "1"}]}),
        )
        .unwrap_err();
        assert_eq!(err.pointer, "/images/1/newTg");

        let err = Kustomization::from_value(&json!({"replicas": [{"name": "a", "count": "3"}]}))
            .unwrap_err();
        assert_eq!(err.pointer, "/replicas/0/count");

        let err = Kustomization::from_value(&json!({"commonLabels": {"a": 1}})).unwrap_err();
        assert_eq!(err.pointer, "/commonLabels");

        let err = Kustomization::from_value(
            &json!({"configMapGenerator": [{"name": "a", "type": "Opaque"}]}),
        )
        .unwrap_err();
        assert_eq!(err.pointer, "/configMapGenerator/0/type");
        assert!(
            err.message
                .starts_with("unknown field `type` (only `secretGenerator`"),
            "{}",
            err.message
        );

        assert!(Kustomization::from_value(&json!(["a"])).is_err());
    }

    #[test]
    fn nulls_and_empty_type_read_as_absent_in_entries() {
        let k = Kustomization::from_value(&json!({
            "images": [{"name": "a", "newTag": null, "digest": null}],
            "configMapGenerator": [{"name": "c", "literals": null, "type": "", "options": {"labels": null, "immutable": null}}],
            "secretGenerator": [{"name": "s", "type": null, "envs": null}],
            "generatorOptions": {"disableNameSuffixHash": null, "annotations": null},
            "sortOptions": {"order": "legacy", "legacySortOptions": {"orderFirst": null, "orderLast": ["Job"]}}
        }))
        .unwrap();
        assert_eq!(
            (k.images[0].name.as_str(), k.images[0].new_tag.as_str()),
            ("a", "")
        );
        let cm = &k.config_map_generator[0];
        assert!(cm.literals.is_empty());
        assert!(!cm.options.as_ref().unwrap().immutable);
        assert_eq!(k.secret_generator[0].secret_type, "");
        let legacy = k.sort_options.unwrap().legacy_sort_options.unwrap();
        assert!(legacy.order_first.is_empty());
        assert_eq!(legacy.order_last, ["Job"]);
        let global = k.generator_options.unwrap();
        assert!(!global.disable_name_suffix_hash && global.annotations.is_empty());
        // A real type on a config map is still an error (covered above); null is not.
        assert!(
            Kustomization::from_value(
                &json!({"configMapGenerator": [{"name": "c", "type": null}]})
            )
            .is_ok()
        );
    }

    #[test]
    fn kind_and_api_version_are_enforced() {
        let k = Kustomization::from_value(
            &json!({"kind": "Component", "apiVersion": KUSTOMIZATION_VERSION}),
        )
        .unwrap();
        assert_eq!(k.check_kind().unwrap_err().pointer, "/apiVersion");
        let k = Kustomization::from_value(&json!({"kind": "Deployment"})).unwrap();
        assert_eq!(k.check_kind().unwrap_err().pointer, "/kind");
        let k = Kustomization::from_value(&json!({"kind": "Component"})).unwrap();
        assert!(k.is_component());
        k.check_kind().unwrap();
    }
}
