//! CEL's `duration` (the standard library's, which kiln's cel-rust lacks: it is built
//! without chrono, ADR 0021): `duration(string)` as cel-go parses it, with Go's
//! `time.ParseDuration` (go/src/time/format.go), ordered and compared as durations are, and
//! the `getHours`/`getMinutes`/`getSeconds`/`getMilliseconds` of cel-go's
//! `common/types/duration.go` (each the whole duration in that unit, truncated). CRDs use it
//! as `duration(self) >= duration('1ms')`. Arithmetic on durations is not here: a rule that
//! adds them is counted as not evaluated.

use super::{Out, error, integer, own, string, typed};
use cel::common::traits::Comparer;
use cel::common::types::STRING_TYPE;
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use std::cmp::Ordering;

/// A duration in nanoseconds, as Go's `time.Duration`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Duration(i64);

impl Val for Duration {
    fn get_type(&self) -> &cel::common::types::Type {
        <Self as Val>::cel_type()
    }
    fn cel_type() -> &'static cel::common::types::Type {
        static TYPE: cel::common::types::Type =
            cel::common::types::Type::new_unspecified_type("google.protobuf.Duration");
        &TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .as_any()
            .and_then(|o| o.downcast_ref::<Duration>())
            .is_some_and(|o| o == self)
    }
    fn as_comparer(&self) -> Option<&dyn Comparer> {
        Some(self)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl cel::common::value::StaticVal for Duration {}

impl Comparer for Duration {
    fn compare(&self, rhs: &dyn Val) -> Result<Ordering, ExecutionError> {
        match rhs.as_any().and_then(|r| r.downcast_ref::<Duration>()) {
            Some(r) => Ok(self.0.cmp(&r.0)),
            None => Err(ExecutionError::no_such_overload(
                "_<_",
                vec![
                    self.get_type().name().to_string(),
                    rhs.get_type().name().to_string(),
                ],
            )),
        }
    }
}

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let d = super::type_of::<Duration>;
    env.add_overload(
        "duration",
        "string_to_duration",
        vec![STRING_TYPE],
        to_duration,
    )?;
    env.add_member_overload("getHours", "duration_to_hours", d(), vec![], |a| {
        unit(a, 3_600_000_000_000)
    })?;
    env.add_member_overload("getMinutes", "duration_to_minutes", d(), vec![], |a| {
        unit(a, 60_000_000_000)
    })?;
    env.add_member_overload("getSeconds", "duration_to_seconds", d(), vec![], |a| {
        unit(a, 1_000_000_000)
    })?;
    env.add_member_overload(
        "getMilliseconds",
        "duration_to_milliseconds",
        d(),
        vec![],
        |a| unit(a, 1_000_000),
    )?;
    Ok(())
}

fn to_duration<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    own(Duration(
        parse(string(&args, 0)?).map_err(|e| error("duration", e))?,
    ))
}

fn unit<'b, 'v>(args: Vec<CowVal<'b, 'v>>, nanos: i64) -> Out<'b, 'v> {
    integer(typed::<Duration>(&args, 0)?.0 / nanos)
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, units `ns`, `us`/`µs`/`μs`,
/// `ms`, `s`, `m`, `h`; fractions to the nanosecond through a float64, as Go.
pub(crate) fn parse(orig: &str) -> Result<i64, String> {
    let invalid = || format!("time: invalid duration {orig:?}");
    let mut s = orig;
    let mut neg = false;
    if let Some(c) = s.chars().next()
        && (c == '-' || c == '+')
    {
        neg = c == '-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        // [0-9]*
        let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
        let mut v: u64 = 0;
        for b in s[..int_len].bytes() {
            if v > (1 << 63) / 10 {
                return Err(invalid());
            }
            v = v * 10 + u64::from(b - b'0');
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        let pre = int_len > 0;
        s = &s[int_len..];
        // (\.[0-9]*)?
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            let mut overflow = false;
            for b in rest[..frac_len].bytes() {
                if overflow {
                    continue;
                }
                if f > (i64::MAX as u64) / 10 {
                    overflow = true;
                    continue;
                }
                let y = f * 10 + u64::from(b - b'0');
                if y > i64::MAX as u64 {
                    overflow = true;
                    continue;
                }
                f = y;
                scale *= 10.0;
            }
            post = frac_len > 0;
            s = &rest[frac_len..];
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .take_while(|c| *c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {orig:?}"));
        }
        let u = &s[..unit_len];
        s = &s[unit_len..];
        let unit: u64 = match u {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(format!("time: unknown unit {u:?} in duration {orig:?}")),
        };
        if v > (1 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        d += v;
        if d > 1 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        return Ok((d as i64).wrapping_neg());
    }
    if d > i64::MAX as u64 {
        return Err(invalid());
    }
    Ok(d as i64)
}

#[cfg(test)]
mod tests {
    use super::parse;
    use crate::cel::tests::eval;

    #[test]
    fn parses_as_time_parse_duration() {
        // Cases of go/src/time/time_test.go's parseDurationTests, in our words.
        for (s, ns) in [
            ("0", 0),
            ("5s", 5_000_000_000),
            ("30s", 30_000_000_000),
            ("1478s", 1_478_000_000_000),
            ("-5s", -5_000_000_000),
            ("+5s", 5_000_000_000),
            ("-0", 0),
            ("5.0s", 5_000_000_000),
            ("5.6s", 5_600_000_000),
            ("5.s", 5_000_000_000),
            (".5s", 500_000_000),
            ("1.004s", 1_004_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13_000_000),
            ("15m", 900_000_000_000),
            ("16h", 57_600_000_000_000),
            ("3h30m", 12_600_000_000_000),
            ("10.5s4m", 250_500_000_000),
            ("-2m3.4s", -123_400_000_000),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("9223372036854775807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
        ] {
            assert_eq!(parse(s), Ok(ns), "{s}");
        }
        for bad in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "9223372036854775808ns",
            "3000000h",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn compares_as_durations() {
        for rule in [
            "duration('1s') >= duration('1ms')",
            "duration('90m') == duration('1h30m')",
            "duration('1h') > duration('59m') && duration('1ms') < duration('1s')",
            "duration('1h30m').getHours() == 1 && duration('1h30m').getMinutes() == 90",
            "duration('1.5s').getSeconds() == 1 && duration('1.5s').getMilliseconds() == 1500",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(eval("duration('1d') > duration('1s')").is_err());
    }
}
