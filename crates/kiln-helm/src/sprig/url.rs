//! Sprig's URL functions, after Masterminds/sprig v3.3.0 `url.go` (`urlParse`, `urlJoin`).

use super::encode;
use super::*;

pub(super) fn register(f: &mut Funcs) {
    f.add1("urlParse", |_, a0| Ok(encode::url_parse(&s_ref(a0))));
    f.add1("urlJoin", |_, a0| {
        let m = as_map(a0, "urlJoin")?;
        Ok(Value::from(encode::url_join(&m.borrow())))
    });
}
