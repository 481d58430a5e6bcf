//! Target selection (kustomize `api/types/selector.go` `SelectorRegex` and
//! `api/resmap/reswrangler.go` `Select`): a [`Selector`] compiled once
//! ([`Selector::compile`] → [`CompiledSelector`]) tests every resource with
//! [`CompiledSelector::matches`]. Group, version, kind, name and namespace are regular
//! expressions anchored as `^(?:…)$`, empty means any; name and namespace match the original
//! *or* the current id; namespaces compare as kustomize's `ResId.EffectiveNamespace`
//! ([`effective_namespace`], which needs `konfig`'s cluster-scoped kinds — the reason this
//! lives here and not in the leaf `types`).
//!
//! Invariant: a compiled selector never fails to evaluate.

#![warn(missing_docs)]
pub use crate::konfig::cluster_scoped::{NOT_A_NAMESPACE, effective_namespace};
use crate::types::selector::{LabelSelector, Selector, given};
use kiln_base::resource::Resource;
use miette::Diagnostic;
use regex::Regex;
use std::borrow::Cow;
use thiserror::Error;

/// Why a selector cannot be compiled.
#[derive(Debug, Clone, PartialEq, Error, Diagnostic)]
#[allow(missing_docs)] // fields: the selector field, its text and the parser's reason
pub enum SelectorError {
    /// A group/version/kind/name/namespace field is not a valid regular expression.
    #[error("target `{field}` `{pattern}` is not a valid regular expression: {reason}")]
    #[diagnostic(
        code(kiln::kustomize::selector_invalid_regex),
        help(
            "target fields are regular expressions (anchored like kustomize: `^(?:…)$`); escape `.`, `(`, `[` … with `\\` to match them literally"
        )
    )]
    InvalidRegex {
        field: &'static str,
        pattern: String,
        reason: String,
    },

    /// A `labelSelector`/`annotationSelector` does not parse.
    #[error("target `{field}` `{selector}` is not a valid selector: {reason}")]
    #[diagnostic(
        code(kiln::kustomize::selector_invalid_syntax),
        help(
            "use Kubernetes selector syntax: `key=value`, `key!=value`, `key in (a,b)`, `key notin (a)`, `key`, `!key`, joined by `,`"
        )
    )]
    InvalidLabelSelector {
        field: &'static str,
        selector: String,
        reason: String,
    },
}

impl Selector {
    /// Compiles the regular expressions and label selectors once.
    pub fn compile(&self) -> Result<CompiledSelector, SelectorError> {
        fn re(field: &'static str, p: &Option<String>) -> Result<Option<Pattern>, SelectorError> {
            match given(p) {
                None => Ok(None),
                // kustomize `anchorRegex`: the whole value must match.
                // A pattern without metacharacters matches exactly itself: no regex.
                Some(p) if !p.chars().any(|c| "\\.+*?()|[]{}^$".contains(c)) => {
                    Ok(Some(Pattern::Exact(p.to_string())))
                }
                Some(p) => crate::memo::regex(&format!("^(?:{p})$"))
                    .map(|r| Some(Pattern::Regex(r)))
                    .map_err(|e| SelectorError::InvalidRegex {
                        field,
                        pattern: p.to_string(),
                        reason: e.to_string(),
                    }),
            }
        }
        fn sel(
            field: &'static str,
            s: &Option<String>,
        ) -> Result<Option<LabelSelector>, SelectorError> {
            match given(s) {
                None => Ok(None),
                Some(s) => LabelSelector::parse(s).map(Some).map_err(|reason| {
                    SelectorError::InvalidLabelSelector {
                        field,
                        selector: s.to_string(),
                        reason,
                    }
                }),
            }
        }
        Ok(CompiledSelector {
            group: re("group", &self.group)?,
            version: re("version", &self.version)?,
            kind: re("kind", &self.kind)?,
            name: re("name", &self.name)?,
            namespace: re("namespace", &self.namespace)?,
            labels: sel("labelSelector", &self.label_selector)?,
            annotations: sel("annotationSelector", &self.annotation_selector)?,
        })
    }
}

/// A [`Selector`] ready to match: regular expressions compiled, selectors parsed.
#[derive(Debug, Clone)]
pub struct CompiledSelector {
    group: Option<Pattern>,
    version: Option<Pattern>,
    kind: Option<Pattern>,
    name: Option<Pattern>,
    namespace: Option<Pattern>,
    labels: Option<LabelSelector>,
    annotations: Option<LabelSelector>,
}

/// One anchored id pattern of a [`CompiledSelector`]: most targets name a kind or an object
/// literally, and comparing strings is what the anchored regex would do for them.
#[derive(Debug, Clone)]
enum Pattern {
    Exact(String),
    Regex(std::sync::Arc<Regex>),
}

impl Pattern {
    fn is_match(&self, s: &str) -> bool {
        match self {
            Pattern::Exact(p) => p == s,
            Pattern::Regex(r) => r.is_match(s),
        }
    }
}

impl CompiledSelector {
    /// Whether `res` is selected. As kustomize `resWrangler.Select`: name and namespace may
    /// match either the current or the original (pre-rename) value; namespaces compare as
    /// [`effective_namespace`]; labels and annotations are read from `metadata`.
    pub fn matches(&self, res: &Resource) -> bool {
        let is = |re: &Option<Pattern>, s: &str| re.as_ref().is_none_or(|r| r.is_match(s));
        // The original id is the oldest recorded name, see `BuildMeta::previous_names`.
        let original = res.meta.previous_names.first();
        // Every patch entry tests every object, so the order of the (side-effect free) tests
        // matters: kind and name first, they reject most objects; the namespace test last and
        // only when there is one (its effective namespace scans the cluster-scoped kinds).
        let ns_is = |ns: Option<&str>| {
            is(
                &self.namespace,
                effective_namespace(res.group(), res.kind(), ns),
            )
        };
        let ns_ok = || {
            self.namespace.is_none()
                || ns_is(res.namespace())
                || original.is_some_and(|(ns, _)| ns_is(ns.as_deref()))
        };
        let name_ok =
            || is(&self.name, res.name()) || original.is_some_and(|(_, n)| is(&self.name, n));
        is(&self.kind, res.kind())
            && name_ok()
            && is(&self.group, res.group())
            && is(&self.version, res.version())
            && ns_ok()
            && self
                .labels
                .as_ref()
                .is_none_or(|s| s.matches(|k| string_at(res, "labels", k).map(Cow::Borrowed)))
            && self
                .annotations
                .as_ref()
                .is_none_or(|s| s.matches(|k| string_at(res, "annotations", k).map(Cow::Borrowed)))
    }
}

fn string_at<'a>(res: &'a Resource, field: &str, key: &str) -> Option<&'a str> {
    res.value.get("metadata")?.get(field)?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(v: serde_json::Value) -> Resource {
        Resource::new(v, None)
    }

    fn deploy(name: &str, labels: serde_json::Value) -> Resource {
        res(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels}}),
        )
    }

    #[test]
    fn names_are_anchored_regexes() {
        let c = Selector {
            name: Some("d.*".into()),
            ..Default::default()
        }
        .compile()
        .unwrap();
        assert!(c.matches(&deploy("dx", json!({}))));
        assert!(!c.matches(&deploy("xd", json!({}))));
        let alt = Selector {
            name: Some("a|b".into()),
            ..Default::default()
        }
        .compile()
        .unwrap();
        assert!(alt.matches(&deploy("a", json!({}))));
        assert!(alt.matches(&deploy("b", json!({}))));
        assert!(!alt.matches(&deploy("ab", json!({}))));
    }

    #[test]
    fn literal_names_match_exactly_and_dotted_ones_stay_regexes() {
        let c = |name: &str| {
            Selector {
                name: Some(name.into()),
                ..Default::default()
            }
            .compile()
            .unwrap()
        };
        let web = c("web-1");
        assert!(matches!(web.name, Some(Pattern::Exact(_))));
        assert!(web.matches(&deploy("web-1", json!({}))));
        assert!(!web.matches(&deploy("web-12", json!({}))));
        assert!(!web.matches(&deploy("xweb-1", json!({}))));
        // `.` is a metacharacter: anchored regex, any character.
        let dotted = c("web.1");
        assert!(matches!(dotted.name, Some(Pattern::Regex(_))));
        assert!(dotted.matches(&deploy("webx1", json!({}))));
        assert!(!dotted.matches(&deploy("webx12", json!({}))));
    }

    #[test]
    fn gvk_and_namespace_filters() {
        let d = deploy("web", json!({}));
        let sel = |v: serde_json::Value| {
            serde_json::from_value::<Selector>(v)
                .unwrap()
                .compile()
                .unwrap()
        };
        assert!(sel(json!({"group": "apps", "version": "v1", "kind": "Deployment"})).matches(&d));
        assert!(!sel(json!({"group": "batch"})).matches(&d));
        assert!(!sel(json!({"version": "v2"})).matches(&d));
        assert!(!sel(json!({"kind": "Deploy"})).matches(&d));
        assert!(sel(json!({"namespace": "default"})).matches(&d));
        assert!(!sel(json!({"namespace": "prod"})).matches(&d));
    }

    // kubectl kustomize v5.5.0: `namespace: default` selects a ConfigMap and a custom resource
    // without namespace, but not a ClusterRole.
    #[test]
    fn cluster_scoped_kinds_are_not_in_default() {
        let c = Selector {
            namespace: Some("default".into()),
            ..Default::default()
        }
        .compile()
        .unwrap();
        let cr = res(
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}),
        );
        let widget = res(
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        );
        assert!(!c.matches(&cr));
        assert!(c.matches(&widget));
        assert_eq!(
            effective_namespace("", "Namespace", Some("x")),
            NOT_A_NAMESPACE
        );
        assert_eq!(effective_namespace("", "ConfigMap", Some("")), "default");
    }

    #[test]
    fn original_name_also_matches() {
        let mut d = deploy("pre-web", json!({}));
        d.meta.previous_names.push((None, "web".into()));
        let c = Selector {
            name: Some("web".into()),
            ..Default::default()
        }
        .compile()
        .unwrap();
        assert!(c.matches(&d));
    }

    #[test]
    fn label_selector_forms() {
        let l = json!({"app": "web", "tier": "front", "n": "5"});
        let m = |s: &str| {
            let sel = Selector {
                label_selector: Some(s.into()),
                ..Default::default()
            }
            .compile()
            .unwrap();
            sel.matches(&deploy("x", l.clone()))
        };
        assert!(m("app=web"));
        assert!(m("app==web"));
        assert!(!m("app!=web"));
        assert!(m("missing!=web"));
        assert!(m("tier in (back, front)"));
        assert!(!m("tier notin (front)"));
        assert!(m("missing notin (front)"));
        assert!(m("app"));
        assert!(!m("!app"));
        assert!(m("!missing"));
        assert!(m("app=web,tier in (front),!canary"));
        assert!(!m("app=web,tier=back"));
        assert!(m("n>4"));
        assert!(!m("n<5"));
        assert!(m(""));
    }

    #[test]
    fn annotation_selector_reads_annotations() {
        let r = res(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"example.com/team": "a"}}}));
        let c = Selector {
            annotation_selector: Some("example.com/team=a".into()),
            ..Default::default()
        }
        .compile()
        .unwrap();
        assert!(c.matches(&r));
        let c = Selector {
            annotation_selector: Some("example.com/team=b".into()),
            ..Default::default()
        }
        .compile()
        .unwrap();
        assert!(!c.matches(&r));
    }

    #[test]
    fn invalid_selectors_are_errors() {
        for s in [
            "a in (x",
            "a in x",
            "=x",
            "a=b c",
            "a,,b",
            "a notin ()",
            "a>x",
        ] {
            let e = Selector {
                label_selector: Some(s.into()),
                ..Default::default()
            }
            .compile()
            .unwrap_err();
            assert!(
                matches!(e, SelectorError::InvalidLabelSelector { .. }),
                "{s}: {e:?}"
            );
        }
        let e = Selector {
            name: Some("(".into()),
            ..Default::default()
        }
        .compile()
        .unwrap_err();
        assert!(matches!(
            e,
            SelectorError::InvalidRegex { field: "name", .. }
        ));
    }
}
