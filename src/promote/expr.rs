//! Kargo's `${{ … }}` expressions, for the subset of expr-lang that promotion templates use.
//!
//! Implemented from Kargo v1.11.2:
//! - `pkg/expressions/json_templates.go`: which strings are templates (`${{ }}` and `${% %}`),
//!   how several expressions in one string are joined, and how the joined result is turned back
//!   into JSON (quoted results stay strings, then number, then bool, then JSON, else string;
//!   a trailing newline is kept only for strings). `quote`, `unsafeQuote`, `asJSON`.
//! - `pkg/expressions/function/functions.go`: `warehouse`, `commitFrom`, `imageFrom`
//!   (through [`Functions`]), `always`/`success`/`failure` for a step's `if`.
//! - `pkg/promotion/evaluator.go`: the environment (`vars`, `outputs`, `ctx`).
//!
//! The grammar (expr-lang's): literals (`'…'`, `"…"`, numbers, `true`, `false`, `nil`),
//! identifiers, member access (`a.b`, `a?.b`, `a["b"]`), calls (`f(x, y)`), `+` (concatenation
//! or addition), `==`, `!=`, `!`/`not`, `&&`/`and`, `||`/`or`, `??` and `c ? a : b`.
//!
//! Stricter than Kargo on purpose: a missing key of `vars`, `outputs` or `ctx` is an error
//! here (expr-lang yields `nil` and the step fails later on a schema check, far from the
//! cause), and so is member access on `nil` (as in expr-lang). An unknown function is an error
//! in both. Our own code rather than a crate: no maintained Rust crate implements expr-lang,
//! and the subset is small (see docs/adr/0006-promote-expressions.md).

use serde_json::{Map, Value};

/// The functions an expression may call besides the string helpers: the Freight look-ups,
/// which need the Stage's Freight, and the step-status functions.
pub trait Functions {
    /// `commitFrom(repoURL[, origin])`: the Freight's commit from that repository, or `Null`.
    fn commit_from(&self, repo_url: &str, origin: Option<&str>) -> Result<Value, String>;
    /// `imageFrom(repoURL[, origin])`: the Freight's image from that repository, or `Null`.
    fn image_from(&self, repo_url: &str, origin: Option<&str>) -> Result<Value, String>;
    /// Whether any earlier step failed (`failure()`, `success()`).
    fn any_failure(&self) -> bool;
}

/// What an expression sees: top-level names (`vars`, `outputs`, `ctx`, …) and the functions.
pub struct Env<'a> {
    pub names: &'a Map<String, Value>,
    pub functions: &'a dyn Functions,
}

/// Evaluates one template string as `EvaluateTemplate` does: a string without a delimiter is
/// returned untouched; otherwise every expression is evaluated and the joined result is turned
/// back into a JSON value.
pub fn evaluate_template(template: &str, env: &Env<'_>) -> Result<Value, String> {
    if !DELIMITERS.iter().any(|(start, _)| template.contains(start)) {
        return Ok(Value::String(template.to_string()));
    }
    let mut result = String::new();
    let mut rest = template;
    loop {
        let next = DELIMITERS
            .iter()
            .filter_map(|(start, end)| rest.find(start).map(|i| (i, *start, *end)))
            .min_by_key(|(i, _, _)| *i);
        let Some((i, start, end)) = next else {
            result.push_str(rest);
            break;
        };
        result.push_str(&rest[..i]);
        let body_start = i + start.len();
        let Some(len) = rest[body_start..].find(end) else {
            return Err(format!(
                "unclosed expression: expected {end:?} but reached end of template"
            ));
        };
        let body = &rest[body_start..body_start + len];
        let value = evaluate(body, env).map_err(|e| format!("in `{}`: {e}", body.trim()))?;
        match value {
            Value::String(s) => result.push_str(&s),
            other => result.push_str(&to_json(&other)),
        }
        rest = &rest[body_start + len + end.len()..];
    }
    Ok(coerce(result))
}

/// Evaluates every string inside a step's `config` (values only, never keys), as
/// `EvaluateJSONTemplate` does.
pub fn evaluate_config(config: &Value, env: &Env<'_>) -> Result<Value, String> {
    Ok(match config {
        Value::String(s) => evaluate_template(s, env)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| evaluate_config(v, env))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(k.clone(), evaluate_config(v, env)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

const DELIMITERS: [(&str, &str); 2] = [("${{", "}}"), ("${%", "%}")];

/// The tail of `EvaluateTemplate`: how the joined text becomes a JSON value again.
fn coerce(mut result: String) -> Value {
    let removed_newline = result.ends_with('\n');
    if removed_newline {
        result.pop();
    }
    if result.len() > 1 && result.starts_with('"') && result.ends_with('"') {
        let mut inner = result[1..result.len() - 1].to_string();
        if removed_newline {
            inner.push('\n');
        }
        return Value::String(inner);
    }
    // Go's strconv.ParseFloat before ParseBool, so "0" and "1" are numbers.
    if let Some(n) = parse_go_float(&result) {
        return n;
    }
    match result.as_str() {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => return Value::Bool(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(v) = serde_json::from_str::<Value>(&result) {
        return v;
    }
    if removed_newline {
        result.push('\n');
    }
    Value::String(result)
}

/// A number the way `strconv.ParseFloat(s, 64)` accepts it (decimal forms; Go's hex floats
/// and underscores are not produced by anything kiln templates evaluate to).
fn parse_go_float(s: &str) -> Option<Value> {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    let decimal = !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        && t.chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '.');
    if !decimal {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    // Go keeps float64; JSON marshals integral floats without a fraction.
    if f.fract() == 0.0 && f.abs() < 1e15 {
        Some(Value::from(f as i64))
    } else {
        serde_json::Number::from_f64(f).map(Value::Number)
    }
}

/// `json.Marshal` of a non-string result.
fn to_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Evaluates one expression (the text between the delimiters).
pub fn evaluate(src: &str, env: &Env<'_>) -> Result<Value, String> {
    let tokens = lex(src)?;
    let mut p = Parser { tokens, pos: 0 };
    let ast = p.expr()?;
    if p.pos != p.tokens.len() {
        return Err(format!("unexpected {}", p.tokens[p.pos].describe()));
    }
    eval(&ast, env)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    Op(&'static str),
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Num(s) => format!("number {s}"),
            Tok::Op(s) => format!("`{s}`"),
        }
    }
}

const OPS: [&str; 17] = [
    "?.", "??", "==", "!=", "&&", "||", ".", "(", ")", "[", "]", ",", "+", "!", "?", ":", "-",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '\'' || c == '"' || c == '`' {
            let quote = c;
            let mut s = String::new();
            i += 1;
            loop {
                let Some(&d) = chars.get(i) else {
                    return Err("unterminated string literal".into());
                };
                i += 1;
                if d == quote {
                    break;
                }
                if d == '\\' && quote != '`' {
                    let Some(&e) = chars.get(i) else {
                        return Err("unterminated string literal".into());
                    };
                    i += 1;
                    s.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        other => other,
                    });
                } else {
                    s.push(d);
                }
            }
            out.push(Tok::Str(s));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else {
            let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
            let Some(op) = OPS.iter().find(|op| rest.starts_with(*op)) else {
                return Err(format!("unexpected character `{c}`"));
            };
            out.push(Tok::Op(op));
            i += op.chars().count();
        }
    }
    Ok(out)
}

#[derive(Debug, Clone)]
enum Ast {
    Lit(Value),
    Name(String),
    Member(Box<Ast>, Box<Ast>, bool),
    Call(String, Vec<Ast>),
    Unary(&'static str, Box<Ast>),
    Binary(&'static str, Box<Ast>, Box<Ast>),
    Cond(Box<Ast>, Box<Ast>, Box<Ast>),
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos)
    }
    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn eat_word(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(w)) if w == word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(match self.peek() {
                Some(t) => format!("expected `{op}`, found {}", t.describe()),
                None => format!("expected `{op}` at the end"),
            })
        }
    }

    fn expr(&mut self) -> Result<Ast, String> {
        let cond = self.coalesce()?;
        if self.eat_op("?") {
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            return Ok(Ast::Cond(Box::new(cond), Box::new(a), Box::new(b)));
        }
        Ok(cond)
    }
    fn coalesce(&mut self) -> Result<Ast, String> {
        let mut left = self.or()?;
        while self.eat_op("??") {
            left = Ast::Binary("??", Box::new(left), Box::new(self.or()?));
        }
        Ok(left)
    }
    fn or(&mut self) -> Result<Ast, String> {
        let mut left = self.and()?;
        while self.eat_op("||") || self.eat_word("or") {
            left = Ast::Binary("||", Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }
    fn and(&mut self) -> Result<Ast, String> {
        let mut left = self.equality()?;
        while self.eat_op("&&") || self.eat_word("and") {
            left = Ast::Binary("&&", Box::new(left), Box::new(self.equality()?));
        }
        Ok(left)
    }
    fn equality(&mut self) -> Result<Ast, String> {
        let mut left = self.additive()?;
        loop {
            if self.eat_op("==") {
                left = Ast::Binary("==", Box::new(left), Box::new(self.additive()?));
            } else if self.eat_op("!=") {
                left = Ast::Binary("!=", Box::new(left), Box::new(self.additive()?));
            } else {
                return Ok(left);
            }
        }
    }
    fn additive(&mut self) -> Result<Ast, String> {
        let mut left = self.unary()?;
        while self.eat_op("+") {
            left = Ast::Binary("+", Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }
    fn unary(&mut self) -> Result<Ast, String> {
        if self.eat_op("!") || self.eat_word("not") {
            return Ok(Ast::Unary("!", Box::new(self.unary()?)));
        }
        if self.eat_op("-") {
            return Ok(Ast::Unary("-", Box::new(self.unary()?)));
        }
        self.postfix()
    }
    fn postfix(&mut self) -> Result<Ast, String> {
        let mut node = self.primary()?;
        loop {
            if self.eat_op(".") || self.eat_op("?.") {
                let optional = matches!(self.tokens.get(self.pos - 1), Some(Tok::Op("?.")));
                match self.peek().cloned() {
                    Some(Tok::Ident(name)) => {
                        self.pos += 1;
                        node = Ast::Member(
                            Box::new(node),
                            Box::new(Ast::Lit(Value::String(name))),
                            optional,
                        );
                    }
                    other => {
                        return Err(format!(
                            "expected a field name after `.`, found {}",
                            other.map_or("the end".into(), |t| t.describe())
                        ));
                    }
                }
            } else if self.eat_op("[") {
                let index = self.expr()?;
                self.expect("]")?;
                node = Ast::Member(Box::new(node), Box::new(index), false);
            } else {
                return Ok(node);
            }
        }
    }
    fn primary(&mut self) -> Result<Ast, String> {
        let Some(tok) = self.peek().cloned() else {
            return Err("unexpected end of expression".into());
        };
        self.pos += 1;
        match tok {
            Tok::Str(s) => Ok(Ast::Lit(Value::String(s))),
            Tok::Num(n) => {
                let v: Value = serde_json::from_str(&n).map_err(|_| format!("bad number {n}"))?;
                Ok(Ast::Lit(v))
            }
            Tok::Ident(name) => match name.as_str() {
                "true" => Ok(Ast::Lit(Value::Bool(true))),
                "false" => Ok(Ast::Lit(Value::Bool(false))),
                "nil" => Ok(Ast::Lit(Value::Null)),
                _ if self.eat_op("(") => {
                    let mut args = Vec::new();
                    if !self.eat_op(")") {
                        loop {
                            args.push(self.expr()?);
                            if self.eat_op(")") {
                                break;
                            }
                            self.expect(",")?;
                        }
                    }
                    Ok(Ast::Call(name, args))
                }
                _ => Ok(Ast::Name(name)),
            },
            Tok::Op("(") => {
                let inner = self.expr()?;
                self.expect(")")?;
                Ok(inner)
            }
            other => Err(format!("unexpected {}", other.describe())),
        }
    }
}

fn eval(ast: &Ast, env: &Env<'_>) -> Result<Value, String> {
    match ast {
        Ast::Lit(v) => Ok(v.clone()),
        Ast::Name(name) => env
            .names
            .get(name)
            .cloned()
            .ok_or_else(|| format!("unknown name `{name}`")),
        Ast::Member(object, key, optional) => {
            let object_value = eval(object, env)?;
            let key_value = eval(key, env)?;
            member(object, &object_value, &key_value, *optional)
        }
        Ast::Call(name, args) => {
            let values = args
                .iter()
                .map(|a| eval(a, env))
                .collect::<Result<Vec<_>, _>>()?;
            call(name, &values, env)
        }
        Ast::Unary("!", a) => Ok(Value::Bool(!truthy(&eval(a, env)?)?)),
        Ast::Unary(_, a) => match eval(a, env)? {
            Value::Number(n) => Ok(serde_json::Number::from_f64(-n.as_f64().unwrap_or(0.0))
                .map_or(Value::Null, Value::Number)),
            other => Err(format!("cannot negate {}", type_name(&other))),
        },
        Ast::Binary("&&", a, b) => Ok(Value::Bool(
            truthy(&eval(a, env)?)? && truthy(&eval(b, env)?)?,
        )),
        Ast::Binary("||", a, b) => Ok(Value::Bool(
            truthy(&eval(a, env)?)? || truthy(&eval(b, env)?)?,
        )),
        Ast::Binary("??", a, b) => match eval(a, env) {
            Ok(Value::Null) => eval(b, env),
            other => other,
        },
        Ast::Binary(op, a, b) => {
            let (a, b) = (eval(a, env)?, eval(b, env)?);
            match *op {
                "==" => Ok(Value::Bool(a == b)),
                "!=" => Ok(Value::Bool(a != b)),
                _ => match (&a, &b) {
                    (Value::String(x), Value::String(y)) => Ok(Value::String(format!("{x}{y}"))),
                    (Value::Number(x), Value::Number(y)) => {
                        let sum = x.as_f64().unwrap_or(0.0) + y.as_f64().unwrap_or(0.0);
                        Ok(parse_go_float(&sum.to_string()).unwrap_or(Value::Null))
                    }
                    _ => Err(format!(
                        "invalid operation: {} + {}",
                        type_name(&a),
                        type_name(&b)
                    )),
                },
            }
        }
        Ast::Cond(c, a, b) => {
            if truthy(&eval(c, env)?)? {
                eval(a, env)
            } else {
                eval(b, env)
            }
        }
    }
}

fn member(object: &Ast, value: &Value, key: &Value, optional: bool) -> Result<Value, String> {
    match (value, key) {
        (Value::Null, _) if optional => Ok(Value::Null),
        (Value::Null, k) => Err(format!(
            "cannot fetch {} from nil ({} is nil)",
            key_text(k),
            describe_ast(object)
        )),
        (Value::Object(map), Value::String(k)) => map.get(k).cloned().ok_or_else(|| {
            format!(
                "{} has no field `{k}` (it has: {})",
                describe_ast(object),
                map.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        }),
        (Value::Array(items), Value::Number(n)) => n
            .as_u64()
            .and_then(|i| items.get(i as usize))
            .cloned()
            .ok_or_else(|| format!("index {n} out of range")),
        (v, k) => Err(format!(
            "cannot fetch {} from {}",
            key_text(k),
            type_name(v)
        )),
    }
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => to_json(other),
    }
}

fn describe_ast(ast: &Ast) -> String {
    match ast {
        Ast::Name(n) => n.clone(),
        Ast::Member(o, k, _) => match &**k {
            Ast::Lit(Value::String(s)) => format!("{}.{s}", describe_ast(o)),
            _ => format!("{}[…]", describe_ast(o)),
        },
        Ast::Call(n, _) => format!("{n}(…)"),
        _ => "the value".into(),
    }
}

fn truthy(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(format!("expected a bool, got {}", type_name(other))),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "map",
    }
}

fn string_arg<'v>(name: &str, args: &'v [Value], i: usize) -> Result<&'v str, String> {
    match args.get(i) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "{name}(): argument {} must be a string, got {}",
            i + 1,
            type_name(other)
        )),
        None => Err(format!("{name}(): missing argument {}", i + 1)),
    }
}

fn arity(name: &str, args: &[Value], min: usize, max: usize) -> Result<(), String> {
    if args.len() < min || args.len() > max {
        let want = if min == max {
            min.to_string()
        } else {
            format!("{min}-{max}")
        };
        return Err(format!(
            "{name}(): expected {want} arguments, got {}",
            args.len()
        ));
    }
    Ok(())
}

/// The origin name of a `warehouse(name)` value passed as the second argument.
fn origin_arg(name: &str, args: &[Value]) -> Result<Option<String>, String> {
    match args.get(1) {
        None => Ok(None),
        Some(Value::Object(o)) if o.get("Kind") == Some(&Value::String("Warehouse".into())) => {
            Ok(o.get("Name").and_then(Value::as_str).map(str::to_string))
        }
        Some(other) => Err(format!(
            "{name}(): second argument must be FreightOrigin (from warehouse()), got {}",
            type_name(other)
        )),
    }
}

fn call(name: &str, args: &[Value], env: &Env<'_>) -> Result<Value, String> {
    match name {
        // json_templates.go quoteFunc: a string is Go-%q-quoted, anything else goes through
        // unsafeQuote; the surrounding quotes are stripped again by `coerce`.
        "quote" => {
            arity(name, args, 1, 1)?;
            match &args[0] {
                Value::String(s) => Ok(Value::String(to_json(&Value::String(s.clone())))),
                other => Ok(Value::String(format!("\"{}\"", to_json(other)))),
            }
        }
        "unsafeQuote" => {
            arity(name, args, 1, 1)?;
            Ok(Value::String(format!("\"{}\"", to_json(&args[0]))))
        }
        "asJSON" => {
            arity(name, args, 1, 1)?;
            let pretty = serde_json::to_string_pretty(&args[0]).unwrap_or_default();
            Ok(Value::String(format!("\"{pretty}\n\"")))
        }
        "warehouse" => {
            arity(name, args, 1, 1)?;
            let n = string_arg(name, args, 0)?;
            if n.is_empty() {
                return Err("warehouse(): name must not be empty".into());
            }
            Ok(serde_json::json!({ "Kind": "Warehouse", "Name": n }))
        }
        "commitFrom" => {
            arity(name, args, 1, 2)?;
            let origin = origin_arg(name, args)?;
            env.functions
                .commit_from(string_arg(name, args, 0)?, origin.as_deref())
        }
        "imageFrom" => {
            arity(name, args, 1, 2)?;
            let origin = origin_arg(name, args)?;
            env.functions
                .image_from(string_arg(name, args, 0)?, origin.as_deref())
        }
        "always" => {
            arity(name, args, 0, 0)?;
            Ok(Value::Bool(true))
        }
        "failure" => {
            arity(name, args, 0, 0)?;
            Ok(Value::Bool(env.functions.any_failure()))
        }
        "success" => {
            arity(name, args, 0, 0)?;
            Ok(Value::Bool(!env.functions.any_failure()))
        }
        // expr-lang's string builtins.
        "lower" | "upper" | "trim" => {
            arity(name, args, 1, 1)?;
            let s = string_arg(name, args, 0)?;
            Ok(Value::String(match name {
                "lower" => s.to_lowercase(),
                "upper" => s.to_uppercase(),
                _ => s.trim().to_string(),
            }))
        }
        "trimPrefix" | "trimSuffix" => {
            arity(name, args, 2, 2)?;
            let (s, x) = (string_arg(name, args, 0)?, string_arg(name, args, 1)?);
            Ok(Value::String(
                if name == "trimPrefix" {
                    s.strip_prefix(x)
                } else {
                    s.strip_suffix(x)
                }
                .unwrap_or(s)
                .to_string(),
            ))
        }
        "replace" => {
            arity(name, args, 3, 3)?;
            let s = string_arg(name, args, 0)?;
            Ok(Value::String(s.replace(
                string_arg(name, args, 1)?,
                string_arg(name, args, 2)?,
            )))
        }
        "split" => {
            arity(name, args, 2, 2)?;
            let s = string_arg(name, args, 0)?;
            Ok(Value::Array(
                s.split(string_arg(name, args, 1)?)
                    .map(|p| Value::String(p.to_string()))
                    .collect(),
            ))
        }
        "join" => {
            arity(name, args, 1, 2)?;
            let sep = if args.len() == 2 {
                string_arg(name, args, 1)?
            } else {
                ""
            };
            match &args[0] {
                Value::Array(items) => Ok(Value::String(
                    items.iter().map(key_text).collect::<Vec<_>>().join(sep),
                )),
                other => Err(format!(
                    "join(): argument 1 must be an array, got {}",
                    type_name(other)
                )),
            }
        }
        "string" => {
            arity(name, args, 1, 1)?;
            Ok(Value::String(key_text(&args[0])))
        }
        _ => Err(format!("unknown func {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct NoFreight;
    impl Functions for NoFreight {
        fn commit_from(&self, repo: &str, _: Option<&str>) -> Result<Value, String> {
            Ok(if repo == "https://git/src" {
                json!({ "RepoURL": repo, "ID": "abc123" })
            } else {
                Value::Null
            })
        }
        fn image_from(&self, repo: &str, origin: Option<&str>) -> Result<Value, String> {
            Ok(
                json!({ "RepoURL": repo, "Tag": format!("1.2.{}", origin.unwrap_or("0")), "Digest": "" }),
            )
        }
        fn any_failure(&self) -> bool {
            false
        }
    }

    fn names() -> Map<String, Value> {
        let v = json!({
            "vars": { "srcRepo": "https://git/src", "img": "reg/app", "n": "42" },
            "outputs": { "push": { "commit": "c0ffee", "branch": "main" } },
            "ctx": { "stage": "app-dev", "project": "web" },
        });
        v.as_object().unwrap().clone()
    }

    fn t(template: &str) -> Result<Value, String> {
        let names = names();
        evaluate_template(
            template,
            &Env {
                names: &names,
                functions: &NoFreight,
            },
        )
    }

    #[test]
    fn templates_join_expressions_and_coerce_like_kargo() {
        assert_eq!(t("plain 42").unwrap(), json!("plain 42"));
        assert_eq!(t("./src/${{ vars.img }}").unwrap(), json!("./src/reg/app"));
        assert_eq!(
            t("${{ imageFrom(vars.img).Tag }}").unwrap(),
            json!("1.2.0"),
            "a version string is not a number"
        );
        assert_eq!(t("${{ vars.n }}").unwrap(), json!(42));
        assert_eq!(t("${{ quote(vars.n) }}").unwrap(), json!("42"));
        assert_eq!(t("${{ true }}").unwrap(), json!(true));
        assert_eq!(t("${{ quote(true) }}").unwrap(), json!("true"));
        assert_eq!(t("a ${% ctx.stage %} b\n").unwrap(), json!("a app-dev b\n"));
        assert_eq!(
            t("${{ commitFrom(vars.srcRepo).ID + '@' + ctx.project }}").unwrap(),
            json!("abc123@web")
        );
        assert_eq!(
            t("${{ imageFrom(vars.img, warehouse(\"w\")).Tag }}").unwrap(),
            json!("1.2.w")
        );
        assert_eq!(t("${{ outputs['push'].branch }}").unwrap(), json!("main"));
        assert_eq!(
            t("${{ ctx.stage == 'app-dev' ? upper(ctx.project) : 'x' }}").unwrap(),
            json!("WEB")
        );
    }

    #[test]
    fn unknown_functions_outputs_and_nil_fields_are_errors() {
        let e = t("${{ frobnicate(vars.img) }}").unwrap_err();
        assert!(e.contains("unknown func frobnicate"), "{e}");
        let e = t("${{ outputs.pushh.commit }}").unwrap_err();
        assert!(e.contains("outputs has no field `pushh`"), "{e}");
        let e = t("${{ commitFrom('https://other').ID }}").unwrap_err();
        assert!(e.contains("cannot fetch ID from nil"), "{e}");
        assert_eq!(
            t("${{ commitFrom('https://other')?.ID ?? 'none' }}").unwrap(),
            json!("none")
        );
        assert!(t("${{ vars.img").unwrap_err().contains("unclosed"));
        assert!(t("${{ vars. }}").is_err());
        assert!(
            t("${{ imageFrom() }}")
                .unwrap_err()
                .contains("expected 1-2")
        );
    }

    #[test]
    fn config_values_are_evaluated_but_keys_are_not() {
        let names = names();
        let env = Env {
            names: &names,
            functions: &NoFreight,
        };
        let cfg = json!({ "${{ k }}": ["${{ vars.img }}", 3, { "x": "${{ ctx.stage }}" }] });
        assert_eq!(
            evaluate_config(&cfg, &env).unwrap(),
            json!({ "${{ k }}": ["reg/app", 3, { "x": "app-dev" }] })
        );
    }
}
