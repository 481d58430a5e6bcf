//! kiln: a declarative configuration compiler for Kubernetes platforms.
//!
//! The pipeline, one module per stage (see `ARCHITECTURE.md`):
//! load → validate → evaluate → render → emit → write.
//! The kustomize-compatible engine (`kustomize`) is shared by `render` (component
//! transformers) and `kiln kustomize`.
// Unit tests build their trees on disk; the boundary (clippy.toml) holds for library code.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

// The engines and the base layer, under the names the pipeline has always used for them.
pub use kiln_base::{diag, fs, resource, yaml};
pub use kiln_helm as helm;
pub use kiln_kustomize as kustomize;

pub mod artifact;
pub mod cache;
pub mod check;
pub mod cli;
pub mod conform;
pub mod emit;
pub mod evaluate;
pub mod git;
pub mod graph;
pub mod kargo;
pub mod load;
pub mod marker;
pub mod names;
pub mod pipeline;
pub mod promote;
pub mod render;
pub mod source;
pub mod spec;
pub mod status;
pub mod validate;
pub mod write;
