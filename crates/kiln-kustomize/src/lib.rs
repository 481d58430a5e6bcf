//! The native kustomize engine: a kustomization directory (or a list of transformers) goes in,
//! resources come out, equal to `kubectl kustomize` (v5.5.0) except for the divergences listed
//! in `tests/kustomize/DIVERGENCES.md`.
//!
//! Shaped like kustomize's own `api/` tree (kustomize v5.5.0, `api/`), so a kustomize
//! behaviour has one obvious home:
//! - [`types`] (`api/types`): the model of a kustomization and of everything inside it
//!   (`Kustomization`, `Selector`, `FieldSpec`, `Patch`, `Replacement`, …), decoded once;
//! - [`builtins`] (`api/builtins`): one typed, strictly read config per builtin transformer
//!   and generator, each applying itself with the filters;
//! - [`filters`] (`api/filters`): one file per filter, a function over resources;
//! - [`konfig`] (`api/internal/konfig/builtinpluginconsts`): the data tables (default field specs,
//!   name references, merge keys, cluster-scoped kinds);
//! - [`krusty`] (`api/krusty`, `api/internal/target`): the build orchestration (load,
//!   accumulate, generate, transform, finish);
//! - [`hash`] (`api/hasher`), [`memo`], [`utils`] (`api/internal/utils`) and [`error`]
//!   (kiln's diagnostics): utilities under every other module.

// Unit tests build their trees on disk; the boundary (clippy.toml) holds for library code.
#![cfg_attr(test, allow(clippy::disallowed_methods))]
// `types::kustomization::nullable_fields!` takes one step per field attribute, and the
// `Kustomization` struct has well over a hundred.
#![recursion_limit = "256"]

pub use error::KustomizeError;
pub use krusty::build::{BuildOptions, build, build_yaml, run_kustomize};
pub use krusty::load::LoadRestrictor;
pub use types::helmchartargs::{ChartSource, PulledCharts};

pub mod builtins;
pub mod error;
pub mod filters;
pub mod git;
pub mod hash;
pub mod konfig;
pub mod krusty;
pub mod memo;
pub mod types;
pub mod utils;
