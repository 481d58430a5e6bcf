//! URLs as kiln shows them: every password or token removed before a URL (or a message that
//! quotes one) is printed, committed or stored ([`redact`]), and the test that a URL carries
//! one ([`has_credentials`], which validate uses to refuse such spec URLs).

/// Removes every password or token from `text` before it is printed, committed or stored:
/// the one redaction function behind every error, summary and report. `text` may be one URL
/// or a whole message; each whitespace- or quote-delimited word that looks like a URL is
/// redacted. Forms handled (see the table test):
/// - `scheme://user:secret@host/…` → `scheme://user:***@host/…`, even with a raw `/` in the
///   secret (`user:SUPER/SECRET@host`);
/// - `https://token@host/…` → `https://***@host/…` (a bare user name over http is a token);
///   an ssh user name (`ssh://git@host`, `git@host:path`) is no secret and is kept;
/// - scp style `user:secret@host:path` → `user:***@host:path`;
/// - query values (`?access_token=…`, `&private_token=…`) → `***`;
/// - `file://user:secret@/path`.
///
/// When a word is ambiguous (`https://host:8443/x.git@v1.2`) it is redacted too: showing too
/// little is a cosmetic problem, showing a token is not.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    for c in text.chars() {
        if c.is_whitespace() || matches!(c, '`' | '"' | '\'') {
            out.push_str(&redact_word(&word));
            word.clear();
            out.push(c);
        } else {
            word.push(c);
        }
    }
    out.push_str(&redact_word(&word));
    out
}

/// `true` when `url` carries a password or token (anything [`redact`] would hide).
pub fn has_credentials(url: &str) -> bool {
    redact(url) != url
}

fn redact_word(word: &str) -> String {
    let Some(scheme_end) = word.find("://") else {
        return redact_scp(word);
    };
    let scheme = &word[..scheme_end];
    let rest = &word[scheme_end + 3..];
    let (authority_and_path, query) = match rest.find('?') {
        Some(q) => (&rest[..q], Some(&rest[q + 1..])),
        None => (rest, None),
    };
    let mut out = format!("{scheme}://");
    match userinfo_end(authority_and_path) {
        Some(at) => {
            let userinfo = &authority_and_path[..at];
            let ssh = scheme.ends_with("ssh");
            match userinfo.split_once(':') {
                Some((user, _)) => out.push_str(&format!("{user}:***")),
                None if ssh => out.push_str(userinfo),
                None => out.push_str("***"),
            }
            out.push_str(&authority_and_path[at..]);
        }
        None => out.push_str(authority_and_path),
    }
    if let Some(query) = query {
        out.push('?');
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((k, _)) => format!("{k}=***"),
                None => p.to_string(),
            })
            .collect();
        out.push_str(&params.join("&"));
    }
    out
}

/// Where the user information of `scheme://` + `rest` ends (the index of its `@`), if it has
/// any. The first `@` ends it unless a `/` comes before it that is plainly the start of the
/// path (`host/x.git@main`, `host:8443/x@ref` where what follows the `@` is no host).
fn userinfo_end(rest: &str) -> Option<usize> {
    let at = rest.find('@')?;
    let before = &rest[..at];
    let Some(slash) = before.find('/') else {
        return Some(at);
    };
    let Some(colon) = before[..slash].find(':') else {
        // `host/path@ref`, or `file://` with an empty authority.
        return None;
    };
    let after_colon = &before[colon + 1..slash];
    let port_like = !after_colon.is_empty() && after_colon.bytes().all(|b| b.is_ascii_digit());
    let after_at = &rest[at + 1..];
    let host_like = after_at
        .split('/')
        .next()
        .is_some_and(|h| h.contains('.') || h.contains(':') || h == "localhost");
    (!port_like || host_like).then_some(at)
}

/// scp-style `user:secret@host:path` (no scheme): the secret is hidden, a plain ssh user
/// name (`git@host:path`) is kept. Local paths (`/a/b@main`) are left alone.
fn redact_scp(word: &str) -> String {
    let Some(at) = word.find('@') else {
        return word.to_string();
    };
    let userinfo = &word[..at];
    if userinfo.contains('/') {
        return word.to_string();
    }
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***{}", &word[at..]),
        None => word.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9 item 4: one redaction function, every form users paste (the first four
    /// printed the token before).
    #[test]
    fn redact_hides_every_form_of_credentials() {
        let table = [
            (
                "https://user:SUPER/SECRET@127.0.0.1:9/x.git",
                "https://user:***@127.0.0.1:9/x.git",
            ),
            ("user:TOKEN@127.0.0.1:x.git", "user:***@127.0.0.1:x.git"),
            (
                "https://127.0.0.1:9/x.git?access_token=TOKEN",
                "https://127.0.0.1:9/x.git?access_token=***",
            ),
            (
                "https://h/x.git?ref=main&private_token=TOKEN",
                "https://h/x.git?ref=***&private_token=***",
            ),
            ("file://user:TOKEN@/tmp/x.git", "file://user:***@/tmp/x.git"),
            (
                "https://bot:s3cret@example.com/a.git",
                "https://bot:***@example.com/a.git",
            ),
            (
                "https://TOKEN@example.com/a.git",
                "https://***@example.com/a.git",
            ),
            ("ssh://git@example.com/a.git", "ssh://git@example.com/a.git"),
            ("git@github.com:acme/a.git", "git@github.com:acme/a.git"),
            ("https://example.com/a", "https://example.com/a"),
            (
                "https://example.com/a.git@main",
                "https://example.com/a.git@main",
            ),
            ("https://h:8443/a.git@main", "https://h:8443/a.git@main"),
            ("/tmp/r.git@stage/dev", "/tmp/r.git@stage/dev"),
            (
                "remote `https://u:TOKEN@h/x` is unreachable: 'https://u:TOKEN@h/x' failed",
                "remote `https://u:***@h/x` is unreachable: 'https://u:***@h/x' failed",
            ),
        ];
        for (input, want) in table {
            assert_eq!(redact(input), want, "{input}");
            assert!(!redact(input).contains("TOKEN") && !redact(input).contains("SECRET"));
            assert_eq!(has_credentials(input), input != want, "{input}");
        }
    }
}
