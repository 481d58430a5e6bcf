//! The field specs of a build (kustomize `api/internal/plugins/builtinconfig`,
//! `transformerconfig.go`): the custom tables of `configurations:` files, merged per build and
//! added to the builtin tables of each transformer ([`super::field_specs`],
//! [`super::name_references`]).

use crate::types::fieldspec::FieldSpec;
use serde_json::Value;

/// Custom field specs from `configurations` files (kustomize's `builtinconfig.TransformerConfig`),
/// added to the builtin tables of each transformer.
#[derive(Debug, Clone, Default)]
pub struct TransformerConfig {
    pub name_prefix: Vec<FieldSpec>,
    pub name_suffix: Vec<FieldSpec>,
    pub namespace: Vec<FieldSpec>,
    pub common_labels: Vec<FieldSpec>,
    pub template_labels: Vec<FieldSpec>,
    pub common_annotations: Vec<FieldSpec>,
    pub images: Vec<FieldSpec>,
    pub replicas: Vec<FieldSpec>,
    pub var_reference: Vec<FieldSpec>,
    /// `nameReference`: a referenced kind and the fields that refer to it.
    pub name_reference: Vec<NameBackReference>,
}

/// One `nameReference` entry of a configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameBackReference {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub field_specs: Vec<FieldSpec>,
}

fn push_unique(list: &mut Vec<FieldSpec>, fs: FieldSpec) {
    if !list.iter().any(|s| {
        s.group == fs.group && s.version == fs.version && s.kind == fs.kind && s.path == fs.path
    }) {
        list.push(fs);
    }
}

impl TransformerConfig {
    /// Merges `other` in (kustomize's `TransformerConfig.Merge`: union without duplicates;
    /// name references of the same kind are merged by field spec).
    pub fn merge(&mut self, other: &TransformerConfig) {
        let pairs: [(&mut Vec<FieldSpec>, &Vec<FieldSpec>); 9] = [
            (&mut self.name_prefix, &other.name_prefix),
            (&mut self.name_suffix, &other.name_suffix),
            (&mut self.namespace, &other.namespace),
            (&mut self.common_labels, &other.common_labels),
            (&mut self.template_labels, &other.template_labels),
            (&mut self.common_annotations, &other.common_annotations),
            (&mut self.images, &other.images),
            (&mut self.replicas, &other.replicas),
            (&mut self.var_reference, &other.var_reference),
        ];
        for (mine, theirs) in pairs {
            for fs in theirs {
                push_unique(mine, fs.clone());
            }
        }
        for nbr in &other.name_reference {
            match self
                .name_reference
                .iter_mut()
                .find(|n| n.group == nbr.group && n.version == nbr.version && n.kind == nbr.kind)
            {
                Some(existing) => {
                    for fs in &nbr.field_specs {
                        push_unique(&mut existing.field_specs, fs.clone());
                    }
                }
                None => self.name_reference.push(nbr.clone()),
            }
        }
    }

    /// Reads a configuration file's document. Like kustomize (which decodes these files with
    /// Go's case-insensitive, lenient `json.Unmarshal`), key case is ignored and unknown keys
    /// are skipped.
    pub fn from_value(value: &Value) -> Result<TransformerConfig, String> {
        let mut tc = TransformerConfig::default();
        let Some(map) = value.as_object() else {
            return Err("a transformer configuration must be a mapping".into());
        };
        for (key, v) in map {
            let specs = || field_specs(v);
            match key.to_ascii_lowercase().as_str() {
                "nameprefix" => tc.name_prefix = specs()?,
                "namesuffix" => tc.name_suffix = specs()?,
                "namespace" => tc.namespace = specs()?,
                "commonlabels" => tc.common_labels = specs()?,
                "templatelabels" => tc.template_labels = specs()?,
                "commonannotations" => tc.common_annotations = specs()?,
                "images" => tc.images = specs()?,
                "replicas" => tc.replicas = specs()?,
                "varreference" => tc.var_reference = specs()?,
                "namereference" => {
                    for item in v.as_array().map(Vec::as_slice).unwrap_or_default() {
                        let get = |k: &str| {
                            lookup_ci(item, k)
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string()
                        };
                        let mut nbr = NameBackReference {
                            group: get("group"),
                            version: get("version"),
                            kind: get("kind"),
                            field_specs: vec![],
                        };
                        // `apiVersion: group/version` is accepted too (kustomize's Gvk decoding).
                        if let Some(av) = lookup_ci(item, "apiVersion").and_then(Value::as_str) {
                            match av.rsplit_once('/') {
                                Some((g, ver)) => {
                                    nbr.group = g.into();
                                    nbr.version = ver.into();
                                }
                                None => nbr.version = av.into(),
                            }
                        }
                        if let Some(fs) = lookup_ci(item, "fieldSpecs") {
                            nbr.field_specs = field_specs(fs)?;
                        }
                        tc.merge(&TransformerConfig {
                            name_reference: vec![nbr],
                            ..Default::default()
                        });
                    }
                }
                _ => {}
            }
        }
        Ok(tc)
    }
}

/// The value of `key` in map `v`, the key matched case-insensitively (Go's `encoding/json`).
pub(crate) fn lookup_ci<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    v.as_object()?
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

fn field_specs(v: &Value) -> Result<Vec<FieldSpec>, String> {
    let mut out = Vec::new();
    for item in v.as_array().map(Vec::as_slice).unwrap_or_default() {
        let s = |k: &str| {
            lookup_ci(item, k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let create = lookup_ci(item, "create")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if s("path").is_empty() {
            return Err(format!("field spec without a `path`: {item}"));
        }
        out.push(FieldSpec {
            group: s("group").into(),
            version: s("version").into(),
            kind: s("kind").into(),
            path: s("path").into(),
            create,
        });
    }
    Ok(out)
}
