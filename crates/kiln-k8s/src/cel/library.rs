//! The CEL environment the API server gives CRD validation rules, rebuilt on cel-rust: the
//! base environment of k8s.io/apiserver `pkg/cel/environment/base.go` (for the Kubernetes
//! versions kiln validates, 1.33 and later): CEL's standard library, cel-go's `ext.Strings`
//! (version 2, cel-rust's `extensions::strings`) and `ext.Sets`, and Kubernetes' libraries
//! of `pkg/cel/library/` — URLs, Regex, Lists, Quantity, IP, CIDR, Semver, Format — one file
//! each below, plus CEL's `duration`, which cel-rust has only with chrono.
//!
//! cel-rust is dynamically typed: an overload is picked by the run-time types of its
//! arguments, where cel-go checks the rule's types when the CRD is created. A CRD's rules have
//! passed that check, so dispatching at run time gives the same results; a call with no
//! overload here is a function kiln lacks, counted as not evaluated ([`super::Outcome`]).
//!
//! Not here, so a rule that calls them is counted as not evaluated (ADR 0048): the `datetime`
//! format, `image`, `authz` (admission only), the two-variable comprehensions of
//! `ext.TwoVarComprehensions`, `lists.includes`, Quantity's `mul`/`div`/`divInt`,
//! timestamps, duration arithmetic, and a `format: duration`/`date-time` field bound as a
//! duration/timestamp (kiln binds the string).

mod cidr;
mod duration;
mod format;
mod ip;
mod lists;
mod quantity;
mod regex;
mod semver;
mod sets;
mod urls;

use cel::common::types::{CelBool, CelDouble, CelInt, CelString, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::{Env, ExecutionError};
use std::sync::{Arc, LazyLock};

/// The environment, built once: every rule of every CRD compiles and runs against it.
pub(crate) fn env() -> &'static Arc<Env> {
    static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| {
        let mut env = Env::stdlib();
        // Registration fails only for an overload declared twice: a bug caught by the
        // tests, never by input, so the environment is simply left without it.
        for library in [
            cel::extensions::strings as fn(&mut Env) -> Result<(), cel::DeclarationError>,
            sets::library,
            urls::library,
            regex::library,
            lists::library,
            quantity::library,
            ip::library,
            duration::library,
            cidr::library,
            semver::library,
            format::library,
        ] {
            let _ = env.add_extension(library);
        }
        Arc::new(env)
    });
    &ENV
}

/// An overload (cel-rust's function pointer).
pub(crate) type Function = cel::common::functions::Function;

/// What an overload returns.
pub(crate) type Out<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// An error of `function`, reported as cel-go reports it: the message alone.
pub(crate) fn error(function: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

/// Argument `i` as a string (its overload was declared for one).
pub(crate) fn string<'a>(args: &'a [CowVal<'_, '_>], i: usize) -> Result<&'a str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(CelString::inner)
        .ok_or_else(|| unexpected(args, i, "string"))
}

/// Argument `i` as an int.
pub(crate) fn int(args: &[CowVal<'_, '_>], i: usize) -> Result<i64, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map(|v| *v.inner())
        .ok_or_else(|| unexpected(args, i, "int"))
}

/// Argument `i` as one of the library's own values.
pub(crate) fn typed<'a, T: StaticVal>(
    args: &'a [CowVal<'_, '_>],
    i: usize,
) -> Result<&'a T, ExecutionError> {
    args.get(i)
        .and_then(|a| a.as_any())
        .and_then(|a| a.downcast_ref::<T>())
        .ok_or_else(|| unexpected(args, i, T::cel_type().name()))
}

fn unexpected(args: &[CowVal<'_, '_>], i: usize, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType {
        got: args
            .get(i)
            .map_or("nothing".to_string(), |a| a.get_type().name().to_string()),
        want: want.to_string(),
    }
}

pub(crate) fn boolean<'b, 'v>(b: bool) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(b)))
}

pub(crate) fn integer<'b, 'v>(i: i64) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelInt::from(i)))
}

pub(crate) fn double<'b, 'v>(f: f64) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelDouble::from(f)))
}

pub(crate) fn text<'b, 'v>(s: String) -> Out<'b, 'v> {
    Ok(CowVal::owned(CelString::from(s)))
}

/// A built-in value made as a [`cel::Value`] (lists, maps).
pub(crate) fn value<'b, 'v>(v: cel::Value) -> Out<'b, 'v> {
    let boxed: Box<dyn Val> = v.try_into()?;
    Ok(CowVal::Owned(boxed))
}

/// One of the library's own values.
pub(crate) fn own<'b, 'v, T: Val + 'static>(t: T) -> Out<'b, 'v> {
    Ok(CowVal::owned(t))
}

/// Implements [`Val`] for a library type with a static CEL type and equality by `PartialEq`
/// (cel-go's `Equal` of each type).
macro_rules! opaque {
    ($ty:ty, $cel:expr) => {
        impl cel::common::value::Val for $ty {
            fn get_type(&self) -> &cel::common::types::Type {
                <Self as cel::common::value::Val>::cel_type()
            }
            fn cel_type() -> &'static cel::common::types::Type {
                static TYPE: cel::common::types::Type =
                    cel::common::types::Type::new_unspecified_type($cel);
                &TYPE
            }
            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other
                    .as_any()
                    .and_then(|o| o.downcast_ref::<$ty>())
                    .is_some_and(|o| o == self)
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl cel::common::value::StaticVal for $ty {}
    };
}
pub(crate) use opaque;

/// The CEL type of a library value, for declaring overloads.
pub(crate) fn type_of<T: Val>() -> Type {
    T::cel_type().to_owned()
}
