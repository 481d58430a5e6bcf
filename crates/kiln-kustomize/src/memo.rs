//! Compiled regular expressions, shared by pattern text (issue 13: compiling the patch-target
//! and image regexes again for every BuildPlan was 7 % of a render's CPU; every environment of
//! a component, and every component using the same image, compiles the same patterns).
//!
//! Pure memoization: a pattern always compiles to the same matcher, so whether it came from
//! the memo cannot change any output. The memo is bounded: past [`LIMIT`] patterns it starts
//! over, so a platform with 100,000 distinct names keeps at most that many compiled.
//!
//! It is also the one place where a kustomize pattern, written for Go's RE2
//! (`regexp/syntax`), becomes a Rust pattern: [`re2_braces`].

use regex::Regex;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

/// Patterns kept at most before the memo is cleared. Each holds its search caches (about
/// 14 KB once used): at 4,096 the memo was 55 MB of a 2,000 × 5 render's peak (issue 38,
/// item 8). The render works a piece of component instances at a time, and a component's
/// environments use the same patterns one after the other, so a few hundred patterns
/// hold what is reused.
pub const LIMIT: usize = 1024;

type Memo = HashMap<String, Result<Arc<Regex>, regex::Error>>;

static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(Default::default);

/// `Regex::new(pattern)`, compiled once per pattern (see the module docs). Shared, not
/// cloned: a clone of a `Regex` shares its compiled program but starts with an empty cache
/// pool (regex-automata `meta::Regex::clone`), so every clone built its lazy DFA again on
/// its first match; at 10,000 BuildPlans that was about 8 % of a render's CPU.
pub fn regex(pattern: &str) -> Result<Arc<Regex>, regex::Error> {
    if let Some(r) = MEMO.lock().ok().and_then(|m| m.get(pattern).cloned()) {
        return r;
    }
    // Compiled outside the lock: two threads may both compile a new pattern, which is only
    // wasted work.
    let r = Regex::new(&re2_braces(pattern)).map(Arc::new);
    if let Ok(mut m) = MEMO.lock() {
        if m.len() >= LIMIT {
            m.clear();
        }
        m.insert(pattern.to_string(), r.clone());
    }
    r
}

/// Go's RE2 reads a `{` that does not open a repetition (`{n}`, `{n,}`, `{n,m}`) as a literal
/// brace, and `}` is always literal (`regexp/syntax/parse.go`: "If the repeat cannot be
/// parsed, { is a literal."); the `regex` crate refuses both. So `\${CLUSTER_NAME}-cp`, a
/// patch target of cluster-api trees, matches the text `${CLUSTER_NAME}-cp` in kubectl: here
/// such braces are escaped, outside character classes and escapes. Borrowed when there is no
/// brace to escape.
pub fn re2_braces(pattern: &str) -> std::borrow::Cow<'_, str> {
    if !pattern.contains(['{', '}']) {
        return pattern.into();
    }
    let b = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 4);
    let (mut i, mut class) = (0, false);
    // Byte positions of the `}` closing a repetition kept as it is.
    let mut closes = None;
    for (at, c) in pattern.char_indices() {
        if at < i {
            continue;
        }
        i = at + c.len_utf8();
        match c {
            '\\' => {
                out.push('\\');
                if let Some(n) = pattern[i..].chars().next() {
                    out.push(n);
                    i += n.len_utf8();
                }
                continue;
            }
            '[' if !class => {
                class = true;
                // `[]…]` and `[^]…]`: a `]` right after the opening is a member.
                out.push('[');
                if pattern[i..].starts_with('^') {
                    out.push('^');
                    i += 1;
                }
                if pattern[i..].starts_with(']') {
                    out.push(']');
                    i += 1;
                }
                continue;
            }
            ']' if class => class = false,
            '{' if !class => {
                let rest = &b[i..];
                let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
                let n = digits(rest);
                let mut j = n;
                if n > 0 && rest.get(j) == Some(&b',') {
                    j += 1;
                    j += digits(&rest[j..]);
                }
                if n > 0 && rest.get(j) == Some(&b'}') {
                    closes = Some(i + j);
                } else {
                    out.push_str("\\{");
                    continue;
                }
            }
            '}' if !class && closes != Some(at) => {
                out.push_str("\\}");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out.into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn braces_that_open_no_repetition_are_literal_as_in_re2() {
        for (re2, rust) in [
            (
                r"\${CLUSTER_NAME}-control-plane",
                r"\$\{CLUSTER_NAME\}-control-plane",
            ),
            ("a{2}b{1,}c{1,3}", "a{2}b{1,}c{1,3}"),
            ("x{,3}", r"x\{,3\}"),
            ("[{}]{2}", "[{}]{2}"),
            (r"\{a}", r"\{a\}"),
            ("no braces", "no braces"),
        ] {
            assert_eq!(super::re2_braces(re2), rust, "{re2}");
        }
        let r = super::regex(r"^(?:\${CLUSTER_NAME}-control-plane)$").unwrap();
        assert!(r.is_match("${CLUSTER_NAME}-control-plane"));
    }

    use super::*;

    #[test]
    fn memoized_regexes_match_as_compiled_ones_and_errors_repeat() {
        let a = regex("^(?:web-[0-9]+)$").unwrap();
        let b = regex("^(?:web-[0-9]+)$").unwrap();
        assert!(a.is_match("web-12") && b.is_match("web-12") && !b.is_match("web-x"));
        assert_eq!(a.as_str(), b.as_str());
        // One matcher, its search caches (the lazy DFA) kept between uses.
        assert!(Arc::ptr_eq(&a, &b));
        let e1 = regex("(").unwrap_err().to_string();
        let e2 = regex("(").unwrap_err().to_string();
        assert_eq!(e1, e2);
        let unclosed = String::from("(");
        assert_eq!(e1, Regex::new(&unclosed).unwrap_err().to_string());
    }

    #[test]
    fn the_memo_is_bounded() {
        for i in 0..LIMIT + 10 {
            regex(&format!("^bounded-{i}$")).unwrap();
        }
        assert!(MEMO.lock().unwrap().len() <= LIMIT);
        assert!(regex("^bounded-3$").unwrap().is_match("bounded-3"));
    }
}
