//! Semantic versions and constraints as Masterminds/semver v3.5 has them (Helm v4.2.3's
//! go.mod; Sprig's `semver` and `semverCompare`, Helm's `kubeVersion` and dependency checks,
//! and Kargo's image selectors use it): a port of its `version.go` (`NewVersion` with
//! `CoerceNewVersion`, `Compare`, `comparePrerelease`, the prerelease and metadata checks)
//! and `constraints.go` (`NewConstraint` with its regular expressions, `rewriteRange`,
//! `parseConstraint` and the operator functions), errors in its words. v3's prerelease rule
//! holds: an `||` group matches a prerelease version only when one of its constraints has a
//! prerelease (`>=1.19-0`).

use std::cmp::Ordering;
use std::sync::LazyLock;

use crate::template::exec::Funcs;
use crate::template::fmt::{s_ref, strval};
use crate::template::value::Value;
// regex-lite, not regex: these five patterns are compiled once per process for every chart
// (its version, `kubeVersion`, dependency constraints), and the regex crate's compile (its
// literal prefilters and lazy DFA) was a tenth of `kiln helm template`'s CPU on a small
// chart. The texts matched are a few bytes long, and every class here is ASCII as written,
// so the two crates match alike (issue 37).
use regex_lite::Regex;
use std::rc::Rc;

const ERR_INVALID_SEMVER: &str = "invalid semantic version";

/// A version as `NewVersion` reads it: `v` prefix, minor and patch optional, leading zeros
/// in the numbers coerced (`01.2` is `1.2.0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub meta: String,
    pub original: String,
}

/// `looseSemVerRegex`, anchored. Go's `\s` and classes are ASCII, as written here.
static LOOSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?",
        r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?",
        r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$"
    ))
    .expect("a valid pattern")
});

/// `cvRegex`: a constraint's version (its class holds a literal `|`, as Go's does).
const CV: &str = concat!(
    r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?",
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?",
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
);
/// The operators, in Go's order (its alternation prefers the earlier, empty one included).
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";
/// Go's `\s`.
const WS: &str = r"[\t\n\x0C\r ]";

fn pattern(p: String) -> Regex {
    Regex::new(&p.replace(r"\s", WS)).expect("a valid pattern")
}

static CONSTRAINT: LazyLock<Regex> =
    LazyLock::new(|| pattern(format!(r"^\s*({OPS})\s*({CV})\s*$")));
static RANGE: LazyLock<Regex> = LazyLock::new(|| pattern(format!(r"\s*({CV})\s+-\s+({CV})\s*")));
static FIND: LazyLock<Regex> = LazyLock::new(|| pattern(format!(r"({OPS})\s*({CV})")));
static VALID: LazyLock<Regex> = LazyLock::new(|| {
    pattern(format!(
        r"^(\s*({OPS})\s*({CV})\s*)((?:\s+|,\s*)({OPS})\s*({CV})\s*)*$"
    ))
});

/// `strconv.ParseUint(s, 10, 64)` and its error as `NewVersion` wraps it.
fn segment(s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| {
        format!(
            "error parsing version segment: strconv.ParseUint: parsing {s:?}: value out of range"
        )
    })
}

fn numeric(p: &str) -> bool {
    p.bytes().all(|b| b.is_ascii_digit())
}

fn allowed(p: &str) -> bool {
    p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// `validatePrerelease`.
fn validate_prerelease(p: &str) -> Result<(), String> {
    for part in p.split('.') {
        if part.is_empty() {
            return Err("invalid prerelease string".into());
        } else if numeric(part) {
            if part.len() > 1 && part.starts_with('0') {
                return Err("version segment starts with 0".into());
            }
        } else if !allowed(part) {
            return Err("invalid prerelease string".into());
        }
    }
    Ok(())
}

/// `validateMetadata`.
fn validate_metadata(m: &str) -> Result<(), String> {
    if m.split('.').any(|p| p.is_empty() || !allowed(p)) {
        return Err("invalid metadata string".into());
    }
    Ok(())
}

impl Version {
    /// `NewVersion` (`coerceNewVersion`): `v1`, `1.2`, `1.2.3-rc.1+meta`; no surrounding
    /// space.
    pub fn parse(s: &str) -> Result<Version, String> {
        let m = LOOSE.captures(s).ok_or(ERR_INVALID_SEMVER)?;
        let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
        let part = |i: usize| match group(i).strip_prefix('.') {
            Some(p) => segment(p),
            None => Ok(0),
        };
        let v = Version {
            major: segment(group(1))?,
            minor: part(2)?,
            patch: part(3)?,
            pre: group(5).to_string(),
            meta: group(8).to_string(),
            original: s.to_string(),
        };
        if !v.pre.is_empty() {
            validate_prerelease(&v.pre)?;
        }
        if !v.meta.is_empty() {
            validate_metadata(&v.meta)?;
        }
        Ok(v)
    }

    /// `StrictNewVersion`: exactly `MAJOR.MINOR.PATCH` without leading zeros, then an
    /// optional prerelease and metadata.
    pub fn parse_strict(s: &str) -> Result<Version, String> {
        if s.is_empty() {
            return Err("version string empty".into());
        }
        let mut parts: Vec<&str> = s.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err(ERR_INVALID_SEMVER.into());
        }
        let mut meta = "";
        if let Some((a, b)) = parts[2].split_once('+') {
            meta = b;
            parts[2] = a;
            validate_metadata(meta)?;
        }
        let mut pre = "";
        if let Some((a, b)) = parts[2].split_once('-') {
            pre = b;
            parts[2] = a;
            validate_prerelease(pre)?;
        }
        for p in &parts {
            if !numeric(p) {
                return Err("invalid characters in version".into());
            }
            if p.len() > 1 && p.starts_with('0') {
                return Err("version segment starts with 0".into());
            }
        }
        let num = |p: &str| {
            p.parse::<u64>()
                .map_err(|_| format!("strconv.ParseUint: parsing {p:?}: invalid syntax"))
        };
        Ok(Version {
            major: num(parts[0])?,
            minor: num(parts[1])?,
            patch: num(parts[2])?,
            pre: pre.to_string(),
            meta: meta.to_string(),
            original: s.to_string(),
        })
    }

    /// `Compare`: the numbers, then the prerelease (none is greater); metadata is ignored.
    pub fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => compare_prerelease(&self.pre, &o.pre),
            })
    }
}

/// `Version.String()`: the version normalized (`1.2.0-rc.1+b`).
impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.meta.is_empty() {
            write!(f, "+{}", self.meta)?;
        }
        Ok(())
    }
}

/// `comparePrerelease`: part by part, a missing part first.
fn compare_prerelease(v: &str, o: &str) -> Ordering {
    let (sp, op): (Vec<&str>, Vec<&str>) = (v.split('.').collect(), o.split('.').collect());
    for i in 0..sp.len().max(op.len()) {
        let d = compare_pre_part(
            sp.get(i).copied().unwrap_or(""),
            op.get(i).copied().unwrap_or(""),
        );
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

/// `comparePrePart`: numbers before words; two numbers that differ only in leading zeros
/// (`01`, `1`) are "less" either way round, as in Go.
fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => {
            if s > o {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(si), Ok(oi)) => {
            if si > oi {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

/// One `op version` of a constraint (`constraint`).
struct Term {
    op: &'static str,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

/// `NewConstraint`: `||` groups of constraints, each group's flag saying whether one of
/// them has a prerelease.
pub struct Constraints {
    groups: Vec<(Vec<Term>, bool)>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "*" | "X")
}

/// `rewriteRange`: `1.2 - 1.4` becomes `>= 1.2, <= 1.4 `.
fn rewrite_range(c: &str) -> String {
    let mut out = c.to_string();
    for m in RANGE.captures_iter(c) {
        let whole = m.get(0).map_or("", |g| g.as_str());
        let t = format!(
            ">= {}, <= {} ",
            m.get(1).map_or("", |g| g.as_str()),
            m.get(11).map_or("", |g| g.as_str())
        );
        out = out.replacen(whole, &t, 1);
    }
    out
}

/// `parseConstraint` of one `op version` found in a group.
fn parse_term(c: &str) -> Result<Term, String> {
    let m = CONSTRAINT
        .captures(c)
        .ok_or_else(|| format!("improper constraint: {c:?}"))?;
    let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
    let op = match group(1) {
        "" | "=" => "=",
        "!=" => "!=",
        ">" => ">",
        "<" => "<",
        ">=" | "=>" => ">=",
        "<=" | "=<" => "<=",
        "~" | "~>" => "~",
        _ => "^",
    };
    let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
    let minor = group(4).strip_prefix('.').unwrap_or("");
    let patch = group(5).strip_prefix('.').unwrap_or("");
    let ver = if is_x(group(3)) || group(3).is_empty() {
        dirty = true;
        format!("0.0.0{}", group(6))
    } else if is_x(minor) || group(4).is_empty() {
        minor_dirty = true;
        dirty = true;
        format!("{}.0.0{}", group(3), group(6))
    } else if is_x(patch) || group(5).is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{}{}.0{}", group(3), group(4), group(6))
    } else {
        group(2).to_string()
    };
    let con = Version::parse(&ver).map_err(|_| "constraint parser error".to_string())?;
    Ok(Term {
        op,
        con,
        minor_dirty,
        patch_dirty,
        dirty,
    })
}

impl Constraints {
    pub fn parse(c: &str) -> Result<Constraints, String> {
        let c = rewrite_range(c);
        let mut groups = Vec::new();
        for v in c.split("||") {
            if !VALID.is_match(v) {
                return Err(format!("improper constraint: {v:?}"));
            }
            let found: Vec<&str> = FIND.find_iter(v).map(|m| m.as_str()).collect();
            let found = if found.is_empty() { vec![v] } else { found };
            let terms = found
                .into_iter()
                .map(parse_term)
                .collect::<Result<Vec<_>, _>>()?;
            let has_pre = terms.iter().any(|t| !t.con.pre.is_empty());
            groups.push((terms, has_pre));
        }
        Ok(Constraints { groups })
    }

    /// `Check`.
    pub fn check(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|(terms, pre)| terms.iter().all(|t| t.check(v, *pre)))
    }
}

impl Term {
    /// The operator functions of `constraints.go` (their reasons dropped: `Check` ignores
    /// them).
    fn check(&self, v: &Version, include_pre: bool) -> bool {
        if !v.pre.is_empty() && !include_pre {
            return false;
        }
        let c = &self.con;
        let cmp = v.compare(c);
        match self.op {
            "!=" => {
                if self.dirty {
                    if c.major != v.major {
                        return true;
                    }
                    if c.minor != v.minor && !self.minor_dirty {
                        return true;
                    } else if self.minor_dirty {
                        return false;
                    } else if c.patch != v.patch && !self.patch_dirty {
                        return true;
                    } else if self.patch_dirty {
                        if !v.pre.is_empty() || !c.pre.is_empty() {
                            return compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
                        }
                        return false;
                    }
                }
                cmp != Ordering::Equal
            }
            ">" => {
                if !self.dirty {
                    return cmp == Ordering::Greater;
                }
                if v.major > c.major {
                    true
                } else if v.major < c.major || self.minor_dirty {
                    false
                } else if self.patch_dirty {
                    v.minor > c.minor
                } else {
                    cmp == Ordering::Greater
                }
            }
            "<" => cmp == Ordering::Less,
            ">=" => cmp != Ordering::Less,
            "<=" => {
                if !self.dirty {
                    return cmp != Ordering::Greater;
                }
                !(v.major > c.major
                    || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            "~" => self.tilde(v, cmp),
            "=" => {
                if self.dirty {
                    return self.tilde(v, cmp);
                }
                cmp == Ordering::Equal
            }
            _ => {
                // `^`
                if cmp == Ordering::Less {
                    return false;
                }
                if c.major > 0 || self.minor_dirty {
                    return v.major == c.major;
                }
                if v.major > 0 {
                    return false;
                }
                if c.minor > 0 || self.patch_dirty {
                    return v.minor == c.minor;
                }
                if v.minor > 0 {
                    return false;
                }
                c.patch == v.patch
            }
        }
    }

    /// `constraintTilde`.
    fn tilde(&self, v: &Version, cmp: Ordering) -> bool {
        let c = &self.con;
        if cmp == Ordering::Less {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        if v.major != c.major {
            return false;
        }
        v.minor == c.minor || self.minor_dirty
    }
}

/// Whether `version` satisfies `constraint` (`NewConstraint`, then `Check`).
pub fn satisfies(constraint: &str, version: &Version) -> Result<bool, String> {
    Ok(Constraints::parse(constraint)?.check(version))
}

thread_local! {
    /// `semverCompare`'s answers by (constraint, version). Charts ask the same few questions
    /// of `.Capabilities.KubeVersion` in template after template (traefik: 41 calls), and
    /// each answer costs matching four regular expressions (Masterminds' own) on a Pike VM:
    /// a pure function of its two strings, so asked once per thread.
    static COMPARED: std::cell::RefCell<std::collections::HashMap<(String, String), Result<bool, String>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Sprig's `semver` and `semverCompare` (semver.go) over this port.
pub(super) fn register(f: &mut Funcs) {
    f.add1("semver", |_, a0| {
        let v = Version::parse(&s_ref(a0))?;
        Ok(semver_value(&v))
    });
    f.add2("semverCompare", |_, a0, a1| {
        let (constraint, version) = (s_ref(a0), s_ref(a1));
        let compare = || -> Result<bool, String> {
            // Sprig reads the constraint first: a bad one is the error even with a bad version.
            let c = Constraints::parse(&constraint)?;
            let v = Version::parse(&version)?;
            Ok(c.check(&v))
        };
        Ok(Value::Bool(COMPARED.with(|memo| {
            let key = (constraint.to_string(), version.to_string());
            if let Some(r) = memo.borrow().get(&key) {
                return r.clone();
            }
            let r = compare();
            let mut memo = memo.borrow_mut();
            if memo.len() < 1024 {
                memo.insert(key, r.clone());
            }
            r
        })?))
    });
}

struct SemverObj(Version);

impl crate::template::value::Object for SemverObj {
    fn type_name(&self) -> &str {
        "*semver.Version"
    }
    fn arity(&self, name: &str) -> Option<usize> {
        (name == "Compare").then_some(1)
    }
    fn field(&self, name: &str) -> Option<Value> {
        let v = &self.0;
        Some(match name {
            "Major" => Value::Int(v.major as i64),
            "Minor" => Value::Int(v.minor as i64),
            "Patch" => Value::Int(v.patch as i64),
            "Prerelease" => Value::from(v.pre.clone()),
            "Metadata" => Value::from(v.meta.clone()),
            "Original" => Value::from(v.original.clone()),
            "String" => Value::from(self.display()),
            _ => return None,
        })
    }
    fn call(
        &self,
        _: &crate::template::value::Cx,
        name: &str,
        args: &[Value],
    ) -> Option<Result<Value, String>> {
        match name {
            "Compare" => {
                let other = match args.first() {
                    Some(Value::Object(o)) => Version::parse(&o.display()),
                    Some(v) => Version::parse(&strval(v)),
                    None => return Some(Err("Compare needs a version".into())),
                };
                Some(other.map(|o| {
                    Value::Int(match self.0.compare(&o) {
                        std::cmp::Ordering::Less => -1,
                        std::cmp::Ordering::Equal => 0,
                        std::cmp::Ordering::Greater => 1,
                    })
                }))
            }
            _ => None,
        }
    }
    fn display(&self) -> String {
        self.0.to_string()
    }
}

fn semver_value(v: &Version) -> Value {
    Value::Object(Rc::new(SemverObj(v.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(c: &str, v: &str) -> bool {
        satisfies(c, &Version::parse(v).unwrap()).unwrap()
    }

    /// `NewVersion`'s errors, in v3.5's words (lower case since v3.4), and no trimming;
    /// `StrictNewVersion`'s; and `NewConstraint`'s: a group the validating expression
    /// refuses is an improper constraint (quoted), a version its expression lets through but
    /// `NewVersion` refuses is "constraint parser error".
    #[test]
    fn versions_and_constraints_fail_as_masterminds_does() {
        let range = "error parsing version segment: strconv.ParseUint: parsing \"99999999999999999999\": value out of range";
        let cases: [(Result<Version, String>, &str); 9] = [
            (Version::parse("bad"), "invalid semantic version"),
            (Version::parse(" 1.2.3"), "invalid semantic version"),
            (Version::parse("1.2.3.4"), "invalid semantic version"),
            (Version::parse("1.2.3-"), "invalid semantic version"),
            (Version::parse("1.2.3-01"), "version segment starts with 0"),
            (Version::parse("99999999999999999999.1.2"), range),
            (
                Version::parse_strict("01.2.3"),
                "version segment starts with 0",
            ),
            (Version::parse_strict("1.2"), "invalid semantic version"),
            (
                Version::parse_strict("1.2.x"),
                "invalid characters in version",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got.err().as_deref(), Some(want));
        }
        let v = Version::parse("v01.2.3-rc.1+b").unwrap();
        assert_eq!((v.major, v.to_string()), (1, "1.2.3-rc.1+b".to_string()));
        for (c, want) in [
            (">=", "improper constraint: \">=\""),
            ("1.2.3 ||", "improper constraint: \"\""),
            ("", "improper constraint: \"\""),
            ("1.2 -1.3", "improper constraint: \"1.2 -1.3\""),
            ("xx", "constraint parser error"),
            ("1|2", "constraint parser error"),
            ("~1.2.3-01", "constraint parser error"),
        ] {
            assert_eq!(Constraints::parse(c).err().as_deref(), Some(want), "{c}");
        }
        assert!(Constraints::parse("1.2 - 1.4.5").is_ok());
    }

    #[test]
    fn constraints_like_masterminds() {
        assert!(ok(">=1.21.0-0", "v1.36.0"));
        assert!(ok(">= 1.19-0", "1.36.0"));
        assert!(!ok("<1.25", "1.36.0"));
        assert!(ok("^1.25.0-0", "v1.36.0"));
        assert!(ok("~1.36", "1.36.4"));
        assert!(!ok("~1.36", "1.37.0"));
        assert!(ok(">=1.16.0-0 <2", "1.36.0"));
        assert!(ok("1.x", "1.5.0"));
        assert!(ok("<1.20 || >=1.30", "1.36.0"));
        assert!(!ok(">=1.0.0", "1.36.0-rc.1"));
        // A prerelease in one constraint of an `||` group lets the whole group match
        // prereleases (v3.4's #267), not only that constraint.
        assert!(ok(">1.0.0-alpha.1 <1.0.0", "1.0.0-alpha.2"));
        // `!=` with a wild patch and a prerelease: the prereleases are compared, and a
        // release differs from `-alpha`.
        assert!(ok("!=1.2.x-alpha", "1.2.3"));
        assert!(ok("!=1.2.x-alpha", "1.2.3-beta.2"));
        assert!(!ok("!=1.2.x", "1.2.3"));
    }
}
