//! `kiln status`, the truthful `kiln history`, `kiln graph -o svg`, the status page in a real
//! browser, and publish's refusal to revert (issue 35). The promotions are real: the bank is
//! published into local repositories and promoted Stage by Stage with `kiln promote`'s
//! runner (the `promote` module's world), then the CLI reads Git back.

use crate::promote::{
    World, assert_succeeded, bank_variant, platform_dir, promotion_with_tag, world, world_in,
};
use crate::support::{git, kiln_command, repo_root, run};
use kiln::promote::StageDef;
use kiln::promote::freight::{FreightReference, generate_freight_id};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// What one Stage's promotion did.
struct Promoted {
    commit: String,
    freight: Vec<FreightReference>,
}

/// Promotes `stages` in order with one Argo CD state; the push commit and Freight of each.
fn promote(w: &World, stages: &[StageDef]) -> BTreeMap<String, Promoted> {
    let mut apps = w.objects.applications();
    let mut out = BTreeMap::new();
    for st in stages {
        let work = w.work(&format!("{}-{}-{}", st.project, st.name, out.len()));
        let mut p = w.promotion(st);
        p.run(&w.context(&work), &mut apps);
        assert_succeeded(&p);
        out.insert(format!("{}/{}", st.project, st.name), promoted(&p));
    }
    out
}

/// The Stages `keep` selects, in graph order.
fn stages_where(w: &World, keep: impl Fn(&StageDef) -> bool) -> Vec<StageDef> {
    w.objects
        .stages_in_graph_order()
        .unwrap()
        .into_iter()
        .filter(|s| keep(s))
        .collect()
}

fn promoted(p: &kiln::promote::Promotion) -> Promoted {
    let report = p.report();
    let commit = report
        .steps
        .iter()
        .find(|s| s.uses == "git-push")
        .and_then(|s| s.outputs["commit"].as_str())
        .unwrap()
        .to_string();
    Promoted {
        commit,
        freight: report.freight,
    }
}

/// `kiln status PLATFORM --repo-map … -o FORMAT ARGS`.
fn status(w: &World, platform: &Path, format: &str, args: &[&str]) -> crate::support::Run {
    let mut cmd = kiln_command(&repo_root());
    cmd.arg("status")
        .arg(platform)
        .args(["-o", format])
        .args(args);
    for m in &w.map_args {
        cmd.args(["--repo-map", m]);
    }
    run(&mut cmd)
}

fn status_json(w: &World, platform: &Path, args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let r = status(w, platform, "json", args);
    let v: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", r.stdout, r.stderr));
    (r.code, v["cells"].as_array().unwrap().clone())
}

fn cell<'a>(cells: &'a [Value], project: &str, component: &str, env: &str) -> &'a Value {
    cells
        .iter()
        .find(|c| c["project"] == project && c["component"] == component && c["environment"] == env)
        .unwrap_or_else(|| panic!("no cell {project}/{component}/{env}"))
}

/// The head of the source repository (what every promotion's Freight commit is).
fn source_head(w: &World) -> String {
    git(&w.tmp.path().join("source.git"), &["rev-parse", "main"])
        .trim()
        .to_string()
}

/// Every key of a JSON value, recursively.
fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

fn assert_camel_case(what: &str, json: &str) {
    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{what}: {e}: {json}"));
    let mut all = BTreeSet::new();
    keys(&v, &mut all);
    let snake: Vec<&String> = all.iter().filter(|k| k.contains('_')).collect();
    assert!(snake.is_empty(), "{what}: snake_case keys {snake:?}");
}

/// Item 1 and the end-to-end test: new Freight promoted through every bank Stage (project
/// and component mode; branch-per-environment, path-per-environment and cluster-repo write
/// modes), then `status` names exactly what each promotion deployed — images, Freight as
/// Kargo names it, source commit, write commit, who — `history` lists each promotion with
/// its images and `--at` agrees; a hand edit shows as drift and a newer upstream as lag.
#[test]
fn status_history_and_at_match_every_promotion() {
    let platform = platform_dir("platforms/bank");
    let w = world(&platform);
    // Nothing promoted yet: every cell is there, none deployed, exit 0.
    let (code, cells) = status_json(&w, &platform, &[]);
    assert_eq!(code, Some(0));
    assert!(!cells.is_empty());
    assert!(
        cells.iter().all(|c| c["state"] == "notDeployed"),
        "{cells:?}"
    );

    let stages = w.objects.stages_in_graph_order().unwrap();
    let done = promote(&w, &stages);
    let (code, cells) = status_json(&w, &platform, &[]);
    assert_eq!(code, Some(0), "{cells:#?}");
    let head = source_head(&w);
    let apps = w.objects.applications();
    for c in &cells {
        let name = format!("{}/{}/{}", c["project"], c["component"], c["environment"]);
        assert_eq!(c["state"], "inSync", "{name}");
        let stage = c["stage"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no Stage"));
        let p = &done[stage];
        assert_eq!(c["writeCommit"], p.commit.as_str(), "{name}");
        assert_eq!(c["sourceCommit"], head.as_str(), "{name}");
        assert_eq!(c["author"]["name"], "kiln test", "{name}");
        let app = &apps[&(
            "argocd".to_string(),
            c["application"].as_str().unwrap().into(),
        )];
        let images = c["images"].as_array().unwrap();
        let repos = w.component_images(app);
        for repo in &repos {
            // Tag and digest, whichever of them the Stage wrote into the manifests.
            let tag = w.new_tag_of(repo);
            assert!(
                images.iter().any(|i| i["repository"] == repo.as_str()
                    && i["tag"] == tag.as_str()
                    && i["digest"] == crate::promote::new_digest(repo).as_str()),
                "{name}: {repo}:{tag} not in {images:?}"
            );
        }
        // The Freight of the component's Warehouse, as Kargo's GenerateFreightID names it.
        let reference = p
            .freight
            .iter()
            .find(|r| r.images.iter().any(|i| repos.contains(&i.repo_url)))
            .unwrap_or_else(|| panic!("{name}: no Freight"));
        assert_eq!(
            c["freight"],
            generate_freight_id(reference).as_str(),
            "{name}"
        );
        assert_eq!(c["history"].as_array().unwrap().len(), 1, "{name}");
    }
    // The text matrix: a header of environments, a row per component, no colour off a
    // terminal.
    let text = status(&w, &platform, "text", &[]);
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert!(text.stdout.starts_with("component"), "{}", text.stdout);
    assert!(text.stdout.contains("web/frontend"), "{}", text.stdout);
    assert!(!text.stdout.contains('\u{1b}'), "{}", text.stdout);
    assert_camel_case("status", &status(&w, &platform, "json", &[]).stdout);

    // History and --at, per write branch: one entry per promotion that wrote there, with the
    // images it deployed; --at reports exactly the cells status reports.
    let mut branches: BTreeMap<(String, String), Vec<&Value>> = BTreeMap::new();
    for c in &cells {
        branches
            .entry((
                c["repoURL"].as_str().unwrap().into(),
                c["branch"].as_str().unwrap().into(),
            ))
            .or_default()
            .push(c);
    }
    for ((url, branch), on_branch) in &branches {
        let kiln::promote::repo::Location::Local(repo) = w.map.locate(url) else {
            panic!("{url} is not mapped")
        };
        let writes: BTreeSet<&str> = on_branch
            .iter()
            .map(|c| c["writeCommit"].as_str().unwrap())
            .collect();
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["history", "--repo"]).arg(&repo).args([
            "--branch",
            branch,
            "--platform",
            platform.to_str().unwrap(),
            "-o",
            "json",
        ]);
        let h = run(&mut cmd);
        assert_eq!(h.code, Some(0), "{}", h.stderr);
        assert_camel_case("history", &h.stdout);
        let h: Value = serde_json::from_str(&h.stdout).unwrap();
        // Every promotion (the `Initial commit` Kargo's `git-clone create` makes is not one).
        let entries: Vec<&Value> = h["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["summary"] != "Initial commit")
            .collect();
        assert_eq!(entries.len(), writes.len(), "{url}@{branch}: {entries:#?}");
        for e in entries {
            assert!(writes.contains(e["commit"].as_str().unwrap()));
            // kiln promote's runner made it: stamped, so kiln's.
            assert_eq!(e["madeByKiln"], true);
            assert!(
                !e["images"].as_array().unwrap().is_empty(),
                "{url}@{branch}: a promotion lists no image: {e:#?}"
            );
        }
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["history", "--repo"]).arg(&repo).args([
            "--branch",
            branch,
            "--platform",
            platform.to_str().unwrap(),
            "--at",
            "2100-01-01",
            "-o",
            "json",
        ]);
        let at = run(&mut cmd);
        assert_eq!(at.code, Some(0), "{}", at.stderr);
        let at: Value = serde_json::from_str(&at.stdout).unwrap();
        let mut reported: Vec<(String, Vec<String>)> = at["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    format!(
                        "{}/{}/{}",
                        i["project"].as_str().unwrap(),
                        i["environment"].as_str().unwrap(),
                        i["component"].as_str().unwrap()
                    ),
                    i["images"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_str().unwrap().to_string())
                        .collect(),
                )
            })
            .collect();
        let mut expected: Vec<(String, Vec<String>)> = on_branch
            .iter()
            .map(|c| {
                (
                    format!(
                        "{}/{}/{}",
                        c["project"].as_str().unwrap(),
                        c["environment"].as_str().unwrap(),
                        c["component"].as_str().unwrap()
                    ),
                    c["images"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|i| i["reference"].as_str().unwrap().to_string())
                        .collect(),
                )
            })
            .collect();
        reported.sort();
        expected.sort();
        assert_eq!(reported, expected, "{url}@{branch}");
    }

    // The pipeline picture, natively: every Stage, and what each runs.
    let mut cmd = kiln_command(&repo_root());
    cmd.arg("graph").arg(&platform).args(["-o", "svg"]);
    for m in &w.map_args {
        cmd.args(["--repo-map", m]);
    }
    let svg = run(&mut cmd);
    assert_eq!(svg.code, Some(0), "{}", svg.stderr);
    assert!(
        svg.stdout.trim_start().starts_with("<svg"),
        "{}",
        svg.stdout
    );
    for st in &stages {
        assert!(
            svg.stdout.contains(&st.name),
            "{} missing from the picture",
            st.name
        );
    }
    let frontend = w.new_tag_of("us-docker.pkg.dev/example-bank/bank/frontend");
    assert!(
        svg.stdout.contains(&format!("runs frontend {frontend}")),
        "{}",
        svg.stdout
    );

    // A newer Freight in dev: test now lags it.
    let dev = w.objects.stage("frontend-dev", Some("web")).unwrap();
    let mut apps = w.objects.applications();
    let work = w.work("lag");
    let mut p = promotion_with_tag(&w, &dev, "1.99.1");
    p.run(&w.context(&work), &mut apps);
    assert_succeeded(&p);
    let (code, cells) = status_json(&w, &platform, &[]);
    assert_eq!(code, Some(1));
    let test = cell(&cells, "web", "frontend", "test");
    assert_eq!(test["state"], "lagging");
    assert_eq!(
        test["lag"]["message"],
        format!("dev runs 1.99.1, test {frontend}").as_str()
    );
    let dev_cell = cell(&cells, "web", "frontend", "dev");
    assert_eq!(
        dev_cell["history"].as_array().unwrap().len(),
        2,
        "both promotions"
    );

    // A hand edit in a promoted folder: drift, naming the commit.
    let web = w
        .map
        .locate("https://github.com/example/bank-web-deploy.git");
    let kiln::promote::repo::Location::Local(web) = web else {
        panic!()
    };
    let clone = w.tmp.path().join("hand");
    git(
        w.tmp.path(),
        &[
            "clone",
            "-q",
            "-b",
            "stage/prod-east",
            web.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let file = clone.join("frontend/manifests.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}# scaled up by hand\n")).unwrap();
    git(&clone, &["commit", "-qam", "hot fix by hand"]);
    git(&clone, &["push", "-q", "origin", "stage/prod-east"]);
    let hand = git(&clone, &["rev-parse", "HEAD"]).trim().to_string();
    let (code, cells) = status_json(&w, &platform, &["-c", "frontend"]);
    assert_eq!(code, Some(1));
    let east = cell(&cells, "web", "frontend", "prod-east");
    assert_eq!(east["state"], "drifted");
    assert!(
        east["drift"].as_str().unwrap().contains(&hand[..12]),
        "{east:#?}"
    );
    assert!(
        east["drift"].as_str().unwrap().contains("Hand Editor"),
        "{east:#?}"
    );
    assert!(
        cells.iter().all(|c| c["component"] == "frontend"),
        "-c filters"
    );
}

/// A clone of the branch `c`'s Application syncs, and the cell's folder in it.
fn clone_of_cell(w: &World, c: &Value, name: &str) -> (PathBuf, PathBuf) {
    let co = checkout(w, c, name);
    let folder = co.file.parent().unwrap().to_path_buf();
    (co.clone, folder)
}

/// A cell's write repository (mapped locally), a clone of its branch in `dir` of the test's
/// directory, and the first manifest of its folder there (name and path).
struct Checkout {
    repo: PathBuf,
    branch: String,
    clone: PathBuf,
    name: String,
    file: PathBuf,
}

fn checkout(w: &World, cell: &Value, dir: &str) -> Checkout {
    let kiln::promote::repo::Location::Local(repo) =
        w.map.locate(cell["repoURL"].as_str().unwrap())
    else {
        panic!("{cell:#?}")
    };
    let branch = cell["branch"].as_str().unwrap().to_string();
    let clone = w.tmp.path().join(dir);
    git(
        w.tmp.path(),
        &[
            "clone",
            "-q",
            "-b",
            &branch,
            repo.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    let folder = clone.join(cell["path"].as_str().unwrap());
    let name = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".yaml"))
        .min()
        .unwrap();
    Checkout {
        repo,
        branch,
        file: folder.join(&name),
        clone,
        name,
    }
}

/// Lag includes running nothing (issue 35, newcomer's item 1): with only frontend-dev
/// promoted, web/frontend in test runs nothing while dev runs something. It lags in every
/// output: `lagging` with its message in JSON, `- <lag` in the matrix, the page's summary and
/// problem list, and exit 1 (kubectl diff's convention). Stage, after a test that runs
/// nothing, does not lag (its upstream runs nothing either). It said `prod nothing`, then
/// exit 0 and "every deployed cell is in sync".
#[test]
fn a_cell_that_runs_nothing_behind_its_upstream_lags_in_every_output() {
    let platform = platform_dir("platforms/bank");
    let w = world(&platform);
    let dev = w.objects.stage("frontend-dev", Some("web")).unwrap();
    promote(&w, &[dev]);
    let args = ["-p", "web", "-c", "frontend"];
    let (code, cells) = status_json(&w, &platform, &args);
    assert_eq!(code, Some(1), "{cells:#?}");
    // What dev runs, as the matrix and the lag message write it.
    let tag = cell(&cells, "web", "frontend", "dev")["images"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["tag"].as_str().unwrap())
        .collect::<Vec<_>>()
        .join(",");
    assert!(!tag.is_empty());
    let test = cell(&cells, "web", "frontend", "test");
    assert_eq!(test["state"], "lagging", "{test:#?}");
    assert_eq!(test["images"], Value::Array(vec![]));
    assert!(test.get("writeCommit").is_none(), "{test:#?}");
    assert_eq!(test["lag"]["upstream"], "dev");
    assert_eq!(
        test["lag"]["message"],
        format!("dev runs {tag}, test nothing").as_str()
    );
    assert_eq!(
        cell(&cells, "web", "frontend", "stage")["state"],
        "notDeployed"
    );

    let text = status(&w, &platform, "text", &args);
    assert_eq!(text.code, Some(1), "{}{}", text.stdout, text.stderr);
    let row = text
        .stdout
        .lines()
        .find(|l| l.starts_with("web/frontend "))
        .unwrap_or_else(|| panic!("{}", text.stdout));
    let marks: Vec<&str> = row
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(marks[1], tag, "dev: {row}");
    assert_eq!(marks[2], "- <lag", "test: {row}");
    assert_eq!(marks[3], "-", "stage: {row}");
    assert!(
        text.stdout.contains(&format!(
            "lagging web/frontend in test: dev runs {tag}, test nothing"
        )),
        "{}",
        text.stdout
    );

    let page = status(&w, &platform, "html", &args);
    assert_eq!(page.code, Some(1), "{}", page.stderr);
    assert!(!page.stdout.contains("every deployed cell is in sync"));
    assert!(page.stdout.contains("data-in-sync=\"false\""));
    let id = kiln::status::html::cell_id("web", "frontend", "test");
    let td = page
        .stdout
        .split_once(&format!("<td id=\"{id}\""))
        .map(|(_, rest)| rest.split_once("</td>").unwrap().0)
        .unwrap_or_else(|| panic!("no {id}"));
    assert!(td.contains("data-state=\"lagging\""), "{td}");
    assert!(td.contains("- &lt;lag"), "{td}");
    assert!(
        page.stdout.contains(&format!(
            "<li>lagging web/frontend in test: dev runs {tag}, test nothing</li>"
        )),
        "{}",
        page.stdout
    );
}

/// History knows kiln's own commits (issue 35, newcomer's item 2): `kiln promote`'s commit
/// (`kiln: promote frontend to dev`) and the `Initial commit` it made creating the branch
/// carry a `Kiln-Promote` stamp that matches what they change, so `kiln history` and `--at`
/// count them as kiln's. A hand commit that copies the promotion's whole message (stamp
/// included) onto another change is not kiln's. Both were `(not made by kiln)`.
#[test]
fn history_knows_kiln_promote_commits_and_not_a_copy_of_their_message() {
    let platform = platform_dir("platforms/bank");
    let w = world(&platform);
    let dev = w.objects.stage("frontend-dev", Some("web")).unwrap();
    let done = promote(&w, &[dev]);
    let promoted = &done["web/frontend-dev"].commit;
    let (_, cells) = status_json(&w, &platform, &["-p", "web", "-c", "frontend", "-e", "dev"]);
    let Checkout {
        repo,
        branch,
        clone,
        file,
        ..
    } = checkout(&w, cell(&cells, "web", "frontend", "dev"), "copy");
    let history = |format: &str| {
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["history", "--repo"])
            .arg(&repo)
            .args(["--branch", &branch, "-o", format]);
        let r = run(&mut cmd);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        r.stdout
    };
    let text = history("text");
    assert!(!text.contains("not made by kiln"), "{text}");
    let h: Value = serde_json::from_str(&history("json")).unwrap();
    let entries = h["entries"].as_array().unwrap();
    let summaries: Vec<&str> = entries
        .iter()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert_eq!(
        summaries,
        ["kiln: promote frontend to dev", "Initial commit"],
        "{h:#}"
    );
    assert_eq!(entries[0]["commit"], promoted.as_str());
    assert!(entries.iter().all(|e| e["madeByKiln"] == true), "{h:#}");

    // A hand edit committed with the promotion's message, stamp and all.
    let message = git(&clone, &["log", "-1", "--format=%B"]);
    assert!(message.contains("Kiln-Promote: sha256:"), "{message}");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("# hand edit\n");
    std::fs::write(&file, text).unwrap();
    git(&clone, &["commit", "-q", "-a", "-m", message.trim_end()]);
    git(&clone, &["push", "-q", "origin", &branch]);
    let h: Value = serde_json::from_str(&history("json")).unwrap();
    let entries = h["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{h:#}");
    assert_eq!(entries[0]["summary"], "kiln: promote frontend to dev");
    assert_eq!(entries[0]["madeByKiln"], false, "the copy: {h:#}");
    assert_eq!(entries[1]["madeByKiln"], true, "kiln's promotion: {h:#}");
    assert!(history("text").contains("(not made by kiln) kiln: promote frontend to dev"));
    // --at: what runs now is the copy, not kiln's.
    let at = |when: &str| {
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["history", "--repo"])
            .arg(&repo)
            .args(["--branch", &branch, "--at", when, "-o", "json"]);
        let r = run(&mut cmd);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        serde_json::from_str::<Value>(&r.stdout).unwrap()
    };
    assert_eq!(at("2100-01-01")["madeByKiln"], false);
}

/// Drift is content (issue 35, item 1): a promoted folder is drifted when it is not what its
/// Stage builds from the Freight its promotion recorded, whoever committed on top and whatever
/// the commit says, and in sync when it is. Only the edited cell drifts.
#[test]
fn drift_is_a_folder_its_stage_would_not_build() {
    let platform = platform_dir("platforms/bank");
    let w = world(&platform);
    let stages = stages_where(&w, |s| s.project == "web" && s.name.ends_with("-dev"));
    assert!(!stages.is_empty());
    promote(&w, &stages);
    let status_web = || status_json(&w, &platform, &["-p", "web", "-e", "dev"]);
    let (code, cells) = status_web();
    assert_eq!(code, Some(0), "{cells:#?}");
    assert!(cells.iter().all(|c| c["state"] == "inSync"), "{cells:#?}");
    let Checkout {
        branch,
        clone,
        name,
        file,
        ..
    } = checkout(&w, cell(&cells, "web", "frontend", "dev"), "drift");
    let branch = branch.as_str();
    let built = std::fs::read_to_string(&file).unwrap();
    let only_frontend_drifts = |cells: &[Value]| {
        for c in cells {
            let drifted = c["component"] == "frontend";
            assert_eq!(c["state"] == "drifted", drifted, "{c:#?}");
        }
    };

    // A hand edit by someone else, on top: drift, naming the file and the commit.
    std::fs::write(&file, format!("{built}# scaled up by hand\n")).unwrap();
    git(&clone, &["commit", "-qam", "hot fix by hand"]);
    git(&clone, &["push", "-q", "origin", branch]);
    let hand = git(&clone, &["rev-parse", "HEAD"]).trim().to_string();
    let (code, cells) = status_web();
    assert_eq!(code, Some(1));
    only_frontend_drifts(&cells);
    let drift = cell(&cells, "web", "frontend", "dev")["drift"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(drift.contains(&name), "{drift}");
    assert!(drift.contains(&hand[..12]), "{drift}");

    // Put back by hand: the folder is what the Stage builds again, so in sync.
    std::fs::write(&file, &built).unwrap();
    git(&clone, &["commit", "-qam", "undo the hot fix"]);
    git(&clone, &["push", "-q", "origin", branch]);
    let (code, cells) = status_web();
    assert_eq!(code, Some(0), "{cells:#?}");
    assert!(cells.iter().all(|c| c["state"] == "inSync"), "{cells:#?}");

    // A commit that mimics the Stage's: the promotion amended with a hand edit, keeping its
    // message and author. Still drift.
    git(&clone, &["reset", "-q", "--hard", "HEAD~2"]);
    std::fs::write(&file, format!("{built}# scaled up by hand\n")).unwrap();
    git(&clone, &["commit", "-qa", "--amend", "--no-edit"]);
    let message = git(&clone, &["log", "-1", "--format=%s"]);
    assert!(message.starts_with("kiln: promote "), "{message}");
    git(&clone, &["push", "-q", "-f", "origin", branch]);
    let (code, cells) = status_web();
    assert_eq!(code, Some(1));
    only_frontend_drifts(&cells);
    let drift = cell(&cells, "web", "frontend", "dev")["drift"]
        .as_str()
        .unwrap();
    assert!(drift.contains(&name), "{drift}");
}

/// Item 1, speed with drift: a Stage's folder that is, to the tree, what `kiln promote`'s
/// runner wrote (its `Kiln-Promote` stamp matches its change) is not rebuilt; a folder changed
/// since is. Shown without a clock: with the source repository out of reach no Stage can be
/// rebuilt, yet the untouched promoted folders are in sync, also after a commit elsewhere in
/// the branch; a hand edit in a folder needs its rebuild, which then cannot be made (exit 3,
/// `kiln::status::rebuild`); with the source back, the edit is drift. Before, every cell was
/// rebuilt, and status failed with the source out of reach.
#[test]
fn an_untouched_promoted_folder_is_not_rebuilt() {
    let platform = platform_dir("platforms/bank");
    let w = world(&platform);
    let stages = stages_where(&w, |s| s.project == "security" && s.name.ends_with("-dev"));
    assert!(stages.len() > 1, "{stages:?}");
    promote(&w, &stages);
    let args = ["-p", "security", "-e", "dev"];
    let source = w.tmp.path().join("source.git");
    let away = w.tmp.path().join("source-away.git");
    std::fs::rename(&source, &away).unwrap();
    let (code, cells) = status_json(&w, &platform, &args);
    assert_eq!(code, Some(0), "{cells:#?}");
    assert_eq!(cells.len(), stages.len(), "{cells:#?}");
    assert!(cells.iter().all(|c| c["state"] == "inSync"), "{cells:#?}");

    // A commit beside the folders changes none of them: still nothing to rebuild.
    let co = checkout(
        &w,
        cell(&cells, "security", "auth-gateway", "dev"),
        "untouched",
    );
    std::fs::write(co.clone.join("NOTES.md"), "written by hand\n").unwrap();
    git(&co.clone, &["add", "NOTES.md"]);
    git(&co.clone, &["commit", "-qm", "notes by hand"]);
    git(&co.clone, &["push", "-q", "origin", &co.branch]);
    let (code, cells) = status_json(&w, &platform, &args);
    assert_eq!(code, Some(0), "{cells:#?}");
    assert!(cells.iter().all(|c| c["state"] == "inSync"), "{cells:#?}");

    // A hand edit in auth-gateway's folder: that folder, and only it, is rebuilt.
    let built = std::fs::read_to_string(&co.file).unwrap();
    std::fs::write(&co.file, format!("{built}# by hand\n")).unwrap();
    git(&co.clone, &["commit", "-qam", "hot fix by hand"]);
    git(&co.clone, &["push", "-q", "origin", &co.branch]);
    let r = status(&w, &platform, "json", &args);
    assert_eq!(r.code, Some(3), "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("kiln::status::rebuild"), "{}", r.stderr);
    assert!(
        r.stderr.contains("security/auth-gateway-dev"),
        "{}",
        r.stderr
    );
    std::fs::rename(&away, &source).unwrap();
    let (code, cells) = status_json(&w, &platform, &args);
    assert_eq!(code, Some(1), "{cells:#?}");
    for c in &cells {
        assert_eq!(
            c["state"] == "drifted",
            c["component"] == "auth-gateway",
            "{c:#?}"
        );
    }
}

/// Item 3, the picture is compact: `kiln graph -o svg`'s picture of the bank (27 Stages, 6
/// Warehouses), alone and with what every Stage runs (as the status page draws it), is as
/// large as its drawing, not larger (layout-rs's writer sized its canvas as 10 px of height per
/// character of a box's text: 2744 × 4293 px for a 2744 × 1409 drawing, 9 % of it boxes), and
/// its boxes fill at least a fifth of it. Every Stage and Warehouse is still drawn.
#[test]
fn the_bank_pipeline_picture_is_as_large_as_its_drawing() {
    let platform = platform_dir("platforms/bank");
    let built =
        kiln::pipeline::build(&kiln::pipeline::RenderOptions::new(&platform), &|_, _| {}).unwrap();
    let objects = kiln::promote::Objects::from_artifacts(&built.set).unwrap();
    let stages = objects.stages_in_graph_order().unwrap();
    // What `kiln status` passes: `<component> <tag>` of every folder a Stage writes.
    let runs: BTreeMap<String, String> = stages
        .iter()
        .map(|s| {
            let each: Vec<String> = s
                .written()
                .iter()
                .map(|w| format!("{} 1.2.3", w.dir.rsplit('/').next().unwrap_or_default()))
                .collect();
            (format!("{}/{}", s.project, s.name), each.join(", "))
        })
        .collect();
    for runs in [BTreeMap::new(), runs] {
        let svg =
            kiln::graph::graph_with_runs(&objects, None, kiln::graph::GraphFormat::Svg, &runs)
                .unwrap();
        let attr = |tag: &str, name: &str| -> f64 {
            let at = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            let end = at + tag[at..].find('"').unwrap();
            tag[at..end].parse().unwrap()
        };
        let head = &svg[..svg.find('>').unwrap()];
        let (width, height) = (attr(head, "width"), attr(head, "height"));
        let (mut right, mut bottom, mut boxes) = (0f64, 0f64, 0f64);
        let rects: Vec<&str> = svg.split("<rect").skip(1).collect();
        for r in &rects {
            let (x, y, w, h) = (
                attr(r, "x"),
                attr(r, "y"),
                attr(r, "width"),
                attr(r, "height"),
            );
            right = right.max(x + w);
            bottom = bottom.max(y + h);
            boxes += w * h;
        }
        for d in svg.split(" d=\"").skip(1) {
            let numbers: Vec<f64> = d[..d.find('"').unwrap()]
                .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
                .filter_map(|n| n.parse().ok())
                .collect();
            for xy in numbers.chunks(2) {
                right = right.max(xy[0]);
                bottom = bottom.max(xy[1]);
            }
        }
        assert_eq!(rects.len(), stages.len() + objects.warehouses.len());
        for st in &stages {
            assert!(
                svg.contains(&format!(">{}<", st.name)),
                "{} not drawn",
                st.name
            );
        }
        // Nothing cut off, and no band wider than the writer's margin (5 px, and the stroke).
        let within = |canvas: f64, drawn: f64| canvas >= drawn && canvas <= drawn + 10.0;
        assert!(within(width, right), "{width} wide for {right} drawn");
        assert!(within(height, bottom), "{height} high for {bottom} drawn");
        let fill = boxes / (width * height);
        assert!(fill >= 0.2, "{width} × {height}: boxes fill {fill:.2}");
    }
}

/// The newcomer's layout: one service repository holds kiln's rendered tree and every
/// Stage's promoted folders. After three promotions, `status` reports exactly those three,
/// with images and Freight, and `history --at` counts what the Stages wrote, never the
/// rendered tree they read from (it reported every rendered component as deployed).
#[test]
fn one_repo_layout_reports_exactly_the_promotions() {
    let source = "https://github.com/example/bank-platform.git";
    let (tmp, platform) = bank_variant(|t| {
        let mut t = t.to_string();
        for repo in [
            "bank-web-deploy",
            "bank-backend-deploy",
            "bank-ops-deploy",
            "bank-clusters",
        ] {
            t = t.replace(&format!("https://github.com/example/{repo}.git"), source);
        }
        t
    });
    let w = world_in(&platform, Some(tmp.path()));
    let source_repo = w.tmp.path().join("source.git");
    let at_now = |platform_flag: bool| {
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["history", "--repo"]).arg(&source_repo).args([
            "--at",
            "2100-01-01",
            "-o",
            "json",
        ]);
        if platform_flag {
            cmd.arg("--platform").arg(&platform);
        }
        let r = run(&mut cmd);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        serde_json::from_str::<Value>(&r.stdout).unwrap()
    };
    for flag in [true, false] {
        let at = at_now(flag);
        assert_eq!(
            at["images"],
            Value::Array(vec![]),
            "nothing promoted yet: {at:#?}"
        );
    }
    // Three dev Stages writing the branch the rendered tree is on.
    let stages: Vec<StageDef> = w
        .objects
        .stages_in_graph_order()
        .unwrap()
        .into_iter()
        .filter(|s| s.name.ends_with("-dev") && s.written()[0].branch == "main")
        .take(3)
        .collect();
    assert_eq!(stages.len(), 3, "{stages:?}");
    let done = promote(&w, &stages);
    // The test cells after those dev cells run nothing yet: they lag (exit 1).
    let (code, cells) = status_json(&w, &platform, &[]);
    assert_eq!(code, Some(1));
    let chosen: BTreeSet<String> = done.keys().cloned().collect();
    let deployed: Vec<&Value> = cells
        .iter()
        .filter(|c| c["writeCommit"].is_string())
        .collect();
    let expected = cells
        .iter()
        .filter(|c| c["stage"].as_str().is_some_and(|s| chosen.contains(s)))
        .count();
    assert!(expected >= 3);
    assert_eq!(deployed.len(), expected, "{deployed:#?}");
    for c in &deployed {
        assert_eq!(c["repoURL"], source);
        let p = &done[c["stage"].as_str().unwrap()];
        assert_eq!(c["writeCommit"], p.commit.as_str());
        let repos: Vec<&str> = c["images"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["repository"].as_str().unwrap())
            .collect();
        assert!(!repos.is_empty());
        let reference = p
            .freight
            .iter()
            .find(|r| {
                r.images
                    .iter()
                    .any(|i| repos.contains(&i.repo_url.as_str()))
            })
            .unwrap();
        assert_eq!(c["freight"], generate_freight_id(reference).as_str());
    }
    let at = at_now(true);
    assert_eq!(at["images"].as_array().unwrap().len(), expected, "{at:#?}");
    let mut cmd = kiln_command(&repo_root());
    cmd.args(["history", "--repo"])
        .arg(&source_repo)
        .arg("--platform")
        .arg(&platform)
        .args(["-o", "json"]);
    let h: Value = serde_json::from_str(&run(&mut cmd).stdout).unwrap();
    let promotions: Vec<&Value> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["summary"]
                .as_str()
                .is_some_and(|s| s.starts_with("kiln: promote "))
        })
        .collect();
    assert_eq!(promotions.len(), 3);
    for e in promotions {
        assert!(!e["images"].as_array().unwrap().is_empty(), "{e:#?}");
    }
}

/// Chromium from Debian (`.ci/run` installs it); `REQUIRE_CHROMIUM=1` fails without it.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"]
        .iter()
        .map(|n| Path::new("/usr/bin").join(n))
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("REQUIRE_CHROMIUM").is_none_or(|v| v != "1"),
            "REQUIRE_CHROMIUM=1 but no chromium (apt-get install chromium)"
        );
        eprintln!("status: chromium not installed, skipping the browser test");
    }
    found
}

/// Item 3: `kiln status -o html` is one page with no network (inline CSS and SVG, a CSP of
/// `default-src 'none'`), loaded in headless Chromium: the DOM holds every cell, the
/// console logs nothing, the pipeline picture fits a 1280 px wide window (it was cut off at
/// the right: issue 35, newcomer's item 3), and a screenshot is kept in `target/status-page/`.
#[test]
fn status_page_renders_every_cell_in_chromium() {
    let platform = platform_dir("platforms/bank");
    let w = world(&platform);
    let stages = stages_where(&w, |s| s.name.ends_with("-dev"));
    promote(&w, &stages);
    let page = status(&w, &platform, "html", &[]);
    // Only dev promoted: the test cells run nothing while dev runs something, they lag.
    assert_eq!(page.code, Some(1), "{}", page.stderr);
    let (_, cells) = status_json(&w, &platform, &[]);
    let ids: Vec<String> = cells
        .iter()
        .map(|c| {
            kiln::status::html::cell_id(
                c["project"].as_str().unwrap(),
                c["component"].as_str().unwrap(),
                c["environment"].as_str().unwrap(),
            )
        })
        .collect();
    for id in &ids {
        assert!(page.stdout.contains(&format!("id=\"{id}\"")), "{id}");
    }
    for outside in ["http://", "https://www", "<script", "<link", "src="] {
        let hits: Vec<&str> = page.stdout.matches(outside).collect();
        assert!(
            outside.starts_with("http") || hits.is_empty(),
            "the page loads {outside}"
        );
    }
    assert!(
        page.stdout.contains("<svg"),
        "the pipeline picture is inline"
    );
    let dir = repo_root().join("target/status-page");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("status.html");
    std::fs::write(&file, &page.stdout).unwrap();
    let Some(chromium) = chromium() else { return };
    let profile = tempfile::tempdir().unwrap();
    let browse_file = |extra: &[&str], file: &Path| {
        let out = std::process::Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(format!("file://{}", file.display()))
            .stdin(Stdio::null())
            .output()
            .expect("chromium runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let browse = |extra: &[&str]| browse_file(extra, &file);
    let (ok, dom, log) = browse(&["--dump-dom"]);
    assert!(ok, "{log}");
    std::fs::write(dir.join("dom.html"), &dom).unwrap();
    for id in &ids {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{id} not in the DOM");
    }
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Refused to") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "the console is not clean: {console:#?}");
    let shot = dir.join("status.png");
    let _ = std::fs::remove_file(&shot);
    let (ok, _, log) = browse(&[
        "--window-size=1600,1200",
        &format!("--screenshot={}", shot.display()),
    ]);
    assert!(ok && shot.exists(), "no screenshot: {log}");

    // The page, unchanged, in a 1280 px wide frame of a measuring page (the page itself runs
    // no script): the pipeline SVG's box ends inside its box and inside the frame's window.
    let measure = dir.join("measure.html");
    std::fs::write(
        &measure,
        r#"<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="status.html" width="1280" height="900" style="border:0"></iframe>
<script>
window.addEventListener('load', function () {
  var d = document.getElementById('f').contentDocument, out = document.createElement('pre');
  out.id = 'fit';
  if (d && d.querySelector('#pipeline svg')) {
    var pipeline = d.getElementById('pipeline');
    var svg = d.querySelector('#pipeline svg').getBoundingClientRect();
    var box = pipeline.getBoundingClientRect();
    var fit = {svgRight: svg.right, svgWidth: svg.width,
      boxRight: box.right, window: d.documentElement.clientWidth,
      pageWidth: d.documentElement.scrollWidth};
    // "full size": the drawing's own width, scrolling inside its box, not the page.
    d.getElementById('pipeline-full').checked = true;
    fit.fullWidth = d.querySelector('#pipeline svg').getBoundingClientRect().width;
    fit.fullScrolls = pipeline.scrollWidth > pipeline.clientWidth;
    fit.fullPageWidth = d.documentElement.scrollWidth;
    out.textContent = JSON.stringify(fit);
  } else {
    out.textContent = '{"error": "no access to the frame or no #pipeline svg"}';
  }
  document.body.appendChild(out);
});
</script></body></html>
"#,
    )
    .unwrap();
    let (ok, dom, log) = browse_file(&["--allow-file-access-from-files", "--dump-dom"], &measure);
    assert!(ok, "{log}");
    let fit = dom
        .split_once("<pre id=\"fit\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(json, _)| json.replace("&quot;", "\""))
        .unwrap_or_else(|| panic!("the measuring page wrote nothing: {dom}"));
    let fit: Value = serde_json::from_str(&fit).unwrap_or_else(|e| panic!("{e}: {fit}"));
    let n = |k: &str| {
        fit[k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k} not measured: {fit}"))
    };
    assert!(n("svgWidth") > 0.0, "{fit}");
    assert!(
        n("svgRight") <= n("boxRight") + 0.5 && n("svgRight") <= n("window") + 0.5,
        "the pipeline picture is cut off at the right in a 1280 px window: {fit}"
    );
    assert!(
        n("pageWidth") <= n("window") + 0.5,
        "the page scrolls sideways: {fit}"
    );
    // At full size (the checkbox), the drawing keeps its width and scrolls in its box.
    let drawn: f64 = page
        .stdout
        .split_once("<svg width=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .and_then(|(w, _)| w.parse().ok())
        .expect("the SVG's width");
    if drawn > n("window") {
        assert!((n("fullWidth") - drawn).abs() < 1.0, "{fit}");
        assert_eq!(fit["fullScrolls"], true, "{fit}");
        assert!(n("fullPageWidth") <= n("window") + 0.5, "{fit}");
    }
}

/// A platform checkout in its own Git repository, with two commits whose renders differ
/// (frontend 1.4.2, then 1.4.3); each commit checked out in a worktree.
struct Source {
    _tmp: tempfile::TempDir,
    older: (String, PathBuf),
    newer: (String, PathBuf),
}

fn source_with_two_commits() -> Source {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("platform");
    crate::support::copy_dir(
        &repo_root().join("platforms/bank"),
        &root.join("platforms/bank"),
    );
    crate::support::copy_dir(&repo_root().join("components"), &root.join("components"));
    git(tmp.path(), &["init", "-q", root.to_str().unwrap()]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "older"]);
    let older = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    let file = root.join("components/frontend/component.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("tag: \"1.4.2\"", "tag: \"1.4.3\"")).unwrap();
    git(&root, &["commit", "-qam", "newer"]);
    let newer = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    let tree = |name: &str, commit: &str| {
        let dir = tmp.path().join(name);
        git(
            &root,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                dir.to_str().unwrap(),
                commit,
            ],
        );
        dir.join("platforms/bank")
    };
    let older_dir = tree("older", &older);
    let newer_dir = tree("newer", &newer);
    Source {
        older: (older, older_dir),
        newer: (newer, newer_dir),
        _tmp: tmp,
    }
}

fn publish_cmd(platform: &Path, repo: &Path) -> std::process::Command {
    let mut cmd = kiln_command(&repo_root());
    cmd.arg("publish")
        .arg(platform)
        .arg("--repo")
        .arg(repo)
        .args(["--branch", "main"]);
    cmd
}

/// The `Kiln-Source-Commit` of the newest kiln commit on `main`.
fn last_published(repo: &Path) -> String {
    git(
        repo,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Kiln-Source-Commit,valueonly)",
            "main",
        ],
    )
    .trim()
    .to_string()
}

/// Item 4: an older render never lands on a newer one. Publishing the older commit after the
/// newer fails (exit 1) naming both; the newer again is a no-op; two publishers of different
/// commits started together, in both orders, end with the newer render on the branch (the
/// older one failing with the message when it came second).
#[test]
fn publish_refuses_to_revert_a_newer_render() {
    let src = source_with_two_commits();
    let (older, older_dir) = &src.older;
    let (newer, newer_dir) = &src.newer;
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("deploy.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", repo.to_str().unwrap()],
    );
    let r = run(&mut publish_cmd(newer_dir, &repo));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let tip = git(&repo, &["rev-parse", "main"]);
    let r = run(&mut publish_cmd(older_dir, &repo));
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("kiln::git::older_source"), "{}", r.stderr);
    assert!(
        r.stderr.contains(older) && r.stderr.contains(newer),
        "{}",
        r.stderr
    );
    assert_eq!(
        git(&repo, &["rev-parse", "main"]),
        tip,
        "nothing was written"
    );
    let r = run(&mut publish_cmd(newer_dir, &repo));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("up to date"), "{}", r.stderr);

    for (round, first_older) in [(0, true), (1, false), (2, true), (3, false)] {
        let repo = tmp.path().join(format!("race-{round}.git"));
        git(
            tmp.path(),
            &["init", "-q", "--bare", repo.to_str().unwrap()],
        );
        let (a, b) = if first_older {
            (older_dir, newer_dir)
        } else {
            (newer_dir, older_dir)
        };
        let spawn = |dir: &Path| {
            publish_cmd(dir, &repo)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (ca, cb) = (spawn(a), spawn(b));
        let (oa, ob) = (
            ca.wait_with_output().unwrap(),
            cb.wait_with_output().unwrap(),
        );
        let (old_out, new_out) = if first_older { (oa, ob) } else { (ob, oa) };
        let new_err = String::from_utf8_lossy(&new_out.stderr);
        assert!(
            new_out.status.success(),
            "round {round}: the newer publish failed: {new_err}"
        );
        if !old_out.status.success() {
            let err = String::from_utf8_lossy(&old_out.stderr);
            assert_eq!(old_out.status.code(), Some(1), "{err}");
            assert!(
                err.contains(older.as_str()) && err.contains(newer.as_str()),
                "{err}"
            );
        }
        assert_eq!(
            last_published(&repo),
            *newer,
            "round {round}: history ends in source order"
        );
        let commits = git(&repo, &["rev-list", "--count", "main"]);
        let expected = if old_out.status.success() { "2" } else { "1" };
        assert_eq!(commits.trim(), expected, "round {round}");
    }
}

/// Item 2: one JSON naming style (camelCase, as the docs show `madeByKiln`) across `publish`,
/// `diff` and `verify` too, and relative dates for `--since`/`--at`.
#[test]
fn json_is_camel_case_and_dates_may_be_relative() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("deploy.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", repo.to_str().unwrap()],
    );
    let platform = platform_dir("platforms/bank");
    let mut cmd = kiln_command(&repo_root());
    cmd.arg("publish")
        .arg(&platform)
        .arg("--repo")
        .arg(&repo)
        .args(["-o", "json", "-e", "dev"]);
    let r = run(&mut cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_camel_case("publish", &r.stdout);
    for args in [
        vec![
            "diff".to_string(),
            platform.display().to_string(),
            "--against".into(),
            format!("{}@main", repo.display()),
            "-o".into(),
            "json".into(),
        ],
        vec![
            "verify".to_string(),
            platform.display().to_string(),
            "--repo".into(),
            repo.display().to_string(),
            "-e".into(),
            "dev".into(),
            "-o".into(),
            "json".into(),
        ],
        vec![
            "history".to_string(),
            "--repo".into(),
            repo.display().to_string(),
            "-o".into(),
            "json".into(),
        ],
    ] {
        let r = run(kiln_command(&repo_root()).args(&args));
        assert!(matches!(r.code, Some(0 | 1)), "{args:?}: {}", r.stderr);
        assert_camel_case(&args[0], &r.stdout);
    }
    let count = |since: &str| {
        let r = run(kiln_command(&repo_root()).args([
            "history",
            "--repo",
            repo.to_str().unwrap(),
            "--since",
            since,
            "-o",
            "json",
        ]));
        assert_eq!(r.code, Some(0), "{since}: {}", r.stderr);
        serde_json::from_str::<Value>(&r.stdout).unwrap()["entries"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count("2d"), 1);
    assert_eq!(count("yesterday"), 1);
    let r = run(kiln_command(&repo_root()).args([
        "history",
        "--repo",
        repo.to_str().unwrap(),
        "--at",
        "2d",
    ]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.starts_with("nothing on"), "{}", r.stdout);
}

/// The bank without Kargo, committed in its own repository, published with
/// `kiln publish FLAGS` into a bare write repository.
struct PublishedBank {
    tmp: tempfile::TempDir,
    root: PathBuf,
    platform: String,
    deploy: PathBuf,
    /// `--per-environment`, `--layout cluster`: given to publish and status alike.
    flags: &'static [&'static str],
}

/// The repository the bank's Applications sync without Kargo (`spec.source.repoURL`).
const BANK_SOURCE: &str = "https://github.com/example/bank-platform.git";

fn published_per_environment() -> PublishedBank {
    published_bank(&["--per-environment"])
}

fn published_bank(flags: &'static [&'static str]) -> PublishedBank {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("platform");
    let platform = crate::cli_verify::bank_without_kargo(&root);
    git(tmp.path(), &["init", "-q", root.to_str().unwrap()]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "the bank, without Kargo"]);
    let deploy = tmp.path().join("deploy.git");
    git(
        tmp.path(),
        &["init", "-q", "--bare", deploy.to_str().unwrap()],
    );
    let p = PublishedBank {
        tmp,
        root,
        platform,
        deploy,
        flags,
    };
    p.publish();
    p
}

impl PublishedBank {
    fn publish(&self) {
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["publish", &self.platform, "--repo"])
            .arg(&self.deploy)
            .args(self.flags);
        let r = run(&mut cmd);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }

    /// `kiln status FLAGS -o json ARGS`: exit code and cells.
    fn status(&self, args: &[&str]) -> (Option<i32>, Vec<Value>) {
        let r = self.status_run(args);
        let v: Value = serde_json::from_str(&r.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", r.stdout, r.stderr));
        (r.code, v["cells"].as_array().unwrap().clone())
    }

    fn status_run(&self, args: &[&str]) -> crate::support::Run {
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["status", &self.platform, "-o", "json"])
            .args(self.flags)
            .arg("--repo-map")
            .arg(format!("{BANK_SOURCE}={}", self.deploy.display()))
            .args(args);
        run(&mut cmd)
    }

    /// A clone of `branch` of the write repository, to edit by hand.
    fn clone(&self, branch: &str) -> PathBuf {
        let clone = self
            .tmp
            .path()
            .join(format!("hand-{}", branch.replace('/', "-")));
        if !clone.exists() {
            git(
                self.tmp.path(),
                &[
                    "clone",
                    "-q",
                    "-b",
                    branch,
                    self.deploy.to_str().unwrap(),
                    clone.to_str().unwrap(),
                ],
            );
        }
        git(&clone, &["pull", "-q", "origin", branch]);
        clone
    }
}

/// Item 1, for `kiln publish --per-environment` (no Stage): a folder is drifted when it is
/// not what publish renders from the source commit it recorded — a hand edit, even one that
/// amends the publish keeping its message and trailers — and in sync when it is, whoever
/// committed last (an edit put back by hand, a re-publish of the same commit). The spec moving
/// on without a publish is not drift: the recorded commit is what is rendered again.
#[test]
fn per_environment_publish_drift_is_the_folder_against_its_source_commit() {
    let p = published_per_environment();
    let head = git(&p.root, &["rev-parse", "HEAD"]).trim().to_string();
    let (code, cells) = p.status(&[]);
    assert_eq!(code, Some(0), "{cells:#?}");
    assert!(cells.len() > 10);
    for c in &cells {
        assert_eq!(c["state"], "inSync", "{c:#?}");
        assert_eq!(c["sourceCommit"], head.as_str(), "{c:#?}");
        assert_eq!(
            c["branch"],
            format!("stage/{}", c["environment"].as_str().unwrap())
        );
    }
    let frontend = cell(&cells, "web", "frontend", "dev").clone();
    let clone = p.clone("stage/dev");
    let folder = clone.join(frontend["path"].as_str().unwrap());
    let file = folder.join("kustomization.yaml");
    let published = std::fs::read_to_string(&file).unwrap();
    let only_dev_frontend_drifts = |cells: &[Value]| {
        for c in cells {
            let drifted = c["component"] == "frontend" && c["environment"] == "dev";
            assert_eq!(c["state"] == "drifted", drifted, "{c:#?}");
        }
    };

    // A hand edit: drift, naming the file, the source commit and the commit.
    std::fs::write(&file, format!("{published}# scaled up by hand\n")).unwrap();
    git(&clone, &["commit", "-qam", "hot fix by hand"]);
    git(&clone, &["push", "-q", "origin", "stage/dev"]);
    let hand = git(&clone, &["rev-parse", "HEAD"]).trim().to_string();
    let (code, cells) = p.status(&[]);
    assert_eq!(code, Some(1));
    only_dev_frontend_drifts(&cells);
    let drift = cell(&cells, "web", "frontend", "dev")["drift"]
        .as_str()
        .unwrap()
        .to_string();
    for said in ["kustomization.yaml", &head[..12], &hand[..12]] {
        assert!(drift.contains(said), "{said} not in {drift}");
    }

    // Put back by hand: what publish wrote, so in sync, though a hand made the last commit.
    std::fs::write(&file, &published).unwrap();
    git(&clone, &["commit", "-qam", "undo the hot fix"]);
    git(&clone, &["push", "-q", "origin", "stage/dev"]);
    let (code, cells) = p.status(&[]);
    assert_eq!(code, Some(0), "{cells:#?}");

    // The publish amended by hand, keeping its message, trailers and author: drift.
    git(&clone, &["reset", "-q", "--hard", "HEAD~2"]);
    std::fs::write(&file, format!("{published}# scaled up by hand\n")).unwrap();
    git(&clone, &["commit", "-qa", "--amend", "--no-edit"]);
    let message = git(&clone, &["log", "-1", "--format=%B"]);
    assert!(message.contains("Kiln-Source-Commit"), "{message}");
    git(&clone, &["push", "-q", "-f", "origin", "stage/dev"]);
    let (code, cells) = p.status(&[]);
    assert_eq!(code, Some(1));
    only_dev_frontend_drifts(&cells);

    // A re-publish of the same commit writes the render back: in sync; once more: no commit.
    p.publish();
    let (code, cells) = p.status(&[]);
    assert_eq!(code, Some(0), "{cells:#?}");
    let tip = git(&p.deploy, &["rev-parse", "stage/dev"]);
    p.publish();
    assert_eq!(git(&p.deploy, &["rev-parse", "stage/dev"]), tip);

    // The spec moves on and nobody publishes: still what the recorded commit renders.
    let spec = Path::new(&p.platform).join("platform.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let changed = text.replacen("        replicas: 1\n", "        replicas: 3\n", 1);
    assert_ne!(changed, text);
    std::fs::write(&spec, changed).unwrap();
    git(&p.root, &["commit", "-qam", "three replicas"]);
    let (code, cells) = p.status(&[]);
    assert_eq!(code, Some(0), "{cells:#?}");
    assert!(cells.iter().all(|c| c["sourceCommit"] == head.as_str()));
}

/// Item 2: a cell whose last promotion is older than the `--past` writes read still names
/// that promotion's Freight, source commit, commit, author and time, and is judged by
/// content: the walk goes on, for that folder only, until its Stage's promotion is found.
#[test]
fn a_promotion_older_than_the_past_window_still_names_its_freight() {
    let platform = platform_dir("platforms/bank");
    let w = world(&platform);
    let stages = stages_where(&w, |s| s.project == "web" && s.name == "frontend-dev");
    assert_eq!(stages.len(), 1);
    let done = promote(&w, &stages);
    let promoted = &done["web/frontend-dev"];
    let (_, cells) = status_json(&w, &platform, &["-c", "frontend", "-e", "dev"]);
    let before = cell(&cells, "web", "frontend", "dev").clone();
    assert_eq!(before["state"], "inSync", "{before:#?}");
    let freight = before["freight"].as_str().unwrap().to_string();

    // Two hand commits on top (an edit, then the edit put back): the promotion is the third
    // newest write of the folder.
    let branch = before["branch"].as_str().unwrap();
    let (clone, folder) = clone_of_cell(&w, &before, "window");
    let file = folder.join("manifests.yaml");
    let built = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{built}# by hand\n")).unwrap();
    git(&clone, &["commit", "-qam", "hot fix by hand"]);
    std::fs::write(&file, &built).unwrap();
    git(&clone, &["commit", "-qam", "undo the hot fix"]);
    git(&clone, &["push", "-q", "origin", branch]);
    let undo = git(&clone, &["rev-parse", "HEAD"]).trim().to_string();

    for past in ["1", "2"] {
        let (code, cells) = status_json(
            &w,
            &platform,
            &["-c", "frontend", "-e", "dev", "--past", past],
        );
        let c = cell(&cells, "web", "frontend", "dev");
        assert_eq!(code, Some(0), "--past {past}: {c:#?}");
        assert_eq!(c["state"], "inSync", "--past {past}: {c:#?}");
        assert_eq!(c["history"].as_array().unwrap().len().to_string(), past);
        // The folder's newest write is the hand's; what runs is the promotion's.
        assert_eq!(c["writeCommit"], undo.as_str());
        assert_eq!(c["author"]["name"], "Hand Editor");
        assert_eq!(c["freight"], freight.as_str(), "--past {past}: {c:#?}");
        assert_eq!(c["sourceCommit"], source_head(&w).as_str());
        let p = &c["promotion"];
        assert_eq!(p["commit"], promoted.commit.as_str(), "{c:#?}");
        assert_eq!(p["author"]["name"], "kiln test");
        assert_eq!(p["time"], before["time"]);
        assert_eq!(p["freight"], freight.as_str());
        assert_eq!(c["images"], before["images"]);
    }
}

/// Item 3 (speed, ADR 0034): `kiln status` and `kiln history` read without libgit2's
/// re-hashing of every object (40 % of the walk), which `git` itself never does on read; every
/// other command keeps it. Shown with a loose object whose bytes no longer hash to its name:
/// status reads it (and reports the folder as drifted), verify refuses the repository.
#[test]
fn only_status_and_history_skip_rehashing_objects() {
    let p = published_per_environment();
    let clone = p.clone("stage/dev");
    let file = clone.join("deploy/web/frontend/kustomization.yaml");
    let published = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{published}# by hand\n")).unwrap();
    git(&clone, &["commit", "-qam", "hot fix by hand"]);
    // A push this small is unpacked: the new blob is a loose object of the write repository.
    git(&clone, &["push", "-q", "origin", "stage/dev"]);
    let blob = git(
        &p.deploy,
        &[
            "rev-parse",
            "stage/dev:deploy/web/frontend/kustomization.yaml",
        ],
    )
    .trim()
    .to_string();
    let loose = |id: &str| p.deploy.join("objects").join(&id[..2]).join(&id[2..]);
    assert!(loose(&blob).is_file(), "{blob} is packed");
    // Another blob's bytes under this blob's name.
    let other = {
        let mut cmd = crate::support::git_cmd(&p.deploy);
        cmd.args(["hash-object", "-w", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{published}# tampered\n").as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string()
    };
    std::fs::remove_file(loose(&blob)).unwrap();
    std::fs::copy(loose(&other), loose(&blob)).unwrap();

    let r = p.status_run(&["-e", "dev", "-c", "frontend"]);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("kustomization.yaml differ"),
        "{}",
        r.stdout
    );
    let mut cmd = kiln_command(&repo_root());
    cmd.args(["history", "--repo"])
        .arg(&p.deploy)
        .args(["--branch", "stage/dev", "-o", "json"]);
    let r = run(&mut cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let mut cmd = kiln_command(&repo_root());
    cmd.args([
        "verify",
        &p.platform,
        "--per-environment",
        "--ref",
        "stage/dev",
        "--repo",
    ])
    .arg(&p.deploy);
    let r = run(&mut cmd);
    assert_eq!(r.code, Some(3), "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("hash mismatch"), "{}", r.stderr);
}

/// Item 4: the README lists `kiln status` among the commands and in the `kubectl diff`
/// column of the exit codes (0 in sync, 1 lagging or drifted, >1 error), and status exits so:
/// 3 when a repository cannot be read.
#[test]
fn readme_states_status_exit_codes_as_kubectl_diff() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let help = run(kiln_command(&repo_root()).arg("--help")).stdout;
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.contains(&"status"), "{help}");
    for c in &commands {
        assert!(
            readme.contains(&format!("| `kiln {c}")),
            "the README's command table has no row for `kiln {c}`"
        );
    }
    let exits = readme
        .split("### Exit codes")
        .nth(1)
        .expect("an exit-code section");
    let header = exits.lines().find(|l| l.starts_with("| code")).unwrap();
    assert!(
        header.contains("`status`") && header.contains("kubectl diff"),
        "{header}"
    );
    let p = published_per_environment();
    let mut cmd = kiln_command(&repo_root());
    cmd.args(["status", &p.platform, "--per-environment", "--repo-map"])
        .arg(format!(
            "{BANK_SOURCE}={}",
            p.tmp.path().join("nowhere").display()
        ));
    let r = run(&mut cmd);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    let in_sync = p.status_run(&[]);
    assert_eq!(in_sync.code, Some(0), "{}", in_sync.stderr);
}

/// The newcomer's layout, as the issue's "Done when" puts it: one service repository (the
/// source repository, which also holds kiln's rendered tree) for six components; three
/// promotions (two components to dev, one of them on to test). `status` reports exactly
/// those three cells deployed, each with the promoted images and its Freight as Kargo names
/// it, and the promotion commit; `history` lists exactly three promotions with images, and
/// `--at` counts exactly three deployments.
#[test]
fn newcomers_layout_reports_exactly_its_three_promotions() {
    let source = "https://github.com/example/bank-platform.git";
    let (tmp, platform) = bank_variant(|t| {
        let header = &t[..t.find("\n  projects:\n").unwrap()];
        let mut spec = format!(
            "{header}\n  projects:\n  - name: shop\n    output:\n      repoURL: {source}\n      mode: path-per-environment\n      branchPattern: main\n      pathPattern: \"envs/${{env.name}}\"\n    components:\n"
        );
        for c in [
            "frontend",
            "userservice",
            "contacts",
            "balancereader",
            "ledgerwriter",
            "transactionhistory",
        ] {
            spec.push_str(&format!("    - path: ../../components/{c}\n"));
        }
        spec
    });
    let w = world_in(&platform, Some(tmp.path()));
    let chosen = ["frontend-dev", "contacts-dev", "frontend-test"];
    let stages = stages_where(&w, |s| chosen.contains(&s.name.as_str()));
    assert_eq!(stages.len(), 3, "{stages:?}");
    let done = promote(&w, &stages);
    let (code, cells) = status_json(&w, &platform, &[]);
    // contacts in test and frontend in stage run nothing behind an upstream that runs
    // something: they lag, and status says so with exit 1 (kubectl diff's convention).
    assert_eq!(code, Some(1), "{cells:#?}");
    assert_eq!(cells.len(), 6 * 5, "six components in five environments");
    let cell = |c: &Value| {
        format!(
            "{}-{}",
            c["component"].as_str().unwrap(),
            c["environment"].as_str().unwrap()
        )
    };
    let mut lagging: Vec<String> = cells
        .iter()
        .filter(|c| c["state"] == "lagging")
        .map(cell)
        .collect();
    lagging.sort();
    assert_eq!(lagging, ["contacts-test", "frontend-stage"], "{cells:#?}");
    let deployed: Vec<&Value> = cells
        .iter()
        .filter(|c| c.get("writeCommit").is_some())
        .collect();
    let mut found: Vec<String> = deployed.iter().copied().map(cell).collect();
    found.sort();
    assert_eq!(found, ["contacts-dev", "frontend-dev", "frontend-test"]);
    for c in &deployed {
        assert_eq!(c["repoURL"], source);
        let p = &done[c["stage"].as_str().unwrap()];
        assert_eq!(c["writeCommit"], p.commit.as_str(), "{c:#?}");
        let images = c["images"].as_array().unwrap();
        assert_eq!(images.len(), 1, "{c:#?}");
        let repo = images[0]["repository"].as_str().unwrap();
        assert_eq!(images[0]["tag"], w.new_tag_of(repo).as_str(), "{c:#?}");
        assert_eq!(
            images[0]["digest"],
            crate::promote::new_digest(repo).as_str()
        );
        let reference = p
            .freight
            .iter()
            .find(|r| r.images.iter().any(|i| i.repo_url == repo))
            .unwrap();
        assert_eq!(
            c["freight"],
            generate_freight_id(reference).as_str(),
            "{c:#?}"
        );
    }
    let source_repo = w.tmp.path().join("source.git");
    let history = |args: &[&str]| {
        let mut cmd = kiln_command(&repo_root());
        cmd.args(["history", "--repo"])
            .arg(&source_repo)
            .arg("--platform")
            .arg(&platform)
            .args(["-o", "json"])
            .args(args);
        let r = run(&mut cmd);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        serde_json::from_str::<Value>(&r.stdout).unwrap()
    };
    let h = history(&[]);
    let promotions: Vec<&Value> = h["entries"]
        .as_array()
        .unwrap()
        .iter()
        // The promotions: kiln promote's commits (kiln's own since they carry `Kiln-Promote`),
        // not the publishes (which carry `Kiln-Version`).
        .filter(|e| {
            !e["summary"].as_str().unwrap_or("").is_empty()
                && e["kilnVersion"].as_str().unwrap_or("").is_empty()
        })
        .collect();
    assert_eq!(promotions.len(), 3, "{h:#?}");
    for e in promotions {
        assert_eq!(e["images"].as_array().unwrap().len(), 1, "{e:#?}");
    }
    let at = history(&["--at", "2100-01-01"]);
    assert_eq!(at["images"].as_array().unwrap().len(), 3, "{at:#?}");
}

/// Item 1 in the other render layout: `kiln publish --layout cluster` (one branch, folders
/// per cluster) is judged by content too: a hand edit is drift naming the file, the edit put
/// back by hand is in sync.
#[test]
fn cluster_layout_publish_drift_is_content() {
    let p = published_bank(&["--layout", "cluster"]);
    let (code, cells) = p.status(&[]);
    assert_eq!(code, Some(0), "{cells:#?}");
    let c = cell(&cells, "web", "frontend", "prod-west").clone();
    assert_eq!(c["branch"], "main");
    let path = c["path"].as_str().unwrap();
    assert!(path.contains("clusters/prod-west/"), "{path}");
    let clone = p.clone("main");
    let file = clone.join(path).join("kustomization.yaml");
    let published = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{published}# by hand\n")).unwrap();
    git(&clone, &["commit", "-qam", "hot fix by hand"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let (code, cells) = p.status(&["-c", "frontend"]);
    assert_eq!(code, Some(1));
    for c in &cells {
        assert_eq!(
            c["state"] == "drifted",
            c["environment"] == "prod-west",
            "{c:#?}"
        );
    }
    let drift = cell(&cells, "web", "frontend", "prod-west")["drift"]
        .as_str()
        .unwrap();
    assert!(drift.starts_with("kustomization.yaml differ"), "{drift}");
    std::fs::write(&file, &published).unwrap();
    git(&clone, &["commit", "-qam", "undo the hot fix"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let (code, cells) = p.status(&["-c", "frontend"]);
    assert_eq!(code, Some(0), "{cells:#?}");
}

/// A platform in a Git checkout whose components come from app repositories served by a git
/// daemon: `worker` follows a tag per environment (`dev-ref`: its second commit, `prod-ref`:
/// its first), `other` its main branch. Returns (tempdir, platform dir, deploy.git, worker
/// URL, worker's commits, other's commit).
fn app_repo_platform() -> (
    tempfile::TempDir,
    kiln_source::testing::Server,
    PathBuf,
    PathBuf,
    String,
    Vec<String>,
    String,
) {
    use kiln_source::testing;
    let t = tempfile::tempdir().unwrap();
    let repos = t.path().join("repos");
    std::fs::create_dir_all(&repos).unwrap();
    let component = |name: &str, v: &str| {
        format!(
            "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {{name: {name}}}\nspec:\n  generators:\n  - resources: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: {name}}}, data: {{v: \"{v}\"}}}}]\n"
        )
    };
    let (w1, w2, o1) = (
        component("worker", "1"),
        component("worker", "2"),
        component("other", "1"),
    );
    let worker = testing::app_repo(
        &repos,
        "worker.git",
        &[
            (&[("deploy/component.yaml", w1.as_str())], Some("prod-ref")),
            (&[("deploy/component.yaml", w2.as_str())], Some("dev-ref")),
        ],
    );
    let other = testing::app_repo(
        &repos,
        "other.git",
        &[(&[("deploy/component.yaml", o1.as_str())], None)],
    );
    let daemon = testing::git_daemon(&repos);
    let url = |name: &str| format!("git://127.0.0.1:{}/{name}.git", daemon.port);
    let platform = t.path().join("plat");
    std::fs::create_dir_all(platform.join("platforms/p")).unwrap();
    std::fs::write(
        platform.join("platforms/p/platform.yaml"),
        format!(
            "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata: {{name: p}}\nspec:\n  source: {{repoURL: \"http://git.example/plat.git\"}}\n  clusters: [{{name: c, server: https://c}}]\n  environments:\n  - {{name: dev, tier: nonprod, cluster: c}}\n  - {{name: prod, tier: prod, cluster: c, from: [dev]}}\n  projects:\n  - name: shop\n    components:\n    - name: worker\n      source: {{git: \"{}\", ref: \"${{env.name}}-ref\", path: deploy}}\n    - name: other\n      source: {{git: \"{}\", ref: main, path: deploy}}\n",
            url("worker"),
            url("other")
        ),
    )
    .unwrap();
    testing::git(&platform, &["init", "-q"]);
    testing::git(&platform, &["add", "-A"]);
    testing::git(&platform, &["commit", "-q", "-m", "platform"]);
    let deploy = t.path().join("deploy.git");
    git2::Repository::init_bare(&deploy).unwrap();
    let worker_url = url("worker");
    (
        t,
        daemon,
        platform,
        deploy,
        worker_url,
        worker,
        other[0].clone(),
    )
}

/// Issue (app commits per cell), item 1: a publish records each cell's own app commit, so
/// `history --component worker --environment prod` and status' `appCommits` of worker/prod
/// name worker's prod commit only: not its dev commit, not the other app repository.
#[test]
fn a_cell_names_only_the_app_commit_it_was_rendered_from() {
    let (_t, _daemon, platform, deploy, worker_url, worker, other) = app_repo_platform();
    let published = run(publish_cmd(Path::new("platforms/p"), &deploy).current_dir(&platform));
    assert_eq!(published.code, Some(0), "{}", published.text());
    let message = git(&deploy, &["log", "-1", "--format=%B", "main"]);
    assert!(
        message.contains(&format!(
            "Kiln-App-Commit: shop/prod/worker {worker_url}@{}\n",
            worker[0]
        )),
        "{message}"
    );
    let history = run(kiln_command(&platform).args([
        "history",
        "--repo",
        &deploy.display().to_string(),
        "--component",
        "worker",
        "--environment",
        "prod",
    ]));
    assert_eq!(history.code, Some(0), "{}", history.text());
    let from: Vec<&str> = history
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("from "))
        .collect();
    assert_eq!(
        from,
        [format!(
            "    from shop/prod/worker {worker_url}@{}",
            worker[0]
        )],
        "{}",
        history.stdout
    );
    let mut cmd = kiln_command(&platform);
    cmd.args(["status", "platforms/p", "-o", "json", "-c", "worker"])
        .arg("--repo-map")
        .arg(format!("http://git.example/plat.git={}", deploy.display()));
    let status = run(&mut cmd);
    let v: Value =
        serde_json::from_str(&status.stdout).unwrap_or_else(|e| panic!("{e}: {}", status.text()));
    let cells = v["cells"].as_array().unwrap();
    for (env, commit) in [("prod", &worker[0]), ("dev", &worker[1])] {
        let commits: Vec<String> = cell(cells, "shop", "worker", env)["appCommits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}@{}",
                    c["repoURL"].as_str().unwrap(),
                    c["commit"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(commits, [format!("{worker_url}@{commit}")], "{env}");
        assert!(!commits.iter().any(|c| c.ends_with(&other)));
    }
}

/// Issue (image-less status), item 2: a component without images, promoted through Kargo. In
/// sync, its cells show a short Freight ID, not `?`; a manifest change promoted to dev but
/// not test is lag (exit 1, `<lag`, the Freight told apart); `history --at` lists the cell.
#[test]
fn a_component_without_images_shows_its_freight_and_lags() {
    let t = tempfile::tempdir().unwrap();
    let plat = t.path().join("plat");
    std::fs::create_dir_all(plat.join("platforms/p")).unwrap();
    std::fs::create_dir_all(plat.join("components/cfg")).unwrap();
    let component = |v: &str| {
        std::fs::write(
            plat.join("components/cfg/component.yaml"),
            format!("apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {{name: cfg}}\nspec:\n  generators:\n  - resources: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: cfg}}, data: {{v: \"{v}\"}}}}]\n"),
        )
        .unwrap();
    };
    component("1");
    std::fs::write(
        plat.join("platforms/p/platform.yaml"),
        "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata: {name: p}\nspec:\n  source: {repoURL: \"http://git.example/plat.git\"}\n  clusters: [{name: c, server: https://c}]\n  environments:\n  - {name: dev, tier: nonprod, cluster: c}\n  - {name: test, tier: nonprod, cluster: c, from: [dev]}\n  kargo: {enabled: true}\n  projects:\n  - name: shop\n    output: {repoURL: \"http://git.example/shop-deploy.git\"}\n    components: [{path: ../../components/cfg}]\n",
    )
    .unwrap();
    git(&plat, &["init", "-q"]);
    let (source, out) = (t.path().join("plat.git"), t.path().join("out.git"));
    git2::Repository::init_bare(&source).unwrap();
    git2::Repository::init_bare(&out).unwrap();
    let maps = [
        format!("http://git.example/plat.git={}", source.display()),
        format!("http://git.example/shop-deploy.git={}", out.display()),
    ];
    let kiln = |args: &[&str]| {
        let mut cmd = kiln_command(&plat);
        cmd.args(args);
        if matches!(args[0], "promote" | "status") {
            for m in &maps {
                cmd.arg("--repo-map").arg(m);
            }
        }
        run(&mut cmd)
    };
    let publish = |v: &str| {
        assert_eq!(kiln(&["render", "platforms/p"]).code, Some(0));
        git(&plat, &["add", "-A"]);
        git(&plat, &["commit", "-q", "-m", v]);
        let r = run(publish_cmd(Path::new("platforms/p"), &source).current_dir(&plat));
        assert_eq!(r.code, Some(0), "{}", r.text());
    };
    let promote = |stage: &str| {
        let r = kiln(&["promote", stage, "platforms/p", "--freight", "latest"]);
        assert_eq!(r.code, Some(0), "{}", r.text());
    };
    publish("v1");
    promote("cfg-dev");
    promote("cfg-test");
    let r = kiln(&["status", "platforms/p"]);
    assert_eq!(r.code, Some(0), "{}", r.text());
    assert!(!r.stdout.contains('?'), "{}", r.stdout);
    component("2");
    publish("v2");
    promote("cfg-dev");
    let r = kiln(&["status", "platforms/p", "-o", "json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.text()));
    let cells = v["cells"].as_array().unwrap();
    let freight = |env: &str| {
        cell(cells, "shop", "cfg", env)["freight"]
            .as_str()
            .unwrap_or_else(|| panic!("{env} names its Freight: {}", r.stdout))
            .to_string()
    };
    let (dev, test) = (freight("dev"), freight("test"));
    assert_ne!(dev, test);
    let r = kiln(&["status", "platforms/p"]);
    assert_eq!(r.code, Some(1), "lag is exit 1: {}", r.text());
    let row = r
        .stdout
        .lines()
        .find(|l| l.starts_with("shop/cfg"))
        .unwrap();
    assert!(
        row.contains(&dev[..7]) && row.contains(&format!("{} <lag", &test[..7])),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "lagging shop/cfg in test: dev runs {}, test {}",
            &dev[..7],
            &test[..7]
        )),
        "{}",
        r.stdout
    );
    let at = kiln(&[
        "history",
        "--repo",
        &out.display().to_string(),
        "--branch",
        "stage/test",
        "--platform",
        "platforms/p",
        "--at",
        "2100-01-01T00:00:00Z",
    ]);
    assert_eq!(at.code, Some(0), "{}", at.text());
    assert!(at.stdout.contains("/cfg: (no image)"), "{}", at.stdout);
}

/// Item (status, small): a write repository `kiln status` cannot reach, with no `--repo-map`
/// standing in for it, is an error whose help says how to pass one. The URL is a port on
/// 127.0.0.1 that nothing listens on.
#[test]
fn an_unreachable_write_repository_suggests_a_repo_map() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/bank-web-deploy.git");
    let (_tmp, platform) =
        bank_variant(|text| text.replace("https://github.com/example/bank-web-deploy.git", &url));
    let r = run(kiln_command(&repo_root())
        .arg("status")
        .arg(&platform)
        .args(["-p", "web"]));
    assert!(r.code.is_some_and(|c| c > 1), "{}{}", r.stdout, r.stderr);
    // miette wraps the message and help: read them as one line.
    let said = r.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("kiln::status::unreachable"), "{}", r.stderr);
    assert!(said.contains(&format!("127.0.0.1:{port}")), "{}", r.stderr);
    assert!(said.contains("pass --repo-map URL=PATH"), "{}", r.stderr);
}

/// Issue 38, item 1: after `branchPattern` changes (bootstrap and publish done again, as
/// docs/pipeline.md says), a cell promoted in the old layout has nothing on its new branch.
/// Its Application still runs the old branch's commit: status says so, naming that branch, in
/// text and in `-o json` (`earlierLayout`), instead of a bare `-`.
#[test]
fn a_cell_promoted_before_a_layout_change_names_the_earlier_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("p");
    std::fs::create_dir_all(&p).unwrap();
    let git = |args: &[&str]| {
        let out = crate::support::git_cmd(&p).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    let kiln = |args: &[&str]| crate::support::kiln_in(&p, args);
    let r = kiln(&["init", ".", "--name", "t", "--component", "app"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let (src, out) = (tmp.path().join("src.git"), tmp.path().join("out.git"));
    for bare in [&src, &out] {
        git(&["init", "-q", "--bare", bare.to_str().unwrap()]);
    }
    let spec = p.join("platforms/t/platform.yaml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let output = "  kargo: {enabled: true}\n  projects:\n  - name: t\n    output: {repoURL: https://git.example.com/t/out.git, branchPattern: \"stage/${env.name}\"}\n";
    std::fs::write(
        &spec,
        text.replacen("  projects:\n  - name: t\n", output, 1),
    )
    .unwrap();
    let map = [
        "--repo-map".to_string(),
        format!("https://git.example.com/t/platform.git={}", src.display()),
        "--repo-map".to_string(),
        format!("https://git.example.com/t/out.git={}", out.display()),
    ];
    let with_map = |args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(map.iter().map(String::as_str));
        kiln(&all)
    };
    let publish = [
        "publish",
        "platforms/t",
        "--repo",
        src.to_str().unwrap(),
        "--branch",
        "main",
    ];
    for args in [
        &publish[..],
        &["bootstrap", "platforms/t"],
        &[
            "promote",
            "app-dev",
            "platforms/t",
            "--project",
            "t",
            "--freight",
            "latest",
        ],
    ] {
        let r = if args[0] == "publish" {
            kiln(args)
        } else {
            with_map(args)
        };
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
    }
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, text.replace("stage/${env.name}", "env/${env.name}")).unwrap();
    assert_eq!(with_map(&["bootstrap", "platforms/t"]).code, Some(0));
    assert_eq!(kiln(&publish).code, Some(0));
    let r = with_map(&["status", "platforms/t"]);
    assert!(
        r.stdout.contains(
            "not promoted in this layout t/app in dev: nothing on env/dev; t/app-dev promoted on stage/dev"
        ),
        "{}{}",
        r.stdout,
        r.stderr
    );
    let r = with_map(&["status", "platforms/t", "-o", "json"]);
    let cells: Vec<Value> = serde_json::from_str::<Value>(&r.stdout).unwrap()["cells"]
        .as_array()
        .unwrap()
        .clone();
    let dev = cell(&cells, "t", "app", "dev");
    assert_eq!(dev["earlierLayout"], "stage/dev", "{dev:#}");
    assert_eq!(dev["branch"], "env/dev", "{dev:#}");
}
