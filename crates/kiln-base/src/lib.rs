//! The layer every kiln crate stands on (ARCHITECTURE.md, "Layers"): nothing here knows a
//! platform, a chart or a kustomization.
//!
//! - [`fs`]: the `FileSystem` trait through which everything is read, the I/O boundary;
//! - [`yaml`]: the one YAML boundary (reader typing scalars as kubectl does, span index,
//!   kustomize-style emitter, go-yaml's scalar rules);
//! - [`resource`]: `Resource` and `ResId`, the unit the engines pass along;
//! - [`diag`]: source files kept for late diagnostics, and the snippet clipping;
//! - [`pointer`](mod@pointer): JSON Pointer escaping (RFC 6901) and field paths;
//! - [`digest`]: SHA-256 in hex;
//! - [`pool`]: when a render has work for more than one thread;
//! - [`url`]: credentials removed from URLs before they are shown;
//! - [`mod@reference`]: the `${…}` reference language of kiln's spec.
// Unit tests build their trees on disk; the boundary (clippy.toml) holds for library code.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod diag;
pub mod digest;
pub mod fs;
pub mod pointer;
pub mod pool;
pub mod reference;
pub mod resource;
pub mod url;
pub mod yaml;
