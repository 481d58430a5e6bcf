//! The `kiln` binary with a closed stderr (`kiln publish … 2>&1 | head -1`): the command's own
//! exit code comes back, never an abort from a panic inside the panic hook (exit 134).
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use std::process::Stdio;

/// Runs `kiln` with stderr connected to a pipe whose read end is already closed.
fn run_with_closed_stderr(args: &[&str]) -> std::process::ExitStatus {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    crate::support::kiln_command(&crate::support::repo_root())
        .args(args)
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .expect("kiln runs")
}

#[test]
fn successful_render_with_closed_stderr_exits_0() {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("deploy");
    let status = run_with_closed_stderr(&[
        "render",
        "platforms/bank",
        "--write-to",
        target.to_str().unwrap(),
    ]);
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(target.join(".kiln-owned.json").is_file());
}

#[test]
fn failed_render_with_closed_stderr_exits_1() {
    let status = run_with_closed_stderr(&["render", "platforms/does-not-exist"]);
    assert_eq!(status.code(), Some(1), "{status:?}");
}

/// A wrong `--fixes` name is a usage error (exit 2, as every other bad flag), naming the known
/// ones (found by the QA pass: it exited 1, the code for a failed build).
#[test]
fn unknown_fix_is_a_usage_error() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kustomize");
    let case = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path().join("input"))
        .filter(|p| p.join("kustomization.yaml").is_file())
        .min()
        .expect("a kustomize case");
    let run = |fixes: &str| {
        crate::support::kiln_bin()
            .args(["kustomize", case.to_str().unwrap(), "--fixes", fixes])
            .output()
            .expect("kiln runs")
    };
    let bad = run("bogus");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("merge-order"), "{stderr}");
    let good = run("all");
    assert!(
        good.status.code().is_some_and(|c| c != 2),
        "{}",
        String::from_utf8_lossy(&good.stderr)
    );
}

/// An error next to a secretGenerator's literals underlines its line without printing the
/// Secret's values (an earlier QA pass saw `- password=…` in the snippet's context lines).
#[test]
fn error_snippets_never_print_secret_values() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kustomization.yaml"),
        "secretGenerator:\n- name: db\n  literals:\n  - password=hunter2\n  behavior: [x]\n",
    )
    .unwrap();
    let out = crate::support::kiln_bin()
        .args(["kustomize", dir.path().to_str().unwrap()])
        .output()
        .expect("kiln runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("secretGenerator[0].behavior"), "{stderr}");
    assert!(
        stderr.contains("password="),
        "the entry stays visible: {stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
