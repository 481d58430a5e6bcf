//! Real servers on 127.0.0.1 for the source tests (issue 33: every fetch path against a real
//! server, never a mock): `git daemon`, git's smart HTTP (`git http-backend` behind
//! `tests/servers.py`), a static Helm chart repository (with or without basic auth), and
//! Debian's `docker-registry` (distribution v2.8), anonymous, with an htpasswd file, or
//! behind a token server of its own ([`token_registry`]); and a TCP server that never
//! answers ([`silent`]).
//! Built only with the `testing` feature (this crate's and the root's tests).
//!
//! A server whose binary is missing makes its test skip with a line on stderr, unless the
//! variable named in tests/README.md (`REQUIRE_REGISTRY=1`) says it must be there.
#![allow(clippy::disallowed_methods)] // test servers: processes, ports, files

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server, killed when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub port: u16,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// `http://127.0.0.1:<port>`.
    pub fn http(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// A TCP port on 127.0.0.1 that nothing listens on now (the servers below, and tests that need
/// an address where nothing answers).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn wait_for_port(port: u16) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the test server on port {port} did not start");
}

/// The repository's `tests/servers.py`.
fn servers_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/servers.py")
}

/// `git daemon` serving every repository under `base` (`git://127.0.0.1:<port>/<name>`).
pub fn git_daemon(base: &Path) -> Server {
    let port = free_port();
    let child = Command::new("git")
        .args([
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
        ])
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", base.display()))
        .arg(base)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("git daemon starts");
    wait_for_port(port);
    Server {
        child,
        port,
        _dir: None,
    }
}

fn python_server(args: &[&str]) -> Server {
    python_server_logged(args, None)
}

fn python_server_logged(args: &[&str], log: Option<&Path>) -> Server {
    match log {
        Some(log) => python_server_env(args, &[("KILN_TEST_REQUEST_LOG", log.as_os_str())]),
        None => python_server_env(args, &[]),
    }
}

fn python_server_env(args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Server {
    let mut cmd = Command::new("python3");
    cmd.envs(env.iter().copied());
    let mut child = cmd
        .arg(servers_py())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 starts tests/servers.py");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the server prints its port");
    let port = line.trim().parse().expect("a port number");
    Server {
        child,
        port,
        _dir: None,
    }
}

/// git's smart HTTP over every repository under `base` (`http://127.0.0.1:<port>/<name>`).
pub fn git_http(base: &Path) -> Server {
    python_server(&["git-http", &base.display().to_string()])
}

/// [`git_http`] behind basic auth for `login` (`user:password`).
pub fn git_http_with_login(base: &Path, login: &str) -> Server {
    python_server(&["git-http", &base.display().to_string(), login])
}

/// [`git_http_with_login`] answering wrong credentials with `403` (none with `401`), as a
/// forge answers a token without access to the repository.
pub fn git_http_denying(base: &Path, login: &str) -> Server {
    python_server_env(
        &["git-http", &base.display().to_string(), login],
        &[("KILN_TEST_DENIED_STATUS", "403".as_ref())],
    )
}

/// [`git_http`], appending each request as `METHOD path` to `log`, so that tests count
/// fetches ([`fetches_in`]).
pub fn git_http_logged(base: &Path, log: &Path) -> Server {
    python_server_logged(&["git-http", &base.display().to_string()], Some(log))
}

/// [`git_http`] answering each fetch (each `POST …/git-upload-pack`) only after `seconds`:
/// a server that lists its refs at once and then stalls.
pub fn git_http_slow(base: &Path, seconds: u32) -> Server {
    let secs = seconds.to_string();
    python_server_env(
        &["git-http", &base.display().to_string()],
        &[("KILN_TEST_SLOW_POST", secs.as_ref())],
    )
}

/// [`git_http`] as `python3 -m http.server --cgi` serves it: HTTP/1.0 answers without a
/// `Content-Length`, each ended by closing the connection.
pub fn git_http_close_delimited(base: &Path) -> Server {
    python_server_env(
        &["git-http", &base.display().to_string()],
        &[("KILN_TEST_CLOSE_DELIMITED", "1".as_ref())],
    )
}

/// How many fetches `log` (of [`git_http_logged`]) records. Listing the refs is a lone
/// `GET …/info/refs`; a fetch is that `GET` followed by one or more `POST
/// …/git-upload-pack` (a shallow fetch negotiates in two), so a fetch is counted at its
/// first `POST`.
pub fn fetches_in(log: &Path) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut fetches = 0;
    let mut last_was_post = false;
    for line in text.lines() {
        let post = line.starts_with("POST ") && line.contains("git-upload-pack");
        if post && !last_was_post {
            fetches += 1;
        }
        last_was_post = post;
    }
    fetches
}

/// Static files under `root`, behind basic auth when `login` (`user:password`) is given.
pub fn static_http(root: &Path, login: Option<&str>) -> Server {
    let root = root.display().to_string();
    match login {
        Some(l) => python_server(&["static", &root, l]),
        None => python_server(&["static", &root]),
    }
}

/// Whether a test needing `binary` runs: `Some(path)` when present; `None` (and a line on
/// stderr) when missing and `require` is unset; a panic when `require` is `1`.
pub fn needed(binary: &str, require: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(binary))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var(require).as_deref() != Ok("1"),
            "{binary} is required ({require}=1) but is not installed"
        );
        eprintln!(
            "skipped: {binary} is not installed (apt-get install {binary}; {require}=1 makes this fail)"
        );
    }
    found
}

/// Debian's `docker-registry` on a loopback port, storing under a fresh directory; with
/// `login` (`user`, `password`), behind an htpasswd file (bcrypt, as distribution requires).
/// `None` when the binary is missing (see [`needed`]).
pub fn registry(login: Option<(&str, &str)>) -> Option<Server> {
    let bin = needed("docker-registry", "REQUIRE_REGISTRY")?;
    let dir = tempfile::tempdir().expect("a directory");
    let auth = match login {
        Some((user, password)) => {
            let hash = bcrypt::hash(password, 4).expect("bcrypt");
            let htpasswd = dir.path().join("htpasswd");
            std::fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("htpasswd");
            format!(
                "auth:\n  htpasswd:\n    realm: kiln-test\n    path: {}\n",
                htpasswd.display()
            )
        }
        None => String::new(),
    };
    Some(start_registry(&bin, dir, &auth))
}

fn start_registry(bin: &Path, dir: tempfile::TempDir, auth: &str) -> Server {
    let port = free_port();
    let config = format!(
        "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n{auth}",
        dir.path().join("data").display()
    );
    let config_path = dir.path().join("config.yml");
    std::fs::write(&config_path, config).expect("config");
    let child = Command::new(bin)
        .arg("serve")
        .arg(&config_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("docker-registry starts");
    wait_for_port(port);
    Server {
        child,
        port,
        _dir: Some(dir),
    }
}

/// Debian's `docker-registry` behind a token server ([`TokenServer`]): its `auth: token:`
/// (distribution v2.8 `registry/auth/token`) trusts the token server's certificate, made at
/// test time, and sends clients to it for a token (Docker's bearer-token exchange).
#[derive(Debug)]
pub struct TokenRegistry {
    pub registry: Server,
    pub tokens: TokenServer,
}

/// Starts a [`TokenRegistry`] whose token server admits `user`:`password`. `None` when
/// docker-registry is missing (see [`needed`]).
pub fn token_registry(user: &str, password: &str) -> Option<TokenRegistry> {
    let bin = needed("docker-registry", "REQUIRE_REGISTRY")?;
    let dir = tempfile::tempdir().expect("a directory");
    let tokens = token_server(user, password);
    let bundle = dir.path().join("token-ca.pem");
    std::fs::write(&bundle, &tokens.cert_pem).expect("the certificate bundle");
    let auth = format!(
        "auth:\n  token:\n    realm: http://127.0.0.1:{}/token\n    service: {TOKEN_SERVICE}\n    issuer: {TOKEN_ISSUER}\n    rootcertbundle: {}\n",
        tokens.port,
        bundle.display()
    );
    let registry = start_registry(&bin, dir, &auth);
    Some(TokenRegistry { registry, tokens })
}

const TOKEN_SERVICE: &str = "kiln-test-registry";
const TOKEN_ISSUER: &str = "kiln-test-token-server";

/// A Docker token server on 127.0.0.1 (the protocol of distribution's
/// `docs/spec/auth/token.md`): `GET /token?service=…&scope=…` with basic credentials
/// answers `{"token": …}`, a JWT (ES256) whose header carries the server's certificate
/// (`x5c`) and whose `access` grants the scope asked for; wrong or missing credentials get
/// 401. The key and its self-signed certificate are made when it starts. Every token it
/// issued is kept in `issued`, so that tests can look for them where they must not be.
#[derive(Debug)]
pub struct TokenServer {
    pub port: u16,
    pub cert_pem: String,
    pub issued: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The token server's key as rcgen signs a certificate with it.
struct TokenKey(p256::ecdsa::SigningKey, Vec<u8>);

impl rcgen::PublicKeyData for TokenKey {
    fn der_bytes(&self) -> &[u8] {
        &self.1
    }
    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        &rcgen::PKCS_ECDSA_P256_SHA256
    }
}

impl rcgen::SigningKey for TokenKey {
    fn sign(&self, msg: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        use p256::ecdsa::signature::Signer;
        let sig: p256::ecdsa::Signature = self.0.sign(msg);
        Ok(sig.to_der().as_bytes().to_vec())
    }
}

fn token_server(user: &str, password: &str) -> TokenServer {
    use rand_chacha::rand_core::SeedableRng;
    // The key's seed and the certificate's serial, apart.
    let mut entropy = [0u8; 48];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").expect("/dev/urandom"),
        &mut entropy,
    )
    .expect("entropy");
    let (seed, serial) = entropy.split_at(32);
    let seed: [u8; 32] = seed.try_into().expect("32 bytes");
    let signing = p256::ecdsa::SigningKey::random(&mut rand_chacha::ChaCha20Rng::from_seed(seed));
    let public = signing
        .verifying_key()
        .to_encoded_point(false)
        .as_bytes()
        .to_vec();
    let key = TokenKey(signing, public);
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, TOKEN_ISSUER);
    params.serial_number = Some(rcgen::SerialNumber::from_slice(serial));
    params.not_before = rcgen::date_time_ymd(2000, 1, 1);
    params.not_after = rcgen::date_time_ymd(9999, 12, 31);
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    let cert = params.self_signed(&key).expect("a certificate");
    let x5c = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, cert.der());
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("an address").port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let issued = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{user}:{password}")
        )
    );
    let (flag, log, user) = (stop.clone(), issued.clone(), user.to_string());
    let thread = std::thread::spawn(move || {
        for conn in listener.incoming() {
            if flag.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
            let Some((target, authorization)) = read_request(&mut conn) else {
                continue;
            };
            let answer = if authorization.as_deref() != Some(basic.as_str()) {
                "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"kiln-test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
            } else {
                let token = issue(&key.0, &x5c, &user, &target);
                if let Ok(mut l) = log.lock() {
                    l.push(token.clone());
                }
                let body = format!("{{\"token\":\"{token}\",\"access_token\":\"{token}\"}}");
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            };
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    TokenServer {
        port,
        cert_pem: cert.pem(),
        issued,
        stop,
        thread: Some(thread),
    }
}

/// The request line's target and the `Authorization` header of one HTTP request.
fn read_request(conn: &mut std::net::TcpStream) -> Option<(String, Option<String>)> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let target = line.split_whitespace().nth(1)?.to_string();
    let mut authorization = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':')
            && name.eq_ignore_ascii_case("authorization")
        {
            authorization = Some(value.trim().to_string());
        }
    }
    Some((target, authorization))
}

/// A token for `/token?service=…&scope=…`: the scope's actions granted on its repository.
fn issue(key: &p256::ecdsa::SigningKey, x5c: &str, user: &str, target: &str) -> String {
    use base64::Engine;
    use p256::ecdsa::signature::Signer;
    let query = target.split_once('?').map_or("", |(_, q)| q);
    let param = |k: &str| {
        query
            .split('&')
            .filter_map(|p| p.split_once('='))
            .find(|(name, _)| *name == k)
            .map(|(_, v)| percent_decode(v))
            .unwrap_or_default()
    };
    let access: Vec<serde_json::Value> = param("scope")
        .split(' ')
        .filter_map(|s| {
            let (kind, rest) = s.split_once(':')?;
            let (name, actions) = rest.rsplit_once(':')?;
            Some(serde_json::json!({"type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>()}))
        })
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let header = serde_json::json!({"typ": "JWT", "alg": "ES256", "x5c": [x5c]});
    let claims = serde_json::json!({
        "iss": TOKEN_ISSUER, "sub": user, "aud": param("service"),
        "exp": now + 300, "nbf": now.saturating_sub(10), "iat": now,
        "jti": format!("{now}-{}", access.len()), "access": access,
    });
    let signed = format!("{}.{}", b64(&header), b64(&claims));
    let sig: p256::ecdsa::Signature = key.sign(signed.as_bytes());
    format!(
        "{signed}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sig.to_bytes())
    )
}

fn percent_decode(s: &str) -> String {
    let mut out = Vec::new();
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'%' => {
                let hex: String = bytes.by_ref().take(2).map(char::from).collect();
                out.extend(u8::from_str_radix(&hex, 16).ok());
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `git` in `dir`, panicking on failure; stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=kiln",
            "-c",
            "user.email=kiln@test",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The files of one commit (path → content), and the tag it gets.
pub type Commit<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);

/// A bare repository `<base>/<name>` holding one commit per entry of `commits` (files as
/// path → content), each tagged when a tag is given; returns the commit ids.
pub fn app_repo(base: &Path, name: &str, commits: &[Commit<'_>]) -> Vec<String> {
    let work = tempfile::tempdir().expect("a directory");
    git(work.path(), &["init", "-q"]);
    let mut ids = Vec::new();
    for (files, tag) in commits {
        write_files(work.path(), files);
        git(work.path(), &["add", "-A"]);
        git(work.path(), &["commit", "-q", "-m", "change"]);
        if let Some(t) = tag {
            git(work.path(), &["tag", "-a", t, "-m", t]);
        }
        ids.push(git(work.path(), &["rev-parse", "HEAD"]));
    }
    bare_clone(base, name, work.path());
    ids
}

/// Writes `files` (path → content) under `dir`.
fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("dirs");
        std::fs::write(&p, text).expect("write");
    }
}

/// `<base>/<name>`: a bare clone of the repository in `work`, replacing any before it.
fn bare_clone(base: &Path, name: &str, work: &Path) {
    let bare = base.join(name);
    if bare.exists() {
        std::fs::remove_dir_all(&bare).expect("remove");
    }
    let (work, bare_dir) = (work.display().to_string(), bare.display().to_string());
    git(base, &["clone", "-q", "--bare", &work, &bare_dir]);
    // Smart HTTP needs the server-side hooks' info; git daemon serves as is.
    git(&bare, &["update-server-info"]);
}

/// One commit of [`repo_with_submodules`]: its files (path → content) and its submodules
/// (path, URL as `.gitmodules` writes it, commit).
pub type SuperCommit<'a> = (&'a [(&'a str, &'a str)], &'a [(&'a str, &'a str, &'a str)]);

/// A bare repository `<base>/<name>` of one commit per entry of `commits`, each with its
/// files and its submodules as `git submodule add` leaves them (a `.gitmodules` entry and a
/// gitlink), without cloning them; returns the commit ids.
pub fn repo_with_submodules(base: &Path, name: &str, commits: &[SuperCommit<'_>]) -> Vec<String> {
    let work = tempfile::tempdir().expect("a directory");
    git(work.path(), &["init", "-q"]);
    let mut ids = Vec::new();
    for (files, links) in commits {
        write_files(work.path(), files);
        let mut modules = String::new();
        for (path, url, _) in *links {
            modules.push_str(&format!(
                "[submodule \"{path}\"]\n\tpath = {path}\n\turl = {url}\n"
            ));
        }
        std::fs::write(work.path().join(".gitmodules"), modules).expect("write");
        git(work.path(), &["add", "-A"]);
        for (path, _, commit) in *links {
            let info = format!("160000,{commit},{path}");
            git(
                work.path(),
                &["update-index", "--add", "--cacheinfo", info.as_str()],
            );
        }
        git(work.path(), &["commit", "-q", "-m", "change"]);
        ids.push(git(work.path(), &["rev-parse", "HEAD"]));
    }
    bare_clone(base, name, work.path());
    ids
}

/// A TCP server on 127.0.0.1 that accepts every connection and never answers (a server
/// that hangs); the connections close when it is dropped.
#[derive(Debug)]
pub struct Silent {
    pub port: u16,
    /// How many connections it has taken.
    pub accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a [`Silent`] server.
pub fn silent() -> Silent {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("an address").port();
    listener.set_nonblocking(true).expect("non-blocking");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    let thread = std::thread::spawn(move || {
        let mut held = Vec::new();
        // Bounded: it stops when dropped, and after ten minutes whatever happens.
        let start = Instant::now();
        while !flag.load(std::sync::atomic::Ordering::Relaxed)
            && start.elapsed() < Duration::from_secs(600)
        {
            match listener.accept() {
                Ok((conn, _)) => {
                    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    held.push(conn)
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    Silent {
        port,
        accepted,
        stop,
        thread: Some(thread),
    }
}

/// A packaged chart: `<name>/Chart.yaml` with `version`, and `files` (path → content) under
/// `<name>/`, as `helm package` lays it out.
pub fn chart_tgz(name: &str, version: &str, files: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let chart_yaml = format!("apiVersion: v2\nname: {name}\nversion: {version}\n");
    let mut all: Vec<(String, &str)> = vec![(format!("{name}/Chart.yaml"), chart_yaml.as_str())];
    all.extend(files.iter().map(|(p, t)| (format!("{name}/{p}"), *t)));
    for (path, text) in &all {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        b.append_data(&mut h, path, text.as_bytes()).expect("tar");
    }
    let tar = b.into_inner().expect("tar");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).expect("gzip");
    gz.finish().expect("gzip")
}

/// A static Helm repository under `root`: each chart archive written as
/// `<name>-<version>.tgz` and listed in `index.yaml` with its digest.
pub fn helm_repo(root: &Path, charts: &[(&str, &str, Vec<u8>)]) {
    let mut index = String::from("apiVersion: v1\nentries:\n");
    let mut names: Vec<&str> = charts.iter().map(|c| c.0).collect();
    names.dedup();
    for name in names {
        index.push_str(&format!("  {name}:\n"));
        for (n, version, data) in charts.iter().filter(|c| c.0 == name) {
            let file = format!("{n}-{version}.tgz");
            std::fs::write(root.join(&file), data).expect("write");
            index.push_str(&format!(
                "  - name: {n}\n    version: {version}\n    digest: {}\n    urls:\n    - {file}\n",
                kiln_base::digest::sha256_hex(data)
            ));
        }
    }
    std::fs::write(root.join("index.yaml"), index).expect("index");
}
