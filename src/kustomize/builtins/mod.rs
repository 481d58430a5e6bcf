//! kustomize's builtin transformers and generators (kustomize `api/builtins`), one per file:
//! a typed config, read strictly, and its application through [`super::filters`].

pub mod generators;
pub mod patch_transformer;
pub mod sort_order_transformer;
