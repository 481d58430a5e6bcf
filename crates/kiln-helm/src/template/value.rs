//! The dynamic value of Go templates as Helm uses them: Go's `interface{}` values as
//! `text/template`'s exec.go reaches them through `reflect` (maps, slices, basic kinds,
//! objects with fields and methods).
//!
//! Go maps are references: Sprig's `set`/`unset`/`merge` change a dict in place and every
//! holder of it sees the change (Helm's `.Values` is one shared map that a template such as
//! istio's `zzz_profile.yaml` rewrites for the templates after it). So a map is an
//! `Rc<RefCell<…>>`; lists are immutable (Sprig's list functions return new slices). A map's
//! entries are kept sorted ([`Dict`]), the only order Helm ever shows.

pub use super::dict::Dict;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;

/// A shared, mutable Go `map[string]interface{}`.
pub type Map = Rc<RefCell<Dict>>;

/// What an object's methods may use besides their arguments, given by the execution.
#[derive(Clone, Copy, Default)]
pub struct Cx<'a> {
    /// The file system the chart was loaded through: `.Files` reads a file of a chart
    /// directory from it on first use (see `helm::chart::FileData`). `None` outside a
    /// chart's render, where there are no such files.
    pub fs: Option<&'a dyn kiln_base::fs::FileSystem>,
}

/// An object with Go fields and methods (`.Files`, `.Capabilities.APIVersions`, …).
pub trait Object {
    /// Go's type name, for `typeOf` and error messages.
    fn type_name(&self) -> &str;
    /// A field or a method without arguments (`.Capabilities.KubeVersion.Version`).
    fn field(&self, name: &str) -> Option<Value>;
    /// A method call with arguments (`.Files.Get "x"`); `None` when there is no such method.
    fn call(&self, cx: &Cx, name: &str, args: &[Value]) -> Option<Result<Value, String>>;
    /// What `fmt.Sprint` prints (a Stringer's `String()`).
    fn display(&self) -> String;
    /// Key/value pairs when the object is a Go slice whose items cost nothing to give
    /// (Sprig's list functions, `range`, `len`).
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        None
    }
    /// What `range` walks when the object is a Go map or slice. `.Files` reads its files
    /// for it (through `cx`), so this can fail where [`entries`](Self::entries) cannot.
    fn range(&self, _cx: &Cx) -> Option<Result<Vec<(String, Value)>, String>> {
        self.entries().map(Ok)
    }
    /// `len` of a Go map or slice, without reading what [`range`](Self::range) would read.
    fn entry_count(&self) -> Option<usize> {
        self.entries().map(|e| e.len())
    }
    /// What encoding/json makes of the object when that is not its printed text as a JSON
    /// string: `toJson` writes it, and `toYaml` (sigs.k8s.io/yaml: JSON first) its value.
    fn marshal(&self) -> Option<Marshaled> {
        None
    }
    /// How many arguments the method `name` takes, when the object has it: Go checks the
    /// count before calling (`wrong number of args for Get: want 1 got 0`).
    fn arity(&self, _name: &str) -> Option<usize> {
        None
    }
    /// What a Go function receives when the object is passed to it, if that is not the
    /// object itself: Go copies an addressable struct into the `interface{}` argument, and
    /// the copy has no pointer methods (a pointer-receiver `String` no longer prints it).
    fn as_argument(&self) -> Option<Value> {
        None
    }
    /// Go's `reflect.Kind` of the object, for `kindOf` and `kindIs`.
    fn kind(&self) -> &'static str {
        "struct"
    }
}

/// An object as encoding/json writes it ([`Object::marshal`]).
pub enum Marshaled {
    /// A struct: its exported fields under their JSON names, in declaration order (those
    /// `omitempty` leaves out are not in the list).
    Fields(Vec<(&'static str, Value)>),
    /// A slice, or what a `MarshalJSON` gives.
    Value(Value),
}

impl Marshaled {
    /// The object as `json.Unmarshal` reads back what encoding/json wrote: a struct is a
    /// map, and objects inside it are their own marshaled values.
    pub fn plain(self) -> Value {
        let plain = |v: Value| match v {
            Value::Object(o) => match o.marshal() {
                Some(m) => m.plain(),
                None => Value::from(o.display()),
            },
            Value::List(l) => Value::list(
                l.iter()
                    .map(|x| match x {
                        Value::Object(o) => o
                            .marshal()
                            .map_or_else(|| Value::from(o.display()), Marshaled::plain),
                        other => other.clone(),
                    })
                    .collect(),
            ),
            other => other,
        };
        match self {
            Marshaled::Fields(fields) => Value::map(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), plain(v)))
                    .collect(),
            ),
            Marshaled::Value(v) => plain(v),
        }
    }
}

/// One template value.
#[derive(Clone)]
pub enum Value {
    /// Go's nil (a missing map key under `missingkey=zero`, a YAML `null`).
    Nil,
    Bool(bool),
    /// Go `int`/`int64` (template literals, `len`, Sprig arithmetic).
    Int(i64),
    /// Go `float64` (every number read from YAML or JSON, as `sigs.k8s.io/yaml` gives them).
    Float(f64),
    Str(Rc<str>),
    List(Rc<Vec<Value>>),
    Map(Map),
    Object(Rc<dyn Object>),
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.go_string())
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(Rc::from(s))
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(Rc::from(s))
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

/// A new empty shared map.
pub fn new_map() -> Map {
    Rc::new(RefCell::new(Dict::new()))
}

impl Value {
    pub fn map(m: Dict) -> Value {
        Value::Map(Rc::new(RefCell::new(m)))
    }
    pub fn list(v: Vec<Value>) -> Value {
        Value::List(Rc::new(v))
    }
    pub fn str(s: impl AsRef<str>) -> Value {
        Value::Str(Rc::from(s.as_ref()))
    }

    /// Go template truth: false, 0, nil, and empty strings/lists/maps are false.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(n) => *n != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Object(_) => true,
        }
    }

    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Go's reflect kind name, as Sprig's `kindOf` reports it.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) => o.kind(),
        }
    }

    /// Go's type name, as Sprig's `typeOf` reports it.
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float64".into(),
            Value::Str(_) => "string".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name().to_string(),
        }
    }

    /// `fmt.Sprint(v)`: Go's `%v`.
    pub fn go_string(&self) -> String {
        let mut s = String::new();
        self.write_go(&mut s, true);
        s
    }

    /// [`go_string`](Self::go_string), appended to `out`.
    pub fn write_go_into(&self, out: &mut String) {
        self.write_go(out, true);
    }

    fn write_go(&self, out: &mut String, _top: bool) {
        match self {
            Value::Nil => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Float(f) => out.push_str(&format_float_g(*f)),
            Value::Str(s) => out.push_str(s),
            Value::List(l) => {
                out.push('[');
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    v.write_go(out, false);
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.borrow().iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    v.write_go(out, false);
                }
                out.push(']');
            }
            Value::Object(o) => out.push_str(&o.display()),
        }
    }

    /// A deep copy (maps become new maps), as Sprig's `deepCopy` and Helm's value copies.
    pub fn deep_copy(&self) -> Value {
        match self {
            Value::Map(m) => Value::map(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.deep_copy()))
                    .collect(),
            ),
            Value::List(l) => Value::list(l.iter().map(Value::deep_copy).collect()),
            other => other.clone(),
        }
    }

    /// Number as f64 (ints and floats), for arithmetic and comparisons.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// Deep equality as Go's `reflect.DeepEqual` on these types.
    pub fn deep_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.deep_eq(y))
            }
            (Value::Map(a), Value::Map(b)) => {
                if Rc::ptr_eq(a, b) {
                    return true;
                }
                let (a, b) = (a.borrow(), b.borrow());
                a.len() == b.len()
                    && a.iter()
                        .zip(b.iter())
                        .all(|((ka, va), (kb, vb))| ka == kb && va.deep_eq(vb))
            }
            (Value::Object(a), Value::Object(b)) => Rc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Converts to JSON (for schema validation, YAML/JSON output and the kiln pipeline).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(n) => serde_json::Value::from(*n),
            Value::Float(f) => float_to_json(*f),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => serde_json::Value::Object(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect(),
            ),
            Value::Object(o) => serde_json::Value::String(o.display()),
        }
    }

    /// Reads JSON as Helm's values are read: every number a float64.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Float(
                n.as_f64()
                    .unwrap_or_else(|| n.to_string().parse().unwrap_or(0.0)),
            ),
            serde_json::Value::String(s) => Value::str(s),
            serde_json::Value::Array(a) => Value::list(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(m) => Value::map(
                m.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }
}

/// A float as a JSON number: integral values without a fraction (as Go's encoding/json).
pub fn float_to_json(f: f64) -> serde_json::Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e21 {
        // Nearly every number of a chart's values (ports, replicas, sizes) is an integral
        // float64 well inside i64: converted directly, not formatted and read back (-0
        // keeps its sign, as Go writes it).
        if f.abs() < 9.0e15 && !(f == 0.0 && f.is_sign_negative()) {
            return serde_json::Value::from(f as i64);
        }
        let text = format!("{f:.0}");
        if let Ok(n) = serde_json::from_str::<serde_json::Number>(&text) {
            return serde_json::Value::Number(n);
        }
    }
    match serde_json::Number::from_f64(f) {
        Some(n) => serde_json::Value::Number(n),
        None => serde_json::Value::Null,
    }
}

/// Go's `%v` of a float64, `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest digits that
/// round-trip, in exponent form when the exponent is < -4 or >= 6 (so 1000000 is `1e+06`).
pub fn format_float_g(f: f64) -> String {
    format_float(f, -4, 6)
}

/// Shortest round-trip digits, in exponent form when the exponent is < -4 or >= `eprec`
/// (6 for `%v`, 21 for encoding/json).
pub fn format_float(f: f64, lo: i32, eprec: i32) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // An integral value below 10^6 in the plain form (every number read from YAML is a
    // float64, so ports and replica counts come here): its digits are the integer's, without
    // formatting and taking apart its `{:e}`.
    if lo <= 0 && eprec >= 6 && f.fract() == 0.0 && f.abs() < 1e6 {
        return (f as i64).to_string();
    }
    // Shortest round-trip digits from Rust's `{:e}` (also shortest).
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if exp < lo || exp >= eprec {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// The same value, strictly: variant, float bits, string bytes, keys and order (what the
/// readers' differential tests compare; `Value` has no `PartialEq`).
#[cfg(test)]
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integral floats are JSON integers, whichever way they are converted; -0 keeps its sign
    /// and the rest keep their shortest digits.
    #[test]
    fn floats_convert_to_json_numbers_as_go_writes_them() {
        for (f, text) in [
            (8080.0, "8080"),
            (-3.0, "-3"),
            (0.0, "0"),
            (-0.0, "-0"),
            (8.9e15, "8900000000000000"),
            (1e20, "100000000000000000000"),
            (0.5, "0.5"),
        ] {
            assert_eq!(float_to_json(f).to_string(), text, "{f}");
        }
    }

    #[test]
    fn floats_print_as_go() {
        assert_eq!(format_float_g(1.0), "1");
        assert_eq!(format_float_g(0.5), "0.5");
        assert_eq!(format_float_g(1e6), "1e+06");
        assert_eq!(format_float_g(100000.0), "100000");
        assert_eq!(format_float_g(123456789.0), "1.23456789e+08");
        assert_eq!(format_float_g(0.0001), "0.0001");
        assert_eq!(format_float_g(0.00001), "1e-05");
        // Integral values, plain below 10^6 in every mode that prints them plain.
        assert_eq!(format_float_g(8080.0), "8080");
        assert_eq!(format_float_g(-3.0), "-3");
        assert_eq!(format_float_g(999999.0), "999999");
        assert_eq!(format_float_g(-1e6), "-1e+06");
        assert_eq!(format_float_g(-0.0), "-0");
        assert_eq!(format_float(5.0, 1000, -1000), "5e+00");
        assert_eq!(format_float(12.0, -4, 21), "12");
        assert_eq!(format_float(12.0, -1000, 1000), "12");
        assert_eq!(format_float(1e7, -4, 21), "10000000");
    }
}
