//! Go's `fmt` and `strconv` as templates print and convert values (`%q` after
//! `strconv.Quote`, `fmt.Sprintf` for the verbs charts use, `strconv.ParseInt`), Go's
//! `string(b)` for bytes that are not UTF-8, and the conversions every layer above shares
//! (Sprig's `strval`/`cast.To*` and `empty`): below Sprig, so the chart, values and output
//! code print a value as Go does without naming the function library.

use crate::template::value::{Value, format_float, format_float_g};
use std::fmt::Write as _;

/// Sprig's `strval`: strings as they are, everything else `fmt.Sprint`.
pub fn strval(v: &Value) -> String {
    match v {
        // A copy of the bytes: `to_string` on an `Rc<str>` goes through `Display` and the
        // formatter's padding (about three times the work; `dict` keys, `set`, `pluck`).
        Value::Str(s) => String::from(&**s),
        other => other.go_string(),
    }
}

/// [`strval`] as a map key: a string keeps its own `Rc` (a template constant's, shared by
/// every map built with it), where `strval` copies it.
pub fn strval_key(v: &Value) -> std::rc::Rc<str> {
    match v {
        Value::Str(s) => s.clone(),
        other => std::rc::Rc::from(other.go_string()),
    }
}

/// [`s`] as a map key, as [`strval_key`] is `strval`'s.
pub fn s_key(v: &Value) -> std::rc::Rc<str> {
    match v {
        Value::Nil => std::rc::Rc::from(""),
        other => strval_key(other),
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
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(&mut out, s, '"', false);
    out
}

/// strconv's `appendQuotedWith`: `s` between `delim`s, the delimiter and `\` escaped, and
/// every character `strconv.IsPrint` refuses (controls, spaces other than ` `, format
/// characters such as U+FEFF) as `\a`…`\v`, `\xHH`, `\uHHHH` or `\UHHHHHHHH`; with `ascii`
/// (`%+q`, `QuoteToASCII`) every character past ASCII too.
fn quote_into(out: &mut String, s: &str, delim: char, ascii: bool) {
    out.push(delim);
    for c in s.chars() {
        escaped_char(out, c, delim, ascii);
    }
    out.push(delim);
}

/// strconv's `appendEscapedRune`.
fn escaped_char(out: &mut String, c: char, delim: char, ascii: bool) {
    use super::unicode::is_print;
    if c == delim || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if if ascii {
        c.is_ascii() && is_print(c)
    } else {
        is_print(c)
    } {
        out.push(c);
        return;
    }
    match c {
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0c' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\x0b' => out.push_str("\\v"),
        c if c < ' ' || c == '\x7f' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if (c as u32) < 0x10000 => {
            let _ = write!(out, "\\u{:04x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\U{:08x}", c as u32);
        }
    }
}

/// `strconv.CanBackquote`: no control character but tab, no `` ` ``, DEL or U+FEFF.
fn can_backquote(s: &str) -> bool {
    !s.chars()
        .any(|c| c < ' ' && c != '\t' || c == '`' || c == '\x7f' || c == '\u{feff}')
}

/// Go's `fmt.Sprintf`, ported from Go's fmt (`doPrintf`, `printArg`, `printValue` and the
/// `fmt` formatter) for the values templates hold: flags `#0+- `, width and precision
/// (`*` takes them from an `int` argument), argument indexes (`%[2]d`), every verb of
/// bools, integers (`%d %b %o %O %x %X %c %q %U`), floats (`%v %e %E %f %F %g %G %x %X
/// %b`) and strings (`%s %q %x %X`), lists and maps element by element in the same verb,
/// `%T`, and Go's error texts (`%!d(string=x)`, `%!d(MISSING)`, `%!d(BADINDEX)`,
/// `%!(EXTRA int=2)`, `%!(NOVERB)`, `%!(BADWIDTH)`, `%!(BADPREC)`).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer {
        out: String::with_capacity(format.len() + 8),
        f: Flags::default(),
    };
    p.do_printf(format, args);
    p.out
}

/// fmt's `fmtFlags` with the width and precision.
#[derive(Clone, Copy, Default)]
struct Flags {
    wid: usize,
    wid_present: bool,
    prec: usize,
    prec_present: bool,
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
}

struct Printer {
    out: String,
    f: Flags,
}

/// fmt's `tooLarge`.
fn too_large(n: i64) -> bool {
    !(-1_000_000..=1_000_000).contains(&n)
}

/// fmt's `parsenum` on `b[i..]`: the number, whether there was one, and where it ends (the
/// end of the format when the number is too large).
fn parse_num(b: &[u8], mut i: usize) -> (usize, bool, usize) {
    let (mut n, mut is_num) = (0i64, false);
    while i < b.len() && b[i].is_ascii_digit() {
        if too_large(n) {
            return (0, false, b.len());
        }
        n = n * 10 + i64::from(b[i] - b'0');
        is_num = true;
        i += 1;
    }
    (n as usize, is_num, i)
}

/// fmt's `intFromArg`: the argument as a width or precision, when it is an `int`.
fn int_from_arg(args: &[Value], n: usize) -> (i64, bool, usize) {
    match args.get(n) {
        Some(Value::Int(v)) if !too_large(*v) => (*v, true, n + 1),
        Some(_) => (0, false, n + 1),
        None => (0, false, n),
    }
}

impl Printer {
    fn do_printf(&mut self, format: &str, a: &[Value]) {
        let b = format.as_bytes();
        let end = b.len();
        let mut arg_num = 0usize;
        let mut after_index;
        let mut reordered = false;
        // An argument index: `[n]`, one-based.
        let arg_number = |i: usize, arg_num: usize, reordered: &mut bool, good: &mut bool| {
            if i >= end || b[i] != b'[' {
                return (arg_num, i, false);
            }
            *reordered = true;
            let (index, wid, ok) = match b[i..].iter().position(|&c| c == b']') {
                Some(close) if end - i >= 3 => {
                    let (n, is_num, newi) = parse_num(&b[i..i + close], 1);
                    if !is_num || newi != close {
                        (0, close + 1, false)
                    } else {
                        (n as i64 - 1, close + 1, true)
                    }
                }
                _ => (0, 1, false),
            };
            if ok && 0 <= index && (index as usize) < a.len() {
                return (index as usize, i + wid, true);
            }
            *good = false;
            (arg_num, i + wid, ok)
        };
        let mut i = 0;
        while i < end {
            let mut good_arg_num = true;
            let lasti = i;
            while i < end && b[i] != b'%' {
                i += 1;
            }
            if i > lasti {
                self.out.push_str(&format[lasti..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.f = Flags::default();
            while i < end {
                match b[i] {
                    b'#' => self.f.sharp = true,
                    // Only allow zero padding to the left.
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    _ => break,
                }
                i += 1;
            }
            (arg_num, i, after_index) = arg_number(i, arg_num, &mut reordered, &mut good_arg_num);
            if i < end && b[i] == b'*' {
                i += 1;
                let (w, ok, n) = int_from_arg(a, arg_num);
                arg_num = n;
                self.f.wid_present = ok;
                if !ok {
                    self.out.push_str("%!(BADWIDTH)");
                }
                if w < 0 {
                    self.f.minus = true;
                    self.f.zero = false;
                }
                self.f.wid = w.unsigned_abs() as usize;
                after_index = false;
            } else {
                let (w, ok, newi) = parse_num(b, i);
                (self.f.wid, self.f.wid_present, i) = (w, ok, newi);
                if after_index && ok {
                    good_arg_num = false;
                }
            }
            if i + 1 < end && b[i] == b'.' {
                i += 1;
                if after_index {
                    good_arg_num = false;
                }
                (arg_num, i, after_index) =
                    arg_number(i, arg_num, &mut reordered, &mut good_arg_num);
                if i < end && b[i] == b'*' {
                    i += 1;
                    let (pr, ok, n) = int_from_arg(a, arg_num);
                    arg_num = n;
                    // Negative precision arguments don't make sense.
                    self.f.prec_present = ok && pr >= 0;
                    self.f.prec = if pr < 0 { 0 } else { pr as usize };
                    if !self.f.prec_present {
                        self.out.push_str("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (pr, _, newi) = parse_num(b, i);
                    (self.f.prec, self.f.prec_present, i) = (pr, true, newi);
                }
            }
            if !after_index {
                (arg_num, i, _) = arg_number(i, arg_num, &mut reordered, &mut good_arg_num);
            }
            if i >= end {
                self.out.push_str("%!(NOVERB)");
                break;
            }
            let verb = format[i..].chars().next().unwrap_or('%');
            i += verb.len_utf8();
            if verb == '%' {
                // Percent does not absorb operands and ignores the width and precision.
                self.out.push('%');
            } else if !good_arg_num {
                let _ = write!(self.out, "%!{verb}(BADINDEX)");
            } else if arg_num >= a.len() {
                let _ = write!(self.out, "%!{verb}(MISSING)");
            } else {
                if verb == 'v' {
                    self.f.sharp_v = self.f.sharp;
                    self.f.sharp = false;
                    self.f.plus_v = self.f.plus;
                    self.f.plus = false;
                }
                self.print_arg(&a[arg_num], verb);
                arg_num += 1;
            }
        }
        if !reordered && arg_num < a.len() {
            self.f = Flags::default();
            self.out.push_str("%!(EXTRA ");
            for (n, arg) in a[arg_num..].iter().enumerate() {
                if n > 0 {
                    self.out.push_str(", ");
                }
                if let Value::Nil = arg {
                    self.out.push_str("<nil>");
                } else {
                    self.out.push_str(&arg.type_name());
                    self.out.push('=');
                    self.print_arg(arg, 'v');
                }
            }
            self.out.push(')');
        }
    }

    /// fmt's `badVerb`: `%!verb(type=value)`, the value printed with `%v` and the flags.
    fn bad_verb(&mut self, verb: char, v: &Value) {
        let _ = write!(self.out, "%!{verb}(");
        if let Value::Nil = v {
            self.out.push_str("<nil>");
        } else {
            self.out.push_str(&v.type_name());
            self.out.push('=');
            self.print_value(v, 'v');
        }
        self.out.push(')');
    }

    fn print_arg(&mut self, v: &Value, verb: char) {
        match (v, verb) {
            (Value::Nil, 'T' | 'v') => self.pad_str("<nil>"),
            (Value::Nil, _) => self.bad_verb(verb, v),
            (_, 'T') => {
                let t = v.type_name();
                self.fmt_s(&t);
            }
            _ => self.print_value(v, verb),
        }
    }

    /// fmt's `printValue` (a list's or map's items in the same verb).
    fn print_value(&mut self, v: &Value, verb: char) {
        match v {
            // A nil inside a list or map (Go: a nil interface) is `<nil>` whatever the verb.
            Value::Nil if self.f.sharp_v => self.out.push_str("interface {}(nil)"),
            Value::Nil => self.out.push_str("<nil>"),
            Value::Bool(x) => match verb {
                't' | 'v' => self.pad_str(if *x { "true" } else { "false" }),
                _ => self.bad_verb(verb, v),
            },
            Value::Int(n) => self.fmt_int(*n, verb, v),
            Value::Float(x) => self.fmt_float_verb(*x, verb, v),
            Value::Str(s) => self.fmt_string(s, verb, v),
            // Objects are Stringers (`.Release.Name` and the like print their text).
            Value::Object(_) => match verb {
                'v' | 's' | 'x' | 'X' | 'q' => {
                    let text = strval(v);
                    self.fmt_string(&text, verb, v)
                }
                _ => self.bad_verb(verb, v),
            },
            Value::List(l) => {
                if self.f.sharp_v {
                    self.out.push_str("[]interface {}{");
                    for (n, x) in l.iter().enumerate() {
                        if n > 0 {
                            self.out.push_str(", ");
                        }
                        self.print_value(x, verb);
                    }
                    self.out.push('}');
                } else {
                    self.out.push('[');
                    for (n, x) in l.iter().enumerate() {
                        if n > 0 {
                            self.out.push(' ');
                        }
                        self.print_value(x, verb);
                    }
                    self.out.push(']');
                }
            }
            Value::Map(m) => {
                // Go's fmt sorts map keys; a `Dict` is in that order.
                let m = m.borrow();
                self.out.push_str(if self.f.sharp_v {
                    "map[string]interface {}{"
                } else {
                    "map["
                });
                for (n, (k, x)) in m.iter().enumerate() {
                    if n > 0 {
                        self.out.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    self.fmt_string(k, verb, &Value::Str(k.clone()));
                    self.out.push(':');
                    self.print_value(x, verb);
                }
                self.out.push(if self.f.sharp_v { '}' } else { ']' });
            }
        }
    }

    /// fmt's `padString`: `s` padded to the width (with zeros under `0`), on the right
    /// under `-`.
    fn pad_str(&mut self, s: &str) {
        if !self.f.wid_present || self.f.wid == 0 {
            self.out.push_str(s);
            return;
        }
        let n = self.f.wid.saturating_sub(s.chars().count());
        if self.f.minus {
            self.out.push_str(s);
            self.padding(n);
        } else {
            self.padding(n);
            self.out.push_str(s);
        }
    }

    fn padding(&mut self, n: usize) {
        let c = if self.f.zero && !self.f.minus {
            '0'
        } else {
            ' '
        };
        self.out.extend(std::iter::repeat_n(c, n));
    }

    /// fmt's `truncate`: the first `prec` characters.
    fn truncate<'s>(&self, s: &'s str) -> &'s str {
        if self.f.prec_present
            && let Some((i, _)) = s.char_indices().nth(self.f.prec)
        {
            return &s[..i];
        }
        s
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad_str(s);
    }

    fn fmt_string(&mut self, s: &str, verb: char, v: &Value) {
        match verb {
            'v' if self.f.sharp_v => self.fmt_q(s),
            'v' | 's' => self.fmt_s(s),
            'x' => self.fmt_sx(s, false),
            'X' => self.fmt_sx(s, true),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, v),
        }
    }

    /// fmt's `fmtQ`: quoted (backquoted under `#` when it can be, ASCII only under `+`).
    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        let mut q = String::with_capacity(s.len() + 2);
        if self.f.sharp && can_backquote(s) {
            q.push('`');
            q.push_str(s);
            q.push('`');
        } else {
            quote_into(&mut q, s, '"', self.f.plus);
        }
        self.pad_str(&q);
    }

    /// fmt's `fmtSbx`: the bytes in hexadecimal (`% x` spaced, `#` with `0x`).
    fn fmt_sx(&mut self, s: &str, upper: bool) {
        let digits: &[u8; 17] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };
        let mut length = s.len();
        if self.f.prec_present && self.f.prec < length {
            length = self.f.prec;
        }
        let mut width = 2 * length;
        if width == 0 {
            if self.f.wid_present {
                self.padding(self.f.wid);
            }
            return;
        }
        if self.f.space {
            if self.f.sharp {
                width *= 2;
            }
            width += length - 1;
        } else if self.f.sharp {
            width += 2;
        }
        if self.f.wid_present && self.f.wid > width && !self.f.minus {
            self.padding(self.f.wid - width);
        }
        if self.f.sharp {
            self.out.push('0');
            self.out.push(digits[16] as char);
        }
        for (n, c) in s.bytes().take(length).enumerate() {
            if self.f.space && n > 0 {
                self.out.push(' ');
                if self.f.sharp {
                    self.out.push('0');
                    self.out.push(digits[16] as char);
                }
            }
            self.out.push(digits[usize::from(c >> 4)] as char);
            self.out.push(digits[usize::from(c & 0xF)] as char);
        }
        if self.f.wid_present && self.f.wid > width && self.f.minus {
            self.padding(self.f.wid - width);
        }
    }

    fn fmt_int(&mut self, n: i64, verb: char, v: &Value) {
        match verb {
            'v' | 'd' => self.fmt_integer(n, 10, verb, false),
            'b' => self.fmt_integer(n, 2, verb, false),
            'o' | 'O' => self.fmt_integer(n, 8, verb, false),
            'x' => self.fmt_integer(n, 16, verb, false),
            'X' => self.fmt_integer(n, 16, verb, true),
            'c' => {
                let c = char_of(n);
                self.pad_str(c.encode_utf8(&mut [0; 4]));
            }
            'q' => {
                let mut q = String::new();
                quote_into(
                    &mut q,
                    char_of(n).encode_utf8(&mut [0; 4]),
                    '\'',
                    self.f.plus,
                );
                self.pad_str(&q);
            }
            'U' => self.fmt_unicode(n as u64),
            _ => self.bad_verb(verb, v),
        }
    }

    /// fmt's `fmtInteger` for a signed integer.
    fn fmt_integer(&mut self, a: i64, base: u64, verb: char, upper: bool) {
        let digits: &[u8; 17] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };
        let negative = a < 0;
        let mut u = a.unsigned_abs();
        // Two ways to ask for leading zeros, %.3d and %03d; with both the zero flag is
        // ignored and the padding is spaces.
        let mut prec = 0;
        if self.f.prec_present {
            prec = self.f.prec;
            // Precision 0 and value 0 is nothing but padding.
            if prec == 0 && u == 0 {
                let zero = self.f.zero;
                self.f.zero = false;
                self.padding(self.f.wid);
                self.f.zero = zero;
                return;
            }
        } else if self.f.zero && !self.f.minus && self.f.wid_present {
            prec = self.f.wid;
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1); // room for the sign
            }
        }
        let mut buf: Vec<u8> = Vec::with_capacity(prec.max(24));
        loop {
            buf.push(digits[(u % base) as usize]);
            u /= base;
            if u == 0 {
                break;
            }
        }
        while buf.len() < prec {
            buf.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => buf.extend_from_slice(b"b0"),
                8 if buf.last() != Some(&b'0') => buf.push(b'0'),
                16 => {
                    buf.push(digits[16]);
                    buf.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            buf.extend_from_slice(b"o0");
        }
        if negative {
            buf.push(b'-');
        } else if self.f.plus {
            buf.push(b'+');
        } else if self.f.space {
            buf.push(b' ');
        }
        buf.reverse();
        let text = String::from_utf8_lossy(&buf).into_owned();
        // Zero padding was done as precision above (or is ignored for it).
        let zero = self.f.zero;
        self.f.zero = false;
        self.pad_str(&text);
        self.f.zero = zero;
    }

    /// fmt's `fmtUnicode`: `U+0041`, `U+0041 'A'` under `#`.
    fn fmt_unicode(&mut self, u: u64) {
        let mut prec = 4;
        if self.f.prec_present && self.f.prec > 4 {
            prec = self.f.prec;
        }
        // Zeros padded by hand: Rust's width stops at 65,535 (a panic past it), Go's
        // precision at 10^6.
        let hex = format!("{u:X}");
        let mut text = format!("U+{}{hex}", "0".repeat(prec.saturating_sub(hex.len())));
        if self.f.sharp
            && let Some(c) = u32::try_from(u).ok().and_then(char::from_u32)
            && super::unicode::is_print(c)
        {
            let _ = write!(text, " '{c}'");
        }
        let zero = self.f.zero;
        self.f.zero = false;
        self.pad_str(&text);
        self.f.zero = zero;
    }

    fn fmt_float_verb(&mut self, x: f64, verb: char, v: &Value) {
        match verb {
            'v' => self.fmt_float(x, 'g', None),
            'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(x, verb, None),
            'f' | 'e' | 'E' => self.fmt_float(x, verb, Some(6)),
            'F' => self.fmt_float(x, 'f', Some(6)),
            _ => self.bad_verb(verb, v),
        }
    }

    /// fmt's `fmtFloat`: strconv's formatting of `x` in `verb` at the precision (the
    /// flag's, else `prec`; `None` the shortest), with the sign rules of `+`, ` ` and `0`,
    /// and `#` keeping the decimal point and trailing zeros.
    fn fmt_float(&mut self, x: f64, verb: char, prec: Option<usize>) {
        let prec = if self.f.prec_present {
            Some(self.f.prec)
        } else {
            prec
        };
        let text = format_float_verb(x, verb, prec);
        let mut num: Vec<u8> = Vec::with_capacity(text.len() + 8);
        if !text.starts_with(['-', '+']) {
            num.push(b'+');
        }
        num.extend_from_slice(text.as_bytes());
        if self.f.space && num[0] == b'+' && !self.f.plus {
            num[0] = b' ';
        }
        // Infinities and NaN are not padded with zeros.
        if num[1] == b'I' || num[1] == b'N' {
            let zero = self.f.zero;
            self.f.zero = false;
            let start = usize::from(num[1] == b'N' && !self.f.space && !self.f.plus);
            let s = String::from_utf8_lossy(&num[start..]).into_owned();
            self.pad_str(&s);
            self.f.zero = zero;
            return;
        }
        if self.f.sharp && verb != 'b' {
            let mut digits: i64 = match verb {
                'v' | 'g' | 'G' | 'x' => prec.map_or(6, |p| p as i64),
                _ => 0,
            };
            let mut tail: Vec<u8> = Vec::new();
            let mut has_point = false;
            let mut nonzero = false;
            let mut k = 1;
            while k < num.len() {
                match num[k] {
                    b'.' => has_point = true,
                    b'p' | b'P' => {
                        tail = num.split_off(k);
                        break;
                    }
                    b'e' | b'E' if verb != 'x' && verb != 'X' => {
                        tail = num.split_off(k);
                        break;
                    }
                    c => {
                        if c != b'0' {
                            nonzero = true;
                        }
                        if nonzero {
                            digits -= 1;
                        }
                    }
                }
                k += 1;
            }
            if !has_point {
                // A leading digit 0 counts once.
                if num.len() == 2 && num[1] == b'0' {
                    digits -= 1;
                }
                num.push(b'.');
            }
            while digits > 0 {
                num.push(b'0');
                digits -= 1;
            }
            num.extend_from_slice(&tail);
        }
        let s = String::from_utf8_lossy(&num).into_owned();
        if self.f.plus || num[0] != b'+' {
            // Zero padding goes after the sign.
            if self.f.zero && !self.f.minus && self.f.wid_present && self.f.wid > num.len() {
                self.out.push(num[0] as char);
                self.padding(self.f.wid - num.len());
                self.out.push_str(&s[1..]);
                return;
            }
            self.pad_str(&s);
            return;
        }
        self.pad_str(&s[1..]);
    }
}

/// A rune as `%c` and `%q` take it: U+FFFD when not a Unicode scalar value.
fn char_of(n: i64) -> char {
    u32::try_from(n)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}')
}

/// More decimal digits than any float64 has after its point (2^-1074 has 1,074).
const EXACT_DIGITS: usize = 1100;

/// `strconv.FormatFloat(x, verb, prec, 64)` for `e E f g G b x X`; `None` the shortest.
fn format_float_verb(x: f64, verb: char, prec: Option<usize>) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    // Rust's precision stops at 65,535 (a panic past it, `printf "%.65536f"`); Go's goes to
    // about 10^7. No float64 has a nonzero decimal digit past the 1,074th, so the digits
    // are computed up to there and the rest are zeros.
    let (prec, zeros) = match prec {
        Some(p) if p > EXACT_DIGITS && matches!(verb, 'e' | 'E' | 'f') => {
            (Some(EXACT_DIGITS), p - EXACT_DIGITS)
        }
        Some(p) if matches!(verb, 'g' | 'G') => (Some(p.min(EXACT_DIGITS)), 0),
        p => (p, 0),
    };
    match verb {
        'e' | 'E' => {
            let s = match prec {
                Some(p) => go_exp(format!("{x:.p$e}")),
                None => go_exp(format!("{x:e}")),
            };
            let s = match s.split_once('e') {
                Some((m, e)) if zeros > 0 => format!("{m}{}e{e}", "0".repeat(zeros)),
                _ => s,
            };
            if verb == 'E' { s.to_uppercase() } else { s }
        }
        'f' => match prec {
            Some(p) => format!("{x:.p$}{}", "0".repeat(zeros)),
            None => format!("{x}"),
        },
        'g' | 'G' => {
            let s = match prec {
                Some(p) => format_g_prec(x, p),
                None => format_float_g(x),
            };
            if verb == 'G' { s.to_uppercase() } else { s }
        }
        'b' => {
            let bits = x.to_bits();
            let mut exp = ((bits >> 52) & 0x7ff) as i64;
            let mut mant = bits & ((1 << 52) - 1);
            if exp == 0 {
                exp += 1;
            } else {
                mant |= 1 << 52;
            }
            exp += -1023 - 52;
            let sign = if x.is_sign_negative() { "-" } else { "" };
            format!("{sign}{mant}p{}{exp}", if exp >= 0 { "+" } else { "" })
        }
        _ => hex_float(x, prec, verb == 'X'),
    }
}

/// strconv's `%x` of a float: `-0x1.yyyp±dd`, `0x0p+00` for zero.
fn hex_float(x: f64, prec: Option<usize>, upper: bool) -> String {
    let bits = x.to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i64;
    let mut mant = bits & ((1 << 52) - 1);
    if exp == 0 {
        exp += 1;
    } else {
        mant |= 1 << 52;
    }
    exp -= 1023;
    if mant == 0 {
        exp = 0;
    }
    // The leading 1 (if any) at bit 60.
    mant <<= 60 - 52;
    while mant != 0 && mant & (1 << 60) == 0 {
        mant <<= 1;
        exp -= 1;
    }
    if let Some(p) = prec.filter(|&p| p < 15) {
        let shift = p as u32 * 4;
        let extra = (mant << shift) & ((1 << 60) - 1);
        mant >>= 60 - shift;
        if extra | (mant & 1) > 1 << 59 {
            mant += 1;
        }
        mant <<= 60 - shift;
        if mant & (1 << 61) != 0 {
            mant >>= 1;
            exp += 1;
        }
    }
    let hex: &[u8; 16] = if upper {
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let mut out = String::new();
    if x.is_sign_negative() {
        out.push('-');
    }
    out.push('0');
    out.push(if upper { 'X' } else { 'x' });
    out.push(char::from(b'0' + ((mant >> 60) & 1) as u8));
    mant <<= 4;
    match prec {
        None if mant != 0 => {
            out.push('.');
            while mant != 0 {
                out.push(hex[((mant >> 60) & 15) as usize] as char);
                mant <<= 4;
            }
        }
        Some(p) if p > 0 => {
            out.push('.');
            for _ in 0..p {
                out.push(hex[((mant >> 60) & 15) as usize] as char);
                mant <<= 4;
            }
        }
        _ => {}
    }
    out.push(if upper { 'P' } else { 'p' });
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(out, "{:02}", exp.abs());
    out
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

/// strconv's `%g` at a precision (`%.0g` is `%.1g`): `%e` when the exponent is below -4 or
/// at least the precision, trailing zeros dropped.
fn format_g_prec(f: f64, p: usize) -> String {
    let p = p.max(1);
    let s = format!("{:.*e}", p - 1, f);
    let exp: i32 = s
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let s = go_exp(s);
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

/// Where a Go string holds a byte that is not UTF-8: kiln's strings are UTF-8, so such a byte
/// stands as one character of the last private-use block, U+10FF00 + the byte (Python's
/// surrogateescape, in a range no chart text uses), and [`go_bytes`] gives Go's bytes back.
/// `.Files.Get` of a binary file is so `b64enc`-ed, hashed and measured as in Helm, where a
/// lossy conversion made each bad byte three.
const BYTE_ESCAPE: u32 = 0x10_FF00;

/// Go's `string(b)`.
pub fn go_text(d: &[u8]) -> String {
    let mut rest = match std::str::from_utf8(d) {
        Ok(t) => return t.to_owned(),
        Err(_) => d,
    };
    let mut out = String::with_capacity(d.len() + 16);
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(t) => {
                out.push_str(t);
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                let bad = e.error_len().unwrap_or(after.len());
                out.extend(
                    after[..bad]
                        .iter()
                        .filter_map(|&b| char::from_u32(BYTE_ESCAPE + u32::from(b))),
                );
                rest = &after[bad..];
            }
        }
    }
    out
}

/// A character [`go_text`] made of a byte.
pub fn is_byte_escape(c: char) -> bool {
    (BYTE_ESCAPE..=BYTE_ESCAPE + 0xFF).contains(&(c as u32))
}

/// The bytes of a Go string: [`go_text`]'s escapes as the bytes they stand for.
pub fn go_bytes(s: &str) -> std::borrow::Cow<'_, [u8]> {
    // Every escape's UTF-8 starts with 0xF4, which little text holds.
    if !s.as_bytes().contains(&0xF4) {
        return std::borrow::Cow::Borrowed(s.as_bytes());
    }
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        if is_byte_escape(c) {
            out.push((c as u32 - BYTE_ESCAPE) as u8);
        } else {
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Widths and precisions as large as Go's fmt takes (up to about 10^7) print, where
    /// Rust's formatter panicked past 65,535 (issue 39, item 8); lengths from Helm v4.2.3.
    #[test]
    fn huge_precisions_and_widths_print_as_go_prints_them() {
        let len = |f: &str, v: Value| sprintf(f, &[v]).len();
        assert_eq!(len("%.65536f", Value::Float(1.5)), 65538);
        assert_eq!(len("%65536d", Value::Int(1)), 65536);
        assert_eq!(len("%.70000e", Value::Float(1.5)), 70006);
        assert_eq!(len("%.70000g", Value::Float(1.5)), 3);
        assert_eq!(len("%.1000001f", Value::Float(1.5)), 1_000_003);
        assert_eq!(len("%.70000U", Value::Int(65)), 70002);
        assert!(
            sprintf("%.2000f", &[Value::Float(0.1)])
                .starts_with("0.1000000000000000055511151231257827")
        );
    }

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

    /// Helm 4.2.3's `printf` (Go's fmt) at its edges: signs before hex digits, precision
    /// on integers, zero padding of strings, `%U`, `*` widths, argument indexes, lists in
    /// the element's verb, an `int` to a float verb, and the error texts.
    #[test]
    fn sprintf_edges_are_gos() {
        let (i, f, st) = (Value::Int, Value::Float, Value::str);
        let l = |v: Vec<Value>| Value::List(std::rc::Rc::new(v));
        for (format, args, want) in [
            (
                "%x|%X|%#x|%b|%o",
                vec![i(-255), i(-255), i(-255), i(-5), i(-8)],
                "-ff|-FF|-0xff|-101|-10",
            ),
            (
                "%.3d|%.3d|%6.3d|%-6.3d|%06.3d",
                vec![i(7), i(-7), i(7), i(7), i(7)],
                "007|-007|   007|007   |   007",
            ),
            ("%.0d|%5.0d|", vec![i(0), i(0)], "|     |"),
            (
                "%05s|%-05s|%05q|%08s",
                vec![st("ab"), st("ab"), st("ab"), st("ab")],
                "000ab|ab   |0\"ab\"|000000ab",
            ),
            (
                "%U|%#U|%U|%.6U|%8U|",
                vec![i(65), i(65), i(128512), i(65), i(65)],
                "U+0041|U+0041 'A'|U+1F600|U+000041|  U+0041|",
            ),
            (
                "%U|%#U|%c|%q",
                vec![i(-1), i(160), i(-1), i(160)],
                "U+FFFFFFFFFFFFFFFF|U+00A0|\u{fffd}|'\\u00a0'",
            ),
            (
                "%*d|%-*d|%*d|%.*f|%*.*f",
                vec![
                    i(5),
                    i(3),
                    i(5),
                    i(3),
                    i(-5),
                    i(3),
                    i(2),
                    f(3.14158),
                    i(8),
                    i(2),
                    f(3.14158),
                ],
                "    3|3    |3    |3.14|    3.14",
            ),
            ("%[2]d %[1]d", vec![i(1), i(2)], "2 1"),
            ("%[2]d %d", vec![i(1), i(2), i(3)], "2 3"),
            (
                "%[3]d|%[0]d|%[x]d",
                vec![i(1), i(2)],
                "%!d(BADINDEX)|%!d(BADINDEX)|%!d(BADINDEX)",
            ),
            (
                "%[2]*[1]d|%3.[2]d|%[2]3d",
                vec![i(3), i(5)],
                "    3|  5|%!d(BADINDEX)",
            ),
            (
                "%*d|%.*d|%*d",
                vec![st("x"), i(3), f(1.5), i(3), i(10000000), i(3)],
                "%!(BADWIDTH)3|%!(BADPREC)3|%!(BADWIDTH)3",
            ),
            (
                "%d|%v|%s|%x|%6.2f",
                vec![
                    l(vec![i(1), i(2)]),
                    l(vec![i(1), st("a")]),
                    l(vec![i(1), st("a")]),
                    l(vec![i(10), i(11)]),
                    l(vec![f(1.5), f(2.25)]),
                ],
                "[1 2]|[1 a]|[%!s(int=1) a]|[a b]|[  1.50   2.25]",
            ),
            (
                "%q|%10v|",
                vec![l(vec![i(1), st("a")]), l(vec![i(1), i(2)])],
                "['\\x01' \"a\"]|[         1          2]|",
            ),
            (
                "%d|%s|%#v",
                vec![
                    l(vec![Value::Nil]),
                    l(vec![Value::Nil]),
                    l(vec![Value::Nil]),
                ],
                "[<nil>]|[<nil>]|[]interface {}{interface {}(nil)}",
            ),
            (
                "%f|%g|%e|%f",
                vec![i(3), i(3), i(3), f(1.0)],
                "%!f(int=3)|%!g(int=3)|%!e(int=3)|1.000000",
            ),
            (
                "%5.1f|%-8s|%+d",
                vec![f(3.14158), st("x"), i(5)],
                "  3.1|x       |+5",
            ),
            (
                "%08.3f|%+08.2f|%-08.2f|% .2f",
                vec![f(-3.14158), f(3.0), f(3.0), f(3.0)],
                "-003.142|+0003.00|3.00    | 3.00",
            ),
            (
                "%x|%X|%.2x|%x|%b",
                vec![f(3.5), f(-3.5), f(3.5), f(0.0), f(4.0)],
                "0x1.cp+01|-0X1.CP+01|0x1.c0p+01|0x0p+00|4503599627370496p-50",
            ),
            (
                "%#g|%#.3g|%#.0f|%#.0e|%#x",
                vec![f(1.0), f(1.0), f(1.0), f(1.0), f(1.0)],
                "1.00000|1.00|1.|1.e+00|0x1.0000p+00",
            ),
            (
                "%E|%G|%.3g|%.0g|%10.4g|",
                vec![f(0.000123), f(1e21), f(100.0), f(12.0), f(3.14158)],
                "1.230000E-04|1E+21|100|1e+01|     3.142|",
            ),
            (
                "% x|%#x|% #x|%.1x|%-6x|%5x|",
                vec![st("hello"), st("ab"), st("ab"), st("abc"), st("ab"), st("")],
                "68 65 6c 6c 6f|0x6162|0x61 0x62|61|6162  |     |",
            ),
            (
                "%#q|%#q|%+q|%.1q",
                vec![st("ab"), st("a`b"), st("é"), st("abc")],
                "`ab`|\"a`b\"|\"\\u00e9\"|\"a\"",
            ),
            (
                "%5s|%x|%05t|%05c|",
                vec![i(5), Value::Bool(true), Value::Bool(true), i(65)],
                "%!s(int=    5)|%!x(bool=true)|0true|0000A|",
            ),
            (
                "%#v|%#v|%#v|%+v",
                vec![st("hi"), i(5), f(1.0), l(vec![i(1), i(-1)])],
                "\"hi\"|5|1|[1 -1]",
            ),
            ("%d %d %[1]d %d", vec![i(1), i(2)], "1 2 1 2"),
            (
                "%d|%s %s|%!|%",
                vec![i(1), st("a")],
                "1|a %!s(MISSING)|%!!(MISSING)|%!(NOVERB)",
            ),
            (
                "%d",
                vec![i(1), Value::Nil, st("x")],
                "1%!(EXTRA <nil>, string=x)",
            ),
            (
                "%ñ|%-+ #0d|%O|%#o|%#b",
                vec![i(1), i(5), i(8), i(0), i(-5)],
                "%!ñ(int=1)|+5|0o10|0|-0b101",
            ),
        ] {
            assert_eq!(sprintf(format, &args), want, "{format}");
        }
    }

    /// `%q` and `quote` escape what `strconv.IsPrint` refuses, spaces past ASCII included.
    #[test]
    fn quote_escapes_what_go_cannot_print() {
        assert_eq!(go_quote("a\u{a0}b"), "\"a\\u00a0b\"");
        assert_eq!(go_quote("a\u{200b}b\u{feff}"), "\"a\\u200bb\\ufeff\"");
        assert_eq!(go_quote("é\u{301}\u{2028}"), "\"é\u{301}\\u2028\"");
    }
}
