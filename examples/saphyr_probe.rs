//! Dev probe: re-emits a YAML stream with kiln's emitter (used to compare with kubectl output).
fn main() {
    let path = std::env::args().nth(1).expect("path");
    let text = std::fs::read_to_string(&path).expect("read");
    match kiln::yaml::parse_stream(&path, &text) {
        Ok(docs) => print!("{}", kiln::yaml::to_yaml_stream(&docs)),
        Err(e) => println!("ERR: {e:?}"),
    }
}
