//! go-yaml v2's wording of a read error, for what Helm's `fromYaml` puts into `.Error`
//! (`sigs.k8s.io/yaml` converts YAML to JSON through its copy of gopkg.in/yaml.v2 and prints
//! `error converting YAML to JSON: ` before go-yaml's text).
//!
//! Mirrors gopkg.in/yaml.v2: the problems of `scannerc.go` and `parserc.go` for the syntax
//! errors charts commonly make, and the line `decode.go`'s `parser.fail` prints. That line is
//! the problem mark's, one-based for a scanner error but the zero-based value for a parser
//! error (go-yaml adds one only for scanner errors), and none at all when it is 0, so an error
//! on the first line carries no line. The granit scanner (kiln's reader) follows libyaml too,
//! but words its errors its own way and marks some elsewhere; each case maps its kind and
//! mark to go-yaml's.

use granit_parser::{ErrorKind, ScanError};

/// `yaml: [line N: ]problem` as go-yaml v2 prints the read error `e` of `text`; `None` for
/// the kinds not mapped here.
pub(crate) fn go_yaml_text(text: &str, e: &ScanError) -> Option<String> {
    // granit's lines are one-based.
    let line0 = e.marker().line().saturating_sub(1);
    let offset = byte_offset(text, e.marker().index());
    let (problem, line) = match e.kind() {
        ErrorKind::MappingValueNotAllowed => (
            "mapping values are not allowed in this context".to_string(),
            Line::Scanner(line0),
        ),
        ErrorKind::UnexpectedCharacter { .. } => (
            "found character that cannot start any token".to_string(),
            Line::Scanner(line0),
        ),
        // go-yaml finds a required key without its ':' stale once the scan leaves the key's
        // line (`yaml_parser_stale_simple_keys`, or the new line forced at the end of the
        // stream), and marks where the scan is: the next line.
        ErrorKind::SimpleKeyExpected => (
            "could not find expected ':'".to_string(),
            Line::Scanner(line0 + 1),
        ),
        // granit marks the opening quote; go-yaml scans on to the end of the stream, or to a
        // document indicator at the start of a line (`yaml_parser_scan_flow_scalar`).
        ErrorKind::UnclosedQuotedScalar | ErrorKind::DocumentIndicatorInQuotedScalar => {
            match document_indicator(text, offset) {
                Some(at) => (
                    "found unexpected document indicator".to_string(),
                    Line::Scanner(lines_before(text, at)),
                ),
                None => (
                    "found unexpected end of stream".to_string(),
                    Line::Scanner(lines_before(text, text.len())),
                ),
            }
        }
        // granit marks the plain scalar; go-yaml the tab in a continuation line's indent.
        ErrorKind::TabInPlainScalar => (
            "found a tab character that violates indentation".to_string(),
            Line::Scanner(lines_before(text, indent_tab(text, offset))),
        ),
        ErrorKind::ExpectedBlockMappingKey => {
            ("did not find expected key".to_string(), Line::Parser(line0))
        }
        ErrorKind::ExpectedBlockSequenceEntry => (
            "did not find expected '-' indicator".to_string(),
            Line::Parser(line0),
        ),
        // An unclosed flow collection meets the end of the stream, whose token is on a line
        // of its own (`yaml_parser_fetch_stream_end` forces a new line).
        ErrorKind::UnclosedFlowCollection { open } => {
            let close = if *open == '[' { ']' } else { '}' };
            let end = lines_before(text, text.len())
                + usize::from(!text.is_empty() && !text.ends_with(['\n', '\r']));
            (
                format!("did not find expected ',' or '{close}'"),
                Line::Parser(end),
            )
        }
        // `decode.go`'s `parser.alias`: no line.
        ErrorKind::UnknownAnchor => {
            let name: String = text[offset..]
                .trim_start_matches('*')
                .chars()
                .take_while(|c| !c.is_whitespace() && !",[]{}".contains(*c))
                .collect();
            return Some(format!("yaml: unknown anchor '{name}' referenced"));
        }
        _ => return None,
    };
    let n = match line {
        Line::Scanner(0) | Line::Parser(0) => return Some(format!("yaml: {problem}")),
        Line::Scanner(l) => l + 1,
        Line::Parser(l) => l,
    };
    Some(format!("yaml: line {n}: {problem}"))
}

/// A problem mark's zero-based line, by the kind of error go-yaml prints it for.
enum Line {
    Scanner(usize),
    Parser(usize),
}

/// The byte offset of the `chars`-th character of `text`.
fn byte_offset(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// The line breaks before byte `at` (go-yaml's zero-based line there; `\r\n` is one break).
fn lines_before(text: &str, at: usize) -> usize {
    let t = &text.as_bytes()[..at];
    t.iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'\n' || (b == b'\r' && t.get(i + 1) != Some(&b'\n')))
        .count()
}

/// Where the first tab in the indentation of a line after byte `from` is (the end if none).
fn indent_tab(text: &str, from: usize) -> usize {
    let mut at = from;
    while let Some(nl) = text[at..].find('\n') {
        at += nl + 1;
        let indent = text[at..].len() - text[at..].trim_start_matches([' ', '\t']).len();
        if let Some(tab) = text[at..at + indent].find('\t') {
            return at + tab;
        }
    }
    text.len()
}

/// Where the first `---` or `...` that starts a line after byte `from` begins, followed by
/// a blank or the end.
fn document_indicator(text: &str, from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(nl) = text[at..].find('\n') {
        at += nl + 1;
        let rest = &text[at..];
        if (rest.starts_with("---") || rest.starts_with("..."))
            && rest[3..].chars().next().is_none_or(char::is_whitespace)
        {
            return Some(at);
        }
    }
    None
}
