//! Sprig's float arithmetic (`addf`, `add1f`, `subf`, `mulf`, `divf`): Masterminds/sprig v3
//! numeric.go `execDecimalOp` turns each float64 into a shopspring/decimal (`NewFromFloat`:
//! the shortest decimal that reads back as the float), computes in decimal, and reads the
//! result back as the float nearest to it (`Float64`). So `addf 0.1 0.2` is 0.3, not
//! 0.30000000000000004. `Div` is `DivRound` to 16 decimal places (`DivisionPrecision`), half
//! away from zero.
//!
//! A decimal here is `m × 10^e` in an `i128`; an operation that would overflow it (operands
//! some 30 orders of magnitude apart, or 38 significant digits) falls back to the float
//! operation, whose result then differs from Go's in the last place at most.

/// `m × 10^e`.
#[derive(Clone, Copy)]
struct Decimal {
    m: i128,
    e: i32,
}

/// `NewFromFloat`: the shortest round-tripping digits (Rust's `{:e}` gives those).
fn from_f64(f: f64) -> Option<Decimal> {
    if !f.is_finite() {
        return None;
    }
    let text = format!("{f:e}");
    let (mantissa, exp) = text.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let m: i128 = format!("{int}{frac}").parse().ok()?;
    Some(Decimal {
        m,
        e: exp - frac.len() as i32,
    })
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// Both at the smaller exponent.
fn align(a: Decimal, b: Decimal) -> Option<(i128, i128, i32)> {
    let e = a.e.min(b.e);
    let am = a.m.checked_mul(pow10((a.e - e) as u32)?)?;
    let bm = b.m.checked_mul(pow10((b.e - e) as u32)?)?;
    Some((am, bm, e))
}

/// The float nearest `d` (Rust's parse rounds correctly, as `big.Rat.Float64` does).
fn to_f64(d: Decimal) -> f64 {
    format!("{}e{}", d.m, d.e).parse().unwrap_or(f64::NAN)
}

/// `a / b` to 16 decimal places, half away from zero.
fn div(a: Decimal, b: Decimal) -> Option<Decimal> {
    if b.m == 0 {
        return None;
    }
    // a/b = (a.m / b.m) × 10^(a.e - b.e); scaled to exponent -16, with one guard digit.
    let shift = a.e - b.e + 17;
    let (num, den) = if shift >= 0 {
        (a.m.checked_mul(pow10(shift as u32)?)?, b.m)
    } else {
        (a.m, b.m.checked_mul(pow10((-shift) as u32)?)?)
    };
    let q = num / den;
    let rounded = if q >= 0 { (q + 5) / 10 } else { (q - 5) / 10 };
    Some(Decimal { m: rounded, e: -16 })
}

/// The operations of `execDecimalOp`.
#[derive(Clone, Copy)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// `execDecimalOp(first, rest, op)`: `Err` for Go's panic on a division by zero.
pub fn exec(first: f64, rest: &[f64], op: Op) -> Result<f64, String> {
    let mut acc = first;
    for &x in rest {
        if matches!(op, Op::Div) && x == 0.0 {
            return Err("decimal division by 0".into());
        }
        let exact = from_f64(acc).zip(from_f64(x)).and_then(|(a, b)| match op {
            Op::Add => align(a, b).and_then(|(p, q, e)| {
                Some(Decimal {
                    m: p.checked_add(q)?,
                    e,
                })
            }),
            Op::Sub => align(a, b).and_then(|(p, q, e)| {
                Some(Decimal {
                    m: p.checked_sub(q)?,
                    e,
                })
            }),
            Op::Mul => Some(Decimal {
                m: a.m.checked_mul(b.m)?,
                e: a.e.checked_add(b.e)?,
            }),
            Op::Div => div(a, b),
        });
        acc = match exact {
            Some(d) => to_f64(d),
            None => match op {
                Op::Add => acc + x,
                Op::Sub => acc - x,
                Op::Mul => acc * x,
                Op::Div => acc / x,
            },
        };
    }
    Ok(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_arithmetic_is_decimal_as_in_sprig() {
        // Helm v4.2.3's results.
        let run = |a: f64, rest: &[f64], op| exec(a, rest, op).unwrap();
        assert_eq!(run(0.0, &[0.1, 0.2], Op::Add), 0.3);
        assert_eq!(run(0.1, &[3.0], Op::Mul), 0.3);
        assert_eq!(run(1.1, &[1.1], Op::Mul), 1.21);
        assert_eq!(run(1.0, &[0.9], Op::Sub), 0.1);
        assert_eq!(run(0.3, &[0.1], Op::Sub), 0.2);
        assert_eq!(run(1.0, &[3.0], Op::Div), 0.3333333333333333);
        assert_eq!(run(2.0, &[3.0], Op::Div), 0.6666666666666667);
        assert_eq!(run(-2.0, &[3.0], Op::Div), -0.6666666666666667);
        assert_eq!(run(1.0, &[7.0], Op::Div), 0.1428571428571429);
        assert_eq!(run(0.1, &[3.0], Op::Div), 0.0333333333333333);
        assert_eq!(run(1e20, &[3.0], Op::Div), 33333333333333330000.0);
        assert_eq!(run(1e300, &[1e-300], Op::Add), 1e300);
        assert_eq!(
            run(123456789.123, &[987654321.987], Op::Mul),
            121932631355968600.0
        );
        assert_eq!(
            exec(1.0, &[0.0], Op::Div).unwrap_err(),
            "decimal division by 0"
        );
    }
}
