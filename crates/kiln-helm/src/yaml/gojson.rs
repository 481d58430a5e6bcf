//! The syntax check of Go's `encoding/json` (`scanner.go`: `checkValid` and its state
//! machine), for the error texts Helm's `fromJson`/`fromJsonArray` put under `Error` (issue
//! 37): `json.Unmarshal` scans the whole input with this machine before it decodes, and its
//! first complaint is the error, e.g. `invalid character '}' in literal true (expecting 'e')`
//! or `unexpected end of JSON input`. serde_json, which reads the value afterwards, words its
//! errors otherwise.

use crate::template::value::Dict;
use crate::template::value::Value;
use std::borrow::Cow;
use std::rc::Rc;

/// What the scanner expects next: one state of `scanner.go` each.
#[derive(Clone, Copy, PartialEq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside `true`, `false` or `null`: the literal and how many bytes are read.
    Literal(&'static str, usize),
}

/// `parseObjectKey`, `parseObjectValue`, `parseArrayValue`.
#[derive(Clone, Copy, PartialEq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's `quoteChar`: the byte in single quotes, escaped as `strconv.Quote` escapes it.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".into(),
        b'"' => "'\"'".into(),
        _ => {
            let ch = char::from(c);
            let q = crate::template::fmt::go_quote(&ch.to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

struct Scanner {
    state: State,
    stack: Vec<Parse>,
}

impl Scanner {
    /// `stateEndValue` after a value ends, with `c` the byte that ended it (or the space
    /// `eof` feeds).
    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.stack.last() else {
            self.state = State::EndTop;
            return self.step(c);
        };
        if is_space(c) {
            self.state = State::EndValue;
            return Ok(());
        }
        match (top, c) {
            (Parse::ObjectKey, b':') => {
                *self.stack.last_mut().expect("non-empty") = Parse::ObjectValue;
                self.state = State::BeginValue;
            }
            (Parse::ObjectKey, _) => return Err(invalid(c, "after object key")),
            (Parse::ObjectValue, b',') => {
                *self.stack.last_mut().expect("non-empty") = Parse::ObjectKey;
                self.state = State::BeginString;
            }
            (Parse::ObjectValue, b'}') | (Parse::ArrayValue, b']') => {
                self.stack.pop();
                self.state = State::EndValue;
                if self.stack.is_empty() {
                    self.state = State::EndTop;
                }
            }
            (Parse::ObjectValue, _) => return Err(invalid(c, "after object key:value pair")),
            (Parse::ArrayValue, b',') => self.state = State::BeginValue,
            (Parse::ArrayValue, _) => return Err(invalid(c, "after array element")),
        }
        Ok(())
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        self.state = match c {
            b'{' => {
                self.stack.push(Parse::ObjectKey);
                State::BeginStringOrEmpty
            }
            b'[' => {
                self.stack.push(Parse::ArrayValue);
                State::BeginValueOrEmpty
            }
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Zero,
            b'1'..=b'9' => State::One,
            b't' => State::Literal("true", 1),
            b'f' => State::Literal("false", 1),
            b'n' => State::Literal("null", 1),
            _ => return Err(invalid(c, "looking for beginning of value")),
        };
        Ok(())
    }

    fn step(&mut self, c: u8) -> Result<(), String> {
        match self.state {
            State::BeginValue => self.begin_value(c),
            State::BeginValueOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b']' {
                    self.end_value(c)
                } else {
                    self.begin_value(c)
                }
            }
            State::BeginStringOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b'}' {
                    *self.stack.last_mut().expect("an object") = Parse::ObjectValue;
                    self.end_value(c)
                } else {
                    self.state = State::BeginString;
                    self.step(c)
                }
            }
            State::BeginString => match c {
                _ if is_space(c) => Ok(()),
                b'"' => {
                    self.state = State::InString;
                    Ok(())
                }
                _ => Err(invalid(c, "looking for beginning of object key string")),
            },
            State::EndValue => self.end_value(c),
            State::EndTop => {
                if is_space(c) {
                    Ok(())
                } else {
                    Err(invalid(c, "after top-level value"))
                }
            }
            State::InString => {
                match c {
                    b'"' => self.state = State::EndValue,
                    b'\\' => self.state = State::InStringEsc,
                    0..0x20 => return Err(invalid(c, "in string literal")),
                    _ => {}
                }
                Ok(())
            }
            State::InStringEsc => {
                self.state = match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                    b'u' => State::InStringEscU(0),
                    _ => return Err(invalid(c, "in string escape code")),
                };
                Ok(())
            }
            State::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return Err(invalid(c, "in \\u hexadecimal character escape"));
                }
                self.state = if n == 3 {
                    State::InString
                } else {
                    State::InStringEscU(n + 1)
                };
                Ok(())
            }
            State::Neg => {
                self.state = match c {
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::One,
                    _ => return Err(invalid(c, "in numeric literal")),
                };
                Ok(())
            }
            State::One if c.is_ascii_digit() => Ok(()),
            State::One | State::Zero => match c {
                b'.' => {
                    self.state = State::Dot;
                    Ok(())
                }
                b'e' | b'E' => {
                    self.state = State::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::Dot => {
                if !c.is_ascii_digit() {
                    return Err(invalid(c, "after decimal point in numeric literal"));
                }
                self.state = State::Dot0;
                Ok(())
            }
            State::Dot0 => match c {
                b'0'..=b'9' => Ok(()),
                b'e' | b'E' => {
                    self.state = State::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::E if matches!(c, b'+' | b'-') => {
                self.state = State::ESign;
                Ok(())
            }
            State::E | State::ESign => {
                if !c.is_ascii_digit() {
                    return Err(invalid(c, "in exponent of numeric literal"));
                }
                self.state = State::E0;
                Ok(())
            }
            State::E0 if c.is_ascii_digit() => Ok(()),
            State::E0 => self.end_value(c),
            State::Literal(word, i) => {
                let want = word.as_bytes()[i];
                if c != want {
                    return Err(invalid(
                        c,
                        &format!("in literal {word} (expecting {})", quote_char(want)),
                    ));
                }
                self.state = if i + 1 == word.len() {
                    State::EndValue
                } else {
                    State::Literal(word, i + 1)
                };
                Ok(())
            }
        }
    }
}

/// Go's `checkValid`: `None` when `text` is one JSON value, else the `SyntaxError` text
/// `json.Unmarshal` returns.
pub fn syntax_error(text: &str) -> Option<String> {
    let mut s = Scanner {
        state: State::BeginValue,
        stack: Vec::new(),
    };
    for &c in text.as_bytes() {
        if let Err(e) = s.step(c) {
            return Some(e);
        }
    }
    // `eof`: done at the top level, or one space to end a trailing number.
    if s.state == State::EndTop {
        return None;
    }
    if let Err(e) = s.step(b' ') {
        return Some(e);
    }
    (s.state != State::EndTop).then(|| "unexpected end of JSON input".to_string())
}

/// `json.Unmarshal` into `interface{}` for the texts that are plainly JSON: objects (a
/// repeated key's last value wins), arrays, strings, numbers as float64, `true`, `false`,
/// `null`, made into kiln's values directly (serde_json's tree and its copy were two thirds
/// of `fromJson`'s time). `None` for anything else, and for what the two readers might
/// read apart (a surrogate escape, a number past float64, nesting over 100 deep, text after
/// the value): the caller then reads it the general way (`yaml::from_json`), which also
/// words the errors.
pub fn read(text: &str) -> Option<Value> {
    let mut r = Read {
        b: text.as_bytes(),
        s: text,
        i: 0,
    };
    let v = r.value(0)?;
    r.space();
    (r.i == r.b.len()).then_some(v)
}

struct Read<'t> {
    b: &'t [u8],
    s: &'t str,
    i: usize,
}

impl<'t> Read<'t> {
    fn space(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > 100 {
            return None;
        }
        self.space();
        match *self.b.get(self.i)? {
            b'{' => {
                self.i += 1;
                // Collected, then sorted once (`Dict`'s `FromIterator`; the last of a
                // repeated key wins, as encoding/json's does).
                let mut m: Vec<(Rc<str>, Value)> = Vec::new();
                self.space();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Some(Value::map(Dict::new()));
                }
                loop {
                    self.space();
                    let k: Rc<str> = Rc::from(&*self.string()?);
                    self.space();
                    if self.b.get(self.i) != Some(&b':') {
                        return None;
                    }
                    self.i += 1;
                    let v = self.value(depth + 1)?;
                    m.push((k, v));
                    self.space();
                    match self.b.get(self.i)? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(Value::map(m.into_iter().collect()));
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut l = Vec::new();
                self.space();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Some(Value::list(l));
                }
                loop {
                    l.push(self.value(depth + 1)?);
                    self.space();
                    match self.b.get(self.i)? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(Value::list(l));
                        }
                        _ => return None,
                    }
                }
            }
            // A string value is made its `Rc<str>` straight from the text when it has no
            // escape (nearly always): a `String` first was an allocation, a copy and a free
            // more per string (nats reads its values back from JSON several times).
            b'"' => self.string().map(|t| Value::Str(Rc::from(&*t))),
            b't' => self.word("true", Value::Bool(true)),
            b'f' => self.word("false", Value::Bool(false)),
            b'n' => self.word("null", Value::Nil),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn word(&mut self, w: &str, v: Value) -> Option<Value> {
        if self.b[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Some(v)
        } else {
            None
        }
    }

    /// RFC 8259's number grammar, read as a float64 (correctly rounded, as Go's
    /// `strconv.ParseFloat`); one past float64's range is the general path's.
    fn number(&mut self) -> Option<Value> {
        let start = self.i;
        let digits = |r: &mut Self| {
            let from = r.i;
            while r.b.get(r.i).is_some_and(u8::is_ascii_digit) {
                r.i += 1;
            }
            r.i - from
        };
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        match self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return None;
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        let f: f64 = self.s[start..self.i].parse().ok()?;
        f.is_finite().then_some(Value::Float(f))
    }

    /// A string from its opening quote: escapes decoded; a control character, a bad escape
    /// or any `\u` surrogate is `None`. Borrowed from the text when it holds no escape, so
    /// the caller copies it once, into the form it keeps (a key's `String`, a value's
    /// `Rc<str>`).
    fn string(&mut self) -> Option<Cow<'t, str>> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let start = self.i;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    let t = &self.s[start..self.i];
                    self.i += 1;
                    return Some(Cow::Borrowed(t));
                }
                b'\\' => break,
                0..0x20 => return None,
                _ => self.i += 1,
            }
        }
        let mut out = String::from(&self.s[start..self.i]);
        let mut run = self.i;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    out.push_str(&self.s[run..self.i]);
                    self.i += 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    out.push_str(&self.s[run..self.i]);
                    let c = match *self.b.get(self.i + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hex = self.s.get(self.i + 2..self.i + 6)?;
                            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) {
                                return None;
                            }
                            let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                            self.i += 4;
                            c
                        }
                        _ => return None,
                    };
                    out.push(c);
                    self.i += 2;
                    run = self.i;
                }
                0..0x20 => return None,
                _ => self.i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{read, syntax_error};

    #[test]
    fn go_texts() {
        // Each right-hand side is Go 1.26's `json.Unmarshal` error for the left-hand side.
        for (text, want) in [
            ("", "unexpected end of JSON input"),
            ("{", "unexpected end of JSON input"),
            ("[1,", "unexpected end of JSON input"),
            (
                r#"{"a": tru}"#,
                "invalid character '}' in literal true (expecting 'e')",
            ),
            (
                r#"{"a":1} x"#,
                "invalid character 'x' after top-level value",
            ),
            (
                "{a:1}",
                "invalid character 'a' looking for beginning of object key string",
            ),
            (r#"{"a" 1}"#, "invalid character '1' after object key"),
            (
                r#"{"a":1 "b":2}"#,
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                "1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            ("01", "invalid character '1' after top-level value"),
            ("-x", "invalid character 'x' in numeric literal"),
            (
                "1e+",
                "invalid character ' ' in exponent of numeric literal",
            ),
            (
                "'a'",
                "invalid character '\\'' looking for beginning of value",
            ),
            ("\"a\tb\"", "invalid character '\\t' in string literal"),
            (r#""\x""#, "invalid character 'x' in string escape code"),
            (
                r#""\u12g4""#,
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
        ] {
            assert_eq!(syntax_error(text).as_deref(), Some(want), "{text:?}");
        }
        for ok in [
            "{}",
            "[]",
            " [1, 2.5e3, -0, true, false, null, \"\\u00e9\"] ",
            r#"{"a":{"b":[]}}"#,
        ] {
            assert_eq!(syntax_error(ok), None, "{ok:?}");
        }
    }

    /// `yaml::from_json` runs Go's check only when serde_json fails to read a text: that is
    /// exact only if every text serde_json reads passes Go's check. Random texts from JSON
    /// pieces (valid values, mutated): whenever serde_json reads one, Go's check passes.
    #[test]
    fn what_serde_json_reads_go_checks_valid() {
        use crate::testutil::Rng;
        const PIECES: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\t",
            "\n",
            "\r",
            "\"",
            "\"a\"",
            "\"\\u00e9\"",
            "\"\\ud800\"",
            "\"\\n\"",
            "\"\\x\"",
            "\\",
            "0",
            "-0",
            "01",
            "1.5",
            "1.",
            ".5",
            "1e5",
            "1E+5",
            "1e-",
            "-",
            "+1",
            "true",
            "tru",
            "false",
            "null",
            "nul",
            "NaN",
            "Infinity",
            "é",
            "\u{1}",
            "\u{7f}",
            "/",
            "#",
            "'a'",
            "1e400",
            "123456789012345678901",
        ];
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let (mut read, mut total) = (0, 0);
        for _ in 0..200_000 {
            let mut t = String::new();
            for _ in 0..1 + rng.below(12) {
                t.push_str(rng.pick(PIECES));
            }
            total += 1;
            if serde_json::from_str::<serde_json::Value>(&t).is_ok() {
                read += 1;
                assert_eq!(syntax_error(&t), None, "serde_json reads {t:?}");
            }
        }
        // Enough of them are JSON for this to test something.
        assert!(read * 50 > total, "{read} of {total} read");
    }

    /// A string is borrowed up to its first escape and decoded from there: the plain run
    /// before an escape is kept, in keys and values alike, and a control character after a
    /// plain run still refuses the text (the general path then words Go's error).
    #[test]
    fn strings_are_borrowed_until_an_escape() {
        use crate::template::value::Value;
        let v = read(r#"{"plain":"abc","k\u0041y":"x\ny\u00e9z","":"","e":"\"q\""}"#)
            .expect("valid JSON");
        let Value::Map(m) = v else {
            panic!("an object")
        };
        let m = m.borrow();
        let get = |k: &str| m.get(k).and_then(|v| v.as_str().map(str::to_string));
        assert_eq!(get("plain").as_deref(), Some("abc"));
        assert_eq!(get("kAy").as_deref(), Some("x\nyéz"));
        assert_eq!(get("").as_deref(), Some(""));
        assert_eq!(get("e").as_deref(), Some("\"q\""));
        assert!(read("\"ab\u{1}c\"").is_none());
        assert!(read("\"ab\\n\u{1}\"").is_none());
        assert!(read("\"ab").is_none());
        assert!(read("\"ab\\").is_none());
    }

    /// The direct reader gives what serde_json's tree gives, made a value the general way,
    /// on random JSON (valid, and valid then mutated), and reads none that serde_json refuses.
    #[test]
    fn the_direct_read_is_serde_jsons() {
        use crate::template::value::Value;
        use crate::template::value::same;
        use crate::testutil::Rng;
        fn make(rng: &mut Rng, depth: u32, out: &mut String) {
            const SCALARS: &[&str] = &[
                "0",
                "-0",
                "1",
                "-12",
                "1.5",
                "1e3",
                "1E-2",
                "-0.0e+0",
                "123456789012345678901",
                "1e308",
                "2.2250738585072014e-308",
                "0.1",
                "true",
                "false",
                "null",
                "\"\"",
                "\"a\"",
                "\"é\\u00e9\\n\\t\\\"\\/\\\\\"",
                "\"\\ud83d\\ude00\"",
                "\"x y\"",
            ];
            match rng.below(if depth == 0 { 1 } else { 4 }) {
                0 | 1 => out.push_str(rng.pick(SCALARS)),
                2 => {
                    out.push('[');
                    for i in 0..rng.below(4) {
                        if i > 0 {
                            out.push_str(rng.pick(&[",", ", ", " ,\n"]));
                        }
                        make(rng, depth - 1, out);
                    }
                    out.push(']');
                }
                _ => {
                    out.push('{');
                    for i in 0..rng.below(4) {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(rng.pick(&[
                            "\"a\"",
                            "\"b\"",
                            "\"a\"",
                            "\"\\u0041\"",
                            " \"k\" ",
                        ]));
                        out.push_str(rng.pick(&[":", " : "]));
                        make(rng, depth - 1, out);
                    }
                    out.push('}');
                }
            }
        }
        const INSERTS: &[&str] = &[
            "\"", "\\", ",", ":", "]", "}", "[", "{", " ", "\t", "\u{1}", "x", "-", ".", "e", "0",
            "\\ud800", "\\u12", "1e999",
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut direct, mut total) = (0, 0);
        for _ in 0..50_000 {
            let mut t = String::new();
            if rng.below(4) == 0 {
                t.push_str(rng.pick(&[" ", "\n", ""]));
            }
            make(&mut rng, 4, &mut t);
            if rng.below(2) == 0 {
                let mut at = rng.below(t.len() + 1);
                while !t.is_char_boundary(at) {
                    at -= 1;
                }
                t.insert_str(at, rng.pick(INSERTS));
            }
            total += 1;
            let general = serde_json::from_str::<serde_json::Value>(&t)
                .ok()
                .map(|v| Value::from_json(&v));
            match (read(&t), general) {
                (Some(d), Some(g)) => {
                    direct += 1;
                    assert!(same(&d, &g), "{t:?}: {d:?} against {g:?}");
                }
                (Some(d), None) => panic!("read {t:?} as {d:?}; serde_json refuses it"),
                (None, _) => {}
            }
        }
        assert!(direct * 3 > total, "{direct} of {total} read directly");
    }
}
