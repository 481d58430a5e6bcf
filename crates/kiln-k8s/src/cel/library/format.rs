//! Kubernetes' Format library (k8s.io/apiserver `pkg/cel/library/format.go`, from 1.31):
//! `format.named(name)` (an optional), `format.<name>()`, and `<Format>.validate(s)`, which
//! gives `optional.none()` for a valid string, else the list of its errors. The validations
//! are apimachinery's (`pkg/api/validation` `NameIsDNSLabel`/`NameIsDNSSubdomain`/
//! `NameIsDNS1035Label` with `maskTrailingDash` for the prefixes, `pkg/util/validation`
//! `IsQualifiedName`/`IsValidLabelValue`, messages included) and kube-openapi's strfmt
//! (`uuid`, `byte`, `date`); `uri` is `url.ParseRequestURI` (`urls.rs`). `datetime` (strfmt's
//! several layouts) is not here: validating with it is counted as not evaluated.

use super::{Out, own, string, typed, value};
use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::objects::OptionalValue;
use cel::{DeclarationError, Env, ExecutionError};
use std::sync::{Arc, OnceLock};

/// One of the named formats (`apiservercel.Format`), by its library name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Format(&'static str);

super::opaque!(Format, "kubernetes.NamedFormat");

/// The names, and `format.<name>()` for each (a fn pointer each, so a macro).
macro_rules! formats {
    ($($name:literal),* $(,)?) => {
        const NAMES: &[&str] = &[$($name),*];

        fn constants(env: &mut Env) -> Result<(), DeclarationError> {
            $(env.add_overload(concat!("format.", $name), concat!("format.", $name), vec![], |_| {
                own(Format($name))
            })?;)*
            Ok(())
        }
    };
}

formats!(
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
);

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    let f = super::type_of::<Format>;
    env.add_member_overload(
        "validate",
        "format-validate",
        f(),
        vec![STRING_TYPE],
        validate,
    )?;
    constants(env)
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let name = string(&args, 0)?;
    let found = NAMES.iter().find(|n| **n == name);
    let optional = match found {
        Some(n) => {
            let boxed: Box<dyn cel::common::value::Val> = Box::new(Format(n));
            return Ok(CowVal::owned(cel::common::types::CelOptional::of(boxed)));
        }
        None => OptionalValue::none(),
    };
    value(cel::Value::Opaque(Arc::new(optional)))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let format = typed::<Format>(&args, 0)?;
    let s = string(&args, 1)?;
    let errors = errors(format.0, s)?;
    let optional = if errors.is_empty() {
        OptionalValue::none()
    } else {
        let list = errors
            .into_iter()
            .map(|e| cel::Value::String(Arc::new(e)))
            .collect();
        OptionalValue::of(cel::Value::List(Arc::new(list)))
    };
    value(cel::Value::Opaque(Arc::new(optional)))
}

fn regex(cell: &'static OnceLock<regex::Regex>, pattern: &str) -> &'static regex::Regex {
    cell.get_or_init(|| regex::Regex::new(pattern).expect("a valid pattern"))
}

const DNS1123_LABEL: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";

/// `validation.RegexError`: the message, then the examples and the regex.
fn regex_error(msg: &str, pattern: &str, examples: &[&str]) -> String {
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}'")).collect();
    format!(
        "{msg} (e.g. {}, regex used for validation is '{pattern}')",
        shown.join(",  or ")
    )
}

fn full(cell: &'static OnceLock<regex::Regex>, pattern: &str, s: &str) -> bool {
    regex(cell, &format!("^(?:{pattern})$")).is_match(s)
}

fn dns1123_label(s: &str) -> Vec<String> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    if !full(&RE, DNS1123_LABEL, s) {
        out.push(regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character", DNS1123_LABEL, &["my-name", "123-abc"]));
    }
    out
}

fn dns1123_subdomain(s: &str) -> Vec<String> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let mut out = Vec::new();
    if s.len() > 253 {
        out.push("must be no more than 253 characters".to_string());
    }
    if !full(&RE, DNS1123_SUBDOMAIN, s) {
        out.push(regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character", DNS1123_SUBDOMAIN, &["example.com"]));
    }
    out
}

fn dns1035_label(s: &str) -> Vec<String> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    if !full(&RE, DNS1035_LABEL, s) {
        out.push(regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character", DNS1035_LABEL, &["my-name", "abc-123"]));
    }
    out
}

/// `maskTrailingDash`: Go drops the character before the dash too (`name[:len(name)-2]`).
fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        format!("{}a", &s[..s.len() - 2])
    } else {
        s.to_string()
    }
}

fn qualified_name(s: &str) -> Vec<String> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let msg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
    let parts: Vec<&str> = s.split('/').collect();
    let (name, mut out) = match parts.as_slice() {
        [name] => (*name, Vec::new()),
        [prefix, name] => {
            let mut out = Vec::new();
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".to_string());
            } else {
                out.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            (*name, out)
        }
        _ => {
            return vec![format!(
                "{} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                    QUALIFIED_NAME,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        out.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 characters".to_string());
    }
    if !full(&RE, QUALIFIED_NAME, name) {
        out.push(regex_error(
            msg,
            QUALIFIED_NAME,
            &["MyName", "my.name", "123-abc"],
        ));
    }
    out
}

fn label_value(s: &str) -> Vec<String> {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push("must be no more than 63 characters".to_string());
    }
    if !full(&RE, LABEL_VALUE, s) {
        out.push(regex_error("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character", LABEL_VALUE, &["MyValue", "my_value", "12345"]));
    }
    out
}

/// `time.Parse("2006-01-02", s)`: the month 1–12 and the day within it.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        s.get(r)
            .filter(|d| d.bytes().all(|c| c.is_ascii_digit()))?
            .parse()
            .ok()
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// strfmt's one message, unless the check passed.
fn unless(ok: bool, message: &str) -> Vec<String> {
    if ok {
        vec![]
    } else {
        vec![message.to_string()]
    }
}

fn errors(format: &str, s: &str) -> Result<Vec<String>, ExecutionError> {
    static UUID: OnceLock<regex::Regex> = OnceLock::new();
    Ok(match format {
        "dns1123Label" => dns1123_label(s),
        "dns1123Subdomain" => dns1123_subdomain(s),
        "dns1035Label" => dns1035_label(s),
        "qualifiedName" => qualified_name(s),
        "dns1123LabelPrefix" => dns1123_label(&mask_trailing_dash(s)),
        "dns1123SubdomainPrefix" => dns1123_subdomain(&mask_trailing_dash(s)),
        "dns1035LabelPrefix" => dns1035_label(&mask_trailing_dash(s)),
        "labelValue" => label_value(s),
        "uri" => match super::urls::parse(s, true) {
            Ok(_) => vec![],
            Err(e) => vec![format!("parse {s:?}: {e}")],
        },
        "uuid" => {
            let re = regex(
                &UUID,
                "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            );
            unless(re.is_match(s), "does not match the UUID format")
        }
        "byte" => unless(crate::server::is_base64(s), "invalid base64"),
        "date" => unless(is_date(s), "invalid date"),
        // strfmt's datetime layouts are not mirrored: not evaluated, rather than guessed.
        _ => {
            return Err(ExecutionError::no_such_overload(
                "validate",
                vec![format.to_string()],
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_library_as_the_upstream_tests_give_it() {
        for rule in [
            "!format.dns1123Label().validate('my-label-name').hasValue()",
            "format.dns1123Label().validate('My-Label').hasValue()",
            "!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()",
            "!format.dns1035Label().validate('my-label-name').hasValue()",
            "format.dns1035Label().validate('1abc').hasValue()",
            "!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()",
            "format.qualifiedName().validate('a/b/c').hasValue()",
            "!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()",
            "!format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()",
            "!format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()",
            "!format.labelValue().validate('').hasValue() && format.labelValue().validate('-a').hasValue()",
            "!format.uri().validate('http://example.com').hasValue()",
            "format.uri().validate('example').hasValue()",
            "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
            "format.uuid().validate('123e4567').value() == ['does not match the UUID format']",
            "!format.byte().validate('aGVsbG8=').hasValue() && format.byte().validate('!').hasValue()",
            "!format.date().validate('2021-01-01').hasValue() && format.date().validate('2021-02-30').hasValue()",
            "format.named('dns1123Label').hasValue() && !format.named('nope').hasValue()",
            "!format.named('dns1123Label').value().validate('a-b').hasValue()",
            "format.dns1123Label().validate('A').value()[0].startsWith('a lowercase RFC 1123 label must consist')",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(matches!(
            eval("format.datetime().validate('2021-01-01T00:00:00Z').hasValue()"),
            Err(cel::ExecutionError::NoSuchOverload(_))
        ));
    }
}
