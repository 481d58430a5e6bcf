//! `toToml`: a map as TOML the way BurntSushi/toml encodes it (scalars first, then tables,
//! keys sorted). `fromToml`: TOML read into Go values as Helm's `pkg/engine/funcs.go`
//! `fromTOML` gets them from BurntSushi/toml's `Unmarshal` into `map[string]interface{}`
//! (integers `int64`, floats `float64`, arrays `[]interface{}`, tables maps); the `toml`
//! crate parses.

use crate::template::value::{Value, format_float_g, new_map};

/// `toToml` after BurntSushi/toml v1 `encode.go` (`eMap`, `eTable`, `eArrayOfTables`,
/// `writeKeyValue`): a table's plain keys first, then its tables and arrays of tables, each
/// group sorted; a blank line before top-level tables and before every `[[array]]` entry;
/// two spaces of indent per nesting level.
pub fn to_toml(v: &Value) -> String {
    let mut out = String::new();
    if let Value::Map(m) = v {
        map(&mut out, &[], &m.borrow());
    }
    out
}

/// BurntSushi's `maybeQuoted`: bare keys stay bare.
fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        quoted(k)
    }
}

/// BurntSushi's `writeQuoted`: TOML basic-string escapes, `\uXXXX` for other controls
/// (also how `kiln.lock`'s strings are written, kiln-source).
pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && (c as u32) < 0x80 => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A table (a map, or a non-empty list of maps: an array of tables) rather than a value.
fn is_table(v: &Value) -> bool {
    match v {
        Value::Map(_) => true,
        Value::List(l) => !l.is_empty() && l.iter().all(|x| matches!(x, Value::Map(_))),
        _ => false,
    }
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth.saturating_sub(1))
}

fn newline(out: &mut String) {
    if !out.is_empty() {
        out.push('\n');
    }
}

fn map(out: &mut String, path: &[String], m: &crate::template::value::Dict) {
    let child = |k: &str| {
        let mut p = path.to_vec();
        p.push(key(k));
        p
    };
    for (k, v) in m {
        if !is_table(v) && !v.is_nil() {
            let p = child(k);
            out.push_str(&format!("{}{} = {}\n", indent(p.len()), key(k), scalar(v)));
        }
    }
    for (k, v) in m {
        let p = child(k);
        match v {
            Value::Map(sub) => {
                if p.len() == 1 {
                    newline(out);
                }
                out.push_str(&format!("{}[{}]\n", indent(p.len()), p.join(".")));
                map(out, &p, &sub.borrow());
            }
            Value::List(items) if is_table(v) => {
                for item in items.iter() {
                    if let Value::Map(sub) = item {
                        newline(out);
                        out.push_str(&format!("{}[[{}]]\n", indent(p.len()), p.join(".")));
                        map(out, &p, &sub.borrow());
                    }
                }
            }
            _ => {}
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Str(s) => quoted(s),
        Value::Bool(b) => b.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) if f.is_nan() => "nan".into(),
        Value::Float(f) if f.is_infinite() => if *f > 0.0 { "inf" } else { "-inf" }.into(),
        Value::Float(f) => {
            // Go's FormatFloat(f, 'g', -1, 64), then ".0" unless it has a point or an
            // exponent (`floatAddDecimal`).
            let t = format_float_g(*f);
            if t.contains(['.', 'e']) {
                t
            } else {
                format!("{t}.0")
            }
        }
        Value::List(l) => format!("[{}]", l.iter().map(scalar).collect::<Vec<_>>().join(", ")),
        Value::Map(m) => {
            // An inline table (a map inside a plain array).
            let items: Vec<String> = m
                .borrow()
                .iter()
                .filter(|(_, v)| !v.is_nil())
                .map(|(k, v)| format!("{} = {}", key(k), scalar(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        other => quoted(&other.go_string()),
    }
}

/// `fromToml`: the document as a map, or the parse error (Helm puts it under `Error`).
/// Datetimes become their TOML text (Go gives a `time.Time`; see DIVERGENCES).
pub fn from_toml(text: &str) -> Result<Value, String> {
    match text.parse::<toml::Table>() {
        Ok(t) => Ok(table_value(&t)),
        Err(e) => {
            let line = e
                .span()
                .map(|r| text[..r.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1);
            Err(format!("toml: line {line}: {}", e.message().trim_end()))
        }
    }
}

fn table_value(t: &toml::Table) -> Value {
    let m = new_map();
    for (k, v) in t {
        m.borrow_mut().insert(k.clone(), toml_value(v));
    }
    Value::Map(m)
}

fn toml_value(v: &toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::from(s.as_str()),
        toml::Value::Integer(n) => Value::Int(*n),
        toml::Value::Float(f) => Value::Float(*f),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::from(d.to_string()),
        toml::Value::Array(a) => Value::list(a.iter().map(toml_value).collect()),
        toml::Value::Table(t) => table_value(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_toml_reads_go_types() {
        let v = from_toml(
            "name = \"web\"\nport = 8080\nratio = 0.5\non = true\n\
             when = 1979-05-27T07:32:00Z\nlist = [1, \"a\"]\n\
             [server]\nhost = \"h\"\n[[users]]\nid = 1\n[[users]]\nid = 2\n",
        )
        .unwrap();
        assert_eq!(
            crate::yaml::to_json(&v, false, false),
            r#"{"list":[1,"a"],"name":"web","on":true,"port":8080,"ratio":0.5,"server":{"host":"h"},"users":[{"id":1},{"id":2}],"when":"1979-05-27T07:32:00Z"}"#
        );
        let Value::Map(m) = &v else { panic!() };
        assert!(
            matches!(m.borrow().get("port"), Some(Value::Int(8080))),
            "int64, not float64"
        );
    }

    #[test]
    fn from_toml_names_the_error_line() {
        let e = from_toml("a = 1\nb = \n").unwrap_err();
        assert!(e.starts_with("toml: line 2: "), "{e}");
    }
}
