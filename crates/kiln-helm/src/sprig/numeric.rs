//! Sprig's arithmetic and number conversions, after Masterminds/sprig v3.3.0 `numeric.go`
//! (`add`, `max`, `floor`, `addf`, …, through `decimal`) and `conversion.go`
//! (`atoi`, `int`, `int64`, `float64`, `toDecimal`).

use super::*;

pub(super) fn register(f: &mut Funcs) {
    fn int2(f: &mut Funcs, name: &'static str, op: fn(i64, i64) -> Result<i64, String>) {
        f.add2(name, move |_, a0, a1| {
            Ok(Value::Int(op(to_i64(a0), to_i64(a1))?))
        });
    }
    f.add("add", |_, a| {
        Ok(Value::Int(
            a.iter().map(to_i64).fold(0i64, i64::wrapping_add),
        ))
    });
    f.add("mul", |_, a| {
        Ok(Value::Int(
            a.iter().map(to_i64).fold(1i64, i64::wrapping_mul),
        ))
    });
    f.add1("add1", |_, a0| Ok(Value::Int(to_i64(a0) + 1)));
    int2(f, "sub", |x, y| Ok(x.wrapping_sub(y)));
    int2(f, "div", |x, y| {
        if y == 0 {
            Err("runtime error: integer divide by zero".into())
        } else {
            Ok(x / y)
        }
    });
    int2(f, "mod", |x, y| {
        if y == 0 {
            Err("runtime error: integer divide by zero".into())
        } else {
            Ok(x % y)
        }
    });
    for name in ["max", "biggest"] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            Ok(Value::Int(a.iter().map(to_i64).max().unwrap_or(0)))
        });
    }
    f.add("min", |_, a| {
        want_min(a, 1, "min")?;
        Ok(Value::Int(a.iter().map(to_i64).min().unwrap_or(0)))
    });
    // Decimal arithmetic, as Sprig's execDecimalOp (funcs/decimal.rs).
    fn decimal_op(first: f64, rest: &[Value], op: decimal::Op) -> Result<Value, String> {
        let rest: Vec<f64> = rest.iter().map(to_f64).collect();
        decimal::exec(first, &rest, op).map(Value::Float)
    }
    f.add("addf", |_, a| decimal_op(0.0, a, decimal::Op::Add));
    f.add1("add1f", |_, a0| {
        decimal_op(to_f64(a0), &[Value::Int(1)], decimal::Op::Add)
    });
    for (name, op) in [
        ("subf", decimal::Op::Sub),
        ("mulf", decimal::Op::Mul),
        ("divf", decimal::Op::Div),
    ] {
        f.add(name, move |_, a| {
            want_min(a, 1, name)?;
            decimal_op(to_f64(&a[0]), &a[1..], op)
        });
    }
    f.add("maxf", |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::NEG_INFINITY, f64::max),
        ))
    });
    f.add("minf", |_, a| {
        Ok(Value::Float(
            a.iter().map(to_f64).fold(f64::INFINITY, f64::min),
        ))
    });
    f.add1("floor", |_, a0| Ok(Value::Float(to_f64(a0).floor())));
    f.add1("ceil", |_, a0| Ok(Value::Float(to_f64(a0).ceil())));
    f.add("round", |_, a| {
        want_min(a, 2, "round")?;
        let (x, places) = (to_f64(&a[0]), to_i64(&a[1]));
        let p = 10f64.powi(places as i32);
        Ok(Value::Float((x * p).round() / p))
    });
    f.add1("int", |_, a0| Ok(Value::Int(to_i64(a0))));
    f.add1("int64", |_, a0| Ok(Value::Int(to_i64(a0))));
    f.add1("float64", |_, a0| Ok(Value::Float(to_f64(a0))));
    f.add1("atoi", |_, a0| {
        // strconv.Atoi: no blanks around the digits (`" 12"` is 0).
        Ok(Value::Int(s(a0).parse().unwrap_or(0)))
    });
    f.add1("toDecimal", |_, a0| {
        Ok(Value::Int(i64::from_str_radix(&strval(a0), 8).unwrap_or(0)))
    });
}
