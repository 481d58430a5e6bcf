//! Semantic versions and constraints as Masterminds/semver v3 (which Sprig's `semver` and
//! `semverCompare` and Helm's `kubeVersion` check use): `v` prefixes, partial versions
//! (`1.2` is `1.2.0`), `x`/`*` wildcards, `=` `!=` `>` `<` `>=` `<=` `~` `^`, hyphen ranges,
//! `,` or spaces for AND, `||` for OR, and v3's prerelease rule (a constraint without a
//! prerelease matches no prerelease version; `-0` opts in).

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: String,
    pub meta: String,
    pub original: String,
}

impl Version {
    /// Parses loosely (`NewVersion`): `v1`, `1.2`, `1.2.3-rc.1+meta`.
    pub fn parse(s: &str) -> Result<Version, String> {
        let original = s.to_string();
        let t = s.trim();
        let t = t.strip_prefix('v').unwrap_or(t);
        let (rest, meta) = match t.split_once('+') {
            Some((a, b)) => (a, b.to_string()),
            None => (t, String::new()),
        };
        let (core, pre) = match rest.split_once('-') {
            Some((a, b)) => (a, b.to_string()),
            None => (rest, String::new()),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty()
            || parts.len() > 3
            || parts
                .iter()
                .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err("Invalid Semantic Version".into());
        }
        let num = |i: usize| -> Result<u64, String> {
            parts.get(i).map_or(Ok(0), |p| {
                p.parse()
                    .map_err(|_| "Invalid Semantic Version".to_string())
            })
        };
        Ok(Version {
            major: num(0)?,
            minor: num(1)?,
            patch: num(2)?,
            pre,
            meta,
            original,
        })
    }

    pub fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| cmp_pre(&self.pre, &o.pre))
    }
}

fn cmp_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let pa: Vec<&str> = a.split('.').collect();
    let pb: Vec<&str> = b.split('.').collect();
    for i in 0..pa.len().max(pb.len()) {
        let (Some(x), Some(y)) = (pa.get(i), pb.get(i)) else {
            return pa.len().cmp(&pb.len());
        };
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// One parsed `op version` term; `wild` marks which parts were `x` or missing.
struct Term {
    op: String,
    v: Version,
    /// 0: major is wild, 1: minor, 2: patch, 3: none.
    dirty: u8,
}

fn parse_term(s: &str) -> Result<Term, String> {
    let s = s.trim();
    let ops = ["!=", ">=", "<=", "=>", "=<", "~>", "=", ">", "<", "~", "^"];
    let mut op = "";
    for o in ops {
        if s.starts_with(o) {
            op = o;
            break;
        }
    }
    let ver = s[op.len()..].trim();
    let ver = ver.strip_prefix('v').unwrap_or(ver);
    let (core, tail) = match ver.find(['-', '+']) {
        Some(i) => (&ver[..i], &ver[i..]),
        None => (ver, ""),
    };
    let mut parts: Vec<String> = core.split('.').map(str::to_string).collect();
    let mut dirty = 3u8;
    for (i, p) in parts.iter_mut().enumerate() {
        if p == "x" || p == "X" || p == "*" {
            if dirty == 3 {
                dirty = i as u8;
            }
            *p = "0".into();
        }
    }
    if dirty == 3 && parts.len() < 3 {
        dirty = parts.len() as u8;
    }
    while parts.len() < 3 {
        parts.push("0".into());
    }
    let text = format!("{}{}", parts.join("."), tail);
    let v = Version::parse(&text).map_err(|_| format!("improper constraint: {s}"))?;
    let op = match op {
        "=>" => ">=",
        "=<" => "<=",
        "~>" => "~",
        o => o,
    };
    Ok(Term {
        op: op.to_string(),
        v,
        dirty,
    })
}

fn term_ok(t: &Term, v: &Version) -> bool {
    // v3: prerelease versions only match constraints that carry a prerelease.
    if !v.pre.is_empty() && t.v.pre.is_empty() {
        return false;
    }
    let c = &t.v;
    let o = v.compare(c);
    match t.op.as_str() {
        "" | "=" => {
            if t.dirty < 3 {
                return wild_eq(t, v);
            }
            o == Ordering::Equal
        }
        "!=" => {
            if t.dirty < 3 {
                return !wild_eq(t, v);
            }
            o != Ordering::Equal
        }
        ">" => {
            if t.dirty < 3 {
                // `>1.x` means >= 2.0.0.
                let bump = match t.dirty {
                    0 => return false,
                    1 => Version {
                        major: c.major + 1,
                        minor: 0,
                        patch: 0,
                        ..c.clone()
                    },
                    _ => Version {
                        minor: c.minor + 1,
                        patch: 0,
                        ..c.clone()
                    },
                };
                return v.compare(&bump) != Ordering::Less;
            }
            o == Ordering::Greater
        }
        "<" => o == Ordering::Less,
        ">=" => o != Ordering::Less,
        "<=" => {
            if t.dirty < 3 {
                let bump = match t.dirty {
                    0 => return true,
                    1 => Version {
                        major: c.major + 1,
                        minor: 0,
                        patch: 0,
                        pre: String::new(),
                        ..c.clone()
                    },
                    _ => Version {
                        minor: c.minor + 1,
                        patch: 0,
                        pre: String::new(),
                        ..c.clone()
                    },
                };
                return v.compare(&bump) == Ordering::Less;
            }
            o != Ordering::Greater
        }
        "~" => {
            if o == Ordering::Less {
                return false;
            }
            if t.dirty == 0 {
                return true;
            }
            if t.dirty == 1 {
                return v.major == c.major;
            }
            v.major == c.major && v.minor == c.minor
        }
        "^" => {
            if o == Ordering::Less {
                return false;
            }
            if c.major > 0 || t.dirty <= 1 {
                return v.major == c.major;
            }
            if c.minor > 0 || t.dirty == 2 {
                return v.major == 0 && v.minor == c.minor;
            }
            v.major == 0 && v.minor == 0 && v.patch == c.patch
        }
        _ => false,
    }
}

fn wild_eq(t: &Term, v: &Version) -> bool {
    match t.dirty {
        0 => true,
        1 => v.major == t.v.major,
        _ => v.major == t.v.major && v.minor == t.v.minor,
    }
}

/// Whether `version` satisfies `constraint`.
pub fn satisfies(constraint: &str, version: &Version) -> Result<bool, String> {
    for alt in constraint.split("||") {
        let mut all = true;
        let alt = alt.trim();
        // Hyphen ranges: `1.2 - 1.4`.
        let expanded: Vec<String> = if let Some((a, b)) = alt.split_once(" - ") {
            vec![format!(">={}", a.trim()), format!("<={}", b.trim())]
        } else {
            split_terms(alt)
        };
        if expanded.is_empty() {
            return Err(format!("improper constraint: {constraint}"));
        }
        for term in expanded {
            let t = parse_term(&term)?;
            if !term_ok(&t, version) {
                all = false;
                break;
            }
        }
        if all {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Splits `>= 1.2, < 2` / `>=1.2 <2` into terms (an operator may be followed by spaces).
fn split_terms(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for tok in s.split([',', ' ']).filter(|t| !t.is_empty()) {
        cur.push_str(tok);
        if tok.chars().all(|c| "<>=!~^".contains(c)) {
            continue;
        }
        out.push(std::mem::take(&mut cur));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(c: &str, v: &str) -> bool {
        satisfies(c, &Version::parse(v).unwrap()).unwrap()
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
    }
}
