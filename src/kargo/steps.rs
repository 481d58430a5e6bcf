//! The promotion template of a Stage: read the source repository at the Freight's commit,
//! render the component with its new images, and commit the result into the write
//! repository; then let Argo CD sync to that commit.
//!
//! ```text
//! clone-source  git-clone            source repo @ commitFrom(srcRepo).ID   → ./src
//! clone-target  git-clone            write repo, branch (create: true)      → ./out
//! clean         delete               ./out/<writePath>   (this component's folder only)
//! set-image     kustomize-set-image  ./src/<srcPath>     tag (or digest) from the Freight
//! build         kustomize-build      ./src/<srcPath>   → ./out/<writePath>/manifests.yaml
//! commit        git-commit           ./out, message naming images, source commit and Freight
//! push          git-push             ./out → branch
//! sync          argocd-update        Application, desiredRevision: outputs.push.commit
//! ```
//!
//! `delete` rather than `git-clear`: several components share a branch, and `git-clear`
//! would wipe the others. `kustomize-set-image` always gets an explicit `tag` or `digest`
//! (required since Kargo v1.3). Every value that differs per Stage is a variable, so the steps
//! read the same in every Stage.
//!
//! In `environment-stage` mode (one Stage per environment, one Warehouse per component) each
//! component has its own `clone-source-<c>` … `commit-<c>` and `sync-<c>`, run only when the
//! promoted Freight comes from its Warehouse (see [`promotion_template`]).

use super::{Pair, naming, warehouse};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `spec.promotionTemplate.spec` of the Stage of `pairs` (one environment): `vars` and
/// `steps`. One pair (component mode) reads as the module docs show; several (project mode)
/// share the clones, commit, push and one `argocd-update` naming every Application, with a
/// `clean-<c>`, `set-image-<c>` and `build-<c>` step per component `c` (its paths written
/// out, since they differ per component).
///
/// In `environment-stage` mode each promotion moves one component's Freight (Kargo's
/// `ctx.targetFreight`, of origin `Warehouse/<c>`): every step of component `c` but the
/// write repository's clone and the push carries `if: ${{ ctx.targetFreight.origin.name ==
/// "<c>" }}`, and reads its Freight by origin (`commitFrom(vars.srcRepo, warehouse("<c>"))`,
/// `imageFrom(vars.<image>, warehouse("<c>"))`), since every Warehouse subscribes to the
/// source repository and an origin-less `commitFrom` would be ambiguous
/// (`pkg/controller/freight/finder.go` `FindCommit`, Kargo v1.11.2). The other components'
/// folders stay as their own promotions left them, and so do their Applications: one of
/// them may have no Freight in this Stage yet, and `commitFrom` then finds nothing.
pub(super) fn promotion_template(input: &super::Input<'_>, pairs: &[&Pair<'_>]) -> Value {
    let p = pairs[0];
    let per_origin = p.project.promotion == crate::spec::PromotionUnit::EnvironmentStage;
    let project_mode = p.project.promotion.stage_per_environment();
    let source = input.platform.source.repo_url.clone().unwrap_or_default();
    let target = p.target.clone().unwrap_or(super::Target {
        repo_url: String::new(),
        branch: String::new(),
        path: String::new(),
    });
    let mut vars = vec![json!({ "name": "srcRepo", "value": source })];
    if !project_mode {
        vars.push(json!({ "name": "srcPath", "value": p.src_path }));
    }
    vars.push(json!({ "name": "writeRepo", "value": target.repo_url }));
    vars.push(json!({ "name": "writeBranch", "value": target.branch }));
    if !project_mode {
        vars.push(json!({ "name": "writePath", "value": target.path }));
    }
    let mut taken: BTreeSet<String> = [
        "srcRepo",
        "srcPath",
        "writeRepo",
        "writeBranch",
        "writePath",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    // Image var per distinct repository: components shipping one image share it.
    let mut image_vars: Vec<(String, String)> = Vec::new();
    let mut pinned = Vec::new();
    let [
        clone_source,
        clone_target,
        clean,
        set_image,
        build,
        commit,
        push,
        sync,
    ] = naming::ALIASES;
    let clone_source_step = |alias: String, origin: &str, path: &str| {
        json!({
            "uses": "git-clone",
            "as": alias,
            "config": {
                "repoURL": "${{ vars.srcRepo }}",
                "checkout": [{ "commit": format!("${{{{ commitFrom(vars.srcRepo{origin}).ID }}}}"), "path": path }],
            },
        })
    };
    let mut steps = Vec::new();
    if !per_origin {
        steps.push(clone_source_step(clone_source.to_string(), "", "./src"));
    }
    steps.push(json!({
        "uses": "git-clone",
        "as": clone_target,
        "config": {
            "repoURL": "${{ vars.writeRepo }}",
            "checkout": [{ "branch": "${{ vars.writeBranch }}", "create": true, "path": "./out" }],
        },
    }));
    // In `environment-stage` mode: each component's steps, its commit and its Application.
    let mut own_syncs = Vec::new();
    for q in pairs {
        let t = q.target.clone().unwrap_or(target.clone());
        let (src_path, write_path, suffix) = if project_mode {
            (
                q.src_path.clone(),
                t.path.clone(),
                format!("-{}", q.component.name),
            )
        } else {
            (
                "${{ vars.srcPath }}".to_string(),
                "${{ vars.writePath }}".to_string(),
                String::new(),
            )
        };
        let warehouse = naming::warehouse_name(&q.component.name);
        // `, warehouse("<c>")` inside `commitFrom`/`imageFrom`, in `environment-stage` mode.
        let origin = if per_origin {
            format!(", warehouse(\"{warehouse}\")")
        } else {
            String::new()
        };
        let src_root = if per_origin {
            format!("./src-{}", q.component.name)
        } else {
            "./src".to_string()
        };
        let mut own = Vec::new();
        if per_origin {
            own.push(clone_source_step(
                format!("{clone_source}{suffix}"),
                &origin,
                &src_root,
            ));
        }
        let mut set_images = Vec::new();
        let mut own_pinned = Vec::new();
        for img in q.images {
            let repo = warehouse::repo_url(&img.repository);
            let var = match image_vars.iter().find(|(r, _)| *r == repo) {
                Some((_, v)) => v.clone(),
                None => {
                    let v = naming::image_var(&img.name, &mut taken);
                    vars.push(json!({ "name": v, "value": repo }));
                    image_vars.push((repo.clone(), v.clone()));
                    v
                }
            };
            // Digest selection always promotes a digest; SemVer selection of an image pinned
            // by digest too (each Freight image records both, `api/v1alpha1/stage_types.go`
            // `Image`).
            let from = format!("imageFrom(vars.{var}{origin})");
            let (field, expr) = if super::promotes_digest(img) {
                ("digest", format!("${{{{ {from}.Digest }}}}"))
            } else {
                ("tag", format!("${{{{ {from}.Tag }}}}"))
            };
            set_images.push(json!({ "image": format!("${{{{ vars.{var} }}}}"), field: expr }));
            // The message names tag and digest whichever one is set: the Freight holds both,
            // and `kiln status` names the Freight from them (Kargo's `GenerateFreightID`).
            let line = format!("{repo}:${{{{ {from}.Tag }}}}@${{{{ {from}.Digest }}}}");
            let list = if per_origin {
                &mut own_pinned
            } else {
                &mut pinned
            };
            if !list.contains(&line) {
                list.push(line);
            }
        }
        own.push(json!({
            "uses": "delete",
            "as": format!("{clean}{suffix}"),
            "config": { "path": format!("./out/{write_path}") },
        }));
        if !set_images.is_empty() {
            own.push(json!({
                "uses": "kustomize-set-image",
                "as": format!("{set_image}{suffix}"),
                "config": { "path": format!("{src_root}/{src_path}"), "images": set_images },
            }));
        }
        own.push(json!({
            "uses": "kustomize-build",
            "as": format!("{build}{suffix}"),
            "config": {
                "path": format!("{src_root}/{src_path}"),
                "outPath": format!("./out/{write_path}/manifests.yaml"),
            },
        }));
        if per_origin {
            let message = commit_message(&q.component.name, q, &own_pinned, &origin);
            own.push(json!({
                "uses": "git-commit",
                "as": format!("{commit}{suffix}"),
                "config": { "path": "./out", "message": message },
            }));
            // One condition on every step of the component: the target Freight is its own.
            let condition = format!("${{{{ ctx.targetFreight.origin.name == \"{warehouse}\" }}}}");
            for step in &mut own {
                step["if"] = json!(condition);
            }
            let mut update = argocd_update(input, &[q], &format!("{sync}{suffix}"));
            update["if"] = json!(condition);
            own_syncs.push(update);
        }
        steps.extend(own);
    }
    if !per_origin {
        let what = if project_mode {
            &p.project.name
        } else {
            &p.component.name
        };
        steps.push(json!({
            "uses": "git-commit",
            "as": commit,
            "config": { "path": "./out", "message": commit_message(what, p, &pinned, "") },
        }));
    }
    steps.push(json!({
        "uses": "git-push",
        "as": push,
        "config": { "path": "./out", "targetBranch": "${{ vars.writeBranch }}" },
    }));
    if per_origin {
        steps.extend(own_syncs);
    } else {
        steps.push(argocd_update(input, pairs, sync));
    }
    let mut template = json!({ "vars": null, "steps": null });
    // Moved in: `json!` would serialize a copy of each.
    template["vars"] = Value::Array(vars);
    template["steps"] = Value::Array(steps);
    template
}

/// The `git-commit` message of a promotion of `what` (a component or the project) into the
/// environment of `p`: the images (`image: <repo>:<tag>@<digest>` lines), the source commit
/// (of origin `origin`, `, warehouse("<c>")` or empty), the Freight and the Stage — the
/// lines `kiln status` and `kiln history` read back.
fn commit_message(what: &str, p: &Pair<'_>, pinned: &[String], origin: &str) -> String {
    let mut message = format!("kiln: promote {what} to {}\n\n", p.env.name);
    for line in pinned {
        message.push_str(&format!("image: {line}\n"));
    }
    message.push_str(&format!(
        "source: ${{{{ vars.srcRepo }}}}@${{{{ commitFrom(vars.srcRepo{origin}).ID }}}}\n"
    ));
    message.push_str("freight: ${{ ctx.targetFreight.name }}\n");
    message.push_str(&format!("stage: {}/{}\n", p.project.name, p.stage));
    message
}

/// The `argocd-update` step `alias` syncing the Applications of `pairs` to the pushed commit.
fn argocd_update(input: &super::Input<'_>, pairs: &[&Pair<'_>], alias: &str) -> Value {
    let push = naming::ALIASES[6];
    let apps: Vec<Value> = pairs
        .iter()
        .map(|q| {
            let mut source = json!({
                "repoURL": "${{ vars.writeRepo }}",
                "desiredRevision": format!("${{{{ outputs.{push}.commit }}}}"),
            });
            if q.pin {
                // Other Stages push to this branch too: pin the Application to this commit
                // (see `pin_shared_branches`).
                source["updateTargetRevision"] = json!(true);
            }
            json!({ "name": q.app, "namespace": input.platform.argocd.namespace, "sources": [source] })
        })
        .collect();
    json!({
        "uses": "argocd-update",
        "as": alias,
        "config": { "apps": apps },
    })
}
