//! Kubernetes' Quantity library (k8s.io/apiserver `pkg/cel/library/quantity.go`), over
//! `resource.Quantity` as k8s.io/apimachinery `pkg/api/resource/quantity.go`, `amount.go`
//! and `suffix.go` define it: `quantity`, `isQuantity`, `sign`, `isGreaterThan`,
//! `isLessThan`, `compareTo`, `asApproximateFloat`, `asInteger`, `isInteger`, `add`, `sub`.
//!
//! A Quantity keeps Go's two representations, because `isInteger`/`asInteger` depend on
//! which one parsing chose: the fast path's `int64Amount` (value × 10^scale, exact), or
//! `inf.Dec` (any size, rounded up to nano units), whose `AsInt64` always fails. Comparison
//! and equality are by value (`Cmp`), whatever the representation.

use super::{Out, boolean, double, error, int, integer, opaque, own, string, type_of, typed};
use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::{DeclarationError, Env};
use num_bigint::{BigInt, Sign};
use std::cmp::Ordering;

/// `maxInt64Factors`: the decimal digits an int64 always holds.
const MAX_INT64_FACTORS: i32 = 18;
/// `Nano`: the smallest scale a Quantity keeps.
const NANO: i64 = -9;

/// A parsed `resource.Quantity` (its format only matters to its string form, which CEL
/// never shows).
#[derive(Debug, Clone)]
pub(crate) enum Quantity {
    /// `int64Amount`: `value` × 10^`scale`.
    Int { value: i64, scale: i32 },
    /// `inf.Dec`: `unscaled` × 10^`exp`.
    Dec { unscaled: BigInt, exp: i64 },
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

opaque!(Quantity, "kubernetes.Quantity");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let q = type_of::<Quantity>;
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        to_quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload("sign", "quantity_sign", q(), vec![], sign)?;
    env.add_overload("sign", "quantity_sign_fn", vec![q()], sign)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        greater,
    )?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], less)?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q(),
        vec![q()],
        compare_to,
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        float,
    )?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add_int)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub_int)?;
    Ok(())
}

fn to_quantity<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    own(Quantity::parse(string(&args, 0)?).map_err(|e| error("quantity", e))?)
}

fn is_quantity<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(Quantity::parse(string(&args, 0)?).is_ok())
}

fn sign<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    integer(typed::<Quantity>(&args, 0)?.sign())
}

fn greater<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (typed::<Quantity>(&args, 0)?, typed::<Quantity>(&args, 1)?);
    boolean(a.cmp(b) == Ordering::Greater)
}

fn less<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (typed::<Quantity>(&args, 0)?, typed::<Quantity>(&args, 1)?);
    boolean(a.cmp(b) == Ordering::Less)
}

fn compare_to<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (typed::<Quantity>(&args, 0)?, typed::<Quantity>(&args, 1)?);
    integer(a.cmp(b) as i64)
}

fn float<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    double(typed::<Quantity>(&args, 0)?.approximate_float())
}

fn as_integer<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    match typed::<Quantity>(&args, 0)?.as_int64() {
        Some(i) => integer(i),
        None => Err(error("asInteger", "cannot convert value to integer")),
    }
}

fn is_integer<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(typed::<Quantity>(&args, 0)?.as_int64().is_some())
}

fn add<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (typed::<Quantity>(&args, 0)?, typed::<Quantity>(&args, 1)?);
    own(a.add(b, false).map_err(|e| error("add", e))?)
}

fn add_int<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let b = Quantity::Int {
        value: int(&args, 1)?,
        scale: 0,
    };
    own(typed::<Quantity>(&args, 0)?
        .add(&b, false)
        .map_err(|e| error("add", e))?)
}

fn sub<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (typed::<Quantity>(&args, 0)?, typed::<Quantity>(&args, 1)?);
    own(a.add(b, true).map_err(|e| error("sub", e))?)
}

fn sub_int<'b, 'v>(args: Vec<cel::common::value::CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let b = Quantity::Int {
        value: int(&args, 1)?,
        scale: 0,
    };
    own(typed::<Quantity>(&args, 0)?
        .add(&b, true)
        .map_err(|e| error("sub", e))?)
}

/// What `parseQuantityString` splits a quantity into.
struct Parts<'s> {
    positive: bool,
    num: &'s str,
    denom: &'s str,
    suffix: &'s str,
}

/// The suffix's base, exponent and whether it is binary (`quantitySuffixer.interpret`).
fn interpret(suffix: &str) -> Option<(u32, i32, bool)> {
    let decimal = |e| Some((10, e, false));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => Some((2, 10, true)),
        "Mi" => Some((2, 20, true)),
        "Gi" => Some((2, 30, true)),
        "Ti" => Some((2, 40, true)),
        "Pi" => Some((2, 50, true)),
        "Ei" => Some((2, 60, true)),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            // strconv.ParseInt(…, 10, 64), then int32(parsed): Go truncates.
            let digits = &s[1..];
            let unsigned = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let parsed: i64 = digits.parse().ok()?;
            Some((10, parsed as i32, false))
        }
        _ => None,
    }
}

/// `parseQuantityString`: sign, numerator (leading zeros stripped), denominator, suffix.
fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let bytes = s.as_bytes();
    let end = bytes.len();
    let mut pos = 0;
    let mut positive = true;
    match bytes.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && bytes[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = &s[start..pos];
    if pos >= end {
        return Ok(Parts {
            positive,
            num,
            denom: "",
            suffix: "",
        });
    }
    if num.is_empty() {
        num = "0";
    }
    let mut denom = "";
    if bytes[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[start..pos];
        if pos >= end {
            return Ok(Parts {
                positive,
                num,
                denom,
                suffix: "",
            });
        }
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&bytes[pos]) {
        pos += 1;
    }
    if pos < end && (bytes[pos] == b'-' || bytes[pos] == b'+') {
        pos += 1;
    }
    while pos < end && bytes[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(FORMAT_WRONG);
    }
    Ok(Parts {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// `ErrFormatWrong`'s message, with the `splitREString` it quotes.
const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl Quantity {
    /// `resource.ParseQuantity`.
    pub(crate) fn parse(s: &str) -> Result<Quantity, &'static str> {
        if s.is_empty() {
            return Err(FORMAT_WRONG);
        }
        if s == "0" {
            return Ok(Quantity::Int { value: 0, scale: 0 });
        }
        let parts = split(s)?;
        let Some((base, exponent, binary)) = interpret(parts.suffix) else {
            return Err("unable to parse quantity's suffix");
        };
        let digits = parts.num.len() as i32 + parts.denom.len() as i32;
        // The fast path: an int64Amount when the digits surely fit.
        let (mut scale, precision, mantissa) = if binary {
            if parts.denom.is_empty() {
                let precision =
                    15 - parts.num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
                (0, precision, 1i64 << exponent)
            } else {
                (0, -1, 1)
            }
        } else {
            (exponent, MAX_INT64_FACTORS - digits, 1)
        };
        if precision >= 0 {
            scale -= parts.denom.len() as i32;
            if scale as i64 >= NANO {
                let shifted: i64 = format!("{}{}", parts.num, parts.denom)
                    .parse()
                    .map_err(|_| "unable to parse numeric part of quantity")?;
                if let Some(result) = shifted.checked_mul(mantissa) {
                    let value = if parts.positive { result } else { -result };
                    return Ok(Quantity::Int { value, scale });
                }
            }
        }
        // The inf.Dec path: exact, then rounded up to nano units and capped (BinarySI).
        let magnitude: BigInt = format!("{}{}", parts.num, parts.denom)
            .parse()
            .map_err(|_| "unable to parse numeric part of quantity")?;
        let (mut unscaled, mut exp) = if base == 10 {
            (magnitude, exponent as i64 - parts.denom.len() as i64)
        } else {
            (magnitude << exponent as usize, -(parts.denom.len() as i64))
        };
        if unscaled.sign() != Sign::NoSign && exp < NANO {
            let drop = (NANO - exp) as u64;
            let width = unscaled.to_string().len() as u64;
            unscaled = if drop > width {
                BigInt::from(1)
            } else {
                let divisor = BigInt::from(10).pow(drop as u32);
                let (q, r) = (&unscaled / &divisor, &unscaled % &divisor);
                if r.sign() == Sign::NoSign { q } else { q + 1 }
            };
            exp = NANO;
        }
        if binary {
            let max = Quantity::Dec {
                unscaled: BigInt::from(i64::MAX),
                exp: 0,
            };
            let this = Quantity::Dec {
                unscaled: unscaled.clone(),
                exp,
            };
            if this.cmp(&max) == Ordering::Greater {
                (unscaled, exp) = (BigInt::from(i64::MAX), 0);
            }
        }
        if !parts.positive {
            unscaled = -unscaled;
        }
        Ok(Quantity::Dec { unscaled, exp })
    }

    /// The exact value, as unscaled × 10^exp.
    fn exact(&self) -> (BigInt, i64) {
        match self {
            Quantity::Int { value, scale } => (BigInt::from(*value), *scale as i64),
            Quantity::Dec { unscaled, exp } => (unscaled.clone(), *exp),
        }
    }

    fn sign(&self) -> i64 {
        match self {
            Quantity::Int { value, .. } => value.signum(),
            Quantity::Dec { unscaled, .. } => match unscaled.sign() {
                Sign::Minus => -1,
                Sign::NoSign => 0,
                Sign::Plus => 1,
            },
        }
    }

    /// `Cmp`: by value, never materialising 10^exp beyond the digits compared.
    fn cmp(&self, other: &Quantity) -> Ordering {
        let (sa, sb) = (self.sign(), other.sign());
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        let ((a, ea), (b, eb)) = (self.exact(), other.exact());
        let (a, b) = (a.magnitude().clone(), b.magnitude().clone());
        let order = |m: &num_bigint::BigUint, e: i64| m.to_string().len() as i64 + e;
        let magnitude = match order(&a, ea).cmp(&order(&b, eb)) {
            Ordering::Equal => {
                // Same order of magnitude: the exponents differ by less than the digits.
                let ten = num_bigint::BigUint::from(10u32);
                if ea > eb {
                    (a * ten.pow((ea - eb) as u32)).cmp(&b)
                } else {
                    a.cmp(&(b * ten.pow((eb - ea) as u32)))
                }
            }
            unequal => unequal,
        };
        if sa < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    /// `AsInt64`: only an int64Amount converts, and only without a fraction or overflow.
    fn as_int64(&self) -> Option<i64> {
        match self {
            Quantity::Int { value, scale } if *scale >= 0 => scale_up(*value, *scale),
            _ => None,
        }
    }

    /// `AsApproximateFloat64`: the unscaled value as a float, times `math.Pow10(exponent)`.
    fn approximate_float(&self) -> f64 {
        let (base, exponent) = match self {
            Quantity::Int { value, scale } => (*value as f64, *scale as i64),
            Quantity::Dec { unscaled, exp } => (
                unscaled.to_string().parse::<f64>().unwrap_or(f64::NAN),
                *exp,
            ),
        };
        if exponent == 0 {
            return base;
        }
        base * pow10(exponent)
    }

    /// `Add` (and `Sub`, the negated `y`): in int64 when both are and nothing overflows,
    /// else exactly in inf.Dec.
    fn add(&self, y: &Quantity, negate: bool) -> Result<Quantity, &'static str> {
        if let (
            Quantity::Int {
                value: a,
                scale: sa,
            },
            Quantity::Int {
                value: b,
                scale: sb,
            },
        ) = (self, y)
        {
            let b = if negate { b.wrapping_neg() } else { *b };
            if let Some(sum) = int64_add((*a, *sa), (b, *sb)) {
                return Ok(Quantity::Int {
                    value: sum.0,
                    scale: sum.1,
                });
            }
        }
        let ((a, ea), (b, eb)) = (self.exact(), y.exact());
        let b = if negate { -b } else { b };
        let low = ea.min(eb);
        if (ea - eb).abs() > 4096 {
            return Err("quantities too far apart in magnitude to add");
        }
        let ten = BigInt::from(10);
        let sum = a * ten.pow((ea - low) as u32) + b * ten.pow((eb - low) as u32);
        Ok(Quantity::Dec {
            unscaled: sum,
            exp: low,
        })
    }
}

/// `int64Amount.Add`.
fn int64_add(a: (i64, i32), b: (i64, i32)) -> Option<(i64, i32)> {
    if b.0 == 0 {
        return Some(a);
    }
    if a.0 == 0 {
        return Some(b);
    }
    match a.1.cmp(&b.1) {
        Ordering::Equal => Some((a.0.checked_add(b.0)?, a.1)),
        Ordering::Greater => Some((scale_up(a.0, a.1 - b.1)?.checked_add(b.0)?, b.1)),
        Ordering::Less => Some((a.0.checked_add(scale_up(b.0, b.1 - a.1)?)?, a.1)),
    }
}

/// `positiveScaleInt64`: `value` × 10^`scale`, unless it overflows.
fn scale_up(value: i64, scale: i32) -> Option<i64> {
    if value == 0 {
        return Some(0);
    }
    let mut out = value;
    for _ in 0..scale {
        out = out.checked_mul(10)?;
    }
    Some(out)
}

/// Go's `math.Pow10`: exact powers, 0 below 1e-323 and +Inf above 1e308.
fn pow10(n: i64) -> f64 {
    if n < -323 {
        0.0
    } else if n > 308 {
        f64::INFINITY
    } else {
        format!("1e{n}").parse().unwrap_or(f64::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::tests::eval;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn parses_as_resource_quantity_does() {
        for ok in [
            "1.5G", "200k", "1.3Gi", "10000k", "0", "-1", "+5m", "1e3", "1E-3", "100Mi", ".5",
            "5.", "1.5Ki",
        ] {
            assert!(Quantity::parse(ok).is_ok(), "{ok}");
        }
        // quantity.go's comment calls `Mi` an error, but parseQuantityString reads a missing
        // number as 0 (as here): the code is what the server runs.
        assert!(q("Mi").sign() == 0);
        for bad in [
            "", "200K", "Three", "1,3G", "1i", "1.2.3", "1e", "5 Gi", "1kk", "10Mo", "10Mm",
        ] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Quantity::parse("x").unwrap_err(), FORMAT_WRONG);
        assert_eq!(Quantity::parse("1Qi").unwrap_err(), FORMAT_WRONG);
        assert_eq!(
            Quantity::parse("1Ki1").unwrap_err(),
            "unable to parse quantity's suffix"
        );
        assert_eq!(Quantity::parse("10Mo").unwrap_err(), FORMAT_WRONG);
        assert_eq!(
            Quantity::parse("10Mm").unwrap_err(),
            "unable to parse quantity's suffix"
        );
    }

    #[test]
    fn compares_by_value_across_suffixes() {
        assert_eq!(q("200M").cmp(&q("0.2G")), Ordering::Equal);
        assert_eq!(q("50M").cmp(&q("50Mi")), Ordering::Less);
        assert_eq!(q("50Mi").cmp(&q("50M")), Ordering::Greater);
        assert_eq!(q("1Ki").cmp(&q("1024")), Ordering::Equal);
        assert_eq!(q("1.5Gi").cmp(&q("1536Mi")), Ordering::Equal);
        assert_eq!(q("-1").cmp(&q("1m")), Ordering::Less);
        assert_eq!(q("-2").cmp(&q("-1")), Ordering::Less);
        assert_eq!(
            q("1e30").cmp(&q("999999999999999999999999999999")),
            Ordering::Greater
        );
        // Sub-nano values round up to 1n; binary quantities cap at 2^63-1.
        assert_eq!(q("0.1n").cmp(&q("1n")), Ordering::Equal);
        assert_eq!(q("1e-20").cmp(&q("1n")), Ordering::Equal);
        assert_eq!(
            q("100000000000Ei").cmp(&q("9223372036854775807")),
            Ordering::Equal
        );
    }

    #[test]
    fn integers_only_from_the_int64_representation() {
        assert_eq!(q("50000000G").as_int64(), Some(50_000_000_000_000_000));
        assert_eq!(q("50k").as_int64(), Some(50_000));
        assert_eq!(q("9999999999999999999999999999999999999G").as_int64(), None);
        assert_eq!(q("1.5").as_int64(), None);
        // As Go: `1000m` keeps its milli scale, `1.5Ki` is an inf.Dec.
        assert_eq!(q("1000m").as_int64(), None);
        assert_eq!(q("1.5Ki").as_int64(), None);
        assert_eq!(q("1Ki").as_int64(), Some(1024));
    }

    #[test]
    fn the_library_as_the_upstream_examples_give_it() {
        for rule in [
            "quantity('200M').compareTo(quantity('0.2G')) == 0",
            "quantity('50M').compareTo(quantity('50Mi')) == -1",
            "quantity('150Mi').isGreaterThan(quantity('100Mi'))",
            "!quantity('50Mi').isGreaterThan(quantity('100Mi'))",
            "quantity('50M').isLessThan(quantity('100M'))",
            "isQuantity('1.3Gi') && !isQuantity('1,3G') && !isQuantity('200K')",
            "quantity('50k').isInteger() && quantity('50k').asInteger() == 50000",
            "!quantity('9999999999999999999999999999999999999G').isInteger()",
            "quantity('50k').add(quantity('20k')) == quantity('70k')",
            "quantity('50k').add(20) == quantity('50020')",
            "quantity('50k').sub(quantity('20k')) == quantity('30k')",
            "quantity('50k').sub(20000) == quantity('30k')",
            "quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')",
            "quantity('50k').sub(20000).asApproximateFloat() == 30000.0",
            "quantity('-5').sign() == -1 && quantity('0').sign() == 0",
            "quantity('1.5G') != quantity('1.5Gi')",
            "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')",
            "quantity('200M') != quantity('0.3G')",
            "quantity('50k').add(quantity('20')) == quantity('50.02k')",
            "!quantity('50k').add(20).isLessThan(quantity('50020'))",
            "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
            "quantity('50k').sub(20) == quantity('49980')",
            "quantity('50k').add(20).sub(quantity('100k')).asInteger() == -49980",
            "quantity('50.703k').asApproximateFloat() == 50703.0",
            "quantity('50').isInteger()",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(
            eval("quantity('9999999999999999999999999999999999999G').asInteger() == 1").is_err()
        );
        assert!(eval("quantity('bogus') == quantity('1')").is_err());
    }
}
