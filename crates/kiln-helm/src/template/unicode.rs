//! Go's `unicode` package tests and case mappings, for the ports of the Go string libraries
//! Sprig calls (huandu/xstrings, Masterminds/goutils, `strings.Title`).
//!
//! Go tests general categories where Rust's `char` methods test derived properties:
//! `unicode.IsUpper` is `Lu` (Rust's `is_uppercase` also takes `Ⅰ` and `Ⓐ`), `IsLetter` is
//! `L` (`is_alphabetic` also takes marks and letter numbers), `IsPunct` is `P` (Rust has
//! only the ASCII test, which takes symbols such as `$` and `+`). The categories come from
//! the regex crate's Unicode tables; ASCII is answered without them.

use regex::Regex;
use std::sync::LazyLock;

fn class(re: &LazyLock<Regex>, c: char) -> bool {
    let mut b = [0u8; 4];
    re.is_match(c.encode_utf8(&mut b))
}

macro_rules! category {
    ($name:ident, $pattern:literal) => {
        static $name: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(concat!("^", $pattern, "$")).expect("a category class"));
    };
}
category!(UPPER, r"\p{Lu}");
category!(LOWER, r"\p{Ll}");
category!(TITLE, r"\p{Lt}");
category!(LETTER, r"\p{L}");
category!(PUNCT, r"\p{P}");
category!(DIGIT, r"\p{Nd}");
category!(PRINT, r"[\p{L}\p{M}\p{N}\p{P}\p{S}]");

/// `unicode.IsUpper`.
pub fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_uppercase()
    } else {
        class(&UPPER, c)
    }
}

/// `unicode.IsLower`.
pub fn is_lower(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_lowercase()
    } else {
        class(&LOWER, c)
    }
}

/// `unicode.IsTitle`.
pub fn is_title(c: char) -> bool {
    !c.is_ascii() && class(&TITLE, c)
}

/// `unicode.IsLetter`.
pub fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        class(&LETTER, c)
    }
}

/// `unicode.IsPunct`: ASCII punctuation less the symbols `$+<=>^`|~`.
pub fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_punctuation() && !"$+<=>^`|~".contains(c)
    } else {
        class(&PUNCT, c)
    }
}

/// `unicode.IsDigit` (category Nd).
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        class(&DIGIT, c)
    }
}

/// `unicode.IsSpace` (the White_Space property, as Rust's `is_whitespace`).
pub fn is_space(c: char) -> bool {
    c.is_whitespace()
}

/// `unicode.IsNumber` (categories Nd, Nl and No, as Rust's `is_numeric`).
pub fn is_number(c: char) -> bool {
    c.is_numeric()
}

/// `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
pub fn is_print(c: char) -> bool {
    if c.is_ascii() {
        (' '..='~').contains(&c)
    } else {
        class(&PRINT, c)
    }
}

/// The one character a case mapping gives, if it gives one.
fn single(mut mapped: impl Iterator<Item = char>) -> Option<char> {
    match (mapped.next(), mapped.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// `unicode.ToLower`: the simple mapping (`İ` is `i`; Rust's full one is `i̇`).
pub fn to_lower(c: char) -> char {
    single(c.to_lowercase()).unwrap_or(if c == '\u{130}' { 'i' } else { c })
}

/// `unicode.ToUpper`: the simple mapping. Rust has only the full mappings; where one is
/// longer, the simple one is the Greek letters with ypogegrammeni (`ᾳ` is `ᾼ`, not `ΑΙ`),
/// and for every other character there is none: it is kept (`ß` stays `ß`).
pub fn to_upper(c: char) -> char {
    single(c.to_uppercase()).unwrap_or(match c as u32 {
        n @ (0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7) => {
            char::from_u32(n + 8).unwrap_or(c)
        }
        0x1FB3 => '\u{1FBC}',
        0x1FC3 => '\u{1FCC}',
        0x1FF3 => '\u{1FFC}',
        _ => c,
    })
}

/// `unicode.ToTitle`: the upper case but for the Latin digraphs (`ǆ` is `ǅ`, not `Ǆ`) and
/// Georgian Mkhedruli, whose title case is itself (its upper case is Mtavruli).
pub fn to_title(c: char) -> char {
    match c as u32 {
        0x1C4..=0x1C6 => '\u{1C5}',
        0x1C7..=0x1C9 => '\u{1C8}',
        0x1CA..=0x1CC => '\u{1CB}',
        0x1F1..=0x1F3 => '\u{1F2}',
        0x10D0..=0x10FA | 0x10FD..=0x10FF => c,
        _ => to_upper(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_gos() {
        assert!(is_upper('É') && !is_upper('Ⅰ') && !is_upper('Ⓐ'));
        assert!(is_letter('中') && !is_letter('\u{301}') && !is_letter('Ⅰ'));
        assert!(is_punct('!') && is_punct('_') && !is_punct('$') && !is_punct('+'));
        assert!(is_punct('¿') && !is_punct('€'));
        assert!(is_print('é') && !is_print('\u{a0}') && !is_print('\u{7f}'));
        assert!(is_title('ǅ') && !is_title('Ǆ'));
        assert_eq!(
            (to_title('ǆ'), to_upper('ǆ'), to_lower('İ')),
            ('ǅ', 'Ǆ', 'i')
        );
    }
}
