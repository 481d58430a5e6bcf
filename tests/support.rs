//! What the integration modules share: where the repository and `../shared` are, the `kiln`
//! binary as a user runs it, the `git` CLI with a clean configuration, and tree helpers.
//! Each exists once here; a module adds only what is its own.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The root package's directory (where `platforms/`, `components/` and `tests/` live).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The reference data (`KILN_SHARED_DIR`, default `<repo>/../shared`).
pub fn shared_dir() -> PathBuf {
    std::env::var_os("KILN_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared"))
}

/// Whether a reference missing here must fail the run (`REQUIRE_SHARED=1`, set by `.ci/run`).
pub fn shared_required() -> bool {
    std::env::var_os("REQUIRE_SHARED").is_some_and(|v| v == "1")
}

/// What one run of the `kiln` binary gave.
pub struct Run {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout followed by stderr, for a message that may be on either.
    pub fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// The built `kiln` binary, as it is (every module starts its runs here).
pub fn kiln_bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    // The render cache and its key go to the user's cache home: the tests' own, never the
    // caller's (a test may set another).
    cmd.env(
        "XDG_CACHE_HOME",
        concat!(env!("CARGO_TARGET_TMPDIR"), "/xdg-cache"),
    );
    cmd
}

/// The built `kiln` binary in `dir`, with colours off, a fixed commit author and no
/// credential from the caller's environment.
pub fn kiln_command(dir: &Path) -> Command {
    let mut cmd = kiln_bin();
    cmd.current_dir(dir)
        .env("NO_COLOR", "1")
        .env("KILN_GIT_AUTHOR_NAME", "ci")
        .env("KILN_GIT_AUTHOR_EMAIL", "ci@example.com")
        .env_remove("KILN_GIT_PASSWORD")
        .env_remove("GIT_PASSWORD");
    cmd
}

/// Runs a prepared `kiln` command to its end.
pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().expect("kiln runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `kiln args` in `dir`.
pub fn kiln_in(dir: &Path, args: &[&str]) -> Run {
    run(kiln_command(dir).args(args))
}

/// The `git` CLI in `dir`, blind to the machine's and the user's configuration.
pub fn git_cmd(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args([
            "-c",
            "user.name=Hand Editor",
            "-c",
            "user.email=hand@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ]);
    cmd
}

/// Runs `git args` in `dir`, panicking with stderr on failure; returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(dir)
        .args(args)
        .output()
        .expect("the `git` CLI is needed by these tests");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Copies a directory tree (regular files and folders).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `dir`, relative, `/`-separated, sorted.
pub fn list_files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, d: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else if let Ok(rel) = p.strip_prefix(base) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Runs a prepared `kiln` command with its address space capped at `memory` bytes and its
/// time at `seconds`: a crash (an abort when the cap is hit, a panic, a stack overflow) shows
/// as an exit code other than kiln's own, and a hang as a panic naming `what`, instead of the
/// machine swapping or the test run stalling.
#[cfg(unix)]
pub fn run_bounded(cmd: &mut Command, memory: u64, seconds: u64, what: &str) -> Run {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: memory,
                rlim_max: memory,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kiln runs");
    // Read both pipes on threads, so a chatty child never blocks on a full pipe.
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let stdout = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut s);
        s
    });
    let stderr = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut s);
        s
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for kiln") {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: kiln ran past {seconds} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned(),
    }
}

/// `$PATH` with `dir` first (a test's `kiln` and scripts, as CI installs them).
pub fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}
