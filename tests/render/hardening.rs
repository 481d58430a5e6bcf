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
        // The same words as for a path that names nothing (issue 39, item 6).
        assert!(err.contains("`resources[1]`"), "{base}: {err}");
        assert!(!err.contains("stolen"), "{base}: {err}");
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

/// A fake `.git/config` with a fake token, as a checkout of a pull request would have.
const GIT_CONFIG: &str = "[remote \"origin\"]\n\turl = https://ci:ghp_FAKE0000000000000000000000000000@example.com/bank.git\n";

/// Issue 39, item 1: a vendored chart whose file is a link to the repository's
/// `.git/config` (or to anything else in the repository) is refused; the token is never
/// rendered or printed.
#[cfg(unix)]
#[test]
fn a_chart_link_to_git_config_is_never_read() {
    for target in [
        "../../../../.git/config",
        "../../../../platforms/p/platform.yaml",
        "../../../../.git",
    ] {
        let f = Fixture::new();
        f.write("repo/.git/config", GIT_CONFIG);
        f.edit(
            "repo/components/web/component.yaml",
            "  - files: [manifests]\n",
            "  - files: [manifests]\n  - helm: {chart: chart}\n",
        );
        chart_with_link(&f, "repo/components/web/chart", target);
        assert_link_refused(&f, target);
    }
}

/// A chart `app` in `chart` (a fixture path) whose template renders `files/config`, a link to
/// `target`.
#[cfg(unix)]
fn chart_with_link(f: &Fixture, chart: &str, target: &str) {
    f.write(
        &format!("{chart}/Chart.yaml"),
        "apiVersion: v2\nname: app\nversion: 0.1.0\n",
    );
    f.write(
        &format!("{chart}/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  config: {{ .Files.Get \"files/config\" | quote }}\n",
    );
    std::fs::create_dir_all(f.path(&format!("{chart}/files"))).unwrap();
    std::os::unix::fs::symlink(target, f.path(&format!("{chart}/files/config"))).unwrap();
    assert!(
        std::fs::metadata(f.path(&format!("{chart}/files/config"))).is_ok(),
        "{target}: the link resolves"
    );
}

/// The render fails naming the linked file; the token is nowhere, nothing is written.
fn assert_link_refused(f: &Fixture, target: &str) {
    let out = f.render(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{target}: {err}");
    assert!(err.contains("files/config"), "{target}: {err}");
    assert!(!err.contains("ghp_FAKE"), "{target}: {err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ghp_FAKE"));
    assert!(!f.path("repo/deploy").exists(), "{target}");
}

/// Issue 39, item 1, for kustomize's `helmCharts:` (HelmChartInflationGenerator): its
/// vendored chart is confined to its own directory as the `helm` generator's is. A link to
/// the repository's `.git/config`, to another file of the repository or to `.git` itself is
/// refused, and the token is never rendered or printed.
#[cfg(unix)]
#[test]
fn a_helm_charts_link_to_git_config_is_never_read() {
    for target in [
        "../../../../../../.git/config",
        "../../../../../../platforms/p/platform.yaml",
        "../../../../../../.git",
    ] {
        let f = Fixture::new();
        f.write("repo/.git/config", GIT_CONFIG);
        with_kustomize_generator(&f);
        f.write(
            "repo/components/web/base/kustomization.yaml",
            "resources:\n- deployment.yaml\nhelmCharts:\n- name: app\n  releaseName: app\n",
        );
        chart_with_link(&f, "repo/components/web/base/charts/app", target);
        assert_link_refused(&f, target);
    }
}

/// Issue 39, item 6: a `../` path out of the root gets the same error whether or not
/// something is there, so an error never tells which paths exist outside the root.
#[test]
fn an_outside_path_is_refused_the_same_whether_it_exists_or_not() {
    let message = |base: &str| {
        let f = Fixture::new();
        with_kustomize_generator(&f);
        f.write("outside/kustomization.yaml", "resources:\n- secret.yaml\n");
        f.write(
            "repo/components/web/base/kustomization.yaml",
            &format!("resources:\n- deployment.yaml\n- {base}\n"),
        );
        let out = f.render(&[]);
        assert_eq!(out.status.code(), Some(1));
        // The message, with the path named and the temp dir left out (the names have one
        // length: the snippet underlines the entry).
        stderr(&out)
            .replace(base, "BASE")
            .replace(&f.dir.path().display().to_string(), "TMP")
            .replace("nowhere", "outside")
    };
    for (present, missing) in [
        ("../../../../outside", "../../../../nowhere"),
        (
            "../../../../outside/secret.yaml",
            "../../../../nowhere/secret.yaml",
        ),
    ] {
        let (a, b) = (message(present), message(missing));
        assert_eq!(a, b);
        // kustomize's loader names any path it cannot resolve so.
        assert!(a.contains("`BASE` does not exist"), "{a}");
    }
}

/// Issue 39, item 3: a committed `.kiln/cache` that is a link (here to a directory outside
/// the checkout) is not used: the render goes on without a cache, says so, and writes
/// nothing there.
#[cfg(unix)]
#[test]
fn a_cache_path_through_a_symlink_is_not_written() {
    let f = Fixture::new();
    let victim = f.path("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::create_dir_all(f.path("repo/.kiln")).unwrap();
    std::os::unix::fs::symlink(&victim, f.path("repo/.kiln/cache")).unwrap();
    for dir in ["repo/.kiln/cache", "repo/.kiln/cache/deeper"] {
        let out = f.render(&["--cache-dir", f.path(dir).to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("not using the render cache"), "{err}");
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0, "{dir}");
    }
}

/// Issue 39, item 5: a Secret written as JSON on one line (the form the line rules missed)
/// never reaches `kiln diff` or `kiln verify` output when it is removed.
#[test]
fn diff_and_verify_never_print_a_removed_json_secret() {
    let f = Fixture::new();
    f.write(
        "repo/components/web/manifests/secret.yaml",
        "{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"db\"}, \"stringData\": {\"password\": \"hunter2-json-secret\"}}\n",
    );
    let out = f.render(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bare = f.path("deploy.git");
    git2::Repository::init_bare(&bare).unwrap();
    let platform = f.path("repo/platforms/p");
    let run = |args: &[&str]| crate::support::kiln_in(&f.path("repo"), args);
    let p = platform.to_str().unwrap();
    let r = run(&[
        "publish",
        p,
        "--repo",
        bare.to_str().unwrap(),
        "--branch",
        "main",
        "--path",
        "deploy",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.text());
    std::fs::remove_file(f.path("repo/components/web/manifests/secret.yaml")).unwrap();
    let deploy = f.path("repo/deploy");
    for args in [
        vec!["diff", p, "--against", deploy.to_str().unwrap()],
        vec![
            "verify",
            p,
            "--repo",
            bare.to_str().unwrap(),
            "--ref",
            "main",
            "--path",
            "deploy",
        ],
    ] {
        let r = run(&args);
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.text());
        assert!(
            r.text().contains("secret value hidden"),
            "{args:?}: {}",
            r.text()
        );
        assert!(!r.text().contains("hunter2"), "{args:?}: {}", r.text());
    }
}

/// Issue 39, item 19: a dangling symlink in a component is named as one, where it was "not
/// found" (a `files:` directory, a `configMapGenerator` file, a path resolved per
/// environment) or, anywhere under a `kustomize:` directory, "kustomization file `…` not
/// found". Under a kustomize directory an unused dangling link is no error, as in kubectl;
/// one the kustomization names is the engine's error, naming it.
#[cfg(unix)]
#[test]
fn a_dangling_symlink_is_named_as_one() {
    let link = |f: &Fixture, rel: &str, target: &str| {
        let p = f.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, p).unwrap();
    };
    let kustomization = |f: &Fixture, dir: &str, extra: &str| {
        let deployment =
            std::fs::read_to_string(f.path("repo/components/web/manifests/deployment.yaml"))
                .unwrap();
        f.write(
            &format!("repo/components/web/{dir}/deployment.yaml"),
            &deployment,
        );
        f.write(
            &format!("repo/components/web/{dir}/kustomization.yaml"),
            &format!("resources:\n- deployment.yaml\n{extra}"),
        );
    };
    let files = "  - files: [manifests]\n";
    type Setup<'a> = &'a dyn Fn(&Fixture);
    let cases: [(&str, Setup, &str); 5] = [
        (
            "a file of a `files:` directory",
            &|f| link(f, "repo/components/web/manifests/gone.yaml", "nowhere.yaml"),
            "`components/web/manifests/gone.yaml` is a symbolic link to `nowhere.yaml`, which does not exist",
        ),
        (
            "a `configMapGenerator` file",
            &|f| {
                link(f, "repo/components/web/conf/gone.txt", "nowhere.txt");
                f.edit(
                    "repo/components/web/component.yaml",
                    files,
                    &format!("{files}  - configMapGenerator:\n      name: c\n      files: [conf/gone.txt]\n"),
                );
            },
            "`components/web/conf/gone.txt` is a symbolic link to `nowhere.txt`, which does not exist",
        ),
        (
            "a kustomize directory resolved per environment",
            &|f| {
                kustomization(f, "k/dev", "");
                link(f, "repo/components/web/k/prod", "missing");
                f.edit(
                    "repo/components/web/component.yaml",
                    files,
                    "  - kustomize: k/${env.name}\n",
                );
            },
            "`k/prod` is a symbolic link to `missing`, which does not exist",
        ),
        (
            "a file a kustomization names",
            &|f| {
                kustomization(
                    f,
                    "k",
                    "configMapGenerator:\n- name: c\n  files: [gone.txt]\n",
                );
                link(f, "repo/components/web/k/gone.txt", "nowhere.txt");
                f.edit(
                    "repo/components/web/component.yaml",
                    files,
                    "  - kustomize: k\n",
                );
            },
            "`gone.txt` is a symbolic link to `nowhere.txt`, which does not exist",
        ),
        (
            "an unused link under a kustomize directory",
            &|f| {
                kustomization(f, "k", "");
                link(f, "repo/components/web/k/notes.txt", "nowhere.txt");
                f.edit(
                    "repo/components/web/component.yaml",
                    files,
                    "  - kustomize: k\n",
                );
            },
            "",
        ),
    ];
    for (what, setup, says) in cases {
        let f = Fixture::new();
        setup(&f);
        let out = f.render(&[]);
        if says.is_empty() {
            assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
            continue;
        }
        assert_fails(&f, &out, &[]);
        let err = stderr(&out);
        // miette wraps at `/` too: compare without the spaces it leaves.
        let squeeze = |t: &str| t.split_whitespace().collect::<String>();
        assert!(squeeze(&err).contains(&squeeze(says)), "{what}: {err}");
        assert!(!err.contains("not found"), "{what}: {err}");
    }
}
