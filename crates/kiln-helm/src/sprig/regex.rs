//! Sprig's regular-expression functions, after Masterminds/sprig v3.3.0 `regex.go`
//! (`regexMatch`, `regexFindAll`, `regexReplaceAll`, `regexSplit`, …, and their `must`
//! forms), over Go's RE2 syntax as [`super::goregex`] translates it. What they compile is
//! kept for one execution ([`RegexCache`]).

use super::*;

/// A Go regexp (RE2 syntax) compiled with the `regex` crate (see [`goregex`]).
///
/// Compiled once per pattern and execution (render), not across renders: charts call
/// `regexMatch`/`regexReplaceAll` with the same few literal patterns for every resource
/// (bitnami's common library in every name), and compiling was 13 % of a
/// bitnami-postgresql render. Kept behind an `Rc`, not cloned: a `Regex` clone gets a pool
/// of its own, and making the clone's search cache on every call was most of a match.
/// Only successes are kept, so an invalid pattern fails on every call.
fn regex_of(ex: &mut Exec, p: &str) -> Result<Rc<::regex::Regex>, String> {
    ex.with_extension(|c: &mut RegexCache| {
        if let Some(r) = c.unicode.get(p) {
            return Ok(r.clone());
        }
        let r = Rc::new(
            ::regex::Regex::new(
                &goregex::translate(p).map_err(|e| format!("error parsing regexp: {e}"))?,
            )
            .map_err(|e| format!("error parsing regexp: {e}"))?,
        );
        // Bounded: a chart that builds patterns from data must not grow it without end.
        if c.unicode.len() >= 512 {
            c.unicode.clear();
        }
        c.unicode.insert(p.to_string(), r.clone());
        Ok(r)
    })
}

/// [`regex_of`] for an ASCII pattern searched in ASCII text: compiled with Unicode off. On
/// ASCII text that matches as the Unicode one does (every byte is a character; an ASCII
/// pattern's literals and case folding meet only ASCII there), and it compiles for a
/// fraction of the cost: a Unicode class such as `[^}]` or `[^a-z]` is compiled into UTF-8
/// automata, forward and reverse. It starts in regex-lite and moves to the `regex` crate
/// once it has been searched enough ([`goregex::AsciiSlot`]). `None` when pattern or text is
/// not ASCII or the pattern needs Unicode (`\pL`); the caller then uses [`regex_of`], which
/// also reports a pattern that does not parse. Kept, failures too, for one execution like
/// `regex_of`'s.
fn ascii_regex_of(ex: &mut Exec, p: &str, text: &str) -> Option<goregex::AsciiRegex> {
    if !p.is_ascii() || !text.is_ascii() {
        return None;
    }
    ex.with_extension(|c: &mut RegexCache| {
        if !c.ascii.contains_key(p) {
            if c.ascii.len() >= 512 {
                c.ascii.clear();
            }
            let slot = goregex::AsciiSlot::new(p, text.len());
            let literal = goregex::required_literal(p);
            c.ascii.insert(p.to_string(), (slot, literal));
        }
        let (slot, literal) = c.ascii.get_mut(p)?;
        // An invalid pattern is still reported, whatever the text holds.
        if matches!(slot, goregex::AsciiSlot::Invalid) {
            return None;
        }
        if let Some(l) = literal
            && memchr::memmem::find(text.as_bytes(), l).is_none()
        {
            return Some(goregex::AsciiRegex::Absent);
        }
        slot.search(p, text.len())
    })
}

/// An ASCII pattern's slot, and the literal every match of it holds
/// ([`goregex::required_literal`]).
pub type AsciiPattern = (goregex::AsciiSlot, Option<Box<[u8]>>);

/// The regexps the `regex*` functions compiled in one execution, by pattern: charts call
/// them with the same few literal patterns for every resource. Kept for one execution (one
/// render) only ([`Exec::with_extension`]), as every render compiles its own.
#[derive(Default)]
pub struct RegexCache {
    /// Compiled with Unicode, as Go reads the pattern (`regex_of`).
    pub unicode: FxMap<String, Rc<::regex::Regex>>,
    /// ASCII patterns for ASCII text, compiled without Unicode (`ascii_regex_of`).
    pub ascii: FxMap<String, AsciiPattern>,
}

/// Go's `Regexp.Expand` template syntax (`$1`, `${name}`) is the `regex` crate's.
pub(super) fn register(f: &mut Funcs) {
    for (name, must) in [("regexMatch", false), ("mustRegexMatch", true)] {
        f.add2(name, move |ex: &mut Exec, a0, a1| {
            let (p, t) = (s_ref(a0), s_ref(a1));
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(Value::Bool(r.is_match(&t)));
            }
            match regex_of(ex, &p) {
                Ok(r) => Ok(Value::Bool(r.is_match(&t))),
                Err(e) if must => Err(e),
                Err(_) => Ok(Value::Bool(false)),
            }
        });
    }
    for name in ["regexFind", "mustRegexFind"] {
        f.add2(name, move |ex: &mut Exec, a0, a1| {
            let (p, t) = (s_ref(a0), s_ref(a1));
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(Value::from(r.find(&t).unwrap_or("")));
            }
            let r = regex_of(ex, &p)?;
            Ok(Value::from(r.find(&t).map_or("", |m| m.as_str())))
        });
    }
    for name in ["regexFindAll", "mustRegexFindAll"] {
        f.add3(name, move |ex: &mut Exec, a0, a1, a2| {
            let (p, t) = (s_ref(a0), s_ref(a1));
            let n = to_i64(a2);
            let take = if n < 0 { usize::MAX } else { n as usize };
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(str_list(r.find_all(&t, take)));
            }
            let r = regex_of(ex, &p)?;
            let it = r.find_iter(&t).map(|m| m.as_str().to_string());
            Ok(str_list(it.take(take).collect()))
        });
    }
    for (name, literal) in [
        ("regexReplaceAll", false),
        ("mustRegexReplaceAll", false),
        ("regexReplaceAllLiteral", true),
        ("mustRegexReplaceAllLiteral", true),
    ] {
        f.add3(name, move |ex: &mut Exec, a0, a1, a2| {
            let (p, t, with) = (s_ref(a0), s_ref(a1), s_ref(a2));
            if let Some(r) = ascii_regex_of(ex, &p, &t) {
                return Ok(Value::from(r.replace_all(&t, &with, literal)));
            }
            let r = regex_of(ex, &p)?;
            let out = if literal {
                r.replace_all(&t, ::regex::NoExpand(&with))
            } else {
                r.replace_all(&t, &*with)
            };
            Ok(Value::from(out.into_owned()))
        });
    }
    for name in ["regexSplit", "mustRegexSplit"] {
        f.add3(name, move |ex: &mut Exec, a0, a1, a2| {
            let (p, t) = (s_ref(a0), s_ref(a1));
            let n = to_i64(a2);
            let take = usize::try_from(n).unwrap_or(usize::MAX);
            let ranges = match ascii_regex_of(ex, &p, &t) {
                Some(r) => r.ranges(&t, take),
                None => regex_of(ex, &p)?
                    .find_iter(&t)
                    .take(take)
                    .map(|m| m.range())
                    .collect(),
            };
            Ok(str_list(goregex::go_split(&p, &t, ranges, n)))
        });
    }
    f.add1("regexQuoteMeta", |_, a0| {
        Ok(Value::from(goregex::quote_meta(&s_ref(a0))))
    });
}
