//! Real servers on 127.0.0.1 for the source tests (issue 33: every fetch path against a real
//! server, never a mock): `git daemon`, git's smart HTTP (`git http-backend` behind
//! `tests/servers.py`), a static Helm chart repository (with or without basic auth), and
//! Debian's `docker-registry` (distribution v2.8), anonymous or with an htpasswd file.
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
    let port = free_port();
    let mut config = format!(
        "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
        dir.path().join("data").display()
    );
    if let Some((user, password)) = login {
        let hash = bcrypt::hash(password, 4).expect("bcrypt");
        let htpasswd = dir.path().join("htpasswd");
        std::fs::write(&htpasswd, format!("{user}:{hash}\n")).expect("htpasswd");
        config.push_str(&format!(
            "auth:\n  htpasswd:\n    realm: kiln-test\n    path: {}\n",
            htpasswd.display()
        ));
    }
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
    Some(Server {
        child,
        port,
        _dir: Some(dir),
    })
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
    let thread = std::thread::spawn(move || {
        let mut held = Vec::new();
        // Bounded: it stops when dropped, and after ten minutes whatever happens.
        let start = Instant::now();
        while !flag.load(std::sync::atomic::Ordering::Relaxed)
            && start.elapsed() < Duration::from_secs(600)
        {
            match listener.accept() {
                Ok((conn, _)) => held.push(conn),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    });
    Silent {
        port,
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
