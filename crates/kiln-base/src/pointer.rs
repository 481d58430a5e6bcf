//! JSON Pointer (RFC 6901): the one place that escapes and unescapes a reference token, and
//! reads a pointer as the field path a user writes (`/spec/images/0/tag` →
//! `spec.images[0].tag`).

/// One reference token escaped for a pointer: `~` → `~0`, then `/` → `~1`.
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// One escaped reference token read back: `~1` → `/` first, then `~0` → `~` (RFC 6901 §4),
/// so `~01` is `~1`, not `/`.
pub fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// `pointer` + `/` + the escaped `token`.
pub fn join(pointer: &str, token: &str) -> String {
    let mut out = pointer.to_string();
    push(&mut out, token);
    out
}

/// Appends `/` and the escaped `token` to `pointer` in place.
pub fn push(pointer: &mut String, token: &str) {
    pointer.push('/');
    // Most tokens need no escape: no copy of them then (a validation walk pushes every key).
    if token.contains(['~', '/']) {
        pointer.push_str(&escape(token));
    } else {
        pointer.push_str(token);
    }
}

/// The unescaped reference tokens of `pointer` (none for the root, `""`).
pub fn tokens(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer.split('/').skip(1).map(unescape)
}

/// The pointer as a field path for messages: `/patches/1/target` → `patches[1].target`;
/// the root is the empty string.
pub fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for token in tokens(pointer) {
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&token);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_in_rfc_6901_order() {
        assert_eq!(escape("a/b~c"), "a~1b~0c");
        assert_eq!(unescape("a~1b~0c"), "a/b~c");
        assert_eq!(unescape("~01"), "~1");
        assert_eq!(escape("~1"), "~01");
        for t in ["", "~", "/", "~/~0~1", "plain"] {
            assert_eq!(unescape(&escape(t)), t);
        }
    }

    #[test]
    fn join_and_tokens() {
        assert_eq!(
            join("/metadata/annotations", "kargo.akuity.io/x"),
            "/metadata/annotations/kargo.akuity.io~1x"
        );
        assert_eq!(join("", "a"), "/a");
        assert_eq!(tokens("/a~1b/0/~0").collect::<Vec<_>>(), ["a/b", "0", "~"]);
        assert_eq!(tokens("").count(), 0);
    }

    #[test]
    fn field_paths_read_like_yaml() {
        assert_eq!(field_path("/patches/1/target"), "patches[1].target");
        assert_eq!(field_path("/spec/labels/a~1b"), "spec.labels.a/b");
        assert_eq!(field_path(""), "");
    }
}
