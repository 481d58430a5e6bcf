//! Go's RE2 syntax (`regexp/syntax`, used by Sprig's `regex*` functions) rewritten into the
//! `regex` crate's, where the two read the same pattern differently.
//!
//! After Go's `src/regexp/syntax/parse.go` (`parseClass`, `parsePerlClassEscape`) and
//! `perl_groups.go`:
//! - Go's Perl classes `\d \s \w` (and `\b`) are ASCII; the crate's are Unicode. They become
//!   explicit ASCII sets.
//! - Inside `[...]`, Go takes `-` after a class escape literally (`[\w-.]`), and `[`, `&&`,
//!   `--`, `~~` are plain characters; the crate reads nested classes and set operations
//!   there (or refuses the pattern). Those characters are escaped.

/// The ASCII sets of Go's Perl classes, as class items (without brackets).
fn perl_class(c: char) -> Option<(&'static str, bool)> {
    match c {
        'd' => Some(("0-9", false)),
        'D' => Some(("0-9", true)),
        's' => Some(("\\t\\n\\x0C\\r ", false)),
        'S' => Some(("\\t\\n\\x0C\\r ", true)),
        'w' => Some(("0-9A-Za-z_", false)),
        'W' => Some(("0-9A-Za-z_", true)),
        _ => None,
    }
}

/// The pattern in the `regex` crate's syntax, matching what Go's regexp matches.
pub fn translate(p: &str) -> String {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                let c = chars[i + 1];
                if let Some((set, neg)) = perl_class(c) {
                    out.push_str(if neg { "[^" } else { "[" });
                    out.push_str(set);
                    out.push(']');
                } else if c == 'b' || c == 'B' {
                    out.push_str("(?-u:\\");
                    out.push(c);
                    out.push(')');
                } else {
                    out.push('\\');
                    out.push(c);
                }
                i += 2;
            }
            '[' => i = class(&chars, i, &mut out),
            '{' => match repeat_len(&chars[i..]) {
                Some(n) => {
                    out.extend(&chars[i..i + n]);
                    i += n;
                }
                None => {
                    // Go takes a `{` that starts no `{n}`, `{n,}`, `{n,m}` literally.
                    out.push_str("\\{");
                    i += 1;
                }
            },
            '}' => {
                out.push_str("\\}");
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The length of a repetition `{n}`, `{n,}` or `{n,m}` at the start of `t` (Go's
/// `parseRepeat`), if it is one.
fn repeat_len(t: &[char]) -> Option<usize> {
    let mut i = 1;
    let digits = |i: &mut usize| {
        let s = *i;
        while t.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
        *i > s
    };
    if !digits(&mut i) {
        return None;
    }
    if t.get(i) == Some(&',') {
        i += 1;
        digits(&mut i);
    }
    (t.get(i) == Some(&'}')).then_some(i + 1)
}

/// Copies the class starting at `chars[start] == '['`; returns the index after it. Items
/// are read as Go's `parseClass` reads them: a class (`\w`, `\pL`, `[:alpha:]`), or a
/// character with an optional `-hi` range end.
fn class(chars: &[char], start: usize, out: &mut String) -> usize {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    let mut first = true;
    while i < chars.len() {
        if chars[i] == ']' && !first {
            out.push(']');
            return i + 1;
        }
        first = false;
        if let Some(next) = class_set(chars, i, out) {
            i = next;
            continue;
        }
        let (lo, next) = class_char(chars, i);
        out.push_str(&lo);
        i = next;
        if chars.get(i) == Some(&'-') && chars.get(i + 1).is_some_and(|&c| c != ']') {
            let (hi, next) = class_char(chars, i + 1);
            out.push('-');
            out.push_str(&hi);
            i = next;
        }
    }
    // Unclosed: the crate reports it.
    i
}

/// A whole-class item at `i` (`\d`, `\pL`, `\p{Greek}`, `[:alpha:]`), copied; the index
/// after it.
fn class_set(chars: &[char], i: usize, out: &mut String) -> Option<usize> {
    match (chars[i], chars.get(i + 1).copied()) {
        ('\\', Some(e)) => {
            if let Some((set, neg)) = perl_class(e) {
                if neg {
                    out.push_str("[^");
                    out.push_str(set);
                    out.push(']');
                } else {
                    out.push_str(set);
                }
                return Some(i + 2);
            }
            if e != 'p' && e != 'P' {
                return None;
            }
            let end = if chars.get(i + 2) == Some(&'{') {
                (i + 2..chars.len())
                    .find(|&j| chars[j] == '}')
                    .map_or(chars.len(), |j| j + 1)
            } else {
                (i + 3).min(chars.len())
            };
            out.extend(&chars[i..end]);
            Some(end)
        }
        ('[', Some(':')) => {
            let end = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j] == ':' && chars[j + 1] == ']')?;
            out.extend(&chars[i..end + 2]);
            Some(end + 2)
        }
        _ => None,
    }
}

/// One character of a class at `i`, in the crate's syntax (characters the crate reads as
/// class syntax escaped); the index after it.
fn class_char(chars: &[char], i: usize) -> (String, usize) {
    let c = chars[i];
    if c == '\\' && i + 1 < chars.len() {
        let e = chars[i + 1];
        let mut end = i + 2;
        if e == 'x' {
            if chars.get(end) == Some(&'{') {
                end = (end..chars.len())
                    .find(|&j| chars[j] == '}')
                    .map_or(chars.len(), |j| j + 1);
            } else {
                end = (end + 2).min(chars.len());
            }
        }
        return (chars[i..end].iter().collect(), end);
    }
    let text = if "[]&~-^".contains(c) {
        format!("\\{c}")
    } else {
        c.to_string()
    };
    (text, i + 1)
}

#[cfg(test)]
mod tests {
    use super::translate;

    fn m(p: &str, s: &str) -> bool {
        regex::Regex::new(&translate(p)).unwrap().is_match(s)
    }

    #[test]
    fn dash_after_a_class_escape_is_literal() {
        // redis-ha's masterGroupName check; the crate alone refuses the pattern.
        let go_pattern = String::from(r"^[\w-\.]+$");
        assert!(regex::Regex::new(&go_pattern).is_err());
        assert!(m(r"^[\w-\.]+$", "my-master.1"));
        assert!(!m(r"^[\w-\.]+$", "a b"));
        assert!(m(r"^[[:alpha:]-]+$", "a-b"));
    }

    #[test]
    fn braces_without_a_repetition_are_literal() {
        // grafana's check for `$__env{…}` expansions.
        let p = r"\$(?:__(?:env|file|vault))?{[^}]+}";
        assert!(m(p, "$__env{GF_DATABASE_PASSWORD}"));
        assert!(!m(p, "plain"));
        assert!(m(r"^a{2}b{1,}c{1,2}$", "aabcc"));
        assert!(m(r"^x{,2}$", "x{,2}"));
    }

    #[test]
    fn perl_classes_are_ascii() {
        assert!(!m(r"^\d+$", "٣"));
        assert!(!m(r"^\w+$", "é"));
        assert!(m(r"^\W$", "é"));
        assert!(m(r"^[\s\d]+$", "1 2\t3"));
        assert!(m(r"^[^\d]$", "x"));
        assert!(m(r"\bx\b", "a x b"));
    }

    #[test]
    fn set_operators_and_brackets_are_plain_in_classes() {
        assert!(m(r"^[a&&b]+$", "a&b"));
        assert!(m(r"^[a-]+$", "a-"));
        assert!(m(r"^[+--]+$", ","));
        assert!(m(r"^[a~~b]+$", "~"));
        assert!(m(r"^[[a]+$", "[a"));
        assert!(m(r"^[]a]+$", "]a"));
        assert!(m(r"^[-a]+$", "-a"));
        assert!(m(r"^[\p{Greek}-]+$", "α-"));
    }
}
