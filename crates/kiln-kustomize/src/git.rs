//! Remote targets (`resources:`/`components:` entries naming a Git repository), parsed as
//! kustomize parses them: kustomize's `api/internal/git/repospec.go` (v5.5.0,
//! `NewRepoSpecFromURL`), one function per Go function.
//!
//! The engine never fetches: the caller (kiln's source stage, `kiln::source`) resolves each
//! [`RepoSpec`] to a fetched tree and hands the build a [`RemoteTrees`] map; the build reads
//! the tree through its `FileSystem` like any directory, under kustomize's rules for a clone
//! (root-only loading inside it, bases never outside the repository, no repository cycles).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// A Git repository, a ref and a kustomization root in it (kustomize's `git.RepoSpec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoSpec {
    /// The entry as written: kustomize looks for cycles with it.
    pub raw: String,
    /// Scheme, user and host: `https://github.com/`, `git@github.com:`, `file://`.
    pub host: String,
    /// The repository's path on the host: `kubernetes-sigs/kustomize`.
    pub repo_path: String,
    /// The kustomization root inside the repository (`examples/base`), without a leading `/`.
    pub kust_root_path: String,
    /// `?ref=` (or `?version=`): a branch, tag or commit; empty for the remote's HEAD.
    pub git_ref: String,
    /// `?submodules=` (default `true`).
    pub submodules: bool,
    /// `?timeout=` (default 27 s).
    pub timeout: Duration,
}

/// Fetched trees of remote targets, by the entry as written ([`RepoSpec::raw`]): the
/// directory of the repository's tree (the clone's root), and how messages name it.
pub type RemoteTrees = BTreeMap<String, RemoteTree>;

/// One fetched remote target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTree {
    /// The repository's tree (canonical); the kustomization root is
    /// `root.join(kust_root_path)`.
    pub root: PathBuf,
    /// `<repository>@<commit>`, for messages.
    pub label: String,
}

const GIT_SUFFIX: &str = ".git";
const GIT_ROOT_DELIMITER: &str = "_git/";
const PATH_SEPARATOR: &str = "/";
const FILE_SCHEME: &str = "file://";
const HTTP_SCHEME: &str = "http://";
const HTTPS_SCHEME: &str = "https://";
const SSH_SCHEME: &str = "ssh://";
/// Not in kustomize's list: git daemon's protocol, which kiln's fetcher speaks (and
/// `git clone`, kustomize's cloner, would too); ADR 0023.
const GIT_SCHEME: &str = "git://";
/// `defaultSubmodules`.
const DEFAULT_SUBMODULES: bool = true;
/// `defaultTimeout`: "arbitrary, but non-infinite".
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(27);
const ALL_SEGMENTS: i64 = -999_999;
const ORG_REPO_SEGMENTS: i64 = 2;

impl RepoSpec {
    /// `NewRepoSpecFromURL`: an error when `n` is not a Git-like URL, which is how kustomize
    /// tells a remote target from a local path.
    pub fn parse(n: &str) -> Result<RepoSpec, String> {
        if n.starts_with('/') {
            return Err(format!("uri looks like abs path: {n}"));
        }
        // The query first: `?` is only allowed in the query (RFC 3986).
        let (rest, query) = n.split_once('?').unwrap_or((n, ""));
        let (git_ref, timeout, submodules) = parse_query(query);
        let (host, rest) = extract_host(rest)?;
        let (repo_path, kust_root_path) = parse_path_parts(rest, default_repo_path_length(&host))?;
        Ok(RepoSpec {
            raw: n.to_string(),
            host,
            repo_path,
            kust_root_path,
            git_ref,
            submodules,
            timeout,
        })
    }

    /// `CloneSpec`: what `git clone` is given.
    pub fn clone_spec(&self) -> String {
        format!("{}{}", self.host, self.repo_path)
    }
}

fn default_repo_path_length(host: &str) -> i64 {
    if host.starts_with(FILE_SCHEME) {
        ALL_SEGMENTS
    } else {
        ORG_REPO_SEGMENTS
    }
}

/// `parsePathParts`: the repository's path apart from the kustomization root, by an explicit
/// marker (`_git/`, `//`, `.git`), else by the historical default of two segments.
fn parse_path_parts(n: &str, default_len: i64) -> Result<(String, String), String> {
    let (repo, kust) = try_explicit_marker_split(n)
        .or_else(|| try_default_length_split(n, default_len))
        .filter(|(repo, _)| !repo.is_empty())
        .ok_or_else(|| "failed to parse repo path segment".to_string())?;
    if kust_root_path_exits_repo(&kust) {
        return Err(format!("url path exits repo: {n}"));
    }
    Ok((repo, kust.trim_start_matches(PATH_SEPARATOR).to_string()))
}

fn try_explicit_marker_split(n: &str) -> Option<(String, String)> {
    if let Some(i) = n.find(GIT_ROOT_DELIMITER) {
        let git_root = &n[..i + GIT_ROOT_DELIMITER.len()];
        let after = &n[i + GIT_ROOT_DELIMITER.len()..];
        let (first, rest) = after.split_once(PATH_SEPARATOR).unwrap_or((after, ""));
        Some((format!("{git_root}{first}"), rest.to_string()))
    } else if let Some(i) = n.find("//") {
        Some((n[..i].to_string(), n[i + 2..].to_string()))
    } else {
        n.find(GIT_SUFFIX).map(|i| {
            let end = i + GIT_SUFFIX.len();
            (n[..end].to_string(), n[end..].to_string())
        })
    }
}

fn try_default_length_split(n: &str, default_len: i64) -> Option<(String, String)> {
    if default_len == ALL_SEGMENTS {
        return Some((n.to_string(), String::new()));
    }
    let segments: Vec<&str> = n.split(PATH_SEPARATOR).collect();
    let len = usize::try_from(default_len).ok()?;
    (segments.len() >= len).then(|| {
        (
            segments[..len].join(PATH_SEPARATOR),
            segments[len..].join(PATH_SEPARATOR),
        )
    })
}

/// `kustRootPathExitsRepo`: the path, cleaned, starts with `..`.
fn kust_root_path_exits_repo(kust: &str) -> bool {
    let mut depth: Vec<&str> = Vec::new();
    let mut up = false;
    for part in kust.trim_start_matches('/').split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    up = true;
                    break;
                }
            }
            p => depth.push(p),
        }
    }
    up
}

/// `parseQuery`: `ref` (else `version`), `timeout` (integer seconds or a Go duration),
/// `submodules` (a Go bool); a query that does not parse gives the defaults.
fn parse_query(query: &str) -> (String, Duration, bool) {
    let Some(values) = parse_url_query(query) else {
        return (String::new(), DEFAULT_TIMEOUT, DEFAULT_SUBMODULES);
    };
    // `url.Values.Get`: the first value of the key, "" when absent.
    let get = |k: &str| {
        values
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    let mut git_ref = get("version").to_string();
    if !get("ref").is_empty() {
        git_ref = get("ref").to_string();
    }
    let mut timeout = DEFAULT_TIMEOUT;
    let t = get("timeout");
    if !t.is_empty() {
        if let Ok(secs) = t.parse::<i64>() {
            if secs > 0 {
                timeout = Duration::from_secs(secs.unsigned_abs());
            }
        } else if let Some(d) = parse_go_duration(t) {
            timeout = d;
        }
    }
    let mut submodules = DEFAULT_SUBMODULES;
    if let Some(b) = parse_go_bool(get("submodules")) {
        submodules = b;
    }
    (git_ref, timeout, submodules)
}

/// Go's `url.ParseQuery`: `&`-separated `key=value` pairs, `%XX` and `+` decoded; `None` on
/// the first malformed pair (a `;`, a bad escape), as Go returns an error then.
fn parse_url_query(query: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        if pair.contains(';') {
            return None;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.push((unescape(k)?, unescape(v)?));
    }
    Some(out)
}

fn unescape(s: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(s.len());
    let mut it = s.bytes();
    while let Some(b) = it.next() {
        match b {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = [it.next()?, it.next()?];
                let hex = std::str::from_utf8(&hex).ok()?;
                bytes.push(u8::from_str_radix(hex, 16).ok()?);
            }
            b => bytes.push(b),
        }
    }
    String::from_utf8(bytes).ok()
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `time.ParseDuration` (Sprig's, `kiln_helm::sprig::date`), for positive durations.
fn parse_go_duration(s: &str) -> Option<Duration> {
    kiln_helm::sprig::date::parse_duration_f64(s)
        .filter(|secs| *secs > 0.0)
        .map(Duration::from_secs_f64)
}

/// `extractHost`: scheme, user and host, and the rest of the URL.
fn extract_host(n: &str) -> Result<(String, &str), String> {
    let n = ignore_forced_git_protocol(n);
    let (scheme, after_scheme) = extract_scheme(n);
    let (username, n) = extract_username(after_scheme);
    let std_github = is_standard_github_host(n);
    let accept_scp = scheme.is_empty() && (!username.is_empty() || std_github);
    validate_scheme(scheme, accept_scp)?;
    // The file scheme names an absolute path: everything after it (a "user" too) is that
    // path.
    if scheme == FILE_SCHEME {
        return Ok((scheme.to_string(), after_scheme));
    }
    let (mut host, rest) = match find_path_separator(n, accept_scp) {
        Some(i) => (&n[..=i], &n[i + 1..]),
        None => (n, ""),
    };
    let (mut scheme, mut username) = (scheme, username);
    // GitHub URLs are normalized, which may drop the scheme and user.
    if std_github {
        (scheme, username, host) = if scheme.starts_with(SSH_SCHEME) || !username.is_empty() {
            ("", username, "github.com:")
        } else {
            (HTTPS_SCHEME, "", "github.com/")
        };
    }
    if host.is_empty() {
        return Err("failed to parse host segment".into());
    }
    Ok((format!("{scheme}{username}{host}"), rest))
}

/// `ignoreForcedGitProtocol`: go-getter's `git::` prefix is dropped.
fn ignore_forced_git_protocol(n: &str) -> &str {
    trim_prefix_ignore_case(n, "git::").unwrap_or(n)
}

fn validate_scheme(scheme: &str, accept_scp: bool) -> Result<(), String> {
    match scheme {
        "" if !accept_scp => Err("failed to parse scheme".into()),
        "" | SSH_SCHEME | FILE_SCHEME | HTTPS_SCHEME | HTTP_SCHEME | GIT_SCHEME => Ok(()),
        other => Err(format!("unsupported scheme {other:?}")),
    }
}

fn extract_scheme(s: &str) -> (&'static str, &str) {
    for prefix in [
        SSH_SCHEME,
        HTTPS_SCHEME,
        HTTP_SCHEME,
        FILE_SCHEME,
        GIT_SCHEME,
    ] {
        if let Some(rest) = trim_prefix_ignore_case(s, prefix) {
            return (prefix, rest);
        }
    }
    ("", s)
}

/// `extractUsername`: `^([a-zA-Z][a-zA-Z0-9-]*)@`.
fn extract_username(s: &str) -> (&str, &str) {
    let bytes = s.as_bytes();
    if bytes.first().is_some_and(u8::is_ascii_alphabetic) {
        let end = bytes
            .iter()
            .position(|b| !(b.is_ascii_alphanumeric() || *b == b'-'))
            .unwrap_or(bytes.len());
        if bytes.get(end) == Some(&b'@') {
            return (&s[..=end], &s[end + 1..]);
        }
    }
    ("", s)
}

fn is_standard_github_host(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    lower.starts_with("github.com/") || lower.starts_with("github.com:")
}

fn trim_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len()
        && s.is_char_boundary(prefix.len())
        && s[..prefix.len()].eq_ignore_ascii_case(prefix))
    .then(|| &s[prefix.len()..])
}

/// `findPathSeparator`: the first `/`, or in SCP style a `:` before it.
fn find_path_separator(host_path: &str, accept_scp: bool) -> Option<usize> {
    let sep = host_path.find(PATH_SEPARATOR);
    if accept_scp {
        let colon = host_path.find(':');
        if let Some(c) = colon.filter(|c| *c > 0)
            && sep.is_none_or(|s| c < s)
        {
            return Some(c);
        }
    }
    sep
}

#[cfg(test)]
mod tests {
    //! Cases from kustomize's `api/internal/git/repospec_test.go` (`TestNewRepoSpecFromUrl_*`).
    use super::*;

    fn spec(n: &str) -> RepoSpec {
        RepoSpec::parse(n).unwrap_or_else(|e| panic!("{n}: {e}"))
    }

    #[test]
    fn kustomize_s_url_forms() {
        for (url, clone, path, git_ref) in [
            (
                "https://github.com/org/repo//path?ref=v1.2.3",
                "https://github.com/org/repo",
                "path",
                "v1.2.3",
            ),
            (
                "git@github.com:org/repo//path/to/kust?ref=main",
                "git@github.com:org/repo",
                "path/to/kust",
                "main",
            ),
            (
                "github.com/org/repo/path?ref=v1",
                "https://github.com/org/repo",
                "path",
                "v1",
            ),
            (
                "git@gitlab.com:org/repo.git/base?version=v2",
                "git@gitlab.com:org/repo.git",
                "base",
                "v2",
            ),
            (
                "ssh://git@host.xz/org/repo.git//deploy",
                "ssh://git@host.xz/org/repo.git",
                "deploy",
                "",
            ),
            (
                "https://dev.azure.com/org/project/_git/repo/path/to/root",
                "https://dev.azure.com/org/project/_git/repo",
                "path/to/root",
                "",
            ),
            (
                "git::https://gitlab.com/org/repo",
                "https://gitlab.com/org/repo",
                "",
                "",
            ),
            (
                "http://127.0.0.1:9418/base.git//overlay?ref=v1&timeout=61",
                "http://127.0.0.1:9418/base.git",
                "overlay",
                "v1",
            ),
            (
                "git://127.0.0.1:9418/base.git//web?ref=v1",
                "git://127.0.0.1:9418/base.git",
                "web",
                "v1",
            ),
            (
                "file:///tmp/repos/base.git//app",
                "file:///tmp/repos/base.git",
                "app",
                "",
            ),
        ] {
            let s = spec(url);
            assert_eq!(
                (
                    s.clone_spec().as_str(),
                    s.kust_root_path.as_str(),
                    s.git_ref.as_str()
                ),
                (clone, path, git_ref),
                "{url}"
            );
            assert_eq!(s.raw, url);
        }
    }

    #[test]
    fn queries_as_kustomize_reads_them() {
        let s = spec("https://h.example/o/r//p?ref=a&version=b&timeout=61&submodules=false");
        assert_eq!(
            (s.git_ref.as_str(), s.timeout, s.submodules),
            ("a", Duration::from_secs(61), false)
        );
        let s = spec("https://h.example/o/r//p?version=b&timeout=1m30s&submodules=maybe");
        assert_eq!(
            (s.git_ref.as_str(), s.timeout, s.submodules),
            ("b", Duration::from_secs(90), true)
        );
        // A timeout that is neither: the default.
        assert_eq!(
            spec("https://h.example/o/r?timeout=soon").timeout,
            DEFAULT_TIMEOUT
        );
        // A query Go refuses: every default.
        let s = spec("https://h.example/o/r?ref=a;b");
        assert_eq!((s.git_ref.as_str(), s.submodules), ("", true));
    }

    #[test]
    fn local_paths_and_bad_urls_are_not_remote() {
        for n in [
            "../base",
            "base",
            "overlays/prod",
            "/abs/path",
            "ftp://host/org/repo",
            "host.xz:org/repo",
            "https://github.com/org",
            "https://host.example/org/repo//../../etc",
        ] {
            assert!(RepoSpec::parse(n).is_err(), "{n}");
        }
    }
}
