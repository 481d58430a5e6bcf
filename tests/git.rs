//! Git publishing and audit (issue 5), end to end: real repositories in temporary directories,
//! written by kiln through git2 and read back with the `git` CLI (a missing `git` binary is a
//! failure, not a skip).
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};

use crate::support::{git, git_cmd};
use kiln::artifact::ArtifactSet;
use kiln::git::{
    self, Against, CommitTime, GitError, HistoryFilter, Identity, MARKER_FILE, Provenance,
    PublishOptions, RemoteAuth, SplitMode,
};
use miette::Diagnostic;

// ---------------------------------------------------------------------------------------------
// builders

const T0: i64 = 1_700_000_000; // 2023-11-14T22:13:20Z

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        Self { _dir: dir, root }
    }

    /// A bare repository at `<root>/<name>`.
    fn bare(&self, name: &str) -> PathBuf {
        git(&self.root, &["init", "-q", "--bare", name]);
        self.root.join(name)
    }

    /// A non-bare repository at `<root>/<name>` with `main` unborn.
    fn work(&self, name: &str) -> PathBuf {
        git(&self.root, &["init", "-q", name]);
        self.root.join(name)
    }

    fn clone(&self, from: &Path, name: &str) -> PathBuf {
        git(&self.root, &["clone", "-q", from.to_str().unwrap(), name]);
        self.root.join(name)
    }
}

fn options(repo: &Path, seconds: i64) -> PublishOptions {
    let mut o = PublishOptions::new(
        repo.display().to_string(),
        "main",
        Identity {
            name: "kiln bot".into(),
            email: "kiln@example.com".into(),
        },
        CommitTime {
            seconds,
            offset_minutes: 60,
        },
        Provenance {
            source_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            kiln_version: "0.1.0".into(),
            spec_digest: Some(git::spec_digest(b"platform: bank")),
            sources: Vec::new(),
        },
    );
    o.auth = RemoteAuth::default();
    o
}

fn kustomization(component: &str, image: &str, tag: &str) -> String {
    format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- {component}.gen.yaml\nimages:\n- name: {image}\n  newTag: \"{tag}\"\n"
    )
}

fn deployment(namespace: &str, name: &str, image: &str, replicas: u32) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  ports:\n  - port: 80\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  replicas: {replicas}\n  template:\n    spec:\n      containers:\n      - image: {image}\n        name: {name}\n"
    )
}

/// A hand-built render of project `shop`: components × environments with image tags, plus
/// Kargo and Argo CD bundles.
fn render(components: &[(&str, &str, &str)]) -> ArtifactSet {
    let mut set = ArtifactSet::new();
    for (env, component, tag) in components {
        let image = format!("ghcr.io/acme/{component}");
        let dir = format!("shop/{env}/{component}");
        set.insert(
            format!("{dir}/kustomization.yaml"),
            kustomization(component, &image, tag),
        );
        set.insert(
            format!("{dir}/{component}.gen.yaml"),
            deployment(&format!("shop-{env}"), component, &image, 1),
        );
    }
    set.insert(
        "shop/kargo/warehouse.yaml",
        "apiVersion: kargo.akuity.io/v1alpha1\nkind: Warehouse\nmetadata:\n  name: shop\n  namespace: shop\n",
    );
    set.insert(
        "shop/argocd/applications.yaml",
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop-dev-api\n  namespace: argocd\n",
    );
    set
}

fn code(e: &GitError) -> String {
    e.code().map(|c| c.to_string()).unwrap_or_default()
}

/// Everything observable about a repository's state: refs, and for non-bare ones the index
/// and working tree status.
fn snapshot(repo: &Path) -> String {
    let mut s = git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    if !Path::new(repo).join(".git").exists() {
        return s;
    }
    s.push_str(&git(
        repo,
        &["status", "--porcelain", "--untracked-files=all"],
    ));
    s.push_str(&git(repo, &["ls-files", "-s"]));
    s
}

// ---------------------------------------------------------------------------------------------
// publish

#[test]
fn first_publish_creates_one_commit_with_the_whole_tree() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let set = render(&[("dev", "api", "1.0.0"), ("prod", "api", "0.9.0")]);
    let outcome = git::publish(&set, &options(&remote, T0)).unwrap();

    let commit = outcome.commit.clone().expect("a commit");
    assert_eq!(git(&remote, &["rev-parse", "main"]).trim(), commit);
    assert_eq!(git(&remote, &["rev-list", "--count", "main"]).trim(), "1");
    let mut expected: Vec<String> = set.paths().map(str::to_string).collect();
    expected.push(MARKER_FILE.to_string());
    expected.sort();
    assert_eq!(
        lines(&git(&remote, &["ls-tree", "-r", "--name-only", "main"])),
        expected
    );
    for (path, bytes) in &set.files {
        assert_eq!(
            git(&remote, &["show", &format!("main:{path}")]).as_bytes(),
            bytes.as_slice(),
            "{path}"
        );
    }
    // The marker lists exactly the generated files.
    let marker: serde_json::Value =
        serde_json::from_str(&git(&remote, &["show", &format!("main:{MARKER_FILE}")])).unwrap();
    let listed: Vec<&str> = marker["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, set.paths().collect::<Vec<_>>());

    // Author, time and the trailers, as git itself reads them.
    assert_eq!(
        git(
            &remote,
            &["log", "-1", "--format=%an <%ae> %at %ai", "main"]
        )
        .trim(),
        format!("kiln bot <kiln@example.com> {T0} 2023-11-14 23:13:20 +0100")
    );
    let subject = git(&remote, &["log", "-1", "--format=%s", "main"]);
    assert_eq!(
        subject.trim(),
        "kiln: add api (dev, prod); add argocd (shop); add kargo (shop)"
    );
    let trailers = git(
        &remote,
        &["log", "-1", "--format=%(trailers:only,unfold)", "main"],
    );
    let trailers: Vec<&str> = trailers.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(
        trailers,
        [
            "Kiln-Source-Commit: 0123456789abcdef0123456789abcdef01234567",
            "Kiln-Version: 0.1.0",
            &format!("Kiln-Spec-Digest: {}", git::spec_digest(b"platform: bank")),
            "Kiln-Change: added component shop/dev/api",
            "Kiln-Change: added component shop/prod/api",
            "Kiln-Change: added kargo shop",
            "Kiln-Change: added argocd shop",
            "Kiln-Images: shop/dev/api ghcr.io/acme/api:1.0.0",
            "Kiln-Images: shop/prod/api ghcr.io/acme/api:0.9.0",
        ]
    );
    assert_eq!(outcome.files.added, set.len());
    assert_eq!(outcome.parent, None);
    git(&remote, &["fsck", "--strict"]);
}

#[test]
fn identical_input_makes_no_second_commit() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let set = render(&[("dev", "api", "1.0.0")]);
    let first = git::publish(&set, &options(&remote, T0)).unwrap();
    // A later clock and another kiln version must not matter: the tree is what counts.
    let mut later = options(&remote, T0 + 3600);
    later.provenance.kiln_version = "0.2.0".into();
    let second = git::publish(&set, &later).unwrap();
    assert_eq!(second.commit, None);
    assert_eq!(second.parent, first.commit);
    assert_eq!(git(&remote, &["rev-list", "--count", "main"]).trim(), "1");
    assert!(second.to_string().contains("no new commit"));
}

#[test]
fn prunes_only_its_own_files() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let v1 = render(&[("dev", "api", "1.0.0"), ("dev", "worker", "2.0.0")]);
    git::publish(&v1, &options(&remote, T0)).unwrap();

    // Someone adds their own files, inside and outside kiln's directories.
    let work = fx.clone(&remote, "work");
    std::fs::write(work.join("README.md"), "hand-written\n").unwrap();
    std::fs::write(work.join("shop/dev/worker/NOTES.md"), "mine\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "notes"]);
    git(&work, &["push", "-q", "origin", "main"]);

    // The worker is no longer rendered; the api gets a new tag.
    let v2 = render(&[("dev", "api", "1.1.0")]);
    let outcome = git::publish(&v2, &options(&remote, T0 + 60)).unwrap();
    assert_eq!(outcome.files.removed, 2);
    assert_eq!(outcome.files.changed, 1);
    let tree = git(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    let tree = lines(&tree);
    assert!(tree.contains(&"README.md"));
    assert!(tree.contains(&"shop/dev/worker/NOTES.md"));
    assert!(!tree.contains(&"shop/dev/worker/worker.gen.yaml"));
    assert!(!tree.contains(&"shop/dev/worker/kustomization.yaml"));
    assert_eq!(git(&remote, &["show", "main:README.md"]), "hand-written\n");
    let subject = git(&remote, &["log", "-1", "--format=%s", "main"]);
    assert_eq!(
        subject.trim(),
        "kiln: update api (dev); remove worker (dev)"
    );
    let body = git(&remote, &["log", "-1", "--format=%b", "main"]);
    assert!(
        body.contains("Kiln-Change: removed component shop/dev/worker"),
        "{body}"
    );
    assert!(
        body.contains("Kiln-Change: changed component shop/dev/api"),
        "{body}"
    );
    assert!(
        body.contains("Kiln-Images: shop/dev/api ghcr.io/acme/api:1.1.0"),
        "{body}"
    );

    // A directory emptied by pruning disappears.
    let v3 = ArtifactSet::new();
    git::publish(&v3, &options(&remote, T0 + 120)).unwrap();
    let tree = git(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert_eq!(
        lines(&tree),
        [MARKER_FILE, "README.md", "shop/dev/worker/NOTES.md"]
    );
}

#[test]
fn refuses_an_unmanaged_branch_unless_adopting() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let work = fx.clone(&remote, "work");
    std::fs::create_dir_all(work.join("shop/dev/api")).unwrap();
    std::fs::write(work.join("shop/dev/api/kustomization.yaml"), "old: true\n").unwrap();
    std::fs::write(work.join("README.md"), "hand-written\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "hand-made deploy repo"]);
    git(&work, &["push", "-q", "origin", "main"]);
    let before = snapshot(&remote);

    let set = render(&[("dev", "api", "1.0.0")]);
    let err = git::publish(&set, &options(&remote, T0)).unwrap_err();
    assert_eq!(code(&err), "kiln::git::unmanaged_path", "{err}");
    assert!(err.help().unwrap().to_string().contains("--adopt"));
    assert_eq!(
        snapshot(&remote),
        before,
        "a refused publish changes nothing"
    );

    let mut adopt = options(&remote, T0);
    adopt.adopt = true;
    let outcome = git::publish(&set, &adopt).unwrap();
    assert!(outcome.commit.is_some());
    // The adopted kustomization existed (with other content): the api is updated, not added.
    assert_eq!(
        git(&remote, &["log", "-1", "--format=%s", "main"]).trim(),
        "kiln: add argocd (shop); add kargo (shop); update api (dev)"
    );
    assert_eq!(git(&remote, &["show", "main:README.md"]), "hand-written\n");
    assert_eq!(
        git(&remote, &["show", "main:shop/dev/api/kustomization.yaml"]),
        kustomization("api", "ghcr.io/acme/api", "1.0.0")
    );
    // From now on the path is managed: a plain publish works.
    let v2 = render(&[("dev", "api", "1.0.1")]);
    assert!(
        git::publish(&v2, &options(&remote, T0 + 1))
            .unwrap()
            .commit
            .is_some()
    );
}

#[test]
fn never_overwrites_a_file_it_did_not_write() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    git::publish(&render(&[("dev", "api", "1")]), &options(&remote, T0)).unwrap();
    // A hand-written file appears exactly where a new component will be rendered.
    let work = fx.clone(&remote, "work");
    std::fs::create_dir_all(work.join("shop/prod/api")).unwrap();
    std::fs::write(work.join("shop/prod/api/api.gen.yaml"), "hand: true\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "hand file"]);
    git(&work, &["push", "-q", "origin", "main"]);
    let before = snapshot(&remote);

    let set = render(&[("dev", "api", "1"), ("prod", "api", "1")]);
    let err = git::publish(&set, &options(&remote, T0 + 1)).unwrap_err();
    assert_eq!(code(&err), "kiln::git::unowned_file_in_the_way", "{err}");
    assert!(
        err.to_string().contains("shop/prod/api/api.gen.yaml"),
        "{err}"
    );
    assert_eq!(snapshot(&remote), before);
}

#[test]
fn publishes_into_a_sub_path_and_leaves_the_rest_alone() {
    let fx = Fixture::new();
    let remote = fx.bare("cluster.git");
    let work = fx.clone(&remote, "work");
    std::fs::create_dir_all(work.join("infra")).unwrap();
    std::fs::write(work.join("infra/cilium.yaml"), "kind: X\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "infra"]);
    git(&work, &["push", "-q", "origin", "main"]);

    let mut o = options(&remote, T0);
    o.path = Some("apps/shop/".into());
    // The root has unmanaged files, but the sub-path is new: no adoption needed.
    git::publish(&render(&[("dev", "api", "1")]), &o).unwrap();
    let tree = git(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(lines(&tree).contains(&"infra/cilium.yaml"));
    assert!(lines(&tree).contains(&format!("apps/shop/{MARKER_FILE}").as_str()));
    assert!(lines(&tree).contains(&"apps/shop/shop/dev/api/kustomization.yaml"));
    // Root-level publishing would still be refused.
    let err = git::publish(&render(&[("dev", "api", "1")]), &options(&remote, T0)).unwrap_err();
    assert_eq!(code(&err), "kiln::git::unmanaged_path");
}

#[test]
fn publishes_over_file_url_to_a_bare_remote() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let url = format!("file://{}", remote.display());
    let mut o = options(&remote, T0);
    o.repo = url.clone();
    o.branch = "stage/dev".into();
    let outcome = git::publish(&render(&[("dev", "api", "1")]), &o).unwrap();
    let clone = fx.clone(&remote, "check");
    git(&clone, &["checkout", "-q", "stage/dev"]);
    assert_eq!(
        std::fs::read_to_string(clone.join("shop/dev/api/kustomization.yaml")).unwrap(),
        kustomization("api", "ghcr.io/acme/api", "1")
    );
    assert_eq!(
        git(&clone, &["rev-parse", "HEAD"]).trim(),
        outcome.commit.unwrap()
    );
}

#[test]
fn checked_out_branch_gets_its_working_tree_updated() {
    let fx = Fixture::new();
    let repo = fx.work("out");
    std::fs::write(repo.join("untracked.txt"), "keep me\n").unwrap();
    let v1 = render(&[("dev", "api", "1"), ("dev", "worker", "1")]);
    let mut o = options(&repo, T0);
    o.path = Some("rendered".into());
    git::publish(&v1, &o).unwrap();
    // Working tree and index follow the branch; untracked files stay.
    assert_eq!(
        git(&repo, &["status", "--porcelain"]).trim(),
        "?? untracked.txt"
    );
    assert!(
        repo.join("rendered/shop/dev/worker/worker.gen.yaml")
            .is_file()
    );

    let v2 = render(&[("dev", "api", "2")]);
    let mut o2 = options(&repo, T0 + 1);
    o2.path = o.path.clone();
    git::publish(&v2, &o2).unwrap();
    assert_eq!(
        git(&repo, &["status", "--porcelain"]).trim(),
        "?? untracked.txt"
    );
    assert!(!repo.join("rendered/shop/dev/worker").exists());
    assert_eq!(
        std::fs::read_to_string(repo.join("rendered/shop/dev/api/kustomization.yaml")).unwrap(),
        kustomization("api", "ghcr.io/acme/api", "2")
    );

    // A local edit to a file kiln must rewrite: refuse, change nothing.
    std::fs::write(
        repo.join("rendered/shop/dev/api/kustomization.yaml"),
        "edited: true\n",
    )
    .unwrap();
    let before = snapshot(&repo);
    let mut o3 = options(&repo, T0 + 2);
    o3.path = o.path.clone();
    let err = git::publish(&render(&[("dev", "api", "3")]), &o3).unwrap_err();
    assert_eq!(code(&err), "kiln::git::working_tree_conflict", "{err}");
    assert_eq!(snapshot(&repo), before);
}

/// Publishers racing into one bare remote, from its very first commit: each round starts
/// from an empty repository, where they race to create the branch (libgit2 checks for an
/// existing ref before taking its lock, so creating it unguarded let a second creator
/// overwrite the first: a lost commit, seen once in CI under load).
#[test]
fn concurrent_local_publishers_lose_nothing() {
    let fx = Fixture::new();
    for round in 0..6 {
        let remote = fx.bare(&format!("deploy{round}.git"));
        race_publishers(&remote, 6);
    }
}

fn race_publishers(remote: &Path, publishers: usize) {
    let url = format!("file://{}", remote.display());
    let barrier = Arc::new(Barrier::new(publishers));
    let handles: Vec<_> = (0..publishers)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            let mut o = options(remote, T0 + i as i64);
            o.repo = url.clone();
            o.path = Some(format!("team{i}"));
            // Each rejected round has a winner, so `publishers` attempts always suffice; the
            // default (5) is for CI, where fewer publishers race.
            o.max_attempts = publishers as u32 + 1;
            std::thread::spawn(move || {
                let set = render(&[("dev", "api", &format!("{i}.0.0"))]);
                barrier.wait();
                git::publish(&set, &o)
            })
        })
        .collect();
    for h in handles {
        let outcome = h.join().unwrap().unwrap();
        assert!(outcome.commit.is_some());
    }
    assert_eq!(
        git(remote, &["rev-list", "--count", "main"]).trim(),
        publishers.to_string()
    );
    for i in 0..publishers {
        assert_eq!(
            git(
                remote,
                &[
                    "show",
                    &format!("main:team{i}/shop/dev/api/kustomization.yaml")
                ]
            ),
            kustomization("api", "ghcr.io/acme/api", &format!("{i}.0.0"))
        );
    }
    git(remote, &["fsck", "--strict"]);
}

/// Not a test: the body of one publisher process for
/// `concurrent_publisher_processes_lose_nothing`, which runs this binary again with
/// `--exact --ignored` and the `KILN_TEST_PUBLISH_*` variables. Without them it does nothing.
#[test]
#[ignore = "helper process for concurrent_publisher_processes_lose_nothing"]
fn publisher_process() {
    let (Ok(repo), Ok(path), Ok(tag)) = (
        std::env::var("KILN_TEST_PUBLISH_REPO"),
        std::env::var("KILN_TEST_PUBLISH_PATH"),
        std::env::var("KILN_TEST_PUBLISH_TAG"),
    ) else {
        return;
    };
    let mut o = options(Path::new("."), T0);
    o.repo = repo;
    o.path = Some(path);
    let outcome = git::publish(&render(&[("dev", "api", &tag)]), &o).unwrap();
    assert!(outcome.commit.is_some());
}

#[test]
fn concurrent_publisher_processes_lose_nothing() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let url = format!("file://{}", remote.display());
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..3)
        .map(|i| {
            Command::new(&exe)
                .args(["--exact", "git::publisher_process", "--ignored", "--quiet"])
                .env("KILN_TEST_PUBLISH_REPO", &url)
                .env("KILN_TEST_PUBLISH_PATH", format!("proc{i}"))
                .env("KILN_TEST_PUBLISH_TAG", format!("{i}.0.0"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(git(&remote, &["rev-list", "--count", "main"]).trim(), "3");
    for i in 0..3 {
        assert_eq!(
            git(
                &remote,
                &[
                    "show",
                    &format!("main:proc{i}/shop/dev/api/kustomization.yaml")
                ]
            ),
            kustomization("api", "ghcr.io/acme/api", &format!("{i}.0.0"))
        );
    }
}

/// A `git daemon` serving `base` over git:// with push enabled; killed on drop.
struct Daemon {
    child: std::process::Child,
    port: u16,
}

impl Daemon {
    fn start(base: &Path) -> Self {
        // Pick a free port, then hand it to the daemon.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = git_cmd(base)
            .args([
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", base.display()),
                &base.display().to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("`git daemon` is needed by this test");
        // Owned by `Self` from here on, so a failed start still kills and reaps it.
        let daemon = Self { child, port };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return daemon;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("git daemon did not start on port {port}");
    }

    fn url(&self, repo: &str) -> String {
        format!("git://127.0.0.1:{}/{repo}", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn network_remote_push_and_concurrent_publishers() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let daemon = Daemon::start(&fx.root);
    let url = daemon.url("deploy.git");

    // A plain push into an empty remote, then an idempotent re-run.
    let mut o = options(&remote, T0);
    o.repo = url.clone();
    let set = render(&[("dev", "api", "1")]);
    let first = git::publish(&set, &o).unwrap();
    assert_eq!(
        git(&remote, &["rev-parse", "main"]).trim(),
        first.commit.clone().unwrap()
    );
    assert_eq!(git::publish(&set, &o).unwrap().commit, None);

    // Two publishers at once, each owning its own path: the loser of the race is rejected
    // by the server (never forced), re-applies on the new tip and pushes again.
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|i| {
            let barrier = Arc::clone(&barrier);
            let mut o = options(&remote, T0 + 10 + i as i64);
            o.repo = url.clone();
            o.path = Some(format!("team{i}"));
            std::thread::spawn(move || {
                let set = render(&[("prod", "api", &format!("{i}.1.0"))]);
                barrier.wait();
                git::publish(&set, &o)
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap().unwrap().commit.is_some());
    }
    assert_eq!(git(&remote, &["rev-list", "--count", "main"]).trim(), "3");
    let tree = git(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    for i in 0..2 {
        assert!(
            lines(&tree).contains(&format!("team{i}/shop/prod/api/kustomization.yaml").as_str()),
            "{tree}"
        );
    }
    assert!(lines(&tree).contains(&"shop/dev/api/kustomization.yaml"));

    // history and verify read network remotes too.
    let history = git::history(
        &url,
        "main",
        &HistoryFilter::default(),
        &git::WriteLayout::default(),
        &RemoteAuth::default(),
    )
    .unwrap();
    assert_eq!(history.entries.len(), 3);
    let report = git::verify(&set, &url, "main", None, &RemoteAuth::default()).unwrap();
    assert!(!report.has_drift(), "{report}");
}

#[test]
fn unreachable_remote_fails_clearly_and_changes_nothing() {
    let fx = Fixture::new();
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut o = options(&fx.root, T0);
    o.repo = format!("git://127.0.0.1:{port}/deploy.git");
    let err = git::publish(&render(&[("dev", "api", "1")]), &o).unwrap_err();
    assert_eq!(code(&err), "kiln::git::remote_unreachable", "{err}");

    // A password in the URL never reaches the message.
    o.repo = format!("https://bot:s3cret-token@127.0.0.1:{port}/deploy.git");
    let err = git::publish(&render(&[("dev", "api", "1")]), &o).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("s3cret-token"), "{shown}");

    // A local repository that does not exist is not created.
    let missing = fx.root.join("missing.git");
    let err = git::publish(&render(&[("dev", "api", "1")]), &options(&missing, T0)).unwrap_err();
    assert_eq!(code(&err), "kiln::git::repository_not_found");
    assert!(!missing.exists());
}

#[test]
fn a_branch_that_stays_locked_fails_after_bounded_retries() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    git::publish(&render(&[("dev", "api", "1")]), &options(&remote, T0)).unwrap();
    // A crashed writer left git's ref lock behind.
    std::fs::write(remote.join("refs/heads/main.lock"), "").unwrap();
    let before = snapshot(&remote);
    let mut o = options(&remote, T0 + 1);
    o.max_attempts = 2;
    let err = git::publish(&render(&[("dev", "api", "2")]), &o).unwrap_err();
    // Issue 9 item 14: said "another publisher is writing the same branch" five times.
    assert_eq!(code(&err), "kiln::git::stale_lock", "{err}");
    let text = err.to_string();
    assert!(text.contains("refs/heads/main.lock"), "{text}");
    assert!(text.contains(" s old"), "{text}");
    assert_eq!(snapshot(&remote), before);
    std::fs::remove_file(remote.join("refs/heads/main.lock")).unwrap();
    assert!(
        git::publish(&render(&[("dev", "api", "2")]), &o)
            .unwrap()
            .commit
            .is_some()
    );
}

#[test]
fn invalid_marker_fails_without_changes() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    git::publish(&render(&[("dev", "api", "1")]), &options(&remote, T0)).unwrap();
    let work = fx.clone(&remote, "work");
    std::fs::write(work.join(MARKER_FILE), "{ not json").unwrap();
    git(&work, &["commit", "-qam", "break marker"]);
    git(&work, &["push", "-q", "origin", "main"]);
    let before = snapshot(&remote);
    let err = git::publish(&render(&[("dev", "api", "2")]), &options(&remote, T0 + 1)).unwrap_err();
    assert_eq!(code(&err), "kiln::git::invalid_marker");
    assert_eq!(snapshot(&remote), before);
}

// ---------------------------------------------------------------------------------------------
// history

/// Publishes within one second (CI jobs in quick succession) are still listed newest first,
/// parent after child, as `git log` lists them (found by the QA pass).
#[test]
fn history_is_newest_first_within_one_second() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let mut commits = Vec::new();
    for version in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"] {
        let outcome =
            git::publish(&render(&[("dev", "api", version)]), &options(&remote, T0)).unwrap();
        commits.push(outcome.commit.unwrap().to_string());
    }
    commits.reverse();
    let history = git::history(
        &remote.display().to_string(),
        "main",
        &HistoryFilter::default(),
        &git::WriteLayout::default(),
        &RemoteAuth::default(),
    )
    .unwrap();
    let listed: Vec<String> = history.entries.iter().map(|e| e.commit.clone()).collect();
    assert_eq!(listed, commits);
}

#[test]
fn history_lists_changes_and_answers_what_ran_when() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    type Step<'a> = (i64, &'a [(&'a str, &'a str, &'a str)]);
    let steps: [Step<'_>; 3] = [
        (T0, &[("dev", "api", "1.0.0"), ("prod", "api", "1.0.0")]),
        (
            T0 + 100,
            &[("dev", "api", "1.1.0"), ("prod", "api", "1.0.0")],
        ),
        (
            T0 + 200,
            &[
                ("dev", "api", "1.1.0"),
                ("prod", "api", "1.1.0"),
                ("dev", "worker", "0.3.0"),
            ],
        ),
    ];
    for (time, components) in steps {
        git::publish(&render(components), &options(&remote, time)).unwrap();
    }
    // A hand commit after them is listed as what it is: not kiln's, with the units it touches.
    let work = fx.clone(&remote, "work");
    std::fs::write(work.join("README.md"), "x\n").unwrap();
    commit_at(&work, "readme", T0 + 300);
    git(&work, &["push", "-q", "origin", "main"]);

    let repo = remote.display().to_string();
    let auth = RemoteAuth::default();
    let mut all = git::history(
        &repo,
        "main",
        &HistoryFilter::default(),
        &git::WriteLayout::default(),
        &auth,
    )
    .unwrap();
    let hand = all.entries.remove(0);
    assert!(!hand.made_by_kiln);
    assert_eq!(hand.summary, "readme");
    assert_eq!(hand.author.email, "hand@example.com");
    assert_eq!(
        hand.changes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["added other README.md"]
    );
    assert!(
        hand.to_string().contains("(not made by kiln) readme"),
        "{hand}"
    );
    assert!(all.entries.iter().all(|e| e.made_by_kiln));
    let times: Vec<i64> = all.entries.iter().map(|e| e.time.seconds).collect();
    assert_eq!(times, [T0 + 200, T0 + 100, T0]);
    assert_eq!(all.entries[0].components, ["api", "worker"]);
    assert_eq!(all.entries[0].environments, ["dev", "prod"]);
    assert_eq!(all.entries[1].summary, "kiln: update api (dev)");
    assert_eq!(all.entries[1].author.email, "kiln@example.com");
    assert_eq!(all.entries[1].time.to_string(), "2023-11-14T23:15:00+01:00");
    assert_eq!(
        all.entries[1]
            .images
            .iter()
            .map(|c| c.images.join(" "))
            .collect::<Vec<_>>(),
        ["ghcr.io/acme/api:1.1.0"]
    );

    // Filters: environment, component, since.
    let prod = HistoryFilter {
        environment: Some("prod".into()),
        ..Default::default()
    };
    let prod = git::history(&repo, "main", &prod, &git::WriteLayout::default(), &auth).unwrap();
    assert_eq!(
        prod.entries
            .iter()
            .map(|e| e.time.seconds)
            .collect::<Vec<_>>(),
        [T0 + 200, T0]
    );
    assert!(
        prod.entries[0]
            .changes
            .iter()
            .all(|c| c.unit.environment() == Some("prod"))
    );
    let worker = HistoryFilter {
        component: Some("worker".into()),
        ..Default::default()
    };
    assert_eq!(
        git::history(&repo, "main", &worker, &git::WriteLayout::default(), &auth)
            .unwrap()
            .entries
            .len(),
        1
    );
    let since = HistoryFilter {
        since: Some(git::parse_date("2023-11-14T22:15:00Z").unwrap()),
        ..Default::default()
    };
    // The two later kiln commits and the hand commit.
    assert_eq!(
        git::history(&repo, "main", &since, &git::WriteLayout::default(), &auth)
            .unwrap()
            .entries
            .len(),
        3
    );

    // --at: the newest kiln commit at or before the time, with every component's tags.
    let at = |date: &str, filter: &HistoryFilter| {
        let state = git::deployed_at(
            &repo,
            "main",
            git::parse_date(date).unwrap(),
            filter,
            &git::WriteLayout::default(),
            &auth,
        )
        .unwrap();
        state
            .images
            .iter()
            .map(|c| format!("{}/{}={}", c.environment, c.component, c.images.join(",")))
            .collect::<Vec<_>>()
    };
    let none = HistoryFilter::default();
    assert_eq!(at("2023-11-14", &none), Vec::<String>::new());
    assert_eq!(
        at("2023-11-14T22:13:20Z", &none),
        [
            "dev/api=ghcr.io/acme/api:1.0.0",
            "prod/api=ghcr.io/acme/api:1.0.0"
        ]
    );
    assert_eq!(
        at("2023-11-14T23:16:00+01:00", &none),
        [
            "dev/api=ghcr.io/acme/api:1.1.0",
            "prod/api=ghcr.io/acme/api:1.0.0"
        ]
    );
    let prod_only = HistoryFilter {
        environment: Some("prod".into()),
        ..Default::default()
    };
    assert_eq!(
        at("2030-01-01", &prod_only),
        ["prod/api=ghcr.io/acme/api:1.1.0"]
    );
    assert_eq!(
        at("2030-01-01", &none),
        [
            "dev/api=ghcr.io/acme/api:1.1.0",
            "dev/worker=ghcr.io/acme/worker:0.3.0",
            "prod/api=ghcr.io/acme/api:1.1.0"
        ]
    );

    // JSON output for -o json.
    let json = serde_json::to_value(&all).unwrap();
    assert_eq!(json["entries"][0]["time"], "2023-11-14T23:16:40+01:00");
    assert_eq!(
        json["entries"][0]["changes"][0]["unit"]["kind"],
        "component"
    );
}

/// Commits everything in `work` with author and committer time `seconds`.
fn commit_at(work: &Path, message: &str, seconds: i64) {
    git(work, &["add", "-A"]);
    let out = git_cmd(work)
        .env("GIT_COMMITTER_DATE", format!("{seconds} +0000"))
        .env("GIT_AUTHOR_DATE", format!("{seconds} +0000"))
        .args(["commit", "-qm", message])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn at_reads_the_tree_of_commits_kiln_did_not_write() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let repo = remote.display().to_string();
    let auth = RemoteAuth::default();
    let all = HistoryFilter::default();

    // A Kargo promotion renders each component into `stage/prod` (kustomize-build output,
    // no kiln trailers).
    let work = fx.clone(&remote, "work");
    git(&work, &["checkout", "-q", "-b", "stage/prod"]);
    std::fs::create_dir_all(work.join("api")).unwrap();
    let promoted = |tag: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  template:\n    spec:\n      containers:\n      - name: api\n        image: ghcr.io/acme/api:{tag}\n"
        )
    };
    std::fs::write(work.join("api/manifests.yaml"), promoted("2.0.0")).unwrap();
    commit_at(&work, "promote api 2.0.0", T0);
    std::fs::write(work.join("api/manifests.yaml"), promoted("2.1.0")).unwrap();
    commit_at(&work, "promote api 2.1.0", T0 + 100);
    git(&work, &["push", "-q", "origin", "stage/prod"]);

    let state = git::deployed_at(
        &repo,
        "stage/prod",
        T0 + 50,
        &all,
        &git::WriteLayout::default(),
        &auth,
    )
    .unwrap();
    assert_eq!(state.source, Some(git::StateSource::Tree));
    assert_eq!(
        (
            state.images[0].environment.as_str(),
            state.images[0].component.as_str(),
            state.images[0].images.clone()
        ),
        ("prod", "api", vec!["ghcr.io/acme/api:2.0.0".to_string()])
    );
    let state = git::deployed_at(
        &repo,
        "stage/prod",
        T0 + 100,
        &all,
        &git::WriteLayout::default(),
        &auth,
    )
    .unwrap();
    assert_eq!(state.images[0].images, ["ghcr.io/acme/api:2.1.0"]);

    // On a kiln branch, a hand edit after kiln's publish is what Argo CD synced: `--at` shows it.
    git::publish(&render(&[("dev", "api", "1.0.0")]), &options(&remote, T0)).unwrap();
    let work = fx.clone(&remote, "work2");
    let k = work.join("shop/dev/api/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, text.replace("1.0.0", "1.0.1-hotfix")).unwrap();
    commit_at(&work, "hotfix", T0 + 200);
    git(&work, &["push", "-q", "origin", "main"]);
    let before = git::deployed_at(
        &repo,
        "main",
        T0 + 199,
        &all,
        &git::WriteLayout::default(),
        &auth,
    )
    .unwrap();
    assert_eq!(before.source, Some(git::StateSource::Trailers));
    assert_eq!(before.images[0].images, ["ghcr.io/acme/api:1.0.0"]);
    let after = git::deployed_at(
        &repo,
        "main",
        T0 + 200,
        &all,
        &git::WriteLayout::default(),
        &auth,
    )
    .unwrap();
    assert_eq!(after.source, Some(git::StateSource::Tree));
    assert_eq!(after.images[0].images, ["ghcr.io/acme/api:1.0.1-hotfix"]);
    assert_eq!(after.images[0].environment, "dev");
}

// ---------------------------------------------------------------------------------------------
// verify and diff

#[test]
fn verify_detects_a_hand_edit() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let set = render(&[("dev", "api", "1.0.0"), ("dev", "worker", "1.0.0")]);
    git::publish(&set, &options(&remote, T0)).unwrap();
    let repo = remote.display().to_string();
    let auth = RemoteAuth::default();
    let clean = git::verify(&set, &repo, "main", None, &auth).unwrap();
    assert!(!clean.has_drift(), "{clean}");

    // Hand edits: replicas bumped in one resource, one file deleted, an unrelated file added.
    let work = fx.clone(&remote, "work");
    let gen_yaml = work.join("shop/dev/api/api.gen.yaml");
    let text = std::fs::read_to_string(&gen_yaml).unwrap();
    std::fs::write(&gen_yaml, text.replace("replicas: 1", "replicas: 5")).unwrap();
    std::fs::remove_file(work.join("shop/dev/worker/kustomization.yaml")).unwrap();
    std::fs::write(work.join("NOTES.md"), "not kiln's\n").unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-qm", "hotfix"]);
    git(&work, &["push", "-q", "origin", "main"]);

    let report = git::verify(&set, &repo, "main", None, &auth).unwrap();
    assert!(report.has_drift());
    let files: Vec<(&str, git::Status)> = report
        .drift
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect();
    assert_eq!(
        files,
        [
            ("shop/dev/api/api.gen.yaml", git::Status::Changed),
            ("shop/dev/worker/kustomization.yaml", git::Status::Added),
        ]
    );
    let resources: Vec<String> = report.drift.files[0]
        .resources
        .iter()
        .map(|r| r.resource.to_string())
        .collect();
    assert_eq!(resources, ["Deployment/shop-dev/api"]);
    let shown = report.to_string();
    assert!(shown.contains("-  replicas: 5\n"), "{shown}");
    assert!(shown.contains("+  replicas: 1\n"), "{shown}");
    assert!(shown.contains("missing in Git"), "{shown}");
    assert!(!shown.contains("NOTES.md"), "{shown}");

    // A stale render: the committed tree is the old one.
    let newer = render(&[("dev", "api", "2.0.0"), ("dev", "worker", "1.0.0")]);
    let first = git(&remote, &["rev-list", "--max-parents=0", "main"]);
    let stale = git::verify(&newer, &repo, first.trim(), None, &auth).unwrap();
    assert_eq!(
        stale
            .drift
            .files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["shop/dev/api/kustomization.yaml"]
    );

    let err = git::verify(&set, &repo, "nope", None, &auth).unwrap_err();
    assert_eq!(code(&err), "kiln::git::ref_not_found");
    let err = git::verify(&set, &repo, "main", Some("elsewhere"), &auth).unwrap_err();
    assert_eq!(code(&err), "kiln::git::not_published");
}

#[test]
fn diff_against_a_repo_ref_and_a_directory() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let v1 = render(&[("dev", "api", "1.0.0")]);
    git::publish(&v1, &options(&remote, T0)).unwrap();
    let auth = RemoteAuth::default();

    let against = Against::parse(&format!("{}@main", remote.display())).unwrap();
    assert!(matches!(against, Against::Repo { .. }));
    let old = against.load(None, &auth).unwrap();
    assert!(!git::diff_sets(&old, &v1).has_differences());

    let v2 = render(&[("dev", "api", "1.1.0"), ("prod", "api", "1.0.0")]);
    let report = git::diff_sets(&old, &v2);
    assert!(report.has_differences());
    let shown = report.to_string();
    assert!(
        shown.contains("changed shop/dev/api/kustomization.yaml"),
        "{shown}"
    );
    assert!(shown.contains("-  newTag: \"1.0.0\"\n"), "{shown}");
    assert!(shown.contains("+  newTag: \"1.1.0\"\n"), "{shown}");
    assert!(
        shown.contains("added shop/prod/api/api.gen.yaml"),
        "{shown}"
    );
    assert!(shown.contains("added Deployment/shop-prod/api"), "{shown}");

    // A checked-out copy of the branch works the same, and only kiln's files count.
    let work = fx.clone(&remote, "work");
    std::fs::write(work.join("NOTES.md"), "mine\n").unwrap();
    let from_dir = Against::parse(work.to_str().unwrap())
        .unwrap()
        .load(None, &auth)
        .unwrap();
    assert_eq!(from_dir, old);
}

// ---------------------------------------------------------------------------------------------
// per-environment publishing

#[test]
fn per_environment_publishing_to_stage_branches() {
    let fx = Fixture::new();
    let remote = fx.bare("deploy.git");
    let set = render(&[("dev", "api", "1.1.0"), ("prod", "api", "1.0.0")]);
    let outcomes = git::publish_per_environment(
        &set,
        &options(&remote, T0),
        &SplitMode::Branches {
            prefix: "stage/".into(),
        },
    )
    .unwrap();
    let branches: Vec<&str> = outcomes.iter().map(|o| o.branch.as_str()).collect();
    assert_eq!(branches, ["main", "stage/dev", "stage/prod"]);
    assert_eq!(
        lines(&git(
            &remote,
            &["ls-tree", "-r", "--name-only", "stage/prod"]
        )),
        [
            MARKER_FILE,
            "shop/api/api.gen.yaml",
            "shop/api/kustomization.yaml"
        ]
    );
    assert_eq!(
        lines(&git(&remote, &["ls-tree", "-r", "--name-only", "main"])),
        [
            MARKER_FILE,
            "shop/argocd/applications.yaml",
            "shop/kargo/warehouse.yaml"
        ]
    );
    let body = git(&remote, &["log", "-1", "--format=%b", "stage/prod"]);
    assert!(body.contains("Kiln-Environment: prod"), "{body}");
    assert!(
        body.contains("Kiln-Images: shop/prod/api ghcr.io/acme/api:1.0.0"),
        "{body}"
    );
    let state = git::deployed_at(
        &remote.display().to_string(),
        "stage/dev",
        T0,
        &HistoryFilter::default(),
        &git::WriteLayout::default(),
        &RemoteAuth::default(),
    )
    .unwrap();
    assert_eq!(state.images[0].images, ["ghcr.io/acme/api:1.1.0"]);

    // Paths mode: one branch, one directory per environment under the base path.
    let mut o = options(&remote, T0);
    o.branch = "envs".into();
    o.path = Some("rendered".into());
    git::publish_per_environment(&set, &o, &SplitMode::Paths).unwrap();
    let tree = git(&remote, &["ls-tree", "-r", "--name-only", "envs"]);
    assert!(
        lines(&tree).contains(&"rendered/dev/shop/api/kustomization.yaml"),
        "{tree}"
    );
    assert!(
        lines(&tree).contains(&format!("rendered/{MARKER_FILE}").as_str()),
        "{tree}"
    );
    assert!(
        lines(&tree).contains(&format!("rendered/prod/{MARKER_FILE}").as_str()),
        "{tree}"
    );
    // Re-running changes nothing anywhere.
    let again = git::publish_per_environment(&set, &o, &SplitMode::Paths).unwrap();
    assert!(again.iter().all(|o| o.commit.is_none()));
}

// ---------------------------------------------------------------------------------------------
// provenance helpers for the CLI

#[test]
fn source_commit_names_the_platform_checkout() {
    let fx = Fixture::new();
    let repo = fx.work("platform");
    std::fs::create_dir_all(repo.join("platforms/bank")).unwrap();
    std::fs::write(
        repo.join("platforms/bank/platform.yaml"),
        "kind: Platform\n",
    )
    .unwrap();
    std::fs::write(repo.join("README.md"), "x\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "platform"]);
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    let dir = repo.join("platforms/bank");
    assert_eq!(git::source_commit(&dir), Some(head.clone()));
    // Edits elsewhere in the repository do not make the platform dirty.
    std::fs::write(repo.join("README.md"), "y\n").unwrap();
    assert_eq!(git::source_commit(&dir), Some(head.clone()));
    std::fs::write(dir.join("platform.yaml"), "kind: Platform # edited\n").unwrap();
    assert_eq!(git::source_commit(&dir), Some(format!("{head}-dirty")));
    assert_eq!(git::source_commit(&fx.root), None);
}
