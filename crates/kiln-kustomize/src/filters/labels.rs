//! The label and annotation transformers: `commonLabels`, `labels:` and `commonAnnotations`.
//!
//! Sits in the transformer phase of a kustomization build. Each sets string key/value pairs
//! into every map its field specs reach, creating maps where a spec says `create`. The tables
//! are kustomize v5.5's (api/internal/konfig/builtinpluginconsts/commonlabels.go,
//! templatelabels.go, commonannotations.go), checked field by field against
//! `kubectl kustomize`:
//! - `commonLabels`: metadata, workload selectors and pod templates, Service `spec.selector`
//!   (created even when absent, as kustomize does), PDB/NetworkPolicy selectors (only when
//!   present), pod (anti-)affinity and topology-spread selectors of `apps` workloads,
//!   StatefulSet `volumeClaimTemplates`;
//! - `labels:` entries: `metadata/labels` only; with `includeTemplates` also the template
//!   table; with `includeSelectors` the whole `commonLabels` table; plus the entry's `fields`;
//! - `commonAnnotations`: metadata and pod templates.
//!
//! Invariant: values are always written as JSON strings (`release: "2024.10"` stays a string).

pub use crate::konfig::field_specs::{
    COMMON_ANNOTATIONS_FIELD_SPECS, TEMPLATE_LABELS_FIELD_SPECS, common_label_field_specs,
};
use crate::types::fieldspec::FieldSpec;
pub use crate::types::labels::Label;
use indexmap::IndexMap;
use kiln_base::resource::Resource;
use serde_json::{Map, Value};

/// Errors of the label and annotation transformers.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LabelsError {
    /// A field spec reached a value that is not a map (e.g. `spec.selector: "x"`).
    #[error("cannot set {what} at `{path}` of {resource}: the field is not a map")]
    #[diagnostic(
        code(kiln::kustomize::labels_field_not_a_map),
        help(
            "the field must be a map of strings; fix the resource or remove the field spec `{path}`"
        )
    )]
    FieldNotAMap {
        what: &'static str,
        path: String,
        resource: String,
    },
}

/// `commonLabels`: sets `labels` everywhere the `commonLabels` table (plus
/// `extra_field_specs`, from `configurations:`) reaches.
///
/// Errors: [`LabelsError::FieldNotAMap`] when a reached field holds a scalar or list.
pub fn apply_common_labels(
    resources: &mut [Resource],
    labels: &IndexMap<String, String>,
    extra_field_specs: &[FieldSpec],
) -> Result<(), LabelsError> {
    let mut specs = common_label_field_specs();
    merge(&mut specs, extra_field_specs);
    set_pairs(resources, labels, &specs, "labels")
}

/// One `labels:` entry, following kustomize's `kusttarget` wiring: `includeSelectors` takes the
/// `commonLabels` table (plus `extra_common_labels`, the `commonLabels` of `configurations:`);
/// otherwise `metadata/labels`, plus the template table (and `extra_template_labels`, the
/// `templateLabels` of `configurations:`) when `includeTemplates`; then the entry's own
/// `fields`.
///
/// Errors: [`LabelsError::FieldNotAMap`].
pub fn apply_labels(
    resources: &mut [Resource],
    entry: &Label,
    extra_common_labels: &[FieldSpec],
    extra_template_labels: &[FieldSpec],
) -> Result<(), LabelsError> {
    let mut specs = if entry.include_selectors {
        let mut specs = common_label_field_specs();
        merge(&mut specs, extra_common_labels);
        specs
    } else {
        let mut specs = Vec::new();
        if entry.include_templates {
            specs.extend(TEMPLATE_LABELS_FIELD_SPECS.iter().cloned());
            merge(&mut specs, extra_template_labels);
        }
        merge(
            &mut specs,
            &[FieldSpec {
                path: "metadata/labels".into(),
                create: true,
                ..FieldSpec::default()
            }],
        );
        specs
    };
    merge(&mut specs, &entry.fields);
    set_pairs(resources, &entry.pairs, &specs, "labels")
}

/// `commonAnnotations`: metadata and pod templates (plus `extra_field_specs`).
///
/// Errors: [`LabelsError::FieldNotAMap`].
pub fn apply_common_annotations(
    resources: &mut [Resource],
    annotations: &IndexMap<String, String>,
    extra_field_specs: &[FieldSpec],
) -> Result<(), LabelsError> {
    let mut specs: Vec<FieldSpec> = COMMON_ANNOTATIONS_FIELD_SPECS.to_vec();
    merge(&mut specs, extra_field_specs);
    set_pairs(resources, annotations, &specs, "annotations")
}

/// Sets `pairs` at exactly `field_specs`, kinds and all, in the field `what` (`"labels"` or
/// `"annotations"`): a builtin `LabelTransformer` or `AnnotationsTransformer` config, whose
/// plugin (`api/builtins/LabelTransformer.go`, `AnnotationsTransformer.go`) filters with
/// `p.FieldSpecs` alone, no default table.
pub fn apply_at(
    resources: &mut [Resource],
    pairs: &IndexMap<String, String>,
    field_specs: &[FieldSpec],
    what: &'static str,
) -> Result<(), LabelsError> {
    set_pairs(resources, pairs, field_specs, what)
}

/// Appends the specs of `extra` not yet in `specs` (same group, version, kind and path), as
/// kustomize's `FsSlice.MergeAll`.
fn merge(specs: &mut Vec<FieldSpec>, extra: &[FieldSpec]) {
    for fs in extra {
        if !specs.iter().any(|s| {
            s.group == fs.group && s.version == fs.version && s.kind == fs.kind && s.path == fs.path
        }) {
            specs.push(fs.clone());
        }
    }
}

fn set_pairs(
    resources: &mut [Resource],
    pairs: &IndexMap<String, String>,
    specs: &[FieldSpec],
    what: &'static str,
) -> Result<(), LabelsError> {
    if pairs.is_empty() {
        return Ok(());
    }
    for res in resources.iter_mut() {
        for spec in specs {
            if !spec.applies_to(res) {
                continue;
            }
            let mut not_a_map = false;
            crate::filters::fieldspec::visit_path_mut(
                &mut res.value,
                &spec.path,
                spec.create,
                &mut |field| {
                    if field.is_null() {
                        *field = Value::Object(Map::new());
                    }
                    match field {
                        Value::Object(map) => {
                            for (k, v) in pairs {
                                map.insert(k.clone(), Value::String(v.clone()));
                            }
                        }
                        _ => not_a_map = true,
                    }
                },
            );
            if not_a_map {
                return Err(LabelsError::FieldNotAMap {
                    what,
                    path: spec.path.to_string(),
                    resource: res.id().to_string(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(v: Value) -> Resource {
        Resource::new(v, None)
    }

    fn pairs(kv: &[(&str, &str)]) -> IndexMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn deployment() -> Resource {
        res(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
              "spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                 {"labelSelector": {"matchLabels": {"app": "d"}}}]}}}}}}),
        )
    }

    #[test]
    fn common_labels_reach_selectors_templates_and_affinity() {
        let mut rs = vec![
            deployment(),
            res(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}}),
            ),
            res(
                json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}, "spec": {}}),
            ),
        ];
        apply_common_labels(&mut rs, &pairs(&[("team", "a")]), &[]).unwrap();
        let d = &rs[0].value;
        assert_eq!(d["metadata"]["labels"]["team"], "a");
        assert_eq!(d["spec"]["selector"]["matchLabels"]["team"], "a");
        assert_eq!(d["spec"]["template"]["metadata"]["labels"]["team"], "a");
        assert_eq!(
            d["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                [0]["labelSelector"]["matchLabels"]["team"],
            "a"
        );
        // Service selector is created; a PDB selector is not.
        assert_eq!(rs[1].value["spec"]["selector"]["team"], "a");
        assert!(rs[2].value["spec"].get("selector").is_none());
    }

    #[test]
    fn labels_entry_options() {
        let mut rs = vec![deployment()];
        let entry = Label {
            pairs: pairs(&[("tier", "web")]),
            include_templates: true,
            ..Label::default()
        };
        apply_labels(&mut rs, &entry, &[], &[]).unwrap();
        let d = &rs[0].value;
        assert_eq!(d["metadata"]["labels"]["tier"], "web");
        assert_eq!(d["spec"]["template"]["metadata"]["labels"]["tier"], "web");
        assert!(d["spec"]["selector"]["matchLabels"].get("tier").is_none());

        let entry = Label {
            pairs: pairs(&[("only", "meta")]),
            ..Label::default()
        };
        apply_labels(&mut rs, &entry, &[], &[]).unwrap();
        assert_eq!(rs[0].value["metadata"]["labels"]["only"], "meta");
        assert!(
            rs[0].value["spec"]["template"]["metadata"]["labels"]
                .get("only")
                .is_none()
        );

        let entry = Label {
            pairs: pairs(&[("x", "1")]),
            fields: vec![FieldSpec {
                kind: "Deployment".into(),
                path: "spec/extra/labels".into(),
                create: true,
                ..Default::default()
            }],
            ..Label::default()
        };
        apply_labels(&mut rs, &entry, &[], &[]).unwrap();
        assert_eq!(rs[0].value["spec"]["extra"]["labels"]["x"], "1");
    }

    #[test]
    fn annotations_reach_cronjob_templates_not_selectors() {
        let mut rs = vec![res(
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}}),
        )];
        apply_common_annotations(&mut rs, &pairs(&[("hint", "3")]), &[]).unwrap();
        let c = &rs[0].value;
        assert_eq!(c["metadata"]["annotations"]["hint"], "3");
        assert_eq!(
            c["spec"]["jobTemplate"]["metadata"]["annotations"]["hint"],
            "3"
        );
        assert_eq!(
            c["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]["hint"],
            "3"
        );
        assert!(c["metadata"].get("labels").is_none());
    }

    #[test]
    fn scalar_selector_is_an_error() {
        let mut rs = vec![res(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"selector": "x"}}),
        )];
        let err = apply_common_labels(&mut rs, &pairs(&[("a", "b")]), &[]).unwrap_err();
        assert!(
            matches!(err, LabelsError::FieldNotAMap { ref path, .. } if path == "spec/selector")
        );
    }
}
