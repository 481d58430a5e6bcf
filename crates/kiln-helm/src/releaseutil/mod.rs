//! Helm's `pkg/release/v1/util` (releaseutil): the rendered manifests split, read for their
//! heads and sorted into install order ([`sorter`], after `manifest.go` and
//! `manifest_sorter.go`), with the one-pass head scan that spares building each document
//! ([`head`]). The top of the engine: it reads what `engine` rendered.

pub mod head;
pub mod sorter;
