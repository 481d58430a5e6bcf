//! Sprig's path functions, after Masterminds/sprig v3.3.0 `functions.go` (`base`, `dir`,
//! `clean`, `ext`, `isAbs`: Go's `path` package, slash-separated whatever the system).

use super::*;

pub(super) fn register(f: &mut Funcs) {
    fn p1(f: &mut Funcs, name: &'static str, op: fn(&str) -> Value) {
        f.add1(name, move |_, a0| Ok(op(&s_ref(a0))));
    }
    for (b, d, c, e, abs) in [
        ("base", "dir", "clean", "ext", "isAbs"),
        ("osBase", "osDir", "osClean", "osExt", "osIsAbs"),
    ] {
        p1(f, b, |p| Value::from(crate::sprig::encode::path_base(p)));
        p1(f, d, |p| Value::from(crate::sprig::encode::path_dir(p)));
        p1(f, c, |p| Value::from(crate::sprig::encode::path_clean(p)));
        p1(f, e, |p| {
            let base = p.rsplit('/').next().unwrap_or("");
            Value::from(
                base.rfind('.')
                    .map(|i| base[i..].to_string())
                    .unwrap_or_default(),
            )
        });
        p1(f, abs, |p| Value::Bool(p.starts_with('/')));
    }
}
