//! The transformer phase of one kustomization: each field of `kustomization.yaml` becomes a
//! call into its transformer module, in kustomize's fixed order
//! (`kusttarget_configplugin.go`, v5.5): `patchesStrategicMerge`, `patches`, `namespace`,
//! `namePrefix`/`nameSuffix`, `labels` then `commonLabels`, `commonAnnotations`,
//! `patchesJson6902`, `replicas`, `images`, `replacements`; then the builtin transformer
//! configs of `transformers:` in their listed order.
//!
//! Where it sits: step 5 of `build::accumulate_target`. This file owns no transformation
//! itself; it adapts our kustomization types to each module's API and wraps every module
//! error with the kustomization entry (file, line, field) that configured it.

use super::build::{Accumulator, TransformerConfig, convert};
use super::error::KustomizeError;
use super::load::{KustFile, Loader};
use super::{images, labels, replicas};
use crate::resource::Resource;

fn not_wired(kf: &KustFile, pointer: &str, field: &str) -> KustomizeError {
    KustomizeError::unsupported(
        kf.key_site(pointer),
        field,
        "this transformer is not available in this build of kiln yet",
        "remove the field or build with kubectl kustomize for now",
    )
}

/// Runs the transformers of `kf` over everything accumulated in `acc`.
pub fn run_transformers(_ldr: &Loader<'_>, kf: &KustFile, acc: &mut Accumulator) -> Result<(), KustomizeError> {
    let k = &kf.kustomization;
    let config = &acc.config;
    let res = &mut acc.resources;

    if !k.patches_strategic_merge.is_empty() {
        return Err(not_wired(kf, "/patchesStrategicMerge", "patchesStrategicMerge"));
    }
    if !k.patches.is_empty() {
        return Err(not_wired(kf, "/patches", "patches"));
    }
    if !k.namespace.is_empty() {
        return Err(not_wired(kf, "/namespace", "namespace"));
    }
    if !k.name_prefix.is_empty() {
        return Err(not_wired(kf, "/namePrefix", "namePrefix"));
    }
    if !k.name_suffix.is_empty() {
        return Err(not_wired(kf, "/nameSuffix", "nameSuffix"));
    }

    for (i, label) in k.labels.iter().enumerate() {
        let pointer = format!("/labels/{i}");
        let mut entry: labels::Label =
            convert(label).map_err(|m| KustomizeError::invalid(kf.site(&pointer), m, "see kustomize's `labels` reference"))?;
        if entry.include_selectors {
            // kustomize hands `includeSelectors` entries the whole commonLabels table, custom
            // `configurations` included.
            entry.fields.extend(config.common_labels.iter().cloned());
        }
        labels::apply_labels(res, &entry, &[], &[]).map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }
    if !k.common_labels.is_empty() {
        labels::apply_common_labels(res, &k.common_labels, &config.common_labels)
            .map_err(|e| KustomizeError::transformer(kf.site("/commonLabels"), &e))?;
    }
    if !k.common_annotations.is_empty() {
        labels::apply_common_annotations(res, &k.common_annotations, &config.common_annotations)
            .map_err(|e| KustomizeError::transformer(kf.site("/commonAnnotations"), &e))?;
    }

    if !k.patches_json6902.is_empty() {
        return Err(not_wired(kf, "/patchesJson6902", "patchesJson6902"));
    }

    for (i, r) in k.replicas.iter().enumerate() {
        let pointer = format!("/replicas/{i}");
        let entry: replicas::Replica = convert(r).map_err(|m| KustomizeError::invalid(kf.site(&pointer), m, "a replicas entry has `name` and `count`"))?;
        replicas::apply_replicas(res, std::slice::from_ref(&entry)).map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }

    // `imageTags` is the legacy spelling; kustomize appends it to `images`.
    let image_entries = k
        .images
        .iter()
        .enumerate()
        .map(|(i, im)| (format!("/images/{i}"), im))
        .chain(k.image_tags.iter().enumerate().map(|(i, im)| (format!("/imageTags/{i}"), im)));
    for (pointer, im) in image_entries {
        let entry: images::Image = convert(im).map_err(|m| KustomizeError::invalid(kf.site(&pointer), m, "see kustomize's `images` reference"))?;
        images::apply_images(res, std::slice::from_ref(&entry), &config.images)
            .map_err(|e| KustomizeError::transformer(kf.site(&pointer), &e))?;
    }

    if !k.replacements.is_empty() {
        return Err(not_wired(kf, "/replacements", "replacements"));
    }
    if !k.transformers.is_empty() {
        return Err(not_wired(kf, "/transformers", "transformers"));
    }
    Ok(())
}

/// kustomize's `FixBackReferences`: after every rename, references to renamed objects are
/// rewritten. Wired to the name-reference module once it lands; until then names are left as
/// they are.
pub fn fix_name_references(_resources: &mut [Resource], _config: &TransformerConfig) -> Result<(), String> {
    Ok(())
}
