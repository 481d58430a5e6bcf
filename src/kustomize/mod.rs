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
//! - [`konfig`] (`api/konfig/builtinpluginconsts`): the data tables (default field specs,
//!   name references, merge keys, cluster-scoped kinds);
//! - [`target`] (`api/krusty`, `api/internal/target`): the build orchestration (load,
//!   accumulate, generate, transform, finish);
//! - [`hash`] (`api/hasher`) and [`error`] (kiln's diagnostics).

pub use error::KustomizeError;
pub use target::build::{BuildOptions, build, build_yaml, run_kustomize};
pub use target::load::LoadRestrictor;

pub mod builtins;
pub mod error;
pub mod filters;
pub mod hash;
pub mod konfig;
pub mod memo;
pub mod target;
pub mod types;
