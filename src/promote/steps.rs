//! The pure part of each promotion step: its typed `config` (what Kargo's `convert` accepts)
//! and the transformations that need no disk or Git: the kustomization image merge, the
//! Argo CD source update and authorization, path resolution inside the work directory.
//!
//! Implemented from Kargo v1.11.2, `pkg/promotion/runner/builtin/`:
//! - `git_cloner.go` — [`GitCloneConfig`] (one of branch/commit/tag per checkout, unique `as`);
//! - `file_deleter.go` — [`DeleteConfig`] (`path` or `paths`, `strict`; globs not supported);
//! - `kustomize_image_setter.go` — [`KustomizeSetImageConfig`], [`merge_images`],
//!   [`set_image_commit_message`] (`buildTargetImagesFromConfig`, `mergeImages` with `*`);
//! - `kustomize_builder.go` — [`KustomizeBuildConfig`], [`kargo_file_name`];
//! - `git_commiter.go` — [`GitCommitConfig`];
//! - `git_pusher.go` — [`GitPushConfig`] (`maxAttempts` default 10);
//! - `argocd_updater.go` + `argocd_revisions.go` — [`ArgoCdUpdateConfig`], [`authorize`]
//!   (`pkg/api/stage.go` `AuthorizedStages`), [`desired_sources`] (`buildDesiredSources`,
//!   `applyArgoCDSourceUpdate`, `getDesiredRevisions`).
//!
//! Field names and required fields follow `pkg/x/promotion/runner/builtin/zz_config_types.go`.

use super::freight::normalize_git;
use serde::Deserialize;
use serde_json::{Value, json};

/// Turns an evaluated `config` into a typed one; unknown fields are errors, as Kargo's schemas
/// have `additionalProperties: false`.
pub fn convert<T: for<'de> Deserialize<'de>>(kind: &str, config: &Value) -> Result<T, String> {
    serde_json::from_value(config.clone()).map_err(|e| format!("invalid {kind} config: {e}"))
}

fn non_empty(kind: &str, field: &str, v: &str) -> Result<(), String> {
    if v.is_empty() {
        Err(format!(
            "invalid {kind} config: `{field}` must not be empty"
        ))
    } else {
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Author {
    pub name: String,
    pub email: String,
    #[serde(default)]
    pub signing_key: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GitCloneConfig {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    pub checkout: Vec<Checkout>,
    #[serde(default)]
    pub author: Option<Author>,
    #[serde(default)]
    pub blobless: bool,
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
    #[serde(default)]
    pub recurse_submodules: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Checkout {
    pub path: String,
    #[serde(default)]
    pub branch: String,
    #[serde(default)]
    pub commit: String,
    #[serde(default)]
    pub tag: String,
    #[serde(default)]
    pub create: bool,
    #[serde(default, rename = "as")]
    pub alias: String,
    #[serde(default)]
    pub sparse: Vec<String>,
}

/// What a checkout names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    Branch(String),
    Commit(String),
    Tag(String),
    /// None given: the remote's default branch.
    Default,
}

impl Checkout {
    pub fn reference(&self) -> Ref {
        if !self.branch.is_empty() {
            Ref::Branch(self.branch.clone())
        } else if !self.commit.is_empty() {
            Ref::Commit(self.commit.clone())
        } else if !self.tag.is_empty() {
            Ref::Tag(self.tag.clone())
        } else {
            Ref::Default
        }
    }
    /// The key of this checkout in the `commits` output: `as`, else `path`.
    pub fn key(&self) -> &str {
        if self.alias.is_empty() {
            &self.path
        } else {
            &self.alias
        }
    }
}

impl GitCloneConfig {
    pub fn parse(config: &Value) -> Result<Self, String> {
        let c: Self = convert("git-clone", config)?;
        non_empty("git-clone", "repoURL", &c.repo_url)?;
        if c.checkout.is_empty() {
            return Err("invalid git-clone config: `checkout` needs at least one entry".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, ch) in c.checkout.iter().enumerate() {
            non_empty("git-clone", "checkout[].path", &ch.path)?;
            let given = [&ch.branch, &ch.commit, &ch.tag]
                .iter()
                .filter(|s| !s.is_empty())
                .count();
            if given > 1 {
                return Err(format!(
                    "invalid git-clone config: checkout[{i}]: `branch`, `commit` and `tag` are mutually exclusive"
                ));
            }
            if !ch.alias.is_empty() && !seen.insert(ch.alias.clone()) {
                return Err(format!(
                    "duplicate checkout alias {:?} at checkout[{i}]",
                    ch.alias
                ));
            }
        }
        Ok(c)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteConfig {
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub paths_are_globs: bool,
    #[serde(default)]
    pub strict: bool,
}

impl DeleteConfig {
    pub fn parse(config: &Value) -> Result<Self, String> {
        let c: Self = convert("delete", config)?;
        if c.path.is_empty() == c.paths.is_empty() {
            return Err("invalid delete config: give exactly one of `path` and `paths`".into());
        }
        if c.paths_are_globs {
            return Err(
                "delete with `pathsAreGlobs` is not supported by kiln promote (literal paths only)"
                    .into(),
            );
        }
        Ok(c)
    }
    /// `path` first, then `paths`, as `fileDeleter.run` orders them.
    pub fn all_paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.path.is_empty() {
            out.push(self.path.clone());
        }
        out.extend(self.paths.iter().cloned());
        out
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KustomizeSetImageConfig {
    pub path: String,
    #[serde(default)]
    pub images: Vec<SetImage>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetImage {
    pub image: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub new_name: String,
    #[serde(default)]
    pub tag: String,
    #[serde(default)]
    pub digest: String,
}

impl KustomizeSetImageConfig {
    pub fn parse(config: &Value) -> Result<Self, String> {
        let c: Self = convert("kustomize-set-image", config)?;
        non_empty("kustomize-set-image", "path", &c.path)?;
        for (i, img) in c.images.iter().enumerate() {
            non_empty("kustomize-set-image", "images[].image", &img.image)?;
            // The schema's oneOf: exactly one of a non-empty tag and a non-empty digest.
            if img.tag.is_empty() == img.digest.is_empty() {
                return Err(format!(
                    "invalid kustomize-set-image config: images[{i}] ({}) needs exactly one of a non-empty `tag` and `digest` (got tag {:?}, digest {:?})",
                    img.image, img.tag, img.digest
                ));
            }
        }
        Ok(c)
    }
}

/// A kustomize `images[]` entry (`kustypes.Image`), fields in its declaration order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KusImage {
    pub name: String,
    pub new_name: String,
    pub tag_suffix: String,
    pub new_tag: String,
    pub digest: String,
}

impl KusImage {
    fn from_value(v: &Value) -> Result<Self, String> {
        let field = |k: &str| -> Result<String, String> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(Value::Number(n)) => Ok(n.to_string()),
                Some(Value::Bool(b)) => Ok(b.to_string()),
                Some(_) => Err(format!("images[].{k} must be a string")),
            }
        };
        if !v.is_object() {
            return Err("every `images` entry must be a mapping".into());
        }
        Ok(KusImage {
            name: field("name")?,
            new_name: field("newName")?,
            tag_suffix: field("tagSuffix")?,
            new_tag: field("newTag")?,
            digest: field("digest")?,
        })
    }
    fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (k, v) in [
            ("name", &self.name),
            ("newName", &self.new_name),
            ("tagSuffix", &self.tag_suffix),
            ("newTag", &self.new_tag),
            ("digest", &self.digest),
        ] {
            if !v.is_empty() {
                m.insert(k.into(), Value::String(v.clone()));
            }
        }
        Value::Object(m)
    }
}

/// `buildTargetImagesFromConfig`: one target per configured image, keyed by `name` (default
/// `image`); a digest wins over a tag.
pub fn target_images(images: &[SetImage]) -> std::collections::BTreeMap<String, KusImage> {
    let mut out = std::collections::BTreeMap::new();
    for img in images {
        let name = if img.name.is_empty() {
            img.image.clone()
        } else {
            img.name.clone()
        };
        let mut t = KusImage {
            name: name.clone(),
            new_name: img.new_name.clone(),
            ..Default::default()
        };
        if !img.digest.is_empty() {
            t.digest = img.digest.clone();
        } else {
            t.new_tag = img.tag.clone();
        }
        out.insert(name, t);
    }
    out
}

const PRESERVE: &str = "*";

/// `updateKustomizationFile` on a parsed kustomization: the current `images` merged with the
/// targets as `mergeImages` does — a target replaces the whole entry of the same name (only
/// `*` keeps the current newName/newTag/digest), other entries stay, and the list is sorted
/// by name. The field is replaced in place, or appended when absent.
pub fn merge_images(
    kustomization: &Value,
    mut targets: std::collections::BTreeMap<String, KusImage>,
) -> Result<Value, String> {
    let Some(map) = kustomization.as_object() else {
        return Err("the Kustomization file is not a mapping".into());
    };
    let current = match map.get("images") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(KusImage::from_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("could not decode images field in Kustomization file: {e}"))?,
        Some(_) => {
            return Err("could not decode images field in Kustomization file: not a list".into());
        }
    };
    for img in current {
        match targets.get_mut(&img.name) {
            Some(t) => {
                if t.new_name == PRESERVE {
                    t.new_name = img.new_name.clone();
                }
                if t.new_tag == PRESERVE {
                    t.new_tag = img.new_tag.clone();
                }
                if t.digest == PRESERVE {
                    t.digest = img.digest.clone();
                }
                // A target never carries the current entry's tagSuffix: Kargo builds it
                // fresh from the config.
            }
            None => {
                targets.insert(img.name.clone(), img);
            }
        }
    }
    // BTreeMap iteration is sorted by name: `slices.SortFunc(... strings.Compare(a.Name, …))`.
    let images: Vec<Value> = targets
        .into_values()
        .map(|mut v| {
            for f in [&mut v.new_name, &mut v.new_tag, &mut v.digest] {
                if f == PRESERVE {
                    f.clear();
                }
            }
            v.to_value()
        })
        .collect();
    let mut out = map.clone();
    out.insert("images".into(), Value::Array(images));
    Ok(Value::Object(out))
}

/// `generateCommitMessage` of kustomize-set-image (its `commitMessage` output).
pub fn set_image_commit_message(
    path: &str,
    targets: &std::collections::BTreeMap<String, KusImage>,
) -> Option<String> {
    if targets.is_empty() {
        return None;
    }
    let mut msg = format!("Updated {path} to use new image");
    if targets.len() > 1 {
        msg.push('s');
    }
    msg.push('\n');
    for i in targets.values() {
        let mut r = if i.new_name.is_empty() {
            i.name.clone()
        } else {
            i.new_name.clone()
        };
        if !i.new_tag.is_empty() {
            r = format!("{r}:{}", i.new_tag);
        }
        if !i.digest.is_empty() {
            r = format!("{r}@{}", i.digest);
        }
        msg.push_str(&format!("\n- {r}"));
    }
    Some(msg)
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KustomizeBuildConfig {
    pub path: String,
    pub out_path: String,
    #[serde(default)]
    pub output_format: Option<String>,
    #[serde(default)]
    pub plugin: Option<Value>,
}

impl KustomizeBuildConfig {
    pub fn parse(config: &Value) -> Result<Self, String> {
        let c: Self = convert("kustomize-build", config)?;
        non_empty("kustomize-build", "path", &c.path)?;
        non_empty("kustomize-build", "outPath", &c.out_path)?;
        if let Some(f) = &c.output_format
            && f != "kargo"
            && f != "kustomize"
        {
            return Err(format!(
                "invalid kustomize-build config: outputFormat must be `kargo` or `kustomize`, got {f:?}"
            ));
        }
        Ok(c)
    }
    /// `writeResult`: a `.yaml`/`.yml` outPath is one file, anything else a directory.
    pub fn single_file(&self) -> bool {
        self.out_path.ends_with(".yaml") || self.out_path.ends_with(".yml")
    }
}

/// `fileNameKargo`: `[namespace-]kind-name.yaml`, lower case.
pub fn kargo_file_name(resource: &Value) -> String {
    let s = |p: &str| resource.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (kind, ns, name) = (s("/kind"), s("/metadata/namespace"), s("/metadata/name"));
    if ns.is_empty() {
        format!("{kind}-{name}.yaml").to_lowercase()
    } else {
        format!("{ns}-{kind}-{name}.yaml").to_lowercase()
    }
}

/// `fileNameKustomize`: `[namespace_]group_version_kind_name.yaml` (namespace only when the
/// build spans several namespaces).
pub fn kustomize_file_name(resource: &Value, multiple_namespaces: bool) -> String {
    let s = |p: &str| resource.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (group, version) = match s("/apiVersion").split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), s("/apiVersion").to_string()),
    };
    let gvk: Vec<&str> = [group.as_str(), version.as_str(), s("/kind")]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    let base = format!("{}_{}.yaml", gvk.join("_"), s("/metadata/name")).to_lowercase();
    let ns = s("/metadata/namespace");
    if multiple_namespaces && !ns.is_empty() {
        format!("{}_{base}", ns.to_lowercase())
    } else {
        base
    }
}

/// `validateGeneratedResourceFilename`: a plain file name.
pub fn check_generated_file_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.contains('/')
        || name.contains('\\')
        || name == "."
        || name == ".."
        || name.contains('\0')
    {
        return Err(format!("refusing to write resource file {name:?}"));
    }
    Ok(())
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GitCommitConfig {
    pub path: String,
    pub message: String,
    #[serde(default)]
    pub author: Option<Author>,
}

impl GitCommitConfig {
    pub fn parse(config: &Value) -> Result<Self, String> {
        let c: Self = convert("git-commit", config)?;
        non_empty("git-commit", "path", &c.path)?;
        non_empty("git-commit", "message", &c.message)?;
        Ok(c)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GitPushConfig {
    pub path: String,
    #[serde(default)]
    pub target_branch: String,
    #[serde(default)]
    pub generate_target_branch: bool,
    #[serde(default)]
    pub force: bool,
    #[serde(default)]
    pub max_attempts: Option<u32>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub tag: String,
}

/// `git_pusher.go`: retry.OnError with `Steps: 10` unless `maxAttempts` says otherwise.
pub const DEFAULT_PUSH_ATTEMPTS: u32 = 10;

impl GitPushConfig {
    pub fn parse(config: &Value) -> Result<Self, String> {
        let c: Self = convert("git-push", config)?;
        non_empty("git-push", "path", &c.path)?;
        if c.generate_target_branch && !c.target_branch.is_empty() {
            return Err(
                "invalid git-push config: `targetBranch` and `generateTargetBranch` are mutually exclusive"
                    .into(),
            );
        }
        if c.force || !c.tag.is_empty() {
            return Err(
                "git-push with `force` or `tag` is not supported by kiln promote (kiln never force-pushes)"
                    .into(),
            );
        }
        Ok(c)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArgoCdUpdateConfig {
    pub apps: Vec<AppUpdate>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AppUpdate {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub selector: Option<Value>,
    #[serde(default)]
    pub sources: Vec<SourceUpdate>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceUpdate {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    #[serde(default)]
    pub chart: String,
    #[serde(default)]
    pub desired_revision: String,
    #[serde(default)]
    pub update_target_revision: bool,
    #[serde(default)]
    pub kustomize: Option<Value>,
    #[serde(default)]
    pub helm: Option<Value>,
}

/// Argo CD's default namespace when an update names none (`libargocd.Namespace()`).
pub const DEFAULT_ARGOCD_NAMESPACE: &str = "argocd";

impl ArgoCdUpdateConfig {
    pub fn parse(config: &Value) -> Result<Self, String> {
        let c: Self = convert("argocd-update", config)?;
        if c.apps.is_empty() {
            return Err("invalid argocd-update config: `apps` needs at least one entry".into());
        }
        for a in &c.apps {
            if a.selector.is_some() {
                return Err(
                    "argocd-update with `selector` is not supported by kiln promote (name Applications)"
                        .into(),
                );
            }
            non_empty("argocd-update", "apps[].name", &a.name)?;
            for s in &a.sources {
                if s.kustomize.is_some() || s.helm.is_some() {
                    return Err(format!(
                        "argocd-update of Application {:?}: `kustomize`/`helm` source updates are not supported by kiln promote",
                        a.name
                    ));
                }
            }
        }
        Ok(c)
    }
}

/// `authorizeArgoCDAppUpdate` with `AuthorizedStages`: the Application's
/// `kargo.akuity.io/authorized-stage` annotation (a comma-separated list of
/// `<project>:<stage>`) must name this Stage.
pub fn authorize(app: &Value, project: &str, stage: &str) -> Result<(), String> {
    let name = app
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ns = app
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let denied = || {
        format!(
            "Argo CD Application {name:?} in namespace {ns:?} does not permit mutation by Kargo Stage {stage} in namespace {project}"
        )
    };
    let Some(value) = app
        .pointer(&format!(
            "/metadata/annotations/{}",
            kiln_base::pointer::escape(crate::kargo::AUTHORIZED_STAGE)
        ))
        .and_then(Value::as_str)
    else {
        return Err(denied());
    };
    let mut any = false;
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (p, s) = entry.split_once(':').unwrap_or((entry, ""));
        let (p, s) = (p.trim(), s.trim());
        if p.is_empty() || s.is_empty() {
            return Err(format!(
                "invalid authorized Stage {entry:?} on Application {name:?}: expected format \"<project>:<stage>\""
            ));
        }
        if p.contains('*') || s.contains('*') {
            return Err(format!(
                "invalid authorized Stage {entry:?} on Application {name:?}: deprecated glob expressions are no longer supported"
            ));
        }
        any = true;
        if p == project && s == stage {
            return Ok(());
        }
    }
    if !any {
        return Err(format!("no authorized Stages found in {value:?}"));
    }
    Err(denied())
}

/// The Application's sources as a list (`spec.sources`, else `[spec.source]`).
pub fn app_sources(app: &Value) -> Vec<Value> {
    match app.pointer("/spec/sources").and_then(Value::as_array) {
        Some(s) if !s.is_empty() => s.clone(),
        _ => app
            .pointer("/spec/source")
            .filter(|s| s.is_object())
            .map(|s| vec![s.clone()])
            .unwrap_or_default(),
    }
}

fn str_field<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// `getDesiredRevisions`: per source of the Application, the `desiredRevision` of the first
/// update whose repoURL (and chart) equals the source's, literally; `""` where none.
pub fn desired_revisions(update: &AppUpdate, sources: &[Value]) -> Vec<String> {
    sources
        .iter()
        .map(|src| {
            update
                .sources
                .iter()
                .find(|u| {
                    u.repo_url == str_field(src, "repoURL") && u.chart == str_field(src, "chart")
                })
                .map(|u| u.desired_revision.clone())
                .unwrap_or_default()
        })
        .collect()
}

/// `buildDesiredSources`: every source update must apply to one source (Git sources match on
/// the normalized URL); `updateTargetRevision` with a desired revision pins `targetRevision`.
pub fn desired_sources(
    app_name: &str,
    update: &AppUpdate,
    sources: &[Value],
) -> Result<Vec<Value>, String> {
    let revisions = desired_revisions(update, sources);
    let mut out = sources.to_vec();
    'updates: for u in &update.sources {
        for (j, src) in out.iter_mut().enumerate() {
            let applies = if !str_field(src, "chart").is_empty() || !u.chart.is_empty() {
                str_field(src, "repoURL") == u.repo_url && str_field(src, "chart") == u.chart
            } else {
                normalize_git(str_field(src, "repoURL")) == normalize_git(&u.repo_url)
            };
            if !applies {
                continue;
            }
            if u.update_target_revision && !revisions[j].is_empty() {
                src["targetRevision"] = json!(revisions[j]);
            }
            continue 'updates;
        }
        return Err(format!(
            "no source of Argo CD Application {app_name:?} matched update for source with repoURL {}",
            u.repo_url
        ));
    }
    Ok(out)
}

/// Writes `sources` back where the Application keeps them (`spec.sources` or `spec.source`).
pub fn set_app_sources(app: &mut Value, sources: Vec<Value>) {
    let multi = app
        .pointer("/spec/sources")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty());
    if multi {
        app["spec"]["sources"] = Value::Array(sources);
    } else if let Some(first) = sources.into_iter().next() {
        app["spec"]["source"] = first;
    }
}

/// A path from a step config, relative to the work directory: lexically normalized, and an
/// error when it leaves the work directory (`securejoin` clamps instead; kiln refuses).
pub fn work_path(path: &str) -> Result<String, String> {
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "path {path:?} attempts to traverse outside the working directory"
                    ));
                }
            }
            s => parts.push(s),
        }
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn set_image(image: &str, tag: &str, digest: &str) -> SetImage {
        SetImage {
            image: image.into(),
            name: String::new(),
            new_name: String::new(),
            tag: tag.into(),
            digest: digest.into(),
        }
    }

    #[test]
    fn set_image_replaces_the_matching_entry_keeps_others_and_sorts() {
        let kus = json!({
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "images": [
                { "name": "z/other", "newTag": "9" },
                { "name": "reg/app", "newName": "mirror/app", "newTag": "1.0.0", "digest": "sha256:old" },
            ],
            "kind": "Kustomization",
        });
        let targets = target_images(&[set_image("reg/app", "2.0.0", "")]);
        let out = merge_images(&kus, targets.clone()).unwrap();
        assert_eq!(
            out["images"],
            json!([{ "name": "reg/app", "newTag": "2.0.0" }, { "name": "z/other", "newTag": "9" }]),
            "the whole entry is replaced: newName and digest are gone"
        );
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["apiVersion", "images", "kind"], "replaced in place");
        assert_eq!(
            set_image_commit_message("./src/x", &targets).unwrap(),
            "Updated ./src/x to use new image\n\n- reg/app:2.0.0"
        );

        let mut keep = set_image("reg/app", "", "sha256:new");
        keep.new_name = "*".into();
        let out = merge_images(&kus, target_images(&[keep])).unwrap();
        assert_eq!(
            out["images"][0],
            json!({ "name": "reg/app", "newName": "mirror/app", "digest": "sha256:new" })
        );

        let bare = json!({ "kind": "Kustomization" });
        let out = merge_images(&bare, target_images(&[set_image("a", "1", "")])).unwrap();
        assert_eq!(out["images"], json!([{ "name": "a", "newTag": "1" }]));
    }

    #[test]
    fn set_image_config_needs_exactly_one_of_tag_and_digest() {
        let ok = json!({ "path": "./src", "images": [{ "image": "a", "tag": "1" }] });
        assert!(KustomizeSetImageConfig::parse(&ok).is_ok());
        let both = json!({ "path": "./src", "images": [{ "image": "a", "tag": "1", "digest": "sha256:x" }] });
        assert!(KustomizeSetImageConfig::parse(&both).is_err());
        let empty = json!({ "path": "./src", "images": [{ "image": "a", "digest": "" }] });
        let e = KustomizeSetImageConfig::parse(&empty).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        let unknown = json!({ "path": "./src", "imagez": [] });
        assert!(KustomizeSetImageConfig::parse(&unknown).is_err());
    }

    #[test]
    fn authorized_stage_annotation_is_a_list_of_project_stage() {
        let app = |v: &str| {
            json!({ "metadata": { "name": "a", "namespace": "argocd",
                "annotations": { "kargo.akuity.io/authorized-stage": v } } })
        };
        assert!(authorize(&app("web:dev"), "web", "dev").is_ok());
        assert!(authorize(&app("web:test, web:dev"), "web", "dev").is_ok());
        assert!(authorize(&app("web:test"), "web", "dev").is_err());
        assert!(
            authorize(&app("web:*"), "web", "dev")
                .unwrap_err()
                .contains("glob")
        );
        assert!(authorize(&json!({ "metadata": {} }), "web", "dev").is_err());
    }

    #[test]
    fn update_target_revision_pins_the_matching_git_source() {
        let sources =
            vec![json!({ "repoURL": "https://git/x.git", "targetRevision": "main", "path": "p" })];
        let update = |pin: bool, url: &str| AppUpdate {
            name: "a".into(),
            namespace: String::new(),
            selector: None,
            sources: vec![SourceUpdate {
                repo_url: url.into(),
                chart: String::new(),
                desired_revision: "abc".into(),
                update_target_revision: pin,
                kustomize: None,
                helm: None,
            }],
        };
        let out = desired_sources("a", &update(true, "https://git/x.git"), &sources).unwrap();
        assert_eq!(out[0]["targetRevision"], "abc");
        let out = desired_sources("a", &update(false, "https://git/x.git"), &sources).unwrap();
        assert_eq!(out[0]["targetRevision"], "main");
        // Normalized for the match, but desiredRevision is looked up literally.
        let out = desired_sources("a", &update(true, "https://GIT/x"), &sources).unwrap();
        assert_eq!(out[0]["targetRevision"], "main");
        assert!(desired_sources("a", &update(true, "https://git/y"), &sources).is_err());
        assert_eq!(
            desired_revisions(&update(true, "https://git/x.git"), &sources),
            ["abc"]
        );
    }

    #[test]
    fn work_paths_never_leave_the_work_directory() {
        assert_eq!(work_path("./out/envs/../dev").unwrap(), "out/dev");
        assert!(work_path("../etc").is_err());
        assert!(work_path("./a/../../b").is_err());
        let _ = BTreeMap::<String, String>::new();
    }

    #[test]
    fn file_names_follow_kargo_and_kustomize_formats() {
        let r = json!({ "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "Web", "namespace": "ns" } });
        assert_eq!(kargo_file_name(&r), "ns-deployment-web.yaml");
        assert_eq!(
            kustomize_file_name(&r, false),
            "apps_v1_deployment_web.yaml"
        );
        assert_eq!(
            kustomize_file_name(&r, true),
            "ns_apps_v1_deployment_web.yaml"
        );
        assert!(check_generated_file_name("../x").is_err());
    }
}
