//! The fetcher's one error type: every failure names the source (its kind and URL, never a
//! credential), the component that needs it when the caller knows, and a `help` with the
//! fix. Codes `kiln::source::<condition>`.

use miette::Diagnostic;
use std::fmt;
use thiserror::Error;

/// Which source an error is about: its kind, its URL (redacted) and what asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `git`, `helm` or `oci`.
    pub kind: &'static str,
    /// The URL, without credentials.
    pub url: String,
    /// What was asked for: a ref, a version or a constraint (with the chart's name).
    pub requested: String,
    /// The component (or file) that needs it, when the caller said.
    pub needed_by: Option<String>,
}

impl Origin {
    pub fn new(kind: &'static str, url: &str, requested: &str) -> Origin {
        Origin {
            kind,
            url: kiln_base::url::redact(url),
            requested: requested.to_string(),
            needed_by: None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} source `{}` ({})",
            self.kind, self.url, self.requested
        )?;
        if let Some(by) = &self.needed_by {
            write!(f, ", needed by {by}")?;
        }
        Ok(())
    }
}

/// Where a Git source's credentials come from (the ones `kiln publish` pushes with).
pub const GIT_CREDENTIALS: &str = "https: set KILN_GIT_USERNAME and KILN_GIT_PASSWORD (a token), or configure a git credential helper for this host; ssh: load the key into ssh-agent (SSH_AUTH_SOCK) or set KILN_SSH_KEY to a private key file";

/// Where a chart repository's or registry's credentials come from.
pub const REGISTRY_CREDENTIALS: &str = "give credentials for this host: `KILN_REGISTRY_<HOST>=user:password` (HOST upper-cased, every other character `_`) or Docker's `~/.docker/config.json`";

/// A server silent for longer than `KILN_SOURCE_TIMEOUT` allows.
pub const SILENCE_TIMEOUT: &str = "the server took the connection (or never took it) and sent nothing back; nothing was stored. Check that it serves this URL, or give it longer with `KILN_SOURCE_TIMEOUT=<seconds>` (default 30)";

/// A remote kustomize base fetched for longer than its `?timeout=`.
pub const BASE_TIMEOUT: &str = "the server did not answer in time, and nothing was stored; a remote base's `?timeout=` (kustomize's, 27s when absent) sets the limit: raise it for a slow server";

/// Why a source could not be had. `Clone`, so a fetcher hands a source's failure to every
/// later request for it instead of waiting out the same dead server again.
#[derive(Debug, Clone, Error, Diagnostic)]
pub enum SourceError {
    #[error("{origin}: the server cannot be reached: {detail}")]
    #[diagnostic(
        code(kiln::source::unreachable),
        help(
            "check the URL and the network; `--offline` renders from the cache alone when every source is in it"
        )
    )]
    Unreachable { origin: Box<Origin>, detail: String },

    /// The server answered, but serves no Git repository at the URL (a 404, an empty or
    /// non-Git `200`, git's dumb protocol): not "unreachable", which sent users to check
    /// their network.
    #[error("{origin}: {detail}")]
    #[diagnostic(code(kiln::source::no_repository), help("{help}"))]
    NoRepository {
        origin: Box<Origin>,
        /// What the server answered, and to which request (URL redacted).
        detail: String,
        help: String,
    },

    #[error("{origin}: authentication failed: {detail}")]
    #[diagnostic(code(kiln::source::auth_failed), help("{help}"))]
    Auth {
        origin: Box<Origin>,
        detail: String,
        /// Where credentials come from for this kind of source (`GIT_CREDENTIALS` or
        /// `REGISTRY_CREDENTIALS`), after what was tried, when known.
        help: String,
    },

    #[error("{origin}: `{wanted}` does not exist")]
    #[diagnostic(code(kiln::source::not_found), help("{help}"))]
    NotFound {
        origin: Box<Origin>,
        wanted: String,
        help: String,
    },

    #[error("{origin}: no version matches the constraint `{constraint}`")]
    #[diagnostic(code(kiln::source::no_match), help("{help}"))]
    NoMatch {
        origin: Box<Origin>,
        constraint: String,
        help: String,
    },

    #[error("{origin}: {what} has digest {actual}, but {expected} was expected (from {by})")]
    #[diagnostic(code(kiln::source::digest_mismatch), help("{help}"))]
    DigestMismatch {
        origin: Box<Origin>,
        what: String,
        expected: String,
        actual: String,
        /// Who said what to expect: `kiln.lock` or the repository's index.
        by: &'static str,
        help: String,
    },

    #[error(
        "{origin}: the cached copy at {path} differs from its digest {expected} (it has {actual})"
    )]
    #[diagnostic(
        code(kiln::source::cache_tampered),
        help("the cache is safe to delete: remove {path} and run again (online) to fetch it anew")
    )]
    CacheTampered {
        origin: Box<Origin>,
        path: String,
        expected: String,
        actual: String,
    },

    #[error("{origin}: not in the cache, and `--offline` forbids fetching it")]
    #[diagnostic(
        code(kiln::source::not_cached),
        help("run once without `--offline` (or `kiln update`) to fill the cache")
    )]
    NotCached { origin: Box<Origin> },

    #[error("{origin}: `kiln.lock` {problem}, and `--locked` forbids changing it")]
    #[diagnostic(
        code(kiln::source::lock_out_of_date),
        help("run `kiln update` and commit kiln.lock")
    )]
    LockOutOfDate {
        origin: Box<Origin>,
        problem: String,
    },

    #[error("{origin}: the archive entry `{entry}` {reason}")]
    #[diagnostic(
        code(kiln::source::unsafe_archive),
        help(
            "kiln extracts only regular files and directories inside the archive's own tree; the archive is refused whole"
        )
    )]
    UnsafeArchive {
        origin: Box<Origin>,
        entry: String,
        reason: String,
    },

    #[error("{origin}: {what} is over the limit of {limit} {unit}")]
    #[diagnostic(
        code(kiln::source::too_large),
        help("raise the limit with {variable} if the source is meant to be this large")
    )]
    TooLarge {
        origin: Box<Origin>,
        what: String,
        limit: u64,
        unit: &'static str,
        variable: &'static str,
    },

    #[error("{origin}: {what} did not finish within {timeout}")]
    #[diagnostic(code(kiln::source::timeout), help("{help}"))]
    Timeout {
        origin: Box<Origin>,
        what: String,
        /// The limit, as Go prints a duration (`27s`), as kustomize's message shows it.
        timeout: String,
        /// Which limit it was: `SILENCE_TIMEOUT` or `BASE_TIMEOUT`.
        help: &'static str,
    },

    #[error("{origin}: {detail}")]
    #[diagnostic(code(kiln::source::bad_response), help("{help}"))]
    BadResponse {
        origin: Box<Origin>,
        detail: String,
        help: String,
    },

    #[error("{path}: {detail}")]
    #[diagnostic(
        code(kiln::source::bad_lock),
        help("kiln.lock is written by kiln; delete it and run `kiln update` to write it anew")
    )]
    BadLock { path: String, detail: String },

    /// A `KILN_SOURCE_*` variable whose value is not what it takes (never read as its
    /// default: a limit the user meant to set must not pass unnoticed).
    #[error("{variable}=`{value}` is not {expected}")]
    #[diagnostic(
        code(kiln::source::bad_setting),
        help("set {variable} to {expected} ({default} when unset), or unset it")
    )]
    BadSetting {
        variable: &'static str,
        value: String,
        /// What it takes: `a whole number of seconds, at least 1`.
        expected: &'static str,
        default: String,
    },

    #[error("cannot {op} {path}: {source}")]
    #[diagnostic(
        code(kiln::source::io),
        help("check the cache directory's permissions and free space")
    )]
    Io {
        op: &'static str,
        path: String,
        source: std::sync::Arc<std::io::Error>,
    },
}

impl SourceError {
    /// The source an error is about, when it is about one.
    pub fn origin_mut(&mut self) -> Option<&mut Origin> {
        use SourceError::*;
        match self {
            Unreachable { origin, .. }
            | NoRepository { origin, .. }
            | Timeout { origin, .. }
            | Auth { origin, .. }
            | NotFound { origin, .. }
            | NoMatch { origin, .. }
            | DigestMismatch { origin, .. }
            | CacheTampered { origin, .. }
            | NotCached { origin }
            | LockOutOfDate { origin, .. }
            | UnsafeArchive { origin, .. }
            | TooLarge { origin, .. }
            | BadResponse { origin, .. } => Some(origin),
            BadLock { .. } | BadSetting { .. } | Io { .. } => None,
        }
    }

    /// The same error, naming what needs the source (`component cart (project shop)`).
    pub fn needed_by(mut self, by: impl Into<String>) -> SourceError {
        if let Some(o) = self.origin_mut() {
            o.needed_by = Some(by.into());
        }
        self
    }

    pub(crate) fn io(op: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        SourceError::Io {
            op,
            path: path.display().to_string(),
            source: std::sync::Arc::new(source),
        }
    }
}

/// The nearest candidates to `wanted`, for a "does not exist" help: the closest by edit
/// distance first (when one is close), then the first few of the list as given.
pub(crate) fn nearest(wanted: &str, candidates: &[String], what: &str) -> String {
    if candidates.is_empty() {
        return format!("the source lists no {what} at all");
    }
    let mut shown: Vec<&str> = Vec::new();
    if let Some(m) = kiln_base::diag::closest(wanted, candidates.iter().map(String::as_str), 1) {
        shown.push(m);
    }
    for c in candidates {
        if shown.len() >= 5 {
            break;
        }
        if !shown.contains(&c.as_str()) {
            shown.push(c);
        }
    }
    let list: Vec<String> = shown.iter().map(|s| format!("`{s}`")).collect();
    format!("the nearest {what}: {}", list.join(", "))
}

/// A duration as Go prints one (`27s`, `1.5s`, `1m30s`), as kustomize's message shows it.
pub(crate) fn go_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (m, rest) = (ms / 60_000, ms % 60_000);
    let secs = if rest % 1000 == 0 {
        format!("{}s", rest / 1000)
    } else {
        format!("{}s", rest as f64 / 1000.0)
    };
    if m == 0 { secs } else { format!("{m}m{secs}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_never_shows_credentials() {
        let mut o = Origin::new("git", "https://bob:hunter2@git.example/a.git", "main");
        o.needed_by = Some("component cart".into());
        let shown = o.to_string();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("git.example/a.git") && shown.contains("component cart"));
    }

    #[test]
    fn nearest_puts_the_closest_first() {
        let c = vec!["v1.0.0".to_string(), "v1.2.0".into(), "main".into()];
        assert_eq!(
            nearest("v1.2.1", &c, "refs"),
            "the nearest refs: `v1.2.0`, `v1.0.0`, `main`"
        );
        assert_eq!(nearest("x", &[], "refs"), "the source lists no refs at all");
    }
}
