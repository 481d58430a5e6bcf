//! Compiled regular expressions, shared by pattern text (issue 13: compiling the patch-target
//! and image regexes again for every BuildPlan was 7 % of a render's CPU; every environment of
//! a component, and every component using the same image, compiles the same patterns).
//!
//! Pure memoization: a pattern always compiles to the same matcher, so whether it came from
//! the memo cannot change any output. The memo is bounded: past [`LIMIT`] patterns it starts
//! over, so a platform with 100,000 distinct names keeps at most that many compiled.

use regex::Regex;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// Patterns kept at most before the memo is cleared.
pub const LIMIT: usize = 4096;

type Memo = HashMap<String, Result<Regex, regex::Error>>;

static MEMO: LazyLock<Mutex<Memo>> = LazyLock::new(Default::default);

/// `Regex::new(pattern)`, compiled once per pattern (see the module docs). A clone of a
/// `Regex` shares its compiled program.
pub fn regex(pattern: &str) -> Result<Regex, regex::Error> {
    if let Some(r) = MEMO.lock().ok().and_then(|m| m.get(pattern).cloned()) {
        return r;
    }
    // Compiled outside the lock: two threads may both compile a new pattern, which is only
    // wasted work.
    let r = Regex::new(pattern);
    if let Ok(mut m) = MEMO.lock() {
        if m.len() >= LIMIT {
            m.clear();
        }
        m.insert(pattern.to_string(), r.clone());
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memoized_regexes_match_as_compiled_ones_and_errors_repeat() {
        let a = regex("^(?:web-[0-9]+)$").unwrap();
        let b = regex("^(?:web-[0-9]+)$").unwrap();
        assert!(a.is_match("web-12") && b.is_match("web-12") && !b.is_match("web-x"));
        assert_eq!(a.as_str(), b.as_str());
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
