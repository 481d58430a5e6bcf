//! git's smart HTTP through kiln's own HTTP client ([`crate::http::Http`], ureq), for the
//! servers libgit2 cannot read (ADR 0040): those that end each answer by closing the
//! connection (HTTP/1.0 without `Content-Length`, as `python3 -m http.server --cgi` runs
//! `git http-backend`). libgit2 reads a body only when it has a length or is chunked
//! (`src/libgit2/transports/httpclient.c`, `on_headers_complete`), so it sees no refs there.
//!
//! libgit2 keeps its smart protocol (the negotiation, shallow fetches, the pack); only the
//! requests go through ureq, as git2-curl carries them through libcurl: a smart
//! subtransport (`git2::transport::register`) under kiln's own schemes, `kiln+http://` and
//! `kiln+https://`, so that no other libgit2 user in the process (`kiln publish`) is moved
//! off libgit2's own HTTP. The requests are git's (`Documentation/gitprotocol-http.txt`):
//! `GET <repo>/info/refs?service=git-upload-pack`, then `POST <repo>/git-upload-pack` with
//! each round of the negotiation. Only fetching is carried; a push is refused.

use crate::error::{Origin, SourceError};
use crate::http::Http;
use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::sync::{Arc, Once};

/// kiln's scheme prefix for a smart HTTP URL carried by its own client.
const PREFIX: &str = "kiln+";

thread_local! {
    /// The client of the step running on this thread ([`with_client`]); libgit2 makes the
    /// transport on the thread that connects, inside that step.
    static CLIENT: RefCell<Option<Arc<Http>>> = const { RefCell::new(None) };
}

/// What a server answered to the request libgit2 made first, asked again by kiln when
/// libgit2 could not list a repository's refs over HTTP(S) ([`probe`]).
#[derive(Debug)]
pub enum Answer {
    /// A non-empty `200` of git's smart HTTP, ended by the connection's close: kiln's
    /// client carries the fetch.
    CloseDelimited,
    /// The server answered, but with no repository there: this error, not libgit2's
    /// "cannot be reached" (a 404, an empty or non-Git `200`, git's dumb protocol, a 5xx).
    Refused(SourceError),
    /// No answer, or one that adds nothing (a refs advertisement libgit2 failed on for
    /// another reason, a login asked for): libgit2's failure stands.
    Unknown,
}

/// Asks `url`'s server for its refs (`GET …/info/refs?service=git-upload-pack`, the request
/// libgit2 made) after libgit2 failed to list them, and says what the answer means
/// ([`Answer`]). Not `http(s)://`: [`Answer::Unknown`].
pub fn probe(http: &Http, url: &str, origin: &Origin) -> Answer {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Answer::Unknown;
    }
    let request = format!(
        "{}/info/refs?service=git-upload-pack",
        url.trim_end_matches('/')
    );
    let Ok(r) = http.get(&request, "*/*", origin) else {
        return Answer::Unknown;
    };
    // Only what the user may see: no credential of the URL.
    let (shown_url, asked) = (
        kiln_base::url::redact(url.trim_end_matches('/')),
        format!("`GET {}`", kiln_base::url::redact(&request)),
    );
    let status = format!(
        "{} {}",
        r.status,
        ureq::http::StatusCode::from_u16(r.status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("")
    );
    let status = status.trim_end();
    let refused = |detail: String, help: String| {
        Answer::Refused(SourceError::NoRepository {
            origin: Box::new(origin.clone()),
            detail,
            help,
        })
    };
    let smart = r.content_type.starts_with(ADVERTISEMENT)
        || r.body
            .get(4..)
            .is_some_and(|b| b.starts_with(b"# service="));
    match r.status {
        200 if smart && r.close_delimited => Answer::CloseDelimited,
        200 if smart => Answer::Unknown,
        200 if r.body.is_empty() => refused(
            format!("`{shown_url}` is not a Git repository: the server answered {status} with an empty body to {asked}"),
            NOT_SMART_HELP.into(),
        ),
        200 if dumb_refs(&r.body) => refused(
            format!("`{shown_url}` is served over git's dumb HTTP protocol, which kiln does not speak: the server answered {status} to {asked} with a static `info/refs` file, not git's smart HTTP"),
            "serve the repository through `git http-backend` (git's smart HTTP, as every forge does), or name it by `git://` or ssh".into(),
        ),
        200 => refused(
            format!(
                "`{shown_url}` is not a Git repository: the server answered {status} to {asked} with {}, not git's refs (`{ADVERTISEMENT}`)",
                match r.content_type.as_str() {
                    "" => "a body of no content type".to_string(),
                    t => format!("`{t}`"),
                }
            ),
            NOT_SMART_HELP.into(),
        ),
        404 | 410 => refused(
            format!("no such repository at `{shown_url}`: the server answered {status} to {asked}"),
            format!("the server answers, but has no repository at this path: check the host, the path and the repository's name (often ending in `.git`). A forge may answer {} for a private repository when no credential was sent: {}", r.status, crate::error::GIT_CREDENTIALS),
        ),
        s if s >= 400 && s != 401 && s != 403 => refused(
            format!("the server answered {status} to {asked}"),
            "the server answers, but failed this request: try again later, or ask its administrators".into(),
        ),
        _ => Answer::Unknown,
    }
}

/// The content type of git's smart refs advertisement for fetching.
const ADVERTISEMENT: &str = "application/x-git-upload-pack-advertisement";

const NOT_SMART_HELP: &str = "the server answers, but not as a Git repository over smart HTTP (`git http-backend`, what kiln speaks): check that the URL names the repository itself (as `git clone` takes it), not a web page or a folder above it";

/// Whether `body` is the `info/refs` file of `git update-server-info` (git's dumb HTTP):
/// lines of a commit id, a tab and a ref name.
fn dumb_refs(body: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    let mut lines = text.lines().peekable();
    lines.peek().is_some()
        && lines.all(|l| {
            l.split_once('\t').is_some_and(|(id, name)| {
                id.len() >= 40
                    && id.bytes().all(|b| b.is_ascii_hexdigit())
                    && name.starts_with("refs/")
            })
        })
}

/// `url` (`http(s)://…`) in the scheme that routes it through kiln's client.
pub fn carried(url: &str) -> String {
    format!("{PREFIX}{url}")
}

/// Runs `step` (libgit2 calls on [`carried`] URLs) with `http` carrying their requests.
/// The thread's client is put back as it was when `step` ends, however it ends (a return,
/// an error, a panic): a client left behind would carry a later fetch on this thread
/// with another run's credentials and limits.
pub fn with_client<T>(http: &Http, step: impl FnOnce() -> T) -> T {
    register();
    let _restore = ClientGuard {
        outer: CLIENT.with(|c| c.replace(Some(Arc::new(http.with_same_config())))),
    };
    step()
}

/// Puts the thread's [`CLIENT`] back to what it was before [`with_client`] set it.
struct ClientGuard {
    outer: Option<Arc<Http>>,
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        let outer = self.outer.take();
        // `try_with`: a guard dropped while the thread's locals are torn down has nothing
        // left to restore.
        let _ = CLIENT.try_with(|c| *c.borrow_mut() = outer);
    }
}

fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for scheme in ["kiln+http", "kiln+https"] {
            // SAFETY: libgit2's transport registry is written here once (under `Once`),
            // before any libgit2 call uses these schemes; nothing unregisters them.
            let _ = unsafe {
                git2::transport::register(scheme, |remote| {
                    let http = CLIENT.with(|c| c.borrow().clone()).ok_or_else(|| {
                        git2::Error::from_str("kiln's HTTP transport used outside a fetch")
                    })?;
                    Transport::smart(remote, true, Carrier { http })
                })
            };
        }
    });
}

/// The subtransport: one stream per request.
struct Carrier {
    http: Arc<Http>,
}

impl SmartSubtransport for Carrier {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let base = url
            .strip_prefix(PREFIX)
            .unwrap_or(url)
            .trim_end_matches('/')
            .to_string();
        let post = match action {
            Service::UploadPackLs => false,
            Service::UploadPack => true,
            Service::ReceivePackLs | Service::ReceivePack => {
                return Err(git2::Error::from_str(
                    "kiln's HTTP transport only fetches; it never pushes",
                ));
            }
        };
        Ok(Box::new(Request {
            http: self.http.clone(),
            base,
            post,
            sent: Vec::new(),
            answer: None,
        }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

/// One request: what libgit2 writes is its body; the first read sends it and reads the
/// answer (bounded by the client's limits).
struct Request {
    http: Arc<Http>,
    base: String,
    post: bool,
    sent: Vec<u8>,
    answer: Option<io::Cursor<Vec<u8>>>,
}

impl Request {
    fn send(&self) -> io::Result<Vec<u8>> {
        let (method, url, accept, body, want) = if self.post {
            (
                "POST",
                format!("{}/git-upload-pack", self.base),
                "application/x-git-upload-pack-result",
                Some((
                    "application/x-git-upload-pack-request",
                    self.sent.as_slice(),
                )),
                "application/x-git-upload-pack-result",
            )
        } else {
            (
                "GET",
                format!("{}/info/refs?service=git-upload-pack", self.base),
                "*/*",
                None,
                ADVERTISEMENT,
            )
        };
        let origin = Origin::new("git", &self.base, "");
        let fail = |what: String| io::Error::other(kiln_base::url::redact(&what));
        let r = self
            .http
            .send(method, &url, accept, body, &origin)
            .map_err(|e| fail(e.to_string()))?;
        if r.status != 200 {
            return Err(fail(format!("{method} {url} answered {}", r.status)));
        }
        if !r.content_type.starts_with(want) {
            return Err(fail(format!(
                "{method} {url} answered `{}`, not git's smart HTTP (`{want}`)",
                r.content_type
            )));
        }
        Ok(r.body)
    }
}

impl Read for Request {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.answer.is_none() {
            self.answer = Some(io::Cursor::new(self.send()?));
        }
        self.answer.as_mut().map_or(Ok(0), |a| a.read(buf))
    }
}

impl Write for Request {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.sent.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed() -> bool {
        CLIENT.with(|c| c.borrow().is_some())
    }

    /// A step that panics, or fails early, leaves no client behind on its thread; a nested
    /// step gives the outer one its client back.
    #[test]
    fn the_client_is_cleared_however_the_step_ends() {
        let http = Http::new(Default::default(), Default::default());
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_client(&http, || {
                assert!(installed());
                panic!("a fetch that panics");
            })
        }));
        assert!(caught.is_err());
        assert!(!installed(), "a panicking step left its client installed");
        let early: Result<(), &str> = with_client(&http, || {
            Err("an early return")?;
            unreachable!()
        });
        assert!(early.is_err());
        assert!(!installed(), "a failing step left its client installed");
        with_client(&http, || {
            with_client(&http, || assert!(installed()));
            assert!(installed(), "the inner step took the outer one's client");
        });
        assert!(!installed());
    }
}
