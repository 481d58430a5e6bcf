//! kustomize's `openapi: {path: <file>}`: a custom OpenAPI (Swagger 2) document whose
//! `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key` /
//! `x-kubernetes-list-map-keys` extensions tell strategic merge patches how to merge the lists
//! of custom resources (Argo Rollouts, KEDA ScaledObjects, …).
//!
//! Source: kustomize v5.5.0 `kyaml/openapi/openapi.go` (`SetSchema`, `parse`,
//! `AddDefinitions`, `SchemaForResourceType`, `ResourceSchema.Field` / `Elements` /
//! `PatchStrategyAndKeyList`), `kyaml/yaml/walk/walk.go` (`GetSchema`),
//! `kyaml/yaml/schema/schema.go` (`IsAssociative`: a list merges when its strategy lists
//! `merge`), and where the field is read: `api/krusty/kustomizer.go` and
//! `api/internal/target/kusttarget.go` (`accumulateDirectory`). The rules kept:
//! - the file is JSON when it starts with `{`, else YAML; its `definitions` are indexed by
//!   their `x-kubernetes-group-version-kind`; `$ref`s (`#/definitions/<name>`) resolve
//!   within the file;
//! - the schema is global to the build and set once: the root kustomization's, else the
//!   first base's (in build order) that has one, from the moment it is read;
//! - a custom schema *replaces* the builtin one: while it is set, kinds it does not define
//!   (Deployments too) have no merge keys, so their lists are replaced by a patch, as kubectl
//!   does (case n34) — unless kyaml had already parsed its builtin schema when the custom one
//!   was set, which it does for a strategic merge or for an object of a kind it does not
//!   precompute (a custom resource) built earlier: then the builtin kinds keep their merge
//!   keys (case n35);
//! - `openapi: {version: …}` (a builtin schema of another Kubernetes version) is not
//!   supported and is an error naming the field; a remote `path` is an error too.
//!
//! Not reproduced: the document's `paths` (kustomize reads cluster scope of unknown kinds
//! from them); an unreadable schema is an error when it is read, where kustomize panics when
//! it is first used.

use crate::konfig::merge_keys::{ListMeta, PatchSchema};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::{Mutex, OnceLock};

/// A parsed custom schema: its definitions and which one describes each apiVersion/kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomSchema {
    definitions: Map<String, Value>,
    /// (apiVersion, kind) → definition name.
    by_type: BTreeMap<(String, String), String>,
}

/// The schema a strategic merge uses while a custom schema is set.
#[derive(Debug, Clone)]
pub struct OpenApi {
    /// The custom schema.
    pub schema: Rc<CustomSchema>,
    /// Whether kyaml had parsed its builtin schema before the custom one was set (a strategic
    /// merge, or an object of a kind it does not precompute, came first): its definitions
    /// then stay, under the custom ones (case n35).
    pub builtin_too: bool,
}

impl OpenApi {
    /// The patch schema of objects of `api_version` (group `group`) and `kind`.
    pub fn patch_schema(&self, group: &str, api_version: &str, kind: &str) -> Option<PatchSchema> {
        PatchSchema::for_custom(&self.schema, api_version, kind).or_else(|| {
            self.builtin_too
                .then(|| PatchSchema::for_kind(group, kind))
                .flatten()
        })
    }
}

/// Chains of `$ref` longer than this are treated as unresolvable (a cycle would make
/// kustomize loop forever).
const MAX_REF_HOPS: usize = 64;

impl CustomSchema {
    /// Parses the schema file `text` (named `display` in errors).
    pub fn parse(display: &str, text: &str) -> Result<CustomSchema, String> {
        let invalid = |why: String| format!("invalid schema file `{display}`: {why}");
        let doc = json_or_yaml(display, text).map_err(invalid)?;
        let definitions = match &doc {
            Value::Null => Map::new(),
            Value::Object(m) => match m.get("definitions") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(d)) => d.clone(),
                Some(_) => return Err(invalid("`definitions` is not a map".into())),
            },
            _ => return Err(invalid("the document is not a map".into())),
        };
        let mut by_type = BTreeMap::new();
        for (name, def) in &definitions {
            let Some(gvks) = def
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
            else {
                continue;
            };
            for gvk in gvks {
                let s = |k: &str| gvk.get(k).and_then(Value::as_str);
                let (Some(kind), Some(version)) = (s("kind"), s("version")) else {
                    continue;
                };
                let api_version = match s("group") {
                    Some(g) if !g.is_empty() => format!("{g}/{version}"),
                    _ => version.to_string(),
                };
                by_type.insert((api_version, kind.to_string()), name.clone());
            }
        }
        Ok(CustomSchema {
            definitions,
            by_type,
        })
    }

    /// The definition describing objects of `api_version` and `kind`, if any.
    pub fn definition_for(&self, api_version: &str, kind: &str) -> Option<&str> {
        self.by_type
            .get(&(api_version.to_string(), kind.to_string()))
            .map(String::as_str)
    }

    /// How the list at `path` (field names from the object root; list items add no
    /// segment) of an object described by `definition` merges: `None` when it is replaced.
    pub fn list_meta(&self, definition: &str, path: &[String]) -> Option<ListMeta> {
        let mut schema = self.definitions.get(definition)?;
        for field in path {
            // List items are transparent in `path`: step into them first (`Elements`).
            schema = self.resolve(schema)?;
            if schema.get("type").and_then(Value::as_str) == Some("array")
                || schema
                    .get("type")
                    .and_then(Value::as_array)
                    .is_some_and(|t| t.len() == 1 && t[0] == "array")
            {
                schema = self.resolve(schema.get("items")?)?;
            }
            // `Field`: a property, else the value schema of a map.
            schema = match schema.get("properties").and_then(|p| p.get(field.as_str())) {
                Some(s) => s,
                None => schema
                    .get("additionalProperties")
                    .filter(|a| a.is_object())?,
            };
        }
        let schema = self.resolve(schema)?;
        let strategy = schema.get("x-kubernetes-patch-strategy")?.as_str()?;
        if !strategy.split(',').any(|s| s == "merge") {
            return None;
        }
        let keys: Vec<&str> = match schema
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
        {
            Some(list) => list.iter().filter_map(Value::as_str).collect(),
            None => schema
                .get("x-kubernetes-patch-merge-key")
                .and_then(Value::as_str)
                .into_iter()
                .collect(),
        };
        Some(ListMeta {
            merge_key: keys.first().map(|k| intern(k)),
            second_key: keys.get(1).map(|k| intern(k)),
        })
    }

    /// Follows `$ref`s (`#/definitions/<name>`) to the schema they name.
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> Option<&'a Value> {
        for _ in 0..MAX_REF_HOPS {
            let Some(r) = schema.get("$ref").and_then(Value::as_str) else {
                return Some(schema);
            };
            schema = self.definitions.get(r.strip_prefix("#/definitions/")?)?;
        }
        None
    }
}

/// A schema file's one document: JSON when it starts with `{` (Go's `json.Unmarshal`), else
/// YAML (kustomize converts it with `yaml.YAMLToJSON`); an empty file is `null`.
pub(crate) fn json_or_yaml(display: &str, text: &str) -> Result<Value, String> {
    if text.as_bytes().first() == Some(&b'{') {
        return serde_json::from_str(text).map_err(|e| e.to_string());
    }
    let mut docs = kiln_base::yaml::parse_stream(display, text).map_err(|e| e.to_string())?;
    if docs.len() > 1 {
        return Err("it holds several YAML documents".into());
    }
    Ok(docs.pop().unwrap_or(Value::Null))
}

/// Merge-key names as `&'static str` (the type the builtin table uses): each distinct name
/// is allocated once per process, however many builds read it.
fn intern(s: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(s) {
        return n;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r##"{"definitions": {
      "r.Rollout": {"x-kubernetes-group-version-kind": [{"group": "argoproj.io", "kind": "Rollout", "version": "v1alpha1"}],
        "properties": {"spec": {"$ref": "#/definitions/r.Spec"}}},
      "r.Spec": {"properties": {
        "template": {"properties": {"spec": {"$ref": "#/definitions/core.PodSpec"}}},
        "steps": {"type": "array", "x-kubernetes-patch-strategy": "replace", "x-kubernetes-patch-merge-key": "name"},
        "labels": {"type": "object", "additionalProperties": {"$ref": "#/definitions/r.Tags"}},
        "loop": {"$ref": "#/definitions/r.Loop"}}},
      "r.Loop": {"$ref": "#/definitions/r.Loop"},
      "r.Tags": {"type": "array", "x-kubernetes-patch-strategy": "merge"},
      "core.PodSpec": {"properties": {"containers": {"type": "array", "items": {"$ref": "#/definitions/core.Container"},
        "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name"}}},
      "core.Container": {"properties": {"ports": {"type": "array",
        "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
        "x-kubernetes-patch-merge-key": "containerPort", "x-kubernetes-patch-strategy": "merge"}}}
    }}"##;

    fn p(s: &str) -> Vec<String> {
        s.split('/').map(str::to_string).collect()
    }

    #[test]
    fn merge_keys_come_from_the_schema() {
        let s = CustomSchema::parse("s.json", SCHEMA).unwrap();
        let d = s.definition_for("argoproj.io/v1alpha1", "Rollout").unwrap();
        assert!(s.definition_for("argoproj.io/v1", "Rollout").is_none());
        let c = s.list_meta(d, &p("spec/template/spec/containers")).unwrap();
        assert_eq!((c.merge_key, c.second_key), (Some("name"), None));
        let ports = s
            .list_meta(d, &p("spec/template/spec/containers/ports"))
            .unwrap();
        assert_eq!(
            (ports.merge_key, ports.second_key),
            (Some("containerPort"), Some("protocol"))
        );
        assert!(
            s.list_meta(d, &p("spec/steps")).is_none(),
            "strategy replace"
        );
        assert!(
            s.list_meta(d, &p("spec/labels/any"))
                .unwrap()
                .merge_key
                .is_none()
        );
        assert!(
            s.list_meta(d, &p("spec/loop/x")).is_none(),
            "a $ref cycle resolves to nothing"
        );
        assert!(s.list_meta(d, &p("spec/nothing")).is_none());
    }

    #[test]
    fn yaml_schemas_and_errors() {
        let s = CustomSchema::parse(
            "s.yaml",
            "definitions:\n  a.K:\n    x-kubernetes-group-version-kind:\n    - {group: '', kind: K, version: v1}\n",
        )
        .unwrap();
        assert_eq!(s.definition_for("v1", "K"), Some("a.K"));
        assert!(
            CustomSchema::parse("b.json", "{")
                .unwrap_err()
                .contains("`b.json`")
        );
        assert!(CustomSchema::parse("b.yaml", "- 1\n").is_err());
        assert!(CustomSchema::parse("b.yaml", "definitions: 3\n").is_err());
    }
}
