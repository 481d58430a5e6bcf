//! Install and run kiln in CI without a Rust toolchain (issue 38, item 11): `scripts/release`
//! packs the built binary into an archive with its sha256, `scripts/ci-kiln` (the script
//! behind `action.yml` and `ci/gitlab-kiln.yml`) installs it from that archive, checking the
//! checksum, then renders the bank and verifies a published tree.

use std::path::Path;
use std::process::{Command, Output};

fn script(name: &str) -> Command {
    let mut cmd = Command::new(crate::support::repo_root().join("scripts").join(name));
    cmd.current_dir(crate::support::repo_root())
        .env("NO_COLOR", "1")
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/xdg-cache"),
        )
        .env_remove("KILN_RELEASE_URL")
        .env_remove("KILN_VERIFY_REPO");
    cmd
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn install(archive: &Path, home: &Path) -> Output {
    script("ci-kiln")
        .arg("install")
        .env("HOME", home)
        .env("KILN_RELEASE_URL", format!("file://{}", archive.display()))
        .env("KILN_INSTALL_DIR", home.join("bin"))
        .output()
        .unwrap()
}

#[test]
fn release_archive_installs_and_renders_and_verifies_in_ci() {
    if Command::new("tar").arg("--version").output().is_err() {
        eprintln!("skipping: no tar");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The release: the debug binary stands in for the release build.
    let out = script("release")
        .args(["--binary", env!("CARGO_BIN_EXE_kiln"), "--out"])
        .arg(tmp.path().join("release"))
        .output()
        .unwrap();
    let archive = std::path::PathBuf::from(ok(&out).trim());
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let listing = ok(&Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap());
    let name = archive
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(".tar.gz", "");
    assert!(name.starts_with("kiln-0."), "{name}");
    for f in ["kiln", "kiln.sha256", "README.md"] {
        assert!(
            listing.lines().any(|l| l == format!("{name}/{f}")),
            "{listing}"
        );
    }
    // The completions of every shell and the manual pages, from the binary (issue 38,
    // item 9).
    for f in [
        "completions/kiln.bash",
        "completions/_kiln",
        "completions/kiln.fish",
        "man/man1/kiln.1",
        "man/man1/kiln-render.1",
    ] {
        assert!(
            listing.lines().any(|l| l == format!("{name}/{f}")),
            "{f}: {listing}{stderr}"
        );
    }
    let sum = std::fs::read_to_string(format!("{}.sha256", archive.display())).unwrap();
    assert_eq!(
        sum.split_whitespace().next().unwrap(),
        kiln_base::digest::sha256_hex(&std::fs::read(&archive).unwrap())
    );

    // Installed from the archive (no cargo involved), checksum checked.
    let home = tmp.path().join("home");
    let out = install(&archive, &home);
    assert!(ok(&out).starts_with("kiln "));
    assert!(home.join("bin/kiln").is_file());
    let tampered = tmp.path().join("tampered.tar.gz");
    std::fs::copy(&archive, &tampered).unwrap();
    std::fs::write(
        format!("{}.sha256", tampered.display()),
        format!("{} x\n", "0".repeat(64)),
    )
    .unwrap();
    let out = install(&tampered, &tmp.path().join("home2"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"));
    assert!(!tmp.path().join("home2/bin/kiln").exists());

    // Render and verify against a published tree.
    let repo = tmp.path().join("platform.git");
    git2::Repository::init_bare(&repo).unwrap();
    let publish = crate::support::kiln_in(
        &crate::support::repo_root(),
        &[
            "publish",
            "platforms/bank",
            "--repo",
            &repo.display().to_string(),
        ],
    );
    assert_eq!(publish.code, Some(0), "{}", publish.text());
    let run = |verify_ref: &str| {
        script("ci-kiln")
            .arg("run")
            .env("HOME", &home)
            .env("KILN_INSTALL_DIR", home.join("bin"))
            .env(
                "KILN_WRITE_TO",
                tmp.path().join(format!("out-{verify_ref}")),
            )
            .env("KILN_VERIFY_REPO", &repo)
            .env("KILN_VERIFY_REF", verify_ref)
            .output()
            .unwrap()
    };
    ok(&run("main"));
    assert!(tmp.path().join("out-main/bootstrap/root.yaml").is_file());
    assert!(!run("no-such-branch").status.success());
}

/// The blocks of docs/sources.md marked `<!-- tested: NAME -->`, by name.
fn guide_recipe(name: &str) -> String {
    let text =
        std::fs::read_to_string(crate::support::repo_root().join("docs/sources.md")).unwrap();
    let marker = format!("<!-- tested: {name} -->\n```sh\n");
    let start = text
        .find(&marker)
        .unwrap_or_else(|| panic!("no recipe `{name}`"))
        + marker.len();
    let end = start + text[start..].find("```").unwrap();
    text[start..end].to_string()
}

/// Issue 33 item 7: the guide's recipes, run as written (bash, `kiln` and `ci-kiln` on the
/// PATH) against a git daemon serving the cart repository and a local write repository:
/// lock the sources; a push to the cart repository, then the CI step moves the lock and
/// publishes naming the new commit; an app team's branch previewed with `kiln diff`.
#[test]
fn app_repo_guide_recipes_run() {
    use kiln_source::testing;
    let t = tempfile::tempdir().unwrap();
    let repos = t.path().join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    let component = |v: &str| {
        vec![
            ("deploy/component.yaml".to_string(), "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: cart\nspec:\n  generators:\n  - files: [cm.yaml]\n".to_string()),
            ("deploy/cm.yaml".to_string(), format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cart\ndata:\n  version: \"{v}\"\n")),
        ]
    };
    let files = component("1");
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    testing::app_repo(&repos, "cart.git", &[(&files, None)]);
    let daemon = testing::git_daemon(&repos);
    let cart = format!("git://127.0.0.1:{}/cart.git", daemon.port);
    // The platform repository, a Git checkout.
    let platform = t.path().join("platform");
    std::fs::create_dir_all(platform.join("platforms/shop")).unwrap();
    std::fs::write(
        platform.join("platforms/shop/platform.yaml"),
        format!("apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: shop\nspec:\n  clusters:\n  - name: c\n    server: https://c.example.com\n  environments:\n  - name: dev\n    tier: dev\n    cluster: c\n  projects:\n  - name: shop\n    components:\n    - name: cart\n      source:\n        git: {cart}\n        ref: main\n        path: deploy\n"),
    )
    .unwrap();
    testing::git(&platform, &["init", "-q"]);
    testing::git(&platform, &["add", "-A"]);
    testing::git(&platform, &["commit", "-q", "-m", "platform"]);
    let deploy = t.path().join("deploy.git");
    git2::Repository::init_bare(&deploy).unwrap();
    // `kiln` and `ci-kiln` on the PATH, as CI installs them.
    let bin = t.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kiln"), bin.join("kiln")).unwrap();
    std::os::unix::fs::symlink(
        crate::support::repo_root().join("scripts/ci-kiln"),
        bin.join("ci-kiln"),
    )
    .unwrap();
    let recipe = |name: &str| {
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", &guide_recipe(name)])
            .current_dir(&platform)
            .env("PATH", crate::support::path_with(&bin))
            .env("KILN_INSTALL_DIR", &bin)
            .env("KILN_CACHE_DIR", t.path().join("cache"))
            .env("XDG_CACHE_HOME", t.path().join("xdg"))
            .env("HOME", t.path())
            .env("NO_COLOR", "1")
            .env("GIT_AUTHOR_NAME", "ci")
            .env("GIT_AUTHOR_EMAIL", "ci@example.com")
            .env("GIT_COMMITTER_NAME", "ci")
            .env("GIT_COMMITTER_EMAIL", "ci@example.com")
            .env("KILN_GIT_AUTHOR_NAME", "ci")
            .env("KILN_GIT_AUTHOR_EMAIL", "ci@example.com")
            .env("DEPLOY_REPO", &deploy)
            .output()
            .unwrap()
    };
    ok(&recipe("lock"));
    let lock = std::fs::read_to_string(platform.join("platforms/shop/kiln.lock")).unwrap();
    assert!(lock.contains(&cart), "{lock}");

    // The cart team pushes version 2, and a branch `my-change` with version 3.
    let clone = t.path().join("cart");
    testing::git(
        t.path(),
        &[
            "clone",
            "-q",
            &repos.join("cart.git").display().to_string(),
            "cart",
        ],
    );
    std::fs::write(clone.join("deploy/cm.yaml"), &component("2")[1].1).unwrap();
    testing::git(&clone, &["commit", "-qam", "two"]);
    let pushed = testing::git(&clone, &["rev-parse", "HEAD"]);
    testing::git(&clone, &["push", "-q", "origin", "main"]);
    ok(&recipe("ci"));
    let message = testing::git(&deploy, &["log", "-1", "--format=%B", "main"]);
    assert!(
        message.contains(&format!("Kiln-App-Commit: shop/dev/cart {cart}@{pushed}")),
        "{message}"
    );
    let files = testing::git(&deploy, &["ls-tree", "-r", "--name-only", "main"]);
    let file = files
        .lines()
        .find(|f| f.ends_with("shop/dev/cart/cart.gen.yaml"))
        .unwrap_or_else(|| panic!("{files}"));
    let published = testing::git(&deploy, &["show", &format!("main:{file}")]);
    assert!(published.contains("version: \"2\""), "{published}");
    let head = testing::git(&platform, &["log", "-1", "--format=%s"]);
    assert_eq!(head, "kiln: update cart");
    assert!(testing::git(&platform, &["status", "--porcelain"]).is_empty());

    testing::git(&clone, &["checkout", "-q", "-b", "my-change"]);
    std::fs::write(clone.join("deploy/cm.yaml"), &component("3")[1].1).unwrap();
    testing::git(&clone, &["commit", "-qam", "three"]);
    testing::git(&clone, &["push", "-q", "origin", "my-change"]);
    let lock = std::fs::read_to_string(platform.join("platforms/shop/kiln.lock")).unwrap();
    let out = recipe("preview");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("-  version: \"2\"") && diff.contains("+  version: \"3\""),
        "{diff}"
    );
    assert_eq!(
        std::fs::read_to_string(platform.join("platforms/shop/kiln.lock")).unwrap(),
        lock,
        "a preview leaves the lock"
    );
}

/// Issue 38 item 11 (newcomer 4, repro 10): `ci-kiln update` with no `KILN_PUBLISH_REPO`
/// (action.yml's default, GitLab's `.kiln-update`) publishes into the platform repository
/// itself, its CI checkout on its branch, and pushes it with the lock commit: no usage
/// error, no warning that Argo CD reads another repository. The guide the action and the
/// template name exists, and both parse as YAML.
#[test]
fn ci_kiln_update_without_publish_repo_publishes_into_the_platform_repository() {
    use crate::support::git;
    let t = tempfile::tempdir().unwrap();
    let origin = t.path().join("platform.git");
    git2::Repository::init_bare(&origin).unwrap();
    let checkout = t.path().join("checkout");
    std::fs::create_dir_all(checkout.join("platforms/p")).unwrap();
    std::fs::create_dir_all(checkout.join("components/app")).unwrap();
    std::fs::write(
        checkout.join("platforms/p/platform.yaml"),
        format!("apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata: {{name: p}}\nspec:\n  source: {{repoURL: {}, branch: main, renderedPath: deploy}}\n  clusters:\n  - {{name: c1, server: https://kubernetes.default.svc}}\n  environments:\n  - {{name: dev, tier: nonprod, cluster: c1}}\n  projects:\n  - name: web\n    components:\n    - path: ../../components/app\n", origin.display()),
    )
    .unwrap();
    std::fs::write(
        checkout.join("components/app/component.yaml"),
        "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {name: app}\nspec:\n  generators:\n  - files: [cm.yaml]\n",
    )
    .unwrap();
    std::fs::write(
        checkout.join("components/app/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {a: b}\n",
    )
    .unwrap();
    git(&checkout, &["init", "-q", "-b", "main"]);
    git(&checkout, &["add", "-A"]);
    git(&checkout, &["commit", "-q", "-m", "platform"]);
    git(
        &checkout,
        &["remote", "add", "origin", &origin.display().to_string()],
    );
    git(&checkout, &["push", "-q", "origin", "main"]);
    let bin = t.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kiln"), bin.join("kiln")).unwrap();
    let out = script("ci-kiln")
        .arg("update")
        .current_dir(&checkout)
        .env("HOME", t.path())
        .env("KILN_INSTALL_DIR", &bin)
        .env("KILN_PLATFORM", "platforms/p")
        .env("KILN_PUSH", "origin")
        .env_remove("KILN_PUBLISH_REPO")
        .env_remove("KILN_UPDATE")
        .output()
        .unwrap();
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    let files = git(&origin, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        files.lines().any(|f| f.starts_with("deploy/web/dev/app/")),
        "{files}"
    );
    assert!(git(&checkout, &["status", "--porcelain"]).is_empty());

    let root = crate::support::repo_root();
    for file in ["action.yml", "ci/gitlab-kiln.yml", "scripts/ci-kiln"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        if file.ends_with(".yml") {
            kiln_base::yaml::parse_one(file, &text).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
        for (i, _) in text.match_indices("docs/") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/-_.".contains(*c))
                .collect();
            let name = name.trim_end_matches('.');
            assert!(
                root.join(name).exists(),
                "{file} names {name}, which is missing"
            );
        }
    }
}

/// Issue 38 item 11 (newcomer 4, repro 11): `ci-kiln install` from source keeps a binary
/// restored from the CI cache only when its stamp names this very source and it reports the
/// source's version; an older one (the cache keys are not exact) is rebuilt. `cargo` is a
/// stand-in that logs its arguments and writes a binary reporting the version it builds.
#[test]
fn ci_kiln_install_rebuilds_a_cached_kiln_built_from_another_source() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let (bin, src, fake) = (
        t.path().join("bin"),
        t.path().join("src"),
        t.path().join("fake"),
    );
    for d in [&bin, &src.join("src"), &fake] {
        std::fs::create_dir_all(d).unwrap();
    }
    let executable = |path: &Path, text: String| {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let version = |v: &str| {
        std::fs::write(
            src.join("Cargo.toml"),
            format!("[package]\nname = \"kiln\"\nversion = \"{v}\"\n"),
        )
        .unwrap();
    };
    // The cached binary: an older kiln.
    executable(&bin.join("kiln"), "#!/bin/sh\necho kiln 0.0.1\n".into());
    let log = t.path().join("cargo.log");
    executable(
        &fake.join("cargo"),
        format!(
            "#!/bin/sh\necho \"$@\" >> {log}\nv=$(sed -n 's/^version = \"\\(.*\\)\"/\\1/p' {toml})\nprintf '#!/bin/sh\\necho kiln %s\\n' \"$v\" > {kiln}\nchmod +x {kiln}\n",
            log = log.display(),
            toml = src.join("Cargo.toml").display(),
            kiln = bin.join("kiln").display(),
        ),
    );
    let install = || {
        let out = script("ci-kiln")
            .arg("install")
            .env("PATH", crate::support::path_with(&fake))
            .env("KILN_SOURCE", &src)
            .env("KILN_INSTALL_DIR", &bin)
            .output()
            .unwrap();
        let stdout = ok(&out);
        let builds = std::fs::read_to_string(&log).unwrap_or_default();
        (stdout.trim().to_string(), builds.lines().count())
    };
    version("0.2.0");
    std::fs::write(src.join("src/main.rs"), "fn main() {}\n").unwrap();
    assert_eq!(install(), ("kiln 0.2.0".to_string(), 1));
    // The same source: the cached binary is kept.
    assert_eq!(install(), ("kiln 0.2.0".to_string(), 1));
    // Another commit of the same version: rebuilt.
    std::fs::write(src.join("src/main.rs"), "fn main() { }\n").unwrap();
    assert_eq!(install(), ("kiln 0.2.0".to_string(), 2));
    // A binary that does not report the source's version, under a matching stamp: rebuilt.
    executable(&bin.join("kiln"), "#!/bin/sh\necho kiln 0.0.1\n".into());
    assert_eq!(install(), ("kiln 0.2.0".to_string(), 3));
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("install --locked --force --path")
    );
}
