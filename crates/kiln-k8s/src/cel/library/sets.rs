//! cel-go's sets extension (`ext/sets.go`, enabled for CRD rules by base.go since 1.29):
//! `sets.contains`, `sets.equivalent`, `sets.intersects`, elements compared with CEL's `==`.

use super::lists::items;
use super::{Out, boolean};
use cel::common::types::LIST_TYPE;
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, Value};

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let two = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload("sets.contains", "list_sets_contains_list", two(), contains)?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        two(),
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        two(),
        intersects,
    )?;
    Ok(())
}

fn all_in(sub: &[Value], of: &[Value]) -> bool {
    sub.iter().all(|x| of.contains(x))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(all_in(&items(&args, 1)?, &items(&args, 0)?))
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (items(&args, 0)?, items(&args, 1)?);
    boolean(all_in(&a, &b) && all_in(&b, &a))
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let b = items(&args, 1)?;
    boolean(items(&args, 0)?.iter().any(|x| b.contains(x)))
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_extension_as_cel_go_documents_it() {
        for rule in [
            "sets.contains([1, 2, 3, 4], [2, 3])",
            "!sets.contains([1, 2], [3])",
            "sets.contains([1], [])",
            "sets.contains([1, 2.0, 3u], [1.0, 2u, 3])",
            "sets.equivalent([1, 2, 2], [2, 1])",
            "!sets.equivalent([1], [1, 2])",
            "sets.intersects([1, 2], [2, 3])",
            "!sets.intersects([1], [])",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
    }
}
