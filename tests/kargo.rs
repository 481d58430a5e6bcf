//! Kargo and Argo CD generation (`kiln::kargo`) and offline validation (`kiln::check`):
//! golden trees, cases g01/g02/g04 mapped onto kiln's model, error cases, and validation of
//! every emitted object against ../shared/schemas when it exists.
//!
//! `KILN_BLESS=1 cargo test --test integration kargo::` rewrites the golden files; review the diff.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use kiln::check::{self, Document, SchemaSet};
use kiln::kargo::{self, Layout};
use kiln::resource::Resource;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::Input;

mod support {
    use super::*;

    /// The crate root.
    pub fn root() -> PathBuf {
        crate::support::repo_root()
    }

    /// `../shared/schemas` (or `$KILN_SHARED_DIR/schemas`), when present.
    pub fn shared_schemas() -> Option<PathBuf> {
        let dir = crate::support::shared_dir().join("schemas");
        // CI sets REQUIRE_SHARED=1: then a missing ../shared fails instead of skipping.
        assert!(
            dir.is_dir() || !crate::support::shared_required(),
            "REQUIRE_SHARED=1 but {} does not exist (set KILN_SHARED_DIR)",
            dir.display()
        );
        dir.is_dir().then_some(dir)
    }

    /// The generator's input as render builds it: the validated platform, its BuildPlans
    /// and the options. Tests edit the platform (or the plans' images) to make cases.
    pub struct Input {
        pub platform: kiln::validate::Platform,
        pub plans: Vec<kiln::evaluate::BuildPlan>,
        pub opts: kargo::KargoOptions,
    }

    impl Input {
        pub fn emit(
            &self,
        ) -> Result<Vec<(String, Vec<Resource>)>, kiln::diag::Errors<kargo::KargoError>> {
            kargo::emit_kargo(&self.platform, &self.plans, &self.opts)
        }

        /// The evaluated images of instance `component` of `project`, in every plan.
        pub fn images_mut<'a>(
            &'a mut self,
            project: &'a str,
            component: &'a str,
        ) -> impl Iterator<Item = &'a mut kiln::spec::Image> + 'a {
            self.plans
                .iter_mut()
                .filter(move |b| b.project == project && b.component == component)
                .flat_map(|b| b.images.iter_mut())
        }
    }

    /// Loads, validates and evaluates a platform directory into the generator's input.
    pub fn platform_input(dir: &Path, layout: Layout) -> Input {
        platform_input_in(dir, None, layout)
    }

    /// [`platform_input`] with an explicit repository root (fixtures are their own root).
    pub fn platform_input_in(dir: &Path, root: Option<&Path>, layout: Layout) -> Input {
        let fs = kiln::load::RealFs;
        let opts = kiln::load::LoadOptions {
            root,
            ..Default::default()
        };
        let loaded = kiln::load::load(&fs, dir, &opts)
            .unwrap_or_else(|e| panic!("load {}: {e:?}", dir.display()));
        let platform =
            kiln::validate::validate(loaded).unwrap_or_else(|e| panic!("validate: {e:?}"));
        let plans = kiln::evaluate::evaluate(&platform, &kiln::evaluate::Selection::default())
            .unwrap_or_else(|e| panic!("evaluate: {e:?}"));
        Input {
            platform,
            plans,
            opts: kargo::KargoOptions {
                layout,
                ..Default::default()
            },
        }
    }

    /// The emitted files as YAML text, by relative path.
    pub fn emit_yaml(input: &Input) -> BTreeMap<String, String> {
        let files = input.emit().unwrap_or_else(|e| panic!("emit: {e:?}"));
        files
            .into_iter()
            .map(|(path, resources)| {
                let values: Vec<Value> = resources.into_iter().map(|r| r.value).collect();
                (path, kiln::yaml::to_yaml_stream(&values))
            })
            .collect()
    }

    /// Compares `files` with the golden tree in `dir` (exact bytes; extra or missing files
    /// fail). With `KILN_BLESS` set, rewrites the tree instead.
    pub fn golden(dir: &Path, files: &BTreeMap<String, String>) {
        if std::env::var_os("KILN_BLESS").is_some() {
            let _ = std::fs::remove_dir_all(dir);
            for (path, text) in files {
                let p = dir.join(path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            return;
        }
        let mut expected = BTreeMap::new();
        collect(dir, dir, &mut expected);
        let missing: Vec<&String> = files
            .keys()
            .filter(|k| !expected.contains_key(*k))
            .collect();
        let extra: Vec<&String> = expected
            .keys()
            .filter(|k| !files.contains_key(*k))
            .collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "golden {}: not in golden {missing:?}, not emitted {extra:?} (KILN_BLESS=1 to update)",
            dir.display()
        );
        for (path, text) in files {
            assert_eq!(
                &expected[path],
                text,
                "golden {}/{path} differs (KILN_BLESS=1 to update)",
                dir.display()
            );
        }
    }

    fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                collect(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }

    /// All emitted objects as documents for `kiln::check`, with their YAML text.
    pub fn documents(files: &BTreeMap<String, String>) -> Vec<Document> {
        files
            .iter()
            .flat_map(|(path, text)| check::parse_documents(path, text).unwrap())
            .collect()
    }

    pub fn objects(input: &Input) -> Vec<Resource> {
        input
            .emit()
            .unwrap_or_else(|e| panic!("emit: {e:?}"))
            .into_iter()
            .flat_map(|(_, r)| r)
            .collect()
    }
}

/// (component, environment) pairs of the bank: 11 components in all five environments,
/// `ops/status-page` in four (it skips `stage`), `ops/demo-data` in the three non-prod ones.
const BANK_PAIRS: usize = 11 * 5 + 4 + 3;

fn bank() -> Input {
    support::platform_input(&support::root().join("platforms/bank"), Layout::Service)
}

/// The bank with one promotion per component in every project (backend uses project mode).
fn bank_per_component() -> Input {
    let mut input = bank();
    for p in &mut input.platform.projects {
        p.promotion = kiln::spec::PromotionUnit::Component;
    }
    input
}

fn fixture(case: &str, platform: &str) -> Input {
    let root = support::root().join("tests/fixtures/kargo").join(case);
    support::platform_input_in(
        &root.join("platforms").join(platform),
        Some(&root),
        Layout::Service,
    )
}

/// The `output` of project `name` of `input`, to edit.
fn output_mut<'a>(input: &'a mut Input, name: &str) -> &'a mut kiln::spec::ProjectOutput {
    input
        .platform
        .projects
        .iter_mut()
        .find(|p| p.name == name)
        .and_then(|p| p.output.as_mut())
        .unwrap_or_else(|| panic!("project {name} with an output"))
}

fn kind<'a>(objects: &'a [Resource], kind: &str) -> Vec<&'a Resource> {
    objects.iter().filter(|r| r.kind() == kind).collect()
}

/// The Applications of (component, environment) pairs: all but the bootstrap root.
fn pair_apps(objects: &[Resource]) -> Vec<&Resource> {
    kind(objects, "Application")
        .into_iter()
        .filter(|a| a.value["metadata"]["labels"]["kiln.dev/component"].is_string())
        .collect()
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v}"))
}

/// The step of a Stage's promotion template with alias `alias`.
fn step<'a>(stage: &'a Resource, alias: &str) -> &'a Value {
    stage.value["spec"]["promotionTemplate"]["spec"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["as"] == alias)
        .unwrap_or_else(|| panic!("no step `{alias}` in {}", stage.name()))
}

/// A Stage var's value.
fn var<'a>(stage: &'a Resource, name: &str) -> &'a str {
    stage.value["spec"]["promotionTemplate"]["spec"]["vars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .and_then(|v| v["value"].as_str())
        .unwrap_or_else(|| panic!("no var `{name}` in {}", stage.name()))
}

// ---------------------------------------------------------------------------------------
// platforms/bank
// ---------------------------------------------------------------------------------------

#[test]
fn bank_golden_tree() {
    let files = support::emit_yaml(&bank());
    support::golden(&support::root().join("tests/golden/kargo/bank"), &files);
}

#[test]
fn bank_every_application_is_authorized_for_a_generated_stage_and_every_update_names_one() {
    let objects = support::objects(&bank_per_component());
    let stages: Vec<(String, String)> = kind(&objects, "Stage")
        .iter()
        .map(|s| (s.namespace().unwrap().to_string(), s.name().to_string()))
        .collect();
    let apps: Vec<(String, String)> = pair_apps(&objects)
        .iter()
        .map(|a| (a.namespace().unwrap().to_string(), a.name().to_string()))
        .collect();
    // ops/status-page skips `stage` and ops/demo-data runs in the three non-prod ones.
    assert_eq!(
        stages.len(),
        BANK_PAIRS,
        "one Stage per (component, deployed environment)"
    );
    assert_eq!(apps.len(), stages.len(), "one Application per Stage");
    for a in pair_apps(&objects) {
        let granted = a
            .annotation(kargo::AUTHORIZED_STAGE)
            .expect("authorized-stage");
        let (project, stage) = granted.split_once(':').unwrap();
        assert!(
            stages.contains(&(project.to_string(), stage.to_string())),
            "{} authorizes unknown {granted}",
            a.name()
        );
    }
    for s in kind(&objects, "Stage") {
        let sync = step(s, "sync");
        assert_eq!(sync["uses"], "argocd-update");
        let app = &sync["config"]["apps"][0];
        let key = (
            str_at(app, "/namespace").to_string(),
            str_at(app, "/name").to_string(),
        );
        assert!(apps.contains(&key), "{} updates unknown {key:?}", s.name());
        let authorized = kind(&objects, "Application")
            .into_iter()
            .find(|a| a.name() == key.1)
            .and_then(|a| a.annotation(kargo::AUTHORIZED_STAGE).map(str::to_string));
        assert_eq!(
            authorized,
            Some(format!("{}:{}", s.namespace().unwrap(), s.name()))
        );
        assert_eq!(
            str_at(app, "/sources/0/desiredRevision"),
            "${{ outputs.push.commit }}"
        );
    }
    // The same facts, as `kiln validate` checks them (no schemas needed for references).
    let files = support::emit_yaml(&bank_per_component());
    let report =
        check::validate_documents(&support::documents(&files), &SchemaSet::empty()).unwrap();
    assert!(report.is_clean(), "{:#?}", report.findings);
}

#[test]
fn bank_objects_pass_the_kargo_and_argocd_schemas() {
    let Some(dir) = support::shared_schemas() else {
        eprintln!("skipped: ../shared/schemas not found (set KILN_SHARED_DIR)");
        return;
    };
    let schemas = SchemaSet::load(std::sync::Arc::new(kiln::fs::RealFs), &dir).unwrap();
    for layout in [Layout::Service, Layout::Cluster] {
        let mut input = support::platform_input(&support::root().join("platforms/bank"), layout);
        for enabled in [true, false] {
            input.platform.kargo.enabled = enabled;
            let files = support::emit_yaml(&input);
            let docs = support::documents(&files);
            let report = check::validate_documents(&docs, &schemas).unwrap();
            let messages: Vec<String> = report
                .findings
                .iter()
                .map(|f| format!("{}: {}", f.location(), f.message))
                .collect();
            assert!(
                messages.is_empty(),
                "{layout:?}, kargo {enabled}:\n{}",
                messages.join("\n")
            );
            // Namespaces are the Kubernetes validation's; every other object was checked
            // against its CRD (or kiln's model of the kind).
            assert_eq!(report.objects + report.others, docs.len());
            assert_eq!(report.others, if enabled { 4 } else { 0 });
            assert_eq!(report.meta_only, 0);
        }
    }
}

#[test]
fn bank_write_modes_branch_path_and_cluster_repo() {
    let objects = support::objects(&bank_per_component());
    let app = |name: &str| {
        kind(&objects, "Application")
            .into_iter()
            .find(|a| a.name() == name)
            .unwrap()
            .value
            .clone()
    };
    // web: branch per environment.
    let web = app("web-frontend-prod-east");
    assert_eq!(
        str_at(&web, "/spec/source/repoURL"),
        "https://github.com/example/bank-web-deploy.git"
    );
    assert_eq!(
        str_at(&web, "/spec/source/targetRevision"),
        "stage/prod-east"
    );
    assert_eq!(str_at(&web, "/spec/source/path"), "frontend");
    assert_eq!(
        str_at(&web, "/spec/destination/server"),
        "https://prod-east.k8s.bank.example.com"
    );
    assert_eq!(str_at(&web, "/spec/destination/namespace"), "web-prod-east");
    assert_eq!(str_at(&web, "/spec/project"), "bank");
    // backend: one branch, a path per environment.
    let backend = app("backend-ledgerwriter-test");
    assert_eq!(str_at(&backend, "/spec/source/targetRevision"), "main");
    assert_eq!(
        str_at(&backend, "/spec/source/path"),
        "envs/test/ledgerwriter"
    );
    // security: the cluster repository, grouped by cluster.
    let security = app("security-auth-gateway-prod-west");
    assert_eq!(
        str_at(&security, "/spec/source/repoURL"),
        "https://github.com/example/bank-clusters.git"
    );
    assert_eq!(
        str_at(&security, "/spec/source/path"),
        "clusters/prod-west/security/prod-west/auth-gateway"
    );
    // The promotion writes exactly where the Application reads.
    for s in kind(&objects, "Stage") {
        let a = kind(&objects, "Application")
            .into_iter()
            .find(|a| {
                a.annotation(kargo::AUTHORIZED_STAGE)
                    == Some(&format!("{}:{}", s.namespace().unwrap(), s.name()))
            })
            .unwrap();
        assert_eq!(
            var(s, "writeRepo"),
            str_at(&a.value, "/spec/source/repoURL")
        );
        assert_eq!(
            var(s, "writeBranch"),
            str_at(&a.value, "/spec/source/targetRevision")
        );
        assert_eq!(var(s, "writePath"), str_at(&a.value, "/spec/source/path"));
    }
}

#[test]
fn bank_stages_follow_the_environment_graph() {
    let objects = support::objects(&bank_per_component());
    let stage = |name: &str| {
        kind(&objects, "Stage")
            .into_iter()
            .find(|s| s.name() == name)
            .unwrap()
            .value
            .clone()
    };
    let dev = stage("frontend-dev");
    assert_eq!(
        dev["spec"]["requestedFreight"][0]["sources"],
        serde_json::json!({"direct": true})
    );
    assert_eq!(
        dev["spec"]["requestedFreight"][0]["origin"],
        serde_json::json!({"kind": "Warehouse", "name": "frontend"})
    );
    let west = stage("ledger-db-prod-west");
    assert_eq!(
        west["spec"]["requestedFreight"][0]["sources"],
        serde_json::json!({"stages": ["ledger-db-stage"]})
    );
    // Auto-promotion: dev and test only.
    let config = kind(&objects, "ProjectConfig")
        .into_iter()
        .find(|c| c.name() == "web")
        .unwrap();
    let policies = config.value["spec"]["promotionPolicies"]
        .as_array()
        .unwrap();
    let auto: Vec<&str> = policies
        .iter()
        .filter(|p| p["autoPromotionEnabled"] == true)
        .map(|p| p["stageSelector"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(auto, ["frontend-dev", "frontend-test"]);
}

#[test]
fn bank_steps_follow_the_recipe() {
    let objects = support::objects(&bank_per_component());
    let s = kind(&objects, "Stage")
        .into_iter()
        .find(|s| s.name() == "balancereader-stage")
        .unwrap();
    let uses: Vec<&str> = s.value["spec"]["promotionTemplate"]["spec"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| st["uses"].as_str().unwrap())
        .collect();
    assert_eq!(
        uses,
        [
            "git-clone",
            "git-clone",
            "delete",
            "kustomize-set-image",
            "kustomize-build",
            "git-commit",
            "git-push",
            "argocd-update"
        ]
    );
    assert_eq!(
        str_at(step(s, "clone-source"), "/config/checkout/0/commit"),
        "${{ commitFrom(vars.srcRepo).ID }}"
    );
    assert_eq!(
        step(s, "clone-target")["config"]["checkout"][0]["create"],
        true
    );
    // Only this component's folder is deleted, not the whole checkout.
    assert_eq!(
        str_at(step(s, "clean"), "/config/path"),
        "./out/${{ vars.writePath }}"
    );
    assert_eq!(var(s, "writePath"), "envs/stage/balancereader");
    let image = &step(s, "set-image")["config"]["images"][0];
    assert!(
        str_at(image, "/tag").starts_with("${{ imageFrom(vars."),
        "{image}"
    );
    assert!(image.get("digest").is_none());
    let message = str_at(step(s, "commit"), "/config/message");
    assert!(
        message.contains("balancereader") && message.contains("commitFrom(vars.srcRepo).ID"),
        "{message}"
    );
    assert_eq!(
        str_at(step(s, "push"), "/config/targetBranch"),
        "${{ vars.writeBranch }}"
    );
    assert_eq!(var(s, "srcPath"), "deploy/backend/stage/balancereader");
}

#[test]
fn bank_warehouse_watches_only_its_component_and_never_a_write_path() {
    let objects = support::objects(&bank_per_component());
    let w = kind(&objects, "Warehouse")
        .into_iter()
        .find(|w| w.name() == "userservice")
        .unwrap();
    let subs = w.value["spec"]["subscriptions"].as_array().unwrap();
    let image = &subs[0]["image"];
    assert!(image.get("semverConstraint").is_none());
    assert_eq!(image["imageSelectionStrategy"], "SemVer");
    assert_eq!(image["strictSemvers"], true);
    assert_eq!(image["discoveryLimit"], 20);
    assert_eq!(w.value["spec"]["interval"], "5m0s");
    assert_eq!(w.value["spec"]["freightCreationPolicy"], "Automatic");
    let git = &subs[1]["git"];
    assert_eq!(
        git["repoURL"],
        "https://github.com/example/bank-platform.git"
    );
    let include = str_at(git, "/includePaths/0")
        .strip_prefix("regexp:")
        .unwrap();
    let re = regex::Regex::new(include).unwrap();
    assert!(re.is_match("deploy/backend/dev/userservice/userservice.gen.yaml"));
    assert!(re.is_match("deploy/backend/prod-east/userservice/kustomization.yaml"));
    assert!(!re.is_match("deploy/backend/dev/contacts/contacts.gen.yaml"));
    assert!(!re.is_match("deploy/web/dev/userservice/x.yaml"));
    assert!(!re.is_match("components/userservice/deployment.yaml"));
}

#[test]
fn write_paths_in_the_source_repository_are_excluded_from_the_warehouse() {
    let mut input = bank_per_component();
    // backend writes into the platform repository itself, on the watched branch.
    output_mut(&mut input, "backend").repo_url = "https://github.com/example/bank-platform".into();
    let objects = support::objects(&input);
    let w = kind(&objects, "Warehouse")
        .into_iter()
        .find(|w| w.name() == "contacts" && w.namespace() == Some("backend"))
        .unwrap();
    let excludes: Vec<&str> = w.value["spec"]["subscriptions"][1]["git"]["excludePaths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(excludes.contains(&"envs/dev/contacts/"), "{excludes:?}");
    assert_eq!(excludes.len(), 5);
}

#[test]
fn kargo_disabled_emits_applications_tracking_the_main_branch_only() {
    let mut input = bank();
    input.platform.kargo.enabled = false;
    let files = input.emit().unwrap();
    assert!(
        files
            .iter()
            .all(|(p, _)| p.contains("/argocd/") || p.starts_with("bootstrap/")),
        "no Kargo objects"
    );
    let objects: Vec<Resource> = files
        .into_iter()
        .filter(|(p, _)| !p.starts_with("bootstrap/"))
        .flat_map(|(_, r)| r)
        .collect();
    assert_eq!(objects.len(), BANK_PAIRS);
    for a in &objects {
        assert_eq!(a.kind(), "Application");
        assert!(a.annotation(kargo::AUTHORIZED_STAGE).is_none());
        assert_eq!(
            str_at(&a.value, "/spec/source/repoURL"),
            "https://github.com/example/bank-platform.git"
        );
        assert_eq!(str_at(&a.value, "/spec/source/targetRevision"), "main");
        assert_eq!(a.value["spec"]["syncPolicy"]["automated"]["prune"], true);
    }
    let web = objects
        .iter()
        .find(|a| a.name() == "web-frontend-dev")
        .unwrap();
    assert_eq!(
        str_at(&web.value, "/spec/source/path"),
        "deploy/web/dev/frontend"
    );
}

#[test]
fn cluster_layout_moves_the_watched_and_read_paths() {
    let input = support::platform_input(&support::root().join("platforms/bank"), Layout::Cluster);
    let objects = support::objects(&input);
    let s = kind(&objects, "Stage")
        .into_iter()
        .find(|s| s.name() == "frontend-prod-west")
        .unwrap();
    assert_eq!(
        var(s, "srcPath"),
        "deploy/clusters/prod-west/web/prod-west/frontend"
    );
    let w = kind(&objects, "Warehouse")
        .into_iter()
        .find(|w| w.name() == "frontend")
        .unwrap();
    let include = str_at(&w.value, "/spec/subscriptions/1/git/includePaths/0")
        .strip_prefix("regexp:")
        .unwrap();
    assert!(
        regex::Regex::new(include)
            .unwrap()
            .is_match("deploy/clusters/nonprod/web/dev/frontend/kustomization.yaml")
    );
}

#[test]
fn emission_is_deterministic() {
    assert_eq!(support::emit_yaml(&bank()), support::emit_yaml(&bank()));
}

// ---------------------------------------------------------------------------------------
// Cases from ../shared/cases, mapped onto kiln's spec (data copied into tests/fixtures)
// ---------------------------------------------------------------------------------------

#[test]
fn g01_applications_are_authorized_for_their_stage_and_the_pipeline_is_wired() {
    let objects = support::objects(&fixture("g01", "guestbook"));
    let stages = kind(&objects, "Stage");
    assert_eq!(
        stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
        ["frontend-dev", "frontend-staging", "frontend-prod"]
    );
    assert_eq!(
        stages[0].value["spec"]["requestedFreight"][0]["sources"]["direct"],
        true
    );
    assert_eq!(
        stages[1].value["spec"]["requestedFreight"][0]["sources"]["stages"][0],
        "frontend-dev"
    );
    assert_eq!(
        stages[2].value["spec"]["requestedFreight"][0]["sources"]["stages"][0],
        "frontend-staging"
    );
    for (s, env) in stages.iter().zip(["dev", "staging", "prod"]) {
        // The image keeps its registry port; the tag is explicit.
        assert_eq!(
            var(s, "image_frontend"),
            "registry.local:5000/team/frontend"
        );
        let image = &step(s, "set-image")["config"]["images"][0];
        assert_eq!(image["tag"], "${{ imageFrom(vars.image_frontend).Tag }}");
        // argocd-update names exactly the Application, in Argo CD's namespace.
        let app_name = format!("guestbook-frontend-{env}");
        let target = &step(s, "sync")["config"]["apps"][0];
        assert_eq!(target["name"], app_name.as_str());
        assert_eq!(target["namespace"], "argocd");
        let app = kind(&objects, "Application")
            .into_iter()
            .find(|a| a.name() == app_name)
            .unwrap();
        // The Kargo project (namespace), not the Argo CD AppProject `default`; no globs.
        assert_eq!(
            app.annotation(kargo::AUTHORIZED_STAGE),
            Some(format!("guestbook:frontend-{env}").as_str())
        );
        assert_eq!(str_at(&app.value, "/spec/project"), "default");
        assert_eq!(
            str_at(&app.value, "/spec/source/repoURL"),
            "https://git.example.test/platform/guestbook-deploy.git"
        );
        assert_eq!(str_at(&app.value, "/spec/source/targetRevision"), "main");
        assert_eq!(
            str_at(&app.value, "/spec/source/path"),
            format!("deploy/{env}/frontend")
        );
        assert_eq!(
            str_at(&app.value, "/spec/destination/server"),
            "https://kubernetes.default.svc"
        );
        assert_eq!(
            str_at(&app.value, "/spec/destination/namespace"),
            format!("guestbook-{env}")
        );
    }
    let w = &kind(&objects, "Warehouse")[0].value;
    assert_eq!(
        w["spec"]["subscriptions"][0]["image"]["repoURL"],
        "registry.local:5000/team/frontend"
    );
    assert_eq!(
        w["spec"]["subscriptions"][0]["image"]["constraint"],
        "^1.4.0"
    );
    let project = kind(&objects, "Project")[0];
    assert_eq!(project.name(), "guestbook");
    assert!(project.value.get("spec").is_none());
}

#[test]
fn g02_subscriptions_drop_tag_and_digest_but_keep_port_and_path() {
    let objects = support::objects(&fixture("g02", "shop"));
    let w = kind(&objects, "Warehouse")[0];
    let text = std::fs::read_to_string(
        support::root().join("tests/fixtures/kargo/g02/expected-subscriptions.yaml"),
    )
    .unwrap();
    let expected = kiln::yaml::parse_one("expected-subscriptions.yaml", &text).unwrap();
    let subs = w.value["spec"]["subscriptions"].as_array().unwrap();
    let images: Vec<Value> = subs
        .iter()
        .filter(|s| s.get("image").is_some())
        .map(|s| {
            let i = &s["image"];
            serde_json::json!({"image": {
                "repoURL": i["repoURL"], "imageSelectionStrategy": i["imageSelectionStrategy"], "constraint": i["constraint"],
            }})
        })
        .collect();
    assert_eq!(Value::Array(images), expected);
    // The pinned form goes to kustomize-set-image: a digest for the Digest strategy, else a tag.
    let s = kind(&objects, "Stage")[0];
    let set: Vec<&Value> = step(s, "set-image")["config"]["images"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(set.len(), 5);
    assert!(
        set[1]["digest"].as_str().unwrap().ends_with(".Digest }}") && set[1].get("tag").is_none()
    );
    // Pinned by tag and digest: the digest (issue 38, item 4).
    assert!(
        set[2]["digest"].as_str().unwrap().ends_with(".Digest }}") && set[2].get("tag").is_none()
    );
    assert!(set[3]["tag"].as_str().unwrap().ends_with(".Tag }}") && set[3].get("digest").is_none());
    let repos: Vec<&str> = [
        "image_registry_local_5000_team_api",
        "image_localhost_5000_worker",
        "image_redis",
    ]
    .iter()
    .map(|v| var(s, v))
    .collect();
    assert_eq!(
        repos,
        [
            "registry.local:5000/team/api",
            "localhost:5000/worker",
            "redis"
        ]
    );
}

#[test]
fn g04_namespace_metadata_from_the_spec_reaches_the_project_namespace() {
    let files = fixture("g04", "payments").emit().unwrap();
    let (path, project_file) = &files[0];
    assert_eq!(path, "payments/kargo/project.yaml");
    let ns = &project_file[0];
    assert_eq!((ns.kind(), ns.name()), ("Namespace", "payments"));
    assert_eq!(ns.label(kargo::PROJECT_LABEL), Some("true"));
    assert_eq!(
        ns.label("pod-security.kubernetes.io/enforce"),
        Some("restricted")
    );
    assert_eq!(ns.label("secrets.example.io/store-access"), Some("allowed"));
    assert_eq!(
        ns.annotation("owner.example.io/team"),
        Some("payments-team")
    );
    assert_eq!(project_file[1].kind(), "Project");
}

#[test]
fn g04_project_namespace_is_adopted_with_a_string_label_and_comes_first() {
    let mut input = fixture("g01", "guestbook");
    let p = &mut input.platform.projects[0];
    p.name = "payments".into();
    let meta = p.namespace_metadata.get_or_insert_with(Default::default);
    meta.labels.insert(
        "pod-security.kubernetes.io/enforce".into(),
        "restricted".into(),
    );
    meta.labels
        .insert("secrets.example.io/store-access".into(), "allowed".into());
    meta.annotations
        .insert("owner.example.io/team".into(), "payments-team".into());
    let files = input.emit().unwrap();
    let (path, project_file) = files[0].clone();
    assert_eq!(path, "payments/kargo/project.yaml");
    let ns = &project_file[0];
    assert_eq!((ns.kind(), ns.name()), ("Namespace", "payments"));
    // A string "true", not a boolean.
    assert_eq!(
        ns.value["metadata"]["labels"][kargo::PROJECT_LABEL],
        Value::String("true".into())
    );
    assert_eq!(
        ns.label("pod-security.kubernetes.io/enforce"),
        Some("restricted")
    );
    assert_eq!(ns.label("secrets.example.io/store-access"), Some("allowed"));
    assert_eq!(
        ns.annotation("owner.example.io/team"),
        Some("payments-team")
    );
    let project = &project_file[1];
    assert_eq!(
        (project.kind(), project.name(), project.namespace()),
        ("Project", "payments", None)
    );
    // Sync waves order Namespace < Project < ProjectConfig < Warehouse < Stage.
    let objects: Vec<Resource> = files.into_iter().flat_map(|(_, r)| r).collect();
    let wave = |k: &str| {
        objects
            .iter()
            .find(|r| r.kind() == k)
            .unwrap()
            .annotation(kargo::SYNC_WAVE)
            .unwrap()
            .parse::<i32>()
            .unwrap()
    };
    let waves: Vec<i32> = [
        "Namespace",
        "Project",
        "ProjectConfig",
        "Warehouse",
        "Stage",
    ]
    .iter()
    .map(|k| wave(k))
    .collect();
    assert!(waves.windows(2).all(|w| w[0] < w[1]), "{waves:?}");
    // The YAML keeps the label quoted.
    let yaml = kiln::yaml::to_yaml(&ns.value);
    assert!(yaml.contains("kargo.akuity.io/project: \"true\""), "{yaml}");
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

fn codes(input: &Input) -> Vec<String> {
    use miette::Diagnostic;
    match input.emit() {
        Ok(_) => Vec::new(),
        Err(e) => e
            .errors
            .iter()
            .map(|e| e.code().unwrap().to_string())
            .collect(),
    }
}

#[test]
fn error_duplicate_stage_names() {
    let mut input = fixture("g01", "guestbook");
    // `front` in `end-dev` and `front-end` in `dev` both make `front-end-dev`.
    let mut other = input.platform.projects[0].components[0].clone();
    input.platform.projects[0].components[0].name = "front".into();
    other.name = "front-end".into();
    input.platform.projects[0].components.push(other);
    input.platform.environments[0].name = "end-dev".into();
    input.platform.environments[1].from = vec!["end-dev".into()];
    input.platform.environments.insert(
        1,
        kiln::validate::Environment {
            name: "dev".into(),
            ..input.platform.environments[0].clone()
        },
    );
    let got = codes(&input);
    assert!(
        got.contains(&"kiln::kargo::duplicate_name".to_string()),
        "{got:?}"
    );
}

#[test]
fn error_project_name_not_a_namespace() {
    let mut input = fixture("g01", "guestbook");
    input.platform.projects[0].name = "Guest_Book".into();
    assert_eq!(codes(&input), ["kiln::kargo::invalid_project_name"]);
}

#[test]
fn error_image_constraint_does_not_parse() {
    let mut input = fixture("g01", "guestbook");
    for img in input.images_mut("guestbook", "frontend") {
        img.constraint = Some(">= 1.2.3.4".into());
    }
    assert_eq!(codes(&input), ["kiln::kargo::constraint_invalid"]);
    let err = input.emit().unwrap_err();
    // Points at the constraint in component.yaml.
    let d: &dyn miette::Diagnostic = &err.errors[0];
    assert!(
        d.labels().is_some_and(|mut l| l.next().is_some()),
        "{:?}",
        err.errors[0]
    );
    assert!(
        err.errors[0].to_string().contains("component.yaml:"),
        "{}",
        err.errors[0]
    );
}

#[test]
fn error_kargo_without_source_or_output() {
    let mut input = fixture("g01", "guestbook");
    input.platform.projects[0].output = None;
    assert_eq!(codes(&input), ["kiln::kargo::output_missing"]);
    input.platform.source.repo_url = None;
    assert_eq!(codes(&input), ["kiln::kargo::source_repo_missing"]);
    input.platform.kargo.enabled = false;
    assert_eq!(input.emit().unwrap().len(), 0);
}

#[test]
fn error_two_promotions_write_the_same_folder() {
    let mut input = fixture("g01", "guestbook");
    // One branch, no environment in the path: dev and staging would overwrite each other.
    input.platform.projects[0]
        .output
        .as_mut()
        .unwrap()
        .path_pattern = Some("deploy".into());
    let got = codes(&input);
    assert!(
        got.iter().all(|c| c == "kiln::kargo::write_path_collision") && got.len() == 2,
        "{got:?}"
    );
}

// ---------------------------------------------------------------------------------------
// kiln validate on hand-written objects
// ---------------------------------------------------------------------------------------

#[test]
fn validate_catches_a_removed_from_freight_and_points_at_its_line() {
    let path = support::root().join("tests/fixtures/kargo/check/stage-fromfreight.yaml");
    let report =
        check::validate_paths_with(&kiln::fs::RealFs, &[path], &SchemaSet::empty()).unwrap();
    let removed: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == check::Rule::RemovedField)
        .collect();
    assert_eq!(removed.len(), 1, "{:#?}", report.findings);
    let f = removed[0];
    assert_eq!(f.at.line, 32, "{}", f.location());
    assert_eq!(f.at.column, 13);
    assert!(f.message.contains("`fromFreight`"), "{}", f.message);
    assert!(
        f.help.as_deref().unwrap().contains("commitFrom("),
        "{:?}",
        f.help
    );
    assert_eq!(
        miette::Diagnostic::code(f).unwrap().to_string(),
        "kiln::check::removed_field"
    );
    // At the Stage level too, with the requestedFreight replacement in help.
    let text = "apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: dev\n  namespace: guestbook\nspec:\n  fromFreight:\n  - origin: {kind: Warehouse, name: frontend}\n";
    let docs = check::parse_documents("stage.yaml", text).unwrap();
    let report = check::validate_documents(&docs, &SchemaSet::empty()).unwrap();
    let f = report
        .findings
        .iter()
        .find(|f| f.rule == check::Rule::RemovedField)
        .unwrap();
    assert_eq!(f.at.line, 7);
    assert!(f.help.as_deref().unwrap().contains("requestedFreight"));
}

#[test]
fn validate_with_the_shared_schemas_reports_each_problem_once() {
    let Some(dir) = support::shared_schemas() else {
        eprintln!("skipped: ../shared/schemas not found (set KILN_SHARED_DIR)");
        return;
    };
    let path = support::root().join("tests/fixtures/kargo/check/stage-fromfreight.yaml");
    let report =
        check::validate_paths(std::sync::Arc::new(kiln::fs::RealFs), &[path], &dir).unwrap();
    // The removed field is also unknown to the step schema: one finding, with help.
    let at_line_32: Vec<_> = report.findings.iter().filter(|f| f.at.line == 32).collect();
    assert_eq!(at_line_32.len(), 1, "{:#?}", report.findings);
    assert_eq!(at_line_32[0].rule, check::Rule::RemovedField);
    // The case outputs validate clean.
    let cases = support::root().join("../shared/cases");
    let cases = if cases.is_dir() {
        cases
    } else {
        dir.join("../cases")
    };
    let paths: Vec<PathBuf> = [
        "g01-kargo-authorized-stage",
        "g02-kargo-image-reference-normalization",
        "g04-kargo-project-namespace-adoption",
    ]
    .iter()
    .map(|c| cases.join(c).join("expected.yaml"))
    .collect();
    let report =
        check::validate_paths(std::sync::Arc::new(kiln::fs::RealFs), &paths, &dir).unwrap();
    // The cases are schema-valid, but g01's three Stages push to one `main` and track its head
    // without `updateTargetRevision`: exactly the revision-check failure issue 8 fixes, which
    // the semantic check reports (once per Stage) and nothing else may.
    let (shared, other): (Vec<_>, Vec<_>) = report
        .findings
        .iter()
        .partition(|f| f.rule == check::Rule::SharedBranchRevision);
    assert!(other.is_empty(), "{other:#?}");
    assert_eq!(shared.len(), 3, "{shared:#?}");
    assert!(shared.iter().all(|f| {
        f.at.file
            .ends_with("g01-kargo-authorized-stage/expected.yaml")
    }));
    assert_eq!(report.objects, 10);
}

#[test]
fn emitted_artifact_set_validates_in_memory() {
    let mut set = kiln::artifact::ArtifactSet::new();
    let b = bank();
    kargo::emit_into(&mut set, "deploy/", &b.platform, &b.plans, &b.opts).unwrap();
    // backend: one pipeline file instead of eight; ops: a project file, two pipelines and
    // two Application files.
    assert_eq!(set.len(), 27 - 7 + 5);
    assert!(
        set.paths()
            .all(|p| p.starts_with("deploy/") && p.ends_with(".yaml"))
    );
    let schemas = match support::shared_schemas() {
        Some(dir) => SchemaSet::load(std::sync::Arc::new(kiln::fs::RealFs), &dir).unwrap(),
        None => SchemaSet::empty(),
    };
    let report = check::validate_artifacts(&set, &schemas).unwrap();
    assert!(report.is_clean(), "{:#?}", report.findings);
    // Per project Namespace, Project, ProjectConfig; per component of web and security a
    // Warehouse and 5 Stages; backend one Warehouse and 5 Stages; ops a Warehouse and 4 and
    // 3 Stages; an Application per pair; bootstrap.
    assert_eq!(
        report.objects + report.meta_only + report.others,
        4 * 3 + 3 * 6 + 6 + (1 + 4) + (1 + 3) + BANK_PAIRS + 2
    );
}

#[test]
fn promotions_read_folders_the_render_emits_and_pin_images_its_kustomizations_name() {
    let opts = kiln::pipeline::RenderOptions::new(support::root().join("platforms/bank"));
    let mut set = kiln::pipeline::build(&opts, &|_, _| {})
        .map(|b| b.set)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let rendered_files = set.len();
    // Both promotion units: backend promotes per project in the bank, per component here.
    let mut objects = support::objects(&bank());
    objects.extend(support::objects(&bank_per_component()));
    let resolve = |s: &Resource, text: &str| -> String {
        // `${{ vars.x }}` inside a path, as Kargo would evaluate it.
        let mut out = text.to_string();
        while let Some(i) = out.find("${{ vars.") {
            let end = out[i..].find(" }}").unwrap() + i;
            let name = out[i + 9..end].to_string();
            out.replace_range(i..end + 3, var(s, &name));
        }
        out
    };
    let mut builds = 0;
    for s in kind(&objects, "Stage") {
        let steps = s.value["spec"]["promotionTemplate"]["spec"]["steps"]
            .as_array()
            .unwrap();
        for build in steps.iter().filter(|st| st["uses"] == "kustomize-build") {
            builds += 1;
            // The build reads `./src/<renderedPath>/<dir in the artifact set>`.
            let path = resolve(s, build["config"]["path"].as_str().unwrap());
            let dir = path.strip_prefix("./src/deploy/").unwrap();
            let kz_path = format!("{dir}/kustomization.yaml");
            let kz = set.files.get(&kz_path).unwrap_or_else(|| {
                panic!("{} reads {kz_path}, which render does not emit", s.name())
            });
            let kz = kiln::yaml::parse_one(&kz_path, &String::from_utf8_lossy(kz)).unwrap();
            let names: Vec<&str> = kz["images"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| i["name"].as_str().unwrap())
                .collect();
            // The set-image step on the same folder, if any.
            let set_image = steps.iter().find(|st| {
                st["uses"] == "kustomize-set-image"
                    && resolve(s, st["config"]["path"].as_str().unwrap()) == path
            });
            let pinned: Vec<String> = set_image
                .map(|st| {
                    st["config"]["images"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|i| resolve(s, i["image"].as_str().unwrap()))
                        .collect()
                })
                .unwrap_or_default();
            // kustomize-set-image names each image by its repository; the kustomization must
            // hold an entry of that name for every pinned image, and nothing unpinned.
            assert_eq!(pinned, names, "{} {path}", s.name());
        }
    }
    assert_eq!(builds, 2 * BANK_PAIRS);
    // `build` already holds the Kargo/Argo CD objects (23 files for bank, 5 of them ops'): emitting them
    // again changes nothing, and render output and those objects validate together, as
    // `kiln render --schema-dir` does.
    assert_eq!(
        set.files
            .keys()
            .filter(|p| p.contains("/kargo/") || p.contains("/argocd/"))
            .count(),
        18 + 5
    );
    let b = bank();
    kargo::emit_into(&mut set, "", &b.platform, &b.plans, &b.opts).unwrap();
    assert_eq!(set.len(), rendered_files);
    let schemas = match support::shared_schemas() {
        Some(dir) => SchemaSet::load(std::sync::Arc::new(kiln::fs::RealFs), &dir).unwrap(),
        None => SchemaSet::empty(),
    };
    let report = check::validate_artifacts(&set, &schemas).unwrap();
    assert!(
        report.is_clean(),
        "{:#?}",
        report
            .findings
            .iter()
            .map(|f| format!("{}: {}", f.location(), f.message))
            .collect::<Vec<_>>()
    );
}

#[test]
fn error_application_names_clash_across_projects() {
    let mut input = fixture("g01", "guestbook");
    // `guest-book` + `frontend` and `guest` + `book-frontend` both make `guest-book-frontend-<env>`.
    let mut other = input.platform.projects[0].clone();
    input.platform.projects[0].name = "guest-book".into();
    other.name = "guest".into();
    other.components[0].name = "book-frontend".into();
    other.output.as_mut().unwrap().repo_url = "https://git.example.test/platform/other.git".into();
    input.platform.projects.push(other);
    let got = codes(&input);
    assert_eq!(
        got, ["kiln::kargo::duplicate_name"; 3],
        "one per environment"
    );
}

#[test]
fn without_plans_namespaces_and_images_fall_back_to_the_spec() {
    let dir = support::root().join("platforms/bank");
    let fs = kiln::load::RealFs;
    let loaded = kiln::load::load(&fs, &dir, &kiln::load::LoadOptions::default()).unwrap();
    let platform = kiln::validate::validate(loaded).unwrap();
    // A render of one environment only: Kargo objects still cover every environment.
    let selection = kiln::evaluate::Selection {
        environments: vec!["dev".into()],
        ..Default::default()
    };
    let plans = kiln::evaluate::evaluate(&platform, &selection).unwrap();
    let partial = Input {
        platform: platform.clone(),
        plans,
        opts: Default::default(),
    };
    let none = Input {
        platform,
        plans: Vec::new(),
        opts: Default::default(),
    };
    assert_eq!(support::emit_yaml(&partial), support::emit_yaml(&bank()));
    assert_eq!(support::emit_yaml(&none), support::emit_yaml(&bank()));
}

#[test]
fn fixture_golden_trees() {
    for (case, platform) in [("g01", "guestbook"), ("g02", "shop")] {
        let files = support::emit_yaml(&fixture(case, platform));
        support::golden(
            &support::root().join("tests/golden/kargo").join(case),
            &files,
        );
    }
}

#[test]
fn cli_validate_points_at_the_removed_field_and_exits_1() {
    let schemas = tempfile::tempdir().unwrap();
    let out = crate::support::kiln_bin()
        .arg("validate")
        .arg(support::root().join("tests/fixtures/kargo/check/stage-fromfreight.yaml"))
        .arg("--schema-dir")
        .arg(schemas.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stage-fromfreight.yaml:32:13"), "{stderr}");
    assert!(stderr.contains("kiln::check::removed_field"), "{stderr}");
    assert!(stderr.contains("1 problem in 2 objects"), "{stderr}");
}

// ---------------------------------------------------------------------------------------
// Issue 8, part 1: what breaks in a real Kargo
// ---------------------------------------------------------------------------------------

/// The Stage named `name`.
fn stage_named<'a>(objects: &'a [Resource], name: &str) -> &'a Resource {
    kind(objects, "Stage")
        .into_iter()
        .find(|s| s.name() == name)
        .unwrap_or_else(|| panic!("no Stage {name}"))
}

#[test]
fn shared_write_branches_pin_each_application_to_its_pushed_commit() {
    let objects = support::objects(&bank());
    // backend: every Stage pushes to `main` of one repository; security: to `main` of the
    // cluster repository. Each argocd-update pins its Application to its own commit.
    for s in kind(&objects, "Stage") {
        let source = &step(s, "sync")["config"]["apps"][0]["sources"][0];
        let shared = s.namespace() != Some("web");
        assert_eq!(
            source["updateTargetRevision"].as_bool().unwrap_or(false),
            shared,
            "{}",
            s.name()
        );
        assert_eq!(source["desiredRevision"], "${{ outputs.push.commit }}");
    }
    // web: one component per `stage/<env>` branch, nothing shared: tracking the branch works.
    let web_dev = stage_named(&objects, "frontend-dev");
    assert_eq!(var(web_dev, "writeBranch"), "stage/dev");
    // The root Application, which syncs the Applications from Git, never reverts a pin
    // (the entries themselves: `root_ignores_the_revision_of_pinned_applications_only`).
    let root = kind(&objects, "Application")
        .into_iter()
        .find(|a| a.name() == "bank-root")
        .expect("root Application");
    assert!(
        root.value["spec"]["syncPolicy"]["syncOptions"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("RespectIgnoreDifferences=true"))
    );
}

#[test]
fn digest_pinned_image_with_a_semver_range_selects_by_semver_and_promotes_the_digest() {
    let objects = support::objects(&bank_per_component());
    let warehouse = kind(&objects, "Warehouse")
        .into_iter()
        .find(|w| w.name() == "transactionhistory")
        .unwrap();
    let image = &warehouse.value["spec"]["subscriptions"][0]["image"];
    assert_eq!(image["imageSelectionStrategy"], "SemVer");
    assert_eq!(image["constraint"], "~1.4");
    let set_image = step(stage_named(&objects, "transactionhistory-dev"), "set-image");
    assert_eq!(
        set_image["config"]["images"][0]["digest"],
        "${{ imageFrom(vars.image_transactionhistory).Digest }}"
    );
    assert!(set_image["config"]["images"][0].get("tag").is_none());
}

#[test]
fn digest_strategy_is_kept_for_a_mutable_tag_and_rejected_for_a_range() {
    let mut input = fixture("g01", "guestbook");
    for img in input.images_mut("guestbook", "frontend") {
        img.tag = None;
        img.digest = Some(format!("sha256:{}", "a".repeat(64)));
        img.constraint = Some("latest".into());
        img.strategy = Some(kiln::spec::ImageStrategy::Digest);
    }
    let objects = support::objects(&input);
    let sub = &kind(&objects, "Warehouse")[0].value["spec"]["subscriptions"][0]["image"];
    assert_eq!(sub["imageSelectionStrategy"], "Digest");
    assert_eq!(sub["constraint"], "latest");
    for img in input.images_mut("guestbook", "frontend") {
        img.constraint = Some("~1.4".into());
    }
    assert_eq!(codes(&input), ["kiln::kargo::digest_constraint_not_tag"]);
}

#[test]
fn component_schema_rejects_a_digest_constraint_that_is_not_a_tag() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(support::root().join("schema/component.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let component = |strategy: &str, constraint: &str| {
        serde_json::json!({
            "apiVersion": "kiln/v1alpha1",
            "kind": "Component",
            "metadata": { "name": "c" },
            "spec": { "images": [{
                "name": "c",
                "repository": "ghcr.io/x/c",
                "digest": format!("sha256:{}", "a".repeat(64)),
                "constraint": constraint,
                "strategy": strategy,
            }] },
        })
    };
    assert!(validator.is_valid(&component("Digest", "latest")));
    assert!(!validator.is_valid(&component("Digest", "~1.4")));
    assert!(validator.is_valid(&component("SemVer", "~1.4")));
}

#[test]
fn project_config_selects_stages_with_stage_selector() {
    let objects = support::objects(&bank());
    for config in kind(&objects, "ProjectConfig") {
        for policy in config.value["spec"]["promotionPolicies"]
            .as_array()
            .unwrap()
        {
            // `stage` is deprecated since Kargo v1.7 (api/v1alpha1/project_config_types.go).
            assert!(policy.get("stage").is_none(), "{policy}");
            assert!(policy["stageSelector"]["name"].is_string(), "{policy}");
        }
    }
}

#[test]
fn bootstrap_emits_the_app_project_and_one_root_application() {
    let opts = kiln::pipeline::RenderOptions::new(support::root().join("platforms/bank"));
    let set = kiln::pipeline::build(&opts, &|_, _| {})
        .map(|b| b.set)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let project = kiln::yaml::parse_one(
        "appproject.yaml",
        &String::from_utf8_lossy(&set.files["bootstrap/appproject.yaml"]),
    )
    .unwrap();
    assert_eq!(project["kind"], "AppProject");
    assert_eq!(project["metadata"]["name"], "bank");
    assert_eq!(
        project["spec"]["sourceRepos"],
        serde_json::json!([
            "https://github.com/example/bank-backend-deploy.git",
            "https://github.com/example/bank-clusters.git",
            "https://github.com/example/bank-ops-deploy.git",
            "https://github.com/example/bank-web-deploy.git",
        ])
    );
    let destinations = project["spec"]["destinations"].as_array().unwrap();
    // Every Application's destination is allowed, and nothing else.
    let objects: Vec<Value> = set
        .files
        .iter()
        .filter(|(p, _)| p.contains("/argocd/"))
        .flat_map(|(p, b)| kiln::yaml::parse_stream(p, &String::from_utf8_lossy(b)).unwrap())
        .collect();
    let mut wanted: Vec<Value> = objects
        .iter()
        .map(|a| a["spec"]["destination"].clone())
        .collect();
    wanted.sort_by_key(|d| d.to_string());
    wanted.dedup();
    let mut got = destinations.clone();
    got.sort_by_key(|d| d.to_string());
    assert_eq!(got, wanted);
    assert!(destinations.contains(&serde_json::json!({
        "server": "https://prod-east.k8s.bank.example.com", "namespace": "backend-prod-east"
    })));
    // Cluster-scoped kinds of the render (secrets-sync's ClusterRole) and Namespace (for
    // CreateNamespace=true) are allowed.
    let kinds = project["spec"]["clusterResourceWhitelist"]
        .as_array()
        .unwrap();
    for k in ["Namespace", "ClusterRole", "ClusterRoleBinding"] {
        assert!(kinds.iter().any(|e| e["kind"] == k), "{k}: {kinds:?}");
    }
    let root = kiln::yaml::parse_one(
        "root.yaml",
        &String::from_utf8_lossy(&set.files["bootstrap/root.yaml"]),
    )
    .unwrap();
    assert_eq!(root["spec"]["project"], "default");
    assert_eq!(
        root["spec"]["source"]["repoURL"],
        "https://github.com/example/bank-platform.git"
    );
    assert_eq!(root["spec"]["source"]["path"], "deploy");
    assert_eq!(root["spec"]["source"]["directory"]["recurse"], true);
    // Each Application names the generated AppProject.
    for a in &objects {
        assert_eq!(a["spec"]["project"], "bank");
    }
    // A render of one project leaves the bootstrap objects alone.
    let mut one = kiln::pipeline::RenderOptions::new(support::root().join("platforms/bank"));
    one.selection.projects = vec!["web".into()];
    let set = kiln::pipeline::build(&one, &|_, _| {})
        .map(|b| b.set)
        .unwrap();
    assert!(!set.files.keys().any(|p| p.starts_with("bootstrap/")));
}

#[test]
fn every_application_syncs_automatically_with_prune() {
    let objects = support::objects(&bank());
    for a in kind(&objects, "Application") {
        assert_eq!(
            a.value["spec"]["syncPolicy"]["automated"],
            serde_json::json!({ "prune": true, "selfHeal": true }),
            "{}",
            a.name()
        );
    }
}

#[test]
fn render_warns_about_kargo_expressions_in_manifests_and_bank_has_none() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = crate::support::kiln_bin()
        .arg("render")
        .arg(support::root().join("tests/fixtures/kargo/expr/platforms/p"))
        .arg("--write-to")
        .arg(out_dir.path().join("deploy"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "warning: shop/dev/c/c.gen.yaml: ConfigMap/c-config /metadata/annotations/example.test~1note"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("warning:").count(), 1, "{stderr}");
    // The bank example injects no Kargo expression into its manifests.
    let opts = kiln::pipeline::RenderOptions::new(support::root().join("platforms/bank"));
    let set = kiln::pipeline::build(&opts, &|_, _| {})
        .map(|b| b.set)
        .unwrap();
    assert_eq!(kargo::expressions::scan(&set), vec![]);
}

// ---------------------------------------------------------------------------------------
// Issue 8, part 2: promote a whole project at once
// ---------------------------------------------------------------------------------------

/// Checks the project-mode pipeline of `project` in `objects`: one Warehouse, one Stage per
/// environment moving every component in one commit, push and argocd-update.
fn assert_project_pipeline(objects: &[Resource], project: &str, components: &[&str]) {
    let in_project = |k: &str| -> Vec<&Resource> {
        kind(objects, k)
            .into_iter()
            .filter(|r| r.namespace() == Some(project))
            .collect()
    };
    let warehouses = in_project("Warehouse");
    assert_eq!(warehouses.len(), 1, "{project}");
    assert_eq!(warehouses[0].name(), project);
    let subs = warehouses[0].value["spec"]["subscriptions"]
        .as_array()
        .unwrap();
    let git = subs.iter().find(|s| s.get("git").is_some()).unwrap();
    assert_eq!(
        git["git"]["includePaths"].as_array().unwrap().len(),
        components.len()
    );
    let stages = in_project("Stage");
    let envs = ["dev", "test", "stage", "prod-east", "prod-west"];
    assert_eq!(
        stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
        envs.iter()
            .map(|e| format!("{project}-{e}"))
            .collect::<Vec<_>>()
    );
    let apps = pair_apps(objects);
    for s in &stages {
        let steps = s.value["spec"]["promotionTemplate"]["spec"]["steps"]
            .as_array()
            .unwrap();
        let count = |uses: &str| steps.iter().filter(|st| st["uses"] == uses).count();
        assert_eq!(count("git-clone"), 2, "{}", s.name());
        assert_eq!(count("git-commit"), 1);
        assert_eq!(count("git-push"), 1);
        assert_eq!(count("argocd-update"), 1);
        assert_eq!(count("kustomize-build"), components.len());
        assert_eq!(count("delete"), components.len());
        let env = s.name().strip_prefix(&format!("{project}-")).unwrap();
        let updated: Vec<&str> = step(s, "sync")["config"]["apps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        let expected: Vec<String> = components
            .iter()
            .map(|c| format!("{project}-{c}-{env}"))
            .collect();
        assert_eq!(updated, expected, "{}", s.name());
        for c in components {
            let app = apps
                .iter()
                .find(|a| a.name() == format!("{project}-{c}-{env}"))
                .unwrap();
            // The Application authorizes the project Stage and reads what its build writes.
            assert_eq!(
                app.annotation(kargo::AUTHORIZED_STAGE),
                Some(format!("{project}:{}", s.name()).as_str())
            );
            let build = step(s, &format!("build-{c}"));
            assert_eq!(
                build["config"]["outPath"].as_str().unwrap(),
                format!(
                    "./out/{}/manifests.yaml",
                    str_at(&app.value, "/spec/source/path")
                )
            );
        }
        // Freight flows from the project's upstream Stages.
        let sources = &s.value["spec"]["requestedFreight"][0]["sources"];
        match env {
            "dev" => assert_eq!(sources, &serde_json::json!({"direct": true})),
            "test" => assert_eq!(
                sources,
                &serde_json::json!({"stages": [format!("{project}-dev")]})
            ),
            _ => {}
        }
    }
    let config = in_project("ProjectConfig");
    assert_eq!(
        config[0].value["spec"]["promotionPolicies"]
            .as_array()
            .unwrap()
            .len(),
        envs.len()
    );
}

#[test]
fn bank_backend_promotes_the_whole_project_at_once() {
    let objects = support::objects(&bank());
    assert_project_pipeline(
        &objects,
        "backend",
        &[
            "userservice",
            "contacts",
            "balancereader",
            "ledgerwriter",
            "transactionhistory",
            "accounts-db",
            "ledger-db",
            "notifications",
        ],
    );
    // Every backend image is subscribed to, once.
    let w = kind(&objects, "Warehouse")
        .into_iter()
        .find(|w| w.name() == "backend")
        .unwrap();
    let images = w.value["spec"]["subscriptions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("image").is_some())
        .count();
    assert!(images >= 5, "{images}");
    // The other projects keep one promotion per component.
    assert!(
        kind(&objects, "Warehouse")
            .iter()
            .any(|w| w.name() == "frontend")
    );
}

#[test]
fn project_mode_works_in_every_write_mode() {
    let mut input = bank();
    for p in &mut input.platform.projects {
        p.promotion = kiln::spec::PromotionUnit::Project;
    }
    let objects = support::objects(&input);
    // web: branch per environment; backend: path per environment; security: cluster repo.
    assert_project_pipeline(&objects, "web", &["frontend"]);
    assert_project_pipeline(&objects, "security", &["auth-gateway", "secrets-sync"]);
    let sec_dev = stage_named(&objects, "security-dev");
    assert_eq!(
        step(sec_dev, "build-auth-gateway")["config"]["outPath"],
        "./out/clusters/nonprod/security/dev/auth-gateway/manifests.yaml"
    );
    // One Stage per branch in web: no pin; security's Stages share `main`: pinned.
    let pinned = |s: &Resource| {
        step(s, "sync")["config"]["apps"][0]["sources"][0]["updateTargetRevision"] == true
    };
    assert!(!pinned(stage_named(&objects, "web-dev")));
    assert!(pinned(sec_dev));
    // The whole pipeline is consistent for `kiln validate` too.
    let files = support::emit_yaml(&input);
    let report =
        check::validate_documents(&support::documents(&files), &SchemaSet::empty()).unwrap();
    assert!(report.is_clean(), "{:#?}", report.findings);
}

// ---------------------------------------------------------------------------------------
// Issue 8, part 4: `kiln validate` checks meaning
// ---------------------------------------------------------------------------------------

fn findings_by_rule(report: &check::Report) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &report.findings {
        out.entry(f.rule.code().to_string())
            .or_default()
            .push(format!("{}#{}", f.at.file, f.at.pointer));
    }
    out
}

#[test]
fn validate_reports_the_pre_issue_defects_of_the_bank_pipeline() {
    let dir = support::root().join("tests/fixtures/kargo/pre-issue-bank");
    let report =
        check::validate_paths_with(&kiln::fs::RealFs, &[dir], &SchemaSet::empty()).unwrap();
    let by_rule = findings_by_rule(&report);
    // backend (path per environment, 7 components × 5) and security (cluster repo, 2 × 5)
    // push to a shared `main`; web's branches are its own.
    let shared = &by_rule["kiln::check::shared_branch_revision"];
    assert_eq!(shared.len(), 45, "{shared:#?}");
    assert!(shared.iter().all(|f| !f.contains("/web/")), "{shared:#?}");
    // transactionhistory's `~1.4` under Digest.
    let digest = &by_rule["kiln::check::digest_constraint_not_tag"];
    assert_eq!(digest.len(), 1);
    assert!(digest[0].contains("transactionhistory.yaml#/spec/subscriptions/0/image/constraint"));
    // `${{` in the frontend ConfigMap and auth-gateway's ConfigMap.
    let expr = &by_rule["kiln::check::expression_in_manifest"];
    assert_eq!(expr.len(), 2, "{expr:#?}");
    assert!(expr.iter().any(|f| f.contains("frontend.gen.yaml")));
    assert!(expr.iter().any(|f| f.contains("auth-gateway.gen.yaml")));
    // ProjectConfig's deprecated `stage`, once per Stage.
    assert_eq!(by_rule["kiln::check::deprecated_field"].len(), 50);
    // Every Application tracked what its Stage wrote: no mismatch, and nothing else.
    assert_eq!(by_rule.len(), 4, "{:#?}", by_rule.keys());
    // Today's output is clean.
    let opts = kiln::pipeline::RenderOptions::new(support::root().join("platforms/bank"));
    let set = kiln::pipeline::build(&opts, &|_, _| {})
        .map(|b| b.set)
        .unwrap();
    let report = check::validate_artifacts(&set, &SchemaSet::empty()).unwrap();
    assert!(report.is_clean(), "{:#?}", findings_by_rule(&report));
}

#[test]
fn validate_reports_an_application_that_does_not_track_what_its_stage_writes() {
    let mut files = support::emit_yaml(&bank());
    let path = "web/argocd/frontend.yaml".to_string();
    files.insert(
        path.clone(),
        files[&path].replace("path: frontend", "path: frontnd"),
    );
    let backend = "backend/argocd/contacts.yaml".to_string();
    files.insert(
        backend.clone(),
        files[&backend].replace("bank-backend-deploy.git", "bank-other.git"),
    );
    let report =
        check::validate_documents(&support::documents(&files), &SchemaSet::empty()).unwrap();
    let by_rule = findings_by_rule(&report);
    let mismatch = &by_rule["kiln::check::application_source_mismatch"];
    // frontend in all 5 environments reads another folder; backend's Stages update the
    // contacts Applications, which read another repository.
    assert_eq!(mismatch.len(), 10, "{mismatch:#?}");
    let messages: Vec<&str> = report.findings.iter().map(|f| f.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("reads folder `frontnd`")),
        "{messages:#?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("reads repository `https://github.com/example/bank-other.git`")),
        "{messages:#?}"
    );
}

#[test]
fn validate_without_schema_dir_checks_kiln_s_built_in_model() {
    let out = crate::support::kiln_bin()
        .arg("validate")
        .arg(support::root().join("tests/fixtures/kargo/check/model-typos.yaml"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The wrong enum value, the misspelt step field (and the missing `checkout`), the
    // misspelt sync-policy field: each at its line.
    for at in [
        "model-typos.yaml:11:",
        "model-typos.yaml:28:",
        "model-typos.yaml:41:",
    ] {
        assert!(stderr.contains(at), "{at}: {stderr}");
    }
    assert!(stderr.contains("kiln::check::schema_violation"), "{stderr}");
    assert!(
        stderr.contains("kiln::check::step_config_invalid"),
        "{stderr}"
    );
    // kiln's own output passes the same model (see the bank tests with SchemaSet::empty()).
    // The Kargo and Argo CD objects are this check's: the Kubernetes half of `kiln validate`
    // neither validates them nor calls them unvalidated.
    assert!(!stderr.contains("not validated"), "{stderr}");
}

/// `kiln validate -o json` (issue 9): the same findings as the text diagnostics, as one JSON
/// report on stdout, with code, file, line and column; exit 1 as in text mode.
#[test]
fn validate_json_reports_each_finding_with_its_location() {
    let out = crate::support::kiln_bin()
        .args(["validate", "-o", "json"])
        .arg(support::root().join("tests/fixtures/kargo/check/model-typos.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["clean"], false);
    let findings = report["findings"].as_array().unwrap();
    let lines: Vec<u64> = findings.iter().filter_map(|f| f["line"].as_u64()).collect();
    for line in [11, 28, 41] {
        assert!(lines.contains(&line), "{line}: {report:#}");
    }
    assert!(findings.iter().all(|f| {
        f["code"]
            .as_str()
            .is_some_and(|c| c.starts_with("kiln::check::"))
            && f["file"]
                .as_str()
                .is_some_and(|p| p.ends_with("model-typos.yaml"))
    }));
    assert!(
        findings.iter().any(|f| f["location"]
            .as_str()
            .unwrap()
            .contains("model-typos.yaml:11:")),
        "{report:#}"
    );
    // A clean tree: `clean: true`, no findings, exit 0.
    let out = crate::support::kiln_bin()
        .args(["validate", "-o", "json"])
        .arg(support::root().join("tests/fixtures/kargo/g02"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), &report["clean"]),
        (Some(0), &serde_json::Value::Bool(true)),
        "{report:#}"
    );
}

/// docs/pipeline.md's bank diagram is `kiln graph platforms/bank`'s output (with `KILN_BLESS`,
/// rewritten).
#[test]
fn pipeline_doc_diagram_is_kiln_graph_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = crate::support::kiln_bin()
        .args(["graph", "platforms/bank"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let graph = String::from_utf8(out.stdout).unwrap();
    assert!(graph.starts_with("flowchart LR\n"), "{graph}");
    let begin = "<!-- kiln graph platforms/bank: begin -->\n```mermaid\n";
    let end = "```\n<!-- kiln graph platforms/bank: end -->";
    let readme_path = root.join("docs/pipeline.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let start = readme
        .find(begin)
        .expect("docs/pipeline.md lacks the kiln graph begin marker")
        + begin.len();
    let stop = start
        + readme[start..]
            .find(end)
            .expect("docs/pipeline.md lacks the end marker");
    if std::env::var_os("KILN_BLESS").is_some() {
        let blessed = format!("{}{graph}{}", &readme[..start], &readme[stop..]);
        std::fs::write(&readme_path, blessed).unwrap();
        return;
    }
    assert_eq!(
        readme[start..stop],
        graph,
        "docs/pipeline.md's mermaid block differs from `kiln graph platforms/bank` (KILN_BLESS=1 to update)"
    );
}

#[test]
fn emit_into_serializes_each_file_as_it_is_generated_and_keeps_the_set_on_error() {
    let b = bank();
    let files = b.emit().unwrap();
    // The streaming form visits the same files in the same order.
    let mut seen = Vec::new();
    kargo::emit_kargo_each(&b.platform, &b.plans, &b.opts, &mut |path, objects| {
        seen.push((path, objects))
    })
    .unwrap();
    let paths =
        |f: &[(String, Vec<Resource>)]| f.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(paths(&seen), paths(&files));
    let mut set = kiln::artifact::ArtifactSet::new();
    kargo::emit_into(&mut set, "", &b.platform, &b.plans, &b.opts).unwrap();
    assert_eq!(set.len(), files.len());
    for (path, objects) in &files {
        let values: Vec<Value> = objects.iter().map(|r| r.value.clone()).collect();
        assert_eq!(
            set.files[path],
            kiln::yaml::to_yaml_stream(&values).into_bytes(),
            "{path}"
        );
    }

    // The last project has no write repository: the files of the others were generated
    // before the error, and still nothing reaches the set.
    let mut broken = bank();
    broken.platform.projects.last_mut().unwrap().output = None;
    let mut calls = 0;
    let err = kargo::emit_kargo_each(
        &broken.platform,
        &broken.plans,
        &broken.opts,
        &mut |_, _| calls += 1,
    );
    assert!(err.is_err() && calls > 0, "{calls}");
    let mut set = kiln::artifact::ArtifactSet::new();
    set.insert("keep.yaml", "x");
    assert!(kargo::emit_into(&mut set, "", &broken.platform, &broken.plans, &broken.opts).is_err());
    assert_eq!(set.paths().collect::<Vec<_>>(), ["keep.yaml"]);
}

/// Issue 38, item 8: the files are generated in parallel, a piece at a time, and handed over
/// piece by piece in one fixed order: the pieces, whatever their size and the number of
/// threads, put together are the set one thread makes, byte for byte, and the first piece
/// comes before the last project's files are made.
#[test]
fn pieces_are_handed_over_in_order_and_match_one_thread_byte_for_byte() {
    let b = bank();
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let serial = one_thread.install(|| {
        let mut set = kiln::artifact::ArtifactSet::new();
        kargo::emit_into(&mut set, "", &b.platform, &b.plans, &b.opts).unwrap();
        set
    });
    let order: Vec<String> = b.emit().unwrap().into_iter().map(|(p, _)| p).collect();
    let last_project = order.iter().rev().find(|p| !p.starts_with("bootstrap/"));
    let last_project = last_project.and_then(|p| p.split('/').next()).unwrap();
    let four = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    for piece in [1, 3, 7, kargo::KARGO_PIECE] {
        let mut pieces: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
        four.install(|| {
            kargo::emit_pieces(&b.platform, &b.plans, &b.opts, "", piece, &mut |files| {
                pieces.push(files);
                std::ops::ControlFlow::Continue(())
            })
        })
        .unwrap();
        assert!(pieces.iter().all(|p| p.len() <= piece && !p.is_empty()));
        let all: Vec<(String, Vec<u8>)> = pieces.iter().flatten().cloned().collect();
        let paths: Vec<&String> = all.iter().map(|(p, _)| p).collect();
        assert_eq!(
            paths,
            order.iter().collect::<Vec<_>>(),
            "order, piece {piece}"
        );
        let set: BTreeMap<String, Vec<u8>> = all.into_iter().collect();
        assert_eq!(set, serial.files, "bytes, piece {piece}");
        if piece < order.len() {
            let mine = |p: &(String, Vec<u8>)| p.0.starts_with(&format!("{last_project}/"));
            assert!(!pieces[0].iter().any(mine), "piece {piece}");
        }
    }

    // A piece refused (SIGINT in the write) stops the generation there.
    let mut calls = 0;
    kargo::emit_pieces(&b.platform, &b.plans, &b.opts, "", 1, &mut |_| {
        calls += 1;
        std::ops::ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(calls, 1);
}

// ---------------------------------------------------------------------------------------
// Issue 38: the pipeline's edge cases
// ---------------------------------------------------------------------------------------

/// The Application objects of `objects` whose Stage's `argocd-update` pins them
/// (`updateTargetRevision`), by name.
fn pinned_by_stages(objects: &[Resource]) -> std::collections::BTreeSet<String> {
    kind(objects, "Stage")
        .into_iter()
        .flat_map(|s| {
            step(s, "sync")["config"]["apps"]
                .as_array()
                .unwrap()
                .clone()
        })
        .filter(|a| a["sources"][0]["updateTargetRevision"] == true)
        .map(|a| a["name"].as_str().unwrap().to_string())
        .collect()
}

/// Item 1: one `ignoreDifferences` entry per pinned Application, by name and namespace;
/// none for an Application that tracks its branch (web's), so a layout change reaches it.
#[test]
fn root_ignores_the_revision_of_pinned_applications_only() {
    for input in [bank(), bank_per_component()] {
        let objects = support::objects(&input);
        let root = kind(&objects, "Application")
            .into_iter()
            .find(|a| a.name() == "bank-root")
            .unwrap();
        let entries = root.value["spec"]["ignoreDifferences"].as_array().unwrap();
        let named: std::collections::BTreeSet<String> = entries
            .iter()
            .map(|e| {
                assert_eq!(e["group"], "argoproj.io");
                assert_eq!(e["kind"], "Application");
                assert_eq!(e["namespace"], "argocd");
                assert_eq!(
                    e["jsonPointers"],
                    serde_json::json!(["/spec/source/targetRevision"])
                );
                e["name"]
                    .as_str()
                    .expect("every entry names its Application")
                    .to_string()
            })
            .collect();
        assert_eq!(named.len(), entries.len(), "one entry per Application");
        assert_eq!(named, pinned_by_stages(&objects));
        assert!(!named.iter().any(|n| n.starts_with("web-")), "{named:?}");
        assert!(named.contains("backend-contacts-dev"), "{named:?}");
    }
    // Nothing pinned (web alone writes one branch per environment): no entry at all.
    let mut input = bank();
    input.platform.projects.retain(|p| p.name == "web");
    let objects = support::objects(&input);
    let root = kind(&objects, "Application")
        .into_iter()
        .find(|a| a.name() == "bank-root")
        .unwrap();
    assert!(root.value["spec"].get("ignoreDifferences").is_none());
}

/// Item 4: `automated.enabled` (Argo CD v3.1+) is never written, and the root syncs with
/// server-side apply (a project-mode Stage outgrows client-side apply's 256 KiB annotation).
#[test]
fn applications_omit_automated_enabled_and_the_root_applies_server_side() {
    let objects = support::objects(&bank());
    for a in kind(&objects, "Application") {
        assert!(
            a.value["spec"]["syncPolicy"]["automated"]
                .get("enabled")
                .is_none(),
            "{}",
            a.name()
        );
    }
    let root = kind(&objects, "Application")
        .into_iter()
        .find(|a| a.name() == "bank-root")
        .unwrap();
    assert_eq!(
        root.value["spec"]["syncPolicy"]["syncOptions"],
        serde_json::json!(["RespectIgnoreDifferences=true", "ServerSideApply=true"])
    );
}

/// Item 4: an image pinned by tag and digest (g02's `ghcr.io/example-org/web`) keeps its
/// digest pin at every promotion: set-image writes the Freight's digest, not its tag.
#[test]
fn image_pinned_by_tag_and_digest_is_promoted_by_digest() {
    let objects = support::objects(&fixture("g02", "shop"));
    let stage = kind(&objects, "Stage")
        .into_iter()
        .find(|s| s.name() == "shop-dev")
        .unwrap();
    let images = step(stage, "set-image")["config"]["images"]
        .as_array()
        .unwrap()
        .clone();
    let web = images
        .iter()
        .find(|i| i["image"] == "${{ vars.image_ghcr_io_example_org_web }}")
        .unwrap();
    assert!(web.get("tag").is_none(), "{web}");
    assert!(
        web["digest"].as_str().unwrap().ends_with(").Digest }}"),
        "{web}"
    );
    // A tag without a digest still promotes the tag.
    let api = images
        .iter()
        .find(|i| i["image"] == "${{ vars.image_registry_local_5000_team_api }}")
        .unwrap();
    assert!(api["tag"].as_str().unwrap().ends_with(").Tag }}"), "{api}");
}

/// Item 2: a write path inside kiln's own rendered folders of the source repository's
/// watched branch is refused, at the `pathPattern`, with nothing written.
#[test]
fn write_path_inside_the_rendered_tree_is_refused() {
    let mut input = bank_per_component();
    let output = output_mut(&mut input, "web");
    output.repo_url = "https://github.com/example/bank-platform.git".into();
    output.mode = kiln::spec::OutputMode::PathPerEnvironment;
    output.branch_pattern = Some("main".into());
    output.path_pattern = Some("deploy/web/${env.name}".into());
    assert_eq!(
        codes(&input),
        vec!["kiln::kargo::write_path_in_rendered_tree"]
    );
    // Outside `deploy/web/`, or on another branch, it is fine.
    output_mut(&mut input, "web").path_pattern = Some("promoted/${env.name}".into());
    assert!(codes(&input).is_empty(), "{:?}", codes(&input));
    let output = output_mut(&mut input, "web");
    output.path_pattern = Some("deploy/web/${env.name}".into());
    output.branch_pattern = Some("deployed".into());
    assert!(codes(&input).is_empty(), "{:?}", codes(&input));
}

/// Item 2 (newcomer 4, repro 06): another project's rendered folders are kiln's too: web
/// writing `deploy/backend/<env>` on the watched branch would rewrite backend's rendered
/// input at each promotion and make Freight for backend's Warehouse (Kargo's MatchesPaths:
/// included by backend's `includePaths`, not in its `excludePaths`). The write path is
/// normalized first: `x/../deploy/web/<env>` is web's own folder, `../x` leaves the
/// repository, and `x/../promoted/<env>` is written (and excluded) as `promoted/<env>`.
#[test]
fn write_path_inside_another_projects_rendered_folder_is_refused() {
    let mut input = bank_per_component();
    let output = output_mut(&mut input, "web");
    output.repo_url = "https://github.com/example/bank-platform.git".into();
    output.mode = kiln::spec::OutputMode::PathPerEnvironment;
    output.branch_pattern = Some("main".into());
    for (pattern, code) in [
        ("deploy/backend/${env.name}", "write_path_in_rendered_tree"),
        (
            "deploy/bootstrap/${env.name}",
            "write_path_in_rendered_tree",
        ),
        ("x/../deploy/web/${env.name}", "write_path_in_rendered_tree"),
        ("../x/${env.name}", "write_path_outside_repository"),
    ] {
        output_mut(&mut input, "web").path_pattern = Some(pattern.into());
        let got = codes(&input);
        assert!(!got.is_empty(), "{pattern}: accepted");
        assert!(
            got.iter().all(|c| *c == format!("kiln::kargo::{code}")),
            "{pattern}: {got:?}"
        );
    }
    output_mut(&mut input, "web").path_pattern = Some("x/../promoted/${env.name}".into());
    assert!(codes(&input).is_empty(), "{:?}", codes(&input));
    let objects = support::objects(&input);
    let excludes: Vec<String> = kind(&objects, "Warehouse")
        .into_iter()
        .flat_map(|w| w.value["spec"]["subscriptions"].as_array().unwrap().clone())
        .filter_map(|s| s["git"]["excludePaths"].as_array().cloned())
        .flatten()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert!(
        excludes.iter().any(|p| p.starts_with("promoted/dev/")),
        "{excludes:?}"
    );
    assert!(!excludes.iter().any(|p| p.contains("..")), "{excludes:?}");
}
