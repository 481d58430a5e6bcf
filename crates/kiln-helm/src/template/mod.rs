//! Go's `text/template`, implemented here (see docs/adr/0005-go-templates.md for why not the
//! `gotmpl` crate): [`parse`] builds the tree (Go's `text/template/parse`: lex.go, parse.go,
//! node.go), [`exec`] runs it over [`value::Value`]s (exec.go), with Go's builtins ([`funcs`]). Below them, the pieces of Go's
//! standard library templates print and compare with: [`fmt`] (`fmt`, `strconv`) and
//! [`unicode`]. This is the bottom of the engine: it names neither Sprig nor Helm.

pub mod dict;
pub mod exec;
pub mod fmt;
pub mod funcs;
pub mod params;
pub mod parse;
pub mod reads;
pub mod unicode;
pub mod value;
