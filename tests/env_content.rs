//! Environment-specific content from app teams (issue 34): references in generator paths,
//! optional path entries, `when:` selectors by environment, tier or cluster, and their
//! errors. The fixture `tests/fixtures/app-repos` holds three app repositories in the
//! layouts teams use (kustomize overlays, a chart with values per tier, plain files with a
//! prod-only folder); each renders, per environment, as the team's own tool prints it:
//! `kubectl kustomize overlays/<tier>` and real Helm with `-f values.yaml -f values-<v>.yaml`
//! (stored in `expected/`; re-run live with `KILN_LIVE_KUSTOMIZE=1` and `KILN_LIVE_HELM`).

use crate::support::{copy_dir, kiln_in, repo_root};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    repo_root().join("tests/fixtures/app-repos")
}

/// The documents of a YAML stream, sorted by kind and name (tools print in their own order).
fn docs(name: &str, text: &str) -> Vec<Value> {
    let mut docs: Vec<Value> = kiln::yaml::parse_stream(name, text)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .into_iter()
        .filter(Value::is_object)
        .collect();
    let key = |v: &Value| {
        format!(
            "{}/{}",
            v["kind"].as_str().unwrap_or(""),
            v["metadata"]["name"].as_str().unwrap_or("")
        )
    };
    docs.sort_by_key(key);
    docs
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The platform rendered in memory: path → text.
fn render(platform: &Path, root: &Path) -> Result<kiln::artifact::ArtifactSet, String> {
    let mut opts = kiln::pipeline::RenderOptions::new(platform);
    opts.root = Some(root.to_path_buf());
    kiln::pipeline::build(&opts, &|_, _| {})
        .map(|b| b.set)
        .map_err(|e| format!("{:?}", miette::Report::new(e)))
}

const ENVS: [(&str, &str, &str); 5] = [
    // (environment, overlay tier, chart values variant)
    ("dev", "dev", "nonprod"),
    ("test", "test", "nonprod"),
    ("stage", "test", "nonprod"),
    ("prod-east", "prod", "prod"),
    ("prod-west", "prod", "prod"),
];

#[test]
fn app_team_layouts_render_per_environment_as_their_own_tools_print_them() {
    let root = fixture();
    let set = render(&root.join("platforms/estate"), &root).unwrap_or_else(|e| panic!("{e}"));
    let gen_of = |env: &str, component: &str| -> Vec<Value> {
        let path = format!("shop/{env}/{component}/{component}.gen.yaml");
        let bytes = set
            .files
            .get(&path)
            .unwrap_or_else(|| panic!("{path} not rendered"));
        docs(&path, std::str::from_utf8(bytes).unwrap())
    };
    for (env, tier, variant) in ENVS {
        let kubectl = root.join(format!("expected/kustomize-{tier}.yaml"));
        assert_eq!(
            gen_of(env, "shop-web"),
            docs("kubectl", &read(&kubectl)),
            "{env}: shop-web differs from kubectl kustomize overlays/{tier}"
        );
        let helm = root.join(format!("expected/helm-{variant}.yaml"));
        assert_eq!(
            gen_of(env, "shop-api"),
            docs("helm", &read(&helm)),
            "{env}: shop-api differs from helm template -f values-{variant}.yaml"
        );
        let mut files = read(&root.join("apps/shop-jobs/manifests/cronjob.yaml"));
        if tier == "prod" {
            files += "---\n";
            files += &read(&root.join("apps/shop-jobs/prod/pdb.yaml"));
        }
        assert_eq!(
            gen_of(env, "shop-jobs"),
            docs("files", &files),
            "{env}: shop-jobs"
        );
    }
    // The prod-only HPA is in prod and nowhere else.
    let hpa = |env: &str| {
        gen_of(env, "shop-web")
            .iter()
            .any(|d| d["kind"] == "HorizontalPodAutoscaler")
    };
    assert!(hpa("prod-east") && hpa("prod-west"));
    assert!(!hpa("dev") && !hpa("test") && !hpa("stage"));
}

#[test]
fn live_tools_agree_with_the_stored_layout_expectations() {
    let root = fixture();
    if std::env::var_os("KILN_LIVE_KUSTOMIZE").is_some() {
        for tier in ["dev", "test", "prod"] {
            let out = std::process::Command::new("kubectl")
                .arg("kustomize")
                .arg(root.join(format!("apps/shop-web/overlays/{tier}")))
                .output()
                .expect("kubectl runs (KILN_LIVE_KUSTOMIZE is set)");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                read(&root.join(format!("expected/kustomize-{tier}.yaml"))),
                "kubectl kustomize overlays/{tier} changed"
            );
        }
    }
    if let Some(python) = std::env::var_os("KILN_LIVE_HELM") {
        let out = std::process::Command::new(python)
            .arg(repo_root().join("scripts/app-repos-expectations.py"))
            .arg("--check")
            .output()
            .expect("the expectations script runs");
        assert!(
            out.status.success(),
            "real Helm disagrees with tests/fixtures/app-repos/expected:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A copy of the fixture in a temporary directory, `component.yaml` of `app` replaced.
fn variant(app: &str, component: &str) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), t.path());
    std::fs::write(
        t.path().join(format!("apps/{app}/component.yaml")),
        component,
    )
    .unwrap();
    let platform = t.path().join("platforms/estate");
    (t, platform)
}

/// `kiln render` of a variant: (exit code, stderr), with nothing written on failure.
fn render_cli(platform: &Path) -> (Option<i32>, String) {
    let dir = platform.parent().unwrap().parent().unwrap();
    let out = dir.join("out");
    let run = kiln_in(
        dir,
        &[
            "render",
            platform.to_str().unwrap(),
            "--write-to",
            out.to_str().unwrap(),
            "--no-cache",
        ],
    );
    if run.code != Some(0) {
        assert!(!out.exists(), "a failed render wrote {}", out.display());
    }
    (run.code, run.stderr)
}

/// Whether a diagnostic says `needle`, however miette wrapped its lines.
fn says(err: &str, needle: &str) -> bool {
    let squash = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != '|')
            .collect()
    };
    squash(err).contains(&squash(needle))
}

fn component(generators: &str) -> String {
    format!(
        "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: shop-web\nspec:\n  generators:\n{generators}"
    )
}

#[test]
fn a_path_missing_for_one_environment_names_it_and_the_path_tried() {
    // overlays/stage does not exist: the path is tried per environment.
    let (_t, platform) = variant(
        "shop-web",
        &component("  - kustomize: overlays/${env.name}\n"),
    );
    let (code, err) = render_cli(&platform);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        says(
            &err,
            "kustomization directory `overlays/stage` not found for environment `stage`"
        ),
        "{err}"
    );
    assert!(says(&err, "component.yaml:7"), "{err}");
    assert!(
        says(&err, "`overlays/${env.name}` resolves to `overlays/stage`"),
        "{err}"
    );
}

#[test]
fn optional_entries_are_skipped_where_missing_and_read_where_present() {
    let (t, platform) = variant(
        "shop-jobs",
        "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: shop-jobs\nspec:\n  generators:\n  - files:\n    - manifests\n    - {path: \"extra-${env.name}.yaml\", optional: true}\n",
    );
    std::fs::write(
        t.path().join("apps/shop-jobs/extra-test.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: only-in-test\n",
    )
    .unwrap();
    let set = render(&platform, t.path()).unwrap_or_else(|e| panic!("{e}"));
    let has = |env: &str| {
        let f = format!("shop/{env}/shop-jobs/shop-jobs.gen.yaml");
        String::from_utf8_lossy(&set.files[&f]).contains("only-in-test")
    };
    assert!(has("test"));
    assert!(!has("dev") && !has("stage") && !has("prod-east"));
}

#[test]
fn a_path_with_references_may_not_leave_the_component() {
    for path in ["../shop-api/${env.tier}", "/etc/${env.name}"] {
        let (_t, platform) = variant(
            "shop-web",
            &component(&format!("  - kustomize: \"{path}\"\n")),
        );
        let (code, err) = render_cli(&platform);
        assert_eq!(code, Some(1), "{err}");
        assert!(says(&err, "leaves the component"), "{path}: {err}");
        assert!(says(&err, "kiln::render::path_outside_component"), "{err}");
        assert!(says(&err, "component.yaml:7"), "{err}");
    }
}

#[test]
fn a_reference_in_a_path_must_be_a_string() {
    let text = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: shop-web\nspec:\n  parameters:\n    type: object\n    properties:\n      replicas: {type: integer, default: 3}\n  generators:\n  - kustomize: overlays/${params.replicas}\n";
    let (_t, platform) = variant("shop-web", text);
    let (code, err) = render_cli(&platform);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        says(
            &err,
            "reference `${params.replicas}` in a path is a number, not a string"
        ),
        "{err}"
    );
    assert!(says(&err, "component.yaml:11"), "{err}");
}

#[test]
fn an_unknown_reference_in_a_path_gets_a_did_you_mean() {
    let (_t, platform) = variant(
        "shop-web",
        &component("  - kustomize: overlays/${env.teir}\n"),
    );
    let (code, err) = render_cli(&platform);
    assert_eq!(code, Some(1), "{err}");
    assert!(says(&err, "unknown reference `${env.teir}`"), "{err}");
    assert!(says(&err, "did you mean `${env.tier}`?"), "{err}");
    assert!(says(&err, "component.yaml:7"), "{err}");
}

#[test]
fn when_selects_generators_and_transformers_by_tier_cluster_and_name() {
    let text = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: shop-web\nspec:\n  generators:\n  - kustomize: overlays/${env.tier}\n  - resources:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: debug-tools}}\n    when: {environments: [dev]}\n  transformers:\n  - labels: {cost-center: prod-east-only}\n    when: {clusters: [prod-east]}\n  - annotations: {shop.example.com/tier: production}\n    when: {tiers: [prod]}\n";
    let (t, platform) = variant("shop-web", text);
    let set = render(&platform, t.path()).unwrap_or_else(|e| panic!("{e}"));
    let gen_of = |env: &str| {
        String::from_utf8_lossy(&set.files[&format!("shop/{env}/shop-web/shop-web.gen.yaml")])
            .into_owned()
    };
    assert!(gen_of("dev").contains("debug-tools"));
    assert!(!gen_of("test").contains("debug-tools"));
    assert!(gen_of("prod-east").contains("prod-east-only"));
    assert!(!gen_of("prod-west").contains("prod-east-only"));
    assert!(gen_of("prod-west").contains("shop.example.com/tier: production"));
    assert!(!gen_of("stage").contains("shop.example.com/tier"));
}

#[test]
fn a_name_the_platform_lacks_in_when_is_an_error_with_a_did_you_mean() {
    let text = "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: shop-jobs\nspec:\n  generators:\n  - files:\n    - manifests\n    - {path: prod, when: {tiers: [prdo]}}\n";
    let (_t, platform) = variant("shop-jobs", text);
    let (code, err) = render_cli(&platform);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        says(
            &err,
            "unknown tier `prdo` in generator 0 of component `shop-jobs`"
        ),
        "{err}"
    );
    assert!(says(&err, "did you mean `prod`?"), "{err}");
    assert!(says(&err, "component.yaml:9"), "{err}");
}

#[test]
fn paths_are_relative_help_only_when_that_is_the_cause() {
    // Written from the repository root: the help says paths are relative to the file.
    let (_t, platform) = variant(
        "shop-web",
        &component("  - kustomize: apps/shop-web/base\n"),
    );
    let (code, err) = render_cli(&platform);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        says(&err, "paths are relative to the directory of the file"),
        "{err}"
    );
    // A typo: the help names the close entry instead.
    let (_t, platform) = variant("shop-web", &component("  - kustomize: overlay/prod\n"));
    let (code, err) = render_cli(&platform);
    assert_eq!(code, Some(1), "{err}");
    assert!(!says(&err, "paths are relative"), "{err}");
    assert!(says(&err, "not found"), "{err}");
}

/// The fixture platform with `edit` applied to its `platform.yaml`.
fn platform_variant(edit: impl Fn(&str) -> String) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), t.path());
    let file = t.path().join("platforms/estate/platform.yaml");
    let text = read(&file);
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(&file, edited).unwrap();
    let platform = t.path().join("platforms/estate");
    (t, platform)
}

#[test]
fn deploy_to_skips_a_stage_and_freight_comes_from_the_nearest_deployed_ancestor() {
    let set =
        render(&repo_root().join("platforms/bank"), &repo_root()).unwrap_or_else(|e| panic!("{e}"));
    // No directory, Application or Stage where an instance is not deployed.
    assert!(
        set.files
            .keys()
            .any(|p| p.starts_with("ops/test/status-page/"))
    );
    assert!(
        !set.files
            .keys()
            .any(|p| p.starts_with("ops/stage/status-page/"))
    );
    assert!(
        !set.files
            .keys()
            .any(|p| p.starts_with("ops/prod-east/demo-data/"))
    );
    let objects = |path: &str| docs(path, std::str::from_utf8(&set.files[path]).unwrap());
    let stages = objects("ops/kargo/status-page.yaml");
    let stage = |name: &str| -> &Value {
        stages
            .iter()
            .find(|s| s["kind"] == "Stage" && s["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no Stage {name}"))
    };
    assert!(
        stages
            .iter()
            .all(|s| s["metadata"]["name"] != "status-page-stage")
    );
    for prod in ["status-page-prod-east", "status-page-prod-west"] {
        assert_eq!(
            stage(prod)["spec"]["requestedFreight"][0]["sources"],
            serde_json::json!({"stages": ["status-page-test"]}),
            "{prod} follows test, `stage` being skipped"
        );
    }
    let apps = objects("ops/argocd/demo-data.yaml");
    let envs: Vec<&str> = apps
        .iter()
        .map(|a| {
            a["metadata"]["labels"]["kiln.dev/environment"]
                .as_str()
                .unwrap_or("")
        })
        .collect();
    assert_eq!(envs.len(), 3, "{envs:?}");
    // `kiln graph` draws the skip: an edge from the test Stage to each prod Stage.
    let run = kiln_in(
        &repo_root(),
        &["graph", "platforms/bank", "--project", "ops", "-o", "dot"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stdout.contains("status-page-stage"), "{}", run.stdout);
    assert!(
        run.stdout.contains("status-page-prod-east"),
        "{}",
        run.stdout
    );
}

#[test]
fn deploy_to_errors_name_the_rule_and_the_place() {
    type Edit<'a> = &'a dyn Fn(&str) -> String;
    let cases: [(&str, Edit<'_>, &str); 4] = [
        (
            "selects nothing",
            &|t| {
                t.replace("    - path: ../../apps/shop-jobs\n", "    - path: ../../apps/shop-jobs\n      deployTo: {tiers: [prod], environments: [dev]}\n")
            },
            "`deployTo` of component `shop-jobs` in project `shop` selects no environment",
        ),
        (
            "unknown tier",
            &|t| {
                t.replace(
                    "    - path: ../../apps/shop-jobs\n",
                    "    - path: ../../apps/shop-jobs\n      deployTo: {tiers: [tset]}\n",
                )
            },
            "unknown tier `tset` in component `shop-jobs` in project `shop`",
        ),
        (
            "parameters for an environment it skips",
            &|t| {
                t.replace("    - path: ../../apps/shop-jobs\n", "    - path: ../../apps/shop-jobs\n      deployTo: {tiers: [dev, test]}\n      environments:\n        prod-east: {parameters: {}}\n")
            },
            "component `shop-jobs` in project `shop` is not deployed to environment `prod-east`, but has parameters for it",
        ),
        (
            "project mode with components in different environments",
            &|t| {
                t.replace(
                    "  - name: shop\n",
                    "  - name: shop\n    promotion: project\n",
                )
                .replace(
                    "    - path: ../../apps/shop-jobs\n",
                    "    - path: ../../apps/shop-jobs\n      deployTo: {tiers: [prod]}\n",
                )
            },
            "project `shop` promotes as one unit, but `shop-web` and `shop-jobs` are deployed to different environments",
        ),
    ];
    for (what, edit, message) in cases {
        let (t, platform) = platform_variant(edit);
        // The error points at the line the edit added (`deployTo`, or the parameters key).
        let text = read(&t.path().join("platforms/estate/platform.yaml"));
        let needle = if what.starts_with("parameters") {
            "prod-east: {parameters"
        } else {
            "deployTo"
        };
        let line = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
        let (code, err) = render_cli(&platform);
        assert_eq!(code, Some(1), "{what}: {err}");
        assert!(says(&err, message), "{what}: {err}");
        assert!(
            says(&err, &format!("platform.yaml:{line}:")),
            "{what}: line {line}: {err}"
        );
    }
}

#[test]
fn generator_files_take_references_per_environment() {
    let (t, platform) = variant(
        "shop-jobs",
        "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata:\n  name: shop-jobs\nspec:\n  generators:\n  - configMapGenerator:\n      name: settings\n      files: [\"settings.properties=config/${env.tier}.properties\"]\n",
    );
    std::fs::create_dir_all(t.path().join("apps/shop-jobs/config")).unwrap();
    for tier in ["dev", "test", "prod"] {
        std::fs::write(
            t.path()
                .join(format!("apps/shop-jobs/config/{tier}.properties")),
            format!("tier={tier}\n"),
        )
        .unwrap();
    }
    let set = render(&platform, t.path()).unwrap_or_else(|e| panic!("{e}"));
    for (env, tier, _) in ENVS {
        let f = format!("shop/{env}/shop-jobs/shop-jobs.gen.yaml");
        let text = String::from_utf8_lossy(&set.files[&f]).into_owned();
        assert!(text.contains(&format!("tier={tier}")), "{env}: {text}");
    }
}
