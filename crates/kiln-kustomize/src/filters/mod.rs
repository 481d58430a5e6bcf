//! The filters (kustomize `api/filters`): one file per filter, each a function from resources
//! to resources, configured by the [`super::builtins`] and [`super::krusty`].

pub mod fieldspec;
pub mod imagetag;
pub mod labels;
pub mod nameref;
pub mod namespace;
pub mod patch_json6902;
pub mod patch_strategic_merge;
pub mod prefix_suffix;
pub mod refvar;
pub mod replacement;
pub mod replica_count;
pub mod select;
