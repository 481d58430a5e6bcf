//! `ImageTagTransformer` (kustomize `api/builtins/ImageTagTransformer.go`).

use crate::filters::imagetag::{self, Image, ImagesError};
use crate::types::fieldspec::FieldSpec;
use crate::types::kustomization::nullable_fields;
use kiln_base::resource::Resource;
use serde::Deserialize;

nullable_fields! {
    /// The config: one image rule and extra fields holding images.
    #[derive(Debug, Clone, Default, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    pub struct ImageTagTransformer {
        #[serde(default)]
        pub image_tag: Image,
        #[nullable]
        pub field_specs: Vec<FieldSpec>,
    }
}

impl ImageTagTransformer {
    /// Applies the image rule.
    pub fn apply(&self, res: &mut [Resource]) -> Result<(), ImagesError> {
        imagetag::apply_images(
            res,
            std::slice::from_ref(&self.image_tag),
            &self.field_specs,
        )
    }
}
