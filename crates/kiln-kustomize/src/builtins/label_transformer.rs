//! `LabelTransformer` (kustomize `api/builtins/LabelTransformer.go`).

use crate::filters::labels::{self, LabelsError};
use crate::types::fieldspec::FieldSpec;
use crate::types::kustomization::{StringMap, nullable_fields};
use kiln_base::resource::Resource;
use serde::Deserialize;

nullable_fields! {
    /// The config: labels and the fields to put them in.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct LabelTransformer {
        #[nullable]
        pub labels: StringMap,
        #[nullable]
        pub field_specs: Vec<FieldSpec>,
    }
}

impl LabelTransformer {
    /// Sets the labels at the config's field specs, only those (a plugin config names them
    /// all; a spec's `kind` limits it to that kind, case kf41).
    pub fn apply(&self, res: &mut [Resource]) -> Result<(), LabelsError> {
        labels::apply_at(res, &self.labels, &self.field_specs, "labels")
    }
}
