//! The data tables kustomize ships with its engine (kustomize
//! `api/internal/konfig/builtinpluginconsts` and `kyaml/openapi`): default field specs, name
//! references, merge keys, cluster-scoped kinds.

pub mod cluster_scoped;
pub mod field_specs;
pub mod merge_keys;
pub mod name_references;
pub mod openapi;
pub mod transformer_config;
pub mod var_reference;
