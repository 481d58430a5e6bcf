//! What the crate's unit tests share: ../shared's place and a fixed-seed generator.

use std::path::PathBuf;

/// ../shared (or `KILN_SHARED_DIR`)'s `sub` directory, or `None` when it is missing and
/// the test is to be skipped; a missing one fails under `REQUIRE_SHARED=1` (`.ci/run`).
pub fn shared(sub: &str) -> Option<PathBuf> {
    let root = std::env::var_os("KILN_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
        .join(sub);
    if root.is_dir() {
        return Some(root);
    }
    if std::env::var("REQUIRE_SHARED").is_ok_and(|v| v == "1") {
        panic!("REQUIRE_SHARED=1 but {} is missing", root.display());
    }
    eprintln!("skipped: no {}", root.display());
    None
}

/// A fixed-seed xorshift: the generated cases are the same on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
}
