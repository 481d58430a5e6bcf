//! Install and run kiln in CI without a Rust toolchain (issue 38, item 11): `scripts/release`
//! packs the built binary into an archive with its sha256, `scripts/ci-kiln` (the script
//! behind `action.yml` and `ci/gitlab-kiln.yml`) installs it from that archive, checking the
//! checksum, then renders the bank and verifies a published tree.

use std::path::Path;
use std::process::{Command, Output};

fn script(name: &str) -> Command {
    let mut cmd = Command::new(crate::support::repo_root().join("scripts").join(name));
    cmd.current_dir(crate::support::repo_root())
        .env("NO_COLOR", "1")
        .env(
            "XDG_CACHE_HOME",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/xdg-cache"),
        )
        .env_remove("KILN_RELEASE_URL")
        .env_remove("KILN_VERIFY_REPO");
    cmd
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn install(archive: &Path, home: &Path) -> Output {
    script("ci-kiln")
        .arg("install")
        .env("HOME", home)
        .env("KILN_RELEASE_URL", format!("file://{}", archive.display()))
        .env("KILN_INSTALL_DIR", home.join("bin"))
        .output()
        .unwrap()
}

#[test]
fn release_archive_installs_and_renders_and_verifies_in_ci() {
    if Command::new("tar").arg("--version").output().is_err() {
        eprintln!("skipping: no tar");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The release: the debug binary stands in for the release build.
    let out = script("release")
        .args(["--binary", env!("CARGO_BIN_EXE_kiln"), "--out"])
        .arg(tmp.path().join("release"))
        .output()
        .unwrap();
    let archive = std::path::PathBuf::from(ok(&out).trim());
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let listing = ok(&Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap());
    let name = archive
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(".tar.gz", "");
    assert!(name.starts_with("kiln-0."), "{name}");
    for f in ["kiln", "kiln.sha256", "README.md"] {
        assert!(
            listing.lines().any(|l| l == format!("{name}/{f}")),
            "{listing}"
        );
    }
    // The completions of every shell and the manual pages, from the binary (issue 38,
    // item 9).
    for f in [
        "completions/kiln.bash",
        "completions/_kiln",
        "completions/kiln.fish",
        "man/man1/kiln.1",
        "man/man1/kiln-render.1",
    ] {
        assert!(
            listing.lines().any(|l| l == format!("{name}/{f}")),
            "{f}: {listing}{stderr}"
        );
    }
    let sum = std::fs::read_to_string(format!("{}.sha256", archive.display())).unwrap();
    assert_eq!(
        sum.split_whitespace().next().unwrap(),
        kiln_base::digest::sha256_hex(&std::fs::read(&archive).unwrap())
    );

    // Installed from the archive (no cargo involved), checksum checked.
    let home = tmp.path().join("home");
    let out = install(&archive, &home);
    assert!(ok(&out).starts_with("kiln "));
    assert!(home.join("bin/kiln").is_file());
    let tampered = tmp.path().join("tampered.tar.gz");
    std::fs::copy(&archive, &tampered).unwrap();
    std::fs::write(
        format!("{}.sha256", tampered.display()),
        format!("{} x\n", "0".repeat(64)),
    )
    .unwrap();
    let out = install(&tampered, &tmp.path().join("home2"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("checksum mismatch"));
    assert!(!tmp.path().join("home2/bin/kiln").exists());

    // Render and verify against a published tree.
    let repo = tmp.path().join("platform.git");
    git2::Repository::init_bare(&repo).unwrap();
    let publish = crate::support::kiln_in(
        &crate::support::repo_root(),
        &[
            "publish",
            "platforms/bank",
            "--repo",
            &repo.display().to_string(),
        ],
    );
    assert_eq!(publish.code, Some(0), "{}", publish.text());
    let run = |verify_ref: &str| {
        script("ci-kiln")
            .arg("run")
            .env("HOME", &home)
            .env("KILN_INSTALL_DIR", home.join("bin"))
            .env(
                "KILN_WRITE_TO",
                tmp.path().join(format!("out-{verify_ref}")),
            )
            .env("KILN_VERIFY_REPO", &repo)
            .env("KILN_VERIFY_REF", verify_ref)
            .output()
            .unwrap()
    };
    ok(&run("main"));
    assert!(tmp.path().join("out-main/bootstrap/root.yaml").is_file());
    assert!(!run("no-such-branch").status.success());
}
