//! CRDs' `x-kubernetes-validations` rules (ADR 0021, ADR 0048), evaluated with cel-rust
//! (`cel`) as the API server evaluates them on create (k8s.io/apiextensions-apiserver
//! `pkg/apiserver/schema/cel/validation.go`): `self` is the value at the rule's node;
//! transition rules (those naming `oldSelf`) never run on create, so they are skipped.
//!
//! The environment is the server's for CRD rules (`cel/library.rs`): CEL's standard library,
//! cel-go's strings and sets extensions, and Kubernetes' own libraries (`quantity`, `url`,
//! regex `find`, lists' `isSorted`/`sum`/…, `ip`, `cidr`, `format`, `semver`). A rule that
//! calls a function outside it is counted as not evaluated ([`Outcome::Unsupported`]), never
//! reported as failing.

mod library;

use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One compiled rule.
pub struct Rule {
    /// The rule's source, as written in the CRD.
    pub source: String,
    program: Option<cel::Program>,
    /// `message`, or `messageExpression` compiled.
    pub message: Option<String>,
    message_expression: Option<cel::Program>,
    message_expression_source: Option<String>,
    /// `fieldPath` (a JSONPath-like `.spec.x`), relative to the rule's node.
    pub field_path: Option<String>,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule")
            .field("source", &self.source)
            .finish()
    }
}

impl Clone for Rule {
    fn clone(&self) -> Rule {
        // Programs are not `Clone`; recompiling the same text cannot fail differently.
        Rule::from_parts(
            self.source.clone(),
            self.message.clone(),
            self.message_expression_source.clone(),
            self.field_path.clone(),
        )
    }
}

/// What evaluating a rule gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// The rule returned false: the message to report.
    Failed(String),
    /// The rule could not be evaluated (an error at run time): the message.
    Error(String),
    /// A transition rule or a function outside kiln's CEL environment: not evaluated.
    Unsupported(String),
}

impl Rule {
    /// Compiles one entry of `x-kubernetes-validations` (`rule`, `message`,
    /// `messageExpression`, `fieldPath`). Errors: the rule is missing or does not parse.
    pub fn compile(entry: &Value) -> Result<Rule, String> {
        let Some(source) = entry.get("rule").and_then(Value::as_str) else {
            return Err("a validation rule needs `rule`".to_string());
        };
        library::env()
            .compile(source)
            .map_err(|e| format!("rule `{source}` does not parse: {e}"))?;
        let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_string);
        Ok(Rule::from_parts(
            source.to_string(),
            text("message"),
            text("messageExpression"),
            text("fieldPath"),
        ))
    }

    fn from_parts(
        source: String,
        message: Option<String>,
        message_expression: Option<String>,
        field_path: Option<String>,
    ) -> Rule {
        Rule {
            program: library::env().compile(&source).ok(),
            message_expression: message_expression
                .as_deref()
                .and_then(|m| library::env().compile(m).ok()),
            message_expression_source: message_expression,
            source,
            message,
            field_path,
        }
    }

    /// `true` for a transition rule (it names `oldSelf`), which never runs on create.
    pub fn is_transition(&self) -> bool {
        self.source.contains("oldSelf")
    }

    /// Evaluates the rule with `self` bound to `value`.
    pub fn evaluate(&self, value: &Value) -> Outcome {
        if self.is_transition() {
            return Outcome::Unsupported(
                "transition rule (oldSelf) runs only on update".to_string(),
            );
        }
        let Some(program) = &self.program else {
            return Outcome::Error(format!("rule `{}` does not parse", self.source));
        };
        let mut context = cel::Context::with_env(std::sync::Arc::clone(library::env()));
        context.add_variable_from_value("self", to_cel(value));
        match program.execute(&context) {
            Ok(cel::Value::Bool(true)) => Outcome::Passed,
            Ok(cel::Value::Bool(false)) => Outcome::Failed(self.failure_message(&context)),
            Ok(other) => {
                Outcome::Error(format!("rule `{}` gave {other:?}, not a bool", self.source))
            }
            // A function or overload outside the environment: cel-go would have refused the
            // CRD (a rule is type-checked when the CRD is created), so it is one kiln lacks.
            Err(cel::ExecutionError::UndeclaredReference(name)) => {
                Outcome::Unsupported(format!("`{name}` is not in kiln's CEL environment"))
            }
            Err(cel::ExecutionError::NoSuchOverload(e)) => Outcome::Unsupported(format!(
                "`{}` has no overload for its arguments in kiln's CEL environment",
                e.function()
            )),
            // As validation.go words the other run-time errors: "<error> evaluating rule: <rule>".
            Err(cel::ExecutionError::FunctionError { message, .. }) => {
                Outcome::Error(format!("{message} evaluating rule: {}", self.source))
            }
            Err(e) => Outcome::Error(format!("{} evaluating rule: {}", go_error(&e), self.source)),
        }
    }

    /// The message the server reports: `messageExpression`'s value, else `message`, else
    /// `failed rule: <rule>`.
    fn failure_message(&self, context: &cel::Context) -> String {
        if let Some(program) = &self.message_expression
            && let Ok(cel::Value::String(s)) = program.execute(context)
        {
            return s.to_string();
        }
        match &self.message {
            Some(m) => m.clone(),
            None => format!("failed rule: {}", self.source),
        }
    }
}

/// A run-time error in cel-go's words (`common/types/err.go`) where they differ.
fn go_error(e: &cel::ExecutionError) -> String {
    match e {
        cel::ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        cel::ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        cel::ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        cel::ExecutionError::Overflow(..) => "integer overflow".to_string(),
        other => other.to_string(),
    }
}

/// A JSON value as CEL sees it (Kubernetes binds integers as `int`, other numbers as
/// `double`, objects as maps).
fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<cel::objects::Key, cel::Value> = map
                .iter()
                .map(|(k, v)| (cel::objects::Key::from(k.clone()), to_cel(v)))
                .collect();
            cel::Value::Map(cel::objects::Map {
                map: Arc::new(entries),
            })
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// `expr` evaluated in the rules' environment, with nothing bound.
    pub(crate) fn eval(expr: &str) -> cel::ResolveResult {
        let program = library::env().compile(expr).expect(expr);
        program.execute(&cel::Context::with_env(Arc::clone(library::env())))
    }

    fn rule(r: &str) -> Rule {
        Rule::compile(&json!({"rule": r, "message": "no"})).unwrap()
    }

    #[test]
    fn standard_rules_evaluate() {
        assert_eq!(
            rule("has(self.uses) && !has(self.task)").evaluate(&json!({"uses": "a"})),
            Outcome::Passed
        );
        assert_eq!(
            rule("has(self.uses) && !has(self.task)").evaluate(&json!({"task": "a"})),
            Outcome::Failed("no".into())
        );
        assert_eq!(
            rule("self.all(x, x > 0)").evaluate(&json!([1, 2])),
            Outcome::Passed
        );
        assert_eq!(
            rule("self.x.matches('^a+$')").evaluate(&json!({"x": "ab"})),
            Outcome::Failed("no".into())
        );
        assert_eq!(
            rule("size(self) <= 2").evaluate(&json!("abc")),
            Outcome::Failed("no".into())
        );
    }

    #[test]
    fn transition_rules_and_missing_functions_are_not_evaluated() {
        assert!(matches!(
            rule("self == oldSelf").evaluate(&json!(1)),
            Outcome::Unsupported(_)
        ));
        // Timestamps (no chrono), and Quantity's `mul` (not in the environment yet).
        assert!(matches!(
            rule("timestamp(self) > timestamp('2020-01-01T00:00:00Z')")
                .evaluate(&json!("2021-01-01T00:00:00Z")),
            Outcome::Unsupported(_)
        ));
        assert!(matches!(
            rule("quantity(self).mul(2) == quantity('2')").evaluate(&json!("1")),
            Outcome::Unsupported(_)
        ));
        // Short-circuited before the missing function, the rule is evaluated, as cel-go's.
        assert_eq!(
            rule("self == '1' || quantity(self).mul(2) == quantity('2')").evaluate(&json!("1")),
            Outcome::Passed
        );
    }

    /// The repro of issue 36 item 2: Kubernetes' libraries evaluated, their false rules
    /// reported with their message, their run-time errors as the server words them.
    #[test]
    fn kubernetes_library_rules_evaluate() {
        let mem = Rule::compile(&json!({
            "rule": "quantity(self.mem).isLessThan(quantity('2Gi'))",
            "message": "mem lt 2Gi"
        }))
        .unwrap();
        assert_eq!(
            mem.evaluate(&json!({"mem": "3Gi"})),
            Outcome::Failed("mem lt 2Gi".into())
        );
        assert_eq!(mem.evaluate(&json!({"mem": "1.5Gi"})), Outcome::Passed);
        assert_eq!(
            mem.evaluate(&json!({"mem": "bogus"})),
            Outcome::Error(
                "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: quantity(self.mem).isLessThan(quantity('2Gi'))"
                    .into()
            )
        );
        let host = rule("url(self.u).getHost() == 'example.com'");
        assert_eq!(
            host.evaluate(&json!({"u": "https://evil.com/x"})),
            Outcome::Failed("no".into())
        );
        assert_eq!(
            host.evaluate(&json!({"u": "https://example.com/x"})),
            Outcome::Passed
        );
        assert_eq!(
            rule("self.isSorted()").evaluate(&json!([2, 1])),
            Outcome::Failed("no".into())
        );
    }

    #[test]
    fn message_expression_names_the_value() {
        let r = Rule::compile(
            &json!({"rule": "self > 1", "messageExpression": "'got ' + string(self)"}),
        )
        .unwrap();
        assert_eq!(r.evaluate(&json!(0)), Outcome::Failed("got 0".into()));
    }

    #[test]
    fn a_rule_that_does_not_parse_is_refused() {
        assert!(Rule::compile(&json!({"rule": "self >"})).is_err());
    }
}
