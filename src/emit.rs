//! Stage 5, emit: the rendered plans and the platform → [`ArtifactSet`], the rendered tree as
//! bytes in memory: the component directories, and the Kargo and Argo CD objects (`crate::kargo`).
//!
//! Each component instance in each environment gets one directory holding
//! `<component>.gen.yaml` (all its resources, `---`-separated, in kustomize's legacy order:
//! kinds by kustomize's fixed priority — Namespace, ResourceQuota, StorageClass, CRDs,
//! ServiceAccount, PodSecurityPolicy, Role, ClusterRole, RoleBinding, ClusterRoleBinding,
//! ConfigMap, Secret, Endpoints, Service, LimitRange, PriorityClass, PersistentVolume,
//! PersistentVolumeClaim, Deployment, StatefulSet, CronJob, PodDisruptionBudget — then all
//! other kinds by group/version/kind, webhooks last; ties by namespace, then name) and a
//! `kustomization.yaml` whose `resources:` lists the `.gen.yaml` and whose `images:` has one
//! entry per component image, named as the image appears in the manifests, so Kargo's
//! `kustomize-set-image` can retarget it and `kustomize build` reproduces the `.gen.yaml`.
//!
//! Layouts: [`Layout::Service`] (default) `<project>/<env>/<component>/`;
//! [`Layout::Cluster`] `clusters/<cluster>/<project>/<env>/<component>/`.
//!
//! Invariant: pure; the same input gives the same bytes.

use crate::artifact::ArtifactSet;
pub use crate::artifact::Layout;
use crate::diag::Errors;
use crate::evaluate::BuildPlan;
use crate::kargo::{KargoError, KargoOptions};
use crate::render::Rendered;
use crate::validate::Platform;
use serde_json::{Map, Value, json};

/// The output directory of one rendered plan, relative to the output root.
pub fn component_dir(r: &Rendered, layout: Layout) -> String {
    let p = &r.plan;
    match layout {
        Layout::Service => format!("{}/{}/{}", p.project, p.environment, p.component),
        Layout::Cluster => format!(
            "clusters/{}/{}/{}/{}",
            p.cluster, p.project, p.environment, p.component
        ),
    }
}

/// The `kustomization.yaml` beside a `.gen.yaml`.
pub fn kustomization(r: &Rendered) -> Value {
    let mut k = Map::new();
    k.insert(
        "apiVersion".into(),
        json!("kustomize.config.k8s.io/v1beta1"),
    );
    k.insert("kind".into(), json!("Kustomization"));
    k.insert(
        "resources".into(),
        json!([format!("{}.gen.yaml", r.plan.component)]),
    );
    let images: Vec<Value> = r
        .images
        .iter()
        .map(|i| {
            let mut e = Map::new();
            e.insert("name".into(), json!(i.name));
            if let Some(t) = &i.tag {
                e.insert("newTag".into(), json!(t));
            }
            if let Some(d) = &i.digest {
                e.insert("digest".into(), json!(d));
            }
            Value::Object(e)
        })
        .collect();
    if !images.is_empty() {
        k.insert("images".into(), Value::Array(images));
    }
    Value::Object(k)
}

/// Stage 5, the one entry: the rendered tree. `components` holds the component directories,
/// each rendered plan's files from [`emit_plan`] (run by the render on the worker that
/// rendered the plan, so that its resources are dropped there); the Kargo and Argo CD
/// objects of `plans` are added to them under `kargo` (generated and serialized in parallel,
/// [`crate::kargo::emit_into`]). `None`: no Kargo or Argo CD objects (a shard's tree, which
/// `kiln merge` completes).
///
/// Errors: every [`KargoError`], together; nothing is returned then.
pub fn emit(
    mut components: ArtifactSet,
    platform: &Platform,
    plans: &[BuildPlan],
    kargo: Option<&KargoOptions>,
) -> Result<ArtifactSet, Errors<KargoError>> {
    if let Some(opts) = kargo {
        crate::kargo::emit_into(&mut components, "", platform, plans, opts)?;
    }
    Ok(components)
}

/// [`emit`]'s Kargo and Argo CD files without the component directories, handed to `each` a
/// piece at a time as they are generated ([`crate::kargo::emit_pieces`]), in the order of
/// [`emit`]'s set, instead of collected: `kiln render` writes each piece while the next is
/// generated (issue 38, item 8: 350 MB of YAML at 10,000 × 10). `each` returning
/// [`std::ops::ControlFlow::Break`] stops the generation.
///
/// Errors: as [`emit`]; `each` may have taken some pieces before them.
pub fn emit_each(
    platform: &Platform,
    plans: &[BuildPlan],
    kargo: Option<&KargoOptions>,
    each: &mut dyn FnMut(Vec<(String, Vec<u8>)>) -> std::ops::ControlFlow<()>,
) -> Result<(), Errors<KargoError>> {
    match kargo {
        Some(opts) => {
            crate::kargo::emit_pieces(platform, plans, opts, "", crate::kargo::KARGO_PIECE, each)
        }
        None => Ok(()),
    }
}

/// Where each resource (each document of the plan's `.gen.yaml`, in order) came from, for
/// validation's findings (issue 36, item 7).
pub fn provenance(
    resources: &[crate::resource::Resource],
) -> Vec<Option<crate::resource::Provenance>> {
    resources
        .iter()
        .map(|r| r.meta.provenance.as_deref().cloned())
        .collect()
}

/// The cluster-scoped kinds (group, kind) among `resources`: the Argo CD AppProject must
/// allow them. Collected per plan on the render's workers, since resources are not kept.
pub fn cluster_kinds(
    resources: &[crate::resource::Resource],
) -> std::collections::BTreeSet<(String, String)> {
    resources
        .iter()
        .filter_map(|r| {
            let group = r.api_version().rsplit_once('/').map_or("", |(g, _)| g);
            crate::kustomize::filters::namespace::is_cluster_scoped(group, r.kind())
                .then(|| (group.to_string(), r.kind().to_string()))
        })
        .collect()
}

/// The files of one rendered plan (`.gen.yaml`, then `kustomization.yaml`), path → bytes.
/// A function of the plan alone, so the render can emit on its worker thread and drop the
/// resources there.
pub fn emit_plan(r: &Rendered, layout: Layout) -> Vec<(String, Vec<u8>)> {
    let dir = component_dir(r, layout);
    let p = &r.plan;
    let mut gen_yaml = crate::artifact::header(&crate::artifact::GenHeader {
        source: &p.path,
        project: &p.project,
        environment: &p.environment,
    });
    // As `crate::yaml::to_yaml_stream`, without cloning every resource into a list first.
    for (i, res) in r.resources.iter().enumerate() {
        if i > 0 {
            gen_yaml.push_str("---\n");
        }
        gen_yaml.push_str(&crate::yaml::to_yaml(&res.value));
    }
    let mut kz =
        String::from("# Generated by kiln. Kargo's kustomize-set-image updates `images`.\n");
    kz.push_str(&crate::yaml::to_yaml(&kustomization(r)));
    vec![
        (
            format!("{dir}/{}.gen.yaml", p.component),
            gen_yaml.into_bytes(),
        ),
        (format!("{dir}/kustomization.yaml"), kz.into_bytes()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluate::{Selection, evaluate};
    use crate::load::RealFs;
    use crate::render::render;
    use crate::validate::tests::{COMPONENT, ENVS, PROJECTS, platform_yaml, run};

    #[test]
    fn emits_gen_yaml_and_kustomization_per_plan() {
        // A component image must name a container's image (render refuses one that matches
        // nothing), so the component's resource is a Pod here.
        let comp = format!(
            "{}  images:\n  - {{name: app, repository: ghcr.io/x/app, tag: \"1.0\"}}\n",
            COMPONENT.replace(
                "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}",
                "{apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: [{name: c, image: app}]}}"
            )
        );
        let p = run(&platform_yaml(ENVS, PROJECTS), &comp).unwrap();
        let emit_all = |layout| {
            let mut plans = evaluate(&p, &Selection::default()).unwrap();
            let files = render(&mut plans, &p.sources, &RealFs, &|_, r| {
                Ok(emit_plan(&r()?, layout))
            })
            .unwrap();
            let components = ArtifactSet {
                files: files.into_iter().flatten().collect(),
            };
            emit(components, &p, &plans, None).unwrap()
        };
        let set = emit_all(Layout::Service);
        let paths: Vec<&str> = set.paths().collect();
        assert_eq!(
            paths,
            [
                "web/dev/a/a.gen.yaml",
                "web/dev/a/kustomization.yaml",
                "web/prod/a/a.gen.yaml",
                "web/prod/a/kustomization.yaml"
            ]
        );
        let kz = String::from_utf8(set.files["web/dev/a/kustomization.yaml"].clone()).unwrap();
        let kz_value = crate::yaml::parse_one("k", &kz).unwrap();
        assert_eq!(kz_value["resources"], json!(["a.gen.yaml"]));
        assert_eq!(
            kz_value["images"],
            json!([{"name": "ghcr.io/x/app", "newTag": "1.0"}])
        );
        let gen_yaml = String::from_utf8(set.files["web/dev/a/a.gen.yaml"].clone()).unwrap();
        let docs = crate::yaml::parse_stream("g", &gen_yaml).unwrap();
        assert_eq!(
            docs,
            [
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
                "spec": {"containers": [{"name": "c", "image": "ghcr.io/x/app:1.0"}]}})
            ]
        );
        let cluster = emit_all(Layout::Cluster);
        assert!(cluster.paths().all(|p| p.starts_with("clusters/c/web/")));
        assert_eq!(emit_all(Layout::Service), set, "deterministic");
    }
}
