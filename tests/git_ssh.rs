//! ssh remotes end to end (issue 9): `kiln publish` and `kiln verify` against a real `sshd`
//! on 127.0.0.1, authenticating with a key file (`KILN_SSH_KEY`) and with an ssh agent, and
//! refusing a host whose key is not in `~/.ssh/known_hosts`.
//!
//! Needs OpenSSH's `sshd`, `ssh-keygen`, `ssh-agent` and `ssh-add` (Debian: openssh-server).
//! Without them the test says so and passes, unless `REQUIRE_SSHD=1`.
#![allow(clippy::disallowed_methods)] // tests set up trees, daemons and repositories on disk

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd, killed on drop.
struct Sshd {
    child: Child,
    port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tools_present() -> bool {
    let present = Path::new(SSHD).is_file()
        && ["ssh-keygen", "ssh-agent", "ssh-add"].iter().all(|t| {
            Command::new(t)
                .arg("-?")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok()
        });
    if !present {
        assert!(
            std::env::var_os("REQUIRE_SSHD").is_none(),
            "REQUIRE_SSHD is set but OpenSSH's sshd/ssh-keygen/ssh-agent are missing"
        );
        eprintln!("skipping: OpenSSH server tools are not installed (apt install openssh-server)");
    }
    present
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn keygen(path: &Path) {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "kiln-test", "-f"])
        .arg(path));
}

fn user() -> String {
    run(Command::new("id").arg("-un")).trim().to_string()
}

fn start_sshd(dir: &Path, authorized: &Path) -> Sshd {
    let host_key = dir.join("host_key");
    keygen(&host_key);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\n\
             PidFile {}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nStrictModes no\n\
             UsePAM no\nLogLevel ERROR\n",
            host_key.display(),
            authorized.display(),
            dir.join("sshd.pid").display()
        ),
    )
    .unwrap();
    // sshd started as root wants its privilege-separation directory.
    if user() == "root" {
        let _ = std::fs::create_dir_all("/run/sshd");
    }
    let child = Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdout(Stdio::null())
        // Quiet: the readiness probe below makes sshd log a closed connection.
        .stderr(Stdio::null())
        .spawn()
        .expect("sshd starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sshd did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Sshd { child, port }
}

/// An sshd under `dir` admitting one key made for it: the daemon and the key's file.
fn keyed_sshd(dir: &Path) -> (Sshd, PathBuf) {
    let key = dir.join("id_ed25519");
    keygen(&key);
    let authorized = dir.join("authorized_keys");
    std::fs::copy(key.with_extension("pub"), &authorized).unwrap();
    (start_sshd(dir, &authorized), key)
}

/// A home directory whose `known_hosts` knows the daemon's host key (or not).
fn home(dir: &Path, name: &str, sshd: Option<&Sshd>) -> PathBuf {
    let home = dir.join(name);
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    if let Some(sshd) = sshd {
        let key = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
        let mut fields = key.split_whitespace();
        let (kind, blob) = (fields.next().unwrap(), fields.next().unwrap());
        std::fs::write(
            home.join(".ssh/known_hosts"),
            format!("[127.0.0.1]:{} {kind} {blob}\n", sshd.port),
        )
        .unwrap();
    }
    home
}

fn kiln(args: &[&str], home: &Path, env: &[(&str, &Path)]) -> (Option<i32>, String) {
    let mut cmd = crate::support::kiln_command(&crate::support::repo_root());
    cmd.args(args)
        .env("HOME", home)
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("KILN_SSH_KEY")
        .env("GIT_CONFIG_NOSYSTEM", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let run = crate::support::run(&mut cmd);
    (run.code, run.text())
}

fn branch_files(repo: &Path, branch: &str) -> Vec<String> {
    let out =
        run(Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["ls-tree", "-r", "--name-only", branch]));
    out.lines().map(str::to_string).collect()
}

#[test]
fn publish_and_verify_over_ssh_with_key_file_and_agent() {
    if !tools_present() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let (sshd, key) = keyed_sshd(dir);
    let remote = dir.join("remote.git");
    git2::Repository::init_bare(&remote).unwrap();
    let url = format!(
        "ssh://{}@127.0.0.1:{}{}",
        user(),
        sshd.port,
        remote.display()
    );
    let known = home(dir, "home", Some(&sshd));

    // 1. A key file.
    let (code, text) = kiln(
        &[
            "publish",
            "platforms/bank",
            "--repo",
            &url,
            "--branch",
            "main",
        ],
        &known,
        &[("KILN_SSH_KEY", &key)],
    );
    assert_eq!(code, Some(0), "{text}");
    let files = branch_files(&remote, "main");
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("deploy/") && f.ends_with("kustomization.yaml")),
        "{files:?}"
    );
    let (code, text) = kiln(
        &[
            "verify",
            "platforms/bank",
            "--repo",
            &url,
            "--ref",
            "main",
            "--quiet",
        ],
        &known,
        &[("KILN_SSH_KEY", &key)],
    );
    assert_eq!(code, Some(0), "verify over ssh: {text}");

    // 2. The agent, with no key file named.
    let sock = dir.join("agent.sock");
    let mut agent = Command::new("ssh-agent")
        .args(["-D", "-a"])
        .arg(&sock)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sock.exists() {
        assert!(Instant::now() < deadline, "ssh-agent did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    run(Command::new("ssh-add")
        .arg(&key)
        .env("SSH_AUTH_SOCK", &sock)
        .stderr(Stdio::null()));
    let (code, text) = kiln(
        &[
            "publish",
            "platforms/bank",
            "--repo",
            &url,
            "--branch",
            "agent",
        ],
        &known,
        &[("SSH_AUTH_SOCK", &sock)],
    );
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(branch_files(&remote, "agent"), files);

    // 3. A key the server does not accept: an authentication error, nothing pushed.
    let stranger = dir.join("stranger");
    keygen(&stranger);
    let (code, text) = kiln(
        &[
            "publish",
            "platforms/bank",
            "--repo",
            &url,
            "--branch",
            "stranger",
        ],
        &known,
        &[("KILN_SSH_KEY", &stranger)],
    );
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("kiln::git::authentication_failed"), "{text}");

    // 4. An unknown host key: refused, never trusted on first use.
    let unknown = home(dir, "unknown", None);
    let (code, text) = kiln(
        &[
            "publish",
            "platforms/bank",
            "--repo",
            &url,
            "--branch",
            "tofu",
        ],
        &unknown,
        &[("KILN_SSH_KEY", &key)],
    );
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains("kiln::git::remote_unreachable"), "{text}");
    assert!(
        text.contains("known_hosts"),
        "the help names the cause: {text}"
    );
    let refs = run(Command::new("git")
        .arg("-C")
        .arg(&remote)
        .args(["for-each-ref", "--format=%(refname)"]));
    assert_eq!(
        refs.lines().collect::<Vec<_>>(),
        ["refs/heads/agent", "refs/heads/main"]
    );
}

/// Issue 33 item 1 over ssh: a component whose `source.git` is an `ssh://` URL is fetched
/// with the credentials `kiln publish` uses (`KILN_SSH_KEY`, the host in `known_hosts`) and
/// rendered; a key the server refuses is an authentication error naming the source and the
/// component, and nothing is written.
#[test]
fn a_component_source_over_ssh() {
    if !tools_present() {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let (sshd, key) = keyed_sshd(dir);
    let component = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: cart\nspec:\n  generators:\n  - files: [cm.yaml]\n";
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cart\ndata:\n  via: ssh\n";
    kiln_source::testing::app_repo(
        dir,
        "cart.git",
        &[(
            &[("deploy/component.yaml", component), ("deploy/cm.yaml", cm)],
            None,
        )],
    );
    let url = format!(
        "ssh://{}@127.0.0.1:{}{}",
        user(),
        sshd.port,
        dir.join("cart.git").display()
    );
    let work = dir.join("work");
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::fs::create_dir_all(work.join("platform")).unwrap();
    std::fs::write(
        work.join("platform/platform.yaml"),
        format!(
            "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata: {{name: p}}\nspec:\n  clusters: [{{name: c, server: https://c.example.com}}]\n  environments: [{{name: dev, tier: dev, cluster: c}}]\n  projects:\n  - name: shop\n    components:\n    - name: cart\n      source: {{git: \"{url}\", ref: main, path: deploy}}\n"
        ),
    )
    .unwrap();
    let known = home(dir, "home", Some(&sshd));
    let render = |out: &str, key: &Path| {
        let mut cmd = crate::support::kiln_command(&work);
        cmd.args(["render", "platform", "--write-to", out, "--no-cache"])
            .env("HOME", &known)
            .env_remove("SSH_AUTH_SOCK")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("KILN_CACHE_DIR", dir.join("cache"))
            .env("KILN_SSH_KEY", key);
        crate::support::run(&mut cmd)
    };
    let stranger = dir.join("stranger");
    keygen(&stranger);
    let r = render("out", &stranger);
    assert_eq!(r.code, Some(1), "{}", r.text());
    assert!(
        r.text().contains("kiln::source::auth_failed") && r.text().contains("component cart"),
        "{}",
        r.text()
    );
    assert!(!work.join("out").exists() && !work.join("platform/kiln.lock").exists());
    let r = render("out", &key);
    assert_eq!(r.code, Some(0), "{}", r.text());
    let rendered = std::fs::read_to_string(work.join("out/shop/dev/cart/cart.gen.yaml")).unwrap();
    assert!(rendered.contains("via: ssh"), "{rendered}");
    let lock = std::fs::read_to_string(work.join("platform/kiln.lock")).unwrap();
    assert!(lock.contains(&format!("url = \"{url}\"")), "{lock}");
}
