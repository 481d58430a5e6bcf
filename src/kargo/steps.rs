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
//! commit        git-commit           ./out, message naming images and source commit
//! push          git-push             ./out → branch
//! sync          argocd-update        Application, desiredRevision: outputs.push.commit
//! ```
//!
//! `delete` rather than `git-clear`: several components share a branch, and `git-clear`
//! would wipe the others. `kustomize-set-image` always gets an explicit `tag` or `digest`
//! (required since Kargo v1.3). Every value that differs per Stage is a variable, so the steps
//! read the same in every Stage.

use super::{Pair, Strategy, naming, warehouse};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// `spec.promotionTemplate.spec` of the Stage of `p` (`vars` and `steps`).
pub(super) fn promotion_template(input: &super::KargoInput, p: &Pair<'_>) -> Value {
    let source = input.source.repo_url.clone().unwrap_or_default();
    let target = p.target.clone().unwrap_or(super::Target {
        repo_url: String::new(),
        branch: String::new(),
        path: String::new(),
    });
    let mut vars = vec![
        json!({ "name": "srcRepo", "value": source }),
        json!({ "name": "srcPath", "value": p.src_path }),
        json!({ "name": "writeRepo", "value": target.repo_url }),
        json!({ "name": "writeBranch", "value": target.branch }),
        json!({ "name": "writePath", "value": target.path }),
    ];
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
    let mut set_images = Vec::new();
    let mut pinned = Vec::new();
    for img in &p.component.images {
        let var = naming::image_var(&img.name, &mut taken);
        let repo = warehouse::repo_url(&img.repository);
        vars.push(json!({ "name": var, "value": repo }));
        // Digest selection always promotes a digest; SemVer selection of an image pinned by
        // digest too (each Freight image records both, `api/v1alpha1/stage_types.go` `Image`).
        let (field, expr) = if img.by_digest || img.strategy == Strategy::Digest {
            ("digest", format!("${{{{ imageFrom(vars.{var}).Digest }}}}"))
        } else {
            ("tag", format!("${{{{ imageFrom(vars.{var}).Tag }}}}"))
        };
        set_images.push(json!({ "image": format!("${{{{ vars.{var} }}}}"), field: expr }));
        let sep = if field == "digest" { "@" } else { ":" };
        pinned.push(format!("{repo}{sep}{expr}"));
    }
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
        json!({
            "uses": "delete",
            "as": clean,
            "config": { "path": "./out/${{ vars.writePath }}" },
        }),
    ];
    if !set_images.is_empty() {
        steps.push(json!({
            "uses": "kustomize-set-image",
            "as": set_image,
            "config": { "path": "./src/${{ vars.srcPath }}", "images": set_images },
        }));
    }
    let mut message = format!("kiln: promote {} to {}\n\n", p.component.name, p.env.name);
    for line in &pinned {
        message.push_str(&format!("image: {line}\n"));
    }
    message.push_str("source: ${{ vars.srcRepo }}@${{ commitFrom(vars.srcRepo).ID }}\n");
    message.push_str(&format!("stage: {}/{}\n", p.project.name, p.stage));
    steps.push(json!({
        "uses": "kustomize-build",
        "as": build,
        "config": { "path": "./src/${{ vars.srcPath }}", "outPath": "./out/${{ vars.writePath }}/manifests.yaml" },
    }));
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
    let mut source = json!({
        "repoURL": "${{ vars.writeRepo }}",
        "desiredRevision": format!("${{{{ outputs.{push}.commit }}}}"),
    });
    if p.pin {
        // Other Stages push to this branch too: pin the Application to this commit (see
        // `pin_shared_branches`).
        source["updateTargetRevision"] = json!(true);
    }
    steps.push(json!({
        "uses": "argocd-update",
        "as": sync,
        "config": {
            "apps": [{
                "name": p.app,
                "namespace": input.argocd.namespace,
                "sources": [source],
            }],
        },
    }));
    json!({ "vars": vars, "steps": steps })
}
