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

use std::rc::Rc;

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

/// The pattern in the `regex` crate's syntax, matching what Go's regexp matches, or Go's
/// error for a pattern Go refuses and the crate would take (the message after "error
/// parsing regexp: ").
///
/// Outside classes, after Go's `parse.go` (`parseEscape`, `repeat`, `parsePerlFlags`):
/// - `\pN`, `\p{Greek}`, `\x{1F600}` are copied whole (their braces are not literal ones);
/// - `\Q…\E` is a quoted literal, and `\0`, `\12`, `\123` octal escapes;
/// - an escaped punctuation character is that character: `\<` and `\>` are `<` and `>`,
///   which the crate would read as word boundaries;
/// - a repetition of a repetition (`a**`, `a{2}{3}`, `a*?+`) is an error, as is a count over
///   1000 and a flag other than `i`, `m`, `s`, `U`.
pub fn translate(p: &str) -> Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    // Where the repetition operator just read starts: another one right after it is
    // Go's "invalid nested repetition operator".
    let mut last_repeat: Option<usize> = None;
    while i < chars.len() {
        let repeat_at = i;
        let repeated = match chars[i] {
            '\\' if i + 1 < chars.len() => {
                i = escape_outside(&chars, i, &mut out);
                false
            }
            '[' => {
                i = class(&chars, i, &mut out);
                false
            }
            '(' if chars.get(i + 1) == Some(&'?') => {
                i = group_flags(&chars, i, &mut out)?;
                false
            }
            '{' => match repeat_len(&chars[i..]) {
                Some(n) => {
                    let body: String = chars[i + 1..i + n - 1].iter().collect();
                    if body
                        .split(',')
                        .any(|c| c.parse::<u32>().is_ok_and(|c| c > 1000))
                    {
                        let op: String = chars[i..i + n].iter().collect();
                        return Err(format!("invalid repeat count: `{op}`"));
                    }
                    out.extend(&chars[i..i + n]);
                    i += n;
                    true
                }
                None => {
                    // Go takes a `{` that starts no `{n}`, `{n,}`, `{n,m}` literally.
                    out.push_str("\\{");
                    i += 1;
                    false
                }
            },
            '}' => {
                out.push_str("\\}");
                i += 1;
                false
            }
            c @ ('*' | '+' | '?') => {
                out.push(c);
                i += 1;
                true
            }
            c => {
                out.push(c);
                i += 1;
                false
            }
        };
        if !repeated {
            last_repeat = None;
            continue;
        }
        // A `?` right after a repetition makes it non-greedy, not another repetition.
        if chars.get(i) == Some(&'?') {
            out.push('?');
            i += 1;
        }
        if let Some(start) = last_repeat {
            let op: String = chars[start..i].iter().collect();
            return Err(format!("invalid nested repetition operator: `{op}`"));
        }
        last_repeat = Some(repeat_at);
    }
    Ok(out)
}

/// An escape at `chars[i] == '\\'` outside a class, in the crate's syntax; the index after
/// it.
fn escape_outside(chars: &[char], i: usize, out: &mut String) -> usize {
    let c = chars[i + 1];
    if let Some((set, neg)) = perl_class(c) {
        out.push_str(if neg { "[^" } else { "[" });
        out.push_str(set);
        out.push(']');
        return i + 2;
    }
    match c {
        'b' | 'B' => {
            out.push_str("(?-u:\\");
            out.push(c);
            out.push(')');
            i + 2
        }
        // `\p{Greek}`, `\x{1F600}`: through the closing brace.
        'p' | 'P' | 'x' if chars.get(i + 2) == Some(&'{') => {
            let end = brace_end(chars, i + 2);
            out.extend(&chars[i..end]);
            end
        }
        // `\Q…\E` (or to the end): each character literal.
        'Q' => {
            let mut j = i + 2;
            while j < chars.len() && !(chars[j] == '\\' && chars.get(j + 1) == Some(&'E')) {
                push_literal(chars[j], out);
                j += 1;
            }
            (j + 2).min(chars.len())
        }
        // Octal: `\0` with up to two more digits, or `\1`–`\7` followed by one (a lone
        // `\1` is a backreference, refused by both).
        '0'..='7' if c == '0' || chars.get(i + 2).is_some_and(|d| ('0'..='7').contains(d)) => {
            let mut v = 0u32;
            let mut j = i + 1;
            while j < chars.len() && j < i + 4 && ('0'..='7').contains(&chars[j]) {
                v = v * 8 + (chars[j] as u32 - '0' as u32);
                j += 1;
            }
            out.push_str(&format!("\\x{{{v:x}}}"));
            j
        }
        // Punctuation stands for itself (Go's `parseEscape`).
        c if c.is_ascii_punctuation() => {
            push_literal(c, out);
            i + 2
        }
        c => {
            out.push('\\');
            out.push(c);
            i + 2
        }
    }
}

/// The index after the `}` that closes the brace at or after `from` (the end if none).
fn brace_end(chars: &[char], from: usize) -> usize {
    (from..chars.len())
        .find(|&j| chars[j] == '}')
        .map_or(chars.len(), |j| j + 1)
}

/// `c` as a literal in the crate's syntax.
fn push_literal(c: char, out: &mut String) {
    if "\\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

/// A group's `(?` at `chars[i]`: Go's flags (`i`, `m`, `s`, `U`, negated after `-`) or a
/// name (`(?P<n>`, `(?<n>`), copied; the index after the `(?`. Anything else is Go's
/// "invalid or unsupported Perl syntax".
fn group_flags(chars: &[char], i: usize, out: &mut String) -> Result<usize, String> {
    let j = i + 2;
    if chars.get(j) == Some(&'<') || (chars.get(j) == Some(&'P') && chars.get(j + 1) == Some(&'<'))
    {
        out.push_str("(?");
        return Ok(j);
    }
    let mut k = j;
    while k < chars.len() && chars[k] != ')' && chars[k] != ':' {
        if !matches!(chars[k], 'i' | 'm' | 's' | 'U' | '-') {
            let op: String = chars[i..=k].iter().collect();
            return Err(format!("invalid or unsupported Perl syntax: `{op}`"));
        }
        k += 1;
    }
    out.push_str("(?");
    Ok(j)
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
                brace_end(chars, i + 2)
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
                end = brace_end(chars, end);
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

/// Go's `Regexp.Split(t, n)` (regexp.go) over the matches of `pattern` in `t` (`matches`:
/// the leftmost-first successive matches, as `FindAllStringIndex` gives them): an empty
/// match at the start gives no empty first part, and one at the end no empty last part,
/// unlike the crates' `split`. `n < 0`: every part; `n == 0`: none; else at most `n`.
pub fn go_split(
    pattern: &str,
    t: &str,
    matches: impl IntoIterator<Item = std::ops::Range<usize>>,
    n: i64,
) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !pattern.is_empty() && t.is_empty() {
        return vec![String::new()];
    }
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    let mut parts = Vec::new();
    let (mut beg, mut end) = (0, 0);
    for m in matches.into_iter().take(limit) {
        if n > 0 && parts.len() == limit - 1 {
            break;
        }
        end = m.start;
        if m.end != 0 {
            parts.push(t[beg..end].to_string());
        }
        beg = m.end;
    }
    if end != t.len() {
        parts.push(t[beg..].to_string());
    }
    parts
}

/// Go's `regexp.QuoteMeta`: a backslash before each of `\.+*?()|[]{}^$`, and nothing else.
pub fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The cost, in bytes searched, that an ASCII pattern may spend in regex-lite before it is
/// compiled into the `regex` crate's automata ([`AsciiSlot`]). Each search counts its text's
/// length plus [`LITE_SEARCH_COST`].
const LITE_BUDGET: u32 = 2048;
/// A search's fixed cost in regex-lite, in bytes of text (about a microsecond: a short
/// search there is 0.5 to 1.3 µs, against 20 ns a byte).
const LITE_SEARCH_COST: u32 = 64;

/// An ASCII pattern searched in ASCII text, as one render keeps it (`funcs::ascii_regex_of`).
///
/// The `regex` crate spends 15 to 80 µs compiling one of the patterns charts use (bitnami's
/// `-r\d+$|sha256:` 80 µs: its literal prefilters and reverse automata), which for the
/// dozen short names a render matches was most of the cost of the `regex*` functions.
/// regex-lite compiles the same pattern in 1 to 5 µs and searches a few bytes in about a
/// microsecond, 20 ns a byte past that. So a pattern starts in regex-lite, and is compiled
/// by the `regex` crate once its searches have cost `LITE_BUDGET` (the ski-rental rule:
/// rent until the rent paid is the price). On ASCII pattern and text the two agree with
/// each other and with Go: both are leftmost-first, with ASCII `\d \s \w \b`, the same
/// empty-match rules and the same `$1`/`${name}` expansion (docs/adr/0014-regex-lite.md).
pub enum AsciiSlot {
    /// regex-lite's, with the cost spent so far.
    Lite(Rc<regex_lite::Regex>, u32),
    /// The `regex` crate's, on bytes, without Unicode.
    Full(Rc<regex::bytes::Regex>),
    /// Neither compiles it: the Unicode path answers, or reports the error.
    Invalid,
}

/// A compiled ASCII pattern, for one search of ASCII text.
#[derive(Clone)]
pub enum AsciiRegex {
    Lite(Rc<regex_lite::Regex>),
    Full(Rc<regex::bytes::Regex>),
    /// The text lacks a literal every match holds ([`required_literal`]): nothing matches,
    /// and nothing is searched.
    Absent,
}

/// Bytes every match of the Go pattern `p` holds, when there are any: the longest literal
/// of the top-level concatenation of its syntax tree (read by `regex`'s own parser, on the
/// pattern as [`translate`] gives it, without Unicode, as the ASCII searches compile it). A
/// text without them cannot match, so a search of it is skipped: nats runs four
/// `regexReplaceAll` over each JSON text it builds, for `\u003e`-style escapes the text
/// almost never holds, on regex-lite's Pike VM (a tenth of its render). Under `(?i)` a
/// letter is a class, not a literal, so no case-folded pattern gives one.
pub fn required_literal(p: &str) -> Option<Box<[u8]>> {
    use regex_syntax::hir::HirKind;
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(&translate(p).ok()?)
        .ok()?;
    let longest = match hir.kind() {
        HirKind::Literal(l) => Some(&l.0),
        HirKind::Concat(parts) => parts
            .iter()
            .filter_map(|h| match h.kind() {
                HirKind::Literal(l) => Some(&l.0),
                _ => None,
            })
            .max_by_key(|l| l.len()),
        _ => None,
    }?;
    (!longest.is_empty()).then(|| longest.clone())
}

fn full(p: &str) -> Option<Rc<regex::bytes::Regex>> {
    regex::bytes::RegexBuilder::new(&translate(p).ok()?)
        .unicode(false)
        .build()
        .ok()
        .map(Rc::new)
}

impl AsciiSlot {
    /// A pattern's slot for its first search, of `len` bytes: regex-lite's, unless the text
    /// alone is over the budget or regex-lite refuses the pattern (`(?-u:\b)` it takes, a
    /// nested class it does not).
    pub fn new(p: &str, len: usize) -> AsciiSlot {
        if len < LITE_BUDGET as usize
            && let Ok(t) = translate(p)
            && let Ok(r) = regex_lite::Regex::new(&t)
        {
            return AsciiSlot::Lite(Rc::new(r), 0);
        }
        full(p).map_or(AsciiSlot::Invalid, AsciiSlot::Full)
    }

    /// The regex for a search of `len` bytes (`None`: invalid), charging regex-lite's cost
    /// and compiling the `regex` crate's once it is spent.
    pub fn search(&mut self, p: &str, len: usize) -> Option<AsciiRegex> {
        match self {
            AsciiSlot::Lite(r, spent) => {
                let cost = LITE_SEARCH_COST.saturating_add(len.min(u32::MAX as usize) as u32);
                if spent.saturating_add(cost) <= LITE_BUDGET {
                    *spent += cost;
                    return Some(AsciiRegex::Lite(r.clone()));
                }
                match full(p) {
                    Some(f) => {
                        *self = AsciiSlot::Full(f.clone());
                        Some(AsciiRegex::Full(f))
                    }
                    // regex-lite took what the crate refuses (a size limit): keep it.
                    None => Some(AsciiRegex::Lite(r.clone())),
                }
            }
            AsciiSlot::Full(f) => Some(AsciiRegex::Full(f.clone())),
            AsciiSlot::Invalid => None,
        }
    }
}

/// Text a byte regex gave from ASCII input (valid UTF-8: it is the input's bytes, or the
/// input's with a replacement's text between them).
fn utf8(b: std::borrow::Cow<'_, [u8]>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

impl AsciiRegex {
    pub fn is_match(&self, t: &str) -> bool {
        match self {
            AsciiRegex::Lite(r) => r.is_match(t),
            AsciiRegex::Full(r) => r.is_match(t.as_bytes()),
            AsciiRegex::Absent => false,
        }
    }

    /// The leftmost-first match.
    pub fn find<'t>(&self, t: &'t str) -> Option<&'t str> {
        let range = match self {
            AsciiRegex::Lite(r) => r.find(t).map(|m| m.range()),
            AsciiRegex::Full(r) => r.find(t.as_bytes()).map(|m| m.range()),
            AsciiRegex::Absent => None,
        }?;
        Some(&t[range])
    }

    /// The first `take` successive matches.
    pub fn find_all(&self, t: &str, take: usize) -> Vec<String> {
        self.ranges(t, take)
            .into_iter()
            .map(|r| t[r].to_string())
            .collect()
    }

    /// Every match replaced by `with`, expanded (`$1`, `${name}`) unless `literal`.
    pub fn replace_all(&self, t: &str, with: &str, literal: bool) -> String {
        match (self, literal) {
            (AsciiRegex::Lite(r), true) => {
                r.replace_all(t, regex_lite::NoExpand(with)).into_owned()
            }
            (AsciiRegex::Lite(r), false) => r.replace_all(t, with).into_owned(),
            (AsciiRegex::Full(r), true) => {
                utf8(r.replace_all(t.as_bytes(), regex::bytes::NoExpand(with.as_bytes())))
            }
            (AsciiRegex::Full(r), false) => utf8(r.replace_all(t.as_bytes(), with.as_bytes())),
            (AsciiRegex::Absent, _) => t.to_string(),
        }
    }

    /// The ranges of the first `take` successive matches.
    pub fn ranges(&self, t: &str, take: usize) -> Vec<std::ops::Range<usize>> {
        match self {
            AsciiRegex::Lite(r) => r.find_iter(t).take(take).map(|m| m.range()).collect(),
            AsciiRegex::Full(r) => r
                .find_iter(t.as_bytes())
                .take(take)
                .map(|m| m.range())
                .collect(),
            AsciiRegex::Absent => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_literal_every_match_holds() {
        let lit = |p: &str| required_literal(p).map(|l| String::from_utf8(l.into_vec()).unwrap());
        // nats's `toPrettyRawJsonStr` and `nats.loadMergePatch` patterns.
        assert_eq!(lit(r"([^\\](?:\\\\)*)\\u003e").as_deref(), Some(r"\u003e"));
        assert_eq!(lit(r#""<<\s+(.*?)\s+>>""#).as_deref(), Some(">>\""));
        assert_eq!(lit(r"^abc$").as_deref(), Some("abc"));
        assert_eq!(lit(r"ab*c").as_deref(), Some("c"));
        for none in [r"a|b", r"(?i)abc", r"x*", r"[ab]c?", r"", r"\d+", r"(ab)"] {
            assert_eq!(lit(none), None, "{none}");
        }
    }

    /// Random patterns and texts: a text without the pattern's literal never matches it.
    #[test]
    fn a_text_without_the_literal_never_matches() {
        use crate::testutil::Rng;
        const PIECES: &[&str] = &[
            "a", "b", "ab", "ba", "\\.", ".", "*", "+", "?", "|", "(", ")", "(?:", "[ab]", "[^a]",
            "^", "$", "\\d", "\\w", "\\s", "\\b", "{2}", "{1,}", "(?i)", "A", "\\\\", "\\u00",
        ];
        let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
        let mut checked = 0;
        for _ in 0..30_000 {
            let p: String = (0..1 + rng.below(6)).map(|_| rng.pick(PIECES)).collect();
            let Some(lit) = required_literal(&p) else {
                continue;
            };
            let Some(re) = translate(&p).ok().and_then(|t| {
                regex::bytes::RegexBuilder::new(&t)
                    .unicode(false)
                    .build()
                    .ok()
            }) else {
                continue;
            };
            for _ in 0..8 {
                let t: String = (0..rng.below(12))
                    .map(|_| rng.pick(&["a", "b", "A", "B", ".", " ", "\\", "u00", "1"]))
                    .collect();
                if memchr::memmem::find(t.as_bytes(), &lit).is_none() {
                    checked += 1;
                    assert!(
                        !re.is_match(t.as_bytes()),
                        "{p:?} matches {t:?} without {lit:?}"
                    );
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    fn m(p: &str, s: &str) -> bool {
        regex::Regex::new(&translate(p).unwrap())
            .unwrap()
            .is_match(s)
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

    /// regex-lite and the `regex` crate (bytes, no Unicode) answer the same on ASCII: every
    /// search the `regex*` functions make, for patterns the charts use and the edge cases
    /// of empty matches, anchors, classes, case folding and expansion.
    #[test]
    fn regex_lite_and_the_regex_crate_agree_on_ascii() {
        let patterns = [
            r"^([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$",
            r"-r\d+$|sha256:",
            r"{(v[0-9])*[^}]*}}$",
            r"[^A-Za-z0-9]+$",
            r"(-?[^a-z\d\-])+-?",
            r"\W",
            r"a*",
            r"",
            r"(?i)ab|B",
            r"(?m)^x$",
            r"\bfoo\b",
            r"(?P<k>[a-z]+)=(\d*)",
            r"[\s,]+",
            r"x{2,3}?",
            r"(a|ab)(c|bcd)(d*)",
        ];
        let texts = [
            "",
            "1.2.3-debian-12-r4",
            "docker.io/bitnami/postgresql@sha256:abc",
            "{v1.36.0 1 36}}",
            "My_Release.Name--x",
            "foo bar,foo\nx\nfoobar",
            "k=1, v=22,z=",
            "aAbB xxxx abcd",
        ];
        let expansions = ["-", "$1", "${k}:$2", "$$", "$0x"];
        for p in patterns {
            let tr = translate(p).unwrap();
            let lite = AsciiRegex::Lite(Rc::new(regex_lite::Regex::new(&tr).unwrap()));
            let full = AsciiRegex::Full(full(p).unwrap());
            for t in texts {
                let ctx = format!("{p:?} on {t:?}");
                assert_eq!(lite.is_match(t), full.is_match(t), "{ctx}");
                assert_eq!(lite.find(t), full.find(t), "{ctx}");
                assert_eq!(
                    lite.find_all(t, usize::MAX),
                    full.find_all(t, usize::MAX),
                    "{ctx}"
                );
                assert_eq!(lite.find_all(t, 1), full.find_all(t, 1), "{ctx}");
                for w in expansions {
                    for literal in [false, true] {
                        assert_eq!(
                            lite.replace_all(t, w, literal),
                            full.replace_all(t, w, literal),
                            "{ctx} with {w:?}"
                        );
                    }
                }
                assert_eq!(
                    lite.ranges(t, usize::MAX),
                    full.ranges(t, usize::MAX),
                    "{ctx}"
                );
                assert_eq!(lite.ranges(t, 2), full.ranges(t, 2), "{ctx}");
            }
        }
    }

    #[test]
    fn a_slot_charges_its_searches_and_compiles_once_spent() {
        let mut slot = AsciiSlot::new("b+", 3);
        let mut lite = 0;
        for _ in 0..100 {
            match slot.search("b+", 10) {
                Some(AsciiRegex::Lite(_)) => lite += 1,
                Some(AsciiRegex::Full(_)) => {}
                Some(AsciiRegex::Absent) | None => panic!("b+ is searched"),
            }
        }
        assert_eq!(lite, (LITE_BUDGET / (LITE_SEARCH_COST + 10)) as usize);
        assert!(matches!(slot, AsciiSlot::Full(_)));
        // Over the budget at once: the crate's; a nested class: regex-lite refuses it.
        assert!(matches!(AsciiSlot::new("b", 4096), AsciiSlot::Full(_)));
        assert!(matches!(AsciiSlot::new(r"[\W]", 1), AsciiSlot::Full(_)));
        assert!(matches!(AsciiSlot::new(r"\pL", 1), AsciiSlot::Invalid));
        assert!(matches!(AsciiSlot::new("a(", 1), AsciiSlot::Invalid));
    }
}
