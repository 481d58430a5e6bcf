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

type Files = std::collections::BTreeMap<String, Vec<u8>>;

/// A synthetic platform rendered into `v1/deploy`, then changed so that every manifest of its
/// next render differs, rendered into `v2/deploy`: (the repository, the old tree's
/// directory and files, the new tree's files, how long the second render took).
fn two_versions(
    t: &Path,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    Files,
    Files,
    Duration,
) {
    let root = t.join("repo");
    crate::scale::synth::generate(&crate::scale::synth::Args::new(30, 2, &root));
    let old_dir = t.join("v1/deploy");
    render_ok(&root, &old_dir);
    let (old, _) = snapshot(&old_dir);
    let platform = root.join("platforms/synth/platform.yaml");
    let text = std::fs::read_to_string(&platform).unwrap();
    std::fs::write(&platform, format!("{text}\n# v2\n")).unwrap();
    for dir in std::fs::read_dir(root.join("components")).unwrap() {
        let file = dir.unwrap().path().join("serviceaccount.yaml");
        if let Ok(text) = std::fs::read_to_string(&file) {
            std::fs::write(&file, text.replace("name: ", "name: v2-")).unwrap();
        }
    }
    let new_dir = t.join("v2/deploy");
    let started = std::time::Instant::now();
    render_ok(&root, &new_dir);
    let took = started.elapsed();
    let (new, _) = snapshot(&new_dir);
    assert_ne!(old, new);
    (root, old_dir, old, new, took)
}

fn render_ok(root: &Path, out: &Path) {
    let run = render_into(root, out).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The exit status as a shell reports it: the exit code, or 128 + the signal that ended
/// the process.
#[cfg(unix)]
fn shell_status(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap()
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
/// renames, or drops what it staged, and says which in one line), and kiln exits 130 or 143
/// (as the shell reports it) in whichever phase the signal came; after any signal the next
/// render writes the new tree and leaves no staging directory beside it.
#[cfg(unix)]
#[test]
fn renders_stopped_by_signals_leave_a_whole_tree_and_no_leftovers() {
    let t = tempfile::tempdir().unwrap();
    let (root, old_dir, old, new, took) = two_versions(t.path());
    let render = |out: &Path| render_ok(&root, out);

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
            // 130 or 143 in every phase (the write's included), or 0 when it came too late.
            let code = shell_status(status);
            assert!(
                code == 128 + signal || (code == 0 && files == new),
                "signal {signal} at step {i}: exit {code}\n{stderr}"
            );
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
                let line = stderr
                    .lines()
                    .find(|l| l.contains("interrupted by"))
                    .unwrap();
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

/// Starts `kiln render` of `root` over a copy of `old_dir` at `out` (the child's stderr piped),
/// and sends `signal` the moment its staging directory appears beside `out`, that is inside
/// the write step. Returns the child's status and stderr.
#[cfg(unix)]
fn signal_in_write(
    root: &Path,
    old_dir: &Path,
    out: &Path,
    signal: libc::c_int,
    ignored: bool,
) -> (std::process::ExitStatus, String) {
    crate::support::copy_dir(old_dir, out);
    let mut cmd = render_into(root, out);
    if ignored {
        use std::os::unix::process::CommandExt;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(signal, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let parent = out.parent().unwrap();
    let staging = || {
        std::fs::read_dir(parent).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".kiln-stage-")
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    while !staging() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the render ended before it staged anything"
        );
        assert!(std::time::Instant::now() < deadline, "no staging directory");
        std::thread::sleep(Duration::from_micros(50));
    }
    // SAFETY: a signal to our own child, by its id.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

/// Issue 38, item 6: SIGINT inside the write step exited 1 (`kiln::write::interrupted`),
/// where SIGINT earlier ends the process with 130. Now SIGINT gives 130 and SIGTERM 143 there
/// too (kiln ends by the signal once the write is whole), after the one line saying whether
/// the renames finished or the staged files were dropped; the tree is wholly old or new.
#[cfg(unix)]
#[test]
fn sigint_and_sigterm_in_the_write_step_exit_130_and_143() {
    let t = tempfile::tempdir().unwrap();
    let (root, old_dir, old, new, _) = two_versions(t.path());
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let out = t.path().join(format!("signal-{signal}/deploy"));
        let (status, stderr) = signal_in_write(&root, &old_dir, &out, signal, false);
        assert_eq!(shell_status(status), 128 + signal, "{stderr}");
        assert!(stderr.contains("kiln::write::interrupted"), "{stderr}");
        let name = if signal == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        let said: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains(&format!("interrupted by {name}: ")))
            .collect();
        assert_eq!(said.len(), 1, "{stderr}");
        let (files, _) = snapshot(&out);
        if said[0].contains("the update was finished first") {
            assert!(files == new, "finished, but the tree is not the new one");
        } else {
            assert!(said[0].contains("left as it was"), "{stderr}");
            assert!(files == old, "rolled back, but the tree is not the old one");
        }
    }
}

/// A render whose SIGINT is ignored (`nohup`, a non-interactive shell's background job) kept
/// ignoring it until the write step, which then took a SIGINT as a stop: the write step
/// leaves an ignored signal ignored, so the render finishes and exits 0.
#[cfg(unix)]
#[test]
fn an_ignored_sigint_stays_ignored_in_the_write_step() {
    let t = tempfile::tempdir().unwrap();
    let (root, old_dir, _, new, _) = two_versions(t.path());
    let out = t.path().join("ignored/deploy");
    let (status, stderr) = signal_in_write(&root, &old_dir, &out, libc::SIGINT, true);
    assert!(status.success(), "{status}\n{stderr}");
    assert!(snapshot(&out).0 == new);
}
