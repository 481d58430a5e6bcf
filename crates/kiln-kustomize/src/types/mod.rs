//! The kustomization model (kustomize `api/types`): serde types decoded once from the user's
//! files and shared by every builtin and filter. Every concept exists once here.

pub mod fieldspec;
pub mod image_ref;
pub mod kustomization;
pub mod patch;
pub mod replacement;
pub mod selector;
