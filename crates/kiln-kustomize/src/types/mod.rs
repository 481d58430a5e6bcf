//! The kustomization model (kustomize `api/types`): serde types decoded once from the user's
//! files and shared by every builtin and filter. Every concept exists once here. A leaf:
//! nothing here names `konfig`, `filters`, `builtins` or `krusty`.

pub mod configmapargs;
pub mod fieldspec;
pub mod generatoroptions;
pub mod helmchartargs;
pub mod image;
pub mod image_ref;
pub mod kustomization;
pub mod labels;
pub mod patch;
pub mod replacement;
pub mod replica;
pub mod secretargs;
pub mod selector;
pub mod sortoptions;
