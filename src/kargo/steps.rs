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

use super::{Pair, naming, warehouse};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `spec.promotionTemplate.spec` of the Stage of `pairs` (one environment): `vars` and
/// `steps`. One pair (component mode) reads as the module docs show; several (project mode)
/// share the clones, commit, push and one `argocd-update` naming every Application, with a
/// `clean-<c>`, `set-image-<c>` and `build-<c>` step per component `c` (its paths written
/// out, since they differ per component).
pub(super) fn promotion_template(input: &super::Input<'_>, pairs: &[&Pair<'_>]) -> Value {
    let p = pairs[0];
    let project_mode = p.project.promotion == crate::spec::PromotionUnit::Project;
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
    let mut steps = vec![
        json!({
            "uses": "git-clone",
            "as": clone_source,
            "config": {
                "repoURL": "${{ vars.srcRepo }}",
                "checkout": [{ "commit": "${{ commitFrom(vars.srcRepo).ID }}", "path": "./src" }],
            },
        }),
        json!({
            "uses": "git-clone",
            "as": clone_target,
            "config": {
                "repoURL": "${{ vars.writeRepo }}",
                "checkout": [{ "branch": "${{ vars.writeBranch }}", "create": true, "path": "./out" }],
            },
        }),
    ];
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
        let mut set_images = Vec::new();
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
            let (field, expr) = if super::promotes_digest(img) {
                ("digest", format!("${{{{ imageFrom(vars.{var}).Digest }}}}"))
            } else {
                ("tag", format!("${{{{ imageFrom(vars.{var}).Tag }}}}"))
            };
            set_images.push(json!({ "image": format!("${{{{ vars.{var} }}}}"), field: expr }));
            // The message names tag and digest whichever one is set: the Freight holds both,
            // and `kiln status` names the Freight from them (Kargo's `GenerateFreightID`).
            let line = format!(
                "{repo}:${{{{ imageFrom(vars.{var}).Tag }}}}@${{{{ imageFrom(vars.{var}).Digest }}}}"
            );
            if !pinned.contains(&line) {
                pinned.push(line);
            }
        }
        steps.push(json!({
            "uses": "delete",
            "as": format!("{clean}{suffix}"),
            "config": { "path": format!("./out/{write_path}") },
        }));
        if !set_images.is_empty() {
            steps.push(json!({
                "uses": "kustomize-set-image",
                "as": format!("{set_image}{suffix}"),
                "config": { "path": format!("./src/{src_path}"), "images": set_images },
            }));
        }
        steps.push(json!({
            "uses": "kustomize-build",
            "as": format!("{build}{suffix}"),
            "config": {
                "path": format!("./src/{src_path}"),
                "outPath": format!("./out/{write_path}/manifests.yaml"),
            },
        }));
    }
    let what = if project_mode {
        &p.project.name
    } else {
        &p.component.name
    };
    let mut message = format!("kiln: promote {what} to {}\n\n", p.env.name);
    for line in &pinned {
        message.push_str(&format!("image: {line}\n"));
    }
    message.push_str("source: ${{ vars.srcRepo }}@${{ commitFrom(vars.srcRepo).ID }}\n");
    message.push_str("freight: ${{ ctx.targetFreight.name }}\n");
    message.push_str(&format!("stage: {}/{}\n", p.project.name, p.stage));
    steps.push(json!({
        "uses": "git-commit",
        "as": commit,
        "config": { "path": "./out", "message": message },
    }));
    steps.push(json!({
        "uses": "git-push",
        "as": push,
        "config": { "path": "./out", "targetBranch": "${{ vars.writeBranch }}" },
    }));
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
    steps.push(json!({
        "uses": "argocd-update",
        "as": sync,
        "config": { "apps": apps },
    }));
    json!({ "vars": vars, "steps": steps })
}
