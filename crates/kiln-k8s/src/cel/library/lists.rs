//! Kubernetes' Lists library (k8s.io/apiserver `pkg/cel/library/lists.go`): `isSorted`,
//! `sum`, `min`, `max`, `indexOf`, `lastIndexOf` on lists. Elements compare and add as CEL
//! values do (cel-go's `Comparer`/`Adder`); equality is CEL's `==`.

use super::{Out, boolean, error, integer, value};
use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::cmp::Ordering;

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "isSorted",
        "list_is_sorted_bool",
        LIST_TYPE,
        vec![],
        is_sorted,
    )?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_a_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_a_last_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    Ok(())
}

/// Argument `i` as the items of a list.
pub(super) fn items(args: &[CowVal<'_, '_>], i: usize) -> Result<Vec<Value>, ExecutionError> {
    let arg = args.get(i).ok_or(ExecutionError::MissingArgumentOrTarget)?;
    match Value::try_from(arg.as_ref())? {
        Value::List(items) => Ok(items.as_ref().clone()),
        other => Err(other.error_expected_type(cel::objects::ValueType::List)),
    }
}

/// `Compare` of two comparable values (numbers across types, as cel-go's
/// CrossTypeNumericComparisons); `None` for values that do not compare.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        _ => a.partial_cmp(b),
    }
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let list = items(&args, 0)?;
    boolean(
        !list
            .windows(2)
            .any(|w| compare(&w[0], &w[1]) == Some(Ordering::Greater)),
    )
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let list = items(&args, 0)?;
    let mut acc: Option<Value> = None;
    for item in list {
        acc = Some(match (acc, item) {
            (None, item) => item,
            (Some(Value::Int(a)), Value::Int(b)) => Value::Int(
                a.checked_add(b)
                    .ok_or_else(|| error("sum", "integer overflow"))?,
            ),
            (Some(Value::UInt(a)), Value::UInt(b)) => Value::UInt(
                a.checked_add(b)
                    .ok_or_else(|| error("sum", "unsigned integer overflow"))?,
            ),
            (Some(Value::Float(a)), Value::Float(b)) => Value::Float(a + b),
            (Some(a), b) => {
                return Err(ExecutionError::no_such_overload(
                    "sum",
                    vec![format!("{:?}", a.type_of()), format!("{:?}", b.type_of())],
                ));
            }
        });
    }
    // An empty list sums to the zero of its element type; 0 equals 0u and 0.0 in CEL.
    value(acc.unwrap_or(Value::Int(0)))
}

/// `min` or `max`: the first element no other is preferred to.
fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, name: &str, prefer: Ordering) -> Out<'b, 'v> {
    let list = items(&args, 0)?;
    let mut result: Option<Value> = None;
    for item in list {
        result = match result {
            Some(r) if compare(&r, &item) == Some(prefer) => Some(item),
            Some(r) => Some(r),
            None => Some(item),
        };
    }
    match result {
        Some(r) => value(r),
        None => Err(error(name, format!("{name} called on empty list"))),
    }
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    extreme(args, "min", Ordering::Greater)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    extreme(args, "max", Ordering::Less)
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let list = items(&args, 0)?;
    let item = Value::try_from(args[1].as_ref())?;
    integer(
        list.iter()
            .position(|x| *x == item)
            .map_or(-1, |i| i as i64),
    )
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let list = items(&args, 0)?;
    let item = Value::try_from(args[1].as_ref())?;
    integer(
        list.iter()
            .rposition(|x| *x == item)
            .map_or(-1, |i| i as i64),
    )
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_library_as_the_upstream_tests_give_it() {
        for rule in [
            "[1, 2, 3].isSorted()",
            "![3, 1, 2].isSorted()",
            "['a', 'b', 'b'].isSorted()",
            "[].isSorted()",
            "[1.0, 2.5].isSorted()",
            "[1, 2, 3].sum() == 6",
            "[1.5, 2.5].sum() == 4.0",
            "[].sum() == 0",
            "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
            "['b', 'a'].min() == 'a'",
            "[1, 2, 2, 3].indexOf(2) == 1 && [1, 2, 2, 3].lastIndexOf(2) == 2",
            "['a'].indexOf('z') == -1 && [].lastIndexOf(1) == -1",
            // The strings extension's indexOf stays on strings.
            "'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(eval("[].min() == 1").is_err());
        assert!(eval("[9223372036854775807, 1].sum() == 1").is_err());
    }
}
