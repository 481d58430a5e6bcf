//! kustomize's `Selector` (kustomize `api/types/selector.go`): the one selector type of the
//! engine. It is the `target:` of `patches:` / `patchesJson6902:` and of builtin patch
//! transformer configs, the `select:` / `reject:` of `replacements:`, and the `target` of
//! kiln's own component transformers (`spec::Target` is this type). Also the Kubernetes
//! label-selector language it uses for `labelSelector` and `annotationSelector` — the one
//! parser of the engine.
//!
//! Two ways to match, as in kustomize:
//! - patch targets compile once (`Selector::compile`, in `filters::select`, which owns the
//!   regular expressions and the cluster-scoped kinds namespaces compare with);
//! - replacements compare the id fields literally ([`Selector::selects_id`], kustomize's
//!   `ResId.IsSelectedBy`) and the label/annotation selectors with [`LabelSelector`].
//!
//! Label syntax from apimachinery `pkg/labels/selector.go`. An empty field is the same as an
//! absent one (kustomize's `omitempty` strings).

#![warn(missing_docs)]
use kiln_base::resource::Resource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Which resources a patch, a replacement or a component transformer applies to (kustomize's
/// `Selector`). Empty fields match anything; a resource is selected when it matches all the
/// given ones. Unknown fields are rejected, as kustomize's strict decoding of a kustomization
/// does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Selector {
    /// API group (`apps`); empty or absent means any, including the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// API version (`v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Kind (`Deployment`; for patches a regular expression such as `ConfigMap|Secret`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name; for patches an anchored regular expression matched against the current and the
    /// original name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace; an object without namespace counts as `default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Kubernetes label selector, e.g. `app=web,tier in (front,back),!canary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Same syntax as `labelSelector`, matched against annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_selector: Option<String>,
}

/// A field of a selector as written: `None` for absent or empty.
pub(crate) fn given(field: &Option<String>) -> Option<&str> {
    field.as_deref().filter(|s| !s.is_empty())
}

impl Selector {
    /// `true` when the selector names one object: a `name` without regular-expression
    /// metacharacters. kiln policy (not kustomize's): such a target matching nothing is an
    /// error, see `builtins::patch_transformer`.
    pub fn names_single_object(&self) -> bool {
        match self.name.as_deref() {
            // `.` is left out on purpose: `gadgets.example.com` names one object, and the dot
            // matches itself.
            Some(n) if !n.is_empty() => !n.chars().any(|c| "\\+*?()|[]{}^$".contains(c)),
            _ => false,
        }
    }

    /// Whether any of group, version, kind, name, namespace is given.
    pub fn has_id(&self) -> bool {
        [
            &self.group,
            &self.version,
            &self.kind,
            &self.name,
            &self.namespace,
        ]
        .into_iter()
        .any(|f| given(f).is_some())
    }

    /// Whether a label or an annotation selector is given.
    pub fn has_meta(&self) -> bool {
        given(&self.label_selector).is_some() || given(&self.annotation_selector).is_some()
    }

    /// kustomize's `ResId.IsSelectedBy`: the id fields compare literally (no regular
    /// expressions), over the current id and every earlier name; an absent namespace is
    /// `default` (`IsNsEquals`). Label and annotation selectors are not consulted.
    pub fn selects_id(&self, res: &Resource) -> bool {
        let id = res.id();
        let is = |want: &Option<String>, have: &str| given(want).is_none_or(|w| w == have);
        if !(is(&self.group, &id.group)
            && is(&self.version, &id.version)
            && is(&self.kind, &id.kind))
        {
            return false;
        }
        fn effective(ns: Option<&str>) -> &str {
            ns.filter(|n| !n.is_empty()).unwrap_or("default")
        }
        let current = (id.namespace.as_deref(), id.name.as_str());
        let earlier = res
            .meta
            .previous_names
            .iter()
            .map(|(ns, name)| (ns.as_deref(), name.as_str()));
        std::iter::once(current).chain(earlier).any(|(ns, name)| {
            is(&self.name, name)
                && given(&self.namespace).is_none_or(|want| effective(Some(want)) == effective(ns))
        })
    }

    /// The id fields in kustomize's `ResId.String()` shape, `Kind.version.group/name.namespace`,
    /// with `[noKind]`, `[noVer]`, `[noGrp]`, `[noName]`, `[noNs]` for absent parts (as
    /// kustomize's replacement errors print a selector).
    pub fn id_text(&self) -> String {
        let or = |f: &Option<String>, d: &'static str| given(f).unwrap_or(d).to_string();
        format!(
            "{}.{}.{}/{}.{}",
            or(&self.kind, "[noKind]"),
            or(&self.version, "[noVer]"),
            or(&self.group, "[noGrp]"),
            or(&self.name, "[noName]"),
            or(&self.namespace, "[noNs]")
        )
    }
}

impl std::fmt::Display for Selector {
    /// A compact description for messages: `kind=Deployment name=web labelSelector=app=x`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            ("group", &self.group),
            ("version", &self.version),
            ("kind", &self.kind),
            ("name", &self.name),
            ("namespace", &self.namespace),
            ("labelSelector", &self.label_selector),
            ("annotationSelector", &self.annotation_selector),
        ];
        let mut first = true;
        for (k, v) in parts {
            if let Some(v) = given(v) {
                if !first {
                    f.write_str(" ")?;
                }
                write!(f, "{k}={v}")?;
                first = false;
            }
        }
        if first {
            f.write_str("(any resource)")?;
        }
        Ok(())
    }
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key` — the key is present.
    Exists(String),
    /// `!key` — the key is absent.
    DoesNotExist(String),
    /// `key=value` / `key==value`, or `key in (a,b)`.
    In(String, Vec<String>),
    /// `key!=value` or `key notin (a,b)` — also true when the key is absent.
    NotIn(String, Vec<String>),
    /// `key>n` / `key<n` (apimachinery `gt`/`lt`): the value parses as an integer and compares.
    Gt(String, i64),
    /// `key<n`.
    Lt(String, i64),
}

/// A parsed label selector: all requirements must hold. The empty selector matches
/// everything (apimachinery `labels.Everything()`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    /// Requirements in the order written.
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the apimachinery selector syntax. Errors are short phrases naming the offending
    /// text (the caller adds the field).
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut requirements = Vec::new();
        for part in split_top_level(text)? {
            let part = part.trim();
            if part.is_empty() {
                if text.trim().is_empty() {
                    continue;
                }
                return Err("empty requirement (stray `,`)".into());
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// Evaluates against a lookup from key to value.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<Cow<'a, str>>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
            Requirement::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| *x == v)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|v| vs.iter().all(|x| *x != v)),
            Requirement::Gt(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *n),
            Requirement::Lt(k, n) => get(k)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *n),
        })
    }
}

/// Splits on commas outside parentheses; rejects unbalanced parentheses.
fn split_top_level(text: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err("unbalanced `)`".into());
                }
            }
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("unclosed `(`".into());
    }
    parts.push(&text[start..]);
    Ok(parts)
}

fn valid_key(k: &str) -> Result<String, String> {
    // Qualified name: optional DNS prefix + `/` + name of [A-Za-z0-9._-], starting and ending
    // alphanumeric (apimachinery `validateLabelKey`); the check here is the character set and
    // non-emptiness, which is what users get wrong in practice.
    let ok = !k.is_empty()
        && k.split('/').count() <= 2
        && k.split('/').all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        });
    if ok {
        Ok(k.to_string())
    } else {
        Err(format!("invalid key `{k}`"))
    }
}

fn valid_value(v: &str) -> Result<String, String> {
    let v = v.trim();
    if v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        Ok(v.to_string())
    } else {
        Err(format!("invalid value `{v}`"))
    }
}

fn parse_set(rest: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected `(values)`, found `{rest}`"))?;
    let vals: Vec<String> = inner
        .split(',')
        .map(valid_value)
        .collect::<Result<_, _>>()?;
    if inner.trim().is_empty() {
        return Err("a set needs at least one value".into());
    }
    Ok(vals)
}

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    if let Some(k) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(valid_key(k.trim())?));
    }
    for (op, neg) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((k, v)) = part.split_once(op) {
            let (k, v) = (valid_key(k.trim())?, valid_value(v)?);
            return Ok(if neg {
                Requirement::NotIn(k, vec![v])
            } else {
                Requirement::In(k, vec![v])
            });
        }
    }
    for (op, gt) in [(">", true), ("<", false)] {
        if let Some((k, v)) = part.split_once(op) {
            let k = valid_key(k.trim())?;
            let n = v
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("`{}` is not an integer", v.trim()))?;
            return Ok(if gt {
                Requirement::Gt(k, n)
            } else {
                Requirement::Lt(k, n)
            });
        }
    }
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim_start();
    if rest.is_empty() {
        return Ok(Requirement::Exists(valid_key(key)?));
    }
    if let Some(set) = rest.strip_prefix("notin") {
        return Ok(Requirement::NotIn(valid_key(key)?, parse_set(set)?));
    }
    if let Some(set) = rest.strip_prefix("in") {
        return Ok(Requirement::In(valid_key(key)?, parse_set(set)?));
    }
    Err(format!("unexpected `{rest}` after key `{key}`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selector_deserializes_camel_case() {
        let s: Selector = serde_json::from_value(json!({
            "group": "apps", "kind": "Deployment", "labelSelector": "app=x", "annotationSelector": "a"
        }))
        .unwrap();
        assert_eq!(s.group.as_deref(), Some("apps"));
        assert_eq!(s.label_selector.as_deref(), Some("app=x"));
        assert_eq!(s.annotation_selector.as_deref(), Some("a"));
    }

    #[test]
    fn single_object_names() {
        let s = |n: &str| {
            Selector {
                name: Some(n.into()),
                ..Default::default()
            }
            .names_single_object()
        };
        assert!(s("web"));
        assert!(s("web-1"));
        assert!(s("gadgets.example.com"));
        assert!(!s("web.*"));
        assert!(!s("a|b"));
        assert!(!Selector::default().names_single_object());
    }
}
