//! Helm's own template functions, after Helm v4.2.3 `pkg/engine/funcs.go` (`toYaml`,
//! `fromYaml`, `toJson`, `fromJson`, `toToml`, `fromToml`, their `must` forms, …) and
//! `pkg/engine/engine.go`'s `initFunMap` (`include`, `tpl`, `required`, `fail`, `lookup`).

use super::*;
use crate::template::fmt::s_ref;
use crate::template::params::{Param, Sig};

/// The Go signatures of Helm's own functions where a parameter is typed (funcs.go,
/// engine.go `initFunMap`), for the typed-argument checks (`template::params`).
const SIGNATURES: &[(&str, Sig)] = {
    use Param::{Any, Str};
    const S: Sig = Sig {
        fixed: &[Str],
        variadic: None,
    };
    const S_ANY: Sig = Sig {
        fixed: &[Str, Any],
        variadic: None,
    };
    &[
        ("include", S_ANY),
        ("tpl", S_ANY),
        ("required", S_ANY),
        ("fail", S),
        ("fromYaml", S),
        ("fromYamlArray", S),
        ("fromJson", S),
        ("fromJsonArray", S),
        ("fromToml", S),
        (
            "lookup",
            Sig {
                fixed: &[Str, Str, Str, Str],
                variadic: None,
            },
        ),
    ]
};

pub(super) fn helm_funcs(f: &mut Funcs) {
    f.add2("include", |ex: &mut Exec, a0, a1| {
        // The name shared when it is a string (nearly always): no copy per call.
        let name: std::rc::Rc<str> = match a0 {
            Value::Str(n) => n.clone(),
            other => std::rc::Rc::from(s(other)),
        };
        // Helm's includedNames: a name already running more than 1,000 deep is refused
        // (a template that includes itself ends here, not in a stack overflow).
        if ex.included.iter().filter(|n| ***n == *name).count() > 1000 {
            return Err(format!(
                "rendering template has a nested reference name: {name}: unable to execute template"
            ));
        }
        ex.included.push(name.clone());
        let r = ex.execute(&name, a1.clone());
        ex.included.pop();
        r.map(Value::from).map_err(|e| e.to_string())
    });
    f.add2("tpl", |ex: &mut Exec, a0, a1| {
        let text = s(a0);
        let funcs = ex.funcs.clone();
        let is_func = |n: &str| funcs.id(n);
        let parsed = parse::parse("gotpl", &text, &is_func)
            .map_err(|e| format!("cannot parse template {}: {e}", fmt::go_quote(&text)))?;
        let mut child = TemplateSet {
            parent: Some(ex.set.clone()),
            own: Default::default(),
        };
        child.add("gotpl", "gotpl", parsed);
        let child = Rc::new(child);
        let saved = std::mem::replace(&mut ex.set, child);
        let r = ex.execute("gotpl", a1.clone());
        ex.set = saved;
        let out = r.map_err(|e| {
            format!(
                "error during tpl function execution for {}: {e}",
                fmt::go_quote(&text)
            )
        })?;
        Ok(Value::from(strip_no_value(out)))
    });
    f.add2("required", |_, a0, a1| match a1 {
        Value::Nil => Err(format!("{WARN_START}{}{WARN_END}", s(a0))),
        Value::Str(v) if v.is_empty() => Err(format!("{WARN_START}{}{WARN_END}", s(a0))),
        v => Ok(v.clone()),
    });
    f.add("fail", |_, a| {
        Err(format!(
            "{WARN_START}{}{WARN_END}",
            a.first().map(s).unwrap_or_default()
        ))
    });
    f.add("lookup", |_, _| Ok(Value::Map(new_map())));
    // Helm's toYaml and toYamlPretty give "" where the marshal fails; mustToYaml fails.
    for (name, enc, must) in [
        ("toYaml", yaml::Encoder::SigsYaml, false),
        ("mustToYaml", yaml::Encoder::SigsYaml, true),
        ("toYamlPretty", yaml::Encoder::GoYamlV3, false),
    ] {
        f.add(name, move |_, a| {
            let v = a.first().cloned().unwrap_or(Value::Nil);
            match yaml::to_yaml_func(&v, enc) {
                Ok(t) => Ok(Value::from(t)),
                Err(e) if must => Err(e.to_string()),
                Err(_) => Ok(Value::from("")),
            }
        });
    }
    f.add("fromYaml", |_, a| {
        // The text is read where it is (`s_ref`): it is often an `include`'s whole output,
        // and the `from*` readers only look at it.
        let t = a.first().map(s_ref).unwrap_or_default();
        Ok(match yaml::parse_one_as_json(&t) {
            Ok(Value::Map(m)) => Value::Map(m),
            Ok(Value::Nil) => Value::Map(new_map()),
            Ok(other) => error_map(&format!("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_kind(&other))),
            Err(e) => error_map(&format!("error converting YAML to JSON: {e}")),
        })
    });
    f.add("fromYamlArray", |_, a| {
        let t = a.first().map(s_ref).unwrap_or_default();
        Ok(match yaml::parse_one_as_json(&t) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(Value::Nil) => Value::list(Vec::new()),
            Ok(other) => Value::list(vec![Value::from(format!("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type []interface {{}}", json_kind(&other)))]),
            Err(e) => Value::list(vec![Value::from(format!("error converting YAML to JSON: {e}"))]),
        })
    });
    for (name, esc, pretty) in [
        ("toJson", true, false),
        ("mustToJson", true, false),
        ("toRawJson", false, false),
        ("mustToRawJson", false, false),
        ("toPrettyJson", true, true),
        ("mustToPrettyJson", true, true),
    ] {
        f.add(name, move |_, a| {
            let v = a.first().cloned().unwrap_or(Value::Nil);
            Ok(Value::from(yaml::to_json(&v, esc, pretty)))
        });
    }
    for name in ["fromJson", "mustFromJson"] {
        f.add(name, move |_, a| {
            let t = a.first().map(s_ref).unwrap_or_default();
            Ok(match yaml::from_json(&t) {
                Ok(Value::Map(m)) => Value::Map(m),
                Ok(other) => {
                    if name == "mustFromJson" {
                        return Err(format!("json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_kind(&other)));
                    }
                    error_map(&format!("json: cannot unmarshal {} into Go value of type map[string]interface {{}}", json_kind(&other)))
                }
                Err(e) => {
                    if name == "mustFromJson" {
                        return Err(e);
                    }
                    error_map(&e)
                }
            })
        });
    }
    f.add("fromJsonArray", |_, a| {
        let t = a.first().map(s_ref).unwrap_or_default();
        Ok(match yaml::from_json(&t) {
            Ok(Value::List(l)) => Value::List(l),
            Ok(other) => Value::list(vec![Value::from(format!(
                "json: cannot unmarshal {} into Go value of type []interface {{}}",
                json_kind(&other)
            ))]),
            Err(e) => Value::list(vec![Value::from(e)]),
        })
    });
    for name in ["toToml", "mustToToml"] {
        f.add(name, |_, a| {
            Ok(Value::from(toml::to_toml(
                &a.first().cloned().unwrap_or(Value::Nil),
            )))
        });
    }
    f.add("fromToml", |_, a| {
        let text = a.first().map(s).unwrap_or_default();
        Ok(toml::from_toml(&text).unwrap_or_else(|e| error_map(&e)))
    });
    f.sign(SIGNATURES);
}

pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "array",
        Value::Str(_) => "string",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Float(_) => "number",
        _ => "object",
    }
}

pub(super) fn error_map(msg: &str) -> Value {
    let m = new_map();
    m.borrow_mut().insert("Error", Value::from(msg));
    Value::Map(m)
}
