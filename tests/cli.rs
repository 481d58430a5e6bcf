//! The command line people expect (issue 38, items 9 and 10): shell completions and manual
//! pages, `-o json` for `render` and `graph`, `render`'s default output directory, warnings
//! for a selection that chooses nothing and for settings nothing reads, and `kiln validate`'s
//! count of what it checked.

use crate::support::{copy_dir, kiln_bin, kiln_in, repo_root};
use serde_json::Value;

/// The bank platform and its components copied into a fresh directory (the repository
/// root of the copy: `platforms/` sits in it), with `edit` applied to `platform.yaml`.
fn bank_copy(edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(
        &repo_root().join("platforms/bank"),
        &tmp.path().join("platforms/bank"),
    );
    copy_dir(
        &repo_root().join("components"),
        &tmp.path().join("components"),
    );
    let file = tmp.path().join("platforms/bank/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, edit(&text)).unwrap();
    tmp
}

#[test]
fn completions_for_each_shell_and_a_manual_page_per_command() {
    let out = |shell: &str| {
        let out = kiln_bin().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        String::from_utf8(out.stdout).unwrap()
    };
    let bash = out("bash");
    assert!(
        bash.contains("_kiln()") && bash.contains("promote"),
        "{bash}"
    );
    assert!(out("zsh").starts_with("#compdef kiln"));
    let fish = out("fish");
    assert!(fish.contains("complete -c kiln") && fish.contains("render"));
    let bad = kiln_bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let out = kiln_bin().arg("man").arg(&dir).output().unwrap();
    assert!(out.status.success());
    for page in [
        "kiln.1",
        "kiln-render.1",
        "kiln-promote.1",
        "kiln-helm-template.1",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        assert!(text.contains(".TH kiln"), "{page}");
    }
    let render = std::fs::read_to_string(dir.join("kiln-render.1")).unwrap();
    assert!(render.contains("write\\-to"), "the flags are in the page");
}

#[test]
fn render_json_lists_the_files_written_unchanged_and_removed() {
    let tmp = bank_copy(str::to_string);
    let json = |args: &[&str]| -> Value {
        let r = kiln_in(tmp.path(), args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        serde_json::from_str(&r.stdout).unwrap()
    };
    let first = json(&[
        "render",
        "platforms/bank",
        "-p",
        "web",
        "-o",
        "json",
        "--no-cache",
    ]);
    assert!(first.is_object());
    let written = first["written"].as_array().unwrap();
    assert!(!written.is_empty());
    assert!(
        written
            .iter()
            .any(|p| p == "web/dev/frontend/kustomization.yaml"),
        "{first}"
    );
    assert!(first["unchanged"].as_array().unwrap().is_empty());
    assert_eq!(first["files"].as_u64().unwrap(), written.len() as u64);
    // The same again: everything unchanged. Then one environment fewer for web's component:
    // its folders are removed.
    let again = json(&[
        "render",
        "platforms/bank",
        "-p",
        "web",
        "-o",
        "json",
        "--no-cache",
    ]);
    assert!(again["written"].as_array().unwrap().is_empty(), "{again}");
    assert_eq!(again["unchanged"].as_array().unwrap().len(), written.len());
    let file = tmp.path().join("platforms/bank/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen(
            "        prod-west:\n          parameters:\n            replicas: 3\n            cpu: 500m\n            memory: 512Mi\n            memoryLimit: 1Gi\n",
            "",
            1,
        )
        .replacen(
            "    - path: ../../components/frontend\n",
            "    - path: ../../components/frontend\n      deployTo: {environments: [dev, test, stage, prod-east]}\n",
            1,
        ),
    )
    .unwrap();
    // A full render: a selection leaves the folders of plans it does not choose alone.
    let fewer = json(&["render", "platforms/bank", "-o", "json", "--no-cache"]);
    let removed = fewer["removed"].as_array().unwrap();
    assert!(
        removed
            .iter()
            .any(|p| p == "web/prod-west/frontend/kustomization.yaml"),
        "{fewer}"
    );
}

#[test]
fn render_writes_to_the_rendered_path_by_default() {
    let tmp = bank_copy(|t| t.replace("renderedPath: deploy", "renderedPath: gitops/rendered"));
    // From the repository root and from inside the platform: the same place.
    for cwd in [tmp.path().to_path_buf(), tmp.path().join("platforms")] {
        let platform = tmp.path().join("platforms/bank");
        let r = kiln_in(
            &cwd,
            &[
                "render",
                platform.to_str().unwrap(),
                "-p",
                "web",
                "-e",
                "dev",
                "--no-cache",
            ],
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(
            tmp.path()
                .join("gitops/rendered/web/dev/frontend/kustomization.yaml")
                .is_file(),
            "{}",
            r.stderr
        );
        assert!(!cwd.join("deploy").exists());
    }
}

#[test]
fn a_selection_that_chooses_nothing_and_settings_kargo_ignores_warn() {
    let tmp = bank_copy(|t| {
        t.replace(
            "  kargo:\n    enabled: true\n",
            "  kargo:\n    enabled: false\n",
        )
    });
    let out = tmp.path().join("out");
    let out = out.to_str().unwrap();
    let r = kiln_in(
        tmp.path(),
        &[
            "render",
            "platforms/bank",
            "--write-to",
            out,
            "-l",
            "tier=nope",
            "--no-cache",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("warning: the selection (-l tier=nope) chooses no BuildPlan"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("`spec.kargo.promotion` is ignored: Kargo is off"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("`promotion: project` of project `backend` is ignored"),
        "{}",
        r.stderr
    );
    let r = kiln_in(
        tmp.path(),
        &[
            "render",
            "platforms/bank",
            "--write-to",
            out,
            "-p",
            "web",
            "-e",
            "dev",
            "--no-cache",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("chooses no BuildPlan"), "{}", r.stderr);
}

/// Item 9 (newcomer 4, repro 07): `diff` and `verify` with filters that choose no BuildPlan
/// refuse (exit 3, `kiln::cli::empty_selection`) instead of reporting no differences over
/// nothing, so a mistyped filter cannot pass a CI drift check; the repository is never read.
#[test]
fn diff_and_verify_refuse_a_selection_that_chooses_nothing() {
    let tmp = bank_copy(|t| t.to_string());
    let missing = tmp.path().join("no-such.git");
    let missing = missing.to_str().unwrap();
    for (args, what) in [
        (vec!["diff", "platforms/bank", "-l", "tier=nope"], "compare"),
        (
            vec![
                "verify",
                "platforms/bank",
                "--repo",
                missing,
                "-l",
                "tier=nope",
            ],
            "verify",
        ),
    ] {
        let r = kiln_in(tmp.path(), &args);
        assert_eq!(r.code, Some(3), "{args:?}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stderr.contains(&format!(
                "the selection (-l tier=nope) chooses no BuildPlan: nothing to {what}"
            )) && r.stderr.contains("kiln::cli::empty_selection"),
            "{}",
            r.stderr
        );
        assert!(!r.stdout.contains("no differences"), "{}", r.stdout);
    }
    // A filter that chooses something compares as before.
    let r = kiln_in(
        tmp.path(),
        &["diff", "platforms/bank", "-p", "web", "-e", "dev", "--stat"],
    );
    assert!(!r.stderr.contains("empty_selection"), "{}", r.stderr);
    assert_ne!(r.code, Some(3), "{}", r.stderr);
}

#[test]
fn graph_json_has_every_stage_with_its_requested_freight() {
    let r = kiln_in(&repo_root(), &["graph", "platforms/bank", "-o", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let web = v["projects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "web")
        .unwrap();
    assert_eq!(web["warehouses"], serde_json::json!(["frontend"]));
    let stages = web["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 5);
    let test = stages
        .iter()
        .find(|s| s["name"] == "frontend-test")
        .unwrap();
    assert_eq!(
        test["requestedFreight"],
        serde_json::json!([{"origin": "frontend", "sources": {"stages": ["frontend-dev"]}}])
    );
    assert_eq!(test["writeBranch"], "stage/test");
}

#[test]
fn validate_counts_the_kubernetes_objects_it_checked() {
    let tmp = bank_copy(str::to_string);
    let out = tmp.path().join("out");
    let r = kiln_in(
        tmp.path(),
        &[
            "render",
            "platforms/bank",
            "--write-to",
            out.to_str().unwrap(),
            "-p",
            "web",
            "--no-cache",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = kiln_in(tmp.path(), &["validate", out.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let line = r.stderr.lines().last().unwrap_or_default();
    let counted = |after: &str| -> usize {
        let rest = &line[line.find(after).unwrap_or_else(|| panic!("{line}")) + after.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    assert!(line.contains("Kargo and Argo CD: no problems in"), "{line}");
    assert!(
        counted("Kubernetes: no problems in ") > 0,
        "the rendered Deployments and Services are counted: {line}"
    );
}

/// A path holding no manifest (a mistyped path in CI) is an error naming it, not "no
/// problems in 0 objects".
#[test]
fn validate_refuses_a_path_holding_no_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    std::fs::write(empty.join("README.txt"), "not yaml\n").unwrap();
    let r = kiln_in(tmp.path(), &["validate", "empty"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("kiln::cli::no_manifests"), "{}", r.stderr);
    assert!(
        r.stderr.contains("`empty` holds no manifest"),
        "{}",
        r.stderr
    );
}

/// `kiln init` outside kiln's repository: a platform and a first component whose schema
/// modelines resolve to the schemas written beside them (the same as `kiln schema --write`
/// and `schema/`), rendering as they are; a second init overwrites nothing.
#[test]
fn init_scaffolds_a_platform_that_renders_with_working_schema_modelines() {
    let tmp = tempfile::tempdir().unwrap();
    let r = kiln_in(
        tmp.path(),
        &["init", "shop", "--name", "shop", "--component", "cart"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let root = tmp.path().join("shop");
    for (file, schema) in [
        ("platforms/shop/platform.yaml", "platform.schema.json"),
        ("components/cart/component.yaml", "component.schema.json"),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let first = text.lines().next().unwrap();
        let target = first
            .strip_prefix("# yaml-language-server: $schema=")
            .unwrap_or_else(|| panic!("{file}: {first}"));
        let resolved = root.join(file).parent().unwrap().join(target);
        let written = std::fs::read_to_string(&resolved).unwrap();
        let committed = std::fs::read_to_string(repo_root().join("schema").join(schema)).unwrap();
        assert_eq!(written, committed, "{file} → {target}");
        assert!(written.contains("\"$id\": \"https://kiln.dev/schema/"));
    }
    let r = kiln_in(&root, &["render", "platforms/shop", "--no-cache"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        root.join("deploy/shop/dev/cart/kustomization.yaml")
            .is_file()
    );
    // Nothing is overwritten.
    let before = std::fs::read(root.join("platforms/shop/platform.yaml")).unwrap();
    let r = kiln_in(tmp.path(), &["init", "shop", "--name", "shop"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("kiln::cli::init_exists"), "{}", r.stderr);
    assert_eq!(
        std::fs::read(root.join("platforms/shop/platform.yaml")).unwrap(),
        before
    );
    // `kiln schema --write DIR` writes the same two files.
    let dir = tmp.path().join("schemas");
    let r = kiln_in(tmp.path(), &["schema", "--write", dir.to_str().unwrap()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for schema in ["platform.schema.json", "component.schema.json"] {
        assert_eq!(
            std::fs::read(dir.join(schema)).unwrap(),
            std::fs::read(root.join("schema").join(schema)).unwrap()
        );
    }
}

/// `kiln render` with no argument outside kiln's repository said "cannot open platform
/// directory `platforms/bank`", a directory the user never named. The default left in place
/// and missing is now a usage error (exit 2) saying that no platform was given and how to
/// give one; a `platforms/bank` the user typed is still reported as a path that cannot be
/// opened, and inside kiln's repository the default still works.
#[test]
fn a_command_without_a_platform_outside_kilns_repository_says_how_to_give_one() {
    let tmp = tempfile::tempdir().unwrap();
    for command in [&["render"][..], &["status"], &["show", "platform"]] {
        let r = kiln_in(tmp.path(), command);
        let name = command[0];
        assert_eq!(r.code, Some(2), "{name}: {}", r.stderr);
        // miette wraps lines, at any space: compared without whitespace.
        let bare = |s: &str| s.split_whitespace().collect::<String>();
        for said in [
            "kiln::cli::no_platform",
            "no platform given",
            &format!("`kiln {name} path/to/platform`"),
            &format!("`kiln {name} path/to/platform/platform.yaml`"),
            "`kiln init`",
        ] {
            assert!(
                bare(&r.stderr).contains(&bare(said)),
                "{name}: {said}\n{}",
                r.stderr
            );
        }
        assert!(!r.stderr.contains("cannot open"), "{}", r.stderr);
    }
    assert!(!tmp.path().join("deploy").exists(), "nothing written");
    let r = kiln_in(tmp.path(), &["render", "platforms/bank"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot open platform directory `platforms/bank`")
    );
    let r = kiln_in(&repo_root(), &["show", "platform"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

/// Issue 38, item 10: a render that renames or removes output says what, one line per kind
/// and environment (in the spec's order of environments), instead of only "24 removed".
#[test]
fn render_summarizes_the_environments_components_and_applications_it_renames_or_removes() {
    let tmp = bank_copy(|t| t.to_string());
    let platform = tmp.path().join("platforms/bank");
    let out_dir = tmp.path().join("deploy");
    let render = || render_summary(&platform, &out_dir);
    let edit_all = |edit: &dyn Fn(String) -> String| {
        let mut files = vec![platform.join("platform.yaml")];
        for c in std::fs::read_dir(tmp.path().join("components")).unwrap() {
            files.push(c.unwrap().path().join("component.yaml"));
        }
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            std::fs::write(&f, edit(text)).unwrap();
        }
    };
    let first = render();
    assert!(
        !first.contains("removes") && !first.contains("renames"),
        "{first}"
    );

    // The environment prod-west (not its cluster) becomes prod-us.
    edit_all(&|t| {
        t.replace(
            "  - name: prod-west\n    tier: prod",
            "  - name: prod-us\n    tier: prod",
        )
        .replace("        prod-west:\n", "        prod-us:\n")
        .replace(", prod-west]", ", prod-us]")
    });
    let renamed = render();
    assert!(
        renamed.contains("kiln: renames environment prod-west → prod-us\n"),
        "{renamed}"
    );
    assert!(
        renamed.contains("kiln: renames 12 Applications in prod-west: "),
        "{renamed}"
    );
    assert!(!renamed.contains("kiln: removes"), "{renamed}");

    // The instance status-page becomes status-board.
    edit_all(&|t| t.replace("  name: status-page\n", "  name: status-board\n"));
    let renamed = render();
    // One line per environment, in the spec's order (not the names' order: prod-* < test).
    let at: Vec<usize> = ["dev", "test", "prod-east", "prod-us"]
        .iter()
        .map(|env| {
            renamed
                .find(&format!(
                    "kiln: renames status-page → status-board in {env}\n"
                ))
                .unwrap_or_else(|| panic!("{env}: {renamed}"))
        })
        .collect();
    assert!(at.is_sorted(), "{renamed}");
    assert!(
        renamed.contains(
            "kiln: renames 1 Application in dev: ops-status-page-dev → ops-status-board-dev\n"
        ),
        "{renamed}"
    );
    assert!(!renamed.contains("kiln: removes"), "{renamed}");

    // prod-us goes.
    edit_all(&|t| {
        t.replace(
            "  - name: prod-us\n    tier: prod\n    cluster: prod-west\n    from: [stage]\n    parameters:\n      domain: west.bank.example.com\n      logLevel: warn\n",
            "",
        )
        .replace(", prod-us]", "]")
    });
    std::fs::write(
        platform.join("platform.yaml"),
        without_prod_us_parameters(
            &std::fs::read_to_string(platform.join("platform.yaml")).unwrap(),
        ),
    )
    .unwrap();
    let removed = render();
    assert!(
        removed.contains("kiln: removes environment prod-us\n"),
        "{removed}"
    );
    assert!(
        removed.contains("kiln: removes 12 Applications in prod-us\n"),
        "{removed}"
    );
    assert!(
        removed.contains("kiln: removes 12 components in prod-us: accounts-db, "),
        "{removed}"
    );
}

/// Repro A3 (a newcomer's report): renaming a project (its Kargo project with it) was
/// summarized as its components and Applications removed in every environment; it is one
/// rename line, as an environment's rename is.
#[test]
fn render_summarizes_a_renamed_project_as_one_rename() {
    let tmp = bank_copy(|t| t.to_string());
    let platform = tmp.path().join("platforms/bank");
    let out_dir = tmp.path().join("deploy");
    let render = || render_summary(&platform, &out_dir);
    render();
    let file = platform.join("platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\n  - name: ops\n"));
    std::fs::write(
        &file,
        text.replace("\n  - name: ops\n", "\n  - name: operations\n"),
    )
    .unwrap();
    let renamed = render();
    let lines: Vec<&str> = renamed
        .lines()
        .filter(|l| !l.starts_with("kiln: rendered "))
        .collect();
    assert_eq!(
        lines,
        ["kiln: renames project ops → operations"],
        "{renamed}"
    );
}

/// `kiln render PLATFORM --write-to OUT --no-cache`, which must succeed: its stderr (the
/// write's summary).
fn render_summary(platform: &std::path::Path, out_dir: &std::path::Path) -> String {
    let out = kiln_bin()
        .arg("render")
        .arg(platform)
        .arg("--write-to")
        .arg(out_dir)
        .arg("--no-cache")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

/// `platform.yaml` without its `prod-us:` parameter blocks (the key and its deeper lines).
fn without_prod_us_parameters(text: &str) -> String {
    let mut out = Vec::new();
    let mut skip_deeper_than = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(d) = skip_deeper_than {
            if indent > d {
                continue;
            }
            skip_deeper_than = None;
        }
        if line.trim() == "prod-us:" {
            skip_deeper_than = Some(indent);
            continue;
        }
        out.push(line);
    }
    out.join("\n") + "\n"
}

/// Issue 38's documentation items, each where a reader looks for it: the README tour makes
/// the write repository (`git init --bare`) before it publishes (item 10); `--help` says
/// where `--schema-dir`'s schemas come from (item 10); docs/pipeline.md's prerequisites list
/// Kargo's image-registry credentials and Argo CD's repository and cluster Secrets (item 4),
/// and say that write branches are made before Kargo runs and what a layout change needs
/// (items 1 and 3); the README states the cold build time and how CI caches it (item 11).
#[test]
fn the_docs_hold_what_issue_38_asks_of_them() {
    let read = |f: &str| std::fs::read_to_string(repo_root().join(f)).unwrap();
    let readme = read("README.md");
    let init = readme
        .find("git init --bare")
        .expect("the tour makes a bare repository");
    let publish = readme.find("kiln publish ").unwrap();
    assert!(
        init < publish,
        "the tour publishes before `git init --bare`"
    );
    assert!(
        readme.contains("A cold build from source") && readme.contains("caches"),
        "the README states the cold build and its cache"
    );
    let help = kiln_bin().args(["render", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let bare = |s: &str| s.split_whitespace().collect::<String>();
    for source in ["charts/kargo/resources/crds/", "manifests/crds/"] {
        assert!(
            bare(&help).contains(source),
            "--schema-dir: {source}\n{help}"
        );
    }
    let pipeline = read("docs/pipeline.md");
    let prerequisites = pipeline
        .split("### Prerequisites kiln does not generate")
        .nth(1)
        .expect("a prerequisites section");
    for secret in [
        "kargo.akuity.io/cred-type: image",
        "argocd.argoproj.io/secret-type: repository",
        "argocd.argoproj.io/secret-type: cluster",
    ] {
        assert!(prerequisites.contains(secret), "prerequisites: {secret}");
    }
    assert!(pipeline.contains("**Write branches must exist before Kargo runs.**"));
    assert!(pipeline.contains("after every layout change"));
}
