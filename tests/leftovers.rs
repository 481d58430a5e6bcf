//! What a killed or interrupted run leaves, and what the next run repairs (issue 39, item 13;
//! issue 38, item 6): a stale `index.lock` from a publish killed in its index write, and
//! `kiln render` stopped by real signals at many points of a large render. The kills inside
//! the write step itself are simulated at their named points in `src/write.rs`'s unit tests.

use crate::gitops::{publish_killed_after_ref_update, shop};
use crate::support::git;
use kiln::git;
use miette::Diagnostic;
use std::path::Path;
use std::time::{Duration, SystemTime};

fn set_mtime(path: &Path, ago: u64) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(ago))
        .unwrap();
}

/// Issue 39, item 13: a publish killed in libgit2's index write leaves `.git/index.lock`
/// beside its journal, and every later publish failed with libgit2's generic "failed to
/// create locked file". The next publish now recognises the lock as its own (made during its
/// interrupted update, settled since) and finishes; a lock that is not kiln's is reported by
/// name and left alone.
#[test]
fn a_stale_index_lock_from_a_killed_publish_is_repaired() {
    let t = tempfile::tempdir().unwrap();
    let (work, o, v2) = publish_killed_after_ref_update(t.path());
    // The kill came inside the index write: libgit2's lock file is left, a minute old.
    let journal = work.join(".git/kiln-publish-pending");
    let lock = work.join(".git/index.lock");
    std::fs::write(&lock, "DIRC partial").unwrap();
    set_mtime(&journal, 70);
    set_mtime(&lock, 60);

    let out = git::publish(&v2, &o).unwrap();
    assert_eq!(out.commit, None, "nothing new to commit");
    assert!(!lock.exists());
    assert_eq!(
        git(&work, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );

    // A lock of someone else's (no kiln update was interrupted): named, and kept.
    std::fs::write(&lock, "").unwrap();
    set_mtime(&lock, 60);
    let err = git::publish(&shop(&[("dev", "api", "3")]), &o).unwrap_err();
    assert_eq!(
        err.code().map(|c| c.to_string()).as_deref(),
        Some("kiln::git::index_locked"),
        "{err}"
    );
    assert!(err.to_string().contains("index.lock"), "{err}");
    assert!(lock.exists());
    let k = std::fs::read_to_string(work.join("shop/dev/api/kustomization.yaml")).unwrap();
    assert!(k.contains("newTag: \"2\""), "nothing changed: {k}");
}

/// Every file under `dir` with its bytes, and the staging directories beside it.
fn snapshot(dir: &Path) -> (std::collections::BTreeMap<String, Vec<u8>>, Vec<String>) {
    let files = crate::support::list_files(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(dir.join(&p)).unwrap();
            (p, bytes)
        })
        .collect();
    let stages = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".kiln-stage-"))
        .collect();
    (files, stages)
}

fn render_into(root: &Path, out: &Path) -> std::process::Command {
    let mut cmd = crate::support::kiln_command(root);
    cmd.args(["render", "platforms/synth", "--no-cache", "--write-to"])
        .arg(out)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    cmd
}

/// Issue 38, item 6: `kiln render` of a changed platform over an existing output, stopped by
/// SIGINT, SIGTERM or SIGKILL at many points from its start to past its end. After SIGINT or
/// SIGTERM the output is wholly the old tree or wholly the new one (the write finishes its
/// renames, or drops what it staged, and says which in one line); after any signal the next
/// render writes the new tree and leaves no staging directory beside it.
#[cfg(unix)]
#[test]
fn renders_stopped_by_signals_leave_a_whole_tree_and_no_leftovers() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    crate::scale::synth::generate(&crate::scale::synth::Args::new(30, 2, &root));
    let render = |out: &Path| {
        let run = render_into(&root, out).output().unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    };
    let old_dir = t.path().join("v1/deploy");
    render(&old_dir);
    let (old, _) = snapshot(&old_dir);
    // Every manifest of the new render differs from the old one.
    let platform = root.join("platforms/synth/platform.yaml");
    let text = std::fs::read_to_string(&platform).unwrap();
    std::fs::write(&platform, format!("{text}\n# v2\n")).unwrap();
    for dir in std::fs::read_dir(root.join("components")).unwrap() {
        let file = dir.unwrap().path().join("serviceaccount.yaml");
        if let Ok(text) = std::fs::read_to_string(&file) {
            std::fs::write(&file, text.replace("name: ", "name: v2-")).unwrap();
        }
    }
    let new_dir = t.path().join("v2/deploy");
    let started = std::time::Instant::now();
    render(&new_dir);
    let took = started.elapsed();
    let (new, _) = snapshot(&new_dir);
    assert_ne!(old, new);

    let signals = [libc::SIGINT, libc::SIGTERM, libc::SIGKILL];
    let steps = 12;
    let (mut whole_old, mut whole_new, mut said) = (0, 0, 0);
    for i in 0..steps {
        let signal = signals[i % signals.len()];
        let out = t.path().join(format!("run-{i}/deploy"));
        crate::support::copy_dir(&old_dir, &out);
        let mut child = render_into(&root, &out).spawn().unwrap();
        // From a third into the render (load and evaluate are quick) to past its end.
        std::thread::sleep(took.mul_f64(0.3 + 0.8 * i as f64 / steps as f64));
        // SAFETY: a signal to our own child, by its id.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        let (files, _) = snapshot(&out);
        if signal != libc::SIGKILL {
            let whole = if files == old {
                whole_old += 1;
                true
            } else if files == new {
                whole_new += 1;
                true
            } else {
                false
            };
            assert!(
                whole,
                "signal {signal} at step {i}: a half-written tree ({status})"
            );
            if stderr.contains("kiln::write::interrupted") {
                said += 1;
                let line = stderr.lines().find(|l| l.contains("interrupted:")).unwrap();
                assert!(
                    line.contains("finished") || line.contains("left as it was"),
                    "{stderr}"
                );
            }
        }
        render(&out);
        let (files, stages) = snapshot(&out);
        assert!(
            files == new,
            "step {i}: the next render did not finish the tree"
        );
        assert_eq!(stages, Vec::<String>::new(), "step {i}: staging left");
    }
    eprintln!("signals: {whole_old} old, {whole_new} new, {said} said so");
}
