//! `kiln verify --per-environment` checks branches written by `kiln publish --per-environment`:
//! `stage/<env>` holds that environment's slice, the base branch the shared files.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use std::process::Command;

fn kiln(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("kiln runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn per_environment_branches_verify_clean_and_drift_is_still_found() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().join("deploy.git");
    git2::Repository::init_bare(&repo).unwrap();
    let repo = repo.to_str().unwrap();
    let (code, text) = kiln(&[
        "publish",
        "platforms/bank",
        "--repo",
        repo,
        "--per-environment",
    ]);
    assert_eq!(code, Some(0), "{text}");

    for reference in ["stage/dev", "stage/prod-east", "main"] {
        let (code, text) = kiln(&[
            "verify",
            "platforms/bank",
            "--repo",
            repo,
            "--ref",
            reference,
            "--per-environment",
        ]);
        assert_eq!(code, Some(0), "{reference}: {text}");
    }
    // Without the flag the environment branch is compared with the whole tree: drift.
    let (code, _) = kiln(&[
        "verify",
        "platforms/bank",
        "--repo",
        repo,
        "--ref",
        "stage/dev",
    ]);
    assert_eq!(code, Some(1));
    let (code, text) = kiln(&[
        "verify",
        "platforms/bank",
        "--repo",
        repo,
        "--ref",
        "stage/nope",
        "--per-environment",
    ]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("names no environment"), "{text}");
}
