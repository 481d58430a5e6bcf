//! The native kustomize engine: a kustomization directory (or a list of transformers) goes in,
//! resources come out, equal to `kubectl kustomize` (v5.5.0) except for the divergences listed
//! in `tests/kustomize/DIVERGENCES.md`. One file per transformer.

pub use build::{BuildOptions, build, build_yaml, run_kustomize};
pub use error::KustomizeError;
pub use load::LoadRestrictor;

pub mod build;
pub mod crds;
pub mod error;
pub mod fieldspec;
pub mod generate;
pub mod generators;
pub mod hash;
pub mod helm_chart;
pub mod image_ref;
pub mod images;
pub mod json6902;
pub mod kustomization;
pub mod labels;
pub mod load;
pub mod merge_keys;
pub mod name_prefix_suffix;
pub mod name_reference;
pub mod namespace;
pub mod openapi;
pub mod order;
pub mod patches;
pub mod replacements;
pub mod replicas;
pub mod strategic_merge;
pub mod target;
pub mod transform;
pub mod vars;
