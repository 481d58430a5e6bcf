//! Conversions the function library shares: Sprig's `strval`/`cast.To*`, Sprig's `empty`,
//! Go's `%q`, and `fmt.Sprintf` for the verbs charts use.

use crate::helm::template::value::{Value, format_float, format_float_g};
use std::fmt::Write as _;

/// Sprig's `strval`: strings as they are, everything else `fmt.Sprint`.
pub fn strval(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        other => other.go_string(),
    }
}

/// A string parameter as Go's template engine converts an argument (lenient: nil is "").
pub fn s(v: &Value) -> String {
    match v {
        Value::Nil => String::new(),
        other => strval(other),
    }
}

/// [`s`], borrowed when the value is a string (no copy for functions that only read it).
pub fn s_ref(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::Str(x) => std::borrow::Cow::Borrowed(x),
        other => std::borrow::Cow::Owned(s(other)),
    }
}

/// Go's `int64(f)` on amd64 (CVTTSD2SQ): truncation, and the "integer indefinite"
/// i64::MIN for NaN and anything out of range, where Rust's `as` would saturate.
pub fn go_f64_to_i64(f: f64) -> i64 {
    // 2^63 is exact as a float64; every float below it and ≥ -2^63 converts.
    if f.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// `cast.ToInt64` (spf13/cast v1.7 caste.go `ToInt64E`, which Sprig's `int`, `int64` and
/// arithmetic use): numbers truncated, bools 0/1, a string by `strconv.ParseInt(s, 0, 0)`
/// after `trimZeroDecimal` (`"12.0"` is 12, `"010"` 8, `"1_000"` 1000), anything it refuses
/// (`"12.7"`, `" 7"`, `"1e3"`) 0.
pub fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        Value::Float(f) => go_f64_to_i64(*f),
        Value::Bool(b) => i64::from(*b),
        Value::Str(s) => go_parse_int(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// cast's `trimZeroDecimal`: a run of zeros after the last `.` goes with the dot (`12.00` is
/// `12`); anything else after it, or a dot with nothing after it (`12.`), keeps the text.
fn trim_zero_decimal(s: &str) -> &str {
    let mut found_zero = false;
    for (i, b) in s.bytes().enumerate().rev() {
        match b {
            b'.' if found_zero => return &s[..i],
            b'.' => {}
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// Go's `strconv.ParseInt(s, 0, 64)`: an optional sign, a base prefix (`0x`, `0o`, `0b`, or a
/// leading `0` for octal), and `_` between digits (only where the base came from the text,
/// as it does here). `None` where Go errs, out of range included.
pub fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits, prefixed) = match lower.as_deref() {
        Some("0x") => (16, &body[2..], true),
        Some("0o") => (8, &body[2..], true),
        Some("0b") => (2, &body[2..], true),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..], true),
        _ => (10, body, false),
    };
    // Go's underscoreOK: each `_` between two digits, or right after the base prefix.
    let mut prev = if prefixed { b'0' } else { b'!' };
    let mut value: u64 = 0;
    let mut any = false;
    for b in digits.bytes() {
        if b == b'_' {
            if prev == b'_' || !(prev.is_ascii_alphanumeric()) {
                return None;
            }
            prev = b;
            continue;
        }
        let d = (b as char).to_digit(radix)?;
        value = value
            .checked_mul(u64::from(radix))?
            .checked_add(u64::from(d))?;
        any = true;
        prev = b'0';
    }
    if !any || prev == b'_' {
        return None;
    }
    if neg {
        if value > 1 << 63 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

/// `cast.ToFloat64`: a string by `strconv.ParseFloat`, untrimmed (`" 7"` is 0), with `_`
/// between digits (`"1_000"`), and 0 where Go errs, out of range included (`"1e400"`).
pub fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Int(n) => *n as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Str(s) => go_parse_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

fn go_parse_float(s: &str) -> Option<f64> {
    let digits: std::borrow::Cow<str> = if s.contains('_') {
        // underscoreOK: each `_` between two digits.
        let b = s.as_bytes();
        let ok = b.iter().enumerate().all(|(i, &c)| {
            c != b'_'
                || (i > 0
                    && b[i - 1].is_ascii_alphanumeric()
                    && b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric))
        });
        if !ok {
            return None;
        }
        s.replace('_', "").into()
    } else {
        s.into()
    };
    let f: f64 = digits.parse().ok()?;
    // An overflow is ErrRange in Go; only the words for infinity are infinite.
    if f.is_infinite() && !digits.to_ascii_lowercase().contains("inf") {
        return None;
    }
    Some(f)
}

/// Sprig's `empty`.
pub fn empty(v: &Value) -> bool {
    !v.truthy() && !matches!(v, Value::Object(_))
}

/// Go's `strconv.Quote` (`%q` of a string).
pub fn go_quote(s: &str) -> String {
    go_quote_with(s, '"')
}

/// `strconv.Quote` (delimiter `"`) or `QuoteRune` (`'`): the delimiter and `\` escaped.
fn go_quote_with(s: &str, delim: char) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(delim);
    for c in s.chars() {
        match c {
            c if c == delim => {
                out.push('\\');
                out.push(c);
            }
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || c == '\u{feff}' => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push(delim);
    out
}

/// Go's `fmt.Sprintf` for the verbs templates use (`%s %d %v %q %f %t %x %X %o %e %g %c %%`,
/// flags `-+# 0`, width and precision).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut ai = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut minus = false;
        let mut plus = false;
        let mut zero = false;
        let mut space = false;
        let mut sharp = false;
        while let Some(&f) = chars.peek() {
            match f {
                '-' => minus = true,
                '+' => plus = true,
                '0' => zero = true,
                ' ' => space = true,
                '#' => sharp = true,
                _ => break,
            }
            chars.next();
        }
        // fmt's parsenum: a number past a million before its next digit is too large, and
        // the rest of the format is dropped (`%!(NOVERB)`), as Go does, not a width of
        // billions padded out.
        fn number(chars: &mut std::iter::Peekable<std::str::Chars>) -> Result<Option<usize>, ()> {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                if n.unwrap_or(0) > 1_000_000 {
                    return Err(());
                }
                n = Some(n.unwrap_or(0) * 10 + d as usize);
                chars.next();
            }
            Ok(n)
        }
        let Ok(width) = number(&mut chars) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        let mut prec: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let Ok(p) = number(&mut chars) else {
                out.push_str("%!(NOVERB)");
                break;
            };
            prec = Some(p.unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(ai) else {
            let _ = write!(out, "%!{verb}(MISSING)");
            continue;
        };
        ai += 1;
        let body = match (verb, arg) {
            ('v', Value::Nil) => "<nil>".to_string(),
            ('d', Value::Nil) => bad_verb('d', &Value::Nil),
            ('v', Value::Float(f)) | ('g', Value::Float(f)) => match prec {
                Some(p) => format_g_prec(*f, p),
                None => format_float_g(*f),
            },
            ('s', v) => {
                let mut s = fmt_s(v);
                if let Some(p) = prec {
                    s = s.chars().take(p).collect();
                }
                s
            }
            ('v', v) => {
                let mut s = strval(v);
                if let Some(p) = prec {
                    s = s.chars().take(p).collect();
                }
                s
            }
            // An integer is a rune to %q (strconv.QuoteRune), one outside Unicode U+FFFD.
            ('q', Value::Int(n)) => go_quote_with(
                &u32::try_from(*n)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}')
                    .to_string(),
                '\'',
            ),
            ('q', Value::Str(t)) => go_quote(t),
            ('q', v @ (Value::Float(_) | Value::Bool(_) | Value::Nil)) => bad_verb('q', v),
            ('q', v) => go_quote(&strval(v)),
            ('t', Value::Bool(b)) => b.to_string(),
            ('d', Value::Int(n)) => sign(n.to_string(), *n >= 0, plus, space),
            ('d', Value::Float(f)) => format!("%!d(float64={})", format_float_g(*f)),
            ('f', v) | ('F', v) if v.as_f64().is_some() => {
                let f = v.as_f64().unwrap_or(0.0);
                sign(
                    format!("{:.*}", prec.unwrap_or(6), f),
                    f >= 0.0,
                    plus,
                    space,
                )
            }
            ('e', v) if v.as_f64().is_some() => {
                let f = v.as_f64().unwrap_or(0.0);
                go_exp(format!("{:.*e}", prec.unwrap_or(6), f))
            }
            ('g', Value::Int(n)) => format!("%!g(int={n})"),
            ('x', Value::Int(n)) => format!("{}{n:x}", if sharp { "0x" } else { "" }),
            ('X', Value::Int(n)) => format!("{}{n:X}", if sharp { "0X" } else { "" }),
            ('o', Value::Int(n)) => format!("{}{n:o}", if sharp { "0" } else { "" }),
            ('b', Value::Int(n)) => format!("{n:b}"),
            ('x', Value::Str(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
            ('X', Value::Str(s)) => s.bytes().map(|b| format!("{b:02X}")).collect(),
            ('c', Value::Int(n)) => char::from_u32(*n as u32)
                .map(String::from)
                .unwrap_or_default(),
            ('T', v) => v.type_name(),
            (v, a) => format!("%!{v}({}={})", a.type_name(), a.go_string()),
        };
        let len = body.chars().count();
        match width {
            Some(w) if w > len => {
                let padn = w - len;
                if minus {
                    out.push_str(&body);
                    out.extend(std::iter::repeat_n(' ', padn));
                } else if zero && matches!(verb, 'd' | 'f' | 'e' | 'x' | 'X' | 'o' | 'g' | 'v') {
                    let (sgn, digits) = match body.strip_prefix('-') {
                        Some(d) => ("-", d.to_string()),
                        None => ("", body.clone()),
                    };
                    out.push_str(sgn);
                    out.extend(std::iter::repeat_n('0', padn));
                    out.push_str(&digits);
                } else {
                    out.extend(std::iter::repeat_n(' ', padn));
                    out.push_str(&body);
                }
            }
            _ => out.push_str(&body),
        }
    }
    if ai < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[ai..]
            .iter()
            .map(|a| format!("{}={}", a.type_name(), a.go_string()))
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

/// Go's `%!verb(type=value)` for an argument the verb does not take (`%!s(<nil>)` for nil).
fn bad_verb(verb: char, v: &Value) -> String {
    match v {
        Value::Nil => format!("%!{verb}(<nil>)"),
        v => format!("%!{verb}({}={})", v.type_name(), v.go_string()),
    }
}

/// `%s` of one value as Go's fmt prints it: strings and objects (Stringers in Go) as text,
/// numbers, bools and nil as a bad verb (`%!s(float64=8080)`, the message a chart gets for
/// `printf "%s" .Values.port`), lists and maps element by element.
fn fmt_s(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Object(_) => strval(v),
        Value::List(l) => {
            let items: Vec<String> = l.iter().map(fmt_s).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Map(m) => {
            let items: Vec<String> = m
                .borrow()
                .iter()
                .map(|(k, x)| format!("{k}:{}", fmt_s(x)))
                .collect();
            format!("map[{}]", items.join(" "))
        }
        other => bad_verb('s', other),
    }
}

fn sign(s: String, nonneg: bool, plus: bool, space: bool) -> String {
    if nonneg && plus {
        format!("+{s}")
    } else if nonneg && space {
        format!(" {s}")
    } else {
        s
    }
}

/// Rust's `1.5e0` → Go's `1.5e+00`.
fn go_exp(s: String) -> String {
    match s.split_once('e') {
        Some((m, e)) => {
            let n: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if n < 0 { '-' } else { '+' }, n.abs())
        }
        None => s,
    }
}

fn format_g_prec(f: f64, p: usize) -> String {
    let p = p.max(1);
    let s = format!("{:.*e}", p - 1, f);
    let exp: i32 = s
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let s = go_exp(s);
        // %g drops trailing zeros.
        match s.split_once('e') {
            Some((m, e)) if m.contains('.') => {
                format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
            }
            _ => s,
        }
    } else {
        let dec = (p as i32 - 1 - exp).max(0) as usize;
        let s = format!("{f:.dec$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// Go's default float formatting is reachable for callers that want the exponent limits.
pub fn float_text(f: f64) -> String {
    format_float(f, -4, 21)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_become_ints_as_cast_parses_them() {
        let int = |t: &str| to_i64(&Value::from(t));
        // Helm v4.2.3 (`"…" | int`): base prefixes, underscores, zero decimals.
        for (t, want) in [
            ("010", 8),
            ("-010", -8),
            ("0x1F", 31),
            ("0X1f", 31),
            ("0o17", 15),
            ("0b101", 5),
            ("1_000", 1000),
            ("0x_1F", 31),
            ("+5", 5),
            ("12.0", 12),
            ("12.00", 12),
            ("0", 0),
            ("-9223372036854775808", i64::MIN),
        ] {
            assert_eq!(int(t), want, "{t}");
        }
        // ...and what strconv refuses is 0.
        for t in [
            "12.7",
            " 7",
            "7 ",
            "1e3",
            "abc",
            "12.",
            "1__0",
            "_1",
            "1_",
            "0x",
            "08",
            "9223372036854775808",
            "",
        ] {
            assert_eq!(int(t), 0, "{t}");
        }
        assert_eq!(to_f64(&Value::from(" 7")), 0.0);
        assert_eq!(to_f64(&Value::from("3.9")), 3.9);
        assert_eq!(to_f64(&Value::from("1_000")), 1000.0);
        assert_eq!(to_f64(&Value::from("1__0")), 0.0);
        assert_eq!(to_f64(&Value::from("1e400")), 0.0);
        assert_eq!(to_f64(&Value::from("-Inf")), f64::NEG_INFINITY);
    }

    #[test]
    fn float_to_int64_overflows_as_go_on_amd64() {
        assert_eq!(to_i64(&Value::Float(1.2345678901234569e23)), i64::MIN);
        assert_eq!(to_i64(&Value::Float(-1e19)), i64::MIN);
        assert_eq!(to_i64(&Value::Float(f64::NAN)), i64::MIN);
        assert_eq!(to_i64(&Value::Float(9.2e18)), 9_200_000_000_000_000_000);
        assert_eq!(
            to_i64(&Value::Float(-9_223_372_036_854_775_808.0)),
            i64::MIN
        );
        assert_eq!(to_i64(&Value::Float(-2.9)), -2);
    }

    #[test]
    fn sprintf_like_go() {
        assert_eq!(sprintf("%s-%d", &[Value::str("a"), Value::Int(3)]), "a-3");
        assert_eq!(
            sprintf("%05d|%-3s|", &[Value::Int(42), Value::str("x")]),
            "00042|x  |"
        );
        assert_eq!(
            sprintf("%v %q", &[Value::Float(1e6), Value::str("a\"b")]),
            "1e+06 \"a\\\"b\""
        );
        assert_eq!(sprintf("%.2f", &[Value::Float(1.005)]), "1.00");
    }
}
