//! `kiln verify --per-environment` checks branches written by `kiln publish --per-environment`:
//! `stage/<env>` holds that environment's slice, the base branch the shared files.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use crate::support::copy_dir;

fn kiln(args: &[&str]) -> (Option<i32>, String) {
    let run = crate::support::kiln_in(&crate::support::repo_root(), args);
    (run.code, run.text())
}

/// A copy of the bank platform (and its components) with Kargo switched off, in `dir`.
pub(crate) fn bank_without_kargo(dir: &std::path::Path) -> String {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_dir(&here.join("components"), &dir.join("components"));
    let spec = std::fs::read_to_string(here.join("platforms/bank/platform.yaml")).unwrap();
    let spec = spec.replace(
        "  kargo:\n    enabled: true",
        "  kargo:\n    enabled: false",
    );
    assert!(spec.contains("enabled: false"));
    std::fs::create_dir_all(dir.join("platforms/bank")).unwrap();
    std::fs::write(dir.join("platforms/bank/platform.yaml"), spec).unwrap();
    dir.join("platforms/bank").display().to_string()
}

#[test]
fn per_environment_branches_verify_clean_and_drift_is_still_found() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().join("deploy.git");
    git2::Repository::init_bare(&repo).unwrap();
    let repo = repo.to_str().unwrap();
    let platform = bank_without_kargo(t.path());
    let platform = platform.as_str();
    let (code, text) = kiln(&["publish", platform, "--repo", repo, "--per-environment"]);
    assert_eq!(code, Some(0), "{text}");

    for reference in ["stage/dev", "stage/prod-east", "main"] {
        let (code, text) = kiln(&[
            "verify",
            platform,
            "--repo",
            repo,
            "--ref",
            reference,
            "--per-environment",
        ]);
        assert_eq!(code, Some(0), "{reference}: {text}");
    }
    // Without the flag the environment branch is compared with the whole tree: drift.
    let (code, _) = kiln(&["verify", platform, "--repo", repo, "--ref", "stage/dev"]);
    assert_eq!(code, Some(1));
    let (code, text) = kiln(&[
        "verify",
        platform,
        "--repo",
        repo,
        "--ref",
        "stage/nope",
        "--per-environment",
    ]);
    assert_eq!(code, Some(3), "an error is not a difference: {text}");
    assert!(text.contains("names no environment"), "{text}");
}

/// Issue 9 item 6: with Kargo, Kargo's promotions write the stage branches and the
/// Applications track them; a per-environment publish would leave them pointing elsewhere.
#[test]
fn per_environment_publish_with_kargo_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().join("deploy.git");
    git2::Repository::init_bare(&repo).unwrap();
    let (code, text) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        repo.to_str().unwrap(),
        "--per-environment",
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("kiln::git::per_environment_with_kargo"),
        "{text}"
    );
    let refs = git2::Repository::open_bare(&repo)
        .unwrap()
        .references()
        .unwrap()
        .count();
    assert_eq!(refs, 0, "nothing was published");
}

/// Issue 9 item 6, without Kargo: the Applications that a per-environment publish commits
/// (with the shared files, on `main`) track `stage/<env>` at the very folder that holds their
/// component there, so Argo CD syncs what was published.
#[test]
fn per_environment_applications_track_what_was_published() {
    let t = tempfile::tempdir().unwrap();
    let repo_dir = t.path().join("deploy.git");
    git2::Repository::init_bare(&repo_dir).unwrap();
    let repo = repo_dir.to_str().unwrap();
    let platform = bank_without_kargo(t.path());
    let (code, text) = kiln(&["publish", &platform, "--repo", repo, "--per-environment"]);
    assert_eq!(code, Some(0), "{text}");

    let git = git2::Repository::open_bare(&repo_dir).unwrap();
    let tree_of = |branch: &str| {
        git.find_branch(branch, git2::BranchType::Local)
            .unwrap_or_else(|e| panic!("{branch}: {e}"))
            .get()
            .peel_to_tree()
            .unwrap()
    };
    let main = tree_of("main");
    let mut applications = Vec::new();
    main.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if dir.ends_with("/argocd/") && entry.name().is_ok_and(|n| n.ends_with(".yaml")) {
            let blob = entry.to_object(&git).unwrap().peel_to_blob().unwrap();
            let text = String::from_utf8_lossy(blob.content()).into_owned();
            for v in kiln::yaml::parse_stream(entry.name().unwrap(), &text).unwrap() {
                if v["kind"].as_str() == Some("Application") {
                    applications.push(v);
                }
            }
        }
        git2::TreeWalkResult::Ok
    })
    .unwrap();
    assert!(applications.len() >= 10, "{applications:?}");
    for app in &applications {
        let source = &app["spec"]["source"];
        let revision = source["targetRevision"].as_str().unwrap().to_string();
        let path = source["path"].as_str().unwrap().to_string();
        assert!(revision.starts_with("stage/"), "{revision} {path}");
        let tree = tree_of(&revision);
        let entry = tree
            .get_path(
                std::path::Path::new(&path)
                    .join("kustomization.yaml")
                    .as_path(),
            )
            .unwrap_or_else(|_| panic!("{revision}:{path}/kustomization.yaml is not published"));
        assert_eq!(entry.kind(), Some(git2::ObjectType::Blob));
    }
}
