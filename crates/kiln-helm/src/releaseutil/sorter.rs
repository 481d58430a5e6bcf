//! What `helm template --include-crds` prints, after Helm v4.2.3
//! `pkg/release/v1/util/manifest_sorter.go` (`SortManifests`, `InstallOrder`),
//! `pkg/release/v1/util/manifest.go` (`SplitManifests`), `pkg/action/action.go`
//! (`renderResources`) and `pkg/cmd/template.go`: CRD files verbatim, then manifests in
//! template-path order stable-sorted by kind, then hooks in the same order.

use crate::template::fmt::strval;
use crate::template::value::Dict;
use crate::template::value::Value;
use crate::yaml;
use std::collections::BTreeMap;

/// Kubernetes kinds in Helm's install order.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// One document of the stream.
#[derive(Debug, Clone)]
pub struct Doc {
    pub source: String,
    pub text: String,
    pub kind: String,
    pub hook: bool,
    /// A hook for the `test` event (`helm template --skip-tests` leaves it out).
    pub test: bool,
}

/// A document that is not YAML: Helm's `"YAML parse error on <file>"`.
#[derive(Debug, Clone)]
pub struct ParseError {
    pub file: String,
    pub message: String,
}

/// Go's `unicode.IsSpace`.
fn go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (c as u32 > 0xff && c.is_whitespace())
}

/// `SplitManifests`: split at `(?:^|\s*\n)---\s*`, drop blank documents, trim left.
pub fn split_manifests(text: &str) -> Vec<String> {
    let t = text.trim_start_matches(go_space);
    let re_space = |c: char| matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ');
    let mut docs = Vec::new();
    let mut cur_start = 0;
    let bytes = t.as_bytes();
    let mut i = 0;
    // A separator at the very start.
    let starts_at = |pos: usize| -> Option<usize> {
        if t[pos..].starts_with("---") {
            let mut e = pos + 3;
            while e < t.len() && re_space(bytes[e] as char) {
                e += 1;
            }
            Some(e)
        } else {
            None
        }
    };
    if let Some(e) = starts_at(0) {
        docs.push("");
        cur_start = e;
        i = e;
    }
    // From newline to newline; a byte loop, as `str::find`'s char searcher cost more per
    // (short) line than the bytes it skipped.
    while let Some(off) = bytes[i..].iter().position(|&c| c == b'\n') {
        let nl = i + off;
        if let Some(e) = starts_at(nl + 1) {
            // Whitespace before the newline belongs to the separator.
            let mut s = nl;
            while s > cur_start && re_space(bytes[s - 1] as char) {
                s -= 1;
            }
            docs.push(&t[cur_start..s]);
            cur_start = e;
            i = e;
        } else {
            i = nl + 1;
        }
    }
    docs.push(&t[cur_start..]);
    // Slices until here: each kept document is copied once.
    docs.into_iter()
        .filter(|d| !d.trim_matches(go_space).is_empty())
        .map(|d| d.trim_start_matches(go_space).to_string())
        .collect()
}

fn field<'a>(m: &'a Dict, name: &str) -> Option<&'a Value> {
    m.get(name).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    })
}

/// The head of a document the line scan leaves alone ([`crate::releaseutil::head`]): parsed in full.
pub fn full_head(m: &str, path: &str) -> Result<(String, Option<String>), ParseError> {
    let head = yaml::parse_one(m).map_err(|e| ParseError {
        file: path.to_string(),
        message: format!("YAML parse error on {path}: error converting YAML to JSON: {e}"),
    })?;
    Ok(match &head {
        Value::Map(obj) => {
            let obj = obj.borrow();
            let kind = field(&obj, "kind").map(strval).unwrap_or_default();
            let ann = match field(&obj, "metadata") {
                Some(Value::Map(meta)) => match field(&meta.borrow(), "annotations") {
                    Some(Value::Map(a)) => a.borrow().get("helm.sh/hook").map(strval),
                    _ => None,
                },
                _ => None,
            };
            (kind, ann)
        }
        Value::Nil => (String::new(), None),
        // Helm reads each document into releaseutil's SimpleHead, a struct: anything but a
        // mapping (or null) fails the release, as encoding/json words it.
        other => {
            let what = match other {
                Value::Str(_) | Value::Object(_) => "string",
                Value::Bool(_) => "bool",
                Value::List(_) => "array",
                _ => "number",
            };
            return Err(ParseError {
                file: path.to_string(),
                message: format!(
                    "YAML parse error on {path}: error unmarshaling JSON: while decoding JSON: \
                     json: cannot unmarshal {what} into Go value of type util.SimpleHead"
                ),
            });
        }
    })
}

/// Above this many rendered bytes the head scan is split in two jobs for rayon's pool
/// (below it, handing a job over costs more than it saves).
const SPLIT_SORT_BYTES: usize = 256 * 1024;

/// `SortManifests`: (hooks, manifests), each in path order stable-sorted by kind.
///
/// Reading the heads is a pass over every rendered byte (argo-cd: 1.9 MB, a fifth of its
/// render), so a large render is read in two halves at once; the halves are joined in path
/// order before the stable sort, and the first half's error is the first error in path
/// order, so the result is the one-thread one.
pub fn sort_manifests(
    files: &BTreeMap<String, String>,
) -> Result<(Vec<Doc>, Vec<Doc>), ParseError> {
    let all: Vec<(&String, &String)> = files.iter().collect();
    let total: usize = all.iter().map(|(_, c)| c.len()).sum();
    let (mut hooks, mut generic) = if total < SPLIT_SORT_BYTES || all.len() < 2 {
        read_heads(&all)?
    } else {
        // The first index where the first half holds half of the bytes.
        let mut acc = 0;
        let mid = all
            .iter()
            .position(|(_, c)| {
                acc += c.len();
                acc * 2 >= total
            })
            .map_or(all.len() / 2, |i| (i + 1).min(all.len() - 1));
        let (a, b) = all.split_at(mid);
        // On rayon's pool, not a thread started per render: a fresh thread (and its empty
        // allocator heap) cost more than the half it read. A pool that is busy (or has one
        // thread) runs the second half here, after the first.
        let (first, second) = rayon::join(|| read_heads(a), || read_heads(b));
        let (mut h1, mut g1) = first?;
        let (h2, g2) = second?;
        h1.extend(h2);
        g1.extend(g2);
        (h1, g1)
    };
    let key = |d: &Doc| match INSTALL_ORDER.iter().position(|k| *k == d.kind) {
        Some(i) => (0usize, i, String::new()),
        None => (1, 0, d.kind.clone()),
    };
    hooks.sort_by_key(key);
    generic.sort_by_key(key);
    Ok((hooks, generic))
}

/// The documents of `files` (in their order) with their heads: (hooks, the rest).
fn read_heads(files: &[(&String, &String)]) -> Result<(Vec<Doc>, Vec<Doc>), ParseError> {
    let mut hooks = Vec::new();
    let mut generic = Vec::new();
    for &(path, content) in files {
        if path.rsplit('/').next().unwrap_or("").starts_with('_') || path.ends_with("NOTES.txt") {
            continue;
        }
        if content.trim_matches(go_space).is_empty() {
            continue;
        }
        for m in split_manifests(content) {
            let (kind, ann) = match crate::releaseutil::head::scan(&m) {
                Some(h) => (
                    h.kind.as_ref().map(strval).unwrap_or_default(),
                    h.hook.as_ref().map(strval),
                ),
                None => full_head(&m, path)?,
            };
            match ann {
                None => generic.push(Doc {
                    source: path.clone(),
                    text: m,
                    kind,
                    hook: false,
                    test: false,
                }),
                Some(events) => {
                    let ok = events
                        .split(',')
                        .all(|t| HOOK_EVENTS.contains(&t.trim().to_lowercase().as_str()));
                    if ok {
                        let test = events
                            .split(',')
                            .any(|t| t.trim().eq_ignore_ascii_case("test"));
                        hooks.push(Doc {
                            source: path.clone(),
                            text: m,
                            kind,
                            hook: true,
                            test,
                        });
                    }
                }
            }
        }
    }
    Ok((hooks, generic))
}

/// The printed stream: CRDs (`(path, text)`), manifests, hooks.
///
/// Written into one buffer of the final size (argo-cd's stream is 1.9 MB; formatting each
/// document and copying the trimmed body again cost as much as writing it).
pub fn assemble(crds: &[(String, String)], manifests: &[Doc], hooks: &[Doc]) -> String {
    const HEAD: &str = "---\n# Source: ";
    let size = |p: &str, t: &str| HEAD.len() + p.len() + t.len() + 2;
    let cap = crds.iter().map(|(p, t)| size(p, t)).sum::<usize>()
        + manifests
            .iter()
            .chain(hooks)
            .map(|d| size(&d.source, &d.text))
            .sum::<usize>()
        + 1;
    let mut out = String::with_capacity(cap);
    let mut put = |p: &str, t: &str| {
        out.push_str(HEAD);
        out.push_str(p);
        out.push('\n');
        out.push_str(t);
        out.push('\n');
    };
    for (path, text) in crds {
        put(path, text);
    }
    for d in manifests {
        put(&d.source, &d.text);
    }
    // Helm trims the body of CRDs and manifests; it starts with `---` (or is empty), so
    // only its end can have space to trim.
    let end = out.trim_end_matches(go_space).len();
    out.truncate(end);
    out.push('\n');
    for d in hooks {
        out.push_str(HEAD);
        out.push_str(&d.source);
        out.push('\n');
        out.push_str(&d.text);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(source: &str, text: &str) -> Doc {
        Doc {
            source: source.into(),
            text: text.into(),
            kind: String::new(),
            hook: false,
            test: false,
        }
    }

    #[test]
    fn assembles_like_helm() {
        let crds = vec![("c/crds/a.yaml".to_string(), "kind: A\n".to_string())];
        let m = vec![doc("c/templates/x.yaml", "kind: X \n\t")];
        let h = vec![doc("c/templates/h.yaml", "kind: H\n")];
        assert_eq!(
            assemble(&crds, &m, &h),
            "---\n# Source: c/crds/a.yaml\nkind: A\n\n---\n# Source: c/templates/x.yaml\nkind: X\n\
             ---\n# Source: c/templates/h.yaml\nkind: H\n\n"
        );
        // No CRDs or manifests: the trimmed empty body is one newline before the hooks.
        assert_eq!(
            assemble(&[], &[], &h),
            "\n---\n# Source: c/templates/h.yaml\nkind: H\n\n"
        );
        assert_eq!(assemble(&[], &[], &[]), "\n");
    }

    #[test]
    fn splits_like_helm() {
        assert_eq!(
            split_manifests("a: 1\n---\nb: 2\n  \n---   \n\n"),
            vec!["a: 1", "b: 2"]
        );
        assert_eq!(
            split_manifests("---\na: 1\nx: |\n  y\n---b: 2"),
            vec!["a: 1\nx: |\n  y", "b: 2"]
        );
    }

    /// A render large enough to be read on two threads sorts as one thread sorts it, and
    /// reports the first bad document in path order.
    #[test]
    fn large_renders_sort_as_one_thread_sorts_them() {
        let kinds = [
            "Deployment",
            "Service",
            "Foo",
            "ConfigMap",
            "Namespace",
            "Bar",
        ];
        let pad = format!("data:\n  x: \"{}\"\n", "y".repeat(2000));
        let mut f = BTreeMap::new();
        for i in 0..200 {
            let k = kinds[i % kinds.len()];
            let hook = if i % 7 == 0 {
                "metadata:\n  annotations:\n    helm.sh/hook: pre-install\n"
            } else {
                ""
            };
            f.insert(
                format!("c/templates/t{i:03}.yaml"),
                format!(
                    "kind: {k}\n{hook}{pad}---\nkind: {}\n{pad}",
                    kinds[(i + 1) % 6]
                ),
            );
        }
        assert!(f.values().map(|t| t.len()).sum::<usize>() > SPLIT_SORT_BYTES);
        let one_thread = |f: &BTreeMap<String, String>| {
            let all: Vec<(&String, &String)> = f.iter().collect();
            read_heads(&all).map(|(mut h, mut g)| {
                let key = |d: &Doc| match INSTALL_ORDER.iter().position(|k| *k == d.kind) {
                    Some(i) => (0usize, i, String::new()),
                    None => (1, 0, d.kind.clone()),
                };
                h.sort_by_key(key);
                g.sort_by_key(key);
                (h, g)
            })
        };
        let view = |docs: &[Doc]| -> Vec<(String, String, String)> {
            docs.iter()
                .map(|d| (d.source.clone(), d.kind.clone(), d.text.clone()))
                .collect()
        };
        let (h, g) = sort_manifests(&f).unwrap();
        let (h1, g1) = one_thread(&f).unwrap();
        assert_eq!(view(&h), view(&h1));
        assert_eq!(view(&g), view(&g1));
        assert_eq!(h.len() + g.len(), 400);

        // Bad documents in both halves: the first in path order is reported.
        f.insert("c/templates/t190.yaml".into(), "kind: [\n".into());
        let e = sort_manifests(&f).err().unwrap();
        assert_eq!(e.file, "c/templates/t190.yaml");
        f.insert("c/templates/t005.yaml".into(), "kind: [\n".into());
        let e = sort_manifests(&f).err().unwrap();
        assert_eq!(e.file, "c/templates/t005.yaml");
        assert_eq!(e.message, one_thread(&f).err().unwrap().message);
    }

    #[test]
    fn sorts_by_install_order_then_path() {
        let mut f = BTreeMap::new();
        f.insert(
            "c/templates/b.yaml".to_string(),
            "kind: Deployment\n---\nkind: Service\n".to_string(),
        );
        f.insert(
            "c/templates/a.yaml".to_string(),
            "kind: Foo\n---\nkind: Deployment\n".to_string(),
        );
        let (_, m) = sort_manifests(&f).unwrap();
        let got: Vec<(&str, &str)> = m
            .iter()
            .map(|d| (d.source.as_str(), d.kind.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("c/templates/b.yaml", "Service"),
                ("c/templates/a.yaml", "Deployment"),
                ("c/templates/b.yaml", "Deployment"),
                ("c/templates/a.yaml", "Foo")
            ]
        );
    }
}
