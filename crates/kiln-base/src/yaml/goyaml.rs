//! go-yaml's scalar rules, shared by both of kiln's writers: kubectl kustomize's output and
//! Helm's `toYaml`. Both print through `sigs.k8s.io/yaml` (JSON, then go-yaml v2's encoder:
//! kustomize's `Resource.AsYAML` in `api/resource/resource.go` calls `yaml.JSONToYAML`), so a
//! string's style, its folding past column 80 and the order of mapping keys are decided here
//! once, from go-yaml v2's files (branch `v2` of go-yaml/yaml):
//! - `encode.go` `stringv`: a string that [`resolves_to_str`] and is no base-60 float may be
//!   plain; a multi-line one asks for a literal block; anything else is double-quoted;
//! - `resolve.go` `resolve`: what a plain scalar would read back as (YAML 1.1);
//! - `emitterc.go` `yaml_emitter_analyze_scalar` and `yaml_emitter_select_scalar_style`:
//!   plain falls back to single quotes, single quotes to double ([`string_style`]);
//!   `yaml_emitter_write_plain_scalar` and the quoted writers fold at a space past
//!   `best_width` 80 ([`push_folded`]); `yaml_emitter_write_block_scalar_hints`,
//!   `yaml_emitter_write_literal_scalar`, `yaml_emitter_write_double_quoted_scalar`;
//! - `sorter.go` `keyList.Less`: the order of mapping keys ([`key_order`]);
//! - `yamlh.go` `is_printable`.
//!
//! The two go-yaml versions' emitters agree on all of this but the folding: v3 (Helm's
//! `toYamlPretty`) does not fold.

use std::fmt::Write as _;

/// go-yaml's `is_printable`: `\n`, ASCII 0x20..0x7E, and U+00A0..U+FFFD without the byte
/// order mark. Tab, the other C0 and C1 controls, DEL, U+FFFE/U+FFFF and everything past the
/// Basic Multilingual Plane (emoji) are not, and force a double-quoted, escaped scalar.
pub fn is_printable(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        && c != '\u{FEFF}'
}

/// A character go-yaml's reader takes for a line break besides `\n` (`is_break`): a string
/// holding one is written double-quoted here, where the break is escaped (`\r`, `\N`, `\L`,
/// `\P`), so it reads back as the same character.
fn is_other_break(c: char) -> bool {
    matches!(c, '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Whether a multi-line string may go out as a literal block (`block_allowed` of the
/// analysis): every character printable, no space at the end and none right before a line
/// break. Leading spaces and breaks are allowed: [`write_literal`] gives them an indentation
/// indicator.
pub fn literal_allowed(s: &str) -> bool {
    let mut prev_space = false;
    for c in s.chars() {
        if !is_printable(c) || is_other_break(c) {
            return false;
        }
        if c == '\n' && prev_space {
            return false;
        }
        prev_space = c == ' ';
    }
    !prev_space
}

/// Whether a one-line string has a character only a double-quoted scalar can carry.
pub fn needs_escapes(s: &str) -> bool {
    // Nearly every string is printable ASCII: a byte test the compiler vectorizes, before
    // the character rules (decoding each character was a twentieth of a `toYaml`-heavy render).
    if s.bytes().all(|b| matches!(b, b' '..=b'~' | b'\n')) {
        return false;
    }
    s.chars().any(|c| !is_printable(c) || is_other_break(c))
}

/// A literal block scalar as go-yaml writes it, from the `|` on (the caller has written the
/// key or `- `), ending with a line break. `ind` is the block's content indentation.
///
/// The header carries an indentation indicator (`2`, go-yaml's `best_indent`) when the text
/// starts with a space or a break, and the chomping indicator: `-` without a final break, `+`
/// when the text is one break or ends with two, none (clip) for one. The body is the text
/// itself: each non-empty line indented, its breaks as they are, so a kept (`+`) block's
/// trailing empty lines are its own; a text without a final break gets one.
pub fn write_literal(out: &mut String, s: &str, ind: usize) {
    out.push('|');
    if s.starts_with([' ', '\n']) {
        out.push('2');
    }
    let trailing = s.len() - s.trim_end_matches('\n').len();
    match trailing {
        0 => out.push('-'),
        1 if s.len() > 1 => {}
        _ => out.push('+'),
    }
    out.push('\n');
    let mut line_start = true;
    for line in s.split_inclusive('\n') {
        let text = line.strip_suffix('\n').unwrap_or(line);
        if !text.is_empty() {
            if line_start {
                pad(out, ind);
            }
            out.push_str(text);
        }
        line_start = line.ends_with('\n');
        if line_start {
            out.push('\n');
        }
    }
    if trailing == 0 {
        out.push('\n');
    }
}

/// `n` spaces, in whole runs (not a push and capacity check per space).
pub fn pad(out: &mut String, n: usize) {
    const SPACES: &str = "                                ";
    let mut n = n;
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// A double-quoted scalar with go-yaml's escapes: the short ones (`\0 \a \b \t \n \v \f \r
/// \e \" \\ \N \L \P`), then `\xXX`, `\uXXXX` or `\UXXXXXXXX` by the code point's size, in
/// upper-case hex, for every character that is not printable, a break or the byte order mark.
/// go-yaml's `is_bom(value, i)` looks at the text's first bytes whatever `i` is, so after a
/// leading byte order mark every character is escaped (`"\uFEFF\x78"`), and so here.
pub fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let bom = s.starts_with('\u{feff}');
    for c in s.chars() {
        if !bom && is_printable(c) && c != '\n' && c != '"' && c != '\\' && !is_other_break(c) {
            out.push(c);
            continue;
        }
        out.push('\\');
        match c {
            '\0' => out.push('0'),
            '\u{7}' => out.push('a'),
            '\u{8}' => out.push('b'),
            '\t' => out.push('t'),
            '\n' => out.push('n'),
            '\u{b}' => out.push('v'),
            '\u{c}' => out.push('f'),
            '\r' => out.push('r'),
            '\u{1b}' => out.push('e'),
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '\u{85}' => out.push('N'),
            '\u{2028}' => out.push('L'),
            '\u{2029}' => out.push('P'),
            c if (c as u32) <= 0xFF => {
                let _ = write!(out, "x{:02X}", c as u32);
            }
            c if (c as u32) <= 0xFFFF => {
                let _ = write!(out, "u{:04X}", c as u32);
            }
            c => {
                let _ = write!(out, "U{:08X}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Whether go-yaml v2's `resolve("", s)` gives `!!str`, i.e. the string read back as a plain
/// scalar would be the same string. The first byte is the hint (`resolveTable`): only a sign,
/// a digit, `.` or one of `yYnNtTfFoO~` (and the empty string) can start anything else, so
/// `<<`, whose `<` has no hint, is a string here although the table lists it as the merge key.
pub fn resolves_to_str(s: &str) -> bool {
    let Some(&first) = s.as_bytes().first() else {
        return false; // null
    };
    match first {
        b'+'
        | b'-'
        | b'0'..=b'9'
        | b'.'
        | b'y'
        | b'Y'
        | b'n'
        | b'N'
        | b't'
        | b'T'
        | b'f'
        | b'F'
        | b'o'
        | b'O'
        | b'~' => {}
        _ => return true,
    }
    if matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "true"
            | "True"
            | "TRUE"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "false"
            | "False"
            | "FALSE"
            | "off"
            | "Off"
            | "OFF"
            | "~"
            | "null"
            | "Null"
            | "NULL"
            | ".nan"
            | ".NaN"
            | ".NAN"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
    ) {
        return false;
    }
    match first {
        // `strconv.ParseFloat(in, 64)`; an out-of-range float (Go's ErrRange) stays a string.
        b'.' => super::scalar::go_parse_float(s).is_none(),
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            // `ParseInt(plain, 0, 64)`, `ParseUint` (the `0b` retries are the same prefixes).
            if super::scalar::go_parse_int(&plain).is_some() {
                return false;
            }
            !(super::scalar::is_yaml_float(&plain)
                && super::scalar::go_parse_float(&plain).is_some())
        }
        _ => true,
    }
}

/// go-yaml v2's `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
/// (`1:20`), which it double-quotes because YAML 1.1 readers take it as a number.
pub fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) && i - start < 2 {
            i += 1;
        }
        let ok = match &b[start..i] {
            [d] => d.is_ascii_digit(),
            [t, _] => (b'0'..=b'5').contains(t),
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml v2's `parseTimestamp`: `2006-1-2`, optionally with `T15:4:5[.9…][Z|±07:00]` or
/// ` 15:4:5[.9…]` (Go's `time.Parse` with those layouts). Such strings resolve to
/// `!!timestamp`, so go-yaml double-quotes them.
pub fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    // Go's getnum: one or two digits for the short fields.
    let num = |i: &mut usize, max_len: usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max_len {
            *i += 1;
        }
        (*i > start).then(|| s[start..*i].parse().unwrap_or(0))
    };
    let expect = |i: &mut usize, c: u8| -> bool {
        let ok = b.get(*i) == Some(&c);
        *i += usize::from(ok);
        ok
    };
    if b.iter().take_while(|c| c.is_ascii_digit()).count() != 4 {
        return false;
    }
    let year: u32 = s[..4].parse().unwrap_or(0);
    let mut i = 4;
    if !expect(&mut i, b'-') {
        return false;
    }
    let Some(month) = num(&mut i, 2) else {
        return false;
    };
    if !expect(&mut i, b'-') {
        return false;
    }
    let Some(day) = num(&mut i, 2) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zoned = match b[i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    i += 1;
    let (Some(h), true, Some(m), true, Some(sec)) = (
        num(&mut i, 2),
        expect(&mut i, b':'),
        num(&mut i, 2),
        expect(&mut i, b':'),
        num(&mut i, 2),
    ) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if !zoned {
        return i == b.len();
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let z = &b[i + 1..];
            z.len() == 5
                && z[0].is_ascii_digit()
                && z[1].is_ascii_digit()
                && z[2] == b':'
                && z[3].is_ascii_digit()
                && z[4].is_ascii_digit()
        }
        _ => false,
    }
}

/// The style go-yaml v2 writes a string in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// YAML's indicator characters (`c-indicator`): a plain scalar starts with none of them,
/// except `-`, `?` and `:` followed by a non-space.
pub fn indicator(c: u8) -> bool {
    matches!(
        c,
        b'-' | b'?'
            | b':'
            | b','
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    )
}

/// What `yaml_emitter_analyze_scalar` allows for a non-empty one-line or multi-line string
/// in block context: (`block_plain_allowed`, `single_quoted_allowed`).
fn analyze(s: &str) -> (bool, bool) {
    let b = s.as_bytes();
    // A word of printable ASCII without a space (a name, a label, an image, a path: nearly
    // every string printed) has no break, blank or special character: only its first and
    // last characters can be indicators. Decided without the walk below, which was a
    // twentieth of a 10,000-component render's samples.
    if let (Some(&first), Some(&last)) = (b.first(), b.last())
        && b.iter().all(|c| matches!(c, b'!'..=b'~'))
    {
        let marked = (indicator(first) && !matches!(first, b'?' | b':' | b'-'))
            || b.len() == 1 && matches!(first, b'?' | b':' | b'-')
            || last == b':'
            || s.starts_with("---")
            || s.starts_with("...");
        return (!marked, true);
    }
    walk(s)
}

/// [`analyze`] character by character, as `yaml_emitter_analyze_scalar` reads.
fn walk(s: &str) -> (bool, bool) {
    let b = s.as_bytes();
    let blank = |i: usize| matches!(b.get(i), Some(b' ' | b'\t'));
    // `---` and `...` at the start are document markers.
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let mut special = false;
    let (mut leading, mut trailing, mut break_space, mut space_break) =
        (false, false, false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    let mut preceded_by_whitespace = true;
    // Every string printed passes here: the characters are read in place, not collected
    // (a `Vec` per string was 17 % of the Kargo and Argo CD emit's samples).
    for (i, c) in s.char_indices() {
        let w = c.len_utf8();
        let followed_by_whitespace = i + w >= b.len() || blank(i + w);
        let last = i + w == b.len();
        if i == 0 {
            match c {
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                '?' | ':' | '-' => {}
                c if c.is_ascii() && indicator(c as u8) => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            leading |= i == 0;
            trailing |= last;
            break_space |= prev_break;
            (prev_space, prev_break) = (true, false);
        } else if c == '\n' || is_other_break(c) {
            leading |= i == 0;
            trailing |= last;
            space_break |= prev_space;
            (prev_space, prev_break) = (false, true);
        } else {
            (prev_space, prev_break) = (false, false);
        }
        // `is_blankz`: a blank, a break or NUL.
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\n' | '\0') || is_other_break(c);
    }
    let multiline = s.contains(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}']);
    let plain = !(leading
        || trailing
        || break_space
        || space_break
        || special
        || multiline
        || block_indicators);
    let single = !(break_space || space_break || special);
    (plain, single)
}

/// The style go-yaml v2's encoder and emitter give a string value in block context, or a
/// mapping key (`simple_key`): `stringv` asks for a literal block when the string holds `\n`,
/// plain when it [`resolves_to_str`] and is no base-60 float, double quotes otherwise; the
/// emitter then falls back from plain to single quotes and from single to double quotes, and
/// from a block to double quotes (`yaml_emitter_select_scalar_style`). A key is never a block.
pub fn string_style(s: &str, simple_key: bool) -> Style {
    // Nearly every string is printable ASCII without indicators: decided without the
    // character walk.
    if s.contains('\n') {
        return if !simple_key && literal_allowed(s) {
            Style::Literal
        } else {
            Style::DoubleQuoted
        };
    }
    if !resolves_to_str(s) || is_base60_float(s) {
        return Style::DoubleQuoted;
    }
    match analyze(s) {
        (true, _) => Style::Plain,
        (false, true) => Style::SingleQuoted,
        (false, false) => Style::DoubleQuoted,
    }
}

/// A string as go-yaml v2 writes it after `key: ` or `- ` (`simple_key: false`, `ind` the
/// block indentation of the value: a literal block's content, a folded line's continuation)
/// or as a mapping key (`simple_key: true`; never folded). A literal block ends with its
/// line break; every other style does not.
pub fn write_string(out: &mut String, s: &str, ind: usize, simple_key: bool) {
    match string_style(s, simple_key) {
        Style::Literal => write_literal(out, s, ind),
        style if simple_key => out.push_str(&scalar_text(s, style)),
        style => push_folded(out, &scalar_text(s, style), ind),
    }
}

/// A one-line scalar's text in `style`: the string itself (plain), in single quotes (`'`
/// doubled) or double-quoted with go-yaml's escapes. A literal block has no one-line text:
/// asked for one, it is double-quoted.
pub fn scalar_text(s: &str, style: Style) -> std::borrow::Cow<'_, str> {
    match style {
        Style::Plain => std::borrow::Cow::Borrowed(s),
        Style::SingleQuoted => format!("'{}'", s.replace('\'', "''")).into(),
        Style::DoubleQuoted | Style::Literal => double_quoted(s).into(),
    }
}

/// go-yaml v2's line width (`best_width`).
pub const BEST_WIDTH: usize = 80;

/// A plain or quoted scalar's text (`text`, quotes and escapes included), folded as go-yaml
/// v2 folds it (`yaml_emitter_write_plain_scalar` and the quoted writers): at a space past
/// column 80, not after another space, the line breaks and goes on at the scalar's
/// indentation `ind`. A plain or single-quoted scalar folds only where no space follows (a
/// reader would merge the run); a double-quoted one keeps a following space as `\ `; a quoted
/// scalar never folds at its first or last character. The column is counted in characters
/// from the start of `out`'s last line, as the emitter counts it.
pub fn push_folded(out: &mut String, text: &str, ind: usize) {
    let line_start = out.rfind('\n').map_or(0, |i| i + 1);
    // Bytes bound characters from above: most scalars are too short to fold at all.
    if out.len() - line_start + text.len() <= BEST_WIDTH || !text.contains(' ') {
        out.push_str(text);
        return;
    }
    let mut col = out[line_start..].chars().count();
    let style = text.as_bytes()[0];
    let quoted = matches!(style, b'\'' | b'"');
    let chars: Vec<char> = text.chars().collect();
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c != ' ' {
            out.push(c);
            col += 1;
            spaces = false;
            continue;
        }
        let next_space = chars.get(i + 1) == Some(&' ');
        let inside = !quoted || (i > 1 && i + 2 < chars.len());
        if !spaces && col > BEST_WIDTH && inside && (style == b'"' || !next_space) {
            out.push('\n');
            pad(out, ind);
            col = ind;
            if next_space {
                out.push('\\');
                col += 1;
            }
        } else {
            out.push(' ');
            col += 1;
        }
        spaces = true;
    }
}

/// go-yaml v2's key order (`sorter.go` `keyList.Less`), not byte order: letters sort after
/// non-letters at the first differing rune (`GIT_PUSH` before `GITCLIENT`), and digit runs
/// compare as numbers (`a2` before `a10`).
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if key_less(a, b) {
        Ordering::Less
    } else if key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// `keyList.Less` for two string keys.
pub fn key_less(a: &str, b: &str) -> bool {
    // An ASCII key's bytes are its runes: compared in place. Collecting both keys' chars
    // into vectors for every comparison was most of the sort of a map's keys.
    if a.is_ascii() && b.is_ascii() {
        runes_less(a.as_bytes(), b.as_bytes(), |c: u8| c.is_ascii_alphabetic())
    } else {
        let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        runes_less(&ar, &br, char::is_alphabetic)
    }
}

/// `keyList.Less` over runes (`u8` for ASCII keys, `char` otherwise).
fn runes_less<T: Copy + Ord + Into<u32>>(
    ar: &[T],
    br: &[T],
    alphabetic: impl Fn(T) -> bool,
) -> bool {
    // Go's unicode.IsDigit is Unicode Nd; ASCII digits are what keys hold in practice.
    let digit = |c: T| (u32::from(b'0')..=u32::from(b'9')).contains(&c.into());
    let value = |c: T| i64::from(c.into()) - i64::from(b'0');
    let zero = |c: T| c.into() == u32::from(b'0');
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (alphabetic(ar[i]), alphabetic(br[i]));
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if zero(ar[i]) || zero(br[i]) {
            // A run with a non-zero digit before it: leading zeros count as significant.
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if !zero(ar[j]) {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(value(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(value(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_word_is_analyzed_as_the_walk_analyzes_it() {
        // Every string of up to three characters from indicators, letters, digits and a
        // space, and some longer ones: the shortcut for words agrees with the walk.
        let alphabet: Vec<char> = "#,[]{}&*!|>'\"%@`?:-.~a0 /=".chars().collect();
        let mut words: Vec<String> = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = words
                .iter()
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .collect();
            words.extend(longer);
        }
        words.extend(
            [
                "---x",
                "...x",
                "--x",
                "..x",
                "a:b",
                "a:",
                "http://x",
                "x#y",
                "image:1.2@sha256:ab",
            ]
            .map(String::from),
        );
        for w in words.iter().filter(|w| !w.is_empty()) {
            assert_eq!(super::analyze(w), super::walk(w), "{w:?}");
        }
    }

    use super::*;

    fn literal(s: &str, ind: usize) -> String {
        let mut out = String::new();
        write_literal(&mut out, s, ind);
        out
    }

    #[test]
    fn literal_headers_follow_go_yaml_hints() {
        assert_eq!(literal("x\ny", 2), "|-\n  x\n  y\n");
        assert_eq!(literal("x\n", 2), "|\n  x\n");
        assert_eq!(literal("x\n\n", 2), "|+\n  x\n\n");
        assert_eq!(literal("\n", 2), "|2+\n\n");
        assert_eq!(literal("\n\n", 2), "|2+\n\n\n");
        assert_eq!(literal(" x\ny", 4), "|2-\n     x\n    y\n");
        assert_eq!(literal("a\n\nb\n", 2), "|\n  a\n\n  b\n");
    }

    #[test]
    fn blocks_refuse_what_go_yaml_refuses() {
        assert!(literal_allowed("x\ny"));
        assert!(literal_allowed(" x\ny"));
        assert!(literal_allowed("\nx"));
        assert!(!literal_allowed("x \ny"));
        assert!(!literal_allowed("x\ny "));
        assert!(!literal_allowed("x\ty\nz"));
        assert!(!literal_allowed("😀\nb"));
        assert!(!literal_allowed("x\r\ny"));
        assert!(literal_allowed("é\nb"));
    }

    #[test]
    fn double_quotes_escape_as_go_yaml_does() {
        assert_eq!(double_quoted("x\u{1}"), r#""x\x01""#);
        assert_eq!(double_quoted("😀"), r#""\U0001F600""#);
        assert_eq!(double_quoted("\u{feff}x y"), r#""\uFEFF\x78\x20\x79""#);
        assert_eq!(double_quoted("x\u{feff}"), r#""x\uFEFF""#);
        assert_eq!(
            double_quoted("a\"\\\t\n\r\u{85}\u{2028}"),
            r#""a\"\\\t\n\r\N\L""#
        );
        assert_eq!(double_quoted("\u{7f}\u{a0}é"), "\"\\x7F\u{a0}é\"");
    }

    /// The in-place ASCII comparison orders every pair of keys as the rune vectors did.
    #[test]
    fn ascii_keys_order_as_their_runes_do() {
        let alphabet = [
            "", "a", "b", "Z", "_", "-", ".", "0", "1", "2", "9", "00", "10", "a0",
        ];
        let mut keys = Vec::new();
        for x in alphabet {
            for y in alphabet {
                for z in ["", "0", "7", "x", "09", "_"] {
                    keys.push(format!("{x}{y}{z}"));
                }
            }
        }
        for a in &keys {
            for b in &keys {
                let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                assert_eq!(
                    key_less(a, b),
                    runes_less(&ar, &br, char::is_alphabetic),
                    "{a:?} < {b:?}"
                );
            }
        }
        assert!(key_less("a2", "a10") && key_less("GIT_PUSH", "GITCLIENT"));
        assert!(key_less("é1", "é2") && !key_less("éb", "éa"));
    }

    /// go-yaml v2's styles for the strings that read as something else, or nearly (kubectl
    /// kustomize v5.5.0 printed each, case y13): `.`, `=` and `<<` are plain (`<` has no
    /// resolve hint), `...` is single-quoted (a document marker), `1e999` plain (out of range).
    #[test]
    fn styles_follow_go_yaml_v2() {
        use Style::*;
        for (s, style) in [
            (".", Plain),
            ("=", Plain),
            ("<<", Plain),
            ("...", SingleQuoted),
            ("...x", SingleQuoted),
            ("..", Plain),
            (".5", DoubleQuoted),
            ("1e999", Plain),
            ("0b102", Plain),
            ("0999", DoubleQuoted),
            ("1_000", DoubleQuoted),
            ("tRue", Plain),
            ("Yes", DoubleQuoted),
            ("12:30:45", DoubleQuoted),
            ("2024-01-02", DoubleQuoted),
            ("a #b", SingleQuoted),
            ("a#b", Plain),
            ("?x", Plain),
            ("-", SingleQuoted),
            ("+", Plain),
            ("a\tb", DoubleQuoted),
            ("a:", SingleQuoted),
            ("", DoubleQuoted),
        ] {
            assert_eq!(string_style(s, false), style, "{s:?}");
        }
    }

    #[test]
    fn long_scalars_fold_past_column_80() {
        let mut out = String::from("  description: ");
        write_string(&mut out, "word ".repeat(20).trim_end(), 4, false);
        assert_eq!(
            out,
            format!(
                "  description: {}\n    {}",
                "word ".repeat(14).trim_end(),
                "word ".repeat(6).trim_end()
            )
        );
        let mut out = String::from("k: ");
        write_string(&mut out, &format!("{}  b\t", "a".repeat(80)), 2, false);
        assert_eq!(out, format!("k: \"{}\n  \\ b\\t\"", "a".repeat(80)));
    }
}
