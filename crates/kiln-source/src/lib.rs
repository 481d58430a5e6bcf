//! kiln's source fetcher: everything a platform names outside its own repository, resolved,
//! fetched, verified and pinned (issue 33, ADR 0018).
//!
//! - [`git`]: one commit of a Git repository (a component's `source.git`, a remote kustomize
//!   base), shallow where the server allows it;
//! - [`git_http`]: git's smart HTTP through kiln's own client, for the servers libgit2 cannot
//!   read (answers ended by closing the connection; ADR 0040);
//! - [`helm_repo`]: a chart from a Helm HTTP repository (`index.yaml`), its `version:`
//!   resolved as Helm's `repo.IndexFile.Get` resolves it;
//! - [`oci`]: a chart from an OCI registry (the distribution API with Helm's media types,
//!   anonymous, basic and bearer-token auth as Docker does it);
//! - [`archive`]: safe extraction of the chart archives (no `../`, no absolute paths, no links
//!   out, no devices, size limits);
//! - [`cache`]: the content-addressed cache shared by every checkout, under a file lock, each
//!   entry's digest checked on every use;
//! - [`lock`]: `kiln.lock`, the one lock file;
//! - [`fetch`]: the [`fetch::Fetcher`] tying them together under the lock's rules
//!   (`--locked`, `--offline`).
//!
//! This crate is one of kiln's I/O boundaries (clippy.toml): it alone touches the network and
//! the source cache. It never imports the pipeline; the pipeline hands it requests and gets
//! directories back.
// Unit tests set up their fixtures on disk directly.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod archive;
pub mod cache;
pub mod error;
pub mod fetch;
pub mod git;
pub mod git_http;
pub mod helm_repo;
pub mod http;
pub mod lock;
pub mod oci;

pub use error::{Origin, SourceError};
pub use fetch::{Fetched, Fetcher, Mode, Request};
pub use lock::{LockEntry, LockFile};

#[cfg(any(test, feature = "testing"))]
pub mod testing;
