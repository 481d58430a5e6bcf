//! Charts from repositories and registries (issue 33, item 2), end to end through the
//! binary, against servers the test starts on 127.0.0.1 (`kiln_source::testing`): a static
//! Helm chart repository (with and without basic auth) and Debian's `docker-registry` (the
//! OCI cases skip with a line on stderr when it is missing, unless `REQUIRE_REGISTRY=1`).
//! Every chart is made here, small, by the test.

use crate::support::{kiln_command, list_files, run};
use kiln_source::testing;
use std::path::{Path, PathBuf};

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Name }}\ndata:\n  version: {{ .Chart.Version | quote }}\n  greeting: {{ .Values.greeting | quote }}\n";

/// The chart `name` at `version`: one ConfigMap naming its version and `greeting`.
pub(crate) fn chart(name: &str, version: &str) -> Vec<u8> {
    testing::chart_tgz(
        name,
        version,
        &[
            ("values.yaml", "greeting: hello\n"),
            ("templates/cm.yaml", CM),
        ],
    )
}

fn web_charts(versions: &[&str]) -> Vec<(&'static str, String, Vec<u8>)> {
    versions
        .iter()
        .map(|v| ("web", v.to_string(), chart("web", v)))
        .collect()
}

fn serve_repo(root: &Path, charts: &[(&'static str, String, Vec<u8>)]) {
    let refs: Vec<(&str, &str, Vec<u8>)> = charts
        .iter()
        .map(|(n, v, d)| (*n, v.as_str(), d.clone()))
        .collect();
    testing::helm_repo(root, &refs);
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A platform repository in a temporary directory, with its servers.
struct Work {
    dir: tempfile::TempDir,
    repo_root: tempfile::TempDir,
    http: Option<testing::Server>,
    registry: Option<testing::Server>,
}

impl Work {
    /// A Helm repository serving web 1.0.0, 1.2.0, 1.2.5 and 2.0.0; the registry when
    /// `oci` (and installed), holding `cache` 1.0.0 and 1.1.0.
    fn new(oci: bool) -> Work {
        let repo_root = tempfile::tempdir().unwrap();
        serve_repo(
            repo_root.path(),
            &web_charts(&["1.0.0", "1.2.0", "1.2.5", "2.0.0"]),
        );
        let http = testing::static_http(repo_root.path(), None);
        let registry = if oci { testing::registry(None) } else { None };
        if let Some(r) = &registry {
            push(r, "cache", &["1.0.0", "1.1.0"], None);
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("repo/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("docker")).unwrap();
        Work {
            dir,
            repo_root,
            http: Some(http),
            registry,
        }
    }

    fn repo(&self) -> PathBuf {
        self.dir.path().join("repo")
    }

    fn http_url(&self) -> String {
        self.http.as_ref().unwrap().http()
    }

    fn oci_url(&self) -> Option<String> {
        self.registry
            .as_ref()
            .map(|r| format!("oci://127.0.0.1:{}/charts", r.port))
    }

    /// `platforms/p` deploying `components` (names under components/) to dev.
    fn platform(&self, components: &[&str]) {
        let list: Vec<String> = components
            .iter()
            .map(|c| format!("{{path: ../../components/{c}}}"))
            .collect();
        write(
            &self.repo().join("platforms/p/platform.yaml"),
            &format!(
                "apiVersion: kiln/v1alpha1\nkind: Platform\nmetadata: {{name: p}}\nspec:\n  clusters: [{{name: c, server: https://c.example.com}}]\n  environments: [{{name: dev, tier: nonprod, cluster: c}}]\n  projects:\n  - name: shop\n    components: [{}]\n",
                list.join(", ")
            ),
        );
    }

    /// components/<name>/component.yaml with one generator.
    fn component(&self, name: &str, generator: &str) {
        write(
            &self
                .repo()
                .join(format!("components/{name}/component.yaml")),
            &format!(
                "apiVersion: kiln/v1alpha1\nkind: Component\nmetadata: {{name: {name}}}\nspec:\n  generators:\n  - {generator}\n"
            ),
        );
    }

    fn kiln(&self, args: &[&str], env: &[(&str, &str)]) -> crate::support::Run {
        let mut cmd = kiln_command(&self.repo());
        cmd.env("KILN_CACHE_DIR", self.dir.path().join("cache"))
            .env("DOCKER_CONFIG", self.dir.path().join("docker"))
            .args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        run(&mut cmd)
    }

    fn render(&self, out: &str, extra: &[&str]) -> crate::support::Run {
        let mut args = vec!["render", "platforms/p", "--write-to", out, "--no-cache"];
        args.extend(extra);
        self.kiln(&args, &[])
    }

    /// The rendered manifests (not the Kargo or Argo CD files), path → text.
    fn tree(&self, out: &str) -> Vec<(String, String)> {
        let dir = self.repo().join(out);
        list_files(&dir)
            .into_iter()
            .filter(|p| p.starts_with("shop/dev/"))
            .map(|p| {
                let text = std::fs::read_to_string(dir.join(&p)).unwrap();
                (p, text)
            })
            .collect()
    }

    fn text(&self, out: &str) -> String {
        self.tree(out)
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn lock(&self) -> String {
        std::fs::read_to_string(self.repo().join("platforms/p/kiln.lock")).unwrap_or_default()
    }
}

/// Pushes `name` at each of `versions` to the registry under `charts/`, as `helm push` does.
pub(crate) fn push(r: &testing::Server, name: &str, versions: &[&str], login: Option<&str>) {
    use kiln_source::http::{Credentials, Http, variable_for};
    let host = format!("127.0.0.1:{}", r.port);
    let var = variable_for(&host);
    let creds = Credentials::new(None, login.map(|l| (var.as_str(), l)));
    let http = Http::new(creds, kiln_source::archive::Limits::default());
    let url = format!("oci://{host}/charts/{name}");
    let origin = kiln_source::Origin::new("oci", &url, "push");
    let reference = kiln_source::oci::Reference::parse(&url, &origin).unwrap();
    for v in versions {
        let config = format!("{{\"apiVersion\":\"v2\",\"name\":\"{name}\",\"version\":\"{v}\"}}");
        kiln_source::oci::push(
            &http,
            &reference,
            v,
            &chart(name, v),
            config.as_bytes(),
            &origin,
        )
        .unwrap();
    }
}

fn ok(r: &crate::support::Run) {
    assert_eq!(r.code, Some(0), "{}", r.text());
}

fn fails_with(r: &crate::support::Run, code: &str) -> String {
    let text = r.text();
    assert_eq!(r.code, Some(1), "{text}");
    assert!(text.contains(code), "wanted {code}:\n{text}");
    text
}

/// Item 2: `chart:` + `repository:` (HTTP) and `chart: oci://…`, `version:` constraints
/// resolved as Helm resolves them, the lock's entries, `--locked`, and `--locked --offline`
/// with every server stopped writing the same bytes.
#[test]
fn pulled_charts_render_lock_and_render_again_offline() {
    let mut w = Work::new(true);
    w.component(
        "web",
        &format!(
            "helm: {{chart: web, repository: '{}', version: ^1.2, values: {{greeting: hi}}}}",
            w.http_url()
        ),
    );
    let mut components = vec!["web"];
    if let Some(oci) = w.oci_url() {
        w.component(
            "cache",
            &format!("helm: {{chart: '{oci}/cache', version: 1.x}}"),
        );
        components.push("cache");
    }
    w.platform(&components);
    ok(&w.render("out", &[]));
    let text = w.text("out");
    assert!(
        text.contains("name: web-web") && text.contains("version: 1.2.5"),
        "^1.2 is the newest 1.x at or above 1.2:\n{text}"
    );
    assert!(text.contains("greeting: hi"), "{text}");
    let lock = w.lock();
    let web_sha = kiln_base::digest::sha256_tagged(&chart("web", "1.2.5"));
    for want in [
        "kind = \"helm\"".to_string(),
        format!("url = \"{}\"", w.http_url()),
        "chart = \"web\"".into(),
        "requested = \"^1.2\"".into(),
        "version = \"1.2.5\"".into(),
        format!("resolved = \"{web_sha}\""),
    ] {
        assert!(lock.contains(&want), "{want} in:\n{lock}");
    }
    if let Some(oci) = w.oci_url() {
        assert!(
            text.contains("name: cache-cache") && text.contains("version: 1.1.0"),
            "{text}"
        );
        for want in [
            "kind = \"oci\"".to_string(),
            format!("url = \"{oci}/cache\""),
            "requested = \"1.x\"".into(),
            "version = \"1.1.0\"".into(),
        ] {
            assert!(lock.contains(&want), "{want} in:\n{lock}");
        }
    }
    assert_eq!(lock.matches("digest = \"sha256:").count(), components.len());
    let first = w.tree("out");
    ok(&w.render("out-locked", &["--locked"]));
    assert_eq!(w.tree("out-locked"), first);
    w.http = None;
    w.registry = None;
    ok(&w.render("out-offline", &["--locked", "--offline"]));
    assert_eq!(w.tree("out-offline"), first);
    assert_eq!(w.lock(), lock, "a locked render leaves the lock as it was");
}

/// `kiln update` moves a chart to the newest version its constraint admits; the lock holds
/// it until then, and `--locked` refuses a lock that no longer fits the component.
#[test]
fn update_moves_a_chart_and_locked_refuses_a_stale_lock() {
    let w = Work::new(false);
    let helm = |v: &str| {
        format!(
            "helm: {{chart: web, repository: '{}', version: '{v}'}}",
            w.http_url()
        )
    };
    w.component("web", &helm("~1.2"));
    w.platform(&["web"]);
    ok(&w.kiln(&["update", "platforms/p"], &[]));
    assert!(w.lock().contains("version = \"1.2.5\""), "{}", w.lock());
    // The repository gains 1.2.7: the lock holds 1.2.5 until `kiln update web`.
    serve_repo(
        w.repo_root.path(),
        &web_charts(&["1.0.0", "1.2.0", "1.2.5", "1.2.7", "2.0.0"]),
    );
    // With the render cache (and the journal) on: a chart the lock moves renders anew.
    let cached = |extra: &[&str]| {
        let cache = w.dir.path().join("render-cache");
        let mut args = vec!["render", "platforms/p", "--write-to", "out"];
        args.extend(extra);
        w.kiln(&args, &[("XDG_CACHE_HOME", cache.to_str().unwrap())])
    };
    ok(&cached(&[]));
    assert!(w.text("out").contains("version: 1.2.5"));
    ok(&w.kiln(&["update", "platforms/p", "web"], &[]));
    assert!(w.lock().contains("version = \"1.2.7\""), "{}", w.lock());
    ok(&cached(&["--locked"]));
    assert!(w.text("out").contains("version: 1.2.7"));
    // The component now asks for another version: `--locked` refuses, nothing written.
    w.component("web", &helm("2.0.0"));
    let before = w.lock();
    let text = fails_with(
        &w.render("out-2", &["--locked"]),
        "kiln::source::lock_out_of_date",
    );
    assert!(text.contains("component web"), "{text}");
    assert!(!w.repo().join("out-2").exists());
    assert_eq!(w.lock(), before);
}

/// kustomize's `helmCharts:` with `repo:` (HTTP and `oci://`) and `version:`, as
/// HelmChartInflationGenerator pulls them, in a kustomization the component names; a chart
/// vendored where kustomize would pull it is used as it is.
#[test]
fn kustomize_helm_charts_with_repo_are_pulled() {
    let w = Work::new(true);
    let mut charts = format!(
        "- name: web\n  repo: {}\n  version: 1.0.0\n  releaseName: k\n  valuesInline: {{greeting: from-kustomize}}\n",
        w.http_url()
    );
    if let Some(oci) = w.oci_url() {
        charts.push_str(&format!(
            "- name: cache\n  repo: {oci}\n  version: '>=1.0.0 <1.1.0'\n  releaseName: k\n"
        ));
    }
    write(
        &w.repo().join("components/kust/base/kustomization.yaml"),
        &format!("helmCharts:\n{charts}"),
    );
    write(
        &w.repo().join("components/kust/overlay/kustomization.yaml"),
        "resources: [../base]\nnamePrefix: x-\n",
    );
    w.component("kust", "kustomize: overlay");
    w.platform(&["kust"]);
    ok(&w.render("out", &[]));
    let text = w.text("out");
    assert!(
        text.contains("name: x-k-web")
            && text.contains("version: 1.0.0")
            && text.contains("greeting: from-kustomize"),
        "{text}"
    );
    if w.oci_url().is_some() {
        assert!(text.contains("name: x-k-cache"), "{text}");
        assert!(w.lock().contains("requested = \">=1.0.0 <1.1.0\""));
    }
    assert!(w.lock().contains("requested = \"1.0.0\""), "{}", w.lock());
    // Vendored where kustomize pulls to (`charts/web-1.0.0/web`): read from there, nothing
    // pulled for it.
    let vendored = w.repo().join("components/kust/base/charts/web-1.0.0/web");
    write(
        &vendored.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 1.0.0\n",
    );
    write(&vendored.join("values.yaml"), "greeting: vendored\n");
    write(&vendored.join("templates/cm.yaml"), CM);
    std::fs::remove_file(w.repo().join("platforms/p/kiln.lock")).unwrap();
    ok(&w.render("out", &[]));
    assert!(w.text("out").contains("name: x-k-web"));
    assert!(!w.lock().contains("chart = \"web\""), "{}", w.lock());
    // `kiln kustomize`, as kubectl without --enable-helm, pulls nothing.
    std::fs::remove_dir_all(w.repo().join("components/kust/base/charts")).unwrap();
    let r = w.kiln(&["kustomize", "components/kust/overlay"], &[]);
    assert_ne!(r.code, Some(0), "{}", r.text());
    assert!(r.text().contains("kiln render"), "{}", r.text());
}

/// `Chart.yaml` dependencies missing from `charts/` are pulled as `helm dependency build`
/// pulls them; `Chart.lock` pins their versions, and a lock out of sync is refused.
#[test]
fn chart_dependencies_are_pulled_at_chart_lock_s_versions() {
    let w = Work::new(true);
    let chart = w.repo().join("components/shop/chart");
    let mut deps = format!(
        "dependencies:\n- name: web\n  version: ~1.2.0\n  repository: {}\n",
        w.http_url()
    );
    let mut locked = format!(
        "dependencies:\n- name: web\n  repository: {}\n  version: 1.2.0\n",
        w.http_url()
    );
    if let Some(oci) = w.oci_url() {
        deps.push_str(&format!(
            "- name: cache\n  version: 1.x\n  repository: {oci}\n"
        ));
        locked.push_str(&format!(
            "- name: cache\n  repository: {oci}\n  version: 1.0.0\n"
        ));
    }
    write(
        &chart.join("Chart.yaml"),
        &format!("apiVersion: v2\nname: shop\nversion: 0.1.0\n{deps}"),
    );
    write(
        &chart.join("values.yaml"),
        "web:\n  greeting: from-parent\n",
    );
    write(
        &chart.join("Chart.lock"),
        &format!("{locked}digest: sha256:0\ngenerated: \"2026-01-01T00:00:00Z\"\n"),
    );
    w.component("shop", "helm: {chart: chart, releaseName: s}");
    w.platform(&["shop"]);
    ok(&w.render("out", &[]));
    let text = w.text("out");
    assert!(
        text.contains("name: s-web")
            && text.contains("version: 1.2.0")
            && text.contains("greeting: from-parent"),
        "Chart.lock pins web at 1.2.0 (the constraint alone would pick 1.2.5):\n{text}"
    );
    if w.oci_url().is_some() {
        assert!(text.contains("name: s-cache") && text.contains("version: 1.0.0"));
    }
    assert!(w.lock().contains("requested = \"1.2.0\""), "{}", w.lock());
    // Without Chart.lock the constraint is resolved.
    std::fs::remove_file(chart.join("Chart.lock")).unwrap();
    ok(&w.render("out", &[]));
    assert!(w.text("out").contains("version: 1.2.5"));
    // A lock no longer satisfying Chart.yaml is refused, as Helm refuses it.
    write(
        &chart.join("Chart.lock"),
        &format!(
            "dependencies:\n- name: web\n  repository: {}\n  version: 2.0.0\n",
            w.http_url()
        ),
    );
    let text = fails_with(&w.render("out-bad", &[]), "kiln::source::invalid");
    assert!(text.contains("out of sync"), "{text}");
    assert!(!w.repo().join("out-bad").exists());
    // Vendored under charts/: not pulled.
    std::fs::remove_file(chart.join("Chart.lock")).unwrap();
    let sub = chart.join("charts/web");
    write(
        &sub.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.0.1\n",
    );
    write(&sub.join("templates/cm.yaml"), CM);
    if w.oci_url().is_some() {
        let sub = chart.join("charts/cache");
        write(
            &sub.join("Chart.yaml"),
            "apiVersion: v2\nname: cache\nversion: 0.0.1\n",
        );
    }
    std::fs::remove_file(w.repo().join("platforms/p/kiln.lock")).unwrap();
    ok(&w.render("out", &[]));
    assert!(w.text("out").contains("version: 0.0.1"));
    assert!(!w.repo().join("platforms/p/kiln.lock").exists());
}

/// Item 2's bad input, each through the CLI with nothing written: authentication (the error
/// names the source, the component and the URL, never the password), a missing version
/// with the nearest listed, a constraint matching nothing, `--offline` with nothing cached,
/// a server and a cache whose bytes differ from the lock, a hostile archive, and chart
/// fields kiln cannot lock.
#[test]
fn bad_chart_sources_are_refused_naming_the_source() {
    let w = Work::new(false);
    let closed = testing::static_http(w.repo_root.path(), Some("alice:s3cret"));
    let helm =
        |url: &str, v: &str| format!("helm: {{chart: web, repository: '{url}', version: '{v}'}}");
    w.platform(&["web"]);
    let nothing_written = |w: &Work| {
        assert!(!w.repo().join("out").exists());
        assert!(!w.repo().join("platforms/p/kiln.lock").exists());
    };
    // Authentication: refused without credentials, and with wrong ones.
    w.component("web", &helm(&closed.http(), "1.x"));
    let text = fails_with(&w.render("out", &[]), "kiln::source::auth");
    assert!(
        text.contains("component web") && text.contains(&closed.http()),
        "{text}"
    );
    nothing_written(&w);
    let var = kiln_source::http::variable_for(&format!("127.0.0.1:{}", closed.port));
    let r = w.kiln(
        &["render", "platforms/p", "--write-to", "out", "--no-cache"],
        &[(var.as_str(), "alice:wrong")],
    );
    let text = fails_with(&r, "kiln::source::auth");
    assert!(
        !text.contains("wrong") && !text.contains("s3cret"),
        "{text}"
    );
    nothing_written(&w);
    // The host's variable opens it.
    ok(&w.kiln(
        &["render", "platforms/p", "--write-to", "out", "--no-cache"],
        &[(var.as_str(), "alice:s3cret")],
    ));
    std::fs::remove_dir_all(w.repo().join("out")).unwrap();
    std::fs::remove_file(w.repo().join("platforms/p/kiln.lock")).unwrap();
    // An unreachable host.
    let dead = format!("http://127.0.0.1:{}", testing::free_port());
    w.component("web", &helm(&dead, "1.x"));
    let text = fails_with(&w.render("out", &[]), "kiln::source::unreachable");
    assert!(
        text.contains("component web") && text.contains(&dead),
        "{text}"
    );
    // A version that does not exist lists the nearest; a constraint matching nothing says so.
    w.component("web", &helm(&w.http_url(), "1.2.4"));
    let text = fails_with(&w.render("out", &[]), "kiln::source::not_found");
    assert!(
        text.contains("`1.2.5`") && text.contains("`1.2.0`"),
        "{text}"
    );
    w.component("web", &helm(&w.http_url(), "^3"));
    let text = fails_with(&w.render("out", &[]), "kiln::source::no_match");
    assert!(text.contains("^3") && text.contains("`2.0.0`"), "{text}");
    nothing_written(&w);
    // `--offline` with nothing cached names the chart.
    w.component("web", &helm(&w.http_url(), "~1.2"));
    let text = fails_with(&w.render("out", &["--offline"]), "kiln::source::not_cached");
    assert!(
        text.contains("web") && text.contains(&w.http_url()),
        "{text}"
    );
    nothing_written(&w);
    // Locked, then the cached tree is tampered with: refused, never used.
    ok(&w.kiln(&["update", "platforms/p"], &[]));
    let lock = w.lock();
    let trees = w.dir.path().join("cache/sources/trees");
    let tree = std::fs::read_dir(&trees)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(tree.join("web/templates/cm.yaml"), "kind: Secret\n").unwrap();
    fails_with(
        &w.render("out", &["--locked"]),
        "kiln::source::cache_tampered",
    );
    assert!(!w.repo().join("out").exists());
    // The server now sends other bytes under the locked version (its index agreeing).
    std::fs::remove_dir_all(w.dir.path().join("cache")).unwrap();
    let mut other = web_charts(&["1.0.0", "1.2.0", "2.0.0"]);
    other.push((
        "web",
        "1.2.5".into(),
        testing::chart_tgz("web", "1.2.5", &[("templates/cm.yaml", "kind: Secret\n")]),
    ));
    serve_repo(w.repo_root.path(), &other);
    let text = fails_with(&w.render("out", &[]), "kiln::source::digest_mismatch");
    assert!(text.contains("kiln.lock"), "{text}");
    assert!(!w.repo().join("out").exists());
    assert_eq!(w.lock(), lock, "nothing lost");
    // A hostile archive: an entry climbing out of the chart.
    std::fs::remove_file(w.repo().join("platforms/p/kiln.lock")).unwrap();
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    let evil = b"kind: Secret\n";
    h.set_size(evil.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append_data(&mut h, "web/Chart.yaml", &evil[..]).unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_size(evil.len() as u64);
    h.set_mode(0o644);
    // `append_data` refuses `..`; the name is written into the header by hand.
    h.as_gnu_mut().unwrap().name[..14].copy_from_slice(b"web/../../evil");
    h.set_cksum();
    b.append(&h, &evil[..]).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &b.into_inner().unwrap()).unwrap();
    serve_repo(
        w.repo_root.path(),
        &[("web", "9.0.0".into(), gz.finish().unwrap())],
    );
    w.component("web", &helm(&w.http_url(), "9.0.0"));
    fails_with(&w.render("out", &[]), "kiln::source::unsafe_archive");
    nothing_written(&w);
    // Fields kiln cannot lock, and a version on a vendored chart.
    w.component("web", &helm(&w.http_url(), "${params.webVersion}"));
    let text = fails_with(&w.render("out", &[]), "kiln::source::invalid");
    assert!(
        text.contains("helm.version") && text.contains("reference"),
        "{text}"
    );
    w.component("web", "helm: {chart: chart, version: 1.0.0}");
    let text = fails_with(&w.render("out", &[]), "kiln::source::invalid");
    assert!(text.contains("chart directory"), "{text}");
    w.component("web", "helm: {chart: web, repository: '@stable'}");
    let text = fails_with(&w.render("out", &[]), "kiln::source::invalid");
    assert!(text.contains("@stable"), "{text}");
    nothing_written(&w);
}

/// A platform whose component `cache` pulls `cache` 1.0.0 (pushed with `login`) from
/// `registry`, which needs credentials: refused without them, naming the component and the
/// host, nothing written. The work and the registry's host.
/// Several charts failing in one run: each is reported (its name, repository, version and
/// cause), not only the first; the run exits 1 and writes nothing, not even the lock of the
/// chart that was fetched.
#[test]
fn every_failing_chart_is_reported() {
    let w = Work::new(false);
    let dead = format!("http://127.0.0.1:{}", testing::free_port());
    let helm = |chart: &str, url: &str, v: &str| {
        format!("helm: {{chart: {chart}, repository: '{url}', version: '{v}'}}")
    };
    w.component("web", &helm("web", &w.http_url(), "9.9.9"));
    w.component("api", &helm("api", &dead, "1.0.0"));
    w.component("admin", &helm("admin", &w.http_url(), "1.x"));
    w.component("ok", &helm("web", &w.http_url(), "1.2.5"));
    w.platform(&["web", "api", "admin", "ok"]);
    let r = w.render("out", &[]);
    let text = fails_with(&r, "kiln::source::not_found").replace("\n  | ", " ");
    for (chart, url, version, code) in [
        ("web", w.http_url(), "9.9.9", "kiln::source::not_found"),
        ("api", dead.clone(), "1.0.0", "kiln::source::unreachable"),
        ("admin", w.http_url(), "1.x", "kiln::source::not_found"),
    ] {
        let origin =
            format!("helm source `{url}` ({chart} {version}), needed by component {chart}");
        assert!(text.contains(&origin), "{origin}:\n{text}");
        assert!(text.contains(code), "{code}:\n{text}");
    }
    assert!(text.contains("3 errors"), "{text}");
    assert!(!w.repo().join("out").exists());
    assert!(!w.repo().join("platforms/p/kiln.lock").exists());
}

fn closed_registry(registry: &testing::Server, login: &str) -> (Work, String) {
    push(registry, "cache", &["1.0.0"], Some(login));
    let w = Work::new(false);
    let host = format!("127.0.0.1:{}", registry.port);
    w.component(
        "cache",
        &format!("helm: {{chart: 'oci://{host}/charts/cache', version: 1.0.0}}"),
    );
    w.platform(&["cache"]);
    let text = fails_with(&w.render("out", &[]), "kiln::source::auth");
    assert!(
        text.contains("component cache") && text.contains(&host),
        "{text}"
    );
    assert!(!w.repo().join("out").exists());
    (w, host)
}

/// Docker's `config.json` holding `login` (`user:password`) for `host`.
fn docker_login(w: &Work, host: &str, login: &str) {
    let auth = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, login);
    write(
        &w.dir.path().join("docker/config.json"),
        &format!("{{\"auths\": {{\"{host}\": {{\"auth\": \"{auth}\"}}}}}}"),
    );
}

/// An OCI registry behind htpasswd: refused anonymously (the error names the component and
/// the reference), pulled with Docker's `config.json` credentials.
#[test]
fn an_oci_registry_with_htpasswd_reads_docker_s_config() {
    let Some(registry) = testing::registry(Some(("bob", "pw"))) else {
        return;
    };
    let (w, host) = closed_registry(&registry, "bob:pw");
    docker_login(&w, &host, "bob:pw");
    ok(&w.render("out", &[]));
    assert!(w.text("out").contains("name: cache-cache"));
}

/// Every file under `dir`, read as text (to look for what must not be there).
fn all_text(dir: &Path) -> String {
    list_files(dir)
        .iter()
        .filter_map(|p| std::fs::read(dir.join(p)).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
}

/// Issue 33 item 2, through the binary: an OCI registry behind Docker's bearer-token
/// exchange (Debian's docker-registry with `auth: token:`, a token server the test starts).
/// Refused without credentials and with a wrong password (neither shown); pulled with
/// Docker's `config.json`, and again with `KILN_REGISTRY_*`; no token in the output, the
/// lock, the cache or what kiln prints.
#[test]
fn an_oci_registry_behind_a_token_server_through_the_cli() {
    let Some(reg) = testing::token_registry("dave", "t0k-pw") else {
        return;
    };
    let (w, host) = closed_registry(&reg.registry, "dave:t0k-pw");
    let var = kiln_source::http::variable_for(&host);
    let r = w.kiln(
        &["render", "platforms/p", "--write-to", "out", "--no-cache"],
        &[(var.as_str(), "dave:wrong-pw")],
    );
    let text = fails_with(&r, "kiln::source::auth");
    assert!(
        !text.contains("wrong-pw") && text.contains("dave"),
        "{text}"
    );
    assert!(!w.repo().join("out").exists());
    docker_login(&w, &host, "dave:t0k-pw");
    let by_config = w.render("out", &[]);
    ok(&by_config);
    assert!(w.text("out").contains("name: cache-cache"));
    std::fs::remove_file(w.dir.path().join("docker/config.json")).unwrap();
    std::fs::remove_dir_all(w.dir.path().join("cache")).unwrap();
    let by_var = w.kiln(
        &[
            "render",
            "platforms/p",
            "--write-to",
            "out2",
            "--no-cache",
            "--locked",
        ],
        &[(var.as_str(), "dave:t0k-pw")],
    );
    ok(&by_var);
    assert_eq!(w.text("out2"), w.text("out"));
    let issued = reg.tokens.issued.lock().unwrap().clone();
    assert!(issued.len() >= 2, "a token for each run");
    let kept = format!(
        "{}{}{}{}",
        all_text(&w.repo()),
        all_text(&w.dir.path().join("cache")),
        by_config.text(),
        by_var.text()
    );
    assert!(
        issued.iter().all(|t| !kept.contains(t.as_str())),
        "a token was kept"
    );
}

/// The one ConfigMap of `text` (a rendered file or a Helm manifest), without the namespace
/// kiln sets on every namespaced object (the environment's; Helm leaves it to the client).
fn config_map(name: &str, text: &str) -> serde_json::Value {
    let docs = kiln::yaml::parse_stream(name, text).unwrap();
    let mut cm = docs
        .into_iter()
        .find(|d| d["kind"] == "ConfigMap")
        .unwrap_or_else(|| panic!("no ConfigMap in {name}:\n{text}"));
    if let Some(meta) = cm["metadata"].as_object_mut() {
        meta.remove("namespace");
    }
    cm
}

/// Item 2 against real Helm (live mode, `KILN_LIVE_HELM` naming a Python with
/// helm-python-sdk): Helm pulls the same charts from the same servers with the same
/// `version:` constraint and picks the same version and archive; its render of the chart
/// equals kiln's.
#[test]
fn live_helm_pulls_and_renders_what_kiln_does() {
    let Some(python) = std::env::var_os("KILN_LIVE_HELM") else {
        eprintln!("skipping: set KILN_LIVE_HELM to a Python with helm-python-sdk");
        return;
    };
    let w = Work::new(true);
    let Some(oci) = w.oci_url() else { return };
    w.component(
        "web",
        &format!(
            "helm: {{chart: web, repository: '{}', version: ^1.2, values: {{greeting: hi}}}}",
            w.http_url()
        ),
    );
    w.component(
        "cache",
        &format!("helm: {{chart: '{oci}/cache', version: 1.x}}"),
    );
    w.platform(&["web", "cache"]);
    ok(&w.render("out", &[]));
    let lock = kiln_source::LockFile::parse("kiln.lock", &w.lock()).unwrap();
    let cases = [
        (
            "web",
            "web".to_string(),
            w.http_url(),
            "^1.2",
            "{\"greeting\": \"hi\"}",
        ),
        (
            "cache",
            format!("{oci}/cache"),
            "-".to_string(),
            "1.x",
            "{}",
        ),
    ];
    for (component, reference, repo, version, values) in cases {
        let out = std::process::Command::new(&python)
            .arg(crate::support::repo_root().join("scripts/helm-pull.py"))
            .args([&reference, &repo, version, component, "default", values])
            .output()
            .expect("run scripts/helm-pull.py");
        assert!(
            out.status.success(),
            "helm: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let helm: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let entry = lock
            .entries
            .values()
            .find(|e| e.requested == version)
            .unwrap();
        assert_eq!(helm["version"], entry.version.as_str(), "{component}");
        if entry.kind == "helm" {
            assert_eq!(helm["sha256"], entry.resolved.as_str(), "{component}");
        }
        let manifest = helm["manifests"][format!("{component}/templates/cm.yaml")]
            .as_str()
            .unwrap_or_else(|| panic!("{helm}"));
        let kiln_file = format!("shop/dev/{component}/{component}.gen.yaml");
        let rendered = std::fs::read_to_string(w.repo().join("out").join(&kiln_file)).unwrap();
        assert_eq!(
            config_map(&kiln_file, &rendered),
            config_map("helm", manifest),
            "{component}"
        );
    }
}

/// `kiln update P NAME` takes an `oci://` chart's name, as it takes a Helm repository
/// chart's (`web`): it was refused (`no source of platforms/p is named `cache``, with a
/// help saying the platform had no remote source), since the lock keeps an OCI chart by
/// its reference alone. The newest version the constraint admits is locked; a name that
/// is no source's lists the OCI chart among the sources.
#[test]
fn update_takes_an_oci_charts_name() {
    let w = Work::new(true);
    let (Some(oci), Some(registry)) = (w.oci_url(), w.registry.as_ref()) else {
        return;
    };
    // The instance is named `frontend`; the chart is `cache`.
    w.component(
        "frontend",
        &format!("helm: {{chart: '{oci}/cache', version: 1.x}}"),
    );
    w.platform(&["frontend"]);
    ok(&w.kiln(&["update", "platforms/p"], &[]));
    assert!(w.lock().contains("version = \"1.1.0\""), "{}", w.lock());
    push(registry, "cache", &["1.2.0", "2.0.0"], None);
    let r = w.kiln(&["update", "platforms/p", "cache"], &[]);
    ok(&r);
    assert!(r.text().contains("1.2.0"), "{}", r.text());
    assert!(w.lock().contains("version = \"1.2.0\""), "{}", w.lock());
    ok(&w.render("out", &["--locked"]));
    assert!(
        w.text("out").contains("version: 1.2.0"),
        "{}",
        w.text("out")
    );
    // A mistyped name: a usage error listing the chart, nothing written.
    let before = w.lock();
    let r = w.kiln(&["update", "platforms/p", "cahce"], &[]);
    assert_eq!(r.code, Some(2), "{}", r.text());
    let text = r.text();
    assert!(text.contains("kiln::source::unknown_name"), "{text}");
    assert!(text.contains("did you mean `cache`?"), "{text}");
    assert!(!text.contains("has no remote source"), "{text}");
    assert_eq!(w.lock(), before);
}
