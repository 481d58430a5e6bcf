//! Go's `text/template`, implemented here (see docs/adr/0005-go-templates.md for why not the
//! `gotmpl` crate): [`parse`] builds the tree, [`exec`] runs it over [`value::Value`]s.

pub mod exec;
pub mod parse;
pub mod value;
