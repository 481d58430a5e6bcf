//! The `-l` label selector, parsed as kubectl parses one (apimachinery's
//! `pkg/labels/selector.go`, through kustomize's [`LabelSelector`], the one parser of the
//! engines): comma-separated requirements that must all hold (`tier=nonprod,component=app`),
//! each `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`
//! (the label exists) or `!key` (it does not), on kiln's fixed label keys (`project`,
//! `environment`, `component`, `tier`, `cluster`), which every BuildPlan carries.

use kiln_kustomize::types::selector::{LabelSelector, Requirement};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The labels a BuildPlan is selected on.
pub const KEYS: [&str; 5] = ["project", "environment", "component", "tier", "cluster"];

/// Parses one `-l` value. The error says what is wrong (the caller names the selector); a
/// key other than [`KEYS`] is one (it could only select nothing).
pub fn parse(selector: &str) -> Result<LabelSelector, String> {
    let parsed = LabelSelector::parse(selector)?;
    for r in &parsed.requirements {
        let key = match r {
            Requirement::Exists(k)
            | Requirement::DoesNotExist(k)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Gt(k, _)
            | Requirement::Lt(k, _) => k,
        };
        if !KEYS.contains(&key.as_str()) {
            return Err(format!("unknown label `{key}`"));
        }
    }
    Ok(parsed)
}

/// Whether a BuildPlan with `labels` is selected by `selector`.
pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector.matches(|k| labels.get(k).map(|v| Cow::Borrowed(v.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> BTreeMap<String, String> {
        [
            ("project", "web"),
            ("environment", "dev"),
            ("component", "app"),
            ("tier", "nonprod"),
            ("cluster", "east"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn chosen(selector: &str) -> bool {
        let parsed = parse(selector).unwrap_or_else(|e| panic!("{selector}: {e}"));
        selects(&parsed, &labels())
    }

    #[test]
    fn commas_and_the_requirements() {
        assert!(chosen("tier=nonprod,component=app"));
        assert!(!chosen("tier=nonprod,component=db"));
        assert!(chosen("tier==nonprod"));
        assert!(chosen("tier!=prod"));
        assert!(!chosen("tier!=nonprod"));
        assert!(chosen("environment in (dev, test),cluster notin (west)"));
        assert!(!chosen("environment in (test,prod)"));
        assert!(!chosen("cluster notin (east)"));
        assert!(chosen("tier"));
        assert!(!chosen("!tier"));
        assert_eq!(
            parse(" tier = nonprod , component=app ").map(|r| r.requirements.len()),
            Ok(2)
        );
    }

    #[test]
    fn refuses_what_kubectl_refuses() {
        for (bad, why) in [
            ("tier=nonprod,", "empty requirement"),
            ("team=a", "unknown label `team`"),
            ("environment in (dev", "unclosed `(`"),
        ] {
            let err = parse(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
