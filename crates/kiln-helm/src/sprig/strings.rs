//! Sprig's string functions, after Masterminds/sprig v3.3.0 `strings.go` (`trunc`, `abbrev`,
//! `wrap`, `indent`, `b64enc`, …) and the Go libraries it calls for them: huandu/xstrings
//! (`camelcase`, `snakecase`, `kebabcase`, `swapcase`, `shuffle`), Masterminds/goutils
//! (`initials`, `abbrevboth`, `wrapWith`) and Go's `strings` (`title`, `split`, `replace`).

use super::encode;
use super::*;
use crate::template::value::Dict;

/// Masterminds/goutils `AbbreviateFull(str, offset, maxWidth)`, the caller having refused the
/// widths it errs on (Sprig's `abbrev`/`abbrevboth`). Go counts and cuts bytes, so a cut
/// inside a character leaves an invalid byte, which shows as U+FFFD.
fn abbreviate_full(t: &str, offset: i64, width: i64) -> String {
    let b = t.as_bytes();
    let len = b.len() as i64;
    if t.is_empty() || len <= width {
        return t.to_string();
    }
    let cut = |from: i64, to: i64| {
        String::from_utf8_lossy(&b[from.clamp(0, len) as usize..to.clamp(0, len) as usize])
            .into_owned()
    };
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return cut(0, width - 3) + "...";
    }
    if width < 7 {
        return String::new();
    }
    if offset + width - 3 < len {
        let rest = String::from_utf8_lossy(&b[offset as usize..]).into_owned();
        return format!("...{}", abbreviate_full(&rest, 0, width - 3));
    }
    format!("...{}", cut(len - (width - 3), len))
}

/// huandu/xstrings v1.5 `ToPascalCase` (Sprig's `camelcase`): leading connectors (`-`, `_`,
/// blanks) kept, the character after a connector upper-cased and the connector dropped, a
/// run of connectors keeping all but its last; other letters keep their case except the
/// capitals right after a word's capital first letter (`FOO_BAR` is `FooBar`, `fooBar`
/// `FooBar`, `aBC dEF` `ABCDEF`, `foo__bar` `Foo_Bar`). A text of connectors only gets its
/// last one twice (`_` is `__`), as xstrings writes it.
fn camel_case(t: &str) -> String {
    use unicode::{is_upper, to_lower, to_upper};
    let mut out = String::with_capacity(t.len() + 1);
    let mut chars = t.chars();
    let mut first_upper = false;
    let mut cur = None;
    for c in chars.by_ref() {
        if !xconnector(c) {
            first_upper = is_upper(c);
            cur = Some(to_upper(c));
            break;
        }
        out.push(c);
        cur = Some(c);
    }
    let Some(mut cur) = cur else {
        return out;
    };
    for next in chars {
        let prev = cur;
        cur = next;
        if xconnector(cur) && xconnector(prev) {
            out.push(prev);
            continue;
        }
        if xconnector(prev) {
            first_upper = is_upper(cur);
            cur = to_upper(cur);
        } else {
            if first_upper {
                if is_upper(cur) {
                    cur = to_lower(cur);
                } else {
                    first_upper = false;
                }
            }
            out.push(prev);
        }
    }
    out.push(cur);
    out
}

/// Go's `strings.Title` (Sprig's `title`): a letter after a separator is title-cased, all
/// else kept. Separators are ASCII characters other than letters, digits and `_` (so
/// `o'neil` is `O'Neil`, `hello-world` `Hello-World`, `foo_bar` `Foo_bar`) and, past ASCII,
/// spaces only (`a²b` is `A²b`).
fn title_case(t: &str) -> String {
    fn separator(c: char) -> bool {
        if c.is_ascii() {
            return !(c.is_ascii_alphanumeric() || c == '_');
        }
        if unicode::is_letter(c) || unicode::is_digit(c) {
            return false;
        }
        unicode::is_space(c)
    }
    let mut prev = ' ';
    t.chars()
        .map(|c| {
            let out = if separator(prev) {
                unicode::to_title(c)
            } else {
                c
            };
            prev = c;
            out
        })
        .collect()
}

/// Go's `strings.ToUpper`: each character by its simple (one-character) mapping, so `ß`
/// stays `ß` (Rust's `to_uppercase` gives `SS`).
fn go_upper(t: &str) -> String {
    t.chars().map(unicode::to_upper).collect()
}

/// Go's `strings.ToLower`: each character alone, so a final `Σ` is `σ` (Rust's
/// `to_lowercase` gives `ς` there), and `İ` is `i` (its simple mapping).
fn go_lower(t: &str) -> String {
    t.chars().map(unicode::to_lower).collect()
}

/// goutils `DeleteWhiteSpace` (Sprig's `nospace`) reads the text byte by byte, each byte
/// as the character of that number (Latin-1): a byte that is a space there (`\t\n\v\f\r`,
/// space, 0x85, 0xA0) is dropped, and when one was, every other byte is written as that
/// character, so `é` (C3 A9) becomes `Ã©` and `a\u00a0b` (61 C2 A0 62) `aÂb`. Text without
/// such a byte is given back as it is.
fn delete_white_space(t: &str) -> Option<String> {
    let space = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xa0);
    if !t.bytes().any(space) {
        return None;
    }
    Some(t.bytes().filter(|&b| !space(b)).map(char::from).collect())
}

/// goutils `Initials` (Sprig's `initials`), byte by byte as [`delete_white_space`]: the
/// first byte of each word (after a Latin-1 space byte), as the Latin-1 character, so
/// `élan vital` gives `Ãv`.
fn initials(t: &str) -> String {
    let space = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xa0);
    let mut gap = true;
    let mut out = String::new();
    for b in t.bytes() {
        if space(b) {
            gap = true;
        } else if gap {
            out.push(char::from(b));
            gap = false;
        }
    }
    out
}

/// goutils `SwapCase` (Sprig's `swapcase`): upper and title case to lower, lower case to
/// title case after a space or at the start, else to upper case.
fn swap_case(t: &str) -> String {
    let mut space = true;
    t.chars()
        .map(|c| {
            if unicode::is_upper(c) || unicode::is_title(c) {
                space = false;
                unicode::to_lower(c)
            } else if unicode::is_lower(c) {
                let out = if space {
                    unicode::to_title(c)
                } else {
                    unicode::to_upper(c)
                };
                space = false;
                out
            } else {
                space = unicode::is_space(c);
                c
            }
        })
        .collect()
}

/// goutils `Uncapitalize` (Sprig's `untitle`): the first character and each one after a
/// space lower-cased.
fn uncapitalize(t: &str) -> String {
    let mut next = true;
    t.chars()
        .map(|c| {
            if unicode::is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                unicode::to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

pub(super) fn register(f: &mut Funcs) {
    fn s1(f: &mut Funcs, name: &'static str, op: fn(&str) -> String) {
        f.add1(name, move |_, a0| Ok(Value::from(op(&s_ref(a0)))));
    }
    // ASCII text with nothing to change (no byte `changes`) is the argument itself (as
    // Go's ToUpper/ToLower give it back): most `lower` calls are on names already lower case.
    fn case(f: &mut Funcs, name: &'static str, changes: fn(&u8) -> bool, op: fn(&str) -> String) {
        f.add1(name, move |_, a0| {
            let t = s_ref(a0);
            if t.bytes().all(|b| b.is_ascii() && !changes(&b)) {
                return Ok(part_of(a0, &t));
            }
            Ok(Value::from(op(&t)))
        });
    }
    case(f, "upper", u8::is_ascii_lowercase, go_upper);
    case(f, "lower", u8::is_ascii_uppercase, go_lower);
    s1(f, "title", title_case);
    s1(f, "untitle", uncapitalize);
    f.add1("trim", |_, a0| {
        let t = s_ref(a0);
        Ok(part_of(a0, t.trim()))
    });
    f.add1("nospace", |_, a0| {
        let t = s_ref(a0);
        Ok(match delete_white_space(&t) {
            Some(out) => Value::from(out),
            None => part_of(a0, &t),
        })
    });
    s1(f, "initials", initials);
    s1(f, "swapcase", swap_case);
    s1(f, "snakecase", |t| case_words(t, '_'));
    s1(f, "kebabcase", |t| case_words(t, '-'));
    s1(f, "camelcase", camel_case);
    f.add1("toString", |_, a0| {
        Ok(match a0 {
            Value::Str(_) => a0.clone(),
            other => Value::from(strval(other)),
        })
    });
    f.add2("trimAll", |_, a0, a1| {
        let cut: Vec<char> = s_ref(a0).chars().collect();
        let t = s_ref(a1);
        Ok(part_of(a1, t.trim_matches(cut.as_slice())))
    });
    f.add2("trimall", |_, a0, a1| {
        let cut: Vec<char> = s_ref(a0).chars().collect();
        let t = s_ref(a1);
        Ok(part_of(a1, t.trim_matches(cut.as_slice())))
    });
    f.add2("trimPrefix", |_, a0, a1| {
        let (p, t) = (s_ref(a0), s_ref(a1));
        Ok(part_of(a1, t.strip_prefix(&*p).unwrap_or(&t)))
    });
    f.add2("trimSuffix", |_, a0, a1| {
        let (p, t) = (s_ref(a0), s_ref(a1));
        Ok(part_of(a1, t.strip_suffix(&*p).unwrap_or(&t)))
    });
    f.add2("contains", |_, a0, a1| {
        Ok(Value::Bool(s_ref(a1).contains(&*s_ref(a0))))
    });
    f.add2("hasPrefix", |_, a0, a1| {
        Ok(Value::Bool(s_ref(a1).starts_with(&*s_ref(a0))))
    });
    f.add2("hasSuffix", |_, a0, a1| {
        Ok(Value::Bool(s_ref(a1).ends_with(&*s_ref(a0))))
    });
    f.add("quote", |_, a| {
        // One argument (the usual `quote .x`): quoted from the borrowed text, with no list
        // of parts to join (a copy of the text, the list and the join for every call).
        if let [v] = a {
            return Ok(Value::from(if v.is_nil() {
                String::new()
            } else {
                go_quote(&s_ref(v))
            }));
        }
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !v.is_nil())
            .map(|v| go_quote(&s_ref(v)))
            .collect();
        Ok(Value::from(parts.join(" ")))
    });
    f.add("squote", |_, a| {
        let parts: Vec<String> = a
            .iter()
            .filter(|v| !v.is_nil())
            .map(|v| format!("'{}'", strval(v)))
            .collect();
        Ok(Value::from(parts.join(" ")))
    });
    f.add("cat", |_, a| {
        let parts: Vec<String> = a.iter().filter(|v| !v.is_nil()).map(strval).collect();
        Ok(Value::from(parts.join(" ")))
    });
    f.add2("indent", |_, a0, a1| {
        let text = s_ref(a1);
        bound_indent("indent", a0, &text)?;
        Ok(Value::from(indented("", a0, &text)))
    });
    f.add2("nindent", |_, a0, a1| {
        let text = s_ref(a1);
        bound_indent("nindent", a0, &text)?;
        Ok(Value::from(indented("\n", a0, &text)))
    });
    f.add3("replace", |_, a0, a1, a2| {
        let (old, new, src) = (s_ref(a0), s_ref(a1), s_ref(a2));
        Ok(if old.is_empty() {
            Value::from(go_replace_empty(&src, &new))
        } else if !src.contains(&*old) {
            // Nothing to replace: the text itself.
            part_of(a2, &src)
        } else {
            Value::from(src.replace(&*old, &new))
        })
    });
    f.add2("repeat", |_, a0, a1| {
        let (n, text) = (to_i64(a0).max(0), s(a1));
        bound_text("repeat", n as u128 * text.len() as u128)?;
        Ok(Value::from(text.repeat(n as usize)))
    });
    f.add3("substr", |_, a0, a1, a2| {
        let (start, end, t) = (to_i64(a0), to_i64(a1), s_ref(a2));
        let b = t.as_bytes();
        let len = b.len() as i64;
        // Sprig's `substring` slices the bytes; a slice out of range is Go's panic, which
        // the template reports as the call's error.
        let oob = |m: String| Err(format!("runtime error: slice bounds out of range {m}"));
        let r = if start < 0 {
            if end < 0 {
                return oob(format!("[:{end}]"));
            }
            if end > len {
                return oob(format!("[:{end}] with length {len}"));
            }
            &b[..end as usize]
        } else if end < 0 || end > len {
            if start > len {
                return oob(format!("[{start}:{len}]"));
            }
            &b[start as usize..]
        } else {
            if start > end {
                return oob(format!("[{start}:{end}]"));
            }
            &b[start as usize..end as usize]
        };
        Ok(bytes_of(a2, r))
    });
    f.add2("trunc", |_, a0, a1| {
        let (c, t) = (to_i64(a0), s_ref(a1));
        let len = t.len() as i64;
        let b = t.as_bytes();
        let r = if c < 0 && len + c > 0 {
            &b[(len + c) as usize..]
        } else if c >= 0 && len > c {
            &b[..c as usize]
        } else {
            b
        };
        Ok(bytes_of(a1, r))
    });
    f.add2("abbrev", |_, a0, a1| {
        let (w, t) = (to_i64(a0), s(a1));
        if w < 4 {
            return Ok(Value::from(t));
        }
        Ok(Value::from(abbreviate_full(&t, 0, w)))
    });
    f.add3("abbrevboth", |_, a0, a1, a2| {
        let (left, right, t) = (to_i64(a0), to_i64(a1), s(a2));
        if right < 4 || left > 0 && right < 7 {
            return Ok(Value::from(t));
        }
        Ok(Value::from(abbreviate_full(&t, left, right)))
    });
    f.add2("wrap", |_, a0, a1| {
        Ok(Value::from(wrap_words(&s(a1), to_i64(a0), "", false)))
    });
    f.add3("wrapWith", |_, a0, a1, a2| {
        Ok(Value::from(wrap_words(&s(a2), to_i64(a0), &s(a1), true)))
    });
    f.add3("plural", |_, a0, a1, a2| {
        Ok(if to_i64(a2) == 1 {
            a0.clone()
        } else {
            a1.clone()
        })
    });
    f.add2("split", |_, a0, a1| {
        let (sep, t) = (s(a0), s(a1));
        let m: Dict = go_split(&t, &sep, -1)
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::from(p)))
            .collect();
        Ok(Value::map(m))
    });
    f.add3("splitn", |_, a0, a1, a2| {
        let (sep, n, t) = (s(a0), to_i64(a1), s(a2));
        let m: Dict = go_split(&t, &sep, n)
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::from(p)))
            .collect();
        Ok(Value::map(m))
    });
    f.add2("splitList", |_, a0, a1| {
        Ok(str_list(go_split(&s(a1), &s(a0), -1)))
    });
    f.add2("join", |_, a0, a1| {
        Ok(Value::from(strslice(a1).join(&s(a0))))
    });
    f.add1("sortAlpha", |_, a0| {
        let mut v = strslice(a0);
        v.sort();
        Ok(str_list(v))
    });
    f.add1("toStrings", |_, a0| Ok(str_list(strslice(a0))));
    f.add("hello", |_, _| Ok(Value::from("Hello!")));
}

/// Go's `strings.Split`/`SplitN` (an empty separator splits into UTF-8 characters).
fn go_split(t: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let mut v: Vec<String> = t.chars().map(String::from).collect();
        if n > 0 && v.len() > n as usize {
            let rest: String = v[n as usize - 1..].concat();
            v.truncate(n as usize - 1);
            v.push(rest);
        }
        return v;
    }
    if n < 0 {
        t.split(sep).map(str::to_string).collect()
    } else {
        t.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

/// Go's `strings.Replace` with an empty `old`: inserts `new` around every character.
fn go_replace_empty(src: &str, new: &str) -> String {
    let mut out = String::from(new);
    for c in src.chars() {
        out.push(c);
        out.push_str(new);
    }
    out
}

/// huandu/xstrings `ToSnakeCase`/`ToKebabCase` (Sprig's `snakecase`, `kebabcase`): the text
/// read as words (runs of connectors `-` `_` blanks, of punctuation, of digits, upper-case
/// runs, letters, other characters), each connector written as `sep` (a run keeps its
/// length: `a--b` is `a__b`), `sep` put between two words that touch (`fooBar` is
/// `foo_bar`, `a+b` `a_+_b`), none next to punctuation (`foo.Bar` is `foo.bar`), and digits
/// joined to the word before when a letter word does not follow them (`Bld4Floor3rd` is
/// `bld4_floor_3rd`, `http2xx` `http_2xx`). Upper-case letters are lower-cased.
fn case_words(t: &str, sep: char) -> String {
    use XWord::*;
    fn lower(out: &mut String, wt: XWord, word: &str, sep: char) {
        if wt != Upper && wt != Connector {
            out.push_str(word);
            return;
        }
        for c in word.chars() {
            if xconnector(c) {
                out.push(sep);
            } else if unicode::is_upper(c) {
                out.push(unicode::to_lower(c));
            } else {
                out.push(c);
            }
        }
    }
    let mut out = String::with_capacity(t.len() + 4);
    if t.is_empty() {
        return out;
    }
    let (mut wt, mut word, mut rest) = next_xword(t);
    while !rest.is_empty() {
        if wt != Connector {
            lower(&mut out, wt, word, sep);
        }
        let (prev, last) = (wt, word);
        (wt, word, rest) = next_xword(rest);
        match prev {
            Number => {
                while wt == Alphabet || wt == Number {
                    lower(&mut out, wt, word, sep);
                    (wt, word, rest) = next_xword(rest);
                }
                if wt != Invalid && wt != Punct && wt != Connector {
                    out.push(sep);
                }
            }
            Connector => lower(&mut out, prev, last, sep),
            Punct => {}
            _ => {
                if wt != Number {
                    if wt != Connector && wt != Punct {
                        out.push(sep);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, rest) = next_xword(rest);
                // A number ends the word before it ("Bld4Floor" is "bld4_floor") unless
                // lower-case letters follow it ("HTTP2xx" is "http_2xx").
                if wt != Alphabet {
                    lower(&mut out, Number, last, sep);
                    if wt != Connector && wt != Punct {
                        out.push(sep);
                    }
                    continue;
                }
                out.push(sep);
                lower(&mut out, Number, last, sep);
                while wt == Alphabet || wt == Number {
                    lower(&mut out, wt, word, sep);
                    (wt, word, rest) = next_xword(rest);
                }
                if wt != Invalid && wt != Connector && wt != Punct {
                    out.push(sep);
                }
            }
        }
    }
    lower(&mut out, wt, word, sep);
    out
}

/// xstrings' word types (`nextWord`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum XWord {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings' `isConnector`.
fn xconnector(c: char) -> bool {
    c == '-' || c == '_' || unicode::is_space(c)
}

/// xstrings' `isAlphabet`: a letter, but not a CJK ideograph.
fn xalphabet(c: char) -> bool {
    unicode::is_letter(c)
        && !matches!(c as u32, 0x4E00..=0x9FCC | 0x3400..=0x4D85 | 0x20000..=0x2B81D)
}

/// xstrings' `nextValidRune`: the next character that is not U+FFFD (Go's decoding error,
/// which xstrings skips) and the bytes up to its end; `prev` and all of `s` if none.
fn next_valid(s: &str, prev: char) -> (char, usize) {
    let mut size = 0;
    for c in s.chars() {
        size += c.len_utf8();
        if c != '\u{FFFD}' {
            return (c, size);
        }
    }
    (prev, size)
}

/// xstrings' `nextWord`: the type of the word `s` starts with, the word and the rest.
fn next_xword(s: &str) -> (XWord, &str, &str) {
    use XWord::*;
    if s.is_empty() {
        return (Invalid, "", "");
    }
    let (mut r, mut size) = next_valid(s, '\u{FFFD}');
    let mut offset = size;
    if r == '\u{FFFD}' {
        return (Invalid, &s[..offset], &s[offset..]);
    }
    let mut rest = &s[size..];
    // Extends the word over the characters `keep` takes.
    let extend =
        |rest: &mut &str, r: &mut char, offset: &mut usize, keep: &dyn Fn(char) -> bool| {
            while !rest.is_empty() {
                let (c, n) = next_valid(rest, *r);
                *r = c;
                if !keep(c) {
                    break;
                }
                *offset += n;
                *rest = &rest[n..];
            }
        };
    let wt = if xconnector(r) {
        extend(&mut rest, &mut r, &mut offset, &xconnector);
        Connector
    } else if unicode::is_punct(r) {
        extend(&mut rest, &mut r, &mut offset, &unicode::is_punct);
        Punct
    } else if unicode::is_upper(r) {
        if !rest.is_empty() {
            (r, size) = next_valid(rest, r);
            if unicode::is_upper(r) {
                let mut prev_size = size;
                offset += size;
                rest = &rest[size..];
                while !rest.is_empty() {
                    (r, size) = next_valid(rest, r);
                    if !unicode::is_upper(r) {
                        break;
                    }
                    prev_size = size;
                    offset += size;
                    rest = &rest[size..];
                }
                // "HTTPStatus" is "HTTP" and "Status": the last capital starts the next word.
                if !rest.is_empty() && xalphabet(r) {
                    offset -= prev_size;
                    rest = &s[offset..];
                }
            } else if xalphabet(r) {
                offset += size;
                rest = &rest[size..];
                extend(&mut rest, &mut r, &mut offset, &|c| {
                    xalphabet(c) && !unicode::is_upper(c)
                });
            }
        }
        Upper
    } else if xalphabet(r) {
        extend(&mut rest, &mut r, &mut offset, &|c| {
            xalphabet(c) && !unicode::is_upper(c)
        });
        Alphabet
    } else if unicode::is_number(r) {
        extend(&mut rest, &mut r, &mut offset, &unicode::is_number);
        Number
    } else {
        extend(&mut rest, &mut r, &mut offset, &|c| {
            !(xconnector(c) || xalphabet(c) || unicode::is_number(c) || unicode::is_punct(c))
        });
        Other
    };
    (wt, &s[..offset], rest)
}

/// goutils `WrapCustom` (Sprig's `wrap`, and `wrapWith` with `long` true): lines broken at
/// the last space within `width` bytes, spaces at a line's start dropped; a word longer
/// than the width is cut at the width when `long` (Go cuts bytes: a cut inside a character
/// leaves U+FFFD here), else kept whole up to the next space.
fn wrap_words(t: &str, width: i64, nl: &str, long: bool) -> String {
    if t.is_empty() {
        return String::new();
    }
    let nl = if nl.is_empty() { "\n" } else { nl };
    let width = width.max(1) as usize;
    let b = t.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len() + 8);
    let mut offset = 0;
    while b.len() - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (width + offset + 1).min(b.len());
        if let Some(i) = b[offset..end].iter().rposition(|&c| c == b' ') {
            out.extend_from_slice(&b[offset..offset + i]);
            out.extend_from_slice(nl.as_bytes());
            offset += i + 1;
        } else if long {
            out.extend_from_slice(&b[offset..offset + width]);
            out.extend_from_slice(nl.as_bytes());
            offset += width;
        } else {
            let end = width + offset;
            match b[end..].iter().position(|&c| c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = b.len();
                }
                Some(i) => {
                    out.extend_from_slice(&b[offset..end + i]);
                    out.extend_from_slice(nl.as_bytes());
                    offset = end + i + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Sprig's base64 and base32 functions (strings.go: `base64encode`, `base32decode`, …),
/// over Go's bytes of the string.
pub(super) fn encodings(f: &mut Funcs) {
    f.add1("b64enc", |_, a0| {
        Ok(Value::from(encode::b64(&crate::template::fmt::go_bytes(
            &strval(a0),
        ))))
    });
    f.add1("b64dec", |_, a0| {
        // Sprig gives the decoding error as the result, not as an error.
        Ok(Value::from(match encode::b64_decode(&s_ref(a0)) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(at) => format!("illegal base64 data at input byte {at}"),
        }))
    });
    f.add1("b32enc", |_, a0| {
        Ok(Value::from(encode::b32(&crate::template::fmt::go_bytes(
            &strval(a0),
        ))))
    });
    f.add1("b32dec", |_, a0| {
        Ok(Value::from(match encode::b32_decode(&s_ref(a0)) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(at) => format!("illegal base32 data at input byte {at}"),
        }))
    });
}

/// The size `indent` would make: a pad per line.
fn bound_indent(name: &str, n: &Value, text: &str) -> Result<(), String> {
    let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count() as u128 + 1;
    bound_text(name, to_i64(n).max(0) as u128 * lines + text.len() as u128)
}

/// Sprig's `indent` (`pad + strings.Replace(text, "\n", "\n"+pad, -1)`) after `lead`, written
/// once into a string of its final size (the replace, its pattern and the final format were
/// three strings, a visible part of charts that `nindent` every block).
fn indented(lead: &str, n: &Value, text: &str) -> String {
    let pad = " ".repeat(to_i64(n).max(0) as usize);
    // Room for the text and a few padded lines; more lines grow it (counting them first was
    // a pass of its own).
    let mut out = String::with_capacity(lead.len() + pad.len() * 8 + text.len());
    out.push_str(lead);
    out.push_str(&pad);
    // Newlines found by a byte loop: `find('\n')`'s char searcher cost more per (short)
    // line than the bytes it skipped.
    let mut start = 0;
    for (i, &c) in text.as_bytes().iter().enumerate() {
        if c == b'\n' {
            out.push_str(&text[start..=i]);
            out.push_str(&pad);
            start = i + 1;
        }
    }
    out.push_str(&text[start..]);
    out
}
