//! The naming rules of the generated Kargo and Argo CD objects, in one place so docs/pipeline.md,
//! the generator and the tests agree:
//!
//! | object | name | namespace |
//! |---|---|---|
//! | Namespace, Project, ProjectConfig | `<project>` | — / — / `<project>` |
//! | Warehouse | `<component>` | `<project>` |
//! | Stage | `<component>-<environment>` | `<project>` |
//! | Application | `<project>-<component>-<environment>` | Argo CD namespace |
//!
//! Kargo's project is a namespace, so `<project>` must be a DNS-1123 label; the other names
//! must be DNS-1123 labels too (Kargo copies Stage and Warehouse names into label values, and
//! Argo CD copies Application names into the `app.kubernetes.io/instance` label), at most 63
//! characters.
//!
//! Step aliases are fixed (see [`ALIASES`]) and none matches Kargo's reserved
//! `^(step|task)-\d+$`; variable names match Kargo's `^[a-zA-Z_]\w*$`.

use std::collections::BTreeSet;

/// The Stage of `component` in `environment`.
pub fn stage_name(component: &str, environment: &str) -> String {
    format!("{component}-{environment}")
}

/// The Warehouse of `component`.
pub fn warehouse_name(component: &str) -> String {
    component.to_string()
}

/// The Argo CD Application of `component` of `project` in `environment`.
pub fn application_name(project: &str, component: &str, environment: &str) -> String {
    format!("{project}-{component}-{environment}")
}

/// Step aliases of the generated promotion template, in step order.
pub const ALIASES: [&str; 8] = [
    "clone-source",
    "clone-target",
    "clean",
    "set-image",
    "build",
    "commit",
    "push",
    "sync",
];

/// Why `branch` is not a branch name both git and Kargo accept, or `None`: git's
/// `check-ref-format --branch` (no `.lock` ending, no `@{`, …), none of the names that read as
/// something else (`HEAD`, `@`, `refs/…`, which `refs/heads/` would nest), and Kargo's git
/// subscription pattern `^[a-zA-Z0-9]([a-zA-Z0-9._/-]*[a-zA-Z0-9_-])?$`, at most 255
/// characters.
pub fn branch_problem(branch: &str) -> Option<String> {
    if branch == "HEAD" || branch == "@" {
        return Some(format!("`{branch}` names the current commit, not a branch"));
    }
    if branch.starts_with("refs/") {
        return Some(format!(
            "`{branch}` is a full reference name; a branch is written without `refs/heads/`"
        ));
    }
    if !git2::Reference::is_valid_name(&format!("refs/heads/{branch}")) {
        return Some(format!(
            "`{branch}` is not a valid git branch name (see git-check-ref-format)"
        ));
    }
    let ok_inner = |c: char| c.is_ascii_alphanumeric() || "._/-".contains(c);
    let ok_last = |c: char| c.is_ascii_alphanumeric() || "_-".contains(c);
    let first_ok = branch
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let last_ok = branch.chars().last().is_some_and(ok_last);
    if branch.len() > 255
        || !first_ok
        || !last_ok
        || !branch.chars().all(ok_inner)
        || branch.contains("..")
    {
        Some(format!("`{branch}` is not a valid branch name"))
    } else {
        None
    }
}

/// A Kargo variable name for the image `name` (`image_` + the name with every character
/// outside `[A-Za-z0-9_]` replaced by `_`), unique among `taken` (a `_2`, `_3`… suffix on
/// collision). The result matches Kargo's `^[a-zA-Z_]\w*$`.
pub fn image_var(name: &str, taken: &mut BTreeSet<String>) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = format!("image_{cleaned}");
    let mut candidate = base.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{base}_{n}");
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    #[test]
    fn generated_names_follow_the_documented_rule() {
        assert_eq!(stage_name("frontend", "prod-east"), "frontend-prod-east");
        assert_eq!(
            application_name("web", "frontend", "dev"),
            "web-frontend-dev"
        );
        assert_eq!(warehouse_name("ledger"), "ledger");
    }

    #[test]
    fn aliases_are_unique_and_not_reserved() {
        let reserved = Regex::new(r"^(step|task)-\d+$").unwrap();
        let set: BTreeSet<&str> = ALIASES.iter().copied().collect();
        assert_eq!(set.len(), ALIASES.len());
        assert!(ALIASES.iter().all(|a| !reserved.is_match(a)));
    }

    #[test]
    fn image_vars_match_kargos_pattern_and_never_collide() {
        let pattern = Regex::new(r"^[a-zA-Z_]\w*$").unwrap();
        let mut taken = BTreeSet::new();
        let a = image_var("ghcr.io/x/web-api", &mut taken);
        let b = image_var("ghcr.io/x/web.api", &mut taken);
        assert_eq!(a, "image_ghcr_io_x_web_api");
        assert_eq!(b, "image_ghcr_io_x_web_api_2");
        assert!(pattern.is_match(&a) && pattern.is_match(&b));
    }

    #[test]
    fn branches() {
        assert_eq!(branch_problem("stage/dev"), None);
        // Issue 39, item 18: names git or Kargo would take for something else.
        for bad in [
            "HEAD",
            "@",
            "refs/heads/x",
            "x.lock",
            "stage/x.lock",
            "a@{b",
            "a//b",
        ] {
            assert!(branch_problem(bad).is_some(), "{bad}");
        }
        assert!(branch_problem("stage/dev/").is_some());
        assert!(branch_problem("-x").is_some());
    }
}
