//! kiln's integration tests: one binary (`cargo test --test integration`), one module per
//! theme, the helpers they share in `support`. How to run, bless and extend them, the
//! environment variables that steer them and what they cost: `tests/README.md`.
#![allow(clippy::disallowed_methods)] // tests set up trees on disk and read the environment

mod support;

mod architecture;
mod audit;
mod charts;
mod ci;
mod cli;
mod cli_stderr;
mod cli_verify;
mod env_content;
mod git;
mod git_ssh;
mod gitops;
mod helm;
mod k8s;
mod kargo;
mod kustomize;
mod kustomize_helm;
mod leftovers;
mod promote;
mod refusals;
mod render;
mod scale;
mod sources;
mod status;
