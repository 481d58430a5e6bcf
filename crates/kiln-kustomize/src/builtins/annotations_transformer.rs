//! `AnnotationsTransformer` (kustomize `api/builtins/AnnotationsTransformer.go`).

use crate::filters::labels::{self, LabelsError};
use crate::types::fieldspec::FieldSpec;
use crate::types::kustomization::{StringMap, nullable_fields};
use kiln_base::resource::Resource;
use serde::Deserialize;

nullable_fields! {
    /// The config: annotations and the fields to put them in.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct AnnotationsTransformer {
        #[nullable]
        pub annotations: StringMap,
        #[nullable]
        pub field_specs: Vec<FieldSpec>,
    }
}

impl AnnotationsTransformer {
    /// Sets the annotations at the config's field specs, only those (kustomize
    /// `api/builtins/AnnotationsTransformer.go` filters with `p.FieldSpecs`; checked with
    /// kubectl kustomize v5.5.0: no pod template annotations unless the config names them).
    pub fn apply(&self, res: &mut [Resource]) -> Result<(), LabelsError> {
        labels::apply_at(res, &self.annotations, &self.field_specs, "annotations")
    }
}
