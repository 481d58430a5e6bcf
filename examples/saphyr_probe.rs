fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let opts = serde_saphyr::options! { legacy_octal_numbers: true, strict_booleans: true };
    let r: Result<Vec<serde_json::Value>, _> = serde_saphyr::from_multiple_with_options(&text, opts);
    match r {
        Ok(docs) => for d in docs { println!("{}", serde_json::to_string(&d).unwrap()); },
        Err(e) => println!("ERR: {e}\nloc={:?}", e.location()),
    }
}
