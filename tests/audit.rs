//! The audit of the deployed state as a newcomer meets it (issue 35, third round): a small
//! platform in the one-repo layout (the service repository holds kiln's rendered tree and the
//! Stages' folders), published and promoted with the `kiln` binary as a user runs it, then
//! `kiln status` and `kiln history` read back. Each test pins one untruth they told.

use crate::support::{Run, git, kiln_command, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

const SERVICE_URL: &str = "http://git.shop.test/service.git";

/// The platform of `mini`: dev → test → prod, one component `cart` with image
/// `ghcr.io/acme/cart` (tag 3.0.0 in the spec), Kargo on, its Stages writing
/// `envs/<env>/cart` of the service repository that holds the rendered tree.
const PLATFORM: &str = r#"apiVersion: kiln/v1alpha1
kind: Platform
metadata: {name: shop}
spec:
  source: {repoURL: "http://git.shop.test/service.git", branch: main, renderedPath: deploy}
  clusters: [{name: nonprod, server: https://nonprod.k8s.shop.test}, {name: prod, server: https://prod.k8s.shop.test}]
  environments:
  - {name: dev, tier: dev, cluster: nonprod}
  - {name: test, tier: test, cluster: nonprod, from: [dev]}
  - {name: prod, tier: prod, cluster: prod, from: [test]}
  kargo: {enabled: true}
  projects:
  - name: shop
    output: {repoURL: "http://git.shop.test/service.git", mode: path-per-environment, branchPattern: main, pathPattern: "envs/${env.name}"}
    components:
    - path: ../../components/cart
"#;

const CART: &str = r#"apiVersion: kiln/v1alpha1
kind: Component
metadata: {name: cart}
spec:
  images:
  - {name: ghcr.io/acme/cart, repository: ghcr.io/acme/cart, tag: "3.0.0", constraint: "^3.0.0"}
  generators:
  - files: [deploy.yaml]
"#;

const CART_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: cart}
spec:
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec: {containers: [{name: cart, image: "ghcr.io/acme/cart:3.0.0"}]}
"#;

/// The one-repo platform, published into `service.git`.
struct Mini {
    tmp: tempfile::TempDir,
    /// The source checkout (`platforms/shop`, `components/cart`), committed.
    root: PathBuf,
    service: PathBuf,
    /// The source commit kiln publish wrote (the Freight's commit).
    published: String,
}

/// The digest the registry would answer for `tag` of `ghcr.io/acme/cart`.
fn digest(tag: &str) -> String {
    kiln_base::digest::sha256_tagged(format!("cart{tag}").as_bytes())
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

impl Mini {
    fn new() -> Mini {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        write(&root.join("platforms/shop/platform.yaml"), PLATFORM);
        write(&root.join("components/cart/component.yaml"), CART);
        write(&root.join("components/cart/deploy.yaml"), CART_DEPLOYMENT);
        write(&root.join(".gitignore"), "deploy/\n");
        git(&root, &["init", "-q"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "init"]);
        let service = tmp.path().join("service.git");
        git(tmp.path(), &["init", "-q", "--bare", "service.git"]);
        let mut m = Mini {
            tmp,
            root,
            service,
            published: String::new(),
        };
        m.publish();
        m
    }

    /// `kiln publish` of the checkout into the service repository; the source commit it
    /// wrote.
    fn publish(&mut self) {
        publish(&self.root, &self.service);
        self.published = git(&self.service, &["rev-parse", "main"])
            .trim()
            .to_string();
    }

    fn repo_map(&self) -> String {
        format!("{SERVICE_URL}={}", self.service.display())
    }

    /// `kiln ARGS` in the checkout.
    fn kiln(&self, args: &[&str]) -> Run {
        run(kiln_command(&self.root).args(args))
    }

    /// `kiln promote <component>-<env>` of `ghcr.io/acme/cart:<tag>@<digest>` and the
    /// published commit.
    fn promote(&self, stage: &str, tag: &str) -> Run {
        let image = format!("image=ghcr.io/acme/cart:{tag}@{}", digest(tag));
        let commit = format!("commit={}", self.published);
        let map = self.repo_map();
        let r = self.kiln(&[
            "promote",
            stage,
            "platforms/shop",
            "--freight",
            &image,
            "--freight",
            &commit,
            "--repo-map",
            &map,
        ]);
        assert_eq!(r.code, Some(0), "{}", r.text());
        r
    }

    /// `kiln status platforms/shop --repo-map … ARGS`.
    fn status(&self, args: &[&str]) -> Run {
        let map = self.repo_map();
        let mut all = vec!["status", "platforms/shop", "--repo-map", &map];
        all.extend_from_slice(args);
        self.kiln(&all)
    }

    /// `kiln history --repo service.git ARGS`.
    fn history(&self, args: &[&str]) -> Run {
        let repo = self.service.display().to_string();
        let mut all = vec!["history", "--repo", &repo];
        all.extend_from_slice(args);
        self.kiln(&all)
    }

    /// A hand commit in a clone of the service repository, pushed: `edit` changes the
    /// clone's work tree.
    fn hand_commit(&self, author: &str, subject: &str, edit: impl Fn(&Path)) {
        let clone = self.tmp.path().join("hand");
        if !clone.exists() {
            git(
                self.tmp.path(),
                &["clone", "-q", &self.service.display().to_string(), "hand"],
            );
        }
        git(&clone, &["pull", "-q", "--ff-only"]);
        edit(&clone);
        git(&clone, &["add", "-A"]);
        git(
            &clone,
            &[
                "-c",
                &format!("user.name={author}"),
                "commit",
                "-qm",
                subject,
            ],
        );
        git(&clone, &["push", "-q", "origin", "HEAD:main"]);
    }
}

/// `kiln publish platforms/shop --repo REPO --branch main` in `root`, which must succeed.
fn publish(root: &Path, repo: &Path) {
    let r = run(kiln_command(root)
        .args(["publish", "platforms/shop", "--repo"])
        .arg(repo)
        .args(["--branch", "main"]));
    assert_eq!(r.code, Some(0), "{}", r.text());
}

fn json(r: &Run) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.text()))
}

/// Item 1: in the one-repo layout a promotion entry of `kiln history --platform` lists what
/// the promotion deployed (the Stage's folder), not the rendered tree's base tag beside it,
/// with the digest and the source commit its message records.
#[test]
fn history_promotion_entry_is_the_promoted_folder_with_digest_and_source() {
    let m = Mini::new();
    m.promote("cart-dev", "3.1.0");
    m.promote("cart-test", "3.1.0");
    let h = json(&m.history(&[
        "--platform",
        "platforms/shop",
        "--component",
        "cart",
        "-o",
        "json",
    ]));
    let promotions: Vec<&Value> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["summary"].as_str().unwrap().starts_with("kiln: promote"))
        .collect();
    assert_eq!(promotions.len(), 2, "{h:#}");
    let pinned = format!("ghcr.io/acme/cart:3.1.0@{}", digest("3.1.0"));
    for (e, env) in promotions.iter().zip(["test", "dev"]) {
        let images = e["images"].as_array().unwrap();
        assert_eq!(images.len(), 1, "{e:#}");
        assert_eq!(images[0]["environment"], env, "{e:#}");
        assert_eq!(images[0]["images"], serde_json::json!([pinned]), "{e:#}");
        assert_eq!(e["sourceCommit"], m.published.as_str(), "{e:#}");
    }
}

/// Item 3: a commit subject or author name with terminal control sequences (here: erase the
/// line, carriage return, print a reassuring line in green) reaches the text of `status` and
/// `history` escaped, so the "drifted" line stays on the screen.
#[test]
fn text_output_escapes_control_characters_from_commits() {
    let m = Mini::new();
    m.promote("cart-dev", "3.1.0");
    let subject = "hotfix\u{1b}[2K\r\u{1b}[32mall cells in sync\u{1b}[0m";
    m.hand_commit("eve\u{1b}[8m", subject, |clone| {
        let file = clone.join("envs/dev/cart/manifests.yaml");
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("{text}# hotfix\n")).unwrap();
    });
    let status = m.status(&[]);
    assert_eq!(status.code, Some(1), "{}", status.text());
    let history = m.history(&["--platform", "platforms/shop"]);
    assert_eq!(history.code, Some(0), "{}", history.text());
    for (what, r) in [("status", &status), ("history", &history)] {
        // NO_COLOR is set: any ESC or CR comes from the commit.
        assert!(
            !r.stdout.contains(['\u{1b}', '\r']),
            "{what} prints control characters from Git:\n{}",
            r.stdout
        );
        assert!(
            r.stdout
                .contains(r"hotfix\u{1b}[2K\r\u{1b}[32mall cells in sync"),
            "{what} shows the subject escaped:\n{}",
            r.stdout
        );
    }
    assert!(
        status.stdout.contains("drifted shop/cart in dev"),
        "{}",
        status.stdout
    );
}

/// A platform (`platforms/shop`, committed) whose component `api` comes from an app
/// repository served by `git daemon` on 127.0.0.1; dev → prod on one cluster. With `kargo`,
/// Kargo is on and the project writes `http://git.shop.test/shop-deploy.git`.
struct AppRepoPlatform {
    _tmp: tempfile::TempDir,
    _daemon: kiln_source::testing::Server,
    root: PathBuf,
    /// A bare repository for publish, or the Stages' write repository.
    deploy: PathBuf,
}

fn app_repo_platform(kargo: bool) -> AppRepoPlatform {
    use kiln_source::testing;
    let tmp = tempfile::tempdir().unwrap();
    let repos = tmp.path().join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    let api = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {name: api}\nspec:\n  generators:\n  - resources: [{apiVersion: v1, kind: ConfigMap, metadata: {name: api}, data: {a: b}}]\n";
    testing::app_repo(
        &repos,
        "api.git",
        &[(&[("deploy/component.yaml", api)], None)],
    );
    let daemon = testing::git_daemon(&repos);
    let root = tmp.path().join("p");
    let kargo = match kargo {
        true => "  kargo: {enabled: true}\n",
        false => "",
    };
    let output = match kargo.is_empty() {
        false => "    output: {repoURL: \"http://git.shop.test/shop-deploy.git\"}\n",
        true => "",
    };
    write(
        &root.join("platforms/shop/platform.yaml"),
        &format!(
            "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata: {{name: shop}}\nspec:\n  source: {{repoURL: \"{SERVICE_URL}\"}}\n  clusters: [{{name: c, server: https://c.example}}]\n  environments: [{{name: dev, tier: dev, cluster: c}}, {{name: prod, tier: prod, cluster: c, from: [dev]}}]\n{kargo}  projects:\n  - name: shop\n{output}    components:\n    - {{name: api, source: {{git: \"git://127.0.0.1:{}/api.git\", ref: main, path: deploy}}}}\n",
            daemon.port
        ),
    );
    write(&root.join(".gitignore"), "deploy/\n");
    git(&root, &["init", "-q"]);
    // The lock the first render writes is committed with the platform, as a user would.
    let r = run(kiln_command(&root).args(["render", "platforms/shop"]));
    assert_eq!(r.code, Some(0), "{}", r.text());
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "one"]);
    let deploy = tmp.path().join("deploy.git");
    git(tmp.path(), &["init", "-q", "--bare", "deploy.git"]);
    AppRepoPlatform {
        _tmp: tmp,
        _daemon: daemon,
        root,
        deploy,
    }
}

/// Item 2: without Kargo, `kiln status` renders the platform again at the source commit the
/// publish recorded. With components from app repositories that render needs the source
/// stage: one commit after the publish, status still checks the folders (exit 0), instead
/// of failing with "component directory `deploy` not found" (exit 3).
#[test]
fn status_rerenders_a_published_commit_with_remote_sources() {
    let p = app_repo_platform(false);
    let repo = p.deploy.display().to_string();
    publish(&p.root, &p.deploy);
    let file = p.root.join("platforms/shop/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}# a comment\n")).unwrap();
    git(&p.root, &["commit", "-qam", "two"]);
    let status = run(kiln_command(&p.root).args([
        "status",
        "platforms/shop",
        "--repo-map",
        &format!("{SERVICE_URL}={repo}"),
        "-o",
        "json",
    ]));
    assert_eq!(status.code, Some(0), "{}", status.text());
    let cells = json(&status)["cells"].as_array().unwrap().clone();
    assert_eq!(cells.len(), 2, "{cells:#?}");
    assert!(cells.iter().all(|c| c["state"] == "inSync"), "{cells:#?}");
}

/// Item 4: with `components[].source`, `kiln bootstrap` renders through the source stage
/// (as `promote` does) and creates the write branch, and `kiln show buildplans` lists the
/// remote component's BuildPlans instead of one "unknown component ``" per instance.
#[test]
fn bootstrap_and_show_buildplans_fetch_remote_sources() {
    let p = app_repo_platform(true);
    let map = format!(
        "http://git.shop.test/shop-deploy.git={}",
        p.deploy.display()
    );
    let bootstrap =
        run(kiln_command(&p.root).args(["bootstrap", "platforms/shop", "--repo-map", &map]));
    assert_eq!(bootstrap.code, Some(0), "{}", bootstrap.text());
    assert!(
        bootstrap.stdout.starts_with("created"),
        "{}",
        bootstrap.stdout
    );
    let branches = git(&p.deploy, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(
        branches.lines().count(),
        bootstrap.stdout.lines().count(),
        "{branches}"
    );
    let show =
        run(kiln_command(&p.root).args(["show", "buildplans", "platforms/shop", "-o", "json"]));
    assert_eq!(show.code, Some(0), "{}", show.text());
    let plans = json(&show);
    let plans = plans.as_array().unwrap();
    assert_eq!(plans.len(), 2, "{plans:#?}");
    let text = show.stdout;
    assert!(text.contains("\"api\""), "{text}");
}

/// Item 5: a promoted folder deleted by hand is drift (exit 1), named as a deletion with the
/// commit that made it, and the cell keeps no Freight of the promotion it undid; prod below
/// it, which runs nothing either, does not lag.
#[test]
fn a_promoted_folder_deleted_by_hand_is_drift() {
    let m = Mini::new();
    m.promote("cart-dev", "3.1.0");
    m.promote("cart-test", "3.1.0");
    m.hand_commit("mallory", "remove test cart", |clone| {
        std::fs::remove_dir_all(clone.join("envs/test/cart")).unwrap();
    });
    let r = m.status(&["-o", "json"]);
    assert_eq!(r.code, Some(1), "{}", r.text());
    let v = json(&r);
    let cells = v["cells"].as_array().unwrap();
    let at = |env: &str| cells.iter().find(|c| c["environment"] == env).unwrap();
    let test = at("test");
    assert_eq!(test["state"], "drifted", "{test:#}");
    let drift = test["drift"].as_str().unwrap();
    assert!(
        drift.contains("mallory") && drift.contains("deleted the folder envs/test/cart"),
        "{drift}"
    );
    assert!(test.get("freight").is_none(), "{test:#}");
    assert!(test["promotion"]["freight"].is_string(), "{test:#}");
    assert_eq!(at("prod")["state"], "notDeployed", "{cells:#?}");
    let text = m.status(&[]);
    assert!(
        text.stdout.contains("drifted shop/cart in test: "),
        "{}",
        text.stdout
    );
}

/// Item 8: prod runs Freight that test never ran (promoted with `kiln promote`'s warning
/// ignored): status says test never ran it, as lag (exit 1, `<lag`) in text and JSON,
/// instead of calling prod in sync.
#[test]
fn a_cell_promoted_past_its_upstream_is_reported() {
    let m = Mini::new();
    m.promote("cart-dev", "3.1.0");
    m.promote("cart-test", "3.1.0");
    m.promote("cart-dev", "3.2.0");
    let skipped = m.promote("cart-prod", "3.2.0");
    assert!(skipped.stderr.contains("warning"), "{}", skipped.text());
    let r = m.status(&["-o", "json"]);
    assert_eq!(r.code, Some(1), "{}", r.text());
    let v = json(&r);
    let prod = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["environment"] == "prod")
        .unwrap()
        .clone();
    assert_eq!(prod["state"], "lagging", "{prod:#}");
    assert_eq!(prod["lag"]["upstream"], "test", "{prod:#}");
    assert_eq!(prod["lag"]["skipped"], true, "{prod:#}");
    let text = m.status(&[]);
    assert_eq!(text.code, Some(1));
    assert!(
        text.stdout
            .contains("lagging shop/cart in prod: test never ran 3.2.0 (Freight "),
        "{}",
        text.stdout
    );
}

/// Item 7: `history --at` without `--platform` on a branch holding Kargo Stages says that
/// the platform is needed (text and JSON) instead of an empty list; `status
/// --per-environment` on a Kargo platform is refused, as `publish --per-environment` is.
#[test]
fn history_at_without_platform_and_status_per_environment_with_kargo_say_so() {
    let m = Mini::new();
    m.promote("cart-dev", "3.1.0");
    let at = m.history(&["--at", "now"]);
    assert_eq!(at.code, Some(0), "{}", at.text());
    assert!(at.stdout.contains("pass --platform DIR"), "{}", at.stdout);
    let at = json(&m.history(&["--at", "now", "-o", "json"]));
    assert_eq!(at["needsPlatform"], true, "{at:#}");
    let with = json(&m.history(&["--at", "now", "--platform", "platforms/shop", "-o", "json"]));
    assert!(with.get("needsPlatform").is_none(), "{with:#}");
    assert_eq!(with["images"].as_array().unwrap().len(), 1, "{with:#}");
    let r = m.status(&["--per-environment"]);
    assert_ne!(r.code, Some(0), "{}", r.text());
    assert_ne!(r.code, Some(1), "{}", r.text());
    assert!(
        r.stderr
            .contains("kiln::status::per_environment_with_kargo"),
        "{}",
        r.stderr
    );
}

/// Item 6: a chart pulled from a Helm repository by one component (`cache`, prod only) is
/// recorded by the publish for that component's cells, and status credits it to no other
/// cell (`cart` uses no chart).
#[test]
fn a_pulled_chart_is_credited_only_to_the_cells_that_use_it() {
    use kiln_source::testing;
    let mut m = Mini::new();
    let charts = m.tmp.path().join("charts");
    std::fs::create_dir_all(&charts).unwrap();
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cache}\ndata: {a: b}\n";
    let tgz = testing::chart_tgz("cache", "1.0.0", &[("templates/cm.yaml", cm)]);
    testing::helm_repo(&charts, &[("cache", "1.0.0", tgz)]);
    let server = testing::static_http(&charts, None);
    write(
        &m.root.join("components/cache/component.yaml"),
        &format!(
            "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {{name: cache}}\nspec:\n  generators:\n  - helm: {{chart: cache, repository: \"{}\", version: 1.0.0}}\n",
            server.http()
        ),
    );
    let file = m.root.join("platforms/shop/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "    - path: ../../components/cart\n",
        "    - path: ../../components/cart\n    - {path: ../../components/cache, deployTo: {tiers: [prod]}}\n",
    );
    std::fs::write(&file, text).unwrap();
    git(&m.root, &["add", "-A"]);
    git(&m.root, &["commit", "-qm", "add cache"]);
    m.publish();
    let message = git(&m.service, &["log", "-1", "--format=%B", "main"]);
    let chart_trailers: Vec<&str> = message
        .lines()
        .filter(|l| l.starts_with("Kiln-App-Commit:") && l.contains("#cache"))
        .collect();
    assert_eq!(chart_trailers.len(), 1, "{message}");
    assert!(
        chart_trailers[0].starts_with("Kiln-App-Commit: shop/prod/cache "),
        "{message}"
    );
    m.promote("cart-dev", "3.1.0");
    let v = json(&m.status(&["-e", "dev", "-o", "json"]));
    let cart = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["component"] == "cart")
        .unwrap()
        .clone();
    assert_eq!(
        cart["writeCommit"].as_str().map(str::len),
        Some(40),
        "{cart:#}"
    );
    assert!(cart.get("appCommits").is_none(), "{cart:#}");
}

/// A `--component` or `--environment` of `kiln history` that no commit names (a typo) is an
/// error with the closest name, not "no commits".
#[test]
fn history_refuses_a_component_or_environment_no_commit_names() {
    let m = Mini::new();
    let known = m.history(&["--component", "cart"]);
    assert_eq!(known.code, Some(0), "{}", known.text());
    for (flag, typo, meant) in [
        ("--component", "crat", "cart"),
        ("--environment", "dve", "dev"),
    ] {
        let r = m.history(&[flag, typo]);
        assert_eq!(r.code, Some(1), "{}", r.text());
        assert!(
            r.stderr.contains("kiln::cli::unknown_history_name"),
            "{}",
            r.text()
        );
        assert!(r.stderr.contains(&format!("`{typo}`")), "{}", r.text());
        assert!(
            r.stderr.contains(&format!("did you mean `{meant}`?")),
            "{}",
            r.text()
        );
    }
}
