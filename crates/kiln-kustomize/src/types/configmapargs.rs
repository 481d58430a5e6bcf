//! One `configMapGenerator` entry (kustomize `api/types/configmapargs.go`, with the
//! `GeneratorArgs` and `KvPairSources` fields of `generatorargs.go` and `kvpairsources.go`
//! inlined). Generating is `builtins::generators`.

use super::generatoroptions::GeneratorOptions;
use super::kustomization::nullable_fields;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

nullable_fields! {
    /// One `configMapGenerator` entry.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    pub struct ConfigMapArgs {
        /// Object name before prefix, suffix and hash (required).
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub name: String,
        /// `metadata.namespace` of the generated object (also narrows merge/replace targets).
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub namespace: String,
        /// `create` (default), `merge` or `replace`.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub behavior: String,
        /// `KEY=VALUE`; a value wrapped in matching `"` or `'` loses them.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub literals: Vec<String>,
        /// `path` (key = file name) or `key=path`.
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub files: Vec<String>,
        /// Env files (`KEY=VALUE` lines).
        #[nullable]
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub envs: Vec<String>,
        /// Legacy single env file, read after `envs`.
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub env: String,
        /// Per-entry options; `generatorOptions` fills in what they leave out.
        #[serde(skip_serializing_if = "Option::is_none")]
        pub options: Option<GeneratorOptions>,
        /// Not a config map field: kustomize has `type` on `SecretArgs` only and rejects it here.
        /// An empty or null `type` is let through, as kiln always has; never serialized.
        #[serde(rename = "type", skip_serializing, deserialize_with = "no_type")]
        pub no_type: (),
    }
}

/// Rejects a non-empty `type` on a `configMapGenerator` entry, with a message that says
/// where `type` belongs.
fn no_type<'de, D: Deserializer<'de>>(d: D) -> Result<(), D::Error> {
    match Option::<String>::deserialize(d)? {
        Some(t) if !t.is_empty() => Err(D::Error::custom(
            "unknown field `type` (only `secretGenerator` entries have a type)",
        )),
        _ => Ok(()),
    }
}
