fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let t = std::time::Instant::now();
    let r = kiln::kustomize::build_yaml(
        &kiln::fs::RealFs,
        std::path::Path::new(&dir),
        &Default::default(),
    );
    eprintln!("{:?}", t.elapsed());
    match r {
        Ok(s) => print!("{s}"),
        Err(e) => eprintln!("{:?}", miette::Report::new(e)),
    }
}
