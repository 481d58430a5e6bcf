//! Inputs that must be refused before anything is written (issue 39, items 15–18): a
//! non-empty `--work-dir`, `--write-to` into a Git directory, a `publish --path` git would
//! misread (unit-tested in `src/git/publish.rs`), and a `branchPattern` that is no branch.

use crate::support::{copy_dir, kiln_in, repo_root};

#[test]
fn promote_refuses_a_work_directory_that_is_not_empty() {
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("keep.txt"), "mine").unwrap();
    for dir in [work.to_str().unwrap(), "/"] {
        let run = kiln_in(
            &repo_root(),
            &[
                "promote",
                "frontend-dev",
                "platforms/bank",
                "--freight",
                "latest",
                "--work-dir",
                dir,
            ],
        );
        assert_eq!(run.code, Some(1), "{dir}: {}", run.text());
        assert!(run.stderr.contains("is not empty"), "{}", run.stderr);
    }
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().collect();
    assert_eq!(left.len(), 1, "only the user's file");
    assert!(!std::path::Path::new("/src").exists() && !std::path::Path::new("/out").exists());
}

#[test]
fn render_never_writes_into_a_git_directory() {
    let t = tempfile::tempdir().unwrap();
    let git = t.path().join("checkout/.git");
    std::fs::create_dir_all(&git).unwrap();
    for out in [git.clone(), git.join("deploy")] {
        let run = kiln_in(
            &repo_root(),
            &[
                "render",
                "platforms/bank",
                "--no-cache",
                "--write-to",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, Some(1), "{}", run.text());
        assert!(
            run.stderr.contains("kiln::write::git_directory"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(
        std::fs::read_dir(&git).unwrap().count(),
        0,
        "nothing in .git"
    );
}

#[test]
fn a_branch_pattern_that_is_no_branch_fails_the_render() {
    for pattern in ["HEAD", "refs/heads/${env.name}", "${env.name}.lock"] {
        let t = tempfile::tempdir().unwrap();
        copy_dir(&repo_root().join("tests/fixtures/app-repos"), t.path());
        let file = t.path().join("platforms/estate/platform.yaml");
        let text = std::fs::read_to_string(&file).unwrap().replace(
            "      repoURL: https://git.example.com/shop/deploy.git\n",
            &format!("      repoURL: https://git.example.com/shop/deploy.git\n      branchPattern: \"{pattern}\"\n"),
        );
        std::fs::write(&file, text).unwrap();
        let out = t.path().join("out");
        let run = kiln_in(
            t.path(),
            &[
                "render",
                "platforms/estate",
                "--no-cache",
                "--write-to",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, Some(1), "{pattern}: {}", run.text());
        assert!(
            run.stderr.contains("kiln::kargo::invalid_branch"),
            "{pattern}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("platform.yaml:"), "{}", run.stderr);
        assert!(!out.exists());
    }
}
