//! Finds the source position of a JSON Pointer in a block-style YAML stream, so a finding can
//! point at a line. Handles what Kubernetes manifests use: block mappings and sequences
//! (including sequences at their parent key's indentation), quoted keys, comments and `---`
//! separators; a node inside flow style (`{a: 1}`) resolves to its nearest block ancestor.
//!
//! Invariant: a position is only ever an approximation toward the root: when a segment
//! cannot be found, the deepest node found so far is returned, never a wrong sibling.

/// A node's position: 1-based line and column, byte offset and length of the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
    pub len: usize,
}

struct Line<'a> {
    /// Byte offset of the line start in the text.
    start: usize,
    text: &'a str,
}

impl Line<'_> {
    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start_matches(' ').len()
    }
    /// Blank lines and comment-only lines carry no node.
    fn is_content(&self) -> bool {
        let t = self.text.trim_start();
        !t.is_empty() && !t.starts_with('#')
    }
}

/// Where a node's content starts: line index and column; its block extends to `end`
/// (exclusive line index).
#[derive(Clone, Copy)]
struct Region {
    line: usize,
    col: usize,
    end: usize,
}

/// Position of the node at `pointer` (RFC 6901) in document `doc` (0-based, counting only
/// non-empty documents) of `text`; the key token when `at_key` and the last segment is a
/// mapping key, else the value's first token.
pub fn locate(text: &str, doc: usize, pointer: &str, at_key: bool) -> Option<Position> {
    let lines = split_lines(text);
    let (first, end) = document_bounds(&lines, doc)?;
    let start = (first..end).find(|&i| lines[i].is_content())?;
    let root = Region {
        line: start,
        col: lines[start].indent(),
        end,
    };
    let segments: Vec<String> = if pointer.is_empty() {
        Vec::new()
    } else {
        pointer
            .trim_start_matches('/')
            .split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect()
    };
    let mut region = root;
    let mut best = token_at(&lines, root.line, root.col);
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        let next = if let Ok(index) = seg.parse::<usize>()
            && let Some(item) = find_item(&lines, region, index)
        {
            Some((item, None))
        } else {
            find_key(&lines, region, seg).map(|(key, value)| (value, Some(key)))
        };
        let Some((value, key)) = next else { break };
        best = match (last && at_key, key) {
            (true, Some((line, col, len))) => Some(position(&lines, line, col, len)),
            _ => token_at(&lines, value.line, value.col).or(best),
        };
        region = value;
    }
    best
}

fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    for raw in text.split_inclusive('\n') {
        let body = raw.trim_end_matches('\n').trim_end_matches('\r');
        out.push(Line { start, text: body });
        start += raw.len();
    }
    out
}

/// Line range of the `doc`-th non-empty document.
fn document_bounds(lines: &[Line<'_>], doc: usize) -> Option<(usize, usize)> {
    let mut bounds = Vec::new();
    let mut begin = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.text == "---" || l.text.starts_with("--- ") || l.text == "..." {
            bounds.push((begin, i));
            begin = i + 1;
        }
    }
    bounds.push((begin, lines.len()));
    bounds
        .into_iter()
        .filter(|&(a, b)| (a..b).any(|i| lines[i].is_content()))
        .nth(doc)
}

fn position(lines: &[Line<'_>], line: usize, col: usize, len: usize) -> Position {
    Position {
        line: line + 1,
        column: col + 1,
        offset: lines[line].start + col,
        len: len.max(1),
    }
}

/// The token starting at (line, col): up to the end of the line, or of a `key:` key.
fn token_at(lines: &[Line<'_>], line: usize, col: usize) -> Option<Position> {
    let text = lines.get(line)?.text;
    let rest = text.get(col..)?;
    let rest = rest.split(" #").next().unwrap_or(rest).trim_end();
    let len = match split_key(rest) {
        Some((_, key_len, _)) => key_len,
        None => rest.len(),
    };
    Some(position(lines, line, col, len))
}

/// Content lines at the region's base column, each starting an entry: the first at
/// (line, col), the others at the same indentation.
fn entries(lines: &[Line<'_>], region: Region) -> Vec<(usize, usize)> {
    let mut out = vec![(region.line, region.col)];
    for (i, l) in lines.iter().enumerate().take(region.end).skip(region.line + 1) {
        if !l.is_content() {
            continue;
        }
        let ind = l.indent();
        if ind < region.col {
            break;
        }
        if ind == region.col {
            out.push((i, ind));
        }
    }
    out
}

/// End (exclusive) of the block that starts with an entry at (line, col): the next content
/// line at or left of `col`. With `same_indent_seq`, `- ` lines at `col` still belong to it
/// (a sequence written at its key's indentation).
fn block_end(
    lines: &[Line<'_>],
    line: usize,
    col: usize,
    end: usize,
    same_indent_seq: bool,
) -> usize {
    for (i, l) in lines.iter().enumerate().take(end).skip(line + 1) {
        if !l.is_content() {
            continue;
        }
        let ind = l.indent();
        if ind < col {
            return i;
        }
        if ind == col {
            let t = &l.text[ind..];
            if !(same_indent_seq && (t == "-" || t.starts_with("- "))) {
                return i;
            }
        }
    }
    end
}

/// Splits `key: value` (key possibly quoted): returns (key, key length in bytes, offset of
/// the value after `:` and spaces), or `None` when the text is not a mapping entry.
fn split_key(text: &str) -> Option<(String, usize, usize)> {
    let (key, key_len) = if let Some(q) = text.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let close = text[1..].find(q)? + 1;
        (text[1..close].to_string(), close + 1)
    } else {
        let mut idx = None;
        for (i, c) in text.char_indices() {
            if c == ':' && text[i + 1..].chars().next().is_none_or(|n| n == ' ') {
                idx = Some(i);
                break;
            }
            if c == '#' && i > 0 && text.as_bytes()[i - 1] == b' ' {
                return None;
            }
        }
        let i = idx?;
        (text[..i].trim_end().to_string(), i)
    };
    let after = text.get(key_len..)?;
    let after = after.trim_start();
    let after = after.strip_prefix(':')?;
    let value_off = text.len() - after.trim_start().len();
    Some((key, key_len, value_off))
}

/// Finds `key` among the mapping entries of `region`: returns the key token (line, col, len)
/// and the value's region.
fn find_key(
    lines: &[Line<'_>],
    region: Region,
    key: &str,
) -> Option<((usize, usize, usize), Region)> {
    for (line, col) in entries(lines, region) {
        let text = &lines[line].text[col..];
        let Some((k, key_len, value_off)) = split_key(text) else {
            continue;
        };
        if k != key {
            continue;
        }
        let value_text = text[value_off..]
            .split(" #")
            .next()
            .unwrap_or("")
            .trim_end();
        let end = block_end(lines, line, col, region.end, true);
        let inline = !value_text.is_empty()
            && !value_text.starts_with('#')
            && !value_text.starts_with(['|', '>', '&']);
        let value = if inline {
            Region {
                line,
                col: col + value_off,
                end,
            }
        } else {
            match (line + 1..end).find(|&i| lines[i].is_content()) {
                Some(child) => Region {
                    line: child,
                    col: lines[child].indent(),
                    end,
                },
                None => Region {
                    line,
                    col: col + value_off.min(text.len()),
                    end,
                },
            }
        };
        return Some(((line, col, key_len), value));
    }
    None
}

/// Finds the `index`-th item of the sequence in `region`.
fn find_item(lines: &[Line<'_>], region: Region, index: usize) -> Option<Region> {
    let items: Vec<(usize, usize)> = entries(lines, region)
        .into_iter()
        .filter(|&(l, c)| {
            let t = &lines[l].text[c..];
            t == "-" || t.starts_with("- ")
        })
        .collect();
    let &(line, col) = items.get(index)?;
    let end = items.get(index + 1).map(|&(l, _)| l).unwrap_or(region.end);
    let t = &lines[line].text[col..];
    let after = t[1..].trim_start();
    if after.is_empty() {
        let child = (line + 1..end).find(|&i| lines[i].is_content())?;
        Some(Region {
            line: child,
            col: lines[child].indent(),
            end,
        })
    } else {
        Some(Region {
            line,
            col: col + (t.len() - after.len()),
            end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAGE: &str = "# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: dev\n  namespace: shop\nspec:\n  requestedFreight:\n  - origin:\n      kind: Warehouse\n      name: shop\n    sources:\n      direct: true\n  - fromFreight: true  # removed\n    \"origin\": {kind: Warehouse, name: x}\n";

    #[test]
    fn finds_keys_and_items_in_the_right_document() {
        let p = locate(STAGE, 1, "/spec/requestedFreight/1/fromFreight", true).unwrap();
        assert_eq!((p.line, p.column), (20, 5));
        assert_eq!(&STAGE[p.offset..p.offset + p.len], "fromFreight");
        let v = locate(STAGE, 1, "/spec/requestedFreight/0/origin/name", false).unwrap();
        assert_eq!(&STAGE[v.offset..v.offset + v.len], "shop");
        assert_eq!(v.line, 17);
        let first = locate(STAGE, 0, "/metadata/name", false).unwrap();
        assert_eq!(first.line, 6);
    }

    #[test]
    fn quoted_keys_and_flow_values_resolve_to_the_nearest_node() {
        let q = locate(STAGE, 1, "/spec/requestedFreight/1/origin/name", false).unwrap();
        // `name` sits inside a flow mapping: the position is the `origin` value.
        assert_eq!(q.line, 21);
        assert!(STAGE[q.offset..].starts_with("{kind"));
        let k = locate(STAGE, 1, "/spec/requestedFreight/1/origin", true).unwrap();
        assert_eq!(&STAGE[k.offset..k.offset + k.len], "\"origin\"");
    }

    #[test]
    fn sequences_at_the_key_indentation_and_nested_items() {
        let text = "spec:\n  steps:\n  - uses: git-clone\n    config:\n      checkout:\n      - branch: main\n        path: ./out\n  - uses: git-push\n";
        let p = locate(text, 0, "/spec/steps/0/config/checkout/0/path", false).unwrap();
        assert_eq!((p.line, &text[p.offset..p.offset + p.len]), (7, "./out"));
        let u = locate(text, 0, "/spec/steps/1/uses", false).unwrap();
        assert_eq!(u.line, 8);
        assert!(locate(text, 1, "/spec", false).is_none());
    }
}
