//! Inputs that must be refused before anything is written (issue 39, items 15–18): a
//! non-empty `--work-dir`, `--write-to` into a Git directory, a `publish --path` git would
//! misread (unit-tested in `src/git/publish.rs`), and a `branchPattern` that is no branch;
//! shard trees `kiln merge` must not trust (items 7 and 14).

use crate::support::{copy_dir, kiln_in, list_files, repo_root, run_bounded};
use std::path::{Path, PathBuf};

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

/// A synthetic platform of `components` × 2 in `root`, rendered by the binary as shards
/// 1/2 and 2/2; the shard directories.
fn two_shards(root: &Path, components: usize) -> Vec<PathBuf> {
    crate::scale::synth::generate(&crate::scale::synth::Args::new(components, 2, root));
    (1..=2)
        .map(|i| {
            let dir = root.join(format!("shard-{i}"));
            let run = kiln_in(
                root,
                &[
                    "render",
                    "platforms/synth",
                    "--no-cache",
                    "--shard",
                    &format!("{i}/2"),
                    "--write-to",
                    dir.to_str().unwrap(),
                ],
            );
            assert_eq!(run.code, Some(0), "{}", run.text());
            dir
        })
        .collect()
}

fn merge_in(root: &Path, dirs: &[PathBuf], what: &str) -> crate::support::Run {
    let mut cmd = crate::support::kiln_command(root);
    cmd.arg("merge").args(dirs).args(["--write-to", "merged"]);
    run_bounded(&mut cmd, 2 << 30, 60, what)
}

/// Issue 39, item 7: a shard record's `count` is hostile input. 2^64 − 1 panicked (exit 101)
/// and 2^32 allocated 32 GiB; both are now checked against the shards actually given, under
/// a 2 GiB address space.
#[cfg(unix)]
#[test]
fn merge_checks_a_shard_count_against_the_shards_given() {
    let t = tempfile::tempdir().unwrap();
    let dirs = two_shards(t.path(), 3);
    for count in ["18446744073709551615", "4294967296", "3"] {
        for dir in &dirs {
            let record = dir.join(".kiln-shard.json");
            let text = std::fs::read_to_string(&record).unwrap();
            let (head, tail) = text.split_once("\"count\": ").unwrap();
            let rest = &tail[tail.find(',').unwrap()..];
            std::fs::write(&record, format!("{head}\"count\": {count}{rest}")).unwrap();
        }
        let run = merge_in(t.path(), &dirs, count);
        assert_eq!(run.code, Some(1), "count {count}: {}", run.text());
        assert!(
            run.stderr.contains("kiln::merge::incomplete"),
            "{}",
            run.stderr
        );
        assert!(!t.path().join("merged").exists(), "nothing written");
    }
}

/// Issue 39, item 14: merge re-reads every file the shards read. A checkout where only a
/// component's manifest differs (the platform and the BuildPlans are the same) is refused;
/// restored, the merge goes through.
#[test]
fn merge_refuses_a_checkout_where_only_a_component_file_differs() {
    let t = tempfile::tempdir().unwrap();
    let dirs = two_shards(t.path(), 3);
    let file = t.path().join("components/c00000/service.yaml");
    let original = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{original}# edited\n")).unwrap();
    let run = merge_in(t.path(), &dirs, "edited");
    assert_eq!(run.code, Some(1), "{}", run.text());
    assert!(
        run.stderr.contains("kiln::merge::inputs_changed"),
        "{}",
        run.stderr
    );
    assert!(!t.path().join("merged").exists(), "nothing written");
    std::fs::write(&file, original).unwrap();
    let run = merge_in(t.path(), &dirs, "restored");
    assert_eq!(run.code, Some(0), "{}", run.text());
    assert!(list_files(&t.path().join("merged")).len() > 6);
}
