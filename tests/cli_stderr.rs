//! The `kiln` binary with a closed stderr (`kiln publish … 2>&1 | head -1`): the command's own
//! exit code comes back, never an abort from a panic inside the panic hook (exit 134).
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use std::process::{Command, Stdio};

/// Runs `kiln` with stderr connected to a pipe whose read end is already closed.
fn run_with_closed_stderr(args: &[&str]) -> std::process::ExitStatus {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
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
