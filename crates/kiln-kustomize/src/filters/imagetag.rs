//! The `images:` transformer: rewrites container image names, tags and digests.
//!
//! Sits in the transformer phase of a kustomization build. Each `images:` entry is one
//! kustomize `ImageTagTransformer` run, which applies two filters in turn
//! (api/filters/imagetag, v5.5):
//! 1. the *legacy* filter: every `image` inside any list under a `containers` or
//!    `initContainers` key, at any depth, in any kind (CronJobs, custom resources);
//! 2. the field-spec filter: the `images` field specs (`spec/containers[]/image`,
//!    `spec/template/spec/initContainers[]/image`, ... plus user `configurations:`).
//!
//! Both skip `CustomResourceDefinition` objects (kustomize#890). An image that a field spec
//! reaches is also reached by the legacy walk, so it is updated twice; this is invisible
//! except with `tagSuffix`, which kustomize v5.5 then appends twice (`nginx:1.2-debug-debug`
//! for a Deployment, once for a CronJob) -- mirrored on purpose. `ephemeralContainers` are not
//! touched, as in kustomize.
//!
//! A map/list/scalar where the walk expects another shape (`spec: x`, `containers: [x]`,
//! `image: {..}`) is an error, as in kustomize.
//!
//! Invariant: only string `image` values that match an entry's `name` change.

pub use crate::konfig::field_specs::IMAGES_FIELD_SPECS;
use crate::types::fieldspec::FieldSpec;
pub use crate::types::image::Image;
use crate::types::image_ref::ImageRef;
use kiln_base::resource::Resource;
use regex::Regex;
use serde_json::Value;

/// Errors of the images transformer.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ImagesError {
    /// A field on the way to an image has the wrong shape (kustomize: "expected sequence or
    /// mapping node", "wrong node kind").
    #[error(
        "cannot look for images at `{path}` in {resource}: found {found} where {expected} was expected"
    )]
    #[diagnostic(
        code(kiln::kustomize::images_field_shape_mismatch),
        help("container lists hold maps and `image` is a string; fix the resource")
    )]
    FieldShapeMismatch {
        path: String,
        resource: String,
        found: &'static str,
        expected: &'static str,
    },
}

fn shape(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// kustomize quirk (case kf30): its default field specs are `create: true`, and kyaml's path
/// walk turns an explicit `null` where a `[]` list is expected into an empty list (a missing
/// field stays missing). Only the four default paths do this: a CronJob's or an ephemeral
/// container list keeps its `null`.
fn nulls_become_lists(value: &mut Value) {
    for spec in IMAGES_FIELD_SPECS {
        let Some(list_path) = spec.path.split("[]").next() else {
            continue;
        };
        let pointer = format!("/{list_path}");
        if let Some(slot) = value.pointer_mut(&pointer)
            && slot.is_null()
        {
            *slot = Value::Array(Vec::new());
        }
    }
}

/// Applies every entry of `images`, in order, to every resource. `extra_field_specs` are the
/// user's additional `images` field specs (kustomization `configurations:`); the defaults
/// ([`IMAGES_FIELD_SPECS`]) always apply. Image values that are numbers or booleans are left
/// alone.
///
/// Errors: [`ImagesError::FieldShapeMismatch`] for a scalar where a container map or list is
/// expected, or a map/list as `image`.
pub fn apply_images(
    resources: &mut [Resource],
    images: &[Image],
    extra_field_specs: &[FieldSpec],
) -> Result<(), ImagesError> {
    let mut specs: Vec<FieldSpec> = IMAGES_FIELD_SPECS.to_vec();
    for fs in extra_field_specs {
        // kustomize merges field specs without duplicates (types.FsSlice.MergeAll).
        if !specs.iter().any(|s| {
            s.path == fs.path && s.kind == fs.kind && s.group == fs.group && s.version == fs.version
        }) {
            specs.push(fs.clone());
        }
    }
    for image in images {
        let matcher = ImageMatcher::new(&image.name);
        for res in resources.iter_mut() {
            if res.kind() == "CustomResourceDefinition" {
                continue;
            }
            // The id is only for the error: formatting it for every object and image was a
            // visible share of a large build, so the walk reports without it and it is
            // filled in here, on the error path.
            nulls_become_lists(&mut res.value);
            legacy_walk(&mut res.value, "", &mut |v| {
                update_image(v, image, &matcher)
            })
            .map_err(|e| match e {
                ImagesError::FieldShapeMismatch {
                    path,
                    found,
                    expected,
                    ..
                } => ImagesError::FieldShapeMismatch {
                    path,
                    resource: res.id().to_string(),
                    found,
                    expected,
                },
            })?;
            for fs in &specs {
                if fs.applies_to(res) {
                    let segs: Vec<&str> = fs.path.split('/').filter(|s| !s.is_empty()).collect();
                    check_shape(&res.value, &segs).map_err(|(found, expected)| {
                        ImagesError::FieldShapeMismatch {
                            path: fs.path.to_string(),
                            resource: res.id().to_string(),
                            found,
                            expected,
                        }
                    })?;
                    crate::filters::fieldspec::visit_path_mut(
                        &mut res.value,
                        &fs.path,
                        fs.create,
                        &mut |v| update_image(v, image, &matcher),
                    );
                }
            }
        }
    }
    Ok(())
}

/// Every string `image` value the transformer reaches with the default field specs (the
/// containers/initContainers walk covers them), in resource order; CRDs are skipped as in
/// [`apply_images`]. For callers that must know what an entry would match (kiln refuses a
/// component image that matches no container). Nothing is changed.
pub fn images_in(resources: &mut [Resource]) -> Vec<String> {
    let mut out = Vec::new();
    for res in resources.iter_mut() {
        if res.kind() == "CustomResourceDefinition" {
            continue;
        }
        // A shape error is reported by `apply_images`; here it only ends the walk.
        let _ = legacy_walk(&mut res.value, "", &mut |v| {
            if let Value::String(s) = v {
                out.push(s.clone());
            }
        });
    }
    out
}

/// Whether an entry named `name` selects the image reference `image` (kustomize's
/// `IsImageMatched`, see `ImageMatcher`).
pub fn name_matches(name: &str, image: &str) -> bool {
    ImageMatcher::new(name).is_match(image)
}

/// What `entry` makes of the image reference `image` (itself when the name does not match).
pub fn rewrite(image: &str, entry: &Image) -> String {
    let mut v = Value::String(image.to_string());
    update_image(&mut v, entry, &ImageMatcher::new(&entry.name));
    match v {
        Value::String(s) => s,
        _ => image.to_string(),
    }
}

/// kustomize's fsslice refuses a scalar on the way to the field, and a non-scalar image.
fn check_shape(value: &Value, segs: &[&str]) -> Result<(), (&'static str, &'static str)> {
    let Some((first, rest)) = segs.split_first() else {
        return match value {
            Value::Array(_) | Value::Object(_) => Err((shape(value), "a string")),
            _ => Ok(()),
        };
    };
    match value {
        Value::Null => Ok(()),
        Value::Array(items) => items.iter().try_for_each(|it| check_shape(it, segs)),
        Value::Object(map) => match map.get(first.trim_end_matches("[]")) {
            Some(child) => check_shape(child, rest),
            None => Ok(()),
        },
        _ => Err((shape(value), "a map or list")),
    }
}

/// kustomize's `image.IsImageMatched`: the regex `^<name>(:tag)?(@sha256:digest)?$`, built
/// from the *unescaped* name -- so `.` in a name matches any character
/// (`example.org/x` matches `exampleXorg/x`), mirrored on purpose.
///
/// Divergence: the digest may use any algorithm of the OCI digest grammar
/// (`algorithm := component ([+._-] component)*`, image-spec `descriptor.md`), so
/// `@sha512:` and `@sha384:` images are rewritten too; kustomize only knows `@sha256:` and
/// silently leaves the others alone (tests/kustomize/kf32, DIVERGENCES.md).
struct ImageMatcher {
    regex: Option<std::sync::Arc<Regex>>,
    literal: String,
    /// The name has no regex syntax but `.` (a registry host, a path): matched by
    /// [`plain_match`] without building the regex, which was 3 % of a render's CPU with a
    /// new image name per component (issue 38, item 8).
    plain: bool,
}

impl ImageMatcher {
    fn new(name: &str) -> Self {
        const TAIL: &str =
            "(:[a-zA-Z0-9_.{}-]*)?(@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_.{}-]*)?$";
        let plain = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '_' | ':' | '-'));
        if plain {
            return ImageMatcher {
                regex: None,
                literal: name.to_string(),
                plain,
            };
        }
        // A name that is not a valid regex makes kustomize panic; we fall back to a literal
        // match instead.
        let memo = crate::memo::regex;
        let regex = memo(&format!("^{name}{TAIL}"))
            .or_else(|_| memo(&format!("^{}{TAIL}", regex::escape(name))))
            .ok();
        ImageMatcher {
            regex,
            literal: name.to_string(),
            plain,
        }
    }

    fn is_match(&self, image: &str) -> bool {
        match &self.regex {
            _ if self.plain => plain_match(&self.literal, image),
            Some(re) => re.is_match(image),
            None => image == self.literal,
        }
    }
}

/// `^<name>(:[a-zA-Z0-9_.{}-]*)?(@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_.{}-]*)?$` for
/// a `name` of ASCII letters, digits and `./_:-` ([`ImageMatcher`]), without a regex: each
/// `.` of the name matches one character but a newline, the rest itself; the tag and digest
/// that may follow are read as the regex reads them (neither part can end another).
fn plain_match(name: &str, image: &str) -> bool {
    let mut chars = image.char_indices();
    for n in name.chars() {
        match chars.next() {
            Some((_, c)) if (n == '.' && c != '\n') || c == n => {}
            _ => return false,
        }
    }
    let mut rest = chars.as_str();
    let tag = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '{' | '}' | '-');
    if let Some(t) = rest.strip_prefix(':') {
        rest = t.trim_start_matches(tag);
    }
    let Some(digest) = rest.strip_prefix('@') else {
        return rest.is_empty();
    };
    // The algorithm: components of [a-z0-9]+ joined by one of `+._-`; then `:` and the hex.
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let component =
        |c: &str| !c.is_empty() && c.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9'));
    algorithm.split(['+', '.', '_', '-']).all(component)
        && hex
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '=' | '_' | '.' | '{' | '}' | '-'))
}

/// kustomize's `imageTagUpdater.SetImageValue`.
fn update_image(value: &mut Value, image: &Image, matcher: &ImageMatcher) {
    let Value::String(current) = value else {
        return;
    };
    if !matcher.is_match(current) {
        return;
    }
    let mut r = ImageRef::parse(current);
    if !image.new_name.is_empty() {
        r.name = image.new_name.clone();
    }
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    // "overriding tag or digest will replace both original tag and digest values"
    match (image.new_tag.is_empty(), image.digest.is_empty()) {
        (false, false) => (r.tag, r.digest) = (some(&image.new_tag), some(&image.digest)),
        (false, true) => (r.tag, r.digest) = (some(&image.new_tag), None),
        (true, false) => (r.tag, r.digest) = (None, some(&image.digest)),
        (true, true) if !image.tag_suffix.is_empty() => {
            // v5.5: the suffix goes onto the old tag (or onto nothing: `nginx` ->
            // `nginx:-debug`) and the digest is dropped.
            r.tag = Some(format!("{}{}", r.tag.unwrap_or_default(), image.tag_suffix));
            r.digest = None;
        }
        (true, true) => {}
    }
    *value = Value::String(r.to_string());
}

/// kustomize's `findFieldsFilter` over `containers`/`initContainers`: children first, then
/// every `image` of the list elements.
fn legacy_walk(
    value: &mut Value,
    resource: &str,
    f: &mut dyn FnMut(&mut Value),
) -> Result<(), ImagesError> {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                legacy_walk(child, resource, f)?;
                if (key == "containers" || key == "initContainers")
                    && let Value::Array(items) = child
                {
                    for item in items {
                        let mismatch = |found, expected| ImagesError::FieldShapeMismatch {
                            path: format!("{key}[]/image"),
                            resource: resource.to_string(),
                            found,
                            expected,
                        };
                        match item {
                            Value::Object(c) => match c.get_mut("image") {
                                Some(img @ (Value::Object(_) | Value::Array(_))) => {
                                    return Err(mismatch(shape(img), "a string"));
                                }
                                Some(img) => f(img),
                                None => {}
                            },
                            Value::Null => {}
                            other => return Err(mismatch(shape(other), "a map")),
                        }
                    }
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|it| legacy_walk(it, resource, f)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The matcher without a regex answers as the regex does (issue 38, item 8).
    #[test]
    fn plain_names_match_as_the_regex() {
        const TAIL: &str =
            "(:[a-zA-Z0-9_.{}-]*)?(@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_.{}-]*)?$";
        let names = [
            "nginx",
            "example.org/x",
            "a.b:5000/c-d_e",
            "x",
            "reg.io/p/c00001",
        ];
        let images = [
            "nginx",
            "nginx:1.2",
            "nginx:",
            "nginx:1.2@sha256:abc",
            "nginx@sha256:abc",
            "nginx@sha256:",
            "nginx@sha256",
            "nginx@:abc",
            "nginx@sha-256:abc",
            "nginx@sha--256:abc",
            "nginx@sha256-:abc",
            "nginx@-sha256:abc",
            "nginx@sha+256.x_y:AB=c{d}-e.f",
            "nginx@SHA256:abc",
            "nginx@sha256:ab:c",
            "nginx:1.2:3",
            "nginx:1@2",
            "nginx:tag@sha256:x@y",
            "nginx/x",
            "nginxx",
            "ngin",
            "",
            "nginx\n",
            "nginx:1\n",
            "example.org/x",
            "exampleXorg/x",
            "example\norg/x",
            "exampleéorg/x:1",
            "example.org/x:v1@sha512:00ff",
            "a.b:5000/c-d_e",
            "aXb:5000/c-d_e:latest",
            "reg.io/p/c00001:1.0.0",
            "reg.io/p/c000012",
            "x:{{a}}",
        ];
        for name in names {
            let re = Regex::new(&format!("^{name}{TAIL}")).unwrap();
            let m = ImageMatcher::new(name);
            assert!(m.plain && m.regex.is_none(), "{name}");
            for image in images {
                let image = image.replace(name.split(':').next().unwrap_or(name), name);
                for image in [
                    image.as_str(),
                    images[0],
                    &format!("{name}{}", &image.get(5..).unwrap_or("")),
                ] {
                    assert_eq!(m.is_match(image), re.is_match(image), "{name} {image:?}");
                }
            }
        }
    }

    fn res(v: Value) -> Resource {
        Resource::new(v, None)
    }

    fn entry(name: &str, new_name: &str, new_tag: &str, digest: &str) -> Image {
        Image {
            name: name.into(),
            new_name: new_name.into(),
            new_tag: new_tag.into(),
            digest: digest.into(),
            tag_suffix: String::new(),
        }
    }

    fn pod(images: &[&str]) -> Resource {
        let containers: Vec<Value> = images
            .iter()
            .map(|i| json!({"name": "c", "image": i}))
            .collect();
        res(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}}),
        )
    }

    fn images_of(r: &Resource) -> Vec<String> {
        r.value["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["image"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn registry_port_is_part_of_the_name() {
        let mut rs = vec![pod(&[
            "registry.local:5000/team/api",
            "registry.local:5000/team/api:1",
            "registry.local/team/api:1",
        ])];
        apply_images(
            &mut rs,
            &[entry("registry.local:5000/team/api", "", "2.4.0", "")],
            &[],
        )
        .unwrap();
        assert_eq!(
            images_of(&rs[0]),
            [
                "registry.local:5000/team/api:2.4.0",
                "registry.local:5000/team/api:2.4.0",
                "registry.local/team/api:1"
            ]
        );
    }

    #[test]
    fn tag_and_digest_combinations() {
        let mut rs = vec![pod(&[
            "a/web:1",
            "a/cache:7.0@sha256:bb",
            "a/queue@sha256:cc",
        ])];
        apply_images(
            &mut rs,
            &[
                entry("a/web", "", "v3", "sha256:aa"),
                entry("a/cache", "", "7.2", ""),
                entry("a/queue", "a/queue-ng", "", ""),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            images_of(&rs[0]),
            ["a/web:v3@sha256:aa", "a/cache:7.2", "a/queue-ng@sha256:cc"]
        );
    }

    #[test]
    fn unescaped_dot_matches_any_character_like_kustomize() {
        let mut rs = vec![pod(&["exampleXorg/x:1"])];
        apply_images(&mut rs, &[entry("example.org/x", "", "2", "")], &[]).unwrap();
        assert_eq!(images_of(&rs[0]), ["exampleXorg/x:2"]);
    }

    #[test]
    fn any_oci_digest_algorithm_matches() {
        // kf32: kustomize's matcher only knows `@sha256:`.
        let mut rs = vec![pod(&[
            "a/web@sha512:ab12",
            "a/web:1@sha384:cd",
            "a/web@bad",
        ])];
        apply_images(&mut rs, &[entry("a/web", "b/web", "2", "")], &[]).unwrap();
        assert_eq!(images_of(&rs[0]), ["b/web:2", "b/web:2", "a/web@bad"]);
    }

    #[test]
    fn tag_suffix_applies_per_walk() {
        let suffix = Image {
            name: "nginx".into(),
            tag_suffix: "-debug".into(),
            ..Image::default()
        };
        // A Pod's containers are reached by the legacy walk and by a field spec: twice.
        let mut rs = vec![pod(&["nginx:1"])];
        apply_images(&mut rs, std::slice::from_ref(&suffix), &[]).unwrap();
        assert_eq!(images_of(&rs[0]), ["nginx:1-debug-debug"]);
        // A CronJob's are reached by the legacy walk only: once; the digest is dropped.
        let mut rs = vec![res(
            json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "nginx@sha256:00"}]}}}}}}),
        )];
        apply_images(&mut rs, &[suffix], &[]).unwrap();
        assert_eq!(
            rs[0].value["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:-debug"
        );
    }

    #[test]
    fn deep_custom_resources_but_not_crds_or_ephemeral() {
        let mut rs = vec![
            res(
                json!({"apiVersion": "x.io/v1", "kind": "Foo", "metadata": {"name": "f"},
                "spec": {"a": [{"initContainers": [{"image": "busybox"}]}], "image": "busybox",
                         "ephemeralContainers": [{"image": "busybox"}]}}),
            ),
            res(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "foos.x.io"}, "spec": {"containers": [{"image": "busybox"}]}}),
            ),
        ];
        apply_images(&mut rs, &[entry("busybox", "", "1.36", "")], &[]).unwrap();
        assert_eq!(
            rs[0].value["spec"]["a"][0]["initContainers"][0]["image"],
            "busybox:1.36"
        );
        assert_eq!(rs[0].value["spec"]["image"], "busybox");
        assert_eq!(
            rs[0].value["spec"]["ephemeralContainers"][0]["image"],
            "busybox"
        );
        assert_eq!(rs[1].value["spec"]["containers"][0]["image"], "busybox");
    }

    #[test]
    fn extra_field_specs_reach_custom_paths() {
        let mut rs = vec![res(
            json!({"apiVersion": "x.io/v1", "kind": "Foo", "metadata": {"name": "f"},
            "spec": {"runner": {"image": "busybox"}}}),
        )];
        let extra = FieldSpec {
            kind: "Foo".into(),
            path: "spec/runner/image".into(),
            ..FieldSpec::default()
        };
        apply_images(&mut rs, &[entry("busybox", "", "2", "")], &[extra]).unwrap();
        assert_eq!(rs[0].value["spec"]["runner"]["image"], "busybox:2");
    }

    #[test]
    fn pin_renders_the_pinned_reference() {
        let pinned = [
            "registry.local:5000/team/api:1.4.2",
            "localhost:5000/worker@sha256:aa",
            "ghcr.io/example-org/web:2.0.0@sha256:bb",
            "redis:7.2",
        ];
        let mut rs = vec![pod(&[
            "registry.local:5000/team/api:0.1",
            "localhost:5000/worker:stable",
            "ghcr.io/example-org/web",
            "redis",
        ])];
        let entries: Vec<Image> = pinned
            .iter()
            .map(|p| Image::pin(&ImageRef::parse(p)))
            .collect();
        assert_eq!(entries[1].new_tag, "");
        assert_eq!(entries[1].digest, "sha256:aa");
        apply_images(&mut rs, &entries, &[]).unwrap();
        assert_eq!(images_of(&rs[0]), pinned);
    }

    #[test]
    fn malformed_shapes_are_errors_like_kustomize() {
        let bad = [
            json!({"spec": "x"}),
            json!({"spec": {"template": "x"}}),
            json!({"spec": {"containers": ["x"]}}),
            json!({"spec": {"containers": [{"image": {"a": "b"}}]}}),
            json!({"spec": {"x": {"initContainers": [7]}}}),
        ];
        for spec in bad {
            let mut v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
            v.as_object_mut()
                .unwrap()
                .extend(spec.as_object().unwrap().clone());
            let mut rs = vec![res(v.clone())];
            let err = apply_images(&mut rs, &[entry("nginx", "", "2", "")], &[]);
            assert!(
                matches!(err, Err(ImagesError::FieldShapeMismatch { .. })),
                "{v}"
            );
        }
        // A number as image, a null container list and a map as `containers` are accepted.
        let mut rs = vec![res(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": {"image": "nginx"}, "initContainers": null, "x": {"containers": [{"image": 5}]}}}),
        )];
        apply_images(&mut rs, &[entry("nginx", "", "2", "")], &[]).unwrap();
        assert_eq!(rs[0].value["spec"]["containers"]["image"], "nginx:2");
    }

    #[test]
    fn entry_parses_kustomize_fields() {
        let e: Image = serde_json::from_value(json!({"name": "a", "newName": "b", "newTag": "1", "digest": "sha256:0", "tagSuffix": "-x"})).unwrap();
        assert_eq!(e.new_name, "b");
        assert_eq!(e.tag_suffix, "-x");
        assert!(serde_json::from_value::<Image>(json!({"name": "a", "newTag": 2})).is_err());
        assert!(serde_json::from_value::<Image>(json!({"name": "a", "bogus": "x"})).is_err());
    }
}
