//! Container image references as kustomize reads them: `[host[:port]/]path[:tag][@digest]`.
//!
//! Sits under the `images:` transformer (`super::images`) and the Kargo generator (a
//! Warehouse subscribes to [`ImageRef::name`]). The parse is kustomize's `image.Split`
//! (api/image/image.go, v5.5): the tag separator is the first `:` *after the first `/`*, so a
//! registry port (`registry.local:5000/team/api`) is never taken for a tag, and the digest
//! starts at the first `@` after that slash. Names are kept as written: `redis` is not expanded
//! to `docker.io/library/redis`.
//!
//! Invariant: `ImageRef::parse(s).to_string() == s` for every `s` without an empty tag
//! (`name:`) or empty digest (`name@`), which kustomize drops as well.

use std::fmt;

/// A parsed image reference.
///
/// Shape, for `registry.local:5000/team/api:1.2@sha256:abc`:
/// `name = "registry.local:5000/team/api"`, `tag = Some("1.2")`, `digest = Some("sha256:abc")`.
/// `name` keeps the registry (with its port) and every path segment; `tag` has no `:` and
/// `digest` no `@`. Empty tags and digests are `None`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageRef {
    /// Registry (optional, with port) and repository path, as written.
    pub name: String,
    /// Tag without the leading `:`.
    pub tag: Option<String>,
    /// Digest without the leading `@` (`sha256:...`).
    pub digest: Option<String>,
}

impl ImageRef {
    /// Splits an image string exactly as kustomize's `image.Split` does. Never fails: any
    /// string is a name, possibly with a tag and a digest.
    pub fn parse(image: &str) -> ImageRef {
        // kustomize: "if domain is present, ignore domain and check for `:`" -- the search for
        // separators starts at the first slash (when it is not the first character).
        let offset = match image.find('/') {
            Some(i) if i > 0 => i,
            _ => 0,
        };
        let search = &image[offset..];
        let at = search.find('@').map(|i| i + offset);
        let colon = search.find(':').map(|i| i + offset);
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        match (colon, at) {
            (None, None) => ImageRef {
                name: image.to_string(),
                tag: None,
                digest: None,
            },
            // Digest only: `@` before any `:` (the digest's own `sha256:` colon comes later).
            (c, Some(a)) if c.is_none_or(|c| a < c) => ImageRef {
                name: image[..a].to_string(),
                tag: None,
                digest: non_empty(&image[a + 1..]),
            },
            (Some(c), Some(a)) => ImageRef {
                name: image[..c].to_string(),
                tag: non_empty(&image[c + 1..a]),
                digest: non_empty(&image[a + 1..]),
            },
            (Some(c), None) => ImageRef {
                name: image[..c].to_string(),
                tag: non_empty(&image[c + 1..]),
                digest: None,
            },
            // Unreachable by the guard above (`colon` is None and `at` is Some), kept total.
            (None, Some(a)) => ImageRef {
                name: image[..a].to_string(),
                tag: None,
                digest: non_empty(&image[a + 1..]),
            },
        }
    }

    /// The repository URL a Kargo Warehouse subscribes to: [`ImageRef::name`], i.e. the
    /// reference without tag and digest, keeping the registry port and every path segment
    /// (`harbor.example.test/library/ui` keeps `library/`; `redis` stays `redis`, since
    /// expanding it to `docker.io/library/redis` would stop kustomize's `images:` from
    /// matching the manifests).
    pub fn repo_url(&self) -> &str {
        &self.name
    }

    /// The registry host (with port) when the first path segment names one, by the Docker
    /// reference rule: it contains `.` or `:`, or is `localhost`. `None` for `redis` or
    /// `team/api`.
    pub fn registry(&self) -> Option<&str> {
        let (first, _) = self.name.split_once('/')?;
        (first.contains('.') || first.contains(':') || first == "localhost").then_some(first)
    }

    /// The repository path without the registry: `team/api` for
    /// `registry.local:5000/team/api`, `redis` for `redis`.
    pub fn repository(&self) -> &str {
        match self.registry() {
            Some(reg) => &self.name[reg.len() + 1..],
            None => &self.name,
        }
    }
}

impl fmt::Display for ImageRef {
    /// `name[:tag][@digest]`, the form kustomize writes back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(s: &str) -> (String, Option<String>, Option<String>) {
        let r = ImageRef::parse(s);
        (r.name, r.tag, r.digest)
    }

    fn p(
        name: &str,
        tag: Option<&str>,
        digest: Option<&str>,
    ) -> (String, Option<String>, Option<String>) {
        (
            name.to_string(),
            tag.map(str::to_string),
            digest.map(str::to_string),
        )
    }

    #[test]
    fn port_colon_is_not_a_tag() {
        assert_eq!(
            parts("registry.local:5000/team/api"),
            p("registry.local:5000/team/api", None, None)
        );
        assert_eq!(
            parts("registry.local:5000/team/api:1.2"),
            p("registry.local:5000/team/api", Some("1.2"), None)
        );
        assert_eq!(
            parts("registry.local:5000/team/api:1.2@sha256:abc"),
            p(
                "registry.local:5000/team/api",
                Some("1.2"),
                Some("sha256:abc")
            )
        );
        assert_eq!(
            parts("localhost:5000/w@sha256:abc"),
            p("localhost:5000/w", None, Some("sha256:abc"))
        );
    }

    #[test]
    fn plain_names_tags_and_digests() {
        assert_eq!(parts("redis"), p("redis", None, None));
        assert_eq!(parts("nginx:1.25"), p("nginx", Some("1.25"), None));
        assert_eq!(
            parts("nginx@sha256:abc"),
            p("nginx", None, Some("sha256:abc"))
        );
        assert_eq!(
            parts("nginx:1@sha256:abc"),
            p("nginx", Some("1"), Some("sha256:abc"))
        );
        // Without a slash the whole string is searched, so a bare `host:5000` reads as a tag,
        // as in kustomize.
        assert_eq!(parts("host:5000"), p("host", Some("5000"), None));
        // Empty tag is dropped, as kustomize drops it when it rebuilds the string.
        assert_eq!(parts("a/b:"), p("a/b", None, None));
    }

    #[test]
    fn round_trips_and_registry() {
        for s in ["redis", "a/b/c:1", "r.io:443/x/y:t@sha256:00", "x@sha256:1"] {
            assert_eq!(ImageRef::parse(s).to_string(), s);
        }
        let r = ImageRef::parse("registry.local:5000/team/api:1");
        assert_eq!(r.registry(), Some("registry.local:5000"));
        assert_eq!(r.repository(), "team/api");
        let r = ImageRef::parse("team/api");
        assert_eq!(r.registry(), None);
        assert_eq!(r.repository(), "team/api");
        assert_eq!(ImageRef::parse("localhost/x").registry(), Some("localhost"));
    }

    /// The pinned references of shared case g02 and the Warehouse repoURLs they must give.
    #[test]
    fn kargo_repo_urls_of_case_g02() {
        let cases = [
            (
                "registry.local:5000/team/api:1.4.2",
                "registry.local:5000/team/api",
            ),
            ("localhost:5000/worker@sha256:aa", "localhost:5000/worker"),
            (
                "ghcr.io/example-org/web:2.0.0@sha256:bb",
                "ghcr.io/example-org/web",
            ),
            (
                "harbor.example.test/library/ui:3.1.0",
                "harbor.example.test/library/ui",
            ),
            ("redis:7.2", "redis"),
        ];
        for (image, url) in cases {
            assert_eq!(ImageRef::parse(image).repo_url(), url, "{image}");
        }
    }
}
