//! The field-spec walker (kustomize `api/filters/fieldspec/fieldspec.go` and
//! `kyaml/utils/pathsplitter.go`): the one walk of the engine along a field-spec path, used by
//! every filter that takes field specs (labels, annotations, images, prefixes, namespaces) and
//! by the name-reference filter.
//!
//! The path splits on `/`, `\\/` being a slash inside a key (`PathSplitter`); lists met on the
//! way are walked element by element, so `spec/template/spec/containers/image` reaches every
//! container's image. Invariant: the walk never creates anything unless `create` is set, and
//! then only maps along the path (never lists).

use serde_json::{Map, Value};

/// kustomize's `PathSplitter` on `/`: `\\/` is a literal slash inside a key. Empty segments
/// (a leading, trailing or doubled `/`) are dropped.
pub fn split_path(path: &str) -> Vec<String> {
    let mut segs = vec![String::new()];
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'/') => {
                chars.next();
                segs.last_mut().expect("non-empty").push('/');
            }
            '/' => segs.push(String::new()),
            c => segs.last_mut().expect("non-empty").push(c),
        }
    }
    segs.retain(|s| !s.is_empty());
    segs
}

/// Calls `f` on every value at the slash-separated `path` in `value` (see [`visit`]).
/// Returns the number of fields visited.
pub fn visit_path_mut(
    value: &mut Value,
    path: &str,
    create: bool,
    f: &mut dyn FnMut(&mut Value),
) -> usize {
    visit(value, &split_path(path), create, f)
}

/// Calls `f` on every value at the path `segs` in `value`, walking lists implicitly; with
/// `create`, missing maps on the way and the final field (as `Null`, so `f` can fill it) are
/// created. Without `create`, missing fields, nulls and scalars on the way end the walk
/// quietly; the value at the end (which may be `null`) is handed to `f` as is.
pub fn visit<S: AsRef<str>>(
    value: &mut Value,
    segs: &[S],
    create: bool,
    f: &mut dyn FnMut(&mut Value),
) -> usize {
    let Some((first, rest)) = segs.split_first() else {
        f(value);
        return 1;
    };
    match value {
        // kustomize walks list elements implicitly; a `[]` marker is tolerated too.
        Value::Array(items) => items.iter_mut().map(|it| visit(it, segs, create, f)).sum(),
        Value::Object(map) => {
            let first = first.as_ref();
            let key = first.trim_end_matches("[]");
            // A segment marked `[]` names a list, which kustomize never creates (a StatefulSet
            // without `volumeClaimTemplates` does not get one from commonLabels).
            let creatable = create && !first.ends_with("[]");
            if !map.contains_key(key) {
                if !creatable {
                    return 0;
                }
                let fresh = if rest.is_empty() {
                    Value::Null
                } else {
                    Value::Object(Map::new())
                };
                map.insert(key.to_string(), fresh);
            }
            let child = map.get_mut(key).expect("present");
            if child.is_null() && !rest.is_empty() {
                if !creatable {
                    return 0;
                }
                *child = Value::Object(Map::new());
            }
            visit(child, rest, create, f)
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaped_slash_is_part_of_the_key() {
        assert_eq!(
            split_path("metadata/annotations/nginx.ingress.kubernetes.io\\/auth-secret"),
            [
                "metadata",
                "annotations",
                "nginx.ingress.kubernetes.io/auth-secret"
            ]
        );
        let mut v = json!({"metadata": {"annotations": {"a.io/b": "x"}}});
        let n = visit_path_mut(&mut v, "metadata/annotations/a.io\\/b", false, &mut |x| {
            *x = json!("y")
        });
        assert_eq!(
            (n, &v["metadata"]["annotations"]["a.io/b"]),
            (1, &json!("y"))
        );
    }

    #[test]
    fn walks_lists_and_creates_maps() {
        let mut v = json!({"spec": {"template": {"spec": {"containers": [{"image": "a"}, {"image": "b"}]}}}});
        let mut seen = vec![];
        let n = visit_path_mut(
            &mut v,
            "spec/template/spec/containers/image",
            false,
            &mut |x| seen.push(x.as_str().unwrap().to_string()),
        );
        assert_eq!(n, 2);
        assert_eq!(seen, ["a", "b"]);

        let mut v = json!({"metadata": {}});
        visit_path_mut(&mut v, "spec/selector/matchLabels", true, &mut |x| {
            *x = json!({"a": "b"})
        });
        assert_eq!(v["spec"]["selector"]["matchLabels"]["a"], "b");

        let mut v = json!({"spec": {}});
        let n = visit_path_mut(
            &mut v,
            "spec/volumeClaimTemplates[]/metadata/labels",
            true,
            &mut |_| {},
        );
        assert_eq!(n, 0);
        assert_eq!(v, json!({"spec": {}}));

        let mut v = json!({"metadata": {}});
        let n = visit_path_mut(&mut v, "spec/selector", false, &mut |_| {});
        assert_eq!(n, 0);
        assert!(v.get("spec").is_none());
    }
}
