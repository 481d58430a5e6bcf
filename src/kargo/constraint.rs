//! A parser for the semver constraints Kargo accepts in a Warehouse image subscription's
//! `constraint` (SemVer strategy): the syntax of Masterminds/semver v3
//! (`constraints.go`, `NewConstraint`), which Kargo calls.
//!
//! Grammar, as Masterminds reads it: alternatives separated by `||`; each alternative is a
//! list of constraints separated by commas or spaces (all must hold), or a hyphen range
//! `1.2 - 1.4.5`; each constraint is an optional operator (`=`, `!=`, `>`, `<`, `>=`, `=>`,
//! `<=`, `=<`, `~`, `~>`, `^`) and a version `v?MAJOR[.MINOR[.PATCH]][-pre][+build]` whose
//! numbers may be wildcards (`x`, `X`, `*`).
//!
//! Invariant: parsing is total (returns an error, never panics) and keeps no state.

use std::fmt;

/// A constraint that could not be parsed: what was wrong and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintError {
    /// Lower-case reason, e.g. ``expected a version after `>=` ``.
    pub message: String,
    /// Byte offset in the constraint text.
    pub offset: usize,
}

impl fmt::Display for ConstraintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

/// One comparison: operator and version as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The operator (`""` means `=`).
    pub op: String,
    /// Version parts; `None` for a wildcard or a missing part.
    pub major: Option<u64>,
    pub minor: Option<u64>,
    pub patch: Option<u64>,
    /// Pre-release identifiers after `-`, when given.
    pub prerelease: Option<String>,
}

/// A parsed constraint: alternatives (or), each a list of comparisons (and). A hyphen range
/// `a - b` is stored as `>= a` and `<= b`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    pub alternatives: Vec<Vec<Comparison>>,
}

const OPERATORS: [&str; 11] = ["!=", ">=", "=>", "<=", "=<", "~>", "=", ">", "<", "~", "^"];

/// Parses a Masterminds/semver constraint (see the module docs).
///
/// Errors: [`ConstraintError`] for an empty constraint or alternative, an unknown character,
/// a version with more than three numbers, a number with a leading sign, an operator
/// without a version, or a hyphen range with a missing side.
pub fn parse(text: &str) -> Result<Constraint, ConstraintError> {
    if text.trim().is_empty() {
        return Err(ConstraintError {
            message: "the constraint is empty".into(),
            offset: 0,
        });
    }
    let mut alternatives = Vec::new();
    let mut start = 0;
    for part in text.split("||") {
        alternatives.push(parse_alternative(part, start)?);
        start += part.len() + 2;
    }
    Ok(Constraint { alternatives })
}

/// Tokens of one alternative with their byte offsets: operators glued to their version
/// (`>= 1.2` becomes one comparison), commas dropped.
fn parse_alternative(text: &str, base: usize) -> Result<Vec<Comparison>, ConstraintError> {
    let mut words: Vec<(usize, &str)> = Vec::new();
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        let c = bytes[i];
        if c == b' ' || c == b'\t' || c == b',' {
            i += 1;
            continue;
        }
        let begin = i;
        while i < bytes.len() && !matches!(bytes[i], b' ' | b'\t' | b',') {
            i += 1;
        }
        words.push((base + begin, &text[begin..i]));
    }
    if words.is_empty() {
        return Err(ConstraintError {
            message: "empty alternative around `||`".into(),
            offset: base,
        });
    }
    // Hyphen range: exactly `a - b`.
    if let Some(pos) = words.iter().position(|(_, w)| *w == "-") {
        if pos != 1 || words.len() != 3 {
            return Err(ConstraintError {
                message: "a hyphen range is written `LOW - HIGH`".into(),
                offset: words[pos].0,
            });
        }
        let low = version(words[0].1, words[0].0, "")?;
        let high = version(words[2].1, words[2].0, "")?;
        return Ok(vec![
            Comparison {
                op: ">=".into(),
                ..low
            },
            Comparison {
                op: "<=".into(),
                ..high
            },
        ]);
    }
    let mut out = Vec::new();
    let mut k = 0;
    while k < words.len() {
        let (offset, word) = words[k];
        let op = OPERATORS
            .iter()
            .find(|op| word.starts_with(**op))
            .copied()
            .unwrap_or("");
        let rest = &word[op.len()..];
        if rest.is_empty() {
            if op.is_empty() {
                return Err(ConstraintError {
                    message: format!("unexpected `{word}`"),
                    offset,
                });
            }
            // `>= 1.2`: the version is the next word.
            let Some(&(next_offset, next)) = words.get(k + 1) else {
                return Err(ConstraintError {
                    message: format!("expected a version after `{op}`"),
                    offset,
                });
            };
            out.push(version(next, next_offset, op)?);
            k += 2;
        } else {
            out.push(version(rest, offset + op.len(), op)?);
            k += 1;
        }
    }
    Ok(out)
}

/// Parses `v?N[.N[.N]][-pre][+build]` with wildcard numbers.
fn version(text: &str, offset: usize, op: &str) -> Result<Comparison, ConstraintError> {
    let err = |message: String, at: usize| ConstraintError {
        message,
        offset: offset + at,
    };
    let body = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let skipped = text.len() - body.len();
    let (core, build) = match body.split_once('+') {
        Some((c, b)) => (c, Some(b)),
        None => (body, None),
    };
    let (core, pre) = match core.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (core, None),
    };
    let ident_ok = |s: &str| {
        !s.is_empty()
            && s.split('.').all(|id| {
                !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
    };
    if let Some(p) = pre
        && !ident_ok(p)
    {
        return Err(err(
            format!("invalid pre-release `{p}` in `{text}`"),
            skipped + core.len() + 1,
        ));
    }
    if let Some(b) = build
        && !ident_ok(b)
    {
        return Err(err(
            format!("invalid build metadata `{b}` in `{text}`"),
            skipped,
        ));
    }
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3 {
        return Err(err(
            format!("`{text}` has more than three version numbers"),
            skipped,
        ));
    }
    let mut nums = [None, None, None];
    let mut at = skipped;
    for (n, part) in parts.iter().enumerate() {
        nums[n] = match *part {
            "x" | "X" | "*" => None,
            "" => return Err(err(format!("expected a number in `{text}`"), at)),
            p if p.chars().all(|c| c.is_ascii_digit()) => Some(
                p.parse::<u64>()
                    .map_err(|_| err(format!("`{p}` is too large"), at))?,
            ),
            p => {
                return Err(err(
                    format!("`{p}` is not a version number in `{text}`"),
                    at,
                ));
            }
        };
        at += part.len() + 1;
    }
    Ok(Comparison {
        op: op.to_string(),
        major: nums[0],
        minor: nums[1],
        patch: nums[2],
        prerelease: pre.map(str::to_string),
    })
}

/// Whether a SemVer image subscription would ever discover `tag`: what `semverSelector.MatchesTag`
/// (Kargo v1.11.2 `pkg/image/semver_selector.go`) decides. The tag must parse as a semantic
/// version (`pkg/controller/semver/parser.go`: loosely, and with `strict` also strictly once a
/// leading `v` is dropped), and satisfy `constraint` when one is given. The check itself is
/// Masterminds/semver v3's, the one implementation kiln has ([`crate::helm::sprig::semver`]).
pub fn admits(constraint: Option<&str>, tag: &str, strict: bool) -> bool {
    use crate::helm::sprig::semver::{Version, satisfies};
    let Ok(version) = Version::parse(tag) else {
        return false;
    };
    if strict && Version::parse_strict(tag.strip_prefix('v').unwrap_or(tag)).is_err() {
        return false;
    }
    match constraint {
        None => true,
        Some(c) => satisfies(c, &version).unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_syntax_kargo_users_write() {
        for ok in [
            "^1.2",
            "~1.2.3",
            ">=1.0 <2.0",
            ">= 1.0, < 2.0",
            "1.x",
            "*",
            "^1.4.0 || ~2.0",
            "1.2 - 1.4.5",
            "v1.2.3",
            "~> 3.1",
            "=<1.9",
            "!=1.5.0",
            "^1.0.0-rc.1",
            "1.2.3+build.5",
            "~7.2",
        ] {
            assert!(parse(ok).is_ok(), "{ok}: {:?}", parse(ok));
        }
    }

    #[test]
    fn rejects_what_masterminds_rejects_with_the_offset() {
        let e = parse(">=").unwrap_err();
        assert_eq!(e.message, "expected a version after `>=`");
        let e = parse("1.2.3.4").unwrap_err();
        assert!(e.message.contains("more than three"), "{e}");
        let e = parse("^1.2 || ").unwrap_err();
        assert_eq!(e.offset, 7);
        let e = parse("latest").unwrap_err();
        assert!(e.message.contains("not a version number"), "{e}");
        assert!(parse("").is_err());
        assert!(parse("1.2 - ").is_err());
        assert!(parse("^1.a").is_err());
    }

    #[test]
    fn keeps_structure() {
        let c = parse(">=1.0 <2 || 3.x").unwrap();
        assert_eq!(c.alternatives.len(), 2);
        assert_eq!(c.alternatives[0][1].op, "<");
        assert_eq!(c.alternatives[0][1].major, Some(2));
        assert_eq!(c.alternatives[1][0].minor, None);
        let r = parse("1.2 - 1.4.5").unwrap();
        assert_eq!(r.alternatives[0][0].op, ">=");
        assert_eq!(r.alternatives[0][1].patch, Some(5));
    }

    #[test]
    fn admits_what_a_semver_selector_would_discover() {
        assert!(admits(Some("^1.4.0"), "1.4.2", true));
        assert!(admits(Some("^1.4.0"), "v1.9.0", true));
        assert!(!admits(Some("^1.4.0"), "2.0.0", true));
        assert!(!admits(Some(">=0.9.0 <1.0.0"), "1.0.0", true));
        assert!(admits(None, "3.0.0", true));
        // Not a version at all, or not a strict one.
        assert!(!admits(None, "latest", true));
        assert!(!admits(None, "1.4", true));
        assert!(admits(None, "1.4", false));
        assert!(!admits(None, "01.4.0", true));
        assert!(admits(None, "1.4.0-rc.1+b.7", true));
        assert!(!admits(None, "1.4.0-01", true));
        // v3's prerelease rule: a constraint without a prerelease admits none.
        assert!(!admits(Some("^1.4.0"), "1.5.0-rc.1", true));
    }
}
