//! Issue 9: publish, diff, verify and history as one GitOps flow. Each test names the item it
//! covers; every one of them failed before the change it tests. The CLI is run as a user runs
//! it (the built `kiln` binary), against repositories in temporary directories, read back with
//! the `git` CLI.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{copy_dir, git};
use kiln::artifact::{ArtifactSet, Scope};
use kiln::git::{self, CommitTime, GitError, HistoryFilter, Identity, Provenance, PublishOptions};
use miette::Diagnostic;

fn here() -> std::path::PathBuf {
    crate::support::repo_root()
}

/// Runs kiln in `dir`; returns (exit code, stdout, stderr).
fn kiln_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let run = crate::support::kiln_in(dir, args);
    (run.code.unwrap_or(-1), run.stdout, run.stderr)
}

const T0: i64 = 1_700_000_000;

fn kiln(args: &[&str]) -> (i32, String, String) {
    kiln_in(&here(), args)
}

fn bare(dir: &Path, name: &str) -> PathBuf {
    git(dir, &["init", "-q", "--bare", name]);
    dir.join(name)
}

fn tree_of(repo: &Path, reference: &str) -> Vec<String> {
    git(repo, &["ls-tree", "-r", "--name-only", reference])
        .lines()
        .map(str::to_string)
        .collect()
}

/// A copy of the bank platform and its components under `dir`, its spec passed through
/// `edit`. Returns the platform directory.
fn bank_copy(dir: &Path, edit: impl Fn(String) -> String) -> PathBuf {
    copy_dir(&here().join("components"), &dir.join("components"));
    let spec = std::fs::read_to_string(here().join("platforms/bank/platform.yaml")).unwrap();
    std::fs::create_dir_all(dir.join("platforms/bank")).unwrap();
    std::fs::write(dir.join("platforms/bank/platform.yaml"), edit(spec)).unwrap();
    dir.join("platforms/bank")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

pub(crate) fn options(repo: &Path) -> PublishOptions {
    PublishOptions::new(
        repo.display().to_string(),
        "main",
        Identity {
            name: "kiln".into(),
            email: "kiln@example.com".into(),
        },
        CommitTime {
            seconds: T0,
            offset_minutes: 0,
        },
        Provenance {
            source_commit: None,
            kiln_version: "0.1.0".into(),
            spec_digest: None,
            sources: Vec::new(),
        },
    )
}

fn component(env: &str, name: &str, tag: &str) -> [(String, String); 2] {
    let dir = format!("shop/{env}/{name}");
    [
        (
            format!("{dir}/kustomization.yaml"),
            format!(
                "resources:\n- {name}.gen.yaml\nimages:\n- name: {name}\n  newTag: \"{tag}\"\n"
            ),
        ),
        (
            format!("{dir}/{name}.gen.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  tag: \"{tag}\"\n"
            ),
        ),
    ]
}

pub(crate) fn shop(components: &[(&str, &str, &str)]) -> ArtifactSet {
    let mut out = ArtifactSet::new();
    for (env, name, tag) in components {
        for (p, b) in component(env, name, tag) {
            out.insert(p, b);
        }
    }
    out
}

fn code(e: &GitError) -> String {
    e.code().map(|c| c.to_string()).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// 1, 11: one selection rule

/// Item 1: `publish -e dev` then `-p web` after a full publish removed 80, then 38 files.
#[test]
fn item01_filtered_publish_touches_only_its_slice() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let (c, _, err) = kiln(&["publish", "platforms/bank", "--repo", s(&repo)]);
    assert_eq!(c, 0, "{err}");
    let full = tree_of(&repo, "main");
    for filter in [["-e", "dev"], ["-p", "web"], ["-c", "frontend"]] {
        let (c, _, err) = kiln(&[
            "publish",
            "platforms/bank",
            "--repo",
            s(&repo),
            filter[0],
            filter[1],
        ]);
        assert_eq!(c, 0, "{err}");
        assert!(err.contains("up to date"), "{filter:?}: {err}");
        assert_eq!(tree_of(&repo, "main"), full, "{filter:?}");
    }
}

/// Item 1 (library): a filtered publish prunes kiln's files inside its slice only, and the
/// files outside stay owned, so the next full publish still prunes them.
#[test]
fn item01_scoped_publish_prunes_inside_and_keeps_ownership_outside() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let o = options(&repo);
    git::publish(
        &shop(&[
            ("dev", "api", "1"),
            ("dev", "old", "1"),
            ("prod", "api", "1"),
        ]),
        &o,
    )
    .unwrap();
    let mut scoped = o.clone();
    scoped.scope = Scope::Dirs(["shop/dev/api/".to_string(), "shop/dev/old/".to_string()].into());
    let out = git::publish(&shop(&[("dev", "api", "2")]), &scoped).unwrap();
    assert_eq!(out.files.removed, 2, "shop/dev/old is inside the slice");
    let tree = tree_of(&repo, "main");
    assert!(
        tree.contains(&"shop/prod/api/kustomization.yaml".to_string()),
        "{tree:?}"
    );
    assert!(
        !tree.iter().any(|p| p.starts_with("shop/dev/old/")),
        "{tree:?}"
    );
    let marker = git(&repo, &["show", "main:.kiln-owned.json"]);
    assert!(
        marker.contains("shop/prod/api/kustomization.yaml"),
        "{marker}"
    );
    // A full publish without prod now prunes it: it stayed kiln's.
    let out = git::publish(&shop(&[("dev", "api", "2")]), &o).unwrap();
    assert_eq!(out.files.removed, 2);
}

/// Item 1: `diff -e dev` listed every non-dev file as removed; it must predict `render -e dev`.
#[test]
fn item01_filtered_diff_predicts_the_filtered_render() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let (c, _, err) = kiln(&["render", "platforms/bank", "--write-to", s(&out)]);
    assert_eq!(c, 0, "{err}");
    let (c, text, err) = kiln(&["diff", "platforms/bank", "--against", s(&out), "-e", "dev"]);
    assert_eq!((c, text.as_str()), (0, "no differences\n"), "{err}");
    // A stale file inside the slice is reported, and the filtered render removes exactly it.
    let marker = std::fs::read_to_string(out.join(".kiln-owned.json")).unwrap();
    std::fs::write(
        out.join(".kiln-owned.json"),
        marker.replace(
            "\"files\": [",
            "\"files\": [\n    \"web/dev/frontend/stale.yaml\",\n    \"web/prod-east/frontend/stale.yaml\",",
        ),
    )
    .unwrap();
    std::fs::write(out.join("web/dev/frontend/stale.yaml"), "a: 1\n").unwrap();
    std::fs::write(out.join("web/prod-east/frontend/stale.yaml"), "a: 1\n").unwrap();
    let (c, text, _) = kiln(&[
        "diff",
        "platforms/bank",
        "--against",
        s(&out),
        "-e",
        "dev",
        "--stat",
    ]);
    assert_eq!(c, 1);
    assert_eq!(
        text,
        "removed  web/dev/frontend/stale.yaml\n1 file differs\n"
    );
    let (c, _, err) = kiln(&[
        "render",
        "platforms/bank",
        "--write-to",
        s(&out),
        "-e",
        "dev",
    ]);
    assert_eq!(c, 0);
    assert!(err.contains("1 removed"), "{err}");
    assert!(out.join("web/prod-east/frontend/stale.yaml").exists());
}

/// Item 11: `-l tier=nope` wrote files; `-c frontend` wrote every project's Kargo/Argo CD.
#[test]
fn item11_selection_rule_is_the_same_for_every_command() {
    let t = tempfile::tempdir().unwrap();
    let nothing = t.path().join("nothing");
    let (c, _, err) = kiln(&[
        "render",
        "platforms/bank",
        "--write-to",
        s(&nothing),
        "-l",
        "tier=nope",
    ]);
    assert_eq!(c, 0, "{err}");
    assert!(
        !nothing.exists(),
        "a selection matching nothing writes nothing"
    );

    let out = t.path().join("frontend");
    let (c, _, err) = kiln(&[
        "render",
        "platforms/bank",
        "--write-to",
        s(&out),
        "-c",
        "frontend",
    ]);
    assert_eq!(c, 0, "{err}");
    let mut projects: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    projects.sort();
    assert_eq!(projects, ["web"], "only frontend's project");

    // publish with the same filter publishes the same files.
    let repo = bare(t.path(), "r.git");
    let (c, _, err) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        s(&repo),
        "-c",
        "frontend",
        "--path",
        "",
    ]);
    assert_eq!(c, 0, "{err}");
    let mut rendered: Vec<String> = Vec::new();
    walk(&out, "", &mut rendered);
    assert_eq!(tree_of(&repo, "main"), rendered);
    let (c, _, err) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        s(&repo),
        "-l",
        "tier=nope",
    ]);
    assert_eq!(c, 0, "{err}");
    assert!(
        err.contains(
            "warning: the selection (-l tier=nope) chooses no BuildPlan: nothing to publish"
        ),
        "{err}"
    );
    // verify takes the selection too: the frontend slice verifies clean.
    let (c, text, _) = kiln(&[
        "verify",
        "platforms/bank",
        "--repo",
        s(&repo),
        "-c",
        "frontend",
        "--path",
        "",
    ]);
    assert_eq!(c, 0, "{text}");
}

fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if e.file_type().unwrap().is_dir() {
            walk(&e.path(), &path, out);
        } else {
            out.push(path);
        }
    }
    out.sort();
}

// ---------------------------------------------------------------------------------------------
// 2: no writes through symlinks in a checked-out repository

#[test]
fn item02_publish_never_writes_through_untracked_symlinks() {
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    git(t.path(), &["init", "-q", "work"]);
    let victim = t.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let mut o = options(&work);
    git::publish(&shop(&[("dev", "api", "1")]), &o).unwrap();

    // A symlinked component directory the next render writes into.
    std::os::unix::fs::symlink(&victim, work.join("shop/dev/web")).unwrap();
    let before = git(&work, &["rev-parse", "main"]);
    let err = git::publish(&shop(&[("dev", "api", "1"), ("dev", "web", "1")]), &o).unwrap_err();
    assert_eq!(code(&err), "kiln::git::symlink_in_worktree", "{err}");
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing written there"
    );
    assert_eq!(
        git(&work, &["rev-parse", "main"]),
        before,
        "the branch did not move"
    );

    // The whole --path an untracked symlink.
    std::fs::remove_file(work.join("shop/dev/web")).unwrap();
    std::os::unix::fs::symlink(&victim, work.join("deploy")).unwrap();
    o.path = Some("deploy".into());
    let err = git::publish(&shop(&[("dev", "api", "1")]), &o).unwrap_err();
    assert_eq!(code(&err), "kiln::git::symlink_in_worktree", "{err}");
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------------------------
// 3, 4: credentials

/// Item 3: a token in a spec URL was copied into ~70 lines of output and echoed by errors.
#[test]
fn item03_credentials_in_spec_urls_are_refused_without_echoing_them() {
    for (from, field) in [
        (
            "https://github.com/example/bank-platform.git",
            "spec.source.repoURL",
        ),
        (
            "https://github.com/example/bank-web-deploy.git",
            "spec.projects[0].output.repoURL",
        ),
        // Every Application's destination.server (found by the QA pass).
        (
            "https://nonprod.k8s.bank.example.com",
            "spec.clusters[0].server",
        ),
    ] {
        let t = tempfile::tempdir().unwrap();
        let with_token = from.replace("https://", "https://bot:TOKEN123@");
        let platform = bank_copy(t.path(), |spec| spec.replace(from, &with_token));
        for command in ["render", "show"] {
            let args: Vec<&str> = if command == "show" {
                vec!["show", "platform", s(&platform)]
            } else {
                vec!["render", s(&platform), "--write-to", "out"]
            };
            let (c, out, err) = kiln_in(t.path(), &args);
            assert_eq!(c, 1, "{out}{err}");
            assert!(err.contains("kiln::validate::credentials_in_url"), "{err}");
            assert!(err.contains(field), "{err}");
            assert!(err.contains("credential helper"), "{err}");
            assert!(
                !out.contains("TOKEN123") && !err.contains("TOKEN123"),
                "{out}{err}"
            );
        }
        assert!(!t.path().join("out").exists());
    }
}

/// Item 4 for `kiln promote --repo-map`: a token on either side is never echoed, and a
/// network URL as the stand-in is refused (promote writes only local stand-ins).
#[test]
fn item04_promote_repo_map_never_echoes_a_token() {
    let (c, out, err) = kiln_in(
        &here(),
        &[
            "promote",
            "backend-dev",
            "platforms/bank",
            "--freight",
            "latest",
            "--repo-map",
            "https://github.com/example/bank-platform.git=https://u:TOKPROM@127.0.0.1:9/x.git",
        ],
    );
    assert_ne!(c, 0, "{out}{err}");
    assert!(err.contains("kiln::promote::bad_repo_map"), "{err}");
    assert!(
        !out.contains("TOKPROM") && !err.contains("TOKPROM"),
        "{out}{err}"
    );
    let (c, out, err) = kiln_in(
        &here(),
        &[
            "promote",
            "backend-dev",
            "platforms/bank",
            "--freight",
            "latest",
            "--repo-map",
            "u:TOKPROM2@x",
        ],
    );
    assert_ne!(c, 0, "{out}{err}");
    assert!(
        !out.contains("TOKPROM2") && !err.contains("TOKPROM2"),
        "{out}{err}"
    );
}

/// Item 4: URL forms users paste that printed the token.
#[test]
fn item04_every_printed_url_is_redacted() {
    let t = tempfile::tempdir().unwrap();
    for url in [
        "https://user:SUPER/SECRET@127.0.0.1:9/x.git",
        "user:SUPERSECRET@127.0.0.1:x.git",
        "https://127.0.0.1:9/x.git?access_token=SUPERSECRET",
        "file://user:SUPERSECRET@/no/such/x.git",
    ] {
        let (c, out, err) = kiln(&["publish", "platforms/bank", "--repo", url]);
        assert_ne!(c, 0);
        assert!(
            !(out.clone() + &err).contains("SECRET"),
            "{url}: {out}{err}"
        );
        let (c, out, err) = kiln(&["verify", "platforms/bank", "--repo", url]);
        assert_eq!(c, 3);
        assert!(
            !(out.clone() + &err).contains("SECRET"),
            "{url}: {out}{err}"
        );
        let against = format!("{url}@main");
        let (c, out, err) = kiln(&["diff", "platforms/bank", "--against", &against]);
        assert_eq!(c, 3);
        assert!(
            !(out.clone() + &err).contains("SECRET"),
            "{url}: {out}{err}"
        );
    }
    let _ = t.path();
}

// ---------------------------------------------------------------------------------------------
// 5, 7, 10: one flow, exit codes, diff's arguments

/// Item 5: the README's publish wrote at the repository root, where no Warehouse looks.
#[test]
fn item05_publish_defaults_to_rendered_path_and_warns_about_the_repo() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let (c, _, err) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        s(&repo),
        "--branch",
        "main",
    ]);
    assert_eq!(c, 0, "{err}");
    let tree = tree_of(&repo, "main");
    assert!(tree.iter().all(|p| p.starts_with("deploy/")), "{tree:?}");
    assert!(tree.contains(&"deploy/web/dev/frontend/kustomization.yaml".to_string()));
    assert!(
        err.contains("warning") && err.contains("spec.source.repoURL"),
        "{err}"
    );
    // An explicit --path still wins.
    let repo2 = bare(t.path(), "r2.git");
    let (c, _, _) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        s(&repo2),
        "--path",
        "x",
    ]);
    assert_eq!(c, 0);
    assert!(tree_of(&repo2, "main").iter().all(|p| p.starts_with("x/")));
}

/// Item 7: a broken spec, an unreachable remote and a missing ref all exited 1, the code
/// that means "different".
#[test]
fn item07_diff_and_verify_exit_codes_follow_kubectl_diff() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let (c, _, err) = kiln(&["publish", "platforms/bank", "--repo", s(&repo)]);
    assert_eq!(c, 0, "{err}");
    let at_main = format!("{}@main", s(&repo));
    let at_nope = format!("{}@nope", s(&repo));
    let broken = bank_copy(&t.path().join("broken"), |spec| {
        spec.replace("kind: Platform", "kind: Platfrom")
    });
    let changed = bank_copy(&t.path().join("changed"), |spec| {
        spec.replace(
            "domain: dev.bank.example.com",
            "domain: dev2.bank.example.com",
        )
    });
    let cases: Vec<(&str, Vec<&str>, i32)> = vec![
        (
            "diff same",
            vec![
                "diff",
                "platforms/bank",
                "--against",
                &at_main,
                "--path",
                "deploy",
            ],
            0,
        ),
        (
            "diff different",
            vec![
                "diff",
                s(&changed),
                "--against",
                &at_main,
                "--path",
                "deploy",
            ],
            1,
        ),
        (
            "diff broken spec",
            vec!["diff", s(&broken), "--against", &at_main],
            3,
        ),
        (
            "diff unreachable",
            vec![
                "diff",
                "platforms/bank",
                "--against",
                "https://127.0.0.1:9/x.git@main",
            ],
            3,
        ),
        (
            "diff missing ref",
            vec!["diff", "platforms/bank", "--against", &at_nope],
            3,
        ),
        ("diff usage", vec!["diff", "--no-such-flag"], 2),
        (
            "verify same",
            vec!["verify", "platforms/bank", "--repo", s(&repo)],
            0,
        ),
        (
            "verify drift",
            vec!["verify", s(&changed), "--repo", s(&repo)],
            1,
        ),
        (
            "verify broken spec",
            vec!["verify", s(&broken), "--repo", s(&repo)],
            3,
        ),
        (
            "verify unreachable",
            vec![
                "verify",
                "platforms/bank",
                "--repo",
                "https://127.0.0.1:9/x.git",
            ],
            3,
        ),
        (
            "verify missing ref",
            vec![
                "verify",
                "platforms/bank",
                "--repo",
                s(&repo),
                "--ref",
                "nope",
            ],
            3,
        ),
        ("verify usage", vec!["verify"], 2),
    ];
    for (name, args, want) in cases {
        let (c, out, err) = kiln(&args);
        assert_eq!(c, want, "{name}: {out}{err}");
    }
    // verify found the rendered path itself (item 5): no --path needed.
    let (c, out, _) = kiln(&["verify", "platforms/bank", "--repo", s(&repo), "-q"]);
    assert_eq!((c, out.as_str()), (0, ""));
}

/// Item 10: `diff --path` was refused; `--against repo@main:apps/acme` and a missing
/// directory compared against nothing.
#[test]
fn item10_diff_path_and_bad_against() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let (c, _, _) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        s(&repo),
        "--path",
        "apps/acme",
    ]);
    assert_eq!(c, 0);
    let at_main = format!("{}@main", s(&repo));
    let (c, text, err) = kiln(&[
        "diff",
        "platforms/bank",
        "--against",
        &at_main,
        "--path",
        "apps/acme",
    ]);
    assert_eq!((c, text.as_str()), (0, "no differences\n"), "{err}");
    for bad in [
        format!("{}@main:apps/acme", s(&repo)),
        "/no/such/dir".to_string(),
    ] {
        let (c, _, err) = kiln(&["diff", "platforms/bank", "--against", &bad]);
        assert_eq!(c, 3, "{bad}: {err}");
        assert!(err.contains("kiln::git::invalid_against"), "{err}");
    }
}

// ---------------------------------------------------------------------------------------------
// 8, 9: provenance and history

/// Item 8: the spec digest covered platform.yaml only, and a component edit was not dirty.
#[test]
fn item08_provenance_covers_every_input_file() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let platform = bank_copy(&src, |spec| spec);
    git(t.path(), &["init", "-q", "src"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "platform"]);
    let repo = bare(t.path(), "r.git");
    let trailer = |key: &str| {
        let msg = git(&repo, &["log", "-1", "--format=%B", "main"]);
        msg.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
            .unwrap_or_default()
    };
    let (c, _, err) = kiln_in(&src, &["publish", s(&platform), "--repo", s(&repo)]);
    assert_eq!(c, 0, "{err}");
    let digest1 = trailer("Kiln-Spec-Digest");
    assert!(!trailer("Kiln-Source-Commit").ends_with("-dirty"));

    let file = src.join("components/frontend/component.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("tag: \"1.4.2\"", "tag: \"1.4.3\"")).unwrap();
    let (c, _, err) = kiln_in(&src, &["publish", s(&platform), "--repo", s(&repo)]);
    assert_eq!(c, 0, "{err}");
    assert_ne!(
        trailer("Kiln-Spec-Digest"),
        digest1,
        "a component file is an input"
    );
    assert!(trailer("Kiln-Source-Commit").ends_with("-dirty"));
}

/// Item 9: a hand edit on `stage/<env>` was labelled project "-", environment "backend", and
/// "published"; the list view did not show it.
#[test]
fn item09_history_shows_commits_kiln_did_not_make() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let o = options(&repo);
    let mut render = shop(&[("dev", "api", "1")]);
    render.insert("shop/kargo/x.yaml", "kind: Warehouse\n");
    git::publish_per_environment(
        &render,
        &o,
        &git::SplitMode::Branches {
            prefix: "stage/".into(),
        },
    )
    .unwrap();
    git(
        t.path(),
        &["clone", "-q", "-b", "stage/dev", s(&repo), "work"],
    );
    let work = t.path().join("work");
    let k = work.join("shop/api/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    std::fs::write(&k, text.replace("newTag: \"1\"", "newTag: \"1-hotfix\"")).unwrap();
    git(&work, &["commit", "-q", "-am", "hotfix api"]);
    git(&work, &["push", "-q", "origin", "stage/dev"]);

    let auth = git::RemoteAuth::default();
    let filter = HistoryFilter::default();
    let state = git::deployed_at(
        s(&repo),
        "stage/dev",
        i64::MAX / 4,
        &filter,
        &git::WriteLayout::default(),
        &auth,
    )
    .unwrap();
    assert!(!state.made_by_kiln);
    assert_eq!(state.summary.as_deref(), Some("hotfix api"));
    assert_eq!(state.author.as_ref().unwrap().email, "hand@example.com");
    let c = &state.images[0];
    assert_eq!(
        (
            c.project.as_str(),
            c.environment.as_str(),
            c.component.as_str()
        ),
        ("shop", "dev", "api")
    );
    assert!(
        state.to_string().contains("not made by kiln: hotfix api"),
        "{state}"
    );
    let history = git::history(
        s(&repo),
        "stage/dev",
        &filter,
        &git::WriteLayout::default(),
        &auth,
    )
    .unwrap();
    assert_eq!(history.entries.len(), 2);
    assert!(!history.entries[0].made_by_kiln);
    assert_eq!(
        history.entries[0]
            .changes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["changed component shop/dev/api"]
    );
    assert!(history.entries[1].made_by_kiln);
}

// ---------------------------------------------------------------------------------------------
// 12-16: concurrency and crash safety

/// Item 12: 4 publishers × 5 rounds into a checked-out repository: 7 of 20 failed with
/// `working_tree_conflict` (each other's in-flight worktree updates).
#[test]
fn item12_concurrent_publishers_into_a_checked_out_repo_all_land() {
    let t = tempfile::tempdir().unwrap();
    git(t.path(), &["init", "-q", "work"]);
    let work = t.path().join("work");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let barrier = barrier.clone();
            let mut o = options(&work);
            o.path = Some(format!("team{i}"));
            o.max_attempts = 50;
            std::thread::spawn(move || {
                let mut results = Vec::new();
                for round in 0..5 {
                    barrier.wait();
                    let tag = format!("{i}.{round}");
                    results.push(git::publish(&shop(&[("dev", "api", &tag)]), &o));
                }
                results
            })
        })
        .collect();
    for h in handles {
        for r in h.join().unwrap() {
            assert!(r.is_ok(), "{:?}", r.err().map(|e| e.to_string()));
        }
    }
    assert_eq!(git(&work, &["rev-list", "--count", "main"]).trim(), "20");
    assert_eq!(
        git(&work, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    for i in 0..4 {
        let k =
            std::fs::read_to_string(work.join(format!("team{i}/shop/dev/api/kustomization.yaml")))
                .unwrap();
        assert!(k.contains(&format!("newTag: \"{i}.4\"")), "{k}");
    }
}

/// Item 13: killed between the ref update and the worktree update, the next identical
/// publish said "up to date" and never repaired the checkout.
#[test]
fn item13_publish_recovers_after_a_kill_between_ref_and_worktree() {
    let t = tempfile::tempdir().unwrap();
    git(t.path(), &["init", "-q", "work"]);
    let work = t.path().join("work");
    let o = options(&work);
    git::publish(&shop(&[("dev", "api", "1"), ("dev", "old", "1")]), &o).unwrap();
    let mut crashing = o.clone();
    crashing.crash_after_ref_update = true;
    let v2 = shop(&[("dev", "api", "2"), ("dev", "new", "1")]);
    git::publish(&v2, &crashing).unwrap();
    assert_ne!(
        git(&work, &["status", "--porcelain"]),
        "",
        "the kill left the checkout behind"
    );

    let out = git::publish(&v2, &o).unwrap();
    assert_eq!(out.commit, None, "nothing new to commit");
    assert_eq!(
        git(&work, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    let k = std::fs::read_to_string(work.join("shop/dev/api/kustomization.yaml")).unwrap();
    assert!(k.contains("newTag: \"2\""), "{k}");
    assert!(!work.join("shop/dev/old").exists());
    assert!(work.join("shop/dev/new/kustomization.yaml").exists());
}

/// A checked-out repository `work` in `dir` with `api` 1 published, then `api` 2 published
/// by a run killed after the branch moved (its working tree still at 1): the repository, the
/// options and the second set.
pub(crate) fn publish_killed_after_ref_update(
    dir: &Path,
) -> (PathBuf, PublishOptions, ArtifactSet) {
    git(dir, &["init", "-q", "work"]);
    let work = dir.join("work");
    let o = options(&work);
    git::publish(&shop(&[("dev", "api", "1")]), &o).unwrap();
    let mut crashing = o.clone();
    crashing.crash_after_ref_update = true;
    let v2 = shop(&[("dev", "api", "2")]);
    git::publish(&v2, &crashing).unwrap();
    (work, o, v2)
}

/// Issue 39, item 12: a publish killed while writing a working-tree file left it 0 bytes long,
/// which the next publish took for someone's change. Files are now written to a temporary
/// file and renamed in, so a kill mid-write leaves the old file and a partial temporary one
/// (made here by hand); the next publish finishes the update and leaves nothing behind.
#[test]
fn a_publish_killed_mid_write_is_finished_by_the_next_one() {
    let t = tempfile::tempdir().unwrap();
    let (work, o, v2) = publish_killed_after_ref_update(t.path());
    // The kill came while the new bytes were half written to the temporary file.
    let tmp = work.join("shop/dev/api/.kustomization.yaml.kiln-publish-tmp");
    std::fs::write(&tmp, "apiVersion: kustomize.config.k8s.io/v1beta1\nki").unwrap();
    let old = std::fs::read_to_string(work.join("shop/dev/api/kustomization.yaml")).unwrap();
    assert!(old.contains("newTag: \"1\""), "{old}");

    let out = git::publish(&v2, &o).unwrap();
    assert_eq!(out.commit, None, "nothing new to commit");
    assert_eq!(
        git(&work, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert!(!tmp.exists());
    let k = std::fs::read_to_string(work.join("shop/dev/api/kustomization.yaml")).unwrap();
    assert!(k.contains("newTag: \"2\""), "{k}");
}

/// Item 15: `--branch HEAD` created `refs/heads/HEAD`, `--branch refs/tags/v1` created
/// `refs/heads/refs/tags/v1`.
#[test]
fn item15_branch_names_are_checked_like_git_check_ref_format() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    for bad in [
        "HEAD",
        "refs/tags/v1",
        "-x",
        "@",
        "a..b",
        "a.lock",
        "a/",
        "a b",
        "a~1",
        "",
    ] {
        let mut o = options(&repo);
        o.branch = bad.to_string();
        let err = git::publish(&shop(&[("dev", "api", "1")]), &o).unwrap_err();
        assert_eq!(code(&err), "kiln::git::invalid_branch", "{bad:?}");
    }
    assert_eq!(git(&repo, &["for-each-ref"]), "");
    for good in ["main", "stage/prod-east", "release-1.2"] {
        assert!(git::is_valid_branch_name(good), "{good}");
    }
}

/// Item 16: a new bare repository kept HEAD on `master`, so `git clone` checked out nothing.
#[test]
fn item16_first_branch_of_a_new_bare_repo_becomes_head() {
    let t = tempfile::tempdir().unwrap();
    git(
        t.path(),
        &[
            "-c",
            "init.defaultBranch=master",
            "init",
            "-q",
            "--bare",
            "r.git",
        ],
    );
    let repo = t.path().join("r.git");
    let mut o = options(&repo);
    o.branch = "deploy".into();
    git::publish(&shop(&[("dev", "api", "1")]), &o).unwrap();
    assert_eq!(
        git(&repo, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/deploy"
    );
    git(t.path(), &["clone", "-q", s(&repo), "clone"]);
    assert!(
        t.path()
            .join("clone/shop/dev/api/kustomization.yaml")
            .exists()
    );
    // A second branch does not move HEAD again.
    o.branch = "other".into();
    git::publish(&shop(&[("dev", "api", "1")]), &o).unwrap();
    assert_eq!(
        git(&repo, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/deploy"
    );
}

// ---------------------------------------------------------------------------------------------
// usability

#[test]
fn json_stat_and_quiet_outputs() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let (c, out, err) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        s(&repo),
        "-o",
        "json",
    ]);
    assert_eq!(c, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v[0]["path"], "deploy");
    assert!(v[0]["files"]["added"].as_u64().unwrap() > 100, "{v}");
    let changed = bank_copy(&t.path().join("c"), |spec| {
        spec.replace(
            "domain: dev.bank.example.com",
            "domain: dev2.bank.example.com",
        )
    });
    let (c, out, _) = kiln(&["verify", s(&changed), "--repo", s(&repo), "-o", "json"]);
    assert_eq!(c, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(!v["drift"]["files"].as_array().unwrap().is_empty());
    let (c, out, _) = kiln(&["verify", s(&changed), "--repo", s(&repo), "--stat"]);
    assert_eq!(c, 1);
    assert!(out.lines().count() < 40, "{out}");
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .trim_start()
            .starts_with("changed"),
        "{out}"
    );
    let at = format!("{}@main", s(&repo));
    let (c, out, _) = kiln(&[
        "diff",
        s(&changed),
        "--against",
        &at,
        "--path",
        "deploy",
        "-q",
    ]);
    assert_eq!((c, out.as_str()), (1, ""));
    let (c, out, _) = kiln(&[
        "diff",
        s(&changed),
        "--against",
        &at,
        "--path",
        "deploy",
        "-o",
        "json",
    ]);
    assert_eq!(c, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["files"][0]["path"].is_string());
}

#[test]
fn commit_subjects_say_add_and_remove() {
    let t = tempfile::tempdir().unwrap();
    let repo = bare(t.path(), "r.git");
    let (c, _, _) = kiln(&["publish", "platforms/bank", "--repo", s(&repo)]);
    assert_eq!(c, 0);
    let subject = git(&repo, &["log", "-1", "--format=%s", "main"]);
    assert!(subject.starts_with("kiln: add "), "{subject}");
    let mut o = options(&repo);
    o.path = Some("deploy".into());
    // Publishing nothing over the whole tree: a pure removal.
    let out = git::publish(&ArtifactSet::new(), &o).unwrap();
    assert!(out.commit.is_some());
    let subject = git(&repo, &["log", "-1", "--format=%s", "main"]);
    assert!(subject.starts_with("kiln: remove "), "{subject}");
}

// ---------------------------------------------------------------------------------------------
// done when: the CI recipe (docs/gitops.md) publishes where the generated pipeline looks

/// The `kiln …` lines of the CI recipe in docs/gitops.md, in the order they appear, and the recipe's
/// `SOURCE_REPO`.
fn ci_recipe() -> (Vec<String>, String) {
    let readme = std::fs::read_to_string(here().join("docs/gitops.md")).unwrap();
    let section = readme
        .split("## CI: verify on pull requests, publish on main")
        .nth(1)
        .expect("docs/gitops.md has the CI recipe");
    let block = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("the recipe is a yaml block");
    let mut commands = Vec::new();
    let mut source_repo = String::new();
    for line in block.lines() {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("SOURCE_REPO: ") {
            source_repo = v.to_string();
        }
        let line = line.strip_prefix("run: ").unwrap_or(line);
        if line.starts_with("kiln ") {
            commands.push(line.to_string());
        }
    }
    (commands, source_repo)
}

#[test]
fn ci_recipe_publishes_where_the_warehouses_look() {
    let (commands, source_repo) = ci_recipe();
    assert_eq!(commands.len(), 3, "{commands:?}");
    // The recipe's repository is the one the generated pipeline watches.
    let (c, platform, err) = kiln(&["show", "platform", "platforms/bank", "-o", "json"]);
    assert_eq!(c, 0, "{err}");
    let platform: serde_json::Value = serde_json::from_str(&platform).unwrap();
    assert_eq!(platform["source"]["repoURL"], source_repo.as_str());

    // A fresh clone of the platform repository, the PR's base checkout beside it, and a local
    // bare repository standing in for SOURCE_REPO.
    let t = tempfile::tempdir().unwrap();
    let clone = t.path().join("clone");
    bank_copy(&clone, |spec| spec);
    bank_copy(&t.path().join("base"), |spec| spec);
    let remote = bare(t.path(), "source.git");
    let bin = Path::new(env!("CARGO_BIN_EXE_kiln")).parent().unwrap();
    let run = |command: &str| {
        let out = Command::new("sh")
            .args(["-c", command])
            .current_dir(&clone)
            .env("PATH", crate::support::path_with(bin))
            .env("SOURCE_REPO", &remote)
            // The render cache and its key in the test's own cache home, not the caller's.
            .env("XDG_CACHE_HOME", t.path().join("xdg-cache"))
            .env("KILN_GIT_USERNAME", "x-access-token")
            .env_remove("KILN_GIT_PASSWORD")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "`{command}` failed: {text}");
    };
    // The publish job ran on an earlier merge; then a pull request runs the verify job.
    let publish: Vec<&String> = commands
        .iter()
        .filter(|c| c.starts_with("kiln publish"))
        .collect();
    assert_eq!(publish.len(), 1);
    run(publish[0]);
    for command in commands.iter().filter(|c| !c.starts_with("kiln publish")) {
        run(command);
    }

    let published = tree_of(&remote, "main");
    let mut warehouses = 0;
    let mut stages = 0;
    for path in published.iter().filter(|p| p.contains("/kargo/")) {
        let text = git(&remote, &["show", &format!("main:{path}")]);
        for doc in kiln::yaml::parse_stream(path, &text).unwrap() {
            match doc["kind"].as_str() {
                Some("Warehouse") => {
                    for sub in doc["spec"]["subscriptions"].as_array().unwrap() {
                        let Some(g) = sub.get("git") else { continue };
                        warehouses += 1;
                        assert_eq!(g["repoURL"], source_repo.as_str());
                        assert_eq!(g["branch"], "main");
                        for include in g["includePaths"].as_array().unwrap() {
                            let pattern =
                                include.as_str().unwrap().strip_prefix("regexp:").unwrap();
                            let re = regex::Regex::new(pattern).unwrap();
                            assert!(
                                published.iter().any(|p| re.is_match(p)),
                                "Warehouse {} includes `{pattern}`, which matches no published path",
                                doc["metadata"]["name"]
                            );
                        }
                    }
                }
                Some("Stage") => {
                    // Where the Stage reads the rendered tree: `./src/<dir>` in its steps, or
                    // `./src/${{ vars.srcPath }}` with the `srcPath` variable.
                    let text = serde_json::to_string(&doc).unwrap();
                    let vars = doc["spec"]["promotionTemplate"]["spec"]["vars"].as_array();
                    let src_path = vars
                        .into_iter()
                        .flatten()
                        .find(|v| v["name"] == "srcPath")
                        .and_then(|v| v["value"].as_str())
                        .map(str::to_string);
                    let mut dirs: Vec<String> = text
                        .split("\"./src/")
                        .skip(1)
                        .filter_map(|rest| rest.split('"').next())
                        .filter(|d| !d.starts_with("${{"))
                        .map(str::to_string)
                        .collect();
                    dirs.extend(src_path);
                    assert!(
                        !dirs.is_empty(),
                        "Stage {} reads no path",
                        doc["metadata"]["name"]
                    );
                    stages += 1;
                    for dir in dirs {
                        assert!(
                            published.contains(&format!("{dir}/kustomization.yaml")),
                            "Stage {} reads {dir}, which was not published",
                            doc["metadata"]["name"]
                        );
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        warehouses >= 4 && stages >= 20,
        "{warehouses} warehouses, {stages} stages"
    );
}

/// Issue 33 item 6: a component in a submodule was "clean" whatever its checkout held. A
/// submodule with an uncommitted edit, or checked out at another commit than its gitlink
/// records, makes the source commit `-dirty`; a clean one does not.
#[test]
fn a_dirty_submodule_marks_the_source_commit_dirty() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("src");
    let platform = bank_copy(&src, |spec| spec);
    // `components/frontend` becomes its own repository, a submodule of the platform's.
    let app = t.path().join("frontend");
    copy_dir(&src.join("components/frontend"), &app);
    std::fs::remove_dir_all(src.join("components/frontend")).unwrap();
    git(t.path(), &["init", "-q", "frontend"]);
    git(&app, &["add", "-A"]);
    git(&app, &["commit", "-q", "-m", "frontend"]);
    git(t.path(), &["init", "-q", "src"]);
    git(
        &src,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            s(&app),
            "components/frontend",
        ],
    );
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "platform"]);
    let repo = bare(t.path(), "r.git");
    let source_commit = || {
        let msg = git(&repo, &["log", "-1", "--format=%B", "main"]);
        msg.lines()
            .find_map(|l| l.strip_prefix("Kiln-Source-Commit: ").map(str::to_string))
            .unwrap_or_default()
    };
    let publish = || {
        let (c, _, err) = kiln_in(&src, &["publish", s(&platform), "--repo", s(&repo)]);
        assert_eq!(c, 0, "{err}");
    };
    publish();
    assert!(!source_commit().ends_with("-dirty"), "{}", source_commit());

    let sub = src.join("components/frontend");
    let file = sub.join("component.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("tag: \"1.4.2\"", "tag: \"1.4.3\"")).unwrap();
    publish();
    assert!(
        source_commit().ends_with("-dirty"),
        "an edit in the submodule"
    );

    // Committed inside the submodule, the gitlink left at the old commit: still dirty.
    git(&sub, &["commit", "-qam", "bump"]);
    std::fs::write(&file, text.replace("tag: \"1.4.2\"", "tag: \"1.4.4\"")).unwrap();
    git(&sub, &["commit", "-qam", "bump again"]);
    publish();
    assert!(
        source_commit().ends_with("-dirty"),
        "a submodule ahead of its gitlink"
    );
}
