//! Re-emits a YAML stream through kiln's reader and emitter, to compare byte-for-byte with
//! `kubectl kustomize` output: `cargo run --example yaml_roundtrip -- FILE | diff - FILE`.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk
fn main() {
    let path = std::env::args().nth(1).expect("path");
    let text = std::fs::read_to_string(&path).expect("read");
    match kiln::yaml::parse_stream(&path, &text) {
        Ok(docs) => print!("{}", kiln::yaml::to_yaml_stream(&docs)),
        Err(e) => println!("ERR: {e:?}"),
    }
}
