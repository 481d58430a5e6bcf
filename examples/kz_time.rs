fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let t = std::time::Instant::now();
    let text = std::fs::read_to_string(&dir).unwrap();
    let v = kiln::yaml::parse_stream("x", &text).unwrap();
    eprintln!("parse {} docs {:?}", v.len(), t.elapsed());
    let t = std::time::Instant::now();
    let s = kiln::yaml::to_yaml_stream(&v);
    eprintln!("emit {} bytes {:?}", s.len(), t.elapsed());
}
