//! kiln: a declarative configuration compiler for Kubernetes platforms.
//!
//! The pipeline, one module per stage (see `ARCHITECTURE.md`):
//! load → validate → evaluate → render → emit → write.
//! The kustomize-compatible engine (`kustomize`) is shared by `render` (component
//! transformers) and `kiln kustomize`.

pub mod artifact;
pub mod cli;
pub mod diag;
pub mod git;
pub mod kustomize;
pub mod resource;
pub mod yaml;
