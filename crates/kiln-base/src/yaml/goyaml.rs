//! go-yaml's scalar rules, shared by both of kiln's writers: kubectl kustomize's output
//! (kyaml over go-yaml v3) and Helm's `toYaml` (sigs.k8s.io/yaml over go-yaml v2). The two
//! versions' emitters agree on all of this (`emitterc.go`: `yaml_emitter_analyze_scalar`,
//! `yaml_emitter_select_scalar_style`, `yaml_emitter_write_block_scalar_hints`,
//! `yaml_emitter_write_literal_scalar`, `yaml_emitter_write_double_quoted_scalar`; `yamlh.go`:
//! `is_printable`), so a string's style and bytes are decided here once.

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

#[cfg(test)]
mod tests {
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
}
