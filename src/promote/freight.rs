//! The Freight a promotion runs with, and how expressions find artifacts in it.
//!
//! Implemented from Kargo v1.11.2:
//! - `pkg/controller/freight/finder.go` (`FindCommit`, `FindImage`): without an explicit
//!   origin, the one requested Warehouse that subscribes to the repository supplies it (two is
//!   ambiguous, an error); none gives `nil`. Git URLs compare normalized, image repositories
//!   literally.
//! - `pkg/urls/git.go` (`NormalizeGit`) for the http(s) forms kiln emits.
//! - `pkg/api/freight.go` (`GenerateFreightID`): the Freight's name, [`generate_freight_id`].
//! - `api/v1alpha1/freight_types.go`: field names of `Image` (`RepoURL`, `Tag`, `Digest`) and
//!   `GitCommit` (`RepoURL`, `ID`, `Branch`, …) as expressions see them.

use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One image of the Freight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FreightImage {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tag: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub digest: String,
}

/// One commit of the Freight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FreightCommit {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub branch: String,
}

/// The artifacts one Warehouse contributed (Kargo's `FreightReference`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FreightReference {
    /// The Warehouse name (origin kind is always `Warehouse` for kiln).
    pub origin: String,
    pub images: Vec<FreightImage>,
    pub commits: Vec<FreightCommit>,
}

/// One image subscription of a Warehouse: the repository and what decides which of its tags
/// the Warehouse discovers (`api/v1alpha1/warehouse_types.go` `ImageSubscription`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSubscription {
    pub repo_url: String,
    /// `imageSelectionStrategy`; empty is SemVer.
    pub strategy: String,
    /// `constraint`: a semver range (SemVer) or the one mutable tag (Digest).
    pub constraint: Option<String>,
    /// `strictSemvers` (Kargo's default is true).
    pub strict_semvers: bool,
}

impl ImageSubscription {
    /// Why the Warehouse would never discover `image` (`None`: it would). Kargo v1.11.2
    /// `pkg/image/semver_selector.go` (`MatchesTag`) and `digest_selector.go`: SemVer admits
    /// tags that parse as semantic versions within the constraint, Digest follows exactly the
    /// constraint's tag; Lexical and NewestBuild filter only by `allowTags`/`ignoreTags`,
    /// which kiln never emits. A Freight pinned by digest alone names no tag to check.
    pub fn refuses(&self, image: &FreightImage) -> Option<String> {
        if image.tag.is_empty() {
            return None;
        }
        match self.strategy.as_str() {
            "" | "SemVer" => {
                let c = self.constraint.as_deref().filter(|c| !c.is_empty());
                if crate::kargo::constraint::admits(c, &image.tag, self.strict_semvers) {
                    None
                } else if crate::kargo::constraint::admits(None, &image.tag, self.strict_semvers) {
                    Some(format!(
                        "tag {} is outside the Warehouse's constraint `{}`",
                        image.tag,
                        c.unwrap_or_default()
                    ))
                } else {
                    Some(format!(
                        "tag {} is not a{} semantic version, and the Warehouse selects by SemVer",
                        image.tag,
                        if self.strict_semvers { " strict" } else { "" }
                    ))
                }
            }
            "Digest" => match self.constraint.as_deref() {
                Some(c) if c != image.tag => Some(format!(
                    "the Warehouse follows the digest of tag {c}, not {}",
                    image.tag
                )),
                _ => None,
            },
            _ => None,
        }
    }
}

/// What a Warehouse subscribes to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscriptions {
    /// Image repositories.
    pub images: Vec<ImageSubscription>,
    /// Git repositories with their branch.
    pub git: Vec<(String, String)>,
    /// The `includePaths`/`excludePaths` of each of `git`, in the same order.
    pub git_paths: Vec<PathFilter>,
}

/// A Git subscription's path selectors: which commits make Freight.
///
/// Kargo v1.11.2 `pkg/controller/git/commit/base_selector.go` `MatchesPaths`: a commit
/// qualifies when one of the paths it changes is included (every path, without
/// `includePaths`) and not excluded. Selectors (`pkg/pattern/matcher.go`
/// `ParsePathPattern`): `glob:` (doublestar), `regex:`/`regexp:` (unanchored), anything else a
/// base directory (the path is that directory or under it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathFilter {
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl PathFilter {
    /// Whether no selector limits the commits.
    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty()
    }

    /// `MatchesPaths`: some path of `changed` included and not excluded. An unparsable
    /// selector is an error, as Kargo's Warehouse reports it.
    pub fn matches(&self, changed: &[String]) -> Result<bool, String> {
        let include = selectors(&self.include)?;
        let exclude = selectors(&self.exclude)?;
        Ok(changed.iter().any(|p| {
            (include.is_empty() || include.iter().any(|m| m.matches(p)))
                && !exclude.iter().any(|m| m.matches(p))
        }))
    }
}

/// One parsed path selector.
enum PathSelector {
    Regex(regex::Regex),
    BaseDir(String),
}

impl PathSelector {
    fn matches(&self, path: &str) -> bool {
        match self {
            PathSelector::Regex(r) => r.is_match(path),
            // `filepath.Rel(base, path)` without `..`: the base itself or below it.
            PathSelector::BaseDir(base) => {
                let base = base.trim_end_matches('/');
                base.is_empty()
                    || base == "."
                    || path == base
                    || path.starts_with(&format!("{base}/"))
            }
        }
    }
}

fn selectors(patterns: &[String]) -> Result<Vec<PathSelector>, String> {
    patterns
        .iter()
        .map(|p| {
            let regex = if let Some(g) = p.strip_prefix("glob:") {
                glob_regex(g)
            } else if let Some(r) = p
                .strip_prefix("regexp:")
                .or_else(|| p.strip_prefix("regex:"))
            {
                r.to_string()
            } else {
                return Ok(PathSelector::BaseDir(p.clone()));
            };
            regex::Regex::new(&regex)
                .map(PathSelector::Regex)
                .map_err(|e| format!("parse error path selector {p:?}: {e}"))
        })
        .collect()
}

/// A doublestar glob as an anchored regular expression: `**` any number of path segments,
/// `*` and `?` within one segment, `[...]` a class, `{a,b}` alternatives.
fn glob_regex(glob: &str) -> String {
    let mut out = String::from("^");
    let mut chars = glob.chars().peekable();
    let mut braces = 0;
    while let Some(c) = chars.next() {
        match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                if chars.peek() == Some(&'/') {
                    chars.next();
                    out.push_str("(?:.*/)?");
                } else {
                    out.push_str(".*");
                }
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => out.push('['),
            ']' => out.push(']'),
            '{' => {
                braces += 1;
                out.push_str("(?:");
            }
            '}' if braces > 0 => {
                braces -= 1;
                out.push(')');
            }
            ',' if braces > 0 => out.push('|'),
            c => out.push_str(&regex::escape(&c.to_string())),
        }
    }
    out.push('$');
    out
}

/// The Freight of one promotion with the Stage's requested origins: what `commitFrom` and
/// `imageFrom` search.
#[derive(Debug, Clone, Default)]
pub struct FreightSet {
    /// Requested Warehouses, in the Stage's order.
    pub requested: Vec<String>,
    /// Subscriptions by Warehouse.
    pub warehouses: BTreeMap<String, Subscriptions>,
    /// The Freight this Stage holds: the promoted one, and for a Stage requesting one
    /// Warehouse only that one. A Stage requesting several Warehouses holds each one's
    /// current Freight too (Kargo's FreightCollection); kiln cannot see those, so only the
    /// promoted one is here, as in a Stage that holds no other Freight yet.
    pub references: Vec<FreightReference>,
    /// The Warehouse of the promoted Freight (`ctx.targetFreight.origin.name`); empty: the
    /// first requested one.
    pub target: String,
}

/// `NormalizeGit` for http(s) URLs: lower case, no user info, no trailing `/` or `.git`.
/// Anything else is returned lower-cased and trimmed the same way, which is what Kargo does
/// for the ssh forms it still accepts.
pub fn normalize_git(url: &str) -> String {
    let lower = url.to_lowercase();
    let (scheme, rest) = match lower.split_once("://") {
        Some((s, r)) => (Some(s.to_string()), r.to_string()),
        None => (None, lower.clone()),
    };
    let rest = match (scheme.as_deref(), rest.split_once('/')) {
        (Some("http" | "https"), Some((authority, path))) => {
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{host}/{path}")
        }
        _ => rest,
    };
    let rest = rest.trim_end_matches('/');
    let rest = rest.strip_suffix(".git").unwrap_or(rest);
    match scheme {
        Some(s) => format!("{s}://{rest}"),
        None => rest.to_string(),
    }
}

/// Kargo's name for one Freight: `GenerateFreightID` of `pkg/api/freight.go` at v1.11.2.
/// Each artifact becomes one part — a commit `NormalizeGit(repoURL):id`, an image
/// `repoURL:tag@digest` (both fields always, so a re-tagged digest or a moved tag is new
/// Freight) — the parts are sorted, joined with `|`, prefixed with the origin (`Warehouse/<name>`,
/// `FreightOrigin.String` in `api/v1alpha1/stage_types.go`) and a colon, and the SHA-1 of
/// that text in lower-case hex is the name (40 characters). kiln's Freight has no tags on
/// commits, charts or other artifacts, so those parts never occur here.
pub fn generate_freight_id(reference: &FreightReference) -> String {
    use sha1::Digest;
    let mut parts: Vec<String> = reference
        .commits
        .iter()
        .map(|c| format!("{}:{}", normalize_git(&c.repo_url), c.id))
        .chain(
            reference
                .images
                .iter()
                .map(|i| format!("{}:{}@{}", i.repo_url, i.tag, i.digest)),
        )
        .collect();
    parts.sort();
    let text = format!("Warehouse/{}:{}", reference.origin, parts.join("|"));
    kiln_base::digest::hex(&sha1::Sha1::digest(text.as_bytes()))
}

impl FreightSet {
    /// The origin of the promoted Freight (Kargo's `ctx.targetFreight.origin`).
    pub fn target_origin(&self) -> &str {
        match self.target.as_str() {
            "" => self.requested.first().map_or("", String::as_str),
            t => t,
        }
    }

    /// The promoted Freight (Kargo's `ctx.targetFreight`), if assembled.
    pub fn target_reference(&self) -> Option<&FreightReference> {
        let origin = self.target_origin();
        self.references
            .iter()
            .find(|r| r.origin == origin)
            .or(self.references.first())
    }

    /// The origin that supplies `repo` (FindCommit/FindImage without an explicit origin).
    fn origin_for(
        &self,
        matches: impl Fn(&Subscriptions) -> bool,
        what: &str,
        repo: &str,
    ) -> Result<Option<String>, String> {
        let mut found: Option<String> = None;
        for w in &self.requested {
            let Some(subs) = self.warehouses.get(w) else {
                return Err(format!("Warehouse {w:?} not found in the project"));
            };
            if matches(subs) {
                if found.is_some() {
                    return Err(format!(
                        "multiple requested Freight could potentially provide a {what} from {repo}; please provide a Freight origin to disambiguate"
                    ));
                }
                found = Some(w.clone());
            }
        }
        Ok(found)
    }

    /// `commitFrom(repo[, origin])`.
    pub fn find_commit(&self, repo: &str, origin: Option<&str>) -> Result<Value, String> {
        let norm = normalize_git(repo);
        let origin = match origin {
            Some(o) => Some(o.to_string()),
            None => self.origin_for(
                |s| s.git.iter().any(|(r, _)| normalize_git(r) == norm),
                "commit",
                repo,
            )?,
        };
        let Some(origin) = origin else {
            return Ok(Value::Null);
        };
        Ok(self
            .references
            .iter()
            .filter(|f| f.origin == origin)
            .flat_map(|f| &f.commits)
            .find(|c| normalize_git(&c.repo_url) == norm)
            .map_or(Value::Null, |c| {
                json!({ "RepoURL": c.repo_url, "ID": c.id, "Branch": c.branch, "Tag": "", "Message": "" })
            }))
    }

    /// `imageFrom(repo[, origin])`.
    pub fn find_image(&self, repo: &str, origin: Option<&str>) -> Result<Value, String> {
        let origin = match origin {
            Some(o) => Some(o.to_string()),
            None => self.origin_for(
                |s| s.images.iter().any(|r| r.repo_url == repo),
                "container image",
                repo,
            )?,
        };
        let Some(origin) = origin else {
            return Ok(Value::Null);
        };
        Ok(self
            .references
            .iter()
            .filter(|f| f.origin == origin)
            .flat_map(|f| &f.images)
            .find(|i| i.repo_url == repo)
            .map_or(
                Value::Null,
                |i| json!({ "RepoURL": i.repo_url, "Tag": i.tag, "Digest": i.digest }),
            ))
    }
}

/// A `--freight` argument: `image=<repo>:<tag>`, `image=<repo>@<digest>`,
/// `image=<repo>:<tag>@<digest>`, `commit=<sha>` or `latest`. A tag and a digest hold to
/// the grammar of component.yaml's `images[]` (`validate::OCI_TAG`, `validate::OCI_DIGEST`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FreightArg {
    Image(FreightImage),
    Commit(String),
    Latest,
    /// `warehouse=<name>`: the promoted Freight's origin, for a Stage that requests Freight
    /// from several Warehouses.
    Warehouse(String),
}

impl FreightArg {
    /// Parses one `--freight` value.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s == "latest" {
            return Ok(FreightArg::Latest);
        }
        if let Some(sha) = s.strip_prefix("commit=") {
            if sha.len() < 4 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!("`{s}`: a commit is a hexadecimal id"));
            }
            return Ok(FreightArg::Commit(sha.to_lowercase()));
        }
        if let Some(name) = s.strip_prefix("warehouse=") {
            if let Some(reason) = crate::names::dns1123_label(name) {
                return Err(format!("`{s}`: a Warehouse name is a DNS label: {reason}"));
            }
            return Ok(FreightArg::Warehouse(name.to_string()));
        }
        let Some(image) = s.strip_prefix("image=") else {
            return Err(format!(
                "`{s}`: expected `image=<repo>:<tag>`, `image=<repo>@<digest>`, `commit=<sha>`, `warehouse=<name>` or `latest`"
            ));
        };
        let (rest, digest) = match image.split_once('@') {
            Some((r, d)) => (r, d.to_string()),
            None => (image, String::new()),
        };
        // A tag is after the last `:` that follows the last `/` (a registry port is not one).
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repo, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => (
                &rest[..last_slash + i],
                rest[last_slash + i + 1..].to_string(),
            ),
            None => (rest, String::new()),
        };
        if repo.is_empty() || (tag.is_empty() && digest.is_empty()) {
            return Err(format!(
                "`{s}`: an image needs a repository and a tag or digest"
            ));
        }
        // The grammar component.yaml's `images[]` are held to (validate's `invalid_image`):
        // a digest that is not one would be committed into the promotion and reported by
        // `kiln status` as the one that runs.
        let parts = [
            (&tag, &crate::validate::OCI_TAG),
            (&digest, &crate::validate::OCI_DIGEST),
        ];
        for (value, check) in parts {
            if !value.is_empty() && !(check.ok)(value) {
                return Err(format!(
                    "`{s}`: `{}` {}: {}",
                    value.escape_debug(),
                    check.what,
                    check.help
                ));
            }
        }
        Ok(FreightArg::Image(FreightImage {
            repo_url: repo.to_string(),
            tag,
            digest,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expected value is SHA-1 over the text `GenerateFreightID` builds, computed apart
    /// (Python's hashlib): the origin, the normalized Git URL (`.git` and case dropped), the
    /// image with both tag and digest, the parts sorted and joined.
    #[test]
    fn freight_ids_are_kargos() {
        let reference = FreightReference {
            origin: "frontend".into(),
            images: vec![FreightImage {
                repo_url: "us-docker.pkg.dev/example-bank/bank/frontend".into(),
                tag: "1.4.2".into(),
                digest: "sha256:aa".into(),
            }],
            commits: vec![FreightCommit {
                repo_url: "https://GitHub.com/example/bank-platform.git".into(),
                id: "0123456789abcdef0123456789abcdef01234567".into(),
                branch: "main".into(),
            }],
        };
        assert_eq!(
            generate_freight_id(&reference),
            "1bf70825394fd21ff60ddf3a3c3edfb39695c3b8"
        );
    }

    #[test]
    fn freight_arguments_parse_tags_digests_and_ports() {
        assert_eq!(
            FreightArg::parse("image=reg:5000/a/b:1.2.3").unwrap(),
            FreightArg::Image(FreightImage {
                repo_url: "reg:5000/a/b".into(),
                tag: "1.2.3".into(),
                digest: String::new()
            })
        );
        let d = format!("sha256:{}", "ab".repeat(32));
        let FreightArg::Image(i) = FreightArg::parse(&format!("image=a/b:1.0@{d}")).unwrap() else {
            panic!()
        };
        assert_eq!((i.tag.as_str(), i.digest.as_str()), ("1.0", d.as_str()));
        let FreightArg::Image(i) = FreightArg::parse(&format!("image=a/b@{d}")).unwrap() else {
            panic!()
        };
        assert_eq!((i.tag.as_str(), i.repo_url.as_str()), ("", "a/b"));
        assert!(FreightArg::parse("image=reg:5000/a").is_err());
        assert!(FreightArg::parse("commit=xyz").is_err());
        assert_eq!(
            FreightArg::parse("commit=ABCD12").unwrap(),
            FreightArg::Commit("abcd12".into())
        );
        assert_eq!(FreightArg::parse("latest").unwrap(), FreightArg::Latest);
        assert_eq!(
            FreightArg::parse("warehouse=cart").unwrap(),
            FreightArg::Warehouse("cart".into())
        );
        assert!(FreightArg::parse("warehouse=Cart_1").is_err());
    }

    /// newcomer3's repro 07: `sha256:zz` was promoted, committed and reported by `kiln
    /// status` as the running digest, though component.yaml refuses the same string.
    #[test]
    fn freight_images_refuse_digests_and_tags_component_yaml_refuses() {
        for (arg, named) in [
            (
                "image=ghcr.io/acme/cart:3.2.0@sha256:zz",
                "`sha256:zz` is not a digest",
            ),
            (
                "image=ghcr.io/acme/cart@sha256:abc",
                "`sha256:abc` is not a digest",
            ),
            ("image=a/b@sha256", "`sha256` is not a digest"),
            ("image=a/b:-1", "`-1` is not a valid OCI tag"),
            ("image=a/b:a b", "`a b` is not a valid OCI tag"),
        ] {
            let err = FreightArg::parse(arg).unwrap_err();
            assert!(err.contains(named), "{arg}: {err}");
            assert!(err.contains(&format!("`{arg}`")), "{arg}: {err}");
        }
        let err = FreightArg::parse("image=a/b:1.0@sha256:zz").unwrap_err();
        assert!(err.contains("64 hex digits"), "{err}");
        let upper = format!("image=a/b:1.0@sha256:{}", "AB".repeat(32));
        assert!(FreightArg::parse(&upper).is_err());
        let sha512 = format!("image=a/b:1.0@sha512:{}", "0f".repeat(64));
        assert!(FreightArg::parse(&sha512).is_ok());
    }

    #[test]
    fn git_urls_normalize_like_kargo() {
        assert_eq!(
            normalize_git("https://User:tok@GitHub.com/Example/Repo.git/"),
            "https://github.com/example/repo"
        );
        assert_eq!(normalize_git("file:///tmp/x.git"), "file:///tmp/x");
    }

    #[test]
    fn path_filters_match_like_kargo_s_matches_paths() {
        let f = PathFilter {
            include: vec!["regexp:^deploy/web/[^/]+/frontend/".into()],
            exclude: vec!["deploy/web/prod/frontend".into()],
        };
        let paths = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(
            f.matches(&paths(&["README.md", "deploy/web/dev/frontend/k.yaml"]))
                .unwrap()
        );
        assert!(
            !f.matches(&paths(&["deploy/web/prod/frontend/k.yaml"]))
                .unwrap()
        );
        assert!(
            !f.matches(&paths(&["deploy/web/dev/backend/k.yaml"]))
                .unwrap()
        );
        // A base directory is a whole segment, not a string prefix.
        let wide = PathFilter {
            include: vec!["regexp:^deploy/".into()],
            exclude: f.exclude.clone(),
        };
        assert!(
            wide.matches(&paths(&["deploy/web/prod/frontend2/k.yaml"]))
                .unwrap()
        );
        assert!(
            !wide
                .matches(&paths(&["deploy/web/prod/frontend/k.yaml"]))
                .unwrap()
        );
        let base = PathFilter {
            include: vec!["deploy/web".into()],
            exclude: vec![],
        };
        assert!(base.matches(&paths(&["deploy/web/a.yaml"])).unwrap());
        assert!(!base.matches(&paths(&["deploy/webx/a.yaml"])).unwrap());
        let glob = PathFilter {
            include: vec!["glob:deploy/**/*.yaml".into()],
            exclude: vec!["glob:deploy/*/prod/**".into()],
        };
        assert!(glob.matches(&paths(&["deploy/web/dev/a.yaml"])).unwrap());
        assert!(!glob.matches(&paths(&["deploy/web/prod/a.yaml"])).unwrap());
        assert!(!glob.matches(&paths(&["deploy/a.txt"])).unwrap());
        assert!(
            PathFilter::default()
                .matches(&paths(&["anything"]))
                .unwrap()
        );
        let bad = PathFilter {
            include: vec!["regexp:(".into()],
            exclude: vec![],
        };
        assert!(bad.matches(&paths(&["a"])).is_err());
    }

    fn set() -> FreightSet {
        let mut warehouses = BTreeMap::new();
        for w in ["a", "b"] {
            warehouses.insert(
                w.to_string(),
                Subscriptions {
                    images: vec![ImageSubscription {
                        repo_url: format!("reg/{w}"),
                        strategy: "SemVer".into(),
                        constraint: Some("^2.0.0".into()),
                        strict_semvers: true,
                    }],
                    git: vec![("https://git/src.git".into(), "main".into())],
                    git_paths: vec![PathFilter::default()],
                },
            );
        }
        FreightSet {
            requested: vec!["a".into()],
            warehouses,
            references: vec![FreightReference {
                origin: "a".into(),
                images: vec![FreightImage {
                    repo_url: "reg/a".into(),
                    tag: "2.0.0".into(),
                    digest: String::new(),
                }],
                commits: vec![FreightCommit {
                    repo_url: "https://git/src.git".into(),
                    id: "c1".into(),
                    branch: "main".into(),
                }],
            }],
            target: String::new(),
        }
    }

    #[test]
    fn finders_pick_the_one_requested_origin_and_reject_ambiguity() {
        let mut s = set();
        assert_eq!(s.find_commit("https://GIT/src", None).unwrap()["ID"], "c1");
        assert_eq!(s.find_image("reg/a", None).unwrap()["Tag"], "2.0.0");
        assert_eq!(s.find_image("reg/b", None).unwrap(), Value::Null);
        s.requested.push("b".into());
        let e = s.find_commit("https://git/src", None).unwrap_err();
        assert!(e.contains("disambiguate"), "{e}");
        assert_eq!(
            s.find_commit("https://git/src", Some("a")).unwrap()["ID"],
            "c1"
        );
    }

    #[test]
    fn image_subscriptions_refuse_tags_their_warehouse_never_discovers() {
        let sub = |strategy: &str, constraint: Option<&str>| ImageSubscription {
            repo_url: "reg/a".into(),
            strategy: strategy.into(),
            constraint: constraint.map(str::to_string),
            strict_semvers: true,
        };
        let img = |tag: &str| FreightImage {
            repo_url: "reg/a".into(),
            tag: tag.into(),
            digest: String::new(),
        };
        assert_eq!(sub("SemVer", Some("^1.4.0")).refuses(&img("1.5.0")), None);
        let e = sub("SemVer", Some("^1.4.0"))
            .refuses(&img("2.0.0"))
            .unwrap();
        assert!(
            e.contains("outside the Warehouse's constraint `^1.4.0`"),
            "{e}"
        );
        let e = sub("", None).refuses(&img("latest")).unwrap();
        assert!(e.contains("not a strict semantic version"), "{e}");
        assert!(
            sub("Digest", Some("stable"))
                .refuses(&img("main"))
                .is_some()
        );
        assert_eq!(sub("Digest", Some("stable")).refuses(&img("stable")), None);
        assert_eq!(sub("Lexical", Some("^1.0.0")).refuses(&img("zzz")), None);
        // Pinned by digest alone: no tag to hold against the constraint.
        assert_eq!(sub("SemVer", Some("^1.4.0")).refuses(&img("")), None);
    }
}
