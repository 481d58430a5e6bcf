//! `toToml`: a map as TOML the way BurntSushi/toml encodes it (scalars first, then tables,
//! keys sorted).

use super::template::value::Value;
use super::yaml::json_float;

pub fn to_toml(v: &Value) -> String {
    let mut out = String::new();
    if let Value::Map(m) = v {
        table(&mut out, &[], &m.borrow());
    }
    out
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        format!("{k:?}")
    }
}

fn table(out: &mut String, path: &[String], m: &std::collections::BTreeMap<String, Value>) {
    let ind = "  ".repeat(path.len().saturating_sub(1));
    for (k, v) in m {
        if !matches!(v, Value::Map(_)) && !v.is_nil() {
            out.push_str(&format!("{ind}{} = {}\n", key(k), scalar(v)));
        }
    }
    for (k, v) in m {
        if let Value::Map(sub) = v {
            let mut p = path.to_vec();
            p.push(key(k));
            let ind2 = "  ".repeat(p.len() - 1);
            out.push_str(&format!("\n{ind2}[{}]\n", p.join(".")));
            table(out, &p, &sub.borrow());
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Str(s) => format!("{:?}", s.as_ref()),
        Value::Bool(b) => b.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Float(f) => {
            let t = json_float(*f);
            if f.fract() == 0.0 {
                format!("{t}.0")
            } else {
                t
            }
        }
        Value::List(l) => format!("[{}]", l.iter().map(scalar).collect::<Vec<_>>().join(", ")),
        other => format!("{:?}", other.go_string()),
    }
}
