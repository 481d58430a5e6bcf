//! `kiln render` on broken input: one test per error class. Each checks exit code 1, that
//! stderr names the file and the line (`file:line:column`, as miette prints it), and that
//! nothing was written (a previous output stays byte for byte).

use crate::support::list_files;
use std::path::{Path, PathBuf};
use std::process::Output;

const PLATFORM: &str = "\
apiVersion: kiln/v1alpha1
kind: Platform
metadata:
  name: p
spec:
  clusters:
  - name: c
    server: https://c.example.com
  environments:
  - name: dev
    tier: nonprod
    cluster: c
  - name: prod
    tier: prod
    cluster: c
    from: [dev]
  projects:
  - name: web
    components:
    - path: ../../components/web
      parameters:
        replicas: 2
";

const COMPONENT: &str = "\
apiVersion: kiln/v1alpha1
kind: Component
metadata:
  name: web
spec:
  parameters:
    type: object
    additionalProperties: false
    properties:
      replicas: {type: integer, minimum: 1, default: 1}
      host: {type: string, default: web.example.com}
  images:
  - {name: web, repository: ghcr.io/example/web, tag: \"1.0.0\"}
  generators:
  - files: [manifests]
  transformers:
  - namespace: \"${env.namespace}\"
  - jsonPatch:
      target: {kind: Deployment, name: web}
      patch:
      - {op: replace, path: /spec/replicas, value: \"${params.replicas}\"}
";

const DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: web
";

/// A platform repository in a temp dir: `repo/platforms/p`, `repo/components/web`, with an
/// `outside/` directory next to the repository for escape tests.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        f.write("repo/platforms/p/platform.yaml", PLATFORM);
        f.write("repo/components/web/component.yaml", COMPONENT);
        f.write("repo/components/web/manifests/deployment.yaml", DEPLOYMENT);
        f.write(
            "outside/secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: stolen\n",
        );
        f
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pub fn edit(&self, rel: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.path(rel)).unwrap();
        assert!(text.contains(from), "fixture edit: `{from}` not in {rel}");
        self.write(rel, &text.replacen(from, to, 1));
    }
    pub fn render(&self, extra: &[&str]) -> Output {
        crate::support::kiln_bin()
            .arg("render")
            .arg(self.path("repo/platforms/p"))
            .arg("--write-to")
            .arg(self.path("repo/deploy"))
            .args(extra)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }
}

/// 1-based line of the first line of `rel` that contains `needle`.
pub fn line_of(f: &Fixture, rel: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(f.path(rel)).unwrap();
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in {rel}"))
}

/// Asserts exit code 1, `file:line` in stderr for every `(file, line)`, and no output dir.
pub fn assert_fails(f: &Fixture, out: &Output, places: &[(&str, usize)]) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "exit code; stderr:\n{stderr}");
    for (file, line) in places {
        assert!(
            stderr.contains(&format!("{file}:{line}:")),
            "stderr does not name {file}:{line}:\n{stderr}"
        );
    }
    assert!(
        !f.path("repo/deploy").exists(),
        "nothing may be written on errors"
    );
    stderr
}

#[test]
fn fixture_renders_cleanly() {
    let f = Fixture::new();
    let out = f.render(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = list_files(&f.path("repo/deploy"));
    assert_eq!(
        files,
        [
            ".kiln-owned.json",
            "web/dev/web/kustomization.yaml",
            "web/dev/web/web.gen.yaml",
            "web/prod/web/kustomization.yaml",
            "web/prod/web/web.gen.yaml"
        ]
    );
    // A second run changes nothing.
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|p| std::fs::read(f.path("repo/deploy").join(p)).unwrap())
        .collect();
    assert_eq!(f.render(&[]).status.code(), Some(0));
    let after: Vec<Vec<u8>> = files
        .iter()
        .map(|p| std::fs::read(f.path("repo/deploy").join(p)).unwrap())
        .collect();
    assert_eq!(before, after);
}

#[test]
fn yaml_syntax_error() {
    let f = Fixture::new();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "    tier: prod\n",
        "    tier: [prod\n",
    );
    let out = f.render(&[]);
    assert_fails(
        &f,
        &out,
        &[(
            "platforms/p/platform.yaml",
            line_of(&f, "repo/platforms/p/platform.yaml", "tier: [prod") + 1,
        )],
    );
}

#[test]
fn duplicate_keys() {
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "  name: web\n",
        "  name: web\n  name: web2\n",
    );
    let out = f.render(&[]);
    let line = line_of(&f, "repo/components/web/component.yaml", "name: web2");
    let stderr = assert_fails(&f, &out, &[("components/web/component.yaml", line)]);
    assert!(stderr.to_lowercase().contains("duplicate"), "{stderr}");
}

#[test]
fn every_schema_violation_is_reported() {
    let f = Fixture::new();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "    tier: nonprod\n",
        "    tier: nonprod\n    colour: blue\n",
    );
    f.edit(
        "repo/components/web/component.yaml",
        "  generators:\n",
        "  generatorz: []\n  generators:\n",
    );
    f.edit(
        "repo/components/web/component.yaml",
        "tag: \"1.0.0\"",
        "tag: 1",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[
            (
                "platforms/p/platform.yaml",
                line_of(&f, "repo/platforms/p/platform.yaml", "colour"),
            ),
            (
                "components/web/component.yaml",
                line_of(&f, "repo/components/web/component.yaml", "generatorz"),
            ),
            (
                "components/web/component.yaml",
                line_of(&f, "repo/components/web/component.yaml", "tag: 1"),
            ),
        ],
    );
    assert!(stderr.contains("kiln::load::schema_violation"), "{stderr}");
}

#[test]
fn parameter_schema_violations_are_all_reported() {
    let f = Fixture::new();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "        replicas: 2\n",
        "        replicas: 0\n        host: 7\n",
    );
    let out = f.render(&[]);
    let p = "repo/platforms/p/platform.yaml";
    let stderr = assert_fails(
        &f,
        &out,
        &[
            ("platforms/p/platform.yaml", line_of(&f, p, "replicas: 0")),
            ("platforms/p/platform.yaml", line_of(&f, p, "host: 7")),
        ],
    );
    assert!(
        stderr.contains("kiln::evaluate::parameter_invalid"),
        "{stderr}"
    );
}

#[test]
fn unknown_component() {
    let f = Fixture::new();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "components/web",
        "components/wbe",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "platforms/p/platform.yaml",
            line_of(&f, "repo/platforms/p/platform.yaml", "components/wbe"),
        )],
    );
    assert!(
        stderr.contains("unknown component `../../components/wbe`")
            && stderr.contains("did you mean `../../components/web`?"),
        "{stderr}"
    );
}

#[test]
fn unknown_environment() {
    let f = Fixture::new();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "from: [dev]",
        "from: [dve]",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "platforms/p/platform.yaml",
            line_of(&f, "repo/platforms/p/platform.yaml", "from: [dve]"),
        )],
    );
    assert!(
        stderr.contains("unknown environment `dve`") && stderr.contains("did you mean `dev`?"),
        "{stderr}"
    );
}

#[test]
fn unknown_parameter() {
    let f = Fixture::new();
    f.edit(
        "repo/platforms/p/platform.yaml",
        "        replicas: 2\n",
        "        replica: 2\n",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "platforms/p/platform.yaml",
            line_of(&f, "repo/platforms/p/platform.yaml", "replica: 2"),
        )],
    );
    assert!(
        stderr.contains("unknown parameter `replica`")
            && stderr.contains("did you mean `replicas`?"),
        "{stderr}"
    );
}

#[test]
fn unknown_reference() {
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "${params.replicas}",
        "${params.replica}",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "components/web/component.yaml",
            line_of(
                &f,
                "repo/components/web/component.yaml",
                "${params.replica}",
            ),
        )],
    );
    assert!(
        stderr.contains("kiln::evaluate::unknown_reference"),
        "{stderr}"
    );
}

#[test]
fn patch_matching_nothing() {
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "kind: Deployment, name: web}",
        "kind: Deployment, name: api}",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "components/web/component.yaml",
            line_of(&f, "repo/components/web/component.yaml", "name: api}"),
        )],
    );
    assert!(
        stderr.contains("kiln::render::patch_target_missing"),
        "{stderr}"
    );
}

#[test]
fn component_path_outside_the_root() {
    let f = Fixture::new();
    f.write("outside/evil/component.yaml", COMPONENT);
    f.edit(
        "repo/platforms/p/platform.yaml",
        "../../components/web",
        "../../../outside/evil",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "platforms/p/platform.yaml",
            line_of(&f, "repo/platforms/p/platform.yaml", "outside/evil"),
        )],
    );
    assert!(stderr.contains("kiln::load::path_outside_root"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn symlink_outside_the_root() {
    let f = Fixture::new();
    std::os::unix::fs::symlink(
        f.path("outside/secret.yaml"),
        f.path("repo/components/web/manifests/secret.yaml"),
    )
    .unwrap();
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "components/web/component.yaml",
            line_of(
                &f,
                "repo/components/web/component.yaml",
                "files: [manifests]",
            ),
        )],
    );
    assert!(stderr.contains("kiln::load::path_outside_root"), "{stderr}");
}

#[test]
fn errors_leave_previous_output_intact() {
    let f = Fixture::new();
    assert_eq!(f.render(&[]).status.code(), Some(0));
    let deploy = f.path("repo/deploy");
    let snapshot = |d: &Path| -> Vec<(String, Vec<u8>)> {
        list_files(d)
            .into_iter()
            .map(|p| (p.clone(), std::fs::read(d.join(&p)).unwrap()))
            .collect()
    };
    let before = snapshot(&deploy);
    f.edit(
        "repo/platforms/p/platform.yaml",
        "        replicas: 2\n",
        "        replicas: 0\n",
    );
    let out = f.render(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(snapshot(&deploy), before);
}

#[test]
fn unknown_selection_is_an_input_error() {
    let f = Fixture::new();
    let out = f.render(&["--environment", "prd"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unknown environment `prd`") && stderr.contains("did you mean `prod`?"),
        "{stderr}"
    );
}

#[test]
fn partial_render_keeps_files_outside_the_selection() {
    let f = Fixture::new();
    assert_eq!(f.render(&[]).status.code(), Some(0));
    f.edit(
        "repo/platforms/p/platform.yaml",
        "        replicas: 2\n",
        "        replicas: 3\n",
    );
    let out = f.render(&["--environment", "dev"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deploy = f.path("repo/deploy");
    assert_eq!(list_files(&deploy).len(), 5, "prod's files stay");
    let dev = std::fs::read_to_string(deploy.join("web/dev/web/web.gen.yaml")).unwrap();
    let prod = std::fs::read_to_string(deploy.join("web/prod/web/web.gen.yaml")).unwrap();
    assert!(
        dev.contains("replicas: 3") && prod.contains("replicas: 2"),
        "{dev}\n{prod}"
    );
}

/// A component image whose `name` is a typo used to render with exit 0: the `.gen.yaml` kept
/// the old image while `kustomization.yaml` retargeted the repository's.
#[test]
fn component_image_matching_no_container() {
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "{name: web, repository",
        "{name: wbe, repository",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "components/web/component.yaml",
            line_of(&f, "repo/components/web/component.yaml", "name: wbe"),
        )],
    );
    for want in [
        "kiln::render::image_matches_nothing",
        "images[0].name",
        "did you mean `web`?",
        "containers use `web`",
    ] {
        assert!(stderr.contains(want), "no `{want}` in:\n{stderr}");
    }
}

/// A tag built from a `${…}` reference is checked once resolved: validate checks only literal
/// tags, and `${params.host}!` used to reach the manifests and the Warehouse as
/// `web.example.com!`.
#[test]
fn image_tag_invalid_once_resolved() {
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "tag: \"1.0.0\"",
        "tag: \"${params.host}!\"",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "components/web/component.yaml",
            line_of(&f, "repo/components/web/component.yaml", "${params.host}!"),
        )],
    );
    for want in [
        "kiln::evaluate::invalid_image",
        "`images[0].tag` is `web.example.com!`",
        "resolves to `web.example.com!`",
    ] {
        assert!(stderr.contains(want), "no `{want}` in:\n{stderr}");
    }
}

/// The same for an `images` transformer's `newTag`.
#[test]
fn image_transformer_tag_invalid_once_resolved() {
    let f = Fixture::new();
    f.edit(
        "repo/components/web/component.yaml",
        "  transformers:\n",
        "  transformers:\n  - images: [{name: web, newTag: \"v-${params.host}/x\"}]\n",
    );
    let out = f.render(&[]);
    let stderr = assert_fails(
        &f,
        &out,
        &[(
            "components/web/component.yaml",
            line_of(&f, "repo/components/web/component.yaml", "newTag"),
        )],
    );
    for want in [
        "kiln::evaluate::invalid_image",
        "`transformers[0].images[0].newTag` is",
        "resolves to `v-web.example.com/x`",
    ] {
        assert!(stderr.contains(want), "no `{want}` in:\n{stderr}");
    }
}
