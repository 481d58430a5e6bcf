//! The head of a rendered manifest (its `kind` and `metadata.annotations["helm.sh/hook"]`)
//! read by one line-by-line pass, without building the document.
//!
//! Helm's `SortManifests` (`pkg/release/v1/util/manifest_sorter.go`) unmarshals every
//! rendered document into a `SimpleHead` only to sort it; `helm template` then prints the
//! document's text as rendered. Building the whole value tree (and dropping it) was most of
//! a `kiln helm template` of charts with large manifests (argo-cd's CRD templates), so
//! [`scan`] reads the head in one pass over the text.
//!
//! The pass must not accept what Helm rejects (a YAML error fails the render, with go-yaml's
//! message), so it recognises a conservative subset of block YAML and answers `None` for
//! anything outside it: tabs outside block scalars, multi-line plain or quoted scalars,
//! anchors, aliases, tags, `<<` merges, complex keys, multi-line or unusual flow collections,
//! directives, document markers, keys spelled like `Kind` (Go's case-insensitive field
//! match), a top level that is not a mapping, and any indentation it cannot place. The
//! caller then parses the document in full, as before (see ADR 0010). Inside the subset the
//! structure is checked as go-yaml checks it: every line must continue an open mapping or
//! sequence at its exact indentation.

use crate::template::value::Value;

/// What sorting needs of a document: `kind` and the `helm.sh/hook` annotation, each as the
/// scalar read (`None` when absent).
#[derive(Debug, Clone)]
pub struct Head {
    pub kind: Option<Value>,
    pub hook: Option<Value>,
}

/// Where a mapping sits, for the head.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ctx {
    Top,
    Metadata,
    Annotations,
    Other,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Map,
    Seq,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    indent: usize,
    kind: Kind,
    ctx: Ctx,
}

/// After a line: what the next content line may be.
#[derive(Clone, Copy, Debug)]
enum Pending {
    /// A complete scalar: no more-indented line may follow (it would continue the scalar).
    Done,
    /// A plain scalar: lines indented more than `owner` continue it (a head field's value
    /// would change, so `slot` names it).
    Plain { owner: usize, slot: Slot },
    /// A single-quoted scalar not closed on its line: lines indented more than `owner`
    /// continue it until its closing quote.
    Single { owner: usize },
    /// `key:` or `-` with nothing after it: a nested node may follow (at a greater indent, or
    /// a sequence at the key's own indent); else the value is null.
    Value {
        owner: usize,
        in_map: bool,
        ctx: Ctx,
    },
    /// A block scalar (`|`, `>`): lines indented more than `owner` are its content.
    Block {
        owner: usize,
        content: Option<usize>,
    },
}

/// What a value slot is for (the head's fields, or nothing).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    None,
    Kind,
    Hook,
}

struct Scan {
    stack: Vec<Node>,
    pending: Pending,
    head: Head,
    seen_metadata: bool,
    seen_annotations: bool,
    /// Whether the document has a tab anywhere (else no line needs looking for one).
    has_tab: bool,
}

/// The head of one document (as `split_manifests` gives it), or `None` when the document is
/// outside the subset this pass reads (the caller parses it in full).
pub fn scan(doc: &str) -> Option<Head> {
    // YAML line breaks other than `\n`, control characters, and the BOM and non-characters
    // go-yaml refuses or treats specially: leave those to the full parser.
    if has_control_byte(doc.as_bytes()) {
        return None;
    }
    if has_special_char(doc.as_bytes()) {
        return None;
    }
    let mut s = Scan {
        stack: Vec::new(),
        pending: Pending::Done,
        head: Head {
            kind: None,
            hook: None,
        },
        seen_metadata: false,
        seen_annotations: false,
        // Once for the document: most have no tab, and a per-line search was a visible
        // part of the scan.
        has_tab: doc.as_bytes().contains(&b'\t'),
    };
    // Lines found by a plain byte loop: `split('\n')`'s searcher cost more per (short) line
    // than the bytes it skipped.
    let b = doc.as_bytes();
    let mut start = 0;
    loop {
        match b[start..].iter().position(|&c| c == b'\n') {
            Some(off) => {
                s.line(&doc[start..start + off])?;
                start += off + 1;
            }
            None => {
                s.line(&doc[start..])?;
                break;
            }
        }
    }
    if let Pending::Single { .. } = s.pending {
        // A quote never closed.
        return None;
    }
    Some(s.head)
}

/// Whether `text` holds a character go-yaml refuses or treats specially: U+0080..U+009F
/// (`C2 80`..`C2 9F`), U+2028/U+2029 (`E2 80 A8`/`A9`), U+FEFF (`EF BB BF`), U+FFFE/U+FFFF
/// (`EF BF BE`/`BF`). Read as UTF-8 bytes, a block at a time: decoding every char of a
/// non-ASCII document was most of its scan. Only a block holding a lead byte of one of
/// them is looked at byte by byte (the sequence may run into the next block).
fn has_special_char(text: &[u8]) -> bool {
    let lead = |b: u8| b == 0xc2 || b == 0xe2 || b == 0xef;
    text.chunks(64).enumerate().any(|(n, block)| {
        if !block.iter().fold(false, |any, &b| any | lead(b)) {
            return false;
        }
        let from = n * 64;
        (from..from + block.len()).any(|i| match text[i] {
            0xc2 => matches!(text.get(i + 1), Some(0x80..=0x9f)),
            0xe2 => text.get(i + 1) == Some(&0x80) && matches!(text.get(i + 2), Some(0xa8 | 0xa9)),
            0xef => matches!(
                (text.get(i + 1), text.get(i + 2)),
                (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
            ),
            _ => false,
        })
    })
}

/// Whether `bytes` hold a control byte other than `\n` and `\t` (or DEL). Checked a block
/// at a time without stopping early inside one, so the check compiles to vector compares:
/// the byte-by-byte `any` was a third of the whole scan.
fn has_control_byte(bytes: &[u8]) -> bool {
    bytes.chunks(64).any(|block| {
        block.iter().fold(false, |bad, &b| {
            bad | ((b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f)
        })
    })
}

fn indent_of(line: &str) -> usize {
    line.bytes().take_while(|b| *b == b' ').count()
}

impl Scan {
    fn line(&mut self, line: &str) -> Option<()> {
        let indent = indent_of(line);
        let rest = &line[indent..];
        if let Pending::Block { owner, content } = self.pending {
            if rest.is_empty() {
                // An empty or all-space line: content, unless it is a leading line with more
                // spaces than the content will have (go-yaml's rules there are subtle).
                if content.is_none() && indent > 0 {
                    return None;
                }
                return Some(());
            }
            match content {
                Some(c) if indent >= c => return Some(()),
                None if indent > owner => {
                    self.pending = Pending::Block {
                        owner,
                        content: Some(indent),
                    };
                    return Some(());
                }
                _ => self.pending = Pending::Done,
            }
        }
        if let Pending::Single { owner } = self.pending {
            if rest.is_empty() {
                return Some(());
            }
            if indent <= owner || (self.has_tab && rest.contains('\t')) {
                return None;
            }
            if let Some(tail) = quote_end(rest) {
                self.pending = Pending::Done;
                return tail_ok(tail);
            }
            return Some(());
        }
        if rest.is_empty() {
            return Some(());
        }
        if rest.starts_with('#') {
            // A comment ends a plain scalar: a more-indented line after it is an error.
            if let Pending::Plain { .. } = self.pending {
                self.pending = Pending::Done;
            }
            return Some(());
        }
        if self.has_tab && line.contains('\t') {
            return None;
        }
        if indent == 0 && (rest.starts_with("...") || rest.starts_with("---")) {
            return None;
        }
        let is_item = rest == "-" || rest.starts_with("- ");
        match self.pending {
            Pending::Plain { owner, slot } => {
                if indent > owner {
                    // go-yaml's plain scalar continues on lines indented past its node; it
                    // stops at `: ` (then an error) and at ` #`.
                    return (slot == Slot::None && continuation_ok(rest)).then_some(());
                }
                self.pending = Pending::Done;
            }
            Pending::Value { owner, in_map, ctx } => {
                self.pending = Pending::Done;
                if indent > owner && rest.starts_with(['{', '[']) {
                    // A flow collection as the value, on the next line (`resources:\n  {}`).
                    if ctx != Ctx::Other && rest != "{}" && rest != "[]" {
                        return None;
                    }
                    let tail = flow(rest.as_bytes(), 0, 0)?;
                    return tail_ok(&rest[tail..]);
                }
                if indent > owner {
                    let kind = if is_item { Kind::Seq } else { Kind::Map };
                    self.stack.push(Node { indent, kind, ctx });
                } else if indent == owner && in_map && is_item {
                    // A sequence at its key's indent (`key:\n- a`).
                    self.stack.push(Node {
                        indent,
                        kind: Kind::Seq,
                        ctx: Ctx::Other,
                    });
                }
            }
            Pending::Done => {
                if let Some(top) = self.stack.last()
                    && indent > top.indent
                {
                    // More indented than the open node: a scalar's continuation, or an error.
                    return None;
                }
            }
            Pending::Block { .. } | Pending::Single { .. } => {}
        }
        if self.stack.is_empty() {
            if indent != 0 || is_item {
                return None;
            }
            self.stack.push(Node {
                indent: 0,
                kind: Kind::Map,
                ctx: Ctx::Top,
            });
        }
        // Close the nodes this line is outside of.
        while let Some(top) = self.stack.last() {
            if top.indent > indent {
                self.stack.pop();
            } else if top.indent == indent && top.kind == Kind::Seq && !is_item {
                // A key after a sequence at its key's indent: the sequence is over.
                self.stack.pop();
            } else {
                break;
            }
        }
        let top = *self.stack.last()?;
        if top.indent != indent {
            return None;
        }
        match (top.kind, is_item) {
            (Kind::Seq, true) => self.item(rest, indent),
            (Kind::Map, false) => self.entry(rest, indent, top.ctx),
            _ => None,
        }
    }

    /// A sequence item at `indent` (`rest` starts with `-`).
    fn item(&mut self, rest: &str, indent: usize) -> Option<()> {
        let after = &rest[1..];
        let spaces = indent_of(after);
        let content = &after[spaces..];
        let col = indent + 1 + spaces;
        if content.is_empty() || content.starts_with('#') {
            self.pending = Pending::Value {
                owner: indent,
                in_map: false,
                ctx: Ctx::Other,
            };
            return Some(());
        }
        if content == "-" || content.starts_with("- ") {
            self.stack.push(Node {
                indent: col,
                kind: Kind::Seq,
                ctx: Ctx::Other,
            });
            return self.item(content, col);
        }
        if key_end(content).is_some() {
            self.stack.push(Node {
                indent: col,
                kind: Kind::Map,
                ctx: Ctx::Other,
            });
            return self.entry(content, col, Ctx::Other);
        }
        self.value(content, indent, Ctx::Other, Slot::None)
    }

    /// A mapping entry `key: value` at `indent` in a mapping of context `ctx`.
    fn entry(&mut self, rest: &str, indent: usize, ctx: Ctx) -> Option<()> {
        let (key, after) = key_end(rest)?;
        let (child, slot) = match ctx {
            Ctx::Top => {
                if key == "kind" {
                    (Ctx::Other, Slot::Kind)
                } else if key == "metadata" {
                    if std::mem::replace(&mut self.seen_metadata, true) {
                        return None;
                    }
                    (Ctx::Metadata, Slot::None)
                } else if key.eq_ignore_ascii_case("kind") || key.eq_ignore_ascii_case("metadata") {
                    return None;
                } else {
                    (Ctx::Other, Slot::None)
                }
            }
            Ctx::Metadata => {
                if key == "annotations" {
                    if std::mem::replace(&mut self.seen_annotations, true) {
                        return None;
                    }
                    (Ctx::Annotations, Slot::None)
                } else if key.eq_ignore_ascii_case("annotations") {
                    return None;
                } else {
                    (Ctx::Other, Slot::None)
                }
            }
            Ctx::Annotations if key == "helm.sh/hook" => (Ctx::Other, Slot::Hook),
            _ => (Ctx::Other, Slot::None),
        };
        if key == "<<" {
            return None;
        }
        let v = after.trim_start_matches(' ');
        if v.is_empty() || v.starts_with('#') {
            if slot != Slot::None {
                // `kind:` with nothing after it: null, unless a nested node follows; leave
                // such documents to the full parser.
                return None;
            }
            self.pending = Pending::Value {
                owner: indent,
                in_map: true,
                ctx: child,
            };
            return Some(());
        }
        if child != Ctx::Other && v != "{}" && v != "[]" {
            // `metadata` or `annotations` given inline: leave it to the full parser.
            if v.starts_with(['{', '[']) {
                return None;
            }
        }
        self.value(v, indent, child, slot)
    }

    /// A value after `key: ` or `- ` (non-empty, not a comment); `owner` is the indent of
    /// the node that holds it.
    fn value(&mut self, v: &str, owner: usize, ctx: Ctx, slot: Slot) -> Option<()> {
        self.pending = Pending::Done;
        let first = v.as_bytes()[0];
        let scalar: Option<Value> = match first {
            b'|' | b'>' => {
                if !block_header_ok(&v[1..]) || slot != Slot::None {
                    return None;
                }
                self.pending = Pending::Block {
                    owner,
                    content: None,
                };
                return Some(());
            }
            b'"' => {
                let (text, tail) = double_quoted(v)?;
                tail_ok(tail)?;
                text.filter(|_| slot != Slot::None).map(Value::from)
            }
            b'\'' => match single_quoted(v) {
                Some((text, tail)) => {
                    tail_ok(tail)?;
                    (slot != Slot::None).then(|| Value::from(text.into_owned()))
                }
                None if slot == Slot::None => {
                    self.pending = Pending::Single { owner };
                    None
                }
                None => return None,
            },
            b'[' | b'{' => {
                let tail = flow(v.as_bytes(), 0, 0)?;
                tail_ok(&v[tail..])?;
                if slot != Slot::None {
                    return None;
                }
                None
            }
            _ => {
                let text = plain(v)?;
                if text.len() == v.len() {
                    // No comment after it: the next lines may continue it.
                    self.pending = Pending::Plain { owner, slot };
                }
                // Only a head field's value is resolved (and allocated): every other scalar
                // of the document is only checked, and resolving each was a third of the
                // scan of a large manifest.
                (slot != Slot::None).then(|| crate::yaml::plain_scalar(text))
            }
        };
        let _ = ctx;
        match slot {
            Slot::None => {}
            Slot::Kind => self.head.kind = Some(scalar?),
            Slot::Hook => self.head.hook = Some(scalar?),
        }
        Some(())
    }
}

/// A plain key at the start of `rest` and the text after its `:`; `None` when the line is no
/// simple `key:` entry this pass reads.
fn key_end(rest: &str) -> Option<(std::borrow::Cow<'_, str>, &str)> {
    let b = rest.as_bytes();
    match b[0] {
        b'"' => {
            let (text, tail) = double_quoted(rest)?;
            let after = tail.strip_prefix(':')?;
            if !(after.is_empty() || after.starts_with(' ')) {
                return None;
            }
            return Some((std::borrow::Cow::Borrowed(text?), after));
        }
        b'\'' => {
            let (text, tail) = single_quoted(rest)?;
            let after = tail.strip_prefix(':')?;
            if !(after.is_empty() || after.starts_with(' ')) {
                return None;
            }
            return Some((text, after));
        }
        _ => {}
    }
    if starts_indicator(rest) {
        return None;
    }
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' && (i + 1 == b.len() || b[i + 1] == b' ') {
            let key = rest[..i].trim_end_matches(' ');
            // No ` #` can be in the key: the loop has already refused one before the `:`.
            if key.len() > 1000 {
                return None;
            }
            return Some((std::borrow::Cow::Borrowed(key), &rest[i + 1..]));
        }
        if b[i] == b'#' && i > 0 && b[i - 1] == b' ' {
            return None;
        }
        i += 1;
    }
    None
}

/// Whether a plain scalar may not start here (YAML indicators, and `-`, `?`, `:` before a
/// blank).
fn starts_indicator(s: &str) -> bool {
    let b = s.as_bytes();
    match b[0] {
        b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
        | b'"' | b'%' | b'@' | b'`' => true,
        b'-' | b'?' | b':' => b.len() == 1 || b[1] == b' ',
        _ => false,
    }
}

/// A plain block scalar that ends on its line: its text without a trailing comment.
fn plain(v: &str) -> Option<&str> {
    if starts_indicator(v) {
        return None;
    }
    let b = v.as_bytes();
    let mut end = b.len();
    for i in 0..b.len() {
        if b[i] == b'#' && b[i - 1] == b' ' {
            end = i;
            break;
        }
        if b[i] == b':' && (i + 1 == b.len() || b[i + 1] == b' ') {
            // `a: b: c`: go-yaml's "mapping values are not allowed in this context".
            return None;
        }
    }
    Some(v[..end].trim_end_matches(' '))
}

/// A line continuing a plain scalar: any text (indicators included) without `: `, a final
/// `:` or a comment.
fn continuation_ok(rest: &str) -> bool {
    let b = rest.as_bytes();
    (0..b.len()).all(|i| {
        !(b[i] == b':' && (i + 1 == b.len() || b[i + 1] == b' '))
            && !(b[i] == b'#' && i > 0 && b[i - 1] == b' ')
    })
}

/// What may follow a quoted scalar or a flow collection on its line: blanks, a comment.
fn tail_ok(tail: &str) -> Option<()> {
    let t = tail.trim_start_matches(' ');
    (t.is_empty() || (t.starts_with('#') && t.len() < tail.len())).then_some(())
}

/// A block scalar header after `|`/`>`: an optional chomping indicator, then blanks or a
/// comment. An indentation indicator is left to the full parser.
fn block_header_ok(h: &str) -> bool {
    let h = h.strip_prefix(['+', '-']).unwrap_or(h);
    tail_ok(h).is_some()
}

/// Where a single-quoted scalar continued from an earlier line closes on this one: what
/// follows the closing quote.
fn quote_end(line: &str) -> Option<&str> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            if b.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(&line[i + 1..]);
        }
        i += 1;
    }
    None
}

/// A single-quoted scalar closed on this line: (text, what follows it); the text is
/// borrowed unless it has a doubled quote.
fn single_quoted(s: &str) -> Option<(std::borrow::Cow<'_, str>, &str)> {
    let b = s.as_bytes();
    let mut i = 1;
    let mut out = String::new();
    let mut from = 1;
    while i < b.len() {
        if b[i] == b'\'' {
            if b.get(i + 1) == Some(&b'\'') {
                out.push_str(&s[from..=i]);
                i += 2;
                from = i;
                continue;
            }
            if from == 1 {
                return Some((std::borrow::Cow::Borrowed(&s[1..i]), &s[i + 1..]));
            }
            out.push_str(&s[from..i]);
            return Some((std::borrow::Cow::Owned(out), &s[i + 1..]));
        }
        i += 1;
    }
    None
}

/// A double-quoted scalar closed on this line: (its text when it has no escapes, what
/// follows it). Escapes are checked as go-yaml checks them, but not decoded: a head field
/// that has them goes to the full parser.
fn double_quoted(s: &str) -> Option<(Option<&str>, &str)> {
    let b = s.as_bytes();
    let mut i = 1;
    let mut escaped = false;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let text = (!escaped).then(|| &s[1..i]);
                return Some((text, &s[i + 1..]));
            }
            b'\\' => {
                escaped = true;
                let e = *b.get(i + 1)?;
                if !matches!(
                    e,
                    b'0' | b'a'
                        | b'b'
                        | b't'
                        | b'n'
                        | b'v'
                        | b'f'
                        | b'r'
                        | b'e'
                        | b' '
                        | b'"'
                        | b'/'
                        | b'\\'
                        | b'N'
                        | b'_'
                        | b'L'
                        | b'P'
                ) {
                    // `\x`, `\u`, `\U` and anything unknown: the full parser decides.
                    return None;
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
    None
}

/// A flow collection (`[...]`, `{...}`) closed on this line, starting at `i`; returns the
/// index after it. Only quoted scalars, plain scalars without `:`, and nested collections.
fn flow(b: &[u8], mut i: usize, depth: usize) -> Option<usize> {
    if depth > 32 {
        return None;
    }
    let (open, close) = (b[i], if b[i] == b'[' { b']' } else { b'}' });
    i += 1;
    let skip = |i: &mut usize| {
        while *i < b.len() && b[*i] == b' ' {
            *i += 1;
        }
    };
    skip(&mut i);
    if b.get(i) == Some(&close) {
        return Some(i + 1);
    }
    loop {
        i = flow_node(b, i, depth)?;
        skip(&mut i);
        if open == b'{' {
            // `key: value`
            if b.get(i) != Some(&b':') || b.get(i + 1) != Some(&b' ') {
                return None;
            }
            i += 1;
            skip(&mut i);
            i = flow_node(b, i, depth)?;
            skip(&mut i);
        }
        match b.get(i) {
            Some(b',') => {
                i += 1;
                skip(&mut i);
                if b.get(i) == Some(&close) {
                    // A trailing comma: left to the full parser.
                    return None;
                }
            }
            Some(c) if *c == close => return Some(i + 1),
            _ => return None,
        }
    }
}

fn flow_node(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    let s = std::str::from_utf8(&b[i..]).ok()?;
    match *b.get(i)? {
        b'[' | b'{' => flow(b, i, depth + 1),
        b'"' => {
            let (_, tail) = double_quoted(s)?;
            Some(b.len() - tail.len())
        }
        b'\'' => {
            let (_, tail) = single_quoted(s)?;
            Some(b.len() - tail.len())
        }
        _ => {
            // In a flow, `-`, `?` and `:` before a flow indicator are indicators too.
            let flow_indicator = matches!(b[i], b'-' | b'?' | b':')
                && matches!(b.get(i + 1), Some(b',' | b'[' | b']' | b'{' | b'}'));
            if starts_indicator(s) || flow_indicator {
                return None;
            }
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'[' | b']' | b'{' | b'}') {
                if b[j] == b':' {
                    // `key: value` in a flow mapping ends the key; any other `:` (go-yaml
                    // v2's "found unexpected ':'") is left to the full parser.
                    if b.get(j + 1) == Some(&b' ') {
                        break;
                    }
                    return None;
                }
                if b[j] == b'#' && b[j - 1] == b' ' {
                    return None;
                }
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_by_parse(doc: &str) -> Option<Head> {
        use crate::template::value::Value as V;
        let v = crate::yaml::parse_one(doc).ok()?;
        let V::Map(m) = v else {
            return Some(Head {
                kind: None,
                hook: None,
            });
        };
        let m = m.borrow();
        let kind = m.get("kind").cloned();
        let hook = match m.get("metadata") {
            Some(V::Map(meta)) => match meta.borrow().get("annotations") {
                Some(V::Map(a)) => a.borrow().get("helm.sh/hook").cloned(),
                _ => None,
            },
            _ => None,
        };
        Some(Head { kind, hook })
    }

    /// Whenever the scan answers, the full parse accepts the document and agrees.
    fn agrees(doc: &str) -> bool {
        match scan(doc) {
            None => true,
            Some(h) => {
                let full = head_by_parse(doc);
                let same = full.as_ref().is_some_and(|f| {
                    format!("{:?}{:?}", f.kind, f.hook) == format!("{:?}{:?}", h.kind, h.hook)
                });
                if !same {
                    eprintln!("scan {h:?} vs parse {full:?} of:\n{doc}");
                }
                same
            }
        }
    }

    const DOC: &str = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: \"x\"\n  labels:\n    a: b # c\n  annotations:\n    \"helm.sh/hook\": pre-install,post-upgrade\n    helm.sh/hook-weight: '-5'\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        args: [\"--a\", 'b', c, {d: e}]\n        command:\n          - sh\n          - -c\n          - |\n            echo hi\n              more: x\n\n            done\n        env: []\n        ports:\n        - - 1\n          - 2\n      restartPolicy: Never\n      description: a long\n        text that continues\n        \"2m\", - x [y]\n\n        after a blank\n      note: 'quoted\n        across lines'' end'\n      resources:\n        {}\n";

    /// The block-wise control check finds a control byte wherever it sits (either side of
    /// a block boundary) and passes newlines and tabs.
    #[test]
    fn control_bytes_are_found_in_any_block() {
        let clean = "kind: A\n\tb: c\n".repeat(20);
        assert!(!has_control_byte(clean.as_bytes()));
        for at in [0, 1, 63, 64, 65, 127, 128, clean.len() - 1] {
            for bad in [b'\r', 0u8, 0x1b, 0x7f] {
                let mut b = clean.clone().into_bytes();
                b[at] = bad;
                assert!(has_control_byte(&b), "{bad:#x} at {at}");
                assert!(scan(std::str::from_utf8(&b).unwrap()).is_none());
            }
        }
    }

    /// The byte-wise check finds exactly the chars the char-wise one did, wherever they sit
    /// (either side of a block boundary, cut by the end of the text).
    #[test]
    fn special_chars_are_found_as_the_char_check_found_them() {
        let by_chars = |t: &str| {
            t.chars().any(|c| {
                matches!(
                    c,
                    '\u{80}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}'
                ) || c == '\u{fffe}'
                    || c == '\u{ffff}'
            })
        };
        let chars = [
            '\u{7f}',
            '\u{80}',
            '\u{9f}',
            '\u{a0}',
            '\u{c2}',
            '\u{2027}',
            '\u{2028}',
            '\u{2029}',
            '\u{202a}',
            '\u{feff}',
            '\u{fefe}',
            '\u{fffd}',
            '\u{fffe}',
            '\u{ffff}',
            '\u{10000}',
            '\u{e0080}',
            'é',
            '“',
        ];
        for at in [0, 1, 62, 63, 64, 65, 127] {
            for c in chars {
                let mut t = "a".repeat(at);
                t.push(c);
                for tail in ["", "bcd", &"x".repeat(70)] {
                    let t = format!("{t}{tail}");
                    assert_eq!(
                        has_special_char(t.as_bytes()),
                        by_chars(&t),
                        "{c:?} at {at}"
                    );
                }
            }
        }
    }

    /// A head read from a document with quoted scalars (borrowed or with a doubled quote),
    /// a tab inside a block scalar and none outside it, is the full parse's.
    #[test]
    fn quoted_scalars_and_tabs_read_as_the_full_parse_reads_them() {
        for doc in [
            "kind: 'Job'\nmetadata:\n  annotations:\n    'helm.sh/hook': 'pre-install'\n",
            "kind: 'It''s'\nx: 'a''b'\n",
            "kind: \"Job\"\nx: \"a\\tb\"\n",
            "kind: Job\nx: |\n  a\tb\n",
            "kind: Job\nx: 1\ny: 'multi\n  line'\n",
        ] {
            assert!(scan(doc).is_some(), "refused:\n{doc}");
            assert!(agrees(doc));
        }
        assert!(scan("kind: Job\nx:\ty\n").is_none());
    }

    #[test]
    fn reads_kind_and_hook() {
        let h = scan(DOC).expect("in the subset");
        assert_eq!(format!("{:?}", h.kind), "Some(Job)");
        assert_eq!(format!("{:?}", h.hook), "Some(pre-install,post-upgrade)");
        assert!(agrees(DOC));
        let h = scan("kind: yes\nmetadata:\n  name: x\n").unwrap();
        assert_eq!(format!("{:?}", h.kind), "Some(true)");
    }

    #[test]
    fn refuses_what_it_cannot_place() {
        for bad in [
            // The corpus' cluster-autoscaler bug: `{}` on its own line inside an item.
            "kind: A\nspec:\n  x:\n    - a: 1\n      {}\n",
            "kind: A\nspec:\n  a: 1\n   b: 2\n",
            "kind: A\nspec: a: b\n",
            "kind: A\n- x\n",
            "kind: A\nx: \"open\n",
            "kind: A\nx: [a, b\n",
            "kind: A\nx: &a 1\n",
            "Kind: A\n",
            "kind: A\nx:\n\t- a\n",
            "  kind: A\n",
            "kind: A\nx: 'a'b\n",
        ] {
            assert!(scan(bad).is_none(), "accepted:\n{bad}");
        }
    }

    /// Every line and every byte dropped from a document: the scan never accepts what the
    /// full parse refuses, and agrees with it on what both accept.
    #[test]
    fn agrees_with_the_full_parse_under_mutation() {
        let lines: Vec<&str> = DOC.split('\n').collect();
        for i in 0..lines.len() {
            let mut l = lines.clone();
            l.remove(i);
            assert!(agrees(&l.join("\n")));
            let mut l = lines.clone();
            l[i] = l[i].trim_start();
            assert!(agrees(&l.join("\n")));
            let mut l = lines.clone();
            let shifted = format!(" {}", l[i]);
            l[i] = &shifted;
            assert!(agrees(&l.join("\n")));
        }
        for i in 0..DOC.len() {
            if DOC.is_char_boundary(i) && DOC.is_char_boundary(i + 1) {
                let m = format!("{}{}", &DOC[..i], &DOC[i + 1..]);
                assert!(agrees(&m));
                for c in [
                    ":", " ", "-", "#", "'", "\"", "[", "]", "{", "}", "|", ">", ",", "\t", "&",
                    "*", "!", "?", "%", "@", "`", "\\", "...", "\n", "\n  ", "\n- ",
                ] {
                    let m = format!("{}{c}{}", &DOC[..i], &DOC[i..]);
                    assert!(agrees(&m));
                }
            }
        }
    }
}
