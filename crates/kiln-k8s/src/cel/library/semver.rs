//! Kubernetes' Semver library (k8s.io/apiserver `pkg/cel/library/semverlib.go`, version 1 as
//! base.go enables it from 1.33): `semver` and `isSemver` (with `normalize`), `major`,
//! `minor`, `patch`, `isGreaterThan`, `isLessThan`, `compareTo`. Go parses with
//! blang/semver v4 (strict SemVer 2.0: no leading zeros, no `v`); the `semver` crate parses
//! the same grammar, and `cmp_precedence` is blang's `Compare` (build metadata ignored).
//! `normalizeAndParse` (a `v` prefix, missing minor/patch, leading zeros) is mirrored here.

use super::{Out, boolean, error, integer, own, string, typed};
use cel::common::types::CelBool;
use cel::common::types::{BOOL_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env};
use std::cmp::Ordering;

/// A parsed version (`apiservercel.Semver`), equal when `Compare` says so.
#[derive(Debug, Clone)]
pub(crate) struct Semver(semver::Version);

impl PartialEq for Semver {
    fn eq(&self, other: &Semver) -> bool {
        self.0.cmp_precedence(&other.0) == Ordering::Equal
    }
}

super::opaque!(Semver, "kubernetes.Semver");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let v = super::type_of::<Semver>;
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], to_semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        to_semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload("major", "semver_major", v(), vec![], |a| {
        part(a, |v| v.major)
    })?;
    env.add_member_overload("minor", "semver_minor", v(), vec![], |a| {
        part(a, |v| v.minor)
    })?;
    env.add_member_overload("patch", "semver_patch", v(), vec![], |a| {
        part(a, |v| v.patch)
    })?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        v(),
        vec![v()],
        |a| compare(a).and_then(|o| boolean(o == Ordering::Greater)),
    )?;
    env.add_member_overload("isLessThan", "semver_is_less_than", v(), vec![v()], |a| {
        compare(a).and_then(|o| boolean(o == Ordering::Less))
    })?;
    env.add_member_overload("compareTo", "semver_compare_to", v(), vec![v()], |a| {
        compare(a).and_then(|o| integer(o as i64))
    })?;
    Ok(())
}

/// `semver.Parse`, or `normalizeAndParse` when `normalize`.
fn parse(s: &str, normalize: bool) -> Result<semver::Version, String> {
    if !normalize {
        return semver::Version::parse(s).map_err(|e| e.to_string());
    }
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                trimmed.to_string()
            } else {
                format!("0{trimmed}")
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return Err("short version cannot contain PreRelease/Build meta data".to_string());
        }
        parts.resize(3, "0".to_string());
    }
    semver::Version::parse(&parts.join(".")).map_err(|e| e.to_string())
}

fn normalize(args: &[CowVal<'_, '_>]) -> bool {
    args.get(1)
        .and_then(|a| a.downcast_ref::<CelBool>())
        .is_some_and(|b| *b.inner())
}

fn to_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let version = parse(string(&args, 0)?, normalize(&args)).map_err(|e| error("semver", e))?;
    own(Semver(version))
}

fn is_semver<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse(string(&args, 0)?, normalize(&args)).is_ok())
}

fn part<'b, 'v>(args: Vec<CowVal<'b, 'v>>, of: fn(&semver::Version) -> u64) -> Out<'b, 'v> {
    // Go converts the uint64 with types.Int, wrapping as `as` does.
    integer(of(&typed::<Semver>(&args, 0)?.0) as i64)
}

fn compare(args: Vec<CowVal<'_, '_>>) -> Result<Ordering, cel::ExecutionError> {
    Ok(typed::<Semver>(&args, 0)?
        .0
        .cmp_precedence(&typed::<Semver>(&args, 1)?.0))
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_library_as_the_upstream_tests_give_it() {
        for rule in [
            "isSemver('1.2.3') && isSemver('1.2.3-beta.1+build.5') && !isSemver('v1.2.3')",
            "!isSemver('1.2') && !isSemver('01.2.3') && !isSemver('1.2.3-01') && !isSemver('1.2.3-')",
            "isSemver('v1.2', true) && isSemver('01.02.03', true) && !isSemver('1.2-beta', true)",
            "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
            "semver('v01.2', true) == semver('1.2.0')",
            "semver('1.2.3').compareTo(semver('1.2.3')) == 0",
            "semver('1.2.3').compareTo(semver('2.0.0')) == -1",
            "semver('1.2.3').compareTo(semver('0.1.2')) == 1",
            "semver('1.0.0-alpha').isLessThan(semver('1.0.0'))",
            "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
            "semver('1.0.0+a') == semver('1.0.0+b')",
            "semver('2.0.0').isGreaterThan(semver('1.9.9'))",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        assert!(eval("semver('1.2') == semver('1.2.0')").is_err());
    }
}
