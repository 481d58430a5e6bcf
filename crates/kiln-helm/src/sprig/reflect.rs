//! Sprig's type functions, after Masterminds/sprig v3.3.0 `reflect.go` (`typeOf`, `typeIs`,
//! `typeIsLike`, `kindOf`, `kindIs`) and `defaults.go`'s `deepEqual`.

use super::*;

pub(super) fn register(f: &mut Funcs) {
    f.add1("typeOf", |_, a0| Ok(Value::from(a0.type_name())));
    f.add2("typeIs", |_, a0, a1| {
        Ok(Value::Bool(s_ref(a0) == a1.type_name()))
    });
    f.add2("typeIsLike", |_, a0, a1| {
        let t = s(a0);
        let n = a1.type_name();
        Ok(Value::Bool(t == n || t == format!("*{n}")))
    });
    f.add1("kindOf", |_, a0| Ok(Value::from(a0.kind())));
    f.add2("kindIs", |_, a0, a1| {
        Ok(Value::Bool(s_ref(a0) == a1.kind()))
    });
    f.add2("deepEqual", |_, a0, a1| Ok(Value::Bool(a0.deep_eq(a1))));
}
