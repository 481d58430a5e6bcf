//! The `${…}` reference language of kiln's spec, once: `${env.name}`, `${params.replicas}`,
//! … in parameters and generator paths (resolved by `evaluate`), and in project output
//! patterns (checked by `validate`, expanded by `evaluate` and by the Kargo generator).
//!
//! A reference is `${`, then any text without braces, then `}`; the name is that text,
//! trimmed. `${{ … }}` is a Kargo expression, never a reference (its third character is a
//! brace), and is left as written. A `${` that no reference closes is an error wherever
//! references are resolved ([`unterminated`]).

/// One reference in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference<'t> {
    /// The byte range of the whole reference, `${` to `}`, in the text.
    pub start: usize,
    pub end: usize,
    /// The whole reference as written, `${ … }`.
    pub text: &'t str,
    /// The text between the braces, as written (not trimmed).
    pub raw: &'t str,
}

impl<'t> Reference<'t> {
    /// The name the reference uses: the text between the braces, trimmed.
    pub fn name(&self) -> &'t str {
        self.raw.trim()
    }
}

/// Every reference of `text`, leftmost first, none overlapping: the matches of the regular
/// expression `\$\{([^{}]*)\}`, scanned by hand (a `${` whose braces do not close before
/// another brace opens is no reference; the search goes on from the next character).
pub fn find(text: &str) -> impl Iterator<Item = Reference<'_>> {
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(i) = text[from..].find("${").map(|i| from + i) {
            let body = &text[i + 2..];
            match body.find(['{', '}']) {
                Some(k) if body.as_bytes()[k] == b'}' => {
                    let end = i + 2 + k + 1;
                    from = end;
                    return Some(Reference {
                        start: i,
                        end,
                        text: &text[i..end],
                        raw: &body[..k],
                    });
                }
                _ => from = i + 1,
            }
        }
        None
    })
}

/// The reference `text` consists of, when it is exactly one (a whole-string reference keeps
/// the referenced value's type).
pub fn whole(text: &str) -> Option<Reference<'_>> {
    find(text)
        .next()
        .filter(|r| r.start == 0 && r.end == text.len())
}

/// The names (trimmed) of the references `text` uses, in order.
pub fn names(text: &str) -> Vec<String> {
    find(text).map(|r| r.name().to_string()).collect()
}

/// The byte offset of the first `${` that no reference closes, if any. `${{` (a Kargo
/// expression) is not a reference and is skipped.
pub fn unterminated(text: &str) -> Option<usize> {
    let mut last = 0;
    let mut gaps = Vec::new();
    for r in find(text) {
        gaps.push((last, r.start));
        last = r.end;
    }
    gaps.push((last, text.len()));
    gaps.into_iter().find_map(|(from, to)| {
        let gap = &text[from..to];
        gap.match_indices("${")
            .find(|(i, _)| !gap[i + 2..].starts_with('{'))
            .map(|(i, _)| from + i)
    })
}

/// `text` with each reference replaced by `value(reference)`; a reference for which it
/// gives `None` is left as written.
pub fn replace(text: &str, mut value: impl FnMut(&Reference<'_>) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for r in find(text) {
        out.push_str(&text[last..r.start]);
        match value(&r) {
            Some(v) => out.push_str(&v),
            None => out.push_str(r.text),
        }
        last = r.end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_trimmed_and_kargo_expressions_skipped() {
        let text = "a/${env.name}/${ project.name }/${{ vars.x }}/${a{b}";
        assert_eq!(names(text), ["env.name", "project.name"]);
        let first = find(text).next().unwrap();
        assert_eq!((first.start, first.end, first.raw), (2, 13, "env.name"));
        assert_eq!(unterminated(text), Some(text.find("${a").unwrap()));
        assert_eq!(unterminated("x/${{ a }}/${b}"), None);
        assert_eq!(unterminated("x/${b"), Some(2));
    }

    #[test]
    fn the_scan_is_the_grammar_s_leftmost_matches() {
        // `$${a}`: the first `${` opens no reference, the second does; `${a{${b}`: the
        // first is cut by a brace, the search goes on.
        assert_eq!(names("$${a}"), ["a"]);
        assert_eq!(names("${a{${b}"), ["b"]);
        assert_eq!(names("${}${ }"), ["", ""]);
        assert_eq!(names("${x}}"), ["x"]);
    }

    #[test]
    fn whole_and_replace() {
        assert_eq!(whole("${params.x}").map(|r| r.name()), Some("params.x"));
        assert_eq!(whole("a${params.x}"), None);
        let out = replace("${env.name}-${other}-${{ x }}", |r| {
            (r.name() == "env.name").then(|| "dev".to_string())
        });
        assert_eq!(out, "dev-${other}-${{ x }}");
    }
}
