//! `kiln promote` end to end, offline: the bank is rendered and published into a local
//! source repository, every write repository is a local bare repository mapped with
//! `--repo-map`, and new Freight is promoted through every Stage of every project in graph
//! order. Afterwards every Application resolves to rendered manifests with the new images, and
//! every Stage's lasting Argo CD health check still holds.
#![allow(clippy::disallowed_methods)] // tests and dev tools set up trees on disk

use git2::Repository;
use kiln::git::{CommitTime, Identity, Provenance, PublishOptions};
use kiln::promote::freight::{FreightArg, FreightImage, ImageSubscription};
use kiln::promote::repo::{Git, RepoMap, WorkDir};
use kiln::promote::{
    Applications, Context, Objects, Promotion, StageDef, StepStatus, assemble_freight,
    check_health, freight_name, spec_images,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Candidates for the new Freight's tags: each image gets the first one its Warehouse's
/// constraint admits (a Warehouse never discovers a tag outside it, so `kiln promote` refuses
/// one).
const NEW_TAGS: [&str; 4] = ["1.99.0", "1.4.99", "2.99.0", "0.99.0"];

/// A rendered platform published into local repositories.
pub(crate) struct World {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) platform: kiln::validate::Platform,
    pub(crate) map: RepoMap,
    /// `--repo-map` arguments for the CLI.
    pub(crate) map_args: Vec<String>,
    pub(crate) objects: Objects,
    pub(crate) auth: kiln::git::RemoteAuth,
}

pub(crate) fn identity() -> Identity {
    Identity {
        name: "kiln test".into(),
        email: "test@kiln.invalid".into(),
    }
}

fn time() -> CommitTime {
    CommitTime {
        seconds: 1_790_000_000,
        offset_minutes: 0,
    }
}

pub(crate) fn platform_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// Renders `platform`, publishes it under its `renderedPath` into a bare source repository,
/// and makes an empty bare repository for every write repository.
pub(crate) fn world(platform: &Path) -> World {
    world_in(platform, None)
}

/// [`world`] for a platform copied under `root` (its own repository root).
pub(crate) fn world_in(platform: &Path, root: Option<&Path>) -> World {
    let mut opts = kiln::pipeline::RenderOptions::new(platform);
    opts.root = root.map(Path::to_path_buf);
    let kiln::pipeline::Built { platform, set, .. } =
        kiln::pipeline::build(&opts, &|_, _| {}).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut map = RepoMap::default();
    let mut map_args = Vec::new();
    let source_url = platform.source.repo_url.clone().expect("a source repoURL");
    let source = tmp.path().join("source.git");
    Repository::init_bare(&source).unwrap();
    let mut publish = PublishOptions::new(
        source.display().to_string(),
        platform.source.branch.clone(),
        identity(),
        time(),
        Provenance::default(),
    );
    publish.path = Some(platform.source.rendered_path.clone());
    kiln::git::publish(&set, &publish).unwrap();
    map.insert(&source_url, source.display().to_string());
    map_args.push(format!("{source_url}={}", source.display()));
    for (i, p) in platform.projects.iter().enumerate() {
        let Some(out) = &p.output else { continue };
        let dir = tmp.path().join(format!("write-{i}.git"));
        Repository::init_bare(&dir).unwrap();
        // `file://` works as well as a plain path.
        let url = format!("file://{}", dir.display());
        map.insert(&out.repo_url, &url);
        map_args.push(format!("{}={url}", out.repo_url));
    }
    let objects = Objects::from_artifacts(&set).unwrap();
    World {
        tmp,

        platform,
        map,
        map_args,
        objects,
        auth: kiln::git::RemoteAuth::default(),
    }
}

/// A digest that names the image (what a registry would answer for the new tag).
pub(crate) fn new_digest(repo: &str) -> String {
    kiln_base::digest::sha256_tagged(format!("{repo}:new").as_bytes())
}

/// The new tag of an image subscription: the first of [`NEW_TAGS`] it admits.
fn new_tag(sub: &ImageSubscription) -> String {
    let probe = |tag: &str| FreightImage {
        repo_url: sub.repo_url.clone(),
        tag: tag.into(),
        digest: String::new(),
    };
    NEW_TAGS
        .iter()
        .find(|t| sub.refuses(&probe(t)).is_none())
        .unwrap_or_else(|| panic!("no candidate tag within {sub:?}"))
        .to_string()
}

/// `--freight image=<repo>:<new tag>@<digest>` for every image the Stage's Warehouses
/// subscribe to.
pub(crate) fn new_freight(w: &World, stage: &StageDef) -> Vec<FreightArg> {
    let subs = w.objects.subscriptions(&stage.project);
    let mut out = Vec::new();
    for wh in &stage.requested {
        for sub in &subs[wh].images {
            out.push(FreightArg::Image(FreightImage {
                repo_url: sub.repo_url.clone(),
                tag: new_tag(sub),
                digest: new_digest(&sub.repo_url),
            }));
        }
    }
    out
}

impl World {
    /// The new tag of `repo`, from whichever project's Warehouse subscribes to it.
    pub(crate) fn new_tag_of(&self, repo: &str) -> String {
        self.platform
            .projects
            .iter()
            .flat_map(|p| self.objects.subscriptions(&p.name).into_values())
            .flat_map(|s| s.images)
            .find(|s| s.repo_url == repo)
            .map(|s| new_tag(&s))
            .unwrap_or_else(|| panic!("no Warehouse subscribes to {repo}"))
    }

    pub(crate) fn git(&self) -> Git<'_> {
        Git {
            map: &self.map,
            auth: &self.auth,
        }
    }

    pub(crate) fn work(&self, name: &str) -> WorkDir {
        let dir = self.tmp.path().join("work").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        WorkDir::new(&dir).unwrap()
    }

    pub(crate) fn promotion(&self, stage: &StageDef) -> Promotion {
        let scratch = self.tmp.path().join("scratch").join(&stage.name);
        let freight = assemble_freight(
            stage,
            &self.objects,
            &spec_images(&self.platform),
            &new_freight(self, stage),
            &self.git(),
            &scratch,
        )
        .unwrap();
        let name = format!("{}.test.{}", stage.name, &freight_name(&freight)[..7]);
        Promotion::new(stage.clone(), freight, name)
    }

    pub(crate) fn context<'a>(&'a self, work: &'a WorkDir) -> Context<'a> {
        Context {
            git: self.git(),
            work,
            signature: git2::Signature::new(
                &identity().name,
                &identity().email,
                &git2::Time::new(time().seconds, 0),
            )
            .unwrap(),
        }
    }

    /// The Applications Kargo updates (they name an authorized Stage).
    fn managed_apps(apps: &Applications) -> Vec<&Value> {
        apps.values()
            .filter(|a| {
                a.pointer("/metadata/annotations/kargo.akuity.io~1authorized-stage")
                    .is_some()
            })
            .collect()
    }

    /// Files under the Application's source path at what its targetRevision resolves to.
    fn app_files(&self, app: &Value, revision: Option<&str>) -> BTreeMap<String, Vec<u8>> {
        let src = &app["spec"]["source"];
        let url = src["repoURL"].as_str().unwrap();
        let rev = revision.unwrap_or_else(|| src["targetRevision"].as_str().unwrap_or("HEAD"));
        let repo = self.git().open_for_read(url, self.tmp.path()).unwrap();
        let commit = kiln::promote::repo::resolve_revision(&repo, rev)
            .unwrap_or_else(|| panic!("{rev} does not resolve in {url}"));
        kiln::promote::repo::tree_files(&repo, commit, src["path"].as_str().unwrap()).unwrap()
    }

    /// The images of the component an Application deploys.
    pub(crate) fn component_images(&self, app: &Value) -> Vec<String> {
        let component = app["metadata"]["labels"]["kiln.dev/component"]
            .as_str()
            .unwrap();
        let project = app["metadata"]["labels"]["kiln.dev/project"]
            .as_str()
            .unwrap();
        let p = self
            .platform
            .projects
            .iter()
            .find(|p| p.name == project)
            .unwrap();
        let c = p.components.iter().find(|c| c.name == component).unwrap();
        c.component
            .images
            .iter()
            .map(|i| kiln::kargo::repo_url(&i.repository))
            .collect()
    }
}

pub(crate) fn assert_succeeded(p: &Promotion) {
    for r in p.reports() {
        assert!(
            matches!(r.status, StepStatus::Succeeded | StepStatus::Skipped),
            "{}: step {} ({}) {:?}: {}",
            p.name(),
            r.alias,
            r.uses,
            r.status,
            r.message.as_deref().unwrap_or("")
        );
    }
    assert!(p.is_done() && !p.has_failed(), "{}", p.name());
}

/// The whole loop: every Stage of every project, in graph order (dev → test → stage →
/// prod-east/prod-west), with one shared Argo CD state.
#[test]
fn bank_promotes_new_freight_through_every_stage() {
    let w = world(&platform_dir("platforms/bank"));
    let stages = w.objects.stages_in_graph_order().unwrap();
    assert!(stages.len() >= 10, "{} Stages", stages.len());
    // Graph order: a Stage comes after every Stage it takes Freight from.
    for (i, st) in stages.iter().enumerate() {
        for up in &st.upstream {
            assert!(
                stages[..i]
                    .iter()
                    .any(|s| s.project == st.project && &s.name == up),
                "{} before its upstream {up}",
                st.name
            );
        }
    }
    promote_everything(&w, &stages);
}

/// The app teams' layouts of `tests/fixtures/app-repos` (issue 34): their Stages promote new
/// Freight through all five environments, the overlay, values file and folder of each
/// environment in place.
#[test]
fn app_repos_fixture_promotes_through_every_stage() {
    let root = platform_dir("tests/fixtures/app-repos");
    let w = world_in(&root.join("platforms/estate"), Some(&root));
    let stages = w.objects.stages_in_graph_order().unwrap();
    assert_eq!(stages.len(), 3 * 5, "three components in five environments");
    promote_everything(&w, &stages);
}

/// Promotes new Freight through `stages` in order with one Argo CD state, then checks every
/// Stage's health and every Application's manifests.
fn promote_everything(w: &World, stages: &[StageDef]) {
    let mut apps = w.objects.applications();
    let mut health = Vec::new();
    for st in stages {
        let work = w.work(&format!("{}-{}", st.project, st.name));
        let cx = w.context(&work);
        let mut p = w.promotion(st);
        p.run(&cx, &mut apps);
        assert_succeeded(&p);
        assert!(
            p.reports().iter().any(|r| r.uses == "argocd-update"),
            "{} checks its Application",
            st.name
        );
        health.extend(p.health_checks().to_vec());
    }
    // Every Stage stays Healthy: later pushes to a shared branch do not move its Application.
    for (i, h) in health.iter().enumerate() {
        let scratch = w.tmp.path().join("health").join(i.to_string());
        check_health(&w.git(), &apps, h, &scratch).unwrap();
    }
    // Every Application resolves to manifests holding the new image of its component, both at
    // the revision it is pinned to and at its branch head (no other component's files lost).
    let managed = World::managed_apps(&apps);
    assert_eq!(
        managed.len(),
        stages_apps(stages, w),
        "one Application per Stage or more"
    );
    for app in managed {
        let name = app["metadata"]["name"].as_str().unwrap();
        let branch = w
            .objects
            .applications()
            .get(&("argocd".to_string(), name.to_string()))
            .and_then(|a| {
                a["spec"]["source"]["targetRevision"]
                    .as_str()
                    .map(str::to_string)
            })
            .unwrap();
        for rev in [None, Some(branch.as_str())] {
            let files = w.app_files(app, rev);
            let text: String = files
                .values()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
            assert!(!files.is_empty(), "{name} at {rev:?} deploys nothing");
            for repo in w.component_images(app) {
                assert!(
                    text.contains(&format!("{repo}:{}", w.new_tag_of(&repo)))
                        || text.contains(&new_digest(&repo)),
                    "{name} at {rev:?}: {repo} is not at the new version"
                );
            }
        }
    }
}

/// How many Applications the Stages' argocd-update steps name.
fn stages_apps(stages: &[StageDef], _w: &World) -> usize {
    let mut names = std::collections::BTreeSet::new();
    for st in stages {
        for step in st.steps.iter().filter(|s| s.uses == "argocd-update") {
            for a in step.config["apps"].as_array().into_iter().flatten() {
                names.insert(a["name"].as_str().unwrap_or("").to_string());
            }
        }
    }
    names.len()
}

/// Two Stages writing the same (repo, branch), the first and second of their project's dev
/// Stages.
fn shared_branch_pair(w: &World) -> (StageDef, StageDef) {
    let stages = w.objects.stages_in_graph_order().unwrap();
    let mut by_target: BTreeMap<(String, String), Vec<StageDef>> = BTreeMap::new();
    for st in stages {
        let var = |n: &str| {
            st.vars
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        if st.upstream.is_empty() {
            by_target
                .entry((var("writeRepo"), var("writeBranch")))
                .or_default()
                .push(st.clone());
        }
    }
    let pair = by_target
        .into_values()
        .find(|v| v.len() >= 2)
        .expect("two Stages sharing a branch");
    (pair[0].clone(), pair[1].clone())
}

/// One clones, the other promotes completely, then the first pushes (rebasing onto the
/// other's commit): both pass argocd-update and stay Healthy.
#[test]
fn interleaved_promotions_on_a_shared_branch_both_pass() {
    let w = world(&platform_dir("platforms/bank"));
    let (a, b) = shared_branch_pair(&w);
    let mut apps = w.objects.applications();
    let (wa, wb) = (w.work("a"), w.work("b"));
    let (ca, cb) = (w.context(&wa), w.context(&wb));
    let mut pa = w.promotion(&a);
    let mut pb = w.promotion(&b);
    // A clones both repositories.
    let clone_steps = a.steps.iter().take_while(|s| s.uses == "git-clone").count();
    for _ in 0..clone_steps {
        pa.step(&ca, &mut apps);
    }
    // B promotes completely: it pushes first.
    pb.run(&cb, &mut apps);
    assert_succeeded(&pb);
    // A finishes: its push must integrate B's commit.
    pa.run(&ca, &mut apps);
    assert_succeeded(&pa);
    let push = |p: &Promotion| {
        p.reports()
            .iter()
            .find(|r| r.uses == "git-push")
            .unwrap()
            .outputs["commit"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (ka, kb) = (push(&pa), push(&pb));
    assert_ne!(ka, kb);
    let url = a
        .vars
        .iter()
        .find(|(k, _)| k == "writeRepo")
        .unwrap()
        .1
        .clone();
    let repo = w
        .git()
        .open_for_read(&url, &w.tmp.path().join("x"))
        .unwrap();
    let a_commit = repo.find_commit(git2::Oid::from_str(&ka).unwrap()).unwrap();
    assert_eq!(
        a_commit.parent_id(0).unwrap().to_string(),
        kb,
        "A's commit was rebased onto B's"
    );
    for (i, h) in pa
        .health_checks()
        .iter()
        .chain(pb.health_checks())
        .enumerate()
    {
        check_health(&w.git(), &apps, h, &w.tmp.path().join(format!("h{i}"))).unwrap();
    }
}

/// The failure mode the pin prevents: without `updateTargetRevision`, a Stage whose push is
/// followed by another Stage's push on the same branch fails argocd-update (Kargo retries
/// until the step times out), and a Stage promoted earlier turns Unhealthy.
#[test]
fn without_the_pin_a_shared_branch_fails_the_revision_check() {
    let w = world(&platform_dir("platforms/bank"));
    let (mut a, mut b) = shared_branch_pair(&w);
    for st in [&mut a, &mut b] {
        for step in st.steps.iter_mut().filter(|s| s.uses == "argocd-update") {
            for app in step.config["apps"].as_array_mut().unwrap() {
                for src in app["sources"].as_array_mut().unwrap() {
                    src.as_object_mut().unwrap().remove("updateTargetRevision");
                }
            }
        }
    }
    let mut apps = w.objects.applications();
    let (wa, wb) = (w.work("a"), w.work("b"));
    let (ca, cb) = (w.context(&wa), w.context(&wb));
    let mut pa = w.promotion(&a);
    let mut pb = w.promotion(&b);
    let sync = a
        .steps
        .iter()
        .find(|s| s.uses == "argocd-update")
        .unwrap()
        .alias
        .clone();
    pa.run_until(&sync, &ca, &mut apps);
    pb.run(&cb, &mut apps);
    assert_succeeded(&pb);
    pa.step(&ca, &mut apps);
    let last = pa.reports().last().unwrap();
    assert_eq!(last.status, StepStatus::Errored);
    assert!(
        last.message
            .as_deref()
            .unwrap()
            .contains("do not match desired revisions"),
        "{:?}",
        last.message
    );
    // And the other order: both pass their own check, but the first one's health breaks.
    let w = world(&platform_dir("platforms/bank"));
    let mut apps = w.objects.applications();
    let (wa, wb) = (w.work("a"), w.work("b"));
    let (ca, cb) = (w.context(&wa), w.context(&wb));
    let mut pa = w.promotion(&a);
    let mut pb = w.promotion(&b);
    pa.run(&ca, &mut apps);
    assert_succeeded(&pa);
    pb.run(&cb, &mut apps);
    assert_succeeded(&pb);
    let e = check_health(
        &w.git(),
        &apps,
        &pa.health_checks()[0],
        &w.tmp.path().join("h"),
    )
    .unwrap_err();
    assert!(e.contains("Unhealthy"), "{e}");
}

fn kiln() -> Command {
    crate::support::kiln_command(&crate::support::repo_root())
}

/// The command: text and JSON output, exit 0 when promoted, 1 when a step fails (naming the
/// step and why), 2 on bad usage.
#[test]
fn cli_promotes_one_stage_and_reports_failures() {
    let w = world(&platform_dir("platforms/bank"));
    let stage = w.objects.stage("frontend-dev", Some("web")).unwrap();
    let mut args: Vec<String> = vec![
        "promote".into(),
        stage.name.clone(),
        platform_dir("platforms/bank").display().to_string(),
        "--project".into(),
        "web".into(),
        "-o".into(),
        "json".into(),
    ];
    for f in new_freight(&w, &stage) {
        let FreightArg::Image(i) = f else { continue };
        args.push("--freight".into());
        args.push(format!("image={}:{}", i.repo_url, i.tag));
    }
    for m in &w.map_args {
        args.push("--repo-map".into());
        args.push(m.clone());
    }
    let out = kiln().args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["phase"], "Succeeded");
    let steps = report["steps"].as_array().unwrap();
    let push = steps.iter().find(|s| s["uses"] == "git-push").unwrap();
    assert_eq!(push["outputs"]["branch"], "stage/dev");
    assert_eq!(push["outputs"]["commit"].as_str().unwrap().len(), 40);

    // Text output; the second run has nothing new to commit: git-commit is Skipped and keeps
    // `outputs.commit`, the push is a no-op, argocd-update still passes.
    let mut text_args = args.clone();
    text_args.retain(|a| a != "-o" && a != "json");
    let out = kiln().args(&text_args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Skipped    commit (git-commit)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "commit: {}",
            push["outputs"]["commit"].as_str().unwrap()
        )),
        "{stdout}"
    );

    // A write repository that does not exist: the clone step errors, exit 1, step named.
    let mut broken = args.clone();
    for a in broken.iter_mut() {
        if a.starts_with("https://github.com/example/bank-web-deploy.git=") {
            *a = "https://github.com/example/bank-web-deploy.git=/nonexistent/repo".into();
        }
    }
    let out = kiln().args(&broken).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("failed at step `clone-target`"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["phase"], "Failed");

    // Freight the Stage's Warehouses do not subscribe to: an error before any step.
    let out = kiln()
        .args([
            "promote",
            "frontend-dev",
            &platform_dir("platforms/bank").display().to_string(),
        ])
        .args(["--freight", "image=example.com/nope:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kiln::promote::freight"));

    // The source repository cannot be read (unmapped, fetched from a URL that does not
    // serve it, or no network at all): the help is about `--repo-map`, not `--freight`.
    let out = kiln()
        .args([
            "promote",
            "frontend-dev",
            &platform_dir("platforms/bank").display().to_string(),
            "--freight",
            "latest",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("kiln::promote::repository_unavailable")
            && stderr.contains("cannot fetch")
            && stderr.contains("--repo-map URL=PATH")
            && !stderr.contains("pass `--freight"),
        "{stderr}"
    );

    // A tag the Warehouse would never discover (outside its constraint, or not a semantic
    // version) is refused before any repository is opened: every repository is mapped to a
    // path that does not exist, and the error is about the tag.
    let repo = new_freight(&w, &stage)
        .into_iter()
        .find_map(|f| match f {
            FreightArg::Image(i) => Some(i.repo_url),
            _ => None,
        })
        .unwrap();
    for (tag, why) in [
        ("2.0.0", "outside the Warehouse's constraint `^1.4.0`"),
        ("latest", "not a strict semantic version"),
    ] {
        let mut args: Vec<String> = vec![
            "promote".into(),
            stage.name.clone(),
            platform_dir("platforms/bank").display().to_string(),
            "--project".into(),
            "web".into(),
            "--freight".into(),
            format!("image={repo}:{tag}"),
        ];
        for m in &w.map_args {
            let (url, _) = m.split_once('=').unwrap();
            args.push("--repo-map".into());
            args.push(format!("{url}=/nonexistent/repo"));
        }
        let out = kiln().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("kiln::promote::freight"), "{stderr}");
        assert!(stderr.contains(why), "{tag}: {stderr}");
        assert!(!stderr.contains("nonexistent"), "{tag}: {stderr}");
    }

    // Usage errors: a malformed --freight, a missing --freight.
    let out = kiln()
        .args(["promote", "frontend-dev", "--freight", "image=nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = kiln().args(["promote", "frontend-dev"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // An unknown Stage.
    let out = kiln()
        .args([
            "promote",
            "nope",
            &platform_dir("platforms/bank").display().to_string(),
        ])
        .args(["--freight", "latest"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kiln::promote::unknown_stage"));
}

/// Copies the bank (platform and components) into a scratch repository root with its
/// `platform.yaml` edited.
pub(crate) fn bank_variant(edit: impl Fn(&str) -> String) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).unwrap();
            }
        }
    }
    copy(
        &platform_dir("platforms/bank"),
        &tmp.path().join("platforms/bank"),
    );
    copy(&platform_dir("components"), &tmp.path().join("components"));
    let file = tmp.path().join("platforms/bank/platform.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, edit(&text)).unwrap();
    let dir = tmp.path().join("platforms/bank");
    (tmp, dir)
}

/// Both promotion units with all three write modes: the bank with every project promoted as
/// one unit, and with every component promoted on its own.
#[test]
fn both_promotion_modes_work_with_every_write_mode() {
    let all_project = |t: &str| {
        let t = t.replace("    promotion: project\n", "");
        t.replace("  - name: web\n", "  - name: web\n    promotion: project\n")
            .replace(
                "  - name: backend\n",
                "  - name: backend\n    promotion: project\n",
            )
            .replace(
                "  - name: security\n",
                "  - name: security\n    promotion: project\n",
            )
    };
    let all_component =
        |t: &str| t.replace("    promotion: project\n", "    promotion: component\n");
    for (mode, edit) in [
        ("project", &all_project as &dyn Fn(&str) -> String),
        ("component", &all_component),
    ] {
        let (tmp, dir) = bank_variant(edit);
        let w = world_in(&dir, Some(tmp.path()));
        let stages = w.objects.stages_in_graph_order().unwrap();
        let builds = |st: &StageDef| {
            st.steps
                .iter()
                .filter(|s| s.uses == "kustomize-build")
                .count()
        };
        let per_project = stages.iter().filter(|st| builds(st) > 1).count();
        let projects: std::collections::BTreeSet<&str> =
            stages.iter().map(|st| st.project.as_str()).collect();
        match mode {
            // One Stage per (project, environment): 3 projects × 5 environments; `ops`, whose
            // components run in different environments, promotes per component (4 + 3).
            "project" => assert_eq!(stages.len(), (projects.len() - 1) * 5 + 4 + 3, "{mode}"),
            _ => assert_eq!(per_project, 0, "{mode}: one component per Stage"),
        }
        promote_everything(&w, &stages);
    }
}

/// A promotion of `stage` whose images all have `tag`.
pub(crate) fn promotion_with_tag(w: &World, stage: &StageDef, tag: &str) -> Promotion {
    let args: Vec<FreightArg> = new_freight(w, stage)
        .into_iter()
        .map(|f| match f {
            FreightArg::Image(mut i) => {
                i.tag = tag.into();
                i.digest = String::new();
                FreightArg::Image(i)
            }
            other => other,
        })
        .collect();
    let scratch = w.tmp.path().join("scratch").join(tag);
    let freight = assemble_freight(
        stage,
        &w.objects,
        &spec_images(&w.platform),
        &args,
        &w.git(),
        &scratch,
    )
    .unwrap();
    Promotion::new(stage.clone(), freight, format!("{}.{tag}", stage.name))
}

/// Two promotions of one Stage, the second cloning before the first pushes. With different
/// Freight, replaying the second's change onto the first's conflicts: git-push Failed (terminal,
/// as in Kargo) and the later steps are Skipped. With the same Freight the replayed commit
/// becomes empty and is dropped: the push leaves the branch at the first one's commit, and
/// argocd-update still passes.
#[test]
fn concurrent_promotions_of_one_stage_conflict_or_collapse() {
    for same in [false, true] {
        let w = world(&platform_dir("platforms/bank"));
        let stage = w.objects.stage("frontend-dev", Some("web")).unwrap();
        let push = stage
            .steps
            .iter()
            .find(|s| s.uses == "git-push")
            .unwrap()
            .alias
            .clone();
        let mut apps = w.objects.applications();
        let (w0, wa, wc) = (w.work("first"), w.work("a"), w.work("c"));
        let mut first = promotion_with_tag(&w, &stage, "1.5.0");
        first.run(&w.context(&w0), &mut apps);
        assert_succeeded(&first);
        let mut a = promotion_with_tag(&w, &stage, "1.6.0");
        let mut c = promotion_with_tag(&w, &stage, if same { "1.6.0" } else { "1.7.0" });
        let (ca, cc) = (w.context(&wa), w.context(&wc));
        a.run_until(&push, &ca, &mut apps);
        c.run(&cc, &mut apps);
        assert_succeeded(&c);
        a.run(&ca, &mut apps);
        let out = |p: &Promotion| {
            p.reports()
                .iter()
                .find(|r| r.alias == push)
                .unwrap()
                .clone()
        };
        if same {
            assert_succeeded(&a);
            assert_eq!(out(&a).outputs["commit"], out(&c).outputs["commit"]);
        } else {
            let r = out(&a);
            assert_eq!(r.status, StepStatus::Failed, "{:?}", r.message);
            assert!(
                r.message.as_deref().unwrap().contains("merge conflict"),
                "{:?}",
                r.message
            );
            assert_eq!(a.reports().last().unwrap().status, StepStatus::Skipped);
            assert!(a.has_failed());
        }
    }
}

/// A hand-written Stage over the bank's repositories exercising step semantics kiln's own
/// Stages do not reach: default aliases, `if` with `failure()`/`always()`, `create: false`,
/// strict `delete`, directory output of `kustomize-build`, set-image from the Freight alone,
/// `ctx` and `quote` in configs, an unknown step kind.
#[test]
fn hand_written_stage_follows_kargo_step_semantics() {
    let w = world(&platform_dir("platforms/bank"));
    let real = w.objects.stage("frontend-dev", Some("web")).unwrap();
    let var = |n: &str| real.vars.iter().find(|(k, _)| k == n).unwrap().1.clone();
    let stage_object = |steps: Value| {
        serde_json::json!({
            "apiVersion": "kargo.akuity.io/v1alpha1",
            "kind": "Stage",
            "metadata": { "name": "frontend-dev", "namespace": "web" },
            "spec": {
                "requestedFreight": [{ "origin": { "kind": "Warehouse", "name": real.requested[0] }, "sources": { "direct": true } }],
                "promotionTemplate": { "spec": {
                    "vars": [
                        { "name": "srcRepo", "value": var("srcRepo") },
                        { "name": "srcPath", "value": var("srcPath") },
                        { "name": "writeRepo", "value": var("writeRepo") },
                        { "name": "branch", "value": "${{ 'kiln/' + ctx.stage }}" },
                    ],
                    "steps": steps,
                } },
            },
        })
    };
    let run = |steps: Value| {
        let st = StageDef::from_object(&stage_object(steps)).unwrap();
        let mut apps = w.objects.applications();
        let work = w.work(&format!("hand-{}", st.steps.len()));
        let mut p = w.promotion(&st);
        p.run(&w.context(&work), &mut apps);
        (p, work)
    };

    // A missing branch without `create` errors; later steps are skipped unless their `if`
    // says otherwise; the default alias is step-<n>.
    let (p, _) = run(serde_json::json!([
        { "uses": "git-clone", "config": { "repoURL": "${{ vars.writeRepo }}",
            "checkout": [{ "branch": "${{ vars.branch }}", "path": "./out" }] } },
        { "uses": "delete", "as": "skipped", "config": { "path": "./x" } },
        { "uses": "delete", "as": "on-failure", "if": "${{ failure() }}", "config": { "path": "./x" } },
        { "uses": "delete", "as": "not-on-success", "if": "${{ success() }}", "config": { "path": "./x" } },
    ]));
    let r = p.reports();
    assert_eq!(r[0].alias, "step-1");
    assert_eq!(r[0].status, StepStatus::Errored);
    assert!(
        r[0].message.as_deref().unwrap().contains("set create=true"),
        "{:?}",
        r[0].message
    );
    assert_eq!(
        r[1..].iter().map(|s| s.status).collect::<Vec<_>>(),
        [
            StepStatus::Skipped,
            StepStatus::Succeeded,
            StepStatus::Skipped
        ]
    );

    // `create: true` makes an orphan branch with one empty commit; set-image without
    // `images` takes every image of the Freight; kustomize-build into a directory writes one
    // Kargo-named file per resource; strict delete of a missing path errors.
    let (p, work) = run(serde_json::json!([
        { "uses": "git-clone", "as": "src", "config": { "repoURL": "${{ vars.srcRepo }}",
            "checkout": [{ "commit": "${{ commitFrom(vars.srcRepo).ID }}", "path": "./src", "as": "source" }] } },
        { "uses": "git-clone", "as": "out", "config": { "repoURL": "${{ vars.writeRepo }}",
            "checkout": [{ "branch": "${{ vars.branch }}", "create": true, "path": "./out" }] } },
        { "uses": "kustomize-set-image", "as": "images", "config": { "path": "./src/${{ vars.srcPath }}" } },
        { "uses": "kustomize-build", "as": "build", "config": { "path": "./src/${{ vars.srcPath }}", "outPath": "./out/${{ ctx.stage }}" } },
        { "uses": "git-commit", "as": "commit", "config": { "path": "./out", "message": "${{ quote(ctx.project) }}" } },
        { "uses": "delete", "as": "strict", "config": { "path": "./nope", "strict": true } },
        { "uses": "helm-template", "as": "unknown", "if": "${{ always() }}", "config": {} },
    ]));
    let r = p.reports();
    let status: Vec<StepStatus> = r.iter().map(|s| s.status).collect();
    assert_eq!(
        status,
        [
            StepStatus::Succeeded,
            StepStatus::Succeeded,
            StepStatus::Succeeded,
            StepStatus::Succeeded,
            StepStatus::Succeeded,
            StepStatus::Errored,
            StepStatus::Errored
        ],
        "{r:#?}"
    );
    assert!(
        r[0].outputs["commits"]["source"].is_string(),
        "checkout `as` keys the output"
    );
    assert!(
        r[2].outputs["commitMessage"]
            .as_str()
            .unwrap()
            .contains("1.99.0")
    );
    assert!(r[6].message.as_deref().unwrap().contains("not supported"));
    let out = work.join("out/frontend-dev");
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.ends_with("-deployment-frontend.yaml")),
        "{names:?}"
    );
    let repo = Repository::open(work.join("out")).unwrap();
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    // The Stage's message, stamped as kiln's (`Kiln-Promote`, what `kiln history` checks).
    assert_eq!(head.summary().ok().flatten(), Some("web"));
    assert!(kiln::git::trailers::promote_stamp(head.message().unwrap()).is_some());
    let root = head.parent(0).unwrap();
    assert_eq!(root.summary().ok().flatten(), Some("Initial commit"));
    assert!(kiln::git::trailers::promote_stamp(root.message().unwrap()).is_some());
    assert_eq!(
        root.tree().unwrap().len(),
        0,
        "the orphan branch starts empty"
    );
}

/// `kiln history` with the platform's write layout reports Kargo's promotions against the
/// components they changed, on a branch-per-environment write repository (web: `stage/dev`,
/// `frontend/`) and a path-per-environment one (backend: `main`, `envs/dev/<component>/`).
/// Without the layout they were `changed other …` and a `--component` filter found none.
#[test]
fn history_reports_kargo_promotions_against_their_components() {
    let w = world(&platform_dir("platforms/bank"));
    let layout = w.objects.write_layout();
    let mut apps = w.objects.applications();
    for (name, project, component) in [
        ("frontend-dev", "web", "frontend"),
        ("backend-dev", "backend", "contacts"),
    ] {
        let stage = w.objects.stage(name, Some(project)).unwrap();
        let work = w.work(name);
        let mut p = w.promotion(&stage);
        p.run(&w.context(&work), &mut apps);
        assert_succeeded(&p);
        let written = stage.written();
        let branch = written[0].branch.clone();
        let write_repo = stage
            .vars
            .iter()
            .find(|(n, _)| n == "writeRepo")
            .unwrap()
            .1
            .clone();
        let kiln::promote::repo::Location::Local(repo) = w.map.locate(&write_repo) else {
            panic!("{write_repo} is not mapped")
        };
        let repo = repo.display().to_string();
        let filter = kiln::git::HistoryFilter {
            component: Some(component.into()),
            ..Default::default()
        };
        let h = kiln::git::history(&repo, &branch, &filter, &layout, &w.auth).unwrap();
        assert_eq!(h.entries.len(), 1, "{name}: {h}");
        let e = &h.entries[0];
        // kiln promote's runner made it (its `Kiln-Promote` stamp matches its change).
        assert!(e.made_by_kiln);
        assert!(
            e.changes
                .iter()
                .any(|c| c.to_string() == format!("added component {project}/dev/{component}")),
            "{name}: {:?}",
            e.changes
        );
        // What is deployed there now: the promoted image, read from the written manifests.
        let state = kiln::git::deployed_at(&repo, &branch, i64::MAX / 4, &filter, &layout, &w.auth)
            .unwrap();
        let image = state
            .images
            .iter()
            .find(|c| c.component == component && c.environment == "dev")
            .unwrap_or_else(|| panic!("{name}: {state}"));
        let repos = w
            .component_images(&apps[&("argocd".to_string(), format!("{project}-{component}-dev"))]);
        for repo in repos {
            let tag = w.new_tag_of(&repo);
            assert!(
                image
                    .images
                    .iter()
                    .any(|i| i.starts_with(&format!("{repo}:{tag}"))),
                "{name}: {repo}:{tag} not in {:?}",
                image.images
            );
        }
        // Without the layout, the component filter finds nothing.
        let bare = kiln::git::WriteLayout::default();
        let h = kiln::git::history(&repo, &branch, &filter, &bare, &w.auth).unwrap();
        assert!(h.entries.is_empty(), "{name}: {h}");
    }
}

/// Issue 38, item 2: `kiln render` refuses a project writing into kiln's own rendered folders
/// of the source repository's watched branch, naming the file, line and field, and writes
/// nothing.
#[test]
fn render_refuses_a_write_path_inside_the_rendered_tree() {
    let (_tmp, dir) = bank_variant(|t| {
        t.replace(
            "      repoURL: https://github.com/example/bank-ops-deploy.git\n      mode: path-per-environment\n      branchPattern: main\n      pathPattern: \"envs/${env.name}\"",
            "      repoURL: https://github.com/example/bank-platform.git\n      mode: path-per-environment\n      branchPattern: main\n      pathPattern: \"deploy/ops/${env.name}\"",
        )
    });
    let out_dir = tempfile::tempdir().unwrap();
    let out = kiln()
        .arg("render")
        .arg(&dir)
        .arg("--write-to")
        .arg(out_dir.path().join("deploy"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("kiln::kargo::write_path_in_rendered_tree"),
        "{stderr}"
    );
    assert!(stderr.contains("platform.yaml:316:"), "{stderr}");
    assert!(stderr.contains("`deploy/ops/`"), "{stderr}");
    assert!(stderr.contains("help:"), "{stderr}");
    assert!(!out_dir.path().join("deploy").exists());
}

/// `kiln promote STAGE DIR` with the world's `--repo-map`s, new images for the Stage (tag
/// only: `digest` false) and `extra` arguments.
fn cli_promote(
    w: &World,
    dir: &Path,
    stage: &StageDef,
    digest: bool,
    extra: &[&str],
) -> std::process::Output {
    let mut cmd = kiln();
    cmd.args(["promote", &stage.name])
        .arg(dir)
        .args(["--project", &stage.project]);
    for f in new_freight(w, stage) {
        let FreightArg::Image(i) = f else { continue };
        let image = match digest {
            true => format!("image={}:{}@{}", i.repo_url, i.tag, i.digest),
            false => format!("image={}:{}", i.repo_url, i.tag),
        };
        cmd.args(["--freight", &image]);
    }
    for m in &w.map_args {
        cmd.args(["--repo-map", m]);
    }
    cmd.args(extra).env("NO_COLOR", "1").output().unwrap()
}

/// Issue 38, item 1: after a layout change (`branchPattern` `stage/<env>` → `env/<env>`),
/// `kiln promote --live` promotes against the live Applications as the root's next sync leaves
/// them. The root kiln emits now names only pinned Applications, so web's (branch-tracking)
/// Application moves to the new branch and the promotion passes; the root emitted before,
/// one entry for every Application, keeps it on `stage/dev`, and `argocd-update` fails as it
/// did in the cluster.
#[test]
fn live_applications_show_the_old_revision_after_a_layout_change() {
    let (tmp, dir) = bank_variant(|t| t.to_string());
    let w = world_in(&dir, Some(tmp.path()));
    let stage = w.objects.stage("frontend-dev", Some("web")).unwrap();
    let out = cli_promote(&w, &dir, &stage, false, &["--assume-verified"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The live Applications: what the first layout put into the cluster.
    let live_apps: Vec<Value> = w.objects.applications.clone();
    let root_of = |apps: &[Value]| {
        apps.iter()
            .position(|a| a["metadata"]["name"] == "bank-root")
            .unwrap()
    };
    let mut old_root = live_apps.clone();
    let k = root_of(&old_root);
    old_root[k]["spec"]["ignoreDifferences"] = serde_json::json!([{
        "group": "argoproj.io", "kind": "Application",
        "jsonPointers": ["/spec/source/targetRevision"],
    }]);
    let mut no_root = live_apps.clone();
    no_root.remove(root_of(&no_root));
    let file = |name: &str, items: Vec<Value>| {
        let path = tmp.path().join(name);
        let list = serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": items });
        std::fs::write(&path, kiln::yaml::to_yaml_stream(&[list])).unwrap();
        path.display().to_string()
    };
    let (live_new, live_old, live_none) = (
        file("live-new.yaml", live_apps),
        file("live-old.yaml", old_root),
        file("live-none.yaml", no_root),
    );
    // The layout change.
    let platform_yaml = dir.join("platform.yaml");
    let text = std::fs::read_to_string(&platform_yaml).unwrap();
    std::fs::write(
        &platform_yaml,
        text.replace(
            "branchPattern: \"stage/${env.name}\"",
            "branchPattern: \"env/${env.name}\"",
        ),
    )
    .unwrap();
    // From here on the Freight's image carries its digest: the new branch's commit then
    // always differs from the old branch's head. With the first promotion's Freight the two
    // commits are one whenever both promotions fall in one second (same tree, parent and
    // time), and an Application synced at `stage/dev` would rightly count as synced at the
    // desired revision.
    for live in [&live_new, &live_none] {
        let out = cli_promote(
            &w,
            &dir,
            &stage,
            true,
            &["--assume-verified", "--live", live],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{live}: {stderr}");
    }
    let out = cli_promote(
        &w,
        &dir,
        &stage,
        true,
        &["--assume-verified", "--live", &live_old],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("failed at step `sync`"), "{stderr}");
    assert!(stderr.contains("\"stage/dev\""), "{stderr}");
    // Not Applications: a clear error.
    let bad = file(
        "bad.yaml",
        vec![serde_json::json!({"apiVersion": "v1", "kind": "Pod"})],
    );
    let out = cli_promote(&w, &dir, &stage, false, &["--live", &bad]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kiln::promote::live_applications"));
}

/// Issue 38, item 4: with default Freight the commit is the newest one that changes a path
/// the Warehouse selects (Kargo's NewestFromBranch), not the branch head; a Stage fed by
/// upstream Stages warns that Kargo needs the Freight verified there (`--assume-verified`
/// silences it); an image the Stage pins by digest, given by tag only, is refused before any
/// step.
#[test]
fn default_freight_verification_warning_and_digest_images() {
    let w = world(&platform_dir("platforms/bank"));
    let bank = platform_dir("platforms/bank");
    // A later commit on the source branch that touches no rendered folder.
    let source = w.tmp.path().join("source.git");
    let repo = Repository::open_bare(&source).unwrap();
    let published = repo.refname_to_id("refs/heads/main").unwrap();
    let parent = repo.find_commit(published).unwrap();
    let mut tree = repo.treebuilder(Some(&parent.tree().unwrap())).unwrap();
    let blob = repo.blob(b"notes\n").unwrap();
    tree.insert("NOTES.md", blob, 0o100644).unwrap();
    let tree = repo.find_tree(tree.write().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@example.invalid").unwrap();
    let head = repo
        .commit(
            Some("refs/heads/main"),
            &sig,
            &sig,
            "notes",
            &tree,
            &[&parent],
        )
        .unwrap();
    assert_ne!(head, published);

    let dev = w.objects.stage("frontend-dev", Some("web")).unwrap();
    let out = cli_promote(&w, &bank, &dev, false, &["-o", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["freight"][0]["commits"][0]["id"],
        published.to_string(),
        "the publish commit, not the head {head}"
    );

    // Issue 38, item 4: the Freight promoted into frontend-dev passes into frontend-test
    // without a warning; other Freight (the later source commit), never promoted into
    // frontend-dev, warns, naming the upstream Stage; --assume-verified silences it.
    let test = w.objects.stage("frontend-test", Some("web")).unwrap();
    let out = cli_promote(&w, &bank, &test, false, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let other = format!("commit={head}");
    let out = cli_promote(&w, &bank, &test, false, &["--freight", &other]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.replace("\n  | ", " ").contains("warning: Kargo offers Stage frontend-test only Freight verified in upstream Stage frontend-dev"),
        "{stderr}"
    );
    let out = cli_promote(
        &w,
        &bank,
        &test,
        false,
        &["--freight", &other, "--assume-verified"],
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));

    // backend pins transactionhistory by digest: a tag alone is refused, naming the fix.
    let backend = w.objects.stage("backend-dev", Some("backend")).unwrap();
    let out = cli_promote(&w, &bank, &backend, false, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("kiln::promote::freight"), "{stderr}");
    let flat = stderr.replace("\n  | ", " ");
    assert!(flat.contains("transactionhistory by digest"), "{stderr}");
    assert!(flat.contains("asks no registry"), "{stderr}");
    let out = cli_promote(&w, &bank, &backend, true, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 38, item 3: `kiln bootstrap` creates every write branch of every Stage in real bare
/// repositories, each with Kargo's empty initial commit, moves none that exists, and a
/// promotion afterwards builds on that commit instead of creating the branch itself.
#[test]
fn bootstrap_creates_every_write_branch_once() {
    let w = world(&platform_dir("platforms/bank"));
    let bank = platform_dir("platforms/bank");
    let run = || {
        let mut cmd = kiln();
        cmd.arg("bootstrap").arg(&bank);
        for m in &w.map_args {
            cmd.args(["--repo-map", m]);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run();
    let lines: Vec<&str> = first.lines().collect();
    // web: stage/<env> for five environments; backend, ops and security: main.
    assert_eq!(lines.len(), 8, "{first}");
    assert!(lines.iter().all(|l| l.starts_with("created ")), "{first}");
    for env in ["dev", "test", "stage", "prod-east", "prod-west"] {
        assert!(
            first.contains(&format!("bank-web-deploy.git stage/{env} ")),
            "{first}"
        );
    }
    for (i, p) in w.platform.projects.iter().enumerate() {
        let repo = Repository::open_bare(w.tmp.path().join(format!("write-{i}.git"))).unwrap();
        let branches: Vec<String> = repo
            .branches(Some(git2::BranchType::Local))
            .unwrap()
            .map(|b| b.unwrap().0.name().unwrap().unwrap().to_string())
            .collect();
        assert!(!branches.is_empty(), "{}", p.name);
        for b in branches {
            let c = repo
                .find_reference(&format!("refs/heads/{b}"))
                .unwrap()
                .peel_to_commit()
                .unwrap();
            assert_eq!(c.summary().ok().flatten(), Some("Initial commit"));
            assert!(kiln::git::trailers::promote_stamp(c.message().unwrap()).is_some());
            assert_eq!(c.parent_count(), 0);
            assert_eq!(c.tree().unwrap().len(), 0);
        }
    }
    // Again: everything exists, nothing moves.
    let second = run();
    let fields = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split_whitespace().skip(1).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(fields(&second), fields(&first));
    assert!(second.lines().all(|l| l.starts_with("exists ")), "{second}");
    // A promotion now pushes on top of the initial commit.
    let dev = w.objects.stage("frontend-dev", Some("web")).unwrap();
    let out = cli_promote(&w, &bank, &dev, false, &["-o", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let web = w
        .platform
        .projects
        .iter()
        .position(|p| p.name == "web")
        .unwrap();
    let repo = Repository::open_bare(w.tmp.path().join(format!("write-{web}.git"))).unwrap();
    let tip = repo
        .find_reference("refs/heads/stage/dev")
        .unwrap()
        .peel_to_commit()
        .unwrap();
    let initial = first
        .lines()
        .find(|l| l.contains("stage/dev "))
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(
        tip.parent(0)
            .unwrap()
            .id()
            .to_string()
            .starts_with(&initial)
    );
}

/// `--freight` for the Freight of Warehouse `origin` of `stage`: that Warehouse's images at
/// their new tags (with digests), and its name.
fn origin_freight(w: &World, stage: &StageDef, origin: &str) -> Vec<FreightArg> {
    let subs = w.objects.subscriptions(&stage.project);
    let mut out: Vec<FreightArg> = subs[origin]
        .images
        .iter()
        .map(|sub| {
            FreightArg::Image(FreightImage {
                repo_url: sub.repo_url.clone(),
                tag: new_tag(sub),
                digest: new_digest(&sub.repo_url),
            })
        })
        .collect();
    out.push(FreightArg::Warehouse(origin.to_string()));
    out
}

/// The files under `path` on branch `branch` of the bare repository `repo`.
fn branch_files(repo: &Path, branch: &str, path: &str) -> BTreeMap<String, Vec<u8>> {
    let repo = Repository::open_bare(repo).unwrap();
    let head = repo.refname_to_id(&format!("refs/heads/{branch}")).unwrap();
    kiln::promote::repo::tree_files(&repo, head, path).unwrap()
}

/// Issue 38, item 5: `promotion: environment-stage` makes one Stage per environment that
/// requests one Warehouse per component (Kargo's `requestedFreight` with several origins),
/// and `kiln validate`'s model accepts it. Each component's Freight is promoted on its own
/// through dev and test: only its steps run (each reads its Freight by origin,
/// `commitFrom(vars.srcRepo, warehouse("<c>"))`), its folder moves, and every other
/// component's folder stays as its own promotion left it.
#[test]
fn environment_stages_promote_each_components_freight_on_its_own() {
    let (tmp, dir) = bank_variant(|t: &str| {
        t.replace(
            "    promotion: project\n",
            "    promotion: environment-stage\n",
        )
    });
    let w = world_in(&dir, Some(tmp.path()));
    let dev = w.objects.stage("backend-dev", Some("backend")).unwrap();
    let test = w.objects.stage("backend-test", Some("backend")).unwrap();
    let components: Vec<String> = w
        .platform
        .projects
        .iter()
        .find(|p| p.name == "backend")
        .unwrap()
        .components
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert!(components.len() >= 3, "{components:?}");
    // One Warehouse per component, each requested by the dev Stage directly and by the test
    // Stage from the dev Stage.
    assert_eq!(dev.requested, components);
    assert_eq!(test.requested, components);
    for (origin, up) in &dev.upstream_of {
        assert!(up.is_empty(), "{origin}: {up:?}");
    }
    for (_, up) in &test.upstream_of {
        assert_eq!(up, &["backend-dev".to_string()]);
    }
    let subs = w.objects.subscriptions("backend");
    assert_eq!(subs.len(), components.len(), "{:?}", subs.keys());
    // Kargo's and Argo CD's model accepts the objects (requestedFreight with several origins,
    // `warehouse()` origins, `if` conditions).
    let mut opts = kiln::pipeline::RenderOptions::new(&dir);
    opts.root = Some(tmp.path().to_path_buf());
    let kiln::pipeline::Built { set, .. } = kiln::pipeline::build(&opts, &|_, _| {}).unwrap();
    let report = kiln::check::validate_artifacts(&set, &kiln::check::SchemaSet::empty()).unwrap();
    assert!(
        report.findings.is_empty(),
        "{:?}",
        report
            .findings
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
    );

    let write = w.tmp.path().join("write-1.git");
    let folder = |env: &str, c: &str| format!("envs/{env}/{c}");
    let mut apps = w.objects.applications();
    let mut run = |stage: &StageDef, origin: &str| {
        let scratch = w.tmp.path().join("scratch").join(&stage.name).join(origin);
        let freight = assemble_freight(
            stage,
            &w.objects,
            &spec_images(&w.platform),
            &origin_freight(&w, stage, origin),
            &w.git(),
            &scratch,
        )
        .unwrap();
        let name = format!("{}.{origin}", stage.name);
        let mut p = Promotion::new(stage.clone(), freight, name);
        p.run(
            &w.context(&w.work(&format!("{}-{origin}", stage.name))),
            &mut apps,
        );
        assert_succeeded(&p);
        // Only the promoted component's steps ran; the other components' were skipped.
        for r in p.reports() {
            let own = r.alias.ends_with(&format!("-{origin}"));
            let shared = r.uses == "git-push" || r.alias == "clone-target";
            assert_eq!(
                r.status == StepStatus::Succeeded,
                own || shared,
                "{}: {} {:?}",
                stage.name,
                r.alias,
                r.status
            );
        }
    };
    let (first, second) = (&components[0], &components[1]);
    run(&dev, first);
    let dev_first = branch_files(&write, "main", &folder("dev", first));
    assert!(!dev_first.is_empty());
    assert!(branch_files(&write, "main", &folder("dev", second)).is_empty());
    // The second component's Freight moves into dev on its own; the first's folder stays.
    run(&dev, second);
    assert!(!branch_files(&write, "main", &folder("dev", second)).is_empty());
    assert_eq!(
        branch_files(&write, "main", &folder("dev", first)),
        dev_first
    );
    // Into test, only the first: the second stays in dev.
    run(&test, first);
    let test_first = branch_files(&write, "main", &folder("test", first));
    for files in [&dev_first, &test_first] {
        let text: String = files
            .values()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        for sub in &subs[first.as_str()].images {
            assert!(
                text.contains(&format!("{}:{}", sub.repo_url, new_tag(sub)))
                    || text.contains(&new_digest(&sub.repo_url)),
                "{} is not at the new version",
                sub.repo_url
            );
        }
    }
    assert!(branch_files(&write, "main", &folder("test", second)).is_empty());
    // One promotion moves one Warehouse's Freight: without an origin the Stage cannot tell.
    let err = assemble_freight(
        &dev,
        &w.objects,
        &spec_images(&w.platform),
        &[],
        &w.git(),
        &w.tmp.path().join("scratch/none"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("--freight warehouse="), "{err}");
}
