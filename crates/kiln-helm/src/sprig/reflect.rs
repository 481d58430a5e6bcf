//! Sprig's type functions, after Masterminds/sprig v3.3.0 `reflect.go` (`typeOf`, `typeIs`,
//! `typeIsLike`, `kindOf`, `kindIs`) and `defaults.go`'s `deepEqual`.

use super::*;

pub(super) fn register(f: &mut Funcs) {
    f.add("typeOf", |_, a| {
        want(a, 1, "typeOf")?;
        Ok(Value::from(a[0].type_name()))
    });
    f.add("typeIs", |_, a| {
        want(a, 2, "typeIs")?;
        Ok(Value::Bool(s_ref(&a[0]) == a[1].type_name()))
    });
    f.add("typeIsLike", |_, a| {
        want(a, 2, "typeIsLike")?;
        let t = s(&a[0]);
        let n = a[1].type_name();
        Ok(Value::Bool(t == n || t == format!("*{n}")))
    });
    f.add("kindOf", |_, a| {
        want(a, 1, "kindOf")?;
        Ok(Value::from(a[0].kind()))
    });
    f.add("kindIs", |_, a| {
        want(a, 2, "kindIs")?;
        Ok(Value::Bool(s_ref(&a[0]) == a[1].kind()))
    });
    f.add("deepEqual", |_, a| {
        want(a, 2, "deepEqual")?;
        Ok(Value::Bool(a[0].deep_eq(&a[1])))
    });
}
