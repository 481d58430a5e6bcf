//! The promises of issue 12, each checked from the input that once broke it: no panic, no
//! hang, no read outside the repository root, no lost ownership, no Secret value printed.

use super::cli_errors::{Fixture, assert_fails, line_of};
use std::process::{Command, Output};

/// stderr with miette's line wrapping undone (`\n  | ` continuation lines joined).
fn stderr(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    let mut flat = String::new();
    for line in text.lines() {
        match line.trim_start().strip_prefix("| ") {
            Some(rest) if !flat.is_empty() => {
                flat.push(' ');
                flat.push_str(rest);
            }
            _ => {
                flat.push('\n');
                flat.push_str(line);
            }
        }
    }
    flat
}

/// `kiln kustomize DIR` with NO_COLOR.
fn kustomize(dir: &std::path::Path) -> Output {
    crate::support::kiln_bin()
        .arg("kustomize")
        .arg(dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[cfg(unix)]
fn mkfifo(path: &std::path::Path) -> bool {
    let _ = std::fs::remove_file(path);
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

/// A component that renders a kustomization directory `base/` (holding the Deployment).
fn with_kustomize_generator(f: &Fixture) {
    f.edit(
        "repo/components/web/component.yaml",
        "  - files: [manifests]\n",
        "  - kustomize: base\n",
    );
    f.write(
        "repo/components/web/base/kustomization.yaml",
        "resources:\n- deployment.yaml\n",
    );
    let deployment =
        std::fs::read_to_string(f.path("repo/components/web/manifests/deployment.yaml")).unwrap();
    f.write("repo/components/web/base/deployment.yaml", &deployment);
}

#[test]
fn a_label_past_column_65535_is_reported_not_a_panic() {
    let f = Fixture::new();
    let long = "y".repeat(70_000);
    f.write(
        "repo/platforms/p/platform.yaml",
        &format!("apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: {long} : [\n"),
    );
    let out = f.render(&[]);
    let err = assert_fails(&f, &out, &[("platforms/p/platform.yaml", 4)]);
    assert!(err.len() < 4_000, "stderr is {} bytes:\n{err}", err.len());

    // The same line in `kiln kustomize`.
    f.write(
        "k/kustomization.yaml",
        &format!("resources: [{} : [\n", "x".repeat(70_000)),
    );
    let out = kustomize(&f.path("k"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("kustomization.yaml:1:"), "{err}");
    assert!(err.len() < 4_000, "stderr is {} bytes", err.len());
}

#[test]
fn a_200kb_deeply_nested_line_is_not_echoed_whole() {
    let f = Fixture::new();
    f.write(
        "repo/platforms/p/platform.yaml",
        &format!(
            "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata:\n  name: {}\n",
            "[".repeat(200_000)
        ),
    );
    let out = f.render(&[]);
    let err = assert_fails(&f, &out, &[("platforms/p/platform.yaml", 4)]);
    assert!(err.len() < 4_000, "stderr is {} bytes", err.len());
}

#[cfg(unix)]
#[test]
fn a_symlink_loop_in_a_kustomization_directory_is_no_stack_overflow() {
    let f = Fixture::new();
    with_kustomize_generator(&f);
    std::os::unix::fs::symlink(".", f.path("repo/components/web/base/loop")).unwrap();
    let out = f.render(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[cfg(unix)]
#[test]
fn fifos_in_place_of_input_files_are_refused_at_once() {
    // Each case replaces one input file with a FIFO; without the fix `kiln` blocks forever on
    // the open, so the test runs kiln with a deadline.
    let cases: &[(&str, bool)] = &[
        ("repo/platforms/p/platform.yaml", false),
        ("repo/components/web/manifests/deployment.yaml", false),
        ("repo/components/web/manifests/extra.yaml", false),
        ("repo/components/web/base/deployment.yaml", true),
    ];
    for (file, kustomize) in cases {
        let f = Fixture::new();
        if *kustomize {
            with_kustomize_generator(&f);
        }
        if !mkfifo(&f.path(file)) {
            return; // no mkfifo here
        }
        let mut child = crate::support::kiln_bin()
            .arg("render")
            .arg(f.path("repo/platforms/p"))
            .arg("--write-to")
            .arg(f.path("repo/deploy"))
            .env("NO_COLOR", "1")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                child.kill().unwrap();
                panic!("kiln hangs on a FIFO at {file}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(status.code(), Some(1), "{file}: {err}");
        assert!(err.contains("not a regular file"), "{file}: {err}");
    }
}

#[test]
fn a_kustomize_base_outside_the_root_is_not_read_by_render() {
    for base in ["../../../../outside", "ABS"] {
        let f = Fixture::new();
        with_kustomize_generator(&f);
        let abs = f.path("outside").display().to_string();
        let base = if base == "ABS" { abs.as_str() } else { base };
        f.write("outside/kustomization.yaml", "resources:\n- secret.yaml\n");
        f.write(
            "repo/components/web/base/kustomization.yaml",
            &format!("resources:\n- deployment.yaml\n- {base}\n"),
        );
        let out = f.render(&[]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{base}: {err}");
        assert!(
            err.contains("lies outside the repository root"),
            "{base}: {err}"
        );
        assert!(!f.path("repo/deploy").exists());
        // `kiln kustomize` keeps kustomize's rule: with LoadRestrictionsNone, it reads it.
        let out = crate::support::kiln_bin()
            .args(["kustomize", "--load-restrictor", "LoadRestrictionsNone"])
            .arg(f.path("repo/components/web/base"))
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("stolen"),
            "{base}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn utf16_and_latin1_input_name_the_encoding_and_the_line() {
    let f = Fixture::new();
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("apiVersion: x\n".encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    std::fs::write(f.path("repo/platforms/p/platform.yaml"), utf16).unwrap();
    let out = f.render(&[]);
    let err = assert_fails(&f, &out, &[]);
    assert!(
        err.contains("UTF-16LE") && err.contains("kiln::load::not_utf8"),
        "{err}"
    );

    let f = Fixture::new();
    let line = line_of(&f, "repo/components/web/manifests/deployment.yaml", "kind:");
    let mut bytes = std::fs::read(f.path("repo/components/web/manifests/deployment.yaml")).unwrap();
    let at = bytes.windows(5).position(|w| w == b"kind:").unwrap();
    bytes.insert(at + 6, 0xE9); // Latin-1 `é`
    std::fs::write(
        f.path("repo/components/web/manifests/deployment.yaml"),
        bytes,
    )
    .unwrap();
    let out = f.render(&[]);
    let err = assert_fails(&f, &out, &[]);
    assert!(err.contains(&format!("line {line}, column 7")), "{err}");
    assert!(!err.contains("check that the path exists"), "{err}");
}

#[test]
fn write_targets_over_the_sources_are_refused() {
    for target in [
        "repo/platforms/p",
        "repo/components",
        "repo",
        "repo/components/web/out",
    ] {
        let f = Fixture::new();
        let out = crate::support::kiln_bin()
            .arg("render")
            .arg(f.path("repo/platforms/p"))
            .arg("--write-to")
            .arg(f.path(target))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{target}: {err}");
        assert!(
            err.contains("kiln::write::dangerous_target"),
            "{target}: {err}"
        );
        assert!(
            !f.path(target).join(".kiln-owned.json").exists(),
            "{target}"
        );
    }
    // `--write-to .` from inside the platform directory, and `/`.
    let f = Fixture::new();
    for (dir, platform, target) in [("repo/platforms/p", ".", "."), ("repo", "platforms/p", "/")] {
        let out = crate::support::kiln_bin()
            .args(["render", platform, "--write-to", target])
            .current_dir(f.path(dir))
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{dir} {target}: {err}");
        assert!(
            err.contains("kiln::write::dangerous_target"),
            "{target}: {err}"
        );
    }
}

const SECRET: &str = "\
apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: hunter2-very-secret
data:
  token: c3VwZXItc2VjcmV0LXRva2Vu
";

#[test]
fn a_failing_json_patch_test_never_prints_the_secret_value() {
    let f = Fixture::new();
    f.write("repo/components/web/manifests/secret.yaml", SECRET);
    f.edit(
        "repo/components/web/component.yaml",
        "  - jsonPatch:\n",
        "  - jsonPatch:\n      target: {kind: Secret, name: db}\n      patch:\n      - {op: test, path: /stringData/password, value: guess}\n  - jsonPatch:\n",
    );
    let out = f.render(&[]);
    let err = assert_fails(&f, &out, &[]);
    assert!(err.contains("json_patch_test_failed"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");

    // `kiln kustomize`, testing the whole `data` map.
    f.write("k/secret.yaml", SECRET);
    f.write(
        "k/kustomization.yaml",
        "resources: [secret.yaml]\npatches:\n- target: {kind: Secret, name: db}\n  patch: |-\n    - {op: test, path: /data, value: {}}\n",
    );
    let out = kustomize(&f.path("k"));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("(`test`) failed"), "{err}");
    assert!(!err.contains("c3VwZXItc2VjcmV0LXRva2Vu"), "{err}");
}

#[test]
fn emitted_secrets_are_named_once_and_forbid_fails_the_render() {
    let f = Fixture::new();
    f.write("repo/components/web/manifests/secret.yaml", SECRET);
    let out = f.render(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("warning: the rendered tree holds 2 Secrets")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("web/dev/web/web.gen.yaml (web-dev/db)"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");

    std::fs::remove_dir_all(f.path("repo/deploy")).unwrap();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "spec:\n",
        "spec:\n  secrets: forbid\n",
    );
    let out = f.render(&[]);
    let err = assert_fails(&f, &out, &[]);
    assert!(err.contains("kiln::emit::secret_forbidden"), "{err}");
    assert!(err.contains("(web-prod/db)"), "{err}");
}

#[test]
fn invalid_names_namespaces_and_label_keys_of_emitted_objects_fail_the_render() {
    let cases = [
        ("name: Frontend_PDB", "metadata.name"),
        (&*format!("name: {}", "a".repeat(300)), "metadata.name"),
        (
            "name: ok\n  labels: {\"has space\": x}",
            "metadata.labels key `has space`",
        ),
    ];
    for (meta, field) in cases {
        let f = Fixture::new();
        f.write(
            "repo/components/web/manifests/pdb.yaml",
            &format!("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata:\n  {meta}\nspec:\n  minAvailable: 1\n"),
        );
        let out = f.render(&[]);
        let err = assert_fails(&f, &out, &[]);
        assert!(
            err.contains("kiln::render::invalid_object_meta"),
            "{meta}: {err}"
        );
        assert!(err.contains(field), "{meta}: {err}");
    }
    // A namespace that reaches the output as written (the component sets none).
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "  - namespace: \"${env.namespace}\"\n",
        "",
    );
    f.edit(
        "repo/components/web/manifests/deployment.yaml",
        "  name: web\n",
        "  name: web\n  namespace: ../../etc\n",
    );
    let out = f.render(&[]);
    let err = assert_fails(&f, &out, &[]);
    assert!(err.contains("invalid metadata.namespace"), "{err}");
}
