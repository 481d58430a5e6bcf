//! The Warehouse of a promotion unit (a component, or a whole project in project mode): one
//! image subscription per distinct image of its components and one git subscription to the
//! source repository limited to their rendered folders, with every server default written
//! out.
//!
//! Defaults written out (Kargo v1.11.2: CRD defaults for `spec`, subscription-schema defaults
//! for subscriptions): `interval: 5m0s`, `freightCreationPolicy: Automatic`; image:
//! `imageSelectionStrategy`, `strictSemvers: true`, `discoveryLimit: 20`, `cacheByTag: false`;
//! git: `commitSelectionStrategy: NewestFromBranch`, `strictSemvers: true`,
//! `discoveryLimit: 20`. Image subscriptions use `constraint`, never the removed
//! `semverConstraint`.

use super::{
    Component, Input, KargoError, Pair, Project, SYNC_WAVE, Strategy, constraint, naming,
    normalize_repo, object, snippet, wave,
};
use crate::kustomize::types::image_ref::ImageRef;
use crate::resource::Resource;
use regex::Regex;
use serde_json::{Value, json};
use std::sync::LazyLock;

/// Kargo's ImageSubscription `repoURL` pattern (subscription-schemas/image.json).
static IMAGE_REPO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\w+([\.-]\w+)*(:[\d]+)?/)?(\w+([\.-]\w+)*)(/\w+([\.-]\w+)*)*$")
        .expect("valid regex")
});

/// The repository a Warehouse subscribes to for an image reference: the reference without
/// tag and digest, keeping the registry port and every path segment (case g02:
/// `registry.local:5000/team/api:1.4.2` → `registry.local:5000/team/api`; `redis` stays
/// `redis`, never `docker.io/library/redis`, or kustomize could no longer match the name).
pub fn repo_url(repository: &str) -> String {
    ImageRef::parse(repository).name
}

/// Builds the Warehouse `unit` of `components` (their `pairs`).
///
/// Errors: constraints that do not parse, repositories Kargo rejects, digest-pinned images
/// without a tag to follow.
pub(super) fn warehouse(
    input: &Input<'_>,
    project: &Project,
    unit: &str,
    components: &[&Component],
    pairs: &[&Pair<'_>],
) -> Result<Resource, Vec<KargoError>> {
    let mut errors = Vec::new();
    let mut subscriptions: Vec<Value> = Vec::new();
    for component in components {
        image_subscriptions(input, project, component, &mut subscriptions, &mut errors);
    }
    if let Some(source) = &input.platform.source.repo_url {
        subscriptions
            .push(json!({ "git": git_subscription(input, source, project, components, pairs) }));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut labels = json!({ "app.kubernetes.io/managed-by": "kiln" });
    if project.promotion != crate::spec::PromotionUnit::Project {
        labels["kiln.dev/component"] = json!(unit);
    }
    Ok(object(
        super::KARGO_API,
        "Warehouse",
        json!({
            "name": naming::warehouse_name(unit),
            "namespace": project.name,
            "annotations": { SYNC_WAVE: wave::WAREHOUSE },
            "labels": labels,
        }),
        Some(json!({
            "freightCreationPolicy": "Automatic",
            "interval": "5m0s",
            "subscriptions": subscriptions,
        })),
    ))
}

/// Appends the image subscriptions of `component` to `subscriptions`, skipping one equal to
/// a subscription already there (two components shipping one image share it).
fn image_subscriptions(
    input: &Input<'_>,
    project: &Project,
    component: &Component,
    subscriptions: &mut Vec<Value>,
    errors: &mut Vec<KargoError>,
) {
    let images_loc = crate::diag::Loc::new(component.component.file, "/spec/images");
    for (i, img) in input.images(project, component).iter().enumerate() {
        let at_image = |field: &str| images_loc.join(i).join(field);
        let strategy = super::image_strategy(img);
        let repo = repo_url(&img.repository);
        if !IMAGE_REPO.is_match(&repo) {
            let (at, src, span) = snippet(input.sources(), &at_image("repository"));
            errors.push(KargoError::ImageRepositoryInvalid {
                component: component.name.clone(),
                image: img.name.clone(),
                repository: img.repository.clone(),
                at,
                src,
                span,
            });
        }
        let mut sub = serde_json::Map::new();
        sub.insert("repoURL".into(), json!(repo));
        sub.insert("imageSelectionStrategy".into(), json!(strategy.as_str()));
        match strategy {
            Strategy::SemVer => {
                if let Some(c) = &img.constraint {
                    if let Err(e) = constraint::parse(c) {
                        let (at, src, span) = snippet(input.sources(), &at_image("constraint"));
                        errors.push(KargoError::ConstraintInvalid {
                            component: component.name.clone(),
                            image: img.name.clone(),
                            constraint: c.clone(),
                            message: e.to_string(),
                            at,
                            src,
                            span,
                        });
                    }
                    sub.insert("constraint".into(), json!(c));
                }
            }
            Strategy::Digest => {
                // The mutable tag to follow: the constraint, else the base tag.
                match img.constraint.as_ref().or(img.tag.as_ref()) {
                    Some(tag) if !crate::validate::is_oci_tag(tag) => {
                        let (at, src, span) = snippet(input.sources(), &at_image("constraint"));
                        errors.push(KargoError::DigestConstraintNotTag {
                            component: component.name.clone(),
                            image: img.name.clone(),
                            constraint: tag.clone(),
                            at,
                            src,
                            span,
                        });
                    }
                    Some(tag) => {
                        sub.insert("constraint".into(), json!(tag));
                    }
                    None => {
                        let (at, src, span) = snippet(input.sources(), &at_image("digest"));
                        errors.push(KargoError::DigestTagMissing {
                            component: component.name.clone(),
                            image: img.name.clone(),
                            at,
                            src,
                            span,
                        });
                    }
                }
            }
            Strategy::Lexical | Strategy::NewestBuild => {
                if let Some(c) = &img.constraint {
                    sub.insert("constraint".into(), json!(c));
                }
            }
        }
        sub.insert("strictSemvers".into(), json!(true));
        sub.insert("discoveryLimit".into(), json!(20));
        sub.insert("cacheByTag".into(), json!(false));
        let sub = json!({ "image": Value::Object(sub) });
        if !subscriptions.contains(&sub) {
            subscriptions.push(sub);
        }
    }
}

/// Escapes a literal for a Go (RE2) regular expression.
fn regex_escape(s: &str) -> String {
    s.chars().fold(String::new(), |mut out, c| {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// The git subscription to the source repository: only commits that touch the rendered
/// folders of `components` (in any environment) make Freight. Folders that promotions write
/// into the same repository and branch are excluded, so a promotion never feeds back into
/// new Freight.
fn git_subscription(
    input: &Input<'_>,
    source: &str,
    project: &Project,
    components: &[&Component],
    mine: &[&Pair<'_>],
) -> Value {
    // One selector over all environments: Kargo path selectors are prefixes, `glob:` or
    // `regexp:` (unanchored RE2, hence `^`). The environment segment varies.
    let root = super::join_path(&[&input.platform.source.rendered_path]);
    let prefix = if root.is_empty() {
        String::new()
    } else {
        format!("{}/", regex_escape(&root))
    };
    let project = regex_escape(&project.name);
    let include: Vec<String> = components
        .iter()
        .map(|c| {
            let component = regex_escape(&c.name);
            match input.opts.layout {
                super::Layout::Service => {
                    format!("regexp:^{prefix}{project}/[^/]+/{component}/")
                }
                super::Layout::Cluster => {
                    format!("regexp:^{prefix}clusters/[^/]+/{project}/[^/]+/{component}/")
                }
            }
        })
        .collect();
    let mut excludes: Vec<String> = mine
        .iter()
        .filter_map(|p| p.target.as_ref())
        .filter(|t| {
            normalize_repo(&t.repo_url) == normalize_repo(source)
                && t.branch == input.platform.source.branch
        })
        .map(|t| format!("{}/", t.path))
        .collect();
    excludes.sort();
    excludes.dedup();
    let mut git = json!({
        "repoURL": source,
        "branch": input.platform.source.branch,
        "commitSelectionStrategy": "NewestFromBranch",
        "strictSemvers": true,
        "discoveryLimit": 20,
        "includePaths": include,
    });
    if !excludes.is_empty() {
        git["excludePaths"] = json!(excludes);
    }
    git
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_url_drops_tag_and_digest_but_keeps_port_and_path() {
        // Case g02.
        assert_eq!(
            repo_url("registry.local:5000/team/api:1.4.2"),
            "registry.local:5000/team/api"
        );
        assert_eq!(
            repo_url("localhost:5000/worker@sha256:aaaa"),
            "localhost:5000/worker"
        );
        assert_eq!(
            repo_url("ghcr.io/example-org/web:2.0.0@sha256:bbbb"),
            "ghcr.io/example-org/web"
        );
        assert_eq!(
            repo_url("harbor.example.test/library/ui:3.1.0"),
            "harbor.example.test/library/ui"
        );
        assert_eq!(repo_url("redis:7.2"), "redis");
        for r in [
            "registry.local:5000/team/api",
            "localhost:5000/worker",
            "redis",
            "harbor.example.test/library/ui",
        ] {
            assert!(IMAGE_REPO.is_match(r), "{r}");
        }
        assert!(!IMAGE_REPO.is_match("redis:7.2"));
    }

    #[test]
    fn regex_escape_escapes_metacharacters() {
        assert_eq!(regex_escape("a.b+c"), r"a\.b\+c");
    }
}
