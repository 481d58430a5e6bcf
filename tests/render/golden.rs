//! The golden tree of `platforms/bank`: `tests/golden/bank/` holds every file `kiln render`
//! emits for it. `KILN_BLESS=1 cargo test --test integration render::golden` rewrites it; review the diff
//! like code.

use crate::render::render_bank;
use crate::support::{list_files, repo_root};

#[test]
fn bank_renders_to_the_golden_tree() {
    let set = render_bank();
    let golden = repo_root().join("tests/golden/bank");
    if std::env::var_os("KILN_BLESS").is_some() {
        let _ = std::fs::remove_dir_all(&golden);
        for (path, bytes) in &set.files {
            let p = golden.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        return;
    }
    let expected = list_files(&golden);
    let actual: Vec<String> = set.paths().map(str::to_string).collect();
    let missing: Vec<&String> = expected
        .iter()
        .filter(|p| !set.files.contains_key(*p))
        .collect();
    let extra: Vec<&String> = actual.iter().filter(|p| !expected.contains(p)).collect();
    let differ: Vec<&String> = actual
        .iter()
        .filter(|p| expected.contains(p))
        .filter(|p| std::fs::read(golden.join(p)).ok().as_ref() != Some(&set.files[*p]))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty() && differ.is_empty(),
        "rendered platforms/bank differs from tests/golden/bank/\n  no longer rendered: {missing:?}\n  not in golden: {extra:?}\n  different bytes: {differ:?}\nif the change is intended, run `KILN_BLESS=1 cargo test --test integration render::golden` and review the diff"
    );
    assert!(
        expected.len() >= 50 * 2,
        "the bank has at least 10 components x 5 environments"
    );
}

#[test]
fn bank_render_is_deterministic() {
    assert_eq!(render_bank(), render_bank());
}
