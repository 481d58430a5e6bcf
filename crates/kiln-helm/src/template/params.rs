//! Go's typed function parameters, after `text/template/exec.go` `evalCall`, `evalArg` and
//! `validateType`: a function whose Go parameter is `string`, `int`, a map or a slice gets
//! only a value of that type, and anything else fails before the function runs, with Go's
//! message (`wrong type for value; expected string; got float64`), where kiln once
//! converted. The signatures themselves are the libraries' (`sprig::signatures` from
//! Sprig's `functions.go`, `engine::funcs` from Helm's); a function without one takes
//! `interface {}` everywhere.
//!
//! What a nil is depends on how the argument was written, as in Go: a field (`.Values.x`),
//! a function's result or dot is an `interface {}` holding nil, which no typed parameter
//! accepts (`got interface {}`); a variable, a parenthesized pipeline or the piped value is
//! Go's invalid value, which becomes a nil map or slice (so `hasKey $missing "k"` is false)
//! and is refused elsewhere (`invalid value; expected string`).

use super::value::Value;

/// One Go parameter type, as far as a template can tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// `interface {}` (and `reflect.Value`): anything.
    Any,
    /// `interface {}` read by a type switch whose only integer case is `int64` (Sprig's
    /// `duration`, `durationRound`): anything, but an integer constant arrives as Go's `int`
    /// and takes the switch's default case ([`Param::as_passed`]).
    Int64Switch,
    Str,
    Int,
    Uint32,
    Float,
    Bool,
    /// `map[string]interface {}`.
    Map,
    /// `[]interface {}`.
    List,
    /// `time.Time`.
    Time,
    /// Sprig's `certificate` struct (`genSignedCert`'s CA).
    Cert,
}

impl Param {
    /// Go's name of the type, as its messages print it.
    pub fn go_name(self) -> &'static str {
        match self {
            Param::Any | Param::Int64Switch => "interface {}",
            Param::Str => "string",
            Param::Int => "int",
            Param::Uint32 => "uint32",
            Param::Float => "float64",
            Param::Bool => "bool",
            Param::Map => "map[string]interface {}",
            Param::List => "[]interface {}",
            Param::Time => "time.Time",
            Param::Cert => "sprig.certificate",
        }
    }

    /// reflect's `canBeNil`: maps and slices (and interfaces) take a nil.
    fn can_be_nil(self) -> bool {
        matches!(
            self,
            Param::Any | Param::Int64Switch | Param::Map | Param::List
        )
    }

    /// Whether a value of `v`'s dynamic type is assignable to this type.
    fn accepts(self, v: &Value) -> bool {
        match (self, v) {
            (Param::Any | Param::Int64Switch, _) => true,
            (Param::Str, Value::Str(_))
            | (Param::Int, Value::Int(_))
            | (Param::Float, Value::Float(_))
            | (Param::Bool, Value::Bool(_))
            | (Param::Map, Value::Map(_))
            | (Param::List, Value::List(_)) => true,
            (Param::Time, Value::Object(o)) => o.type_name() == "time.Time",
            (Param::Cert, Value::Object(o)) => o.type_name() == "sprig.certificate",
            _ => false,
        }
    }
}

impl Param {
    /// The value the function sees for an argument written as `origin`. kiln has one integer
    /// type; for an [`Param::Int64Switch`] parameter an integer constant (Go's `int`, not the
    /// `int64` the switch knows) is passed as a float, which those functions also read as the
    /// default case: `duration 3700` is `0s` in Go and here, `duration (add 3700 0)` is
    /// `1h1m40s` in both.
    pub fn as_passed(self, v: Value, origin: Origin) -> Value {
        match (self, origin, v) {
            (Param::Int64Switch, Origin::Number { int: true, .. }, Value::Int(n)) => {
                Value::Float(n as f64)
            }
            (_, _, v) => v,
        }
    }
}

/// A function's Go signature: its fixed parameters, then the element type of its `...`
/// parameter if it has one.
#[derive(Debug, Clone, Copy)]
pub struct Sig {
    pub fixed: &'static [Param],
    pub variadic: Option<Param>,
}

impl Sig {
    /// The type of argument `i` of a call with `n` arguments, or `None` when `n` is not a
    /// count the function takes (its own arity error comes first, as Go checks it first).
    pub fn param(&self, i: usize, n: usize) -> Option<Param> {
        let fits = match self.variadic {
            Some(_) => n >= self.fixed.len(),
            None => n == self.fixed.len(),
        };
        if !fits {
            return None;
        }
        self.fixed.get(i).copied().or(self.variadic)
    }
}

/// How an argument was written, which decides what Go makes of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Origin {
    /// A string constant.
    Str,
    /// A number constant: whether it is an integer (`1`, `1.0`, `0x10`) and whether it is
    /// non-negative.
    Number {
        int: bool,
        unsigned: bool,
    },
    Bool,
    Nil,
    /// A field chain, a function's result or dot: its nil is an `interface {}` holding nil.
    Typed,
    /// A variable, a parenthesized pipeline or the piped value: its nil is Go's invalid
    /// value.
    Untyped,
}

/// Go's check of one argument for `param`: `Ok` when the function may have it, else Go's
/// message (the caller places it at the argument, as `s.at(node)` does). `node` is the
/// argument as written, for the constants' messages.
pub fn check(
    param: Param,
    v: &Value,
    origin: Origin,
    node: impl FnOnce() -> String,
) -> Result<(), String> {
    if matches!(param, Param::Any | Param::Int64Switch) {
        return Ok(());
    }
    // Constants meet exec.go's `evalArg` switch on the parameter's kind. `node` (the
    // operand as written) is only made for a refusal.
    let is_constant = matches!(origin, Origin::Str | Origin::Number { .. } | Origin::Bool);
    if is_constant {
        let (ok, what) = match param {
            Param::Str => (origin == Origin::Str, "string"),
            Param::Int => (
                matches!(origin, Origin::Number { int: true, .. }),
                "integer",
            ),
            Param::Uint32 => (
                matches!(
                    origin,
                    Origin::Number {
                        int: true,
                        unsigned: true
                    }
                ),
                "unsigned integer",
            ),
            Param::Float => (matches!(origin, Origin::Number { .. }), "float"),
            Param::Bool => (origin == Origin::Bool, "bool"),
            _ => {
                return Err(format!(
                    "can't handle {} for arg of type {}",
                    node(),
                    param.go_name()
                ));
            }
        };
        return if ok {
            Ok(())
        } else {
            Err(format!("expected {what}; found {}", node()))
        };
    }
    match (origin, v) {
        (Origin::Nil, _) if param.can_be_nil() => Ok(()),
        (Origin::Nil, _) => Err(format!("cannot assign nil to {}", param.go_name())),
        (Origin::Untyped, Value::Nil) if param.can_be_nil() => Ok(()),
        (Origin::Untyped, Value::Nil) => {
            Err(format!("invalid value; expected {}", param.go_name()))
        }
        (_, Value::Nil) => Err(format!(
            "wrong type for value; expected {}; got interface {{}}",
            param.go_name()
        )),
        (_, v) if param.accepts(v) => Ok(()),
        (_, v) => Err(format!(
            "wrong type for value; expected {}; got {}",
            param.go_name(),
            v.type_name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_meet_gos_assignability_and_constants_its_parser_kinds() {
        let f = Value::Float(1.0);
        assert_eq!(
            check(Param::Str, &f, Origin::Typed, || ".Values.a".to_string()).unwrap_err(),
            "wrong type for value; expected string; got float64"
        );
        assert_eq!(
            check(Param::Str, &Value::Nil, Origin::Typed, || ".Values.x"
                .to_string())
            .unwrap_err(),
            "wrong type for value; expected string; got interface {}"
        );
        assert_eq!(
            check(Param::Str, &Value::Nil, Origin::Untyped, || "$x"
                .to_string())
            .unwrap_err(),
            "invalid value; expected string"
        );
        assert!(
            check(Param::Map, &Value::Nil, Origin::Untyped, || "$x"
                .to_string())
            .is_ok()
        );
        assert!(check(Param::Map, &Value::Nil, Origin::Nil, || "nil".to_string()).is_ok());
        assert_eq!(
            check(Param::Map, &Value::Nil, Origin::Typed, || ".Values.x"
                .to_string())
            .unwrap_err(),
            "wrong type for value; expected map[string]interface {}; got interface {}"
        );
        assert_eq!(
            check(
                Param::Str,
                &Value::Int(1),
                Origin::Number {
                    int: true,
                    unsigned: true
                },
                || "1".to_string()
            )
            .unwrap_err(),
            "expected string; found 1"
        );
        assert_eq!(
            check(Param::Int, &Value::str("5"), Origin::Str, || "\"5\""
                .to_string())
            .unwrap_err(),
            "expected integer; found \"5\""
        );
        assert_eq!(
            check(Param::Str, &Value::Nil, Origin::Nil, || "nil".to_string()).unwrap_err(),
            "cannot assign nil to string"
        );
        assert!(check(Param::Any, &Value::Nil, Origin::Typed, || ".x".to_string()).is_ok());
        let sig = Sig {
            fixed: &[Param::Str],
            variadic: Some(Param::Map),
        };
        assert_eq!(sig.param(0, 3), Some(Param::Str));
        assert_eq!(sig.param(2, 3), Some(Param::Map));
        assert_eq!(sig.param(0, 0), None);
    }
}
