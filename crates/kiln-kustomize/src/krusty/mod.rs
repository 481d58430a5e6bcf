//! The build orchestration (kustomize `api/krusty/kustomizer.go` and
//! `api/internal/target/kusttarget.go`): load a kustomization, accumulate its resources,
//! run its generators and transformers, and finish the build.

pub mod build;
pub mod crds;
pub mod generate;
pub mod load;
pub mod transform;
