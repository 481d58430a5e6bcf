//! `.helmignore`, after Helm v4.2.3 `pkg/ignore/rules.go`, and the glob matchers the loader
//! and `.Files.Glob` use: Go's `filepath.Match` ([`glob_match`]) and gobwas/glob with `**`
//! ([`glob_match_double`], `pkg/engine/files.go`).

/// `.helmignore` rules (`pkg/ignore/rules.go`), each pattern compiled once: the walk asks
/// every rule about every entry, and matching was a seventh of loading a chart.
pub(super) struct Ignore {
    rules: Vec<Rule>,
}

pub(super) struct Rule {
    matcher: Matcher,
    negate: bool,
    must_dir: bool,
    kind: RuleKind,
}

pub(super) enum RuleKind {
    Root,
    Path,
    Base,
}

/// A `filepath.Match` pattern, with the two shapes most rules have (`.DS_Store`, `*.tmp`)
/// matched without the general matcher.
pub(super) enum Matcher {
    /// No metacharacter: the name must equal it.
    Exact(String),
    /// `*` then no metacharacter: the name ends with it and has no `/` before.
    Suffix(String),
    /// Anything else, as chars.
    Glob(Vec<char>),
}

impl Matcher {
    pub(super) fn new(pattern: &str) -> Matcher {
        let plain = |t: &str| !t.contains(['*', '?', '[', '\\']);
        if plain(pattern) {
            Matcher::Exact(pattern.to_string())
        } else if let Some(rest) = pattern.strip_prefix('*')
            && plain(rest)
        {
            Matcher::Suffix(rest.to_string())
        } else {
            Matcher::Glob(pattern.chars().collect())
        }
    }

    pub(super) fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::Exact(p) => p == name,
            Matcher::Suffix(p) => name
                .strip_suffix(p.as_str())
                .is_some_and(|head| !head.contains('/')),
            Matcher::Glob(p) => glob_chars(p, name, '^'),
        }
    }
}

impl Ignore {
    /// The rules of a `.helmignore`, or `pkg/ignore`'s error for the first rule it refuses:
    /// a `**` anywhere in it, or a pattern `filepath.Match` calls malformed.
    pub(super) fn parse(text: &str) -> Result<Ignore, String> {
        // `AddDefaults` (hidden files under templates/). Helm appends it after the file's
        // rules; every rule can only add a reason to ignore, so the order is no matter.
        let mut rules = vec![Rule {
            matcher: Matcher::new("templates/.?*"),
            negate: false,
            must_dir: false,
            kind: RuleKind::Path,
        }];
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for line in text.lines() {
            let mut l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            if l.contains("**") {
                return Err("double-star (**) syntax is not supported".into());
            }
            if !go_pattern_valid(l) {
                return Err("syntax error in pattern".into());
            }
            let negate = l.starts_with('!');
            if negate {
                l = &l[1..];
            }
            let must_dir = l.ends_with('/');
            let l = l.trim_end_matches('/');
            let (kind, pattern) = if let Some(p) = l.strip_prefix('/') {
                (RuleKind::Root, p)
            } else if l.contains('/') {
                (RuleKind::Path, l)
            } else {
                (RuleKind::Base, l)
            };
            rules.push(Rule {
                matcher: Matcher::new(pattern),
                negate,
                must_dir,
                kind,
            });
        }
        Ok(Ignore { rules })
    }

    pub(super) fn ignored(&self, path: &str, is_dir: bool) -> bool {
        // The base name once per entry, not once per rule: most rules are base-name rules,
        // and splitting every walked path again for each was a sixth of loading
        // ingress-nginx (239 entries, 17 rules).
        let base = path.rsplit_once('/').map_or(path, |(_, b)| b);
        for r in &self.rules {
            if r.must_dir && !is_dir {
                // A negated directory rule ignores every file; a plain one none.
                if r.negate {
                    return true;
                }
                continue;
            }
            let target = match r.kind {
                RuleKind::Base => base,
                _ => path,
            };
            if r.matcher.matches(target) != r.negate {
                return true;
            }
        }
        false
    }
}

/// Go's `filepath.Match` (`*`, `?`, `[...]`, `\` escapes; `*` does not cross `/`).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    glob_chars(&p, name, '^')
}

/// [`glob_match`] over a pattern already split into chars; the name is walked in place.
/// `negator` opens a negated class: `^` for Go's `filepath.Match`, `!` for gobwas/glob
/// (`.Files.Glob`); in each, the other one is a plain member of the class.
pub(super) fn glob_chars(p: &[char], n: &str, negator: char) -> bool {
    let mut chars = n.chars();
    let first = chars.next();
    let after = chars.as_str();
    match p.first() {
        None => n.is_empty(),
        Some('*') => {
            let rest = &p[1..];
            if glob_chars(rest, n, negator) {
                return true;
            }
            for (i, c) in n.char_indices() {
                if c == '/' {
                    break;
                }
                if glob_chars(rest, &n[i + c.len_utf8()..], negator) {
                    return true;
                }
            }
            false
        }
        Some('?') => first.is_some_and(|c| c != '/') && glob_chars(&p[1..], after, negator),
        Some('[') => {
            let Some(c) = first else { return false };
            let mut i = 1;
            let negate = p.get(1) == Some(&negator);
            if negate {
                i += 1;
            }
            let mut hit = false;
            let mut first = true;
            while i < p.len() && (p[i] != ']' || first) {
                first = false;
                let lo = if p[i] == '\\' && i + 1 < p.len() {
                    i += 1;
                    p[i]
                } else {
                    p[i]
                };
                if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                    if lo <= c && c <= p[i + 2] {
                        hit = true;
                    }
                    i += 3;
                } else {
                    if lo == c {
                        hit = true;
                    }
                    i += 1;
                }
            }
            if i >= p.len() {
                return false;
            }
            hit != negate && c != '/' && glob_chars(&p[i + 1..], after, negator)
        }
        Some('\\') if p.len() > 1 => first == Some(p[1]) && glob_chars(&p[2..], after, negator),
        Some(c) => first == Some(*c) && glob_chars(&p[1..], after, negator),
    }
}

/// gobwas/glob with `/` as separator, as `.Files.Glob` matches: `*` stays within a path
/// segment, `**` crosses them, `{a,b}` alternatives, `?` and classes as `filepath.Match`.
pub fn glob_match_double(pattern: &str, name: &str) -> bool {
    if let (Some(open), Some(close)) = (pattern.find('{'), pattern.find('}'))
        && open < close
    {
        {
            let (pre, rest) = pattern.split_at(open);
            let alts = &rest[1..close - open];
            let post = &rest[close - open + 1..];
            return alts
                .split(',')
                .any(|a| glob_match_double(&format!("{pre}{a}{post}"), name));
        }
    }
    if let Some(i) = pattern.find("**") {
        let (pre, post) = (&pattern[..i], &pattern[i + 2..]);
        for j in (0..=name.len()).filter(|&j| name.is_char_boundary(j)) {
            if !gobwas_piece(pre, &name[..j]) {
                continue;
            }
            for k in (j..=name.len()).filter(|&k| name.is_char_boundary(k)) {
                if glob_match_double(post, &name[k..]) {
                    return true;
                }
            }
        }
        return false;
    }
    gobwas_piece(pattern, name)
}

/// A gobwas/glob pattern without `**` or `{…}`: as `filepath.Match`, but `[!…]` negates.
pub(super) fn gobwas_piece(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    glob_chars(&p, name, '!')
}

/// Whether Go's `filepath.Match` accepts `pattern` (its `ErrBadPattern` rules: `matchChunk`
/// and `getEsc`, Go 1.25; Match checks the whole pattern even where the name fails early).
/// A class needs its `]` and at least one member, a member or a range end cannot be `-` or
/// `]` unescaped or missing, and a `\` must escape something.
pub(super) fn go_pattern_valid(pattern: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    // getEsc: one member (maybe escaped), and something must follow it.
    let esc = |i: &mut usize| -> bool {
        match p.get(*i) {
            None | Some('-') | Some(']') => return false,
            Some('\\') => {
                *i += 1;
                if *i >= p.len() {
                    return false;
                }
            }
            _ => {}
        }
        *i += 1;
        *i < p.len()
    };
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '[' => {
                i += 1;
                if i >= p.len() {
                    return false;
                }
                if p[i] == '^' {
                    i += 1;
                }
                let mut ranges = 0;
                loop {
                    if p.get(i) == Some(&']') && ranges > 0 {
                        i += 1;
                        break;
                    }
                    if !esc(&mut i) {
                        return false;
                    }
                    if p[i] == '-' {
                        i += 1;
                        if !esc(&mut i) {
                            return false;
                        }
                    }
                    ranges += 1;
                }
            }
            '\\' => {
                if i + 1 >= p.len() {
                    return false;
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    true
}
