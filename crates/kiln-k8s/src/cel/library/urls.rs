//! Kubernetes' URL library (k8s.io/apiserver `pkg/cel/library/urls.go`): `url`, `isURL`,
//! `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`.
//!
//! The parsing is Go's `net/url` (`url.go`: `Parse`, `ParseRequestURI`, `parse`,
//! `getScheme`, `parseAuthority`, `parseHost`, `unescape`, `shouldEscape`, `EscapedPath`,
//! `splitHostPort`, `ParseQuery`), not WHATWG's: Go keeps the host's case and the default
//! port, and refuses what the url crate would repair.

use super::{Out, boolean, error, own, string, text, typed, value};
use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::{DeclarationError, Env};
use std::collections::HashMap;
use std::sync::Arc;

/// A parsed URL, as `url.URL` keeps the parts the library reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Url {
    scheme: String,
    host: String,
    path: String,
    raw_path: String,
    raw_query: String,
}

super::opaque!(Url, "kubernetes.URL");

pub(super) fn library(env: &mut Env) -> Result<(), DeclarationError> {
    let u = super::type_of::<Url>;
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", u(), vec![], scheme)?;
    env.add_member_overload("getHost", "url_get_host", u(), vec![], host)?;
    env.add_member_overload("getHostname", "url_get_hostname", u(), vec![], hostname)?;
    env.add_member_overload("getPort", "url_get_port", u(), vec![], port)?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", u(), vec![], path)?;
    env.add_member_overload("getQuery", "url_get_query", u(), vec![], query)?;
    Ok(())
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = string(&args, 0)?;
    // As urls.go: ParseRequestURI checks (absolute URI or absolute path), Parse reads (it
    // takes the fragment off first).
    let parsed = parse(s, true).and_then(|_| parse_with_fragment(s));
    match parsed {
        Ok(url) => own(url),
        Err(e) => Err(error(
            "url",
            format!("URL parse error during conversion from string: parse {s:?}: {e}"),
        )),
    }
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    boolean(parse(string(&args, 0)?, true).is_ok())
}

fn scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    text(typed::<Url>(&args, 0)?.scheme.clone())
}

fn host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    text(typed::<Url>(&args, 0)?.host.clone())
}

fn hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    text(split_host_port(&typed::<Url>(&args, 0)?.host).0.to_string())
}

fn port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    text(split_host_port(&typed::<Url>(&args, 0)?.host).1.to_string())
}

fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    text(typed::<Url>(&args, 0)?.escaped_path())
}

fn query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let url = typed::<Url>(&args, 0)?;
    let mut map: HashMap<cel::objects::Key, cel::Value> = HashMap::new();
    for (k, vs) in parse_query(&url.raw_query) {
        let list = vs
            .into_iter()
            .map(|v| cel::Value::String(Arc::new(v)))
            .collect();
        map.insert(cel::objects::Key::from(k), cel::Value::List(Arc::new(list)));
    }
    value(cel::Value::Map(cel::objects::Map { map: Arc::new(map) }))
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// `url.Parse`: the fragment cut off (and its escapes checked), the rest parsed.
fn parse_with_fragment(raw: &str) -> Result<Url, String> {
    let (rest, fragment) = raw.split_once('#').unwrap_or((raw, ""));
    let url = parse(rest, false)?;
    if !fragment.is_empty() {
        unescape(fragment, Mode::Fragment)?;
    }
    Ok(url)
}

/// `url.parse`.
pub(super) fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_string());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".to_string());
    }
    let mut url = Url {
        scheme: String::new(),
        host: String::new(),
        path: String::new(),
        raw_path: String::new(),
        raw_query: String::new(),
    };
    if raw == "*" {
        url.path = "*".to_string();
        return Ok(url);
    }
    let (scheme, mut rest) = get_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        url.raw_query = q.to_string();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // Opaque: a rootless path, kept whole; no host, no path.
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".to_string());
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".to_string());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
        && rest.starts_with("//")
    {
        let authority = &rest[2..];
        let (authority, path) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        url.host = parse_authority(authority)?;
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    if escape(&url.path) != rest {
        url.raw_path = rest.to_string();
    }
    Ok(url)
}

/// `getScheme`.
fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".to_string()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// `parseAuthority`: the host, after the userinfo is checked.
fn parse_authority(authority: &str) -> Result<String, String> {
    let at = authority.rfind('@');
    let host = parse_host(at.map_or(authority, |i| &authority[i + 1..]))?;
    if let Some(i) = at {
        let userinfo = &authority[..i];
        let valid = userinfo
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c));
        if !valid {
            return Err("net/url: invalid userinfo".to_string());
        }
        for part in userinfo.splitn(2, ':') {
            unescape(part, Mode::UserPassword)?;
        }
    }
    Ok(host)
}

/// `parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".to_string());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
        if let Some(zone) = host[..i].find("%25") {
            return Ok(unescape(&host[..zone], Mode::Host)?
                + &unescape(&host[zone..i], Mode::Zone)?
                + &unescape(&host[i..], Mode::Host)?);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit())
}

/// `splitHostPort`: host (brackets removed) and port.
fn split_host_port(host_port: &str) -> (&str, &str) {
    let (mut host, mut port) = (host_port, "");
    if let Some(colon) = host.rfind(':')
        && valid_optional_port(&host[colon..])
    {
        (host, port) = (&host[..colon], &host[colon + 1..]);
    }
    if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
        host = &host[1..host.len() - 1];
    }
    (host, port)
}

fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::UserPassword => c == b'@' || c == b'/' || c == b'?' || c == b':',
            Mode::QueryComponent => true,
            Mode::Fragment => false,
            Mode::Host | Mode::Zone => true,
        },
        _ => !(mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*')),
    }
}

/// `unescape`: `%XX` decoded, with Go's checks (a host may escape only non-ASCII bytes and
/// may not hold characters that need escaping); `+` is a space in a query component.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = |c: u8| (c as char).to_digit(16);
                let (Some(h), Some(l)) = (
                    b.get(i + 1).and_then(|c| hex(*c)),
                    b.get(i + 2).and_then(|c| hex(*c)),
                ) else {
                    let end = (i + 3).min(b.len());
                    return Err(format!(
                        "invalid URL escape {:?}",
                        String::from_utf8_lossy(&b[i..end])
                    ));
                };
                if mode == Mode::Host && h < 8 && &s[i..i + 3] != "%25" {
                    return Err(format!("invalid URL escape {:?}", &s[i..i + 3]));
                }
                if mode == Mode::Zone {
                    let v = (h * 16 + l) as u8;
                    if &s[i..i + 3] != "%25" && v != b' ' && should_escape(v, Mode::Host) {
                        return Err(format!("invalid URL escape {:?}", &s[i..i + 3]));
                    }
                }
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {:?} in host name",
                        (c as char).to_string()
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `escape(s, encodePath)`.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, Mode::Path) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

impl Url {
    /// `EscapedPath`: the path as written when that is a valid encoding of it, else escaped.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty() {
            let valid = self
                .raw_path
                .bytes()
                .all(|c| b"!$&'()*+,;=:@[]%".contains(&c) || !should_escape(c, Mode::Path));
            if valid && unescape(&self.raw_path, Mode::Path).ok().as_ref() == Some(&self.path) {
                return self.raw_path.clone();
            }
        }
        if self.path == "*" {
            return "*".to_string();
        }
        escape(&self.path)
    }
}

/// `ParseQuery`, its errors skipped as `Query` skips them: keys in order of first
/// appearance are not needed (CEL maps are unordered), values in order.
fn parse_query(raw: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for pair in raw.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Ok(k), Ok(v)) = (
            unescape(k, Mode::QueryComponent),
            unescape(v, Mode::QueryComponent),
        ) else {
            continue;
        };
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, values)) => values.push(v),
            None => out.push((k, vec![v])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::cel::tests::eval;

    #[test]
    fn the_library_as_the_upstream_examples_give_it() {
        for rule in [
            "url('/path').getScheme() == ''",
            "url('https://example.com/').getScheme() == 'https'",
            "url('https://example.com:80/').getHost() == 'example.com:80'",
            "url('https://example.com/').getHost() == 'example.com'",
            "url('https://[::1]:80/').getHost() == '[::1]:80'",
            "url('https://[::1]/').getHost() == '[::1]'",
            "url('/path').getHost() == ''",
            "url('https://example.com:80/').getHostname() == 'example.com'",
            "url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'",
            "url('https://[::1]:80/').getHostname() == '::1'",
            "url('https://example.com:80/').getPort() == '80'",
            "url('https://example.com/').getPort() == ''",
            "url('https://example.com/path').getEscapedPath() == '/path'",
            "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
            "url('https://example.com').getEscapedPath() == ''",
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
            "url('https://example.com/path?').getQuery() == {}",
            "url('https://example.com/path').getQuery() == {}",
            "url('https://user:pass@example.com:80/path?query=val#fragment').getHost() == 'example.com:80'",
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            "isURL('/absolute-path')",
            "!isURL('https://a:b:c/')",
            "!isURL('../relative-path')",
            "!isURL('')",
            "url('HTTPS://Example.COM/').getScheme() == 'https' && url('HTTPS://Example.COM/').getHost() == 'Example.COM'",
            "url('https://example.com/a%2Fb').getEscapedPath() == '/a%2Fb'",
        ] {
            assert_eq!(eval(rule), Ok(cel::Value::Bool(true)), "{rule}");
        }
        for bad in [
            "url('https://a:b:c/')",
            "url('../relative-path')",
            "url('https://ex ample.com/')",
            "url('https://example.com/%zz')",
        ] {
            assert!(eval(bad).is_err(), "{bad}");
        }
    }
}
