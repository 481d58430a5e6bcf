//! HTTP for chart repositories and OCI registries: one `ureq` agent (rustls, ADR 0018), the
//! credentials by host, and the auth dance Docker and Helm do (`docker/distribution`'s
//! `registry/client/auth/session.go`, ORAS's `registry/remote/auth/client.go`): a request
//! goes out anonymous; a `401` with `WWW-Authenticate: Basic` is repeated with the host's
//! user and password; one with `Bearer realm=…,service=…,scope=…` fetches a token from the
//! realm (with the user and password when there are some) and is repeated with it.
//! Credentials never reach an error message: only the host and the user's name do.
#![allow(clippy::disallowed_methods)] // the source fetcher's I/O boundary (clippy.toml)

use crate::archive::{Limits, Which};
use crate::error::{Origin, SourceError};
use base64::Engine;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Mutex;
use std::time::Duration;

/// A user name and password for one host.
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login({}, ***)", self.username)
    }
}

/// Credentials by host (`host` or `host:port`).
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    by_host: BTreeMap<String, Login>,
}

/// The variable holding `user:password` for `host`: `KILN_REGISTRY_` and the host
/// upper-cased, every character but a letter or digit made `_`
/// (`registry.example.com:5000` → `KILN_REGISTRY_REGISTRY_EXAMPLE_COM_5000`).
pub fn variable_for(host: &str) -> String {
    let tail: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("KILN_REGISTRY_{tail}")
}

impl Credentials {
    /// From Docker's `config.json` text (its `auths`: `auth` as base64 `user:password`, or
    /// `username` and `password`), then the `KILN_REGISTRY_*` variables in `vars`, which win.
    /// The caller reads both (the CLI: `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`,
    /// and the process environment).
    pub fn new<'a>(
        docker_config: Option<&str>,
        vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Credentials {
        let mut by_host = BTreeMap::new();
        if let Some(text) = docker_config
            && let Ok(doc) = serde_json::from_str::<serde_json::Value>(text)
            && let Some(auths) = doc.get("auths").and_then(|a| a.as_object())
        {
            for (key, entry) in auths {
                let host = key
                    .trim_start_matches("https://")
                    .trim_start_matches("http://")
                    .split('/')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let login = match entry.get("auth").and_then(|a| a.as_str()) {
                    Some(b64) => base64::engine::general_purpose::STANDARD
                        .decode(b64)
                        .ok()
                        .and_then(|raw| String::from_utf8(raw).ok())
                        .and_then(|s| split_login(&s)),
                    None => match (
                        entry.get("username").and_then(|u| u.as_str()),
                        entry.get("password").and_then(|p| p.as_str()),
                    ) {
                        (Some(u), Some(p)) => Some(Login {
                            username: u.into(),
                            password: p.into(),
                        }),
                        _ => None,
                    },
                };
                if let Some(login) = login {
                    by_host.insert(host, login);
                }
            }
        }
        let mut creds = Credentials { by_host };
        let vars: BTreeMap<&str, &str> = vars
            .into_iter()
            .filter(|(k, _)| k.starts_with("KILN_REGISTRY_"))
            .collect();
        // A variable names a host only through `variable_for`; keep them by name, matched at
        // look-up.
        creds.by_host.extend(
            vars.iter()
                .filter_map(|(k, v)| split_login(v).map(|l| (format!("\0{k}"), l))),
        );
        creds
    }

    /// The login for `host` (`host[:port]`), the variable first.
    pub fn for_host(&self, host: &str) -> Option<&Login> {
        self.by_host
            .get(&format!("\0{}", variable_for(host)))
            .or_else(|| self.by_host.get(host))
    }
}

fn split_login(s: &str) -> Option<Login> {
    let (u, p) = s.split_once(':')?;
    Some(Login {
        username: u.to_string(),
        password: p.to_string(),
    })
}

/// A response: status, the headers kiln reads, the body (bounded by the limits).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    pub docker_digest: Option<String>,
    pub location: Option<String>,
    pub body: Vec<u8>,
    /// The body had neither a `Content-Length` nor a chunked `Transfer-Encoding`: it ended
    /// when the server closed the connection (HTTP/1.0's way; RFC 9112 section 6.3, rule 8).
    pub close_delimited: bool,
}

/// The HTTP client of one run.
pub struct Http {
    agent: ureq::Agent,
    creds: Credentials,
    limits: Limits,
    /// Bearer tokens by (realm, service, scope).
    tokens: Mutex<BTreeMap<String, String>>,
}

impl std::fmt::Debug for Http {
    // The tokens are credentials: only how many there are is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tokens = self.tokens.lock().map_or(0, |t| t.len());
        f.debug_struct("Http")
            .field("creds", &self.creds)
            .field("limits", &self.limits)
            .field("tokens", &format_args!("{tokens} (not shown)"))
            .finish()
    }
}

/// The host (`host[:port]`) of an `http(s)://` URL.
pub fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    host.rsplit_once('@').map_or(host, |(_, h)| h)
}

impl Http {
    pub fn new(creds: Credentials, limits: Limits) -> Http {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A silent server fails the fetch after `limits.timeout`, at every step that waits
            // on it; the global bound stays for a server that answers, slowly, forever.
            .timeout_connect(Some(limits.timeout))
            .timeout_send_request(Some(limits.timeout))
            .timeout_recv_response(Some(limits.timeout))
            .timeout_global(Some(Duration::from_secs(300).max(limits.timeout)))
            .user_agent(concat!("kiln/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Http {
            agent,
            creds,
            limits,
            tokens: Mutex::new(BTreeMap::new()),
        }
    }

    /// A client with this one's agent, credentials and limits, and no tokens yet (for a
    /// transport that must own its client).
    pub fn with_same_config(&self) -> Http {
        Http {
            agent: self.agent.clone(),
            creds: self.creds.clone(),
            limits: self.limits,
            tokens: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// GET `url` (Accept: `accept`), answering authentication challenges. `Ok` for any
    /// status but 401/403 (the caller reads 404 its own way); an error names the origin.
    pub fn get(&self, url: &str, accept: &str, origin: &Origin) -> Result<Response, SourceError> {
        self.send("GET", url, accept, None, origin)
    }

    /// A request with a body (the tests push charts with it; kiln itself only reads).
    pub fn send(
        &self,
        method: &str,
        url: &str,
        accept: &str,
        body: Option<(&str, &[u8])>,
        origin: &Origin,
    ) -> Result<Response, SourceError> {
        let host = host_of(url).to_string();
        let login = self.creds.for_host(&host);
        let first = self.once(method, url, accept, body, None, origin)?;
        if first.status != 401 {
            return check_denied(first, origin, login);
        }
        let challenge = first
            .www_authenticate
            .clone()
            .unwrap_or_else(|| "Basic".to_string());
        let header = if challenge.to_ascii_lowercase().starts_with("bearer") {
            format!("Bearer {}", self.token(&challenge, login, origin)?)
        } else {
            let Some(login) = login else {
                return Err(auth_error(
                    origin,
                    &host,
                    None,
                    "the server asks for credentials and none are given",
                ));
            };
            basic(login)
        };
        let second = self.once(method, url, accept, body, Some(&header), origin)?;
        if second.status == 401 {
            return Err(auth_error(
                origin,
                &host,
                login,
                "the server refused the credentials",
            ));
        }
        check_denied(second, origin, login)
    }

    fn token(
        &self,
        challenge: &str,
        login: Option<&Login>,
        origin: &Origin,
    ) -> Result<String, SourceError> {
        let params = challenge_params(challenge);
        let realm = params.get("realm").cloned().unwrap_or_default();
        let mut url = realm.clone();
        let mut sep = if url.contains('?') { '&' } else { '?' };
        for key in ["service", "scope"] {
            if let Some(v) = params.get(key) {
                url.push_str(&format!("{sep}{key}={}", encode_query(v)));
                sep = '&';
            }
        }
        if let Some(t) = self.tokens.lock().ok().and_then(|t| t.get(&url).cloned()) {
            return Ok(t);
        }
        let auth = login.map(basic);
        let resp = self.once(
            "GET",
            &url,
            "application/json",
            None,
            auth.as_deref(),
            origin,
        )?;
        if resp.status != 200 {
            return Err(auth_error(
                origin,
                host_of(&realm),
                login,
                &format!("the token service answered {}", resp.status),
            ));
        }
        let doc: serde_json::Value = serde_json::from_slice(&resp.body).unwrap_or_default();
        let token = doc
            .get("token")
            .or_else(|| doc.get("access_token"))
            .and_then(|t| t.as_str())
            .ok_or_else(|| {
                auth_error(
                    origin,
                    host_of(&realm),
                    login,
                    "the token service sent no token",
                )
            })?
            .to_string();
        if let Ok(mut t) = self.tokens.lock() {
            t.insert(url, token.clone());
        }
        Ok(token)
    }

    fn once(
        &self,
        method: &str,
        url: &str,
        accept: &str,
        body: Option<(&str, &[u8])>,
        auth: Option<&str>,
        origin: &Origin,
    ) -> Result<Raw, SourceError> {
        let unreachable = |e: ureq::Error| match e {
            ureq::Error::Timeout(_) => SourceError::Timeout {
                origin: Box::new(origin.clone()),
                what: format!("the request to {}", kiln_base::url::redact(url)),
                timeout: crate::error::go_duration(self.limits.timeout),
                help: crate::error::SILENCE_TIMEOUT,
            },
            e => SourceError::Unreachable {
                origin: Box::new(origin.clone()),
                detail: kiln_base::url::redact(&e.to_string()),
            },
        };
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(url)
            .header("Accept", accept);
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        let result = match body {
            Some((ctype, data)) => {
                let req = req
                    .header("Content-Type", ctype)
                    .body(data.to_vec())
                    .map_err(|e| bad_url(origin, e))?;
                self.agent.run(req)
            }
            None => {
                let req = req.body(()).map_err(|e| bad_url(origin, e))?;
                self.agent.run(req)
            }
        };
        let mut resp = result.map_err(unreachable)?;
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let status = resp.status().as_u16();
        let content_type = header("content-type").unwrap_or_default();
        let docker_digest = header("docker-content-digest");
        let location = header("location");
        let www_authenticate = header("www-authenticate");
        let close_delimited =
            header("content-length").is_none() && header("transfer-encoding").is_none();
        let max = self.limits.max_bytes;
        let mut body = Vec::new();
        resp.body_mut()
            .as_reader()
            .take(max + 1)
            .read_to_end(&mut body)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => SourceError::Timeout {
                    origin: Box::new(origin.clone()),
                    what: format!("the answer from {}", kiln_base::url::redact(url)),
                    timeout: crate::error::go_duration(self.limits.timeout),
                    help: crate::error::SILENCE_TIMEOUT,
                },
                _ => SourceError::Unreachable {
                    origin: Box::new(origin.clone()),
                    detail: format!("the answer broke off: {e}"),
                },
            })?;
        if body.len() as u64 > max {
            return Err(self.limits.too_large(
                origin,
                format!("the answer from {}", kiln_base::url::redact(url)),
                Which::Bytes,
            ));
        }
        Ok(Raw {
            resp: Response {
                status,
                content_type,
                docker_digest,
                location,
                body,
                close_delimited,
            },
            www_authenticate,
        })
    }
}

/// A response and its challenge.
struct Raw {
    resp: Response,
    www_authenticate: Option<String>,
}

impl std::ops::Deref for Raw {
    type Target = Response;
    fn deref(&self) -> &Response {
        &self.resp
    }
}

fn check_denied(raw: Raw, origin: &Origin, login: Option<&Login>) -> Result<Response, SourceError> {
    if raw.status == 403 {
        let host = host_of(&origin.url).to_string();
        return Err(auth_error(
            origin,
            &host,
            login,
            "the server denies access (403)",
        ));
    }
    Ok(raw.resp)
}

fn bad_url(origin: &Origin, e: impl std::fmt::Display) -> SourceError {
    SourceError::BadResponse {
        origin: Box::new(origin.clone()),
        detail: format!("not a URL kiln can request: {e}"),
        help: "check the URL".into(),
    }
}

fn auth_error(origin: &Origin, host: &str, login: Option<&Login>, what: &str) -> SourceError {
    let who = match login {
        Some(l) => format!(" (as `{}`)", l.username),
        None => format!(" (anonymously; no credentials for `{host}`)"),
    };
    SourceError::Auth {
        origin: Box::new(origin.clone()),
        detail: format!("{what}{who}"),
        help: crate::error::REGISTRY_CREDENTIALS.into(),
    }
}

fn basic(login: &Login) -> String {
    let raw = format!("{}:{}", login.username, login.password);
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(raw)
    )
}

/// The `key="value"` pairs of a `WWW-Authenticate` challenge.
fn challenge_params(challenge: &str) -> BTreeMap<String, String> {
    let rest = challenge.split_once(' ').map_or("", |(_, r)| r);
    let mut out = BTreeMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect::<String>();
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => value.extend(chars.next()),
                    c => value.push(c),
                }
            }
            // Up to the next comma.
            for c in chars.by_ref() {
                if c == ',' {
                    break;
                }
            }
        } else {
            value = chars.by_ref().take_while(|c| *c != ',').collect();
        }
        out.insert(key, value.trim().to_string());
    }
    out
}

fn encode_query(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_as_docker_reads_them() {
        let p = challenge_params(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:charts/web:pull""#,
        );
        assert_eq!(p["realm"], "https://auth.example/token");
        assert_eq!(p["service"], "registry.example");
        assert_eq!(p["scope"], "repository:charts/web:pull");
        assert_eq!(challenge_params(r#"Basic realm="kiln""#)["realm"], "kiln");
    }

    #[test]
    fn credentials_come_from_docker_config_and_variables() {
        let config = r#"{"auths": {"127.0.0.1:5000": {"auth": "YWxpY2U6czNjcmV0"},
            "https://reg.example/v1/": {"username": "bob", "password": "pw"}}}"#;
        let vars = [
            ("KILN_REGISTRY_127_0_0_1_5000", "carol:pw2"),
            ("HOME", "/root"),
        ];
        let c = Credentials::new(Some(config), vars);
        assert_eq!(c.for_host("127.0.0.1:5000").unwrap().username, "carol");
        assert_eq!(c.for_host("reg.example").unwrap().username, "bob");
        let c = Credentials::new(Some(config), []);
        assert_eq!(c.for_host("127.0.0.1:5000").unwrap().password, "s3cret");
        assert!(c.for_host("other.example").is_none());
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn a_token_is_never_shown() {
        let http = Http::new(Credentials::default(), Limits::default());
        http.tokens
            .lock()
            .unwrap()
            .insert("https://auth.example/token".into(), "eyJ.s3cret.sig".into());
        let shown = format!("{http:?}");
        assert!(
            !shown.contains("s3cret") && shown.contains("1 (not shown)"),
            "{shown}"
        );
    }

    #[test]
    fn hosts_and_variables() {
        assert_eq!(
            host_of("https://u:p@charts.example:8443/x/index.yaml"),
            "charts.example:8443"
        );
        assert_eq!(
            variable_for("registry.example.com:5000"),
            "KILN_REGISTRY_REGISTRY_EXAMPLE_COM_5000"
        );
    }
}
