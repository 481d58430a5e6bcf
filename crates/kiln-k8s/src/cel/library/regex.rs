//! Kubernetes' Regex library (k8s.io/apiserver `pkg/cel/library/regex.go`): `find` and
//! `findAll` on strings, RE2 syntax (the `regex` crate's, as Go's `regexp`); a pattern that
//! does not compile is a run-time error, as `regexp.Compile`'s.

use super::{Out, error, int, string, text, value};
use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};
use std::sync::Arc;

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let s = || STRING_TYPE;
    env.add_member_overload("find", "string_find_string", s(), vec![s()], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        s(),
        vec![s()],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        s(),
        vec![s(), INT_TYPE],
        find_all,
    )?;
    Ok(())
}

fn compile(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| error(function, e))
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let re = compile(string(&args, 1)?, "find")?;
    text(
        re.find(string(&args, 0)?)
            .map_or(String::new(), |m| m.as_str().to_string()),
    )
}

/// `FindAllString(s, n)`: all matches for a negative `n`, at most `n` otherwise.
fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let re = compile(string(&args, 1)?, "findAll")?;
    let limit = if args.len() > 2 { int(&args, 2)? } else { -1 };
    let matches = re
        .find_iter(string(&args, 0)?)
        .map(|m| m.as_str().to_string());
    let found: Vec<String> = match usize::try_from(limit) {
        Ok(n) => matches.take(n).collect(),
        Err(_) => matches.collect(),
    };
    let list = found
        .into_iter()
        .map(|s| cel::Value::String(Arc::new(s)))
        .collect();
    value(cel::Value::List(Arc::new(list)))
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_library_as_the_upstream_examples_give_it() {
        for rule in [
            "'abc 123'.find('[0-9]+') == '123'",
            "'abc 123'.find('xyz') == ''",
            "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
            "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
            "'123 abc 456'.findAll('[0-9]+', 0) == []",
            "'123 abc 456'.findAll('xyz') == []",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(eval("'abc'.find('[') == ''").is_err());
    }
}
