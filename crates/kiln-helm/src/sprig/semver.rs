//! Semantic versions and constraints as Masterminds/semver v3.5 has them (Helm v4.2.3's
//! go.mod; Sprig's `semver` and `semverCompare`, Helm's `kubeVersion` and dependency checks,
//! and Kargo's image selectors use it): a port of its `version.go` (`NewVersion` with
//! `CoerceNewVersion`, `Compare`, `comparePrerelease`, the prerelease and metadata checks)
//! and `constraints.go` (`NewConstraint` with its regular expressions, `rewriteRange`,
//! `parseConstraint` and the operator functions), errors in its words. v3's prerelease rule
//! holds: an `||` group matches a prerelease version only when one of its constraints has a
//! prerelease (`>=1.19-0`).

use std::cmp::Ordering;

use crate::template::exec::Funcs;
use crate::template::fmt::{s_ref, strval};
use crate::template::value::Value;
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

// Masterminds' regular expressions, matched by hand. Every render parses its
// `kubeVersion` and the chart's version, and most charts ask `semverCompare`: compiling the
// five patterns (even with regex-lite) and running them on a Pike VM was 3-4 % of the CPU
// of `kiln helm template` on a small chart, process start included (issue 37). The
// grammars are small and each of their matches is decided left to right without
// backtracking (argued at each function); the test module keeps the patterns themselves
// and checks these functions against them on random inputs
// (`hand_matchers_agree_with_masterminds_patterns`).
//
// The patterns, as Go compiles them (`\s` is Go's: ASCII `[\t\n\f\r ]`):
// - looseSemVerRegex: `^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$`
// - cvRegex (a constraint's version; its class holds a literal `|`, as Go's does):
//   `v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?`
// - the operators, in Go's order (its alternation prefers the earlier, empty one included):
//   `=||!=|>|<|>=|=>|<=|=<|~|~>|\^`
// - constraintRegex `^\s*(OPS)\s*(CV)\s*$`, constraintRangeRegex `\s*(CV)\s+-\s+(CV)\s*`,
//   findConstraintRegex `(OPS)\s*(CV)`, validConstraintRegex
//   `^(\s*(OPS)\s*(CV)\s*)((?:\s+|,\s*)(OPS)\s*(CV)\s*)*$`.

/// Go's `\s`.
fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0C | b'\r' | b' ')
}

/// cvRegex's number class `[0-9|x|X|\*]`.
fn is_cv_num(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'|' | b'x' | b'X' | b'*')
}

/// `[0-9A-Za-z\-]`, a prerelease or metadata identifier's class.
fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// The characters the operators are made of.
fn is_op_char(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'>' | b'<' | b'~' | b'^')
}

/// The operators in the alternation's order of preference, the empty one second.
const OPS: [&str; 12] = [
    "=", "", "!=", ">", "<", ">=", "=>", "<=", "=<", "~", "~>", "^",
];

/// Where a run of `class` starting at `i` ends (`i` when there is none).
fn run(s: &[u8], i: usize, class: fn(u8) -> bool) -> usize {
    i + s
        .get(i..)
        .map_or(0, |t| t.iter().take_while(|&&b| class(b)).count())
}

/// Where `[ident]+(\.[ident]+)*` starting at `i` ends, greedily (`i` when it does not match).
fn dotted(s: &[u8], i: usize) -> usize {
    let mut end = run(s, i, is_ident);
    if end == i {
        return i;
    }
    while s.get(end) == Some(&b'.') {
        let next = run(s, end + 1, is_ident);
        if next == end + 1 {
            break;
        }
        end = next;
    }
    end
}

/// A byte range of the text matched.
type Span = (usize, usize);

/// The spans of one version pattern's match (looseSemVerRegex's or cvRegex's), as byte
/// ranges: the major number, `.minor` and `.patch` with their dot, `-pre` with its dash,
/// `+meta` with its plus (empty ranges for the groups that did not take part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Spans {
    major: (usize, usize),
    minor: (usize, usize),
    patch: (usize, usize),
    pre: (usize, usize),
    meta: (usize, usize),
    end: usize,
}

/// The version pattern (numbers of class `num`) matched at `i`, every group as greedy as it
/// can be: the longest match the pattern has at `i`. Each group's greedy choice is the only
/// one a match can go on from, because what follows a group can never start with a
/// character its own class or its next group takes (`v` is not a number; a number run, a
/// `.number` and an identifier run end where their class ends; a shorter choice leaves a
/// character of the same class next). So where a pattern is followed by something that
/// cannot start with a version's character (the end, `\s`, `,`), this is its one match; and
/// where nothing follows (findConstraintRegex, the range's second version), a leftmost-first
/// engine takes the greedy path first and it succeeds.
fn version_at(s: &[u8], i: usize, num: fn(u8) -> bool) -> Option<Spans> {
    // `v?`: taken when there; without it the number class must match the `v`, and it never
    // does.
    let start = if s.get(i) == Some(&b'v') { i + 1 } else { i };
    let major_end = run(s, start, num);
    if major_end == start {
        return None;
    }
    let mut p = major_end;
    let number = |p: &mut usize| {
        let at = *p;
        if s.get(at) == Some(&b'.') {
            let end = run(s, at + 1, num);
            if end > at + 1 {
                *p = end;
                return (at, end);
            }
        }
        (at, at)
    };
    let minor = number(&mut p);
    let patch = number(&mut p);
    let tail = |p: &mut usize, lead: u8| {
        let at = *p;
        if s.get(at) == Some(&lead) {
            let end = dotted(s, at + 1);
            if end > at + 1 {
                *p = end;
                return (at, end);
            }
        }
        (at, at)
    };
    let pre = tail(&mut p, b'-');
    let meta = tail(&mut p, b'+');
    Some(Spans {
        major: (start, major_end),
        minor,
        patch,
        pre,
        meta,
        end: p,
    })
}

fn skip_ws(s: &[u8], i: usize) -> usize {
    run(s, i, is_ws)
}

/// One operator at `i` as the constraint patterns read it where `\s*` and a version follow:
/// the whole run of operator characters there (none is the empty operator). A shorter
/// choice would leave an operator character where the version must start, which no version
/// does, so a match has no other choice; a run that is no operator matches nothing.
fn op_at(s: &[u8], i: usize) -> Option<usize> {
    let end = run(s, i, is_op_char);
    OPS.contains(&std::str::from_utf8(&s[i..end]).ok()?)
        .then_some(end)
}

/// `looseSemVerRegex` anchored: the spans of `s` when it matches.
fn loose(s: &str) -> Option<Spans> {
    version_at(s.as_bytes(), 0, |b| b.is_ascii_digit()).filter(|m| m.end == s.len())
}

/// constraintRegex: the operator, then the version's spans.
fn constraint(s: &str) -> Option<(&str, (usize, usize), Spans)> {
    let b = s.as_bytes();
    let op_start = skip_ws(b, 0);
    let op_end = op_at(b, op_start)?;
    let v_start = skip_ws(b, op_end);
    let v = version_at(b, v_start, is_cv_num)?;
    (skip_ws(b, v.end) == b.len()).then_some((&s[op_start..op_end], (v_start, v.end), v))
}

/// constraintRangeRegex's leftmost match at or after `from`: the whole match and its two
/// versions. At each start the leading `\s*` takes every space (a version never starts with
/// one), the first version is its longest match (a shorter one is followed by a version's
/// character, not the `\s+` that must come), `\s+-\s+` takes its spaces whole for the same
/// reason, and the second version and the trailing `\s*` are greedy with nothing after.
fn range_at(s: &[u8], from: usize) -> Option<(Span, Span, Span)> {
    (from..s.len()).find_map(|p| {
        let a = skip_ws(s, p);
        let first = version_at(s, a, is_cv_num)?;
        let dash = skip_ws(s, first.end);
        if dash == first.end || s.get(dash) != Some(&b'-') {
            return None;
        }
        let b = skip_ws(s, dash + 1);
        if b == dash + 1 {
            return None;
        }
        let second = version_at(s, b, is_cv_num)?;
        let end = skip_ws(s, second.end);
        Some(((p, end), (a, first.end), (b, second.end)))
    })
}

/// findConstraintRegex's leftmost match at or after `from`: at each start, the operators in
/// the alternation's order, the first followed by `\s*` and a version winning (the version
/// is greedy, nothing follows it).
fn find_at(s: &[u8], from: usize) -> Option<(usize, usize)> {
    (from..s.len()).find_map(|p| {
        OPS.iter().find_map(|op| {
            if !s[p..].starts_with(op.as_bytes()) {
                return None;
            }
            let v = version_at(s, skip_ws(s, p + op.len()), is_cv_num)?;
            Some((p, v.end))
        })
    })
}

/// validConstraintRegex: terms `OP \s* VERSION`, the first after `\s*`, the others after
/// `\s+` or `,\s*`, each followed by `\s*`, to the end. A term's version is its longest
/// match (a shorter one is followed by a version's character, where only a space, a comma
/// or the end may come), and the spaces after it are one run, so the separator is a comma
/// if one comes next, else that run, which must not be empty.
fn valid(s: &str) -> bool {
    let b = s.as_bytes();
    let mut p = skip_ws(b, 0);
    loop {
        let Some(op_end) = op_at(b, p) else {
            return false;
        };
        let Some(v) = version_at(b, skip_ws(b, op_end), is_cv_num) else {
            return false;
        };
        let after = skip_ws(b, v.end);
        if after == b.len() {
            return true;
        }
        p = if b[after] == b',' {
            skip_ws(b, after + 1)
        } else if after > v.end {
            after
        } else {
            return false;
        };
    }
}

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
        let m = loose(s).ok_or(ERR_INVALID_SEMVER)?;
        let group = |(a, b): (usize, usize)| &s[a..b];
        // `.minor`, `-pre`, `+meta` without their lead character.
        let after = |(a, b): (usize, usize)| &s[(a + 1).min(b)..b];
        let part = |span: (usize, usize)| match group(span) {
            "" => Ok(0),
            _ => segment(after(span)),
        };
        let v = Version {
            major: segment(group(m.major))?,
            minor: part(m.minor)?,
            patch: part(m.patch)?,
            pre: after(m.pre).to_string(),
            meta: after(m.meta).to_string(),
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
    let mut from = 0;
    while let Some(((a, b), first, second)) = range_at(c.as_bytes(), from) {
        let t = format!(
            ">= {}, <= {} ",
            &c[first.0..first.1],
            &c[second.0..second.1]
        );
        out = out.replacen(&c[a..b], &t, 1);
        from = b;
    }
    out
}

/// `parseConstraint` of one `op version` found in a group.
fn parse_term(c: &str) -> Result<Term, String> {
    let (op, whole, m) = constraint(c).ok_or_else(|| format!("improper constraint: {c:?}"))?;
    // constraintRegex's groups 2-6: the version, its major, `.minor`, `.patch`, `-pre`.
    let group = |i: usize| {
        let (a, b) = match i {
            2 => whole,
            3 => m.major,
            4 => m.minor,
            5 => m.patch,
            _ => m.pre,
        };
        &c[a..b]
    };
    let op = match op {
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
            if !valid(v) {
                return Err(format!("improper constraint: {v:?}"));
            }
            let mut found = Vec::new();
            let mut from = 0;
            while let Some((a, b)) = find_at(v.as_bytes(), from) {
                found.push(&v[a..b]);
                from = b;
            }
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
    /// each answer costs reading the constraint with four of Masterminds' patterns and the
    /// version with a fifth: a pure function of its two strings, so asked once per thread.
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

    /// Masterminds' patterns as they were compiled before the hand matchers (regex-lite,
    /// leftmost-first as Go's `regexp`; every class ASCII as written), and the hand
    /// matchers checked against them: match or not, and every group the port reads, on
    /// random strings over the grammars' characters (and a few others: `_`, `\x0B`, which
    /// Go's `\s` does not hold, a two-byte character) and on random sequences of the
    /// grammars' tokens, which reach the valid and the range forms often.
    #[test]
    fn hand_matchers_agree_with_masterminds_patterns() {
        use regex_lite::Regex;
        const CV: &str = concat!(
            r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?",
            r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?",
            r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
        );
        const OPS_RE: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";
        let pattern = |p: String| Regex::new(&p.replace(r"\s", r"[\t\n\x0C\r ]")).unwrap();
        let loose_re = Regex::new(concat!(
            r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?",
            r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?",
            r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$"
        ))
        .unwrap();
        let constraint_re = pattern(format!(r"^\s*({OPS_RE})\s*({CV})\s*$"));
        let range_re = pattern(format!(r"\s*({CV})\s+-\s+({CV})\s*"));
        let find_re = pattern(format!(r"({OPS_RE})\s*({CV})"));
        let valid_re = pattern(format!(
            r"^(\s*({OPS_RE})\s*({CV})\s*)((?:\s+|,\s*)({OPS_RE})\s*({CV})\s*)*$"
        ));
        let span = |m: Option<regex_lite::Match>| m.map_or((0, 0), |m| (m.start(), m.end()));
        // An empty group is compared by its text: where it sits does not matter to the port.
        let text = |s: &str, (a, b): (usize, usize)| s[a..b].to_string();

        let chars: Vec<&str> = vec![
            "v", "0", "1", "2", "9", "0", "x", "X", "*", "|", ".", ".", "-", "-", "+", "a", "Z",
            "b", " ", " ", "\t", "\n", "\x0C", "\r", "\x0B", ",", "=", "!", ">", "<", "~", "^",
            "_", "é",
        ];
        let tokens: Vec<&str> = vec![
            "1",
            "1.2",
            "1.2.3",
            "v1.2.3",
            "1.x",
            "1.2.*",
            "X",
            "1.2.3-rc.1",
            "1.0.0-0",
            "1.2.3+b.5",
            "1.2-a+b",
            "01.2",
            "1|2",
            "=",
            "!=",
            ">",
            "<",
            ">=",
            "=>",
            "<=",
            "=<",
            "~",
            "~>",
            "^",
            " ",
            "  ",
            ",",
            ", ",
            " - ",
            " - ",
            " - ",
            "-",
            "||",
            ".",
            "+",
            "a",
            "é",
        ];
        // How often each pattern matched: the inputs must reach every form.
        let mut matched = [0usize; 5];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..60_000 {
            let (set, max) = if i % 2 == 0 {
                (&chars, 16)
            } else {
                (&tokens, 8)
            };
            let n = (next() % (max + 1)) as usize;
            let s: String = (0..n)
                .map(|_| set[(next() % set.len() as u64) as usize])
                .collect();
            let s = s.as_str();
            let b = s.as_bytes();

            let want = loose_re
                .captures(s)
                .map(|m| [1, 2, 3, 5, 8].map(|g| m.get(g).map_or("", |g| g.as_str()).to_string()));
            let got = loose(s).map(|m| {
                let after = |(a, b): (usize, usize)| s[(a + 1).min(b)..b].to_string();
                [
                    text(s, m.major),
                    text(s, m.minor),
                    text(s, m.patch),
                    after(m.pre),
                    after(m.meta),
                ]
            });
            matched[0] += usize::from(want.is_some());
            assert_eq!(got, want, "looseSemVerRegex on {s:?}");

            let want = constraint_re.captures(s).map(|m| {
                [1, 2, 3, 4, 5, 6].map(|g| m.get(g).map_or("", |g| g.as_str()).to_string())
            });
            let got = constraint(s).map(|(op, whole, m)| {
                [
                    op.to_string(),
                    text(s, whole),
                    text(s, m.major),
                    text(s, m.minor),
                    text(s, m.patch),
                    text(s, m.pre),
                ]
            });
            matched[1] += usize::from(want.is_some());
            assert_eq!(got, want, "constraintRegex on {s:?}");

            let want: Vec<_> = range_re
                .captures_iter(s)
                .map(|m| {
                    (
                        span(m.get(0)),
                        text(s, span(m.get(1))),
                        text(s, span(m.get(11))),
                    )
                })
                .collect();
            let mut got = Vec::new();
            let mut from = 0;
            while let Some((whole, first, second)) = range_at(b, from) {
                got.push((whole, text(s, first), text(s, second)));
                from = whole.1;
            }
            matched[2] += usize::from(!want.is_empty());
            assert_eq!(got, want, "constraintRangeRegex on {s:?}");

            let want: Vec<_> = find_re.find_iter(s).map(|m| (m.start(), m.end())).collect();
            let mut got = Vec::new();
            let mut from = 0;
            while let Some(m) = find_at(b, from) {
                got.push(m);
                from = m.1;
            }
            matched[3] += usize::from(!want.is_empty());
            assert_eq!(got, want, "findConstraintRegex on {s:?}");

            let want = valid_re.is_match(s);
            matched[4] += usize::from(want);
            assert_eq!(valid(s), want, "validConstraintRegex on {s:?}");
        }
        eprintln!("matched (loose, constraint, range, find, valid): {matched:?}");
        assert!(matched.iter().all(|&n| n >= 500), "{matched:?}");
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
