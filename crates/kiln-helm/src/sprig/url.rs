//! Sprig's URL functions, after Masterminds/sprig v3.3.0 `url.go` (`urlParse`, `urlJoin`).

use super::encode;
use super::*;

pub(super) fn register(f: &mut Funcs) {
    f.add("urlParse", |_, a| {
        want(a, 1, "urlParse")?;
        Ok(encode::url_parse(&s_ref(&a[0])))
    });
    f.add("urlJoin", |_, a| {
        want(a, 1, "urlJoin")?;
        let m = as_map(&a[0], "urlJoin")?;
        Ok(Value::from(encode::url_join(&m.borrow())))
    });
}
