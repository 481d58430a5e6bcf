//! How a YAML scalar becomes a JSON value, decided the way `kubectl kustomize` v5.5.0 decides
//! it (ADR 0004).
//!
//! kustomize keeps every scalar as a `yaml.Node` (source text and tag) and prints a resource
//! by decoding that node with go-yaml v3 into Go values, marshalling them to JSON and
//! converting the JSON back to YAML (`Resource.AsYAML` in `api/resource/resource.go`,
//! `RNode.MarshalJSON` in `kyaml/yaml/rnode.go`). The type a plain scalar ends up with is
//! therefore go-yaml v3's `resolve` (`sigs.k8s.io/yaml/goyaml.v3/resolve.go`), which this
//! module mirrors:
//! - `~`, `null`, `Null`, `NULL` and the empty scalar are null; `true`/`True`/`TRUE` and the
//!   `false` forms are booleans (`yes`, `on` stay strings);
//! - a scalar starting with a digit, `+` or `-` is tried as Go's `strconv.ParseInt(s, 0, 64)`
//!   with underscores removed (so `0755` and `010` are octal, `0x1F` hex, `0b101` binary,
//!   `0o17` octal), then `ParseUint`, then as a float if it has YAML's float shape; a float
//!   out of range (`123e4567`, `1e400`) stays the string as written;
//! - `.inf`, `-.inf` and `.nan` are floats that JSON cannot hold: kubectl fails on them
//!   (`json: unsupported value: +Inf`), and so does kiln, with the position.
//!
//! Two deliberate differences (DIVERGENCES.md, y04): decimal integers beyond 64 bits keep every
//! digit instead of becoming lossy floats, and timestamps stay the text written instead of
//! being rewritten as RFC 3339.
//!
//! [`number_text`] prints a number as kubectl does after its JSON round trip: integral values
//! as integers, other floats as Go's `strconv.FormatFloat(f, 'g', -1, 64)`.

use serde_json::{Number, Value};

/// A plain scalar's meaning under go-yaml v3's resolution.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    Null,
    Bool(bool),
    /// An integer, or a float, that JSON can hold.
    Number(Number),
    /// `.inf`, `-.inf`, `.nan` (and spellings): no JSON value exists.
    NonFinite,
    /// Anything else, including numbers out of range.
    Str,
}

/// Resolves an untagged plain scalar (`text` as written).
pub(crate) fn resolve_plain(text: &str) -> Resolved {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => return Resolved::NonFinite,
        _ => {}
    }
    let first = text.as_bytes()[0];
    match first {
        b'.' => match go_parse_float(text) {
            Some(f) => float(f),
            None => Resolved::Str,
        },
        b'0'..=b'9' | b'+' | b'-' => resolve_number(text),
        _ => Resolved::Str,
    }
}

fn float(f: f64) -> Resolved {
    match Number::from_f64(f) {
        Some(n) => Resolved::Number(n),
        None => Resolved::Str,
    }
}

fn resolve_number(text: &str) -> Resolved {
    let plain: String = text.chars().filter(|c| *c != '_').collect();
    if let Some(n) = go_parse_int(&plain) {
        return n;
    }
    if is_yaml_float(&plain) {
        // Decimal integers too wide for 64 bits keep every digit (y04); Go would make them
        // lossy floats. Leading zeros would be octal to Go, so those are left to the float.
        let digits = plain.trim_start_matches(['+', '-']);
        if digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0') {
            let exact = plain.trim_start_matches('+');
            if let Ok(n) = exact.parse::<Number>() {
                return Resolved::Number(n);
            }
        }
        return match go_parse_float(&plain) {
            Some(f) => float(f),
            None => Resolved::Str,
        };
    }
    Resolved::Str
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)`: optional sign (signed
/// only), then `0x`/`0X`, `0o`/`0O`, `0b`/`0B`, a bare leading `0` (octal) or decimal.
pub(super) fn go_parse_int(s: &str) -> Option<Resolved> {
    let (neg, signed, body) = match s.as_bytes().first()? {
        b'-' => (true, true, &s[1..]),
        b'+' => (false, true, &s[1..]),
        _ => (false, false, s),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, d)
    } else if let Some(d) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = u128::from_str_radix(digits, radix).ok()?;
    if neg {
        let v = i128::try_from(magnitude).ok().map(|m| -m)?;
        return i64::try_from(v).ok().map(|v| Resolved::Number(v.into()));
    }
    if let Ok(v) = i64::try_from(magnitude) {
        return Some(Resolved::Number(v.into()));
    }
    // ParseUint takes no sign.
    if !signed && let Ok(v) = u64::try_from(magnitude) {
        return Some(Resolved::Number(v.into()));
    }
    None
}

/// go-yaml v3's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
pub(super) fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms YAML reaches it with; `None` for a
/// syntax error or a value out of range (Go's `ErrRange`).
pub(super) fn go_parse_float(s: &str) -> Option<f64> {
    // Rust also reads `inf`, `nan` and `infinity`; YAML's `.inf` spellings never get here.
    if !s
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// Resolves a scalar with a core-schema tag (`!!int "010"`, `!!float 1`, `!!bool`, `!!null`).
/// `Err` when the text does not fit the tag, as go-yaml fails ("cannot decode !!str `x` as a
/// !!int").
pub(crate) fn resolve_tagged(tag: &str, text: &str) -> Result<Value, String> {
    let r = if text.is_empty() {
        Resolved::Null
    } else {
        resolve_plain(text)
    };
    let fail = || format!("cannot decode `{text}` as a !!{tag}");
    match (tag, r) {
        ("null", Resolved::Null) => Ok(Value::Null),
        ("bool", Resolved::Bool(b)) => Ok(Value::Bool(b)),
        ("int", Resolved::Number(n)) if n.is_i64() || n.is_u64() || is_integer_text(&n) => {
            Ok(Value::Number(n))
        }
        ("float", Resolved::Number(n)) => Ok(Value::Number(n)),
        ("float" | "int", Resolved::NonFinite) => Err(non_finite(text)),
        _ => Err(fail()),
    }
}

fn is_integer_text(n: &Number) -> bool {
    let s = n.to_string();
    let digits = s.trim_start_matches('-');
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The message for `.inf` / `.nan` outside a string field.
pub(crate) fn non_finite(text: &str) -> String {
    format!(
        "`{text}` is an infinite or NaN number, which JSON (and so Kubernetes and kubectl kustomize) cannot hold; quote it to keep it as a string"
    )
}

/// A number as `kubectl kustomize` prints it: integers (and integral floats below 10²¹, which
/// Go's JSON encoder writes without exponent) as their digits, other floats as Go's
/// `FormatFloat(f, 'g', -1, 64)` (`1.2345675e+06`, `1e-06`, `0.5`).
pub fn number_text(n: &Number) -> String {
    match printed(n) {
        Printed::AsWritten(s) => s.to_string(),
        Printed::Text(t) => t,
    }
}

/// The number a reader of kiln's output reads where `n` is printed (`number_text`, then
/// `resolve_plain`), or `None` when that is `n` itself: every integer as written, which is
/// nearly every number of a rendered object. Not `None` for an integral float (`1.0` prints
/// as `1`, an integer to the API server) nor a float written another way than the shortest
/// (`1.50`). The in-memory validation of rendered objects judges each number by this.
pub fn printed_number(n: &Number) -> Option<Number> {
    let Printed::Text(text) = printed(n) else {
        return None;
    };
    match resolve_plain(&text) {
        Resolved::Number(m) if m != *n => Some(m),
        _ => None,
    }
}

/// How [`number_text`] prints a number: the one decision, which [`printed_number`] reads
/// back.
enum Printed<'a> {
    /// Its own text: a JSON integer (no sign but `-`, no leading zero, any width), which
    /// reads back as the same number.
    AsWritten(&'a str),
    Text(String),
}

fn printed(n: &Number) -> Printed<'_> {
    let s = n.as_str();
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        // Wide integers keep every digit (y04); `-0` is 0.
        return if s != "0" && digits.bytes().all(|b| b == b'0') {
            Printed::Text("0".into())
        } else {
            Printed::AsWritten(s)
        };
    }
    let Some(f) = n.as_f64() else {
        return Printed::AsWritten(s);
    };
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Go's JSON writes it as digits; sigs.k8s.io/yaml reads those back as an integer when
        // they fit 64 bits, else as a float.
        if f.abs() < 9.2e18 {
            return Printed::Text(format!("{}", f as i64));
        }
        if f > 0.0 && f < 1.8e19 {
            return Printed::Text(format!("{}", f as u64));
        }
    }
    Printed::Text(go_format_g(f))
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest digits that read back as `f`, in
/// exponent form when the decimal exponent is below -4 or at least 6 (Go decides with
/// precision 6 when asked for the shortest form), with a signed two-digit exponent.
fn go_format_g(f: f64) -> String {
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(text: &str) -> Value {
        match resolve_plain(text) {
            Resolved::Null => Value::Null,
            Resolved::Bool(b) => Value::Bool(b),
            Resolved::Number(n) => Value::Number(n),
            Resolved::Str => Value::String(text.into()),
            Resolved::NonFinite => Value::String("<non-finite>".into()),
        }
    }

    #[test]
    fn plain_scalars_resolve_like_go_yaml_v3() {
        // Each pair observed from kubectl kustomize v5.5.0 on a custom resource's spec.
        for (text, want) in [
            ("010", json!(8)),
            ("0755", json!(493)),
            ("0x1F", json!(31)),
            ("-0x1F", json!(-31)),
            ("+0x10", json!(16)),
            ("0o17", json!(15)),
            ("0O17", json!(15)),
            ("0b101", json!(5)),
            ("0B11", json!(3)),
            ("08", json!(8.0)),
            ("00", json!(0)),
            ("1_000", json!(1000)),
            ("1__0", json!(10)),
            ("0x_1F", json!(31)),
            ("+12", json!(12)),
            ("1e3", json!(1000.0)),
            ("1.10", json!(1.1)),
            (".5", json!(0.5)),
            ("5.", json!(5.0)),
            ("18446744073709551615", json!(18446744073709551615u64)),
            ("-9223372036854775808", json!(-9223372036854775808i64)),
            ("yes", json!("yes")),
            ("on", json!("on")),
            ("True", json!(true)),
            ("FALSE", json!(false)),
            ("Null", Value::Null),
            ("", Value::Null),
            ("1:20", json!("1:20")),
            ("123e4567", json!("123e4567")),
            ("1e400", json!("1e400")),
            ("-1e400", json!("-1e400")),
            ("0x", json!("0x")),
            ("0xFFFFFFFFFFFFFFFFF", json!("0xFFFFFFFFFFFFFFFFF")),
            ("1.2.3", json!("1.2.3")),
            ("-", json!("-")),
            ("2024-01-02", json!("2024-01-02")),
        ] {
            let got = v(text);
            assert!(
                crate::yaml::structurally_equal(&got, &want) && got.is_number() == want.is_number(),
                "{text:?}: {got:?} != {want:?}"
            );
        }
        assert_eq!(resolve_plain(".inf"), Resolved::NonFinite);
        assert_eq!(resolve_plain("-.Inf"), Resolved::NonFinite);
        assert_eq!(resolve_plain(".NaN"), Resolved::NonFinite);
        assert_eq!(
            v("123456789012345678901234567890").to_string(),
            "123456789012345678901234567890"
        );
    }

    #[test]
    fn numbers_print_as_kubectl_prints_them() {
        for (text, want) in [
            ("1234567.5", "1.2345675e+06"),
            ("0.000001", "1e-06"),
            ("1e-7", "1e-07"),
            ("1.5e300", "1.5e+300"),
            ("1e21", "1e+21"),
            ("1e20", "1e+20"),
            ("-0.0", "0"),
            ("0.1", "0.1"),
            ("100.0", "100"),
            ("12e-1", "1.2"),
            ("1234e56", "1.234e+59"),
            ("123456.5", "123456.5"),
            ("0.0001", "0.0001"),
            ("18446744073709551616", "18446744073709551616"),
            ("18446744073709551615", "18446744073709551615"),
            ("12345678901234567890123.0", "1.2345678901234568e+22"),
        ] {
            let Resolved::Number(n) = resolve_plain(text) else {
                panic!("{text} is not a number")
            };
            assert_eq!(number_text(&n), want, "{text}");
        }
    }

    #[test]
    fn tags_convert_or_fail() {
        assert_eq!(resolve_tagged("int", "010"), Ok(json!(8)));
        assert_eq!(
            resolve_tagged("float", "1").map(|v| v.as_f64()),
            Ok(Some(1.0))
        );
        assert_eq!(resolve_tagged("bool", "true"), Ok(json!(true)));
        assert_eq!(resolve_tagged("null", ""), Ok(Value::Null));
        assert!(resolve_tagged("int", "abc").is_err());
        assert!(resolve_tagged("int", "1.5").is_err());
    }
}
