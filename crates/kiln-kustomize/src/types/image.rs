//! One `images:` entry (kustomize `api/types/image.go`). Rewriting image references with
//! it is `filters::imagetag`.

use super::image_ref::ImageRef;
use super::kustomization::nullable_fields;
use serde::{Deserialize, Serialize};

nullable_fields! {
    /// One `images:` (or legacy `imageTags:`) entry (kustomize `types.Image`), as
    /// [`Kustomization`](super::kustomization::Kustomization) holds it; an explicit `null` reads as
    /// empty, as in kustomize.
    ///
    /// `name` selects images; `newName` replaces the name (registry and path); `newTag` and
    /// `digest` replace both the old tag and digest (both given: `name:tag@digest`); `tagSuffix`
    /// (only when neither `newTag` nor `digest` is set) appends to the existing tag and drops the
    /// digest.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct Image {
        #[nullable]
        pub name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub new_name: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub new_tag: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub digest: String,
        #[nullable]
        #[serde(skip_serializing_if = "String::is_empty")]
        pub tag_suffix: String,
    }
}

impl Image {
    /// The `images:` entry that pins `image` (for an emitted kustomization.yaml, e.g. the one
    /// Kargo's `kustomize-set-image` updates): `name` is the reference without tag and digest,
    /// `newTag` and `digest` are its tag and digest when present. Applying the entry to a
    /// manifest that uses the same name renders exactly `image` again.
    pub fn pin(image: &ImageRef) -> Image {
        Image {
            name: image.name.clone(),
            new_name: String::new(),
            new_tag: image.tag.clone().unwrap_or_default(),
            digest: image.digest.clone().unwrap_or_default(),
            tag_suffix: String::new(),
        }
    }
}
